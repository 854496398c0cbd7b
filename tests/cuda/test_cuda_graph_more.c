/* More of the CUDA graph API of nvhcq's libcuda.so.1: user objects and when their destructors run,
 * kernel node attributes, nodes of an executable graph disabled and enabled again, and capture into
 * an existing graph, the calls of an ML framework's graph runner, and many small graphs and one of
 * 1000 launches; on a GPU or the mock (NVHCQ_MOCK=1: its kernels are PTX). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_test.h"

#define N 4096

static CUDA_MEMCPY3D copy_1d(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = src;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = dst;
  c.WidthInBytes = n, c.Height = 1, c.Depth = 1;
  return c;
}

static CUDA_MEMSET_NODE_PARAMS memset_32(CUdeviceptr dst, uint32_t value, size_t n) {
  return (CUDA_MEMSET_NODE_PARAMS){
      .dst = dst, .value = value, .elementSize = 4, .width = n, .height = 1};
}

/* Every one of the n words at d is `want`. */
static int all_are(CUdeviceptr d, uint32_t n, uint32_t want) {
  uint32_t *h = malloc(4 * n);
  int same = cuMemcpyDtoH_v2(h, d, 4 * n) == CUDA_SUCCESS;
  for (uint32_t i = 0; same && i < n; i++) same = h[i] == want;
  free(h);
  return same;
}

static uint32_t first(CUdeviceptr d) {
  uint32_t v = 0;
  TEST_CHECK(cuMemcpyDtoH_v2(&v, d, 4) == CUDA_SUCCESS);
  return v;
}

/* ---- without a device ---- */

/* The new calls answer cuGetProcAddress as driver 580 does: the version picks the symbol. */
static void test_proc_address(void) {
  static const nvcu_proc_case cases[] = {
      {"cuUserObjectCreate", 11030, 0, "cuUserObjectCreate"},
      {"cuUserObjectRelease", 11030, 2, "cuUserObjectRelease"},
      {"cuGraphRetainUserObject", 12000, 0, "cuGraphRetainUserObject"},
      {"cuGraphReleaseUserObject", 12000, 1, "cuGraphReleaseUserObject"},
      {"cuGraphKernelNodeGetAttribute", 11000, 0, "cuGraphKernelNodeGetAttribute"},
      {"cuGraphKernelNodeSetAttribute", 11000, 0, "cuGraphKernelNodeSetAttribute"},
      {"cuGraphKernelNodeCopyAttributes", 11000, 0, "cuGraphKernelNodeCopyAttributes"},
      {"cuGraphNodeSetEnabled", 11060, 0, "cuGraphNodeSetEnabled"},
      {"cuGraphNodeGetEnabled", 11060, 0, "cuGraphNodeGetEnabled"},
      {"cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph"},
      {"cuStreamBeginCaptureToGraph", 12030, 2, "cuStreamBeginCaptureToGraph_ptsz"},
      {"cuStreamUpdateCaptureDependencies", 11030, 0, "cuStreamUpdateCaptureDependencies"},
      {"cuStreamUpdateCaptureDependencies", 11030, 2, "cuStreamUpdateCaptureDependencies_ptsz"},
      {"cuStreamUpdateCaptureDependencies", 12030, 0, "cuStreamUpdateCaptureDependencies_v2"},
      {"cuStreamUpdateCaptureDependencies", 12030, 2, "cuStreamUpdateCaptureDependencies_v2_ptsz"},
  };
  check_proc_cases(cases, sizeof cases / sizeof cases[0]);
}

/* ---- user objects ---- */

static int destroyed;

static void count_destroy(void *p) {
  (void)p;
  destroyed++;
}

/* A destructor that needs the library from another thread: it would never return if the thread
 * releasing the last reference held the library's lock. */
static CUcontext destroy_ctx;
static int other_thread_result = -1;

static void *sync_from_thread(void *p) {
  (void)p;
  CUresult r = cuCtxSetCurrent(destroy_ctx);
  if (!r) r = cuCtxSynchronize();
  other_thread_result = (int)r;
  return NULL;
}

static void destroy_calling_cuda(void *p) {
  pthread_t t;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  if (pthread_create(&t, NULL, sync_from_thread, p)) return;
  if (pthread_timedjoin_np(t, NULL, &until)) {
    other_thread_result = -2; /* deadlocked: the thread is left blocked */
    return;
  }
  destroyed++;
}

