/* Helpers the benchmarks share: a clock, medians, and checks that stop on the first failure. */
#ifndef NVHCQ_BENCH_UTIL_H
#define NVHCQ_BENCH_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nvhcq.h"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The whole file at `path` (malloc'd) and its size in *size; NULL if it cannot be read. */
static inline void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  void *data = n > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) free(data), data = NULL;
  fclose(f);
  if (data) *size = (size_t)n;
  return data;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

#define CHECK_NV(x)                                                                                \
  do {                                                                                             \
    nvhcq_status s_ = (x);                                                                         \
    if (s_) {                                                                                      \
      fprintf(stderr, "%s failed: %s\n", #x, nvhcq_last_error());                                  \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Figures after start-up: the device moves onto UVM now (waiting for its registration), not at a
 * submission being timed; bench_startup measures the move itself. NVHCQ_UVM=off keeps it off. */
static inline void bench_settle(nvhcq_device *dev) {
  nvhcq_status s = nvhcq_device_attach_uvm(dev);
  if (s && s != NVHCQ_ERROR_UNSUPPORTED)
    fprintf(stderr, "bench: the device stays off UVM: %s\n", nvhcq_last_error());
}

/* libcuda is reached through dlopen, its results as plain ints. */
#define CHECK_CU(x)                                                                                \
  do {                                                                                             \
    int r_ = (x);                                                                                  \
    if (r_) {                                                                                      \
      fprintf(stderr, "%s failed: CUresult %d\n", #x, r_);                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- libcuda through dlopen: the benchmarks run without it ---- */

typedef int (*cu_fn)();
static struct {
  cu_fn init, device_get, primary_retain, ctx_set, mem_alloc, mem_free, host_alloc, host_free, htod,
      dtoh, dtod, sync, module_load, get_function, launch, event_create, event_destroy,
      event_record, event_sync, event_elapsed, attr, stream_create, begin_capture, end_capture,
      instantiate, graph_launch, stream_sync, func_attr, graph_destroy, graph_exec_destroy,
      stream_destroy;
} cu;

/* 1 when libcuda and every function the benchmarks call were found. */
static inline int cuda_load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return 0;
  static const struct {
    cu_fn *f;
    const char *name;
  } syms[] = {
      {&cu.init, "cuInit"},
      {&cu.device_get, "cuDeviceGet"},
      {&cu.primary_retain, "cuDevicePrimaryCtxRetain"},
      {&cu.ctx_set, "cuCtxSetCurrent"},
      {&cu.mem_alloc, "cuMemAlloc_v2"},
      {&cu.mem_free, "cuMemFree_v2"},
      {&cu.host_alloc, "cuMemAllocHost_v2"},
      {&cu.host_free, "cuMemFreeHost"},
      {&cu.htod, "cuMemcpyHtoD_v2"},
      {&cu.dtoh, "cuMemcpyDtoH_v2"},
      {&cu.dtod, "cuMemcpyDtoD_v2"},
      {&cu.sync, "cuCtxSynchronize"},
      {&cu.module_load, "cuModuleLoadData"},
      {&cu.get_function, "cuModuleGetFunction"},
      {&cu.launch, "cuLaunchKernel"},
      {&cu.event_create, "cuEventCreate"},
      {&cu.event_destroy, "cuEventDestroy_v2"},
      {&cu.event_record, "cuEventRecord"},
      {&cu.event_sync, "cuEventSynchronize"},
      {&cu.event_elapsed, "cuEventElapsedTime"},
      {&cu.attr, "cuDeviceGetAttribute"},
      {&cu.stream_create, "cuStreamCreate"},
      {&cu.begin_capture, "cuStreamBeginCapture_v2"},
      {&cu.end_capture, "cuStreamEndCapture"},
      {&cu.instantiate, "cuGraphInstantiateWithFlags"},
      {&cu.graph_launch, "cuGraphLaunch"},
      {&cu.stream_sync, "cuStreamSynchronize"},
      {&cu.func_attr, "cuFuncSetAttribute"},
      {&cu.graph_destroy, "cuGraphDestroy"},
      {&cu.graph_exec_destroy, "cuGraphExecDestroy"},
      {&cu.stream_destroy, "cuStreamDestroy_v2"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (!(*syms[i].f = (cu_fn)dlsym(lib, syms[i].name))) {
      fprintf(stderr, "libcuda has no %s: its figures are left out\n", syms[i].name);
      return 0;
    }
  return 1;
}

/* GPU 0's primary context, made current. */
static inline void *cuda_context(void) {
  int d;
  void *ctx;
  CHECK_CU(cu.init(0));
  CHECK_CU(cu.device_get(&d, 0));
  CHECK_CU(cu.primary_retain(&ctx, d));
  CHECK_CU(cu.ctx_set(ctx));
  return ctx;
}

/* libcuda's GPU time per launch of a CUDA graph of `launches` launches of `f` captured from a
 * stream: timed with events, `warmup` untimed replays then the median of `reps` (<= 1000). */
/* When set, called after each repeat cuda_graph_us_per_launch times, with the repeat's GPU time
 * in microseconds (nvhcq_bench_real rests the GPU there). */
static void (*bench_after_rep)(double gpu_us);

static inline double cuda_graph_us_per_launch(void *f, nvhcq_dim3 grid, nvhcq_dim3 block,
                                              unsigned shared, void **params, int launches,
                                              int warmup, int reps) {
  void *stream, *graph, *exec, *e0, *e1;
  double t[1000];
  CHECK_CU(cu.stream_create(&stream, 1 /* non-blocking */));
  CHECK_CU(cu.begin_capture(stream, 0 /* global mode */));
  for (int i = 0; i < launches; i++)
    CHECK_CU(cu.launch(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, stream, params,
                       NULL));
  CHECK_CU(cu.end_capture(stream, &graph));
  CHECK_CU(cu.instantiate(&exec, graph, 0ull));
  CHECK_CU(cu.event_create(&e0, 0));
  CHECK_CU(cu.event_create(&e1, 0));
  for (int r = -warmup; r < reps; r++) {
    float ms;
    CHECK_CU(cu.event_record(e0, stream));
    CHECK_CU(cu.graph_launch(exec, stream));
    CHECK_CU(cu.event_record(e1, stream));
    CHECK_CU(cu.event_sync(e1));
    CHECK_CU(cu.event_elapsed(&ms, e0, e1));
    if (r >= 0) t[r] = ms * 1e3 / launches;
    if (bench_after_rep) bench_after_rep(ms * 1e3);
  }
  cu.event_destroy(e0), cu.event_destroy(e1);
  cu.graph_exec_destroy(exec), cu.graph_destroy(graph), cu.stream_destroy(stream);
  return median(t, reps);
}

#endif
