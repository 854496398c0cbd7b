/* Kernels on the mock GPU: the modules nvhcq loaded (their kernels' code addresses and PTX) and
 * the grid runner that executes a QMD's kernel with the PTX interpreter over mock memory. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/block_linear.h"
#include "hw/elf.h"
#include "hw/occupancy.h"
#include "mock/internal.h"
#include "mock/mock.h"
#include "mock/ptx/ptx.h"

/* The SMs a grid may run on: those of the TPCs its mask enables (all of them without a mask). TPC i
 * of GPC g is TPC slot g * (the profile's TPCs per GPC, its litter value) + i of the mask, and
 * holds SMs 2k and 2k + 1, k its place among the GPU's TPCs; a slot past a GPC's TPCs holds none.
 */
static uint32_t grid_sms(const nvhcq_mock_grid *g, uint16_t *out) {
  uint32_t n = 0, k = 0, per_gpc = mock_gpu->tpcs[0];
  for (uint32_t gpc = 0; gpc < mock_gpu->gpcs; gpc++)
    for (uint32_t i = 0; i < mock_gpu->tpcs[gpc]; i++, k++) {
      uint32_t slot = gpc * per_gpc + i;
      if (g->tpc_masked && (slot >= 128 || !(g->tpc_enabled[slot / 32] >> (slot % 32) & 1)))
        continue;
      out[n++] = (uint16_t)(2 * k), out[n++] = (uint16_t)(2 * k + 1);
    }
  return n;
}

/* The library's own copy kernel (src/exec/builtin.cu): its cubin comes without PTX, and the mock
 * does what it does (dst[i] = src[i] for i < n16, 16-byte elements) on the CPU. */
#define BUILTIN_COPY "nvhcq_copy16"
/* The image copy kernel, done on the CPU with the same layout formula (hw/block_linear.h). */
#define BUILTIN_IMAGE_COPY "nvhcq_image_copy"
/* The SM census kernel (nvhcq_sm_set, the TPC map): the grid's SMs set in a 256-bit set. */
#define BUILTIN_SM_SET "nvhcq_sm_set"

typedef struct mock_kernel {
  char *name;
  uint64_t code;               /* GPU address of its first instruction: the QMD's program address */
  uint32_t param_offset;       /* parameters in constant bank 0 */
  uint32_t static_shared;      /* what nvhcq counts into the QMD's shared size before dynamic */
  const nvhcq_ptx_kernel *ptx; /* NULL: no PTX (why in the module's missing) */
  int builtin_copy;            /* 1: BUILTIN_COPY, 2: BUILTIN_IMAGE_COPY, 3: BUILTIN_SM_SET */
  /* The cubin's parameter offsets by ordinal (from param_offset): ptxas aligns a parameter to
   * its address in bank 0, the PTX's layout to the parameter block's start. */
  uint32_t *param_at, param_count;
} mock_kernel;

typedef struct mock_module {
  uint32_t refs; /* the table's, and one per grid running its kernel (under modules_lock) */
  uint64_t gpu_address;
  nvhcq_ptx_module *ptx;
  mock_kernel *kernels;
  uint32_t nkernels;
  char missing[200];
  struct mock_module *next;
} mock_module;

/* Held only to find, link and unlink records: a grid runs without it (a kernel may never end, and
 * its module may be unloaded meanwhile; the last reference frees the record). */
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static mock_module *modules;
static uint32_t module_count;

/* ---- PTX for a cubin ---- */

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
      free(text);
      text = NULL;
    }
    if (text) text[n] = 0, *size = (size_t)n;
  }
  fclose(f);
  return text;
}

/* Whether the PTX module has every kernel of the cubin (the built-in kernels aside). */
static int has_all(const nvhcq_ptx_module *p, const nvhcq_cubin *c) {
  for (uint32_t i = 0; i < c->kernel_count; i++) {
    const nvhcq_ptx_kernel *k;
    if (strcmp(c->kernels[i].name, BUILTIN_COPY) &&
        strcmp(c->kernels[i].name, BUILTIN_IMAGE_COPY) &&
        strcmp(c->kernels[i].name, BUILTIN_SM_SET) &&
        nvhcq_ptx_kernel_find(p, c->kernels[i].name, &k))
      return 0;
  }
  return 1;
}

static nvhcq_ptx_module *parse(const char *text, size_t size, const char *from, char *missing,
                               size_t missing_size) {
  nvhcq_ptx_module *p = NULL;
  char error[200];
  if (nvhcq_ptx_module_load(text, size, &p, error, sizeof error))
    snprintf(missing, missing_size, "its PTX (%s) did not parse: %s", from, error);
  return p;
}

/* The first module of the NVHCQ_MOCK_PTX files that has all the cubin's kernels. */
static nvhcq_ptx_module *ptx_from_env(const nvhcq_cubin *c, char *missing, size_t missing_size) {
  const char *list = getenv("NVHCQ_MOCK_PTX");
  snprintf(missing, missing_size,
           "no PTX for it: NVHCQ_MOCK_PTX (%s) names no PTX file with every kernel of its module "
           "(the mock runs kernels from PTX)",
           list && *list ? list : "unset");
  char path[1024];
  for (const char *at = list; at && *at;) {
    const char *end = strchr(at, ':');
    size_t n = end ? (size_t)(end - at) : strlen(at);
    snprintf(path, sizeof path, "%.*s", (int)n, at);
    at = end ? end + 1 : NULL;
    size_t size = 0;
    char *text = read_file(path, &size);
    if (!text) continue;
    nvhcq_ptx_module *p = parse(text, size, path, missing, missing_size);
    free(text);
    if (p && has_all(p, c)) return p;
    nvhcq_ptx_module_free(p);
  }
  return NULL;
}

/* The PTX's variables where the cubin's loader put the cubin's: the host's reads and writes of
 * them (nvhcq_module_get_global) and the kernels' then meet. */
static void place_variables(mock_module *m, const nvhcq_cubin *c) {
  for (uint32_t i = 0; i < c->global_count; i++)
    nvhcq_ptx_variable_place(m->ptx, c->globals[i].name, m->gpu_address + c->globals[i].offset);
}

static int copy_param_table(mock_kernel *k, const nvhcq_cubin_kernel *ck) {
  if (!ck->param_count) return 0;
  k->param_at = calloc(ck->param_count, sizeof *k->param_at);
  if (!k->param_at) return -1;
  k->param_count = ck->param_count;
  for (uint32_t i = 0; i < ck->param_count; i++)
    if (ck->params[i].ordinal < ck->param_count)
      k->param_at[ck->params[i].ordinal] = ck->params[i].offset;
  return 0;
}

static int fill_kernels(mock_module *m, const nvhcq_cubin *c) {
  m->kernels = calloc(c->kernel_count ? c->kernel_count : 1, sizeof *m->kernels);
  if (!m->kernels) return -1;
  for (uint32_t i = 0; i < c->kernel_count; i++) {
    const nvhcq_cubin_kernel *ck = &c->kernels[i];
    mock_kernel *k = &m->kernels[m->nkernels];
    k->name = strdup(ck->name);
    if (!k->name) return -1;
    m->nkernels++;
    k->code = m->gpu_address + ck->code_offset;
    k->param_offset = ck->param_offset;
    k->static_shared = ck->shared_size ? ck->shared_size : NVHCQ_RESERVED_SHARED;
    k->builtin_copy = !strcmp(ck->name, BUILTIN_COPY)         ? 1
                      : !strcmp(ck->name, BUILTIN_IMAGE_COPY) ? 2
                      : !strcmp(ck->name, BUILTIN_SM_SET)     ? 3
                                                              : 0;
    if (copy_param_table(k, ck)) return -1;
    if (m->ptx && !k->builtin_copy && nvhcq_ptx_kernel_find(m->ptx, ck->name, &k->ptx))
      snprintf(m->missing, sizeof m->missing, "its module's PTX has no kernel of that name");
  }
  return 0;
}

static void module_free(mock_module *m) {
  for (uint32_t i = 0; i < m->nkernels; i++) {
    free(m->kernels[i].name);
    free(m->kernels[i].param_at);
  }
  free(m->kernels);
  nvhcq_ptx_module_free(m->ptx);
  free(m);
}

