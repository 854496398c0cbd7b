/* The slow end of a device's life: UVM's unregistrations, freeing the client and closing the
 * driver's fds, done on a background thread so that closing a device returns at once. */
#ifndef NVHCQ_RELEASE_H
#define NVHCQ_RELEASE_H

#include <stdint.h>

#include "driver/rm.h"

#define NVHCQ_RELEASE_FDS 4

/* What a closed device leaves to release. */
typedef struct nvhcq_release {
  nvhcq_rm rm;                /* the client, the control and UVM fds */
  int fds[NVHCQ_RELEASE_FDS]; /* other driver fds, -1 where unused */
  uint8_t uuid[16];           /* the GPU, for UVM */
  int uvm_gpu, uvm_vaspace;   /* registered with UVM */
  uint32_t minor;             /* the GPU's /dev/nvidiaN */
  uint64_t *low_ranges;       /* low address ranges UVM holds until its fd closes, or NULL */
  uint32_t low_range_count;   /* they are returned to nvhcq_va_low() last */
  uint64_t low_range_bytes;
  /* Called first, on the releasing thread: a part of the device still working in the background
   * finishes and adds what it holds to the release. NULL if none. */
  void (*prelude)(struct nvhcq_release *r, void *arg);
  void *prelude_arg;
} nvhcq_release;

/* Releases `r` (taken over: its ranges array is freed after) on a thread of its own, or here if
 * `wait` is set or no thread can be started. */
void nvhcq_release_start(const nvhcq_release *r, int wait);
/* Waits for the releases of GPU `minor` still running. */
void nvhcq_release_join(uint32_t minor);
/* Waits for every release still running (also done at process exit). */
void nvhcq_release_join_all(void);
/* NVHCQ_CLOSE=wait: every close waits for its release. */
int nvhcq_release_wait_by_default(void);

#endif
