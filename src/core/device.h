/* The device: the driver objects and GPU facts every layer reads, and one part per layer that
 * keeps state on the device (the context's channels, signals, timelines, compute, faults). */
#ifndef NVHCQ_DEVICE_H
#define NVHCQ_DEVICE_H

#include <pthread.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/channel.h"
#include "core/compute.h"
#include "core/context.h"
#include "core/fault.h"
#include "core/memory.h"
#include "core/reclaim.h"
#include "core/signal.h"
#include "core/slab.h"
#include "core/texture_pool.h"
#include "core/timeline.h"
#include "driver/rm.h"
#include "util/handle.h"

#define NVHCQ_DEVICE_MAGIC 0x6e766476u /* "nvdv" */

/* The most other devices one device maps the memory of or is mapped by. */
#define NVHCQ_MAX_PEERS 16

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
  uint32_t h_device, h_subdevice, h_usermode, h_vaspace;
  nvhcq_classes classes;
  int copy_payload64; /* the copy class releases 64-bit semaphore payloads */
  nvhcq_device_info info;
  void *usermode_map;
  int usermode_fd;
  int uvm_gpu_registered, uvm_vaspace_registered;
  /* RM's own address space: memory is mapped into it through virtual memory objects at the CPU's
   * addresses, and faults are reported from the channels' error notifiers only. So it is for
   * NVHCQ_UVM=off's whole life, and with NVHCQ_UVM=background (the default) until the device
   * moves onto the UVM address space a thread made for it (uvm.c). */
  int rm_only;
  uint32_t uvm_mode;               /* NVHCQ_OPEN_UVM_BACKGROUND, _EAGER or _OFF */
  uint32_t preemption_asked;       /* NVHCQ_OPEN_PREEMPT_BLOCK or _GRID */
  int uvm_not_started;             /* background mode: the registration starts at the first
                                      submission (its RM calls slow the open's down otherwise) */
  struct nvhcq_uvm_attach *attach; /* the background registration, until the device moves */
  nvhcq_context_saved retired;     /* the channels left behind by it, until they drain */
  char uvm_error[512];             /* why the device could not move, if it could not */
  /* Every allocation of its own (not slab blocks), so the move can map each into the new space
   * (memory.c, under alloc_lock: buffers are destroyed on whichever thread drops the last use). */
  pthread_mutex_t alloc_lock;
  pthread_mutex_t tpc_lock; /* held while the TPC map is measured (exec/tpc.c) */
  nvhcq_buffer *allocations;
  uint32_t timeout_ms;
  uint32_t wait_mode; /* NVHCQ_WAIT_*: how CPU waits poll (signal.c) */
  uint32_t next_host_handle;
  int broken; /* a channel faulted or a wait timed out: recover or close */
  /* Closing: the driver's objects are left to the release (freeing the client frees them all,
   * off the caller's thread); buffers give back only their CPU mappings and addresses. */
  int closing;
  uint32_t generation; /* channel generation: each recovery starts a new one */

  /* The GPU context (context.c): the group, its context share, the channels and their rings. */
  uint32_t h_group, h_ctxshare;
  uint32_t h_copy_group;     /* the copy channel's own group on an asynchronous copy engine */
  uint32_t copy_engine_type; /* that engine (NV2080_ENGINE_TYPE_COPY(n)), 0: graphics group's */
  uint64_t *stuck_va;        /* channel ranges UVM would not take again, returned at close */
  uint32_t stuck_va_count;
  nvhcq_buffer *gpfifo_area; /* both rings and their USERD */
  nvhcq_buffer *cmd_area;    /* both command rings */
  nvhcq_buffer *notifiers[2];
  nvhcq_channel compute, copy;

  /* Signals (signal.c): one page of slots and a stack of free slot indexes. */
  nvhcq_buffer *signal_page;
  uint32_t *free_slots;
  uint32_t free_slot_count;

  nvhcq_timeline_state timeline;     /* timeline.c */
  nvhcq_compute_state compute_state; /* compute.c */
  nvhcq_texture_pool textures;       /* texture_pool.c */
  nvhcq_fault_state fault;           /* fault.c */
  nvhcq_slabs slabs;                 /* small device buffers (slab.c) */
  int no_slabs;                      /* NVHCQ_DEBUG_NO_SLABS: each buffer its own allocation */
  nvhcq_reclaim_state reclaim;       /* reclaim.c */
  nvhcq_arena_state arena;           /* arena.c: module images */

  /* Kept by exec/, whose types are opaque here. The copy engine's best speed so far, in bytes per
   * GPU nanosecond, for copies to the GPU, from it and within it; measured between two releases
   * of the copy engine, at copy_stamp and the copy timeline, so a long copy's wait knows how much
   * of it to sleep through. */
  nvhcq_signal *copy_stamp;
  double copy_rate[3];
  nvhcq_buffer *staging;       /* pinned staging for copies from and to pageable memory */
  nvhcq_buffer *staging_small; /* the same for small copies, until a large one makes `staging` */
  nvhcq_queue *sync_queue;     /* for nvhcq_kernel_launch_cpu_wait */
  nvhcq_signal *sync_signal[2];
  nvhcq_module *builtin;     /* built-in kernels, loaded on first use */
  nvhcq_module *modules;     /* every loaded module, for naming the kernel at a faulting PC */
  nvhcq_kernel *copy_kernel; /* NULL when the build has none for this GPU */
  int builtin_tried;
  struct nvhcq_profile_device *profile; /* the timeline profiler's part, made on first use */
  /* Device printf, assert, malloc and free (exec/syscalls.c), made on first need; after_wait
   * (set by the top of the library) prints what kernels wrote once any CPU wait on the device
   * ends, as CUDA prints at synchronization. */
  struct nvhcq_syscalls *syscalls;
  void (*after_wait)(nvhcq_device *dev);

  /* Several GPUs (peer.c, under its one lock): the RM id of this GPU, its user buffers, the
   * devices whose memory this one maps (peer access it enabled), the devices that map this one's
   * memory, other GPUs registered in this device's UVM address space and the other devices' buffers
   * mapped into it. */
  uint32_t gpu_id;
  nvhcq_buffer *buffers;
  nvhcq_device *peers[NVHCQ_MAX_PEERS];
  nvhcq_device *accessors[NVHCQ_MAX_PEERS];
  uint8_t registered[NVHCQ_MAX_PEERS][16];
  uint32_t registered_count;
  struct nvhcq_import *imports;
};

/* Refuses NULL, foreign and closed device handles. */
static inline NVHCQ_MUST_CHECK nvhcq_status nvhcq_device_check(const nvhcq_device *dev) {
  return nvhcq_handle_check(dev, NVHCQ_DEVICE_MAGIC, "device", "was closed already");
}

/* Whether the device is closing (read by the registration thread too, hence atomic). */
static inline int nvhcq_device_closing(const nvhcq_device *dev) {
  return __atomic_load_n(&dev->closing, __ATOMIC_RELAXED);
}

/* A CPU wait on the device ended (at once or after sleeping, done or failed): what its kernels
 * printed is printed now (after_wait). */
static inline void nvhcq_device_waited(nvhcq_device *dev) {
  if (dev && dev->after_wait) dev->after_wait(dev);
}

/* The channel for a queue kind. */
static inline nvhcq_channel *nvhcq_device_channel(nvhcq_device *dev, int copy) {
  return copy ? &dev->copy : &dev->compute;
}

#endif
