#include "util/va.h"

#include <stdlib.h>
#include <string.h>

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

nvhcq_status nvhcq_va_alloc(nvhcq_va *va, uint64_t size, uint64_t align, uint64_t *addr) {
  if (size == 0 || align == 0 || (align & (align - 1)))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "address allocator: size %llu / alignment %llu invalid",
                      (unsigned long long)size, (unsigned long long)align);
  pthread_mutex_lock(&va->lock);
  for (uint32_t i = 0; i < va->count; i++) {
    nvhcq_va_range r = va->free[i];
    uint64_t start = (r.base + align - 1) & ~(align - 1);
    if (start < r.base || start - r.base > r.size || r.size - (start - r.base) < size) continue;
    int ok = carve(va, i, start, size);
    pthread_mutex_unlock(&va->lock);
    if (!ok) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "address allocator: out of memory");
    *addr = start;
    return NVHCQ_SUCCESS;
  }
  pthread_mutex_unlock(&va->lock);
  return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                    "no free virtual address range of %llu bytes (aligned to %llu) left in "
                    "[0x%llx, 0x%llx); free buffers first",
                    (unsigned long long)size, (unsigned long long)align,
                    (unsigned long long)va->base, (unsigned long long)(va->base + va->size));
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
