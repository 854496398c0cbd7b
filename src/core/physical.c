/* Physical memory and reserved ranges: nvhcq_physical_* (with export to and import from file
 * descriptors), nvhcq_reservation_* and nvhcq_buffer_map_physical. A mapping is a device buffer
 * whose memory is a piece of a physical allocation and whose addresses are a piece of a reserved
 * range; destroying it unmaps it (once the GPU has passed the work before), and the physical memory
 * lives while mapped. */
#include "core/physical.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/device.h"
#include "core/reclaim.h"
#include "core/slab.h"
#include "driver/door.h"
#include "util/abi.h"
#include "util/handle.h"

#define GRANULE (2ull << 20)

static int misaligned(uint64_t x) {
  return (x & (GRANULE - 1)) != 0;
}

/* ---- physical memory ---- */

nvhcq_status nvhcq_physical_create(nvhcq_device *dev, uint64_t size, nvhcq_physical **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_physical_create: out is NULL");
  if (size == 0 || misaligned(size) || size > (1ull << 46))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_physical_create: size %llu is invalid (a non-zero multiple of 2 MiB, "
                      "NVHCQ_PHYSICAL_GRANULARITY, up to 64 TiB)",
                      (unsigned long long)size);
  nvhcq_physical *p = calloc(1, sizeof *p);
  if (!p) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *p = (nvhcq_physical){.magic = NVHCQ_PHYSICAL_MAGIC, .dev = dev, .size = size, .refs = 1};
  nvhcq_status s = nvhcq_memory_alloc_physical(dev, size, &p->handle);
  if (s) {
    free(p);
    return s;
  }
  *out = p;
  return NVHCQ_SUCCESS;
}

static void physical_unref(nvhcq_physical *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL)) return;
  if (!nvhcq_device_closing(p->dev)) nvhcq_rm_free(&p->dev->rm, p->dev->h_device, p->handle);
  nvhcq_retire(p);
}

static nvhcq_status physical_check(const nvhcq_physical *p, const char *what) {
  nvhcq_status s = nvhcq_handle_check(p, NVHCQ_PHYSICAL_MAGIC, "physical memory", NULL);
  return s ? nvhcq_fail_context(s, "%s", what) : s;
}

nvhcq_status nvhcq_physical_destroy(nvhcq_physical *p) {
  if (!p) return NVHCQ_SUCCESS;
  NVHCQ_TRY(physical_check(p, "nvhcq_physical_destroy"));
  p->magic = NVHCQ_PHYSICAL_MAGIC ^ 1; /* dead to the caller; its mappings keep the memory */
  physical_unref(p);
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_physical_size(const nvhcq_physical *p) {
  return physical_check(p, "nvhcq_physical_size") ? 0 : p->size;
}

/* ---- sharing through file descriptors ---- */

/* RM ties an exported object to a /dev/nvidiactl file opened for nothing else (the kernel module
 * keeps the export in that file's private data), so each export opens one. Another process that
 * receives the descriptor (SCM_RIGHTS, inheritance) imports a duplicate of the object into its
 * own RM client; the memory lives while any client holds it. */
nvhcq_status nvhcq_physical_export_fd(nvhcq_physical *p, int *fd_out) {
  if (!fd_out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_physical_export_fd: fd is NULL");
  NVHCQ_TRY(physical_check(p, "nvhcq_physical_export_fd"));
  NVHCQ_TRY(nvhcq_device_check(p->dev));
  int fd;
  NVHCQ_TRY(nvhcq_open_ctl(&fd));
  NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS e = {
      .object = {.type = NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TYPE_RM,
                 .hDevice = p->dev->h_device,
                 .hParent = p->dev->h_device,
                 .hObject = p->handle},
      .fd = fd};
  nvhcq_status s = nvhcq_rm_control(&p->dev->rm, p->dev->rm.root,
                                    NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD, &e, sizeof e);
  if (s) {
    nvhcq_door->close(fd);
    return nvhcq_fail_context(s,
                              "exporting %llu bytes of physical memory on GPU %d to a file "
                              "descriptor",
                              (unsigned long long)p->size, p->dev->index);
  }
  *fd_out = fd;
  return NVHCQ_SUCCESS;
}

/* The physical size of RM memory object `handle`. */
static nvhcq_status surface_size(nvhcq_device *dev, uint32_t handle, uint64_t *size) {
  NV0041_CTRL_SURFACE_INFO info[2] = {{.index = NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO},
                                      {.index = NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI}};
  NV0041_CTRL_GET_SURFACE_INFO_PARAMS q = {.count = 2, .list = (uint64_t)(uintptr_t)info};
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, handle, NV0041_CTRL_CMD_GET_SURFACE_INFO, &q, sizeof q));
  *size = (uint64_t)info[1].data << 32 | info[0].data;
  return NVHCQ_SUCCESS;
}

