/* The timeline profiler (NVHCQ_PROFILE=trace.json, nvhcq_profile_start/_stop): what the queue
 * calls record while it runs, and nothing while it does not (one flag read). */
#ifndef NVHCQ_PROFILE_H
#define NVHCQ_PROFILE_H

#include "exec/queue.h"

/* Nonzero while the profiler records; the hooks below are called only then. */
extern int nvhcq_profile_on;
static inline int nvhcq_profiling(void) {
  return __atomic_load_n(&nvhcq_profile_on, __ATOMIC_RELAXED);
}

typedef enum nvhcq_profile_kind {
  NVHCQ_PROFILE_LAUNCH,
  NVHCQ_PROFILE_COPY,
  NVHCQ_PROFILE_SIGNAL,
  NVHCQ_PROFILE_WAIT,
} nvhcq_profile_kind;

/* What one recorded operation was, for the trace. */
typedef struct nvhcq_profile_what {
  nvhcq_profile_kind kind;
  const char *name; /* the kernel's, from nvhcq_profile_kernel_name (kept as it is) */
  nvhcq_dim3 grid, block;
  uint64_t bytes; /* a copy's */
  uint64_t value; /* a signal's or wait's */
} nvhcq_profile_what;

/* Before an operation is recorded on q: a release whose GPU time is the operation's start (the
 * last operation's end where nothing was recorded since). */
nvhcq_status nvhcq_profile_begin(nvhcq_queue *q) NVHCQ_MUST_CHECK;
/* After it: the release whose time is its end (a launch's rides on its QMD), and the operation
 * joins the queue's list as a fixed record: names and numbers are formatted when the trace is
 * written. A signal has no begin: its end is when it was released. */
nvhcq_status nvhcq_profile_end(nvhcq_queue *q, const nvhcq_profile_what *what) NVHCQ_MUST_CHECK;
/* Around a submission, which makes the queue's operations one run on the timeline. Before: the
 * times of runs that completed are collected, and those of the queue's last run waited for
 * (its commands are about to write the same slots again). After: the run is remembered. */
nvhcq_status nvhcq_profile_before_submit(nvhcq_queue *q) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_profile_after_submit(nvhcq_queue *q, uint64_t host_start_ns) NVHCQ_MUST_CHECK;
/* Kernel k's name as the trace keeps it: a copy made at its first profiled launch, which
 * outlives the module (NULL when out of memory: the trace says "kernel"). */
const char *nvhcq_profile_kernel_name(nvhcq_kernel *k);
/* The queue's operations are forgotten (reset, destroy); harmless when it has none. */
void nvhcq_profile_forget(nvhcq_queue *q);
/* A device closes: its operations' times are collected and its profiler memory freed; with
 * NVHCQ_PROFILE the trace is written. */
void nvhcq_profile_device_closing(nvhcq_device *dev);
/* A synchronous copy (nvhcq_buffer_write, _read, _copy) that began at host_start_ns and ended
 * now: a slice on the host's copy track ("write", "read", "copy"). */
void nvhcq_profile_host_copy(const nvhcq_device *dev, const char *what, uint64_t bytes,
                             uint64_t host_start_ns);
/* At device open: NVHCQ_PROFILE=path starts the profiler (once per process). */
void nvhcq_profile_from_env(void);
/* Nanoseconds of CLOCK_REALTIME, the host clock of the trace. */
uint64_t nvhcq_profile_host_ns(void);

#endif
