/* Device printf, assert, malloc and free (tests/device/syscalls_test.cu) on the GPU: every printf
 * conversion from several blocks, drops counted when the FIFO is small, an assertion that stops
 * its kernel and is named by the fault report, the heap under a whole grid. The limits are
 * checked on the mock too; its PTX interpreter does not run the syscalls' calls, so the kernels
 * run on a GPU only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_test.h"

/* What the print callback received: one entry per record. */
#define MAX_RECORDS 200000
static char **got;
static int *got_assert;
static int got_count;

static void capture(void *user, const char *text, size_t length, int is_assert) {
  (void)user;
  if (!got) {
    got = calloc(MAX_RECORDS, sizeof *got);
    got_assert = calloc(MAX_RECORDS, sizeof *got_assert);
  }
  if (got_count >= MAX_RECORDS) return;
  got[got_count] = malloc(length + 1);
  memcpy(got[got_count], text, length);
  got[got_count][length] = '\0';
  got_assert[got_count++] = is_assert;
}

static void forget_captured(void) {
  for (int i = 0; i < got_count; i++) free(got[i]);
  got_count = 0;
}

/* Opens the device (closing it first when asked, for a fresh FIFO and heap), sets the FIFO size
 * when fifo is not 0, and loads the syscall test kernels. */
static int setup_syscalls(int fresh, uint64_t fifo) {
  if (fresh) teardown();
  if (!dev && open_device()) return 1;
  if (fifo && nvhcq_device_set_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, fifo)) {
    TEST_CHECK_MSG(0, "set limit: %s", nvhcq_last_error());
    return 1;
  }
  TEST_CHECK(nvhcq_device_set_print_callback(dev, capture, NULL) == NVHCQ_SUCCESS);
  if (mod) return 0;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/syscalls_test_%s.cubin", dir ? dir : NVHCQ_TEST_CUBIN_DEFAULT,
           info.arch);
  if (nvhcq_module_load_file(dev, path, &mod)) {
    TEST_CHECK_MSG(0, "load %s: %s", path, nvhcq_last_error());
    return 1;
  }
  return 0;
}

/* AddressSanitizer's shadow leaves no room below 2^40 for the memory a device maps (test.h). */
#ifdef NO_DEVICE_ADDRESS_SPACE
#define SKIP_UNDER_ASAN() TEST_SKIP("AddressSanitizer's shadow leaves no addresses for a device")
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

#define NEED_SYSCALLS(fresh, fifo)                                                                 \
  do {                                                                                             \
    SKIP_WITHOUT_GPU();                                                                            \
    SKIP_UNDER_ASAN();                                                                             \
    SKIP_ON_MOCK("its PTX interpreter does not run calls to the device syscalls");                 \
    if (setup_syscalls(fresh, fifo)) return;                                                       \
  } while (0)

typedef struct int_ptr_args {
  int32_t value;
  uint32_t pad;
  uint64_t pointer;
} int_ptr_args;

static const nvhcq_dim3 one = {1, 1, 1};

/* Defaults, bounds, unknown limits; set after the first module needing them: refused. */
static void t_limits(void) {
  SKIP_WITHOUT_GPU();
  SKIP_UNDER_ASAN();
  teardown();
  if (open_device()) return;
  uint64_t v = 0;
  TEST_CHECK(nvhcq_device_get_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, &v) == NVHCQ_SUCCESS &&
             v == 1u << 20);
  TEST_CHECK(nvhcq_device_get_limit(dev, NVHCQ_LIMIT_MALLOC_HEAP_SIZE, &v) == NVHCQ_SUCCESS &&
             v == 8u << 20);
  TEST_CHECK(nvhcq_device_set_limit(dev, NVHCQ_LIMIT_MALLOC_HEAP_SIZE, 32u << 20) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_limit(dev, NVHCQ_LIMIT_MALLOC_HEAP_SIZE, &v) == NVHCQ_SUCCESS &&
             v == 32u << 20);
  TEST_CHECK(nvhcq_device_set_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, 100) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_set_limit(dev, 99, 4096) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_get_limit(dev, 99, &v) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_get_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, NULL) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  if (setup_syscalls(0, 0)) return;
  /* the module calls all four: the FIFO and the heap exist now */
  TEST_CHECK(nvhcq_device_set_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, 1u << 21) ==
             NVHCQ_ERROR_BUSY);
  TEST_CHECK(nvhcq_device_set_limit(dev, NVHCQ_LIMIT_MALLOC_HEAP_SIZE, 1u << 21) ==
             NVHCQ_ERROR_BUSY);
  uint64_t dropped = 1;
  TEST_CHECK(nvhcq_device_print_flush(dev, &dropped) == NVHCQ_SUCCESS && dropped == 0);
  teardown();
}

