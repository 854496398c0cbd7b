/* Recorded queues: their own argument memory, variables and the places they patch, upload of the
 * commands at finish, replay with one submission. */
#include <stdlib.h>
#include <string.h>

#include "core/slab.h"
#include "exec/module.h"
#include "exec/queue.h"
#include "exec/profile.h"
#include "util/align.h"
#include "util/abi.h"

/* Launch memory comes in chunks that double from the first, small one (most recordings are a few
 * launches: CUDA graphs of a handful of kernels) up to this. */
#define ARENA_FIRST_BYTES (64u << 10)
#define ARENA_CHUNK_BYTES (4u << 20)

/* CPU-mapped device memory the recording writes for the GPU: a slab block when small, so that
 * recording (instantiating a graph) makes no driver call once a slab exists. */
static nvhcq_status mapped_alloc(nvhcq_device *dev, size_t size, nvhcq_buffer **out) {
  static const nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  if (size <= NVHCQ_SLAB_LARGEST && !dev->no_slabs) return nvhcq_slab_alloc_mapped(dev, size, out);
  return nvhcq_memory_alloc(dev, size, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, out);
}

static nvhcq_status check_recording(const nvhcq_queue *q, const char *what) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (q->finished)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: the queue is finished; reset it to record again", what);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_create_recorded(nvhcq_device *dev, nvhcq_queue_kind kind,
                                         nvhcq_queue **out) {
  NVHCQ_TRY(nvhcq_queue_create(dev, kind, out));
  (*out)->ops = &nvhcq_recorded_queue_ops;
  return NVHCQ_SUCCESS;
}

