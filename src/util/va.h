/* Virtual address allocator: first fit over a sorted list of free ranges, coalescing on free,
 * thread-safe (one lock per allocator); and the two process-wide ranges buffers live in. */
#ifndef NVHCQ_VA_H
#define NVHCQ_VA_H

#include <pthread.h>
#include <stdint.h>

#include "util/error.h"

typedef struct nvhcq_va_range {
  uint64_t base, size;
} nvhcq_va_range;

typedef struct nvhcq_va {
  pthread_mutex_t lock;
  uint64_t base, size;
  nvhcq_va_range *free; /* sorted by base, never adjacent */
  uint32_t count, capacity;
} nvhcq_va;

nvhcq_status nvhcq_va_init(nvhcq_va *va, uint64_t base, uint64_t size) NVHCQ_MUST_CHECK;
void nvhcq_va_finish(nvhcq_va *va);
/* `align` must be a power of two. */
nvhcq_status nvhcq_va_alloc(nvhcq_va *va, uint64_t size, uint64_t align,
                            uint64_t *addr) NVHCQ_MUST_CHECK;
/* The same without an error: 1 when a range was taken, 0 when none fits (or the request is
 * invalid, or host memory ran out), for callers with other places to look. */
int nvhcq_va_try_alloc(nvhcq_va *va, uint64_t size, uint64_t align, uint64_t *addr);
/* Takes the part of [addr, addr + size) that lies in the allocator's span, at that address (for
 * memory whose address is given, not chosen). 1 when it was free and is taken now, or when no part
 * lies in the span (*taken_size 0); 0 when some of it is in use (or host memory ran out). */
int nvhcq_va_take_at(nvhcq_va *va, uint64_t addr, uint64_t size, uint64_t *taken_base,
                     uint64_t *taken_size);
/* Returns a range given by nvhcq_va_alloc. Returns INVALID_ARGUMENT for ranges not allocated. */
nvhcq_status nvhcq_va_free(nvhcq_va *va, uint64_t addr, uint64_t size);
/* Bytes currently free (tests, leak checks). */
uint64_t nvhcq_va_free_bytes(nvhcq_va *va);

/* The process-wide address ranges: CPU-visible allocations (below 2^40, reserved in this
 * process so nothing else lands there) and GPU-only allocations. */
nvhcq_va *nvhcq_va_low(void);
nvhcq_va *nvhcq_va_high(void);
nvhcq_status nvhcq_va_ranges_init(void) NVHCQ_MUST_CHECK;
/* Gives a low range back to the CPU reservation (after its mapping is gone). */
void nvhcq_low_unmap(uint64_t addr, uint64_t size);

#endif
