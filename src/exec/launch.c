/* Kernel launches into queues: the checks, bank 0 and the QMD of each launch, chaining onto the
 * previous launch with its fence, launches with variables, and nvhcq_kernel_launch_cpu_wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compute.h"
#include "exec/module.h"
#include "exec/queue.h"
#include "exec/profile.h"
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

/* Builds a launch's QMD: the kernel's template, then the fields that change per launch, written
 * without checks (record_launch checked them against the kernel and the GPU). */
static void fill_qmd(const nvhcq_compute_state *cs, const nvhcq_kernel *k, uint32_t *qmd,
                     nvhcq_dim3 g, nvhcq_dim3 b, uint32_t shared, uint64_t cbank0) {
  nvhcq_qmd_version v = cs->qmd_version;
  memcpy(qmd, k->qmd, nvhcq_qmd_size(v));
  nvhcq_qmd_launch l = {.grid = {g.x, g.y, g.z},
                        .block = {b.x, b.y, b.z},
                        .shared_bytes = shared,
                        .local_high_bytes = cs->local_per_thread,
                        .cbank0_address = cbank0,
                        .cbank0_bytes = k->cbank0_bytes};
  carveout_for(cs, k, b, shared, l.config_bytes);
  nvhcq_qmd_write_launch(&cs->launch_layout, qmd, &l);
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR) nvhcq_qmd_set_fence(v, qmd, NVHCQ_FENCE_NONE);
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
 * the CPU. tests/device/test_order.c is the stress test of this policy. */
static void fence_before_successor(const nvhcq_compute_state *cs, uint32_t *qmd) {
  nvhcq_qmd_version v = cs->qmd_version;
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR) return;
  if (cs->debug_fence == NVHCQ_DEBUG_FENCE_SYSTEM) return;
  for (unsigned slot = 0; slot < 3; slot++)
    if (nvhcq_qmd_get(v, qmd, NVHCQ_QMD_RELEASE0_ENABLE + slot)) return;
  nvhcq_qmd_set_fence(v, qmd, NVHCQ_FENCE_DEVICE);
}

/* Orders a new launch after the queue's previous one: chained when the previous QMD can name a
 * dependent (it schedules this one when it completes), else a wait for idle and a PCAS of its
 * own. The previous QMD sits in GPU-visible memory the GPU has not read yet: only the dwords
 * chaining changes are written again. */
static void push_launch(nvhcq_queue *q, uint32_t *qmd_cpu, uint64_t qmd_gpu, const uint32_t *next) {
  const nvhcq_compute_state *cs = &q->dev->compute_state;
  nvhcq_qmd_version v = cs->qmd_version;
  int unordered = cs->debug_fence == NVHCQ_DEBUG_FENCE_UNORDERED;
  if (q->last_qmd && !unordered && !nvhcq_qmd_set_dependent(v, q->last_qmd_shadow, qmd_gpu)) {
    fence_before_successor(cs, q->last_qmd_shadow);
    /* While the grid drains, the SMs fetch what the next one starts with (libcuda's graph nodes
     * do the same: bank slot 5 and the program, prefetched POST). */
    if (!cs->debug_no_prefetch)
      nvhcq_qmd_prefetch_successor(v, q->last_qmd_shadow, next, NVHCQ_QMD_SUCCESSOR_BANK);
    nvhcq_qmd_copy_chain_words(v, q->last_qmd, q->last_qmd_shadow);
  } else {
    /* Grids sent one by one may overlap: wait for the previous one first. */
    if (q->launch_pending && !unordered)
      nvhcq_push_method1(&q->push, NVHCQ_SUBC_HOST, NVC56F_WFI, 0);
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_PCAS_A, (uint32_t)(qmd_gpu >> 8));
    nvhcq_push_method1(&q->push, NVHCQ_SUBC_COMPUTE, NVC6C0_SEND_SIGNALING_PCAS2_B,
                       NVC6C0_SEND_SIGNALING_PCAS2_B_PREFETCH_SCHEDULE);
  }
  q->last_qmd = qmd_cpu;
  q->last_qmd_gpu = qmd_gpu;
  q->launch_pending = 1;
}

void nvhcq_queue_name_last_kernel(const nvhcq_queue *q) {
  const nvhcq_kernel *k = q->last_kernel; /* unloaded kernels stay readable a while, marked dead */
  if (k && k->magic == NVHCQ_KERNEL_MAGIC) nvhcq_fault_note_kernel(q->dev, k->cubin->name);
}

/* Everything a launch is checked for before anything is recorded. */
static nvhcq_status check_launch(const nvhcq_queue *q, const nvhcq_kernel *k, nvhcq_dim3 grid,
                                 nvhcq_dim3 block, uint32_t dynamic_shared, const void *args,
                                 size_t args_size) {
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
  if (args_size != k->cubin->param_size || (!args && args_size))
    return nvhcq_fail(NVHCQ_ERROR_LAUNCH_CHECK, "kernel %s takes %u bytes of arguments, got %zu%s",
                      k->cubin->name, k->cubin->param_size, args_size,
                      !args && args_size ? " (args is NULL)" : "");
  NVHCQ_TRY(nvhcq_launch_check_dims(k, grid, block));
  return check_shared(dev, k, dynamic_shared);
}

