/* Address ranges: the first-fit allocator, and the process-wide CPU-visible range (reserved
 * below 2^40) and GPU-only range every buffer takes its address from. */
#include "util/va.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/align.h"

nvhcq_status nvhcq_va_init(nvhcq_va *va, uint64_t base, uint64_t size) {
  memset(va, 0, sizeof *va);
  pthread_mutex_init(&va->lock, NULL);
  va->base = base;
  va->size = size;
  va->capacity = 64;
  va->free = malloc(va->capacity * sizeof *va->free);
  if (!va->free) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "address allocator: out of memory");
  va->free[0] = (nvhcq_va_range){base, size};
  va->count = 1;
  return NVHCQ_SUCCESS;
}

void nvhcq_va_finish(nvhcq_va *va) {
  free(va->free);
  pthread_mutex_destroy(&va->lock);
  memset(va, 0, sizeof *va);
}

static int insert_at(nvhcq_va *va, uint32_t i, nvhcq_va_range r) {
  if (va->count == va->capacity) {
    nvhcq_va_range *grown = realloc(va->free, 2 * va->capacity * sizeof *grown);
    if (!grown) return 0;
    va->free = grown;
    va->capacity *= 2;
  }
  memmove(&va->free[i + 1], &va->free[i], (va->count - i) * sizeof r);
  va->free[i] = r;
  va->count++;
  return 1;
}

static void remove_at(nvhcq_va *va, uint32_t i) {
  memmove(&va->free[i], &va->free[i + 1], (va->count - i - 1) * sizeof va->free[0]);
  va->count--;
}

/* Carves [addr, addr+size) out of free range i, which contains it. */
static int carve(nvhcq_va *va, uint32_t i, uint64_t addr, uint64_t size) {
  nvhcq_va_range r = va->free[i];
  uint64_t tail = r.base + r.size - (addr + size);
  if (addr == r.base && tail == 0) {
    remove_at(va, i);
    return 1;
  }
  if (addr == r.base) {
    va->free[i] = (nvhcq_va_range){addr + size, tail};
    return 1;
  }
  va->free[i].size = addr - r.base;
  return tail == 0 || insert_at(va, i + 1, (nvhcq_va_range){addr + size, tail});
}

/* First fit: 1 when [*addr, +size) was taken, 0 when no free range fits, -1 when the list of
 * free ranges cannot grow (out of host memory). */
static int take(nvhcq_va *va, uint64_t size, uint64_t align, uint64_t *addr) {
  pthread_mutex_lock(&va->lock);
  for (uint32_t i = 0; i < va->count; i++) {
    nvhcq_va_range r = va->free[i];
    uint64_t start = NVHCQ_ALIGN_UP(r.base, align);
    if (start < r.base || start - r.base > r.size || r.size - (start - r.base) < size) continue;
    int ok = carve(va, i, start, size);
    pthread_mutex_unlock(&va->lock);
    if (!ok) return -1;
    *addr = start;
    return 1;
  }
  pthread_mutex_unlock(&va->lock);
  return 0;
}

static int valid_request(uint64_t size, uint64_t align) {
  return size != 0 && align != 0 && !(align & (align - 1));
}

nvhcq_status nvhcq_va_alloc(nvhcq_va *va, uint64_t size, uint64_t align, uint64_t *addr) {
  if (!valid_request(size, align))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "address allocator: size %llu / alignment %llu invalid",
                      (unsigned long long)size, (unsigned long long)align);
  int r = take(va, size, align, addr);
  if (r > 0) return NVHCQ_SUCCESS;
  if (r < 0) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "address allocator: out of memory");
  return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                    "no free virtual address range of %llu bytes (aligned to %llu) left in "
                    "[0x%llx, 0x%llx); free buffers first",
                    (unsigned long long)size, (unsigned long long)align,
                    (unsigned long long)va->base, (unsigned long long)(va->base + va->size));
}

int nvhcq_va_try_alloc(nvhcq_va *va, uint64_t size, uint64_t align, uint64_t *addr) {
  return valid_request(size, align) && take(va, size, align, addr) > 0;
}

int nvhcq_va_take_at(nvhcq_va *va, uint64_t addr, uint64_t size, uint64_t *taken_base,
                     uint64_t *taken_size) {
  uint64_t lo = addr > va->base ? addr : va->base;
  uint64_t end = addr + size, span_end = va->base + va->size;
  uint64_t hi = end < span_end ? end : span_end;
  *taken_base = lo;
  *taken_size = 0;
  if (lo >= hi) return 1;
  pthread_mutex_lock(&va->lock);
  int ok = 0;
  for (uint32_t i = 0; i < va->count && !ok; i++) {
    nvhcq_va_range r = va->free[i];
    if (r.base <= lo && hi - r.base <= r.size) ok = carve(va, i, lo, hi - lo) ? 1 : -1;
  }
  pthread_mutex_unlock(&va->lock);
  if (ok > 0) *taken_size = hi - lo;
  return ok > 0;
}

