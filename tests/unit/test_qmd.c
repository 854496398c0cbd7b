/* QMD encodings checked against NVIDIA/open-gpu-doc classes/compute/clc6c0qmd.h (V03),
 * clcbc0qmd.h (V04) and clcdc0qmd.h / clcec0qmd.h (V05). Positions written out in these tests
 * are copied from those headers, not from our tables, so a wrong table entry fails here. */
#include "qmd.h"
#include "test.h"

#include <inttypes.h>

#define QMD_DWORDS 96 /* the largest version, 384 bytes */
#define GUARD      4  /* dwords past the end that no write may touch */

static const nvhcq_qmd_version versions[] = {NVHCQ_QMD_V03, NVHCQ_QMD_V04, NVHCQ_QMD_V05};

static int bit_is_set(const uint32_t *q, unsigned bit) {
  return (q[bit / 32] >> (bit % 32)) & 1;
}

static uint64_t all_ones(unsigned width) {
  return width >= 64 ? UINT64_MAX : ((uint64_t)1 << width) - 1;
}

static int error_mentions(const char *text) {
  return strstr(nvhcq_last_error(), text) != NULL;
}

static int all_zero(const uint32_t *q, size_t dwords) {
  for (size_t i = 0; i < dwords; i++)
    if (q[i]) return 0;
  return 1;
}

static void test_version_for_class(void) {
  TEST_CHECK(nvhcq_qmd_version_for_class(0xc5c0) == NVHCQ_QMD_NONE); /* Turing */
  TEST_CHECK(nvhcq_qmd_version_for_class(0) == NVHCQ_QMD_NONE);
  TEST_CHECK(nvhcq_qmd_version_for_class(0xc6c0) == NVHCQ_QMD_V03); /* AMPERE_COMPUTE_A */
  TEST_CHECK(nvhcq_qmd_version_for_class(0xc7c0) == NVHCQ_QMD_V03); /* AMPERE_COMPUTE_B */
  TEST_CHECK(nvhcq_qmd_version_for_class(0xc9c0) == NVHCQ_QMD_V03); /* ADA_COMPUTE_A */
  TEST_CHECK(nvhcq_qmd_version_for_class(0xcbc0) == NVHCQ_QMD_V04); /* HOPPER_COMPUTE_A */
  TEST_CHECK(nvhcq_qmd_version_for_class(0xcdc0) == NVHCQ_QMD_V05); /* BLACKWELL_COMPUTE_A */
  TEST_CHECK(nvhcq_qmd_version_for_class(0xcec0) == NVHCQ_QMD_V05); /* BLACKWELL_COMPUTE_B */
}

/* The last field of V03 ends at bit 2047 (DEBUG_ID_LOWER); V04 and V05 end at 3071. */
static void test_size_per_version(void) {
  TEST_CHECK(nvhcq_qmd_size(NVHCQ_QMD_V03) == 256);
  TEST_CHECK(nvhcq_qmd_size(NVHCQ_QMD_V04) == 384);
  TEST_CHECK(nvhcq_qmd_size(NVHCQ_QMD_V05) == 384);
  TEST_CHECK(nvhcq_qmd_size(NVHCQ_QMD_NONE) == 0);
  TEST_CHECK(nvhcq_qmd_size((nvhcq_qmd_version)6) == 0);
}

/* Writing all-ones sets exactly bits lo..hi, and writing zero over all-ones clears exactly
 * them, for every field of every version; nothing lands past the QMD's end. */
static void check_field_bits(nvhcq_qmd_version v, nvhcq_qmd_field f, unsigned hi, unsigned lo) {
  uint32_t ones[QMD_DWORDS + GUARD] = {0}, zeros[QMD_DWORDS + GUARD];
  memset(zeros, 0xff, sizeof zeros);
  TEST_CHECK_MSG(hi < nvhcq_qmd_size(v) * 8, "V%02d %s ends past the QMD", (int)v,
                 nvhcq_qmd_field_name(f));
  TEST_CHECK(nvhcq_qmd_set(v, ones, f, all_ones(hi - lo + 1)) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_qmd_set(v, zeros, f, 0) == NVHCQ_SUCCESS);
  for (unsigned bit = 0; bit < (QMD_DWORDS + GUARD) * 32; bit++) {
    int inside = bit >= lo && bit <= hi;
    TEST_CHECK_MSG(bit_is_set(ones, bit) == inside, "V%02d %s bit %u", (int)v,
                   nvhcq_qmd_field_name(f), bit);
    TEST_CHECK_MSG(bit_is_set(zeros, bit) == !inside, "V%02d %s bit %u", (int)v,
                   nvhcq_qmd_field_name(f), bit);
  }
}

