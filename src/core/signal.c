/* Signals: the device's page of semaphore slots, the signal calls of the API, and
 * nvhcq_wait_value, the one wait (sleep, spin, back off, ring a doorbell the GPU seems not to have
 * heard again) that every wait on the GPU goes through. */
#include "core/signal.h"
#include "util/clock.h"
#include "util/handle.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/device.h"
#include "util/abi.h"

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* A stopped channel never releases: its error says why, and the waiter says what it waited for. */
static nvhcq_status check_faults(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                                 const char *what) {
  nvhcq_status s = nvhcq_device_check_faults(dev);
  if (s)
    return nvhcq_fail_context(s, "%s, waiting for value %llu, holds %llu", what,
                              (unsigned long long)value, (unsigned long long)*value_ptr);
  return NVHCQ_SUCCESS;
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

/* A sleep ends about 50 us late (the kernel's default timer slack): sleeps that should end on time
 * stop this much short of the mark. */
#define SLACK_MS 0.1

/* Once a wait backs off, it looks at the device's channels every millisecond: a doorbell the GPU
 * did not act on leaves entries unfetched, and ringing it again gets them going. */
static void ring_again(nvhcq_device *dev, uint32_t seen_get[2], double *next_look_ms) {
  double now = nvhcq_now_ms();
  if (!dev || now < *next_look_ms) return;
  *next_look_ms = now + 1.0;
  for (int c = 0; c < 2; c++) nvhcq_channel_ring_again(nvhcq_device_channel(dev, c), &seen_get[c]);
}

static nvhcq_status timed_out(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                              uint32_t timeout_ms, const char *what) {
  const char *stall = dev ? nvhcq_device_stall(dev) : "";
  return nvhcq_fail(NVHCQ_ERROR_TIMEOUT,
                    "%s: waited %u ms for value %llu, the signal holds %llu%s%s", what, timeout_ms,
                    (unsigned long long)value, (unsigned long long)*value_ptr,
                    stall[0] ? stall
                             : "; the GPU work before it has not completed (raise "
                               "NVHCQ_TIMEOUT_MS if it is slow)",
                    dev ? nvhcq_device_progress(dev) : "");
}

/* Between looks once the first spin is over (nvhcq_device_set_wait_mode): AUTO and YIELD give
 * the core to any other runnable thread and look again at once, SPIN pauses briefly, BLOCK
 * sleeps 1/32 of the time waited so far (10 us to 1 ms), so that a long wait wakes at most once
 * a millisecond and sees the end at most ~3 % late. */
static void between_looks(uint32_t mode, double waited_ms) {
  if (mode == NVHCQ_WAIT_SPIN) {
    for (int i = 0; i < 32; i++) cpu_relax();
  } else if (mode != NVHCQ_WAIT_BLOCK) {
    sched_yield();
  } else {
    double step_ms = waited_ms / 32;
    sleep_ns((uint64_t)((step_ms < 0.01 ? 0.01 : step_ms > 1.0 ? 1.0 : step_ms) * 1e6));
  }
}

/* How many looks pass between checks for faults, the timeout and unheard doorbells: each check
 * takes the fault lock, which a sleep's wake-up can afford and a poll cannot. */
static uint32_t check_mask(uint32_t mode) {
  return mode == NVHCQ_WAIT_SPIN ? 63u : mode == NVHCQ_WAIT_BLOCK ? 0u : 15u;
}

static nvhcq_status wait_value(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                               uint32_t timeout_ms, uint64_t expect_ns, const char *what) {
  if (__atomic_load_n(value_ptr, __ATOMIC_ACQUIRE) >= value) return NVHCQ_SUCCESS;
  uint32_t mode = dev ? __atomic_load_n(&dev->wait_mode, __ATOMIC_RELAXED) : NVHCQ_WAIT_AUTO;
  double start = nvhcq_now_ms(), expect_ms = expect_ns / 1e6;
  if (expect_ms > timeout_ms) expect_ms = timeout_ms; /* the timeout still ends the wait */
  /* Work known to take a while is slept through, all but its last eighth; spinning from there
   * sees the end within a microsecond, where a sleep would overshoot it by up to a sleep step. */
  if (expect_ms * 7 / 8 > 2 * SLACK_MS) sleep_ns((uint64_t)((expect_ms * 7 / 8 - SLACK_MS) * 1e6));
  /* Spin next: most waits end within microseconds, and a sleep or a yield costs more than that. */
  double spin_ms = mode == NVHCQ_WAIT_YIELD ? 0 : 2.0 + expect_ms * 5 / 4;
  for (uint32_t i = 1;; i++) {
    if (__atomic_load_n(value_ptr, __ATOMIC_ACQUIRE) >= value) return NVHCQ_SUCCESS;
    if ((i & 1023) == 0) {
      if (dev) NVHCQ_TRY(check_faults(dev, value_ptr, value, what));
      if (nvhcq_now_ms() - start > spin_ms) break;
    }
    cpu_relax();
  }
  uint32_t seen_get[2] = {~0u, ~0u}, mask = check_mask(mode);
  double next_look_ms = 0, waited = nvhcq_now_ms() - start;
  for (uint32_t i = 0;; i++) {
    if (__atomic_load_n(value_ptr, __ATOMIC_ACQUIRE) >= value) return NVHCQ_SUCCESS;
    if ((i & mask) == 0) {
      if (dev) NVHCQ_TRY(check_faults(dev, value_ptr, value, what));
      waited = nvhcq_now_ms() - start;
      if (waited > timeout_ms) return timed_out(dev, value_ptr, value, timeout_ms, what);
      ring_again(dev, seen_get, &next_look_ms);
    }
    between_looks(mode, waited);
  }
}

/* Every CPU wait on a device ends here, done or not: what its kernels printed is printed then. */
nvhcq_status nvhcq_wait_value(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                              uint32_t timeout_ms, uint64_t expect_ns, const char *what) {
  nvhcq_status s = wait_value(dev, value_ptr, value, timeout_ms, expect_ns, what);
  nvhcq_device_waited(dev);
  return s;
}

nvhcq_status nvhcq_signal_pool_init(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_memory_alloc(dev, NVHCQ_SIGNAL_SLOTS * NVHCQ_SIGNAL_SLOT_BYTES,
                               NVHCQ_MEMORY_HOST_UNCACHED, NULL, &dev->signal_page));
  dev->free_slots = malloc(NVHCQ_SIGNAL_SLOTS * sizeof *dev->free_slots);
  if (!dev->free_slots) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t i = 0; i < NVHCQ_SIGNAL_SLOTS; i++) dev->free_slots[i] = NVHCQ_SIGNAL_SLOTS - 1 - i;
  dev->free_slot_count = NVHCQ_SIGNAL_SLOTS;
  return NVHCQ_SUCCESS;
}

