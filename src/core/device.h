/* The device: driver objects, GPU facts, channels, the signal pool and internal queues. */
#ifndef NVHCQ_DEVICE_H
#define NVHCQ_DEVICE_H

#include <pthread.h>
#include <stdint.h>

#include "core/channel.h"
#include "core/compute.h"
#include "core/fault.h"
#include "core/memory.h"
#include "core/signal.h"
#include "driver/rm.h"
#include "hw/occupancy.h"
#include "hw/push.h"
#include "util/handle.h"

#define NVHCQ_DEVICE_MAGIC 0x6e766476u /* "nvdv" */

/* The classes chosen for a GPU from its class list. */
typedef struct nvhcq_classes {
  uint32_t usermode, gpfifo, compute, copy;
} nvhcq_classes;

struct nvhcq_device {
  uint32_t magic;
  int index;
  nvhcq_rm rm;
  int fd_dev;  /* /dev/nvidiaN, registered with the control fd */
  int fd_uvm2; /* second UVM fd for UVM_MM_INITIALIZE */
  uint32_t minor;
  uint32_t h_device, h_subdevice, h_usermode, h_vaspace, h_group, h_ctxshare;
  uint32_t h_copy_group;     /* the copy channel's own group on an asynchronous copy engine */
  uint32_t copy_engine_type; /* that engine (NV2080_ENGINE_TYPE_COPY(n)), 0: graphics group's */
  uint32_t h_debugger;       /* reads SM error states and MMU fault records, 0 if refused */
  uint64_t *stuck_va;        /* channel ranges UVM would not take again, returned at close */
  uint32_t stuck_va_count;
  nvhcq_classes classes;
  int copy_payload64; /* the copy class releases 64-bit semaphore payloads */
  nvhcq_device_info info;
  void *usermode_map;
  int usermode_fd;
  int uvm_gpu_registered, uvm_vaspace_registered;
  uint32_t timeout_ms;

  nvhcq_buffer *gpfifo_area; /* both rings and their USERD */
  nvhcq_buffer *cmd_area;    /* both command rings */
  nvhcq_buffer *notifiers[2];
  nvhcq_channel compute, copy;

  /* Signals: one page of slots and a stack of free slot indexes. */
  nvhcq_buffer *signal_page;
  uint32_t *free_slots;
  uint32_t free_slot_count;

  /* Internal timelines, one per channel, for synchronize and user copies. */
  nvhcq_signal *timeline[2];
  uint64_t timeline_value[2];
  nvhcq_push scratch; /* reused for internal submissions: no allocation once warm */

  /* The copy engine's best speed so far, in bytes per GPU nanosecond, for copies to the GPU, from
   * it and within it; measured between two releases of the copy engine, at copy_stamp and the
   * copy timeline, so a long copy's wait knows how much of it to sleep through. */
  nvhcq_signal *copy_stamp;
  double copy_rate[3];

  /* Pinned staging for copies from and to pageable memory. */
  nvhcq_buffer *staging;

  uint32_t next_host_handle;
  int broken;            /* a channel faulted or a wait timed out: recover or close */
  uint32_t generation;   /* channel generation: each recovery starts a new one */
  char last_kernel[64];  /* the kernel most recently submitted on the compute channel */
  char fault_text[1536]; /* what stopped the channels, once read ("" before; cleared by recovery) */
  pthread_mutex_t fault_lock; /* signal waits on any thread read faults: one at a time */
  /* UVM's fault events for this process: they arrive well before the driver stops a channel. */
  int tools_fd;
  uint8_t *tools_ring;
  volatile UVM_TOOLS_EVENT_CONTROL *tools_ctl;
  uint8_t last_fault_client; /* client type of the last GPU fault event */
  uint64_t events_after_ns;  /* events before this time belong to channels already gone */
  /* Names the kernel whose code holds GPU address `pc` and the offset into it (1), or says there
   * is none (0); the modules know, and the top of the library sets it. NULL: none is named. */
  int (*name_pc)(const nvhcq_device *dev, uint64_t pc, const char **kernel, uint64_t *offset);

  /* Compute. */
  int qmd_version;              /* nvhcq_qmd_version for the compute class, 0 if unknown */
  uint32_t max_shared;          /* bytes of shared memory one block may use */
  nvhcq_sm_limits sm_limits;    /* per-SM occupancy limits and shared-memory configurations */
  int debug_fence;              /* NVHCQ_DEBUG_FENCE_*: weaker or older ordering, for tests */
  int debug_one_block_carveout; /* NVHCQ_DEBUG_CARVEOUT=one-block */
  int debug_no_prefetch;        /* NVHCQ_DEBUG_NO_PREFETCH: chained grids do not prefetch */
  uint32_t cbank0_prefix[12];   /* driver words: shared and local windows, stack top */
  nvhcq_buffer *args;           /* ring of kernel arguments and QMDs, CPU-visible */
  uint64_t args_head;           /* monotonic byte position of the next chunk */
  uint64_t args_lap_start;      /* where the current lap began: all work before it had completed */
  uint64_t args_sync_at;        /* wait for the GPU before the ring reaches this (0: nothing to) */
  nvhcq_buffer *local_memory;   /* shader local memory (stacks) for every SM */
  uint32_t local_per_thread;    /* bytes of local memory each thread may use */
  uint64_t local_per_tpc;       /* bytes of it each TPC gets */
  nvhcq_queue *sync_queue;      /* for nvhcq_launch_sync */
  nvhcq_signal *sync_signal[2];
  nvhcq_module *builtin;     /* built-in kernels, loaded on first use */
  nvhcq_module *modules;     /* every loaded module, for naming the kernel at a faulting PC */
  nvhcq_kernel *copy_kernel; /* NULL when the build has none for this GPU */
  int builtin_tried;
};

/* Refuses NULL, foreign and closed device handles. */
static inline NVHCQ_MUST_CHECK nvhcq_status nvhcq_device_check(const nvhcq_device *dev) {
  return nvhcq_handle_check(dev, NVHCQ_DEVICE_MAGIC, "device", "was closed already");
}

/* The channel for a queue kind. */
static inline nvhcq_channel *nvhcq_device_channel(nvhcq_device *dev, int copy) {
  return copy ? &dev->copy : &dev->compute;
}

#endif
