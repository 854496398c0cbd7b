/* Code nvhcq loads itself (the copy kernel, the device syscalls), embedded as cubins at build
 * time. */
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
/* The device syscalls (syscalls.cu: printf, assert, malloc, free), the same way. */
extern const nvhcq_builtin_cubin nvhcq_syscall_cubins[];

#endif
