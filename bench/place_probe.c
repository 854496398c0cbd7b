/* A preloaded library that puts the next video-memory allocation of any library in the process
 * (nvhcq's or libcuda's) at a physical address its caller names, so that a benchmark can run both
 * libraries on the same pages of GPU memory. usage: LD_PRELOAD=build/libnvhcq_place_probe.so
 * PROGRAM, where PROGRAM finds the two functions below with dlsym (nvhcq_bench_real does).
 *
 * Why: on the H200 a kernel's time depends on which physical pages hold its buffers (ew_add back
 * to back: 2.42 to 2.61 us per launch over placements of the same three buffers), and each
 * library's allocator picks its own pages; only the same pages compare the libraries' launches.
 * How: every RM escape goes through ioctl(2); this library defines ioctl, forwards each call to
 * the C library's, and rewrites the one video-memory allocation (NV01_MEMORY_LOCAL_USER) that
 * nvhcq_place_probe_next armed into a fixed-address one (RM's NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_
 * ALLOCATE, its offset the physical address). Nothing else is changed. With NVHCQ_PLACE_PROBE_LOG=1
 * it also prints every video-memory allocation of the process and its pages (see log_alloc). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "abi/rm.h"

#define FIXED_ADDRESS_ALLOCATE 0x10u /* NV_MEMORY_ALLOCATION_PARAMS.flags: place at .offset */

typedef int (*ioctl_fn)(int, unsigned long, ...);

/* Per thread: each library allocates on the thread that asked it to. */
static _Thread_local uint64_t armed;      /* physical address for the next allocation, or 0 */
static _Thread_local uint64_t armed_size; /* ... of this many bytes or more */
static _Thread_local uint64_t last_place; /* where the last armed allocation went, 0: failed */

/* Arms the calling thread's next video-memory allocation of `min_size` bytes or more to be placed
 * at `physical_address` (a multiple of 2 MiB); returns 1, so that a caller knows the probe is
 * there. The size keeps a library's smaller allocations of its own from taking the place;
 * an address of 0 disarms. */
int nvhcq_place_probe_next(uint64_t physical_address, uint64_t min_size);
/* The physical address the last armed allocation got (0 if it failed or none happened yet). */
uint64_t nvhcq_place_probe_last(void);

int nvhcq_place_probe_next(uint64_t physical_address, uint64_t min_size) {
  armed = physical_address;
  armed_size = min_size;
  last_place = 0;
  return 1;
}

uint64_t nvhcq_place_probe_last(void) {
  return last_place;
}

static int is_video_alloc(unsigned long request, const NVOS21_PARAMETERS *p) {
  return ((request >> 8) & 0xffu) == NV_IOCTL_MAGIC && (request & 0xffu) == NV_ESC_RM_ALLOC &&
         p->hClass == NV01_MEMORY_LOCAL_USER && p->pAllocParms;
}

static int is_armed_alloc(unsigned long request, const NVOS21_PARAMETERS *p) {
  if (!armed || !is_video_alloc(request, p)) return 0;
  return ((const NV_MEMORY_ALLOCATION_PARAMS *)(uintptr_t)p->pAllocParms)->size >= armed_size;
}

static ioctl_fn next;

/* NVHCQ_PLACE_PROBE_LOG=1: every video-memory allocation of either library is printed on stderr
 * with its attributes and, per 2 MiB, the physical address RM reports (GET_SURFACE_PHYS_ATTR,
 * 0x410103: memOffset in, physical address out), so that the two allocators' choices can be
 * compared. */
#define GET_SURFACE_PHYS_ATTR 0x410103u
#define LOG_PAGE              (2ull << 20)
#define LOG_MAX_PAGES         64

typedef struct {
  uint64_t mem_offset;
  uint32_t mem_format, compr_offset, compr_format, aperture, cache, p2p_cache, mmu_context, pad;
  uint64_t contig_segment;
} phys_attr_params;

static int log_on(void) {
  static int on = -1;
  if (on < 0) on = getenv("NVHCQ_PLACE_PROBE_LOG") != NULL;
  return on;
}

static void log_alloc(int fd, const NVOS21_PARAMETERS *p, const NV_MEMORY_ALLOCATION_PARAMS *m) {
  fprintf(stderr,
          "probe: alloc h=%#x size=%#llx type=%u flags=%#x attr=%#x attr2=%#x align=%#llx "
          "offset=%#llx\n",
          p->hObjectNew, (unsigned long long)m->size, m->type, m->flags, m->attr, m->attr2,
          (unsigned long long)m->alignment, (unsigned long long)m->offset);
  for (uint64_t at = 0; at < m->size && at < LOG_MAX_PAGES * LOG_PAGE; at += LOG_PAGE) {
    phys_attr_params a = {.mem_offset = at};
    NVOS54_PARAMETERS c = {.hClient = p->hRoot,
                           .hObject = p->hObjectNew,
                           .cmd = GET_SURFACE_PHYS_ATTR,
                           .params = (uint64_t)(uintptr_t)&a,
                           .paramsSize = sizeof a};
    int r = next(fd, NV_IOWR(NV_ESC_RM_CONTROL, sizeof c), &c);
    fprintf(stderr, "probe:   +%#llx phys=%#llx status=%#x rc=%d contig=%#llx\n",
            (unsigned long long)at, (unsigned long long)a.mem_offset, c.status, r,
            (unsigned long long)a.contig_segment);
    if (r || c.status) break;
  }
}

/* The status of an RM_ALLOC escape of either size (see ioctl below). */
static uint32_t alloc_status(unsigned long request, const void *arg) {
  return ((request >> 16) & 0x3fffu) == 48 ? ((const uint32_t *)arg)[10]
                                           : ((const NVOS21_PARAMETERS *)arg)->status;
}

/* Before the program's threads start (and again if another library's constructor got here
 * first). */
__attribute__((constructor)) static void find_next(void) {
  next = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
}

int ioctl(int fd, unsigned long request, ...) {
  if (!next) find_next();
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  NVOS21_PARAMETERS *p = arg;
  NV_MEMORY_ALLOCATION_PARAMS *m = NULL;
  if (is_armed_alloc(request, arg)) {
    m = (NV_MEMORY_ALLOCATION_PARAMS *)(uintptr_t)p->pAllocParms;
    m->flags |= FIXED_ADDRESS_ALLOCATE;
    m->offset = armed;
    armed = 0;
  }
  int r = next(fd, request, arg);
  /* The escape takes NVOS21 (32 bytes, status at byte 28) or, with requested rights, NVOS64 (48
   * bytes, status at byte 40). RM returns the physical address of the first page in .offset. */
  int ok = r == 0 && (m || (log_on() && is_video_alloc(request, arg))) &&
           alloc_status(request, arg) == 0;
  if (m) last_place = ok ? m->offset : 0;
  if (ok && log_on())
    log_alloc(fd, p, (const NV_MEMORY_ALLOCATION_PARAMS *)(uintptr_t)p->pAllocParms);
  return r;
}
