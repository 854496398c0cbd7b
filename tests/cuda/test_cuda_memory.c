/* The driver API's memory calls beyond plain allocation, against nvhcq's libcuda.so.1: host
 * registration, managed memory and its hints, stream-ordered pools, 2D memsets, 3D and peer
 * copies on a GPU or the mock (NVHCQ_MOCK=1), byte for byte; kernels on registered, managed and
 * pool memory on a GPU. cuGetProcAddress finds every one of them without a device. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_test.h"
#define IS(x, code)                                                                                \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    TEST_CHECK_MSG(r_ == (code), "%s: %d, not %s", #x, (int)r_, #code);                            \
  } while (0)

#define PTR(p) ((CUdeviceptr)(uintptr_t)(p))

/* ---- without a device ---- */

/* Each name resolves, at the version and stream flavour driver 580 answers, to the symbol that
 * implements it here (not a stub). */
static void test_proc_address(void) {
  static const nvcu_proc_case cases[] = {
      {"cuMemHostRegister", 12000, 0, "cuMemHostRegister_v2"},
      {"cuMemHostRegister", 6000, 0, "cuMemHostRegister"},
      {"cuMemHostUnregister", 12000, 2, "cuMemHostUnregister"},
      {"cuMemAllocManaged", 12000, 0, "cuMemAllocManaged"},
      {"cuMemPrefetchAsync", 12020, 0, "cuMemPrefetchAsync_v2"},
      {"cuMemPrefetchAsync", 12000, 0, "cuMemPrefetchAsync"},
      {"cuMemPrefetchAsync", 12020, 2, "cuMemPrefetchAsync_v2_ptsz"},
      {"cuMemPrefetchAsync", 12000, 2, "cuMemPrefetchAsync_ptsz"},
      {"cuMemAdvise", 12020, 0, "cuMemAdvise_v2"},
      {"cuMemAdvise", 12000, 0, "cuMemAdvise"},
      {"cuMemRangeGetAttribute", 12000, 0, "cuMemRangeGetAttribute"},
      {"cuMemRangeGetAttributes", 12000, 0, "cuMemRangeGetAttributes"},
      {"cuMemAllocAsync", 12000, 0, "cuMemAllocAsync"},
      {"cuMemAllocAsync", 12000, 2, "cuMemAllocAsync_ptsz"},
      {"cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz"},
      {"cuMemAllocFromPoolAsync", 12000, 2, "cuMemAllocFromPoolAsync_ptsz"},
      {"cuDeviceGetDefaultMemPool", 12000, 0, "cuDeviceGetDefaultMemPool"},
      {"cuDeviceGetMemPool", 12000, 0, "cuDeviceGetMemPool"},
      {"cuDeviceSetMemPool", 12000, 0, "cuDeviceSetMemPool"},
      {"cuMemPoolCreate", 12000, 0, "cuMemPoolCreate"},
      {"cuMemPoolDestroy", 12000, 0, "cuMemPoolDestroy"},
      {"cuMemPoolSetAttribute", 12000, 0, "cuMemPoolSetAttribute"},
      {"cuMemPoolGetAttribute", 12000, 0, "cuMemPoolGetAttribute"},
      {"cuMemPoolTrimTo", 12000, 0, "cuMemPoolTrimTo"},
      {"cuMemsetD2D8", 12000, 0, "cuMemsetD2D8_v2"},
      {"cuMemsetD2D16", 12000, 2, "cuMemsetD2D16_v2_ptds"},
      {"cuMemsetD2D32", 12000, 1, "cuMemsetD2D32_v2"},
      {"cuMemsetD2D8Async", 12000, 0, "cuMemsetD2D8Async"},
      {"cuMemsetD2D32Async", 12000, 2, "cuMemsetD2D32Async_ptsz"},
      {"cuMemcpy3D", 12000, 0, "cuMemcpy3D_v2"},
      {"cuMemcpy3D", 12000, 2, "cuMemcpy3D_v2_ptds"},
      {"cuMemcpy3DAsync", 12000, 0, "cuMemcpy3DAsync_v2"},
      {"cuMemcpy3DAsync", 12000, 2, "cuMemcpy3DAsync_v2_ptsz"},
      {"cuMemcpyPeer", 12000, 0, "cuMemcpyPeer"},
      {"cuMemcpyPeer", 12000, 2, "cuMemcpyPeer_ptds"},
      {"cuMemcpyPeerAsync", 12000, 2, "cuMemcpyPeerAsync_ptsz"},
  };
  check_proc_cases(cases, sizeof cases / sizeof *cases);
  /* implemented, not the weak stubs */
  TEST_CHECK(own("cuMemHostRegister_v2") == (void *)(uintptr_t)&cuMemHostRegister_v2);
  TEST_CHECK(own("cuMemAllocAsync_ptsz") != NULL &&
             own("cuMemAllocAsync_ptsz") == (void *)(uintptr_t)&cuMemAllocAsync);
  TEST_CHECK(own("cuMemcpy3D_v2_ptds") == (void *)(uintptr_t)&cuMemcpy3D_v2);
  void *fn = NULL;
  TEST_CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11000, 0, NULL) == CUDA_ERROR_NOT_FOUND);
}

/* ---- registered host memory ---- */

