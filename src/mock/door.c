/* The mock's side of the door: fds of its own for the driver's device files, ioctls routed to
 * RM and UVM, mmap of its memory objects, and the install switches. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "driver/door.h"
#include "driver/release.h"
#include "mock/internal.h"
#include "mock/mock.h"

mock_state nvhcq_mock = {.lock = PTHREAD_MUTEX_INITIALIZER, .va_lock = PTHREAD_RWLOCK_INITIALIZER};

uint64_t mock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int kind_for_path(const char *path) {
  if (!strcmp(path, "/dev/nvidiactl")) return FD_CTL;
  unsigned minor;
  char end;
  if (sscanf(path, "/dev/nvidia%u%c", &minor, &end) == 1 && minor < nvhcq_mock.gpus) return FD_GPU;
  if (!strcmp(path, "/dev/nvidia-uvm")) return FD_UVM;
  if (!strcmp(path, "/dev/nvidia-uvm-tools")) return FD_TOOLS;
  return FD_FREE;
}

static int mock_open(const char *path, int flags) {
  (void)flags;
  int kind = kind_for_path(path);
  if (kind == FD_FREE) {
    errno = ENOENT;
    return -1;
  }
  if (mock_fail_now("open")) {
    errno = ENOMEM;
    return -1;
  }
  pthread_mutex_lock(&nvhcq_mock.lock);
  int fd = -1;
  for (int i = 0; i < MOCK_MAX_FDS && fd < 0; i++)
    if (__atomic_load_n(&nvhcq_mock.fds[i].kind, __ATOMIC_ACQUIRE) == FD_FREE) {
      nvhcq_mock.fds[i].map = NULL;
      nvhcq_mock.fds[i].queue = NULL;
      nvhcq_mock.fds[i].control = NULL;
      nvhcq_mock.fds[i].events = 0;
      nvhcq_mock.fds[i].client = nvhcq_mock.fds[i].vaspace = 0;
      nvhcq_mock.fds[i].export_memfd = -1;
      nvhcq_mock.fds[i].space = kind == FD_UVM ? mock_space_new() : 0;
      __atomic_store_n(&nvhcq_mock.fds[i].kind, kind, __ATOMIC_RELEASE);
      fd = MOCK_FD_BASE + i;
    }
  pthread_mutex_unlock(&nvhcq_mock.lock);
  if (fd < 0) errno = EMFILE;
  return fd;
}

static mock_fd *fd_slot(int fd) {
  if (fd < MOCK_FD_BASE || fd >= MOCK_FD_BASE + MOCK_MAX_FDS) return NULL;
  mock_fd *f = &nvhcq_mock.fds[fd - MOCK_FD_BASE];
  /* Read without the lock by ioctls of any thread; opens and closes change it under the lock. */
  return __atomic_load_n(&f->kind, __ATOMIC_ACQUIRE) == FD_FREE ? NULL : f;
}

int mock_fd_kind(int fd) {
  mock_fd *f = fd_slot(fd);
  return f ? f->kind : FD_FREE;
}

static int mock_close(int fd) {
  pthread_mutex_lock(&nvhcq_mock.lock);
  mock_fd *f = fd_slot(fd);
  if (f) {
    f->queue = NULL; /* its ring may be unmapped next */
    if (f->export_memfd >= 0) close(f->export_memfd);
    f->export_memfd = -1;
    __atomic_store_n(&f->kind, FD_FREE, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&nvhcq_mock.lock);
  if (f) return 0;
  errno = EBADF;
  return -1;
}

/* RM escapes are _IOWR('F', nr, size) on the control and GPU fds; UVM's are bare numbers. */
static int mock_ioctl(int fd, unsigned long request, void *arg) {
  int kind = mock_fd_kind(fd);
  if (kind == FD_FREE) return -EBADF;
  if (!arg) return -EFAULT;
  if (kind == FD_UVM || kind == FD_TOOLS) return mock_uvm_ioctl(fd, kind, request, arg);
  if (((request >> 8) & 0xff) != NV_IOCTL_MAGIC || (request >> 30) != 3) return -EINVAL;
  return mock_rm_ioctl(request & 0xff, arg, (unsigned)(request >> 16) & 0x3fff);
}

/* The mapping RM_MAP_MEMORY prepared on this fd, of the object's own backing store. */
static void *mock_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (fd < MOCK_FD_BASE) return mmap(addr, len, prot, flags, fd, offset);
  if (mock_fail_now("mmap")) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  pthread_mutex_lock(&nvhcq_mock.lock);
  mock_fd *f = fd_slot(fd);
  const mock_obj *o = f ? f->map : NULL;
  int memfd = o && o->memfd >= 0 && (uint64_t)offset + len <= o->size ? o->memfd : -1;
  void *at = memfd >= 0 ? mmap(addr, len, prot, flags, memfd, offset) : MAP_FAILED;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  if (memfd < 0) errno = f ? EINVAL : EBADF;
  return at;
}

