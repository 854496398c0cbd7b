/* Foundation tests on a real GPU. Without one (no /dev/nvidiactl) each test says so and skips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device_test.h"

/* Resident host memory of this process, in KiB. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kib = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kib;
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (uint8_t)x;
  }
}

static void t_info(void) {
  NEED_DEVICE();
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  printf("  %s %s %s, %u SMs, %.1f GiB, driver %s, opened in %.1f ms\n", info.name, info.arch,
         info.uuid_string, info.sm_count, info.memory_bytes / 1073741824.0, info.driver_version,
         info.open_ms);
  TEST_CHECK(info.name[0] != '\0');
  TEST_CHECK(strncmp(info.arch, "sm_", 3) == 0);
  TEST_CHECK(strncmp(info.uuid_string, "GPU-", 4) == 0);
  TEST_CHECK(info.memory_bytes > (1ull << 30));
  TEST_CHECK(info.sm_count > 0 && info.warps_per_sm > 0);
  printf("  L2 %u bytes, %u-bit memory bus; shared memory %u bytes per SM, %u per block; %u blocks "
         "per SM\n",
         info.l2_bytes, info.memory_bus_width, info.shared_per_sm, info.shared_per_block,
         info.blocks_per_sm);
  TEST_CHECK(info.l2_bytes >= (1u << 20) && info.memory_bus_width >= 64);
  TEST_CHECK(info.shared_per_sm >= 100u << 10 && info.shared_per_block >= 99u << 10 &&
             info.shared_per_block < info.shared_per_sm);
  TEST_CHECK(info.blocks_per_sm >= 16 && info.reserved2 == 0);
  /* NVIDIA's vendor ID under the device ID, as the PCI configuration space reads */
  printf("  PCI ID 0x%08x, subsystem 0x%08x\n", info.pci_id, info.pci_subsystem_id);
  TEST_CHECK((info.pci_id & 0xffff) == 0x10de && info.pci_id >> 16 != 0);
  TEST_CHECK(info.pci_subsystem_id == 0 || (info.pci_subsystem_id & 0xffff) != 0);
  /* a caller built against the first 0.2 layout gets what it knows, and nothing written past it */
  nvhcq_device_info old;
  memset(&old, 0xab, sizeof old);
  old.struct_size = (uint32_t)offsetof(nvhcq_device_info, l2_bytes);
  TEST_CHECK(nvhcq_device_query_info(dev, &old) == NVHCQ_SUCCESS);
  TEST_CHECK(old.sm_count == info.sm_count && old.l2_bytes == 0xabababab);
}

static void t_open_close_loop(void) {
  NEED_DEVICE();
  uint64_t free_before = 0, free_after = 0;
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_before) == NVHCQ_SUCCESS);
  int fds = test_count_fds();
  long rss_after_first = 0;
  for (int i = 0; i < 100; i++) {
    if (i == 1) rss_after_first = rss_kib();
    nvhcq_device *d;
    nvhcq_status s = nvhcq_device_open(0, &d);
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "iteration %d: %s", i, nvhcq_last_error());
    if (s) return;
    nvhcq_buffer *b;
    TEST_CHECK(nvhcq_buffer_create(d, 1 << 20, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_device_close(d) == NVHCQ_SUCCESS);
  }
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_after) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(test_count_fds() == fds, "fds before %d after %d", fds, test_count_fds());
  long grown = rss_kib() - rss_after_first;
  printf("  100 opens: resident memory grew by %ld KiB after the first\n", grown);
  TEST_CHECK_MSG(grown < 8192, "host memory grew by %ld KiB over 99 open/close cycles", grown);
  TEST_CHECK_MSG(free_after + (4u << 20) >= free_before, "GPU free memory %llu -> %llu",
                 (unsigned long long)free_before, (unsigned long long)free_after);
}

static void t_alloc_big_and_too_big(void) {
  NEED_DEVICE();
  nvhcq_buffer *b = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 1ull << 30, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  nvhcq_buffer *huge = NULL;
  nvhcq_status s =
      nvhcq_buffer_create(dev, info.memory_bytes + (8ull << 30), NVHCQ_MEMORY_DEVICE, &huge);
  TEST_CHECK_MSG(s == NVHCQ_ERROR_OUT_OF_MEMORY, "status %s: %s", nvhcq_status_name(s),
                 nvhcq_last_error());
  printf("  over-allocation says: %s\n", nvhcq_last_error());
  nvhcq_buffer *after = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 64 << 20, NVHCQ_MEMORY_DEVICE, &after) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(after) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(b) == NVHCQ_SUCCESS);
}