static int all_bytes(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

/* Registered memory behaves as pinned memory: its device pointer is its address, copies and
 * memsets use it in place, pointer queries know it. */
static void check_registered(uint8_t *p, size_t n, unsigned int flags) {
  CUdeviceptr dp = 0;
  OK(cuMemHostGetDevicePointer_v2(&dp, p, 0));
  TEST_CHECK(dp == PTR(p));
  OK(cuMemHostGetDevicePointer_v2(&dp, p + n - 1, 0));
  TEST_CHECK(dp == PTR(p + n - 1));
  unsigned int got = 99;
  OK(cuMemHostGetFlags(&got, p));
  TEST_CHECK(got == flags);
  unsigned int type = 0;
  int managed = -1;
  void *host = NULL;
  CUdeviceptr start = 0;
  size_t size = 0;
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, PTR(p + 5)));
  OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, PTR(p + 5)));
  OK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, PTR(p + 5)));
  OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, PTR(p + 5)));
  OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, PTR(p + 5)));
  TEST_CHECK(type == CU_MEMORYTYPE_HOST && managed == 0 && host == p + 5);
  TEST_CHECK(start == PTR(p) && size == n);
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  CUdeviceptr devp = 0;
  type = 0;
  void *data[2] = {&type, &devp};
  OK(cuPointerGetAttributes(2, attrs, data, PTR(p + 7)));
  TEST_CHECK(type == CU_MEMORYTYPE_HOST && devp == PTR(p + 7));

  /* synchronous copies both ways, an asynchronous one on a stream, a memset in place */
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n));
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + 1);
  OK(cuMemcpyHtoD_v2(d, p, n));
  memset(p, 0, n);
  OK(cuMemcpyDtoH_v2(p, d, n));
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad += p[i] != (uint8_t)(i * 7 + 1);
  TEST_CHECK_MSG(bad == 0, "%d of %zu bytes differ after the round trip", bad, n);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemsetD8Async(d, 0xc3, n, s));
  OK(cuMemcpyDtoHAsync_v2(p, d, n, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(all_bytes(p, n, 0xc3));
  OK(cuMemsetD8_v2(PTR(p) + 1, 0x11, n - 2));
  TEST_CHECK(p[0] == 0xc3 && p[n - 1] == 0xc3 && all_bytes(p + 1, n - 2, 0x11));
  OK(cuMemcpy(d, PTR(p), n)); /* unified addressing: cuMemcpy takes host addresses too */
  uint8_t *back = malloc(n);
  OK(cuMemcpyDtoH_v2(back, d, n));
  TEST_CHECK(memcmp(back, p, n) == 0);
  free(back);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
}

static void test_register(void) {
  NEED_DEVICE();
  /* unaligned: 10000 bytes from 100 bytes into a page */
  uint8_t *block = NULL;
  TEST_CHECK(posix_memalign((void **)&block, 4096, 4 * 4096) == 0);
  if (!block) return;
  uint8_t *p = block + 100;
  size_t n = 10000;
  unsigned int flags = CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE;
  OK(cuMemHostRegister_v2(p, n, flags));
  check_registered(p, n, flags);
  IS(cuMemHostRegister_v2(p, n, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  /* a range sharing a page with it (nvhcq pins whole pages) */
  IS(cuMemHostRegister_v2(p + n, 8, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  IS(cuMemHostUnregister(p + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  OK(cuMemHostUnregister(p));
  IS(cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  unsigned int got;
  IS(cuMemHostGetFlags(&got, p), CUDA_ERROR_INVALID_VALUE);
  /* the memory is the caller's still: readable and writable after the unregistration */
  p[0] = 0x42;
  TEST_CHECK(p[0] == 0x42 && p[1] == 0x11);
  /* the same range again at once (the previous pin may still wait for the GPU), read-only */
  OK(cuMemHostRegister_v2(p, n, CU_MEMHOSTREGISTER_READ_ONLY));
  OK(cuMemHostUnregister(p));
  free(block);

  /* page-aligned memory of its own mapping, through the unversioned export */
  size_t m = 64 << 10;
  uint8_t *q = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TEST_CHECK(q != MAP_FAILED);
  if (q == MAP_FAILED) return;
  IS(cuMemHostRegister(q + 8, 4096, 0), CUDA_ERROR_INVALID_VALUE); /* 4.0's: whole pages only */
  OK(cuMemHostRegister(q, m, 0));
  check_registered(q, m, 0);
  OK(cuMemHostUnregister(q));
  TEST_CHECK(munmap(q, m) == 0);

  /* argument errors */
  uint8_t buf[64];
  IS(cuMemHostRegister_v2(NULL, 64, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemHostRegister_v2(buf, 0, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemHostRegister_v2(buf, 64, 0x10), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemHostRegister_v2(buf, 64, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED);
  IS(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  IS(cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);
  void *pinned;
  OK(cuMemAllocHost_v2(&pinned, 4096));
  IS(cuMemHostRegister_v2(pinned, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  IS(cuMemHostUnregister(pinned), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  OK(cuMemFreeHost(pinned));
  int v = 0;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0));
  TEST_CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0));
  TEST_CHECK(v == 1);
}

/* ---- managed memory ---- */

static int range_int(CUmem_range_attribute a, CUdeviceptr p, size_t n) {
  int v = 12345;
  OK(cuMemRangeGetAttribute(&v, 4, a, p, n));
  return v;
}

static void test_managed(void) {
  NEED_DEVICE();
  int v = -1;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
  TEST_CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
  TEST_CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0));
  TEST_CHECK(v == 0);
  size_t n = 1 << 20;
  CUdeviceptr m;
  IS(cuMemAllocManaged(&m, n, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL));
  uint32_t *h = (uint32_t *)(uintptr_t)m;
  for (size_t i = 0; i < n / 4; i++) h[i] = (uint32_t)i * 3u;
  uint32_t *back = malloc(n);
  OK(cuMemcpyDtoH_v2(back, m, n));
  TEST_CHECK(memcmp(back, h, n) == 0);
  OK(cuMemsetD32_v2(m + 4096, 0xdeadbeef, 16));
  TEST_CHECK(h[1023] == 1023u * 3u && h[1024] == 0xdeadbeef && h[1039] == 0xdeadbeef &&
             h[1040] == 1040u * 3u);
  int managed = 0;
  unsigned int type = 0;
  OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 100));
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m + 100));
  TEST_CHECK(managed == 1 && type == CU_MEMORYTYPE_DEVICE);
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, m + 100));
  TEST_CHECK(base == m && size == n);
  unsigned int flags;
  IS(cuMemHostGetFlags(&flags, h), CUDA_ERROR_INVALID_VALUE);

  /* prefetches: recorded, nothing moves */
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, cpu = {CU_MEM_LOCATION_TYPE_HOST, 0};
  OK(cuMemPrefetchAsync_v2(m, n, dev0, 0, s));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, n) == 0);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, n) ==
             CU_MEM_LOCATION_TYPE_DEVICE);
  OK(cuMemPrefetchAsync(m, n / 2, CU_DEVICE_CPU, s));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, n / 2) == CU_DEVICE_CPU);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, n) == CU_DEVICE_INVALID);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + n / 2, n / 2) == 0);
  IS(cuMemPrefetchAsync_v2(m, n, dev0, 1, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemPrefetchAsync_v2(m, n + 1, dev0, 0, s), CUDA_ERROR_INVALID_VALUE);
  CUmemLocation far = {CU_MEM_LOCATION_TYPE_DEVICE, 99};
  IS(cuMemPrefetchAsync_v2(m, n, far, 0, s), CUDA_ERROR_INVALID_DEVICE);
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 4096));
  IS(cuMemPrefetchAsync_v2(d, 4096, dev0, 0, s), CUDA_ERROR_INVALID_VALUE);

  /* batches: three ranges, the first to the CPU, the other two to device 0; refused whole */
  CUdeviceptr ptrs[3] = {m, m + 8192, m + 3 * 4096};
  size_t lens[3] = {4096, 4096, 4096}, idxs[2] = {0, 1};
  CUmemLocation locs[2] = {cpu, dev0};
  OK(cuMemPrefetchBatchAsync(ptrs, lens, 3, locs, idxs, 2, 0, s));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4096) == CU_DEVICE_CPU);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + 8192, 8192) == 0);
  locs[1] = cpu;
  OK(cuMemDiscardAndPrefetchBatchAsync(ptrs + 1, lens, 1, locs + 1, idxs, 1, 0, s));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + 8192, 4096) ==
             CU_DEVICE_CPU);
  OK(cuMemDiscardBatchAsync(ptrs, lens, 3, 0, s));
  size_t bad_idxs[2] = {1, 2};
  IS(cuMemPrefetchBatchAsync(ptrs, lens, 3, locs, bad_idxs, 2, 0, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemPrefetchBatchAsync(ptrs, lens, 3, locs, idxs, 4, 0, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemPrefetchBatchAsync(ptrs, lens, 3, locs, idxs, 2, 1, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemDiscardBatchAsync(ptrs, lens, 3, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr mixed[2] = {m, d};
  locs[0] = dev0;
  IS(cuMemPrefetchBatchAsync(mixed, lens, 2, locs, idxs, 1, 0, s), CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4096) == CU_DEVICE_CPU);
  /* the single prefetches' records again, for what follows */
  OK(cuMemPrefetchAsync_v2(m, n, dev0, 0, s));
  OK(cuMemPrefetchAsync(m, n / 2, CU_DEVICE_CPU, s));

  /* advice, per page */
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, n) == 0);
  OK(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_SET_READ_MOSTLY, cpu));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, n) == 1);
  OK(cuMemAdvise_v2(m, 4096, CU_MEM_ADVISE_UNSET_READ_MOSTLY, cpu));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, n) == 0);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m + 4096, 4096) == 1);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, n) == CU_DEVICE_INVALID);
  OK(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, n) == 0);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, n) ==
             CU_MEM_LOCATION_TYPE_DEVICE);
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, m, n) == 0);
  OK(cuMemAdvise(m, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, n) == CU_DEVICE_CPU);
  OK(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, cpu));
  TEST_CHECK(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, n) ==
             CU_MEM_LOCATION_TYPE_INVALID);
  int by[3] = {7, 7, 7};
  OK(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_SET_ACCESSED_BY, dev0));
  OK(cuMemRangeGetAttribute(by, sizeof by, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, n));
  TEST_CHECK(by[0] == 0 && by[1] == CU_DEVICE_INVALID && by[2] == CU_DEVICE_INVALID);
  OK(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev0));
  OK(cuMemRangeGetAttribute(by, sizeof by, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, n));
  TEST_CHECK(by[0] == CU_DEVICE_INVALID);
  IS(cuMemAdvise_v2(m, n, (CUmem_advise)0, cpu), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemAdvise_v2(m, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, far), CUDA_ERROR_INVALID_DEVICE);
  IS(cuMemAdvise_v2(d, 64, CU_MEM_ADVISE_SET_READ_MOSTLY, cpu), CUDA_ERROR_INVALID_VALUE);
  int rm = -1, last = -1;
  void *data[2] = {&rm, &last};
  size_t sizes[2] = {4, 4};
  CUmem_range_attribute which[2] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION};
  OK(cuMemRangeGetAttributes(data, sizes, which, 2, m + n / 2, 4096));
  TEST_CHECK(rm == 1 && last == 0);
  IS(cuMemRangeGetAttribute(&rm, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, n),
     CUDA_ERROR_INVALID_VALUE);

  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  IS(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(m));
  CUdeviceptr hm;
  OK(cuMemAllocManaged(&hm, 100, CU_MEM_ATTACH_HOST));
  OK(cuMemFree_v2(hm));
  free(back);
}

