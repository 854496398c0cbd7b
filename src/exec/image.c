/* Images (block-linear GPU memory for the texture units), texture and surface objects over them,
 * and copies between images and linear memory through the built-in nvhcq_image_copy kernel. */
#include <stdlib.h>
#include <string.h>

#include "abi/rm.h"
#include "abi/texture.h"
#include "core/device.h"
#include "core/memory.h"
#include "core/texture_pool.h"
#include "exec/builtin.h"
#include "exec/module.h"
#include "hw/texture.h"
#include "util/abi.h"
#include "util/handle.h"

#define IMAGE_MAGIC   0x6e76696du /* "nvim" */
#define TEXTURE_MAGIC 0x6e767478u /* "nvtx" */
#define SURFACE_MAGIC 0x6e767366u /* "nvsf" */

/* CUDA's limits for the H200 (cuDeviceGetAttribute MAXIMUM_TEXTURE*): what the headers' fields
 * hold and what libcuda accepts. */
#define MAX_1D      131072u
#define MAX_2D_W    131072u
#define MAX_2D_H    65536u
#define MAX_3D      16384u
#define MAX_LAYERED 32768u
#define MAX_LAYERS  2048u
#define MAX_LINEAR  (1u << 28)

#define MAX_LEVELS 16u /* what the header's MAX_MIP_LEVEL holds */

struct nvhcq_image {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_buffer *memory;
  uint64_t offset; /* of the image in memory: a level's from its mipmapped image's start */
  nvhcq_image_desc desc;
  nvhcq_image_layout layout;      /* level 0's for a mipmapped image */
  uint32_t levels;                /* 1: not mipmapped */
  uint32_t users;                 /* texture and surface objects over it */
  nvhcq_image *parent;            /* a level's mipmapped image, else NULL */
  nvhcq_image *level[MAX_LEVELS]; /* levels asked for so far (nvhcq_image_get_level) */
};

static uint64_t image_address(const nvhcq_image *img) {
  return img->memory->gpu_address + img->offset;
}

struct nvhcq_texture {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_image *image; /* or NULL */
  uint32_t slot;
};

struct nvhcq_surface {
  uint32_t magic;
  nvhcq_image *image;
  uint32_t slot;
};

static nvhcq_status format_of(nvhcq_texel_type t, uint32_t channels, nvhcq_texel_format *f,
                              const char *what) {
  static const nvhcq_texel_format table[] = {
      [NVHCQ_TEXEL_U8] = {8, NVHCQ_TEXEL_KIND_UINT, 0},
      [NVHCQ_TEXEL_U16] = {16, NVHCQ_TEXEL_KIND_UINT, 0},
      [NVHCQ_TEXEL_U32] = {32, NVHCQ_TEXEL_KIND_UINT, 0},
      [NVHCQ_TEXEL_S8] = {8, NVHCQ_TEXEL_KIND_SINT, 0},
      [NVHCQ_TEXEL_S16] = {16, NVHCQ_TEXEL_KIND_SINT, 0},
      [NVHCQ_TEXEL_S32] = {32, NVHCQ_TEXEL_KIND_SINT, 0},
      [NVHCQ_TEXEL_F16] = {16, NVHCQ_TEXEL_KIND_FLOAT, 0},
      [NVHCQ_TEXEL_F32] = {32, NVHCQ_TEXEL_KIND_FLOAT, 0},
  };
  if (t < NVHCQ_TEXEL_U8 || t > NVHCQ_TEXEL_F32)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: texel type %u is not an NVHCQ_TEXEL_* value", what, t);
  if (channels != 1 && channels != 2 && channels != 4)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: %u channels; use 1, 2 or 4", what,
                      channels);
  *f = table[t];
  f->channels = channels;
  return NVHCQ_SUCCESS;
}

/* Texture headers are Hopper's V2 format, which the compute classes before Hopper do not read. */
static nvhcq_status check_generation(nvhcq_device *dev, const char *what) {
  if (dev->classes.compute >= HOPPER_COMPUTE_A) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                    "%s: images and texture objects need Hopper or later (this GPU's compute "
                    "class is 0x%x)",
                    what, dev->classes.compute);
}

