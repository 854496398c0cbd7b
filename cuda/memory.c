/* Memory: device, pinned host, managed and registered host memory (a sorted table of them answers
 * pointer queries and finds the nvhcq buffer behind an address), synchronous and stream-ordered
 * copies and memsets, 2D and 3D ones, and copies between contexts. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static nvcu_alloc *allocs;
static size_t alloc_count, alloc_cap;

#define PATTERN_BYTES (4u << 20)
/* Device-to-device copies at least this large and 16-byte aligned go through nvhcq_buffer_copy
 * (the SMs' copy kernel): the copy engine moves far fewer bytes per second. */
#define KERNEL_COPY_BYTES (1u << 20)

/* The index of the first allocation whose base is above `address`. */
static size_t upper(uint64_t address) {
  size_t lo = 0, hi = alloc_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (allocs[mid].base <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

nvcu_alloc *nvcu_alloc_find(uint64_t address) {
  size_t i = upper(address);
  if (i == 0) return NULL;
  nvcu_alloc *a = &allocs[i - 1];
  return address - a->base < a->size ? a : NULL;
}

/* Whether [base, base + size) overlaps an allocation in the table. */
static int alloc_overlaps(uint64_t base, uint64_t size) {
  size_t i = upper(base + size - 1);
  return i > 0 && allocs[i - 1].base + allocs[i - 1].size > base;
}

uint64_t nvcu_next_id(void) {
  static uint64_t last;
  return ++last;
}

static CUresult alloc_insert(const nvcu_alloc *a) {
  nvcu_alloc *grown = nvcu_room(allocs, &alloc_cap, alloc_count, sizeof *allocs, 64);
  if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
  allocs = grown;
  size_t i = upper(a->base);
  memmove(&allocs[i + 1], &allocs[i], (alloc_count - i) * sizeof *allocs);
  allocs[i] = *a;
  allocs[i].id = nvcu_next_id();
  alloc_count++;
  return CUDA_SUCCESS;
}

CUresult nvcu_alloc_add(const nvcu_alloc *a) {
  return alloc_insert(a);
}

static void alloc_remove(nvcu_alloc *a) {
  size_t i = (size_t)(a - allocs);
  memmove(&allocs[i], &allocs[i + 1], (alloc_count - i - 1) * sizeof *allocs);
  alloc_count--;
}

CUresult nvcu_wait_all(nvcu_device *d) {
  for (int e = 0; e < 2; e++) {
    CUresult r = nvcu_signal_wait(d->timeline[e], d->submitted[e], "waiting for the GPU");
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

/* ---- allocation ---- */

/* A new allocation like `a` (its kind in host, managed, pool), under the lock. */
static CUresult allocate_on(nvcu_device *d, int index, size_t size, nvcu_alloc a,
                            CUdeviceptr *out) {
  nvhcq_buffer *b = NULL;
  const char *what = a.managed     ? "cuMemAllocManaged"
                     : a.host      ? "cuMemAllocHost"
                     : a.graph_mem ? "a graph's allocation node"
                                   : "cuMemAlloc";
  CUresult r = nvcu_status(
      nvhcq_buffer_create(d->dev, size, a.host ? NVHCQ_MEMORY_HOST : NVHCQ_MEMORY_DEVICE, &b),
      what);
  /* nvhcq refuses sizes past 64 TiB as invalid; CUDA says there is not that much memory (a
   * cuMemAlloc of 2^50 bytes answered CUDA_ERROR_OUT_OF_MEMORY on the H200, driver 580). */
  if (r == CUDA_ERROR_INVALID_VALUE && size > (1ull << 46)) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r) return r;
  a.base = a.host ? (uint64_t)(uintptr_t)nvhcq_buffer_host_pointer(b) : nvhcq_buffer_gpu_address(b);
  a.size = size, a.buf = b, a.device = index;
  r = alloc_insert(&a);
  if (r)
    (void)nvhcq_buffer_destroy(b);
  else
    *out = a.base;
  return r;
}

static CUresult allocate_locked(size_t size, nvcu_alloc a, CUdeviceptr *out) {
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  return r ? r : allocate_on(d, index, size, a, out);
}

static CUresult allocate(size_t size, nvcu_alloc a, CUdeviceptr *out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = allocate_locked(size, a, out);
  NVCU_UNLOCK();
  return r;
}

CUresult nvcu_alloc_pool_memory(int device, size_t size, struct CUmemPoolHandle_st *pool,
                                int managed, CUdeviceptr *out) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(device, &d);
  int host = nvcu_pool_is_host(pool);
  nvcu_alloc a = {
      .pool = pool, .host = host, .managed = managed, .flags = managed ? CU_MEM_ATTACH_GLOBAL : 0};
  return r ? r : allocate_on(d, device, size, a, out);
}

CUresult nvcu_alloc_graph_memory(int device, size_t size, struct nvcu_graph_mem *mem,
                                 CUdeviceptr *out) {
  nvcu_device *d;
  CUresult r = nvcu_device_get(device, &d);
  return r ? r : allocate_on(d, device, size, (nvcu_alloc){.graph_mem = mem}, out);
}

CUresult nvcu_alloc_release(nvcu_alloc *a) {
  nvhcq_buffer *b = a->buf;
  struct CUmemPoolHandle_st *pool = a->pool;
  nvhcq_reservation *range = a->ipc_range;
  uint64_t size = a->size;
  free(a->pages);
  alloc_remove(a);
  int device = a->device;
  if (pool) nvcu_pool_freed(pool, size, device);
  CUresult r = nvcu_status(nvhcq_buffer_destroy(b), "freeing memory");
  /* another process's memory: its range goes once unmapped (waits for the GPU to pass) */
  if (!r && range) r = nvcu_status(nvhcq_reservation_destroy(range), "unmapping shared memory");
  return r;
}

/* cuMemFree frees device and managed memory and any pool's, cuMemFreeHost what cuMemHostAlloc
 * made. */
static CUresult release(uint64_t base, int host) {
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find(base);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  int freed_by_free = a && !a->registered && !a->vmm && (!a->ipc_range || a->pool) &&
                      (a->host ? a->managed || a->pool : 1);
  int match = a && (host ? a->host && !a->managed && !a->registered && !a->pool : freed_by_free);
  if (match && a->base == base && !nvcu_graph_mem_kept(a, &r)) r = nvcu_alloc_release(a);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  return allocate(bytesize, (nvcu_alloc){0}, dptr);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (dptr == 0) return CUDA_SUCCESS;
  return release(dptr, 0);
}

/* Managed memory is pinned, cached host memory the GPU reads and writes through the same address:
 * nvhcq migrates no pages, and host memory is coherent for every access pattern (kernels that
 * use it heavily run at the speed of the host link, not of device memory). */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return allocate(bytesize, (nvcu_alloc){.host = 1, .managed = 1, .flags = flags}, dptr);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  /* Every flag is met by nvhcq's pinned memory: portable (one address space for all contexts),
   * device-mapped (the host address is the GPU address), write-combined (a hint). */
  CUdeviceptr p = 0;
  CUresult r = allocate(bytesize, (nvcu_alloc){.host = 1, .flags = Flags}, &p);
  *pp = r ? NULL : (void *)(uintptr_t)p;
  return r;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p) {
  return release((uint64_t)(uintptr_t)p, 1);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
  if (!pdptr || Flags) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find((uint64_t)(uintptr_t)p);
  CUresult r = a && a->host && !a->managed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (!r)
    *pdptr = nvhcq_buffer_gpu_address(a->buf) + a->buf_offset + ((uint64_t)(uintptr_t)p - a->base);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) {
  if (!pFlags) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find((uint64_t)(uintptr_t)p);
  CUresult r = a && a->host && !a->managed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (!r) *pFlags = a->flags;
  NVCU_UNLOCK();
  return r;
}

/* ---- registered host memory ---- */

#define PAGE_MASK_NVCU 4095ull

/* Whether [p, p + n) shares a page with memory registered already (nvhcq pins whole pages). */
static int shares_registered_page(uint64_t p, uint64_t n) {
  uint64_t start = p & ~PAGE_MASK_NVCU, end = (p + n + PAGE_MASK_NVCU) & ~PAGE_MASK_NVCU;
  for (size_t i = 0; i < alloc_count; i++) {
    const nvcu_alloc *a = &allocs[i];
    uint64_t s = a->base & ~PAGE_MASK_NVCU;
    uint64_t e = (a->base + a->size + PAGE_MASK_NVCU) & ~PAGE_MASK_NVCU;
    if (a->registered && s < end && start < e) return 1;
  }
  return 0;
}

static CUresult register_locked(void *p, size_t bytesize, unsigned int Flags) {
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  if (r) return r;
  uint64_t base = (uint64_t)(uintptr_t)p;
  if (alloc_overlaps(base, bytesize) || shares_registered_page(base, bytesize)) {
    nvcu_log("cuMemHostRegister of %zu bytes at %p: overlaps memory registered or allocated "
             "already",
             bytesize, p);
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  nvhcq_buffer *b = NULL;
  r = nvcu_status(nvhcq_buffer_register_host(d->dev, p, bytesize, &b), "cuMemHostRegister");
  if (r) return r == CUDA_ERROR_UNKNOWN ? CUDA_ERROR_INVALID_VALUE : r;
  nvcu_alloc a = {.base = base,
                  .size = bytesize,
                  .buf = b,
                  .buf_offset = base - nvhcq_buffer_gpu_address(b),
                  .host = 1,
                  .registered = 1,
                  .device = index,
                  .flags = Flags};
  r = alloc_insert(&a);
  if (r) (void)nvhcq_buffer_destroy(b);
  return r;
}

/* Portable and device-mapped are what nvhcq's pinned memory always is (one address space, the
 * host address is the GPU address); read-only is accepted (the GPU's mapping stays writable); I/O
 * memory (another device's BAR) cannot be pinned through RM's OS descriptors. */
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
  if (!p || bytesize == 0 || (Flags & ~0xfu) || (uintptr_t)p + bytesize < (uintptr_t)p)
    return CUDA_ERROR_INVALID_VALUE;
  if (Flags & CU_MEMHOSTREGISTER_IOMEMORY) return nvcu_unsupported("registering I/O memory");
  NVCU_LOCK();
  CUresult r = register_locked(p, bytesize, Flags);
  NVCU_UNLOCK();
  return r;
}

/* The CUDA 4.0 call, for clients that ask for it by name: it took page-aligned ranges only. */
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  if (((uintptr_t)p | bytesize) & PAGE_MASK_NVCU) return CUDA_ERROR_INVALID_VALUE;
  return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* The pages stay pinned (and the GPU's mapping stays) until the GPU has passed the work submitted
 * so far; the caller may unmap its memory at once. */
CUresult cuMemHostUnregister(void *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_alloc *a = r ? NULL : nvcu_alloc_find((uint64_t)(uintptr_t)p);
  if (!r && (!a || !a->registered || a->base != (uint64_t)(uintptr_t)p))
    r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  if (!r) r = nvcu_alloc_release(a);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find(dptr);
  CUresult r = a && (!a->host || a->managed) ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
  if (!r && pbase) *pbase = a->base;
  if (!r && psize) *psize = a->size;
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  uint64_t f = 0;
  if (!r) r = nvcu_status(nvhcq_device_get_free_memory(d->dev, &f), "cuMemGetInfo");
  if (!r && free_bytes) *free_bytes = f;
  if (!r && total) *total = d->info.memory_bytes;
  NVCU_UNLOCK();
  return r;
}

/* ---- pointer attributes ---- */

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  nvcu_alloc *a = nvcu_alloc_find(ptr);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  nvcu_device *d;
  CUresult r = nvcu_device_get(a->device, &d);
  if (r) return r;
  uint64_t offset = ptr - a->base, gpu = nvhcq_buffer_gpu_address(a->buf) + a->buf_offset + offset;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = &d->primary;
    break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    /* managed memory reads as device memory, as libcuda's does (IS_MANAGED tells it apart) */
    *(unsigned int *)data = a->host && !a->managed ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = gpu;
    break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (!a->host) return CUDA_ERROR_INVALID_VALUE;
    *(void **)data = (void *)(uintptr_t)ptr;
    break;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
  case CU_POINTER_ATTRIBUTE_MAPPED:
    *(int *)data = 1;
    break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: /* CUDA: never an earlier allocation's, freed or not */
    *(unsigned long long *)data = a->id;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(int *)data = a->managed;
    break;
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    if (!a->pool) return CUDA_ERROR_INVALID_VALUE;
    *(struct CUmemPoolHandle_st **)data = a->pool;
    break;
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: /* what cuIpcGetMemHandle shares */
    *(int *)data = nvcu_ipc_capable(a);
    break;
  case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    *(int *)data = 0;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = a->device;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
  case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    *(CUdeviceptr *)data = a->base;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
  case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    *(size_t *)data = a->size;
    break;
  case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    *(unsigned int *)data = 3; /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE */
    break;
  /* What the memory may be exported as: cuMemCreate's requested types, a pool's, else none. */
  case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    *(unsigned long long *)data = a->vmm    ? nvcu_vmm_handle_types(ptr)
                                  : a->pool ? nvcu_pool_handle_types(a->pool)
                                            : 0;
    break;
  case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: /* the physical allocation's */
    *(unsigned long long *)data = a->vmm ? nvcu_vmm_block_id(ptr) : a->id;
    break;
  case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: /* no decompression engine is driven */
    *(int *)data = 0;
    break;
  default:
    return nvcu_unsupported("cuPointerGetAttribute of this attribute");
  }
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = pointer_attribute(data, attribute, ptr);
  NVCU_UNLOCK();
  return r;
}

