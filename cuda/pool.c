/* Stream-ordered allocation: memory pools as bookkeeping over nvhcq buffers. An allocation is made
 * at once (so later work on the stream may use it); a free gives the buffer to nvhcq, which
 * releases it once the GPU has passed all work submitted before the free (every stream's work is
 * ordered on the device here). Pools keep no memory: trimming has nothing to do. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define NVCU_POOL_MAGIC 0x4c4f4f50

/* A free the GPU may still be behind: its bytes stay reserved until the timelines of the device
 * it was made for pass. */
typedef struct pending_free {
  uint64_t size, need[2];
  int device;
} pending_free;

struct CUmemPoolHandle_st {
  uint32_t magic;
  int device; /* a device pool's; -1 for host and managed pools, which serve every device */
  int is_default, destroyed;
  CUmemPoolProps props;
  uint64_t release_threshold;
  int reuse[3]; /* the REUSE_* attributes: accepted, nothing is reused */
  uint64_t used, used_high, reserved_high;
  uint64_t live;                              /* allocations not freed yet */
  int imported;                               /* another process's (by shareable handle) */
  CUmemAccess_flags access[NVCU_MAX_DEVICES]; /* other devices' (cuMemPoolSetAccess); 0: none */
  pending_free *pending;
  size_t pending_count, pending_cap;
};

/* Default and current pools by slot: a device's, then the host's and the managed pool (CUDA 13's
 * cuMemGetDefaultMemPool and cuMemSetMemPool name those by location and allocation type). */
enum { HOST_SLOT = NVCU_MAX_DEVICES, MANAGED_SLOT, SLOTS };
static struct CUmemPoolHandle_st default_pools[SLOTS];
static CUmemoryPool current_pools[SLOTS];

static CUresult device_check(CUdevice dev) {
  int count = 0;
  CUresult r = cuDeviceGetCount(&count);
  if (r) return r;
  return dev >= 0 && dev < count && dev < NVCU_MAX_DEVICES ? CUDA_SUCCESS
                                                           : CUDA_ERROR_INVALID_DEVICE;
}

static CUmemoryPool default_pool(int slot) {
  static const CUmemPoolProps host = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                      .location = {CU_MEM_LOCATION_TYPE_HOST, 0}};
  static const CUmemPoolProps managed = {.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED,
                                         .location = {CU_MEM_LOCATION_TYPE_NONE, 0}};
  CUmemoryPool p = &default_pools[slot];
  CUmemPoolProps device = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                           .location = {CU_MEM_LOCATION_TYPE_DEVICE, slot}};
  if (p->magic != NVCU_POOL_MAGIC)
    *p = (struct CUmemPoolHandle_st){.magic = NVCU_POOL_MAGIC,
                                     .device = slot < HOST_SLOT ? slot : -1,
                                     .is_default = 1,
                                     .props = slot == HOST_SLOT      ? host
                                              : slot == MANAGED_SLOT ? managed
                                                                     : device,
                                     .reuse = {1, 1, 1}};
  return p;
}

static CUmemoryPool current_pool(int dev) {
  return current_pools[dev] ? current_pools[dev] : default_pool(dev);
}

static CUresult pool_check(CUmemoryPool pool) {
  return pool && pool->magic == NVCU_POOL_MAGIC && !pool->destroyed ? CUDA_SUCCESS
                                                                    : CUDA_ERROR_INVALID_VALUE;
}

/* Whether a host or managed pool (pinned host memory, or managed memory, which is pinned host
 * memory here) rather than a device's. */
static int serves_any_device(const struct CUmemPoolHandle_st *pool) {
  return pool->device < 0;
}

int nvcu_pool_is_host(const struct CUmemPoolHandle_st *pool) {
  return serves_any_device(pool);
}

unsigned nvcu_pool_handle_types(const struct CUmemPoolHandle_st *pool) {
  return (unsigned)pool->props.handleTypes;
}

/* Bytes freed whose release the GPU has not passed yet; drops those it has. */
static uint64_t pending_bytes(CUmemoryPool pool) {
  uint64_t bytes = 0;
  size_t k = 0;
  for (size_t i = 0; i < pool->pending_count; i++) {
    pending_free f = pool->pending[i];
    nvcu_device *d;
    int done = nvcu_device_get(f.device, &d) || (nvhcq_signal_value(d->timeline[0]) >= f.need[0] &&
                                                 nvhcq_signal_value(d->timeline[1]) >= f.need[1]);
    if (!done) pool->pending[k++] = f, bytes += f.size;
  }
  pool->pending_count = k;
  return bytes;
}

