/* CUDA arrays, texture objects and surface objects through nvhcq's libcuda.so.1: arrays of each
 * shape and format made, described and copied to and from host memory, device memory and other
 * arrays (GPU or mock); texture objects sampled and surface objects written by kernels (GPU: the
 * kernels are tests/device/texture.cu's cubin, found in NVHCQ_TEST_CUBIN_DIR). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

#define IS(x, code) TEST_CHECK_MSG((x) == (code), "%s", #x)

static uint32_t value_at(uint32_t x, uint32_t y, uint32_t z) {
  return (z << 24) ^ (y << 12) ^ x ^ 0x9e3779b9u * (x + 3 * y + 7 * z);
}

static CUarray make_array(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
                          unsigned flags) {
  CUDA_ARRAY3D_DESCRIPTOR desc = {w, h, d, f, ch, flags};
  CUarray a = NULL;
  OK(cuArray3DCreate_v2(&a, &desc));
  return a;
}

/* Descriptors come back as made; 2D ones through both calls; refusals as CUDA's. */
static void test_array_descriptors(void) {
  NEED_DEVICE();
  CUDA_ARRAY_DESCRIPTOR d2 = {300, 200, CU_AD_FORMAT_HALF, 2}, got2;
  CUarray a;
  OK(cuArrayCreate_v2(&a, &d2));
  OK(cuArrayGetDescriptor_v2(&got2, a));
  TEST_CHECK(!memcmp(&got2, &d2, sizeof d2));
  CUDA_ARRAY3D_DESCRIPTOR got3;
  OK(cuArray3DGetDescriptor_v2(&got3, a));
  TEST_CHECK(got3.Width == 300 && got3.Height == 200 && got3.Depth == 0 && got3.NumChannels == 2);
  OK(cuArrayDestroy(a));
  TEST_CHECK(cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE);

  CUarray l = make_array(64, 32, 5, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
  TEST_CHECK(cuArrayGetDescriptor_v2(&got2, l) == CUDA_ERROR_INVALID_VALUE); /* layered: 3D only */
  OK(cuArray3DGetDescriptor_v2(&got3, l));
  TEST_CHECK(got3.Depth == 5 && got3.Flags == CUDA_ARRAY3D_LAYERED);
  OK(cuArrayDestroy(l));

  CUDA_ARRAY3D_DESCRIPTOR bad = {16, 16, 0, CU_AD_FORMAT_FLOAT, 3, 0};
  TEST_CHECK(cuArray3DCreate_v2(&a, &bad) == CUDA_ERROR_INVALID_VALUE); /* 3 channels */
  bad.NumChannels = 1, bad.Format = (CUarray_format)0x77;
  TEST_CHECK(cuArray3DCreate_v2(&a, &bad) == CUDA_ERROR_INVALID_VALUE);
  bad.Format = CU_AD_FORMAT_FLOAT, bad.Width = 0;
  TEST_CHECK(cuArray3DCreate_v2(&a, &bad) == CUDA_ERROR_INVALID_VALUE);
  bad.Width = 16, bad.Flags = CUDA_ARRAY3D_CUBEMAP;
  TEST_CHECK(cuArray3DCreate_v2(&a, &bad) == CUDA_ERROR_NOT_SUPPORTED);
}

/* Host -> array (pitched, 2D) -> array (a sub-region) -> device -> host, bytes compared. */
static void test_array_copies_2d(void) {
  NEED_DEVICE();
  const size_t w = 333, h = 77, pitch = 1400; /* uint32 elements; the host rows have padding */
  uint8_t *host = calloc(pitch * h, 1);
  for (size_t y = 0; y < h; y++)
    for (size_t x = 0; x < w; x++)
      ((uint32_t *)(host + y * pitch))[x] = value_at((uint32_t)x, (uint32_t)y, 0);
  CUarray a = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, 0);
  CUarray b = make_array(w, h, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                     .srcHost = host,
                     .srcPitch = pitch,
                     .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                     .dstArray = a,
                     .WidthInBytes = w * 4,
                     .Height = h};
  OK(cuMemcpy2D_v2(&c));
  /* Array to array, a region of 100 x 30 from (20, 10) to (5, 40) of an array of the same texel
   * size. */
  CUDA_MEMCPY2D r = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                     .srcArray = a,
                     .srcXInBytes = 80,
                     .srcY = 10,
                     .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                     .dstArray = b,
                     .dstXInBytes = 20,
                     .dstY = 40,
                     .WidthInBytes = 400,
                     .Height = 30};
  OK(cuMemcpy2D_v2(&r));
  CUdeviceptr dev;
  OK(cuMemAlloc_v2(&dev, 100 * 30 * 4));
  CUDA_MEMCPY2D out = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                       .srcArray = b,
                       .srcXInBytes = 20,
                       .srcY = 40,
                       .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                       .dstDevice = dev,
                       .WidthInBytes = 400,
                       .Height = 30};
  OK(cuMemcpy2DAsync_v2(&out, NULL));
  uint32_t got[100 * 30];
  OK(cuMemcpyDtoH_v2(got, dev, sizeof got));
  size_t bad = 0;
  for (size_t y = 0; y < 30; y++)
    for (size_t x = 0; x < 100; x++)
      bad += got[y * 100 + x] != value_at((uint32_t)x + 20, (uint32_t)y + 10, 0);
  TEST_CHECK_MSG(bad == 0, "%zu of 3000 words differ after host -> array -> array -> device", bad);
  /* The whole first array back to pitched host memory. */
  uint8_t *back = calloc(pitch * h, 1);
  CUDA_MEMCPY2D home = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                        .srcArray = a,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = back,
                        .dstPitch = pitch,
                        .WidthInBytes = w * 4,
                        .Height = h};
  OK(cuMemcpy2D_v2(&home));
  TEST_CHECK(!memcmp(back, host, pitch * h));
  /* Part of an element, and a region past the edge: refused, nothing written. */
  CUDA_MEMCPY2D odd = home;
  odd.WidthInBytes = 6;
  TEST_CHECK(cuMemcpy2D_v2(&odd) == CUDA_ERROR_INVALID_VALUE);
  odd.WidthInBytes = 8, odd.srcY = h;
  TEST_CHECK(cuMemcpy2D_v2(&odd) == CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(dev));
  OK(cuArrayDestroy(a));
  OK(cuArrayDestroy(b));
  free(host);
  free(back);
}