/* SYNC_MEMOPS is the one attribute CUDA lets a program set. Every synchronous copy and memset
 * here has finished when it returns, whatever the memory, so either value is accepted and kept
 * as it was: synchronous. */
CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r && !nvcu_alloc_find(ptr)) r = CUDA_ERROR_INVALID_VALUE;
  NVCU_UNLOCK();
  return r;
}

/* As libcuda does, an address nothing was allocated at is not an error here: its memory type
 * reads 0 and the other attributes keep what the caller set (or 0 / NULL). */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr) {
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  int known = nvcu_alloc_find(ptr) != NULL;
  for (unsigned int i = 0; i < numAttributes && !r; i++) {
    if (!data[i]) continue;
    if (known) {
      r = pointer_attribute(data[i], attributes[i], ptr);
      if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) r = CUDA_SUCCESS;
    } else if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
      *(unsigned int *)data[i] = 0;
    } else if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
      *(int *)data[i] = -2;
    }
  }
  NVCU_UNLOCK();
  return r;
}

/* ---- copies ---- */

/* An address and what it lies in: an allocation of ours, or (a == NULL) pageable host memory. */
typedef struct place {
  nvcu_alloc *a;
  uint64_t offset;
} place;

static place locate(uint64_t address) {
  place p = {nvcu_alloc_find(address), 0};
  if (p.a) p.offset = address - p.a->base;
  return p;
}

