/* The one door to the kernel: every open/close/ioctl/mmap/munmap of the NVIDIA driver goes
 * through this table, so a mock driver can stand in for the real one. */
#ifndef NVHCQ_DOOR_H
#define NVHCQ_DOOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct nvhcq_door_ops {
  int (*open)(const char *path, int flags);
  int (*close)(int fd);
  /* Returns 0 or -errno. */
  int (*ioctl)(int fd, unsigned long request, void *arg);
  /* Returns MAP_FAILED on error (errno set). */
  void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
  int (*munmap)(void *addr, size_t len);
  /* Reads a small text file (e.g. /proc/driver/nvidia/version); returns bytes or -1. */
  ssize_t (*read_text)(const char *path, char *buf, size_t size);
  /* Optional, NULL for the real driver: told of each module loaded at GPU address gpu_address
   * (its cubin, and the PTX it was built from when nvhcq has it), and of its unloading. The mock
   * runs kernels from their PTX. */
  void (*module_loaded)(uint64_t gpu_address, const void *cubin, size_t cubin_size, const char *ptx,
                        size_t ptx_size);
  void (*module_unloaded)(uint64_t gpu_address);
} nvhcq_door_ops;

extern const nvhcq_door_ops *nvhcq_door;

/* Replaces the door (tests); NULL restores the real driver. */
void nvhcq_door_set_ops(const nvhcq_door_ops *ops);
/* 1 while the real driver is behind the door. */
int nvhcq_door_is_real(void);

#endif