/* 3D and layered arrays through cuMemcpy3D; 1D arrays through cuMemcpyHtoA/AtoH/DtoA/AtoD/AtoA. */
static void test_array_copies_3d_1d(void) {
  NEED_DEVICE();
  const size_t w = 40, h = 20, d = 9;
  uint32_t *src = malloc(w * h * d * 4), *dst = calloc(w * h * d, 4);
  for (size_t i = 0; i < w * h * d; i++) src[i] = value_at(i % w, i / w % h, i / (w * h));
  for (int layered = 0; layered < 2; layered++) {
    CUarray a = make_array(w, h, d, CU_AD_FORMAT_FLOAT, 1, layered ? CUDA_ARRAY3D_LAYERED : 0);
    CUDA_MEMCPY3D in = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = src,
                        .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                        .dstArray = a,
                        .WidthInBytes = w * 4,
                        .Height = h,
                        .Depth = d};
    OK(cuMemcpy3D_v2(&in));
    CUDA_MEMCPY3D out = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                         .srcArray = a,
                         .dstMemoryType = CU_MEMORYTYPE_HOST,
                         .dstHost = dst,
                         .WidthInBytes = w * 4,
                         .Height = h,
                         .Depth = d};
    memset(dst, 0, w * h * d * 4);
    OK(cuMemcpy3DAsync_v2(&out, NULL));
    OK(cuCtxSynchronize());
    TEST_CHECK_MSG(!memcmp(src, dst, w * h * d * 4), "%s array round trip differs",
                   layered ? "layered" : "3D");
    OK(cuArrayDestroy(a));
  }
  CUarray one = make_array(1000, 0, 0, CU_AD_FORMAT_SIGNED_INT16, 2, 0);
  CUarray two = make_array(1000, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, 0);
  OK(cuMemcpyHtoA_v2(one, 0, src, 4000));
  OK(cuMemcpyAtoA_v2(two, 400, one, 800, 2000)); /* elements 200..699 to 100..599 */
  CUdeviceptr dv;
  OK(cuMemAlloc_v2(&dv, 4000));
  OK(cuMemsetD8_v2(dv, 0, 4000));
  OK(cuMemcpyAtoD_v2(dv, two, 400, 2000));
  memset(dst, 0, 4000);
  OK(cuMemcpyDtoH_v2(dst, dv, 2000));
  TEST_CHECK(!memcmp(dst, src + 200, 2000));
  OK(cuMemcpyDtoA_v2(one, 0, dv, 2000));
  OK(cuMemcpyAtoHAsync_v2(dst, one, 0, 4000, NULL));
  OK(cuCtxSynchronize());
  TEST_CHECK(!memcmp(dst, src + 200, 2000) && !memcmp(dst + 500, src + 500, 2000));
  TEST_CHECK(cuMemcpyHtoA_v2(one, 2, src, 4) == CUDA_ERROR_INVALID_VALUE);    /* half an element */
  TEST_CHECK(cuMemcpyHtoA_v2(one, 3996, src, 8) == CUDA_ERROR_INVALID_VALUE); /* past the end */
  OK(cuMemFree_v2(dv));
  OK(cuArrayDestroy(one));
  OK(cuArrayDestroy(two));
  free(src);
  free(dst);
}

