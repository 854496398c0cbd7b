/* The TMA tensor-map encoder against libcuda: every entry of a table libcuda produced on an H200
 * (bench/tma_probe.c: parameters, then libcuda's result and its 128 bytes) must give the same
 * acceptance and the same bytes here, and each refusal must name its rule. */
#include <inttypes.h>
#include <stdint.h>

#include "nvhcq.h"
#include "test.h"

#ifndef NVHCQ_TMA_TABLE
#define NVHCQ_TMA_TABLE ""
#endif

/* One table line: its form ('T' tiled, 'I' im2col), the descriptor, libcuda's result. */
typedef struct entry {
  char form;
  nvhcq_tensor_tiled t;
  nvhcq_tensor_im2col i;
  int rc;
  int has_map;
  uint8_t map[128];
} entry;

static int next_hex(char **p, uint64_t *v) {
  char *end;
  *v = strtoull(*p, &end, 16);
  if (end == *p) return -1;
  *p = end;
  return 0;
}

/* Reads the next hex number of the line into x (the table prints corners as 32-bit two's
 * complement). */
#define READ(x)                                                                                    \
  do {                                                                                             \
    uint64_t v_;                                                                                   \
    if (next_hex(&p, &v_)) return -1;                                                              \
    (x) = v_;                                                                                      \
  } while (0)

static int parse_line(char *line, entry *e) {
  memset(e, 0, sizeof *e);
  char *p = line + 1;
  e->form = line[0];
  uint64_t dt, rank, addr;
  if (next_hex(&p, &dt) || next_hex(&p, &rank) || next_hex(&p, &addr)) return -1;
  unsigned k = rank >= 1 && rank <= 5 ? (unsigned)rank : rank > 5 ? 5 : 0;
  uint64_t dims[5] = {0}, strides[4] = {0};
  uint32_t box[5] = {0}, estr[5] = {0}, ch = 0, px = 0;
  int32_t lower[3] = {0}, upper[3] = {0};
  for (unsigned i = 0; i < k; i++) READ(dims[i]);
  for (unsigned i = 0; i + 1 < k; i++) READ(strides[i]);
  if (e->form == 'I') {
    for (unsigned i = 0; i + 2 < k; i++) READ(lower[i]);
    for (unsigned i = 0; i + 2 < k; i++) READ(upper[i]);
    READ(ch);
    READ(px);
  } else {
    for (unsigned i = 0; i < k; i++) READ(box[i]);
  }
  for (unsigned i = 0; i < k; i++) READ(estr[i]);
  uint64_t en[4];
  for (int i = 0; i < 4; i++)
    if (next_hex(&p, &en[i])) return -1;
  e->rc = (int)strtol(p, &p, 10);
  while (*p == ' ') p++;
  if (*p != '-') {
    for (int i = 0; i < 128; i++) {
      unsigned b;
      if (sscanf(p + 2 * i, "%2x", &b) != 1) return -1;
      e->map[i] = (uint8_t)b;
    }
    e->has_map = 1;
  }
  if (e->form == 'I') {
    nvhcq_tensor_im2col d = {.struct_size = sizeof d,
                             .dtype = (uint32_t)dt,
                             .rank = (uint32_t)rank,
                             .address = addr,
                             .channels = ch,
                             .pixels = px,
                             .interleave = (uint32_t)en[0],
                             .swizzle = (uint32_t)en[1],
                             .l2_promotion = (uint32_t)en[2],
                             .oob_fill = (uint32_t)en[3]};
    memcpy(d.dims, dims, sizeof dims), memcpy(d.strides, strides, sizeof strides);
    memcpy(d.lower, lower, sizeof lower), memcpy(d.upper, upper, sizeof upper);
    memcpy(d.element_strides, estr, sizeof estr);
    e->i = d;
  } else {
    nvhcq_tensor_tiled d = {.struct_size = sizeof d,
                            .dtype = (uint32_t)dt,
                            .rank = (uint32_t)rank,
                            .address = addr,
                            .interleave = (uint32_t)en[0],
                            .swizzle = (uint32_t)en[1],
                            .l2_promotion = (uint32_t)en[2],
                            .oob_fill = (uint32_t)en[3]};
    memcpy(d.dims, dims, sizeof dims), memcpy(d.strides, strides, sizeof strides);
    memcpy(d.box, box, sizeof box), memcpy(d.element_strides, estr, sizeof estr);
    e->t = d;
  }
  return 0;
}