static void test_user_objects(void) {
  NEED_DEVICE();
  CUuserObject o;
  TEST_CHECK(cuUserObjectCreate(&o, NULL, count_destroy, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuUserObjectCreate(&o, NULL, count_destroy, 0, 1) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuUserObjectCreate(&o, NULL, NULL, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  /* the caller's references alone */
  destroyed = 0;
  OK(cuUserObjectCreate(&o, NULL, count_destroy, 2, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  OK(cuUserObjectRetain(o, 3));
  OK(cuUserObjectRelease(o, 4));
  TEST_CHECK(destroyed == 0);
  OK(cuUserObjectRelease(o, 1));
  TEST_CHECK(destroyed == 1);

  /* a graph's references, its clone's, an executable graph's */
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 4 * N));
  destroyed = 0;
  OK(cuUserObjectCreate(&o, NULL, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CUgraph g, clone;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphRetainUserObject(g, o, 2, 0));
  TEST_CHECK(cuGraphRetainUserObject(g, o, 1, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphReleaseUserObject(g, o, 3) == CUDA_ERROR_INVALID_VALUE); /* holds 2 */
  OK(cuGraphReleaseUserObject(g, o, 1));
  OK(cuUserObjectRelease(o, 1)); /* now the graph's one reference keeps it */
  TEST_CHECK(destroyed == 0);
  CUgraphNode m;
  CUDA_MEMSET_NODE_PARAMS mp = memset_32(d, 0x5a5a, N);
  OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, NULL));
  OK(cuGraphClone(&clone, g));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(clone));
  TEST_CHECK_MSG(destroyed == 0, "destroyed %d times while the executable graph lives", destroyed);
  OK(cuGraphLaunch(x, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuGraphExecDestroy(x)); /* after its launches complete */
  TEST_CHECK_MSG(destroyed == 1, "destroyed %d times, want once", destroyed);
  TEST_CHECK(all_are(d, N, 0x5a5a));

  /* moved references; the last one goes from cuGraphExecDestroy, whose destructor uses CUDA on
   * another thread */
  destroyed = 0;
  OK(cuCtxGetCurrent(&destroy_ctx));
  OK(cuUserObjectCreate(&o, NULL, destroy_calling_cuda, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphRetainUserObject(g, o, 1, CU_GRAPH_USER_OBJECT_MOVE));
  OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, NULL));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphDestroy(g));
  TEST_CHECK(destroyed == 0);
  OK(cuGraphLaunch(x, NULL));
  OK(cuGraphExecDestroy(x));
  TEST_CHECK_MSG(destroyed == 1 && other_thread_result == CUDA_SUCCESS,
                 "destructor ran %d times, its thread's CUDA call gave %d", destroyed,
                 other_thread_result);
  OK(cuMemFree_v2(d));
}

/* ---- disabled nodes ---- */

/* m1 (b = 1) -> c (a -> c) -> c2 (b -> e) and m2 (f = 9) after c: disabling c leaves c's buffer
 * alone while what follows still runs in order; changed while disabled, c runs with the change
 * once enabled again; the same for a memset node. */
static void test_enable_disable(void) {
  NEED_DEVICE();
  CUdeviceptr a, a2, b, c, e, f;
  CUdeviceptr *bufs[] = {&a, &a2, &b, &c, &e, &f};
  for (int i = 0; i < 6; i++) OK(cuMemAlloc_v2(bufs[i], 4 * N));
  OK(cuMemsetD32_v2(a, 0xa, N));
  OK(cuMemsetD32_v2(a2, 0xa2, N));
  OK(cuMemsetD32_v2(c, 0, N));
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode m1, cn, c2, m2, empty;
  CUDA_MEMSET_NODE_PARAMS p1 = memset_32(b, 1, N), p2 = memset_32(f, 9, N);
  CUDA_MEMCPY3D cp = copy_1d(c, a, 4 * N), cp2 = copy_1d(e, b, 4 * N);
  OK(cuGraphAddMemsetNode(&m1, g, NULL, 0, &p1, NULL));
  OK(cuGraphAddMemcpyNode(&cn, g, &m1, 1, &cp, NULL));
  OK(cuGraphAddMemcpyNode(&c2, g, &cn, 1, &cp2, NULL));
  OK(cuGraphAddMemsetNode(&m2, g, &cn, 1, &p2, NULL));
  OK(cuGraphAddEmptyNode(&empty, g, &m2, 1));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  unsigned int on = 7;
  OK(cuGraphNodeGetEnabled(x, cn, &on));
  TEST_CHECK(on == 1);
  TEST_CHECK(cuGraphNodeSetEnabled(x, empty, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphNodeGetEnabled(x, empty, &on) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphNodeGetEnabled(x, cn, NULL) == CUDA_ERROR_INVALID_VALUE);

  OK(cuGraphNodeSetEnabled(x, cn, 0));
  OK(cuGraphNodeGetEnabled(x, cn, &on));
  TEST_CHECK(on == 0);
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(c, N, 0), "disabled copy ran: c[0] = 0x%x", first(c));
  TEST_CHECK_MSG(all_are(e, N, 1) && all_are(f, N, 9), "after a disabled node: e 0x%x, f 0x%x",
                 first(e), first(f));

  /* changed while disabled, then enabled: the new source */
  CUDA_MEMCPY3D cp_new = copy_1d(c, a2, 4 * N);
  OK(cuGraphExecMemcpyNodeSetParams(x, cn, &cp_new, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK(all_are(c, N, 0));
  OK(cuGraphNodeSetEnabled(x, cn, 1));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(c, N, 0xa2), "re-enabled copy: c[0] = 0x%x, want 0xa2", first(c));

  /* a memset node: disabled, its value changed, enabled */
  OK(cuMemsetD32_v2(f, 0, N));
  OK(cuGraphNodeSetEnabled(x, m2, 0));
  CUDA_MEMSET_NODE_PARAMS p3 = memset_32(f, 33, N);
  OK(cuGraphExecMemsetNodeSetParams(x, m2, &p3, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(f, N, 0), "disabled memset wrote 0x%x", first(f));
  OK(cuGraphNodeSetEnabled(x, m2, 1));
  OK(cuGraphNodeSetEnabled(x, m2, 1)); /* already enabled: nothing changes */
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(f, N, 33), "re-enabled memset: f[0] = %u, want 33", first(f));
  /* variables still work after recording again */
  CUDA_MEMSET_NODE_PARAMS p4 = memset_32(b, 4, N);
  OK(cuGraphExecMemsetNodeSetParams(x, m1, &p4, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(e, N, 4), "e[0] = %u after m1's update, want 4", first(e));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  for (int i = 0; i < 6; i++) OK(cuMemFree_v2(*bufs[i]));
}

/* ---- several streams in one capture ---- */

/* Whether node n depends on the nodes in want (any order), and on `extra` more. */
static int deps_are(CUgraphNode n, const CUgraphNode *want, size_t count, size_t extra) {
  CUgraphNode got[8];
  size_t k = 8;
  if (cuGraphNodeGetDependencies(n, got, &k) != CUDA_SUCCESS || k != count + extra) return 0;
  for (size_t i = 0; i < count; i++) {
    size_t j = 0;
    while (j < k && got[j] != want[i]) j++;
    if (j == k) return 0;
  }
  return 1;
}

/* s0 forks to s1 and s2 through an event, they join back through two more: the diamond A -> B, C
 * -> D, run with the values it computes. Then the refusals: ending the capture on a stream that
 * joined it, a stream not joined back, a wait for an event of a capture that has ended. */
static void test_capture_fork_join(void) {
  NEED_DEVICE();
  CUdeviceptr a, b, c, d;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&b, 4 * N));
  OK(cuMemAlloc_v2(&c, 4 * N));
  OK(cuMemAlloc_v2(&d, 4 * N));
  CUstream s0, s1, s2, s3;
  OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
  CUevent fork, j1, j2;
  OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  OK(cuEventCreate(&j1, CU_EVENT_DISABLE_TIMING));
  OK(cuEventCreate(&j2, CU_EVENT_DISABLE_TIMING));
  OK(cuStreamBeginCapture_v2(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemsetD32Async(a, 1, N, s0));
  OK(cuEventRecord(fork, s0));
  OK(cuStreamWaitEvent(s1, fork, 0));
  OK(cuStreamWaitEvent(s2, fork, 0));
  OK(cuStreamWaitEvent(s3, fork, 0)); /* joins, then goes without work */
  OK(cuStreamDestroy_v2(s3));
  CUstreamCaptureStatus cs;
  cuuint64_t id0 = 0, id1 = 1;
  OK(cuStreamGetCaptureInfo(s0, &cs, &id0));
  OK(cuStreamGetCaptureInfo(s1, &cs, &id1));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && id0 == id1);
  OK(cuMemcpyDtoDAsync_v2(b, a, 4 * N, s1));
  OK(cuMemsetD32Async(c, 3, N, s2));
  OK(cuEventRecord(j1, s1));
  OK(cuEventRecord(j2, s2));
  OK(cuStreamWaitEvent(s0, j1, 0));
  OK(cuStreamWaitEvent(s0, j2, 0));
  OK(cuMemcpyDtoDAsync_v2(d, b, 4 * N, s0));
  CUgraph g;
  TEST_CHECK(cuStreamEndCapture(s1, &g) == CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  OK(cuStreamEndCapture(s0, &g));
  OK(cuStreamIsCapturing(s1, &cs));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
  CUgraphNode nodes[8];
  size_t count = 8;
  OK(cuGraphGetNodes(g, nodes, &count));
  TEST_CHECK_MSG(count == 4, "%zu nodes, want 4", count);
  if (count == 4) {
    TEST_CHECK(deps_are(nodes[0], NULL, 0, 0));
    TEST_CHECK(deps_are(nodes[1], &nodes[0], 1, 0) && deps_are(nodes[2], &nodes[0], 1, 0));
    /* s0 waited for both after its own A: D depends on B and C, and on A (a wait adds to what
     * the stream's next node depends on) */
    TEST_CHECK(deps_are(nodes[3], &nodes[1], 2, 1));
  }
  OK(cuMemsetD32_v2(d, 0, N));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, s0));
  OK(cuStreamSynchronize(s0));
  TEST_CHECK_MSG(all_are(d, N, 1) && all_are(c, N, 3), "d[0] %u, c[0] %u", first(d), first(c));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  /* s1's work never joined back: the capture is invalidated, every stream out of it */
  OK(cuStreamBeginCapture_v2(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemsetD32Async(a, 4, N, s0));
  OK(cuEventRecord(fork, s0));
  OK(cuStreamWaitEvent(s1, fork, 0));
  OK(cuMemsetD32Async(b, 5, N, s1));
  TEST_CHECK(cuStreamEndCapture(s0, &g) == CUDA_ERROR_STREAM_CAPTURE_UNJOINED && g == NULL);
  OK(cuStreamIsCapturing(s1, &cs));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
  /* the event stands for a capture that has ended */
  TEST_CHECK(cuStreamWaitEvent(s2, fork, 0) == CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  OK(cuEventRecord(fork, s0)); /* recorded again outside a capture: an event like any */
  OK(cuStreamWaitEvent(s2, fork, 0));
  OK(cuStreamSynchronize(s2));
  OK(cuEventDestroy_v2(fork));
  OK(cuEventDestroy_v2(j1));
  OK(cuEventDestroy_v2(j2));
  OK(cuStreamDestroy_v2(s0));
  OK(cuStreamDestroy_v2(s1));
  OK(cuStreamDestroy_v2(s2));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(c));
  OK(cuMemFree_v2(d));
}

/* ---- capture into an existing graph ---- */

static void test_capture_to_graph(void) {
  NEED_DEVICE();
  CUdeviceptr b, c, e;
  OK(cuMemAlloc_v2(&b, 4 * N));
  OK(cuMemAlloc_v2(&c, 4 * N));
  OK(cuMemAlloc_v2(&e, 4 * N));
  OK(cuMemsetD32_v2(c, 0, N));
  OK(cuMemsetD32_v2(e, 0, N));
  CUgraph g, other;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphCreate(&other, 0));
  CUgraphNode m, foreign, m3;
  CUDA_MEMSET_NODE_PARAMS mp = memset_32(b, 5, N);
  OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, NULL));
  OK(cuGraphAddEmptyNode(&foreign, other, NULL, 0));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  TEST_CHECK(cuStreamBeginCaptureToGraph(s, g, &foreign, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
             CUDA_ERROR_INVALID_VALUE);
  CUgraphEdgeData prog = {.type = 1}; /* programmatic: not supported */
  TEST_CHECK(cuStreamBeginCaptureToGraph(s, g, &m, &prog, 1, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
             CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(cuStreamUpdateCaptureDependencies(s, &m, 1, 0) == CUDA_ERROR_ILLEGAL_STATE);
  CUgraphEdgeData plain = {0};
  OK(cuStreamBeginCaptureToGraph(s, g, &m, &plain, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus cs;
  CUgraph cg = NULL;
  const CUgraphNode *deps = NULL;
  const CUgraphEdgeData *edges = NULL;
  size_t nd = 0;
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, &cg, &deps, &edges, &nd));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && cg == g && nd == 1 && deps[0] == m && edges &&
             edges[0].type == 0);
  OK(cuMemcpyDtoDAsync_v2(c, b, 4 * N, s)); /* c = b, after m */
  /* the next node after m and the copy: m3 (e = 7) added by hand, then a copy e -> b after both */
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, &deps, NULL, &nd));
  TEST_CHECK(nd == 1 && deps[0] != m);
  CUgraphNode copy1 = deps[0];
  CUDA_MEMSET_NODE_PARAMS p3 = memset_32(e, 7, N);
  OK(cuGraphAddMemsetNode(&m3, g, &m, 1, &p3, NULL));
  TEST_CHECK(cuStreamUpdateCaptureDependencies(s, &foreign, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamUpdateCaptureDependencies(s, &m3, 1, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamUpdateCaptureDependencies_v2(s, &m3, &prog, 1, 0) == CUDA_ERROR_NOT_SUPPORTED);
  CUgraphNode add[2] = {m3, copy1}; /* copy1 is in the set already: once */
  OK(cuStreamUpdateCaptureDependencies_v2(s, add, NULL, 2, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, &deps, NULL, &nd));
  TEST_CHECK_MSG(nd == 2 && deps[0] == copy1 && deps[1] == m3, "%zu dependencies", nd);
  OK(cuMemcpyDtoDAsync_v2(b, e, 4 * N, s)); /* b = e = 7, after the first copy read b */
  /* SET: the next one depends on m alone */
  OK(cuStreamUpdateCaptureDependencies(s, &m, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, &deps, NULL, &nd));
  TEST_CHECK(nd == 1 && deps[0] == m);
  OK(cuStreamUpdateCaptureDependencies(s, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, &deps, NULL, &nd));
  TEST_CHECK(nd == 0);
  CUgraph out = NULL;
  OK(cuStreamEndCapture(s, &out));
  TEST_CHECK(out == g);
  size_t count = 0;
  OK(cuGraphGetNodes(g, NULL, &count));
  TEST_CHECK_MSG(count == 4, "%zu nodes, want m, m3 and two copies", count);
  CUgraphNode nodes[4], cdeps[2];
  OK(cuGraphGetNodes(g, nodes, &count));
  size_t n1 = 2;
  OK(cuGraphNodeGetDependencies(copy1, cdeps, &n1));
  TEST_CHECK(n1 == 1 && cdeps[0] == m);
  n1 = 2;
  OK(cuGraphNodeGetDependencies(nodes[3], cdeps, &n1));
  TEST_CHECK(n1 == 2 && cdeps[0] == copy1 && cdeps[1] == m3);
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(all_are(c, N, 5) && all_are(e, N, 7) && all_are(b, N, 7),
                 "c[0] %u (want 5), e[0] %u (7), b[0] %u (7)", first(c), first(e), first(b));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(other));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(c));
  OK(cuMemFree_v2(e));
}

/* ---- kernel nodes ---- */

static CUfunction load_add(CUmodule *mod) {
  CUfunction f = NULL;
  if (cuModuleLoadData(mod, cuda_test_add_ptx()) != CUDA_SUCCESS) return NULL;
  if (cuModuleGetFunction(&f, *mod, "add_value") != CUDA_SUCCESS) return NULL;
  return f;
}

/* add_value loaded, and N words of device memory set to 0 (NULL and a failed check if not). */
static CUfunction load_add_zeroed(CUmodule *mod, CUdeviceptr *d) {
  CUfunction f = load_add(mod);
  TEST_CHECK_MSG(f != NULL, "PTX load (nvJitLink needed)");
  if (!f) return NULL;
  TEST_CHECK(cuMemAlloc_v2(d, 4 * N) == CUDA_SUCCESS);
  TEST_CHECK(cuMemsetD32_v2(*d, 0, N) == CUDA_SUCCESS);
  return f;
}

static CUDA_KERNEL_NODE_PARAMS add_params(CUfunction f, void **params) {
  return (CUDA_KERNEL_NODE_PARAMS){.func = f,
                                   .gridDimX = N / 128,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 128,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .kernelParams = params};
}

/* Attributes set, read back, copied, kept across new parameters, and those of a captured
 * cuLaunchKernelEx; nothing here launches a kernel. */
