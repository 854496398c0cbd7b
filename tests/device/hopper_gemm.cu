// A Hopper tile GEMM (sm_90a only): C[M,N] = A[M,K] * B[N,K]^T, fp16 inputs with both operands
// K-major, fp32 accumulate and fp32 output, written for the device test and the GEMM benchmark.
//
// How it works, so that every index below can be checked against it:
// - A block computes a 128x256 tile of C. Its 384 threads are three warpgroups: warpgroup 0
//   loads (one thread issues TMA copies), warpgroups 1 and 2 multiply, 64 rows of the tile each,
//   with wgmma m64n256k16 into 128 fp32 registers per thread.
// - K runs in steps of 64 fp16 (128 bytes: one 128-byte swizzle span per row) through STAGES
//   shared-memory stages. A stage holds A's 128x64 tile and B's 256x64 tile, each row 128 bytes,
//   in the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B: row r at r*128, its 16-byte chunk
//   c at chunk c ^ (r % 8). That is wgmma's K-major 128-byte-swizzle layout with 8-row groups
//   1024 bytes apart, so stages are 1024-byte aligned.
// - Two blocks form a cluster (__cluster_dims__(2,1,1)): blocks 2c and 2c+1 take rows 128 apart
//   of the same 256 columns, so they need the same B tile. Each loads one 128-row half of it and
//   multicasts the half into both blocks' shared memory (.multicast::cluster), at the same offset.
// - Barriers per stage: full[s] (1 arrival: the local producer's arrive.expect_tx for all 48 KiB
//   the stage receives, from both blocks' copies) and empty[s] (one arrival from each consumer
//   warp of both blocks: a block's producer may overwrite stage s in both blocks only once every
//   consumer in the cluster is done reading it).
// Requires M % 256 == 0, N % 256 == 0, K % 64 == 0 (the host checks) and a 1-D grid of
// (M / 128) * (N / 256) blocks with HOPPER_GEMM_SHARED_BYTES of dynamic shared memory.
#include <stdint.h>

#include "hopper_gemm.h"

#define BM          HOPPER_GEMM_BM
#define BN          HOPPER_GEMM_BN
#define BK          HOPPER_GEMM_BK
#define STAGES      HOPPER_GEMM_STAGES
#define CLUSTER     HOPPER_GEMM_CLUSTER
#define THREADS     HOPPER_GEMM_THREADS
#define A_BYTES     (BM * BK * 2)           // 16 KiB
#define B_BYTES     (BN * BK * 2)           // 32 KiB, each block of the cluster loads half
#define B_HALF_ROWS HOPPER_GEMM_BOX_ROWS    // BN / CLUSTER: the TMA box height of both maps
#define STAGE_BYTES HOPPER_GEMM_STAGE_BYTES // A_BYTES + B_BYTES, a multiple of 1024
#define CONSUMERS   8                       // consumer warps per block
#ifndef GROUP_M
#define GROUP_M 8 // clusters down M per raster group (L2 reuse)
#endif
static_assert(A_BYTES + B_BYTES == STAGE_BYTES && STAGE_BYTES % 1024 == 0, "stage layout");
static_assert(B_HALF_ROWS * CLUSTER == BN && BM == B_HALF_ROWS, "one box shape for A and B");

// CUtensorMap's shape: 128 opaque bytes, 64-byte aligned, passed by value as __grid_constant__.
struct __align__(64) tensor_map {
  unsigned long long opaque[16];
};

__device__ static inline uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ static inline uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// barrier.cluster is per thread, not .aligned: at the end the producer warp's lanes arrive from
// different places (lane 0 from its loop).
__device__ static inline void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

__device__ static inline void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// One arrival that also expects `bytes` of TMA data in the barrier's current phase.
__device__ static inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

