/* Driver-API programs against nvhcq's libcuda.so.1 (linked with -lcuda from build/cuda): errors
 * and cuGetProcAddress everywhere; devices, contexts, memory, copies, streams, events and graphs
 * on a GPU or the mock (NVHCQ_MOCK=1); kernels, PTX and fatbins on a GPU. Without either, cuInit
 * must say CUDA_ERROR_NO_DEVICE and every other call must fail cleanly. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

/* ---- without a device ---- */

static void test_errors(void) {
  const char *s = NULL;
  TEST_CHECK(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s) == CUDA_SUCCESS);
  TEST_CHECK(s && !strcmp(s, "an illegal memory access was encountered"));
  TEST_CHECK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s) == CUDA_SUCCESS);
  TEST_CHECK(s && !strcmp(s, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  TEST_CHECK(cuGetErrorName(CUDA_ERROR_NO_DEVICE, &s) == CUDA_SUCCESS &&
             !strcmp(s, "CUDA_ERROR_NO_DEVICE"));
  TEST_CHECK(cuGetErrorString((CUresult)12345, &s) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(CUDA_ERROR_ILLEGAL_ADDRESS == 700 && CUDA_ERROR_NOT_SUPPORTED == 801);
}

static void test_proc_address(void) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  TEST_CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &st) == CUDA_SUCCESS);
  TEST_CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS && fn == (void *)(uintptr_t)&cuMemAlloc_v2);
  TEST_CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 3000, 0, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == own("cuMemAlloc") && fn != (void *)(uintptr_t)&cuMemAlloc_v2);
  TEST_CHECK(cuGetProcAddress_v2("cuCtxCreate", &fn, 12050, 0, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == own("cuCtxCreate_v4"));
  TEST_CHECK(cuGetProcAddress_v2("cuMemcpyHtoD", &fn, 12000, 2, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == own("cuMemcpyHtoD_v2_ptds") && fn);
  TEST_CHECK(cuGetProcAddress_v2("cuLaunchKernel", &fn, 12000, 2, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == own("cuLaunchKernel_ptsz") && fn);
  TEST_CHECK(cuGetProcAddress_v2("cuNoSuchCall", &fn, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND);
  TEST_CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == NULL);
  TEST_CHECK(cuGetProcAddress_v2("cuLibraryLoadData", &fn, 11000, 0, &st) == CUDA_ERROR_NOT_FOUND);
  TEST_CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  TEST_CHECK(cuGetProcAddress_v2("", &fn, 12000, 0, &st) == CUDA_SUCCESS && fn == NULL);
  TEST_CHECK(cuGetProcAddress("cuInit", &fn, 12000, 0) == CUDA_SUCCESS &&
             fn == (void *)(uintptr_t)&cuInit);
}

/* A function nobody implements answers CUDA_ERROR_NOT_SUPPORTED through its stub. */
static void test_stub(void) {
  CUresult (*texref_create)(void *) = (CUresult(*)(void *))(uintptr_t)own("cuTexRefCreate");
  TEST_CHECK(texref_create != NULL);
  if (texref_create) TEST_CHECK(texref_create(NULL) == CUDA_ERROR_NOT_SUPPORTED);
  const void *table = (const void *)1;
  CUuuid id = {{0}};
  TEST_CHECK(cuGetExportTable(&table, &id) == CUDA_ERROR_NOT_SUPPORTED && table == NULL);
}

/* Encoding needs no GPU: nvhcq writes the descriptor as libcuda does (its own tests compare). */
static void test_tensor_map(void) {
  CUtensorMap map;
  cuuint64_t dims[2] = {1024, 512}, strides[1] = {1024 * 2};
  cuuint32_t box[2] = {64, 32}, estrides[2] = {1, 1};
  void *address = (void *)(uintptr_t)0x10000000ull;
  memset(&map, 0, sizeof map);
  OK(cuTensorMapEncodeTiled(&map, (CUtensorMapDataType)6 /* FLOAT16 */, 2, address, dims, strides,
                            box, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            (CUtensorMapSwizzle)3 /* 128B */, (CUtensorMapL2promotion)2,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  int nonzero = 0;
  for (int i = 0; i < 16; i++) nonzero += map.opaque[i] != 0;
  TEST_CHECK(nonzero > 0);
  box[0] = 300; /* a box dimension above 256 */
  TEST_CHECK(cuTensorMapEncodeTiled(&map, (CUtensorMapDataType)6, 2, address, dims, strides, box,
                                    estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_ERROR_INVALID_VALUE);
}

static void test_no_device(void) {
  if (init_once() == CUDA_SUCCESS) TEST_SKIP("a device is there");
  TEST_CHECK(init_once() == CUDA_ERROR_NO_DEVICE);
  int n = -1;
  TEST_CHECK(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
  CUdevice d;
  TEST_CHECK(cuDeviceGet(&d, 0) == CUDA_ERROR_NOT_INITIALIZED);
  CUcontext c;
  TEST_CHECK(cuDevicePrimaryCtxRetain(&c, 0) == CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr p;
  TEST_CHECK(cuMemAlloc_v2(&p, 16) == CUDA_ERROR_NOT_INITIALIZED);
  CUstream s;
  TEST_CHECK(cuStreamCreate(&s, 0) == CUDA_ERROR_NOT_INITIALIZED);
  TEST_CHECK(cuStreamSynchronize(NULL) == CUDA_ERROR_NOT_INITIALIZED);
  TEST_CHECK(cuCtxSynchronize() == CUDA_ERROR_NOT_INITIALIZED);
  int v;
  TEST_CHECK(cuDriverGetVersion(&v) == CUDA_SUCCESS && v >= 12000);
}

/* ---- devices and contexts ---- */

static void test_device(void) {
  NEED_DEVICE();
  int n = 0, v = 0;
  OK(cuDeviceGetCount(&n));
  TEST_CHECK(n >= 1);
  char name[128] = "";
  OK(cuDeviceGetName(name, sizeof name, 0));
  TEST_CHECK(name[0] != 0);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  TEST_CHECK(v > 0);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  TEST_CHECK(v == 32);
  int major = 0, minor = -1;
  OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  TEST_CHECK(major >= 8 && minor >= 0);
  int m2, n2;
  OK(cuDeviceComputeCapability(&m2, &n2, 0));
  TEST_CHECK(m2 == major && n2 == minor);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
  TEST_CHECK(v >= 48 * 1024);
  int per_sm = 0;
  OK(cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0));
  TEST_CHECK(per_sm > v);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0));
  TEST_CHECK(v >= 1 << 20);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
  TEST_CHECK(v > 500000); /* kHz */
  /* what the library implements, it says it has (cuMemCreate and the rest; tensor maps) */
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  TEST_CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 0));
  TEST_CHECK_MSG(v == (major >= 9), "tensor maps %d on sm_%d%d", v, major, minor);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_NUMA_ID, 0));
  TEST_CHECK(v == -1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0));
  TEST_CHECK(v >= -1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 0));
  TEST_CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0));
  TEST_CHECK(v == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 0));
  TEST_CHECK_MSG((v & 0xffff) == 0x10de && (unsigned)v >> 16, "PCI ID 0x%08x", (unsigned)v);
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
    TEST_CHECK_MSG(cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0) == CUDA_SUCCESS,
                   "attribute %d", a);
  TEST_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, n) ==
             CUDA_ERROR_INVALID_DEVICE);
  size_t total = 0;
  OK(cuDeviceTotalMem_v2(&total, 0));
  TEST_CHECK(total > (1u << 30));
  CUuuid uuid;
  OK(cuDeviceGetUuid(&uuid, 0));
  char bus[32];
  OK(cuDeviceGetPCIBusId(bus, sizeof bus, 0));
  TEST_CHECK(strlen(bus) == 12);
}

