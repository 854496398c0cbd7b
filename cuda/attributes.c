/* cuDeviceGetAttribute (and cuDeviceGetTexture1DLinearMaxWidth): every CU_DEVICE_ATTRIBUTE_*, from
 * what nvhcq reports of the GPU (SM count, compute capability, PCI location, memory, L2 size and
 * bus width from the driver, shared-memory and block limits from its architecture table) and, for
 * the rest, constants of each architecture and board from NVIDIA's published specifications
 * (clocks; the tables stand in for the driver's figures where nvhcq has none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* What differs between architectures (CUDA programming guide, "compute capabilities" table). */
typedef struct arch_limits {
  unsigned sm;       /* 80, 86, 89, 90, 100, 120 */
  int shared_per_sm; /* bytes */
  int shared_optin;  /* the most one block may opt in to */
  int threads_per_sm, blocks_per_sm;
  int cluster_launch;
} arch_limits;

static const arch_limits arch_table[] = {
    {80, 167936, 166912, 2048, 32, 0},  {86, 102400, 101376, 1536, 16, 0},
    {87, 167936, 166912, 1536, 16, 0},  {89, 102400, 101376, 1536, 24, 0},
    {90, 233472, 232448, 2048, 32, 1},  {100, 233472, 232448, 2048, 32, 1},
    {103, 233472, 232448, 2048, 32, 1}, {120, 102400, 101376, 1536, 32, 1},
};

/* Per board: clocks in kHz, memory bus width in bits and L2 in bytes (NVIDIA's data sheets; the
 * driver reports the same as libcuda's attributes on these boards). Matched by name. */
typedef struct board {
  const char *name;
  int clock_khz, memory_clock_khz, bus_width, l2_bytes;
} board;

static const board boards[] = {
    {"H200", 1980000, 3201000, 6144, 52428800},     {"H100 PCIe", 1755000, 1593000, 5120, 52428800},
    {"H100 NVL", 1785000, 2619000, 6144, 52428800}, {"H100", 1980000, 2619000, 5120, 52428800},
    {"GH200", 1980000, 2619000, 6144, 52428800},    {"A100", 1410000, 1593000, 5120, 41943040},
    {"L40S", 2520000, 9001000, 384, 100663296},     {"L4", 2040000, 6251000, 192, 50331648},
    {"B200", 1965000, 4000000, 8192, 132120576},
};

static const arch_limits *arch_of(const nvhcq_device_info *info) {
  unsigned sm = (info->sm_version >> 8) * 10 + ((info->sm_version >> 4) & 0xf);
  const arch_limits *best = &arch_table[0];
  for (size_t i = 0; i < sizeof arch_table / sizeof *arch_table; i++)
    if (arch_table[i].sm <= sm) best = &arch_table[i];
  return best;
}

static const board *board_of(const nvhcq_device_info *info) {
  for (size_t i = 0; i < sizeof boards / sizeof *boards; i++)
    if (strstr(info->name, boards[i].name)) return &boards[i];
  return &boards[3]; /* an unknown board is given the H100 SXM's figures */
}

/* Texture and surface limits, the same on every architecture since sm_80. */
static int texture_limit(CUdevice_attribute a, int *v) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH:
    *v = 131072;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT:
    *v = 65536;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
    *v = 65000;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH:
    *v = 2097120;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE:
    *v = a == CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE ? 32768 : 16384;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE:
    *v = 8192;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH:
    *v = 32768;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS:
    *v = 2048;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS:
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS:
    *v = 2046;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH:
    *v = 268435456;
    return 1;
  default:
    return 0;
  }
}

/* Attributes that are the same for every GPU nvhcq drives (Ampere and later, Linux, no MIG). */
static int common_value(CUdevice_attribute a, int *v) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    *v = 1024;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    *v = 64;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    *v = 2147483647;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    *v = 65535;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *v = 49152;
    return 1;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    *v = 65536;
    return 1;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
    *v = 32;
    return 1;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
  case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
    *v = 512;
    return 1;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
    *v = 2; /* nvhcq's two channels run concurrently: compute and one copy engine */
    return 1;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
    *v = 2;
    return 1;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
    *v = 1024;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE:
    *v = 128 << 20; /* NVIDIA's library on an H100 (cuda_facts, driver 580) */
    return 1;
  case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
    *v = 4;
    return 1;
  /* What nvhcq does: overlap, concurrent kernels, mapped pinned memory, unified addressing, L1
   * caching, stream priorities (accepted), preemption. */
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER:
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS:
  /* Stream memory operations (cuda/memops.c): 32 and 64 bits, every wait condition;
   * CAN_FLUSH_REMOTE_WRITES stays 0 (x86 platforms lack what it names). The _V1 attributes stay 0
   * as NVIDIA's library has them since CUDA 12 (cuda_facts, driver 580), so that a client takes the
   * same path with either library; the first API's entry points still work. */
  case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
  /* A grid that fits on the GPU at once (cuLaunchCooperativeKernel). */
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    *v = 1;
    return 1;
  /* Managed memory is pinned host memory both processors use in place, at any time (so concurrent
   * access holds); registered memory's device pointer is its host pointer; stream-ordered
   * allocation from device-memory pools, and from host pools of pinned host memory (the NUMA
   * node a host pool names changes nothing). Pageable memory the GPU cannot reach unregistered. */
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:
  /* Events shared between processes (cuIpcGetEventHandle, ipc.c). */
  case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
    *v = 1;
    return 1;
  /* Pools export to and import from file descriptors (pool.c); no other handle type. */
  case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
    *v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return 1;
  default:
    /* Everything else is a feature nvhcq's library does not offer (pageable memory access,
     * fabric and dma-buf handles, multicast, multi-device cooperative launches, ...): 0, so
     * clients don't use it. */
    *v = 0;
    return 0;
  }
}

