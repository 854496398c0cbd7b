/* How the public ABI is kept as it grows: 0.1 names as second names of 0.2 functions, and the
 * structs the library fills for a caller that says their size. */
#ifndef NVHCQ_ABI_H
#define NVHCQ_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/error.h"

/* Exports `old_name` (a 0.1 name nvhcq.h declares deprecated) as a second name of `new_name`,
 * which this file defines: the same code, no wrapper. */
#define NVHCQ_0_1_NAME(old_name, new_name)                                                         \
  extern __typeof__(new_name) old_name __attribute__((alias(#new_name)))

/* Copies the library's `src` (`size` bytes, starting with its uint32_t struct_size) to the
 * caller's `dst`, whose struct_size says how large it is: at least `min_size` (the layout of the
 * release that added struct_size). Bytes past what the library knows are zeroed; dst's
 * struct_size is left as the caller set it. */
static inline nvhcq_status nvhcq_fill_sized(void *dst, const void *src, size_t size,
                                            size_t min_size, const char *what) {
  if (!dst) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: the struct pointer is NULL", what);
  uint32_t dst_size;
  memcpy(&dst_size, dst, sizeof dst_size);
  if (dst_size < min_size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: struct_size is %u, less than the %zu bytes of the smallest layout; set "
                      "it to sizeof the struct",
                      what, dst_size, min_size);
  size_t n = dst_size < size ? dst_size : size;
  memcpy((char *)dst + sizeof dst_size, (const char *)src + sizeof dst_size, n - sizeof dst_size);
  if (dst_size > n) memset((char *)dst + n, 0, dst_size - n);
  return NVHCQ_SUCCESS;
}

#endif