static void test_contexts(void) {
  NEED_DEVICE();
  CUcontext a, b, cur, popped;
  OK(cuDevicePrimaryCtxRetain(&a, 0));
  OK(cuDevicePrimaryCtxRetain(&b, 0));
  TEST_CHECK(a == b);
  OK(cuCtxSetCurrent(a));
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == a);
  CUcontext created;
  OK(cuCtxCreate_v2(&created, 0, 0)); /* pushed: now current */
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == created && cur != a);
  CUdevice dev = -1;
  OK(cuCtxGetDevice(&dev));
  TEST_CHECK(dev == 0);
  OK(cuCtxPopCurrent_v2(&popped));
  TEST_CHECK(popped == created);
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == a);
  OK(cuCtxPushCurrent_v2(created));
  OK(cuCtxDestroy_v2(created)); /* leaves the stack too */
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == a);
  unsigned int flags;
  int active;
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  TEST_CHECK(active == 1);
  /* CUDA 13's cuCtxCreate: zeroed parameters (as its samples pass) ask for an ordinary context */
  CUctxCreateParams params;
  CUctxCigParam cig = {CIG_DATA_TYPE_NV_BLOB, NULL};
  memset(&params, 0, sizeof params);
  OK(cuCtxCreate_v4(&created, &params, 0, 0));
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == created);
  OK(cuCtxDestroy_v2(created));
  params.cigParams = &cig;
  TEST_CHECK(cuCtxCreate_v4(&created, &params, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
  OK(cuCtxGetCurrent(&cur));
  TEST_CHECK(cur == a);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  OK(cuCtxSynchronize());
}

/* ---- memory ---- */

static void test_memory(void) {
  NEED_DEVICE();
  enum { N = 1 << 18 }; /* below 1 MiB: device-to-device copies on the copy engine, not a kernel */
  CUdeviceptr d, e;
  /* No size is refused as such: more than there is is too much (CUDA's code on the H200) */
  TEST_CHECK(cuMemAlloc_v2(&d, (size_t)1 << 50) == CUDA_ERROR_OUT_OF_MEMORY);
  TEST_CHECK(cuMemAlloc_v2(&d, 0) == CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAlloc_v2(&d, N));
  OK(cuMemAlloc_v2(&e, N));
  uint32_t *h = malloc(N), *back = malloc(N);
  for (uint32_t i = 0; i < N / 4; i++) h[i] = i * 2654435761u;
  OK(cuMemcpyHtoD_v2(d, h, N));
  OK(cuMemcpyDtoD_v2(e, d, N));
  memset(back, 0, N);
  OK(cuMemcpyDtoH_v2(back, e, N));
  TEST_CHECK(!memcmp(h, back, N));
  /* memsets of each width, with offsets inside the allocation */
  OK(cuMemsetD32_v2(d, 0xdeadbeef, N / 4));
  OK(cuMemsetD16_v2(d + 4, 0x1234, 3));
  OK(cuMemsetD8_v2(d + 11, 0x7f, 1));
  OK(cuMemcpyDtoH_v2(back, d, N));
  uint8_t *b = (uint8_t *)back;
  TEST_CHECK(back[0] == 0xdeadbeef && back[N / 4 - 1] == 0xdeadbeef);
  TEST_CHECK(b[4] == 0x34 && b[5] == 0x12 && b[9] == 0x12 && b[11] == 0x7f && b[12] == 0xef);
  TEST_CHECK(cuMemsetD32_v2(d + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE);    /* misaligned */
  TEST_CHECK(cuMemsetD8_v2(d + N - 1, 0, 2) == CUDA_ERROR_INVALID_VALUE); /* past the end */
  /* pinned memory */
  void *pinned;
  OK(cuMemHostAlloc(&pinned, N, CU_MEMHOSTALLOC_DEVICEMAP));
  unsigned int hf = 0;
  OK(cuMemHostGetFlags(&hf, pinned));
  TEST_CHECK(hf == CU_MEMHOSTALLOC_DEVICEMAP);
  CUdeviceptr mapped;
  OK(cuMemHostGetDevicePointer_v2(&mapped, pinned, 0));
  memcpy(pinned, h, N);
  OK(cuMemcpyHtoD_v2(e, pinned, N));
  OK(cuMemcpyDtoH_v2(back, e, N));
  TEST_CHECK(!memcmp(back, h, N));
  OK(cuMemcpy(mapped, d, 64)); /* unified addressing: a pinned buffer through its GPU address */
  TEST_CHECK(((uint32_t *)pinned)[0] == 0xdeadbeef);
  /* queries */
  size_t free_b = 0, total = 0;
  OK(cuMemGetInfo_v2(&free_b, &total));
  TEST_CHECK(free_b > 0 && free_b <= total);
  unsigned int type = 0;
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100));
  TEST_CHECK(type == CU_MEMORYTYPE_DEVICE);
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                           (CUdeviceptr)(uintptr_t)pinned));
  TEST_CHECK(type == CU_MEMORYTYPE_HOST);
  CUdeviceptr start = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&start, &size, d + 100));
  TEST_CHECK(start == d && size == N);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  int ordinal = -1;
  void *data[] = {&type, &ordinal};
  OK(cuPointerGetAttributes(2, attrs, data, d));
  TEST_CHECK(type == CU_MEMORYTYPE_DEVICE && ordinal == 0);
  OK(cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)h)); /* pageable: no error */
  TEST_CHECK(type == 0);
  TEST_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   (CUdeviceptr)(uintptr_t)h) == CUDA_ERROR_INVALID_VALUE);
  /* buffer ids are never reused, even where a new allocation takes a freed one's address (NCCL's
   * registration cache tells reallocations apart by them) */
  unsigned long long id = 0, id_again = 0, handle_types = 1;
  OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, d + 100));
  OK(cuPointerGetAttribute(&handle_types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d));
  TEST_CHECK(id != 0 && handle_types == 0);
  OK(cuMemFreeHost(pinned));
  OK(cuMemFree_v2(d));
  CUdeviceptr d2 = 0;
  OK(cuMemAlloc_v2(&d2, N));
  OK(cuPointerGetAttribute(&id_again, CU_POINTER_ATTRIBUTE_BUFFER_ID, d2));
  TEST_CHECK_MSG(id_again != id, "buffer id %llu at 0x%llx, then %llu at 0x%llx", id,
                 (unsigned long long)d, id_again, (unsigned long long)d2);
  OK(cuMemFree_v2(d2));
  OK(cuMemFree_v2(e));
  TEST_CHECK(cuMemFree_v2(d) == CUDA_ERROR_INVALID_VALUE);
  free(h);
  free(back);
}

