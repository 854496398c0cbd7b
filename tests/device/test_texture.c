/* Images, texture objects and surface objects: images round-trip through every copy call (the
 * mock too), the refusals, and on the GPU what kernels read through texture objects (point and
 * linear sampling, every texel kind, 1D, 2D, 3D and layered images, linear and pitched memory,
 * border colours) and write through surface objects, compared with what the CPU expects. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "device/device_test.h"

static nvhcq_module *tex_mod;

/* The texture kernels (tests/device/texture.cu), built for sm_90. */
static int need_texture_module(void) {
  if (tex_mod) return 0;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  if (strcmp(info.arch, "sm_90")) return -1;
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
#ifdef NVHCQ_TEST_CUBIN_DEFAULT
  if (!dir) dir = NVHCQ_TEST_CUBIN_DEFAULT;
#endif
  char path[512];
  snprintf(path, sizeof path, "%s/texture_sm_90.cubin", dir ? dir : ".");
  if (access(path, R_OK)) return -1;
  if (nvhcq_module_load_file(dev, path, &tex_mod)) {
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
    return 1;
  }
  return 0;
}

/* The GPU and the texture kernels: the mock's interpreter does not sample textures. */
#define NEED_TEXTURES()                                                                            \
  do {                                                                                             \
    NEED_DEVICE();                                                                                 \
    SKIP_ON_MOCK("its PTX interpreter does not sample textures or surfaces");                      \
    int r_ = need_texture_module();                                                                \
    if (r_ < 0) TEST_SKIP("the texture kernels are built for sm_90 (nvcc absent or another GPU)"); \
    if (r_) return;                                                                                \
  } while (0)

static void launch(const char *name, nvhcq_dim3 grid, nvhcq_dim3 block, const void *args,
                   size_t size) {
  nvhcq_kernel *k = NULL;
  TEST_CHECK_MSG(nvhcq_module_get_kernel(tex_mod, name, &k) == 0, "%s: %s", name,
                 nvhcq_last_error());
  if (k)
    TEST_CHECK_MSG(nvhcq_kernel_launch_cpu_wait(k, grid, block, 0, args, size, NULL) == 0, "%s: %s",
                   name, nvhcq_last_error());
}

static nvhcq_image *make_image(uint32_t w, uint32_t h, uint32_t d, nvhcq_texel_type t, uint32_t ch,
                               uint32_t flags) {
  nvhcq_image_desc desc = {sizeof desc, w, h, d, t, ch, flags, 0};
  nvhcq_image *img = NULL;
  TEST_CHECK_MSG(nvhcq_image_create(dev, &desc, &img) == 0, "image %ux%ux%u: %s", w, h, d,
                 nvhcq_last_error());
  return img;
}

static nvhcq_texture *make_texture(nvhcq_image *img, nvhcq_address_mode mode, uint32_t flags) {
  nvhcq_texture_desc d = {
      .struct_size = sizeof d, .source = NVHCQ_TEXTURE_IMAGE, .image = img, .flags = flags};
  for (int c = 0; c < 3; c++) d.address[c] = mode;
  nvhcq_texture *t = NULL;
  TEST_CHECK_MSG(nvhcq_texture_create(dev, &d, &t) == 0, "texture: %s", nvhcq_last_error());
  return t;
}

static uint32_t pattern(uint32_t x, uint32_t y, uint32_t z) {
  return (z << 24) ^ (y << 12) ^ x ^ 0x9e3779b9u * (z + 1);
}

/* ---- copies (the mock too) ---- */

static void round_trip(uint32_t w, uint32_t h, uint32_t d, nvhcq_texel_type t, uint32_t ch,
                       uint32_t flags, uint32_t elem) {
  nvhcq_image *img = make_image(w, h, d, t, ch, flags);
  if (!img) return;
  uint32_t rows = h ? h : 1, slices = d ? d : 1;
  size_t n = (size_t)w * rows * slices * elem;
  uint8_t *a = malloc(n), *b = calloc(1, n);
  for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(pattern((uint32_t)i, 7, 3) >> (i % 3 * 8));
  TEST_CHECK_MSG(nvhcq_image_write(img, NULL, a, 0, 0) == 0, "write: %s", nvhcq_last_error());
  TEST_CHECK_MSG(nvhcq_image_read(b, 0, 0, img, NULL) == 0, "read: %s", nvhcq_last_error());
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += a[i] != b[i];
  TEST_CHECK_MSG(bad == 0, "%ux%ux%u x %u bytes: %zu bytes differ", w, h, d, elem, bad);
  free(a);
  free(b);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
}

static void t_image_round_trips(void) {
  NEED_DEVICE();
  round_trip(345, 233, 0, NVHCQ_TEXEL_U32, 1, 0, 4);
  round_trip(37, 29, 19, NVHCQ_TEXEL_F32, 4, 0, 16);
  round_trip(1234, 0, 0, NVHCQ_TEXEL_F16, 2, 0, 4);
  round_trip(51, 43, 7, NVHCQ_TEXEL_F32, 1, NVHCQ_IMAGE_LAYERED, 4);
  round_trip(513, 0, 5, NVHCQ_TEXEL_U8, 1, NVHCQ_IMAGE_LAYERED, 1);
  round_trip(301, 17, 0, NVHCQ_TEXEL_S8, 2, 0, 2);
  round_trip(3, 200, 0, NVHCQ_TEXEL_U16, 4, 0, 8);
}

