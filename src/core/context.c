/* The device's GPU context: the graphics channel group and its context share, the compute and
 * copy channels with their engine objects and UVM registrations, and the commands that bind the
 * engines. Created when the device opens and again by every recovery. */
#include "core/context.h"
#include "hw/qmd.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/compute.h"
#include "core/device.h"
#include "core/timeline.h"

#define GPFIFO_ENTRIES 0x4000u
#define GPFIFO_AREA    (2u << 20)
#define CMD_RING_BYTES (2u << 20)
#define NOTIFIER_BYTES (64u << 10)

/* While the device closes, UVM's unregistration of the address space lets go of its channels
 * (the release does it), as the freeing of the client frees them. */
static void unregister_channel(nvhcq_device *dev, nvhcq_channel *ch) {
  if (!ch->channel_va || nvhcq_device_closing(dev)) return;
  UVM_UNREGISTER_CHANNEL_PARAMS u = {
      .rmCtrlFd = dev->rm.fd_ctl, .hClient = dev->rm.root, .hChannel = ch->handle};
  memcpy(u.gpuUuid.uuid, dev->info.uuid, 16);
  (void)!nvhcq_uvm_call(&dev->rm, UVM_UNREGISTER_CHANNEL, "UVM_UNREGISTER_CHANNEL", &u,
                        offsetof(UVM_UNREGISTER_CHANNEL_PARAMS, rmStatus));
}

/* UVM lets go of every channel of a group before the driver frees any of them: the group's
 * shared buffers stay mapped while one registration holds them. */
static void destroy_channel(nvhcq_device *dev, nvhcq_channel *ch) {
  if (ch->handle && !nvhcq_device_closing(dev)) nvhcq_rm_free(&dev->rm, ch->group, ch->handle);
  if (ch->channel_va && nvhcq_device_closing(dev)) {
    /* UVM holds the range until the release unregisters it: the release returns it. */
    nvhcq_low_unmap(ch->channel_va, NVHCQ_CHANNEL_VA_BYTES);
    uint64_t *grown = realloc(dev->stuck_va, (dev->stuck_va_count + 1) * sizeof *grown);
    if (grown) dev->stuck_va = grown, dev->stuck_va[dev->stuck_va_count++] = ch->channel_va;
  } else if (ch->channel_va) {
    nvhcq_low_unmap(ch->channel_va, NVHCQ_CHANNEL_VA_BYTES);
    nvhcq_va_free(nvhcq_va_low(), ch->channel_va, NVHCQ_CHANNEL_VA_BYTES);
  }
  free(ch->entry_start);
  memset(ch, 0, sizeof *ch);
}

/* Gives UVM a range of our address space for the channel's context buffers. */
static nvhcq_status register_channel(const nvhcq_context_builder *b, nvhcq_channel *ch) {
  if (!b->uvm) return NVHCQ_SUCCESS; /* RM maps the context buffers in its own space */
  for (;;) {
    /* Aligned to its size: the driver places context buffers of large alignment in it. */
    NVHCQ_TRY(nvhcq_va_alloc(nvhcq_va_low(), NVHCQ_CHANNEL_VA_BYTES, NVHCQ_CHANNEL_VA_BYTES,
                             &ch->channel_va));
    /* UVM wants this range free of CPU mappings, like the rest of the GPU-only space. */
    munmap((void *)(uintptr_t)ch->channel_va, NVHCQ_CHANNEL_VA_BYTES);
    UVM_REGISTER_CHANNEL_PARAMS rc = {.rmCtrlFd = b->rm->fd_ctl,
                                      .hClient = b->rm->root,
                                      .hChannel = ch->handle,
                                      .base = ch->channel_va,
                                      .length = NVHCQ_CHANNEL_VA_BYTES};
    memcpy(rc.gpuUuid.uuid, b->dev->info.uuid, 16);
    nvhcq_status s = nvhcq_uvm_call(b->rm, UVM_REGISTER_CHANNEL, "UVM_REGISTER_CHANNEL", &rc,
                                    offsetof(UVM_REGISTER_CHANNEL_PARAMS, rmStatus));
    if (!s) return NVHCQ_SUCCESS;
    /* After a recovery UVM may still hold part of a range that an earlier channel used: keep
     * that range out of use until close and try another. */
    uint64_t *grown = rc.rmStatus == NV_ERR_INVALID_ADDRESS
                          ? realloc(*b->stuck, (*b->stuck_count + 1) * sizeof *grown)
                          : NULL;
    nvhcq_low_unmap(ch->channel_va, NVHCQ_CHANNEL_VA_BYTES);
    if (!grown) {
      uint64_t at = ch->channel_va;
      (void)!nvhcq_va_free(nvhcq_va_low(), at, NVHCQ_CHANNEL_VA_BYTES);
      ch->channel_va = 0;
      return nvhcq_fail_context(s, "registering the %s channel's range 0x%llx with UVM", ch->name,
                                (unsigned long long)at);
    }
    *b->stuck = grown;
    grown[(*b->stuck_count)++] = ch->channel_va;
    ch->channel_va = 0;
  }
}

