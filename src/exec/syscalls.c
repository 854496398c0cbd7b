/* Device printf, assert, malloc and free on the host side: the syscalls module each device loads
 * on first need, the FIFO kernels print into and the heap they allocate from, the drain that
 * prints the FIFO's records once a CPU wait ends, and the limits and print callback of the API. */
#include "exec/syscalls.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/builtin.h"
#include "exec/module.h"
#include "exec/print.h"
#include "exec/syscalls_abi.h"

#define DEFAULT_FIFO  (1ull << 20)
#define DEFAULT_HEAP  (8ull << 20)
#define MIN_FIFO      4096ull
#define MAX_FIFO      (1ull << 30)
#define MAX_HEAP      (64ull << 30) /* block indexes are 32-bit, in 16-byte units */
#define MAX_RECORD    16384u        /* larger than any record syscalls.cu writes */
#define SCRATCH_BYTES (MAX_RECORD + 1)

typedef struct nvhcq_syscalls {
  pthread_mutex_t lock;      /* the drain and the print callback */
  pthread_mutex_t load_lock; /* the loads and the limits (a load may wait, and waits drain) */
  uint64_t fifo_limit, heap_limit;
  int tried; /* the module's load was tried (it does not change) */
  nvhcq_status load_status;
  char load_error[512];
  nvhcq_module *module;
  volatile nvhcq_sys_state *state; /* the module's nvhcq_sys, through the arena's CPU mapping */
  uint64_t function[NVHCQ_CUBIN_MAX_IMPORTS];
  uint32_t registers[NVHCQ_CUBIN_MAX_IMPORTS], frame[NVHCQ_CUBIN_MAX_IMPORTS];
  nvhcq_buffer *fifo, *heap;
  uint8_t *ring;
  uint64_t capacity, head; /* head: the host's copy of what it consumed */
  nvhcq_print_fn print;
  void *print_user;
  char assertion[400]; /* the first assertion since the last recovery, for the fault report */
  uint8_t record[MAX_RECORD];
  char text[SCRATCH_BYTES];
} nvhcq_syscalls;

#define import_names  nvhcq_cubin_syscall_names
#define SYSCALL_STACK 1024u /* bytes of stack a kernel calling syscalls gets at least */

/* The device's part, made on first use (limits may be set before any module needs it). */
static nvhcq_syscalls *get(nvhcq_device *dev) {
  if (dev->syscalls) return dev->syscalls;
  nvhcq_syscalls *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->load_lock, NULL);
  s->fifo_limit = DEFAULT_FIFO;
  s->heap_limit = DEFAULT_HEAP;
  nvhcq_syscalls *none = NULL;
  if (!__atomic_compare_exchange_n(&dev->syscalls, &none, s, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->load_lock);
    free(s);
  }
  return dev->syscalls;
}

/* The cubin for this GPU: an exact match, else the newest of its major version not newer. */
static const nvhcq_builtin_cubin *pick_cubin(unsigned sm) {
  const nvhcq_builtin_cubin *best = NULL;
  for (const nvhcq_builtin_cubin *b = nvhcq_syscall_cubins; b->sm; b++)
    if (b->sm / 10 == sm / 10 && b->sm <= sm && (!best || b->sm > best->sm)) best = b;
  return best;
}

static int import_index(const char *name) {
  for (int i = 0; i < NVHCQ_CUBIN_MAX_IMPORTS; i++)
    if (!strcmp(name, import_names[i])) return i;
  return -1;
}

