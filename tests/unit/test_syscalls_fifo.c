/* The printf FIFO's host side on the mock GPU: the test writes records into the ring as
 * src/exec/syscalls.cu does (reservations on the state's tail, pad records at the wrap, the size
 * stored last), and the drain must print each once, in order, only once it is ready, from any
 * number of threads; assertions reach the fault report and a recovery skips what stopped kernels
 * left unfinished. The mock runs no syscalls itself, so this is the test of the drain. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_test.h"
#include "core/device.h"
#include "exec/builtin.h"
#include "exec/syscalls.h"
#include "exec/syscalls_abi.h"
#include "hw/elf.h"

typedef struct fifo_view {
  uint8_t *ring;
  uint64_t cap;
  nvhcq_sys_fifo *fifo;
  nvhcq_sys_state *state;
} fifo_view;

#define MAX_GOT 200000
static char *got[MAX_GOT];
static int got_assert[MAX_GOT];
static int got_count;

static void capture(void *user, const char *text, size_t length, int is_assert) {
  (void)user;
  if (got_count >= MAX_GOT) return;
  got[got_count] = strndup(text, length);
  got_assert[got_count] = is_assert;
  __atomic_store_n(&got_count, got_count + 1, __ATOMIC_RELEASE); /* the drainers poll it */
}

static void forget(void) {
  for (int i = 0; i < got_count; i++) free(got[i]);
  got_count = 0;
}

/* Where the build put tests/device/syscalls_test.cu's cubin (NVHCQ_TEST_CUBIN_DIR overrides). */
static void callers_path(char *path, size_t size) {
  const char *dir = getenv("NVHCQ_TEST_CUBIN_DIR");
  snprintf(path, size, "%s/syscalls_test_sm_90.cubin", dir ? dir : NVHCQ_TEST_CUBIN_DEFAULT);
}

/* The mock device with the syscalls made (a module that calls them loaded) and the FIFO's view;
 * NULL with *missing set when the build has no such cubin (no nvcc). */
