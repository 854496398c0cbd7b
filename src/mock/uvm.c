/* The mock's UVM: registrations checked and otherwise no-ops, external ranges and the memory
 * mapped into them (the table the command processor translates GPU addresses with, and the
 * engines' copies that keep sparse memory sparse), the tools event ring faults are posted to. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock/internal.h"
#include "mock/mock.h"

/* Each range belongs to one address space (internal.h): a peer's buffer is mapped into another
 * GPU's at the same address, and a buffer nvhcq maps in both of a device's spaces is there twice.
 */
static mock_range *range_at(int space, uint64_t base) {
  for (uint32_t i = 0; i < nvhcq_mock.nranges; i++)
    if (nvhcq_mock.ranges[i].base == base && nvhcq_mock.ranges[i].space == space)
      return &nvhcq_mock.ranges[i];
  return NULL;
}

static int overlaps(int space, uint64_t base, uint64_t length) {
  for (uint32_t i = 0; i < nvhcq_mock.nranges; i++) {
    const mock_range *r = &nvhcq_mock.ranges[i];
    if (r->space == space && base < r->base + r->length && r->base < base + length) return 1;
  }
  return 0;
}

static uint32_t create_range(int space, const UVM_CREATE_EXTERNAL_RANGE_PARAMS *p) {
  if (!p->length || ((p->base | p->length) & 0xfff)) return MOCK_ERR_INVALID_ADDRESS;
  if (overlaps(space, p->base, p->length)) return MOCK_ERR_INVALID_ADDRESS;
  if (nvhcq_mock.nranges == nvhcq_mock.cap_ranges) {
    uint32_t cap = nvhcq_mock.cap_ranges ? nvhcq_mock.cap_ranges * 2 : 64;
    mock_range *grown = realloc(nvhcq_mock.ranges, cap * sizeof *grown);
    if (!grown) return MOCK_ERR_NO_MEMORY;
    nvhcq_mock.ranges = grown;
    nvhcq_mock.cap_ranges = cap;
  }
  nvhcq_mock.ranges[nvhcq_mock.nranges++] =
      (mock_range){.space = space, .base = p->base, .length = p->length};
  return MOCK_NV_OK;
}

static uint32_t map_external(int space, const UVM_MAP_EXTERNAL_ALLOCATION_PARAMS *p) {
  mock_range *r = range_at(space, p->base);
  if (!r || p->length > r->length || !p->length) return MOCK_ERR_INVALID_ADDRESS;
  if (!p->gpuAttributesCount || p->gpuAttributesCount > MOCK_MAX_GPUS)
    return MOCK_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < p->gpuAttributesCount; i++)
    if (mock_gpu_of_uuid(p->perGpuAttributes[i].gpuUuid.uuid) < 0) return MOCK_ERR_INVALID_ARGUMENT;
  if (mock_fd_kind(p->rmCtrlFd) != FD_CTL) return MOCK_ERR_INVALID_ARGUMENT;
  mock_obj *o = mock_find(p->hClient, p->hMemory);
  if (!o || !o->backing) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  if (p->offset + p->length > ((o->size + 0xfff) & ~0xfffull)) return MOCK_ERR_INVALID_LIMIT;
  r->host = o->backing + p->offset;
  r->obj = o;
  r->length = p->length < o->size - p->offset ? p->length : o->size - p->offset;
  return MOCK_NV_OK;
}

static uint32_t free_range(int space, uint64_t base) {
  mock_range *r = range_at(space, base);
  if (!r) return MOCK_ERR_INVALID_ADDRESS;
  *r = nvhcq_mock.ranges[--nvhcq_mock.nranges];
  return MOCK_NV_OK;
}

uint32_t mock_range_map(int space, uint64_t base, uint64_t length, const mock_obj *memory,
                        uint64_t offset) {
  pthread_rwlock_wrlock(&nvhcq_mock.va_lock);
  UVM_CREATE_EXTERNAL_RANGE_PARAMS p = {.base = base, .length = length};
  uint32_t s = create_range(space, &p);
  if (!s) {
    mock_range *r = range_at(space, base);
    r->host = memory->backing + offset;
    r->obj = memory;
    r->length = length < memory->size - offset ? length : memory->size - offset;
  }
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return s;
}

