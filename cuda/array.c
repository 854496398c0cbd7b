/* CUDA arrays, copies to and from them, and texture and surface objects: nvhcq's images, image
 * copies and texture objects behind CUDA's handles. Copies with arrays are synchronous in every
 * variant (the async ones too: ordered after all earlier work, which CUDA allows). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NVCU_ARRAY_MAGIC 0x59525241u /* "ARRY" */

#define NVCU_MIPMAP_MAGIC 0x5050494du /* "MIPP" */
#define NVCU_MAX_LEVELS   16

struct CUarray_st {
  uint32_t magic;
  int device;
  nvhcq_image *image;
  CUDA_ARRAY3D_DESCRIPTOR desc;
  uint32_t elem;                   /* bytes per element */
  uint32_t users;                  /* texture and surface objects over it */
  int dead;                        /* destroyed by the caller while objects still read it */
  struct CUmipmappedArray_st *mip; /* a level's mipmapped array (which owns it), else NULL */
};

struct CUmipmappedArray_st {
  uint32_t magic;
  nvhcq_image *image;
  CUDA_ARRAY3D_DESCRIPTOR desc;
  uint32_t levels, elem, users;
  int dead;
  struct CUarray_st *level[NVCU_MAX_LEVELS]; /* cuMipmappedArrayGetLevel's, made on first ask */
};

/* A texture or surface object: CUDA's handle is nvhcq's (the header's index on its device). */
typedef struct nvcu_object {
  int device;
  unsigned long long handle;
  nvhcq_texture *texture; /* or */
  nvhcq_surface *surface;
  struct CUarray_st *array;        /* the array it reads, or NULL */
  struct CUmipmappedArray_st *mip; /* or the mipmapped array */
  CUDA_RESOURCE_DESC res;
  CUDA_TEXTURE_DESC tex;
} nvcu_object;

static nvcu_object *objects;
static size_t object_count, object_cap;

/* ---- arrays ---- */

int nvcu_texel_of(CUarray_format f, nvhcq_texel_type *t, uint32_t *bytes) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
    *t = NVHCQ_TEXEL_U8, *bytes = 1;
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
    *t = NVHCQ_TEXEL_U16, *bytes = 2;
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT32:
    *t = NVHCQ_TEXEL_U32, *bytes = 4;
    return 1;
  case CU_AD_FORMAT_SIGNED_INT8:
    *t = NVHCQ_TEXEL_S8, *bytes = 1;
    return 1;
  case CU_AD_FORMAT_SIGNED_INT16:
    *t = NVHCQ_TEXEL_S16, *bytes = 2;
    return 1;
  case CU_AD_FORMAT_SIGNED_INT32:
    *t = NVHCQ_TEXEL_S32, *bytes = 4;
    return 1;
  case CU_AD_FORMAT_HALF:
    *t = NVHCQ_TEXEL_F16, *bytes = 2;
    return 1;
  case CU_AD_FORMAT_FLOAT:
    *t = NVHCQ_TEXEL_F32, *bytes = 4;
    return 1;
  }
  return 0;
}