static nvhcq_status recorded_launch_memory(nvhcq_queue *q, uint32_t bytes, uint8_t **cpu,
                                           uint64_t *gpu) {
  nvhcq_buffer *last = q->arena_count ? q->arena[q->arena_count - 1] : NULL;
  if (!last || q->arena_used + bytes > last->size) {
    size_t size = last ? last->size * 2 : ARENA_FIRST_BYTES;
    if (size > ARENA_CHUNK_BYTES) size = ARENA_CHUNK_BYTES;
    if (size < bytes) size = NVHCQ_ALIGN_UP((size_t)bytes, (size_t)4096);
    nvhcq_buffer **grown = realloc(q->arena, (q->arena_count + 1) * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    q->arena = grown;
    NVHCQ_TRY(mapped_alloc(q->dev, size, &q->arena[q->arena_count]));
    q->arena_count++;
    q->arena_used = 0;
  }
  nvhcq_buffer *chunk = q->arena[q->arena_count - 1];
  *cpu = (uint8_t *)chunk->host_pointer + q->arena_used;
  *gpu = chunk->gpu_address + q->arena_used;
  q->arena_used += NVHCQ_ALIGN_UP(bytes, 256u);
  return NVHCQ_SUCCESS;
}

static void free_recording(nvhcq_queue *q) {
  for (uint32_t i = 0; i < q->arena_count; i++) nvhcq_memory_free(q->arena[i]);
  free(q->arena);
  if (q->cmds) nvhcq_memory_free(q->cmds);
  if (q->done) nvhcq_signal_destroy(q->done);
  free(q->vars);
  free(q->patches);
  free(q->var_launches);
  q->arena = NULL, q->cmds = NULL, q->done = NULL, q->vars = NULL, q->patches = NULL;
  q->var_launches = NULL, q->var_launch_count = q->var_launch_capacity = 0;
  q->arena_count = 0, q->arena_used = 0, q->var_count = q->var_capacity = 0;
  q->patch_count = q->patch_capacity = 0, q->finished = 0, q->replays = 0;
}

/* ---- variables ---- */

nvhcq_status nvhcq_queue_var(nvhcq_queue *q, const char *name, uint64_t value, nvhcq_var *out) {
  NVHCQ_TRY(check_recording(q, "nvhcq_queue_var"));
  if (!nvhcq_queue_is_recorded(q) || !out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "variables belong to recorded queues "
                      "(nvhcq_queue_create_recorded)%s",
                      out ? "" : "; out is NULL");
  if (q->var_count == q->var_capacity) {
    uint32_t cap = q->var_capacity ? 2 * q->var_capacity : 16;
    nvhcq_var_slot *grown = realloc(q->vars, cap * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    q->vars = grown, q->var_capacity = cap;
  }
  nvhcq_var_slot *v = &q->vars[q->var_count];
  snprintf(v->name, sizeof v->name, "%s", name ? name : "");
  v->value = value;
  *out = q->var_count++;
  return NVHCQ_SUCCESS;
}

static nvhcq_status check_var(const nvhcq_queue *q, nvhcq_var var) {
  if (var == NVHCQ_NO_VAR || var < q->var_count) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "variable %u does not exist (the queue has %u)",
                    var, q->var_count);
}

nvhcq_status nvhcq_queue_add_patch(nvhcq_queue *q, nvhcq_var var, nvhcq_patch_kind kind,
                                   int in_commands, uint32_t word, void *ptr, int64_t add) {
  if (var == NVHCQ_NO_VAR) return NVHCQ_SUCCESS;
  NVHCQ_TRY(check_var(q, var));
  if (q->patch_count == q->patch_capacity) {
    uint32_t cap = q->patch_capacity ? 2 * q->patch_capacity : 64;
    nvhcq_patch *grown = realloc(q->patches, cap * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    q->patches = grown, q->patch_capacity = cap;
  }
  q->patches[q->patch_count++] = (nvhcq_patch){var, kind, in_commands, word, ptr, add};
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_add_var_launch(nvhcq_queue *q, const nvhcq_kernel *k, nvhcq_dim3 grid,
                                        nvhcq_dim3 block, const nvhcq_launch_vars *vars) {
  int any = 0;
  for (int d = 0; d < 3; d++)
    any |= vars->grid[d] != NVHCQ_NO_VAR || vars->block[d] != NVHCQ_NO_VAR;
  if (!any) return NVHCQ_SUCCESS;
  if (q->var_launch_count == q->var_launch_capacity) {
    uint32_t cap = q->var_launch_capacity ? 2 * q->var_launch_capacity : 16;
    nvhcq_var_launch *grown = realloc(q->var_launches, cap * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    q->var_launches = grown, q->var_launch_capacity = cap;
  }
  nvhcq_var_launch *l = &q->var_launches[q->var_launch_count++];
  *l = (nvhcq_var_launch){.kernel = k, .grid = grid, .block = block};
  memcpy(l->grid_var, vars->grid, sizeof l->grid_var);
  memcpy(l->block_var, vars->block, sizeof l->block_var);
  return NVHCQ_SUCCESS;
}

/* One dimension of a launch: its variable's value (`value` for `var`), else as recorded. Returns
 * whether `var` is the one. */
static int dim_of(const nvhcq_queue *q, nvhcq_var from, nvhcq_var var, uint64_t value,
                  uint32_t *dim) {
  if (from == NVHCQ_NO_VAR) return 0;
  uint64_t v = from == var ? value : q->vars[from].value;
  *dim = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  return from == var;
}

/* Every launch whose grid or block use `var` stays within its kernel's limits with `value`. */
static nvhcq_status check_var_launches(const nvhcq_queue *q, nvhcq_var var, uint64_t value) {
  for (uint32_t i = 0; i < q->var_launch_count; i++) {
    const nvhcq_var_launch *l = &q->var_launches[i];
    nvhcq_dim3 g = l->grid, b = l->block;
    uint32_t *gd[3] = {&g.x, &g.y, &g.z}, *bd[3] = {&b.x, &b.y, &b.z};
    int uses = 0;
    for (int d = 0; d < 3; d++)
      uses |= dim_of(q, l->grid_var[d], var, value, gd[d]) |
              dim_of(q, l->block_var[d], var, value, bd[d]);
    nvhcq_status s = uses ? nvhcq_launch_check_dims(l->kernel, g, b) : NVHCQ_SUCCESS;
    if (s)
      return nvhcq_fail_context(s, "variable '%s' = %llu", q->vars[var].name,
                                (unsigned long long)value);
  }
  return NVHCQ_SUCCESS;
}

static const uint64_t patch_max[] = {0xff,  0xffff, 0xffffffffu, ~0ull,
                                     ~0ull, ~0ull,  ~0ull,       0x7fffffffu};

static void *patch_target(const nvhcq_queue *q, const nvhcq_patch *p) {
  if (!p->in_commands) return p->ptr;
  uint32_t *words = q->finished ? (uint32_t *)q->cmds->host_pointer : q->push.words;
  return words + p->word;
}

static void write_patch(void *at, nvhcq_patch_kind kind, uint64_t v) {
  uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
  switch (kind) {
  case NVHCQ_PATCH_U8:
    *(volatile uint8_t *)at = (uint8_t)v;
    break;
  case NVHCQ_PATCH_U16:
    *(volatile uint16_t *)at = (uint16_t)v;
    break;
  case NVHCQ_PATCH_U32:
  case NVHCQ_PATCH_LENGTH:
    *(volatile uint32_t *)at = lo;
    break;
  case NVHCQ_PATCH_U32_HI:
    *(volatile uint32_t *)at = hi;
    break;
  case NVHCQ_PATCH_U64:
    memcpy(at, &v, 8);
    break;
  case NVHCQ_PATCH_HI_LO:
    ((volatile uint32_t *)at)[0] = hi, ((volatile uint32_t *)at)[1] = lo;
    break;
  case NVHCQ_PATCH_LO_HI:
    ((volatile uint32_t *)at)[0] = lo, ((volatile uint32_t *)at)[1] = hi;
    break;
  }
}

/* Checks every site of `var` takes `value` before writing any: a refused value changes nothing. */
static nvhcq_status apply_var(nvhcq_queue *q, nvhcq_var var, uint64_t value) {
  NVHCQ_TRY(check_var_launches(q, var, value));
  for (uint32_t i = 0; i < q->patch_count; i++) {
    const nvhcq_patch *p = &q->patches[i];
    uint64_t v = value + (uint64_t)p->add;
    if (p->var == var && (v > patch_max[p->kind] || (p->kind == NVHCQ_PATCH_LENGTH && v == 0)))
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "variable '%s' = %llu does not fit one of its places (at most %llu there)",
                        q->vars[var].name, (unsigned long long)value,
                        (unsigned long long)(patch_max[p->kind] - (uint64_t)p->add));
  }
  for (uint32_t i = 0; i < q->patch_count; i++)
    if (q->patches[i].var == var)
      write_patch(patch_target(q, &q->patches[i]), q->patches[i].kind,
                  value + (uint64_t)q->patches[i].add);
  q->vars[var].value = value;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_set_var(nvhcq_queue *q, nvhcq_var var, uint64_t value) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (!nvhcq_queue_is_recorded(q) || var == NVHCQ_NO_VAR || var >= q->var_count)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "variable %u does not exist in this queue",
                      var);
  if (q->finished && nvhcq_queue_replays_pending(q))
    return nvhcq_fail(NVHCQ_ERROR_BUSY,
                      "variable '%s' cannot change while the queue's replays are running (%llu of "
                      "%llu done); call nvhcq_queue_cpu_wait_idle first",
                      q->vars[var].name, (unsigned long long)nvhcq_signal_load(q->done),
                      (unsigned long long)q->replays);
  if (!q->finished) {
    q->vars[var].value = value; /* written at finish */
    return NVHCQ_SUCCESS;
  }
  NVHCQ_TRY(apply_var(q, var, value));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return NVHCQ_SUCCESS;
}

/* ---- finish, replay ---- */

nvhcq_status nvhcq_queue_finish(nvhcq_queue *q) {
  NVHCQ_TRY(check_recording(q, "nvhcq_queue_finish"));
  if (!nvhcq_queue_is_recorded(q))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "only recorded queues are finished (nvhcq_queue_create_recorded)");
  NVHCQ_TRY(q->push.error);
  if (q->push.len == 0) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "the queue is empty");
  if (q->push.len > NVHCQ_GPFIFO_MAX_WORDS)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "the queue holds %u command words; one submission holds at most %u: "
                      "record it as several queues",
                      q->push.len, NVHCQ_GPFIFO_MAX_WORDS);
  for (nvhcq_var v = 0; v < q->var_count; v++) NVHCQ_TRY(apply_var(q, v, q->vars[v].value));
  NVHCQ_TRY(mapped_alloc(q->dev, q->push.len * 4ull, &q->cmds));
  memcpy(q->cmds->host_pointer, q->push.words, q->push.len * 4ull);
  NVHCQ_TRY(nvhcq_signal_create(q->dev, 0, &q->done));
  q->finished = 1;
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_queue_replays_pending(nvhcq_queue *q) {
  uint64_t done = nvhcq_signal_load(q->done);
  if (q->generation != q->dev->generation) { /* channels re-created: the rest never runs */
    q->replays = done;
    q->generation = q->dev->generation;
  }
  return q->replays > done ? q->replays - done : 0;
}

