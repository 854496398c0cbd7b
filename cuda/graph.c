/* Graphs: kernel, memcpy, memset and empty nodes, built explicitly or by stream capture, and
 * instantiated as nvhcq graphs whose launch values and arguments are graph variables, so that
 * executable-graph updates patch them in place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MEMSET_NODE_MAX_BYTES (64u << 20) /* a memset node's pattern is kept in pinned memory */

static CUresult graph_check(CUgraph g) {
  return g && g->magic == NVCU_GRAPH_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult exec_check(CUgraphExec e) {
  return e && e->magic == NVCU_EXEC_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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

CUresult cuGraphDestroy(CUgraph hGraph) {
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  for (uint32_t i = 0; i < hGraph->node_count; i++) {
    hGraph->nodes[i]->magic = 0;
    free(hGraph->nodes[i]->op.args);
    free(hGraph->nodes[i]->deps);
    free(hGraph->nodes[i]);
  }
  free(hGraph->nodes);
  hGraph->magic = 0;
  free(hGraph);
  return CUDA_SUCCESS;
}

CUresult nvcu_graph_append(struct CUgraph_st *g, const nvcu_op *op, const CUgraphNode *deps,
                           size_t dep_count, CUgraphNode *out) {
  for (size_t i = 0; i < dep_count; i++)
    if (!deps[i] || deps[i]->magic != NVCU_NODE_MAGIC || deps[i]->graph != g)
      return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphNode_st *n = calloc(1, sizeof *n);
  struct CUgraphNode_st **nodes = realloc(g->nodes, (g->node_count + 1) * sizeof *nodes);
  if (nodes) g->nodes = nodes;
  if (n) n->deps = malloc((dep_count ? dep_count : 1) * sizeof *n->deps);
  if (n && op->args_size) n->op.args = malloc(op->args_size);
  if (!n || !nodes || !n->deps || (op->args_size && !n->op.args)) {
    if (n) free(n->deps), free(n->op.args);
    free(n);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  uint8_t *args = n->op.args;
  n->op = *op;
  n->op.args = args;
  if (op->args_size) memcpy(args, op->args, op->args_size);
  for (size_t i = 0; i < dep_count; i++) n->deps[i] = deps[i]->index;
  n->dep_count = (uint32_t)dep_count;
  n->magic = NVCU_NODE_MAGIC;
  n->graph = g;
  n->index = g->node_count;
  g->nodes[g->node_count++] = n;
  if (out) *out = n;
  return CUDA_SUCCESS;
}

/* ---- nodes ---- */

static CUresult kernel_op(const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern, nvcu_op *op) {
  CUfunction f = p->func ? p->func : (CUfunction)kern;
  CUresult r = nvcu_func_check(f);
  if (r) return r;
  *op = (nvcu_op){.kind = CU_GRAPH_NODE_TYPE_KERNEL,
                  .func = f,
                  .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                  .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                  .shared = p->sharedMemBytes};
  return nvcu_pack_args(f, p->kernelParams, p->extra, &op->args, &op->args_size);
}

static CUresult add_kernel(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *deps,
                           size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern) {
  if (!p || !phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {0};
  NVCU_LOCK();
  CUresult r = kernel_op(p, kern, &op);
  if (!r) r = nvcu_graph_append(hGraph, &op, deps, n, phGraphNode);
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

static CUresult memcpy_op(const CUDA_MEMCPY3D *p, nvcu_op *op) {
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
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {0};
  NVCU_LOCK();
  CUresult r = memcpy_op(copyParams, &op);
  if (!r) r = nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  (void)ctx;
  if (!phGraphNode || !p) return CUDA_ERROR_INVALID_VALUE;
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (p->height > 1) return nvcu_unsupported("2D memset nodes");
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_MEMSET,
                .dst = p->dst,
                .size = p->width,
                .value = p->value,
                .element_size = p->elementSize};
  NVCU_LOCK();
  CUresult r = nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                             const CUgraphNode *dependencies, size_t numDependencies) {
  if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_EMPTY};
  return nvcu_graph_append(hGraph, &op, dependencies, numDependencies, phGraphNode);
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (!numNodes) return CUDA_ERROR_INVALID_VALUE;
  if (nodes)
    for (size_t i = 0; i < *numNodes && i < hGraph->node_count; i++) nodes[i] = hGraph->nodes[i];
  *numNodes = hGraph->node_count;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
  if (!hNode || hNode->magic != NVCU_NODE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (!type) return CUDA_ERROR_INVALID_VALUE;
  *type = (CUgraphNodeType)hNode->op.kind;
  return CUDA_SUCCESS;
}

/* ---- instantiation ---- */

/* A variable of the exec's recorded queue, or of its nvhcq graph. */
static CUresult var(CUgraphExec x, uint32_t node, const char *what, uint64_t value,
                    nvhcq_var *out) {
  char name[48];
  snprintf(name, sizeof name, "n%u.%s", node, what);
  return nvcu_status(x->q ? nvhcq_queue_var(x->q, name, value, out)
                          : nvhcq_graph_var(x->g, name, value, out),
                     "cuGraphInstantiate");
}

/* A kernel node: its dimensions and every 4- or 8-byte parameter are variables. */
static CUresult add_launch(CUgraphExec x, uint32_t i, const nvhcq_node *deps, uint32_t n,
                           nvhcq_node *out) {
  nvcu_exec_node *en = &x->nodes[i];
  const nvcu_op *op = &en->op;
  struct CUfunc_st *f = op->func;
  nvhcq_arg_var args[64];
  nvhcq_launch_vars v = {.args = args};
  CUresult r = CUDA_SUCCESS;
  const uint32_t *grid = &op->grid.x, *block = &op->block.x;
  for (int d = 0; d < 3 && !r; d++) {
    r = var(x, i, "grid", grid[d], &en->grid[d]);
    if (!r) r = var(x, i, "block", block[d], &en->block[d]);
    v.grid[d] = en->grid[d], v.block[d] = en->block[d];
  }
  en->param_vars = calloc(f->param_count ? f->param_count : 1, sizeof *en->param_vars);
  if (!en->param_vars) return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t p = 0; p < f->param_count && !r; p++) {
    nvcu_param pp = f->params[p];
    en->param_vars[p] = NVHCQ_NO_VAR;
    if ((pp.size != 4 && pp.size != 8) || v.arg_count == 64 || pp.offset + pp.size > op->args_size)
      continue;
    uint64_t value = 0;
    memcpy(&value, op->args + pp.offset, pp.size);
    r = var(x, i, "arg", value, &en->param_vars[p]);
    args[v.arg_count++] = (nvhcq_arg_var){pp.offset, pp.size, en->param_vars[p], 0};
  }
  if (r) return r;
  x->uses[NVCU_COMPUTE] = 1;
  if (x->q) /* in node order: one queue runs them in order, which meets every dependency */
    return nvcu_status(nvhcq_queue_launch_vars(x->q, f->k, op->grid, op->block, op->shared,
                                               op->args, op->args_size, &v),
                       f->name);
  return nvcu_status(nvhcq_graph_add_launch(x->g, f->k, op->grid, op->block, op->shared, op->args,
                                            op->args_size, &v, deps, n, out),
                     f->name);
}

static CUresult add_copy(CUgraphExec x, uint32_t i, const nvhcq_node *deps, uint32_t n,
                         nvhcq_node *out) {
  nvcu_exec_node *en = &x->nodes[i];
  nvcu_op *op = &en->op;
  nvcu_device *d;
  CUresult r = nvcu_device_get(x->device, &d);
  if (!r && op->kind == CU_GRAPH_NODE_TYPE_MEMSET) {
    uint64_t bytes = op->size * op->element_size;
    if (bytes > MEMSET_NODE_MAX_BYTES) return nvcu_unsupported("memset nodes above 64 MiB");
    r = nvcu_status(nvhcq_buffer_create(d->dev, bytes, NVHCQ_MEMORY_HOST, &en->pattern),
                    "memset node");
    if (r) return r;
    uint8_t *p = nvhcq_buffer_host_pointer(en->pattern);
    for (uint64_t b = 0; b < bytes; b += op->element_size)
      memcpy(p + b, &op->value, op->element_size);
    op->src = nvhcq_buffer_gpu_address(en->pattern);
    op->size = bytes;
  }
  if (!r) r = var(x, i, "dst", op->dst, &en->dst);
  if (!r) r = var(x, i, "src", op->src, &en->src);
  if (!r) r = var(x, i, "size", op->size, &en->size);
  if (r) return r;
  x->uses[NVCU_COPY] = 1;
  return nvcu_status(nvhcq_graph_add_copy(x->g, op->dst, op->src, op->size, en->dst, en->src,
                                          en->size, deps, n, out),
                     "memcpy node");
}

/* The nvhcq nodes node i waits for: empty nodes stand for what they depend on. */
static CUresult collect_deps(CUgraph g, const nvhcq_node *ids, uint32_t i, nvhcq_node **deps,
                             uint32_t *n, uint32_t *cap) {
  const struct CUgraphNode_st *node = g->nodes[i];
  for (uint32_t k = 0; k < node->dep_count; k++) {
    uint32_t dep = node->deps[k];
    if (g->nodes[dep]->op.kind == CU_GRAPH_NODE_TYPE_EMPTY) {
      CUresult r = collect_deps(g, ids, dep, deps, n, cap);
      if (r) return r;
      continue;
    }
    if (*n == *cap) {
      *cap = *cap ? 2 * *cap : 8;
      nvhcq_node *grown = realloc(*deps, *cap * sizeof *grown);
      if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
      *deps = grown;
    }
    (*deps)[(*n)++] = ids[dep];
  }
  return CUDA_SUCCESS;
}

/* Graphs of kernels alone (what capturing launches gives) become one recorded compute queue, which
 * replays back to back; graphs with copies become nvhcq graphs across both channels. */
static int kernels_only(CUgraph g) {
  for (uint32_t i = 0; i < g->node_count; i++)
    if (g->nodes[i]->op.kind != CU_GRAPH_NODE_TYPE_KERNEL &&
        g->nodes[i]->op.kind != CU_GRAPH_NODE_TYPE_EMPTY)
      return 0;
  return 1;
}

static CUresult build(CUgraphExec x, CUgraph g) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(x->device, &d);
  if (!r && kernels_only(g))
    r = nvcu_status(nvhcq_queue_create_recorded(d->dev, NVHCQ_QUEUE_COMPUTE, &x->q),
                    "cuGraphInstantiate");
  else if (!r)
    r = nvcu_status(nvhcq_graph_create(d->dev, &x->g), "cuGraphInstantiate");
  nvhcq_node *ids = calloc(g->node_count ? g->node_count : 1, sizeof *ids), *deps = NULL;
  if (!ids) return CUDA_ERROR_OUT_OF_MEMORY;
  uint32_t cap = 0, nodes = 0;
  for (uint32_t i = 0; i < g->node_count && !r; i++) {
    nvcu_exec_node *en = &x->nodes[i];
    en->op = g->nodes[i]->op;
    en->op.args = NULL;
    if (en->op.args_size) {
      en->op.args = malloc(en->op.args_size);
      if (!en->op.args) r = CUDA_ERROR_OUT_OF_MEMORY;
      if (!r) memcpy(en->op.args, g->nodes[i]->op.args, en->op.args_size);
    }
    uint32_t n = 0;
    if (!r) r = collect_deps(g, ids, i, &deps, &n, &cap);
    if (r || en->op.kind == CU_GRAPH_NODE_TYPE_EMPTY) continue;
    r = en->op.kind == CU_GRAPH_NODE_TYPE_KERNEL ? add_launch(x, i, deps, n, &ids[i])
                                                 : add_copy(x, i, deps, n, &ids[i]);
    nodes++;
  }
  free(ids);
  free(deps);
  if (!r && nodes)
    r = nvcu_status(x->q ? nvhcq_queue_finish(x->q) : nvhcq_graph_instantiate(x->g),
                    "cuGraphInstantiate");
  return r;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  if (hGraphExec->q) nvhcq_queue_cpu_wait_idle(hGraphExec->q, 0);
  nvhcq_queue_destroy(hGraphExec->q);
  nvhcq_graph_destroy(hGraphExec->g);
  for (uint32_t i = 0; i < hGraphExec->node_count; i++) {
    free(hGraphExec->nodes[i].op.args);
    free(hGraphExec->nodes[i].param_vars);
    nvhcq_buffer_destroy(hGraphExec->nodes[i].pattern);
  }
  free(hGraphExec->nodes);
  hGraphExec->magic = 0;
  free(hGraphExec);
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  if (!phGraphExec) return CUDA_ERROR_INVALID_VALUE;
  if (graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags) nvcu_log("cuGraphInstantiate: flags 0x%llx ignored", flags);
  CUgraphExec x = calloc(1, sizeof *x);
  if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
  x->nodes = calloc(hGraph->node_count ? hGraph->node_count : 1, sizeof *x->nodes);
  if (!x->nodes) {
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  x->magic = NVCU_EXEC_MAGIC;
  x->device = hGraph->device;
  x->graph = hGraph;
  x->node_count = hGraph->node_count;
  NVCU_LOCK();
  CUresult r = build(x, hGraph);
  NVCU_UNLOCK();
  if (r) {
    cuGraphExecDestroy(x);
    return r;
  }
  *phGraphExec = x;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize) {
  if (phErrorNode) *phErrorNode = NULL;
  if (logBuffer && bufferSize) logBuffer[0] = 0;
  return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

/* ---- launch ---- */

/* Makes engine e's next submission wait for the other engine's latest work. */
static CUresult order_before(nvcu_device *d, int e) {
  if (d->submitted[!e] <= d->seen[e]) return CUDA_SUCCESS;
  nvhcq_queue *q = nvcu_engine_begin(d, e);
  return nvcu_status(nvhcq_queue_submit(q), "cuGraphLaunch");
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_device *d;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = nvcu_device_get(hGraphExec->device, &d);
  if (!r && st->capture) r = nvcu_unsupported("cuGraphLaunch in a captured stream");
  if (!r && hGraphExec->q && hGraphExec->uses[NVCU_COMPUTE]) {
    r = order_before(d, NVCU_COMPUTE);
    if (!r) r = nvcu_status(nvhcq_queue_submit(hGraphExec->q), "cuGraphLaunch");
    if (!r) {
      nvcu_engine_begin(d, NVCU_COMPUTE);
      r = nvcu_engine_end(d, NVCU_COMPUTE, st);
    }
  } else if (!r && hGraphExec->g && hGraphExec->uses[0] + hGraphExec->uses[1]) {
    /* One replay at a time: the previous one must have ended before this one is submitted. */
    r = nvcu_status(nvhcq_graph_cpu_wait(hGraphExec->g, 0), "cuGraphLaunch");
    for (int e = 0; e < 2 && !r; e++)
      if (hGraphExec->uses[e]) r = order_before(d, e);
    if (!r) r = nvcu_status(nvhcq_graph_launch(hGraphExec->g), "cuGraphLaunch");
    /* Each channel the graph used releases its timeline behind the graph's part on it. */
    for (int e = 0; e < 2 && !r; e++)
      if (hGraphExec->uses[e]) {
        nvcu_engine_begin(d, e);
        r = nvcu_engine_end(d, e, st);
      }
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  (void)hStream; /* instantiation already put the graph in GPU memory */
  return exec_check(hGraphExec);
}

/* ---- updates ---- */

static CUresult exec_node(CUgraphExec x, CUgraphNode node, nvcu_exec_node **out) {
  if (exec_check(x)) return CUDA_ERROR_INVALID_HANDLE;
  if (!node || node->magic != NVCU_NODE_MAGIC || node->graph != x->graph ||
      node->index >= x->node_count)
    return CUDA_ERROR_INVALID_VALUE;
  *out = &x->nodes[node->index];
  return CUDA_SUCCESS;
}

static CUresult set(CUgraphExec x, nvhcq_var v, uint64_t value) {
  if (v == NVHCQ_NO_VAR) return nvcu_unsupported("changing a graph node's parameter of this size");
  if (x->q) {
    CUresult r = nvcu_status(nvhcq_queue_cpu_wait_idle(x->q, 0), "graph update");
    return r ? r : nvcu_status(nvhcq_queue_set_var(x->q, v, value), "graph update");
  }
  CUresult r = nvcu_status(nvhcq_graph_cpu_wait(x->g, 0), "graph update");
  if (!r) r = nvcu_status(nvhcq_graph_set_var(x->g, v, value), "graph update");
  return r;
}

static CUresult update_kernel(CUgraphExec x, nvcu_exec_node *en, const nvcu_op *op) {
  if (op->func != en->op.func || op->shared != en->op.shared)
    return nvcu_unsupported("changing a kernel node's function or shared memory size");
  CUresult r = CUDA_SUCCESS;
  const uint32_t *g0 = &en->op.grid.x, *g1 = &op->grid.x, *b0 = &en->op.block.x, *b1 = &op->block.x;
  for (int d = 0; d < 3 && !r; d++) {
    if (g0[d] != g1[d]) r = set(x, en->grid[d], g1[d]);
    if (!r && b0[d] != b1[d]) r = set(x, en->block[d], b1[d]);
  }
  struct CUfunc_st *f = op->func;
  for (uint32_t p = 0; p < f->param_count && !r; p++) {
    nvcu_param pp = f->params[p];
    if (pp.offset + pp.size > op->args_size ||
        !memcmp(en->op.args + pp.offset, op->args + pp.offset, pp.size))
      continue;
    uint64_t value = 0;
    memcpy(&value, op->args + pp.offset, pp.size > 8 ? 8 : pp.size);
    r = set(x, en->param_vars[p], value);
  }
  if (!r) {
    memcpy(en->op.args, op->args, op->args_size);
    en->op.grid = op->grid, en->op.block = op->block;
  }
  return r;
}

static CUresult set_kernel_params(CUgraphExec x, CUgraphNode node,
                                  const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_exec_node *en;
  nvcu_op op = {0};
  CUresult r = exec_node(x, node, &en);
  if (!r && en->op.kind != CU_GRAPH_NODE_TYPE_KERNEL) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = kernel_op(p, kern, &op);
  if (!r) r = update_kernel(x, en, &op);
  NVCU_UNLOCK();
  free(op.args);
  return r;
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  return set_kernel_params(hGraphExec, hNode, (const CUDA_KERNEL_NODE_PARAMS_v1 *)nodeParams,
                           nodeParams ? nodeParams->kern : NULL);
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
  return set_kernel_params(hGraphExec, hNode, nodeParams, NULL);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
  (void)ctx;
  NVCU_LOCK();
  nvcu_exec_node *en;
  nvcu_op op = {0};
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && en->op.kind != CU_GRAPH_NODE_TYPE_MEMCPY) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = memcpy_op(copyParams, &op);
  if (!r && op.dst != en->op.dst) r = set(hGraphExec, en->dst, op.dst);
  if (!r && op.src != en->op.src) r = set(hGraphExec, en->src, op.src);
  if (!r && op.size != en->op.size) r = set(hGraphExec, en->size, op.size);
  if (!r) en->op.dst = op.dst, en->op.src = op.src, en->op.size = op.size;
  NVCU_UNLOCK();
  return r;
}

#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));
NVCU_ALIAS(cuGraphLaunch_ptsz, cuGraphLaunch)
NVCU_ALIAS(cuGraphUpload_ptsz, cuGraphUpload)
