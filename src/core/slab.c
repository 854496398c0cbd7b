/* Small device buffers carved out of 2 MiB allocations, one size class (a power of two from
 * 256 bytes to 512 KiB) per slab, as libcuda suballocates cuMemAlloc.
 *
 * Why: on the H200 a grid that ends with a write to a buffer of its own small allocation paid
 * 0.08 us more per grid than one writing into an allocation of 1 MiB or more (1000 chained
 * one-atomic grids: 0.801 us each with the counter in a 4 KiB or 64 KiB allocation, 0.719 us in
 * 1, 2, 4, 8 or 32 MiB ones; measured with the counter's allocation size as the only change).
 * It also spares the driver calls of an allocation per small buffer. Recorded queues take their
 * commands and launch memory from mapped slabs: with two mapped allocations of their own, a small
 * CUDA graph's instantiation cost 0.43 ms and its destruction 0.23 ms on the H200 (tinygrad's
 * graphs of a few kernels; libcuda: 0.08 and 0.03 ms); from slabs, 0.07 ms and under 0.02 ms. */
#include "core/slab.h"

#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/memory.h"
#include "core/peer.h"

#define SLAB_BYTES     (2u << 20)
#define CLASS_MIN      256u
#define HOST_BLOCK_MIN 4096u

/* The class of a size: 0 for 256 bytes, 1 for 512, ... */
static unsigned class_of(size_t size) {
  unsigned c = 0;
  while ((size_t)CLASS_MIN << c < size) c++;
  return c;
}

struct nvhcq_slab {
  nvhcq_buffer *memory; /* the 2 MiB allocation */
  unsigned kind; /* 0: device memory, 1: mapped for the CPU, write-combined, 2: pinned host */
  unsigned cls;
  uint32_t blocks, used;
  uint64_t free_map[SLAB_BYTES / CLASS_MIN / 64]; /* 1: block in use */
  nvhcq_slab *next;
};

void nvhcq_slab_init(nvhcq_device *dev) {
  pthread_mutex_init(&dev->slabs.lock, NULL);
  memset(dev->slabs.heads, 0, sizeof dev->slabs.heads);
  dev->slabs.live = NULL;
}

static void slab_destroy(nvhcq_slab *s) {
  nvhcq_peer_buffer_released(s->memory);
  (void)nvhcq_memory_free(s->memory);
  free(s);
}

void nvhcq_slab_fini(nvhcq_device *dev) {
  while (dev->slabs.live) {
    nvhcq_buffer *b = dev->slabs.live;
    dev->slabs.live = b->next;
    nvhcq_retire(b);
  }
  for (unsigned k = 0; k < NVHCQ_SLAB_KINDS; k++)
    for (unsigned c = 0; c < NVHCQ_SLAB_CLASSES; c++) {
      while (dev->slabs.heads[k][c]) {
        nvhcq_slab *s = dev->slabs.heads[k][c];
        dev->slabs.heads[k][c] = s->next;
        slab_destroy(s);
      }
    }
  pthread_mutex_destroy(&dev->slabs.lock);
}

static nvhcq_status slab_create(nvhcq_device *dev, unsigned kind, unsigned cls, nvhcq_slab **out) {
  static const nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  nvhcq_slab *s = calloc(1, sizeof *s);
  if (!s) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  static const nvhcq_memory_kind memory[NVHCQ_SLAB_KINDS] = {
      NVHCQ_MEMORY_DEVICE, NVHCQ_MEMORY_DEVICE_MAPPED, NVHCQ_MEMORY_HOST};
  nvhcq_status st =
      nvhcq_memory_alloc(dev, SLAB_BYTES, memory[kind], kind == 1 ? &wc : NULL, &s->memory);
  /* Mapped for peers as one buffer: its pieces need nothing of their own. (The library's own
   * mapped slabs are read by their device alone.) */
  if (!st && kind != 1) st = nvhcq_peer_buffer_created(s->memory);
  if (st) {
    if (s->memory)
      slab_destroy(s);
    else
      free(s);
    return st;
  }
  s->kind = kind;
  s->cls = cls;
  s->blocks = SLAB_BYTES / (CLASS_MIN << cls);
  *out = s;
  return NVHCQ_SUCCESS;
}

/* The first free block of s (s has one). */
static uint32_t take_block(nvhcq_slab *s) {
  for (uint32_t w = 0;; w++) {
    uint64_t free_bits = ~s->free_map[w];
    if (w * 64 + 64 > s->blocks) free_bits &= (1ull << (s->blocks - w * 64)) - 1;
    if (!free_bits) continue;
    uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(free_bits);
    s->free_map[w] |= 1ull << (b % 64);
    s->used++;
    return b;
  }
}

/* A slab of class cls with a free block, or NULL (under the lock). */
static nvhcq_slab *with_room(nvhcq_device *dev, unsigned kind, unsigned cls) {
  nvhcq_slab *s = dev->slabs.heads[kind][cls];
  while (s && s->used == s->blocks) s = s->next;
  return s;
}