// One arrival on the barrier at the same offset in block `cta` of the cluster (this one or the
// other). The default semantics (release at CTA scope) are what is needed: the reads it publishes
// are wgmma's, already complete (wgmma.wait_group), and the producer that waits on it only starts
// TMA copies. .release.cluster instead puts MEMBAR.ALL.GPU before each arrival (seen in SASS):
// 474 instead of 766 TFLOP/s at 8192^3 on the H200.
__device__ static inline void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile("{\n\t.reg .b32 remote;\n\t"
               "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}" ::"r"(bar),
               "r"(cta)
               : "memory");
}

// Waits until the barrier's phase of parity `parity` has completed.
__device__ static inline void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred done;\n\t"
               "WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
               "@!done bra WAIT;\n\t}" ::"r"(bar),
               "r"(parity)
               : "memory");
}

// A box of `map` at element (x, y) (x innermost) into this block's shared memory.
__device__ static inline void tma_load(uint32_t dst, const tensor_map *map, uint32_t bar, int x,
                                       int y) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
               "l"((uint64_t)map), "r"(bar), "r"(x), "r"(y)
               : "memory");
}

// The same box into every block of `mask` at offset dst, each completing on its barrier `bar`.
__device__ static inline void tma_load_multicast(uint32_t dst, const tensor_map *map, uint32_t bar,
                                                 int x, int y, uint16_t mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
               "l"((uint64_t)map), "r"(bar), "r"(x), "r"(y), "h"(mask)
               : "memory");
}

// wgmma's shared-memory matrix descriptor for a K-major tile in 128-byte-swizzle layout: start
// address >> 4 in bits 0-13, leading byte offset (unused for swizzled K-major; 1 by convention) in
// 16-29, stride byte offset 1024 >> 4 (8 rows of 128 bytes to the next 8) in 32-45, base offset 0
// in 49-51 (tiles are 1024-byte aligned), layout type 1 (128-byte swizzle) in 62-63.
__device__ static inline uint64_t smem_desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 |
         (uint64_t)1 << 62;
}

__device__ static inline void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ static inline void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ static inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#define D8(i)                                                                                      \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),        \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])

// d(64x256, fp32) += A(64x16) * B(256x16)^T, both from shared memory, both K-major (no transpose).
__device__ static inline void wgmma_m64n256k16(float *d, uint64_t desc_a, uint64_t desc_b) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7,"
               "%8, %9, %10, %11, %12, %13, %14, %15,"
               "%16, %17, %18, %19, %20, %21, %22, %23,"
               "%24, %25, %26, %27, %28, %29, %30, %31,"
               "%32, %33, %34, %35, %36, %37, %38, %39,"
               "%40, %41, %42, %43, %44, %45, %46, %47,"
               "%48, %49, %50, %51, %52, %53, %54, %55,"
               "%56, %57, %58, %59, %60, %61, %62, %63,"
               "%64, %65, %66, %67, %68, %69, %70, %71,"
               "%72, %73, %74, %75, %76, %77, %78, %79,"
               "%80, %81, %82, %83, %84, %85, %86, %87,"
               "%88, %89, %90, %91, %92, %93, %94, %95,"
               "%96, %97, %98, %99, %100, %101, %102, %103,"
               "%104, %105, %106, %107, %108, %109, %110, %111,"
               "%112, %113, %114, %115, %116, %117, %118, %119,"
               "%120, %121, %122, %123, %124, %125, %126, %127},"
               " %128, %129, p, 1, 1, 0, 0;\n\t}"
               : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56), D8(64), D8(72),
                 D8(80), D8(88), D8(96), D8(104), D8(112), D8(120)
               : "l"(desc_a), "l"(desc_b));
}

