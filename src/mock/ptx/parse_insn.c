/* The PTX parser's instructions: opcodes with their modifiers, and operands. */
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* barrier.cluster's two forms have no entry: cluster_barrier parses them. */
static const char *const op_names[OP_COUNT] = {
    [OP_ADD] = "add",   [OP_SUB] = "sub",     [OP_MUL] = "mul",     [OP_MAD] = "mad",
    [OP_FMA] = "fma",   [OP_DIV] = "div",     [OP_REM] = "rem",     [OP_MIN] = "min",
    [OP_MAX] = "max",   [OP_NEG] = "neg",     [OP_ABS] = "abs",     [OP_AND] = "and",
    [OP_OR] = "or",     [OP_XOR] = "xor",     [OP_NOT] = "not",     [OP_SHL] = "shl",
    [OP_SHR] = "shr",   [OP_MOV] = "mov",     [OP_CVT] = "cvt",     [OP_CVTA] = "cvta",
    [OP_SETP] = "setp", [OP_SELP] = "selp",   [OP_LD] = "ld",       [OP_ST] = "st",
    [OP_ATOM] = "atom", [OP_RED] = "red",     [OP_BAR] = "bar",     [OP_SHFL] = "shfl",
    [OP_VOTE] = "vote", [OP_REDUX] = "redux", [OP_EX2] = "ex2",     [OP_LG2] = "lg2",
    [OP_RCP] = "rcp",   [OP_SQRT] = "sqrt",   [OP_RSQRT] = "rsqrt", [OP_SIN] = "sin",
    [OP_COS] = "cos",   [OP_RET] = "ret",     [OP_EXIT] = "exit",   [OP_TRAP] = "trap",
    [OP_BRA] = "bra",   [OP_NOP] = "membar",  [OP_POPC] = "popc",   [OP_CLZ] = "clz",
    [OP_BREV] = "brev", [OP_CNOT] = "cnot",   [OP_TANH] = "tanh",   [OP_WARPSYNC] = "bar.warp",
    [OP_MAPA] = "mapa"};

static const char *const sub_names[] = {
    [CMP_EQ] = "eq",   [CMP_NE] = "ne",    [CMP_LT] = "lt",    [CMP_LE] = "le",
    [CMP_GT] = "gt",   [CMP_GE] = "ge",    [CMP_LO] = "lo",    [CMP_LS] = "ls",
    [CMP_HI] = "hi",   [CMP_HS] = "hs",    [CMP_EQU] = "equ",  [CMP_NEU] = "neu",
    [CMP_LTU] = "ltu", [CMP_LEU] = "leu",  [CMP_GTU] = "gtu",  [CMP_GEU] = "geu",
    [CMP_NUM] = "num", [CMP_NAN] = "nan",  [AT_ADD] = "add",   [AT_MIN] = "min",
    [AT_MAX] = "max",  [AT_EXCH] = "exch", [AT_CAS] = "cas",   [AT_INC] = "inc",
    [AT_DEC] = "dec",  [AT_AND] = "and",   [AT_OR] = "or",     [AT_XOR] = "xor",
    [SH_UP] = "up",    [SH_DOWN] = "down", [SH_BFLY] = "bfly", [SH_IDX] = "idx",
    [VT_ALL] = "all",  [VT_ANY] = "any",   [VT_UNI] = "uni",   [VT_BALLOT] = "ballot"};

static const char *const rnd_names[] = {
    [RND_RN] = "rn",   [RND_RZ] = "rz",   [RND_RM] = "rm",   [RND_RP] = "rp",
    [RND_RNI] = "rni", [RND_RZI] = "rzi", [RND_RMI] = "rmi", [RND_RPI] = "rpi"};

/* Modifiers that change nothing on a CPU: ordering, scope, caching, alignment promises. */
static const char *const ignored[] = {
    "",   "sync", "aligned", "volatile", "nc",   "relaxed", "acquire", "release", "acq_rel",
    "sc", "gpu",  "cta",     "sys",      "weak", "ftz",     "full",    "cg",      "ca",
    "cs", "lu",   "cv",      "wb",       "wt",   "noftz",   "uni"};

