/* Modules and kernels: loading cubins (PTX and CUDA C are compiled first) into the device's
 * module arena, each kernel's QMD template (built on first lookup) and limits, lookups by name
 * and by code address, occupancy and attributes. */
#include "exec/module.h"
#include "util/handle.h"
#include "util/abi.h"
#include "util/align.h"
#include "driver/door.h"
#include "exec/compile.h"
#include "exec/syscalls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

/* Instruction prefetch reads past the last instruction: keep a page of slack behind the code. */
#define CODE_GUARD_BYTES     4096u
#define PREFETCH_AHEAD_BYTES 2048u

static nvhcq_status check_module(const nvhcq_module *m) {
  return nvhcq_handle_check(m, NVHCQ_MODULE_MAGIC, "module", "was unloaded already");
}

nvhcq_status nvhcq_kernel_check(const nvhcq_kernel *k) {
  return nvhcq_handle_check(k, NVHCQ_KERNEL_MAGIC, "kernel",
                            "belongs to a module that was unloaded");
}

/* The most threads a block may have: what the register file holds (occupancy.c), at most 1024,
 * and the kernel's launch bounds. */
static uint32_t max_threads_for(const nvhcq_sm_limits *l, const nvhcq_cubin_kernel *k) {
  uint32_t threads = nvhcq_warps_by_registers(l, k->registers) * 32;
  if (threads > 1024) threads = 1024;
  uint32_t bound = k->max_threads[0]
                       ? k->max_threads[0] * (k->max_threads[1] ? k->max_threads[1] : 1) *
                             (k->max_threads[2] ? k->max_threads[2] : 1)
                       : 0;
  return bound && bound < threads ? bound : threads;
}

/* The largest power of two up to 64 that divides a parameter's size: the alignment a C struct
 * of the parameters gives it, at most. */
static uint32_t param_align(uint32_t size) {
  uint32_t a = 1;
  while (a < 64 && size % (a * 2) == 0) a *= 2;
  return a;
}

/* The parameter bytes, plus at most the trailing padding a C struct of them has. */
static uint32_t args_max(const nvhcq_cubin_kernel *k) {
  uint32_t align = 1;
  for (uint32_t i = 0; i < k->param_count; i++) {
    uint32_t a = param_align(k->params[i].size);
    align = a > align ? a : align;
  }
  return NVHCQ_ALIGN_UP(k->param_size, align);
}

/* The program prefetch covers the whole kernel and the 2 KiB the instruction fetcher runs ahead
 * of it, in 256-byte units from the unit the code starts in (CODE_GUARD_BYTES keeps that inside
 * the image). libcuda asks for exactly this: ceil((code + 2048) / 256) for ew_add, softmax_rows
 * and matmul_f16, read from its QMDs on an H100 with qmd_probe --real. The floor of code / 256
 * used before left softmax_rows's last 128 bytes, its exit path, out of the prefetch. */
static uint32_t prefetch_units(uint64_t code, uint64_t code_size) {
  uint64_t units = ((code & 0xff) + code_size + PREFETCH_AHEAD_BYTES + 255) >> 8;
  return units > 0x1ff ? 0x1ff : (uint32_t)units;
}

