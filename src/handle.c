#include "handle.h"

#include <pthread.h>
#include <stdlib.h>

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
