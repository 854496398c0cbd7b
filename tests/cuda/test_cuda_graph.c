/* The CUDA graph API of nvhcq's libcuda.so.1: edges read back exactly, clones, DOT output, host,
 * event and child graph nodes run in graph order, and executable-graph updates whose replays show
 * the new values; copies on a GPU or the mock (NVHCQ_MOCK=1), kernels on a GPU. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test.h"

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

static uint32_t read_u32(CUdeviceptr d, size_t index) {
  uint32_t v = 0;
  TEST_CHECK(cuMemcpyDtoH_v2(&v, d + 4 * index, 4) == CUDA_SUCCESS);
  return v;
}

/* ---- without a device ---- */

/* The new calls answer cuGetProcAddress as driver 580 does: the version picks the symbol. */
static void test_proc_address(void) {
  static const nvcu_proc_case cases[] = {
      {"cuGraphAddDependencies", 12000, 0, "cuGraphAddDependencies"},
      {"cuGraphAddDependencies", 12030, 0, "cuGraphAddDependencies_v2"},
      {"cuGraphGetEdges", 12030, 0, "cuGraphGetEdges_v2"},
      {"cuGraphNodeGetDependencies", 11000, 0, "cuGraphNodeGetDependencies"},
      {"cuGraphNodeGetDependentNodes", 12030, 0, "cuGraphNodeGetDependentNodes_v2"},
      {"cuGraphRemoveDependencies", 12030, 0, "cuGraphRemoveDependencies_v2"},
      {"cuGraphExecUpdate", 11000, 0, "cuGraphExecUpdate"},
      {"cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2"},
      {"cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams"},
      {"cuGraphInstantiateWithParams", 12000, 2, "cuGraphInstantiateWithParams_ptsz"},
      {"cuGraphAddNode", 12020, 0, "cuGraphAddNode"},
      {"cuGraphAddNode", 12030, 0, "cuGraphAddNode_v2"},
      {"cuGraphKernelNodeGetParams", 12000, 0, "cuGraphKernelNodeGetParams_v2"},
      {"cuGraphKernelNodeSetParams", 11000, 0, "cuGraphKernelNodeSetParams"},
      {"cuGraphAddHostNode", 10000, 0, "cuGraphAddHostNode"},
      {"cuGraphClone", 10000, 0, "cuGraphClone"},
      {"cuGraphDebugDotPrint", 11030, 0, "cuGraphDebugDotPrint"},
      {"cuGraphExecGetFlags", 12000, 0, "cuGraphExecGetFlags"},
      {"cuGraphExecMemsetNodeSetParams", 10020, 0, "cuGraphExecMemsetNodeSetParams"},
      {"cuGraphAddEventRecordNode", 11010, 0, "cuGraphAddEventRecordNode"},
      {"cuGraphChildGraphNodeGetGraph", 10000, 0, "cuGraphChildGraphNodeGetGraph"},
  };
  check_proc_cases(cases, sizeof cases / sizeof *cases);
}

/* ---- topology ---- */