/* The offset in the allocation's buffer. */
static uint64_t buf_off(place p) {
  return p.a->buf_offset + p.offset;
}

static uint64_t gpu_of(place p) {
  return nvhcq_buffer_gpu_address(p.a->buf) + buf_off(p);
}

/* Bytes from p on in its allocation (n at most): pageable host memory has all n. */
#define check_span(p, n, what) check_span_at(p, 0, n, what)

static uint64_t room(place p, uint64_t n) {
  return !p.a || n < p.a->size - p.offset ? n : p.a->size - p.offset;
}

/* Whether n bytes from p on lie in cuMemMap'ed memory mapped side by side with access set (one
 * contiguous range for the GPU, as in CUDA). */
static int spans_mappings(place p, uint64_t n) {
  for (;;) {
    uint64_t k = room(p, n);
    if (k == n) return 1;
    nvcu_alloc *next = nvcu_alloc_find(p.a->base + p.a->size);
    if (!p.a->vmm || !next || !next->vmm || next->device != p.a->device) return 0;
    p = (place){next, 0};
    n -= k;
  }
}

static CUresult check_span_at(place p, uint64_t address, size_t n, const char *what) {
  if (!p.a && nvcu_vmm_reserved(address)) {
    nvcu_log("%s: 0x%llx is reserved GPU address space without access", what,
             (unsigned long long)address);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (p.a && n > p.a->size - p.offset && !spans_mappings(p, n)) {
    nvcu_log("%s: %zu bytes at offset %llu run past the %llu-byte allocation", what, n,
             (unsigned long long)p.offset, (unsigned long long)p.a->size);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* n bytes, each end within one allocation or in pageable host memory. */
static CUresult copy_piece(place pd, place ps, uint64_t dst, uint64_t src, size_t n) {
  nvhcq_status s;
  if (pd.a && ps.a)
    s = nvhcq_buffer_copy(pd.a->buf, buf_off(pd), ps.a->buf, buf_off(ps), n);
  else if (pd.a)
    s = nvhcq_buffer_write(pd.a->buf, buf_off(pd), (const void *)(uintptr_t)src, n);
  else if (ps.a)
    s = nvhcq_buffer_read((void *)(uintptr_t)dst, ps.a->buf, buf_off(ps), n);
  else
    s = (memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n), NVHCQ_SUCCESS);
  return nvcu_status(s, "copy");
}

/* A copy the CPU waits for, after all earlier work: CUDA's synchronous copies. */
static CUresult copy_sync(uint64_t dst, uint64_t src, size_t n) {
  nvcu_device *d;
  CUresult r = nvcu_current(&d, NULL);
  if (r || n == 0) return r;
  place pd = locate(dst), ps = locate(src);
  if ((r = check_span_at(pd, dst, n, "copy destination")) ||
      (r = check_span_at(ps, src, n, "copy source")))
    return r;
  if ((r = nvcu_wait_all(d))) return r;
  for (;;) { /* piece by piece where a range spans mappings side by side */
    size_t k = (size_t)room(ps, room(pd, n));
    if ((r = copy_piece(pd, ps, dst, src, k)) || k == n) return r;
    dst += k, src += k, n -= k;
    pd = locate(dst), ps = locate(src);
  }
}

/* A copy in a stream's order. Both ends in our memory: the copy engine (or, captured, a graph
 * node); pageable host memory: synchronous, as libcuda stages such copies too. */
static CUresult copy_async(uint64_t dst, uint64_t src, size_t n, CUstream stream) {
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(stream, &st);
  if (r || n == 0) return r;
  place pd = locate(dst), ps = locate(src);
  if ((r = check_span_at(pd, dst, n, "copy destination")) ||
      (r = check_span_at(ps, src, n, "copy source")))
    return r;
  if (!pd.a || !ps.a) {
    if (st->capture) return nvcu_unsupported("capturing a copy to or from pageable host memory");
    return copy_sync(dst, src, n);
  }
  nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_MEMCPY, .dst = gpu_of(pd), .src = gpu_of(ps), .size = n};
  return nvcu_stream_op(stream, &op);
}

/* Runs a copy between GPU addresses now, in order after everything submitted. */
CUresult nvcu_run_copy(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op) {
  place pd = locate(op->dst), ps = locate(op->src);
  int device = pd.a && ps.a && !pd.a->host && !ps.a->host && room(pd, op->size) == op->size &&
               room(ps, op->size) == op->size; /* the copy kernel's ends lie in one buffer each */
  if (device && op->size >= KERNEL_COPY_BYTES && ((op->dst | op->src | op->size) & 15) == 0) {
    CUresult r = nvcu_wait_all(d);
    if (r) return r;
    return nvcu_status(nvhcq_buffer_copy(pd.a->buf, buf_off(pd), ps.a->buf, buf_off(ps), op->size),
                       "device-to-device copy");
  }
  nvhcq_queue *q = nvcu_engine_begin(d, NVCU_COPY);
  nvhcq_status s = nvhcq_queue_copy(q, op->dst, op->src, op->size);
  if (s) return nvcu_status(s, "copy");
  return nvcu_engine_end(d, NVCU_COPY, st);
}

/* Fills the pinned pattern buffer with `count` elements of `value` (1, 2 or 4 bytes each). */
static void fill_pattern(uint8_t *p, size_t bytes, uint32_t value, uint32_t size) {
  if (size == 1) {
    memset(p, (int)value, bytes);
    return;
  }
  for (size_t i = 0; i + size <= bytes; i += size) memcpy(p + i, &value, size);
}

/* A memset now, in order: the copy engine repeats a pinned buffer holding the pattern. The buffer
 * is refilled only once the previous memset has read it. */
CUresult nvcu_run_memset(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op) {
  nvhcq_status s = NVHCQ_SUCCESS;
  if (!d->pattern) s = nvhcq_buffer_create(d->dev, PATTERN_BYTES, NVHCQ_MEMORY_HOST, &d->pattern);
  if (!s && d->pattern_done) s = nvhcq_signal_cpu_wait(d->timeline[NVCU_COPY], d->pattern_done, 0);
  if (s) return nvcu_status(s, "memset");
  uint64_t bytes = op->size * op->element_size;
  fill_pattern(nvhcq_buffer_host_pointer(d->pattern), bytes < PATTERN_BYTES ? bytes : PATTERN_BYTES,
               op->value, op->element_size);
  nvhcq_queue *q = nvcu_engine_begin(d, NVCU_COPY);
  uint64_t src = nvhcq_buffer_gpu_address(d->pattern);
  for (uint64_t off = 0; off < bytes && !s; off += PATTERN_BYTES)
    s = nvhcq_queue_copy(q, op->dst + off, src,
                         bytes - off < PATTERN_BYTES ? bytes - off : PATTERN_BYTES);
  if (s) return nvcu_status(s, "memset");
  CUresult r = nvcu_engine_end(d, NVCU_COPY, st);
  d->pattern_done = d->submitted[NVCU_COPY];
  return r;
}

static CUresult memset_any(CUdeviceptr dst, uint32_t value, uint32_t size, size_t n,
                           CUstream stream, int sync) {
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(stream, &st);
  place p = locate(dst);
  if (!r && !p.a) {
    nvcu_log("memset of 0x%llx: not memory this library allocated", (unsigned long long)dst);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r && (dst % size)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = check_span(p, n * size, "memset");
  if (!r && n) {
    nvcu_op op = {.kind = CU_GRAPH_NODE_TYPE_MEMSET,
                  .dst = gpu_of(p),
                  .size = n,
                  .value = value,
                  .element_size = size};
    r = nvcu_stream_op(stream, &op);
  }
  nvcu_device *d;
  if (!r && sync && !(r = nvcu_current(&d, NULL))) r = nvcu_wait_all(d);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_any(dstDevice, uc, 1, N, NULL, 1);
}
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return memset_any(dstDevice, us, 2, N, NULL, 1);
}
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return memset_any(dstDevice, ui, 4, N, NULL, 1);
}
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return memset_any(dstDevice, uc, 1, N, hStream, 0);
}
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return memset_any(dstDevice, us, 2, N, hStream, 0);
}
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return memset_any(dstDevice, ui, 4, N, hStream, 0);
}

