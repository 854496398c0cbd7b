/* Graphs and their nodes: kernel, memcpy, memset, host, event record and wait, child graph and
 * batch memory operation and empty nodes (conditional ones in graph_cond.c), built explicitly or by
 * stream capture, and their parameters read and changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

CUresult nvcu_graph_check(CUgraph g) {
  return g && g->magic == NVCU_GRAPH_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult nvcu_node_check(CUgraphNode n) {
  return n && n->magic == NVCU_NODE_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  if (!phGraph || flags) return CUDA_ERROR_INVALID_VALUE;
  int index;
  CUresult r = nvcu_current(NULL, &index);
  if (r) return r;
  CUgraph g = calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = NVCU_GRAPH_MAGIC;
  g->device = index;
  *phGraph = g;
  return CUDA_SUCCESS;
}

/* The graph's user object references go last: a destructor may free what nodes point to. */
static void graph_free(struct CUgraph_st *g) {
  for (uint32_t i = 0; i < g->node_count; i++) nvcu_node_free(g->nodes[i]);
  free(g->nodes);
  nvcu_cond_graph_free(g);
  g->magic = 0;
  NVCU_LOCK();
  nvcu_graph_mem_unref(g->mem, 0);
  NVCU_UNLOCK();
  nvcu_urefs_release(&g->urefs);
  free(g);
}

void nvcu_graph_free(struct CUgraph_st *g) {
  graph_free(g);
}

void nvcu_node_free(struct CUgraphNode_st *n) {
  if (n->child) graph_free(n->child);
  nvcu_cond_node_free(n);
  n->magic = 0;
  free(n->op.args);
  free(n->param_ptrs);
  free(n->deps);
  free(n);
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (hGraph->owner) {
    nvcu_log("cuGraphDestroy: graph %p belongs to a child graph node; destroy that node or its "
             "graph instead",
             (void *)hGraph);
    return CUDA_ERROR_INVALID_VALUE;
  }
  graph_free(hGraph);
  return CUDA_SUCCESS;
}

/* A node holding a copy of op (and of its arguments), not yet in a graph. */
static struct CUgraphNode_st *node_new(const nvcu_op *op, uint32_t dep_count) {
  struct CUgraphNode_st *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->op = *op;
  n->op.args = op->args_size ? malloc(op->args_size) : NULL;
  n->deps = malloc((dep_count ? dep_count : 1) * sizeof *n->deps);
  if (!n->deps || (op->args_size && !n->op.args)) {
    free(n->op.args), free(n->deps), free(n);
    return NULL;
  }
  if (op->args_size) memcpy(n->op.args, op->args, op->args_size);
  n->magic = NVCU_NODE_MAGIC;
  return n;
}

static CUresult graph_insert(struct CUgraph_st *g, struct CUgraphNode_st *n) {
  struct CUgraphNode_st **nodes = realloc(g->nodes, (g->node_count + 1) * sizeof *nodes);
  if (!nodes) return CUDA_ERROR_OUT_OF_MEMORY;
  g->nodes = nodes;
  n->graph = g;
  n->index = g->node_count;
  n->id = g->next_id++;
  g->nodes[g->node_count++] = n;
  return CUDA_SUCCESS;
}

static CUresult deps_check(struct CUgraph_st *g, const CUgraphNode *deps, size_t n) {
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    if (nvcu_node_check(deps[i]) || deps[i]->graph != g) return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i; j++)
      if (deps[j] == deps[i]) return CUDA_ERROR_INVALID_VALUE; /* CUDA refuses duplicates */
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_graph_append(struct CUgraph_st *g, const nvcu_op *op, const CUgraphNode *deps,
                           size_t dep_count, CUgraphNode *out) {
  CUresult r = deps_check(g, deps, dep_count);
  if (r) return r;
  struct CUgraphNode_st *n = node_new(op, (uint32_t)dep_count);
  if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < dep_count; i++) n->deps[i] = deps[i];
  n->dep_count = (uint32_t)dep_count;
  r = graph_insert(g, n);
  if (r) {
    nvcu_node_free(n);
    return r;
  }
  if (out) *out = n;
  return CUDA_SUCCESS;
}

void nvcu_fill_nodes(struct CUgraphNode_st *const *list, size_t count, CUgraphNode *out,
                     size_t *num) {
  if (!out) {
    *num = count;
    return;
  }
  for (size_t i = 0; i < *num; i++) out[i] = i < count ? list[i] : NULL;
  if (count < *num) *num = count;
}

