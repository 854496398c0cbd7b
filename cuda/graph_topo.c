/* A graph's shape: its edges read and changed, nodes removed, clones and the nodes they copied,
 * and the graph written as a Graphviz DOT file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- edges ---- */

static int has_dep(const struct CUgraphNode_st *to, const struct CUgraphNode_st *from) {
  for (uint32_t k = 0; k < to->dep_count; k++)
    if (to->deps[k] == from) return 1;
  return 0;
}

static CUresult edges_check(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *data, size_t n) {
  if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
  if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++)
    if (nvcu_node_check(from[i]) || nvcu_node_check(to[i]) || from[i]->graph != g ||
        to[i]->graph != g || from[i] == to[i])
      return CUDA_ERROR_INVALID_VALUE;
  return nvcu_edge_data_check(data, n);
}

static CUresult add_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                          const CUgraphEdgeData *data, size_t n) {
  CUresult r = edges_check(g, from, to, data, n);
  for (size_t i = 0; i < n && !r; i++) { /* all or nothing: existing and repeated edges first */
    if (has_dep(to[i], from[i])) r = CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i && !r; j++)
      if (from[j] == from[i] && to[j] == to[i]) r = CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < n && !r; i++) {
    struct CUgraphNode_st *t = to[i];
    struct CUgraphNode_st **deps = realloc(t->deps, (t->dep_count + 1) * sizeof *deps);
    if (!deps) return CUDA_ERROR_OUT_OF_MEMORY;
    t->deps = deps;
    t->deps[t->dep_count++] = from[i];
  }
  return r;
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                   const CUgraphEdgeData *edgeData, size_t numDependencies) {
  return add_edges(hGraph, from, to, edgeData, numDependencies);
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                size_t numDependencies) {
  return add_edges(hGraph, from, to, NULL, numDependencies);
}

static void remove_dep(struct CUgraphNode_st *to, const struct CUgraphNode_st *from) {
  for (uint32_t k = 0; k < to->dep_count; k++)
    if (to->deps[k] == from) {
      memmove(&to->deps[k], &to->deps[k + 1], (to->dep_count - k - 1) * sizeof *to->deps);
      to->dep_count--;
      return;
    }
}

static CUresult remove_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                             const CUgraphEdgeData *data, size_t n) {
  CUresult r = edges_check(g, from, to, data, n);
  for (size_t i = 0; i < n && !r; i++)
    if (!has_dep(to[i], from[i])) r = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n && !r; i++) remove_dep(to[i], from[i]);
  return r;
}

CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                      const CUgraphNode *to, const CUgraphEdgeData *edgeData,
                                      size_t numDependencies) {
  return remove_edges(hGraph, from, to, edgeData, numDependencies);
}

CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                   size_t numDependencies) {
  return remove_edges(hGraph, from, to, NULL, numDependencies);
}

/* Edges by their dependent node in graph order, then in the order they were added. */
static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *data,
                          size_t *num) {
  if (nvcu_graph_check(g)) return CUDA_ERROR_INVALID_HANDLE;
  if (!num || (!from) != (!to) || (data && !from)) return CUDA_ERROR_INVALID_VALUE;
  size_t count = 0;
  for (uint32_t i = 0; i < g->node_count; i++)
    for (uint32_t k = 0; k < g->nodes[i]->dep_count; k++, count++)
      if (from && count < *num) {
        from[count] = g->nodes[i]->deps[k];
        to[count] = g->nodes[i];
        if (data) memset(&data[count], 0, sizeof *data);
      }
  if (!from) {
    *num = count;
    return CUDA_SUCCESS;
  }
  for (size_t i = count; i < *num; i++) {
    from[i] = to[i] = NULL;
    if (data) memset(&data[i], 0, sizeof *data);
  }
  if (count < *num) *num = count;
  return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                            CUgraphEdgeData *edgeData, size_t *numEdges) {
  return get_edges(hGraph, from, to, edgeData, numEdges);
}

CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges) {
  return get_edges(hGraph, from, to, NULL, numEdges);
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes) {
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (!numRootNodes) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphNode_st **roots = malloc((hGraph->node_count + 1) * sizeof *roots);
  if (!roots) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t n = 0;
  for (uint32_t i = 0; i < hGraph->node_count; i++)
    if (!hGraph->nodes[i]->dep_count) roots[n++] = hGraph->nodes[i];
  nvcu_fill_nodes(roots, n, rootNodes, numRootNodes);
  free(roots);
  return CUDA_SUCCESS;
}

