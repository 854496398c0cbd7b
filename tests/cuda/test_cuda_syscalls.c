/* Device printf and assert through nvhcq's libcuda.so.1: cuCtxSetLimit/cuCtxGetLimit of the printf
 * FIFO and the heap (GPU or mock), printf from a kernel launched with cuLaunchKernel printed to
 * stdout at cuCtxSynchronize, and a failed assert reported as CUDA_ERROR_ASSERT (GPU only: the
 * mock does not run the calls). The kernels: tests/device/syscalls_test.cu's cubin, found in
 * NVHCQ_TEST_CUBIN_DIR. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test.h"

static CUmodule mod;

/* syscalls_test_sm_XY.cubin for device 0, loaded once. */
static int load_module(void) {
  if (mod) return 1;
  int major = 0, minor = 0;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/syscalls_test_sm_%d%d.cubin", dir ? dir : ".", major, minor);
  CUresult r = cuModuleLoad(&mod, path);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuModuleLoad(%s): %d", path, (int)r);
  return r == CUDA_SUCCESS;
}

/* Runs fn with stdout going to a file, and returns what was written (to be freed). */
static char *capture_stdout(void (*fn)(void)) {
  fflush(stdout);
  FILE *f = tmpfile();
  int saved = dup(1);
  if (!f || saved < 0) return NULL;
  dup2(fileno(f), 1);
  fn();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  off_t n = lseek(fileno(f), 0, SEEK_END); /* fd 1 wrote through the same file offset */
  char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
  if (text && n > 0 && lseek(fileno(f), 0, SEEK_SET) == 0) {
    ssize_t got = read(fileno(f), text, (size_t)n);
    text[got > 0 ? got : 0] = '\0';
  }
  fclose(f);
  return text;
}

/* Defaults, a value set and read back, bounds; after a module that mallocs: refused, as CUDA
 * refuses it once a kernel used the heap. */
static void test_limits(void) {
  NEED_DEVICE();
  size_t v = 0;
  OK(cuCtxGetLimit(&v, CU_LIMIT_PRINTF_FIFO_SIZE));
  TEST_CHECK(v == 1u << 20);
  OK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
  TEST_CHECK(v == 8u << 20);
  OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16u << 20));
  OK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
  TEST_CHECK(v == 16u << 20);
  OK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 2u << 20));
  OK(cuCtxGetLimit(&v, CU_LIMIT_PRINTF_FIFO_SIZE));
  TEST_CHECK(v == 2u << 20);
  TEST_CHECK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 100) == CUDA_ERROR_INVALID_VALUE);
  OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  TEST_CHECK(v == 1024);
  if (!load_module()) return;
  TEST_CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 32u << 20) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4u << 20) == CUDA_ERROR_INVALID_VALUE);
  OK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
  TEST_CHECK(v == 16u << 20);
}

static CUresult launch_result, sync_result;

static void launch_print_all(void) {
  CUfunction f = NULL;
  OK(cuModuleGetFunction(&f, mod, "print_all"));
  CUdeviceptr text;
  OK(cuMemAlloc_v2(&text, 64));
  OK(cuMemcpyHtoD_v2(text, "hello", 6));
  int base = 1000;
  void *params[] = {&base, &text};
  launch_result = cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
  sync_result = cuCtxSynchronize();
}

/* Both blocks' lines, as the C library formats them, reach stdout by cuCtxSynchronize. */
static void test_printf(void) {
  NEED_CUBIN_KERNELS();
  if (!load_module()) return;
  char *out = capture_stdout(launch_print_all);
  OK(launch_result);
  OK(sync_result);
  size_t want_len = 0;
  for (int b = 0; out && b < 2; b++) {
    char first[512], second[512];
    snprintf(first, sizeof first, "b%d: %d %i %u %x %X %o %c %ld %lld %zu %hhd %hd|", b, 1000 + b,
             -b, 4000000000u, 0xbeef + b, 0xcafe, 8 + b, 'A' + b, -5l * b, (long long)b << 40,
             (size_t)b * 3, (signed char)(b + 100), (short)(b - 300));
    snprintf(second, sizeof second,
             "b%d: %f %F %e %E %g %G %a %A|%s|%.2s|%p|%5d|%-5d|%*d|%-*.*f|%%\n", b, 1.5 * b, -0.25,
             1e-7 * b, 6.02e23, 0.0001, 1e20 * b, 1.0, -0.75, "hello", "hello",
             (void *)(uintptr_t)0x1234, b, b, 6, b, 9, 3, 2.0 / 3);
    TEST_CHECK_MSG(strstr(out, first) && strstr(out, second), "missing block %d in: %s", b, out);
    want_len += strlen(first) + strlen(second);
  }
  TEST_CHECK_MSG(out && strlen(out) == want_len, "%zu bytes printed, want %zu",
                 out ? strlen(out) : 0, want_len);
  free(out);
}

/* Last: the context is unusable after it, as with CUDA. */
static void test_assert(void) {
  NEED_CUBIN_KERNELS();
  if (!load_module()) return;
  CUfunction f = NULL;
  OK(cuModuleGetFunction(&f, mod, "assert_one"));
  CUdeviceptr out;
  OK(cuMemAlloc_v2(&out, 4 * 32 * 4));
  void *params[] = {&out};
  OK(cuLaunchKernel(f, 4, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
  CUresult r = cuCtxSynchronize();
  TEST_CHECK_MSG(r == CUDA_ERROR_ASSERT, "cuCtxSynchronize: %d, want CUDA_ERROR_ASSERT (710)",
                 (int)r);
}

TEST_MAIN(TEST(test_limits), TEST(test_printf), TEST(test_assert))
