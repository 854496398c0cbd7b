/* Conditional graph nodes of nvhcq's libcuda.so.1: IF, IF/ELSE, WHILE and SWITCH nodes whose
 * conditions kernels set, default values at each launch, nesting, body graphs filled by capture,
 * clones, updates, and the calls' refusals; on a GPU or the mock (NVHCQ_MOCK=1: its kernels are
 * PTX, which store to the handle's address as cudaGraphSetConditional does; the call itself runs
 * on a GPU only). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test.h"

#define N 256

/* set_cond(h, v): the condition of handle h becomes v (one thread). count_down(h, h2, counter,
 * hits): *counter -= 1, *hits += 1, h = (*counter != 0), h2 = *counter & 1. */
static const char *const kernels_ptx =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry set_cond(.param .u64 h, .param .u32 v) {\n"
    "  .reg .b32 %r<3>; .reg .b64 %rd<2>; .reg .pred %q;\n"
    "  mov.u32 %r2, %tid.x; setp.ne.u32 %q, %r2, 0; @%q bra DONE;\n"
    "  ld.param.u64 %rd1, [h]; ld.param.u32 %r1, [v];\n"
    "  st.global.u32 [%rd1], %r1;\n"
    "DONE:\n  ret;\n}\n"
    ".visible .entry count_down(.param .u64 h, .param .u64 h2, .param .u64 counter,\n"
    "                           .param .u64 hits) {\n"
    "  .reg .b32 %r<6>; .reg .b64 %rd<5>; .reg .pred %q;\n"
    "  ld.param.u64 %rd1, [h]; ld.param.u64 %rd2, [h2];\n"
    "  ld.param.u64 %rd3, [counter]; ld.param.u64 %rd4, [hits];\n"
    "  ld.global.u32 %r1, [%rd3]; sub.u32 %r1, %r1, 1; st.global.u32 [%rd3], %r1;\n"
    "  ld.global.u32 %r2, [%rd4]; add.u32 %r2, %r2, 1; st.global.u32 [%rd4], %r2;\n"
    "  setp.ne.u32 %q, %r1, 0; selp.u32 %r3, 1, 0, %q; st.global.u32 [%rd1], %r3;\n"
    "  and.b32 %r4, %r1, 1; st.global.u32 [%rd2], %r4;\n"
    "  ret;\n}\n";

/* set_cond_call(h, v): as set_cond, through cudaGraphSetConditional (a module of its own: the
 * mock's PTX runner takes no calls). */
static const char *const call_ptx =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);\n"
    ".visible .entry set_cond_call(.param .u64 h, .param .u32 v) {\n"
    "  .reg .b32 %r<2>; .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [h]; ld.param.u32 %r1, [v];\n"
    "  { .param .b64 a0; st.param.b64 [a0], %rd1; .param .b32 a1; st.param.b32 [a1], %r1;\n"
    "    call.uni cudaGraphSetConditional, (a0, a1); }\n"
    "  ret;\n}\n";

typedef struct kernels {
  CUmodule mod, add_mod, call_mod;
  CUfunction set, count, set_call, add;
} kernels;

static CUcontext ctx;

/* The kernels, or 0 (with the reason) where the PTX does not load (nvJitLink needed). */
static int load(kernels *k) {
  memset(k, 0, sizeof *k);
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return 0;
  if (cuModuleLoadData(&k->mod, kernels_ptx) != CUDA_SUCCESS) return 0;
  OK(cuModuleGetFunction(&k->set, k->mod, "set_cond"));
  OK(cuModuleGetFunction(&k->count, k->mod, "count_down"));
  OK(cuModuleLoadData(&k->add_mod, cuda_test_add_ptx()));
  OK(cuModuleGetFunction(&k->add, k->add_mod, "add_value"));
  return 1;
}

static void unload(kernels *k) {
  OK(cuModuleUnload(k->mod));
  OK(cuModuleUnload(k->add_mod));
  if (k->call_mod) OK(cuModuleUnload(k->call_mod));
}

#define NEED_COND_KERNELS(k)                                                                       \
  do {                                                                                             \
    NEED_KERNELS();                                                                                \
    if (!load(k)) TEST_SKIP("the test's PTX does not load here (nvJitLink needed)");               \
  } while (0)

