/* Memory of every kind: RM video and system memory (2 MiB pages from 2 MiB on), pinned host
 * memory, the CPU mapping at the GPU address, the UVM mapping, and freeing in reverse. */
#include "core/memory.h"
#include "core/slab.h"
#include "util/handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/compute.h"
#include "core/device.h"
#include "core/peer.h"
#include "core/physical.h"
#include "driver/door.h"
#include "util/align.h"

nvhcq_status nvhcq_buffer_check(const nvhcq_buffer *buf, const char *what) {
  nvhcq_status s = nvhcq_handle_check(buf, NVHCQ_BUFFER_MAGIC, "buffer", NULL);
  return s ? nvhcq_fail_context(s, "%s", what) : s;
}

static const char *kind_name(nvhcq_memory_kind kind) {
  static const char *names[] = {"device", "device-mapped", "host", "host-uncached"};
  return (unsigned)kind < 4 ? names[kind] : "unknown";
}

/* Device memory of 2 MiB and more takes 2 MiB pages, as libcuda's does: with 4 KiB pages a
 * kernel streaming a few MiB misses the GPU's TLBs (an elementwise kernel over three 4 MiB
 * buffers ran 5-10 % slower on the H200 than the same cubin on libcuda's memory). */
#define HUGE_PAGE_FROM (2u << 20)

#define PAGE_4K  (4u << 10)
#define PAGE_64K (64u << 10)
#define PAGE_2M  (2u << 20)

/* Debug knobs, read once (any thread may allocate): NVHCQ_DEBUG_SMALL_PAGES=1 gives 4 KiB pages
 * below 8 MiB, as before huge pages (for A/B measurements); NVHCQ_DEBUG_PAGE_KIB=64 or 2048 gives
 * smaller device allocations pages of that size, rounding them up to it (an experiment). */
static int debug_knob(int *cache, const char *name) {
  int v = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv(name);
    __atomic_store_n(cache, v = e ? atoi(e) : 0, __ATOMIC_RELAXED);
  }
  return v;
}

static uint64_t huge_page_from(void) {
  static int small = -1;
  return debug_knob(&small, "NVHCQ_DEBUG_SMALL_PAGES") ? 8u << 20 : HUGE_PAGE_FROM;
}

/* NVHCQ_DEBUG_CONTIG=1: device memory physically contiguous (an experiment on placement: ew_add
 * back to back on the H200 took the same time either way). */
static int debug_contiguous(void) {
  static int contig = -1;
  return debug_knob(&contig, "NVHCQ_DEBUG_CONTIG");
}

static uint32_t page_size_for(nvhcq_memory_kind kind, size_t size) {
  static int kib = -1;
  if (kind == NVHCQ_MEMORY_HOST || kind == NVHCQ_MEMORY_HOST_UNCACHED) return PAGE_4K;
  if (size >= huge_page_from()) return PAGE_2M;
  int k = debug_knob(&kib, "NVHCQ_DEBUG_PAGE_KIB");
  return k == 2048 ? PAGE_2M : k == 64 ? PAGE_64K : PAGE_4K;
}

/* RM's names for a page size: the allocation's attributes and the mapping's flag. */
static uint32_t rm_page_attr(uint32_t page) {
  return page == PAGE_2M    ? NVOS32_ATTR_PAGE_SIZE_HUGE
         : page == PAGE_64K ? NVOS32_ATTR_PAGE_SIZE_BIG
                            : NVOS32_ATTR_PAGE_SIZE_4KB;
}
static uint32_t rm_page_map_flag(uint32_t page) {
  return page == PAGE_2M    ? NVOS46_FLAGS_PAGE_SIZE_HUGE
         : page == PAGE_64K ? NVOS46_FLAGS_PAGE_SIZE_BIG
                            : NVOS46_FLAGS_PAGE_SIZE_4KB;
}