/* A live array: a level's while its mipmapped array is. */
static CUresult array_get(CUarray a) {
  int live = a && a->magic == NVCU_ARRAY_MAGIC && !a->dead && !(a->mip && a->mip->dead);
  return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The image of a CUDA array description with `levels` mip levels, after the checks nvhcq cannot
 * make in CUDA's terms (under the lock); *elem: bytes per element. */
static CUresult image_create(const CUDA_ARRAY3D_DESCRIPTOR *d, uint32_t levels, int *device,
                             nvhcq_image **image, uint32_t *elem) {
  const unsigned known =
      CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_TEXTURE_GATHER;
  nvhcq_image_desc id = {.struct_size = sizeof id};
  uint32_t bytes;
  if (!d || !nvcu_texel_of(d->Format, &id.type, &bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (d->Flags & ~known)
    return nvcu_unsupported("CUDA arrays with cube-map, sparse or other flags");
  if (d->Width > UINT32_MAX || d->Height > UINT32_MAX || d->Depth > UINT32_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  id.width = (uint32_t)d->Width, id.height = (uint32_t)d->Height, id.depth = (uint32_t)d->Depth;
  id.channels = d->NumChannels;
  id.flags = (d->Flags & CUDA_ARRAY3D_LAYERED ? NVHCQ_IMAGE_LAYERED : 0) |
             (d->Flags & CUDA_ARRAY3D_SURFACE_LDST ? NVHCQ_IMAGE_SURFACE : 0);
  id.levels = levels;
  if (levels > 1 && (d->Flags & CUDA_ARRAY3D_LAYERED))
    return nvcu_unsupported("layered mipmapped arrays");
  nvcu_device *dev;
  CUresult r = nvcu_current(&dev, device);
  if (r) return r;
  *elem = bytes * d->NumChannels;
  /* sizes, channels and level counts nvhcq refuses: CUDA_ERROR_INVALID_VALUE */
  return nvcu_status(nvhcq_image_create(dev->dev, &id, image), "cuArray3DCreate");
}

static CUresult array_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  struct CUarray_st *a = calloc(1, sizeof *a);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = image_create(d, 1, &a->device, &a->image, &a->elem);
  if (r) {
    free(a);
    return r;
  }
  a->magic = NVCU_ARRAY_MAGIC, a->desc = *d;
  *out = a;
  return CUDA_SUCCESS;
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  NVCU_LOCK();
  CUresult r = array_create(pHandle, pAllocateArray);
  NVCU_UNLOCK();
  return r;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  if (!pAllocateArray) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d = {pAllocateArray->Width,  pAllocateArray->Height,      0,
                               pAllocateArray->Format, pAllocateArray->NumChannels, 0};
  return cuArray3DCreate_v2(pHandle, &d);
}

size_t nvcu_array_element_size(CUarray a) {
  return array_get(a) ? 0 : a->elem;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
  if (!pArrayDescriptor) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = array_get(hArray);
  if (!r) *pArrayDescriptor = hArray->desc;
  NVCU_UNLOCK();
  return r;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  CUresult r = cuArray3DGetDescriptor_v2(&d, hArray);
  if (r) return r;
  if (d.Depth) return CUDA_ERROR_INVALID_VALUE; /* as CUDA: a 3D or layered array */
  *pArrayDescriptor = (CUDA_ARRAY_DESCRIPTOR){d.Width, d.Height, d.Format, d.NumChannels};
  return CUDA_SUCCESS;
}

static void mip_release(struct CUmipmappedArray_st *m);

/* The image goes once no texture or surface object reads it (a level's, with its mipmapped
 * array). */
static void array_release(struct CUarray_st *a) {
  if (a->mip) {
    mip_release(a->mip);
    return;
  }
  if (a->users || !a->dead) return;
  nvcu_status(nvhcq_image_destroy(a->image), "destroying a CUDA array");
  a->magic = 0;
  free(a);
}

CUresult cuArrayDestroy(CUarray hArray) {
  NVCU_LOCK();
  CUresult r = array_get(hArray);
  if (!r && hArray->mip) {
    nvcu_log("cuArrayDestroy: the array is a level of a mipmapped array, which owns it");
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) {
    hArray->dead = 1;
    array_release(hArray);
  }
  NVCU_UNLOCK();
  return r;
}

/* ---- mipmapped arrays ---- */

static CUresult mip_get(CUmipmappedArray m) {
  return m && m->magic == NVCU_MIPMAP_MAGIC && !m->dead ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  if (!pHandle || !pMipmappedArrayDesc || !numMipmapLevels || numMipmapLevels > NVCU_MAX_LEVELS)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUmipmappedArray_st *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  int device;
  NVCU_LOCK();
  CUresult r = image_create(pMipmappedArrayDesc, numMipmapLevels, &device, &m->image, &m->elem);
  NVCU_UNLOCK();
  if (r) {
    free(m);
    return r;
  }
  m->magic = NVCU_MIPMAP_MAGIC, m->desc = *pMipmappedArrayDesc, m->levels = numMipmapLevels;
  *pHandle = m;
  return CUDA_SUCCESS;
}

/* A level as a CUDA array of its own (owned by the mipmapped array). */
static CUresult level_array(struct CUmipmappedArray_st *m, unsigned level, CUarray *out) {
  if (level >= m->levels) return CUDA_ERROR_INVALID_VALUE;
  if (!m->level[level]) {
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = nvcu_status(nvhcq_image_get_level(m->image, level, &a->image), "a mip level");
    nvhcq_image_desc d = {.struct_size = sizeof d};
    if (!r) r = nvcu_status(nvhcq_image_get_desc(a->image, &d), "a mip level");
    if (r) {
      free(a);
      return r;
    }
    a->magic = NVCU_ARRAY_MAGIC, a->mip = m, a->elem = m->elem, a->desc = m->desc;
    a->desc.Width = d.width, a->desc.Height = d.height, a->desc.Depth = d.depth;
    m->level[level] = a;
  }
  *out = m->level[level];
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                  unsigned int level) {
  if (!pLevelArray) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = mip_get(hMipmappedArray);
  if (!r) r = level_array(hMipmappedArray, level, pLevelArray);
  NVCU_UNLOCK();
  return r;
}

/* The mipmapped array and its levels go once it is destroyed and nothing reads it or a level. */
static void mip_release(struct CUmipmappedArray_st *m) {
  if (!m->dead || m->users) return;
  for (unsigned i = 0; i < NVCU_MAX_LEVELS; i++)
    if (m->level[i] && m->level[i]->users) return;
  nvcu_status(nvhcq_image_destroy(m->image), "destroying a mipmapped array");
  for (unsigned i = 0; i < NVCU_MAX_LEVELS; i++)
    if (m->level[i]) m->level[i]->magic = 0, free(m->level[i]);
  m->magic = 0;
  free(m);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  NVCU_LOCK();
  CUresult r = mip_get(hMipmappedArray);
  if (!r) {
    hMipmappedArray->dead = 1;
    mip_release(hMipmappedArray);
  }
  NVCU_UNLOCK();
  return r;
}

/* ---- copies ---- */

/* One end of a copy with an array: the array, a buffer of ours, or pageable host memory. */
typedef struct end {
  struct CUarray_st *array;
  nvcu_alloc *alloc;
  uint64_t offset; /* in alloc's buffer */
  void *host;
  size_t x, y, z, pitch, rows; /* start and layout in linear memory, or in the array */
} end;

static CUresult end_of(CUmemorytype type, const void *host, CUdeviceptr device, CUarray array,
                       size_t x, size_t y, size_t z, size_t pitch, size_t rows, end *e) {
  *e = (end){.x = x, .y = y, .z = z, .pitch = pitch, .rows = rows};
  if (type == CU_MEMORYTYPE_ARRAY) {
    e->array = array;
    return array_get(array);
  }
  if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = type == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : device;
  e->alloc = nvcu_alloc_find(address);
  if (!e->alloc && type == CU_MEMORYTYPE_DEVICE) {
    nvcu_log("a copy with a CUDA array: 0x%llx is no device memory of this library",
             (unsigned long long)address);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (e->alloc)
    e->offset = e->alloc->buf_offset + (address - e->alloc->base);
  else
    e->host = (void *)(uintptr_t)address;
  return CUDA_SUCCESS;
}

/* The array's region a copy touches, in elements. */
static CUresult region_of(const end *a, size_t width_bytes, size_t height, size_t depth,
                          nvhcq_image_region *r) {
  uint32_t elem = a->array->elem;
  if (a->x % elem || width_bytes % elem) {
    nvcu_log("a copy with a CUDA array: offset %zu and width %zu bytes are not whole %u-byte "
             "elements",
             a->x, width_bytes, elem);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *r = (nvhcq_image_region){(uint32_t)(a->x / elem),        (uint32_t)a->y,   (uint32_t)a->z,
                            (uint32_t)(width_bytes / elem), (uint32_t)height, (uint32_t)depth};
  return CUDA_SUCCESS;
}

/* Between an array and linear memory; `to_array` says which way. */
static CUresult array_linear(const end *a, const end *l, size_t w, size_t h, size_t d,
                             int to_array) {
  nvhcq_image_region r;
  CUresult res = region_of(a, w, h, d, &r);
  if (res) return res;
  size_t pitch = l->pitch ? l->pitch : w, slice = pitch * (l->rows ? l->rows : h);
  size_t start = l->x + l->y * pitch + l->z * slice;
  nvhcq_status s;
  if (l->alloc) {
    uint64_t span = (d - 1) * slice + (h - 1) * pitch + w, at = l->offset + start;
    if (start > l->alloc->size || span > l->alloc->size - start) return CUDA_ERROR_INVALID_VALUE;
    s = to_array
            ? nvhcq_image_copy_from_buffer(a->array->image, &r, l->alloc->buf, at, pitch, slice)
            : nvhcq_image_copy_to_buffer(l->alloc->buf, at, pitch, slice, a->array->image, &r);
  } else {
    char *host = (char *)l->host + start;
    s = to_array ? nvhcq_image_write(a->array->image, &r, host, pitch, slice)
                 : nvhcq_image_read(host, pitch, slice, a->array->image, &r);
  }
  return nvcu_status(s, to_array ? "a copy to a CUDA array" : "a copy from a CUDA array");
}

static CUresult array_array(const end *dst, const end *src, size_t w, size_t h, size_t d) {
  nvhcq_image_region rd, rs;
  CUresult r = region_of(dst, w, h, d, &rd);
  if (!r) r = region_of(src, w, h, d, &rs);
  if (r) return r;
  return nvcu_status(nvhcq_image_copy(dst->array->image, &rd, src->array->image, &rs),
                     "a copy between CUDA arrays");
}

/* A copy of w bytes x h rows x d slices with at least one array end, after all earlier work. */
static CUresult copy_ends(const end *dst, const end *src, size_t w, size_t h, size_t d,
                          CUstream stream) {
  struct CUstream_st *st = NULL;
  nvcu_device *dev;
  CUresult r = nvcu_current(&dev, NULL);
  if (!r && stream) r = nvcu_stream_get(stream, &st);
  if (r) return r;
  if (st && st->capture) return nvcu_unsupported("capturing a copy with a CUDA array");
  if (!w || !h || !d) return CUDA_SUCCESS;
  if ((r = nvcu_wait_all(dev))) return r;
  if (dst->array && src->array) return array_array(dst, src, w, h, d);
  return dst->array ? array_linear(dst, src, w, h, d, 1) : array_linear(src, dst, w, h, d, 0);
}

/* cuMemcpy3D and cuMemcpy2D with an array at either end (memory.c sends them here). */
CUresult nvcu_copy_array_3d(const CUDA_MEMCPY3D *p, CUstream stream) {
  end dst, src;
  CUresult r = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                      p->dstY, p->dstZ, p->dstPitch, p->dstHeight, &dst);
  if (!r)
    r = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY,
               p->srcZ, p->srcPitch, p->srcHeight, &src);
  if (r) return r;
  NVCU_LOCK();
  r = copy_ends(&dst, &src, p->WidthInBytes, p->Height, p->Depth, stream);
  NVCU_UNLOCK();
  return r;
}

/* The 1D copies (cuMemcpyHtoA and the like): bytes from an offset of a one-dimensional array. */
static CUresult copy_1d(CUarray dst, size_t dst_offset, CUmemorytype dst_type, void *dst_ptr,
                        CUarray src, size_t src_offset, CUmemorytype src_type, const void *src_ptr,
                        size_t n, CUstream stream) {
  CUDA_MEMCPY3D p = {.dstMemoryType = dst_type,
                     .dstArray = dst,
                     .dstXInBytes = dst_offset,
                     .srcMemoryType = src_type,
                     .srcArray = src,
                     .srcXInBytes = src_offset,
                     .WidthInBytes = n,
                     .Height = 1,
                     .Depth = 1};
  if (dst_type == CU_MEMORYTYPE_HOST) p.dstHost = dst_ptr;
  if (dst_type == CU_MEMORYTYPE_DEVICE) p.dstDevice = (CUdeviceptr)(uintptr_t)dst_ptr;
  if (src_type == CU_MEMORYTYPE_HOST) p.srcHost = src_ptr;
  if (src_type == CU_MEMORYTYPE_DEVICE) p.srcDevice = (CUdeviceptr)(uintptr_t)src_ptr;
  CUarray arrays[2] = {dst, src};
  for (int i = 0; i < 2; i++)
    if (arrays[i] && !array_get(arrays[i]) && arrays[i]->desc.Height) {
      nvcu_log("cuMemcpy*A*: the array is not one-dimensional; use cuMemcpy2D or cuMemcpy3D");
      return CUDA_ERROR_INVALID_VALUE;
    }
  return nvcu_copy_array_3d(&p, stream);
}

CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                         size_t ByteCount) {
  return copy_1d(dstArray, dstOffset, CU_MEMORYTYPE_ARRAY, NULL, NULL, 0, CU_MEMORYTYPE_HOST,
                 srcHost, ByteCount, NULL);
}
CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return copy_1d(NULL, 0, CU_MEMORYTYPE_HOST, dstHost, srcArray, srcOffset, CU_MEMORYTYPE_ARRAY,
                 NULL, ByteCount, NULL);
}
CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                         size_t ByteCount) {
  return copy_1d(dstArray, dstOffset, CU_MEMORYTYPE_ARRAY, NULL, NULL, 0, CU_MEMORYTYPE_DEVICE,
                 (const void *)(uintptr_t)srcDevice, ByteCount, NULL);
}
CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
  return copy_1d(NULL, 0, CU_MEMORYTYPE_DEVICE, (void *)(uintptr_t)dstDevice, srcArray, srcOffset,
                 CU_MEMORYTYPE_ARRAY, NULL, ByteCount, NULL);
}
CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
  return copy_1d(dstArray, dstOffset, CU_MEMORYTYPE_ARRAY, NULL, srcArray, srcOffset,
                 CU_MEMORYTYPE_ARRAY, NULL, ByteCount, NULL);
}
CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                              size_t ByteCount, CUstream hStream) {
  return copy_1d(dstArray, dstOffset, CU_MEMORYTYPE_ARRAY, NULL, NULL, 0, CU_MEMORYTYPE_HOST,
                 srcHost, ByteCount, hStream);
}
CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                              CUstream hStream) {
  return copy_1d(NULL, 0, CU_MEMORYTYPE_HOST, dstHost, srcArray, srcOffset, CU_MEMORYTYPE_ARRAY,
                 NULL, ByteCount, hStream);
}

