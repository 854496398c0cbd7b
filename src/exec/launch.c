/* Kernel launches into queues: the checks, bank 0 and the QMD of each launch, chaining onto the
 * previous launch with its fence, launches with variables, and nvhcq_kernel_launch_cpu_wait. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compute.h"
#include "exec/module.h"
#include "exec/profile.h"
#include "exec/queue.h"
#include "exec/tpc.h"
#include "hw/occupancy.h"
#include "util/align.h"
#include "util/abi.h"

nvhcq_status nvhcq_launch_check_dims(const nvhcq_kernel *k, nvhcq_dim3 g, nvhcq_dim3 b) {
  const char *n = k->cubin->name;
  uint64_t threads = (uint64_t)b.x * b.y * b.z;
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: grid (%u,%u,%u) and block (%u,%u,%u) "
                      "must have no zero dimension",
                      n, g.x, g.y, g.z, b.x, b.y, b.z);
  if (b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: block (%u,%u,%u) exceeds the limits "
                      "x,y <= 1024, z <= 64, x*y*z <= 1024",
                      n, b.x, b.y, b.z);
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: grid (%u,%u,%u) exceeds the limits "
                      "x <= 2^31-1, y,z <= 65535",
                      n, g.x, g.y, g.z);
  if (threads > k->max_threads)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: %llu threads per block, but it uses %u "
                      "registers per thread (or has launch bounds), which allows at most %u",
                      n, (unsigned long long)threads, k->cubin->registers, k->max_threads);
  const uint32_t *r = k->cubin->reqntid;
  if (r[0] && (b.x != r[0] || b.y != (r[1] ? r[1] : 1) || b.z != (r[2] ? r[2] : 1)))
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s requires block (%u,%u,%u), got (%u,%u,%u)", n, r[0],
                      r[1] ? r[1] : 1, r[2] ? r[2] : 1, b.x, b.y, b.z);
  return NVHCQ_SUCCESS;
}

static nvhcq_status check_shared(const nvhcq_device *dev, const nvhcq_kernel *k, uint32_t dynamic) {
  uint64_t base = nvhcq_kernel_static_shared(k);
  uint32_t max = dev->compute_state.max_shared;
  if (base + dynamic > (uint64_t)max + NVHCQ_RESERVED_SHARED)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: %u bytes of dynamic shared memory plus "
                      "%u static exceed the %u bytes a block may use on %s",
                      k->cubin->name, dynamic, k->static_shared, max, dev->info.arch);
  return NVHCQ_SUCCESS;
}

/* The shared-memory configuration of a launch. Occupancy decides by default: the smallest
 * configuration that reaches the most resident blocks the kernel's threads, registers and
 * shared memory allow (the rest of the SM's storage stays L1 cache), and no smaller than what
 * libcuda asks for the same shape (measured on the H200: see occupancy.c). */
static void carveout_for(const nvhcq_compute_state *cs, const nvhcq_kernel *k, nvhcq_dim3 b,
                         uint32_t shared, uint32_t cfg[3]) {
  nvhcq_carveout_choice c; /* check_shared made one block fit */
  nvhcq_choose_carveout(&cs->sm_limits, b.x * b.y * b.z, k->cubin->registers, shared,
                        k->carveout_preference, &c);
  if (cs->debug_one_block_carveout) c.min_bytes = c.target_bytes = c.fits_one_bytes;
  cfg[0] = c.min_bytes, cfg[1] = c.target_bytes, cfg[2] = c.max_bytes;
}

/* NVHCQ_DEBUG_QMD's writes for `where` (compute.c). */
static void poke_qmd(const nvhcq_compute_state *cs, uint32_t *qmd, char where) {
  for (unsigned i = 0; i < cs->debug_qmd_count; i++)
    if (cs->debug_qmd[i].where == where)
      nvhcq_qmd_write_bits(qmd, cs->debug_qmd[i].hi, cs->debug_qmd[i].lo, cs->debug_qmd[i].value);
}

/* One launch, checked and with its cluster resolved: what record_launch writes. */
typedef struct launch_req {
  nvhcq_dim3 grid, block;
  uint32_t dynamic_shared;
  uint32_t cluster[3]; /* blocks per cluster; 0s: no cluster */
  int load_balancing;  /* NVHCQ_CLUSTER_POLICY_LOAD_BALANCING */
  const void *args;
  size_t args_size;
  const void *const *arg_pointers;
  int cooperative;      /* NVHCQ_LAUNCH_COOPERATIVE */
  int masked;           /* tpc_mask confines the grid */
  uint32_t tpc_mask[4]; /* TPC slots its blocks may run on */
  int census;           /* the TPC map's own launch: the mask may name any slot (tpc.c) */
} launch_req;

/* Builds a launch's QMD: the kernel's template, then the fields that change per launch, written
 * without checks (record_launch checked them against the kernel and the GPU). A cluster launch
 * counts its grid in clusters. */
static nvhcq_status build_qmd(const nvhcq_compute_state *cs, const nvhcq_kernel *k, uint32_t *qmd,
                              const launch_req *r, uint32_t shared, uint64_t cbank0) {
  nvhcq_qmd_version v = cs->qmd_version;
  memcpy(qmd, k->qmd, nvhcq_qmd_size(v));
  nvhcq_dim3 g = r->grid, b = r->block;
  if (r->cluster[0]) g.x /= r->cluster[0], g.y /= r->cluster[1], g.z /= r->cluster[2];
  nvhcq_qmd_launch l = {.grid = {g.x, g.y, g.z},
                        .block = {b.x, b.y, b.z},
                        .shared_bytes = shared,
                        .local_high_bytes = cs->local_per_thread,
                        .cbank0_address = cbank0,
                        .cbank0_bytes = k->cbank0_bytes};
  carveout_for(cs, k, b, shared, l.config_bytes);
  nvhcq_qmd_write_launch(&cs->launch_layout, qmd, &l);
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR) nvhcq_qmd_set_fence(v, qmd, NVHCQ_FENCE_NONE);
  if (!cs->cbank_invalidate_each_grid)
    NVHCQ_TRY(nvhcq_qmd_set(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_INVALIDATE_0, 0));
  if (cs->debug_qmd_count) poke_qmd(cs, qmd, 'a');
  if (r->cluster[0])
    NVHCQ_TRY(nvhcq_qmd_set_cluster(v, qmd, r->cluster, r->load_balancing, cs->tpc_slots));
  /* A mask names slots below tpc_slots only: its disabled set holds the cluster's (slots from
   * tpc_slots up), so it replaces it. */
  return r->masked ? nvhcq_qmd_set_tpc_mask(v, qmd, r->tpc_mask) : NVHCQ_SUCCESS;
}

