/* Texture headers (TIC), samplers (TSC) and block-linear image layouts for Hopper's V2 headers.
 *
 * How the values were fixed: a scratch program on the H200 (driver 580.159.04) made CUDA arrays
 * of many formats and shapes with libcuda, texture and surface objects over them, over linear
 * memory and over pitched 2D memory, then found the headers libcuda wrote by searching its own
 * process memory for the arrays' dimensions and the sampler's border colour. The words built here
 * are those, field by field (addresses aside): the GOB quality bits and anisotropy spread
 * functions libcuda sets, TWO_D_NO_MIPMAP for 1D and 2D arrays, blocks 2^n GOBs high below half
 * the height (at most 16) for 2D, and for 3D one GOB high and 2^floor(log2 depth) deep (at most
 * 16). Handles are header indices starting at 1, the sampler at the same index (the QMD's
 * SAMPLER_INDEX = VIA_HEADER_INDEX), as libcuda's object values were 1, 2, 3, ... */
#include "hw/texture.h"

#include <string.h>

#include "abi/texture.h"

/* Writes `value` into bits hi:lo (inclusive, within one dword) of `w`. */
static void put(uint32_t *w, unsigned hi, unsigned lo, uint32_t value) {
  unsigned width = hi - lo + 1;
  uint32_t mask = width == 32 ? 0xffffffffu : (1u << width) - 1u;
  w[lo / 32] |= (value & mask) << (lo % 32);
}

static uint32_t log2_floor(uint32_t v) {
  uint32_t n = 0;
  while (v >>= 1) n++;
  return n;
}

void nvhcq_image_layout_for(nvhcq_image_layout *l, nvhcq_texel_format format, uint32_t width,
                            uint32_t height, uint32_t depth, int layered) {
  memset(l, 0, sizeof *l);
  l->format = format;
  l->width = width;
  l->one_d = height == 0;
  l->height = height ? height : 1;
  l->three_d = depth > 0 && !layered;
  l->layered = layered;
  l->depth = depth ? depth : 1;
  uint32_t bh = 0, bd = 0;
  if (l->three_d) {
    bd = log2_floor(l->depth);
    bd = bd > 4 ? 4 : bd;
  } else {
    uint32_t gobs = (l->height - 1) / NVHCQ_GOB_ROWS;
    while (bh < 4 && (2u << bh) <= gobs) bh++;
  }
  uint64_t row = (uint64_t)width * nvhcq_texel_bytes(format);
  uint32_t block_rows = NVHCQ_GOB_ROWS << bh, block_slices = 1u << bd;
  l->shape.gobs_x = (uint32_t)((row + NVHCQ_GOB_BYTES_X - 1) / NVHCQ_GOB_BYTES_X);
  l->shape.blocks_y = (l->height + block_rows - 1) / block_rows;
  l->shape.log2_bh = bh;
  l->shape.log2_bd = bd;
  uint64_t blocks_z = (l->depth + block_slices - 1) / block_slices;
  l->align = NVHCQ_GOB_BYTES << (bh + bd);
  l->bytes = (uint64_t)l->shape.gobs_x * l->shape.blocks_y * blocks_z * l->align;
}

static uint32_t log2_ceil(uint32_t v) {
  uint32_t n = 0;
  while ((1u << n) < v) n++;
  return n;
}

static uint32_t minify(uint32_t v, uint32_t level) {
  v >>= level;
  return v ? v : 1;
}

/* One level's layout: its dims and block (the base's, clamped to it), in whole blocks. */
static void level_of(const nvhcq_image_layout *base, uint32_t level, nvhcq_image_layout *l) {
  *l = *base;
  l->width = minify(base->width, level);
  l->height = base->one_d ? 1 : minify(base->height, level);
  l->depth = base->three_d ? minify(base->depth, level) : base->depth;
  uint32_t gobs_y = (l->height + NVHCQ_GOB_ROWS - 1) / NVHCQ_GOB_ROWS;
  uint32_t bh = log2_ceil(gobs_y), bd = base->three_d ? log2_ceil(l->depth) : 0;
  l->shape.log2_bh = bh < base->shape.log2_bh ? bh : base->shape.log2_bh;
  l->shape.log2_bd = bd < base->shape.log2_bd ? bd : base->shape.log2_bd;
  uint64_t row = (uint64_t)l->width * nvhcq_texel_bytes(l->format);
  uint32_t block_rows = NVHCQ_GOB_ROWS << l->shape.log2_bh, block_slices = 1u << l->shape.log2_bd;
  l->shape.gobs_x = (uint32_t)((row + NVHCQ_GOB_BYTES_X - 1) / NVHCQ_GOB_BYTES_X);
  l->shape.blocks_y = (l->height + block_rows - 1) / block_rows;
  l->align = NVHCQ_GOB_BYTES << (l->shape.log2_bh + l->shape.log2_bd);
  uint64_t blocks_z = (l->depth + block_slices - 1) / block_slices;
  l->bytes = (uint64_t)l->shape.gobs_x * l->shape.blocks_y * blocks_z * l->align;
}

