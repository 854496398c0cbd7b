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

typedef struct nvhcq_device nvhcq_device;
typedef struct nvhcq_module nvhcq_module;
/* The module of built-in kernels for the device's GPU, loaded on first use; NULL when the build
 * has none for it (copy.c). */
nvhcq_module *nvhcq_builtin_module(nvhcq_device *dev);

#endif
