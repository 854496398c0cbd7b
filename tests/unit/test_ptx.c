/* The PTX interpreter (src/mock/ptx) running the device tests' and benchmarks' kernels on the CPU.
 */
#include "mock/ptx/ptx.h"
#include "test.h"

#include <math.h>
#include <stdint.h>

#ifndef NVHCQ_PTX_DIR
#define NVHCQ_PTX_DIR "tests/unit/ptx"
#endif

static nvhcq_ptx_module *load(const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", NVHCQ_PTX_DIR, file);
  size_t n = 0;
  char *text = test_read_file(path, &n);
  nvhcq_ptx_module *m = NULL;
  char err[256] = "";
  if (text) {
    nvhcq_ptx_status st = nvhcq_ptx_module_load(text, n, &m, err, sizeof err);
    TEST_CHECK_MSG(st == NVHCQ_PTX_OK, "%s: %s", path, err);
  }
  free(text);
  return m;
}

static nvhcq_ptx_module *device_module(void) {
  return load("device_kernels.ptx");
}

typedef struct launch {
  uint32_t grid[3], block[3];
  size_t shared;
  const nvhcq_ptx_memory *memory;
  nvhcq_ptx_fault fault;
  uint64_t max_instructions;
} launch;

#define DIM(x, y, z)                                                                               \
  { (x), (y), (z) }

/* Lays the arguments out at the kernel's parameter offsets and launches it, in clusters of
 * `cluster` blocks when given. */
static nvhcq_ptx_status run_in(const nvhcq_ptx_module *m, const char *name, launch *l,
                               const uint32_t *cluster, int nargs, const void *const *args) {
  const nvhcq_ptx_kernel *k;
  if (nvhcq_ptx_kernel_find(m, name, &k) != NVHCQ_PTX_OK) return NVHCQ_PTX_NOT_FOUND;
  unsigned char params[256] = {0};
  TEST_CHECK((size_t)nargs == nvhcq_ptx_kernel_param_count(k));
  for (int i = 0; i < nargs; i++) {
    nvhcq_ptx_param p;
    if (nvhcq_ptx_kernel_param(k, (size_t)i, &p) == NVHCQ_PTX_OK && p.offset + p.size <= 256)
      memcpy(params + p.offset, args[i], p.size);
  }
  nvhcq_ptx_launch_config c = {.dynamic_shared_bytes = l->shared,
                               .params = params,
                               .params_size = nvhcq_ptx_kernel_params_size(k),
                               .memory = l->memory,
                               .max_instructions = l->max_instructions};
  memcpy(c.grid, l->grid, sizeof c.grid);
  memcpy(c.block, l->block, sizeof c.block);
  if (cluster) memcpy(c.cluster, cluster, sizeof c.cluster);
  nvhcq_ptx_status st = nvhcq_ptx_launch(k, &c, &l->fault);
  if (st != NVHCQ_PTX_OK)
    fprintf(stderr, "  %s: line %d: %s\n", name, l->fault.line, l->fault.what);
  return st;
}

static nvhcq_ptx_status run(const nvhcq_ptx_module *m, const char *name, launch *l, int nargs,
                            const void *const *args) {
  return run_in(m, name, l, NULL, nargs, args);
}

#define ARGS(...)                                                                                  \
  (sizeof((const void *[]){__VA_ARGS__}) / sizeof(void *)), (const void *[]) {                     \
    __VA_ARGS__                                                                                    \
  }

static void test_empty(void) {
  nvhcq_ptx_module *m = device_module();
  launch l = {DIM(2, 1, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "empty", &l, 0, NULL) == NVHCQ_PTX_OK);
  const nvhcq_ptx_kernel *k;
  TEST_CHECK(nvhcq_ptx_kernel_find(m, "no_such", &k) == NVHCQ_PTX_NOT_FOUND);
  nvhcq_ptx_module_free(m);
}

