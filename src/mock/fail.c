/* Failure injection on the mock driver: the N-th call of a chosen kind (NVHCQ_MOCK_FAIL=<call>
 * [:<nth>], or nvhcq_mock_fail) fails the way the real driver fails it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/internal.h"
#include "mock/mock.h"

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char want[48];    /* "" : nothing injected */
static uint32_t nth;     /* 0: only count */
static uint32_t counted; /* calls that matched since nvhcq_mock_fail */
static char failed[48];  /* the call that was failed */

/* Teardown calls (frees, unregistrations, close, munmap) are not failed by "any": the real
 * driver does not refuse them for want of resources, and nothing could be done about it. */
static int teardown_call(const char *call) {
  return strstr(call, "FREE") || strstr(call, "UNREGISTER") || !strcmp(call, "close") ||
         !strcmp(call, "munmap");
}

void nvhcq_mock_fail(const char *call, uint32_t n) {
  pthread_mutex_lock(&fail_lock);
  snprintf(want, sizeof want, "%s", call ? call : "");
  nth = n;
  counted = 0;
  failed[0] = 0;
  pthread_mutex_unlock(&fail_lock);
}

uint32_t nvhcq_mock_fail_count(void) {
  pthread_mutex_lock(&fail_lock);
  uint32_t n = counted;
  pthread_mutex_unlock(&fail_lock);
  return n;
}

const char *nvhcq_mock_failed_call(void) {
  static _Thread_local char copy[48];
  pthread_mutex_lock(&fail_lock);
  snprintf(copy, sizeof copy, "%s", failed);
  pthread_mutex_unlock(&fail_lock);
  return copy[0] ? copy : NULL;
}

int mock_fail_now(const char *call) {
  pthread_mutex_lock(&fail_lock);
  int match = want[0] && (!strcmp(want, call) || (!strcmp(want, "any") && !teardown_call(call)));
  int fail = match && ++counted == nth;
  if (fail) snprintf(failed, sizeof failed, "%s", call);
  pthread_mutex_unlock(&fail_lock);
  if (fail) fprintf(stderr, "nvhcq mock: failing %s (call %u, NVHCQ_MOCK_FAIL)\n", call, nth);
  return fail;
}

void mock_fail_from_env(void) {
  const char *env = getenv("NVHCQ_MOCK_FAIL");
  if (!env || !*env) return;
  char call[48];
  snprintf(call, sizeof call, "%s", env);
  char *colon = strchr(call, ':');
  uint32_t n = 1;
  if (colon) *colon = 0, n = (uint32_t)strtoul(colon + 1, NULL, 10);
  nvhcq_mock_fail(call, n);
}