/* ---- pitched memory and 2D copies ---- */

/* Rows padded to 512 bytes, the texture pitch alignment libcuda's pitches also meet. */
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (!pPitch || !WidthInBytes || !Height ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = (WidthInBytes + 511) & ~(size_t)511;
  CUresult r = allocate(pitch * Height, (nvcu_alloc){0}, dptr);
  if (!r) *pPitch = pitch;
  return r;
}

/* One end of a 2D copy as an address (host or device: one address space here). */
static CUresult end_2d(CUmemorytype type, const void *host, CUdeviceptr device, uint64_t *out) {
  *out = type == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : device;
  return CUDA_SUCCESS;
}

/* The shape of a 3D copy (a 2D copy is one slice): rows of `width` bytes, `pitch` bytes apart,
 * slices of `rows` rows `slice` bytes apart, at each end. */
typedef struct shape {
  uint64_t dst, src;
  size_t dpitch, spitch, dslice, sslice;
  size_t width, height, depth;
} shape;

static CUresult copy_one(uint64_t dst, uint64_t src, size_t n, CUstream stream, int sync) {
  return sync ? copy_sync(dst, src, n) : copy_async(dst, src, n, stream);
}

/* Row by row, or a slice or the whole at a time where both ends are contiguous (under the lock). */
static CUresult copy_shape(const shape *c, CUstream stream, int sync) {
  int rows = c->spitch == c->width && c->dpitch == c->width;
  int slices = rows && c->sslice == c->width * c->height && c->dslice == c->width * c->height;
  if (slices || (rows && c->depth == 1))
    return copy_one(c->dst, c->src, c->width * c->height * c->depth, stream, sync);
  CUresult r = CUDA_SUCCESS;
  for (size_t z = 0; z < c->depth && !r; z++) {
    uint64_t d = c->dst + z * c->dslice, s = c->src + z * c->sslice;
    if (rows) {
      r = copy_one(d, s, c->width * c->height, stream, sync);
      continue;
    }
    for (size_t y = 0; y < c->height && !r; y++)
      r = copy_one(d + y * c->dpitch, s + y * c->spitch, c->width, stream, sync);
  }
  return r;
}

