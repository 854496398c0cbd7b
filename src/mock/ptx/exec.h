/* The PTX interpreter's execution state: a block, its threads, and one instruction's step. */
#ifndef NVHCQ_MOCK_PTX_EXEC_H
#define NVHCQ_MOCK_PTX_EXEC_H

#include "ptx_internal.h"

/* Generic addresses of shared and local memory (cvta): windows far from host addresses. */
#define PTX_SHARED_WINDOW (1ull << 62)
#define PTX_LOCAL_WINDOW  ((1ull << 62) + (1ull << 40))
#define PTX_PARAM_WINDOW  ((1ull << 62) + (2ull << 40)) /* cvta.param: kernel parameters */
/* A shared::cluster address: (rank + 1) << 24 | offset names another block's shared memory; an
 * address below 1 << 24 is the block's own (so shared::cta addresses are cluster addresses too,
 * as in PTX). 32 bits, like the hardware's, so mapa.shared::cluster.u32 holds one. */
#define PTX_CLUSTER_SHIFT 24
#define PTX_CLUSTER_MAX   32 /* blocks in a cluster the interpreter takes */

/* TS_MBAR: at an mbarrier.try_wait whose phase has not completed (it runs again once it has);
 * TS_YIELD: let the others run once (an mbarrier.test_wait that found its phase incomplete);
 * TS_WGROUP: at a warpgroup collective (wgmma.mma_async), for its 128 threads. */
enum ptx_thread_state { TS_RUN, TS_BAR, TS_WARP, TS_CWAIT, TS_MBAR, TS_YIELD, TS_WGROUP, TS_DONE };

typedef struct ptx_thread {
  uint64_t *regs;
  unsigned char *local;
  uint32_t tid[3], linear, pc;
  uint8_t state;
  uint64_t clock;
  uint32_t arrived, waited; /* barrier.cluster.arrive and .wait passed */
} ptx_thread;

typedef struct ptx_block ptx_block;

/* The blocks that run together: a cluster (a launch without one: a cluster of one block). */
typedef struct ptx_cluster {
  ptx_block *blocks; /* by rank */
  uint32_t count, dim[3], id[3];
  uint64_t steps; /* instructions run in the launch, against cfg->max_instructions */
  uint64_t polls; /* instructions since the launch began, for cfg->cancel */
} ptx_cluster;

struct ptx_block {
  const nvhcq_ptx_kernel *k;
  const nvhcq_ptx_launch_config *cfg;
  unsigned char *shared, *params;
  size_t shared_size, dynamic_base;
  uint32_t ctaid[3], rank, cluster_ctaid[3];
  ptx_cluster *cluster;
  ptx_thread *threads;
  uint32_t nthreads;
  nvhcq_ptx_fault *fault;
  nvhcq_ptx_status status;
};

/* Runs one thread until it waits (barrier, warp collective), exits or faults. */
void ptx_run_thread(ptx_block *b, ptx_thread *t);
/* Runs the warp collective the given threads (one warp's, all at the same instruction) wait at. */
void ptx_run_collective(ptx_block *b, ptx_thread **lanes, uint32_t count);
/* Records a fault (the first only) and stops the block. */
void ptx_fault(ptx_block *b, const ptx_thread *t, const ptx_insn *in, nvhcq_ptx_fault_kind kind,
               uint64_t address, int write, const char *what);
uint64_t ptx_read(const ptx_block *b, const ptx_thread *t, const ptx_insn *in, int i, uint8_t type);
void *ptx_address(ptx_block *b, ptx_thread *t, const ptx_insn *in, const ptx_operand *o,
                  size_t size, int write);
/* A memory operand's address (register or symbol plus offset), before any translation. */
uint64_t ptx_operand_address(const ptx_block *b, const ptx_thread *t, const ptx_operand *o);
/* [a, a + size) of a state space (SP_NONE: a generic address) in host memory, or NULL. */
void *ptx_space_ptr(ptx_block *b, ptx_thread *t, uint8_t space, uint64_t a, size_t size, int write);
/* Register i of a {list} operand. */
static inline int32_t ptx_list_reg(const ptx_block *b, const ptx_operand *o, unsigned i) {
  return b->k->lists[o->list + (int32_t)i];
}

/* mbarrier.c: one mbarrier instruction; returns true when the thread stops (a try_wait whose
 * phase is not complete yet: TS_MBAR, or a test_wait that yields). */
bool ptx_mbarrier_step(ptx_block *b, ptx_thread *t, const ptx_insn *in);
/* Whether the try_wait a TS_MBAR thread waits at would now succeed. */
bool ptx_mbarrier_ready(ptx_block *b, ptx_thread *t);
/* The tensor copy's side of a barrier: bytes arrived at the barrier word p (shared memory of the
 * block dst); false (the fault recorded) when p holds no barrier. */
bool ptx_mbarrier_complete_tx(ptx_block *b, const ptx_thread *t, const ptx_insn *in,
                              unsigned char *p, uint32_t bytes);

/* tma.c: cp.async.bulk.tensor, done at once (the copy and its complete_tx). */
void ptx_tma_load(ptx_block *b, ptx_thread *t, const ptx_insn *in);

/* wgmma.c: wgmma.mma_async for the warpgroup's 128 threads (all at the same instruction). */
void ptx_run_wgmma(ptx_block *b, ptx_thread **lanes);

#endif
