/* Copies for users: between buffers on the copy engine, and between buffers and any host memory
 * through pinned staging slots, pipelined so CPU memcpy and DMA overlap. */
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/peer.h"
#include "core/timeline.h"
#include "exec/module.h"
#include "exec/builtin.h"
#include "exec/profile.h"
#include "util/memcpy_pool.h"
#include "util/abi.h"

#define STAGING_SLOTS      4u
#define STAGING_SLOT_BYTES (16u << 20)

/* Addresses nvhcq mapped for the CPU are also GPU addresses: such host memory needs no staging. */
static int is_gpu_visible(const void *p, size_t size) {
  nvhcq_va *low = nvhcq_va_low();
  uint64_t a = (uint64_t)(uintptr_t)p;
  return a >= low->base && a - low->base < low->size && low->size - (a - low->base) >= size;
}

static nvhcq_status check_range(const nvhcq_buffer *b, size_t offset, size_t size,
                                const char *what) {
  NVHCQ_TRY(nvhcq_buffer_check(b, what));
  if (offset > b->size || size > b->size - offset)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: range [%zu, %zu + %zu) is outside the %zu-byte buffer", what, offset,
                      offset, size, b->size);
  return NVHCQ_SUCCESS;
}

/* Submits a copy and the copy timeline's release (after a timestamp release at copy_stamp when
 * `stamp`); *value is what to wait for. */
static nvhcq_status submit_copy(nvhcq_device *dev, uint64_t dst, uint64_t src, uint64_t size,
                                int stamp, uint64_t *value) {
  nvhcq_push *p = nvhcq_timeline_scratch(dev);
  if (stamp) nvhcq_push_copy_signal(p, dev->copy_stamp->gpu_address, 0, dev->copy_payload64);
  nvhcq_push_copy(p, dst, src, size);
  return nvhcq_device_submit_scratch(dev, 1, value);
}

/* Where a copy goes: index of nvhcq_device.copy_rate. */
enum { TO_DEVICE, FROM_DEVICE, ON_DEVICE };

/* Copies shorter than this end within the wait's spin: they are not timed. */
#define TIMED_COPY_BYTES (4u << 20)

/* One copy, waited for. A long one is timed on the GPU, and the best speed seen sets how long the
 * next such copy's wait sleeps before it spins: a copy at full bus speed is seen to end at once,
 * without a core spinning through all of it. */
static nvhcq_status copy_sync(nvhcq_device *dev, uint64_t dst, uint64_t src, uint64_t size,
                              int path) {
  uint64_t v;
  int timed = size >= TIMED_COPY_BYTES;
  NVHCQ_TRY(submit_copy(dev, dst, src, size, timed, &v));
  if (!timed) return nvhcq_device_wait_timeline(dev, 1, v);
  double *rate = &dev->copy_rate[path];
  NVHCQ_TRY(nvhcq_device_wait_timeline_for(dev, 1, v, *rate > 0 ? (uint64_t)(size / *rate) : 0));
  uint64_t t0 = nvhcq_signal_stamp(dev->copy_stamp),
           t1 = nvhcq_signal_stamp(dev->timeline.signal[1]);
  /* Only the best speed is kept: a copy slowed by other traffic on the bus does not lengthen the
   * sleep of the next one, which would then oversleep. */
  if (t1 > t0 && size / (double)(t1 - t0) > *rate) *rate = size / (double)(t1 - t0);
  return NVHCQ_SUCCESS;
}

/* Pinned staging slots for a copy from or to pageable memory. Making the large area costs tens of
 * milliseconds (on the H200 the slowest cuMemcpyDtoH of a tinygrad test run, its first, took
 * 36-46 ms; with the small area a process's first 4-byte read takes 0.6-0.8 ms), so copies that
 * fit the small area use it until some copy needs the large one. */
#define SMALL_SLOT_BYTES (256u << 10)

typedef struct staging {
  nvhcq_buffer *buf;
  size_t slot;
} staging;

