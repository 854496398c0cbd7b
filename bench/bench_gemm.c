/* Hopper GEMM benchmark: tests/device/hopper_gemm.cu (TMA, wgmma, a cluster of 2 with multicast)
 * at 4096^3 and 8192^3, the same cubin GPU-timed through nvhcq queues and through libcuda in one
 * run; outputs checked against a CPU sample and against each other, and nvhcq's tensor maps
 * against libcuda's cuTensorMapEncodeTiled byte for byte.
 * usage: nvhcq_bench_gemm build/tests/cubins/hopper_gemm_sm_90a.cubin
 * (NVHCQ_BENCH_GEMM_REPS sets the repeats each figure is the median of) */
#define _GNU_SOURCE /* clock_gettime in bench_util.h */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "hopper_gemm.h"
#include "hopper_gemm_inputs.h"
#include "nvhcq.h"

#define LAUNCHES     20 /* per timed submission; the figures are per launch */
#define WARMUP       2  /* untimed repeats first: clocks up, caches and TLBs filled */
#define MAX_REPS     100
#define DEFAULT_REPS 9
#define SAMPLE       64 /* rows and columns of C checked against the CPU */

static const int sizes[] = {4096, 8192};
#define SIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int reps = DEFAULT_REPS;

/* What one size gave: per-launch GPU microseconds, C read back, and the maps each side encoded
 * for nvhcq's buffers (libcuda's encoder is host-only: it takes any aligned address). */
typedef struct outcome {
  double nv_us, cu_us;
  float *nv_c, *cu_c;
  nvhcq_tensor_map nv_map[2];
  _Alignas(64) uint8_t cu_map[2][128];
  uint64_t nv_address[2];
} outcome;

/* ---- inputs: fixed-seed j/1024 values, exact in fp16 ---- */

static void *must_alloc(size_t bytes) {
  void *p = malloc(bytes);
  if (!p) fprintf(stderr, "out of host memory\n"), exit(1);
  return p;
}

/* random_halves, or the end of the program. */
static uint16_t *must_halves(size_t n, uint64_t seed) {
  uint16_t *h = random_halves(n, seed);
  if (!h) fprintf(stderr, "out of host memory\n"), exit(1);
  return h;
}

/* The kernel's parameters, in its signature's order. */
typedef struct gemm_args {
  _Alignas(64) uint8_t a[128], b[128];
  uint64_t c;
  int32_t m, n, k;
  const void *ptrs[6];
} gemm_args;

static void args_init(gemm_args *g, uint64_t c, int size) {
  g->c = c, g->m = g->n = g->k = size;
  const void *p[6] = {g->a, g->b, &g->c, &g->m, &g->n, &g->k};
  memcpy(g->ptrs, p, sizeof p);
}

static nvhcq_dim3 grid_of(int size) {
  return (nvhcq_dim3){(uint32_t)(size / HOPPER_GEMM_BM * (size / HOPPER_GEMM_BN)), 1, 1};
}

/* ---- nvhcq ---- */

static nvhcq_device *nv_dev;
static nvhcq_module *nv_mod;
static nvhcq_kernel *nv_gemm;
static nvhcq_signal *nv_sig[2];
static uint64_t nv_value;

static void nv_encode(nvhcq_tensor_map *map, uint64_t address, int size) {
  nvhcq_tensor_tiled t = {.struct_size = sizeof t,
                          .dtype = NVHCQ_TENSOR_FLOAT16,
                          .rank = 2,
                          .address = address,
                          .dims = {(uint64_t)size, (uint64_t)size},
                          .strides = {(uint64_t)size * 2},
                          .box = {HOPPER_GEMM_BOX_K, HOPPER_GEMM_BOX_ROWS},
                          .element_strides = {1, 1},
                          .swizzle = NVHCQ_TENSOR_SWIZZLE_128B,
                          .l2_promotion = NVHCQ_TENSOR_L2_256B};
  CHECK_NV(nvhcq_tensor_map_encode_tiled(map, &t));
}

/* Per-launch GPU time of one submission of LAUNCHES launches, from the signals' timestamps. */
static double nv_time(nvhcq_queue *q, const nvhcq_launch_config *cfg) {
  uint64_t v = ++nv_value;
  CHECK_NV(nvhcq_queue_reset(q));
  CHECK_NV(nvhcq_queue_signal(q, nv_sig[0], v));
  for (int i = 0; i < LAUNCHES; i++) CHECK_NV(nvhcq_queue_launch_ex(q, nv_gemm, cfg, NULL, 0));
  CHECK_NV(nvhcq_queue_signal(q, nv_sig[1], v));
  CHECK_NV(nvhcq_queue_submit(q));
  CHECK_NV(nvhcq_signal_cpu_wait(nv_sig[1], v, 0));
  if (nvhcq_signal_value(nv_sig[0]) != v)
    fprintf(stderr, "nvhcq: the start signal holds an older value\n"), exit(1);
  uint64_t ns = nvhcq_signal_timestamp_ns(nv_sig[1]) - nvhcq_signal_timestamp_ns(nv_sig[0]);
  return ns * 1e-3 / LAUNCHES;
}

static void nv_run(int size, const uint16_t *a, const uint16_t *b, outcome *o) {
  size_t in = (size_t)size * size * 2, out = (size_t)size * size * 4;
  nvhcq_buffer *da, *db, *dc;
  CHECK_NV(nvhcq_buffer_create(nv_dev, in, NVHCQ_MEMORY_DEVICE, &da));
  CHECK_NV(nvhcq_buffer_create(nv_dev, in, NVHCQ_MEMORY_DEVICE, &db));
  CHECK_NV(nvhcq_buffer_create(nv_dev, out, NVHCQ_MEMORY_DEVICE, &dc));
  CHECK_NV(nvhcq_buffer_write(da, 0, a, in));
  CHECK_NV(nvhcq_buffer_write(db, 0, b, in));
  gemm_args g;
  args_init(&g, nvhcq_buffer_gpu_address(dc), size);
  o->nv_address[0] = nvhcq_buffer_gpu_address(da), o->nv_address[1] = nvhcq_buffer_gpu_address(db);
  for (int i = 0; i < 2; i++) nv_encode(&o->nv_map[i], o->nv_address[i], size);
  memcpy(g.a, o->nv_map[0].bytes, 128), memcpy(g.b, o->nv_map[1].bytes, 128);
  nvhcq_launch_config cfg = {.struct_size = sizeof cfg,
                             .grid = grid_of(size),
                             .block = {HOPPER_GEMM_THREADS, 1, 1},
                             .dynamic_shared = HOPPER_GEMM_SHARED_BYTES,
                             .arg_pointers = g.ptrs}; /* the cluster: the cubin's {2,1,1} */
  nvhcq_queue *q;
  double t[MAX_REPS];
  CHECK_NV(nvhcq_queue_create(nv_dev, NVHCQ_QUEUE_COMPUTE, &q));
  for (int r = -WARMUP; r < reps; r++) {
    double us = nv_time(q, &cfg);
    if (r >= 0) t[r] = us;
  }
  o->nv_us = median(t, reps);
  nvhcq_queue_destroy(q);
  o->nv_c = must_alloc(out);
  CHECK_NV(nvhcq_buffer_read(o->nv_c, dc, 0, out));
  nvhcq_buffer_destroy(da), nvhcq_buffer_destroy(db), nvhcq_buffer_destroy(dc);
}

static int nv_open(const void *image, size_t size) {
  if (nvhcq_device_open(0, &nv_dev) != NVHCQ_SUCCESS) {
    fprintf(stderr, "nvhcq_bench_gemm: nvhcq cannot open GPU 0: %s\n", nvhcq_last_error());
    return 0;
  }
  bench_settle(nv_dev);
  nvhcq_device_info info = {.struct_size = sizeof info};
  CHECK_NV(nvhcq_device_query_info(nv_dev, &info));
  if (strcmp(info.arch, "sm_90")) {
    fprintf(stderr, "nvhcq_bench_gemm: GPU 0 is %s (%s); the kernel is sm_90a code\n", info.name,
            info.arch);
    return 0;
  }
  CHECK_NV(nvhcq_module_load(nv_dev, image, size, &nv_mod));
  CHECK_NV(nvhcq_module_get_kernel(nv_mod, "hopper_gemm", &nv_gemm));
  CHECK_NV(nvhcq_signal_create(nv_dev, 0, &nv_sig[0]));
  CHECK_NV(nvhcq_signal_create(nv_dev, 0, &nv_sig[1]));
  return 1;
}

