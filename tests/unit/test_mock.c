/* The mock GPU (src/mock/) without hardware: devices, memory of every kind, copies, queues,
 * signals, recorded replays, the QMD path, malformed streams, driver-side checks, address spaces
 * and the move onto UVM, each ending with no live mock objects, fds or channel threads. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "abi/methods.h"
#include "core/device.h"
#include "core/peer.h"
#include "door.h"
#include "hw/push.h"
#include "mock/internal.h"
#include "mock/mock.h"
#include "nvhcq.h"
#include "mock_test.h"
#include "test.h"

/* Bytes from a linear congruential sequence: no two sizes or seeds alike. */
static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint64_t x = seed | 1ull << 40;
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 56);
}

static void t_h200_profile(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  TEST_CHECK(strstr(info.name, "H200") != NULL);
  TEST_CHECK(!strcmp(info.arch, "sm_90") && info.sm_count == 132 && info.warps_per_sm == 64);
  TEST_CHECK(info.compute_class == 0xcbc0 && info.copy_class == 0xc8b5);
  TEST_CHECK(info.gpfifo_class == 0xc86f && info.usermode_class == 0xc661);
  TEST_CHECK(strncmp(info.uuid_string, "GPU-", 4) == 0 && info.memory_bytes > (100ull << 30));
  TEST_CHECK(info.open_kernel_module && info.pci_bus == 0x18);
  uint64_t free_before = 0, free_after = 0;
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_before) == NVHCQ_SUCCESS);
  nvhcq_buffer *b;
  TEST_CHECK(nvhcq_buffer_create(dev, 64 << 20, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_get_free_memory(dev, &free_after) == NVHCQ_SUCCESS);
  TEST_CHECK(free_before - free_after == 64 << 20);
  TEST_CHECK(nvhcq_buffer_destroy(b) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* The preemption a device asks RM for (nvhcq_open_options.preemption): between blocks by default,
 * after whole grids when the options or NVHCQ_PREEMPTION say so (the variable wins), reported in
 * the device's info; a value that is none of them is refused with nothing opened. */
static nvhcq_device *open_preempting(uint32_t preemption, const char *env) {
  nvhcq_open_options o = {.struct_size = sizeof o, .preemption = preemption};
  nvhcq_device *dev = NULL;
  if (env) setenv("NVHCQ_PREEMPTION", env, 1);
  nvhcq_status s = nvhcq_device_open_with(0, &o, &dev);
  unsetenv("NVHCQ_PREEMPTION");
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "open: %s", nvhcq_last_error());
  return dev;
}

static nvhcq_device_info info_of(nvhcq_device *dev) {
  nvhcq_device_info info = {.struct_size = sizeof info};
  TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
  return info;
}

static void t_preemption(void) {
  NEED_MOCK_DEVICE(dev);
  static const struct {
    uint32_t asked;
    const char *env;
    uint32_t got;
  } cases[] = {{NVHCQ_OPEN_PREEMPT_DEFAULT, NULL, NVHCQ_OPEN_PREEMPT_BLOCK},
               {NVHCQ_OPEN_PREEMPT_GRID, NULL, NVHCQ_OPEN_PREEMPT_GRID},
               {NVHCQ_OPEN_PREEMPT_BLOCK, NULL, NVHCQ_OPEN_PREEMPT_BLOCK},
               {NVHCQ_OPEN_PREEMPT_BLOCK, "grid", NVHCQ_OPEN_PREEMPT_GRID},
               {NVHCQ_OPEN_PREEMPT_GRID, "block", NVHCQ_OPEN_PREEMPT_BLOCK}};
  TEST_CHECK(info_of(dev).preemption == NVHCQ_OPEN_PREEMPT_BLOCK);
  TEST_CHECK(nvhcq_mock_live().block_preempted == 1); /* the compute channel, not the copy one */
  /* The move onto UVM builds the channels again, on the registration thread: each compute
   * channel (one of each context's two) gets the same mode. */
  nvhcq_status s = nvhcq_device_attach_uvm(dev);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(info_of(dev).uvm_attached == 1 && info_of(dev).preemption == NVHCQ_OPEN_PREEMPT_BLOCK);
  nvhcq_mock_counts n = nvhcq_mock_live(); /* the old channels may still be there */
  TEST_CHECK_MSG(n.channels >= 2 && n.block_preempted * 2 == n.channels,
                 "%u channels, %u preempted between blocks", n.channels, n.block_preempted);
  close_mock(dev);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nvhcq_mock_install();
    nvhcq_device *d = open_preempting(cases[i].asked, cases[i].env);
    if (!d) continue;
    int block = cases[i].got == NVHCQ_OPEN_PREEMPT_BLOCK;
    TEST_CHECK_MSG(info_of(d).preemption == cases[i].got, "case %zu", i);
    TEST_CHECK_MSG(nvhcq_mock_live().block_preempted == (uint32_t)block, "case %zu", i);
    close_mock(d);
  }
  nvhcq_mock_install();
  nvhcq_device *d = NULL;
  nvhcq_open_options o = {.struct_size = sizeof o, .preemption = 3};
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_ERROR_INVALID_ARGUMENT && !d);
  TEST_CHECK(strstr(nvhcq_last_error(), "NVHCQ_OPEN_PREEMPT_") != NULL);
  o.preemption = 0, o.reserved = 1;
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_ERROR_INVALID_ARGUMENT && !d);
  setenv("NVHCQ_PREEMPTION", "sometimes", 1);
  TEST_CHECK(nvhcq_device_open(0, &d) == NVHCQ_ERROR_INVALID_ARGUMENT && !d);
  TEST_CHECK(strstr(nvhcq_last_error(), "NVHCQ_PREEMPTION=sometimes") != NULL);
  unsetenv("NVHCQ_PREEMPTION");
  o = (nvhcq_open_options){.struct_size = 8}; /* a 0.2.0 caller's struct: the default */
  TEST_CHECK(nvhcq_device_open_with(0, &o, &d) == NVHCQ_SUCCESS && d);
  if (d) {
    TEST_CHECK(info_of(d).preemption == NVHCQ_OPEN_PREEMPT_BLOCK);
    close_mock(d);
  } else {
    nvhcq_mock_uninstall();
  }
}

/* Host -> a -> b -> host, compared byte for byte. */
static void round_trip(nvhcq_device *dev, size_t size, size_t offset, nvhcq_memory_kind ka,
                       nvhcq_memory_kind kb) {
  nvhcq_buffer *a = NULL, *b = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, size + offset, ka, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, size + offset + 1, kb, &b) == NVHCQ_SUCCESS);
  uint8_t *src = malloc(size + 1), *dst = malloc(size + 1);
  if (!a || !b || !src || !dst) goto done;
  fill(src + 1, size, (uint32_t)size);
  memset(dst + 1, 0x5a, size);
  TEST_CHECK(nvhcq_buffer_write(a, offset, src + 1, size) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(b, offset + 1, a, offset, size) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_buffer_read(dst + 1, b, offset + 1, size) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK_MSG(memcmp(src + 1, dst + 1, size) == 0, "%zu bytes at offset %zu, kinds %u -> %u",
                 size, offset, ka, kb);
done:
  free(src);
  free(dst);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
}

static void t_copies_every_kind(void) {
  NEED_MOCK_DEVICE(dev);
  static const size_t sizes[] = {1, 3, 4097, (1 << 20) + 7, (16 << 20) + 5, (64 << 20) + 13};
  static const size_t offsets[] = {0, 1, 4093};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (nvhcq_memory_kind k = 0; k < 4; k++)
      if (sizes[i] < (16 << 20) || k == i % 4)
        round_trip(dev, sizes[i], offsets[(i + k) % 3], k, (k + i) % 4);
  nvhcq_buffer *m;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE_MAPPED, &m) == NVHCQ_SUCCESS);
  memset(nvhcq_buffer_host_pointer(m), 7, 4096); /* the CPU mapping is the GPU's memory */
  uint8_t back[4096], want[4096];
  memset(want, 7, sizeof want);
  TEST_CHECK(nvhcq_buffer_read(back, m, 0, sizeof back) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(back, want, sizeof back) == 0);
  nvhcq_buffer_destroy(m);
  close_mock(dev);
}

/* The compute queue waits for the copy queue's signal; its own signal comes later. */
static void t_cross_queue_wait(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_signal *copied, *done;
  nvhcq_queue *cq, *xq;
  nvhcq_buffer *src, *dst;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_HOST, &src) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &copied) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_DEVICE, &dst) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  fill(nvhcq_buffer_host_pointer(src), 1 << 20, 3);
  TEST_CHECK(nvhcq_queue_gpu_wait(cq, copied, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(cq, done, 5) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, 5, 30) == NVHCQ_ERROR_TIMEOUT);
  TEST_CHECK(nvhcq_queue_copy(xq, nvhcq_buffer_gpu_address(dst), nvhcq_buffer_gpu_address(src),
                              1 << 20) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(xq, copied, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(xq) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, 5, 5000) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_signal_timestamp_ns(done) >= nvhcq_signal_timestamp_ns(copied));
  TEST_CHECK(nvhcq_signal_timestamp_ns(copied) > 0);
  uint8_t *back = malloc(1 << 20);
  TEST_CHECK(back && nvhcq_buffer_read(back, dst, 0, 1 << 20) == NVHCQ_SUCCESS);
  TEST_CHECK(back && memcmp(back, nvhcq_buffer_host_pointer(src), 1 << 20) == 0);
  free(back);
  /* The CPU releases what a queue waits for. */
  TEST_CHECK(nvhcq_queue_reset(cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(cq, copied, 9) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(cq, done, 6) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(cq) == NVHCQ_SUCCESS);
  nvhcq_signal_set(copied, 9);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, 6, 5000) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(xq);
  nvhcq_queue_destroy(cq);
  nvhcq_signal_destroy(done);
  nvhcq_signal_destroy(copied);
  nvhcq_buffer_destroy(dst);
  nvhcq_buffer_destroy(src);
  close_mock(dev);
}

