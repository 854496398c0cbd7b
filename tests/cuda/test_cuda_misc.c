/* Driver-API programs against nvhcq's libcuda.so.1: the error log (cuLogs*), peer access and P2P
 * attributes, pools by location and their access, managed memory's stream association, tensor map
 * address replacement, RDMA flushes, the 1D linear texture limit, cluster-size occupancy and the
 * legacy execution API (cuParamSet*, cuLaunch*). On a GPU or the mock (NVHCQ_MOCK=1, two GPUs with
 * NVHCQ_MOCK_GPUS=2); the two-device cases skip with one GPU, the log's run anywhere. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test.h"

/* ---- before cuInit ---- */

static void test_names(void) {
  static const nvcu_proc_case names[] = {
      {"cuCtxDisablePeerAccess", 4000, 0, "cuCtxDisablePeerAccess"},
      {"cuDeviceGetP2PAttribute", 8000, 0, "cuDeviceGetP2PAttribute"},
      {"cuStreamAttachMemAsync", 12000, 0, "cuStreamAttachMemAsync"},
      {"cuStreamAttachMemAsync", 12000, 2, "cuStreamAttachMemAsync_ptsz"},
      {"cuTensorMapReplaceAddress", 12000, 0, "cuTensorMapReplaceAddress"},
      {"cuMemPoolSetAccess", 11020, 0, "cuMemPoolSetAccess"},
      {"cuMemPoolGetAccess", 11020, 0, "cuMemPoolGetAccess"},
      {"cuMemGetDefaultMemPool", 13000, 0, "cuMemGetDefaultMemPool"},
      {"cuMemGetMemPool", 13000, 0, "cuMemGetMemPool"},
      {"cuMemSetMemPool", 13000, 0, "cuMemSetMemPool"},
      {"cuFlushGPUDirectRDMAWrites", 11030, 0, "cuFlushGPUDirectRDMAWrites"},
      {"cuDeviceGetTexture1DLinearMaxWidth", 11010, 0, "cuDeviceGetTexture1DLinearMaxWidth"},
      {"cuKernelSetCacheConfig", 12000, 0, "cuKernelSetCacheConfig"},
      {"cuOccupancyMaxPotentialClusterSize", 11070, 0, "cuOccupancyMaxPotentialClusterSize"},
      {"cuFuncSetBlockShape", 2000, 0, "cuFuncSetBlockShape"},
      {"cuFuncSetSharedSize", 2000, 0, "cuFuncSetSharedSize"},
      {"cuParamSetSize", 2000, 0, "cuParamSetSize"},
      {"cuParamSeti", 2000, 0, "cuParamSeti"},
      {"cuParamSetf", 2000, 0, "cuParamSetf"},
      {"cuParamSetv", 2000, 0, "cuParamSetv"},
      {"cuLaunch", 2000, 0, "cuLaunch"},
      {"cuLaunchGrid", 2000, 0, "cuLaunchGrid"},
      {"cuLaunchGridAsync", 2000, 2, "cuLaunchGridAsync"},
      {"cuCtxCreate", 2000, 0, "cuCtxCreate"},
      {"cuCtxDestroy", 3020, 0, "cuCtxDestroy"},
      {"cuCtxPushCurrent", 2000, 0, "cuCtxPushCurrent"},
      {"cuCtxPopCurrent", 3020, 2, "cuCtxPopCurrent"},
      {"cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset"},
      {"cuDevicePrimaryCtxSetFlags", 7000, 0, "cuDevicePrimaryCtxSetFlags"},
  };
  check_proc_cases(names, sizeof names / sizeof *names);
  /* the first versions' context names are the current ones */
  TEST_CHECK(own("cuCtxCreate") == own("cuCtxCreate_v2") &&
             own("cuCtxDestroy") == own("cuCtxDestroy_v2") &&
             own("cuCtxPushCurrent") == own("cuCtxPushCurrent_v2") &&
             own("cuCtxPopCurrent") == own("cuCtxPopCurrent_v2"));
  /* implemented, not stubs: before cuInit they say so */
  TEST_CHECK(cuCtxDisablePeerAccess(NULL) == CUDA_ERROR_NOT_INITIALIZED);
  int v;
  TEST_CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1) ==
             CUDA_ERROR_NOT_INITIALIZED);
}

/* ---- the error log ---- */

/* Stubs (OpenGL and EGL interop): failing calls that need no device. */
CUresult cuGLInit(void);
CUresult cuEGLApiInit(void);

static struct {
  int calls;
  CUlogLevel level;
  char last[256];
  int reenter; /* the callback itself makes a failing call */
} seen;

