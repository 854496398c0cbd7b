/* The PTX interpreter's warpgroup matrix multiply: wgmma.mma_async m64nNk16 with f16 or bf16
 * inputs and f32 (or, from f16, f16) accumulators, A from registers or shared memory, B from
 * shared memory, both through the PTX ISA's matrix descriptors and canonical layouts (no-swizzle
 * and 32, 64, 128-byte swizzles, K-major or MN-major), and the warpgroup's register fragments.
 * It runs once for the warpgroup's 128 threads and completes at once, so wgmma.commit_group and
 * wait_group have nothing to wait for. */
#include "exec.h"

#include <math.h>
#include <string.h>

#define WG_M     64
#define WG_K     16
#define WG_N_MAX 256

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = h >> 10 & 0x1f, m = h & 0x3ff, u;
  if (e == 31) {
    u = sign | 0x7f800000u | m << 13;
  } else if (e) {
    u = sign | (e + 112) << 23 | m << 13;
  } else {
    float f = ldexpf((float)m, -24); /* subnormal */
    return sign ? -f : f;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Round to nearest even, as cvt.rn.f16.f32 does. */
static uint16_t float_to_half(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
  float a = fabsf(f);
  if (isnan(f)) return sign | 0x7fff;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < 6.103515625e-05f) return sign | (uint16_t)lrintf(a * 16777216.0f); /* subnormal */
  int e;
  float m = frexpf(a, &e);                       /* a = m * 2^e, m in [0.5, 1) */
  uint32_t bits = (uint32_t)lrintf(m * 2048.0f); /* 11 significant bits, rounded */
  if (bits == 2048) bits = 1024, e++;
  return sign | (uint16_t)((uint32_t)(e + 14) << 10 | (bits & 0x3ff));
}

/* One operand in shared memory, from its matrix descriptor. */
typedef struct smem_matrix {
  const unsigned char *shared;
  size_t size;
  uint64_t start, lbo, sbo;
  uint32_t swizzle, base; /* swizzle span in bytes (0: none); the descriptor's base offset */
  bool mn_major;          /* imm-trans: MN-major instead of K-major */
  bool bf16;
} smem_matrix;

/* Descriptor fields: start, LBO and SBO >> 4 in bits 13:0, 29:16, 45:32, base offset 51:49, the
 * layout 63:62 (0 none, 1 128-byte, 2 64-byte, 3 32-byte swizzle). */
static smem_matrix matrix_of(const ptx_block *b, uint64_t desc, bool mn_major, bool bf16) {
  static const uint32_t swizzle[4] = {0, 128, 64, 32};
  return (smem_matrix){.shared = b->shared,
                       .size = b->shared_size,
                       .start = (desc & 0x3fff) << 4,
                       .lbo = (desc >> 16 & 0x3fff) << 4,
                       .sbo = (desc >> 32 & 0x3fff) << 4,
                       .base = (uint32_t)(desc >> 49 & 7),
                       .swizzle = swizzle[desc >> 62],
                       .mn_major = mn_major,
                       .bf16 = bf16};
}

/* The byte address of element (mn, k) (row mn of A, or column mn of B) in the canonical layouts,
 * with T = 8 two-byte elements per 16 bytes:
 *   K-major, no swizzle   ((8,m),(T,2)) : ((16 B, SBO), (2 B, LBO))
 *   K-major, S-byte       ((8,m),(T,2)) : ((S, SBO), (2 B, 16 B))
 *   MN-major, no swizzle  ((T,m),(8,2)) : ((2 B, SBO), (16 B, LBO))
 *   MN-major, S-byte      ((S/2,m),(8,2)) : ((2 B, LBO), (S, SBO))
 * then the swizzle: the 16-byte chunk (bits 6:4, or 5:4, 4) XORed with the pattern's row (bits
 * 9:7 of the address less the base offset's rows). */
