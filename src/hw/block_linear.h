/* Where a texel of a block-linear image lies: the layout the H200's texture units read, shared by
 * the C library and the built-in copy kernels (CUDA C includes this header too).
 *
 * Measured on the H200 (driver 580.159.04): a 345 x 233 32-bit CUDA array that libcuda filled by
 * cuMemcpy2D with (y << 16 | x), read back word by word from the address in its texture header,
 * matched this formula at every texel (the TIC said 16 GOBs per block in height). A GOB is 64
 * bytes by 8 rows (512 bytes): 16-byte pieces of 4 rows stacked, then the next 16 bytes across,
 * then rows 4-7, then the right 32 bytes. Blocks are 1 GOB wide, 2^bh GOBs high and 2^bd GOBs
 * deep; they run along a row of blocks, then down, then across slices of blocks. */
#ifndef NVHCQ_HW_BLOCK_LINEAR_H
#define NVHCQ_HW_BLOCK_LINEAR_H

#ifdef __CUDACC__
#define NVHCQ_BL_FN __device__ __forceinline__
#else
#include <stdint.h>
#define NVHCQ_BL_FN static inline
#endif

#define NVHCQ_GOB_BYTES_X 64u
#define NVHCQ_GOB_ROWS    8u
#define NVHCQ_GOB_BYTES   512u

/* A block-linear image's shape: width in bytes rounded to GOBs, and its block size. */
typedef struct nvhcq_bl_shape {
  uint32_t gobs_x;   /* GOBs across a row of the image */
  uint32_t blocks_y; /* blocks down the image */
  uint32_t log2_bh;  /* GOBs per block in height, log2 */
  uint32_t log2_bd;  /* GOBs (slices) per block in depth, log2 */
} nvhcq_bl_shape;

/* Offset of byte xb of row y within its GOB. */
NVHCQ_BL_FN uint32_t nvhcq_bl_in_gob(uint32_t xb, uint32_t y) {
  return (xb & 32u) * 8u + (y & 4u) * 32u + (xb & 16u) * 4u + (y & 3u) * 16u + (xb & 15u);
}

/* Byte offset of byte xb of row y of slice z from the image's start. */
NVHCQ_BL_FN uint64_t nvhcq_bl_offset(const nvhcq_bl_shape *s, uint32_t xb, uint32_t y, uint32_t z) {
  uint32_t bh = s->log2_bh, bd = s->log2_bd;
  uint64_t gob_y = y / NVHCQ_GOB_ROWS, block_y = gob_y >> bh, block_z = z >> bd;
  uint64_t block = (block_z * s->blocks_y + block_y) * s->gobs_x + xb / NVHCQ_GOB_BYTES_X;
  uint64_t in_block = ((uint64_t)(z & ((1u << bd) - 1u)) << bh) + (gob_y & ((1u << bh) - 1u));
  return ((block << (bh + bd)) + in_block) * NVHCQ_GOB_BYTES +
         nvhcq_bl_in_gob(xb % NVHCQ_GOB_BYTES_X, y % NVHCQ_GOB_ROWS);
}

/* The built-in kernel nvhcq_image_copy's argument: a box of `units_x` units of `unit` bytes (1,
 * 2, 4, 8 or 16) by `height` rows by `depth` slices, between the image at `image` (from byte
 * x_bytes of row y of slice z) and linear memory at `linear` (rows `pitch` apart, slices
 * `slice` apart); to_image says which way. */
typedef struct nvhcq_bl_copy_args {
  uint64_t image, linear, pitch, slice;
  nvhcq_bl_shape shape;
  uint32_t x_bytes, y, z;
  uint32_t units_x, height, depth, unit, to_image;
} nvhcq_bl_copy_args;

#endif