static nvhcq_status build_template(nvhcq_kernel *kn) {
  nvhcq_device *dev = kn->module->dev;
  const nvhcq_cubin_kernel *k = kn->cubin;
  nvhcq_qmd_version v = dev->compute_state.qmd_version;
  uint32_t *q = kn->qmd;
  uint64_t base = kn->module->image.gpu_address, code = base + k->code_offset;
  uint32_t sass = ((dev->info.sm_version & 0xf00) >> 4) | (dev->info.sm_version & 0xf);
  memset(q, 0, sizeof kn->qmd);
#define SET(f, val) NVHCQ_TRY(nvhcq_qmd_set(v, q, NVHCQ_QMD_##f, (val)))
  SET(MAJOR_VERSION, v);
  SET(QMD_GROUP_ID, 0x3f);
  SET(REGISTER_COUNT, k->registers);
  SET(BARRIER_COUNT, k->barriers ? k->barriers : 1);
  SET(SASS_VERSION, sass);
  SET(API_VISIBLE_CALL_LIMIT, 1);
  SET(SAMPLER_INDEX, 1);
  SET(CWD_MEMBAR_TYPE, NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_SYSMEMBAR);
  SET(INVALIDATE_TEXTURE_HEADER_CACHE, 1);
  SET(INVALIDATE_TEXTURE_SAMPLER_CACHE, 1);
  SET(INVALIDATE_TEXTURE_DATA_CACHE, 1);
  SET(INVALIDATE_SHADER_DATA_CACHE, 1);
  SET(CONSTANT_BUFFER_INVALIDATE_0, 1);
  SET(PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, (uint32_t)(code >> 8));
  SET(PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, code >> 40);
  SET(PROGRAM_PREFETCH_SIZE, prefetch_units(code, k->code_size));
  if (v >= NVHCQ_QMD_V04) SET(QMD_TYPE, NVHCQ_QMD_TYPE_GRID_CTA);
  if (v == NVHCQ_QMD_V04 && !dev->compute_state.debug_no_bank0_prefetch) {
    /* Bank 0 (arguments and driver words) is fetched as the grid is scheduled, not on first
     * use: a chained grid's launch then overlaps its predecessor's drain. Measured on the H200:
     * 1000 chained empty grids 0.606 -> 0.500 us each, ew_add back to back 2.61 -> 2.47 us;
     * test_order's stress cases stay clean. Not measured on Blackwell (V05), so not set there;
     * V03 has no pre-launch prefetch. NVHCQ_DEBUG_NO_BANK0_PREFETCH=1 turns it off. */
    SET(CONSTANT_BUFFER_PREFETCH_0, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_PRE);
    SET(CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8,
        kn->cbank0_bytes >> 8 > 0x3f ? 0x3f : kn->cbank0_bytes >> 8);
  }
  if (v == NVHCQ_QMD_V03) SET(SM_GLOBAL_CACHING_ENABLE, 1);
#undef SET
  NVHCQ_TRY(nvhcq_qmd_set_program_address(v, q, code));
  for (uint32_t i = 0; i < k->cbank_count; i++)
    if (k->cbanks[i].bank != 0)
      NVHCQ_TRY(nvhcq_qmd_set_constant_buffer(v, q, k->cbanks[i].bank, base + k->cbanks[i].offset,
                                              (uint32_t)k->cbanks[i].size));
  const nvhcq_cubin *c = kn->module->cubin;
  for (uint32_t i = 0; i < c->cbank_count; i++)
    NVHCQ_TRY(nvhcq_qmd_set_constant_buffer(v, q, c->cbanks[i].bank, base + c->cbanks[i].offset,
                                            (uint32_t)c->cbanks[i].size));
  kn->qmd_built = 1;
  return NVHCQ_SUCCESS;
}

/* What a load fills in for every kernel; the QMD template waits for the kernel's first lookup (a
 * module of a hundred kernels is often loaded for a few of them). */
static void init_kernel(nvhcq_module *m, nvhcq_kernel *kn, const nvhcq_cubin_kernel *k) {
  kn->magic = NVHCQ_KERNEL_MAGIC;
  kn->module = m;
  kn->cubin = k;
  uint32_t bank0 = k->cbank0_size > k->param_offset + k->param_size
                       ? k->cbank0_size
                       : k->param_offset + k->param_size;
  kn->cbank0_bytes = NVHCQ_ALIGN_UP(bank0, 256u);
  kn->local_bytes = k->min_stack_size ? k->min_stack_size + 0x240 : 0;
  kn->max_threads = max_threads_for(&m->dev->compute_state.sm_limits, k);
  kn->static_shared = k->shared_size;
  /* CUDA counts 1 KiB per block above what the kernel declares (reservedSharedMemPerBlock, sm_80
   * and later). CUDA 13's sm_90+ cubins count it in each kernel's section already (the file then
   * has the reserved window); sm_80/sm_89 cubins and kernels with no section of their own do not.
   */
  kn->shared_base = k->shared_size && m->cubin->shared_reserved
                        ? k->shared_size
                        : k->shared_size + NVHCQ_RESERVED_SHARED;
  kn->carveout_preference = -1;
  /* sm_90 kernels read their cluster's shape from bank 0 dwords 80-98 and the parameters'
   * address from 0x198 (launch.c), below the parameters at 0x210; other targets keep parameters
   * or unknown words there. */
  kn->cluster_words = k->param_offset >= 0x1a0 && m->dev->info.sm_version >> 8 == 9;
  kn->args_max = args_max(k);
}

