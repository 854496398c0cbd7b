/* QMD (Queue Meta Data, the compute launch descriptor) layouts: data only.
 *
 * Bit ranges are {hi, lo}, inclusive, counted from bit 0 of the QMD's first dword. Sources,
 * NVIDIA/open-gpu-doc classes/compute/: V03_00 clc6c0qmd.h (Ampere), V04_00 clcbc0qmd.h
 * (Hopper), V05_00 clcdc0qmd.h / clcec0qmd.h (Blackwell A/B, the same layout).
 *
 * Names follow NVIDIA's so they can be grepped against the headers, with two unifications:
 * V03's CTA_RASTER_WIDTH/HEIGHT/DEPTH are GRID_*, and V04/V05's RELEASE_ENABLE(i) and
 * RELEASE_SEMAPHORE<i>_ADDR_* take V03's RELEASE<i>_ENABLE / RELEASE<i>_ADDRESS_* spelling.
 * Fields stored shifted keep the shift in their name (a different encoding is a different
 * field), so a caller cannot write a byte address into a shifted field by accident. */
#ifndef NVHCQ_ABI_QMD_FIELDS_H
#define NVHCQ_ABI_QMD_FIELDS_H

#include <stdint.h>

/* Families indexed by constant buffer (0..7) or release slot (0..2) are consecutive, so
 * `NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + i` names bank i. */
#define NVHCQ_QMD_X_CBUF(X, name)                                                                  \
  X(name##_0) X(name##_1) X(name##_2) X(name##_3) X(name##_4) X(name##_5) X(name##_6) X(name##_7)
#define NVHCQ_QMD_X_RELEASE(X, name) X(RELEASE0_##name) X(RELEASE1_##name) X(RELEASE2_##name)

#define NVHCQ_QMD_FIELDS(X)                                                                        \
  X(MAJOR_VERSION)                                                                                 \
  X(MINOR_VERSION)                                                                                 \
  X(QMD_TYPE)                                                                                      \
  X(QMD_GROUP_ID)                                                                                  \
  X(SM_GLOBAL_CACHING_ENABLE)                                                                      \
  X(PROGRAM_ADDRESS_LOWER)                                                                         \
  X(PROGRAM_ADDRESS_UPPER)                                                                         \
  X(PROGRAM_ADDRESS_LOWER_SHIFTED4)                                                                \
  X(PROGRAM_ADDRESS_UPPER_SHIFTED4)                                                                \
  X(PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED)                                                           \
  X(PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED)                                                           \
  X(PROGRAM_PREFETCH_SIZE)                                                                         \
  X(PROGRAM_PREFETCH_TYPE)                                                                         \
  X(REGISTER_COUNT)                                                                                \
  X(BARRIER_COUNT)                                                                                 \
  X(SASS_VERSION)                                                                                  \
  X(SHARED_MEMORY_SIZE)                                                                            \
  X(SHARED_MEMORY_SIZE_SHIFTED7)                                                                   \
  X(MIN_SM_CONFIG_SHARED_MEM_SIZE)                                                                 \
  X(MAX_SM_CONFIG_SHARED_MEM_SIZE)                                                                 \
  X(TARGET_SM_CONFIG_SHARED_MEM_SIZE)                                                              \
  X(SHADER_LOCAL_MEMORY_LOW_SIZE)                                                                  \
  X(SHADER_LOCAL_MEMORY_HIGH_SIZE)                                                                 \
  X(SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4)                                                         \
  X(SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4)                                                        \
  X(CTA_THREAD_DIMENSION0)                                                                         \
  X(CTA_THREAD_DIMENSION1)                                                                         \
  X(CTA_THREAD_DIMENSION2)                                                                         \
  X(GRID_WIDTH)                                                                                    \
  X(GRID_HEIGHT)                                                                                   \
  X(GRID_DEPTH)                                                                                    \
  X(INVALIDATE_TEXTURE_HEADER_CACHE)                                                               \
  X(INVALIDATE_TEXTURE_SAMPLER_CACHE)                                                              \
  X(INVALIDATE_TEXTURE_DATA_CACHE)                                                                 \
  X(INVALIDATE_SHADER_DATA_CACHE)                                                                  \
  X(INVALIDATE_INSTRUCTION_CACHE)                                                                  \
  X(INVALIDATE_SHADER_CONSTANT_CACHE)                                                              \
  X(API_VISIBLE_CALL_LIMIT)                                                                        \
  X(SAMPLER_INDEX)                                                                                 \
  X(CWD_MEMBAR_TYPE)                                                                               \
  X(CWD_MEMBAR_TASK_CHASING_ENABLE)                                                                \
  X(ENABLE_PROGRAM_PRE_EXIT)                                                                       \
  X(DEPENDENT_QMD0_POINTER)                                                                        \
  X(DEPENDENT_QMD0_ENABLE)                                                                         \
  X(DEPENDENT_QMD0_ACTION)                                                                         \
  X(DEPENDENT_QMD0_PREFETCH)                                                                       \
  X(GPC_CGA_WIDTH)                                                                                 \
  X(GPC_CGA_HEIGHT)                                                                                \
  X(GPC_CGA_DEPTH)                                                                                 \
  X(CGA_CTA_DISTRIBUTION_MODE)                                                                     \
  X(TPC_DISABLE_MASK_VALID)                                                                        \
  X(TPC_DISABLE_MASK_0)                                                                            \
  X(TPC_DISABLE_MASK_1)                                                                            \
  X(TPC_DISABLE_MASK_2)                                                                            \
  X(TPC_DISABLE_MASK_3)                                                                            \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_ADDR_LOWER)                                                  \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_ADDR_UPPER)                                                  \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6)                                         \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6)                                         \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_SIZE_SHIFTED4)                                               \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_VALID)                                                       \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_INVALIDATE)                                                  \
  NVHCQ_QMD_X_CBUF(X, CONSTANT_BUFFER_PREFETCH)                                                    \
  X(CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8)                                                \
  NVHCQ_QMD_X_RELEASE(X, ENABLE)                                                                   \
  NVHCQ_QMD_X_RELEASE(X, STRUCTURE_SIZE)                                                           \
  NVHCQ_QMD_X_RELEASE(X, MEMBAR_TYPE)                                                              \
  NVHCQ_QMD_X_RELEASE(X, REDUCTION_ENABLE)                                                         \
  NVHCQ_QMD_X_RELEASE(X, REDUCTION_OP)                                                             \
  NVHCQ_QMD_X_RELEASE(X, REDUCTION_FORMAT)                                                         \
  NVHCQ_QMD_X_RELEASE(X, PAYLOAD64B)                                                               \
  NVHCQ_QMD_X_RELEASE(X, ADDRESS_LOWER)                                                            \
  NVHCQ_QMD_X_RELEASE(X, ADDRESS_UPPER)                                                            \
  NVHCQ_QMD_X_RELEASE(X, PAYLOAD_LOWER)                                                            \
  NVHCQ_QMD_X_RELEASE(X, PAYLOAD_UPPER)