/* Everything of a launch that build_qmd reads besides the kernel's template and bank 0's address
 * (the device's debug switches are fixed while it is open). */
static struct nvhcq_launch_shape shape_of(const nvhcq_compute_state *cs, const nvhcq_kernel *k,
                                          const launch_req *r, uint32_t shared) {
  struct nvhcq_launch_shape s = {
      .grid = {r->grid.x, r->grid.y, r->grid.z},
      .block = {r->block.x, r->block.y, r->block.z},
      .cluster = {r->cluster[0], r->cluster[1], r->cluster[2]},
      .shared = shared,
      .local_high = cs->local_per_thread,
      .load_balancing = r->load_balancing,
      .carveout_preference = k->carveout_preference,
      .masked = r->masked,
      .tpc_mask = {r->tpc_mask[0], r->tpc_mask[1], r->tpc_mask[2], r->tpc_mask[3]},
  };
  return s;
}

/* A launch's QMD. Back-to-back launches of a kernel mostly repeat its shape: building the QMD
 * field by field was half of a launch's host time, so the last shape's QMD is kept with the
 * kernel and copied, only bank 0's address written anew. */
static nvhcq_status fill_qmd(const nvhcq_compute_state *cs, nvhcq_kernel *k, uint32_t *qmd,
                             const launch_req *r, uint32_t shared, uint64_t cbank0) {
  struct nvhcq_launch_shape key = shape_of(cs, k, r, shared);
  size_t bytes = nvhcq_qmd_size(cs->qmd_version);
  if (k->shape_valid && !memcmp(&key, &k->shape, sizeof key)) {
    memcpy(qmd, k->shape_qmd, bytes);
    nvhcq_qmd_write_cbank0_address(&cs->launch_layout, qmd, cbank0);
    return NVHCQ_SUCCESS;
  }
  k->shape_valid = 0;
  NVHCQ_TRY(build_qmd(cs, k, qmd, r, shared, cbank0));
  memcpy(k->shape_qmd, qmd, bytes);
  k->shape = key;
  k->shape_valid = 1;
  return NVHCQ_SUCCESS;
}

/* The fence a chained grid ends with. Every QMD is built ending with the system-scope membar
 * (L1_SYSMEMBAR), which the CPU, the copy engine and a host semaphore after the grid rely on.
 * When the next launch chains onto a grid (dependent QMD, same queue), that next grid is its
 * only consumer, and a device-scope membar suffices: CUDA's Programming Guide (Memory
 * Synchronization Domains) says kernel completion flushes a kernel's writes for downstream work
 * and that within a domain device-scope fencing is sufficient. That is also what libcuda does
 * on this hardware: in CUDA graphs captured and replayed on the H200 (driver 580.159.04), each
 * node with a successor had CWD_MEMBAR_TYPE = L1_MEMBAR and CWD_MEMBAR_TASK_CHASING_ENABLE = 1
 * and the last node L1_SYSMEMBAR (bench/qmd_probe.c reads libcuda's QMDs from its pushbuffer).
 * A grid whose QMD also releases a signal keeps the system scope: the signal's reader may be
 * the CPU. The profiler's timestamps (`stamps`, a bit per release slot they hold) do not keep
 * it: a stamp carries only its own payload and time, no data of the grid's, and the CPU reads
 * it only after a later release of the same channel that is fenced at system scope (the run's
 * last stamp, on a grid without successor or after idle, or its copy engine's flush), so a
 * profiled chain keeps the fences it has unprofiled. tests/device/test_order.c is the stress
 * test of this policy; test_profile checks the fences a profiled chain gets. */
static void fence_before_successor(const nvhcq_compute_state *cs, uint32_t *qmd, unsigned stamps) {
  nvhcq_qmd_version v = cs->qmd_version;
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR) return;
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_SYSTEM) return;
  for (unsigned slot = 0; slot < 3; slot++)
    if (!(stamps >> slot & 1) && nvhcq_qmd_get(v, qmd, NVHCQ_QMD_RELEASE0_ENABLE + slot)) return;
  nvhcq_qmd_set_fence(v, qmd, NVHCQ_FENCE_DEVICE);
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_PREEXIT &&
      nvhcq_qmd_set(v, qmd, NVHCQ_QMD_ENABLE_PROGRAM_PRE_EXIT, 1))
    nvhcq_clear_error(); /* V04 has the field, the other layouts are not known to */
}

/* The SMs' constant cache must not serve bytes that changed since a line was cached: bank 0 lies
 * in memory earlier launches read as theirs (a lap of the argument ring ago, a recorded queue's
 * replay before its variables changed), and a module's __constant__ data (bank 3) may be
 * rewritten between launches, as cudaMemcpyToSymbol does. A queue's commands therefore begin
 * with one invalidation of the whole constant cache (INVALIDATE_SHADER_CACHES_NO_WFI, CONSTANT),
 * again after each wait on a signal or value (what it covers may have rewritten constant memory),
 * and no QMD asks for its own bank 0 to be invalidated. That holds because every bank 0 of a
 * queue is written by the CPU before the submission, into memory no grid uses until then (the
 * ring and the arenas reuse memory only after the grids that read it completed), and the queue's
 * grids cache only the bytes they read, which stay as they are until the submission (or the
 * replay) is done. Measured on the H200 (test_order, test_compute's t_constant_rewrite): 0 wrong
 * arguments in 1.05e5 eager launches over four laps of the ring, 3.9e4 launches mixing kernels
 * and grids, and 40 replays whose variables rewrite bank 0; with no invalidation at all
 * (NVHCQ_DEBUG_CBANK_INVALIDATE=never) 56 blocks read another launch's arguments and the mixed
 * case faulted on an address taken from one. The per-grid bank-0 invalidation, the earlier
 * policy (=grid), passed the argument cases but left 25280 of 25600 reads of a rewritten
 * __constant__ table stale. Both cost the same (bench_compute's replay 0.504 and 0.505 us per
 * empty kernel, ew_add 2.58 and 2.59 us back to back). QMD layouts other than V04 (not measured)
 * keep the per-grid invalidation as well as the commands'. */