/* One pass over the GPU's memory, from the caller's file: the sections go in with one copy each
 * (gaps and the zero-filled tail zeroed, and the guard page), then the relocations are patched
 * in place (they only write, so nothing is read back through the CPU mapping). The slice comes
 * from the arena, which is mapped already: no driver call unless it needs a new chunk. */
static nvhcq_status upload(nvhcq_module *m, const void *data, size_t size) {
  nvhcq_cubin *c = m->cubin;
  uint64_t imports[NVHCQ_CUBIN_MAX_IMPORTS] = {0};
  /* printf, assert, malloc, free: the device's syscalls module, which also raises the callers'
   * registers and stacks (before init_kernel reads them) */
  if (c->import_count) NVHCQ_TRY(nvhcq_syscalls_resolve(m->dev, c, imports));
  NVHCQ_TRY(nvhcq_arena_alloc(m->dev, c->memory_size + CODE_GUARD_BYTES, &m->image));
  uint8_t *dst = nvhcq_arena_host(&m->image);
  NVHCQ_TRY(nvhcq_cubin_write_image(c, data, size, dst));
  memset(dst + c->memory_size, 0, CODE_GUARD_BYTES);
  return nvhcq_cubin_relocate_imports(c, dst, m->image.gpu_address, imports);
}

/* New code and constants may sit where an unloaded module's were: the SMs' instruction and
 * constant caches must forget the old bytes before the next launch (which the channel orders
 * after this). */
static nvhcq_status invalidate_caches(nvhcq_device *dev) {
  nvhcq_push *p = nvhcq_timeline_scratch(dev);
  nvhcq_push_invalidate_shader_caches(p);
  NVHCQ_TRY(p->error);
  return nvhcq_channel_submit(&dev->compute, p->words, p->len);
}

/* The door hears of each module (the mock runs its kernels from `ptx`, when there is any). */
static void tell_door(const nvhcq_module *m, const void *data, size_t size, const char *ptx,
                      size_t ptx_size) {
  if (nvhcq_door->module_loaded)
    nvhcq_door->module_loaded(m->image.gpu_address, data, size, ptx, ptx_size);
}

static nvhcq_status load_with_ptx(nvhcq_device *dev, const void *data, size_t size, const char *ptx,
                                  size_t ptx_size, nvhcq_module **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out || !data)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_module_load: %s is NULL",
                      out ? "image" : "out");
  if (!dev->compute_state.qmd_version)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "GPU %d: no QMD layout known for compute class 0x%x",
                      dev->index, dev->classes.compute);
  nvhcq_module *m = calloc(1, sizeof *m);
  if (!m) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  m->magic = NVHCQ_MODULE_MAGIC;
  m->dev = dev;
  nvhcq_status s = nvhcq_cubin_parse(data, size, &m->cubin);
  if (!s) s = nvhcq_cubin_check_arch(m->cubin, nvhcq_sm_number(dev->info.sm_version));
  if (!s) s = upload(m, data, size);
  if (!s) s = invalidate_caches(dev);
  if (!s) {
    m->kernel_count = m->cubin->kernel_count;
    m->kernels = calloc(m->kernel_count ? m->kernel_count : 1, sizeof *m->kernels);
    if (!m->kernels) s = nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  for (uint32_t i = 0; !s && i < m->kernel_count; i++)
    init_kernel(m, &m->kernels[i], &m->cubin->kernels[i]);
  if (s) {
    nvhcq_fail_context(s, "loading a module on GPU %d", dev->index);
    m->magic = NVHCQ_MODULE_MAGIC;
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", nvhcq_last_error());
    /* No launch has seen the slice: it goes back at once. */
    if (m->image.chunk) nvhcq_arena_free(dev, &m->image);
    nvhcq_cubin_free(m->cubin);
    free(m->kernels);
    free(m);
    return nvhcq_fail(s, "%s", msg);
  }
  tell_door(m, data, size, ptx, ptx_size);
  nvhcq_syscalls_drain(dev); /* CUDA prints kernels' output at module loads and unloads too */
  m->next = dev->modules;
  dev->modules = m;
  *out = m;
  return NVHCQ_SUCCESS;
}