static int find_name(const char *const *names, int n, const char *s) {
  for (int i = 1; i < n; i++)
    if (names[i] && strcmp(names[i], s) == 0) return i;
  return 0;
}
#define FIND(table, s) find_name(table, (int)(sizeof table / sizeof table[0]), s)

static int sub_for(const ptx_insn *in, const char *m) {
  int s = FIND(sub_names, m);
  if (!s) return 0;
  bool cmp = s <= CMP_NAN, cmp_op = in->op == OP_SETP;
  bool atom = s >= AT_ADD && s <= AT_XOR;
  bool atom_op = in->op == OP_ATOM || in->op == OP_RED || in->op == OP_REDUX;
  bool sh = s >= SH_UP && s <= SH_IDX, vt = s >= VT_ALL;
  if ((cmp && cmp_op) || (atom && atom_op) || (sh && in->op == OP_SHFL) ||
      (vt && in->op == OP_VOTE))
    return s;
  return 0;
}

static bool flag_for(ptx_insn *in, const char *m) {
  static const struct {
    const char *name;
    uint8_t flag;
  } flags[] = {{"sat", F_SAT}, {"wide", F_WIDE}, {"hi", F_HI},
               {"lo", F_LO},   {"to", F_TO},     {"approx", F_APPROX}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (strcmp(flags[i].name, m) == 0) return in->flags |= flags[i].flag, true;
  return false;
}

static int modifier(ptx_parser *p, ptx_insn *in, const char *m) {
  char dotted[64];
  snprintf(dotted, sizeof dotted, ".%s", m);
  uint8_t t = ptx_type_of(dotted);
  int s = 0;
  if (t) {
    if (in->op == OP_CVT && in->type)
      in->type2 = t;
    else
      in->type = t;
  } else if ((s = sub_for(in, m)) != 0) {
    in->sub = (uint8_t)s;
  } else if (strcmp(m, "shared::cta") == 0 || strcmp(m, "shared::cluster") == 0) {
    in->space = SP_SHARED; /* a block's own shared addresses are also cluster addresses */
  } else if (ptx_space_of(dotted)) {
    in->space = ptx_space_of(dotted);
  } else if (strcmp(m, "v2") == 0 || strcmp(m, "v4") == 0) {
    in->vec = (uint8_t)(m[1] - '0');
  } else if ((s = FIND(rnd_names, m)) != 0) {
    in->rnd = (uint8_t)s;
  } else if (!flag_for(in, m) && !FIND(ignored, m) && !strstr(m, "::") &&
             strcmp(m, "generic") != 0) {
    return ptx_fail(p, "unsupported modifier '.%s'", m);
  }
  return 0;
}

/* barrier.cluster.arrive / .wait, with ordering (.release, .relaxed, .acquire) and .aligned. */
static int cluster_barrier(ptx_parser *p, ptx_insn *in, char *rest, const char *word) {
  for (int first = 1; rest && *rest; first = 0) {
    char *m = rest;
    rest = strchr(m, '.');
    if (rest) *rest++ = 0;
    if (first && strcmp(m, "arrive") == 0) in->op = OP_CARRIVE;
    if (first && strcmp(m, "wait") == 0) in->op = OP_CWAIT;
    if (!in->op || (!first && !FIND(ignored, m)))
      return ptx_fail(p, "unsupported barrier form '%s'", word);
  }
  return in->op ? 0 : ptx_fail(p, "unsupported barrier form '%s'", word);
}

/* "ld.global.v4.f32": the operation, then its modifiers. */
static int parse_opcode(ptx_parser *p, ptx_insn *in, const char *word) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", word);
  char *rest = strchr(buf, '.');
  if (rest) *rest++ = 0;
  if (strcmp(buf, "barrier") == 0 && rest && strncmp(rest, "cluster.", 8) == 0)
    return cluster_barrier(p, in, rest + 8, word);
  int hopper = ptx_parse_async_opcode(p, in, buf, rest, word);
  if (hopper != 1) return hopper;
  if (strcmp(buf, "barrier") == 0) snprintf(buf, sizeof buf, "bar");
  if (strcmp(buf, "fence") == 0 || strcmp(buf, "nanosleep") == 0)
    snprintf(buf, sizeof buf, "membar");
  in->op = (uint8_t)FIND(op_names, buf);
  if (in->op == OP_BAR && rest && strncmp(rest, "warp", 4) == 0) in->op = OP_WARPSYNC;
  if (!in->op) return ptx_fail(p, "unsupported instruction '%s'", word);
  if (in->op == OP_NOP || in->op == OP_WARPSYNC) return 0;
  while (rest && *rest) {
    char *m = rest;
    rest = strchr(m, '.');
    if (rest) *rest++ = 0;
    if (in->op == OP_BAR && (strcmp(m, "cta") == 0 || strcmp(m, "arrive") == 0))
      return ptx_fail(p, "unsupported barrier form '%s'", word);
    if (modifier(p, in, m)) return -1;
  }
  if (in->op == OP_CVT && in->type2 == 0) return ptx_fail(p, "cvt needs two types");
  return 0;
}