static nvhcq_status find_functions(nvhcq_syscalls *s) {
  const nvhcq_cubin *c = s->module->cubin;
  uint64_t base = s->module->image.gpu_address;
  for (int i = 0; i < NVHCQ_CUBIN_MAX_IMPORTS; i++) {
    char name[64];
    snprintf(name, sizeof name, "nvhcq_sys_%s", import_names[i]);
    const nvhcq_cubin_function *f = nvhcq_cubin_find_function(c, name);
    if (!f)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE,
                        "nvhcq's device syscalls lack %s: rebuild nvhcq (src/exec/syscalls.cu)",
                        name);
    s->function[i] = base + f->offset;
    s->registers[i] = f->registers;
    s->frame[i] = f->frame_size;
  }
  const nvhcq_cubin_global *g = nvhcq_cubin_find_global(c, "nvhcq_sys");
  if (!g || g->size < sizeof(nvhcq_sys_state))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE,
                      "nvhcq's device syscalls lack their state nvhcq_sys: rebuild nvhcq");
  s->state = (volatile nvhcq_sys_state *)(nvhcq_arena_host(&s->module->image) + g->offset);
  return NVHCQ_SUCCESS;
}

static nvhcq_status load_module(nvhcq_device *dev, nvhcq_syscalls *s, const char *needs) {
  unsigned sm = nvhcq_sm_number(dev->info.sm_version);
  const nvhcq_builtin_cubin *b = pick_cubin(sm);
  if (!b)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "the cubin calls %s (device printf, assert, malloc, free, a grid sync or "
                      "cudaGraphSetConditional), which nvhcq "
                      "provides only when it is built with the CUDA toolkit's nvcc for sm_%u; "
                      "rebuild nvhcq with the CUDA toolkit installed (nvcc on PATH or in "
                      "CUDA_PATH)",
                      needs, sm);
  NVHCQ_TRY(nvhcq_module_load(dev, b->data, b->size, &s->module));
  return find_functions(s);
}

/* Largest power of two not above the limit: the ring's positions wrap by masking. */
static uint64_t ring_bytes(uint64_t limit) {
  uint64_t r = MIN_FIFO;
  while (r * 2 <= limit && r * 2 <= MAX_FIFO) r *= 2;
  return r;
}

/* Pinned, CPU-cached host memory (as the staging buffers): the GPU's writes are snooped, and the
 * drain reads every record through the cache. */
static nvhcq_status make_fifo(nvhcq_device *dev, nvhcq_syscalls *s) {
  uint64_t ring = ring_bytes(s->fifo_limit);
  nvhcq_buffer *b;
  NVHCQ_TRY(nvhcq_memory_alloc(dev, NVHCQ_SYS_RING + ring, NVHCQ_MEMORY_HOST, NULL, &b));
  memset(b->host_pointer, 0, NVHCQ_SYS_RING + ring);
  s->ring = (uint8_t *)b->host_pointer + NVHCQ_SYS_RING;
  s->capacity = ring;
  s->state->fifo_capacity = ring;
  s->state->fifo = b->gpu_address;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);         /* before any launch that reads them */
  __atomic_store_n(&s->fifo, b, __ATOMIC_RELEASE); /* the drain starts looking */
  return NVHCQ_SUCCESS;
}

static nvhcq_status make_heap(nvhcq_device *dev, nvhcq_syscalls *s) {
  NVHCQ_TRY(nvhcq_memory_alloc(dev, s->heap_limit, NVHCQ_MEMORY_DEVICE, NULL, &s->heap));
  s->state->heap_size = s->heap_limit;
  s->state->heap = s->heap->gpu_address;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return NVHCQ_SUCCESS;
}