/* ---- stream-ordered allocation ---- */

static uint64_t pool_u64(CUmemoryPool p, CUmemPool_attribute a) {
  uint64_t v = 12345;
  OK(cuMemPoolGetAttribute(p, a, &v));
  return v;
}

static void test_pools(void) {
  NEED_DEVICE();
  int v = 0;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
  TEST_CHECK(v == 1);
  CUmemoryPool def = NULL, cur = NULL;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  OK(cuDeviceGetMemPool(&cur, 0));
  TEST_CHECK(def && cur == def);
  IS(cuDeviceGetDefaultMemPool(&def, 99), CUDA_ERROR_INVALID_DEVICE);

  size_t n = 1 << 20;
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  uint64_t used0 = pool_u64(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  CUdeviceptr d;
  OK(cuMemAllocAsync(&d, n, s));
  uint8_t *host;
  OK(cuMemAllocHost_v2((void **)&host, n));
  OK(cuMemsetD8Async(d, 0x3c, n, s));
  OK(cuMemcpyDtoHAsync_v2(host, d, n, s));
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == used0 + n);
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) >= used0 + n);
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= used0 + n);
  CUmemoryPool owner = NULL;
  OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d + 10));
  TEST_CHECK(owner == def);
  OK(cuMemFreeAsync(d, s)); /* behind the copy: released once the GPU is past it */
  OK(cuStreamSynchronize(s));
  TEST_CHECK(all_bytes(host, n, 0x3c));
  OK(cuCtxSynchronize());
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == used0);
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == used0);
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) >= used0 + n);
  uint64_t zero = 0, five = 5;
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == used0);
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == used0);
  IS(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &five), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero), CUDA_ERROR_INVALID_VALUE);
  uint64_t threshold = UINT64_MAX;
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  TEST_CHECK(pool_u64(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == UINT64_MAX);
  int reuse = -1, off = 0;
  OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  TEST_CHECK(reuse == 1);
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
  OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  TEST_CHECK(reuse == 0);
  IS(cuMemPoolGetAttribute(def, (CUmemPool_attribute)0, &threshold), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemPoolSetAttribute(def, (CUmemPool_attribute)9, &zero), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemPoolTrimTo(def, 0));
  IS(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);

  /* a pool of one's own, made current, destroyed while an allocation is out */
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemoryPool pool;
  OK(cuMemPoolCreate(&pool, &props));
  OK(cuDeviceSetMemPool(0, pool));
  OK(cuDeviceGetMemPool(&cur, 0));
  TEST_CHECK(cur == pool);
  CUdeviceptr a, b;
  OK(cuMemAllocAsync(&a, 4096, s));
  OK(cuMemAllocFromPoolAsync(&b, 8192, pool, NULL));
  OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
  TEST_CHECK(owner == pool);
  TEST_CHECK(pool_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 4096 + 8192);
  OK(cuMemFree_v2(b)); /* cuMemFree takes pool memory too */
  TEST_CHECK(pool_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 4096);
  OK(cuMemPoolDestroy(pool));
  OK(cuDeviceGetMemPool(&cur, 0));
  TEST_CHECK(cur == def);
  OK(cuMemsetD32Async(a, 0x01020304, 1024, s));
  OK(cuMemFreeAsync(a, s));
  OK(cuStreamSynchronize(s));

  props.maxSize = 1 << 20;
  OK(cuMemPoolCreate(&pool, &props));
  IS(cuMemAllocFromPoolAsync(&a, 2 << 20, pool, s), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemPoolDestroy(pool));
  props.maxSize = 0;
  props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
  IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_INVALID;
  IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.handleTypes = CU_MEM_HANDLE_TYPE_WIN32; /* POSIX descriptors: test_cuda_vmm */
  IS(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
  IS(cuMemPoolCreate(&pool, NULL), CUDA_ERROR_INVALID_VALUE);

  IS(cuMemAllocAsync(&a, 0, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemAllocAsync(NULL, 64, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemFreeAsync(0x1234, s), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemFreeAsync(PTR(host), s), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemAllocAsync(&a, 64, s)); /* an allocation node (test_cuda_graph_more has more) */
  CUgraph g;
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphDestroy(g)); /* and its memory with it */
  IS(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFreeHost(host));
  OK(cuStreamDestroy_v2(s));
}

/* Host pools (pinned host memory) and managed pools (CUDA 13): the CPU and the GPU both reach
 * what they hand out; frees give it back; capture refuses them. */
static void test_host_and_managed_pools(void) {
  NEED_DEVICE();
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                          .location = {CU_MEM_LOCATION_TYPE_HOST, 0}};
  CUmemoryPool hp, mp;
  OK(cuMemPoolCreate(&hp, &props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED, props.location.type = CU_MEM_LOCATION_TYPE_NONE;
  OK(cuMemPoolCreate(&mp, &props));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  enum { N = 65536 };
  CUdeviceptr h, m, d;
  OK(cuMemAllocFromPoolAsync(&h, N, hp, s));
  OK(cuMemAllocFromPoolAsync(&m, N, mp, s));
  OK(cuMemAlloc_v2(&d, N));
  for (int i = 0; i < N; i++) ((uint8_t *)(uintptr_t)h)[i] = (uint8_t)(i * 7 + 3);
  OK(cuMemcpyAsync(d, h, N, s));   /* host pool -> device */
  OK(cuMemcpyAsync(m, d, N, s));   /* device -> managed pool */
  OK(cuMemsetD8Async(h, 0, N, s)); /* the GPU writes host pool memory */
  OK(cuStreamSynchronize(s));
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += ((uint8_t *)(uintptr_t)m)[i] != (uint8_t)(i * 7 + 3) || ((uint8_t *)(uintptr_t)h)[i];
  TEST_CHECK_MSG(bad == 0, "%d bytes wrong through host and managed pool memory", bad);
  CUmemoryPool owner = NULL;
  OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, h));
  TEST_CHECK(owner == hp);
  TEST_CHECK(pool_u64(hp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == N);
  CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  OK(cuMemPoolGetAccess(&f, hp, &host));
  TEST_CHECK(f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc dev0 = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  OK(cuMemPoolSetAccess(hp, &dev0, 1));
  OK(cuMemFreeAsync(h, s));
  OK(cuMemFree_v2(m));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(pool_u64(hp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  TEST_CHECK(pool_u64(mp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  IS(cuMemAllocFromPoolAsync(&h, 64, hp, s), CUDA_ERROR_NOT_SUPPORTED);
  CUgraph g;
  cuStreamEndCapture(s, &g); /* the capture was invalidated by the refusal */
  if (g) cuGraphDestroy(g);
  OK(cuMemPoolDestroy(hp));
  OK(cuMemPoolDestroy(mp));
  OK(cuMemFree_v2(d));
  OK(cuStreamDestroy_v2(s));
}

/* CUDA 12.8's batches (and cuMemcpy3DPeer): every copy made in order, checked first; the copy
 * that failed named. */
static void test_batches(void) {
  NEED_DEVICE();
  enum { N = 8192 };
  uint8_t *src = malloc(N), *back = malloc(N);
  for (int i = 0; i < N; i++) src[i] = (uint8_t)(i * 13 + 1);
  CUdeviceptr a, b;
  void *pinned;
  OK(cuMemAlloc_v2(&a, N));
  OK(cuMemAlloc_v2(&b, N));
  OK(cuMemAllocHost_v2(&pinned, N));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dsts[3] = {a, b, PTR(pinned)}, srcs[3] = {PTR(src), a, b};
  size_t sizes[3] = {N, N, N}, idxs[2] = {0, 1};
  CUmemcpyAttributes attrs[2] = {{.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL},
                                 {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}};
  OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, attrs, idxs, 2, s));
  OK(cuStreamSynchronize(s));
  TEST_CHECK(memcmp(pinned, src, N) == 0);
  size_t bad_idxs[2] = {1, 2};
  IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, attrs, bad_idxs, 2, s), CUDA_ERROR_INVALID_VALUE);
  attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
  IS(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, attrs, idxs, 2, s), CUDA_ERROR_INVALID_VALUE);
  /* the older form says which copy failed: the second runs past its allocation */
  CUresult (*v1)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                 size_t, size_t *, CUstream) =
      (CUresult(*)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                   size_t, size_t *, CUstream))(uintptr_t)own("cuMemcpyBatchAsync");
  size_t fail = 0, too_big[3] = {N, 2 * N, N};
  TEST_CHECK(v1 != NULL);
  if (v1) {
    IS(v1(dsts, srcs, too_big, 3, attrs, idxs, 1, &fail, s), CUDA_ERROR_INVALID_VALUE);
    TEST_CHECK(fail == 1);
    OK(v1(dsts, srcs, sizes, 3, attrs, idxs, 1, &fail, s));
    TEST_CHECK(fail == SIZE_MAX);
  }
  /* 3D: 64 x 16 floats of b into a 2D array at (8, 2), and back out into a (pitched) */
  CUarray arr;
  CUDA_ARRAY_DESCRIPTOR ad = {100, 40, CU_AD_FORMAT_FLOAT, 1};
  OK(cuArrayCreate_v2(&arr, &ad));
  CUDA_MEMCPY3D_BATCH_OP ops[2] = {
      {.src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = b, .rowLength = 64}},
       .dst = {.type = CU_MEMCPY_OPERAND_TYPE_ARRAY,
               .op.array = {.array = arr, .offset = {8, 2, 0}}},
       .extent = {64, 16, 1},
       .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM},
      {.src = {.type = CU_MEMCPY_OPERAND_TYPE_ARRAY,
               .op.array = {.array = arr, .offset = {8, 2, 0}}},
       .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = a, .rowLength = 64}},
       .extent = {64, 16, 1},
       .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}};
  OK(cuMemsetD8_v2(a, 0, N));
  OK(cuMemcpy3DBatchAsync_v2(2, ops, 0, s));
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH_v2(back, a, 64 * 16 * 4));
  TEST_CHECK_MSG(memcmp(back, src, 64 * 16 * 4) == 0, "3D batch through an array differs");
  IS(cuMemcpy3DBatchAsync_v2(2, ops, 1, s), CUDA_ERROR_INVALID_VALUE);
  ops[0].extent.depth = 0;
  IS(cuMemcpy3DBatchAsync_v2(2, ops, 0, s), CUDA_ERROR_INVALID_VALUE);
  OK(cuArrayDestroy(arr));
  /* cuMemcpy3DPeer within the device: rows 100 bytes apart into rows 200 apart */
  CUcontext ctx;
  OK(cuCtxGetCurrent(&ctx));
  OK(cuMemsetD8_v2(a, 0, N));
  CUDA_MEMCPY3D_PEER pc = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                           .srcDevice = b,
                           .srcContext = ctx,
                           .srcPitch = 100,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                           .dstDevice = a,
                           .dstContext = ctx,
                           .dstPitch = 200,
                           .WidthInBytes = 100,
                           .Height = 10,
                           .Depth = 1};
  OK(cuMemcpy3DPeer(&pc));
  OK(cuMemcpyDtoH_v2(back, a, N));
  int bad = 0;
  for (int y = 0; y < 10; y++) bad += memcmp(back + 200 * y, src + 100 * y, 100) != 0;
  TEST_CHECK_MSG(bad == 0, "cuMemcpy3DPeer: %d rows differ", bad);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemFreeHost(pinned));
  free(src);
  free(back);
}

