/* CUDA's virtual memory management against nvhcq's libcuda.so.1 (GPU or NVHCQ_MOCK=1): a
 * reserved range, two allocations mapped side by side (one from an offset), access set, a copy
 * spanning both read back byte for byte, memsets, pointer attributes, the order rules of unmap and
 * release with their error codes; a kernel over the spanning range on a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_test.h"
#define IS(x, code)                                                                                \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    TEST_CHECK_MSG(r_ == (code), "%s: %d, not %s", #x, (int)r_, #code);                            \
  } while (0)

#define G ((size_t)2 << 20)

/* Left to the library's stubs (not in cuda_api.h): declared as cuda.h does, types simplified. */
CUresult cuMemMapArrayAsync(void *mapInfoList, unsigned int count, void *hStream);

static CUmemAllocationProp device_prop(void) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  return p;
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint64_t x = seed | 1ull << 40;
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
}

static void test_granularity_and_refusals(void) {
  NEED_DEVICE();
  CUmemAllocationProp prop = device_prop();
  size_t g = 0;
  OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  TEST_CHECK(g == G);
  OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  TEST_CHECK(g == G);
  IS(cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)7),
     CUDA_ERROR_INVALID_VALUE);
  prop.location.id = 99;
  IS(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
     CUDA_ERROR_INVALID_DEVICE);
  prop = device_prop();
  CUmemGenericAllocationHandle h = 0;
  IS(cuMemCreate(&h, G + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemCreate(&h, G, &prop, 1), CUDA_ERROR_INVALID_VALUE);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32;
  IS(cuMemCreate(&h, G, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop = device_prop();
  prop.allocFlags.compressionType = 1;
  IS(cuMemCreate(&h, G, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop = device_prop();
  prop.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
  IS(cuMemCreate(&h, G, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemRelease(12345), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr va = 0;
  IS(cuMemAddressReserve(&va, G + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemAddressReserve(&va, G, 3 * G, 0, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemMapArrayAsync(NULL, 0, NULL), CUDA_ERROR_NOT_SUPPORTED);
  IS(cuMemExportToShareableHandle(NULL, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
     CUDA_ERROR_INVALID_VALUE);
  IS(cuMemImportFromShareableHandle(NULL, NULL, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
     CUDA_ERROR_INVALID_VALUE);
}

/* The hint is honoured where free: a range freed is reserved again at its address. */
static void test_reserve_hint(void) {
  NEED_DEVICE();
  CUdeviceptr a = 0, b = 0, c = 0;
  OK(cuMemAddressReserve(&a, 4 * G, 0, 0, 0));
  TEST_CHECK(a && a % G == 0);
  OK(cuMemAddressReserve(&b, 2 * G, 0, a, 0)); /* taken: elsewhere */
  TEST_CHECK(b && (b + 2 * G <= a || b >= a + 4 * G));
  IS(cuMemAddressFree(a, 2 * G), CUDA_ERROR_INVALID_VALUE); /* the size must match */
  OK(cuMemAddressFree(a, 4 * G));
  OK(cuMemAddressReserve(&c, 4 * G, 0, a, 0));
  TEST_CHECK_MSG(c == a, "hint 0x%llx, got 0x%llx", (unsigned long long)a, (unsigned long long)c);
  OK(cuMemAddressFree(c, 4 * G));
  OK(cuMemAddressFree(b, 2 * G));
}

typedef struct spanning {
  CUdeviceptr va;
  CUmemGenericAllocationHandle h1, h2;
} spanning;

/* [va, va + G): h1's second half; [va + G, va + 3 G): all of h2; access not yet set. */
static int make_spanning(spanning *s) {
  CUmemAllocationProp prop = device_prop();
  memset(s, 0, sizeof *s);
  OK(cuMemAddressReserve(&s->va, 4 * G, 0, 0, 0));
  OK(cuMemCreate(&s->h1, 2 * G, &prop, 0));
  OK(cuMemCreate(&s->h2, 2 * G, &prop, 0));
  if (!s->va || !s->h1 || !s->h2) return 0;
  OK(cuMemMap(s->va, G, G, s->h1, 0));
  OK(cuMemMap(s->va + G, 2 * G, 0, s->h2, 0));
  return 1;
}

static void set_rw(CUdeviceptr va, size_t size, CUresult want) {
  CUmemAccessDesc d;
  memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = 0;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  IS(cuMemSetAccess(va, size, &d, 1), want);
}

static void test_map_copy_spanning(void) {
  NEED_DEVICE();
  spanning s;
  if (!make_spanning(&s)) return;
  CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  unsigned long long flags = 99;
  OK(cuMemGetAccess(&flags, &loc, s.va));
  TEST_CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  size_t n = G + 8193;
  uint8_t *in = malloc(3 * G), *out = malloc(3 * G);
  fill(in, 3 * G, 5);
  CUdeviceptr at = s.va + G / 2 - 4097;                     /* across the boundary at va + G */
  IS(cuMemcpyHtoD_v2(at, in, n), CUDA_ERROR_INVALID_VALUE); /* not accessible yet */
  IS(cuMemMap(s.va + G, G, 0, s.h1, 0), CUDA_ERROR_INVALID_VALUE);         /* mapped already */
  IS(cuMemMap(s.va + 3 * G, 2 * G, 0, s.h1, 0), CUDA_ERROR_INVALID_VALUE); /* past the range */
  set_rw(s.va, G, CUDA_SUCCESS);
  set_rw(s.va, 2 * G, CUDA_ERROR_INVALID_VALUE); /* not whole mappings */
  set_rw(s.va + G, 2 * G, CUDA_SUCCESS);
  OK(cuMemGetAccess(&flags, &loc, s.va + G + 5));
  TEST_CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  OK(cuMemcpyHtoD_v2(at, in, n));
  memset(out, 0, n);
  OK(cuMemcpyDtoH_v2(out, at, n));
  TEST_CHECK_MSG(memcmp(in, out, n) == 0, "a copy across two mappings");
  /* device to device across the boundary, both ways, and a stream-ordered one */
  OK(cuMemcpyDtoD_v2(s.va + 2 * G + 64, at, n - 64 - G / 2));
  OK(cuMemcpyDtoH_v2(out, s.va + 2 * G + 64, n - 64 - G / 2));
  TEST_CHECK(memcmp(in, out, n - 64 - G / 2) == 0);
  OK(cuMemcpyHtoDAsync_v2(s.va, in, 3 * G, NULL));
  OK(cuCtxSynchronize());
  memset(out, 0, 3 * G);
  OK(cuMemcpyDtoH_v2(out, s.va, 3 * G));
  TEST_CHECK(memcmp(in, out, 3 * G) == 0);
  IS(cuMemcpyDtoH_v2(out, s.va + 2 * G, G + 1), CUDA_ERROR_INVALID_VALUE); /* past the end */
  /* memsets across the boundary */
  OK(cuMemsetD32_v2(s.va + G - 400, 0xabcdef01u, 200));
  uint32_t w[200];
  OK(cuMemcpyDtoH_v2(w, s.va + G - 400, sizeof w));
  int bad = 0;
  for (int i = 0; i < 200; i++) bad += w[i] != 0xabcdef01u;
  TEST_CHECK(bad == 0);
  OK(cuMemsetD8_v2(s.va + G - 1, 0x11, 2));
  uint8_t two[2];
  OK(cuMemcpyDtoH_v2(two, s.va + G - 1, 2));
  TEST_CHECK(two[0] == 0x11 && two[1] == 0x11);
  /* the mapping from an offset is h1's second half: seen through a second mapping of all h1 */
  CUdeviceptr va2 = 0;
  OK(cuMemAddressReserve(&va2, 2 * G, 0, 0, 0));
  OK(cuMemMap(va2, 2 * G, 0, s.h1, 0));
  set_rw(va2, 2 * G, CUDA_SUCCESS);
  OK(cuMemcpyDtoH_v2(out, va2 + G, 16));
  OK(cuMemcpyDtoH_v2(out + 16, s.va, 16));
  TEST_CHECK(memcmp(out, out + 16, 16) == 0);
  OK(cuMemUnmap(va2, 2 * G));
  OK(cuMemAddressFree(va2, 2 * G));
  free(in);
  free(out);
  OK(cuMemUnmap(s.va, 3 * G)); /* two mappings at once */
  OK(cuMemRelease(s.h1));
  OK(cuMemRelease(s.h2));
  OK(cuMemAddressFree(s.va, 4 * G));
}

static void test_attributes(void) {
  NEED_DEVICE();
  spanning s;
  if (!make_spanning(&s)) return;
  unsigned int type = 0;
  IS(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, s.va + G + 7),
     CUDA_ERROR_INVALID_VALUE); /* no access yet */
  set_rw(s.va, 3 * G, CUDA_SUCCESS);
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, s.va + G + 7));
  TEST_CHECK(type == CU_MEMORYTYPE_DEVICE);
  CUdeviceptr dp = 0, start = 0;
  size_t rsize = 0;
  OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, s.va + G + 7));
  TEST_CHECK(dp == s.va + G + 7);
  int ordinal = -1;
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, s.va + G + 7));
  TEST_CHECK(ordinal == 0);
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[2] = {&start, &rsize};
  OK(cuPointerGetAttributes(2, attrs, data, s.va + G + 7));
  TEST_CHECK(start == s.va + G && rsize == 2 * G);
  OK(cuMemGetAddressRange_v2(&start, &rsize, s.va + 100));
  TEST_CHECK(start == s.va && rsize == G);
  IS(cuMemFree_v2(s.va), CUDA_ERROR_INVALID_VALUE); /* cuMemUnmap's, not cuMemFree's */
  CUmemGenericAllocationHandle got = 0;
  OK(cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)(s.va + G + 7)));
  TEST_CHECK(got == s.h2);
  OK(cuMemRelease(got));
  CUmemAllocationProp prop;
  OK(cuMemGetAllocationPropertiesFromHandle(&prop, s.h2));
  TEST_CHECK(prop.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
             prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop.location.id == 0);
  OK(cuMemUnmap(s.va, 3 * G));
  OK(cuMemRelease(s.h1));
  OK(cuMemRelease(s.h2));
  OK(cuMemAddressFree(s.va, 4 * G));
}

/* Released while mapped: the memory stays until its cuMemUnmap; order errors. */
static void test_release_order(void) {
  NEED_DEVICE();
  spanning s;
  if (!make_spanning(&s)) return;
  set_rw(s.va, 3 * G, CUDA_SUCCESS);
  uint8_t in[64], out[64];
  fill(in, sizeof in, 9);
  OK(cuMemcpyHtoD_v2(s.va + G - 32, in, sizeof in));
  OK(cuMemRelease(s.h1));
  OK(cuMemRelease(s.h2));
  IS(cuMemRelease(s.h1), CUDA_ERROR_INVALID_VALUE);
  CUmemAllocationProp prop;
  IS(cuMemGetAllocationPropertiesFromHandle(&prop, s.h1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemcpyDtoH_v2(out, s.va + G - 32, sizeof out));
  TEST_CHECK(memcmp(in, out, sizeof in) == 0);
  IS(cuMemAddressFree(s.va, 4 * G), CUDA_ERROR_INVALID_VALUE); /* still mapped */
  IS(cuMemUnmap(s.va, 2 * G), CUDA_ERROR_INVALID_VALUE);       /* not whole mappings */
  IS(cuMemUnmap(s.va + 3 * G, G), CUDA_ERROR_INVALID_VALUE);   /* nothing mapped */
  CUmemGenericAllocationHandle again = 0;
  OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)s.va));
  OK(cuMemUnmap(s.va, G));
  OK(cuMemUnmap(s.va + G, 2 * G));
  /* h1 lives on through the retained handle: mapped again, its bytes still there */
  OK(cuMemMap(s.va, G, G, again, 0));
  set_rw(s.va, G, CUDA_SUCCESS);
  OK(cuMemcpyDtoH_v2(out, s.va + G - 32, 32));
  TEST_CHECK(memcmp(in, out, 32) == 0);
  OK(cuMemUnmap(s.va, G));
  OK(cuMemRelease(again));
  IS(cuMemMap(s.va, G, 0, again, 0), CUDA_ERROR_INVALID_VALUE); /* gone */
  OK(cuMemAddressFree(s.va, 4 * G));
}

