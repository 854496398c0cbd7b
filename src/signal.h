#ifndef NVHCQ_SIGNAL_H
#define NVHCQ_SIGNAL_H

#include <stdint.h>

#include "error.h"

#define NVHCQ_SIGNAL_MAGIC      0x6e767367u /* "nvsg" */
#define NVHCQ_SIGNAL_SLOT_BYTES 16u         /* value (8 bytes), then GPU timestamp (8 bytes) */

struct nvhcq_signal {
  uint32_t magic;
  nvhcq_device *dev;
  uint32_t slot;
  volatile uint64_t *cpu; /* [0] value, [1] timestamp */
  uint64_t gpu_address;
};

/* Waits for *value_ptr >= value: spins briefly, then sleeps in growing steps. `check` (may be
 * NULL) is called while sleeping and can end the wait with an error (e.g. a channel fault). */
nvhcq_status nvhcq_wait_value(nvhcq_device *dev, volatile uint64_t *value_ptr, uint64_t value,
                              uint32_t timeout_ms, const char *what) NVHCQ_MUST_CHECK;

nvhcq_status nvhcq_signal_check(const nvhcq_signal *sig) NVHCQ_MUST_CHECK;

#endif
