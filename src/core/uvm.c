/* The background registration with UVM and the device's move onto it. UVM_REGISTER_GPU is UVM's
 * bring-up of the GPU for the process (93-97 ms of an eager open on the H200), and UVM takes only
 * address spaces it owns (externally owned, page faulting), never RM's own. So the device opens in
 * an RM address space (memory mapped through virtual memory objects at the CPU's addresses, as
 * with NVHCQ_UVM=off) and runs at once, while a thread registers the GPU and makes and registers
 * a UVM address space. At the next submission after, the device maps every allocation into the
 * new space at the same address, makes new channels there that start by waiting for the old ones'
 * last work, and submits to them from then on; the old channels are freed once they drained.
 * Allocations keep their addresses, so nothing the user holds changes.
 *
 * The registration starts at the device's first submission, not at the open: UVM_REGISTER_GPU
 * makes RM calls of its own for most of its ~100 ms, and every RM call of the open's waited for
 * them (open to ready took 82 ms instead of 13 on the H200 with the thread started while
 * opening). Work runs without RM calls, so the GPU's first work and the registration overlap; RM
 * calls made meanwhile (allocations, first module loads) still wait for it. */
#include "core/uvm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/memory.h"
#include "core/timeline.h"
#include "util/abi.h"
#include "util/clock.h"

/* The thread's phases. It reads the device (its facts, and its allocation list under its lock)
 * only while building; a close waits for that, and stops a registration before it builds. */
enum { REGISTERING, BUILDING, BUILT };

typedef struct nvhcq_uvm_attach {
  pthread_t thread;
  nvhcq_device *dev;
  pthread_mutex_t lock; /* phase and cancel */
  pthread_cond_t built;
  int phase, cancel;
  int done;    /* atomic: the thread has finished */
  nvhcq_rm rm; /* the device's control fd, client and branch; fd_uvm is the thread's own */
  int fd_uvm2;
  uint8_t uuid[16];
  uint32_t h_device, h_vaspace, timeout_ms;
  int gpu_registered, vaspace_registered;
  nvhcq_status status;
  char error[512];
  double ms;
  /* The new space's channels and their rings, built on the thread; and its stuck ranges. */
  nvhcq_context_saved ctx;
  nvhcq_status ctx_status;
  uint64_t *stuck;
  uint32_t stuck_count;
} nvhcq_uvm_attach;

nvhcq_status nvhcq_uvm_alloc_vaspace(nvhcq_rm *rm, uint32_t h_device, int uvm_owned,
                                     uint32_t *out) {
  NV_VASPACE_ALLOCATION_PARAMETERS vp = {.flags = uvm_owned ? NV_VASPACE_FLAGS_NVHCQ : 0,
                                         .vaBase = 0x1000,
                                         .vaSize = 0x1fffffb000000ull};
  *out = 0;
  return nvhcq_rm_alloc(rm, h_device, FERMI_VASPACE_A, &vp, rm->branch->vaspace_params_size, out);
}

nvhcq_status nvhcq_uvm_register(nvhcq_rm *rm, const uint8_t uuid[16], uint32_t h_vaspace,
                                int *gpu_registered, int *vaspace_registered) {
  if (!*gpu_registered) {
    UVM_REGISTER_GPU_PARAMS g = {.rmCtrlFd = -1};
    memcpy(g.gpu_uuid.uuid, uuid, 16);
    NVHCQ_TRY(nvhcq_uvm_call(rm, UVM_REGISTER_GPU, "UVM_REGISTER_GPU", &g,
                             offsetof(UVM_REGISTER_GPU_PARAMS, rmStatus)));
    *gpu_registered = 1;
  }
  if (!h_vaspace) return NVHCQ_SUCCESS;
  UVM_REGISTER_GPU_VASPACE_PARAMS v = {
      .rmCtrlFd = rm->fd_ctl, .hClient = rm->root, .hVaSpace = h_vaspace};
  memcpy(v.gpuUuid.uuid, uuid, 16);
  NVHCQ_TRY(nvhcq_uvm_call(rm, UVM_REGISTER_GPU_VASPACE, "UVM_REGISTER_GPU_VASPACE", &v,
                           offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus)));
  *vaspace_registered = 1;
  return NVHCQ_SUCCESS;
}