static void fence_constant_cache(nvhcq_queue *q) {
  if (!q->dev->compute_state.cbank_fence_commands || q->cbank_fenced) return;
  nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI,
                     NVC6C0_INVALIDATE_CONSTANT);
  q->cbank_fenced = 1;
}

/* Grids sent one by one may overlap: the next one waits until the compute engine is idle. The
 * engine's own WAIT_FOR_IDLE does it inside the graphics front end; the host's WFI also holds
 * the channel's command fetch until then. Measured on the H200 (bench_compute, two runs each,
 * same build): launch+sync 3.97 / 4.21 us with the host's WFI, 3.90 / 3.79 with the engine's;
 * 100k separately submitted launches 805k / 807k per s against 824k / 826k. test_order's chain
 * cases (500 launches per submission, so every 500th handoff crosses a submission) count 0
 * stale either way and billions with no wait (NVHCQ_DEBUG_FENCE=unordered). libcuda orders
 * such launches by a host semaphore acquire of the previous grid's release (its command stream,
 * read by bench/qmd_probe.c --eager). NVHCQ_DEBUG_FENCE=host-wfi restores the host's WFI.
 *
 * Before the wait, the next QMD is already fetched (a PCAS with action PREFETCH, V04): the
 * compute front end reads it while the previous grid still runs, not after the wait. Measured on
 * the H200 (same build, bench_compute and 6 bursts of 8000 separately submitted one-warp atomic
 * launches): 811k launches per s without it, 1001k with it; a burst's launches completed every
 * 1.21-1.30 us without it and every 1.00-1.07 us with it; launch+sync unchanged (3.94 and
 * 3.91 us). test_order passed with it. A PREFETCH then plain SCHEDULE was as fast for bursts but
 * cost single launches 0.16 us more (GPU start to release 0.96 -> 1.12 us). */
static void order_after_idle(nvhcq_queue *q, uint64_t next_qmd) {
  const nvhcq_compute_state *cs = &q->dev->compute_state;
  if (cs->qmd_version == NVHCQ_QMD_V04 && !cs->debug_no_prefetch) {
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_PCAS_A, (uint32_t)(next_qmd >> 8));
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_SIGNALING_PCAS2_B,
                       NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH);
  }
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_HOST_WFI)
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_HOST, NVC56F_WFI, 0);
  else
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_WAIT_FOR_IDLE, 0);
}

/* Orders a new launch after the queue's previous one: chained when the previous QMD can name a
 * dependent (it schedules this one when it completes), else a wait for idle and a PCAS of its
 * own. The previous QMD sits in GPU-visible memory the GPU has not read yet: only the dwords
 * chaining changes are written again. */
static void push_launch(nvhcq_queue *q, uint32_t *qmd_cpu, uint64_t qmd_gpu, uint32_t *next) {
  const nvhcq_compute_state *cs = &q->dev->compute_state;
  nvhcq_qmd_version v = cs->qmd_version;
  int unordered = cs->debug_fence == NVHCQ_DEBUG_FENCE_UNORDERED;
  if (q->last_qmd && !unordered && !nvhcq_qmd_set_dependent(v, q->last_qmd_shadow, qmd_gpu)) {
    fence_before_successor(cs, q->last_qmd_shadow, q->last_qmd_stamps);
    /* While the grid drains, the SMs fetch what the next one starts with (libcuda's graph nodes
     * do the same: bank slot 5 and the program, prefetched POST). */
    if (!cs->debug_no_prefetch)
      nvhcq_qmd_prefetch_successor(v, q->last_qmd_shadow, next, NVHCQ_QMD_SUCCESSOR_BANK);
    nvhcq_qmd_copy_chain_words(v, q->last_qmd, q->last_qmd_shadow);
    if (cs->debug_qmd_count) poke_qmd(cs, q->last_qmd_shadow, 'c'), poke_qmd(cs, q->last_qmd, 'c');
  } else {
    if (q->launch_pending && !unordered) order_after_idle(q, qmd_gpu);
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_PCAS_A, (uint32_t)(qmd_gpu >> 8));
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_SIGNALING_PCAS2_B,
                       NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH_SCHEDULE);
  }
  q->last_qmd = qmd_cpu;
  q->last_qmd_gpu = qmd_gpu;
  q->last_qmd_stamps = 0;
  q->launch_pending = 1;
}

void nvhcq_queue_name_last_kernel(const nvhcq_queue *q) {
  const nvhcq_kernel *k = q->last_kernel; /* unloaded kernels stay readable a while, marked dead */
  if (k && k->magic == NVHCQ_KERNEL_MAGIC) nvhcq_fault_note_kernel(q->dev, k->cubin->name);
}

/* The argument block: the kernel's parameter bytes, plus at most the trailing padding a C struct
 * of them has; or one pointer per parameter. */
static nvhcq_status check_args(const nvhcq_kernel *k, const launch_req *r) {
  const nvhcq_cubin_kernel *c = k->cubin;
  if (r->arg_pointers) {
    if (r->args)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "kernel %s: give args or config->arg_pointers, not both", c->name);
    for (uint32_t i = 0; i < c->param_count; i++)
      if (!r->arg_pointers[i])
        return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                          "kernel %s: arg_pointers[%u] is NULL (it takes %u parameters)", c->name,
                          i, c->param_count);
    return NVHCQ_SUCCESS;
  }
  size_t most = k->args_max; /* set at load */
  if (r->args_size < c->param_size || r->args_size > most || (!r->args && r->args_size))
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s takes %u bytes of arguments (%zu with a C struct's trailing "
                      "padding), got %zu%s",
                      c->name, c->param_size, most, r->args_size,
                      !r->args && r->args_size ? " (args is NULL)" : "");
  return NVHCQ_SUCCESS;
}