static uint64_t element_address(const smem_matrix *s, uint32_t mn, uint32_t k) {
  uint64_t a = s->start;
  if (!s->mn_major && !s->swizzle)
    a += (mn % 8) * 16u + (mn / 8) * s->sbo + (k / 8) * s->lbo + (k % 8) * 2u;
  else if (!s->mn_major)
    a += (mn % 8) * s->swizzle + (mn / 8) * s->sbo + (k / 8) * 16u + (k % 8) * 2u;
  else if (!s->swizzle)
    a += (mn % 8) * 2u + (mn / 8) * s->sbo + (k % 8) * 16u + (k / 8) * s->lbo;
  else
    a += (mn % (s->swizzle / 2)) * 2u + (mn / (s->swizzle / 2)) * s->lbo + (k % 8) * s->swizzle +
         (k / 8) * s->sbo;
  if (s->swizzle) a ^= (((a >> 7) - s->base) & (s->swizzle / 16 - 1)) << 4;
  return a;
}

/* The operand as floats, [mn][k]; false when it reaches outside shared memory. */
static bool load_matrix(const smem_matrix *s, uint32_t rows, float (*out)[WG_K]) {
  for (uint32_t mn = 0; mn < rows; mn++)
    for (uint32_t k = 0; k < WG_K; k++) {
      uint64_t a = element_address(s, mn, k);
      if (a + 2 > s->size) return false;
      uint16_t h;
      memcpy(&h, s->shared + a, 2);
      out[mn][k] = s->bf16 ? bf16_to_float(h) : half_to_float(h);
    }
  return true;
}

/* Fragment element i of thread `lane` (0..127 in the warpgroup): warp w holds rows 16w..16w+15,
 * and within it element i sits at row lane/4 (+ 8 for i % 4 >= 2), column 8 (i / 4) + 2 (lane %
 * 4) + i % 2. The accumulators (N/2 of them) and A's registers (8 halves) share it. */
static void fragment_place(uint32_t lane, uint32_t i, uint32_t *row, uint32_t *col) {
  *row = 16 * (lane / 32) + lane % 32 / 4 + 8 * (i / 2 % 2);
  *col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
}

/* A 16-bit half of a register: element i of a packed f16x2 (or bf16x2) list. */
static uint16_t half_of(const ptx_block *b, const ptx_thread *t, const ptx_operand *o, uint32_t i) {
  int32_t r = ptx_list_reg(b, o, i / 2);
  return r < 0 ? 0 : (uint16_t)(t->regs[r] >> (16 * (i % 2)));
}

typedef struct wgmma_args {
  uint32_t n;
  bool f16_acc, bf16, a_regs, scale_d;
  float scale_a, scale_b;
  bool trans_a, trans_b;
} wgmma_args;

