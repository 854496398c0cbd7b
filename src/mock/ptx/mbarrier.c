/* The PTX interpreter's mbarriers: arrivals, expected transaction bytes, phases and their waits.
 *
 * An mbarrier is 8 bytes of shared memory whose layout PTX leaves opaque; here it holds
 *   bits 19:0   arrivals still pending in the current phase
 *   bits 39:20  arrivals each phase expects (mbarrier.init's count, less arrive_drop's)
 *   bits 61:40  the transaction count: bytes expected (expect_tx) less bytes arrived
 *               (complete_tx), 22-bit two's complement (PTX allows -(2^20 - 1)..2^20 - 1)
 *   bit 62      set by init, cleared by inval: a word without it holds no barrier
 *   bit 63      the current phase's parity
 * A phase completes when no arrival is pending and the transaction count is zero: the parity
 * flips and the counts start again. Tokens (arrive's state) hold the parity of the phase the
 * arrival was in, and the arrivals it left pending. */
#include "exec.h"

#include <stdio.h>
#include <string.h>

#define MB_COUNT_MAX ((1u << 20) - 1)
#define MB_VALID     (1ull << 62)
#define MB_PHASE     (1ull << 63)

typedef struct mbar {
  uint32_t pending, expected;
  int32_t tx;
  bool valid, phase;
} mbar;

static mbar mbar_decode(uint64_t w) {
  mbar m = {.pending = (uint32_t)(w & MB_COUNT_MAX),
            .expected = (uint32_t)(w >> 20 & MB_COUNT_MAX),
            .valid = (w & MB_VALID) != 0,
            .phase = (w & MB_PHASE) != 0};
  uint32_t tx = (uint32_t)(w >> 40 & 0x3fffff);
  m.tx = (int32_t)(tx ^ 0x200000u) - 0x200000; /* sign-extend 22 bits */
  return m;
}

static uint64_t mbar_encode(const mbar *m) {
  return (uint64_t)m->pending | (uint64_t)m->expected << 20 |
         (uint64_t)((uint32_t)m->tx & 0x3fffff) << 40 | (m->valid ? MB_VALID : 0) |
         (m->phase ? MB_PHASE : 0);
}