NVCU_ALIAS(cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA_v2)
NVCU_ALIAS(cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH_v2)
NVCU_ALIAS(cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA_v2)
NVCU_ALIAS(cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD_v2)
NVCU_ALIAS(cuMemcpyAtoA_v2_ptds, cuMemcpyAtoA_v2)
NVCU_ALIAS(cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyHtoAAsync_v2)
NVCU_ALIAS(cuMemcpyAtoHAsync_v2_ptsz, cuMemcpyAtoHAsync_v2)

/* ---- texture and surface objects ---- */

static nvcu_object *object_find(int device, unsigned long long handle) {
  for (size_t i = 0; i < object_count; i++)
    if (objects[i].device == device && objects[i].handle == handle) return &objects[i];
  return NULL;
}

static CUresult object_add(const nvcu_object *o) {
  nvcu_object *grown = nvcu_room(objects, &object_cap, object_count, sizeof *objects, 64);
  if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
  objects = grown;
  objects[object_count++] = *o;
  if (o->array) o->array->users++;
  if (o->mip) o->mip->users++;
  return CUDA_SUCCESS;
}

static void object_remove(nvcu_object *o) {
  struct CUarray_st *a = o->array;
  struct CUmipmappedArray_st *m = o->mip;
  *o = objects[--object_count];
  if (a) {
    a->users--;
    array_release(a);
  }
  if (m) {
    m->users--;
    mip_release(m);
  }
}