/* Blocks per cluster: the launch's, else the kernel's compiled one, checked against the grid,
 * the portable (8) or non-portable (16) limit, the kernel's bound and the GPU. */
static nvhcq_status resolve_cluster(const nvhcq_device *dev, const nvhcq_kernel *k,
                                    const nvhcq_dim3 *given, launch_req *r) {
  const char *n = k->cubin->name;
  const uint32_t *fixed = k->cubin->cluster_dims;
  uint32_t c[3] = {given ? given->x : 0, given ? given->y : 0, given ? given->z : 0};
  if (!c[0] && !c[1] && !c[2]) memcpy(c, fixed, sizeof c);
  if (!c[0] && !c[1] && !c[2]) return NVHCQ_SUCCESS;
  if (!c[0] || !c[1] || !c[2])
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: cluster (%u,%u,%u) has a zero dimension; give all three or none",
                      n, c[0], c[1], c[2]);
  if (fixed[0] && memcmp(c, fixed, sizeof c))
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s was compiled for clusters of (%u,%u,%u) (__cluster_dims__); "
                      "launch it with that cluster or none, not (%u,%u,%u)",
                      n, fixed[0], fixed[1], fixed[2], c[0], c[1], c[2]);
  if (dev->compute_state.qmd_version < NVHCQ_QMD_V04 || dev->info.sm_version >> 8 != 9)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "kernel %s: cluster launches run on sm_90 GPUs (Hopper); %s has %s", n,
                      dev->info.name, dev->info.arch);
  uint32_t size = c[0] * c[1] * c[2], limit = k->non_portable_cluster ? 16 : 8;
  if (size > limit)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: a cluster of %u blocks exceeds the %s limit of %u%s", n, size,
                      limit == 8 ? "portable" : "non-portable", limit,
                      limit == 8 ? " (set NVHCQ_KERNEL_NON_PORTABLE_CLUSTER for up to 16)" : "");
  if (k->cubin->max_cluster_rank && size > k->cubin->max_cluster_rank)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: a cluster of %u blocks exceeds the %u its __launch_bounds__ "
                      "allow",
                      n, size, k->cubin->max_cluster_rank);
  const uint32_t g[3] = {r->grid.x, r->grid.y, r->grid.z};
  for (int d = 0; d < 3; d++)
    if (g[d] % c[d])
      return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                        "kernel %s: grid (%u,%u,%u) is not a whole number of clusters (%u,%u,%u)",
                        n, g[0], g[1], g[2], c[0], c[1], c[2]);
  memcpy(r->cluster, c, sizeof c);
  return NVHCQ_SUCCESS;
}

/* The most blocks of a launch shape one SM holds (0 when none fits). */
static uint32_t blocks_per_sm(const nvhcq_compute_state *cs, const nvhcq_kernel *k, nvhcq_dim3 b,
                              uint32_t dynamic_shared) {
  nvhcq_carveout_choice c;
  uint32_t shared = nvhcq_kernel_shared_total(k, dynamic_shared);
  if (!nvhcq_choose_carveout(&cs->sm_limits, b.x * b.y * b.z, k->cubin->registers, shared,
                             k->carveout_preference, &c))
    return 0;
  return c.blocks_per_sm;
}

/* The most SMs one GPC offers a launch: all of its SMs, or with a TPC mask those of the GPC's
 * usable TPCs the mask enables (GPC g holds slots g * tpcs_per_gpc and up, in device.c's order). */
static uint32_t largest_gpc(const nvhcq_device *dev, const launch_req *r) {
  const nvhcq_compute_state *cs = &dev->compute_state;
  uint32_t most = 0, per_gpc = dev->info.tpcs_per_gpc;
  for (uint32_t i = 0; i < cs->gpc_count; i++) {
    uint32_t sms = cs->gpc_sms[i];
    if (r->masked) {
      sms = 0;
      for (uint32_t t = i * per_gpc; t < (i + 1) * per_gpc && t < 128; t++)
        sms += (r->tpc_mask[t / 32] & cs->usable_tpcs[t / 32]) >> (t % 32) & 1;
      sms *= dev->info.sms_per_tpc;
    }
    most = sms > most ? sms : most;
  }
  return most;
}

/* A cluster runs on one GPC, all its blocks at once. */
static nvhcq_status check_cluster_fits(const nvhcq_device *dev, const nvhcq_kernel *k,
                                       const launch_req *r) {
  const nvhcq_compute_state *cs = &dev->compute_state;
  uint32_t size = r->cluster[0] * r->cluster[1] * r->cluster[2];
  uint32_t per_sm = blocks_per_sm(cs, k, r->block, r->dynamic_shared), sms = largest_gpc(dev, r);
  if ((sms || r->masked) && (uint64_t)per_sm * sms < size)
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                      "kernel %s: a cluster of %u blocks must fit one GPC at once, but blocks of "
                      "this shape (%u threads, %u bytes of shared memory) fit %u per SM and the "
                      "largest GPC of %s has %u SMs (of them, those the TPC mask enables)",
                      k->cubin->name, size, r->block.x * r->block.y * r->block.z,
                      nvhcq_kernel_shared_total(k, r->dynamic_shared), per_sm, dev->info.name, sms);
  return NVHCQ_SUCCESS;
}

/* The SMs of the usable TPCs a mask names. */
static uint32_t masked_sms(const nvhcq_device *dev, const uint32_t mask[4]) {
  uint32_t tpcs = 0;
  for (int w = 0; w < 4; w++)
    tpcs += (uint32_t)__builtin_popcount(mask[w] & dev->compute_state.usable_tpcs[w]);
  return tpcs * dev->info.sms_per_tpc;
}

/* A TPC mask names usable TPCs only (others might not exist: a grid kept to them would never
 * run), at least one, on a GPU whose QMD has the mask (Hopper and later). A cluster launch must
 * find room for a cluster in one GPC's enabled TPCs (check_cluster_fits). */