static void test_edges(void) {
  NEED_DEVICE();
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode a, b, c, d;
  OK(cuGraphAddEmptyNode(&a, g, NULL, 0));
  OK(cuGraphAddEmptyNode(&b, g, NULL, 0));
  OK(cuGraphAddEmptyNode(&c, g, NULL, 0));
  OK(cuGraphAddEmptyNode(&d, g, &a, 1));
  CUgraphNode from[] = {a, b}, to[] = {c, c};
  OK(cuGraphAddDependencies(g, from, to, 2));
  TEST_CHECK(cuGraphAddDependencies(g, from, to, 1) == CUDA_ERROR_INVALID_VALUE); /* exists */
  TEST_CHECK(cuGraphAddDependencies(g, &a, &a, 1) == CUDA_ERROR_INVALID_VALUE);
  size_t n = 0;
  OK(cuGraphGetEdges(g, NULL, NULL, &n));
  TEST_CHECK(n == 3);
  CUgraphNode ef[5], et[5];
  CUgraphEdgeData ed[5];
  memset(ed, 0xff, sizeof ed);
  n = 5;
  OK(cuGraphGetEdges_v2(g, ef, et, ed, &n));
  /* by dependent node in graph order, then in the order the edges were added */
  TEST_CHECK(n == 3 && ef[0] == a && et[0] == c && ef[1] == b && et[1] == c && ef[2] == a &&
             et[2] == d && ef[3] == NULL && et[4] == NULL);
  TEST_CHECK(ed[0].type == 0 && ed[2].from_port == 0 && ed[1].reserved[4] == 0);
  n = 1;
  OK(cuGraphGetEdges(g, ef, et, &n));
  TEST_CHECK(n == 1 && ef[0] == a && et[0] == c);
  CUgraphNode list[4];
  n = 4;
  OK(cuGraphGetRootNodes(g, list, &n));
  TEST_CHECK(n == 2 && list[0] == a && list[1] == b && list[2] == NULL);
  n = 4;
  OK(cuGraphNodeGetDependencies(c, list, &n));
  TEST_CHECK(n == 2 && list[0] == a && list[1] == b);
  n = 4;
  OK(cuGraphNodeGetDependentNodes_v2(a, list, NULL, &n));
  TEST_CHECK(n == 2 && list[0] == c && list[1] == d);
  CUgraphEdgeData prog = {.from_port = 1, .type = 1};
  TEST_CHECK(cuGraphAddDependencies_v2(g, &b, &d, &prog, 1) == CUDA_ERROR_NOT_SUPPORTED);
  /* removal: an edge that is not there is refused, and nothing changes */
  CUgraphNode rf[] = {a, b}, rt[] = {c, d};
  TEST_CHECK(cuGraphRemoveDependencies(g, rf, rt, 2) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphGetEdges(g, NULL, NULL, &n));
  TEST_CHECK(n == 3);
  OK(cuGraphRemoveDependencies_v2(g, &a, &c, NULL, 1));
  n = 4;
  OK(cuGraphNodeGetDependencies_v2(c, list, NULL, &n));
  TEST_CHECK(n == 1 && list[0] == b);
  /* a node's removal takes its edges along */
  OK(cuGraphDestroyNode(b));
  OK(cuGraphGetEdges(g, NULL, NULL, &n));
  TEST_CHECK(n == 1);
  OK(cuGraphGetNodes(g, NULL, &n));
  TEST_CHECK(n == 3);
  n = 4;
  OK(cuGraphGetRootNodes(g, list, &n));
  TEST_CHECK(n == 2 && list[0] == a && list[1] == c);
  /* a cycle: refused at instantiation */
  OK(cuGraphAddDependencies(g, &d, &a, 1));
  CUDA_GRAPH_INSTANTIATE_PARAMS ip = {0};
  CUgraphExec x;
  TEST_CHECK(cuGraphInstantiateWithParams(&x, g, &ip) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
  OK(cuGraphDestroy(g));
}

static void host_noop(void *data) {
  (void)data;
}

static void test_clone(void) {
  NEED_DEVICE();
  CUdeviceptr a, b;
  OK(cuMemAlloc_v2(&a, 256));
  OK(cuMemAlloc_v2(&b, 256));
  CUgraph g, child;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphCreate(&child, 0));
  CUgraphNode cn, set, copy, host, sub, empty;
  OK(cuGraphAddEmptyNode(&cn, child, NULL, 0));
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 7, 64);
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  CUDA_MEMCPY3D cp = copy_1d(b, a, 256);
  OK(cuGraphAddMemcpyNode(&copy, g, &set, 1, &cp, NULL));
  CUDA_HOST_NODE_PARAMS hp = {host_noop, &a};
  OK(cuGraphAddHostNode(&host, g, &copy, 1, &hp));
  OK(cuGraphAddChildGraphNode(&sub, g, &set, 1, child));
  CUgraphNode both[] = {host, sub};
  OK(cuGraphAddEmptyNode(&empty, g, both, 2));
  CUgraph c;
  OK(cuGraphClone(&c, g));
  size_t n0 = 0, n1 = 0;
  OK(cuGraphGetNodes(g, NULL, &n0));
  OK(cuGraphGetNodes(c, NULL, &n1));
  TEST_CHECK(n0 == 5 && n1 == 5);
  CUgraphNode orig[5], cl[5];
  OK(cuGraphGetNodes(g, orig, &n0));
  for (int i = 0; i < 5; i++) {
    OK(cuGraphNodeFindInClone(&cl[i], orig[i], c));
    TEST_CHECK(cl[i] != orig[i]);
    CUgraphNodeType t0, t1;
    OK(cuGraphNodeGetType(orig[i], &t0));
    OK(cuGraphNodeGetType(cl[i], &t1));
    TEST_CHECK(t0 == t1);
  }
  /* the clone's edges are the original's, node for node */
  for (int i = 0; i < 5; i++) {
    CUgraphNode d0[4], d1[4];
    size_t k0 = 4, k1 = 4;
    OK(cuGraphNodeGetDependencies(orig[i], d0, &k0));
    OK(cuGraphNodeGetDependencies(cl[i], d1, &k1));
    TEST_CHECK(k0 == k1);
    for (size_t k = 0; k < k0 && k < k1; k++) {
      CUgraphNode mapped;
      OK(cuGraphNodeFindInClone(&mapped, d0[k], c));
      TEST_CHECK(mapped == d1[k]);
    }
  }
  CUDA_MEMSET_NODE_PARAMS got;
  OK(cuGraphMemsetNodeGetParams(cl[0], &got));
  TEST_CHECK(got.dst == a && got.value == 7 && got.elementSize == 4 && got.width == 64);
  CUDA_MEMCPY3D gc;
  OK(cuGraphMemcpyNodeGetParams(cl[1], &gc));
  TEST_CHECK(!memcmp(&gc, &cp, sizeof cp));
  CUDA_HOST_NODE_PARAMS gh;
  OK(cuGraphHostNodeGetParams(cl[2], &gh));
  TEST_CHECK(gh.fn == host_noop && gh.userData == &a);
  CUgraph cc, oc;
  OK(cuGraphChildGraphNodeGetGraph(cl[3], &cc));
  OK(cuGraphChildGraphNodeGetGraph(sub, &oc));
  TEST_CHECK(cc != oc && oc != child);
  OK(cuGraphGetNodes(cc, NULL, &n1));
  TEST_CHECK(n1 == 1);
  /* nodes the clone does not have */
  CUgraphNode later, found;
  OK(cuGraphAddEmptyNode(&later, g, NULL, 0));
  TEST_CHECK(cuGraphNodeFindInClone(&found, later, c) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphNodeFindInClone(&found, cn, c) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphDestroyNode(cl[4]));
  TEST_CHECK(cuGraphNodeFindInClone(&found, empty, c) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphNodeFindInClone(&found, host, c));
  TEST_CHECK(found == cl[2]);
  OK(cuGraphDestroy(c));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(child));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
}