/* A texture over linear or pitched memory of ours: where it lies and in what format. */
static CUresult memory_source(const CUDA_RESOURCE_DESC *res, nvhcq_texture_desc *t) {
  int linear = res->resType == CU_RESOURCE_TYPE_LINEAR;
  CUdeviceptr ptr = linear ? res->res.linear.devPtr : res->res.pitch2D.devPtr;
  CUarray_format f = linear ? res->res.linear.format : res->res.pitch2D.format;
  uint32_t bytes;
  nvcu_alloc *a = nvcu_alloc_find(ptr);
  if (!a || !nvcu_texel_of(f, &t->type, &bytes)) return CUDA_ERROR_INVALID_VALUE;
  t->channels = linear ? res->res.linear.numChannels : res->res.pitch2D.numChannels;
  t->buffer = a->buf;
  t->offset = a->buf_offset + (ptr - a->base);
  if (linear) {
    size_t n = res->res.linear.sizeInBytes / (bytes * (t->channels ? t->channels : 1));
    if (n > UINT32_MAX || res->res.linear.sizeInBytes > a->size - (ptr - a->base))
      return CUDA_ERROR_INVALID_VALUE;
    t->source = NVHCQ_TEXTURE_LINEAR, t->width = (uint32_t)n;
    return CUDA_SUCCESS;
  }
  const size_t w = res->res.pitch2D.width, h = res->res.pitch2D.height;
  if (w > UINT32_MAX || h > UINT32_MAX) return CUDA_ERROR_INVALID_VALUE;
  t->source = NVHCQ_TEXTURE_PITCH2D, t->width = (uint32_t)w, t->height = (uint32_t)h;
  t->pitch = res->res.pitch2D.pitchInBytes;
  return CUDA_SUCCESS;
}