/* A relocatable cubin (ELF type ET_REL: nvcc -rdc=true -cubin, or one object of a separate
 * compilation) still needs the device link nvlink does: its kernels' register counts leave out
 * the functions they call, so loaded as it is, a call runs out of registers (Xid 13, "out-of-range
 * register", seen on the H200). */
static int is_relocatable_cubin(const void *data, size_t size) {
  const uint8_t *p = data;
  return size >= 18 && !memcmp(p, "\177ELF", 4) && (p[16] | p[17] << 8) == 1;
}

/* Links a relocatable cubin alone for the device, through nvJitLink, and loads the result. */
static nvhcq_status load_linked(nvhcq_device *dev, const void *data, size_t size,
                                nvhcq_module **out) {
  nvhcq_linker *l = NULL;
  const void *cubin = NULL;
  size_t cubin_size = 0;
  unsigned sm;
  bool specific;
  NVHCQ_TRY(nvhcq_cubin_arch(data, size, &sm, &specific));
  /* Linked for the SM it was built for (sm_80 code on an sm_86, sm_90a's wgmma on sm_90); the
   * load then checks that the GPU runs it. */
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%u%s", sm, specific ? "a" : "");
  nvhcq_status s = nvhcq_linker_create(arch, NULL, 0, &l);
  if (!s) s = nvhcq_linker_add(l, NVHCQ_LINK_CUBIN, data, size, "relocatable.cubin");
  if (!s) s = nvhcq_linker_complete(l, &cubin, &cubin_size);
  if (!s)
    s = load_with_ptx(dev, cubin, cubin_size, NULL, 0, out);
  else
    s = nvhcq_fail_context(s, "the cubin is relocatable device code (nvcc -rdc=true) and must be "
                              "device-linked before it loads (nvcc -dlink -cubin, or nvJitLink)");
  if (l) (void)nvhcq_linker_destroy(l); /* the one made above */
  return s;
}

nvhcq_status nvhcq_module_load(nvhcq_device *dev, const void *data, size_t size,
                               nvhcq_module **out) {
  if (data && is_relocatable_cubin(data, size)) {
    NVHCQ_TRY(nvhcq_device_check(dev));
    if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_module_load: out is NULL");
    return load_linked(dev, data, size, out);
  }
  return load_with_ptx(dev, data, size, NULL, 0, out);
}

const nvhcq_kernel *nvhcq_module_kernel_at(const nvhcq_device *dev, uint64_t pc) {
  for (const nvhcq_module *m = dev->modules; m; m = m->next)
    for (uint32_t i = 0; i < m->kernel_count; i++) {
      const nvhcq_cubin_kernel *k = m->kernels[i].cubin;
      uint64_t start = m->image.gpu_address + k->code_offset;
      if (pc >= start && pc < start + k->code_size) return &m->kernels[i];
    }
  return NULL;
}

int nvhcq_module_name_pc(const nvhcq_device *dev, uint64_t pc, const char **kernel,
                         uint64_t *offset) {
  const nvhcq_kernel *k = nvhcq_module_kernel_at(dev, pc);
  if (!k) return 0;
  *kernel = k->cubin->name;
  *offset = pc - k->module->image.gpu_address - k->cubin->code_offset;
  return 1;
}

