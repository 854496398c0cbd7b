/* Resource-manager (RM) escape numbers, classes, controls and parameter structures.
 * Our own definitions of the facts in NVIDIA's open kernel modules (580 branch unless a comment
 * names another); every layout is pinned by _Static_assert below. Data only. */
#ifndef NVHCQ_ABI_RM_H
#define NVHCQ_ABI_RM_H

#include <stddef.h>
#include <stdint.h>

#define NVHCQ_ASSERT_LAYOUT(type, size) _Static_assert(sizeof(type) == (size), #type " size")
#define NVHCQ_ASSERT_OFFSET(type, member, off)                                                     \
  _Static_assert(offsetof(type, member) == (off), #type "." #member " offset")

/* ioctl request for an RM escape: _IOWR('F', nr, size). */
#define NV_IOCTL_MAGIC 0x46u
#define NV_IOWR(nr, size)                                                                          \
  ((3ul << 30) | (((unsigned long)(size)&0x1fffu) << 16) | (NV_IOCTL_MAGIC << 8) | ((nr)&0xffu))

/* Escape numbers. */
enum {
  NV_ESC_RM_ALLOC_MEMORY = 0x27,
  NV_ESC_RM_FREE = 0x29,
  NV_ESC_RM_CONTROL = 0x2a,
  NV_ESC_RM_ALLOC = 0x2b,
  NV_ESC_RM_DUP_OBJECT = 0x34,
  NV_ESC_RM_SHARE = 0x35,
  NV_ESC_RM_MAP_MEMORY = 0x4e,
  NV_ESC_RM_UNMAP_MEMORY = 0x4f,
  NV_ESC_RM_MAP_MEMORY_DMA = 0x57,
  NV_ESC_RM_UNMAP_MEMORY_DMA = 0x58,
  NV_ESC_CARD_INFO = 0xc8,
  NV_ESC_REGISTER_FD = 0xc9,
  NV_ESC_CHECK_VERSION_STR = 0xd2,
};

/* NV_STATUS values nvhcq reacts to (names of all are in names.c). */
#define NV_ERR_INVALID_ADDRESS 0x1eu

/* Classes. */
enum {
  NV01_ROOT_CLIENT = 0x41,
  NV01_DEVICE_0 = 0x80,
  NV20_SUBDEVICE_0 = 0x2080,
  NV01_MEMORY_SYSTEM = 0x3e,
  NV01_MEMORY_LOCAL_USER = 0x40,
  NV01_MEMORY_SYSTEM_OS_DESCRIPTOR = 0x71,
  NV50_MEMORY_VIRTUAL = 0x50a0, /* a range of an RM-managed address space */
  FERMI_VASPACE_A = 0x90f1,
  FERMI_CONTEXT_SHARE_A = 0x9067,
  KEPLER_CHANNEL_GROUP_A = 0xa06c,
  GT200_DEBUGGER = 0x83de,
  TURING_USERMODE_A = 0xc461,
  AMPERE_USERMODE_A = 0xc561,
  HOPPER_USERMODE_A = 0xc661,
  BLACKWELL_USERMODE_A = 0xc761,
  AMPERE_CHANNEL_GPFIFO_A = 0xc56f,
  HOPPER_CHANNEL_GPFIFO_A = 0xc86f,
  BLACKWELL_CHANNEL_GPFIFO_A = 0xc96f,
  BLACKWELL_CHANNEL_GPFIFO_B = 0xca6f,
  AMPERE_COMPUTE_A = 0xc6c0,
  AMPERE_COMPUTE_B = 0xc7c0,
  ADA_COMPUTE_A = 0xc9c0,
  HOPPER_COMPUTE_A = 0xcbc0,
  BLACKWELL_COMPUTE_A = 0xcdc0,
  BLACKWELL_COMPUTE_B = 0xcec0,
  AMPERE_DMA_COPY_A = 0xc6b5,
  AMPERE_DMA_COPY_B = 0xc7b5,
  HOPPER_DMA_COPY_A = 0xc8b5,
  BLACKWELL_DMA_COPY_A = 0xc9b5,
  BLACKWELL_DMA_COPY_B = 0xcab5,
};

/* Control commands. */
enum {
  NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 = 0x13e,
  NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 = 0x205,
  NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX = 0x13a,
  NV0080_CTRL_CMD_GPU_GET_CLASSLIST = 0x800201,
  NV2080_CTRL_CMD_GPU_GET_NAME_STRING = 0x20800110,
  NV2080_CTRL_CMD_GPU_GET_GID_INFO = 0x2080014a,
  NV2080_CTRL_CMD_GR_GET_INFO = 0x20801201,
  NV2080_CTRL_CMD_FB_GET_INFO_V2 = 0x20801303,
  NVA06C_CTRL_CMD_GPFIFO_SCHEDULE = 0xa06c0101,
  NVA06F_CTRL_CMD_GPFIFO_SCHEDULE = 0xa06f0103,
  NV2080_CTRL_CMD_PERF_BOOST = 0x2080200a,
  NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN = 0xc36f0108,
  NV2080_CTRL_CMD_GR_GET_GPC_MASK = 0x2080122a,
  NV2080_CTRL_CMD_GR_GET_TPC_MASK = 0x2080122b,
  NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE = 0x20801210,
  NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK = 0x83de0309,
  NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES = 0x83de030c,
  NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO = 0x83de0328,
  NV906F_CTRL_CMD_GET_MMU_FAULT_INFO = 0x906f0106,
  NV906F_CTRL_CMD_RESET_CHANNEL = 0x906f0102,
  NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK = 0x20802a02,
  NV2080_CTRL_CMD_CE_GET_ALL_CAPS = 0x20802a0a,
  NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD = 0x3d05,
  NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD = 0x3d06,
  NV0041_CTRL_CMD_GET_SURFACE_INFO = 0x410110,
  NV2080_CTRL_CMD_BUS_GET_PCI_INFO = 0x20801801,
};

/* GR info indexes. */
enum {
  NV2080_CTRL_GR_INFO_INDEX_SM_VERSION = 0x0c,
  NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM = 0x0d,
  NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS = 0x14,
  NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC = 0x17,
  NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC = 0x20,
  NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT = 0x1d,
  NV2080_CTRL_GR_INFO_INDEX_SHADER_PIPE_COUNT = 0x07,
};

/* FB info indexes (values in KiB, except the bus width in bits and the L2 size in bytes). */
enum {
  NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE = 0x07,
  NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE = 0x08,
  NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE = 0x09,
  NV2080_CTRL_FB_INFO_INDEX_BUS_WIDTH = 0x0b,
  NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE = 0x16,
  NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE = 0x1b,
};

/* NV_MEMORY_ALLOCATION_PARAMS attribute fields (NVOS32_ATTR*). */
#define NVOS32_ATTR_PAGE_SIZE_SHIFT             23
#define NVOS32_ATTR_PAGE_SIZE_BIG               2u
#define NVOS32_ATTR_PAGE_SIZE_HUGE              3u
#define NVOS32_ATTR_LOCATION_SHIFT              25
#define NVOS32_ATTR_LOCATION_PCI                1u
#define NVOS32_ATTR_PHYSICALITY_SHIFT           27
#define NVOS32_ATTR_PHYSICALITY_CONTIGUOUS      2u
#define NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIG 3u
#define NVOS32_ATTR2_ZBC_PREFER_NO_ZBC          1u
#define NVOS32_ATTR2_GPU_CACHEABLE_SHIFT        2
#define NVOS32_ATTR2_GPU_CACHEABLE_YES          1u
#define NVOS32_ATTR2_GPU_CACHEABLE_NO           2u
#define NVOS32_ATTR2_PAGE_SIZE_HUGE_SHIFT       20
#define NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB         1u
#define NVOS32_ALLOC_FLAGS_VIDMEM               0x1c101u /* map-not-required, handle, align, bank, persistent */
#define NVOS32_ALLOC_FLAGS_SYSMEM               0x0c101u /* the same without persistent */
/* A range of GPU addresses (NV50_MEMORY_VIRTUAL) at the given offset, aligned as asked. */
#define NVOS32_ALLOC_FLAGS_VIRTUAL_FIXED 0x00080110u /* virtual, fixed address, align force */
#define NVOS32_ATTR_PAGE_SIZE_4KB        1u
#define NVOS32_TYPE_IMAGE                0u
#define NVOS32_TYPE_NOTIFIER             13u
/* NVOS02 flags for pinning host pages: noncontiguous, cached, not mapped by RM. */
#define NVOS02_FLAGS_PINNED_HOST 0x40001010u

/* NV_ESC_RM_MAP_MEMORY_DMA: maps memory into a range of GPU addresses (sdk nvos.h). 580 and
 * later added flags2 and kindOverride; 570's is the shorter layout. */
typedef struct {
  uint32_t hClient, hDevice, hDma, hMemory;
  uint64_t offset, length;
  uint32_t flags, flags2, kindOverride, pad0;
  uint64_t dmaOffset;
  uint32_t status, pad1;
} NVOS46_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS46_PARAMETERS, 64);
NVHCQ_ASSERT_OFFSET(NVOS46_PARAMETERS, dmaOffset, 48);
NVHCQ_ASSERT_OFFSET(NVOS46_PARAMETERS, status, 56);
typedef struct {
  uint32_t hClient, hDevice, hDma, hMemory;
  uint64_t offset, length;
  uint32_t flags, pad0;
  uint64_t dmaOffset;
  uint32_t status, pad1;
} NVOS46_PARAMETERS_570;
NVHCQ_ASSERT_LAYOUT(NVOS46_PARAMETERS_570, 56);
NVHCQ_ASSERT_OFFSET(NVOS46_PARAMETERS_570, dmaOffset, 40);
NVHCQ_ASSERT_OFFSET(NVOS46_PARAMETERS_570, status, 48);
/* NVOS46 flags: page size 11:8 (1 4 KiB, 4 huge), cache snoop 4:4 (for system memory; ignored
 * for video memory). */
