/* The ABI's growing structs: struct_size says what the caller has, and the library functions of
 * 0.1's names fill the 0.1 layout, as programs built against 0.1 expect. Those names are inline
 * functions in nvhcq.h for code built against 0.2; this file, like src/compat.c, does without
 * them to reach the library's own. */
#define NVHCQ_COMPAT_DEFINITIONS_ 1

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "test.h"

/* The 0.1 functions as programs built against 0.1 call them. */
nvhcq_status nvhcq_device_get_info(const nvhcq_device *dev, void *info);
nvhcq_status nvhcq_kernel_get_info(const nvhcq_kernel *k, void *info);
nvhcq_status nvhcq_kernel_get_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                        uint32_t dynamic_shared, void *out);

/* Sized structs: struct_size says what the caller has; the 0.1 entry point fills the 0.1 layout. */
static void t_sized_info(void) {
  nvhcq_device *dev = calloc(1, sizeof *dev);
  dev->magic = NVHCQ_DEVICE_MAGIC;
  snprintf(dev->info.name, sizeof dev->info.name, "NVIDIA Test");
  dev->info.memory_bytes = 123456789, dev->info.copy_engine = -1, dev->info.open_ms = 2.5;
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  TEST_CHECK(info.struct_size == sizeof info && !strcmp(info.name, "NVIDIA Test"));
  TEST_CHECK(info.memory_bytes == 123456789 && info.copy_engine == -1 && info.open_ms == 2.5);
  nvhcq_device_info unset = {0}; /* struct_size not set: refused, untouched */
  TEST_CHECK(nvhcq_device_query_info(dev, &unset) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "struct_size is 0"), "%s", nvhcq_last_error());
  TEST_CHECK(unset.name[0] == 0);
  TEST_CHECK(nvhcq_device_query_info(dev, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  /* A caller built against a later, larger struct: what this library does not know is zeroed. */
  struct {
    nvhcq_device_info info;
    unsigned char later[24];
  } larger;
  memset(&larger, 0xab, sizeof larger);
  larger.info.struct_size = sizeof larger;
  TEST_CHECK(nvhcq_device_query_info(dev, &larger.info) == NVHCQ_SUCCESS);
  TEST_CHECK(larger.info.struct_size == sizeof larger && larger.info.memory_bytes == 123456789);
  unsigned char zero[sizeof larger.later] = {0};
  TEST_CHECK(!memcmp(larger.later, zero, sizeof zero));
  /* The 0.1 layout is the 0.2 struct from `name` on: 288 bytes. */
  unsigned char old[288 + 8];
  memset(old, 0xcd, sizeof old);
  TEST_CHECK(nvhcq_device_get_info(dev, old) == NVHCQ_SUCCESS);
  const unsigned char *tail = (const unsigned char *)&info + offsetof(nvhcq_device_info, name);
  TEST_CHECK(!memcmp(old, tail, 288) && old[288] == 0xcd);
  TEST_CHECK(nvhcq_device_get_info(dev, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_get_info(NULL, old) == NVHCQ_ERROR_INVALID_ARGUMENT);
  free(dev);
  unsigned char k[32];
  TEST_CHECK(nvhcq_kernel_get_info(NULL, k) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_kernel_get_occupancy(NULL, (nvhcq_dim3){1, 1, 1}, 0, k) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
}

TEST_MAIN(TEST(t_sized_info))