/* The innermost visible declaration wins: inline asm's { .reg .pred p; ... } scopes declare the
 * same names again and again. */
static int32_t find_reg(const nvhcq_ptx_kernel *k, const char *name) {
  for (size_t i = k->nreg_decls; i-- > 0;) {
    const ptx_reg_decl *r = &k->regs[i];
    if (r->hidden) continue;
    size_t n = strlen(r->prefix);
    if (strncmp(name, r->prefix, n) != 0) continue;
    if (r->count < 0) {
      if (name[n] == 0) return r->base;
      continue;
    }
    char *end;
    long idx = strtol(name + n, &end, 10);
    if (end != name + n && *end == 0 && idx >= 0 && idx < r->count) return r->base + (int32_t)idx;
  }
  return -1;
}

static const struct {
  const char *name;
  uint8_t sr;
} specials[] = {{"%tid", SR_TID},
                {"%ntid", SR_NTID},
                {"%ctaid", SR_CTAID},
                {"%nctaid", SR_NCTAID},
                {"%laneid", SR_LANEID},
                {"%warpid", SR_WARPID},
                {"%nwarpid", SR_NWARPID},
                {"%smid", SR_SMID},
                {"%clock", SR_CLOCK},
                {"%clock64", SR_CLOCK64},
                {"%globaltimer", SR_GLOBALTIMER},
                {"%lanemask_eq", SR_LANEMASK_EQ},
                {"%lanemask_lt", SR_LANEMASK_LT},
                {"%lanemask_le", SR_LANEMASK_LE},
                {"%lanemask_gt", SR_LANEMASK_GT},
                {"%lanemask_ge", SR_LANEMASK_GE},
                {"%dynamic_smem_size", SR_DYN_SMEM},
                {"%total_smem_size", SR_TOTAL_SMEM},
                {"%cluster_ctarank", SR_CLUSTER_CTARANK},
                {"%cluster_nctarank", SR_CLUSTER_NCTARANK},
                {"%clusterid", SR_CLUSTERID},
                {"%nclusterid", SR_NCLUSTERID},
                {"%cluster_ctaid", SR_CLUSTER_CTAID},
                {"%cluster_nctaid", SR_CLUSTER_NCTAID},
                {"%is_explicit_cluster", SR_IS_EXPLICIT_CLUSTER}};

static bool special_reg(const char *name, ptx_operand *o) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", name);
  char *dot = strchr(buf, '.');
  o->component = 0;
  if (dot) {
    if (dot[1] < 'x' || dot[1] > 'z' || dot[2]) return false;
    o->component = (uint8_t)(dot[1] - 'x');
    *dot = 0;
  }
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
    if (strcmp(specials[i].name, buf) == 0) {
      o->kind = OPD_SPECIAL;
      o->reg = specials[i].sr;
      return true;
    }
  return false;
}

static const ptx_symbol *find_symbol(const nvhcq_ptx_module *m, const nvhcq_ptx_kernel *k,
                                     const char *name) {
  for (size_t i = 0; i < k->nsyms; i++)
    if (strcmp(k->syms[i].name, name) == 0) return &k->syms[i];
  for (size_t i = 0; i < m->nvars; i++)
    if (strcmp(m->vars[i].sym.name, name) == 0) return &m->vars[i].sym;
  return NULL;
}

