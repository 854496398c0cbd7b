/* The profiler's trace: events from collected submissions, the Chrome/Perfetto trace-event JSON
 * they are written as (one track per channel of each GPU, one for the host's submissions), and
 * nvhcq_profile_start/_stop and NVHCQ_PROFILE. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/profile_internal.h"

/* Stamp `id`'s GPU time, and whether the slot still holds it. */
static uint64_t stamp(const nvhcq_profile_device *pd, uint64_t id, int *ok) {
  volatile uint64_t *s = nvhcq_profile_slot(pd, id);
  uint64_t v = __atomic_load_n(s, __ATOMIC_ACQUIRE);
  *ok = v == id || v == (uint32_t)id;
  return s[1];
}

/* The last stamp read, for the next operation's start, which is mostly the same stamp: the slots
 * are host memory the GPU writes, slow for the CPU to read. */
typedef struct last_stamp {
  uint64_t id, ns;
  int ok;
} last_stamp;

static uint64_t stamp_once(const nvhcq_profile_device *pd, uint64_t id, int *ok, last_stamp *last) {
  if (id != last->id) last->id = id, last->ns = stamp(pd, id, &last->ok);
  *ok = last->ok;
  return last->ns;
}

static nvhcq_profile_event *new_event(void) {
  nvhcq_profile_global *g = &nvhcq_profile_g;
  if (g->event_count == g->event_capacity) {
    size_t cap = g->event_capacity ? 2 * g->event_capacity : 1024;
    nvhcq_profile_event *grown = realloc(g->events, cap * sizeof *grown);
    if (!grown) return NULL;
    g->events = grown, g->event_capacity = cap;
  }
  nvhcq_profile_event *e = &g->events[g->event_count++];
  memset(e, 0, sizeof *e);
  return e;
}

static void note_delta(int device, int64_t delta) {
  nvhcq_profile_global *g = &nvhcq_profile_g;
  if (device < 0 || device >= NVHCQ_PROFILE_MAX_DEVICES) return;
  if (!g->have_delta[device] || delta < g->min_delta[device]) g->min_delta[device] = delta;
  g->have_delta[device] = 1;
}

static void take_op(const nvhcq_profile_device *pd, const nvhcq_profile_instance *in,
                    const nvhcq_profile_op *op, uint64_t *flow, last_stamp *last) {
  int ok, begin_ok = 0;
  uint64_t begin = op->begin_id ? stamp_once(pd, op->begin_id, &begin_ok, last) : 0;
  uint64_t end = stamp_once(pd, op->end_id, &ok, last);
  nvhcq_profile_event *e = ok ? new_event() : NULL;
  if (!e) {
    nvhcq_profile_g.lost++;
    return;
  }
  if (!op->begin_id || !begin_ok || begin > end) begin = end;
  e->kind = op->what.kind;
  e->name = op->what.name;
  e->device = pd->dev->index;
  e->copy_channel = op->copy_channel;
  e->queue = in->queue, e->replay = in->replay;
  e->grid = op->what.grid, e->block = op->what.block;
  e->bytes = op->what.bytes, e->value = op->what.value;
  e->begin_ns = begin, e->end_ns = end;
  e->flow = *flow;
  if (*flow) note_delta(e->device, (int64_t)(begin - in->host_end_ns));
  *flow = 0;
}

void nvhcq_profile_take_instance(nvhcq_profile_device *pd, const nvhcq_profile_instance *in) {
  nvhcq_profile_global *g = &nvhcq_profile_g;
  pthread_mutex_lock(&g->lock);
  int index = pd->dev->index;
  if (index >= 0 && index < NVHCQ_PROFILE_MAX_DEVICES && !g->device_names[index][0])
    snprintf(g->device_names[index], sizeof g->device_names[index], "GPU %d: %s", index,
             pd->dev->info.name);
  nvhcq_profile_event *e = new_event();
  uint64_t flow = 0;
  if (e) {
    e->kind = NVHCQ_PROFILE_SUBMIT;
    e->device = index, e->copy_channel = in->copy_channel;
    e->queue = in->queue, e->replay = in->replay, e->ops = in->count;
    e->begin_ns = in->host_start_ns, e->end_ns = in->host_end_ns;
    e->flow = flow = in->count ? ++g->next_flow : 0;
  }
  last_stamp last = {0, 0, 0};
  for (uint32_t i = 0; i < in->count; i++) take_op(pd, in, &in->ops[i], &flow, &last);
  pthread_mutex_unlock(&g->lock);
}

void nvhcq_profile_host_copy(const nvhcq_device *dev, const char *what, uint64_t bytes,
                             uint64_t host_start_ns) {
  uint64_t end = nvhcq_profile_host_ns();
  pthread_mutex_lock(&nvhcq_profile_g.lock);
  nvhcq_profile_event *e = new_event();
  if (e) {
    e->kind = NVHCQ_PROFILE_COPY, e->host_copy = 1;
    e->name = what; /* "write", "read" or "copy": a literal */
    e->device = dev->index, e->bytes = bytes;
    e->begin_ns = host_start_ns, e->end_ns = end;
  }
  pthread_mutex_unlock(&nvhcq_profile_g.lock);
}