#define NVHCQ_QMD_ENUM_ENTRY(name) NVHCQ_QMD_##name,
typedef enum nvhcq_qmd_field {
  NVHCQ_QMD_FIELDS(NVHCQ_QMD_ENUM_ENTRY) NVHCQ_QMD_FIELD_COUNT
} nvhcq_qmd_field;
#undef NVHCQ_QMD_ENUM_ENTRY

#define NVHCQ_QMD_CONSTANT_BUFFERS 8
#define NVHCQ_QMD_RELEASES         3

/* Field values, the same in all three versions. */
enum {
  NVHCQ_QMD_TYPE_GRID_CTA = 2,
  NVHCQ_QMD_TYPE_GRID_GPC_CGA = 3, /* a grid of clusters, each on one GPC (V04, V05) */
  NVHCQ_QMD_CGA_CTA_DISTRIBUTION_LOAD_BALANCING = 0,
  NVHCQ_QMD_CGA_CTA_DISTRIBUTION_MULTI_CAST = 1,
  NVHCQ_QMD_RELEASE_STRUCTURE_SIZE_FOUR_WORDS = 0, /* payload, then a timestamp at +8 */
  NVHCQ_QMD_RELEASE_STRUCTURE_SIZE_ONE_WORD = 1,
  NVHCQ_QMD_RELEASE_STRUCTURE_SIZE_TWO_WORDS = 2,
  NVHCQ_QMD_DEPENDENT_ACTION_SCHEDULE = 1,
  NVHCQ_QMD_DEPENDENT_ACTION_INVALIDATE_COPY_SCHEDULE = 3,
  NVHCQ_QMD_DEPENDENT_ACTION_DECREMENT_DEPENDENCE = 4,
  NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_NONE = 0,
  NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_SYSMEMBAR = 1,
  NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_MEMBAR = 3,
  NVHCQ_QMD_API_VISIBLE_CALL_LIMIT_NO_CHECK = 1,
  NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_PRE = 1,  /* fetched as the grid is scheduled */
  NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_POST = 2, /* fetched when the grid completes */
  NVHCQ_QMD_PROGRAM_PREFETCH_TYPE_POST = 1,
  NVHCQ_QMD_SAMPLER_INDEX_VIA_HEADER_INDEX = 1,
};

/* present is 0 for a field the version lacks (zero-initialised table entries). */
typedef struct nvhcq_qmd_bits {
  uint16_t hi, lo;
  uint8_t present;
} nvhcq_qmd_bits;