void nvhcq_mock_module_loaded(uint64_t gpu_address, const void *cubin, size_t cubin_size,
                              const char *ptx, size_t ptx_size) {
  nvhcq_cubin *c = NULL;
  if (nvhcq_cubin_parse(cubin, cubin_size, &c)) return; /* nvhcq parsed it: cannot happen */
  mock_module *m = calloc(1, sizeof *m);
  if (m) {
    m->gpu_address = gpu_address;
    m->ptx = ptx ? parse(ptx, ptx_size, "from nvhcq", m->missing, sizeof m->missing)
                 : ptx_from_env(c, m->missing, sizeof m->missing);
    if (m->ptx) place_variables(m, c);
    if (fill_kernels(m, c)) {
      module_free(m);
      m = NULL;
    }
  }
  nvhcq_cubin_free(c);
  if (!m) return;
  m->refs = 1;
  pthread_mutex_lock(&modules_lock);
  m->next = modules;
  modules = m;
  module_count++;
  pthread_mutex_unlock(&modules_lock);
}

/* Drops a reference; the last frees the record. */
static void module_release(mock_module *m) {
  pthread_mutex_lock(&modules_lock);
  int last = --m->refs == 0;
  pthread_mutex_unlock(&modules_lock);
  if (last) module_free(m);
}

void nvhcq_mock_module_unloaded(uint64_t gpu_address) {
  pthread_mutex_lock(&modules_lock);
  mock_module *found = NULL;
  for (mock_module **at = &modules; *at; at = &(*at)->next)
    if ((*at)->gpu_address == gpu_address) {
      found = *at;
      *at = found->next;
      module_count--;
      break;
    }
  pthread_mutex_unlock(&modules_lock);
  if (found) module_release(found);
}

uint32_t mock_module_count(void) {
  pthread_mutex_lock(&modules_lock);
  uint32_t n = module_count;
  pthread_mutex_unlock(&modules_lock);
  return n;
}

/* Drops every module record (the mock is uninstalled, or its last client freed). */
void mock_modules_drop(void) {
  pthread_mutex_lock(&modules_lock);
  mock_module *m = modules;
  modules = NULL;
  module_count = 0;
  pthread_mutex_unlock(&modules_lock);
  while (m) {
    mock_module *next = m->next;
    module_release(m);
    m = next;
  }
}

/* ---- the grid runner ---- */

/* What the grid's memory accesses go through: nvhcq_mock_gpu_pointer, and once an injected fault
 * (*user nonzero: the first access faults). */
static void *translate(void *user, uint64_t address, size_t size, int write) {
  (void)write;
  int *fault_next = user;
  if (*fault_next) return *fault_next = 0, NULL;
  return nvhcq_mock_gpu_pointer(address, size ? size : 1);
}

static const mock_kernel *kernel_at(uint64_t code, mock_module **in) {
  for (mock_module *m = modules; m; m = m->next)
    for (uint32_t i = 0; i < m->nkernels; i++)
      if (m->kernels[i].code == code) {
        *in = m;
        return &m->kernels[i];
      }
  return NULL;
}

static int fail(const nvhcq_mock_grid *g, uint32_t xid, uint64_t address, const char *fmt,
                const char *a, const char *b) {
  snprintf(g->error, g->error_size, fmt, a, b);
  if (g->fault_address) *g->fault_address = address;
  if (g->xid) *g->xid = xid;
  return -1;
}

/* nvhcq_copy16(src, dst, n16) on the CPU. */
static int builtin_copy(const nvhcq_mock_grid *g, const uint8_t *params) {
  uint64_t src, dst, n16;
  memcpy(&src, params, 8);
  memcpy(&dst, params + 8, 8);
  memcpy(&n16, params + 16, 8);
  if (!n16) return 0;
  void *s = g->fault_first_access ? NULL : nvhcq_mock_gpu_pointer(src, n16 * 16);
  void *d = s ? nvhcq_mock_gpu_pointer(dst, n16 * 16) : NULL;
  if (!s || !d) {
    if (g->sm_error) g->sm_error->write = s != NULL;
    return fail(g, MOCK_XID_MMU, s ? dst : src, "%s: %s outside any mapping", BUILTIN_COPY,
                s ? "destination" : "source");
  }
  mock_copy(d, s, n16 * 16);
  return 0;
}

/* nvhcq_sm_set(sms, spin_ns) on the CPU: the mock hands a grid's blocks to its SMs in turn, so a
 * grid of n blocks runs on the first n of them. */
