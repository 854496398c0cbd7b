/* Physical memory without addresses, reserved ranges of GPU addresses, and mappings of the one
 * into the other (buffers of their own): the core of CUDA's virtual memory management. */
#ifndef NVHCQ_PHYSICAL_H
#define NVHCQ_PHYSICAL_H

#include <pthread.h>
#include <stdint.h>

#include "core/memory.h"

#define NVHCQ_PHYSICAL_MAGIC    0x6e767068u /* "nvph" */
#define NVHCQ_RESERVATION_MAGIC 0x6e767276u /* "nvrv" */

struct nvhcq_physical {
  uint32_t magic;
  nvhcq_device *dev;
  uint64_t size;
  uint32_t handle; /* RM memory object */
  int refs;        /* atomic: the caller's (until nvhcq_physical_destroy) and one per mapping */
};

/* A mapped piece of a range: [base, base + size), by buffer `view` (dead or alive). */
typedef struct nvhcq_reserved_piece {
  uint64_t base, size;
  nvhcq_buffer *view;
  nvhcq_device *dev;
} nvhcq_reserved_piece;

struct nvhcq_reservation {
  uint32_t magic;
  uint64_t base, size;
  pthread_mutex_t lock; /* pieces */
  nvhcq_reserved_piece *pieces;
  uint32_t count, capacity;
};

/* A mapping's buffer is being released (memory.c): its piece of the range is free again and
 * its reference to the physical memory goes. */
void nvhcq_physical_view_released(nvhcq_buffer *b);

#endif
