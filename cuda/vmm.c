/* Virtual memory management: cuMemCreate's physical memory (nvhcq_physical, shareable through
 * POSIX file descriptors), address ranges
 * (nvhcq_reservation), cuMemMap's mappings, which get their GPU mapping (a buffer of nvhcq's, in
 * the allocation table) only once cuMemSetAccess grants the device read-write access. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GRANULE ((uint64_t)NVHCQ_PHYSICAL_GRANULARITY)

/* cuMemCreate's memory; alive while the caller holds a handle to it or it is mapped. */
typedef struct nvcu_phys {
  nvhcq_physical *p;
  CUmemAllocationProp prop;
  uint64_t size;
  uint64_t id;  /* CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: never another's in this process */
  int refs;     /* cuMemCreate and cuMemRetainAllocationHandle, less cuMemRelease */
  int mappings; /* cuMemMap, less cuMemUnmap */
  struct nvcu_phys *next;
} nvcu_phys;

typedef struct nvcu_vrange {
  uint64_t base, size;
  nvhcq_reservation *r;
} nvcu_vrange;

typedef struct nvcu_mapping {
  uint64_t base, size, offset;
  nvcu_phys *phys;
  nvcu_vrange *range;
  nvhcq_buffer *buf; /* its GPU mapping, once access is set; else NULL */
} nvcu_mapping;

/* All under the library's lock. */
static nvcu_phys *physicals;
static nvcu_vrange **ranges;
static size_t range_count;
static nvcu_mapping *maps;
static size_t map_count, map_cap;

static int misaligned(uint64_t x) {
  return (x & (GRANULE - 1)) != 0;
}

static nvcu_phys *phys_of(CUmemGenericAllocationHandle h) {
  for (nvcu_phys *p = physicals; p; p = p->next)
    if ((CUmemGenericAllocationHandle)(uintptr_t)p == h) return p;
  return NULL;
}

/* Goes once neither a handle nor a mapping holds it. */
static void phys_maybe_free(nvcu_phys *p) {
  if (p->refs || p->mappings) return;
  nvcu_phys **at = &physicals;
  while (*at != p) at = &(*at)->next;
  *at = p->next;
  (void)nvhcq_physical_destroy(p->p);
  free(p);
}

static nvcu_mapping *map_at(uint64_t address) {
  for (size_t i = 0; i < map_count; i++)
    if (address - maps[i].base < maps[i].size) return &maps[i];
  return NULL;
}

unsigned nvcu_vmm_handle_types(uint64_t address) {
  nvcu_mapping *m = map_at(address);
  return m ? (unsigned)m->phys->prop.requestedHandleTypes : 0;
}

uint64_t nvcu_vmm_block_id(uint64_t address) {
  nvcu_mapping *m = map_at(address);
  return m ? m->phys->id : 0;
}

static nvcu_vrange *range_holding(uint64_t base, uint64_t size) {
  for (size_t i = 0; i < range_count; i++) {
    nvcu_vrange *v = ranges[i];
    if (base >= v->base && size <= v->size && base - v->base <= v->size - size) return v;
  }
  return NULL;
}

int nvcu_vmm_reserved(uint64_t address) {
  return range_holding(address, 1) != NULL;
}

/* ---- granularity, physical memory ---- */

static CUresult check_prop(const CUmemAllocationProp *prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    if (prop->location.type == CU_MEM_LOCATION_TYPE_INVALID) return CUDA_ERROR_INVALID_VALUE;
    return nvcu_unsupported("virtual memory management of host memory");
  }
  nvcu_device *d;
  return nvcu_device_get(prop->location.id, &d);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
  if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                       option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = check_prop(prop);
  NVCU_UNLOCK();
  if (!r) *granularity = GRANULE; /* both, as libcuda answers for device memory on the H200 */
  return r;
}

static CUresult check_create(size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags) {
  if (flags || size == 0 || misaligned(size)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_prop(prop);
  if (r) return r;
  if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return nvcu_unsupported("shareable handles other than POSIX file descriptors (Win32, fabric)");
  if (prop->allocFlags.compressionType)
    return nvcu_unsupported("compressible memory (nvhcq maps memory without compression)");
  if (prop->allocFlags.usage) return nvcu_unsupported("cuMemCreate's usage flags");
  return CUDA_SUCCESS;
}

/* Takes p (its memory made) into the table and hands out its handle; on failure frees p. */
static CUresult phys_adopt(CUresult r, nvcu_phys *p, const CUmemAllocationProp *prop,
                           CUmemGenericAllocationHandle *handle) {
  if (r) {
    free(p);
    return r;
  }
  p->prop = *prop;
  p->size = nvhcq_physical_size(p->p);
  p->id = nvcu_next_id();
  p->refs = 1;
  p->next = physicals;
  physicals = p;
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = check_create(size, prop, flags);
  nvcu_device *d = NULL;
  nvcu_phys *p = NULL;
  if (!r) r = nvcu_device_get(prop->location.id, &d);
  if (!r && !(p = calloc(1, sizeof *p))) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = nvcu_status(nvhcq_physical_create(d->dev, size, &p->p), "cuMemCreate");
  r = phys_adopt(r, p, prop, handle);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_phys *p = r ? NULL : phys_of(handle);
  if (!r && (!p || !p->refs)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) {
    p->refs--;
    phys_maybe_free(p); /* mapped memory stays until its last cuMemUnmap */
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle) {
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_phys *p = r ? NULL : phys_of(handle);
  if (!r && (!p || !p->refs)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) *prop = p->prop;
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_mapping *m = r ? NULL : map_at((uint64_t)(uintptr_t)addr);
  if (!r && !m) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) {
    m->phys->refs++;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)m->phys;
  }
  NVCU_UNLOCK();
  return r;
}