/* p[i] += v for i < n. */
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

static void test_kernel_spanning(void) {
  NEED_KERNELS();
  spanning s;
  if (!make_spanning(&s)) return;
  set_rw(s.va, 3 * G, CUDA_SUCCESS);
  CUmodule mod;
  CUfunction f = NULL;
  OK(cuModuleLoadData(&mod, add_ptx));
  OK(cuModuleGetFunction(&f, mod, "add_value"));
  uint32_t n = (uint32_t)(3 * G / 4);
  OK(cuMemsetD32_v2(s.va, 5, n));
  CUdeviceptr p = s.va;
  uint32_t v = 7;
  void *params[] = {&p, &v, &n};
  if (f) OK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  OK(cuCtxSynchronize());
  uint32_t *h = malloc(3 * G);
  OK(cuMemcpyDtoH_v2(h, s.va, 3 * G));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += h[i] != 12;
  TEST_CHECK_MSG(bad == 0, "%u of %u values are not 12", bad, n);
  free(h);
  OK(cuModuleUnload(mod));
  OK(cuMemUnmap(s.va, 3 * G));
  OK(cuMemRelease(s.h1));
  OK(cuMemRelease(s.h2));
  OK(cuMemAddressFree(s.va, 4 * G));
}

/* Every call is where cuGetProcAddress looks for it, without a device. */
static void test_proc_address(void) {
  static const char *names[] = {"cuMemGetAllocationGranularity",
                                "cuMemAddressReserve",
                                "cuMemAddressFree",
                                "cuMemCreate",
                                "cuMemRelease",
                                "cuMemMap",
                                "cuMemUnmap",
                                "cuMemSetAccess",
                                "cuMemGetAccess",
                                "cuMemGetAllocationPropertiesFromHandle",
                                "cuMemRetainAllocationHandle"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    TEST_CHECK_MSG(cuGetProcAddress_v2(names[i], &fn, 12000, 0, &st) == CUDA_SUCCESS && fn, "%s",
                   names[i]);
  }
}