/* ---- 2D memsets ---- */

static void test_memset_2d(void) {
  NEED_DEVICE();
  enum { W = 100, H = 5 };
  CUdeviceptr d;
  size_t pitch = 0;
  OK(cuMemAllocPitch_v2(&d, &pitch, W * 4, H, 4));
  TEST_CHECK(pitch >= W * 4);
  uint8_t *h = malloc(pitch * H);
  /* 8-bit: W bytes of each row, the padding untouched */
  OK(cuMemsetD8_v2(d, 0xee, pitch * H));
  OK(cuMemsetD2D8_v2(d + 1, pitch, 0x5a, W, H));
  OK(cuMemcpyDtoH_v2(h, d, pitch * H));
  int bad = 0;
  for (size_t y = 0; y < H; y++)
    for (size_t x = 0; x < pitch; x++) bad += h[y * pitch + x] != (x >= 1 && x <= W ? 0x5a : 0xee);
  TEST_CHECK_MSG(bad == 0, "D2D8: %d bytes wrong", bad);
  /* 16 and 32 bits, asynchronous, against a model of the bytes */
  uint8_t *model = malloc(pitch * H);
  memcpy(model, h, pitch * H);
  for (size_t y = 0; y < H; y++)
    for (size_t x = 0; x < W * 2; x++) model[y * pitch + x] = x % 2 ? 0xbe : 0xef;
  for (size_t y = 2; y < 4; y++)
    for (size_t x = 0; x < W / 2 * 4; x++)
      model[y * pitch + 8 + x] = (uint8_t)(0x01020304u >> (8 * (x % 4)));
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuMemsetD2D16Async(d, pitch, 0xbeef, W, H, s));
  OK(cuMemsetD2D32Async(d + pitch * 2 + 8, pitch, 0x01020304, W / 2, 2, s));
  OK(cuMemcpyDtoHAsync_v2(h, d, pitch * H, s));
  OK(cuStreamSynchronize(s));
  bad = 0;
  for (size_t i = 0; i < pitch * H; i++) bad += h[i] != model[i];
  TEST_CHECK_MSG(bad == 0, "D2D16/D2D32: %d bytes wrong", bad);
  TEST_CHECK(h[W * 2] == 0xee && h[0] == 0xef && h[2 * pitch + 8] == 0x04);
  free(model);
  /* contiguous rows: one memset */
  OK(cuMemsetD2D32_v2(d, W * 4, 0xa5a5a5a5, W, H));
  OK(cuMemcpyDtoH_v2(h, d, W * 4 * H));
  TEST_CHECK(all_bytes(h, W * 4 * H, 0xa5));
  IS(cuMemsetD2D16_v2(d + 1, pitch, 1, W, H), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemsetD2D8_v2(d, W - 1, 1, W, H), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemsetD2D8_v2(d, pitch, 1, pitch + 1, H), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemsetD2D8_v2(d, pitch, 1, 0, H));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  free(h);
}