static void test_pitched(void) {
  NEED_DEVICE();
  enum { W = 100, H = 37 };
  CUdeviceptr d;
  size_t pitch = 0;
  OK(cuMemAllocPitch_v2(&d, &pitch, W, H, 4));
  TEST_CHECK(pitch >= W && pitch % 512 == 0);
  uint8_t src[H][W + 3], back[H][W];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W + 3; x++) src[y][x] = (uint8_t)(x * 3 + y * 11);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST, c.srcHost = src, c.srcPitch = W + 3, c.srcXInBytes = 2;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = d, c.dstPitch = pitch;
  c.WidthInBytes = W, c.Height = H;
  OK(cuMemcpy2D_v2(&c));
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = d, c.srcPitch = pitch;
  c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = back, c.dstPitch = W;
  c.WidthInBytes = W, c.Height = H;
  OK(cuMemcpy2DAsync_v2(&c, NULL));
  OK(cuCtxSynchronize());
  int bad = 0;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) bad += back[y][x] != src[y][x + 2];
  TEST_CHECK(bad == 0);
  OK(cuMemFree_v2(d));
}

static void host_fn(void *p) {
  (*(int *)p)++;
}
static void callback(CUstream s, CUresult status, void *p) {
  (void)s;
  if (status == CUDA_SUCCESS) (*(int *)p) += 10;
}

