/* The functions this library implements, as X-macro lists of {return type, exported name,
 * parameters}: cuda_api.h declares them, check_cuda_h.c compares them with the toolkit's cuda.h. */
#ifndef NVCU_FUNCTIONS_H
#define NVCU_FUNCTIONS_H

/* Every function implemented here: return type, exported name, parameter list. */
#define NVCU_FUNCTIONS(X)                                                                          \
  X(CUresult, cuMemGetAllocationGranularity,                                                       \
    (size_t * granularity, const CUmemAllocationProp *prop,                                        \
     CUmemAllocationGranularity_flags option))                                                     \
  X(CUresult, cuMemAddressReserve,                                                                 \
    (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,                           \
     unsigned long long flags))                                                                    \
  X(CUresult, cuMemAddressFree, (CUdeviceptr ptr, size_t size))                                    \
  X(CUresult, cuMemCreate,                                                                         \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,          \
     unsigned long long flags))                                                                    \
  X(CUresult, cuMemRelease, (CUmemGenericAllocationHandle handle))                                 \
  X(CUresult, cuMemMap,                                                                            \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,             \
     unsigned long long flags))                                                                    \
  X(CUresult, cuMemUnmap, (CUdeviceptr ptr, size_t size))                                          \
  X(CUresult, cuMemSetAccess,                                                                      \
    (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count))                     \
  X(CUresult, cuMemGetAccess,                                                                      \
    (unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr))                   \
  X(CUresult, cuMemGetAllocationPropertiesFromHandle,                                              \
    (CUmemAllocationProp * prop, CUmemGenericAllocationHandle handle))                             \
  X(CUresult, cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void *addr))    \
  X(CUresult, cuGraphAddMemAllocNode,                                                              \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams))                              \
  X(CUresult, cuGraphMemAllocNodeGetParams,                                                        \
    (CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS * params_out))                                  \
  X(CUresult, cuGraphAddMemFreeNode,                                                               \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUdeviceptr dptr))                                                    \
  X(CUresult, cuGraphMemFreeNodeGetParams, (CUgraphNode hNode, CUdeviceptr * dptr_out))            \
  X(CUresult, cuDeviceGraphMemTrim, (CUdevice device))                                             \
  X(CUresult, cuDeviceGetGraphMemAttribute,                                                        \
    (CUdevice device, CUgraphMem_attribute attr, void *value))                                     \
  X(CUresult, cuDeviceSetGraphMemAttribute,                                                        \
    (CUdevice device, CUgraphMem_attribute attr, void *value))                                     \
  X(CUresult, cuMemExportToShareableHandle,                                                        \
    (void *shareableHandle, CUmemGenericAllocationHandle handle,                                   \
     CUmemAllocationHandleType handleType, unsigned long long flags))                              \
  X(CUresult, cuMemImportFromShareableHandle,                                                      \
    (CUmemGenericAllocationHandle * handle, void *osHandle,                                        \
     CUmemAllocationHandleType shHandleType))                                                      \
  X(CUresult, cuInit, (unsigned int Flags))                                                        \
  X(CUresult, cuDriverGetVersion, (int *driverVersion))                                            \
  X(CUresult, cuGetErrorString, (CUresult error, const char **pStr))                               \
  X(CUresult, cuGetErrorName, (CUresult error, const char **pStr))                                 \
  X(CUresult, cuDeviceGet, (CUdevice * device, int ordinal))                                       \
  X(CUresult, cuDeviceGetCount, (int *count))                                                      \
  X(CUresult, cuDeviceGetName, (char *name, int len, CUdevice dev))                                \
  X(CUresult, cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev))                                      \
  X(CUresult, cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev))                                   \
  X(CUresult, cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                                 \
  X(CUresult, cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))            \
  X(CUresult, cuDeviceComputeCapability, (int *major, int *minor, CUdevice dev))                   \
  X(CUresult, cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev))                        \
  X(CUresult, cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev))         \
  X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))                          \
  X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                                        \
  X(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice dev))                                          \
  X(CUresult, cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active))        \
  X(CUresult, cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags))                   \
  X(CUresult, cuCtxDestroy_v2, (CUcontext ctx))                                                    \
  X(CUresult, cuCtxGetCurrent, (CUcontext * pctx))                                                 \
  X(CUresult, cuCtxSetCurrent, (CUcontext ctx))                                                    \
  X(CUresult, cuCtxPushCurrent_v2, (CUcontext ctx))                                                \
  X(CUresult, cuCtxPopCurrent_v2, (CUcontext * pctx))                                              \
  X(CUresult, cuCtxGetDevice, (CUdevice * device))                                                 \
  X(CUresult, cuCtxGetFlags, (unsigned int *flags))                                                \
  X(CUresult, cuCtxGetApiVersion, (CUcontext ctx, unsigned int *version))                          \
  X(CUresult, cuCtxSynchronize_v2, (CUcontext ctx))                                                \
  X(CUresult, cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx))                               \
  X(CUresult, cuStreamGetCtx_v2, (CUstream hStream, CUcontext * pCtx, CUgreenCtx * pGreenCtx))     \
  X(CUresult, cuStreamWaitValue32_v2,                                                              \
    (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags))                     \
  X(CUresult, cuStreamWaitValue64_v2,                                                              \
    (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags))                     \
  X(CUresult, cuStreamWriteValue32_v2,                                                             \
    (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags))                     \
  X(CUresult, cuStreamWriteValue64_v2,                                                             \
    (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags))                     \
  X(CUresult, cuStreamBatchMemOp_v2,                                                               \
    (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,                    \
     unsigned int flags))                                                                          \
  X(CUresult, cuLaunchCooperativeKernel,                                                           \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,            \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                       \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))                          \
  X(CUresult, cuCtxGetId, (CUcontext ctx, unsigned long long *ctxId))                              \
  X(CUresult, cuStreamGetId, (CUstream hStream, unsigned long long *streamId))                     \
  X(CUresult, cuStreamGetAttribute,                                                                \
    (CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue * value_out))                        \
  X(CUresult, cuStreamSetAttribute,                                                                \
    (CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue *value))                       \
  X(CUresult, cuCtxResetPersistingL2Cache, (void))                                                 \
  X(CUresult, cuCtxGetSharedMemConfig, (CUsharedconfig * pConfig))                                 \
  X(CUresult, cuCtxSetSharedMemConfig, (CUsharedconfig config))                                    \
  X(CUresult, cuFuncSetSharedMemConfig, (CUfunction hfunc, CUsharedconfig config))                 \
  X(CUresult, cuDeviceGetByPCIBusId, (CUdevice * dev, const char *pciBusId))                       \
  X(CUresult, cuDeviceGetProperties, (CUdevprop * prop, CUdevice dev))                             \
  X(CUresult, cuStreamGetCaptureInfo_v3,                                                           \
    (CUstream hStream, CUstreamCaptureStatus * captureStatus_out, cuuint64_t * id_out,             \
     CUgraph * graph_out, const CUgraphNode **dependencies_out,                                    \
     const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out))                           \
  X(CUresult, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode))                     \
  X(CUresult, cuCtxSynchronize, (void))                                                            \
  X(CUresult, cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags))                  \
  X(CUresult, cuCtxGetLimit, (size_t * pvalue, CUlimit limit))                                     \
  X(CUresult, cuCtxSetLimit, (CUlimit limit, size_t value))                                        \
  X(CUresult, cuCtxGetCacheConfig, (CUfunc_cache * pconfig))                                       \
  X(CUresult, cuCtxSetCacheConfig, (CUfunc_cache config))                                          \
  X(CUresult, cuMemGetInfo_v2, (size_t * free, size_t * total))                                    \
  X(CUresult, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))                                \
  X(CUresult, cuMemFree_v2, (CUdeviceptr dptr))                                                    \
  X(CUresult, cuMemAllocHost_v2, (void **pp, size_t bytesize))                                     \
  X(CUresult, cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags))                    \
  X(CUresult, cuMemFreeHost, (void *p))                                                            \
  X(CUresult, cuMemHostGetDevicePointer_v2, (CUdeviceptr * pdptr, void *p, unsigned int Flags))    \
  X(CUresult, cuMemHostGetFlags, (unsigned int *pFlags, void *p))                                  \
  X(CUresult, cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t * psize, CUdeviceptr dptr))    \
  X(CUresult, cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount))                      \
  X(CUresult, cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream s))     \
  X(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))     \
  X(CUresult, cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))           \
  X(CUresult, cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount))   \
  X(CUresult, cuMemcpyHtoDAsync_v2,                                                                \
    (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))              \
  X(CUresult, cuMemcpyDtoHAsync_v2,                                                                \
    (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))                    \
  X(CUresult, cuMemcpyDtoDAsync_v2,                                                                \
    (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))            \
  X(CUresult, cuMemAllocPitch_v2,                                                                  \
    (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                      \
     unsigned int ElementSizeBytes))                                                               \
  X(CUresult, cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy))                                         \
  X(CUresult, cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy))                                \
  X(CUresult, cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream))                  \
  X(CUresult, cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N))                  \
  X(CUresult, cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N))                \
  X(CUresult, cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N))                  \
  X(CUresult, cuMemsetD8Async,                                                                     \
    (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))                         \
  X(CUresult, cuMemsetD16Async,                                                                    \
    (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream))                        \
  X(CUresult, cuMemsetD32Async,                                                                    \
    (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream))                          \
  X(CUresult, cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr)) \
  X(CUresult, cuPointerGetAttributes,                                                              \
    (unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr))   \
  X(CUresult, cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags))                \
  X(CUresult, cuMemHostUnregister, (void *p))                                                      \
  X(CUresult, cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags))        \
  X(CUresult, cuMemPrefetchBatchAsync,                                                             \
    (CUdeviceptr * dptrs, size_t * sizes, size_t count, CUmemLocation * prefetchLocs,              \
     size_t * prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,                   \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemDiscardBatchAsync,                                                              \
    (CUdeviceptr * dptrs, size_t * sizes, size_t count, unsigned long long flags,                  \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemDiscardAndPrefetchBatchAsync,                                                   \
    (CUdeviceptr * dptrs, size_t * sizes, size_t count, CUmemLocation * prefetchLocs,              \
     size_t * prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,                   \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemPrefetchAsync_v2,                                                               \
    (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,                 \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemAdvise_v2,                                                                      \
    (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location))               \
  X(CUresult, cuMemRangeGetAttribute,                                                              \
    (void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr,             \
     size_t count))                                                                                \
  X(CUresult, cuMemRangeGetAttributes,                                                             \
    (void **data, size_t *dataSizes, CUmem_range_attribute *attributes, size_t numAttributes,      \
     CUdeviceptr devPtr, size_t count))                                                            \
  X(CUresult, cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream))            \
  X(CUresult, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))                                \
  X(CUresult, cuMemAllocFromPoolAsync,                                                             \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream))                    \
  X(CUresult, cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev))                  \
  X(CUresult, cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev))                             \
  X(CUresult, cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool))                               \
  X(CUresult, cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps))             \
  X(CUresult, cuMemPoolDestroy, (CUmemoryPool pool))                                               \
  X(CUresult, cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))   \
  X(CUresult, cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value))   \
  X(CUresult, cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep))                         \
  X(CUresult, cuMemsetD2D8_v2,                                                                     \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height))       \
  X(CUresult, cuMemsetD2D16_v2,                                                                    \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height))      \
  X(CUresult, cuMemsetD2D32_v2,                                                                    \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height))        \
  X(CUresult, cuMemsetD2D8Async,                                                                   \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,        \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemsetD2D16Async,                                                                  \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height,       \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemsetD2D32Async,                                                                  \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,         \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy))                                         \
  X(CUresult, cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream))                  \
  X(CUresult, cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy))                                   \
  X(CUresult, cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream))            \
  X(CUresult, cuMemcpyBatchAsync_v2,                                                               \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                         \
     CUmemcpyAttributes * attrs, size_t * attrsIdxs, size_t numAttrs, CUstream hStream))           \
  X(CUresult, cuMemcpy3DBatchAsync_v2,                                                             \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * opList, unsigned long long flags, CUstream hStream))  \
  X(CUresult, cuMemPoolExportToShareableHandle,                                                    \
    (void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType,                    \
     unsigned long long flags))                                                                    \
  X(CUresult, cuMemPoolImportFromShareableHandle,                                                  \
    (CUmemoryPool * pool_out, void *handle, CUmemAllocationHandleType handleType,                  \
     unsigned long long flags))                                                                    \
  X(CUresult, cuMemPoolExportPointer, (CUmemPoolPtrExportData * shareData_out, CUdeviceptr ptr))   \
  X(CUresult, cuMemPoolImportPointer,                                                              \
    (CUdeviceptr * ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData * shareData))                \
  X(CUresult, cuIpcGetMemHandle, (CUipcMemHandle * pHandle, CUdeviceptr dptr))                     \
  X(CUresult, cuIpcGetEventHandle, (CUipcEventHandle * pHandle, CUevent event))                    \
  X(CUresult, cuIpcOpenEventHandle, (CUevent * phEvent, CUipcEventHandle handle))                  \
  X(CUresult, cuIpcOpenMemHandle_v2,                                                               \
    (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags))                              \
  X(CUresult, cuIpcCloseMemHandle, (CUdeviceptr dptr))                                             \
  X(CUresult, cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray))  \
  X(CUresult, cuArray3DCreate_v2,                                                                  \
    (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray))                            \
  X(CUresult, cuArrayGetDescriptor_v2, (CUDA_ARRAY_DESCRIPTOR * pArrayDescriptor, CUarray hArray)) \
  X(CUresult, cuArray3DGetDescriptor_v2,                                                           \
    (CUDA_ARRAY3D_DESCRIPTOR * pArrayDescriptor, CUarray hArray))                                  \
  X(CUresult, cuMipmappedArrayCreate,                                                              \
    (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,               \
     unsigned int numMipmapLevels))                                                                \
  X(CUresult, cuMipmappedArrayGetLevel,                                                            \
    (CUarray * pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level))                 \
  X(CUresult, cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray))                         \
  X(CUresult, cuArrayDestroy, (CUarray hArray))                                                    \
  X(CUresult, cuMemcpyHtoA_v2,                                                                     \
    (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount))                   \
  X(CUresult, cuMemcpyAtoH_v2,                                                                     \
    (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount))                         \
  X(CUresult, cuMemcpyDtoA_v2,                                                                     \
    (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount))                 \
  X(CUresult, cuMemcpyAtoD_v2,                                                                     \
    (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount))                 \
  X(CUresult, cuMemcpyAtoA_v2,                                                                     \
    (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount))    \
  X(CUresult, cuMemcpyHtoAAsync_v2,                                                                \
    (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream)) \
  X(CUresult, cuMemcpyAtoHAsync_v2,                                                                \
    (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream))       \
  X(CUresult, cuTexObjectCreate,                                                                   \
    (CUtexObject * pTexObject, const CUDA_RESOURCE_DESC *pResDesc,                                 \
     const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc))              \
  X(CUresult, cuTexObjectDestroy, (CUtexObject texObject))                                         \
  X(CUresult, cuTexObjectGetResourceDesc, (CUDA_RESOURCE_DESC * pResDesc, CUtexObject texObject))  \
  X(CUresult, cuTexObjectGetTextureDesc, (CUDA_TEXTURE_DESC * pTexDesc, CUtexObject texObject))    \
  X(CUresult, cuTexObjectGetResourceViewDesc,                                                      \
    (CUDA_RESOURCE_VIEW_DESC * pResViewDesc, CUtexObject texObject))                               \
  X(CUresult, cuSurfObjectCreate,                                                                  \
    (CUsurfObject * pSurfObject, const CUDA_RESOURCE_DESC *pResDesc))                              \
  X(CUresult, cuSurfObjectDestroy, (CUsurfObject surfObject))                                      \
  X(CUresult, cuSurfObjectGetResourceDesc,                                                         \
    (CUDA_RESOURCE_DESC * pResDesc, CUsurfObject surfObject))                                      \
  X(CUresult, cuMemcpyPeer,                                                                        \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,     \
     size_t ByteCount))                                                                            \
  X(CUresult, cuMemcpyPeerAsync,                                                                   \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,     \
     size_t ByteCount, CUstream hStream))                                                          \
  X(CUresult, cuModuleLoadData, (CUmodule * module, const void *image))                            \
  X(CUresult, cuModuleLoadDataEx,                                                                  \
    (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,         \
     void **optionValues))                                                                         \
  X(CUresult, cuModuleLoadFatBinary, (CUmodule * module, const void *fatCubin))                    \
  X(CUresult, cuModuleLoad, (CUmodule * module, const char *fname))                                \
  X(CUresult, cuModuleUnload, (CUmodule hmod))                                                     \
  X(CUresult, cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name))          \
  X(CUresult, cuModuleGetGlobal_v2,                                                                \
    (CUdeviceptr * dptr, size_t * bytes, CUmodule hmod, const char *name))                         \
  X(CUresult, cuLibraryLoadData,                                                                   \
    (CUlibrary * library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,     \
     unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,      \
     unsigned int numLibraryOptions))                                                              \
  X(CUresult, cuLibraryUnload, (CUlibrary library))                                                \
  X(CUresult, cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name))       \
  X(CUresult, cuLibraryGetModule, (CUmodule * pMod, CUlibrary library))                            \
  X(CUresult, cuLibraryGetGlobal,                                                                  \
    (CUdeviceptr * dptr, size_t * bytes, CUlibrary library, const char *name))                     \
  X(CUresult, cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel))                          \
  X(CUresult, cuKernelGetAttribute,                                                                \
    (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev))                         \
  X(CUresult, cuKernelSetAttribute,                                                                \
    (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev))                         \
  X(CUresult, cuKernelGetName, (const char **name, CUkernel hfunc))                                \
  X(CUresult, cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc))        \
  X(CUresult, cuFuncSetAttribute, (CUfunction hfunc, CUfunction_attribute attrib, int value))      \
  X(CUresult, cuFuncSetCacheConfig, (CUfunction hfunc, CUfunc_cache config))                       \
  X(CUresult, cuFuncGetName, (const char **name, CUfunction hfunc))                                \
  X(CUresult, cuKernelGetParamInfo,                                                                \
    (CUkernel kernel, size_t paramIndex, size_t * paramOffset, size_t * paramSize))                \
  X(CUresult, cuOccupancyMaxPotentialBlockSizeWithFlags,                                           \
    (int *minGridSize, int *blockSize, CUfunction func,                                            \
     CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,    \
     unsigned int flags))                                                                          \
  X(CUresult, cuPointerSetAttribute,                                                               \
    (const void *value, CUpointer_attribute attribute, CUdeviceptr ptr))                           \
  X(CUresult, cuStreamGetDevice, (CUstream hStream, CUdevice * device))                            \
  X(CUresult, cuStreamCopyAttributes, (CUstream dst, CUstream src))                                \
  X(CUresult, cuCtxSetFlags, (unsigned int flags))                                                 \
  X(CUresult, cuCtxRecordEvent, (CUcontext hCtx, CUevent hEvent))                                  \
  X(CUresult, cuCtxWaitEvent, (CUcontext hCtx, CUevent hEvent))                                    \
  X(CUresult, cuFuncGetParamInfo,                                                                  \
    (CUfunction func, size_t paramIndex, size_t * paramOffset, size_t * paramSize))                \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor,                                         \
    (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize))                      \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                                \
    (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags))  \
  X(CUresult, cuOccupancyMaxPotentialBlockSize,                                                    \
    (int *minGridSize, int *blockSize, CUfunction func,                                            \
     CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit))   \
  X(CUresult, cuOccupancyAvailableDynamicSMemPerBlock,                                             \
    (size_t * dynamicSmemSize, CUfunction func, int numBlocks, int blockSize))                     \
  X(CUresult, cuOccupancyMaxActiveClusters,                                                        \
    (int *numClusters, CUfunction func, const CUlaunchConfig *config))                             \
  X(CUresult, cuTensorMapEncodeTiled,                                                              \
    (CUtensorMap * tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,           \
     void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,            \
     const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, \
     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,                               \
     CUtensorMapFloatOOBfill oobFill))                                                             \
  X(CUresult, cuTensorMapEncodeIm2col,                                                             \
    (CUtensorMap * tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,           \
     void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,            \
     const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,  \
     cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,                                 \
     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,                                 \
     CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill))                         \
  X(CUresult, cuCtxDisablePeerAccess, (CUcontext peerContext))                                     \
  X(CUresult, cuDeviceGetP2PAttribute,                                                             \
    (int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice))            \
  X(CUresult, cuFlushGPUDirectRDMAWrites,                                                          \
    (CUflushGPUDirectRDMAWritesTarget target, CUflushGPUDirectRDMAWritesScope scope))              \
  X(CUresult, cuDeviceGetTexture1DLinearMaxWidth,                                                  \
    (size_t * maxWidthInElements, CUarray_format format, unsigned numChannels, CUdevice dev))      \
  X(CUresult, cuKernelSetCacheConfig, (CUkernel kernel, CUfunc_cache config, CUdevice dev))        \
  X(CUresult, cuOccupancyMaxPotentialClusterSize,                                                  \
    (int *clusterSize, CUfunction func, const CUlaunchConfig *config))                             \
  X(CUresult, cuStreamAttachMemAsync,                                                              \
    (CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags))                       \
  X(CUresult, cuTensorMapReplaceAddress, (CUtensorMap * tensorMap, void *globalAddress))           \
  X(CUresult, cuMemPoolGetAccess,                                                                  \
    (CUmemAccess_flags * flags, CUmemoryPool memPool, CUmemLocation * location))                   \
  X(CUresult, cuMemPoolSetAccess, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count))   \
  X(CUresult, cuMemGetDefaultMemPool,                                                              \
    (CUmemoryPool * pool_out, CUmemLocation * location, CUmemAllocationType type))                 \
  X(CUresult, cuMemGetMemPool,                                                                     \
    (CUmemoryPool * pool, CUmemLocation * location, CUmemAllocationType type))                     \
  X(CUresult, cuMemSetMemPool,                                                                     \
    (CUmemLocation * location, CUmemAllocationType type, CUmemoryPool pool))                       \
  X(CUresult, cuFuncSetBlockShape, (CUfunction hfunc, int x, int y, int z))                        \
  X(CUresult, cuFuncSetSharedSize, (CUfunction hfunc, unsigned int bytes))                         \
  X(CUresult, cuParamSetSize, (CUfunction hfunc, unsigned int numbytes))                           \
  X(CUresult, cuParamSeti, (CUfunction hfunc, int offset, unsigned int value))                     \
  X(CUresult, cuParamSetf, (CUfunction hfunc, int offset, float value))                            \
  X(CUresult, cuParamSetv, (CUfunction hfunc, int offset, void *ptr, unsigned int numbytes))       \
  X(CUresult, cuLaunch, (CUfunction f))                                                            \
  X(CUresult, cuLaunchGrid, (CUfunction f, int grid_width, int grid_height))                       \
  X(CUresult, cuLaunchGridAsync,                                                                   \
    (CUfunction f, int grid_width, int grid_height, CUstream hStream))                             \
  X(CUresult, cuLaunchKernel,                                                                      \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,            \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                       \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))            \
  X(CUresult, cuLaunchKernelEx,                                                                    \
    (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))               \
  X(CUresult, cuStreamCreate, (CUstream * phStream, unsigned int Flags))                           \
  X(CUresult, cuStreamCreateWithPriority, (CUstream * phStream, unsigned int flags, int priority)) \
  X(CUresult, cuStreamDestroy_v2, (CUstream hStream))                                              \
  X(CUresult, cuStreamSynchronize, (CUstream hStream))                                             \
  X(CUresult, cuStreamQuery, (CUstream hStream))                                                   \
  X(CUresult, cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags))           \
  X(CUresult, cuStreamGetFlags, (CUstream hStream, unsigned int *flags))                           \
  X(CUresult, cuStreamGetPriority, (CUstream hStream, int *priority))                              \
  X(CUresult, cuStreamGetCtx, (CUstream hStream, CUcontext * pctx))                                \
  X(CUresult, cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData))                   \
  X(CUresult, cuStreamAddCallback,                                                                 \
    (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags))             \
  X(CUresult, cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode))               \
  X(CUresult, cuStreamEndCapture, (CUstream hStream, CUgraph * phGraph))                           \
  X(CUresult, cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus))      \
  X(CUresult, cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority))            \
  X(CUresult, cuEventCreate, (CUevent * phEvent, unsigned int Flags))                              \
  X(CUresult, cuEventDestroy_v2, (CUevent hEvent))                                                 \
  X(CUresult, cuEventRecord, (CUevent hEvent, CUstream hStream))                                   \
  X(CUresult, cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags))      \
  X(CUresult, cuEventSynchronize, (CUevent hEvent))                                                \
  X(CUresult, cuEventQuery, (CUevent hEvent))                                                      \
  X(CUresult, cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))            \
  X(CUresult, cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd))         \
  X(CUresult, cuGraphCreate, (CUgraph * phGraph, unsigned int flags))                              \
  X(CUresult, cuGraphDestroy, (CUgraph hGraph))                                                    \
  X(CUresult, cuGraphAddKernelNode_v2,                                                             \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams))                           \
  X(CUresult, cuGraphAddMemcpyNode,                                                                \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx))                      \
  X(CUresult, cuGraphAddMemsetNode,                                                                \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx))          \
  X(CUresult, cuGraphAddEmptyNode,                                                                 \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies))                                                                      \
  X(CUresult, cuGraphGetNodes, (CUgraph hGraph, CUgraphNode * nodes, size_t * numNodes))           \
  X(CUresult, cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType * type))                     \
  X(CUresult, cuGraphInstantiateWithFlags,                                                         \
    (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags))                         \
  X(CUresult, cuGraphExecDestroy, (CUgraphExec hGraphExec))                                        \
  X(CUresult, cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream))                           \
  X(CUresult, cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream))                           \
  X(CUresult, cuGraphExecKernelNodeSetParams_v2,                                                   \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams))        \
  X(CUresult, cuGraphExecMemcpyNodeSetParams,                                                      \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams, CUcontext ctx))   \
  X(CUresult, cuGraphAddDependencies_v2,                                                           \
    (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,                               \
     const CUgraphEdgeData *edgeData, size_t numDependencies))                                     \
  X(CUresult, cuGraphRemoveDependencies_v2,                                                        \
    (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,                               \
     const CUgraphEdgeData *edgeData, size_t numDependencies))                                     \
  X(CUresult, cuGraphGetEdges_v2,                                                                  \
    (CUgraph hGraph, CUgraphNode * from, CUgraphNode * to, CUgraphEdgeData * edgeData,             \
     size_t * numEdges))                                                                           \
  X(CUresult, cuGraphGetRootNodes,                                                                 \
    (CUgraph hGraph, CUgraphNode * rootNodes, size_t * numRootNodes))                              \
  X(CUresult, cuGraphNodeGetDependencies_v2,                                                       \
    (CUgraphNode hNode, CUgraphNode * dependencies, CUgraphEdgeData * edgeData,                    \
     size_t * numDependencies))                                                                    \
  X(CUresult, cuGraphNodeGetDependentNodes_v2,                                                     \
    (CUgraphNode hNode, CUgraphNode * dependentNodes, CUgraphEdgeData * edgeData,                  \
     size_t * numDependentNodes))                                                                  \
  X(CUresult, cuGraphDestroyNode, (CUgraphNode hNode))                                             \
  X(CUresult, cuGraphClone, (CUgraph * phGraphClone, CUgraph originalGraph))                       \
  X(CUresult, cuGraphNodeFindInClone,                                                              \
    (CUgraphNode * phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph))                       \
  X(CUresult, cuGraphDebugDotPrint, (CUgraph hGraph, const char *path, unsigned int flags))        \
  X(CUresult, cuGraphAddHostNode,                                                                  \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams))                             \
  X(CUresult, cuGraphHostNodeGetParams, (CUgraphNode hNode, CUDA_HOST_NODE_PARAMS * nodeParams))   \
  X(CUresult, cuGraphHostNodeSetParams,                                                            \
    (CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams))                                  \
  X(CUresult, cuGraphExecHostNodeSetParams,                                                        \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams))          \
  X(CUresult, cuGraphAddEventRecordNode,                                                           \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUevent event))                                                       \
  X(CUresult, cuGraphAddEventWaitNode,                                                             \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUevent event))                                                       \
  X(CUresult, cuGraphEventRecordNodeGetEvent, (CUgraphNode hNode, CUevent * event_out))            \
  X(CUresult, cuGraphEventRecordNodeSetEvent, (CUgraphNode hNode, CUevent event))                  \
  X(CUresult, cuGraphEventWaitNodeGetEvent, (CUgraphNode hNode, CUevent * event_out))              \
  X(CUresult, cuGraphEventWaitNodeSetEvent, (CUgraphNode hNode, CUevent event))                    \
  X(CUresult, cuGraphExecEventRecordNodeSetEvent,                                                  \
    (CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event))                                    \
  X(CUresult, cuGraphExecEventWaitNodeSetEvent,                                                    \
    (CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event))                                    \
  X(CUresult, cuGraphAddChildGraphNode,                                                            \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUgraph childGraph))                                                  \
  X(CUresult, cuGraphChildGraphNodeGetGraph, (CUgraphNode hNode, CUgraph * phGraph))               \
  X(CUresult, cuGraphAddBatchMemOpNode,                                                            \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams))                     \
  X(CUresult, cuGraphBatchMemOpNodeGetParams,                                                      \
    (CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS * nodeParams_out))                           \
  X(CUresult, cuGraphBatchMemOpNodeSetParams,                                                      \
    (CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams))                          \
  X(CUresult, cuGraphExecBatchMemOpNodeSetParams,                                                  \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams))  \
  X(CUresult, cuDeviceGetDevResource,                                                              \
    (CUdevice device, CUdevResource * resource, CUdevResourceType type))                           \
  X(CUresult, cuCtxGetDevResource,                                                                 \
    (CUcontext hCtx, CUdevResource * resource, CUdevResourceType type))                            \
  X(CUresult, cuGreenCtxGetDevResource,                                                            \
    (CUgreenCtx hCtx, CUdevResource * resource, CUdevResourceType type))                           \
  X(CUresult, cuDevSmResourceSplitByCount,                                                         \
    (CUdevResource * result, unsigned int *nbGroups, const CUdevResource *input,                   \
     CUdevResource *remaining, unsigned int useFlags, unsigned int minCount))                      \
  X(CUresult, cuDevResourceGenerateDesc,                                                           \
    (CUdevResourceDesc * phDesc, CUdevResource * resources, unsigned int nbResources))             \
  X(CUresult, cuGreenCtxCreate,                                                                    \
    (CUgreenCtx * phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags))                \
  X(CUresult, cuGreenCtxDestroy, (CUgreenCtx hCtx))                                                \
  X(CUresult, cuCtxFromGreenCtx, (CUcontext * pContext, CUgreenCtx hCtx))                          \
  X(CUresult, cuGreenCtxRecordEvent, (CUgreenCtx hCtx, CUevent hEvent))                            \
  X(CUresult, cuGreenCtxWaitEvent, (CUgreenCtx hCtx, CUevent hEvent))                              \
  X(CUresult, cuStreamGetGreenCtx, (CUstream hStream, CUgreenCtx * phCtx))                         \
  X(CUresult, cuGreenCtxStreamCreate,                                                              \
    (CUstream * phStream, CUgreenCtx greenCtx, unsigned int flags, int priority))                  \
  X(CUresult, cuGreenCtxGetId, (CUgreenCtx greenCtx, unsigned long long *greenCtxId))              \
  X(CUresult, cuGraphConditionalHandleCreate,                                                      \
    (CUgraphConditionalHandle * pHandle_out, CUgraph hGraph, CUcontext ctx,                        \
     unsigned int defaultLaunchValue, unsigned int flags))                                         \
  X(CUresult, cuGraphAddNode_v2,                                                                   \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     const CUgraphEdgeData *dependencyData, size_t numDependencies,                                \
     CUgraphNodeParams *nodeParams))                                                               \
  X(CUresult, cuUserObjectCreate,                                                                  \
    (CUuserObject * object_out, void *ptr, CUhostFn destroy, unsigned int initialRefcount,         \
     unsigned int flags))                                                                          \
  X(CUresult, cuUserObjectRetain, (CUuserObject object, unsigned int count))                       \
  X(CUresult, cuUserObjectRelease, (CUuserObject object, unsigned int count))                      \
  X(CUresult, cuGraphRetainUserObject,                                                             \
    (CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags))                  \
  X(CUresult, cuGraphReleaseUserObject, (CUgraph graph, CUuserObject object, unsigned int count))  \
  X(CUresult, cuGraphKernelNodeGetAttribute,                                                       \
    (CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue * value_out))               \
  X(CUresult, cuGraphKernelNodeSetAttribute,                                                       \
    (CUgraphNode hNode, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue *value))              \
  X(CUresult, cuGraphKernelNodeCopyAttributes, (CUgraphNode dst, CUgraphNode src))                 \
  X(CUresult, cuGraphNodeSetEnabled,                                                               \
    (CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled))                           \
  X(CUresult, cuGraphNodeGetEnabled,                                                               \
    (CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled))                          \
  X(CUresult, cuStreamBeginCaptureToGraph,                                                         \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                            \
     const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode))     \
  X(CUresult, cuStreamUpdateCaptureDependencies_v2,                                                \
    (CUstream hStream, CUgraphNode * dependencies, const CUgraphEdgeData *dependencyData,          \
     size_t numDependencies, unsigned int flags))                                                  \
  X(CUresult, cuGraphKernelNodeGetParams_v2,                                                       \
    (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS * nodeParams))                                     \
  X(CUresult, cuGraphKernelNodeSetParams_v2,                                                       \
    (CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams))                                \
  X(CUresult, cuGraphMemcpyNodeGetParams, (CUgraphNode hNode, CUDA_MEMCPY3D * nodeParams))         \
  X(CUresult, cuGraphMemcpyNodeSetParams, (CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams))    \
  X(CUresult, cuGraphMemsetNodeGetParams,                                                          \
    (CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS * nodeParams))                                     \
  X(CUresult, cuGraphMemsetNodeSetParams,                                                          \
    (CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams))                                \
  X(CUresult, cuGraphExecMemsetNodeSetParams,                                                      \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *memsetParams,       \
     CUcontext ctx))                                                                               \
  X(CUresult, cuGraphInstantiateWithParams,                                                        \
    (CUgraphExec * phGraphExec, CUgraph hGraph,                                                    \
     CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams))                                           \
  X(CUresult, cuGraphExecUpdate_v2,                                                                \
    (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo * resultInfo))            \
  X(CUresult, cuGraphExecGetFlags, (CUgraphExec hGraphExec, cuuint64_t * flags))                   \
  X(CUresult, cuGraphNodeSetParams, (CUgraphNode hNode, CUgraphNodeParams * nodeParams))           \
  X(CUresult, cuGraphExecNodeSetParams,                                                            \
    (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams * nodeParams))                   \
  X(CUresult, cuGraphExecChildGraphNodeSetParams,                                                  \
    (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph))                               \
  X(CUresult, cuGetProcAddress_v2,                                                                 \
    (const char *symbol, void **pfn, int cudaVersion, uint64_t flags,                              \
     CUdriverProcAddressQueryResult *symbolStatus))                                                \
  X(CUresult, cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId))        \
  X(CUresult, cuLinkCreate_v2,                                                                     \
    (unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *stateOut))  \
  X(CUresult, cuLinkAddData_v2,                                                                    \
    (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,            \
     unsigned int numOptions, CUjit_option *options, void **optionValues))                         \
  X(CUresult, cuLinkAddFile_v2,                                                                    \
    (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,            \
     CUjit_option *options, void **optionValues))                                                  \
  X(CUresult, cuLinkComplete, (CUlinkState state, void **cubinOut, size_t *sizeOut))               \
  X(CUresult, cuLinkDestroy, (CUlinkState state))                                                  \
  X(CUresult, cuModuleGetFunctionCount, (unsigned int *count, CUmodule mod))                       \
  X(CUresult, cuModuleEnumerateFunctions,                                                          \
    (CUfunction * functions, unsigned int numFunctions, CUmodule mod))                             \
  X(CUresult, cuModuleGetLoadingMode, (CUmoduleLoadingMode * mode))                                \
  X(CUresult, cuLibraryLoadFromFile,                                                               \
    (CUlibrary * library, const char *fileName, CUjit_option *jitOptions, void **jitOptionsValues, \
     unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,      \
     unsigned int numLibraryOptions))                                                              \
  X(CUresult, cuLibraryGetKernelCount, (unsigned int *count, CUlibrary lib))                       \
  X(CUresult, cuLibraryEnumerateKernels,                                                           \
    (CUkernel * kernels, unsigned int numKernels, CUlibrary lib))                                  \
  X(CUresult, cuKernelGetLibrary, (CUlibrary * pLib, CUkernel kernel))                             \
  X(CUresult, cuFuncGetModule, (CUmodule * hmod, CUfunction hfunc))                                \
  X(CUresult, cuFuncIsLoaded, (CUfunctionLoadingState * state, CUfunction function))               \
  X(CUresult, cuFuncLoad, (CUfunction function))                                                   \
  X(CUresult, cuLibraryGetUnifiedFunction, (void **fptr, CUlibrary library, const char *symbol))   \
  X(CUresult, cuLibraryGetManaged,                                                                 \
    (CUdeviceptr * dptr, size_t * bytes, CUlibrary library, const char *name))

