/* Kernel launches on a real GPU, from cubins the build makes with nvcc (tests/device/kernels.cu).
 * Skips visibly without a GPU or without the cubins. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_test.h"

static nvhcq_buffer *alloc(size_t n) {
  nvhcq_buffer *b = NULL;
  if (nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_DEVICE, &b))
    fprintf(stderr, "  alloc: %s\n", nvhcq_last_error());
  return b;
}

#define DIM(x, y, z) ((nvhcq_dim3){(x), (y), (z)})

static void t_list_kernels(void) {
  NEED_GPU();
  uint32_t n = nvhcq_module_kernel_count(mod);
  TEST_CHECK(n >= 10);
  nvhcq_kernel *k;
  TEST_CHECK(nvhcq_module_get_kernel(mod, "no_such_kernel", &k) == NVHCQ_ERROR_NOT_FOUND);
  TEST_CHECK(strstr(nvhcq_last_error(), "vector_add") != NULL);
}

static void t_vector_add(void) {
  NEED_GPU();
  const int n = 1 << 20;
  float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
  for (int i = 0; i < n; i++) a[i] = (float)i, b[i] = (float)(2 * i + 1);
  nvhcq_buffer *da = alloc(n * 4), *db = alloc(n * 4), *dc = alloc(n * 4);
  TEST_CHECK(nvhcq_buffer_write(da, 0, a, n * 4) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_write(db, 0, b, n * 4) == NVHCQ_SUCCESS);
  struct {
    uint64_t a, b, c;
    int n;
  } args = {nvhcq_buffer_gpu_address(da), nvhcq_buffer_gpu_address(db),
            nvhcq_buffer_gpu_address(dc), n};
  uint64_t ns = 0;
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(kernel("vector_add"), DIM(n / 256, 1, 1),
                                                DIM(256, 1, 1), 0, &args, 28, &ns);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_read(c, dc, 0, n * 4) == NVHCQ_SUCCESS);
  int bad = 0;
  for (int i = 0; i < n; i++) bad += c[i] != (float)(3 * i + 1);
  TEST_CHECK_MSG(bad == 0, "%d wrong elements", bad);
  printf("  vector_add of %d floats: %.1f us on the GPU\n", n, ns / 1e3);
  nvhcq_buffer_destroy(da), nvhcq_buffer_destroy(db), nvhcq_buffer_destroy(dc);
  free(a), free(b), free(c);
}

static void t_atomic_100k(void) {
  NEED_GPU();
  nvhcq_buffer *counter = alloc(8);
  uint64_t zero = 0, got = 0;
  nvhcq_buffer_write(counter, 0, &zero, 8);
  nvhcq_queue *q;
  nvhcq_signal *done;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  uint64_t addr = nvhcq_buffer_gpu_address(counter);
  nvhcq_kernel *k = kernel("atomic_increment");
  int failed = 0;
  for (int batch = 0; batch < 100 && !failed; batch++) {
    nvhcq_queue_reset(q);
    for (int i = 0; i < 1000 && !failed; i++)
      if (nvhcq_queue_launch(q, k, DIM(1, 1, 1), DIM(32, 1, 1), 0, &addr, 8)) {
        TEST_CHECK_MSG(0, "%s", nvhcq_last_error());
        failed = 1; /* what was made is still destroyed below */
      }
    if (batch == 99) nvhcq_queue_signal(q, done, 1);
    if (!failed) TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  }
  if (!failed) {
    TEST_CHECK(nvhcq_signal_cpu_wait(done, 1, 20000) == NVHCQ_SUCCESS);
    nvhcq_buffer_read(&got, counter, 0, 8);
    TEST_CHECK_MSG(got == 100000, "counted %llu", (unsigned long long)got);
  }
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(counter);
}

/* reduce_dynamic's inputs: `blocks` rows of `ints` values on the GPU, and each row's sum. */
typedef struct reduce_case {
  nvhcq_buffer *in, *out;
  long long *want;
  struct {
    uint64_t in, out;
    int n;
  } args; /* 20 bytes: the kernel's parameters, without the struct's padding */
} reduce_case;

static reduce_case reduce_setup(int ints, int blocks, int salt) {
  reduce_case r = {.want = calloc((size_t)blocks, 8)};
  int *in = malloc((size_t)ints * blocks * 4);
  for (int b = 0; b < blocks; b++)
    for (int i = 0; i < ints; i++)
      in[b * ints + i] = (i * salt + b) % 1001 - b, r.want[b] += in[b * ints + i];
  r.in = alloc((size_t)ints * blocks * 4), r.out = alloc(8 * (size_t)blocks);
  nvhcq_buffer_write(r.in, 0, in, (size_t)ints * blocks * 4);
  free(in);
  r.args.in = nvhcq_buffer_gpu_address(r.in), r.args.out = nvhcq_buffer_gpu_address(r.out);
  r.args.n = ints;
  return r;
}

static void reduce_free(reduce_case *r) {
  nvhcq_buffer_destroy(r->in), nvhcq_buffer_destroy(r->out), free(r->want);
}

/* The shared-memory figures below are Hopper's and Blackwell's (228 KiB an SM, 227 a block). */
static int hopper_shared(void) {
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  return !strcmp(info.arch, "sm_90") || !strcmp(info.arch, "sm_100");
}

#define NEED_HOPPER_SHARED()                                                                       \
  do {                                                                                             \
    if (!hopper_shared())                                                                          \
      TEST_SKIP("its figures are Hopper's and Blackwell's shared memory (228 KiB an SM)");         \
  } while (0)