/* Whether one side of a copy, from `base` at (x, y, z) with `pitch`-byte rows and `rows`-row
 * slices, over width x height x depth, stays inside the 64-bit address space: sizes that wrap
 * would copy somewhere else than asked. */
static int side_fits(uint64_t base, size_t x, size_t y, size_t z, size_t pitch, size_t rows,
                     size_t width, size_t height, size_t depth) {
  unsigned __int128 slice = (unsigned __int128)pitch * rows;
  unsigned __int128 start = (unsigned __int128)base + x + (unsigned __int128)y * pitch + z * slice;
  unsigned __int128 end = start + (depth - 1) * slice + (unsigned __int128)(height - 1) * pitch +
                          width; /* width, height and depth are not 0 here */
  return end <= ((unsigned __int128)1 << 64) && slice < ((unsigned __int128)1 << 64);
}

/* A 2D copy, row by row (one copy when both sides are contiguous). */
static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream stream, int sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    CUDA_MEMCPY3D q = {.srcXInBytes = p->srcXInBytes,
                       .srcY = p->srcY,
                       .srcMemoryType = p->srcMemoryType,
                       .srcHost = p->srcHost,
                       .srcDevice = p->srcDevice,
                       .srcArray = p->srcArray,
                       .srcPitch = p->srcPitch,
                       .dstXInBytes = p->dstXInBytes,
                       .dstY = p->dstY,
                       .dstMemoryType = p->dstMemoryType,
                       .dstHost = p->dstHost,
                       .dstDevice = p->dstDevice,
                       .dstArray = p->dstArray,
                       .dstPitch = p->dstPitch,
                       .WidthInBytes = p->WidthInBytes,
                       .Height = p->Height,
                       .Depth = 1};
    return nvcu_copy_array_3d(&q, sync ? NULL : stream);
  }
  uint64_t src = 0, dst = 0;
  CUresult r = end_2d(p->srcMemoryType, p->srcHost, p->srcDevice, &src);
  if (!r) r = end_2d(p->dstMemoryType, p->dstHost, p->dstDevice, &dst);
  if (r) return r;
  size_t spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  if (spitch < p->WidthInBytes || dpitch < p->WidthInBytes) return CUDA_ERROR_INVALID_VALUE;
  if (!p->WidthInBytes || !p->Height) return CUDA_SUCCESS;
  if (!side_fits(dst, p->dstXInBytes, p->dstY, 0, dpitch, 1, p->WidthInBytes, p->Height, 1) ||
      !side_fits(src, p->srcXInBytes, p->srcY, 0, spitch, 1, p->WidthInBytes, p->Height, 1))
    return CUDA_ERROR_INVALID_VALUE;
  shape c = {.dst = dst + p->dstXInBytes + p->dstY * dpitch,
             .src = src + p->srcXInBytes + p->srcY * spitch,
             .dpitch = dpitch,
             .spitch = spitch,
             .width = p->WidthInBytes,
             .height = p->Height,
             .depth = 1};
  if (!c.width || !c.height) return CUDA_SUCCESS;
  NVCU_LOCK();
  r = copy_shape(&c, stream, sync);
  NVCU_UNLOCK();
  return r;
}