static void test_dot(void) {
  NEED_DEVICE();
  CUdeviceptr a;
  OK(cuMemAlloc_v2(&a, 64));
  CUgraph g, child;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphCreate(&child, 0));
  CUgraphNode set, host, sub, inner;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 0xabcd, 16);
  OK(cuGraphAddMemsetNode(&inner, child, NULL, 0, &ms, NULL));
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  CUDA_HOST_NODE_PARAMS hp = {host_noop, NULL};
  OK(cuGraphAddHostNode(&host, g, &set, 1, &hp));
  OK(cuGraphAddChildGraphNode(&sub, g, &host, 1, child));
  char path[] = "/tmp/test_cuda_graph_XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  OK(cuGraphDebugDotPrint(g, path, 0));
  char text[8192] = {0};
  FILE *f = fopen(path, "r");
  TEST_CHECK(f != NULL);
  if (f) {
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
  }
  unlink(path);
  TEST_CHECK_MSG(!strncmp(text, "digraph", 7), "%.60s", text);
  TEST_CHECK(strstr(text, "\"n0\" [") && strstr(text, "MEMSET 0") && strstr(text, "HOST 1"));
  TEST_CHECK(strstr(text, "GRAPH 2") && strstr(text, "subgraph \"cluster_n2_\""));
  TEST_CHECK(strstr(text, "\"n2_n0\" [") && strstr(text, "0xabcd"));
  TEST_CHECK(strstr(text, "\"n0\" -> \"n1\";") && strstr(text, "\"n1\" -> \"n2\";"));
  TEST_CHECK(text[strlen(text) - 2] == '}');
  TEST_CHECK(cuGraphDebugDotPrint(g, "/nonexistent/dir/x.dot", 0) == CUDA_ERROR_OPERATING_SYSTEM);
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(child));
  OK(cuMemFree_v2(a));
}

/* ---- host nodes ---- */

enum { N = 1024 };

typedef struct host_seen {
  uint32_t *in;  /* pinned: a memcpy node writes it before the host node runs */
  uint32_t *out; /* pinned: a memcpy node reads it after */
  uint32_t seen, write, calls;
} host_seen;

