/* The PTX interpreter's launches: blocks one after another, threads scheduled cooperatively. */
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

static void run_block(ptx_block *b) {
  for (;;) {
    bool progress = run_ready(b);
    for (uint32_t w = 0; w < b->nthreads && b->status == NVHCQ_PTX_OK; w += 32)
      progress |= warp_step(b, w);
    if (b->status != NVHCQ_PTX_OK) return;
    if (!progress) progress = barrier_step(b);
    bool live = false;
    for (uint32_t i = 0; i < b->nthreads && !live; i++) live = b->threads[i].state != TS_DONE;
    if (!live) return;
    if (!progress) {
      uint32_t i = 0;
      while (b->threads[i].state == TS_DONE) i++;
      ptx_fault(b, &b->threads[i], &b->k->insns[b->threads[i].pc], NVHCQ_PTX_FAULT_DEADLOCK, 0, 0,
                "threads wait at a barrier or warp collective that others never reach");
      return;
    }
  }
}

static void reset_threads(ptx_block *b, uint64_t *regs, unsigned char *local) {
  const nvhcq_ptx_kernel *k = b->k;
  const uint32_t *dim = b->cfg->block;
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

static nvhcq_ptx_status run_grid(ptx_block *b, uint64_t *regs, unsigned char *local) {
  const uint32_t *g = b->cfg->grid;
  for (uint32_t z = 0; z < g[2]; z++)
    for (uint32_t y = 0; y < g[1]; y++)
      for (uint32_t x = 0; x < g[0]; x++) {
        b->ctaid[0] = x;
        b->ctaid[1] = y;
        b->ctaid[2] = z;
        reset_threads(b, regs, local);
        run_block(b);
        if (b->status != NVHCQ_PTX_OK) return b->status;
      }
  return NVHCQ_PTX_OK;
}

static bool config_ok(const nvhcq_ptx_kernel *k, const nvhcq_ptx_launch_config *c) {
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  for (int i = 0; i < 3; i++)
    if (!c->grid[i] || !c->block[i]) return false;
  if (threads > 1024 || c->params_size < k->params_size) return false;
  return !(k->params_size && !c->params);
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
  ptx_block b = {.k = k, .cfg = c, .fault = fault};
  b.nthreads = c->block[0] * c->block[1] * c->block[2];
  b.dynamic_base = (k->shared_static + 15) / 16 * 16;
  b.shared_size = b.dynamic_base + c->dynamic_shared_bytes;
  b.threads = malloc(b.nthreads * sizeof *b.threads);
  uint64_t *regs = malloc((size_t)b.nthreads * (size_t)(k->nregs ? k->nregs : 1) * sizeof *regs);
  unsigned char *local = malloc((size_t)b.nthreads * k->local_size + 1);
  b.shared = malloc(b.shared_size + 1);
  b.params = malloc(k->params_size + 1);
  nvhcq_ptx_status st = NVHCQ_PTX_NO_MEMORY;
  if (b.threads && regs && local && b.shared && b.params) {
    if (k->params_size) memcpy(b.params, c->params, k->params_size);
    st = run_grid(&b, regs, local);
  }
  free(b.threads);
  free(regs);
  free(local);
  free(b.shared);
  free(b.params);
  return st;
}