CUresult nvcu_edge_data_check(const CUgraphEdgeData *data, size_t n) {
  static const CUgraphEdgeData zero;
  for (size_t i = 0; data && i < n; i++)
    if (memcmp(&data[i], &zero, sizeof zero))
      return nvcu_unsupported("graph edges other than the default (programmatic dependencies)");
  return CUDA_SUCCESS;
}

/* ---- copies ---- */

static struct CUgraphNode_st *node_copy(const struct CUgraphNode_st *src) {
  struct CUgraphNode_st *n = node_new(&src->op, src->dep_count);
  if (!n) return NULL;
  n->id = src->id;
  n->copy = src->copy;
  n->has_copy = src->has_copy;
  n->dep_count = src->dep_count;
  if (src->child && !(n->child = nvcu_graph_copy(src->child))) {
    nvcu_node_free(n);
    return NULL;
  }
  if (n->child) n->child->owner = n;
  if (nvcu_cond_node_copy(n, src)) {
    nvcu_node_free(n);
    return NULL;
  }
  return n;
}

struct CUgraph_st *nvcu_graph_copy(const struct CUgraph_st *g) {
  struct CUgraph_st *c = calloc(1, sizeof *c);
  if (c) c->nodes = calloc(g->node_count ? g->node_count : 1, sizeof *c->nodes);
  if (!c || !c->nodes) {
    free(c);
    return NULL;
  }
  *c = (struct CUgraph_st){.magic = NVCU_GRAPH_MAGIC,
                           .device = g->device,
                           .nodes = c->nodes,
                           .next_id = g->next_id,
                           .origin = (struct CUgraph_st *)g};
  if (nvcu_urefs_copy(&c->urefs, &g->urefs) || /* a clone holds the same user objects */
      nvcu_cond_graph_copy(c, g)) {            /* and conditions */
    graph_free(c);
    return NULL;
  }
  for (uint32_t i = 0; i < g->node_count; i++) {
    struct CUgraphNode_st *n = node_copy(g->nodes[i]);
    if (!n) {
      graph_free(c);
      return NULL;
    }
    n->graph = c;
    n->index = i;
    c->nodes[c->node_count++] = n;
  }
  for (uint32_t i = 0; i < g->node_count; i++) /* edges: by index, as in the original */
    for (uint32_t k = 0; k < g->nodes[i]->dep_count; k++)
      c->nodes[i]->deps[k] = c->nodes[g->nodes[i]->deps[k]->index];
  return c;
}

/* ---- kernel nodes ---- */

CUresult nvcu_kernel_op(const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern, nvcu_op *op) {
  CUfunction f = p->func ? p->func : (CUfunction)kern;
  CUresult r = nvcu_func_check(f);
  if (r) return r;
  *op = (nvcu_op){.kind = CU_GRAPH_NODE_TYPE_KERNEL,
                  .func = f,
                  .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                  .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                  .shared = p->sharedMemBytes,
                  /* the node's context is the current one: a green context's keeps to its SMs */
                  .sms = nvcu_current_sms(NULL)};
  return nvcu_pack_args(f, p->kernelParams, p->extra, &op->args, &op->args_size);
}

/* Adds a node of op (its arguments then freed) under the library's lock. */
static CUresult add_op(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                       nvcu_op *op) {
  CUresult r = nvcu_graph_append(g, op, deps, n, out);
  free(op->args);
  op->args = NULL;
  return r;
}

