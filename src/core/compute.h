/* A device's compute state: QMD version, SM limits and debug switches, the shader windows and
 * the driver words of constant bank 0, the shader local memory and the kernel-argument ring. */
#ifndef NVHCQ_COMPUTE_H
#define NVHCQ_COMPUTE_H

#include <stdint.h>

#include "hw/push.h"
#include "util/error.h"

/* NVHCQ_DEBUG_FENCE values (launch.c says what each does). */
enum {
  NVHCQ_DEBUG_FENCE_OFF,
  NVHCQ_DEBUG_FENCE_UNORDERED,
  NVHCQ_DEBUG_FENCE_NOMEMBAR,
  NVHCQ_DEBUG_FENCE_SYSTEM,
};

/* From the compute class and the GPU's facts: QMD version, limits, bank-0 prefix, debug knobs. */
void nvhcq_compute_init(nvhcq_device *dev);
/* Frees the local memory and the argument ring. */
void nvhcq_compute_fini(nvhcq_device *dev);
/* Points the compute engine at the shader windows and at the local memory, if any yet. */
void nvhcq_compute_push_state(nvhcq_device *dev, nvhcq_push *p);
/* Grows the local memory every SM's threads use for stacks to `bytes` per thread; waits for the
 * device first (only between kernels). */
nvhcq_status nvhcq_compute_ensure_local_memory(nvhcq_device *dev, uint32_t bytes) NVHCQ_MUST_CHECK;
/* `bytes` of the argument ring at monotonic position *pos, CPU and GPU addresses. */
nvhcq_status nvhcq_compute_args_alloc(nvhcq_device *dev, uint32_t bytes, uint64_t *pos,
                                      uint8_t **cpu, uint64_t *gpu) NVHCQ_MUST_CHECK;
/* At submission of work whose arguments start at ring position `first`: refuses it if the ring
 * has reused them since, and keeps the ring from reusing them before this work completes. */
nvhcq_status nvhcq_compute_args_keep(nvhcq_device *dev, uint64_t first) NVHCQ_MUST_CHECK;

#endif
