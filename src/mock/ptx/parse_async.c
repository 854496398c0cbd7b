/* The PTX parser's Hopper instructions: wgmma, mbarrier, cp.async.bulk.tensor, elect.sync, and the
 * hints and fences that have nothing to do on a CPU. */
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ordering, scope and alignment modifiers these instructions take and the interpreter needs not
 * (every access is complete and visible when its instruction ends). */
static bool ordering(const char *m) {
  static const char *const names[] = {"sync",    "aligned", "release", "acquire", "relaxed",
                                      "acq_rel", "cta",     "cluster", "gpu",     "sys"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i], m) == 0) return true;
  return false;
}

/* Splits "a.b.c" in place: the next modifier, or NULL at the end. */
static char *next_mod(char **rest) {
  if (!*rest || !**rest) return NULL;
  char *m = *rest;
  *rest = strchr(m, '.');
  if (*rest) *(*rest)++ = 0;
  return m;
}

/* wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype: N in in->shape, the accumulator type in
 * in->type, the inputs' in in->type2 (f16, or bf16 as PTX_TYPE(TK_B, 2)). */
static int wgmma_mma(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  in->op = OP_WGMMA;
  int types = 0;
  for (char *m; (m = next_mod(&rest));) {
    unsigned mm, nn, kk;
    char tail;
    if (sscanf(m, "m%un%uk%u%c", &mm, &nn, &kk, &tail) == 3) {
      if (mm != 64 || kk != 16 || nn < 8 || nn > 256 || nn % 8)
        return ptx_fail(p, "unsupported wgmma shape '%s' (m64nNk16, N 8..256 by 8)", m);
      in->shape = (uint16_t)nn;
    } else if (strcmp(m, "f32") == 0 || strcmp(m, "f16") == 0 || strcmp(m, "bf16") == 0) {
      uint8_t t = strcmp(m, "f32") == 0   ? PTX_TYPE(TK_F, 4)
                  : strcmp(m, "f16") == 0 ? PTX_TYPE(TK_F, 2)
                                          : PTX_TYPE(TK_B, 2);
      if (types == 0) in->type = t;
      if (types == 1) in->type2 = t;
      if (types == 2 && t != in->type2) return ptx_fail(p, "wgmma with A and B of two types");
      types++;
    } else if (!ordering(m)) {
      return ptx_fail(p, "unsupported wgmma form '%s' (.%s)", word, m);
    }
  }
  bool acc_ok = in->type == PTX_TYPE(TK_F, 4) || in->type == PTX_TYPE(TK_F, 2);
  bool in_ok = in->type2 == PTX_TYPE(TK_F, 2) || in->type2 == PTX_TYPE(TK_B, 2);
  if (types != 3 || !in->shape || !acc_ok || !in_ok ||
      (in->type2 == PTX_TYPE(TK_B, 2) && in->type != PTX_TYPE(TK_F, 4)))
    return ptx_fail(p, "unsupported wgmma form '%s' (f32 or f16 from f16, f32 from bf16)", word);
  return 0;
}

/* wgmma.fence / commit_group / wait_group: mma_async completes as it issues here, so there is
 * never a group to wait for. */
static int wgmma(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  char *form = next_mod(&rest);
  if (form && strcmp(form, "mma_async") == 0) return wgmma_mma(p, in, rest, word);
  if (!form ||
      (strcmp(form, "fence") && strcmp(form, "commit_group") && strcmp(form, "wait_group")))
    return ptx_fail(p, "unsupported instruction '%s'", word);
  for (char *m; (m = next_mod(&rest));)
    if (!ordering(m)) return ptx_fail(p, "unsupported wgmma form '%s'", word);
  in->op = OP_NOP;
  return 0;
}

static const struct {
  const char *name;
  uint8_t sub;
} mbar_forms[] = {{"init", MB_INIT},
                  {"inval", MB_INVAL},
                  {"arrive", MB_ARRIVE},
                  {"arrive_drop", MB_ARRIVE_DROP},
                  {"expect_tx", MB_EXPECT_TX},
                  {"complete_tx", MB_COMPLETE_TX},
                  {"test_wait", MB_TEST_WAIT},
                  {"try_wait", MB_TRY_WAIT},
                  {"pending_count", MB_PENDING}};

