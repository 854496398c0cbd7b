/* The buffer calls of the API: nvhcq_buffer_create, nvhcq_buffer_register_host,
 * nvhcq_buffer_destroy (which releases the memory once the GPU has passed the work queued before
 * it, without waiting) and the accessors. */
#include "core/device.h"
#include "core/peer.h"
#include "util/abi.h"

nvhcq_status nvhcq_buffer_create(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                                 nvhcq_buffer **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_create: out is NULL");
  if ((unsigned)kind > NVHCQ_MEMORY_HOST_UNCACHED)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_create: memory kind %d is unknown", kind);
  /* Small device buffers are pieces of shared 2 MiB allocations (slab.c), mapped for peers as
   * a whole. */
  if (kind == NVHCQ_MEMORY_DEVICE && size && size <= NVHCQ_SLAB_LARGEST && !dev->no_slabs)
    return nvhcq_slab_alloc(dev, size, out);
  /* So are small pinned host buffers: pinning and mapping pages of their own cost 0.2 ms. */
  if (kind == NVHCQ_MEMORY_HOST && size && size <= NVHCQ_SLAB_LARGEST && !dev->no_slabs)
    return nvhcq_slab_alloc_host(dev, size, out);
  NVHCQ_TRY(nvhcq_memory_alloc(dev, size, kind, NULL, out));
  nvhcq_status s = nvhcq_peer_buffer_created(*out);
  if (s) {
    nvhcq_peer_buffer_released(*out);
    nvhcq_memory_free(*out);
    *out = NULL;
  }
  return s;
}

nvhcq_status nvhcq_buffer_register_host(nvhcq_device *dev, void *ptr, size_t size,
                                        nvhcq_buffer **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_register_host: out is NULL");
  NVHCQ_TRY(nvhcq_memory_register(dev, ptr, size, out));
  nvhcq_status s = nvhcq_peer_buffer_created(*out);
  if (s) {
    nvhcq_peer_buffer_released(*out);
    nvhcq_memory_free(*out);
    *out = NULL;
  }
  return s;
}

nvhcq_status nvhcq_buffer_destroy(nvhcq_buffer *buf) {
  if (!buf) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_buffer_check(buf, "nvhcq_buffer_destroy"));
  /* The GPU may still be using the buffer: it goes when the timelines pass the work queued so
   * far, and its memory and address are not reused before. */
  return nvhcq_reclaim_buffer(buf);
}

/* The accessors: 0 or NULL, with the message, for a handle that is not a live buffer. */
uint64_t nvhcq_buffer_gpu_address(const nvhcq_buffer *buf) {
  return nvhcq_buffer_check(buf, "nvhcq_buffer_gpu_address") ? 0 : buf->gpu_address;
}
void *nvhcq_buffer_host_pointer(const nvhcq_buffer *buf) {
  return nvhcq_buffer_check(buf, "nvhcq_buffer_host_pointer") ? NULL : buf->host_pointer;
}
size_t nvhcq_buffer_size(const nvhcq_buffer *buf) {
  return nvhcq_buffer_check(buf, "nvhcq_buffer_size") ? 0 : buf->size;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_alloc, nvhcq_buffer_create);
NVHCQ_0_1_NAME(nvhcq_free, nvhcq_buffer_destroy);