void nvhcq_image_level_layout(const nvhcq_image_layout *base, uint32_t level,
                              nvhcq_image_layout *level_layout, uint64_t *offset) {
  *offset = nvhcq_image_mip_bytes(base, level);
  level_of(base, level, level_layout);
}

uint64_t nvhcq_image_mip_bytes(const nvhcq_image_layout *base, uint32_t levels) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < levels; i++) {
    nvhcq_image_layout l;
    level_of(base, i, &l);
    bytes += l.bytes;
  }
  return bytes;
}

uint32_t nvhcq_image_max_levels(uint32_t width, uint32_t height, uint32_t depth) {
  uint32_t most = width > height ? width : height;
  most = most > depth ? most : depth;
  return 1 + log2_floor(most ? most : 1);
}

/* COMPONENTS for bits per channel x channels. */
static uint32_t components(nvhcq_texel_format f) {
  static const uint32_t table[3][3] = {
      {NVHCQ_TIC_R8, NVHCQ_TIC_G8R8, NVHCQ_TIC_A8B8G8R8},
      {NVHCQ_TIC_R16, NVHCQ_TIC_R16_G16, NVHCQ_TIC_R16_G16_B16_A16},
      {NVHCQ_TIC_R32, NVHCQ_TIC_R32_G32, NVHCQ_TIC_R32_G32_B32_A32},
  };
  unsigned b = f.bits == 8    ? 0
               : f.bits == 16 ? 1
                              : 2,
           c = f.channels == 1   ? 0
               : f.channels == 2 ? 1
                                 : 2;
  return table[b][c];
}

static uint32_t data_type(nvhcq_texel_format f, int read_as_integer) {
  if (f.kind == NVHCQ_TEXEL_KIND_FLOAT) return NVHCQ_TIC_TYPE_FLOAT;
  int integer = read_as_integer || f.bits == 32;
  if (f.kind == NVHCQ_TEXEL_KIND_SINT) return integer ? NVHCQ_TIC_TYPE_SINT : NVHCQ_TIC_TYPE_SNORM;
  return integer ? NVHCQ_TIC_TYPE_UINT : NVHCQ_TIC_TYPE_UNORM;
}

/* Dword 3, common to every header: sources R, G, B, A for the channels there are (zero for the
 * rest), data type, components, header version. */
static uint32_t format_word(nvhcq_texel_format f, int read_as_integer, uint32_t version,
                            unsigned comp_hi) {
  uint32_t w[8] = {0};
  for (uint32_t c = 0; c < 4; c++)
    put(w, 98 + 3 * c, 96 + 3 * c, c < f.channels ? NVHCQ_TIC_SOURCE_R + c : NVHCQ_TIC_SOURCE_ZERO);
  put(w, 111, 108, data_type(f, read_as_integer));
  put(w, comp_hi, 112, components(f));
  put(w, 127, 124, version);
  return w[3];
}

static uint32_t texture_type(const nvhcq_image_layout *l, uint32_t levels) {
  if (l->three_d) return NVHCQ_TIC_THREE_D;
  if (l->layered) return l->one_d ? NVHCQ_TIC_ONE_D_ARRAY : NVHCQ_TIC_TWO_D_ARRAY;
  return levels > 1 ? NVHCQ_TIC_TWO_D : NVHCQ_TIC_TWO_D_NO_MIPMAP;
}