static void t_dynamic_shared_over_48k(void) {
  NEED_GPU();
  NEED_HOPPER_SHARED();
  const int ints = 200 * 1024 / 4, blocks = 8; /* 200 KiB of dynamic shared memory */
  reduce_case r = reduce_setup(ints, blocks, 1);
  long long got[8];
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(kernel("reduce_dynamic"), DIM(blocks, 1, 1),
                                                DIM(256, 1, 1), ints * 4, &r.args, 20, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_buffer_read(got, r.out, 0, sizeof got);
  TEST_CHECK(memcmp(got, r.want, sizeof got) == 0);
  /* 240 KiB is more than a block may have: refused before anything runs. */
  s = nvhcq_kernel_launch_cpu_wait(kernel("reduce_dynamic"), DIM(1, 1, 1), DIM(256, 1, 1),
                                   240 * 1024, &r.args, 20, NULL);
  TEST_CHECK(s == NVHCQ_ERROR_LAUNCH_CHECK);
  printf("  too much shared memory says: %s\n", nvhcq_last_error());
  reduce_free(&r);
}

/* The occupancy report, the carveout preference and launches under each preference. */
static void t_occupancy_and_carveout(void) {
  NEED_GPU();
  NEED_HOPPER_SHARED();
  nvhcq_kernel *k = kernel("reduce_dynamic");
  nvhcq_occupancy o = {.struct_size = sizeof o};
  TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(256, 1, 1), 100 << 10, &o) == NVHCQ_SUCCESS);
  printf("  256 threads, 100 KiB: %u blocks/SM, limiter %u, config %u KiB (%u..%u)\n",
         o.blocks_per_sm, o.limiter, o.shared_config_bytes >> 10, o.shared_config_min >> 10,
         o.shared_config_max >> 10);
  TEST_CHECK(o.blocks_per_sm == 2 && o.limiter == NVHCQ_LIMIT_SHARED);
  TEST_CHECK(o.shared_per_block == 101u << 10 && o.warps_per_sm == 16);
  TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(256, 1, 1), 0, &o) == NVHCQ_SUCCESS);
  TEST_CHECK(o.blocks_per_sm == 8 && o.limiter == NVHCQ_LIMIT_WARPS && o.warps_per_sm == 64);
  TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(2048, 1, 1), 0, &o) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(32, 1, 1), 1 << 30, &o) ==
             NVHCQ_ERROR_LAUNCH_CHECK);
  printf("  too much shared memory says: %s\n", nvhcq_last_error());
  int64_t pref = 7;
  TEST_CHECK(nvhcq_kernel_get_attribute(k, NVHCQ_KERNEL_CARVEOUT_PREFERENCE, &pref) == 0);
  TEST_CHECK(pref == -1);
  TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_CARVEOUT_PREFERENCE, 101) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  printf("  a bad preference says: %s\n", nvhcq_last_error());
  TEST_CHECK(nvhcq_kernel_set_attribute(k, 99, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
  /* The same reduction with the most L1, the most shared memory and nvhcq's choice. */
  const int ints = 24 * 1024, blocks = 264;
  reduce_case r = reduce_setup(ints, blocks, 7);
  long long *got = calloc(blocks, 8);
  static const int64_t prefs[] = {0, 100, 50, -1};
  for (int p = 0; p < 4; p++) {
    TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_CARVEOUT_PREFERENCE, prefs[p]) == 0);
    TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(256, 1, 1), ints * 4, &o) == NVHCQ_SUCCESS);
    memset(got, 0xff, 8 * blocks);
    nvhcq_buffer_write(r.out, 0, got, 8 * blocks);
    nvhcq_status s = nvhcq_kernel_launch_cpu_wait(k, DIM(blocks, 1, 1), DIM(256, 1, 1), ints * 4,
                                                  &r.args, 20, NULL);
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    nvhcq_buffer_read(got, r.out, 0, 8 * blocks);
    TEST_CHECK_MSG(memcmp(got, r.want, 8 * blocks) == 0, "preference %lld", (long long)prefs[p]);
    printf("  preference %3lld: config %u KiB, %u blocks/SM\n", (long long)prefs[p],
           o.shared_config_bytes >> 10, o.blocks_per_sm);
  }
  reduce_free(&r), free(got);
}

