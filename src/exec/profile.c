/* The timeline profiler: releases with GPU timestamps around each operation recorded while it
 * runs, collected per submission once the GPU passed them, and written as a Chrome trace
 * (profile_json.c). */
#include "exec/profile.h"
#include "exec/profile_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/module.h"
#include "util/abi.h"

int nvhcq_profile_on;
nvhcq_profile_global nvhcq_profile_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t nvhcq_profile_host_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The device's profiler part: a ring of release slots in host memory, made on first use. */
static nvhcq_status device_state(nvhcq_device *dev, nvhcq_profile_device **out) {
  if (dev->profile) return *out = dev->profile, NVHCQ_SUCCESS;
  nvhcq_profile_device *pd = calloc(1, sizeof *pd);
  if (!pd) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "profiler: out of host memory");
  nvhcq_status s = nvhcq_memory_alloc(dev, NVHCQ_PROFILE_SLOTS * 16, NVHCQ_MEMORY_HOST_UNCACHED,
                                      NULL, &pd->slots);
  if (s) {
    free(pd);
    return nvhcq_fail_context(s, "profiler: the release slots of GPU %d", dev->index);
  }
  memset(pd->slots->host_pointer, 0, NVHCQ_PROFILE_SLOTS * 16);
  pd->dev = dev;
  pd->next_id = 1;
  dev->profile = pd;
  pthread_mutex_lock(&nvhcq_profile_g.lock);
  pd->next = nvhcq_profile_g.devices;
  nvhcq_profile_g.devices = pd;
  pthread_mutex_unlock(&nvhcq_profile_g.lock);
  *out = pd;
  return NVHCQ_SUCCESS;
}

static nvhcq_status queue_state(nvhcq_queue *q, nvhcq_profile_queue **out) {
  if (!q->profile) {
    q->profile = calloc(1, sizeof *q->profile);
    if (!q->profile) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "profiler: out of host memory");
    q->profile->serial = __atomic_fetch_add(&nvhcq_profile_g.next_queue, 1, __ATOMIC_RELAXED);
  }
  *out = q->profile;
  return NVHCQ_SUCCESS;
}

volatile uint64_t *nvhcq_profile_slot(const nvhcq_profile_device *pd, uint64_t id) {
  return (volatile uint64_t *)pd->slots->host_pointer + 2 * (size_t)(id % NVHCQ_PROFILE_SLOTS);
}

/* A new stamp: a release of the next id with the GPU time into its slot, on the copy engine in
 * copy queues; on the last launch's QMD where one can take it (the grid's end, and the chain
 * and its fences are kept); else as a host release after idle. */
static nvhcq_status release(nvhcq_queue *q, uint64_t *id_out) {
  nvhcq_profile_device *pd = NULL;
  NVHCQ_TRY(device_state(q->dev, &pd));
  uint64_t id = pd->next_id++;
  uint64_t address = pd->slots->gpu_address + 16ull * (id % NVHCQ_PROFILE_SLOTS);
  if (q->kind == NVHCQ_QUEUE_COPY) {
    nvhcq_push_copy_signal(&q->push, address, id, q->dev->copy_payload64);
  } else if (!nvhcq_queue_stamp_on_qmd(q, address, id)) {
    nvhcq_push_host_signal(&q->push, address, id);
    nvhcq_queue_end_chain(q);
    q->launch_pending = 0;
  }
  *id_out = id;
  return q->push.error;
}

/* The GPU time of this point of the queue: the last stamp again when no command and no launch
 * was recorded since (a launch's start is the end of the one before it, on one release), else
 * a new one. */
