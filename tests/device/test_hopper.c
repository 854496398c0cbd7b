/* A Hopper GEMM end to end (tests/device/hopper_gemm.cu: TMA loads through __grid_constant__
 * tensor maps, wgmma, a cluster of 2 sharing tiles by TMA multicast) launched through nvhcq and
 * checked against a CPU reference, on the GPU or on the mock (NVHCQ_MOCK=1: the kernel's PTX
 * through the interpreter's wgmma, TMA and mbarriers). Skips visibly without a GPU, on a GPU
 * other than sm_90, or without the cubin (nvcc that does not build sm_90a).
 * What the launch must get right besides the cluster: TMA reads each tensor map from memory, at
 * the parameter area's generic address, which sm_90a code loads from constant bank 0 (SASS of a
 * __grid_constant__ map: ULDC.64 c[0x0][0x198], plus the map's parameter offset, then UTMALDG),
 * so that word must hold the GPU address of the bank's parameter area (bank + 0x210), and the
 * bank 64-byte aligned. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/hopper_gemm.h"
#include "device/hopper_gemm_inputs.h"
#include "device_test.h"

#define CUBIN "hopper_gemm_sm_90a.cubin"

static nvhcq_module *gemm_mod;
static nvhcq_kernel *gemm;

/* Loads a cubin of this build for a Hopper GPU; returns a skip reason, or NULL when it is loaded
 * (or a check failed: *into stays NULL). */
static const char *load_cubin(const char *file, nvhcq_module **into) {
  if (open_device()) return NULL;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  if (strcmp(info.arch, "sm_90")) return "needs a Hopper GPU (sm_90): wgmma is sm_90a code";
#ifdef NVHCQ_TEST_HOPPER_PTX
  /* The mock loads the cubin (its attributes are the cubin's) and runs the kernels from their
   * PTX, built beside it; ahead of what the mock was given, which lacks them. */
  const char *had = getenv("NVHCQ_MOCK_PTX");
  if (on_mock() && !(had && strstr(had, NVHCQ_TEST_HOPPER_PTX))) {
    char list[2048];
    snprintf(list, sizeof list, "%s%s%s", NVHCQ_TEST_HOPPER_PTX, had && *had ? ":" : "",
             had ? had : "");
    setenv("NVHCQ_MOCK_PTX", list, 1);
  }
#endif
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT; /* where this build put them */
#endif
  static char why[600];
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", file);
  snprintf(why, sizeof why, "no %s (built when nvcc builds sm_90a)", file);
  if (access(path, R_OK)) return why;
  if (nvhcq_module_load_file(dev, path, into))
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
  return NULL;
}

/* Loads the GEMM's cubin; returns a skip reason, or NULL when it is loaded (or a check failed). */
static const char *load_gemm(void) {
  if (gemm) return NULL;
  const char *why = gemm_mod ? NULL : load_cubin(CUBIN, &gemm_mod);
  if (!why && gemm_mod && nvhcq_module_get_kernel(gemm_mod, "hopper_gemm", &gemm))
    TEST_CHECK_MSG(0, "hopper_gemm: %s", nvhcq_last_error());
  return why;
}

#define NEED_GEMM()                                                                                \
  do {                                                                                             \
    SKIP_WITHOUT_GPU();                                                                            \
    const char *why_ = load_gemm();                                                                \
    if (why_) TEST_SKIP(why_);                                                                     \
    if (!gemm) return;                                                                             \
  } while (0)

/* ---- inputs and the CPU reference ---- */

/* One GEMM problem: A [m,k] and B [n,k] row-major fp16 (both K-major), C [m,n] fp32. */
typedef struct problem {
  int m, n, k;
  uint16_t *a, *b;
  float *c;
  nvhcq_buffer *da, *db, *dc;
} problem;

/* C[i][j] against the double-precision sum; the bound scales with the sum of |products|, which
 * fp32 accumulation errors are proportional to (a wrong or missing product is far above it). */
static int check_element(const problem *p, int i, int j, double *worst) {
  double want = 0, mag = 0;
  for (int q = 0; q < p->k; q++) {
    double x = half_value(p->a[(size_t)i * p->k + q]) * half_value(p->b[(size_t)j * p->k + q]);
    want += x, mag += fabs(x);
  }
  double err = fabs(p->c[(size_t)i * p->n + j] - want) / (mag + 1e-30);
  if (!(err <= *worst)) *worst = isnan(err) ? INFINITY : err;
  return err <= 1e-4;
}

