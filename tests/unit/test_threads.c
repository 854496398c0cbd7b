/* What nvhcq promises across threads, checked under ThreadSanitizer in CI: the address
 * allocators, the copy thread pool and per-thread error messages are safe to use at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "memcpy_pool.h"
#include "test.h"
#include "va.h"

#define THREADS 6
#define ALLOCS  400

static nvhcq_va shared_va;
static uint64_t got[THREADS][ALLOCS];

static void *va_worker(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < ALLOCS; i++)
      if (nvhcq_va_alloc(&shared_va, 0x1000, 0x1000, &got[t][i])) got[t][i] = 0;
    if (round < 2)
      for (int i = 0; i < ALLOCS; i++)
        if (got[t][i]) (void)!nvhcq_va_free(&shared_va, got[t][i], 0x1000);
  }
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void t_address_allocator(void) {
  TEST_CHECK(nvhcq_va_init(&shared_va, 0x100000, (uint64_t)THREADS * ALLOCS * 0x1000) ==
             NVHCQ_SUCCESS);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, va_worker, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  uint64_t *all = malloc(sizeof got);
  memcpy(all, got, sizeof got);
  qsort(all, THREADS * ALLOCS, sizeof *all, cmp_u64);
  int zero = 0, dup = 0;
  for (int i = 0; i < THREADS * ALLOCS; i++) {
    zero += all[i] == 0;
    if (i && all[i] == all[i - 1]) dup++;
  }
  TEST_CHECK_MSG(zero == 0 && dup == 0, "%d failed, %d handed out twice", zero, dup);
  TEST_CHECK(nvhcq_va_free_bytes(&shared_va) == 0); /* exactly full */
  free(all);
  nvhcq_va_finish(&shared_va);
}

static void *copy_worker(void *arg) {
  size_t n = (8u << 20) + (size_t)(intptr_t)arg * 4099;
  unsigned char *src = malloc(n), *dst = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 31 + (size_t)(intptr_t)arg);
  nvhcq_parallel_memcpy(dst, src, n);
  intptr_t ok = memcmp(src, dst, n) == 0;
  free(src), free(dst);
  return (void *)ok;
}

static void t_parallel_memcpy(void) {
  pthread_t th[4];
  for (intptr_t t = 0; t < 4; t++) pthread_create(&th[t], NULL, copy_worker, (void *)t);
  for (int t = 0; t < 4; t++) {
    void *ok;
    pthread_join(th[t], &ok);
    TEST_CHECK(ok != NULL);
  }
}

static void *error_worker(void *arg) {
  char want[64];
  snprintf(want, sizeof want, "thread %d", (int)(intptr_t)arg);
  for (int i = 0; i < 1000; i++) {
    nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "thread %d", (int)(intptr_t)arg);
    if (strcmp(nvhcq_last_error(), want)) return NULL;
  }
  return (void *)1;
}

static void t_error_messages_per_thread(void) {
  pthread_t th[THREADS];
  for (intptr_t t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, error_worker, (void *)t);
  for (int t = 0; t < THREADS; t++) {
    void *ok;
    pthread_join(th[t], &ok);
    TEST_CHECK(ok != NULL);
  }
}

TEST_MAIN(TEST(t_address_allocator), TEST(t_parallel_memcpy), TEST(t_error_messages_per_thread))
