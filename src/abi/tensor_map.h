/* The TMA tensor map's fields: where each lives in the 128-byte descriptor, and the hardware's
 * element types (established on an H200, see src/hw/tensor_map.c). Data only: the encoder
 * (src/hw/tensor_map.c) writes these fields and the mock GPU's TMA (src/mock/ptx/tma.c) reads
 * them. Dword numbers count 32-bit words, little-endian. */
#ifndef NVHCQ_ABI_TENSOR_MAP_H
#define NVHCQ_ABI_TENSOR_MAP_H

#include <stdint.h>

#define TMA_DW_ADDRESS_LO    0 /* global address, bits 31:0 */
#define TMA_DW_ADDRESS_HI    1 /* and 63:32 */
#define TMA_DW_FORMAT        2 /* the fields below */
#define TMA_IM2COL_BIT       0
#define TMA_RANK_SHIFT       4 /* 6:4 rank - 1 */
#define TMA_TYPE_SHIFT       7 /* 10:7 the hardware element type (TMA_HW_*) */
#define TMA_TYPE_MASK        0xfu
#define TMA_INTERLEAVE_SHIFT 11 /* 12:11 NVHCQ_TENSOR_INTERLEAVE_* */
#define TMA_SWIZZLE_SHIFT    13 /* 14:13 NVHCQ_TENSOR_SWIZZLE_* (0 none, 1 32B, 2 64B, 3 128B) */
#define TMA_NAN_FILL_BIT     15 /* out-of-bounds elements read as NaN instead of zero */
#define TMA_TF32_BIT         16 /* FP32 rounded to TF32 */
#define TMA_L2_SHIFT         17 /* 18:17 NVHCQ_TENSOR_L2_* */
#define TMA_DW_STRIDES       3  /* 3-6: strides of dims 1..4 >> 4, their bits 35:4 */
#define TMA_DW_STRIDES_HI    7  /* strides' bits 39:36, four bits per dim from bit 0 */
#define TMA_DW_DIMS          8  /* 8-12: dims - 1 */
#define TMA_DW_ELEM_STRIDES  13 /* element strides - 1, three bits each from bit 0 */
#define TMA_BOX0_SHIFT       24 /* in dword 13: 31:24 box[0] - 1 */
#define TMA_DW_BOX           14 /* box[1..4] - 1, a byte each (im2col: the window's corners) */
#define TMA_DW_PIXELS        15 /* im2col: pixels per column - 1 */
#define TMA_DW_BOX_BYTES     16 /* the bytes a box holds */
#define TMA_DW_SMEM_ALIGN    18 /* shared-memory alignment the swizzle needs */
#define TMA_MAX_RANK         5

/* Hardware element types and their sizes in bytes. */
enum {
  TMA_HW_U8 = 0,
  TMA_HW_U16 = 1,
  TMA_HW_U32 = 2,
  TMA_HW_S32 = 3,
  TMA_HW_U64 = 4,
  TMA_HW_S64 = 5,
  TMA_HW_F16 = 6,
  TMA_HW_F32 = 7,
  TMA_HW_F32_FTZ = 8,
  TMA_HW_F64 = 9,
  TMA_HW_BF16 = 10,
  TMA_HW_TYPES
};
static inline uint32_t tma_hw_type_bytes(uint32_t type) {
  static const uint8_t bytes[TMA_HW_TYPES] = {1, 2, 4, 4, 8, 8, 2, 4, 4, 8, 2};
  return type < TMA_HW_TYPES ? bytes[type] : 0;
}

/* The span of a swizzle mode (NVHCQ_TENSOR_SWIZZLE_*) in bytes: its rows; 0 without one. */
static inline uint32_t tma_swizzle_bytes(uint32_t swizzle) {
  return swizzle & 3 ? 16u << (swizzle & 3) : 0;
}

#endif
