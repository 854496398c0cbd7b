/* Run-time compilation against the toolkit on this machine (NVRTC, nvJitLink), the disk cache,
 * and source detection. Skips visibly where the compiler libraries are missing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "elf.h"
#include "test.h"

static const char good_cu[] = "extern \"C\" __global__ void scale(float *x, float a, int n) {\n"
                              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "  if (i < n) x[i] *= a;\n"
                              "}\n";

static const char broken_cu[] = "extern \"C\" __global__ void broken(float *x) {\n"
                                "  x[0] = 1.0f\n" /* missing semicolon on line 2 */
                                "  undefined_thing(x);\n"
                                "}\n";

static const char add_one_ptx[] = "// a hand-written PTX kernel\n"
                                  ".version 8.0\n"
                                  ".target sm_80\n"
                                  ".address_size 64\n"
                                  ".visible .entry add_one(.param .u64 p)\n"
                                  "{\n"
                                  "  .reg .b32 %r<4>;\n"
                                  "  .reg .b64 %rd<5>;\n"
                                  "  ld.param.u64 %rd1, [p];\n"
                                  "  cvta.to.global.u64 %rd2, %rd1;\n"
                                  "  mov.u32 %r1, %tid.x;\n"
                                  "  mul.wide.u32 %rd3, %r1, 4;\n"
                                  "  add.s64 %rd4, %rd2, %rd3;\n"
                                  "  ld.global.u32 %r2, [%rd4];\n"
                                  "  add.s32 %r3, %r2, 1;\n"
                                  "  st.global.u32 [%rd4], %r3;\n"
                                  "  ret;\n"
                                  "}\n";

static char cache_dir[256];

/* Each test gets an empty private cache. */
static void fresh_cache(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/nvhcq-test-cache-%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
  if (system(cmd)) {
  }
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  unsetenv("NVHCQ_CACHE");
}

static int compilers_present(void) {
  void *bin;
  size_t n;
  nvhcq_status s = nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_80", NULL, 0, &bin, &n);
  if (s == NVHCQ_SUCCESS) nvhcq_binary_destroy(bin);
  return s != NVHCQ_ERROR_NOT_FOUND;
}

#define NEED_COMPILER()                                                                            \
  do {                                                                                             \
    fresh_cache();                                                                                 \
    if (!compilers_present()) TEST_SKIP("needs NVRTC (the CUDA toolkit), which was not found");    \
    fresh_cache();                                                                                 \
  } while (0)

static void t_detect(void) {
  TEST_CHECK(nvhcq_source_detect("\x7f"
                                 "ELF\x02\x01",
                                 6) == NVHCQ_SOURCE_CUBIN);
  TEST_CHECK(nvhcq_source_detect(add_one_ptx, sizeof add_one_ptx - 1) == NVHCQ_SOURCE_PTX);
  TEST_CHECK(nvhcq_source_detect("/* c */\n.version 8.0\n", 21) == NVHCQ_SOURCE_PTX);
  TEST_CHECK(nvhcq_source_detect(good_cu, sizeof good_cu - 1) == NVHCQ_SOURCE_CUDA);
  TEST_CHECK(nvhcq_source_detect("\x01\x00\x02", 3) == NVHCQ_SOURCE_UNKNOWN);
  TEST_CHECK(nvhcq_source_detect("", 0) == NVHCQ_SOURCE_UNKNOWN);
  TEST_CHECK(nvhcq_source_detect("/* unterminated", 15) == NVHCQ_SOURCE_CUDA);
}

static void t_compile_each_arch(void) {
  NEED_COMPILER();
  const char *archs[] = {"sm_80", "sm_89", "sm_90", "sm_100"};
  for (int i = 0; i < 4; i++) {
    void *bin;
    size_t n;
    nvhcq_status s = nvhcq_binary_compile(good_cu, sizeof good_cu - 1, archs[i], NULL, 0, &bin, &n);
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s: %s", archs[i], nvhcq_last_error());
    if (s) continue;
    nvhcq_cubin *c;
    TEST_CHECK(nvhcq_cubin_parse(bin, n, &c) == NVHCQ_SUCCESS);
    TEST_CHECK(c->sm == (unsigned)atoi(archs[i] + 3));
    TEST_CHECK(nvhcq_cubin_find_kernel(c, "scale") != NULL);
    nvhcq_cubin_free(c);
    nvhcq_binary_destroy(bin);
  }
}