/* The CPU's view of a new channel: its GPFIFO ring and USERD in the ring area, its doorbell and
 * its half of the command rings. */
static nvhcq_status attach_rings(const nvhcq_context_builder *b, nvhcq_context_saved *c,
                                 nvhcq_channel *ch, int copy, uint64_t ring_offset,
                                 uint64_t userd_offset) {
  char *area = c->gpfifo_area->host_pointer;
  ch->ring = (uint64_t *)(area + ring_offset);
  ch->gp_get = (volatile uint32_t *)(area + userd_offset + NVHCQ_USERD_GP_GET);
  ch->gp_put = (volatile uint32_t *)(area + userd_offset + NVHCQ_USERD_GP_PUT);
  ch->doorbell =
      (volatile uint32_t *)((char *)b->dev->usermode_map + NVHCQ_USERMODE_NOTIFY_CHANNEL_PENDING);
  ch->entries = GPFIFO_ENTRIES;
  ch->cmd_words = CMD_RING_BYTES / 4;
  ch->cmd = (uint32_t *)((char *)c->cmd_area->host_pointer + (copy ? CMD_RING_BYTES : 0));
  ch->cmd_gpu = c->cmd_area->gpu_address + (copy ? CMD_RING_BYTES : 0);
  ch->timeout_ms = b->timeout_ms;
  ch->qmd_version = copy ? 0 : (int)nvhcq_qmd_version_for_class(b->dev->classes.compute);
  ch->entry_start = calloc(GPFIFO_ENTRIES, sizeof *ch->entry_start);
  if (!ch->entry_start) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  return NVHCQ_SUCCESS;
}

/* Ring memory: on the registration thread mapped into the new space only, through its fd. */
static nvhcq_status ring_alloc(const nvhcq_context_builder *b, size_t size, nvhcq_memory_kind kind,
                               const nvhcq_alloc_options *o, nvhcq_buffer **out) {
  return b->background ? nvhcq_memory_alloc_uvm(b->dev, b->rm, size, kind, o, out)
                       : nvhcq_memory_alloc(b->dev, size, kind, o, out);
}

/* When the GPU may switch the compute channel's grids out for another process's work (nvhcq.h,
 * the open options). RM gives a new context WFI: its running grid ends before any switch. Measured
 * on the H200 (driver 580.159.04, .dev experiments of 2026-12-04): while an nvhcq process ran a
 * 2-second grid, another process's CUDA start (libcuda's or nvhcq's) and first kernel waited the
 * whole 2 s; with CTA preemption and a grid of 1-ms blocks they took 16 ms and 2 ms, the grid
 * still 2.02 s. libcuda asks for CILP (mid-block), which works through a trap handler of its own
 * that saves each warp; nvhcq has none, and CILP set without one changed nothing (a single
 * 2-second block held the GPU in every mode). A driver that refuses the request leaves WFI. */
static void set_preemption(const nvhcq_context_builder *b, nvhcq_context_saved *c,
                           const nvhcq_channel *ch) {
  const nvhcq_device *dev = b->dev;
  int block = dev->preemption_asked == NVHCQ_OPEN_PREEMPT_BLOCK;
  NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS p = {
      .flags = NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET,
      .hChannel = ch->handle,
      .cilpPreemptMode = block ? NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CTA
                               : NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_WFI};
  int taken =
      block && !nvhcq_rm_control(b->rm, dev->h_subdevice,
                                 NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE, &p, sizeof p);
  if (block && !taken) nvhcq_clear_error();
  c->preemption = taken ? NVHCQ_OPEN_PREEMPT_BLOCK : NVHCQ_OPEN_PREEMPT_GRID;
}

/* A channel of the graphics channel group, in the address space of its context share, or the
 * copy channel in a group of its own on an asynchronous copy engine. */