static void test_kernel_attributes(void) {
  NEED_DEVICE();
  CUmodule mod;
  CUfunction f = load_add(&mod);
  if (!f) TEST_SKIP("the add_value PTX does not load here (nvJitLink needed)");
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 4 * N));
  uint32_t v = 1, n = N;
  void *params[] = {&d, &v, &n};
  CUDA_KERNEL_NODE_PARAMS p = add_params(f, params);
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode k1, k2, e;
  OK(cuGraphAddKernelNode_v2(&k1, g, NULL, 0, &p));
  OK(cuGraphAddKernelNode_v2(&k2, g, NULL, 0, &p));
  OK(cuGraphAddEmptyNode(&e, g, NULL, 0));
  CUkernelNodeAttrValue val, got;
  memset(&got, 0xff, sizeof got);
  OK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
  TEST_CHECK(got.priority == 0);
  memset(&val, 0, sizeof val);
  val.priority = -1;
  OK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &val));
  memset(&val, 0, sizeof val);
  val.cooperative = 1;
  OK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &val));
  memset(&val, 0, sizeof val);
  val.clusterDim.x = 2, val.clusterDim.y = 1, val.clusterDim.z = 1;
  OK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &val));
  memset(&val, 0, sizeof val);
  val.accessPolicyWindow.base_ptr = (void *)(uintptr_t)d;
  val.accessPolicyWindow.num_bytes = 4096;
  val.accessPolicyWindow.hitRatio = 0.5f;
  val.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  OK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &val));
  val.clusterSchedulingPolicyPreference = 7;
  TEST_CHECK(cuGraphKernelNodeSetAttribute(k1,
                                           CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                                           &val) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &val) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphKernelNodeSetAttribute(k1, (CUkernelNodeAttrID)13, &val) ==
             CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(cuGraphKernelNodeSetAttribute(e, CU_LAUNCH_ATTRIBUTE_PRIORITY, &val) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  /* new parameters keep the attributes */
  uint32_t v2 = 2;
  void *params2[] = {&d, &v2, &n};
  CUDA_KERNEL_NODE_PARAMS p2 = add_params(f, params2);
  OK(cuGraphKernelNodeSetParams_v2(k1, &p2));
  OK(cuGraphKernelNodeCopyAttributes(k2, k1));
  CUgraphNode both[2] = {k1, k2};
  for (int i = 0; i < 2; i++) {
    OK(cuGraphKernelNodeGetAttribute(both[i], CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
    TEST_CHECK_MSG(got.priority == -1, "node %d: priority %d", i, got.priority);
    OK(cuGraphKernelNodeGetAttribute(both[i], CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &got));
    TEST_CHECK(got.cooperative == 1);
    OK(cuGraphKernelNodeGetAttribute(both[i], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &got));
    TEST_CHECK(got.clusterDim.x == 2 && got.clusterDim.y == 1 && got.clusterDim.z == 1);
    OK(cuGraphKernelNodeGetAttribute(both[i], CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &got));
    TEST_CHECK(got.accessPolicyWindow.base_ptr == (void *)(uintptr_t)d &&
               got.accessPolicyWindow.num_bytes == 4096 &&
               got.accessPolicyWindow.hitProp == CU_ACCESS_PROPERTY_PERSISTING);
  }
  /* a captured cuLaunchKernelEx: its node reports the launch's attributes */
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY, attrs[0].value.priority = -2;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, attrs[1].value.memSyncDomain = 1;
  CUlaunchConfig lc = {.gridDimX = N / 128,
                       .gridDimY = 1,
                       .gridDimZ = 1,
                       .blockDimX = 128,
                       .blockDimY = 1,
                       .blockDimZ = 1,
                       .hStream = s,
                       .attrs = attrs,
                       .numAttrs = 2};
  OK(cuLaunchKernelEx(&lc, f, params, NULL));
  CUgraph cg;
  OK(cuStreamEndCapture(s, &cg));
  CUgraphNode cap;
  size_t one = 1;
  OK(cuGraphGetNodes(cg, &cap, &one));
  OK(cuGraphKernelNodeGetAttribute(cap, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
  TEST_CHECK_MSG(got.priority == -2, "captured priority %d", got.priority);
  OK(cuGraphKernelNodeGetAttribute(cap, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &got));
  TEST_CHECK(got.memSyncDomain == 1);
  /* the captured cooperative node instantiates, records again when disabled, enabled or given
   * new parameters (nothing launched here) */
  memset(&val, 0, sizeof val);
  val.cooperative = 1;
  OK(cuGraphKernelNodeSetAttribute(cap, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &val));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, cg, 0));
  OK(cuGraphNodeSetEnabled(x, cap, 0));
  OK(cuGraphExecKernelNodeSetParams_v2(x, cap, &p2));
  OK(cuGraphNodeSetEnabled(x, cap, 1));
  OK(cuGraphExecKernelNodeSetParams_v2(x, cap, &p));
  unsigned int on = 0;
  OK(cuGraphNodeGetEnabled(x, cap, &on));
  TEST_CHECK(on == 1);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(cg));
  OK(cuStreamDestroy_v2(s));
  OK(cuGraphDestroy(g));
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod));
}

