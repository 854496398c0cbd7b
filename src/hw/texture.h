/* Texture headers and samplers for Hopper's V2 header format: what a texture or surface object
 * is to the GPU, and the block-linear layout of the images they read. */
#ifndef NVHCQ_HW_TEXTURE_H
#define NVHCQ_HW_TEXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "hw/block_linear.h"

/* An image's texel format: component bits (8, 16, 32), kind and channel count. */
typedef enum {
  NVHCQ_TEXEL_KIND_UINT,
  NVHCQ_TEXEL_KIND_SINT,
  NVHCQ_TEXEL_KIND_FLOAT
} nvhcq_texel_kind;
typedef struct nvhcq_texel_format {
  uint32_t bits; /* per channel */
  nvhcq_texel_kind kind;
  uint32_t channels; /* 1, 2 or 4 */
} nvhcq_texel_format;

static inline uint32_t nvhcq_texel_bytes(nvhcq_texel_format f) {
  return f.bits / 8 * f.channels;
}

/* An image's layout: dims in texels (height 1 for 1D; depth slices or layers, 1 if neither),
 * its block-linear shape and its size in bytes. */
typedef struct nvhcq_image_layout {
  nvhcq_texel_format format;
  uint32_t width, height, depth;
  int one_d, three_d, layered;
  nvhcq_bl_shape shape;
  uint64_t bytes;
  uint32_t align; /* the block's bytes: the least alignment of its address */
} nvhcq_image_layout;

/* Fills *l for an image of `format`; `height` 0 for 1D, `depth` 0 unless 3D or layered. */
void nvhcq_image_layout_for(nvhcq_image_layout *l, nvhcq_texel_format format, uint32_t width,
                            uint32_t height, uint32_t depth, int layered);

/* Mipmapped images (not layered): level `level` of the image whose level 0 is `base`, as the
 * texture units find it: dims halved per level (at least 1), the block clamped to the level (no
 * more GOBs high than ceil(log2) of its height in GOBs, nor deep than of its depth), levels one
 * after another in whole blocks. *level_layout is the level as an image of its own, *offset
 * where it starts. */
void nvhcq_image_level_layout(const nvhcq_image_layout *base, uint32_t level,
                              nvhcq_image_layout *level_layout, uint64_t *offset);
/* The bytes of the first `levels` levels of a mipmapped image, one after another. */
uint64_t nvhcq_image_mip_bytes(const nvhcq_image_layout *base, uint32_t levels);
/* How many levels an image of these dims can have: 1 + floor(log2(largest)). */
uint32_t nvhcq_image_max_levels(uint32_t width, uint32_t height, uint32_t depth);

/* What a texture or sampler header says beyond its memory. */
typedef struct nvhcq_sampling {
  uint32_t address[3]; /* NVHCQ_TSC_WRAP ... _BORDER per coordinate */
  int linear;          /* linear filtering, else point */
  int normalized;      /* coordinates in [0, 1) */
  int read_as_integer; /* 8- and 16-bit integers read as integers, not as [0, 1] / [-1, 1] */
  int srgb;            /* sRGB to linear on read */
  float border[4];
  /* Mipmapped images only: 1 the nearest level, 2 linear between levels (0: not mipmapped); the
   * LOD bias and clamps. */
  int mip_filter;
  float lod_bias, min_lod, max_lod;
} nvhcq_sampling;

/* The header of a texture over a block-linear image at `address` (`levels` mip levels, 1: none);
 * `surface` for a surface object's (no sampling). */
void nvhcq_tic_image(uint32_t tic[8], const nvhcq_image_layout *l, uint64_t address,
                     const nvhcq_sampling *s, int surface, uint32_t levels);
/* The header of a texture over `count` texels of linear memory at `address`. */
void nvhcq_tic_linear(uint32_t tic[8], nvhcq_texel_format f, uint64_t address, uint32_t count);
/* The header of a texture over a pitch-linear 2D region. */
void nvhcq_tic_pitch(uint32_t tic[8], nvhcq_texel_format f, uint64_t address, uint32_t width,
                     uint32_t height, uint32_t pitch, const nvhcq_sampling *s);
/* The sampler. */
void nvhcq_tsc(uint32_t tsc[8], const nvhcq_sampling *s);

#endif