/* Objects are made, described and destroyed; an array outlives cuArrayDestroy while a texture
 * reads it; surfaces need CUDA_ARRAY3D_SURFACE_LDST. */
static void test_objects(void) {
  NEED_DEVICE();
  CUarray a = make_array(64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0);
  CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY};
  res.res.array.hArray = a;
  CUDA_TEXTURE_DESC tex = {.addressMode = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP},
                           .filterMode = CU_TR_FILTER_MODE_LINEAR,
                           .flags = CU_TRSF_NORMALIZED_COORDINATES,
                           .borderColor = {1, 2, 3, 4}};
  CUtexObject t = 0, t2 = 0;
  OK(cuTexObjectCreate(&t, &res, &tex, NULL));
  OK(cuTexObjectCreate(&t2, &res, &tex, NULL));
  TEST_CHECK(t != 0 && t2 != 0 && t != t2);
  CUDA_RESOURCE_DESC gr;
  CUDA_TEXTURE_DESC gt;
  OK(cuTexObjectGetResourceDesc(&gr, t));
  OK(cuTexObjectGetTextureDesc(&gt, t));
  TEST_CHECK(gr.resType == CU_RESOURCE_TYPE_ARRAY && gr.res.array.hArray == a);
  TEST_CHECK(!memcmp(&gt, &tex, sizeof tex));
  CUsurfObject s;
  TEST_CHECK(cuSurfObjectCreate(&s, &res) == CUDA_ERROR_INVALID_VALUE); /* no SURFACE_LDST */
  OK(cuArrayDestroy(a)); /* the textures still read it */
  TEST_CHECK(cuTexObjectCreate(&t, &res, &tex, NULL) == CUDA_ERROR_INVALID_HANDLE);
  OK(cuTexObjectDestroy(t));
  OK(cuTexObjectDestroy(t2));
  TEST_CHECK(cuTexObjectDestroy(t2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuSurfObjectDestroy(t2) == CUDA_ERROR_INVALID_VALUE);

  CUDA_RESOURCE_VIEW_DESC view = {0};
  CUarray sa = make_array(32, 32, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
  res.res.array.hArray = sa;
  TEST_CHECK(cuTexObjectCreate(&t, &res, &tex, &view) == CUDA_ERROR_NOT_SUPPORTED);
  OK(cuSurfObjectCreate(&s, &res));
  OK(cuSurfObjectGetResourceDesc(&gr, s));
  TEST_CHECK(gr.res.array.hArray == sa);
  TEST_CHECK(cuTexObjectDestroy(s) == CUDA_ERROR_INVALID_VALUE); /* a surface, not a texture */
  OK(cuSurfObjectDestroy(s));
  OK(cuArrayDestroy(sa));
}

/* ---- kernels (GPU) ---- */

static CUmodule mod;

static int load_module(void) {
  if (mod) return 1;
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/texture_sm_90.cubin", dir ? dir : ".");
  int major = 0;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  if (major != 9) return 0;
  CUresult r = cuModuleLoad(&mod, path);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuModuleLoad(%s): %d", path, (int)r);
  return r == CUDA_SUCCESS;
}

#define NEED_TEXTURE_KERNELS()                                                                     \
  do {                                                                                             \
    NEED_CUBIN_KERNELS();                                                                          \
    if (!load_module()) TEST_SKIP("the texture kernels are built for sm_90 only");                 \
  } while (0)

static void run(const char *name, unsigned gx, unsigned gy, unsigned bx, void **params) {
  CUfunction f;
  OK(cuModuleGetFunction(&f, mod, name));
  OK(cuLaunchKernel(f, gx, gy, 1, bx, 1, 1, 0, NULL, params, NULL));
  OK(cuCtxSynchronize());
}

/* simpleTextureDrv's way: a float array from cuMemcpy2D, normalized coordinates, linear filtering,
 * wrap; each texel's centre reads the texel exactly, and points between texels interpolate. */
static void test_sample_array(void) {
  NEED_TEXTURE_KERNELS();
  int w = 96, h = 40;
  float *img = malloc(sizeof(float) * w * h), *got = malloc(sizeof(float) * w * h);
  for (int i = 0; i < w * h; i++) img[i] = (float)(value_at(i % w, i / w, 0) % 512);
  CUDA_ARRAY_DESCRIPTOR d = {(size_t)w, (size_t)h, CU_AD_FORMAT_FLOAT, 1};
  CUarray a;
  OK(cuArrayCreate_v2(&a, &d));
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                     .srcHost = img,
                     .srcPitch = w * 4,
                     .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                     .dstArray = a,
                     .WidthInBytes = w * 4,
                     .Height = h};
  OK(cuMemcpy2D_v2(&c));
  CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY};
  res.res.array.hArray = a;
  CUDA_TEXTURE_DESC tex = {.addressMode = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_WRAP},
                           .filterMode = CU_TR_FILTER_MODE_LINEAR,
                           .flags = CU_TRSF_NORMALIZED_COORDINATES};
  CUtexObject t;
  OK(cuTexObjectCreate(&t, &res, &tex, NULL));
  CUdeviceptr out;
  OK(cuMemAlloc_v2(&out, sizeof(float) * w * h));
  /* tex2d_f(t, out, w, h, ox, oy, scale) samples ((x + ox) * scale, (y + oy) * scale). */
  float ox = 0.5f, oy = 0.5f, sx = 1.0f / w;
  void *p[] = {&t, &out, &w, &h, &ox, &oy, &sx};
  run("tex2d_f", (unsigned)(w + 63) / 64, (unsigned)h, 64, p);
  OK(cuMemcpyDtoH_v2(got, out, sizeof(float) * w * h));
  /* y is scaled by 1/w too: row y samples at v = (y + 0.5) / w, between rows of the image. */
  int bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float v = (y + 0.5f) / w * h - 0.5f;
      int y0 = (int)floorf(v), y1 = y0 + 1;
      float b = roundf((v - floorf(v)) * 256) / 256;
      y0 = (y0 % h + h) % h, y1 = y1 % h;
      float want = (1 - b) * img[y0 * w + x] + b * img[y1 * w + x];
      float spread = fabsf(img[y0 * w + x] - img[y1 * w + x]);
      bad += fabsf(got[y * w + x] - want) > spread / 256 + 0.01f;
    }
  TEST_CHECK_MSG(bad == 0, "%d of %d filtered samples off by more than one weight step", bad,
                 w * h);
  OK(cuTexObjectDestroy(t));
  OK(cuMemFree_v2(out));
  OK(cuArrayDestroy(a));
  free(img);
  free(got);
}

