/* Signals: 16-byte semaphore slots (value, then GPU timestamp) in one page per device, and the
 * wait every wait on the GPU goes through. */
#ifndef NVHCQ_SIGNAL_H
#define NVHCQ_SIGNAL_H

#include <stdint.h>

#include "util/error.h"

#define NVHCQ_SIGNAL_MAGIC      0x6e767367u /* "nvsg" */
#define NVHCQ_SIGNAL_SLOT_BYTES 16u         /* value (8 bytes), then GPU timestamp (8 bytes) */
#define NVHCQ_SIGNAL_SLOTS      65536u      /* per device */

/* The slot of a signal over memory of the caller's (nvhcq_signal_create_at): none. */
#define NVHCQ_SIGNAL_NO_SLOT 0xffffffffu

struct nvhcq_signal {
  uint32_t magic;
  nvhcq_device *dev;
  uint32_t slot;          /* in the device's signal page, or NVHCQ_SIGNAL_NO_SLOT */
  volatile uint64_t *cpu; /* [0] value, [1] timestamp */
  uint64_t gpu_address;
};

/* Waits for *value_ptr >= value: spins briefly, then polls as the device's wait mode says
 * (yielding, spinning or sleeping in growing steps). With `dev`, a channel fault ends the wait
 * with its report. `expect_ns` (0 if unknown) is the least time the
 * work can take: most of it is slept through before spinning. */
nvhcq_status nvhcq_wait_value(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                              uint32_t timeout_ms, uint64_t expect_ns,
                              const char *what) NVHCQ_MUST_CHECK;

nvhcq_status nvhcq_signal_check(const nvhcq_signal *sig) NVHCQ_MUST_CHECK;

/* A signal's value, set and timestamp without the handle check of the public accessors. */
static inline uint64_t nvhcq_signal_load(const nvhcq_signal *sig) {
  return __atomic_load_n(&sig->cpu[0], __ATOMIC_ACQUIRE);
}
static inline void nvhcq_signal_store(nvhcq_signal *sig, uint64_t value) {
  __atomic_store_n(&sig->cpu[0], value, __ATOMIC_RELEASE);
}
/* The GPU's semaphore timestamps count nanoseconds of its global timer. */
static inline uint64_t nvhcq_signal_stamp(const nvhcq_signal *sig) {
  return sig->cpu[1];
}

/* The device's page of signal slots and its stack of free slots; fini after the last signal. */
nvhcq_status nvhcq_signal_pool_init(nvhcq_device *dev) NVHCQ_MUST_CHECK;
void nvhcq_signal_pool_fini(nvhcq_device *dev);

#endif
