// Thread-block cluster kernels for the cluster tests and bench/qmd_probe.c: what each block sees
// of its cluster, clusters fixed at compile time, and distributed shared memory.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

struct cluster_view {
  unsigned rank, nrank, cid[3], ncid[3], cdim[3], crank3[3];
};

__device__ void record(cluster_view *out) {
  if (threadIdx.x | threadIdx.y | threadIdx.z) return;
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  cluster_view v;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v.rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v.nrank));
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v.cid[0]));
  asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(v.cid[1]));
  asm volatile("mov.u32 %0, %%clusterid.z;" : "=r"(v.cid[2]));
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v.ncid[0]));
  asm volatile("mov.u32 %0, %%nclusterid.y;" : "=r"(v.ncid[1]));
  asm volatile("mov.u32 %0, %%nclusterid.z;" : "=r"(v.ncid[2]));
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(v.cdim[0]));
  asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(v.cdim[1]));
  asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(v.cdim[2]));
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(v.crank3[0]));
  asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(v.crank3[1]));
  asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(v.crank3[2]));
  out[b] = v;
}

extern "C" __global__ void cluster_any(cluster_view *out) {
  record(out);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_fixed2(cluster_view *out) {
  record(out);
}
extern "C" __global__ void __cluster_dims__(2, 2, 2) cluster_fixed222(cluster_view *out) {
  record(out);
}

// Every block writes its own values into the shared memory of the block `shift` ranks after it
// in its cluster, waits for the cluster, then copies what it received to out. Exact results
// prove the blocks of a cluster are co-scheduled and reach each other's shared memory.
extern "C" __global__ void cluster_dsmem(unsigned *out, unsigned shift) {
  __shared__ unsigned inbox[256];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank(), n = cluster.num_blocks();
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned *peer = cluster.map_shared_rank(inbox, (rank + shift) % n);
  cluster.sync();
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) peer[i] = b * 1000u + i;
  cluster.sync();
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) out[b * 256 + i] = inbox[i];
}

// Dynamic shared memory per block: for the occupancy of clusters with large blocks.
extern "C" __global__ void cluster_big_shared(unsigned *out) {
  extern __shared__ unsigned dyn[];
  cg::cluster_group cluster = cg::this_cluster();
  dyn[threadIdx.x] = threadIdx.x;
  cluster.sync();
  if (threadIdx.x == 0) out[blockIdx.x] = dyn[0] + cluster.block_rank();
}

// Parameters the compiler aligns to the bank's address, not to the parameter block: a 64-byte
// aligned 128-byte struct (like a tensor map) after a char sits at offset 48 (0x210 + 48 is a
// multiple of 64). The kernel copies what it received so the test can compare.
struct __align__(64) blob128 {
  unsigned w[32];
};
extern "C" __global__ void params_aligned(char c, const __grid_constant__ blob128 b, int x,
                                          unsigned *out) {
  unsigned i = threadIdx.x;
  if (i < 32) out[i] = b.w[i];
  if (i == 0) out[32] = (unsigned)(unsigned char)c, out[33] = (unsigned)x;
}

// At most 4 blocks per cluster (__launch_bounds__'s third value): a larger cluster is refused.
extern "C" __global__ void __launch_bounds__(128, 1, 4) cluster_bounded(unsigned *out) {
  if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x;
}