static void t_local_16k(void) {
  NEED_GPU();
  const int n = 64 * 128;
  int *idx = malloc(n * 4), *out = malloc(n * 4);
  for (int i = 0; i < n; i++) idx[i] = i * 37;
  nvhcq_buffer *di = alloc(n * 4), *dout = alloc(n * 4);
  nvhcq_buffer_write(di, 0, idx, n * 4);
  struct {
    uint64_t idx, out;
  } args = {nvhcq_buffer_gpu_address(di), nvhcq_buffer_gpu_address(dout)};
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(kernel("local_16k"), DIM(64, 1, 1), DIM(128, 1, 1),
                                                0, &args, 16, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_buffer_read(out, dout, 0, n * 4);
  int bad = 0;
  for (int t = 0; t < n; t++)
    bad += out[t] != (((idx[t] & 4095) ^ t) + (((idx[t] * 7) & 4095) ^ t));
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  nvhcq_buffer_destroy(di), nvhcq_buffer_destroy(dout), free(idx), free(out);
}

static void t_3d(void) {
  NEED_GPU();
  nvhcq_dim3 g = DIM(5, 3, 2), b = DIM(8, 4, 2);
  uint32_t total = 5 * 3 * 2 * 8 * 4 * 2, *out = malloc(total * 4);
  nvhcq_buffer *d = alloc(total * 4);
  uint64_t addr = nvhcq_buffer_gpu_address(d);
  TEST_CHECK(nvhcq_kernel_launch_cpu_wait(kernel("index_3d"), g, b, 0, &addr, 8, NULL) ==
             NVHCQ_SUCCESS);
  nvhcq_buffer_read(out, d, 0, total * 4);
  int bad = 0;
  for (uint32_t blk = 0; blk < 30; blk++)
    for (uint32_t t = 0; t < 64; t++) bad += out[blk * 64 + t] != blk * 1000 + t;
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  nvhcq_buffer_destroy(d), free(out);
}

/* Launches of one kernel in one queue whose shapes alternate (a launch repeating the last shape
 * reuses its QMD, launch.c): each grid writes what its own grid and block are. */
static void t_alternating_shapes(void) {
  NEED_GPU();
  static const nvhcq_dim3 grids[5] = {DIM(5, 3, 2), DIM(5, 3, 2), DIM(2, 7, 1), DIM(5, 3, 2),
                                      DIM(3, 1, 4)};
  static const nvhcq_dim3 blocks[5] = {DIM(8, 4, 2), DIM(8, 4, 2), DIM(32, 1, 3), DIM(8, 4, 2),
                                       DIM(8, 4, 2)};
  nvhcq_buffer *d[5];
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  for (int i = 0; i < 5; i++) {
    d[i] = alloc(30 * 96 * 4);
    uint64_t addr = nvhcq_buffer_gpu_address(d[i]);
    TEST_CHECK_MSG(nvhcq_queue_launch(q, kernel("index_3d"), grids[i], blocks[i], 0, &addr, 8) ==
                       NVHCQ_SUCCESS,
                   "%s", nvhcq_last_error());
  }
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_queue_cpu_wait_idle(q, 10000) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  uint32_t out[30 * 96];
  for (int i = 0; i < 5; i++) {
    uint32_t nb = grids[i].x * grids[i].y * grids[i].z;
    uint32_t nt = blocks[i].x * blocks[i].y * blocks[i].z;
    nvhcq_buffer_read(out, d[i], 0, nb * nt * 4);
    int bad = 0;
    for (uint32_t blk = 0; blk < nb; blk++)
      for (uint32_t t = 0; t < nt; t++) bad += out[blk * nt + t] != blk * 1000 + t;
    TEST_CHECK_MSG(bad == 0, "launch %d: %d of %u words wrong", i, bad, nb * nt);
    nvhcq_buffer_destroy(d[i]);
  }
  nvhcq_queue_destroy(q);
}

static void t_globals(void) {
  NEED_GPU();
  uint64_t bias_addr, hits_addr;
  size_t size;
  TEST_CHECK(nvhcq_module_get_global(mod, "device_bias", &bias_addr, &size) == NVHCQ_SUCCESS &&
             size == 4);
  TEST_CHECK(nvhcq_module_get_global(mod, "device_hits", &hits_addr, &size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_module_get_global(mod, "const_table", NULL, &size) == NVHCQ_SUCCESS &&
             size == 32);
  TEST_CHECK(nvhcq_module_get_global(mod, "nope", NULL, NULL) == NVHCQ_ERROR_NOT_FOUND);
  const int n = 1000;
  int out[1000];
  nvhcq_buffer *d = alloc(n * 4);
  struct {
    uint64_t out;
    int n;
  } args = {nvhcq_buffer_gpu_address(d), n};
  TEST_CHECK(nvhcq_kernel_launch_cpu_wait(kernel("use_globals"), DIM(4, 1, 1), DIM(256, 1, 1), 0,
                                          &args, 12, NULL) == NVHCQ_SUCCESS);
  nvhcq_buffer_read(out, d, 0, sizeof out);
  static const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  int bad = 0;
  for (int i = 0; i < n; i++) bad += out[i] != table[i & 7] + 100;
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  /* Read the __device__ counter through a copy from its address. */
  nvhcq_buffer *h;
  nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &h);
  nvhcq_queue *q;
  nvhcq_signal *s;
  nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q);
  nvhcq_signal_create(dev, 0, &s);
  nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(h), hits_addr, 4);
  nvhcq_queue_signal(q, s, 1);
  nvhcq_queue_submit(q);
  TEST_CHECK(nvhcq_signal_cpu_wait(s, 1, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(*(uint32_t *)nvhcq_buffer_host_pointer(h) == 1000, "hits %u",
                 *(uint32_t *)nvhcq_buffer_host_pointer(h));
  nvhcq_queue_destroy(q), nvhcq_signal_destroy(s), nvhcq_buffer_destroy(h), nvhcq_buffer_destroy(d);
}

/* Launches of use_globals over n threads into out, then the table they saw compared with want. */
static int const_wrong(nvhcq_buffer *out, const int *want, int n) {
  int got[256], bad = 0;
  nvhcq_buffer_read(got, out, 0, (size_t)n * 4);
  for (int i = 0; i < n; i++) bad += got[i] != want[i & 7] + 100;
  return bad;
}

/* A __constant__ table rewritten between launches (as cudaMemcpyToSymbol does): each launch must
 * see the table as it is when it runs, not lines an earlier launch left in the constant cache.
 * Rewritten by the copy engine between separately submitted launches, then inside one queue,
 * after a wait on the copy (launch.c, fence_constant_cache). */
static void t_constant_rewrite(void) {
  NEED_GPU();
  uint64_t table_addr;
  size_t size;
  TEST_CHECK(nvhcq_module_get_global(mod, "const_table", &table_addr, &size) == NVHCQ_SUCCESS &&
             size == 32);
  nvhcq_kernel *k = kernel("use_globals");
  /* the module's __constant__ bytes, as CUDA's CONST_SIZE_BYTES counts them for each kernel */
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_kernel_query_info(k, &info) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(info.constant_bytes == 32, "%u bytes of __constant__", info.constant_bytes);
  TEST_CHECK(nvhcq_kernel_query_info(kernel("empty"), &info) == NVHCQ_SUCCESS &&
             info.constant_bytes == 32);
  nvhcq_buffer *out[2] = {alloc(256 * 4), alloc(256 * 4)}, *h;
  nvhcq_queue *cq, *q;
  nvhcq_signal *s;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &h) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &s) == NVHCQ_SUCCESS);
  int *table = nvhcq_buffer_host_pointer(h), bad = 0, rounds = 50;
  uint64_t v = 0;
  for (int r = 0; r < rounds; r++) {
    int old[8];
    for (int i = 0; i < 8; i++) old[i] = r == 0 ? (int[]){3, 1, 4, 1, 5, 9, 2, 6}[i] : table[i];
    for (int i = 0; i < 8; i++) table[i] = r * 8 + i;
    struct {
      uint64_t out;
      int n;
    } a0 = {nvhcq_buffer_gpu_address(out[0]), 256}, a1 = {nvhcq_buffer_gpu_address(out[1]), 256};
    /* compute: launch (old table), signal v+1, wait v+2, launch (new table);
     * copy: wait v+1, new table in, signal v+2. */
    nvhcq_queue_reset(q), nvhcq_queue_reset(cq);
    nvhcq_queue_launch(q, k, DIM(1, 1, 1), DIM(256, 1, 1), 0, &a0, 12);
    nvhcq_queue_signal(q, s, v + 1);
    nvhcq_queue_gpu_wait(q, s, v + 2);
    nvhcq_queue_launch(q, k, DIM(1, 1, 1), DIM(256, 1, 1), 0, &a1, 12);
    nvhcq_queue_signal(q, s, v + 3);
    nvhcq_queue_gpu_wait(cq, s, v + 1);
    nvhcq_queue_copy(cq, table_addr, nvhcq_buffer_gpu_address(h), 32);
    nvhcq_queue_signal(cq, s, v + 2);
    TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS && nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    v += 3;
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(s, v, wait_ms(5000)) == NVHCQ_SUCCESS, "%s",
                   nvhcq_last_error());
    bad += const_wrong(out[0], old, 256) + const_wrong(out[1], table, 256);
  }
  TEST_CHECK_MSG(bad == 0, "%d of %d reads of a rewritten __constant__ table were stale", bad,
                 rounds * 512);
  nvhcq_signal_destroy(s), nvhcq_queue_destroy(q), nvhcq_queue_destroy(cq);
  nvhcq_buffer_destroy(h), nvhcq_buffer_destroy(out[0]), nvhcq_buffer_destroy(out[1]);
}

