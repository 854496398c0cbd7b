/* The module-image arena: device-memory chunks mapped once, first-fit slices of them, and the
 * policy that keeps one empty chunk for the next load and frees the others. */
#include "core/arena.h"

#include <stdlib.h>

#include "core/device.h"
#include "util/align.h"

/* The CPU only writes images, in one ascending pass: write-combined, as the command and argument
 * rings are mapped. */
static nvhcq_status add_chunk(nvhcq_device *dev, uint64_t size, nvhcq_arena_chunk **out) {
  static const nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  nvhcq_arena_chunk *c = calloc(1, sizeof *c);
  if (!c) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  nvhcq_status s = nvhcq_memory_alloc(dev, size, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, &c->buf);
  if (!s) s = nvhcq_va_init(&c->space, c->buf->gpu_address, size);
  if (s) {
    if (c->buf) nvhcq_memory_free(c->buf);
    free(c);
    return nvhcq_fail_context(s, "GPU %d: memory for module code and constants", dev->index);
  }
  c->next = dev->arena.chunks;
  dev->arena.chunks = c;
  *out = c;
  return NVHCQ_SUCCESS;
}

/* Unlinks and frees a chunk; its memory goes at once (the GPU is done with all of it, or gone). */
static void drop_chunk(nvhcq_device *dev, nvhcq_arena_chunk *c) {
  for (nvhcq_arena_chunk **at = &dev->arena.chunks; *at; at = &(*at)->next)
    if (*at == c) {
      *at = c->next;
      break;
    }
  nvhcq_va_finish(&c->space);
  nvhcq_memory_free(c->buf);
  free(c);
}

nvhcq_status nvhcq_arena_alloc(nvhcq_device *dev, uint64_t size, nvhcq_arena_slice *out) {
  if (size == 0 || size > (1ull << 40))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "GPU %d: a module image of %llu bytes",
                      dev->index, (unsigned long long)size);
  size = NVHCQ_ALIGN_UP(size, (uint64_t)NVHCQ_ARENA_ALIGN);
  nvhcq_reclaim_poll(dev); /* slices of unloaded modules the GPU is done with come back first */
  uint64_t at;
  nvhcq_arena_chunk *c = dev->arena.chunks;
  while (c && !nvhcq_va_try_alloc(&c->space, size, NVHCQ_ARENA_ALIGN, &at)) c = c->next;
  if (!c) {
    uint64_t bytes =
        size > NVHCQ_ARENA_CHUNK_BYTES ? NVHCQ_ALIGN_UP(size, 2ull << 20) : NVHCQ_ARENA_CHUNK_BYTES;
    NVHCQ_TRY(add_chunk(dev, bytes, &c));
    NVHCQ_TRY(nvhcq_va_alloc(&c->space, size, NVHCQ_ARENA_ALIGN, &at));
  }
  c->slices++;
  *out = (nvhcq_arena_slice){c, at, size};
  return NVHCQ_SUCCESS;
}

static uint32_t empty_chunks(const nvhcq_device *dev) {
  uint32_t n = 0;
  for (const nvhcq_arena_chunk *c = dev->arena.chunks; c; c = c->next) n += c->slices == 0;
  return n;
}

void nvhcq_arena_free(nvhcq_device *dev, const nvhcq_arena_slice *slice) {
  nvhcq_arena_chunk *c = slice->chunk;
  (void)!nvhcq_va_free(&c->space, slice->gpu_address, slice->size);
  if (--c->slices) return;
  /* One empty chunk stays for the next load; a large image's own chunk never does. */
  if (c->buf->size > NVHCQ_ARENA_CHUNK_BYTES || empty_chunks(dev) > 1) drop_chunk(dev, c);
}

void nvhcq_arena_trim(nvhcq_device *dev) {
  nvhcq_arena_chunk *c = dev->arena.chunks;
  while (c) {
    nvhcq_arena_chunk *next = c->next;
    if (!c->slices) drop_chunk(dev, c);
    c = next;
  }
}

void nvhcq_arena_fini(nvhcq_device *dev) {
  while (dev->arena.chunks) drop_chunk(dev, dev->arena.chunks);
}

uint32_t nvhcq_arena_chunk_count(const nvhcq_device *dev) {
  uint32_t n = 0;
  for (const nvhcq_arena_chunk *c = dev->arena.chunks; c; c = c->next) n++;
  return n;
}
