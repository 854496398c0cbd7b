/* Our declarations of the CUDA driver API's types, constants and the functions this library
 * implements: facts from NVIDIA's public documentation, checked against the toolkit's cuda.h at
 * build time when it is there (check_cuda_h.c). */
#ifndef NVCU_CUDA_API_H
#define NVCU_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include "enums.h"

typedef enum cudaError_enum {
#define NVCU_ENUM_(name, value) name = value,
  CU_RESULT_LIST(NVCU_ENUM_)
} CUresult;
typedef enum CUdevice_attribute_enum { CU_DEVICE_ATTRIBUTE_LIST(NVCU_ENUM_) } CUdevice_attribute;
typedef enum CUpointer_attribute_enum { CU_POINTER_ATTRIBUTE_LIST(NVCU_ENUM_) } CUpointer_attribute;
typedef enum CUfunction_attribute_enum {
  CU_FUNCTION_ATTRIBUTE_LIST(NVCU_ENUM_)
} CUfunction_attribute;
typedef enum CUjit_option_enum { CU_JIT_OPTION_LIST(NVCU_ENUM_) } CUjit_option;
typedef enum CUjitInputType_enum { CU_JIT_INPUT_TYPE_LIST(NVCU_ENUM_) } CUjitInputType;
#undef NVCU_ENUM_

typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUuserObject_st *CUuserObject;
typedef struct CUarray_st *CUarray;
typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef enum CUexecAffinityType_enum {
  CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
  CU_EXEC_AFFINITY_TYPE_MAX
} CUexecAffinityType;
typedef struct CUexecAffinitySmCount_st {
  unsigned int val;
} CUexecAffinitySmCount;
typedef struct CUexecAffinityParam_st {
  CUexecAffinityType type;
  union {
    CUexecAffinitySmCount smCount;
  } param;
} CUexecAffinityParam;
typedef enum CUcigDataType_enum {
  CIG_DATA_TYPE_D3D12_COMMAND_QUEUE = 0x1,
  CIG_DATA_TYPE_NV_BLOB = 0x2
} CUcigDataType;
typedef struct CUctxCigParam_st {
  CUcigDataType sharedDataType;
  void *sharedData;
} CUctxCigParam;
typedef struct CUctxCreateParams_st {
  CUexecAffinityParam *execAffinityParams;
  int numExecAffinityParams;
  CUctxCigParam *cigParams;
} CUctxCreateParams;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

typedef struct CUlinkState_st *CUlinkState;
typedef enum CUmoduleLoadingMode_enum {
  CU_MODULE_EAGER_LOADING = 1,
  CU_MODULE_LAZY_LOADING = 2
} CUmoduleLoadingMode;
typedef enum CUfunctionLoadingState_enum {
  CU_FUNCTION_LOADING_STATE_UNLOADED = 0,
  CU_FUNCTION_LOADING_STATE_LOADED = 1
} CUfunctionLoadingState;
typedef enum CUlibraryOption_enum {
  CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0
} CUlibraryOption;
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;
typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;
typedef enum CUlaunchAttributeID_enum {
  CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
  CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
  CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = 9,
  CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN = 10,
} CUlaunchAttributeID;
typedef CUlaunchAttributeID CUstreamAttrID;
typedef CUlaunchAttributeID CUkernelNodeAttrID;
typedef enum CUfunc_cache_enum {
  CU_FUNC_CACHE_PREFER_NONE = 0,
  CU_FUNC_CACHE_PREFER_SHARED = 1,
  CU_FUNC_CACHE_PREFER_L1 = 2,
  CU_FUNC_CACHE_PREFER_EQUAL = 3
} CUfunc_cache;
typedef enum CUsharedconfig_enum {
  CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE = 0,
  CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE = 1,
  CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE = 2
} CUsharedconfig;
typedef enum CUlimit_enum {
  CU_LIMIT_STACK_SIZE = 0,
  CU_LIMIT_PRINTF_FIFO_SIZE = 1,
  CU_LIMIT_MALLOC_HEAP_SIZE = 2,
  CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH = 3,
  CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 4,
  CU_LIMIT_MAX_L2_FETCH_GRANULARITY = 5,
  CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6
} CUlimit;
typedef enum CUgraphNodeType_enum {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_MEMSET = 2,
  CU_GRAPH_NODE_TYPE_HOST = 3,
  CU_GRAPH_NODE_TYPE_GRAPH = 4,
  CU_GRAPH_NODE_TYPE_EMPTY = 5,
  CU_GRAPH_NODE_TYPE_WAIT_EVENT = 6,
  CU_GRAPH_NODE_TYPE_EVENT_RECORD = 7,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11,
  CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12,
  CU_GRAPH_NODE_TYPE_CONDITIONAL = 13
} CUgraphNodeType;
/* Conditional nodes (CUDA 12.3; SWITCH and IF's else branch 12.8). */
typedef unsigned long long CUgraphConditionalHandle;
typedef enum CUgraphConditionalNodeType_enum {
  CU_GRAPH_COND_TYPE_IF = 0,
  CU_GRAPH_COND_TYPE_WHILE = 1,
  CU_GRAPH_COND_TYPE_SWITCH = 2
} CUgraphConditionalNodeType;
#define CU_GRAPH_COND_ASSIGN_DEFAULT 1u
typedef enum CUgraphExecUpdateResult_enum {
  CU_GRAPH_EXEC_UPDATE_SUCCESS = 0,
  CU_GRAPH_EXEC_UPDATE_ERROR = 1,
  CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,
  CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3,
  CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 4,
  CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 5,
  CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 6,
  CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 7,
  CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 8
} CUgraphExecUpdateResult;
typedef enum CUgraphInstantiateResult_enum {
  CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
  CUDA_GRAPH_INSTANTIATE_ERROR = 1,
  CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
  CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
  CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4
} CUgraphInstantiateResult;
typedef enum CUgraphInstantiate_flags_enum {
  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2,
  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH = 4,
  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8
} CUgraphInstantiate_flags;
typedef enum CUgraphChildGraphNodeOwnership_enum {
  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE = 0,
  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE = 1
} CUgraphChildGraphNodeOwnership;