/* share_child.c's bytes: seed for the parent's, seed + 1 for the child's. */
static uint8_t pattern(size_t i, unsigned seed) {
  return (uint8_t)(i * 131u + seed + (i >> 12));
}

static int matches(const uint8_t *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(i, seed)) return 0;
  return 1;
}

/* test_cuda_share_child, beside this program, run with the descriptor inherited: it checks the
 * parent's bytes and writes its own, which the parent reads through its import `at`. */
static void other_process_with(const char *what, CUdeviceptr mine, CUdeviceptr at, size_t n,
                               uint8_t *buf);

static void other_process(int fd, CUdeviceptr mine, CUdeviceptr at, size_t n, uint8_t *buf) {
  char what[32];
  snprintf(what, sizeof what, "%d", fd);
  /* The library's descriptors are close-on-exec; this one is meant for the child. */
  TEST_CHECK(fcntl(fd, F_SETFD, 0) == 0);
  other_process_with(what, mine, at, n, buf);
}

/* test_cuda_share_child's path (beside this program) into `exe` (4096 bytes); 0 if unknown. */
static int child_exe(char *exe) {
  ssize_t len = readlink("/proc/self/exe", exe, 4096 - 32);
  TEST_CHECK(len > 0);
  if (len <= 0) return 0;
  exe[len] = 0;
  strcpy(strrchr(exe, '/') + 1, "test_cuda_share_child");
  return 1;
}