/* One wait on memory, then a signal: the signal stays unreleased until the CPU stores `ok`
 * (after `not_yet`, which must not satisfy the wait either). */
static void wait_until(nvhcq_queue *q, nvhcq_signal *done, uint64_t *at, uint64_t gpu,
                       uint64_t start, uint64_t value, uint32_t flags, uint64_t not_yet,
                       uint64_t ok) {
  int wide = (flags & NVHCQ_VALUE_64BIT) != 0;
  uint64_t n = nvhcq_signal_value(done) + 1;
  if (wide)
    __atomic_store_n(at, start, __ATOMIC_RELEASE);
  else
    __atomic_store_n((uint32_t *)at, (uint32_t)start, __ATOMIC_RELEASE);
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, gpu, value, flags) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, done, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  uint64_t steps[2] = {not_yet, ok};
  for (int i = 0; i < 2; i++) {
    /* a timeout the caller gives leaves the device as it was */
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, n, 20) == NVHCQ_ERROR_TIMEOUT,
                   "condition %u met by 0x%llx before 0x%llx", flags,
                   (unsigned long long)(i ? not_yet : start), (unsigned long long)steps[1]);
    if (wide)
      __atomic_store_n(at, steps[i], __ATOMIC_RELEASE);
    else
      __atomic_store_n((uint32_t *)at, (uint32_t)steps[i], __ATOMIC_RELEASE);
  }
  TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, n, 5000) == NVHCQ_SUCCESS, "condition %u: %s", flags,
                 nvhcq_last_error());
}

/* Waits on and writes of memory: every condition in 32 and 64 bits, on host memory the CPU
 * changes; writes of exactly 4 or 8 bytes, in order after a wait; refused misuse; a wait that
 * never ends times out and recovery gets the device back. */
/* The CPU thread that releases a signal a while after a waiter started: long enough that the
 * wait is past its first spin and polls as its mode says. */
typedef struct late_release {
  nvhcq_signal *sig;
  uint64_t value;
} late_release;

static void *release_late(void *arg) {
  late_release *l = arg;
  struct timespec ts = {0, 6 * 1000 * 1000};
  nanosleep(&ts, NULL);
  nvhcq_signal_set(l->sig, l->value);
  return NULL;
}

static void t_wait_modes(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_signal *gate, *done;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &gate) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  const uint32_t modes[] = {NVHCQ_WAIT_AUTO, NVHCQ_WAIT_SPIN, NVHCQ_WAIT_YIELD, NVHCQ_WAIT_BLOCK};
  for (uint64_t m = 0; m < 4; m++) {
    TEST_CHECK(nvhcq_device_set_wait_mode(dev, modes[m]) == NVHCQ_SUCCESS);
    /* the GPU waits for the CPU, the CPU for the GPU: each mode sees the end */
    TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_gpu_wait(q, gate, m + 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(q, done, m + 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    late_release l = {gate, m + 1};
    pthread_t t;
    TEST_CHECK(pthread_create(&t, NULL, release_late, &l) == 0);
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, m + 1, 5000) == NVHCQ_SUCCESS, "mode %u: %s",
                   modes[m], nvhcq_last_error());
    pthread_join(t, NULL);
    TEST_CHECK(nvhcq_signal_value(done) == m + 1);
    /* and a wait that is not met ends at its bound in every mode */
    TEST_CHECK(nvhcq_signal_cpu_wait(done, m + 2, 5) == NVHCQ_ERROR_TIMEOUT);
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), "waited 5 ms") != NULL, "%s", nvhcq_last_error());
  }
  TEST_CHECK(nvhcq_device_set_wait_mode(dev, 4) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "NVHCQ_WAIT_AUTO") != NULL);
  TEST_CHECK(nvhcq_device_set_wait_mode(NULL, NVHCQ_WAIT_AUTO) != NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(done);
  nvhcq_signal_destroy(gate);
  close_mock(dev);
  /* a misspelt NVHCQ_WAIT is refused when opening, with what to say instead */
  setenv("NVHCQ_WAIT", "sleep", 1);
  nvhcq_device *bad = NULL;
  TEST_CHECK(nvhcq_device_open(0, &bad) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "NVHCQ_WAIT=sleep") != NULL, "%s", nvhcq_last_error());
  TEST_CHECK(bad == NULL);
  unsetenv("NVHCQ_WAIT");
}

static void t_wait_and_write_values(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_buffer *host, *mem;
  nvhcq_queue *q, *xq;
  nvhcq_signal *done;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &mem) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &done) == NVHCQ_SUCCESS);
  uint64_t *h = nvhcq_buffer_host_pointer(host), g = nvhcq_buffer_gpu_address(host);
  memset(h, 0xee, 4096);
  wait_until(q, done, h, g, 5, 7, NVHCQ_WAIT_GEQ, 6, 8);
  wait_until(q, done, h, g, 3, 4, NVHCQ_WAIT_EQ, 5, 4);
  wait_until(q, done, h, g, 0x0f, 0xf0, NVHCQ_WAIT_AND, 0x101, 0x10);
  wait_until(q, done, h, g, 0xffffffff, 0, NVHCQ_WAIT_NOR, 0xffffffff, 0xfffffffe);
  /* circular: 0xfffffff0 lies before 0x10; the upper word is not compared */
  wait_until(q, done, h, g, 0xfffffff0, 0x10, NVHCQ_WAIT_GEQ, 0x70000000fffffff8ull, 0x10);
  TEST_CHECK(((uint32_t *)h)[1] == 0xeeeeeeee); /* the 32-bit stores left it */
  /* 64 bits: 0x1_00000005 is before 0x2_00000000, though its lower word is not */
  uint32_t w64 = NVHCQ_VALUE_64BIT;
  wait_until(q, done, h, g, 0x100000005ull, 0x200000000ull, NVHCQ_WAIT_GEQ | w64, 0x1ffffffffull,
             0x200000000ull);
  wait_until(q, done, h, g, 1ull << 40, 0x1000000001ull, NVHCQ_WAIT_EQ | w64, 1, 0x1000000001ull);
  wait_until(q, done, h, g, 0, 1ull << 50, NVHCQ_WAIT_AND | w64, 0xffffffff, 1ull << 50);
  wait_until(q, done, h, g, ~0ull, 0, NVHCQ_WAIT_NOR | w64, ~0ull, ~0ull >> 1);
  /* writes: only their own bytes, in order behind a wait */
  memset(h, 0xee, 64);
  uint64_t n = nvhcq_signal_value(done) + 1;
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g + 32, 1, NVHCQ_WAIT_EQ) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_write_value(q, g + 4, 0x11223344, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_write_value(q, g + 8, 0x5566778899aabbccull, w64) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_write_value(q, nvhcq_buffer_gpu_address(mem) + 16, 0x42, 0) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, done, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, n, 20) == NVHCQ_ERROR_TIMEOUT);
  TEST_CHECK(((uint32_t *)h)[1] == 0xeeeeeeee && h[1] == 0xeeeeeeeeeeeeeeeeull);
  __atomic_store_n((uint32_t *)h + 8, 1, __ATOMIC_RELEASE);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, n, 5000) == NVHCQ_SUCCESS);
  TEST_CHECK(((uint32_t *)h)[0] == 0xeeeeeeee && ((uint32_t *)h)[1] == 0x11223344);
  TEST_CHECK(h[1] == 0x5566778899aabbccull && h[2] == 0xeeeeeeeeeeeeeeeeull);
  uint32_t back[6] = {0};
  TEST_CHECK(nvhcq_buffer_read(back, mem, 0, sizeof back) == NVHCQ_SUCCESS);
  TEST_CHECK(back[4] == 0x42);
  /* a copy queue waits on memory too */
  __atomic_store_n((uint32_t *)h + 8, 0, __ATOMIC_RELEASE);
  n++;
  TEST_CHECK(nvhcq_queue_gpu_wait_value(xq, g + 32, 2, NVHCQ_WAIT_GEQ) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(xq, done, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, n, 20) == NVHCQ_ERROR_TIMEOUT);
  __atomic_store_n((uint32_t *)h + 8, 2, __ATOMIC_RELEASE);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, n, 5000) == NVHCQ_SUCCESS);
  /* misuse is refused with the reason */
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS && nvhcq_queue_reset(xq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g + 2, 1, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "aligned") != NULL);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g + 4, 1, w64) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g, 1, 4) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g, 1, 1u << 30) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_write_value(q, g + 4, 1, w64) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_write_value(q, g, 1, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_write_value(xq, g, 1, 0) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "compute queue") != NULL);
  TEST_CHECK(nvhcq_queue_gpu_wait_value(NULL, g, 1, 0) != NVHCQ_SUCCESS);
  /* a wait that never ends: the device timeout reports it, recovery gets the device back */
  TEST_CHECK(nvhcq_device_set_timeout(dev, 50) == NVHCQ_SUCCESS);
  n++;
  TEST_CHECK(nvhcq_queue_gpu_wait_value(q, g + 32, 3, NVHCQ_WAIT_EQ) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, done, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_cpu_wait(done, n, 0) == NVHCQ_ERROR_TIMEOUT);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "waited 50 ms") != NULL, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_device_set_timeout(dev, 10000) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_device_recover(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  n = nvhcq_signal_value(done) + 1;
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_write_value(q, g + 40, 9, 0) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal(q, done, n) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, n, 5000) == NVHCQ_SUCCESS, "after recovery: %s",
                 nvhcq_last_error());
  TEST_CHECK(((uint32_t *)h)[10] == 9);
  nvhcq_queue_destroy(q);
  nvhcq_queue_destroy(xq);
  nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(mem);
  nvhcq_buffer_destroy(host);
  close_mock(dev);
}

