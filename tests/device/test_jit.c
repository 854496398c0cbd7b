/* Kernels compiled at run time (CUDA C through NVRTC, PTX through nvJitLink, a wgmma kernel that
 * needs sm_90a) and run on a real GPU or the mock (whose interpreter runs wgmma too). Skips
 * visibly without a GPU or a toolkit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_test.h"

static const char square_cu[] = "extern \"C\" __global__ void square(int *x, int n) {\n"
                                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                "  if (i < n) x[i] = x[i] * x[i];\n"
                                "}\n";

static const char add_one_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 p)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n  ld.global.u32 %r2, [%rd4];\n"
    "  add.s32 %r3, %r2, 1;\n  st.global.u32 [%rd4], %r3;\n  ret;\n}\n";

static int run_int_kernel(nvhcq_module *m, const char *name, int *data, int n, int with_n) {
  nvhcq_kernel *k;
  if (nvhcq_module_get_kernel(m, name, &k)) return -1;
  nvhcq_buffer *b;
  if (nvhcq_buffer_create(dev, (size_t)n * 4, NVHCQ_MEMORY_DEVICE, &b)) return -1;
  nvhcq_buffer_write(b, 0, data, (size_t)n * 4);
  struct {
    uint64_t p;
    int n;
  } args = {nvhcq_buffer_gpu_address(b), n};
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(
      k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){(uint32_t)n, 1, 1}, 0, &args, with_n ? 12 : 8, NULL);
  if (!s) s = nvhcq_buffer_read(data, b, 0, (size_t)n * 4);
  if (s) fprintf(stderr, "  %s: %s\n", name, nvhcq_last_error());
  nvhcq_buffer_destroy(b);
  return s ? -1 : 0;
}

static void t_cuda_c(void) {
  NEED_DEVICE();
  setenv("XDG_CACHE_HOME", "/tmp/nvhcq-jit-test", 1);
  if (system("rm -rf /tmp/nvhcq-jit-test")) {
  }
  nvhcq_module *m = NULL;
  double t0 = test_now_ms();
  nvhcq_status s = nvhcq_module_load_any(dev, square_cu, sizeof square_cu - 1, NULL, 0, &m);
  double t1 = test_now_ms();
  if (s == NVHCQ_ERROR_NOT_FOUND) TEST_SKIP("needs NVRTC (the CUDA toolkit)");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return;
  nvhcq_module_unload(m);
  double t2 = test_now_ms();
  TEST_CHECK(nvhcq_module_load_any(dev, square_cu, sizeof square_cu - 1, NULL, 0, &m) ==
             NVHCQ_SUCCESS);
  double t3 = test_now_ms();
  printf("  CUDA C module: %.1f ms compiled, %.2f ms from the cache\n", t1 - t0, t3 - t2);
  /* The cache is checked by what it holds, not by time (a loaded machine makes either slow). */
  TEST_CHECK_MSG(system("test -n \"$(ls -A /tmp/nvhcq-jit-test/nvhcq 2>/dev/null)\"") == 0,
                 "nothing was cached in /tmp/nvhcq-jit-test/nvhcq");
  int data[256];
  for (int i = 0; i < 256; i++) data[i] = i - 100;
  TEST_CHECK(run_int_kernel(m, "square", data, 256, 1) == 0);
  int bad = 0;
  for (int i = 0; i < 256; i++) bad += data[i] != (i - 100) * (i - 100);
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  nvhcq_module_unload(m);
}

static void t_ptx(void) {
  NEED_DEVICE();
  nvhcq_module *m = NULL;
  nvhcq_status s = nvhcq_module_load_any(dev, add_one_ptx, sizeof add_one_ptx - 1, NULL, 0, &m);
  if (s == NVHCQ_ERROR_NOT_FOUND) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return;
  int data[128];
  for (int i = 0; i < 128; i++) data[i] = 7 * i;
  TEST_CHECK(run_int_kernel(m, "add_one", data, 128, 0) == 0);
  int bad = 0;
  for (int i = 0; i < 128; i++) bad += data[i] != 7 * i + 1;
  TEST_CHECK_MSG(bad == 0, "%d wrong", bad);
  nvhcq_module_unload(m);
}

static void t_wgmma_sm90a(void) {
  NEED_DEVICE();
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  if (strcmp(info.arch, "sm_90")) TEST_SKIP("wgmma needs a Hopper GPU");
  const char *dir = getenv("NVHCQ_TEST_SOURCE_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/wgmma.cu", dir ? dir : "tests/device");
  nvhcq_module *m = NULL;
  nvhcq_status s = nvhcq_module_load_file(dev, path, &m);
  if (s == NVHCQ_ERROR_NOT_FOUND) TEST_SKIP("needs NVRTC (the CUDA toolkit)");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return;
  nvhcq_kernel *k;
  TEST_CHECK(nvhcq_module_get_kernel(m, "wgmma_ones", &k) == NVHCQ_SUCCESS);
  nvhcq_buffer *b;
  nvhcq_buffer_create(dev, 512 * 4, NVHCQ_MEMORY_DEVICE, &b);
  uint64_t addr = nvhcq_buffer_gpu_address(b);
  s = nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){128, 1, 1}, 0, &addr, 8,
                                   NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  float out[512];
  nvhcq_buffer_read(out, b, 0, sizeof out);
  int bad = 0;
  for (int i = 0; i < 512; i++) bad += out[i] != 16.0f;
  TEST_CHECK_MSG(bad == 0, "%d of 512 wrong (first %g)", bad, out[0]);
  nvhcq_buffer_destroy(b);
  nvhcq_module_unload(m);
}

static void t_close(void) {
  NEED_DEVICE();
  teardown();
}

TEST_MAIN(TEST(t_cuda_c), TEST(t_ptx), TEST(t_wgmma_sm90a), TEST(t_close))