static nvhcq_status get_staging(nvhcq_device *dev, size_t size, staging *out) {
  int small = !dev->staging && size <= STAGING_SLOTS * SMALL_SLOT_BYTES;
  nvhcq_buffer **b = small ? &dev->staging_small : &dev->staging;
  out->slot = small ? SMALL_SLOT_BYTES : STAGING_SLOT_BYTES;
  if (!*b)
    NVHCQ_TRY(nvhcq_memory_alloc(dev, STAGING_SLOTS * out->slot, NVHCQ_MEMORY_HOST, NULL, b));
  out->buf = *b;
  return NVHCQ_SUCCESS;
}

static char *slot_cpu(const staging *st, unsigned s) {
  return (char *)st->buf->host_pointer + (size_t)s * st->slot;
}

static uint64_t slot_gpu(const staging *st, unsigned s) {
  return st->buf->gpu_address + (uint64_t)s * st->slot;
}

static nvhcq_status upload_staged(nvhcq_device *dev, uint64_t dst, const char *src, size_t size) {
  staging st;
  NVHCQ_TRY(get_staging(dev, size, &st));
  uint64_t done_value[STAGING_SLOTS] = {0}, last = 0;
  for (size_t off = 0, i = 0; off < size; off += st.slot, i++) {
    unsigned s = i % STAGING_SLOTS;
    size_t n = size - off < st.slot ? size - off : st.slot;
    if (done_value[s]) NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 1, done_value[s]));
    nvhcq_parallel_memcpy(slot_cpu(&st, s), src + off, n);
    NVHCQ_TRY(submit_copy(dev, dst + off, slot_gpu(&st, s), n, 0, &last));
    done_value[s] = last;
  }
  return nvhcq_device_wait_timeline(dev, 1, last);
}

static nvhcq_status download_staged(nvhcq_device *dev, char *dst, uint64_t src, size_t size) {
  staging st;
  NVHCQ_TRY(get_staging(dev, size, &st));
  size_t chunks = (size + st.slot - 1) / st.slot;
  uint64_t value[STAGING_SLOTS];
  /* Keep every slot busy: chunk i+SLOTS is queued as soon as chunk i has been read out. */
  for (size_t i = 0; i < chunks && i < STAGING_SLOTS; i++) {
    size_t off = i * st.slot, n = size - off < st.slot ? size - off : st.slot;
    NVHCQ_TRY(submit_copy(dev, slot_gpu(&st, (unsigned)i), src + off, n, 0, &value[i]));
  }
  for (size_t i = 0; i < chunks; i++) {
    unsigned s = i % STAGING_SLOTS;
    size_t off = i * st.slot, n = size - off < st.slot ? size - off : st.slot;
    NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 1, value[s]));
    nvhcq_parallel_memcpy(dst + off, slot_cpu(&st, s), n);
    size_t next = i + STAGING_SLOTS;
    if (next < chunks) {
      size_t noff = next * st.slot, nn = size - noff < st.slot ? size - noff : st.slot;
      NVHCQ_TRY(submit_copy(dev, slot_gpu(&st, s), src + noff, nn, 0, &value[s]));
    }
  }
  return NVHCQ_SUCCESS;
}

/* The built-in kernels' module for this GPU, or NULL: an exact match, else the newest cubin of
 * the same major version that is not newer than the GPU. Loaded once; a module that does not
 * load leaves the caller's last error as it was (callers say what they lack, or do without). */