static void t_struct_args(void) {
  NEED_GPU();
  struct {
    double scale;
    int32_t offset;
    uint8_t flag;
    uint8_t pad[3];
    int64_t big;
    uint64_t in, out;
    uint32_t n;
    uint32_t pad2;
  } args;
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  nvhcq_kernel *k = kernel("struct_args");
  TEST_CHECK(nvhcq_kernel_query_info(k, &info) == NVHCQ_SUCCESS);
  int in[64];
  double out[64];
  for (int i = 0; i < 64; i++) in[i] = i - 10;
  nvhcq_buffer *di = alloc(sizeof in), *dout = alloc(sizeof out);
  nvhcq_buffer_write(di, 0, in, sizeof in);
  memset(&args, 0, sizeof args);
  args.scale = 0.5, args.offset = -3, args.flag = 1, args.big = 1ll << 40;
  args.in = nvhcq_buffer_gpu_address(di), args.out = nvhcq_buffer_gpu_address(dout), args.n = 64;
  TEST_CHECK_MSG(info.param_size == 44, "param size %u", info.param_size);
  nvhcq_status s =
      nvhcq_kernel_launch_cpu_wait(k, DIM(1, 1, 1), DIM(64, 1, 1), 0, &args, info.param_size, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_buffer_read(out, dout, 0, sizeof out);
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += out[i] != in[i] * 0.5 - 3 + (double)(1ll << 40);
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  nvhcq_buffer_destroy(di), nvhcq_buffer_destroy(dout);
}

/* A 28000-byte parameter: the kernel's parameters are described by nvcc's newer record, and the
 * whole 28012-byte block reaches the kernel. */
static void t_big_params(void) {
  NEED_GPU();
  enum { N = 7000 };
  static struct {
    int32_t v[N];
    uint64_t out;
    int32_t n;
  } args;
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  nvhcq_kernel *k = kernel("big_params");
  TEST_CHECK(nvhcq_kernel_query_info(k, &info) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(info.param_size == 28012, "param size %u", info.param_size);
  nvhcq_buffer *dout = alloc(N * 4);
  for (int i = 0; i < N; i++) args.v[i] = 7 * i - 20000;
  args.out = nvhcq_buffer_gpu_address(dout), args.n = N;
  nvhcq_status s =
      nvhcq_kernel_launch_cpu_wait(k, DIM(4, 1, 1), DIM(128, 1, 1), 0, &args, 28012, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  static int32_t got[N];
  nvhcq_buffer_read(got, dout, 0, sizeof got);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += got[i] != args.v[i] * 2 + 1;
  TEST_CHECK_MSG(bad == 0, "%d of %d wrong", bad, N);
  nvhcq_buffer_destroy(dout);
}

/* Steps from..to of step(in, out, n), each reading the buffer the one before wrote. */
static void launch_steps(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_buffer *buf[2], int from, int to,
                         int n) {
  for (int i = from; i < to; i++) {
    struct {
      uint64_t in, out;
      int n;
    } args = {nvhcq_buffer_gpu_address(buf[i & 1]), nvhcq_buffer_gpu_address(buf[(i + 1) & 1]), n};
    TEST_CHECK(nvhcq_queue_launch(q, k, DIM(n / 256, 1, 1), DIM(256, 1, 1), 0, &args, 20) ==
               NVHCQ_SUCCESS);
  }
}

static void t_chain_order(void) {
  NEED_GPU();
  const int n = 1 << 16, steps = 20;
  nvhcq_buffer *buf[2] = {alloc(n * 4), alloc(n * 4)};
  int *host = calloc(n, 4);
  nvhcq_buffer_write(buf[0], 0, host, n * 4);
  nvhcq_queue *q;
  nvhcq_signal *s;
  nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q);
  nvhcq_signal_create(dev, 0, &s);
  nvhcq_kernel *k = kernel("step");
  launch_steps(q, k, buf, 0, steps, n);
  nvhcq_queue_signal(q, s, 1);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(s, 1, wait_ms(5000)) == NVHCQ_SUCCESS);
  nvhcq_buffer_read(host, buf[steps & 1], 0, n * 4);
  int expect = (1 << steps) - 1, bad = 0;
  for (int i = 0; i < n; i++) bad += host[i] != expect;
  TEST_CHECK_MSG(bad == 0, "%d wrong (first %d, want %d)", bad, host[0], expect);
  /* Ten more, waited for through the eager queue itself: 2^30 - 1 everywhere after. */
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  launch_steps(q, k, buf, steps, steps + 10, n);
  TEST_CHECK(nvhcq_queue_signal(q, s, 2) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_signal_value(s) == 2, "nvhcq_queue_cpu_wait_idle returned before the work");
  memset(host, 0, n * 4);
  nvhcq_buffer_read(host, buf[(steps + 10) & 1], 0, n * 4);
  bad = 0;
  for (int i = 0; i < n; i++) bad += host[i] != (1 << 30) - 1;
  TEST_CHECK_MSG(bad == 0, "after nvhcq_queue_cpu_wait_idle: %d wrong (first %d, want %d)", bad,
                 host[0], (1 << 30) - 1);
  nvhcq_queue_destroy(q), nvhcq_signal_destroy(s), nvhcq_buffer_destroy(buf[0]),
      nvhcq_buffer_destroy(buf[1]), free(host);
}

/* The SMs (bit s of `seen`, 256 of them) that a grid of `blocks` ran on with the TPC mask. */
static nvhcq_status run_masked(nvhcq_queue *q, const uint32_t mask[4], uint32_t blocks,
                               nvhcq_buffer *out, uint32_t seen[8]) {
  uint64_t at = nvhcq_buffer_gpu_address(out);
  nvhcq_launch_config c = {
      .struct_size = sizeof c, .grid = DIM(blocks, 1, 1), .block = DIM(64, 1, 1), .tpc_mask = mask};
  nvhcq_queue_reset(q);
  nvhcq_status s = nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, sizeof at);
  if (!s) s = nvhcq_queue_submit(q);
  if (!s) s = nvhcq_queue_cpu_wait_idle(q, wait_ms(5000));
  uint32_t *sm = malloc(4 * blocks);
  if (!s) s = nvhcq_buffer_read(sm, out, 0, 4 * blocks);
  memset(seen, 0, 32);
  for (uint32_t i = 0; i < blocks && !s; i++) seen[sm[i] / 32 % 8] |= 1u << (sm[i] % 32);
  free(sm);
  return s;
}