static void t_broken_source_returns_log(void) {
  NEED_COMPILER();
  void *bin = NULL;
  size_t n;
  nvhcq_status s =
      nvhcq_binary_compile(broken_cu, sizeof broken_cu - 1, "sm_90", NULL, 0, &bin, &n);
  TEST_CHECK(s == NVHCQ_ERROR_COMPILE && bin == NULL);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "kernel.cu(3)") ||
                     strstr(nvhcq_last_error(), "kernel.cu(2)"),
                 "%s", nvhcq_last_error());
  TEST_CHECK(strstr(nvhcq_last_error(), "error") != NULL);
  printf("  broken source says: %.160s...\n", nvhcq_last_error());
}

static void t_ptx_through_nvjitlink(void) {
  NEED_COMPILER();
  void *bin;
  size_t n;
  nvhcq_status s =
      nvhcq_binary_compile(add_one_ptx, sizeof add_one_ptx - 1, "sm_90", NULL, 0, &bin, &n);
  if (s == NVHCQ_ERROR_NOT_FOUND) TEST_SKIP("needs nvJitLink, which was not found");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return;
  nvhcq_cubin *c;
  TEST_CHECK(nvhcq_cubin_parse(bin, n, &c) == NVHCQ_SUCCESS && c->sm == 90);
  TEST_CHECK(nvhcq_cubin_find_kernel(c, "add_one") != NULL);
  nvhcq_cubin_free(c);
  nvhcq_binary_destroy(bin);
  s = nvhcq_binary_compile(".version 8.0\n.target sm_80\nnonsense;\n", 37, "sm_90", NULL, 0, &bin,
                           &n);
  TEST_CHECK(s == NVHCQ_ERROR_COMPILE);
}

/* PTX older than ISA 3.1 (CUDA 4-era code as cuda-samples' matrixMulDynlinkJIT embeds), which
 * nvJitLink's relocatable assembly alone would refuse, assembles as libcuda's JIT takes it. */
static const char old_ptx[] = "\t.version 1.4\n"
                              "\t.target sm_10, map_f64_to_f32\n"
                              "\t.entry old_store (\n"
                              "\t\t.param .u64 __cudaparm_old_store_p)\n"
                              "\t{\n"
                              "\t.reg .u32 %r<3>;\n"
                              "\t.reg .u64 %rd<3>;\n"
                              "\tld.param.u64 \t%rd1, [__cudaparm_old_store_p];\n"
                              "\tmov.u32 \t%r1, 7;\n"
                              "\tst.global.u32 \t[%rd1+0], %r1;\n"
                              "\texit;\n"
                              "\t}\n";

static void t_old_ptx(void) {
  NEED_COMPILER();
  void *bin;
  size_t n;
  nvhcq_status s = nvhcq_binary_compile(old_ptx, sizeof old_ptx - 1, "sm_90", NULL, 0, &bin, &n);
  if (s == NVHCQ_ERROR_NOT_FOUND) TEST_SKIP("needs nvJitLink, which was not found");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return;
  nvhcq_cubin *c;
  TEST_CHECK(nvhcq_cubin_parse(bin, n, &c) == NVHCQ_SUCCESS && c->sm == 90);
  TEST_CHECK(nvhcq_cubin_find_kernel(c, "old_store") != NULL);
  nvhcq_cubin_free(c);
  nvhcq_binary_destroy(bin);
}

static int count_entries(void) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/nvhcq", cache_dir);
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".cubin")) n++;
  if (d) closedir(d);
  return n;
}