/* A recorded copy queue replayed with new sources, sizes and signal values. */
static void t_recorded_replay(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_buffer *in, *out;
  nvhcq_signal *sig;
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 16, NVHCQ_MEMORY_HOST, &in) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 16, NVHCQ_MEMORY_HOST, &out) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(dev, 0, &sig) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  uint8_t *pin = nvhcq_buffer_host_pointer(in), *pout = nvhcq_buffer_host_pointer(out);
  fill(pin, 1 << 16, 11);
  uint64_t base = nvhcq_buffer_gpu_address(in);
  nvhcq_var src, bytes, epoch;
  TEST_CHECK(nvhcq_queue_var(q, "src", base, &src) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_var(q, "bytes", 100, &bytes) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_var(q, "epoch", 1, &epoch) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy_vars(q, nvhcq_buffer_gpu_address(out), 0, 100, NVHCQ_NO_VAR, src,
                                   bytes) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal_var(q, sig, epoch) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_queue_finish(q) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  for (uint64_t it = 1; it <= 3; it++) {
    size_t off = (size_t)it * 333, n = (size_t)it * 1001;
    memset(pout, 0, 1 << 16);
    TEST_CHECK(nvhcq_queue_set_var(q, src, base + off) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_set_var(q, bytes, n) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_set_var(q, epoch, it) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(sig, it, 5000) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK_MSG(memcmp(pout, pin + off, n) == 0 && pout[n] == 0, "replay %llu",
                   (unsigned long long)it);
    /* The recorded signal fires before the replay counts as done (its counter is released after
     * it): variables change once the queue is idle, not once the signal is seen. */
    TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, 5000) == NVHCQ_SUCCESS);
  }
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, 5000) == NVHCQ_SUCCESS);
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(sig);
  nvhcq_buffer_destroy(in);
  nvhcq_buffer_destroy(out);
  close_mock(dev);
}

/* ---- the QMD path: a grid runner that records what it was given ---- */

static nvhcq_mock_grid seen;
static int grids;

static int record_grid(const nvhcq_mock_grid *g) {
  seen = *g;
  __atomic_fetch_add(&grids, 1, __ATOMIC_RELAXED);
  return 0;
}

static int refuse_grid(const nvhcq_mock_grid *g) {
  snprintf(g->error, g->error_size, "grid refused by test_mock");
  return -1;
}

static void t_qmd_launch(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_buffer *a, *b;
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_DEVICE, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 1 << 20, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  /* Large aligned device copies run the built-in copy kernel, when nvcc built one. */
  nvhcq_mock_set_grid_hook(record_grid);
  TEST_CHECK_MSG(nvhcq_buffer_copy(b, 0, a, 0, 1 << 20) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_mock_set_grid_hook(NULL);
  if (grids) {
    TEST_CHECK(seen.qmd_version == 4 && seen.grid[0] == 132 * 128 && seen.block[0] == 512);
    TEST_CHECK(seen.program_address != 0 && seen.cbank0_address != 0 && seen.cbank0_bytes > 0);
    TEST_CHECK(seen.shared_window == 0x729400000000ull && seen.local_window == 0x729300000000ull);
    /* The default runner does the built-in copy (src/mock/kernels.c). */
    uint8_t *pattern = malloc(1 << 20), *back = malloc(1 << 20);
    fill(pattern, 1 << 20, 5);
    TEST_CHECK(nvhcq_buffer_write(a, 0, pattern, 1 << 20) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_buffer_copy(b, 0, a, 0, 1 << 20) == NVHCQ_SUCCESS, "%s",
                   nvhcq_last_error());
    TEST_CHECK(nvhcq_buffer_read(back, b, 0, 1 << 20) == NVHCQ_SUCCESS);
    TEST_CHECK(memcmp(back, pattern, 1 << 20) == 0);
    free(pattern);
    free(back);
    /* A grid that fails stops the channel with a clear report, and recovery works. */
    nvhcq_mock_set_grid_hook(refuse_grid);
    nvhcq_status s = nvhcq_buffer_copy(b, 0, a, 0, 1 << 20);
    nvhcq_mock_set_grid_hook(NULL);
    TEST_CHECK_MSG(s == NVHCQ_ERROR_GPU_FAULT && strstr(nvhcq_last_error(), "Xid 13") &&
                       strstr(nvhcq_last_error(), "grid refused"),
                   "%s: %s", nvhcq_status_name(s), nvhcq_last_error());
    TEST_CHECK_MSG(nvhcq_device_recover(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  }
  round_trip(dev, 4097, 1, NVHCQ_MEMORY_DEVICE, NVHCQ_MEMORY_DEVICE);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_mock(dev);
}

/* An unknown method stops the channel with an Xid in its error notifier, as the GPU does. */
static void t_malformed_stream(void) {
  NEED_MOCK_DEVICE(dev);
  uint32_t bad[2] = {nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, NVHCQ_SUBC_COMPUTE, 0x1234, 1),
                     0};
  TEST_CHECK(nvhcq_channel_submit(&dev->compute, bad, 2) == NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_device_cpu_wait_idle(dev);
  TEST_CHECK_MSG(s == NVHCQ_ERROR_GPU_FAULT && strstr(nvhcq_last_error(), "Xid 13"), "%s: %s",
                 nvhcq_status_name(s), nvhcq_last_error());
  TEST_CHECK(nvhcq_device_recover(dev) == NVHCQ_SUCCESS);
  uint32_t host[2] = {nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, NVHCQ_SUBC_HOST, 0x0f0, 1), 0};
  TEST_CHECK(nvhcq_channel_submit(&dev->copy, host, 2) == NVHCQ_SUCCESS);
  s = nvhcq_device_cpu_wait_idle(dev);
  TEST_CHECK_MSG(s == NVHCQ_ERROR_GPU_FAULT && strstr(nvhcq_last_error(), "Xid 32"), "%s: %s",
                 nvhcq_status_name(s), nvhcq_last_error());
  TEST_CHECK(nvhcq_device_recover(dev) == NVHCQ_SUCCESS);
  round_trip(dev, 100, 3, NVHCQ_MEMORY_HOST, NVHCQ_MEMORY_DEVICE);
  close_mock(dev);
}

/* The driver side's own checks, through the door as nvhcq calls it. */
static void t_driver_checks(void) {
  nvhcq_mock_install();
  int ctl = nvhcq_door->open("/dev/nvidiactl", 2);
  TEST_CHECK(ctl >= 0 && nvhcq_door->open("/dev/nvidia7", 2) < 0 && errno == ENOENT);
  NVOS21_PARAMETERS root = {.hClass = NV01_ROOT_CLIENT};
  TEST_CHECK(nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof root - 4), &root) == -EINVAL);
  TEST_CHECK(nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof root), &root) == 0);
  TEST_CHECK(root.status == 0 && root.hObjectNew != 0);
  NV0080_ALLOC_PARAMETERS dp = {0};
  NVOS21_PARAMETERS p = {.hRoot = root.hObjectNew,
                         .hObjectParent = 0x1234,
                         .hClass = NV01_DEVICE_0,
                         .pAllocParms = (uintptr_t)&dp,
                         .paramsSize = sizeof dp};
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof p), &p) && p.status == 0x36);
  p.hObjectParent = root.hObjectNew;
  p.paramsSize = 8;
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof p), &p) && p.status == 0x3a);
  p.hRoot = 0x999;
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof p), &p) && p.status == 0x23);
  NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS id = {.gpuId = 7};
  NVOS54_PARAMETERS c = {.hClient = root.hObjectNew,
                         .hObject = root.hObjectNew,
                         .cmd = NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
                         .params = (uintptr_t)&id,
                         .paramsSize = sizeof id};
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_CONTROL, sizeof c), &c) && c.status == 0x1f);
  c.paramsSize = 4;
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_CONTROL, sizeof c), &c) && c.status == 0x3a);
  NVOS00_PARAMETERS f = {.hRoot = root.hObjectNew, .hObjectOld = 0x4242};
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_FREE, sizeof f), &f) && f.status == 0x33);
  f.hObjectOld = root.hObjectNew;
  TEST_CHECK(!nvhcq_door->ioctl(ctl, NV_IOWR(NV_ESC_RM_FREE, sizeof f), &f) && f.status == 0);
  TEST_CHECK(nvhcq_door->close(ctl) == 0 && nvhcq_door->close(ctl) < 0);
  nvhcq_mock_counts n = nvhcq_mock_live();
  TEST_CHECK(n.objects == 0 && n.fds == 0);
  nvhcq_mock_uninstall();
}

/* ---- the command processor driven through the door alone: no device, no addresses below 2^40
 * needed, so it runs under every sanitizer ---- */

typedef struct direct {
  int ctl, uvm;
  uint32_t root, device;
} direct;

static uint32_t direct_alloc(direct *d, uint32_t parent, uint32_t hclass, void *params,
                             uint32_t size) {
  /* hRoot, hObjectParent, hObjectNew (RM picks), hClass, pAllocParms, paramsSize, status */
  NVOS21_PARAMETERS p = {d->root, parent, 0, hclass, (uintptr_t)params, size, 0};
  int r = nvhcq_door->ioctl(d->ctl, NV_IOWR(NV_ESC_RM_ALLOC, sizeof p), &p);
  TEST_CHECK_MSG(r == 0 && p.status == 0, "alloc class 0x%x: %d 0x%x", hclass, r, p.status);
  return p.hObjectNew;
}

/* System memory mapped for the CPU (returned), not yet for the GPU. */
static uint8_t *direct_cpu_memory(direct *d, uint64_t size, uint32_t *handle) {
  NV_MEMORY_ALLOCATION_PARAMS m = {.size = size};
  *handle = direct_alloc(d, d->device, NV01_MEMORY_SYSTEM, &m, sizeof m);
  int fd = nvhcq_door->open("/dev/nvidiactl", 2);
  nv_ioctl_nvos33_parameters_with_fd p = {
      .params = {.hClient = d->root, .hDevice = d->device, .hMemory = *handle, .length = size},
      .fd = fd};
  TEST_CHECK(!nvhcq_door->ioctl(d->ctl, NV_IOWR(NV_ESC_RM_MAP_MEMORY, sizeof p), &p));
  void *at = nvhcq_door->mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  nvhcq_door->close(fd);
  return at == MAP_FAILED ? NULL : at;
}