static int cancelled(nvhcq_uvm_attach *a) {
  pthread_mutex_lock(&a->lock);
  int c = a->cancel;
  pthread_mutex_unlock(&a->lock);
  return c;
}

/* Each step checks for a close first: the slow one, once begun, runs to its end. */
static nvhcq_status register_steps(nvhcq_uvm_attach *a) {
  NVHCQ_TRY(nvhcq_open_uvm(&a->rm, &a->fd_uvm2));
  if (cancelled(a)) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_uvm_register(&a->rm, a->uuid, 0, &a->gpu_registered, &a->vaspace_registered));
  if (cancelled(a)) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_uvm_alloc_vaspace(&a->rm, a->h_device, 1, &a->h_vaspace));
  return nvhcq_uvm_register(&a->rm, a->uuid, a->h_vaspace, &a->gpu_registered,
                            &a->vaspace_registered);
}

/* The new space's channels and rings into a->ctx, through `rm`'s calls (the thread's, or the
 * device's once it has taken them over), ring memory mapped into the new space only. */
static nvhcq_status build_into(nvhcq_uvm_attach *a, nvhcq_rm *rm, uint32_t timeout_ms,
                               uint64_t **stuck, uint32_t *stuck_count) {
  nvhcq_context_builder b = {.dev = a->dev,
                             .rm = rm,
                             .h_vaspace = a->h_vaspace,
                             .uvm = 1,
                             .background = 1,
                             .timeout_ms = timeout_ms,
                             .stuck = stuck,
                             .stuck_count = stuck_count};
  return nvhcq_context_build(&b, &a->ctx);
}

/* The new space's channels, made here too (~8 ms of RM calls the move would otherwise make on
 * the device's thread), unless the device is closing. */
static void build_context(nvhcq_uvm_attach *a) {
  pthread_mutex_lock(&a->lock);
  int go = !a->cancel;
  if (go) a->phase = BUILDING;
  pthread_mutex_unlock(&a->lock);
  if (go) a->ctx_status = build_into(a, &a->rm, a->timeout_ms, &a->stuck, &a->stuck_count);
  pthread_mutex_lock(&a->lock);
  a->phase = BUILT;
  pthread_cond_broadcast(&a->built);
  pthread_mutex_unlock(&a->lock);
}

static void *register_thread(void *arg) {
  nvhcq_uvm_attach *a = arg;
  double t0 = nvhcq_now_ms();
  a->status = register_steps(a);
  if (a->status) snprintf(a->error, sizeof a->error, "%s", nvhcq_last_error());
  a->ms = nvhcq_now_ms() - t0;
  a->ctx_status = NVHCQ_ERROR_DRIVER;
  if (!a->status) build_context(a);
  __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* If no thread can be started the device stays in RM's space, as with NVHCQ_UVM=off. */
static void attach_start(nvhcq_device *dev) {
  dev->uvm_not_started = 0;
  nvhcq_uvm_attach *a = calloc(1, sizeof *a);
  if (a) {
    a->dev = dev;
    a->rm = dev->rm;
    a->rm.fd_uvm = a->fd_uvm2 = -1;
    memcpy(a->uuid, dev->info.uuid, 16);
    a->h_device = dev->h_device;
    a->timeout_ms = dev->timeout_ms;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->built, NULL);
    if (pthread_create(&a->thread, NULL, register_thread, a) == 0) {
      dev->attach = a;
      return;
    }
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->built);
    free(a);
  }
  snprintf(dev->uvm_error, sizeof dev->uvm_error,
           "no thread could be started to register the GPU with UVM; set NVHCQ_UVM=eager");
}

/* Where the old channels stood when the device moved: new ones start after them. */
static nvhcq_status mark_drained(nvhcq_device *dev, uint64_t at[2]) {
  for (int c = 0; c < 2; c++) {
    nvhcq_timeline_scratch(dev);
    NVHCQ_TRY(nvhcq_device_submit_scratch(dev, c, &at[c]));
  }
  return NVHCQ_SUCCESS;
}