/* Regions, pitches and buffers: a box written into a zeroed image lands there and nowhere else;
 * an image-to-image copy moves a box. */
static void t_image_regions(void) {
  NEED_DEVICE();
  const uint32_t w = 100, h = 70, d = 9;
  nvhcq_image *img = make_image(w, h, d, NVHCQ_TEXEL_U32, 1, 0);
  nvhcq_image *other = make_image(40, 30, 0, NVHCQ_TEXEL_F32, 1, 0);
  if (!img || !other) return;
  size_t n = (size_t)w * h * d;
  uint32_t *zero = calloc(n, 4), *all = malloc(n * 4);
  TEST_CHECK(nvhcq_image_write(img, NULL, zero, 0, 0) == 0);
  /* A box of 13 x 11 x 3 from (5, 6, 2), its rows 64 bytes apart and slices 1000 bytes apart in
   * a device buffer. */
  nvhcq_image_region r = {5, 6, 2, 13, 11, 3};
  size_t pitch = 64, slice = 1000;
  uint8_t *src = calloc(1, slice * 3);
  for (uint32_t z = 0; z < 3; z++)
    for (uint32_t y = 0; y < 11; y++)
      for (uint32_t x = 0; x < 13; x++) {
        uint32_t v = pattern(x + 5, y + 6, z + 2);
        memcpy(src + z * slice + y * pitch + x * 4, &v, 4);
      }
  nvhcq_buffer *buf = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, slice * 3 + 64, NVHCQ_MEMORY_DEVICE, &buf) == 0);
  TEST_CHECK(nvhcq_buffer_write(buf, 64, src, slice * 3) == 0);
  TEST_CHECK_MSG(nvhcq_image_copy_from_buffer(img, &r, buf, 64, pitch, slice) == 0, "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_image_read(all, 0, 0, img, NULL) == 0);
  size_t bad = 0;
  for (uint32_t z = 0; z < d; z++)
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        int in = x >= 5 && x < 18 && y >= 6 && y < 17 && z >= 2 && z < 5;
        bad += all[((size_t)z * h + y) * w + x] != (in ? pattern(x, y, z) : 0);
      }
  TEST_CHECK_MSG(bad == 0, "%zu texels wrong after a box copy", bad);
  /* Back out into another buffer with another pitch. */
  nvhcq_buffer *back = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 13 * 4 * 11 * 3 + 256, NVHCQ_MEMORY_HOST, &back) == 0);
  TEST_CHECK(nvhcq_image_copy_to_buffer(back, 4, 0, 0, img, &r) == 0);
  const uint32_t *bp = (const uint32_t *)((uint8_t *)nvhcq_buffer_host_pointer(back) + 4);
  bad = 0;
  for (uint32_t z = 0; z < 3; z++)
    for (uint32_t y = 0; y < 11; y++)
      for (uint32_t x = 0; x < 13; x++)
        bad += bp[(z * 11 + y) * 13 + x] != pattern(x + 5, y + 6, z + 2);
  TEST_CHECK_MSG(bad == 0, "%zu texels wrong read back packed", bad);
  /* Image to image: slice 3's box into the 2D image at (20, 10). */
  nvhcq_image_region from = {5, 6, 3, 13, 11, 1}, to = {20, 10, 0, 0, 0, 0};
  float *zf = calloc(40 * 30, 4);
  TEST_CHECK(nvhcq_image_write(other, NULL, zf, 0, 0) == 0);
  TEST_CHECK_MSG(nvhcq_image_copy(other, &to, img, &from) == 0, "%s", nvhcq_last_error());
  uint32_t *o = malloc(40 * 30 * 4);
  TEST_CHECK(nvhcq_image_read(o, 0, 0, other, NULL) == 0);
  bad = 0;
  for (uint32_t y = 0; y < 30; y++)
    for (uint32_t x = 0; x < 40; x++) {
      int in = x >= 20 && x < 33 && y >= 10 && y < 21;
      bad += o[y * 40 + x] != (in ? pattern(x - 15, y - 4, 3) : 0);
    }
  TEST_CHECK_MSG(bad == 0, "%zu texels wrong after an image-to-image copy", bad);
  free(zero), free(all), free(src), free(zf), free(o);
  nvhcq_buffer_destroy(buf);
  nvhcq_buffer_destroy(back);
  TEST_CHECK(nvhcq_image_destroy(img) == 0 && nvhcq_image_destroy(other) == 0);
}