static void test_every_field_sets_exactly_its_bits(void) {
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    for (int f = 0; f < NVHCQ_QMD_FIELD_COUNT; f++) {
      unsigned hi, lo;
      if (nvhcq_qmd_field_range(versions[i], (nvhcq_qmd_field)f, &hi, &lo))
        check_field_bits(versions[i], (nvhcq_qmd_field)f, hi, lo);
    }
  }
}

/* Distinct values in every field, then read all back: fails if two fields of a version overlap. */
static void test_round_trip_all_fields(void) {
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    nvhcq_qmd_version v = versions[i];
    uint32_t q[QMD_DWORDS + GUARD] = {0};
    unsigned hi, lo;
    for (int f = 0; f < NVHCQ_QMD_FIELD_COUNT; f++) {
      if (!nvhcq_qmd_field_range(v, (nvhcq_qmd_field)f, &hi, &lo)) continue;
      uint64_t value = (0x9e3779b97f4a7c15ull * (uint64_t)(f + 1)) & all_ones(hi - lo + 1);
      TEST_CHECK(nvhcq_qmd_set(v, q, (nvhcq_qmd_field)f, value) == NVHCQ_SUCCESS);
    }
    for (int f = 0; f < NVHCQ_QMD_FIELD_COUNT; f++) {
      if (!nvhcq_qmd_field_range(v, (nvhcq_qmd_field)f, &hi, &lo)) continue;
      uint64_t value = (0x9e3779b97f4a7c15ull * (uint64_t)(f + 1)) & all_ones(hi - lo + 1);
      TEST_CHECK_MSG(nvhcq_qmd_get(v, q, (nvhcq_qmd_field)f) == value, "V%02d %s", (int)v,
                     nvhcq_qmd_field_name((nvhcq_qmd_field)f));
    }
    TEST_CHECK(all_zero(q + QMD_DWORDS, GUARD));
  }
}

/* Catches a mistyped table entry that lands on a neighbour. */
static void test_fields_do_not_overlap(void) {
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    for (int a = 0; a < NVHCQ_QMD_FIELD_COUNT; a++) {
      for (int b = a + 1; b < NVHCQ_QMD_FIELD_COUNT; b++) {
        unsigned ahi, alo, bhi, blo;
        if (!nvhcq_qmd_field_range(versions[i], (nvhcq_qmd_field)a, &ahi, &alo) ||
            !nvhcq_qmd_field_range(versions[i], (nvhcq_qmd_field)b, &bhi, &blo))
          continue;
        TEST_CHECK_MSG(ahi < blo || bhi < alo, "V%02d %s and %s overlap", (int)versions[i],
                       nvhcq_qmd_field_name((nvhcq_qmd_field)a),
                       nvhcq_qmd_field_name((nvhcq_qmd_field)b));
      }
    }
  }
}

static void expect_range(nvhcq_qmd_version v, nvhcq_qmd_field f, unsigned hi, unsigned lo) {
  unsigned got_hi = 0, got_lo = 0;
  TEST_CHECK_MSG(nvhcq_qmd_field_range(v, f, &got_hi, &got_lo) && got_hi == hi && got_lo == lo,
                 "V%02d %s: want %u:%u, have %u:%u", (int)v, nvhcq_qmd_field_name(f), hi, lo,
                 got_hi, got_lo);
}

