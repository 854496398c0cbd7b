/* Driver-API programs against nvhcq's libcuda.so.1: stream memory operations (waits on values
 * the CPU writes later, with the work behind them held back; writes read back; batches), stream
 * and context ids, stream attributes, capture info, the small calls clients make, and
 * cooperative launches. On a GPU or the mock (NVHCQ_MOCK=1); kernels on a GPU only. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

/* The CPU's store of a value a stream waits for. */
static void store32(void *p, uint32_t v) {
  __atomic_store_n((uint32_t *)p, v, __ATOMIC_RELEASE);
}

static void store64(void *p, uint64_t v) {
  __atomic_store_n((uint64_t *)p, v, __ATOMIC_RELEASE);
}

static uint32_t load32(const void *p) {
  return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

/* Whether the stream stays unfinished for 20 ms: a wait that holds it never lets it finish, and
 * one that did not hold would let the mock finish its work well within that. (Never fails
 * because a machine is slow: only work that should not run could end it early.) */
static int still_waiting(CUstream s) {
  double end = test_now_ms() + 20;
  while (test_now_ms() < end)
    if (cuStreamQuery(s) != CUDA_ERROR_NOT_READY) return 0;
  return 1;
}

/* ---- before cuInit ---- */

/* cuGetProcAddress answers the names and versions driver 580 does; none of them is a stub. */
static void test_names(void) {
  static const nvcu_proc_case names[] = {
      {"cuStreamWaitValue32", 12000, 0, "cuStreamWaitValue32_v2"},
      {"cuStreamWaitValue32", 8000, 0, "cuStreamWaitValue32"},
      {"cuStreamWaitValue32", 12000, 2, "cuStreamWaitValue32_v2_ptsz"},
      {"cuStreamWaitValue64", 9000, 2, "cuStreamWaitValue64_ptsz"},
      {"cuStreamWriteValue32", 12000, 1, "cuStreamWriteValue32_v2"},
      {"cuStreamWriteValue64", 12000, 2, "cuStreamWriteValue64_v2_ptsz"},
      {"cuStreamBatchMemOp", 12000, 0, "cuStreamBatchMemOp_v2"},
      {"cuStreamBatchMemOp", 8000, 2, "cuStreamBatchMemOp_ptsz"},
      {"cuLaunchCooperativeKernel", 12000, 0, "cuLaunchCooperativeKernel"},
      {"cuLaunchCooperativeKernel", 12000, 2, "cuLaunchCooperativeKernel_ptsz"},
      {"cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3"},
      {"cuStreamGetCaptureInfo", 11030, 2, "cuStreamGetCaptureInfo_v2_ptsz"},
      {"cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo"},
      {"cuStreamGetId", 12000, 2, "cuStreamGetId_ptsz"},
      {"cuStreamGetAttribute", 12000, 2, "cuStreamGetAttribute_ptsz"},
      {"cuStreamSetAttribute", 12000, 0, "cuStreamSetAttribute"},
      {"cuCtxGetId", 12000, 0, "cuCtxGetId"},
      {"cuProfilerStart", 12000, 0, "cuProfilerStart"},
      {"cuThreadExchangeStreamCaptureMode", 12000, 0, "cuThreadExchangeStreamCaptureMode"},
      {"cuDeviceGetByPCIBusId", 12000, 0, "cuDeviceGetByPCIBusId"},
  };
  check_proc_cases(names, sizeof names / sizeof *names);
  /* implemented, not stubs: before cuInit they say so */
  TEST_CHECK(cuStreamWaitValue32_v2(NULL, 4096, 1, 0) == CUDA_ERROR_NOT_INITIALIZED);
  TEST_CHECK(cuStreamWriteValue64_v2(NULL, 4096, 1, 0) == CUDA_ERROR_NOT_INITIALIZED);
  TEST_CHECK(cuStreamBatchMemOp_v2(NULL, 0, NULL, 0) == CUDA_ERROR_NOT_INITIALIZED);
  TEST_CHECK(cuProfilerStart() == CUDA_ERROR_NOT_INITIALIZED);
  CUresult (*v1)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = (CUresult(*)(
      CUstream, CUdeviceptr, cuuint32_t, unsigned))(uintptr_t)own("cuStreamWaitValue32");
  TEST_CHECK(v1 && v1(NULL, 4096, 1, 0) == CUDA_ERROR_NOT_INITIALIZED);
}

/* ---- device attributes ---- */

static void test_attributes(void) {
  NEED_DEVICE();
  static const CUdevice_attribute yes[] = {
      CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
      CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
  };
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    int v = -1;
    OK(cuDeviceGetAttribute(&v, yes[i], 0));
    TEST_CHECK_MSG(v == 1, "attribute %d is %d", (int)yes[i], v);
  }
  /* 0 as NVIDIA's library says since CUDA 12, though the first API's calls work */
  static const CUdevice_attribute no[] = {
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1,
      CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1,
      CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH,
  };
  int v = -1;
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    OK(cuDeviceGetAttribute(&v, no[i], 0));
    TEST_CHECK_MSG(v == 0, "attribute %d is %d", (int)no[i], v);
  }
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0));
  TEST_CHECK(v == 0);
}

/* ---- stream memory operations ---- */