/* Host -> device -> device -> host through every path, compared byte for byte. */
static void round_trip(size_t size, size_t offset, int pinned) {
  nvhcq_buffer *a, *b, *h = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, size + offset, NVHCQ_MEMORY_DEVICE, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, size + offset, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  uint8_t *src, *dst;
  if (pinned) {
    TEST_CHECK(nvhcq_buffer_create(dev, 2 * size + 2, NVHCQ_MEMORY_HOST, &h) == NVHCQ_SUCCESS);
    src = (uint8_t *)nvhcq_buffer_host_pointer(h) + 1;
    dst = src + size + 1;
  } else {
    src = malloc(size + 1);
    dst = malloc(size + 1);
    src++, dst++; /* odd host addresses */
  }
  fill(src, size, (uint32_t)size);
  memset(dst, 0xa5, size);
  TEST_CHECK(nvhcq_buffer_write(a, offset, src, size) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_buffer_copy(b, offset, a, offset, size) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_read(dst, b, offset, size) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(src, dst, size) == 0, "%zu bytes at offset %zu (%s) differ", size, offset,
                 pinned ? "pinned" : "pageable");
  if (!pinned) free(src - 1), free(dst - 1);
  nvhcq_buffer_destroy(h);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
}

static void t_round_trips(void) {
  NEED_DEVICE();
  static const size_t sizes[] = {
      1, 3, 4096, 4097, (1 << 20) + 7, (16 << 20) + 5, (64 << 20) + 13, 1ull << 30};
  static const size_t offsets[] = {0, 1, 4093};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int pinned = 0; pinned < 2; pinned++) round_trip(sizes[i], offsets[i % 3], pinned);
}

static void t_mapped_memory(void) {
  NEED_DEVICE();
  nvhcq_buffer *m, *u;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_DEVICE_MAPPED, &m) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST_UNCACHED, &u) == NVHCQ_SUCCESS);
  uint8_t *pm = nvhcq_buffer_host_pointer(m), *pu = nvhcq_buffer_host_pointer(u);
  TEST_CHECK(pm && pu);
  fill(pm, 1 << 20, 7);
  TEST_CHECK(nvhcq_buffer_copy(u, 0, m, 0, 1 << 20) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(pm, pu, 1 << 20) == 0);
  nvhcq_buffer_destroy(m);
  nvhcq_buffer_destroy(u);
}

/* Pinned host memory is private to the process: after a fork() the parent's pages are still
 * the ones the GPU maps (the child's writes go to its own copy), both ways. */
static void t_pinned_after_fork(void) {
  NEED_DEVICE();
  const size_t n = (8u << 20) + 4096; /* huge pages and a 4 KiB tail */
  nvhcq_buffer *h, *d;
  TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_HOST, &h) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_DEVICE, &d) == NVHCQ_SUCCESS);
  uint8_t *p = nvhcq_buffer_host_pointer(h), *want = malloc(n), *got = malloc(n);
  fill(p, n, 11);
  memcpy(want, p, n);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    memset(p, 0x5a, n);
    _exit(0);
  }
  int status = -1;
  TEST_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && status == 0);
  TEST_CHECK_MSG(memcmp(p, want, n) == 0, "the child's writes reached the parent's pages");
  fill(p, n, 12); /* written after the fork: a copy-on-write page would leave the GPU's behind */
  memcpy(want, p, n);
  TEST_CHECK(nvhcq_buffer_copy(d, 0, h, 0, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(got, d, 0, n) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(got, want, n) == 0, "the GPU read other pages than the parent wrote");
  fill(want, n, 13);
  TEST_CHECK(nvhcq_buffer_write(d, 0, want, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(h, 0, d, 0, n) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(p, want, n) == 0, "the GPU wrote other pages than the parent reads");
  free(want);
  free(got);
  nvhcq_buffer_destroy(d);
  nvhcq_buffer_destroy(h);
}

static void t_big_copy_over_4gib(void) {
  /* On the mock the 8 GiB are sparse memfds: only the pages written take host memory, and its
   * engines copy the holes as holes. */
  NEED_DEVICE();
  size_t size = (4ull << 30) + 4096 * 3;
  nvhcq_buffer *a, *b;
  TEST_CHECK(nvhcq_buffer_create(dev, size, NVHCQ_MEMORY_DEVICE, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, size, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  uint8_t head[4096], tail[4096], out[4096];
  fill(head, sizeof head, 1);
  fill(tail, sizeof tail, 2);
  TEST_CHECK(nvhcq_buffer_write(a, 0, head, sizeof head) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_write(a, size - sizeof tail, tail, sizeof tail) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(b, 0, a, 0, size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(out, b, 0, sizeof out) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, head, sizeof out) == 0);
  TEST_CHECK(nvhcq_buffer_read(out, b, size - sizeof tail, sizeof out) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, tail, sizeof out) == 0);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
}

/* The compute channel waits for a signal the copy channel releases after its copy. */
static void t_cross_channel_order(void) {
  NEED_DEVICE();
  nvhcq_signal *copied, *done;
  nvhcq_queue *cq, *xq;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &copied) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(cq, copied, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(cq, done, 5) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS);
  usleep(20000);
  TEST_CHECK_MSG(nvhcq_signal_value(done) == 0, "compute ran before the copy signalled");
  nvhcq_buffer *src, *dst;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &src) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &dst) == NVHCQ_SUCCESS);
  fill(nvhcq_buffer_host_pointer(src), 1 << 20, 9);
  TEST_CHECK(nvhcq_queue_copy(xq, nvhcq_buffer_gpu_address(dst), nvhcq_buffer_gpu_address(src),
                              1 << 20) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(xq, copied, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, 5, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(nvhcq_buffer_host_pointer(src), nvhcq_buffer_host_pointer(dst), 1 << 20) == 0);
  TEST_CHECK(nvhcq_signal_timestamp_ns(done) > 0);
  TEST_CHECK(nvhcq_signal_timestamp_ns(copied) > 0);
  TEST_CHECK_MSG(nvhcq_signal_timestamp_ns(done) >= nvhcq_signal_timestamp_ns(copied),
                 "done at %llu ns, copy at %llu ns",
                 (unsigned long long)nvhcq_signal_timestamp_ns(done),
                 (unsigned long long)nvhcq_signal_timestamp_ns(copied));
  nvhcq_buffer_destroy(src);
  nvhcq_buffer_destroy(dst);
  nvhcq_queue_destroy(cq);
  nvhcq_queue_destroy(xq);
  nvhcq_signal_destroy(copied);
  nvhcq_signal_destroy(done);
}