nvhcq_status nvhcq_module_load_file(nvhcq_device *dev, const char *path, nvhcq_module **out) {
  if (!path)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_module_load_file: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return nvhcq_fail(NVHCQ_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = n > 0 ? malloc((size_t)n) : NULL;
  size_t got = data ? fread(data, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!data || got != (size_t)n) {
    free(data);
    return nvhcq_fail(NVHCQ_ERROR_IO, "cannot read %s", path);
  }
  /* PTX and CUDA C files are compiled for the device (through the cache). */
  nvhcq_status s = nvhcq_module_load_any(dev, data, got, NULL, 0, out);
  free(data);
  if (s) return nvhcq_fail_context(s, "%s", path);
  return NVHCQ_SUCCESS;
}

/* CUDA C for arch as PTX, assembled, loaded with its PTX. */
static nvhcq_status load_cuda_for(nvhcq_device *dev, const void *data, size_t size,
                                  const char *arch, const char *const *options, int num_options,
                                  nvhcq_module **out) {
  char *ptx = NULL;
  size_t ptx_size = 0;
  NVHCQ_TRY(nvhcq_compile_cuda_to_ptx(data, size, arch, options, num_options, &ptx, &ptx_size));
  void *bin = NULL;
  size_t bin_size;
  /* No options: those were NVRTC's, not nvJitLink's. The PTX's .target picks sm_90a. */
  nvhcq_status s = nvhcq_binary_compile(ptx, ptx_size, dev->info.arch, NULL, 0, &bin, &bin_size);
  if (!s) s = load_with_ptx(dev, bin, bin_size, ptx, ptx_size, out);
  free(bin);
  free(ptx);
  return s;
}

/* A door that runs kernels from PTX (the mock) gets CUDA C as PTX first, then assembled; as
 * nvhcq_binary_compile does for a cubin, code the GPU's arch refuses for want of its
 * arch-specific variant (wgmma needs sm_90a) is compiled again for that variant. */
static nvhcq_status load_cuda_as_ptx(nvhcq_device *dev, const void *data, size_t size,
                                     const char *const *options, int num_options,
                                     nvhcq_module **out) {
  nvhcq_status s = load_cuda_for(dev, data, size, dev->info.arch, options, num_options, out);
  char specific[40];
  if (!nvhcq_compile_arch_specific_retry(s, dev->info.arch, specific, sizeof specific)) return s;
  return load_cuda_for(dev, data, size, specific, options, num_options, out);
}

nvhcq_status nvhcq_module_load_any(nvhcq_device *dev, const void *data, size_t size,
                                   const char *const *options, int num_options,
                                   nvhcq_module **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (nvhcq_source_detect(data, size) == NVHCQ_SOURCE_CUBIN)
    return nvhcq_module_load(dev, data, size, out);
  if (nvhcq_door->module_loaded && nvhcq_source_detect(data, size) == NVHCQ_SOURCE_CUDA)
    return load_cuda_as_ptx(dev, data, size, options, num_options, out);
  void *bin = NULL;
  size_t bin_size;
  nvhcq_status s =
      nvhcq_binary_compile(data, size, dev->info.arch, options, num_options, &bin, &bin_size);
  int is_ptx = nvhcq_source_detect(data, size) == NVHCQ_SOURCE_PTX;
  if (!s) s = load_with_ptx(dev, bin, bin_size, is_ptx ? data : NULL, is_ptx ? size : 0, out);
  free(bin);
  return s;
}

nvhcq_status nvhcq_module_unload(nvhcq_module *m) {
  if (!m) return NVHCQ_SUCCESS;
  NVHCQ_TRY(check_module(m));
  nvhcq_syscalls_drain(m->dev);
  /* The GPU may still run its kernels: the code goes back to the arena, as a destroyed buffer
   * goes, once the GPU has passed the work queued so far; its addresses are not reused before. */
  NVHCQ_TRY(nvhcq_reclaim_slice(m->dev, &m->image));
  for (nvhcq_module **at = &m->dev->modules; *at; at = &(*at)->next)
    if (*at == m) {
      *at = m->next;
      break;
    }
  for (uint32_t i = 0; i < m->kernel_count; i++) m->kernels[i].magic = NVHCQ_DEAD_MAGIC;
  /* The mock forgets the module's kernels now; a grid of them still queued there would fault
   * (the real GPU keeps the code until the reclaim releases it). */
  if (nvhcq_door->module_unloaded) nvhcq_door->module_unloaded(m->image.gpu_address);
  nvhcq_fault_forget_kernel_names(m->dev);
  nvhcq_cubin_free(m->cubin);
  nvhcq_retire(m->kernels); /* kernel handles point into it */
  nvhcq_retire(m);
  return NVHCQ_SUCCESS;
}

uint32_t nvhcq_module_kernel_count(const nvhcq_module *m) {
  return check_module(m) ? 0 : m->kernel_count;
}

const char *nvhcq_module_kernel_name(const nvhcq_module *m, uint32_t index) {
  if (check_module(m)) return NULL;
  if (index < m->kernel_count) return m->kernels[index].cubin->name;
  nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
             "nvhcq_module_kernel_name: index %u, the module has %u kernels", index,
             m->kernel_count);
  return NULL;
}