/* The child of other_process, given `what` (a descriptor number or "ipc:" and a handle). */
static void other_process_with(const char *what, CUdeviceptr mine, CUdeviceptr at, size_t n,
                               uint8_t *buf) {
  char exe[4096], args[3][160];
  if (!child_exe(exe)) return;
  for (size_t i = 0; i < n; i++) buf[i] = pattern(i, 40);
  OK(cuMemcpyHtoD_v2(mine, buf, n));
  snprintf(args[0], sizeof args[0], "%s", what);
  snprintf(args[1], sizeof args[1], "%zu", n);
  snprintf(args[2], sizeof args[2], "%d", 40);
  pid_t pid = fork();
  if (pid == 0) {
    execl(exe, exe, args[0], args[1], args[2], (char *)NULL);
    _exit(127);
  }
  int status = 0;
  TEST_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  TEST_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "%s exited with %d (127: not found)", exe, WEXITSTATUS(status));
  memset(buf, 0, n);
  OK(cuMemcpyDtoH_v2(buf, at, n));
  TEST_CHECK_MSG(matches(buf, n, 41), "the other process's bytes are not in the memory");
}

/* cuMemCreate's memory with the POSIX file descriptor handle type: exported, imported here (the
 * same bytes through both mappings) and, on a GPU, in another process the descriptor is inherited
 * by; refusals of handles made without the type, other types, flags and descriptors that hold no
 * export. */