nvhcq_module *nvhcq_builtin_module(nvhcq_device *dev) {
  if (dev->builtin_tried) return dev->builtin;
  dev->builtin_tried = 1;
  unsigned sm = nvhcq_sm_number(dev->info.sm_version);
  const nvhcq_builtin_cubin *best = NULL;
  for (const nvhcq_builtin_cubin *b = nvhcq_builtin_cubins; b->sm; b++)
    if (b->sm / 10 == sm / 10 && b->sm <= sm && (!best || b->sm > best->sm)) best = b;
  nvhcq_error_saved saved;
  nvhcq_error_save(&saved);
  if (best && nvhcq_module_load(dev, best->data, best->size, &dev->builtin)) dev->builtin = NULL;
  if (dev->builtin && nvhcq_module_get_kernel(dev->builtin, "nvhcq_copy16", &dev->copy_kernel))
    dev->copy_kernel = NULL;
  nvhcq_error_restore(&saved);
  return dev->builtin;
}

static nvhcq_kernel *copy_kernel(nvhcq_device *dev) {
  nvhcq_builtin_module(dev);
  return dev->copy_kernel;
}

/* Large aligned copies within device memory go through a kernel: the copy engines move far fewer
 * bytes per second than the SMs. */
static int use_copy_kernel(const nvhcq_buffer *dst, const nvhcq_buffer *src, uint64_t d, uint64_t s,
                           size_t size) {
  int device = (dst->kind == NVHCQ_MEMORY_DEVICE || dst->kind == NVHCQ_MEMORY_DEVICE_MAPPED) &&
               (src->kind == NVHCQ_MEMORY_DEVICE || src->kind == NVHCQ_MEMORY_DEVICE_MAPPED);
  return device && size >= (1u << 20) && ((d | s | size) & 15) == 0;
}

static nvhcq_status kernel_copy(nvhcq_device *dev, nvhcq_kernel *k, uint64_t d, uint64_t s,
                                size_t size) {
  struct {
    uint64_t src, dst, n16;
  } args = {s, d, size / 16};
  /* Many short blocks balance the tail better than a few long ones (H200, 256 MiB: 4 blocks per
   * SM 1835 GB/s, 64 per SM 1913, 128 per SM 1981). */
  nvhcq_dim3 grid = {dev->info.sm_count ? dev->info.sm_count * 128 : 16384, 1, 1},
             block = {512, 1, 1};
  return nvhcq_kernel_launch_cpu_wait(k, grid, block, 0, &args, sizeof args, NULL);
}