static nvhcq_status import_object(nvhcq_device *dev, int fd, uint32_t *handle, uint64_t *size) {
  NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS m = {
      .fd = fd,
      .object = {.type = NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TYPE_RM,
                 .hDevice = dev->h_device,
                 .hParent = dev->h_device}};
  NVHCQ_TRY(nvhcq_rm_control(&dev->rm, dev->rm.root, NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD,
                             &m, sizeof m));
  *handle = m.object.hObject;
  nvhcq_status s = surface_size(dev, *handle, size);
  if (!s && (*size == 0 || misaligned(*size)))
    s = nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                   "the memory is %llu bytes, not a multiple of 2 MiB pages; nvhcq maps only "
                   "physical memory of NVHCQ_PHYSICAL_GRANULARITY pages",
                   (unsigned long long)*size);
  if (s) nvhcq_rm_free(&dev->rm, dev->h_device, *handle);
  return s;
}

nvhcq_status nvhcq_physical_import_fd(nvhcq_device *dev, int fd, nvhcq_physical **out) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_physical_import_fd: out is NULL");
  if (fd < 0)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_physical_import_fd: fd %d is not a file descriptor", fd);
  nvhcq_physical *p = calloc(1, sizeof *p);
  if (!p) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  uint32_t handle = 0;
  uint64_t size = 0;
  nvhcq_status s = import_object(dev, fd, &handle, &size);
  if (s) {
    free(p);
    return nvhcq_fail_context(s,
                              "importing physical memory from file descriptor %d on GPU %d "
                              "(is it one nvhcq_physical_export_fd or cuMemExportToShareable"
                              "Handle gave, of memory on this GPU?)",
                              fd, dev->index);
  }
  *p = (nvhcq_physical){
      .magic = NVHCQ_PHYSICAL_MAGIC, .dev = dev, .size = size, .handle = handle, .refs = 1};
  *out = p;
  return NVHCQ_SUCCESS;
}

/* ---- sharing through RM's share policy (IPC handles) ---- */

#define IPC_MAGIC 0x5049564eu /* "NVIP" */

/* What an IPC handle carries: RM handles are global, so the exporter's client and memory handle
 * name the allocation in any process; the importer duplicates it under its own device once the
 * exporter has let the same user's clients do so. */
typedef struct ipc_contents {
  uint32_t magic, version;
  uint32_t client, object;
  uint64_t offset, size; /* the exported buffer in the allocation */
  uint8_t uuid[16];      /* the GPU */
  uint32_t pid;
  uint8_t pad[12];
} ipc_contents;
_Static_assert(sizeof(ipc_contents) == sizeof(nvhcq_ipc_handle), "an IPC handle's contents");

