/* Kernels nvhcq launches itself (device-to-device copies), embedded as cubins at build time. */
#ifndef NVHCQ_BUILTIN_H
#define NVHCQ_BUILTIN_H

#include <stddef.h>

typedef struct nvhcq_builtin_cubin {
  unsigned sm; /* 80, 89, 90, 100 */
  const unsigned char *data;
  size_t size;
} nvhcq_builtin_cubin;

/* Terminated by an entry with sm 0; empty when the build had no nvcc. */
extern const nvhcq_builtin_cubin nvhcq_builtin_cubins[];

#endif
