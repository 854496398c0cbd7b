/* Fault reports: what stopped a channel, read from UVM's fault events, the channels' error
 * notifiers and the driver's saved SM and MMU records, and what was in flight at the time. */
#ifndef NVHCQ_FAULT_H
#define NVHCQ_FAULT_H

#include "util/error.h"

/* NVHCQ_ERROR_GPU_FAULT, with what the driver recorded, once a channel has been stopped. */
nvhcq_status nvhcq_device_check_faults(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* "; last kernel submitted: ..., internal progress: compute N of M, copy N of M" for messages. */
const char *nvhcq_device_progress(const nvhcq_device *dev);
/* The debugger object that lets the driver's saved SM and MMU fault records be read; without
 * it (the driver may refuse) faults are still reported, with less detail. */
void nvhcq_fault_attach(nvhcq_device *dev);
void nvhcq_fault_detach(nvhcq_device *dev);
/* The driver has written channel `copy`'s error notifier: it has stopped the channel's group. */
int nvhcq_fault_channel_stopped(const nvhcq_device *dev, int copy);
/* UVM's event ring for the faults it sees; without it (no /dev/nvidia-uvm-tools) faults are
 * reported when the driver stops the channel. */
void nvhcq_fault_watch_open(nvhcq_device *dev);
void nvhcq_fault_watch_close(nvhcq_device *dev);
/* Forgets events of the channels a recovery replaced. */
void nvhcq_fault_watch_reset(nvhcq_device *dev);

#endif
