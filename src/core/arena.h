/* Device memory for module images: chunks allocated and mapped (CPU and GPU, at one address) once,
 * then handed out in slices, so that loading a module makes no driver call; a slice goes back
 * through the reclaim list (reclaim.c) once the GPU is past the work that could read it. */
#ifndef NVHCQ_ARENA_H
#define NVHCQ_ARENA_H

#include <stdint.h>

#include "core/memory.h"
#include "util/va.h"

/* A chunk's usual size. Larger images get a chunk of their own, freed with their slice. */
#define NVHCQ_ARENA_CHUNK_BYTES (4u << 20)
/* Slices start at page boundaries: a cubin's sections ask for up to 4 KiB alignment. */
#define NVHCQ_ARENA_ALIGN 4096u

typedef struct nvhcq_arena_chunk {
  nvhcq_buffer *buf; /* device memory, mapped write-combined for the CPU */
  nvhcq_va space;    /* its free ranges */
  uint32_t slices;   /* slices not yet freed: in use, or waiting in the reclaim list */
  struct nvhcq_arena_chunk *next;
} nvhcq_arena_chunk;

typedef struct nvhcq_arena_state {
  nvhcq_arena_chunk *chunks;
} nvhcq_arena_state;

/* A slice: [gpu_address, +size), also the CPU address of the same bytes. */
typedef struct nvhcq_arena_slice {
  nvhcq_arena_chunk *chunk;
  uint64_t gpu_address;
  uint64_t size;
} nvhcq_arena_slice;

/* The CPU's pointer to a slice's bytes (a write-combined mapping: write in ascending order, do not
 * read back). */
static inline uint8_t *nvhcq_arena_host(const nvhcq_arena_slice *s) {
  return (uint8_t *)s->chunk->buf->host_pointer + (s->gpu_address - s->chunk->buf->gpu_address);
}

/* A slice of `size` bytes from a chunk that has room, else from a new chunk (the only case that
 * calls the driver). Its bytes are what an earlier slice left there: the caller writes them. */
nvhcq_status nvhcq_arena_alloc(nvhcq_device *dev, uint64_t size,
                               nvhcq_arena_slice *out) NVHCQ_MUST_CHECK;
/* Takes a slice back at once: the GPU must be done with it (reclaim.c calls this). A chunk left
 * without slices is kept for the next load, unless another empty one is kept already or it is a
 * large image's own chunk: then it is freed. */
void nvhcq_arena_free(nvhcq_device *dev, const nvhcq_arena_slice *slice);
/* Frees every chunk without slices (so that the device's free memory counts them as free). */
void nvhcq_arena_trim(nvhcq_device *dev);
/* Frees every chunk, slices or not (close: the channels are gone). */
void nvhcq_arena_fini(nvhcq_device *dev);
/* Chunks the arena holds (tests). */
uint32_t nvhcq_arena_chunk_count(const nvhcq_device *dev);

#endif