/* The RM allocation a device buffer's bytes lie in, and where in it the buffer starts. */
static nvhcq_status allocation_of(const nvhcq_buffer *b, uint32_t *object, uint64_t *offset) {
  if (b->kind != NVHCQ_MEMORY_DEVICE || b->registered)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_export_ipc: only device memory (NVHCQ_MEMORY_DEVICE) can be "
                      "shared this way; share host memory through a file or shared memory");
  if (b->slab) {
    const nvhcq_buffer *m = nvhcq_slab_memory(b);
    *object = m->handle, *offset = b->gpu_address - m->gpu_address;
  } else if (b->physical) {
    *object = b->physical->handle, *offset = b->physical_offset;
  } else {
    *object = b->handle, *offset = 0;
  }
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_buffer_export_ipc(nvhcq_buffer *b, nvhcq_ipc_handle *handle) {
  NVHCQ_TRY(nvhcq_buffer_check(b, "nvhcq_buffer_export_ipc"));
  if (!handle)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_export_ipc: handle is NULL");
  ipc_contents c = {.magic = IPC_MAGIC, .version = 1, .size = b->size, .pid = (uint32_t)getpid()};
  NVHCQ_TRY(allocation_of(b, &c.object, &c.offset));
  NVHCQ_TRY(nvhcq_device_check(b->dev));
  nvhcq_status s = nvhcq_rm_share(&b->dev->rm, c.object);
  if (s)
    return nvhcq_fail_context(s, "nvhcq_buffer_export_ipc of %zu bytes on GPU %d", b->size,
                              b->dev->index);
  c.client = b->dev->rm.root;
  memcpy(c.uuid, b->dev->info.uuid, sizeof c.uuid);
  memcpy(handle, &c, sizeof c);
  return NVHCQ_SUCCESS;
}

static nvhcq_status ipc_contents_of(nvhcq_device *dev, const nvhcq_ipc_handle *h, ipc_contents *c) {
  memcpy(c, h, sizeof *c);
  if (c->magic != IPC_MAGIC || c->version != 1)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_physical_import_ipc: the handle is not one nvhcq_buffer_export_ipc "
                      "made (handles from NVIDIA's library are not these)");
  if (memcmp(c->uuid, dev->info.uuid, sizeof c->uuid))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_physical_import_ipc: the memory is on another GPU than %s; import it "
                      "on the GPU it was exported from",
                      dev->info.uuid_string);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_physical_import_ipc(nvhcq_device *dev, const nvhcq_ipc_handle *h,
                                       nvhcq_physical **out, uint64_t *offset, uint64_t *size) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (!h || !out || !offset || !size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_physical_import_ipc: handle, out, offset and size must be set");
  ipc_contents c;
  NVHCQ_TRY(ipc_contents_of(dev, h, &c));
  nvhcq_physical *p = calloc(1, sizeof *p);
  if (!p) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  uint32_t handle = 0;
  uint64_t bytes = 0;
  nvhcq_status s = nvhcq_rm_dup(&dev->rm, dev->h_device, c.client, c.object, &handle);
  if (!s) s = surface_size(dev, handle, &bytes);
  if (!s && (bytes == 0 || misaligned(bytes) || c.offset > bytes || c.size > bytes - c.offset))
    s = nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                   "the shared allocation is %llu bytes (the buffer %llu at %llu); nvhcq maps "
                   "only whole 2 MiB pages",
                   (unsigned long long)bytes, (unsigned long long)c.size,
                   (unsigned long long)c.offset);
  if (s) {
    if (handle) nvhcq_rm_free(&dev->rm, dev->h_device, handle);
    free(p);
    return nvhcq_fail_context(s,
                              "nvhcq_physical_import_ipc of memory from process %u on GPU %d (is "
                              "the exporter's buffer still alive, and is it the same user?)",
                              c.pid, dev->index);
  }
  *p = (nvhcq_physical){
      .magic = NVHCQ_PHYSICAL_MAGIC, .dev = dev, .size = bytes, .handle = handle, .refs = 1};
  *out = p, *offset = c.offset, *size = c.size;
  return NVHCQ_SUCCESS;
}

/* ---- reserved ranges ---- */

static nvhcq_status reservation_check(const nvhcq_reservation *r, const char *what) {
  nvhcq_status s = nvhcq_handle_check(r, NVHCQ_RESERVATION_MAGIC, "reserved range", NULL);
  return s ? nvhcq_fail_context(s, "%s", what) : s;
}