// Keeps the compiler from moving accumulator reads or writes across a wgmma wait.
__device__ static inline void fence_accumulators(float *d) {
#pragma unroll
  for (int i = 0; i < 128; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// Which 128x256 tile block `bid` computes: clusters are ordered in groups of GROUP_M down M, so
// that the clusters running at once share A and B tiles in L2.
__device__ static inline void tile_of(int bid, int m, int n, int *m0, int *n0) {
  int cluster = bid / CLUSTER, cm_count = m / (BM * CLUSTER), cn_count = n / BN;
  int per_group = GROUP_M * cn_count, group = cluster / per_group;
  int first = group * GROUP_M, height = min(cm_count - first, GROUP_M);
  int in_group = cluster % per_group;
  *m0 = ((first + in_group % height) * CLUSTER + (bid % CLUSTER)) * BM;
  *n0 = in_group / height * BN;
}

// Warpgroup 0, one thread: fills the stages.
__device__ static void produce(const tensor_map *a, const tensor_map *b, uint32_t stages,
                               uint32_t full, uint32_t empty, int m0, int n0, int k_tiles,
                               uint32_t rank) {
  for (int kt = 0; kt < k_tiles; kt++) {
    int s = kt % STAGES;
    // Use n of stage s (n = kt / STAGES) needs use n-1 released: empty's completion n-1.
    if (kt >= STAGES) mbar_wait(empty + 8 * s, (kt / STAGES - 1) & 1);
    uint32_t stage = stages + s * STAGE_BYTES, bar = full + 8 * s;
    mbar_arrive_expect_tx(bar, STAGE_BYTES);
    tma_load(stage, a, bar, kt * BK, m0);
    tma_load_multicast(stage + A_BYTES + rank * (B_BYTES / CLUSTER), b, bar, kt * BK,
                       n0 + (int)rank * B_HALF_ROWS, (uint16_t)((1u << CLUSTER) - 1));
  }
}

// A consumer warpgroup: 64 rows (`half` 0 or 1 of the tile) times 256 columns.
__device__ static void consume(float *c, uint32_t stages, uint32_t full, uint32_t empty, int m0,
                               int n0, int n, int k_tiles, int half) {
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; i++) d[i] = 0.0f;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
  for (int kt = 0; kt < k_tiles; kt++) {
    int s = kt % STAGES;
    mbar_wait(full + 8 * s, (kt / STAGES) & 1);
    uint32_t a = stages + s * STAGE_BYTES + half * (64 * 128),
             b = stages + s * STAGE_BYTES + A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) // 16 fp16 = 32 bytes along the swizzled row
      wgmma_m64n256k16(d, smem_desc(a + kk * 32), smem_desc(b + kk * 32));
    wgmma_commit();
    // All but this step's group are done: the previous stage is free in both blocks.
    wgmma_wait<1>();
    fence_accumulators(d);
    if (kt > 0 && lane == 0) {
      uint32_t bar = empty + 8 * ((kt - 1) % STAGES);
      mbar_arrive_cluster(bar, 0), mbar_arrive_cluster(bar, 1);
    }
  }
  wgmma_wait<0>();
  fence_accumulators(d);
  // wgmma's D fragment: register 4j + 2h + e of thread (warp, lane) is row 16 warp + lane/4 + 8h,
  // column 8j + 2 (lane % 4) + e.
  int row = m0 + half * 64 + warp * 16 + lane / 4, col = n0 + 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < 32; j++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float2 v = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
      *(float2 *)(c + (size_t)(row + 8 * h) * n + col + 8 * j) = v;
    }
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
    hopper_gemm(const __grid_constant__ tensor_map a, const __grid_constant__ tensor_map b,
                float *c, int m, int n, int k) {
  extern __shared__ __align__(1024) uint8_t shared[];
  uint32_t base = smem_addr(shared);
  uint32_t stages = (base + 1023) & ~1023u;
  uint32_t full = stages + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
  uint32_t rank = cluster_rank();
  int m0, n0;
  tile_of(blockIdx.x, m, n, &m0, &n0);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, CONSUMERS * CLUSTER);
    }
    // The other block arrives on these barriers and copies into this one's shared memory.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&a) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&b) : "memory");
  }
  cluster_sync();
  int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) produce(&a, &b, stages, full, empty, m0, n0, k / BK, rank);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    consume(c, stages, full, empty, m0, n0, n, k / BK, warpgroup - 1);
  }
  // Neither block may exit while the other can still arrive on its barriers.
  cluster_sync();
}