/* Memory object `handle` at GPU address `va` of d's UVM fd's address space. */
static void direct_uvm_map(direct *d, uint32_t handle, uint64_t size, uint64_t va) {
  UVM_CREATE_EXTERNAL_RANGE_PARAMS r = {.base = va, .length = size};
  TEST_CHECK(!nvhcq_door->ioctl(d->uvm, UVM_CREATE_EXTERNAL_RANGE, &r) && !r.rmStatus);
  static UVM_MAP_EXTERNAL_ALLOCATION_PARAMS x;
  memset(&x, 0, sizeof x);
  x.base = va, x.length = size, x.gpuAttributesCount = 1;
  x.rmCtrlFd = d->ctl, x.hClient = d->root, x.hMemory = handle;
  memcpy(x.perGpuAttributes[0].gpuUuid.uuid, nvhcq_mock_uuid, 16);
  TEST_CHECK(!nvhcq_door->ioctl(d->uvm, UVM_MAP_EXTERNAL_ALLOCATION, &x) && !x.rmStatus);
}

/* Memory object `handle` at GPU address `va` of RM address space `vaspace`, through a virtual
 * memory object there (as nvhcq maps without UVM). */
static void direct_rm_map(direct *d, uint32_t vaspace, uint32_t handle, uint64_t size,
                          uint64_t va) {
  NV_MEMORY_ALLOCATION_PARAMS v = {.flags = NVOS32_ALLOC_FLAGS_VIRTUAL_FIXED,
                                   .size = size,
                                   .alignment = 4096,
                                   .offset = va,
                                   .hVASpace = vaspace};
  uint32_t virt = direct_alloc(d, d->device, NV50_MEMORY_VIRTUAL, &v, sizeof v);
  NVOS46_PARAMETERS m = {
      .hClient = d->root, .hDevice = d->device, .hDma = virt, .hMemory = handle, .length = size};
  TEST_CHECK(!nvhcq_door->ioctl(d->ctl, NV_IOWR(NV_ESC_RM_MAP_MEMORY_DMA, sizeof m), &m));
  TEST_CHECK_MSG(!m.status && m.dmaOffset == va, "map 0x%x at 0x%llx: status 0x%x", handle,
                 (unsigned long long)va, m.status);
}

/* System memory mapped for the CPU (returned) and at GPU address `va` of d's UVM fd. */
static uint8_t *direct_memory(direct *d, uint64_t size, uint64_t va, uint32_t *handle) {
  uint8_t *at = direct_cpu_memory(d, size, handle);
  direct_uvm_map(d, *handle, size, va);
  return at;
}

static void nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

static int wait_u64(volatile uint64_t *at, uint64_t value) {
  for (int i = 0; i < 20000 && __atomic_load_n(at, __ATOMIC_ACQUIRE) != value; i++) nap(100000);
  return *at == value;
}

#define RING_ENTRIES 16u
#define MEM_VA       0x4000000000ull /* no CPU mapping there: the mock translates GPU addresses */

/* Submits the pushbuffer as GPFIFO entry `slot`. */
/* The mock installed, its driver fds, a client and a device. */
static direct direct_open(void) {
  nvhcq_mock_install();
  direct d = {.ctl = nvhcq_door->open("/dev/nvidiactl", 2),
              .uvm = nvhcq_door->open("/dev/nvidia-uvm", 2)};
  d.root = direct_alloc(&d, 0, NV01_ROOT_CLIENT, NULL, 0);
  NV0080_ALLOC_PARAMETERS dp = {0};
  d.device = direct_alloc(&d, d.root, NV01_DEVICE_0, &dp, sizeof dp);
  return d;
}

static void direct_submit(uint8_t *mem, nvhcq_push *p, uint32_t slot) {
  uint32_t *cmd = (uint32_t *)(mem + 0x2000 + slot * 0x400);
  memcpy(cmd, p->words, p->len * 4);
  ((uint64_t *)mem)[slot] = NVHCQ_GPFIFO_ENTRY(MEM_VA + 0x2000 + slot * 0x400, p->len);
  __atomic_store_n((uint32_t *)(mem + 0x1000 + NVHCQ_USERD_GP_PUT), slot + 1, __ATOMIC_RELEASE);
  nvhcq_push_reset(p);
}

static void direct_channel(direct *d, uint8_t *mem, uint32_t mem_handle, uint8_t *notifier,
                           uint32_t notifier_handle) {
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS gp = {.engineType = NV2080_ENGINE_TYPE_GRAPHICS};
  uint32_t group = direct_alloc(d, d->device, KEPLER_CHANNEL_GROUP_A, &gp, sizeof gp);
  NV_CHANNEL_ALLOC_PARAMS cp = {.hObjectError = notifier_handle,
                                .hObjectBuffer = mem_handle,
                                .gpFifoOffset = MEM_VA,
                                .gpFifoEntries = RING_ENTRIES};
  cp.hUserdMemory[0] = mem_handle, cp.userdOffset[0] = 0x1000;
  uint32_t ch = direct_alloc(d, group, HOPPER_CHANNEL_GPFIFO_A, &cp, sizeof cp);
  direct_alloc(d, ch, HOPPER_COMPUTE_A, NULL, 0);
  volatile uint64_t *sem = (uint64_t *)(mem + 0x8000), *gate = (uint64_t *)(mem + 0x8100);
  nvhcq_push p;
  nvhcq_push_init(&p);
  nvhcq_push_method1(&p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_OBJECT, HOPPER_COMPUTE_A);
  nvhcq_push_host_signal(&p, MEM_VA + 0x8000, 1);
  direct_submit(mem, &p, 0);
  TEST_CHECK(wait_u64(sem, 1) && sem[1] > 0);   /* payload and timestamp */
  nvhcq_push_host_wait(&p, MEM_VA + 0x8100, 5); /* the CPU releases it */
  nvhcq_push_host_signal(&p, MEM_VA + 0x8000, 2);
  direct_submit(mem, &p, 1);
  nap(20000000);
  TEST_CHECK(*sem == 1); /* the acquire holds the release back */
  *gate = 5;
  TEST_CHECK(wait_u64(sem, 2));
  TEST_CHECK(*(volatile uint32_t *)(mem + 0x1000 + NVHCQ_USERD_GP_GET) == 2);
  nvhcq_push_method1(&p, NVHCQ_SUBC_COMPUTE, 0x1230, 0);
  direct_submit(mem, &p, 2);
  for (int i = 0; i < 20000 && !*(volatile uint16_t *)(notifier + 14); i++) nap(100000);
  uint32_t xid;
  memcpy(&xid, notifier + 8, 4);
  TEST_CHECK(*(volatile uint16_t *)(notifier + 14) == 0xffff && xid == 13);
  nvhcq_push_finish(&p);
}

static void t_command_processor_direct(void) {
  direct d = direct_open();
  uint32_t mem_handle = 0, notifier_handle = 0;
  uint8_t *mem = direct_memory(&d, 1 << 16, MEM_VA, &mem_handle);
  uint8_t *notifier = direct_memory(&d, 4096, MEM_VA + (1 << 16), &notifier_handle);
  if (mem && notifier) direct_channel(&d, mem, mem_handle, notifier, notifier_handle);
  TEST_CHECK(nvhcq_mock_live().channels == 1);
  NVOS00_PARAMETERS f = {.hRoot = d.root, .hObjectOld = d.root};
  TEST_CHECK(!nvhcq_door->ioctl(d.ctl, NV_IOWR(NV_ESC_RM_FREE, sizeof f), &f) && !f.status);
  if (mem) nvhcq_door->munmap(mem, 1 << 16);
  if (notifier) nvhcq_door->munmap(notifier, 4096);
  nvhcq_door->close(d.uvm);
  nvhcq_door->close(d.ctl);
  nvhcq_mock_counts c = nvhcq_mock_live();
  TEST_CHECK(c.objects == 0 && c.fds == 0 && c.channels == 0 && c.ranges == 0);
  nvhcq_mock_uninstall();
}

/* ---- address spaces: each RM address space and each UVM fd is one of its own ---- */

#define X_VA (MEM_VA + (1 << 20)) /* the buffer only RM address space A maps */

/* A channel whose ring, USERD and pushbuffers are `mem_handle`'s at MEM_VA of its address space:
 * that of its group (`group_space`) or, given one, of its context share (`share_space`). */
static uint32_t space_channel(direct *d, uint32_t group_space, uint32_t share_space,
                              uint32_t mem_handle, uint32_t notifier_handle) {
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS gp = {.hVASpace = group_space,
                                               .engineType = NV2080_ENGINE_TYPE_GRAPHICS};
  uint32_t group = direct_alloc(d, d->device, KEPLER_CHANNEL_GROUP_A, &gp, sizeof gp);
  NV_CTXSHARE_ALLOCATION_PARAMETERS sp = {.hVASpace = share_space};
  uint32_t share = share_space ? direct_alloc(d, group, FERMI_CONTEXT_SHARE_A, &sp, sizeof sp) : 0;
  NV_CHANNEL_ALLOC_PARAMS cp = {.hObjectError = notifier_handle,
                                .hObjectBuffer = mem_handle,
                                .gpFifoOffset = MEM_VA,
                                .gpFifoEntries = RING_ENTRIES,
                                .hContextShare = share};
  cp.hUserdMemory[0] = mem_handle, cp.userdOffset[0] = 0x1000;
  return direct_alloc(d, group, HOPPER_CHANNEL_GPFIFO_A, &cp, sizeof cp);
}

