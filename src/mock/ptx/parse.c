/* The PTX interpreter's parser: module directives, variables, kernel entries and their bodies. */
#include "parse.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ptx_fail(ptx_parser *p, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = true;
  int n = snprintf(p->err, sizeof p->err, "line %d: ", p->line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + n, sizeof p->err - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static void skip_space(ptx_parser *p) {
  while (p->pos < p->len) {
    char c = p->text[p->pos];
    if (c == '\n') p->line++;
    if (isspace((unsigned char)c)) {
      p->pos++;
    } else if (c == '/' && p->pos + 1 < p->len && p->text[p->pos + 1] == '/') {
      while (p->pos < p->len && p->text[p->pos] != '\n') p->pos++;
    } else if (c == '/' && p->pos + 1 < p->len && p->text[p->pos + 1] == '*') {
      p->pos += 2;
      while (p->pos + 1 < p->len && !(p->text[p->pos] == '*' && p->text[p->pos + 1] == '/')) {
        if (p->text[p->pos] == '\n') p->line++;
        p->pos++;
      }
      p->pos += 2;
    } else {
      break;
    }
  }
}

static bool word_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$' || c == '%' || c == ':';
}

/* The next token: a word ([A-Za-z0-9_.$%:]+) or one punctuation character. */
const char *ptx_next(ptx_parser *p) {
  skip_space(p);
  p->tok[0] = 0;
  if (p->pos >= p->len) return p->tok;
  size_t n = 0;
  if (word_char(p->text[p->pos])) {
    while (p->pos < p->len && word_char(p->text[p->pos]) && n + 1 < sizeof p->tok)
      p->tok[n++] = p->text[p->pos++];
    /* "name:" is a label; "a::b" stays one word */
    if (n > 1 && p->tok[n - 1] == ':' && p->tok[n - 2] != ':') {
      n--;
      p->pos--;
    }
  } else {
    p->tok[n++] = p->text[p->pos++];
  }
  p->tok[n] = 0;
  return p->tok;
}

const char *ptx_peek(ptx_parser *p) {
  size_t pos = p->pos;
  int line = p->line;
  ptx_next(p);
  p->pos = pos;
  p->line = line;
  return p->tok;
}

int ptx_expect(ptx_parser *p, const char *tok) {
  if (strcmp(ptx_next(p), tok) != 0) return ptx_fail(p, "expected '%s', found '%s'", tok, p->tok);
  return 0;
}

static void skip_line(ptx_parser *p) {
  while (p->pos < p->len && p->text[p->pos] != '\n') p->pos++;
}

static void skip_statement(ptx_parser *p) {
  while (!p->failed && p->pos < p->len && strcmp(ptx_next(p), ";") != 0) {
  }
}

static const struct {
  const char *name;
  uint8_t type;
} type_names[] = {
    {".b8", PTX_TYPE(TK_B, 1)},  {".b16", PTX_TYPE(TK_B, 2)}, {".b32", PTX_TYPE(TK_B, 4)},
    {".b64", PTX_TYPE(TK_B, 8)}, {".u8", PTX_TYPE(TK_U, 1)},  {".u16", PTX_TYPE(TK_U, 2)},
    {".u32", PTX_TYPE(TK_U, 4)}, {".u64", PTX_TYPE(TK_U, 8)}, {".s8", PTX_TYPE(TK_S, 1)},
    {".s16", PTX_TYPE(TK_S, 2)}, {".s32", PTX_TYPE(TK_S, 4)}, {".s64", PTX_TYPE(TK_S, 8)},
    {".f16", PTX_TYPE(TK_F, 2)}, {".f32", PTX_TYPE(TK_F, 4)}, {".f64", PTX_TYPE(TK_F, 8)},
    {".pred", PTX_TYPE(TK_P, 1)}};

uint8_t ptx_type_of(const char *name) {
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
    if (strcmp(type_names[i].name, name) == 0) return type_names[i].type;
  return 0;
}