static float d_get(const ptx_block *b, const ptx_thread *t, const ptx_insn *in, const wgmma_args *w,
                   uint32_t i) {
  if (w->f16_acc) return half_to_float(half_of(b, t, &in->ops[0], i));
  int32_t r = ptx_list_reg(b, &in->ops[0], i);
  uint32_t u = r < 0 ? 0 : (uint32_t)t->regs[r];
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void d_set(const ptx_block *b, ptx_thread *t, const ptx_insn *in, const wgmma_args *w,
                  uint32_t i, float v) {
  int32_t r = ptx_list_reg(b, &in->ops[0], w->f16_acc ? i / 2 : i);
  if (r < 0) return;
  if (w->f16_acc) {
    uint64_t shift = 16 * (i % 2);
    t->regs[r] = (t->regs[r] & ~(0xffffull << shift)) | (uint64_t)float_to_half(v) << shift;
    return;
  }
  uint32_t u;
  memcpy(&u, &v, 4);
  t->regs[r] = u;
}

/* The operands' forms: N/2 (f32) or N/4 (f16x2) accumulators, A as 4 registers (then 7
 * operands) or a descriptor (8). */
static const char *check(const ptx_insn *in, wgmma_args *w) {
  w->n = in->shape;
  w->f16_acc = in->type == PTX_TYPE(TK_F, 2);
  w->bf16 = in->type2 == PTX_TYPE(TK_B, 2);
  w->a_regs = in->ops[1].kind == OPD_VEC;
  uint32_t want = w->f16_acc ? w->n / 4 : w->n / 2;
  if (in->ops[0].kind != OPD_VEC || in->ops[0].nvec != want)
    return "wgmma accumulators: a {list} of N/2 f32 (N/4 f16x2) registers";
  if (in->nops != (w->a_regs ? 7 : 8) || (w->a_regs && in->ops[1].nvec != 4))
    return "wgmma operands: d, a (4 registers or a descriptor), b-desc, scale-d, imm-scale-a, "
           "imm-scale-b, [imm-trans-a,] imm-trans-b";
  for (int i = 4; i < in->nops; i++)
    if (in->ops[i].kind != OPD_IMM) return "wgmma's scale and transpose operands are immediates";
  return NULL;
}

static void read_args(const ptx_block *b, const ptx_thread *t, const ptx_insn *in, wgmma_args *w) {
  w->scale_d = ptx_read(b, t, in, 3, PTX_TYPE(TK_P, 1)) & 1;
  w->scale_a = in->ops[4].imm < 0 ? -1.0f : 1.0f;
  w->scale_b = in->ops[5].imm < 0 ? -1.0f : 1.0f;
  w->trans_a = !w->a_regs && in->ops[6].imm;
  w->trans_b = in->ops[w->a_regs ? 6 : 7].imm != 0;
}

/* A from the 128 threads' registers, [m][k]. */
static void gather_a(const ptx_block *b, ptx_thread **lanes, const ptx_insn *in, bool bf16,
                     float (*a)[WG_K]) {
  for (uint32_t l = 0; l < 128; l++)
    for (uint32_t i = 0; i < 8; i++) {
      uint32_t row, col;
      fragment_place(l, i, &row, &col);
      uint16_t h = half_of(b, lanes[l], &in->ops[1], i);
      a[row][col] = bf16 ? bf16_to_float(h) : half_to_float(h);
    }
}

static void multiply(const wgmma_args *w, float (*a)[WG_K], float (*bm)[WG_K],
                     float (*d)[WG_N_MAX]) {
  for (uint32_t m = 0; m < WG_M; m++)
    for (uint32_t n = 0; n < w->n; n++) {
      float acc = w->scale_d ? d[m][n] : 0.0f;
      for (uint32_t k = 0; k < WG_K; k++) acc += w->scale_a * a[m][k] * (w->scale_b * bm[n][k]);
      d[m][n] = acc;
    }
}

/* D = A B (+ D with scale-d), D and A in the warpgroup's fragments. */
void ptx_run_wgmma(ptx_block *b, ptx_thread **lanes) {
  const ptx_insn *in = &b->k->insns[lanes[0]->pc];
  wgmma_args w;
  const char *why = check(in, &w);
  if (why) return ptx_fault(b, lanes[0], in, NVHCQ_PTX_FAULT_UNSUPPORTED, 0, 0, why);
  read_args(b, lanes[0], in, &w);
  static _Thread_local float a[WG_M][WG_K], bm[WG_N_MAX][WG_K], d[WG_M][WG_N_MAX];
  if (w.a_regs) {
    gather_a(b, lanes, in, w.bf16, a);
  } else {
    smem_matrix sa =
        matrix_of(b, ptx_read(b, lanes[0], in, 1, PTX_TYPE(TK_B, 8)), w.trans_a, w.bf16);
    if (!load_matrix(&sa, WG_M, a))
      return ptx_fault(b, lanes[0], in, NVHCQ_PTX_FAULT_ADDRESS, sa.start, 0,
                       "wgmma's A descriptor reaches outside shared memory");
  }
  smem_matrix sb = matrix_of(b, ptx_read(b, lanes[0], in, 2, PTX_TYPE(TK_B, 8)), w.trans_b, w.bf16);
  if (!load_matrix(&sb, w.n, bm))
    return ptx_fault(b, lanes[0], in, NVHCQ_PTX_FAULT_ADDRESS, sb.start, 0,
                     "wgmma's B descriptor reaches outside shared memory");
  uint32_t count = w.n / 2;
  for (uint32_t l = 0; l < 128; l++)
    for (uint32_t i = 0; i < count; i++) {
      uint32_t row, col;
      fragment_place(l, i, &row, &col);
      d[row][col] = d_get(b, lanes[l], in, &w, i);
    }
  multiply(&w, a, bm, d);
  for (uint32_t l = 0; l < 128; l++)
    for (uint32_t i = 0; i < count; i++) {
      uint32_t row, col;
      fragment_place(l, i, &row, &col);
      d_set(b, lanes[l], in, &w, i, d[row][col]);
    }
}