/* Implemented too, but exported under names cuda.h does not declare by default (older versions of
 * a call, kept for clients that look them up by name): not part of the cuda.h check. */
#define NVCU_FUNCTIONS_UNCHECKED(X)                                                                \
  X(CUresult, cuMemcpyBatchAsync,                                                                  \
    (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                         \
     CUmemcpyAttributes * attrs, size_t * attrsIdxs, size_t numAttrs, size_t * failIdx,            \
     CUstream hStream))                                                                            \
  X(CUresult, cuMemcpy3DBatchAsync,                                                                \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * opList, size_t * failIdx, unsigned long long flags,   \
     CUstream hStream))                                                                            \
  X(CUresult, cuStreamUpdateCaptureDependencies,                                                   \
    (CUstream hStream, CUgraphNode * dependencies, size_t numDependencies, unsigned int flags))    \
  X(CUresult, cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev))                \
  X(CUresult, cuStreamGetCaptureInfo,                                                              \
    (CUstream hStream, CUstreamCaptureStatus * captureStatus_out, cuuint64_t * id_out))            \
  X(CUresult, cuStreamGetCaptureInfo_v2,                                                           \
    (CUstream hStream, CUstreamCaptureStatus * captureStatus_out, cuuint64_t * id_out,             \
     CUgraph * graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out))      \
  X(CUresult, cuProfilerInitialize,                                                                \
    (const char *configFile, const char *outputFile, CUoutput_mode outputMode))                    \
  X(CUresult, cuProfilerStart, (void))                                                             \
  X(CUresult, cuProfilerStop, (void))                                                              \
  X(CUresult, cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, uint64_t flags)) \
  X(CUresult, cuDevicePrimaryCtxRelease, (CUdevice dev))                                           \
  X(CUresult, cuCtxAttach, (CUcontext * pctx, unsigned int flags))                                 \
  X(CUresult, cuCtxDetach, (CUcontext ctx))                                                        \
  X(CUresult, cuCtxGetExecAffinity,                                                                \
    (CUexecAffinityParam * pExecAffinity, CUexecAffinityType type))                                \
  X(CUresult, cuDeviceGetExecAffinitySupport, (int *pi, CUexecAffinityType type, CUdevice dev))    \
  X(CUresult, cuIpcOpenMemHandle,                                                                  \
    (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags))                              \
  X(CUresult, cuCtxCreate_v3,                                                                      \
    (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags,       \
     CUdevice dev))                                                                                \
  X(CUresult, cuCtxCreate_v4,                                                                      \
    (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags, CUdevice dev))     \
  X(CUresult, cuGraphAddKernelNode,                                                                \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams))                        \
  X(CUresult, cuGraphExecKernelNodeSetParams,                                                      \
    (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams))     \
  X(CUresult, cuGraphInstantiate_v2,                                                               \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char *logBuffer,        \
     size_t bufferSize))                                                                           \
  X(CUresult, cuGraphAddDependencies,                                                              \
    (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies))      \
  X(CUresult, cuGraphRemoveDependencies,                                                           \
    (CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies))      \
  X(CUresult, cuGraphGetEdges,                                                                     \
    (CUgraph hGraph, CUgraphNode * from, CUgraphNode * to, size_t * numEdges))                     \
  X(CUresult, cuGraphNodeGetDependencies,                                                          \
    (CUgraphNode hNode, CUgraphNode * dependencies, size_t * numDependencies))                     \
  X(CUresult, cuGraphNodeGetDependentNodes,                                                        \
    (CUgraphNode hNode, CUgraphNode * dependentNodes, size_t * numDependentNodes))                 \
  X(CUresult, cuGraphAddNode,                                                                      \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,                   \
     size_t numDependencies, CUgraphNodeParams *nodeParams))                                       \
  X(CUresult, cuGraphKernelNodeGetParams,                                                          \
    (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 * nodeParams))                                  \
  X(CUresult, cuGraphKernelNodeSetParams,                                                          \
    (CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams))                             \
  X(CUresult, cuGraphExecUpdate,                                                                   \
    (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode * hErrorNode_out,                         \
     CUgraphExecUpdateResult * updateResult_out))                                                  \
  X(CUresult, cuStreamBeginCapture, (CUstream hStream))                                            \
  X(CUresult, cuStreamDestroy, (CUstream hStream))                                                 \
  X(CUresult, cuEventDestroy, (CUevent hEvent))                                                    \
  X(CUresult, cuLinkCreate,                                                                        \
    (unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *stateOut))  \
  X(CUresult, cuLinkAddData,                                                                       \
    (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,            \
     unsigned int numOptions, CUjit_option *options, void **optionValues))                         \
  X(CUresult, cuLinkAddFile,                                                                       \
    (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,            \
     CUjit_option *options, void **optionValues))                                                  \
  X(CUresult, cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags))                   \
  X(CUresult, cuMemPrefetchAsync,                                                                  \
    (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream))                      \
  X(CUresult, cuMemAdvise,                                                                         \
    (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device))                      \
  X(CUresult, cuLogsRegisterCallback,                                                              \
    (CUlogsCallback callbackFunc, void *userData, CUlogsCallbackHandle *callback_out))             \
  X(CUresult, cuLogsUnregisterCallback, (CUlogsCallbackHandle callback))                           \
  X(CUresult, cuLogsCurrent, (CUlogIterator * iterator_out, unsigned int flags))                   \
  X(CUresult, cuLogsDumpToFile,                                                                    \
    (CUlogIterator * iterator, const char *pathToFile, unsigned int flags))                        \
  X(CUresult, cuLogsDumpToMemory,                                                                  \
    (CUlogIterator * iterator, char *buffer, size_t *size, unsigned int flags))

#endif
