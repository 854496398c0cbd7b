/* Pushbuffers: method headers and their data appended to a growable dword array, the encoders of
 * the host, copy and compute commands nvhcq sends, and a printer. Pure: no device. */
#ifndef NVHCQ_PUSH_H
#define NVHCQ_PUSH_H

#include <stdint.h>
#include <stdio.h>

#include "abi/methods.h"
#include "util/error.h"

typedef struct nvhcq_push {
  uint32_t *words;
  uint32_t len, capacity;
  nvhcq_status error; /* sticky: the first failure, reported when the push is used */
} nvhcq_push;

static inline uint32_t nvhcq_method_header(unsigned sec_op, unsigned subc, unsigned method,
                                           unsigned count) {
  return (sec_op << 29) | ((count & 0x1fffu) << 16) | ((subc & 7u) << 13) |
         ((method >> 2) & 0xfffu);
}

void nvhcq_push_init(nvhcq_push *p);
void nvhcq_push_finish(nvhcq_push *p);
void nvhcq_push_reset(nvhcq_push *p);
/* Reserves n words and returns where to write them (NULL on allocation failure, made sticky). */
uint32_t *nvhcq_push_space(nvhcq_push *p, uint32_t n);
/* One incrementing method with `n` data words. */
void nvhcq_push_method(nvhcq_push *p, unsigned subc, unsigned method, const uint32_t *data,
                       unsigned n);
/* One method with one data word: inline, as every launch pushes a few. */
static inline void nvhcq_push_method1(nvhcq_push *p, unsigned subc, unsigned method,
                                      uint32_t value) {
  if (p->len + 2 <= p->capacity && !p->error) {
    p->words[p->len] = nvhcq_method_header(NVHCQ_SEC_OP_INC_METHOD, subc, method, 1);
    p->words[p->len + 1] = value;
    p->len += 2;
    return;
  }
  nvhcq_push_method(p, subc, method, &value, 1);
}

/* Host semaphores: wait until the 64-bit value at `address` is >= `value` (circular); release
 * `value` there after the work before it, with a GPU timestamp at address + 8. */
void nvhcq_push_host_wait(nvhcq_push *p, uint64_t address, uint64_t value);
void nvhcq_push_host_signal(nvhcq_push *p, uint64_t address, uint64_t value);
/* Host semaphore acquire with any NVC56F_SEM_EXECUTE_OPERATION_ACQ* condition on the 32-bit (or,
 * with payload64, 64-bit) value at `address`. */
void nvhcq_push_host_acquire(nvhcq_push *p, uint64_t address, uint64_t value, uint32_t operation,
                             int payload64);
/* Host semaphore release of a bare 32- or 64-bit value (no timestamp) once the work before it has
 * completed. */
void nvhcq_push_host_write(nvhcq_push *p, uint64_t address, uint64_t value, int payload64);
/* A copy-engine copy of `size` bytes (in pieces of 2 GiB at most). */
void nvhcq_push_copy(nvhcq_push *p, uint64_t dst, uint64_t src, uint64_t size);
/* The copy engine's release of `value` at `address` (64 bits with payload64), then its time. */
void nvhcq_push_copy_signal(nvhcq_push *p, uint64_t address, uint64_t value, int payload64);
/* Makes the SMs' instruction, data and constant caches forget what they hold. */
void nvhcq_push_invalidate_shader_caches(nvhcq_push *p);

/* Writes a readable listing of a pushbuffer (method names, subchannels, data) to `out`. */
void nvhcq_push_print(FILE *out, const uint32_t *words, uint32_t len);

/* What decoding needs beyond the words: the QMD layout, and where the QMD a SEND_PCAS_A (or a
 * QMD's dependent pointer) names can be read; NULL from qmd_at means it cannot. */
typedef struct nvhcq_push_decode_ctx {
  int qmd_version; /* nvhcq_qmd_version; 0 prints no QMDs */
  const uint32_t *(*qmd_at)(void *user, uint64_t gpu_address);
  void *user;
} nvhcq_push_decode_ctx;
/* nvhcq_push_print, and each QMD launched field by field with the QMDs chained after it
 * (NVHCQ_TRACE=2). */
void nvhcq_push_decode(FILE *out, const uint32_t *words, uint32_t len,
                       const nvhcq_push_decode_ctx *ctx);
/* Name of a method on a subchannel as nvhcq binds them ("SEM_EXECUTE"), or NULL. */
const char *nvhcq_method_name(unsigned subc, unsigned method);

#endif