/* The channel releases `payload` at X_VA: 1 if it landed in *x, 0 if the channel stopped with an
 * MMU fault (Xid 31) there instead. */
static int release_at_x(direct *d, uint32_t channel, uint8_t *mem, const uint8_t *notifier,
                        volatile uint64_t *x, uint64_t payload) {
  nvhcq_push p;
  nvhcq_push_init(&p);
  nvhcq_push_host_signal(&p, X_VA, payload);
  direct_submit(mem, &p, 0);
  nvhcq_push_finish(&p);
  const volatile uint16_t *status = (const volatile uint16_t *)(notifier + 14);
  for (int i = 0; i < 20000 && *x != payload && !*status; i++) nap(100000);
  if (*x == payload) return 1;
  uint32_t xid;
  memcpy(&xid, notifier + 8, 4);
  NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS f;
  memset(&f, 0, sizeof f);
  NVOS54_PARAMETERS c = {.hClient = d->root,
                         .hObject = channel,
                         .cmd = NV906F_CTRL_CMD_GET_MMU_FAULT_INFO,
                         .params = (uintptr_t)&f,
                         .paramsSize = sizeof f};
  TEST_CHECK(!nvhcq_door->ioctl(d->ctl, NV_IOWR(NV_ESC_RM_CONTROL, sizeof c), &c) && !c.status);
  uint64_t at = (uint64_t)f.addrHi << 32 | f.addrLo;
  TEST_CHECK_MSG(*status == 0xffff && xid == 31 && at == X_VA,
                 "neither the release nor an MMU fault at 0x%llx: status 0x%x, Xid %u at 0x%llx",
                 (unsigned long long)X_VA, *status, xid, (unsigned long long)at);
  return 0;
}

/* A tools fd's event ring for faults of d's UVM fd's address space. */
typedef struct tools_ring {
  int fd;
  uint8_t *ring;
  volatile UVM_TOOLS_EVENT_CONTROL *ctl;
} tools_ring;

#define TOOLS_ENTRIES 64u