static uint64_t reserved_now(CUmemoryPool pool) {
  return pool->used + pending_bytes(pool);
}

static void pool_free_struct(CUmemoryPool pool) {
  free(pool->pending);
  pool->pending = NULL;
  pool->magic = 0;
  if (!pool->is_default) free(pool);
}

void nvcu_pool_freed(CUmemoryPool pool, uint64_t size, int device) {
  nvcu_device *d;
  pool->used -= size;
  pool->live--;
  if (pool->destroyed && pool->live == 0) {
    pool_free_struct(pool);
    return;
  }
  if (nvcu_device_get(device, &d)) return;
  pending_free *grown =
      nvcu_room(pool->pending, &pool->pending_cap, pool->pending_count, sizeof *grown, 16);
  if (!grown) return; /* then the bytes read as released a little early */
  pool->pending = grown;
  pool->pending[pool->pending_count++] =
      (pending_free){size, {d->submitted[0], d->submitted[1]}, device};
}

/* ---- allocation and free ---- */

static CUresult alloc_from(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                           struct CUstream_st *st) {
  int any = serves_any_device(pool);
  if (st->capture && any)
    return nvcu_unsupported("allocating from a host or managed pool in a captured stream");
  if (st->capture) return nvcu_graph_mem_capture_alloc(st, size, &pool->props, dptr);
  if (!any && pool->device != st->device)
    return nvcu_unsupported("allocating from another device's pool");
  if (pool->imported) {
    nvcu_log("cuMemAllocFromPoolAsync: the pool is another process's (imported): import its "
             "allocations with cuMemPoolImportPointer");
    return CUDA_ERROR_INVALID_VALUE;
  }
  /* Allocations of a pool with shareable handles are whole 2 MiB pages above 512 KiB: what
   * another process maps (smaller ones are blocks of a shared 2 MiB allocation). */
  if (pool->props.handleTypes && size > (512u << 10))
    size = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  if (pool->props.maxSize && size > pool->props.maxSize - pool->used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = nvcu_alloc_pool_memory(
      st->device, size, pool, pool->props.allocType == CU_MEM_ALLOCATION_TYPE_MANAGED, dptr);
  if (r) return r;
  pool->used += size;
  pool->live++;
  if (pool->used > pool->used_high) pool->used_high = pool->used;
  uint64_t reserved = reserved_now(pool);
  if (reserved > pool->reserved_high) pool->reserved_high = reserved;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = pool_check(pool);
  if (!r) r = alloc_from(dptr, bytesize, pool, st);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  if (!r) r = alloc_from(dptr, bytesize, current_pool(st->device), st);
  NVCU_UNLOCK();
  return r;
}

/* Device memory of any origin cuMemFree takes may be freed here (not cuMemMap's mappings, which
 * cuMemUnmap frees). */
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  NVCU_LOCK();
  struct CUstream_st *st;
  CUresult r = nvcu_stream_get(hStream, &st);
  nvcu_alloc *a = r ? NULL : nvcu_alloc_find(dptr);
  if (!r && (!a || (a->host && !a->pool) || (a->ipc_range && !a->pool) || a->vmm || a->registered ||
             a->base != dptr))
    r = CUDA_ERROR_INVALID_VALUE;
  if (!r && st->capture)
    r = nvcu_graph_mem_capture_free(st, dptr);
  else if (!r && !nvcu_graph_mem_kept(a, &r))
    r = nvcu_alloc_release(a);
  NVCU_UNLOCK();
  return r;
}

/* ---- pools ---- */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = device_check(dev);
  if (!r) *pool_out = default_pool(dev);
  NVCU_UNLOCK();
  return r;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = device_check(dev);
  if (!r) *pool = current_pool(dev);
  NVCU_UNLOCK();
  return r;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  NVCU_LOCK();
  CUresult r = device_check(dev);
  if (!r) r = pool_check(pool);
  if (!r && pool->device != dev) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) current_pools[dev] = pool;
  NVCU_UNLOCK();
  return r;
}

/* ---- pools by location and allocation type (CUDA 13) ---- */

/* The slot of the pools a location and allocation type name: a device's for pinned memory there,
 * the host's for pinned memory on the host (any NUMA node: nvhcq's pinned memory has none of its
 * own), the managed one for managed memory at any preferred location CUDA accepts. */
