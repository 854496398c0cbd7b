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
 * ALLOCATE, its offset the physical address). Nothing else is changed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>

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

static int is_armed_alloc(unsigned long request, const NVOS21_PARAMETERS *p) {
  if (!armed || ((request >> 8) & 0xffu) != NV_IOCTL_MAGIC || (request & 0xffu) != NV_ESC_RM_ALLOC)
    return 0;
  if (p->hClass != NV01_MEMORY_LOCAL_USER || !p->pAllocParms) return 0;
  return ((const NV_MEMORY_ALLOCATION_PARAMS *)(uintptr_t)p->pAllocParms)->size >= armed_size;
}

static ioctl_fn next;

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
  if (!is_armed_alloc(request, arg)) return next(fd, request, arg);
  NVOS21_PARAMETERS *p = arg;
  NV_MEMORY_ALLOCATION_PARAMS *m = (NV_MEMORY_ALLOCATION_PARAMS *)(uintptr_t)p->pAllocParms;
  m->flags |= FIXED_ADDRESS_ALLOCATE;
  m->offset = armed;
  armed = 0;
  int r = next(fd, request, arg);
  /* The escape takes NVOS21 (32 bytes, status at byte 28) or, with requested rights, NVOS64 (48
   * bytes, status at byte 40). RM returns the physical address of the first page in .offset. */
  uint32_t status = ((request >> 16) & 0x3fffu) == 48 ? ((const uint32_t *)arg)[10] : p->status;
  last_place = r == 0 && status == 0 ? m->offset : 0;
  return r;
}
