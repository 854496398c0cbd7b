/* The buffer calls of the API: nvhcq_alloc, nvhcq_free (which lets queued work finish first) and
 * the accessors. */
#include "core/device.h"

nvhcq_status nvhcq_alloc(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                         nvhcq_buffer **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_alloc: out is NULL");
  if ((unsigned)kind > NVHCQ_MEMORY_HOST_UNCACHED)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_alloc: memory kind %d is unknown", kind);
  return nvhcq_memory_alloc(dev, size, kind, NULL, out);
}

nvhcq_status nvhcq_free(nvhcq_buffer *buf) {
  if (!buf) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_buffer_check(buf, "nvhcq_free"));
  /* The GPU may still be using the buffer: let queued work finish first (a broken device runs
   * nothing any more). */
  if (!buf->dev->broken) NVHCQ_TRY(nvhcq_device_synchronize(buf->dev));
  return nvhcq_memory_free(buf);
}

uint64_t nvhcq_buffer_gpu_address(const nvhcq_buffer *buf) {
  return buf ? buf->gpu_address : 0;
}
void *nvhcq_buffer_host_pointer(const nvhcq_buffer *buf) {
  return buf ? buf->host_pointer : NULL;
}
size_t nvhcq_buffer_size(const nvhcq_buffer *buf) {
  return buf ? buf->size : 0;
}