static CUDA_KERNEL_NODE_PARAMS one_thread(CUfunction f, void **params) {
  return (CUDA_KERNEL_NODE_PARAMS){.func = f,
                                   .gridDimX = 1,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 32,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .kernelParams = params};
}

static CUDA_MEMSET_NODE_PARAMS memset_32(CUdeviceptr dst, uint32_t value, size_t n) {
  return (CUDA_MEMSET_NODE_PARAMS){
      .dst = dst, .value = value, .elementSize = 4, .width = n, .height = 1};
}

static uint32_t word(CUdeviceptr d) {
  uint32_t v = 0xdeadbeef;
  OK(cuMemcpyDtoH_v2(&v, d, 4));
  return v;
}

static int all_are(CUdeviceptr d, uint32_t want) {
  uint32_t h[N];
  int same = cuMemcpyDtoH_v2(h, d, sizeof h) == CUDA_SUCCESS;
  for (uint32_t i = 0; same && i < N; i++) same = h[i] == want;
  return same;
}

/* A conditional node of `type` with `size` bodies after `dep` (NULL: a root), its bodies in out. */
static CUresult add_cond(CUgraphNode *node, CUgraph g, CUgraphNode dep, CUgraphConditionalHandle h,
                         CUgraphConditionalNodeType type, unsigned size, CUgraph **bodies) {
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = h;
  p.conditional.type = type;
  p.conditional.size = size;
  p.conditional.ctx = ctx;
  CUresult r = cuGraphAddNode(node, g, dep ? &dep : NULL, dep ? 1 : 0, &p);
  if (bodies) *bodies = p.conditional.phGraph_out;
  return r;
}

/* A graph whose first node, f(h, v[, extra]) on one thread, sets the condition of the graph's
 * handle h to v. Kept in place: the parameters point into it. */
typedef struct setter {
  CUgraph g;
  CUgraphConditionalHandle h;
  uint32_t v;
  void *params[3];
  CUDA_KERNEL_NODE_PARAMS kp;
  CUgraphNode set;
} setter;

static void setter_make(setter *s, CUfunction f, uint32_t v, void *extra) {
  memset(s, 0, sizeof *s);
  OK(cuGraphCreate(&s->g, 0));
  OK(cuGraphConditionalHandleCreate(&s->h, s->g, ctx, 0, 0));
  s->v = v;
  s->params[0] = &s->h, s->params[1] = &s->v, s->params[2] = extra;
  s->kp = one_thread(f, s->params);
  s->kp.blockDimX = 1;
}

static void setter_add(setter *s, const CUgraphNode *deps, size_t n) {
  OK(cuGraphAddKernelNode_v2(&s->set, s->g, deps, n, &s->kp));
}

/* One launch of e, its setter node giving the condition v, and the stream's end. */
static void setter_run(setter *s, CUgraphExec e, uint32_t v, CUstream st) {
  s->v = v;
  OK(cuGraphExecKernelNodeSetParams_v2(e, s->set, &s->kp));
  OK(cuGraphLaunch(e, st));
  OK(cuStreamSynchronize(st));
}

/* ---- without a device ---- */

static void test_proc_address(void) {
  static const nvcu_proc_case cases[] = {
      {"cuGraphConditionalHandleCreate", 12030, 0, "cuGraphConditionalHandleCreate"},
      {"cuGraphConditionalHandleCreate", 12030, 2, "cuGraphConditionalHandleCreate"},
  };
  check_proc_cases(cases, sizeof cases / sizeof cases[0]);
}

/* ---- refusals ---- */