/* Every element (step 1) or a spread sample; the count of bad ones, the first printed. */
static long check_result(const problem *p, int step, double *worst) {
  long bad = 0;
  *worst = 0;
  for (int i = 0; i < p->m; i += step)
    for (int j = (i * 7) % step; j < p->n; j += step)
      if (!check_element(p, i, j, worst) && !bad++)
        fprintf(stderr, "  C[%d][%d] = %g is wrong\n", i, j, p->c[(size_t)i * p->n + j]);
  return bad;
}

/* ---- the launch ---- */

static int setup_problem(problem *p, int m, int n, int k) {
  *p = (problem){.m = m, .n = n, .k = k};
  p->a = random_halves((size_t)m * k, 1 + (uint64_t)m);
  p->b = random_halves((size_t)n * k, 2 + (uint64_t)n);
  p->c = malloc((size_t)m * n * 4);
  if (!p->a || !p->b || !p->c) {
    TEST_CHECK_MSG(0, "out of host memory");
    return 1;
  }
  int fail = nvhcq_buffer_create(dev, (size_t)m * k * 2, NVHCQ_MEMORY_DEVICE, &p->da) ||
             nvhcq_buffer_create(dev, (size_t)n * k * 2, NVHCQ_MEMORY_DEVICE, &p->db) ||
             nvhcq_buffer_create(dev, (size_t)m * n * 4, NVHCQ_MEMORY_DEVICE, &p->dc) ||
             nvhcq_buffer_write(p->da, 0, p->a, (size_t)m * k * 2) ||
             nvhcq_buffer_write(p->db, 0, p->b, (size_t)n * k * 2);
  memset(p->c, 0xff, (size_t)m * n * 4); /* NaN: an element the kernel skips fails the check */
  fail = fail || nvhcq_buffer_write(p->dc, 0, p->c, (size_t)m * n * 4);
  TEST_CHECK_MSG(!fail, "buffers: %s", nvhcq_last_error());
  return fail;
}

static void free_problem(problem *p) {
  nvhcq_buffer_destroy(p->da), nvhcq_buffer_destroy(p->db), nvhcq_buffer_destroy(p->dc);
  free(p->a), free(p->b), free(p->c);
}

/* A row-major [rows, k] fp16 matrix as the kernel reads it: boxes of 64 K by 128 rows, 128-byte
 * swizzle (the layout wgmma's descriptors in the kernel describe). */
static nvhcq_status encode_map(nvhcq_tensor_map *map, const nvhcq_buffer *b, int rows, int k) {
  nvhcq_tensor_tiled t = {.struct_size = sizeof t,
                          .dtype = NVHCQ_TENSOR_FLOAT16,
                          .rank = 2,
                          .address = nvhcq_buffer_gpu_address(b),
                          .dims = {(uint64_t)k, (uint64_t)rows},
                          .strides = {(uint64_t)k * 2},
                          .box = {HOPPER_GEMM_BOX_K, HOPPER_GEMM_BOX_ROWS},
                          .element_strides = {1, 1},
                          .swizzle = NVHCQ_TENSOR_SWIZZLE_128B,
                          .l2_promotion = NVHCQ_TENSOR_L2_256B};
  return nvhcq_tensor_map_encode_tiled(map, &t);
}

/* The kernel's parameters: two tensor maps, C, m, n, k. */
typedef struct gemm_args {
  nvhcq_tensor_map a, b;
  uint64_t c;
  int32_t m, n, k;
} gemm_args;

/* The parameter block laid out at the offsets the cubin gives (nvhcq_kernel_query_param): not a C
 * struct's (t_kernel_attributes says why). */
static size_t pack_args(const gemm_args *g, uint8_t *block, size_t cap) {
  const void *src[6] = {&g->a, &g->b, &g->c, &g->m, &g->n, &g->k};
  size_t end = 0;
  for (uint32_t i = 0; i < 6; i++) {
    nvhcq_kernel_param prm = {.struct_size = sizeof prm};
    if (nvhcq_kernel_query_param(gemm, i, &prm) || prm.offset + prm.size > cap) return 0;
    memcpy(block + prm.offset, src[i], prm.size);
    end = prm.offset + prm.size > end ? prm.offset + prm.size : end;
  }
  return end;
}

/* Runs C = A B^T on the GPU; by per-parameter pointers, or by a block packed at the cubin's
 * offsets. 0 on success, with C read back into p->c. */