static nvhcq_status check_tpc_mask(nvhcq_device *dev, const nvhcq_kernel *k, const launch_req *r) {
  const nvhcq_compute_state *cs = &dev->compute_state;
  if (cs->qmd_version != NVHCQ_QMD_V04 && cs->qmd_version != NVHCQ_QMD_V05)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "kernel %s: TPC masks need a Hopper or later GPU (QMD version 4 or 5); %s "
                      "is %s",
                      k->cubin->name, dev->info.name, dev->info.arch);
  if (!cs->debug_tpc_any) NVHCQ_TRY(nvhcq_tpc_map(dev));
  if (!cs->usable_tpc_count && !cs->debug_tpc_any)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "kernel %s: TPC masks are not offered on %s: %s",
                      k->cubin->name, dev->info.name, cs->tpc_unmapped_why);
  for (int w = 0; w < 4 && !cs->debug_tpc_any; w++)
    if (r->tpc_mask[w] & ~cs->usable_tpcs[w])
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "kernel %s: tpc_mask word %d is 0x%08x, which names TPC slots that are not "
                        "among the usable ones (0x%08x, nvhcq_device_query_tpcs)",
                        k->cubin->name, w, r->tpc_mask[w], cs->usable_tpcs[w]);
  if (!masked_sms(dev, r->tpc_mask) && !cs->debug_tpc_any)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "kernel %s: tpc_mask names no TPC, so the grid could never run",
                      k->cubin->name);
  return NVHCQ_SUCCESS;
}

/* A cooperative grid's blocks must all be resident at once: grid.sync() waits for every one. */
static nvhcq_status check_cooperative_fits(nvhcq_device *dev, const nvhcq_kernel *k,
                                           const launch_req *r) {
  if (dev->info.sm_version >> 8 != 9)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "kernel %s: cooperative launches are established on sm_90 only (where the "
                      "grid workspace's bank-0 words were read back); %s is %s",
                      k->cubin->name, dev->info.name, dev->info.arch);
  uint64_t unused;
  NVHCQ_TRY(nvhcq_compute_grid_workspace(dev, &unused)); /* made now, before anything is recorded */
  uint64_t blocks = (uint64_t)r->grid.x * r->grid.y * r->grid.z;
  uint32_t per_sm = blocks_per_sm(&dev->compute_state, k, r->block, r->dynamic_shared);
  uint32_t sms = r->masked ? masked_sms(dev, r->tpc_mask) : dev->info.sm_count;
  uint64_t most = (uint64_t)per_sm * sms;
  if (blocks <= most) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK,
                    "kernel %s: a cooperative grid of %llu blocks must be resident at once, but "
                    "blocks of this shape (%u threads, %u bytes of shared memory) fit %u per SM, "
                    "%llu on the %u SMs of %s; launch at most that many",
                    k->cubin->name, (unsigned long long)blocks,
                    r->block.x * r->block.y * r->block.z,
                    nvhcq_kernel_shared_total(k, r->dynamic_shared), per_sm,
                    (unsigned long long)most, sms, dev->info.name);
}

/* Everything a launch is checked for before anything is recorded; resolves its cluster. */
static nvhcq_status check_launch(const nvhcq_queue *q, const nvhcq_kernel *k, launch_req *r,
                                 const nvhcq_dim3 *cluster) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(nvhcq_kernel_check(k));
  nvhcq_device *dev = q->dev;
  if (q->finished)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "kernel %s: the queue is finished; reset it "
                      "to record again",
                      k->cubin->name);
  if (q->kind != NVHCQ_QUEUE_COMPUTE)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "kernel %s: launches need a compute queue",
                      k->cubin->name);
  if (k->module->dev != dev)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "kernel %s is loaded on GPU %d, the queue is on GPU %d", k->cubin->name,
                      k->module->dev->index, dev->index);
  NVHCQ_TRY(check_args(k, r));
  NVHCQ_TRY(nvhcq_launch_check_dims(k, r->grid, r->block));
  NVHCQ_TRY(check_shared(dev, k, r->dynamic_shared));
  NVHCQ_TRY(resolve_cluster(dev, k, cluster, r));
  if (r->masked && !r->census) NVHCQ_TRY(check_tpc_mask(dev, k, r));
  if (r->cooperative) NVHCQ_TRY(check_cooperative_fits(dev, k, r));
  return r->cluster[0] ? check_cluster_fits(dev, k, r) : NVHCQ_SUCCESS;
}

/* sm_90 kernels read their cluster's shape from bank 0 (seen in nvcc 13's SASS for %cluster_*,
 * %nclusterid and cooperative_groups' cluster.sync()): dword 80 is 1 in a cluster launch (else
 * cluster.sync() is a block barrier: blocks would write into peers that exited), 81-83 blocks per
 * cluster, 84-86 their reciprocals as floats (the cluster id is ctaid times it, truncated), 87-89
 * the grid in clusters, 98 blocks per cluster. A launch without a cluster is a grid of one-block
 * clusters. */
static void write_cluster_words(uint8_t *cbank, const launch_req *r) {
  uint32_t c[3] = {1, 1, 1}, w[19] = {0};
  if (r->cluster[0]) memcpy(c, r->cluster, sizeof c);
  const uint32_t g[3] = {r->grid.x, r->grid.y, r->grid.z};
  for (int d = 0; d < 3; d++) {
    float inv = 1.0f / (float)c[d]; /* rounds up for 1..16: ctaid * inv truncates exactly */
    w[1 + d] = c[d];
    memcpy(&w[4 + d], &inv, 4);
    w[7 + d] = g[d] / c[d];
  }
  w[0] = r->cluster[0] != 0;
  w[18] = c[0] * c[1] * c[2];
  memcpy(cbank + 80 * 4, w, sizeof w);
}

/* The parameters into bank 0: the block as given, or each parameter from its pointer. */
static void write_params(uint8_t *cbank, const nvhcq_kernel *k, const launch_req *r) {
  const nvhcq_cubin_kernel *c = k->cubin;
  if (r->arg_pointers) {
    for (uint32_t i = 0; i < c->param_count; i++)
      memcpy(cbank + c->param_offset + c->params[i].offset, r->arg_pointers[i], c->params[i].size);
  } else if (c->param_size) {
    memcpy(cbank + c->param_offset, r->args, c->param_size);
  }
}