static CUresult sampling_of(const CUDA_TEXTURE_DESC *d, nvhcq_texture_desc *t) {
  static const nvhcq_address_mode modes[] = {NVHCQ_ADDRESS_WRAP, NVHCQ_ADDRESS_CLAMP,
                                             NVHCQ_ADDRESS_MIRROR, NVHCQ_ADDRESS_BORDER};
  const unsigned known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
                         CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
  if (d->flags & ~known) return nvcu_unsupported("texture objects with seamless cube maps");
  for (int c = 0; c < 3; c++) {
    if ((unsigned)d->addressMode[c] > CU_TR_ADDRESS_MODE_BORDER) return CUDA_ERROR_INVALID_VALUE;
    t->address[c] = modes[d->addressMode[c]];
  }
  if ((unsigned)d->filterMode > CU_TR_FILTER_MODE_LINEAR) return CUDA_ERROR_INVALID_VALUE;
  t->flags = (d->filterMode == CU_TR_FILTER_MODE_LINEAR ? NVHCQ_TEXTURE_LINEAR_FILTER : 0) |
             (d->flags & CU_TRSF_NORMALIZED_COORDINATES ? NVHCQ_TEXTURE_NORMALIZED_COORDS : 0) |
             (d->flags & CU_TRSF_READ_AS_INTEGER ? NVHCQ_TEXTURE_READ_AS_INTEGER : 0) |
             (d->flags & CU_TRSF_SRGB ? NVHCQ_TEXTURE_SRGB : 0);
  memcpy(t->border, d->borderColor, sizeof t->border);
  return CUDA_SUCCESS;
}