/* The new channels in place of the old ones, which drain behind them. */
static nvhcq_status switch_to(nvhcq_device *dev, nvhcq_context_saved *built,
                              const uint64_t drained[2]) {
  nvhcq_context_saved old;
  nvhcq_context_take(dev, &old);
  memcpy(old.drained_at, drained, sizeof old.drained_at);
  nvhcq_context_put_back(dev, built);
  dev->compute.timeout_ms = dev->copy.timeout_ms = dev->timeout_ms;
  dev->rm_only = 0;
  nvhcq_status s = nvhcq_context_setup_after(dev, drained);
  if (s) {
    nvhcq_context_take(dev, built);
    nvhcq_context_put_back(dev, &old);
    dev->rm_only = 1;
    return s;
  }
  dev->retired = old;
  nvhcq_fault_watch_open(dev);
  return NVHCQ_SUCCESS;
}

/* The move itself: every allocation mapped into the UVM space, the old channels' last work
 * marked, the new channels (built on the thread, or here if that failed) in place after it. On
 * failure the device stays where it was (mappings made in the new space stay until their buffers
 * go: harmless). */
static nvhcq_status move(nvhcq_device *dev, nvhcq_uvm_attach *a) {
  uint32_t rm_space = dev->h_vaspace;
  uint64_t drained[2];
  dev->h_vaspace = a->h_vaspace;
  nvhcq_status s = nvhcq_memory_map_all_uvm(dev);
  if (!s) s = mark_drained(dev, drained);
  if (!s && a->ctx_status) { /* build it here, as the thread would have */
    nvhcq_context_destroy_saved(dev, &a->ctx, 0);
    s = build_into(a, &dev->rm, dev->timeout_ms, &dev->stuck_va, &dev->stuck_va_count);
  }
  if (!s) s = switch_to(dev, &a->ctx, drained);
  if (s) {
    nvhcq_context_destroy_saved(dev, &a->ctx, 0);
    dev->h_vaspace = rm_space;
  }
  return s;
}

/* The ranges UVM would not take on the thread are the device's to return at close. */
/* The registration's own memory, once its thread is joined and what it held is taken. */
static void attach_free(nvhcq_uvm_attach *a) {
  pthread_mutex_destroy(&a->lock);
  pthread_cond_destroy(&a->built);
  free(a->stuck);
  free(a);
}

static void adopt_stuck(nvhcq_device *dev, nvhcq_uvm_attach *a) {
  uint64_t *grown =
      a->stuck_count ? realloc(dev->stuck_va, (dev->stuck_va_count + a->stuck_count) * 8) : NULL;
  if (grown) {
    memcpy(grown + dev->stuck_va_count, a->stuck, a->stuck_count * 8);
    dev->stuck_va = grown;
    dev->stuck_va_count += a->stuck_count;
  }
}

/* The thread's fds, registrations and ranges become the device's (its close undoes them). */
static nvhcq_uvm_attach *take_over(nvhcq_device *dev) {
  nvhcq_uvm_attach *a = dev->attach;
  pthread_join(a->thread, NULL);
  dev->attach = NULL;
  dev->rm.fd_uvm = a->rm.fd_uvm;
  dev->fd_uvm2 = a->fd_uvm2;
  dev->uvm_gpu_registered = a->gpu_registered;
  dev->uvm_vaspace_registered = a->vaspace_registered;
  dev->info.uvm_attach_ms = a->ms;
  adopt_stuck(dev, a);
  return a;
}