/* The module, the FIFO (every syscall may write to it) and, for malloc and free, the heap. */
static nvhcq_status ensure(nvhcq_device *dev, nvhcq_syscalls *s, const nvhcq_cubin *c) {
  if (!s->tried) {
    s->tried = 1;
    s->load_status = load_module(dev, s, c->imports[0]);
    if (!s->load_status) s->load_status = make_fifo(dev, s);
    snprintf(s->load_error, sizeof s->load_error, "%s", nvhcq_last_error());
    /* Only a build without the syscalls stays refused; anything else (memory) is tried again. */
    if (s->load_status && s->load_status != NVHCQ_ERROR_UNSUPPORTED) {
      if (s->module) (void)nvhcq_module_unload(s->module);
      s->module = NULL;
      s->tried = 0;
      return nvhcq_fail(s->load_status, "%s", s->load_error);
    }
  }
  if (s->load_status) return nvhcq_fail(s->load_status, "%s", s->load_error);
  for (uint32_t i = 0; i < c->import_count && !s->heap; i++)
    if (!strcmp(c->imports[i], "malloc") || !strcmp(c->imports[i], "free"))
      NVHCQ_TRY(make_heap(dev, s));
  return NVHCQ_SUCCESS;
}

/* A kernel calling syscalls gets at least their registers (a callee using more than its caller
 * was given faults: Xid 13) and room for their frames below its own. */
static void raise_kernels(const nvhcq_syscalls *s, nvhcq_cubin *c, const int *which) {
  for (uint32_t k = 0; k < c->kernel_count; k++) {
    nvhcq_cubin_kernel *kn = &c->kernels[k];
    uint32_t frame = 0;
    for (uint32_t i = 0; i < c->import_count; i++) {
      if (!(kn->imports >> i & 1)) continue;
      int f = which[i];
      if (s->registers[f] > kn->registers) kn->registers = s->registers[f];
      if (s->frame[f] > frame) frame = s->frame[f];
    }
    kn->min_stack_size += frame;
    /* The frames EIATTR_FRAME_SIZE gives leave out what the syscalls' own callees take (on the
     * H200 a printf kernel given its own frame plus vprintf's faulted 32 bytes below its stack:
     * "invalid address space" on a generic load of its arguments). A caller gets at least the
     * 1 KiB stack libcuda gives every kernel (CU_LIMIT_STACK_SIZE's default; its QMDs' local
     * high size is 0x640: the stack and the 0x240 above its top). */
    if (frame && kn->min_stack_size < SYSCALL_STACK) kn->min_stack_size = SYSCALL_STACK;
  }
}

nvhcq_status nvhcq_syscalls_resolve(nvhcq_device *dev, nvhcq_cubin *c,
                                    uint64_t addresses[NVHCQ_CUBIN_MAX_IMPORTS]) {
  nvhcq_syscalls *s = get(dev);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  int which[NVHCQ_CUBIN_MAX_IMPORTS];
  for (uint32_t i = 0; i < c->import_count; i++)
    if ((which[i] = import_index(c->imports[i])) < 0)
      return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE, "the cubin needs undefined symbol %s",
                        c->imports[i]);
  pthread_mutex_lock(&s->load_lock);
  nvhcq_status st = ensure(dev, s, c);
  pthread_mutex_unlock(&s->load_lock);
  if (st) return st;
  for (uint32_t i = 0; i < c->import_count; i++) addresses[i] = s->function[which[i]];
  raise_kernels(s, c, which);
  return NVHCQ_SUCCESS;
}

/* ---- the drain ---------------------------------------------------------------------------- */

static void emit(nvhcq_syscalls *s, const char *text, size_t n, int is_assert) {
  if (!n) return;
  if (s->print) {
    s->print(s->print_user, text, n, is_assert);
    return;
  }
  FILE *f = is_assert ? stderr : stdout;
  fwrite(text, 1, n, f);
  fflush(f);
}

static void handle(nvhcq_syscalls *s, const uint8_t *rec, uint32_t size) {
  uint32_t kind;
  memcpy(&kind, rec + 4, sizeof kind);
  if (kind == NVHCQ_SYS_PRINTF) {
    emit(s, s->text, nvhcq_print_format(rec, size, s->text, sizeof s->text), 0);
  } else if (kind == NVHCQ_SYS_ASSERT) {
    size_t n = nvhcq_print_assert(rec, size, s->text, sizeof s->text);
    if (n && !s->assertion[0])
      snprintf(s->assertion, sizeof s->assertion, "%.*s", (int)(n - 1), s->text);
    emit(s, s->text, n, 1);
  }
}