/* A 3D copy (with arrays: array.c). A pitch of 0 means
 * rows are contiguous, a height of 0 that slices are, as for 2D copies. */
static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream stream, int sync) {
  if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return nvcu_copy_array_3d(p, sync ? NULL : stream);
  uint64_t src = 0, dst = 0;
  CUresult r = end_2d(p->srcMemoryType, p->srcHost, p->srcDevice, &src);
  if (!r) r = end_2d(p->dstMemoryType, p->dstHost, p->dstDevice, &dst);
  if (r) return r;
  size_t spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  size_t sheight = p->srcHeight ? p->srcHeight : p->Height;
  size_t dheight = p->dstHeight ? p->dstHeight : p->Height;
  if (spitch < p->WidthInBytes || dpitch < p->WidthInBytes) return CUDA_ERROR_INVALID_VALUE;
  if (p->Depth > 1 && (sheight < p->Height || dheight < p->Height)) return CUDA_ERROR_INVALID_VALUE;
  if (!p->WidthInBytes || !p->Height || !p->Depth) return CUDA_SUCCESS;
  if (!side_fits(dst, p->dstXInBytes, p->dstY, p->dstZ, dpitch, dheight, p->WidthInBytes, p->Height,
                 p->Depth) ||
      !side_fits(src, p->srcXInBytes, p->srcY, p->srcZ, spitch, sheight, p->WidthInBytes, p->Height,
                 p->Depth))
    return CUDA_ERROR_INVALID_VALUE;
  shape c = {.dst = dst + p->dstXInBytes + (p->dstY + p->dstZ * dheight) * dpitch,
             .src = src + p->srcXInBytes + (p->srcY + p->srcZ * sheight) * spitch,
             .dpitch = dpitch,
             .spitch = spitch,
             .dslice = dpitch * dheight,
             .sslice = spitch * sheight,
             .width = p->WidthInBytes,
             .height = p->Height,
             .depth = p->Depth};
  if (!c.width || !c.height || !c.depth) return CUDA_SUCCESS;
  NVCU_LOCK();
  r = copy_shape(&c, stream, sync);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) {
  return copy_3d(pCopy, NULL, 1);
}
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
  return copy_3d(pCopy, hStream, 0);
}

/* Between contexts: one address space here (peer memory is mapped once access is enabled), so a
 * 3D copy without the contexts. */
static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream stream, int sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D c = {.srcXInBytes = p->srcXInBytes,
                     .srcY = p->srcY,
                     .srcZ = p->srcZ,
                     .srcLOD = p->srcLOD,
                     .srcMemoryType = p->srcMemoryType,
                     .srcHost = p->srcHost,
                     .srcDevice = p->srcDevice,
                     .srcArray = p->srcArray,
                     .srcPitch = p->srcPitch,
                     .srcHeight = p->srcHeight,
                     .dstXInBytes = p->dstXInBytes,
                     .dstY = p->dstY,
                     .dstZ = p->dstZ,
                     .dstLOD = p->dstLOD,
                     .dstMemoryType = p->dstMemoryType,
                     .dstHost = p->dstHost,
                     .dstDevice = p->dstDevice,
                     .dstArray = p->dstArray,
                     .dstPitch = p->dstPitch,
                     .dstHeight = p->dstHeight,
                     .WidthInBytes = p->WidthInBytes,
                     .Height = p->Height,
                     .Depth = p->Depth};
  return copy_3d(&c, stream, sync);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) {
  return copy_3d_peer(pCopy, NULL, 1);
}
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream) {
  return copy_3d_peer(pCopy, hStream, 0);
}

