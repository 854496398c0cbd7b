/* What the driver-API test programs share: the mock switch, the sanitizer build, cuInit once, and
 * the skips for a device and for kernels. */
#ifndef NVHCQ_CUDA_TEST_H
#define NVHCQ_CUDA_TEST_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "test.h"

/* NVHCQ_MOCK=1: the library drives its mock GPU. */
static inline int on_mock(void) {
  const char *m = getenv("NVHCQ_MOCK");
  return m && *m && strcmp(m, "0") != 0;
}

/* ASan's shadow memory takes the addresses the mock's device memory needs. */
static inline int asan_build(void) {
#ifdef NO_DEVICE_ADDRESS_SPACE
  return 1;
#else
  return 0;
#endif
}

static CUresult init_result = (CUresult)-1;

static inline CUresult init_once(void) {
  if (init_result == (CUresult)-1) init_result = cuInit(0);
  return init_result;
}

/* A device with the primary context current, or a skip. */
#define NEED_DEVICE()                                                                              \
  do {                                                                                             \
    if (init_once() != CUDA_SUCCESS) TEST_SKIP("needs a GPU or NVHCQ_MOCK=1");                     \
    if (on_mock() && asan_build()) TEST_SKIP("the mock's device memory does not fit under ASan");  \
    CUcontext ctx_;                                                                                \
    TEST_CHECK(cuDevicePrimaryCtxRetain(&ctx_, 0) == CUDA_SUCCESS);                                \
    TEST_CHECK(cuCtxSetCurrent(ctx_) == CUDA_SUCCESS);                                             \
  } while (0)

/* A device that runs the test's kernels: they are PTX, which the mock GPU runs too. */
#define NEED_KERNELS() NEED_DEVICE()

/* A device that runs kernels from a cubin: the mock runs kernels only from PTX. */
#define NEED_CUBIN_KERNELS()                                                                       \
  do {                                                                                             \
    NEED_DEVICE();                                                                                 \
    if (on_mock())                                                                                 \
      TEST_SKIP("needs a GPU (the mock runs kernels from PTX, this test has a cubin)");            \
  } while (0)

#define OK(x) TEST_CHECK_MSG((x) == CUDA_SUCCESS, "%s", #x)

/* This library's own definition of a cu* name (the test links it, not NVIDIA's). */
static inline void *own(const char *name) {
  return dlsym(RTLD_DEFAULT, name);
}

/* One cuGetProcAddress_v2 lookup the test expects to succeed with the symbol named. */
typedef struct nvcu_proc_case {
  const char *name;
  int version, flags; /* flags: 0 default, 1 legacy stream, 2 per-thread stream */
  const char *symbol;
} nvcu_proc_case;

/* Each name resolves, at its version and stream flavour, to this library's own symbol. */
static inline void check_proc_cases(const nvcu_proc_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r =
        cuGetProcAddress_v2(cases[i].name, &fn, cases[i].version, (uint64_t)cases[i].flags, &st);
    TEST_CHECK_MSG(r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && fn &&
                       fn == own(cases[i].symbol),
                   "%s at %d/%d: %d, want %s", cases[i].name, cases[i].version, cases[i].flags,
                   (int)r, cases[i].symbol);
  }
}

/* The PTX of add_value: p[i] += v for i < n, parameters at offsets 0 (8 bytes), 8 and 12 (4 bytes
 * each). Several test programs launch it. */
static inline const char *cuda_test_add_ptx(void) {
  return ".version 7.8\n.target sm_80\n.address_size 64\n"
         ".visible .entry add_value(.param .u64 p, .param .u32 v, .param .u32 n) {\n"
         "  .reg .b32 %r<7>; .reg .b64 %rd<4>; .reg .pred %q;\n"
         "  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [v]; ld.param.u32 %r2, [n];\n"
         "  mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;\n"
         "  mad.lo.s32 %r3, %r3, %r4, %r5;\n"
         "  setp.ge.u32 %q, %r3, %r2; @%q bra DONE;\n"
         "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd2, %r3, 4; add.s64 %rd3, %rd1, %rd2;\n"
         "  ld.global.u32 %r6, [%rd3]; add.u32 %r6, %r6, %r1; st.global.u32 [%rd3], %r6;\n"
         "DONE:\n  ret;\n}\n";
}

#endif