/* ---- 3D copies ---- */

enum { X3 = 37, Y3 = 5, Z3 = 3, SP = 48, SH = 7, DP = 64, DH = 6 };

static void test_copy_3d(void) {
  NEED_DEVICE();
  static uint8_t src[4][SH][SP], back[Z3][Y3][X3];
  for (int z = 0; z < 4; z++)
    for (int y = 0; y < SH; y++)
      for (int x = 0; x < SP; x++) src[z][y][x] = (uint8_t)(x + 3 * y + 29 * z);
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, DP * DH * 4));
  OK(cuMemsetD8_v2(d, 0, DP * DH * 4));
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST, c.srcHost = src, c.srcPitch = SP, c.srcHeight = SH;
  c.srcXInBytes = 4, c.srcY = 1, c.srcZ = 1;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = d, c.dstPitch = DP, c.dstHeight = DH;
  c.dstXInBytes = 2, c.dstZ = 1;
  c.WidthInBytes = X3, c.Height = Y3, c.Depth = Z3;
  OK(cuMemcpy3D_v2(&c));
  /* back into a contiguous host box, asynchronously */
  CUDA_MEMCPY3D r;
  memset(&r, 0, sizeof r);
  r.srcMemoryType = CU_MEMORYTYPE_DEVICE, r.srcDevice = d, r.srcPitch = DP, r.srcHeight = DH;
  r.srcXInBytes = 2, r.srcZ = 1;
  r.dstMemoryType = CU_MEMORYTYPE_HOST, r.dstHost = back;
  r.WidthInBytes = X3, r.Height = Y3, r.Depth = Z3;
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuMemcpy3DAsync_v2(&r, s));
  OK(cuStreamSynchronize(s));
  int bad = 0;
  for (int z = 0; z < Z3; z++)
    for (int y = 0; y < Y3; y++)
      for (int x = 0; x < X3; x++) bad += back[z][y][x] != src[z + 1][y + 1][x + 4];
  TEST_CHECK_MSG(bad == 0, "3D round trip: %d bytes wrong", bad);
  /* the device box's bytes outside the copy stay 0 */
  static uint8_t whole[4][DH][DP];
  OK(cuMemcpyDtoH_v2(whole, d, sizeof whole));
  bad = 0;
  for (int z = 0; z < 4; z++)
    for (int y = 0; y < DH; y++)
      for (int x = 0; x < DP; x++) {
        int inside = z >= 1 && z < 1 + Z3 && y < Y3 && x >= 2 && x < 2 + X3;
        bad += whole[z][y][x] != (inside ? src[z][y + 1][x - 2 + 4] : 0);
      }
  TEST_CHECK_MSG(bad == 0, "3D destination: %d bytes wrong", bad);
  CUDA_MEMCPY3D e = c;
  e.srcMemoryType = CU_MEMORYTYPE_ARRAY; /* with no array (test_cuda_texture copies arrays) */
  IS(cuMemcpy3D_v2(&e), CUDA_ERROR_INVALID_HANDLE);
  e = c, e.srcLOD = 1;
  IS(cuMemcpy3D_v2(&e), CUDA_ERROR_INVALID_VALUE);
  e = c, e.dstHeight = 2;
  IS(cuMemcpy3D_v2(&e), CUDA_ERROR_INVALID_VALUE);
  /* offsets and extents whose address would wrap the 64-bit space, refused before anything
   * moves (they used to wrap into a copy elsewhere) */
  e = c, e.dstZ = (size_t)1 << 62;
  IS(cuMemcpy3D_v2(&e), CUDA_ERROR_INVALID_VALUE);
  e = c, e.srcY = SIZE_MAX / 2;
  IS(cuMemcpy3D_v2(&e), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemsetD2D32_v2(d, SIZE_MAX / 2, 1, 4, 3), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemsetD2D32_v2(d, 16, 1, SIZE_MAX / 2, 1), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemcpy3D_v2(NULL), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
}

