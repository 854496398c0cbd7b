/* The PTX interpreter's instruction dispatch: one thread's steps until it waits or ends. */
#include "alu.h"
#include "exec.h"

#include <string.h>

#define RD(i, type) ptx_read(b, t, in, (i), (type))

static void set(ptx_thread *t, const ptx_insn *in, int i, uint64_t v, unsigned size) {
  const ptx_operand *o = &in->ops[i];
  if (o->kind != OPD_REG || o->reg < 0) return;
  t->regs[o->reg] = ptx_mask(v, size);
}

static void unsupported(ptx_block *b, ptx_thread *t, const ptx_insn *in, const char *what) {
  ptx_fault(b, t, in, NVHCQ_PTX_FAULT_UNSUPPORTED, 0, 0, what);
}

static void arith(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  uint8_t ty = in->type;
  unsigned size = TYPE_SIZE(ty);
  bool wide = in->flags & F_WIDE;
  uint8_t cty = wide ? PTX_TYPE(TYPE_KIND(ty), size * 2) : ty;
  uint64_t a = RD(1, ty),
           bb = in->nops > 2 ? RD(2, in->op == OP_SHL || in->op == OP_SHR ? PTX_TYPE(TK_U, 4) : ty)
                             : 0;
  uint64_t c = in->nops > 3 ? RD(3, cty) : 0;
  if (TYPE_KIND(ty) == TK_F) {
    if (size == 2) return unsupported(b, t, in, "f16 arithmetic");
    return set(t, in, 0, ptx_float_op(in, a, bb, c), size);
  }
  unsigned dsize = wide ? size * 2 : size;
  if (in->op == OP_POPC || in->op == OP_CLZ) dsize = 4;
  set(t, in, 0, ptx_int_op(in, a, bb, c), dsize);
}

static uint64_t vec_pack(const ptx_thread *t, const ptx_operand *o, unsigned total) {
  unsigned each = total / o->nvec * 8;
  uint64_t v = 0;
  for (unsigned i = 0; i < o->nvec; i++)
    if (o->vec[i] >= 0) v |= ptx_mask(t->regs[o->vec[i]], each / 8) << (i * each);
  return v;
}

static void mov(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned size = TYPE_SIZE(in->type);
  const ptx_operand *d = &in->ops[0], *s = &in->ops[1];
  uint64_t v = s->kind == OPD_VEC ? vec_pack(t, s, size) : RD(1, in->type);
  if (d->kind != OPD_VEC) return set(t, in, 0, v, size);
  unsigned each = size / d->nvec;
  for (unsigned i = 0; i < d->nvec; i++)
    if (d->vec[i] >= 0) t->regs[d->vec[i]] = ptx_mask(v >> (i * each * 8), each);
}

static void cvt(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  bool ok;
  uint64_t v = ptx_convert(in, RD(1, in->type2), &ok);
  if (!ok) return unsupported(b, t, in, "cvt with f16");
  set(t, in, 0, v, TYPE_SIZE(in->type));
}

static void cvta(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  uint64_t a = RD(1, in->type), base = 0;
  if (in->space == SP_SHARED) base = PTX_SHARED_WINDOW;
  if (in->space == SP_LOCAL) base = PTX_LOCAL_WINDOW;
  if (in->space == SP_PARAM) base = PTX_PARAM_WINDOW;
  set(t, in, 0, in->flags & F_TO ? a - base : a + base, TYPE_SIZE(in->type));
}

/* mapa d, a, rank: the same variable in the shared memory of the cluster's block `rank`. The
 * generic form maps generic addresses (a non-shared one faults: PTX leaves it undefined). */
static void mapa(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  uint64_t a = RD(1, in->type), rank = RD(2, PTX_TYPE(TK_U, 4)) & 0xffffffffu, base = 0;
  if (in->space != SP_SHARED) {
    base = PTX_SHARED_WINDOW;
    if (a < PTX_SHARED_WINDOW || a >= PTX_LOCAL_WINDOW) {
      ptx_fault(b, t, in, NVHCQ_PTX_FAULT_ADDRESS, a, 0,
                "mapa of a generic address outside shared memory");
      return;
    }
  }
  uint64_t offset = (a - base) & ((1u << PTX_CLUSTER_SHIFT) - 1);
  if (rank >= b->cluster->count) {
    ptx_fault(b, t, in, NVHCQ_PTX_FAULT_ADDRESS, a, 0, "mapa to a rank outside the cluster");
    return;
  }
  set(t, in, 0, base + ((rank + 1) << PTX_CLUSTER_SHIFT | offset), TYPE_SIZE(in->type));
}