#define NVOS46_FLAGS_PAGE_SIZE_4KB  (1u << 8)
#define NVOS46_FLAGS_PAGE_SIZE_BIG  (2u << 8)
#define NVOS46_FLAGS_PAGE_SIZE_HUGE (4u << 8)
#define NVOS46_FLAGS_CACHE_SNOOP    (1u << 4)

/* NV_ESC_RM_UNMAP_MEMORY_DMA, the same on every branch. */
typedef struct {
  uint32_t hClient, hDevice, hDma, hMemory, flags, pad0;
  uint64_t dmaOffset, size;
  uint32_t status, pad1;
} NVOS47_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS47_PARAMETERS, 48);
NVHCQ_ASSERT_OFFSET(NVOS47_PARAMETERS, dmaOffset, 24);
NVHCQ_ASSERT_OFFSET(NVOS47_PARAMETERS, status, 40);

typedef struct {
  uint32_t hRoot, hObjectParent, hObjectOld, status;
} NVOS00_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS00_PARAMETERS, 16);

/* NV_ESC_RM_DUP_OBJECT (nvos.h NVOS55): a new handle in hClient under hParent for object
 * hObjectSrc of client hClientSrc (another process's client, where its share policy allows).
 * hObject 0: RM picks the new handle. */
typedef struct {
  uint32_t hClient, hParent, hObject, hClientSrc, hObjectSrc, flags, status;
} NVOS55_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS55_PARAMETERS, 28);