static nvhcq_status buffer_write(nvhcq_buffer *dst, size_t dst_offset, const void *src,
                                 size_t size) {
  NVHCQ_TRY(check_range(dst, dst_offset, size, "nvhcq_buffer_write destination"));
  if (!src && size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_write: src is NULL");
  if (size == 0) return NVHCQ_SUCCESS;
  nvhcq_device *dev = dst->dev;
  if (is_gpu_visible(src, size))
    return copy_sync(dev, dst->gpu_address + dst_offset, (uint64_t)(uintptr_t)src, size, TO_DEVICE);
  return upload_staged(dev, dst->gpu_address + dst_offset, src, size);
}

static nvhcq_status buffer_read(void *dst, nvhcq_buffer *src, size_t src_offset, size_t size) {
  NVHCQ_TRY(check_range(src, src_offset, size, "nvhcq_buffer_read source"));
  if (!dst && size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_read: dst is NULL");
  if (size == 0) return NVHCQ_SUCCESS;
  nvhcq_device *dev = src->dev;
  if (is_gpu_visible(dst, size))
    return copy_sync(dev, (uint64_t)(uintptr_t)dst, src->gpu_address + src_offset, size,
                     FROM_DEVICE);
  return download_staged(dev, dst, src->gpu_address + src_offset, size);
}

#define PEER_BOUNCE_BYTES (32u << 20)

/* Between two devices without peer access: down into host memory from one, up from there into the
 * other, a bounce buffer at a time (each half pipelines through its device's pinned staging). */
static nvhcq_status copy_bounced(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                                 size_t src_offset, size_t size) {
  size_t chunk = size < PEER_BOUNCE_BYTES ? size : PEER_BOUNCE_BYTES;
  void *bounce = malloc(chunk);
  if (!bounce) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  nvhcq_status s = NVHCQ_SUCCESS;
  for (size_t at = 0; at < size && !s; at += chunk) {
    size_t n = size - at < chunk ? size - at : chunk;
    s = download_staged(src->dev, bounce, src->gpu_address + src_offset + at, n);
    if (!s) s = upload_staged(dst->dev, dst->gpu_address + dst_offset + at, bounce, n);
  }
  free(bounce);
  return s;
}

/* Between two devices: on the copy engine of the one that maps the other's buffer (peer access
 * enabled), once the other has finished what was queued before; otherwise through host memory. */
static nvhcq_status copy_between_devices(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                                         size_t src_offset, size_t size) {
  uint64_t d = dst->gpu_address + dst_offset, s = src->gpu_address + src_offset;
  nvhcq_device *by = nvhcq_peer_enabled(dst->dev, src->dev)   ? dst->dev
                     : nvhcq_peer_enabled(src->dev, dst->dev) ? src->dev
                                                              : NULL;
  if (!by) return copy_bounced(dst, dst_offset, src, src_offset, size);
  NVHCQ_TRY(nvhcq_device_cpu_wait_idle(by == dst->dev ? src->dev : dst->dev));
  return copy_sync(by, d, s, size, ON_DEVICE);
}

static nvhcq_status buffer_copy(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                                size_t src_offset, size_t size) {
  NVHCQ_TRY(check_range(dst, dst_offset, size, "nvhcq_buffer_copy destination"));
  NVHCQ_TRY(check_range(src, src_offset, size, "nvhcq_buffer_copy source"));
  if (size == 0) return NVHCQ_SUCCESS;
  if (dst->dev != src->dev) {
    nvhcq_status st = copy_between_devices(dst, dst_offset, src, src_offset, size);
    return st ? nvhcq_fail_context(st, "nvhcq_buffer_copy from GPU %d to GPU %d", src->dev->index,
                                   dst->dev->index)
              : st;
  }
  uint64_t d = dst->gpu_address + dst_offset, s = src->gpu_address + src_offset;
  nvhcq_kernel *k;
  if (use_copy_kernel(dst, src, d, s, size) && (k = copy_kernel(dst->dev)))
    return kernel_copy(dst->dev, k, d, s, size);
  return copy_sync(dst->dev, d, s, size, ON_DEVICE);
}

/* The API's copies; while profiling, each is a slice on the host's copy track. */
nvhcq_status nvhcq_buffer_write(nvhcq_buffer *dst, size_t dst_offset, const void *src,
                                size_t size) {
  if (!nvhcq_profiling()) return buffer_write(dst, dst_offset, src, size);
  uint64_t t0 = nvhcq_profile_host_ns();
  NVHCQ_TRY(buffer_write(dst, dst_offset, src, size));
  nvhcq_profile_host_copy(dst->dev, "write", size, t0);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_buffer_read(void *dst, nvhcq_buffer *src, size_t src_offset, size_t size) {
  if (!nvhcq_profiling()) return buffer_read(dst, src, src_offset, size);
  uint64_t t0 = nvhcq_profile_host_ns();
  NVHCQ_TRY(buffer_read(dst, src, src_offset, size));
  nvhcq_profile_host_copy(src->dev, "read", size, t0);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_buffer_copy(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                               size_t src_offset, size_t size) {
  if (!nvhcq_profiling()) return buffer_copy(dst, dst_offset, src, src_offset, size);
  uint64_t t0 = nvhcq_profile_host_ns();
  NVHCQ_TRY(buffer_copy(dst, dst_offset, src, src_offset, size));
  nvhcq_profile_host_copy(dst->dev, "copy", size, t0);
  return NVHCQ_SUCCESS;
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_copy_to_device, nvhcq_buffer_write);
NVHCQ_0_1_NAME(nvhcq_copy_from_device, nvhcq_buffer_read);
NVHCQ_0_1_NAME(nvhcq_copy_device, nvhcq_buffer_copy);