/* A texture over linear device memory (tex1Dfetch), and one over a pitched 2D region. */
static void test_sample_memory(void) {
  NEED_TEXTURE_KERNELS();
  int n = 5000;
  float *v = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
  for (int i = 0; i < n; i++) v[i] = (float)i * 0.25f - 100;
  CUdeviceptr buf, out;
  OK(cuMemAlloc_v2(&buf, sizeof(float) * n));
  OK(cuMemAlloc_v2(&out, sizeof(float) * n));
  OK(cuMemcpyHtoD_v2(buf, v, sizeof(float) * n));
  CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_LINEAR};
  res.res.linear.devPtr = buf, res.res.linear.format = CU_AD_FORMAT_FLOAT;
  res.res.linear.numChannels = 1, res.res.linear.sizeInBytes = sizeof(float) * n;
  CUDA_TEXTURE_DESC tex = {0};
  CUtexObject t;
  OK(cuTexObjectCreate(&t, &res, &tex, NULL));
  void *p[] = {&t, &out, &n};
  run("tex1d_fetch", (unsigned)(n + 127) / 128, 1, 128, p);
  OK(cuMemcpyDtoH_v2(got, out, sizeof(float) * n));
  TEST_CHECK_MSG(!memcmp(got, v, sizeof(float) * n), "tex1Dfetch over linear memory differs");
  OK(cuTexObjectDestroy(t));

  /* Pitched: 50 x 20 floats, rows 256 bytes apart (cuMemAllocPitch's pitch may be larger). */
  int w = 50, h = 20;
  size_t pitch;
  CUdeviceptr pm;
  OK(cuMemAllocPitch_v2(&pm, &pitch, w * 4, h, 4));
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                     .srcHost = v,
                     .srcPitch = w * 4,
                     .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                     .dstDevice = pm,
                     .dstPitch = pitch,
                     .WidthInBytes = w * 4,
                     .Height = h};
  OK(cuMemcpy2D_v2(&c));
  CUDA_RESOURCE_DESC pr = {.resType = CU_RESOURCE_TYPE_PITCH2D};
  pr.res.pitch2D.devPtr = pm, pr.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  pr.res.pitch2D.numChannels = 1, pr.res.pitch2D.width = w, pr.res.pitch2D.height = h;
  pr.res.pitch2D.pitchInBytes = pitch;
  OK(cuTexObjectCreate(&t, &pr, &tex, NULL));
  float ox = 0.5f, oy = 0.5f, one = 1.0f;
  void *q[] = {&t, &out, &w, &h, &ox, &oy, &one};
  run("tex2d_f", 1, (unsigned)h, 64, q);
  OK(cuMemcpyDtoH_v2(got, out, sizeof(float) * w * h));
  TEST_CHECK_MSG(!memcmp(got, v, sizeof(float) * w * h), "pitched 2D texture reads differ");
  OK(cuTexObjectDestroy(t));
  OK(cuMemFree_v2(pm));
  OK(cuMemFree_v2(buf));
  OK(cuMemFree_v2(out));
  free(v);
  free(got);
}