/* NV_ESC_RM_SHARE (nvos.h NVOS57; RS_SHARE_POLICY from rs_access.h): whom else an object may be
 * duplicated by. OS_SECURITY_TOKEN: clients of the same user; COMPOSE adds to the policies. */
typedef struct {
  uint32_t target;
  uint32_t access_mask; /* RS_ACCESS_MASK's one limb: bit RS_ACCESS_* */
  uint16_t type;        /* RS_SHARE_TYPE_* */
  uint8_t action;       /* RS_SHARE_ACTION_FLAG_* */
  uint8_t pad;
} RS_SHARE_POLICY;
typedef struct {
  uint32_t hClient, hObject;
  RS_SHARE_POLICY policy;
  uint32_t status;
} NVOS57_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS57_PARAMETERS, 24);
NVHCQ_ASSERT_OFFSET(NVOS57_PARAMETERS, status, 20);
#define RS_ACCESS_DUP_OBJECT            0u
#define RS_SHARE_TYPE_OS_SECURITY_TOKEN 2u
#define RS_SHARE_ACTION_FLAG_COMPOSE    (1u << 2)

typedef struct {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass, flags;
  uint32_t pad0;
  uint64_t pMemory, limit;
  uint32_t status, pad1;
} NVOS02_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS02_PARAMETERS, 48);
NVHCQ_ASSERT_OFFSET(NVOS02_PARAMETERS, pMemory, 24);
NVHCQ_ASSERT_OFFSET(NVOS02_PARAMETERS, status, 40);