nvhcq_status nvhcq_module_get_kernel(nvhcq_module *m, const char *name, nvhcq_kernel **out) {
  NVHCQ_TRY(check_module(m));
  if (!name || !out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_module_get_kernel: NULL argument");
  const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(m->cubin, name);
  if (!k) return NVHCQ_ERROR_NOT_FOUND; /* its message lists the kernels there are */
  nvhcq_kernel *kn = &m->kernels[k - m->cubin->kernels];
  if (!kn->qmd_built) {
    nvhcq_status s = build_template(kn);
    if (s) return nvhcq_fail_context(s, "kernel %s", k->name);
  }
  *out = kn;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_module_get_global(nvhcq_module *m, const char *name, uint64_t *gpu_address,
                                     size_t *size) {
  NVHCQ_TRY(check_module(m));
  if (!name)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_module_get_global: name is NULL");
  const nvhcq_cubin_global *g = nvhcq_cubin_find_global(m->cubin, name);
  if (!g) return NVHCQ_ERROR_NOT_FOUND; /* with its message */
  if (gpu_address) *gpu_address = m->image.gpu_address + g->offset;
  if (size) *size = g->size;
  return NVHCQ_SUCCESS;
}

/* Shared bytes the block occupies: static (which includes the reserved window when the compiler
 * recorded any) plus dynamic, in the SM's 128-byte allocation unit. */
uint32_t nvhcq_kernel_shared_total(const nvhcq_kernel *k, uint32_t dynamic) {
  uint32_t base = nvhcq_kernel_static_shared(k);
  return NVHCQ_ALIGN_UP(base + dynamic, 128u);
}

/* CUDA's CONST_SIZE_BYTES: the module's bank 3 (__constant__ variables), the same for each of its
 * kernels (NVIDIA's library, driver 580, on a cubin with 32 bytes of them). */
static uint32_t module_constant_bytes(const nvhcq_cubin *c) {
  for (uint32_t i = 0; i < c->cbank_count; i++)
    if (c->cbanks[i].bank == 3) return (uint32_t)c->cbanks[i].size;
  return 0;
}

nvhcq_status nvhcq_kernel_query_info(const nvhcq_kernel *k, nvhcq_kernel_info *info) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  uint32_t base = nvhcq_kernel_static_shared(k);
  /* What the kernel declares and needs, as CUDA reports them (cuda_facts against NVIDIA's library,
   * driver 580): static shared memory without the reserved window CUDA 13 counts in the section,
   * local memory without the 0x240 bytes above the stack top that launches add. */
  uint32_t reserved = k->module->cubin->shared_reserved;
  const nvhcq_cubin_kernel *c = k->cubin;
  nvhcq_kernel_info all = {
      .name = c->name,
      .registers = c->registers,
      .param_size = c->param_size,
      .shared_bytes = k->static_shared > reserved ? k->static_shared - reserved : 0,
      .local_bytes = c->min_stack_size ? c->min_stack_size : c->frame_size,
      .max_threads = k->max_threads,
      .max_dynamic_shared = k->module->dev->compute_state.max_shared + NVHCQ_RESERVED_SHARED - base,
      .param_count = c->param_count,
      .cluster = {c->cluster_dims[0], c->cluster_dims[1], c->cluster_dims[2]},
      .max_cluster_blocks = c->max_cluster_rank,
      .constant_bytes = module_constant_bytes(k->module->cubin),
      .ptx_sm = k->module->cubin->ptx_sm ? k->module->cubin->ptx_sm : k->module->cubin->sm};
  return nvhcq_fill_sized(info, &all, sizeof all, offsetof(nvhcq_kernel_info, param_count),
                          "nvhcq_kernel_query_info");
}

nvhcq_status nvhcq_kernel_query_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                          uint32_t dynamic_shared, nvhcq_occupancy *out) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_kernel_query_occupancy: out is NULL");
  const nvhcq_device *dev = k->module->dev;
  const nvhcq_compute_state *cs = &dev->compute_state;
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (!threads || threads > k->max_threads)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: a block of %llu threads cannot run (1 to %u for this kernel)",
                      k->cubin->name, (unsigned long long)threads, k->max_threads);
  uint32_t shared = nvhcq_kernel_shared_total(k, dynamic_shared);
  nvhcq_carveout_choice c;
  if (dynamic_shared > cs->max_shared ||
      !nvhcq_choose_carveout(&cs->sm_limits, (uint32_t)threads, k->cubin->registers, shared,
                             k->carveout_preference, &c))
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: %u bytes of dynamic shared memory leave no room for one block "
                      "(%u bytes a block at most on %s)",
                      k->cubin->name, dynamic_shared, cs->max_shared, dev->info.arch);
  uint32_t warps = (uint32_t)(threads + 31) / 32;
  nvhcq_occupancy all = {.blocks_per_sm = c.blocks_per_sm,
                         .warps_per_sm = c.blocks_per_sm * warps,
                         .max_warps_per_sm = cs->sm_limits.warps,
                         .limiter = c.limiter,
                         .shared_per_block = shared,
                         .shared_config_bytes = c.target_bytes,
                         .shared_config_min = c.min_bytes,
                         .shared_config_max = c.max_bytes};
  return nvhcq_fill_sized(out, &all, sizeof all, sizeof all, "nvhcq_kernel_query_occupancy");
}