static void host_step(void *data) {
  host_seen *h = data;
  h->seen = h->in[N - 1];
  for (int i = 0; i < N; i++) h->out[i] = h->write + (uint32_t)i;
  h->calls++;
}

/* memset a -> copy a to pinned `in` -> host node (reads in, writes out) -> copy out to c. */
static void test_host_order(void) {
  NEED_DEVICE();
  CUdeviceptr a, c;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&c, 4 * N));
  host_seen h = {.write = 500};
  OK(cuMemAllocHost_v2((void **)&h.in, 4 * N));
  OK(cuMemAllocHost_v2((void **)&h.out, 4 * N));
  memset(h.in, 0, 4 * N);
  memset(h.out, 0, 4 * N);
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode set, down, host, up;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 0x1234, N);
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  CUDA_MEMCPY3D cp = copy_1d(0, a, 4 * N);
  cp.dstMemoryType = CU_MEMORYTYPE_HOST, cp.dstHost = h.in;
  OK(cuGraphAddMemcpyNode(&down, g, &set, 1, &cp, NULL));
  CUDA_HOST_NODE_PARAMS hp = {host_step, &h};
  TEST_CHECK(cuGraphAddHostNode(&host, g, &down, 1, &(CUDA_HOST_NODE_PARAMS){NULL, NULL}) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphAddHostNode(&host, g, &down, 1, &hp));
  CUgraphNodeType t;
  OK(cuGraphNodeGetType(host, &t));
  TEST_CHECK(t == CU_GRAPH_NODE_TYPE_HOST);
  cp = copy_1d(c, 0, 4 * N);
  cp.srcMemoryType = CU_MEMORYTYPE_HOST, cp.srcHost = h.out;
  OK(cuGraphAddMemcpyNode(&up, g, &host, 1, &cp, NULL));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(h.calls == 1 && h.seen == 0x1234, "calls %u seen 0x%x", h.calls, h.seen);
  TEST_CHECK(read_u32(c, 0) == 500 && read_u32(c, N - 1) == 500 + N - 1);
  /* a second replay after the memset's value changed in the executable graph */
  ms.value = 0x5678;
  OK(cuGraphExecMemsetNodeSetParams(x, set, &ms, NULL));
  h.write = 9000;
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(h.calls == 2 && h.seen == 0x5678, "calls %u seen 0x%x", h.calls, h.seen);
  TEST_CHECK(read_u32(c, 7) == 9007);
  /* the executable graph's host node gets another argument; the graph's own keeps its own */
  host_seen h2 = {.in = h.in, .out = h.out, .write = 70000};
  CUDA_HOST_NODE_PARAMS hp2 = {host_step, &h2};
  OK(cuGraphExecHostNodeSetParams(x, host, &hp2));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(h.calls == 2 && h2.calls == 1 && h2.seen == 0x5678 && read_u32(c, 1) == 70001);
  CUDA_HOST_NODE_PARAMS back;
  OK(cuGraphHostNodeGetParams(host, &back));
  TEST_CHECK(back.userData == &h);
  TEST_CHECK(cuGraphExecHostNodeSetParams(x, set, &hp2) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(h.in));
  OK(cuMemFreeHost(h.out));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(c));
}

