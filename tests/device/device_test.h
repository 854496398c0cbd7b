/* What the GPU tests share: one device and the test-kernel module (tests/device/kernels.cu built
 * for this GPU's architecture), opened on first use; tests skip visibly without a GPU. */
#ifndef NVHCQ_DEVICE_TEST_H
#define NVHCQ_DEVICE_TEST_H

#include <stdlib.h>
#include <unistd.h>

#include "nvhcq.h"
#include "test.h"

static nvhcq_device *dev;
static nvhcq_module *mod;

static int setup(void) {
  if (!dev && nvhcq_device_open(0, &dev)) {
    TEST_CHECK_MSG(0, "open: %s", nvhcq_last_error());
    return 1;
  }
  nvhcq_device_info info;
  nvhcq_device_get_info(dev, &info);
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/device_kernels_%s.cubin", dir ? dir : ".", info.arch);
  if (nvhcq_module_load_file(dev, path, &mod)) {
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
    return 1;
  }
  return 0;
}

#define NEED_GPU()                                                                                 \
  do {                                                                                             \
    if (access("/dev/nvidiactl", F_OK) != 0)                                                       \
      TEST_SKIP("needs an NVIDIA GPU (no /dev/nvidiactl on this machine)");                        \
    if (!mod && setup()) return;                                                                   \
  } while (0)

static nvhcq_kernel *kernel(const char *name) {
  nvhcq_kernel *k = NULL;
  if (nvhcq_module_get_kernel(mod, name, &k)) fprintf(stderr, "  %s\n", nvhcq_last_error());
  return k;
}

#endif