uint32_t mock_range_unmap(int space, uint64_t base) {
  pthread_rwlock_wrlock(&nvhcq_mock.va_lock);
  uint32_t s = free_range(space, base);
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return s;
}

void mock_ranges_drop(const mock_obj *obj) {
  pthread_rwlock_wrlock(&nvhcq_mock.va_lock);
  for (uint32_t i = 0; i < nvhcq_mock.nranges;)
    if (nvhcq_mock.ranges[i].obj == obj)
      nvhcq_mock.ranges[i] = nvhcq_mock.ranges[--nvhcq_mock.nranges];
    else
      i++;
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
}

_Thread_local int mock_thread_space = MOCK_SPACE_ALL;

int mock_space_new(void) {
  return __atomic_add_fetch(&nvhcq_mock.next_space, 1, __ATOMIC_RELAXED);
}

int mock_space_of_vaspace(uint32_t client, const mock_obj *vaspace, int *uvm) {
  *uvm = 0;
  if (!vaspace) return MOCK_SPACE_ALL;
  for (int i = 0; i < MOCK_MAX_FDS; i++) {
    const mock_fd *f = &nvhcq_mock.fds[i];
    if (f->kind == FD_UVM && f->client == client && f->vaspace == vaspace->handle) {
      *uvm = 1;
      return f->space;
    }
  }
  return vaspace->space;
}

void *mock_space_pointer(int space, uint64_t va, uint64_t len) {
  void *at = NULL;
  pthread_rwlock_rdlock(&nvhcq_mock.va_lock);
  for (uint32_t i = 0; i < nvhcq_mock.nranges && !at; i++) {
    const mock_range *r = &nvhcq_mock.ranges[i];
    if (space != MOCK_SPACE_ALL && r->space != space) continue;
    if (r->host && va >= r->base && va - r->base + len <= r->length && len <= r->length)
      at = r->host + (va - r->base);
  }
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return at;
}

void *mock_space_run(int space, uint64_t va, uint64_t len, uint64_t *run) {
  void *at = NULL;
  pthread_rwlock_rdlock(&nvhcq_mock.va_lock);
  for (uint32_t i = 0; i < nvhcq_mock.nranges && !at; i++) {
    const mock_range *r = &nvhcq_mock.ranges[i];
    if (space != MOCK_SPACE_ALL && r->space != space) continue;
    if (!r->host || va < r->base || va - r->base >= r->length) continue;
    at = r->host + (va - r->base);
    *run = r->length - (va - r->base) < len ? r->length - (va - r->base) : len;
  }
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return at;
}

void *nvhcq_mock_gpu_pointer(uint64_t va, uint64_t len) {
  if (mock_inject_access(va, len)) return NULL;
  return mock_space_pointer(mock_thread_space, va, len);
}

/* ---- copies that keep sparse memory sparse ---- */

/* Pieces of a large copy into the mock's memory are looked at one by one: a piece whose source
 * holds nothing (a hole, or zeros) and whose destination is a hole is left alone, so copies of
 * mostly untouched gigabytes cost neither the host memory nor the time. */
#define SPARSE_PIECE (64u << 10)

/* The memfd and offset behind host memory of a mock memory object (-1: other host memory). */
static int backing_of(const uint8_t *p, uint64_t len, uint64_t *offset) {
  int fd = -1;
  pthread_rwlock_rdlock(&nvhcq_mock.va_lock);
  for (uint32_t i = 0; i < nvhcq_mock.nranges && fd < 0; i++) {
    const mock_range *r = &nvhcq_mock.ranges[i];
    if (!r->host || !r->obj || r->obj->memfd < 0 || p < r->host || p - r->host + len > r->length)
      continue;
    fd = r->obj->memfd;
    *offset = (uint64_t)(p - r->obj->backing);
  }
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return fd;
}

/* Where a memfd holds data next, at or after `from` (UINT64_MAX: nowhere); a hole reads as
 * zeros. Asked once per run of holes: the search walks the file's pages. */
static uint64_t next_data(int fd, uint64_t from) {
  off_t data = lseek(fd, (off_t)from, SEEK_DATA);
  return data < 0 ? UINT64_MAX : (uint64_t)data;
}

/* Whether [at, at + k) of the memfd (-1: not one) is a hole; *next caches next_data, which the
 * copy's own writes (all before `at`) do not move. */
