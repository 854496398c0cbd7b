/* The timeline profiler on the mock GPU: the trace of copies, signals, waits and submissions
 * (eager queues submitted twice, recorded replays, synchronous copies), its errors, that a queue
 * records no extra command while the profiler is off, and that profiled launches keep the chain
 * and the fences they have unprofiled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/queue.h"
#include "hw/qmd.h"
#include "mock/mock.h"
#include "nvhcq.h"
#include "mock_test.h"
#include "test.h"

/* How many times `needle` occurs in the file. */
static int count_in_file(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  int count = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) count++;
  return count;
}

static void t_errors(void) {
  TEST_CHECK(nvhcq_profile_stop() == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "not recording") != NULL);
  TEST_CHECK(nvhcq_profile_start(NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_profile_start("/nonexistent-dir/trace.json") == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_profile_start("/tmp/x.json") == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_profile_stop() == NVHCQ_ERROR_IO);
  TEST_CHECK(strstr(nvhcq_last_error(), "/nonexistent-dir/trace.json") != NULL);
}

static void eager_copies(nvhcq_device *dev, nvhcq_buffer *a, nvhcq_buffer *b, nvhcq_signal *sig) {
  nvhcq_queue *q = NULL;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(q, sig, 0) == NVHCQ_SUCCESS);
  for (int i = 0; i < 3; i++)
    TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(b), nvhcq_buffer_gpu_address(a),
                                4096u << i) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, sig, 1) == NVHCQ_SUCCESS);
  for (int run = 0; run < 2; run++) { /* the second run writes the first's slots again */
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS); /* the signal says 1 already */
  }
  TEST_CHECK(nvhcq_queue_destroy(q) == NVHCQ_SUCCESS);
}

