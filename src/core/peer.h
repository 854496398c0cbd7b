/* Several GPUs in one process: peer access between devices, other devices' buffers mapped into a
 * device's address space at their own addresses, and the bookkeeping that undoes it. */
#ifndef NVHCQ_CORE_PEER_H
#define NVHCQ_CORE_PEER_H

#include "core/device.h"

/* 1 if `dev` maps `owner`'s user buffers (nvhcq_device_enable_peer(dev, owner) succeeded). */
int nvhcq_peer_enabled(nvhcq_device *dev, nvhcq_device *owner);
/* Maps `owner`'s signal page into `dev`'s address space (once), so that dev's queues can wait on
 * and release owner's signals. */
nvhcq_status nvhcq_peer_import_signals(nvhcq_device *dev, nvhcq_device *owner);
/* A user buffer was made: it joins its device's list and is mapped for the devices with access. */
nvhcq_status nvhcq_peer_buffer_created(nvhcq_buffer *b);
/* A buffer goes: its mappings in other devices go first. */
void nvhcq_peer_buffer_released(nvhcq_buffer *b);
/* A device closes: what it mapped of others and what others mapped of it go. */
void nvhcq_peer_device_closing(nvhcq_device *dev);

#endif