/* nvhcq_signal_create_at: two signals over the same 16 bytes of registered memory are one
 * semaphore (a release through one is waited for through the other, on the GPU and the CPU), the
 * memory's value is not reset, and memory the CPU cannot read or a bad offset is refused. */
static void t_signal_over_memory(void) {
  NEED_DEVICE();
  static uint64_t words[512] __attribute__((aligned(4096)));
  words[2] = 3; /* a value already there stays */
  nvhcq_buffer *host, *devmem;
  nvhcq_signal *a, *b, *out;
  nvhcq_queue *cq, *xq;
  TEST_CHECK(nvhcq_buffer_register_host(dev, words, sizeof words, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &devmem) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create_at(devmem, 0, &out) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_signal_create_at(host, 8, &out) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_signal_create_at(host, sizeof words - 8, &out) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_signal_create_at(host, 16, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_signal_create_at(host, 16, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create_at(host, 16, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_value(a) == 3 && nvhcq_signal_value(b) == 3);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(cq, a, 4) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(cq, a, 9) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS);
  usleep(20000);
  TEST_CHECK_MSG(words[2] == 3, "the wait for 4 passed at %llu", (unsigned long long)words[2]);
  TEST_CHECK(nvhcq_queue_signal(xq, b, 4) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(b, 9, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK(words[2] == 9 && nvhcq_signal_timestamp_ns(a) > 0);
  nvhcq_queue_destroy(cq);
  nvhcq_queue_destroy(xq);
  TEST_CHECK(nvhcq_signal_destroy(a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_destroy(b) == NVHCQ_SUCCESS);
  TEST_CHECK(words[2] == 9); /* destroying leaves the memory as it is */
  nvhcq_buffer_destroy(devmem);
  nvhcq_buffer_destroy(host);
}

/* Many small submissions wrap both rings: back-pressure keeps every command intact. */
static void t_ring_wraps(void) {
  NEED_DEVICE();
  nvhcq_signal *s;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &s) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  for (uint64_t i = 1; i <= 50000; i++) {
    nvhcq_queue_reset(q);
    TEST_CHECK(nvhcq_queue_signal(q, s, i) == NVHCQ_SUCCESS);
    if (nvhcq_queue_submit(q) != NVHCQ_SUCCESS) {
      TEST_CHECK_MSG(0, "submit %llu: %s", (unsigned long long)i, nvhcq_last_error());
      break;
    }
  }
  TEST_CHECK(nvhcq_signal_cpu_wait(s, 50000, 10000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_value(s) == 50000);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(s);
}

static void t_wait_times_out(void) {
  NEED_DEVICE();
  nvhcq_signal *s;
  TEST_CHECK(nvhcq_signal_create(dev, 3, &s) == NVHCQ_SUCCESS);
  nvhcq_status st = nvhcq_signal_cpu_wait(s, 4, 50);
  TEST_CHECK(st == NVHCQ_ERROR_TIMEOUT);
  TEST_CHECK(strstr(nvhcq_last_error(), "holds 3") != NULL);
  printf("  timeout says: %s\n", nvhcq_last_error());
  /* A timeout the caller chose is a poll: the device keeps working. */
  TEST_CHECK_MSG(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_signal_destroy(s);
}

static void t_bad_input(void) {
  NEED_DEVICE();
  nvhcq_device *d = NULL;
  TEST_CHECK(nvhcq_device_open(99, &d) == NVHCQ_ERROR_NO_DEVICE && d == NULL);
  printf("  index 99 says: %s\n", nvhcq_last_error());
  nvhcq_buffer *b = NULL, *ok;
  TEST_CHECK(nvhcq_buffer_create(dev, 0, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_create(dev, SIZE_MAX, NVHCQ_MEMORY_DEVICE, &b) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, (nvhcq_memory_kind)42, &b) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &ok) == NVHCQ_SUCCESS);
  char byte;
  TEST_CHECK(nvhcq_buffer_read(&byte, ok, 4096, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_read(&byte, ok, SIZE_MAX, 2) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_write(ok, 0, NULL, 4) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_destroy(ok) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(ok) == NVHCQ_ERROR_INVALID_ARGUMENT); /* double free, caught */
  printf("  double free says: %s\n", nvhcq_last_error());
  nvhcq_signal *s;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &s) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_destroy(s) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(s, 1, 10) == NVHCQ_ERROR_INVALID_ARGUMENT);
}

/* NVHCQ_COPY_ENGINE=auto moves copies to an asynchronous copy engine; bytes must not change. */
static void t_async_copy_engine(void) {
  NEED_DEVICE();
  nvhcq_device *main_dev = dev;
  setenv("NVHCQ_COPY_ENGINE", "auto", 1);
  nvhcq_status s = nvhcq_device_open(0, &dev);
  unsetenv("NVHCQ_COPY_ENGINE");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) {
    dev = main_dev;
    return;
  }
  nvhcq_device_info info = {.struct_size = sizeof info, .copy_engine = -1};
  TEST_CHECK_MSG(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  printf("  copies on %s %d\n",
         info.copy_engine >= 0 ? "asynchronous copy engine" : "none:", info.copy_engine);
  /* The device falls back to the graphics group's copy engine (-1) when no asynchronous one is
   * found or none takes a channel; the round trips would then pass without testing one. Every
   * Ampere and later GPU has asynchronous copy engines, so that fallback is a failure here. */
  TEST_CHECK_MSG(info.copy_engine >= 0,
                 "NVHCQ_COPY_ENGINE=auto gave no asynchronous copy engine (copy_engine %d): the "
                 "copies stayed in the graphics channel group",
                 info.copy_engine);
  round_trip((16 << 20) + 5, 1, 1);
  round_trip((16 << 20) + 5, 1, 0);
  TEST_CHECK(nvhcq_device_close(dev) == NVHCQ_SUCCESS);
  dev = main_dev;
}

/* A copy queued behind a gate the CPU opens later: until then the copy channel holds work that
 * reads `src`, so a destroy that waited for the GPU could not return. */
static nvhcq_queue *gated_copy(nvhcq_signal *gate, nvhcq_signal *done, uint64_t dst, uint64_t src,
                               uint64_t size) {
  nvhcq_queue *q = NULL;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(q, gate, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy(q, dst, src, size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, done, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  return q;
}

/* A buffer destroyed while a queued copy still reads it keeps its memory and address until the
 * copy is done: a buffer allocated right after gets other memory, and the copy sees the data. */
static void t_destroy_while_copy_reads(void) {
  NEED_DEVICE();
  const size_t n = 1 << 20;
  nvhcq_signal *gate, *done;
  nvhcq_buffer *a, *b, *dst;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &gate) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_HOST, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_HOST, &dst) == NVHCQ_SUCCESS);
  uint8_t *want = malloc(n);
  fill(want, n, 21);
  memcpy(nvhcq_buffer_host_pointer(a), want, n);
  memset(nvhcq_buffer_host_pointer(dst), 0, n);
  uint64_t a_at = nvhcq_buffer_gpu_address(a);
  nvhcq_queue *q = gated_copy(gate, done, nvhcq_buffer_gpu_address(dst), a_at, n);
  TEST_CHECK_MSG(nvhcq_buffer_destroy(a) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_HOST, &b) == NVHCQ_SUCCESS);
  uint64_t b_at = nvhcq_buffer_gpu_address(b);
  TEST_CHECK_MSG(b_at + n <= a_at || a_at + n <= b_at,
                 "the new buffer at 0x%llx reuses the destroyed one's range at 0x%llx",
                 (unsigned long long)b_at, (unsigned long long)a_at);
  memset(nvhcq_buffer_host_pointer(b), 0xee, n);
  TEST_CHECK_MSG(nvhcq_signal_value(done) == 0, "the copy ran before its gate opened");
  nvhcq_signal_set(gate, 1);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, 1, 0) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(nvhcq_buffer_host_pointer(dst), want, n) == 0,
                 "the copy did not see the destroyed buffer's data");
  free(want);
  nvhcq_buffer_destroy(b);
  nvhcq_buffer_destroy(dst);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(gate);
  nvhcq_signal_destroy(done);
}

