/* Graph memory nodes: allocation and free nodes (cuGraphAddMemAllocNode, cuGraphAddMemFreeNode,
 * captured cuMemAllocAsync and cuMemFreeAsync) and the device's graph memory figures. An
 * allocation node's memory is made when the node is and lives until its graph and the graph's
 * executable graph are both destroyed: CUDA fixes the address for the graph's lifetime and lets
 * every launch use it again, so nvhcq keeps the bytes rather than mapping them per launch. Free
 * nodes, and the caller's cuMemFree(Async) of an allocation no free node frees, only mark it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct nvcu_graph_alloc {
  CUdeviceptr dptr;
  CUDA_MEM_ALLOC_NODE_PARAMS params; /* as given, dptr filled in; accessDescs point at `access` */
  CUmemAccessDesc *access;
} nvcu_graph_alloc;

struct nvcu_graph_mem {
  int refs;  /* the graph's and its executable graph's */
  int execs; /* executable graphs of the graph alive: CUDA allows one */
  nvcu_graph_alloc *v;
  uint32_t n, cap;
};

/* Bytes held by graph allocations per device, and the most since the last reset (the lock). */
static uint64_t used[NVCU_MAX_DEVICES], used_high[NVCU_MAX_DEVICES];

static void account(int device, int64_t delta) {
  used[device] += (uint64_t)delta;
  if (used[device] > used_high[device]) used_high[device] = used[device];
}

void nvcu_graph_mem_unref(struct nvcu_graph_mem *mem, int exec) {
  if (!mem) return;
  if (exec) mem->execs--;
  if (--mem->refs) return;
  for (uint32_t i = 0; i < mem->n; i++) {
    nvcu_alloc *a = nvcu_alloc_find(mem->v[i].dptr);
    if (a && a->graph_mem == mem) {
      account(a->device, -(int64_t)a->size);
      (void)nvcu_alloc_release(a);
    }
    free(mem->v[i].access);
  }
  free(mem->v);
  free(mem);
}

int nvcu_graph_mem_kept(nvcu_alloc *a, CUresult *r) {
  if (!a->graph_mem) return 0;
  *r = CUDA_SUCCESS;
  if (a->graph_freed) {
    nvcu_log("freeing 0x%llx: a free node of a graph frees this graph allocation; it cannot be "
             "freed outside the graph",
             (unsigned long long)a->base);
    *r = CUDA_ERROR_INVALID_VALUE;
  }
  return 1;
}

static CUresult check_params(const CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  const CUmemPoolProps *pp = &p->poolProps;
  if (!p->bytesize || pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE || (p->accessDescCount && !p->accessDescs))
    return CUDA_ERROR_INVALID_VALUE;
  if (pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_INVALID_VALUE; /* as CUDA */
  for (size_t i = 0; i < p->accessDescCount; i++)
    if (p->accessDescs[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->accessDescs[i].location.id != pp->location.id)
      return nvcu_unsupported("graph allocations other devices access");
  nvcu_device *d;
  return nvcu_device_get(pp->location.id, &d);
}

static CUresult record(struct CUgraph_st *g, const CUDA_MEM_ALLOC_NODE_PARAMS *p,
                       CUdeviceptr dptr) {
  struct nvcu_graph_mem *m = g->mem;
  if (m->n == m->cap) {
    uint32_t cap = m->cap ? 2 * m->cap : 8;
    nvcu_graph_alloc *grown = realloc(m->v, cap * sizeof *grown);
    if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
    m->v = grown, m->cap = cap;
  }
  nvcu_graph_alloc *e = &m->v[m->n];
  *e = (nvcu_graph_alloc){.dptr = dptr, .params = *p};
  if (p->accessDescCount) {
    e->access = malloc(p->accessDescCount * sizeof *e->access);
    if (!e->access) return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(e->access, p->accessDescs, p->accessDescCount * sizeof *e->access);
  }
  e->params.accessDescs = e->access;
  e->params.dptr = dptr;
  m->n++;
  return CUDA_SUCCESS;
}

/* The memory and the node; on failure neither. */
static CUresult add_alloc(CUgraphNode *out, struct CUgraph_st *g, const CUgraphNode *deps, size_t n,
                          CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  CUresult r = check_params(p);
  if (r) return r;
  if (g->owner) return nvcu_unsupported("allocation nodes in a child graph");
  if (!g->mem && !(g->mem = calloc(1, sizeof *g->mem))) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!g->mem->refs) g->mem->refs = 1; /* the graph's */
  CUdeviceptr dptr = 0;
  int device = p->poolProps.location.id;
  r = nvcu_alloc_graph_memory(device, p->bytesize, g->mem, &dptr);
  if (!r) r = record(g, p, dptr);
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .dst = dptr, .size = p->bytesize};
  if (!r) r = nvcu_graph_append(g, &op, deps, n, out);
  if (r && dptr) {
    if (g->mem->n && g->mem->v[g->mem->n - 1].dptr == dptr) free(g->mem->v[--g->mem->n].access);
    (void)nvcu_alloc_release(nvcu_alloc_find(dptr));
    return r;
  }
  if (!r) account(device, (int64_t)p->bytesize), p->dptr = dptr;
  return r;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
  if (!phGraphNode || !nodeParams) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = add_alloc(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
  NVCU_UNLOCK();
  return r;
}

/* A graph allocation no free node frees yet, at its base. */
static nvcu_alloc *freeable(CUdeviceptr dptr) {
  nvcu_alloc *a = nvcu_alloc_find(dptr);
  if (!a || !a->graph_mem || a->base != dptr || a->graph_freed) {
    nvcu_log("free node for 0x%llx: %s", (unsigned long long)dptr,
             a && a->graph_mem && a->base == dptr ? "a free node frees it already"
                                                  : "no allocation node made it");
    return NULL;
  }
  return a;
}

static CUresult add_free(CUgraphNode *out, struct CUgraph_st *g, const CUgraphNode *deps, size_t n,
                         CUdeviceptr dptr) {
  nvcu_alloc *a = freeable(dptr);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  if (g->owner) return nvcu_unsupported("free nodes in a child graph");
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_MEM_FREE, .dst = dptr};
  CUresult r = nvcu_graph_append(g, &op, deps, n, out);
  if (!r) a->graph_freed = 1;
  return r;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                               const CUgraphNode *dependencies, size_t numDependencies,
                               CUdeviceptr dptr) {
  if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  CUresult r = add_free(phGraphNode, hGraph, dependencies, numDependencies, dptr);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
  if (!params_out) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_node_check(hNode) || hNode->op.kind != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  const struct nvcu_graph_mem *m = hNode->graph->mem;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  for (uint32_t i = 0; m && i < m->n && r; i++)
    if (m->v[i].dptr == hNode->op.dst) *params_out = m->v[i].params, r = CUDA_SUCCESS;
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out) {
  if (!dptr_out) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_node_check(hNode) || hNode->op.kind != CU_GRAPH_NODE_TYPE_MEM_FREE)
    return CUDA_ERROR_INVALID_VALUE;
  *dptr_out = hNode->op.dst;
  return CUDA_SUCCESS;
}

