// Kernels the library itself launches. Built with nvcc when the toolkit is present and embedded
// into libnvhcq; without them nvhcq falls back to the copy engine.
#include <stdint.h>

// Device-to-device copy in 16-byte vectors, grid-stride, several loads in flight per thread.
extern "C" __global__ void nvhcq_copy16(const uint4 *__restrict__ src, uint4 *__restrict__ dst,
                                        uint64_t n16) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}
