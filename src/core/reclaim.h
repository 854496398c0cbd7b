/* Deferred release: buffers the caller destroyed (and slices of unloaded modules' images) while
 * the GPU may still use them, kept until the device's timelines show the GPU has passed the last
 * work submitted before the destroy. */
#ifndef NVHCQ_RECLAIM_H
#define NVHCQ_RECLAIM_H

#include <stdint.h>

#include "core/arena.h"
#include "util/error.h"

/* One destroyed buffer, a texture pool slot (texture_slot non-zero) or else an arena slice, and
 * the timeline values (compute, copy) after which the GPU is done with it; UINT64_MAX: only once
 * the channels are gone (a broken device). */
typedef struct nvhcq_reclaim_item {
  nvhcq_buffer *buf;
  uint32_t texture_slot;
  nvhcq_arena_slice slice;
  uint64_t after[2];
} nvhcq_reclaim_item;

typedef struct nvhcq_reclaim_state {
  nvhcq_reclaim_item *items; /* oldest first: the timeline values only grow */
  uint32_t head, count, capacity;
  uint64_t fenced_entries[2]; /* channel entries submitted when the last fence was taken */
  uint64_t fence[2];          /* that fence's timeline values */
} nvhcq_reclaim_state;

/* Releases `buf` once the GPU has passed all work submitted so far, without waiting for it: a
 * timeline release goes to each channel that got work since the last one. The handle is dead at
 * once. Fails (buffer kept alive) only if a channel takes no more commands. */
nvhcq_status nvhcq_reclaim_buffer(nvhcq_buffer *buf) NVHCQ_MUST_CHECK;
/* The same for a slice of the module arena: back to its chunk once the GPU is past the work
 * submitted so far (and its addresses are not handed out again before). */
nvhcq_status nvhcq_reclaim_slice(nvhcq_device *dev,
                                 const nvhcq_arena_slice *slice) NVHCQ_MUST_CHECK;
/* The same for a texture or surface object's slot in the device's pools: kernels submitted
 * before its destroy still read its header and sampler, and the slot is not handed out again. */
nvhcq_status nvhcq_reclaim_texture_slot(nvhcq_device *dev, uint32_t slot) NVHCQ_MUST_CHECK;
/* Releases what the GPU is done with, by the timelines; cheap when nothing is due. */
void nvhcq_reclaim_poll(nvhcq_device *dev);
/* Waits for everything pending, then releases it (for an allocation that ran out of memory).
 * Returns whether anything was released. */
int nvhcq_reclaim_wait_all(nvhcq_device *dev);
/* Releases everything pending: the channels are gone or idle, the GPU touches none of it. */
void nvhcq_reclaim_all(nvhcq_device *dev);
/* How many buffers and slices wait for release. */
uint32_t nvhcq_reclaim_pending(const nvhcq_device *dev);

#endif
