// Kernels for the GPU launch tests and benchmarks. extern "C" keeps their names plain.
#include <stdint.h>

extern "C" __global__ void empty() {}

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void atomic_increment(unsigned long long *counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1ull);
}

// Sum of `n` ints per block through dynamic shared memory (blockDim.x * 4 bytes each... and a
// large dynamic area: the launch asks for `shared_ints` ints, which may exceed 48 KiB).
extern "C" __global__ void reduce_dynamic(const int *in, long long *out, int shared_ints) {
  extern __shared__ int buf[];
  for (int i = threadIdx.x; i < shared_ints; i += blockDim.x) buf[i] = in[blockIdx.x * shared_ints + i];
  __syncthreads();
  if (threadIdx.x == 0) {
    long long s = 0;
    for (int i = 0; i < shared_ints; i++) s += buf[i];
    out[blockIdx.x] = s;
  }
}

// 16 KiB of local memory per thread, indexed at run time so it cannot live in registers.
extern "C" __global__ void local_16k(const int *idx, int *out) {
  int scratch[4096];
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 4096; k++) scratch[k] = k ^ tid;
  out[tid] = scratch[idx[tid] & 4095] + scratch[(idx[tid] * 7) & 4095];
}

// Writes each thread's linear 3-D index: checks gridDim/blockDim/blockIdx/threadIdx in 3-D.
extern "C" __global__ void index_3d(uint32_t *out) {
  uint32_t bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  uint32_t tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
  out[bx * threads + tx] = bx * 1000 + tx;
}

__constant__ int const_table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ int device_bias = 100;
__device__ unsigned int device_hits;

extern "C" __global__ void use_globals(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = const_table[i & 7] + device_bias;
  atomicAdd(&device_hits, 1u);
}

struct params {
  double scale;
  int32_t offset;
  uint8_t flag;
};

extern "C" __global__ void struct_args(params p, int64_t big, const int *in, double *out, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * p.scale + p.offset + (p.flag ? (double)big : 0.0);
}

// A parameter block past the old 4 KiB limit (up to 32764 bytes from CUDA 12.1 on): nvcc describes
// these parameters with a record of its own (EIATTR_KPARAM_INFO_V2).
struct big_table {
  int v[7000];
};

extern "C" __global__ void big_params(const big_table t, int *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = t.v[i] * 2 + 1;
}

// out[i] = in[i] * 2 + 1: a chain of these reads what the previous launch wrote.
extern "C" __global__ void step(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2 + 1;
}

// Spins for `ns` nanoseconds (for overlap tests), then stores 1.
extern "C" __global__ void spin(int *flag, unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *flag = 1;
}

// Grid-stride copy in 16-byte vectors (n16 = bytes / 16).
extern "C" __global__ void copy16(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n16) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) dst[i] = src[i];
}

// `iters` x 8 independent FMA chains per thread: arithmetic bound.
extern "C" __global__ void fma_loop(float *out, int iters) {
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999f, c = 0.001f;
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 16; j++) {
      a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
      a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// x[i] = x[i] * a + b for i < n (in place).
extern "C" __global__ void affine(int *x, int a, int b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + b;
}

extern "C" __global__ void add_int(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Faults on purpose, for the fault tests.
extern "C" __global__ void store_to(unsigned long long address) {
  if (threadIdx.x == 0) *(volatile int *)address = 1;
}
extern "C" __global__ void misaligned_load(const char *p, int *out) {
  out[threadIdx.x] = *(const volatile int *)(p + 1 + 4 * threadIdx.x);
}
extern "C" __global__ void trap_now() { __trap(); }
extern "C" __global__ void spin_forever(volatile int *flag) {
  while (*flag == 0) {
  }
}

// The ordering tests' values (test_order.c, which computes the same): what round `round` writes to
// element e. Both halves are bijective, so an older round's value never equals the current one.
static __device__ __forceinline__ uint32_t order_value(uint32_t round, uint32_t e) {
  uint32_t h = round * 0x9e3779b9u + 0x7f4a7c15u;
  h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
  return h ^ (e * 0x9e3779b1u);
}

// One step of the ordering tests: counts the elements of `in` that do not hold round - 1's values
// into *stale (round 0 only writes), then, late, writes round's values to `out`. Thread t reads
// element t + k*T (T threads in all) and writes them mirrored, n-1-(t + k*T); a block spins longer
// the higher its index. So the first read of a grid's first block (scheduled first) is the last
// store of the previous grid's last block (the latest to finish), and a reader scanning up from
// element 0 (the CPU, the copy engine) starts on those stores too. n is a multiple of T.
extern "C" __global__ void order_step(const uint32_t *in, uint32_t *out, unsigned long long *stale,
                                      uint32_t n, uint32_t round, uint32_t spin_cycles) {
  uint32_t stride = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x, bad = 0;
  if (round != 0)
    for (uint32_t e = t; e < n; e += stride) bad += in[e] != order_value(round - 1, e);
  // Counted before the spin, so the reads cannot drift past it; one atomic per warp, none if clean.
  bad = __reduce_add_sync(0xffffffffu, bad);
  if (bad && (threadIdx.x & 31) == 0) atomicAdd(stale, (unsigned long long)bad);
  long long until = clock64() + (long long)spin_cycles * blockIdx.x / gridDim.x;
  while (clock64() < until) {
  }
  for (uint32_t i = t; i < n; i += stride) out[n - 1 - i] = order_value(round, n - 1 - i);
}

// Every block writes the launch's value where its slot says: test_order's check that no launch
// reads another's arguments (a stale constant cache).
extern "C" __global__ void put_value(uint32_t *out, uint32_t slot, uint32_t value) {
  if (threadIdx.x == 0) out[(size_t)slot * gridDim.x + blockIdx.x] = value;
}

// Each block writes the SM it ran on (test_compute's TPC masks: which SMs a grid was kept to).
extern "C" __global__ void record_smid(uint32_t *out) {
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) out[blockIdx.x] = sm;
}
