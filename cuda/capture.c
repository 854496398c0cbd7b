/* Stream capture: a stream's operations become graph nodes; streams that wait for an event
 * recorded in a capture join it (fork and join across streams), and the capture ends, on the
 * stream it began on, once they have been joined back. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Ids of capture sequences, unique in the process. */
static unsigned long long last_capture_id;
/* cuThreadExchangeStreamCaptureMode's: kept per thread (nvhcq's captures do not check it). */
static __thread CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* Room for n dependencies (at least one: the node a capture adds next replaces them). */
static CUresult capture_reserve(struct CUstream_st *st, size_t n) {
  if (n < 1) n = 1;
  if (n <= st->capture_dep_cap) return CUDA_SUCCESS;
  struct CUgraphNode_st **deps = realloc(st->capture_deps, n * sizeof *deps);
  if (!deps) return CUDA_ERROR_OUT_OF_MEMORY;
  st->capture_deps = deps;
  CUgraphEdgeData *edges = realloc(st->capture_edges, n * sizeof *edges);
  if (!edges) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(edges, 0, n * sizeof *edges);
  st->capture_edges = edges;
  st->capture_dep_cap = (uint32_t)n;
  return CUDA_SUCCESS;
}

/* Nodes of graph g, each once: what a capture's dependency set may hold. */
static CUresult capture_nodes_check(CUgraph g, const CUgraphNode *deps, size_t n, const char *who) {
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++)
    if (nvcu_node_check(deps[i]) || deps[i]->graph != g) {
      nvcu_log("%s: dependency %zu (%p) is not a node of the graph %p being captured to", who, i,
               (void *)deps[i], (void *)g);
      return CUDA_ERROR_INVALID_VALUE;
    }
  return CUDA_SUCCESS;
}

/* Adds deps to the capture's dependency set (those already in it once). */
static CUresult capture_deps_add(struct CUstream_st *st, const CUgraphNode *deps, size_t n) {
  CUresult r = capture_reserve(st, st->capture_dep_count + n);
  for (size_t i = 0; i < n && !r; i++) {
    uint32_t k = 0;
    while (k < st->capture_dep_count && st->capture_deps[k] != deps[i]) k++;
    if (k == st->capture_dep_count) st->capture_deps[st->capture_dep_count++] = deps[i];
  }
  return r;
}

/* ---- several streams in one capture ---- */

/* A stream leaves the capture it is in (its end, or the capture's). */
static void capture_leave(struct CUstream_st *st) {
  st->capture = NULL;
  st->capture_dep_count = 0;
  st->capture_origin = NULL;
}

/* The streams captures began on, while they capture: how a wait finds an event's capture. */
static struct CUstream_st **origins;
static uint32_t origin_count, origin_cap;

static CUresult origin_add(struct CUstream_st *st) {
  if (origin_count == origin_cap) {
    uint32_t cap = origin_cap ? 2 * origin_cap : 8;
    struct CUstream_st **v = realloc(origins, cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    origins = v, origin_cap = cap;
  }
  origins[origin_count++] = st;
  return CUDA_SUCCESS;
}

static void origin_remove(struct CUstream_st *st) {
  for (uint32_t i = 0; i < origin_count; i++)
    if (origins[i] == st) origins[i] = origins[--origin_count];
}

static struct CUstream_st *origin_of(unsigned long long capture_id) {
  for (uint32_t i = 0; i < origin_count; i++)
    if (origins[i]->capture_id == capture_id) return origins[i];
  return NULL;
}

/* Marks the nodes `from` holds and every node they depend on, transitively (a stack, not
 * recursion: a chain may be as long as the graph). */
static CUresult mark_ancestors(CUgraph g, struct CUgraphNode_st *const *from, uint32_t n,
                               char *seen) {
  struct CUgraphNode_st **stack = malloc((g->node_count + 1) * sizeof *stack);
  if (!stack) return CUDA_ERROR_OUT_OF_MEMORY;
  uint32_t top = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!seen[from[i]->index]) seen[from[i]->index] = 1, stack[top++] = from[i];
  while (top) {
    struct CUgraphNode_st *x = stack[--top];
    for (uint32_t k = 0; k < x->dep_count; k++)
      if (!seen[x->deps[k]->index]) seen[x->deps[k]->index] = 1, stack[top++] = x->deps[k];
  }
  free(stack);
  return CUDA_SUCCESS;
}