static CUresult location_slot(const CUmemLocation *loc, CUmemAllocationType type,
                              CUresult bad_device, int *slot) {
  int pinned = type == CU_MEM_ALLOCATION_TYPE_PINNED;
  int managed = type == CU_MEM_ALLOCATION_TYPE_MANAGED;
  int host = loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  if (loc->type == CU_MEM_LOCATION_TYPE_DEVICE && (pinned || managed) && device_check(loc->id)) {
    nvcu_log("memory pool location: %d is not a device ordinal", loc->id);
    return bad_device;
  }
  if (pinned && (loc->type == CU_MEM_LOCATION_TYPE_DEVICE || host)) {
    *slot = host ? HOST_SLOT : loc->id;
    return CUDA_SUCCESS;
  }
  if (managed && (host || loc->type == CU_MEM_LOCATION_TYPE_DEVICE ||
                  loc->type == CU_MEM_LOCATION_TYPE_NONE)) {
    *slot = MANAGED_SLOT;
    return CUDA_SUCCESS;
  }
  nvcu_log("memory pool location type %d with allocation type %d: not a pool CUDA has",
           (int)loc->type, (int)type);
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                CUmemAllocationType type) {
  if (!pool_out || !location) return CUDA_ERROR_INVALID_VALUE;
  int slot = 0;
  NVCU_LOCK();
  CUresult r = location_slot(location, type, CUDA_ERROR_INVALID_DEVICE, &slot);
  if (!r) *pool_out = default_pool(slot);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type) {
  if (!pool || !location) return CUDA_ERROR_INVALID_VALUE;
  int slot = 0;
  NVCU_LOCK();
  CUresult r = location_slot(location, type, CUDA_ERROR_INVALID_VALUE, &slot);
  if (!r) *pool = current_pool(slot);
  NVCU_UNLOCK();
  return r;
}

/* For pinned device memory, cuDeviceSetMemPool of the location's device; for the host's and the
 * managed pool, a pool of that kind. */
CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool) {
  if (!location) return CUDA_ERROR_INVALID_VALUE;
  int slot = 0;
  NVCU_LOCK();
  CUresult r = location_slot(location, type, CUDA_ERROR_INVALID_VALUE, &slot);
  if (!r && slot >= HOST_SLOT) {
    r = pool_check(pool);
    int managed = !r && pool->props.allocType == CU_MEM_ALLOCATION_TYPE_MANAGED;
    if (!r && (pool->device >= 0 || managed != (slot == MANAGED_SLOT)))
      r = CUDA_ERROR_INVALID_VALUE;
    if (!r) current_pools[slot] = pool;
  }
  NVCU_UNLOCK();
  if (r || slot >= HOST_SLOT) return r;
  r = cuDeviceSetMemPool(slot, pool);
  if (r) nvcu_log("cuMemSetMemPool: not a live pool of device %d", slot);
  return r;
}

/* ---- access from other devices ---- */

/* A descriptor cuMemPoolSetAccess can apply: a device's access, read-write for the pool's own
 * device (it always has it), any flags for another. */