static nvhcq_status map_to_cpu(nvhcq_device *dev, nvhcq_buffer *b, uint32_t flags, int sysmem) {
  int fd;
  if (sysmem) {
    NVHCQ_TRY(nvhcq_open_ctl(&fd));
  } else {
    /* Each CPU mapping needs an fd of its own. */
    NVHCQ_TRY(nvhcq_open_gpu(dev->rm.fd_ctl, dev->minor, &fd));
  }
  nv_ioctl_nvos33_parameters_with_fd p = {.params = {.hClient = dev->rm.root,
                                                     .hDevice = dev->h_device,
                                                     .hMemory = b->handle,
                                                     .length = b->mapped_size,
                                                     .flags = flags},
                                          .fd = fd};
  nvhcq_status s =
      nvhcq_rm_escape(dev->rm.fd_ctl, NV_ESC_RM_MAP_MEMORY, &p, sizeof p, "map memory");
  if (!s && p.params.status)
    s = nvhcq_fail(nvhcq_status_from_nv(p.params.status), "mapping %s memory for the CPU: %s",
                   kind_name(b->kind), nvhcq_nv_status_name(p.params.status));
  void *at = MAP_FAILED;
  if (!s) {
    at = nvhcq_door->mmap((void *)(uintptr_t)b->gpu_address, b->mapped_size, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_FIXED, fd, 0);
    if (at == MAP_FAILED)
      s = nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "mmap of %llu bytes of %s memory failed: %s",
                     (unsigned long long)b->mapped_size, kind_name(b->kind), strerror(errno));
  }
  if (s) {
    nvhcq_door->close(fd);
    return s;
  }
  b->host_pointer = at;
  b->map_fd = fd;
  return NVHCQ_SUCCESS;
}

static nvhcq_status alloc_rm_memory(nvhcq_device *dev, nvhcq_buffer *b, int contiguous) {
  int sysmem = b->kind == NVHCQ_MEMORY_HOST_UNCACHED;
  int huge = b->page_size == PAGE_2M;
  uint32_t phys =
      contiguous ? NVOS32_ATTR_PHYSICALITY_CONTIGUOUS : NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIG;
  NV_MEMORY_ALLOCATION_PARAMS p = {
      .owner = dev->rm.root,
      .type = sysmem ? NVOS32_TYPE_NOTIFIER : NVOS32_TYPE_IMAGE,
      .flags = sysmem ? NVOS32_ALLOC_FLAGS_SYSMEM : NVOS32_ALLOC_FLAGS_VIDMEM,
      .attr =
          phys << NVOS32_ATTR_PHYSICALITY_SHIFT |
          (b->page_size > PAGE_4K ? rm_page_attr(b->page_size) << NVOS32_ATTR_PAGE_SIZE_SHIFT : 0) |
          (sysmem ? NVOS32_ATTR_LOCATION_PCI << NVOS32_ATTR_LOCATION_SHIFT : 0),
      .attr2 = (sysmem ? NVOS32_ATTR2_GPU_CACHEABLE_NO : NVOS32_ATTR2_GPU_CACHEABLE_YES)
                   << NVOS32_ATTR2_GPU_CACHEABLE_SHIFT |
               (huge ? NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB << NVOS32_ATTR2_PAGE_SIZE_HUGE_SHIFT : 0) |
               NVOS32_ATTR2_ZBC_PREFER_NO_ZBC,
      .format = 6,
      .size = b->mapped_size,
      .alignment = b->page_size,
      .limit = b->mapped_size - 1,
  };
  b->handle = 0;
  return nvhcq_rm_alloc(&dev->rm, dev->h_device,
                        sysmem ? NV01_MEMORY_SYSTEM : NV01_MEMORY_LOCAL_USER, &p, sizeof p,
                        &b->handle);
}