/* A kernel writes every texel through a surface object; the array is read back by cuMemcpy2D. */
static void test_surface_write(void) {
  NEED_TEXTURE_KERNELS();
  int w = 200, h = 50;
  CUarray a = make_array((size_t)w, (size_t)h, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1,
                         CUDA_ARRAY3D_SURFACE_LDST);
  CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY};
  res.res.array.hArray = a;
  CUsurfObject s;
  OK(cuSurfObjectCreate(&s, &res));
  void *p[] = {&s, &w, &h};
  run("surf2d_fill", (unsigned)(w + 127) / 128, (unsigned)h, 128, p);
  uint32_t *got = calloc((size_t)w * h, 4);
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                     .srcArray = a,
                     .dstMemoryType = CU_MEMORYTYPE_HOST,
                     .dstHost = got,
                     .WidthInBytes = (size_t)w * 4,
                     .Height = (size_t)h};
  OK(cuMemcpy2D_v2(&c));
  int bad = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      bad += got[y * w + x] != ((((uint32_t)y << 16) | (uint32_t)x) ^ 0x5a5a5a5au);
  TEST_CHECK_MSG(bad == 0, "%d of %d texels written through the surface differ", bad, w * h);
  OK(cuSurfObjectDestroy(s));
  OK(cuArrayDestroy(a));
  free(got);
}

/* A mipmapped array: each level a CUDA array of its own for copies; a texture over all levels
 * samples each at its level of detail (GPU). Refusals as CUDA's. */