static int run_gemm(problem *p, int by_pointers, uint64_t *gpu_ns) {
  gemm_args g = {.c = nvhcq_buffer_gpu_address(p->dc), .m = p->m, .n = p->n, .k = p->k};
  if (encode_map(&g.a, p->da, p->m, p->k) || encode_map(&g.b, p->db, p->n, p->k)) {
    TEST_CHECK_MSG(0, "encode: %s", nvhcq_last_error());
    return 1;
  }
  const void *ptrs[6] = {&g.a, &g.b, &g.c, &g.m, &g.n, &g.k};
  _Alignas(64) uint8_t block[512] = {0};
  size_t size = by_pointers ? 0 : pack_args(&g, block, sizeof block);
  if (!by_pointers && !size) {
    TEST_CHECK_MSG(0, "params: %s", nvhcq_last_error());
    return 1;
  }
  uint32_t blocks = (uint32_t)(p->m / HOPPER_GEMM_BM * (p->n / HOPPER_GEMM_BN));
  nvhcq_launch_config cfg = {.struct_size = sizeof cfg,
                             .grid = {blocks, 1, 1},
                             .block = {HOPPER_GEMM_THREADS, 1, 1},
                             .dynamic_shared = HOPPER_GEMM_SHARED_BYTES,
                             .arg_pointers = by_pointers ? ptrs : NULL};
  nvhcq_queue *q = NULL;
  nvhcq_signal *start = NULL, *end = NULL;
  nvhcq_status s = nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q);
  if (!s) s = nvhcq_signal_create(dev, 0, &start);
  if (!s) s = nvhcq_signal_create(dev, 0, &end);
  if (!s) s = nvhcq_queue_signal(q, start, 1);
  if (!s) s = nvhcq_queue_launch_ex(q, gemm, &cfg, by_pointers ? NULL : block, size);
  if (!s) s = nvhcq_queue_signal(q, end, 1);
  if (!s) s = nvhcq_queue_submit(q);
  if (!s) s = nvhcq_signal_cpu_wait(end, 1, 60000);
  if (!s) s = nvhcq_buffer_read(p->c, p->dc, 0, (size_t)p->m * p->n * 4);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%dx%dx%d GEMM: %s", p->m, p->n, p->k, nvhcq_last_error());
  if (!s && gpu_ns) *gpu_ns = nvhcq_signal_timestamp_ns(end) - nvhcq_signal_timestamp_ns(start);
  nvhcq_signal_destroy(start), nvhcq_signal_destroy(end), nvhcq_queue_destroy(q);
  return s != NVHCQ_SUCCESS;
}

/* One problem launched one way, checked at every `step`-th row and column. */
static void gemm_case(int m, int n, int k, int by_pointers, int step) {
  problem p;
  uint64_t ns = 0;
  double worst;
  if (!setup_problem(&p, m, n, k) && !run_gemm(&p, by_pointers, &ns)) {
    long bad = check_result(&p, step, &worst);
    TEST_CHECK_MSG(bad == 0, "%ld wrong elements of C", bad);
    printf("  %dx%dx%d (%s): %s checked, worst error %.2e of the sum of |products|; %.1f us, "
           "%.1f TFLOP/s\n",
           m, n, k, by_pointers ? "arg_pointers" : "packed at the cubin's offsets",
           step == 1 ? "every element" : "a sample", worst, ns / 1e3,
           ns ? 2.0 * m * n * (double)k / ns / 1e3 : 0.0);
  }
  free_problem(&p);
}

/* ---- the cases ---- */

/* What the cubin says about the kernel: a compiled cluster of 2, and its parameter layout. The
 * parameter area starts at constant bank 0's 0x210 on sm_90, so the compiler puts the first
 * 64-byte-aligned tensor map at 0x240, 48 bytes in (the cubin's EIATTR_KPARAM_INFO offsets, read
 * from the nvcc 13.0 build): a C struct of the parameters would put it at 0. */
