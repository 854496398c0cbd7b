/* A device's compute state: what every launch shares (QMD version, SM limits, bank-0 prefix,
 * debug switches), the shader windows, the local memory for stacks and the argument ring. */
#include "core/compute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/timeline.h"
#include "hw/qmd.h"
#include "util/align.h"

#define ARGS_RING_BYTES (32u << 20)
#define SHARED_WINDOW   NVHCQ_SHARED_WINDOW
#define LOCAL_WINDOW    NVHCQ_LOCAL_WINDOW

/* NVHCQ_DEBUG_FENCE: deliberately weaker or older ordering, for the ordering tests and for
 * measuring what the fence policy gains. "unordered": launches in a queue are neither chained
 * nor separated by a wait for idle (they may overlap: wrong on purpose); "nomembar": no
 * end-of-grid membar at all (not proven safe); "system": every grid ends with the system-scope
 * membar (the policy before 0.1.x's chained fences); "host-wfi": grids submitted one by one are
 * ordered by the host's wait for idle (the policy before 0.2.x); "preexit": a chained grid may
 * pre-exit (ENABLE_PROGRAM_PRE_EXIT), which starts its successor before its membar (wrong on
 * purpose: test_order shows it). NVHCQ_DEBUG_CARVEOUT=one-block: the
 * smallest configuration that holds one block (the policy before occupancy-driven carveouts).
 * NVHCQ_DEBUG_CBANK_INVALIDATE=grid: every grid's QMD invalidates its bank 0 in the constant
 * cache (the earlier policy); =never: nothing does (wrong; launch.c's fence_constant_cache
 * says what it showed). */
static void read_qmd_pokes(nvhcq_compute_state *cs, const char *spec) {
  while (spec && *spec && cs->debug_qmd_count < sizeof cs->debug_qmd / sizeof cs->debug_qmd[0]) {
    char where;
    unsigned hi, lo, value;
    int used = 0;
    if (sscanf(spec, "%c:%u:%u=%i%n", &where, &hi, &lo, &value, &used) != 4 || hi < lo ||
        hi - lo > 31 || hi >= 32 * 96)
      return;
    cs->debug_qmd[cs->debug_qmd_count++] =
        (nvhcq_qmd_poke){where, (uint16_t)hi, (uint16_t)lo, value};
    spec += used;
    spec += *spec == ',';
  }
}

/* NVHCQ_DEBUG_QMD="a:HI:LO=V,c:HI:LO=V": raw QMD bits, for experiments that compare a field
 * with what libcuda writes ('a': every QMD; 'c': a QMD once a successor is chained to it). */
static void read_debug_knobs(nvhcq_compute_state *cs) {
  read_qmd_pokes(cs, getenv("NVHCQ_DEBUG_QMD"));
  const char *f = getenv("NVHCQ_DEBUG_FENCE"), *c = getenv("NVHCQ_DEBUG_CARVEOUT");
  cs->debug_fence = !f                        ? NVHCQ_DEBUG_FENCE_OFF
                    : !strcmp(f, "unordered") ? NVHCQ_DEBUG_FENCE_UNORDERED
                    : !strcmp(f, "nomembar")  ? NVHCQ_DEBUG_FENCE_NOMEMBAR
                    : !strcmp(f, "system")    ? NVHCQ_DEBUG_FENCE_SYSTEM
                    : !strcmp(f, "host-wfi")  ? NVHCQ_DEBUG_FENCE_HOST_WFI
                    : !strcmp(f, "preexit")   ? NVHCQ_DEBUG_FENCE_PREEXIT
                                              : NVHCQ_DEBUG_FENCE_OFF;
  cs->debug_one_block_carveout = c && !strcmp(c, "one-block");
  cs->debug_no_prefetch = getenv("NVHCQ_DEBUG_NO_PREFETCH") != NULL;
  cs->debug_no_bank0_prefetch = getenv("NVHCQ_DEBUG_NO_BANK0_PREFETCH") != NULL;
  cs->debug_tpc_any = getenv("NVHCQ_DEBUG_TPC_ANY") != NULL;
  const char *ci = getenv("NVHCQ_DEBUG_CBANK_INVALIDATE");
  cs->debug_cbank_invalidate = !ci                    ? NVHCQ_DEBUG_CBANK_INVALIDATE_OFF
                               : !strcmp(ci, "grid")  ? NVHCQ_DEBUG_CBANK_INVALIDATE_GRID
                               : !strcmp(ci, "never") ? NVHCQ_DEBUG_CBANK_INVALIDATE_NEVER
                                                      : NVHCQ_DEBUG_CBANK_INVALIDATE_OFF;
  int policy = cs->debug_cbank_invalidate == NVHCQ_DEBUG_CBANK_INVALIDATE_OFF;
  cs->cbank_fence_commands = policy;
  cs->cbank_invalidate_each_grid =
      cs->debug_cbank_invalidate == NVHCQ_DEBUG_CBANK_INVALIDATE_GRID ||
      (policy && cs->qmd_version != NVHCQ_QMD_V04);
}

