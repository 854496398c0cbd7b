/* JIT linking and module queries through nvhcq's libcuda.so.1: cuLink* over nvJitLink (an extern
 * function resolved across two PTX inputs, the unresolved case and its log, the JIT options'
 * write-backs), cuModuleLoadDataEx's options, and the module/library enumeration calls. Linking
 * runs on the mock (NVHCQ_MOCK=1) or a GPU; the linked kernel runs on a GPU only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"

/* p[0] = add_two(p[0]): add_two is only declared here. */
static const char caller_ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                                 ".extern .func (.param .b32 r) add_two(.param .b32 x);\n"
                                 ".visible .entry call_add_two(.param .u64 p) {\n"
                                 "  .reg .b32 %r<3>; .reg .b64 %rd<2>;\n"
                                 "  ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd1, %rd1;\n"
                                 "  ld.global.u32 %r1, [%rd1];\n"
                                 "  { .param .b32 a; .param .b32 b; st.param.b32 [a], %r1;\n"
                                 "    call.uni (b), add_two, (a); ld.param.b32 %r2, [b]; }\n"
                                 "  st.global.u32 [%rd1], %r2;\n  ret;\n}\n";

static const char callee_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .func (.param .b32 r) add_two(.param .b32 x) {\n"
    "  .reg .b32 %r<3>;\n"
    "  ld.param.b32 %r1, [x]; add.u32 %r2, %r1, 2; st.param.b32 [r], %r2; ret;\n}\n";

/* p[0] += bias, bias defined in the other input. */
static const char user_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".extern .global .align 4 .u32 bias;\n"
    ".visible .entry call_add_two(.param .u64 p) {\n"
    "  .reg .b32 %r<4>; .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd1, %rd1;\n"
    "  mov.u64 %rd2, bias; ld.global.u32 %r1, [%rd2]; ld.global.u32 %r2, [%rd1];\n"
    "  add.u32 %r3, %r1, %r2; st.global.u32 [%rd1], %r3;\n  ret;\n}\n";

static const char bias_ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                               ".visible .global .align 4 .u32 bias = 2;\n";

static uint32_t rd32(const uint8_t *p) {
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The SM a cubin is built for (e_flags, by the ELF ABI version), or 0 if it is no CUDA ELF. */
static unsigned cubin_sm(const void *image, size_t size) {
  const uint8_t *p = image;
  if (size < 64 ||
      memcmp(p,
             "\x7f"
             "ELF",
             4) ||
      p[4] != 2 || (p[0x12] | p[0x13] << 8) != 190)
    return 0;
  uint32_t flags = rd32(p + 0x30);
  return p[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

static unsigned device_sm(void) {
  int major = 0, minor = 0;
  cuDeviceComputeCapability(&major, &minor, 0);
  return (unsigned)(major * 10 + minor);
}

/* A link of the two inputs, or a skip when nvJitLink is not installed. */
static CUresult link_create(CUlinkState *s, unsigned n, CUjit_option *o, void **v) {
  CUresult r = cuLinkCreate_v2(n, o, v, s);
  if (r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) fprintf(stderr, "  (nvJitLink is not installed)\n");
  return r;
}

static void run_linked(CUmodule m) {
  if (on_mock()) {
    printf("  SKIP: running the linked kernel needs a GPU (the mock runs kernels from PTX)\n");
    return;
  }
  CUfunction f;
  OK(cuModuleGetFunction(&f, m, "call_add_two"));
  CUdeviceptr d;
  uint32_t v = 40;
  OK(cuMemAlloc_v2(&d, 4));
  OK(cuMemcpyHtoD_v2(d, &v, 4));
  void *params[] = {&d};
  OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
  OK(cuCtxSynchronize());
  OK(cuMemcpyDtoH_v2(&v, d, 4));
  TEST_CHECK_MSG(v == 42, "the linked kernel wrote %u, not 42", v);
  OK(cuMemFree_v2(d));
}

/* Two inputs linked with every option that writes back; the cubin is an ELF for the context's
 * GPU. `a` and `b` are the inputs; *cubin stays valid until the state is destroyed. */
static void link_two(const char *a, size_t a_size, const char *b, size_t b_size, CUlinkState *s,
                     void **cubin) {
  char info[4096] = "", error[4096] = "";
  float wall = 0;
  CUjit_option o[] = {CU_JIT_WALL_TIME,
                      CU_JIT_INFO_LOG_BUFFER,
                      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                      CU_JIT_ERROR_LOG_BUFFER,
                      CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                      CU_JIT_LOG_VERBOSE,
                      CU_JIT_OPTIMIZATION_LEVEL,
                      CU_JIT_GENERATE_LINE_INFO,
                      CU_JIT_TARGET_FROM_CUCONTEXT,
                      CU_JIT_CACHE_MODE,
                      CU_JIT_THREADS_PER_BLOCK,
                      CU_JIT_FAST_COMPILE};
  void *v[] = {NULL,
               info,
               (void *)(uintptr_t)sizeof info,
               error,
               (void *)(uintptr_t)sizeof error,
               (void *)1,
               (void *)3,
               (void *)1,
               NULL,
               (void *)2,
               (void *)128,
               (void *)0};
  *cubin = NULL;
  CUresult r = link_create(s, sizeof o / sizeof o[0], o, v);
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuLinkCreate: %d", (int)r);
  if (r) return;
  OK(cuLinkAddData_v2(*s, CU_JIT_INPUT_PTX, (void *)a, a_size, "a.ptx", 0, NULL, NULL));
  OK(cuLinkAddData_v2(*s, CU_JIT_INPUT_PTX, (void *)b, b_size, "b.ptx", 0, NULL, NULL));
  size_t size = 0;
  OK(cuLinkComplete(*s, cubin, &size));
  TEST_CHECK(*cubin != NULL && size > 0);
  unsigned sm = *cubin ? cubin_sm(*cubin, size) : 0;
  TEST_CHECK_MSG(sm == device_sm(), "the cubin is for sm_%u, the context's GPU is sm_%u", sm,
                 device_sm());
  memcpy(&wall, &v[0], sizeof wall);
  TEST_CHECK_MSG(wall > 0, "CU_JIT_WALL_TIME wrote %f ms", (double)wall);
  size_t info_n = (size_t)(uintptr_t)v[2], error_n = (size_t)(uintptr_t)v[4];
  TEST_CHECK_MSG(info_n == strlen(info) && info_n > 0, "info log %zu bytes: '%s'", info_n, info);
  TEST_CHECK_MSG(error_n == strlen(error), "error log %zu bytes: '%s'", error_n, error);
}

static int have_linker(void) {
  CUlinkState s;
  CUresult r = cuLinkCreate_v2(0, NULL, NULL, &s);
  if (!r) cuLinkDestroy(s);
  return r != CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

/* An extern function defined in the other input. */
static void test_link_function(void) {
  NEED_DEVICE();
  if (!have_linker()) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  CUlinkState s;
  void *cubin;
  link_two(caller_ptx, sizeof caller_ptx, callee_ptx, sizeof callee_ptx, &s, &cubin);
  if (!cubin) return;
  /* The call across inputs is an R_CUDA_ABS55_16_34 relocation the loader applies. */
  CUmodule m = NULL;
  OK(cuModuleLoadData(&m, cubin));
  OK(cuLinkDestroy(s));
  if (!m) return;
  run_linked(m);
  OK(cuModuleUnload(m));
}

/* An extern variable defined in the other input: the cubin loads (after cuLinkComplete, before
 * cuLinkDestroy) and, on a GPU, runs. */
static void test_link(void) {
  NEED_DEVICE();
  if (!have_linker()) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  CUlinkState s;
  void *cubin;
  link_two(user_ptx, sizeof user_ptx, bias_ptx, sizeof bias_ptx, &s, &cubin);
  if (!cubin) return;
  CUmodule m = NULL;
  OK(cuModuleLoadData(&m, cubin));
  OK(cuLinkDestroy(s));
  TEST_CHECK(cuLinkDestroy(s) == CUDA_ERROR_INVALID_HANDLE);
  if (!m) return;
  unsigned count = 0;
  OK(cuModuleGetFunctionCount(&count, m));
  TEST_CHECK_MSG(count == 1, "%u functions", count);
  CUdeviceptr bias = 0;
  size_t bytes = 0;
  OK(cuModuleGetGlobal_v2(&bias, &bytes, m, "bias"));
  TEST_CHECK(bias && bytes == 4);
  run_linked(m);
  OK(cuModuleUnload(m));
}

/* An extern nobody defines: the link fails, and the error log names the symbol. */
static void test_link_unresolved(void) {
  NEED_DEVICE();
  char error[2048] = "x";
  CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {error, (void *)(uintptr_t)sizeof error};
  CUlinkState s;
  CUresult r = link_create(&s, 2, o, v);
  if (r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  TEST_CHECK(r == CUDA_SUCCESS);
  if (r) return;
  OK(cuLinkAddData_v2(s, CU_JIT_INPUT_PTX, (void *)caller_ptx, sizeof caller_ptx, "caller.ptx", 0,
                      NULL, NULL));
  void *cubin = NULL;
  size_t size = 0;
  r = cuLinkComplete(s, &cubin, &size);
  TEST_CHECK_MSG(r == CUDA_ERROR_INVALID_PTX, "cuLinkComplete: %d", (int)r);
  TEST_CHECK_MSG(strstr(error, "add_two") != NULL, "error log: '%s'", error);
  TEST_CHECK((size_t)(uintptr_t)v[1] == strlen(error));
  OK(cuLinkDestroy(s));
}

/* A small log buffer gets a terminated prefix; a bad input, option or handle is refused. */
static void test_link_errors(void) {
  NEED_DEVICE();
  char error[8];
  memset(error, 'x', sizeof error);
  CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {error, (void *)(uintptr_t)sizeof error};
  CUlinkState s;
  CUresult r = link_create(&s, 2, o, v);
  if (r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  TEST_CHECK(r == CUDA_SUCCESS);
  if (r) return;
  static const char bad[] = ".version 7.8\n.target sm_80\n.address_size 64\nnot ptx at all;\n";
  r = cuLinkAddData_v2(s, CU_JIT_INPUT_PTX, (void *)bad, sizeof bad, "bad.ptx", 0, NULL, NULL);
  TEST_CHECK_MSG(r == CUDA_ERROR_INVALID_PTX, "bad PTX: %d", (int)r);
  TEST_CHECK(error[sizeof error - 1] == '\0' && (size_t)(uintptr_t)v[1] == sizeof error - 1);
  TEST_CHECK(cuLinkAddData_v2(s, (CUjitInputType)9, (void *)bad, sizeof bad, NULL, 0, NULL, NULL) ==
             CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLinkAddFile_v2(s, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL) ==
             CUDA_ERROR_FILE_NOT_FOUND);
  OK(cuLinkDestroy(s));
  TEST_CHECK(cuLinkComplete(NULL, (void **)&s, NULL) == CUDA_ERROR_INVALID_HANDLE);
  CUjit_option unknown = (CUjit_option)999;
  TEST_CHECK(cuLinkCreate_v2(1, &unknown, v, &s) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuLinkCreate_v2(0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
}

/* CU_JIT_TARGET picks the architecture without a context (and so runs under ASan too): sm_90's
 * cubin from the function pair, through the pre-6.5 names; the caller alone names add_two. */
static void test_link_target(void) {
  char error[1024] = "";
  CUjit_option o[] = {CU_JIT_TARGET, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {(void *)90, error, (void *)(uintptr_t)sizeof error};
  CUlinkState s;
  CUresult r = cuLinkCreate(3, o, v, &s);
  if (r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuLinkCreate: %d", (int)r);
  if (r) return;
  OK(cuLinkAddData(s, CU_JIT_INPUT_PTX, (void *)caller_ptx, sizeof caller_ptx, NULL, 0, NULL,
                   NULL));
  void *cubin = NULL;
  size_t size = 0;
  TEST_CHECK(cuLinkComplete(s, &cubin, &size) == CUDA_ERROR_INVALID_PTX);
  TEST_CHECK_MSG(strstr(error, "add_two") != NULL, "error log: '%s'", error);
  OK(cuLinkDestroy(s));
  v[2] = (void *)(uintptr_t)sizeof error;
  OK(cuLinkCreate(3, o, v, &s));
  OK(cuLinkAddData(s, CU_JIT_INPUT_PTX, (void *)caller_ptx, sizeof caller_ptx, NULL, 0, NULL,
                   NULL));
  OK(cuLinkAddData(s, CU_JIT_INPUT_PTX, (void *)callee_ptx, sizeof callee_ptx, NULL, 0, NULL,
                   NULL));
  OK(cuLinkComplete(s, &cubin, &size));
  TEST_CHECK(cubin && cubin_sm(cubin, size) == 90);
  OK(cuLinkDestroy(s));
  o[0] = CU_JIT_TARGET, v[0] = (void *)7; /* no such target */
  TEST_CHECK(cuLinkCreate(1, o, v, &s) == CUDA_ERROR_INVALID_VALUE);
}

/* The pre-6.5 names and cuGetProcAddress reach the same calls. */
static void test_link_names(void) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st;
  TEST_CHECK(cuGetProcAddress_v2("cuLinkCreate", &fn, 12000, 0, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == (void *)(uintptr_t)&cuLinkCreate_v2);
  TEST_CHECK(cuGetProcAddress_v2("cuLinkCreate", &fn, 6000, 0, &st) == CUDA_SUCCESS);
  TEST_CHECK(fn == (void *)(uintptr_t)&cuLinkCreate);
  const char *names[] = {"cuLinkAddData",
                         "cuLinkAddFile",
                         "cuLinkComplete",
                         "cuLinkDestroy",
                         "cuModuleGetFunctionCount",
                         "cuModuleEnumerateFunctions",
                         "cuModuleGetLoadingMode",
                         "cuLibraryLoadFromFile",
                         "cuLibraryGetKernelCount",
                         "cuLibraryEnumerateKernels",
                         "cuKernelGetLibrary",
                         "cuFuncGetModule",
                         "cuFuncIsLoaded",
                         "cuFuncLoad",
                         "cuLibraryGetUnifiedFunction",
                         "cuLibraryGetManaged"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    fn = NULL;
    TEST_CHECK_MSG(cuGetProcAddress_v2(names[i], &fn, 13000, 0, &st) == CUDA_SUCCESS && fn, "%s",
                   names[i]);
  }
}

/* cuModuleLoadDataEx compiles PTX with the options and fills the logs and wall time. */
static void test_load_data_ex(void) {
  NEED_DEVICE();
  char info[256] = "x", error[1024] = "";
  CUjit_option o[] = {CU_JIT_MAX_REGISTERS,    CU_JIT_WALL_TIME,
                      CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {(void *)32, NULL,
               info,       (void *)(uintptr_t)sizeof info,
               error,      (void *)(uintptr_t)sizeof error};
  CUmodule m;
  CUresult r = cuModuleLoadDataEx(&m, callee_ptx, 6, o, v);
  if (r == CUDA_ERROR_INVALID_PTX && strstr(error, "not found"))
    TEST_SKIP("needs nvJitLink (the CUDA toolkit)");
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuModuleLoadDataEx: %d (%s)", (int)r, error);
  float wall = 0;
  memcpy(&wall, &v[1], sizeof wall);
  TEST_CHECK_MSG(wall > 0, "wall time %f", (double)wall);
  TEST_CHECK(info[0] == '\0' && v[3] == NULL && v[5] == NULL);
  unsigned count = 7;
  if (!r) OK(cuModuleGetFunctionCount(&count, m));
  TEST_CHECK(count == 0);
  if (!r) OK(cuModuleUnload(m));
  /* The caller alone does not assemble into a loadable module: its extern stays unresolved. */
  error[0] = '\0';
  v[5] = (void *)(uintptr_t)sizeof error;
  r = cuModuleLoadDataEx(&m, caller_ptx, 6, o, v);
  TEST_CHECK_MSG(r != CUDA_SUCCESS && strstr(error, "add_two"), "%d: '%s'", (int)r, error);
  TEST_CHECK((size_t)(uintptr_t)v[5] == strlen(error));
}

/* p[i] = 1 and p[i] = 2: two kernels to enumerate. */
static const char two_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry one(.param .u64 p) { .reg .b64 %rd<2>; .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p]; mov.u32 %r1, 1; st.global.u32 [%rd1], %r1; ret; }\n"
    ".visible .entry two(.param .u64 p) { .reg .b64 %rd<2>; .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p]; mov.u32 %r1, 2; st.global.u32 [%rd1], %r1; ret; }\n"
    ".visible .global .align 4 .u32 counter;\n";

static void test_enumerate(void) {
  NEED_DEVICE();
  CUmoduleLoadingMode mode = (CUmoduleLoadingMode)0;
  OK(cuModuleGetLoadingMode(&mode));
  TEST_CHECK(mode == CU_MODULE_EAGER_LOADING);
  CUlibrary lib;
  CUresult r = cuLibraryLoadData(&lib, two_ptx, NULL, NULL, 0, NULL, NULL, 0);
  if (r == CUDA_ERROR_INVALID_PTX) TEST_SKIP("needs nvJitLink to compile the PTX");
  TEST_CHECK_MSG(r == CUDA_SUCCESS, "cuLibraryLoadData: %d", (int)r);
  if (r) return;
  unsigned count = 0;
  OK(cuLibraryGetKernelCount(&count, lib));
  TEST_CHECK(count == 2);
  CUkernel k[3] = {NULL, NULL, NULL};
  OK(cuLibraryEnumerateKernels(k, 3, lib));
  TEST_CHECK(k[0] && k[1] && k[0] != k[1] && k[2] == NULL);
  CUkernel named;
  OK(cuLibraryGetKernel(&named, lib, "two"));
  TEST_CHECK(named == k[0] || named == k[1]); /* the same handle both ways */
  CUlibrary back = NULL;
  OK(cuKernelGetLibrary(&back, k[0]));
  TEST_CHECK(back == lib);
  CUmodule mod = NULL, fmod = NULL;
  OK(cuLibraryGetModule(&mod, lib));
  CUfunction f[2] = {NULL, NULL};
  OK(cuModuleEnumerateFunctions(f, 1, mod));
  TEST_CHECK(f[0] != NULL && f[1] == NULL);
  OK(cuFuncGetModule(&fmod, f[0]));
  TEST_CHECK(fmod == mod);
  CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_UNLOADED;
  OK(cuFuncIsLoaded(&st, f[0]));
  TEST_CHECK(st == CU_FUNCTION_LOADING_STATE_LOADED);
  OK(cuFuncLoad(f[0]));
  void *fp = (void *)1;
  TEST_CHECK(cuLibraryGetUnifiedFunction(&fp, lib, "one") == CUDA_ERROR_NOT_FOUND && !fp);
  CUdeviceptr dp;
  size_t bytes;
  TEST_CHECK(cuLibraryGetManaged(&dp, &bytes, lib, "counter") == CUDA_ERROR_NOT_FOUND);
  OK(cuLibraryGetGlobal(&dp, &bytes, lib, "counter"));
  TEST_CHECK(bytes == 4);
  TEST_CHECK(cuModuleGetFunctionCount(NULL, mod) == CUDA_ERROR_INVALID_VALUE);
  TEST_CHECK(cuModuleGetFunctionCount(&count, NULL) == CUDA_ERROR_INVALID_HANDLE);
  OK(cuLibraryUnload(lib));
  TEST_CHECK(cuFuncIsLoaded(&st, f[0]) == CUDA_ERROR_INVALID_HANDLE);
  /* From a file, through the same door. */
  const char *path = "test_cuda_link_two.ptx";
  FILE *file = fopen(path, "w");
  TEST_CHECK(file != NULL);
  if (!file) return;
  fputs(two_ptx, file);
  fclose(file);
  OK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
  count = 0;
  OK(cuLibraryGetKernelCount(&count, lib));
  TEST_CHECK(count == 2);
  OK(cuLibraryUnload(lib));
  remove(path);
  TEST_CHECK(cuLibraryLoadFromFile(&lib, "/nonexistent.ptx", NULL, NULL, 0, NULL, NULL, 0) ==
             CUDA_ERROR_FILE_NOT_FOUND);
}

TEST_MAIN(TEST(test_link_names), TEST(test_link_target), TEST(test_link_function), TEST(test_link),
          TEST(test_link_unresolved), TEST(test_link_errors), TEST(test_load_data_ex),
          TEST(test_enumerate))