/* [address, +size) of the GPU-only range if all of it is free there, else 0. */
static int take_hint(uint64_t address, uint64_t size) {
  uint64_t base, taken;
  if (!nvhcq_va_take_at(nvhcq_va_high(), address, size, &base, &taken)) return 0;
  if (taken == size) return 1;
  if (taken) (void)!nvhcq_va_free(nvhcq_va_high(), base, taken);
  return 0;
}

static nvhcq_status reserve_addresses(uint64_t size, uint64_t alignment, uint64_t address,
                                      uint64_t *out) {
  NVHCQ_TRY(nvhcq_va_ranges_init());
  if (address && !(address & (alignment - 1)) && take_hint(address, size)) {
    *out = address;
    return NVHCQ_SUCCESS;
  }
  return nvhcq_va_alloc(nvhcq_va_high(), size, alignment, out);
}

nvhcq_status nvhcq_reservation_create(uint64_t size, uint64_t alignment, uint64_t address,
                                      nvhcq_reservation **out) {
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_reservation_create: out is NULL");
  if (!alignment) alignment = GRANULE;
  if (size == 0 || misaligned(size) || size > (1ull << 46) || misaligned(alignment) ||
      (alignment & (alignment - 1)) || misaligned(address))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_reservation_create: size %llu, alignment %llu or address 0x%llx is "
                      "invalid (size and address multiples of 2 MiB, size up to 64 TiB, the "
                      "alignment 0 or a power of two from 2 MiB on)",
                      (unsigned long long)size, (unsigned long long)alignment,
                      (unsigned long long)address);
  nvhcq_reservation *r = calloc(1, sizeof *r);
  if (!r) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  nvhcq_status s = reserve_addresses(size, alignment, address, &r->base);
  if (s) {
    free(r);
    return nvhcq_fail_context(s, "reserving %llu bytes of GPU addresses", (unsigned long long)size);
  }
  r->magic = NVHCQ_RESERVATION_MAGIC;
  r->size = size;
  pthread_mutex_init(&r->lock, NULL);
  *out = r;
  return NVHCQ_SUCCESS;
}

/* The first piece overlapping [base, +size), or -1 (under r->lock). */
static int64_t piece_overlapping(const nvhcq_reservation *r, uint64_t base, uint64_t size) {
  for (uint32_t i = 0; i < r->count; i++)
    if (base < r->pieces[i].base + r->pieces[i].size && r->pieces[i].base < base + size) return i;
  return -1;
}

/* Mappings destroyed but not yet released hold their pieces until the GPU is past them: such a
 * piece in [base, +size) is waited for. Whether [base, +size) is free now. */
static int wait_for_pieces(nvhcq_reservation *r, uint64_t base, uint64_t size) {
  for (;;) {
    pthread_mutex_lock(&r->lock);
    int64_t i = piece_overlapping(r, base, size);
    nvhcq_device *dev = i < 0 ? NULL : r->pieces[i].dev;
    int dead = i >= 0 && r->pieces[i].view->magic != NVHCQ_BUFFER_MAGIC;
    pthread_mutex_unlock(&r->lock);
    if (i < 0) return 1;
    if (!dead || !nvhcq_reclaim_wait_all(dev)) return 0;
  }
}

nvhcq_status nvhcq_reservation_destroy(nvhcq_reservation *r) {
  if (!r) return NVHCQ_SUCCESS;
  NVHCQ_TRY(reservation_check(r, "nvhcq_reservation_destroy"));
  if (!wait_for_pieces(r, r->base, r->size))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_reservation_destroy: the range at 0x%llx still has mappings; "
                      "destroy their buffers first",
                      (unsigned long long)r->base);
  (void)!nvhcq_va_free(nvhcq_va_high(), r->base, r->size);
  pthread_mutex_destroy(&r->lock);
  free(r->pieces);
  nvhcq_retire(r);
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_reservation_gpu_address(const nvhcq_reservation *r) {
  return reservation_check(r, "nvhcq_reservation_gpu_address") ? 0 : r->base;
}

/* ---- mappings ---- */

