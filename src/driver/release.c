/* Background release of closed devices: one thread per close, kept in a list so that the next
 * open of the same GPU, an explicit wait, or the process's exit joins it. */
#include "driver/release.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver/door.h"
#include "util/va.h"

typedef struct pending {
  nvhcq_release r;
  pthread_t thread;
  struct pending *next;
} pending;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pending *running; /* releases started and not joined yet */

static void unregister_uvm(nvhcq_release *r) {
  if (r->uvm_vaspace) {
    UVM_UNREGISTER_GPU_VASPACE_PARAMS u = {0};
    memcpy(u.gpuUuid.uuid, r->uuid, 16);
    (void)!nvhcq_uvm_call(&r->rm, UVM_UNREGISTER_GPU_VASPACE, "UVM_UNREGISTER_GPU_VASPACE", &u,
                          offsetof(UVM_UNREGISTER_GPU_VASPACE_PARAMS, rmStatus));
  }
  if (r->uvm_gpu) {
    UVM_UNREGISTER_GPU_PARAMS u = {0};
    memcpy(u.gpu_uuid.uuid, r->uuid, 16);
    (void)!nvhcq_uvm_call(&r->rm, UVM_UNREGISTER_GPU, "UVM_UNREGISTER_GPU", &u,
                          offsetof(UVM_UNREGISTER_GPU_PARAMS, rmStatus));
  }
}

/* In the order a synchronous close had: UVM first, then the client (freeing the root frees
 * every object under it), then the fds, then the ranges UVM held. */
static void release_now(nvhcq_release *r) {
  if (r->prelude) r->prelude(r, r->prelude_arg);
  unregister_uvm(r);
  if (r->rm.root) nvhcq_rm_free(&r->rm, 0, r->rm.root);
  for (int i = 0; i < NVHCQ_RELEASE_FDS; i++)
    if (r->fds[i] >= 0) nvhcq_door->close(r->fds[i]);
  if (r->rm.fd_uvm >= 0) nvhcq_door->close(r->rm.fd_uvm);
  if (r->rm.fd_ctl >= 0) nvhcq_door->close(r->rm.fd_ctl);
  for (uint32_t i = 0; i < r->low_range_count; i++)
    (void)!nvhcq_va_free(nvhcq_va_low(), r->low_ranges[i], r->low_range_bytes);
  free(r->low_ranges);
}

static void *release_thread(void *arg) {
  release_now(&((pending *)arg)->r);
  return NULL;
}

int nvhcq_release_wait_by_default(void) {
  const char *env = getenv("NVHCQ_CLOSE");
  return env && !strcmp(env, "wait");
}

/* A child of fork() has none of the parent's threads: it forgets their releases (the parent's
 * threads finish them) instead of joining threads that do not exist in it. */
static void fork_prepare(void) {
  pthread_mutex_lock(&lock);
}
static void fork_parent(void) {
  pthread_mutex_unlock(&lock);
}
static void fork_child(void) {
  for (pending *p = running, *next; p; p = next) {
    next = p->next;
    free(p->r.low_ranges);
    free(p);
  }
  running = NULL;
  pthread_mutex_unlock(&lock);
}
static void watch_forks(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void nvhcq_release_start(const nvhcq_release *r, int wait) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, watch_forks);
  pending *p = wait ? NULL : malloc(sizeof *p);
  if (p) {
    p->r = *r;
    pthread_mutex_lock(&lock);
    int started = pthread_create(&p->thread, NULL, release_thread, p) == 0;
    if (started) p->next = running, running = p;
    pthread_mutex_unlock(&lock);
    if (started) return;
    free(p);
  }
  nvhcq_release copy = *r;
  release_now(&copy);
}

/* Takes the first release that `match` accepts off the list, or NULL. */
static pending *take(int all, uint32_t minor) {
  pthread_mutex_lock(&lock);
  pending *found = NULL;
  for (pending **at = &running; *at; at = &(*at)->next)
    if (all || (*at)->r.minor == minor) {
      found = *at;
      *at = found->next;
      break;
    }
  pthread_mutex_unlock(&lock);
  return found;
}

static void join(int all, uint32_t minor) {
  for (pending *p; (p = take(all, minor));) {
    pthread_join(p->thread, NULL);
    free(p);
  }
}

void nvhcq_release_join(uint32_t minor) {
  join(0, minor);
}

void nvhcq_release_join_all(void) {
  join(1, 0);
}

/* A process that exits right after a close still lets the driver calls finish. */
__attribute__((destructor)) static void join_at_exit(void) {
  nvhcq_release_join_all();
}