static nvhcq_status stamp(nvhcq_queue *q, nvhcq_profile_queue *pq, uint64_t *id) {
  if (pq->last_id && pq->last_len == q->push.len && pq->last_qmd == q->last_qmd)
    return *id = pq->last_id, NVHCQ_SUCCESS;
  NVHCQ_TRY(release(q, id));
  pq->last_id = *id, pq->last_len = q->push.len, pq->last_qmd = q->last_qmd;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_profile_begin(nvhcq_queue *q) {
  nvhcq_profile_queue *pq = NULL;
  NVHCQ_TRY(queue_state(q, &pq));
  return stamp(q, pq, &pq->open_id);
}

nvhcq_status nvhcq_profile_end(nvhcq_queue *q, const nvhcq_profile_what *what) {
  nvhcq_profile_queue *pq = NULL;
  NVHCQ_TRY(queue_state(q, &pq));
  if (pq->count == pq->capacity) {
    uint32_t cap = pq->capacity ? 2 * pq->capacity : 64;
    nvhcq_profile_op *grown = realloc(pq->ops, cap * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "profiler: out of host memory");
    pq->ops = grown, pq->capacity = cap;
  }
  uint64_t end = 0;
  NVHCQ_TRY(stamp(q, pq, &end));
  pq->ops[pq->count++] = (nvhcq_profile_op){.what = *what,
                                            .begin_id = pq->open_id,
                                            .end_id = end,
                                            .copy_channel = q->kind == NVHCQ_QUEUE_COPY};
  pq->open_id = 0;
  return NVHCQ_SUCCESS;
}

/* Interned under the lock: each name once, kept until the process exits (events outlive their
 * modules); a kernel keeps its copy, so this runs once per kernel. */
const char *nvhcq_profile_kernel_name(nvhcq_kernel *k) {
  if (k->profile_name) return k->profile_name;
  nvhcq_profile_global *g = &nvhcq_profile_g;
  const char *name = k->cubin->name;
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i < g->kernel_name_count && !k->profile_name; i++)
    if (!strcmp(g->kernel_names[i], name)) k->profile_name = g->kernel_names[i];
  if (!k->profile_name && g->kernel_name_count == g->kernel_name_capacity) {
    size_t cap = g->kernel_name_capacity ? 2 * g->kernel_name_capacity : 64;
    char **grown = realloc(g->kernel_names, cap * sizeof *grown);
    if (grown) g->kernel_names = grown, g->kernel_name_capacity = cap;
  }
  if (!k->profile_name && g->kernel_name_count < g->kernel_name_capacity) {
    char *copy = strdup(name);
    if (copy) k->profile_name = g->kernel_names[g->kernel_name_count++] = copy;
  }
  pthread_mutex_unlock(&g->lock);
  return k->profile_name;
}

void nvhcq_profile_forget(nvhcq_queue *q) {
  if (!q->profile) return;
  free(q->profile->ops);
  free(q->profile);
  q->profile = NULL;
}

/* Whether stamp `id` was released: copy engines without 64-bit payloads release the lower half. */
static int released(const nvhcq_profile_device *pd, uint64_t id) {
  uint64_t v = __atomic_load_n(nvhcq_profile_slot(pd, id), __ATOMIC_ACQUIRE);
  return v == id || v == (uint32_t)id;
}

static int instance_done(const nvhcq_profile_device *pd, const nvhcq_profile_instance *in) {
  return released(pd, in->ops[in->count - 1].end_id);
}

/* Moves every pending instance of the device that has completed (all of them with `all`: the
 * ones that did not are counted as lost) into the trace's events. */
void nvhcq_profile_collect(nvhcq_profile_device *pd, int all) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < pd->pending_count; i++) {
    nvhcq_profile_instance *in = &pd->pending[i];
    if (!all && !instance_done(pd, in)) {
      pd->pending[kept++] = *in;
      continue;
    }
    nvhcq_profile_take_instance(pd, in); /* profile_json.c: under the lock */
    free(in->ops);
  }
  pd->pending_count = kept;
}

/* Before a queue's commands run again, the times of their last run are read: it waits for that
 * run (its last release) and clears the slots, which the new run writes again. */
