/* Calls clients make that change little on nvhcq: the profiler's start and stop, shared-memory
 * bank sizes, the persisting-L2 reset, finding a device by PCI bus id, and the deprecated
 * device properties. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ---- profiler: nvhcq's own (NVHCQ_PROFILE) is not driven by these ---- */

CUresult cuProfilerInitialize(const char *configFile, const char *outputFile,
                              CUoutput_mode outputMode) {
  (void)configFile, (void)outputFile, (void)outputMode;
  return nvcu_current(NULL, NULL);
}

CUresult cuProfilerStart(void) {
  return nvcu_current(NULL, NULL);
}

CUresult cuProfilerStop(void) {
  return nvcu_current(NULL, NULL);
}

/* ---- caches and shared memory ---- */

/* Nothing is set aside as persisting L2 (access-policy windows are accepted, not applied). */
CUresult cuCtxResetPersistingL2Cache(void) {
  return nvcu_current(NULL, NULL);
}

/* Every GPU nvhcq drives has fixed 4-byte banks: the setting is accepted and changes nothing,
 * as CUDA documents for such devices. */
CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig) {
  if (!pConfig) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = nvcu_current(NULL, NULL);
  if (!r) *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return r;
}

CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) return CUDA_ERROR_INVALID_VALUE;
  return nvcu_current(NULL, NULL);
}

CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  CUresult r = nvcu_func_check(hfunc);
  if (r) return r;
  return (unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_ERROR_INVALID_VALUE
                                                                      : CUDA_SUCCESS;
}

/* ---- devices ---- */

/* "domain:bus:device.function" or "bus:device.function", in hex (as cuDeviceGetPCIBusId writes
 * them, in either case). */
static int parse_bus_id(const char *s, unsigned v[4]) {
  char tail;
  if (sscanf(s, "%x:%x:%x.%x%c", &v[0], &v[1], &v[2], &v[3], &tail) == 4) return 1;
  v[0] = 0;
  return sscanf(s, "%x:%x.%x%c", &v[1], &v[2], &v[3], &tail) == 3;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
  if (!dev || !pciBusId) return CUDA_ERROR_INVALID_VALUE;
  int count;
  CUresult r = cuDeviceGetCount(&count);
  if (r) return r;
  unsigned want[4];
  if (!parse_bus_id(pciBusId, want)) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < count; i++) {
    char id[32];
    unsigned have[4];
    r = cuDeviceGetPCIBusId(id, sizeof id, i);
    if (r) return r;
    if (parse_bus_id(id, have) && !memcmp(have, want, sizeof have)) {
      *dev = i;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

/* The deprecated summary, from the attributes it stands for. */
CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev) {
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  static const CUdevice_attribute attrs[] = {
      CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
      CU_DEVICE_ATTRIBUTE_WARP_SIZE,
      CU_DEVICE_ATTRIBUTE_MAX_PITCH,
      CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
      CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
  };
  int v[sizeof attrs / sizeof *attrs];
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
    CUresult r = cuDeviceGetAttribute(&v[i], attrs[i], dev);
    if (r) return r;
  }
  *prop = (CUdevprop){.maxThreadsPerBlock = v[0],
                      .maxThreadsDim = {v[1], v[2], v[3]},
                      .maxGridSize = {v[4], v[5], v[6]},
                      .sharedMemPerBlock = v[7],
                      .totalConstantMemory = v[8],
                      .SIMDWidth = v[9],
                      .memPitch = v[10],
                      .regsPerBlock = v[11],
                      .clockRate = v[12],
                      .textureAlign = v[13]};
  return CUDA_SUCCESS;
}