static int parse_imm(ptx_parser *p, const char *t, bool neg, ptx_operand *o) {
  o->kind = OPD_IMM;
  size_t n = strlen(t);
  if ((t[0] == '0' && (t[1] == 'f' || t[1] == 'F') && n == 10) ||
      (t[0] == '0' && (t[1] == 'd' || t[1] == 'D') && n == 18)) {
    o->imm_kind = t[1] == 'f' || t[1] == 'F' ? IMM_F32 : IMM_F64;
    o->imm = (int64_t)strtoull(t + 2, NULL, 16);
    if (neg) o->imm ^= o->imm_kind == IMM_F32 ? 0x80000000ll : INT64_MIN;
    return 0;
  }
  if (strchr(t, '.') || strchr(t, 'e')) {
    double d = strtod(t, NULL);
    if (neg) d = -d;
    o->imm_kind = IMM_F64;
    memcpy(&o->imm, &d, 8);
    return 0;
  }
  if (ptx_parse_int(p, t, &o->imm)) return -1;
  if (neg) o->imm = (int64_t)(0 - (uint64_t)o->imm);
  return 0;
}

static int name_operand(ptx_parser *p, nvhcq_ptx_kernel *k, const char *t, ptx_operand *o) {
  o->reg = find_reg(k, t); /* registers need no '%': inline asm declares "remote", "p" */
  if (o->reg >= 0) return o->kind = OPD_REG, 0;
  if (t[0] == '%') {
    if (special_reg(t, o)) return 0;
    return ptx_fail(p, "unknown register '%s'", t);
  }
  const ptx_symbol *s = find_symbol(p->module, k, t);
  if (s) {
    o->kind = OPD_SYM;
    o->sym_space = s->space;
    o->sym_address = s->address;
    if (s->space == SP_SHARED && s->address == UINT64_MAX) o->sym_space = SP_NONE; /* dynamic */
    return 0;
  }
  /* a label: resolved at the end of the body */
  ptx_fixup *f = realloc(p->fixups, (p->nfixups + 1) * sizeof *f);
  if (!f) return ptx_fail(p, "out of memory");
  p->fixups = f;
  snprintf(f[p->nfixups].name, sizeof f[0].name, "%s", t);
  f[p->nfixups].insn = k->ninsns;
  f[p->nfixups].depth = p->depth;
  f[p->nfixups++].line = p->line;
  o->kind = OPD_SYM;
  o->sym_space = 0xff; /* a label */
  return 0;
}

static int simple_operand(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o) {
  const char *t = ptx_next(p);
  bool neg = false;
  if (strcmp(t, "-") == 0) {
    neg = true;
    t = ptx_next(p);
  }
  if ((t[0] >= '0' && t[0] <= '9')) return parse_imm(p, t, neg, o);
  if (neg) return ptx_fail(p, "unsupported negated operand '%s'", t);
  if (strcmp(t, "_") == 0) return o->kind = OPD_REG, o->reg = -1, 0;
  return name_operand(p, k, t, o);
}

static int reg_list(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o);

static int mem_operand(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o) {
  ptx_operand base = {.reg = -1, .reg2 = -1};
  if (simple_operand(p, k, &base)) return -1;
  o->kind = OPD_MEM;
  if (base.kind == OPD_SYM && base.sym_space == 0xff) {
    p->nfixups--;
    return ptx_fail(p, "unknown symbol in an address");
  }
  o->reg = base.kind == OPD_REG ? base.reg : -1;
  if (base.kind == OPD_SYM) {
    o->sym_space = base.sym_space;
    o->sym_address = base.sym_address;
  } else if (base.kind == OPD_IMM) {
    o->imm = base.imm;
  } else if (base.kind != OPD_REG || base.reg < 0) {
    return ptx_fail(p, "unsupported address operand");
  }
  const char *t = ptx_next(p);
  if (strcmp(t, "+") == 0) {
    ptx_operand off = {0};
    if (simple_operand(p, k, &off) || off.kind != OPD_IMM) return ptx_fail(p, "bad address offset");
    o->imm += off.imm;
    t = ptx_next(p);
  }
  if (strcmp(t, ",") == 0) { /* a tensor map and its coordinates: [map, {x, y}] */
    if (ptx_expect(p, "{") || reg_list(p, k, o)) return -1;
    t = ptx_next(p);
  }
  if (strcmp(t, "]") != 0) return ptx_fail(p, "expected ']' in an address");
  return 0;
}

