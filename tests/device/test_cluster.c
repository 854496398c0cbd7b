/* Thread-block clusters on the GPU: what every block sees of its cluster, clusters fixed at
 * compile time, distributed shared memory, the refusals with their limits, co-resident cluster
 * counts; and parameters laid out by the cubin's table (a 64-byte aligned __grid_constant__). */
#include <stdint.h>
#include <stdio.h>

#include "device/device_test.h"

static nvhcq_module *cl_mod;

/* The cluster kernels (tests/device/cluster.cu), built for sm_90 only. */
static int need_cluster_module(void) {
  if (cl_mod) return 0;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  if (strcmp(info.arch, "sm_90")) return -1;
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT; /* where this build put them */
#endif
#ifdef NVHCQ_TEST_CLUSTER_PTX
  /* The mock runs the cubin's kernels from their PTX, built beside it; ahead of what the mock
   * was given, which lacks these kernels. */
  if (on_mock()) {
    const char *had = getenv("NVHCQ_MOCK_PTX");
    char list[2048];
    snprintf(list, sizeof list, "%s%s%s", NVHCQ_TEST_CLUSTER_PTX, had && *had ? ":" : "",
             had ? had : "");
    setenv("NVHCQ_MOCK_PTX", list, 1);
  }
#endif
  char path[512];
  snprintf(path, sizeof path, "%s/cluster_sm_90.cubin", dir ? dir : ".");
  if (nvhcq_module_load_file(dev, path, &cl_mod)) {
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
    return 1;
  }
  return 0;
}

/* The module only: for checks that refuse launches before anything runs (the mock too). */
#define NEED_CLUSTER_MODULE()                                                                      \
  do {                                                                                             \
    NEED_DEVICE();                                                                                 \
    int r_ = need_cluster_module();                                                                \
    if (r_ < 0) TEST_SKIP("clusters need an sm_90 GPU (the cluster kernels are built for it)");    \
    if (r_) return;                                                                                \
  } while (0)

/* The module, and kernels that run (on the mock too: its PTX interpreter runs a cluster's blocks
 * together, with their %cluster_* registers and each other's shared memory). */
#define NEED_CLUSTERS() NEED_CLUSTER_MODULE()

typedef struct view {
  uint32_t rank, nrank, cid[3], ncid[3], cdim[3], crank3[3];
} view;

static nvhcq_kernel *cl_kernel(const char *name) {
  nvhcq_kernel *k = NULL;
  TEST_CHECK_MSG(nvhcq_module_get_kernel(cl_mod, name, &k) == 0, "%s: %s", name,
                 nvhcq_last_error());
  return k;
}

/* Launches `k` over `grid` in clusters `cl` ({0,0,0}: the kernel's own) and waits. */
static nvhcq_status run(nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block, nvhcq_dim3 cl,
                        uint32_t shared, const void *args, size_t size, uint32_t policy) {
  nvhcq_queue *q;
  nvhcq_signal *s;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == 0);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &s) == 0);
  nvhcq_launch_config c = {.struct_size = sizeof c,
                           .grid = grid,
                           .block = block,
                           .dynamic_shared = shared,
                           .cluster = cl,
                           .cluster_policy = policy};
  nvhcq_status st = nvhcq_queue_launch_ex(q, k, &c, args, size);
  if (!st) {
    TEST_CHECK(nvhcq_queue_signal(q, s, 1) == 0);
    TEST_CHECK(nvhcq_queue_submit(q) == 0);
    st = nvhcq_signal_cpu_wait(s, 1, 10000);
    TEST_CHECK_MSG(st == 0, "%s", nvhcq_last_error());
    if (st) nvhcq_device_recover(dev); /* the next cases start from a working device */
  }
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(s);
  return st;
}