void nvhcq_signal_pool_fini(nvhcq_device *dev) {
  nvhcq_memory_drop(&dev->signal_page);
  free(dev->free_slots);
  dev->free_slots = NULL;
}

nvhcq_status nvhcq_signal_check(const nvhcq_signal *sig) {
  return nvhcq_handle_check(sig, NVHCQ_SIGNAL_MAGIC, "signal", NULL);
}

nvhcq_status nvhcq_signal_create(nvhcq_device *dev, uint64_t initial, nvhcq_signal **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_signal_create: out is NULL");
  if (dev->free_slot_count == 0)
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                      "GPU %d: all %u signal slots are in use; destroy signals you no longer need",
                      dev->index, NVHCQ_SIGNAL_SLOTS);
  nvhcq_signal *sig = malloc(sizeof *sig);
  if (!sig) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  uint32_t slot = dev->free_slots[--dev->free_slot_count];
  uint64_t offset = (uint64_t)slot * NVHCQ_SIGNAL_SLOT_BYTES;
  *sig =
      (nvhcq_signal){.magic = NVHCQ_SIGNAL_MAGIC,
                     .dev = dev,
                     .slot = slot,
                     .cpu = (volatile uint64_t *)((char *)dev->signal_page->host_pointer + offset),
                     .gpu_address = dev->signal_page->gpu_address + offset};
  sig->cpu[0] = initial;
  sig->cpu[1] = 0;
  *out = sig;
  return NVHCQ_SUCCESS;
}

