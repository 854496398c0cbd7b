/* Managed memory's hints: prefetches (one at a time or batched), discards and advice are checked
 * and recorded per page (managed memory is pinned host memory here, so none moves anything), and
 * range attributes report them. */
#include <stdlib.h>

#include "internal.h"

/* A page's record: bits 0-7 its preferred location, 8-15 its last prefetch location (each a
 * location code), bit 16 read-mostly, bits 32-48 the accessed-by set (bit 32 the CPU, 33 + d
 * device d). */
#define PREFERRED_SHIFT   0
#define PREFETCH_SHIFT    8
#define READ_MOSTLY_BIT   (1ull << 16)
#define ACCESSED_BY_SHIFT 32

/* Location codes: 0 none, 1 the CPU, 2 + d device d. */
enum { LOC_NONE = 0, LOC_CPU = 1, LOC_DEVICE0 = 2 };

#define PAGE_BYTES 4096ull

/* A location as its code, or an error: a device must exist; host NUMA nodes are the host. */
static CUresult location_code(CUmemLocation loc, int *code) {
  int count = 0;
  switch (loc.type) {
  case CU_MEM_LOCATION_TYPE_HOST:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
    *code = LOC_CPU;
    return CUDA_SUCCESS;
  case CU_MEM_LOCATION_TYPE_DEVICE:
    if (cuDeviceGetCount(&count) || loc.id < 0 || loc.id >= count || loc.id >= NVCU_MAX_DEVICES)
      return CUDA_ERROR_INVALID_DEVICE;
    *code = LOC_DEVICE0 + loc.id;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

/* The legacy calls' CUdevice: an ordinal or CU_DEVICE_CPU. */
static CUmemLocation device_location(CUdevice device) {
  CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  if (device == CU_DEVICE_CPU) loc = (CUmemLocation){CU_MEM_LOCATION_TYPE_HOST, 0};
  return loc;
}

/* The managed allocation holding all of [ptr, ptr + count), with its page records made, and the
 * range of its pages that covers it (rounded out to pages, as CUDA rounds). */
static CUresult managed_pages(CUdeviceptr ptr, size_t count, nvcu_alloc **out, uint64_t *first,
                              uint64_t *end) {
  nvcu_alloc *a = nvcu_alloc_find(ptr);
  if (!a || !a->managed || count == 0 || count > a->size - (ptr - a->base)) {
    nvcu_log("0x%llx+%zu: not inside one allocation of cuMemAllocManaged", (unsigned long long)ptr,
             count);
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t pages = (a->size + PAGE_BYTES - 1) / PAGE_BYTES;
  if (!a->pages && !(a->pages = calloc(pages, sizeof *a->pages))) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = a;
  *first = (ptr - a->base) / PAGE_BYTES;
  *end = (ptr - a->base + count + PAGE_BYTES - 1) / PAGE_BYTES;
  return CUDA_SUCCESS;
}

static void set_field(nvcu_alloc *a, uint64_t first, uint64_t end, int shift, int code) {
  for (uint64_t i = first; i < end; i++)
    a->pages[i] = (a->pages[i] & ~(0xffull << shift)) | (uint64_t)code << shift;
}

static void set_bit(nvcu_alloc *a, uint64_t first, uint64_t end, uint64_t bit, int on) {
  for (uint64_t i = first; i < end; i++) a->pages[i] = on ? a->pages[i] | bit : a->pages[i] & ~bit;
}

static CUresult prefetch(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                         unsigned int flags, CUstream hStream) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_alloc *a = NULL;
  uint64_t first = 0, end = 0;
  int code = 0;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = managed_pages(devPtr, count, &a, &first, &end);
  if (!r) r = location_code(location, &code);
  /* Nothing moves: the pages are host memory the GPU reads in place, coherent for the stream's
   * earlier and later work alike. */
  if (!r) set_field(a, first, end, PREFETCH_SHIFT, code);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                               unsigned int flags, CUstream hStream) {
  return prefetch(devPtr, count, location, flags, hStream);
}

/* ---- batches (CUDA 12.8 and 13) ---- */

/* prefetchLocs[k] applies to operations idxs[k] to idxs[k + 1] - 1: the first index 0, each
 * larger than the one before, the last below count. */
static CUresult locations_check(size_t count, const CUmemLocation *locs, const size_t *idxs,
                                size_t n) {
  if (!n || n > count || !locs || !idxs || idxs[0] != 0 || idxs[n - 1] >= count) goto bad;
  for (size_t k = 1; k < n; k++)
    if (idxs[k] <= idxs[k - 1]) goto bad;
  return CUDA_SUCCESS;
bad:
  nvcu_log("a batch prefetch: %zu locations for %zu operations (each location's first operation "
           "index, from 0 up, below the count)",
           n, count);
  return CUDA_ERROR_INVALID_VALUE;
}

/* Every range and location is checked before anything is recorded. A discard keeps the bytes (a
 * discarded range reads indeterminate values until written or prefetched: these are such values);
 * a prefetch records its location, as cuMemPrefetchAsync does. */
static CUresult batch(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                      size_t *idxs, size_t nlocs, unsigned long long flags, CUstream hStream,
                      int fetch) {
  if (flags || !count || !dptrs || !sizes || hStream == NULL || hStream == CU_STREAM_LEGACY)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = fetch ? locations_check(count, locs, idxs, nlocs) : CUDA_SUCCESS;
  if (r) return r;
  NVCU_LOCK();
  struct CUstream_st *st;
  nvcu_alloc *a;
  uint64_t first, end;
  int code = 0;
  r = nvcu_stream_get(hStream, &st);
  for (size_t i = 0, k = 0; i < count && !r; i++) {
    r = managed_pages(dptrs[i], sizes[i], &a, &first, &end);
    if (!fetch || r) continue;
    while (k + 1 < nlocs && idxs[k + 1] <= i) k++;
    r = location_code(locs[k], &code);
  }
  for (size_t i = 0, k = 0; i < count && !r && fetch; i++) {
    while (k + 1 < nlocs && idxs[k + 1] <= i) k++;
    (void)managed_pages(dptrs[i], sizes[i], &a, &first, &end);
    (void)location_code(locs[k], &code);
    set_field(a, first, end, PREFETCH_SHIFT, code);
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                 CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                 size_t numPrefetchLocs, unsigned long long flags,
                                 CUstream hStream) {
  return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream,
               1);
}

CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                unsigned long long flags, CUstream hStream) {
  return batch(dptrs, sizes, count, NULL, NULL, 0, flags, hStream, 0);
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                            CUstream hStream) {
  return prefetch(devPtr, count, device_location(dstDevice), 0, hStream);
}

static CUresult advise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                       CUmemLocation location) {
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_alloc *a = NULL;
  uint64_t first = 0, end = 0;
  int code = 0;
  CUresult r = nvcu_check_init();
  if (!r) r = managed_pages(devPtr, count, &a, &first, &end);
  int needs_location = advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
                       advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                       advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
  if (!r && needs_location) r = location_code(location, &code);
  if (!r) {
    uint64_t accessed = code ? 1ull << (ACCESSED_BY_SHIFT + code - LOC_CPU) : 0;
    switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      set_bit(a, first, end, READ_MOSTLY_BIT, advice == CU_MEM_ADVISE_SET_READ_MOSTLY);
      break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      set_field(a, first, end, PREFERRED_SHIFT,
                advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ? code : LOC_NONE);
      break;
    default:
      set_bit(a, first, end, accessed, advice == CU_MEM_ADVISE_SET_ACCESSED_BY);
      break;
    }
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                        CUmemLocation location) {
  return advise(devPtr, count, advice, location);
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  return advise(devPtr, count, advice, device_location(device));
}