typedef enum CUaccessProperty_enum {
  CU_ACCESS_PROPERTY_NORMAL = 0,
  CU_ACCESS_PROPERTY_STREAMING = 1,
  CU_ACCESS_PROPERTY_PERSISTING = 2
} CUaccessProperty;
typedef struct CUaccessPolicyWindow_st {
  void *base_ptr;
  size_t num_bytes;
  float hitRatio;
  CUaccessProperty hitProp, missProp;
} CUaccessPolicyWindow;
typedef enum CUsynchronizationPolicy_enum {
  CU_SYNC_POLICY_AUTO = 1,
  CU_SYNC_POLICY_SPIN = 2,
  CU_SYNC_POLICY_YIELD = 3,
  CU_SYNC_POLICY_BLOCKING_SYNC = 4
} CUsynchronizationPolicy;
typedef struct CUlaunchMemSyncDomainMap_st {
  unsigned char default_, remote;
} CUlaunchMemSyncDomainMap;
typedef union CUlaunchAttributeValue_union {
  char pad[64];
  CUaccessPolicyWindow accessPolicyWindow;
  int cooperative;
  CUsynchronizationPolicy syncPolicy;
  struct {
    unsigned int x, y, z;
  } clusterDim;
  int clusterSchedulingPolicyPreference;
  int priority;
  CUlaunchMemSyncDomainMap memSyncDomainMap;
  int memSyncDomain;
} CUlaunchAttributeValue;
typedef CUlaunchAttributeValue CUstreamAttrValue;
typedef CUlaunchAttributeValue CUkernelNodeAttrValue;
/* User objects: the one creation flag CUDA requires, and moving a caller's references to a graph */
typedef enum CUuserObject_flags_enum { CU_USER_OBJECT_NO_DESTRUCTOR_SYNC = 1 } CUuserObject_flags;
typedef enum CUuserObjectRetain_flags_enum {
  CU_GRAPH_USER_OBJECT_MOVE = 1
} CUuserObjectRetain_flags;
/* cuStreamUpdateCaptureDependencies: add to the capture's dependency set, or replace it */
typedef enum CUstreamUpdateCaptureDependencies_flags_enum {
  CU_STREAM_ADD_CAPTURE_DEPENDENCIES = 0,
  CU_STREAM_SET_CAPTURE_DEPENDENCIES = 1
} CUstreamUpdateCaptureDependencies_flags;
typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUDA_KERNEL_NODE_PARAMS_st {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
} CUDA_KERNEL_NODE_PARAMS_v1;
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;
typedef CUDA_KERNEL_NODE_PARAMS_v2 CUDA_KERNEL_NODE_PARAMS;
typedef struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D_v2;
typedef CUDA_MEMCPY3D_v2 CUDA_MEMCPY3D;
typedef struct CUDA_MEMCPY2D_st {
  size_t srcXInBytes, srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D_v2;
typedef CUDA_MEMCPY2D_v2 CUDA_MEMCPY2D;
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_NONE = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4
} CUmemLocationType;
typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;
typedef enum CUmemAllocationType_enum {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2
} CUmemAllocationType;
typedef enum CUmemAllocationHandleType_enum {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
  CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
  CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
  CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
  CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;
typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;
typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;
typedef enum CUmemAllocationGranularity_flags_enum {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;
typedef enum CUmemAccess_flags_enum {
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
  CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;
typedef struct CUmemAccessDesc_st {
  CUmemLocation location;
  CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;
typedef struct CUmemPoolProps_st {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps_v1;
typedef CUmemPoolProps_v1 CUmemPoolProps;
typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v1_st {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc *accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
} CUDA_MEM_ALLOC_NODE_PARAMS_v1;
typedef CUDA_MEM_ALLOC_NODE_PARAMS_v1 CUDA_MEM_ALLOC_NODE_PARAMS;
typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v2_st {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc *accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
} CUDA_MEM_ALLOC_NODE_PARAMS_v2;
typedef struct CUDA_MEM_FREE_NODE_PARAMS_st {
  CUdeviceptr dptr;
} CUDA_MEM_FREE_NODE_PARAMS;
typedef enum CUgraphMem_attribute_enum {
  CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
  CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH
} CUgraphMem_attribute;
typedef enum CUmemPool_attribute_enum {
  CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8
} CUmemPool_attribute;
typedef enum CUmem_advise_enum {
  CU_MEM_ADVISE_SET_READ_MOSTLY = 1,
  CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2,
  CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3,
  CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4,
  CU_MEM_ADVISE_SET_ACCESSED_BY = 5,
  CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6
} CUmem_advise;
typedef enum CUmem_range_attribute_enum {
  CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION = 2,
  CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY = 3,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION = 4,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE = 5,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID = 6,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE = 7,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID = 8
} CUmem_range_attribute;
typedef void (*CUhostFn)(void *userData);
/* Error log management (CUDA 12.9). */
typedef enum CUlogLevel_enum { CU_LOG_LEVEL_ERROR = 0, CU_LOG_LEVEL_WARNING = 1 } CUlogLevel;
typedef struct CUlogsCallbackEntry_st *CUlogsCallbackHandle;
typedef void (*CUlogsCallback)(void *data, CUlogLevel logLevel, char *message, size_t length);
typedef unsigned int CUlogIterator;
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
typedef struct CUDA_MEMSET_NODE_PARAMS_st {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value, elementSize;
  size_t width, height;
} CUDA_MEMSET_NODE_PARAMS_v1;
typedef CUDA_MEMSET_NODE_PARAMS_v1 CUDA_MEMSET_NODE_PARAMS;
typedef struct CUDA_MEMSET_NODE_PARAMS_v2_st {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value, elementSize;
  size_t width, height;
  CUcontext ctx;
} CUDA_MEMSET_NODE_PARAMS_v2;
typedef struct CUDA_HOST_NODE_PARAMS_st {
  CUhostFn fn;
  void *userData;
} CUDA_HOST_NODE_PARAMS_v1;
typedef CUDA_HOST_NODE_PARAMS_v1 CUDA_HOST_NODE_PARAMS;
typedef struct CUDA_HOST_NODE_PARAMS_v2_st {
  CUhostFn fn;
  void *userData;
} CUDA_HOST_NODE_PARAMS_v2;
typedef struct CUDA_MEMCPY_NODE_PARAMS_st {
  int flags, reserved;
  CUcontext copyCtx;
  CUDA_MEMCPY3D copyParams;
} CUDA_MEMCPY_NODE_PARAMS;
typedef struct CUDA_CHILD_GRAPH_NODE_PARAMS_st {
  CUgraph graph;
  CUgraphChildGraphNodeOwnership ownership;
} CUDA_CHILD_GRAPH_NODE_PARAMS;
typedef struct CUDA_EVENT_RECORD_NODE_PARAMS_st {
  CUevent event;
} CUDA_EVENT_RECORD_NODE_PARAMS;
typedef struct CUDA_EVENT_WAIT_NODE_PARAMS_st {
  CUevent event;
} CUDA_EVENT_WAIT_NODE_PARAMS;
typedef struct CUDA_CONDITIONAL_NODE_PARAMS {
  CUgraphConditionalHandle handle;
  CUgraphConditionalNodeType type;
  unsigned int size;
  CUgraph *phGraph_out; /* the node's body graphs, made by the library and owned by the node */
  CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;
/* Green contexts (CUDA 12.4; the resource layout of CUDA 13.0's cuda.h, RESOURCE_ABI_VERSION 1). */
typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;
typedef enum { CU_GREEN_CTX_DEFAULT_STREAM = 0x1 } CUgreenCtxCreate_flags;
typedef enum {
  CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING = 0x1,
  CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 0x2
} CUdevSmResourceSplit_flags;
typedef enum { CU_DEV_RESOURCE_TYPE_INVALID = 0, CU_DEV_RESOURCE_TYPE_SM = 1 } CUdevResourceType;
typedef struct CUdevSmResource_st {
  unsigned int smCount, minSmPartitionSize, smCoscheduledAlignment;
} CUdevSmResource;
/* The padding is the library's: nvhcq keeps the resource's TPCs there. */
typedef struct CUdevResource_st {
  CUdevResourceType type;
  unsigned char _internal_padding[92];
  union {
    CUdevSmResource sm;
    unsigned char _oversize[48];
  };
} CUdevResource_v1;
typedef CUdevResource_v1 CUdevResource;

/* Defined with the stream memory operations below. */
typedef union CUstreamBatchMemOpParams_union CUstreamBatchMemOpParams;
typedef struct CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st {
  CUcontext ctx;
  unsigned int count;
  CUstreamBatchMemOpParams *paramArray;
  unsigned int flags;
} CUDA_BATCH_MEM_OP_NODE_PARAMS_v1;
typedef CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 CUDA_BATCH_MEM_OP_NODE_PARAMS;
typedef struct CUDA_BATCH_MEM_OP_NODE_PARAMS_v2_st {
  CUcontext ctx;
  unsigned int count;
  CUstreamBatchMemOpParams *paramArray;
  unsigned int flags;
} CUDA_BATCH_MEM_OP_NODE_PARAMS_v2;
/* The node kinds this library builds; the union is padded to the 232 bytes cuda.h gives it. */
typedef struct CUgraphNodeParams_st {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_KERNEL_NODE_PARAMS_v2 kernel; /* cuda.h's CUDA_KERNEL_NODE_PARAMS_v3: the same layout */
    CUDA_MEMCPY_NODE_PARAMS memcpy;
    CUDA_MEMSET_NODE_PARAMS_v2 memset;
    CUDA_HOST_NODE_PARAMS_v2 host;
    CUDA_CHILD_GRAPH_NODE_PARAMS graph;
    CUDA_EVENT_WAIT_NODE_PARAMS eventWait;
    CUDA_EVENT_RECORD_NODE_PARAMS eventRecord;
    CUDA_MEM_ALLOC_NODE_PARAMS_v2 alloc;
    CUDA_MEM_FREE_NODE_PARAMS free;
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
    CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 memOp;
  };
  long long reserved2;
} CUgraphNodeParams;
typedef struct CUgraphEdgeData_st {
  unsigned char from_port, to_port, type, reserved[5];
} CUgraphEdgeData;
typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;
typedef struct CUgraphExecUpdateResultInfo_st {
  CUgraphExecUpdateResult result;
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo_v1;
typedef CUgraphExecUpdateResultInfo_v1 CUgraphExecUpdateResultInfo;

typedef size_t (*CUoccupancyB2DSize)(int blockSize);

/* Stream memory operations. */
typedef enum CUstreamWaitValue_flags_enum {
  CU_STREAM_WAIT_VALUE_GEQ = 0x0,
  CU_STREAM_WAIT_VALUE_EQ = 0x1,
  CU_STREAM_WAIT_VALUE_AND = 0x2,
  CU_STREAM_WAIT_VALUE_NOR = 0x3,
  CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
} CUstreamWaitValue_flags;
typedef enum CUstreamWriteValue_flags_enum {
  CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
  CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 0x1
} CUstreamWriteValue_flags;
typedef enum CUstreamBatchMemOpType_enum {
  CU_STREAM_MEM_OP_WAIT_VALUE_32 = 1,
  CU_STREAM_MEM_OP_WRITE_VALUE_32 = 2,
  CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES = 3,
  CU_STREAM_MEM_OP_WAIT_VALUE_64 = 4,
  CU_STREAM_MEM_OP_WRITE_VALUE_64 = 5,
  CU_STREAM_MEM_OP_BARRIER = 6
} CUstreamBatchMemOpType;
typedef enum CUstreamMemoryBarrier_flags_enum {
  CU_STREAM_MEMORY_BARRIER_TYPE_SYS = 0x0,
  CU_STREAM_MEMORY_BARRIER_TYPE_GPU = 0x1
} CUstreamMemoryBarrier_flags;
/* The wait and write members share one layout: operation, address, value, flags, alias. */
typedef struct CUstreamMemOpValueParams_st {
  CUstreamBatchMemOpType operation;
  CUdeviceptr address;
  union {
    cuuint32_t value;
    cuuint64_t value64;
  };
  unsigned int flags;
  CUdeviceptr alias;
} CUstreamMemOpValueParams;
typedef union CUstreamBatchMemOpParams_union {
  CUstreamBatchMemOpType operation;
  CUstreamMemOpValueParams waitValue;
  CUstreamMemOpValueParams writeValue;
  struct {
    CUstreamBatchMemOpType operation;
    unsigned int flags;
  } flushRemoteWrites, memoryBarrier;
  cuuint64_t pad[6];
} CUstreamBatchMemOpParams;
typedef enum CUoutput_mode_enum { CU_OUT_KEY_VALUE_PAIR = 0, CU_OUT_CSV = 1 } CUoutput_mode;
typedef struct CUdevprop_st {
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int sharedMemPerBlock;
  int totalConstantMemory;
  int SIMDWidth;
  int memPitch;
  int regsPerBlock;
  int clockRate;
  int textureAlign;
} CUdevprop;
/* Tensor maps: the enums' numbers are nvhcq's NVHCQ_TENSOR_* (the same as CUDA's). */
typedef struct CUtensorMap_st {
  _Alignas(128) cuuint64_t opaque[16];
} CUtensorMap;
typedef enum CUtensorMapDataType_enum { CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0 } CUtensorMapDataType;
typedef enum CUtensorMapInterleave_enum { CU_TENSOR_MAP_INTERLEAVE_NONE = 0 } CUtensorMapInterleave;
typedef enum CUtensorMapSwizzle_enum { CU_TENSOR_MAP_SWIZZLE_NONE = 0 } CUtensorMapSwizzle;
typedef enum CUtensorMapL2promotion_enum {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0
} CUtensorMapL2promotion;
typedef enum CUtensorMapFloatOOBfill_enum {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
} CUtensorMapFloatOOBfill;

/* Peer links, GPUDirect RDMA flushes and 1D linear texture formats. */
typedef enum CUdevice_P2PAttribute_enum {
  CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 2,
  CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3,
  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_ACCESS_SUPPORTED = 4, /* the older name of the next */
  CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED = 4,
  CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED = 5
} CUdevice_P2PAttribute;
typedef enum CUflushGPUDirectRDMAWritesTarget_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX = 0
} CUflushGPUDirectRDMAWritesTarget;
typedef enum CUflushGPUDirectRDMAWritesScope_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER = 100,
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES = 200
} CUflushGPUDirectRDMAWritesScope;
typedef enum CUarray_format_enum {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20
} CUarray_format;
typedef struct CUDA_MEMCPY3D_PEER_st {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  CUcontext srcContext;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  CUcontext dstContext;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D_PEER_v1;
typedef CUDA_MEMCPY3D_PEER_v1 CUDA_MEMCPY3D_PEER;
typedef enum CUmemcpySrcAccessOrder_enum {
  CU_MEMCPY_SRC_ACCESS_ORDER_INVALID = 0x0,
  CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 0x1,
  CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL = 0x2,
  CU_MEMCPY_SRC_ACCESS_ORDER_ANY = 0x3,
  CU_MEMCPY_SRC_ACCESS_ORDER_MAX = 0x7FFFFFFF
} CUmemcpySrcAccessOrder;
#define CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE 0x1
typedef struct CUmemcpyAttributes_st {
  CUmemcpySrcAccessOrder srcAccessOrder;
  CUmemLocation srcLocHint, dstLocHint;
  unsigned int flags;
} CUmemcpyAttributes_v1;
typedef CUmemcpyAttributes_v1 CUmemcpyAttributes;
typedef enum CUmemcpy3DOperandType_enum {
  CU_MEMCPY_OPERAND_TYPE_POINTER = 0x1,
  CU_MEMCPY_OPERAND_TYPE_ARRAY = 0x2,
  CU_MEMCPY_OPERAND_TYPE_MAX = 0x7FFFFFFF
} CUmemcpy3DOperandType;
typedef struct CUoffset3D_st {
  size_t x, y, z;
} CUoffset3D_v1;
typedef CUoffset3D_v1 CUoffset3D;
typedef struct CUextent3D_st {
  size_t width, height, depth;
} CUextent3D_v1;
typedef CUextent3D_v1 CUextent3D;
typedef struct CUmemcpy3DOperand_st {
  CUmemcpy3DOperandType type;
  union {
    struct {
      CUdeviceptr ptr;
      size_t rowLength, layerHeight;
      CUmemLocation locHint;
    } ptr;
    struct {
      CUarray array;
      CUoffset3D offset;
    } array;
  } op;
} CUmemcpy3DOperand_v1;
typedef CUmemcpy3DOperand_v1 CUmemcpy3DOperand;
typedef struct CUDA_MEMCPY3D_BATCH_OP_st {
  CUmemcpy3DOperand src, dst;
  CUextent3D extent;
  CUmemcpySrcAccessOrder srcAccessOrder;
  unsigned int flags;
} CUDA_MEMCPY3D_BATCH_OP_v1;
typedef CUDA_MEMCPY3D_BATCH_OP_v1 CUDA_MEMCPY3D_BATCH_OP;
typedef struct CUmemPoolPtrExportData_st {
  unsigned char reserved[64];
} CUmemPoolPtrExportData_v1;
typedef CUmemPoolPtrExportData_v1 CUmemPoolPtrExportData;
#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle_v1;
typedef CUipcMemHandle_v1 CUipcMemHandle;
typedef struct CUipcEventHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcEventHandle_v1;
typedef CUipcEventHandle_v1 CUipcEventHandle;
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width, Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v2;
typedef CUDA_ARRAY_DESCRIPTOR_v2 CUDA_ARRAY_DESCRIPTOR;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width, Height, Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR_v2;
typedef CUDA_ARRAY3D_DESCRIPTOR_v2 CUDA_ARRAY3D_DESCRIPTOR;
#define CUDA_ARRAY3D_LAYERED        0x01
#define CUDA_ARRAY3D_SURFACE_LDST   0x02
#define CUDA_ARRAY3D_CUBEMAP        0x04
#define CUDA_ARRAY3D_TEXTURE_GATHER 0x08
typedef enum CUresourcetype_enum {
  CU_RESOURCE_TYPE_ARRAY = 0x00,
  CU_RESOURCE_TYPE_MIPMAPPED_ARRAY = 0x01,
  CU_RESOURCE_TYPE_LINEAR = 0x02,
  CU_RESOURCE_TYPE_PITCH2D = 0x03
} CUresourcetype;
typedef enum CUaddress_mode_enum {
  CU_TR_ADDRESS_MODE_WRAP = 0,
  CU_TR_ADDRESS_MODE_CLAMP = 1,
  CU_TR_ADDRESS_MODE_MIRROR = 2,
  CU_TR_ADDRESS_MODE_BORDER = 3
} CUaddress_mode;
typedef enum CUfilter_mode_enum {
  CU_TR_FILTER_MODE_POINT = 0,
  CU_TR_FILTER_MODE_LINEAR = 1
} CUfilter_mode;
#define CU_TRSF_READ_AS_INTEGER                0x01
#define CU_TRSF_NORMALIZED_COORDINATES         0x02
#define CU_TRSF_SRGB                           0x10
#define CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION 0x20
#define CU_TRSF_SEAMLESS_CUBEMAP               0x40
typedef struct CUDA_RESOURCE_DESC_st {
  CUresourcetype resType;
  union {
    struct {
      CUarray hArray;
    } array;
    struct {
      CUmipmappedArray hMipmappedArray;
    } mipmap;
    struct {
      CUdeviceptr devPtr;
      CUarray_format format;
      unsigned int numChannels;
      size_t sizeInBytes;
    } linear;
    struct {
      CUdeviceptr devPtr;
      CUarray_format format;
      unsigned int numChannels;
      size_t width, height, pitchInBytes;
    } pitch2D;
    struct {
      int reserved[32];
    } reserved;
  } res;
  unsigned int flags;
} CUDA_RESOURCE_DESC_v1;
typedef CUDA_RESOURCE_DESC_v1 CUDA_RESOURCE_DESC;
typedef struct CUDA_TEXTURE_DESC_st {
  CUaddress_mode addressMode[3];
  CUfilter_mode filterMode;
  unsigned int flags;
  unsigned int maxAnisotropy;
  CUfilter_mode mipmapFilterMode;
  float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
  float borderColor[4];
  int reserved[12];
} CUDA_TEXTURE_DESC_v1;
typedef CUDA_TEXTURE_DESC_v1 CUDA_TEXTURE_DESC;
typedef enum CUresourceViewFormat_enum { CU_RES_VIEW_FORMAT_NONE = 0x00 } CUresourceViewFormat;
typedef struct CUDA_RESOURCE_VIEW_DESC_st {
  CUresourceViewFormat format;
  size_t width, height, depth;
  unsigned int firstMipmapLevel, lastMipmapLevel, firstLayer, lastLayer;
  unsigned int reserved[16];
} CUDA_RESOURCE_VIEW_DESC_v1;
typedef CUDA_RESOURCE_VIEW_DESC_v1 CUDA_RESOURCE_VIEW_DESC;

#define CU_STREAM_LEGACY               ((CUstream)0x1)
#define CU_STREAM_PER_THREAD           ((CUstream)0x2)
#define CU_STREAM_NON_BLOCKING         0x1
#define CU_EVENT_BLOCKING_SYNC         0x1
#define CU_EVENT_DISABLE_TIMING        0x2
#define CU_EVENT_INTERPROCESS          0x4
#define CU_EVENT_RECORD_EXTERNAL       0x1
#define CU_EVENT_WAIT_EXTERNAL         0x1
#define CU_MEMHOSTALLOC_DEVICEMAP      0x02
#define CU_MEMHOSTREGISTER_PORTABLE    0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP   0x02
#define CU_MEMHOSTREGISTER_IOMEMORY    0x04
#define CU_MEMHOSTREGISTER_READ_ONLY   0x08
#define CU_MEM_ATTACH_GLOBAL           0x1
#define CU_MEM_ATTACH_HOST             0x2
#define CU_MEM_ATTACH_SINGLE           0x4
#define CU_DEVICE_CPU                  ((CUdevice)-1)
#define CU_DEVICE_INVALID              ((CUdevice)-2)
#define CU_LAUNCH_PARAM_END            ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE    ((void *)0x02)
#define CUDA_VERSION_NVCU              13000 /* the driver API version this library reports */

#define CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE 0x1
#define CU_CTX_FLAGS_MASK                     0xff
#define CU_CTX_SCHED_SPIN                     0x01
#define CU_CTX_SCHED_YIELD                    0x02
#define CU_CTX_SCHED_BLOCKING_SYNC            0x04
#define CU_CTX_MAP_HOST                       0x08

#include "functions.h"

#define NVCU_DECLARE_(ret, name, params) ret name params;
NVCU_FUNCTIONS(NVCU_DECLARE_)
NVCU_FUNCTIONS_UNCHECKED(NVCU_DECLARE_)
#undef NVCU_DECLARE_

#endif