/* 1000 destroys and a module unload while work is queued return at once (the gate stays closed
 * throughout, so none of them can have waited for the GPU); once it opens and the device is idle
 * the memory is back. */
static void t_destroys_do_not_wait(void) {
  NEED_DEVICE();
  enum { COUNT = 1000 };
  static nvhcq_buffer *bufs[COUNT];
  nvhcq_signal *gate, *done;
  nvhcq_buffer *src, *dst;
  uint64_t free_before = 0, free_after = 0;
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_before) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &gate) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &src) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &dst) == NVHCQ_SUCCESS);
  for (int i = 0; i < COUNT; i++)
    TEST_CHECK(nvhcq_buffer_create(dev, 64 << 10, NVHCQ_MEMORY_DEVICE, &bufs[i]) == NVHCQ_SUCCESS);
  nvhcq_queue *q =
      gated_copy(gate, done, nvhcq_buffer_gpu_address(dst), nvhcq_buffer_gpu_address(src), 4096);
  int failed = 0;
  for (int i = 0; i < COUNT; i++) failed += nvhcq_buffer_destroy(bufs[i]) != NVHCQ_SUCCESS;
  TEST_CHECK_MSG(failed == 0, "%d destroys failed: %s", failed, nvhcq_last_error());
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/device_kernels_%s.cubin", dir ? dir : ".", info.arch);
  nvhcq_module *m = NULL;
  if (access(path, R_OK) == 0) {
    TEST_CHECK_MSG(nvhcq_module_load_file(dev, path, &m) == NVHCQ_SUCCESS, "%s",
                   nvhcq_last_error());
    TEST_CHECK_MSG(nvhcq_module_unload(m) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  }
  TEST_CHECK_MSG(nvhcq_signal_value(done) == 0, "the copy ran before its gate opened");
  nvhcq_signal_set(gate, 1);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, 1, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_after) == NVHCQ_SUCCESS);
  nvhcq_buffer_destroy(src);
  nvhcq_buffer_destroy(dst);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(gate);
  nvhcq_signal_destroy(done);
  TEST_CHECK_MSG(free_after + (2u << 20) >= free_before,
                 "GPU free memory %llu KiB before, %llu KiB after the destroys were released",
                 (unsigned long long)free_before >> 10, (unsigned long long)free_after >> 10);
}