static nvhcq_status slab_alloc(nvhcq_device *dev, unsigned kind, size_t size, nvhcq_buffer **out) {
  unsigned cls = class_of(kind == 2 && size < HOST_BLOCK_MIN ? HOST_BLOCK_MIN : size);
  nvhcq_buffer *b = calloc(1, sizeof *b);
  if (!b) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_lock(&dev->slabs.lock);
  nvhcq_slab *s = with_room(dev, kind, cls);
  if (!s) {
    /* Made without the lock: the allocation releases destroyed buffers the GPU is past, which
     * gives their blocks back to their slabs under it. */
    pthread_mutex_unlock(&dev->slabs.lock);
    nvhcq_status st = slab_create(dev, kind, cls, &s);
    if (st) {
      free(b);
      return st;
    }
    pthread_mutex_lock(&dev->slabs.lock);
    s->next = dev->slabs.heads[kind][cls];
    dev->slabs.heads[kind][cls] = s;
  }
  uint32_t block = take_block(s);
  const nvhcq_buffer *m = s->memory;
  uint64_t offset = (uint64_t)block * (CLASS_MIN << cls);
  *b = (nvhcq_buffer){.magic = NVHCQ_BUFFER_MAGIC,
                      .dev = dev,
                      .kind = m->kind,
                      .gpu_address = m->gpu_address + offset,
                      .host_pointer = m->host_pointer ? (char *)m->host_pointer + offset : NULL,
                      .size = size,
                      .mapped_size = CLASS_MIN << cls,
                      .page_size = m->page_size,
                      .map_fd = -1,
                      .slab = s,
                      .next = dev->slabs.live};
  if (b->next) b->next->prev = b;
  dev->slabs.live = b;
  pthread_mutex_unlock(&dev->slabs.lock);
  /* A pinned allocation of its own reads zero, and programs count on it (a flag word next to one
   * they set): every host block is cleared as it is given out (a block given out again holds
   * what its last user wrote). */
  if (kind == 2) memset(b->host_pointer, 0, b->mapped_size);
  *out = b;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_slab_alloc(nvhcq_device *dev, size_t size, nvhcq_buffer **out) {
  return slab_alloc(dev, 0, size, out);
}

nvhcq_status nvhcq_slab_alloc_mapped(nvhcq_device *dev, size_t size, nvhcq_buffer **out) {
  return slab_alloc(dev, 1, size, out);
}

/* Host blocks are whole pages (slab_alloc rounds them up), as a pinned allocation of its own would
 * be: callers may hand them to O_DIRECT reads. */
nvhcq_status nvhcq_slab_alloc_host(nvhcq_device *dev, size_t size, nvhcq_buffer **out) {
  return slab_alloc(dev, 2, size, out);
}

void nvhcq_slab_trim(nvhcq_device *dev) {
  nvhcq_slab *gone = NULL;
  pthread_mutex_lock(&dev->slabs.lock);
  for (unsigned c = 0; c < NVHCQ_SLAB_KINDS * NVHCQ_SLAB_CLASSES; c++)
    for (nvhcq_slab **at = &dev->slabs.heads[c / NVHCQ_SLAB_CLASSES][c % NVHCQ_SLAB_CLASSES];
         *at;) {
      nvhcq_slab *s = *at;
      if (s->used) {
        at = &s->next;
        continue;
      }
      *at = s->next;
      s->next = gone, gone = s;
    }
  pthread_mutex_unlock(&dev->slabs.lock);
  while (gone) {
    nvhcq_slab *s = gone;
    gone = s->next;
    slab_destroy(s);
  }
}

/* Gives b's block back; a slab left empty goes too, unless it is its class's only one (a loop
 * of create and destroy then costs no driver call). */
void nvhcq_slab_free(nvhcq_buffer *b) {
  nvhcq_device *dev = b->dev;
  nvhcq_slab *s = b->slab, *gone = NULL;
  uint32_t block = (uint32_t)((b->gpu_address - s->memory->gpu_address) / (CLASS_MIN << s->cls));
  pthread_mutex_lock(&dev->slabs.lock);
  s->free_map[block / 64] &= ~(1ull << (block % 64));
  s->used--;
  if (b->prev) b->prev->next = b->next;
  if (b->next) b->next->prev = b->prev;
  if (dev->slabs.live == b) dev->slabs.live = b->next;
  nvhcq_slab **at = &dev->slabs.heads[s->kind][s->cls];
  if (!s->used && !(*at == s && !s->next)) {
    while (*at != s) at = &(*at)->next;
    *at = s->next;
    gone = s;
  }
  pthread_mutex_unlock(&dev->slabs.lock);
  if (gone) slab_destroy(gone);
  nvhcq_retire(b);
}

nvhcq_buffer *nvhcq_slab_memory(const nvhcq_buffer *b) {
  return b->slab->memory;
}
