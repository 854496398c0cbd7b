/* The PTX interpreter's arithmetic: integer, floating-point and conversion instructions. */
#include "alu.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

uint64_t ptx_mask(uint64_t v, unsigned size) {
  return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}

int64_t ptx_sext(uint64_t v, unsigned size) {
  unsigned sh = 64 - size * 8;
  return (int64_t)(v << sh) >> sh;
}

double ptx_to_double(uint64_t v, uint8_t type) {
  if (TYPE_SIZE(type) == 8) {
    double d;
    memcpy(&d, &v, 8);
    return d;
  }
  float f;
  uint32_t u = (uint32_t)v;
  memcpy(&f, &u, 4);
  return f;
}

uint64_t ptx_from_double(double d, uint8_t type) {
  uint64_t v = 0;
  if (TYPE_SIZE(type) == 8) {
    memcpy(&v, &d, 8);
    return v;
  }
  volatile float f = (float)d; /* rounded in the current mode */
  uint32_t u;
  float g = f;
  memcpy(&u, &g, 4);
  return u;
}

int ptx_round_push(uint8_t rnd) {
  static const int modes[] = {
      [RND_RZ] = FE_TOWARDZERO, [RND_RM] = FE_DOWNWARD, [RND_RP] = FE_UPWARD};
  if (rnd < RND_RZ || rnd > RND_RP) return -1;
  int old = fegetround();
  fesetround(modes[rnd]);
  return old;
}

void ptx_round_pop(int old) {
  if (old >= 0) fesetround(old);
}

static double saturate(double d) {
  return d > 0 ? (d < 1 ? d : 1) : 0;
} /* NaN: 0 */

static double float_math(uint8_t op, double a, double b) {
  switch (op) {
  case OP_EX2:
    return exp2(a);
  case OP_LG2:
    return log2(a);
  case OP_RCP:
    return 1.0 / a;
  case OP_SQRT:
    return sqrt(a);
  case OP_RSQRT:
    return 1.0 / sqrt(a);
  case OP_SIN:
    return sin(a);
  case OP_COS:
    return cos(a);
  case OP_TANH:
    return tanh(a);
  case OP_MIN:
    return isnan(a) ? b : isnan(b) ? a : a < b ? a : b;
  case OP_MAX:
    return isnan(a) ? b : isnan(b) ? a : a > b ? a : b;
  case OP_NEG:
    return -a;
  default:
    return fabs(a);
  }
}

/* Sums, products and quotients of f32 values in double round correctly once narrowed. */
static double float_value(const ptx_insn *in, double a, double b, double c) {
  volatile double va = a, vb = b, vc = c;
  switch (in->op) {
  case OP_ADD:
    return va + vb;
  case OP_SUB:
    return va - vb;
  case OP_MUL:
    return va * vb;
  case OP_DIV:
    return va / vb;
  case OP_FMA:
  case OP_MAD:
    if (TYPE_SIZE(in->type) == 4) return fmaf((float)va, (float)vb, (float)vc);
    return fma(va, vb, vc);
  default:
    return float_math(in->op, va, vb);
  }
}

uint64_t ptx_float_op(const ptx_insn *in, uint64_t a, uint64_t b, uint64_t c) {
  int old = ptx_round_push(in->rnd);
  double r = float_value(in, ptx_to_double(a, in->type), ptx_to_double(b, in->type),
                         ptx_to_double(c, in->type));
  uint64_t bits = ptx_from_double(in->flags & F_SAT ? saturate(r) : r, in->type);
  ptx_round_pop(old);
  return bits;
}

static uint64_t mul_hi(uint64_t a, uint64_t b, unsigned size, bool sg) {
  if (size == 8) {
    if (sg) return (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64);
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
  }
  if (sg) return (uint64_t)((ptx_sext(a, size) * ptx_sext(b, size)) >> (size * 8));
  return (ptx_mask(a, size) * ptx_mask(b, size)) >> (size * 8);
}

static uint64_t mul_int(const ptx_insn *in, uint64_t a, uint64_t b) {
  unsigned size = TYPE_SIZE(in->type);
  bool sg = TYPE_KIND(in->type) == TK_S;
  if (in->flags & F_HI) return mul_hi(a, b, size, sg);
  if (in->flags & F_WIDE) {
    if (sg) return (uint64_t)(ptx_sext(a, size) * ptx_sext(b, size));
    return ptx_mask(a, size) * ptx_mask(b, size);
  }
  return a * b;
}

static uint64_t div_int(const ptx_insn *in, uint64_t a, uint64_t b, bool rem) {
  unsigned size = TYPE_SIZE(in->type);
  if (TYPE_KIND(in->type) != TK_S) {
    uint64_t ua = ptx_mask(a, size), ub = ptx_mask(b, size);
    if (ub == 0) return rem ? ua : UINT64_MAX;
    return rem ? ua % ub : ua / ub;
  }
  int64_t sa = ptx_sext(a, size), sb = ptx_sext(b, size);
  if (sb == 0) return rem ? (uint64_t)sa : UINT64_MAX;
  if (sb == -1) return rem ? 0 : 0 - (uint64_t)sa;
  return (uint64_t)(rem ? sa % sb : sa / sb);
}