static void tools_open(direct *d, tools_ring *t) {
  t->fd = nvhcq_door->open("/dev/nvidia-uvm-tools", 2);
  t->ring = mmap(NULL, TOOLS_ENTRIES * UVM_TOOLS_EVENT_ENTRY_BYTES + 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TEST_CHECK(t->fd >= 0 && t->ring != MAP_FAILED);
  t->ctl =
      (volatile UVM_TOOLS_EVENT_CONTROL *)(t->ring + TOOLS_ENTRIES * UVM_TOOLS_EVENT_ENTRY_BYTES);
  UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS i = {.queueBuffer = (uintptr_t)t->ring,
                                           .queueBufferSize = TOOLS_ENTRIES,
                                           .controlBuffer = (uintptr_t)t->ctl,
                                           .uvmFd = d->uvm};
  UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS e = {
      .eventTypeFlags = 1ull << UVM_EVENT_TYPE_GPU_FAULT | 1ull << UVM_EVENT_TYPE_FATAL_FAULT};
  TEST_CHECK(!nvhcq_door->ioctl(t->fd, UVM_TOOLS_INIT_EVENT_TRACKER, &i) && !i.rmStatus);
  TEST_CHECK(!nvhcq_door->ioctl(t->fd, UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS, &e) && !e.rmStatus);
}

static void tools_close(tools_ring *t) {
  nvhcq_door->close(t->fd);
  munmap(t->ring, TOOLS_ENTRIES * UVM_TOOLS_EVENT_ENTRY_BYTES + 4096);
}

/* RM's mappings belong to the address space they were made in: a buffer mapped through RM only in
 * address space A is reached by a channel of A's group and is out of reach (an MMU fault at its
 * address) for a channel of B's context share in the same client, whose ring sits at the same
 * address as A's channel's in other memory. A channel of an address space registered with a UVM
 * fd sees that fd's ranges, not A's mappings; its fault goes to UVM's event ring, which heard
 * nothing of B's. */
static void t_address_spaces(void) {
  direct d = direct_open();
  NV_VASPACE_ALLOCATION_PARAMETERS rm_vp = {0}, uvm_vp = {.flags = NV_VASPACE_FLAGS_NVHCQ};
  uint32_t space[3] = {direct_alloc(&d, d.device, FERMI_VASPACE_A, &rm_vp, sizeof rm_vp),
                       direct_alloc(&d, d.device, FERMI_VASPACE_A, &rm_vp, sizeof rm_vp),
                       direct_alloc(&d, d.device, FERMI_VASPACE_A, &uvm_vp, sizeof uvm_vp)};
  UVM_REGISTER_GPU_VASPACE_PARAMS r = {.rmCtrlFd = d.ctl, .hClient = d.root, .hVaSpace = space[2]};
  memcpy(r.gpuUuid.uuid, nvhcq_mock_uuid, 16);
  TEST_CHECK(!nvhcq_door->ioctl(d.uvm, UVM_REGISTER_GPU_VASPACE, &r) && !r.rmStatus);
  uint32_t x_handle = 0;
  volatile uint64_t *x = (volatile uint64_t *)direct_cpu_memory(&d, 4096, &x_handle);
  direct_rm_map(&d, space[0], x_handle, 4096, X_VA);
  tools_ring t;
  tools_open(&d, &t);
  uint8_t *mem[3] = {NULL, NULL, NULL}, *notifier[3] = {NULL, NULL, NULL};
  uint32_t channel[3];
  for (int i = 0; i < 3; i++) {
    uint32_t mem_handle, notifier_handle;
    mem[i] = direct_cpu_memory(&d, 1 << 16, &mem_handle);
    notifier[i] = direct_cpu_memory(&d, 4096, &notifier_handle);
    if (i < 2)
      direct_rm_map(&d, space[i], mem_handle, 1 << 16, MEM_VA);
    else
      direct_uvm_map(&d, mem_handle, 1 << 16, MEM_VA);
    channel[i] = space_channel(&d, i ? 0 : space[0], i ? space[i] : 0, mem_handle, notifier_handle);
  }
  if (x && mem[0] && mem[1] && mem[2] && notifier[0] && notifier[1] && notifier[2]) {
    TEST_CHECK_MSG(release_at_x(&d, channel[0], mem[0], notifier[0], x, 0x10),
                   "address space A's channel could not reach A's buffer");
    TEST_CHECK_MSG(!release_at_x(&d, channel[1], mem[1], notifier[1], x, 0x11),
                   "address space B's channel wrote the buffer only A maps");
    TEST_CHECK_MSG(t.ctl->put_behind == 0, "UVM heard of a fault in an RM address space");
    TEST_CHECK_MSG(!release_at_x(&d, channel[2], mem[2], notifier[2], x, 0x12),
                   "the UVM address space's channel wrote the buffer only RM's A maps");
    TEST_CHECK(*x == 0x10);
    const UVM_EVENT_GPU_FAULT *e = (const UVM_EVENT_GPU_FAULT *)t.ring;
    TEST_CHECK_MSG(t.ctl->put_behind == 2 && e->eventType == UVM_EVENT_TYPE_GPU_FAULT &&
                       e->address == X_VA && e->clientType == 2,
                   "UVM's events: %u, the first of type %u at 0x%llx", t.ctl->put_behind,
                   e->eventType, (unsigned long long)e->address);
  }
  NVOS00_PARAMETERS f = {.hRoot = d.root, .hObjectOld = d.root};
  TEST_CHECK(!nvhcq_door->ioctl(d.ctl, NV_IOWR(NV_ESC_RM_FREE, sizeof f), &f) && !f.status);
  if (x) nvhcq_door->munmap((void *)x, 4096);
  for (int i = 0; i < 3; i++) {
    if (mem[i]) nvhcq_door->munmap(mem[i], 1 << 16);
    if (notifier[i]) nvhcq_door->munmap(notifier[i], 4096);
  }
  tools_close(&t);
  nvhcq_door->close(d.uvm);
  nvhcq_door->close(d.ctl);
  nvhcq_mock_counts c = nvhcq_mock_live();
  TEST_CHECK(c.objects == 0 && c.fds == 0 && c.channels == 0 && c.ranges == 0);
  nvhcq_mock_uninstall();
}

/* The address space the mock channel behind `handle` of dev's client translates through. */
static int channel_space(nvhcq_device *dev, uint32_t handle) {
  pthread_mutex_lock(&nvhcq_mock.lock);
  const mock_obj *o = mock_find(dev->rm.root, handle);
  int space = o && o->ch ? mock_channel_space(o->ch) : -1;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  return space;
}

static int vaspace_id(nvhcq_device *dev, uint32_t handle) {
  pthread_mutex_lock(&nvhcq_mock.lock);
  const mock_obj *o = mock_find(dev->rm.root, handle);
  int space = o ? o->space : -1;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  return space;
}

/* The mock's device 0 opened with NVHCQ_UVM=mode (which wins over anything the caller's
 * environment says), the variable cleared again. */
static nvhcq_device *open_mock_uvm(const char *mode) {
  setenv("NVHCQ_UVM", mode, 1);
  nvhcq_device *dev = open_mock();
  unsetenv("NVHCQ_UVM");
  return dev;
}

/* The device opens in an RM address space of its own; nvhcq_device_attach_uvm moves it: its new
 * channels translate through its UVM fd's address space alone, where every buffer made before
 * the move is mapped (of each kind), and copies through them read and write those buffers. */
static void t_move_maps_every_allocation(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  nvhcq_device *dev = open_mock_uvm("background");
  if (!dev) return;
  TEST_CHECK(dev->rm_only);
  int rm_space = vaspace_id(dev, dev->h_vaspace);
  TEST_CHECK(rm_space > 0 && channel_space(dev, dev->compute.handle) == rm_space &&
             channel_space(dev, dev->copy.handle) == rm_space);
  enum { N = 4096 * 3 + 5 };
  static uint8_t in[4][N], out[N];
  nvhcq_buffer *old[4] = {NULL}, *fresh = NULL;
  for (int k = 0; k < 4; k++) {
    TEST_CHECK(nvhcq_buffer_create(dev, N, (nvhcq_memory_kind)k, &old[k]) == NVHCQ_SUCCESS);
    fill(in[k], N, 40 + k);
    if (old[k]) TEST_CHECK(nvhcq_buffer_write(old[k], 0, in[k], N) == NVHCQ_SUCCESS);
  }
  TEST_CHECK_MSG(nvhcq_device_attach_uvm(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(!dev->rm_only);
  pthread_mutex_lock(&nvhcq_mock.lock);
  int uvm_space = nvhcq_mock.fds[dev->rm.fd_uvm - MOCK_FD_BASE].space;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  TEST_CHECK_MSG(channel_space(dev, dev->compute.handle) == uvm_space &&
                     channel_space(dev, dev->copy.handle) == uvm_space,
                 "the new channels translate through address spaces %d and %d, not UVM's %d",
                 channel_space(dev, dev->compute.handle), channel_space(dev, dev->copy.handle),
                 uvm_space);
  TEST_CHECK(nvhcq_buffer_create(dev, N, NVHCQ_MEMORY_DEVICE, &fresh) == NVHCQ_SUCCESS);
  for (int k = 0; k < 4 && fresh; k++) {
    if (!old[k]) continue;
    uint64_t at = nvhcq_buffer_gpu_address(old[k]);
    TEST_CHECK_MSG(mock_space_pointer(uvm_space, at, N) != NULL,
                   "the %d buffer at 0x%llx made before the move is not mapped in UVM's space", k,
                   (unsigned long long)at);
    TEST_CHECK(nvhcq_buffer_copy(fresh, 0, old[k], 0, N) == NVHCQ_SUCCESS);
    memset(out, 0, N);
    TEST_CHECK(nvhcq_buffer_read(out, fresh, 0, N) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(!memcmp(out, in[k], N), "kind %d: the copy read other bytes", k);
    TEST_CHECK(nvhcq_buffer_copy(old[k], 1, fresh, 0, N - 1) == NVHCQ_SUCCESS); /* and writes */
    TEST_CHECK(nvhcq_buffer_read(out, old[k], 0, N) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(out[0] == in[k][0] && !memcmp(out + 1, in[k], N - 1),
                   "kind %d: the copy into it wrote other bytes", k);
  }
  TEST_CHECK_MSG(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  for (int k = 0; k < 4; k++) nvhcq_buffer_destroy(old[k]);
  nvhcq_buffer_destroy(fresh);
  close_mock(dev);
}

/* Close returns while UVM_UNREGISTER_GPU is still blocked (held by the mock: were close to wait
 * for it, it would return only after the hold's 10 s with everything freed), leaving the driver's
 * objects (channels, memory and its mappings) to that release, which frees the client; the next
 * open of the GPU joins that release, and nvhcq_device_close_wait returns with nothing left. */
static void t_close_leaves_slow_calls_behind(void) {
  NEED_MOCK_DEVICE(dev);
  TEST_CHECK(nvhcq_device_attach_uvm(dev) == NVHCQ_SUCCESS); /* registered: there is some */
  nvhcq_mock_hold_unregister(1);
  TEST_CHECK_MSG(nvhcq_device_close(dev) == NVHCQ_SUCCESS, "close: %s", nvhcq_last_error());
  nvhcq_mock_counts c = nvhcq_mock_live();
  TEST_CHECK_MSG(c.objects > 0 && c.fds > 0,
                 "close freed the client and closed the fds itself (%u objects, %u fds live)",
                 c.objects, c.fds);
  TEST_CHECK_MSG(c.channels > 0 && c.ranges > 0,
                 "close freed %s itself instead of leaving it to the release",
                 c.channels ? "the memory's mappings" : "the channels");
  nvhcq_mock_hold_unregister(0);
  nvhcq_device *again = NULL;
  TEST_CHECK_MSG(nvhcq_device_open(0, &again) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_mock_unregisters_held() == 0);
  /* Each on UVM, its background registration done: the counts below hold still. */
  TEST_CHECK(nvhcq_device_attach_uvm(again) == NVHCQ_SUCCESS);
  c = nvhcq_mock_live();
  nvhcq_device *third = NULL;
  TEST_CHECK(nvhcq_device_open(0, &third) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_attach_uvm(third) == NVHCQ_SUCCESS);
  nvhcq_mock_counts two = nvhcq_mock_live();
  TEST_CHECK_MSG(two.objects == 2 * c.objects && two.fds == 2 * c.fds,
                 "the first close's release was not done when the GPU opened again: %u objects "
                 "with one device open, %u with two",
                 c.objects, two.objects);
  TEST_CHECK(nvhcq_device_close(third) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_close_wait(again) == NVHCQ_SUCCESS);
  c = nvhcq_mock_live();
  TEST_CHECK_MSG(c.objects == 0 && c.fds == 0 && c.channels == 0 && c.ranges == 0,
                 "live after close_wait: %u objects, %u fds, %u channels, %u ranges", c.objects,
                 c.fds, c.channels, c.ranges);
  nvhcq_mock_uninstall();
}

/* Buffers never destroyed go with their device: small ones (slab blocks), large ones and host
 * memory; the mock holds nothing after, and valgrind and LeakSanitizer (CI) see no host leak. */
static void t_close_frees_forgotten_buffers(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_buffer *b[3] = {NULL, NULL, NULL};
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &b[0]) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4 << 20, NVHCQ_MEMORY_DEVICE, &b[1]) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 64 << 10, NVHCQ_MEMORY_HOST, &b[2]) == NVHCQ_SUCCESS);
  close_mock(dev);
  for (int i = 0; i < 3; i++) TEST_CHECK(nvhcq_buffer_gpu_address(b[i]) == 0); /* not live */
}

/* Small pinned host buffers are page-aligned blocks of one pinned allocation: after the first,
 * creating and destroying them makes no driver object; each reads zero when given out (a reused
 * block too), they do not overlap, and copies move their bytes. */
static void t_small_host_buffers(void) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_buffer *h[8], *d;
  TEST_CHECK(nvhcq_buffer_create(dev, 100, NVHCQ_MEMORY_HOST, &h[0]) == NVHCQ_SUCCESS);
  uint32_t objects = nvhcq_mock_live().objects;
  for (int i = 1; i < 8; i++)
    TEST_CHECK(nvhcq_buffer_create(dev, 3000 + i, NVHCQ_MEMORY_HOST, &h[i]) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_mock_live().objects == objects, "%u driver objects, %u after the first",
                 nvhcq_mock_live().objects, objects);
  for (int i = 0; i < 8; i++) {
    uint8_t *p = nvhcq_buffer_host_pointer(h[i]);
    TEST_CHECK((uintptr_t)p % 4096 == 0 && nvhcq_buffer_size(h[i]) == (i ? 3000u + i : 100u));
    TEST_CHECK((uint64_t)(uintptr_t)p == nvhcq_buffer_gpu_address(h[i]));
    for (int j = 0; j < i; j++) {
      uint8_t *q = nvhcq_buffer_host_pointer(h[j]);
      TEST_CHECK(p >= q + 4096 || q >= p + 4096);
    }
    memset(p, 0xa0 + i, nvhcq_buffer_size(h[i]));
  }
  TEST_CHECK(nvhcq_buffer_create(dev, 3000, NVHCQ_MEMORY_DEVICE, &d) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(d, 0, h[3], 0, 3000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(h[4], 0, d, 0, 3000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  uint8_t *four = nvhcq_buffer_host_pointer(h[4]);
  TEST_CHECK(four[0] == 0xa3 && four[2999] == 0xa3 && four[3000] == 0xa4);
  uint8_t *was = nvhcq_buffer_host_pointer(h[5]);
  nvhcq_buffer_destroy(h[5]);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &h[5]) == NVHCQ_SUCCESS);
  uint8_t *again = nvhcq_buffer_host_pointer(h[5]);
  int zero = 1;
  for (int i = 0; i < 4096; i++) zero &= again[i] == 0;
  TEST_CHECK_MSG(again == was && zero, "the block came back at %p (was %p), zeroed: %d",
                 (void *)again, (void *)was, zero);
  for (int i = 0; i < 8; i++) nvhcq_buffer_destroy(h[i]);
  nvhcq_buffer_destroy(d);
  close_mock(dev);
}

/* NVHCQ_UVM=off: memory of every kind is mapped through RM's virtual memory objects at the CPU's
 * addresses (the copies read and write it there), and nothing is left after close. */
static void t_rm_only_mapping(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  nvhcq_device *dev = open_mock_uvm("off");
  if (!dev) return;
  for (nvhcq_memory_kind k = 0; k < 4; k++) {
    round_trip(dev, 4097, 1, k, (k + 1) % 4);
    round_trip(dev, (4 << 20) + 3, 0, k, NVHCQ_MEMORY_DEVICE); /* 2 MiB pages */
  }
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS); /* the destroyed ones go */
  uint32_t ranges_open = nvhcq_mock_live().ranges;
  nvhcq_buffer *m;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE_MAPPED, &m) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_mock_live().ranges == ranges_open + 1);
  TEST_CHECK(nvhcq_mock_gpu_pointer(nvhcq_buffer_gpu_address(m), 4096) != NULL);
  nvhcq_buffer_destroy(m);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_mock_live().ranges == ranges_open, "%u GPU mappings, %u before",
                 nvhcq_mock_live().ranges, ranges_open);
  close_mock(dev);
}