/* ---- copies between contexts ---- */

static void test_peer(void) {
  NEED_DEVICE();
  CUcontext primary, other;
  OK(cuCtxGetCurrent(&primary));
  OK(cuCtxCreate_v2(&other, 0, 0));
  OK(cuCtxSetCurrent(primary));
  size_t n = 100000;
  CUdeviceptr a, b;
  OK(cuMemAlloc_v2(&a, n));
  OK(cuMemAlloc_v2(&b, n));
  uint8_t *h = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++) h[i] = (uint8_t)(i * 13);
  OK(cuMemcpyHtoD_v2(a, h, n));
  OK(cuMemcpyPeer(b, other, a, primary, n));
  OK(cuMemcpyDtoH_v2(back, b, n));
  TEST_CHECK(memcmp(back, h, n) == 0);
  OK(cuMemsetD8_v2(b, 0, n));
  OK(cuMemcpyPeerAsync(b + 1, primary, a, other, n - 1, NULL));
  OK(cuCtxSynchronize());
  OK(cuMemcpyDtoH_v2(back, b, n));
  TEST_CHECK(back[0] == 0 && memcmp(back + 1, h, n - 1) == 0);
  IS(cuMemcpyPeer(b, NULL, a, primary, n), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuCtxDestroy_v2(other));
  OK(cuCtxSetCurrent(primary));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  free(h);
  free(back);
}