/* A description the caller sized: at least this release's layout (a later header's is longer,
 * and its added fields are left alone). */
static nvhcq_status check_struct_size(uint32_t size, size_t layout, const char *what) {
  if (size >= layout) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "%s: desc->struct_size is %u, less than the %zu bytes of its layout; set it to "
                    "sizeof the struct",
                    what, size, layout);
}

static nvhcq_status check_dims(const nvhcq_image_desc *d) {
  int layered = (d->flags & NVHCQ_IMAGE_LAYERED) != 0;
  uint32_t w = d->width, h = d->height, z = d->depth;
  const char *bad = NULL;
  if (d->flags & ~(NVHCQ_IMAGE_LAYERED | NVHCQ_IMAGE_SURFACE))
    bad = "unknown flags";
  else if (w == 0)
    bad = "a width of 0";
  else if (layered && z == 0)
    bad = "NVHCQ_IMAGE_LAYERED with a depth (layer count) of 0";
  else if (layered && (z > MAX_LAYERS || w > MAX_LAYERED || h > MAX_LAYERED))
    bad = "more than 2048 layers or a layer over 32768 texels across";
  else if (!layered && z && (w > MAX_3D || h > MAX_3D || z > MAX_3D))
    bad = "a 3D size over 16384";
  else if (!layered && z && h == 0)
    bad = "a depth without a height";
  else if (!z && !h && w > MAX_1D)
    bad = "a 1D width over 131072";
  else if (!z && h && (w > MAX_2D_W || h > MAX_2D_H))
    bad = "a 2D size over 131072 x 65536";
  else if (d->levels > 1 && layered)
    bad = "mip levels in a layered image (not supported)";
  else if (d->levels > MAX_LEVELS || d->levels > nvhcq_image_max_levels(w, h, layered ? 0 : z))
    bad = "more mip levels than 1 + log2 of its largest size (16 at most)";
  if (!bad) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "nvhcq_image_create: %s (%u x %u x %u, flags 0x%x)", bad, w, h, z, d->flags);
}

nvhcq_status nvhcq_image_create(nvhcq_device *dev, const nvhcq_image_desc *desc,
                                nvhcq_image **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!desc || !out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_image_create: desc and out must be set");
  *out = NULL;
  NVHCQ_TRY(check_struct_size(desc->struct_size, sizeof *desc, "nvhcq_image_create"));
  NVHCQ_TRY(check_generation(dev, "nvhcq_image_create"));
  nvhcq_texel_format f;
  NVHCQ_TRY(format_of(desc->type, desc->channels, &f, "nvhcq_image_create"));
  NVHCQ_TRY(check_dims(desc));
  nvhcq_image *img = calloc(1, sizeof *img);
  if (!img) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "nvhcq_image_create: no host memory");
  nvhcq_image_layout_for(&img->layout, f, desc->width, desc->height, desc->depth,
                         (desc->flags & NVHCQ_IMAGE_LAYERED) != 0);
  img->levels = desc->levels > 1 ? desc->levels : 1;
  /* Blocks of the buffer's slab class or allocation are aligned to their size, which is a
   * multiple of the block's bytes, the alignment the header's address needs. */
  size_t bytes = nvhcq_image_mip_bytes(&img->layout, img->levels);
  nvhcq_status s = nvhcq_memory_alloc(dev, bytes, NVHCQ_MEMORY_DEVICE, NULL, &img->memory);
  if (!s && img->memory->gpu_address % img->layout.align)
    s = nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "image memory at 0x%llx is not %u-byte aligned",
                   (unsigned long long)img->memory->gpu_address, img->layout.align);
  if (s) {
    if (img->memory) nvhcq_memory_free(img->memory);
    free(img);
    return nvhcq_fail_context(s, "nvhcq_image_create of %u x %u x %u (%zu bytes)", desc->width,
                              desc->height, desc->depth, bytes);
  }
  img->magic = IMAGE_MAGIC;
  img->dev = dev;
  img->desc = *desc;
  *out = img;
  return NVHCQ_SUCCESS;
}

static nvhcq_status image_check(const nvhcq_image *img) {
  return nvhcq_handle_check(img, IMAGE_MAGIC, "image", "was destroyed already");
}