static int encode(const entry *e, nvhcq_tensor_map *m) {
  return e->form == 'I' ? (int)nvhcq_tensor_map_encode_im2col(m, &e->i)
                        : (int)nvhcq_tensor_map_encode_tiled(m, &e->t);
}

/* Every recorded set: accepted where libcuda accepted it, with its bytes; refused where it was
 * refused. */
static void test_libcuda_table(void) {
  FILE *f = fopen(NVHCQ_TMA_TABLE, "r");
  if (!f) TEST_SKIP("the recorded table was not extracted into the build directory");
  static char line[4096];
  unsigned counts[2][2] = {{0}}, wrong = 0, lines = 0;
  while (fgets(line, sizeof line, f)) {
    entry e;
    lines++;
    if (parse_line(line, &e)) {
      TEST_CHECK_MSG(0, "table line %u does not parse", lines);
      continue;
    }
    nvhcq_tensor_map m;
    memset(&m, 0, sizeof m);
    int ours = encode(&e, &m), lib_ok = e.rc == 0;
    counts[e.form == 'I'][lib_ok]++;
    int same = lib_ok ? ours == 0 && !memcmp(m.bytes, e.map, 128) : ours != 0;
    if (!same && wrong++ < 5)
      TEST_CHECK_MSG(0, "line %u (%c): libcuda %s, nvhcq %s%s", lines, e.form,
                     lib_ok ? "accepts" : "refuses", ours ? "refuses: " : "accepts",
                     ours ? nvhcq_last_error() : (lib_ok ? " with other bytes" : ""));
  }
  fclose(f);
  TEST_CHECK_MSG(wrong == 0, "%u of %u entries differ from libcuda", wrong, lines);
  /* The bar: at least 5000 valid tiled sets. */
  TEST_CHECK(counts[0][1] >= 5000);
  printf("  tiled: %u accepted, %u refused; im2col: %u accepted, %u refused (as libcuda)\n",
         counts[0][1], counts[0][0], counts[1][1], counts[1][0]);
}

static nvhcq_tensor_tiled good_tiled(void) {
  nvhcq_tensor_tiled d = {.struct_size = sizeof d,
                          .dtype = NVHCQ_TENSOR_FLOAT16,
                          .rank = 2,
                          .address = 0x7f0000000000ull,
                          .dims = {4096, 4096},
                          .strides = {8192},
                          .box = {64, 128},
                          .element_strides = {1, 1},
                          .swizzle = NVHCQ_TENSOR_SWIZZLE_128B};
  return d;
}

