/* Memory and events shared between processes through 64-byte handles. Memory (cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle): nvhcq's IPC handles, opened by mapping the exporter's
 * allocation into a range of this process's GPU addresses. Events (cuIpcGetEventHandle,
 * cuIpcOpenEventHandle): the semaphore lives in a page of POSIX shared memory that each process
 * registers with its GPU, the handle names it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int nvcu_ipc_capable(const nvcu_alloc *a) {
  return !a->host && !a->vmm && !a->pool && !a->graph_mem && !a->ipc_range && !a->registered;
}

CUresult nvcu_ipc_export(const nvcu_alloc *a, void *out, const char *what) {
  nvhcq_ipc_handle h;
  CUresult r = nvcu_status(nvhcq_buffer_export_ipc(a->buf, &h), what);
  if (!r) memcpy(out, h.bytes, sizeof h.bytes);
  return r;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
  NVCU_LOCK();
  CUresult r = nvcu_check_init();
  nvcu_alloc *a = r ? NULL : nvcu_alloc_find(dptr);
  if (!r && (!a || !nvcu_ipc_capable(a))) {
    nvcu_log("cuIpcGetMemHandle: 0x%llx is not in device memory from cuMemAlloc (pool, managed, "
             "host, virtual-memory and opened IPC memory are not shared this way)",
             (unsigned long long)dptr);
    r = CUDA_ERROR_INVALID_VALUE;
  }
  if (!r) r = nvcu_ipc_export(a, pHandle->reserved, "cuIpcGetMemHandle");
  NVCU_UNLOCK();
  return r;
}

/* Maps all of the imported allocation at addresses of its own; the exported bytes start at
 * `offset` in it. */
CUresult nvcu_ipc_open(nvcu_device *d, int index, const nvhcq_ipc_handle *h,
                       struct CUmemPoolHandle_st *pool, CUdeviceptr *out) {
  nvhcq_physical *p = NULL;
  nvhcq_reservation *range = NULL;
  nvhcq_buffer *b = NULL;
  uint64_t offset = 0, size = 0;
  nvhcq_status s = nvhcq_physical_import_ipc(d->dev, h, &p, &offset, &size);
  uint64_t whole = s ? 0 : nvhcq_physical_size(p);
  if (!s) s = nvhcq_reservation_create(whole, 0, 0, &range);
  if (!s)
    s = nvhcq_buffer_map_physical(range, nvhcq_reservation_gpu_address(range), p, 0, whole, &b);
  nvhcq_physical_destroy(p); /* the mapping holds the memory */
  CUresult r = nvcu_status(s, "cuIpcOpenMemHandle");
  nvcu_alloc a = {.base = nvhcq_buffer_gpu_address(b) + offset,
                  .size = size,
                  .buf = b,
                  .buf_offset = offset,
                  .device = index,
                  .ipc_range = range,
                  .pool = pool};
  if (!r) r = nvcu_alloc_add(&a);
  if (r) {
    nvhcq_buffer_destroy(b);
    if (range) nvhcq_reservation_destroy(range); /* waits for the unmapping, if any */
    return r;
  }
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return CUDA_ERROR_INVALID_VALUE;
  nvhcq_ipc_handle h;
  memcpy(h.bytes, handle.reserved, sizeof h.bytes);
  NVCU_LOCK();
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  if (!r) r = nvcu_ipc_open(d, index, &h, NULL, pdptr);
  NVCU_UNLOCK();
  return r;
}

/* Unmaps what cuIpcOpenMemHandle mapped, once the GPU has passed the work before. */
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  NVCU_LOCK();
  nvcu_alloc *a = nvcu_alloc_find(dptr);
  int opened = a && a->ipc_range && !a->pool && a->base == dptr;
  CUresult r = opened ? nvcu_alloc_release(a) : CUDA_ERROR_INVALID_VALUE;
  NVCU_UNLOCK();
  return r;
}

/* ---- events ---- */

/* The shared page: the signal's value and timestamp, then how many records were issued (by any
 * process; a wait waits for the latest), then a mark that says the page is an event's. */
#define PAGE_BYTES  4096u
#define WORD_ISSUED 8
#define WORD_MARK   9
#define PAGE_MARK   0x544e4556514856ull /* "VHQEVNT" */
#define HANDLE_MARK 0x76454e56u         /* first word of an event handle: "VNEv" */

struct nvcu_ipc_event {
  volatile uint64_t *words; /* the mapped page */
  nvhcq_buffer *buf;        /* the page registered with the event's GPU */
  char name[48];            /* its shared-memory name */
  int owner;                /* made here: the name goes with the event */
};

typedef struct {
  uint32_t mark, version;
  char name[48];
  uint8_t pad[8];
} event_handle;
_Static_assert(sizeof(event_handle) == CU_IPC_HANDLE_SIZE, "an event handle is 64 bytes");

