/* The device's GPU context: channel group, context share, the compute and copy channels and
 * their engines; what opening a device and recovering it build, and closing it tears down. */
#ifndef NVHCQ_CONTEXT_H
#define NVHCQ_CONTEXT_H

#include "util/error.h"

/* Chooses the copy engine (NVHCQ_COPY_ENGINE), once, before the first nvhcq_context_create. */
nvhcq_status nvhcq_context_pick_copy_engine(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* The channel group, its context share and both channels (their rings are made once, kept). */
nvhcq_status nvhcq_context_create(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* Binds the engine objects to their subchannels and sets the compute state, then waits for both
 * channels: the device is ready when this returns. */
nvhcq_status nvhcq_context_setup(nvhcq_device *dev) NVHCQ_MUST_CHECK;
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