static void test_shareable(void) {
  NEED_DEVICE();
  const CUmemAllocationHandleType POSIX = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemAllocationProp prop = device_prop(), got;
  CUmemGenericAllocationHandle plain = 0, h = 0, h2 = 0;
  int fd = -1, none = open("/dev/null", O_RDONLY);
  OK(cuMemCreate(&plain, G, &prop, 0));
  IS(cuMemExportToShareableHandle(&fd, plain, POSIX, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemRelease(plain));
  prop.requestedHandleTypes = POSIX;
  OK(cuMemCreate(&h, 2 * G, &prop, 0));
  IS(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_WIN32, 0), CUDA_ERROR_NOT_SUPPORTED);
  IS(cuMemExportToShareableHandle(&fd, h, POSIX, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemExportToShareableHandle(&fd, h, POSIX, 0));
  TEST_CHECK(fd >= 0);
  IS(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)-1, POSIX), CUDA_ERROR_INVALID_VALUE);
  IS(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)none, POSIX), CUDA_ERROR_INVALID_VALUE);
  close(none);
  OK(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)fd, POSIX));
  OK(cuMemGetAllocationPropertiesFromHandle(&got, h2));
  TEST_CHECK(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.requestedHandleTypes == POSIX &&
             got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0);
  CUdeviceptr va = 0;
  OK(cuMemAddressReserve(&va, 4 * G, 0, 0, 0));
  OK(cuMemMap(va, 2 * G, 0, h, 0));
  OK(cuMemMap(va + 2 * G, 2 * G, 0, h2, 0));
  set_rw(va, 4 * G, CUDA_SUCCESS);
  /* each mapping names its memory's handle types and physical allocation, whatever the address */
  unsigned long long types = 0, block[3] = {0};
  OK(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, va + G));
  TEST_CHECK(types == POSIX);
  OK(cuPointerGetAttribute(&block[0], CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, va));
  OK(cuPointerGetAttribute(&block[1], CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, va + G));
  OK(cuPointerGetAttribute(&block[2], CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, va + 2 * G));
  TEST_CHECK(block[0] && block[0] == block[1] && block[2] && block[2] != block[0]);
  uint8_t *in = malloc(2 * G), *out = malloc(2 * G);
  fill(in, 2 * G, 17);
  OK(cuMemcpyHtoD_v2(va, in, 2 * G));
  OK(cuMemcpyDtoH_v2(out, va + 2 * G, 2 * G));
  TEST_CHECK_MSG(memcmp(in, out, 2 * G) == 0, "the import is not the exported memory");
  if (!on_mock())
    other_process(fd, va, va + 2 * G, 2 * G, out);
  else
    printf("  (not run on the mock, whose memory is this process's: the other process's part)\n");
  if (!on_mock()) close(fd); /* the mock's descriptors are its own numbers */
  OK(cuMemUnmap(va, 4 * G));
  OK(cuMemRelease(h));
  OK(cuMemRelease(h2));
  OK(cuMemAddressFree(va, 4 * G));
  free(in);
  free(out);
}