/* ---- the JSON ---- */

/* "WHAT 4.0 MiB": a copy by its size. */
static void name_copy(char *out, size_t size, const char *what, uint64_t b) {
  if (b >= (1u << 20))
    snprintf(out, size, "%s %.1f MiB", what, b / 1048576.0);
  else if (b >= 1024)
    snprintf(out, size, "%s %.1f KiB", what, b / 1024.0);
  else
    snprintf(out, size, "%s %" PRIu64 " B", what, b);
}

/* A kernel by its name (its first 63 bytes); a copy by its size, a signal and a wait by their
 * value, a submission by its queue. */
static void name_event(char *out, size_t size, const nvhcq_profile_event *e) {
  switch ((int)e->kind) {
  case NVHCQ_PROFILE_SUBMIT:
    snprintf(out, size, "submit queue %u", e->queue);
    break;
  case NVHCQ_PROFILE_COPY:
    name_copy(out, size, e->host_copy ? e->name : "copy", e->bytes);
    break;
  case NVHCQ_PROFILE_SIGNAL:
    snprintf(out, size, "signal %" PRIu64, e->value);
    break;
  case NVHCQ_PROFILE_WAIT:
    snprintf(out, size, "wait >= %" PRIu64, e->value);
    break;
  default:
    snprintf(out, size, "%.63s", e->name && e->name[0] ? e->name : "kernel");
    break;
  }
}

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* GPU time on the host's clock: the GPU's timer counts nanoseconds since the epoch as the host's
 * CLOCK_REALTIME does (the driver sets it so); where the first operations of submissions
 * started before them or over a second after them, the clocks differ and are aligned by the
 * earliest start. */
static int64_t gpu_offset(int device) {
  const nvhcq_profile_global *g = &nvhcq_profile_g;
  if (device < 0 || device >= NVHCQ_PROFILE_MAX_DEVICES || !g->have_delta[device]) return 0;
  int64_t d = g->min_delta[device];
  return d >= 0 && d < 1000000000 ? 0 : d;
}

static double us(const nvhcq_profile_event *e, uint64_t t) {
  int64_t off = e->kind == NVHCQ_PROFILE_SUBMIT || e->host_copy ? 0 : gpu_offset(e->device);
  return (double)((int64_t)(t - nvhcq_profile_g.start_ns) - off) / 1e3;
}

static const char *category(nvhcq_profile_kind k) {
  return k == NVHCQ_PROFILE_LAUNCH   ? "kernel"
         : k == NVHCQ_PROFILE_COPY   ? "copy"
         : k == NVHCQ_PROFILE_SIGNAL ? "signal"
         : k == NVHCQ_PROFILE_WAIT   ? "wait"
                                     : "submit";
}

static void put_args(FILE *f, const nvhcq_profile_event *e) {
  double dur_ns = (double)(e->end_ns - e->begin_ns);
  if (e->host_copy) {
    fprintf(f, "\"args\":{\"device\":%d,\"bytes\":%" PRIu64 ",\"GB/s\":%.2f,\"host_ns\":%.0f}",
            e->device, e->bytes, dur_ns > 0 ? e->bytes / dur_ns : 0.0, dur_ns);
    return;
  }
  fprintf(f, "\"args\":{\"queue\":%u,\"run\":%" PRIu64, e->queue, e->replay);
  if (e->kind == NVHCQ_PROFILE_LAUNCH)
    fprintf(f, ",\"grid\":\"%u,%u,%u\",\"block\":\"%u,%u,%u\",\"gpu_ns\":%.0f", e->grid.x,
            e->grid.y, e->grid.z, e->block.x, e->block.y, e->block.z, dur_ns);
  if (e->kind == NVHCQ_PROFILE_COPY)
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"GB/s\":%.2f,\"gpu_ns\":%.0f", e->bytes,
            dur_ns > 0 ? e->bytes / dur_ns : 0.0, dur_ns);
  if (e->kind == NVHCQ_PROFILE_SIGNAL || e->kind == NVHCQ_PROFILE_WAIT)
    fprintf(f, ",\"value\":%" PRIu64, e->value);
  if (e->kind == NVHCQ_PROFILE_SUBMIT)
    fprintf(f, ",\"device\":%d,\"channel\":\"%s\",\"operations\":%" PRIu64, e->device,
            e->copy_channel ? "copy" : "compute", e->ops);
  fputs("}", f);
}