typedef struct {
  NVOS02_PARAMETERS params;
  int32_t fd;
  uint32_t pad;
} nv_ioctl_nvos02_parameters_with_fd;
NVHCQ_ASSERT_LAYOUT(nv_ioctl_nvos02_parameters_with_fd, 56);

typedef struct {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms;
  uint32_t paramsSize, status;
} NVOS21_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS21_PARAMETERS, 32);

typedef struct {
  uint32_t hClient, hDevice, hMemory, pad0;
  uint64_t offset, length, pLinearAddress;
  uint32_t status, flags;
} NVOS33_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS33_PARAMETERS, 48);
NVHCQ_ASSERT_OFFSET(NVOS33_PARAMETERS, status, 40);

typedef struct {
  NVOS33_PARAMETERS params;
  int32_t fd;
  uint32_t pad;
} nv_ioctl_nvos33_parameters_with_fd;
NVHCQ_ASSERT_LAYOUT(nv_ioctl_nvos33_parameters_with_fd, 56);

typedef struct {
  uint32_t hClient, hDevice, hMemory, pad0;
  uint64_t pLinearAddress;
  uint32_t status, flags;
} NVOS34_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS34_PARAMETERS, 32);

typedef struct {
  uint32_t hClient, hObject, cmd, flags;
  uint64_t params;
  uint32_t paramsSize, status;
} NVOS54_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVOS54_PARAMETERS, 32);

typedef struct {
  uint8_t valid;
  uint8_t pad0[3];
  uint32_t domain;
  uint8_t bus, slot, function, pad1;
  uint16_t vendor_id, device_id;
  uint32_t gpu_id;
  uint16_t interrupt_line;
  uint8_t pad2[2];
  uint64_t reg_address, reg_size, fb_address, fb_size;
  uint32_t minor_number;
  char dev_name[10];
  uint8_t pad3[2];
} nv_ioctl_card_info_t;
NVHCQ_ASSERT_LAYOUT(nv_ioctl_card_info_t, 72);
NVHCQ_ASSERT_OFFSET(nv_ioctl_card_info_t, gpu_id, 16);
NVHCQ_ASSERT_OFFSET(nv_ioctl_card_info_t, minor_number, 56);
#define NV_MAX_CARDS 64

typedef struct {
  int32_t ctl_fd;
} nv_ioctl_register_fd_t;
NVHCQ_ASSERT_LAYOUT(nv_ioctl_register_fd_t, 4);