/* Hex of the 64 bytes at `p` after `prefix`, into `out` (of 2 * 64 + 40 bytes or more). */
static void hex_of(const void *p, const char *prefix, char *out) {
  size_t at = (size_t)sprintf(out, "%s", prefix);
  for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++)
    sprintf(out + at + 2 * i, "%02x", (unsigned)((const uint8_t *)p)[i]);
}

/* Legacy IPC: cuMemAlloc's memory (a 4 MiB allocation and a small one, a block of a shared 2 MiB
 * allocation) shared by handle; on a GPU another process opens each, checks the parent's bytes and
 * writes its own; on the mock (one process) this process opens them. Refusals as CUDA's. */
static void test_ipc(void) {
  NEED_DEVICE();
  const size_t sizes[2] = {2 * G, 4096};
  for (int k = 0; k < 2; k++) {
    size_t n = sizes[k];
    CUdeviceptr d;
    OK(cuMemAlloc_v2(&d, n));
    int capable = 0;
    OK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d));
    TEST_CHECK(capable == 1);
    CUipcMemHandle h;
    OK(cuIpcGetMemHandle(&h, d));
    uint8_t *buf = malloc(n);
    if (!on_mock()) {
      char what[2 * CU_IPC_HANDLE_SIZE + 40];
      hex_of(h.reserved, "ipc:", what);
      other_process_with(what, d, d, n, buf);
    } else {
      CUdeviceptr p = 0;
      for (size_t i = 0; i < n; i++) buf[i] = pattern(i, 7);
      OK(cuMemcpyHtoD_v2(d, buf, n));
      OK(cuIpcOpenMemHandle_v2(&p, h, 0));
      TEST_CHECK(p != 0 && p != d);
      memset(buf, 0, n);
      OK(cuMemcpyDtoH_v2(buf, p, n));
      TEST_CHECK_MSG(matches(buf, n, 7), "the opened memory is not the exported bytes");
      IS(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE); /* closed, not freed */
      IS(cuIpcGetMemHandle(&h, p), CUDA_ERROR_INVALID_VALUE);
      OK(cuIpcCloseMemHandle(p));
    }
    IS(cuIpcCloseMemHandle(d), CUDA_ERROR_INVALID_VALUE); /* not opened memory */
    OK(cuMemFree_v2(d));
    free(buf);
  }
  void *host;
  OK(cuMemAllocHost_v2(&host, 4096));
  CUipcMemHandle h;
  IS(cuIpcGetMemHandle(&h, (CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFreeHost(host));
  memset(&h, 0x5a, sizeof h);
  CUdeviceptr p;
  IS(cuIpcOpenMemHandle_v2(&p, h, 0), CUDA_ERROR_INVALID_VALUE);
  IS(cuIpcOpenMemHandle_v2(&p, h, 2), CUDA_ERROR_INVALID_VALUE);
}

/* A graph's wait on an interprocess event is a step of its own (the GPU waits for the latest
 * record of any process), on this process's events nothing: an exec update swaps events of one
 * kind only, and says to instantiate again for the other. */
static void ipc_event_in_graph(CUevent ev, CUevent again, CUstream st) {
  CUevent mine;
  CUgraph g;
  CUgraphNode w;
  CUgraphExec x;
  OK(cuEventCreate(&mine, CU_EVENT_DISABLE_TIMING));
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphAddEventWaitNode(&w, g, NULL, 0, mine));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  IS(cuGraphExecEventWaitNodeSetEvent(x, w, ev), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphLaunch(x, st));
  OK(cuStreamSynchronize(st));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphEventWaitNodeSetEvent(w, ev));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuEventRecord(again, st));
  OK(cuGraphLaunch(x, st));
  OK(cuStreamSynchronize(st));
  IS(cuGraphExecEventWaitNodeSetEvent(x, w, mine), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphExecEventWaitNodeSetEvent(x, w, again));
  OK(cuGraphLaunch(x, st));
  OK(cuStreamSynchronize(st));
  OK(cuEventQuery(ev));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuEventDestroy_v2(mine));
}

