/* Eager queues: creating, resetting and destroying them, recording waits, signals, waits on and
 * writes of memory, and copies, and submitting them to their channel. */
#include "exec/queue.h"
#include "core/peer.h"
#include "core/uvm.h"
#include "exec/profile.h"
#include "util/handle.h"
#include "util/abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- user queues ---- */

nvhcq_status nvhcq_queue_check(const nvhcq_queue *q) {
  return nvhcq_handle_check(q, NVHCQ_QUEUE_MAGIC, "queue", NULL);
}

/* Another device's signal: its signal page (host memory) is mapped into the queue's device once,
 * at the address it has on its own, and the queue waits on or releases it there. */
static nvhcq_status check_signal_for(const nvhcq_queue *q, const nvhcq_signal *sig) {
  NVHCQ_TRY(nvhcq_signal_check(sig));
  if (sig->dev != q->dev && sig->slot == NVHCQ_SIGNAL_NO_SLOT)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "a queue of GPU %d using a signal over a buffer of GPU %d: such signals are "
                      "used by their own GPU's queues; make one over the memory on GPU %d too",
                      q->dev->index, sig->dev->index, q->dev->index);
  if (sig->dev != q->dev) {
    nvhcq_status s = nvhcq_peer_import_signals(q->dev, sig->dev);
    if (s)
      return nvhcq_fail_context(s, "a queue of GPU %d using a signal of GPU %d", q->dev->index,
                                sig->dev->index);
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_create(nvhcq_device *dev, nvhcq_queue_kind kind, nvhcq_queue **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_queue_create: out is NULL");
  if (kind != NVHCQ_QUEUE_COMPUTE && kind != NVHCQ_QUEUE_COPY)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "queue kind %d is unknown; use NVHCQ_QUEUE_COMPUTE or NVHCQ_QUEUE_COPY",
                      kind);
  nvhcq_queue *q = calloc(1, sizeof *q);
  if (!q) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  q->magic = NVHCQ_QUEUE_MAGIC;
  q->dev = dev;
  q->kind = kind;
  q->launch_pending = 1; /* earlier submissions' grids may still run */
  q->args_first = ~0ull;
  q->last_qmd_shadow = q->qmd_shadows[0];
  q->ops = &nvhcq_eager_queue_ops;
  nvhcq_push_init(&q->push);
  *out = q;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_destroy(nvhcq_queue *q) {
  if (!q) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(q->ops->drop(q));
  nvhcq_profile_forget(q);
  nvhcq_push_finish(&q->push);
  nvhcq_retire(q);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_reset(nvhcq_queue *q) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(q->ops->drop(q));
  nvhcq_profile_forget(q);
  nvhcq_push_reset(&q->push);
  nvhcq_queue_end_chain(q);
  q->launch_pending = 1;
  q->cbank_fenced = 0;
  q->args_first = ~0ull;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_queue_record_wait(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(check_signal_for(q, sig));
  nvhcq_push_host_wait(&q->push, sig->gpu_address, value);
  nvhcq_queue_end_chain(q);
  q->cbank_fenced = 0; /* what the wait covers may have rewritten constant memory */
  return q->push.error;
}

nvhcq_status nvhcq_queue_gpu_wait(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value) {
  if (!nvhcq_profiling()) return nvhcq_queue_record_wait(q, sig, value);
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(check_signal_for(q, sig));
  NVHCQ_TRY(nvhcq_profile_begin(q));
  NVHCQ_TRY(nvhcq_queue_record_wait(q, sig, value));
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_WAIT, .value = value});
}

nvhcq_status nvhcq_queue_signal(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value) {
  NVHCQ_TRY(nvhcq_queue_record_signal(q, sig, value));
  if (!nvhcq_profiling()) return NVHCQ_SUCCESS;
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_SIGNAL, .value = value});
}

nvhcq_status nvhcq_queue_record_signal(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(check_signal_for(q, sig));
  if (q->kind == NVHCQ_QUEUE_COPY) {
    nvhcq_push_copy_signal(&q->push, sig->gpu_address, value, q->dev->copy_payload64);
  } else if (!nvhcq_queue_signal_on_qmd(q, sig->gpu_address, value)) {
    nvhcq_push_host_signal(&q->push, sig->gpu_address, value);
    nvhcq_queue_end_chain(q);
    q->launch_pending = 0; /* the release waited for idle */
  }
  return q->push.error;
}

/* ---- waits on and writes of memory ---- */

static nvhcq_status check_value_address(uint64_t address, uint32_t flags, const char *what) {
  uint64_t size = flags & NVHCQ_VALUE_64BIT ? 8 : 4;
  if (address == 0 || address % size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: address 0x%llx is not a GPU address aligned to the %u-byte value; pass "
                      "a %u-byte aligned address of device memory or mapped host memory",
                      what, (unsigned long long)address, (unsigned)size, (unsigned)size);
  return NVHCQ_SUCCESS;
}

/* The host channel's acquire operation of each condition. */
static const uint32_t wait_operation[] = {
    [NVHCQ_WAIT_GEQ] = NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ,
    [NVHCQ_WAIT_EQ] = NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE,
    [NVHCQ_WAIT_AND] = NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND,
    [NVHCQ_WAIT_NOR] = NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR,
};