static CUresult access_check(CUmemoryPool pool, const CUmemAccessDesc *a) {
  if (a->location.type != CU_MEM_LOCATION_TYPE_DEVICE || device_check(a->location.id)) {
    nvcu_log("cuMemPoolSetAccess: location type %d, id %d is not a device", (int)a->location.type,
             a->location.id);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (a->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && a->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
      a->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    nvcu_log("cuMemPoolSetAccess: flags %d are not CU_MEM_ACCESS_FLAGS_PROT_*", (int)a->flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!serves_any_device(pool) && a->location.id == pool->device &&
      a->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    nvcu_log("cuMemPoolSetAccess: device %d owns the pool and keeps read-write access",
             pool->device);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* Another device's access is nvhcq's peer mapping of all of the pool device's memory (more than
 * the pool's, read-write even where READ is asked); nvhcq cannot unmap it, so PROT_NONE after
 * access leaves the memory mapped and only records that the program gave access up. */
static CUresult access_apply(CUmemoryPool pool, const CUmemAccessDesc *a) {
  int dev = a->location.id;
  CUresult r = CUDA_SUCCESS;
  if (dev == pool->device) return r;
  if (serves_any_device(pool)) { /* pinned host memory: every device reaches it already */
    pool->access[dev] = a->flags;
    return r;
  }
  if (a->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) r = nvcu_peer_map(dev, pool->device);
  if (r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) pool->access[dev] = a->flags;
  return r;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
  if (!map && count) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = pool_check(pool);
  for (size_t i = 0; i < count && !r; i++) r = access_check(pool, &map[i]);
  for (size_t i = 0; i < count && !r; i++) r = access_apply(pool, &map[i]);
  NVCU_UNLOCK();
  return r;
}

/* The host has no access to a device pool's memory in CUDA's terms. */
CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                            CUmemLocation *location) {
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = pool_check(memPool);
  int host = location->type == CU_MEM_LOCATION_TYPE_HOST ||
             location->type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  if (!r && host) {
    *flags = serves_any_device(memPool) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                        : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  } else if (!r && location->type == CU_MEM_LOCATION_TYPE_DEVICE && !device_check(location->id)) {
    *flags = location->id == memPool->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                             : memPool->access[location->id];
  } else if (!r) {
    nvcu_log("cuMemPoolGetAccess: location type %d, id %d is neither a device nor the host",
             (int)location->type, location->id);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_UNLOCK();
  return r;
}

/* Device pools, host pools (pinned host memory) and managed pools (CUDA 13; managed memory is
 * pinned host memory here, so the preferred location only has to be one CUDA accepts). */
static CUresult props_check(const CUmemPoolProps *p) {
  CUmemLocationType t = p->location.type;
  int host = t == CU_MEM_LOCATION_TYPE_HOST || t == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
             t == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  if (p->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    if (!host && t != CU_MEM_LOCATION_TYPE_NONE && t != CU_MEM_LOCATION_TYPE_DEVICE)
      return CUDA_ERROR_INVALID_VALUE;
  } else if (p->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
             (!host && t != CU_MEM_LOCATION_TYPE_DEVICE)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (t == CU_MEM_LOCATION_TYPE_DEVICE && device_check(p->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  if (p->handleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return nvcu_unsupported("memory pools with shareable handles other than POSIX file "
                            "descriptors");
  if (p->handleTypes && t != CU_MEM_LOCATION_TYPE_DEVICE)
    return nvcu_unsupported("host or managed memory pools with shareable handles");
  if (p->usage) return nvcu_unsupported("memory pool usage flags");
  return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  if (!r) r = props_check(poolProps);
  CUmemoryPool p = r ? NULL : calloc(1, sizeof *p);
  if (!r && !p) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    *p = (struct CUmemPoolHandle_st){
        .magic = NVCU_POOL_MAGIC,
        .device = poolProps->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                          poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                      ? poolProps->location.id
                      : -1,
        .props = *poolProps,
        .reuse = {1, 1, 1}};
    *pool = p;
  }
  NVCU_UNLOCK();
  return r;
}

/* Allocations still out keep the pool until their frees, as CUDA does. */
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  NVCU_LOCK();
  CUresult r = pool_check(pool);
  if (!r && pool->is_default) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) {
    for (int i = 0; i < SLOTS; i++)
      if (current_pools[i] == pool) current_pools[i] = NULL;
    pool->destroyed = 1;
    if (pool->live == 0) pool_free_struct(pool);
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  (void)minBytesToKeep;
  NVCU_LOCK();
  CUresult r = pool_check(pool);
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = pool_check(pool);
  int sized64 = attr >= CU_MEMPOOL_ATTR_RELEASE_THRESHOLD && attr <= CU_MEMPOOL_ATTR_USED_MEM_HIGH;
  uint64_t v64 = r || !sized64 ? 0 : *(uint64_t *)value;
  switch (r ? -1 : (int)attr) {
  case -1:
    break;
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    pool->reuse[attr - 1] = *(int *)value != 0;
    break;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    pool->release_threshold = v64;
    break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only a reset, to the current value */
    if (v64) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) pool->reserved_high = reserved_now(pool);
    break;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    if (v64) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) pool->used_high = pool->used;
    break;
  default:
    r = CUDA_ERROR_INVALID_VALUE;
    break;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = pool_check(pool);
  uint64_t *v64 = value;
  switch (r ? -1 : (int)attr) {
  case -1:
    break;
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    *(int *)value = pool->reuse[attr - 1];
    break;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    *v64 = pool->release_threshold;
    break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    *v64 = reserved_now(pool);
    break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    *v64 = pool->reserved_high;
    break;
  case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    *v64 = pool->used;
    break;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    *v64 = pool->used_high;
    break;
  default:
    r = CUDA_ERROR_INVALID_VALUE;
    break;
  }
  NVCU_UNLOCK();
  return r;
}

#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));
NVCU_ALIAS(cuMemAllocAsync_ptsz, cuMemAllocAsync)
NVCU_ALIAS(cuMemFreeAsync_ptsz, cuMemFreeAsync)
NVCU_ALIAS(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync)

/* ---- sharing pools between processes (POSIX file descriptors) ---- */

#define POOL_TOKEN_MAGIC 0x4c50564eu /* "NVPL" */

/* What a pool's descriptor holds (a memory file): enough to refuse another GPU's pool. The
 * allocations themselves travel as IPC handles (cuMemPoolExportPointer). */
typedef struct pool_token {
  uint32_t magic, pid;
  uint64_t pool;
  uint8_t uuid[16];
} pool_token;

CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags) {
  if (!handle_out || flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult kind = nvcu_handle_type_check(handleType);
  if (kind) return kind;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = pool_check(pool);
  if (!r &&
      (pool->imported || !(pool->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))) {
    nvcu_log("cuMemPoolExportToShareableHandle: the pool was made without "
             "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in handleTypes (or is imported)");
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) r = nvcu_device_get(pool->device, &d);
  int fd = r ? -1 : memfd_create("nvhcq-pool", MFD_CLOEXEC);
  if (!r && fd < 0) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    pool_token t = {POOL_TOKEN_MAGIC, (uint32_t)getpid(), (uint64_t)(uintptr_t)pool, {0}};
    memcpy(t.uuid, d->info.uuid, sizeof t.uuid);
    if (pwrite(fd, &t, sizeof t, 0) != (ssize_t)sizeof t) r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!r) *(int *)handle_out = fd;
  if (r && fd >= 0) close(fd);
  NVCU_UNLOCK();
  return r;
}

/* The device of this process whose GPU has `uuid`, or -1. */
static int device_of_uuid(const uint8_t uuid[16]) {
  int count = 0;
  if (cuDeviceGetCount(&count)) return -1;
  for (int i = 0; i < count && i < NVCU_MAX_DEVICES; i++) {
    nvcu_device *d;
    if (!nvcu_device_get(i, &d) && !memcmp(d->info.uuid, uuid, 16)) return i;
  }
  return -1;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                            CUmemAllocationHandleType handleType,
                                            unsigned long long flags) {
  if (!pool_out || flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult kind = nvcu_handle_type_check(handleType);
  if (kind) return kind;
  pool_token t;
  int fd = (int)(intptr_t)handle;
  if (fd < 0 || pread(fd, &t, sizeof t, 0) != (ssize_t)sizeof t || t.magic != POOL_TOKEN_MAGIC) {
    nvcu_log("cuMemPoolImportFromShareableHandle: descriptor %d is not one "
             "cuMemPoolExportToShareableHandle of nvhcq's library gave",
             fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  int dev = r ? -1 : device_of_uuid(t.uuid);
  if (!r && dev < 0) r = CUDA_ERROR_INVALID_DEVICE;
  CUmemoryPool p = r ? NULL : calloc(1, sizeof *p);
  if (!r && !p) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    *p = (struct CUmemPoolHandle_st){
        .magic = NVCU_POOL_MAGIC,
        .device = dev,
        .imported = 1,
        .props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                  .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                  .location = {CU_MEM_LOCATION_TYPE_DEVICE, dev}},
        .reuse = {1, 1, 1}};
    *pool_out = p;
  }
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr) {
  if (!shareData_out) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find(ptr);
  CUresult r = CUDA_SUCCESS;
  if (!a || !a->pool || a->pool->imported || a->base != ptr ||
      !(a->pool->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
    nvcu_log("cuMemPoolExportPointer: 0x%llx is not the start of an allocation from a pool made "
             "with a shareable handle type",
             (unsigned long long)ptr);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) r = nvcu_ipc_export(a, shareData_out->reserved, "cuMemPoolExportPointer");
  NVCU_UNLOCK();
  return r;
}

CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                CUmemPoolPtrExportData *shareData) {
  if (!ptr_out || !shareData) return CUDA_ERROR_INVALID_VALUE;
  nvhcq_ipc_handle h;
  memcpy(h.bytes, shareData->reserved, sizeof h.bytes);
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = pool_check(pool);
  if (!r && !pool->imported) r = CUDA_ERROR_INVALID_VALUE;
  if (!r) r = nvcu_device_get(pool->device, &d);
  if (!r) r = nvcu_ipc_open(d, pool->device, &h, pool, ptr_out);
  if (!r) {
    nvcu_alloc *a = nvcu_alloc_find(*ptr_out);
    pool->used += a->size;
    pool->live++;
  }
  NVCU_UNLOCK();
  return r;
}
