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

/* Loads the GEMM's cubin; returns a skip reason, or NULL when it is loaded (or a check failed). */
static const char *load_gemm(void) {
  if (open_device()) return NULL;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  if (strcmp(info.arch, "sm_90")) return "needs a Hopper GPU (sm_90): wgmma is sm_90a code";
  if (gemm) return NULL;
#ifdef NVHCQ_TEST_HOPPER_PTX
  /* The mock loads the cubin (its attributes are the cubin's) and runs the kernel from its PTX,
   * built beside it; ahead of what the mock was given, which lacks it. */
  if (on_mock()) {
    const char *had = getenv("NVHCQ_MOCK_PTX");
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
  char path[512];
  snprintf(path, sizeof path, "%s/" CUBIN, dir ? dir : ".");
  if (access(path, R_OK)) return "no " CUBIN " (built when nvcc builds sm_90a)";
  if (nvhcq_module_load_file(dev, path, &gemm_mod) ||
      nvhcq_module_get_kernel(gemm_mod, "hopper_gemm", &gemm))
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
  return NULL;
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

static void t_close(void) {
  SKIP_WITHOUT_GPU();
  if (gemm_mod) TEST_CHECK(nvhcq_module_unload(gemm_mod) == NVHCQ_SUCCESS);
  gemm_mod = NULL, gemm = NULL;
  teardown();
}

TEST_MAIN(TEST(t_kernel_attributes), TEST(t_gemm_512), TEST(t_gemm_1024x768x320),
          TEST(t_gemm_one_step), TEST(t_gemm_4096), TEST(t_close))
