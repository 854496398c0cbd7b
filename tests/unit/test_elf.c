/* Cubin parser tests on the cubins nvcc builds from tests/unit/cubins/kernels.cu:
 *   nvcc -cubin -arch=sm_XX tests/unit/cubins/kernels.cu -o DIR/kernels_sm_XX.cubin
 * for sm_80, sm_89, sm_90 and sm_100, and with -gencode=arch=compute_90a,code=sm_90a into
 * DIR/kernels_sm_90a.cubin (tests/CMakeLists.txt builds them all). DIR comes from the first
 * argument (when it is a directory) or NVHCQ_TEST_CUBIN_DIR; without cubins the tests skip and
 * say why.
 *
 * Expected numbers were read off these cubins with cuobjdump -elf / -res-usage and nvdisasm
 * (CUDA 13.0). Register counts depend on the compiler, so they are compared exactly only for
 * cubins built by the nvcc they were read from (V13.0.88). */
#define _POSIX_C_SOURCE 200809L

#include "elf.h"
#include "syscalls_abi.h"
#include "../test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *cubin_dir;
static char skip_message[1200];

typedef struct blob {
  uint8_t *data;
  size_t size;
} blob;

/* ---- loading ----------------------------------------------------------------------------- */

static bool load_file(const char *path, blob *b) {
  b->size = 0;
  b->data = test_read_file(path, &b->size);
  return b->data != NULL;
}

/* Loads DIR/<file>, or sets skip_message and returns false. */
static bool load_cubin(const char *file, blob *b) {
  char path[1024];
  *b = (blob){0};
  if (!cubin_dir) {
    snprintf(skip_message, sizeof skip_message,
             "no cubin directory: pass it as the first argument or set NVHCQ_TEST_CUBIN_DIR "
             "(cubins are built with nvcc)");
    return false;
  }
  snprintf(path, sizeof path, "%s/%s", cubin_dir, file);
  if (load_file(path, b)) return true;
  free(b->data);
  *b = (blob){0};
  snprintf(skip_message, sizeof skip_message, "%s is missing (was nvcc available at build time?)",
           path);
  return false;
}

/* Loads DIR/kernels_<arch>.cubin, or sets skip_message and returns false. */
static bool load_arch(const char *arch, blob *b) {
  char file[64];
  snprintf(file, sizeof file, "kernels_%s.cubin", arch);
  return load_cubin(file, b);
}

#define LOAD_OR_SKIP(arch, b)                                                                      \
  do {                                                                                             \
    if (!load_arch(arch, b)) TEST_SKIP(skip_message);                                              \
  } while (0)

