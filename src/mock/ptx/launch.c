/* The PTX interpreter's launches: clusters one after another, the threads of a cluster's blocks
 * scheduled cooperatively. */
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One warp: runs its collective once every live lane waits at one. Returns true on progress. */
static bool warp_step(ptx_block *b, uint32_t first) {
  ptx_thread *lanes[32];
  uint32_t count = 0, end = first + 32 < b->nthreads ? first + 32 : b->nthreads;
  for (uint32_t i = first; i < end; i++) {
    ptx_thread *t = &b->threads[i];
    if (t->state == TS_DONE) continue;
    if (t->state != TS_WARP) return false;
    lanes[count++] = t;
  }
  if (!count) return false;
  ptx_run_collective(b, lanes, count);
  return true;
}

/* One warpgroup (128 threads from `first`): runs its wgmma once all of them wait at it. Returns
 * true on progress. */
static bool warpgroup_step(ptx_block *b, uint32_t first) {
  ptx_thread *lanes[128];
  uint32_t waiting = 0, end = first + 128 < b->nthreads ? first + 128 : b->nthreads;
  for (uint32_t i = first; i < end; i++) waiting += b->threads[i].state == TS_WGROUP;
  if (!waiting) return false;
  for (uint32_t i = first; i < first + 128; i++) {
    ptx_thread *t = i < end ? &b->threads[i] : NULL;
    if (t && t->state == TS_WGROUP && t->pc == b->threads[first].pc) {
      lanes[i - first] = t;
      continue;
    }
    if (t && t->state != TS_DONE && t->state != TS_WGROUP) return false; /* not there yet */
    ptx_thread *w = &b->threads[first];
    ptx_fault(b, w, &b->k->insns[w->pc], NVHCQ_PTX_FAULT_UNSUPPORTED, 0, 0,
              "wgmma needs its warpgroup's 128 threads at the same instruction (one exited, "
              "is missing from the block or diverged)");
    return false;
  }
  ptx_run_wgmma(b, lanes);
  for (uint32_t i = 0; i < 128 && b->status == NVHCQ_PTX_OK; i++) {
    lanes[i]->pc++;
    lanes[i]->state = TS_RUN;
  }
  return true;
}

/* Threads at an mbarrier whose phase has completed, and threads that yielded, run again. */
static bool wake_step(ptx_block *b) {
  bool progress = false;
  for (uint32_t i = 0; i < b->nthreads; i++) {
    ptx_thread *t = &b->threads[i];
    if (t->state == TS_YIELD || (t->state == TS_MBAR && ptx_mbarrier_ready(b, t))) {
      t->state = TS_RUN;
      progress = true;
    }
  }
  return progress;
}

/* Every live thread waits at bar.sync: all go on. */
static bool barrier_step(ptx_block *b) {
  uint32_t waiting = 0;
  for (uint32_t i = 0; i < b->nthreads; i++) {
    if (b->threads[i].state == TS_DONE) continue;
    if (b->threads[i].state != TS_BAR) return false;
    waiting++;
  }
  for (uint32_t i = 0; i < b->nthreads; i++)
    if (b->threads[i].state == TS_BAR) {
      b->threads[i].state = TS_RUN;
      b->threads[i].pc++;
    }
  return waiting > 0;
}

static bool run_ready(ptx_block *b) {
  bool ran = false;
  for (uint32_t i = 0; i < b->nthreads && b->status == NVHCQ_PTX_OK; i++)
    if (b->threads[i].state == TS_RUN) {
      ptx_run_thread(b, &b->threads[i]);
      ran = true;
    }
  return ran;
}

/* Lets on the threads at barrier.cluster.wait whose phase every live thread of the cluster has
 * arrived at (exited threads count as arrived). Returns true on progress. */
static bool cluster_barrier_step(ptx_cluster *cl) {
  uint32_t least = UINT32_MAX;
  for (uint32_t r = 0; r < cl->count; r++)
    for (uint32_t i = 0; i < cl->blocks[r].nthreads; i++) {
      const ptx_thread *t = &cl->blocks[r].threads[i];
      if (t->state != TS_DONE && t->arrived < least) least = t->arrived;
    }
  bool progress = false;
  for (uint32_t r = 0; r < cl->count; r++)
    for (uint32_t i = 0; i < cl->blocks[r].nthreads; i++) {
      ptx_thread *t = &cl->blocks[r].threads[i];
      if (t->state != TS_CWAIT || t->waited >= least) continue;
      t->waited++;
      t->pc++;
      t->state = TS_RUN;
      progress = true;
    }
  return progress;
}

