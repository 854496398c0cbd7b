/* The PTX interpreter's warp collectives: shfl.sync, vote.sync, redux.sync and elect.sync. */
#include "alu.h"
#include "exec.h"

static void shfl(ptx_block *b, const ptx_insn *in, ptx_thread **lanes, uint32_t count) {
  ptx_thread *by_lane[32] = {0};
  uint64_t src[32] = {0};
  for (uint32_t i = 0; i < count; i++) {
    by_lane[lanes[i]->linear % 32] = lanes[i];
    src[lanes[i]->linear % 32] = ptx_read(b, lanes[i], in, 1, in->type);
  }
  for (uint32_t i = 0; i < count; i++) {
    ptx_thread *t = lanes[i];
    uint32_t lane = t->linear % 32, bv = (uint32_t)ptx_read(b, t, in, 2, PTX_TYPE(TK_U, 4)) & 31;
    uint32_t c = (uint32_t)ptx_read(b, t, in, 3, PTX_TYPE(TK_U, 4));
    uint32_t seg = (c >> 8) & 31, max_lane = (lane & seg) | (c & 31 & ~seg), min_lane = lane & seg;
    int64_t j = lane;
    bool ok;
    switch (in->sub) {
    case SH_UP:
      j = (int64_t)lane - bv, ok = j >= max_lane;
      break;
    case SH_DOWN:
      j = lane + bv, ok = j <= max_lane;
      break;
    case SH_BFLY:
      j = lane ^ bv, ok = j <= max_lane;
      break;
    default:
      j = min_lane | (bv & ~seg), ok = j <= max_lane;
      break;
    }
    if (!ok || !by_lane[j]) j = lane; /* an absent source lane: undefined, here our own value */
    if (in->ops[0].reg >= 0) t->regs[in->ops[0].reg] = ptx_mask(src[j], 4);
    if (in->ops[0].reg2 >= 0) t->regs[in->ops[0].reg2] = ok;
  }
}

static void vote(ptx_block *b, const ptx_insn *in, ptx_thread **lanes, uint32_t count) {
  uint32_t ballot = 0, ones = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (ptx_read(b, lanes[i], in, 1, PTX_TYPE(TK_P, 1)) & 1) {
      ballot |= 1u << (lanes[i]->linear % 32);
      ones++;
    }
  }
  uint64_t r = ballot;
  if (in->sub == VT_ALL) r = ones == count;
  if (in->sub == VT_ANY) r = ones != 0;
  if (in->sub == VT_UNI) r = ones == 0 || ones == count;
  for (uint32_t i = 0; i < count; i++)
    if (in->ops[0].reg >= 0) lanes[i]->regs[in->ops[0].reg] = r;
}

static void redux(ptx_block *b, const ptx_insn *in, ptx_thread **lanes, uint32_t count) {
  ptx_insn alu = *in;
  static const uint8_t ops[] = {[AT_ADD] = OP_ADD, [AT_MIN] = OP_MIN, [AT_MAX] = OP_MAX,
                                [AT_AND] = OP_AND, [AT_OR] = OP_OR,   [AT_XOR] = OP_XOR};
  alu.op = in->sub < sizeof ops ? ops[in->sub] : OP_NONE;
  alu.flags = 0;
  if (alu.op == OP_NONE) {
    ptx_fault(b, lanes[0], in, NVHCQ_PTX_FAULT_UNSUPPORTED, 0, 0, "redux operation");
    return;
  }
  uint64_t r = ptx_read(b, lanes[0], in, 1, in->type);
  for (uint32_t i = 1; i < count; i++)
    r = ptx_int_op(&alu, r, ptx_read(b, lanes[i], in, 1, in->type), 0);
  for (uint32_t i = 0; i < count; i++)
    if (in->ops[0].reg >= 0) lanes[i]->regs[in->ops[0].reg] = ptx_mask(r, 4);
}

/* elect.sync d|p, membermask: the lowest lane of the mask among those here leads; d is its lane
 * in every thread, p true in the leader only. */
static void elect(ptx_block *b, const ptx_insn *in, ptx_thread **lanes, uint32_t count) {
  uint32_t mask = (uint32_t)ptx_read(b, lanes[0], in, 1, PTX_TYPE(TK_U, 4)), leader = 32;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t lane = lanes[i]->linear % 32;
    if (mask >> lane & 1 && lane < leader) leader = lane;
  }
  for (uint32_t i = 0; i < count; i++) {
    ptx_thread *t = lanes[i];
    if (in->ops[0].reg >= 0) t->regs[in->ops[0].reg] = leader;
    if (in->ops[0].reg2 >= 0) t->regs[in->ops[0].reg2] = t->linear % 32 == leader;
  }
}

void ptx_run_collective(ptx_block *b, ptx_thread **lanes, uint32_t count) {
  const ptx_insn *in = &b->k->insns[lanes[0]->pc];
  for (uint32_t i = 1; i < count; i++)
    if (lanes[i]->pc != lanes[0]->pc) {
      ptx_fault(b, lanes[i], in, NVHCQ_PTX_FAULT_UNSUPPORTED, 0, 0,
                "a warp collective reached at different instructions (divergent warp)");
      return;
    }
  if (in->op == OP_SHFL)
    shfl(b, in, lanes, count);
  else if (in->op == OP_VOTE)
    vote(b, in, lanes, count);
  else if (in->op == OP_ELECT)
    elect(b, in, lanes, count);
  else
    redux(b, in, lanes, count);
  for (uint32_t i = 0; i < count; i++) {
    lanes[i]->pc++;
    lanes[i]->state = TS_RUN;
  }
}