static nvhcq_cubin *parse_ok(const blob *b) {
  nvhcq_cubin *c = NULL;
  nvhcq_status st = nvhcq_cubin_parse(b->data, b->size, &c);
  TEST_CHECK_MSG(st == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  return c;
}

/* The image as a module load writes it (memory_size bytes), from the file c was parsed from. */
static uint8_t *image_of(const nvhcq_cubin *c, const void *data, size_t size) {
  uint8_t *img = malloc(c->memory_size + 1);
  if (!img) return NULL;
  nvhcq_status st = nvhcq_cubin_write_image(c, data, size, img);
  TEST_CHECK_MSG(st == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (st) free(img);
  return st ? NULL : img;
}

static bool contains(const void *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  for (size_t i = 0; m <= n && i <= n - m; i++)
    if (!memcmp((const uint8_t *)hay + i, needle, m)) return true;
  return false;
}

/* ---- a minimal section walker for pristine files (to aim mutations) --------------------- */

typedef struct test_section {
  const char *name;
  uint64_t header; /* file offset of the section header */
  uint64_t offset, size;
  uint32_t type;
} test_section;

static uint64_t rd(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void wr(uint8_t *p, int bytes, uint64_t v) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int test_sections(const blob *b, test_section *out, int max) {
  uint64_t shoff = rd(b->data + 40, 8);
  int n = (int)rd(b->data + 60, 2), strndx = (int)rd(b->data + 62, 2);
  uint64_t names = rd(b->data + shoff + (uint64_t)strndx * 64 + 24, 8);
  for (int i = 0; i < n && i < max; i++) {
    const uint8_t *h = b->data + shoff + (uint64_t)i * 64;
    out[i] = (test_section){(const char *)b->data + names + rd(h, 4), shoff + (uint64_t)i * 64,
                            rd(h + 24, 8), rd(h + 32, 8), (uint32_t)rd(h + 4, 4)};
  }
  return n < max ? n : max;
}

static const test_section *test_find(const blob *b, const char *name) {
  static test_section s[256];
  int n = test_sections(b, s, 256);
  for (int i = 0; i < n; i++)
    if (!strcmp(s[i].name, name)) return &s[i];
  return NULL;
}

/* ---- expectations ------------------------------------------------------------------------ */

enum { VECTOR_ADD, SCALE_GLOBALS, AFFINE_STRUCT, REVERSE_SHARED, LOCAL_STACK, CALL_DEVICE, NK };
static const char *const kernel_names[NK] = {"vector_add",     "scale_globals", "affine_struct",
                                             "reverse_shared", "local_stack",   "call_device"};
/* Bytes of parameters: pointers 8, int 4, the 16-byte struct, the 64-bit scalar 8. */
static const uint32_t param_sizes[NK] = {0x1c, 0x14, 0x2c, 0x18, 0x14, 0x14};

typedef struct arch_case {
  const char *arch;
  unsigned sm;
  uint32_t param_offset;    /* EIATTR_PARAM_CBANK offset */
  uint32_t reserved_shared; /* 1 KiB window ptxas puts before static shared memory (sm_90+) */
  uint32_t registers[NK];   /* cuobjdump -res-usage, nvcc V13.0.88 */
} arch_case;

static const arch_case arch_cases[] = {
    {"sm_80", 80, 0x160, 0, {12, 14, 12, 16, 38, 8}},
    {"sm_89", 89, 0x160, 0, {12, 16, 12, 16, 42, 8}},
    {"sm_90", 90, 0x210, 1024, {12, 16, 12, 16, 38, 10}},
    {"sm_100", 100, 0x380, 1024, {12, 18, 12, 16, 31, 10}},
};
#define NARCH ((int)(sizeof arch_cases / sizeof arch_cases[0]))

/* Runs fn on every architecture's cubin; skips when none is there. */
static void for_each_arch(void (*fn)(const arch_case *, const blob *, nvhcq_cubin *)) {
  int ran = 0;
  for (int i = 0; i < NARCH; i++) {
    blob b;
    if (!load_arch(arch_cases[i].arch, &b)) continue;
    nvhcq_cubin *c = parse_ok(&b);
    if (c) fn(&arch_cases[i], &b, c);
    nvhcq_cubin_free(c);
    free(b.data);
    ran++;
  }
  if (ran < NARCH) TEST_SKIP(skip_message);
}

/* ---- kernels and their resources --------------------------------------------------------- */

static void check_kernels(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  (void)b;
  TEST_CHECK_MSG(c->sm == a->sm && !c->arch_specific, "%s: parsed sm_%u%s", a->arch, c->sm,
                 c->arch_specific ? "a" : "");
  TEST_CHECK(c->kernel_count == NK);
  for (int i = 0; i < NK; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, kernel_names[i]);
    TEST_CHECK_MSG(k != NULL, "%s: %s", a->arch, nvhcq_last_error());
    if (!k) continue;
    TEST_CHECK(k->code_offset % 128 == 0 && k->code_size > 0 && k->code_size % 16 == 0);
    TEST_CHECK(k->code_offset + k->code_size <= c->image_size);
  }
  /* poly3 is a device function, compiled into call_device's .text */
  TEST_CHECK(nvhcq_cubin_find_kernel(c, "_Z5poly3ffff") == NULL);
  TEST_CHECK(strstr(nvhcq_last_error(), "no kernel named _Z5poly3ffff") != NULL);
  TEST_CHECK(strstr(nvhcq_last_error(), "vector_add") != NULL);
  TEST_CHECK(nvhcq_cubin_find_kernel(c, "$call_device$_Z5poly3ffff") == NULL);
  TEST_CHECK(nvhcq_cubin_check_arch(c, a->sm) == NVHCQ_SUCCESS);
}

static void test_kernels_listed(void) {
  for_each_arch(check_kernels);
}

/* Only the string tables are copied: names, kernels and globals outlive the caller's buffer, and
 * only the image writer reads the file again (given the same size). */
static void test_names_outlive_the_file(void) {
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  blob copy = {malloc(b.size), b.size};
  memcpy(copy.data, b.data, b.size);
  nvhcq_cubin *c = parse_ok(&copy);
  uint8_t *img = c ? image_of(c, copy.data, copy.size) : NULL;
  memset(copy.data, 0xa5, copy.size);
  free(copy.data);
  for (int i = 0; c && i < NK; i++)
    TEST_CHECK_MSG(nvhcq_cubin_find_kernel(c, kernel_names[i]) != NULL, "%s", nvhcq_last_error());
  const nvhcq_cubin_global *g = c ? nvhcq_cubin_find_global(c, "scale_table") : NULL;
  TEST_CHECK(g && !strcmp(g->section, ".nv.constant3"));
  /* the image equals the file's section bytes at their places */
  const test_section *text = test_find(&b, ".text.vector_add");
  const nvhcq_cubin_kernel *k = c ? nvhcq_cubin_find_kernel(c, "vector_add") : NULL;
  TEST_CHECK(img && text && k && !memcmp(img + k->code_offset, b.data + text->offset, text->size));
  TEST_CHECK(c &&
             nvhcq_cubin_write_image(c, b.data, b.size - 1, img) == NVHCQ_ERROR_INVALID_ARGUMENT);
  free(img);
  nvhcq_cubin_free(c);
  free(b.data);
}

static void check_param(const nvhcq_cubin_kernel *k, uint32_t i, uint32_t offset, uint32_t size) {
  TEST_CHECK_MSG(i < k->param_count && k->params[i].ordinal == i && k->params[i].offset == offset &&
                     k->params[i].size == size,
                 "%s parameter %u", k->name, i);
}

static void check_params(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  (void)b;
  for (int i = 0; i < NK; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, kernel_names[i]);
    if (!k) continue;
    TEST_CHECK_MSG(k->param_offset == a->param_offset, "%s %s: param offset 0x%x", a->arch, k->name,
                   k->param_offset);
    TEST_CHECK_MSG(k->param_size == param_sizes[i], "%s %s: param size 0x%x", a->arch, k->name,
                   k->param_size);
    TEST_CHECK(k->cbank_param_size == k->param_size);
    TEST_CHECK(k->cbank0_size == k->param_offset + k->param_size);
    TEST_CHECK(k->cbank_count >= 1 && k->cbanks[0].bank == 0 &&
               k->cbanks[0].size == k->cbank0_size && k->cbanks[0].offset % 128 == 0);
  }
  const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, "affine_struct");
  if (k) {
    TEST_CHECK(k->param_count == 5);
    check_param(k, 0, 0x00, 16); /* struct affine_params */
    check_param(k, 1, 0x10, 8);  /* in */
    check_param(k, 2, 0x18, 8);  /* out */
    check_param(k, 3, 0x20, 8);  /* int64_t base */
    check_param(k, 4, 0x28, 4);  /* uint32_t n */
  }
  k = nvhcq_cubin_find_kernel(c, "vector_add");
  if (k) {
    TEST_CHECK(k->param_count == 4);
    for (uint32_t i = 0; i < 3; i++) check_param(k, i, 8 * i, 8);
    check_param(k, 3, 0x18, 4);
  }
}