/* A stream waits for a value the CPU writes later: the copy behind it happens only after. */
static void test_wait_holds_copy(void) {
  NEED_DEVICE();
  enum { N = 1 << 20 };
  uint32_t *flag;
  uint8_t *in, *out;
  OK(cuMemHostAlloc((void **)&flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  OK(cuMemAllocHost_v2((void **)&in, N));
  OK(cuMemAllocHost_v2((void **)&out, N));
  CUdeviceptr d, flag_gpu;
  OK(cuMemAlloc_v2(&d, N));
  OK(cuMemHostGetDevicePointer_v2(&flag_gpu, flag, 0));
  for (size_t i = 0; i < N; i++) in[i] = (uint8_t)(i * 13 + 1);
  OK(cuMemcpyHtoD_v2(d, in, N));
  memset(out, 0, N);
  store32(flag, 0);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamWaitValue32_v2(s, flag_gpu, 1, CU_STREAM_WAIT_VALUE_GEQ));
  OK(cuMemcpyDtoHAsync_v2(out, d, N, s));
  TEST_CHECK(still_waiting(s));
  TEST_CHECK(out[0] == 0 && out[N - 1] == 0); /* the copy has not run */
  store32(flag, 1);
  OK(cuStreamSynchronize(s));
  TEST_CHECK(memcmp(out, in, N) == 0);
  /* the host pointer of pinned memory works as its address too (one address space), and the
   * default stream's work waits as well */
  memset(out, 0, 64);
  OK(cuStreamWaitValue32_v2(NULL, (CUdeviceptr)(uintptr_t)flag, 2, CU_STREAM_WAIT_VALUE_EQ));
  OK(cuMemcpyDtoHAsync_v2(out, d, 64, NULL));
  TEST_CHECK(still_waiting(NULL) && out[1] == 0);
  store32(flag, 3); /* not equal: still waiting */
  TEST_CHECK(still_waiting(NULL) && out[1] == 0);
  store32(flag, 2);
  OK(cuStreamSynchronize(NULL));
  TEST_CHECK(memcmp(out, in, 64) == 0);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuMemFreeHost(in));
  OK(cuMemFreeHost(out));
  OK(cuMemFreeHost(flag));
}

/* Each condition in 32 and 64 bits holds back a write behind it until the CPU satisfies it. */
static void check_condition(CUstream s, void *flag, uint32_t *marker, int wide, uint64_t start,
                            uint64_t value, unsigned flags, uint64_t ok) {
  static uint32_t round;
  round++;
  wide ? store64(flag, start) : store32(flag, (uint32_t)start);
  CUdeviceptr a = (CUdeviceptr)(uintptr_t)flag, m = (CUdeviceptr)(uintptr_t)marker;
  CUresult r = wide ? cuStreamWaitValue64_v2(s, a, value, flags)
                    : cuStreamWaitValue32_v2(s, a, (cuuint32_t)value, flags);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "wait (flags 0x%x, %d bits): %d", flags, wide ? 64 : 32, r);
  OK(cuStreamWriteValue32_v2(s, m, round, 0));
  TEST_CHECK_MSG(still_waiting(s) && load32(marker) != round, "flags 0x%x (%d bits) met by 0x%llx",
                 flags, wide ? 64 : 32, (unsigned long long)start);
  wide ? store64(flag, ok) : store32(flag, (uint32_t)ok);
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(load32(marker) == round, "flags 0x%x (%d bits)", flags, wide ? 64 : 32);
}