static ssize_t mock_read_text(const char *path, char *buf, size_t size) {
  if (strcmp(path, "/proc/driver/nvidia/version")) return -1;
  int n = snprintf(buf, size,
                   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  "
                   "(nvhcq mock)\n",
                   MOCK_VERSION);
  return n < (int)size ? n : (ssize_t)size - 1;
}

static const nvhcq_door_ops mock_ops = {mock_open,
                                        mock_close,
                                        mock_ioctl,
                                        mock_mmap,
                                        munmap,
                                        mock_read_text,
                                        nvhcq_mock_module_loaded,
                                        nvhcq_mock_module_unloaded};

void nvhcq_mock_install(void) {
  mock_profile_select();
  nvhcq_mock_gpu_fail(NULL, 0, 0);
  pthread_mutex_lock(&nvhcq_mock.lock);
  memset(nvhcq_mock.fds, 0, sizeof nvhcq_mock.fds);
  nvhcq_mock.next_handle = 0xcaf00000u;
  nvhcq_mock.next_token = 1;
  nvhcq_mock.next_space = 0;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  nvhcq_door_set_ops(&mock_ops);
}

void nvhcq_mock_uninstall(void) {
  nvhcq_release_join_all(); /* closed devices still releasing call the mock */
  nvhcq_door_set_ops(NULL);
  mock_modules_drop();
  free(nvhcq_mock.objs);
  free(nvhcq_mock.ranges);
  nvhcq_mock.objs = NULL;
  nvhcq_mock.ranges = NULL;
  nvhcq_mock.nobjs = nvhcq_mock.cap_objs = nvhcq_mock.nranges = nvhcq_mock.cap_ranges = 0;
}

static void install_if_asked(void) {
  const char *env = getenv("NVHCQ_MOCK");
  if (env && *env && strcmp(env, "0") != 0 && nvhcq_door_is_real()) {
    nvhcq_mock_install();
    mock_fail_from_env();
    mock_gpu_fail_from_env();
  }
}

void nvhcq_mock_install_from_env(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, install_if_asked);
}

nvhcq_mock_counts nvhcq_mock_live(void) {
  nvhcq_mock_counts c = {0};
  pthread_mutex_lock(&nvhcq_mock.lock);
  c.objects = nvhcq_mock.nobjs;
  for (uint32_t i = 0; i < nvhcq_mock.nobjs; i++)
    c.block_preempted +=
        nvhcq_mock.objs[i]->ch &&
        nvhcq_mock.objs[i]->preemption == NV2080_CTRL_SET_CTXSW_PREEMPTION_MODE_COMPUTE_CTA;
  for (int i = 0; i < MOCK_MAX_FDS; i++) c.fds += nvhcq_mock.fds[i].kind != FD_FREE;
  c.channels = nvhcq_mock.channels;
  pthread_mutex_unlock(&nvhcq_mock.lock);
  c.modules = mock_module_count();
  pthread_rwlock_rdlock(&nvhcq_mock.va_lock);
  c.ranges = nvhcq_mock.nranges;
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return c;
}