static nvhcq_status unknown_attribute(const nvhcq_kernel *k, uint32_t attribute) {
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "kernel %s: attribute %u is unknown (NVHCQ_KERNEL_CARVEOUT_PREFERENCE is 1, "
                    "NVHCQ_KERNEL_NON_PORTABLE_CLUSTER 2)",
                    k->cubin->name, attribute);
}

nvhcq_status nvhcq_kernel_set_attribute(nvhcq_kernel *k, uint32_t attribute, int64_t value) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (attribute == NVHCQ_KERNEL_NON_PORTABLE_CLUSTER) {
    if (value != 0 && value != 1)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "kernel %s: NVHCQ_KERNEL_NON_PORTABLE_CLUSTER is 0 or 1, not %lld",
                        k->cubin->name, (long long)value);
    k->non_portable_cluster = (int)value;
    return NVHCQ_SUCCESS;
  }
  if (attribute != NVHCQ_KERNEL_CARVEOUT_PREFERENCE) return unknown_attribute(k, attribute);
  if (value < -1 || value > 100)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "kernel %s: carveout preference %lld is not a percentage (0 to 100, or -1 "
                      "for nvhcq's occupancy-driven choice)",
                      k->cubin->name, (long long)value);
  k->carveout_preference = (int)value;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_kernel_get_attribute(const nvhcq_kernel *k, uint32_t attribute, int64_t *value) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (!value)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_kernel_get_attribute: value is NULL");
  if (attribute == NVHCQ_KERNEL_NON_PORTABLE_CLUSTER) {
    *value = k->non_portable_cluster;
    return NVHCQ_SUCCESS;
  }
  if (attribute != NVHCQ_KERNEL_CARVEOUT_PREFERENCE) return unknown_attribute(k, attribute);
  *value = k->carveout_preference;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_kernel_query_param(const nvhcq_kernel *k, uint32_t index,
                                      nvhcq_kernel_param *out) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_kernel_query_param: out is NULL");
  if (index >= k->cubin->param_count)
    return nvhcq_fail(NVHCQ_ERROR_NOT_FOUND, "kernel %s has %u parameters; there is no index %u",
                      k->cubin->name, k->cubin->param_count, index);
  const nvhcq_cubin_param *p = &k->cubin->params[index];
  nvhcq_kernel_param all = {.offset = p->offset, .size = p->size};
  return nvhcq_fill_sized(out, &all, sizeof all, sizeof all, "nvhcq_kernel_query_param");
}