/* ---- stream association ---- */

/* Checked as CUDA checks it: one CU_MEM_ATTACH_* flag, a whole managed allocation (length 0 or its
 * size; pageable memory the GPU cannot reach is refused), SINGLE only for a stream of its own. The
 * association then changes nothing: managed memory is pinned host memory that the CPU and every
 * stream's kernels use in place, coherent at all times, and all streams' work is ordered on the
 * device, so the CPU may touch it once the work it waits for is done, whatever the association.
 * The attach thus has nothing to wait for and nothing to do at its place in the stream's order:
 * the work before it and after it runs in that order, with the memory visible to both. */
static CUresult attach(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE) {
    nvcu_log("cuStreamAttachMemAsync: flags 0x%x, must be one of CU_MEM_ATTACH_GLOBAL, _HOST, "
             "_SINGLE",
             flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (r) return r;
  if (flags == CU_MEM_ATTACH_SINGLE &&
      (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)) {
    nvcu_log("cuStreamAttachMemAsync: CU_MEM_ATTACH_SINGLE to a default stream (it is no single "
             "stream)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (st->capture) {
    nvcu_log("cuStreamAttachMemAsync: the stream is being captured");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  nvcu_alloc *a = nvcu_alloc_find(dptr);
  if (!a || !a->managed || a->base != dptr || (length && length != a->size)) {
    nvcu_log("cuStreamAttachMemAsync(0x%llx, %zu): not the start and the whole size (or 0) of an "
             "allocation of cuMemAllocManaged",
             (unsigned long long)dptr, length);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                unsigned int flags) {
  NVCU_LOCK();
  CUresult r = attach(hStream, dptr, length, flags);
  NVCU_UNLOCK();
  return r;
}

/* ---- range attributes ---- */

/* The location code every page of the range has in the field, or LOC_NONE if they differ. */
static int common_code(const nvcu_alloc *a, uint64_t first, uint64_t end, int shift) {
  int code = (int)(a->pages[first] >> shift & 0xff);
  for (uint64_t i = first + 1; i < end && code; i++)
    if ((int)(a->pages[i] >> shift & 0xff) != code) code = LOC_NONE;
  return code;
}

/* A code as the legacy attributes write it: a device ordinal, CU_DEVICE_CPU or CU_DEVICE_INVALID.
 */
static int code_device(int code) {
  return code == LOC_CPU       ? CU_DEVICE_CPU
         : code >= LOC_DEVICE0 ? code - LOC_DEVICE0
                               : CU_DEVICE_INVALID;
}

static int code_type(int code) {
  return code == LOC_CPU       ? CU_MEM_LOCATION_TYPE_HOST
         : code >= LOC_DEVICE0 ? CU_MEM_LOCATION_TYPE_DEVICE
                               : CU_MEM_LOCATION_TYPE_INVALID;
}

/* The devices (and the CPU) set as accessing every page, CU_DEVICE_INVALID in the rest. */
static CUresult accessed_by(const nvcu_alloc *a, uint64_t first, uint64_t end, int *out, size_t n) {
  uint64_t common = ~0ull;
  for (uint64_t i = first; i < end; i++) common &= a->pages[i] >> ACCESSED_BY_SHIFT;
  size_t k = 0;
  for (int code = LOC_CPU; code < LOC_DEVICE0 + NVCU_MAX_DEVICES && k < n; code++)
    if (common >> (code - LOC_CPU) & 1) out[k++] = code_device(code);
  for (; k < n; k++) out[k] = CU_DEVICE_INVALID;
  return CUDA_SUCCESS;
}

static CUresult range_attribute(void *data, size_t size, CUmem_range_attribute attribute,
                                CUdeviceptr ptr, size_t count) {
  nvcu_alloc *a;
  uint64_t first, end;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY ? size == 0 || size % 4 : size != 4)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = managed_pages(ptr, count, &a, &first, &end);
  if (r) return r;
  int *v = data;
  int preferred = common_code(a, first, end, PREFERRED_SHIFT);
  int prefetched = common_code(a, first, end, PREFETCH_SHIFT);
  switch (attribute) {
  case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
    *v = 1;
    for (uint64_t i = first; i < end; i++)
      if (!(a->pages[i] & READ_MOSTLY_BIT)) *v = 0;
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
    *v = code_device(preferred);
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
    return accessed_by(a, first, end, v, size / 4);
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
    *v = code_device(prefetched);
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
    *v = code_type(preferred);
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
    *v = preferred >= LOC_DEVICE0 ? preferred - LOC_DEVICE0 : CU_DEVICE_INVALID;
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
    *v = code_type(prefetched);
    return CUDA_SUCCESS;
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
    *v = prefetched >= LOC_DEVICE0 ? prefetched - LOC_DEVICE0 : CU_DEVICE_INVALID;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count) {
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = range_attribute(data, dataSize, attribute, devPtr, count);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  if (!data || !dataSizes || !attributes || numAttributes == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  for (size_t i = 0; i < numAttributes && !r; i++)
    r = range_attribute(data[i], dataSizes[i], attributes[i], devPtr, count);
  NVCU_UNLOCK();
  return r;
}

#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));
NVCU_ALIAS(cuMemPrefetchAsync_ptsz, cuMemPrefetchAsync)
NVCU_ALIAS(cuMemPrefetchAsync_v2_ptsz, cuMemPrefetchAsync_v2)
/* A discard keeps the bytes, so a discard and prefetch is the prefetch. */
NVCU_ALIAS(cuMemDiscardAndPrefetchBatchAsync, cuMemPrefetchBatchAsync)
NVCU_ALIAS(cuMemPrefetchBatchAsync_ptsz, cuMemPrefetchBatchAsync)
NVCU_ALIAS(cuMemDiscardBatchAsync_ptsz, cuMemDiscardBatchAsync)
NVCU_ALIAS(cuMemDiscardAndPrefetchBatchAsync_ptsz, cuMemPrefetchBatchAsync)
NVCU_ALIAS(cuStreamAttachMemAsync_ptsz, cuStreamAttachMemAsync)
