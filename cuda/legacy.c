/* The legacy execution API (deprecated since CUDA 3.2, still exported): a function keeps a block
 * shape, a dynamic shared-memory size and an argument block written at the caller's offsets, and
 * cuLaunch, cuLaunchGrid and cuLaunchGridAsync launch it with them. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  if (x <= 0 || y <= 0 || z <= 0 ||
      (uint64_t)x * (uint64_t)y * (uint64_t)z > hfunc->info.max_threads) {
    nvcu_log("cuFuncSetBlockShape(%s, %d, %d, %d): each dimension at least 1, at most %u threads",
             hfunc->name, x, y, z, hfunc->info.max_threads);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  hfunc->legacy_block = (nvhcq_dim3){(uint32_t)x, (uint32_t)y, (uint32_t)z};
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

/* Checked at the launch, as CUDA does (a larger MAX_DYNAMIC_SHARED_SIZE_BYTES may come first). */
CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  NVCU_LOCK();
  hfunc->legacy_shared = bytes;
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
  if (nvcu_func_check(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  if (numbytes > hfunc->info.param_size) {
    nvcu_log("cuParamSetSize(%s, %u): the kernel takes %u bytes of parameters", hfunc->name,
             numbytes, hfunc->info.param_size);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  hfunc->legacy_args_size = numbytes;
  NVCU_UNLOCK();
  return CUDA_SUCCESS;
}

/* Copies `size` bytes to `offset` in the function's argument block (made zeroed on first use,
 * the kernel's parameter size). */
static CUresult set_param(CUfunction f, int offset, const void *data, unsigned int size,
                          const char *what) {
  if (nvcu_func_check(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (size && !data) {
    nvcu_log("%s(%s, offset %d): no bytes to copy (NULL)", what, f->name, offset);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (offset < 0 || (uint64_t)offset + size > f->info.param_size) {
    nvcu_log("%s(%s, offset %d, %u bytes): outside the kernel's %u bytes of parameters", what,
             f->name, offset, size, f->info.param_size);
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  if (!f->legacy_args) f->legacy_args = calloc(1, f->info.param_size ? f->info.param_size : 1);
  if (f->legacy_args && size) memcpy(f->legacy_args + offset, data, size);
  CUresult r = f->legacy_args ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  NVCU_UNLOCK();
  return r;
}

CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
  return set_param(hfunc, offset, &value, sizeof value, "cuParamSeti");
}

CUresult cuParamSetf(CUfunction hfunc, int offset, float value) {
  return set_param(hfunc, offset, &value, sizeof value, "cuParamSetf");
}

CUresult cuParamSetv(CUfunction hfunc, int offset, void *ptr, unsigned int numbytes) {
  return set_param(hfunc, offset, ptr, numbytes, "cuParamSetv");
}

/* A launch of the stored state as cuLaunchKernel's: the argument block as `extra`'s buffer of
 * cuParamSetSize's bytes (what the kernel takes beyond it reads zeros). */
static CUresult launch_legacy(CUfunction f, int width, int height, CUstream stream,
                              const char *what) {
  if (nvcu_func_check(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (width <= 0 || height <= 0) {
    nvcu_log("%s(%s): a grid of %d x %d blocks", what, f->name, width, height);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!f->legacy_block.x) {
    nvcu_log("%s(%s): no block shape; call cuFuncSetBlockShape first", what, f->name);
    return CUDA_ERROR_INVALID_VALUE;
  }
  static const uint8_t none[1];
  NVCU_LOCK();
  /* no cuParamSet* call yet: an empty buffer, so every argument reads zeros */
  void *args = f->legacy_args ? f->legacy_args : (void *)(uintptr_t)none;
  size_t size = f->legacy_args ? f->legacy_args_size : 0;
  nvhcq_dim3 b = f->legacy_block;
  uint32_t shared = f->legacy_shared;
  NVCU_UNLOCK();
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  return cuLaunchKernel(f, (unsigned)width, (unsigned)height, 1, b.x, b.y, b.z, shared, stream,
                        NULL, extra);
}

CUresult cuLaunch(CUfunction f) {
  return launch_legacy(f, 1, 1, NULL, "cuLaunch");
}

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return launch_legacy(f, grid_width, grid_height, NULL, "cuLaunchGrid");
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream) {
  return launch_legacy(f, grid_width, grid_height, hStream, "cuLaunchGridAsync");
}

/* ---- the first API's 32-bit names (before CUDA 3.2) ---- */

/* What NVIDIA's library answers when a 64-bit client finds these names (dlsym, ctypes) rather than
 * the _v2 ones its headers name (cuda_facts on an H100, driver 580): cuDeviceTotalMem succeeds
 * and reports 0 bytes (the total does not fit its 32 bits), and cuMemGetInfo and cuMemAlloc,
 * whose 32-bit device pointers no 64-bit context has, refuse with CUDA_ERROR_INVALID_CONTEXT. */
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev);
CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total);
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize);

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  size_t total = 0;
  CUresult r = cuDeviceTotalMem_v2(&total, dev);
  if (!r) *bytes = total > 0xffffffffu ? 0 : (unsigned int)total;
  return r;
}

static CUresult no_32_bit_context(const char *name) {
  nvcu_log("%s: the 32-bit API (before CUDA 3.2) has no context in a 64-bit process, as in "
           "NVIDIA's library; call %s_v2",
           name, name);
  return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total) {
  (void)free_bytes, (void)total;
  return no_32_bit_context("cuMemGetInfo");
}

CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize) {
  (void)dptr, (void)bytesize;
  return no_32_bit_context("cuMemAlloc");
}