static void test_refusals(void) {
  NEED_DEVICE();
  OK(cuCtxGetCurrent(&ctx));
  CUgraph g, other;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphCreate(&other, 0));
  CUgraphConditionalHandle h, foreign;
  TEST_CHECK(cuGraphConditionalHandleCreate(NULL, g, ctx, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphConditionalHandleCreate(&h, g, ctx, 0, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGraphConditionalHandleCreate(&h, NULL, ctx, 0, 0) == CUDA_ERROR_INVALID_HANDLE);
  OK(cuGraphConditionalHandleCreate(&h, g, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  OK(cuGraphConditionalHandleCreate(&foreign, other, NULL, 0, 0));
  TEST_CHECK(h != 0 && foreign != h);
  CUgraphNode n;
  CUgraph *bodies;
  TEST_CHECK(add_cond(&n, g, NULL, foreign, CU_GRAPH_COND_TYPE_IF, 1, &bodies) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(add_cond(&n, g, NULL, h, CU_GRAPH_COND_TYPE_IF, 3, NULL) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(add_cond(&n, g, NULL, h, CU_GRAPH_COND_TYPE_IF, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(add_cond(&n, g, NULL, h, CU_GRAPH_COND_TYPE_WHILE, 2, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(add_cond(&n, g, NULL, h, (CUgraphConditionalNodeType)7, 1, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  size_t count = 9;
  OK(cuGraphGetNodes(g, NULL, &count));
  TEST_CHECK_MSG(count == 0, "refused nodes left %zu nodes", count);
  OK(add_cond(&n, g, NULL, h, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies));
  CUgraphNodeType type;
  OK(cuGraphNodeGetType(n, &type));
  TEST_CHECK(type == CU_GRAPH_NODE_TYPE_CONDITIONAL);
  TEST_CHECK(bodies && bodies[0] && bodies[1] && bodies[2] && bodies[0] != bodies[1]);
  TEST_CHECK(cuGraphDestroy(bodies[1]) == CUDA_ERROR_INVALID_VALUE); /* the node owns it */
  /* a handle of the outer graph serves a node inside a body; one of a body, not the outer graph */
  CUgraphConditionalHandle inner;
  OK(cuGraphConditionalHandleCreate(&inner, bodies[0], ctx, 0, 0));
  CUgraphNode nested;
  OK(add_cond(&nested, bodies[0], NULL, h, CU_GRAPH_COND_TYPE_IF, 1, NULL));
  TEST_CHECK(add_cond(&n, g, NULL, inner, CU_GRAPH_COND_TYPE_IF, 1, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  TEST_CHECK(cuGraphNodeSetParams(nested, &p) == CUDA_ERROR_NOT_SUPPORTED);
  char path[] = "/tmp/nvhcq-cond-XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0);
  if (fd >= 0) {
    close(fd);
    OK(cuGraphDebugDotPrint(g, path, 0));
    FILE *f = fopen(path, "r");
    char text[8192] = {0};
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    TEST_CHECK_MSG(got && strstr(text, "CONDITIONAL") && strstr(text, "SWITCH") &&
                       strstr(text, "body graph 2"),
                   "DOT output:\n%s", text);
    unlink(path);
  }
  OK(cuGraphDestroy(g));
  OK(cuGraphDestroy(other));
}

/* ---- IF and IF/ELSE ---- */

/* set_cond(h, v) then IF(h) { x = 7 } else { y = 9 } (else only with two bodies). */
static void run_if(const kernels *k, unsigned size) {
  CUdeviceptr x, y;
  OK(cuMemAlloc_v2(&x, 4 * N));
  OK(cuMemAlloc_v2(&y, 4 * N));
  setter s;
  setter_make(&s, k->set, 1, NULL);
  setter_add(&s, NULL, 0);
  CUgraphNode cond, m;
  CUgraph *bodies;
  OK(add_cond(&cond, s.g, s.set, s.h, CU_GRAPH_COND_TYPE_IF, size, &bodies));
  CUDA_MEMSET_NODE_PARAMS mx = memset_32(x, 7, N), my = memset_32(y, 9, N);
  OK(cuGraphAddMemsetNode(&m, bodies[0], NULL, 0, &mx, ctx));
  if (size == 2) OK(cuGraphAddMemsetNode(&m, bodies[1], NULL, 0, &my, ctx));
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, s.g, 0));
  for (int round = 0; round < 4; round++) {
    uint32_t v = round & 1 ? 0 : 1;
    OK(cuMemsetD32_v2(x, 0, N));
    OK(cuMemsetD32_v2(y, 0, N));
    setter_run(&s, e, v, NULL);
    uint32_t want_y = size == 2 && !v ? 9 : 0;
    TEST_CHECK_MSG(all_are(x, v ? 7 : 0) && all_are(y, want_y),
                   "IF of %u bodies, condition %u: x %u, y %u", size, v, word(x), word(y));
  }
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(s.g));
  OK(cuMemFree_v2(x));
  OK(cuMemFree_v2(y));
}

static void test_if(void) {
  kernels k;
  NEED_COND_KERNELS(&k);
  run_if(&k, 1);
  run_if(&k, 2);
  unload(&k);
}

/* ---- WHILE, defaults and nesting ---- */

/* counter = 5; WHILE(h, default 1 at each launch) { count_down; IF(h2) { odd += 1 } }: the body
 * runs 5 times per launch, the IF twice (counter 3 and 1). */
static void test_while(void) {
  kernels k;
  NEED_COND_KERNELS(&k);
  CUdeviceptr counter, hits, odd;
  OK(cuMemAlloc_v2(&counter, 4));
  OK(cuMemAlloc_v2(&hits, 4));
  OK(cuMemAlloc_v2(&odd, 4));
  OK(cuMemsetD32_v2(hits, 0, 1));
  OK(cuMemsetD32_v2(odd, 0, 1));
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphConditionalHandle h;
  OK(cuGraphConditionalHandleCreate(&h, g, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  CUgraphNode init, loop, step, odd_if, add;
  CUDA_MEMSET_NODE_PARAMS mc = memset_32(counter, 5, 1);
  OK(cuGraphAddMemsetNode(&init, g, NULL, 0, &mc, ctx));
  CUgraph *body, *then;
  OK(add_cond(&loop, g, init, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body));
  CUgraphConditionalHandle h2;
  OK(cuGraphConditionalHandleCreate(&h2, body[0], ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
  void *cparams[] = {&h, &h2, &counter, &hits};
  CUDA_KERNEL_NODE_PARAMS kp = one_thread(k.count, cparams);
  kp.blockDimX = 1;
  OK(cuGraphAddKernelNode_v2(&step, body[0], NULL, 0, &kp));
  OK(add_cond(&odd_if, body[0], step, h2, CU_GRAPH_COND_TYPE_IF, 1, &then));
  uint32_t one = 1, n1 = 1;
  void *aparams[] = {&odd, &one, &n1};
  CUDA_KERNEL_NODE_PARAMS ap = one_thread(k.add, aparams);
  OK(cuGraphAddKernelNode_v2(&add, then[0], NULL, 0, &ap));
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, g, 0));
  for (uint32_t launch = 1; launch <= 3; launch++) {
    OK(cuGraphLaunch(e, NULL));
    OK(cuCtxSynchronize());
    TEST_CHECK_MSG(word(counter) == 0 && word(hits) == 5 * launch && word(odd) == 2 * launch,
                   "launch %u: counter %u, hits %u (want %u), odd %u (want %u)", launch,
                   word(counter), word(hits), 5 * launch, word(odd), 2 * launch);
  }
  /* a clone runs the same, after the original is gone */
  CUgraph clone;
  OK(cuGraphClone(&clone, g));
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(g));
  OK(cuGraphInstantiateWithFlags(&e, clone, 0));
  OK(cuGraphDestroy(clone));
  OK(cuGraphLaunch(e, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK_MSG(word(hits) == 20 && word(odd) == 8, "clone: hits %u, odd %u", word(hits),
                 word(odd));
  OK(cuGraphExecDestroy(e));
  OK(cuMemFree_v2(counter));
  OK(cuMemFree_v2(hits));
  OK(cuMemFree_v2(odd));
  unload(&k);
}

/* ---- SWITCH, capture into a body, updates ---- */

static void test_switch(void) {
  kernels k;
  NEED_COND_KERNELS(&k);
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4 * N));
  setter sw;
  setter_make(&sw, k.set, 0, NULL);
  setter_add(&sw, NULL, 0);
  CUgraphNode node;
  CUgraph *bodies;
  OK(add_cond(&node, sw.g, sw.set, sw.h, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies));
  /* each body filled by capture: x = 10 + i */
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (unsigned i = 0; i < 3; i++) {
    OK(cuStreamBeginCaptureToGraph(s, bodies[i], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD32Async(x, 10 + i, N, s));
    CUgraph got;
    OK(cuStreamEndCapture(s, &got));
    TEST_CHECK(got == bodies[i]);
  }
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, sw.g, 0));
  const uint32_t values[] = {2, 0, 5, 1, 3};
  for (unsigned i = 0; i < sizeof values / sizeof values[0]; i++) {
    uint32_t v = values[i], want = v < 3 ? 10 + v : 1;
    OK(cuMemsetD32Async(x, 1, N, s));
    setter_run(&sw, e, v, s);
    TEST_CHECK_MSG(all_are(x, want), "SWITCH on %u: x %u, want %u", v, word(x), want);
  }
  /* an update takes a graph of the same shape made anew: its handle, its bodies (x = 20 + i) */
  setter fresh;
  setter_make(&fresh, k.set, 1, NULL);
  setter_add(&fresh, NULL, 0);
  OK(add_cond(&node, fresh.g, fresh.set, fresh.h, CU_GRAPH_COND_TYPE_SWITCH, 3, &bodies));
  for (unsigned i = 0; i < 3; i++) {
    CUDA_MEMSET_NODE_PARAMS mp = memset_32(x, 20 + i, N);
    OK(cuGraphAddMemsetNode(&node, bodies[i], NULL, 0, &mp, ctx));
  }
  CUgraphExecUpdateResultInfo info;
  OK(cuGraphExecUpdate_v2(e, fresh.g, &info));
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  fresh.set = sw.set; /* the executable graph names its nodes by the graph it was made from */
  setter_run(&fresh, e, 1, s);
  TEST_CHECK_MSG(all_are(x, 21), "after the update: x %u, want 21", word(x));
  /* a node of another type in its place is refused and changes nothing */
  setter wrong;
  setter_make(&wrong, k.set, 0, NULL);
  setter_add(&wrong, NULL, 0);
  OK(add_cond(&node, wrong.g, wrong.set, wrong.h, CU_GRAPH_COND_TYPE_IF, 1, NULL));
  TEST_CHECK(cuGraphExecUpdate_v2(e, wrong.g, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  TEST_CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  setter_run(&fresh, e, 2, s);
  TEST_CHECK_MSG(all_are(x, 22), "after a refused update: x %u, want 22", word(x));
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(sw.g));
  OK(cuGraphDestroy(fresh.g));
  OK(cuGraphDestroy(wrong.g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(x));
  unload(&k);
}

/* ---- a body captured across two streams (cuda.core's GraphBuilder.split and join in one) ---- */

static void test_body_fork_join(void) {
  kernels k;
  NEED_COND_KERNELS(&k);
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4 * 3 * N));
  OK(cuMemsetD32_v2(x, 0, 3 * N));
  setter s;
  setter_make(&s, k.set, 1, NULL);
  setter_add(&s, NULL, 0);
  CUgraphNode cond;
  CUgraph *body;
  OK(add_cond(&cond, s.g, s.set, s.h, CU_GRAPH_COND_TYPE_IF, 1, &body));
  CUstream sb, sc;
  OK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&sc, CU_STREAM_NON_BLOCKING));
  CUevent fork, back;
  OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  OK(cuEventCreate(&back, CU_EVENT_DISABLE_TIMING));
  OK(cuStreamBeginCaptureToGraph(sb, body[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemsetD32Async(x, 1, N, sb));
  OK(cuEventRecord(fork, sb));
  OK(cuStreamWaitEvent(sc, fork, 0));
  OK(cuMemsetD32Async(x + 4 * N, 2, N, sc));
  OK(cuEventRecord(back, sc));
  OK(cuStreamWaitEvent(sb, back, 0));
  OK(cuMemsetD32Async(x + 8 * N, 3, N, sb));
  CUgraph got;
  OK(cuStreamEndCapture(sb, &got));
  TEST_CHECK(got == body[0]);
  size_t count = 0;
  OK(cuGraphGetNodes(body[0], NULL, &count));
  TEST_CHECK_MSG(count == 3, "the body has %zu nodes, want 3", count);
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, s.g, 0));
  setter_run(&s, e, 1, sb);
  TEST_CHECK_MSG(all_are(x, 1) && all_are(x + 4 * N, 2) && all_are(x + 8 * N, 3),
                 "the body's three memsets: %u %u %u", word(x), word(x + 4 * N), word(x + 8 * N));
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(s.g));
  OK(cuEventDestroy_v2(fork));
  OK(cuEventDestroy_v2(back));
  OK(cuStreamDestroy_v2(sb));
  OK(cuStreamDestroy_v2(sc));
  OK(cuMemFree_v2(x));
  unload(&k);
}

/* ---- cudaGraphSetConditional itself (a GPU: the mock's PTX runner has no calls) ---- */

/* The kernel calls cudaGraphSetConditional, which nvhcq's device syscalls provide. */
static void test_set_conditional_call(void) {
  kernels k;
  NEED_COND_KERNELS(&k);
  /* the module loads (its call resolved to the device syscall) on the mock too */
  OK(cuModuleLoadData(&k.call_mod, call_ptx));
  OK(cuModuleGetFunction(&k.set_call, k.call_mod, "set_cond_call"));
  if (on_mock()) {
    unload(&k);
    TEST_SKIP("needs a GPU to run (the mock runs no PTX calls; the module loaded)");
  }
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4 * N));
  setter s;
  setter_make(&s, k.set_call, 1, NULL);
  setter_add(&s, NULL, 0);
  CUgraphNode cond, m;
  CUgraph *bodies;
  OK(add_cond(&cond, s.g, s.set, s.h, CU_GRAPH_COND_TYPE_IF, 2, &bodies));
  CUDA_MEMSET_NODE_PARAMS m7 = memset_32(x, 7, N), m8 = memset_32(x, 8, N);
  OK(cuGraphAddMemsetNode(&m, bodies[0], NULL, 0, &m7, ctx));
  OK(cuGraphAddMemsetNode(&m, bodies[1], NULL, 0, &m8, ctx));
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, s.g, 0));
  for (int round = 0; round < 6; round++) {
    uint32_t v = round % 3 == 1 ? 0 : (uint32_t)round + 1;
    setter_run(&s, e, v, NULL);
    TEST_CHECK_MSG(all_are(x, v ? 7 : 8), "cudaGraphSetConditional(h, %u): x %u", v, word(x));
  }
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(s.g));
  OK(cuMemFree_v2(x));
  unload(&k);
}

/* The same from nvcc's cubin (tests/cuda/cond_kernels.cu), where the call goes through constant
 * bank 4: four blocks of 64 threads count, block 0 sets the condition. */
static void test_cubin_set_conditional(void) {
  NEED_DEVICE();
  OK(cuCtxGetCurrent(&ctx));
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/cond_sm_90.cubin", dir ? dir : ".");
  if (access(path, R_OK)) TEST_SKIP("no cond_sm_90.cubin (built with the CUDA toolkit's nvcc)");
  int major = 0;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  if (major != 9) TEST_SKIP("the cubin is for sm_90");
  CUmodule mod;
  CUfunction f;
  OK(cuModuleLoad(&mod, path));
  OK(cuModuleGetFunction(&f, mod, "set_condition"));
  if (on_mock()) {
    OK(cuModuleUnload(mod));
    TEST_SKIP("needs a GPU to run (the mock runs PTX only; the cubin loaded)");
  }
  CUdeviceptr x, count;
  OK(cuMemAlloc_v2(&x, 4 * N));
  OK(cuMemAlloc_v2(&count, 4));
  setter s;
  setter_make(&s, f, 0, &count);
  s.kp.gridDimX = 4, s.kp.blockDimX = 64;
  CUgraphNode zero, cond, m;
  CUDA_MEMSET_NODE_PARAMS mz = memset_32(count, 0, 1), m5 = memset_32(x, 5, N);
  OK(cuGraphAddMemsetNode(&zero, s.g, NULL, 0, &mz, ctx));
  setter_add(&s, &zero, 1);
  CUgraph *bodies;
  OK(add_cond(&cond, s.g, s.set, s.h, CU_GRAPH_COND_TYPE_IF, 1, &bodies));
  OK(cuGraphAddMemsetNode(&m, bodies[0], NULL, 0, &m5, ctx));
  CUgraphExec e;
  OK(cuGraphInstantiateWithFlags(&e, s.g, 0));
  for (int round = 0; round < 4; round++) {
    uint32_t v = (uint32_t)round & 1;
    OK(cuMemsetD32_v2(x, 0, N));
    setter_run(&s, e, v, NULL);
    TEST_CHECK_MSG(all_are(x, v ? 5 : 0) && word(count) == 256,
                   "condition %u: x %u, count %u (want 256)", v, word(x), word(count));
  }
  OK(cuGraphExecDestroy(e));
  OK(cuGraphDestroy(s.g));
  OK(cuMemFree_v2(x));
  OK(cuMemFree_v2(count));
  OK(cuModuleUnload(mod));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_refusals), TEST(test_if), TEST(test_while),
          TEST(test_switch), TEST(test_body_fork_join), TEST(test_set_conditional_call),
          TEST(test_cubin_set_conditional))
