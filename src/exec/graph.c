/* Graphs: nodes kept as a description until instantiation, then recorded into one compute and
 * one copy queue; an edge between channels becomes a signal the producer releases with the
 * replay's epoch and the consumer waits for. */
#include <stdlib.h>
#include <string.h>

#include "exec/module.h"
#include "util/handle.h"
#include "exec/queue.h"
#include "util/abi.h"

#define NVHCQ_GRAPH_MAGIC 0x6e766772u /* "nvgr" */

typedef struct graph_node {
  int copy; /* which channel */
  nvhcq_kernel *kernel;
  nvhcq_dim3 grid, block;
  uint32_t shared;
  uint8_t *args;
  size_t args_size;
  nvhcq_launch_vars vars;
  nvhcq_arg_var *arg_vars;
  uint64_t dst, src, size;
  nvhcq_var dst_var, src_var, size_var;
  nvhcq_node *deps;
  uint32_t dep_count;
  nvhcq_signal *done; /* released when another channel depends on this node */
  /* A launch with a configuration (nvhcq_graph_add_launch_ex): recorded as given, no variables;
   * its tpc_mask points at `tpcs` when it is recorded (the node array moves as it grows). */
  int has_config, masked;
  nvhcq_launch_config config;
  uint32_t tpcs[4];
} graph_node;

struct nvhcq_graph {
  uint32_t magic;
  nvhcq_device *dev;
  graph_node *nodes;
  uint32_t node_count;
  nvhcq_var_slot *vars;
  uint32_t var_count;
  nvhcq_queue *queue[2]; /* compute, copy */
  nvhcq_var *var_map[2]; /* graph variable -> queue variable */
  nvhcq_var epoch_var[2];
  uint64_t epoch;
  int instantiated;
};

static nvhcq_status check_graph(const nvhcq_graph *g, int want_instantiated) {
  NVHCQ_TRY(nvhcq_handle_check(g, NVHCQ_GRAPH_MAGIC, "graph", NULL));
  if (want_instantiated >= 0 && g->instantiated != want_instantiated)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, want_instantiated
                                                        ? "the graph must be instantiated first"
                                                        : "the graph is instantiated: nodes and "
                                                          "variables can no longer be added");
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_create(nvhcq_device *dev, nvhcq_graph **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_graph_create: out is NULL");
  nvhcq_graph *g = calloc(1, sizeof *g);
  if (!g) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  g->magic = NVHCQ_GRAPH_MAGIC;
  g->dev = dev;
  *out = g;
  return NVHCQ_SUCCESS;
}

/* The recorded queues of an instance (or of an instantiation that failed half way). */
static void drop_queues(nvhcq_graph *g) {
  for (int c = 0; c < 2; c++) {
    if (g->queue[c]) nvhcq_queue_destroy(g->queue[c]);
    free(g->var_map[c]);
    g->queue[c] = NULL, g->var_map[c] = NULL;
  }
}

nvhcq_status nvhcq_graph_destroy(nvhcq_graph *g) {
  if (!g) return NVHCQ_SUCCESS;
  NVHCQ_TRY(check_graph(g, -1));
  drop_queues(g);
  for (uint32_t i = 0; i < g->node_count; i++) {
    graph_node *n = &g->nodes[i];
    free(n->args), free(n->arg_vars), free(n->deps);
    if (n->done) nvhcq_signal_destroy(n->done);
  }
  free(g->nodes);
  free(g->vars);
  nvhcq_retire(g);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_var(nvhcq_graph *g, const char *name, uint64_t value, nvhcq_var *out) {
  NVHCQ_TRY(check_graph(g, 0));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_graph_var: out is NULL");
  nvhcq_var_slot *grown = realloc(g->vars, (g->var_count + 1) * sizeof *grown);
  if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  g->vars = grown;
  snprintf(g->vars[g->var_count].name, sizeof g->vars[0].name, "%s", name ? name : "");
  g->vars[g->var_count].value = value;
  *out = g->var_count++;
  return NVHCQ_SUCCESS;
}

static nvhcq_status check_graph_var(const nvhcq_graph *g, nvhcq_var v) {
  if (v == NVHCQ_NO_VAR || v < g->var_count) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "graph variable %u does not exist", v);
}

