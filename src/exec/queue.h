/* Queues: what an eager or recorded queue holds (commands, launch-chaining state, recorded
 * variables and the places they patch), and the calls its files (queue, launch, record) share. */
#ifndef NVHCQ_QUEUE_H
#define NVHCQ_QUEUE_H

#include "core/device.h"

#define NVHCQ_QUEUE_MAGIC 0x6e767175u /* "nvqu" */

struct nvhcq_queue {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_queue_kind kind;
  nvhcq_push push;
  /* Launch state: the last QMD (to chain the next launch to), its CPU shadow (one of two: the
   * next launch is built in the other), and whether a kernel may still run when the next
   * unchained launch starts. */
  uint32_t *last_qmd;
  uint64_t last_qmd_gpu;
  uint32_t *last_qmd_shadow;
  unsigned last_qmd_stamps; /* its release slots the profiler's stamps hold, a bit each */
  uint32_t qmd_shadows[2][96];
  int launch_pending;
  int cbank_fenced;    /* the commands invalidate the constant cache before their first launch */
  uint64_t args_first; /* first argument-ring position this recording uses, ~0 if none */
  const nvhcq_kernel *last_kernel; /* the last kernel recorded, named in fault reports */

  /* Recorded queues: arguments and QMDs in arena chunks of their own, commands uploaded at
   * finish, variables and the places they patch, and a counter of completed replays. */
  const struct nvhcq_queue_ops *ops; /* eager or recorded */
  int finished;
  nvhcq_buffer **arena;
  uint32_t arena_count;
  uint64_t arena_used; /* bytes used in the last chunk */
  nvhcq_buffer *cmds;
  struct nvhcq_var_slot *vars;
  uint32_t var_count, var_capacity;
  struct nvhcq_patch *patches;
  uint32_t patch_count, patch_capacity;
  struct nvhcq_var_launch *var_launches; /* launches whose grid or block come from variables */
  uint32_t var_launch_count, var_launch_capacity;
  nvhcq_signal *done;
  uint64_t replays;
  uint32_t generation;                 /* the device's channel generation at the last replay */
  struct nvhcq_profile_queue *profile; /* what the profiler saw it record (exec/profile.h) */
};

/* How a variable's value is written at a patch site. */
typedef enum nvhcq_patch_kind {
  NVHCQ_PATCH_U8,
  NVHCQ_PATCH_U16,
  NVHCQ_PATCH_U32,
  NVHCQ_PATCH_U64,
  NVHCQ_PATCH_HI_LO,  /* two dwords, upper half first (copy-engine addresses) */
  NVHCQ_PATCH_LO_HI,  /* two dwords, lower half first (semaphore payloads) */
  NVHCQ_PATCH_U32_HI, /* the upper half alone */
  NVHCQ_PATCH_LENGTH, /* a copy length: 1 to 2^31 - 1 */
} nvhcq_patch_kind;

typedef struct nvhcq_patch {
  nvhcq_var var;
  nvhcq_patch_kind kind;
  int in_commands; /* word index into the commands (which move at finish), else a pointer */
  uint32_t word;
  void *ptr;
  int64_t add;
} nvhcq_patch;

/* A launch whose grid or block come from variables: checked again whenever one of them changes. */
typedef struct nvhcq_var_launch {
  const nvhcq_kernel *kernel;
  nvhcq_dim3 grid, block; /* as recorded, where no variable stands */
  nvhcq_var grid_var[3], block_var[3];
} nvhcq_var_launch;

typedef struct nvhcq_var_slot {
  char name[32];
  uint64_t value;
} nvhcq_var_slot;

/* Launch-side pieces the recording code shares. */
nvhcq_status nvhcq_queue_check(const nvhcq_queue *q);
nvhcq_status nvhcq_queue_add_patch(nvhcq_queue *q, nvhcq_var var, nvhcq_patch_kind kind,
                                   int in_commands, uint32_t word, void *ptr, int64_t add);
/* Remembers a launch's grid and block variables so that new values get the launch checks. */
nvhcq_status nvhcq_queue_add_var_launch(nvhcq_queue *q, const nvhcq_kernel *k, nvhcq_dim3 grid,
                                        nvhcq_dim3 block, const nvhcq_launch_vars *vars);
/* The grid and block limits of kernel `k` (NVHCQ_ERROR_LAUNCH_CHECK and why). */
nvhcq_status nvhcq_launch_check_dims(const nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block);
/* A launch kept to the TPC slots `enabled` names, whichever they are (the TPC map's census,
 * tpc.c, which finds out what they hold): the mask is not checked against the map. */
nvhcq_status nvhcq_queue_launch_census(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                       nvhcq_dim3 block, const void *args, size_t args_size,
                                       const uint32_t enabled[4]) NVHCQ_MUST_CHECK;
/* What differs between the two kinds of queue. An eager queue's launches take their arguments
 * and QMDs from the device's ring and its commands go to the channel as recorded; a recorded
 * queue keeps arguments, QMDs and commands in memory of its own and replays them. */
typedef struct nvhcq_queue_ops {
  /* Memory for one launch's bank 0 and QMD. */
  nvhcq_status (*launch_memory)(nvhcq_queue *q, uint32_t bytes, uint8_t **cpu, uint64_t *gpu);
  nvhcq_status (*submit)(nvhcq_queue *q);
  /* Before a reset or destroy: waits for what the GPU may still read, then frees it. */
  nvhcq_status (*drop)(nvhcq_queue *q);
} nvhcq_queue_ops;

extern const nvhcq_queue_ops nvhcq_eager_queue_ops;    /* queue.c */
extern const nvhcq_queue_ops nvhcq_recorded_queue_ops; /* record.c */

static inline int nvhcq_queue_is_recorded(const nvhcq_queue *q) {
  return q->ops == &nvhcq_recorded_queue_ops;
}
/* Replays submitted and not yet complete (a recovery discards them). */
uint64_t nvhcq_queue_replays_pending(nvhcq_queue *q);

/* Breaks the launch chain: the next launch starts with its own PCAS. */
void nvhcq_queue_end_chain(nvhcq_queue *q);
/* At submission: refuses a queue whose launch arguments the argument ring has since reused, and
 * keeps the ring from reusing them before this work completes. */
nvhcq_status nvhcq_queue_submit_args(const nvhcq_queue *q) NVHCQ_MUST_CHECK;
/* At submission: names the queue's last kernel as the device's, for fault reports. */
void nvhcq_queue_name_last_kernel(const nvhcq_queue *q);
/* nvhcq_queue_gpu_wait and nvhcq_queue_signal without the profiler's releases around them: the
 * *_var calls record these, then patch the words they wrote. */
nvhcq_status nvhcq_queue_record_wait(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value);
nvhcq_status nvhcq_queue_record_signal(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value);
/* Puts a signal into the last launch's QMD if it has a free release; 1 when it did. */
int nvhcq_queue_signal_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value);
/* The same for a profiler timestamp, which leaves the grid the device-scope fence a chain gives
 * it (launch.c, fence_before_successor). */
int nvhcq_queue_stamp_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value);

#endif