/* A modifier after the form: what it changes, or false for one the form does not take. */
static bool mbar_modifier(ptx_insn *in, const char *m) {
  bool arrives = in->sub == MB_ARRIVE || in->sub == MB_ARRIVE_DROP;
  bool waits = in->sub == MB_TEST_WAIT || in->sub == MB_TRY_WAIT;
  if (arrives && strcmp(m, "expect_tx") == 0) return in->flags |= F_MB_TX, true;
  if (arrives && strcmp(m, "noComplete") == 0) return in->flags |= F_MB_NOCOMPLETE, true;
  if (waits && strcmp(m, "parity") == 0) return in->flags |= F_MB_PARITY, true;
  if (strcmp(m, "shared") == 0 || strcmp(m, "shared::cta") == 0 ||
      strcmp(m, "shared::cluster") == 0)
    return in->space = SP_SHARED, true;
  return strcmp(m, "b64") == 0 || ordering(m);
}

/* mbarrier.<form>{.expect_tx, .parity, .noComplete}{.sem}{.scope}{.space}.b64. */
static int mbarrier(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  in->op = OP_MBAR;
  char *form = next_mod(&rest);
  for (size_t i = 0; form && i < sizeof mbar_forms / sizeof mbar_forms[0]; i++)
    if (strcmp(mbar_forms[i].name, form) == 0) in->sub = mbar_forms[i].sub;
  if (!in->sub) return ptx_fail(p, "unsupported instruction '%s'", word);
  for (char *m; (m = next_mod(&rest));)
    if (!mbar_modifier(in, m)) return ptx_fail(p, "unsupported mbarrier form '%s' (.%s)", word, m);
  in->type = PTX_TYPE(TK_B, 8);
  return 0;
}

/* cp.async.bulk.tensor.Nd.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes
 * {.multicast::cluster}{.L2::cache_hint}: a tile-mode load (in->shape dimensions). */
static int bulk_tensor(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  in->op = OP_TMA;
  bool dst = false, src = false, mbar = false;
  for (char *m; (m = next_mod(&rest));) {
    if (strlen(m) == 2 && m[1] == 'd' && m[0] >= '1' && m[0] <= '5')
      in->shape = (uint16_t)(m[0] - '0');
    else if (strcmp(m, "shared::cluster") == 0 && !src)
      dst = true;
    else if (strcmp(m, "global") == 0 && dst)
      src = true;
    else if (strcmp(m, "mbarrier::complete_tx::bytes") == 0)
      mbar = true;
    else if (strcmp(m, "multicast::cluster") == 0)
      in->flags |= F_TMA_MULTICAST;
    else if (strcmp(m, "tile") && strcmp(m, "L2::cache_hint"))
      return ptx_fail(p, "unsupported bulk tensor copy '%s' (.%s: only tile-mode loads)", word, m);
  }
  if (!in->shape || !dst || !src || !mbar)
    return ptx_fail(p,
                    "unsupported bulk tensor copy '%s' (only tile-mode loads into shared "
                    "memory that complete on an mbarrier)",
                    word);
  in->space = SP_SHARED;
  return 0;
}

/* cp.async.bulk.tensor, and the bulk groups: the copies complete as they issue. */
static int cp_async(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  if (rest && strncmp(rest, "async.bulk.tensor.", 18) == 0)
    return bulk_tensor(p, in, rest + 18, word);
  if (rest && (strcmp(rest, "async.bulk.commit_group") == 0 ||
               strncmp(rest, "async.bulk.wait_group", 21) == 0))
    return in->op = OP_NOP, 0;
  return ptx_fail(p, "unsupported instruction '%s'", word);
}

int ptx_parse_async_opcode(ptx_parser *p, ptx_insn *in, const char *op, char *rest,
                           const char *word) {
  if (strcmp(op, "wgmma") == 0) return wgmma(p, in, rest, word);
  if (strcmp(op, "mbarrier") == 0) return mbarrier(p, in, rest, word);
  if (strcmp(op, "cp") == 0) return cp_async(p, in, rest, word);
  if (strcmp(op, "elect") == 0) {
    if (!rest || strcmp(rest, "sync")) return ptx_fail(p, "unsupported instruction '%s'", word);
    return in->op = OP_ELECT, 0;
  }
  /* Register-budget and prefetch hints: nothing to do. */
  if (strcmp(op, "setmaxnreg") == 0 || strcmp(op, "prefetch") == 0 || strcmp(op, "prefetchu") == 0)
    return in->op = OP_NOP, 0;
  return 1;
}
