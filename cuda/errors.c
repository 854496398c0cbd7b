/* cuGetErrorName and cuGetErrorString: every CUresult's name and the description NVIDIA's library
 * gives it. */
#include "internal.h"

static const char *error_name(CUresult e) {
  switch (e) {
#define NVCU_NAME_(name, value)                                                                    \
  case name:                                                                                       \
    return #name;
    CU_RESULT_LIST(NVCU_NAME_)
#undef NVCU_NAME_
  default:
    return NULL;
  }
}

/* The texts are what cuGetErrorString of NVIDIA's library (driver 580.159.04) returned for each
 * code, read with tests/cuda/cuda_facts.c on an H100 (2026-12-06): programs print them, and logs
 * and scripts that match on them read the same with either library. */
static const char *error_text(CUresult e) {
  switch (e) {
  case CUDA_SUCCESS:
    return "no error";
  case CUDA_ERROR_INVALID_VALUE:
    return "invalid argument";
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case CUDA_ERROR_NOT_INITIALIZED:
    return "initialization error";
  case CUDA_ERROR_DEINITIALIZED:
    return "driver shutting down";
  case CUDA_ERROR_PROFILER_DISABLED:
    return "profiler disabled while using external profiling tool";
  case CUDA_ERROR_PROFILER_NOT_INITIALIZED:
    return "profiler not initialized: call cudaProfilerInitialize()";
  case CUDA_ERROR_PROFILER_ALREADY_STARTED:
    return "profiler already started";
  case CUDA_ERROR_PROFILER_ALREADY_STOPPED:
    return "profiler already stopped";
  case CUDA_ERROR_STUB_LIBRARY:
    return "CUDA driver is a stub library";
  case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    return "API call is not supported in the installed CUDA driver";
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
    return "CUDA-capable device(s) is/are busy or unavailable";
  case CUDA_ERROR_NO_DEVICE:
    return "no CUDA-capable device is detected";
  case CUDA_ERROR_INVALID_DEVICE:
    return "invalid device ordinal";
  case CUDA_ERROR_DEVICE_NOT_LICENSED:
    return "device doesn't have valid Grid license";
  case CUDA_ERROR_INVALID_IMAGE:
    return "device kernel image is invalid";
  case CUDA_ERROR_INVALID_CONTEXT:
    return "invalid device context";
  case CUDA_ERROR_CONTEXT_ALREADY_CURRENT:
    return "context already current";
  case CUDA_ERROR_MAP_FAILED:
    return "mapping of buffer object failed";
  case CUDA_ERROR_UNMAP_FAILED:
    return "unmapping of buffer object failed";
  case CUDA_ERROR_ARRAY_IS_MAPPED:
    return "array is mapped";
  case CUDA_ERROR_ALREADY_MAPPED:
    return "resource already mapped";
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    return "no kernel image is available for execution on the device";
  case CUDA_ERROR_ALREADY_ACQUIRED:
    return "resource already acquired";
  case CUDA_ERROR_NOT_MAPPED:
    return "resource not mapped";
  case CUDA_ERROR_NOT_MAPPED_AS_ARRAY:
    return "resource not mapped as array";
  case CUDA_ERROR_NOT_MAPPED_AS_POINTER:
    return "resource not mapped as pointer";
  case CUDA_ERROR_ECC_UNCORRECTABLE:
    return "uncorrectable ECC error encountered";
  case CUDA_ERROR_UNSUPPORTED_LIMIT:
    return "limit is not supported on this architecture";
  case CUDA_ERROR_CONTEXT_ALREADY_IN_USE:
    return "exclusive-thread device already in use by a different thread";
  case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    return "peer access is not supported between these two devices";
  case CUDA_ERROR_INVALID_PTX:
    return "a PTX JIT compilation failed";
  case CUDA_ERROR_INVALID_GRAPHICS_CONTEXT:
    return "invalid OpenGL or DirectX context";
  case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    return "uncorrectable NVLink error detected during the execution";
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    return "PTX JIT compiler library not found";
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    return "the provided PTX was compiled with an unsupported toolchain.";
  case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    return "PTX JIT compilation was disabled";
  case CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY:
    return "the provided execution affinity is not supported";
  case CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC:
    return "the provided PTX contains unsupported call to cudaDeviceSynchronize";
  case CUDA_ERROR_CONTAINED:
    return "Invalid access of peer GPU memory over nvlink or a hardware error";
  case CUDA_ERROR_INVALID_SOURCE:
    return "device kernel image is invalid";
  case CUDA_ERROR_FILE_NOT_FOUND:
    return "file not found";
  case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    return "shared object symbol not found";
  case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    return "shared object initialization failed";
  case CUDA_ERROR_OPERATING_SYSTEM:
    return "OS call failed or operation not supported on this OS";
  case CUDA_ERROR_INVALID_HANDLE:
    return "invalid resource handle";
  case CUDA_ERROR_ILLEGAL_STATE:
    return "the operation cannot be performed in the present state";
  case CUDA_ERROR_LOSSY_QUERY:
    return "attempted introspection would be semantically lossy";
  case CUDA_ERROR_NOT_FOUND:
    return "named symbol not found";
  case CUDA_ERROR_NOT_READY:
    return "device not ready";
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    return "an illegal memory access was encountered";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return "too many resources requested for launch";
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return "the launch timed out and was terminated";
  case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
    return "launch uses incompatible texturing mode";
  case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
    return "peer access is already enabled";
  case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
    return "peer access has not been enabled";
  case CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE:
    return "cannot set while device is active in this process";
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    return "context is destroyed";
  case CUDA_ERROR_ASSERT:
    return "device-side assert triggered";
  case CUDA_ERROR_TOO_MANY_PEERS:
    return "peer mapping resources exhausted";
  case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    return "part or all of the requested memory range is already mapped";
  case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
    return "pointer does not correspond to a registered memory region";
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
    return "hardware stack error";
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    return "an illegal instruction was encountered";
  case CUDA_ERROR_MISALIGNED_ADDRESS:
    return "misaligned address";
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    return "operation not supported on global/shared address space";
  case CUDA_ERROR_INVALID_PC:
    return "invalid program counter";
  case CUDA_ERROR_LAUNCH_FAILED:
    return "unspecified launch failure";
  case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    return "too many blocks in cooperative launch";
  case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    return "tensor memory not completely freed";
  case CUDA_ERROR_NOT_PERMITTED:
    return "operation not permitted";
  case CUDA_ERROR_NOT_SUPPORTED:
    return "operation not supported";
  case CUDA_ERROR_SYSTEM_NOT_READY:
    return "system not yet initialized";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "system has unsupported display driver / cuda driver combination";
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return "forward compatibility was attempted on non supported HW";
  case CUDA_ERROR_MPS_CONNECTION_FAILED:
    return "MPS client failed to connect to the MPS control daemon or the MPS server";
  case CUDA_ERROR_MPS_RPC_FAILURE:
    return "the remote procedural call between the MPS server and the MPS client failed";
  case CUDA_ERROR_MPS_SERVER_NOT_READY:
    return "MPS server is not ready to accept new MPS client requests";
  case CUDA_ERROR_MPS_MAX_CLIENTS_REACHED:
    return "the hardware resources required to create MPS client have been exhausted";
  case CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED:
    return "the hardware resources required to support device connections have been exhausted";
  case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    return "the MPS client has been terminated by the server";
  case CUDA_ERROR_CDP_NOT_SUPPORTED:
    return "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not "
           "support it";
  case CUDA_ERROR_CDP_VERSION_MISMATCH:
    return "unsupported interaction between different versions of CUDA Dynamic Parallelism";
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    return "operation not permitted when stream is capturing";
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    return "operation failed due to a previous error during capture";
  case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    return "operation would result in a merge of separate capture sequences";
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    return "capture was not ended in the same stream as it began";
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    return "capturing stream has unjoined work";
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    return "dependency created on uncaptured work in another stream";
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    return "operation would make the legacy stream depend on a capturing blocking stream";
  case CUDA_ERROR_CAPTURED_EVENT:
    return "operation not permitted on an event last recorded in a capturing stream";
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    return "attempt to terminate a thread-local capture sequence from another thread";
  case CUDA_ERROR_TIMEOUT:
    return "wait operation timed out";
  case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
    return "the graph update was not performed because it included changes which violated "
           "constraints specific to instantiated graph update";
  case CUDA_ERROR_EXTERNAL_DEVICE:
    return "an async error has occured in external entity outside of CUDA";
  case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    return "a kernel launch error has occurred due to cluster misconfiguration";
  case CUDA_ERROR_FUNCTION_NOT_LOADED:
    return "the function handle is not loaded when calling an API that requires a loaded function";
  case CUDA_ERROR_INVALID_RESOURCE_TYPE:
    return "one or more resources passed in are not valid resource types for the operation";
  case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION:
    return "one or more resources are insufficient or non-applicable for the operation";
  case CUDA_ERROR_KEY_ROTATION:
    return "an error happened during the key rotation sequence";
  case CUDA_ERROR_UNKNOWN:
    return "unknown error";
  default:
    return NULL;
  }
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error_text(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error_name(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