/* Claims [b's addresses) of the range for b, if nothing else holds any of them. */
static nvhcq_status claim_piece(nvhcq_reservation *r, nvhcq_buffer *b) {
  uint64_t base = b->gpu_address, size = b->mapped_size;
  nvhcq_status s = NVHCQ_SUCCESS;
  for (int tries = 0; tries < 2; tries++) {
    if (tries && !wait_for_pieces(r, base, size)) break;
    pthread_mutex_lock(&r->lock);
    int free_now = piece_overlapping(r, base, size) < 0;
    if (free_now && r->count == r->capacity) {
      uint32_t cap = r->capacity ? r->capacity * 2 : 8;
      nvhcq_reserved_piece *grown = realloc(r->pieces, cap * sizeof *grown);
      if (grown) r->pieces = grown, r->capacity = cap;
    }
    if (free_now && r->count < r->capacity)
      r->pieces[r->count++] = (nvhcq_reserved_piece){base, size, b, b->dev};
    else if (free_now)
      s = nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_unlock(&r->lock);
    if (free_now) return s;
  }
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "nvhcq_buffer_map_physical: [0x%llx, +%llu) overlaps a mapping in its range; "
                    "destroy that mapping's buffer first",
                    (unsigned long long)base, (unsigned long long)size);
}

static void drop_piece(nvhcq_reservation *r, const nvhcq_buffer *b) {
  pthread_mutex_lock(&r->lock);
  for (uint32_t i = 0; i < r->count; i++)
    if (r->pieces[i].view == b) {
      r->pieces[i] = r->pieces[--r->count];
      break;
    }
  pthread_mutex_unlock(&r->lock);
}

void nvhcq_physical_view_released(nvhcq_buffer *b) {
  drop_piece(b->reservation, b);
  physical_unref(b->physical);
}

static nvhcq_status check_map(nvhcq_reservation *r, uint64_t address, nvhcq_physical *p,
                              uint64_t offset, uint64_t size) {
  NVHCQ_TRY(reservation_check(r, "nvhcq_buffer_map_physical"));
  NVHCQ_TRY(physical_check(p, "nvhcq_buffer_map_physical"));
  NVHCQ_TRY(nvhcq_device_check(p->dev));
  if (size == 0 || misaligned(address | offset | size))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_map_physical: address 0x%llx, offset %llu and size %llu must "
                      "be multiples of 2 MiB, the size not 0",
                      (unsigned long long)address, (unsigned long long)offset,
                      (unsigned long long)size);
  if (address < r->base || size > r->size || address - r->base > r->size - size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_map_physical: [0x%llx, +%llu) is not inside the reserved "
                      "range [0x%llx, +%llu)",
                      (unsigned long long)address, (unsigned long long)size,
                      (unsigned long long)r->base, (unsigned long long)r->size);
  if (offset > p->size || size > p->size - offset)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_buffer_map_physical: %llu bytes from offset %llu run past the "
                      "%llu bytes of physical memory",
                      (unsigned long long)size, (unsigned long long)offset,
                      (unsigned long long)p->size);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_buffer_map_physical(nvhcq_reservation *r, uint64_t address, nvhcq_physical *p,
                                       uint64_t offset, uint64_t size, nvhcq_buffer **out) {
  if (!out)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_buffer_map_physical: out is NULL");
  NVHCQ_TRY(check_map(r, address, p, offset, size));
  nvhcq_buffer *b = calloc(1, sizeof *b);
  if (!b) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *b = (nvhcq_buffer){.magic = NVHCQ_BUFFER_MAGIC,
                      .dev = p->dev,
                      .kind = NVHCQ_MEMORY_DEVICE,
                      .gpu_address = address,
                      .size = size,
                      .mapped_size = size,
                      .page_size = (uint32_t)GRANULE,
                      .handle = p->handle,
                      .map_fd = -1,
                      .physical = p,
                      .physical_offset = offset,
                      .reservation = r};
  nvhcq_reclaim_poll(p->dev);
  nvhcq_status s = claim_piece(r, b);
  if (!s) {
    s = nvhcq_memory_map_view(b);
    if (s) drop_piece(r, b);
  }
  if (s) {
    free(b);
    return s;
  }
  __atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
  *out = b;
  return NVHCQ_SUCCESS;
}