/* ---- batches (CUDA 12.8) ---- */

static int access_order_ok(CUmemcpySrcAccessOrder o) {
  return o >= CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && o <= CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* Attribute ranges start at 0 and rise, checked before any copy is made; each copy is then made
 * in the stream's order (a source in pageable memory is read during the call, which every access
 * order allows), and one that fails stops the batch. */
static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                      CUstream stream) {
  if (fail) *fail = SIZE_MAX;
  if (!count || !dsts || !srcs || !sizes || !attrs || !idxs || !nattrs || nattrs > count ||
      idxs[0] != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < nattrs; i++)
    if ((i && idxs[i] <= idxs[i - 1]) || idxs[i] >= count ||
        !access_order_ok(attrs[i].srcAccessOrder) ||
        (attrs[i].flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
      return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    CUresult r = copy_async(dsts[i], srcs[i], sizes[i], stream);
    if (r) {
      if (fail) *fail = i;
      return r;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                               CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream);
}

/* CUDA 12.8's form, which also says which copy failed. */
CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                            size_t *failIdx, CUstream hStream) {
  return batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream);
}

/* One end of a batched 3D copy as a CUDA_MEMCPY3D end: extents are in elements, of the array's
 * element size where an end is an array (else bytes). */
static CUresult operand_end(const CUmemcpy3DOperand *o, size_t elem, size_t width, size_t height,
                            CUmemorytype *type, CUdeviceptr *ptr, CUarray *array, size_t *x,
                            size_t *y, size_t *z, size_t *pitch, size_t *rows) {
  if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    *type = CU_MEMORYTYPE_ARRAY, *array = o->op.array.array;
    *x = o->op.array.offset.x * elem, *y = o->op.array.offset.y, *z = o->op.array.offset.z;
    return CUDA_SUCCESS;
  }
  if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER) return CUDA_ERROR_INVALID_VALUE;
  *type = CU_MEMORYTYPE_UNIFIED, *ptr = o->op.ptr.ptr;
  *pitch = (o->op.ptr.rowLength ? o->op.ptr.rowLength : width) * elem;
  *rows = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : height;
  return CUDA_SUCCESS;
}

static CUresult batch_op(const CUDA_MEMCPY3D_BATCH_OP *op, CUstream stream) {
  const CUextent3D *e = &op->extent;
  if (!e->width || !e->height || !e->depth || !access_order_ok(op->srcAccessOrder) ||
      (op->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
    return CUDA_ERROR_INVALID_VALUE;
  size_t elem = 1;
  if (op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
    elem = nvcu_array_element_size(op->src.op.array.array);
  if (op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
    elem = nvcu_array_element_size(op->dst.op.array.array);
  if (!elem) return CUDA_ERROR_INVALID_HANDLE;
  CUDA_MEMCPY3D c = {.WidthInBytes = e->width * elem, .Height = e->height, .Depth = e->depth};
  CUresult r =
      operand_end(&op->src, elem, e->width, e->height, &c.srcMemoryType, &c.srcDevice, &c.srcArray,
                  &c.srcXInBytes, &c.srcY, &c.srcZ, &c.srcPitch, &c.srcHeight);
  if (!r)
    r = operand_end(&op->dst, elem, e->width, e->height, &c.dstMemoryType, &c.dstDevice,
                    &c.dstArray, &c.dstXInBytes, &c.dstY, &c.dstZ, &c.dstPitch, &c.dstHeight);
  return r ? r : copy_3d(&c, stream, 0);
}

static CUresult batch_3d(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                         unsigned long long flags, CUstream stream) {
  if (fail) *fail = SIZE_MAX;
  if (!n || !ops || flags) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    CUresult r = batch_op(&ops[i], stream);
    if (r) {
      if (fail) *fail = i;
      return r;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                 unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, NULL, flags, hStream);
}

CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                              unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, failIdx, flags, hStream);
}

/* ---- 2D memsets ---- */

/* Row by row unless the rows are contiguous; a synchronous one waits after its last row. */
static CUresult memset_2d(CUdeviceptr dst, size_t pitch, uint32_t value, uint32_t size,
                          size_t width, size_t height, CUstream stream, int sync) {
  if (!width || !height) return CUDA_SUCCESS;
  size_t row;
  if (__builtin_mul_overflow(width, (size_t)size, &row) ||
      !side_fits(dst, 0, 0, 0, pitch, 1, row, height, 1))
    return CUDA_ERROR_INVALID_VALUE;
  if (height > 1 && pitch < width * size) return CUDA_ERROR_INVALID_VALUE;
  if (height == 1 || pitch == width * size)
    return memset_any(dst, value, size, width * height, stream, sync);
  CUresult r = CUDA_SUCCESS;
  for (size_t y = 0; y < height && !r; y++)
    r = memset_any(dst + y * pitch, value, size, width, stream, sync && y == height - 1);
  return r;
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                         size_t Height) {
  return memset_2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL, 1);
}
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                          size_t Height) {
  return memset_2d(dstDevice, dstPitch, us, 2, Width, Height, NULL, 1);
}
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                          size_t Height) {
  return memset_2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL, 1);
}
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height, CUstream hStream) {
  return memset_2d(dstDevice, dstPitch, uc, 1, Width, Height, hStream, 0);
}
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream) {
  return memset_2d(dstDevice, dstPitch, us, 2, Width, Height, hStream, 0);
}
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                            size_t Height, CUstream hStream) {
  return memset_2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream, 0);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) {
  return copy_2d(pCopy, NULL, 1);
}
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
  return copy_2d(pCopy, NULL, 1);
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
  return copy_2d(pCopy, hStream, 0);
}