static CUresult texture_create(CUtexObject *out, const CUDA_RESOURCE_DESC *res,
                               const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view) {
  if (!out || !res || !tex || res->flags) return CUDA_ERROR_INVALID_VALUE;
  if (view) return nvcu_unsupported("texture objects with a resource view");
  nvhcq_texture_desc t = {.struct_size = sizeof t};
  nvcu_object o = {.res = *res, .tex = *tex};
  CUresult r;
  if (res->resType == CU_RESOURCE_TYPE_ARRAY) {
    if ((r = array_get(res->res.array.hArray))) return r;
    o.array = res->res.array.hArray;
    t.source = NVHCQ_TEXTURE_IMAGE, t.image = o.array->image;
  } else if (res->resType == CU_RESOURCE_TYPE_LINEAR || res->resType == CU_RESOURCE_TYPE_PITCH2D) {
    if ((r = memory_source(res, &t))) return r;
  } else if (res->resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) {
    if ((r = mip_get(res->res.mipmap.hMipmappedArray))) return r;
    o.mip = res->res.mipmap.hMipmappedArray;
    t.source = NVHCQ_TEXTURE_IMAGE, t.image = o.mip->image;
    if ((unsigned)tex->mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR) return CUDA_ERROR_INVALID_VALUE;
    t.mip_filter =
        tex->mipmapFilterMode == CU_TR_FILTER_MODE_LINEAR ? NVHCQ_MIP_LINEAR : NVHCQ_MIP_POINT;
    t.lod_bias = tex->mipmapLevelBias, t.min_lod = tex->minMipmapLevelClamp;
    t.max_lod = tex->maxMipmapLevelClamp;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((r = sampling_of(tex, &t))) return r;
  nvcu_device *dev;
  if ((r = nvcu_current(&dev, &o.device))) return r;
  nvhcq_status s = nvhcq_texture_create(dev->dev, &t, &o.texture);
  if (s) return nvcu_status(s, "cuTexObjectCreate");
  o.handle = nvhcq_texture_handle(o.texture);
  if ((r = object_add(&o))) nvhcq_texture_destroy(o.texture);
  if (!r) *out = o.handle;
  return r;
}

CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                           const CUDA_TEXTURE_DESC *pTexDesc,
                           const CUDA_RESOURCE_VIEW_DESC *pResViewDesc) {
  NVCU_LOCK();
  CUresult r = texture_create(pTexObject, pResDesc, pTexDesc, pResViewDesc);
  NVCU_UNLOCK();
  return r;
}