static nvhcq_status record_wait_value(nvhcq_queue *q, uint64_t address, uint64_t value,
                                      uint32_t flags) {
  nvhcq_push_host_acquire(&q->push, address, value, wait_operation[flags & 0xffu],
                          (flags & NVHCQ_VALUE_64BIT) != 0);
  nvhcq_queue_end_chain(q);
  q->cbank_fenced = 0;
  return q->push.error;
}

nvhcq_status nvhcq_queue_gpu_wait_value(nvhcq_queue *q, uint64_t gpu_address, uint64_t value,
                                        uint32_t flags) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if ((flags & ~(NVHCQ_VALUE_64BIT | 0xffu)) || (flags & 0xffu) > NVHCQ_WAIT_NOR)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_gpu_wait_value: flags 0x%x unknown; use one NVHCQ_WAIT_* "
                      "condition, optionally with NVHCQ_VALUE_64BIT",
                      flags);
  NVHCQ_TRY(check_value_address(gpu_address, flags, "nvhcq_queue_gpu_wait_value"));
  if (!nvhcq_profiling()) return record_wait_value(q, gpu_address, value, flags);
  NVHCQ_TRY(nvhcq_profile_begin(q));
  NVHCQ_TRY(record_wait_value(q, gpu_address, value, flags));
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_WAIT, .value = value});
}

/* The host's release waits for idle: a launch's grid has completed before the value lands, so
 * the write cannot ride on a QMD's release the way a signal may. */
nvhcq_status nvhcq_queue_write_value(nvhcq_queue *q, uint64_t gpu_address, uint64_t value,
                                     uint32_t flags) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (flags & ~NVHCQ_VALUE_64BIT)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_write_value: flags 0x%x unknown; use 0 or NVHCQ_VALUE_64BIT",
                      flags);
  if (q->kind != NVHCQ_QUEUE_COMPUTE)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_queue_write_value needs a compute queue (NVHCQ_QUEUE_COMPUTE); this "
                      "is a copy queue");
  NVHCQ_TRY(check_value_address(gpu_address, flags, "nvhcq_queue_write_value"));
  nvhcq_push_host_write(&q->push, gpu_address, value, (flags & NVHCQ_VALUE_64BIT) != 0);
  nvhcq_queue_end_chain(q);
  q->launch_pending = 0; /* the release waited for idle */
  return q->push.error;
}

nvhcq_status nvhcq_queue_copy(nvhcq_queue *q, uint64_t dst, uint64_t src, uint64_t size) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  if (q->kind != NVHCQ_QUEUE_COPY)
    return nvhcq_fail(
        NVHCQ_ERROR_INVALID_ARGUMENT,
        "nvhcq_queue_copy needs a copy queue (NVHCQ_QUEUE_COPY); this is a compute queue");
  if (size == 0) return NVHCQ_SUCCESS;
  if (dst + size < dst || src + size < src)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "copy of %llu bytes wraps the address space",
                      (unsigned long long)size);
  if (!nvhcq_profiling()) {
    nvhcq_push_copy(&q->push, dst, src, size);
    return q->push.error;
  }
  NVHCQ_TRY(nvhcq_profile_begin(q));
  nvhcq_push_copy(&q->push, dst, src, size);
  NVHCQ_TRY(q->push.error);
  return nvhcq_profile_end(q, &(nvhcq_profile_what){.kind = NVHCQ_PROFILE_COPY, .bytes = size});
}

nvhcq_status nvhcq_queue_submit(nvhcq_queue *q) {
  NVHCQ_TRY(nvhcq_queue_check(q));
  NVHCQ_TRY(q->push.error);
  nvhcq_uvm_poll(q->dev); /* the move onto UVM happens between submissions */
  if (q->dev->broken) return nvhcq_device_cpu_wait_idle(q->dev); /* says why */
  nvhcq_queue_name_last_kernel(q);
  if (!nvhcq_profiling()) return q->ops->submit(q);
  uint64_t t0 = nvhcq_profile_host_ns();
  NVHCQ_TRY(nvhcq_profile_before_submit(q));
  NVHCQ_TRY(q->ops->submit(q));
  return nvhcq_profile_after_submit(q, t0);
}

/* ---- the eager implementation ---- */

static nvhcq_status eager_launch_memory(nvhcq_queue *q, uint32_t bytes, uint8_t **cpu,
                                        uint64_t *gpu) {
  uint64_t pos;
  NVHCQ_TRY(nvhcq_compute_args_alloc(q->dev, bytes, &pos, cpu, gpu));
  if (q->args_first == ~0ull) q->args_first = pos;
  return NVHCQ_SUCCESS;
}

static nvhcq_status eager_submit(nvhcq_queue *q) {
  NVHCQ_TRY(nvhcq_queue_submit_args(q));
  /* The GPU may be running the last QMD now: a later launch must not chain onto it. */
  nvhcq_queue_end_chain(q);
  return nvhcq_channel_submit(nvhcq_device_channel(q->dev, q->kind == NVHCQ_QUEUE_COPY),
                              q->push.words, q->push.len);
}

/* The commands were copied into the channel at submit, the arguments live in the device's ring:
 * nothing of the queue's own outlives a submission. */
static nvhcq_status eager_drop(nvhcq_queue *q) {
  (void)q;
  return NVHCQ_SUCCESS;
}

const nvhcq_queue_ops nvhcq_eager_queue_ops = {
    .launch_memory = eager_launch_memory,
    .submit = eager_submit,
    .drop = eager_drop,
};

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_queue_wait, nvhcq_queue_gpu_wait);