typedef struct {
  uint32_t owner, type, flags, width, height;
  int32_t pitch;
  uint32_t attr, attr2, format, comprCovg, zcullCovg, pad0;
  uint64_t rangeLo, rangeHi, size, alignment, offset, limit, address;
  uint32_t ctagOffset, hVASpace, internalflags, tag, numaNode, pad1;
} NV_MEMORY_ALLOCATION_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV_MEMORY_ALLOCATION_PARAMS, 128);
NVHCQ_ASSERT_OFFSET(NV_MEMORY_ALLOCATION_PARAMS, rangeLo, 48);
NVHCQ_ASSERT_OFFSET(NV_MEMORY_ALLOCATION_PARAMS, numaNode, 120);

typedef struct {
  uint32_t deviceId, hClientShare, hTargetClient, hTargetDevice, flags, pad0;
  uint64_t vaSpaceSize, vaStartInternal, vaLimitInternal;
  uint32_t vaMode, pad1;
} NV0080_ALLOC_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV0080_ALLOC_PARAMETERS, 56);
NVHCQ_ASSERT_OFFSET(NV0080_ALLOC_PARAMETERS, vaMode, 48);
#define NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES 2u

typedef struct {
  uint32_t subDeviceId;
} NV2080_ALLOC_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV2080_ALLOC_PARAMETERS, 4);

/* 56 bytes from 580 on (pasid added); 48 on 570. */
typedef struct {
  uint32_t index, flags;
  uint64_t vaSize, vaStartInternal, vaLimitInternal;
  uint32_t bigPageSize, pad0;
  uint64_t vaBase;
  uint32_t pasid, pad1;
} NV_VASPACE_ALLOCATION_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV_VASPACE_ALLOCATION_PARAMETERS, 56);
NVHCQ_ASSERT_OFFSET(NV_VASPACE_ALLOCATION_PARAMETERS, vaBase, 40);
#define NV_VASPACE_FLAGS_NVHCQ 0x48u /* externally owned | enable page faulting */

typedef struct {
  uint32_t hObjectError, hObjectEccError, hVASpace, engineType;
  uint8_t bIsCallingContextVgpuPlugin, pad[3];
} NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, 20);
#define NV2080_ENGINE_TYPE_GRAPHICS 1u

typedef struct {
  uint32_t hVASpace, flags, subctxId;
} NV_CTXSHARE_ALLOCATION_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV_CTXSHARE_ALLOCATION_PARAMETERS, 12);
#define NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC 1u

typedef struct {
  uint64_t base, size;
  uint32_t addressSpace, cacheAttrib;
} NV_MEMORY_DESC_PARAMS;

typedef struct {
  uint32_t hObjectError, hObjectBuffer;
  uint64_t gpFifoOffset;
  uint32_t gpFifoEntries, flags, hContextShare, hVASpace;
  uint32_t hUserdMemory[8];
  uint64_t userdOffset[8];
  uint32_t engineType, cid, subDeviceId, hObjectEccError;
  NV_MEMORY_DESC_PARAMS instanceMem, userdMem, ramfcMem, mthdbufMem;
  uint32_t hPhysChannelGroup, internalFlags;
  NV_MEMORY_DESC_PARAMS errorNotifierMem, eccErrorNotifierMem;
  uint32_t ProcessID, SubProcessID;
  uint32_t encryptIv[3], decryptIv[3], hmacNonce[8];
  uint32_t tpcConfigID, pad;
} NV_CHANNEL_ALLOC_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV_CHANNEL_ALLOC_PARAMS, 368);
NVHCQ_ASSERT_OFFSET(NV_CHANNEL_ALLOC_PARAMS, hUserdMemory, 32);
NVHCQ_ASSERT_OFFSET(NV_CHANNEL_ALLOC_PARAMS, userdOffset, 64);
NVHCQ_ASSERT_OFFSET(NV_CHANNEL_ALLOC_PARAMS, engineType, 128);
NVHCQ_ASSERT_OFFSET(NV_CHANNEL_ALLOC_PARAMS, errorNotifierMem, 248);
NVHCQ_ASSERT_OFFSET(NV_CHANNEL_ALLOC_PARAMS, tpcConfigID, 360);