static void t_refusals(void) {
  NEED_DEVICE();
  const uint32_t z = sizeof(nvhcq_image_desc);
  nvhcq_image_desc bad[] = {
      {z, 0, 10, 0, NVHCQ_TEXEL_F32, 1, 0, 0},
      {z, 10, 10, 0, NVHCQ_TEXEL_F32, 3, 0, 0},
      {z, 10, 10, 0, 99, 1, 0, 0},
      {z, 200000, 0, 0, NVHCQ_TEXEL_F32, 1, 0, 0},
      {z, 10, 10, 20000, NVHCQ_TEXEL_F32, 1, 0, 0},
      {z, 10, 10, 0, NVHCQ_TEXEL_F32, 1, NVHCQ_IMAGE_LAYERED, 0},
      {z, 10, 10, 0, NVHCQ_TEXEL_F32, 1, 0x100, 0},
      {z, 10, 10, 0, NVHCQ_TEXEL_F32, 1, 0, 5}, /* 4 levels at most */
      {z, 10, 10, 3, NVHCQ_TEXEL_F32, 1, NVHCQ_IMAGE_LAYERED, 2},
      {z - 4, 10, 10, 0, NVHCQ_TEXEL_F32, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nvhcq_image *img = (nvhcq_image *)1;
    TEST_CHECK_MSG(nvhcq_image_create(dev, &bad[i], &img) == NVHCQ_ERROR_INVALID_ARGUMENT && !img,
                   "case %zu", i);
  }
  nvhcq_image *img = make_image(16, 16, 0, NVHCQ_TEXEL_F32, 1, 0);
  if (!img) return;
  nvhcq_image_desc got = {.struct_size = sizeof got};
  TEST_CHECK(nvhcq_image_get_desc(img, &got) == 0 && got.width == 16 && got.height == 16 &&
             got.type == NVHCQ_TEXEL_F32 && got.struct_size == sizeof got);
  got.struct_size = 8;
  TEST_CHECK(nvhcq_image_get_desc(img, &got) == NVHCQ_ERROR_INVALID_ARGUMENT);
  float data[16 * 16] = {0};
  nvhcq_image_region past = {10, 0, 0, 7, 1, 1};
  TEST_CHECK(nvhcq_image_write(img, &past, data, 0, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "runs past") != NULL);
  nvhcq_surface *sf = NULL;
  TEST_CHECK(nvhcq_surface_create(img, &sf) == NVHCQ_ERROR_INVALID_ARGUMENT && !sf);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  TEST_CHECK(nvhcq_texture_handle(t) != 0);
  TEST_CHECK(nvhcq_image_destroy(img) == NVHCQ_ERROR_BUSY);
  TEST_CHECK(strstr(nvhcq_last_error(), "destroy them first") != NULL);
  nvhcq_texture_desc td = {
      .struct_size = sizeof td, .source = NVHCQ_TEXTURE_IMAGE, .image = img, .flags = 0x80};
  nvhcq_texture *t2 = NULL;
  TEST_CHECK(nvhcq_texture_create(dev, &td, &t2) == NVHCQ_ERROR_INVALID_ARGUMENT && !t2);
  nvhcq_buffer *buf = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &buf) == 0);
  nvhcq_texture_desc pd = {.struct_size = sizeof pd,
                           .source = NVHCQ_TEXTURE_PITCH2D,
                           .buffer = buf,
                           .offset = 0,
                           .pitch = 100,
                           .width = 20,
                           .height = 10,
                           .type = NVHCQ_TEXEL_F32,
                           .channels = 1};
  TEST_CHECK(nvhcq_texture_create(dev, &pd, &t2) == NVHCQ_ERROR_INVALID_ARGUMENT);
  pd.pitch = 128, pd.height = 100; /* past the buffer */
  TEST_CHECK(nvhcq_texture_create(dev, &pd, &t2) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  TEST_CHECK(nvhcq_texture_destroy(t) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_buffer_destroy(buf);
}

/* ---- sampling (the GPU) ---- */

typedef struct {
  uint64_t tex, out;
  int32_t w, h;
  float ox, oy, scale;
} args2d;

/* Point sampling at texel centres gives back every texel. */
static void t_point_2d(void) {
  NEED_TEXTURES();
  const int w = 345, h = 233;
  nvhcq_image *img = make_image(w, h, 0, NVHCQ_TEXEL_F32, 1, 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, (size_t)w * h * 4, NVHCQ_MEMORY_HOST, &out) == 0);
  float *src = malloc((size_t)w * h * 4);
  for (int i = 0; i < w * h; i++) src[i] = (float)pattern(i % w, i / w, 0) / 4096.0f;
  TEST_CHECK(nvhcq_image_write(img, NULL, src, 0, 0) == 0);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  args2d a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h, 0.5f, 0.5f, 1.0f};
  launch("tex2d_f", (nvhcq_dim3){(w + 127) / 128, h, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
  const float *r = nvhcq_buffer_host_pointer(out);
  size_t bad = 0;
  for (int i = 0; i < w * h; i++) bad += r[i] != src[i];
  TEST_CHECK_MSG(bad == 0, "%zu of %d texels wrong (first %g want %g)", bad, w * h, r[0], src[0]);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0);
  free(src);
  nvhcq_buffer_destroy(out);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
}

/* Linear filtering between texels, with the hardware's 8-bit fraction (CUDA's programming guide:
 * the weights are 9-bit fixed point with 8 fractional bits), and wrap addressing. *spread is the
 * largest difference between the four texels: how far one step of a weight moves the result. */