static uint32_t bits(const uint32_t *w, int n) {
  uint32_t c = 0;
  for (int i = 0; i < n; i++) c += (uint32_t)__builtin_popcount(w[i]);
  return c;
}

/* The measured TPC map: each usable slot holds one TPC's SMs, no SM two slots, and the slots with
 * the SMs no slot confines make up the GPU's SMs. Fills `of` with the SMs of each slot's TPC and
 * `free_sms` with the unconfined ones. */
static void check_tpc_map(const nvhcq_device_info *info, const uint32_t usable[4],
                          uint32_t of[128][8], uint32_t free_sms[8]) {
  uint32_t all[8] = {0};
  TEST_CHECK(nvhcq_device_query_tpc_sms(dev, NVHCQ_TPC_SLOT_NONE, free_sms) == NVHCQ_SUCCESS);
  memcpy(all, free_sms, sizeof all);
  for (uint32_t t = 0; t < 128; t++) {
    TEST_CHECK(nvhcq_device_query_tpc_sms(dev, t, of[t]) == NVHCQ_SUCCESS);
    uint32_t want = (usable[t / 32] >> (t % 32) & 1) ? info->sms_per_tpc : 0;
    TEST_CHECK_MSG(bits(of[t], 8) == want, "slot %u holds %u SMs, expected %u", t, bits(of[t], 8),
                   want);
    for (int w = 0; w < 8; w++) {
      TEST_CHECK_MSG(!(all[w] & of[t][w]), "slot %u shares SMs 0x%08x (word %d)", t,
                     all[w] & of[t][w], w);
      all[w] |= of[t][w];
    }
  }
  TEST_CHECK_MSG(bits(all, 8) == info->sm_count, "the map holds %u SMs of %u", bits(all, 8),
                 info->sm_count);
  uint32_t unused[8];
  TEST_CHECK(nvhcq_device_query_tpc_sms(dev, 129, unused) == NVHCQ_ERROR_INVALID_ARGUMENT);
  printf("  %u SMs answer to no slot\n", bits(free_sms, 8));
}

/* Whether every SM in `seen` is one of the slots' in `mask` or an unconfined one. */
static int within(const uint32_t seen[8], const uint32_t mask[4], uint32_t of[128][8],
                  const uint32_t free_sms[8]) {
  uint32_t may[8];
  memcpy(may, free_sms, sizeof may);
  for (uint32_t t = 0; t < 128; t++)
    if (mask[t / 32] >> (t % 32) & 1)
      for (int w = 0; w < 8; w++) may[w] |= of[t][w];
  for (int w = 0; w < 8; w++)
    if (seen[w] & ~may[w]) return 0;
  return 1;
}

/* Two grids kept to disjoint halves of the usable TPCs run on disjoint SMs, each on the SMs the
 * map gives its TPCs (and those no slot confines); a grid kept to one TPC runs on its SMs; masks
 * naming no TPC or TPCs that are not usable are refused, and clusters too large for one GPC's
 * enabled SMs; a caller built before the field ignores it. */