/* Every block's view against the cluster arithmetic; the number of wrong fields. */
static unsigned check_views(const view *v, nvhcq_dim3 g, const uint32_t c[3]) {
  unsigned wrong = 0;
  for (uint32_t z = 0; z < g.z; z++)
    for (uint32_t y = 0; y < g.y; y++)
      for (uint32_t x = 0; x < g.x; x++) {
        const view *b = &v[x + g.x * (y + g.y * z)];
        uint32_t id[3] = {x, y, z}, gd[3] = {g.x, g.y, g.z}, local[3];
        for (int d = 0; d < 3; d++) {
          local[d] = id[d] % c[d];
          wrong += b->cid[d] != id[d] / c[d];
          wrong += b->ncid[d] != gd[d] / c[d];
          wrong += b->cdim[d] != c[d];
          wrong += b->crank3[d] != local[d];
        }
        wrong += b->rank != local[0] + c[0] * (local[1] + c[1] * local[2]);
        wrong += b->nrank != c[0] * c[1] * c[2];
      }
  return wrong;
}

static void test_cluster_shapes(void) {
  NEED_CLUSTERS();
  static const uint32_t shapes[][3] = {{1, 1, 1}, {2, 1, 1}, {4, 1, 1}, {8, 1, 1}, {1, 2, 1},
                                       {2, 2, 1}, {2, 2, 2}, {2, 3, 1}, {1, 1, 4}, {3, 1, 1}};
  nvhcq_kernel *k = cl_kernel("cluster_any");
  nvhcq_buffer *out;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!k || !out) return;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const uint32_t *c = shapes[i];
    nvhcq_dim3 g = {c[0] * 6, c[1] * 3, c[2] * 2};
    uint64_t a = nvhcq_buffer_gpu_address(out);
    view *v = nvhcq_buffer_host_pointer(out);
    memset(v, 0xff, sizeof(view) * g.x * g.y * g.z);
    nvhcq_status s =
        run(k, g, (nvhcq_dim3){64, 1, 1}, (nvhcq_dim3){c[0], c[1], c[2]}, 0, &a, sizeof a, i % 3);
    TEST_CHECK_MSG(s == 0, "cluster (%u,%u,%u): %s", c[0], c[1], c[2], nvhcq_last_error());
    unsigned wrong = check_views(v, g, c);
    TEST_CHECK_MSG(wrong == 0, "cluster (%u,%u,%u): %u wrong fields", c[0], c[1], c[2], wrong);
  }
  /* No cluster: every block is a cluster of one. */
  uint64_t a = nvhcq_buffer_gpu_address(out);
  nvhcq_dim3 g = {5, 2, 1};
  TEST_CHECK(run(k, g, (nvhcq_dim3){32, 1, 1}, (nvhcq_dim3){0, 0, 0}, 0, &a, sizeof a, 0) == 0);
  TEST_CHECK(check_views(nvhcq_buffer_host_pointer(out), g, (uint32_t[]){1, 1, 1}) == 0);
  nvhcq_buffer_destroy(out);
}

/* Clusters of 16 need the kernel's permission; then they run. */
static void test_non_portable_16(void) {
  NEED_CLUSTERS();
  nvhcq_kernel *k = cl_kernel("cluster_any");
  nvhcq_buffer *out;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!k || !out) return;
  uint64_t a = nvhcq_buffer_gpu_address(out);
  nvhcq_dim3 g = {16 * 20, 1, 1}, c = {16, 1, 1};
  TEST_CHECK(run(k, g, (nvhcq_dim3){128, 1, 1}, c, 0, &a, sizeof a, 0) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "exceeds the portable limit of 8"), "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, 1) == 0);
  TEST_CHECK_MSG(run(k, g, (nvhcq_dim3){128, 1, 1}, c, 0, &a, sizeof a, 0) == 0, "%s",
                 nvhcq_last_error());
  TEST_CHECK(check_views(nvhcq_buffer_host_pointer(out), g, (uint32_t[]){16, 1, 1}) == 0);
  c.x = 32, g.x = 32 * 4;
  TEST_CHECK(run(k, g, (nvhcq_dim3){128, 1, 1}, c, 0, &a, sizeof a, 0) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(strstr(nvhcq_last_error(), "non-portable limit of 16"));
  TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, 0) == 0);
  nvhcq_buffer_destroy(out);
}