static int hole(int fd, uint64_t *next, uint64_t at, uint64_t k) {
  if (fd < 0) return 0;
  if (*next <= at) *next = next_data(fd, at);
  return *next >= at + k;
}

/* memcmp against zeros: libc's, fast even in a build without optimization. */
static int all_zero(const uint8_t *p, size_t n) {
  static const uint8_t zeros[SPARSE_PIECE];
  return memcmp(p, zeros, n) == 0;
}

void mock_copy(void *dst, const void *src, uint64_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  uint64_t d_off = 0, s_off = 0;
  int large = n >= 2 * SPARSE_PIECE && !(d < s + n && s < d + n);
  int d_fd = large ? backing_of(d, n, &d_off) : -1, s_fd = large ? backing_of(s, n, &s_off) : -1;
  if (d_fd < 0 && s_fd < 0) {
    memmove(d, s, n);
    return;
  }
  uint64_t d_next = 0, s_next = 0;
  for (uint64_t at = 0; at < n; at += SPARSE_PIECE) {
    size_t k = n - at < SPARSE_PIECE ? (size_t)(n - at) : SPARSE_PIECE;
    int d_hole = hole(d_fd, &d_next, d_off + at, k);
    if (hole(s_fd, &s_next, s_off + at, k)) {
      if (!d_hole) memset(d + at, 0, k); /* reading a hole through a mapping would fill it */
      continue;
    }
    if (!d_hole || !all_zero(s + at, k)) memcpy(d + at, s + at, k);
  }
}

/* Calls that only need their arguments to make sense. */
static uint32_t check_uuid(const uint8_t *uuid) {
  return mock_gpu_of_uuid(uuid) < 0 ? MOCK_ERR_GPU_UUID_NOT_FOUND : MOCK_NV_OK;
}

static uint32_t enable_peer(const UVM_ENABLE_PEER_ACCESS_PARAMS *p) {
  int a = mock_gpu_of_uuid(p->gpuUuidA.uuid), b = mock_gpu_of_uuid(p->gpuUuidB.uuid);
  if (a < 0 || b < 0) return MOCK_ERR_GPU_UUID_NOT_FOUND;
  return a == b ? MOCK_ERR_INVALID_ARGUMENT : MOCK_NV_OK;
}

static uint32_t check_handle(const uint8_t *uuid, int fd, uint32_t client, uint32_t handle) {
  uint32_t s = check_uuid(uuid);
  if (s) return s;
  if (mock_fd_kind(fd) != FD_CTL) return MOCK_ERR_INVALID_ARGUMENT;
  if (!mock_find(client, client)) return MOCK_ERR_INVALID_CLIENT;
  return mock_find(client, handle) ? MOCK_NV_OK : MOCK_ERR_INVALID_OBJECT_HANDLE;
}

/* The fd's address space stands for the RM one from now on: channels made in it translate through
 * the fd's ranges. */
static uint32_t register_vaspace(mock_fd *f, const UVM_REGISTER_GPU_VASPACE_PARAMS *p) {
  uint32_t s = check_handle(p->gpuUuid.uuid, p->rmCtrlFd, p->hClient, p->hVaSpace);
  if (s) return s;
  const mock_obj *vas = mock_find(p->hClient, p->hVaSpace);
  if (vas->hclass != FERMI_VASPACE_A) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  /* UVM keeps one per GPU; nvhcq registers one GPU's per fd, and the mock takes no more. */
  if (f->vaspace) return MOCK_ERR_INVALID_ARGUMENT;
  f->client = p->hClient;
  f->vaspace = p->hVaSpace;
  return MOCK_NV_OK;
}

/* Channels made before keep translating through the fd's ranges (UVM would have let go of them
 * first). */
static uint32_t unregister_vaspace(mock_fd *f, const UVM_UNREGISTER_GPU_VASPACE_PARAMS *p) {
  uint32_t s = check_uuid(p->gpuUuid.uuid);
  if (!s) f->client = f->vaspace = 0;
  return s;
}

static uint32_t uvm_va_call(int space, unsigned long cmd, void *arg) {
  switch (cmd) {
  case UVM_CREATE_EXTERNAL_RANGE:
    return create_range(space, arg);
  case UVM_MAP_EXTERNAL_ALLOCATION:
    return map_external(space, arg);
  case UVM_FREE:
    return free_range(space, *(const uint64_t *)arg);
  default:
    return MOCK_ERR_NOT_SUPPORTED;
  }
}