static void test_wait_conditions(void) {
  NEED_DEVICE();
  uint8_t *host;
  OK(cuMemAllocHost_v2((void **)&host, 4096));
  memset(host, 0, 4096);
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  void *f = host + 64;
  uint32_t *marker = (uint32_t *)host;
  check_condition(s, f, marker, 0, 5, 7, CU_STREAM_WAIT_VALUE_GEQ, 9);
  check_condition(s, f, marker, 0, 0xfffffff0u, 0x10, CU_STREAM_WAIT_VALUE_GEQ, 0x10); /* wraps */
  check_condition(s, f, marker, 0, 4, 6, CU_STREAM_WAIT_VALUE_EQ, 6);
  check_condition(s, f, marker, 0, 0x0f, 0xf0, CU_STREAM_WAIT_VALUE_AND, 0x20);
  check_condition(s, f, marker, 0, 0xffff0000u, 0xffff, CU_STREAM_WAIT_VALUE_NOR, 0xfeff0000u);
  check_condition(s, f, marker, 0, 1, 2, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH, 2);
  check_condition(s, f, marker, 1, 0x100000005ull, 0x200000000ull, CU_STREAM_WAIT_VALUE_GEQ,
                  0x200000000ull);
  check_condition(s, f, marker, 1, 1ull << 40, (1ull << 40) + 1, CU_STREAM_WAIT_VALUE_EQ,
                  (1ull << 40) + 1);
  check_condition(s, f, marker, 1, 0xffffffffull, 1ull << 33, CU_STREAM_WAIT_VALUE_AND, 1ull << 33);
  check_condition(s, f, marker, 1, ~0ull, 0, CU_STREAM_WAIT_VALUE_NOR, ~0ull >> 1);
  /* refused: misaligned, NULL, unknown flags */
  CUdeviceptr a = (CUdeviceptr)(uintptr_t)f;
  TEST_CHECK(cuStreamWaitValue32_v2(s, a + 2, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWaitValue64_v2(s, a + 4, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWaitValue32_v2(s, 0, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWaitValue32_v2(s, a, 1, 4) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWaitValue32_v2(s, a, 1, 1u << 20) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamQuery(s) == CUDA_SUCCESS); /* nothing of them was queued */
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(host));
}

/* Writes land exactly their 4 or 8 bytes, in device memory and pinned host memory (by the device
 * pointer cuPointerGetAttribute gives), in order with copies on the other engine. */
static void test_write_values(void) {
  NEED_DEVICE();
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 4096));
  OK(cuMemsetD32_v2(d, 0xaaaaaaaa, 1024));
  uint32_t *host;
  OK(cuMemHostAlloc((void **)&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  memset(host, 0x55, 4096);
  CUdeviceptr hd = 0;
  OK(cuPointerGetAttribute(&hd, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)(uintptr_t)host));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamWriteValue32_v2(s, d + 4, 0x12345678, CU_STREAM_WRITE_VALUE_DEFAULT));
  OK(cuStreamWriteValue64_v2(s, d + 8, 0x1122334455667788ull,
                             CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  OK(cuStreamWriteValue32_v2(s, hd + 8, 7, 0));
  OK(cuStreamWriteValue64_v2(s, hd + 16, 0x0102030405060708ull, 0));
  uint32_t back[6];
  OK(cuMemcpyDtoHAsync_v2(back, d, sizeof back, s)); /* pageable: waits for the stream */
  OK(cuStreamSynchronize(s));
  TEST_CHECK(back[0] == 0xaaaaaaaa && back[1] == 0x12345678 && back[4] == 0xaaaaaaaa);
  TEST_CHECK(back[2] == 0x55667788 && back[3] == 0x11223344);
  TEST_CHECK(host[1] == 0x55555555 && host[2] == 7 && host[3] == 0x55555555);
  TEST_CHECK(host[4] == 0x05060708 && host[5] == 0x01020304 && host[6] == 0x55555555);
  /* a write, then a copy of it on the copy engine, then a write over what was copied */
  uint32_t *out = host + 512;
  OK(cuStreamWriteValue32_v2(s, d, 41, 0));
  OK(cuMemcpyDtoHAsync_v2(out, d, 4, s));
  OK(cuStreamWriteValue32_v2(s, hd + 2048, 42, 0));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(out[0] == 42); /* the second write came after the copy's 41 */
  OK(cuMemcpyDtoH_v2(back, d, 4));
  TEST_CHECK(back[0] == 41);
  TEST_CHECK(cuStreamWriteValue32_v2(s, d + 1, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWriteValue64_v2(s, d + 4, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWriteValue32_v2(s, d, 1, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamWriteValue32_v2(s, d + 4094, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuMemFreeHost(host));
}

static CUstreamBatchMemOpParams wait_op(CUdeviceptr a, uint32_t v, unsigned flags) {
  CUstreamBatchMemOpParams p;
  memset(&p, 0, sizeof p);
  p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  p.waitValue.address = a, p.waitValue.value = v, p.waitValue.flags = flags;
  return p;
}

static CUstreamBatchMemOpParams write_op(CUdeviceptr a, uint64_t v, int wide) {
  CUstreamBatchMemOpParams p;
  memset(&p, 0, sizeof p);
  p.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
  p.writeValue.address = a;
  if (wide)
    p.writeValue.value64 = v;
  else
    p.writeValue.value = (uint32_t)v;
  return p;
}

/* A batch runs its operations in order; a bad entry refuses the whole batch. */
static void test_batch(void) {
  NEED_DEVICE();
  uint32_t *host;
  OK(cuMemAllocHost_v2((void **)&host, 4096));
  memset(host, 0, 4096);
  CUdeviceptr h = (CUdeviceptr)(uintptr_t)host;
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  CUstreamBatchMemOpParams p[6] = {write_op(h + 4, 1, 0),
                                   wait_op(h, 5, CU_STREAM_WAIT_VALUE_EQ),
                                   write_op(h + 8, 2, 0),
                                   {.operation = CU_STREAM_MEM_OP_BARRIER},
                                   write_op(h + 16, 0xabcdef0123456789ull, 1),
                                   {.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES}};
  p[3].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  OK(cuStreamBatchMemOp_v2(s, 6, p, 0));
  TEST_CHECK(still_waiting(s) && host[2] == 0); /* held at the wait */
  store32(host, 5);
  OK(cuStreamSynchronize(s));
  TEST_CHECK(host[1] == 1 && host[2] == 2 && host[4] == 0x23456789 && host[5] == 0xabcdef01);
  /* refused whole: a bad entry last, flags, too many, the barrier in the first version */
  CUstreamBatchMemOpParams bad[2] = {write_op(h + 32, 9, 0), write_op(h + 34, 9, 0)};
  TEST_CHECK(cuStreamBatchMemOp_v2(s, 2, bad, 0) == CUDA_ERROR_INVALID_VALUE);
  bad[1].operation = (CUstreamBatchMemOpType)77;
  TEST_CHECK(cuStreamBatchMemOp_v2(s, 2, bad, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamBatchMemOp_v2(s, 1, bad, 1) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamBatchMemOp_v2(s, 256, bad, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamBatchMemOp_v2(s, 1, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamBatchMemOp_v2(s, 0, NULL, 0));
  CUresult (*v1)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned) =
      (CUresult(*)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned))(uintptr_t)own(
          "cuStreamBatchMemOp");
  TEST_CHECK(v1 && v1(s, 1, &p[3], 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(v1 && v1(s, 1, bad, 0) == CUDA_SUCCESS);
  OK(cuStreamSynchronize(s));
  TEST_CHECK(host[8] == 9 && host[9] == 0);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(host));
}

static uint32_t batch_count(CUgraphNode n) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS p = {0};
  OK(cuGraphBatchMemOpNodeGetParams(n, &p));
  return p.count;
}

/* Captured, they become batch memory operation nodes, which a launch runs in the graph's order
 * (here between two memsets, holding the second until the CPU's store). */
static void test_batch_captured(void) {
  NEED_DEVICE();
  uint32_t *host;
  OK(cuMemAllocHost_v2((void **)&host, 4096));
  memset(host, 0, 4096);
  CUdeviceptr h = (CUdeviceptr)(uintptr_t)host, d;
  OK(cuMemAlloc_v2(&d, 64));
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemsetD32Async(d, 3, 16, s));
  OK(cuStreamWriteValue32_v2(s, h + 4, 1, 0));
  CUstreamBatchMemOpParams p[2] = {wait_op(h, 5, CU_STREAM_WAIT_VALUE_GEQ),
                                   write_op(h + 8, 0x1122334455667788ull, 1)};
  OK(cuStreamBatchMemOp_v2(s, 2, p, 0));
  OK(cuMemsetD32Async(d, 4, 16, s));
  TEST_CHECK(cuStreamWriteValue32_v2(s, h + 2, 1, 0) == CUDA_ERROR_INVALID_VALUE); /* alignment */
  CUgraph g;
  OK(cuStreamEndCapture(s, &g));
  CUgraphNode nodes[8];
  size_t count = 8;
  OK(cuGraphGetNodes(g, nodes, &count));
  TEST_CHECK_MSG(count == 4, "%zu nodes, want memset, two batches, memset", count);
  CUgraphNodeType t[4] = {0};
  for (size_t i = 0; i < count && i < 4; i++) OK(cuGraphNodeGetType(nodes[i], &t[i]));
  TEST_CHECK(t[0] == CU_GRAPH_NODE_TYPE_MEMSET && t[1] == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP &&
             t[2] == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP && t[3] == CU_GRAPH_NODE_TYPE_MEMSET);
  TEST_CHECK(batch_count(nodes[1]) == 1 && batch_count(nodes[2]) == 2);
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, g, 0));
  OK(cuGraphLaunch(e, s));
  TEST_CHECK(still_waiting(s) && load32(host + 2) == 0);
  store32(host, 5);
  OK(cuStreamSynchronize(s));
  TEST_CHECK(host[1] == 1);
  uint32_t got[16];
  OK(cuMemcpyDtoH_v2(got, d, sizeof got));
  TEST_CHECK_MSG(host[2] == 0x55667788 && host[3] == 0x11223344 && got[0] == 4 && got[15] == 4,
                 "after the wait: 0x%x%08x, d[0] %u", host[3], host[2], got[0]);
  /* an exec update of the node: its wait now waits for 6, its write writes 7 */
  p[0] = wait_op(h, 6, CU_STREAM_WAIT_VALUE_GEQ), p[1] = write_op(h + 8, 7, 0);
  CUDA_BATCH_MEM_OP_NODE_PARAMS np = {.count = 2, .paramArray = p};
  OK(cuGraphExecBatchMemOpNodeSetParams(e, nodes[2], &np));
  np.count = 0;
  TEST_CHECK(cuGraphExecBatchMemOpNodeSetParams(e, nodes[2], &np) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphExecBatchMemOpNodeSetParams(e, nodes[0], &np) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphLaunch(e, s));
  TEST_CHECK(still_waiting(s));
  store32(host, 6);
  OK(cuStreamSynchronize(s));
  TEST_CHECK_MSG(host[2] == 7, "after the updated node: %u", host[2]);
  OK(cuGraphExecDestroy(e));
  /* the explicit calls: add, read back, change; cuGraphAddNode of the type */
  CUgraph g2;
  OK(cuGraphCreate(&g2, 0));
  CUgraphNode a, b;
  CUstreamBatchMemOpParams w = write_op(h + 12, 42, 0);
  np = (CUDA_BATCH_MEM_OP_NODE_PARAMS){.count = 1, .paramArray = &w};
  OK(cuGraphAddBatchMemOpNode(&a, g2, NULL, 0, &np));
  w = write_op(h + 16, 43, 0); /* the node kept its own copy */
  CUDA_BATCH_MEM_OP_NODE_PARAMS back;
  OK(cuGraphBatchMemOpNodeGetParams(a, &back));
  TEST_CHECK(back.count == 1 && back.paramArray != &w &&
             back.paramArray[0].writeValue.address == h + 12);
  CUgraphNodeParams gp;
  memset(&gp, 0, sizeof gp);
  gp.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  gp.memOp.count = 1, gp.memOp.paramArray = &w;
  OK(cuGraphAddNode(&b, g2, &a, 1, &gp));
  np.flags = 1;
  TEST_CHECK(cuGraphAddBatchMemOpNode(&a, g2, NULL, 0, &np) == CUDA_ERROR_INVALID_VALUE);
  np.flags = 0, np.count = 256;
  TEST_CHECK(cuGraphAddBatchMemOpNode(&a, g2, NULL, 0, &np) == CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphInstantiateWithFlags(&e, g2, 0));
  OK(cuGraphLaunch(e, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(host[3] == 42 && host[4] == 43);
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(g2));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuMemFreeHost(host));
}

/* ---- ids, attributes, capture info and the small calls ---- */

static void test_ids_and_attributes(void) {
  NEED_DEVICE();
  CUstream a, b;
  OK(cuStreamCreate(&a, 0));
  OK(cuStreamCreateWithPriority(&b, CU_STREAM_NON_BLOCKING, -2));
  unsigned long long ia = 0, ib = 0, ia2 = 0, il = 0, ip = 0, in = 0;
  OK(cuStreamGetId(a, &ia));
  OK(cuStreamGetId(b, &ib));
  OK(cuStreamGetId(a, &ia2));
  OK(cuStreamGetId(NULL, &in));
  OK(cuStreamGetId(CU_STREAM_LEGACY, &il));
  OK(cuStreamGetId(CU_STREAM_PER_THREAD, &ip));
  TEST_CHECK(ia && ib && ia != ib && ia == ia2 && in == il && il != ip && ia != il && ia != ip);
  /* the per-thread form: its NULL stream is the per-thread stream */
  CUresult (*get_id_ptsz)(CUstream, unsigned long long *) =
      (CUresult(*)(CUstream, unsigned long long *))own("cuStreamGetId_ptsz");
  unsigned long long pn = 0;
  TEST_CHECK(get_id_ptsz && get_id_ptsz(NULL, &pn) == CUDA_SUCCESS && pn == ip);
  TEST_CHECK(cuStreamGetId(a, NULL) == CUDA_ERROR_INVALID_VALUE);
  unsigned long long c1 = 0, c2 = 0, c3 = 0;
  CUcontext cur, other;
  OK(cuCtxGetCurrent(&cur));
  OK(cuCtxGetId(NULL, &c1));
  OK(cuCtxGetId(cur, &c2));
  OK(cuCtxCreate_v2(&other, 0, 0));
  OK(cuCtxGetId(other, &c3));
  TEST_CHECK(c1 && c1 == c2 && c3 && c3 != c1);
  /* a stream answers with the context it was made in; the NULL stream with the current one */
  CUstream in_other;
  CUcontext of = NULL;
  CUgreenCtx green = (CUgreenCtx)&of;
  OK(cuStreamCreate(&in_other, 0));
  OK(cuCtxSetCurrent(cur));
  OK(cuStreamGetCtx(in_other, &of));
  TEST_CHECK(of == other);
  OK(cuStreamGetCtx_v2(in_other, &of, &green));
  TEST_CHECK(of == other && green == NULL);
  OK(cuStreamGetCtx(a, &of));
  TEST_CHECK(of == cur);
  OK(cuStreamGetCtx(NULL, &of));
  TEST_CHECK(of == cur);
  OK(cuCtxSetCurrent(other));
  OK(cuStreamGetCtx(CU_STREAM_LEGACY, &of));
  TEST_CHECK(of == other);
  TEST_CHECK(cuStreamGetCtx(a, NULL) == CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(in_other));
  OK(cuCtxDestroy_v2(other));
  OK(cuCtxSetCurrent(cur));
  /* attributes read back */
  CUstreamAttrValue v, back;
  memset(&v, 0, sizeof v);
  OK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &back));
  TEST_CHECK(back.syncPolicy == CU_SYNC_POLICY_AUTO);
  v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)0x7f0000000000ull;
  v.accessPolicyWindow.num_bytes = 1 << 20;
  v.accessPolicyWindow.hitRatio = 0.5f;
  v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
  OK(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  memset(&back, 0, sizeof back);
  OK(cuStreamGetAttribute(a, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &back));
  TEST_CHECK(back.accessPolicyWindow.num_bytes == 1 << 20 &&
             back.accessPolicyWindow.hitRatio == 0.5f &&
             back.accessPolicyWindow.hitProp == CU_ACCESS_PROPERTY_PERSISTING &&
             back.accessPolicyWindow.base_ptr == v.accessPolicyWindow.base_ptr);
  OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &back));
  TEST_CHECK(back.accessPolicyWindow.num_bytes == 0); /* per stream */
  v.accessPolicyWindow.hitRatio = 2;
  TEST_CHECK(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) ==
             CUDA_ERROR_INVALID_VALUE);
  memset(&v, 0, sizeof v);
  v.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
  OK(cuStreamSetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &back));
  TEST_CHECK(back.syncPolicy == CU_SYNC_POLICY_BLOCKING_SYNC);
  v.syncPolicy = (CUsynchronizationPolicy)9;
  TEST_CHECK(cuStreamSetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_PRIORITY, &back));
  TEST_CHECK(back.priority == -2);
  TEST_CHECK(cuStreamGetAttribute(b, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &back) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamSetAttribute(b, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(a));
  OK(cuStreamDestroy_v2(b));
}