/* On a GPU: a cooperative kernel node runs (recorded as cuLaunchKernelEx would launch it), takes
 * new parameters, and a kernel node disabled and enabled again; a cooperative node beside copy
 * nodes. */
static void test_kernel_nodes_run(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUdeviceptr d;
  CUfunction f = load_add_zeroed(&mod, &d);
  if (!f) return;
  uint32_t v = 1, n = N, v10 = 10, v100 = 100;
  void *params[] = {&d, &v, &n}, *params10[] = {&d, &v10, &n}, *params100[] = {&d, &v100, &n};
  CUDA_KERNEL_NODE_PARAMS p = add_params(f, params);
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode coop, plain;
  OK(cuGraphAddKernelNode_v2(&coop, g, NULL, 0, &p));
  CUkernelNodeAttrValue val;
  memset(&val, 0, sizeof val);
  val.cooperative = 1;
  OK(cuGraphKernelNodeSetAttribute(coop, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &val));
  CUDA_KERNEL_NODE_PARAMS p10 = add_params(f, params10);
  OK(cuGraphAddKernelNode_v2(&plain, g, &coop, 1, &p10));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(d, N, 11), "d[0] = %u, want 1 + 10", first(d));
  OK(cuGraphNodeSetEnabled(x, plain, 0));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(d, N, 12), "d[0] = %u, want 11 + 1 (plain disabled)", first(d));
  CUDA_KERNEL_NODE_PARAMS p100 = add_params(f, params100);
  OK(cuGraphExecKernelNodeSetParams_v2(x, plain, &p100)); /* while disabled */
  OK(cuGraphExecKernelNodeSetParams_v2(x, coop, &p10));   /* recorded again */
  OK(cuGraphNodeSetEnabled(x, plain, 1));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(all_are(d, N, 122), "d[0] = %u, want 12 + 10 + 100", first(d));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  /* beside memset and memcpy nodes (a graph across both channels): memset d = 5, the cooperative
   * node adds 1, a copy takes d to e */
  CUdeviceptr e;
  OK(cuMemAlloc_v2(&e, 4 * N));
  OK(cuGraphCreate(&g, 0));
  CUgraphNode set, cp;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(d, 5, N);
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  OK(cuGraphAddKernelNode_v2(&coop, g, &set, 1, &p));
  OK(cuGraphKernelNodeSetAttribute(coop, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &val));
  CUDA_MEMCPY3D c = copy_1d(e, d, 4 * N);
  OK(cuGraphAddMemcpyNode(&cp, g, &coop, 1, &c, NULL));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int round = 0; round < 2; round++) {
    OK(cuMemsetD32_v2(e, 0, N));
    OK(cuGraphLaunch(x, NULL));
    OK(cuCtxSynchronize());
    TEST_CHECK_MSG(all_are(e, N, 6), "round %d: e[0] = %u, want 5 + 1", round, first(e));
  }
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuMemFree_v2(e));
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod));
}

