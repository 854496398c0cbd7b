/* A device's texture header and sampler pools: one header and one sampler per texture or surface
 * object, at the same index (the object's handle), in CPU-written GPU memory the compute engine
 * is pointed at once, on first use. */
#ifndef NVHCQ_TEXTURE_POOL_H
#define NVHCQ_TEXTURE_POOL_H

#include <stdint.h>

#include "hw/push.h"
#include "util/error.h"

typedef struct nvhcq_device nvhcq_device;
typedef struct nvhcq_buffer nvhcq_buffer;

typedef struct nvhcq_texture_pool {
  nvhcq_buffer *headers, *samplers; /* NVHCQ_TEXTURE_POOL_SLOTS x 32 bytes each, CPU-mapped */
  uint64_t *used;                   /* bit per slot; slot 0 is never handed out */
  uint32_t next;                    /* where the search for a free slot starts */
  uint32_t live;
} nvhcq_texture_pool;

#define NVHCQ_TEXTURE_POOL_SLOTS 65536u

/* A free slot, making the pools on first use; its header and sampler written from tic and tsc
 * (8 words each; tsc may be NULL). */
nvhcq_status nvhcq_texture_pool_add(nvhcq_device *dev, const uint32_t tic[8], const uint32_t tsc[8],
                                    uint32_t *slot) NVHCQ_MUST_CHECK;
/* The object is gone: its slot is cleared and free again once the GPU has passed the work
 * submitted before (kernels in flight still read it). */
void nvhcq_texture_pool_remove(nvhcq_device *dev, uint32_t slot);
/* Clears the slot and makes it free again at once (reclaim.c, when the GPU is past it). */
void nvhcq_texture_pool_release(nvhcq_device *dev, uint32_t slot);
/* The pool methods, if the pools exist (for a compute channel's state). */
void nvhcq_texture_pool_push(nvhcq_device *dev, nvhcq_push *p);
void nvhcq_texture_pool_fini(nvhcq_device *dev);

#endif
