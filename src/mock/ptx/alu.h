/* The PTX interpreter's arithmetic helpers: typed values, rounding modes, operations. */
#ifndef NVHCQ_MOCK_PTX_ALU_H
#define NVHCQ_MOCK_PTX_ALU_H

#include "ptx_internal.h"

uint64_t ptx_mask(uint64_t v, unsigned size);
int64_t ptx_sext(uint64_t v, unsigned size);
double ptx_to_double(uint64_t v, uint8_t type);
uint64_t ptx_from_double(double d, uint8_t type);
/* Sets a directed rounding mode (.rz, .rm, .rp); returns the old one for ptx_round_pop, or -1. */
int ptx_round_push(uint8_t rnd);
void ptx_round_pop(int old);
uint64_t ptx_float_op(const ptx_insn *in, uint64_t a, uint64_t b, uint64_t c);
uint64_t ptx_int_op(const ptx_insn *in, uint64_t a, uint64_t b, uint64_t c);
bool ptx_compare(const ptx_insn *in, uint64_t a, uint64_t b);
/* cvt: the value a of type in->type2 as in->type; *ok false for an unsupported pair. */
uint64_t ptx_convert(const ptx_insn *in, uint64_t a, bool *ok);

#endif
