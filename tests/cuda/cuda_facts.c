/* Prints what a CUDA driver library answers about GPU 0, one "key value" line each, so that two
 * libraries' answers can be diffed: run once with NVIDIA's libcuda.so.1 and once with nvhcq's
 * (tests/cuda/compare_facts.sh does both). Only answers that do not change between runs are
 * printed: no addresses, no free memory, no times.
 * usage: nvhcq_cuda_facts [CUBIN]   (with a cubin: its kernels' attributes and occupancy too) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_api.h"
#include "enums.h"

/* A call's result, or its error name, as the value of `key`. */
static int failed(const char *key, CUresult r) {
  if (r == CUDA_SUCCESS) return 0;
  const char *name = NULL;
  printf("%s error %d %s\n", key, (int)r, cuGetErrorName(r, &name) ? "?" : name);
  return 1;
}

static void device_facts(CUdevice d) {
  char name[256];
  size_t total = 0;
  int v;
  if (!failed("name", cuDeviceGetName(name, sizeof name, d))) printf("name %s\n", name);
  if (!failed("total_memory", cuDeviceTotalMem_v2(&total, d))) printf("total_memory %zu\n", total);
#define PRINT_ATTRIBUTE_(n, value)                                                                 \
  if (value > 0 && value < CU_DEVICE_ATTRIBUTE_MAX &&                                              \
      !failed(#n, cuDeviceGetAttribute(&v, (CUdevice_attribute)value, d)))                         \
    printf("%s %d\n", #n, v);
  CU_DEVICE_ATTRIBUTE_LIST(PRINT_ATTRIBUTE_)
#undef PRINT_ATTRIBUTE_
  static const struct {
    CUarray_format format;
    const char *name;
  } formats[] = {{CU_AD_FORMAT_UNSIGNED_INT8, "u8"},
                 {CU_AD_FORMAT_UNSIGNED_INT16, "u16"},
                 {CU_AD_FORMAT_HALF, "half"},
                 {CU_AD_FORMAT_FLOAT, "float"}};
  for (size_t f = 0; f < sizeof formats / sizeof *formats; f++)
    for (int channels = 1; channels <= 4; channels *= 2) {
      size_t width = 0;
      if (!failed("tex1d_linear_max_width", cuDeviceGetTexture1DLinearMaxWidth(
                                                &width, formats[f].format, (unsigned)channels, d)))
        printf("tex1d_linear_max_width %s%d %zu\n", formats[f].name, channels, width);
    }
}

static void context_facts(CUdevice d) {
  unsigned flags = 0, api = 0;
  int active = 0, least = 0, greatest = 0;
  if (!failed("primary_state", cuDevicePrimaryCtxGetState(d, &flags, &active)))
    printf("primary_state flags 0x%x active %d\n", flags, active);
  CUcontext ctx;
  if (failed("primary_retain", cuDevicePrimaryCtxRetain(&ctx, d)) ||
      failed("set_current", cuCtxSetCurrent(ctx)))
    return;
  if (!failed("api_version", cuCtxGetApiVersion(ctx, &api))) printf("api_version %u\n", api);
  if (!failed("ctx_flags", cuCtxGetFlags(&flags))) printf("ctx_flags 0x%x\n", flags);
  size_t free_bytes = 0, total_bytes = 0;
  if (!failed("mem_info", cuMemGetInfo_v2(&free_bytes, &total_bytes)))
    printf("mem_info_total %zu\n", total_bytes);
  for (int l = 0; l <= 6; l++) {
    size_t value = 0;
    char key[32];
    snprintf(key, sizeof key, "limit %d", l);
    if (!failed(key, cuCtxGetLimit(&value, (CUlimit)l))) printf("%s %zu\n", key, value);
  }
  CUfunc_cache cache;
  if (!failed("cache_config", cuCtxGetCacheConfig(&cache))) printf("cache_config %d\n", cache);
  if (!failed("priorities", cuCtxGetStreamPriorityRange(&least, &greatest)))
    printf("priorities %d %d\n", least, greatest);
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d}};
  for (int o = 0; o <= 1; o++) {
    size_t g = 0;
    if (!failed("granularity",
                cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)o)))
      printf("granularity %d %zu\n", o, g);
  }
  CUmemoryPool pool;
  if (!failed("default_pool", cuDeviceGetDefaultMemPool(&pool, d)))
    for (int a = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
         a <= CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; a++) {
      unsigned long long value = 0; /* the reuse flags are ints: the upper half stays 0 */
      char key[32];
      snprintf(key, sizeof key, "pool_attribute %d", a);
      if (!failed(key, cuMemPoolGetAttribute(pool, (CUmemPool_attribute)a, &value)))
        printf("%s %llu\n", key, value);
    }
}

