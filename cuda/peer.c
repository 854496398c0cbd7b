/* What reaches across GPUs: peer access between contexts, the attributes of the link between two
 * devices, and GPUDirect RDMA flushes. */
#include "internal.h"

/* Whether device a's kernels and copies can reach device b's memory: nvhcq asks the driver for a
 * P2P path that carries reads and writes (NVLink or PCIe). A device and itself: 0, as in CUDA.
 * Under the lock. */
static CUresult can_access(int a, int b, int *can) {
  nvcu_device *da, *db;
  *can = 0;
  CUresult r = nvcu_device_get(a, &da);
  if (!r) r = nvcu_device_get(b, &db);
  if (r || a == b) return r;
  return nvcu_status(nvhcq_device_can_access_peer(da->dev, db->dev, can), "asking for a P2P path");
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = can_access(dev, peerDev, canAccessPeer);
  NVCU_UNLOCK();
  return r;
}

/* The current context and a valid other context, or CUDA_ERROR_INVALID_CONTEXT. */
static CUresult peer_pair(CUcontext peer, CUcontext *cur, const char *what) {
  CUresult r = cuCtxGetCurrent(cur);
  if (r) return r;
  if (!*cur || !peer || peer->magic != NVCU_CTX_MAGIC || peer == *cur) {
    nvcu_log("%s: %s", what,
             !*cur          ? "no context is current"
             : peer == *cur ? "the peer context is the current context"
                            : "the peer context is not a context");
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

CUresult nvcu_peer_map(int dev, int owner) {
  int can = 0;
  CUresult r = can_access(dev, owner, &can);
  if (r) return r;
  if (!can) {
    nvcu_log("device %d cannot reach device %d's memory (no P2P path; cuDeviceCanAccessPeer says "
             "0)",
             dev, owner);
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  nvcu_device *a, *b;
  nvcu_device_get(dev, &a);
  nvcu_device_get(owner, &b);
  nvhcq_status s = nvhcq_device_enable_peer(a->dev, b->dev);
  r = nvcu_status(s, "mapping a peer device's memory");
  return s == NVHCQ_ERROR_UNSUPPORTED ? CUDA_ERROR_PEER_ACCESS_UNSUPPORTED : r; /* NVHCQ_UVM=off */
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (Flags) {
    nvcu_log("cuCtxEnablePeerAccess: flags 0x%x, must be 0", Flags);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  CUcontext cur;
  CUresult r = peer_pair(peerContext, &cur, "cuCtxEnablePeerAccess");
  if (!r && cur->peers >> peerContext->device & 1) {
    nvcu_log("cuCtxEnablePeerAccess: access to device %d's context is already enabled",
             peerContext->device);
    r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  if (!r) r = nvcu_peer_map(cur->device, peerContext->device);
  if (!r) cur->peers |= 1u << peerContext->device;
  NVCU_UNLOCK();
  return r;
}

/* nvhcq has no call that unmaps a peer: the peer's buffers stay mapped into this device's address
 * space until either device closes, and kernels that still use them keep working. What changes is
 * the state CUDA's codes follow: access counts as disabled, so a second disable is
 * CUDA_ERROR_PEER_ACCESS_NOT_ENABLED and a later enable succeeds (finding the mappings there). */
CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  NVCU_LOCK();
  CUcontext cur;
  CUresult r = peer_pair(peerContext, &cur, "cuCtxDisablePeerAccess");
  if (!r && !(cur->peers >> peerContext->device & 1)) {
    nvcu_log("cuCtxDisablePeerAccess: access to device %d's context was not enabled",
             peerContext->device);
    r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }
  if (!r) cur->peers &= ~(1u << peerContext->device);
  NVCU_UNLOCK();
  return r;
}

/* nvhcq's P2P check says only that reads and writes cross the link, not which link it is, so
 * what it cannot vouch for reads 0: native atomics (NVLink has them, PCIe does not) and CUDA
 * arrays (this library has none). One kind of link: every pair has rank 0. */
static CUresult link_value(CUdevice_P2PAttribute attrib, int can, int *value) {
  switch (attrib) {
  case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    *value = can;
    return CUDA_SUCCESS;
  case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
  case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
  case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
  case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
    *value = 0;
    return CUDA_SUCCESS;
  default:
    nvcu_log("cuDeviceGetP2PAttribute: %d is not a P2P attribute", (int)attrib);
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  int count = 0, can = 0;
  CUresult r = cuDeviceGetCount(&count);
  if (r) return r;
  if (srcDevice < 0 || srcDevice >= count || dstDevice < 0 || dstDevice >= count ||
      srcDevice == dstDevice) {
    nvcu_log("cuDeviceGetP2PAttribute: devices %d and %d are not two of the %d devices", srcDevice,
             dstDevice, count);
    return CUDA_ERROR_INVALID_DEVICE;
  }
  NVCU_LOCK();
  r = can_access(srcDevice, dstDevice, &can);
  NVCU_UNLOCK();
  return r ? r : link_value(attrib, can, value);
}

/* The flush makes writes that a third party (a NIC) made through GPUDirect RDMA mappings
 * (nvidia_p2p_get_pages) visible to the context's later work. nvhcq makes no memory available to
 * such mappings (no pointer is IS_GPU_DIRECT_RDMA_CAPABLE), so no such write can be outstanding:
 * with the arguments checked and a context current, every write the call orders is visible. */
CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                    CUflushGPUDirectRDMAWritesScope scope) {
  if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
      (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
       scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)) {
    nvcu_log("cuFlushGPUDirectRDMAWrites: target %d, scope %d (the target is the current context, "
             "0; the scope OWNER, 100, or ALL_DEVICES, 200)",
             (int)target, (int)scope);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  CUresult r = nvcu_current(NULL, NULL);
  NVCU_UNLOCK();
  if (r == CUDA_ERROR_INVALID_CONTEXT)
    nvcu_log("cuFlushGPUDirectRDMAWrites: no context is current");
  return r;
}
