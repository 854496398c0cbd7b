/* Sizes and field offsets of the CUDA structs this library reads (x86-64), checked against our
 * declarations (check_ours.c) and against the toolkit's cuda.h (check_cuda_h.c). */
#ifndef NVCU_LAYOUTS_H
#define NVCU_LAYOUTS_H

#define NVCU_SIZES(X)                                                                              \
  X(CUuuid, 16)                                                                                    \
  X(CUtensorMap, 128)                                                                              \
  X(CUlaunchAttributeValue, 64)                                                                    \
  X(CUlaunchAttribute, 72)                                                                         \
  X(CUlaunchConfig, 56)                                                                            \
  X(CUDA_KERNEL_NODE_PARAMS_v1, 56)                                                                \
  X(CUDA_KERNEL_NODE_PARAMS_v2, 72)                                                                \
  X(CUDA_MEMCPY3D, 200)                                                                            \
  X(CUDA_MEMCPY2D, 128)                                                                            \
  X(CUDA_MEMCPY3D_PEER, 200)                                                                       \
  X(CUmemcpyAttributes, 24)                                                                        \
  X(CUmemcpy3DOperand, 40)                                                                         \
  X(CUDA_MEMCPY3D_BATCH_OP, 112)                                                                   \
  X(CUmemPoolPtrExportData, 64)                                                                    \
  X(CUipcMemHandle, 64)                                                                            \
  X(CUipcEventHandle, 64)                                                                          \
  X(CUexecAffinityParam, 8)                                                                        \
  X(CUDA_ARRAY_DESCRIPTOR, 24)                                                                     \
  X(CUDA_ARRAY3D_DESCRIPTOR, 40)                                                                   \
  X(CUDA_RESOURCE_DESC, 144)                                                                       \
  X(CUDA_TEXTURE_DESC, 104)                                                                        \
  X(CUDA_RESOURCE_VIEW_DESC, 112)                                                                  \
  X(CUDA_MEMSET_NODE_PARAMS, 40)                                                                   \
  X(CUDA_MEMSET_NODE_PARAMS_v2, 48)                                                                \
  X(CUDA_HOST_NODE_PARAMS, 16)                                                                     \
  X(CUDA_MEMCPY_NODE_PARAMS, 216)                                                                  \
  X(CUDA_CHILD_GRAPH_NODE_PARAMS, 16)                                                              \
  X(CUgraphNodeParams, 256)                                                                        \
  X(CUDA_CONDITIONAL_NODE_PARAMS, 32)                                                              \
  X(CUdevResource, 144)                                                                            \
  X(CUdevSmResource, 12)                                                                           \
  X(CUDA_BATCH_MEM_OP_NODE_PARAMS, 32)                                                             \
  X(CUDA_BATCH_MEM_OP_NODE_PARAMS_v2, 32)                                                          \
  X(CUgraphEdgeData, 8)                                                                            \
  X(CUDA_GRAPH_INSTANTIATE_PARAMS, 32)                                                             \
  X(CUgraphExecUpdateResultInfo, 24)                                                               \
  X(CUstreamBatchMemOpParams, 48)                                                                  \
  X(CUaccessPolicyWindow, 32)                                                                      \
  X(CUdevprop, 56)                                                                                 \
  X(CUmemLocation, 8)                                                                              \
  X(CUmemPoolProps, 88)                                                                            \
  X(CUmemAllocationProp, 32)                                                                       \
  X(CUmemAccessDesc, 12)                                                                           \
  X(CUdeviceptr, 8)                                                                                \
  X(CUdevice, 4)                                                                                   \
  X(CUresult, 4)