/* The V04 fields a Hopper launch writes, at their header positions. */
static void test_v04_ranges_from_header(void) {
  const nvhcq_qmd_version v = NVHCQ_QMD_V04;
  expect_range(v, NVHCQ_QMD_MAJOR_VERSION, 583, 580);
  expect_range(v, NVHCQ_QMD_MINOR_VERSION, 579, 576);
  expect_range(v, NVHCQ_QMD_QMD_TYPE, 25, 23);
  expect_range(v, NVHCQ_QMD_QMD_GROUP_ID, 21, 16);
  expect_range(v, NVHCQ_QMD_PROGRAM_ADDRESS_LOWER, 1247, 1216);
  expect_range(v, NVHCQ_QMD_PROGRAM_ADDRESS_UPPER, 1272, 1248);
  expect_range(v, NVHCQ_QMD_REGISTER_COUNT, 1208, 1200);
  expect_range(v, NVHCQ_QMD_BARRIER_COUNT, 1215, 1211);
  expect_range(v, NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE, 382, 382);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_0, 418, 417);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_5, 438, 437);
  expect_range(v, NVHCQ_QMD_SHARED_MEMORY_SIZE, 601, 584);
  expect_range(v, NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE, 613, 608);
  expect_range(v, NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE, 619, 614);
  expect_range(v, NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE, 625, 620);
  expect_range(v, NVHCQ_QMD_CTA_THREAD_DIMENSION0, 1167, 1152);
  expect_range(v, NVHCQ_QMD_CTA_THREAD_DIMENSION1, 1183, 1168);
  expect_range(v, NVHCQ_QMD_CTA_THREAD_DIMENSION2, 1199, 1184);
  expect_range(v, NVHCQ_QMD_GRID_WIDTH, 1055, 1024);
  expect_range(v, NVHCQ_QMD_GRID_HEIGHT, 1071, 1056);
  expect_range(v, NVHCQ_QMD_GRID_DEPTH, 1103, 1088);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0 + 3, 1567 + 192, 1536 + 192);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0 + 3, 1586 + 192, 1568 + 192);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0 + 7, 1599 + 448, 1587 + 448);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + 5, 436, 436);
  expect_range(v, NVHCQ_QMD_CONSTANT_BUFFER_INVALIDATE_0, 419, 419);
  expect_range(v, NVHCQ_QMD_RELEASE2_ENABLE, 352, 352);
  expect_range(v, NVHCQ_QMD_RELEASE1_STRUCTURE_SIZE, 338, 337);
  expect_range(v, NVHCQ_QMD_RELEASE0_PAYLOAD64B, 332, 332);
  expect_range(v, NVHCQ_QMD_RELEASE0_ADDRESS_LOWER, 671, 640);
  expect_range(v, NVHCQ_QMD_RELEASE0_ADDRESS_UPPER, 696, 672);
  expect_range(v, NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER, 735, 704);
  expect_range(v, NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER, 767, 736);
  expect_range(v, NVHCQ_QMD_RELEASE2_ADDRESS_UPPER, 952, 928);
  expect_range(v, NVHCQ_QMD_DEPENDENT_QMD0_POINTER, 479, 448);
  expect_range(v, NVHCQ_QMD_DEPENDENT_QMD0_ENABLE, 368, 368);
  expect_range(v, NVHCQ_QMD_DEPENDENT_QMD0_ACTION, 371, 369);
  expect_range(v, NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH, 372, 372);
  expect_range(v, NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, 1375, 1344);
  expect_range(v, NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, 1392, 1376);
  expect_range(v, NVHCQ_QMD_PROGRAM_PREFETCH_SIZE, 1401, 1393);
  expect_range(v, NVHCQ_QMD_SHADER_LOCAL_MEMORY_LOW_SIZE, 535, 512);
  expect_range(v, NVHCQ_QMD_SHADER_LOCAL_MEMORY_HIGH_SIZE, 567, 544);
  expect_range(v, NVHCQ_QMD_SASS_VERSION, 543, 536);
  expect_range(v, NVHCQ_QMD_INVALIDATE_TEXTURE_HEADER_CACHE, 602, 602);
  expect_range(v, NVHCQ_QMD_INVALIDATE_SHADER_CONSTANT_CACHE, 607, 607);
  expect_range(v, NVHCQ_QMD_API_VISIBLE_CALL_LIMIT, 568, 568);
  expect_range(v, NVHCQ_QMD_SAMPLER_INDEX, 569, 569);
  expect_range(v, NVHCQ_QMD_CWD_MEMBAR_TYPE, 1137, 1136);
}

/* A few fields of the other versions whose places differ most from V04. */
static void test_v03_v05_ranges_from_header(void) {
  expect_range(NVHCQ_QMD_V03, NVHCQ_QMD_REGISTER_COUNT, 656, 648); /* REGISTER_COUNT_V */
  expect_range(NVHCQ_QMD_V03, NVHCQ_QMD_GRID_WIDTH, 415, 384);     /* CTA_RASTER_WIDTH */
  expect_range(NVHCQ_QMD_V03, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + 7, 647, 647);
  expect_range(NVHCQ_QMD_V03, NVHCQ_QMD_RELEASE2_PAYLOAD_UPPER, 1791, 1760);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_MAJOR_VERSION, 471, 468);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_PROGRAM_ADDRESS_LOWER_SHIFTED4, 1055, 1024);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_PROGRAM_ADDRESS_UPPER_SHIFTED4, 1076, 1056);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_SHARED_MEMORY_SIZE_SHIFTED7, 1162, 1152);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_CTA_THREAD_DIMENSION2, 1127, 1120);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_RELEASE0_ADDRESS_LOWER, 511, 480);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_RELEASE1_ADDRESS_LOWER, 799, 768);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + 1, 1860, 1860);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE, 350, 350);
  expect_range(NVHCQ_QMD_V05, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_0, 1858, 1857);
}

