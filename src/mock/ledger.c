/* The mock GPUs' memory figures: this process's own, or with NVHCQ_MOCK_SHARED_FB=<file> those of
 * every live process that names the same file, as the processes of one machine share its GPUs
 * (and the driver frees a process's memory when the process dies). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mock/internal.h"

#define LEDGER_SLOTS 64

/* One process's device memory per GPU; pid 0 is a free slot. Each process writes its own. */
typedef struct ledger_slot {
  int32_t pid;
  uint32_t pad;
  uint64_t used[MOCK_MAX_GPUS];
} ledger_slot;

static ledger_slot *ledger; /* NULL: figures of this process alone */
static pthread_once_t ledger_once = PTHREAD_ONCE_INIT;

static void map_ledger(void) {
  const char *path = getenv("NVHCQ_MOCK_SHARED_FB");
  if (!path || !*path) return;
  size_t size = LEDGER_SLOTS * sizeof(ledger_slot);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  void *at = fd >= 0 && ftruncate(fd, (off_t)size) == 0
                 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                 : MAP_FAILED;
  if (fd >= 0) close(fd);
  if (at == MAP_FAILED)
    fprintf(stderr, "nvhcq mock: NVHCQ_MOCK_SHARED_FB=%s: %s; memory figures are this process's\n",
            path, strerror(errno));
  else
    ledger = at;
}

/* A process the driver would still hold memory for: it exists and is not a zombie. */
static int alive(int32_t pid) {
  if (pid <= 0 || (kill(pid, 0) && errno != EPERM)) return 0;
  char path[32], stat[128] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  stat[n] = 0;
  const char *state = strrchr(stat, ')');
  return !(state && state[1] == ' ' && state[2] == 'Z');
}

/* This process's slot: its own, else a free one or a dead process's. */
static ledger_slot *my_slot(void) {
  int32_t me = (int32_t)getpid();
  for (int i = 0; i < LEDGER_SLOTS; i++)
    if (__atomic_load_n(&ledger[i].pid, __ATOMIC_ACQUIRE) == me) return &ledger[i];
  for (int i = 0; i < LEDGER_SLOTS; i++) {
    int32_t was = __atomic_load_n(&ledger[i].pid, __ATOMIC_ACQUIRE);
    if ((was == 0 || !alive(was)) &&
        __atomic_compare_exchange_n(&ledger[i].pid, &was, me, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      for (int g = 0; g < MOCK_MAX_GPUS; g++)
        __atomic_store_n(&ledger[i].used[g], 0, __ATOMIC_RELEASE);
      return &ledger[i];
    }
  }
  return NULL;
}

void mock_vidmem_add(uint32_t gpu, int64_t delta) {
  pthread_once(&ledger_once, map_ledger);
  nvhcq_mock.vidmem_used[gpu] += (uint64_t)delta;
  ledger_slot *s = ledger ? my_slot() : NULL;
  if (s) __atomic_store_n(&s->used[gpu], nvhcq_mock.vidmem_used[gpu], __ATOMIC_RELEASE);
}

uint64_t mock_vidmem_used(uint32_t gpu) {
  pthread_once(&ledger_once, map_ledger);
  if (!ledger) return nvhcq_mock.vidmem_used[gpu];
  uint64_t sum = 0;
  int32_t me = (int32_t)getpid();
  for (int i = 0; i < LEDGER_SLOTS; i++) {
    int32_t pid = __atomic_load_n(&ledger[i].pid, __ATOMIC_ACQUIRE);
    if (pid != me && alive(pid)) sum += __atomic_load_n(&ledger[i].used[gpu], __ATOMIC_ACQUIRE);
  }
  return sum + nvhcq_mock.vidmem_used[gpu];
}
