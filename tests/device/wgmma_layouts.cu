// wgmma's shared-memory layouts, one launch per layout (sm_90a only): D(64x64, fp32) = A(64xK) *
// B(64xK)^T in fp16, A and B loaded by TMA boxes into the canonical layout the host describes
// (swizzle none, 32, 64 or 128 bytes; K-major or MN-major), multiplied by wgmma m64n64k16 through
// the host's descriptors, D stored from its register fragments. The same kernels run on the GPU
// and on the mock (test_hopper's t_wgmma_layout_* cases), against one CPU reference. Written for
// nvcc: no system headers.

#define LAYOUT_MAX_BOXES 8

// CUtensorMap's shape: 128 opaque bytes, 64-byte aligned, passed by value as __grid_constant__.
struct __align__(64) layout_map {
  unsigned long long opaque[16];
};

// One operand: its descriptor without the start address, where its tile starts in shared memory,
// how far the descriptor's start moves per k16 step, and the TMA boxes that fill it.
struct layout_operand {
  unsigned long long desc;
  unsigned offset, step;
  int boxes;
  int x[LAYOUT_MAX_BOXES], y[LAYOUT_MAX_BOXES];
  unsigned dst[LAYOUT_MAX_BOXES];
};

struct layout_args {
  layout_operand a, b;
  unsigned bytes; // all boxes together
  int k_steps;
};

__device__ static inline unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ static inline void load(const layout_map *map, const layout_operand *o, unsigned base,
                                   unsigned bar) {
  for (int i = 0; i < o->boxes; i++)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];" ::"r"(base + o->offset + o->dst[i]),
                 "l"((unsigned long long)map), "r"(bar), "r"(o->x[i]), "r"(o->y[i])
                 : "memory");
}

__device__ static inline unsigned long long desc_at(const layout_operand *o, unsigned base,
                                                    int step) {
  return o->desc | (unsigned long long)(((base + o->offset + step * o->step) & 0x3ffff) >> 4);
}

#define D8(i)                                                                                      \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),        \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define WGMMA_64(trans)                                                                            \
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"                                  \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"                              \
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "            \
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},"  \
               " %32, %33, p, 1, 1, " #trans ", " #trans ";\n\t}"                                  \
               : D8(0), D8(8), D8(16), D8(24)                                                      \
               : "l"(da), "l"(db), "r"(k))

template <int TRANS>
__device__ static void run(const layout_map *ma, const layout_map *mb, const layout_args *g,
                           float *out) {
  __shared__ __align__(1024) unsigned char tiles[32768];
  __shared__ __align__(8) unsigned long long barrier;
  unsigned base = smem_addr(tiles), bar = smem_addr(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(g->bytes)
                 : "memory");
    load(ma, &g->a, base, bar);
    load(mb, &g->b, base, bar);
  }
  __syncthreads();
  asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
               "@!done bra WAIT;\n\t}" ::"r"(bar)
               : "memory");
  float d[32];
  for (int i = 0; i < 32; i++) d[i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int k = 0; k < g->k_steps; k++) {
    unsigned long long da = desc_at(&g->a, base, k), db = desc_at(&g->b, base, k);
    if (TRANS)
      WGMMA_64(1);
    else
      WGMMA_64(0);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  // Register 4j + 2h + e of thread (warp, lane): row 16 warp + lane/4 + 8h, column 8j + 2 (lane
  // % 4) + e.
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int i = 0; i < 32; i++) {
    int row = 16 * warp + lane / 4 + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    out[row * 64 + col] = d[i];
  }
}

// A and B K-major (imm-trans 0), or both MN-major (imm-trans 1); one block of 128 threads.
extern "C" __global__ void wgmma_layout_k(const __grid_constant__ layout_map a,
                                          const __grid_constant__ layout_map b,
                                          const __grid_constant__ layout_args g, float *out) {
  run<0>(&a, &b, &g, out);
}

extern "C" __global__ void wgmma_layout_mn(const __grid_constant__ layout_map a,
                                           const __grid_constant__ layout_map b,
                                           const __grid_constant__ layout_args g, float *out) {
  run<1>(&a, &b, &g, out);
}