static void t_kernel_attributes(void) {
  NEED_GEMM();
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_kernel_query_info(gemm, &info) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(info.cluster.x == 2 && info.cluster.y == 1 && info.cluster.z == 1,
                 "cluster %ux%ux%u", info.cluster.x, info.cluster.y, info.cluster.z);
  TEST_CHECK_MSG(info.param_count == 6, "%u parameters", info.param_count);
  TEST_CHECK_MSG(info.param_size == 324, "%u bytes of parameters", info.param_size);
  TEST_CHECK_MSG(info.max_dynamic_shared >= HOPPER_GEMM_SHARED_BYTES, "%u bytes of dynamic shared",
                 info.max_dynamic_shared);
  static const uint32_t offset[6] = {48, 176, 304, 312, 316, 320}, size[6] = {128, 128, 8, 4, 4, 4};
  for (uint32_t i = 0; i < 6; i++) {
    nvhcq_kernel_param prm = {.struct_size = sizeof prm};
    TEST_CHECK(nvhcq_kernel_query_param(gemm, i, &prm) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(prm.offset == offset[i] && prm.size == size[i], "param %u at %u, %u bytes", i,
                   prm.offset, prm.size);
  }
  printf("  %u registers, cluster %ux%ux%u, %u-byte parameter block\n", info.registers,
         info.cluster.x, info.cluster.y, info.cluster.z, info.param_size);
}

/* 512^3, every element: 8 blocks (4 clusters), 8 K steps, so every stage is reused. */
static void t_gemm_512(void) {
  NEED_GEMM();
  gemm_case(512, 512, 512, 1, 1);
}

/* Non-square, with the parameter block packed by the cubin's offsets: 4 cluster rows (a partial
 * raster group), 3 columns of blocks, 5 K steps (fewer than twice the stages). */
static void t_gemm_1024x768x320(void) {
  NEED_GEMM();
  gemm_case(1024, 768, 320, 0, 1);
}

/* One K step: the pipeline fills a single stage and never waits for a free one. */
static void t_gemm_one_step(void) {
  NEED_GEMM();
  gemm_case(256, 256, 64, 1, 1);
}

/* 4096^3 at full size, checked on a sample that meets every block and warp. The mock's
 * interpreter would take hours at that size: there it runs 2560x256x64, every element checked,
 * which still spans two raster groups (10 cluster rows, GROUP_M 8) as 4096 (16 rows) does. */
static void t_gemm_4096(void) {
  NEED_GEMM();
  if (on_mock()) {
    printf("  on the mock GPU: 2560x256x64 instead of 4096^3 (two raster groups, as 4096 has)\n");
    gemm_case(2560, 256, 64, 1, 1);
    return;
  }
  gemm_case(4096, 4096, 4096, 1, 61);
}

/* ---- wgmma's shared-memory layouts (tests/device/wgmma_layouts.cu) ---- */

static nvhcq_module *layout_mod;

/* The kernel's parameters, as wgmma_layouts.cu declares them. */
#define LAYOUT_MAX_BOXES 8
typedef struct layout_operand {
  uint64_t desc;
  uint32_t offset, step;
  int32_t boxes;
  int32_t x[LAYOUT_MAX_BOXES], y[LAYOUT_MAX_BOXES];
  uint32_t dst[LAYOUT_MAX_BOXES];
} layout_operand;
typedef struct layout_args {
  layout_operand a, b;
  uint32_t bytes;
  int32_t k_steps;
} layout_args;

/* One operand, 64 (M or N) by k fp16 in global memory: K-major [64][k], or MN-major [k][64]. */
typedef struct layout_matrix {
  uint16_t *host;
  nvhcq_buffer *buf;
  nvhcq_tensor_map map;
} layout_matrix;

static double layout_value(const layout_matrix *x, int mn_major, int k, int mn, int kk) {
  return half_value(x->host[mn_major ? (size_t)kk * 64 + mn : (size_t)mn * k + kk]);
}

/* The canonical layout of a 64-row operand for a swizzle (0 none, else its bytes), its TMA boxes
 * and descriptor (without the start address, which the kernel adds):
 *   K-major, S-byte swizzle: one box of 64 rows of S bytes; SBO 8 rows (8 S), LBO unused (16);
 *     a k16 step moves the start 32 bytes along the row.
 *   K-major, none: boxes of 64 rows x 16 bytes (8 core matrices down M, 1 KiB) per 8 K; SBO 128,
 *     LBO 1024; a step moves 2 KiB.
 *   MN-major, S-byte: boxes of S/2 (M or N) x k rows of S bytes, each an atom column; LBO is the
 *     next box (k S bytes), SBO the next 8 K rows (8 S); a step moves 16 rows.
 *   MN-major, none: boxes of 8 (M or N) x k rows of 16 bytes; LBO 128 (the next 8 K), SBO the
 *     next box (16 k); a step moves 256 bytes. */
static void layout_plan(layout_operand *o, int mn_major, uint32_t swizzle_bytes, int k,
                        uint32_t box[2]) {
  static const uint64_t code[5] = {0, 3, 2, 0, 1}; /* 32 -> 3, 64 -> 2, 128 -> 1 */
  uint64_t lbo, sbo, s = swizzle_bytes;
  int boxes, step_x = 0;
  uint32_t box_bytes;
  if (!mn_major && s) {
    box[0] = (uint32_t)s / 2, box[1] = 64, boxes = 1, lbo = 16, sbo = 8 * s, o->step = 32;
  } else if (!mn_major) {
    box[0] = 8, box[1] = 64, boxes = k / 8, lbo = 1024, sbo = 128, o->step = 2048, step_x = 8;
  } else if (s) {
    box[0] = (uint32_t)s / 2, box[1] = (uint32_t)k, boxes = (int)(128 / s), step_x = (int)s / 2;
    lbo = (uint64_t)k * s, sbo = 8 * s, o->step = 16 * (uint32_t)s;
  } else {
    box[0] = 8, box[1] = (uint32_t)k, boxes = 8, step_x = 8, lbo = 128, sbo = 16 * (uint64_t)k;
    o->step = 256;
  }
  box_bytes = box[0] * box[1] * 2;
  o->boxes = boxes;
  for (int i = 0; i < boxes; i++) o->x[i] = i * step_x, o->y[i] = 0, o->dst[i] = i * box_bytes;
  o->desc = (lbo >> 4) << 16 | (sbo >> 4) << 32 | code[s / 32] << 62;
}

/* k_valid: the K the tensor map says the tensor has (k, or less: TMA fills the rest with zeros). */
static int layout_matrix_make(layout_matrix *x, int mn_major, uint32_t swizzle, int k, int k_valid,
                              uint64_t seed, layout_operand *o) {
  uint32_t box[2];
  layout_plan(o, mn_major, swizzle ? 16u << swizzle : 0, k, box);
  x->host = random_halves((size_t)64 * k, seed);
  if (!x->host || nvhcq_buffer_create(dev, (size_t)64 * k * 2, NVHCQ_MEMORY_DEVICE, &x->buf) ||
      nvhcq_buffer_write(x->buf, 0, x->host, (size_t)64 * k * 2))
    return 1;
  nvhcq_tensor_tiled t = {
      .struct_size = sizeof t,
      .dtype = NVHCQ_TENSOR_FLOAT16,
      .rank = 2,
      .address = nvhcq_buffer_gpu_address(x->buf),
      .dims = {mn_major ? 64u : (uint64_t)k_valid, mn_major ? (uint64_t)k_valid : 64u},
      .strides = {mn_major ? 128u : (uint64_t)k * 2},
      .box = {box[0], box[1]},
      .element_strides = {1, 1},
      .swizzle = swizzle};
  return nvhcq_tensor_map_encode_tiled(&x->map, &t) != NVHCQ_SUCCESS;
}

/* D = A B^T through one layout, checked against the CPU (K beyond k_valid reads as zero); the
 * count of wrong elements. */
static int layout_run(nvhcq_kernel *kern, int mn_major, uint32_t swizzle, int k, int k_valid) {
  layout_matrix a = {0}, b = {0};
  layout_args g = {.k_steps = k / 16, .bytes = 2 * 64 * (uint32_t)k * 2};
  g.b.offset = 16384;
  nvhcq_buffer *out = NULL;
  float d[64 * 64];
  int bad = -1;
  if (layout_matrix_make(&a, mn_major, swizzle, k, k_valid, 11 + (uint64_t)k, &g.a) ||
      layout_matrix_make(&b, mn_major, swizzle, k, k_valid, 12 + (uint64_t)k, &g.b) ||
      nvhcq_buffer_create(dev, sizeof d, NVHCQ_MEMORY_DEVICE, &out)) {
    TEST_CHECK_MSG(0, "setup: %s", nvhcq_last_error());
    goto done;
  }
  uint64_t out_address = nvhcq_buffer_gpu_address(out);
  const void *ptrs[4] = {&a.map, &b.map, &g, &out_address};
  nvhcq_launch_config cfg = {
      .struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {128, 1, 1}, .arg_pointers = ptrs};
  nvhcq_queue *q = NULL;
  nvhcq_signal *end = NULL;
  nvhcq_status st = nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q);
  if (!st) st = nvhcq_signal_create(dev, 0, &end);
  if (!st) st = nvhcq_queue_launch_ex(q, kern, &cfg, NULL, 0);
  if (!st) st = nvhcq_queue_signal(q, end, 1);
  if (!st) st = nvhcq_queue_submit(q);
  if (!st) st = nvhcq_signal_cpu_wait(end, 1, 60000);
  if (!st) st = nvhcq_buffer_read(d, out, 0, sizeof d);
  nvhcq_signal_destroy(end), nvhcq_queue_destroy(q);
  TEST_CHECK_MSG(st == NVHCQ_SUCCESS, "launch: %s", nvhcq_last_error());
  if (st) goto done;
  bad = 0;
  for (int m = 0; m < 64; m++)
    for (int n = 0; n < 64; n++) {
      double want = 0, mag = 0;
      for (int kk = 0; kk < k_valid; kk++) {
        double p = layout_value(&a, mn_major, k, m, kk) * layout_value(&b, mn_major, k, n, kk);
        want += p, mag += fabs(p);
      }
      if (!(fabs(d[m * 64 + n] - want) <= 1e-4 * (mag + 1e-30)) && !bad++)
        fprintf(stderr, "  D[%d][%d] = %g, want %g\n", m, n, d[m * 64 + n], want);
    }
done:
  free(a.host), free(b.host);
  nvhcq_buffer_destroy(a.buf), nvhcq_buffer_destroy(b.buf), nvhcq_buffer_destroy(out);
  return bad;
}

