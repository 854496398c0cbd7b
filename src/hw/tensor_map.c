/* TMA tensor maps: the 128-byte descriptor cp.async.bulk.tensor reads, encoded as libcuda does.
 *
 * NVIDIA does not publish this layout. Everything below was established on the lent H200 (driver
 * 580.159.04) by differential testing: bench/tma_probe.c recorded cuTensorMapEncodeTiled's and
 * cuTensorMapEncodeIm2col's output (or refusal) for 40 000 and 12 000 random parameter sets, and
 * every field and rule here reproduces all of them (tests/unit/test_tensor_map.c checks the
 * recorded table). Dwords of the map (little-endian):
 *   0-1   global address
 *   2     bit 0 im2col; 6:4 rank-1; 10:7 element type (below); 12:11 interleave; 14:13 swizzle;
 *         15 NaN fill; 16 TF32 rounding; 18:17 L2 promotion
 *   3-6   strides of dims 1..4 >> 4 (low 32 bits); 7: their bits 39:36, four bits each
 *   8-12  dims - 1
 *   13    element strides - 1, three bits each from bit 0; 31:24 box[0] - 1 (im2col: channels - 1)
 *   14    box[1..4] - 1, a byte each (im2col: the window's lower corners in bits 15:0 and upper in
 *         31:16, each corner 16, 8 or 5 bits wide for 1, 2 or 3 spatial dimensions)
 *   15    im2col: pixels per column - 1
 *   16    bytes the box holds: element size x product of box[i] / element_strides[i] (rounded
 *         down), for im2col channels x pixels x element size
 *   18    shared-memory alignment the swizzle needs: 16, 256, 512 or 1024 bytes
 * and all other dwords zero. */
#include <stdio.h>
#include <string.h>

#include "abi/tensor_map.h"
#include "nvhcq.h"
#include "util/error.h"

/* The largest shared-memory configuration of sm_90: no box may hold more. */
#define TMA_MAX_BOX_BYTES (228u << 10)