static void test_vector_add(void) {
  nvhcq_ptx_module *m = device_module();
  enum { N = 1000 };
  static float a[N], b[N], c[N + 24];
  for (int i = 0; i < N; i++) a[i] = (float)i * 0.25f, b[i] = 1.0f / (float)(i + 1);
  float *pa = a, *pb = b, *pc = c;
  int n = N;
  c[N] = -1;
  launch l = {DIM(4, 1, 1), DIM(256, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "vector_add", &l, ARGS(&pa, &pb, &pc, &n)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += c[i] != a[i] + b[i];
  TEST_CHECK(bad == 0 && c[N] == -1);
  nvhcq_ptx_module_free(m);
}

static void test_atomic_increment(void) {
  nvhcq_ptx_module *m = device_module();
  unsigned long long counter = 5, *p = &counter;
  launch l = {DIM(3, 2, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "atomic_increment", &l, ARGS(&p)) == NVHCQ_PTX_OK);
  TEST_CHECK(counter == 11);
  nvhcq_ptx_module_free(m);
}

static void test_reduce_dynamic(void) {
  nvhcq_ptx_module *m = device_module();
  enum { BLOCKS = 3, INTS = 300 };
  static int in[BLOCKS * INTS];
  long long out[BLOCKS] = {0}, want[BLOCKS] = {0};
  for (int i = 0; i < BLOCKS * INTS; i++) in[i] = (i * 7919) % 1000 - 300;
  for (int i = 0; i < BLOCKS * INTS; i++) want[i / INTS] += in[i];
  int *pi = in, ints = INTS;
  long long *po = out;
  launch l = {DIM(BLOCKS, 1, 1), DIM(64, 1, 1), INTS * sizeof(int), NULL, {0}, 0};
  TEST_CHECK(m && run(m, "reduce_dynamic", &l, ARGS(&pi, &po, &ints)) == NVHCQ_PTX_OK);
  TEST_CHECK(memcmp(out, want, sizeof out) == 0);
  /* too little dynamic shared memory: a shared-memory fault */
  l.shared = 16;
  TEST_CHECK(run(m, "reduce_dynamic", &l, ARGS(&pi, &po, &ints)) == NVHCQ_PTX_FAULT);
  TEST_CHECK(l.fault.kind == NVHCQ_PTX_FAULT_ADDRESS && l.fault.line > 0);
  nvhcq_ptx_module_free(m);
}

static void test_local_16k(void) {
  nvhcq_ptx_module *m = device_module();
  enum { T = 32 };
  int idx[T], out[T];
  for (int i = 0; i < T; i++) idx[i] = i * 977 + 5;
  int *pi = idx, *po = out;
  launch l = {DIM(1, 1, 1), DIM(T, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "local_16k", &l, ARGS(&pi, &po)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int t = 0; t < T; t++)
    bad += out[t] != (((idx[t] & 4095) ^ t) + (((idx[t] * 7) & 4095) ^ t));
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static void test_index_3d(void) {
  nvhcq_ptx_module *m = device_module();
  enum { G = 2 * 3 * 2, B = 4 * 2 * 3 };
  uint32_t out[G * B], *po = out;
  launch l = {DIM(2, 3, 2), DIM(4, 2, 3), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "index_3d", &l, ARGS(&po)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (uint32_t i = 0; i < G * B; i++) bad += out[i] != i / B * 1000 + i % B;
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static void test_use_globals(void) {
  nvhcq_ptx_module *m = device_module();
  static const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  void *hits = NULL, *bias = NULL;
  size_t size = 0;
  TEST_CHECK(m && nvhcq_ptx_variable_find(m, "device_hits", &hits, &size) == NVHCQ_PTX_OK);
  TEST_CHECK(size == 4 && nvhcq_ptx_variable_find(m, "device_bias", &bias, NULL) == NVHCQ_PTX_OK);
  TEST_CHECK(nvhcq_ptx_variable_find(m, "const_table", NULL, &size) == NVHCQ_PTX_OK && size == 32);
  if (!hits || !bias) return nvhcq_ptx_module_free(m);
  int out[64] = {0}, *po = out, n = 50;
  launch l = {DIM(1, 1, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(run(m, "use_globals", &l, ARGS(&po, &n)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += out[i] != (i < n ? table[i & 7] + 100 : 0);
  TEST_CHECK(bad == 0 && *(unsigned *)hits == 50);
  *(int *)bias = -7; /* the caller writes a __device__ variable */
  TEST_CHECK(run(m, "use_globals", &l, ARGS(&po, &n)) == NVHCQ_PTX_OK);
  TEST_CHECK(out[9] == 1 - 7 && *(unsigned *)hits == 100);
  nvhcq_ptx_module_free(m);
}

struct params {
  double scale;
  int32_t offset;
  uint8_t flag;
};

static void test_struct_args(void) {
  nvhcq_ptx_module *m = device_module();
  const nvhcq_ptx_kernel *k = NULL;
  TEST_CHECK(m && nvhcq_ptx_kernel_find(m, "struct_args", &k) == NVHCQ_PTX_OK);
  static const size_t offsets[] = {0, 16, 24, 32, 40};
  for (size_t i = 0; k && i < 5; i++) {
    nvhcq_ptx_param p;
    TEST_CHECK(nvhcq_ptx_kernel_param(k, i, &p) == NVHCQ_PTX_OK && p.offset == offsets[i]);
  }
  TEST_CHECK(nvhcq_ptx_kernel_params_size(k) == 44);
  struct params p = {1.5, -3, 1};
  int64_t big = 1ll << 40;
  int in[40];
  double out[40];
  for (int i = 0; i < 40; i++) in[i] = i * 3 - 50;
  int *pi = in;
  double *po = out;
  uint32_t n = 37;
  launch l = {DIM(2, 1, 1), DIM(32, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(run(m, "struct_args", &l, ARGS(&p, &big, &pi, &po, &n)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += out[i] != in[i] * p.scale + p.offset + (double)big;
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static void test_int_kernels(void) {
  nvhcq_ptx_module *m = device_module();
  int a[100], b[100], c[100], *pa = a, *pb = b, *pc = c, n = 100, x = -3, y = 11;
  for (int i = 0; i < 100; i++) a[i] = i * i - 4000, b[i] = 7 * i;
  launch l = {DIM(2, 1, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "step", &l, ARGS(&pa, &pc, &n)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int i = 0; i < 100; i++) bad += c[i] != a[i] * 2 + 1;
  TEST_CHECK(run(m, "add_int", &l, ARGS(&pa, &pb, &pc, &n)) == NVHCQ_PTX_OK);
  for (int i = 0; i < 100; i++) bad += c[i] != a[i] + b[i];
  TEST_CHECK(run(m, "affine", &l, ARGS(&pc, &x, &y, &n)) == NVHCQ_PTX_OK);
  for (int i = 0; i < 100; i++) bad += c[i] != (a[i] + b[i]) * x + y;
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static void test_copy16(void) {
  nvhcq_ptx_module *m = device_module();
  enum { N16 = 100 };
  static uint32_t src[N16 * 4], dst[N16 * 4 + 4];
  for (int i = 0; i < N16 * 4; i++) src[i] = (uint32_t)i * 2654435761u;
  uint32_t *ps = src, *pd = dst;
  size_t n16 = N16;
  launch l = {DIM(2, 1, 1), DIM(32, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "copy16", &l, ARGS(&ps, &pd, &n16)) == NVHCQ_PTX_OK);
  TEST_CHECK(memcmp(src, dst, sizeof src) == 0 && dst[N16 * 4] == 0);
  nvhcq_ptx_module_free(m);
}

static void test_fma_loop(void) {
  nvhcq_ptx_module *m = device_module();
  enum { T = 64, ITERS = 3 };
  float out[T], *po = out;
  int iters = ITERS;
  launch l = {DIM(1, 1, 1), DIM(T, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "fma_loop", &l, ARGS(&po, &iters)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int t = 0; t < T; t++) {
    float a[8];
    for (int j = 0; j < 8; j++) a[j] = (float)t + (float)j;
    for (int i = 0; i < ITERS * 16; i++)
      for (int j = 0; j < 8; j++) a[j] = fmaf(a[j], 0.999f, 0.001f);
    float s = a[0];
    for (int j = 1; j < 8; j++) s += a[j];
    bad += out[t] != s;
  }
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static uint32_t order_value(uint32_t round, uint32_t e) {
  uint32_t h = round * 0x9e3779b9u + 0x7f4a7c15u;
  h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
  return h ^ (e * 0x9e3779b1u);
}

static void test_order_step(void) {
  nvhcq_ptx_module *m = device_module();
  enum { N = 256 };
  uint32_t in[N], out[N], *pi = in, *po = out, n = N, round = 3, spin = 200;
  for (uint32_t e = 0; e < N; e++) in[e] = order_value(round - 1, e);
  in[5] ^= 1, in[77] = 0, in[200]++;
  unsigned long long stale = 0, *ps = &stale;
  launch l = {DIM(2, 1, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "order_step", &l, ARGS(&pi, &po, &ps, &n, &round, &spin)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (uint32_t e = 0; e < N; e++) bad += out[e] != order_value(round, e);
  TEST_CHECK(bad == 0 && stale == 3);
  nvhcq_ptx_module_free(m);
}

static void test_spin(void) {
  nvhcq_ptx_module *m = device_module();
  int flag = 0, *pf = &flag;
  unsigned long long ns = 20000;
  launch l = {DIM(1, 1, 1), DIM(32, 1, 1), 0, NULL, {0}, 0};
  double t0 = test_now_ms();
  TEST_CHECK(m && run(m, "spin", &l, ARGS(&pf, &ns)) == NVHCQ_PTX_OK);
  TEST_CHECK(flag == 1 && test_now_ms() - t0 >= 0.02);
  nvhcq_ptx_module_free(m);
}

/* Global memory for the fault tests: one 256-byte buffer at GPU address 0x10000. */
static unsigned char fault_buf[256];
static void *translate(void *user, uint64_t address, size_t size, int write) {
  (void)user, (void)write;
  if (address < 0x10000 || address + size > 0x10000 + sizeof fault_buf) return NULL;
  return fault_buf + (address - 0x10000);
}

static void test_faults(void) {
  nvhcq_ptx_module *m = device_module();
  nvhcq_ptx_memory mem = {translate, NULL};
  launch l = {DIM(1, 1, 1), DIM(32, 1, 1), 0, &mem, {0}, 0};
  unsigned long long address = 0x10000 + 8;
  TEST_CHECK(m && run(m, "store_to", &l, ARGS(&address)) == NVHCQ_PTX_OK);
  TEST_CHECK(fault_buf[8] == 1);
  address = 0xdead0000;
  TEST_CHECK(run(m, "store_to", &l, ARGS(&address)) == NVHCQ_PTX_FAULT);
  TEST_CHECK(l.fault.kind == NVHCQ_PTX_FAULT_ADDRESS && l.fault.address == 0xdead0000);
  TEST_CHECK(l.fault.write == 1 && l.fault.line > 0 && l.fault.thread[0] == 0);
  unsigned long long p = 0x10000, o = 0x10000 + 128;
  TEST_CHECK(run(m, "misaligned_load", &l, ARGS(&p, &o)) == NVHCQ_PTX_FAULT);
  TEST_CHECK(l.fault.kind == NVHCQ_PTX_FAULT_MISALIGNED && l.fault.address == 0x10001);
  TEST_CHECK(run(m, "trap_now", &l, 0, NULL) == NVHCQ_PTX_FAULT);
  TEST_CHECK(l.fault.kind == NVHCQ_PTX_FAULT_TRAP);
  /* a kernel that never ends: stopped by the instruction budget */
  unsigned long long flag = 0x10000 + 64;
  l.max_instructions = 100000;
  TEST_CHECK(run(m, "spin_forever", &l, ARGS(&flag)) == NVHCQ_PTX_FAULT);
  TEST_CHECK(l.fault.kind == NVHCQ_PTX_FAULT_TIMEOUT);
  nvhcq_ptx_module_free(m);
}

static void test_ew_add(void) {
  nvhcq_ptx_module *m = load("real_kernels.ptx");
  enum { N = 1030 };
  static float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = (float)i / 3.0f, b[i] = (float)(N - i) * 1.5f;
  float *pa = a, *pb = b, *pc = c;
  int n = N;
  launch l = {DIM(2, 1, 1), DIM(128, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "ew_add", &l, ARGS(&pa, &pb, &pc, &n)) == NVHCQ_PTX_OK);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += c[i] != a[i] + b[i];
  TEST_CHECK(bad == 0);
  nvhcq_ptx_module_free(m);
}

static void test_softmax_rows(void) {
  nvhcq_ptx_module *m = load("real_kernels.ptx");
  enum { ROWS = 3, COLS = 100 };
  static float x[ROWS * COLS], y[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37) % 101) / 10.0f - 5.0f;
  float *px = x, *py = y;
  int rows = ROWS, cols = COLS;
  launch l = {DIM(ROWS + 1, 1, 1), DIM(64, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run(m, "softmax_rows", &l, ARGS(&px, &py, &rows, &cols)) == NVHCQ_PTX_OK);
  double worst = 0;
  for (int r = 0; r < ROWS; r++) {
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < COLS; j++) mx = fmax(mx, x[r * COLS + j]);
    for (int j = 0; j < COLS; j++) s += exp(x[r * COLS + j] - mx);
    for (int j = 0; j < COLS; j++) {
      double want = exp(x[r * COLS + j] - mx) / s;
      worst = fmax(worst, fabs(y[r * COLS + j] - want) / want);
    }
  }
  TEST_CHECK_MSG(worst < 1e-5, "relative error %g", worst);
  /* matmul_f16 (wmma, cp.async) is reported, not run */
  const nvhcq_ptx_kernel *k = NULL;
  TEST_CHECK(nvhcq_ptx_kernel_find(m, "matmul_f16", &k) == NVHCQ_PTX_OK);
  TEST_CHECK(nvhcq_ptx_kernel_unsupported(k) != NULL);
  TEST_CHECK(nvhcq_ptx_kernel_unsupported(k) && strstr(nvhcq_ptx_kernel_unsupported(k), "line "));
  nvhcq_ptx_module_free(m);
}

/* tests/device/cluster.cu's kernels: every block's view of its cluster, and blocks writing into
 * each other's shared memory between cluster barriers. */
static void test_cluster_kernels(void) {
  nvhcq_ptx_module *m = load("cluster.ptx");
  static uint32_t view[48][14], out[16 * 256];
  uint32_t *pv = &view[0][0], *po = out, shift = 3;
  launch l = {DIM(4, 6, 2), DIM(32, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(m && run_in(m, "cluster_any", &l, (uint32_t[]){2, 3, 1}, ARGS(&pv)) == NVHCQ_PTX_OK);
  unsigned wrong = 0;
  for (uint32_t b = 0; b < 48; b++) {
    uint32_t x = b % 4, y = b / 4 % 6, z = b / 24,
             want[14] = {
                 x % 2 + 2 * (y % 3), 6, x / 2, y / 3, z, 2, 2, 2, 2, 3, 1, x % 2, y % 3, 0};
    for (int i = 0; i < 14; i++) wrong += view[b][i] != want[i];
  }
  TEST_CHECK_MSG(wrong == 0, "%u wrong fields", wrong);
  launch d = {DIM(16, 1, 1), DIM(96, 1, 1), 0, NULL, {0}, 0};
  const uint32_t eight[3] = {8, 1, 1};
  TEST_CHECK(m && run_in(m, "cluster_dsmem", &d, eight, ARGS(&po, &shift)) == NVHCQ_PTX_OK);
  wrong = 0;
  for (uint32_t b = 0; b < 16; b++)
    for (uint32_t i = 0; i < 256; i++)
      wrong += out[b * 256 + i] != (b - b % 8 + (b + 5) % 8) * 1000 + i;
  TEST_CHECK_MSG(wrong == 0, "%u words wrong", wrong);
  /* A grid that is not a whole number of clusters is refused. */
  d.grid[0] = 12;
  TEST_CHECK(m && run_in(m, "cluster_dsmem", &d, eight, ARGS(&po, &shift)) == NVHCQ_PTX_INVALID);
  nvhcq_ptx_module_free(m);
}

/* shared::cluster addresses (mapa's 32-bit form), the barrier's ordering variants, a wait no one
 * arrives at, and a rank outside the cluster. */
static const char cluster_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".entry ring(.param .u64 out)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n"
    ".shared .align 4 .b8 slot[4];\nld.param.u64 %rd1, [out];\n"
    "mov.u32 %r1, %cluster_ctarank;\nmov.u32 %r2, %cluster_nctarank;\nadd.u32 %r3, %r1, 1;\n"
    "rem.u32 %r3, %r3, %r2;\nmov.u32 %r4, slot;\nmapa.shared::cluster.u32 %r5, %r4, %r3;\n"
    "barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n"
    "st.shared::cluster.u32 [%r5], %r1;\nbarrier.cluster.arrive.release.aligned;\n"
    "barrier.cluster.wait.acquire.aligned;\nld.shared::cta.u32 %r6, [slot];\n"
    "mov.u32 %r7, %ctaid.x;\nmul.wide.u32 %rd2, %r7, 4;\nadd.s64 %rd3, %rd1, %rd2;\n"
    "st.global.u32 [%rd3], %r6;\nret;\n}\n"
    ".entry stuck()\n{\nbarrier.cluster.wait;\nret;\n}\n"
    ".entry far(.param .u32 r)\n{\n.reg .b32 %r<4>;\n.shared .align 4 .b8 s[4];\n"
    "ld.param.u32 %r1, [r];\nmov.u32 %r2, s;\nmapa.shared::cluster.u32 %r3, %r2, %r1;\n"
    "st.shared::cluster.u32 [%r3], %r1;\nret;\n}\n";

static void test_cluster_forms(void) {
  nvhcq_ptx_module *m = NULL;
  char err[256] = "";
  TEST_CHECK_MSG(nvhcq_ptx_module_load(cluster_ptx, strlen(cluster_ptx), &m, err, sizeof err) ==
                     NVHCQ_PTX_OK,
                 "%s", err);
  if (!m) return;
  static uint32_t out[12];
  uint32_t *po = out;
  launch l = {DIM(12, 1, 1), DIM(1, 1, 1), 0, NULL, {0}, 0};
  TEST_CHECK(run_in(m, "ring", &l, (uint32_t[]){4, 1, 1}, ARGS(&po)) == NVHCQ_PTX_OK);
  unsigned wrong = 0;
  for (uint32_t b = 0; b < 12; b++) wrong += out[b] != (b % 4 + 3) % 4;
  TEST_CHECK_MSG(wrong == 0, "%u wrong", wrong);
  launch s = {DIM(2, 1, 1), DIM(32, 1, 1), 0, NULL, {0}, 0};
  const uint32_t two[3] = {2, 1, 1};
  TEST_CHECK(run_in(m, "stuck", &s, two, 0, NULL) == NVHCQ_PTX_FAULT);
  TEST_CHECK(s.fault.kind == NVHCQ_PTX_FAULT_DEADLOCK);
  uint32_t rank = 3;
  TEST_CHECK(run_in(m, "far", &s, two, ARGS(&rank)) == NVHCQ_PTX_FAULT);
  TEST_CHECK(s.fault.kind == NVHCQ_PTX_FAULT_ADDRESS && strstr(s.fault.what, "rank"));
  rank = 1;
  TEST_CHECK(run_in(m, "far", &s, two, ARGS(&rank)) == NVHCQ_PTX_OK);
  nvhcq_ptx_module_free(m);
}

static void test_parse_errors(void) {
  static const char *const bad[] = {
      ".version 8.0\n.target sm_90\n.address_size 64\n.func f()\n{\nret;\n}\n",
      ".version 8.0\n.entry k()\n{\n.reg .b32 %r<2>;\nadd.s32 %r1, %r9, 1;\n",
      ".global .u32 x = {1, 2};\n",
      ".entry k(.param .u32 a\n{\nret;\n}\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nvhcq_ptx_module *m = (nvhcq_ptx_module *)1;
    char err[256] = "";
    TEST_CHECK(nvhcq_ptx_module_load(bad[i], strlen(bad[i]), &m, err, sizeof err) ==
               NVHCQ_PTX_PARSE_ERROR);
    TEST_CHECK_MSG(m == NULL && strncmp(err, "line ", 5) == 0, "case %zu: %s", i, err);
  }
  /* an unknown instruction: the kernel is marked, the module loads */
  const char *text = ".entry k()\n{\nfrobnicate.b32 1;\nret;\n}\n";
  nvhcq_ptx_module *m = NULL;
  TEST_CHECK(nvhcq_ptx_module_load(text, strlen(text), &m, NULL, 0) == NVHCQ_PTX_OK);
  const nvhcq_ptx_kernel *k = NULL;
  TEST_CHECK(m && nvhcq_ptx_kernel_find(m, "k", &k) == NVHCQ_PTX_OK);
  const char *why = nvhcq_ptx_kernel_unsupported(k);
  TEST_CHECK(why && strstr(why, "line 3") && strstr(why, "frobnicate"));
  nvhcq_ptx_module_free(m);
}

TEST_MAIN(TEST(test_empty), TEST(test_vector_add), TEST(test_atomic_increment),
          TEST(test_reduce_dynamic), TEST(test_local_16k), TEST(test_index_3d),
          TEST(test_use_globals), TEST(test_struct_args), TEST(test_int_kernels), TEST(test_copy16),
          TEST(test_fma_loop), TEST(test_order_step), TEST(test_spin), TEST(test_faults),
          TEST(test_ew_add), TEST(test_softmax_rows), TEST(test_cluster_kernels),
          TEST(test_cluster_forms), TEST(test_parse_errors))