/* As tinygrad's CUDA graphs do it: v1 kernel nodes whose arguments are one block passed through
 * `extra`, a memcpy node, the argument block rewritten in place and given again with
 * cuGraphExecKernelNodeSetParams and cuGraphExecMemcpyNodeSetParams; the graph built, run and
 * destroyed many times (each instantiation records its own commands); a grid with a zero dimension
 * refused as CUDA refuses it. */
static void test_framework_graphs(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f = load_add(&mod);
  TEST_CHECK_MSG(f != NULL, "PTX load (nvJitLink needed)");
  if (!f) return;
  CUcontext ctx;
  OK(cuCtxGetCurrent(&ctx));
  CUdeviceptr a, b, c3;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&b, 4 * N));
  OK(cuMemAlloc_v2(&c3, 4 * N));
  OK(cuMemsetD32_v2(a, 0, N));
  struct {
    CUdeviceptr p;
    uint32_t v, n;
  } args = {a, 1, N};
  size_t args_size = sizeof args;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &args_size,
                   CU_LAUNCH_PARAM_END};
  CUDA_KERNEL_NODE_PARAMS_v1 kp = {.func = f,
                                   .gridDimX = N / 128,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 128,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .extra = extra};
  uint32_t want = 0;
  for (int round = 0; round < 50; round++) {
    CUgraph g;
    CUgraphNode k1, k2, cp;
    OK(cuGraphCreate(&g, 0));
    args.v = 1;
    OK(cuGraphAddKernelNode(&k1, g, NULL, 0, &kp));
    OK(cuGraphAddKernelNode(&k2, g, &k1, 1, &kp));
    CUDA_MEMCPY3D c = copy_1d(b, a, 4 * N);
    OK(cuGraphAddMemcpyNode(&cp, g, &k2, 1, &c, ctx));
    CUgraphExec x;
    OK(cuGraphInstantiate_v2(&x, g, NULL, NULL, 0));
    OK(cuGraphLaunch(x, NULL));
    want += 2; /* k1 and k2 add 1 to a, the copy puts a into b */
    /* the block rewritten where it is (k2 adds `round` now), the copy sent to c3 */
    args.v = (uint32_t)round;
    OK(cuGraphExecKernelNodeSetParams(x, k2, &kp));
    c = copy_1d(c3, a, 4 * N);
    OK(cuGraphExecMemcpyNodeSetParams(x, cp, &c, ctx));
    OK(cuGraphLaunch(x, NULL));
    OK(cuCtxSynchronize());
    TEST_CHECK_MSG(all_are(b, N, want), "round %d: b[0] = %u, want %u", round, first(b), want);
    want += 1 + (uint32_t)round;
    TEST_CHECK_MSG(all_are(a, N, want), "round %d: a[0] = %u, want %u", round, first(a), want);
    TEST_CHECK_MSG(all_are(c3, N, want), "round %d: c3[0] = %u, want %u", round, first(c3), want);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
  }
  TEST_CHECK(cuLaunchKernel(f, 0, 1, 1, 128, 1, 1, 0, NULL, NULL, extra) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(c3));
  OK(cuModuleUnload(mod));
}