static CUresult add_kernel(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *deps,
                           size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern) {
  if (!p || !phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {0};
  NVCU_LOCK();
  CUresult r = nvcu_kernel_op(p, kern, &op);
  r = r ? r : add_op(phGraphNode, hGraph, deps, n, &op);
  NVCU_UNLOCK();
  free(op.args);
  return r;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  return add_kernel(phGraphNode, hGraph, dependencies, numDependencies,
                    (const CUDA_KERNEL_NODE_PARAMS_v1 *)nodeParams,
                    nodeParams ? nodeParams->kern : NULL);
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
  return add_kernel(phGraphNode, hGraph, dependencies, numDependencies, nodeParams, NULL);
}

static CUresult node_of_kind(CUgraphNode n, int kind) {
  if (nvcu_node_check(n)) return CUDA_ERROR_INVALID_HANDLE;
  return n->op.kind == kind ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* kernelParams as CUDA gives them back: one pointer per parameter, into the node's own copy. */
static CUresult kernel_get(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p, int v2) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
  if (r) return r;
  const nvcu_op *op = &hNode->op;
  struct CUfunc_st *f = op->func;
  if (!hNode->param_ptrs) {
    hNode->param_ptrs = calloc(f->param_count + 1, sizeof *hNode->param_ptrs);
    if (!hNode->param_ptrs) return CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < f->param_count; i++)
      hNode->param_ptrs[i] = op->args + f->params[i].offset;
  }
  CUDA_KERNEL_NODE_PARAMS out = {.func = f,
                                 .gridDimX = op->grid.x,
                                 .gridDimY = op->grid.y,
                                 .gridDimZ = op->grid.z,
                                 .blockDimX = op->block.x,
                                 .blockDimY = op->block.y,
                                 .blockDimZ = op->block.z,
                                 .sharedMemBytes = op->shared,
                                 .kernelParams = hNode->param_ptrs};
  memcpy(p, &out, v2 ? sizeof out : sizeof(CUDA_KERNEL_NODE_PARAMS_v1));
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  return kernel_get(hNode, nodeParams, 1);
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
  return kernel_get(hNode, (CUDA_KERNEL_NODE_PARAMS *)nodeParams, 0);
}

/* Replaces a node's operation by op (whose arguments the node takes over). */
static void node_set_op(CUgraphNode n, nvcu_op *op) {
  free(n->op.args);
  free(n->param_ptrs);
  n->param_ptrs = NULL;
  n->op = *op;
  op->args = NULL;
}

static CUresult kernel_set(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel k) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
  if (r) return r;
  nvcu_op op = {0};
  NVCU_LOCK();
  r = nvcu_kernel_op(p, k, &op);
  if (!r) nvcu_launch_attrs_copy(&op, &hNode->op); /* new parameters, the same attributes */
  if (!r) node_set_op(hNode, &op);
  NVCU_UNLOCK();
  free(op.args);
  return r;
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                       const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  return kernel_set(hNode, (const CUDA_KERNEL_NODE_PARAMS_v1 *)nodeParams,
                    nodeParams ? nodeParams->kern : NULL);
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                    const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
  return kernel_set(hNode, nodeParams, NULL);
}

/* ---- memcpy and memset nodes ---- */

/* One end of a CUDA_MEMCPY3D as a GPU address: device memory, or pinned host memory this
 * library allocated (pageable memory cannot be read by a graph's copy engine). */
static CUresult copy_end(CUmemorytype type, const void *host, CUdeviceptr device, uint64_t offset,
                         uint64_t *out) {
  uint64_t a = type == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : device;
  if (type == CU_MEMORYTYPE_ARRAY) return nvcu_unsupported("CUDA arrays in memcpy nodes");
  nvcu_alloc *al = nvcu_alloc_find(a + offset);
  if (!al) {
    nvcu_log("memcpy node: 0x%llx is not memory this library allocated (pageable host memory "
             "cannot be copied by a graph)",
             (unsigned long long)(a + offset));
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = nvhcq_buffer_gpu_address(al->buf) + (a + offset - al->base);
  return CUDA_SUCCESS;
}

CUresult nvcu_memcpy_op(const CUDA_MEMCPY3D *p, nvcu_op *op) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->Height > 1 || p->Depth > 1) return nvcu_unsupported("2D and 3D memcpy nodes");
  uint64_t so = p->srcXInBytes + p->srcY * p->srcPitch + p->srcZ * p->srcPitch * p->srcHeight;
  uint64_t dof = p->dstXInBytes + p->dstY * p->dstPitch + p->dstZ * p->dstPitch * p->dstHeight;
  *op = (nvcu_op){.kind = CU_GRAPH_NODE_TYPE_MEMCPY, .size = p->WidthInBytes};
  CUresult r = copy_end(p->srcMemoryType, p->srcHost, p->srcDevice, so, &op->src);
  if (!r) r = copy_end(p->dstMemoryType, p->dstHost, p->dstDevice, dof, &op->dst);
  return r;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
  (void)ctx;
  if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {0};
  NVCU_LOCK();
  CUresult r = nvcu_memcpy_op(copyParams, &op);
  if (!r) r = nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
  if (!r) (*phGraphNode)->copy = *copyParams, (*phGraphNode)->has_copy = 1;
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams) {
  if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
  if (r) return r;
  if (hNode->has_copy) {
    *nodeParams = hNode->copy;
    return CUDA_SUCCESS;
  }
  /* A captured copy: its ends as the GPU addresses it was given */
  *nodeParams = (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                                .srcDevice = hNode->op.src,
                                .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                                .dstDevice = hNode->op.dst,
                                .WidthInBytes = hNode->op.size,
                                .Height = 1,
                                .Depth = 1};
  return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams) {
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
  if (r) return r;
  nvcu_op op = {0};
  NVCU_LOCK();
  r = nvcu_memcpy_op(nodeParams, &op);
  if (!r) node_set_op(hNode, &op), hNode->copy = *nodeParams, hNode->has_copy = 1;
  NVCU_UNLOCK();
  return r;
}