/* Takes the finished registration over, and the device moves if it succeeded. */
static void finish(nvhcq_device *dev) {
  nvhcq_uvm_attach *a = take_over(dev);
  nvhcq_status s = a->status;
  if (s) {
    snprintf(dev->uvm_error, sizeof dev->uvm_error, "%s", a->error);
    nvhcq_context_destroy_saved(dev, &a->ctx, 0);
  } else {
    double t0 = nvhcq_now_ms();
    s = move(dev, a);
    dev->info.uvm_move_ms = nvhcq_now_ms() - t0;
    if (s) snprintf(dev->uvm_error, sizeof dev->uvm_error, "%s", nvhcq_last_error());
  }
  dev->info.uvm_attached = !dev->rm_only;
  if (s && nvhcq_trace_enabled())
    fprintf(stderr, "nvhcq: GPU %d stays in RM's address space: %s\n", dev->index, dev->uvm_error);
  attach_free(a);
}

void nvhcq_uvm_attach_stop(nvhcq_device *dev) {
  nvhcq_uvm_attach *a = dev->attach;
  if (!a) return;
  pthread_mutex_lock(&a->lock);
  a->cancel = 1;
  while (a->phase == BUILDING) pthread_cond_wait(&a->built, &a->lock);
  int registering = a->phase == REGISTERING;
  pthread_mutex_unlock(&a->lock);
  if (registering) return; /* nvhcq_uvm_attach_hand_over gives it to the release */
  a = take_over(dev);
  nvhcq_context_destroy_saved(dev, &a->ctx, 0);
  attach_free(a);
}

void nvhcq_uvm_drop_retired(nvhcq_device *dev, int stop) {
  nvhcq_context_destroy_saved(dev, &dev->retired, stop);
}

void nvhcq_uvm_poll_slow(nvhcq_device *dev) {
  if (dev->broken) return; /* a recovery comes first */
  if (dev->uvm_not_started) attach_start(dev);
  if (dev->attach && __atomic_load_n(&dev->attach->done, __ATOMIC_ACQUIRE)) finish(dev);
}

nvhcq_status nvhcq_uvm_settle(nvhcq_device *dev) {
  /* A registration under way allocates in the background (the new channels' rings, UVM's page
   * tables): it finishes first. One not begun is left for the first submission. */
  if (dev->attach && !dev->broken) (void)!nvhcq_uvm_attach_now(dev);
  if (!dev->retired.present || dev->broken) return NVHCQ_SUCCESS;
  for (int c = 0; c < 2; c++)
    NVHCQ_TRY(nvhcq_device_wait_timeline(dev, c, dev->retired.drained_at[c]));
  nvhcq_uvm_drop_retired(dev, 0);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_uvm_attach_now(nvhcq_device *dev) {
  if (dev->uvm_mode == NVHCQ_OPEN_UVM_OFF)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "GPU %d was opened with NVHCQ_UVM=off, which never registers it with UVM; "
                      "unset NVHCQ_UVM",
                      dev->index);
  if (!dev->rm_only) return NVHCQ_SUCCESS;
  if (dev->broken)
    return nvhcq_fail(NVHCQ_ERROR_GPU_FAULT,
                      "GPU %d stopped working after an earlier fault or hang; call "
                      "nvhcq_device_recover first",
                      dev->index);
  if (dev->uvm_not_started) attach_start(dev);
  if (dev->attach) finish(dev);
  if (!dev->rm_only) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_DRIVER, "GPU %d could not move onto UVM: %s", dev->index,
                    dev->uvm_error);
}

/* On the releasing thread: the registration ends (the close asked it to stop), and what it
 * holds is released with the rest. */
static void release_prelude(nvhcq_release *r, void *arg) {
  nvhcq_uvm_attach *a = arg;
  pthread_join(a->thread, NULL); /* it was told to stop before building anything */
  r->rm.fd_uvm = a->rm.fd_uvm;
  r->fds[NVHCQ_RELEASE_FDS - 1] = a->fd_uvm2;
  r->uvm_gpu = a->gpu_registered;
  r->uvm_vaspace = a->vaspace_registered;
  attach_free(a);
}

void nvhcq_uvm_attach_hand_over(nvhcq_device *dev, nvhcq_release *r) {
  if (!dev->attach) return; /* nvhcq_uvm_attach_stop told it to stop */
  r->prelude = release_prelude;
  r->prelude_arg = dev->attach;
  dev->attach = NULL;
}