/* ---- shareable handles (POSIX file descriptors) ---- */

CUresult nvcu_handle_type_check(CUmemAllocationHandleType type) {
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_SUCCESS;
  return type == CU_MEM_HANDLE_TYPE_NONE
             ? CUDA_ERROR_INVALID_VALUE
             : nvcu_unsupported("shareable handles other than POSIX file descriptors");
}

CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type, unsigned long long flags) {
  if (!shareable || flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult t = nvcu_handle_type_check(type);
  if (t) return t;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_phys *p = r ? NULL : phys_of(handle);
  if (!r && (!p || !p->refs)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r && !(p->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
    nvcu_log("cuMemExportToShareableHandle: the memory was created without "
             "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in prop.requestedHandleTypes");
    r = CUDA_ERROR_INVALID_VALUE;
  }
  int fd = -1;
  if (!r) r = nvcu_status(nvhcq_physical_export_fd(p->p, &fd), "cuMemExportToShareableHandle");
  if (!r) *(int *)shareable = fd;
  NVCU_UNLOCK();
  return r;
}

/* The memory is on one of the GPUs: the current context's is tried first, then each other. */
static CUresult import_fd(int fd, nvhcq_physical **out, int *device) {
  nvcu_device *d;
  int current = -1;
  if (!nvcu_current(&d, &current) && !nvhcq_physical_import_fd(d->dev, fd, out)) {
    *device = current;
    return CUDA_SUCCESS;
  }
  for (int i = 0; !nvcu_device_get(i, &d); i++)
    if (i != current && !nvhcq_physical_import_fd(d->dev, fd, out)) {
      *device = i;
      return CUDA_SUCCESS;
    }
  nvcu_log("cuMemImportFromShareableHandle: file descriptor %d: %s", fd, nvhcq_last_error());
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os_handle,
                                        CUmemAllocationHandleType type) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  CUresult t = nvcu_handle_type_check(type);
  if (t) return t;
  int fd = (int)(intptr_t)os_handle;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_phys *p = NULL;
  int device = 0;
  if (!r && fd < 0) r = CUDA_ERROR_INVALID_VALUE;
  if (!r && !(p = calloc(1, sizeof *p))) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = import_fd(fd, &p->p, &device);
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device}};
  r = phys_adopt(r, p, &prop, handle);
  NVCU_UNLOCK();
  return r;
}

/* ---- address ranges ---- */