static void setp(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  bool r = ptx_compare(in, RD(1, in->type), RD(2, in->type));
  set(t, in, 0, r, 1);
  if (in->ops[0].reg2 >= 0) t->regs[in->ops[0].reg2] = !r;
}

static uint64_t load_elem(const unsigned char *p, uint8_t type) {
  uint64_t v = 0;
  memcpy(&v, p, TYPE_SIZE(type));
  return TYPE_KIND(type) == TK_S ? (uint64_t)ptx_sext(v, TYPE_SIZE(type)) : v;
}

static void ld(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned es = TYPE_SIZE(in->type), n = in->vec ? in->vec : 1;
  unsigned char *p = ptx_address(b, t, in, &in->ops[1], es * n, 0);
  if (!p) return;
  const ptx_operand *d = &in->ops[0];
  if (d->kind == OPD_REG && d->reg >= 0) t->regs[d->reg] = load_elem(p, in->type);
  for (unsigned i = 0; d->kind == OPD_VEC && i < n && i < d->nvec; i++)
    if (d->vec[i] >= 0) t->regs[d->vec[i]] = load_elem(p + i * es, in->type);
}

static void st(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned es = TYPE_SIZE(in->type), n = in->vec ? in->vec : 1;
  unsigned char *p = ptx_address(b, t, in, &in->ops[0], es * n, 1);
  if (!p) return;
  const ptx_operand *s = &in->ops[1];
  for (unsigned i = 0; i < n; i++) {
    uint64_t v = s->kind == OPD_VEC ? (s->vec[i] >= 0 ? t->regs[s->vec[i]] : 0) : RD(1, in->type);
    memcpy(p + i * es, &v, es);
  }
}

static uint64_t atom_value(const ptx_insn *in, uint64_t old, uint64_t v, uint64_t v2) {
  uint8_t ty = in->type;
  unsigned size = TYPE_SIZE(ty);
  ptx_insn alu = *in;
  switch (in->sub) {
  case AT_ADD:
    alu.op = OP_ADD;
    alu.rnd = RND_NONE;
    return TYPE_KIND(ty) == TK_F ? ptx_float_op(&alu, old, v, 0) : old + v;
  case AT_MIN:
  case AT_MAX:
    alu.op = in->sub == AT_MIN ? OP_MIN : OP_MAX;
    return TYPE_KIND(ty) == TK_F ? ptx_float_op(&alu, old, v, 0) : ptx_int_op(&alu, old, v, 0);
  case AT_EXCH:
    return v;
  case AT_CAS:
    return ptx_mask(old, size) == ptx_mask(v, size) ? v2 : old;
  case AT_INC:
    return ptx_mask(old, size) >= ptx_mask(v, size) ? 0 : old + 1;
  case AT_DEC:
    return ptx_mask(old, size) == 0 || ptx_mask(old, size) > ptx_mask(v, size) ? v : old - 1;
  case AT_AND:
    return old & v;
  case AT_OR:
    return old | v;
  default:
    return old ^ v;
  }
}

/* Replaces *p by f(*p) atomically (the mock runs grids of several channels at once, and the CPU
 * may touch the same memory); returns the old value. p is aligned to size (checked). */