/* Every swizzle mode (none, 32, 64, 128 bytes) of one major-ness. */
static void layout_case(const char *kernel_name, int mn_major) {
  SKIP_WITHOUT_GPU();
  const char *why = layout_mod ? NULL : load_cubin("wgmma_layouts_sm_90a.cubin", &layout_mod);
  if (why) TEST_SKIP(why);
  nvhcq_kernel *kern;
  if (!layout_mod || nvhcq_module_get_kernel(layout_mod, kernel_name, &kern)) {
    TEST_CHECK_MSG(layout_mod == NULL, "%s: %s", kernel_name, nvhcq_last_error());
    return;
  }
  static const char *const names[4] = {"none", "32B", "64B", "128B"};
  for (uint32_t sw = NVHCQ_TENSOR_SWIZZLE_NONE; sw <= NVHCQ_TENSOR_SWIZZLE_128B; sw++) {
    /* K-major rows hold one swizzle span of K (none: 32); MN-major tiles have K 32. */
    int k = mn_major || !sw ? 32 : (int)(8u << sw);
    int bad = layout_run(kern, mn_major, sw, k, k);
    TEST_CHECK_MSG(bad == 0, "%s-major, swizzle %s: %d wrong elements of D", mn_major ? "MN" : "K",
                   names[sw], bad);
    printf("  %s-major, swizzle %s, K %d: %s\n", mn_major ? "MN" : "K", names[sw], k,
           bad ? "wrong" : "every element right");
  }
}