static nvhcq_status new_node(nvhcq_graph *g, const nvhcq_node *deps, uint32_t dep_count,
                             graph_node **out) {
  for (uint32_t i = 0; i < dep_count; i++)
    if (deps[i] >= g->node_count)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "dependency %u names node %u, which does not exist yet (nodes may only "
                        "depend on nodes added before them)",
                        i, deps[i]);
  graph_node *grown = realloc(g->nodes, (g->node_count + 1) * sizeof *grown);
  if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  g->nodes = grown;
  graph_node *n = &g->nodes[g->node_count];
  memset(n, 0, sizeof *n);
  n->deps = malloc((dep_count ? dep_count : 1) * sizeof *n->deps);
  if (!n->deps) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (dep_count) memcpy(n->deps, deps, dep_count * sizeof *deps);
  n->dep_count = dep_count;
  *out = n;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_add_launch(nvhcq_graph *g, nvhcq_kernel *k, nvhcq_dim3 grid,
                                    nvhcq_dim3 block, uint32_t dynamic_shared, const void *args,
                                    size_t args_size, const nvhcq_launch_vars *vars,
                                    const nvhcq_node *deps, uint32_t dep_count, nvhcq_node *out) {
  NVHCQ_TRY(check_graph(g, 0));
  NVHCQ_TRY(nvhcq_kernel_check(k));
  if (vars) {
    for (int d = 0; d < 3; d++) {
      NVHCQ_TRY(check_graph_var(g, vars->grid[d]));
      NVHCQ_TRY(check_graph_var(g, vars->block[d]));
    }
    for (uint32_t i = 0; i < vars->arg_count; i++) NVHCQ_TRY(check_graph_var(g, vars->args[i].var));
  }
  graph_node *n;
  NVHCQ_TRY(new_node(g, deps, dep_count, &n));
  *n = (graph_node){.copy = 0,
                    .kernel = k,
                    .grid = grid,
                    .block = block,
                    .shared = dynamic_shared,
                    .args_size = args_size,
                    .deps = n->deps,
                    .dep_count = dep_count};
  n->args = malloc(args_size ? args_size : 1);
  if (vars) {
    n->vars = *vars;
    n->arg_vars = malloc((vars->arg_count ? vars->arg_count : 1) * sizeof *n->arg_vars);
    if (n->arg_vars && vars->arg_count)
      memcpy(n->arg_vars, vars->args, vars->arg_count * sizeof *n->arg_vars);
    n->vars.args = n->arg_vars;
  } else {
    for (int d = 0; d < 3; d++) n->vars.grid[d] = n->vars.block[d] = NVHCQ_NO_VAR;
  }
  if (!n->args || (vars && !n->arg_vars)) {
    free(n->args), free(n->arg_vars), free(n->deps);
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  if (args_size) memcpy(n->args, args, args_size);
  if (out) *out = g->node_count;
  g->node_count++;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_add_launch_ex(nvhcq_graph *g, nvhcq_kernel *k,
                                       const nvhcq_launch_config *config, const void *args,
                                       size_t args_size, const nvhcq_node *deps, uint32_t dep_count,
                                       nvhcq_node *out) {
  NVHCQ_TRY(check_graph(g, 0));
  if (!config || config->struct_size < offsetof(nvhcq_launch_config, flags))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_graph_add_launch_ex: config is NULL or its struct_size is too small "
                      "(set it to sizeof(nvhcq_launch_config))");
  if (config->arg_pointers)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_graph_add_launch_ex: give the arguments as one block (args), not "
                      "config->arg_pointers");
  nvhcq_node id;
  NVHCQ_TRY(nvhcq_graph_add_launch(g, k, config->grid, config->block, config->dynamic_shared, args,
                                   args_size, NULL, deps, dep_count, &id));
  graph_node *n = &g->nodes[id];
  n->has_config = 1;
  /* the fields a caller built before them leaves out stay zero (flags, tpc_mask) */
  memset(&n->config, 0, sizeof n->config);
  memcpy(&n->config, config,
         config->struct_size < sizeof n->config ? config->struct_size : sizeof n->config);
  n->config.struct_size = sizeof n->config;
  n->masked = n->config.tpc_mask != NULL;
  if (n->masked) memcpy(n->tpcs, n->config.tpc_mask, sizeof n->tpcs);
  n->config.tpc_mask = NULL;
  if (out) *out = id;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_add_copy(nvhcq_graph *g, uint64_t dst, uint64_t src, uint64_t size,
                                  nvhcq_var dst_var, nvhcq_var src_var, nvhcq_var size_var,
                                  const nvhcq_node *deps, uint32_t dep_count, nvhcq_node *out) {
  NVHCQ_TRY(check_graph(g, 0));
  NVHCQ_TRY(check_graph_var(g, dst_var));
  NVHCQ_TRY(check_graph_var(g, src_var));
  NVHCQ_TRY(check_graph_var(g, size_var));
  graph_node *n;
  NVHCQ_TRY(new_node(g, deps, dep_count, &n));
  nvhcq_node *kept = n->deps;
  *n = (graph_node){.copy = 1,
                    .dst = dst,
                    .src = src,
                    .size = size,
                    .dst_var = dst_var,
                    .src_var = src_var,
                    .size_var = size_var,
                    .deps = kept,
                    .dep_count = dep_count};
  if (out) *out = g->node_count;
  g->node_count++;
  return NVHCQ_SUCCESS;
}

static nvhcq_var map_var(const nvhcq_graph *g, int c, nvhcq_var v) {
  return v == NVHCQ_NO_VAR ? NVHCQ_NO_VAR : g->var_map[c][v];
}

static nvhcq_status record_node(nvhcq_graph *g, graph_node *n) {
  int c = n->copy;
  nvhcq_queue *q = g->queue[c];
  for (uint32_t i = 0; i < n->dep_count; i++) {
    graph_node *d = &g->nodes[n->deps[i]];
    if (d->copy != c) NVHCQ_TRY(nvhcq_queue_gpu_wait_var(q, d->done, g->epoch_var[c]));
  }
  if (c) {
    NVHCQ_TRY(nvhcq_queue_copy_vars(q, n->dst, n->src, n->size, map_var(g, 1, n->dst_var),
                                    map_var(g, 1, n->src_var), map_var(g, 1, n->size_var)));
  } else if (n->has_config) {
    nvhcq_launch_config cfg = n->config;
    cfg.tpc_mask = n->masked ? n->tpcs : NULL;
    NVHCQ_TRY(nvhcq_queue_launch_ex(q, n->kernel, &cfg, n->args, n->args_size));
  } else {
    nvhcq_launch_vars v = n->vars;
    for (int d = 0; d < 3; d++)
      v.grid[d] = map_var(g, 0, v.grid[d]), v.block[d] = map_var(g, 0, v.block[d]);
    nvhcq_arg_var mapped[64];
    if (v.arg_count > 64)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "more than 64 argument variables");
    for (uint32_t i = 0; i < v.arg_count; i++)
      mapped[i] = v.args[i], mapped[i].var = map_var(g, 0, v.args[i].var);
    v.args = mapped;
    NVHCQ_TRY(nvhcq_queue_launch_vars(q, n->kernel, n->grid, n->block, n->shared, n->args,
                                      n->args_size, &v));
  }
  if (n->done) NVHCQ_TRY(nvhcq_queue_signal_var(q, n->done, g->epoch_var[c]));
  return NVHCQ_SUCCESS;
}

