// Kernels bench_real.c times: elementwise add, row softmax, an fp16 tensor-core matmul.
// extern "C" keeps their names plain, so both nvhcq and libcuda find them by name.
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

// c = a + b over n floats: float4 loads, grid-stride, so 1024 blocks of 128 threads do 8 each.
extern "C" __global__ void __launch_bounds__(128)
    ew_add(const float *a, const float *b, float *c, int n) {
  int stride = gridDim.x * blockDim.x, n4 = n / 4;
  const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
  float4 *c4 = (float4 *)c;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (int i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
}

struct op_max {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};
struct op_sum {
  __device__ float operator()(float x, float y) const { return x + y; }
};

// Every thread gets the block's reduction: warps reduce by shuffles, then each thread folds the
// per-warp results in the same order, so all threads hold the same bits.
template <class Op> __device__ float block_reduce(float v, float *scratch, Op op) {
  for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < (int)(blockDim.x / 32); w++) v = op(v, scratch[w]);
  __syncthreads(); // the next reduction reuses scratch
  return v;
}

// y = exp(x - max) / sum per row of a rows x cols matrix; one block (a multiple of 32 threads,
// at most 1024) per row.
extern "C" __global__ void __launch_bounds__(1024)
    softmax_rows(const float *x, float *y, int rows, int cols) {
  __shared__ float scratch[32];
  if ((int)blockIdx.x >= rows) return;
  const float *in = x + (size_t)blockIdx.x * cols;
  float *out = y + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, in[j]);
  m = block_reduce(m, scratch, op_max());
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(in[j] - m);
  s = block_reduce(s, scratch, op_sum());
  for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(in[j] - m) / s;
}

// ---- fp16 tensor-core matmul ----

// A block computes a 128x128 tile of C from 64-wide K slices of A and B staged in shared memory,
// two stages deep so the next slice loads (cp.async) while the tensor cores work on this one.
#define MM_BM 128
#define MM_BN 128
#define MM_BK 64
// Rows padded by 8 halves (16 bytes): fragment loads of consecutive rows then start in
// different banks; the padding keeps every fragment 32-byte aligned, as WMMA requires.
#define MM_LDA         (MM_BK + 8)
#define MM_LDB         (MM_BN + 8)
#define MM_STAGE_HALFS (MM_BM * MM_LDA + MM_BK * MM_LDB)
#define MM_THREADS     256
// Dynamic shared memory a launch must give: 2 stages x 35840 bytes = 71680 (over 48 KiB).
#define MM_SHARED_BYTES (2 * MM_STAGE_HALFS * 2)

__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}

// Starts copying A[row0.., k0..k0+63] and B[k0..k0+63, col0..] into one stage (16 bytes a copy).
__device__ __forceinline__ void mm_load_stage(__half *sa, const __half *A, const __half *B, int n,
                                              int row0, int col0, int k0) {
  __half *sb = sa + MM_BM * MM_LDA;
  for (int c = threadIdx.x; c < MM_BM * MM_BK / 8; c += MM_THREADS) {
    int r = c / (MM_BK / 8), k = c % (MM_BK / 8) * 8;
    cp_async16(sa + r * MM_LDA + k, A + (size_t)(row0 + r) * n + k0 + k);
  }
  for (int c = threadIdx.x; c < MM_BK * MM_BN / 8; c += MM_THREADS) {
    int r = c / (MM_BN / 8), j = c % (MM_BN / 8) * 8;
    cp_async16(sb + r * MM_LDB + j, B + (size_t)(k0 + r) * n + col0 + j);
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

using namespace nvcuda;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> mm_acc;

// The 8 warps form a 2x4 grid; each computes a 64x32 piece of the tile as 4x2 fragments.
__device__ __forceinline__ void mm_compute_stage(const __half *sa, mm_acc acc[4][2], int wm,
                                                 int wn) {
  const __half *sb = sa + MM_BM * MM_LDA;
  for (int kk = 0; kk < MM_BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[4];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
#pragma unroll
    for (int i = 0; i < 4; i++)
      wmma::load_matrix_sync(fa[i], sa + (wm * 64 + i * 16) * MM_LDA + kk, MM_LDA);
#pragma unroll
    for (int j = 0; j < 2; j++)
      wmma::load_matrix_sync(fb[j], sb + kk * MM_LDB + wn * 32 + j * 16, MM_LDB);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
  }
}

// C (fp32) = A x B, all n x n row-major, n a multiple of 128; grid (n/128, n/128), 256 threads,
// MM_SHARED_BYTES of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(MM_THREADS)
    matmul_f16(const __half *A, const __half *B, float *C, int n) {
  extern __shared__ __align__(128) unsigned char mm_smem[];
  __half *stages = (__half *)mm_smem;
  int row0 = blockIdx.y * MM_BM, col0 = blockIdx.x * MM_BN;
  int warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
  mm_acc acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
  int tiles = n / MM_BK;
  mm_load_stage(stages, A, B, n, row0, col0, 0);
  for (int t = 0; t < tiles; t++) {
    if (t + 1 < tiles) {
      // The stage written here was read in iteration t-1, which ended with a barrier.
      mm_load_stage(stages + (t + 1) % 2 * MM_STAGE_HALFS, A, B, n, row0, col0, (t + 1) * MM_BK);
      asm volatile("cp.async.wait_group 1;\n" ::);
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads(); // every thread's copies into stage t are in
    mm_compute_stage(stages + t % 2 * MM_STAGE_HALFS, acc, wm, wn);
    __syncthreads(); // stage t is free for the copy of t+2
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) {
      float *c = C + (size_t)(row0 + wm * 64 + i * 16) * n + col0 + wn * 32 + j * 16;
      wmma::store_matrix_sync(c, acc[i][j], n, wmma::mem_row_major);
    }
}