/* Whether every stream that joined origin's capture was joined back. */
static CUresult joined_back(struct CUstream_st *origin) {
  if (!origin->joined_count) return CUDA_SUCCESS;
  CUgraph g = origin->capture;
  char *seen = calloc(g->node_count + 1, 1);
  CUresult r = seen ? mark_ancestors(g, origin->capture_deps, origin->capture_dep_count, seen)
                    : CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t j = 0; j < origin->joined_count && !r; j++) {
    struct CUstream_st *s = origin->joined[j];
    for (uint32_t i = 0; i < s->capture_dep_count && !r; i++)
      if (!seen[s->capture_deps[i]->index]) {
        nvcu_log("cuStreamEndCapture: stream %p joined the capture but its work (node %p) was "
                 "not joined back into stream %p (record an event on it and wait for it there); "
                 "the capture is invalidated",
                 (void *)s, (void *)s->capture_deps[i], (void *)origin);
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
      }
  }
  free(seen);
  return r;
}

/* A record in a captured stream: the event stands for what the stream's next node would depend
 * on, in this capture. */
CUresult nvcu_capture_record(struct CUstream_st *st, struct CUevent_st *ev) {
  size_t n = st->capture_dep_count;
  struct CUgraphNode_st **deps = malloc((n ? n : 1) * sizeof *deps);
  if (!deps) return CUDA_ERROR_OUT_OF_MEMORY;
  if (n) memcpy(deps, st->capture_deps, n * sizeof *deps);
  free(ev->capture_deps);
  ev->capture_deps = deps;
  ev->capture_dep_count = (uint32_t)n;
  ev->capture_id = st->capture_id;
  return CUDA_SUCCESS;
}