/* __cluster_dims__ kernels run in their clusters through the plain launch call. */
static void test_compiled_clusters(void) {
  NEED_CLUSTERS();
  nvhcq_buffer *out;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!out) return;
  uint64_t a = nvhcq_buffer_gpu_address(out);
  static const struct {
    const char *name;
    uint32_t c[3];
  } fixed[] = {{"cluster_fixed2", {2, 1, 1}}, {"cluster_fixed222", {2, 2, 2}}};
  for (int i = 0; i < 2; i++) {
    nvhcq_kernel *k = cl_kernel(fixed[i].name);
    if (!k) continue;
    nvhcq_kernel_info info = {.struct_size = sizeof info};
    TEST_CHECK(nvhcq_kernel_query_info(k, &info) == 0);
    TEST_CHECK(info.cluster.x == fixed[i].c[0] && info.cluster.y == fixed[i].c[1] &&
               info.cluster.z == fixed[i].c[2]);
    nvhcq_dim3 g = {fixed[i].c[0] * 4, fixed[i].c[1] * 2, fixed[i].c[2]};
    memset(nvhcq_buffer_host_pointer(out), 0xff, 4096);
    TEST_CHECK_MSG(
        nvhcq_kernel_launch_cpu_wait(k, g, (nvhcq_dim3){32, 1, 1}, 0, &a, sizeof a, NULL) == 0,
        "%s: %s", fixed[i].name, nvhcq_last_error());
    TEST_CHECK(check_views(nvhcq_buffer_host_pointer(out), g, fixed[i].c) == 0);
    /* Another cluster shape is refused, naming the compiled one. */
    TEST_CHECK(run(k, g, (nvhcq_dim3){32, 1, 1}, (nvhcq_dim3){1, 1, 1}, 0, &a, sizeof a, 0) ==
               NVHCQ_ERROR_LAUNCH_CHECK);
    TEST_CHECK(strstr(nvhcq_last_error(), "was compiled for clusters of"));
  }
  nvhcq_buffer_destroy(out);
}

/* Each block writes into the shared memory of the block `shift` ranks on in its cluster; after
 * the cluster barrier every inbox holds exactly its sender's values. */
static void test_distributed_shared_memory(void) {
  NEED_CLUSTERS();
  nvhcq_kernel *k = cl_kernel("cluster_dsmem");
  nvhcq_buffer *out;
  uint32_t blocks = 8 * 66;
  TEST_CHECK(nvhcq_buffer_create(dev, blocks * 1024, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!k || !out) return;
  static const uint32_t sizes[] = {2, 4, 8};
  for (int s = 0; s < 3; s++)
    for (uint32_t shift = 1; shift < sizes[s]; shift += 2) {
      uint32_t c = sizes[s];
      struct {
        uint64_t out;
        uint32_t shift;
      } args = {nvhcq_buffer_gpu_address(out), shift};
      const uint32_t *o = nvhcq_buffer_host_pointer(out);
      memset(nvhcq_buffer_host_pointer(out), 0, blocks * 1024);
      TEST_CHECK_MSG(run(k, (nvhcq_dim3){blocks, 1, 1}, (nvhcq_dim3){128, 1, 1},
                         (nvhcq_dim3){c, 1, 1}, 0, &args, sizeof args, 0) == 0,
                     "%s", nvhcq_last_error());
      unsigned wrong = 0;
      for (uint32_t b = 0; b < blocks; b++) {
        uint32_t rank = b % c, sender = b - rank + (rank + c - shift) % c;
        for (uint32_t i = 0; i < 256; i++) wrong += o[b * 256 + i] != sender * 1000u + i;
      }
      TEST_CHECK_MSG(wrong == 0, "clusters of %u, shift %u: %u of %u words wrong", c, shift, wrong,
                     blocks * 256);
    }
  nvhcq_buffer_destroy(out);
}

static void test_cluster_refusals(void) {
  NEED_CLUSTER_MODULE();
  nvhcq_kernel *k = cl_kernel("cluster_any");
  if (!k) return;
  uint64_t a = 0;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == 0);
  nvhcq_launch_config c = {
      .struct_size = sizeof c, .grid = {9, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}};
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(strstr(nvhcq_last_error(), "not a whole number of clusters"));
  c.grid.x = 8, c.cluster = (nvhcq_dim3){2, 0, 1};
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(strstr(nvhcq_last_error(), "zero dimension"));
  c.cluster = (nvhcq_dim3){3, 3, 1}, c.grid = (nvhcq_dim3){9, 9, 1};
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(strstr(nvhcq_last_error(), "a cluster of 9 blocks exceeds the portable limit"));
  c.cluster = (nvhcq_dim3){2, 1, 1}, c.cluster_policy = 7;
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_INVALID_ARGUMENT);
  c.cluster_policy = 0, c.struct_size = 8;
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "struct_size"));
  /* A cluster larger than the kernel's __launch_bounds__ allows, and the largest it allows. */
  nvhcq_kernel *bounded = cl_kernel("cluster_bounded");
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  TEST_CHECK(bounded && nvhcq_kernel_query_info(bounded, &info) == 0);
  TEST_CHECK(info.max_cluster_blocks == 4);
  c.struct_size = sizeof c;
  c.cluster = (nvhcq_dim3){8, 1, 1}, c.grid = (nvhcq_dim3){16, 1, 1},
  c.block = (nvhcq_dim3){128, 1, 1};
  TEST_CHECK(nvhcq_queue_launch_ex(q, bounded, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "exceeds the 4 its __launch_bounds__ allow"), "%s",
                 nvhcq_last_error());
  /* A cluster shape on a kernel compiled for another. */
  nvhcq_kernel *fixed = cl_kernel("cluster_fixed2");
  c.cluster = (nvhcq_dim3){4, 1, 1};
  TEST_CHECK(nvhcq_queue_launch_ex(q, fixed, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK(strstr(nvhcq_last_error(), "was compiled for clusters of (2,1,1)"));
  /* Nothing was recorded: the queue still submits and completes empty. */
  TEST_CHECK(nvhcq_queue_submit(q) == 0);
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, wait_ms(5000)) == 0);
  nvhcq_queue_destroy(q);
}