static void t_tpc_masks(void) {
  NEED_GPU();
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  uint32_t usable[4], count = 0;
  TEST_CHECK(nvhcq_device_query_tpcs(dev, usable, &count) == NVHCQ_SUCCESS);
  if (count == 0) { /* before Hopper, or a build without nvcc (no census kernel) */
    nvhcq_queue *q;
    TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
    uint32_t any[4] = {1, 0, 0, 0};
    uint64_t at = 0;
    nvhcq_launch_config c = {
        .struct_size = sizeof c, .grid = DIM(1, 1, 1), .block = DIM(32, 1, 1), .tpc_mask = any};
    TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) ==
               NVHCQ_ERROR_UNSUPPORTED);
    TEST_CHECK_MSG(info.sm_version < 0x900 || strstr(nvhcq_last_error(), "without nvcc"),
                   "a Hopper GPU offers no TPC slots: %s", nvhcq_last_error());
    nvhcq_queue_destroy(q);
    TEST_SKIP("no TPC slots are offered (before Hopper, or built without nvcc; refusal checked)");
  }
  TEST_CHECK_MSG(count > 1 && count * info.sms_per_tpc <= info.sm_count && bits(usable, 4) == count,
                 "%u usable TPCs of %u SMs", count, info.sm_count);
  printf("  %u of the %u TPC slots usable in masks (%u SMs)\n", count,
         info.gpcs * info.tpcs_per_gpc, count * info.sms_per_tpc);
  static uint32_t of[128][8];
  uint32_t free_sms[8];
  check_tpc_map(&info, usable, of, free_sms);
  uint32_t half[2][4] = {{0}, {0}}, taken = 0;
  for (uint32_t t = 0; t < 128; t++)
    if (usable[t / 32] >> (t % 32) & 1) half[taken++ < count / 2][t / 32] |= 1u << (t % 32);
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  uint32_t blocks = 8 * info.sm_count;
  nvhcq_buffer *out = alloc(4 * blocks);
  if (info.sm_version < 0x900) { /* before Hopper the QMD has no TPC mask */
    uint64_t at = nvhcq_buffer_gpu_address(out);
    nvhcq_launch_config c = {
        .struct_size = sizeof c, .grid = DIM(1, 1, 1), .block = DIM(32, 1, 1), .tpc_mask = half[0]};
    TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) ==
               NVHCQ_ERROR_UNSUPPORTED);
    nvhcq_queue_destroy(q), nvhcq_buffer_destroy(out);
    return;
  }
  uint32_t seen[2][8];
  for (int h = 0; h < 2; h++) {
    nvhcq_status s = run_masked(q, half[h], blocks, out, seen[h]);
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    uint32_t sms = bits(seen[h], 8), most = bits(half[h], 4) * info.sms_per_tpc;
    TEST_CHECK_MSG(sms >= 1 && sms <= most + bits(free_sms, 8),
                   "half %d: ran on %u SMs, its TPCs hold %u", h, sms, most);
    TEST_CHECK_MSG(within(seen[h], half[h], of, free_sms),
                   "half %d ran on SMs its TPCs do not hold", h);
    printf("  half %d: %u TPCs, the grid ran on %u SMs\n", h, bits(half[h], 4), sms);
  }
  for (int w = 0; w < 8; w++)
    TEST_CHECK_MSG(!(seen[0][w] & seen[1][w] & ~free_sms[w]),
                   "SMs 0x%08x of word %d ran both halves", seen[0][w] & seen[1][w], w);
  for (uint32_t t = 0, tried = 0; t < 128 && tried < 4; t++) { /* a few single TPCs */
    uint32_t one[4] = {0}, got[8];
    if (!(usable[t / 32] >> (t % 32) & 1) || (t % 7 && tried)) continue;
    one[t / 32] = 1u << (t % 32), tried++;
    TEST_CHECK_MSG(run_masked(q, one, blocks, out, got) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK_MSG(within(got, one, of, free_sms), "the grid kept to slot %u ran elsewhere", t);
    for (int w = 0; w < 8; w++)
      TEST_CHECK_MSG((got[w] & of[t][w]) == of[t][w] || bits(free_sms, 8),
                     "the grid kept to slot %u missed SMs 0x%08x of word %d", t, of[t][w] & ~got[w],
                     w);
  }
  uint32_t none[4] = {0}, all_bits[4] = {~0u, ~0u, ~0u, ~0u};
  uint64_t at = nvhcq_buffer_gpu_address(out);
  nvhcq_launch_config c = {.struct_size = sizeof c, .grid = DIM(1, 1, 1), .block = DIM(32, 1, 1)};
  c.tpc_mask = none;
  TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  c.tpc_mask = count < 128 ? all_bits : none;
  TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "usable") != NULL);
  /* clusters (sm_90: see test_cluster): they must fit one GPC's enabled SMs (one TPC: 2 SMs, one
   * 200 KiB block each) */
  c.tpc_mask = half[0];
  c.grid = DIM(64, 1, 1), c.cluster = DIM(2, 1, 1);
  nvhcq_status want = info.sm_version >> 8 == 9 ? NVHCQ_SUCCESS : NVHCQ_ERROR_UNSUPPORTED;
  TEST_CHECK_MSG(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) == want, "%s",
                 nvhcq_last_error());
  uint32_t one[4] = {0};
  for (uint32_t t = 0; t < 128 && !(one[0] | one[1] | one[2] | one[3]); t++)
    if (usable[t / 32] >> (t % 32) & 1) one[t / 32] = 1u << (t % 32);
  c.tpc_mask = one, c.grid = DIM(4, 1, 1), c.cluster = DIM(4, 1, 1);
  c.dynamic_shared = 200 << 10;
  TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) ==
             (want ? want : NVHCQ_ERROR_LAUNCH_CHECK));
  TEST_CHECK(want || strstr(nvhcq_last_error(), "TPC mask") != NULL);
  c.dynamic_shared = 0;
  /* a configuration as large as before the field: no mask */
  c.cluster = DIM(0, 0, 0), c.struct_size = offsetof(nvhcq_launch_config, tpc_mask);
  TEST_CHECK(nvhcq_queue_launch_ex(q, kernel("record_smid"), &c, &at, 8) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, wait_ms(5000)) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q), nvhcq_buffer_destroy(out);
}

/* A long kernel on the compute channel and a copy on the copy channel run at once; the copy then
 * waits for the kernel through a signal. */
static void t_compute_and_copy_together(void) {
  NEED_GPU();
  nvhcq_buffer *flag = alloc(4), *src, *dst;
  nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &src);
  nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &dst);
  memset(nvhcq_buffer_host_pointer(src), 7, 1 << 20);
  nvhcq_signal *kernel_done, *copy_done, *after;
  nvhcq_signal_create(dev, 0, &kernel_done), nvhcq_signal_create(dev, 0, &copy_done),
      nvhcq_signal_create(dev, 0, &after);
  nvhcq_queue *cq, *xq;
  nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &cq), nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &xq);
  struct {
    uint64_t flag;
    uint64_t ns;
  } args = {nvhcq_buffer_gpu_address(flag), 50 * 1000 * 1000};
  TEST_CHECK(nvhcq_queue_launch(cq, kernel("spin"), DIM(1, 1, 1), DIM(32, 1, 1), 0, &args, 16) ==
             NVHCQ_SUCCESS);
  nvhcq_queue_signal(cq, kernel_done, 1);
  nvhcq_queue_copy(xq, nvhcq_buffer_gpu_address(dst), nvhcq_buffer_gpu_address(src), 1 << 20);
  nvhcq_queue_signal(xq, copy_done, 1);
  nvhcq_queue_gpu_wait(xq, kernel_done, 1);
  nvhcq_queue_signal(xq, after, 1);
  TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(copy_done, 1, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_signal_value(kernel_done) == 0, "the copy waited for the kernel");
  TEST_CHECK(nvhcq_signal_cpu_wait(after, 1, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_value(kernel_done) == 1);
  TEST_CHECK(memcmp(nvhcq_buffer_host_pointer(src), nvhcq_buffer_host_pointer(dst), 1 << 20) == 0);
  TEST_CHECK(nvhcq_signal_timestamp_ns(after) >= nvhcq_signal_timestamp_ns(kernel_done));
  nvhcq_queue_destroy(cq), nvhcq_queue_destroy(xq);
  nvhcq_signal_destroy(kernel_done), nvhcq_signal_destroy(copy_done), nvhcq_signal_destroy(after);
  nvhcq_buffer_destroy(flag), nvhcq_buffer_destroy(src), nvhcq_buffer_destroy(dst);
}