#define NVHCQ_QMD_BITS(hi, lo)                                                                     \
  { (hi), (lo), 1 }
/* Header entries written as F(i) MW((hi + i*stride):(lo + i*stride)). */
#define NVHCQ_QMD_CBUF_BITS(name, hi, lo, stride)                                                  \
  [NVHCQ_QMD_##name##_0] = NVHCQ_QMD_BITS((hi), (lo)),                                             \
  [NVHCQ_QMD_##name##_1] = NVHCQ_QMD_BITS((hi) + 1 * (stride), (lo) + 1 * (stride)),               \
  [NVHCQ_QMD_##name##_2] = NVHCQ_QMD_BITS((hi) + 2 * (stride), (lo) + 2 * (stride)),               \
  [NVHCQ_QMD_##name##_3] = NVHCQ_QMD_BITS((hi) + 3 * (stride), (lo) + 3 * (stride)),               \
  [NVHCQ_QMD_##name##_4] = NVHCQ_QMD_BITS((hi) + 4 * (stride), (lo) + 4 * (stride)),               \
  [NVHCQ_QMD_##name##_5] = NVHCQ_QMD_BITS((hi) + 5 * (stride), (lo) + 5 * (stride)),               \
  [NVHCQ_QMD_##name##_6] = NVHCQ_QMD_BITS((hi) + 6 * (stride), (lo) + 6 * (stride)),               \
  [NVHCQ_QMD_##name##_7] = NVHCQ_QMD_BITS((hi) + 7 * (stride), (lo) + 7 * (stride))
#define NVHCQ_QMD_RELEASE_BITS(name, hi, lo, stride)                                               \
  [NVHCQ_QMD_RELEASE0_##name] = NVHCQ_QMD_BITS((hi), (lo)),                                        \
  [NVHCQ_QMD_RELEASE1_##name] = NVHCQ_QMD_BITS((hi) + 1 * (stride), (lo) + 1 * (stride)),          \
  [NVHCQ_QMD_RELEASE2_##name] = NVHCQ_QMD_BITS((hi) + 2 * (stride), (lo) + 2 * (stride))

/* V03 has no QMD_TYPE (it has IS_QUEUE instead); its releases are three separate blocks. */
static const nvhcq_qmd_bits nvhcq_qmd_v03_bits[NVHCQ_QMD_FIELD_COUNT] = {
    [NVHCQ_QMD_MAJOR_VERSION] = NVHCQ_QMD_BITS(583, 580),
    [NVHCQ_QMD_MINOR_VERSION] = NVHCQ_QMD_BITS(579, 576), /* QMD_VERSION */
    [NVHCQ_QMD_QMD_GROUP_ID] = NVHCQ_QMD_BITS(133, 128),
    [NVHCQ_QMD_SM_GLOBAL_CACHING_ENABLE] = NVHCQ_QMD_BITS(134, 134),
    [NVHCQ_QMD_PROGRAM_ADDRESS_LOWER] = NVHCQ_QMD_BITS(1567, 1536),
    [NVHCQ_QMD_PROGRAM_ADDRESS_UPPER] = NVHCQ_QMD_BITS(1584, 1568),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED] = NVHCQ_QMD_BITS(287, 256),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED] = NVHCQ_QMD_BITS(1640, 1632),
    [NVHCQ_QMD_PROGRAM_PREFETCH_SIZE] = NVHCQ_QMD_BITS(1649, 1641),
    [NVHCQ_QMD_PROGRAM_PREFETCH_TYPE] = NVHCQ_QMD_BITS(1651, 1650),
    [NVHCQ_QMD_REGISTER_COUNT] = NVHCQ_QMD_BITS(656, 648), /* REGISTER_COUNT_V */
    [NVHCQ_QMD_BARRIER_COUNT] = NVHCQ_QMD_BITS(767, 763),
    [NVHCQ_QMD_SASS_VERSION] = NVHCQ_QMD_BITS(1663, 1656),
    [NVHCQ_QMD_SHARED_MEMORY_SIZE] = NVHCQ_QMD_BITS(561, 544),
    [NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(567, 562),
    [NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(574, 569),
    [NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(662, 657),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE] = NVHCQ_QMD_BITS(759, 736),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE] = NVHCQ_QMD_BITS(1623, 1600),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION0] = NVHCQ_QMD_BITS(607, 592),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION1] = NVHCQ_QMD_BITS(623, 608),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION2] = NVHCQ_QMD_BITS(639, 624),
    [NVHCQ_QMD_GRID_WIDTH] = NVHCQ_QMD_BITS(415, 384), /* CTA_RASTER_WIDTH */
    [NVHCQ_QMD_GRID_HEIGHT] = NVHCQ_QMD_BITS(431, 416),
    [NVHCQ_QMD_GRID_DEPTH] = NVHCQ_QMD_BITS(463, 448),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_HEADER_CACHE] = NVHCQ_QMD_BITS(186, 186),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_SAMPLER_CACHE] = NVHCQ_QMD_BITS(187, 187),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_DATA_CACHE] = NVHCQ_QMD_BITS(188, 188),
    [NVHCQ_QMD_INVALIDATE_SHADER_DATA_CACHE] = NVHCQ_QMD_BITS(189, 189),
    [NVHCQ_QMD_INVALIDATE_INSTRUCTION_CACHE] = NVHCQ_QMD_BITS(190, 190),
    [NVHCQ_QMD_INVALIDATE_SHADER_CONSTANT_CACHE] = NVHCQ_QMD_BITS(191, 191),
    [NVHCQ_QMD_API_VISIBLE_CALL_LIMIT] = NVHCQ_QMD_BITS(378, 378),
    [NVHCQ_QMD_SAMPLER_INDEX] = NVHCQ_QMD_BITS(382, 382),
    [NVHCQ_QMD_CWD_MEMBAR_TYPE] = NVHCQ_QMD_BITS(369, 368),
    [NVHCQ_QMD_DEPENDENT_QMD0_POINTER] = NVHCQ_QMD_BITS(511, 480),
    [NVHCQ_QMD_DEPENDENT_QMD0_ENABLE] = NVHCQ_QMD_BITS(512, 512),
    [NVHCQ_QMD_DEPENDENT_QMD0_ACTION] = NVHCQ_QMD_BITS(515, 513),
    [NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH] = NVHCQ_QMD_BITS(516, 516),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_LOWER, 1055, 1024, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_UPPER, 1072, 1056, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_SIZE_SHIFTED4, 1087, 1075, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_VALID, 640, 640, 1),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_INVALIDATE, 1074, 1074, 64),
    [NVHCQ_QMD_RELEASE0_ENABLE] = NVHCQ_QMD_BITS(823, 823),
    [NVHCQ_QMD_RELEASE1_ENABLE] = NVHCQ_QMD_BITS(951, 951),
    [NVHCQ_QMD_RELEASE2_ENABLE] = NVHCQ_QMD_BITS(1719, 1719),
    [NVHCQ_QMD_RELEASE0_STRUCTURE_SIZE] = NVHCQ_QMD_BITS(831, 830),
    [NVHCQ_QMD_RELEASE1_STRUCTURE_SIZE] = NVHCQ_QMD_BITS(959, 958),
    [NVHCQ_QMD_RELEASE2_STRUCTURE_SIZE] = NVHCQ_QMD_BITS(1727, 1726),
    [NVHCQ_QMD_RELEASE0_MEMBAR_TYPE] = NVHCQ_QMD_BITS(819, 819),
    [NVHCQ_QMD_RELEASE1_MEMBAR_TYPE] = NVHCQ_QMD_BITS(947, 947),
    [NVHCQ_QMD_RELEASE2_MEMBAR_TYPE] = NVHCQ_QMD_BITS(1715, 1715),
    [NVHCQ_QMD_RELEASE0_REDUCTION_ENABLE] = NVHCQ_QMD_BITS(826, 826),
    [NVHCQ_QMD_RELEASE1_REDUCTION_ENABLE] = NVHCQ_QMD_BITS(954, 954),
    [NVHCQ_QMD_RELEASE2_REDUCTION_ENABLE] = NVHCQ_QMD_BITS(1722, 1722),
    [NVHCQ_QMD_RELEASE0_REDUCTION_OP] = NVHCQ_QMD_BITS(822, 820),
    [NVHCQ_QMD_RELEASE1_REDUCTION_OP] = NVHCQ_QMD_BITS(950, 948),
    [NVHCQ_QMD_RELEASE2_REDUCTION_OP] = NVHCQ_QMD_BITS(1718, 1716),
    [NVHCQ_QMD_RELEASE0_REDUCTION_FORMAT] = NVHCQ_QMD_BITS(825, 824),
    [NVHCQ_QMD_RELEASE1_REDUCTION_FORMAT] = NVHCQ_QMD_BITS(953, 952),
    [NVHCQ_QMD_RELEASE2_REDUCTION_FORMAT] = NVHCQ_QMD_BITS(1721, 1720),
    [NVHCQ_QMD_RELEASE0_PAYLOAD64B] = NVHCQ_QMD_BITS(829, 829),
    [NVHCQ_QMD_RELEASE1_PAYLOAD64B] = NVHCQ_QMD_BITS(957, 957),
    [NVHCQ_QMD_RELEASE2_PAYLOAD64B] = NVHCQ_QMD_BITS(1725, 1725),
    [NVHCQ_QMD_RELEASE0_ADDRESS_LOWER] = NVHCQ_QMD_BITS(799, 768),
    [NVHCQ_QMD_RELEASE1_ADDRESS_LOWER] = NVHCQ_QMD_BITS(927, 896),
    [NVHCQ_QMD_RELEASE2_ADDRESS_LOWER] = NVHCQ_QMD_BITS(1695, 1664),
    [NVHCQ_QMD_RELEASE0_ADDRESS_UPPER] = NVHCQ_QMD_BITS(807, 800),
    [NVHCQ_QMD_RELEASE1_ADDRESS_UPPER] = NVHCQ_QMD_BITS(935, 928),
    [NVHCQ_QMD_RELEASE2_ADDRESS_UPPER] = NVHCQ_QMD_BITS(1703, 1696),
    [NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(863, 832),
    [NVHCQ_QMD_RELEASE1_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(991, 960),
    [NVHCQ_QMD_RELEASE2_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(1759, 1728),
    [NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(895, 864),
    [NVHCQ_QMD_RELEASE1_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(1023, 992),
    [NVHCQ_QMD_RELEASE2_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(1791, 1760),
};

/* V04 has no SM_GLOBAL_CACHING_ENABLE; constant buffer addresses are stored >> 6. */
static const nvhcq_qmd_bits nvhcq_qmd_v04_bits[NVHCQ_QMD_FIELD_COUNT] = {
    [NVHCQ_QMD_MAJOR_VERSION] = NVHCQ_QMD_BITS(583, 580),
    [NVHCQ_QMD_MINOR_VERSION] = NVHCQ_QMD_BITS(579, 576),
    [NVHCQ_QMD_QMD_TYPE] = NVHCQ_QMD_BITS(25, 23),
    [NVHCQ_QMD_TPC_DISABLE_MASK_VALID] = NVHCQ_QMD_BITS(31, 31),
    [NVHCQ_QMD_GPC_CGA_WIDTH] = NVHCQ_QMD_BITS(2149, 2144),
    [NVHCQ_QMD_GPC_CGA_HEIGHT] = NVHCQ_QMD_BITS(2157, 2152),
    [NVHCQ_QMD_GPC_CGA_DEPTH] = NVHCQ_QMD_BITS(2165, 2160),
    [NVHCQ_QMD_CGA_CTA_DISTRIBUTION_MODE] = NVHCQ_QMD_BITS(2207, 2207),
    [NVHCQ_QMD_TPC_DISABLE_MASK_0] = NVHCQ_QMD_BITS(2463, 2432),
    [NVHCQ_QMD_TPC_DISABLE_MASK_1] = NVHCQ_QMD_BITS(2495, 2464),
    [NVHCQ_QMD_TPC_DISABLE_MASK_2] = NVHCQ_QMD_BITS(2527, 2496),
    [NVHCQ_QMD_TPC_DISABLE_MASK_3] = NVHCQ_QMD_BITS(2559, 2528),
    [NVHCQ_QMD_QMD_GROUP_ID] = NVHCQ_QMD_BITS(21, 16),
    [NVHCQ_QMD_PROGRAM_ADDRESS_LOWER] = NVHCQ_QMD_BITS(1247, 1216),
    [NVHCQ_QMD_PROGRAM_ADDRESS_UPPER] = NVHCQ_QMD_BITS(1272, 1248),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED] = NVHCQ_QMD_BITS(1375, 1344),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED] = NVHCQ_QMD_BITS(1392, 1376),
    [NVHCQ_QMD_PROGRAM_PREFETCH_SIZE] = NVHCQ_QMD_BITS(1401, 1393),
    [NVHCQ_QMD_PROGRAM_PREFETCH_TYPE] = NVHCQ_QMD_BITS(1403, 1402),
    [NVHCQ_QMD_REGISTER_COUNT] = NVHCQ_QMD_BITS(1208, 1200),
    [NVHCQ_QMD_BARRIER_COUNT] = NVHCQ_QMD_BITS(1215, 1211),
    [NVHCQ_QMD_SASS_VERSION] = NVHCQ_QMD_BITS(543, 536),
    [NVHCQ_QMD_SHARED_MEMORY_SIZE] = NVHCQ_QMD_BITS(601, 584),
    [NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(613, 608),
    [NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(619, 614),
    [NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(625, 620),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE] = NVHCQ_QMD_BITS(535, 512),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE] = NVHCQ_QMD_BITS(567, 544),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION0] = NVHCQ_QMD_BITS(1167, 1152),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION1] = NVHCQ_QMD_BITS(1183, 1168),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION2] = NVHCQ_QMD_BITS(1199, 1184),
    [NVHCQ_QMD_GRID_WIDTH] = NVHCQ_QMD_BITS(1055, 1024),
    [NVHCQ_QMD_GRID_HEIGHT] = NVHCQ_QMD_BITS(1071, 1056),
    [NVHCQ_QMD_GRID_DEPTH] = NVHCQ_QMD_BITS(1103, 1088),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_HEADER_CACHE] = NVHCQ_QMD_BITS(602, 602),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_SAMPLER_CACHE] = NVHCQ_QMD_BITS(603, 603),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_DATA_CACHE] = NVHCQ_QMD_BITS(604, 604),
    [NVHCQ_QMD_INVALIDATE_SHADER_DATA_CACHE] = NVHCQ_QMD_BITS(605, 605),
    [NVHCQ_QMD_INVALIDATE_INSTRUCTION_CACHE] = NVHCQ_QMD_BITS(606, 606),
    [NVHCQ_QMD_INVALIDATE_SHADER_CONSTANT_CACHE] = NVHCQ_QMD_BITS(607, 607),
    [NVHCQ_QMD_API_VISIBLE_CALL_LIMIT] = NVHCQ_QMD_BITS(568, 568),
    [NVHCQ_QMD_SAMPLER_INDEX] = NVHCQ_QMD_BITS(569, 569),
    [NVHCQ_QMD_CWD_MEMBAR_TYPE] = NVHCQ_QMD_BITS(1137, 1136),
    [NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE] = NVHCQ_QMD_BITS(382, 382),
    [NVHCQ_QMD_ENABLE_PROGRAM_PRE_EXIT] = NVHCQ_QMD_BITS(1151, 1151),
    [NVHCQ_QMD_DEPENDENT_QMD0_POINTER] = NVHCQ_QMD_BITS(479, 448),
    [NVHCQ_QMD_DEPENDENT_QMD0_ENABLE] = NVHCQ_QMD_BITS(368, 368),
    [NVHCQ_QMD_DEPENDENT_QMD0_ACTION] = NVHCQ_QMD_BITS(371, 369),
    [NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH] = NVHCQ_QMD_BITS(372, 372),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6, 1567, 1536, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6, 1586, 1568, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_SIZE_SHIFTED4, 1599, 1587, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_VALID, 416, 416, 4),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_INVALIDATE, 419, 419, 4),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_PREFETCH, 418, 417, 4),
    [NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8] = NVHCQ_QMD_BITS(575, 570),
    NVHCQ_QMD_RELEASE_BITS(ENABLE, 320, 320, 16),
    NVHCQ_QMD_RELEASE_BITS(STRUCTURE_SIZE, 322, 321, 16),
    NVHCQ_QMD_RELEASE_BITS(MEMBAR_TYPE, 323, 323, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_ENABLE, 324, 324, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_OP, 327, 325, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_FORMAT, 329, 328, 16),
    NVHCQ_QMD_RELEASE_BITS(PAYLOAD64B, 332, 332, 16),
    NVHCQ_QMD_RELEASE_BITS(ADDRESS_LOWER, 671, 640, 128),
    NVHCQ_QMD_RELEASE_BITS(ADDRESS_UPPER, 696, 672, 128),
    NVHCQ_QMD_RELEASE_BITS(PAYLOAD_LOWER, 735, 704, 128),
    NVHCQ_QMD_RELEASE_BITS(PAYLOAD_UPPER, 767, 736, 128),
};