/* The pointer attributes that describe the memory, not where it lies. */
static void pointer_facts(const char *kind, CUdeviceptr p) {
  static const int attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                              CU_POINTER_ATTRIBUTE_IS_MANAGED,
                              CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                              CU_POINTER_ATTRIBUTE_MAPPED,
                              CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                              CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                              CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                              CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
    unsigned long long value = 0; /* 4- and 8-byte answers alike */
    char key[48];
    snprintf(key, sizeof key, "pointer %s %d", kind, attrs[i]);
    if (!failed(key, cuPointerGetAttribute(&value, (CUpointer_attribute)attrs[i], p)))
      printf("%s %llu\n", key, value);
  }
}

static void memory_facts(void) {
  CUdeviceptr dev = 0, managed = 0;
  void *host = NULL;
  if (!failed("mem_alloc", cuMemAlloc_v2(&dev, 1 << 20))) {
    pointer_facts("device", dev);
    cuMemFree_v2(dev);
  }
  if (!failed("mem_alloc_host", cuMemAllocHost_v2(&host, 1 << 20))) {
    pointer_facts("host", (CUdeviceptr)(uintptr_t)host);
    cuMemFreeHost(host);
  }
  if (!failed("mem_alloc_managed", cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL))) {
    pointer_facts("managed", managed);
    cuMemFree_v2(managed);
  }
}

static void occupancy_facts(const char *name, CUfunction f) {
  static const int blocks[] = {32, 64, 128, 256, 512, 1024};
  static const size_t shared[] = {0, 4096, 16384, 49152};
  for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++)
    for (size_t s = 0; s < sizeof shared / sizeof *shared; s++) {
      int n = 0;
      char key[160];
      snprintf(key, sizeof key, "occupancy %s %d %zu", name, blocks[b], shared[s]);
      if (!failed(key, cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, blocks[b], shared[s])))
        printf("%s %d\n", key, n);
    }
  int grid = 0, block = 0;
  char key[160];
  snprintf(key, sizeof key, "potential_block %s", name);
  if (!failed(key, cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0)))
    printf("%s %d %d\n", key, grid, block);
  for (int n = 1; n <= 4; n *= 2) {
    size_t bytes = 0;
    snprintf(key, sizeof key, "available_shared %s %d", name, n);
    if (!failed(key, cuOccupancyAvailableDynamicSMemPerBlock(&bytes, f, n, 128)))
      printf("%s %zu\n", key, bytes);
  }
  /* the same once the kernel may take all the shared memory a block can have */
  int optin = 0, most = 0;
  CUdevice d;
  if (failed("func_device", cuCtxGetDevice(&d)) ||
      failed("optin", cuDeviceGetAttribute(
                          &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d)))
    return;
  int static_shared = 0;
  if (failed("static_shared",
             cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f)))
    return;
  snprintf(key, sizeof key, "raised_dynamic_shared %s", name);
  if (failed(key, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     optin - static_shared)) ||
      failed(key, cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f)))
    return;
  printf("%s %d\n", key, most);
  for (int n = 1; n <= 4; n *= 2) {
    size_t bytes = 0;
    snprintf(key, sizeof key, "available_shared_raised %s %d", name, n);
    if (!failed(key, cuOccupancyAvailableDynamicSMemPerBlock(&bytes, f, n, 128)))
      printf("%s %zu\n", key, bytes);
  }
}