/* Texture and surface objects over the image and its levels. */
static uint32_t users_of(const nvhcq_image *img) {
  uint32_t n = img->users;
  for (uint32_t i = 0; i < MAX_LEVELS; i++)
    if (img->level[i]) n += img->level[i]->users;
  return n;
}

nvhcq_status nvhcq_image_destroy(nvhcq_image *img) {
  if (!img) return NVHCQ_SUCCESS;
  NVHCQ_TRY(image_check(img));
  if (img->parent)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_image_destroy: this is a level of a mipmapped image, which goes with "
                      "it; destroy the mipmapped image");
  uint32_t users = users_of(img);
  if (users)
    return nvhcq_fail(NVHCQ_ERROR_BUSY,
                      "nvhcq_image_destroy: %u texture or surface objects still read this image; "
                      "destroy them first",
                      users);
  for (uint32_t i = 0; i < MAX_LEVELS; i++)
    if (img->level[i]) nvhcq_retire(img->level[i]);
  nvhcq_status s = nvhcq_memory_free(img->memory);
  nvhcq_retire(img);
  return s;
}

nvhcq_status nvhcq_image_get_level(nvhcq_image *img, uint32_t level, nvhcq_image **out) {
  NVHCQ_TRY(image_check(img));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_image_get_level: out is NULL");
  *out = NULL;
  if (img->parent || level >= img->levels)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_image_get_level: level %u of an image of %u level%s%s", level,
                      img->levels, img->levels == 1 ? "" : "s",
                      img->parent ? " (a level has no levels of its own)" : "");
  if (!img->level[level]) {
    nvhcq_image *l = calloc(1, sizeof *l);
    if (!l) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "nvhcq_image_get_level: no host memory");
    *l = *img;
    memset(l->level, 0, sizeof l->level);
    nvhcq_image_level_layout(&img->layout, level, &l->layout, &l->offset);
    l->levels = 1, l->users = 0, l->parent = img;
    l->desc.width = l->layout.width;
    l->desc.height = img->desc.height ? l->layout.height : 0;
    l->desc.depth = img->desc.depth ? l->layout.depth : 0;
    l->desc.levels = 0;
    img->level[level] = l;
  }
  *out = img->level[level];
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_image_get_desc(const nvhcq_image *img, nvhcq_image_desc *desc) {
  NVHCQ_TRY(image_check(img));
  return nvhcq_fill_sized(desc, &img->desc, sizeof img->desc, sizeof img->desc,
                          "nvhcq_image_get_desc");
}

size_t nvhcq_image_size(const nvhcq_image *img) {
  if (image_check(img)) return 0;
  return (size_t)(img->parent ? img->layout.bytes
                              : nvhcq_image_mip_bytes(&img->layout, img->levels));
}

/* ---- copies ---- */

/* The whole image, or `r` checked against it. */
static nvhcq_status region_of(const nvhcq_image *img, const nvhcq_image_region *r,
                              nvhcq_image_region *out, const char *what) {
  const nvhcq_image_layout *l = &img->layout;
  nvhcq_image_region all = {0, 0, 0, l->width, l->height, l->depth};
  *out = r ? *r : all;
  const nvhcq_image_region *o = out;
  if ((uint64_t)o->x + o->width > l->width || (uint64_t)o->y + o->height > l->height ||
      (uint64_t)o->z + o->depth > l->depth)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: region (%u, %u, %u) + %u x %u x %u runs past the %u x %u x %u image",
                      what, o->x, o->y, o->z, o->width, o->height, o->depth, l->width, l->height,
                      l->depth);
  return NVHCQ_SUCCESS;
}

/* The largest unit of 16, 8, 4, 2 or 1 bytes that every offset and length is a multiple of. */
static uint32_t unit_for(uint64_t bits) {
  uint32_t u = 16;
  while (u > 1 && (bits & (u - 1))) u >>= 1;
  return u;
}