/* Both lines print_all prints for block b, as the C library formats them. */
static void expected_lines(int b, int base, const char *text, char *first, char *second, size_t n) {
  snprintf(first, n, "b%d: %d %i %u %x %X %o %c %ld %lld %zu %hhd %hd|", b, base + b, -b,
           4000000000u, 0xbeef + b, 0xcafe, 8 + b, 'A' + b, -5l * b, (long long)b << 40,
           (size_t)b * 3, (signed char)(b + 100), (short)(b - 300));
  snprintf(second, n, "b%d: %f %F %e %E %g %G %a %A|%s|%.2s|%p|%5d|%-5d|%*d|%-*.*f|%%\n", b,
           1.5 * b, -0.25, 1e-7 * b, 6.02e23, 0.0001, 1e20 * b, 1.0, -0.75, text, text,
           (void *)(uintptr_t)0x1234, b, b, 6, b, 9, 3, 2.0 / 3);
}

static int take_record(const char *want) {
  for (int i = 0; i < got_count; i++)
    if (got[i] && !strcmp(got[i], want)) {
      free(got[i]);
      got[i] = NULL;
      return 1;
    }
  return 0;
}

static void print_all_and_check(int blocks) {
  nvhcq_buffer *text = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 64, NVHCQ_MEMORY_HOST, &text) == NVHCQ_SUCCESS);
  if (!text) return;
  strcpy(nvhcq_buffer_host_pointer(text), "hello");
  int_ptr_args a = {1000, 0, nvhcq_buffer_gpu_address(text)};
  nvhcq_kernel *k = kernel("print_all");
  forget_captured();
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){(uint32_t)blocks, 1, 1},
                                                (nvhcq_dim3){32, 1, 1}, 0, &a, sizeof a, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK_MSG(got_count == 2 * blocks, "%d records, want %d", got_count, 2 * blocks);
  for (int b = 0; b < blocks; b++) {
    char first[512], second[512];
    expected_lines(b, 1000, "hello", first, second, sizeof first);
    TEST_CHECK_MSG(take_record(first), "missing: %s", first);
    TEST_CHECK_MSG(take_record(second), "missing: %s", second);
  }
  forget_captured();
  nvhcq_buffer_destroy(text);
}

/* Every conversion type, from several blocks, compared exactly (blocks print in any order). */
static void t_printf_every_conversion(void) {
  NEED_SYSCALLS(1, 0);
  print_all_and_check(8);
}