uint8_t ptx_space_of(const char *name) {
  static const char *const spaces[] = {"", ".global", ".shared", ".local", ".param", ".const"};
  for (uint8_t i = 1; i < 6; i++)
    if (strcmp(spaces[i], name) == 0) return i;
  return SP_NONE;
}

int ptx_parse_int(ptx_parser *p, const char *s, int64_t *out) {
  char *end;
  bool neg = s[0] == '-';
  uint64_t v = strtoull(neg ? s + 1 : s, &end, 0);
  if (*end == 'U') end++;
  if (end == s || *end) return ptx_fail(p, "bad integer '%s'", s);
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

/* A declaration's tail: .align N, a type, a name, [N] dimensions. */
typedef struct decl {
  uint8_t space, type;
  size_t align, count;
  bool array, unsized;
  char name[128];
} decl;

static int parse_decl(ptx_parser *p, decl *d) {
  memset(d, 0, sizeof *d);
  d->count = 1;
  for (;;) {
    const char *t = ptx_next(p);
    if (strcmp(t, ".ptr") == 0) {
      /* A pointer parameter's pointee (.ptr [.space] [.align N]): a hint, nothing to lay out. */
      if (ptx_space_of(ptx_peek(p))) ptx_next(p);
      int64_t a = 0;
      if (strcmp(ptx_peek(p), ".align") == 0 &&
          (ptx_next(p), ptx_parse_int(p, ptx_next(p), &a) || a <= 0))
        return ptx_fail(p, "bad .ptr .align");
    } else if (strcmp(t, ".align") == 0) {
      int64_t a = 0;
      if (ptx_parse_int(p, ptx_next(p), &a) || a <= 0) return ptx_fail(p, "bad .align");
      d->align = (size_t)a;
    } else if (ptx_type_of(t)) {
      d->type = ptx_type_of(t);
    } else if (t[0] == '.' && strcmp(t, ".v2") && strcmp(t, ".v4")) {
      uint8_t s = ptx_space_of(t);
      if (!s && strcmp(t, ".extern") && strcmp(t, ".visible") && strcmp(t, ".weak"))
        return ptx_fail(p, "unsupported declaration qualifier '%s'", t);
      if (s) d->space = s;
    } else {
      break;
    }
  }
  if (!d->type || !p->tok[0] || p->tok[0] == ';')
    return ptx_fail(p, "bad declaration near '%s'", p->tok);
  snprintf(d->name, sizeof d->name, "%s", p->tok);
  while (strcmp(ptx_peek(p), "[") == 0) {
    ptx_next(p);
    d->array = true;
    if (strcmp(ptx_peek(p), "]") == 0) {
      d->unsized = true;
    } else {
      int64_t n = 0;
      if (ptx_parse_int(p, ptx_next(p), &n) || n < 0) return ptx_fail(p, "bad array size");
      d->count *= (size_t)n;
    }
    if (ptx_expect(p, "]")) return -1;
  }
  if (!d->align) d->align = TYPE_SIZE(d->type);
  return 0;
}

static size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

static int parse_init_value(ptx_parser *p, const decl *d, unsigned char *dst) {
  const char *t = ptx_next(p);
  int64_t v = 0;
  if (t[0] == '-' && ptx_parse_int(p, ptx_next(p), &v) == 0) {
    v = -v;
  } else if (ptx_parse_int(p, t, &v)) {
    return -1;
  }
  memcpy(dst, &v, TYPE_SIZE(d->type)); /* little-endian host */
  return 0;
}

static int parse_initializer(ptx_parser *p, const decl *d, unsigned char *data) {
  size_t es = TYPE_SIZE(d->type);
  if (strcmp(ptx_peek(p), "{") != 0) return parse_init_value(p, d, data);
  ptx_next(p);
  for (size_t i = 0;; i++) {
    if (i >= d->count) return ptx_fail(p, "too many initializers for %s", d->name);
    if (parse_init_value(p, d, data + i * es)) return -1;
    const char *t = ptx_next(p);
    if (strcmp(t, "}") == 0) return 0;
    if (strcmp(t, ",") != 0) return ptx_fail(p, "expected ',' in initializer");
  }
}

static int add_module_var(ptx_parser *p, const decl *d) {
  nvhcq_ptx_module *m = p->module;
  ptx_var *vars = realloc(m->vars, (m->nvars + 1) * sizeof *vars);
  if (!vars) return ptx_fail(p, "out of memory");
  m->vars = vars;
  ptx_var *v = &vars[m->nvars++];
  memset(v, 0, sizeof *v);
  snprintf(v->sym.name, sizeof v->sym.name, "%s", d->name);
  v->sym.space = d->space;
  v->sym.size = TYPE_SIZE(d->type) * d->count;
  if (d->space == SP_SHARED) {
    if (d->unsized) { /* extern: the dynamic area, at the end of the static ones */
      v->sym.address = UINT64_MAX;
      if (d->align > p->module->shared_align) p->module->shared_align = d->align;
      return 0;
    }
    if (d->align > m->shared_align) m->shared_align = d->align;
    m->shared_static = align_up(m->shared_static, d->align);
    v->sym.address = m->shared_static;
    m->shared_static += v->sym.size;
    return 0;
  }
  v->data = aligned_alloc(16, align_up(v->sym.size ? v->sym.size : 1, 16));
  if (!v->data) return ptx_fail(p, "out of memory");
  memset(v->data, 0, v->sym.size);
  v->sym.address = (uint64_t)(uintptr_t)v->data;
  return 0;
}

static int parse_module_var(ptx_parser *p) {
  decl d;
  if (parse_decl(p, &d)) return -1;
  if (d.space != SP_GLOBAL && d.space != SP_CONST && d.space != SP_SHARED)
    return ptx_fail(p, "unsupported module variable space for %s", d.name);
  if (add_module_var(p, &d)) return -1;
  const char *t = ptx_next(p);
  if (strcmp(t, "=") == 0) {
    if (d.space == SP_SHARED) return ptx_fail(p, "initialized .shared variable");
    if (parse_initializer(p, &d, p->module->vars[p->module->nvars - 1].data)) return -1;
    t = ptx_next(p);
  }
  if (strcmp(t, ";") != 0) return ptx_fail(p, "expected ';' after %s", d.name);
  return 0;
}

static int add_kernel_sym(ptx_parser *p, nvhcq_ptx_kernel *k, const char *name, uint8_t space,
                          uint64_t address, size_t size) {
  ptx_symbol *syms = realloc(k->syms, (k->nsyms + 1) * sizeof *syms);
  if (!syms) return ptx_fail(p, "out of memory");
  k->syms = syms;
  ptx_symbol *s = &syms[k->nsyms++];
  snprintf(s->name, sizeof s->name, "%s", name);
  s->space = space;
  s->address = address;
  s->size = size;
  return 0;
}

static int parse_param(ptx_parser *p, nvhcq_ptx_kernel *k) {
  decl d;
  if (parse_decl(p, &d)) return -1;
  if (d.space != SP_PARAM) return ptx_fail(p, "expected .param in %s's parameters", k->name);
  nvhcq_ptx_param *ps = realloc(k->params, (k->nparams + 1) * sizeof *ps);
  if (!ps) return ptx_fail(p, "out of memory");
  k->params = ps;
  char(*names)[128] = realloc(k->param_names, (k->nparams + 1) * sizeof *names);
  if (!names) return ptx_fail(p, "out of memory");
  k->param_names = names;
  nvhcq_ptx_param *prm = &ps[k->nparams];
  prm->align = d.align;
  prm->size = TYPE_SIZE(d.type) * d.count;
  prm->offset = align_up(k->params_size, d.align);
  k->params_size = prm->offset + prm->size;
  snprintf(names[k->nparams++], 128, "%s", d.name);
  return add_kernel_sym(p, k, d.name, SP_PARAM, prm->offset, prm->size);
}

static int parse_params(ptx_parser *p, nvhcq_ptx_kernel *k) {
  if (strcmp(ptx_peek(p), "(") != 0) return 0;
  ptx_next(p);
  if (strcmp(ptx_peek(p), ")") == 0) return ptx_next(p), 0;
  for (;;) {
    if (parse_param(p, k)) return -1;
    const char *t = ptx_next(p);
    if (strcmp(t, ")") == 0) return 0;
    if (strcmp(t, ",") != 0) return ptx_fail(p, "expected ',' or ')' in parameters, found '%s'", t);
  }
}

/* .reg .b32 %r<45>; or .reg .pred %p; (one or more names). */
static int parse_reg_decl(ptx_parser *p, nvhcq_ptx_kernel *k) {
  const char *t = ptx_next(p);
  if (strcmp(t, ".v2") == 0 || strcmp(t, ".v4") == 0)
    return ptx_fail(p, "vector registers are not supported");
  uint8_t type = ptx_type_of(t);
  if (!type) return ptx_fail(p, "bad register type '%s'", t);
  for (;;) {
    ptx_reg_decl *rd = realloc(k->regs, (k->nreg_decls + 1) * sizeof *rd);
    if (!rd) return ptx_fail(p, "out of memory");
    k->regs = rd;
    ptx_reg_decl *r = &rd[k->nreg_decls++];
    snprintf(r->prefix, sizeof r->prefix, "%s", ptx_next(p));
    r->type = type;
    r->hidden = false;
    r->depth = p->depth;
    r->count = -1;
    r->base = k->nregs;
    t = ptx_next(p);
    if (strcmp(t, "<") == 0) {
      int64_t n = 0;
      if (ptx_parse_int(p, ptx_next(p), &n) || n <= 0 || n > 1 << 20 || ptx_expect(p, ">"))
        return ptx_fail(p, "bad register count");
      r->count = (int32_t)n;
      t = ptx_next(p);
    }
    k->nregs += r->count < 0 ? 1 : r->count;
    if (strcmp(t, ";") == 0) return 0;
    if (strcmp(t, ",") != 0) return ptx_fail(p, "expected ';' in .reg");
  }
}

static int parse_kernel_var(ptx_parser *p, nvhcq_ptx_kernel *k) {
  decl d;
  if (parse_decl(p, &d) || ptx_expect(p, ";")) return -1;
  size_t size = TYPE_SIZE(d.type) * d.count;
  if (d.space == SP_SHARED) {
    if (d.align > k->shared_align) k->shared_align = d.align;
    k->shared_static = align_up(k->shared_static, d.align);
    if (add_kernel_sym(p, k, d.name, SP_SHARED, k->shared_static, size)) return -1;
    k->shared_static += size;
    return 0;
  }
  if (d.space == SP_LOCAL) {
    k->local_size = align_up(k->local_size, d.align > 16 ? d.align : 16);
    if (add_kernel_sym(p, k, d.name, SP_LOCAL, k->local_size, size)) return -1;
    k->local_size += size;
    return 0;
  }
  return ptx_fail(p, "unsupported variable in a kernel body: %s", d.name);
}

static int add_label(ptx_parser *p, nvhcq_ptx_kernel *k, const char *name) {
  ptx_label *l = realloc(p->labels, (p->nlabels + 1) * sizeof *l);
  if (!l) return ptx_fail(p, "out of memory");
  p->labels = l;
  snprintf(l[p->nlabels].name, sizeof l[0].name, "%s", name);
  l[p->nlabels].depth = p->depth;
  l[p->nlabels++].index = (int32_t)k->ninsns;
  return 0;
}

/* The label of that name declared in the scope at depth (the innermost open one of that depth),
 * or NULL. */
static const ptx_label *scope_label(const ptx_parser *p, const char *name, int depth) {
  for (size_t j = 0; j < p->nlabels; j++)
    if (p->labels[j].depth == depth && strcmp(p->labels[j].name, name) == 0) return &p->labels[j];
  return NULL;
}

/* A nested scope closes: branches inside it to its labels resolve, the others look in the
 * enclosing scope; its labels and registers go out of sight (PTX scopes them as C does). */
static void close_scope(ptx_parser *p, nvhcq_ptx_kernel *k) {
  size_t kept = 0;
  for (size_t i = 0; i < p->nfixups; i++) {
    ptx_fixup *f = &p->fixups[i];
    const ptx_label *l = f->depth == p->depth ? scope_label(p, f->name, p->depth) : NULL;
    if (l) {
      k->insns[f->insn].ops[f->operand].label = l->index;
      continue;
    }
    if (f->depth == p->depth) f->depth--;
    p->fixups[kept++] = *f;
  }
  p->nfixups = kept;
  kept = 0;
  for (size_t j = 0; j < p->nlabels; j++)
    if (p->labels[j].depth != p->depth) p->labels[kept++] = p->labels[j];
  p->nlabels = kept;
  for (size_t i = 0; i < k->nreg_decls; i++)
    if (k->regs[i].depth == p->depth) k->regs[i].hidden = true, k->regs[i].depth = -1;
  p->depth--;
}

static int body_statement(ptx_parser *p, nvhcq_ptx_kernel *k) {
  const char *t = ptx_peek(p);
  if (strcmp(t, ".reg") == 0) return ptx_next(p), parse_reg_decl(p, k);
  if (strcmp(t, ".shared") == 0 || strcmp(t, ".local") == 0) return parse_kernel_var(p, k);
  if (strcmp(t, ".pragma") == 0 || strcmp(t, ".loc") == 0) return skip_statement(p), 0;
  if (t[0] == '.') return ptx_fail(p, "unsupported directive in a kernel body: %s", t);
  if (t[0] == '$' || isalpha((unsigned char)t[0]) || t[0] == '_') {
    size_t pos = p->pos;
    int line = p->line;
    char name[128];
    snprintf(name, sizeof name, "%s", ptx_next(p));
    if (strcmp(ptx_peek(p), ":") == 0) return ptx_next(p), add_label(p, k, name);
    p->pos = pos;
    p->line = line;
  }
  if (ptx_parse_insn(p, k) == 0) return 0;
  /* An instruction it cannot run makes its kernel unlaunchable, not the module unloadable. */
  if (!k->unsupported[0]) snprintf(k->unsupported, sizeof k->unsupported, "%s", p->err);
  p->failed = false;
  if (strcmp(p->tok, ";") != 0) skip_statement(p);
  return 0;
}

static int resolve_labels(ptx_parser *p, nvhcq_ptx_kernel *k) {
  for (size_t i = 0; i < p->nfixups; i++) {
    ptx_fixup *f = &p->fixups[i];
    size_t j = 0;
    while (j < p->nlabels && strcmp(p->labels[j].name, f->name) != 0) j++;
    if (j == p->nlabels && k->unsupported[0]) continue; /* its label may have been skipped */
    if (j == p->nlabels) {
      p->line = f->line;
      return ptx_fail(p, "unknown label '%s'", f->name);
    }
    k->insns[f->insn].ops[f->operand].label = p->labels[j].index;
  }
  p->nfixups = p->nlabels = 0;
  return 0;
}

static int parse_body(ptx_parser *p, nvhcq_ptx_kernel *k) {
  if (ptx_expect(p, "{")) return -1;
  p->depth = 0; /* nested scopes: registers get their own storage, names their scope */
  while (!p->failed) {
    const char *t = ptx_peek(p);
    if (!t[0]) return ptx_fail(p, "unterminated kernel body");
    if (strcmp(t, "}") == 0 && p->depth == 0) return ptx_next(p), resolve_labels(p, k);
    if (strcmp(t, "{") == 0 || strcmp(t, "}") == 0) {
      if (t[0] == '{')
        p->depth++;
      else
        close_scope(p, k);
      ptx_next(p);
      continue;
    }
    if (body_statement(p, k)) return -1;
  }
  return -1;
}

/* Performance directives between the parameters and the body. */
static void skip_perf_directives(ptx_parser *p) {
  for (;;) {
    const char *t = ptx_peek(p);
    if (t[0] != '.') return;
    ptx_next(p);
    while (!p->failed) {
      t = ptx_peek(p);
      if (!(isdigit((unsigned char)t[0]) || t[0] == ',')) break;
      ptx_next(p);
    }
  }
}

static int parse_entry(ptx_parser *p) {
  nvhcq_ptx_module *m = p->module;
  nvhcq_ptx_kernel *ks = realloc(m->kernels, (m->nkernels + 1) * sizeof *ks);
  if (!ks) return ptx_fail(p, "out of memory");
  m->kernels = ks;
  nvhcq_ptx_kernel *k = &ks[m->nkernels++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", ptx_next(p));
  k->shared_align = 1;
  if (parse_params(p, k)) return -1;
  skip_perf_directives(p);
  return parse_body(p, k);
}

static int top_statement(ptx_parser *p) {
  const char *t = ptx_peek(p);
  if (strcmp(t, ".version") == 0 || strcmp(t, ".target") == 0 || strcmp(t, ".address_size") == 0 ||
      strcmp(t, ".file") == 0)
    return ptx_next(p), skip_line(p), 0;
  if (strcmp(t, ".visible") == 0 || strcmp(t, ".weak") == 0) {
    ptx_next(p);
    t = ptx_peek(p);
  }
  if (strcmp(t, ".entry") == 0) return ptx_next(p), parse_entry(p);
  if (strcmp(t, ".func") == 0) return ptx_fail(p, ".func (device function calls) is not supported");
  if (strcmp(t, ".extern") == 0 || strcmp(t, ".global") == 0 || strcmp(t, ".const") == 0 ||
      strcmp(t, ".shared") == 0)
    return parse_module_var(p);
  return ptx_fail(p, "unsupported top-level statement '%s'", t);
}

/* Kernels' shared layouts: the module's static variables, then the kernel's, then dynamic. */
static void finish_module(nvhcq_ptx_module *m) {
  for (size_t i = 0; i < m->nkernels; i++) {
    nvhcq_ptx_kernel *k = &m->kernels[i];
    size_t align = k->shared_align > m->shared_align ? k->shared_align : m->shared_align;
    for (size_t j = 0; j < k->nsyms; j++)
      if (k->syms[j].space == SP_SHARED)
        k->syms[j].address += align_up(m->shared_static, k->shared_align);
    k->shared_static += align_up(m->shared_static, k->shared_align);
    k->shared_align = align < 16 ? 16 : align;
    k->module = m;
  }
}

nvhcq_ptx_status nvhcq_ptx_module_load(const char *ptx_text, size_t len, nvhcq_ptx_module **out,
                                       char *error, size_t error_size) {
  if (!out) return NVHCQ_PTX_INVALID;
  *out = NULL;
  ptx_parser p = {.text = ptx_text, .len = ptx_text ? len : 0, .line = 1};
  p.module = calloc(1, sizeof *p.module);
  if (!p.module) return NVHCQ_PTX_NO_MEMORY;
  p.module->shared_align = 1;
  while (!p.failed && ptx_peek(&p)[0]) top_statement(&p);
  free(p.labels);
  free(p.fixups);
  if (p.failed) {
    if (error && error_size) snprintf(error, error_size, "%s", p.err);
    nvhcq_ptx_module_free(p.module);
    return NVHCQ_PTX_PARSE_ERROR;
  }
  finish_module(p.module);
  *out = p.module;
  return NVHCQ_PTX_OK;
}

void nvhcq_ptx_module_free(nvhcq_ptx_module *m) {
  if (!m) return;
  for (size_t i = 0; i < m->nkernels; i++) {
    free(m->kernels[i].params);
    free(m->kernels[i].param_names);
    free(m->kernels[i].insns);
    free(m->kernels[i].regs);
    free(m->kernels[i].lists);
    free(m->kernels[i].syms);
  }
  for (size_t i = 0; i < m->nvars; i++) free(m->vars[i].data);
  free(m->kernels);
  free(m->vars);
  free(m);
}
