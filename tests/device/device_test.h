/* What the GPU tests share: one device and the test-kernel module (tests/device/kernels.cu built
 * for this GPU's architecture), opened on first use; tests skip visibly without a GPU. */
#ifndef NVHCQ_DEVICE_TEST_H
#define NVHCQ_DEVICE_TEST_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubin_path.h"
#include "nvhcq.h"
#include "test.h"

static nvhcq_device *dev;
static nvhcq_module *mod;

/* Skips the calling test on the mock GPU, saying why it needs real hardware. */
#define SKIP_ON_MOCK(why)                                                                          \
  do {                                                                                             \
    if (on_mock()) TEST_SKIP("on the mock GPU: " why);                                             \
  } while (0)

/* A wait's bound: the GPU's, and twelve times it on the mock, whose interpreter runs a kernel
 * hundreds of times slower and slower again under the sanitizers on CI's two cores. */
static inline int wait_ms(int gpu_ms) {
  return on_mock() ? 12 * gpu_ms : gpu_ms;
}

static inline int have_gpu(void) {
  return access("/dev/nvidiactl", F_OK) == 0 || on_mock();
}

/* Opens device 0 if it is not open yet; 1 (with a failed check) if it cannot be opened. The
 * device moves onto UVM at once (unless NVHCQ_UVM=off): free-memory figures and fault reports
 * then do not change partway through a test. test_device's t_work_carries_across_the_move tests
 * the move made at a submission. */
static inline int open_device(void) {
  int opened = !dev;
  if (!dev && nvhcq_device_open(0, &dev)) {
    TEST_CHECK_MSG(0, "open: %s", nvhcq_last_error());
    return 1;
  }
  /* The same for the device's own bound (waits that name none, such as a launch's), unless
   * NVHCQ_TIMEOUT_MS sets it: t_occupancy_and_carveout's launches take 6-8 s each on the mock on
   * an idle 2-core machine, too close to the 10 s default. */
  if (opened && on_mock() && !getenv("NVHCQ_TIMEOUT_MS"))
    TEST_CHECK(nvhcq_device_set_timeout(dev, (uint32_t)wait_ms(10000)) == NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_device_attach_uvm(dev);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS || s == NVHCQ_ERROR_UNSUPPORTED, "moving onto UVM: %s",
                 nvhcq_last_error());
  return 0;
}

/* The test kernels' cubin for the open device's architecture (cubin_path.h). */
static inline void test_cubin_path(char *path, size_t size) {
  test_cubin_path_for(dev, path, size);
}

/* Opens the device and loads the test kernels for its architecture. */
static inline int setup(void) {
  if (open_device()) return 1;
  char path[512];
  test_cubin_path(path, sizeof path);
  if (nvhcq_module_load_file(dev, path, &mod)) {
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
    return 1;
  }
  return 0;
}

/* Unloads the test kernels and closes the device; the next NEED_* opens them again. */
static inline void teardown(void) {
  if (mod) TEST_CHECK(nvhcq_module_unload(mod) == NVHCQ_SUCCESS);
  if (dev)
    TEST_CHECK_MSG(nvhcq_device_close(dev) == NVHCQ_SUCCESS, "close: %s", nvhcq_last_error());
  mod = NULL, dev = NULL;
}

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    if (!have_gpu()) TEST_SKIP("needs an NVIDIA GPU (no /dev/nvidiactl on this machine)");         \
  } while (0)

/* The device only. */
#define NEED_DEVICE()                                                                              \
  do {                                                                                             \
    SKIP_WITHOUT_GPU();                                                                            \
    if (open_device()) return;                                                                     \
  } while (0)

/* The device and the test kernels. */
#define NEED_GPU()                                                                                 \
  do {                                                                                             \
    SKIP_WITHOUT_GPU();                                                                            \
    if (!mod && setup()) return;                                                                   \
  } while (0)

static inline nvhcq_kernel *kernel(const char *name) {
  nvhcq_kernel *k = NULL;
  if (nvhcq_module_get_kernel(mod, name, &k)) fprintf(stderr, "  %s\n", nvhcq_last_error());
  return k;
}

#endif