static nvhcq_status run_copy(nvhcq_image *img, const nvhcq_image_region *r, uint64_t linear,
                             uint64_t pitch, uint64_t slice, int to_image) {
  nvhcq_device *dev = img->dev;
  uint32_t elem = nvhcq_texel_bytes(img->layout.format);
  uint64_t width = (uint64_t)r->width * elem;
  if (!r->width || !r->height || !r->depth) return NVHCQ_SUCCESS;
  nvhcq_module *m = nvhcq_builtin_module(dev);
  nvhcq_kernel *k = NULL;
  if (!m || nvhcq_module_get_kernel(m, "nvhcq_image_copy", &k))
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "copies to and from images need the built-in kernels, and this build has "
                      "none for this GPU (build nvhcq with nvcc)");
  nvhcq_bl_copy_args a = {.image = image_address(img),
                          .linear = linear,
                          .pitch = pitch,
                          .slice = slice,
                          .shape = img->layout.shape,
                          .x_bytes = r->x * elem,
                          .y = r->y,
                          .z = r->z,
                          .height = r->height,
                          .depth = r->depth,
                          .to_image = (uint32_t)to_image};
  a.unit = unit_for(a.x_bytes | width | linear | pitch | slice);
  a.units_x = (uint32_t)(width / a.unit);
  uint64_t total = (uint64_t)a.units_x * a.height * a.depth, blocks = (total + 255) / 256;
  uint64_t most = dev->info.sm_count ? dev->info.sm_count * 16ull : 2048;
  nvhcq_dim3 grid = {(uint32_t)(blocks < most ? blocks : most), 1, 1}, block = {256, 1, 1};
  NVHCQ_TRY(nvhcq_device_cpu_wait_idle(dev));
  return nvhcq_kernel_launch_cpu_wait(k, grid, block, 0, &a, sizeof a, NULL);
}

/* Pitches for linear memory holding a region: 0 means packed. */
static void pitches_for(const nvhcq_image *img, const nvhcq_image_region *r, size_t *pitch,
                        size_t *slice) {
  size_t row = (size_t)r->width * nvhcq_texel_bytes(img->layout.format);
  if (!*pitch) *pitch = row;
  if (!*slice) *slice = *pitch * r->height;
}

static nvhcq_status check_linear(const nvhcq_image *img, const nvhcq_image_region *r,
                                 const nvhcq_buffer *b, size_t offset, size_t pitch, size_t slice,
                                 const char *what) {
  NVHCQ_TRY(nvhcq_buffer_check(b, what));
  size_t row = (size_t)r->width * nvhcq_texel_bytes(img->layout.format);
  if (pitch < row || (r->depth > 1 && slice < pitch * r->height))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: a pitch of %zu bytes (slices %zu apart) cannot hold rows of %zu bytes",
                      what, pitch, slice, row);
  uint64_t span = (uint64_t)(r->depth - 1) * slice + (uint64_t)(r->height - 1) * pitch + row;
  if (!r->width || !r->height || !r->depth) span = 0;
  if (offset > b->size || span > b->size - offset)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: %llu bytes from offset %zu run past the %zu-byte buffer", what,
                      (unsigned long long)span, offset, b->size);
  return NVHCQ_SUCCESS;
}

static nvhcq_status buffer_side(nvhcq_image *img, const nvhcq_image_region *r, nvhcq_buffer *b,
                                size_t offset, size_t pitch, size_t slice, int to_image,
                                const char *what) {
  NVHCQ_TRY(image_check(img));
  nvhcq_image_region reg;
  NVHCQ_TRY(region_of(img, r, &reg, what));
  pitches_for(img, &reg, &pitch, &slice);
  NVHCQ_TRY(check_linear(img, &reg, b, offset, pitch, slice, what));
  if (b->dev != img->dev)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: the buffer and the image are on "
                      "different devices",
                      what);
  return run_copy(img, &reg, b->gpu_address + offset, pitch, slice, to_image);
}

nvhcq_status nvhcq_image_copy_from_buffer(nvhcq_image *dst, const nvhcq_image_region *r,
                                          nvhcq_buffer *src, size_t src_offset, size_t pitch,
                                          size_t slice_pitch) {
  return buffer_side(dst, r, src, src_offset, pitch, slice_pitch, 1,
                     "nvhcq_image_copy_from_buffer");
}