static int list_append(ptx_parser *p, nvhcq_ptx_kernel *k, int32_t reg) {
  int32_t *l = realloc(k->lists, (k->nlists + 1) * sizeof *l);
  if (!l) return ptx_fail(p, "out of memory");
  k->lists = l;
  l[k->nlists++] = reg;
  return 0;
}

/* "{%r1, %r2, ...}" after its "{": up to 255 registers ("_" for none), into the kernel's lists
 * (the first four also in o->vec). */
static int reg_list(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o) {
  o->list = (int32_t)k->nlists;
  for (;;) {
    ptx_operand r = {.reg = -1};
    if (simple_operand(p, k, &r)) return -1;
    if (r.kind != OPD_REG || o->nvec == 255) return ptx_fail(p, "bad vector operand");
    if (o->nvec < 4) o->vec[o->nvec] = r.reg;
    o->nvec++;
    if (list_append(p, k, r.reg)) return -1;
    const char *t = ptx_next(p);
    if (strcmp(t, "}") == 0) return 0;
    if (strcmp(t, ",") != 0) return ptx_fail(p, "expected ',' in a vector operand");
  }
}

static int vec_operand(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o) {
  o->kind = OPD_VEC;
  return reg_list(p, k, o);
}

static int parse_operand(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_operand *o) {
  o->reg = o->reg2 = -1;
  o->label = -1;
  const char *t = ptx_peek(p);
  if (strcmp(t, "[") == 0) return ptx_next(p), mem_operand(p, k, o);
  if (strcmp(t, "{") == 0) return ptx_next(p), vec_operand(p, k, o);
  if (strcmp(t, "!") == 0) return ptx_fail(p, "negated predicate operands are not supported");
  if (simple_operand(p, k, o)) return -1;
  if (strcmp(ptx_peek(p), "|") == 0) {
    ptx_next(p);
    ptx_operand q = {0};
    if (simple_operand(p, k, &q) || q.kind != OPD_REG) return ptx_fail(p, "bad 'a|b' operand");
    o->reg2 = q.reg;
  }
  return 0;
}

static int parse_operands(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_insn *in) {
  if (strcmp(ptx_peek(p), ";") == 0) return ptx_next(p), 0;
  for (;;) {
    if (in->nops == PTX_MAX_OPERANDS) return ptx_fail(p, "too many operands");
    size_t before = p->nfixups;
    if (parse_operand(p, k, &in->ops[in->nops])) return -1;
    if (p->nfixups > before) p->fixups[p->nfixups - 1].operand = in->nops;
    in->nops++;
    const char *t = ptx_next(p);
    if (strcmp(t, ";") == 0) return 0;
    if (strcmp(t, ",") != 0) return ptx_fail(p, "expected ',' or ';', found '%s'", t);
  }
}

static int parse_guard(ptx_parser *p, nvhcq_ptx_kernel *k, ptx_insn *in) {
  in->pred = -1;
  if (strcmp(ptx_peek(p), "@") != 0) return 0;
  ptx_next(p);
  if (strcmp(ptx_peek(p), "!") == 0) {
    ptx_next(p);
    in->pred_neg = true;
  }
  in->pred = find_reg(k, ptx_next(p));
  if (in->pred < 0) return ptx_fail(p, "unknown guard predicate '%s'", p->tok);
  return 0;
}

int ptx_parse_insn(ptx_parser *p, nvhcq_ptx_kernel *k) {
  ptx_insn in;
  memset(&in, 0, sizeof in);
  if (parse_guard(p, k, &in)) return -1;
  char word[128];
  snprintf(word, sizeof word, "%s", ptx_next(p));
  in.line = p->line;
  if (parse_opcode(p, &in, word)) return -1;
  if (parse_operands(p, k, &in)) return -1;
  ptx_insn *insns = realloc(k->insns, (k->ninsns + 1) * sizeof *insns);
  if (!insns) return ptx_fail(p, "out of memory");
  k->insns = insns;
  insns[k->ninsns++] = in;
  return 0;
}
