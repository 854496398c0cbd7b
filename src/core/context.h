/* The device's GPU context: channel group, context share, the compute and copy channels and
 * their engines; what opening a device and recovering it build, and closing it tears down. */
#ifndef NVHCQ_CONTEXT_H
#define NVHCQ_CONTEXT_H

#include <stdint.h>

#include "core/channel.h"
#include "driver/rm.h"
#include "util/error.h"

/* A GPU context moved out of the device: the channels, their group and context share, their
 * rings, error notifiers and debugger object, kept until the GPU is past `drained_at` on the two
 * internal timelines (the device moved to another address space meanwhile: uvm.c). */
typedef struct nvhcq_context_saved {
  int present;
  uint32_t h_group, h_ctxshare, h_copy_group, h_debugger;
  nvhcq_channel compute, copy;
  nvhcq_buffer *gpfifo_area, *cmd_area, *notifiers[2];
  uint64_t drained_at[2];
  uint32_t preemption; /* NVHCQ_OPEN_PREEMPT_BLOCK or _GRID: what RM took for the compute channel */
} nvhcq_context_saved;

/* How a context is built: the device (its facts are only read), whose driver calls, into which
 * address space, and where the channel ranges UVM would not take go. `background`: on the
 * registration thread, for the move onto UVM (uvm.c), while the device works: ring memory is
 * mapped into the new space only, through `rm`'s UVM fd, and nothing of the device changes. */
typedef struct nvhcq_context_builder {
  nvhcq_device *dev;
  nvhcq_rm *rm;
  uint32_t h_vaspace;
  int uvm;        /* the address space is UVM's: the channels are registered with it */
  int background; /* see above */
  uint32_t timeout_ms;
  uint64_t **stuck;
  uint32_t *stuck_count;
} nvhcq_context_builder;

/* Builds a context into *c (rings it already holds are kept); what was made before a failure is
 * in *c, for nvhcq_context_destroy_saved. */
nvhcq_status nvhcq_context_build(const nvhcq_context_builder *b,
                                 nvhcq_context_saved *c) NVHCQ_MUST_CHECK;
/* Chooses the copy engine (NVHCQ_COPY_ENGINE), once, before the first nvhcq_context_create. */
nvhcq_status nvhcq_context_pick_copy_engine(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* The channel group, its context share and both channels (their rings are made once, kept). */
nvhcq_status nvhcq_context_create(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* Binds the engine objects to their subchannels and sets the compute state, then waits for both
 * channels: the device is ready when this returns. */
nvhcq_status nvhcq_context_setup(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* The same for channels that follow others: each first waits for its timeline to reach
 * after[copy], and nothing waits here. */
nvhcq_status nvhcq_context_setup_after(nvhcq_device *dev, const uint64_t after[2]) NVHCQ_MUST_CHECK;
/* Moves the device's context into *out, leaving none (nvhcq_context_create makes the next). */
void nvhcq_context_take(nvhcq_device *dev, nvhcq_context_saved *out);
/* Puts a taken context back in place of the device's (which must have none). */
void nvhcq_context_put_back(nvhcq_device *dev, nvhcq_context_saved *saved);
/* Frees a taken context (stopping its compute channel first if `stop`), if there is one. */
void nvhcq_context_destroy_saved(nvhcq_device *dev, nvhcq_context_saved *saved, int stop);
/* Stops the compute channel as a fault would, unless the driver already has (a hung kernel makes
 * freeing the channel wait seconds otherwise). */
void nvhcq_context_stop_compute(nvhcq_device *dev);
/* Frees the channels and their group; their rings stay for the next nvhcq_context_create. */
void nvhcq_context_destroy(nvhcq_device *dev);
/* Frees the rings and error notifiers, once the channels are gone. */
void nvhcq_context_free_rings(nvhcq_device *dev);
/* Each channel's range of the low address space that UVM holds its context buffers in. */
#define NVHCQ_CHANNEL_VA_BYTES 0x4000000ull

#endif