/* ---- streams and events ---- */

static void test_streams(void) {
  NEED_DEVICE();
  enum { N = 1 << 22 };
  CUstream s1, s2;
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s2, 0));
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, N));
  uint8_t *in, *out;
  OK(cuMemAllocHost_v2((void **)&in, N));
  OK(cuMemAllocHost_v2((void **)&out, N));
  for (size_t i = 0; i < N; i++) in[i] = (uint8_t)(i * 7);
  memset(out, 0, N);
  CUevent e0, e1;
  OK(cuEventCreate(&e0, 0));
  OK(cuEventCreate(&e1, 0));
  OK(cuEventRecord(e0, s1));
  OK(cuMemcpyHtoDAsync_v2(d, in, N, s1));
  OK(cuMemsetD8Async(d, 9, 16, s1));
  OK(cuEventRecord(e1, s1));
  OK(cuStreamWaitEvent(s2, e1, 0));
  OK(cuMemcpyDtoHAsync_v2(out, d, N, s2));
  OK(cuStreamSynchronize(s2));
  TEST_CHECK(cuStreamQuery(s2) == CUDA_SUCCESS);
  TEST_CHECK(out[0] == 9 && out[15] == 9 && out[16] == in[16] && out[N - 1] == in[N - 1]);
  OK(cuEventSynchronize(e1));
  TEST_CHECK(cuEventQuery(e1) == CUDA_SUCCESS);
  float ms = -1;
  OK(cuEventElapsedTime(&ms, e0, e1));
  TEST_CHECK(ms >= 0);
  /* the default stream orders after the others */
  OK(cuMemsetD32Async(d, 0x01020304, 1, NULL));
  OK(cuMemcpyDtoHAsync_v2(out, d, 4, CU_STREAM_LEGACY));
  OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  TEST_CHECK(out[0] == 4 && out[3] == 1);
  CUevent nt;
  OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
  OK(cuEventRecord(nt, s1));
  TEST_CHECK(cuEventElapsedTime(&ms, e0, nt) == CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventDestroy_v2(nt));
  int calls = 0;
  OK(cuMemsetD8Async(d, 1, N, s1));
  OK(cuLaunchHostFunc(s1, host_fn, &calls));
  OK(cuStreamAddCallback(s1, callback, &calls, 0));
  TEST_CHECK(calls == 11 && cuStreamQuery(s1) == CUDA_SUCCESS);
  OK(cuEventDestroy_v2(e0));
  OK(cuEventDestroy_v2(e1));
  OK(cuStreamDestroy_v2(s1));
  OK(cuStreamDestroy_v2(s2));
  OK(cuMemFreeHost(in));
  OK(cuMemFreeHost(out));
  OK(cuMemFree_v2(d));
}