/* The recorded commands in one entry, then the replay counter's release in a second: the
 * counter is what makes variable changes safe. */
static nvhcq_status recorded_submit(nvhcq_queue *q) {
  if (!q->finished)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "a recorded queue is submitted after nvhcq_queue_finish");
  nvhcq_device *dev = q->dev;
  int copy = q->kind == NVHCQ_QUEUE_COPY;
  nvhcq_channel *ch = nvhcq_device_channel(dev, copy);
  (void)nvhcq_queue_replays_pending(q);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  NVHCQ_TRY(nvhcq_channel_submit_gpu(ch, q->cmds->gpu_address, q->push.len));
  nvhcq_push *p = nvhcq_timeline_scratch(dev);
  if (copy)
    nvhcq_push_copy_signal(p, q->done->gpu_address, q->replays + 1, dev->copy_payload64);
  else
    nvhcq_push_host_signal(p, q->done->gpu_address, q->replays + 1);
  NVHCQ_TRY(p->error);
  NVHCQ_TRY(nvhcq_channel_submit(ch, p->words, p->len));
  q->replays++;
  return NVHCQ_SUCCESS;
}

/* An eager queue's submissions went into its channel as they came: a timeline release after
 * them there says when they are done. */
static nvhcq_status wait_eager(nvhcq_queue *q, uint32_t timeout_ms) {
  nvhcq_device *dev = q->dev;
  int copy = q->kind == NVHCQ_QUEUE_COPY;
  if (dev->broken) return nvhcq_device_cpu_wait_idle(dev); /* says why */
  uint64_t v;
  nvhcq_timeline_scratch(dev);
  NVHCQ_TRY(nvhcq_device_submit_scratch(dev, copy, &v));
  return nvhcq_signal_cpu_wait(dev->timeline.signal[copy], v, timeout_ms);
}

