/* The PTX interpreter's cvt: conversions between integer and floating-point types. */
#include "alu.h"

#include <math.h>

static double round_integral(uint8_t rnd, double d) {
  switch (rnd) {
  case RND_RZI:
    return trunc(d);
  case RND_RMI:
    return floor(d);
  case RND_RPI:
    return ceil(d);
  case RND_RNI:
    return nearbyint(d);
  default:
    return d;
  }
}

/* The integer limits of a type, as doubles (a float beyond them saturates). */
static void limits(uint8_t t, double *lo, double *hi) {
  unsigned bits = TYPE_SIZE(t) * 8;
  if (TYPE_KIND(t) == TK_S) {
    *lo = -ldexp(1, (int)bits - 1);
    *hi = ldexp(1, (int)bits - 1);
  } else {
    *lo = 0;
    *hi = ldexp(1, (int)bits);
  }
}

static uint64_t float_to_int(const ptx_insn *in, double d) {
  double lo = 0, hi = 0;
  limits(in->type, &lo, &hi);
  d = round_integral(in->rnd, d);
  if (isnan(d)) return 0;
  if (d < lo) d = lo;
  if (TYPE_KIND(in->type) == TK_S) {
    if (d >= hi) return ptx_mask((uint64_t)(1ull << (TYPE_SIZE(in->type) * 8 - 1)) - 1, 8);
    return ptx_mask((uint64_t)(int64_t)d, TYPE_SIZE(in->type));
  }
  if (d >= hi) return ptx_mask(UINT64_MAX, TYPE_SIZE(in->type));
  return (uint64_t)d;
}

static uint64_t int_to_float(const ptx_insn *in, uint64_t a) {
  unsigned size = TYPE_SIZE(in->type2);
  bool sg = TYPE_KIND(in->type2) == TK_S;
  int old = ptx_round_push(in->rnd);
  uint64_t r = 0;
  if (TYPE_SIZE(in->type) == 4) {
    volatile float f = sg ? (float)ptx_sext(a, size) : (float)ptx_mask(a, size);
    r = ptx_from_double(f, in->type);
  } else {
    volatile double d = sg ? (double)ptx_sext(a, size) : (double)ptx_mask(a, size);
    r = ptx_from_double(d, in->type);
  }
  ptx_round_pop(old);
  return r;
}

static uint64_t int_to_int(const ptx_insn *in, uint64_t a) {
  unsigned from = TYPE_SIZE(in->type2), to = TYPE_SIZE(in->type);
  bool from_s = TYPE_KIND(in->type2) == TK_S, to_s = TYPE_KIND(in->type) == TK_S;
  if (!(in->flags & F_SAT)) return from_s ? (uint64_t)ptx_sext(a, from) : ptx_mask(a, from);
  double lo = 0, hi = 0;
  limits(in->type, &lo, &hi);
  if (from_s) {
    int64_t v = ptx_sext(a, from);
    if (v < 0 && !to_s) return 0;
    if (to < 8 && (double)v >= hi) return (uint64_t)hi - 1;
    if (to < 8 && (double)v < lo) return (uint64_t)(int64_t)lo;
    return (uint64_t)v;
  }
  uint64_t v = ptx_mask(a, from);
  if ((double)v >= hi) return to_s ? (uint64_t)hi - 1 : ptx_mask(UINT64_MAX, to);
  return v;
}

static uint64_t float_to_float(const ptx_insn *in, uint64_t a) {
  double d = round_integral(in->rnd, ptx_to_double(a, in->type2));
  if (in->flags & F_SAT) d = d > 0 ? (d < 1 ? d : 1) : 0;
  int old = ptx_round_push(in->rnd);
  uint64_t r = ptx_from_double(d, in->type);
  ptx_round_pop(old);
  return r;
}

uint64_t ptx_convert(const ptx_insn *in, uint64_t a, bool *ok) {
  bool to_f = TYPE_KIND(in->type) == TK_F, from_f = TYPE_KIND(in->type2) == TK_F;
  *ok = !((to_f && TYPE_SIZE(in->type) == 2) || (from_f && TYPE_SIZE(in->type2) == 2));
  if (!*ok) return 0;
  if (to_f && from_f) return float_to_float(in, a);
  if (to_f) return int_to_float(in, a);
  if (from_f) return float_to_int(in, ptx_to_double(a, in->type2));
  return int_to_int(in, a);
}