/* Maps the page `name` (made when `create`) and makes the event's signal over it. */
static CUresult map_page(nvcu_device *d, struct nvcu_ipc_event *ip, int create) {
  int fd = shm_open(ip->name, O_RDWR | (create ? O_CREAT | O_EXCL : 0), 0600);
  if (fd < 0 || (create && ftruncate(fd, PAGE_BYTES))) {
    nvcu_log("interprocess event: shared memory %s: %s", ip->name, strerror(errno));
    if (fd >= 0) close(fd);
    return create ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
  }
  void *p = mmap(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    nvcu_log("interprocess event: mapping %s: %s", ip->name, strerror(errno));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ip->words = p;
  if (create) ip->words[WORD_MARK] = PAGE_MARK;
  if (ip->words[WORD_MARK] != PAGE_MARK) {
    nvcu_log("interprocess event: %s is not an event's page", ip->name);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return nvcu_status(nvhcq_buffer_register_host(d->dev, p, PAGE_BYTES, &ip->buf),
                     "registering an interprocess event's page");
}

static void page_free(struct nvcu_ipc_event *ip) {
  nvhcq_buffer_destroy(ip->buf);
  if (ip->words) munmap((void *)ip->words, PAGE_BYTES);
  if (ip->owner) shm_unlink(ip->name);
  free(ip);
}

/* The page, and the event's signal over it (its value is the page's: nothing is reset). */
static CUresult event_attach(nvcu_device *d, struct CUevent_st *ev, struct nvcu_ipc_event *ip,
                             int create) {
  CUresult r = map_page(d, ip, create);
  if (!r)
    r = nvcu_status(nvhcq_signal_create_at(ip->buf, 0, &ev->sig), "interprocess event signal");
  if (r) {
    page_free(ip);
    return r;
  }
  ev->ipc = ip;
  return CUDA_SUCCESS;
}

CUresult nvcu_ipc_event_make(nvcu_device *d, struct CUevent_st *ev) {
  static unsigned made;
  struct nvcu_ipc_event *ip = calloc(1, sizeof *ip);
  if (!ip) return CUDA_ERROR_OUT_OF_MEMORY;
  snprintf(ip->name, sizeof ip->name, "/nvhcq-event-%d-%u", (int)getpid(),
           __atomic_add_fetch(&made, 1, __ATOMIC_RELAXED));
  ip->owner = 1;
  return event_attach(d, ev, ip, 1);
}

void nvcu_ipc_event_free(struct CUevent_st *ev) {
  if (!ev->ipc) return;
  nvhcq_signal_destroy(ev->sig);
  ev->sig = NULL;
  page_free(ev->ipc);
  ev->ipc = NULL;
}

uint64_t nvcu_ipc_event_target(const struct CUevent_st *ev) {
  return __atomic_load_n(&ev->ipc->words[WORD_ISSUED], __ATOMIC_ACQUIRE);
}

uint64_t nvcu_ipc_event_next(struct CUevent_st *ev) {
  return __atomic_add_fetch(&ev->ipc->words[WORD_ISSUED], 1, __ATOMIC_ACQ_REL);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event) {
  if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
  if (!event || event->magic != NVCU_EVENT_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (!event->ipc) {
    nvcu_log("cuIpcGetEventHandle: the event was made without CU_EVENT_INTERPROCESS");
    return CUDA_ERROR_INVALID_VALUE;
  }
  event_handle h = {.mark = HANDLE_MARK, .version = 1};
  memcpy(h.name, event->ipc->name, sizeof h.name);
  memcpy(pHandle->reserved, &h, sizeof h);
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle) {
  if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
  event_handle h;
  memcpy(&h, handle.reserved, sizeof h);
  if (h.mark != HANDLE_MARK || h.version != 1 || !memchr(h.name, 0, sizeof h.name)) {
    nvcu_log("cuIpcOpenEventHandle: the handle is not one cuIpcGetEventHandle gave");
    return CUDA_ERROR_INVALID_VALUE;
  }
  NVCU_LOCK();
  nvcu_device *d;
  int index;
  CUresult r = nvcu_current(&d, &index);
  struct CUevent_st *ev = r ? NULL : calloc(1, sizeof *ev);
  struct nvcu_ipc_event *ip = ev ? calloc(1, sizeof *ip) : NULL;
  if (!r && !ip) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    memcpy(ip->name, h.name, sizeof ip->name);
    *ev = (struct CUevent_st){.magic = NVCU_EVENT_MAGIC,
                              .device = index,
                              .flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING};
    r = event_attach(d, ev, ip, 0);
    if (r) nvcu_log("cuIpcOpenEventHandle: opening %s failed (is its event destroyed?)", h.name);
  }
  if (r)
    free(ev);
  else
    *phEvent = ev;
  NVCU_UNLOCK();
  return r;
}

/* CUDA 4's name for it, with the same parameters (what clients built before CUDA 11 call). */
NVCU_ALIAS(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2)