static void test_capture_info(void) {
  NEED_DEVICE();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, NULL, NULL, NULL));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
  TEST_CHECK(cuStreamGetCaptureInfo_v3(s, NULL, NULL, NULL, NULL, NULL, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 256));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  cuuint64_t id1 = 0, id2 = 0;
  CUgraph g = NULL, ended;
  const CUgraphNode *deps = NULL;
  const CUgraphEdgeData *edges = NULL;
  size_t n = 9;
  OK(cuStreamGetCaptureInfo_v3(s, &cs, &id1, &g, &deps, &edges, &n));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && id1 && g && n == 0);
  OK(cuMemsetD32Async(d, 3, 64, s));
  OK(cuStreamGetCaptureInfo_v2(s, &cs, &id2, NULL, &deps, &n));
  TEST_CHECK(id2 == id1 && n == 1 && deps && deps[0]);
  OK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, &deps, &edges, &n));
  TEST_CHECK(n == 1 && edges && edges[0].type == 0 && edges[0].from_port == 0);
  TEST_CHECK(cuStreamGetCaptureInfo_v3(s, &cs, NULL, NULL, NULL, &edges, &n) ==
             CUDA_ERROR_INVALID_VALUE);
  CUresult (*v1)(CUstream, CUstreamCaptureStatus *, cuuint64_t *) = (CUresult(*)(
      CUstream, CUstreamCaptureStatus *, cuuint64_t *))(uintptr_t)own("cuStreamGetCaptureInfo");
  cuuint64_t id3 = 0;
  TEST_CHECK(v1 && v1(s, &cs, &id3) == CUDA_SUCCESS && id3 == id1);
  OK(cuStreamEndCapture(s, &ended));
  TEST_CHECK(ended == g);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuStreamGetCaptureInfo_v3(s, &cs, &id2, NULL, NULL, NULL, NULL));
  TEST_CHECK(id2 != id1); /* a new sequence */
  CUgraph g2;
  OK(cuStreamEndCapture(s, &g2));
  OK(cuGraphDestroy(g2));
  OK(cuGraphDestroy(g));
  /* the thread's capture mode */
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  OK(cuThreadExchangeStreamCaptureMode(&m));
  TEST_CHECK(m == CU_STREAM_CAPTURE_MODE_GLOBAL);
  OK(cuThreadExchangeStreamCaptureMode(&m));
  TEST_CHECK(m == CU_STREAM_CAPTURE_MODE_RELAXED);
  m = (CUstreamCaptureMode)7;
  TEST_CHECK(cuThreadExchangeStreamCaptureMode(&m) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuThreadExchangeStreamCaptureMode(NULL) == CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(d));
  OK(cuStreamDestroy_v2(s));
}

