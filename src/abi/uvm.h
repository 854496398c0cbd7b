/* UVM (/dev/nvidia-uvm) ioctl numbers and parameter structures: our own definitions of the facts
 * in NVIDIA's open kernel modules (kernel-open/nvidia-uvm), pinned by _Static_assert. Data only. */
#ifndef NVHCQ_ABI_UVM_H
#define NVHCQ_ABI_UVM_H

#include "abi/rm.h"

enum {
  UVM_INITIALIZE = 0x30000001,
  UVM_DEINITIALIZE = 0x30000002,
  UVM_REGISTER_GPU_VASPACE = 25,
  UVM_UNREGISTER_GPU_VASPACE = 26,
  UVM_REGISTER_CHANNEL = 27,
  UVM_UNREGISTER_CHANNEL = 28,
  UVM_ENABLE_PEER_ACCESS = 29,
  UVM_DISABLE_PEER_ACCESS = 30,
  UVM_MAP_EXTERNAL_ALLOCATION = 33,
  UVM_FREE = 34,
  UVM_REGISTER_GPU = 37,
  UVM_UNREGISTER_GPU = 38,
  UVM_CREATE_EXTERNAL_RANGE = 73,
  UVM_MM_INITIALIZE = 75,
  /* On /dev/nvidia-uvm-tools. */
  UVM_TOOLS_INIT_EVENT_TRACKER = 56,
  UVM_TOOLS_SET_NOTIFICATION_THRESHOLD = 57,
  UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS = 58,
};

typedef struct {
  uint8_t uuid[16];
} nvhcq_uuid;

typedef struct {
  uint64_t flags;
  uint32_t rmStatus, pad;
} UVM_INITIALIZE_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_INITIALIZE_PARAMS, 16);

typedef struct {
  int32_t uvmFd;
  uint32_t rmStatus;
} UVM_MM_INITIALIZE_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_MM_INITIALIZE_PARAMS, 8);

typedef struct {
  nvhcq_uuid gpu_uuid;
  uint8_t numaEnabled, pad[3];
  int32_t numaNodeId, rmCtrlFd;
  uint32_t hClient, hSmcPartRef, rmStatus;
} UVM_REGISTER_GPU_PARAMS;

/* UVM_ENABLE_PEER_ACCESS / UVM_DISABLE_PEER_ACCESS: two GPUs registered in the same UVM address
 * space may then map each other's memory. */
typedef struct {
  nvhcq_uuid gpuUuidA, gpuUuidB;
  uint32_t rmStatus;
} UVM_ENABLE_PEER_ACCESS_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_ENABLE_PEER_ACCESS_PARAMS, 36);
NVHCQ_ASSERT_LAYOUT(UVM_REGISTER_GPU_PARAMS, 40);
NVHCQ_ASSERT_OFFSET(UVM_REGISTER_GPU_PARAMS, rmCtrlFd, 24);

typedef struct {
  nvhcq_uuid gpu_uuid;
  uint32_t rmStatus;
} UVM_UNREGISTER_GPU_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_UNREGISTER_GPU_PARAMS, 20);

typedef struct {
  nvhcq_uuid gpuUuid;
  int32_t rmCtrlFd;
  uint32_t hClient, hVaSpace, rmStatus;
} UVM_REGISTER_GPU_VASPACE_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_REGISTER_GPU_VASPACE_PARAMS, 32);

typedef struct {
  nvhcq_uuid gpuUuid;
  uint32_t rmStatus;
} UVM_UNREGISTER_GPU_VASPACE_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_UNREGISTER_GPU_VASPACE_PARAMS, 20);

typedef struct {
  nvhcq_uuid gpuUuid;
  int32_t rmCtrlFd;
  uint32_t hClient, hChannel, pad0;
  uint64_t base, length;
  uint32_t rmStatus, pad1;
} UVM_REGISTER_CHANNEL_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_REGISTER_CHANNEL_PARAMS, 56);
NVHCQ_ASSERT_OFFSET(UVM_REGISTER_CHANNEL_PARAMS, base, 32);

typedef struct {
  nvhcq_uuid gpuUuid;
  int32_t rmCtrlFd;
  uint32_t hClient, hChannel, rmStatus;
} UVM_UNREGISTER_CHANNEL_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_UNREGISTER_CHANNEL_PARAMS, 32);