/* cuLaunchHostFunc in a captured stream: a host node, in the stream's order. */
static void test_host_capture(void) {
  NEED_DEVICE();
  CUdeviceptr a, c;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&c, 4 * N));
  host_seen h = {.write = 42};
  OK(cuMemAllocHost_v2((void **)&h.in, 4 * N));
  OK(cuMemAllocHost_v2((void **)&h.out, 4 * N));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemsetD32Async(a, 0xbeef, N, s));
  OK(cuMemcpyDtoHAsync_v2(h.in, a, 4 * N, s));
  OK(cuLaunchHostFunc(s, host_step, &h));
  OK(cuMemcpyHtoDAsync_v2(c, h.out, 4 * N, s));
  TEST_CHECK(h.calls == 0); /* captured, not run */
  CUevent ev;
  OK(cuEventCreate(&ev, 0));
  OK(cuEventRecordWithFlags(ev, s, CU_EVENT_RECORD_EXTERNAL));
  OK(cuStreamWaitEvent(s, ev, CU_EVENT_WAIT_EXTERNAL));
  TEST_CHECK(cuStreamAddCallback(s, NULL, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  CUgraph g;
  OK(cuStreamEndCapture(s, &g));
  CUgraphNode nodes[6];
  size_t n = 6;
  OK(cuGraphGetNodes(g, nodes, &n));
  TEST_CHECK(n == 6);
  CUgraphNodeType t4 = CU_GRAPH_NODE_TYPE_EMPTY, t5 = CU_GRAPH_NODE_TYPE_EMPTY;
  OK(cuGraphNodeGetType(nodes[4], &t4));
  OK(cuGraphNodeGetType(nodes[5], &t5));
  TEST_CHECK(t4 == CU_GRAPH_NODE_TYPE_EVENT_RECORD && t5 == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
  OK(cuGraphNodeGetType(nodes[2], &t));
  TEST_CHECK(t == CU_GRAPH_NODE_TYPE_HOST);
  CUgraphNode dep = NULL;
  n = 1;
  OK(cuGraphNodeGetDependencies(nodes[2], &dep, &n));
  TEST_CHECK(n == 1 && dep == nodes[1]);
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int round = 0; round < 2; round++) {
    memset(h.in, 0, 4 * N);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    TEST_CHECK(h.calls == (uint32_t)round + 1 && h.seen == 0xbeef && read_u32(c, 3) == 45);
    OK(cuEventQuery(ev)); /* recorded by the replay */
  }
  OK(cuGraphExecDestroy(x));
  OK(cuEventDestroy_v2(ev));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(h.in));
  OK(cuMemFreeHost(h.out));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(c));
}

/* ---- child graphs, event nodes, generic nodes ---- */

static void test_child_and_events(void) {
  NEED_DEVICE();
  CUdeviceptr a, b;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&b, 4 * N));
  OK(cuMemsetD32_v2(b, 0, N));
  CUgraph child, g;
  OK(cuGraphCreate(&child, 0));
  CUgraphNode cset, ccopy;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 77, N);
  OK(cuGraphAddMemsetNode(&cset, child, NULL, 0, &ms, NULL));
  CUDA_MEMCPY3D cp = copy_1d(b, a, 4 * N);
  OK(cuGraphAddMemcpyNode(&ccopy, child, &cset, 1, &cp, NULL));
  CUevent ev;
  OK(cuEventCreate(&ev, 0));
  OK(cuGraphCreate(&g, 0));
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_GRAPH;
  p.graph.graph = child;
  CUgraphNode sub, rec, wait;
  OK(cuGraphAddNode_v2(&sub, g, NULL, NULL, 0, &p));
  CUgraph owned;
  OK(cuGraphChildGraphNodeGetGraph(sub, &owned));
  TEST_CHECK(owned != child && p.graph.graph == owned);
  TEST_CHECK(cuGraphDestroy(owned) == CUDA_ERROR_INVALID_VALUE); /* the node's */
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
  p.eventRecord.event = ev;
  OK(cuGraphAddNode(&rec, g, &sub, 1, &p));
  OK(cuGraphAddEventWaitNode(&wait, g, &rec, 1, ev));
  CUevent got = NULL;
  OK(cuGraphEventRecordNodeGetEvent(rec, &got));
  TEST_CHECK(got == ev);
  TEST_CHECK(cuGraphEventWaitNodeGetEvent(rec, &got) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphEventWaitNodeGetEvent(wait, &got));
  TEST_CHECK(got == ev);
  p.reserved0[1] = 1;
  TEST_CHECK(cuGraphAddNode(&rec, g, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeType t;
  OK(cuGraphNodeGetType(sub, &t));
  TEST_CHECK(t == CU_GRAPH_NODE_TYPE_GRAPH);
  OK(cuGraphNodeGetType(wait, &t));
  TEST_CHECK(t == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  /* the child was copied: a change to the original afterwards is not in the node */
  ms.value = 1;
  OK(cuGraphMemsetNodeSetParams(cset, &ms));
  CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD};
  CUgraphExec x;
  OK(cuGraphInstantiateWithParams(&x, g, &ip));
  TEST_CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS && ip.hErrNode_out == NULL);
  cuuint64_t flags = 0;
  OK(cuGraphExecGetFlags(x, &flags));
  TEST_CHECK(flags == CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuGraphLaunch(x, s));
  OK(cuEventSynchronize(ev));
  OK(cuEventQuery(ev));
  TEST_CHECK(read_u32(b, 0) == 77 && read_u32(b, N - 1) == 77);
  OK(cuStreamSynchronize(s));
  /* the event record node fires again on the next replay */
  CUevent ev2;
  OK(cuEventCreate(&ev2, 0));
  OK(cuGraphExecEventRecordNodeSetEvent(x, rec, ev2));
  OK(cuGraphLaunch(x, s));
  OK(cuEventSynchronize(ev2));
  OK(cuStreamSynchronize(s));
  /* the executable graph's child graph: new values from a graph of the same shape */
  CUgraph child2;
  OK(cuGraphClone(&child2, child));
  CUgraphNode cset2;
  OK(cuGraphNodeFindInClone(&cset2, cset, child2));
  ms.value = 88;
  OK(cuGraphMemsetNodeSetParams(cset2, &ms));
  OK(cuGraphExecChildGraphNodeSetParams(x, sub, child2));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(b, 0) == 88 && read_u32(b, N - 1) == 88);
  OK(cuGraphRemoveDependencies(child2, &cset2, &(CUgraphNode){NULL}, 0));
  CUgraphNode ccopy2;
  OK(cuGraphNodeFindInClone(&ccopy2, ccopy, child2));
  OK(cuGraphRemoveDependencies(child2, &cset2, &ccopy2, 1));
  TEST_CHECK(cuGraphExecChildGraphNodeSetParams(x, sub, child2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphExecChildGraphNodeSetParams(x, rec, child2) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphDestroy(child2));
  /* the node's graph replaced by a copy of another */
  CUgraph other;
  OK(cuGraphCreate(&other, 0));
  CUgraphNode e1, e2;
  OK(cuGraphAddEmptyNode(&e1, other, NULL, 0));
  OK(cuGraphAddEmptyNode(&e2, other, &e1, 1));
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_GRAPH;
  p.graph.graph = other;
  OK(cuGraphNodeSetParams(sub, &p));
  size_t count = 0;
  OK(cuGraphChildGraphNodeGetGraph(sub, &owned));
  OK(cuGraphGetNodes(owned, NULL, &count));
  TEST_CHECK(owned != other && count == 2);
  OK(cuGraphDestroy(other));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(child));
  OK(cuEventDestroy_v2(ev));
  OK(cuEventDestroy_v2(ev2));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
}