static void test_small_calls(void) {
  NEED_DEVICE();
  OK(cuProfilerInitialize(NULL, NULL, CU_OUT_CSV));
  OK(cuProfilerStart());
  OK(cuProfilerStop());
  OK(cuCtxResetPersistingL2Cache());
  CUsharedconfig sc = CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
  OK(cuCtxGetSharedMemConfig(&sc));
  TEST_CHECK(sc == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
  OK(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
  TEST_CHECK(cuCtxSetSharedMemConfig((CUsharedconfig)3) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuFuncSetSharedMemConfig(NULL, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE) ==
             CUDA_ERROR_INVALID_HANDLE);
  /* a device by its PCI bus id, in the forms CUDA reads */
  char id[32], lower[32];
  OK(cuDeviceGetPCIBusId(id, sizeof id, 0));
  CUdevice dev = -1;
  OK(cuDeviceGetByPCIBusId(&dev, id));
  TEST_CHECK(dev == 0);
  for (size_t i = 0; i <= strlen(id); i++)
    lower[i] = (char)(id[i] >= 'A' && id[i] <= 'F' ? id[i] + 32 : id[i]);
  dev = -1;
  OK(cuDeviceGetByPCIBusId(&dev, lower));
  TEST_CHECK(dev == 0);
  dev = -1;
  OK(cuDeviceGetByPCIBusId(&dev, strchr(id, ':') + 1)); /* without the domain */
  TEST_CHECK(dev == 0);
  TEST_CHECK(cuDeviceGetByPCIBusId(&dev, "not a bus id") == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetByPCIBusId(&dev, "0000:ff:1f.7") == CUDA_ERROR_INVALID_DEVICE);
  TEST_CHECK(cuDeviceGetByPCIBusId(NULL, id) == CUDA_ERROR_INVALID_VALUE);
  CUdevprop p;
  memset(&p, 0, sizeof p);
  OK(cuDeviceGetProperties(&p, 0));
  int threads = 0, clock = 0, gx = 0;
  OK(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
  OK(cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
  OK(cuDeviceGetAttribute(&gx, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 0));
  TEST_CHECK(p.maxThreadsPerBlock == threads && p.clockRate == clock && p.maxGridSize[0] == gx);
  TEST_CHECK(p.SIMDWidth == 32 && p.maxThreadsDim[2] == 64 && p.sharedMemPerBlock == 49152);
  TEST_CHECK(cuDeviceGetProperties(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetProperties(&p, 99) == CUDA_ERROR_INVALID_DEVICE);
}

/* Context flags, a stream's device and attributes copied, SYNC_MEMOPS, a context's event, and
 * CUDA 10's cuGraphInstantiate. */
static void test_context_calls(void) {
  NEED_DEVICE();
  unsigned int before = 0, flags = 0;
  OK(cuCtxGetFlags(&before));
  TEST_CHECK(before & CU_CTX_MAP_HOST); /* always on, as NVIDIA's library reports it */
  OK(cuCtxSetFlags(0x80 | 0x4));        /* SYNC_MEMOPS | SCHED_BLOCKING_SYNC */
  OK(cuCtxGetFlags(&flags));
  TEST_CHECK(flags == (0x80 | 0x8 | 0x4));
  TEST_CHECK(cuCtxSetFlags(0x100) == CUDA_ERROR_INVALID_VALUE);
  OK(cuCtxGetFlags(&flags));
  TEST_CHECK(flags == (0x80 | 0x8 | 0x4));
  size_t depth = 0;
  TEST_CHECK(cuCtxGetLimit(&depth, CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) ==
             CUDA_ERROR_UNSUPPORTED_LIMIT);
  TEST_CHECK(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 4) == CUDA_ERROR_UNSUPPORTED_LIMIT);
  OK(cuCtxSetFlags(before));
  CUstream s, t;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
  CUdevice dev = -1;
  OK(cuStreamGetDevice(s, &dev));
  TEST_CHECK(dev == 0);
  dev = -1;
  OK(cuStreamGetDevice(NULL, &dev));
  TEST_CHECK(dev == 0);
  TEST_CHECK(cuStreamGetDevice(s, NULL) == CUDA_ERROR_INVALID_VALUE);
  CUstreamAttrValue v;
  memset(&v, 0, sizeof v);
  v.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
  OK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  OK(cuStreamCopyAttributes(t, s));
  memset(&v, 0, sizeof v);
  OK(cuStreamGetAttribute(t, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  TEST_CHECK(v.syncPolicy == CU_SYNC_POLICY_BLOCKING_SYNC);
  CUdeviceptr d;
  uint32_t one = 1, got = 0;
  OK(cuMemAlloc_v2(&d, 4096));
  OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
  TEST_CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 0x1234) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_MAPPED, d) ==
             CUDA_ERROR_INVALID_VALUE);
  /* the context's event comes after the memset on another stream */
  CUcontext ctx;
  CUevent e;
  OK(cuCtxGetCurrent(&ctx));
  OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  OK(cuMemsetD32Async(d, 7, 1024, s));
  OK(cuCtxRecordEvent(ctx, e));
  OK(cuEventSynchronize(e));
  OK(cuMemcpyDtoH_v2(&got, d + 4092, 4));
  TEST_CHECK(got == 7);
  OK(cuCtxWaitEvent(ctx, e));
  OK(cuCtxRecordEvent(NULL, e)); /* the current context */
  TEST_CHECK(cuCtxWaitEvent(ctx, NULL) == CUDA_ERROR_INVALID_HANDLE);
  /* CUDA 10's cuGraphInstantiate: five parameters, as cuGraphInstantiate_v2 */
  typedef CUresult (*instantiate_v1)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
  instantiate_v1 inst = (instantiate_v1)own("cuGraphInstantiate");
  TEST_CHECK(inst != NULL);
  CUgraph g;
  CUgraphExec x;
  CUgraphNode err = (CUgraphNode)&got;
  char log[16] = "junk";
  OK(cuGraphCreate(&g, 0));
  if (inst) {
    OK(inst(&x, g, &err, log, sizeof log));
    TEST_CHECK(err == NULL && log[0] == 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    OK(cuGraphExecDestroy(x));
  }
  OK(cuGraphDestroy(g));
  OK(cuEventDestroy_v2(e));
  OK(cuMemFree_v2(d));
  OK(cuStreamDestroy_v2(s));
  OK(cuStreamDestroy_v2(t));
}

/* ---- on a GPU: kernels behind waits, cooperative launches ---- */

static const char add_ptx[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_value(.param .u64 p, .param .u32 v, .param .u32 n) {\n"
    "  .reg .b32 %r<7>; .reg .b64 %rd<4>; .reg .pred %q;\n"
    "  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [v]; ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r3, %r3, %r4, %r5;\n"
    "  setp.ge.u32 %q, %r3, %r2; @%q bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd2, %r3, 4; add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r6, [%rd3]; add.u32 %r6, %r6, %r1; st.global.u32 [%rd3], %r6;\n"
    "DONE:\n  ret;\n}\n";

static int all_equal(CUdeviceptr d, uint32_t n, uint32_t want) {
  uint32_t *h = malloc(n * 4ull);
  int bad = !h || cuMemcpyDtoH_v2(h, d, n * 4ull) != CUDA_SUCCESS;
  for (uint32_t i = 0; !bad && i < n; i++) bad = h[i] != want;
  free(h);
  return !bad;
}

static void test_kernel_behind_wait(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f;
  CUresult r = cuModuleLoadData(&mod, add_ptx);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuModuleGetFunction(&f, mod, "add_value"));
  uint32_t n = 1 << 16, v = 5, *flag;
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n * 4));
  OK(cuMemsetD32_v2(d, 1, n));
  OK(cuMemAllocHost_v2((void **)&flag, 64));
  store32(flag, 0);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  void *params[] = {&d, &v, &n};
  OK(cuStreamWaitValue32_v2(s, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  OK(cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
  OK(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)flag + 4, 9, 0));
  TEST_CHECK(still_waiting(s) && load32(flag + 1) == 0);
  store32(flag, 1);
  OK(cuStreamSynchronize(s));
  TEST_CHECK(load32(flag + 1) == 9);
  TEST_CHECK(all_equal(d, n, 6));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuMemFreeHost(flag));
  OK(cuModuleUnload(mod));
}

/* A library kernel's parameters, and the block-size query with its flag. */
static void test_kernel_queries(void) {
  NEED_KERNELS();
  CUlibrary lib;
  CUkernel k;
  CUresult r = cuLibraryLoadData(&lib, add_ptx, NULL, NULL, 0, NULL, NULL, 0);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuLibraryGetKernel(&k, lib, "add_value"));
  size_t off[3] = {1, 1, 1}, size[3] = {0, 0, 0};
  for (size_t i = 0; i < 3; i++) OK(cuKernelGetParamInfo(k, i, &off[i], &size[i]));
  TEST_CHECK(off[0] == 0 && size[0] == 8 && off[1] == 8 && size[1] == 4 && off[2] == 12 &&
             size[2] == 4);
  TEST_CHECK(cuKernelGetParamInfo(k, 3, &off[0], &size[0]) == CUDA_ERROR_INVALID_VALUE);
  CUfunction f;
  OK(cuKernelGetFunction(&f, k));
  int grid0 = 0, block0 = 0, grid1 = 0, block1 = 0;
  OK(cuOccupancyMaxPotentialBlockSize(&grid0, &block0, f, NULL, 0, 0));
  OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid1, &block1, f, NULL, 0, 0,
                                               CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
  TEST_CHECK(block0 > 0 && grid0 > 0 && block1 == block0 && grid1 == grid0);
  TEST_CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid1, &block1, f, NULL, 0, 0, 2) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuLibraryUnload(lib));
}

