/* The PTX parser's state and the helpers its files share. */
#ifndef NVHCQ_MOCK_PTX_PARSE_H
#define NVHCQ_MOCK_PTX_PARSE_H

#include "ptx_internal.h"

typedef struct ptx_label {
  char name[128];
  int32_t index;
  int depth; /* the { } scope it was declared in (0: the body) */
} ptx_label;

/* A branch operand waiting for its label's instruction index. */
typedef struct ptx_fixup {
  char name[128];
  size_t insn;
  int operand, line;
  int depth; /* the innermost open scope it may still find its label in */
} ptx_fixup;

struct ptx_parser {
  const char *text;
  size_t len, pos;
  int line;
  char tok[256];
  bool failed;
  char err[256];
  nvhcq_ptx_module *module;
  ptx_label *labels;
  size_t nlabels;
  ptx_fixup *fixups;
  size_t nfixups;
  int depth; /* { } nesting inside the kernel body */
};

int ptx_fail(ptx_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ptx_next(ptx_parser *p);
const char *ptx_peek(ptx_parser *p);
int ptx_expect(ptx_parser *p, const char *tok);
uint8_t ptx_type_of(const char *name);
uint8_t ptx_space_of(const char *name);
int ptx_parse_int(ptx_parser *p, const char *s, int64_t *out);
/* parse_async.c: the opcode word of a Hopper instruction (op is its first part, rest the
 * modifiers after it, cut in place): 0, -1 with the error set, or 1 when op is none of them. */
int ptx_parse_async_opcode(ptx_parser *p, ptx_insn *in, const char *op, char *rest,
                           const char *word);
/* One instruction, appended to k->insns. */
int ptx_parse_insn(ptx_parser *p, nvhcq_ptx_kernel *k);

#endif