/* Pins the pages at b->gpu_address (the CPU's address: mapped already) as an RM memory object. */
static nvhcq_status pin_host(nvhcq_device *dev, nvhcq_buffer *b) {
  b->handle = dev->next_host_handle++;
  nv_ioctl_nvos02_parameters_with_fd p = {.params = {.hRoot = dev->rm.root,
                                                     .hObjectParent = dev->h_device,
                                                     .hObjectNew = b->handle,
                                                     .hClass = NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
                                                     .flags = NVOS02_FLAGS_PINNED_HOST,
                                                     .pMemory = b->gpu_address,
                                                     .limit = b->mapped_size - 1},
                                          .fd = -1};
  nvhcq_status s =
      nvhcq_rm_escape(dev->fd_dev, NV_ESC_RM_ALLOC_MEMORY, &p, sizeof p, "pin host memory");
  if (!s && p.params.status)
    s = nvhcq_fail(nvhcq_status_from_nv(p.params.status), "pinning %llu bytes of host memory: %s",
                   (unsigned long long)b->mapped_size, nvhcq_nv_status_name(p.params.status));
  if (s) b->handle = 0;
  return s;
}

/* Pinned host memory is private anonymous memory, with transparent huge pages asked for from
 * 2 MiB on (its addresses 2 MiB-aligned). Why: pinning shared anonymous (shmem) pages faults
 * them in one 4 KiB page at a time; on the H200's host a 4 MiB buffer took 2.2 ms to allocate
 * and 1.0 ms to free that way, 1.6 and 0.6 ms with private pages, 0.50 and 0.18 ms with huge
 * ones (libcuda's cuMemHostAlloc and cuMemFreeHost: 2.5 ms together). The driver pins with
 * pin_user_pages (open kernel modules, os_lock_user_pages), and since Linux 5.8 fork() copies
 * pinned private pages for the child, so the parent's pages stay the ones the GPU maps.
 * NVHCQ_DEBUG_HOST_SHARED=1 gives the shared pages of before (for A/B measurements). */
static int host_mmap_flags(size_t size, int *huge) {
  static int shared = -1;
  if (debug_knob(&shared, "NVHCQ_DEBUG_HOST_SHARED")) {
    *huge = 0;
    return MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED;
  }
  *huge = size >= PAGE_2M;
  return MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
}

/* Whether pinned host memory of this size gets huge pages (and addresses aligned for them). */
static int host_huge_aligned(size_t size) {
  int huge;
  (void)host_mmap_flags(size, &huge);
  return huge;
}

static nvhcq_status alloc_pinned_host(nvhcq_device *dev, nvhcq_buffer *b) {
  int huge;
  int flags = host_mmap_flags(b->mapped_size, &huge);
  void *at = nvhcq_door->mmap((void *)(uintptr_t)b->gpu_address, b->mapped_size,
                              PROT_READ | PROT_WRITE, flags, -1, 0);
  if (at != MAP_FAILED && huge) (void)madvise(at, b->mapped_size, MADV_HUGEPAGE);
  if (at == MAP_FAILED)
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "mmap of %llu bytes of host memory failed: %s",
                      (unsigned long long)b->mapped_size, strerror(errno));
  b->host_pointer = at;
  return pin_host(dev, b);
}

/* Into the UVM address space of `rm`'s UVM fd. */
static nvhcq_status map_to_gpu_with(nvhcq_device *dev, nvhcq_rm *rm, nvhcq_buffer *b) {
  UVM_CREATE_EXTERNAL_RANGE_PARAMS r = {.base = b->gpu_address, .length = b->mapped_size};
  NVHCQ_TRY(nvhcq_uvm_call(rm, UVM_CREATE_EXTERNAL_RANGE, "UVM_CREATE_EXTERNAL_RANGE", &r,
                           offsetof(UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus)));
  static _Thread_local UVM_MAP_EXTERNAL_ALLOCATION_PARAMS m; /* 9 KiB: keep it off the stack */
  memset(&m, 0, sizeof m);
  m.base = b->gpu_address;
  m.length = b->mapped_size;
  memcpy(m.perGpuAttributes[0].gpuUuid.uuid, dev->info.uuid, 16);
  m.perGpuAttributes[0].gpuMappingType = UVM_GPU_MAPPING_TYPE_READ_WRITE_ATOMIC;
  m.gpuAttributesCount = 1;
  m.rmCtrlFd = dev->rm.fd_ctl;
  m.hClient = dev->rm.root;
  m.hMemory = b->handle;
  m.offset = b->physical_offset;
  nvhcq_status s = nvhcq_uvm_call(rm, UVM_MAP_EXTERNAL_ALLOCATION, "UVM_MAP_EXTERNAL_ALLOCATION",
                                  &m, offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus));
  if (s) nvhcq_uvm_free(rm, b->gpu_address, b->mapped_size);
  return s;
}