CUresult nvcu_memset_op(const CUDA_MEMSET_NODE_PARAMS *p, nvcu_op *op) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (!p->width || !p->height) return CUDA_ERROR_INVALID_VALUE;
  if (p->height > 1) return nvcu_unsupported("2D memset nodes");
  *op = (nvcu_op){.kind = CU_GRAPH_NODE_TYPE_MEMSET,
                  .dst = p->dst,
                  .size = p->width,
                  .value = p->value,
                  .element_size = p->elementSize};
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  (void)ctx;
  if (!phGraphNode || !p) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op;
  CUresult r = nvcu_memset_op(p, &op);
  if (r) return r;
  NVCU_LOCK();
  r = nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams) {
  if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
  if (r) return r;
  const nvcu_op *op = &hNode->op;
  *nodeParams = (CUDA_MEMSET_NODE_PARAMS){.dst = op->dst,
                                          .value = op->value,
                                          .elementSize = op->element_size,
                                          .width = op->size,
                                          .height = 1};
  return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams) {
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
  nvcu_op op;
  if (!r) r = nvcu_memset_op(nodeParams, &op);
  if (!r) node_set_op(hNode, &op);
  return r;
}

/* ---- empty, host and event nodes ---- */

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                             const CUgraphNode *dependencies, size_t numDependencies) {
  if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_EMPTY};
  return nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
}

CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                            const CUgraphNode *dependencies, size_t numDependencies,
                            const CUDA_HOST_NODE_PARAMS *nodeParams) {
  if (!phGraphNode || !nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {
      .kind = CU_GRAPH_NODE_TYPE_HOST, .fn = nodeParams->fn, .user = nodeParams->userData};
  return nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams) {
  if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_HOST);
  if (!r) nodeParams->fn = hNode->op.fn, nodeParams->userData = hNode->op.user;
  return r;
}

CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams) {
  if (!nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_HOST);
  if (!r) hNode->op.fn = nodeParams->fn, hNode->op.user = nodeParams->userData;
  return r;
}

static CUresult event_check(CUevent e) {
  return e && e->magic == NVCU_EVENT_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult add_event(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                          CUevent event, int kind) {
  if (!out || event_check(event)) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {.kind = kind, .event = event};
  return nvcu_graph_append(g, &op, deps, n, out);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   CUevent event) {
  return add_event(phGraphNode, hGraph, dependencies, numDependencies, event,
                   CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 CUevent event) {
  return add_event(phGraphNode, hGraph, dependencies, numDependencies, event,
                   CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static CUresult event_get(CUgraphNode n, CUevent *out, int kind) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(n, kind);
  if (!r) *out = n->op.event;
  return r;
}

static CUresult event_set(CUgraphNode n, CUevent event, int kind) {
  CUresult r = node_of_kind(n, kind);
  if (!r) r = event_check(event);
  if (!r) n->op.event = event;
  return r;
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out) {
  return event_get(hNode, event_out, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return event_set(hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out) {
  return event_get(hNode, event_out, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return event_set(hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* ---- batch memory operation nodes ---- */

/* The node's operations are a copy of the parameter array, in its args. */
static CUresult memop_op(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p, nvcu_op *op) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_memops_check(p->count, p->paramArray, p->flags);
  *op = (nvcu_op){.kind = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                  .args = (uint8_t *)p->paramArray,
                  .args_size = p->count * (uint32_t)sizeof *p->paramArray};
  return r;
}

CUresult cuGraphAddBatchMemOpNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies, size_t numDependencies,
                                  const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams) {
  if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op;
  NVCU_LOCK();
  CUresult r = memop_op(nodeParams, &op);
  if (!r) r = nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
  NVCU_UNLOCK();
  return r;
}

/* The array returned is the node's own copy, valid until the node changes or goes. */
CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode,
                                        CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams_out) {
  if (!nodeParams_out) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  if (!r)
    *nodeParams_out = (CUDA_BATCH_MEM_OP_NODE_PARAMS){
        .ctx = NULL,
        .count = hNode->op.args_size / (unsigned)sizeof(CUstreamBatchMemOpParams),
        .paramArray = (CUstreamBatchMemOpParams *)hNode->op.args};
  return r;
}

CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode,
                                        const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams) {
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  nvcu_op op;
  if (!r) r = memop_op(nodeParams, &op);
  uint8_t *copy = r ? NULL : malloc(op.args_size);
  if (!r && !copy) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r) return r;
  memcpy(copy, op.args, op.args_size);
  NVCU_LOCK();
  free(hNode->op.args);
  hNode->op.args = copy, hNode->op.args_size = op.args_size;
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

/* ---- child graph nodes ---- */

/* A child graph node holds a copy of the graph, made when the node is added (CUDA's default
 * ownership), or the graph itself moved into it (child_move). */
CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies, size_t numDependencies,
                                  CUgraph childGraph) {
  if (!phGraphNode || nvcu_graph_check(childGraph)) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (childGraph == hGraph) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_has_mem(childGraph))
    return nvcu_unsupported("a graph with allocation or free nodes as a child graph");
  NVCU_LOCK();
  struct CUgraph_st *copy = nvcu_graph_copy(childGraph);
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_GRAPH};
  CUresult r = copy ? nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode)
                    : CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    copy->origin = NULL;
    copy->owner = *phGraphNode;
    (*phGraphNode)->child = copy;
  } else if (copy) {
    copy->owner = NULL;
    cuGraphDestroy(copy);
  }
  NVCU_UNLOCK();
  return r;
}

/* CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE (CUDA 12.9): the node takes the graph itself, which then
 * belongs to it (cuGraphDestroy, instantiation and updates refuse it; it goes with the node). */
static CUresult child_check_move(CUgraph parent, CUgraph child) {
  if (nvcu_graph_check(child) || child == parent) return CUDA_ERROR_INVALID_VALUE;
  if (child->owner) {
    nvcu_log("a child graph node: graph %p belongs to another node already", (void *)child);
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (CUgraph g = parent; g; g = g->owner ? g->owner->graph : NULL)
    if (g == child) return CUDA_ERROR_INVALID_VALUE; /* a graph inside itself */
  if (nvcu_graph_has_mem(child))
    return nvcu_unsupported("a graph with allocation or free nodes as a child graph");
  return CUDA_SUCCESS;
}

static CUresult child_move(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                           CUgraph child) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_GRAPH};
  CUresult r = child_check_move(g, child);
  if (!r) r = nvcu_graph_append(g, &op, deps, n, out);
  if (!r) child->owner = *out, child->moved = 1, (*out)->child = child;
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph) {
  if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = node_of_kind(hNode, CU_GRAPH_NODE_TYPE_GRAPH);
  if (!r) *phGraph = hNode->child;
  return r;
}

/* ---- generic nodes ---- */

static int zeroes(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                         const CUgraphEdgeData *edges, size_t n, CUgraphNodeParams *p) {
  if (!p || !out || !zeroes(p->reserved0, sizeof p->reserved0) || p->reserved2)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_edge_data_check(edges, n);
  if (r) return r;
  switch (p->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return cuGraphAddKernelNode_v2(out, g, deps, n, &p->kernel);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    if (p->memcpy.flags || p->memcpy.reserved) return CUDA_ERROR_INVALID_VALUE;
    return cuGraphAddMemcpyNode(out, g, deps, n, &p->memcpy.copyParams, p->memcpy.copyCtx);
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return cuGraphAddMemsetNode(out, g, deps, n, (const CUDA_MEMSET_NODE_PARAMS *)&p->memset,
                                p->memset.ctx);
  case CU_GRAPH_NODE_TYPE_HOST:
    return cuGraphAddHostNode(out, g, deps, n, (const CUDA_HOST_NODE_PARAMS *)&p->host);
  case CU_GRAPH_NODE_TYPE_GRAPH:
    if (p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
      return child_move(out, g, deps, n, p->graph.graph);
    if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) return CUDA_ERROR_INVALID_VALUE;
    r = cuGraphAddChildGraphNode(out, g, deps, n, p->graph.graph);
    if (!r) p->graph.graph = (*out)->child; /* CUDA returns the node's own graph here */
    return r;
  case CU_GRAPH_NODE_TYPE_EMPTY:
    return cuGraphAddEmptyNode(out, g, deps, n);
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return cuGraphAddEventWaitNode(out, g, deps, n, p->eventWait.event);
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return cuGraphAddEventRecordNode(out, g, deps, n, p->eventRecord.event);
  case CU_GRAPH_NODE_TYPE_MEM_ALLOC: /* v2's layout is v1's */
    return cuGraphAddMemAllocNode(out, g, deps, n, (CUDA_MEM_ALLOC_NODE_PARAMS *)&p->alloc);
  case CU_GRAPH_NODE_TYPE_MEM_FREE:
    return cuGraphAddMemFreeNode(out, g, deps, n, p->free.dptr);
  case CU_GRAPH_NODE_TYPE_CONDITIONAL:
    if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
    return nvcu_cond_node_add(out, g, deps, n, &p->conditional);
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: /* v2's layout is v1's */
    return cuGraphAddBatchMemOpNode(out, g, deps, n, (CUDA_BATCH_MEM_OP_NODE_PARAMS *)&p->memOp);
  default:
    nvcu_log("cuGraphAddNode: node type %d", (int)p->type);
    return nvcu_unsupported("this graph node type");
  }
}

CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                           const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
                           size_t numDependencies, CUgraphNodeParams *nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                        size_t numDependencies, CUgraphNodeParams *nodeParams) {
  return add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (!numNodes) return CUDA_ERROR_INVALID_VALUE;
  nvcu_fill_nodes(hGraph->nodes, hGraph->node_count, nodes, numNodes);
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
  if (nvcu_node_check(hNode)) return CUDA_ERROR_INVALID_HANDLE;
  if (!type) return CUDA_ERROR_INVALID_VALUE;
  *type = (CUgraphNodeType)hNode->op.kind;
  return CUDA_SUCCESS;
}

/* A child graph node's graph becomes a copy of `child`, or `child` itself (moved). */
static CUresult child_set(CUgraphNode n, CUgraph child, int move) {
  CUresult r = node_of_kind(n, CU_GRAPH_NODE_TYPE_GRAPH);
  if (r) return r;
  if (nvcu_graph_check(child) || child == n->graph || child == n->child)
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  if (move) {
    r = child_check_move(n->graph, child);
    if (!r) {
      graph_free(n->child);
      child->owner = n, child->moved = 1, n->child = child;
    }
    NVCU_UNLOCK();
    return r;
  }
  struct CUgraph_st *copy = nvcu_graph_copy(child);
  if (copy) {
    graph_free(n->child);
    copy->origin = NULL;
    copy->owner = n;
    n->child = copy;
  }
  NVCU_UNLOCK();
  return copy ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
  CUgraphNodeParams *p = nodeParams;
  if (nvcu_node_check(hNode)) return CUDA_ERROR_INVALID_HANDLE;
  if (!p || (int)p->type != hNode->op.kind || !zeroes(p->reserved0, sizeof p->reserved0) ||
      p->reserved2)
    return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return cuGraphKernelNodeSetParams_v2(hNode, &p->kernel);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    if (p->memcpy.flags || p->memcpy.reserved) return CUDA_ERROR_INVALID_VALUE;
    return cuGraphMemcpyNodeSetParams(hNode, &p->memcpy.copyParams);
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return cuGraphMemsetNodeSetParams(hNode, (const CUDA_MEMSET_NODE_PARAMS *)&p->memset);
  case CU_GRAPH_NODE_TYPE_HOST:
    return cuGraphHostNodeSetParams(hNode, (const CUDA_HOST_NODE_PARAMS *)&p->host);
  case CU_GRAPH_NODE_TYPE_GRAPH:
    if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE &&
        p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
      return CUDA_ERROR_INVALID_VALUE;
    return child_set(hNode, p->graph.graph,
                     p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE);
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return cuGraphEventWaitNodeSetEvent(hNode, p->eventWait.event);
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return cuGraphEventRecordNodeSetEvent(hNode, p->eventRecord.event);
  case CU_GRAPH_NODE_TYPE_CONDITIONAL:
    return nvcu_unsupported("changing a conditional node's parameters (make a new node)");
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    return cuGraphBatchMemOpNodeSetParams(hNode, (CUDA_BATCH_MEM_OP_NODE_PARAMS *)&p->memOp);
  default:
    return CUDA_SUCCESS; /* empty nodes have no parameters */
  }
}