static uint32_t uvm_call(int fd, unsigned long cmd, void *arg) {
  switch (cmd) {
  case UVM_INITIALIZE:
    return MOCK_NV_OK;
  case UVM_REGISTER_GPU:
    return check_uuid(((UVM_REGISTER_GPU_PARAMS *)arg)->gpu_uuid.uuid);
  case UVM_UNREGISTER_GPU:
    return check_uuid(((UVM_UNREGISTER_GPU_PARAMS *)arg)->gpu_uuid.uuid);
  case UVM_ENABLE_PEER_ACCESS:
  case UVM_DISABLE_PEER_ACCESS:
    return enable_peer(arg);
  case UVM_UNREGISTER_GPU_VASPACE:
    return unregister_vaspace(&nvhcq_mock.fds[fd - MOCK_FD_BASE], arg);
  case UVM_REGISTER_GPU_VASPACE:
    return register_vaspace(&nvhcq_mock.fds[fd - MOCK_FD_BASE], arg);
  case UVM_REGISTER_CHANNEL: {
    UVM_REGISTER_CHANNEL_PARAMS *p = arg;
    return check_handle(p->gpuUuid.uuid, p->rmCtrlFd, p->hClient, p->hChannel);
  }
  case UVM_UNREGISTER_CHANNEL: {
    UVM_UNREGISTER_CHANNEL_PARAMS *p = arg;
    return check_handle(p->gpuUuid.uuid, p->rmCtrlFd, p->hClient, p->hChannel);
  }
  default:
    break;
  }
  pthread_rwlock_wrlock(&nvhcq_mock.va_lock);
  uint32_t s = uvm_va_call(nvhcq_mock.fds[fd - MOCK_FD_BASE].space, cmd, arg);
  pthread_rwlock_unlock(&nvhcq_mock.va_lock);
  return s;
}

/* Where each call keeps its status. */
static size_t status_offset(unsigned long cmd) {
  switch (cmd) {
  case UVM_INITIALIZE:
    return offsetof(UVM_INITIALIZE_PARAMS, rmStatus);
  case UVM_MM_INITIALIZE:
    return offsetof(UVM_MM_INITIALIZE_PARAMS, rmStatus);
  case UVM_REGISTER_GPU:
    return offsetof(UVM_REGISTER_GPU_PARAMS, rmStatus);
  case UVM_UNREGISTER_GPU:
    return offsetof(UVM_UNREGISTER_GPU_PARAMS, rmStatus);
  case UVM_ENABLE_PEER_ACCESS:
  case UVM_DISABLE_PEER_ACCESS:
    return offsetof(UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus);
  case UVM_REGISTER_GPU_VASPACE:
    return offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus);
  case UVM_UNREGISTER_GPU_VASPACE:
    return offsetof(UVM_UNREGISTER_GPU_VASPACE_PARAMS, rmStatus);
  case UVM_REGISTER_CHANNEL:
    return offsetof(UVM_REGISTER_CHANNEL_PARAMS, rmStatus);
  case UVM_UNREGISTER_CHANNEL:
    return offsetof(UVM_UNREGISTER_CHANNEL_PARAMS, rmStatus);
  case UVM_CREATE_EXTERNAL_RANGE:
    return offsetof(UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus);
  case UVM_MAP_EXTERNAL_ALLOCATION:
    return offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus);
  case UVM_FREE:
    return offsetof(UVM_FREE_PARAMS_580, rmStatus);
  default:
    return 0;
  }
}