/* Values land at the header's absolute positions (dword = bit / 32). */
static void test_v04_known_values_in_dwords(void) {
  const nvhcq_qmd_version v = NVHCQ_QMD_V04;
  uint32_t q[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_MAJOR_VERSION, 4) == NVHCQ_SUCCESS);
  TEST_CHECK(q[18] == 4u << 4); /* 583:580 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_REGISTER_COUNT, 0x80) == NVHCQ_SUCCESS);
  TEST_CHECK(q[37] == 0x80u << 16); /* 1208:1200 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_QMD_TYPE, NVHCQ_QMD_TYPE_GRID_CTA) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_QMD_GROUP_ID, 0x3f) == NVHCQ_SUCCESS);
  TEST_CHECK(q[0] == ((2u << 23) | (0x3fu << 16))); /* 25:23, 21:16 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_GRID_WIDTH, 0xdeadbeef) == NVHCQ_SUCCESS);
  TEST_CHECK(q[32] == 0xdeadbeef); /* 1055:1024 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_CTA_THREAD_DIMENSION1, 0x1234) == NVHCQ_SUCCESS);
  TEST_CHECK(q[36] == 0x1234u << 16); /* 1183:1168 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_SASS_VERSION, 0x90) == NVHCQ_SUCCESS);
  TEST_CHECK(q[16] == 0x90u << 24); /* 543:536 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_CWD_MEMBAR_TYPE,
                           NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_SYSMEMBAR) == NVHCQ_SUCCESS);
  TEST_CHECK(q[35] == 1u << 16); /* 1137:1136 */
  TEST_CHECK(nvhcq_qmd_set(v, q, NVHCQ_QMD_INVALIDATE_SHADER_DATA_CACHE, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(q[18] == ((4u << 4) | (1u << 29))); /* 605 */
}

static void test_refuses_oversized_value(void) {
  uint32_t q[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V04, q, NVHCQ_QMD_REGISTER_COUNT, 0x1ff) == NVHCQ_SUCCESS);
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V04, q, NVHCQ_QMD_REGISTER_COUNT, 0x200) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("REGISTER_COUNT"));
  TEST_CHECK(error_mentions("V04"));
  TEST_CHECK(error_mentions("0x200"));
  TEST_CHECK(error_mentions("9 bits"));
  TEST_CHECK(all_zero(q, QMD_DWORDS));
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V05, q, NVHCQ_QMD_CTA_THREAD_DIMENSION2, 256) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("CTA_THREAD_DIMENSION2"));
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

static void test_refuses_absent_field(void) {
  uint32_t q[QMD_DWORDS] = {0};
  unsigned hi, lo;
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V03, q, NVHCQ_QMD_QMD_TYPE, 2) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("QMD_TYPE") && error_mentions("V03"));
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V05, q, NVHCQ_QMD_PROGRAM_ADDRESS_LOWER, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("PROGRAM_ADDRESS_LOWER") && error_mentions("V05"));
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V04, q, NVHCQ_QMD_SM_GLOBAL_CACHING_ENABLE, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V04, q, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_0, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(!nvhcq_qmd_field_range(NVHCQ_QMD_V03, NVHCQ_QMD_QMD_TYPE, &hi, &lo));
  TEST_CHECK(nvhcq_qmd_get(NVHCQ_QMD_V03, q, NVHCQ_QMD_QMD_TYPE) == 0);
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_NONE, q, NVHCQ_QMD_GRID_WIDTH, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("version"));
  TEST_CHECK(nvhcq_qmd_set(NVHCQ_QMD_V04, q, NVHCQ_QMD_FIELD_COUNT, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

static void test_field_names(void) {
  TEST_CHECK(strcmp(nvhcq_qmd_field_name(NVHCQ_QMD_REGISTER_COUNT), "REGISTER_COUNT") == 0);
  TEST_CHECK(strcmp(nvhcq_qmd_field_name(NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + 3),
                    "CONSTANT_BUFFER_VALID_3") == 0);
  TEST_CHECK(strcmp(nvhcq_qmd_field_name(NVHCQ_QMD_RELEASE2_PAYLOAD_UPPER),
                    "RELEASE2_PAYLOAD_UPPER") == 0);
  TEST_CHECK(strcmp(nvhcq_qmd_field_name(NVHCQ_QMD_FIELD_COUNT), "?") == 0);
}

/* No published field straddles a dword, but the writer must handle one (and 64-bit values). */
static void test_bits_spanning_dwords(void) {
  uint32_t q[8] = {0};
  nvhcq_qmd_write_bits(q, 40, 25, 0xffff);
  TEST_CHECK(q[0] == 0xfe000000u && q[1] == 0x1ffu && q[2] == 0);
  TEST_CHECK(nvhcq_qmd_read_bits(q, 40, 25) == 0xffff);
  nvhcq_qmd_write_bits(q, 40, 25, 0x8001);
  TEST_CHECK(q[0] == 0x02000000u && q[1] == 0x100u);
  memset(q, 0, sizeof q);
  nvhcq_qmd_write_bits(q, 100, 37, 0x0123456789abcdefull); /* 64 bits over three dwords */
  TEST_CHECK(nvhcq_qmd_read_bits(q, 100, 37) == 0x0123456789abcdefull);
  const uint64_t wide = 0x0123456789abcdefull;
  TEST_CHECK(q[0] == 0 && q[1] == (uint32_t)(wide << 5) && q[2] == (uint32_t)(wide >> 27));
  TEST_CHECK(q[3] == (uint32_t)(wide >> 59) && q[4] == 0);
  memset(q, 0xff, sizeof q);
  nvhcq_qmd_write_bits(q, 95, 32, 0);
  TEST_CHECK(q[0] == UINT32_MAX && q[1] == 0 && q[2] == 0 && q[3] == UINT32_MAX);
  nvhcq_qmd_write_bits(q, 63, 32, 0x1ffffffffull); /* masked to the range */
  TEST_CHECK(q[1] == UINT32_MAX && q[2] == 0);
}

/* Replay patches grid and block sizes by byte offset, so they must be whole, aligned bytes. */
static void test_dims_are_byte_aligned(void) {
  static const nvhcq_qmd_field dims[] = {NVHCQ_QMD_GRID_WIDTH,
                                         NVHCQ_QMD_GRID_HEIGHT,
                                         NVHCQ_QMD_GRID_DEPTH,
                                         NVHCQ_QMD_CTA_THREAD_DIMENSION0,
                                         NVHCQ_QMD_CTA_THREAD_DIMENSION1,
                                         NVHCQ_QMD_CTA_THREAD_DIMENSION2};
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
      unsigned hi, lo;
      TEST_CHECK(nvhcq_qmd_field_range(versions[i], dims[d], &hi, &lo));
      unsigned width = hi - lo + 1;
      TEST_CHECK(lo % 8 == 0 && (width == 8 || width == 16 || width == 32));
    }
  }
}