static void t_launch_checks(void) {
  NEED_GPU();
  nvhcq_kernel *k = kernel("vector_add");
  char args[28] = {0};
  struct {
    nvhcq_dim3 g, b;
    uint32_t shared;
    size_t size;
    const char *want;
  } cases[] = {
      {DIM(1, 1, 1), DIM(1025, 1, 1), 0, 28, "x*y*z <= 1024"},
      {DIM(1, 1, 1), DIM(1, 1, 65), 0, 28, "z <= 64"},
      {DIM(1, 1, 1), DIM(0, 1, 1), 0, 28, "no zero"},
      {DIM(1, 65536, 1), DIM(32, 1, 1), 0, 28, "y,z <= 65535"},
      {DIM(1, 1, 1), DIM(32, 1, 1), 300000, 28, "shared memory"},
      {DIM(1, 1, 1), DIM(32, 1, 1), 0, 24, "takes 28 bytes"},
      {DIM(1, 1, 1), DIM(32, 1, 1), 0, 40, "(32 with a C struct's trailing padding), got 40"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nvhcq_status s = nvhcq_kernel_launch_cpu_wait(k, cases[i].g, cases[i].b, cases[i].shared, args,
                                                  cases[i].size, NULL);
    TEST_CHECK_MSG(s == NVHCQ_ERROR_LAUNCH_CHECK && strstr(nvhcq_last_error(), cases[i].want) &&
                       strstr(nvhcq_last_error(), "vector_add"),
                   "case %zu: %s", i, nvhcq_last_error());
    printf("  %s\n", nvhcq_last_error());
  }
  /* A C struct of the arguments, its trailing padding included (32 bytes), is taken. */
  TEST_CHECK_MSG(nvhcq_kernel_launch_cpu_wait(k, DIM(1, 1, 1), DIM(1, 1, 1), 0, args, 32, NULL) ==
                     NVHCQ_SUCCESS,
                 "%s", nvhcq_last_error());
}

static void t_wrong_arch(void) {
  NEED_GPU();
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT;
#endif
  /* A cubin of another architecture: sm_80's, or on an sm_8x GPU (which runs sm_80 code) sm_90's.
   */
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  const char *other = strncmp(info.arch, "sm_8", 4) ? "sm_80" : "sm_90";
  char path[512];
  snprintf(path, sizeof path, "%s/device_kernels_%s.cubin", dir ? dir : ".", other);
  if (access(path, F_OK) != 0) TEST_SKIP("no cubin for another architecture built");
  nvhcq_module *m = NULL;
  nvhcq_status s = nvhcq_module_load_file(dev, path, &m);
  TEST_CHECK(s == NVHCQ_ERROR_INVALID_IMAGE && m == NULL);
  printf("  %s cubin says: %s\n", other, nvhcq_last_error());
}

/* One of the sm_90-only test modules beside the test cubins (rdc_sm_90.cubin, coop_sm_90.cubin),
 * or NULL after a visible reason. */
static nvhcq_module *load_sm90_module(const char *file) {
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT;
#endif
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", file);
  nvhcq_module *m = NULL;
  TEST_CHECK_MSG(nvhcq_module_load_file(dev, path, &m) == NVHCQ_SUCCESS, "%s: %s", path,
                 nvhcq_last_error());
  return m;
}

static int is_sm90(void) {
  nvhcq_device_info info = {.struct_size = sizeof info};
  return nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS && !strcmp(info.arch, "sm_90");
}

/* A "rounds" kernel (coop.cu's grid_rounds, coop_rdc.cu's devrt_grid_rounds) over the largest
 * grid the GPU holds at once, launched cooperatively: every value read after each grid sync must
 * be the round's, so thread i ends with i + rounds. With `refuse_larger`, one block more is
 * refused first. */
static void run_rounds(nvhcq_queue *q, nvhcq_kernel *k, uint32_t threads, int rounds,
                       int refuse_larger) {
  nvhcq_occupancy occ = {.struct_size = sizeof occ};
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_kernel_query_occupancy(k, DIM(threads, 1, 1), 0, &occ) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  uint32_t blocks = occ.blocks_per_sm * info.sm_count;
  int n = (int)(blocks * threads);
  nvhcq_buffer *buf = alloc(2ull * n * 4), *out = alloc((size_t)n * 4);
  int *h = malloc((size_t)n * 4 + 4), wrong = 0;
  struct {
    uint64_t buf, out;
    int n, rounds;
  } args = {buf ? nvhcq_buffer_gpu_address(buf) : 0, out ? nvhcq_buffer_gpu_address(out) : 0, n,
            rounds};
  nvhcq_launch_config c = {.struct_size = sizeof c,
                           .grid = DIM(blocks + 1, 1, 1),
                           .block = DIM(threads, 1, 1),
                           .flags = NVHCQ_LAUNCH_COOPERATIVE};
  if (buf && out && h && blocks) {
    if (refuse_larger) {
      TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &args, sizeof args) == NVHCQ_ERROR_LAUNCH_CHECK);
      TEST_CHECK_MSG(strstr(nvhcq_last_error(), "cooperative") != NULL, "%s", nvhcq_last_error());
    }
    c.grid.x = blocks;
    TEST_CHECK_MSG(nvhcq_queue_launch_ex(q, k, &c, &args, sizeof args) == NVHCQ_SUCCESS, "%s",
                   nvhcq_last_error());
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    if (nvhcq_buffer_read(h, out, 0, (size_t)n * 4) == NVHCQ_SUCCESS)
      for (int i = 0; i < n; i++) wrong += h[i] != i + rounds;
    TEST_CHECK_MSG(wrong == 0, "%d of %d threads read another round's value (%u blocks)", wrong, n,
                   blocks);
  }
  free(h);
  nvhcq_buffer_destroy(buf);
  nvhcq_buffer_destroy(out);
}