/* The largest co-resident grid launches cooperatively; one block more is refused, by both
 * calls, before anything runs. */
static void test_cooperative(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f;
  CUresult r = cuModuleLoadData(&mod, add_ptx);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuModuleGetFunction(&f, mod, "add_value"));
  int per_sm = 0, sms = 0;
  OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 256, 0));
  OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  unsigned most = (unsigned)(per_sm * sms), n = (most + 1) * 256, v = 1;
  TEST_CHECK(most > 0);
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n * 4ull));
  OK(cuMemsetD32_v2(d, 0, n));
  void *params[] = {&d, &v, &n};
  TEST_CHECK(cuLaunchCooperativeKernel(f, most + 1, 1, 1, 256, 1, 1, 0, NULL, params) ==
             CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
  coop.value.cooperative = 1;
  CUlaunchConfig cfg = {most + 1, 1, 1, 256, 1, 1, 0, NULL, &coop, 1};
  TEST_CHECK(cuLaunchKernelEx(&cfg, f, params, NULL) == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  OK(cuCtxSynchronize());
  TEST_CHECK(all_equal(d, n, 0)); /* nothing ran */
  OK(cuLaunchCooperativeKernel(f, most, 1, 1, 256, 1, 1, 0, NULL, params));
  cfg.gridDimX = most;
  OK(cuLaunchKernelEx(&cfg, f, params, NULL));
  OK(cuCtxSynchronize());
  uint32_t last = 7;
  OK(cuMemcpyDtoH_v2(&last, d + (n - 1) * 4ull, 4));
  TEST_CHECK(all_equal(d, most * 256, 2) && last == 0);
  /* not cooperative: the large grid is fine */
  coop.value.cooperative = 0;
  cfg.gridDimX = most + 1;
  OK(cuLaunchKernelEx(&cfg, f, params, NULL));
  OK(cuCtxSynchronize());
  OK(cuMemcpyDtoH_v2(&last, d + (n - 1) * 4ull, 4));
  TEST_CHECK(last == 1);
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod));
}