static float level_value(unsigned l, int x, int y) {
  return (float)(l * 100000 + y * 100 + x);
}

static void test_mipmapped(void) {
  NEED_DEVICE();
  const unsigned W = 64, H = 48, L = 4;
  CUDA_ARRAY3D_DESCRIPTOR d = {W, H, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  CUmipmappedArray m;
  OK(cuMipmappedArrayCreate(&m, &d, L));
  float *buf = malloc(W * H * 4);
  for (unsigned l = 0; l < L; l++) {
    CUarray a;
    OK(cuMipmappedArrayGetLevel(&a, m, l));
    CUDA_ARRAY3D_DESCRIPTOR ld;
    OK(cuArray3DGetDescriptor_v2(&ld, a));
    TEST_CHECK(ld.Width == W >> l && ld.Height == H >> l);
    for (size_t i = 0; i < ld.Width * ld.Height; i++)
      buf[i] = level_value(l, (int)(i % ld.Width), (int)(i / ld.Width));
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                       .srcHost = buf,
                       .srcPitch = ld.Width * 4,
                       .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                       .dstArray = a,
                       .WidthInBytes = ld.Width * 4,
                       .Height = ld.Height};
    OK(cuMemcpy2D_v2(&c));
  }
  CUarray a0;
  OK(cuMipmappedArrayGetLevel(&a0, m, 0));
  memset(buf, 0, W * H * 4);
  CUDA_MEMCPY2D back = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                        .srcArray = a0,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = buf,
                        .WidthInBytes = W * 4,
                        .Height = H};
  OK(cuMemcpy2D_v2(&back));
  int bad = 0;
  for (unsigned i = 0; i < W * H; i++) bad += buf[i] != level_value(0, (int)(i % W), (int)(i / W));
  TEST_CHECK_MSG(bad == 0, "level 0 after writing every level: %d texels differ", bad);
  CUarray none;
  IS(cuMipmappedArrayGetLevel(&none, m, L), CUDA_ERROR_INVALID_VALUE);
  IS(cuArrayDestroy(a0), CUDA_ERROR_INVALID_VALUE); /* the mipmapped array's */
  CUmipmappedArray m2;
  IS(cuMipmappedArrayCreate(&m2, &d, 8), CUDA_ERROR_INVALID_VALUE); /* 64 x 48: 7 levels at most */
  if (!on_mock() && load_module()) {
    CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY};
    res.res.mipmap.hMipmappedArray = m;
    CUDA_TEXTURE_DESC tex = {.addressMode = {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP},
                             .flags = CU_TRSF_NORMALIZED_COORDINATES,
                             .mipmapFilterMode = CU_TR_FILTER_MODE_POINT,
                             .maxMipmapLevelClamp = (float)(L - 1)};
    CUtexObject t;
    OK(cuTexObjectCreate(&t, &res, &tex, NULL));
    CUdeviceptr out;
    OK(cuMemAlloc_v2(&out, W * H * 4));
    for (unsigned l = 0; l < L; l++) {
      int w = (int)(W >> l), h = (int)(H >> l);
      float lod = (float)l;
      void *p[] = {&t, &out, &w, &h, &lod};
      run("tex2d_lod", 1, (unsigned)h, 128, p);
      OK(cuMemcpyDtoH_v2(buf, out, (size_t)w * h * 4));
      bad = 0;
      for (int i = 0; i < w * h; i++) bad += buf[i] != level_value(l, i % w, i / w);
      TEST_CHECK_MSG(bad == 0, "level %u sampled at its LOD: %d texels wrong", l, bad);
    }
    OK(cuMipmappedArrayDestroy(m)); /* the texture still reads it */
    OK(cuTexObjectDestroy(t));
    OK(cuMemFree_v2(out));
  } else {
    OK(cuMipmappedArrayDestroy(m));
  }
  free(buf);
}

TEST_MAIN(TEST(test_array_descriptors), TEST(test_array_copies_2d), TEST(test_array_copies_3d_1d),
          TEST(test_objects), TEST(test_sample_array), TEST(test_sample_memory),
          TEST(test_surface_write), TEST(test_mipmapped))
