/* A program's own nvhcq beside nvhcq's libcuda.so.1, which carries a copy of nvhcq inside: both
 * have the GPU open at once, and each moves bytes through its own device memory. */
#include "cuda_test.h"
#include "nvhcq.h"

#define BYTES 65536u

static void fill(uint8_t *p, uint8_t seed) {
  for (uint32_t i = 0; i < BYTES; i++) p[i] = (uint8_t)(seed + i * 7);
}

/* nvhcq opens first, so its copy takes the first range of CPU-visible GPU addresses; the copy in
 * libcuda.so.1 must find another (it failed with "cannot reserve ... File exists" before). */
static void test_both_open(void) {
  if (on_mock() && asan_build()) TEST_SKIP("the mock's device memory does not fit under ASan");
  nvhcq_device *dev;
  if (nvhcq_device_open(0, &dev) != NVHCQ_SUCCESS) TEST_SKIP("needs a GPU or NVHCQ_MOCK=1");
  static uint8_t in[BYTES], out[BYTES];
  nvhcq_buffer *buf;
  TEST_CHECK(nvhcq_buffer_create(dev, BYTES, NVHCQ_MEMORY_DEVICE, &buf) == NVHCQ_SUCCESS);
  fill(in, 1);
  TEST_CHECK(nvhcq_buffer_write(buf, 0, in, BYTES) == NVHCQ_SUCCESS);

  CUresult r = init_once();
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuInit beside an open nvhcq device: %d", (int)r);
  CUcontext ctx;
  OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  OK(cuCtxSetCurrent(ctx));
  CUdeviceptr d = 0;
  OK(cuMemAlloc_v2(&d, BYTES));
  fill(in, 2);
  OK(cuMemcpyHtoD_v2(d, in, BYTES));
  OK(cuMemcpyDtoH_v2(out, d, BYTES));
  TEST_CHECK(memcmp(in, out, BYTES) == 0);

  fill(in, 1);
  TEST_CHECK(nvhcq_buffer_read(out, buf, 0, BYTES) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(in, out, BYTES) == 0, "nvhcq's buffer changed while libcuda ran");
  OK(cuMemFree_v2(d));
  OK(cuDevicePrimaryCtxRelease_v2(0));
  TEST_CHECK(nvhcq_buffer_destroy(buf) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_close(dev) == NVHCQ_SUCCESS);
}

TEST_MAIN(TEST(test_both_open))
