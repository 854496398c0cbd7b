/* The library's version, and the 0.1 functions whose structs 0.2 grew by a struct_size: programs
 * built against 0.1 call these with the 0.1 layout, which is the 0.2 struct without its leading
 * struct_size (and reserved) words. Programs built against 0.2 reach the nvhcq.h inline functions
 * of the same names instead. */
#define NVHCQ_COMPAT_DEFINITIONS_ 1 /* nvhcq.h leaves out its inline functions of these names */

#include <stddef.h>
#include <string.h>

#include "nvhcq.h"

uint32_t nvhcq_version(void) {
  return NVHCQ_VERSION;
}

/* Where a 0.2 struct's 0.1 part starts, and how large the 0.1 struct was: the 0.1 part moved as a
 * whole (by a multiple of its alignment), so its fields keep their places relative to each other
 * and the 0.1 struct is the 0.2 struct's bytes from `first` through `last`. Fields added since
 * lie past `last`. */
#define NVHCQ_0_1_PART(type, first, last, size_0_1)                                                \
  _Static_assert(offsetof(type, first) % _Alignof(type) == 0 &&                                    \
                     offsetof(type, last) + sizeof(((type *)0)->last) - offsetof(type, first) ==   \
                         (size_0_1),                                                               \
                 #type " holds the 0.1 layout from " #first " on")
NVHCQ_0_1_PART(nvhcq_device_info, name, open_ms, 288);
NVHCQ_0_1_PART(nvhcq_kernel_info, name, max_dynamic_shared, 32);
NVHCQ_0_1_PART(nvhcq_occupancy, blocks_per_sm, shared_config_max, 32);

static nvhcq_status to_0_1(nvhcq_status s, void *out, const void *all, size_t first,
                           size_t size_0_1) {
  if (!s) memcpy(out, (const char *)all + first, size_0_1);
  return s;
}

NVHCQ_API nvhcq_status nvhcq_device_get_info(const nvhcq_device *dev, void *info);
nvhcq_status nvhcq_device_get_info(const nvhcq_device *dev, void *info) {
  nvhcq_device_info all = {.struct_size = sizeof all};
  nvhcq_status s = nvhcq_device_query_info(dev, info ? &all : NULL);
  return to_0_1(s, info, &all, offsetof(nvhcq_device_info, name), 288);
}

NVHCQ_API nvhcq_status nvhcq_kernel_get_info(const nvhcq_kernel *k, void *info);
nvhcq_status nvhcq_kernel_get_info(const nvhcq_kernel *k, void *info) {
  nvhcq_kernel_info all = {.struct_size = sizeof all};
  nvhcq_status s = nvhcq_kernel_query_info(k, info ? &all : NULL);
  return to_0_1(s, info, &all, offsetof(nvhcq_kernel_info, name), 32);
}

NVHCQ_API nvhcq_status nvhcq_kernel_get_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                                  uint32_t dynamic_shared, void *out);
nvhcq_status nvhcq_kernel_get_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                        uint32_t dynamic_shared, void *out) {
  nvhcq_occupancy all = {.struct_size = sizeof all};
  nvhcq_status s = nvhcq_kernel_query_occupancy(k, block, dynamic_shared, out ? &all : NULL);
  return to_0_1(s, out, &all, offsetof(nvhcq_occupancy, blocks_per_sm), 32);
}