typedef struct {
  uint32_t hDebuggerClient_Obsolete, hAppClient, hClass3dObject;
} NV83DE_ALLOC_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NV83DE_ALLOC_PARAMETERS, 12);

typedef struct {
  char driverVersionBuffer[256], versionBuffer[256], driverBranch[256], titleBuffer[256];
  uint32_t changelistNumber, officialChangelistNumber;
} NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, 1032);

typedef struct {
  uint32_t gpuId, gpuFlags, deviceInstance, subDeviceInstance, sliStatus, boardId, gpuInstance,
      numaId;
} NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, 32);

/* NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX: the P2P capabilities of every pair (A[i], B[j]) of
 * RM GPU ids (grpBCount 0: A against itself), with the copy engines best for each direction. Its
 * arrays are fixed (8 GPUs a group), unlike GET_P2P_CAPS_V2's, which grew between branches. */
#define NV0000_CTRL_SYSTEM_MAX_P2P_GROUP_GPUS 8
typedef struct {
  uint32_t grpACount, grpBCount;
  uint32_t gpuIdGrpA[NV0000_CTRL_SYSTEM_MAX_P2P_GROUP_GPUS];
  uint32_t gpuIdGrpB[NV0000_CTRL_SYSTEM_MAX_P2P_GROUP_GPUS];
  uint32_t p2pCaps[8][8];
  uint32_t a2bOptimalReadCes[8][8], a2bOptimalWriteCes[8][8];
  uint32_t b2aOptimalReadCes[8][8], b2aOptimalWriteCes[8][8];
} NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS, 1352);
/* An RM object named in the export and import controls (NV0000_CTRL_OS_UNIX_EXPORT_OBJECT, type
 * RM: the object's device, parent and handle; on import the parent and handle it gets, 0 for
 * RM to pick). */
#define NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TYPE_RM 1u
typedef struct {
  uint32_t type;
  uint32_t hDevice, hParent, hObject;
} NV0000_CTRL_OS_UNIX_EXPORT_OBJECT;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_OS_UNIX_EXPORT_OBJECT, 16);

/* NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD: ties the object to `fd`, a /dev/nvidiactl file
 * opened for nothing else (the kernel's RM takes it as input; flags 0). */
typedef struct {
  NV0000_CTRL_OS_UNIX_EXPORT_OBJECT object;
  int32_t fd;
  uint32_t flags;
} NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS, 24);
NVHCQ_ASSERT_OFFSET(NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS, fd, 16);

/* NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD: a duplicate of the object `fd` holds, under
 * object.hParent, its handle written back to object.hObject. */
typedef struct {
  int32_t fd;
  NV0000_CTRL_OS_UNIX_EXPORT_OBJECT object;
} NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS, 20);
NVHCQ_ASSERT_OFFSET(NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS, object, 4);

/* NV0041_CTRL_CMD_GET_SURFACE_INFO, on a memory object: `count` (index, data) pairs at `list`
 * (a user pointer RM copies in and out). The physical size comes in two 32-bit halves. */
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO 2u
#define NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI 3u
typedef struct {
  uint32_t index, data;
} NV0041_CTRL_SURFACE_INFO;
typedef struct {
  uint32_t count, pad;
  uint64_t list;
} NV0041_CTRL_GET_SURFACE_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0041_CTRL_GET_SURFACE_INFO_PARAMS, 16);