static void function_facts(CUfunction f) {
  const char *name = "?";
  if (failed("function_name", cuFuncGetName(&name, f))) return;
  int v;
#define PRINT_FUNC_ATTRIBUTE_(n, value)                                                            \
  if (value < CU_FUNC_ATTRIBUTE_MAX) {                                                             \
    char key_[160];                                                                                \
    snprintf(key_, sizeof key_, "%s %s", #n, name);                                                \
    if (!failed(key_, cuFuncGetAttribute(&v, (CUfunction_attribute)value, f)))                     \
      printf("%s %d\n", key_, v);                                                                  \
  }
  CU_FUNCTION_ATTRIBUTE_LIST(PRINT_FUNC_ATTRIBUTE_)
#undef PRINT_FUNC_ATTRIBUTE_
  for (size_t i = 0;; i++) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
    printf("param %s %zu offset %zu size %zu\n", name, i, offset, size);
  }
  occupancy_facts(name, f);
}

/* The library reads the file itself (cuModuleLoad), as each library's own loader would. */
static void module_facts(const char *path) {
  CUmodule mod;
  unsigned count = 0;
  if (failed("module_load", cuModuleLoad(&mod, path)) ||
      failed("function_count", cuModuleGetFunctionCount(&count, mod)))
    return;
  printf("function_count %u\n", count);
  CUfunction *fs = calloc(count ? count : 1, sizeof *fs);
  if (fs && !failed("functions", cuModuleEnumerateFunctions(fs, count, mod)))
    for (unsigned i = 0; i < count; i++) function_facts(fs[i]);
  free(fs);
  cuModuleUnload(mod);
}

/* Every code's name and text where either library knows it. */
static void error_facts(void) {
  for (int code = 0; code < 1000; code++) {
    const char *name = NULL, *text = NULL;
    CUresult a = cuGetErrorName((CUresult)code, &name), b = cuGetErrorString((CUresult)code, &text);
    if (a == CUDA_SUCCESS || b == CUDA_SUCCESS)
      printf("error_code %d %s: %s\n", code, a ? "?" : name, b ? "?" : text);
  }
}

/* The first API's names, with 32-bit sizes and device pointers, that the library still exports:
 * what each answers when a client finds it by name (dlsym, ctypes). */
static void legacy_facts(CUdevice d) {
  typedef CUresult (*total_fn)(unsigned *, CUdevice);
  typedef CUresult (*info_fn)(unsigned *, unsigned *);
  typedef CUresult (*alloc_fn)(unsigned *, unsigned);
  typedef CUresult (*free_fn)(unsigned);
  unsigned a[2] = {0, 0}, b[2] = {0, 0};
  total_fn total = (total_fn)dlsym(RTLD_DEFAULT, "cuDeviceTotalMem");
  info_fn info = (info_fn)dlsym(RTLD_DEFAULT, "cuMemGetInfo");
  alloc_fn alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc");
  free_fn release = (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree");
  if (total) printf("legacy cuDeviceTotalMem %d %u\n", (int)total(a, d), a[0]);
  if (info) printf("legacy cuMemGetInfo %d\n", (int)info(a, b));
  a[0] = a[1] = 0;
  if (alloc) {
    CUresult r = alloc(a, 4096);
    printf("legacy cuMemAlloc %d %s\n", (int)r, a[0] ? "nonzero" : "zero");
    if (!r && release) printf("legacy cuMemFree %d\n", (int)release(a[0]));
  }
}

int main(int argc, char **argv) {
  Dl_info where;
  if (dladdr((void *)cuInit, &where) && where.dli_fname)
    fprintf(stderr, "nvhcq_cuda_facts: the library is %s\n", where.dli_fname);
  error_facts();
  int version = 0, count = 0;
  if (!failed("driver_version", cuDriverGetVersion(&version)))
    printf("driver_version %d\n", version);
  if (failed("init", cuInit(0)) || failed("device_count", cuDeviceGetCount(&count))) return 0;
  printf("device_count %d\n", count);
  CUdevice d;
  if (count < 1 || failed("device_get", cuDeviceGet(&d, 0))) return 0;
  device_facts(d);
  context_facts(d);
  memory_facts();
  legacy_facts(d);
  if (argc > 1) module_facts(argv[1]);
  return 0;
}
