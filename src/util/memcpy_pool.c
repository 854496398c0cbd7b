/* Large memcpys split over worker threads, which start on first use. */
#include "util/memcpy_pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/align.h"

#define MAX_THREADS  16
#define MIN_PARALLEL (2u << 20) /* below this, waking threads costs more than it saves */
#define PART_ALIGN   4096u

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  unsigned threads; /* workers, not counting the caller */
  unsigned long generation;
  char *dst;
  const char *src;
  size_t n, part;
  unsigned parts, next, remaining;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER; /* one parallel copy at a time */

/* Takes parts until none is left; returns with the lock held. */
static void run_parts(void) {
  while (pool.next < pool.parts) {
    unsigned i = pool.next++;
    pthread_mutex_unlock(&pool.lock);
    size_t off = (size_t)i * pool.part;
    size_t len = pool.n - off < pool.part ? pool.n - off : pool.part;
    memcpy(pool.dst + off, pool.src + off, len);
    pthread_mutex_lock(&pool.lock);
    if (--pool.remaining == 0) pthread_cond_broadcast(&pool.done);
  }
}

static void *worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&pool.lock);
  unsigned long seen = pool.generation;
  for (;;) {
    while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.lock);
    seen = pool.generation;
    run_parts();
  }
  return NULL;
}

static void start_pool(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("NVHCQ_COPY_THREADS");
  long want = env ? strtol(env, NULL, 10) : (cpus > 8 ? 8 : cpus);
  if (want > MAX_THREADS) want = MAX_THREADS;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (long i = 1; i < want; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, worker, NULL) == 0) pool.threads++;
  }
  pthread_attr_destroy(&attr);
}

void nvhcq_parallel_memcpy(void *dst, const void *src, size_t n) {
  if (n < MIN_PARALLEL) {
    memcpy(dst, src, n);
    return;
  }
  pthread_once(&pool_once, start_pool);
  if (pool.threads == 0) {
    memcpy(dst, src, n);
    return;
  }
  pthread_mutex_lock(&call_lock);
  pthread_mutex_lock(&pool.lock);
  unsigned parts = pool.threads + 1;
  pool.part = NVHCQ_ALIGN_UP((n + parts - 1) / parts, (size_t)PART_ALIGN);
  pool.parts = (unsigned)((n + pool.part - 1) / pool.part);
  pool.dst = dst;
  pool.src = src;
  pool.n = n;
  pool.next = 0;
  pool.remaining = pool.parts;
  pool.generation++;
  pthread_cond_broadcast(&pool.wake);
  run_parts();
  while (pool.remaining) pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&call_lock);
}