nvhcq_status nvhcq_queue_cpu_wait_idle(nvhcq_queue *q, uint32_t timeout_ms) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (!nvhcq_queue_is_recorded(q)) return wait_eager(q, timeout_ms);
  if (!q->finished || !nvhcq_queue_replays_pending(q)) return NVHCQ_SUCCESS;
  return nvhcq_signal_cpu_wait(q->done, q->replays, timeout_ms);
}

/* ---- recording with variables ---- */

/* The signal, and the patch sites of its value: in the last QMD's release it went into, or in
 * the release command. */
static nvhcq_status record_signal_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value,
                                      uint64_t v) {
  uint32_t start = q->push.len;
  uint32_t *qmd_before = q->last_qmd;
  uint32_t released_before[3];
  for (unsigned s = 0; s < 3 && qmd_before; s++)
    released_before[s] = (uint32_t)nvhcq_qmd_get(q->dev->compute_state.qmd_version,
                                                 q->last_qmd_shadow, NVHCQ_QMD_RELEASE0_ENABLE + s);
  NVHCQ_TRY(nvhcq_queue_record_signal(q, sig, v));
  if (value == NVHCQ_NO_VAR) return NVHCQ_SUCCESS;
  if (q->push.len == start && qmd_before) { /* it went into the last QMD's release */
    for (unsigned s = 0; s < 3; s++) {
      if (released_before[s]) continue;
      unsigned hi, lo, hi2, lo2;
      nvhcq_qmd_version ver = q->dev->compute_state.qmd_version;
      if (!nvhcq_qmd_field_range(ver, NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER + s, &hi, &lo) ||
          !nvhcq_qmd_field_range(ver, NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER + s, &hi2, &lo2))
        break;
      NVHCQ_TRY(nvhcq_queue_add_patch(q, value, NVHCQ_PATCH_U32, 0, 0,
                                      (uint8_t *)qmd_before + lo / 8, 0));
      NVHCQ_TRY(nvhcq_queue_add_patch(q, value, NVHCQ_PATCH_U32_HI, 0, 0,
                                      (uint8_t *)qmd_before + lo2 / 8, 0));
      return NVHCQ_SUCCESS;
    }
  }
  /* Host release: header, address lo/hi, payload lo/hi. Copy release: header, address hi/lo,
   * payload lo (and hi). Both put the payload at words 3..4 after the header. */
  if (q->kind == NVHCQ_QUEUE_COPY && !q->dev->copy_payload64)
    return nvhcq_queue_add_patch(q, value, NVHCQ_PATCH_U32, 1, start + 3, NULL, 0);
  return nvhcq_queue_add_patch(q, value, NVHCQ_PATCH_LO_HI, 1, start + 3, NULL, 0);
}