static nvhcq_status create_channel(const nvhcq_context_builder *b, nvhcq_context_saved *c,
                                   nvhcq_channel *ch, int copy) {
  const nvhcq_device *dev = b->dev;
  uint64_t ring_offset = copy ? GPFIFO_AREA / 2 : 0;
  if (!c->notifiers[copy])
    NVHCQ_TRY(ring_alloc(b, NOTIFIER_BYTES, NVHCQ_MEMORY_HOST_UNCACHED, NULL, &c->notifiers[copy]));
  memset(c->notifiers[copy]->host_pointer, 0, NOTIFIER_BYTES);
  NV_CHANNEL_ALLOC_PARAMS p;
  memset(&p, 0, sizeof p);
  p.hObjectError = c->notifiers[copy]->handle;
  p.hObjectBuffer = c->gpfifo_area->handle;
  p.gpFifoOffset = c->gpfifo_area->gpu_address + ring_offset;
  p.gpFifoEntries = GPFIFO_ENTRIES;
  /* On an asynchronous copy engine the driver gives the channel a synchronous context share of
   * the group's address space; the copy object names the engine. */
  int async = copy && dev->copy_engine_type;
  p.hContextShare = async ? 0 : c->h_ctxshare;
  p.engineType = async ? dev->copy_engine_type : 0;
  p.hUserdMemory[0] = c->gpfifo_area->handle;
  p.userdOffset[0] = ring_offset + GPFIFO_ENTRIES * 8ull;
  ch->group = async ? c->h_copy_group : c->h_group;
  NVHCQ_TRY(nvhcq_rm_alloc(b->rm, ch->group, dev->classes.gpfifo, &p, sizeof p, &ch->handle));
  NVB0B5_ALLOCATION_PARAMETERS ce = {NVB0B5_ALLOCATION_PARAMETERS_VERSION_1, dev->copy_engine_type};
  NVHCQ_TRY(nvhcq_rm_alloc(b->rm, ch->handle, copy ? dev->classes.copy : dev->classes.compute,
                           async ? &ce : NULL, async ? sizeof ce : 0, &ch->engine));
  if (!copy) set_preemption(b, c, ch);
  NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS tok = {.workSubmitToken = ~0u};
  NVHCQ_TRY(nvhcq_rm_control(b->rm, ch->handle, NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, &tok,
                             sizeof tok));
  ch->name = copy ? "copy" : "compute";
  NVHCQ_TRY(register_channel(b, ch));
  if (async) {
    NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS sched = {.bEnable = 1};
    NVHCQ_TRY(nvhcq_rm_control(b->rm, ch->handle, NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, &sched,
                               b->rm->branch->schedule_params_size));
  }
  ch->token = tok.workSubmitToken;
  return attach_rings(b, c, ch, copy, ring_offset, p.userdOffset[0]);
}

/* Copies run in the graphics channel group unless NVHCQ_COPY_ENGINE names an asynchronous copy
 * engine, or says "auto": the one with the most physical engines behind it. On the H200 that is
 * LCE 4 (12 of them); pinned copies there were no faster than in the group. */
nvhcq_status nvhcq_context_pick_copy_engine(nvhcq_device *dev) {
  dev->info.copy_engine = -1;
  const char *env = getenv("NVHCQ_COPY_ENGINE");
  if (!env || !strcmp(env, "gr")) return NVHCQ_SUCCESS;
  int best = -1, best_pces = 0;
  if (strcmp(env, "auto")) {
    char *end;
    long asked = strtol(env, &end, 10);
    if (end == env || *end || asked < 0 || asked >= (long)NV2080_CTRL_MAX_CES)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "NVHCQ_COPY_ENGINE=%s: say gr, auto or a copy engine number (0-%d)", env,
                        (int)NV2080_CTRL_MAX_CES - 1);
    best = (int)asked;
  }
  NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS caps;
  memset(&caps, 0, sizeof caps);
  if (best < 0 && !nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_CE_GET_ALL_CAPS,
                                    &caps, sizeof caps))
    for (uint32_t n = 0; n < NV2080_CTRL_MAX_CES; n++) {
      if (!(caps.present >> n & 1) || caps.capsTbl[n][0] & NV2080_CTRL_CE_CAPS_CE_GRCE) continue;
      NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS m = {.ceEngineType = NV2080_ENGINE_TYPE_COPY(n)};
      if (nvhcq_rm_control(&dev->rm, dev->h_subdevice, NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, &m,
                           sizeof m))
        continue;
      int pces = __builtin_popcount(m.pceMask);
      if (pces > best_pces) best = (int)n, best_pces = pces;
    }
  if (best < 0) return NVHCQ_SUCCESS;
  dev->info.copy_engine = best;
  dev->copy_engine_type = NV2080_ENGINE_TYPE_COPY((uint32_t)best);
  return NVHCQ_SUCCESS;
}

