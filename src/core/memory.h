/* Memory of every kind: RM allocation, CPU mapping at the same address as the GPU mapping
 * (so a pointer and a GPU address are the same number), UVM mapping, free; the buffer struct. */
#ifndef NVHCQ_MEMORY_H
#define NVHCQ_MEMORY_H

#include <stdint.h>

#include "driver/rm.h"
#include "util/error.h"
#include "util/va.h"

#define NVHCQ_BUFFER_MAGIC 0x6e766266u /* "nvbf": catches foreign or freed handles */

struct nvhcq_buffer {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_memory_kind kind;
  uint64_t gpu_address; /* also the CPU address when host_pointer is set */
  size_t size;          /* as asked */
  uint64_t mapped_size; /* rounded to the page size */
  uint32_t page_size;   /* of its GPU mapping: 4 KiB, 64 KiB or 2 MiB */
  void *host_pointer;
  uint32_t handle;    /* RM memory object */
  uint32_t h_virtual; /* its range of GPU addresses in RM's address space, or 0 */
  int uvm_mapped;     /* mapped into the device's UVM address space */
  int map_fd;         /* the fd the CPU mapping was made through, or -1 */
  int low;            /* address from the CPU-visible range */
  int user;           /* made by nvhcq_buffer_create: mapped into the devices with peer access */
  int registered;     /* the caller's memory (nvhcq_buffer_register_host): never unmapped here */
  uint64_t high_base, high_size;     /* of its addresses, those taken from the GPU-only range */
  nvhcq_buffer *prev, *next;         /* the device's user buffers (peer.c, under its lock) */
  struct nvhcq_slab *slab;           /* the slab it is a block of (slab.c), or NULL */
  nvhcq_buffer *all_prev, *all_next; /* dev->allocations (not slab blocks) */
  /* A mapping of physical memory (physical.c): its memory (whose RM object `handle` is), where
   * in it the mapping starts, and the reserved range its addresses belong to; else NULL. */
  struct nvhcq_physical *physical;
  uint64_t physical_offset;
  struct nvhcq_reservation *reservation;
};

/* NVOS33 flags for CPU mappings the CPU only writes in bulk (command and argument rings):
 * write-combined caching, reflected mapping, fixed address, as CUDA maps its GPFIFOs. */
#define NVHCQ_MAP_WRITE_COMBINED 0x10d0000u

/* Extra options for internal allocations. */
typedef struct nvhcq_alloc_options {
  int contiguous;     /* physically contiguous device memory (GPFIFO rings) */
  uint32_t map_flags; /* NVOS33 flags for the CPU mapping */
} nvhcq_alloc_options;

nvhcq_status nvhcq_memory_alloc(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                                const nvhcq_alloc_options *options,
                                nvhcq_buffer **out) NVHCQ_MUST_CHECK;
nvhcq_status nvhcq_memory_free(nvhcq_buffer *buf);
/* Frees *b if it is set, and clears it. */
void nvhcq_memory_drop(nvhcq_buffer **b);

/* Pins the caller's memory [ptr, ptr + size), rounded out to pages, and maps it for the GPU at
 * the same addresses (nvhcq_buffer_register_host). */
nvhcq_status nvhcq_memory_register(nvhcq_device *dev, void *ptr, size_t size,
                                   nvhcq_buffer **out) NVHCQ_MUST_CHECK;

/* For the registration thread (uvm.c): an allocation mapped only into the UVM address space of
 * `rm`'s fd, made without touching what only the device's own thread may (no reclaim). */
nvhcq_status nvhcq_memory_alloc_uvm(nvhcq_device *dev, nvhcq_rm *rm, size_t size,
                                    nvhcq_memory_kind kind, const nvhcq_alloc_options *options,
                                    nvhcq_buffer **out) NVHCQ_MUST_CHECK;
/* Maps every allocation of the device into its UVM address space (dev->h_vaspace, registered),
 * where it is not yet: the move off RM's address space (uvm.c). */
nvhcq_status nvhcq_memory_map_all_uvm(nvhcq_device *dev) NVHCQ_MUST_CHECK;

/* Device memory of `size` bytes (a multiple of 2 MiB) in 2 MiB pages, without addresses: an RM
 * memory object in *handle (physical.c). */
nvhcq_status nvhcq_memory_alloc_physical(nvhcq_device *dev, uint64_t size,
                                         uint32_t *handle) NVHCQ_MUST_CHECK;
/* Maps a buffer physical.c filled in (a view of its memory at addresses it owns) for the GPU. */
nvhcq_status nvhcq_memory_map_view(nvhcq_buffer *b) NVHCQ_MUST_CHECK;

/* Validates a user handle: non-NULL, ours, not freed. */
nvhcq_status nvhcq_buffer_check(const nvhcq_buffer *buf, const char *what) NVHCQ_MUST_CHECK;

#endif