/* Consumes everything reserved so far, ready or not (after a recovery, or a corrupt record). */
static void skip_all(nvhcq_syscalls *s) {
  memset(s->ring, 0, s->capacity);
  __atomic_store_n(&s->head, s->state->tail, __ATOMIC_RELAXED);
  __atomic_store_n(&((nvhcq_sys_fifo *)s->fifo->host_pointer)->head, s->head, __ATOMIC_RELEASE);
}

/* The record at the head, or 0 when it is not ready. */
static uint32_t ready_size(const nvhcq_syscalls *s) {
  return __atomic_load_n((const uint32_t *)(s->ring + (s->head & (s->capacity - 1))),
                         __ATOMIC_ACQUIRE);
}

static void drain_locked(nvhcq_syscalls *s) {
  uint32_t size;
  while (s->fifo && (size = ready_size(s)) != 0) {
    uint64_t at = s->head & (s->capacity - 1);
    if (size % NVHCQ_SYS_ALIGN || size > s->capacity - at ||
        (size > MAX_RECORD && ((const uint32_t *)(s->ring + at))[1] != NVHCQ_SYS_PAD)) {
      fprintf(stderr,
              "nvhcq: device printf FIFO corrupt at %llu (record of %u bytes): output "
              "skipped\n",
              (unsigned long long)s->head, size);
      skip_all(s);
      return;
    }
    if (size <= MAX_RECORD) {
      memcpy(s->record, s->ring + at, size);
      if (nvhcq_print_record_ok(s->record, size)) handle(s, s->record, size);
    }
    memset(s->ring + at, 0, size); /* before the GPU may reuse it */
    __atomic_store_n(&s->head, s->head + size, __ATOMIC_RELAXED);
    __atomic_store_n(&((nvhcq_sys_fifo *)s->fifo->host_pointer)->head, s->head, __ATOMIC_RELEASE);
  }
}

/* Every CPU wait comes here: without a ready record at the head it returns at once, unlocked. */
void nvhcq_syscalls_drain(nvhcq_device *dev) {
  nvhcq_syscalls *s = __atomic_load_n(&dev->syscalls, __ATOMIC_ACQUIRE);
  if (!s || !__atomic_load_n(&s->fifo, __ATOMIC_ACQUIRE)) return;
  uint64_t head = __atomic_load_n(&s->head, __ATOMIC_RELAXED);
  if (!__atomic_load_n((const uint32_t *)(s->ring + (head & (s->capacity - 1))), __ATOMIC_ACQUIRE))
    return;
  pthread_mutex_lock(&s->lock);
  drain_locked(s);
  pthread_mutex_unlock(&s->lock);
}

void nvhcq_syscalls_explain(nvhcq_device *dev, char *out, size_t cap) {
  out[0] = '\0';
  nvhcq_syscalls *s = __atomic_load_n(&dev->syscalls, __ATOMIC_ACQUIRE);
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  drain_locked(s);
  if (s->assertion[0]) snprintf(out, cap, "device-side assertion failed: %s", s->assertion);
  pthread_mutex_unlock(&s->lock);
}

void nvhcq_syscalls_reset(nvhcq_device *dev) {
  nvhcq_syscalls *s = dev->syscalls;
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  drain_locked(s);
  if (s->fifo) skip_all(s);
  s->assertion[0] = '\0';
  pthread_mutex_unlock(&s->lock);
}

uint8_t *nvhcq_syscalls_test_fifo(nvhcq_device *dev, uint64_t *capacity, nvhcq_sys_fifo **fifo,
                                  nvhcq_sys_state **state) {
  nvhcq_syscalls *s = dev->syscalls;
  if (!s || !s->fifo) return NULL;
  *capacity = s->capacity;
  *fifo = s->fifo->host_pointer;
  *state = (nvhcq_sys_state *)s->state;
  return s->ring;
}