static void recorded_copies(nvhcq_device *dev, nvhcq_buffer *a, nvhcq_buffer *b,
                            nvhcq_signal *sig) {
  nvhcq_queue *q = NULL;
  nvhcq_var size, value;
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_var(q, "size", 512, &size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_var(q, "value", 2, &value) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait_var(q, sig, value) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy_vars(q, nvhcq_buffer_gpu_address(b), nvhcq_buffer_gpu_address(a), 0,
                                   NVHCQ_NO_VAR, NVHCQ_NO_VAR, size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal_var(q, sig, value) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(q) == NVHCQ_SUCCESS);
  nvhcq_signal_set(sig, 2);
  for (int run = 0; run < 2; run++) {
    TEST_CHECK_MSG(nvhcq_queue_submit(q) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK_MSG(nvhcq_queue_cpu_wait_idle(q, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  }
  TEST_CHECK(nvhcq_queue_destroy(q) == NVHCQ_SUCCESS);
}

static void t_trace(void) {
  NEED_MOCK_DEVICE(dev);
  char path[] = "/tmp/nvhcq-profile-XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0);
  close(fd);
  nvhcq_buffer *a = NULL, *b = NULL;
  nvhcq_signal *sig = NULL;
  static unsigned char bytes[1 << 15];
  TEST_CHECK(nvhcq_buffer_create(dev, sizeof bytes, NVHCQ_MEMORY_DEVICE, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, sizeof bytes, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &sig) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_profile_start(path) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_write(a, 0, bytes, sizeof bytes) == NVHCQ_SUCCESS);
  eager_copies(dev, a, b, sig);
  recorded_copies(dev, a, b, sig);
  TEST_CHECK(nvhcq_buffer_read(bytes, b, 0, sizeof bytes) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_profile_stop() == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  /* Copies: 3 x 2 runs, 1 x 2 replays, a write and a read; a signal and a wait per run. */
  TEST_CHECK(count_in_file(path, "\"cat\":\"copy\",\"ph\":\"X\",\"pid\":1,\"tid\":2") == 8);
  TEST_CHECK(count_in_file(path, "\"cat\":\"copy\",\"ph\":\"X\",\"pid\":0,\"tid\":1") == 2);
  TEST_CHECK(count_in_file(path, "\"name\":\"copy 16.0 KiB\"") == 2);
  TEST_CHECK(count_in_file(path, "\"cat\":\"signal\",\"ph\":\"i\"") == 4);
  TEST_CHECK(count_in_file(path, "\"cat\":\"wait\",\"ph\":\"X\"") == 4);
  TEST_CHECK(count_in_file(path, "\"cat\":\"submit\",\"ph\":\"X\",\"pid\":0,\"tid\":0") == 4);
  TEST_CHECK(count_in_file(path, "\"ph\":\"s\"") == 4 && count_in_file(path, "\"ph\":\"f\"") == 4);
  TEST_CHECK(count_in_file(path, "\"lost_operations\":0") == 1);
  TEST_CHECK(count_in_file(path, "\"name\":\"GPU 0: NVIDIA H200") == 1);
  unlink(path);
  nvhcq_signal_destroy(sig);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_mock(dev);
}

/* The same commands make the same words with the profiler off, before and after it ran. */
static void t_off_adds_nothing(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_queue *q = NULL;
  nvhcq_signal *sig = NULL;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &sig) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  uint32_t len[3];
  for (int pass = 0; pass < 3; pass++) {
    if (pass == 1) TEST_CHECK(nvhcq_profile_start("/dev/null") == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_gpu_wait(q, sig, 0) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_copy(q, 0x1000, 0x2000, 64) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(q, sig, 1) == NVHCQ_SUCCESS);
    len[pass] = q->push.len;
    if (pass == 1) TEST_CHECK(nvhcq_profile_stop() == NVHCQ_SUCCESS);
  }
  TEST_CHECK(len[0] == len[2] && len[1] > len[0]);
  TEST_CHECK(nvhcq_queue_destroy(q) == NVHCQ_SUCCESS);
  nvhcq_signal_destroy(sig);
  close_mock(dev);
}

/* ---- launches: a grid runner that notes each grid's fence and releases ---- */

/* The fence of kept grid i (mock_test.h): its membar, task chasing, and releases. */
typedef struct grid_fence {
  uint64_t membar, chasing;
  int releases;
} grid_fence;

static grid_fence fence_of(int i) {
  grid_fence f = {mock_grid_field(i, NVHCQ_QMD_CWD_MEMBAR_TYPE),
                  mock_grid_field(i, NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE), 0};
  for (unsigned s = 0; s < NVHCQ_QMD_RELEASES; s++)
    f.releases += (int)mock_grid_field(i, NVHCQ_QMD_RELEASE0_ENABLE + s);
  return f;
}

/* Three chained launches of `k` between two signals, then a launch, a signal and a launch; run
 * with the grids kept (mock_test.h). */
static void run_launches(nvhcq_device *dev, nvhcq_kernel *k) {
  nvhcq_queue *q = NULL;
  nvhcq_signal *a = NULL, *b = NULL;
  nvhcq_dim3 one = {1, 1, 1};
  TEST_CHECK(nvhcq_signal_create(dev, 0, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, a, 1) == NVHCQ_SUCCESS);
  for (int i = 0; i < 3; i++)
    TEST_CHECK(nvhcq_queue_launch(q, k, one, (nvhcq_dim3){32, 1, 1}, 0, NULL, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, b, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, (nvhcq_dim3){64, 1, 1}, 0, NULL, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, b, 2) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, (nvhcq_dim3){64, 1, 1}, 0, NULL, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, b, 3) == NVHCQ_SUCCESS);
  mock_grids_start();
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_signal_cpu_wait(b, 3, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(mock_grids_stop() == 5);
  TEST_CHECK(nvhcq_queue_destroy(q) == NVHCQ_SUCCESS);
  nvhcq_signal_destroy(a);
  nvhcq_signal_destroy(b);
}

/* The kernels' slices in the order written, as start and duration in microseconds. */
static int kernel_slices(const char *path, double *ts, double *dur, int most) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f) && n < most) {
    const char *p = strstr(line, "\"cat\":\"kernel\"");
    if (p && sscanf(strstr(p, "\"ts\":"), "\"ts\":%lf,\"dur\":%lf", &ts[n], &dur[n]) == 2) n++;
  }
  fclose(f);
  return n;
}

/* The same launches unprofiled and profiled get the same fences: chained grids the device-scope
 * membar with task chasing, a grid whose QMD releases a signal (or ends the chain) the system
 * scope. Profiled, each grid's QMD carries one more release (its end); its start is the end of
 * the grid before it, the same release, so a kernel's slice starts where the one before ended. */
static void t_launch_fences(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_module *mod = NULL;
  nvhcq_kernel *k = load_test_kernel(dev, "empty", &mod);
  if (!k) {
    close_mock(dev);
    TEST_SKIP("no device_kernels_sm_90.cubin (nvcc did not build the test cubins)");
  }
  const uint64_t dev_scope = NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_MEMBAR;
  const uint64_t sys_scope = NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_SYSMEMBAR;
  const uint64_t want_membar[5] = {dev_scope, dev_scope, sys_scope, sys_scope, sys_scope};
  const int want_releases[5] = {0, 0, 1, 1, 1};
  char path[] = "/tmp/nvhcq-profile-XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0);
  close(fd);
  for (int profiled = 0; profiled < 2; profiled++) {
    if (profiled) TEST_CHECK(nvhcq_profile_start(path) == NVHCQ_SUCCESS);
    run_launches(dev, k);
    if (profiled) TEST_CHECK_MSG(nvhcq_profile_stop() == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    grid_fence fences[5];
    for (int i = 0; i < 5; i++) fences[i] = fence_of(i);
    for (int i = 0; i < 5; i++) {
      TEST_CHECK_MSG(fences[i].membar == want_membar[i] &&
                         fences[i].chasing == (want_membar[i] == dev_scope),
                     "profiled %d, grid %d: CWD_MEMBAR_TYPE %llu, task chasing %llu", profiled, i,
                     (unsigned long long)fences[i].membar, (unsigned long long)fences[i].chasing);
      TEST_CHECK_MSG(fences[i].releases == want_releases[i] + profiled,
                     "profiled %d, grid %d: %d releases", profiled, i, fences[i].releases);
    }
  }
  double ts[8], dur[8];
  TEST_CHECK(kernel_slices(path, ts, dur, 8) == 5);
  for (int i = 0; i + 1 < 5; i++)
    TEST_CHECK_MSG(ts[i + 1] - (ts[i] + dur[i]) < 0.0015 && ts[i + 1] - (ts[i] + dur[i]) > -0.0015,
                   "kernel %d ends at %.3f, kernel %d starts at %.3f", i, ts[i] + dur[i], i + 1,
                   ts[i + 1]);
  TEST_CHECK(count_in_file(path, "\"name\":\"empty\",\"cat\":\"kernel\"") == 5);
  TEST_CHECK(count_in_file(path, "\"grid\":\"1,1,1\",\"block\":\"64,1,1\"") == 2);
  TEST_CHECK(count_in_file(path, "\"lost_operations\":0") == 1);
  unlink(path);
  nvhcq_module_unload(mod);
  close_mock(dev);
}

TEST_MAIN({"errors", t_errors}, {"trace", t_trace}, {"off_adds_nothing", t_off_adds_nothing},
          {"launch_fences", t_launch_fences})