/* ---- executable graph updates ---- */

static void test_exec_update(void) {
  NEED_DEVICE();
  CUdeviceptr a, b, c;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemAlloc_v2(&b, 4 * N));
  OK(cuMemAlloc_v2(&c, 4 * N));
  OK(cuMemsetD32_v2(a, 0, N));
  OK(cuMemsetD32_v2(b, 0, N));
  OK(cuMemsetD32_v2(c, 0, N));
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode set, copy;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 11, N / 2);
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  CUDA_MEMCPY3D cp = copy_1d(b, a, 4 * N);
  OK(cuGraphAddMemcpyNode(&copy, g, &set, 1, &cp, NULL));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(b, N / 2 - 1) == 11 && read_u32(b, N / 2) == 0 && read_u32(c, 0) == 0);
  /* a clone with new values: the copy now goes to c, the memset writes 22 */
  CUgraph g2;
  OK(cuGraphClone(&g2, g));
  CUgraphNode set2, copy2;
  OK(cuGraphNodeFindInClone(&set2, set, g2));
  OK(cuGraphNodeFindInClone(&copy2, copy, g2));
  ms.value = 22;
  OK(cuGraphMemsetNodeSetParams(set2, &ms));
  cp = copy_1d(c, a, 4 * N);
  OK(cuGraphMemcpyNodeSetParams(copy2, &cp));
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0xff, sizeof info);
  OK(cuGraphExecUpdate_v2(x, g2, &info));
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS && info.errorNode == NULL);
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(c, 0) == 22 && read_u32(c, N / 2 - 1) == 22 && read_u32(c, N / 2) == 0 &&
             read_u32(b, 0) == 11);
  /* a type changed: refused, with the node of the new graph; the exec graph is unchanged */
  CUgraph g3;
  OK(cuGraphCreate(&g3, 0));
  CUgraphNode e3, copy3;
  OK(cuGraphAddEmptyNode(&e3, g3, NULL, 0));
  cp = copy_1d(b, a, 4 * N);
  OK(cuGraphAddMemcpyNode(&copy3, g3, &e3, 1, &cp, NULL));
  TEST_CHECK(cuGraphExecUpdate_v2(x, g3, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED && info.errorNode == e3);
  /* topology changed: a missing edge, then an extra node */
  OK(cuGraphRemoveDependencies(g2, &set2, &copy2, 1));
  TEST_CHECK(cuGraphExecUpdate_v2(x, g2, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  OK(cuGraphAddDependencies(g2, &set2, &copy2, 1));
  CUgraphNode extra;
  OK(cuGraphAddEmptyNode(&extra, g2, NULL, 0));
  CUgraphNode err = NULL;
  CUgraphExecUpdateResult res;
  TEST_CHECK(cuGraphExecUpdate(x, g2, &err, &res) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  TEST_CHECK(res == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED && err == NULL);
  OK(cuMemsetD32_v2(c, 0, N));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(c, 5) == 22); /* still the update that succeeded */
  /* through the node setter: a memset grown past its pattern, then a shorter one of bytes */
  ms = memset_32(a, 33, N);
  OK(cuGraphExecMemsetNodeSetParams(x, set, &ms, NULL));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(c, 0) == 33 && read_u32(c, N - 1) == 33);
  ms =
      (CUDA_MEMSET_NODE_PARAMS){.dst = a, .value = 0x44, .elementSize = 1, .width = 3, .height = 1};
  OK(cuGraphExecMemsetNodeSetParams(x, set, &ms, NULL));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(read_u32(c, 0) == 0x00444444 && read_u32(c, 1) == 33, "0x%x 0x%x", read_u32(c, 0),
                 read_u32(c, 1));
  TEST_CHECK(cuGraphExecMemsetNodeSetParams(x, copy, &ms, NULL) == CUDA_ERROR_INVALID_VALUE);
  /* the generic setters: the type must be the node's */
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_MEMSET;
  np.memset.dst = a, np.memset.value = 55, np.memset.elementSize = 4, np.memset.width = N;
  np.memset.height = 1;
  OK(cuGraphExecNodeSetParams(x, set, &np));
  OK(cuGraphNodeSetParams(set, &np));
  OK(cuGraphMemsetNodeGetParams(set, &ms));
  TEST_CHECK(ms.value == 55 && ms.width == N);
  TEST_CHECK(cuGraphNodeSetParams(copy, &np) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphExecNodeSetParams(x, copy, &np) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(read_u32(c, 0) == 55 && read_u32(c, N - 1) == 55);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(g2));
  OK(cuGraphDestroy(g3));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(c));
}