static const uint8_t element_bytes[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
/* The hardware's type numbers (abi/tensor_map.h); TF32 types are FP32 ones with the rounding bit
 * set. */
static const uint8_t hw_type[13] = {
    TMA_HW_U8,  TMA_HW_U16, TMA_HW_U32,  TMA_HW_S32,     TMA_HW_U64, TMA_HW_S64,    TMA_HW_F16,
    TMA_HW_F32, TMA_HW_F64, TMA_HW_BF16, TMA_HW_F32_FTZ, TMA_HW_F32, TMA_HW_F32_FTZ};
static const char *const type_names[13] = {
    "UINT8",   "UINT16",  "UINT32",   "INT32",       "UINT64",   "INT64",       "FLOAT16",
    "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"};

/* What the tiled and im2col forms share. */
typedef struct tma_common {
  const char *what; /* the calling function, for messages */
  uint32_t dtype, rank, interleave, swizzle, l2, oob;
  uint64_t address;
  const uint64_t *dims, *strides;
  const uint32_t *element_strides;
} tma_common;

/* The shared part of either descriptor (their fields have the same names). */
#define TMA_COMMON(what, d)                                                                        \
  {                                                                                                \
    (what), (d)->dtype, (d)->rank, (d)->interleave, (d)->swizzle, (d)->l2_promotion,               \
        (d)->oob_fill, (d)->address, (d)->dims, (d)->strides, (d)->element_strides                 \
  }

#define BAD(c, fmt, ...)                                                                           \
  nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: " fmt, (c)->what, __VA_ARGS__)

static nvhcq_status check_enums(const tma_common *c) {
  if (c->dtype > NVHCQ_TENSOR_TFLOAT32_FTZ)
    return BAD(c, "dtype %u is not an element type (NVHCQ_TENSOR_UINT8..TFLOAT32_FTZ, 0..12)",
               c->dtype);
  if (c->interleave > NVHCQ_TENSOR_INTERLEAVE_32B)
    return BAD(c, "interleave %u is not NVHCQ_TENSOR_INTERLEAVE_* (0..2)", c->interleave);
  if (c->swizzle > NVHCQ_TENSOR_SWIZZLE_128B)
    return BAD(c, "swizzle %u is not NVHCQ_TENSOR_SWIZZLE_* (0..3)", c->swizzle);
  if (c->l2 > NVHCQ_TENSOR_L2_256B)
    return BAD(c, "l2_promotion %u is not NVHCQ_TENSOR_L2_* (0..3)", c->l2);
  if (c->oob > NVHCQ_TENSOR_OOB_NAN)
    return BAD(c, "oob_fill %u is not NVHCQ_TENSOR_OOB_ZERO or _NAN", c->oob);
  if (c->oob && c->dtype < NVHCQ_TENSOR_FLOAT16)
    return BAD(c, "NaN out-of-bounds fill needs a floating-point type, not %s",
               type_names[c->dtype]);
  return NVHCQ_SUCCESS;
}

/* The tensor in global memory: address, dims, strides; and the element strides. */
static nvhcq_status check_global(const tma_common *c) {
  unsigned align = c->interleave == NVHCQ_TENSOR_INTERLEAVE_32B ? 32 : 16;
  if (c->address % align)
    return BAD(c, "address 0x%llx is not %u-byte aligned", (unsigned long long)c->address, align);
  for (uint32_t i = 0; i < c->rank; i++)
    if (!c->dims[i] || c->dims[i] > (1ull << 32))
      return BAD(c, "dims[%u] = %llu is outside 1..2^32", i, (unsigned long long)c->dims[i]);
  for (uint32_t i = 0; i + 1 < c->rank; i++) {
    if (c->strides[i] % align)
      return BAD(c, "strides[%u] = %llu bytes is not a multiple of %u", i,
                 (unsigned long long)c->strides[i], align);
    if (c->strides[i] >= (1ull << 40))
      return BAD(c, "strides[%u] = %llu bytes is not below 2^40", i,
                 (unsigned long long)c->strides[i]);
  }
  for (uint32_t i = 0; i < c->rank; i++)
    if (!c->element_strides[i] || c->element_strides[i] > 8)
      return BAD(c, "element_strides[%u] = %u is outside 1..8 (1 reads every element)", i,
                 c->element_strides[i]);
  return NVHCQ_SUCCESS;
}

/* The innermost row of the box (box[0] or the channels): whole 16-byte units, within the
 * swizzle pattern's span when not interleaved. */
static nvhcq_status check_inner_row(const tma_common *c, uint32_t elements, const char *name) {
  uint32_t bytes = elements * element_bytes[c->dtype];
  if (bytes % 16)
    return BAD(c, "%s = %u elements of %s is %u bytes, not a multiple of 16", name, elements,
               type_names[c->dtype], bytes);
  uint32_t span = tma_swizzle_bytes(c->swizzle);
  if (c->interleave == NVHCQ_TENSOR_INTERLEAVE_NONE && span && bytes > span)
    return BAD(c, "%s is %u bytes, more than the %u-byte swizzle span", name, bytes, span);
  return NVHCQ_SUCCESS;
}

static nvhcq_status check_box_bytes(const tma_common *c, uint64_t bytes) {
  if (bytes > TMA_MAX_BOX_BYTES)
    return BAD(c, "the box holds %llu bytes, more than the %u of shared memory an SM has",
               (unsigned long long)bytes, TMA_MAX_BOX_BYTES);
  return NVHCQ_SUCCESS;
}

/* The dwords both forms fill the same way. */
static void encode_common(const tma_common *c, uint32_t w[32]) {
  memset(w, 0, 128);
  w[TMA_DW_ADDRESS_LO] = (uint32_t)c->address, w[TMA_DW_ADDRESS_HI] = (uint32_t)(c->address >> 32);
  w[TMA_DW_FORMAT] =
      (c->rank - 1) << TMA_RANK_SHIFT | (uint32_t)hw_type[c->dtype] << TMA_TYPE_SHIFT |
      c->interleave << TMA_INTERLEAVE_SHIFT | c->swizzle << TMA_SWIZZLE_SHIFT |
      c->oob << TMA_NAN_FILL_BIT | (uint32_t)(c->dtype >= NVHCQ_TENSOR_TFLOAT32) << TMA_TF32_BIT |
      c->l2 << TMA_L2_SHIFT;
  for (uint32_t i = 0; i + 1 < c->rank; i++) {
    w[TMA_DW_STRIDES + i] = (uint32_t)(c->strides[i] >> 4);
    w[TMA_DW_STRIDES_HI] |= (uint32_t)(c->strides[i] >> 36 & 0xf) << (4 * i);
  }
  for (uint32_t i = 0; i < c->rank; i++) {
    w[TMA_DW_DIMS + i] = (uint32_t)(c->dims[i] - 1);
    w[TMA_DW_ELEM_STRIDES] |= (c->element_strides[i] - 1) << (3 * i);
  }
  static const uint32_t swizzle_align[4] = {16, 256, 512, 1024};
  w[TMA_DW_SMEM_ALIGN] = swizzle_align[c->swizzle];
}

static nvhcq_status check_desc(const void *map, const void *desc, uint32_t size, uint32_t need,
                               const char *what) {
  if (!map || !desc)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: map or desc is NULL", what);
  if (size < need)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: desc->struct_size is %u, less than the %u bytes of its layout (set it "
                      "to sizeof the struct)",
                      what, size, need);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_tensor_map_encode_tiled(nvhcq_tensor_map *map, const nvhcq_tensor_tiled *d) {
  const char *what = "nvhcq_tensor_map_encode_tiled";
  NVHCQ_TRY(check_desc(map, d, d ? d->struct_size : 0, sizeof *d, what));
  tma_common c = TMA_COMMON(what, d);
  NVHCQ_TRY(check_enums(&c));
  if (d->rank < 1 || d->rank > 5) return BAD(&c, "rank %u is outside 1..5", d->rank);
  if (d->interleave && d->rank < 3)
    return BAD(&c, "interleaved maps need rank 3..5, not %u", d->rank);
  NVHCQ_TRY(check_global(&c));
  for (uint32_t i = 0; i < d->rank; i++)
    if (!d->box[i] || d->box[i] > 256)
      return BAD(&c, "box[%u] = %u is outside 1..256", i, d->box[i]);
  NVHCQ_TRY(check_inner_row(&c, d->box[0], "box[0]"));
  uint64_t bytes = element_bytes[d->dtype];
  for (uint32_t i = 0; i < d->rank; i++) bytes *= d->box[i] / d->element_strides[i];
  NVHCQ_TRY(check_box_bytes(&c, bytes));
  uint32_t w[32];
  encode_common(&c, w);
  w[TMA_DW_ELEM_STRIDES] |= (d->box[0] - 1) << TMA_BOX0_SHIFT;
  for (uint32_t i = 1; i < d->rank; i++) w[TMA_DW_BOX] |= (d->box[i] - 1) << (8 * (i - 1));
  w[TMA_DW_BOX_BYTES] = (uint32_t)bytes;
  memcpy(map->bytes, w, sizeof w);
  return NVHCQ_SUCCESS;
}

/* The window's corners: 16, 8 or 5 signed bits each for 1, 2 or 3 spatial dimensions, and a
 * window no smaller than one pixel in each (libcuda refuses an empty one). */
static nvhcq_status check_corners(const tma_common *c, const nvhcq_tensor_im2col *d,
                                  unsigned bits) {
  int32_t lo = -(1 << (bits - 1)), hi = (1 << (bits - 1)) - 1;
  for (uint32_t i = 0; i + 2 < d->rank; i++) {
    if (d->lower[i] < lo || d->lower[i] > hi || d->upper[i] < lo || d->upper[i] > hi)
      return BAD(c, "corner %u (lower %d, upper %d) is outside %d..%d for rank %u", i, d->lower[i],
                 d->upper[i], lo, hi, d->rank);
    if ((int64_t)d->dims[i + 1] + d->upper[i] - d->lower[i] <= 0)
      return BAD(c, "dims[%u] = %llu with corners %d..%d leaves an empty window", i + 1,
                 (unsigned long long)d->dims[i + 1], d->lower[i], d->upper[i]);
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_tensor_map_encode_im2col(nvhcq_tensor_map *map, const nvhcq_tensor_im2col *d) {
  const char *what = "nvhcq_tensor_map_encode_im2col";
  NVHCQ_TRY(check_desc(map, d, d ? d->struct_size : 0, sizeof *d, what));
  tma_common c = TMA_COMMON(what, d);
  NVHCQ_TRY(check_enums(&c));
  if (d->rank < 3 || d->rank > 5) return BAD(&c, "rank %u is outside 3..5", d->rank);
  if (d->interleave)
    return BAD(&c,
               "interleave %u: interleaved im2col maps are not supported (libcuda refuses some "
               "that follow every documented rule, and nvhcq does not know why)",
               d->interleave);
  NVHCQ_TRY(check_global(&c));
  unsigned bits = d->rank == 3 ? 16 : d->rank == 4 ? 8 : 5;
  NVHCQ_TRY(check_corners(&c, d, bits));
  if (!d->channels || d->channels > 256)
    return BAD(&c, "channels = %u is outside 1..256", d->channels);
  if (!d->pixels || d->pixels > 1024) return BAD(&c, "pixels = %u is outside 1..1024", d->pixels);
  NVHCQ_TRY(check_inner_row(&c, d->channels, "channels"));
  uint64_t bytes = (uint64_t)d->channels * d->pixels * element_bytes[d->dtype];
  NVHCQ_TRY(check_box_bytes(&c, bytes));
  uint32_t w[32];
  encode_common(&c, w);
  w[TMA_DW_FORMAT] |= 1u << TMA_IM2COL_BIT;
  w[TMA_DW_ELEM_STRIDES] |= (d->channels - 1) << TMA_BOX0_SHIFT;
  uint32_t mask = (1u << bits) - 1;
  for (uint32_t i = 0; i + 2 < d->rank; i++) {
    w[TMA_DW_BOX] |= ((uint32_t)d->lower[i] & mask) << (bits * i);
    w[TMA_DW_BOX] |= ((uint32_t)d->upper[i] & mask) << (16 + bits * i);
  }
  w[TMA_DW_PIXELS] = d->pixels - 1;
  w[TMA_DW_BOX_BYTES] = (uint32_t)bytes;
  memcpy(map->bytes, w, sizeof w);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_tensor_map_replace_address(nvhcq_tensor_map *map, uint64_t address) {
  if (!map)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_tensor_map_replace_address: map is NULL");
  uint32_t w[32];
  memcpy(w, map->bytes, sizeof w);
  uint32_t interleave = w[TMA_DW_FORMAT] >> TMA_INTERLEAVE_SHIFT & 3;
  unsigned align = interleave == NVHCQ_TENSOR_INTERLEAVE_32B ? 32 : 16;
  if (address % align)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_tensor_map_replace_address: address 0x%llx is not %u-byte aligned "
                      "(the map's interleave is %u)",
                      (unsigned long long)address, align, interleave);
  w[TMA_DW_ADDRESS_LO] = (uint32_t)address, w[TMA_DW_ADDRESS_HI] = (uint32_t)(address >> 32);
  memcpy(map->bytes, w, 8);
  return NVHCQ_SUCCESS;
}