/* ---- stream capture ---- */

/* The node follows the capture's dependencies and becomes its only one. */
static void captured(struct CUstream_st *st, CUgraphNode node) {
  st->capture_deps[0] = node;
  st->capture_dep_count = 1;
}

/* The pool's properties make the node's, as CUDA does; the graph owns the memory, not the pool. */
CUresult nvcu_graph_mem_capture_alloc(struct CUstream_st *st, size_t size,
                                      const CUmemPoolProps *props, CUdeviceptr *dptr) {
  CUDA_MEM_ALLOC_NODE_PARAMS p = {.poolProps = *props, .bytesize = size};
  p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  CUgraphNode node;
  CUresult r = add_alloc(&node, st->capture, st->capture_deps, st->capture_dep_count, &p);
  if (r) return r;
  captured(st, node);
  *dptr = p.dptr;
  return CUDA_SUCCESS;
}

CUresult nvcu_graph_mem_capture_free(struct CUstream_st *st, CUdeviceptr dptr) {
  CUgraphNode node;
  CUresult r = add_free(&node, st->capture, st->capture_deps, st->capture_dep_count, dptr);
  if (!r) captured(st, node);
  return r;
}

/* ---- instantiation ---- */

int nvcu_graph_has_mem(const struct CUgraph_st *g) {
  return g->mem && g->mem->n;
}

CUresult nvcu_graph_mem_instantiated(struct CUgraph_st *g, struct CUgraphExec_st *x) {
  if (!g->mem || !g->mem->n) return CUDA_SUCCESS;
  if (g->mem->execs) {
    nvcu_log("instantiating graph %p: it has allocation nodes and an executable graph already; "
             "CUDA allows one at a time (destroy the other first)",
             (void *)g);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  g->mem->refs++, g->mem->execs++;
  x->mem = g->mem;
  return CUDA_SUCCESS;
}

/* ---- the device's figures ---- */

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(device, &d); /* nothing is cached beyond the graphs' own memory */
  NVCU_UNLOCK();
  return r;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(device, &d);
  if (!r) switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      *(cuuint64_t *)value = used[device];
      break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      *(cuuint64_t *)value = used_high[device];
      break;
    default:
      r = CUDA_ERROR_INVALID_VALUE;
    }
  NVCU_UNLOCK();
  return r;
}

/* Only the high-water marks may be set, and only to 0 (which makes them the current figure). */
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  int high = attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH || attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH;
  if (!high || *(const cuuint64_t *)value != 0) return CUDA_ERROR_INVALID_VALUE;
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(device, &d);
  if (!r) used_high[device] = used[device];
  NVCU_UNLOCK();
  return r;
}