void nvhcq_compute_init(nvhcq_device *dev) {
  nvhcq_compute_state *cs = &dev->compute_state;
  cs->qmd_version = nvhcq_qmd_version_for_class(dev->classes.compute);
  nvhcq_qmd_launch_layout_for(cs->qmd_version, &cs->launch_layout); /* none: modules refuse */
  nvhcq_sm_limits_for(dev->info.sm_version, dev->info.warps_per_sm, &cs->sm_limits);
  cs->max_shared = cs->sm_limits.block_shared;
  read_debug_knobs(cs);
  uint32_t *p = cs->cbank0_prefix;
  memset(p, 0, sizeof cs->cbank0_prefix);
  p[6] = (uint32_t)SHARED_WINDOW, p[7] = (uint32_t)(SHARED_WINDOW >> 32);
  p[8] = (uint32_t)LOCAL_WINDOW, p[9] = (uint32_t)(LOCAL_WINDOW >> 32);
  p[10] = 0xfffdc0; /* top of the per-thread stack in the local window */
}

void nvhcq_compute_fini(nvhcq_device *dev) {
  nvhcq_memory_drop(&dev->compute_state.grid_workspace);
  nvhcq_memory_drop(&dev->compute_state.args);
  nvhcq_memory_drop(&dev->compute_state.local_memory);
}

static void push_local_memory(const nvhcq_compute_state *cs, nvhcq_push *p) {
  if (!cs->local_memory) return;
  uint64_t at = cs->local_memory->gpu_address, per_tpc = cs->local_per_tpc;
  uint32_t addr[2] = {(uint32_t)(at >> 32), (uint32_t)at};
  uint32_t tpc[3] = {(uint32_t)(per_tpc >> 32), (uint32_t)per_tpc, 0xff};
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_A, addr, 2);
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, tpc, 3);
}

void nvhcq_compute_push_state(nvhcq_device *dev, nvhcq_push *p) {
  uint32_t shared[2] = {(uint32_t)(SHARED_WINDOW >> 32), (uint32_t)SHARED_WINDOW};
  uint32_t local[2] = {(uint32_t)(LOCAL_WINDOW >> 32), (uint32_t)LOCAL_WINDOW};
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A, shared, 2);
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A, local, 2);
  push_local_memory(&dev->compute_state, p);
  nvhcq_texture_pool_push(dev, p);
}

nvhcq_status nvhcq_compute_ensure_local_memory(nvhcq_device *dev, uint32_t bytes) {
  nvhcq_compute_state *cs = &dev->compute_state;
  if (bytes <= cs->local_per_thread) return NVHCQ_SUCCESS;
  nvhcq_device_info *i = &dev->info;
  uint32_t per_thread = NVHCQ_ALIGN_UP(bytes, 32u);
  uint64_t per_warp = NVHCQ_ALIGN_UP(per_thread * 32, 0x200u);
  uint64_t per_tpc = NVHCQ_ALIGN_UP(per_warp * i->warps_per_sm * i->sms_per_tpc, 0x8000ull);
  uint64_t total = NVHCQ_ALIGN_UP(per_tpc * i->tpcs_per_gpc * i->gpcs, 0x20000ull);
  NVHCQ_TRY(nvhcq_device_cpu_wait_idle(dev));
  nvhcq_buffer *mem;
  nvhcq_status s = nvhcq_memory_alloc(dev, total, NVHCQ_MEMORY_DEVICE, NULL, &mem);
  if (s)
    return nvhcq_fail_context(s,
                              "kernels need %u bytes of local memory per thread (%llu MiB "
                              "for the GPU)",
                              per_thread, (unsigned long long)(total >> 20));
  if (cs->local_memory) nvhcq_memory_free(cs->local_memory);
  cs->local_memory = mem;
  cs->local_per_thread = per_thread;
  cs->local_per_tpc = per_tpc;
  nvhcq_push *p = nvhcq_timeline_scratch(dev);
  push_local_memory(cs, p);
  uint64_t v;
  NVHCQ_TRY(nvhcq_device_submit_scratch(dev, 0, &v));
  return nvhcq_device_wait_timeline(dev, 0, v);
}