/* NVHCQ_MOCK_GPU picks the GPU: each profile's architecture, SMs and classes, and a copy on it. */
static void t_other_profiles(void) {
  static const struct {
    const char *key, *arch;
    uint32_t sms, compute, copy;
  } want[] = {{"a100", "sm_80", 108, 0xc6c0, 0xc6b5},
              {"rtx4090", "sm_89", 128, 0xc9c0, 0xc7b5},
              {"b200", "sm_100", 148, 0xcdc0, 0xc9b5}};
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    setenv("NVHCQ_MOCK_GPU", want[i].key, 1);
    NEED_MOCK_DEVICE(dev);
    nvhcq_device_info info = {.struct_size = sizeof info};
    TEST_CHECK(nvhcq_device_query_info(dev, &info) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(!strcmp(info.arch, want[i].arch) && info.sm_count == want[i].sms &&
                       info.compute_class == want[i].compute && info.copy_class == want[i].copy,
                   "%s: %s, %u SMs, compute 0x%x, copy 0x%x", want[i].key, info.arch, info.sm_count,
                   info.compute_class, info.copy_class);
    round_trip(dev, 100000, 3, NVHCQ_MEMORY_DEVICE, NVHCQ_MEMORY_HOST);
    close_mock(dev);
  }
  unsetenv("NVHCQ_MOCK_GPU");
}

/* NVHCQ_MOCK_GPUS=2: two GPUs with their own identities and memory; peer mappings, an imported
 * signal page and a copy between them, and nothing left in the mock once both close (GPU 1
 * first, while GPU 0 still maps its buffer). */
static void t_two_gpus(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  setenv("NVHCQ_MOCK_GPUS", "2", 1);
  nvhcq_mock_install();
  unsetenv("NVHCQ_MOCK_GPUS");
  int count = 0;
  TEST_CHECK(nvhcq_device_count(&count) == NVHCQ_SUCCESS && count == 2);
  nvhcq_device *d[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    TEST_CHECK_MSG(nvhcq_device_open(i, &d[i]) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (!d[0] || !d[1]) return;
  /* Both on UVM first: the ranges counted below are the peer mapping's alone. */
  for (int i = 0; i < 2; i++) TEST_CHECK(nvhcq_device_attach_uvm(d[i]) == NVHCQ_SUCCESS);
  TEST_CHECK(d[0]->info.uuid[15] + 1 == d[1]->info.uuid[15] && d[1]->info.pci_bus == 0x19);
  TEST_CHECK(d[0]->minor == 0 && d[1]->minor == 1 && d[1]->gpu_id == 0x1900);
  /* Looking a UUID up leaves nothing behind in the driver. */
  nvhcq_mock_counts before = nvhcq_mock_live();
  nvhcq_device *none = NULL;
  TEST_CHECK(nvhcq_device_open_uuid("GPU-6d6f636b-4832-3030-0011-2233445566ff", &none) ==
             NVHCQ_ERROR_NO_DEVICE);
  nvhcq_mock_counts after = nvhcq_mock_live();
  TEST_CHECK(after.objects == before.objects && after.fds == before.fds);
  uint32_t ranges = nvhcq_mock_live().ranges;
  nvhcq_buffer *b = NULL, *a = NULL;
  TEST_CHECK(nvhcq_buffer_create(d[1], 3 << 20, NVHCQ_MEMORY_DEVICE, &b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_enable_peer(d[0], d[1]) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_mock_live().ranges == ranges + 2, "%u ranges, %u before the buffer",
                 nvhcq_mock_live().ranges, ranges); /* its own and GPU 0's of it */
  TEST_CHECK(nvhcq_peer_enabled(d[0], d[1]) && !nvhcq_peer_enabled(d[1], d[0]));
  TEST_CHECK(nvhcq_buffer_create(d[0], 4096, NVHCQ_MEMORY_DEVICE, &a) == NVHCQ_SUCCESS);
  uint8_t in[4096], out[4096];
  fill(in, sizeof in, 5);
  TEST_CHECK(nvhcq_buffer_write(b, 100, in, sizeof in) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 100, sizeof in) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(out, a, 0, sizeof out) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(in, out, sizeof in) == 0);
  TEST_CHECK(nvhcq_peer_import_signals(d[1], d[0]) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_peer_import_signals(d[1], d[0]) == NVHCQ_SUCCESS); /* once */
  TEST_CHECK(nvhcq_device_close(d[1]) == NVHCQ_SUCCESS);
  TEST_CHECK(!d[0]->imports && d[0]->registered_count == 0);
  TEST_CHECK(nvhcq_buffer_destroy(a) == NVHCQ_SUCCESS);
  close_mock(d[0]);
}

/* nvhcq_buffer_register_host in UVM's and RM's address space: the caller's unaligned memory is
 * the buffer from its first page on, the GPU's copies read and write it in place, a second
 * registration of its pages and nvhcq's own memory are refused, and the destroy unmaps nothing
 * (the same range registers again at once, though the first pin waits for the GPU). */
static void register_in(const char *mode) {
  nvhcq_device *dev = open_mock_uvm(mode);
  if (!dev) return;
  enum { N = 3 * 4096 + 100 };
  uint8_t *block = NULL;
  TEST_CHECK(posix_memalign((void **)&block, 4096, N + 8192) == 0);
  uint8_t *p = block + 300, want[N], got[N];
  fill(want, N, 77);
  memcpy(p, want, N);
  nvhcq_buffer *r = NULL, *dup = NULL, *dst = NULL, *own = NULL;
  TEST_CHECK(nvhcq_buffer_register_host(dev, p, N, &r) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_gpu_address(r) == (uint64_t)(uintptr_t)block &&
             nvhcq_buffer_host_pointer(r) == block && nvhcq_buffer_size(r) == N + 300);
  TEST_CHECK(nvhcq_mock_gpu_pointer((uint64_t)(uintptr_t)p, N) == p);
  TEST_CHECK(nvhcq_buffer_create(dev, N, NVHCQ_MEMORY_DEVICE, &dst) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(dst, 0, r, 300, N) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(got, dst, 0, N) == NVHCQ_SUCCESS && !memcmp(got, want, N));
  fill(want, N, 78);
  TEST_CHECK(nvhcq_buffer_write(dst, 0, want, N) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_copy(r, 300, dst, 0, N) == NVHCQ_SUCCESS && !memcmp(p, want, N));
  TEST_CHECK(nvhcq_buffer_register_host(dev, p + N, 16, &dup) != NVHCQ_SUCCESS && !dup);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &own) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_register_host(dev, nvhcq_buffer_host_pointer(own), 64, &dup) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_register_host(dev, NULL, 64, &dup) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_register_host(dev, p, 0, &dup) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_destroy(r) == NVHCQ_SUCCESS);
  p[0] ^= 0xff; /* still the caller's */
  TEST_CHECK(nvhcq_buffer_register_host(dev, p, N, &r) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_destroy(r) == NVHCQ_SUCCESS);
  nvhcq_buffer_destroy(dst);
  nvhcq_buffer_destroy(own);
  close_mock(dev);
  p[N - 1] = 1; /* and after the close */
  free(block);
}

static void t_register_host(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  register_in("eager");
  register_in("off");
}

/* Physical memory mapped into a reserved range (mode: NVHCQ_UVM): two allocations side by side,
 * one from an offset, a copy spanning both, read back through a second mapping that shows the
 * offset; the memory outlives its handle while mapped; overlaps and early destroys are refused;
 * an address unmapped is mapped again; with "background" the move onto UVM maps it there too. */
