/* What the unit tests that run on the mock GPU share: opening its device 0, and closing it with
 * a check that the mock holds nothing afterwards, and keeping the QMDs of the grids it runs. */
#ifndef NVHCQ_MOCK_TEST_H
#define NVHCQ_MOCK_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/qmd.h"
#include "mock/mock.h"
#include "nvhcq.h"
#include "test.h"

/* Skips the calling test under AddressSanitizer, whose shadow leaves no room for device memory
 * (test.h: NO_DEVICE_ADDRESS_SPACE). */
#ifdef NO_DEVICE_ADDRESS_SPACE
#define SKIP_WITHOUT_DEVICE_ADDRESS_SPACE()                                                        \
  TEST_SKIP("AddressSanitizer's shadow memory leaves no addresses below 2^40 for device memory")
#else
#define SKIP_WITHOUT_DEVICE_ADDRESS_SPACE() (void)0
#endif

#ifdef NVHCQ_TEST_CUBIN_DEFAULT
/* Kernel `name` of the device tests' sm_90 cubin (NVHCQ_TEST_CUBIN_DIR, else the build's), loaded
 * into *mod; NULL when nvcc did not build the cubin (the caller skips). */
static inline nvhcq_kernel *load_test_kernel(nvhcq_device *dev, const char *name,
                                             nvhcq_module **mod) {
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[600];
  snprintf(path, sizeof path, "%s/device_kernels_sm_90.cubin",
           dir ? dir : NVHCQ_TEST_CUBIN_DEFAULT);
  nvhcq_kernel *k = NULL;
  if (access(path, R_OK) != 0) return NULL;
  TEST_CHECK_MSG(nvhcq_module_load_file(dev, path, mod) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (*mod) TEST_CHECK(nvhcq_module_get_kernel(*mod, name, &k) == NVHCQ_SUCCESS);
  return k;
}
#endif

/* The QMDs of the grids the mock GPU ran while mock_grids_start's hook was installed: the first
 * MOCK_GRIDS_KEPT copied as each grid started (their memory may be reused later), and how many
 * ran. The channel's thread writes them; a test reads them after it waited for the work. */
#define MOCK_GRIDS_KEPT 16
typedef struct mock_grids {
  uint32_t qmd[MOCK_GRIDS_KEPT][128];
  nvhcq_qmd_version version;
  int count;
} mock_grids;

static inline mock_grids *mock_grids_kept(void) {
  static mock_grids kept;
  return &kept;
}

static inline int mock_keep_grid(const nvhcq_mock_grid *g) {
  mock_grids *k = mock_grids_kept();
  nvhcq_qmd_version v = (nvhcq_qmd_version)g->qmd_version;
  size_t size = nvhcq_qmd_size(v);
  const uint32_t *qmd = nvhcq_mock_gpu_pointer(g->qmd_address, size);
  int n = __atomic_load_n(&k->count, __ATOMIC_RELAXED);
  if (n < MOCK_GRIDS_KEPT) {
    memset(k->qmd[n], 0, sizeof k->qmd[n]);
    if (qmd && size <= sizeof k->qmd[n]) memcpy(k->qmd[n], qmd, size);
  }
  k->version = v;
  __atomic_store_n(&k->count, n + 1, __ATOMIC_RELEASE);
  return 0;
}

/* Keeps the grids the mock runs from now on, none so far; mock_grids_stop stops it and says how
 * many ran. */
static inline void mock_grids_start(void) {
  __atomic_store_n(&mock_grids_kept()->count, 0, __ATOMIC_RELAXED);
  nvhcq_mock_set_grid_hook(mock_keep_grid);
}

static inline int mock_grids_stop(void) {
  nvhcq_mock_set_grid_hook(NULL);
  return __atomic_load_n(&mock_grids_kept()->count, __ATOMIC_ACQUIRE);
}

/* Field f of kept grid i's QMD. */
static inline uint64_t mock_grid_field(int i, nvhcq_qmd_field f) {
  const mock_grids *k = mock_grids_kept();
  return i < MOCK_GRIDS_KEPT ? nvhcq_qmd_get(k->version, k->qmd[i], f) : 0;
}

/* Declares `dev`, the mock's device 0, or ends the calling test (skipped or failed). */
#define NEED_MOCK_DEVICE(dev)                                                                      \
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();                                                             \
  nvhcq_device *dev = open_mock();                                                                 \
  if (!dev) return

/* Installs the mock and opens its device 0; NULL (with a failed check) if that fails. */
static inline nvhcq_device *open_mock(void) {
  nvhcq_mock_install();
  nvhcq_device *dev = NULL;
  nvhcq_status s = nvhcq_device_open(0, &dev);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "open: %s", nvhcq_last_error());
  return s ? NULL : dev;
}

/* Closes the device, waits for the release it leaves to the background, checks that the mock
 * holds no object, fd, channel, range or module any more, and uninstalls it. */
static inline void close_mock(nvhcq_device *dev) {
  TEST_CHECK_MSG(nvhcq_device_close(dev) == NVHCQ_SUCCESS, "close: %s", nvhcq_last_error());
  TEST_CHECK(nvhcq_device_close_wait(NULL) == NVHCQ_SUCCESS);
  nvhcq_mock_counts c = nvhcq_mock_live();
  TEST_CHECK_MSG(c.objects == 0 && c.fds == 0 && c.channels == 0 && c.ranges == 0 && c.modules == 0,
                 "live after close: %u objects, %u fds, %u channels, %u ranges, %u modules",
                 c.objects, c.fds, c.channels, c.ranges, c.modules);
  nvhcq_mock_uninstall();
}

#endif