nvhcq_status nvhcq_image_copy_to_buffer(nvhcq_buffer *dst, size_t dst_offset, size_t pitch,
                                        size_t slice_pitch, nvhcq_image *src,
                                        const nvhcq_image_region *r) {
  return buffer_side(src, r, dst, dst_offset, pitch, slice_pitch, 0, "nvhcq_image_copy_to_buffer");
}

/* Host memory goes through a pinned buffer of the region, packed. */
static nvhcq_status host_side(nvhcq_image *img, const nvhcq_image_region *r, void *host,
                              size_t pitch, size_t slice, int to_image, const char *what) {
  NVHCQ_TRY(image_check(img));
  nvhcq_image_region reg;
  NVHCQ_TRY(region_of(img, r, &reg, what));
  size_t row = (size_t)reg.width * nvhcq_texel_bytes(img->layout.format);
  pitches_for(img, &reg, &pitch, &slice);
  if (!host) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s: the host pointer is NULL", what);
  if (pitch < row || (reg.depth > 1 && slice < pitch * reg.height))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: a pitch of %zu bytes (slices %zu apart) cannot hold rows of %zu bytes",
                      what, pitch, slice, row);
  size_t packed = row * reg.height * reg.depth;
  if (!packed) return NVHCQ_SUCCESS;
  nvhcq_buffer *tmp;
  NVHCQ_TRY(nvhcq_memory_alloc(img->dev, packed, NVHCQ_MEMORY_HOST, NULL, &tmp));
  uint8_t *t = tmp->host_pointer, *h = host;
  for (uint32_t z = 0; z < reg.depth; z++)
    for (uint32_t y = 0; y < reg.height; y++) {
      uint8_t *a = t + (z * (size_t)reg.height + y) * row, *b = h + z * slice + y * pitch;
      if (to_image) memcpy(a, b, row);
    }
  nvhcq_status s = run_copy(img, &reg, tmp->gpu_address, row, row * reg.height, to_image);
  for (uint32_t z = 0; !s && !to_image && z < reg.depth; z++)
    for (uint32_t y = 0; y < reg.height; y++)
      memcpy(h + z * slice + y * pitch, t + (z * (size_t)reg.height + y) * row, row);
  nvhcq_memory_free(tmp);
  return s;
}

nvhcq_status nvhcq_image_write(nvhcq_image *dst, const nvhcq_image_region *r, const void *src,
                               size_t pitch, size_t slice_pitch) {
  return host_side(dst, r, (void *)src, pitch, slice_pitch, 1, "nvhcq_image_write");
}

nvhcq_status nvhcq_image_read(void *dst, size_t pitch, size_t slice_pitch, nvhcq_image *src,
                              const nvhcq_image_region *r) {
  return host_side(src, r, dst, pitch, slice_pitch, 0, "nvhcq_image_read");
}

nvhcq_status nvhcq_image_copy(nvhcq_image *dst, const nvhcq_image_region *dst_region,
                              nvhcq_image *src, const nvhcq_image_region *src_region) {
  NVHCQ_TRY(image_check(dst));
  NVHCQ_TRY(image_check(src));
  nvhcq_image_region s, d;
  NVHCQ_TRY(region_of(src, src_region, &s, "nvhcq_image_copy source"));
  d = (nvhcq_image_region){dst_region ? dst_region->x : 0,
                           dst_region ? dst_region->y : 0,
                           dst_region ? dst_region->z : 0,
                           s.width,
                           s.height,
                           s.depth};
  NVHCQ_TRY(region_of(dst, &d, &d, "nvhcq_image_copy destination"));
  uint32_t es = nvhcq_texel_bytes(src->layout.format), ed = nvhcq_texel_bytes(dst->layout.format);
  if (es != ed || src->dev != dst->dev)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_image_copy: the images' texels are %u and %u bytes, or on different "
                      "devices; copy between images of one texel size on one device",
                      es, ed);
  size_t row = (size_t)s.width * es, packed = row * s.height * s.depth;
  if (!packed) return NVHCQ_SUCCESS;
  nvhcq_buffer *tmp;
  NVHCQ_TRY(nvhcq_memory_alloc(src->dev, packed, NVHCQ_MEMORY_DEVICE, NULL, &tmp));
  nvhcq_status st = run_copy(src, &s, tmp->gpu_address, row, row * s.height, 0);
  if (!st) st = run_copy(dst, &d, tmp->gpu_address, row, row * s.height, 1);
  nvhcq_memory_free(tmp);
  return st;
}