/* Every synchronous copy, under the lock. */
static CUresult locked_copy(uint64_t dst, uint64_t src, size_t n) {
  NVCU_LOCK();
  CUresult r = copy_sync(dst, src, n);
  NVCU_UNLOCK();
  return r;
}

static CUresult locked_copy_async(uint64_t dst, uint64_t src, size_t n, CUstream s) {
  NVCU_LOCK();
  CUresult r = copy_async(dst, src, n, s);
  NVCU_UNLOCK();
  return r;
}

#define HOST(p) ((uint64_t)(uintptr_t)(p))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return locked_copy(dst, src, ByteCount);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream s) {
  return locked_copy_async(dst, src, ByteCount, s);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  return locked_copy(dstDevice, HOST(srcHost), ByteCount);
}
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return locked_copy(HOST(dstHost), srcDevice, ByteCount);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return locked_copy(dstDevice, srcDevice, ByteCount);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream) {
  return locked_copy_async(dstDevice, HOST(srcHost), ByteCount, hStream);
}
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return locked_copy_async(HOST(dstHost), srcDevice, ByteCount, hStream);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return locked_copy_async(dstDevice, srcDevice, ByteCount, hStream);
}

/* ---- copies between contexts ---- */

static CUresult ctx_device(CUcontext c, int *device) {
  if (!c || c->magic != NVCU_CTX_MAGIC) return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->device;
  return CUDA_SUCCESS;
}

/* Contexts of one device share its memory and its order: an ordinary copy. Between devices the
 * CPU waits for both, and nvhcq copies buffer to buffer. */
static CUresult copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                          size_t n, CUstream stream, int sync) {
  int dd, sd;
  CUresult r = ctx_device(dctx, &dd);
  if (!r) r = ctx_device(sctx, &sd);
  if (r) return r;
  if (dd == sd) return sync ? locked_copy(dst, src, n) : locked_copy_async(dst, src, n, stream);
  NVCU_LOCK();
  nvcu_device *a, *b;
  place pd = locate(dst), ps = locate(src);
  r = nvcu_device_get(dd, &a);
  if (!r) r = nvcu_device_get(sd, &b);
  if (!r && (!pd.a || !ps.a)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = check_span(pd, n, "peer copy destination");
  if (!r) r = check_span(ps, n, "peer copy source");
  if (!r) r = nvcu_wait_all(a);
  if (!r) r = nvcu_wait_all(b);
  if (!r && n)
    r = nvcu_status(nvhcq_buffer_copy(pd.a->buf, buf_off(pd), ps.a->buf, buf_off(ps), n),
                    "copy between devices");
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, 1);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, 0);
}

/* The per-thread default stream variants: every stream's work is ordered here, so they are the
 * same functions. */
#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));
NVCU_ALIAS(cuMemcpy_ptds, cuMemcpy)
NVCU_ALIAS(cuMemcpyAsync_ptsz, cuMemcpyAsync)
NVCU_ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2)
NVCU_ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2)
NVCU_ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2)
NVCU_ALIAS(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2)
NVCU_ALIAS(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2)
NVCU_ALIAS(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2)
NVCU_ALIAS(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2)
NVCU_ALIAS(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned_v2)
NVCU_ALIAS(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2)
NVCU_ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2)
NVCU_ALIAS(cuMemsetD16_v2_ptds, cuMemsetD16_v2)
NVCU_ALIAS(cuMemsetD32_v2_ptds, cuMemsetD32_v2)
NVCU_ALIAS(cuMemsetD8Async_ptsz, cuMemsetD8Async)
NVCU_ALIAS(cuMemsetD16Async_ptsz, cuMemsetD16Async)
NVCU_ALIAS(cuMemsetD32Async_ptsz, cuMemsetD32Async)
NVCU_ALIAS(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2)
NVCU_ALIAS(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2)
NVCU_ALIAS(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2)
NVCU_ALIAS(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async)
NVCU_ALIAS(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async)
NVCU_ALIAS(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async)
NVCU_ALIAS(cuMemcpy3D_v2_ptds, cuMemcpy3D_v2)
NVCU_ALIAS(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync_v2)
NVCU_ALIAS(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer)
NVCU_ALIAS(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync)
NVCU_ALIAS(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync_v2)
NVCU_ALIAS(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync)
NVCU_ALIAS(cuMemcpy3DBatchAsync_v2_ptsz, cuMemcpy3DBatchAsync_v2)
NVCU_ALIAS(cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync)
NVCU_ALIAS(cuMemcpyPeer_ptds, cuMemcpyPeer)
NVCU_ALIAS(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync)