/* Runs what can run in one block; returns true on progress. */
static bool block_step(ptx_block *b) {
  bool progress = run_ready(b);
  for (uint32_t w = 0; w < b->nthreads && b->status == NVHCQ_PTX_OK; w += 32)
    progress |= warp_step(b, w);
  for (uint32_t w = 0; w < b->nthreads && b->status == NVHCQ_PTX_OK; w += 128)
    progress |= warpgroup_step(b, w);
  if (b->status == NVHCQ_PTX_OK) progress |= wake_step(b);
  if (b->status == NVHCQ_PTX_OK && !progress) progress = barrier_step(b);
  return progress;
}

/* The first thread not done in the cluster, or NULL when all are. */
static ptx_thread *first_live(ptx_cluster *cl, ptx_block **in) {
  for (uint32_t r = 0; r < cl->count; r++)
    for (uint32_t i = 0; i < cl->blocks[r].nthreads; i++)
      if (cl->blocks[r].threads[i].state != TS_DONE) {
        *in = &cl->blocks[r];
        return &cl->blocks[r].threads[i];
      }
  return NULL;
}

/* The cluster's first fault (its blocks record one at most between them). */
static nvhcq_ptx_status cluster_status(const ptx_cluster *cl) {
  for (uint32_t r = 0; r < cl->count; r++)
    if (cl->blocks[r].status != NVHCQ_PTX_OK) return cl->blocks[r].status;
  return NVHCQ_PTX_OK;
}

/* Runs the blocks of a cluster together until every thread is done or one faults. */
static nvhcq_ptx_status run_cluster(ptx_cluster *cl) {
  for (;;) {
    bool progress = false;
    for (uint32_t r = 0; r < cl->count && !cluster_status(cl); r++)
      progress |= block_step(&cl->blocks[r]);
    nvhcq_ptx_status st = cluster_status(cl);
    if (st) return st;
    if (!progress) progress = cluster_barrier_step(cl);
    ptx_block *b = NULL;
    ptx_thread *t = first_live(cl, &b);
    if (!t) return NVHCQ_PTX_OK;
    if (!progress) {
      ptx_fault(b, t, &b->k->insns[t->pc], NVHCQ_PTX_FAULT_DEADLOCK, 0, 0,
                "threads wait at a barrier, warp collective or mbarrier phase that others "
                "never reach");
      return b->status;
    }
  }
}

static void reset_threads(ptx_block *b) {
  const nvhcq_ptx_kernel *k = b->k;
  const uint32_t *dim = b->cfg->block;
  uint64_t *regs = b->threads[0].regs;
  unsigned char *local = b->threads[0].local;
  memset(regs, 0, (size_t)b->nthreads * (size_t)k->nregs * sizeof *regs);
  memset(local, 0, (size_t)b->nthreads * k->local_size);
  memset(b->shared, 0, b->shared_size);
  for (uint32_t i = 0; i < b->nthreads; i++) {
    ptx_thread *t = &b->threads[i];
    memset(t, 0, sizeof *t);
    t->regs = regs + (size_t)i * (size_t)k->nregs;
    t->local = local + (size_t)i * k->local_size;
    t->linear = i;
    t->tid[0] = i % dim[0];
    t->tid[1] = i / dim[0] % dim[1];
    t->tid[2] = i / (dim[0] * dim[1]);
  }
}

/* Places the cluster at cluster id (x, y, z): its blocks' ids and ranks, fresh threads. */
static void start_cluster(ptx_cluster *cl, uint32_t x, uint32_t y, uint32_t z) {
  cl->id[0] = x, cl->id[1] = y, cl->id[2] = z;
  for (uint32_t r = 0; r < cl->count; r++) {
    ptx_block *b = &cl->blocks[r];
    b->rank = r;
    b->cluster_ctaid[0] = r % cl->dim[0];
    b->cluster_ctaid[1] = r / cl->dim[0] % cl->dim[1];
    b->cluster_ctaid[2] = r / (cl->dim[0] * cl->dim[1]);
    for (int d = 0; d < 3; d++) b->ctaid[d] = cl->id[d] * cl->dim[d] + b->cluster_ctaid[d];
    reset_threads(b);
  }
}