/* While profiling, the launch's end: a release on its QMD (when the grid completes). */
static nvhcq_status profile_launch(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                   nvhcq_dim3 block) {
  nvhcq_profile_what w = {.kind = NVHCQ_PROFILE_LAUNCH,
                          .name = nvhcq_profile_kernel_name(k),
                          .grid = grid,
                          .block = block};
  return nvhcq_profile_end(q, &w);
}

/* Records a launch; `cbank` and `qmd` receive where its bank 0 and QMD were written (for the
 * variables of recorded queues). */
/* cooperative_groups finds its grid workspace (the grid barrier) at the address in %envreg1
 * (high half) and %envreg2, which sm_90 code reads from bank 0 at 0x44 and 0x48 (%envreg<n> is
 * bank 0 word 16 + n in nvcc 13's SASS; libcuda fills both for cuLaunchCooperativeKernel only,
 * read back on the H200 by a kernel storing its %envreg values). Zero elsewhere: this_grid() is
 * then not valid, as CUDA has it. Other architectures' bank 0 is left as it was. */
static nvhcq_status write_grid_workspace(nvhcq_device *dev, uint8_t *cbank, int cooperative) {
  if (dev->info.sm_version >> 8 != 9) return NVHCQ_SUCCESS; /* only sm_90's words are known */
  uint64_t at = 0; /* check_launch made the workspace of a cooperative launch */
  if (cooperative) NVHCQ_TRY(nvhcq_compute_grid_workspace(dev, &at));
  uint32_t w[2] = {(uint32_t)(at >> 32), (uint32_t)at};
  memcpy(cbank + 0x44, w, sizeof w);
  return NVHCQ_SUCCESS;
}

static nvhcq_status record_launch(nvhcq_queue *q, nvhcq_kernel *k, launch_req *r,
                                  const nvhcq_dim3 *cluster, uint8_t **cbank, uint8_t **qmd_at) {
  NVHCQ_TRY(check_launch(q, k, r, cluster));
  int profiled = nvhcq_profiling();
  if (profiled) NVHCQ_TRY(nvhcq_profile_begin(q));
  nvhcq_device *dev = q->dev;
  const nvhcq_compute_state *cs = &dev->compute_state;
  NVHCQ_TRY(nvhcq_compute_ensure_local_memory(dev, k->local_bytes));
  uint32_t qmd_size = (uint32_t)nvhcq_qmd_size(cs->qmd_version);
  uint32_t bytes = k->cbank0_bytes + NVHCQ_ALIGN_UP(qmd_size, 256u);
  /* Built in the spare shadow, so the previous launch's stays intact until this one is whole. */
  uint32_t *qmd = q->qmd_shadows[q->last_qmd_shadow == q->qmd_shadows[0]];
  uint32_t shared = nvhcq_kernel_shared_total(k, r->dynamic_shared);
  uint8_t *cpu;
  uint64_t gpu;
  NVHCQ_TRY(q->ops->launch_memory(q, bytes, &cpu, &gpu));
  NVHCQ_TRY(fill_qmd(cs, k, qmd, r, shared, gpu));
  /* Bank 0: driver words (block and grid sizes, windows), then the parameters. */
  uint32_t words[12];
  memcpy(words, cs->cbank0_prefix, sizeof words);
  words[0] = r->block.x, words[1] = r->block.y, words[2] = r->block.z;
  words[3] = r->grid.x, words[4] = r->grid.y, words[5] = r->grid.z;
  memcpy(cpu, words, sizeof words);
  NVHCQ_TRY(write_grid_workspace(dev, cpu, r->cooperative));
  if (k->cluster_words) {
    write_cluster_words(cpu, r);
    /* sm_90 code reaches a __grid_constant__ parameter (a TMA map) through the parameters'
     * generic address, which it loads from bank 0 at 0x198 (nvcc 13's SASS of
     * tests/device/hopper_gemm.cu). */
    uint64_t params = gpu + k->cubin->param_offset;
    memcpy(cpu + 0x198, &params, sizeof params);
  }
  write_params(cpu, k, r);
  memcpy(cpu + k->cbank0_bytes, qmd, qmd_size);
  fence_constant_cache(q);
  push_launch(q, (uint32_t *)(cpu + k->cbank0_bytes), gpu + k->cbank0_bytes, qmd);
  q->last_qmd_shadow = qmd;
  q->last_kernel = k;
  *cbank = cpu;
  *qmd_at = cpu + k->cbank0_bytes;
  if (profiled && !q->push.error) return profile_launch(q, k, r->grid, r->block);
  return q->push.error;
}

nvhcq_status nvhcq_queue_launch(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block,
                                uint32_t dynamic_shared, const void *args, size_t args_size) {
  uint8_t *cbank, *qmd;
  launch_req r = {grid, block, dynamic_shared, {0, 0, 0}, 0, args, args_size, NULL, 0, 0, {0}, 0};
  return record_launch(q, k, &r, NULL, &cbank, &qmd);
}

nvhcq_status nvhcq_queue_launch_census(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                       nvhcq_dim3 block, const void *args, size_t args_size,
                                       const uint32_t enabled[4]) {
  uint8_t *cbank, *qmd;
  launch_req r = {grid, block, 0, {0, 0, 0}, 0, args, args_size, NULL, 0, 1, {0}, 1};
  memcpy(r.tpc_mask, enabled, sizeof r.tpc_mask);
  return record_launch(q, k, &r, NULL, &cbank, &qmd);
}

/* The configuration's flags: 0 from callers built before the field was added. */
static uint32_t config_flags(const nvhcq_launch_config *c) {
  return c->struct_size >= offsetof(nvhcq_launch_config, flags) + sizeof c->flags ? c->flags : 0;
}

/* Its TPC mask, into the request: none from callers built before the field was added. */
static void config_tpc_mask(const nvhcq_launch_config *c, launch_req *r) {
  if (c->struct_size < offsetof(nvhcq_launch_config, tpc_mask) + sizeof c->tpc_mask || !c->tpc_mask)
    return;
  r->masked = 1;
  memcpy(r->tpc_mask, c->tpc_mask, sizeof r->tpc_mask);
}