static void nv_close(void) {
  nvhcq_signal_destroy(nv_sig[0]), nvhcq_signal_destroy(nv_sig[1]);
  nvhcq_module_unload(nv_mod);
  nvhcq_device_close(nv_dev);
}

/* ---- libcuda ---- */

/* Beyond bench_util.h's set: the tensor-map encoder. */
static cu_fn cu_encode_tiled;
static void *cu_mod, *cu_gemm;

static int cuda_load_gemm(void) {
  if (!cuda_load()) return 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  cu_encode_tiled = lib ? (cu_fn)dlsym(lib, "cuTensorMapEncodeTiled") : NULL;
  if (!cu_encode_tiled) fprintf(stderr, "libcuda has no cuTensorMapEncodeTiled: left out\n");
  return cu_encode_tiled != NULL;
}

/* cuTensorMapEncodeTiled with the parameters nv_encode gives nvhcq (CUDA's enum values). */
static void cu_encode(void *map, uint64_t address, int size) {
  uint64_t dims[2] = {(uint64_t)size, (uint64_t)size}, strides[1] = {(uint64_t)size * 2};
  uint32_t box[2] = {HOPPER_GEMM_BOX_K, HOPPER_GEMM_BOX_ROWS}, es[2] = {1, 1};
  CHECK_CU(cu_encode_tiled(map, 6 /* FLOAT16 */, 2u, (void *)(uintptr_t)address, dims, strides, box,
                           es, 0 /* INTERLEAVE_NONE */, 3 /* SWIZZLE_128B */, 3 /* L2_256B */,
                           0 /* OOB_FILL_NONE */));
}

/* LAUNCHES launches captured into a graph, replayed between two events, as bench_real does. */
static double cu_time(gemm_args *g, int size) {
  /* The cluster: the cubin's {2,1,1}, as for nvhcq. */
  return cuda_graph_us_per_launch(cu_gemm, grid_of(size), (nvhcq_dim3){HOPPER_GEMM_THREADS, 1, 1},
                                  HOPPER_GEMM_SHARED_BYTES, (void **)g->ptrs, LAUNCHES, WARMUP,
                                  reps);
}

static void cu_run(int size, const uint16_t *a, const uint16_t *b, outcome *o) {
  size_t in = (size_t)size * size * 2, out = (size_t)size * size * 4;
  uint64_t da, db, dc;
  for (int i = 0; i < 2; i++) cu_encode(o->cu_map[i], o->nv_address[i], size);
  CHECK_CU(cu.mem_alloc(&da, in));
  CHECK_CU(cu.mem_alloc(&db, in));
  CHECK_CU(cu.mem_alloc(&dc, out));
  CHECK_CU(cu.htod(da, a, in));
  CHECK_CU(cu.htod(db, b, in));
  gemm_args g;
  args_init(&g, dc, size);
  cu_encode(g.a, da, size), cu_encode(g.b, db, size);
  o->cu_us = cu_time(&g, size);
  o->cu_c = must_alloc(out);
  CHECK_CU(cu.dtoh(o->cu_c, dc, out));
  cu.mem_free(da), cu.mem_free(db), cu.mem_free(dc);
}

static void cu_open(const void *image) {
  cuda_context();
  CHECK_CU(cu.module_load(&cu_mod, image));
  CHECK_CU(cu.get_function(&cu_gemm, cu_mod, "hopper_gemm"));
  CHECK_CU(cu.func_attr(cu_gemm, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, HOPPER_GEMM_SHARED_BYTES));
}

/* ---- checks and the report ---- */

/* Sampled row or column s: one in each band, at a varying place in it. */
static int sample_index(int size, int s) {
  int band = size / SAMPLE;
  return s * band + (s * 37 + 5) % band;
}

/* Largest error of SAMPLE x SAMPLE outputs against double sums, relative to each output's sum of
 * |products| (what fp32 accumulation error scales with). */