/* ---- graphs without kernels ---- */

static CUDA_MEMCPY3D copy_1d(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = src;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = dst;
  c.WidthInBytes = n, c.Height = 1, c.Depth = 1;
  return c;
}

static void test_graph_explicit(void) {
  NEED_DEVICE();
  enum { N = 4096 };
  CUdeviceptr a, b, c;
  OK(cuMemAlloc_v2(&a, N));
  OK(cuMemAlloc_v2(&b, N));
  OK(cuMemAlloc_v2(&c, N));
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode set, copy, copy2, empty;
  CUDA_MEMSET_NODE_PARAMS ms = {
      .dst = a, .value = 0x11223344, .elementSize = 4, .width = N / 4, .height = 1};
  OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, NULL));
  OK(cuGraphAddEmptyNode(&empty, g, &set, 1));
  CUDA_MEMCPY3D cp = copy_1d(b, a, N);
  OK(cuGraphAddMemcpyNode(&copy, g, &empty, 1, &cp, NULL));
  cp = copy_1d(c, b, N / 2);
  OK(cuGraphAddMemcpyNode(&copy2, g, &copy, 1, &cp, NULL));
  size_t count = 0;
  OK(cuGraphGetNodes(g, NULL, &count));
  TEST_CHECK(count == 4);
  CUgraphNodeType type;
  OK(cuGraphNodeGetType(copy, &type));
  TEST_CHECK(type == CU_GRAPH_NODE_TYPE_MEMCPY);
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuMemsetD8_v2(c, 0, N));
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  uint32_t out[N / 4];
  OK(cuMemcpyDtoH_v2(out, c, N));
  TEST_CHECK(out[0] == 0x11223344 && out[N / 8 - 1] == 0x11223344 && out[N / 8] == 0);
  /* an update: the second copy now moves all of b */
  cp = copy_1d(c, b, N);
  OK(cuGraphExecMemcpyNodeSetParams(x, copy2, &cp, NULL));
  OK(cuGraphLaunch(x, s));
  OK(cuGraphLaunch(x, s)); /* back to back */
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH_v2(out, c, N));
  TEST_CHECK(out[N / 4 - 1] == 0x11223344);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(c));
}