static float lerp_ref(const float *img, int w, int h, float u, float v, float *spread) {
  float x = u * w - 0.5f, y = v * h - 0.5f;
  float fx = floorf(x), fy = floorf(y);
  float a = roundf((x - fx) * 256.0f) / 256.0f, b = roundf((y - fy) * 256.0f) / 256.0f;
  int x0 = ((int)fx % w + w) % w, y0 = ((int)fy % h + h) % h, x1 = (x0 + 1) % w, y1 = (y0 + 1) % h;
  float t[4] = {img[y0 * w + x0], img[y0 * w + x1], img[y1 * w + x0], img[y1 * w + x1]};
  float lo = fminf(fminf(t[0], t[1]), fminf(t[2], t[3]));
  *spread = fmaxf(fmaxf(t[0], t[1]), fmaxf(t[2], t[3])) - lo;
  return (1 - a) * (1 - b) * t[0] + a * (1 - b) * t[1] + (1 - a) * b * t[2] + a * b * t[3];
}

static void t_linear_filter(void) {
  NEED_TEXTURES();
  const int w = 64, h = 64;
  nvhcq_image *img = make_image(w, h, 0, NVHCQ_TEXEL_F32, 1, 0);
  float src[64 * 64];
  for (int i = 0; i < w * h; i++) src[i] = (float)(pattern(i % w, i / w, 1) % 1000);
  TEST_CHECK(nvhcq_image_write(img, NULL, src, 0, 0) == 0);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_WRAP,
                                  NVHCQ_TEXTURE_LINEAR_FILTER | NVHCQ_TEXTURE_NORMALIZED_COORDS);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, (size_t)w * h * 4, NVHCQ_MEMORY_HOST, &out) == 0);
  /* Offsets of a third of a texel, over the edge (wrap) at the end. */
  args2d a = {
      nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h, 0.8333f, 0.25f, 1.0f / 64};
  launch("tex2d_f", (nvhcq_dim3){1, h, 1}, (nvhcq_dim3){64, 1, 1}, &a, sizeof a);
  const float *r = nvhcq_buffer_host_pointer(out);
  /* The H200 lands within one weight step (1/256 of the texels' spread) of the reference, not
   * on it: 0.98 at most over this image, where point sampling would be off by a third of the
   * spread (up to 333). */
  double worst = 0;
  int bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float spread;
      float want = lerp_ref(src, w, h, (x + a.ox) * a.scale, (y + a.oy) * a.scale, &spread);
      double e = fabs(r[y * w + x] - want);
      worst = e > worst ? e : worst;
      bad += e > spread / 256.0 + 0.01;
    }
  TEST_CHECK_MSG(bad == 0,
                 "linear filtering: %d texels off by more than one weight step (worst %g, "
                 "values 0..999)",
                 bad, worst);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0);
  nvhcq_buffer_destroy(out);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
}

typedef struct {
  uint64_t tex, out;
  int32_t w, h;
} args_wh;

/* 8-bit RGBA read as [0, 1] floats and read as integers; 16-bit signed pairs as [-1, 1]; halves. */
static void t_texel_kinds(void) {
  NEED_TEXTURES();
  const int w = 33, h = 17;
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, (size_t)w * h * 16, NVHCQ_MEMORY_HOST, &out) == 0);
  uint8_t rgba[33 * 17 * 4];
  for (int i = 0; i < w * h * 4; i++) rgba[i] = (uint8_t)(i * 37 + 11);
  nvhcq_image *img = make_image(w, h, 0, NVHCQ_TEXEL_U8, 4, 0);
  TEST_CHECK(nvhcq_image_write(img, NULL, rgba, 0, 0) == 0);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  args_wh a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h};
  launch("tex2d_f4", (nvhcq_dim3){1, h, 1}, (nvhcq_dim3){64, 1, 1}, &a, sizeof a);
  const float *f = nvhcq_buffer_host_pointer(out);
  size_t bad = 0;
  for (int i = 0; i < w * h * 4; i++) bad += fabsf(f[i] - rgba[i] / 255.0f) > 1e-6f;
  TEST_CHECK_MSG(bad == 0, "u8x4 as normalized floats: %zu wrong (first %g want %g)", bad, f[0],
                 rgba[0] / 255.0);
  nvhcq_texture *ti = make_texture(img, NVHCQ_ADDRESS_CLAMP, NVHCQ_TEXTURE_READ_AS_INTEGER);
  a.tex = nvhcq_texture_handle(ti);
  launch("tex2d_u4", (nvhcq_dim3){1, h, 1}, (nvhcq_dim3){64, 1, 1}, &a, sizeof a);
  const uint32_t *u = nvhcq_buffer_host_pointer(out);
  bad = 0;
  for (int i = 0; i < w * h * 4; i++) bad += u[i] != rgba[i];
  TEST_CHECK_MSG(bad == 0, "u8x4 as integers: %zu wrong", bad);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_texture_destroy(ti) == 0);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
  int16_t s16[33 * 17 * 2];
  for (int i = 0; i < w * h * 2; i++) s16[i] = (int16_t)(i * 977 - 30000);
  img = make_image(w, h, 0, NVHCQ_TEXEL_S16, 2, 0);
  TEST_CHECK(nvhcq_image_write(img, NULL, s16, 0, 0) == 0);
  t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  a.tex = nvhcq_texture_handle(t);
  launch("tex2d_f2", (nvhcq_dim3){1, h, 1}, (nvhcq_dim3){64, 1, 1}, &a, sizeof a);
  bad = 0;
  for (int i = 0; i < w * h * 2; i++) {
    float want = s16[i] / 32767.0f;
    bad += fabsf(f[i] - (want < -1 ? -1 : want)) > 1e-6f;
  }
  TEST_CHECK_MSG(bad == 0, "s16x2 as normalized floats: %zu wrong (first %g want %g)", bad, f[0],
                 s16[0] / 32767.0);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  nvhcq_buffer_destroy(out);
}

