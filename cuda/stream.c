/* Streams, events and launches: each operation goes to the device's compute or copy queue after
 * a GPU wait for the other engine's latest work, and releases its engine's timeline. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The NULL, legacy and per-thread default streams: one, since all work is ordered anyway. */
static struct CUstream_st default_stream = {.magic = NVCU_STREAM_MAGIC,
                                            .domain_map = {.remote = 1}};

int nvcu_stream_is_default(const struct CUstream_st *st) {
  return st == &default_stream;
}

CUresult nvcu_stream_get(CUstream s, struct CUstream_st **out) {
  if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    int index;
    CUresult r = nvcu_current(NULL, &index);
    if (r) return r;
    default_stream.device = index;
    *out = &default_stream;
    return CUDA_SUCCESS;
  }
  if (s->magic != NVCU_STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  *out = s;
  return CUDA_SUCCESS;
}

/* libcuda's synchronizations spin by default (when the CPU has more cores than GPUs), and see a
 * long copy end at once; nvhcq's waits sleep after 2 ms and see it up to ~3% late. So the CPU spins
 * here for up to SPIN_MS first, then leaves the rest (and fault and timeout reports) to nvhcq. */
#define SPIN_MS 50

/* Every end goes through nvhcq_signal_cpu_wait (at once when the value is there): it prints what
 * the device's kernels printed, as CUDA does at a synchronization. */
CUresult nvcu_signal_wait(nvhcq_signal *sig, uint64_t value, const char *what) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned i = 0;; i++) {
    if (nvhcq_signal_value(sig) >= value) break;
    if ((i & 1023) == 1023) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= SPIN_MS) break;
    }
    __builtin_ia32_pause();
  }
  return nvcu_status(nvhcq_signal_cpu_wait(sig, value, 0), what);
}

/* The engine's queue, reset, first waiting for the other engine's latest work unless an earlier
 * submission of this engine already did. That wait counts as done only once submitted
 * (nvcu_engine_end): an operation whose recording fails leaves it to the next one. */
nvhcq_queue *nvcu_engine_begin(nvcu_device *d, int e) {
  nvhcq_queue *q = d->queue[e];
  nvhcq_queue_reset(q);
  int o = !e;
  d->waiting[e] = 0;
  if (d->submitted[o] > d->seen[e]) {
    nvhcq_queue_gpu_wait(q, d->timeline[o], d->submitted[o]);
    d->waiting[e] = d->submitted[o];
  }
  return q;
}

void nvcu_engine_waited(nvcu_device *d, int e) {
  if (d->waiting[e]) d->seen[e] = d->waiting[e];
  d->waiting[e] = 0;
}

CUresult nvcu_engine_end(nvcu_device *d, int e, struct CUstream_st *st) {
  nvhcq_queue *q = d->queue[e];
  nvhcq_status s = nvhcq_queue_signal(q, d->timeline[e], d->submitted[e] + 1);
  if (!s) s = nvhcq_queue_submit(q);
  if (s) return nvcu_status(s, e ? "submitting a copy" : "submitting a launch");
  nvcu_engine_waited(d, e);
  d->submitted[e]++;
  d->last_engine = e;
  if (st) {
    st->need[e] = d->submitted[e];
    st->need[!e] = 0; /* this operation waited for the other engine */
  }
  return CUDA_SUCCESS;
}

int nvcu_op_launch_config(const nvcu_op *op, nvhcq_launch_config *out) {
  if (!(op->cluster.x | op->cluster.y | op->cluster.z | op->cluster_policy | op->launch_flags |
        op->sms.masked))
    return 0;
  if (out)
    *out = (nvhcq_launch_config){.struct_size = sizeof *out,
                                 .grid = op->grid,
                                 .block = op->block,
                                 .dynamic_shared = op->shared,
                                 .cluster = op->cluster,
                                 .cluster_policy = op->cluster_policy,
                                 .flags = op->launch_flags,
                                 .tpc_mask = op->sms.masked ? op->sms.tpcs : NULL};
  return 1;
}