static nvhcq_status collect_previous_run(nvhcq_profile_device *pd, const nvhcq_profile_queue *pq) {
  for (uint32_t i = 0; i < pd->pending_count; i++) {
    nvhcq_profile_instance *in = &pd->pending[i];
    if (in->queue != pq->serial || in->generation != pd->dev->generation) continue;
    const nvhcq_profile_op *last = &in->ops[in->count - 1];
    volatile uint64_t *v = nvhcq_profile_slot(pd, last->end_id);
    uint64_t want =
        pd->dev->copy_payload64 || !last->copy_channel ? last->end_id : (uint32_t)last->end_id;
    NVHCQ_TRY(nvhcq_wait_value(pd->dev, v, want, pd->dev->timeout_ms, 0,
                               "profiler: the previous run of a queue submitted again"));
  }
  nvhcq_profile_collect(pd, 0);
  for (uint32_t i = 0; i < pq->count; i++) {
    if (pq->ops[i].begin_id) *nvhcq_profile_slot(pd, pq->ops[i].begin_id) = 0;
    *nvhcq_profile_slot(pd, pq->ops[i].end_id) = 0;
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_profile_before_submit(nvhcq_queue *q) {
  nvhcq_profile_device *pd = NULL;
  NVHCQ_TRY(device_state(q->dev, &pd));
  if (q->profile && q->profile->submitted) NVHCQ_TRY(collect_previous_run(pd, q->profile));
  nvhcq_profile_collect(pd, 0);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_profile_after_submit(nvhcq_queue *q, uint64_t host_start_ns) {
  nvhcq_profile_device *pd = NULL;
  nvhcq_profile_queue *pq = NULL;
  NVHCQ_TRY(device_state(q->dev, &pd));
  NVHCQ_TRY(queue_state(q, &pq));
  nvhcq_profile_instance in = {.queue = pq->serial,
                               .replay = pq->submitted++,
                               .copy_channel = q->kind == NVHCQ_QUEUE_COPY,
                               .generation = q->dev->generation,
                               .host_start_ns = host_start_ns,
                               .host_end_ns = nvhcq_profile_host_ns(),
                               .count = pq->count};
  if (pq->count == 0) {
    nvhcq_profile_take_instance(pd, &in); /* the submission alone, on the host track */
    return NVHCQ_SUCCESS;
  }
  in.ops = malloc(pq->count * sizeof *in.ops);
  if (!in.ops) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "profiler: out of host memory");
  memcpy(in.ops, pq->ops, pq->count * sizeof *in.ops);
  if (pd->pending_count == pd->pending_capacity) {
    uint32_t cap = pd->pending_capacity ? 2 * pd->pending_capacity : 16;
    nvhcq_profile_instance *grown = realloc(pd->pending, cap * sizeof *grown);
    if (!grown) {
      free(in.ops);
      return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "profiler: out of host memory");
    }
    pd->pending = grown, pd->pending_capacity = cap;
  }
  pd->pending[pd->pending_count++] = in;
  return NVHCQ_SUCCESS;
}

/* Waits (within the device timeout) for what the device's pending submissions release, then
 * takes them all; a broken device's, and those a recovery discarded, are lost. */
void nvhcq_profile_drain(nvhcq_profile_device *pd) {
  for (uint32_t i = 0; i < pd->pending_count && !pd->dev->broken; i++) {
    const nvhcq_profile_instance *in = &pd->pending[i];
    if (in->generation != pd->dev->generation) continue; /* discarded by a recovery */
    const nvhcq_profile_op *last = &in->ops[in->count - 1];
    uint64_t want =
        pd->dev->copy_payload64 || !last->copy_channel ? last->end_id : (uint32_t)last->end_id;
    if (nvhcq_wait_value(pd->dev, nvhcq_profile_slot(pd, last->end_id), want, pd->dev->timeout_ms,
                         0, "profiler"))
      break;
  }
  nvhcq_profile_collect(pd, 1);
}

void nvhcq_profile_device_closing(nvhcq_device *dev) {
  nvhcq_profile_device *pd = dev->profile;
  if (!pd) return;
  nvhcq_profile_drain(pd);
  pthread_mutex_lock(&nvhcq_profile_g.lock);
  for (nvhcq_profile_device **p = &nvhcq_profile_g.devices; *p; p = &(*p)->next)
    if (*p == pd) {
      *p = pd->next;
      break;
    }
  pthread_mutex_unlock(&nvhcq_profile_g.lock);
  nvhcq_memory_drop(&pd->slots);
  free(pd->pending);
  free(pd);
  dev->profile = NULL;
  if (nvhcq_profile_g.from_env && nvhcq_profiling()) nvhcq_profile_write(); /* what is known */
}