typedef struct {
  uint64_t base, length;
  uint32_t rmStatus, pad;
} UVM_CREATE_EXTERNAL_RANGE_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_CREATE_EXTERNAL_RANGE_PARAMS, 24);

typedef struct {
  nvhcq_uuid gpuUuid;
  uint32_t gpuMappingType, gpuCachingType, gpuFormatType, gpuElementBits, gpuCompressionType;
} UvmGpuMappingAttributes;
NVHCQ_ASSERT_LAYOUT(UvmGpuMappingAttributes, 36);
#define UVM_GPU_MAPPING_TYPE_READ_WRITE_ATOMIC 1u

typedef struct {
  uint64_t base, length, offset;
  UvmGpuMappingAttributes perGpuAttributes[256];
  uint64_t gpuAttributesCount;
  int32_t rmCtrlFd;
  uint32_t hClient, hMemory, rmStatus;
} UVM_MAP_EXTERNAL_ALLOCATION_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, 9264);
NVHCQ_ASSERT_OFFSET(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, gpuAttributesCount, 9240);

/* UVM_FREE: 24 bytes (base, length, status@16) up to 580; 16 bytes (base, status@8) from 590. */
typedef struct {
  uint64_t base, length;
  uint32_t rmStatus, pad;
} UVM_FREE_PARAMS_580;
NVHCQ_ASSERT_LAYOUT(UVM_FREE_PARAMS_580, 24);
typedef struct {
  uint64_t base;
  uint32_t rmStatus, pad;
} UVM_FREE_PARAMS_590;
NVHCQ_ASSERT_LAYOUT(UVM_FREE_PARAMS_590, 16);

/* ---- tools events: UVM reports the faults it handles (SM faults in our fault-capable address
 * space among them) into a ring in our memory ---- */

typedef struct {
  uint64_t queueBuffer;     /* page-aligned ring of events */
  uint64_t queueBufferSize; /* entries, a power of two */
  uint64_t controlBuffer;   /* page-aligned UVM_TOOLS_EVENT_CONTROL */
  nvhcq_uuid processor;
  uint32_t allProcessors;
  int32_t uvmFd; /* an initialized /dev/nvidia-uvm of this process: whose faults to report */
  uint32_t rmStatus, pad;
} UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS, 56);
NVHCQ_ASSERT_OFFSET(UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS, uvmFd, 44);

typedef struct {
  uint32_t notificationThreshold, rmStatus;
} UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS, 8);

typedef struct {
  uint64_t eventTypeFlags; /* bit n enables event type n */
  uint32_t rmStatus, pad;
} UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS;
NVHCQ_ASSERT_LAYOUT(UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS, 16);

/* Ring indexes are entries modulo the size; UVM writes put_*, the reader get_*. */
typedef struct {
  uint32_t get_ahead, get_behind, put_ahead, put_behind;
  uint64_t dropped[64];
} UVM_TOOLS_EVENT_CONTROL;
NVHCQ_ASSERT_LAYOUT(UVM_TOOLS_EVENT_CONTROL, 528);

#define UVM_TOOLS_EVENT_ENTRY_BYTES 64 /* version 1 entries */
enum {
  UVM_EVENT_TYPE_GPU_FAULT = 3,
  UVM_EVENT_TYPE_FATAL_FAULT = 6,
};

/* Event type 3, one per faulting access UVM sees. */
typedef struct {
  uint8_t eventType, faultType, accessType, gpuIndex;
  uint16_t gpcOrChannelId, clientId;
  uint64_t address, timeStamp, timeStampGpu;
  uint32_t batchId;
  uint8_t clientType, pad0[3]; /* 1: GPC (the SMs), 2: HUB (copy engines, host) */
} UVM_EVENT_GPU_FAULT;
NVHCQ_ASSERT_LAYOUT(UVM_EVENT_GPU_FAULT, 40);

/* Event type 6: a fault UVM could not service; the channel is stopped after it. */
typedef struct {
  uint8_t eventType, faultType, accessType, processorIndex, reason, pad0[3];
  uint64_t address;   /* aligned down to the CPU page */
  uint64_t timeStamp; /* CLOCK_MONOTONIC_RAW, ns */
} UVM_EVENT_FATAL_FAULT;
NVHCQ_ASSERT_LAYOUT(UVM_EVENT_FATAL_FAULT, 24);

#endif