static double cpu_error(int size, const uint16_t *a, const uint16_t *b, const float *c) {
  double worst = 0;
  for (int r = 0; r < SAMPLE; r++)
    for (int s = 0; s < SAMPLE; s++) {
      int i = sample_index(size, r), j = sample_index(size, s);
      double want = 0, mag = 0;
      for (int q = 0; q < size; q++) {
        double x = half_value(a[(size_t)i * size + q]) * half_value(b[(size_t)j * size + q]);
        want += x, mag += fabs(x);
      }
      double err = fabs(c[(size_t)i * size + j] - want) / mag;
      worst = isnan(err) || err > worst ? (isnan(err) ? INFINITY : err) : worst;
    }
  return worst;
}

static int report(int size, const uint16_t *a, const uint16_t *b, const outcome *o, int have_cu) {
  int ok = 1;
  double flop = 2.0 * size * (double)size * size;
  const float *ref = have_cu ? o->cu_c : o->nv_c;
  if (have_cu) {
    for (int i = 0; i < 2; i++) {
      int same = !memcmp(o->nv_map[i].bytes, o->cu_map[i], 128);
      printf("  tensor map %c: nvhcq vs cuTensorMapEncodeTiled: %s\n", "AB"[i],
             same ? "byte-identical" : "DIFFER");
      ok &= same;
    }
    int same = !memcmp(o->nv_c, o->cu_c, (size_t)size * size * 4);
    printf("  C: nvhcq vs libcuda: %s\n", same ? "bit-identical" : "DIFFER");
    ok &= same;
  }
  double err = cpu_error(size, a, b, ref);
  printf("  CPU reference: %s: worst error %.2e of the sum of |products| on %dx%d samples "
         "(bound 1e-4)\n",
         err <= 1e-4 ? "ok" : "FAILED", err, SAMPLE, SAMPLE);
  ok &= err <= 1e-4;
  if (have_cu)
    printf("  %d^3: libcuda %.1f us %.1f TFLOP/s, nvhcq %.1f us %.1f TFLOP/s, nvhcq/libcuda %.4f\n",
           size, o->cu_us, flop / o->cu_us * 1e-6, o->nv_us, flop / o->nv_us * 1e-6,
           o->nv_us / o->cu_us);
  else
    printf("  %d^3: nvhcq %.1f us %.1f TFLOP/s (no libcuda)\n", size, o->nv_us,
           flop / o->nv_us * 1e-6);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return fprintf(stderr,
                   "usage: %s HOPPER_GEMM.cubin\n  (build/tests/cubins/hopper_gemm_sm_90a.cubin, "
                   "built when nvcc builds sm_90a; NVHCQ_BENCH_GEMM_REPS=%d by default)\n",
                   argv[0], DEFAULT_REPS),
           2;
  const char *env = getenv("NVHCQ_BENCH_GEMM_REPS");
  if (env) reps = atoi(env);
  if (reps < 1 || reps > MAX_REPS)
    return fprintf(stderr, "NVHCQ_BENCH_GEMM_REPS must be 1..%d\n", MAX_REPS), 2;
  size_t image_size;
  void *image = read_file(argv[1], &image_size);
  if (!image) return fprintf(stderr, "nvhcq_bench_gemm: cannot read %s\n", argv[1]), 2;
  if (!nv_open(image, image_size)) return 1;
  uint16_t *a[SIZES], *b[SIZES];
  outcome o[SIZES] = {0};
  for (int i = 0; i < SIZES; i++) {
    a[i] = must_halves((size_t)sizes[i] * sizes[i], 1 + i);
    b[i] = must_halves((size_t)sizes[i] * sizes[i], 100 + i);
    nv_run(sizes[i], a[i], b[i], &o[i]);
  }
  nv_close();
  int have_cu = cuda_load_gemm();
  if (have_cu) {
    cu_open(image);
    for (int i = 0; i < SIZES; i++) cu_run(sizes[i], a[i], b[i], &o[i]);
  }
  printf("hopper_gemm (fp16 in, fp32 out; 128x256 tiles, clusters of 2): GPU time per launch, %d "
         "launches per submission, median of %d\n",
         LAUNCHES, reps);
  int ok = 1;
  for (int i = 0; i < SIZES; i++) ok &= report(sizes[i], a[i], b[i], &o[i], have_cu);
  printf("%s\n", ok ? "all outputs correct" : "SOME OUTPUTS ARE WRONG");
  return ok ? 0 : 1;
}