static uint64_t load_word(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

static void store(unsigned char *p, const mbar *m) {
  uint64_t w = mbar_encode(m);
  memcpy(p, &w, 8);
}

static bool bad(ptx_block *b, const ptx_thread *t, const ptx_insn *in, uint64_t address,
                const char *what) {
  ptx_fault(b, t, in, NVHCQ_PTX_FAULT_ADDRESS, address, 1, what);
  return false;
}

/* The barrier word the instruction's operand i names, or NULL (the fault recorded). */
static unsigned char *word_at(ptx_block *b, ptx_thread *t, const ptx_insn *in, int i) {
  return ptx_address(b, t, in, &in->ops[i], 8, in->sub != MB_TEST_WAIT && in->sub != MB_TRY_WAIT);
}

/* Completes the phase when nothing is pending any more. */
static void maybe_complete(mbar *m) {
  if (m->pending || m->tx) return;
  m->phase = !m->phase;
  m->pending = m->expected;
}

/* Adds (bytes > 0) or takes away transaction bytes, checking PTX's range. */
static bool add_tx(mbar *m, int64_t bytes) {
  int64_t tx = (int64_t)m->tx + bytes;
  if (tx > (int64_t)MB_COUNT_MAX || tx < -(int64_t)MB_COUNT_MAX) return false;
  m->tx = (int32_t)tx;
  return true;
}

bool ptx_mbarrier_complete_tx(ptx_block *b, const ptx_thread *t, const ptx_insn *in,
                              unsigned char *p, uint32_t bytes) {
  mbar m = mbar_decode(load_word(p));
  if (!m.valid) return bad(b, t, in, 0, "complete_tx on a word that holds no mbarrier");
  if (!add_tx(&m, -(int64_t)bytes))
    return bad(b, t, in, 0, "mbarrier transaction count out of range");
  maybe_complete(&m);
  store(p, &m);
  return true;
}

/* init [a], count. */
static void init(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned char *p = word_at(b, t, in, 0);
  uint64_t count = ptx_read(b, t, in, 1, PTX_TYPE(TK_U, 4)) & 0xffffffffu;
  if (!p) return;
  if (count < 1 || count > MB_COUNT_MAX) {
    bad(b, t, in, count, "mbarrier.init count outside 1..2^20-1");
    return;
  }
  mbar m = {.pending = (uint32_t)count, .expected = (uint32_t)count, .valid = true};
  store(p, &m);
}

/* arrive / arrive_drop {.expect_tx}{.noComplete} state, [a] {, count or tx bytes}: sets state to
 * the token. arrive.expect_tx's operand is the byte count; it arrives once. */
static void arrive(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned char *p = word_at(b, t, in, 1);
  if (!p) return;
  mbar m = mbar_decode(load_word(p));
  if (!m.valid) {
    bad(b, t, in, 0, "mbarrier arrive on a word that holds no mbarrier");
    return;
  }
  uint64_t count = 1, operand = in->nops > 2 ? ptx_read(b, t, in, 2, PTX_TYPE(TK_U, 4)) : 1;
  if (in->flags & F_MB_TX) {
    if (!add_tx(&m, (int64_t)(operand & 0xffffffffu))) {
      bad(b, t, in, 0, "mbarrier transaction count out of range");
      return;
    }
  } else {
    count = operand & 0xffffffffu;
  }
  if (count > m.pending) {
    bad(b, t, in, 0, "more mbarrier arrivals than the phase has pending");
    return;
  }
  m.pending -= (uint32_t)count;
  if (in->sub == MB_ARRIVE_DROP) m.expected -= (uint32_t)count;
  uint64_t token = (m.phase ? MB_PHASE : 0) | m.pending;
  if ((in->flags & F_MB_NOCOMPLETE) && !m.pending && !m.tx) {
    bad(b, t, in, 0, "mbarrier.arrive.noComplete completed the phase");
    return;
  }
  maybe_complete(&m);
  store(p, &m);
  if (in->ops[0].kind == OPD_REG && in->ops[0].reg >= 0) t->regs[in->ops[0].reg] = token;
}

/* expect_tx / complete_tx [a], bytes. */
static void tx(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned char *p = word_at(b, t, in, 0);
  uint64_t bytes = ptx_read(b, t, in, 1, PTX_TYPE(TK_U, 4)) & 0xffffffffu;
  if (!p) return;
  if (in->sub == MB_COMPLETE_TX) {
    ptx_mbarrier_complete_tx(b, t, in, p, (uint32_t)bytes);
    return;
  }
  mbar m = mbar_decode(load_word(p));
  if (!m.valid) {
    bad(b, t, in, 0, "expect_tx on a word that holds no mbarrier");
    return;
  }
  if (!add_tx(&m, (int64_t)bytes)) {
    bad(b, t, in, 0, "mbarrier transaction count out of range");
    return;
  }
  store(p, &m);
}

/* Whether the phase test_wait / try_wait names has completed: with .parity, the phase of that
 * parity (the current phase has the other); with a token, the phase it was taken in. */
static bool phase_done(const mbar *m, const ptx_insn *in, uint64_t operand) {
  bool parity = in->flags & F_MB_PARITY ? (operand & 1) != 0 : (operand & MB_PHASE) != 0;
  return m->phase != parity;
}

/* test_wait / try_wait p, [a], state-or-parity: 1 when done, else 0 (test_wait) or blocked. */
static bool wait(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  unsigned char *p = word_at(b, t, in, 1);
  if (!p) return true;
  mbar m = mbar_decode(load_word(p));
  if (!m.valid) {
    bad(b, t, in, 0, "mbarrier wait on a word that holds no mbarrier");
    return true;
  }
  uint8_t type = in->flags & F_MB_PARITY ? PTX_TYPE(TK_U, 4) : PTX_TYPE(TK_B, 8);
  bool done = phase_done(&m, in, ptx_read(b, t, in, 2, type));
  if (!done && in->sub == MB_TRY_WAIT) {
    t->state = TS_MBAR; /* runs again once the phase completes (ptx_mbarrier_ready) */
    return true;
  }
  if (in->ops[0].kind == OPD_REG && in->ops[0].reg >= 0) t->regs[in->ops[0].reg] = done;
  if (done) return false;
  t->pc++;
  t->state = TS_YIELD; /* a test_wait loop: the others run before it tests again */
  return true;
}

bool ptx_mbarrier_ready(ptx_block *b, ptx_thread *t) {
  const ptx_insn *in = &b->k->insns[t->pc];
  uint64_t a = ptx_operand_address(b, t, &in->ops[1]);
  const unsigned char *p = ptx_space_ptr(b, t, in->space, a, 8, 0);
  if (!p) return true; /* it faults when it runs again */
  mbar m = mbar_decode(load_word(p));
  uint8_t type = in->flags & F_MB_PARITY ? PTX_TYPE(TK_U, 4) : PTX_TYPE(TK_B, 8);
  return !m.valid || phase_done(&m, in, ptx_read(b, t, in, 2, type));
}

bool ptx_mbarrier_step(ptx_block *b, ptx_thread *t, const ptx_insn *in) {
  switch (in->sub) {
  case MB_INIT:
    init(b, t, in);
    return false;
  case MB_INVAL: {
    unsigned char *p = word_at(b, t, in, 0);
    if (p) memset(p, 0, 8);
    return false;
  }
  case MB_ARRIVE:
  case MB_ARRIVE_DROP:
    arrive(b, t, in);
    return false;
  case MB_EXPECT_TX:
  case MB_COMPLETE_TX:
    tx(b, t, in);
    return false;
  case MB_PENDING: /* pending_count d, state: the arrivals the token's arrival left */
    if (in->ops[0].kind == OPD_REG && in->ops[0].reg >= 0)
      t->regs[in->ops[0].reg] = ptx_read(b, t, in, 1, PTX_TYPE(TK_B, 8)) & MB_COUNT_MAX;
    return false;
  default:
    return wait(b, t, in);
  }
}