/* The buffer's 16 bytes at `offset` as a signal: nothing is written, so several signals (in one
 * process or in processes sharing the memory) can be the same semaphore. */
nvhcq_status nvhcq_signal_create_at(nvhcq_buffer *buf, uint64_t offset, nvhcq_signal **out) {
  NVHCQ_TRY(nvhcq_buffer_check(buf, "nvhcq_signal_create_at"));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_signal_create_at: out is NULL");
  if (!buf->host_pointer)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_signal_create_at: the buffer is device memory the CPU cannot read; "
                      "use host memory (NVHCQ_MEMORY_HOST or nvhcq_buffer_register_host)");
  if (offset % NVHCQ_SIGNAL_SLOT_BYTES || offset > buf->size ||
      buf->size - offset < NVHCQ_SIGNAL_SLOT_BYTES)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_signal_create_at: offset %llu must be a multiple of 16 with 16 bytes "
                      "of the %zu-byte buffer from it",
                      (unsigned long long)offset, buf->size);
  nvhcq_signal *sig = malloc(sizeof *sig);
  if (!sig) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *sig = (nvhcq_signal){.magic = NVHCQ_SIGNAL_MAGIC,
                        .dev = buf->dev,
                        .slot = NVHCQ_SIGNAL_NO_SLOT,
                        .cpu = (volatile uint64_t *)((char *)buf->host_pointer + offset),
                        .gpu_address = buf->gpu_address + offset};
  *out = sig;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_signal_destroy(nvhcq_signal *sig) {
  if (!sig) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_signal_check(sig));
  if (sig->slot != NVHCQ_SIGNAL_NO_SLOT)
    sig->dev->free_slots[sig->dev->free_slot_count++] = sig->slot;
  nvhcq_retire(sig);
  return NVHCQ_SUCCESS;
}

/* The accessors check the handle (0 and the message for one that is not a live signal); the
 * library's own signals are read with the unchecked nvhcq_signal_load and friends. The check
 * only reads the handle, so any thread may call them. */
uint64_t nvhcq_signal_value(const nvhcq_signal *sig) {
  return nvhcq_signal_check(sig) ? 0 : nvhcq_signal_load(sig);
}

void nvhcq_signal_set(nvhcq_signal *sig, uint64_t value) {
  if (!nvhcq_signal_check(sig)) nvhcq_signal_store(sig, value);
}

uint64_t nvhcq_signal_timestamp_ns(const nvhcq_signal *sig) {
  return nvhcq_signal_check(sig) ? 0 : nvhcq_signal_stamp(sig);
}

uint64_t nvhcq_signal_gpu_address(const nvhcq_signal *sig) {
  return nvhcq_signal_check(sig) ? 0 : sig->gpu_address;
}

nvhcq_status nvhcq_signal_cpu_wait(nvhcq_signal *sig, uint64_t value, uint32_t timeout_ms) {
  NVHCQ_TRY(nvhcq_signal_check(sig));
  if (nvhcq_signal_load(sig) >= value) {
    nvhcq_device_waited(sig->dev);
    return NVHCQ_SUCCESS;
  }
  char what[64];
  if (sig->slot == NVHCQ_SIGNAL_NO_SLOT)
    snprintf(what, sizeof what, "GPU %d signal at 0x%llx", sig->dev->index,
             (unsigned long long)sig->gpu_address);
  else
    snprintf(what, sizeof what, "GPU %d signal %u", sig->dev->index, sig->slot);
  nvhcq_status s = nvhcq_wait_value(sig->dev, sig->cpu, value,
                                    timeout_ms ? timeout_ms : sig->dev->timeout_ms, 0, what);
  /* Only the device timeout means the GPU is stuck; a wait the caller bounded is just a poll. */
  if (s == NVHCQ_ERROR_TIMEOUT && !timeout_ms) sig->dev->broken = 1;
  return s;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_signal_wait, nvhcq_signal_cpu_wait);
