// Test kernels for the cubin parser (tests/unit/test_elf.c) and, later, the GPU launch tests.
// Each one exercises a different part of the cubin format: plain parameters, module-scope
// globals (relocations), structs and 64-bit arguments, shared memory, local memory (stack) and
// calls to non-inlined device functions. extern "C" keeps the symbol names unmangled.
#include <stdint.h>

// c[i] = a[i] + b[i]: the smallest meaningful kernel (three pointers and a count).
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// __constant__ lives in constant bank 3; __device__ in .nv.global (zeroed) or .nv.global.init.
__constant__ float scale_table[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
__device__ int global_counter;                           // zero-initialised: .nv.global (NOBITS)
__device__ uint32_t global_offsets[4] = {7, 11, 13, 17}; // initialised: .nv.global.init
// A pointer to another global forces an R_CUDA_G64 relocation in .nv.global.init.
__device__ uint32_t *global_offsets_ptr = global_offsets;

// out[i] = in[i] * scale_table[i % 16] + global_offsets[i % 4]; counts the threads that ran.
extern "C" __global__ void scale_globals(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] * scale_table[i & 15] + (float)global_offsets_ptr[i & 3];
  atomicAdd(&global_counter, 1);
}

struct affine_params {
  float scale;
  float bias;
  int32_t stride;
  uint8_t flags; // bit 0: clamp negative results to zero
};

// out[i * p.stride] = in[i] * p.scale + p.bias + (float)base: a struct argument (16 bytes) and a
// 64-bit scalar, which the ABI aligns to 8 bytes in the parameter bank.
extern "C" __global__ void affine_struct(affine_params p, const float *in, float *out, int64_t base,
                                         uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[i] * p.scale + p.bias + (float)base;
  if ((p.flags & 1) && v < 0.0f) v = 0.0f;
  out[(int64_t)i * p.stride] = v;
}

// Block-wise reversal through static shared memory, plus a per-block sum through dynamic shared
// memory (extern []), so both the .nv.shared size and the launch's dynamic size matter.
extern "C" __global__ void reverse_shared(const int *in, int *out, int *block_sums) {
  __shared__ int tile[256];
  extern __shared__ int partial[];
  int t = threadIdx.x;
  int base = blockIdx.x * 256;
  tile[t] = in[base + t];
  partial[t] = in[base + t];
  __syncthreads();
  out[base + t] = tile[255 - t];
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0) block_sums[blockIdx.x] = partial[0];
}

// A dynamically indexed local array cannot live in registers: it goes to local memory (stack).
extern "C" __global__ void local_stack(const int *idx, int *out, int n) {
  int scratch[512];
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 512; k++) scratch[k] = k * 3 + tid;
  int acc = 0;
  for (int k = 0; k < n; k++) acc += scratch[idx[k] & 511];
  out[tid] = acc;
}

// noinline keeps a real CALL, so the cubin holds a device function beside the kernel.
__device__ __noinline__ float poly3(float x, float a, float b, float c) {
  return (a * x + b) * x + c;
}

// y[i] = 2x^2 + 3x + 1, through a called device function; __launch_bounds__ sets MAX_THREADS.
extern "C" __global__ void __launch_bounds__(128) call_device(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = poly3(x[i], 2.0f, 3.0f, 1.0f);
}
