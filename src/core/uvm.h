/* UVM behind the open: NVHCQ_UVM's modes, the background registration of the GPU with UVM, and
 * the device's move from RM's address space onto the UVM one it made. */
#ifndef NVHCQ_UVM_H
#define NVHCQ_UVM_H

#include "core/device.h"
#include "driver/release.h"
#include "util/error.h"

/* An address space for the device: UVM's to own (externally owned, page faulting), or RM's. */
nvhcq_status nvhcq_uvm_alloc_vaspace(nvhcq_rm *rm, uint32_t h_device, int uvm_owned,
                                     uint32_t *out) NVHCQ_MUST_CHECK;
/* UVM_REGISTER_GPU unless *gpu_registered, then UVM_REGISTER_GPU_VASPACE of `h_vaspace` unless it
 * is 0; each flag is set once its call succeeded. */
nvhcq_status nvhcq_uvm_register(nvhcq_rm *rm, const uint8_t uuid[16], uint32_t h_vaspace,
                                int *gpu_registered, int *vaspace_registered) NVHCQ_MUST_CHECK;

/* At a submission: starts the registration if it has not begun, and moves the device onto UVM
 * once it is done. Cheap when there is nothing to do. The channels a move leaves behind stay
 * (idle, once drained) until nvhcq_uvm_settle, a recovery or the close: freeing them costs ~4 ms
 * of RM calls that no submission should wait for, and the close leaves them to its release. */
void nvhcq_uvm_poll_slow(nvhcq_device *dev);
static inline void nvhcq_uvm_poll(nvhcq_device *dev) {
  if (dev->uvm_not_started || dev->attach) nvhcq_uvm_poll_slow(dev);
}

/* For counts of free memory that hold still: a registration under way is waited for and the
 * device moved; channels a move left behind are waited for and freed. */
nvhcq_status nvhcq_uvm_settle(nvhcq_device *dev) NVHCQ_MUST_CHECK;

/* Waits for the registration and moves the device now; says why not if it cannot. */
nvhcq_status nvhcq_uvm_attach_now(nvhcq_device *dev) NVHCQ_MUST_CHECK;

/* Frees the channels left behind by a move, after the GPU drained them (or stopping them, if
 * `stop`: a recovery, a broken device's close). */
void nvhcq_uvm_drop_retired(nvhcq_device *dev, int stop);

/* At close, once the device is closing: a registration that is building the new channels is
 * waited for (a few ms) and what it built freed; one still registering is told to stop before it
 * builds (nvhcq_uvm_attach_hand_over then gives it to the release). */
void nvhcq_uvm_attach_stop(nvhcq_device *dev);

/* At close: a registration still running goes to the release, which waits for it and undoes
 * what it did (its UVM fds, its registrations). */
void nvhcq_uvm_attach_hand_over(nvhcq_device *dev, nvhcq_release *r);

#endif