static void test_graph_capture(void) {
  NEED_DEVICE();
  enum { N = 1024 };
  CUdeviceptr a, b;
  OK(cuMemAlloc_v2(&a, N));
  OK(cuMemAlloc_v2(&b, N));
  uint8_t *host;
  OK(cuMemAllocHost_v2((void **)&host, N));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus cs;
  OK(cuStreamIsCapturing(s, &cs));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(cuMemcpyHtoDAsync_v2(a, host, N, s));
  OK(cuMemsetD8Async(a, 0x5a, 8, s));
  OK(cuMemcpyDtoDAsync_v2(b, a, N, s));
  OK(cuMemcpyDtoHAsync_v2(host, b, N, s));
  uint8_t pageable[16];
  TEST_CHECK(cuMemcpyDtoHAsync_v2(pageable, b, 16, s) == CUDA_ERROR_NOT_SUPPORTED);
  CUgraph g;
  OK(cuStreamEndCapture(s, &g));
  OK(cuStreamIsCapturing(s, &cs));
  TEST_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
  size_t count = 0;
  OK(cuGraphGetNodes(g, NULL, &count));
  TEST_CHECK(count == 4);
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) host[i] = (uint8_t)(i + round);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    TEST_CHECK(host[0] == 0x5a && host[7] == 0x5a && host[8] == (uint8_t)(8 + round) &&
               host[N - 1] == (uint8_t)(N - 1 + round));
  }
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFreeHost(host));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
}

/* ---- kernels (a GPU) ---- */

static CUfunction load_add(CUmodule *mod) {
  CUfunction f = NULL;
  CUresult r = cuModuleLoadData(mod, cuda_test_add_ptx());
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "PTX load: %d (nvJitLink needed)", (int)r);
  if (r == CUDA_SUCCESS) OK(cuModuleGetFunction(&f, *mod, "add_value"));
  return f;
}

static void check_values(CUdeviceptr d, uint32_t n, uint32_t want) {
  uint32_t *h = malloc(n * 4);
  OK(cuMemcpyDtoH_v2(h, d, n * 4));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += h[i] != want;
  TEST_CHECK_MSG(bad == 0, "%u of %u values are not %u (first %u)", bad, n, want, h[0]);
  free(h);
}