static nvhcq_status instantiate(nvhcq_graph *g) {
  /* Nodes another channel waits for get a signal. */
  for (uint32_t i = 0; i < g->node_count; i++)
    for (uint32_t j = 0; j < g->nodes[i].dep_count; j++) {
      graph_node *d = &g->nodes[g->nodes[i].deps[j]];
      if (d->copy != g->nodes[i].copy && !d->done)
        NVHCQ_TRY(nvhcq_signal_create(g->dev, 0, &d->done));
    }
  for (int c = 0; c < 2; c++) {
    NVHCQ_TRY(nvhcq_queue_create_recorded(g->dev, c ? NVHCQ_QUEUE_COPY : NVHCQ_QUEUE_COMPUTE,
                                          &g->queue[c]));
    g->var_map[c] = malloc((g->var_count ? g->var_count : 1) * sizeof *g->var_map[c]);
    if (!g->var_map[c]) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (nvhcq_var v = 0; v < g->var_count; v++)
      NVHCQ_TRY(nvhcq_queue_var(g->queue[c], g->vars[v].name, g->vars[v].value, &g->var_map[c][v]));
    NVHCQ_TRY(nvhcq_queue_var(g->queue[c], "epoch", 1, &g->epoch_var[c]));
  }
  for (uint32_t i = 0; i < g->node_count; i++) NVHCQ_TRY(record_node(g, &g->nodes[i]));
  for (int c = 0; c < 2; c++) {
    if (g->queue[c]->push.len) {
      NVHCQ_TRY(nvhcq_queue_finish(g->queue[c]));
    } else {
      nvhcq_queue_destroy(g->queue[c]);
      g->queue[c] = NULL;
    }
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_instantiate(nvhcq_graph *g) {
  NVHCQ_TRY(check_graph(g, 0));
  if (!g->node_count) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "the graph has no nodes");
  nvhcq_status s = instantiate(g);
  if (s) {
    drop_queues(g); /* a later try starts afresh */
    return s;
  }
  g->instantiated = 1;
  return NVHCQ_SUCCESS;
}

/* Both queues are checked before either changes: a refusal leaves the graph as it was. */
static nvhcq_status check_idle(const nvhcq_graph *g) {
  for (int c = 0; c < 2; c++) {
    nvhcq_queue *q = g->queue[c];
    if (q && nvhcq_queue_replays_pending(q))
      return nvhcq_fail(NVHCQ_ERROR_BUSY,
                        "the graph's previous replay is still running on the %s channel; call "
                        "nvhcq_graph_cpu_wait first",
                        c ? "copy" : "compute");
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_set_var(nvhcq_graph *g, nvhcq_var var, uint64_t value) {
  NVHCQ_TRY(check_graph(g, -1));
  NVHCQ_TRY(check_graph_var(g, var));
  if (var == NVHCQ_NO_VAR) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "no variable given");
  if (!g->instantiated) {
    g->vars[var].value = value;
    return NVHCQ_SUCCESS;
  }
  NVHCQ_TRY(check_idle(g));
  for (int c = 0; c < 2; c++)
    if (g->queue[c]) NVHCQ_TRY(nvhcq_queue_set_var(g->queue[c], g->var_map[c][var], value));
  g->vars[var].value = value;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_launch(nvhcq_graph *g) {
  NVHCQ_TRY(check_graph(g, 1));
  NVHCQ_TRY(check_idle(g));
  uint64_t next = g->epoch + 1;
  for (int c = 0; c < 2; c++)
    if (g->queue[c]) NVHCQ_TRY(nvhcq_queue_set_var(g->queue[c], g->epoch_var[c], next));
  for (int c = 0; c < 2; c++)
    if (g->queue[c]) NVHCQ_TRY(nvhcq_queue_submit(g->queue[c]));
  g->epoch = next;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_graph_cpu_wait(nvhcq_graph *g, uint32_t timeout_ms) {
  NVHCQ_TRY(check_graph(g, 1));
  for (int c = 0; c < 2; c++)
    if (g->queue[c]) NVHCQ_TRY(nvhcq_queue_cpu_wait_idle(g->queue[c], timeout_ms));
  return NVHCQ_SUCCESS;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_graph_wait, nvhcq_graph_cpu_wait);