static nvhcq_status check_config(const nvhcq_launch_config *c) {
  if (!c) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_queue_launch_ex: config is NULL");
  if (c->struct_size < offsetof(nvhcq_launch_config, flags))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_launch_ex: config->struct_size is %u, less than the %zu bytes "
                      "of its layout (set it to sizeof(nvhcq_launch_config))",
                      c->struct_size, sizeof *c);
  if (config_flags(c) & ~NVHCQ_LAUNCH_COOPERATIVE)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_launch_ex: flags 0x%x has bits that are not NVHCQ_LAUNCH_*",
                      config_flags(c));
  if (c->cluster_policy > NVHCQ_CLUSTER_POLICY_LOAD_BALANCING)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_launch_ex: cluster_policy %u is not NVHCQ_CLUSTER_POLICY_*",
                      c->cluster_policy);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_launch_ex(nvhcq_queue *q, nvhcq_kernel *k,
                                   const nvhcq_launch_config *config, const void *args,
                                   size_t args_size) {
  NVHCQ_TRY(check_config(config));
  uint8_t *cbank, *qmd;
  launch_req r = {config->grid,
                  config->block,
                  config->dynamic_shared,
                  {0, 0, 0},
                  config->cluster_policy == NVHCQ_CLUSTER_POLICY_LOAD_BALANCING,
                  args,
                  args_size,
                  config->arg_pointers,
                  (config_flags(config) & NVHCQ_LAUNCH_COOPERATIVE) != 0,
                  0,
                  {0},
                  0};
  config_tpc_mask(config, &r);
  return record_launch(q, k, &r, &config->cluster, &cbank, &qmd);
}

nvhcq_status nvhcq_kernel_query_max_clusters(const nvhcq_kernel *k,
                                             const nvhcq_launch_config *config,
                                             uint32_t *clusters) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  NVHCQ_TRY(check_config(config));
  if (!clusters)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_kernel_query_max_clusters: clusters is "
                                                    "NULL");
  const nvhcq_device *dev = k->module->dev;
  const nvhcq_compute_state *cs = &dev->compute_state;
  launch_req r = {config->cluster,
                  config->block,
                  config->dynamic_shared,
                  {0, 0, 0},
                  0,
                  NULL,
                  0,
                  NULL,
                  0,
                  0,
                  {0},
                  0};
  NVHCQ_TRY(nvhcq_launch_check_dims(k, (nvhcq_dim3){1, 1, 1}, config->block));
  NVHCQ_TRY(check_shared(dev, k, config->dynamic_shared));
  /* The grid is one cluster: resolve_cluster then checks the cluster alone. */
  if (!config->cluster.x && k->cubin->cluster_dims[0])
    r.grid = (nvhcq_dim3){k->cubin->cluster_dims[0], k->cubin->cluster_dims[1],
                          k->cubin->cluster_dims[2]};
  NVHCQ_TRY(resolve_cluster(dev, k, &config->cluster, &r));
  uint32_t size = r.cluster[0] ? r.cluster[0] * r.cluster[1] * r.cluster[2] : 1;
  /* libcuda's count on the H200 never has more than 8 blocks of a cluster launch per SM (its
   * cuOccupancyMaxActiveClusters gives 1056 one-block clusters where 16 blocks fit each of the
   * 132 SMs): taken over, so that clusters of 1 and 2 match it exactly. For larger clusters
   * libcuda counts up to 15 % fewer than this per-GPC count (bench/qmd_probe.c --cluster prints
   * its figures; the closing note of issue 13 has the table). */
  uint32_t per_sm = blocks_per_sm(cs, k, config->block, config->dynamic_shared), total = 0;
  if (per_sm > 8) per_sm = 8;
  for (uint32_t i = 0; i < cs->gpc_count; i++) total += per_sm * cs->gpc_sms[i] / size;
  *clusters = total;
  return NVHCQ_SUCCESS;
}

/* A QMD field patched in place: byte-aligned fields of 8, 16 or 32 bits. */
static nvhcq_status patch_qmd_field(nvhcq_queue *q, nvhcq_var var, uint8_t *qmd,
                                    nvhcq_qmd_field f) {
  unsigned hi, lo;
  if (!nvhcq_qmd_field_range(q->dev->compute_state.qmd_version, f, &hi, &lo) || lo % 8)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "QMD field %s cannot be patched in place",
                      nvhcq_qmd_field_name(f));
  unsigned width = hi - lo + 1;
  nvhcq_patch_kind kind = width == 8    ? NVHCQ_PATCH_U8
                          : width == 16 ? NVHCQ_PATCH_U16
                                        : NVHCQ_PATCH_U32;
  if (width != 8 && width != 16 && width != 32)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "QMD field %s is %u bits wide",
                      nvhcq_qmd_field_name(f), width);
  return nvhcq_queue_add_patch(q, var, kind, 0, 0, qmd + lo / 8, 0);
}