/* 100k threads into a 4 KiB FIFO: what did not fit is counted, nothing is printed twice. */
static void t_printf_drops_counted(void) {
  NEED_SYSCALLS(1, 4096);
  const uint32_t blocks = 391, threads = 256, total = blocks * threads;
  forget_captured();
  nvhcq_status s =
      nvhcq_kernel_launch_cpu_wait(kernel("print_every_thread"), (nvhcq_dim3){blocks, 1, 1},
                                   (nvhcq_dim3){threads, 1, 1}, 0, NULL, 0, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  uint64_t dropped = 0;
  TEST_CHECK(nvhcq_device_print_flush(dev, &dropped) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(got_count + dropped == total, "%d printed + %llu dropped, %u threads printed",
                 got_count, (unsigned long long)dropped, total);
  TEST_CHECK(dropped > 0 && got_count > 0);
  uint8_t *seen = calloc(total, 1);
  for (int i = 0; seen && i < got_count; i++) {
    unsigned t = 0;
    char end = 0;
    int ok = sscanf(got[i], "t%u%c", &t, &end) == 2 && end == '\n' && t < total && !seen[t];
    TEST_CHECK_MSG(ok, "record %d: \"%s\"", i, got[i]);
    if (ok) seen[t] = 1;
  }
  free(seen);
  forget_captured();
}

/* A failed assert: CUDA's line on the print callback's assert stream, the launch fails with the
 * assertion in its message, and the device works again after a recovery. */
static void t_assert_fails_the_launch(void) {
  NEED_SYSCALLS(1, 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 4 * 32 * 4, NVHCQ_MEMORY_DEVICE, &out) == NVHCQ_SUCCESS);
  uint64_t where = out ? nvhcq_buffer_gpu_address(out) : 0;
  forget_captured();
  nvhcq_status s =
      nvhcq_kernel_launch_cpu_wait(kernel("assert_one"), (nvhcq_dim3){4, 1, 1},
                                   (nvhcq_dim3){32, 1, 1}, 0, &where, sizeof where, NULL);
  const char *what = "block: [1,0,0], thread: [3,0,0] Assertion `blockIdx.x != 1 || "
                     "threadIdx.x != 3` failed.";
  TEST_CHECK(s == NVHCQ_ERROR_GPU_FAULT);
  const char *msg = nvhcq_last_error();
  TEST_CHECK_MSG(strstr(msg, "device-side assertion failed: ") && strstr(msg, what) &&
                     strstr(msg, "syscalls_test.cu:") && strstr(msg, "assert_one"),
                 "%s", msg);
  int lines = 0;
  for (int i = 0; i < got_count; i++)
    if (got_assert[i] && strstr(got[i], what)) lines++;
  TEST_CHECK_MSG(lines == 1, "%d assertion lines on the callback", lines);
  TEST_CHECK_MSG(nvhcq_device_recover(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  print_all_and_check(2);
  if (out) nvhcq_buffer_destroy(out);
}

/* Every thread of a large grid allocates, writes, has a neighbor read back, and frees: 16 rounds,
 * four times the heap without reuse. */
static void t_malloc_free_rounds(void) {
  NEED_SYSCALLS(1, 0);
  nvhcq_buffer *errors = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 16, NVHCQ_MEMORY_HOST, &errors) == NVHCQ_SUCCESS);
  if (!errors) return;
  uint32_t *e = nvhcq_buffer_host_pointer(errors);
  memset(e, 0, 16);
  int_ptr_args a = {16, 0, nvhcq_buffer_gpu_address(errors)};
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(kernel("heap_rounds"), (nvhcq_dim3){64, 1, 1},
                                                (nvhcq_dim3){256, 1, 1}, 0, &a, sizeof a, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK_MSG(e[0] == 0 && e[1] == 0 && e[2] == 0,
                 "%u NULL blocks, %u misaligned, %u read back wrong", e[0], e[1], e[2]);
  nvhcq_buffer_destroy(errors);
}

/* 1 MiB blocks until NULL; freed, the same number comes back. */
static void t_heap_exhausts_and_reuses(void) {
  NEED_SYSCALLS(1, 0);
  nvhcq_buffer *out = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 8, NVHCQ_MEMORY_HOST, &out) == NVHCQ_SUCCESS);
  if (!out) return;
  uint32_t *o = nvhcq_buffer_host_pointer(out);
  uint64_t where = nvhcq_buffer_gpu_address(out);
  nvhcq_status s =
      nvhcq_kernel_launch_cpu_wait(kernel("heap_exhaust"), one, one, 0, &where, sizeof where, NULL);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK_MSG(o[0] >= 7 && o[0] <= 8 && o[1] == o[0], "%u blocks, then %u", o[0], o[1]);
  nvhcq_buffer_destroy(out);
  teardown();
}

TEST_MAIN(TEST(t_limits), TEST(t_printf_every_conversion), TEST(t_printf_drops_counted),
          TEST(t_assert_fails_the_launch), TEST(t_malloc_free_rounds),
          TEST(t_heap_exhausts_and_reuses))