/* A 3D image of float4, every texel at its centre; a border colour outside a 2D one. */
static void t_3d_and_border(void) {
  NEED_TEXTURES();
  const int w = 37, h = 29, d = 19;
  nvhcq_image *img = make_image(w, h, d, NVHCQ_TEXEL_F32, 4, 0);
  size_t n = (size_t)w * h * d * 4;
  float *src = malloc(n * 4);
  for (size_t i = 0; i < n; i++) src[i] = (float)(pattern((uint32_t)i, 1, 2) & 0xffff);
  TEST_CHECK(nvhcq_image_write(img, NULL, src, 0, 0) == 0);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, n * 4, NVHCQ_MEMORY_HOST, &out) == 0);
  struct {
    uint64_t tex, out;
    int32_t w, h, d;
  } a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h, d};
  launch("tex3d_f4", (nvhcq_dim3){1, h, d}, (nvhcq_dim3){64, 1, 1}, &a, sizeof a);
  TEST_CHECK_MSG(!memcmp(nvhcq_buffer_host_pointer(out), src, n * 4), "3D float4 texels differ");
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  /* Border: coordinates shifted by half the image, so the right half reads the colour. */
  const int bw = 40, bh = 8;
  img = make_image(bw, bh, 0, NVHCQ_TEXEL_F32, 1, 0);
  float ones[40 * 8];
  for (int i = 0; i < bw * bh; i++) ones[i] = 1.0f;
  TEST_CHECK(nvhcq_image_write(img, NULL, ones, 0, 0) == 0);
  nvhcq_texture_desc td = {.struct_size = sizeof td,
                           .source = NVHCQ_TEXTURE_IMAGE,
                           .image = img,
                           .address = {NVHCQ_ADDRESS_BORDER, NVHCQ_ADDRESS_BORDER},
                           .border = {0.25f, 0.5f, 0.75f, 1.0f}};
  TEST_CHECK(nvhcq_texture_create(dev, &td, &t) == 0);
  args2d b = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), bw, bh, 20.5f, 0.5f, 1.0f};
  launch("tex2d_f", (nvhcq_dim3){1, bh, 1}, (nvhcq_dim3){64, 1, 1}, &b, sizeof b);
  const float *r = nvhcq_buffer_host_pointer(out);
  size_t bad = 0;
  for (int y = 0; y < bh; y++)
    for (int x = 0; x < bw; x++) bad += r[y * bw + x] != (x < 20 ? 1.0f : 0.25f);
  TEST_CHECK_MSG(bad == 0, "border colour: %zu wrong (x=39 read %g)", bad, r[39]);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  nvhcq_buffer_destroy(out);
  free(src);
}

typedef struct {
  uint64_t tex, out;
  int32_t n;
} args_n;