static int builtin_sm_set(const nvhcq_mock_grid *g, const uint8_t *params) {
  uint64_t at;
  memcpy(&at, params, 8);
  uint32_t *set = nvhcq_mock_gpu_pointer(at, 32);
  if (!set) return fail(g, MOCK_XID_MMU, at, "%s: %s outside any mapping", BUILTIN_SM_SET, "set");
  uint16_t sms[512];
  uint32_t n = grid_sms(g, sms);
  uint64_t blocks = (uint64_t)g->grid[0] * g->grid[1] * g->grid[2];
  for (uint32_t i = 0; i < n && i < blocks; i++)
    __atomic_fetch_or(&set[sms[i] / 32 % 8], 1u << (sms[i] % 32), __ATOMIC_RELAXED);
  return 0;
}

/* nvhcq_image_copy(args) on the CPU, unit by unit. */
static int builtin_image_copy(const nvhcq_mock_grid *g, const uint8_t *params) {
  nvhcq_bl_copy_args a;
  memcpy(&a, params, sizeof a);
  for (uint32_t z = 0; z < a.depth; z++)
    for (uint32_t y = 0; y < a.height; y++)
      for (uint32_t u = 0; u < a.units_x; u++) {
        uint64_t img =
            a.image + nvhcq_bl_offset(&a.shape, a.x_bytes + u * a.unit, a.y + y, a.z + z);
        uint64_t lin = a.linear + z * a.slice + y * a.pitch + (uint64_t)u * a.unit;
        void *pi = nvhcq_mock_gpu_pointer(img, a.unit), *pl = nvhcq_mock_gpu_pointer(lin, a.unit);
        if (!pi || !pl) {
          if (g->sm_error) g->sm_error->write = a.to_image ? pl != NULL : pi != NULL;
          return fail(g, MOCK_XID_MMU, pi ? lin : img, "%s: %s outside any mapping",
                      BUILTIN_IMAGE_COPY, pi ? "linear memory" : "the image");
        }
        memcpy(a.to_image ? pi : pl, a.to_image ? pl : pi, a.unit);
      }
  return 0;
}

/* The warp error code the SM would save for an interpreter fault (0: none, the global ESR says). */
static uint32_t warp_error_for(nvhcq_ptx_fault_kind kind) {
  switch (kind) {
  case NVHCQ_PTX_FAULT_MISALIGNED:
    return 0x0f;
  case NVHCQ_PTX_FAULT_TRAP:
    return 0x09; /* what the H200 reports for __trap() */
  case NVHCQ_PTX_FAULT_UNSUPPORTED:
    return 0x09; /* an instruction the mock's SM does not know: an illegal encoding */
  default:
    return 0;
  }
}

static int ptx_fault_to_grid(const nvhcq_mock_grid *g, const mock_kernel *k,
                             const nvhcq_ptx_fault *f) {
  char where[96];
  snprintf(where, sizeof where, "PTX line %d, block (%u,%u,%u) thread (%u,%u,%u)", f->line,
           f->block[0], f->block[1], f->block[2], f->thread[0], f->thread[1], f->thread[2]);
  int mmu = f->kind == NVHCQ_PTX_FAULT_ADDRESS;
  if (mmu)
    snprintf(g->error, g->error_size, "kernel %s: %s at 0x%llx (%s)", k->name, f->what,
             (unsigned long long)f->address, where);
  else
    snprintf(g->error, g->error_size, "kernel %s: %s (%s)", k->name, f->what, where);
  if (g->fault_address) *g->fault_address = mmu || f->address ? f->address : k->code;
  if (g->xid) *g->xid = mmu ? MOCK_XID_MMU : MOCK_XID_GR;
  /* The interpreter has no SASS PC: the kernel's entry stands for it. */
  if (g->sm_error)
    *g->sm_error = (nvhcq_mock_sm_error){.warp_error = mmu ? 0 : warp_error_for(f->kind),
                                         .global_error = f->kind == NVHCQ_PTX_FAULT_TRAP ? 0x10 : 0,
                                         .pc = k->code,
                                         .address = f->address,
                                         .write = f->write};
  return -1;
}

/* Where the cubin's table puts a parameter elsewhere than the PTX's layout (a 64-byte aligned
 * __grid_constant__), *out gets the parameters moved to the PTX's offsets (to free). */