static nvhcq_status create_async_copy(const nvhcq_context_builder *b, nvhcq_context_saved *c) {
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS cg = {.hVASpace = b->h_vaspace,
                                               .engineType = b->dev->copy_engine_type};
  NVHCQ_TRY(nvhcq_rm_alloc(b->rm, b->dev->h_device, KEPLER_CHANNEL_GROUP_A, &cg, sizeof cg,
                           &c->h_copy_group));
  return create_channel(b, c, &c->copy, 1);
}

/* The engine would not take a channel: copies stay in the graphics group from now on (on the
 * device's thread only: it changes the device). */
static nvhcq_status copy_in_group(const nvhcq_context_builder *b, nvhcq_context_saved *c) {
  nvhcq_device *dev = b->dev;
  if (b->background) return nvhcq_fail(NVHCQ_ERROR_DRIVER, "the copy engine took no channel");
  unregister_channel(dev, &c->copy);
  destroy_channel(dev, &c->copy);
  if (c->h_copy_group) nvhcq_rm_free(&dev->rm, dev->h_device, c->h_copy_group);
  c->h_copy_group = 0;
  dev->copy_engine_type = 0;
  dev->info.copy_engine = -1;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_context_build(const nvhcq_context_builder *b, nvhcq_context_saved *c) {
  nvhcq_device *dev = b->dev;
  c->present = 1;
  /* The group names the address space its channels use (left out, it is the device's first). */
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS gp = {.hVASpace = b->h_vaspace,
                                               .engineType = NV2080_ENGINE_TYPE_GRAPHICS};
  NVHCQ_TRY(
      nvhcq_rm_alloc(b->rm, dev->h_device, KEPLER_CHANNEL_GROUP_A, &gp, sizeof gp, &c->h_group));
  nvhcq_alloc_options ring_opts = {.contiguous = 1, .map_flags = NVHCQ_MAP_WRITE_COMBINED};
  if (!c->gpfifo_area)
    NVHCQ_TRY(ring_alloc(b, GPFIFO_AREA, NVHCQ_MEMORY_DEVICE_MAPPED, &ring_opts, &c->gpfifo_area));
  memset(c->gpfifo_area->host_pointer, 0, GPFIFO_AREA);
  nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  if (!c->cmd_area)
    NVHCQ_TRY(ring_alloc(b, 2 * CMD_RING_BYTES, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, &c->cmd_area));
  NV_CTXSHARE_ALLOCATION_PARAMETERS cp = {.hVASpace = b->h_vaspace,
                                          .flags = NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC};
  NVHCQ_TRY(
      nvhcq_rm_alloc(b->rm, c->h_group, FERMI_CONTEXT_SHARE_A, &cp, sizeof cp, &c->h_ctxshare));
  NVHCQ_TRY(create_channel(b, c, &c->compute, 0));
  if (dev->copy_engine_type && create_async_copy(b, c)) NVHCQ_TRY(copy_in_group(b, c));
  if (!c->copy.handle) NVHCQ_TRY(create_channel(b, c, &c->copy, 1));
  NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS sched = {.bEnable = 1};
  NVHCQ_TRY(nvhcq_rm_control(b->rm, c->h_group, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sched,
                             b->rm->branch->schedule_params_size));
  c->h_debugger = nvhcq_fault_debugger(b->rm, dev->h_device, c->compute.engine);
  return NVHCQ_SUCCESS;
}

/* The group, its context share and both channels. The rings' memory is kept across recoveries;
 * a new channel starts from an empty ring. What was made before a failure is the device's, for
 * nvhcq_context_destroy. */
nvhcq_status nvhcq_context_create(nvhcq_device *dev) {
  nvhcq_context_builder b = {.dev = dev,
                             .rm = &dev->rm,
                             .h_vaspace = dev->h_vaspace,
                             .uvm = !dev->rm_only,
                             .timeout_ms = dev->timeout_ms,
                             .stuck = &dev->stuck_va,
                             .stuck_count = &dev->stuck_va_count};
  nvhcq_context_saved c;
  nvhcq_context_take(dev, &c); /* the rings kept, nothing else */
  nvhcq_status s = nvhcq_context_build(&b, &c);
  nvhcq_context_put_back(dev, &c);
  return s;
}

/* Binds the engine objects to their subchannels and sets the shader windows, each channel after
 * its timeline reached after[copy] if `after` is given. */
static nvhcq_status submit_setup(nvhcq_device *dev, const uint64_t *after, uint64_t v[2]) {
  for (int c = 0; c < 2; c++) {
    nvhcq_push *p = nvhcq_timeline_scratch(dev);
    if (after) nvhcq_push_host_wait(p, dev->timeline.signal[c]->gpu_address, after[c]);
    nvhcq_push_method1(p, c ? NVHCQ_SUBC_COPY : NVHCQ_SUBC_COMPUTE, NVC6C0_SET_OBJECT,
                       c ? dev->classes.copy : dev->classes.compute);
    if (!c) nvhcq_compute_push_state(dev, p);
    NVHCQ_TRY(nvhcq_device_submit_scratch(dev, c, &v[c]));
  }
  return NVHCQ_SUCCESS;
}

/* The device is ready when this returns. */
nvhcq_status nvhcq_context_setup(nvhcq_device *dev) {
  uint64_t v[2];
  NVHCQ_TRY(submit_setup(dev, NULL, v));
  NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 0, v[0]));
  return nvhcq_device_wait_timeline(dev, 1, v[1]);
}