static nvhcq_ptx_status run_grid(ptx_cluster *cl, const uint32_t *g) {
  for (uint32_t z = 0; z < g[2] / cl->dim[2]; z++)
    for (uint32_t y = 0; y < g[1] / cl->dim[1]; y++)
      for (uint32_t x = 0; x < g[0] / cl->dim[0]; x++) {
        start_cluster(cl, x, y, z);
        nvhcq_ptx_status st = run_cluster(cl);
        if (st != NVHCQ_PTX_OK) return st;
      }
  return NVHCQ_PTX_OK;
}

static bool config_ok(const nvhcq_ptx_kernel *k, const nvhcq_ptx_launch_config *c) {
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  bool clustered = c->cluster[0] || c->cluster[1] || c->cluster[2];
  uint64_t blocks = 1;
  for (int i = 0; i < 3; i++) {
    if (!c->grid[i] || !c->block[i]) return false;
    if (clustered && (!c->cluster[i] || c->grid[i] % c->cluster[i])) return false;
    blocks *= clustered ? c->cluster[i] : 1;
  }
  if (threads > 1024 || blocks > PTX_CLUSTER_MAX || c->params_size < k->params_size) return false;
  return !(k->params_size && !c->params);
}

/* One block's storage: its threads, their registers and local memory, its shared memory. */
static bool block_alloc(ptx_block *b) {
  const nvhcq_ptx_kernel *k = b->k;
  b->threads = calloc(b->nthreads, sizeof *b->threads);
  b->shared = malloc(b->shared_size + 1);
  if (!b->threads || !b->shared) return false;
  b->threads[0].regs =
      malloc((size_t)b->nthreads * (size_t)(k->nregs ? k->nregs : 1) * sizeof(uint64_t));
  b->threads[0].local = malloc((size_t)b->nthreads * k->local_size + 1);
  return b->threads[0].regs && b->threads[0].local;
}

static void block_free(ptx_block *b) {
  if (b->threads) {
    free(b->threads[0].regs);
    free(b->threads[0].local);
  }
  free(b->threads);
  free(b->shared);
}

static nvhcq_ptx_status launch(const nvhcq_ptx_kernel *k, const nvhcq_ptx_launch_config *c,
                               nvhcq_ptx_fault *fault) {
  ptx_cluster cl = {.dim = {1, 1, 1}, .count = 1};
  if (c->cluster[0]) {
    memcpy(cl.dim, c->cluster, sizeof cl.dim);
    cl.count = cl.dim[0] * cl.dim[1] * cl.dim[2];
  }
  ptx_block blocks[PTX_CLUSTER_MAX];
  memset(blocks, 0, sizeof blocks);
  cl.blocks = blocks;
  unsigned char *params = malloc(k->params_size + 1);
  bool ok = params != NULL;
  for (uint32_t r = 0; r < cl.count; r++) {
    ptx_block *b = &blocks[r];
    *b = (ptx_block){.k = k, .cfg = c, .fault = fault, .params = params, .cluster = &cl};
    b->nthreads = c->block[0] * c->block[1] * c->block[2];
    b->dynamic_base = (k->shared_static + 15) / 16 * 16;
    b->shared_size = b->dynamic_base + c->dynamic_shared_bytes;
    ok = ok && block_alloc(b);
  }
  nvhcq_ptx_status st = NVHCQ_PTX_NO_MEMORY;
  if (ok) {
    if (k->params_size) memcpy(params, c->params, k->params_size);
    st = run_grid(&cl, c->grid);
  }
  for (uint32_t r = 0; r < cl.count; r++) block_free(&blocks[r]);
  free(params);
  return st;
}

nvhcq_ptx_status nvhcq_ptx_launch(const nvhcq_ptx_kernel *k, const nvhcq_ptx_launch_config *c,
                                  nvhcq_ptx_fault *fault) {
  if (fault) memset(fault, 0, sizeof *fault);
  if (!k || !c || !config_ok(k, c)) return NVHCQ_PTX_INVALID;
  if (k->unsupported[0]) {
    if (fault) {
      fault->kind = NVHCQ_PTX_FAULT_UNSUPPORTED;
      snprintf(fault->what, sizeof fault->what, "%s", k->unsupported);
    }
    return NVHCQ_PTX_UNSUPPORTED;
  }
  return launch(k, c, fault);
}