/* 1D images, linear memory (tex1Dfetch), pitched memory, and layered 2D images. */
static void t_1d_linear_pitch_layered(void) {
  NEED_TEXTURES();
  const int n = 1234;
  float v[1234];
  for (int i = 0; i < n; i++) v[i] = (float)i * 0.5f - 100.0f;
  nvhcq_buffer *out = NULL, *mem = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 64 * 1024, NVHCQ_MEMORY_HOST, &out) == 0);
  TEST_CHECK(nvhcq_buffer_create(dev, 64 * 1024, NVHCQ_MEMORY_DEVICE, &mem) == 0);
  nvhcq_image *img = make_image(n, 0, 0, NVHCQ_TEXEL_F32, 1, 0);
  TEST_CHECK(nvhcq_image_write(img, NULL, v, 0, 0) == 0);
  nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  args_n a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), n};
  launch("tex1d_f", (nvhcq_dim3){(n + 127) / 128, 1, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
  TEST_CHECK_MSG(!memcmp(nvhcq_buffer_host_pointer(out), v, sizeof v), "1D image texels differ");
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  TEST_CHECK(nvhcq_buffer_write(mem, 256, v, sizeof v) == 0);
  nvhcq_texture_desc ld = {.struct_size = sizeof ld,
                           .source = NVHCQ_TEXTURE_LINEAR,
                           .buffer = mem,
                           .offset = 256,
                           .width = (uint32_t)n,
                           .type = NVHCQ_TEXEL_F32,
                           .channels = 1};
  TEST_CHECK_MSG(nvhcq_texture_create(dev, &ld, &t) == 0, "%s", nvhcq_last_error());
  a.tex = nvhcq_texture_handle(t);
  launch("tex1d_fetch", (nvhcq_dim3){(n + 127) / 128, 1, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
  TEST_CHECK_MSG(!memcmp(nvhcq_buffer_host_pointer(out), v, sizeof v), "linear texels differ");
  TEST_CHECK(nvhcq_texture_destroy(t) == 0);
  /* Pitched: 30 x 20 floats, rows 128 bytes apart, from offset 512. */
  float rows[20 * 32];
  for (int i = 0; i < 20 * 32; i++) rows[i] = (float)(i * 3);
  TEST_CHECK(nvhcq_buffer_write(mem, 512, rows, sizeof rows) == 0);
  nvhcq_texture_desc pd = {.struct_size = sizeof pd,
                           .source = NVHCQ_TEXTURE_PITCH2D,
                           .buffer = mem,
                           .offset = 512,
                           .pitch = 128,
                           .width = 30,
                           .height = 20,
                           .type = NVHCQ_TEXEL_F32,
                           .channels = 1};
  TEST_CHECK_MSG(nvhcq_texture_create(dev, &pd, &t) == 0, "%s", nvhcq_last_error());
  args2d b = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), 30, 20, 0.5f, 0.5f, 1.0f};
  launch("tex2d_f", (nvhcq_dim3){1, 20, 1}, (nvhcq_dim3){32, 1, 1}, &b, sizeof b);
  const float *r = nvhcq_buffer_host_pointer(out);
  size_t bad = 0;
  for (int y = 0; y < 20; y++)
    for (int x = 0; x < 30; x++) bad += r[y * 30 + x] != rows[y * 32 + x];
  TEST_CHECK_MSG(bad == 0, "pitched texels: %zu wrong", bad);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0);
  /* Layered: 51 x 43 x 7 layers. */
  const int lw = 51, lh = 43, ll = 7;
  float *lv = malloc((size_t)lw * lh * ll * 4);
  for (int i = 0; i < lw * lh * ll; i++) lv[i] = (float)(pattern(i, 5, 5) & 0xfffff);
  img = make_image(lw, lh, ll, NVHCQ_TEXEL_F32, 1, NVHCQ_IMAGE_LAYERED);
  TEST_CHECK(nvhcq_image_write(img, NULL, lv, 0, 0) == 0);
  t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
  args_wh c = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), lw, lh};
  launch("tex2d_layered", (nvhcq_dim3){1, lh, ll}, (nvhcq_dim3){64, 1, 1}, &c, sizeof c);
  TEST_CHECK_MSG(!memcmp(nvhcq_buffer_host_pointer(out), lv, (size_t)lw * lh * ll * 4),
                 "layered texels differ");
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_image_destroy(img) == 0);
  free(lv);
  nvhcq_buffer_destroy(out);
  nvhcq_buffer_destroy(mem);
}

/* A surface written by one kernel reads back through nvhcq_image_read, and through another
 * kernel's surface reads. */
static void t_surface(void) {
  NEED_TEXTURES();
  const int w = 345, h = 233;
  nvhcq_image *img = make_image(w, h, 0, NVHCQ_TEXEL_U32, 1, NVHCQ_IMAGE_SURFACE);
  nvhcq_surface *sf = NULL;
  TEST_CHECK_MSG(nvhcq_surface_create(img, &sf) == 0, "%s", nvhcq_last_error());
  args_wh a = {nvhcq_surface_handle(sf), 0, w, h};
  struct {
    uint64_t s;
    int32_t w, h;
  } fa = {a.tex, w, h};
  launch("surf2d_fill", (nvhcq_dim3){(w + 127) / 128, h, 1}, (nvhcq_dim3){128, 1, 1}, &fa,
         sizeof fa);
  uint32_t *got = malloc((size_t)w * h * 4);
  TEST_CHECK(nvhcq_image_read(got, 0, 0, img, NULL) == 0);
  size_t bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      bad += got[y * w + x] != (((uint32_t)y << 16 | (uint32_t)x) ^ 0x5a5a5a5au);
  TEST_CHECK_MSG(bad == 0, "surface writes: %zu texels wrong (first 0x%x)", bad, got[0]);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, (size_t)w * h * 4, NVHCQ_MEMORY_HOST, &out) == 0);
  a.out = nvhcq_buffer_gpu_address(out);
  launch("surf2d_read", (nvhcq_dim3){(w + 127) / 128, h, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
  TEST_CHECK_MSG(!memcmp(nvhcq_buffer_host_pointer(out), got, (size_t)w * h * 4),
                 "surface reads differ from the image");
  TEST_CHECK(nvhcq_surface_destroy(sf) == 0 && nvhcq_image_destroy(img) == 0);
  nvhcq_buffer_destroy(out);
  free(got);
}

static void test_cleanup(void) {
  if (tex_mod) TEST_CHECK(nvhcq_module_unload(tex_mod) == 0);
  tex_mod = NULL;
  teardown();
}

/* A texture destroyed right after a kernel that samples it was submitted: the kernel still reads
 * it (its slot is cleared only once the GPU is past that kernel). */
static void t_destroy_while_sampling(void) {
  NEED_TEXTURES();
  const int w = 1024, h = 1024;
  nvhcq_image *img = make_image(w, h, 0, NVHCQ_TEXEL_F32, 1, 0);
  float *src = malloc(sizeof(float) * w * h);
  for (int i = 0; i < w * h; i++) src[i] = (float)(i % 4099) + 1.0f;
  TEST_CHECK(nvhcq_image_write(img, NULL, src, 0, 0) == 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, sizeof(float) * w * h, NVHCQ_MEMORY_DEVICE, &out) == 0);
  nvhcq_kernel *k = NULL;
  nvhcq_queue *q = NULL;
  TEST_CHECK(nvhcq_module_get_kernel(tex_mod, "tex2d_f", &k) == 0);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == 0);
  for (int round = 0; round < 8 && k && q && out && img; round++) {
    nvhcq_texture *t = make_texture(img, NVHCQ_ADDRESS_CLAMP, 0);
    args2d a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h, 0.5f, 0.5f, 1.0f};
    TEST_CHECK(nvhcq_queue_launch(q, k, (nvhcq_dim3){(uint32_t)w / 128, (uint32_t)h, 1},
                                  (nvhcq_dim3){128, 1, 1}, 0, &a, sizeof a) == 0);
    TEST_CHECK(nvhcq_queue_submit(q) == 0);
    TEST_CHECK(nvhcq_texture_destroy(t) == 0); /* while the kernel may still run */
    TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, 0) == 0);
    float *got = malloc(sizeof(float) * w * h);
    TEST_CHECK(nvhcq_buffer_read(got, out, 0, sizeof(float) * w * h) == 0);
    size_t bad = 0;
    for (int i = 0; i < w * h; i++) bad += got[i] != src[i];
    TEST_CHECK_MSG(bad == 0, "round %d: %zu of %d texels wrong after the texture was destroyed",
                   round, bad, w * h);
    free(got);
  }
  nvhcq_queue_destroy(q);
  nvhcq_buffer_destroy(out);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
  free(src);
}