static void test_kernels(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f = load_add(&mod);
  if (!f) return;
  size_t off = 0, size = 0;
  OK(cuFuncGetParamInfo(f, 2, &off, &size));
  TEST_CHECK(off == 12 && size == 4);
  int regs = -1, threads = 0;
  OK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  OK(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  TEST_CHECK(regs > 0 && threads >= 256);
  int blocks = 0, grid = 0, block = 0;
  OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0));
  TEST_CHECK(blocks >= 1);
  OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0));
  TEST_CHECK(block >= 32 && grid >= 1);
  uint32_t n = 100000, v = 3;
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n * 4));
  OK(cuMemsetD32_v2(d, 1, n));
  void *params[] = {&d, &v, &n};
  OK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  struct {
    CUdeviceptr p;
    uint32_t v, n;
  } blob = {d, 10, n};
  size_t blob_size = sizeof blob;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &blob, CU_LAUNCH_PARAM_BUFFER_SIZE, &blob_size,
                   CU_LAUNCH_PARAM_END};
  OK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
  CUlaunchConfig cfg = {(n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, NULL, 0};
  OK(cuLaunchKernelEx(&cfg, f, params, NULL));
  OK(cuCtxSynchronize());
  check_values(d, n, 1 + 3 + 10 + 3);
  /* clusters of 2 blocks (782 blocks: a multiple of 2, not of 3) */
  CUlaunchAttribute cluster = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
  cluster.value.clusterDim.x = 2, cluster.value.clusterDim.y = 1, cluster.value.clusterDim.z = 1;
  cfg.attrs = &cluster, cfg.numAttrs = 1;
  OK(cuLaunchKernelEx(&cfg, f, params, NULL));
  OK(cuCtxSynchronize());
  check_values(d, n, 1 + 3 + 10 + 3 + 3);
  int clusters = 0;
  OK(cuOccupancyMaxActiveClusters(&clusters, f, &cfg));
  TEST_CHECK(clusters >= 1);
  cluster.value.clusterDim.x = 3;
  TEST_CHECK(cuLaunchKernelEx(&cfg, f, params, NULL) != CUDA_SUCCESS);
  cfg.numAttrs = 0;
  /* more dynamic shared memory than MAX_DYNAMIC_SHARED_SIZE_BYTES: refused until raised */
  int most = 0;
  OK(cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
  TEST_CHECK_MSG(most == 48 * 1024, "%d bytes by default", most);
  cfg.sharedMemBytes = (unsigned)most + 1024;
  /* NVIDIA's occupancy answers (driver 580): no blocks beyond that size; the SM's shared memory
   * split n ways, less static, within it */
  int per_sm = 0;
  size_t avail = 0;
  OK(cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0));
  OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 128, cfg.sharedMemBytes));
  TEST_CHECK_MSG(blocks == 0, "%d blocks", blocks);
  OK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, f, 1, 128));
  TEST_CHECK_MSG(avail == (size_t)most, "%zu bytes for 1 block", avail);
  OK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, f, 8, 128));
  TEST_CHECK_MSG(avail == (size_t)per_sm / 8, "%zu bytes for 8 blocks", avail);
  TEST_CHECK(cuLaunchKernelEx(&cfg, f, params, NULL) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, cfg.sharedMemBytes, NULL, params, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, most + 1024));
  OK(cuLaunchKernelEx(&cfg, f, params, NULL));
  OK(cuCtxSynchronize());
  check_values(d, n, 1 + 3 + 10 + 3 + 3 + 3);
  OK(cuMemFree_v2(d));
  OK(cuModuleUnload(mod));
}

static void test_kernel_graph(void) {
  NEED_KERNELS();
  CUmodule mod;
  CUfunction f = load_add(&mod);
  if (!f) return;
  uint32_t n = 4096, v = 2;
  CUdeviceptr d, e;
  OK(cuMemAlloc_v2(&d, n * 4));
  OK(cuMemAlloc_v2(&e, n * 4));
  OK(cuMemsetD32_v2(d, 0, n));
  OK(cuMemsetD32_v2(e, 100, n));
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  void *params[] = {&d, &v, &n};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f,
                               .gridDimX = n / 128,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 128,
                               .blockDimY = 1,
                               .blockDimZ = 1,
                               .kernelParams = params};
  CUgraphNode k1, k2;
  OK(cuGraphAddKernelNode_v2(&k1, g, NULL, 0, &p));
  OK(cuGraphAddKernelNode_v2(&k2, g, &k1, 1, &p));
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  check_values(d, n, 4);
  /* k2 now adds 5 to e */
  uint32_t v5 = 5;
  void *params2[] = {&e, &v5, &n};
  p.kernelParams = params2;
  OK(cuGraphExecKernelNodeSetParams_v2(x, k2, &p));
  OK(cuGraphLaunch(x, NULL));
  OK(cuCtxSynchronize());
  check_values(d, n, 6);
  check_values(e, n, 105);
  /* capture of launches, as bench programs do */
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 100; i++) OK(cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
  CUgraph cg;
  CUgraphExec cx;
  OK(cuStreamEndCapture(s, &cg));
  OK(cuGraphInstantiateWithFlags(&cx, cg, 0));
  for (int r = 0; r < 5; r++) OK(cuGraphLaunch(cx, s));
  OK(cuStreamSynchronize(s));
  check_values(d, n, 6 + 5 * 100 * 2);
  OK(cuGraphExecDestroy(cx));
  OK(cuGraphDestroy(cg));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuStreamDestroy_v2(s));
  OK(cuMemFree_v2(d));
  OK(cuMemFree_v2(e));
  OK(cuModuleUnload(mod));
}

/* A fatbin (wrapper and container) around the add kernel's PTX, and one whose only entry is SASS
 * for an architecture no GPU has: the first loads, the second says no binary for the GPU. */