static nvhcq_status map_to_gpu(nvhcq_device *dev, nvhcq_buffer *b) {
  return map_to_gpu_with(dev, &dev->rm, b);
}

/* Without UVM: a virtual memory object reserves [gpu_address, +mapped_size) of RM's address space
 * (the CPU's address: the same number for both), and the memory is mapped into all of it. */
static nvhcq_status map_to_gpu_rm(nvhcq_device *dev, nvhcq_buffer *b) {
  int huge = b->page_size == PAGE_2M;
  NV_MEMORY_ALLOCATION_PARAMS v = {
      .owner = dev->rm.root,
      .type = NVOS32_TYPE_IMAGE,
      .flags = NVOS32_ALLOC_FLAGS_VIRTUAL_FIXED,
      .attr = rm_page_attr(b->page_size) << NVOS32_ATTR_PAGE_SIZE_SHIFT,
      .attr2 = huge ? NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB << NVOS32_ATTR2_PAGE_SIZE_HUGE_SHIFT : 0,
      .size = b->mapped_size,
      .alignment = b->page_size,
      .offset = b->gpu_address,
      .hVASpace = dev->h_vaspace,
  };
  NVHCQ_TRY(
      nvhcq_rm_alloc(&dev->rm, dev->h_device, NV50_MEMORY_VIRTUAL, &v, sizeof v, &b->h_virtual));
  uint32_t flags = rm_page_map_flag(b->page_size) | NVOS46_FLAGS_CACHE_SNOOP;
  uint64_t at = 0;
  nvhcq_status s = nvhcq_rm_map_dma(&dev->rm, dev->h_device, b->h_virtual, b->handle,
                                    b->physical_offset, b->mapped_size, flags, &at);
  if (!s && at != b->gpu_address) {
    nvhcq_rm_unmap_dma(&dev->rm, dev->h_device, b->h_virtual, b->handle, at);
    s = nvhcq_fail(NVHCQ_ERROR_DRIVER,
                   "the driver mapped memory for the GPU at 0x%llx, not at 0x%llx where the CPU "
                   "sees it; set NVHCQ_UVM=eager",
                   (unsigned long long)at, (unsigned long long)b->gpu_address);
  }
  if (s) {
    nvhcq_rm_free(&dev->rm, dev->h_device, b->h_virtual);
    b->h_virtual = 0;
  }
  return s;
}

/* A buffer made before the device moved onto UVM is mapped in both address spaces. */
static void unmap_from_gpu(nvhcq_device *dev, nvhcq_buffer *b) {
  if (b->uvm_mapped) nvhcq_uvm_free(&dev->rm, b->gpu_address, b->mapped_size);
  if (!b->h_virtual) return;
  nvhcq_rm_unmap_dma(&dev->rm, dev->h_device, b->h_virtual, b->handle, b->gpu_address);
  nvhcq_rm_free(&dev->rm, dev->h_device, b->h_virtual);
}

/* Under dev->alloc_lock. */
static void list_add(nvhcq_device *dev, nvhcq_buffer *b) {
  b->all_prev = NULL;
  b->all_next = dev->allocations;
  if (dev->allocations) dev->allocations->all_prev = b;
  dev->allocations = b;
}

static void list_remove(nvhcq_device *dev, nvhcq_buffer *b) {
  pthread_mutex_lock(&dev->alloc_lock);
  if (b->all_prev)
    b->all_prev->all_next = b->all_next;
  else if (dev->allocations == b)
    dev->allocations = b->all_next;
  if (b->all_next) b->all_next->all_prev = b->all_prev;
  b->all_prev = b->all_next = NULL;
  pthread_mutex_unlock(&dev->alloc_lock);
}