/* Small device buffers share 2 MiB allocations (src/core/slab.c): each is 256-byte aligned,
 * none overlaps another live one, each keeps its own bytes through destroys and creates around
 * it, and once all are destroyed the device's free memory is back. */
enum { SMALL_COUNT = 600 };
static const size_t small_sizes[] = {
    1, 7, 256, 257, 4096, 65536, 100000, 512 << 10, (512 << 10) + 1};

static int overlaps(nvhcq_buffer *const *bufs, int count, int i) {
  uint64_t a = nvhcq_buffer_gpu_address(bufs[i]), an = nvhcq_buffer_size(bufs[i]);
  for (int j = 0; j < count; j++) {
    if (j == i || !bufs[j]) continue;
    uint64_t b = nvhcq_buffer_gpu_address(bufs[j]), bn = nvhcq_buffer_size(bufs[j]);
    if (a < b + bn && b < a + an) return 1;
  }
  return 0;
}

/* Writes buffer i's pattern (seeded by `seed + i`) or checks it; the number that differ. */
static int small_pattern(nvhcq_buffer *const *bufs, int count, uint32_t seed, int check) {
  int bad = 0;
  uint8_t *want = malloc(small_sizes[7] + 1), *got = malloc(small_sizes[7] + 1);
  for (int i = 0; i < count && want && got; i++) {
    if (!bufs[i]) continue;
    size_t n = nvhcq_buffer_size(bufs[i]);
    fill(want, n, seed + (uint32_t)i);
    if (!check) {
      bad += nvhcq_buffer_write(bufs[i], 0, want, n) != NVHCQ_SUCCESS;
      continue;
    }
    bad += nvhcq_buffer_read(got, bufs[i], 0, n) != NVHCQ_SUCCESS || memcmp(got, want, n) != 0;
  }
  free(want);
  free(got);
  return bad;
}