/* The host NUMA node the GPU hangs off, as the kernel's PCI device says. A device the kernel puts
 * on no node (-1, as in virtual machines) is near node 0 where the host has one: NVIDIA's library
 * says 0 there (cuda_facts on an H100 in a VM, driver 580); -1 only without NUMA nodes at all. */
static int host_numa_node(const nvhcq_device_info *info) {
  char path[96];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.%x/numa_node", info->pci_domain,
           info->pci_bus, info->pci_device, info->pci_function);
  FILE *f = fopen(path, "r");
  int node = -1;
  if (f) {
    if (fscanf(f, "%d", &node) != 1) node = -1;
    fclose(f);
  }
  if (node < 0 && access("/sys/devices/system/node/node0", F_OK) == 0) node = 0;
  return node;
}

static int device_value(const nvhcq_device_info *info, CUdevice_attribute a, int *v) {
  const arch_limits *arch = arch_of(info);
  const board *b = board_of(info);
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *v = (int)info->sm_count;
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *v = (int)(info->sm_version >> 8);
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *v = (int)((info->sm_version >> 4) & 0xf);
    return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
    *v = (int)info->pci_bus;
    return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    *v = (int)info->pci_device;
    return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    *v = (int)info->pci_domain;
    return 1;
  /* (device ID << 16) | vendor ID, and the subsystem's the same way, as nvidia-smi prints them */
  case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID:
    *v = (int)info->pci_id;
    return 1;
  case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID:
    *v = (int)info->pci_subsystem_id;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    *v = info->warps_per_sm ? (int)info->warps_per_sm * 32 : arch->threads_per_sm;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    *v = info->shared_per_sm ? (int)info->shared_per_sm : arch->shared_per_sm;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *v = info->shared_per_block ? (int)info->shared_per_block : arch->shared_optin;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    *v = info->blocks_per_sm ? (int)info->blocks_per_sm : arch->blocks_per_sm;
    return 1;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
    *v = arch->cluster_launch;
    return 1;
  /* cuTensorMapEncode* and the TMA instructions reading its maps: Hopper on */
  case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
    *v = info->sm_version >= 0x900;
    return 1;
  /* cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess (vmm.c); clients such as
   * cuda-python's vector_add_mmap example check this before using them */
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    *v = 1;
    return 1;
  /* cuMemCreate's memory exports to and imports from file descriptors (vmm.c); memMapIPCDrv-style
   * clients check this first */
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    *v = 1;
    return 1;
  /* The GPU's memory is no NUMA node of its own (NUMA_CONFIG 0); the host node it is near is. */
  case CU_DEVICE_ATTRIBUTE_NUMA_ID:
    *v = -1;
    return 1;
  case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
    *v = host_numa_node(info);
    return 1;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
    *v = b->clock_khz;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    *v = b->memory_clock_khz;
    return 1;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    *v = info->memory_bus_width ? (int)info->memory_bus_width : b->bus_width;
    return 1;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *v = info->l2_bytes ? (int)info->l2_bytes : b->l2_bytes;
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
    /* 62.5 % of L2 may be set aside (Ampere and Hopper) */
    *v = (info->l2_bytes ? (int)info->l2_bytes : b->l2_bytes) / 8 * 5;
    return 1;
  default:
    return 0;
  }
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if ((int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  nvcu_device *d;
  CUresult r = nvcu_device_get(dev, &d);
  if (!r && !device_value(&d->info, attrib, pi) && !texture_limit(attrib, pi))
    common_value(attrib, pi);
  NVCU_UNLOCK();
  return r;
}

/* The widest 1D texture on linear memory of a format and channel count (1, 2 or 4): wider than
 * MAXIMUM_TEXTURE1D_LINEAR_WIDTH (2^28) for elements under 16 bytes, as NVIDIA's library says. */
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements, CUarray_format format,
                                            unsigned numChannels, CUdevice dev) {
  if (!maxWidthInElements) return CUDA_ERROR_INVALID_VALUE;
  nvhcq_texel_type type;
  uint32_t bytes; /* of one channel */
  if (!nvcu_texel_of(format, &type, &bytes)) {
    nvcu_log("cuDeviceGetTexture1DLinearMaxWidth: format 0x%x is not one a 1D linear texture takes "
             "(CU_AD_FORMAT_UNSIGNED_INT8 .. FLOAT)",
             (unsigned)format);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (numChannels != 1 && numChannels != 2 && numChannels != 4) {
    nvcu_log("cuDeviceGetTexture1DLinearMaxWidth: %u channels (1, 2 or 4)", numChannels);
    return CUDA_ERROR_INVALID_VALUE;
  }
  nvcu_device *d;
  NVCU_LOCK();
  CUresult r = nvcu_device_get(dev, &d);
  NVCU_UNLOCK();
  if (r) return r;
  /* 4 GiB of elements, at most 2^30 of them: NVIDIA's library on an H100 (driver 580) answered
   * 2^30 for 1-4 channels of 8 bits, 1-2 of 16 bits and 1 of 32, 2^29 for 4 x 16 and 2 x 32 bits,
   * 2^28 for 4 x 32 bits (tests/cuda/cuda_facts.c asks every format and channel count). */
  size_t most = ((size_t)1 << 32) / ((size_t)bytes * numChannels);
  *maxWidthInElements = most < ((size_t)1 << 30) ? most : (size_t)1 << 30;
  return CUDA_SUCCESS;
}