#define NVCU_OFFSETS(X)                                                                            \
  X(CUlaunchConfig, sharedMemBytes, 24)                                                            \
  X(CUlaunchConfig, hStream, 32)                                                                   \
  X(CUlaunchConfig, attrs, 40)                                                                     \
  X(CUlaunchConfig, numAttrs, 48)                                                                  \
  X(CUlaunchAttribute, value, 8)                                                                   \
  X(CUDA_KERNEL_NODE_PARAMS_v2, kernelParams, 40)                                                  \
  X(CUDA_KERNEL_NODE_PARAMS_v2, extra, 48)                                                         \
  X(CUDA_KERNEL_NODE_PARAMS_v2, kern, 56)                                                          \
  X(CUDA_MEMCPY3D, srcMemoryType, 32)                                                              \
  X(CUDA_MEMCPY3D, srcHost, 40)                                                                    \
  X(CUDA_MEMCPY3D, srcDevice, 48)                                                                  \
  X(CUDA_MEMCPY3D, dstXInBytes, 88)                                                                \
  X(CUDA_MEMCPY3D, dstMemoryType, 120)                                                             \
  X(CUDA_MEMCPY3D, dstDevice, 136)                                                                 \
  X(CUDA_MEMCPY3D, WidthInBytes, 176)                                                              \
  X(CUDA_MEMCPY2D, srcPitch, 48)                                                                   \
  X(CUDA_MEMCPY2D, dstMemoryType, 72)                                                              \
  X(CUDA_MEMCPY2D, dstPitch, 104)                                                                  \
  X(CUDA_ARRAY3D_DESCRIPTOR, Format, 24)                                                           \
  X(CUDA_ARRAY3D_DESCRIPTOR, Flags, 32)                                                            \
  X(CUDA_RESOURCE_DESC, res, 8)                                                                    \
  X(CUDA_RESOURCE_DESC, res.pitch2D.pitchInBytes, 40)                                              \
  X(CUDA_RESOURCE_DESC, flags, 136)                                                                \
  X(CUDA_TEXTURE_DESC, filterMode, 12)                                                             \
  X(CUDA_TEXTURE_DESC, borderColor, 40)                                                            \
  X(CUDA_RESOURCE_VIEW_DESC, firstLayer, 40)                                                       \
  X(CUDA_MEMSET_NODE_PARAMS, value, 16)                                                            \
  X(CUDA_MEMSET_NODE_PARAMS, elementSize, 20)                                                      \
  X(CUDA_MEMSET_NODE_PARAMS, width, 24)                                                            \
  X(CUgraphNodeParams, kernel, 16)                                                                 \
  X(CUgraphNodeParams, reserved2, 248)                                                             \
  X(CUgraphNodeParams, conditional, 16)                                                            \
  X(CUDA_CONDITIONAL_NODE_PARAMS, size, 12)                                                        \
  X(CUDA_CONDITIONAL_NODE_PARAMS, phGraph_out, 16)                                                 \
  X(CUDA_CONDITIONAL_NODE_PARAMS, ctx, 24)                                                         \
  X(CUdevResource, sm, 96)                                                                         \
  X(CUdevResource, sm.smCoscheduledAlignment, 104)                                                 \
  X(CUDA_BATCH_MEM_OP_NODE_PARAMS, paramArray, 16)                                                 \
  X(CUDA_BATCH_MEM_OP_NODE_PARAMS, flags, 24)                                                      \
  X(CUgraphNodeParams, memOp, 16)                                                                  \
  X(CUDA_MEMCPY_NODE_PARAMS, copyParams, 16)                                                       \
  X(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out, 24)                                                 \
  X(CUgraphExecUpdateResultInfo, errorFromNode, 16)                                                \
  X(CUstreamBatchMemOpParams, waitValue.address, 8)                                                \
  X(CUstreamBatchMemOpParams, waitValue.value64, 16)                                               \
  X(CUstreamBatchMemOpParams, waitValue.flags, 24)                                                 \
  X(CUstreamBatchMemOpParams, writeValue.flags, 24)                                                \
  X(CUstreamBatchMemOpParams, memoryBarrier.flags, 4)                                              \
  X(CUaccessPolicyWindow, hitRatio, 16)                                                            \
  X(CUdevprop, clockRate, 48)                                                                      \
  X(CUmemPoolProps, location, 8)                                                                   \
  X(CUmemPoolProps, maxSize, 24)                                                                   \
  X(CUmemPoolProps, usage, 32)

#define NVCU_SIZE_CHECK_(type, size) _Static_assert(sizeof(type) == (size), "size of " #type);
#define NVCU_OFFSET_CHECK_(type, field, offset)                                                    \
  _Static_assert(offsetof(type, field) == (offset), "offset of " #type "." #field);

#endif