static void t_small_buffers(void) {
  NEED_DEVICE();
  static nvhcq_buffer *bufs[SMALL_COUNT + SMALL_COUNT / 2];
  uint64_t free_before = 0, free_after = 0;
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_before) == NVHCQ_SUCCESS);
  int count = 0, misplaced = 0;
  for (; count < SMALL_COUNT; count++) {
    size_t n = small_sizes[count % (sizeof small_sizes / sizeof small_sizes[0])];
    TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_DEVICE, &bufs[count]) == NVHCQ_SUCCESS);
    if (!bufs[count]) return;
  }
  for (int i = 0; i < count; i++)
    misplaced += nvhcq_buffer_gpu_address(bufs[i]) % 256 != 0 || overlaps(bufs, count, i);
  TEST_CHECK_MSG(misplaced == 0, "%d of %d small buffers misaligned or overlapping", misplaced,
                 count);
  TEST_CHECK(small_pattern(bufs, count, 7, 0) == 0);
  /* Destroys while work is queued stay pending until the GPU is past it. */
  nvhcq_signal *gate, *done;
  nvhcq_buffer *src, *dst;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &gate) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &src) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &dst) == NVHCQ_SUCCESS);
  nvhcq_queue *q =
      gated_copy(gate, done, nvhcq_buffer_gpu_address(dst), nvhcq_buffer_gpu_address(src), 4096);
  for (int i = 0; i < count; i += 2) {
    TEST_CHECK(nvhcq_buffer_destroy(bufs[i]) == NVHCQ_SUCCESS);
    bufs[i] = NULL;
  }
  nvhcq_signal_set(gate, 1);
  /* Read, not waited for: a wait would release the destroyed buffers itself. */
  for (long spins = 0; nvhcq_signal_value(done) < 1 && spins < 2000000000L; spins++) continue;
  TEST_CHECK(nvhcq_signal_value(done) == 1);
  usleep(100000); /* the timeline release after the copy lands too */
  /* A size no buffer had yet takes a new slab while those destroys are pending: the allocation
   * that makes the slab releases them into theirs. */
  TEST_CHECK(nvhcq_buffer_create(dev, 2048, NVHCQ_MEMORY_DEVICE, &bufs[0]) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q), nvhcq_signal_destroy(gate), nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(src), nvhcq_buffer_destroy(dst);
  for (int k = 0; k < SMALL_COUNT / 2; k++, count++) {
    size_t n = small_sizes[(k * 5) % (sizeof small_sizes / sizeof small_sizes[0])];
    TEST_CHECK(nvhcq_buffer_create(dev, n, NVHCQ_MEMORY_DEVICE, &bufs[count]) == NVHCQ_SUCCESS);
    if (!bufs[count]) return;
    misplaced += overlaps(bufs, count + 1, count);
  }
  TEST_CHECK_MSG(misplaced == 0, "%d new buffers overlap live ones", misplaced);
  /* The survivors kept their bytes; then everything gets a new pattern, checked. */
  int kept = 0;
  for (int i = 1; i < SMALL_COUNT; i += 2) kept += small_pattern(bufs + i, 1, 7 + (uint32_t)i, 1);
  TEST_CHECK_MSG(kept == 0, "%d surviving buffers lost their bytes", kept);
  TEST_CHECK(small_pattern(bufs, count, 99, 0) == 0);
  TEST_CHECK_MSG(small_pattern(bufs, count, 99, 1) == 0, "buffers do not hold what was written");
  for (int i = 0; i < count; i++) TEST_CHECK(nvhcq_buffer_destroy(bufs[i]) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_after) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(free_after + (1u << 20) >= free_before,
                 "GPU free memory %llu KiB before, %llu KiB after destroying every small buffer",
                 (unsigned long long)free_before >> 10, (unsigned long long)free_after >> 10);
}

/* The UVM state of a device, fresh. */
static nvhcq_device_info info_of(nvhcq_device *d) {
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(d, &info) == NVHCQ_SUCCESS);
  return info;
}

/* One copy from `from` into `to` through queue q, signalled and waited for. */
static nvhcq_status copy_through(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value,
                                 nvhcq_buffer *to, nvhcq_buffer *from, size_t n) {
  nvhcq_status s =
      nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(to), nvhcq_buffer_gpu_address(from), n);
  if (!s) s = nvhcq_queue_signal(q, sig, value);
  if (!s) s = nvhcq_queue_submit(q);
  return s ? s : nvhcq_signal_cpu_wait(sig, value, wait_ms(5000));
}

/* NVHCQ_UVM=background (the default): a device opens in RM's address space, starts registering
 * with UVM at its first submission and moves onto UVM's space at a submission after the
 * registration is done. Buffers made before the move keep their addresses and bytes, queues and
 * signals made before it work after it, new buffers work in the new space, and the channels left
 * behind are freed once drained (the free-memory figure settles). */