/* this_grid() is valid in a cooperative launch only. */
static void check_grid_valid(nvhcq_queue *q, nvhcq_kernel *kv) {
  nvhcq_buffer *out = alloc(4);
  for (int coop = 0; coop < 2 && out; coop++) {
    int valid = -1;
    nvhcq_launch_config v = {.struct_size = sizeof v,
                             .grid = DIM(2, 1, 1),
                             .block = DIM(32, 1, 1),
                             .flags = coop ? NVHCQ_LAUNCH_COOPERATIVE : 0};
    uint64_t at = nvhcq_buffer_gpu_address(out);
    TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_launch_ex(q, kv, &v, &at, sizeof at) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_read(&valid, out, 0, 4) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(valid == coop, "this_grid().is_valid() is %d in a %s launch", valid,
                   coop ? "cooperative" : "plain");
  }
  nvhcq_buffer_destroy(out);
}

#define NEED_SM90_COOPERATIVE()                                                                    \
  do {                                                                                             \
    NEED_GPU();                                                                                    \
    if (on_mock()) TEST_SKIP("the mock runs blocks one after another; grid.sync() needs a GPU");   \
    if (!is_sm90()) TEST_SKIP("the cooperative kernels are built for sm_90");                      \
  } while (0)

/* cooperative_groups' own grid.sync() (coop.cu), 100 rounds; this_grid().is_valid(). */
static void t_cooperative_grid_sync(void) {
  NEED_SM90_COOPERATIVE();
  nvhcq_module *m = load_sm90_module("coop_sm_90.cubin");
  nvhcq_kernel *k = NULL, *kv = NULL;
  nvhcq_queue *q = NULL;
  if (!m) return;
  TEST_CHECK(nvhcq_module_get_kernel(m, "grid_rounds", &k) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_module_get_kernel(m, "grid_valid", &kv) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  if (k && q) run_rounds(q, k, 256, 100, 1);
  if (kv && q) check_grid_valid(q, kv);
  nvhcq_queue_destroy(q);
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
}

/* The same barrier through libcudadevrt's cudaCGSynchronize (coop_rdc.cu), which calls the
 * driver-provided __cuda_syscall_CGS_sync that nvhcq's syscalls module implements. */
static void t_devrt_grid_sync(void) {
  NEED_SM90_COOPERATIVE();
  nvhcq_module *m = load_sm90_module("coop_rdc_sm_90.cubin");
  nvhcq_kernel *k = NULL;
  nvhcq_queue *q = NULL;
  if (!m) return;
  TEST_CHECK(nvhcq_module_get_kernel(m, "devrt_grid_rounds", &k) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  if (k && q) run_rounds(q, k, 128, 50, 0);
  nvhcq_queue_destroy(q);
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
}

/* -rdc=true code calls functions in .text sections of their own. rdc_sm_90.cubin is relocatable
 * (nvcc -rdc=true -cubin): the load links it through nvJitLink first, and the loader writes each
 * call's target (R_CUDA_ABS55_16_34); a wrong field would jump elsewhere and fault. */
static void t_call_across_sections(void) {
  NEED_GPU();
  if (on_mock()) TEST_SKIP("the mock runs no calls between functions; needs a GPU");
  if (!is_sm90()) TEST_SKIP("the -rdc kernels are built for sm_90");
  nvhcq_module *m = load_sm90_module("rdc_sm_90.cubin");
  nvhcq_kernel *k = NULL;
  if (!m) return;
  TEST_CHECK(nvhcq_module_get_kernel(m, "call_across_sections", &k) == NVHCQ_SUCCESS);
  const int n = 64 * 256;
  nvhcq_buffer *out = alloc(2 * n * 4);
  struct {
    uint64_t out;
    int k;
  } args = {out ? nvhcq_buffer_gpu_address(out) : 0, 5};
  if (k && out)
    TEST_CHECK_MSG(nvhcq_kernel_launch_cpu_wait(k, DIM(64, 1, 1), DIM(256, 1, 1), 0, &args,
                                                sizeof args, NULL) == NVHCQ_SUCCESS,
                   "%s", nvhcq_last_error());
  int *h = malloc(2 * n * 4), wrong = 0;
  if (h && out && nvhcq_buffer_read(h, out, 0, 2 * n * 4) == NVHCQ_SUCCESS)
    for (int i = 0; i < n; i++) wrong += h[2 * i] != 2 * i + 5 || h[2 * i + 1] != i + 5;
  TEST_CHECK_MSG(h && wrong == 0, "%d of %d threads wrong", wrong, n);
  free(h);
  nvhcq_buffer_destroy(out);
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
}

static void t_teardown(void) {
  NEED_GPU();
  teardown();
}

TEST_MAIN(TEST(t_list_kernels), TEST(t_occupancy_and_carveout), TEST(t_vector_add),
          TEST(t_atomic_100k), TEST(t_dynamic_shared_over_48k), TEST(t_local_16k), TEST(t_3d),
          TEST(t_alternating_shapes), TEST(t_globals), TEST(t_constant_rewrite),
          TEST(t_struct_args), TEST(t_big_params), TEST(t_chain_order),
          TEST(t_compute_and_copy_together), TEST(t_tpc_masks), TEST(t_launch_checks),
          TEST(t_wrong_arch), TEST(t_call_across_sections), TEST(t_cooperative_grid_sync),
          TEST(t_devrt_grid_sync), TEST(t_teardown))