static void zero_edges(CUgraphEdgeData *data, size_t n) {
  if (data) memset(data, 0, n * sizeof *data);
}

static CUresult node_deps(CUgraphNode h, CUgraphNode *out, CUgraphEdgeData *data, size_t *num) {
  if (nvcu_node_check(h)) return CUDA_ERROR_INVALID_HANDLE;
  if (!num || (data && !out)) return CUDA_ERROR_INVALID_VALUE;
  nvcu_fill_nodes(h->deps, h->dep_count, out, num);
  if (out) zero_edges(data, *num);
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
                                       CUgraphEdgeData *edgeData, size_t *numDependencies) {
  return node_deps(hNode, dependencies, edgeData, numDependencies);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                    size_t *numDependencies) {
  return node_deps(hNode, dependencies, NULL, numDependencies);
}

static CUresult node_dependents(CUgraphNode h, CUgraphNode *out, CUgraphEdgeData *data,
                                size_t *num) {
  if (nvcu_node_check(h)) return CUDA_ERROR_INVALID_HANDLE;
  if (!num || (data && !out)) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraph_st *g = h->graph;
  struct CUgraphNode_st **list = malloc((g->node_count + 1) * sizeof *list);
  if (!list) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t n = 0;
  for (uint32_t i = 0; i < g->node_count; i++)
    if (has_dep(g->nodes[i], h)) list[n++] = g->nodes[i];
  nvcu_fill_nodes(list, n, out, num);
  if (out) zero_edges(data, *num);
  free(list);
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                         CUgraphEdgeData *edgeData, size_t *numDependentNodes) {
  return node_dependents(hNode, dependentNodes, edgeData, numDependentNodes);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                      size_t *numDependentNodes) {
  return node_dependents(hNode, dependentNodes, NULL, numDependentNodes);
}

/* A node and every edge to or from it go; the graph's other nodes keep their order. */
CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  if (nvcu_node_check(hNode)) return CUDA_ERROR_INVALID_HANDLE;
  if (nvcu_graph_has_mem(hNode->graph)) /* CUDA's rule for graphs with memory nodes */
    return nvcu_unsupported("destroying a node of a graph with allocation nodes");
  NVCU_LOCK();
  struct CUgraph_st *g = hNode->graph;
  for (uint32_t i = 0; i < g->node_count; i++) remove_dep(g->nodes[i], hNode);
  uint32_t at = hNode->index;
  memmove(&g->nodes[at], &g->nodes[at + 1], (g->node_count - at - 1) * sizeof *g->nodes);
  g->node_count--;
  for (uint32_t i = at; i < g->node_count; i++) g->nodes[i]->index = i;
  nvcu_node_free(hNode);
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

/* ---- clones ---- */

CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph) {
  if (!phGraphClone) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_check(originalGraph)) return CUDA_ERROR_INVALID_VALUE;
  if (nvcu_graph_has_mem(originalGraph))
    return nvcu_unsupported("cloning a graph with allocation nodes (CUDA does not either)");
  NVCU_LOCK();
  struct CUgraph_st *c = nvcu_graph_copy(originalGraph);
  NVCU_UNLOCK();
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  *phGraphClone = c;
  return CUDA_SUCCESS;
}

/* The clone's node of the same id (ids are ascending in a graph's node order). */
CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
                                CUgraph hClonedGraph) {
  if (!phNode || nvcu_node_check(hOriginalNode) || nvcu_graph_check(hClonedGraph) ||
      hClonedGraph->origin != hOriginalNode->graph)
    return CUDA_ERROR_INVALID_VALUE;
  uint32_t lo = 0, hi = hClonedGraph->node_count, id = hOriginalNode->id;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (hClonedGraph->nodes[mid]->id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == hClonedGraph->node_count || hClonedGraph->nodes[lo]->id != id)
    return CUDA_ERROR_INVALID_VALUE;
  *phNode = hClonedGraph->nodes[lo];
  return CUDA_SUCCESS;
}

/* ---- DOT ---- */

static const char *kind_name(int kind) {
  switch (kind) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return "KERNEL";
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    return "MEMCPY";
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return "MEMSET";
  case CU_GRAPH_NODE_TYPE_HOST:
    return "HOST";
  case CU_GRAPH_NODE_TYPE_GRAPH:
    return "GRAPH";
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return "WAIT_EVENT";
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return "EVENT_RECORD";
  case CU_GRAPH_NODE_TYPE_CONDITIONAL:
    return "CONDITIONAL";
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    return "BATCH_MEM_OP";
  default:
    return "EMPTY";
  }
}