void nvhcq_tic_image(uint32_t tic[8], const nvhcq_image_layout *l, uint64_t address,
                     const nvhcq_sampling *s, int surface, uint32_t levels) {
  memset(tic, 0, NVHCQ_TIC_BYTES);
  put(tic, 31, 9, (uint32_t)(address >> 9));
  put(tic, 56, 32, (uint32_t)(address >> 32));
  put(tic, 69, 67, l->shape.log2_bh);
  put(tic, 72, 70, l->shape.log2_bd);
  if (!surface) put(tic, 82, 80, 7); /* LOD_ANISO_QUALITY2, LOD_ANISO_QUALITY, LOD_ISO_QUALITY */
  tic[3] = format_word(l->format, s && s->read_as_integer, NVHCQ_TIC_VERSION_BLOCKLINEAR_V2, 118);
  put(tic, 144, 128, l->width - 1);
  put(tic, 145, 145, s && s->normalized);
  put(tic, 149, 149, s && s->srgb);
  put(tic, 153, 150, texture_type(l, levels));
  put(tic, 156, 156, 1); /* BORDER_SOURCE = BORDER_COLOR */
  put(tic, 176, 160, l->one_d && l->layered ? 0 : l->height - 1);
  put(tic, 191, 177, l->depth - 1);
  if (!surface) {
    put(tic, 216, 215, 2); /* ANISO_FINE_SPREAD_FUNC = TWO */
    put(tic, 218, 217, 1); /* ANISO_COARSE_SPREAD_FUNC = ONE */
  }
  if (levels > 1) { /* MAX_MIP_LEVEL, and the view of all levels */
    put(tic, 95, 92, levels - 1);
    put(tic, 231, 228, levels - 1);
  }
}

void nvhcq_tic_linear(uint32_t tic[8], nvhcq_texel_format f, uint64_t address, uint32_t count) {
  memset(tic, 0, NVHCQ_TIC_BYTES);
  tic[0] = (uint32_t)address;
  tic[1] = (uint32_t)(address >> 32);
  tic[2] = count - 1;
  tic[3] = format_word(f, 1, NVHCQ_TIC_VERSION_ONE_D_RAW, 117);
}

void nvhcq_tic_pitch(uint32_t tic[8], nvhcq_texel_format f, uint64_t address, uint32_t width,
                     uint32_t height, uint32_t pitch, const nvhcq_sampling *s) {
  memset(tic, 0, NVHCQ_TIC_BYTES);
  put(tic, 31, 5, (uint32_t)(address >> 5));
  put(tic, 56, 32, (uint32_t)(address >> 32));
  put(tic, 80, 64, pitch >> 5);
  put(tic, 82, 81, 3); /* LOD_ANISO_QUALITY2, LOD_ANISO_QUALITY (as libcuda's) */
  tic[3] = format_word(f, s->read_as_integer, NVHCQ_TIC_VERSION_PITCH_V2, 118);
  put(tic, 144, 128, width - 1);
  put(tic, 145, 145, s->normalized);
  put(tic, 149, 149, s->srgb);
  put(tic, 153, 150, NVHCQ_TIC_TWO_D_NO_MIPMAP);
  put(tic, 156, 156, 1);
  put(tic, 176, 160, height - 1);
  put(tic, 216, 215, 2);
  put(tic, 218, 217, 1);
}

/* A level-of-detail clamp as 4.8 fixed point, within what the 12 bits hold. */
static uint32_t lod_fixed(float lod) {
  if (!(lod > 0.0f)) return 0;
  return lod >= 15.99f ? 0xfffu : (uint32_t)(lod * 256.0f);
}

void nvhcq_tsc(uint32_t tsc[8], const nvhcq_sampling *s) {
  memset(tsc, 0, NVHCQ_TSC_BYTES);
  for (unsigned c = 0; c < 3; c++) put(tsc, 2 + 3 * c, 3 * c, s->address[c]);
  put(tsc, 13, 13, 1); /* libcuda sets S_R_G_B_CONVERSION in every sampler it wrote */
  uint32_t filter = s->linear ? NVHCQ_TSC_FILTER_LINEAR : NVHCQ_TSC_FILTER_POINT;
  put(tsc, 34, 32, filter);
  put(tsc, 37, 36, filter);
  put(tsc, 39, 38,
      s->mip_filter ? NVHCQ_TSC_MIP_NONE + (uint32_t)s->mip_filter : NVHCQ_TSC_MIP_NONE);
  if (s->mip_filter) { /* MIP_LOD_BIAS (signed) and MIN/MAX_LOD_CLAMP, fixed point with 8 fraction
                          bits */
    put(tsc, 56, 44, (uint32_t)(int32_t)(s->lod_bias * 256.0f));
    put(tsc, 75, 64, lod_fixed(s->min_lod));
    put(tsc, 87, 76, lod_fixed(s->max_lod));
  }
  memcpy(tsc + 4, s->border, 16);
}