/* A cluster no GPC can hold at once: 16 blocks of ~200 KiB shared memory, one per SM, need a GPC
 * of 16 SMs. An H200's GPCs have up to 18 (it launches); CI runs this on a mock GPU whose GPCs
 * have 8 (NVHCQ_MOCK_TPCS=4,4,...), where it is refused with the limit named. */
static void test_cluster_larger_than_a_gpc(void) {
  NEED_CLUSTER_MODULE();
  nvhcq_kernel *k = cl_kernel("cluster_big_shared");
  if (!k) return;
  TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, 1) == 0);
  nvhcq_launch_config c = {.struct_size = sizeof c,
                           .grid = {16, 1, 1},
                           .block = {128, 1, 1},
                           .dynamic_shared = 200u << 10,
                           .cluster = {16, 1, 1}};
  uint32_t fit = 0;
  TEST_CHECK(nvhcq_kernel_query_max_clusters(k, &c, &fit) == 0);
  if (fit)
    TEST_SKIP("a GPC of this GPU holds 16 blocks of 200 KiB (run with NVHCQ_MOCK_TPCS=4,4,4,4)");
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == 0);
  uint64_t a = 0;
  TEST_CHECK(nvhcq_queue_launch_ex(q, k, &c, &a, sizeof a) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "must fit one GPC at once") &&
                     strstr(nvhcq_last_error(), "fit 1 per SM"),
                 "%s", nvhcq_last_error());
  nvhcq_queue_destroy(q);
}

/* Co-resident clusters; printed beside the shape so the H200 run can be set against libcuda's
 * cuOccupancyMaxActiveClusters (bench/qmd_probe.c --cluster prints libcuda's). */
