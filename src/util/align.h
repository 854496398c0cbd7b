/* Rounding up to a power-of-two alignment, written once for every layer. */
#ifndef NVHCQ_ALIGN_H
#define NVHCQ_ALIGN_H

/* `x` rounded up to a multiple of `a`, a power of two. The mask is ~(a - 1) in a's type: give an
 * alignment as wide as `x` (0x8000ull for a 64-bit `x`), or the upper bits are cleared. */
#define NVHCQ_ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((a)-1))

#endif