static CUresult run_launch(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op) {
  nvhcq_queue *q = nvcu_engine_begin(d, NVCU_COMPUTE);
  nvhcq_status s;
  nvhcq_launch_config c;
  if (nvcu_op_launch_config(op, &c)) {
    s = nvhcq_queue_launch_ex(q, op->func->k, &c, op->args, op->args_size);
  } else {
    s = nvhcq_queue_launch(q, op->func->k, op->grid, op->block, op->shared, op->args,
                           op->args_size);
  }
  if (s) return nvcu_status(s, op->func->name);
  return nvcu_engine_end(d, NVCU_COMPUTE, st);
}

/* A launch in a green context's stream (or, in the NULL stream, with a green context current)
 * keeps to its SMs, captured ones too. */
CUresult nvcu_stream_op(CUstream s, const nvcu_op *op) {
  struct CUstream_st *st;
  nvcu_device *d;
  CUresult r = nvcu_stream_get(s, &st);
  if (!r) r = nvcu_device_get(st->device, &d);
  if (r) return r;
  nvcu_op green;
  nvcu_sm_set sms = nvcu_stream_is_default(st) ? nvcu_current_sms(NULL) : st->sms;
  if (op->kind == CU_GRAPH_NODE_TYPE_KERNEL && sms.masked && !op->sms.masked) {
    green = *op;
    green.sms = sms;
    op = &green;
  }
  if (st->capture) { /* a node after the capture's dependencies, then the only one */
    CUgraphNode node;
    r = nvcu_graph_append(st->capture, op, st->capture_deps, st->capture_dep_count, &node);
    if (!r) st->capture_deps[0] = node, st->capture_dep_count = 1;
    return r;
  }
  switch (op->kind) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return run_launch(d, st, op);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    return nvcu_run_copy(d, st, op);
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return nvcu_run_memset(d, st, op);
  default:
    return CUDA_SUCCESS;
  }
}

/* ---- streams ---- */

/* Stream ids: the NULL (legacy) stream's and the per-thread stream's first, then one per stream
 * created, never reused. */
enum { LEGACY_STREAM_ID = 1, PER_THREAD_STREAM_ID = 2 };
static unsigned long long last_stream_id = PER_THREAD_STREAM_ID;

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
  if (!phStream || (flags & ~1u)) return CUDA_ERROR_INVALID_VALUE;
  int index;
  CUresult r = nvcu_current(NULL, &index);
  if (r) return r;
  struct CUstream_st *st = calloc(1, sizeof *st);
  if (!st) return CUDA_ERROR_OUT_OF_MEMORY;
  NVCU_LOCK();
  *st = (struct CUstream_st){.magic = NVCU_STREAM_MAGIC,
                             .device = index,
                             .flags = flags,
                             .priority = priority,
                             .id = ++last_stream_id,
                             .domain_map = {.remote = 1}};
  st->sms = nvcu_current_sms(&st->green_id);
  st->ctx = nvcu_current_ctx();
  NVCU_UNLOCK();
  *phStream = st;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, 0);
}

/* Work already submitted runs to its end, as CUDA promises; the stream itself holds nothing. */
CUresult cuStreamDestroy_v2(CUstream hStream) {
  if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ||
      hStream->magic != NVCU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  nvcu_capture_stream_gone(hStream);
  NVCU_UNLOCK();
  hStream->magic = 0;
  free(hStream->capture_deps);
  free(hStream->capture_edges);
  free(hStream);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}

static CUresult stream_wait(struct CUstream_st *st) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(st->device, &d);
  for (int e = 0; e < 2 && !r; e++)
    if (st->need[e]) r = nvcu_signal_wait(d->timeline[e], st->need[e], "synchronizing a stream");
  return r;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = stream_wait(st);
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamQuery(CUstream hStream) {
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_device *d;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = nvcu_device_get(st->device, &d);
  for (int e = 0; e < 2 && !r; e++)
    if (nvhcq_signal_value(d->timeline[e]) < st->need[e]) r = CUDA_ERROR_NOT_READY;
  NVCU_UNLOCK();
  return r;
}

