/* Handle checks, and the quarantine that keeps freed objects readable, marked dead, a while. */
#include "util/handle.h"

#include <pthread.h>
#include <stdlib.h>

nvhcq_status nvhcq_handle_check(const void *object, uint32_t want, const char *kind,
                                const char *dead_text) {
  if (!object) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s is NULL", kind);
  uint32_t magic = *(const uint32_t *)object;
  if (magic == want) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "%s %p %s", kind, object,
                    magic != NVHCQ_DEAD_MAGIC ? "was not made by nvhcq"
                    : dead_text               ? dead_text
                                : "was freed already (a use after free or a double free)");
}

#define QUARANTINE 4096

static void *quarantine[QUARANTINE];
static unsigned next;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void nvhcq_retire(void *object) {
  if (!object) return;
  *(volatile uint32_t *)object = NVHCQ_DEAD_MAGIC;
  pthread_mutex_lock(&lock);
  void *oldest = quarantine[next];
  quarantine[next] = object;
  next = (next + 1) % QUARANTINE;
  pthread_mutex_unlock(&lock);
  free(oldest);
}
