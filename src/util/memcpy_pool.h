/* memcpy spread over a few threads: one core cannot saturate a pinned staging buffer. */
#ifndef NVHCQ_MEMCPY_POOL_H
#define NVHCQ_MEMCPY_POOL_H

#include <stddef.h>

/* Copies like memcpy; large copies are split across worker threads (started on first use,
 * NVHCQ_COPY_THREADS sets how many, 1 turns the pool off). */
void nvhcq_parallel_memcpy(void *dst, const void *src, size_t n);

#endif