nvhcq_status nvhcq_memory_map_all_uvm(nvhcq_device *dev) {
  nvhcq_status s = NVHCQ_SUCCESS;
  pthread_mutex_lock(&dev->alloc_lock);
  for (nvhcq_buffer *b = dev->allocations; b && !s; b = b->all_next)
    if (!b->uvm_mapped && !(s = map_to_gpu(dev, b))) b->uvm_mapped = 1;
  pthread_mutex_unlock(&dev->alloc_lock);
  return s;
}

/* Into the device's current address space, and onto its list, under the lock the move's walk of
 * that list holds: a buffer is mapped either before the move (and then by it) or after it. */
static nvhcq_status map_for_gpu(nvhcq_device *dev, nvhcq_rm *uvm_rm, nvhcq_buffer *b) {
  pthread_mutex_lock(&dev->alloc_lock);
  int rm = !uvm_rm && dev->rm_only;
  nvhcq_status s = rm ? map_to_gpu_rm(dev, b) : map_to_gpu_with(dev, uvm_rm ? uvm_rm : &dev->rm, b);
  if (!s) {
    b->uvm_mapped = !rm;
    list_add(dev, b);
  }
  pthread_mutex_unlock(&dev->alloc_lock);
  return s;
}

/* Undoes whatever of an allocation was done, in reverse order. While the device closes, the
 * memory object and its GPU mappings are left to the client's release (freeing the client frees
 * them): the CPU mapping and the addresses go now, which is safe because the GPU mappings that
 * remain are in this device's address spaces only, which nothing maps into again. */
static void release(nvhcq_buffer *b, int gpu_mapped) {
  nvhcq_device *dev = b->dev;
  nvhcq_peer_buffer_released(b); /* other devices' mappings of it go first */
  if (gpu_mapped) list_remove(dev, b);
  if (gpu_mapped && !nvhcq_device_closing(dev)) unmap_from_gpu(dev, b);
  if (b->physical) { /* its memory and addresses are the physical memory's and the range's */
    nvhcq_physical_view_released(b);
    nvhcq_retire(b);
    return;
  }
  if (b->host_pointer && !b->registered) nvhcq_door->munmap(b->host_pointer, b->mapped_size);
  if (b->handle && !nvhcq_device_closing(dev)) nvhcq_rm_free(&dev->rm, dev->h_device, b->handle);
  if (b->map_fd >= 0) nvhcq_door->close(b->map_fd);
  if (b->registered) {
    if (b->high_size) (void)!nvhcq_va_free(nvhcq_va_high(), b->high_base, b->high_size);
  } else if (b->gpu_address) {
    if (b->low) nvhcq_low_unmap(b->gpu_address, b->mapped_size);
    nvhcq_va_free(b->low ? nvhcq_va_low() : nvhcq_va_high(), b->gpu_address, b->mapped_size);
  }
  nvhcq_retire(b);
}