/* cooperative_groups' grid_workspace: its size, then the barrier word grid.sync() counts in. One
 * sync of all blocks adds 0x80000000 (the first block 0x80000000 - (blocks - 1), every other 1)
 * and each waits for the top bit to flip, which happens at the last arrival only when the low 31
 * bits start at 0: a complete sync leaves them so, a grid stopped in the middle does not
 * (nvhcq_compute_reset_grid_workspace). Every compute grid of a device runs on its one compute
 * channel, in order, so one workspace serves them all. */
nvhcq_status nvhcq_compute_grid_workspace(nvhcq_device *dev, uint64_t *gpu) {
  nvhcq_compute_state *cs = &dev->compute_state;
  if (!cs->grid_workspace) {
    nvhcq_buffer *mem;
    NVHCQ_TRY(nvhcq_memory_alloc(dev, 4096, NVHCQ_MEMORY_DEVICE_MAPPED, NULL, &mem));
    uint32_t ws[2] = {8, 0};
    memcpy(mem->host_pointer, ws, sizeof ws);
    cs->grid_workspace = mem;
  }
  *gpu = cs->grid_workspace->gpu_address;
  return NVHCQ_SUCCESS;
}

void nvhcq_compute_reset_grid_workspace(nvhcq_device *dev) {
  nvhcq_buffer *ws = dev->compute_state.grid_workspace;
  if (ws) ((volatile uint32_t *)ws->host_pointer)[1] = 0;
}

/* A chunk of the argument ring. Reusing a lap's space waits for the compute channel: the ring is
 * large enough that this happens once per ~100k launches. */
nvhcq_status nvhcq_compute_args_alloc(nvhcq_device *dev, uint32_t bytes, uint64_t *pos,
                                      uint8_t **cpu, uint64_t *gpu) {
  static const nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  nvhcq_compute_state *cs = &dev->compute_state;
  if (!cs->args)
    NVHCQ_TRY(nvhcq_memory_alloc(dev, ARGS_RING_BYTES, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, &cs->args));
  uint64_t start = cs->args_head;
  if (start % ARGS_RING_BYTES + bytes > ARGS_RING_BYTES)
    start += ARGS_RING_BYTES - start % ARGS_RING_BYTES;
  int new_lap =
      cs->args_head > 0 && start / ARGS_RING_BYTES != (cs->args_head - 1) / ARGS_RING_BYTES;
  if (new_lap || (cs->args_sync_at && start + bytes > cs->args_sync_at)) {
    NVHCQ_TRY(nvhcq_device_cpu_wait_idle(dev));
    cs->args_sync_at = 0;
  }
  if (new_lap) cs->args_lap_start = start;
  cs->args_head = start + bytes;
  *pos = start;
  *cpu = (uint8_t *)cs->args->host_pointer + start % ARGS_RING_BYTES;
  *gpu = cs->args->gpu_address + start % ARGS_RING_BYTES;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_compute_args_keep(nvhcq_device *dev, uint64_t first) {
  nvhcq_compute_state *cs = &dev->compute_state;
  if (cs->args_head - first > ARGS_RING_BYTES)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "this queue's kernel arguments were recycled by %llu MiB of later launches; "
                      "reset and record it again (or submit it sooner)",
                      (unsigned long long)((cs->args_head - first) >> 20));
  /* Arguments from before the current lap's wait are not covered by it: the ring must wait for
   * this work before it comes round to them again. */
  uint64_t reuse = first + ARGS_RING_BYTES;
  if (first < cs->args_lap_start && (!cs->args_sync_at || reuse < cs->args_sync_at))
    cs->args_sync_at = reuse;
  return NVHCQ_SUCCESS;
}