static void physical_mappings(const char *mode) {
  enum { G = NVHCQ_PHYSICAL_GRANULARITY, N = 3 * G };
  nvhcq_device *dev = open_mock_uvm(mode);
  if (!dev) return;
  static uint8_t scratch[2u << 20];
  nvhcq_buffer *warm = NULL; /* the first reads make the device's staging memory (the small and
                              * the large area): counted before */
  TEST_CHECK(nvhcq_buffer_create(dev, sizeof scratch, NVHCQ_MEMORY_DEVICE, &warm) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(scratch, warm, 0, 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(scratch, warm, 0, sizeof scratch) == NVHCQ_SUCCESS);
  nvhcq_buffer_destroy(warm);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  uint32_t ranges_open = nvhcq_mock_live().ranges;
  nvhcq_physical *p1 = NULL, *p2 = NULL;
  nvhcq_reservation *r = NULL, *r2 = NULL;
  nvhcq_buffer *v1 = NULL, *v2 = NULL, *whole = NULL, *over = NULL, *host = NULL;
  static uint8_t in[N], out[N];
  TEST_CHECK(nvhcq_physical_create(dev, G + 5, &p1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_physical_create(dev, 2 * G, &p1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_physical_create(dev, 2 * G, &p2) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_physical_size(p1) == 2 * G);
  TEST_CHECK(nvhcq_reservation_create(4 * G, 0, 0, &r) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_reservation_create(2 * G, 0, 0, &r2) == NVHCQ_SUCCESS);
  uint64_t base = nvhcq_reservation_gpu_address(r);
  TEST_CHECK(base && base % G == 0);
  /* p1's second half at base, all of p2 after it: [base, base + 3 G) */
  TEST_CHECK_MSG(nvhcq_buffer_map_physical(r, base, p1, G, G, &v1) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_map_physical(r, base + G, p2, 0, 2 * G, &v2) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_map_physical(r, base + 2 * G, p1, 0, G, &over) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_buffer_map_physical(r, base + 3 * G, p1, G, 2 * G, &over) ==
             NVHCQ_ERROR_INVALID_ARGUMENT); /* past the range and past p1 */
  TEST_CHECK(nvhcq_buffer_map_physical(r2, nvhcq_reservation_gpu_address(r2), p1, 0, 2 * G,
                                       &whole) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_gpu_address(v2) == base + G && nvhcq_buffer_size(v2) == 2 * G);
  if (!strcmp(mode, "background")) {
    TEST_CHECK(dev->rm_only);
    TEST_CHECK_MSG(nvhcq_device_attach_uvm(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  }
  nvhcq_queue *q = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, N, NVHCQ_MEMORY_HOST, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  if (!v1 || !v2 || !whole || !host || !q) goto done;
  fill(in, N, 77);
  memcpy(nvhcq_buffer_host_pointer(host), in, N);
  /* G + 2 bytes from base + G / 2 - 1: across the boundary at base + G */
  TEST_CHECK(nvhcq_queue_copy(q, base + G / 2 - 1, nvhcq_buffer_gpu_address(host), G + 2) ==
             NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_queue_cpu_wait_idle(q, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_read(out, v1, G / 2 - 1, G / 2 + 1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(out + G / 2 + 1, v2, 0, G / 2 + 1) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, in, G + 2) == 0);
  memset(out, 0, G);
  TEST_CHECK(nvhcq_buffer_read(out, whole, G + G / 2 - 1, G / 2 + 1) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(out, in, G / 2 + 1) == 0, "the offset mapping is not p1's second half");
  /* the handles go first: the memory stays while mapped */
  TEST_CHECK(nvhcq_physical_destroy(p1) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_physical_size(p1) == 0);
  p1 = NULL;
  TEST_CHECK(nvhcq_buffer_read(out, v1, G / 2 - 1, 16) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, in, 16) == 0);
  TEST_CHECK(nvhcq_reservation_destroy(r) == NVHCQ_ERROR_INVALID_ARGUMENT);
  /* unmapped, and mapped again at once in its place (the release is waited for) */
  TEST_CHECK(nvhcq_buffer_destroy(v2) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_buffer_map_physical(r, base + G, p2, G, G, &v2) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_buffer_read(out, v2, 0, G / 2 + 1) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, in + G / 2 + 1, G / 2 + 1) != 0); /* p2's second half: other bytes */
done:
  nvhcq_queue_destroy(q);
  nvhcq_buffer_destroy(host);
  nvhcq_buffer_destroy(v1);
  nvhcq_buffer_destroy(v2);
  nvhcq_buffer_destroy(whole);
  nvhcq_physical_destroy(p1);
  nvhcq_physical_destroy(p2);
  TEST_CHECK_MSG(nvhcq_reservation_destroy(r) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_reservation_destroy(r2) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  /* (the move maps everything twice: the RM space's mappings stay until their buffers go) */
  TEST_CHECK_MSG(!strcmp(mode, "background") || nvhcq_mock_live().ranges == ranges_open,
                 "%u GPU mappings, %u before", nvhcq_mock_live().ranges, ranges_open);
  close_mock(dev);
}

static void t_physical_mappings(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  physical_mappings("eager");
  physical_mappings("off");
  physical_mappings("background");
}

/* Physical memory exported to a file descriptor and imported from it (as another process would)
 * is the same bytes: written through a mapping of the one, read through a mapping of the other,
 * also after the export's descriptor and the first handle are gone; bad descriptors are refused
 * with nothing left behind. */
static void t_physical_sharing(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  enum { G = NVHCQ_PHYSICAL_GRANULARITY };
  nvhcq_device *dev = open_mock_uvm("eager");
  if (!dev) return;
  static uint8_t in[G], out[G];
  nvhcq_physical *p = NULL, *q = NULL, *none = NULL;
  nvhcq_reservation *r = NULL;
  nvhcq_buffer *a = NULL, *b = NULL;
  int fd = -1, plain = -1;
  nvhcq_buffer *warm = NULL; /* the device's staging memory for reads and writes: counted before */
  TEST_CHECK(nvhcq_buffer_create(dev, G, NVHCQ_MEMORY_DEVICE, &warm) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_write(warm, 0, in, G) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(out, warm, 0, G) == NVHCQ_SUCCESS);
  nvhcq_buffer_destroy(warm);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  uint32_t objects = nvhcq_mock_live().objects;
  TEST_CHECK(nvhcq_physical_create(dev, 2 * G, &p) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_physical_export_fd(p, NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK_MSG(nvhcq_physical_export_fd(p, &fd) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_physical_import_fd(dev, -1, &none) == NVHCQ_ERROR_INVALID_ARGUMENT);
  plain = nvhcq_door->open("/dev/nvidiactl", 2); /* a control fd that holds no export */
  TEST_CHECK(nvhcq_physical_import_fd(dev, plain, &none) != NVHCQ_SUCCESS);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "cuMemExportToShareableHandle") != NULL, "%s",
                 nvhcq_last_error());
  TEST_CHECK(none == NULL);
  TEST_CHECK_MSG(nvhcq_physical_import_fd(dev, fd, &q) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_physical_size(q) == 2 * G);
  nvhcq_door->close(fd); /* the import holds the memory now */
  nvhcq_door->close(plain);
  TEST_CHECK(nvhcq_reservation_create(2 * G, 0, 0, &r) == NVHCQ_SUCCESS);
  uint64_t base = nvhcq_reservation_gpu_address(r);
  TEST_CHECK(nvhcq_buffer_map_physical(r, base, p, G, G, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_map_physical(r, base + G, q, G, G, &b) == NVHCQ_SUCCESS);
  if (!a || !b) goto done;
  fill(in, G, 91);
  TEST_CHECK(nvhcq_buffer_write(a, 0, in, G) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_read(out, b, 0, G) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(memcmp(out, in, G) == 0, "the imported memory is not the exported bytes");
  TEST_CHECK(nvhcq_buffer_destroy(a) == NVHCQ_SUCCESS);
  a = NULL;
  TEST_CHECK(nvhcq_physical_destroy(p) == NVHCQ_SUCCESS);
  p = NULL;
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  memset(out, 0, G);
  TEST_CHECK(nvhcq_buffer_read(out, b, 0, G) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(out, in, G) == 0);
done:
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  nvhcq_physical_destroy(p);
  nvhcq_physical_destroy(q);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_reservation_destroy(r) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK_MSG(nvhcq_mock_live().objects == objects, "%u RM objects, %u before",
                 nvhcq_mock_live().objects, objects);
  close_mock(dev);
}

/* IPC handles: a big buffer and a slab block exported, imported through a second open of the GPU
 * (another RM client, as another process would be), mapped and read; bad handles refused. */
static void t_ipc_handles(void) {
  SKIP_WITHOUT_DEVICE_ADDRESS_SPACE();
  enum { G = NVHCQ_PHYSICAL_GRANULARITY };
  nvhcq_device *dev = open_mock_uvm("eager"), *other = NULL;
  if (!dev) return;
  setenv("NVHCQ_UVM", "eager", 1);
  TEST_CHECK_MSG(nvhcq_device_open(0, &other) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  unsetenv("NVHCQ_UVM");
  if (!other) {
    close_mock(dev);
    return;
  }
  static uint8_t in[2 * G], out[2 * G];
  nvhcq_buffer *big = NULL, *small = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 2 * G, NVHCQ_MEMORY_DEVICE, &big) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &small) == NVHCQ_SUCCESS);
  fill(in, 2 * G, 17);
  TEST_CHECK(nvhcq_buffer_write(big, 0, in, 2 * G) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_write(small, 0, in + 5, 4096) == NVHCQ_SUCCESS);
  nvhcq_buffer *bufs[2] = {big, small};
  const uint8_t *want[2] = {in, in + 5};
  for (int i = 0; i < 2; i++) {
    nvhcq_ipc_handle h;
    nvhcq_physical *p = NULL;
    nvhcq_reservation *r = NULL;
    nvhcq_buffer *m = NULL;
    uint64_t offset = 1, size = 0;
    TEST_CHECK_MSG(nvhcq_buffer_export_ipc(bufs[i], &h) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK_MSG(nvhcq_physical_import_ipc(other, &h, &p, &offset, &size) == NVHCQ_SUCCESS, "%s",
                   nvhcq_last_error());
    if (!p) continue;
    uint64_t whole = nvhcq_physical_size(p);
    TEST_CHECK(size == nvhcq_buffer_size(bufs[i]) && offset + size <= whole && whole % G == 0);
    TEST_CHECK(nvhcq_reservation_create(whole, 0, 0, &r) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_map_physical(r, nvhcq_reservation_gpu_address(r), p, 0, whole, &m) ==
               NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_physical_destroy(p) == NVHCQ_SUCCESS); /* the mapping holds it */
    memset(out, 0, size);
    TEST_CHECK(nvhcq_buffer_read(out, m, offset, size) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(memcmp(out, want[i], size) == 0, "buffer %d: the imported bytes differ", i);
    nvhcq_buffer_destroy(m);
    TEST_CHECK(nvhcq_device_cpu_wait_idle(other) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_reservation_destroy(r) == NVHCQ_SUCCESS);
  }
  nvhcq_ipc_handle bad;
  memset(&bad, 0x5a, sizeof bad);
  nvhcq_physical *p = NULL;
  uint64_t offset, size;
  TEST_CHECK(nvhcq_physical_import_ipc(other, &bad, &p, &offset, &size) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(strstr(nvhcq_last_error(), "not one nvhcq_buffer_export_ipc made") != NULL);
  nvhcq_buffer *host = NULL;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_HOST, &host) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_export_ipc(host, &bad) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_buffer_destroy(host);
  nvhcq_buffer_destroy(big);
  nvhcq_buffer_destroy(small);
  TEST_CHECK(nvhcq_device_close(other) == NVHCQ_SUCCESS);
  close_mock(dev);
}

TEST_MAIN(TEST(t_h200_profile), TEST(t_preemption), TEST(t_small_host_buffers), TEST(t_two_gpus),
          TEST(t_other_profiles), TEST(t_copies_every_kind), TEST(t_cross_queue_wait),
          TEST(t_wait_modes), TEST(t_wait_and_write_values), TEST(t_recorded_replay),
          TEST(t_qmd_launch), TEST(t_malformed_stream), TEST(t_driver_checks),
          TEST(t_command_processor_direct), TEST(t_address_spaces),
          TEST(t_move_maps_every_allocation), TEST(t_close_leaves_slow_calls_behind),
          TEST(t_close_frees_forgotten_buffers), TEST(t_rm_only_mapping), TEST(t_register_host),
          TEST(t_physical_mappings), TEST(t_physical_sharing), TEST(t_ipc_handles))
