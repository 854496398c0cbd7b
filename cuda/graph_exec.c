/* Executable graphs: a graph (child graphs inlined) instantiated as steps, each one nvhcq
 * recorded queue or graph whose launch values and arguments are variables, so that updates patch
 * them in place (what variables cannot carry, such as a node disabled, records the steps again),
 * with the CPU's nodes (host functions, event records, batch memory operations, conditional
 * nodes with their instantiated bodies) between steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MEMSET_NODE_MAX_BYTES (64u << 20) /* a memset node's pattern is kept in pinned memory */

static CUresult exec_check(CUgraphExec e) {
  return e && e->magic == NVCU_EXEC_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* An executable graph whose rerecording failed has steps half made: only destroying it is left. */
static CUresult exec_usable(CUgraphExec x) {
  if (exec_check(x)) return CUDA_ERROR_INVALID_HANDLE;
  if (!x->broken) return CUDA_SUCCESS;
  nvcu_log("executable graph %p: recording it again after a change failed; destroy it", (void *)x);
  return CUDA_ERROR_INVALID_VALUE;
}

/* Nodes the GPU runs; the CPU's; and those that do nothing (empty, child graph boundaries, waits
 * on this process's events: every operation on the device already waits for all work submitted
 * before it). A wait on an interprocess event is the CPU's: it submits a wait on the GPU for
 * another process's record between the graph's GPU parts. An exec update can give such a node
 * an interprocess event only if it had one when the graph was instantiated (set_event). So are a
 * batch memory operation node (its waits and writes submitted in the graph's order) and a
 * conditional node (the CPU evaluates it and launches the body it selects). */
static int gpu_work(int kind) {
  return kind == CU_GRAPH_NODE_TYPE_KERNEL || kind == CU_GRAPH_NODE_TYPE_MEMCPY ||
         kind == CU_GRAPH_NODE_TYPE_MEMSET;
}

static int cpu_work(const nvcu_op *op) {
  return op->kind == CU_GRAPH_NODE_TYPE_HOST || op->kind == CU_GRAPH_NODE_TYPE_EVENT_RECORD ||
         op->kind == CU_GRAPH_NODE_TYPE_CONDITIONAL ||
         op->kind == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP ||
         (op->kind == CU_GRAPH_NODE_TYPE_WAIT_EVENT && op->event && op->event->ipc);
}

/* ---- flattening ---- */

typedef struct flat {
  nvcu_exec_node *v;
  uint32_t n, cap;
} flat;

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static CUresult flat_push(flat *f, const nvcu_op *op, struct CUgraphNode_st *node, uint32_t id,
                          const uint32_t *deps, uint32_t n, uint32_t *out) {
  if (f->n == f->cap) {
    uint32_t cap = f->cap ? 2 * f->cap : 16;
    nvcu_exec_node *v = realloc(f->v, cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    f->v = v, f->cap = cap;
  }
  nvcu_exec_node *en = &f->v[f->n];
  *en = (nvcu_exec_node){.op = *op, .node = node, .id = id, .dep_count = n, .step = NVCU_NO_STEP};
  en->op.args = op->args_size ? malloc(op->args_size) : NULL;
  en->deps = malloc((n ? n : 1) * sizeof *en->deps);
  if (!en->deps || (op->args_size && !en->op.args)) {
    free(en->deps), free(en->op.args);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (op->args_size) memcpy(en->op.args, op->args, op->args_size);
  if (n) memcpy(en->deps, deps, n * sizeof *deps);
  if (n > 1) qsort(en->deps, n, sizeof *deps, cmp_u32);
  nvcu_cond_ref(en->op.cond);
  *out = f->n++;
  return CUDA_SUCCESS;
}

static void bodies_free(nvcu_exec_node *en) {
  for (uint32_t b = 0; b < en->body_count; b++) cuGraphExecDestroy(en->bodies[b]);
  free(en->bodies);
  en->bodies = NULL, en->body_count = 0;
}

static void flat_free(nvcu_exec_node *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    bodies_free(&v[i]);
    nvcu_cond_unref(v[i].op.cond);
    free(v[i].op.args);
    free(v[i].param_vars);
    free(v[i].deps);
    nvhcq_buffer_destroy(v[i].pattern);
  }
  free(v);
}

/* g's node indices in an order where each follows its dependencies (Kahn's, from node order), or
 * CUDA_ERROR_INVALID_VALUE where the edges make a cycle. */
static CUresult topo_order(const struct CUgraph_st *g, uint32_t *order) {
  uint32_t n = g->node_count, *indeg = calloc(n + 1, sizeof *indeg);
  uint32_t *start = calloc(n + 2, sizeof *start), *adj = NULL, edges = 0;
  for (uint32_t i = 0; i < n; i++) edges += g->nodes[i]->dep_count;
  adj = malloc((edges + 1) * sizeof *adj);
  if (!indeg || !start || !adj) {
    free(indeg), free(start), free(adj);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (uint32_t i = 0; i < n; i++) { /* dependents of each node, as a compressed list */
    indeg[i] = g->nodes[i]->dep_count;
    for (uint32_t k = 0; k < indeg[i]; k++) start[g->nodes[i]->deps[k]->index + 2]++;
  }
  for (uint32_t i = 0; i < n; i++) start[i + 2] += start[i + 1];
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < g->nodes[i]->dep_count; k++)
      adj[start[g->nodes[i]->deps[k]->index + 1]++] = i;
  uint32_t head = 0, tail = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!indeg[i]) order[tail++] = i;
  while (head < tail) {
    uint32_t i = order[head++];
    for (uint32_t k = start[i]; k < start[i + 1]; k++)
      if (!--indeg[adj[k]]) order[tail++] = adj[k];
  }
  free(indeg), free(start), free(adj);
  if (tail < n) nvcu_log("cuGraphInstantiate: graph %p has a cycle", (void *)g);
  return tail < n ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult flatten(const struct CUgraph_st *g, flat *f, uint32_t entry, int top,
                        uint32_t *sinks, uint32_t *sink_count);
static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags,
                            CUgraphInstantiateResult *result);

/* A conditional node's body graphs, each instantiated on its own: the CPU launches them (or not)
 * when it evaluates the node. */
static CUresult flatten_conditional(struct CUgraphNode_st *node, flat *f, const uint32_t *deps,
                                    uint32_t n, uint32_t id, uint32_t *out) {
  CUresult r = flat_push(f, &node->op, node, id, deps, n, out);
  nvcu_exec_node *en = r ? NULL : &f->v[*out];
  if (en && !(en->bodies = calloc(node->body_count, sizeof *en->bodies)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  CUgraphInstantiateResult result;
  for (uint32_t b = 0; b < node->body_count && !r; b++) {
    if (nvcu_graph_has_mem(node->bodies[b])) {
      nvcu_log("cuGraphInstantiate: a conditional node's body graph has allocation or free nodes, "
               "which CUDA does not allow there");
      r = CUDA_ERROR_INVALID_VALUE;
    }
    if (!r) r = instantiate(&en->bodies[b], node->bodies[b], 0, &result);
    if (!r) en->body_count++;
  }
  return r;
}

/* A child graph node: an entry node its roots wait for, its nodes, and an exit node (of kind
 * GRAPH, standing for the child node) that waits for its sinks. */
static CUresult flatten_child(struct CUgraphNode_st *node, flat *f, const uint32_t *deps,
                              uint32_t n, uint32_t id, uint32_t *out) {
  nvcu_op empty = {.kind = CU_GRAPH_NODE_TYPE_EMPTY}, exit = {.kind = CU_GRAPH_NODE_TYPE_GRAPH};
  uint32_t entry, count = 0;
  uint32_t *sinks = malloc((node->child->node_count + 1) * sizeof *sinks);
  CUresult r =
      sinks ? flat_push(f, &empty, node, NVCU_NESTED, deps, n, &entry) : CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = flatten(node->child, f, entry, 0, sinks, &count);
  if (!r && !count) sinks[count++] = entry;
  if (!r) r = flat_push(f, &exit, node, id, sinks, count, out);
  free(sinks);
  return r;
}

/* Appends g's nodes to f in dependency order; roots wait for `entry` (UINT32_MAX: none);
 * `sinks` gets the flat indices of the nodes nothing in g waits for. */
static CUresult flatten(const struct CUgraph_st *g, flat *f, uint32_t entry, int top,
                        uint32_t *sinks, uint32_t *sink_count) {
  uint32_t n = g->node_count, *order = malloc((n + 1) * sizeof *order);
  uint32_t *map = malloc((n + 1) * sizeof *map), *deps = NULL, cap = 0;
  char *needed = calloc(n + 1, 1);
  CUresult r = order && map && needed ? topo_order(g, order) : CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t k = 0; k < n && !r; k++) {
    struct CUgraphNode_st *node = g->nodes[order[k]];
    uint32_t nd = node->dep_count ? node->dep_count : entry != UINT32_MAX;
    if (nd > cap) {
      free(deps);
      cap = 2 * nd;
      if (!(deps = malloc(cap * sizeof *deps))) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t d = 0; d < node->dep_count && !r; d++) {
      deps[d] = map[node->deps[d]->index];
      needed[node->deps[d]->index] = 1;
    }
    if (!r && !node->dep_count && nd) deps[0] = entry;
    uint32_t id = top ? node->id : NVCU_NESTED;
    if (!r && node->child)
      r = flatten_child(node, f, deps, nd, id, &map[order[k]]);
    else if (!r && node->op.kind == CU_GRAPH_NODE_TYPE_CONDITIONAL)
      r = flatten_conditional(node, f, deps, nd, id, &map[order[k]]);
    else if (!r)
      r = flat_push(f, &node->op, node, id, deps, nd, &map[order[k]]);
  }
  *sink_count = 0;
  for (uint32_t i = 0; i < n && !r; i++)
    if (!needed[i] && sinks) sinks[(*sink_count)++] = map[i];
  free(order), free(map), free(deps), free(needed);
  return r;
}

/* ---- steps ---- */

static CUresult step_new(CUgraphExec x, uint32_t cpu_node, uint32_t *out) {
  nvcu_step *s = realloc(x->steps, (x->step_count + 1) * sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  x->steps = s;
  s[x->step_count] = (nvcu_step){.cpu_node = cpu_node};
  *out = x->step_count++;
  return CUDA_SUCCESS;
}

typedef struct ready {
  uint32_t *gpu, *cpu; /* FIFOs of nodes whose dependencies are placed */
  uint32_t gh, gt, ch, ct;
} ready;

static void release(CUgraphExec x, const uint32_t *start, const uint32_t *adj, uint32_t *indeg,
                    ready *q, uint32_t i) {
  for (uint32_t k = start[i]; k < start[i + 1]; k++) {
    uint32_t j = adj[k];
    if (--indeg[j]) continue;
    if (cpu_work(&x->nodes[j].op))
      q->cpu[q->ct++] = j;
    else
      q->gpu[q->gt++] = j;
  }
}

/* Places nodes into steps, GPU nodes first while any is ready: without CPU nodes the graph is one
 * step; with them, each step of GPU work holds all that can run before the next CPU node. */
static CUresult place(CUgraphExec x, uint32_t *order, const uint32_t *start, const uint32_t *adj,
                      uint32_t *indeg, ready *q) {
  uint32_t placed = 0, cur = NVCU_NO_STEP;
  CUresult r = CUDA_SUCCESS;
  for (;;) {
    while (q->gh < q->gt && !r) {
      uint32_t i = q->gpu[q->gh++];
      if (cur == NVCU_NO_STEP) r = step_new(x, NVCU_NO_STEP, &cur);
      x->nodes[i].step = cur;
      order[placed++] = i;
      release(x, start, adj, indeg, q, i);
    }
    cur = NVCU_NO_STEP;
    if (r || q->ch == q->ct) break;
    uint32_t end = q->ct; /* every CPU node ready now, then what they release */
    for (uint32_t k = q->ch; k < end && !r; k++) {
      r = step_new(x, q->cpu[k], &x->nodes[q->cpu[k]].step);
      order[placed++] = q->cpu[k];
    }
    for (uint32_t k = q->ch; k < end; k++) release(x, start, adj, indeg, q, q->cpu[k]);
    q->ch = end;
  }
  return r;
}

static CUresult plan(CUgraphExec x, uint32_t *order) {
  uint32_t n = x->node_count, edges = 0;
  for (uint32_t i = 0; i < n; i++) edges += x->nodes[i].dep_count;
  uint32_t *indeg = calloc(n + 1, sizeof *indeg), *start = calloc(n + 2, sizeof *start);
  uint32_t *adj = malloc((edges + 1) * sizeof *adj);
  ready q = {.gpu = malloc((n + 1) * sizeof(uint32_t)), .cpu = malloc((n + 1) * sizeof(uint32_t))};
  CUresult r = indeg && start && adj && q.gpu && q.cpu ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < n && !r; i++) {
    indeg[i] = x->nodes[i].dep_count;
    for (uint32_t k = 0; k < indeg[i]; k++) start[x->nodes[i].deps[k] + 2]++;
  }
  for (uint32_t i = 0; i < n && !r; i++) start[i + 2] += start[i + 1];
  for (uint32_t i = 0; i < n && !r; i++)
    for (uint32_t k = 0; k < x->nodes[i].dep_count; k++) adj[start[x->nodes[i].deps[k] + 1]++] = i;
  for (uint32_t i = 0; i < n && !r; i++) {
    if (indeg[i]) continue;
    if (cpu_work(&x->nodes[i].op))
      q.cpu[q.ct++] = i;
    else
      q.gpu[q.gt++] = i;
  }
  if (!r) r = place(x, order, start, adj, indeg, &q);
  free(indeg), free(start), free(adj), free(q.gpu), free(q.cpu);
  return r;
}

/* ---- building ---- */

/* A variable of node i's step: of its recorded queue, or of its nvhcq graph. */
static CUresult var(CUgraphExec x, uint32_t i, const char *what, uint64_t value, nvhcq_var *out) {
  nvcu_step *s = &x->steps[x->nodes[i].step];
  char name[48];
  snprintf(name, sizeof name, "n%u.%s", i, what);
  return nvcu_status(s->q ? nvhcq_queue_var(s->q, name, value, out)
                          : nvhcq_graph_var(s->g, name, value, out),
                     "cuGraphInstantiate");
}

static int has_launch_config(const nvcu_op *op) {
  return nvcu_op_launch_config(op, NULL);
}

/* A kernel node with a cluster or cooperative attribute, or a green context's SMs, recorded as
 * cuLaunchKernelEx launches it (nvhcq takes no variables there): its changes are made by recording
 * the steps again. */
static CUresult add_launch_ex(CUgraphExec x, nvcu_exec_node *en, const nvhcq_node *deps, uint32_t n,
                              nvhcq_node *out) {
  nvcu_step *s = &x->steps[en->step];
  const nvcu_op *op = &en->op;
  for (int d = 0; d < 3; d++) en->grid[d] = en->block[d] = NVHCQ_NO_VAR;
  en->fixed = 1;
  s->uses[NVCU_COMPUTE] = 1;
  nvhcq_launch_config c;
  (void)nvcu_op_launch_config(op, &c);
  nvhcq_status st = s->q ? nvhcq_queue_launch_ex(s->q, op->func->k, &c, op->args, op->args_size)
                         : nvhcq_graph_add_launch_ex(s->g, op->func->k, &c, op->args, op->args_size,
                                                     deps, n, out);
  if (st == NVHCQ_ERROR_LAUNCH_CHECK && op->launch_flags) {
    nvcu_log("cuGraphInstantiate: cooperative kernel node of %s: its grid does not fit on the GPU "
             "at once",
             op->func->name);
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  return nvcu_status(st, op->func->name);
}

/* A kernel node: its dimensions and every 4- or 8-byte parameter are variables. */
static CUresult add_launch(CUgraphExec x, uint32_t i, const nvhcq_node *deps, uint32_t n,
                           nvhcq_node *out) {
  nvcu_exec_node *en = &x->nodes[i];
  nvcu_step *s = &x->steps[en->step];
  const nvcu_op *op = &en->op;
  struct CUfunc_st *f = op->func;
  if (has_launch_config(op)) return add_launch_ex(x, en, deps, n, out);
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
  s->uses[NVCU_COMPUTE] = 1;
  if (s->q) /* in step order: one queue runs them in order, which meets every dependency */
    return nvcu_status(nvhcq_queue_launch_vars(s->q, f->k, op->grid, op->block, op->shared,
                                               op->args, op->args_size, &v),
                       f->name);
  return nvcu_status(nvhcq_graph_add_launch(s->g, f->k, op->grid, op->block, op->shared, op->args,
                                            op->args_size, &v, deps, n, out),
                     f->name);
}

static void fill_pattern(nvcu_exec_node *en, uint64_t bytes) {
  uint8_t *p = nvhcq_buffer_host_pointer(en->pattern);
  for (uint64_t b = 0; b < bytes; b += en->op.element_size)
    memcpy(p + b, &en->op.value, en->op.element_size);
}

static CUresult memset_pattern(CUgraphExec x, nvcu_exec_node *en) {
  nvcu_device *d;
  uint64_t bytes = en->op.size * en->op.element_size;
  if (bytes > MEMSET_NODE_MAX_BYTES) return nvcu_unsupported("memset nodes above 64 MiB");
  CUresult r = nvcu_device_get(x->device, &d);
  if (!r)
    r = nvcu_status(nvhcq_buffer_create(d->dev, bytes, NVHCQ_MEMORY_HOST, &en->pattern),
                    "memset node");
  if (r) return r;
  en->pattern_size = bytes;
  fill_pattern(en, bytes);
  return CUDA_SUCCESS;
}

/* A memcpy or memset node (a copy from its pattern): its addresses and size are variables. */
static CUresult add_copy(CUgraphExec x, uint32_t i, const nvhcq_node *deps, uint32_t n,
                         nvhcq_node *out) {
  nvcu_exec_node *en = &x->nodes[i];
  uint64_t src = en->op.src, size = en->op.size;
  CUresult r = CUDA_SUCCESS;
  if (en->op.kind == CU_GRAPH_NODE_TYPE_MEMSET) {
    r = memset_pattern(x, en);
    if (!r) src = nvhcq_buffer_gpu_address(en->pattern), size = en->pattern_size;
  }
  if (!r) r = var(x, i, "dst", en->op.dst, &en->dst);
  if (!r) r = var(x, i, "src", src, &en->src);
  if (!r) r = var(x, i, "size", size, &en->size);
  if (r) return r;
  nvcu_step *s = &x->steps[en->step];
  s->uses[NVCU_COPY] = 1;
  return nvcu_status(
      nvhcq_graph_add_copy(s->g, en->op.dst, src, size, en->dst, en->src, en->size, deps, n, out),
      "memcpy node");
}

/* The nvhcq nodes of node i's step that it waits for: nodes that do nothing stand for what they
 * depend on; nodes of earlier steps are complete before the step starts. */
static CUresult collect_deps(CUgraphExec x, const nvhcq_node *ids, uint32_t i, uint32_t step,
                             nvhcq_node **deps, uint32_t *n, uint32_t *cap) {
  const nvcu_exec_node *en = &x->nodes[i];
  for (uint32_t k = 0; k < en->dep_count; k++) {
    uint32_t dep = en->deps[k];
    if (x->nodes[dep].step != step) continue;
    if (!gpu_work(x->nodes[dep].op.kind) || x->nodes[dep].disabled) {
      CUresult r = collect_deps(x, ids, dep, step, deps, n, cap);
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

/* Steps of kernels alone (what capturing launches gives) become one recorded compute queue, which
 * replays back to back; steps with copies become nvhcq graphs across both channels. */
static CUresult step_create(CUgraphExec x, nvcu_device *d, uint32_t step) {
  int kernels = 1, work = 0;
  for (uint32_t i = 0; i < x->node_count; i++) {
    if (x->nodes[i].step != step || !gpu_work(x->nodes[i].op.kind) || x->nodes[i].disabled)
      continue;
    work = 1;
    if (x->nodes[i].op.kind != CU_GRAPH_NODE_TYPE_KERNEL) kernels = 0;
  }
  nvcu_step *s = &x->steps[step];
  if (!work) return CUDA_SUCCESS;
  if (kernels)
    return nvcu_status(nvhcq_queue_create_recorded(d->dev, NVHCQ_QUEUE_COMPUTE, &s->q),
                       "cuGraphInstantiate");
  return nvcu_status(nvhcq_graph_create(d->dev, &s->g), "cuGraphInstantiate");
}

static CUresult build(CUgraphExec x, const uint32_t *order) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(x->device, &d);
  for (uint32_t s = 0; s < x->step_count && !r; s++)
    if (x->steps[s].cpu_node == NVCU_NO_STEP) r = step_create(x, d, s);
  nvhcq_node *ids = calloc(x->node_count ? x->node_count : 1, sizeof *ids), *deps = NULL;
  if (!ids) return CUDA_ERROR_OUT_OF_MEMORY;
  uint32_t cap = 0;
  for (uint32_t k = 0; k < x->node_count && !r; k++) {
    uint32_t i = order[k], n = 0;
    nvcu_exec_node *en = &x->nodes[i];
    if (!gpu_work(en->op.kind) || en->disabled) continue; /* a disabled node is an empty one */
    r = collect_deps(x, ids, i, en->step, &deps, &n, &cap);
    if (r) break;
    r = en->op.kind == CU_GRAPH_NODE_TYPE_KERNEL ? add_launch(x, i, deps, n, &ids[i])
                                                 : add_copy(x, i, deps, n, &ids[i]);
  }
  free(ids);
  free(deps);
  for (uint32_t s = 0; s < x->step_count && !r; s++) {
    nvcu_step *st = &x->steps[s];
    if (st->q) r = nvcu_status(nvhcq_queue_finish(st->q), "cuGraphInstantiate");
    if (st->g) r = nvcu_status(nvhcq_graph_instantiate(st->g), "cuGraphInstantiate");
  }
  return r;
}

/* Every step's replays have completed, then its queue or graph goes. */
static void steps_destroy(CUgraphExec x) {
  for (uint32_t s = 0; s < x->step_count; s++) {
    nvcu_step *st = &x->steps[s];
    if (st->q) nvhcq_queue_cpu_wait_idle(st->q, 0);
    if (st->g) nvhcq_graph_cpu_wait(st->g, 0);
    nvhcq_queue_destroy(st->q);
    nvhcq_graph_destroy(st->g);
  }
  free(x->steps);
  x->steps = NULL;
  x->step_count = 0;
}

/* The user object references go once no launch can still run, outside the lock (destructors). */
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  steps_destroy(hGraphExec);
  flat_free(hGraphExec->nodes, hGraphExec->node_count);
  free(hGraphExec->top);
  nvcu_conds_free(hGraphExec->defaults, hGraphExec->default_count);
  hGraphExec->magic = 0;
  nvcu_graph_mem_unref(hGraphExec->mem, 1);
  NVCU_UNLOCK();
  nvcu_urefs_release(&hGraphExec->urefs);
  free(hGraphExec);
  return CUDA_SUCCESS;
}

/* The graph's own nodes by id, for the calls that name them. */
static CUresult index_top(CUgraphExec x) {
  x->top = malloc((x->node_count + 1) * sizeof *x->top);
  if (!x->top) return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < x->node_count; i++)
    if (x->nodes[i].id != NVCU_NESTED) x->top[x->top_count++] = (uint64_t)x->nodes[i].id << 32 | i;
  qsort(x->top, x->top_count, sizeof *x->top, cmp_u64);
  return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags,
                            CUgraphInstantiateResult *result) {
  *result = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) {
    *result = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
    return nvcu_unsupported("graphs launched from the device");
  }
  CUgraphExec x = calloc(1, sizeof *x);
  if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
  *x = (struct CUgraphExec_st){
      .magic = NVCU_EXEC_MAGIC, .device = g->device, .flags = flags, .graph = g};
  flat f = {0};
  uint32_t *order = NULL;
  NVCU_LOCK();
  CUresult r = nvcu_graph_mem_instantiated(g, x);
  if (!r) r = flatten(g, &f, UINT32_MAX, 1, NULL, &(uint32_t){0});
  if (r == CUDA_ERROR_INVALID_VALUE) *result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
  x->nodes = f.v, x->node_count = f.n;
  if (!r) r = index_top(x);
  if (!r) r = nvcu_urefs_copy(&x->urefs, &g->urefs);
  if (!r) r = nvcu_cond_defaults(g, &x->defaults, &x->default_count);
  if (!r)
    r = (order = malloc((f.n + 1) * sizeof *order)) ? plan(x, order) : CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = build(x, order);
  NVCU_UNLOCK();
  free(order);
  if (r) {
    cuGraphExecDestroy(x);
    return r;
  }
  *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  *out = x;
  return CUDA_SUCCESS;
}

#define INSTANTIATE_FLAGS                                                                          \
  (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |   \
   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/* A graph moved into a child graph node is instantiated with the graph it lies in, not on its
 * own (as CUDA documents). */
static CUresult instantiable(CUgraph g) {
  if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
  if (!g->moved) return CUDA_SUCCESS;
  nvcu_log("cuGraphInstantiate: graph %p was moved into a node of graph %p; instantiate that graph",
           (void *)g, (void *)g->owner->graph);
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  if (!phGraphExec || (flags & ~(unsigned long long)INSTANTIATE_FLAGS))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = instantiable(hGraph);
  if (r) return r;
  CUgraphInstantiateResult result;
  return instantiate(phGraphExec, hGraph, flags, &result);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize) {
  if (phErrorNode) *phErrorNode = NULL;
  if (logBuffer && bufferSize) logBuffer[0] = 0;
  return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

/* The upload flag asks for what instantiation already did: the graph is in GPU memory. */
CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
  CUDA_GRAPH_INSTANTIATE_PARAMS *p = instantiateParams;
  if (!phGraphExec || !p) return CUDA_ERROR_INVALID_VALUE;
  p->hErrNode_out = NULL;
  p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (p->flags & ~(cuuint64_t)(INSTANTIATE_FLAGS | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = instantiable(hGraph);
  if (r) return r;
  if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
    struct CUstream_st *st;
    r = nvcu_stream_get(p->hUploadStream, &st);
    if (r) return r;
  }
  return instantiate(phGraphExec, hGraph, p->flags, &p->result_out);
}

CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags) {
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = hGraphExec->flags;
  return CUDA_SUCCESS;
}

/* ---- launch ---- */

/* Makes engine e's next submission wait for the other engine's latest work. */
static CUresult order_before(nvcu_device *d, int e) {
  if (d->submitted[!e] <= d->seen[e]) return CUDA_SUCCESS;
  nvhcq_queue *q = nvcu_engine_begin(d, e);
  CUresult r = nvcu_status(nvhcq_queue_submit(q), "cuGraphLaunch");
  if (!r) nvcu_engine_waited(d, e);
  return r;
}

static CUresult launch_gpu(nvcu_device *d, nvcu_step *s, struct CUstream_st *st) {
  CUresult r = CUDA_SUCCESS;
  if (s->q && s->uses[NVCU_COMPUTE]) {
    r = order_before(d, NVCU_COMPUTE);
    if (!r) r = nvcu_status(nvhcq_queue_submit(s->q), "cuGraphLaunch");
    if (!r) {
      nvcu_engine_begin(d, NVCU_COMPUTE);
      r = nvcu_engine_end(d, NVCU_COMPUTE, st);
    }
  } else if (s->g && s->uses[0] + s->uses[1]) {
    /* One replay at a time: the previous one must have ended before this one is submitted. */
    r = nvcu_status(nvhcq_graph_cpu_wait(s->g, 0), "cuGraphLaunch");
    for (int e = 0; e < 2 && !r; e++)
      if (s->uses[e]) r = order_before(d, e);
    if (!r) r = nvcu_status(nvhcq_graph_launch(s->g), "cuGraphLaunch");
    /* Each channel the graph used releases its timeline behind the graph's part on it. */
    for (int e = 0; e < 2 && !r; e++)
      if (s->uses[e]) {
        nvcu_engine_begin(d, e);
        r = nvcu_engine_end(d, e, st);
      }
  }
  return r;
}

static CUresult run(CUgraphExec x, nvcu_device *d, struct CUstream_st *st);

/* The body graph a conditional node runs for the condition's value, or NULL. */
static CUgraphExec body_for(const nvcu_exec_node *en, uint32_t v) {
  switch (en->op.cond_type) {
  case CU_GRAPH_COND_TYPE_IF:
    return v ? en->bodies[0] : en->body_count == 2 ? en->bodies[1] : NULL;
  case CU_GRAPH_COND_TYPE_WHILE:
    return v ? en->bodies[0] : NULL;
  default: /* SWITCH */
    return v < en->body_count ? en->bodies[v] : NULL;
  }
}

/* The CPU evaluates a conditional node once everything before it has completed (kernels set the
 * condition with cudaGraphSetConditional), and launches the body graph it selects; a WHILE node
 * evaluates again after each run of its body. Later steps are submitted after that. The GPU has
 * no branch in its command stream that nvhcq could use instead, so each evaluation costs a CPU
 * round trip (a wait for the GPU, then a submission). */
static CUresult run_conditional(nvcu_device *d, const nvcu_exec_node *en, struct CUstream_st *st) {
  for (;;) {
    CUresult r = nvcu_wait_all(d);
    CUgraphExec body = r ? NULL : body_for(en, *en->op.cond->host);
    if (r || !body) return r;
    r = run(body, d, st);
    if (r || en->op.cond_type != CU_GRAPH_COND_TYPE_WHILE) return r;
    /* A loop runs as long as its kernels say: other threads' calls go on between its rounds */
    NVCU_UNLOCK();
    NVCU_LOCK();
  }
}

/* A host node runs on the caller's thread once everything before it has completed (as
 * cuLaunchHostFunc does here); later steps are submitted after it returned. */
static CUresult run_cpu(nvcu_device *d, const nvcu_exec_node *en, struct CUstream_st *st) {
  if (en->op.kind == CU_GRAPH_NODE_TYPE_CONDITIONAL) return run_conditional(d, en, st);
  if (en->op.kind == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) return nvcu_memops_run(d, st, &en->op);
  if (en->op.kind == CU_GRAPH_NODE_TYPE_EVENT_RECORD) return nvcu_event_record(d, en->op.event);
  if (en->op.kind == CU_GRAPH_NODE_TYPE_WAIT_EVENT) return nvcu_event_wait(d, en->op.event, st);
  CUresult r = nvcu_stream_wait(st);
  if (r) return r;
  CUhostFn fn = en->op.fn;
  void *user = en->op.user;
  NVCU_UNLOCK();
  fn(user);
  NVCU_LOCK();
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_device *d;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = nvcu_device_get(hGraphExec->device, &d);
  if (!r && st->capture) r = nvcu_unsupported("cuGraphLaunch in a captured stream");
  if (!r) r = run(hGraphExec, d, st);
  NVCU_UNLOCK();
  return r;
}

/* One launch of x: its conditions' defaults, then its steps in order. */
static CUresult run(CUgraphExec x, nvcu_device *d, struct CUstream_st *st) {
  CUresult r = exec_usable(x);
  if (!r) r = nvcu_cond_begin(d, x);
  for (uint32_t i = 0; i < x->step_count && !r; i++) {
    nvcu_step *s = &x->steps[i];
    r = s->cpu_node == NVCU_NO_STEP ? launch_gpu(d, s, st) : run_cpu(d, &x->nodes[s->cpu_node], st);
  }
  return r;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  (void)hStream; /* instantiation already put the graph in GPU memory */
  return exec_check(hGraphExec);
}

/* ---- updates ---- */

static CUresult exec_node(CUgraphExec x, CUgraphNode node, nvcu_exec_node **out) {
  CUresult r = exec_usable(x);
  if (r) return r;
  if (nvcu_node_check(node) || node->graph != x->graph) return CUDA_ERROR_INVALID_VALUE;
  uint32_t lo = 0, hi = x->top_count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if ((x->top[mid] >> 32) < node->id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == x->top_count || (x->top[lo] >> 32) != node->id) return CUDA_ERROR_INVALID_VALUE;
  *out = &x->nodes[(uint32_t)x->top[lo]];
  return CUDA_SUCCESS;
}

/* The steps made anew from the nodes' current values, once no replay runs: for what variables
 * cannot carry (nodes enabled or disabled, nodes recorded without variables). */
static CUresult rerecord(CUgraphExec x) {
  steps_destroy(x);
  for (uint32_t i = 0; i < x->node_count; i++) {
    nvcu_exec_node *en = &x->nodes[i];
    free(en->param_vars);
    nvhcq_buffer_destroy(en->pattern);
    en->param_vars = NULL, en->pattern = NULL, en->pattern_size = 0;
    en->step = NVCU_NO_STEP, en->fixed = 0;
  }
  uint32_t *order = malloc((x->node_count + 1) * sizeof *order);
  CUresult r = order ? plan(x, order) : CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = build(x, order);
  free(order);
  x->stale = 0;
  x->broken = r != CUDA_SUCCESS;
  return r;
}

/* After an update went through: records again if a node's change asked for it. */
static CUresult settle(CUgraphExec x, CUresult r) {
  return r || !x->stale ? r : rerecord(x);
}

/* The node's step has no replay in flight (its values may change). */
static CUresult step_idle(CUgraphExec x, const nvcu_exec_node *en) {
  nvcu_step *s = &x->steps[en->step];
  if (s->q) return nvcu_status(nvhcq_queue_cpu_wait_idle(s->q, 0), "graph update");
  return s->g ? nvcu_status(nvhcq_graph_cpu_wait(s->g, 0), "graph update") : CUDA_SUCCESS;
}

static CUresult set(CUgraphExec x, const nvcu_exec_node *en, nvhcq_var v, uint64_t value) {
  nvcu_step *s = &x->steps[en->step];
  CUresult r = step_idle(x, en);
  if (r) return r;
  return nvcu_status(s->q ? nvhcq_queue_set_var(s->q, v, value)
                          : nvhcq_graph_set_var(s->g, v, value),
                     "graph update");
}

/* Whether en can take op's values through its variables (CUDA's update result codes). */
static CUgraphExecUpdateResult kernel_fits(const nvcu_exec_node *en, const nvcu_op *op) {
  if (op->func != en->op.func) return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
  if (op->shared != en->op.shared || op->args_size != en->op.args_size)
    return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
  if (en->fixed || en->disabled || has_launch_config(op)) return CU_GRAPH_EXEC_UPDATE_SUCCESS;
  struct CUfunc_st *f = op->func;
  for (uint32_t p = 0; p < f->param_count; p++) {
    nvcu_param pp = f->params[p];
    if (pp.offset + pp.size > op->args_size ||
        !memcmp(en->op.args + pp.offset, op->args + pp.offset, pp.size))
      continue;
    if (en->param_vars[p] == NVHCQ_NO_VAR) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Values without variables to take them are kept, and recorded when the node is next recorded. */
static void kernel_store(CUgraphExec x, nvcu_exec_node *en, const nvcu_op *op) {
  if (op->args_size) memcpy(en->op.args, op->args, op->args_size);
  en->op.grid = op->grid, en->op.block = op->block;
  nvcu_launch_attrs_copy(&en->op, op);
  if (!en->disabled) x->stale = 1;
}

static CUresult kernel_apply(CUgraphExec x, nvcu_exec_node *en, const nvcu_op *op) {
  if (en->fixed || en->disabled || has_launch_config(op)) {
    kernel_store(x, en, op);
    return CUDA_SUCCESS;
  }
  CUresult r = CUDA_SUCCESS;
  const uint32_t *g0 = &en->op.grid.x, *g1 = &op->grid.x, *b0 = &en->op.block.x, *b1 = &op->block.x;
  for (int d = 0; d < 3 && !r; d++) {
    if (g0[d] != g1[d]) r = set(x, en, en->grid[d], g1[d]);
    if (!r && b0[d] != b1[d]) r = set(x, en, en->block[d], b1[d]);
  }
  struct CUfunc_st *f = op->func;
  for (uint32_t p = 0; p < f->param_count && !r; p++) {
    nvcu_param pp = f->params[p];
    if (pp.offset + pp.size > op->args_size ||
        !memcmp(en->op.args + pp.offset, op->args + pp.offset, pp.size))
      continue;
    uint64_t value = 0;
    memcpy(&value, op->args + pp.offset, pp.size > 8 ? 8 : pp.size);
    r = set(x, en, en->param_vars[p], value);
  }
  if (!r) {
    if (op->args_size) memcpy(en->op.args, op->args, op->args_size);
    en->op.grid = op->grid, en->op.block = op->block;
    nvcu_launch_attrs_copy(&en->op, op);
  }
  return r;
}

/* A memset's pattern is rewritten in place, or in a new buffer when it grew; the size variable
 * holds bytes. */
static CUresult memset_apply(CUgraphExec x, nvcu_exec_node *en, const nvcu_op *op) {
  uint64_t bytes = op->size * op->element_size, old_size = en->pattern_size;
  if (bytes > MEMSET_NODE_MAX_BYTES) return nvcu_unsupported("memset nodes above 64 MiB");
  nvhcq_buffer *old = en->pattern;
  nvcu_op keep = en->op;
  en->op.value = op->value, en->op.element_size = op->element_size, en->op.size = op->size;
  CUresult r = CUDA_SUCCESS;
  if (bytes > old_size) {
    r = memset_pattern(x, en);
    if (r) {
      en->pattern = old, en->pattern_size = old_size, en->op = keep;
      return r;
    }
    nvhcq_buffer_destroy(old);
    r = set(x, en, en->src, nvhcq_buffer_gpu_address(en->pattern));
  } else {
    fill_pattern(en, bytes);
  }
  if (!r && op->dst != en->op.dst) r = set(x, en, en->dst, op->dst);
  if (!r) r = set(x, en, en->size, bytes);
  if (!r) en->op.dst = op->dst;
  return r;
}

/* A copy's values change once its step has no replay in flight; a disabled copy's are kept for
 * when it is recorded again. */
static CUresult copy_apply(CUgraphExec x, nvcu_exec_node *en, const nvcu_op *op) {
  if (en->disabled) {
    en->op.dst = op->dst, en->op.src = op->src, en->op.size = op->size;
    en->op.value = op->value, en->op.element_size = op->element_size;
    return CUDA_SUCCESS;
  }
  CUresult r = step_idle(x, en);
  if (r) return r;
  if (op->kind == CU_GRAPH_NODE_TYPE_MEMSET) return memset_apply(x, en, op);
  if (op->dst != en->op.dst) r = set(x, en, en->dst, op->dst);
  if (!r && op->src != en->op.src) r = set(x, en, en->src, op->src);
  if (!r && op->size != en->op.size) r = set(x, en, en->size, op->size);
  if (!r) en->op.dst = op->dst, en->op.src = op->src, en->op.size = op->size;
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
  if (!r) r = nvcu_kernel_op(p, kern, &op);
  if (!r) nvcu_launch_attrs_copy(&op, &en->op); /* parameters change, attributes stay */
  if (!r && kernel_fits(en, &op)) r = nvcu_unsupported("this change of a kernel node");
  if (!r) r = settle(x, kernel_apply(x, en, &op));
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
  if (!r) r = nvcu_memcpy_op(copyParams, &op);
  if (!r) r = copy_apply(hGraphExec, en, &op);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                        CUcontext ctx) {
  (void)ctx;
  NVCU_LOCK();
  nvcu_exec_node *en;
  nvcu_op op = {0};
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && en->op.kind != CU_GRAPH_NODE_TYPE_MEMSET) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = nvcu_memset_op(memsetParams, &op);
  if (!r) r = copy_apply(hGraphExec, en, &op);
  NVCU_UNLOCK();
  return r;
}

/* Host and event nodes run from the CPU inside cuGraphLaunch: nothing of them is in flight. */
CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_HOST_NODE_PARAMS *nodeParams) {
  if (!nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_exec_node *en;
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && en->op.kind != CU_GRAPH_NODE_TYPE_HOST) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) en->op.fn = nodeParams->fn, en->op.user = nodeParams->userData;
  NVCU_UNLOCK();
  return r;
}

static CUresult set_event(CUgraphExec x, CUgraphNode node, CUevent event, int kind) {
  if (!event || event->magic != NVCU_EVENT_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_exec_node *en;
  CUresult r = exec_node(x, node, &en);
  if (!r && en->op.kind != kind) r = CUDA_ERROR_INVALID_VALUE;
  nvcu_op changed = r ? (nvcu_op){0} : en->op;
  changed.event = event;
  if (!r && cpu_work(&changed) != cpu_work(&en->op)) {
    nvcu_log("cuGraphExecEventWaitNodeSetEvent: the node waited on %s event when the graph was "
             "instantiated and event %p is %s one; instantiate the graph again with it",
             en->op.event && en->op.event->ipc ? "an interprocess" : "this process's",
             (void *)event, event->ipc ? "an interprocess" : "this process's");
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) en->op.event = event;
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            CUevent event) {
  return set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                          CUevent event) {
  return set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* A batch memory operation node's operations are read as each launch runs it: the new ones
 * replace them at once. */
static void swap_args(nvcu_op *a, nvcu_op *b) {
  uint8_t *args = a->args;
  uint32_t size = a->args_size;
  a->args = b->args, a->args_size = b->args_size;
  b->args = args, b->args_size = size;
}

CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams) {
  if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_exec_node *en;
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && en->op.kind != CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = nvcu_memops_check(nodeParams->count, nodeParams->paramArray, nodeParams->flags);
  nvcu_op op = {.args_size = nodeParams->count * (uint32_t)sizeof *nodeParams->paramArray};
  if (!r && !(op.args = malloc(op.args_size))) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    memcpy(op.args, nodeParams->paramArray, op.args_size);
    swap_args(&en->op, &op);
    free(op.args);
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  CUgraphNodeParams *nodeParams) {
  CUgraphNodeParams *p = nodeParams;
  if (exec_check(hGraphExec)) return CUDA_ERROR_INVALID_HANDLE;
  if (nvcu_node_check(hNode)) return CUDA_ERROR_INVALID_HANDLE;
  if (!p || (int)p->type != hNode->op.kind || p->reserved0[0] || p->reserved0[1] ||
      p->reserved0[2] || p->reserved2)
    return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &p->kernel);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    if (p->memcpy.flags || p->memcpy.reserved) return CUDA_ERROR_INVALID_VALUE;
    return cuGraphExecMemcpyNodeSetParams(hGraphExec, hNode, &p->memcpy.copyParams,
                                          p->memcpy.copyCtx);
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return cuGraphExecMemsetNodeSetParams(
        hGraphExec, hNode, (const CUDA_MEMSET_NODE_PARAMS *)&p->memset, p->memset.ctx);
  case CU_GRAPH_NODE_TYPE_HOST:
    return cuGraphExecHostNodeSetParams(hGraphExec, hNode, (const CUDA_HOST_NODE_PARAMS *)&p->host);
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return cuGraphExecEventWaitNodeSetEvent(hGraphExec, hNode, p->eventWait.event);
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return cuGraphExecEventRecordNodeSetEvent(hGraphExec, hNode, p->eventRecord.event);
  case CU_GRAPH_NODE_TYPE_GRAPH:
    return cuGraphExecChildGraphNodeSetParams(hGraphExec, hNode, p->graph.graph);
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    return cuGraphExecBatchMemOpNodeSetParams(hGraphExec, hNode,
                                              (CUDA_BATCH_MEM_OP_NODE_PARAMS *)&p->memOp);
  case CU_GRAPH_NODE_TYPE_EMPTY:
    return CUDA_SUCCESS;
  default:
    return nvcu_unsupported("this graph node type");
  }
}

/* ---- whole-graph updates ---- */

/* Where a flattened graph is compared: with exec nodes from `base` on, its dependency d being
 * exec node base + d, its roots depending on exec node `root` (or on nothing: UINT32_MAX). */
typedef struct span {
  uint32_t base, root;
} span;

/* Whether node i of the new graph (flattened) pairs with its exec node, and can take its values. */
static CUgraphExecUpdateResult node_fits(const nvcu_exec_node *en, const flat *f, uint32_t i,
                                         span at, CUgraphNode *from) {
  const nvcu_exec_node *nn = &f->v[i];
  if (nn->op.kind != en->op.kind) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
  int rooted = !nn->dep_count && at.root != UINT32_MAX;
  if ((rooted ? 1 : nn->dep_count) != en->dep_count)
    return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  if (rooted && en->deps[0] != at.root) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  for (uint32_t k = 0; k < nn->dep_count; k++)
    if (nn->deps[k] + at.base != en->deps[k]) {
      *from = f->v[nn->deps[k]].node;
      return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
  if (nn->op.kind == CU_GRAPH_NODE_TYPE_KERNEL) return kernel_fits(en, &nn->op);
  if (nn->op.kind == CU_GRAPH_NODE_TYPE_CONDITIONAL &&
      (nn->op.cond_type != en->op.cond_type || nn->body_count != en->body_count))
    return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
  if (nn->op.kind == CU_GRAPH_NODE_TYPE_MEMSET &&
      nn->op.size * nn->op.element_size > MEMSET_NODE_MAX_BYTES)
    return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* A conditional node takes the new graph's condition and the bodies instantiated from its body
 * graphs (whatever they hold); its old ones go with the new graph's flattening, each body once
 * its launches have completed. */
static void swap_bodies(nvcu_exec_node *en, nvcu_exec_node *from) {
  CUgraphExec *b = en->bodies;
  en->bodies = from->bodies;
  from->bodies = b;
  nvcu_cond *c = en->op.cond;
  en->op.cond = from->op.cond;
  from->op.cond = c;
}

static CUresult apply(CUgraphExec x, nvcu_exec_node *en, nvcu_exec_node *from) {
  const nvcu_op *op = &from->op;
  switch (op->kind) {
  case CU_GRAPH_NODE_TYPE_CONDITIONAL:
    swap_bodies(en, from);
    return CUDA_SUCCESS;
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    swap_args(&en->op, &from->op);
    return CUDA_SUCCESS;
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return kernel_apply(x, en, op);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return copy_apply(x, en, op);
  default:
    en->op.fn = op->fn, en->op.user = op->user, en->op.event = op->event;
    return CUDA_SUCCESS;
  }
}

/* Every node is checked before any changes: an update that fails changes nothing. */
static CUresult fit_all(CUgraphExec x, flat *f, span at, CUgraphExecUpdateResultInfo *info) {
  CUresult r = CUDA_SUCCESS;
  for (uint32_t i = 0; i < f->n && !info->result; i++) {
    info->result = node_fits(&x->nodes[at.base + i], f, i, at, &info->errorFromNode);
    if (info->result) info->errorNode = f->v[i].node;
  }
  if (info->result) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  for (uint32_t i = 0; i < f->n && !r; i++) r = apply(x, &x->nodes[at.base + i], &f->v[i]);
  if (r) info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
  return r;
}

/* After a successful update the new graph's conditions are the ones set to their defaults. */
static CUresult update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  flat f = {0};
  nvcu_cond **defaults = NULL;
  uint32_t count = 0;
  CUresult r = exec_usable(x);
  if (r) return r;
  r = nvcu_cond_defaults(g, &defaults, &count);
  if (!r) r = flatten(g, &f, UINT32_MAX, 1, NULL, &(uint32_t){0});
  if (!r) {
    info->result = f.n == x->node_count ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                        : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    r = info->result ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
                     : settle(x, fit_all(x, &f, (span){0, UINT32_MAX}, info));
  } else if (r != CUDA_ERROR_OUT_OF_MEMORY) {
    r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  if (!r) {
    nvcu_cond **old = x->defaults;
    uint32_t n = x->default_count;
    x->defaults = defaults, x->default_count = count;
    defaults = old, count = n;
  }
  nvcu_conds_free(defaults, count);
  flat_free(f.v, f.n);
  return r;
}

/* The child's nodes lie between its entry node and its exit node (the one hNode maps to): the new
 * graph, flattened alone, must match them node for node. */
static CUresult update_child(CUgraphExec x, CUgraphNode node, CUgraph child) {
  nvcu_exec_node *exit;
  CUresult r = exec_node(x, node, &exit);
  if (r) return r;
  if (exit->op.kind != CU_GRAPH_NODE_TYPE_GRAPH || nvcu_graph_check(child))
    return CUDA_ERROR_INVALID_VALUE;
  flat f = {0};
  r = flatten(child, &f, UINT32_MAX, 0, NULL, &(uint32_t){0});
  uint32_t at = (uint32_t)(exit - x->nodes);
  if (!r && (at < f.n + 1 || x->nodes[at - f.n - 1].op.kind != CU_GRAPH_NODE_TYPE_EMPTY))
    r = CUDA_ERROR_INVALID_VALUE;
  if (!r) {
    CUgraphExecUpdateResultInfo info = {0};
    r = settle(x, fit_all(x, &f, (span){at - f.n, at - f.n - 1}, &info));
    if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) r = CUDA_ERROR_INVALID_VALUE;
  }
  flat_free(f.v, f.n);
  return r;
}

CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            CUgraph childGraph) {
  NVCU_LOCK();
  CUresult r = update_child(hGraphExec, hNode, childGraph);
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo *resultInfo) {
  CUgraphExecUpdateResultInfo info = {.result = CU_GRAPH_EXEC_UPDATE_ERROR};
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (!exec_check(hGraphExec) && !nvcu_graph_check(hGraph) && !hGraph->moved) {
    NVCU_LOCK();
    r = update(hGraphExec, hGraph, &info);
    NVCU_UNLOCK();
  }
  if (resultInfo) *resultInfo = info;
  return r;
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                           CUgraphExecUpdateResult *updateResult_out) {
  CUgraphExecUpdateResultInfo info;
  CUresult r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
  if (hErrorNode_out) *hErrorNode_out = info.errorNode;
  if (updateResult_out) *updateResult_out = info.result;
  return r;
}

/* ---- enabling and disabling nodes ---- */

/* A disabled node is recorded as an empty one (what depends on it still waits for its
 * dependencies); re-enabled, it is recorded with its current values. */
CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  NVCU_LOCK();
  nvcu_exec_node *en;
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && !gpu_work(en->op.kind)) {
    nvcu_log("cuGraphNodeSetEnabled: node %p is of type %d; only kernel, memcpy and memset nodes "
             "can be disabled",
             (void *)hNode, en->op.kind);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r && en->disabled != !isEnabled) {
    en->disabled = !isEnabled;
    r = rerecord(hGraphExec);
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled) {
  if (!isEnabled) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_exec_node *en;
  CUresult r = exec_node(hGraphExec, hNode, &en);
  if (!r && !gpu_work(en->op.kind)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) *isEnabled = !en->disabled;
  NVCU_UNLOCK();
  return r;
}

#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));
NVCU_ALIAS(cuGraphLaunch_ptsz, cuGraphLaunch)
/* The CUDA 10 symbol, which cuGetProcAddress gives below version 11000: the same five
 * parameters as cuGraphInstantiate_v2. */
NVCU_ALIAS(cuGraphInstantiate, cuGraphInstantiate_v2)
NVCU_ALIAS(cuGraphUpload_ptsz, cuGraphUpload)
NVCU_ALIAS(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams)