static void test_param_layout(void) {
  for_each_arch(check_params);
}

static void check_registers(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  bool same_nvcc = contains(b->data, b->size, "V13.0.88");
  for (int i = 0; i < NK; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, kernel_names[i]);
    if (!k) continue;
    TEST_CHECK_MSG(k->registers >= 4 && k->registers <= 255, "%s %s: %u registers", a->arch,
                   k->name, k->registers);
    if (same_nvcc)
      TEST_CHECK_MSG(k->registers == a->registers[i], "%s %s: %u registers, cuobjdump said %u",
                     a->arch, k->name, k->registers, a->registers[i]);
    TEST_CHECK(k->max_registers == 255); /* EIATTR_MAXREG_COUNT without launch bounds */
  }
  if (!same_nvcc)
    fprintf(stderr, "  %s: register counts only range-checked (cubin not from nvcc V13.0.88)\n",
            a->arch);
}

static void test_registers(void) {
  for_each_arch(check_registers);
}

static void check_resources(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  (void)b;
  /* the window the file says every kernel's section counts (CUDA 13's .nv.shared.reserved.0) */
  TEST_CHECK_MSG(c->shared_reserved == a->reserved_shared, "%s: reserved %u, expected %u", a->arch,
                 c->shared_reserved, a->reserved_shared);
  /* built from PTX for the same target: the note names it */
  TEST_CHECK_MSG(c->ptx_sm == a->sm, "%s: PTX target %u", a->arch, c->ptx_sm);
  for (int i = 0; i < NK; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, kernel_names[i]);
    if (!k) continue;
    uint32_t shared = a->reserved_shared + (i == REVERSE_SHARED ? 1024 : 0); /* int tile[256] */
    uint32_t stack = i == LOCAL_STACK ? 2048 : 0;                            /* int scratch[512] */
    TEST_CHECK_MSG(k->shared_size == shared, "%s %s: shared %u, expected %u", a->arch, k->name,
                   k->shared_size, shared);
    TEST_CHECK_MSG(k->min_stack_size == stack && k->frame_size == stack, "%s %s: stack %u/%u",
                   a->arch, k->name, k->min_stack_size, k->frame_size);
    TEST_CHECK(k->max_stack_size == 0);
    TEST_CHECK_MSG(k->barriers == (i == REVERSE_SHARED ? 1u : 0u), "%s %s: %u barriers", a->arch,
                   k->name, k->barriers);
    uint32_t mt = i == CALL_DEVICE ? 128 : 0; /* __launch_bounds__(128) */
    TEST_CHECK(k->max_threads[0] == mt && k->max_threads[1] == (mt ? 1u : 0u));
    TEST_CHECK(k->reqntid[0] == 0 && k->reqntid[1] == 0 && k->reqntid[2] == 0);
  }
}

static void test_shared_local_limits(void) {
  for_each_arch(check_resources);
}

/* ---- module globals and relocations ------------------------------------------------------ */

static const nvhcq_cubin_global *global_ok(const nvhcq_cubin *c, const char *name, uint64_t size,
                                           const char *section) {
  const nvhcq_cubin_global *g = nvhcq_cubin_find_global(c, name);
  TEST_CHECK_MSG(g != NULL, "%s", nvhcq_last_error());
  if (!g) return NULL;
  TEST_CHECK_MSG(g->size == size && !strcmp(g->section, section), "%s: %llu bytes in %s", name,
                 (unsigned long long)g->size, g->section);
  return g;
}

static void check_globals(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  (void)a;
  uint8_t *img = image_of(c, b->data, b->size);
  if (!img) return;
  const nvhcq_cubin_global *g = global_ok(c, "scale_table", 64, ".nv.constant3");
  if (g) {
    TEST_CHECK(g->kind == NVHCQ_CUBIN_GLOBAL_CONSTANT && g->bank == 3);
    float v[16];
    memcpy(v, img + g->offset, sizeof v);
    for (int i = 0; i < 16; i++) TEST_CHECK(v[i] == (float)(i + 1));
    bool bound = false; /* the module bank 3 a launch binds holds it */
    for (uint32_t i = 0; i < c->cbank_count; i++)
      bound |= c->cbanks[i].bank == 3 && c->cbanks[i].offset <= g->offset &&
               g->offset + g->size <= c->cbanks[i].offset + c->cbanks[i].size;
    TEST_CHECK(bound);
  }
  g = global_ok(c, "global_counter", 4, ".nv.global");
  if (g) {
    TEST_CHECK(g->kind == NVHCQ_CUBIN_GLOBAL_DEVICE && g->offset >= c->image_size &&
               g->offset + g->size <= c->memory_size);
    uint32_t zero = ~0u; /* zero-filled by the image writer */
    memcpy(&zero, img + g->offset, sizeof zero);
    TEST_CHECK(zero == 0);
  }
  g = global_ok(c, "global_offsets", 16, ".nv.global.init");
  if (g) {
    uint32_t v[4];
    memcpy(v, img + g->offset, sizeof v);
    TEST_CHECK(v[0] == 7 && v[1] == 11 && v[2] == 13 && v[3] == 17);
  }
  global_ok(c, "global_offsets_ptr", 8, ".nv.global.init");
  TEST_CHECK(nvhcq_cubin_find_global(c, "no_such_global") == NULL);
  free(img);
}

static void test_globals(void) {
  for_each_arch(check_globals);
}