static nvhcq_module *load_callers(nvhcq_device *dev, uint64_t fifo_size, fifo_view *v,
                                  int *missing) {
  char path[512];
  nvhcq_module *m = NULL;
  callers_path(path, sizeof path);
  *missing = access(path, R_OK) != 0;
  if (*missing) return NULL;
  if (fifo_size)
    TEST_CHECK(nvhcq_device_set_limit(dev, NVHCQ_LIMIT_PRINTF_FIFO_SIZE, fifo_size) == 0);
  TEST_CHECK(nvhcq_device_set_print_callback(dev, capture, NULL) == NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_module_load_file(dev, path, &m);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  if (s) return NULL;
  v->ring = nvhcq_syscalls_test_fifo(dev, &v->cap, &v->fifo, &v->state);
  TEST_CHECK(v->ring != NULL);
  return v->ring ? m : NULL;
}

#define NEED_CALLERS(dev, fifo_size, view, m)                                                      \
  NEED_MOCK_DEVICE(dev);                                                                           \
  fifo_view view;                                                                                  \
  int missing_;                                                                                    \
  nvhcq_module *m = load_callers(dev, fifo_size, &view, &missing_);                                \
  if (!m) {                                                                                        \
    close_mock(dev);                                                                               \
    if (missing_) TEST_SKIP("no syscalls_test_sm_90.cubin: the build had no nvcc");                \
    return;                                                                                        \
  }

/* syscalls.cu's reserve: room for `size` bytes, never across the ring's end, or NULL when full. */
static uint8_t *reserve(fifo_view *v, uint32_t size) {
  uint64_t t = __atomic_load_n(&v->state->tail, __ATOMIC_RELAXED), at, skip;
  for (;;) {
    at = t & (v->cap - 1);
    skip = at + size > v->cap ? v->cap - at : 0;
    if (t + skip + size - __atomic_load_n(&v->fifo->head, __ATOMIC_ACQUIRE) > v->cap) {
      __atomic_fetch_add(&v->state->dropped, 1, __ATOMIC_RELAXED);
      return NULL;
    }
    if (__atomic_compare_exchange_n(&v->state->tail, &t, t + skip + size, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
      break;
  }
  if (skip) {
    ((nvhcq_sys_record *)(v->ring + at))->kind = NVHCQ_SYS_PAD;
    __atomic_store_n((uint32_t *)(v->ring + at), (uint32_t)skip, __ATOMIC_RELEASE);
  }
  return v->ring + ((t + skip) & (v->cap - 1));
}

static void publish(uint8_t *rec, uint32_t size) {
  __atomic_store_n((uint32_t *)rec, size, __ATOMIC_RELEASE);
}

/* printf("w%d:%d%s\n", writer, seq, pad) as a record: two int slots and one string. */
static uint32_t record_size(const char *pad) {
  uint32_t flen = (uint32_t)strlen("w%d:%d%s\n");
  return (16 + 3 * 8 + flen + 1 + (uint32_t)strlen(pad) + 1 + 15) & ~15u;
}

static uint8_t *write_record(fifo_view *v, int writer, int seq, const char *pad, int ready) {
  const char *fmt = "w%d:%d%s\n";
  uint32_t size = record_size(pad), flen = (uint32_t)strlen(fmt);
  uint8_t *rec = reserve(v, size);
  if (!rec) return NULL;
  nvhcq_sys_record h = {0, NVHCQ_SYS_PRINTF, 3, flen};
  uint64_t slots[3] = {(uint32_t)writer, (uint32_t)seq, 16 + 24 + flen + 1};
  memcpy(rec + 4, (uint8_t *)&h + 4, 12);
  memcpy(rec + 16, slots, sizeof slots);
  memcpy(rec + 16 + 24, fmt, flen + 1);
  memcpy(rec + 16 + 24 + flen + 1, pad, strlen(pad) + 1);
  if (ready) publish(rec, size);
  return rec;
}

/* Printed once ready, in reservation order, never twice. */
static void test_order_and_readiness(void) {
  NEED_CALLERS(dev, 0, v, m);
  forget();
  uint8_t *a = write_record(&v, 0, 1, "", 1), *b = write_record(&v, 0, 2, "", 0);
  uint8_t *c = write_record(&v, 0, 3, "", 1);
  TEST_CHECK(a && b && c);
  uint64_t dropped = 1;
  TEST_CHECK(nvhcq_device_print_flush(dev, &dropped) == NVHCQ_SUCCESS && dropped == 0);
  TEST_CHECK(got_count == 1 && !strcmp(got[0], "w0:1\n"));
  if (b) publish(b, record_size(""));
  TEST_CHECK(nvhcq_device_print_flush(dev, NULL) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_cpu_wait_idle(dev) == NVHCQ_SUCCESS); /* a wait drains too */
  TEST_CHECK(got_count == 3 && !strcmp(got[1], "w0:2\n") && !strcmp(got[2], "w0:3\n"));
  forget();
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* A 4 KiB ring lapped many times with records of every size: pads at the end, all in order. */
static void test_wrap(void) {
  NEED_CALLERS(dev, 4096, v, m);
  TEST_CHECK(v.cap == 4096);
  forget();
  static const char padding[] = "................................................................"
                                "................................................................";
  int seq = 0;
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 7; i++, seq++)
      TEST_CHECK(write_record(&v, 1, seq, padding + (seq * 37) % (sizeof padding - 1), 1));
    TEST_CHECK(nvhcq_device_print_flush(dev, NULL) == NVHCQ_SUCCESS);
  }
  TEST_CHECK_MSG(got_count == seq, "%d of %d printed", got_count, seq);
  for (int i = 0; i < got_count && i < seq; i++) {
    char want[256];
    snprintf(want, sizeof want, "w1:%d%s\n", i, padding + (i * 37) % (sizeof padding - 1));
    TEST_CHECK_MSG(!strcmp(got[i], want), "record %d: %s", i, got[i]);
  }
  forget();
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* A full ring drops and counts; once drained, records fit again. */
static void test_full_ring_drops(void) {
  NEED_CALLERS(dev, 4096, v, m);
  forget();
  int written = 0, dropped_here = 0;
  for (int i = 0; i < 1000; i++)
    if (write_record(&v, 2, i, "", 1))
      written++;
    else
      dropped_here++;
  uint64_t dropped = 0;
  TEST_CHECK(nvhcq_device_print_flush(dev, &dropped) == NVHCQ_SUCCESS);
  TEST_CHECK(dropped_here > 0 && dropped == (uint64_t)dropped_here && got_count == written);
  TEST_CHECK(write_record(&v, 2, 1000, "", 1) != NULL);
  forget();
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* Two writers (the GPU's threads) and two drains at once: each record printed exactly once, each
 * writer's in its order. */
#define PER_WRITER 20000
static fifo_view *shared_view;
static nvhcq_device *shared_dev;
static int writers_done;

/* The writers and drainers yield when they find nothing to do: four spinning threads on two
 * cores (or under valgrind, which runs one thread at a time) otherwise starve the one that
 * would make progress, and the case took from seconds to half an hour under CI's valgrind. */
static void *writer(void *arg) {
  int w = (int)(intptr_t)arg;
  for (int seq = 0; seq < PER_WRITER;)
    if (write_record(shared_view, w, seq, "", 1))
      seq++;
    else
      sched_yield(); /* the ring is full */
  __atomic_fetch_add(&writers_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void *drainer(void *arg) {
  (void)arg;
  while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < 2 ||
         __atomic_load_n(&got_count, __ATOMIC_ACQUIRE) < 2 * PER_WRITER) {
    if (nvhcq_device_print_flush(shared_dev, NULL)) break;
    sched_yield();
  }
  return NULL;
}

static void test_concurrent_drains(void) {
  NEED_CALLERS(dev, 1 << 16, v, m);
  forget();
  shared_view = &v, shared_dev = dev, writers_done = 0;
  pthread_t t[4];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i);
  for (int i = 2; i < 4; i++) pthread_create(&t[i], NULL, drainer, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  TEST_CHECK_MSG(got_count == 2 * PER_WRITER, "%d printed", got_count);
  int next[2] = {0, 0}, bad = 0;
  for (int i = 0; i < got_count; i++) {
    int w = -1, seq = -1;
    if (sscanf(got[i], "w%d:%d", &w, &seq) != 2 || w < 0 || w > 1 || seq != next[w]++) bad++;
  }
  TEST_CHECK_MSG(bad == 0, "%d records out of order or repeated", bad);
  forget();
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* An assert record: CUDA's line on the assert stream, the text for the fault report; a recovery
 * forgets it and skips a record left unfinished. */
static void test_assert_and_recovery(void) {
  NEED_CALLERS(dev, 0, v, m);
  forget();
  const char *strings[3] = {"x == 0", "k.cu", "void k(int)"};
  uint32_t at = 16 + sizeof(nvhcq_sys_assert), size = (at + 3 * 256 + 15) & ~15u;
  uint8_t *rec = reserve(&v, size);
  TEST_CHECK(rec != NULL);
  if (rec) {
    nvhcq_sys_assert a = {.line = 7, .block = {2, 0, 0}, .thread = {5, 1, 0}};
    uint32_t *offsets[3] = {&a.message, &a.file, &a.function};
    for (int i = 0; i < 3; i++) {
      *offsets[i] = at;
      memcpy(rec + at, strings[i], strlen(strings[i]) + 1);
      at += (uint32_t)strlen(strings[i]) + 1;
    }
    nvhcq_sys_record h = {0, NVHCQ_SYS_ASSERT, 0, 0};
    memcpy(rec + 4, (uint8_t *)&h + 4, 12);
    memcpy(rec + 16, &a, sizeof a);
    publish(rec, size);
  }
  char why[512];
  nvhcq_syscalls_explain(dev, why, sizeof why);
  const char *line = "k.cu:7: void k(int): block: [2,0,0], thread: [5,1,0] Assertion `x == 0` "
                     "failed.";
  TEST_CHECK_MSG(!strncmp(why, "device-side assertion failed: ", 30) && strstr(why, line), "%s",
                 why);
  TEST_CHECK(got_count == 1 && got_assert[0] && !strncmp(got[0], line, strlen(line)));
  TEST_CHECK(write_record(&v, 3, 0, "", 0) != NULL); /* a kernel stopped mid-printf */
  TEST_CHECK_MSG(nvhcq_device_recover(dev) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_syscalls_explain(dev, why, sizeof why);
  TEST_CHECK(why[0] == '\0');
  forget();
  TEST_CHECK(write_record(&v, 3, 1, "", 1) != NULL);
  TEST_CHECK(nvhcq_device_print_flush(dev, NULL) == NVHCQ_SUCCESS);
  TEST_CHECK(got_count == 1 && !strcmp(got[0], "w3:1\n"));
  forget();
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

/* The syscall's frame, from the embedded module for sm_90 (what the mock GPU is). */
static uint32_t frame_of(const char *name) {
  for (const nvhcq_builtin_cubin *b = nvhcq_syscall_cubins; b->sm; b++) {
    nvhcq_cubin *c = NULL;
    if (b->sm != 90 || nvhcq_cubin_parse(b->data, b->size, &c)) continue;
    const nvhcq_cubin_function *f = nvhcq_cubin_find_function(c, name);
    uint32_t frame = f ? f->frame_size : 0;
    nvhcq_cubin_free(c);
    return frame;
  }
  return 0;
}

/* A kernel calling syscalls runs with at least their 24 registers and room for their frames. */
static void test_callers_raised(void) {
  NEED_CALLERS(dev, 0, v, m);
  static const struct {
    const char *kernel, *callee;
  } cases[] = {{"print_all", "nvhcq_sys_vprintf"},
               {"assert_one", "nvhcq_sys___assertfail"},
               {"heap_rounds", "nvhcq_sys_malloc"}};
  char path[512];
  callers_path(path, sizeof path);
  size_t size = 0;
  void *file = test_read_file(path, &size);
  nvhcq_cubin *c = NULL;
  TEST_CHECK(file && nvhcq_cubin_parse(file, size, &c) == NVHCQ_SUCCESS);
  for (size_t i = 0; c && i < sizeof cases / sizeof *cases; i++) {
    const nvhcq_cubin_kernel *k = nvhcq_cubin_find_kernel(c, cases[i].kernel);
    nvhcq_kernel *kn = NULL;
    nvhcq_kernel_info info = {.struct_size = sizeof info};
    TEST_CHECK(nvhcq_module_get_kernel(m, cases[i].kernel, &kn) == NVHCQ_SUCCESS &&
               nvhcq_kernel_query_info(kn, &info) == NVHCQ_SUCCESS);
    uint32_t frame = frame_of(cases[i].callee);
    /* its own stack and the callee's frame, at least the 1 KiB stack libcuda gives kernels */
    uint32_t stack = k ? k->min_stack_size + frame : 0;
    if (stack < 1024) stack = 1024;
    TEST_CHECK_MSG(k && info.registers >= 24 && info.registers >= k->registers, "%s: %u registers",
                   cases[i].kernel, info.registers);
    TEST_CHECK_MSG(k && info.local_bytes == stack,
                   "%s: %u bytes of local memory, its own stack %u and %s's frame %u",
                   cases[i].kernel, info.local_bytes, k ? k->min_stack_size : 0, cases[i].callee,
                   frame);
  }
  TEST_CHECK(frame_of("nvhcq_sys_vprintf") > 0);
  nvhcq_cubin_free(c);
  free(file);
  TEST_CHECK(nvhcq_module_unload(m) == NVHCQ_SUCCESS);
  close_mock(dev);
}

TEST_MAIN(TEST(test_order_and_readiness), TEST(test_callers_raised), TEST(test_wrap),
          TEST(test_full_ring_drops), TEST(test_concurrent_drains), TEST(test_assert_and_recovery))