/* Interprocess events, this process's side: refusals, and a handle opened here is the same event
 * (a record through either is waited for through the other). */
static void ipc_event_here(CUevent ev, CUipcEventHandle h, CUstream st) {
  CUevent plain, again;
  CUipcEventHandle hp;
  float ms;
  IS(cuEventCreate(&plain, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
  OK(cuEventCreate(&plain, 0));
  IS(cuIpcGetEventHandle(&hp, plain), CUDA_ERROR_INVALID_VALUE);
  IS(cuIpcGetEventHandle(NULL, ev), CUDA_ERROR_INVALID_VALUE);
  OK(cuEventDestroy_v2(plain));
  memset(&hp, 0x5a, sizeof hp);
  IS(cuIpcOpenEventHandle(&again, hp), CUDA_ERROR_INVALID_VALUE);
  OK(cuIpcOpenEventHandle(&again, h));
  IS(cuEventElapsedTime(&ms, ev, again), CUDA_ERROR_INVALID_HANDLE); /* no timing */
  OK(cuEventQuery(again));                                           /* never recorded */
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, 64 << 20));
  OK(cuMemsetD32Async(d, 7, 16 << 20, st));
  OK(cuEventRecord(again, st));
  OK(cuEventSynchronize(ev));
  uint32_t last = 0;
  OK(cuMemcpyDtoH_v2(&last, d + (64 << 20) - 4, 4));
  TEST_CHECK(last == 7);
  OK(cuStreamWaitEvent(st, again, 0));
  OK(cuStreamSynchronize(st));
  ipc_event_in_graph(ev, again, st);
  OK(cuEventDestroy_v2(again));
  OK(cuMemFree_v2(d));
}

/* The other process (on a GPU) opens the event and the memory, finds the event not reached, has
 * its stream wait for it and says so on its standard output; only then does this process let its
 * own stream go on (a stream wait on host memory holds the memset and the record back), so the
 * child's copy sees the memset only if its wait waited for this process's record. */