/* ---- kernels on host-registered, managed and pool memory (a GPU) ---- */

/* p[i] += v for i < n (test_cuda's kernel). */
static const char add_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_value(.param .u64 p, .param .u32 v, .param .u32 n) {\n"
    "  .reg .b32 %r<7>; .reg .b64 %rd<4>; .reg .pred %q;\n"
    "  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [v]; ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r3, %r3, %r4, %r5;\n"
    "  setp.ge.u32 %q, %r3, %r2; @%q bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd2, %r3, 4; add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r6, [%rd3]; add.u32 %r6, %r6, %r1; st.global.u32 [%rd3], %r6;\n"
    "DONE:\n  ret;\n}\n";

static void add(CUfunction f, CUdeviceptr p, uint32_t v, uint32_t n, CUstream s) {
  void *params[] = {&p, &v, &n};
  OK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

static int count_not(const uint32_t *p, uint32_t n, uint32_t (*want)(uint32_t)) {
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += p[i] != want(i);
  return bad;
}

static uint32_t want_registered(uint32_t i) {
  return i + 5;
}
static uint32_t want_managed(uint32_t i) {
  return 2 * i + 7;
}

static void test_kernels_host_memory(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f = NULL;
  CUresult r = cuModuleLoadData(&mod, add_ptx);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuModuleGetFunction(&f, mod, "add_value"));
  /* registered, unaligned: the kernel reads and writes it through the host pointer */
  uint32_t n = 100000;
  uint8_t *block = malloc(n * 4 + 64);
  uint32_t *reg = (uint32_t *)(block + 20);
  for (uint32_t i = 0; i < n; i++) reg[i] = i;
  OK(cuMemHostRegister_v2(reg, n * 4, CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr dreg;
  OK(cuMemHostGetDevicePointer_v2(&dreg, reg, 0));
  add(f, dreg, 2, n, NULL);
  add(f, dreg, 3, n, NULL);
  OK(cuCtxSynchronize());
  int bad = count_not(reg, n, want_registered);
  TEST_CHECK_MSG(bad == 0, "registered: %d of %u values wrong (first %u)", bad, n, reg[0]);
  OK(cuMemHostUnregister(reg));
  free(block);
  /* managed: the CPU writes, the kernel adds, the CPU reads, in place */
  CUdeviceptr m;
  OK(cuMemAllocManaged(&m, n * 4, CU_MEM_ATTACH_GLOBAL));
  uint32_t *hm = (uint32_t *)(uintptr_t)m;
  for (uint32_t i = 0; i < n; i++) hm[i] = 2 * i;
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  OK(cuMemPrefetchAsync_v2(m, n * 4, dev0, 0, s));
  add(f, m, 7, n, s);
  OK(cuStreamSynchronize(s));
  bad = count_not(hm, n, want_managed);
  TEST_CHECK_MSG(bad == 0, "managed: %d of %u values wrong (first %u)", bad, n, hm[0]);
  /* pool memory: allocated, used by a kernel and a copy, freed behind them, all in order */
  CUdeviceptr pd;
  OK(cuMemAllocAsync(&pd, n * 4, s));
  OK(cuMemcpyAsync(pd, m, n * 4, s));
  add(f, pd, 1, n, s);
  OK(cuMemcpyAsync(m, pd, n * 4, s));
  OK(cuMemFreeAsync(pd, s));
  OK(cuStreamSynchronize(s));
  bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += hm[i] != 2 * i + 8;
  TEST_CHECK_MSG(bad == 0, "pool: %d of %u values wrong (first %u)", bad, n, hm[0]);
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(m));
  OK(cuModuleUnload(mod));
}

/* out[(round * nctaid + ctaid) * 256 + tid] = table[tid], table a __constant__ array. */
static const char table_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".const .align 4 .b32 table[256];\n"
    ".visible .entry read_table(.param .u64 out, .param .u32 round) {\n"
    "  .reg .b32 %r<8>; .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [round];\n"
    "  mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x; mov.u32 %r4, %nctaid.x;\n"
    "  mul.wide.u32 %rd2, %r2, 4; mov.u64 %rd3, table; add.s64 %rd3, %rd3, %rd2;\n"
    "  ld.const.u32 %r5, [%rd3];\n"
    "  mad.lo.s32 %r6, %r1, %r4, %r3; mad.lo.s32 %r7, %r6, 256, %r2;\n"
    "  cvta.to.global.u64 %rd1, %rd1; mul.wide.u32 %rd4, %r7, 4; add.s64 %rd5, %rd1, %rd4;\n"
    "  st.global.u32 [%rd5], %r5;\n  ret;\n}\n";

/* A __constant__ table rewritten between launches, as cudaMemcpyToSymbol does: by an async
 * copy in the launches' stream, a synchronous copy, and a device-to-device copy. Every block of
 * every launch must read the table of its round, not lines its SM cached from an earlier one. */
static void test_constant_rewrite(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f;
  CUresult r = cuModuleLoadData(&mod, table_ptx);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r) return;
  OK(cuModuleGetFunction(&f, mod, "read_table"));
  CUdeviceptr table, out, staged;
  size_t bytes = 0;
  OK(cuModuleGetGlobal_v2(&table, &bytes, mod, "table"));
  TEST_CHECK(bytes == 1024);
  enum { ROUNDS = 90, BLOCKS = 264 };
  size_t out_bytes = (size_t)ROUNDS * BLOCKS * 256 * 4;
  OK(cuMemAlloc_v2(&out, out_bytes));
  OK(cuMemAlloc_v2(&staged, (size_t)ROUNDS * 1024));
  uint32_t *h;
  OK(cuMemAllocHost_v2((void **)&h, (size_t)ROUNDS * 1024));
  for (uint32_t i = 0; i < ROUNDS * 256u; i++) h[i] = (i / 256) * 1000 + i % 256;
  OK(cuMemcpyHtoD_v2(staged, h, (size_t)ROUNDS * 1024));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (uint32_t round = 0; round < ROUNDS; round++) {
    const uint32_t *t = h + round * 256;
    if (round % 3 == 0) OK(cuMemcpyHtoDAsync_v2(table, t, 1024, s));
    if (round % 3 == 1) OK(cuMemcpyHtoD_v2(table, t, 1024));
    if (round % 3 == 2) OK(cuMemcpyDtoDAsync_v2(table, staged + round * 1024ull, 1024, s));
    void *params[] = {&out, &round};
    OK(cuLaunchKernel(f, BLOCKS, 1, 1, 256, 1, 1, 0, s, params, NULL));
  }
  OK(cuStreamSynchronize(s));
  uint32_t *got = malloc(out_bytes);
  TEST_CHECK(got != NULL);
  if (got) {
    OK(cuMemcpyDtoH_v2(got, out, out_bytes));
    size_t stale = 0, first = 0;
    for (size_t i = 0; i < out_bytes / 4; i++) {
      uint32_t want = (uint32_t)(i / (BLOCKS * 256)) * 1000 + i % 256;
      if (got[i] != want && !stale++) first = i;
    }
    TEST_CHECK_MSG(stale == 0,
                   "%zu of %zu reads of the rewritten table were stale (first: %zu "
                   "read %u)",
                   stale, out_bytes / 4, first, got[first]);
    free(got);
  }
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(h));
  OK(cuMemFree_v2(staged));
  OK(cuMemFree_v2(out));
  OK(cuModuleUnload(mod));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_register), TEST(test_managed), TEST(test_pools),
          TEST(test_host_and_managed_pools), TEST(test_batches), TEST(test_memset_2d),
          TEST(test_copy_3d), TEST(test_peer), TEST(test_kernels_host_memory),
          TEST(test_constant_rewrite))
