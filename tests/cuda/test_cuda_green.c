/* Green contexts of nvhcq's libcuda.so.1: SM resources and their splits, descriptors, green
 * contexts with their contexts, streams and events, and launches kept to their SMs (checked by
 * %smid: disjoint groups run on disjoint SMs, never more than a group holds), in streams, in the
 * NULL stream while one is current, and in a graph captured from one; on a GPU or the mock. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

#define IS(x, want) TEST_CHECK_MSG((x) == (want), "%s: %d, want %d", #x, (int)(x), (int)(want))

/* Each block's first thread writes the SM the block ran on. */
static const char *const smid_ptx =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry record_smid(.param .u64 out) {\n"
    "  .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p;\n"
    "  mov.u32 %r1, %tid.x; setp.ne.u32 %p, %r1, 0; @%p bra DONE;\n"
    "  mov.u32 %r2, %smid; mov.u32 %r3, %ctaid.x; ld.param.u64 %rd1, [out];\n"
    "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd2, %r3, 4; add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3], %r2;\n"
    "DONE:\n  ret;\n}\n";

#define BLOCKS 1056 /* 8 per SM of an H200 */

/* ---- without a device ---- */

static void test_proc_address(void) {
  static const nvcu_proc_case cases[] = {
      {"cuDeviceGetDevResource", 12040, 0, "cuDeviceGetDevResource"},
      {"cuCtxGetDevResource", 12040, 0, "cuCtxGetDevResource"},
      {"cuGreenCtxGetDevResource", 12040, 0, "cuGreenCtxGetDevResource"},
      {"cuDevSmResourceSplitByCount", 12040, 0, "cuDevSmResourceSplitByCount"},
      {"cuDevResourceGenerateDesc", 12040, 0, "cuDevResourceGenerateDesc"},
      {"cuGreenCtxCreate", 12040, 0, "cuGreenCtxCreate"},
      {"cuGreenCtxDestroy", 12040, 0, "cuGreenCtxDestroy"},
      {"cuCtxFromGreenCtx", 12040, 0, "cuCtxFromGreenCtx"},
      {"cuGreenCtxRecordEvent", 12040, 0, "cuGreenCtxRecordEvent"},
      {"cuGreenCtxWaitEvent", 12040, 0, "cuGreenCtxWaitEvent"},
      {"cuStreamGetGreenCtx", 12040, 0, "cuStreamGetGreenCtx"},
      {"cuGreenCtxStreamCreate", 12050, 0, "cuGreenCtxStreamCreate"},
      {"cuGreenCtxGetId", 12090, 0, "cuGreenCtxGetId"},
  };
  check_proc_cases(cases, sizeof cases / sizeof cases[0]);
}

/* ---- resources ---- */

/* Green contexts need the measured TPC map (src/exec/tpc.c) with every SM under a slot. */
#define NEED_GREEN(res)                                                                            \
  do {                                                                                             \
    CUresult r_ = cuDeviceGetDevResource(0, (res), CU_DEV_RESOURCE_TYPE_SM);                       \
    if (r_ == CUDA_ERROR_NOT_SUPPORTED)                                                            \
      TEST_SKIP("this GPU offers no TPC slots to masks: green contexts are not supported");        \
    OK(r_);                                                                                        \
  } while (0)

static void test_resources(void) {
  NEED_DEVICE();
  CUdevResource dev, groups[40], rest, again[2];
  NEED_GREEN(&dev);
  int sms = 0;
  OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  TEST_CHECK_MSG(dev.type == CU_DEV_RESOURCE_TYPE_SM && dev.sm.smCount > 0 &&
                     dev.sm.smCount <= (unsigned)sms && dev.sm.minSmPartitionSize == 8 &&
                     dev.sm.smCoscheduledAlignment == 8,
                 "%u SMs of %d, min %u, alignment %u", dev.sm.smCount, sms,
                 dev.sm.minSmPartitionSize, dev.sm.smCoscheduledAlignment);
  IS(cuDeviceGetDevResource(0, &dev, CU_DEV_RESOURCE_TYPE_INVALID),
     CUDA_ERROR_INVALID_RESOURCE_TYPE);
  unsigned n = 0, total = dev.sm.smCount;
  OK(cuDevSmResourceSplitByCount(NULL, &n, &dev, NULL, 0, 16)); /* a query */
  TEST_CHECK_MSG(n == total / 16, "%u groups of 16, want %u", n, total / 16);
  n = 2;
  OK(cuDevSmResourceSplitByCount(groups, &n, &dev, &rest, 0, 13)); /* 13 rounds up to 16 */
  TEST_CHECK(n == 2 && groups[0].sm.smCount == 16 && groups[1].sm.smCount == 16 &&
             rest.sm.smCount == total - 32);
  n = 40;
  OK(cuDevSmResourceSplitByCount(groups, &n, &dev, &rest, 0, 0)); /* the minimum: 8 */
  TEST_CHECK_MSG(n == total / 8 && rest.sm.smCount == total % 8, "%u groups of 8, %u left", n,
                 rest.sm.smCount);
  n = 40;
  OK(cuDevSmResourceSplitByCount(groups, &n, &dev, NULL,
                                 CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 3));
  TEST_CHECK_MSG(n == (total / 4 < 40 ? total / 4 : 40) && groups[0].sm.smCount == 4,
                 "%u groups of %u without co-scheduling", n, groups[0].sm.smCount);
  n = 2;
  IS(cuDevSmResourceSplitByCount(again, &n, &groups[0], NULL, 0, 8),
     CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION); /* a split's result */
  IS(cuDevSmResourceSplitByCount(again, &n, &dev, NULL, 0, total + 8),
     CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  IS(cuDevSmResourceSplitByCount(again, &n, &dev, NULL, 4, 8), CUDA_ERROR_INVALID_VALUE);
  CUdevResource junk;
  memset(&junk, 0, sizeof junk);
  junk.type = CU_DEV_RESOURCE_TYPE_SM;
  IS(cuDevSmResourceSplitByCount(again, &n, &junk, NULL, 0, 8), CUDA_ERROR_INVALID_RESOURCE_TYPE);
  /* descriptors: results of one split together, not of two */
  CUdevResourceDesc desc;
  n = 2;
  OK(cuDevSmResourceSplitByCount(again, &n, &dev, NULL, 0, 8));
  OK(cuDevResourceGenerateDesc(&desc, groups, 2));
  CUdevResource mixed[2] = {groups[0], again[0]};
  IS(cuDevResourceGenerateDesc(&desc, mixed, 2), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  IS(cuDevResourceGenerateDesc(&desc, mixed, 0), CUDA_ERROR_INVALID_VALUE);
}

/* ---- green contexts and their launches ---- */

typedef struct green {
  CUgreenCtx g;
  CUcontext ctx;
  CUstream s;
} green;

static void green_make(green *out, const CUdevResource *group) {
  CUdevResourceDesc desc;
  OK(cuDevResourceGenerateDesc(&desc, (CUdevResource *)group, 1));
  IS(cuGreenCtxCreate(&out->g, desc, 0, 0), CUDA_ERROR_INVALID_VALUE); /* the flag is required */
  OK(cuGreenCtxCreate(&out->g, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
  OK(cuCtxFromGreenCtx(&out->ctx, out->g));
  IS(cuGreenCtxStreamCreate(&out->s, out->g, 0, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuGreenCtxStreamCreate(&out->s, out->g, CU_STREAM_NON_BLOCKING, 0));
}

/* The SMs (bit s of seen, 256 of them) a launch of record_smid ran on; their count. */
static unsigned ran_on(CUdeviceptr out, uint32_t seen[8]) {
  static uint32_t sm[BLOCKS];
  memset(seen, 0, 8 * sizeof *seen);
  if (cuMemcpyDtoH_v2(sm, out, sizeof sm) != CUDA_SUCCESS) return 0;
  unsigned count = 0;
  for (int i = 0; i < BLOCKS; i++) {
    uint32_t bit = 1u << (sm[i] % 32), *w = &seen[sm[i] / 32 % 8];
    count += !(*w & bit);
    *w |= bit;
  }
  return count;
}

static void launch_smid(CUfunction f, CUstream s, CUdeviceptr out) {
  void *params[] = {&out};
  OK(cuLaunchKernel(f, BLOCKS, 1, 1, 32, 1, 1, 0, s, params, NULL));
  OK(cuStreamSynchronize(s));
}

static int disjoint(const uint32_t a[8], const uint32_t b[8]) {
  for (int w = 0; w < 8; w++)
    if (a[w] & b[w]) return 0;
  return 1;
}

static void test_green_launches(void) {
  NEED_KERNELS();
  int major = 0;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  if (major < 9) TEST_SKIP("nvhcq keeps grids to TPCs on Hopper and later");
  CUdevResource dev, groups[2], rest;
  NEED_GREEN(&dev);
  CUcontext primary;
  OK(cuCtxGetCurrent(&primary));
  CUmodule mod;
  CUfunction f;
  if (cuModuleLoadData(&mod, smid_ptx) != CUDA_SUCCESS)
    TEST_SKIP("the test's PTX does not load here (nvJitLink needed)");
  OK(cuModuleGetFunction(&f, mod, "record_smid"));
  unsigned n = 2;
  OK(cuDevSmResourceSplitByCount(groups, &n, &dev, &rest, 0, 16));
  green a, b;
  green_make(&a, &groups[0]);
  green_make(&b, &groups[1]);
  unsigned long long ida = 0, idb = 0;
  OK(cuGreenCtxGetId(a.g, &ida));
  OK(cuGreenCtxGetId(b.g, &idb));
  TEST_CHECK(ida && idb && ida != idb);
  CUdevResource got;
  OK(cuGreenCtxGetDevResource(a.g, &got, CU_DEV_RESOURCE_TYPE_SM));
  TEST_CHECK(got.sm.smCount == 16);
  OK(cuCtxGetDevResource(a.ctx, &got, CU_DEV_RESOURCE_TYPE_SM));
  TEST_CHECK(got.sm.smCount == 16);
  OK(cuCtxGetDevResource(primary, &got, CU_DEV_RESOURCE_TYPE_SM));
  TEST_CHECK(got.sm.smCount == dev.sm.smCount);
  CUgreenCtx which = NULL;
  OK(cuStreamGetGreenCtx(a.s, &which));
  TEST_CHECK(which == a.g);
  CUstream plain;
  OK(cuStreamCreate(&plain, CU_STREAM_NON_BLOCKING));
  OK(cuStreamGetGreenCtx(plain, &which));
  TEST_CHECK(which == NULL);
  /* the stream's contexts: a green stream's is the green context over the primary context */
  CUcontext of = NULL;
  OK(cuStreamGetCtx(a.s, &of));
  TEST_CHECK(of == a.ctx);
  OK(cuStreamGetCtx_v2(a.s, &of, &which));
  TEST_CHECK(which == a.g && of == primary);
  OK(cuStreamGetCtx_v2(plain, &of, &which));
  TEST_CHECK(which == NULL && of == primary);
  CUdeviceptr out;
  OK(cuMemAlloc_v2(&out, 4 * BLOCKS));
  /* each green context's stream: its 16 SMs at most, the two disjoint */
  uint32_t seen_a[8], seen_b[8], seen[8];
  launch_smid(f, a.s, out);
  unsigned sa = ran_on(out, seen_a);
  launch_smid(f, b.s, out);
  unsigned sb = ran_on(out, seen_b);
  TEST_CHECK_MSG(sa >= 1 && sa <= 16 && sb >= 1 && sb <= 16 && disjoint(seen_a, seen_b),
                 "green contexts ran on %u and %u SMs%s", sa, sb,
                 disjoint(seen_a, seen_b) ? "" : ", some the same");
  /* a plain stream: all the SMs there are */
  launch_smid(f, plain, out);
  unsigned all = ran_on(out, seen);
  TEST_CHECK_MSG(all > 16, "a plain stream ran on %u SMs", all);
  printf("  green contexts of 16 SMs ran on %u and %u SMs, a plain stream on %u\n", sa, sb, all);
  /* with a's context current: the NULL stream and a stream made there keep to a's SMs */
  OK(cuCtxSetCurrent(a.ctx));
  launch_smid(f, NULL, out);
  unsigned s0 = ran_on(out, seen);
  TEST_CHECK_MSG(s0 <= 16 && disjoint(seen, seen_b), "the NULL stream in a's context: %u SMs", s0);
  CUstream made;
  OK(cuStreamCreate(&made, CU_STREAM_NON_BLOCKING));
  OK(cuStreamGetGreenCtx(made, &which));
  TEST_CHECK(which == a.g);
  OK(cuCtxSetCurrent(primary));
  /* captured from b's stream (after a memset: a graph part across both channels), the kernel
   * node keeps to b's SMs */
  OK(cuStreamBeginCapture_v2(b.s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemsetD32Async(out, 0xffffffff, BLOCKS, b.s));
  void *params[] = {&out};
  OK(cuLaunchKernel(f, BLOCKS, 1, 1, 32, 1, 1, 0, b.s, params, NULL));
  CUgraph g;
  OK(cuStreamEndCapture(b.s, &g));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, plain));
  OK(cuStreamSynchronize(plain));
  unsigned sg = ran_on(out, seen);
  TEST_CHECK_MSG(sg <= 16 && disjoint(seen, seen_a), "the captured node ran on %u SMs", sg);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  /* events across green contexts */
  CUevent ev;
  OK(cuEventCreate(&ev, 0));
  OK(cuGreenCtxRecordEvent(a.g, ev));
  OK(cuGreenCtxWaitEvent(b.g, ev));
  OK(cuEventSynchronize(ev));
  OK(cuEventDestroy_v2(ev));
  /* destroyed: its streams no longer name it, and still keep to its SMs */
  OK(cuGreenCtxDestroy(a.g));
  OK(cuStreamGetGreenCtx(a.s, &which));
  TEST_CHECK(which == NULL);
  launch_smid(f, a.s, out);
  TEST_CHECK(ran_on(out, seen) <= 16 && disjoint(seen, seen_b));
  OK(cuStreamDestroy_v2(a.s));
  OK(cuStreamDestroy_v2(made));
  OK(cuStreamDestroy_v2(b.s));
  OK(cuStreamDestroy_v2(plain));
  OK(cuGreenCtxDestroy(b.g));
  OK(cuMemFree_v2(out));
  OK(cuModuleUnload(mod));
}

/* Execution affinity: a created context of 20 SMs gets 24 (green contexts' rounding), says so,
 * and its grids keep to them; the usage-count calls of CUDA 2 on it. */
static void test_exec_affinity(void) {
  NEED_KERNELS();
  CUdevResource dev;
  NEED_GREEN(&dev);
  int supported = 0;
  OK(cuDeviceGetExecAffinitySupport(&supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0));
  TEST_CHECK(supported == 1);
  IS(cuDeviceGetExecAffinitySupport(&supported, CU_EXEC_AFFINITY_TYPE_MAX, 0),
     CUDA_ERROR_INVALID_VALUE);
  CUcontext primary, ctx, attached;
  OK(cuCtxGetCurrent(&primary));
  CUexecAffinityParam want = {.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT}, got;
  IS(cuCtxCreate_v3(&ctx, &want, 1, 0, 0), CUDA_ERROR_INVALID_VALUE); /* 0 SMs */
  want.param.smCount.val = 20;
  OK(cuCtxCreate_v3(&ctx, &want, 1, 0, 0));
  OK(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
  TEST_CHECK_MSG(got.type == CU_EXEC_AFFINITY_TYPE_SM_COUNT && got.param.smCount.val == 24,
                 "an affinity of 20 SMs gave %u", got.param.smCount.val);
  CUmodule mod;
  CUfunction f;
  if (cuModuleLoadData(&mod, smid_ptx) != CUDA_SUCCESS)
    TEST_SKIP("the test's PTX does not load here (nvJitLink needed)");
  OK(cuModuleGetFunction(&f, mod, "record_smid"));
  CUdeviceptr out;
  OK(cuMemAlloc_v2(&out, 4 * BLOCKS));
  uint32_t seen[8];
  launch_smid(f, NULL, out);
  unsigned used = ran_on(out, seen);
  TEST_CHECK_MSG(used >= 1 && used <= 24, "an affinity context's grid ran on %u SMs", used);
  printf("  an execution-affinity context of 20 (24) SMs ran a grid on %u SMs\n", used);
  /* usage counts: an attach, then two detaches, the second destroying the context */
  OK(cuCtxAttach(&attached, 0));
  TEST_CHECK(attached == ctx);
  IS(cuCtxAttach(&attached, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(out));
  OK(cuModuleUnload(mod));
  OK(cuCtxDetach(ctx));
  OK(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT)); /* still current */
  OK(cuCtxDetach(ctx));
  CUcontext now = ctx;
  OK(cuCtxGetCurrent(&now));
  TEST_CHECK(now != ctx);
  OK(cuCtxSetCurrent(primary));
  IS(cuCtxDetach(ctx), CUDA_ERROR_INVALID_CONTEXT);
  int sms = 0;
  OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  OK(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT)); /* the primary context: all */
  TEST_CHECK(got.param.smCount.val == (unsigned)sms);
  /* CUDA 13's cuCtxCreate takes the same parameters */
  CUctxCreateParams params = {.execAffinityParams = &want, .numExecAffinityParams = 1};
  want.param.smCount.val = 8;
  OK(cuCtxCreate_v4(&ctx, &params, 0, 0));
  OK(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
  TEST_CHECK(got.param.smCount.val == 8);
  OK(cuCtxDestroy_v2(ctx));
  OK(cuCtxSetCurrent(primary));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_resources), TEST(test_green_launches),
          TEST(test_exec_affinity))