static CUresult reserve_locked(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr) {
  if (alignment < GRANULE) alignment = 0; /* 0 and smaller ones: the granularity */
  nvcu_vrange *v = calloc(1, sizeof *v);
  nvcu_vrange **grown = realloc(ranges, (range_count + 1) * sizeof *grown);
  if (grown) ranges = grown;
  if (!v || !grown) {
    free(v);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  /* `addr` is a hint: taken if all of it is free, else the range goes elsewhere */
  CUresult r =
      nvcu_status(nvhcq_reservation_create(size, alignment, misaligned(addr) ? 0 : addr, &v->r),
                  "cuMemAddressReserve");
  if (r) {
    free(v);
    return r == CUDA_ERROR_INVALID_VALUE ? r : CUDA_ERROR_OUT_OF_MEMORY;
  }
  v->base = nvhcq_reservation_gpu_address(v->r);
  v->size = size;
  ranges[range_count++] = v;
  *ptr = v->base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  if (!ptr || flags || size == 0 || misaligned(size) || (alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = reserve_locked(ptr, size, alignment, addr);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  size_t i = 0;
  while (!r && i < range_count && !(ranges[i]->base == ptr && ranges[i]->size == size)) i++;
  if (!r && i == range_count) r = CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; !r && k < map_count; k++)
    if (maps[k].range == ranges[i]) r = CUDA_ERROR_INVALID_VALUE; /* cuMemUnmap it first */
  if (!r) r = nvcu_status(nvhcq_reservation_destroy(ranges[i]->r), "cuMemAddressFree");
  if (!r) {
    free(ranges[i]);
    ranges[i] = ranges[--range_count];
  }
  NVCU_UNLOCK();
  return r;
}

/* ---- mappings ---- */

static CUresult map_locked(CUdeviceptr ptr, size_t size, size_t offset, nvcu_phys *p) {
  nvcu_vrange *v = range_holding(ptr, size);
  if (!v || offset > p->size || size > p->size - offset) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < map_count; i++)
    if (ptr < maps[i].base + maps[i].size && maps[i].base < ptr + size)
      return CUDA_ERROR_INVALID_VALUE; /* mapped already */
  nvcu_mapping *grown = nvcu_room(maps, &map_cap, map_count, sizeof *maps, 16);
  if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
  maps = grown;
  maps[map_count++] = (nvcu_mapping){ptr, size, offset, p, v, NULL};
  p->mappings++;
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  if (flags || size == 0 || misaligned(ptr | size | offset)) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_phys *p = r ? NULL : phys_of(handle);
  if (!r && (!p || !p->refs)) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = map_locked(ptr, size, offset, p);
  NVCU_UNLOCK();
  return r;
}

/* The mappings that make up exactly [ptr, ptr + size), in address order, into out (at most
 * map_count); their count, or 0 if the range is not made of whole mappings side by side. */
static size_t mappings_of(uint64_t ptr, uint64_t size, nvcu_mapping **out) {
  size_t n = 0;
  for (uint64_t at = ptr; at - ptr < size; n++) {
    nvcu_mapping *m = map_at(at);
    if (!m || m->base != at || m->size > ptr + size - at) return 0;
    out[n] = m;
    at += m->size;
  }
  return n;
}

/* Access off: the GPU mapping goes (once the GPU is past the work before). */
static CUresult revoke(nvcu_mapping *m) {
  if (!m->buf) return CUDA_SUCCESS;
  nvcu_alloc *a = nvcu_alloc_find(m->base);
  m->buf = NULL;
  return a ? nvcu_alloc_release(a) : CUDA_SUCCESS;
}

static CUresult grant(nvcu_mapping *m) {
  if (m->buf) return CUDA_SUCCESS;
  nvhcq_buffer *b;
  CUresult r = nvcu_status(
      nvhcq_buffer_map_physical(m->range->r, m->base, m->phys->p, m->offset, m->size, &b),
      "cuMemSetAccess");
  if (r) return r;
  nvcu_alloc a = {
      .base = m->base, .size = m->size, .buf = b, .device = m->phys->prop.location.id, .vmm = 1};
  r = nvcu_alloc_add(&a);
  if (r)
    (void)nvhcq_buffer_destroy(b);
  else
    m->buf = b;
  return r;
}

/* The access the descriptors ask for the mappings' device: -1 none asked, 0 none, 1 read-write. */
static CUresult wanted_access(const CUmemAccessDesc *desc, size_t count, int device, int *want) {
  *want = -1;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    nvcu_device *d;
    CUresult r = nvcu_device_get(desc[i].location.id, &d);
    if (r) return r;
    CUmemAccess_flags f = desc[i].flags;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.id != device)
      return nvcu_unsupported("cuMemSetAccess for a device other than the memory's own");
    if (f == CU_MEM_ACCESS_FLAGS_PROT_READ)
      return nvcu_unsupported("read-only access to mapped memory");
    *want = f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return CUDA_SUCCESS;
}

static CUresult set_access_locked(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                  size_t count) {
  nvcu_mapping **ms = malloc((map_count ? map_count : 1) * sizeof *ms);
  if (!ms) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t n = mappings_of(ptr, size, ms);
  CUresult r = n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n && !r; i++) {
    int want;
    r = wanted_access(desc, count, ms[i]->phys->prop.location.id, &want);
    if (!r && want >= 0) r = want ? grant(ms[i]) : revoke(ms[i]);
  }
  free(ms);
  return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  if (!desc || !count || size == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = set_access_locked(ptr, size, desc, count);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr) {
  if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_device *d;
  if (!r) r = nvcu_device_get(location->id, &d);
  nvcu_mapping *m = r ? NULL : map_at(ptr);
  if (!r && !m) r = CUDA_ERROR_INVALID_VALUE;
  if (!r)
    *flags = m->buf && location->id == m->phys->prop.location.id
                 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  NVCU_UNLOCK();
  return r;
}

static CUresult unmap_locked(CUdeviceptr ptr, size_t size) {
  nvcu_mapping **ms = malloc((map_count ? map_count : 1) * sizeof *ms);
  if (!ms) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t n = mappings_of(ptr, size, ms);
  CUresult r = n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  uint64_t *bases = n ? malloc(n * sizeof *bases) : NULL;
  if (n && !bases) r = CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && !r; i++) bases[i] = ms[i]->base;
  free(ms);
  for (size_t i = 0; i < n && bases; i++) { /* by address: removals move the entries */
    nvcu_mapping *m = map_at(bases[i]);
    CUresult ri = revoke(m);
    if (!r) r = ri;
    nvcu_phys *p = m->phys;
    *m = maps[--map_count];
    p->mappings--;
    phys_maybe_free(p);
  }
  free(bases);
  return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = unmap_locked(ptr, size);
  NVCU_UNLOCK();
  return r;
}