/* One recording of 1000 launches (its launch memory spans chunks of several sizes), replayed.
 * Each launch is one block over the first ONE_BLOCK words: launch memory does not depend on the
 * grid, and the mock runs 3000 launches over N words in 20 s, past a wait's bound. */
static void test_long_capture(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUdeviceptr d;
  CUfunction f = load_add_zeroed(&mod, &d);
  if (!f) return;
  enum { ONE_BLOCK = 256 };
  uint32_t n = ONE_BLOCK, v[1000];
  void *params[1000][3];
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  uint32_t sum = 0;
  for (int i = 0; i < 1000; i++) {
    v[i] = (uint32_t)i % 7 + 1, sum += v[i];
    params[i][0] = &d, params[i][1] = &v[i], params[i][2] = &n;
    OK(cuLaunchKernel(f, 1, 1, 1, ONE_BLOCK, 1, 1, 0, s, params[i], NULL));
  }
  CUgraph g;
  CUgraphExec x;
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int r = 0; r < 3; r++) OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(all_are(d, ONE_BLOCK, 3 * sum), "d[0] = %u, want %u", first(d), 3 * sum);
  TEST_CHECK(all_are(d + 4 * ONE_BLOCK, N - ONE_BLOCK, 0));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod));
}

/* ---- memory nodes ---- */

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.bytesize = bytes;
  return p;
}

static uint64_t graph_mem_used(void) {
  cuuint64_t v = 0;
  OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v));
  return v;
}

/* An allocation node, a memset into its memory and a free node, launched twice: the memory is
 * there for the nodes between; its parameters read back; what CUDA refuses for such graphs. */