nvhcq_status nvhcq_queue_launch_vars(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                     nvhcq_dim3 block, uint32_t dynamic_shared, const void *args,
                                     size_t args_size, const nvhcq_launch_vars *vars) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (!nvhcq_queue_is_recorded(q))
    return nvhcq_fail(
        NVHCQ_ERROR_INVALID_ARGUMENT,
        "launches with variables need a recorded queue (nvhcq_queue_create_recorded)");
  if (!vars) return nvhcq_queue_launch(q, k, grid, block, dynamic_shared, args, args_size);
  for (uint32_t i = 0; i < vars->arg_count; i++) {
    const nvhcq_arg_var *a = &vars->args[i];
    if ((a->size != 4 && a->size != 8) || a->offset + a->size > args_size)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "argument variable %u: %u bytes at offset %u do not fit the %zu-byte "
                        "arguments (sizes 4 or 8)",
                        i, a->size, a->offset, args_size);
  }
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (k->cubin->cluster_dims[0])
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "kernel %s runs in clusters: launches with variables do not take cluster "
                      "kernels yet (use nvhcq_queue_launch_ex on a recorded queue)",
                      k->cubin->name);
  uint8_t *cbank, *qmd;
  launch_req r = {grid, block, dynamic_shared, {0, 0, 0}, 0, args, args_size, NULL, 0, 0, {0}, 0};
  NVHCQ_TRY(record_launch(q, k, &r, NULL, &cbank, &qmd));
  static const nvhcq_qmd_field grid_f[3] = {NVHCQ_QMD_GRID_WIDTH, NVHCQ_QMD_GRID_HEIGHT,
                                            NVHCQ_QMD_GRID_DEPTH};
  static const nvhcq_qmd_field block_f[3] = {NVHCQ_QMD_CTA_THREAD_DIMENSION0,
                                             NVHCQ_QMD_CTA_THREAD_DIMENSION1,
                                             NVHCQ_QMD_CTA_THREAD_DIMENSION2};
  for (int d = 0; d < 3; d++) {
    NVHCQ_TRY(patch_qmd_field(q, vars->grid[d], qmd, grid_f[d]));
    NVHCQ_TRY(
        nvhcq_queue_add_patch(q, vars->grid[d], NVHCQ_PATCH_U32, 0, 0, cbank + 4 * (3 + d), 0));
    /* Without a cluster the grid in clusters (bank-0 dwords 87-89) is the grid itself. */
    if (k->cluster_words)
      NVHCQ_TRY(
          nvhcq_queue_add_patch(q, vars->grid[d], NVHCQ_PATCH_U32, 0, 0, cbank + 4 * (87 + d), 0));
    NVHCQ_TRY(patch_qmd_field(q, vars->block[d], qmd, block_f[d]));
    NVHCQ_TRY(nvhcq_queue_add_patch(q, vars->block[d], NVHCQ_PATCH_U32, 0, 0, cbank + 4 * d, 0));
  }
  for (uint32_t i = 0; i < vars->arg_count; i++) {
    const nvhcq_arg_var *a = &vars->args[i];
    NVHCQ_TRY(nvhcq_queue_add_patch(q, a->var, a->size == 4 ? NVHCQ_PATCH_U32 : NVHCQ_PATCH_U64, 0,
                                    0, cbank + k->cubin->param_offset + a->offset, a->add));
  }
  return nvhcq_queue_add_var_launch(q, k, grid, block, vars);
}

void nvhcq_queue_end_chain(nvhcq_queue *q) {
  q->last_qmd = NULL;
}

/* A signal right after a launch rides on the launch itself: the QMD's release semaphores fire
 * when the grid completes, without stalling the channel as a host release with WFI does. The
 * slot it took goes to `slot`; 0 when there is none. */
static int release_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value, unsigned *slot_out) {
  nvhcq_qmd_version v = q->dev->compute_state.qmd_version;
  if (!q->last_qmd) return 0;
  for (unsigned slot = 0; slot < 3; slot++) {
    if (nvhcq_qmd_get(v, q->last_qmd_shadow, NVHCQ_QMD_RELEASE0_ENABLE + slot)) continue;
    if (nvhcq_qmd_set_release(v, q->last_qmd_shadow, slot, address, value)) return 0;
    /* The release needs no membar of its own (FE_SYSMEMBAR): a grid with a signal's release
     * always ends with the system-scope CWD membar (see fence_before_successor), which makes its
     * writes to any memory visible before the release; a profiler stamp needs no fence for
     * them. libcuda's QMDs on the H200 release the same way (RELEASE_MEMBAR_TYPE FE_NONE after
     * L1_SYSMEMBAR). The "host" cases of test_order check it. */
    if (q->dev->compute_state.debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR &&
        nvhcq_qmd_set(v, q->last_qmd_shadow, NVHCQ_QMD_RELEASE0_MEMBAR_TYPE + slot, 1))
      return 0;
    nvhcq_qmd_copy_release_words(v, q->last_qmd, q->last_qmd_shadow, slot);
    *slot_out = slot;
    return 1;
  }
  return 0;
}

int nvhcq_queue_signal_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value) {
  unsigned slot;
  return release_on_qmd(q, address, value, &slot);
}

int nvhcq_queue_stamp_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value) {
  unsigned slot;
  if (!release_on_qmd(q, address, value, &slot)) return 0;
  q->last_qmd_stamps |= 1u << slot;
  return 1;
}

nvhcq_status nvhcq_queue_submit_args(const nvhcq_queue *q) {
  if (q->args_first == ~0ull) return NVHCQ_SUCCESS;
  return nvhcq_compute_args_keep(q->dev, q->args_first);
}

nvhcq_status nvhcq_queue_memory_barrier(nvhcq_queue *q) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (q->kind != NVHCQ_QUEUE_COMPUTE)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "memory barriers are for compute queues");
  nvhcq_push_invalidate_shader_caches(&q->push);
  nvhcq_queue_end_chain(q);
  return q->push.error;
}

nvhcq_status nvhcq_kernel_launch_cpu_wait(nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block,
                                          uint32_t dynamic_shared, const void *args,
                                          size_t args_size, uint64_t *gpu_ns) {
  NVHCQ_TRY(nvhcq_kernel_check(k));
  nvhcq_device *dev = k->module->dev;
  if (!dev->sync_queue) {
    NVHCQ_TRY(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &dev->sync_queue));
    NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->sync_signal[0]));
    NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->sync_signal[1]));
  }
  nvhcq_queue *q = dev->sync_queue;
  uint64_t v = nvhcq_signal_load(dev->sync_signal[1]) + 1;
  NVHCQ_TRY(nvhcq_queue_reset(q));
  if (gpu_ns) NVHCQ_TRY(nvhcq_queue_signal(q, dev->sync_signal[0], v));
  NVHCQ_TRY(nvhcq_queue_launch(q, k, grid, block, dynamic_shared, args, args_size));
  NVHCQ_TRY(nvhcq_queue_signal(q, dev->sync_signal[1], v));
  NVHCQ_TRY(nvhcq_queue_submit(q));
  nvhcq_status s = nvhcq_signal_cpu_wait(dev->sync_signal[1], v, 0);
  if (s) return nvhcq_fail_context(s, "kernel %s", k->cubin->name);
  if (gpu_ns)
    *gpu_ns = nvhcq_signal_stamp(dev->sync_signal[1]) - nvhcq_signal_stamp(dev->sync_signal[0]);
  return NVHCQ_SUCCESS;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_launch_sync, nvhcq_kernel_launch_cpu_wait);