/* Every K-major layout, then the 128-byte one from a tensor 40 wide: TMA fills each row's last 24
 * elements with zeros (its out-of-bounds fill). */
static void t_wgmma_layouts_k_major(void) {
  layout_case("wgmma_layout_k", 0);
  nvhcq_kernel *kern;
  if (!layout_mod || nvhcq_module_get_kernel(layout_mod, "wgmma_layout_k", &kern)) return;
  int bad = layout_run(kern, 0, NVHCQ_TENSOR_SWIZZLE_128B, 64, 40);
  TEST_CHECK_MSG(bad == 0, "K-major, swizzle 128B, 40 of K 64 in bounds: %d wrong elements", bad);
  printf("  K-major, swizzle 128B, K 64 of which 40 in the tensor: %s\n",
         bad ? "wrong" : "every element right (zeros filled)");
}

static void t_wgmma_layouts_mn_major(void) {
  layout_case("wgmma_layout_mn", 1);
}

static void t_close(void) {
  SKIP_WITHOUT_GPU();
  if (layout_mod) TEST_CHECK(nvhcq_module_unload(layout_mod) == NVHCQ_SUCCESS);
  layout_mod = NULL;
  if (gemm_mod) TEST_CHECK(nvhcq_module_unload(gemm_mod) == NVHCQ_SUCCESS);
  gemm_mod = NULL, gemm = NULL;
  teardown();
}

TEST_MAIN(TEST(t_kernel_attributes), TEST(t_gemm_512), TEST(t_gemm_1024x768x320),
          TEST(t_gemm_one_step), TEST(t_gemm_4096), TEST(t_wgmma_layouts_k_major),
          TEST(t_wgmma_layouts_mn_major), TEST(t_close))
