/* The one door to the kernel: every open/close/ioctl/mmap/munmap of the NVIDIA driver goes
 * through this table, so a mock driver can stand in for the real one. */
#ifndef NVHCQ_KERNEL_H
#define NVHCQ_KERNEL_H

#include <stddef.h>
#include <sys/types.h>

typedef struct nvhcq_kernel_ops {
  int (*open)(const char *path, int flags);
  int (*close)(int fd);
  /* Returns 0 or -errno. */
  int (*ioctl)(int fd, unsigned long request, void *arg);
  /* Returns MAP_FAILED on error (errno set). */
  void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
  int (*munmap)(void *addr, size_t len);
  /* Reads a small text file (e.g. /proc/driver/nvidia/version); returns bytes or -1. */
  ssize_t (*read_text)(const char *path, char *buf, size_t size);
} nvhcq_kernel_ops;

extern const nvhcq_kernel_ops *nvhcq_kernel;

/* Replaces the door (tests); NULL restores the real driver. */
void nvhcq_kernel_set_ops(const nvhcq_kernel_ops *ops);

#endif
