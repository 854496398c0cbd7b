/* The shape of hopper_gemm.cu's kernel, shared by the kernel, its device test and its benchmark:
 * block tile, threads, cluster and dynamic shared memory, and the shapes it accepts. */
#ifndef NVHCQ_HOPPER_GEMM_H
#define NVHCQ_HOPPER_GEMM_H

#define HOPPER_GEMM_BM      128 /* rows of C per block */
#define HOPPER_GEMM_BN      256 /* columns of C per block */
#define HOPPER_GEMM_BK      64  /* K per pipeline stage: 64 fp16, one 128-byte swizzle span */
#define HOPPER_GEMM_STAGES  4
#define HOPPER_GEMM_CLUSTER 2   /* blocks per cluster, down M: they share B's tile */
#define HOPPER_GEMM_THREADS 384 /* a producer warpgroup and two consumer warpgroups */
/* Both tensor maps' box, {K, rows}: A's whole tile, and the half of B's each block loads. */
#define HOPPER_GEMM_BOX_K    HOPPER_GEMM_BK
#define HOPPER_GEMM_BOX_ROWS 128
/* Per stage A's and B's tiles (48 KiB), 1 KiB to align the stages to 1024 bytes, and two 8-byte
 * barriers per stage. */
#define HOPPER_GEMM_STAGE_BYTES ((HOPPER_GEMM_BM + HOPPER_GEMM_BN) * HOPPER_GEMM_BK * 2)
#define HOPPER_GEMM_SHARED_BYTES                                                                   \
  (HOPPER_GEMM_STAGES * HOPPER_GEMM_STAGE_BYTES + 1024 + 2 * HOPPER_GEMM_STAGES * 8)
/* M, N and K must be multiples of these; the grid is 1-D, M/BM * N/BN blocks. */
#define HOPPER_GEMM_M_MULTIPLE (HOPPER_GEMM_BM * HOPPER_GEMM_CLUSTER)
#define HOPPER_GEMM_N_MULTIPLE HOPPER_GEMM_BN
#define HOPPER_GEMM_K_MULTIPLE HOPPER_GEMM_BK

#endif