static void test_program_address(void) {
  uint32_t q[QMD_DWORDS] = {0};
  const uint64_t addr = 0x7ffe12345670ull;
  TEST_CHECK(nvhcq_qmd_set_program_address(NVHCQ_QMD_V04, q, addr) == NVHCQ_SUCCESS);
  TEST_CHECK(q[38] == 0x12345670u && q[39] == 0x7ffeu); /* 1247:1216, 1272:1248, unshifted */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_program_address(NVHCQ_QMD_V05, q, addr) == NVHCQ_SUCCESS);
  TEST_CHECK(q[32] == (uint32_t)(addr >> 4) && q[33] == (uint32_t)(addr >> 36)); /* >> 4 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_program_address(NVHCQ_QMD_V05, q, addr | 8) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("aligned"));
  TEST_CHECK(nvhcq_qmd_set_program_address(NVHCQ_QMD_V03, q, 1ull << 49) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* upper is 17 bits on V03 */
  TEST_CHECK(error_mentions("PROGRAM_ADDRESS_UPPER") && error_mentions("program address"));
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

static void test_constant_buffer(void) {
  uint32_t q[QMD_DWORDS] = {0};
  const uint64_t addr = 0x7fff00012340ull;
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V04, q, 0, addr, 0x160) == NVHCQ_SUCCESS);
  TEST_CHECK(q[48] == (uint32_t)(addr >> 6));               /* 1567:1536, shifted 6 */
  TEST_CHECK((q[49] & 0x7ffffu) == (uint32_t)(addr >> 38)); /* 1586:1568 */
  TEST_CHECK(q[49] >> 19 == 0x16);                          /* 1599:1587, size >> 4 */
  TEST_CHECK(q[13] == 1);                                   /* VALID(0) at 416 */
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V04, q, 2, 0x1000, 0x161) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_qmd_get(NVHCQ_QMD_V04, q, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0 + 2) ==
             0x17);
  TEST_CHECK(q[13] == (1u | (1u << 8))); /* VALID(2) at 424 */
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V04, q, 1, addr | 0x20, 16) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V04, q, 8, addr, 16) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V03, q, 1, addr | 0x20, 0x10000) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(q[34] == (uint32_t)(addr | 0x20) && (q[35] & 0x1ffff) == 0x7fff); /* unshifted */
  TEST_CHECK(q[35] >> 19 == 0x1000 && q[20] == 2);                             /* VALID(1) 641 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(NVHCQ_QMD_V05, q, 0, addr, 0x20000) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* 13-bit size field */
  TEST_CHECK(error_mentions("CONSTANT_BUFFER_SIZE_SHIFTED4_0") && error_mentions("13 bits"));
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