static int tools_ioctl(mock_fd *f, unsigned long cmd, void *arg) {
  if (cmd == UVM_TOOLS_INIT_EVENT_TRACKER) {
    UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS *p = arg;
    int ok = p->queueBuffer && p->controlBuffer && p->queueBufferSize &&
             !(p->queueBufferSize & (p->queueBufferSize - 1)) && p->queueBufferSize <= (1u << 20) &&
             mock_fd_kind(p->uvmFd) == FD_UVM;
    p->rmStatus = ok ? MOCK_NV_OK : MOCK_ERR_INVALID_ARGUMENT;
    if (ok) {
      pthread_mutex_lock(&nvhcq_mock.lock);
      f->queue = (uint8_t *)(uintptr_t)p->queueBuffer;
      f->queue_entries = (uint32_t)p->queueBufferSize;
      f->control = (UVM_TOOLS_EVENT_CONTROL *)(uintptr_t)p->controlBuffer;
      f->space = nvhcq_mock.fds[p->uvmFd - MOCK_FD_BASE].space;
      pthread_mutex_unlock(&nvhcq_mock.lock);
    }
    return 0;
  }
  if (cmd == UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS) {
    UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS *p = arg;
    pthread_mutex_lock(&nvhcq_mock.lock);
    f->events |= p->eventTypeFlags;
    pthread_mutex_unlock(&nvhcq_mock.lock);
    p->rmStatus = f->queue ? MOCK_NV_OK : MOCK_ERR_INVALID_ARGUMENT;
    return 0;
  }
  if (cmd == UVM_TOOLS_SET_NOTIFICATION_THRESHOLD) {
    ((UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS *)arg)->rmStatus = MOCK_NV_OK;
    return 0;
  }
  return -EINVAL;
}

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_changed = PTHREAD_COND_INITIALIZER;
static int hold, held;

void nvhcq_mock_hold_unregister(int on) {
  pthread_mutex_lock(&hold_lock);
  hold = on;
  pthread_cond_broadcast(&hold_changed);
  pthread_mutex_unlock(&hold_lock);
}

int nvhcq_mock_unregisters_held(void) {
  pthread_mutex_lock(&hold_lock);
  int n = held;
  pthread_mutex_unlock(&hold_lock);
  return n;
}

/* The real call takes ~50 ms on the H200; the hold stands in for it, bounded. */
static void wait_while_held(void) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&hold_lock);
  held++;
  while (hold && pthread_cond_timedwait(&hold_changed, &hold_lock, &until) == 0) {
  }
  held--;
  pthread_mutex_unlock(&hold_lock);
}

/* One event into a tracker's ring, if there is room (else it counts as dropped). */
static void post(mock_fd *f, const void *event, size_t size, unsigned type) {
  if (!(f->events & (1ull << type))) return;
  UVM_TOOLS_EVENT_CONTROL *c = f->control;
  uint32_t put = __atomic_load_n(&c->put_behind, __ATOMIC_RELAXED) & (f->queue_entries - 1);
  uint32_t get = __atomic_load_n(&c->get_behind, __ATOMIC_ACQUIRE) & (f->queue_entries - 1);
  uint32_t next = (put + 1) & (f->queue_entries - 1);
  if (next == get) {
    c->dropped[type]++;
    return;
  }
  uint8_t *e = f->queue + (size_t)put * UVM_TOOLS_EVENT_ENTRY_BYTES;
  memset(e, 0, UVM_TOOLS_EVENT_ENTRY_BYTES);
  memcpy(e, event, size);
  __atomic_store_n(&c->put_ahead, next, __ATOMIC_RELEASE);
  __atomic_store_n(&c->put_behind, next, __ATOMIC_RELEASE);
}

static uint64_t monotonic_raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mock_uvm_report_fault(int space, uint64_t address, int write, int client_type) {
  uint64_t now = monotonic_raw_ns();
  /* UVM's numbering: fault type 1 is the hardware's 0 (no page directory entry), accesses count
   * from 1 in the hardware's order (read 0, write 1). */
  UVM_EVENT_GPU_FAULT g = {.eventType = UVM_EVENT_TYPE_GPU_FAULT,
                           .faultType = 1,
                           .accessType = (uint8_t)(write ? 2 : 1),
                           .address = address,
                           .timeStamp = now,
                           .clientType = (uint8_t)client_type};
  UVM_EVENT_FATAL_FAULT fatal = {.eventType = UVM_EVENT_TYPE_FATAL_FAULT,
                                 .faultType = 1,
                                 .accessType = (uint8_t)(write ? 2 : 1),
                                 .address = address & ~4095ull,
                                 .timeStamp = now};
  pthread_mutex_lock(&nvhcq_mock.lock);
  for (int i = 0; i < MOCK_MAX_FDS; i++) {
    mock_fd *f = &nvhcq_mock.fds[i];
    if (__atomic_load_n(&f->kind, __ATOMIC_ACQUIRE) != FD_TOOLS || !f->queue) continue;
    if (f->space != space) continue;
    post(f, &g, sizeof g, UVM_EVENT_TYPE_GPU_FAULT);
    post(f, &fatal, sizeof fatal, UVM_EVENT_TYPE_FATAL_FAULT);
  }
  pthread_mutex_unlock(&nvhcq_mock.lock);
}