/* ---- kernels (a GPU) ---- */

static void check_all(CUdeviceptr d, uint32_t n, uint32_t want) {
  uint32_t *h = malloc(n * 4);
  OK(cuMemcpyDtoH_v2(h, d, n * 4));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += h[i] != want;
  TEST_CHECK_MSG(bad == 0, "%u of %u values are not %u (first %u)", bad, n, want, h[0]);
  free(h);
}

/* Kernel nodes: parameters read back, a host node between two kernels (the graph splits into two
 * GPU steps around it), and a whole-graph update that changes a kernel's argument. */
static void test_kernel_nodes(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f = NULL;
  CUresult r = cuModuleLoadData(&mod, cuda_test_add_ptx());
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuModuleGetFunction(&f, mod, "add_value"));
  uint32_t n = N, v = 2;
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n * 4));
  OK(cuMemsetD32_v2(d, 0, n));
  host_seen h = {.write = 1000};
  OK(cuMemAllocHost_v2((void **)&h.in, 4 * N));
  OK(cuMemAllocHost_v2((void **)&h.out, 4 * N));
  void *params[] = {&d, &v, &n};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f,
                               .gridDimX = n / 128,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 128,
                               .blockDimY = 1,
                               .blockDimZ = 1,
                               .kernelParams = params};
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode k1, down, host, k2;
  OK(cuGraphAddKernelNode_v2(&k1, g, NULL, 0, &p));
  CUDA_KERNEL_NODE_PARAMS got;
  OK(cuGraphKernelNodeGetParams_v2(k1, &got));
  TEST_CHECK(got.func == f && got.gridDimX == n / 128 && got.blockDimX == 128);
  TEST_CHECK(got.kernelParams && *(CUdeviceptr *)got.kernelParams[0] == d &&
             *(uint32_t *)got.kernelParams[1] == 2 && *(uint32_t *)got.kernelParams[2] == n);
  CUDA_MEMCPY3D cp = copy_1d(0, d, 4 * N);
  cp.dstMemoryType = CU_MEMORYTYPE_HOST, cp.dstHost = h.in;
  OK(cuGraphAddMemcpyNode(&down, g, &k1, 1, &cp, NULL));
  CUDA_HOST_NODE_PARAMS hp = {host_step, &h};
  OK(cuGraphAddHostNode(&host, g, &down, 1, &hp));
  OK(cuGraphAddKernelNode_v2(&k2, g, &host, 1, &p));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(h.calls == 1 && h.seen == 2, "host node saw %u (want 2, k1's result)", h.seen);
  check_all(d, n, 4);
  /* the update: k2 adds 5 */
  CUgraph g2;
  OK(cuGraphClone(&g2, g));
  CUgraphNode k2c;
  OK(cuGraphNodeFindInClone(&k2c, k2, g2));
  uint32_t v5 = 5;
  void *params5[] = {&d, &v5, &n};
  p.kernelParams = params5;
  OK(cuGraphKernelNodeSetParams_v2(k2c, &p));
  CUgraphExecUpdateResultInfo info;
  OK(cuGraphExecUpdate_v2(x, g2, &info));
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(h.seen == 6, "host node saw %u (want 4 + 2)", h.seen);
  check_all(d, n, 4 + 2 + 5);
  /* another kernel: refused, naming the node */
  CUfunction other;
  CUmodule mod2;
  OK(cuModuleLoadData(&mod2, cuda_test_add_ptx()));
  OK(cuModuleGetFunction(&other, mod2, "add_value"));
  p.func = other;
  OK(cuGraphKernelNodeSetParams_v2(k2c, &p));
  TEST_CHECK(cuGraphExecUpdate_v2(x, g2, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE &&
             info.errorNode == k2c);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(g2));
  OK(cuMemFreeHost(h.in));
  OK(cuMemFreeHost(h.out));
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod2));
  OK(cuModuleUnload(mod));
}

/* CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE: the node takes the graph itself, which is then the node's
 * (not destroyed, instantiated or used in an update on its own) and goes with it. */
static void test_child_moved(void) {
  NEED_DEVICE();
  CUdeviceptr a;
  OK(cuMemAlloc_v2(&a, 4 * N));
  OK(cuMemsetD32_v2(a, 0, N));
  CUgraph g, child, other;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphCreate(&child, 0));
  OK(cuGraphCreate(&other, 0));
  CUgraphNode m, sub, sub2;
  CUDA_MEMSET_NODE_PARAMS ms = memset_32(a, 5, N);
  OK(cuGraphAddMemsetNode(&m, child, NULL, 0, &ms, NULL));
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_GRAPH;
  p.graph.graph = child;
  p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  OK(cuGraphAddNode(&sub, g, NULL, 0, &p));
  CUgraph owned;
  OK(cuGraphChildGraphNodeGetGraph(sub, &owned));
  TEST_CHECK(owned == child && p.graph.graph == child);
  TEST_CHECK(cuGraphDestroy(child) == CUDA_ERROR_INVALID_VALUE);
  CUgraphExec x;
  TEST_CHECK(cuGraphInstantiateWithFlags(&x, child, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphAddNode(&sub2, other, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE); /* taken */
  p.graph.graph = g; /* a graph into its own node */
  TEST_CHECK(cuGraphNodeSetParams(sub, &p) == CUDA_ERROR_INVALID_VALUE);
  p.graph.ownership = (CUgraphChildGraphNodeOwnership)2;
  p.graph.graph = other;
  TEST_CHECK(cuGraphAddNode(&sub2, g, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
  /* a change through the node's graph is in the node: it is the same graph */
  ms.value = 6;
  OK(cuGraphMemsetNodeSetParams(m, &ms));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  TEST_CHECK(cuGraphExecUpdate_v2(x, child, NULL) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(read_u32(a, 0) == 6 && read_u32(a, N - 1) == 6, "a[0] = %u", read_u32(a, 0));
  OK(cuGraphExecDestroy(x));
  /* cuGraphNodeSetParams moves another graph in, the first goes */
  p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  OK(cuGraphNodeSetParams(sub, &p));
  OK(cuGraphChildGraphNodeGetGraph(sub, &owned));
  TEST_CHECK(owned == other);
  OK(cuGraphDestroy(g)); /* with other */
  OK(cuMemFree_v2(a));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_edges), TEST(test_clone), TEST(test_dot),
          TEST(test_host_order), TEST(test_host_capture), TEST(test_child_and_events),
          TEST(test_child_moved), TEST(test_exec_update), TEST(test_kernel_nodes))