nvhcq_status nvhcq_queue_signal_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value) {
  NVHCQ_TRY(check_recording(q, "nvhcq_queue_signal_var"));
  NVHCQ_TRY(check_var(q, value));
  uint64_t v = value == NVHCQ_NO_VAR ? 0 : q->vars[value].value;
  NVHCQ_TRY(record_signal_var(q, sig, value, v));
  if (!nvhcq_profiling()) return NVHCQ_SUCCESS;
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_SIGNAL, .value = v});
}

nvhcq_status nvhcq_queue_gpu_wait_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value) {
  NVHCQ_TRY(check_recording(q, "nvhcq_queue_gpu_wait_var"));
  NVHCQ_TRY(check_var(q, value));
  uint64_t v = value == NVHCQ_NO_VAR ? 0 : q->vars[value].value;
  int profiled = nvhcq_profiling();
  if (profiled) NVHCQ_TRY(nvhcq_profile_begin(q));
  uint32_t start = q->push.len;
  NVHCQ_TRY(nvhcq_queue_record_wait(q, sig, v));
  NVHCQ_TRY(nvhcq_queue_add_patch(q, value, NVHCQ_PATCH_LO_HI, 1, start + 3, NULL, 0));
  if (!profiled) return NVHCQ_SUCCESS;
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_WAIT, .value = v});
}

nvhcq_status nvhcq_queue_copy_vars(nvhcq_queue *q, uint64_t dst, uint64_t src, uint64_t size,
                                   nvhcq_var dst_var, nvhcq_var src_var, nvhcq_var size_var) {
  NVHCQ_TRY(check_recording(q, "nvhcq_queue_copy_vars"));
  NVHCQ_TRY(check_var(q, dst_var));
  NVHCQ_TRY(check_var(q, src_var));
  NVHCQ_TRY(check_var(q, size_var));
  if (dst_var != NVHCQ_NO_VAR) dst = q->vars[dst_var].value;
  if (src_var != NVHCQ_NO_VAR) src = q->vars[src_var].value;
  if (size_var != NVHCQ_NO_VAR) size = q->vars[size_var].value;
  if (q->kind != NVHCQ_QUEUE_COPY)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "copies need a copy queue (NVHCQ_QUEUE_COPY)");
  if (size == 0 || size > 0x7fffffffull)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "a copy with variables is one piece of 1 byte to 2 GiB - 1, not %llu bytes",
                      (unsigned long long)size);
  int profiled = nvhcq_profiling();
  if (profiled) NVHCQ_TRY(nvhcq_profile_begin(q));
  /* One piece: header, in hi/lo, out hi/lo, header, line length, header, launch. */
  uint32_t start = q->push.len;
  nvhcq_push_copy(&q->push, dst, src, size);
  NVHCQ_TRY(q->push.error);
  NVHCQ_TRY(nvhcq_queue_add_patch(q, src_var, NVHCQ_PATCH_HI_LO, 1, start + 1, NULL, 0));
  NVHCQ_TRY(nvhcq_queue_add_patch(q, dst_var, NVHCQ_PATCH_HI_LO, 1, start + 3, NULL, 0));
  NVHCQ_TRY(nvhcq_queue_add_patch(q, size_var, NVHCQ_PATCH_LENGTH, 1, start + 6, NULL, 0));
  if (!profiled) return NVHCQ_SUCCESS;
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_COPY, .bytes = size});
}

/* Its memory may still be read by a running replay, unless the device is broken: it waits for
 * the replays, then frees the recording. */
static nvhcq_status recorded_drop(nvhcq_queue *q) {
  if (q->finished && !q->dev->broken) NVHCQ_TRY(nvhcq_queue_cpu_wait_idle(q, 0));
  free_recording(q);
  return NVHCQ_SUCCESS;
}

const nvhcq_queue_ops nvhcq_recorded_queue_ops = {
    .launch_memory = recorded_launch_memory,
    .submit = recorded_submit,
    .drop = recorded_drop,
};

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_queue_wait_var, nvhcq_queue_gpu_wait_var);
NVHCQ_0_1_NAME(nvhcq_queue_wait_idle, nvhcq_queue_cpu_wait_idle);