static uint64_t rmw(const ptx_insn *in, unsigned char *p, unsigned size, uint64_t v, uint64_t v2) {
  if (size == 4) {
    uint32_t old = __atomic_load_n((uint32_t *)p, __ATOMIC_RELAXED), r;
    do r = (uint32_t)atom_value(in, old, v, v2);
    while (!__atomic_compare_exchange_n((uint32_t *)p, &old, r, 1, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED));
    return old;
  }
  uint64_t old = __atomic_load_n((uint64_t *)p, __ATOMIC_RELAXED), r;
  do r = atom_value(in, old, v, v2);
  while (
      !__atomic_compare_exchange_n((uint64_t *)p, &old, r, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return old;
}

/* atom d, [a], b (, c); red [a], b: read-modify-write. */
static void atom(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  int first = in->op == OP_ATOM ? 1 : 0;
  unsigned size = TYPE_SIZE(in->type);
  if (!in->sub || in->vec || (size != 4 && size != 8)) return unsupported(b, t, in, "atomic form");
  unsigned char *p = ptx_address(b, t, in, &in->ops[first], size, 1);
  if (!p) return;
  uint64_t v = RD(first + 1, in->type), v2 = in->nops > first + 2 ? RD(first + 2, in->type) : 0;
  uint64_t old = rmw(in, p, size, v, v2);
  if (first) set(t, in, 0, old, size);
}

static void step_memory(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  switch (in->op) {
  case OP_LD:
    return ld(b, t, in);
  case OP_ST:
    return st(b, t, in);
  case OP_ATOM:
  case OP_RED:
    return atom(b, t, in);
  case OP_MOV:
    return mov(b, t, in);
  case OP_CVT:
    return cvt(b, t, in);
  case OP_CVTA:
    return cvta(b, t, in);
  case OP_MAPA:
    return mapa(b, t, in);
  case OP_TMA:
    return ptx_tma_load(b, t, in);
  case OP_SETP:
    return setp(b, t, in);
  default: /* selp */
    set(t, in, 0, RD(3, PTX_TYPE(TK_P, 1)) & 1 ? RD(1, in->type) : RD(2, in->type),
        TYPE_SIZE(in->type));
  }
}

/* Control flow; returns true when the thread stops running (waits or ends). */
static bool step_control(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  switch (in->op) {
  case OP_BRA:
    t->pc = (uint32_t)in->ops[0].label;
    return false;
  case OP_RET:
  case OP_EXIT:
    t->state = TS_DONE;
    return true;
  case OP_TRAP:
    ptx_fault(b, t, in, NVHCQ_PTX_FAULT_TRAP, 0, 0, "trap");
    return true;
  case OP_BAR:
    t->state = TS_BAR;
    return true;
  case OP_CARRIVE:
    t->arrived++;
    t->pc++;
    return false;
  case OP_CWAIT:
    t->state = TS_CWAIT; /* the launch lets it on once the whole cluster arrived */
    return true;
  case OP_SHFL:
  case OP_VOTE:
  case OP_REDUX:
  case OP_ELECT:
    t->state = TS_WARP;
    return true;
  case OP_WGMMA:
    t->state = TS_WGROUP; /* the launch runs it once its warpgroup's 128 threads are there */
    return true;
  case OP_MBAR:
    if (ptx_mbarrier_step(b, t, in)) return true;
    t->pc++;
    return false;
  default:
    t->pc++;
    return false; /* membar, fence, bar.warp.sync: nothing to order here */
  }
}

static bool is_control(uint8_t op) {
  return op == OP_BRA || op == OP_RET || op == OP_EXIT || op == OP_TRAP || op == OP_BAR ||
         op == OP_SHFL || op == OP_VOTE || op == OP_REDUX || op == OP_NOP || op == OP_WARPSYNC ||
         op == OP_CARRIVE || op == OP_CWAIT || op == OP_ELECT || op == OP_WGMMA || op == OP_MBAR;
}

static bool is_memory(uint8_t op) {
  return op == OP_LD || op == OP_ST || op == OP_ATOM || op == OP_RED || op == OP_MOV ||
         op == OP_CVT || op == OP_CVTA || op == OP_SETP || op == OP_SELP || op == OP_MAPA ||
         op == OP_TMA;
}

void ptx_run_thread(ptx_block *b, ptx_thread *t) {
  const nvhcq_ptx_kernel *k = b->k;
  while (t->state == TS_RUN && b->status == NVHCQ_PTX_OK) {
    if (t->pc >= k->ninsns) {
      t->state = TS_DONE;
      return;
    }
    const ptx_insn *in = &k->insns[t->pc];
    t->clock++;
    if (b->cfg->max_instructions && ++b->cluster->steps > b->cfg->max_instructions) {
      ptx_fault(b, t, in, NVHCQ_PTX_FAULT_TIMEOUT, 0, 0, "instruction budget exhausted");
      return;
    }
    if (b->cfg->cancel && (++b->cluster->polls & 4095) == 0 &&
        __atomic_load_n(b->cfg->cancel, __ATOMIC_ACQUIRE)) {
      ptx_fault(b, t, in, NVHCQ_PTX_FAULT_TIMEOUT, 0, 0, "stopped while running");
      return;
    }
    if (in->pred >= 0 && (t->regs[in->pred] & 1) == in->pred_neg) {
      t->pc++;
      continue;
    }
    if (is_control(in->op)) {
      if (step_control(b, t, in)) return;
      continue;
    }
    if (is_memory(in->op))
      step_memory(b, t, in);
    else
      arith(b, t, in);
    t->pc++;
  }
}