static uint64_t reloc_value(const uint8_t *image, const nvhcq_cubin_reloc *r) {
  switch (r->type) {
  case NVHCQ_R_CUDA_ABS32_LO_32:
  case NVHCQ_R_CUDA_ABS32_HI_32:
    return rd(image + r->offset + 4, 4);
  case NVHCQ_R_CUDA_32:
  case NVHCQ_R_CUDA_G32:
    return rd(image + r->offset, 4);
  default:
    return rd(image + r->offset, 8);
  }
}

static uint64_t reloc_expect(const nvhcq_cubin_reloc *r, uint64_t base) {
  uint64_t v = base + r->symbol_offset + (uint64_t)r->addend;
  if (r->type == NVHCQ_R_CUDA_ABS32_HI_32) return v >> 32;
  bool narrow = r->type != NVHCQ_R_CUDA_64 && r->type != NVHCQ_R_CUDA_G64;
  return narrow ? (uint32_t)v : v;
}

static uint8_t *relocated(const nvhcq_cubin *c, const blob *b, uint64_t base) {
  uint8_t *img = image_of(c, b->data, b->size);
  if (!img) return NULL;
  TEST_CHECK_MSG(nvhcq_cubin_relocate(c, img, base) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  return img;
}

static void check_relocate(const arch_case *a, const blob *b, nvhcq_cubin *c) {
  const uint64_t base = 0x7f1234560000ull;
  uint8_t *img = relocated(c, b, base);
  if (!img) return;
  TEST_CHECK_MSG(c->reloc_count == 4, "%s: %u relocations", a->arch, c->reloc_count);
  for (uint32_t i = 0; i < c->reloc_count; i++)
    TEST_CHECK(reloc_value(img, &c->relocs[i]) == reloc_expect(&c->relocs[i], base));
  const nvhcq_cubin_global *ptr = nvhcq_cubin_find_global(c, "global_offsets_ptr");
  const nvhcq_cubin_global *arr = nvhcq_cubin_find_global(c, "global_offsets");
  const nvhcq_cubin_global *ctr = nvhcq_cubin_find_global(c, "global_counter");
  if (ptr && arr) /* R_CUDA_G64: the pointer initialiser now holds the array's GPU address */
    TEST_CHECK(rd(img + ptr->offset, 8) == base + arr->offset);
  for (uint32_t i = 0; ptr && arr && ctr && i < c->cbank_count; i++) {
    if (c->cbanks[i].bank != 4) continue; /* bank 4: addresses of the globals the code uses */
    uint64_t want[3] = {base + ptr->offset, base + arr->offset, base + ctr->offset};
    for (int w = 0; w < 3; w++) {
      bool found = false;
      for (uint64_t o = 0; o + 8 <= c->cbanks[i].size; o += 8)
        found |= rd(img + c->cbanks[i].offset + o, 8) == want[w];
      TEST_CHECK_MSG(found, "%s: bank 4 lacks address %d", a->arch, w);
    }
  }
  /* idempotent: relocating again at another base equals a fresh relocation there */
  uint8_t *fresh = relocated(c, b, 0x100000000ull);
  TEST_CHECK(nvhcq_cubin_relocate(c, img, 0x100000000ull) == NVHCQ_SUCCESS);
  TEST_CHECK(fresh && !memcmp(img, fresh, c->image_size));
  free(fresh);
  free(img);
}

static void test_relocate(void) {
  for_each_arch(check_relocate);
}

/* Sets the type of the first relocation of `section` in a copy of b (*m, for the caller to free),
 * then parses the copy. */
static nvhcq_status parse_with_reloc_type(const blob *b, const char *section, uint32_t type,
                                          blob *m, nvhcq_cubin **out) {
  const test_section *s = test_find(b, section);
  *m = (blob){0};
  TEST_CHECK_MSG(s != NULL, "no %s", section);
  if (!s) return NVHCQ_ERROR_NOT_FOUND;
  *m = (blob){malloc(b->size), b->size};
  memcpy(m->data, b->data, b->size);
  wr(m->data + s->offset + 8, 4, type); /* low half of r_info */
  return nvhcq_cubin_parse(m->data, m->size, out);
}

static void test_reloc_abs32_and_unknown(void) {
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  const uint64_t base = 0x7f1234560000ull;
  for (uint32_t type = NVHCQ_R_CUDA_ABS32_LO_32; type <= NVHCQ_R_CUDA_ABS32_HI_32; type++) {
    nvhcq_cubin *c = NULL;
    blob m;
    TEST_CHECK(parse_with_reloc_type(&b, ".rela.nv.constant4", type, &m, &c) == NVHCQ_SUCCESS);
    const nvhcq_cubin_reloc *r = NULL;
    for (uint32_t i = 0; c && i < c->reloc_count; i++)
      if (c->relocs[i].type == type) r = &c->relocs[i];
    TEST_CHECK(r != NULL);
    uint8_t *img = c && r ? relocated(c, &m, base) : NULL;
    uint8_t *plain = c && r ? image_of(c, m.data, m.size) : NULL;
    if (img && plain) {
      uint64_t v = base + r->symbol_offset + (uint64_t)r->addend;
      TEST_CHECK(rd(img + r->offset + 4, 4) ==
                 (type == NVHCQ_R_CUDA_ABS32_LO_32 ? v & 0xffffffff : v >> 32));
      TEST_CHECK(!memcmp(img + r->offset, plain + r->offset, 4)); /* opcode bytes untouched */
    }
    free(img);
    free(plain);
    free(m.data);
    nvhcq_cubin_free(c);
  }
  nvhcq_cubin *c = NULL;
  blob m;
  TEST_CHECK(parse_with_reloc_type(&b, ".rela.nv.constant4", 0x2b, &m, &c) ==
             NVHCQ_ERROR_INVALID_IMAGE);
  free(m.data);
  TEST_CHECK(c == NULL);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "0x2b") &&
                     strstr(nvhcq_last_error(), ".rela.nv.constant4"),
                 "%s", nvhcq_last_error());
  free(b.data);
}