static const char *uvm_name(int kind, unsigned long cmd) {
  if (kind == FD_TOOLS)
    return cmd == UVM_TOOLS_INIT_EVENT_TRACKER           ? "UVM_TOOLS_INIT_EVENT_TRACKER"
           : cmd == UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS  ? "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS"
           : cmd == UVM_TOOLS_SET_NOTIFICATION_THRESHOLD ? "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD"
                                                         : "UVM_TOOLS_UNKNOWN";
  static const struct {
    unsigned long cmd;
    const char *name;
  } names[] = {{UVM_INITIALIZE, "UVM_INITIALIZE"},
               {UVM_MM_INITIALIZE, "UVM_MM_INITIALIZE"},
               {UVM_REGISTER_GPU, "UVM_REGISTER_GPU"},
               {UVM_UNREGISTER_GPU, "UVM_UNREGISTER_GPU"},
               {UVM_ENABLE_PEER_ACCESS, "UVM_ENABLE_PEER_ACCESS"},
               {UVM_DISABLE_PEER_ACCESS, "UVM_DISABLE_PEER_ACCESS"},
               {UVM_REGISTER_GPU_VASPACE, "UVM_REGISTER_GPU_VASPACE"},
               {UVM_UNREGISTER_GPU_VASPACE, "UVM_UNREGISTER_GPU_VASPACE"},
               {UVM_REGISTER_CHANNEL, "UVM_REGISTER_CHANNEL"},
               {UVM_UNREGISTER_CHANNEL, "UVM_UNREGISTER_CHANNEL"},
               {UVM_CREATE_EXTERNAL_RANGE, "UVM_CREATE_EXTERNAL_RANGE"},
               {UVM_MAP_EXTERNAL_ALLOCATION, "UVM_MAP_EXTERNAL_ALLOCATION"},
               {UVM_FREE, "UVM_FREE"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].cmd == cmd) return names[i].name;
  return "UVM_UNKNOWN";
}

/* An injected failure: NV_ERR_NO_MEMORY in the call's status (every UVM call has one). */
static int fail_uvm(int kind, unsigned long cmd, void *arg) {
  size_t at = kind == FD_TOOLS
                  ? (cmd == UVM_TOOLS_INIT_EVENT_TRACKER
                         ? offsetof(UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS, rmStatus)
                     : cmd == UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS
                         ? offsetof(UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS, rmStatus)
                         : offsetof(UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS, rmStatus))
                  : status_offset(cmd);
  if (!at && cmd != UVM_MM_INITIALIZE) return -EINVAL;
  if (cmd == UVM_MM_INITIALIZE) at = offsetof(UVM_MM_INITIALIZE_PARAMS, rmStatus);
  uint32_t s = MOCK_ERR_NO_MEMORY;
  memcpy((char *)arg + at, &s, sizeof s);
  return 0;
}

int mock_uvm_ioctl(int fd, int kind, unsigned long cmd, void *arg) {
  if (mock_fail_now(uvm_name(kind, cmd))) return fail_uvm(kind, cmd, arg);
  if (kind == FD_TOOLS) return tools_ioctl(&nvhcq_mock.fds[fd - MOCK_FD_BASE], cmd, arg);
  if (cmd == UVM_MM_INITIALIZE) { /* as the real driver answers nvhcq's second fd */
    ((UVM_MM_INITIALIZE_PARAMS *)arg)->rmStatus = MOCK_ERR_INVALID_ARGUMENT;
    return 0;
  }
  size_t at = status_offset(cmd);
  if (!at) return -EINVAL;
  if (cmd == UVM_UNREGISTER_GPU) wait_while_held(); /* outside the mock's lock */
  pthread_mutex_lock(&nvhcq_mock.lock);
  uint32_t s = uvm_call(fd, cmd, arg);
  pthread_mutex_unlock(&nvhcq_mock.lock);
  memcpy((char *)arg + at, &s, sizeof s);
  return 0;
}