static CUresult join(struct CUstream_st *origin, struct CUstream_st *st) {
  if (origin->joined_count == origin->joined_cap) {
    uint32_t cap = origin->joined_cap ? 2 * origin->joined_cap : 4;
    struct CUstream_st **v = realloc(origin->joined, cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    origin->joined = v, origin->joined_cap = cap;
  }
  origin->joined[origin->joined_count++] = st;
  st->capture = origin->capture;
  st->capture_id = origin->capture_id;
  st->capture_origin = origin;
  st->capture_dep_count = 0;
  return CUDA_SUCCESS;
}

/* A wait for an event recorded in a capture: a stream outside any capture joins it (its next
 * nodes depend on what the event stands for), one in the same capture adds those dependencies. */
CUresult nvcu_capture_wait(struct CUstream_st *st, struct CUevent_st *ev) {
  struct CUstream_st *origin = origin_of(ev->capture_id);
  if (!origin) {
    nvcu_log("cuStreamWaitEvent: event %p was recorded in a capture that has ended", (void *)ev);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (st->capture && st->capture_id != ev->capture_id) {
    nvcu_log("cuStreamWaitEvent: stream %p captures into another graph than event %p was "
             "recorded in",
             (void *)st, (void *)ev);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (nvcu_stream_is_default(st)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  CUresult r = st->capture ? CUDA_SUCCESS : join(origin, st);
  if (!r) r = capture_deps_add(st, ev->capture_deps, ev->capture_dep_count);
  return r;
}

/* A stream that joined a capture is destroyed: the capture forgets it. */
void nvcu_capture_stream_gone(struct CUstream_st *st) {
  if (st->capture && !st->capture_origin) origin_remove(st);
  struct CUstream_st *origin = st->capture ? st->capture_origin : NULL;
  for (uint32_t i = 0; origin && i < origin->joined_count; i++)
    if (origin->joined[i] == st) origin->joined[i] = origin->joined[--origin->joined_count];
  for (uint32_t i = 0; i < st->joined_count; i++) capture_leave(st->joined[i]);
  free(st->joined);
}

static CUresult begin_capture(CUstream hStream, CUgraph g, const CUgraphNode *deps,
                              const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode) {
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (r) return r;
  if (nvcu_stream_is_default(st)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (g) r = capture_nodes_check(g, deps, n, "cuStreamBeginCaptureToGraph");
  if (!r) r = nvcu_edge_data_check(edges, n);
  if (!r) r = capture_reserve(st, n);
  if (r) return r;
  st->capture_dep_count = 0;
  r = capture_deps_add(st, deps, n);
  int made = !g;
  if (!r && !g) r = cuGraphCreate(&g, 0);
  if (r) return r;
  NVCU_LOCK();
  r = origin_add(st);
  if (!r) {
    st->capture = g;
    st->capture_id = ++last_capture_id;
    st->capture_origin = NULL;
    st->capture_made = made;
    st->joined_count = 0;
  }
  NVCU_UNLOCK();
  if (r && made) cuGraphDestroy(g);
  return r;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin_capture(hStream, NULL, NULL, NULL, 0, mode);
}

CUresult cuStreamBeginCapture(CUstream hStream) {
  return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

/* Nodes captured go into hGraph after `dependencies`; cuStreamEndCapture gives hGraph back. */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode) {
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  return begin_capture(hStream, hGraph, dependencies, dependencyData, numDependencies, mode);
}

/* The capture ends on the stream it began on, once every stream that joined it (by waiting for
 * an event recorded in it) has been joined back: what each last captured is an ancestor of what
 * the origin depends on now. Otherwise the capture is invalidated, as CUDA does. */
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (r) return r;
  if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = NULL;
  if (!st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (st->capture_origin) {
    nvcu_log("cuStreamEndCapture: stream %p joined the capture stream %p began; end it there",
             (void *)st, (void *)st->capture_origin);
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  NVCU_LOCK();
  r = joined_back(st);
  CUgraph g = st->capture;
  for (uint32_t i = 0; i < st->joined_count; i++) capture_leave(st->joined[i]);
  st->joined_count = 0;
  capture_leave(st);
  origin_remove(st);
  if (r && st->capture_made) cuGraphDestroy(g);
  NVCU_UNLOCK();
  if (!r) *phGraph = g;
  return r;
}

CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                              const CUgraphEdgeData *dependencyData,
                                              size_t numDependencies, unsigned int flags) {
  if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    nvcu_log("cuStreamUpdateCaptureDependencies: flags %u (0: add, 1: set)", flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && !st->capture) r = CUDA_ERROR_ILLEGAL_STATE;
  if (!r)
    r = capture_nodes_check(st->capture, dependencies, numDependencies,
                            "cuStreamUpdateCaptureDependencies");
  if (!r) r = nvcu_edge_data_check(dependencyData, numDependencies);
  if (!r) r = capture_reserve(st, st->capture_dep_count + numDependencies);
  if (!r && flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) st->capture_dep_count = 0;
  if (!r) r = capture_deps_add(st, dependencies, numDependencies);
  NVCU_UNLOCK();
  return r;
}

CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                           size_t numDependencies, unsigned int flags) {
  return cuStreamUpdateCaptureDependencies_v2(hStream, dependencies, NULL, numDependencies, flags);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   const CUgraphEdgeData **edgeData_out,
                                   size_t *numDependencies_out) {
  if (!captureStatus_out || (edgeData_out && !dependencies_out)) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (r) return r;
  *captureStatus_out =
      st->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (!st->capture) return CUDA_SUCCESS;
  size_t n = st->capture_dep_count;
  if (id_out) *id_out = st->capture_id;
  if (graph_out) *graph_out = st->capture;
  if (dependencies_out) *dependencies_out = n ? (const CUgraphNode *)st->capture_deps : NULL;
  if (edgeData_out) *edgeData_out = n ? st->capture_edges : NULL;
  if (numDependencies_out) *numDependencies_out = n;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out) {
  return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                   NULL, numDependencies_out);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                cuuint64_t *id_out) {
  return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = thread_capture_mode;
  thread_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r && captureStatus)
    *captureStatus = st->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return r;
}

NVCU_ALIAS(cuStreamBeginCapture_ptsz, cuStreamBeginCapture)
NVCU_ALIAS(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2)
NVCU_ALIAS(cuStreamEndCapture_ptsz, cuStreamEndCapture)
NVCU_ALIAS(cuStreamIsCapturing_ptsz, cuStreamIsCapturing)
NVCU_ALIAS(cuStreamGetCaptureInfo_ptsz, cuStreamGetCaptureInfo)
NVCU_ALIAS(cuStreamGetCaptureInfo_v2_ptsz, cuStreamGetCaptureInfo_v2)
NVCU_ALIAS(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo_v3)
NVCU_ALIAS(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph)
NVCU_ALIAS(cuStreamUpdateCaptureDependencies_ptsz, cuStreamUpdateCaptureDependencies)
NVCU_ALIAS(cuStreamUpdateCaptureDependencies_v2_ptsz, cuStreamUpdateCaptureDependencies_v2)