static void test_release(void) {
  uint32_t q[QMD_DWORDS] = {0};
  const uint64_t addr = 0x7fff12345670ull, payload = 0x1122334455667788ull;
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V04, q, 1, addr, payload) == NVHCQ_SUCCESS);
  TEST_CHECK(q[24] == 0x12345670u && q[25] == 0x7fffu);     /* 799:768, 824:800 */
  TEST_CHECK(q[26] == 0x55667788u && q[27] == 0x11223344u); /* 863:832, 895:864 */
  TEST_CHECK(q[10] == (1u << 16 | 1u << 28)); /* ENABLE(1) 336, PAYLOAD64B(1) 348, size 0 */
  q[10] |= 1u << 20;                          /* REDUCTION_ENABLE(1) 340 gets cleared */
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V04, q, 1, addr, payload) == NVHCQ_SUCCESS);
  TEST_CHECK(q[10] == (1u << 16 | 1u << 28));
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V05, q, 0, addr, payload) == NVHCQ_SUCCESS);
  TEST_CHECK(q[15] == 0x12345670u && q[16] == 0x7fffu);     /* 511:480, 536:512 */
  TEST_CHECK(q[17] == 0x55667788u && q[18] == 0x11223344u); /* 575:544, 607:576 */
  TEST_CHECK(q[9] == (1u | 1u << 12));                      /* ENABLE(0) 288, PAYLOAD64B 300 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V03, q, 0, 1ull << 40, 1) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* V03 release address upper is 8 bits */
  TEST_CHECK(error_mentions("RELEASE0_ADDRESS_UPPER"));
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V04, q, 3, addr, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(all_zero(q, QMD_DWORDS));
  TEST_CHECK(nvhcq_qmd_set_release(NVHCQ_QMD_V03, q, 2, addr & 0xffffffffffull, 7) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(q[52] == 0x12345670u && q[54] == 7); /* 1695:1664, 1759:1728 */
  /* 1703:1696 address upper, ENABLE 1719, PAYLOAD64B 1725, four-word structure size 0 */
  TEST_CHECK(q[53] == (0xffu | 1u << 23 | 1u << 29));
}

/* A release set on the CPU's copy reaches the GPU's copy with the dwords it changed, and only
 * the dwords from its first to its last field are written. */
static void test_copy_release_words(void) {
  for (unsigned i = 0; i < 3; i++)
    for (unsigned slot = 0; slot < 3; slot++) {
      uint32_t cpu[QMD_DWORDS] = {0}, gpu[QMD_DWORDS] = {0};
      TEST_CHECK(nvhcq_qmd_set_release(versions[i], cpu, slot, 0x12345670ull, 0x99) ==
                 NVHCQ_SUCCESS);
      nvhcq_qmd_copy_release_words(versions[i], gpu, cpu, slot);
      TEST_CHECK_MSG(memcmp(cpu, gpu, sizeof cpu) == 0, "V%02d slot %u", (int)versions[i], slot);
      uint32_t marked[QMD_DWORDS];
      for (unsigned w = 0; w < QMD_DWORDS; w++) marked[w] = 0xdeadbeefu;
      nvhcq_qmd_copy_release_words(versions[i], marked, cpu, slot);
      unsigned written = 0;
      for (unsigned w = 0; w < QMD_DWORDS; w++) written += marked[w] != 0xdeadbeefu;
      TEST_CHECK_MSG(written >= 4 && written <= 22, "V%02d slot %u: %u dwords", (int)versions[i],
                     slot, written);
    }
}

