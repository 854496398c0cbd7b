/* A device's compute state: QMD version, SM limits and debug switches, the shader windows and
 * the driver words of constant bank 0, the shader local memory and the kernel-argument ring. */
#ifndef NVHCQ_COMPUTE_H
#define NVHCQ_COMPUTE_H

#include <stdint.h>

#include "hw/occupancy.h"
#include "hw/push.h"
#include "hw/qmd.h"
#include "util/error.h"

/* Shader windows for shared and local memory, on 4 GiB boundaries above every allocation: GPU
 * addresses no memory may take (registered host memory is checked against them). */
#define NVHCQ_SHARED_WINDOW 0x729400000000ull
#define NVHCQ_LOCAL_WINDOW  0x729300000000ull
#define NVHCQ_WINDOW_BYTES  (4ull << 30)

/* slot_of_sm's values besides a slot: an SM no slot holds, and a number no SM has. */
#define NVHCQ_TPC_NO_SLOT   0xffu
#define NVHCQ_TPC_NOT_AN_SM 0xfeu

/* NVHCQ_DEBUG_FENCE values (read_debug_knobs in compute.c says what each does). */
enum {
  NVHCQ_DEBUG_FENCE_OFF,
  NVHCQ_DEBUG_FENCE_UNORDERED,
  NVHCQ_DEBUG_FENCE_NOMEMBAR,
  NVHCQ_DEBUG_FENCE_SYSTEM,
  NVHCQ_DEBUG_FENCE_HOST_WFI,
  NVHCQ_DEBUG_FENCE_PREEXIT,
};

/* NVHCQ_DEBUG_CBANK_INVALIDATE values: how bank-0 lines of earlier launches leave the constant
 * cache (launch.c, fence_constant_cache, says why). */
enum {
  NVHCQ_DEBUG_CBANK_INVALIDATE_OFF,   /* the policy: the commands (and QMDs other than V04) */
  NVHCQ_DEBUG_CBANK_INVALIDATE_GRID,  /* "grid": every grid's QMD (the earlier policy) */
  NVHCQ_DEBUG_CBANK_INVALIDATE_NEVER, /* "never": not at all (wrong on purpose, for test_order) */
};

/* One raw write NVHCQ_DEBUG_QMD asks for: `value` into bits hi:lo of every QMD ('a') or of
 * every QMD that gets a chained successor ('c'). */
typedef struct nvhcq_qmd_poke {
  char where;
  uint16_t hi, lo;
  uint32_t value;
} nvhcq_qmd_poke;

typedef struct nvhcq_compute_state {
  int qmd_version;                       /* nvhcq_qmd_version for the compute class, 0 if unknown */
  nvhcq_qmd_launch_layout launch_layout; /* where each launch writes its own fields */
  uint32_t max_shared;                   /* bytes of shared memory one block may use */
  nvhcq_sm_limits sm_limits;      /* per-SM occupancy limits and shared-memory configurations */
  int debug_fence;                /* NVHCQ_DEBUG_FENCE_*: weaker or older ordering, for tests */
  int debug_one_block_carveout;   /* NVHCQ_DEBUG_CARVEOUT=one-block */
  int debug_no_prefetch;          /* NVHCQ_DEBUG_NO_PREFETCH: no prefetch of what comes next */
  int debug_no_bank0_prefetch;    /* NVHCQ_DEBUG_NO_BANK0_PREFETCH: bank 0 fetched on first use */
  int debug_tpc_any;              /* NVHCQ_DEBUG_TPC_ANY: masks may name any slot (tpc_probe) */
  int debug_cbank_invalidate;     /* NVHCQ_DEBUG_CBANK_INVALIDATE_* */
  int cbank_fence_commands;       /* queues' commands invalidate the constant cache */
  int cbank_invalidate_each_grid; /* every QMD invalidates its bank 0 too */
  nvhcq_qmd_poke debug_qmd[8];    /* NVHCQ_DEBUG_QMD: raw bit ranges written over QMDs */
  unsigned debug_qmd_count;
  uint32_t cbank0_prefix[12];   /* driver words: shared and local windows, stack top */
  nvhcq_buffer *args;           /* ring of kernel arguments and QMDs, CPU-visible */
  uint64_t args_head;           /* monotonic byte position of the next chunk */
  uint64_t args_lap_start;      /* where the current lap began: all work before it had completed */
  uint64_t args_sync_at;        /* wait for the GPU before the ring reaches this (0: nothing to) */
  nvhcq_buffer *local_memory;   /* shader local memory (stacks) for every SM */
  uint32_t local_per_thread;    /* bytes of local memory each thread may use */
  uint64_t local_per_tpc;       /* bytes of it each TPC gets */
  nvhcq_buffer *grid_workspace; /* cooperative grids' barrier (one channel runs them in turn) */
  uint32_t gpc_count;           /* GPCs with working TPCs */
  uint8_t gpc_sms[32];          /* working SMs of each, from the floorswept TPC masks */
  uint32_t tpc_slots;           /* GPCs x TPCs per GPC of the chip (litter values) */
  /* The TPC map, measured on first need (exec/tpc.c): the slots a launch's TPC mask may name,
   * the slot each SM answers to (or NVHCQ_TPC_NO_SLOT, NVHCQ_TPC_NOT_AN_SM), and why no slot is
   * offered when none is. */
  int tpc_mapped;
  uint32_t usable_tpcs[4];
  uint32_t usable_tpc_count;
  uint8_t slot_of_sm[256];
  char tpc_unmapped_why[200];
} nvhcq_compute_state;

/* From the compute class and the GPU's facts: QMD version, limits, bank-0 prefix, debug knobs. */
void nvhcq_compute_init(nvhcq_device *dev);
/* Frees the local memory and the argument ring. */
void nvhcq_compute_fini(nvhcq_device *dev);
/* Points the compute engine at the shader windows and at the local memory, if any yet. */
void nvhcq_compute_push_state(nvhcq_device *dev, nvhcq_push *p);
/* Grows the local memory every SM's threads use for stacks to `bytes` per thread; waits for the
 * device first (only between kernels). */
nvhcq_status nvhcq_compute_ensure_local_memory(nvhcq_device *dev, uint32_t bytes) NVHCQ_MUST_CHECK;
/* The GPU address of the workspace cooperative grids synchronise through, made on first use. */
nvhcq_status nvhcq_compute_grid_workspace(nvhcq_device *dev, uint64_t *gpu) NVHCQ_MUST_CHECK;
/* Zeroes the workspace's barrier count (after a recovery: a stopped grid may have left one). */
void nvhcq_compute_reset_grid_workspace(nvhcq_device *dev);
/* `bytes` of the argument ring at monotonic position *pos, CPU and GPU addresses. */
nvhcq_status nvhcq_compute_args_alloc(nvhcq_device *dev, uint32_t bytes, uint64_t *pos,
                                      uint8_t **cpu, uint64_t *gpu) NVHCQ_MUST_CHECK;
/* At submission of work whose arguments start at ring position `first`: refuses it if the ring
 * has reused them since, and keeps the ring from reusing them before this work completes. */
nvhcq_status nvhcq_compute_args_keep(nvhcq_device *dev, uint64_t first) NVHCQ_MUST_CHECK;

#endif