/* One event per line, keys in a fixed order: `nvhcq profile --svg` reads them back so. */
static void put_event(FILE *f, const nvhcq_profile_event *e) {
  int host = e->kind == NVHCQ_PROFILE_SUBMIT || e->host_copy;
  int pid = host ? 0 : e->device + 1, tid = host ? e->host_copy : e->copy_channel + 1;
  char name[64];
  name_event(name, sizeof name, e);
  fputs(",\n{\"name\":", f);
  put_string(f, name);
  fprintf(f, ",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", category(e->kind),
          e->kind == NVHCQ_PROFILE_SIGNAL ? "i" : "X", pid, tid, us(e, e->begin_ns));
  if (e->kind == NVHCQ_PROFILE_SIGNAL)
    fputs(",\"s\":\"t\",", f);
  else
    fprintf(f, ",\"dur\":%.3f,", (double)(e->end_ns - e->begin_ns) / 1e3);
  put_args(f, e);
  fputs("}", f);
  if (e->flow) /* an arrow from the submission to the first operation it ran */
    fprintf(f,
            ",\n{\"name\":\"submission\",\"cat\":\"flow\",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":%.3f,\"id\":%" PRIu64 "%s}",
            host ? "s" : "f", pid, tid, us(e, e->begin_ns), e->flow, host ? "" : ",\"bp\":\"e\"");
}

static void put_tracks(FILE *f) {
  const nvhcq_profile_global *g = &nvhcq_profile_g;
  fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"host\"}},\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
        "\"args\":{\"name\":\"submissions\"}},\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,"
        "\"args\":{\"name\":\"synchronous copies\"}}",
        f);
  for (int d = 0; d < NVHCQ_PROFILE_MAX_DEVICES; d++) {
    if (!g->device_names[d][0]) continue;
    fprintf(f, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", d + 1);
    put_string(f, g->device_names[d]);
    fputs("}}", f);
    for (int c = 0; c < 2; c++)
      fprintf(f,
              ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
              "\"args\":{\"name\":\"%s channel\"}}",
              d + 1, c + 1, c ? "copy" : "compute");
  }
}

static nvhcq_status write_locked(void) {
  const nvhcq_profile_global *g = &nvhcq_profile_g;
  FILE *f = fopen(g->path, "w");
  if (!f)
    return nvhcq_fail(NVHCQ_ERROR_IO, "profiler: cannot write the trace to %s (%s)", g->path,
                      strerror(errno));
  fprintf(f,
          "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"nvhcq\",\"lost_operations\":"
          "%" PRIu64 "},\n\"traceEvents\":[\n",
          g->lost);
  put_tracks(f);
  for (size_t i = 0; i < g->event_count; i++) put_event(f, &g->events[i]);
  fputs("\n]}\n", f);
  if (fclose(f) != 0)
    return nvhcq_fail(NVHCQ_ERROR_IO, "profiler: writing the trace to %s failed (%s)", g->path,
                      strerror(errno));
  return NVHCQ_SUCCESS;
}

void nvhcq_profile_write(void) {
  pthread_mutex_lock(&nvhcq_profile_g.lock);
  (void)!write_locked();
  pthread_mutex_unlock(&nvhcq_profile_g.lock);
}

/* ---- the API ---- */

nvhcq_status nvhcq_profile_start(const char *path) {
  nvhcq_profile_global *g = &nvhcq_profile_g;
  if (!path || !*path)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_profile_start: path is %s",
                      path ? "empty" : "NULL");
  pthread_mutex_lock(&g->lock);
  if (nvhcq_profiling()) {
    pthread_mutex_unlock(&g->lock);
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "the profiler already records (to %s); call nvhcq_profile_stop first",
                      g->path);
  }
  snprintf(g->path, sizeof g->path, "%s", path);
  g->event_count = 0;
  g->lost = 0;
  memset(g->have_delta, 0, sizeof g->have_delta);
  memset(g->device_names, 0, sizeof g->device_names);
  g->start_ns = nvhcq_profile_host_ns();
  __atomic_store_n(&nvhcq_profile_on, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g->lock);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_profile_stop(void) {
  nvhcq_profile_global *g = &nvhcq_profile_g;
  if (!nvhcq_profiling())
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_profile_stop: the profiler is not recording (nvhcq_profile_start "
                      "or NVHCQ_PROFILE starts it)");
  __atomic_store_n(&nvhcq_profile_on, 0, __ATOMIC_RELAXED);
  /* Devices are not closed while their owner stops the profiler (the threading rule). */
  pthread_mutex_lock(&g->lock);
  nvhcq_profile_device *list = g->devices;
  pthread_mutex_unlock(&g->lock);
  for (nvhcq_profile_device *pd = list; pd; pd = pd->next) nvhcq_profile_drain(pd);
  pthread_mutex_lock(&g->lock);
  nvhcq_status s = write_locked();
  free(g->events);
  g->events = NULL;
  g->event_count = g->event_capacity = 0;
  g->from_env = 0;
  pthread_mutex_unlock(&g->lock);
  return s;
}

static void stop_at_exit(void) {
  if (nvhcq_profile_g.from_env && nvhcq_profiling()) (void)!nvhcq_profile_stop();
}

void nvhcq_profile_from_env(void) {
  static int checked;
  if (__atomic_exchange_n(&checked, 1, __ATOMIC_ACQ_REL)) return;
  const char *path = getenv("NVHCQ_PROFILE");
  if (!path || !*path || nvhcq_profiling()) return;
  if (nvhcq_profile_start(path)) return;
  nvhcq_profile_g.from_env = 1;
  atexit(stop_at_exit);
}
