/* Memory shared between processes through 64-byte handles (cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle): nvhcq's IPC handles, opened by mapping the exporter's
 * allocation into a range of this process's GPU addresses. Event handles are not implemented. */
#include <string.h>

#include "internal.h"

int nvcu_ipc_capable(const nvcu_alloc *a) {
  return !a->host && !a->vmm && !a->pool && !a->graph_mem && !a->ipc_range && !a->registered;
}

CUresult nvcu_ipc_export(const nvcu_alloc *a, void *out, const char *what) {
  nvhcq_ipc_handle h;
  CUresult r = nvcu_status(nvhcq_buffer_export_ipc(a->buf, &h), what);
  if (!r) memcpy(out, h.bytes, sizeof h.bytes);
  return r;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_alloc *a = r ? NULL : nvcu_alloc_find(dptr);
  if (!r && (!a || !nvcu_ipc_capable(a))) {
    nvcu_log("cuIpcGetMemHandle: 0x%llx is not in device memory from cuMemAlloc (pool, managed, "
             "host, virtual-memory and opened IPC memory are not shared this way)",
             (unsigned long long)dptr);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) r = nvcu_ipc_export(a, pHandle->reserved, "cuIpcGetMemHandle");
  NVCU_UNLOCK();
  return r;
}

/* Maps all of the imported allocation at addresses of its own; the exported bytes start at
 * `offset` in it. */
CUresult nvcu_ipc_open(nvcu_device *d, int index, const nvhcq_ipc_handle *h,
                       struct CUmemPoolHandle_st *pool, CUdeviceptr *out) {
  nvhcq_physical *p = NULL;
  nvhcq_reservation *range = NULL;
  nvhcq_buffer *b = NULL;
  uint64_t offset = 0, size = 0;
  nvhcq_status s = nvhcq_physical_import_ipc(d->dev, h, &p, &offset, &size);
  uint64_t whole = s ? 0 : nvhcq_physical_size(p);
  if (!s) s = nvhcq_reservation_create(whole, 0, 0, &range);
  if (!s)
    s = nvhcq_buffer_map_physical(range, nvhcq_reservation_gpu_address(range), p, 0, whole, &b);
  nvhcq_physical_destroy(p); /* the mapping holds the memory */
  CUresult r = nvcu_status(s, "cuIpcOpenMemHandle");
  nvcu_alloc a = {.base = nvhcq_buffer_gpu_address(b) + offset,
                  .size = size,
                  .buf = b,
                  .buf_offset = offset,
                  .device = index,
                  .ipc_range = range,
                  .pool = pool};
  if (!r) r = nvcu_alloc_add(&a);
  if (r) {
    nvhcq_buffer_destroy(b);
    if (range) nvhcq_reservation_destroy(range); /* waits for the unmapping, if any */
    return r;
  }
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return CUDA_ERROR_INVALID_VALUE;
  nvhcq_ipc_handle h;
  memcpy(h.bytes, handle.reserved, sizeof h.bytes);
  NVCU_LOCK();
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  if (!r) r = nvcu_ipc_open(d, index, &h, NULL, pdptr);
  NVCU_UNLOCK();
  return r;
}

/* Unmaps what cuIpcOpenMemHandle mapped, once the GPU has passed the work before. */
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find(dptr);
  int opened = a && a->ipc_range && !a->pool && a->base == dptr;
  CUresult r = opened ? nvcu_alloc_release(a) : CUDA_ERROR_INVALID_VALUE;
  NVCU_UNLOCK();
  return r;
}