static void test_fatbin(void) {
  NEED_KERNELS();
  size_t n = strlen(cuda_test_add_ptx()) + 1, padded = (n + 7) & ~(size_t)7;
  uint8_t *c = calloc(1, 16 + 64 + padded);
  uint32_t magic = 0xba55ed50u, header = 64, arch = 80, ptx_kind = 1;
  uint64_t total = 64 + padded;
  uint16_t version = 1, header_size = 16;
  memcpy(c, &magic, 4), memcpy(c + 4, &version, 2), memcpy(c + 6, &header_size, 2);
  memcpy(c + 8, &total, 8);
  uint8_t *e = c + 16;
  memcpy(e, &ptx_kind, 2), memcpy(e + 4, &header, 4), memcpy(e + 8, &padded, 8);
  uint32_t n32 = (uint32_t)n;
  memcpy(e + 16, &n32, 4), memcpy(e + 28, &arch, 4);
  memcpy(e + 64, cuda_test_add_ptx(), n);
  struct {
    uint32_t magic, version;
    const void *data;
    void *unused;
  } wrapper = {0x466243b1u, 1, c, NULL};
  CUlibrary lib;
  CUkernel k;
  CUfunction f;
  OK(cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
  OK(cuLibraryGetKernel(&k, lib, "add_value"));
  OK(cuKernelGetFunction(&f, k));
  int regs = 0;
  OK(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0));
  TEST_CHECK(regs > 0);
  uint32_t count = 256, v = 7;
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, count * 4));
  OK(cuMemsetD32_v2(d, 0, count));
  void *params[] = {&d, &v, &count};
  OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, count, 1, 1, 0, NULL, params, NULL));
  OK(cuCtxSynchronize());
  check_values(d, count, 7);
  OK(cuLibraryUnload(lib));
  /* SASS for sm_10 only */
  uint32_t elf_kind = 2, old = 10;
  memcpy(e, &elf_kind, 2), memcpy(e + 28, &old, 4);
  CUmodule mod;
  TEST_CHECK(cuModuleLoadData(&mod, c) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  OK(cuMemFree_v2(d));
  free(c);
}

/* nvcc's own fatbins load (no kernel runs, so the mock does too): the SASS entry for the GPU, or
 * the zstd-compressed PTX compiled by nvJitLink, with the parameter table of the kernel. */
static void test_fatbin_files(void) {
  NEED_DEVICE();
  const char *dir = getenv("NVHCQ_TEST_FATBIN_DIR");
  if (!dir) TEST_SKIP("NVHCQ_TEST_FATBIN_DIR is not set (needs nvcc at build time)");
  const char *names[] = {"sass.fatbin", "ptx.fatbin"};
  for (int i = 0; i < 2; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    size_t image_size;
    void *image = test_read_file(path, &image_size);
    TEST_CHECK_MSG(image != NULL, "%s", path);
    if (!image) continue;
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, image);
    if (i == 1 && (r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_NOT_SUPPORTED)) {
      free(image);
      TEST_SKIP("nvJitLink is not there to compile the PTX entry");
    }
    TEST_CHECK_MSG(r == CUDA_SUCCESS, "%s: %d", names[i], (int)r);
    free(image); /* the module keeps nothing of the image */
    if (r) continue;
    CUfunction f;
    OK(cuModuleGetFunction(&f, m, "scale_add"));
    size_t off = 0, size = 0;
    OK(cuFuncGetParamInfo(f, 2, &off, &size));
    TEST_CHECK(off == 16 && size == 4);
    OK(cuFuncGetParamInfo(f, 3, &off, &size));
    TEST_CHECK(off == 24 && size == 8);
    OK(cuModuleUnload(m));
  }
}

TEST_MAIN(TEST(test_errors), TEST(test_proc_address), TEST(test_stub), TEST(test_tensor_map),
          TEST(test_no_device), TEST(test_device), TEST(test_contexts), TEST(test_memory),
          TEST(test_pitched), TEST(test_streams), TEST(test_graph_explicit),
          TEST(test_graph_capture), TEST(test_kernels), TEST(test_kernel_graph), TEST(test_fatbin),
          TEST(test_fatbin_files))