/* A wait nothing satisfies does not hang the program: the device timeout ends the wait for the
 * stream with CUDA_ERROR_LAUNCH_TIMEOUT. Runs where NVHCQ_TIMEOUT_MS is at most 1000 (ctest's
 * test_cuda_stream_timeout_mock), and last: the device then refuses work until it is recovered. */
static void test_wait_never_met(void) {
  const char *t = getenv("NVHCQ_TIMEOUT_MS");
  if (!t || atoi(t) <= 0 || atoi(t) > 1000) TEST_SKIP("set NVHCQ_TIMEOUT_MS=200 to run it");
  NEED_DEVICE();
  uint32_t *flag;
  OK(cuMemAllocHost_v2((void **)&flag, 64));
  store32(flag, 0);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamWaitValue32_v2(s, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  TEST_CHECK(cuStreamSynchronize(s) == CUDA_ERROR_LAUNCH_TIMEOUT);
  TEST_CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
}

TEST_MAIN(TEST(test_names), TEST(test_attributes), TEST(test_wait_holds_copy),
          TEST(test_wait_conditions), TEST(test_write_values), TEST(test_batch),
          TEST(test_batch_captured), TEST(test_ids_and_attributes), TEST(test_capture_info),
          TEST(test_small_calls), TEST(test_context_calls), TEST(test_kernel_behind_wait),
          TEST(test_kernel_queries), TEST(test_cooperative), TEST(test_wait_never_met))