/* ---- records and header encodings -------------------------------------------------------- */

/* REQNTID has MAX_THREADS' layout (three u32); turn call_device's record into one. */
static void test_reqntid_record(void) {
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  const test_section *s = test_find(&b, ".nv.info.call_device");
  TEST_CHECK(s != NULL);
  bool patched = false;
  for (uint64_t pos = 0; s && pos + 4 <= s->size;) {
    uint8_t *p = b.data + s->offset + pos;
    if (p[0] == 4 && p[1] == 0x05) p[1] = 0x10, patched = true;
    pos += 4 + (p[0] == 4 ? rd(p + 2, 2) : 0);
  }
  TEST_CHECK(patched);
  nvhcq_cubin *c = parse_ok(&b);
  const nvhcq_cubin_kernel *k = c ? nvhcq_cubin_find_kernel(c, "call_device") : NULL;
  TEST_CHECK(k && k->reqntid[0] == 128 && k->reqntid[1] == 1 && k->reqntid[2] == 1);
  TEST_CHECK(k && k->max_threads[0] == 0);
  nvhcq_cubin_free(c);
  free(b.data);
}

static void expect_arch(blob *b, uint8_t abi, uint32_t flags, unsigned sm, bool specific) {
  b->data[8] = abi;
  wr(b->data + 48, 4, flags);
  nvhcq_cubin *c = parse_ok(b);
  TEST_CHECK_MSG(c && c->sm == sm && c->arch_specific == specific, "ABI %u e_flags 0x%x", abi,
                 flags);
  nvhcq_cubin_free(c);
}