/* Each rule refused with a message naming it, and the map left as it was. */
static void test_refusals_name_the_rule(void) {
  static const struct {
    int field;
    uint64_t value;
    const char *words;
  } cases[] = {
      {0, 13, "dtype 13"},
      {1, 0, "rank 0"},
      {1, 6, "rank 6"},
      {2, 0x7f0000000008ull, "aligned"},
      {3, 0, "dims[0] = 0"},
      {4, 8200, "multiple of 16"},
      {4, 1ull << 40, "below 2^40"},
      {5, 0, "box[0] = 0"},
      {5, 72, "swizzle span"},
      {6, 257, "box[1] = 257"},
      {7, 9, "element_strides[0] = 9"},
      {8, 1, "rank 3..5"},
      {9, 1, "NaN out-of-bounds fill needs a floating-point"},
      {10, 4, "swizzle 4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nvhcq_tensor_tiled d = good_tiled();
    uint64_t v = cases[i].value;
    switch (cases[i].field) {
    case 0:
      d.dtype = (uint32_t)v;
      break;
    case 1:
      d.rank = (uint32_t)v;
      break;
    case 2:
      d.address = v;
      break;
    case 3:
      d.dims[0] = v;
      break;
    case 4:
      d.strides[0] = v;
      break;
    case 5:
      d.box[0] = (uint32_t)v;
      break;
    case 6:
      d.box[1] = (uint32_t)v;
      break;
    case 7:
      d.element_strides[0] = (uint32_t)v;
      break;
    case 8:
      d.interleave = (uint32_t)v;
      break;
    case 9:
      d.oob_fill = 1, d.dtype = NVHCQ_TENSOR_UINT16;
      break;
    case 10:
      d.swizzle = (uint32_t)v;
      break;
    }
    nvhcq_tensor_map m;
    memset(&m, 0x5a, sizeof m);
    nvhcq_status s = nvhcq_tensor_map_encode_tiled(&m, &d);
    TEST_CHECK_MSG(s == NVHCQ_ERROR_INVALID_ARGUMENT, "case %zu", i);
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), cases[i].words), "case %zu: \"%s\" lacks \"%s\"", i,
                   nvhcq_last_error(), cases[i].words);
    TEST_CHECK(m.bytes[0] == 0x5a && m.bytes[127] == 0x5a);
  }
  nvhcq_tensor_tiled d = good_tiled();
  nvhcq_tensor_map m;
  TEST_CHECK(nvhcq_tensor_map_encode_tiled(&m, &d) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_tensor_map_encode_tiled(NULL, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_tensor_map_encode_tiled(&m, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  d.struct_size = 8;
  TEST_CHECK(nvhcq_tensor_map_encode_tiled(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "struct_size"));
  /* A box too large for shared memory: 256 x 256 x 8 bytes. */
  d = good_tiled();
  d.dtype = NVHCQ_TENSOR_FLOAT64, d.swizzle = 0, d.box[0] = 256, d.box[1] = 256;
  d.strides[0] = 1 << 20;
  TEST_CHECK(nvhcq_tensor_map_encode_tiled(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "more than the 233472 of shared memory"));
}

static void test_im2col_refusals(void) {
  nvhcq_tensor_im2col d = {.struct_size = sizeof d,
                           .dtype = NVHCQ_TENSOR_FLOAT16,
                           .rank = 4,
                           .address = 0x7f0000000000ull,
                           .dims = {64, 32, 32, 8},
                           .strides = {128, 4096, 131072},
                           .lower = {-1, -1},
                           .upper = {1, 1},
                           .channels = 64,
                           .pixels = 128,
                           .element_strides = {1, 1, 1, 1}};
  nvhcq_tensor_map m;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_SUCCESS);
  TEST_CHECK((m.bytes[8] & 1) == 1); /* the im2col bit */
  d.lower[0] = -200;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "outside -128..127"));
  d.lower[0] = -1, d.interleave = NVHCQ_TENSOR_INTERLEAVE_16B;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "not supported"));
  d.interleave = 0, d.pixels = 1025;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  d.pixels = 16, d.dims[1] = 1, d.lower[0] = 0, d.upper[0] = -1;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "empty window"));
}

/* A replaced address gives the map encoding gives with it (im2col too); a misaligned one is
 * refused as encoding refuses it, and leaves the map as it was. */
static void test_replace_address(void) {
  nvhcq_tensor_im2col d = {.struct_size = sizeof d,
                           .dtype = NVHCQ_TENSOR_FLOAT16,
                           .rank = 4,
                           .address = 0x7f0000000000ull,
                           .dims = {64, 32, 32, 8},
                           .strides = {128, 4096, 131072},
                           .lower = {-1, -1},
                           .upper = {1, 1},
                           .channels = 64,
                           .pixels = 128,
                           .element_strides = {1, 1, 1, 1}};
  nvhcq_tensor_map m, want, before;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&m, &d) == NVHCQ_SUCCESS);
  d.address = 0x123456789a0ull;
  TEST_CHECK(nvhcq_tensor_map_encode_im2col(&want, &d) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_tensor_map_replace_address(&m, d.address) == NVHCQ_SUCCESS);
  TEST_CHECK(!memcmp(&m, &want, sizeof m));
  before = m;
  TEST_CHECK(nvhcq_tensor_map_replace_address(&m, d.address + 8) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "16-byte aligned"));
  TEST_CHECK(!memcmp(&m, &before, sizeof m));
  TEST_CHECK(nvhcq_tensor_map_replace_address(NULL, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
}

TEST_MAIN(TEST(test_libcuda_table), TEST(test_refusals_name_the_rule), TEST(test_im2col_refusals),
          TEST(test_replace_address))
