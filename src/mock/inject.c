/* GPU-side failure injection on the mock: the nth kernel, copy, access of a page or doorbell goes
 * wrong the way it does on a real GPU (NVHCQ_MOCK_GPU_FAIL=<event>[:<nth>][@<address>], or
 * nvhcq_mock_gpu_fail); the command processor and the grid runner ask here. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/internal.h"
#include "mock/mock.h"

static const struct {
  const char *name;
  int event;
} events[] = {
    {"mmu_kernel", MOCK_INJECT_MMU_KERNEL},
    {"mmu_copy", MOCK_INJECT_MMU_COPY},
    {"mmu_address", MOCK_INJECT_MMU_ADDRESS},
    {"xid_gr", MOCK_INJECT_XID_GR},
    {"xid_ce", MOCK_INJECT_XID_CE},
    {"doorbell", MOCK_INJECT_DOORBELL},
    {"doorbell_stuck", MOCK_INJECT_DOORBELL_STUCK},
};

static pthread_mutex_t inject_lock = PTHREAD_MUTEX_INITIALIZER;
static int armed;        /* MOCK_INJECT_*, read without the lock on the fast paths */
static uint32_t nth;     /* which occurrence fires, from 1 */
static uint32_t counted; /* occurrences since arming */
static uint64_t page;    /* mmu_address: the page's first byte */
static nvhcq_mock_injected report;

_Thread_local int mock_on_engine;

static int event_of(const char *name) {
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    if (!strcmp(events[i].name, name)) return events[i].event;
  return MOCK_INJECT_NONE;
}

static const char *name_of(int event) {
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
    if (events[i].event == event) return events[i].name;
  return "nothing";
}

int nvhcq_mock_gpu_fail(const char *event, uint32_t n, uint64_t address) {
  int e = event ? event_of(event) : MOCK_INJECT_NONE;
  if (event && e == MOCK_INJECT_NONE) return -1;
  pthread_mutex_lock(&inject_lock);
  nth = n ? n : 1;
  counted = 0;
  page = address & ~4095ull;
  memset(&report, 0, sizeof report);
  __atomic_store_n(&armed, e, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&inject_lock);
  /* A lost doorbell is told from one rung again by the token reappearing in the doorbell word. */
  if (e == MOCK_INJECT_DOORBELL) mock_doorbells_clear();
  return 0;
}

int nvhcq_mock_gpu_fail_parse(const char *spec) {
  char name[32];
  size_t len = strcspn(spec, ":@");
  if (len >= sizeof name) return -1;
  memcpy(name, spec, len);
  name[len] = 0;
  uint32_t n = 1;
  uint64_t address = 0;
  const char *at = spec + len;
  char *end = (char *)at;
  if (*at == ':') n = (uint32_t)strtoul(at + 1, &end, 10);
  if (*end == '@') address = strtoull(end + 1, &end, 0);
  if (*end || !n || (event_of(name) == MOCK_INJECT_MMU_ADDRESS && !address)) return -1;
  return nvhcq_mock_gpu_fail(name, n, address);
}

void mock_gpu_fail_from_env(void) {
  const char *env = getenv("NVHCQ_MOCK_GPU_FAIL");
  if (env && *env && nvhcq_mock_gpu_fail_parse(env))
    fprintf(stderr,
            "nvhcq mock: NVHCQ_MOCK_GPU_FAIL=%s is not <event>[:<nth>][@<address>] with event "
            "mmu_kernel, mmu_copy, mmu_address (needs @address), xid_gr, xid_ce, doorbell or "
            "doorbell_stuck; nothing is injected\n",
            env);
}

nvhcq_mock_injected nvhcq_mock_gpu_fail_status(void) {
  pthread_mutex_lock(&inject_lock);
  nvhcq_mock_injected r = report;
  pthread_mutex_unlock(&inject_lock);
  return r;
}

/* Counts an occurrence of one of the two events `a` and `b`; the armed one if this is the nth. */
static int occurs(int a, int b) {
  int e = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);
  if (e == MOCK_INJECT_NONE || (e != a && e != b)) return MOCK_INJECT_NONE;
  pthread_mutex_lock(&inject_lock);
  int fire = armed == e && ++counted == nth;
  if (fire) {
    armed = MOCK_INJECT_NONE;
    report.fired = 1;
  }
  pthread_mutex_unlock(&inject_lock);
  if (fire) fprintf(stderr, "nvhcq mock: injecting %s (occurrence %u)\n", name_of(e), nth);
  return fire ? e : MOCK_INJECT_NONE;
}

int mock_inject_grid(void) {
  return occurs(MOCK_INJECT_MMU_KERNEL, MOCK_INJECT_XID_GR);
}

int mock_inject_copy(void) {
  return occurs(MOCK_INJECT_MMU_COPY, MOCK_INJECT_XID_CE);
}

int mock_inject_doorbell(void) {
  return occurs(MOCK_INJECT_DOORBELL, MOCK_INJECT_DOORBELL_STUCK);
}

int mock_inject_access(uint64_t va, uint64_t len) {
  if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) != MOCK_INJECT_MMU_ADDRESS || !mock_on_engine)
    return 0;
  pthread_mutex_lock(&inject_lock);
  int touches = va < page + 4096 && page < va + len;
  pthread_mutex_unlock(&inject_lock);
  return touches && occurs(MOCK_INJECT_MMU_ADDRESS, MOCK_INJECT_MMU_ADDRESS);
}

void mock_inject_resumed(int rung_again) {
  pthread_mutex_lock(&inject_lock);
  if (rung_again)
    report.rung_again++;
  else
    report.later_put++;
  pthread_mutex_unlock(&inject_lock);
}