/* e_flags as ptxas writes them: 12.8 (ELF ABI 7) and 13.0 (ABI 8), read off real cubins. */
static void test_eflags_encodings(void) {
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  expect_arch(&b, 7, 0x500550, 80, false);  /* sm_80 */
  expect_arch(&b, 7, 0x50055a, 90, false);  /* sm_90 from compute_80 PTX */
  expect_arch(&b, 7, 0x5a0d5a, 90, true);   /* sm_90a: EF_CUDA_ACCELERATORS_V1 0x800 */
  expect_arch(&b, 8, 0x6005004, 80, false); /* CUDA 13 sm_80 */
  expect_arch(&b, 8, 0x6006402, 100, false);
  expect_arch(&b, 8, 0x6005a0c, 90, true); /* bit 3, which LLVM names for the "a" flag */
  b.data[8] = 8;
  wr(b.data + 48, 4, 0x6000004);
  nvhcq_cubin *c = NULL;
  TEST_CHECK(nvhcq_cubin_parse(b.data, b.size, &c) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK(strstr(nvhcq_last_error(), "no SM version") != NULL);
  free(b.data);
}

/* ptxas 13.0 marks "a" targets only in .nv.compat (EICOMPAT 0x09), not in e_flags. */
static void test_arch_specific(void) {
  blob b;
  LOAD_OR_SKIP("sm_90a", &b);
  nvhcq_cubin *c = parse_ok(&b);
  TEST_CHECK(c && c->sm == 90 && c->arch_specific);
  TEST_CHECK(c && nvhcq_cubin_check_arch(c, 90) == NVHCQ_SUCCESS);
  TEST_CHECK(c && nvhcq_cubin_check_arch(c, 100) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK_MSG(!strcmp(nvhcq_last_error(), "cubin is for sm_90a, this GPU needs sm_100 code; "
                                             "rebuild with -arch=sm_100"),
                 "%s", nvhcq_last_error());
  nvhcq_cubin_free(c);
  free(b.data);
}

static nvhcq_status check_arch_of(const char *arch, unsigned gpu) {
  blob b;
  if (!load_arch(arch, &b)) return NVHCQ_ERROR_NOT_FOUND;
  nvhcq_cubin *c = parse_ok(&b);
  nvhcq_status st = c ? nvhcq_cubin_check_arch(c, gpu) : NVHCQ_ERROR_INVALID_IMAGE;
  nvhcq_cubin_free(c);
  free(b.data);
  return st;
}

static void test_wrong_arch(void) {
  for (int i = 0; i < NARCH; i++)
    if (check_arch_of(arch_cases[i].arch, arch_cases[i].sm) == NVHCQ_ERROR_NOT_FOUND)
      TEST_SKIP(skip_message);
  TEST_CHECK(check_arch_of("sm_80", 90) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK_MSG(!strcmp(nvhcq_last_error(),
                         "cubin is for sm_80, this GPU needs sm_90 code; rebuild with -arch=sm_90"),
                 "%s", nvhcq_last_error());
  TEST_CHECK(check_arch_of("sm_80", 86) == NVHCQ_SUCCESS); /* same major, newer minor */
  TEST_CHECK(check_arch_of("sm_89", 80) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK(check_arch_of("sm_90", 90) == NVHCQ_SUCCESS);
  /* RM's SM_VERSION encoding: the minor is the low byte */
  TEST_CHECK(check_arch_of("sm_90", nvhcq_sm_number(0x900)) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_sm_number(0x809) == 89 && nvhcq_sm_number(0xa03) == 103);
  TEST_CHECK(check_arch_of("sm_89", nvhcq_sm_number(0x809)) == NVHCQ_SUCCESS);
  TEST_CHECK(check_arch_of("sm_80", nvhcq_sm_number(0x809)) == NVHCQ_SUCCESS);
  TEST_CHECK(check_arch_of("sm_90", 100) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK(check_arch_of("sm_100", 90) == NVHCQ_ERROR_INVALID_IMAGE);
  TEST_CHECK(strstr(nvhcq_last_error(), "cubin is for sm_100, this GPU needs sm_90") != NULL);
}

/* ---- malformed input --------------------------------------------------------------------- */

static void expect_invalid(const void *data, size_t size, const char *phrase) {
  nvhcq_cubin *c = (nvhcq_cubin *)1;
  TEST_CHECK(nvhcq_cubin_parse(data, size, &c) == NVHCQ_ERROR_INVALID_IMAGE && c == NULL);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), phrase) != NULL, "wanted \"%s\" in: %s", phrase,
                 nvhcq_last_error());
}

static void test_malformed_basics(void) {
  nvhcq_cubin *c;
  TEST_CHECK(nvhcq_cubin_parse(NULL, 10, &c) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_cubin_parse("x", 1, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  expect_invalid(NULL, 0, "too short");
  static const char ptx[80] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n";
  expect_invalid(ptx, sizeof ptx, "no ELF magic");
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  b.data[18] = 62; /* EM_X86_64 */
  expect_invalid(b.data, b.size, "EM_CUDA");
  b.data[18] = 190;
  wr(b.data + 40, 8, b.size); /* section headers at the end of the file */
  expect_invalid(b.data, b.size, "run past the end");
  free(b.data);
}

/* A kernel's .nv.info.<k> made NOBITS with an enormous size (the fuzzer's find: it sized the
 * parameter pool from it) is refused before anything is allocated for it. */
/* Bits [lo, lo+width) of the little-endian bytes at p. */
static uint64_t bits_at(const uint8_t *p, unsigned lo, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)(p[(lo + i) / 8] >> ((lo + i) % 8) & 1) << i;
  return v;
}

/* nvcc -rdc=true calls a function in another .text section through R_CUDA_ABS55_16_34: the
 * target's bits 2..9 go to instruction bits 16..23, bits 10..56 to bits 34..80, and every other
 * bit of the instruction stays as the file has it. */
static void test_call_across_sections(void) {
  blob b;
  if (!load_cubin("rdc_sm_90.cubin", &b)) TEST_SKIP(skip_message);
  nvhcq_cubin *c = parse_ok(&b);
  const uint64_t base = 0x7f1234560000ull;
  uint8_t *img = c ? relocated(c, &b, base) : NULL, *plain = c ? image_of(c, b.data, b.size) : NULL;
  unsigned calls = 0;
  for (uint32_t i = 0; img && plain && i < c->reloc_count; i++) {
    const nvhcq_cubin_reloc *r = &c->relocs[i];
    if (r->type != NVHCQ_R_CUDA_ABS55_16_34) continue;
    calls++;
    uint64_t v = base + r->symbol_offset + (uint64_t)r->addend;
    const uint8_t *at = img + r->offset, *was = plain + r->offset;
    TEST_CHECK(bits_at(at, 16, 8) == (v >> 2 & 0xff));
    TEST_CHECK(bits_at(at, 34, 47) == (v >> 10 & ((1ull << 47) - 1)));
    TEST_CHECK(bits_at(at, 0, 16) == bits_at(was, 0, 16) &&
               bits_at(at, 24, 10) == bits_at(was, 24, 10));
    TEST_CHECK(bits_at(at, 81, 47) == bits_at(was, 81, 47));
  }
  TEST_CHECK_MSG(calls >= 2, "%u calls relocated, the kernel makes two and a callee one", calls);
  free(img);
  free(plain);
  nvhcq_cubin_free(c);
  free(b.data);
}

/* The arch of a relocatable cubin (what its device link targets) and of an arch-specific one. */
static void test_arch_peek(void) {
  blob b;
  if (!load_cubin("rdc_sm_90.cubin", &b)) TEST_SKIP(skip_message);
  unsigned sm = 0;
  bool specific = true;
  TEST_CHECK(nvhcq_cubin_arch(b.data, b.size, &sm, &specific) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(sm == 90 && !specific, "sm_%u%s", sm, specific ? "a" : "");
  free(b.data);
  if (!load_arch("sm_90a", &b)) return; /* older nvcc: no sm_90a cubin */
  TEST_CHECK(nvhcq_cubin_arch(b.data, b.size, &sm, &specific) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(sm == 90 && specific, "sm_%u%s", sm, specific ? "a" : "");
  TEST_CHECK(nvhcq_cubin_arch(b.data, 40, &sm, &specific) == NVHCQ_ERROR_INVALID_IMAGE);
  free(b.data);
}

static void test_info_without_bytes(void) {
  blob b;
  LOAD_OR_SKIP("sm_90", &b);
  const test_section *s = test_find(&b, ".nv.info.call_device");
  TEST_CHECK(s != NULL);
  if (s) {
    wr(b.data + s->header + 4, 4, 8);                    /* SHT_NOBITS */
    wr(b.data + s->header + 32, 8, 0x80000000140000ull); /* 2^55 and more */
    expect_invalid(b.data, b.size, "has no bytes in the file");
  }
  free(b.data);
}

/* Whatever parse makes of a damaged file must be safe to use. (A damaged NOBITS size may ask for
 * up to 1 TiB of zeros: such images are not written.) */
static void exercise(const nvhcq_cubin *c, const uint8_t *data, size_t size) {
  uint8_t *img = c->memory_size <= (64u << 20) ? image_of(c, data, size) : NULL;
  if (img) TEST_CHECK(nvhcq_cubin_relocate(c, img, 0x7f0000000000ull) == NVHCQ_SUCCESS);
  free(img);
  for (uint32_t i = 0; i < c->kernel_count; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, c->kernels[i].name);
    TEST_CHECK(k != NULL && k->code_offset + k->code_size <= c->image_size);
    for (uint32_t j = 0; k && j < k->cbank_count; j++)
      TEST_CHECK(k->cbanks[j].offset + k->cbanks[j].size <= c->memory_size);
  }
  for (uint32_t i = 0; i < c->global_count; i++)
    TEST_CHECK(nvhcq_cubin_find_global(c, c->globals[i].name) != NULL &&
               c->globals[i].offset + c->globals[i].size <= c->memory_size);
}

static int parse_damaged(const uint8_t *data, size_t size) {
  nvhcq_cubin *c = NULL;
  nvhcq_status st = nvhcq_cubin_parse(data, size, &c);
  TEST_CHECK_MSG(st == NVHCQ_SUCCESS || st == NVHCQ_ERROR_INVALID_IMAGE, "%s: %s",
                 nvhcq_status_name(st), nvhcq_last_error());
  if (c) exercise(c, data, size);
  nvhcq_cubin_free(c);
  return st == NVHCQ_SUCCESS;
}

static void test_every_truncation(void) {
  int done = 0;
  for (int a = 0; a < NARCH; a++) {
    blob b;
    if (!load_arch(arch_cases[a].arch, &b)) continue;
    int ok = 0;
    for (size_t n = 0; n <= b.size; n++) {
      uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes, so ASan sees any overread */
      memcpy(copy, b.data, n);
      ok += parse_damaged(copy, n);
      free(copy);
    }
    TEST_CHECK(ok >= 1); /* at least the whole file */
    free(b.data);
    done++;
  }
  if (!done) TEST_SKIP(skip_message);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { /* xorshift64*, fixed seed: failures reproduce */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

/* Byte ranges worth aiming at: headers, section table, symbols, strings, info, relocations. */
static int metadata_ranges(const blob *b, uint64_t (*r)[2], int max) {
  static test_section s[256];
  int n = test_sections(b, s, 256), k = 0;
  r[k][0] = 0, r[k++][1] = 64;
  for (int i = 0; i < n && k < max; i++) {
    r[k][0] = s[i].header, r[k++][1] = 64;
    bool meta = s[i].type != 1 && s[i].type != 8; /* not PROGBITS / NOBITS */
    if (meta && s[i].size && k < max) r[k][0] = s[i].offset, r[k++][1] = s[i].size;
  }
  return k;
}

static void corrupt(uint8_t *d, size_t size, uint64_t (*ranges)[2], int nranges) {
  static const uint64_t odd[] = {
      0,     1,       0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0xffffffff, 0xfffffffffffffff0ull,
      ~0ull, 0x10000, 4096};
  int edits = 1 + (int)(rng() % 6);
  for (int e = 0; e < edits; e++) {
    uint64_t(*r)[2] = &ranges[rng() % (uint64_t)nranges];
    uint64_t pos = rng() % 2 ? rng() % size : (*r)[0] + rng() % (*r)[1];
    if (rng() % 3 == 0 && pos + 8 <= size) /* a whole field set to an edge value */
      wr(d + pos, rng() % 2 ? 4 : 8, odd[rng() % (sizeof odd / sizeof odd[0])]);
    else if (pos < size)
      d[pos] = (uint8_t)rng();
  }
}

static void test_random_corruption(void) {
  int done = 0;
  for (int a = 0; a < NARCH; a++) {
    blob b;
    if (!load_arch(arch_cases[a].arch, &b)) continue;
    uint64_t ranges[600][2];
    int nranges = metadata_ranges(&b, ranges, 600), ok = 0;
    uint8_t *copy = malloc(b.size);
    for (int it = 0; it < 3000; it++) {
      memcpy(copy, b.data, b.size);
      corrupt(copy, b.size, ranges, nranges);
      ok += parse_damaged(copy, b.size);
    }
    fprintf(stderr, "  %s: %d of 3000 corrupted copies still parsed\n", arch_cases[a].arch, ok);
    free(copy);
    free(b.data);
    done++;
  }
  if (!done) TEST_SKIP(skip_message);
}

static bool is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- undefined functions the driver provides (printf, assert, malloc, free) -------------- */

static int import_named(const nvhcq_cubin *c, const char *name) {
  for (uint32_t i = 0; i < c->import_count; i++)
    if (!strcmp(c->imports[i], name)) return (int)i;
  return -1;
}

static uint32_t imports_of(const nvhcq_cubin *c, const char *kernel) {
  const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, kernel);
  TEST_CHECK_MSG(k != NULL, "no kernel %s", kernel);
  return k ? k->imports : 0;
}

/* tests/device/syscalls_test.cu, nvcc -cubin: its kernels call vprintf, __assertfail, malloc and
 * free, undefined in the file, through 64-bit addresses in constant bank 4 (R_CUDA_64). */
static void check_import_records(const nvhcq_cubin *c) {
  int vp = import_named(c, "vprintf"), as = import_named(c, "__assertfail");
  int ma = import_named(c, "malloc"), fr = import_named(c, "free");
  TEST_CHECK(c->import_count == 4 && vp >= 0 && as >= 0 && ma >= 0 && fr >= 0);
  if (vp < 0 || as < 0 || ma < 0 || fr < 0) return;
  TEST_CHECK(imports_of(c, "print_all") == 1u << vp);
  TEST_CHECK(imports_of(c, "print_every_thread") == 1u << vp);
  TEST_CHECK(imports_of(c, "assert_one") == 1u << as);
  TEST_CHECK(imports_of(c, "heap_rounds") == (1u << ma | 1u << fr));
  TEST_CHECK(imports_of(c, "heap_exhaust") == (1u << ma | 1u << fr));
  uint32_t seen = 0;
  for (uint32_t i = 0; i < c->reloc_count; i++) {
    const nvhcq_cubin_reloc *r = &c->relocs[i];
    if (r->import < 0) continue;
    TEST_CHECK(r->type == NVHCQ_R_CUDA_64 && r->symbol_offset == 0 && r->addend == 0);
    seen |= 1u << r->import;
  }
  TEST_CHECK_MSG(seen == 0xf, "relocations name imports 0x%x", seen);
}

static void test_syscall_imports(void) {
  blob b;
  if (!load_cubin("syscalls_test_sm_90.cubin", &b)) TEST_SKIP(skip_message);
  nvhcq_cubin *c = parse_ok(&b);
  uint8_t *img = c ? image_of(c, b.data, b.size) : NULL;
  if (c && img) {
    check_import_records(c);
    const uint64_t base = 0x7f0000000000ull;
    const uint64_t imports[NVHCQ_CUBIN_MAX_IMPORTS] = {0x7e00000000a0ull, 0x7e0000001100ull,
                                                       0x7e0000002200ull, 0x7e0000003300ull};
    TEST_CHECK(nvhcq_cubin_relocate(c, img, base) == NVHCQ_ERROR_INVALID_IMAGE);
    TEST_CHECK(strstr(nvhcq_last_error(), "nvhcq_cubin_relocate_imports") != NULL);
    TEST_CHECK(nvhcq_cubin_relocate_imports(c, img, base, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
    TEST_CHECK(nvhcq_cubin_relocate_imports(c, img, base, imports) == NVHCQ_SUCCESS);
    for (uint32_t i = 0; i < c->reloc_count; i++) {
      const nvhcq_cubin_reloc *r = &c->relocs[i];
      uint64_t want =
          (r->import >= 0 ? imports[r->import] : base + r->symbol_offset) + (uint64_t)r->addend;
      if (r->type == NVHCQ_R_CUDA_64) TEST_CHECK(bits_at(img + r->offset, 0, 64) == want);
    }
  }
  free(img);
  nvhcq_cubin_free(c);
  free(b.data);
}

/* Any other undefined symbol still needs nvlink: vprintf renamed in the string table. */
static void test_other_undefined_refused(void) {
  blob b;
  if (!load_cubin("syscalls_test_sm_90.cubin", &b)) TEST_SKIP(skip_message);
  static const char name[] = "\0vprintf\0";
  uint8_t *at = memmem(b.data, b.size, name, sizeof name - 1);
  TEST_CHECK(at != NULL);
  if (at) {
    at[7] = 'X';
    expect_invalid(b.data, b.size, "needs undefined symbol vprintX; link the cubin (nvlink) first");
  }
  free(b.data);
}

/* The syscalls module nvhcq embeds (src/exec/syscalls.cu, device-linked): each function present
 * (nvlink may rename it name$N), within the 24 registers a caller reserves, with its frame. */
static void test_syscalls_module(void) {
  static const char *const archs[] = {"sm_80", "sm_89", "sm_90", "sm_100"};
  static const char *const names[] = {"nvhcq_sys_vprintf", "nvhcq_sys___assertfail",
                                      "nvhcq_sys_malloc", "nvhcq_sys_free"};
  int found = 0;
  for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
    char path[1024];
    blob b;
    snprintf(path, sizeof path, "%s/syscalls_%s.cubin", NVHCQ_SYSCALLS_DIR, archs[a]);
    if (!load_file(path, &b)) continue;
    found++;
    nvhcq_cubin *c = parse_ok(&b);
    for (size_t i = 0; c && i < sizeof names / sizeof *names; i++) {
      const nvhcq_cubin_function *f = nvhcq_cubin_find_function(c, names[i]);
      TEST_CHECK_MSG(f != NULL, "%s: no %s", archs[a], names[i]);
      if (f)
        TEST_CHECK_MSG(f->registers > 0 && f->registers <= 24 && f->frame_size <= 256,
                       "%s: %s has %u registers, a %u-byte frame", archs[a], names[i], f->registers,
                       f->frame_size);
    }
    const nvhcq_cubin_global *g = c ? nvhcq_cubin_find_global(c, "nvhcq_sys") : NULL;
    TEST_CHECK(g && g->size >= sizeof(nvhcq_sys_state));
    TEST_CHECK(c && c->import_count == 0 && !nvhcq_cubin_find_function(c, "nvhcq_sys_vprint"));
    nvhcq_cubin_free(c);
    free(b.data);
  }
  if (!found) TEST_SKIP("no syscalls cubin in the build (nvcc was not found at build time)");
}

int main(int argc, char **argv) {
  static const test_case tests[] = {
      TEST(test_kernels_listed),
      TEST(test_param_layout),
      TEST(test_registers),
      TEST(test_shared_local_limits),
      TEST(test_globals),
      TEST(test_relocate),
      TEST(test_reloc_abs32_and_unknown),
      TEST(test_reqntid_record),
      TEST(test_eflags_encodings),
      TEST(test_arch_specific),
      TEST(test_wrong_arch),
      TEST(test_malformed_basics),
      TEST(test_info_without_bytes),
      TEST(test_call_across_sections),
      TEST(test_arch_peek),
      TEST(test_every_truncation),
      TEST(test_random_corruption),
      TEST(test_names_outlive_the_file),
      TEST(test_syscall_imports),
      TEST(test_other_undefined_refused),
      TEST(test_syscalls_module),
  };
  cubin_dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  if (argc > 1 && is_directory(argv[1])) { /* then an optional test-name filter */
    cubin_dir = argv[1];
    argv[1] = argv[0];
    argc--, argv++;
  }
  return test_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
}
