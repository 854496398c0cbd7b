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

#include "hw/block_linear.h"

template <typename T> __device__ __forceinline__ void move(uint64_t to, uint64_t from) {
  *(T *)to = *(const T *)from;
}

// Between a block-linear image and linear memory (hw/block_linear.h says the layout), one unit of
// 1 to 16 bytes per thread and step: units never straddle a GOB's 16-byte pieces.
extern "C" __global__ void nvhcq_image_copy(nvhcq_bl_copy_args a) {
  uint64_t total = (uint64_t)a.units_x * a.height * a.depth;
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    uint32_t u = (uint32_t)(i % a.units_x);
    uint64_t r = i / a.units_x;
    uint32_t row = (uint32_t)(r % a.height), slice = (uint32_t)(r / a.height);
    uint64_t img =
        a.image + nvhcq_bl_offset(&a.shape, a.x_bytes + u * a.unit, a.y + row, a.z + slice);
    uint64_t lin = a.linear + slice * a.slice + row * a.pitch + (uint64_t)u * a.unit;
    uint64_t to = a.to_image ? img : lin, from = a.to_image ? lin : img;
    switch (a.unit) {
    case 16:
      move<uint4>(to, from);
      break;
    case 8:
      move<uint2>(to, from);
      break;
    case 4:
      move<uint32_t>(to, from);
      break;
    case 2:
      move<uint16_t>(to, from);
      break;
    default:
      move<uint8_t>(to, from);
      break;
    }
  }
}

// Which SMs a grid ran on (tpc.c): every block sets its SM's bit in `sms` (256 bits), then stays
// until spin_ns have passed on the global timer, so that a grid of many short blocks is spread
// over every SM it may use rather than finished by the first few.
extern "C" __global__ void nvhcq_sm_set(uint32_t *sms, uint32_t spin_ns) {
  if (threadIdx.x != 0) return;
  uint32_t sm;
  uint64_t start, now;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  atomicOr(&sms[sm / 32 % 8], 1u << (sm % 32));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < spin_ns);
}
