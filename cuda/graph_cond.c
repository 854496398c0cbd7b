/* Conditional graph nodes (IF, IF/ELSE, WHILE and SWITCH): their handles, whose conditions
 * kernels set with cudaGraphSetConditional, the nodes with their body graphs, and their evaluation
 * by the CPU between the GPU parts of a launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Conditions are 4 bytes each, cut from 4 KiB pages of uncached pinned host memory (what nvhcq's
 * signals live in: the GPU writes them, the CPU reads them). Pages stay until the process ends;
 * conditions whose last reference went are reused. */
#define PAGE_BYTES      4096u
#define CONDS_PER_PAGE  (PAGE_BYTES / 4u)
#define MAX_SWITCH_SIZE 4096u /* bodies of one SWITCH node: far more than any program writes */

static nvcu_cond *free_conds[NVCU_MAX_DEVICES];

static CUresult grow(int device) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(device, &d);
  if (r) return r;
  nvcu_cond *c = calloc(CONDS_PER_PAGE, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  nvhcq_buffer *b;
  r = nvcu_status(nvhcq_buffer_create(d->dev, PAGE_BYTES, NVHCQ_MEMORY_HOST_UNCACHED, &b),
                  "cuGraphConditionalHandleCreate");
  if (r) {
    free(c);
    return r;
  }
  volatile uint32_t *host = nvhcq_buffer_host_pointer(b);
  for (uint32_t i = 0; i < CONDS_PER_PAGE; i++) {
    c[i] = (nvcu_cond){.device = device,
                       .host = host + i,
                       .gpu = nvhcq_buffer_gpu_address(b) + 4ull * i,
                       .next_free = free_conds[device]};
    free_conds[device] = &c[i];
  }
  return CUDA_SUCCESS;
}

/* Graphs go without the library's lock held (cuGraphDestroy): the counts take it themselves. */
void nvcu_cond_ref(nvcu_cond *c) {
  if (!c) return;
  NVCU_LOCK();
  c->refs++;
  NVCU_UNLOCK();
}

void nvcu_cond_unref(nvcu_cond *c) {
  if (!c) return;
  NVCU_LOCK();
  if (!--c->refs) {
    c->next_free = free_conds[c->device];
    free_conds[c->device] = c;
  }
  NVCU_UNLOCK();
}

static CUresult graph_add_cond(struct CUgraph_st *g, nvcu_cond *c) {
  nvcu_cond **v = realloc(g->conds, (g->cond_count + 1) * sizeof *v);
  if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
  g->conds = v;
  g->conds[g->cond_count++] = c;
  nvcu_cond_ref(c);
  return CUDA_SUCCESS;
}

/* The handle's value is undefined until set unless CU_GRAPH_COND_ASSIGN_DEFAULT asks for the
 * default at each launch; nvhcq starts it at the default either way. */
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph,
                                        CUcontext ctx, unsigned int defaultLaunchValue,
                                        unsigned int flags) {
  if (!pHandle_out || (flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT)) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (ctx && (ctx->magic != NVCU_CTX_MAGIC || ctx->device != hGraph->device))
    return CUDA_ERROR_INVALID_CONTEXT;
  NVCU_LOCK();
  int dev = hGraph->device;
  CUresult r = free_conds[dev] ? CUDA_SUCCESS : grow(dev);
  nvcu_cond *c = r ? NULL : free_conds[dev];
  if (c) {
    free_conds[dev] = c->next_free;
    c->next_free = NULL;
    c->refs = 0;
    c->default_value = defaultLaunchValue;
    c->flags = flags;
    *c->host = defaultLaunchValue;
    r = graph_add_cond(hGraph, c);
    if (r) c->next_free = free_conds[dev], free_conds[dev] = c;
  }
  if (!r) *pHandle_out = c->gpu;
  NVCU_UNLOCK();
  return r;
}

/* The handle's condition, made for g or for a graph g lies in (as a child or a body graph). */
static nvcu_cond *find(struct CUgraph_st *g, CUgraphConditionalHandle h) {
  for (; g; g = g->owner ? g->owner->graph : NULL)
    for (uint32_t i = 0; i < g->cond_count; i++)
      if (g->conds[i]->gpu == h) return g->conds[i];
  return NULL;
}

static struct CUgraph_st *body_new(int device, struct CUgraphNode_st *owner) {
  struct CUgraph_st *b = calloc(1, sizeof *b);
  if (b) *b = (struct CUgraph_st){.magic = NVCU_GRAPH_MAGIC, .device = device, .owner = owner};
  return b;
}