static uint64_t shift(const ptx_insn *in, uint64_t a, uint64_t b) {
  unsigned size = TYPE_SIZE(in->type);
  uint32_t n = (uint32_t)b;
  if (in->op == OP_SHL) return n >= size * 8 ? 0 : a << n;
  if (TYPE_KIND(in->type) == TK_S) {
    int64_t s = ptx_sext(a, size);
    return (uint64_t)(n >= size * 8 ? (s < 0 ? -1 : 0) : s >> n);
  }
  return n >= size * 8 ? 0 : ptx_mask(a, size) >> n;
}

static uint64_t min_max(const ptx_insn *in, uint64_t a, uint64_t b) {
  unsigned size = TYPE_SIZE(in->type);
  bool less;
  if (TYPE_KIND(in->type) == TK_S)
    less = ptx_sext(a, size) < ptx_sext(b, size);
  else
    less = ptx_mask(a, size) < ptx_mask(b, size);
  return (in->op == OP_MIN) == less ? a : b;
}

static uint64_t bit_count(const ptx_insn *in, uint64_t a) {
  unsigned size = TYPE_SIZE(in->type);
  uint64_t ua = ptx_mask(a, size), r = 0;
  if (in->op == OP_POPC) return (uint64_t)__builtin_popcountll(ua);
  if (in->op == OP_CLZ) return ua ? (uint64_t)__builtin_clzll(ua) - (64 - size * 8) : size * 8;
  for (unsigned i = 0; i < size * 8; i++) r |= ((ua >> i) & 1) << (size * 8 - 1 - i);
  return r;
}

static uint64_t add_sat(const ptx_insn *in, int64_t r) {
  if (!(in->flags & F_SAT) || TYPE_SIZE(in->type) != 4) return (uint64_t)r;
  return (uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
}

uint64_t ptx_int_op(const ptx_insn *in, uint64_t a, uint64_t b, uint64_t c) {
  unsigned size = TYPE_SIZE(in->type);
  bool pred = TYPE_KIND(in->type) == TK_P;
  switch (in->op) {
  case OP_ADD:
    return add_sat(in, ptx_sext(a, size) + ptx_sext(b, size));
  case OP_SUB:
    return add_sat(in, ptx_sext(a, size) - ptx_sext(b, size));
  case OP_MUL:
    return mul_int(in, a, b);
  case OP_MAD:
    return mul_int(in, a, b) + c;
  case OP_DIV:
    return div_int(in, a, b, false);
  case OP_REM:
    return div_int(in, a, b, true);
  case OP_MIN:
  case OP_MAX:
    return min_max(in, a, b);
  case OP_NEG:
    return 0 - a;
  case OP_ABS:
    return ptx_sext(a, size) < 0 ? 0 - a : a;
  case OP_AND:
    return a & b;
  case OP_OR:
    return a | b;
  case OP_XOR:
    return a ^ b;
  case OP_NOT:
    return pred ? !(a & 1) : ~a;
  case OP_CNOT:
    return ptx_mask(a, size) == 0;
  case OP_SHL:
  case OP_SHR:
    return shift(in, a, b);
  default:
    return bit_count(in, a);
  }
}

static bool float_compare(uint8_t cmp, double a, double b) {
  bool unord = isnan(a) || isnan(b);
  switch (cmp) {
  case CMP_EQ:
    return !unord && a == b;
  case CMP_NE:
    return !unord && a != b;
  case CMP_LT:
    return !unord && a < b;
  case CMP_LE:
    return !unord && a <= b;
  case CMP_GT:
    return !unord && a > b;
  case CMP_GE:
    return !unord && a >= b;
  case CMP_EQU:
    return unord || a == b;
  case CMP_NEU:
    return unord || a != b;
  case CMP_LTU:
    return unord || a < b;
  case CMP_LEU:
    return unord || a <= b;
  case CMP_GTU:
    return unord || a > b;
  case CMP_GEU:
    return unord || a >= b;
  case CMP_NUM:
    return !unord;
  default:
    return unord;
  }
}

static bool int_compare(uint8_t cmp, uint64_t ua, uint64_t ub, int64_t sa, int64_t sb, bool sg) {
  switch (cmp) {
  case CMP_EQ:
    return ua == ub;
  case CMP_NE:
    return ua != ub;
  case CMP_LT:
    return sg ? sa < sb : ua < ub;
  case CMP_LE:
    return sg ? sa <= sb : ua <= ub;
  case CMP_GT:
    return sg ? sa > sb : ua > ub;
  case CMP_GE:
    return sg ? sa >= sb : ua >= ub;
  case CMP_LO:
    return ua < ub;
  case CMP_LS:
    return ua <= ub;
  case CMP_HI:
    return ua > ub;
  default:
    return ua >= ub; /* hs */
  }
}

bool ptx_compare(const ptx_insn *in, uint64_t a, uint64_t b) {
  uint8_t t = in->type;
  unsigned size = TYPE_SIZE(t);
  if (TYPE_KIND(t) == TK_F) return float_compare(in->sub, ptx_to_double(a, t), ptx_to_double(b, t));
  return int_compare(in->sub, ptx_mask(a, size), ptx_mask(b, size), ptx_sext(a, size),
                     ptx_sext(b, size), TYPE_KIND(t) == TK_S);
}