nvhcq_status nvhcq_va_free(nvhcq_va *va, uint64_t addr, uint64_t size) {
  if (size == 0 || addr < va->base || addr - va->base > va->size ||
      va->size - (addr - va->base) < size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "address range 0x%llx+%llu is not ours",
                      (unsigned long long)addr, (unsigned long long)size);
  pthread_mutex_lock(&va->lock);
  uint32_t i = 0;
  while (i < va->count && va->free[i].base < addr) i++;
  int overlaps = (i > 0 && va->free[i - 1].base + va->free[i - 1].size > addr) ||
                 (i < va->count && addr + size > va->free[i].base);
  if (overlaps) {
    pthread_mutex_unlock(&va->lock);
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "address range 0x%llx+%llu is already free (double free?)",
                      (unsigned long long)addr, (unsigned long long)size);
  }
  int join_prev = i > 0 && va->free[i - 1].base + va->free[i - 1].size == addr;
  int join_next = i < va->count && addr + size == va->free[i].base;
  int ok = 1;
  if (join_prev && join_next) {
    va->free[i - 1].size += size + va->free[i].size;
    remove_at(va, i);
  } else if (join_prev) {
    va->free[i - 1].size += size;
  } else if (join_next) {
    va->free[i].base = addr;
    va->free[i].size += size;
  } else {
    ok = insert_at(va, i, (nvhcq_va_range){addr, size});
  }
  pthread_mutex_unlock(&va->lock);
  return ok ? NVHCQ_SUCCESS
            : nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "address allocator: out of memory");
}

uint64_t nvhcq_va_free_bytes(nvhcq_va *va) {
  uint64_t total = 0;
  pthread_mutex_lock(&va->lock);
  for (uint32_t i = 0; i < va->count; i++) total += va->free[i].size;
  pthread_mutex_unlock(&va->lock);
  return total;
}

/* CPU-visible buffers live below 2^40 because QMDs and kernel arguments placed in them are
 * addressed with 40 bits. The range is reserved in this process (PROT_NONE) so no other mmap
 * lands in it; GPU-only buffers take addresses from 1 TiB up, below the shader windows. */
#define LOW_BASE  0x1000000000ull
#define LOW_SIZE  0x8000000000ull
#define HIGH_BASE 0x10000000000ull
#define HIGH_SIZE 0x600000000000ull

static nvhcq_va va_low, va_high;
static uint64_t low_reserved_base;
static pthread_once_t va_once = PTHREAD_ONCE_INIT;
static nvhcq_status va_init_status;
static char va_init_message[256];

nvhcq_va *nvhcq_va_low(void) {
  return &va_low;
}
nvhcq_va *nvhcq_va_high(void) {
  return &va_high;
}

static void *reserve(uint64_t addr, uint64_t size) {
  return mmap((void *)(uintptr_t)addr, size, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
}

/* The first base below 2^40, in steps of 64 GiB, where `size` bytes can be reserved. */
static void *reserve_fixed(uint64_t size) {
  for (uint64_t base = LOW_BASE; base + size <= (1ull << 40); base += LOW_BASE) {
    void *at = reserve(base, size);
    if (at == MAP_FAILED) continue;
    if ((uint64_t)(uintptr_t)at == base) return at;
    munmap(at, size); /* an old kernel ignored MAP_FIXED_NOREPLACE */
  }
  return MAP_FAILED;
}

/* Where the whole range cannot be had: the largest smaller one below 2^40. At fixed bases first
 * (another copy of nvhcq in the process, such as the one inside nvhcq's libcuda.so.1 beside a
 * program's own, holds the first range); then wherever the kernel puts it, for valgrind, which
 * takes no mapping of 64 GiB or more and places MAP_FIXED_NOREPLACE mappings where it likes. */
static void *reserve_smaller(uint64_t *size) {
  for (uint64_t s = LOW_SIZE / 2; s >= (4ull << 30); s /= 2) {
    void *at = reserve_fixed(s);
    if (at != MAP_FAILED) {
      *size = s;
      return at;
    }
  }
  for (uint64_t s = LOW_SIZE / 2; s >= (4ull << 30); s /= 2) {
    void *at = mmap((void *)(uintptr_t)LOW_BASE, s, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (at == MAP_FAILED) continue;
    if ((uint64_t)(uintptr_t)at + s <= (1ull << 40)) {
      *size = s;
      return at;
    }
    munmap(at, s);
  }
  return MAP_FAILED;
}

static void va_init_once(void) {
  uint64_t size = LOW_SIZE;
  void *at = reserve_fixed(LOW_SIZE);
  if (at == MAP_FAILED) at = reserve_smaller(&size);
  if (at == MAP_FAILED) {
    va_init_status = nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                                "cannot reserve %llu GiB of address space below 2^40 for "
                                "CPU-visible GPU memory, nor 4 GiB: %s (other mappings fill it)",
                                (unsigned long long)(LOW_SIZE >> 30), strerror(errno));
  } else {
    low_reserved_base = (uint64_t)(uintptr_t)at;
    va_init_status = nvhcq_va_init(&va_low, low_reserved_base, size);
    if (!va_init_status) va_init_status = nvhcq_va_init(&va_high, HIGH_BASE, HIGH_SIZE);
  }
  if (va_init_status) snprintf(va_init_message, sizeof va_init_message, "%s", nvhcq_last_error());
}

nvhcq_status nvhcq_va_ranges_init(void) {
  pthread_once(&va_once, va_init_once);
  if (va_init_status) return nvhcq_fail(va_init_status, "%s", va_init_message);
  return NVHCQ_SUCCESS;
}

void nvhcq_low_unmap(uint64_t addr, uint64_t size) {
  /* Put the reservation back over the hole so the range stays ours. */
  mmap((void *)(uintptr_t)addr, size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}
