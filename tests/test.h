/* A tiny test harness: each test file is one program; TEST_CHECK records failures, and
 * test_main() prints one line per test plus the closing "N passed, N failed, N skipped" and
 * exits 0, 1 (a failure) or TEST_SKIPPED_EXIT (nothing ran but skips). */
#ifndef NVHCQ_TEST_H
#define NVHCQ_TEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Monotonic milliseconds, for tests that bound how long something takes. */
static inline double test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* File descriptors this process has open (/proc/self/fd, its own listing fd and . and ..
 * included: compare counts, not values); -1 if the listing cannot be read. */
static inline int test_count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d) return -1;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* The whole file at `path` (malloc'd, with one zero byte after it, so text can be used as a
 * string) and its size in *size; NULL if it cannot be read or is empty. */
static inline void *test_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *data = n > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) free(data), data = NULL;
  fclose(f);
  if (data) data[n] = 0, *size = (size_t)n;
  return data;
}

typedef struct test_case {
  const char *name;
  void (*fn)(void);
} test_case;

extern int test_failed_checks; /* failures in the running test */
extern const char *test_skip_reason;

#define TEST_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                   \
      test_failed_checks++;                                                                        \
    }                                                                                              \
  } while (0)

#define TEST_CHECK_MSG(cond, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "  %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                   \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      test_failed_checks++;                                                                        \
    }                                                                                              \
  } while (0)

/* Ends the current test as skipped, with a reason printed on its line. */
#define TEST_SKIP(reason)                                                                          \
  do {                                                                                             \
    test_skip_reason = (reason);                                                                   \
    return;                                                                                        \
  } while (0)

/* test_main's exit status when every case that ran was skipped; tests/CMakeLists.txt gives it to
 * ctest as SKIP_RETURN_CODE (77, the automake convention). */
#define TEST_SKIPPED_EXIT 77

int test_main(int argc, char **argv, const test_case *tests, int count);

/* AddressSanitizer's shadow covers every address below 2^40, where nvhcq maps the memory the CPU
 * and the GPU share: under it no device opens (the mock's neither), and tests that need one say
 * so. NO_DEVICE_ADDRESS_SPACE is defined then. */
#if defined(__SANITIZE_ADDRESS__)
#define NO_DEVICE_ADDRESS_SPACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_DEVICE_ADDRESS_SPACE 1
#endif
#endif

#define TEST_MAIN(...)                                                                             \
  int main(int argc, char **argv) {                                                                \
    static const test_case tests_[] = {__VA_ARGS__};                                               \
    return test_main(argc, argv, tests_, (int)(sizeof tests_ / sizeof tests_[0]));                 \
  }
#define TEST(fn)                                                                                   \
  { #fn, fn }

#endif