static int relayout_params(const nvhcq_mock_grid *g, const mock_kernel *k, size_t size,
                           uint8_t **out) {
  size_t n = nvhcq_ptx_kernel_param_count(k->ptx), same = 0;
  nvhcq_ptx_param p;
  for (size_t i = 0; i < n && n == k->param_count; i++)
    same += nvhcq_ptx_kernel_param(k->ptx, i, &p) == 0 && p.offset == k->param_at[i];
  if (n != k->param_count || same == n) return 0;
  *out = calloc(size + 1, 1);
  if (!*out) return 0; /* the PTX's layout then, as before */
  for (size_t i = 0; i < n; i++) {
    nvhcq_ptx_kernel_param(k->ptx, i, &p);
    const void *from = nvhcq_mock_gpu_pointer(g->cbank0_address + k->param_offset + k->param_at[i],
                                              p.size ? p.size : 1);
    if (!from) return free(*out), *out = NULL, -1;
    memcpy(*out + p.offset, from, p.size);
  }
  return 0;
}

static int run_kernel(const nvhcq_mock_grid *g, const mock_module *m, const mock_kernel *k) {
  size_t params_size = k->ptx                 ? nvhcq_ptx_kernel_params_size(k->ptx)
                       : k->builtin_copy == 2 ? sizeof(nvhcq_bl_copy_args)
                       : k->builtin_copy == 3 ? 12
                                              : 24;
  const uint8_t *params =
      nvhcq_mock_gpu_pointer(g->cbank0_address + k->param_offset, params_size ? params_size : 1);
  if (!params)
    return fail(g, MOCK_XID_MMU, g->cbank0_address, "kernel %s: constant bank 0 is unmapped%s",
                k->name, "");
  if (k->builtin_copy == 3) return builtin_sm_set(g, params);
  if (k->builtin_copy == 2) return builtin_image_copy(g, params);
  if (k->builtin_copy) return builtin_copy(g, params);
  if (!k->ptx) return fail(g, MOCK_XID_GR, k->code, "kernel %s: %s", k->name, m->missing);
  uint8_t *moved = NULL;
  if (relayout_params(g, k, params_size, &moved))
    return fail(g, MOCK_XID_MMU, g->cbank0_address, "kernel %s: its parameters in bank 0 %s",
                k->name, "reach past the mapping");
  int fault_next = g->fault_first_access;
  nvhcq_ptx_memory memory = {translate, &fault_next};
  nvhcq_ptx_launch_config c = {
      .params = moved ? moved : params,
      .params_size = params_size,
      .memory = &memory,
      .cancel = g->stop,
      .dynamic_shared_bytes =
          g->shared_bytes > k->static_shared ? g->shared_bytes - k->static_shared : 0,
  };
  memcpy(c.grid, g->grid, sizeof c.grid);
  memcpy(c.block, g->block, sizeof c.block);
  memcpy(c.cluster, g->cluster, sizeof c.cluster);
  uint16_t sms[512];
  c.sms = sms;
  c.sm_count = grid_sms(g, sms);
  nvhcq_ptx_fault f;
  nvhcq_ptx_status s = nvhcq_ptx_launch(k->ptx, &c, &f);
  free(moved);
  if (s == NVHCQ_PTX_OK && fault_next) /* no global access: the injected fault is a fetch's */
    return fail(g, MOCK_XID_MMU, k->code, "kernel %s: injected MMU fault at its code%s", k->name,
                "");
  if (s == NVHCQ_PTX_OK) return 0;
  if (s == NVHCQ_PTX_FAULT || s == NVHCQ_PTX_UNSUPPORTED) return ptx_fault_to_grid(g, k, &f);
  return fail(g, MOCK_XID_GR, k->code, "kernel %s: the interpreter refused the launch (%s)",
              k->name, s == NVHCQ_PTX_NO_MEMORY ? "out of host memory" : "bad launch shape");
}

int mock_run_ptx_grid(const nvhcq_mock_grid *g) {
  pthread_mutex_lock(&modules_lock);
  mock_module *m = NULL;
  const mock_kernel *k = kernel_at(g->program_address, &m);
  if (m) m->refs++;
  pthread_mutex_unlock(&modules_lock);
  if (!k) {
    char at[32];
    snprintf(at, sizeof at, "0x%llx", (unsigned long long)g->program_address);
    return fail(g, MOCK_XID_GR, g->program_address,
                "no loaded module has a kernel at program address %s%s", at, "");
  }
  int r = run_kernel(g, m, k);
  module_release(m);
  return r;
}