static void ipc_event_other_process(CUevent ev, CUipcEventHandle h, CUstream st) {
  const size_t n = 4 << 20;
  CUdeviceptr d, gate_d;
  uint32_t *gate;
  CUipcMemHandle mh;
  char exe[4096], what[2][2 * CU_IPC_HANDLE_SIZE + 40], size[32];
  if (!child_exe(exe)) return; /* before the stream is held back */
  OK(cuMemAlloc_v2(&d, n));
  OK(cuMemsetD32_v2(d, 0, n / 4));
  OK(cuIpcGetMemHandle(&mh, d));
  OK(cuMemHostAlloc((void **)&gate, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  OK(cuMemHostGetDevicePointer_v2(&gate_d, gate, 0));
  *gate = 0;
  OK(cuStreamWaitValue32_v2(st, gate_d, 1, CU_STREAM_WAIT_VALUE_GEQ));
  OK(cuMemsetD32Async(d, 0x5eed, n / 4, st));
  OK(cuEventRecord(ev, st));
  hex_of(h.reserved, "event:", what[0]);
  hex_of(mh.reserved, "", what[1]);
  snprintf(size, sizeof size, "%zu", n);
  int out[2];
  TEST_CHECK(pipe(out) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    execl(exe, exe, what[0], size, what[1], (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  char said = 0;
  TEST_CHECK_MSG(read(out[0], &said, 1) == 1 && said == 'w', "the other process did not wait");
  close(out[0]);
  __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  int status = 0;
  TEST_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  TEST_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "%s exited with %d (127: not found)", exe, WEXITSTATUS(status));
  OK(cuEventSynchronize(ev)); /* the other process's record too */
  OK(cuStreamSynchronize(st));
  OK(cuMemFreeHost(gate));
  OK(cuMemFree_v2(d));
}

/* cuIpcGetEventHandle / cuIpcOpenEventHandle: an event made with CU_EVENT_INTERPROCESS shared by
 * handle, in this process and (on a GPU) another one; the handle of a destroyed event opens no
 * more. */
static void test_ipc_event(void) {
  NEED_DEVICE();
  CUevent ev;
  CUipcEventHandle h;
  CUstream st;
  OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  OK(cuIpcGetEventHandle(&h, ev));
  ipc_event_here(ev, h, st);
  if (!on_mock())
    ipc_event_other_process(ev, h, st);
  else
    printf("  (not run on the mock, whose memory is this process's: the other process's part)\n");
  OK(cuEventDestroy_v2(ev));
  CUevent gone;
  IS(cuIpcOpenEventHandle(&gone, h), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(st));
}

/* Stream-ordered pools shared by POSIX descriptor: a pool made with the handle type, exported;
 * its allocations (4 MiB, 1 MiB rounded to whole pages, 4 KiB) exported by pointer; another
 * process (on a GPU; this one on the mock) imports the pool and each pointer, checks the bytes,
 * writes its own and frees. */
static void test_pool_ipc(void) {
  NEED_DEVICE();
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                          .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                          .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
  CUmemoryPool pool, plain;
  OK(cuMemPoolCreate(&pool, &props));
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  OK(cuMemPoolCreate(&plain, &props));
  int fd = -1, none = -1;
  OK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  IS(cuMemPoolExportToShareableHandle(&none, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
     CUDA_ERROR_INVALID_VALUE);
  const size_t sizes[3] = {2 * G, G / 2, 4096};
  for (int k = 0; k < 3; k++) {
    size_t n = sizes[k];
    CUdeviceptr d;
    OK(cuMemAllocFromPoolAsync(&d, n, pool, NULL));
    unsigned long long types = 0;
    OK(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d));
    TEST_CHECK(types == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemPoolPtrExportData data;
    OK(cuMemPoolExportPointer(&data, d));
    uint8_t *buf = malloc(n);
    if (!on_mock()) {
      char prefix[32], what[2 * CU_IPC_HANDLE_SIZE + 40];
      snprintf(prefix, sizeof prefix, "pool:%d:", fd);
      hex_of(data.reserved, prefix, what);
      TEST_CHECK(fcntl(fd, F_SETFD, 0) == 0); /* the child inherits the pool's descriptor */
      other_process_with(what, d, d, n, buf);
    } else {
      CUmemoryPool imported;
      CUdeviceptr p = 0, q;
      for (size_t i = 0; i < n; i++) buf[i] = pattern(i, 9);
      OK(cuMemcpyHtoD_v2(d, buf, n));
      OK(cuMemPoolImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      OK(cuMemPoolImportPointer(&p, imported, &data));
      memset(buf, 0, n);
      OK(cuMemcpyDtoH_v2(buf, p, n));
      TEST_CHECK_MSG(matches(buf, n, 9), "the imported allocation is not the exported bytes");
      IS(cuMemAllocFromPoolAsync(&q, 64, imported, NULL), CUDA_ERROR_INVALID_VALUE);
      IS(cuMemPoolImportPointer(&q, plain, &data), CUDA_ERROR_INVALID_VALUE);
      OK(cuMemFree_v2(p));
      OK(cuMemPoolDestroy(imported));
    }
    OK(cuMemFreeAsync(d, NULL));
    free(buf);
  }
  OK(cuCtxSynchronize());
  close(fd); /* a memory file of this library's, on the mock too */
  OK(cuMemPoolDestroy(pool));
  OK(cuMemPoolDestroy(plain));
}

TEST_MAIN(TEST(test_proc_address), TEST(test_granularity_and_refusals), TEST(test_reserve_hint),
          TEST(test_map_copy_spanning), TEST(test_attributes), TEST(test_release_order),
          TEST(test_kernel_spanning), TEST(test_shareable), TEST(test_ipc), TEST(test_ipc_event),
          TEST(test_pool_ipc))