static void test_mem_nodes_explicit(void) {
  NEED_DEVICE();
  uint64_t before = graph_mem_used();
  CUgraph g;
  CUgraphNode a, m, f, extra;
  CUgraphExec x, x2;
  OK(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(4 * N);
  OK(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap));
  TEST_CHECK(ap.dptr != 0);
  TEST_CHECK(graph_mem_used() == before + 4 * N);
  CUDA_MEMSET_NODE_PARAMS mp = memset_32(ap.dptr, 0x5eed, N);
  OK(cuGraphAddMemsetNode(&m, g, &a, 1, &mp, NULL));
  OK(cuGraphAddMemFreeNode(&f, g, &m, 1, ap.dptr));
  TEST_CHECK(cuGraphAddMemFreeNode(&extra, g, &m, 1, ap.dptr) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphAddMemFreeNode(&extra, g, &m, 1, ap.dptr + 4) == CUDA_ERROR_INVALID_VALUE);
  CUDA_MEM_ALLOC_NODE_PARAMS got;
  CUdeviceptr freed = 0;
  CUgraphNodeType type;
  OK(cuGraphMemAllocNodeGetParams(a, &got));
  TEST_CHECK(got.dptr == ap.dptr && got.bytesize == 4 * N);
  OK(cuGraphMemFreeNodeGetParams(f, &freed));
  TEST_CHECK(freed == ap.dptr);
  OK(cuGraphNodeGetType(a, &type));
  TEST_CHECK(type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CUgraph clone;
  TEST_CHECK(cuGraphClone(&clone, g) == CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(cuGraphDestroyNode(m) == CUDA_ERROR_NOT_SUPPORTED);
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  TEST_CHECK(cuGraphInstantiateWithFlags(&x2, g, 0) == CUDA_ERROR_NOT_SUPPORTED);
  for (int i = 0; i < 2; i++) {
    OK(cuGraphLaunch(x, NULL));
    OK(cuCtxSynchronize());
    TEST_CHECK(all_are(ap.dptr, N, 0x5eed)); /* still the graph's: nvhcq keeps it mapped */
  }
  TEST_CHECK(cuMemFree_v2(ap.dptr) == CUDA_ERROR_INVALID_VALUE); /* its graph frees it */
  OK(cuGraphExecDestroy(x));
  TEST_CHECK(graph_mem_used() == before + 4 * N); /* the graph still holds it */
  OK(cuGraphDestroy(g));
  TEST_CHECK(graph_mem_used() == before);
}

/* cuMemAllocAsync and a memset captured, the allocation left to the caller: it is usable after
 * the launch, freed with cuMemFreeAsync, and a second launch has it again; a free captured later
 * makes a free node. */
static void test_mem_nodes_captured(void) {
  NEED_DEVICE();
  uint64_t before = graph_mem_used();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0, q = 0;
  CUgraph g, g2;
  CUgraphExec x, x2;
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemAllocAsync(&p, 4 * N, s));
  OK(cuMemsetD32Async(p, 77, N, s));
  OK(cuStreamEndCapture(s, &g));
  TEST_CHECK(p != 0 && graph_mem_used() == before + 4 * N);
  size_t count = 0;
  OK(cuGraphGetNodes(g, NULL, &count));
  TEST_CHECK(count == 2);
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int i = 0; i < 2; i++) {
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    TEST_CHECK(all_are(p, N, 77));
    OK(cuMemsetD32_v2(p, 5, N)); /* the caller's between launches */
    OK(cuMemFreeAsync(p, s));    /* and freed, as CUDA lets it be */
    OK(cuStreamSynchronize(s));
  }
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemAllocAsync(&q, 4 * N, s));
  OK(cuMemsetD32Async(q, 9, N, s));
  OK(cuMemFreeAsync(q, s));
  OK(cuStreamEndCapture(s, &g2));
  OK(cuGraphGetNodes(g2, NULL, &count));
  TEST_CHECK(count == 3);
  OK(cuGraphInstantiateWithFlags(&x2, g2, 0));
  OK(cuGraphLaunch(x2, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(cuMemFreeAsync(q, s) == CUDA_ERROR_INVALID_VALUE); /* its graph frees it */
  OK(cuGraphExecDestroy(x));
  OK(cuGraphExecDestroy(x2));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(g2));
  TEST_CHECK(graph_mem_used() == before);
  cuuint64_t high = 1, zero = 0;
  OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high));
  TEST_CHECK(high == before);
  OK(cuDeviceGraphMemTrim(0));
  OK(cuStreamDestroy_v2(s));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_user_objects), TEST(test_enable_disable),
          TEST(test_capture_to_graph), TEST(test_capture_fork_join), TEST(test_kernel_attributes),
          TEST(test_kernel_nodes_run), TEST(test_framework_graphs), TEST(test_long_capture),
          TEST(test_mem_nodes_explicit), TEST(test_mem_nodes_captured))
