/* Small device buffers suballocated from 2 MiB allocations (slab.c says why), the same for
 * CPU-mapped device memory the library writes its recorded commands into, and for pinned host
 * memory. */
#ifndef NVHCQ_SLAB_H
#define NVHCQ_SLAB_H

#include <pthread.h>
#include <stddef.h>

#include "nvhcq.h"
#include "util/error.h"

#define NVHCQ_SLAB_CLASSES 12           /* 256 bytes to 512 KiB */
#define NVHCQ_SLAB_LARGEST (512u << 10) /* device buffers up to this size come from slabs */
#define NVHCQ_SLAB_KINDS   3u /* device memory; device memory mapped write-combined; pinned host */

typedef struct nvhcq_slab nvhcq_slab;

typedef struct nvhcq_slabs {
  pthread_mutex_t lock; /* any thread may create and destroy buffers */
  nvhcq_slab *heads[NVHCQ_SLAB_KINDS][NVHCQ_SLAB_CLASSES];
  nvhcq_buffer *live; /* the blocks given out (through their prev/next), freed at close */
} nvhcq_slabs;

void nvhcq_slab_init(nvhcq_device *dev);
/* Frees every slab, and the blocks never destroyed (at close: they go with the device). */
void nvhcq_slab_fini(nvhcq_device *dev);
/* A device buffer of `size` (1 to NVHCQ_SLAB_LARGEST bytes), aligned to its size class. */
nvhcq_status nvhcq_slab_alloc(nvhcq_device *dev, size_t size, nvhcq_buffer **out) NVHCQ_MUST_CHECK;
/* The same in device memory the CPU writes through a write-combined mapping
 * (NVHCQ_MEMORY_DEVICE_MAPPED): for the library's own small uploads, such as recorded commands. */
nvhcq_status nvhcq_slab_alloc_mapped(nvhcq_device *dev, size_t size,
                                     nvhcq_buffer **out) NVHCQ_MUST_CHECK;
/* Pinned host memory (NVHCQ_MEMORY_HOST) of 1 to NVHCQ_SLAB_LARGEST bytes, 4 KiB-aligned. */
nvhcq_status nvhcq_slab_alloc_host(nvhcq_device *dev, size_t size,
                                   nvhcq_buffer **out) NVHCQ_MUST_CHECK;
/* The allocation a slab buffer's block lies in. */
nvhcq_buffer *nvhcq_slab_memory(const nvhcq_buffer *b);
/* Frees the slabs no buffer uses (nvhcq_device_get_free_memory counts them as free). */
void nvhcq_slab_trim(nvhcq_device *dev);
/* Gives a slab buffer's block back (when the GPU is past it: reclaim.c calls this). */
void nvhcq_slab_free(nvhcq_buffer *b);

#endif