/* What a node does, for its label (one line of the DOT file). */
static void dot_label(FILE *f, const struct CUgraphNode_st *n) {
  const nvcu_op *op = &n->op;
  fprintf(f, "%s %u", kind_name(op->kind), n->id);
  switch (op->kind) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    fprintf(f, "\\n%s\\ngrid (%u,%u,%u) block (%u,%u,%u)\\nshared %u", op->func->name, op->grid.x,
            op->grid.y, op->grid.z, op->block.x, op->block.y, op->block.z, op->shared);
    break;
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    fprintf(f, "\\n0x%" PRIx64 " -> 0x%" PRIx64 "\\n%" PRIu64 " bytes", op->src, op->dst, op->size);
    break;
  case CU_GRAPH_NODE_TYPE_MEMSET:
    fprintf(f, "\\n0x%" PRIx64 " = 0x%x\\n%" PRIu64 " x %u bytes", op->dst, op->value, op->size,
            op->element_size);
    break;
  case CU_GRAPH_NODE_TYPE_HOST:
    fprintf(f, "\\nfn %p\\ndata %p", (void *)(uintptr_t)op->fn, op->user);
    break;
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    fprintf(f, "\\nevent %p", (void *)op->event);
    break;
  case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
    fprintf(f, "\\n%u operations", op->args_size / (unsigned)sizeof(CUstreamBatchMemOpParams));
    break;
  case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
    static const char *const types[] = {"IF", "WHILE", "SWITCH"};
    fprintf(f, "\\n%s handle 0x%" PRIx64 "\\n%u body graphs", types[op->cond_type % 3],
            op->cond->gpu, n->body_count);
    break;
  }
  default:
    break;
  }
}

static void dot_graph(FILE *f, const struct CUgraph_st *g, const char *prefix, int depth);

/* A child graph or a conditional node's body graph: a cluster named after its node. */
static void dot_cluster(FILE *f, const struct CUgraph_st *g, const char *prefix, uint32_t id,
                        const char *what, uint32_t body, int depth) {
  char inner[256];
  if (what[0] == 'c')
    snprintf(inner, sizeof inner, "%sn%u_", prefix, id);
  else
    snprintf(inner, sizeof inner, "%sn%u_b%u_", prefix, id, body);
  fprintf(f, "%*ssubgraph \"cluster_%s\" {\n%*slabel=\"%s", 2 * depth, "", inner, 2 * depth + 2, "",
          what);
  if (what[0] != 'c') fprintf(f, " %u", body);
  fprintf(f, " of %sn%u\";\n", prefix, id);
  dot_graph(f, g, inner, depth + 1);
  fprintf(f, "%*s}\n", 2 * depth, "");
}

/* Nodes are named "<prefix>n<id>"; a child graph is a cluster whose nodes carry its node's name. */
static void dot_graph(FILE *f, const struct CUgraph_st *g, const char *prefix, int depth) {
  for (uint32_t i = 0; i < g->node_count; i++) {
    const struct CUgraphNode_st *n = g->nodes[i];
    fprintf(f, "%*s\"%sn%u\" [shape=%s label=\"", 2 * depth, "", prefix, n->id,
            n->op.kind == CU_GRAPH_NODE_TYPE_HOST ? "octagon" : "box");
    dot_label(f, n);
    fprintf(f, "\"];\n");
    if (n->child) dot_cluster(f, n->child, prefix, n->id, "child graph", 0, depth);
    for (uint32_t b = 0; b < n->body_count; b++)
      dot_cluster(f, n->bodies[b], prefix, n->id, "body graph", b, depth);
  }
  for (uint32_t i = 0; i < g->node_count; i++)
    for (uint32_t k = 0; k < g->nodes[i]->dep_count; k++)
      fprintf(f, "%*s\"%sn%u\" -> \"%sn%u\";\n", 2 * depth, "", prefix, g->nodes[i]->deps[k]->id,
              prefix, g->nodes[i]->id);
}

CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags) {
  (void)flags; /* every node's parameters are written */
  if (nvcu_graph_check(hGraph)) return CUDA_ERROR_INVALID_HANDLE;
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  FILE *f = fopen(path, "w");
  if (!f) {
    nvcu_log("cuGraphDebugDotPrint: cannot write %s", path);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  NVCU_LOCK();
  fprintf(f, "digraph cuda_graph {\n  label=\"graph %p\";\n", (void *)hGraph);
  dot_graph(f, hGraph, "", 1);
  fprintf(f, "}\n");
  NVCU_UNLOCK();
  return fclose(f) ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS;
}