static void on_log(void *data, CUlogLevel level, char *message, size_t length) {
  TEST_CHECK(data == &seen);
  TEST_CHECK(strlen(message) == length);
  seen.calls++, seen.level = level;
  snprintf(seen.last, sizeof seen.last, "%s", message);
  if (seen.reenter) TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
}

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static void logs_bad_input(void) {
  CUlogIterator it;
  size_t size = 16;
  char buf[16];
  TEST_CHECK(cuLogsCurrent(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsCurrent(&it, 1) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsRegisterCallback(NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsUnregisterCallback(NULL) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsDumpToMemory(NULL, NULL, &size, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsDumpToMemory(NULL, buf, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsDumpToMemory(NULL, buf, &size, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLogsDumpToFile(NULL, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  OK(cuLogsCurrent(&it, 0));
  it += 5; /* past the end */
  TEST_CHECK(cuLogsDumpToMemory(&it, buf, &size, 0) == CUDA_ERROR_INVALID_VALUE);
}

/* Messages of failing calls reach callbacks and dumps; dumps advance their iterator. */
static void logs_dump_and_callbacks(void) {
  CUlogIterator it, now;
  CUlogsCallbackHandle h;
  char buf[4096];
  size_t size = sizeof buf;
  OK(cuLogsCurrent(&it, 0));
  OK(cuLogsRegisterCallback(on_log, &seen, &h));
  seen.calls = 0;
  TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(seen.calls == 1 && seen.level == CU_LOG_LEVEL_ERROR);
  TEST_CHECK_MSG(strstr(seen.last, "cuGLInit") != NULL, "callback got '%s'", seen.last);
  OK(cuLogsDumpToMemory(&it, buf, &size, 0));
  TEST_CHECK_MSG(size == strlen(buf) && count_of(buf, "cuGLInit") == 1, "dump: '%s'", buf);
  OK(cuLogsCurrent(&now, 0));
  TEST_CHECK(it == now);
  size = sizeof buf; /* nothing new: an empty success */
  OK(cuLogsDumpToMemory(&it, buf, &size, 0));
  TEST_CHECK(size == 0 && buf[0] == 0);
  seen.reenter = 1; /* a callback's own failure is kept, not handed back to it */
  TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
  seen.reenter = 0;
  TEST_CHECK(seen.calls == 2);
  size = sizeof buf;
  OK(cuLogsDumpToMemory(&it, buf, &size, 0));
  TEST_CHECK_MSG(count_of(buf, "cuGLInit") == 2, "dump: '%s'", buf);
  OK(cuLogsUnregisterCallback(h));
  TEST_CHECK(cuLogsUnregisterCallback(h) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(seen.calls == 2);
}

/* A buffer too small for all: the newest messages, after a note that older ones are left out. */
static void logs_small_buffer(void) {
  CUlogIterator it;
  char buf[4096];
  OK(cuLogsCurrent(&it, 0));
  for (int i = 0; i < 3; i++) TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
  TEST_CHECK(cuEGLApiInit() == CUDA_ERROR_NOT_SUPPORTED);
  size_t all = sizeof buf;
  CUlogIterator it2 = it;
  OK(cuLogsDumpToMemory(&it2, buf, &all, 0));
  const char *newest = strstr(buf, "cuEGLApiInit");
  TEST_CHECK(newest != NULL);
  if (!newest) return;
  while (newest > buf && newest[-1] != '\n') newest--; /* its line's start */
  TEST_CHECK_MSG(strstr(newest, "][CUDA][E] ") != NULL, "line '%s'", newest);
  size_t size = strlen(newest) + 1; /* the newest message only, no room for the note */
  CUlogIterator it3 = it;
  OK(cuLogsDumpToMemory(&it3, buf, &size, 0));
  TEST_CHECK_MSG(count_of(buf, "cuEGLApiInit") == 1 && !count_of(buf, "cuGLInit"), "'%s'", buf);
  size = 200; /* room for the note and the newest */
  it3 = it;
  OK(cuLogsDumpToMemory(&it3, buf, &size, 0));
  TEST_CHECK_MSG(count_of(buf, "dropped") == 1 && count_of(buf, "cuEGLApiInit") == 1, "'%s'", buf);
  size = 5; /* not even one message */
  it3 = it;
  TEST_CHECK(cuLogsDumpToMemory(&it3, buf, &size, 0) == CUDA_ERROR_INVALID_VALUE && size == 0);
  TEST_CHECK(it3 == it);
}

/* Past 25600 bytes the oldest go, and a dump from before them says so. */
static void logs_overflow_and_file(void) {
  CUlogIterator it;
  OK(cuLogsCurrent(&it, 0));
  for (int i = 0; i < 600; i++) TEST_CHECK(cuGLInit() == CUDA_ERROR_NOT_SUPPORTED);
  static char buf[32768];
  size_t size = sizeof buf;
  CUlogIterator from = it;
  OK(cuLogsDumpToMemory(&from, buf, &size, 0));
  TEST_CHECK_MSG(strncmp(buf, "[CUDA][W] earlier log messages were dropped", 43) == 0, "'%.80s'",
                 buf);
  TEST_CHECK(size <= 25600 + 200 && count_of(buf, "cuGLInit") < 600);
  char path[] = "/tmp/nvhcq_logs_XXXXXX";
  int fd = mkstemp(path);
  TEST_CHECK(fd >= 0);
  close(fd);
  TEST_CHECK(cuEGLApiInit() == CUDA_ERROR_NOT_SUPPORTED);
  OK(cuLogsDumpToFile(&from, path, 0));
  TEST_CHECK(cuEGLApiInit() == CUDA_ERROR_NOT_SUPPORTED);
  OK(cuLogsDumpToFile(&from, path, 0)); /* appends the one newer message */
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = 0;
  TEST_CHECK_MSG(count_of(buf, "cuEGLApiInit") == 2, "file holds '%.200s'", buf);
  unlink(path);
  TEST_CHECK(cuLogsDumpToFile(NULL, "/nonexistent-dir/log", 0) == CUDA_ERROR_INVALID_VALUE);
}

/* The 32-bit names a client finds by name answer as NVIDIA's do (driver 580): the total does
 * not fit, and no 64-bit context has 32-bit device pointers. */
static void test_legacy_names(void) {
  NEED_DEVICE();
  CUresult (*total)(unsigned *, CUdevice) =
      (CUresult(*)(unsigned *, CUdevice))own("cuDeviceTotalMem");
  CUresult (*info)(unsigned *, unsigned *) =
      (CUresult(*)(unsigned *, unsigned *))own("cuMemGetInfo");
  CUresult (*alloc)(unsigned *, unsigned) = (CUresult(*)(unsigned *, unsigned))own("cuMemAlloc");
  TEST_CHECK(total && info && alloc);
  if (!total || !info || !alloc) return;
  unsigned a = 7, b = 7;
  size_t full = 0;
  OK(cuDeviceTotalMem_v2(&full, 0));
  OK(total(&a, 0));
  TEST_CHECK_MSG(a == (full > 0xffffffffu ? 0u : (unsigned)full), "%u bytes", a);
  TEST_CHECK(total(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(info(&a, &b) == CUDA_ERROR_INVALID_CONTEXT);
  a = 0;
  TEST_CHECK(alloc(&a, 4096) == CUDA_ERROR_INVALID_CONTEXT && a == 0);
}

/* Without a device (CI), cuInit's failure is in the log with its reason. */
static void logs_init(void) {
  CUlogIterator it;
  OK(cuLogsCurrent(&it, 0));
  if (cuInit(0) == CUDA_SUCCESS) return;
  char buf[4096];
  size_t size = sizeof buf;
  OK(cuLogsDumpToMemory(&it, buf, &size, 0));
  TEST_CHECK_MSG(count_of(buf, "cuInit: no GPU") == 1, "log: '%.300s'", buf);
}

static void test_logs(void) {
  logs_bad_input();
  logs_dump_and_callbacks();
  logs_small_buffer();
  logs_overflow_and_file();
  logs_init();
}

/* ---- peer access and the link's attributes ---- */

static int device_count(void) {
  int n = 0;
  OK(cuDeviceGetCount(&n));
  return n;
}

/* Errors that need one device only. */
static void peer_errors_one_device(CUcontext ctx0) {
  int v = -1;
  TEST_CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0) ==
             CUDA_ERROR_INVALID_DEVICE);
  TEST_CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 99) ==
             CUDA_ERROR_INVALID_DEVICE);
  TEST_CHECK(cuDeviceGetP2PAttribute(NULL, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceCanAccessPeer(&v, 0, 0) == CUDA_SUCCESS && v == 0);
  TEST_CHECK(cuCtxEnablePeerAccess(ctx0, 0) == CUDA_ERROR_INVALID_CONTEXT); /* itself */
  TEST_CHECK(cuCtxDisablePeerAccess(ctx0) == CUDA_ERROR_INVALID_CONTEXT);
  TEST_CHECK(cuCtxDisablePeerAccess(NULL) == CUDA_ERROR_INVALID_CONTEXT);
  TEST_CHECK(cuCtxEnablePeerAccess(ctx0, 1) == CUDA_ERROR_INVALID_VALUE);
}

static void test_peer_access(void) {
  NEED_DEVICE();
  CUcontext ctx0, ctx1;
  OK(cuCtxGetCurrent(&ctx0));
  peer_errors_one_device(ctx0);
  if (device_count() < 2) TEST_SKIP("two-device cases need two GPUs (NVHCQ_MOCK_GPUS=2)");
  OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
  int can = -1, v = -1;
  OK(cuDeviceCanAccessPeer(&can, 0, 1));
  OK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
  TEST_CHECK_MSG(v == can, "ACCESS_SUPPORTED %d, cuDeviceCanAccessPeer %d", v, can);
  if (on_mock()) TEST_CHECK(can == 1); /* the mock's GPUs have NVLink between them */
  static const CUdevice_P2PAttribute zero[] = {
      CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
      CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED,
      CU_DEVICE_P2P_ATTRIBUTE_ACCESS_ACCESS_SUPPORTED,
      CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED};
  for (size_t i = 0; i < sizeof zero / sizeof *zero; i++) {
    v = -1;
    OK(cuDeviceGetP2PAttribute(&v, zero[i], 1, 0));
    TEST_CHECK_MSG(v == 0, "P2P attribute %d is %d", (int)zero[i], v);
  }
  TEST_CHECK(cuDeviceGetP2PAttribute(&v, (CUdevice_P2PAttribute)99, 0, 1) ==
             CUDA_ERROR_INVALID_VALUE);
  if (!can) {
    TEST_CHECK(cuCtxEnablePeerAccess(ctx1, 0) == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    TEST_SKIP("the two GPUs have no P2P path");
  }
  /* enable, disable and enable again give CUDA's codes at each step */
  TEST_CHECK(cuCtxDisablePeerAccess(ctx1) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  OK(cuCtxEnablePeerAccess(ctx1, 0));
  TEST_CHECK(cuCtxEnablePeerAccess(ctx1, 0) == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  OK(cuCtxDisablePeerAccess(ctx1));
  TEST_CHECK(cuCtxDisablePeerAccess(ctx1) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  OK(cuCtxEnablePeerAccess(ctx1, 0));
  /* one direction: device 1's context has not enabled access to device 0's */
  OK(cuCtxSetCurrent(ctx1));
  TEST_CHECK(cuCtxDisablePeerAccess(ctx0) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  OK(cuCtxSetCurrent(ctx0));
  OK(cuCtxDisablePeerAccess(ctx1));
  OK(cuDevicePrimaryCtxRelease_v2(1));
}

/* ---- pools by location, and their access ---- */

static void test_pool_locations(void) {
  NEED_DEVICE();
  CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemoryPool def = NULL, byloc = NULL, cur = NULL, mine = NULL;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  OK(cuMemGetDefaultMemPool(&byloc, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(byloc == def);
  OK(cuMemGetMemPool(&cur, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == def);
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = dev0};
  OK(cuMemPoolCreate(&mine, &props));
  OK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, mine));
  OK(cuMemGetMemPool(&cur, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == mine);
  OK(cuDeviceGetMemPool(&cur, 0));
  TEST_CHECK(cur == mine); /* the same setting as cuDeviceSetMemPool's */
  OK(cuMemGetDefaultMemPool(&cur, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == def);
  OK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, def));
  OK(cuMemGetMemPool(&cur, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == def);
  /* what CUDA refuses */
  CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0}, none = {CU_MEM_LOCATION_TYPE_NONE, 0};
  CUmemLocation bad = {CU_MEM_LOCATION_TYPE_DEVICE, 99};
  TEST_CHECK(cuMemGetDefaultMemPool(&cur, &bad, CU_MEM_ALLOCATION_TYPE_PINNED) ==
             CUDA_ERROR_INVALID_DEVICE);
  TEST_CHECK(cuMemGetMemPool(&cur, &bad, CU_MEM_ALLOCATION_TYPE_PINNED) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuMemGetDefaultMemPool(&cur, &none, CU_MEM_ALLOCATION_TYPE_PINNED) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuMemGetDefaultMemPool(&cur, &dev0, CU_MEM_ALLOCATION_TYPE_INVALID) ==
             CUDA_ERROR_INVALID_VALUE);
  /* the host's and the managed default pools; a host pool of one's own made current */
  CUmemoryPool hdef = NULL, mdef = NULL, hmine = NULL;
  OK(cuMemGetDefaultMemPool(&hdef, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  OK(cuMemGetMemPool(&cur, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(hdef && cur == hdef && hdef != def);
  OK(cuMemGetMemPool(&mdef, &none, CU_MEM_ALLOCATION_TYPE_MANAGED));
  TEST_CHECK(mdef && mdef != hdef && mdef != def);
  CUmemPoolProps hprops = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = host};
  OK(cuMemPoolCreate(&hmine, &hprops));
  TEST_CHECK(cuMemSetMemPool(&none, CU_MEM_ALLOCATION_TYPE_MANAGED, hmine) ==
             CUDA_ERROR_INVALID_VALUE); /* not a managed pool */
  TEST_CHECK(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, mine) ==
             CUDA_ERROR_INVALID_VALUE); /* a device's pool */
  OK(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, hmine));
  OK(cuMemGetMemPool(&cur, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == hmine);
  OK(cuMemPoolDestroy(hmine)); /* no longer current */
  OK(cuMemGetMemPool(&cur, &host, CU_MEM_ALLOCATION_TYPE_PINNED));
  TEST_CHECK(cur == hdef);
  TEST_CHECK(cuMemGetDefaultMemPool(NULL, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  if (device_count() > 1) {
    CUmemLocation dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    TEST_CHECK(cuMemSetMemPool(&dev1, CU_MEM_ALLOCATION_TYPE_PINNED, mine) ==
               CUDA_ERROR_INVALID_VALUE); /* device 0's pool */
  }
  OK(cuMemPoolDestroy(mine));
}

static CUmemAccess_flags access_of(CUmemoryPool pool, CUmemLocation loc) {
  CUmemAccess_flags f = (CUmemAccess_flags)-1;
  OK(cuMemPoolGetAccess(&f, pool, &loc));
  return f;
}

static void test_pool_access(void) {
  NEED_DEVICE();
  CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = dev0};
  CUmemoryPool pool;
  OK(cuMemPoolCreate(&pool, &props));
  TEST_CHECK(access_of(pool, dev0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  TEST_CHECK(access_of(pool, host) == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUmemAccessDesc own = {dev0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  OK(cuMemPoolSetAccess(pool, &own, 1));
  own.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE; /* the owner keeps its access */
  TEST_CHECK(cuMemPoolSetAccess(pool, &own, 1) == CUDA_ERROR_INVALID_VALUE);
  own.flags = (CUmemAccess_flags)2;
  TEST_CHECK(cuMemPoolSetAccess(pool, &own, 1) == CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc to_host = {host, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  TEST_CHECK(cuMemPoolSetAccess(pool, &to_host, 1) == CUDA_ERROR_INVALID_VALUE);
  CUmemLocation bad = {(CUmemLocationType)9, 0};
  CUmemAccess_flags f;
  TEST_CHECK(cuMemPoolGetAccess(&f, pool, &bad) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuMemPoolGetAccess(&f, NULL, &dev0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(access_of(pool, dev0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  if (device_count() < 2) {
    OK(cuMemPoolDestroy(pool));
    TEST_SKIP("access from a second device needs two GPUs (NVHCQ_MOCK_GPUS=2)");
  }
  CUmemLocation dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
  TEST_CHECK(access_of(pool, dev1) == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  /* a refused descriptor applies none of the others */
  CUmemAccessDesc both[2] = {{dev1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
                             {dev0, CU_MEM_ACCESS_FLAGS_PROT_READ}};
  TEST_CHECK(cuMemPoolSetAccess(pool, both, 2) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(access_of(pool, dev1) == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  int can = 0;
  OK(cuDeviceCanAccessPeer(&can, 1, 0));
  if (!can) {
    OK(cuMemPoolDestroy(pool));
    TEST_SKIP("the two GPUs have no P2P path");
  }
  static const CUmemAccess_flags round[] = {
      CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READ,
      CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  for (size_t i = 0; i < sizeof round / sizeof *round; i++) {
    CUmemAccessDesc d = {dev1, round[i]};
    OK(cuMemPoolSetAccess(pool, &d, 1));
    TEST_CHECK_MSG(access_of(pool, dev1) == round[i], "step %zu: %d", i,
                   (int)access_of(pool, dev1));
    TEST_CHECK(access_of(pool, dev0) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  }
  OK(cuMemPoolDestroy(pool));
}

/* ---- managed memory's stream association ---- */

static void test_attach_mem(void) {
  NEED_DEVICE();
  enum { N = 1 << 16 };
  CUdeviceptr m, plain;
  OK(cuMemAllocManaged(&m, N * 4, CU_MEM_ATTACH_GLOBAL));
  OK(cuMemAlloc_v2(&plain, N * 4));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  TEST_CHECK(cuStreamAttachMemAsync(s, m, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamAttachMemAsync(s, plain, 0, CU_MEM_ATTACH_HOST) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamAttachMemAsync(s, m + 4, 0, CU_MEM_ATTACH_HOST) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuStreamAttachMemAsync(s, m, N * 2, CU_MEM_ATTACH_HOST) == CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamAttachMemAsync(s, m, N * 4, CU_MEM_ATTACH_SINGLE)); /* the whole size or 0 */
  OK(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_GLOBAL));
  /* in the stream's order: a copy into the memory, the attach, a copy out, all as issued */
  uint32_t *in = malloc(N * 4), *out = malloc(N * 4);
  uint32_t *hm = (uint32_t *)(uintptr_t)m;
  for (uint32_t round = 0; round < 3; round++) {
    for (uint32_t i = 0; i < N; i++) in[i] = i * 7 + round;
    memset(out, 0, N * 4);
    OK(cuMemcpyHtoDAsync_v2(m, in, N * 4, s));
    OK(cuStreamAttachMemAsync(s, m, 0, round == 1 ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_SINGLE));
    OK(cuMemcpyDtoDAsync_v2(plain, m, N * 4, s));
    OK(cuMemcpyDtoHAsync_v2(out, plain, N * 4, s));
    OK(cuStreamSynchronize(s));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++) bad += out[i] != in[i] || hm[i] != in[i];
    TEST_CHECK_MSG(bad == 0, "round %u: %d of %d values wrong", round, bad, N);
  }
  /* a captured stream cannot attach */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  TEST_CHECK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL) ==
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph g = NULL;
  OK(cuStreamEndCapture(s, &g));
  if (g) OK(cuGraphDestroy(g));
  free(in);
  free(out);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(plain));
  OK(cuMemFree_v2(m));
}

/* ---- tensor maps ---- */

static CUresult encode_2d(CUtensorMap *map, uintptr_t address) {
  cuuint64_t dims[2] = {1024, 512}, strides[1] = {1024 * 2};
  cuuint32_t box[2] = {64, 32}, estrides[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, (CUtensorMapDataType)6 /* FLOAT16 */, 2, (void *)address, dims,
                                strides, box, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                (CUtensorMapSwizzle)3 /* 128B */, (CUtensorMapL2promotion)2,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* A rank-3 map with 32-byte interleave: its addresses must be 32-byte aligned. */
static CUresult encode_interleaved(CUtensorMap *map, uintptr_t address) {
  cuuint64_t dims[3] = {16, 64, 64}, strides[2] = {16 * 2, 16 * 2 * 64};
  cuuint32_t box[3] = {16, 8, 8}, estrides[3] = {1, 1, 1};
  return cuTensorMapEncodeTiled(map, (CUtensorMapDataType)6, 3, (void *)address, dims, strides, box,
                                estrides, (CUtensorMapInterleave)2 /* 32B */,
                                (CUtensorMapSwizzle)1 /* 32B */, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static void check_replace(CUresult (*encode)(CUtensorMap *, uintptr_t), uintptr_t a, uintptr_t b,
                          uintptr_t misaligned, const char *what) {
  CUtensorMap map, want, before;
  memset(&map, 0, sizeof map);
  memset(&want, 0, sizeof want);
  CUresult r = encode(&map, a);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "%s: encoding: %d", what, (int)r);
  OK(encode(&want, b));
  OK(cuTensorMapReplaceAddress(&map, (void *)b));
  TEST_CHECK_MSG(!memcmp(&map, &want, sizeof map), "%s: not the map encoded with the new address",
                 what);
  TEST_CHECK_MSG(map.opaque[0] == b, "%s: the address reads back as 0x%llx", what,
                 (unsigned long long)map.opaque[0]);
  before = map;
  TEST_CHECK(cuTensorMapReplaceAddress(&map, (void *)misaligned) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK_MSG(!memcmp(&map, &before, sizeof map), "%s: a refused address changed the map", what);
  TEST_CHECK(encode(&want, misaligned) == CUDA_ERROR_INVALID_VALUE); /* as encoding refuses it */
}

static void test_tensor_map_replace(void) {
  check_replace(encode_2d, 0x10000000, 0x7f0000001230, 0x10000008, "tiled");
  check_replace(encode_interleaved, 0x20000000, 0x20004020, 0x20004010, "interleaved");
  TEST_CHECK(cuTensorMapReplaceAddress(NULL, (void *)0x1000) == CUDA_ERROR_INVALID_VALUE);
}

/* ---- flushes and texture limits ---- */

static void test_flush_and_texture(void) {
  NEED_DEVICE();
  OK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER));
  OK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES));
  TEST_CHECK(cuFlushGPUDirectRDMAWrites((CUflushGPUDirectRDMAWritesTarget)1,
                                        CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                        (CUflushGPUDirectRDMAWritesScope)150) ==
             CUDA_ERROR_INVALID_VALUE);
  CUcontext ctx;
  OK(cuCtxGetCurrent(&ctx));
  OK(cuCtxSetCurrent(NULL));
  TEST_CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                        CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
             CUDA_ERROR_INVALID_CONTEXT);
  OK(cuCtxSetCurrent(ctx));
  size_t w = 0;
  int attr = 0;
  OK(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 0));
  OK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 4, 0));
  TEST_CHECK_MSG(w == (size_t)1 << 28 && w == (size_t)attr, "%zu elements, attribute %d", w, attr);
  /* 4 GiB of elements, at most 2^30 (NVIDIA's answers, driver 580) */
  OK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0));
  TEST_CHECK_MSG(w == (size_t)1 << 30, "u8: %zu", w);
  OK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_HALF, 4, 0));
  TEST_CHECK_MSG(w == (size_t)1 << 29, "half4: %zu", w);
  OK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 2, 0));
  TEST_CHECK_MSG(w == (size_t)1 << 29, "float2: %zu", w);
  TEST_CHECK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 3, 0) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetTexture1DLinearMaxWidth(&w, (CUarray_format)0x77, 1, 0) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetTexture1DLinearMaxWidth(NULL, CU_AD_FORMAT_FLOAT, 1, 0) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 1, 99) ==
             CUDA_ERROR_INVALID_DEVICE);
}

/* ---- a kernel: legacy launches, cache preference, cluster sizes ---- */

/* out[2i] = v + i and out[2i + 1] = f's bits, i the thread's index in the whole grid (blocks in
 * x then y). Parameters at offsets 0 (p), 8 (v) and 12 (f): 16 bytes. */
static const char fill_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry legacy_fill(.param .u64 p, .param .u32 v, .param .f32 f) {\n"
    "  .reg .b32 %r<10>; .reg .b64 %rd<4>; .reg .f32 %f1;\n"
    "  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [v]; ld.param.f32 %f1, [f];\n"
    "  mov.u32 %r2, %ctaid.y; mov.u32 %r3, %nctaid.x; mov.u32 %r4, %ctaid.x;\n"
    "  mad.lo.s32 %r2, %r2, %r3, %r4;\n"
    "  mov.u32 %r5, %ntid.x; mov.u32 %r6, %tid.x; mad.lo.s32 %r2, %r2, %r5, %r6;\n"
    "  add.u32 %r7, %r1, %r2; mov.b32 %r8, %f1;\n"
    "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd2, %r2, 8; add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3], %r7; st.global.u32 [%rd3+4], %r8;\n"
    "  ret;\n}\n";

/* A module from PTX text, with the PTX also named for the mock (which runs kernels from PTX), or
 * 0 (the caller skips). */
static int load_ptx(const char *ptx, const char *name, CUmodule *mod, CUfunction *f) {
  if (on_mock()) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/nvhcq_test_cuda_misc_%d.ptx", (int)getpid());
    FILE *file = fopen(path, "w");
    if (!file) return 0;
    fputs(ptx, file);
    fclose(file);
    setenv("NVHCQ_MOCK_PTX", path, 1);
  }
  CUresult r = cuModuleLoadData(mod, ptx);
  if (r) return 0;
  OK(cuModuleGetFunction(f, *mod, name));
  return 1;
}

static int load_fill(CUmodule *mod, CUfunction *f) {
  return load_ptx(fill_ptx, "legacy_fill", mod, f);
}

static void unload_fill(CUmodule mod) {
  OK(cuModuleUnload(mod));
  if (on_mock()) remove(getenv("NVHCQ_MOCK_PTX"));
}

/* Checks out[] after a launch of `threads` threads with v and f; the rest still 0xff bytes. */
static int count_wrong(const uint32_t *out, uint32_t n, uint32_t threads, uint32_t v, float f) {
  uint32_t fbits;
  memcpy(&fbits, &f, 4);
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) {
    int written = i < threads;
    bad += out[2 * i] != (written ? v + i : 0xffffffffu);
    bad += out[2 * i + 1] != (written ? fbits : 0xffffffffu);
  }
  return bad;
}

static void legacy_errors(CUfunction f) {
  TEST_CHECK(cuLaunch(f) == CUDA_ERROR_INVALID_VALUE); /* no block shape yet */
  TEST_CHECK(cuLaunch(NULL) == CUDA_ERROR_INVALID_HANDLE);
  TEST_CHECK(cuFuncSetBlockShape(f, 0, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuFuncSetBlockShape(f, 2048, 1, 1) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuFuncSetBlockShape(NULL, 32, 1, 1) == CUDA_ERROR_INVALID_HANDLE);
  TEST_CHECK(cuParamSetSize(f, 17) == CUDA_ERROR_INVALID_VALUE); /* the kernel takes 16 */
  TEST_CHECK(cuParamSetv(f, 12, &f, 8) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuParamSeti(f, -1, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuParamSetf(f, 16, 1.0f) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuParamSetv(f, 0, NULL, 8) == CUDA_ERROR_INVALID_VALUE);
}

static void test_legacy_launch(void) {
  NEED_DEVICE();
  CUmodule mod;
  CUfunction f;
  if (!load_fill(&mod, &f)) TEST_SKIP("PTX did not load (nvJitLink needed)");
  legacy_errors(f);
  enum { N = 1024 };
  CUdeviceptr out;
  uint32_t *host = malloc(N * 8);
  OK(cuMemAlloc_v2(&out, N * 8));
  OK(cuFuncSetBlockShape(f, 32, 1, 1));
  OK(cuFuncSetSharedSize(f, 0));
  OK(cuParamSetv(f, 0, &out, sizeof out));
  OK(cuParamSeti(f, 8, 1000));
  OK(cuParamSetf(f, 12, 2.5f));
  OK(cuParamSetSize(f, 16));
  TEST_CHECK(cuLaunchGrid(f, 0, 1) == CUDA_ERROR_INVALID_VALUE);
  /* cuLaunch: one block of 32 threads */
  OK(cuMemsetD8_v2(out, 0xff, N * 8));
  OK(cuLaunch(f));
  OK(cuMemcpyDtoH_v2(host, out, N * 8));
  int bad = count_wrong(host, N, 32, 1000, 2.5f);
  TEST_CHECK_MSG(bad == 0, "cuLaunch: %d words wrong (first %u %u)", bad, host[0], host[1]);
  /* cuLaunchGrid: 2 x 3 blocks; new values at the same offsets */
  OK(cuParamSeti(f, 8, 5));
  OK(cuParamSetf(f, 12, -1.0f));
  OK(cuMemsetD8_v2(out, 0xff, N * 8));
  OK(cuLaunchGrid(f, 2, 3));
  OK(cuMemcpyDtoH_v2(host, out, N * 8));
  bad = count_wrong(host, N, 6 * 32, 5, -1.0f);
  TEST_CHECK_MSG(bad == 0, "cuLaunchGrid: %d words wrong", bad);
  /* cuLaunchGridAsync in a stream, behind a memset and before a copy of that stream */
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuFuncSetBlockShape(f, 64, 1, 1));
  OK(cuParamSeti(f, 8, 77));
  OK(cuMemsetD8Async(out, 0xff, N * 8, s));
  OK(cuLaunchGridAsync(f, 4, 1, s));
  OK(cuMemcpyDtoHAsync_v2(host, out, N * 8, s));
  OK(cuStreamSynchronize(s));
  bad = count_wrong(host, N, 4 * 64, 77, -1.0f);
  TEST_CHECK_MSG(bad == 0, "cuLaunchGridAsync: %d words wrong", bad);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(out));
  free(host);
  unload_fill(mod);
}

/* ---- parameters past 4 KiB ---- */

/* out[i] = t[i] * 2 + 1 for i < n, t a 28000-byte parameter (CUDA 12.1 on takes up to 32764
 * bytes of parameters; nvcc and nvJitLink describe such kernels' parameters with a record of
 * their own). Parameters at 0 (t), 28000 (out), 28008 (n). */
enum { BIG_INTS = 7000 };
static const char big_ptx[] =
    ".version 8.1\n.target sm_80\n.address_size 64\n"
    ".visible .entry big_params(.param .align 4 .b8 t[28000], .param .u64 out, .param .u32 n) {\n"
    "  .reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;\n"
    "  mov.b64 %rd1, t; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [n];\n"
    "  cvta.to.global.u64 %rd2, %rd2; mov.u32 %r2, %tid.x; mov.u32 %r3, %ntid.x;\n"
    "LOOP:\n"
    "  setp.ge.s32 %p1, %r2, %r1; @%p1 bra DONE;\n"
    "  mul.wide.s32 %rd3, %r2, 4; add.s64 %rd4, %rd1, %rd3; ld.param.u32 %r4, [%rd4];\n"
    "  shl.b32 %r5, %r4, 1; or.b32 %r5, %r5, 1; add.s64 %rd5, %rd2, %rd3; st.global.u32 [%rd5], "
    "%r5;\n"
    "  add.s32 %r2, %r2, %r3; bra LOOP;\n"
    "DONE:\n  ret;\n}\n";

static int big_wrong(CUdeviceptr out, const int32_t *t) {
  static int32_t got[BIG_INTS];
  OK(cuMemcpyDtoH_v2(got, out, sizeof got));
  int bad = 0;
  for (int i = 0; i < BIG_INTS; i++) bad += got[i] != t[i] * 2 + 1;
  return bad;
}

static void test_big_params(void) {
  NEED_DEVICE();
  CUmodule mod;
  CUfunction f;
  if (!load_ptx(big_ptx, "big_params", &mod, &f)) TEST_SKIP("PTX did not load (nvJitLink needed)");
  const size_t offsets[] = {0, 28000, 28008}, sizes[] = {28000, 8, 4};
  for (size_t i = 0; i < 3; i++) {
    size_t off = 0, size = 0;
    OK(cuFuncGetParamInfo(f, i, &off, &size));
    TEST_CHECK_MSG(off == offsets[i] && size == sizes[i], "parameter %zu: %zu bytes at %zu", i,
                   size, off);
  }
  TEST_CHECK(cuFuncGetParamInfo(f, 3, &(size_t){0}, &(size_t){0}) == CUDA_ERROR_INVALID_VALUE);
  static int32_t t[BIG_INTS];
  for (int i = 0; i < BIG_INTS; i++) t[i] = i * 3 - 5000;
  CUdeviceptr out;
  int32_t n = BIG_INTS;
  OK(cuMemAlloc_v2(&out, sizeof t));
  /* kernelParams: the table is one parameter of 28000 bytes */
  OK(cuMemsetD8_v2(out, 0, sizeof t));
  void *params[] = {t, &out, &n};
  OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  int bad = big_wrong(out, t);
  TEST_CHECK_MSG(bad == 0, "kernelParams: %d of %d wrong", bad, BIG_INTS);
  /* extra: the whole 28012-byte block (28016 with the tail the ABI pads to 8) */
  static uint8_t block[28016];
  memcpy(block, t, sizeof t), memcpy(block + 28000, &out, 8), memcpy(block + 28008, &n, 4);
  size_t block_size = sizeof block;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, block, CU_LAUNCH_PARAM_BUFFER_SIZE, &block_size,
                   CU_LAUNCH_PARAM_END};
  for (int i = 0; i < BIG_INTS; i++) t[i] = -t[i];
  memcpy(block, t, sizeof t);
  OK(cuMemsetD8_v2(out, 0, sizeof t));
  OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
  bad = big_wrong(out, t);
  TEST_CHECK_MSG(bad == 0, "extra: %d of %d wrong", bad, BIG_INTS);
  OK(cuMemFree_v2(out));
  OK(cuModuleUnload(mod));
  if (on_mock()) remove(getenv("NVHCQ_MOCK_PTX"));
}

/* With peer access, a kernel on device 0 writes device 1's memory at its own address. */
static void test_peer_kernel(void) {
  NEED_DEVICE();
  if (device_count() < 2) TEST_SKIP("needs two GPUs (NVHCQ_MOCK_GPUS=2)");
  int can = 0;
  OK(cuDeviceCanAccessPeer(&can, 0, 1));
  if (!can) TEST_SKIP("the two GPUs have no P2P path");
  CUcontext ctx0, ctx1;
  OK(cuCtxGetCurrent(&ctx0));
  OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
  enum { N = 64 };
  CUdeviceptr remote;
  OK(cuCtxSetCurrent(ctx1));
  OK(cuMemAlloc_v2(&remote, N * 8));
  OK(cuMemsetD8_v2(remote, 0xff, N * 8));
  OK(cuCtxSynchronize());
  OK(cuCtxSetCurrent(ctx0));
  CUmodule mod;
  CUfunction f;
  if (!load_fill(&mod, &f)) TEST_SKIP("PTX did not load (nvJitLink needed)");
  OK(cuCtxEnablePeerAccess(ctx1, 0));
  OK(cuFuncSetBlockShape(f, 32, 1, 1));
  OK(cuParamSetv(f, 0, &remote, sizeof remote));
  OK(cuParamSeti(f, 8, 9));
  OK(cuParamSetf(f, 12, 0.5f));
  OK(cuParamSetSize(f, 16));
  OK(cuLaunch(f));
  OK(cuCtxSynchronize());
  uint32_t host[N * 2];
  OK(cuCtxSetCurrent(ctx1));
  OK(cuMemcpyDtoH_v2(host, remote, sizeof host));
  int bad = count_wrong(host, N, 32, 9, 0.5f);
  TEST_CHECK_MSG(bad == 0, "%d words of device 1's memory wrong (first %u)", bad, host[0]);
  OK(cuMemFree_v2(remote));
  OK(cuCtxSetCurrent(ctx0));
  OK(cuCtxDisablePeerAccess(ctx1));
  unload_fill(mod);
  OK(cuDevicePrimaryCtxRelease_v2(1));
}

static void test_kernel_cache_config(void) {
  NEED_DEVICE();
  CUmodule mod;
  CUfunction f;
  if (!load_fill(&mod, &f)) TEST_SKIP("PTX did not load (nvJitLink needed)");
  OK(cuKernelSetCacheConfig((CUkernel)f, CU_FUNC_CACHE_PREFER_L1, 0));
  OK(cuKernelSetCacheConfig((CUkernel)f, CU_FUNC_CACHE_PREFER_EQUAL, 0));
  TEST_CHECK(cuKernelSetCacheConfig((CUkernel)f, (CUfunc_cache)7, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuKernelSetCacheConfig((CUkernel)f, CU_FUNC_CACHE_PREFER_NONE, 99) ==
             CUDA_ERROR_INVALID_DEVICE);
  TEST_CHECK(cuKernelSetCacheConfig(NULL, CU_FUNC_CACHE_PREFER_NONE, 0) ==
             CUDA_ERROR_INVALID_HANDLE);
  unload_fill(mod);
}

/* Clusters of `size` blocks of the config's shape that fit at once. */
static int active_clusters(CUfunction f, CUlaunchConfig c, unsigned size) {
  CUlaunchAttribute a = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
  a.value.clusterDim.x = size, a.value.clusterDim.y = 1, a.value.clusterDim.z = 1;
  c.attrs = &a, c.numAttrs = 1, c.gridDimX = size;
  int n = -1;
  CUresult r = cuOccupancyMaxActiveClusters(&n, f, &c);
  return r ? -(int)r : n;
}

static void check_cluster_size(CUfunction f, unsigned threads, unsigned shared, int limit) {
  CUlaunchConfig c = {.gridDimX = 16,
                      .gridDimY = 1,
                      .gridDimZ = 1,
                      .blockDimX = threads,
                      .blockDimY = 1,
                      .blockDimZ = 1,
                      .sharedMemBytes = shared};
  int size = -1;
  OK(cuOccupancyMaxPotentialClusterSize(&size, f, &c));
  TEST_CHECK_MSG(size >= 1 && size <= limit, "%u threads, %u bytes: cluster size %d", threads,
                 shared, size);
  if (size < 1) return;
  /* the largest that fits: one cluster of it is resident, and none of one more block */
  TEST_CHECK_MSG(active_clusters(f, c, (unsigned)size) >= 1, "size %d does not fit", size);
  if (size < limit)
    TEST_CHECK_MSG(active_clusters(f, c, (unsigned)size + 1) == 0, "size %d fits too", size + 1);
}

static void test_cluster_size(void) {
  NEED_DEVICE();
  int major = 0;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  if (major != 9) TEST_SKIP("thread-block clusters run on sm_90 (Hopper) here");
  CUmodule mod;
  CUfunction f;
  if (!load_fill(&mod, &f)) TEST_SKIP("PTX did not load (nvJitLink needed)");
  CUlaunchConfig c = {.gridDimX = 8,
                      .gridDimY = 1,
                      .gridDimZ = 1,
                      .blockDimX = 128,
                      .blockDimY = 1,
                      .blockDimZ = 1};
  int size = -1;
  OK(cuOccupancyMaxPotentialClusterSize(&size, f, &c));
  TEST_CHECK_MSG(size == 8, "portable: %d", size); /* small blocks: the portable limit */
  OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  OK(cuOccupancyMaxPotentialClusterSize(&size, f, &c));
  TEST_CHECK_MSG(size == 16, "non-portable: %d", size);
  /* the shape matters: large blocks with most of the SM's shared memory, one per SM */
  int optin = 0;
  OK(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
  OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin));
  check_cluster_size(f, 1024, (unsigned)optin, 16);
  check_cluster_size(f, 256, 0, 16);
  OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
  check_cluster_size(f, 1024, (unsigned)optin, 8);
  c.blockDimX = 2048; /* more threads than a block has */
  TEST_CHECK(cuOccupancyMaxPotentialClusterSize(&size, f, &c) == CUDA_ERROR_INVALID_VALUE);
  c.blockDimX = 128;
  TEST_CHECK(cuOccupancyMaxPotentialClusterSize(NULL, f, &c) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuOccupancyMaxPotentialClusterSize(&size, NULL, &c) == CUDA_ERROR_INVALID_HANDLE);
  unload_fill(mod);
}

TEST_MAIN(TEST(test_names), TEST(test_legacy_names), TEST(test_logs), TEST(test_peer_access),
          TEST(test_pool_locations), TEST(test_pool_access), TEST(test_attach_mem),
          TEST(test_tensor_map_replace), TEST(test_flush_and_texture), TEST(test_legacy_launch),
          TEST(test_peer_kernel), TEST(test_kernel_cache_config), TEST(test_cluster_size),
          TEST(test_big_params))