/* While profiling, the launch's end: a release on its QMD (when the grid completes). */
static nvhcq_status profile_launch(nvhcq_queue *q, const nvhcq_kernel *k, nvhcq_dim3 grid,
                                   nvhcq_dim3 block) {
  nvhcq_profile_what w = {
      .kind = NVHCQ_PROFILE_LAUNCH, .name = k->cubin->name, .grid = grid, .block = block};
  return nvhcq_profile_end(q, &w);
}

/* Records a launch; `cbank` and `qmd` receive where its bank 0 and QMD were written (for the
 * variables of recorded queues). */
static nvhcq_status record_launch(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                  nvhcq_dim3 block, uint32_t dynamic_shared, const void *args,
                                  size_t args_size, uint8_t **cbank, uint8_t **qmd_at) {
  NVHCQ_TRY(check_launch(q, k, grid, block, dynamic_shared, args, args_size));
  int profiled = nvhcq_profiling();
  if (profiled) NVHCQ_TRY(nvhcq_profile_begin(q));
  nvhcq_device *dev = q->dev;
  const nvhcq_compute_state *cs = &dev->compute_state;
  NVHCQ_TRY(nvhcq_compute_ensure_local_memory(dev, k->local_bytes));
  uint32_t qmd_size = (uint32_t)nvhcq_qmd_size(cs->qmd_version);
  uint32_t bytes = k->cbank0_bytes + NVHCQ_ALIGN_UP(qmd_size, 256u);
  uint8_t *cpu;
  uint64_t gpu;
  NVHCQ_TRY(q->ops->launch_memory(q, bytes, &cpu, &gpu));
  /* Bank 0: driver words (block and grid sizes, windows), then the parameters. */
  uint32_t words[12];
  memcpy(words, cs->cbank0_prefix, sizeof words);
  words[0] = block.x, words[1] = block.y, words[2] = block.z;
  words[3] = grid.x, words[4] = grid.y, words[5] = grid.z;
  memcpy(cpu, words, sizeof words);
  if (args_size) memcpy(cpu + k->cubin->param_offset, args, args_size);
  /* Built in the spare shadow, so the previous launch's stays intact until this one is whole. */
  uint32_t *qmd = q->qmd_shadows[q->last_qmd_shadow == q->qmd_shadows[0]];
  uint32_t shared = nvhcq_kernel_shared_total(k, dynamic_shared);
  fill_qmd(cs, k, qmd, grid, block, shared, gpu);
  memcpy(cpu + k->cbank0_bytes, qmd, qmd_size);
  push_launch(q, (uint32_t *)(cpu + k->cbank0_bytes), gpu + k->cbank0_bytes, qmd);
  q->last_qmd_shadow = qmd;
  q->last_kernel = k;
  *cbank = cpu;
  *qmd_at = cpu + k->cbank0_bytes;
  if (profiled && !q->push.error) return profile_launch(q, k, grid, block);
  return q->push.error;
}

nvhcq_status nvhcq_queue_launch(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block,
                                uint32_t dynamic_shared, const void *args, size_t args_size) {
  uint8_t *cbank, *qmd;
  return record_launch(q, k, grid, block, dynamic_shared, args, args_size, &cbank, &qmd);
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
  uint8_t *cbank, *qmd;
  NVHCQ_TRY(record_launch(q, k, grid, block, dynamic_shared, args, args_size, &cbank, &qmd));
  static const nvhcq_qmd_field grid_f[3] = {NVHCQ_QMD_GRID_WIDTH, NVHCQ_QMD_GRID_HEIGHT,
                                            NVHCQ_QMD_GRID_DEPTH};
  static const nvhcq_qmd_field block_f[3] = {NVHCQ_QMD_CTA_THREAD_DIMENSION0,
                                             NVHCQ_QMD_CTA_THREAD_DIMENSION1,
                                             NVHCQ_QMD_CTA_THREAD_DIMENSION2};
  for (int d = 0; d < 3; d++) {
    NVHCQ_TRY(patch_qmd_field(q, vars->grid[d], qmd, grid_f[d]));
    NVHCQ_TRY(
        nvhcq_queue_add_patch(q, vars->grid[d], NVHCQ_PATCH_U32, 0, 0, cbank + 4 * (3 + d), 0));
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
 * when the grid completes, without stalling the channel as a host release with WFI does. */
int nvhcq_queue_signal_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value) {
  nvhcq_qmd_version v = q->dev->compute_state.qmd_version;
  if (!q->last_qmd) return 0;
  for (unsigned slot = 0; slot < 3; slot++) {
    if (nvhcq_qmd_get(v, q->last_qmd_shadow, NVHCQ_QMD_RELEASE0_ENABLE + slot)) continue;
    if (nvhcq_qmd_set_release(v, q->last_qmd_shadow, slot, address, value)) return 0;
    /* The release needs no membar of its own (FE_SYSMEMBAR): a grid with a release always ends
     * with the system-scope CWD membar (see fence_before_successor), which makes its writes to
     * any memory visible before the release. libcuda's QMDs on the H200 release the same way
     * (RELEASE_MEMBAR_TYPE FE_NONE after L1_SYSMEMBAR). The "host" cases of test_order check it. */
    if (q->dev->compute_state.debug_fence == NVHCQ_DEBUG_FENCE_NOMEMBAR &&
        nvhcq_qmd_set(v, q->last_qmd_shadow, NVHCQ_QMD_RELEASE0_MEMBAR_TYPE + slot, 1))
      return 0;
    memcpy(q->last_qmd, q->last_qmd_shadow, nvhcq_qmd_size(v)); /* rare next to launches */
    return 1;
  }
  return 0;
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