/* ---- mipmapped images ---- */

/* Level L's texel (x, y, z): distinct in every level. */
static float level_value(uint32_t level, uint32_t x, uint32_t y, uint32_t z) {
  return (float)(level * 100000 + z * 10000 + y * 100 + x);
}

/* A mipmapped image with each level written through its own image and read back (the mock too);
 * levels named and refused as they should be. */
static nvhcq_image *make_mipmapped(uint32_t w, uint32_t h, uint32_t d, uint32_t levels) {
  nvhcq_image_desc desc = {sizeof desc, w, h, d, NVHCQ_TEXEL_F32, 1, 0, levels};
  nvhcq_image *img = NULL;
  TEST_CHECK_MSG(nvhcq_image_create(dev, &desc, &img) == 0, "%s", nvhcq_last_error());
  for (uint32_t l = 0; img && l < levels; l++) {
    nvhcq_image *lv = NULL;
    TEST_CHECK(nvhcq_image_get_level(img, l, &lv) == 0);
    nvhcq_image_desc ld = {.struct_size = sizeof ld};
    TEST_CHECK(nvhcq_image_get_desc(lv, &ld) == 0);
    uint32_t lw = ld.width, lh = ld.height ? ld.height : 1, lz = ld.depth ? ld.depth : 1;
    TEST_CHECK_MSG(lw == (w >> l ? w >> l : 1) && lh == (h >> l ? h >> l : 1), "level %u: %ux%u", l,
                   lw, lh);
    size_t n = (size_t)lw * lh * lz;
    float *v = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
      v[i] = level_value(l, (uint32_t)(i % lw), (uint32_t)(i / lw % lh), (uint32_t)(i / lw / lh));
    TEST_CHECK(nvhcq_image_write(lv, NULL, v, 0, 0) == 0);
    free(v);
  }
  /* every level read back after all were written: no two overlap */
  for (uint32_t l = 0; img && l < levels; l++) {
    nvhcq_image *lv = NULL;
    nvhcq_image_desc ld = {.struct_size = sizeof ld};
    TEST_CHECK(nvhcq_image_get_level(img, l, &lv) == 0 && nvhcq_image_get_desc(lv, &ld) == 0);
    uint32_t lw = ld.width, lh = ld.height ? ld.height : 1, lz = ld.depth ? ld.depth : 1;
    size_t n = (size_t)lw * lh * lz, bad = 0;
    float *v = malloc(n * 4);
    TEST_CHECK(nvhcq_image_read(v, 0, 0, lv, NULL) == 0);
    for (size_t i = 0; i < n; i++)
      bad += v[i] !=
             level_value(l, (uint32_t)(i % lw), (uint32_t)(i / lw % lh), (uint32_t)(i / lw / lh));
    TEST_CHECK_MSG(bad == 0, "level %u: %zu texels differ after writing every level", l, bad);
    free(v);
  }
  return img;
}

static void t_mipmap_levels(void) {
  NEED_DEVICE();
  nvhcq_image *img = make_mipmapped(100, 40, 0, 5);
  if (!img) return;
  nvhcq_image *lv = NULL, *none = NULL;
  TEST_CHECK(nvhcq_image_get_level(img, 5, &none) == NVHCQ_ERROR_INVALID_ARGUMENT && !none);
  TEST_CHECK(nvhcq_image_get_level(img, 2, &lv) == 0);
  TEST_CHECK(nvhcq_image_get_level(lv, 0, &none) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_image_destroy(lv) == NVHCQ_ERROR_INVALID_ARGUMENT); /* it goes with img */
  TEST_CHECK(nvhcq_image_size(img) > nvhcq_image_size(lv));
  TEST_CHECK(nvhcq_image_destroy(img) == 0);
  nvhcq_image *cube = make_mipmapped(16, 16, 16, 3);
  TEST_CHECK(nvhcq_image_destroy(cube) == 0);
}

