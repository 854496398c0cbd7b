/* Texture headers, samplers and the block-linear layout against what libcuda wrote on an H200
 * (driver 580.159.04; hw/texture.c says how they were found): the same words for the same
 * objects, addresses included, and the measured texel placement of a 345 x 233 32-bit array. */
#include <string.h>

#include "hw/texture.h"
#include "test.h"

typedef struct {
  const char *what;
  nvhcq_texel_format f;
  uint32_t w, h, d;
  int layered, surface;
  nvhcq_sampling s;
  uint64_t address;
  uint32_t want[8];
} image_case;

#define F32                                                                                        \
  { 32, NVHCQ_TEXEL_KIND_FLOAT, 1 }
#define F32X4                                                                                      \
  { 32, NVHCQ_TEXEL_KIND_FLOAT, 4 }
#define U8X4                                                                                       \
  { 8, NVHCQ_TEXEL_KIND_UINT, 4 }
#define CLAMP                                                                                      \
  { 2, 2, 2 }

static const image_case images[] = {
    {"2D float, linear, wrap, normalized",
     F32,
     777,
     555,
     0,
     0,
     0,
     {{0, 0, 0}, 1, 1, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f3e00000ull,
     {0xf3e00000, 0x7f00, 0x70020, 0x300f2002, 0x11c20308, 0x22a, 0x03000000, 0}},
    {"2D u8x4 read as [0,1]",
     U8X4,
     333,
     222,
     0,
     0,
     0,
     {{3, 3, 3}, 0, 0, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f8800000ull,
     {0xf8800000, 0x7f00, 0x70020, 0x30080b1a, 0x11c0014c, 0xdd, 0x03000000, 0}},
    {"2D u8x4 read as integers",
     U8X4,
     334,
     223,
     0,
     0,
     0,
     {CLAMP, 0, 0, 1, 0, {0}, 0, 0, 0, 0},
     0x7f00f8854000ull,
     {0xf8854000, 0x7f00, 0x70020, 0x30086b1a, 0x11c0014d, 0xde, 0x03000000, 0}},
    {"3D float4, normalized",
     F32X4,
     37,
     29,
     19,
     0,
     0,
     {CLAMP, 1, 1, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f8d54000ull,
     {0xf8d54000, 0x7f00, 0x70100, 0x30012b1a, 0x10820024, 0x24001c, 0x03000000, 0}},
    {"3D u8",
     {8, NVHCQ_TEXEL_KIND_UINT, 1},
     301,
     129,
     70,
     0,
     0,
     {CLAMP, 0, 0, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f9000000ull,
     {0xf9000000, 0x7f00, 0x70100, 0x301d0002, 0x1080012c, 0x8a0080, 0x03000000, 0}},
    {"1D half2",
     {16, NVHCQ_TEXEL_KIND_FLOAT, 2},
     1234,
     0,
     0,
     0,
     0,
     {CLAMP, 0, 0, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f3fea000ull,
     {0xf3fea000, 0x7f00, 0x70000, 0x300c201a, 0x11c004d1, 0, 0x03000000, 0}},
    {"1D layered float",
     F32,
     513,
     0,
     5,
     1,
     0,
     {CLAMP, 0, 0, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f89c8000ull,
     {0xf89c8000, 0x7f00, 0x70000, 0x300f2002, 0x11000200, 0x80000, 0x03000000, 0}},
    {"surface over a 2D u32",
     {32, NVHCQ_TEXEL_KIND_UINT, 1},
     345,
     233,
     0,
     0,
     1,
     {CLAMP, 0, 0, 0, 0, {0}, 0, 0, 0, 0},
     0x7f00f9400000ull,
     {0xf9400000, 0x7f00, 0x20, 0x300f6002, 0x11c00158, 0xe8, 0, 0}},
};

static void t_image_headers(void) {
  for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
    const image_case *c = &images[i];
    nvhcq_image_layout l;
    nvhcq_image_layout_for(&l, c->f, c->w, c->h, c->d, c->layered);
    uint32_t tic[8];
    nvhcq_tic_image(tic, &l, c->address, c->surface ? NULL : &c->s, c->surface, 1);
    for (int k = 0; k < 8; k++)
      TEST_CHECK_MSG(tic[k] == c->want[k], "%s: word %d 0x%08x, libcuda 0x%08x", c->what, k, tic[k],
                     c->want[k]);
  }
}

static void t_memory_headers(void) {
  uint32_t tic[8];
  nvhcq_tic_linear(tic, (nvhcq_texel_format)F32, 0x7f00f9800000ull, 4099);
  const uint32_t lin[8] = {0xf9800000, 0x7f00, 0x1002, 0x500f2002, 0, 0, 0, 0};
  TEST_CHECK(!memcmp(tic, lin, sizeof lin));
  nvhcq_sampling s = {{0, 0, 0}, 1, 0, 0, 0, {0}, 0, 0, 0, 0};
  nvhcq_tic_pitch(tic, (nvhcq_texel_format)U8X4, 0x7f00f9810000ull, 101, 77, 512, &s);
  const uint32_t p2d[8] = {0xf9810000, 0x7f00, 0x60010,    0x20080b1a,
                           0x11c00064, 0x4c,   0x03000000, 0};
  for (int k = 0; k < 8; k++)
    TEST_CHECK_MSG(tic[k] == p2d[k], "pitch: word %d 0x%08x, libcuda 0x%08x", k, tic[k], p2d[k]);
}

static void t_sampler(void) {
  nvhcq_sampling s = {{3, 3, 3}, 0, 0, 0, 0, {0.1234f, 0.4321f, 0.6789f, 0.9876f}, 0, 0, 0, 0};
  uint32_t tsc[8];
  nvhcq_tsc(tsc, &s);
  const uint32_t want[8] = {0x20db, 0x51, 0, 0, 0x3dfcb924, 0x3edd3c36, 0x3f2dcc64, 0x3f7cd35b};
  for (int k = 0; k < 8; k++)
    TEST_CHECK_MSG(tsc[k] == want[k], "sampler word %d 0x%08x, libcuda 0x%08x", k, tsc[k], want[k]);
  s.linear = 1;
  nvhcq_tsc(tsc, &s);
  TEST_CHECK(tsc[1] == 0x62); /* MAG and MIN linear, MIP none */
}

/* Block heights libcuda chose by height, and block depths by depth. */
static void t_block_sizes(void) {
  static const uint32_t heights[][2] = {{1, 0},  {5, 0},   {17, 1}, {33, 2},
                                        {65, 3}, {222, 4}, {555, 4}};
  for (size_t i = 0; i < sizeof heights / sizeof heights[0]; i++) {
    nvhcq_image_layout l;
    nvhcq_image_layout_for(&l, (nvhcq_texel_format)F32, 300, heights[i][0], 0, 0);
    TEST_CHECK_MSG(l.shape.log2_bh == heights[i][1], "height %u: 2^%u GOBs, libcuda 2^%u",
                   heights[i][0], l.shape.log2_bh, heights[i][1]);
  }
  static const uint32_t depths[][2] = {{2, 1}, {19, 4}, {33, 4}, {70, 4}};
  for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
    nvhcq_image_layout l;
    nvhcq_image_layout_for(&l, (nvhcq_texel_format)F32, 64, 64, depths[i][0], 0);
    TEST_CHECK(l.shape.log2_bd == depths[i][1] && l.shape.log2_bh == 0);
  }
}

/* Where texels of libcuda's 345 x 233 u32 array lay (word offsets read back on the H200). */
static void t_layout(void) {
  nvhcq_image_layout l;
  nvhcq_image_layout_for(&l, (nvhcq_texel_format){32, NVHCQ_TEXEL_KIND_UINT, 1}, 345, 233, 0, 0);
  static const uint32_t at[][3] = {
      {0, 0, 0},     {4, 0, 64},       {8, 0, 256},      {12, 0, 320},   {16, 0, 8192},
      {0, 1, 16},    {0, 2, 32},       {0, 4, 128},      {0, 8, 512},    {0, 16, 1024},
      {0, 64, 4096}, {0, 128, 180224}, {0, 232, 186880}, {64, 0, 32768}, {128, 0, 65536},
  };
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    uint64_t o = nvhcq_bl_offset(&l.shape, at[i][0] * 4, at[i][1], 0);
    TEST_CHECK_MSG(o == at[i][2], "texel (%u, %u) at byte %llu, libcuda's at %u", at[i][0],
                   at[i][1], (unsigned long long)o, at[i][2]);
  }
}

TEST_MAIN(TEST(t_image_headers), TEST(t_memory_headers), TEST(t_sampler), TEST(t_block_sizes),
          TEST(t_layout))