/* The current device's object of `handle`, a texture or a surface as asked (under the lock). */
static CUresult object_get(unsigned long long handle, int surface, nvcu_object **out) {
  int index;
  nvcu_device *dev;
  CUresult r = nvcu_current(&dev, &index);
  if (r) return r;
  nvcu_object *o = object_find(index, handle);
  if (!o || (o->surface != NULL) != surface) return CUDA_ERROR_INVALID_VALUE;
  *out = o;
  return CUDA_SUCCESS;
}

static CUresult object_destroy(unsigned long long handle, int surface) {
  NVCU_LOCK();
  nvcu_object *o;
  CUresult r = object_get(handle, surface, &o);
  if (!r) {
    nvhcq_status s =
        surface ? nvhcq_surface_destroy(o->surface) : nvhcq_texture_destroy(o->texture);
    object_remove(o);
    r = nvcu_status(s, surface ? "cuSurfObjectDestroy" : "cuTexObjectDestroy");
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  return object_destroy(texObject, 0);
}

/* Copies what the object was made with: its resource (which = 0), texture (1) description. */
static CUresult object_describe(unsigned long long handle, int surface, int which, void *out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_object *o;
  CUresult r = object_get(handle, surface, &o);
  if (!r && which == 0) memcpy(out, &o->res, sizeof o->res);
  if (!r && which == 1) memcpy(out, &o->tex, sizeof o->tex);
  NVCU_UNLOCK();
  return r;
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject) {
  return object_describe(texObject, 0, 0, pResDesc);
}
CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject) {
  return object_describe(texObject, 0, 1, pTexDesc);
}
/* No object has a view (cuTexObjectCreate refuses them): as CUDA answers for such an object. */
CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc,
                                        CUtexObject texObject) {
  (void)pResViewDesc, (void)texObject;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult surface_create(CUsurfObject *out, const CUDA_RESOURCE_DESC *res) {
  if (!out || !res || res->flags || res->resType != CU_RESOURCE_TYPE_ARRAY)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = array_get(res->res.array.hArray);
  if (r) return r;
  nvcu_object o = {.res = *res, .array = res->res.array.hArray};
  if (!(o.array->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)) {
    nvcu_log("cuSurfObjectCreate: the array was made without CUDA_ARRAY3D_SURFACE_LDST");
    return CUDA_ERROR_INVALID_VALUE;
  }
  nvcu_device *dev;
  if ((r = nvcu_current(&dev, &o.device))) return r;
  if ((r = nvcu_status(nvhcq_surface_create(o.array->image, &o.surface), "cuSurfObjectCreate")))
    return r;
  o.handle = nvhcq_surface_handle(o.surface);
  if ((r = object_add(&o))) nvhcq_surface_destroy(o.surface);
  if (!r) *out = o.handle;
  return r;
}

CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc) {
  NVCU_LOCK();
  CUresult r = surface_create(pSurfObject, pResDesc);
  NVCU_UNLOCK();
  return r;
}
CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  return object_destroy(surfObject, 1);
}
CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject) {
  return object_describe(surfObject, 1, 0, pResDesc);
}
