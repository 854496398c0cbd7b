/* The profiler's own state, shared by its recording (profile.c) and its trace (profile_json.c). */
#ifndef NVHCQ_PROFILE_INTERNAL_H
#define NVHCQ_PROFILE_INTERNAL_H

#include <pthread.h>

#include "exec/profile.h"

/* Release slots per device, 16 bytes each (payload, then GPU time). A stamp's id, counted per
 * device from 1, is its payload and picks its slot (id % NVHCQ_PROFILE_SLOTS): an operation not
 * collected before 2^16 later stamps reuse its slots is lost (and counted). */
#define NVHCQ_PROFILE_SLOTS (1u << 16)

/* One recorded operation: a fixed record, formatted only when the trace is written. */
typedef struct nvhcq_profile_op {
  nvhcq_profile_what what;   /* a kernel's name as nvhcq_profile_kernel_name keeps it */
  uint64_t begin_id, end_id; /* its stamps; begin_id 0: no begin (a signal) */
  int copy_channel;
} nvhcq_profile_op;

/* What a queue recorded since its last reset. */
typedef struct nvhcq_profile_queue {
  nvhcq_profile_op *ops;
  uint32_t count, capacity;
  uint32_t serial;    /* the queue's number in the trace */
  uint64_t submitted; /* runs so far */
  uint64_t open_id;   /* a begin stamp, waiting for its operation (0: none) */
  /* The last stamp and where the queue's commands stood after it: a stamp asked for with no
   * command and no launch recorded since would fire at the same point, and is that one. */
  uint64_t last_id;
  uint32_t last_len;
  const uint32_t *last_qmd;
} nvhcq_profile_queue;

/* One submission of a queue: its operations as they were then. */
typedef struct nvhcq_profile_instance {
  nvhcq_profile_op *ops;
  uint32_t count, queue;
  uint64_t replay;
  int copy_channel;
  uint32_t generation; /* the device's channels it ran on: a recovery discards what they had */
  uint64_t host_start_ns, host_end_ns;
} nvhcq_profile_instance;

typedef struct nvhcq_profile_device {
  nvhcq_device *dev;
  nvhcq_buffer *slots;
  uint64_t next_id; /* the next stamp's */
  nvhcq_profile_instance *pending;
  uint32_t pending_count, pending_capacity;
  struct nvhcq_profile_device *next;
} nvhcq_profile_device;

/* One slice or instant of the trace, as numbers: its name is made when it is written. */
typedef struct nvhcq_profile_event {
  nvhcq_profile_kind kind; /* NVHCQ_PROFILE_SUBMIT: a submission, on the host track */
  const char *name;        /* a kernel's (nvhcq_profile_kernel_name), a host copy's verb */
  int device, copy_channel;
  uint32_t queue;
  uint64_t replay, ops;
  nvhcq_dim3 grid, block;
  uint64_t bytes, value;
  uint64_t begin_ns, end_ns; /* GPU clock; host clock for submissions */
  uint64_t flow;             /* links a submission to its first operation (0: none) */
  int host_copy;             /* a synchronous copy, on the host's copy track */
} nvhcq_profile_event;
#define NVHCQ_PROFILE_SUBMIT ((nvhcq_profile_kind)100)

#define NVHCQ_PROFILE_MAX_DEVICES 64

typedef struct nvhcq_profile_global {
  pthread_mutex_t lock; /* everything below but the counter */
  uint32_t next_queue;  /* atomic */
  char path[4096];
  int from_env;
  uint64_t start_ns;
  nvhcq_profile_device *devices;
  nvhcq_profile_event *events;
  size_t event_count, event_capacity;
  uint64_t lost, next_flow;
  /* Per device: the smallest GPU start minus host submission seen, to align the clocks. */
  int64_t min_delta[NVHCQ_PROFILE_MAX_DEVICES];
  int have_delta[NVHCQ_PROFILE_MAX_DEVICES];
  char device_names[NVHCQ_PROFILE_MAX_DEVICES][112];
  char **kernel_names; /* the copies nvhcq_profile_kernel_name made, each name once */
  size_t kernel_name_count, kernel_name_capacity;
} nvhcq_profile_global;

extern nvhcq_profile_global nvhcq_profile_g;

/* The slot stamp `id` was released into. */
volatile uint64_t *nvhcq_profile_slot(const nvhcq_profile_device *pd, uint64_t id);
void nvhcq_profile_collect(nvhcq_profile_device *pd, int all);
void nvhcq_profile_drain(nvhcq_profile_device *pd);
/* Turns a submission into events (its operations that completed; the others are lost). */
void nvhcq_profile_take_instance(nvhcq_profile_device *pd, const nvhcq_profile_instance *in);
/* Writes every event so far to the trace's path (under the lock). */
void nvhcq_profile_write(void);

#endif
