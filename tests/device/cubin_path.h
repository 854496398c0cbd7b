/* Where the device tests find their kernels: the mock switch, and the test cubin for a device's
 * architecture (shared by device_test.h's one-device tests and test_multi's two devices). */
#ifndef NVHCQ_CUBIN_PATH_H
#define NVHCQ_CUBIN_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvhcq.h"

/* NVHCQ_MOCK=1: the library drives its mock GPU (src/mock/) instead of the driver. */
static inline int on_mock(void) {
  const char *mock = getenv("NVHCQ_MOCK");
  return mock && *mock && strcmp(mock, "0") != 0;
}

/* The test kernels' cubin for device d's architecture (NVHCQ_TEST_CUBIN_DIR, else where this
 * build put them); on the mock, NVHCQ_MOCK_PTX names the PTX it runs them from. */
static inline void test_cubin_path_for(nvhcq_device *d, char *path, size_t size) {
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(d, &info);
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT;
#endif
#ifdef NVHCQ_TEST_PTX_FILE
  if (on_mock()) setenv("NVHCQ_MOCK_PTX", NVHCQ_TEST_PTX_FILE, 0);
#endif
  snprintf(path, size, "%s/device_kernels_%s.cubin", dir ? dir : ".", info.arch);
}

#endif