/* `uvm_rm`: mapped into the UVM address space of its fd only (not the device's current one). */
static nvhcq_status alloc_once(nvhcq_device *dev, nvhcq_rm *uvm_rm, size_t size,
                               nvhcq_memory_kind kind, const nvhcq_alloc_options *options,
                               nvhcq_buffer **out) {
  static const nvhcq_alloc_options defaults = {0};
  if (!options) options = &defaults;
  uint64_t page = page_size_for(kind, size); /* 64-bit: NVHCQ_ALIGN_UP masks with it */
  if (size == 0 || size > (1ull << 46))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "allocation size %zu is invalid (must be between 1 byte and 64 TiB)", size);
  nvhcq_buffer *b = calloc(1, sizeof *b);
  if (!b) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *b = (nvhcq_buffer){.magic = NVHCQ_BUFFER_MAGIC,
                      .dev = dev,
                      .kind = kind,
                      .size = size,
                      .mapped_size = NVHCQ_ALIGN_UP(size, page),
                      .page_size = (uint32_t)page,
                      .map_fd = -1,
                      .low = kind != NVHCQ_MEMORY_DEVICE};
  uint64_t addr;
  nvhcq_status s =
      nvhcq_va_alloc(b->low ? nvhcq_va_low() : nvhcq_va_high(), b->mapped_size,
                     kind == NVHCQ_MEMORY_HOST && host_huge_aligned(size) ? PAGE_2M : page, &addr);
  if (s) {
    free(b);
    return s;
  }
  b->gpu_address = addr;
  if (kind == NVHCQ_MEMORY_HOST) {
    s = alloc_pinned_host(dev, b);
  } else {
    s = alloc_rm_memory(dev, b,
                        options->contiguous || (kind == NVHCQ_MEMORY_DEVICE && debug_contiguous()));
    if (!s && kind != NVHCQ_MEMORY_DEVICE)
      s = map_to_cpu(dev, b, options->map_flags, kind == NVHCQ_MEMORY_HOST_UNCACHED);
  }
  if (!s) s = map_for_gpu(dev, uvm_rm, b);
  if (s) {
    release(b, 0);
    return nvhcq_fail_context(s, "allocating %zu bytes of %s memory on GPU %d", size,
                              kind_name(kind), dev->index);
  }
  *out = b;
  return NVHCQ_SUCCESS;
}

/* Destroyed buffers the GPU is done with go first; when memory runs out, those it is still using
 * are waited for and the allocation is tried once more. */
nvhcq_status nvhcq_memory_alloc(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                                const nvhcq_alloc_options *options, nvhcq_buffer **out) {
  nvhcq_reclaim_poll(dev);
  nvhcq_status s = alloc_once(dev, NULL, size, kind, options, out);
  if (s == NVHCQ_ERROR_OUT_OF_MEMORY && nvhcq_reclaim_wait_all(dev))
    s = alloc_once(dev, NULL, size, kind, options, out);
  return s;
}

nvhcq_status nvhcq_memory_alloc_uvm(nvhcq_device *dev, nvhcq_rm *rm, size_t size,
                                    nvhcq_memory_kind kind, const nvhcq_alloc_options *options,
                                    nvhcq_buffer **out) {
  return alloc_once(dev, rm, size, kind, options, out);
}

/* The caller's pages keep their addresses: those nvhcq hands out must not be among them (its own
 * CPU-visible range is GPU memory already; GPU-only addresses there are taken for as long as the
 * registration lasts), nor the shader windows, which the GPU resolves before its page tables. */
static nvhcq_status claim_addresses(nvhcq_buffer *b) {
  uint64_t a = b->gpu_address, n = b->mapped_size, lo = nvhcq_va_low()->base;
  uint64_t windows = NVHCQ_LOCAL_WINDOW, windows_end = NVHCQ_SHARED_WINDOW + NVHCQ_WINDOW_BYTES;
  if (a < lo + nvhcq_va_low()->size && lo < a + n)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "host memory at 0x%llx+%llu lies in nvhcq's own range of GPU-visible memory "
                      "(it is a buffer of nvhcq's, mapped for the GPU already): register memory "
                      "nvhcq did not allocate",
                      (unsigned long long)a, (unsigned long long)n);
  if (a < windows_end && windows < a + n)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "host memory at 0x%llx+%llu overlaps the GPU's shader windows "
                      "[0x%llx, 0x%llx): the GPU cannot reach it at that address; allocate the "
                      "memory elsewhere",
                      (unsigned long long)a, (unsigned long long)n, (unsigned long long)windows,
                      (unsigned long long)windows_end);
  if (!nvhcq_va_take_at(nvhcq_va_high(), a, n, &b->high_base, &b->high_size))
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                      "host memory at 0x%llx+%llu overlaps GPU addresses in use (registered "
                      "already, or a device buffer's): unregister or free that first",
                      (unsigned long long)a, (unsigned long long)n);
  return NVHCQ_SUCCESS;
}