/* A host function in a stream's order: the CPU waits for the stream's work, then calls it (the
 * caller's thread, not one of the library's; later work is submitted only after it returned). */
static CUresult host_call(CUstream hStream, CUhostFn fn, CUstreamCallback cb, void *data) {
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && st->capture && fn) { /* captured: a host node (callbacks cannot be captured) */
    nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_HOST, .fn = fn, .user = data};
    r = nvcu_stream_op(hStream, &op);
    NVCU_UNLOCK();
    return r;
  }
  if (!r && st->capture) r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!r) r = stream_wait(st);
  NVCU_UNLOCK();
  if (r) return r;
  if (fn) fn(data);
  if (cb) cb(hStream, CUDA_SUCCESS, data);
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return host_call(hStream, fn, NULL, userData);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags) {
  if (!callback || flags) return CUDA_ERROR_INVALID_VALUE;
  return host_call(hStream, NULL, callback, userData);
}

CUresult nvcu_stream_wait(struct CUstream_st *st) {
  return stream_wait(st);
}

/* Every stream's work is ordered after all earlier work: a wait is already met. Captured with
 * CU_EVENT_WAIT_EXTERNAL, it is an event wait node; for an event recorded in a capture, the
 * stream joins that capture (capture.c). */
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && (!hEvent || hEvent->magic != NVCU_EVENT_MAGIC)) r = CUDA_ERROR_INVALID_HANDLE;
  if (!r && hEvent->capture_id && !(st->capture && (Flags & CU_EVENT_WAIT_EXTERNAL))) {
    NVCU_LOCK();
    r = nvcu_capture_wait(st, hEvent);
    NVCU_UNLOCK();
  } else if (!r && st->capture && (Flags & CU_EVENT_WAIT_EXTERNAL)) {
    nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_WAIT_EVENT, .event = hEvent};
    NVCU_LOCK();
    r = nvcu_stream_op(hStream, &op);
    NVCU_UNLOCK();
  } else if (!r && !st->capture && hEvent->ipc) {
    NVCU_LOCK();
    nvcu_device *d;
    r = nvcu_device_get(st->device, &d);
    if (!r) r = nvcu_event_wait(d, hEvent, st);
    NVCU_UNLOCK();
  }
  return r;
}

/* An interprocess event's latest record may be another process's: the device's later work waits
 * on the GPU for its release (for this process's own records that order holds already). */
CUresult nvcu_event_wait(nvcu_device *d, struct CUevent_st *ev, struct CUstream_st *st) {
  if (!ev->ipc) return CUDA_SUCCESS;
  int e = d->last_engine;
  nvhcq_queue *q = nvcu_engine_begin(d, e);
  nvhcq_status s = nvhcq_queue_gpu_wait(q, ev->sig, nvcu_ipc_event_target(ev));
  if (s) return nvcu_status(s, "waiting for an interprocess event");
  return nvcu_engine_end(d, e, st);
}

/* A context's event: every stream's work runs in one order on the device, so an event recorded
 * on the context's legacy stream comes after all of the context's work so far, and all later work
 * already waits for it (cuStreamWaitEvent above). */
static CUresult record_legacy(CUevent e) {
  return cuEventRecord(e, CU_STREAM_LEGACY);
}

static CUresult wait_legacy(CUevent e) {
  return cuStreamWaitEvent(CU_STREAM_LEGACY, e, 0);
}

/* op(e) with ctx current (NULL: the current context), the current one restored after. */
static CUresult in_context(CUcontext ctx, CUresult (*op)(CUevent), CUevent e) {
  CUresult r = ctx ? cuCtxPushCurrent_v2(ctx) : CUDA_SUCCESS;
  if (r) return r;
  r = op(e);
  CUcontext popped;
  if (ctx) (void)cuCtxPopCurrent_v2(&popped);
  return r;
}

CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  return in_context(hCtx, record_legacy, hEvent);
}

CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  return in_context(hCtx, wait_legacy, hEvent);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && flags) *flags = st->flags;
  return r;
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && priority) *priority = st->priority;
  return r;
}

static int special_stream(CUstream s) {
  return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The context that was current when the stream was made (for a green context's stream, the one
 * cuCtxFromGreenCtx gives); for the NULL, legacy and per-thread streams, the current one. */
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *st;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) *pctx = special_stream(hStream) ? nvcu_current_ctx() : st->ctx;
  NVCU_UNLOCK();
  return r;
}

/* A green context's stream answers with the green context and its device's primary context; any
 * other with its context and no green one. */
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx) {
  if (!pCtx || !pGreenCtx) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *st;
  nvcu_device *d = NULL;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  CUcontext c = r ? NULL : special_stream(hStream) ? nvcu_current_ctx() : st->ctx;
  CUgreenCtx g = r                         ? NULL
                 : special_stream(hStream) ? (c ? c->green : NULL)
                                           : nvcu_green_of_id(st->green_id);
  if (!r && g && hStream == CU_STREAM_PER_THREAD) r = CUDA_ERROR_INVALID_HANDLE;
  if (!r && g) r = nvcu_device_get(st->device, &d);
  if (!r) {
    *pCtx = g ? &d->primary : c;
    *pGreenCtx = g;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId) {
  struct CUstream_st *st;
  if (!streamId) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r)
    *streamId = hStream == CU_STREAM_PER_THREAD ? PER_THREAD_STREAM_ID
                : st == &default_stream         ? LEGACY_STREAM_ID
                                                : st->id;
  NVCU_UNLOCK();
  return r;
}

/* The per-thread-stream form: there, the NULL stream is the per-thread one. (cuda.h declares it
 * only under CUDA_API_PER_THREAD_DEFAULT_STREAM, so it is declared here.) */
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId);
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId) {
  return cuStreamGetId(hStream ? hStream : CU_STREAM_PER_THREAD, streamId);
}

/* The device a stream's work runs on. */
CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device) {
  struct CUstream_st *st;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) *device = st->device;
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device);
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device) {
  return cuStreamGetDevice(hStream ? hStream : CU_STREAM_PER_THREAD, device);
}

/* Stream attributes are kept and read back: accepted hints for nvhcq, whose streams all run in
 * one order on the same channels (the access-policy window sets aside no L2). */
CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr,
                              const CUstreamAttrValue *value) {
  struct CUstream_st *st;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const CUaccessPolicyWindow *w = &value->accessPolicyWindow;
      if (w->hitRatio < 0 || w->hitRatio > 1 || w->hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
          w->missProp > CU_ACCESS_PROPERTY_STREAMING)
        r = CUDA_ERROR_INVALID_VALUE;
      else
        st->access_policy = *w;
      break;
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (value->syncPolicy < CU_SYNC_POLICY_AUTO ||
          value->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
        r = CUDA_ERROR_INVALID_VALUE;
      else
        st->sync_policy = value->syncPolicy;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      st->priority = value->priority;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      st->domain_map = value->memSyncDomainMap;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      st->domain = value->memSyncDomain;
      break;
    default:
      r = CUDA_ERROR_INVALID_VALUE;
      break;
    }
  NVCU_UNLOCK();
  return r;
}

/* Every attribute cuStreamSetAttribute keeps, from src to dst. */
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  struct CUstream_st *to, *from;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(src, &from);
  if (!r) r = nvcu_stream_get(dst, &to);
  if (!r) {
    to->access_policy = from->access_policy;
    to->sync_policy = from->sync_policy;
    to->priority = from->priority;
    to->domain_map = from->domain_map;
    to->domain = from->domain;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src);
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) {
  return cuStreamCopyAttributes(dst ? dst : CU_STREAM_PER_THREAD, src ? src : CU_STREAM_PER_THREAD);
}

CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue *value_out) {
  struct CUstream_st *st;
  if (!value_out) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      value_out->accessPolicyWindow = st->access_policy;
      break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      value_out->syncPolicy = st->sync_policy ? st->sync_policy : CU_SYNC_POLICY_AUTO;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      value_out->priority = st->priority;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      value_out->memSyncDomainMap = st->domain_map;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      value_out->memSyncDomain = st->domain;
      break;
    default:
      r = CUDA_ERROR_INVALID_VALUE;
      break;
    }
  NVCU_UNLOCK();
  return r;
}

/* ---- events ---- */

static CUresult event_check(CUevent e) {
  return e && e->magic == NVCU_EVENT_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The release a wait on the event waits for: its last record's, or for an interprocess event
 * the latest of any process's. */
static uint64_t event_target(const struct CUevent_st *e) {
  return e->ipc ? nvcu_ipc_event_target(e) : e->value;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  struct CUevent_st *ev = r ? NULL : calloc(1, sizeof *ev);
  if (!r && !ev) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r &&
      (Flags & ~0x7u || (Flags & CU_EVENT_INTERPROCESS && !(Flags & CU_EVENT_DISABLE_TIMING)))) {
    nvcu_log("cuEventCreate: flags 0x%x (CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING)",
             Flags);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) {
    *ev = (struct CUevent_st){.magic = NVCU_EVENT_MAGIC, .device = index, .flags = Flags};
    if (Flags & CU_EVENT_INTERPROCESS)
      r = nvcu_ipc_event_make(d, ev);
    else
      r = nvcu_status(nvhcq_signal_create(d->dev, 0, &ev->sig), "cuEventCreate");
    if (r)
      free(ev);
    else
      *phEvent = ev;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  if (event_check(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  /* The signal may still be released by the GPU: it is freed once that has happened. */
  nvhcq_signal_cpu_wait(hEvent->sig, hEvent->value, 0);
  if (hEvent->ipc)
    nvcu_ipc_event_free(hEvent);
  else
    nvhcq_signal_destroy(hEvent->sig);
  hEvent->magic = 0;
  free(hEvent->capture_deps);
  free(hEvent);
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  return cuEventDestroy_v2(hEvent);
}

/* Behind the latest operation of either engine, which itself waited for the other. */
CUresult nvcu_event_record(nvcu_device *d, struct CUevent_st *ev) {
  int e = d->last_engine;
  nvhcq_queue *q = nvcu_engine_begin(d, e);
  /* An interprocess event counts records in its shared page: a wait anywhere waits for the
   * latest. */
  uint64_t value = ev->ipc ? nvcu_ipc_event_next(ev) : ev->value + 1;
  nvhcq_status s = nvhcq_queue_signal(q, ev->sig, value);
  if (!s) s = nvhcq_queue_submit(q);
  CUresult r = nvcu_status(s, "cuEventRecord");
  if (!r) ev->value = value, nvcu_engine_waited(d, e);
  return r;
}

/* Captured with CU_EVENT_RECORD_EXTERNAL, a record is an event record node. */
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  if (event_check(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_device *d;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = nvcu_device_get(st->device, &d);
  if (!r && st->capture && (flags & CU_EVENT_RECORD_EXTERNAL)) {
    nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_EVENT_RECORD, .event = hEvent};
    r = nvcu_stream_op(hStream, &op);
  } else if (!r && st->capture) {
    r = nvcu_capture_record(st, hEvent);
  } else if (!r) {
    r = nvcu_event_record(d, hEvent);
    if (!r) hEvent->capture_id = 0;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return cuEventRecordWithFlags(hEvent, hStream, 0);
}

CUresult cuEventSynchronize(CUevent hEvent) {
  if (event_check(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = nvcu_signal_wait(hEvent->sig, event_target(hEvent), "cuEventSynchronize");
  NVCU_UNLOCK();
  return r;
}

CUresult cuEventQuery(CUevent hEvent) {
  if (event_check(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  return nvhcq_signal_value(hEvent->sig) >= event_target(hEvent) ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_NOT_READY;
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
  if (event_check(hStart) || event_check(hEnd)) return CUDA_ERROR_INVALID_HANDLE;
  if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!hStart->value || !hEnd->value) return CUDA_ERROR_INVALID_HANDLE; /* never recorded */
  if (cuEventQuery(hStart) || cuEventQuery(hEnd)) return CUDA_ERROR_NOT_READY;
  uint64_t t0 = nvhcq_signal_timestamp_ns(hStart->sig), t1 = nvhcq_signal_timestamp_ns(hEnd->sig);
  *pMilliseconds = (float)((double)((int64_t)(t1 - t0)) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

/* ---- launches ---- */

/* `attrs` (cuLaunchKernelEx's, else NULL) also go onto the operation, so that a captured launch's
 * node reports them as attributes. */
static CUresult launch(CUfunction f, const nvhcq_launch_config *c, const CUlaunchConfig *attrs,
                       CUstream hStream, void **kernelParams, void **extra) {
  CUresult r = nvcu_func_check(f);
  if (r) return r;
  /* CUDA's opt-in rule: more than 48 KiB of shared memory in all only after the client raised
   * MAX_DYNAMIC_SHARED_SIZE_BYTES; NVIDIA's library refuses the launch, not the kernel. */
  if (c->dynamic_shared > (uint32_t)f->max_dynamic_shared) {
    nvcu_log("launch of %s: %u bytes of dynamic shared memory, more than its "
             "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (%d); raise it with "
             "cuFuncSetAttribute first",
             f->name, c->dynamic_shared, f->max_dynamic_shared);
    return CUDA_ERROR_INVALID_VALUE;
  }
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_KERNEL,
                .func = f,
                .grid = c->grid,
                .block = c->block,
                .shared = c->dynamic_shared};
  for (unsigned int i = 0; attrs && i < attrs->numAttrs; i++) /* checked by nvcu_launch_config */
    nvcu_launch_attr_set(&op, attrs->attrs[i].id, &attrs->attrs[i].value, NULL);
  op.cluster = c->cluster, op.cluster_policy = c->cluster_policy, op.launch_flags = c->flags;
  NVCU_LOCK();
  r = nvcu_pack_args(f, kernelParams, extra, &op.args, &op.args_size);
  if (!r) r = nvcu_stream_op(hStream, &op);
  NVCU_UNLOCK();
  free(op.args);
  return r;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra) {
  nvhcq_launch_config c = {.grid = {gridDimX, gridDimY, gridDimZ},
                           .block = {blockDimX, blockDimY, blockDimZ},
                           .dynamic_shared = sharedMemBytes};
  return launch(f, &c, NULL, hStream, kernelParams, extra);
}

/* CUDA's launch attributes as nvhcq's configuration: clusters and their scheduling policy are
 * nvhcq's; a cooperative launch (its grid fits on the GPU at once, grid.sync() works) is
 * NVHCQ_LAUNCH_COOPERATIVE; those that change
 * nothing nvhcq does (priorities, access policies, ...) are accepted. */
CUresult nvcu_launch_config(const CUlaunchConfig *config, nvhcq_launch_config *out,
                            int *cooperative) {
  *cooperative = 0;
  *out = (nvhcq_launch_config){.struct_size = sizeof *out,
                               .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
                               .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
                               .dynamic_shared = config->sharedMemBytes};
  if (config->numAttrs && !config->attrs) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < config->numAttrs; i++) {
    const CUlaunchAttribute *a = &config->attrs[i];
    switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      out->cluster =
          (nvhcq_dim3){a->value.clusterDim.x, a->value.clusterDim.y, a->value.clusterDim.z};
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      out->cluster_policy = (uint32_t)a->value.clusterSchedulingPolicyPreference;
      break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      *cooperative = a->value.cooperative != 0;
      out->flags = *cooperative ? NVHCQ_LAUNCH_COOPERATIVE : 0;
      break;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      nvcu_note("cuLaunchKernelEx: launch attribute %d kept (a captured node reports it), not "
                "applied",
                (int)a->id);
      break;
    default:
      nvcu_note("cuLaunchKernelEx: launch attribute %d ignored", (int)a->id);
      break;
    }
  }
  return CUDA_SUCCESS;
}

/* A cooperative grid's blocks must all be resident at once: at most the occupancy of its block
 * shape times the SMs (the CUDA programming guide's grid-synchronization rule). */
static CUresult check_cooperative(CUfunction f, const nvhcq_launch_config *c) {
  CUresult r = nvcu_func_check(f);
  if (r) return r;
  uint64_t threads = (uint64_t)c->block.x * c->block.y * c->block.z;
  uint64_t blocks = (uint64_t)c->grid.x * c->grid.y * c->grid.z;
  if (threads == 0 || threads > f->info.max_threads || blocks == 0) return CUDA_ERROR_INVALID_VALUE;
  nvhcq_occupancy o = {.struct_size = sizeof o};
  nvcu_device *d;
  NVCU_LOCK();
  r = nvcu_device_get(f->mod->device, &d);
  nvhcq_status s =
      r ? NVHCQ_SUCCESS : nvhcq_kernel_query_occupancy(f->k, c->block, c->dynamic_shared, &o);
  NVCU_UNLOCK();
  if (r) return r;
  if (s == NVHCQ_ERROR_LAUNCH_CHECK || s == NVHCQ_ERROR_INVALID_ARGUMENT)
    o.blocks_per_sm = 0;
  else if (s)
    return nvcu_status(s, "cooperative launch occupancy");
  uint64_t most = (uint64_t)o.blocks_per_sm * d->info.sm_count;
  if (blocks > most) {
    nvcu_log("cooperative launch of %s: %llu blocks, at most %llu fit at once (%u per SM)", f->name,
             (unsigned long long)blocks, (unsigned long long)most, o.blocks_per_sm);
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  nvhcq_launch_config c;
  int cooperative;
  CUresult r = nvcu_launch_config(config, &c, &cooperative);
  if (!r && cooperative) r = check_cooperative(f, &c);
  if (r) return r;
  return launch(f, &c, config, config->hStream, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams) {
  nvhcq_launch_config c = {.struct_size = sizeof c,
                           .grid = {gridDimX, gridDimY, gridDimZ},
                           .block = {blockDimX, blockDimY, blockDimZ},
                           .dynamic_shared = sharedMemBytes,
                           .flags = NVHCQ_LAUNCH_COOPERATIVE};
  CUresult r = check_cooperative(f, &c);
  if (r) return r;
  return launch(f, &c, NULL, hStream, kernelParams, NULL);
}

NVCU_ALIAS(cuLaunchKernel_ptsz, cuLaunchKernel)
NVCU_ALIAS(cuLaunchKernelEx_ptsz, cuLaunchKernelEx)
NVCU_ALIAS(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel)
NVCU_ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize)
NVCU_ALIAS(cuStreamQuery_ptsz, cuStreamQuery)
NVCU_ALIAS(cuStreamWaitEvent_ptsz, cuStreamWaitEvent)
NVCU_ALIAS(cuStreamGetFlags_ptsz, cuStreamGetFlags)
NVCU_ALIAS(cuStreamGetPriority_ptsz, cuStreamGetPriority)
NVCU_ALIAS(cuStreamGetCtx_ptsz, cuStreamGetCtx)
NVCU_ALIAS(cuStreamGetCtx_v2_ptsz, cuStreamGetCtx_v2)
NVCU_ALIAS(cuStreamGetAttribute_ptsz, cuStreamGetAttribute)
NVCU_ALIAS(cuStreamSetAttribute_ptsz, cuStreamSetAttribute)
NVCU_ALIAS(cuEventRecord_ptsz, cuEventRecord)
NVCU_ALIAS(cuLaunchHostFunc_ptsz, cuLaunchHostFunc)
NVCU_ALIAS(cuStreamAddCallback_ptsz, cuStreamAddCallback)
NVCU_ALIAS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags)