nvhcq_status nvhcq_context_setup_after(nvhcq_device *dev, const uint64_t after[2]) {
  uint64_t v[2];
  return submit_setup(dev, after, v);
}

/* Exchanges the device's context with a saved one. */
static void swap_context(nvhcq_device *dev, nvhcq_context_saved *s) {
  nvhcq_context_saved d = {.present = 1,
                           .h_group = dev->h_group,
                           .h_ctxshare = dev->h_ctxshare,
                           .h_copy_group = dev->h_copy_group,
                           .h_debugger = dev->fault.h_debugger,
                           .compute = dev->compute,
                           .copy = dev->copy,
                           .gpfifo_area = dev->gpfifo_area,
                           .cmd_area = dev->cmd_area,
                           .notifiers = {dev->notifiers[0], dev->notifiers[1]},
                           .preemption = dev->info.preemption};
  dev->h_group = s->h_group, dev->h_ctxshare = s->h_ctxshare, dev->h_copy_group = s->h_copy_group;
  dev->fault.h_debugger = s->h_debugger;
  dev->compute = s->compute, dev->copy = s->copy;
  dev->gpfifo_area = s->gpfifo_area, dev->cmd_area = s->cmd_area;
  dev->notifiers[0] = s->notifiers[0], dev->notifiers[1] = s->notifiers[1];
  dev->info.preemption = s->preemption;
  memcpy(d.drained_at, s->drained_at, sizeof d.drained_at);
  *s = d;
}

void nvhcq_context_take(nvhcq_device *dev, nvhcq_context_saved *out) {
  nvhcq_context_saved none = {0};
  swap_context(dev, &none);
  *out = none;
}

void nvhcq_context_put_back(nvhcq_device *dev, nvhcq_context_saved *saved) {
  swap_context(dev, saved);
  memset(saved, 0, sizeof *saved);
}

void nvhcq_context_destroy_saved(nvhcq_device *dev, nvhcq_context_saved *saved, int stop) {
  if (!saved->present) return;
  swap_context(dev, saved);
  if (stop) nvhcq_context_stop_compute(dev);
  nvhcq_context_destroy(dev);
  nvhcq_context_free_rings(dev);
  swap_context(dev, saved);
  memset(saved, 0, sizeof *saved);
}

/* Freeing a channel whose kernel never ends waits seconds for a preemption that cannot happen;
 * stopping it the way a fault does takes milliseconds. */
void nvhcq_context_stop_compute(nvhcq_device *dev) {
  if (nvhcq_fault_channel_stopped(dev, 0) || !dev->compute.handle) return;
  NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS r = {.engineID = NV2080_ENGINE_TYPE_GRAPHICS};
  (void)!nvhcq_rm_control(&dev->rm, dev->compute.handle, NV906F_CTRL_CMD_RESET_CHANNEL, &r,
                          sizeof r);
}

void nvhcq_context_destroy(nvhcq_device *dev) {
  nvhcq_fault_detach(dev);
  unregister_channel(dev, &dev->compute);
  unregister_channel(dev, &dev->copy);
  destroy_channel(dev, &dev->compute);
  destroy_channel(dev, &dev->copy);
  if (dev->h_copy_group && !nvhcq_device_closing(dev))
    nvhcq_rm_free(&dev->rm, dev->h_device, dev->h_copy_group);
  if (dev->h_group && !nvhcq_device_closing(dev))
    nvhcq_rm_free(&dev->rm, dev->h_device, dev->h_group);
  dev->h_group = dev->h_ctxshare = dev->h_copy_group = 0;
}

void nvhcq_context_free_rings(nvhcq_device *dev) {
  for (int i = 0; i < 2; i++) nvhcq_memory_drop(&dev->notifiers[i]);
  nvhcq_memory_drop(&dev->cmd_area);
  nvhcq_memory_drop(&dev->gpfifo_area);
}