/* ---- texture and surface objects ---- */

static nvhcq_status sampling_of(const nvhcq_texture_desc *d, nvhcq_sampling *s) {
  static const uint32_t modes[] = {NVHCQ_TSC_WRAP, NVHCQ_TSC_CLAMP_TO_EDGE, NVHCQ_TSC_MIRROR,
                                   NVHCQ_TSC_BORDER};
  uint32_t known = NVHCQ_TEXTURE_LINEAR_FILTER | NVHCQ_TEXTURE_NORMALIZED_COORDS |
                   NVHCQ_TEXTURE_READ_AS_INTEGER | NVHCQ_TEXTURE_SRGB;
  if (d->flags & ~known)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_texture_create: unknown flags 0x%x",
                      d->flags & ~known);
  memset(s, 0, sizeof *s);
  for (int c = 0; c < 3; c++) {
    if ((unsigned)d->address[c] > NVHCQ_ADDRESS_BORDER)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                        "nvhcq_texture_create: address mode %u of coordinate %d is not an "
                        "NVHCQ_ADDRESS_* value",
                        d->address[c], c);
    s->address[c] = modes[d->address[c]];
  }
  s->linear = (d->flags & NVHCQ_TEXTURE_LINEAR_FILTER) != 0;
  s->normalized = (d->flags & NVHCQ_TEXTURE_NORMALIZED_COORDS) != 0;
  s->read_as_integer = (d->flags & NVHCQ_TEXTURE_READ_AS_INTEGER) != 0;
  s->srgb = (d->flags & NVHCQ_TEXTURE_SRGB) != 0;
  memcpy(s->border, d->border, sizeof s->border);
  return NVHCQ_SUCCESS;
}

/* Sampling between the levels of a mipmapped image (a checked one). */
static nvhcq_status mip_sampling_of(const nvhcq_texture_desc *d, nvhcq_sampling *s) {
  if (d->image->levels == 1) return NVHCQ_SUCCESS;
  if (d->mip_filter > NVHCQ_MIP_LINEAR)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_texture_create: mip_filter %u is not an NVHCQ_MIP_* value",
                      d->mip_filter);
  s->mip_filter = 1 + (int)d->mip_filter;
  s->lod_bias = d->lod_bias, s->min_lod = d->min_lod, s->max_lod = d->max_lod;
  return NVHCQ_SUCCESS;
}