static void test_shared_memory(void) {
  uint32_t q[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V04, q, 0x1234, 32 << 10, 32 << 10, 100 << 10) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(((q[18] >> 8) & 0x3ffff) == 0x1234);  /* 601:584, bytes */
  TEST_CHECK(q[19] == (9u | 9u << 12 | 26u << 6)); /* min 613:608, target 625:620, max 619:614 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V05, q, 0x1201, 8 << 10, 64 << 10, 228 << 10) ==
             NVHCQ_SUCCESS);
  TEST_CHECK((q[36] & 0x7ff) == 0x25); /* 1162:1152, ceil(0x1201 / 128) */
  TEST_CHECK(((q[36] >> 11) & 0x3f) == 3 && ((q[36] >> 23) & 0x3f) == 17 &&
             ((q[36] >> 17) & 0x3f) == 58);
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V04, q, 0, 1000, 32 << 10, 32 << 10) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("4096"));
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V04, q, 0, 64 << 10, 32 << 10, 100 << 10) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V04, q, 1u << 18, 0, 0, 256 << 10) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* 18-bit size field */
  TEST_CHECK(error_mentions("SHARED_MEMORY_SIZE"));
  TEST_CHECK(nvhcq_qmd_set_shared_memory(NVHCQ_QMD_V04, q, 0, 0, 0, 256 << 10) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* 65 does not fit 6 bits */
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

static void test_local_memory(void) {
  uint32_t q[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_set_local_memory(NVHCQ_QMD_V05, q, 0, 0x641) == NVHCQ_SUCCESS);
  TEST_CHECK(q[37] == 0x65u << 16); /* 1215:1200, ceil(0x641 / 16) */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_local_memory(NVHCQ_QMD_V04, q, 0x10, 0x641) == NVHCQ_SUCCESS);
  TEST_CHECK(q[16] == 0x10 && (q[17] & 0xffffff) == 0x641); /* 535:512, 567:544 */
}