/* V05 stores the program address >> 4, shared memory >> 7 and local memory >> 4; release
 * semaphore 0 sits apart from 1 and 2, which keep their V04 places. */
static const nvhcq_qmd_bits nvhcq_qmd_v05_bits[NVHCQ_QMD_FIELD_COUNT] = {
    [NVHCQ_QMD_MAJOR_VERSION] = NVHCQ_QMD_BITS(471, 468),
    [NVHCQ_QMD_MINOR_VERSION] = NVHCQ_QMD_BITS(467, 464),
    [NVHCQ_QMD_QMD_TYPE] = NVHCQ_QMD_BITS(153, 151),
    [NVHCQ_QMD_TPC_DISABLE_MASK_VALID] = NVHCQ_QMD_BITS(159, 159),
    [NVHCQ_QMD_GPC_CGA_WIDTH] = NVHCQ_QMD_BITS(2053, 2048),
    [NVHCQ_QMD_GPC_CGA_HEIGHT] = NVHCQ_QMD_BITS(2061, 2056),
    [NVHCQ_QMD_GPC_CGA_DEPTH] = NVHCQ_QMD_BITS(2069, 2064),
    [NVHCQ_QMD_CGA_CTA_DISTRIBUTION_MODE] = NVHCQ_QMD_BITS(2111, 2111),
    [NVHCQ_QMD_TPC_DISABLE_MASK_0] = NVHCQ_QMD_BITS(2271, 2240),
    [NVHCQ_QMD_TPC_DISABLE_MASK_1] = NVHCQ_QMD_BITS(2303, 2272),
    [NVHCQ_QMD_TPC_DISABLE_MASK_2] = NVHCQ_QMD_BITS(2335, 2304),
    [NVHCQ_QMD_TPC_DISABLE_MASK_3] = NVHCQ_QMD_BITS(2367, 2336),
    [NVHCQ_QMD_QMD_GROUP_ID] = NVHCQ_QMD_BITS(149, 144),
    [NVHCQ_QMD_PROGRAM_ADDRESS_LOWER_SHIFTED4] = NVHCQ_QMD_BITS(1055, 1024),
    [NVHCQ_QMD_PROGRAM_ADDRESS_UPPER_SHIFTED4] = NVHCQ_QMD_BITS(1076, 1056),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED] = NVHCQ_QMD_BITS(1919, 1888),
    [NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED] = NVHCQ_QMD_BITS(1936, 1920),
    [NVHCQ_QMD_PROGRAM_PREFETCH_SIZE] = NVHCQ_QMD_BITS(1085, 1077),
    [NVHCQ_QMD_PROGRAM_PREFETCH_TYPE] = NVHCQ_QMD_BITS(1087, 1086),
    [NVHCQ_QMD_REGISTER_COUNT] = NVHCQ_QMD_BITS(1136, 1128),
    [NVHCQ_QMD_BARRIER_COUNT] = NVHCQ_QMD_BITS(1141, 1137),
    [NVHCQ_QMD_SASS_VERSION] = NVHCQ_QMD_BITS(455, 448),
    [NVHCQ_QMD_SHARED_MEMORY_SIZE_SHIFTED7] = NVHCQ_QMD_BITS(1162, 1152),
    [NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(1168, 1163),
    [NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(1174, 1169),
    [NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE] = NVHCQ_QMD_BITS(1180, 1175),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4] = NVHCQ_QMD_BITS(1199, 1184),
    [NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4] = NVHCQ_QMD_BITS(1215, 1200),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION0] = NVHCQ_QMD_BITS(1103, 1088),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION1] = NVHCQ_QMD_BITS(1119, 1104),
    [NVHCQ_QMD_CTA_THREAD_DIMENSION2] = NVHCQ_QMD_BITS(1127, 1120), /* 8 bits on V05 */
    [NVHCQ_QMD_GRID_WIDTH] = NVHCQ_QMD_BITS(1279, 1248),
    [NVHCQ_QMD_GRID_HEIGHT] = NVHCQ_QMD_BITS(1295, 1280),
    [NVHCQ_QMD_GRID_DEPTH] = NVHCQ_QMD_BITS(1327, 1312),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_HEADER_CACHE] = NVHCQ_QMD_BITS(472, 472),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_SAMPLER_CACHE] = NVHCQ_QMD_BITS(473, 473),
    [NVHCQ_QMD_INVALIDATE_TEXTURE_DATA_CACHE] = NVHCQ_QMD_BITS(474, 474),
    [NVHCQ_QMD_INVALIDATE_SHADER_DATA_CACHE] = NVHCQ_QMD_BITS(475, 475),
    [NVHCQ_QMD_INVALIDATE_INSTRUCTION_CACHE] = NVHCQ_QMD_BITS(476, 476),
    [NVHCQ_QMD_INVALIDATE_SHADER_CONSTANT_CACHE] = NVHCQ_QMD_BITS(477, 477),
    [NVHCQ_QMD_API_VISIBLE_CALL_LIMIT] = NVHCQ_QMD_BITS(456, 456),
    [NVHCQ_QMD_SAMPLER_INDEX] = NVHCQ_QMD_BITS(457, 457),
    [NVHCQ_QMD_CWD_MEMBAR_TYPE] = NVHCQ_QMD_BITS(625, 624),
    [NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE] = NVHCQ_QMD_BITS(350, 350),
    [NVHCQ_QMD_DEPENDENT_QMD0_POINTER] = NVHCQ_QMD_BITS(415, 384),
    [NVHCQ_QMD_DEPENDENT_QMD0_ENABLE] = NVHCQ_QMD_BITS(336, 336),
    [NVHCQ_QMD_DEPENDENT_QMD0_ACTION] = NVHCQ_QMD_BITS(339, 337),
    [NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH] = NVHCQ_QMD_BITS(340, 340),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6, 1375, 1344, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6, 1394, 1376, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_SIZE_SHIFTED4, 1407, 1395, 64),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_VALID, 1856, 1856, 4),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_INVALIDATE, 1859, 1859, 4),
    NVHCQ_QMD_CBUF_BITS(CONSTANT_BUFFER_PREFETCH, 1858, 1857, 4),
    [NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8] = NVHCQ_QMD_BITS(463, 458),
    NVHCQ_QMD_RELEASE_BITS(ENABLE, 288, 288, 16),
    NVHCQ_QMD_RELEASE_BITS(STRUCTURE_SIZE, 290, 289, 16),
    NVHCQ_QMD_RELEASE_BITS(MEMBAR_TYPE, 291, 291, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_ENABLE, 292, 292, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_OP, 295, 293, 16),
    NVHCQ_QMD_RELEASE_BITS(REDUCTION_FORMAT, 297, 296, 16),
    NVHCQ_QMD_RELEASE_BITS(PAYLOAD64B, 300, 300, 16),
    [NVHCQ_QMD_RELEASE0_ADDRESS_LOWER] = NVHCQ_QMD_BITS(511, 480),
    [NVHCQ_QMD_RELEASE1_ADDRESS_LOWER] = NVHCQ_QMD_BITS(799, 768),
    [NVHCQ_QMD_RELEASE2_ADDRESS_LOWER] = NVHCQ_QMD_BITS(927, 896),
    [NVHCQ_QMD_RELEASE0_ADDRESS_UPPER] = NVHCQ_QMD_BITS(536, 512),
    [NVHCQ_QMD_RELEASE1_ADDRESS_UPPER] = NVHCQ_QMD_BITS(824, 800),
    [NVHCQ_QMD_RELEASE2_ADDRESS_UPPER] = NVHCQ_QMD_BITS(952, 928),
    [NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(575, 544),
    [NVHCQ_QMD_RELEASE1_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(863, 832),
    [NVHCQ_QMD_RELEASE2_PAYLOAD_LOWER] = NVHCQ_QMD_BITS(991, 960),
    [NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(607, 576),
    [NVHCQ_QMD_RELEASE1_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(895, 864),
    [NVHCQ_QMD_RELEASE2_PAYLOAD_UPPER] = NVHCQ_QMD_BITS(1023, 992),
};

/* Where each version keeps the values the launch helpers write, and how far each is shifted
 * (the _SHIFTEDn in a field's name). */
typedef struct nvhcq_qmd_layout {
  unsigned size_bytes; /* (highest defined bit + 1) / 8 */
  const nvhcq_qmd_bits *bits;
  nvhcq_qmd_field program_address_lower, program_address_upper;
  unsigned program_address_shift;
  nvhcq_qmd_field cbuf_address_lower0, cbuf_address_upper0; /* bank i: + i */
  unsigned cbuf_address_shift;
  nvhcq_qmd_field shared_memory_size;
  unsigned shared_memory_shift;
  nvhcq_qmd_field local_memory_low, local_memory_high;
  unsigned local_memory_shift;
} nvhcq_qmd_layout;

static const nvhcq_qmd_layout nvhcq_qmd_layout_v03 = {
    .size_bytes = 256,
    .bits = nvhcq_qmd_v03_bits,
    .program_address_lower = NVHCQ_QMD_PROGRAM_ADDRESS_LOWER,
    .program_address_upper = NVHCQ_QMD_PROGRAM_ADDRESS_UPPER,
    .program_address_shift = 0,
    .cbuf_address_lower0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_0,
    .cbuf_address_upper0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_0,
    .cbuf_address_shift = 0,
    .shared_memory_size = NVHCQ_QMD_SHARED_MEMORY_SIZE,
    .shared_memory_shift = 0,
    .local_memory_low = NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE,
    .local_memory_high = NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE,
    .local_memory_shift = 0,
};

static const nvhcq_qmd_layout nvhcq_qmd_layout_v04 = {
    .size_bytes = 384,
    .bits = nvhcq_qmd_v04_bits,
    .program_address_lower = NVHCQ_QMD_PROGRAM_ADDRESS_LOWER,
    .program_address_upper = NVHCQ_QMD_PROGRAM_ADDRESS_UPPER,
    .program_address_shift = 0,
    .cbuf_address_lower0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0,
    .cbuf_address_upper0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0,
    .cbuf_address_shift = 6,
    .shared_memory_size = NVHCQ_QMD_SHARED_MEMORY_SIZE,
    .shared_memory_shift = 0,
    .local_memory_low = NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE,
    .local_memory_high = NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE,
    .local_memory_shift = 0,
};

static const nvhcq_qmd_layout nvhcq_qmd_layout_v05 = {
    .size_bytes = 384,
    .bits = nvhcq_qmd_v05_bits,
    .program_address_lower = NVHCQ_QMD_PROGRAM_ADDRESS_LOWER_SHIFTED4,
    .program_address_upper = NVHCQ_QMD_PROGRAM_ADDRESS_UPPER_SHIFTED4,
    .program_address_shift = 4,
    .cbuf_address_lower0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0,
    .cbuf_address_upper0 = NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0,
    .cbuf_address_shift = 6,
    .shared_memory_size = NVHCQ_QMD_SHARED_MEMORY_SIZE_SHIFTED7,
    .shared_memory_shift = 7,
    .local_memory_low = NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4,
    .local_memory_high = NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4,
    .local_memory_shift = 4,
};

#endif