/* p2pCaps bits (NV0000_CTRL_SYSTEM_GET_P2P_CAPS_*_SUPPORTED). */
#define NV0000_P2P_CAP_WRITES   (1u << 0)
#define NV0000_P2P_CAP_READS    (1u << 1)
#define NV0000_P2P_CAP_PROP     (1u << 2)
#define NV0000_P2P_CAP_NVLINK   (1u << 3)
#define NV0000_P2P_CAP_ATOMICS  (1u << 4)
#define NV0000_P2P_CAP_LOOPBACK (1u << 5)
#define NV0000_P2P_CAP_PCI      (1u << 6)
#define NV0000_P2P_CAP_C2C      (1u << 12)

typedef struct {
  uint32_t numClasses, pad;
  uint64_t classList;
} NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, 16);

typedef struct {
  uint32_t index, flags, length;
  uint8_t data[256];
} NV2080_CTRL_GPU_GET_GID_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, 268);
#define NV2080_GPU_CMD_GPU_GET_GID_FLAGS_BINARY 2u

/* 132 bytes up to 590; 68 (ASCII only) from 595. */
typedef struct {
  uint32_t gpuNameStringFlags;
  uint8_t gpuNameString[128];
} NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS, 132);

typedef struct {
  uint32_t index, data;
} NV2080_CTRL_GR_INFO;

typedef struct {
  uint32_t grInfoListSize, pad0;
  uint64_t grInfoList;
  uint32_t routeFlags, pad1;
  uint64_t route;
} NV2080_CTRL_GR_GET_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GR_GET_INFO_PARAMS, 32);

/* Floorswept masks: enabled GPCs, and enabled TPCs of one GPC. */
typedef struct {
  uint32_t routeFlags, pad0;
  uint64_t route;
  uint32_t gpcMask, pad1;
} NV2080_CTRL_GR_GET_GPC_MASK_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GR_GET_GPC_MASK_PARAMS, 24);

typedef struct {
  uint32_t routeFlags, pad0;
  uint64_t route;
  uint32_t gpcId, tpcMask;
} NV2080_CTRL_GR_GET_TPC_MASK_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GR_GET_TPC_MASK_PARAMS, 24);

/* How a channel's graphics context is saved when its group is switched out (ctrl2080gr.h): flags
 * bit 0 says the compute mode is given; compute modes WFI 0 (the grid runs to its end), CTA 1
 * (at a block boundary), CILP 2 (mid-block, through the driver's trap handler). */
typedef struct {
  uint32_t flags, hChannel, gfxpPreemptMode, cilpPreemptMode;
  uint32_t routeFlags, pad0;
  uint64_t route;
} NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_PARAMS, 32);
#define NV2080_CTRL_GR_SET_CTXSW_PREEMPTION_MODE_FLAGS_CILP_SET 1u
#define NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_WFI       0u
#define NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CTA       1u

/* fbInfoList holds 57 entries on 570 (460 bytes), 128 from 580 (1028 bytes). */
typedef struct {
  uint32_t fbInfoListSize;
  NV2080_CTRL_GR_INFO fbInfoList[128];
} NV2080_CTRL_FB_GET_INFO_V2_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_FB_GET_INFO_V2_PARAMS, 1028);

/* 3 bytes from 580 (bSkipEnable), 2 on 570. */
typedef struct {
  uint8_t bEnable, bSkipSubmit, bSkipEnable;
} NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS;
NVHCQ_ASSERT_LAYOUT(NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, 3);

/* Copy engines: which exist (present), their capabilities, and the physical engines behind one. */
#define NV2080_CTRL_MAX_CES         64
#define NV2080_CTRL_CE_CAPS_CE_GRCE 0x01u /* byte 0: runs in step with the graphics engine */
typedef struct {
  uint8_t capsTbl[NV2080_CTRL_MAX_CES][2];
  uint64_t present;
} NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS, 136);
NVHCQ_ASSERT_OFFSET(NV2080_CTRL_CE_GET_ALL_CAPS_PARAMS, present, 128);

typedef struct {
  uint32_t ceEngineType, pceMask;
} NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS, 8);