static void test_dependent(void) {
  uint32_t q[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_set_dependent(NVHCQ_QMD_V04, q, 0x1234567800ull) == NVHCQ_SUCCESS);
  TEST_CHECK(q[14] == 0x12345678u);                      /* 479:448, address >> 8 */
  TEST_CHECK(q[11] == (1u << 16 | 1u << 17 | 1u << 20)); /* enable 368, action 371:369, 372 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_dependent(NVHCQ_QMD_V05, q, 0x100) == NVHCQ_SUCCESS);
  TEST_CHECK(q[12] == 1 && q[10] == (1u << 16 | 1u << 17 | 1u << 20)); /* 415:384; 336..340 */
  memset(q, 0, sizeof q);
  TEST_CHECK(nvhcq_qmd_set_dependent(NVHCQ_QMD_V04, q, 0x1234567880ull) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_qmd_set_dependent(NVHCQ_QMD_V04, q, 1ull << 40) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(error_mentions("DEPENDENT_QMD0_POINTER"));
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

/* The end-of-grid fence: CWD_MEMBAR_TYPE V04 1137:1136, V05 625:624, V03 369:368; task chasing
 * V04 382, V05 350 (V03 has none). */
static void test_fence(void) {
  uint32_t q[QMD_DWORDS] = {0};
  nvhcq_qmd_set_fence(NVHCQ_QMD_V04, q, NVHCQ_FENCE_DEVICE);
  TEST_CHECK(q[35] == 3u << 16 && q[11] == 1u << 30);
  nvhcq_qmd_set_fence(NVHCQ_QMD_V04, q, NVHCQ_FENCE_SYSTEM);
  TEST_CHECK(q[35] == 1u << 16 && q[11] == 0);
  memset(q, 0, sizeof q);
  nvhcq_qmd_set_fence(NVHCQ_QMD_V05, q, NVHCQ_FENCE_DEVICE);
  TEST_CHECK(q[19] == 3u << 16 && q[10] == 1u << 30);
  memset(q, 0, sizeof q);
  nvhcq_qmd_set_fence(NVHCQ_QMD_V03, q, NVHCQ_FENCE_DEVICE);
  TEST_CHECK(q[11] == 3u << 16);
  q[11] = 0;
  TEST_CHECK(all_zero(q, QMD_DWORDS));
}

/* The successor's bank 0 goes to slot 5 with prefetch POST (V04 418:417 + 4i; address and size
 * 1567:1536 / 1586:1568 / 1599:1587 + 64i), its program to PROGRAM_PREFETCH with type POST. */
static void test_prefetch_successor(void) {
  uint32_t q[QMD_DWORDS] = {0}, next[QMD_DWORDS] = {0}, ring[QMD_DWORDS] = {0};
  const nvhcq_qmd_version v = NVHCQ_QMD_V04;
  TEST_CHECK(nvhcq_qmd_set_constant_buffer(v, next, 0, 0x123456780ull, 0x300) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_qmd_set(v, next, NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, 0xabcd) == 0);
  TEST_CHECK(nvhcq_qmd_set(v, next, NVHCQ_QMD_PROGRAM_PREFETCH_SIZE, 0x15) == 0);
  TEST_CHECK(nvhcq_qmd_prefetch_successor(v, q, next, NVHCQ_QMD_SUCCESSOR_BANK) == 1);
  TEST_CHECK(nvhcq_qmd_get(v, q, NVHCQ_QMD_CONSTANT_BUFFER_VALID_5) == 1);
  TEST_CHECK(((q[13] >> 21) & 3) == 2); /* bits 438:437 */
  TEST_CHECK(q[48 + 10] == nvhcq_qmd_get(v, next, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0));
  TEST_CHECK(nvhcq_qmd_get(v, q, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_5) == 0x30);
  TEST_CHECK(q[42] == 0xabcd && nvhcq_qmd_get(v, q, NVHCQ_QMD_PROGRAM_PREFETCH_SIZE) == 0x15);
  TEST_CHECK(nvhcq_qmd_get(v, q, NVHCQ_QMD_PROGRAM_PREFETCH_TYPE) == 1);
  /* A kernel that binds bank 5 itself keeps it. */
  TEST_CHECK(nvhcq_qmd_prefetch_successor(v, q, next, NVHCQ_QMD_SUCCESSOR_BANK) == 0);
  /* V03 has no prefetch fields. */
  uint32_t old[QMD_DWORDS] = {0};
  TEST_CHECK(nvhcq_qmd_prefetch_successor(NVHCQ_QMD_V03, old, next, 5) == 0);
  TEST_CHECK(all_zero(old, QMD_DWORDS));
  /* Chaining rewrites exactly the dwords that changed, nothing else. */
  TEST_CHECK(nvhcq_qmd_set_dependent(v, q, 0x1000) == NVHCQ_SUCCESS);
  nvhcq_qmd_set_fence(v, q, NVHCQ_FENCE_DEVICE);
  q[36] = 0x80; /* block dims: not a chain word */
  nvhcq_qmd_copy_chain_words(v, ring, q);
  TEST_CHECK(ring[36] == 0 && ring[11] == q[11] && ring[13] == q[13] && ring[14] == q[14]);
  TEST_CHECK(ring[35] == q[35] && ring[42] == q[42] && ring[43] == q[43] && ring[58] == q[58]);
}

/* The unchecked per-launch writer sets exactly the bits the checked setters set. */
static void test_launch_writer_matches_setters(void) {
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    nvhcq_qmd_version v = versions[i];
    nvhcq_qmd_launch_layout l;
    TEST_CHECK(nvhcq_qmd_launch_layout_for(v, &l) == 1);
    nvhcq_qmd_launch x = {.grid = {0x7fffffff, 65535, 3},
                          .block = {1024, 1, 1},
                          .shared_bytes = 101 * 1024 + 128,
                          .config_bytes = {16u << 10, 132u << 10, 228u << 10},
                          .local_high_bytes = 1600,
                          .cbank0_address = 0x7f04b6010900ull,
                          .cbank0_bytes = 0x300};
    uint32_t a[QMD_DWORDS] = {0}, b[QMD_DWORDS] = {0};
    nvhcq_qmd_write_launch(&l, a, &x);
    for (int d = 0; d < 3; d++) {
      TEST_CHECK(nvhcq_qmd_set(v, b, NVHCQ_QMD_GRID_WIDTH + d, x.grid[d]) == 0);
      TEST_CHECK(nvhcq_qmd_set(v, b, NVHCQ_QMD_CTA_THREAD_DIMENSION0 + d, x.block[d]) == 0);
    }
    TEST_CHECK(nvhcq_qmd_set_shared_memory(v, b, x.shared_bytes, x.config_bytes[0],
                                           x.config_bytes[1], x.config_bytes[2]) == 0);
    TEST_CHECK(nvhcq_qmd_set_local_memory(v, b, 0, x.local_high_bytes) == 0);
    TEST_CHECK(nvhcq_qmd_set_constant_buffer(v, b, 0, x.cbank0_address, x.cbank0_bytes) == 0);
    TEST_CHECK_MSG(memcmp(a, b, sizeof a) == 0, "QMD V%02d", (int)v);
  }
  nvhcq_qmd_launch_layout l;
  TEST_CHECK(nvhcq_qmd_launch_layout_for(NVHCQ_QMD_NONE, &l) == 0);
}

TEST_MAIN(TEST(test_version_for_class), TEST(test_size_per_version),
          TEST(test_every_field_sets_exactly_its_bits), TEST(test_round_trip_all_fields),
          TEST(test_fields_do_not_overlap), TEST(test_v04_ranges_from_header),
          TEST(test_v03_v05_ranges_from_header), TEST(test_v04_known_values_in_dwords),
          TEST(test_refuses_oversized_value), TEST(test_refuses_absent_field),
          TEST(test_field_names), TEST(test_bits_spanning_dwords), TEST(test_dims_are_byte_aligned),
          TEST(test_program_address), TEST(test_constant_buffer), TEST(test_release),
          TEST(test_copy_release_words), TEST(test_shared_memory), TEST(test_local_memory),
          TEST(test_dependent), TEST(test_fence), TEST(test_prefetch_successor),
          TEST(test_launch_writer_matches_setters))
