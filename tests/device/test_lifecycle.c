/* A thousand device lifetimes in one process: open, allocate, load the test kernels, run one and
 * check its output, unload, free, close. Afterwards the process holds the fds and the GPU the
 * free memory they had before the first, and resident memory is where it stood once nvhcq's
 * bounded caches had filled (a warm-up). Runs on the mock GPU too, and with NVHCQ_UVM=off. */
#include <stdio.h>

#include "device_test.h"

#define CYCLES 1000
/* Resident memory may differ by this much after the cycles (malloc's heap layout); a leak of
 * 1 KiB a cycle already exceeds it. */
#define RSS_SLACK_KIB 1024
/* The warm-up ends when a block of cycles leaves resident memory within this of where the block
 * began: the handle quarantine (src/util/handle.c: the last 4096 freed objects are kept to catch
 * stale handles) has filled by then. It runs at most WARMUP_MAX cycles. */
#define WARMUP_BLOCK      50
#define WARMUP_STABLE_KIB 64
#define WARMUP_MAX        1000

/* Resident pages of this process (/proc/self/statm, second field), in KiB. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = -1;
  if (f && fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  if (f) fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) >> 10);
}

#define N 256

/* One lifetime: step(in, out, n) computes out[i] = in[i] * 2 + 1; `seed` makes each cycle's input
 * its own. Returns 0, or 1 with a failed check saying where. */
static int cycle(const char *cubin, int seed) {
  nvhcq_device *d = NULL;
  nvhcq_buffer *in = NULL, *out = NULL;
  nvhcq_module *m = NULL;
  nvhcq_kernel *k = NULL;
  int host[N], back[N];
  for (int i = 0; i < N; i++) host[i] = seed + i;
  struct {
    uint64_t in, out;
    int n;
  } args;
  nvhcq_status s = nvhcq_device_open(0, &d);
  if (!s) s = nvhcq_buffer_create(d, sizeof host, NVHCQ_MEMORY_DEVICE, &in);
  if (!s) s = nvhcq_buffer_create(d, sizeof back, NVHCQ_MEMORY_DEVICE, &out);
  if (!s) s = nvhcq_buffer_write(in, 0, host, sizeof host);
  if (!s) s = nvhcq_module_load_file(d, cubin, &m);
  if (!s) s = nvhcq_module_get_kernel(m, "step", &k);
  if (!s) {
    args.in = nvhcq_buffer_gpu_address(in), args.out = nvhcq_buffer_gpu_address(out), args.n = N;
    s = nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){N, 1, 1}, 0, &args, 20,
                                     NULL);
  }
  if (!s) s = nvhcq_buffer_read(back, out, 0, sizeof back);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "cycle %d: %s", seed, nvhcq_last_error());
  int wrong = 0;
  for (int i = 0; !s && i < N; i++) wrong += back[i] != host[i] * 2 + 1;
  TEST_CHECK_MSG(wrong == 0, "cycle %d: %d of %d outputs wrong", seed, wrong, N);
  if (m) TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(in) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(out) == NVHCQ_SUCCESS);
  if (d) TEST_CHECK_MSG(nvhcq_device_close(d) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  return s || wrong;
}

/* Cycles in blocks until a block leaves resident memory where it found it; the cycles run. */
static int warm_up(const char *cubin) {
  int done = 0;
  long before = rss_kib();
  while (done < WARMUP_MAX) {
    for (int i = 0; i < WARMUP_BLOCK; i++)
      if (cycle(cubin, -1 - done - i)) return -1;
    done += WARMUP_BLOCK;
    long now = rss_kib();
    if (now - before <= WARMUP_STABLE_KIB) break;
    before = now;
  }
  return done;
}

static void t_thousand_lifetimes(void) {
  NEED_DEVICE(); /* kept open: UVM keeps the GPU registered, as for any process with a device */
  char cubin[512];
  test_cubin_path(cubin, sizeof cubin);
  if (access(cubin, R_OK)) TEST_SKIP("no test kernels for this GPU (built with nvcc)");
  uint64_t free_start = 0, free_end = 0;
  TEST_CHECK(nvhcq_device_close_wait(NULL) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_start) == NVHCQ_SUCCESS);
  int fds_start = test_count_fds();
  int warm = warm_up(cubin);
  if (warm < 0) return;
  long rss_start = rss_kib();
  for (int i = 0; i < CYCLES; i++)
    if (cycle(cubin, i)) return;
  TEST_CHECK(nvhcq_device_close_wait(NULL) == NVHCQ_SUCCESS); /* the last close's release */
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_end) == NVHCQ_SUCCESS);
  int fds_end = test_count_fds();
  long rss_end = rss_kib();
  printf("  %d warm-up and %d measured cycles: fds %d -> %d, GPU free memory %llu -> %llu KiB, "
         "resident memory %ld -> %ld KiB\n",
         warm, CYCLES, fds_start, fds_end, (unsigned long long)free_start >> 10,
         (unsigned long long)free_end >> 10, rss_start, rss_end);
  TEST_CHECK_MSG(fds_end == fds_start, "%d open fds before the cycles, %d after", fds_start,
                 fds_end);
  TEST_CHECK_MSG(free_end == free_start, "GPU free memory %llu KiB before the cycles, %llu after",
                 (unsigned long long)free_start >> 10, (unsigned long long)free_end >> 10);
  TEST_CHECK_MSG(rss_start > 0 && rss_end - rss_start <= RSS_SLACK_KIB,
                 "resident memory grew by %ld KiB over %d cycles (at most %d allowed)",
                 rss_end - rss_start, CYCLES, RSS_SLACK_KIB);
}

static void t_close(void) {
  NEED_DEVICE();
  teardown();
}

TEST_MAIN(TEST(t_thousand_lifetimes), TEST(t_close))