static void test_max_clusters(void) {
  NEED_CLUSTER_MODULE();
  nvhcq_kernel *k = cl_kernel("cluster_big_shared");
  if (!k) return;
  TEST_CHECK(nvhcq_kernel_set_attribute(k, NVHCQ_KERNEL_NON_PORTABLE_CLUSTER, 1) == 0);
  static const uint32_t sizes[] = {1, 2, 3, 4, 6, 8, 16}, kib[] = {0, 48, 100, 150, 227};
  uint32_t prev = ~0u;
  for (int s = 0; s < 7; s++) {
    printf("  max clusters, 128 threads, cluster %2u:", sizes[s]);
    for (int i = 0; i < 5; i++) {
      nvhcq_launch_config c = {.struct_size = sizeof c,
                               .block = {128, 1, 1},
                               .dynamic_shared = kib[i] << 10,
                               .cluster = {sizes[s], 1, 1}};
      uint32_t n = 0;
      nvhcq_status st = nvhcq_kernel_query_max_clusters(k, &c, &n);
      TEST_CHECK_MSG(st == 0, "%s", nvhcq_last_error());
      printf(" %u KiB: %u", kib[i], n);
      if (i == 0) {
        TEST_CHECK(n <= prev);
        prev = n;
      }
    }
    printf("\n");
  }
}

/* A 64-byte aligned __grid_constant__ after a char: the table's offsets (as cuFuncGetParamInfo
 * reports them on the H200: 0, 48, 176, 184), by block and by pointers. */
static void test_param_layout(void) {
  NEED_CLUSTERS();
  nvhcq_kernel *k = cl_kernel("params_aligned");
  nvhcq_buffer *out;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!k || !out) return;
  static const uint32_t want_off[4] = {0, 48, 176, 184}, want_size[4] = {1, 128, 4, 8};
  for (uint32_t i = 0; i < 4; i++) {
    nvhcq_kernel_param p = {.struct_size = sizeof p};
    TEST_CHECK(nvhcq_kernel_query_param(k, i, &p) == 0);
    TEST_CHECK_MSG(p.offset == want_off[i] && p.size == want_size[i], "param %u: %u+%u", i,
                   p.offset, p.size);
  }
  nvhcq_kernel_param p = {.struct_size = sizeof p};
  TEST_CHECK(nvhcq_kernel_query_param(k, 4, &p) == NVHCQ_ERROR_NOT_FOUND);
  uint32_t blob[32];
  for (int i = 0; i < 32; i++) blob[i] = 0x1000u * (uint32_t)i + 7;
  char c = 'q';
  int x = -5;
  uint64_t o = nvhcq_buffer_gpu_address(out);
  const void *ptrs[4] = {&c, blob, &x, &o};
  for (int way = 0; way < 2; way++) {
    memset(nvhcq_buffer_host_pointer(out), 0, 4096);
    uint8_t block[192] = {0};
    block[0] = (uint8_t)c;
    memcpy(block + 48, blob, 128), memcpy(block + 176, &x, 4), memcpy(block + 184, &o, 8);
    nvhcq_queue *q;
    nvhcq_signal *s;
    TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == 0);
    TEST_CHECK(nvhcq_signal_create(dev, 0, &s) == 0);
    nvhcq_launch_config cfg = {.struct_size = sizeof cfg,
                               .grid = {1, 1, 1},
                               .block = {32, 1, 1},
                               .arg_pointers = way ? ptrs : NULL};
    TEST_CHECK_MSG(nvhcq_queue_launch_ex(q, k, &cfg, way ? NULL : block, way ? 0 : 192) == 0, "%s",
                   nvhcq_last_error());
    TEST_CHECK(nvhcq_queue_signal(q, s, 1) == 0 && nvhcq_queue_submit(q) == 0);
    TEST_CHECK(nvhcq_signal_cpu_wait(s, 1, wait_ms(5000)) == 0);
    const uint32_t *r = nvhcq_buffer_host_pointer(out);
    TEST_CHECK_MSG(!memcmp(r, blob, 128) && r[32] == 'q' && (int)r[33] == -5, "way %d", way);
    nvhcq_queue_destroy(q);
    nvhcq_signal_destroy(s);
  }
  nvhcq_buffer_destroy(out);
}

static void test_cleanup(void) {
  if (cl_mod) TEST_CHECK(nvhcq_module_unload(cl_mod) == 0);
  cl_mod = NULL;
  teardown();
}

TEST_MAIN(TEST(test_cluster_shapes), TEST(test_non_portable_16), TEST(test_compiled_clusters),
          TEST(test_distributed_shared_memory), TEST(test_cluster_refusals),
          TEST(test_cluster_larger_than_a_gpc), TEST(test_max_clusters), TEST(test_param_layout),
          TEST(test_cleanup))