static void t_cache_hit_and_corruption(void) {
  NEED_COMPILER();
  nvhcq_compile_stats a, b, c;
  void *bin1, *bin2, *bin3;
  size_t n1, n2, n3;
  nvhcq_compile_get_stats(&a);
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", NULL, 0, &bin1, &n1) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", NULL, 0, &bin2, &n2) ==
             NVHCQ_SUCCESS);
  nvhcq_compile_get_stats(&b);
  TEST_CHECK_MSG(b.compiles - a.compiles == 1 && b.cache_hits - a.cache_hits == 1,
                 "compiles %llu, hits %llu", (unsigned long long)(b.compiles - a.compiles),
                 (unsigned long long)(b.cache_hits - a.cache_hits));
  TEST_CHECK(n1 == n2 && memcmp(bin1, bin2, n1) == 0);
  TEST_CHECK(count_entries() == 1);
  /* Private permissions on the directory and the entry. */
  char dir[300];
  snprintf(dir, sizeof dir, "%s/nvhcq", cache_dir);
  struct stat st;
  TEST_CHECK(stat(dir, &st) == 0 && (st.st_mode & 077) == 0);
  /* Corrupt the entry (flip a byte, then truncate): it is recompiled, never loaded. */
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[600] = "";
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".cubin")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  TEST_CHECK(stat(path, &st) == 0 && (st.st_mode & 077) == 0);
  FILE *f = fopen(path, "r+b");
  TEST_CHECK(f != NULL);
  if (f) {
    fseek(f, 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(ch ^ 0xff, f);
    fclose(f);
  }
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", NULL, 0, &bin3, &n3) ==
             NVHCQ_SUCCESS);
  nvhcq_compile_get_stats(&c);
  TEST_CHECK(c.compiles - b.compiles == 1 && c.cache_rejects - b.cache_rejects == 1);
  TEST_CHECK(n3 == n1 && memcmp(bin3, bin1, n1) == 0);
  TEST_CHECK(truncate(path, 30) == 0);
  nvhcq_binary_destroy(bin3);
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", NULL, 0, &bin3, &n3) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(n3 == n1 && memcmp(bin3, bin1, n1) == 0);
  /* Different options make a different entry. */
  const char *opt[] = {"-DEXTRA=1"};
  void *bin4;
  size_t n4;
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", opt, 1, &bin4, &n4) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(count_entries() == 2);
  nvhcq_binary_destroy(bin1), nvhcq_binary_destroy(bin2), nvhcq_binary_destroy(bin3),
      nvhcq_binary_destroy(bin4);
}

static void t_cache_off(void) {
  NEED_COMPILER();
  setenv("NVHCQ_CACHE", "0", 1);
  nvhcq_compile_stats a, b;
  nvhcq_compile_get_stats(&a);
  void *bin;
  size_t n;
  for (int i = 0; i < 2; i++) {
    TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_89", NULL, 0, &bin, &n) ==
               NVHCQ_SUCCESS);
    nvhcq_binary_destroy(bin);
  }
  nvhcq_compile_get_stats(&b);
  TEST_CHECK(b.compiles - a.compiles == 2 && b.cache_hits == a.cache_hits);
  TEST_CHECK(count_entries() == 0);
  unsetenv("NVHCQ_CACHE");
}

static void t_missing_compiler_library(void) {
  setenv("NVHCQ_NVRTC", "/nonexistent/libnvrtc.so.13", 1);
  void *bin;
  size_t n;
  nvhcq_status s = nvhcq_binary_compile(good_cu, sizeof good_cu - 1, "sm_90", NULL, 0, &bin, &n);
  unsetenv("NVHCQ_NVRTC");
  /* When an earlier test already loaded NVRTC, it stays loaded: run this test first or alone. */
  if (s == NVHCQ_SUCCESS) {
    nvhcq_binary_destroy(bin);
    TEST_SKIP("NVRTC was already loaded by an earlier test");
  }
  TEST_CHECK(s == NVHCQ_ERROR_NOT_FOUND);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "NVRTC") &&
                     strstr(nvhcq_last_error(), "/nonexistent/libnvrtc.so.13") &&
                     strstr(nvhcq_last_error(), "NVHCQ_NVRTC"),
                 "%s", nvhcq_last_error());
  printf("  missing NVRTC says: %s\n", nvhcq_last_error());
}

static void t_bad_arguments(void) {
  void *bin;
  size_t n;
  TEST_CHECK(nvhcq_binary_compile(NULL, 3, "sm_90", NULL, 0, &bin, &n) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_binary_compile(good_cu, sizeof good_cu, "compute_90", NULL, 0, &bin, &n) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_binary_compile("\x01\x00\x02", 3, "sm_90", NULL, 0, &bin, &n) ==
             NVHCQ_ERROR_INVALID_IMAGE);
}

TEST_MAIN(TEST(t_missing_compiler_library), TEST(t_detect), TEST(t_bad_arguments),
          TEST(t_compile_each_arch), TEST(t_broken_source_returns_log),
          TEST(t_ptx_through_nvjitlink), TEST(t_old_ptx), TEST(t_cache_hit_and_corruption),
          TEST(t_cache_off))