/* Which copy engine a copy object runs on. */
typedef struct {
  uint32_t version, engineType;
} NVB0B5_ALLOCATION_PARAMETERS;
NVHCQ_ASSERT_LAYOUT(NVB0B5_ALLOCATION_PARAMETERS, 8);
#define NVB0B5_ALLOCATION_PARAMETERS_VERSION_1 1u
#define NV2080_ENGINE_TYPE_COPY(n)             ((n) < 10 ? 0x09u + (n) : 0x34u + (n)-10u)

typedef struct {
  uint32_t exceptionMask;
} NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_PARAMS, 4);

/* One SM's error registers as the driver saved them when the error happened. */
typedef struct {
  uint32_t hwwGlobalEsr, hwwWarpEsr, hwwWarpEsrPc, hwwGlobalEsrReportMask, hwwWarpEsrReportMask,
      pad0;
  uint64_t hwwEsrAddr, hwwWarpEsrPc64;
  uint32_t hwwCgaEsr, hwwCgaEsrReportMask;
} NV83DE_SM_ERROR_STATE_REGISTERS;
NVHCQ_ASSERT_LAYOUT(NV83DE_SM_ERROR_STATE_REGISTERS, 48);

#define NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL 100
typedef struct {
  uint32_t hTargetChannel, numSMsToRead;
  NV83DE_SM_ERROR_STATE_REGISTERS smErrorStateArray[NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL];
  uint32_t mmuFaultInfo;
  uint8_t mmuFaultValid, pad0[3];
  uint32_t mmuFaultInfoWord;
  uint32_t startingSM;
} NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, 4824);
NVHCQ_ASSERT_OFFSET(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, mmuFaultValid, 4812);
NVHCQ_ASSERT_OFFSET(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, startingSM, 4820);

/* The last MMU faults of the SMs and texture units in our context: a ring of four. */
typedef struct {
  uint64_t faultAddress;
  uint32_t faultType, accessType;
} NV83DE_MMU_FAULT_INFO_ENTRY;
typedef struct {
  NV83DE_MMU_FAULT_INFO_ENTRY mmuFaultInfoList[4];
  uint32_t count, pad0;
} NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS, 72);
NVHCQ_ASSERT_OFFSET(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS, count, 64);

/* Stops a channel the way the driver stops a faulted one (robust-channel recovery). */
typedef struct {
  uint32_t engineID, subdeviceInstance, resetReason;
  uint8_t bIsRcPending, pad0[3];
} NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV906F_CTRL_CMD_RESET_CHANNEL_PARAMS, 16);

/* A channel's last MMU fault, cleared by reading it. */
typedef struct {
  uint32_t addrHi, addrLo, faultType;
  char faultString[32];
  uint32_t pad0;
  uint64_t shaderProgramVA[7];
} NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS, 104);
NVHCQ_ASSERT_OFFSET(NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS, shaderProgramVA, 48);

typedef struct {
  uint32_t flags, duration;
} NV2080_CTRL_PERF_BOOST_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_PERF_BOOST_PARAMS, 8);

/* The IDs as PCI configuration space holds them: device ID in the upper 16 bits, vendor ID in the
 * lower (0x233510de), and the subsystem ID and subsystem vendor the same way. */
typedef struct {
  uint32_t pciDeviceId, pciSubSystemId, pciRevisionId, pciExtDeviceId;
} NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS;
NVHCQ_ASSERT_LAYOUT(NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS, 16);
/* Boost to the maximum clocks for a CUDA-style client with high priority, as libcuda asks. */
#define NV2080_PERF_BOOST_FLAGS_CUDA_MAX    0x52u
#define NV2080_PERF_BOOST_DURATION_INFINITE 0xffffffffu

typedef struct {
  uint32_t workSubmitToken;
} NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS;
NVHCQ_ASSERT_LAYOUT(NVC36F_CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS, 4);

#endif
