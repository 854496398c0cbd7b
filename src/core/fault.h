/* Fault reports: what stopped a channel, read from UVM's fault events, the channels' error
 * notifiers and the driver's saved SM and MMU records, and what was in flight at the time. */
#ifndef NVHCQ_FAULT_H
#define NVHCQ_FAULT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/uvm.h"
#include "driver/rm.h"
#include "util/error.h"

typedef struct nvhcq_fault_state {
  uint32_t h_debugger;  /* reads SM error states and MMU fault records, 0 if refused */
  char text[1536];      /* what stopped the channels, once read ("" before; cleared by recovery) */
  pthread_mutex_t lock; /* signal waits on any thread read faults: one at a time */
  /* UVM's fault events for this process: they arrive well before the driver stops a channel. */
  int tools_fd;
  uint8_t *tools_ring;
  volatile UVM_TOOLS_EVENT_CONTROL *tools_ctl;
  uint8_t last_client;          /* client type of the last GPU fault event */
  uint64_t events_after_ns;     /* events before this time belong to channels already gone */
  char last_kernel[64];         /* the kernel most recently submitted on the compute channel */
  const char *last_kernel_from; /* the name it was copied from: not copied again */
  /* Names the kernel whose code holds GPU address `pc` and the offset into it (1), or says there
   * is none (0); the modules know, and the top of the library sets it. NULL: none is named. */
  int (*name_pc)(const nvhcq_device *dev, uint64_t pc, const char **kernel, uint64_t *offset);
  /* Writes what a kernel said before the fault (a device-side assertion) into out, "" if
   * nothing; set by the top of the library like name_pc. NULL: nothing is added. */
  void (*explain)(nvhcq_device *dev, char *out, size_t cap);
} nvhcq_fault_state;

/* Before anything else is made (the lock), and after everything else is gone. */
void nvhcq_fault_init(nvhcq_device *dev);
void nvhcq_fault_fini(nvhcq_device *dev);

/* NVHCQ_ERROR_GPU_FAULT, with what the driver recorded, once a channel has been stopped. */
nvhcq_status nvhcq_device_check_faults(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* Names `kernel` as the one most recently submitted, for the reports. */
void nvhcq_fault_note_kernel(nvhcq_device *dev, const char *kernel);
/* Names noted earlier may be freed now: the next note copies its name even from the same place. */
void nvhcq_fault_forget_kernel_names(nvhcq_device *dev);
/* After a recovery: forgets the report and the events of the channels it replaced. */
void nvhcq_fault_reset(nvhcq_device *dev);
/* "; last kernel submitted: ..., internal progress: compute N of M, copy N of M" for messages. */
const char *nvhcq_device_progress(const nvhcq_device *dev);
/* For a timeout: "; GPU 0's compute channel ... has N submitted entries it has not fetched ..."
 * for each channel whose GP_GET stands short of GP_PUT, or "" if the GPU fetched everything. */
const char *nvhcq_device_stall(nvhcq_device *dev);
/* The debugger object for a compute engine object, that lets the driver's saved SM and MMU fault
 * records be read; 0 if the driver refuses it (faults are still reported, with less detail). */
uint32_t nvhcq_fault_debugger(nvhcq_rm *rm, uint32_t h_device, uint32_t engine);
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