typedef struct {
  uint64_t tex, out;
  int32_t w, h;
  float lod;
} args_lod;

/* Each level sampled at its level of detail, at every texel centre: exactly its texels, so the
 * levels lie where the texture units look for them; linear between levels 0 and 1 at LOD 0.5. */
static void t_mipmap_sampling(void) {
  NEED_TEXTURES();
  const uint32_t W = 100, H = 40, L = 5;
  nvhcq_image *img = make_mipmapped(W, H, 0, L);
  if (!img) return;
  nvhcq_texture_desc d = {.struct_size = sizeof d,
                          .source = NVHCQ_TEXTURE_IMAGE,
                          .image = img,
                          .address = {NVHCQ_ADDRESS_CLAMP, NVHCQ_ADDRESS_CLAMP},
                          .flags = NVHCQ_TEXTURE_NORMALIZED_COORDS,
                          .mip_filter = NVHCQ_MIP_POINT,
                          .max_lod = (float)(L - 1)};
  nvhcq_texture *t = NULL, *lin = NULL;
  TEST_CHECK_MSG(nvhcq_texture_create(dev, &d, &t) == 0, "%s", nvhcq_last_error());
  d.mip_filter = NVHCQ_MIP_LINEAR;
  TEST_CHECK(nvhcq_texture_create(dev, &d, &lin) == 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, W * H * 4, NVHCQ_MEMORY_HOST, &out) == 0);
  if (!t || !lin || !out) return;
  const float *r = nvhcq_buffer_host_pointer(out);
  for (uint32_t l = 0; l < L; l++) {
    int32_t w = (int32_t)(W >> l), h = (int32_t)(H >> l > 0 ? H >> l : 1);
    args_lod a = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), w, h, (float)l};
    launch("tex2d_lod", (nvhcq_dim3){1, (uint32_t)h, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        bad += r[y * w + x] != level_value(l, (uint32_t)x, (uint32_t)y, 0);
    TEST_CHECK_MSG(bad == 0, "level %u (%d x %d) at LOD %u: %d texels wrong (first %g want %g)", l,
                   w, h, l, bad, r[0], level_value(l, 0, 0, 0));
  }
  args_lod a = {nvhcq_texture_handle(lin), nvhcq_buffer_gpu_address(out), (int32_t)W, (int32_t)H,
                0.5f};
  launch("tex2d_lod", (nvhcq_dim3){1, H, 1}, (nvhcq_dim3){128, 1, 1}, &a, sizeof a);
  int bad = 0;
  for (uint32_t y = 0; y < H; y++)
    for (uint32_t x = 0; x < W; x++) {
      float want = 0.5f * level_value(0, x, y, 0) + 0.5f * level_value(1, x / 2, y / 2, 0);
      bad += fabsf(r[y * W + x] - want) > 1e-3f * fabsf(want) + 0.5f;
    }
  TEST_CHECK_MSG(bad == 0, "linear between levels 0 and 1: %d texels off", bad);
  TEST_CHECK(nvhcq_image_destroy(img) == NVHCQ_ERROR_BUSY);
  TEST_CHECK(nvhcq_texture_destroy(t) == 0 && nvhcq_texture_destroy(lin) == 0);
  TEST_CHECK(nvhcq_image_destroy(img) == 0);

  /* 3D: 16^3 over 3 levels */
  nvhcq_image *cube = make_mipmapped(16, 16, 16, 3);
  if (!cube) return;
  d.image = cube, d.mip_filter = NVHCQ_MIP_POINT, d.max_lod = 2;
  d.address[2] = NVHCQ_ADDRESS_CLAMP;
  TEST_CHECK(nvhcq_texture_create(dev, &d, &t) == 0);
  for (uint32_t l = 0; t && l < 3; l++) {
    int32_t n = 16 >> l;
    struct {
      uint64_t tex, out;
      int32_t w, h, d;
      float lod;
    } b = {nvhcq_texture_handle(t), nvhcq_buffer_gpu_address(out), n, n, n, (float)l};
    launch("tex3d_lod", (nvhcq_dim3){1, (uint32_t)n, (uint32_t)n}, (nvhcq_dim3){32, 1, 1}, &b,
           sizeof b);
    int wrong = 0;
    for (int i = 0; i < n * n * n; i++)
      wrong +=
          r[i] != level_value(l, (uint32_t)(i % n), (uint32_t)(i / n % n), (uint32_t)(i / n / n));
    TEST_CHECK_MSG(wrong == 0, "3D level %u: %d texels wrong", l, wrong);
  }
  TEST_CHECK(nvhcq_texture_destroy(t) == 0);
  TEST_CHECK(nvhcq_image_destroy(cube) == 0);
  nvhcq_buffer_destroy(out);
}

TEST_MAIN(TEST(t_image_round_trips), TEST(t_image_regions), TEST(t_refusals), TEST(t_point_2d),
          TEST(t_linear_filter), TEST(t_texel_kinds), TEST(t_3d_and_border),
          TEST(t_1d_linear_pitch_layered), TEST(t_surface), TEST(t_destroy_while_sampling),
          TEST(t_mipmap_levels), TEST(t_mipmap_sampling), TEST(test_cleanup))
