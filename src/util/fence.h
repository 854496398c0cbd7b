/* The store fence before the GPU is told about memory the CPU wrote through write-combined
 * mappings (commands, GPFIFO entries, GP_PUT) and before the doorbell. */
#ifndef NVHCQ_FENCE_H
#define NVHCQ_FENCE_H

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NVHCQ_FENCE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define NVHCQ_FENCE_TSAN 1
#endif

/* On x86-64 SFENCE is the fence write-combining needs: it drains the write-combining buffers and
 * orders every earlier store before every later one, uncached stores (the doorbell) included;
 * MFENCE also waits for loads, which nothing here needs. Elsewhere, and under ThreadSanitizer
 * (which does not see inline fences), a sequentially consistent fence. */
static inline void nvhcq_store_fence(void) {
#if defined(__x86_64__) && !defined(NVHCQ_FENCE_TSAN)
  __asm__ volatile("sfence" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif
