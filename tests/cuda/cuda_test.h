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

/* A device that runs kernels: the mock runs none of libcuda's. */
#define NEED_KERNELS()                                                                             \
  do {                                                                                             \
    NEED_DEVICE();                                                                                 \
    if (on_mock()) TEST_SKIP("needs a GPU (the mock runs no kernels of libcuda's)");               \
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

#endif