static CUresult params_check(CUgraph g, const CUDA_CONDITIONAL_NODE_PARAMS *p) {
  if (p->ctx && (p->ctx->magic != NVCU_CTX_MAGIC || p->ctx->device != g->device))
    return CUDA_ERROR_INVALID_CONTEXT;
  int fits = (p->type == CU_GRAPH_COND_TYPE_IF && (p->size == 1 || p->size == 2)) ||
             (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size == 1) ||
             (p->type == CU_GRAPH_COND_TYPE_SWITCH && p->size >= 1 && p->size <= MAX_SWITCH_SIZE);
  if (!fits) {
    nvcu_log("cuGraphAddNode: a conditional node of type %d with %u body graphs (IF takes 1 or 2, "
             "WHILE 1, SWITCH 1 to %u)",
             (int)p->type, p->size, MAX_SWITCH_SIZE);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_cond_node_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                            CUDA_CONDITIONAL_NODE_PARAMS *p) {
  CUresult r = params_check(g, p);
  if (r) return r;
  NVCU_LOCK();
  nvcu_cond *c = find(g, p->handle);
  if (!c) {
    nvcu_log("cuGraphAddNode: conditional handle 0x%llx was not made for graph %p or a graph it "
             "lies in (cuGraphConditionalHandleCreate)",
             (unsigned long long)p->handle, (void *)g);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  struct CUgraph_st **bodies = r ? NULL : calloc(p->size, sizeof *bodies);
  if (!r && !bodies) r = CUDA_ERROR_OUT_OF_MEMORY;
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_CONDITIONAL, .cond = c, .cond_type = (int)p->type};
  if (!r) r = nvcu_graph_append(g, &op, deps, n, out);
  if (!r) {
    struct CUgraphNode_st *node = *out;
    node->bodies = bodies;
    nvcu_cond_ref(c);
    for (uint32_t i = 0; i < p->size && !r; i++) {
      if (!(bodies[i] = body_new(g->device, node))) r = CUDA_ERROR_OUT_OF_MEMORY;
      node->body_count += !r;
    }
    if (r) cuGraphDestroyNode(node);
  } else {
    free(bodies);
  }
  if (!r) p->phGraph_out = (*out)->bodies;
  NVCU_UNLOCK();
  return r;
}

/* A conditional node holds its reference once it has its bodies array (nvcu_cond_node_free). */
CUresult nvcu_cond_node_copy(struct CUgraphNode_st *dst, const struct CUgraphNode_st *src) {
  if (src->op.kind != CU_GRAPH_NODE_TYPE_CONDITIONAL) return CUDA_SUCCESS;
  if (!(dst->bodies = calloc(src->body_count, sizeof *dst->bodies)))
    return CUDA_ERROR_OUT_OF_MEMORY;
  nvcu_cond_ref(src->op.cond);
  for (uint32_t i = 0; i < src->body_count; i++) {
    if (!(dst->bodies[i] = nvcu_graph_copy(src->bodies[i]))) return CUDA_ERROR_OUT_OF_MEMORY;
    dst->bodies[i]->owner = dst;
    dst->body_count++;
  }
  return CUDA_SUCCESS;
}

void nvcu_cond_node_free(struct CUgraphNode_st *n) {
  if (n->op.kind != CU_GRAPH_NODE_TYPE_CONDITIONAL || !n->bodies) return;
  for (uint32_t i = 0; i < n->body_count; i++) nvcu_graph_free(n->bodies[i]);
  free(n->bodies);
  n->bodies = NULL, n->body_count = 0;
  nvcu_cond_unref(n->op.cond);
}

CUresult nvcu_cond_graph_copy(struct CUgraph_st *c, const struct CUgraph_st *g) {
  for (uint32_t i = 0; i < g->cond_count; i++) {
    CUresult r = graph_add_cond(c, g->conds[i]);
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

void nvcu_cond_graph_free(struct CUgraph_st *g) {
  for (uint32_t i = 0; i < g->cond_count; i++) nvcu_cond_unref(g->conds[i]);
  free(g->conds);
  g->conds = NULL, g->cond_count = 0;
}

static CUresult collect(const struct CUgraph_st *g, nvcu_cond ***out, uint32_t *count) {
  for (uint32_t i = 0; i < g->cond_count; i++) {
    if (!(g->conds[i]->flags & CU_GRAPH_COND_ASSIGN_DEFAULT)) continue;
    nvcu_cond **v = realloc(*out, (*count + 1) * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    *out = v;
    v[(*count)++] = g->conds[i];
    nvcu_cond_ref(g->conds[i]);
  }
  for (uint32_t i = 0; i < g->node_count; i++) {
    CUresult r = g->nodes[i]->child ? collect(g->nodes[i]->child, out, count) : CUDA_SUCCESS;
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_cond_defaults(const struct CUgraph_st *g, nvcu_cond ***out, uint32_t *count) {
  *out = NULL, *count = 0;
  CUresult r = collect(g, out, count);
  if (r) nvcu_conds_free(*out, *count), *out = NULL, *count = 0;
  return r;
}

void nvcu_conds_free(nvcu_cond **v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) nvcu_cond_unref(v[i]);
  free(v);
}

/* Work submitted earlier may still set these conditions (an earlier launch of the same graph):
 * the GPU writes the defaults in the device's order, after that work and before this launch's,
 * so the CPU does not wait here. */
CUresult nvcu_cond_begin(nvcu_device *d, const struct CUgraphExec_st *x) {
  if (!x->default_count) return CUDA_SUCCESS;
  nvhcq_queue *q = nvcu_engine_begin(d, NVCU_COMPUTE);
  nvhcq_status s = NVHCQ_SUCCESS;
  for (uint32_t i = 0; i < x->default_count && !s; i++)
    s = nvhcq_queue_write_value(q, x->defaults[i]->gpu, x->defaults[i]->default_value, 0);
  if (s) return nvcu_status(s, "cuGraphLaunch");
  return nvcu_engine_end(d, NVCU_COMPUTE, NULL);
}