/* The header of a texture over linear or pitched memory, after its checks. */
static nvhcq_status memory_header(const nvhcq_texture_desc *d, const nvhcq_sampling *s,
                                  uint32_t tic[8]) {
  const char *what = "nvhcq_texture_create";
  nvhcq_texel_format f;
  NVHCQ_TRY(nvhcq_buffer_check(d->buffer, what));
  NVHCQ_TRY(format_of(d->type, d->channels, &f, what));
  uint64_t at = d->buffer->gpu_address + d->offset, elem = nvhcq_texel_bytes(f);
  int linear = d->source == NVHCQ_TEXTURE_LINEAR;
  uint64_t need = linear ? d->width * elem
                         : (d->height ? (uint64_t)(d->height - 1) * d->pitch : 0) + d->width * elem;
  const char *bad = NULL;
  if (!d->width || (!linear && !d->height))
    bad = "a width or height of 0";
  else if (linear && d->width > MAX_LINEAR)
    bad = "more than 2^28 texels";
  else if (!linear && (d->width > MAX_2D_W || d->height > MAX_2D_H))
    bad = "a size over 131072 x 65536";
  else if (at % (linear ? 16 : 256))
    bad = linear ? "an address not 16-byte aligned" : "an address not 256-byte aligned";
  else if (!linear && (d->pitch % 32 || d->pitch < d->width * elem || d->pitch >= (1u << 22)))
    bad = "a pitch that is not a multiple of 32 bytes holding a row (below 4 MiB)";
  else if (d->offset > d->buffer->size || need > d->buffer->size - d->offset)
    bad = "texels past the end of the buffer";
  if (bad)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: %s (%u x %u texels of %llu bytes, pitch %zu, "
                      "offset %zu)",
                      what, bad, d->width, d->height, (unsigned long long)elem, d->pitch,
                      d->offset);
  if (linear)
    nvhcq_tic_linear(tic, f, at, d->width);
  else
    nvhcq_tic_pitch(tic, f, at, d->width, d->height, (uint32_t)d->pitch, s);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_texture_create(nvhcq_device *dev, const nvhcq_texture_desc *d,
                                  nvhcq_texture **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!d || !out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_texture_create: desc and out must be set");
  *out = NULL;
  NVHCQ_TRY(check_struct_size(d->struct_size, sizeof *d, "nvhcq_texture_create"));
  NVHCQ_TRY(check_generation(dev, "nvhcq_texture_create"));
  nvhcq_sampling s;
  NVHCQ_TRY(sampling_of(d, &s));
  uint32_t tic[8], tsc[8];
  if (d->source == NVHCQ_TEXTURE_IMAGE) {
    NVHCQ_TRY(image_check(d->image));
    if (d->image->dev != dev)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_texture_create: the image is on "
                                                      "another device");
    NVHCQ_TRY(mip_sampling_of(d, &s));
    nvhcq_tic_image(tic, &d->image->layout, image_address(d->image), &s, 0, d->image->levels);
  } else if (d->source == NVHCQ_TEXTURE_LINEAR || d->source == NVHCQ_TEXTURE_PITCH2D) {
    NVHCQ_TRY(memory_header(d, &s, tic));
  } else {
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_texture_create: source %u is not an NVHCQ_TEXTURE_* source",
                      d->source);
  }
  nvhcq_tsc(tsc, &s);
  nvhcq_texture *t = calloc(1, sizeof *t);
  if (!t) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "nvhcq_texture_create: no host memory");
  nvhcq_status st = nvhcq_texture_pool_add(dev, tic, tsc, &t->slot);
  if (st) {
    free(t);
    return st;
  }
  t->magic = TEXTURE_MAGIC;
  t->dev = dev;
  t->image = d->source == NVHCQ_TEXTURE_IMAGE ? d->image : NULL;
  if (t->image) t->image->users++;
  *out = t;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_texture_destroy(nvhcq_texture *t) {
  if (!t) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_handle_check(t, TEXTURE_MAGIC, "texture object", "was destroyed already"));
  nvhcq_texture_pool_remove(t->dev, t->slot);
  if (t->image) t->image->users--;
  nvhcq_retire(t);
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_texture_handle(const nvhcq_texture *t) {
  if (nvhcq_handle_check(t, TEXTURE_MAGIC, "texture object", "was destroyed already")) return 0;
  return t->slot;
}

nvhcq_status nvhcq_surface_create(nvhcq_image *img, nvhcq_surface **out) {
  NVHCQ_TRY(image_check(img));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_surface_create: out is NULL");
  *out = NULL;
  if (!(img->desc.flags & NVHCQ_IMAGE_SURFACE))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_surface_create: the image was made without NVHCQ_IMAGE_SURFACE");
  uint32_t tic[8];
  nvhcq_tic_image(tic, &img->layout, image_address(img), NULL, 1, 1);
  nvhcq_surface *sf = calloc(1, sizeof *sf);
  if (!sf) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "nvhcq_surface_create: no host memory");
  nvhcq_status st = nvhcq_texture_pool_add(img->dev, tic, NULL, &sf->slot);
  if (st) {
    free(sf);
    return st;
  }
  sf->magic = SURFACE_MAGIC;
  sf->image = img;
  img->users++;
  *out = sf;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_surface_destroy(nvhcq_surface *sf) {
  if (!sf) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_handle_check(sf, SURFACE_MAGIC, "surface object", "was destroyed already"));
  nvhcq_texture_pool_remove(sf->image->dev, sf->slot);
  sf->image->users--;
  nvhcq_retire(sf);
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_surface_handle(const nvhcq_surface *sf) {
  if (nvhcq_handle_check(sf, SURFACE_MAGIC, "surface object", "was destroyed already")) return 0;
  return sf->slot;
}