static void t_work_carries_across_the_move(void) {
  SKIP_WITHOUT_GPU();
  const char *mode = getenv("NVHCQ_UVM");
  if (mode && *mode && strcmp(mode, "background")) TEST_SKIP("NVHCQ_UVM names another mode");
  enum { N = 1 << 20 };
  nvhcq_device *d = NULL;
  TEST_CHECK_MSG(nvhcq_device_open(0, &d) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (!d) return;
  TEST_CHECK(info_of(d).uvm_attached == 0);
  nvhcq_buffer *vid = NULL, *host = NULL, *back = NULL, *later = NULL;
  nvhcq_queue *q = NULL;
  nvhcq_signal *sig = NULL;
  TEST_CHECK(nvhcq_buffer_create(d, N, NVHCQ_MEMORY_DEVICE, &vid) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(d, N, NVHCQ_MEMORY_HOST, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(d, N, NVHCQ_MEMORY_HOST, &back) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(d, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(d, 0, &sig) == NVHCQ_SUCCESS);
  if (!vid || !host || !back || !q || !sig) return;
  uint8_t *h = nvhcq_buffer_host_pointer(host), *b = nvhcq_buffer_host_pointer(back);
  fill(h, N, 21);
  uint64_t value = 0;
  TEST_CHECK(copy_through(q, sig, ++value, vid, host, N) == NVHCQ_SUCCESS);
  /* Submissions until the device has moved (the registration takes ~100 ms on the H200). */
  for (int i = 0; i < 2000 && !info_of(d).uvm_attached; i++) {
    TEST_CHECK(copy_through(q, sig, ++value, back, vid, 4096) == NVHCQ_SUCCESS);
    usleep(5000);
  }
  nvhcq_device_info info = info_of(d);
  TEST_CHECK_MSG(info.uvm_attached == 1, "no move after 10 s of submissions");
  TEST_CHECK(info.uvm_attach_ms >= 0 && info.uvm_move_ms > 0);
  printf(
      "  registered with UVM in %.1f ms behind the work; the move took %.2f ms of a submission\n",
      info.uvm_attach_ms, info.uvm_move_ms);
  memset(b, 0, N);
  TEST_CHECK(copy_through(q, sig, ++value, back, vid, N) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(h, b, N) == 0, "device memory made before the move lost its bytes");
  TEST_CHECK(nvhcq_buffer_create(d, N, NVHCQ_MEMORY_DEVICE, &later) == NVHCQ_SUCCESS);
  fill(h, N, 22);
  TEST_CHECK(later && copy_through(q, sig, ++value, later, host, N) == NVHCQ_SUCCESS);
  TEST_CHECK(later && copy_through(q, sig, ++value, vid, later, N) == NVHCQ_SUCCESS);
  memset(b, 0, N);
  TEST_CHECK(copy_through(q, sig, ++value, back, vid, N) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(h, b, N) == 0, "a copy through memory made after the move went wrong");
  uint64_t free_bytes = 0;
  TEST_CHECK(nvhcq_device_get_free_memory(d, &free_bytes) == NVHCQ_SUCCESS && free_bytes > 0);
  TEST_CHECK(nvhcq_device_attach_uvm(d) == NVHCQ_SUCCESS); /* already there: nothing to do */
  nvhcq_buffer_destroy(later), nvhcq_buffer_destroy(vid);
  nvhcq_buffer_destroy(host), nvhcq_buffer_destroy(back);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(sig);
  TEST_CHECK_MSG(nvhcq_device_close(d) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
}

/* nvhcq_device_open_with: an eager open is on UVM at once, an open without UVM refuses the move,
 * and bad options are refused with nothing opened (unless NVHCQ_UVM overrides what code asks). */
static void t_open_with_options(void) {
  SKIP_WITHOUT_GPU();
  const char *mode = getenv("NVHCQ_UVM");
  if (mode && *mode) TEST_SKIP("NVHCQ_UVM overrides the options");
  nvhcq_device *d = NULL;
  nvhcq_open_options o = {.struct_size = sizeof o, .uvm = NVHCQ_OPEN_UVM_EAGER};
  TEST_CHECK_MSG(nvhcq_device_open_with(0, &o, &d) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (d) {
    nvhcq_device_info info = info_of(d);
    TEST_CHECK(info.uvm_attached == 1 && info.uvm_attach_ms > 0);
    TEST_CHECK(nvhcq_device_close(d) == NVHCQ_SUCCESS);
  }
  o.uvm = NVHCQ_OPEN_UVM_OFF, d = NULL;
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_SUCCESS);
  if (d) {
    TEST_CHECK(info_of(d).uvm_attached == 0);
    TEST_CHECK(nvhcq_device_attach_uvm(d) == NVHCQ_ERROR_UNSUPPORTED);
    TEST_CHECK(strstr(nvhcq_last_error(), "NVHCQ_UVM=off") != NULL);
    TEST_CHECK(nvhcq_device_close(d) == NVHCQ_SUCCESS);
  }
  o.uvm = 7, d = NULL;
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_ERROR_INVALID_ARGUMENT && !d);
  o.uvm = NVHCQ_OPEN_UVM_EAGER, o.struct_size = 2;
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_ERROR_INVALID_ARGUMENT && !d);
  TEST_CHECK(strstr(nvhcq_last_error(), "struct_size") != NULL);
}

/* ---- another process's work while a long grid runs ---- */

/* The other process of t_another_process_meanwhile is this program run again with
 * NVHCQ_TEST_OTHER_PROCESS set to the test cubin's path: before any test it opens GPU 0, runs one
 * empty kernel and exits (0, or 1 on a failure, which it prints). */
__attribute__((constructor)) static void other_process(void) {
  const char *cubin = getenv("NVHCQ_TEST_OTHER_PROCESS");
  if (!cubin) return;
  nvhcq_device *d = NULL;
  nvhcq_module *m = NULL;
  nvhcq_kernel *k = NULL;
  nvhcq_dim3 one = {1, 1, 1};
  nvhcq_status s = nvhcq_device_open(0, &d);
  if (!s) s = nvhcq_module_load_file(d, cubin, &m);
  if (!s) s = nvhcq_module_get_kernel(m, "empty", &k);
  if (!s) s = nvhcq_kernel_launch_cpu_wait(k, one, one, 0, NULL, 0, NULL);
  if (s) fprintf(stderr, "  other process: %s\n", nvhcq_last_error());
  _exit(s ? 1 : 0);
}

/* Runs a grid of `d`'s of 1-ms blocks, 2000 rounds of the SMs' resident blocks (about 2 s), and
 * meanwhile the other process. Returns 1 if that process was through before the grid, 0 if after,
 * -1 on a failure. */
static int other_process_before_grid(nvhcq_device *d, nvhcq_module *m, const char *cubin) {
  nvhcq_device_info info = info_of(d);
  nvhcq_kernel *k = NULL;
  nvhcq_queue *q = NULL;
  nvhcq_signal *sig = NULL;
  nvhcq_buffer *flag = NULL;
  TEST_CHECK(nvhcq_module_get_kernel(m, "spin", &k) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(d, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(d, 0, &sig) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(d, 4, NVHCQ_MEMORY_DEVICE, &flag) == NVHCQ_SUCCESS);
  if (!k || !q || !sig || !flag) return -1;
  struct {
    uint64_t flag, ns;
  } args = {nvhcq_buffer_gpu_address(flag), 1000000};
  nvhcq_dim3 grid = {info.sm_count * info.blocks_per_sm * 2000, 1, 1}, block = {1, 1, 1};
  TEST_CHECK(nvhcq_queue_launch(q, k, grid, block, 0, &args, sizeof args) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, sig, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NVHCQ_TEST_OTHER_PROCESS", cubin, 1);
    execl(exe, exe, (char *)NULL);
    _exit(127);
  }
  int status = -1;
  TEST_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  TEST_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process failed (%d)",
                 status);
  int before = nvhcq_signal_value(sig) < 1;
  TEST_CHECK(nvhcq_signal_cpu_wait(sig, 1, 20000) == NVHCQ_SUCCESS);
  nvhcq_buffer_destroy(flag);
  nvhcq_signal_destroy(sig);
  nvhcq_queue_destroy(q);
  return before;
}

/* With the default preemption another process starts and runs its kernel while a long grid of
 * short blocks runs (the driver switches between two of its blocks); a device opened with
 * NVHCQ_OPEN_PREEMPT_GRID holds that process until the grid has ended. */
static void t_another_process_meanwhile(void) {
  NEED_GPU();
  SKIP_ON_MOCK("the mock's channels do not take turns on one engine");
  if (getenv("NVHCQ_PREEMPTION")) TEST_SKIP("NVHCQ_PREEMPTION overrides the options");
  char cubin[512];
  test_cubin_path(cubin, sizeof cubin);
  TEST_CHECK(info_of(dev).preemption == NVHCQ_OPEN_PREEMPT_BLOCK);
  TEST_CHECK_MSG(other_process_before_grid(dev, mod, cubin) == 1,
                 "another process's kernel waited for this device's whole grid");
  nvhcq_open_options o = {.struct_size = sizeof o, .preemption = NVHCQ_OPEN_PREEMPT_GRID};
  nvhcq_device *d = NULL;
  nvhcq_module *m = NULL;
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_SUCCESS);
  TEST_CHECK(d && nvhcq_module_load_file(d, cubin, &m) == NVHCQ_SUCCESS);
  if (!m) return;
  TEST_CHECK(info_of(d).preemption == NVHCQ_OPEN_PREEMPT_GRID);
  TEST_CHECK_MSG(other_process_before_grid(d, m, cubin) == 0,
                 "with preemption after grids only, another process ran during the grid");
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_close(d) == NVHCQ_SUCCESS);
}

static void t_close(void) {
  NEED_DEVICE();
  teardown();
}

TEST_MAIN(TEST(t_info), TEST(t_small_buffers), TEST(t_open_close_loop),
          TEST(t_alloc_big_and_too_big), TEST(t_round_trips), TEST(t_mapped_memory),
          TEST(t_pinned_after_fork), TEST(t_big_copy_over_4gib), TEST(t_cross_channel_order),
          TEST(t_signal_over_memory), TEST(t_ring_wraps), TEST(t_wait_times_out), TEST(t_bad_input),
          TEST(t_async_copy_engine), TEST(t_destroy_while_copy_reads), TEST(t_destroys_do_not_wait),
          TEST(t_work_carries_across_the_move), TEST(t_open_with_options),
          TEST(t_another_process_meanwhile), TEST(t_close))