static nvhcq_status register_once(nvhcq_device *dev, void *ptr, size_t size, nvhcq_buffer **out) {
  uint64_t start = (uint64_t)(uintptr_t)ptr & ~(uint64_t)(PAGE_4K - 1);
  uint64_t end = NVHCQ_ALIGN_UP((uint64_t)(uintptr_t)ptr + size, (uint64_t)PAGE_4K);
  nvhcq_buffer *b = calloc(1, sizeof *b);
  if (!b) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *b = (nvhcq_buffer){.magic = NVHCQ_BUFFER_MAGIC,
                      .dev = dev,
                      .kind = NVHCQ_MEMORY_HOST,
                      .gpu_address = start,
                      .size = (uint64_t)(uintptr_t)ptr + size - start,
                      .mapped_size = end - start,
                      .page_size = PAGE_4K,
                      .host_pointer = (void *)(uintptr_t)start,
                      .map_fd = -1,
                      .registered = 1};
  nvhcq_status s = claim_addresses(b);
  if (!s) s = pin_host(dev, b);
  if (!s) s = map_for_gpu(dev, NULL, b);
  if (s) {
    release(b, 0);
    return nvhcq_fail_context(s, "registering %zu bytes of host memory at %p with GPU %d", size,
                              ptr, dev->index);
  }
  *out = b;
  return NVHCQ_SUCCESS;
}

/* A registration that just ended may still wait for the GPU (its pages stay pinned and its
 * addresses taken until then): on a failure those are waited for, and it is tried once more. */
nvhcq_status nvhcq_memory_register(nvhcq_device *dev, void *ptr, size_t size, nvhcq_buffer **out) {
  if (!ptr || size == 0 || size > (1ull << 46))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_register_host: %zu bytes at %p is invalid (a non-NULL "
                      "pointer and between 1 byte and 64 TiB)",
                      size, ptr);
  if ((uint64_t)(uintptr_t)ptr + size < (uint64_t)(uintptr_t)ptr)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_register_host: %zu bytes at %p wrap around", size, ptr);
  nvhcq_reclaim_poll(dev);
  nvhcq_status s = register_once(dev, ptr, size, out);
  if (s && nvhcq_reclaim_wait_all(dev)) s = register_once(dev, ptr, size, out);
  return s;
}

nvhcq_status nvhcq_memory_alloc_physical(nvhcq_device *dev, uint64_t size, uint32_t *handle) {
  nvhcq_buffer b = {.dev = dev,
                    .kind = NVHCQ_MEMORY_DEVICE,
                    .size = size,
                    .mapped_size = size,
                    .page_size = PAGE_2M,
                    .map_fd = -1};
  nvhcq_reclaim_poll(dev);
  nvhcq_status s = alloc_rm_memory(dev, &b, 0);
  if (s == NVHCQ_ERROR_OUT_OF_MEMORY && nvhcq_reclaim_wait_all(dev))
    s = alloc_rm_memory(dev, &b, 0);
  if (s)
    return nvhcq_fail_context(s, "allocating %llu bytes of physical device memory on GPU %d",
                              (unsigned long long)size, dev->index);
  *handle = b.handle;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_memory_map_view(nvhcq_buffer *b) {
  nvhcq_status s = map_for_gpu(b->dev, NULL, b);
  if (s)
    return nvhcq_fail_context(s, "mapping %llu bytes of physical memory at 0x%llx on GPU %d",
                              (unsigned long long)b->mapped_size,
                              (unsigned long long)b->gpu_address, b->dev->index);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_memory_free(nvhcq_buffer *b) {
  if (b->slab) {
    nvhcq_slab_free(b);
    return NVHCQ_SUCCESS;
  }
  release(b, 1);
  return NVHCQ_SUCCESS;
}

void nvhcq_memory_drop(nvhcq_buffer **b) {
  if (*b) nvhcq_memory_free(*b);
  *b = NULL;
}