void nvhcq_syscalls_close(nvhcq_device *dev) {
  nvhcq_syscalls *s = dev->syscalls;
  if (!s) return;
  pthread_mutex_lock(&s->lock); /* a drain of another thread's wait finishes first */
  if (s->fifo && !dev->broken) drain_locked(s);
  __atomic_store_n(&dev->syscalls, NULL, __ATOMIC_RELEASE); /* no drain looks at it any more */
  pthread_mutex_unlock(&s->lock);
  if (s->module) (void)nvhcq_module_unload(s->module);
  nvhcq_memory_drop(&s->fifo);
  nvhcq_memory_drop(&s->heap);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->load_lock);
  free(s);
}

/* ---- the API ------------------------------------------------------------------------------ */

static nvhcq_status bad_limit(uint32_t limit) {
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "limit %u is unknown (NVHCQ_LIMIT_PRINTF_FIFO_SIZE is 1, "
                    "NVHCQ_LIMIT_MALLOC_HEAP_SIZE 2)",
                    limit);
}

static nvhcq_status set_limit_locked(nvhcq_device *dev, nvhcq_syscalls *s, uint32_t limit,
                                     uint64_t value) {
  int fifo = limit == NVHCQ_LIMIT_PRINTF_FIFO_SIZE;
  if ((fifo && s->fifo) || (!fifo && s->heap))
    return nvhcq_fail(NVHCQ_ERROR_BUSY,
                      "GPU %d: the device %s exists already (a module using it was loaded); set "
                      "the limit before loading the first one",
                      dev->index, fifo ? "printf FIFO" : "heap");
  if (fifo ? value < MIN_FIFO || value > MAX_FIFO : value < 4096 || value > MAX_HEAP)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "GPU %d: %llu bytes for the device %s; it takes 4 KiB to %s", dev->index,
                      (unsigned long long)value, fifo ? "printf FIFO" : "heap",
                      fifo ? "1 GiB" : "64 GiB");
  if (fifo)
    s->fifo_limit = value;
  else
    s->heap_limit = value;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_set_limit(nvhcq_device *dev, uint32_t limit, uint64_t value) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (limit != NVHCQ_LIMIT_PRINTF_FIFO_SIZE && limit != NVHCQ_LIMIT_MALLOC_HEAP_SIZE)
    return bad_limit(limit);
  nvhcq_syscalls *s = get(dev);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&s->load_lock);
  nvhcq_status st = set_limit_locked(dev, s, limit, value);
  pthread_mutex_unlock(&s->load_lock);
  return st;
}

nvhcq_status nvhcq_device_get_limit(nvhcq_device *dev, uint32_t limit, uint64_t *value) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!value)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_get_limit: value is NULL");
  if (limit != NVHCQ_LIMIT_PRINTF_FIFO_SIZE && limit != NVHCQ_LIMIT_MALLOC_HEAP_SIZE)
    return bad_limit(limit);
  nvhcq_syscalls *s = get(dev);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&s->load_lock);
  *value = limit == NVHCQ_LIMIT_PRINTF_FIFO_SIZE ? s->fifo_limit : s->heap_limit;
  pthread_mutex_unlock(&s->load_lock);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_set_print_callback(nvhcq_device *dev, nvhcq_print_fn fn, void *user) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  nvhcq_syscalls *s = get(dev);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&s->lock);
  s->print = fn;
  s->print_user = fn ? user : NULL;
  pthread_mutex_unlock(&s->lock);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_print_flush(nvhcq_device *dev, uint64_t *dropped) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  nvhcq_syscalls *s = get(dev);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&s->lock);
  drain_locked(s);
  if (dropped) *dropped = s->state ? s->state->dropped : 0;
  pthread_mutex_unlock(&s->lock);
  return NVHCQ_SUCCESS;
}
