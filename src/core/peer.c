/* Peer access between devices of one process: the driver's P2P capabilities, UVM peer access, and
 * each device's user buffers mapped into the address spaces of the devices that enabled access to
 * it, at the same address (nvhcq's addresses are process-wide, so no two devices' buffers meet).
 *
 * A device owns one UVM address space (its own /dev/nvidia-uvm fd). To map device B's memory for
 * GPU A, A's space gets B's GPU registered (UVM_REGISTER_GPU), peer access between them
 * (UVM_ENABLE_PEER_ACCESS), and for each of B's buffers an external range with B's RM memory
 * object mapped for A's UUID (UVM_MAP_EXTERNAL_ALLOCATION names B's control fd and client). One
 * lock covers every device's peer state: different devices may be used from different threads. */
#include "core/peer.h"
#include "core/uvm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/abi.h"

typedef struct nvhcq_import {
  nvhcq_buffer *src; /* another device's buffer, or NULL for its signal page */
  nvhcq_device *owner;
  uint64_t base, length;
  struct nvhcq_import *next;
} nvhcq_import;

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

static int slot_of(nvhcq_device *const *list, const nvhcq_device *d) {
  for (int i = 0; i < NVHCQ_MAX_PEERS; i++)
    if (list[i] == d) return i;
  return -1;
}

static nvhcq_status add_to(nvhcq_device **list, nvhcq_device *d, const nvhcq_device *dev) {
  if (slot_of(list, d) >= 0) return NVHCQ_SUCCESS;
  int free_slot = slot_of(list, NULL);
  if (free_slot < 0)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "GPU %d already has %d peers, the most nvhcq keeps",
                      dev->index, NVHCQ_MAX_PEERS);
  list[free_slot] = d;
  return NVHCQ_SUCCESS;
}

static void remove_from(nvhcq_device **list, const nvhcq_device *d) {
  int i = slot_of(list, d);
  if (i >= 0) list[i] = NULL;
}

int nvhcq_peer_enabled(nvhcq_device *dev, nvhcq_device *owner) {
  pthread_mutex_lock(&peer_lock);
  int on = slot_of(dev->peers, owner) >= 0;
  pthread_mutex_unlock(&peer_lock);
  return on;
}

/* ---- the driver ---- */

static nvhcq_status p2p_caps(nvhcq_device *a, nvhcq_device *b, uint32_t *caps) {
  static _Thread_local NV0000_CTRL_SYSTEM_GET_P2P_CAPS_MATRIX_PARAMS p; /* 1.3 KiB */
  memset(&p, 0, sizeof p);
  p.grpACount = p.grpBCount = 1;
  p.gpuIdGrpA[0] = a->gpu_id;
  p.gpuIdGrpB[0] = b->gpu_id;
  NVHCQ_TRY(nvhcq_rm_control(&a->rm, a->rm.root, NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX, &p,
                             sizeof p));
  *caps = p.p2pCaps[0][0];
  return NVHCQ_SUCCESS;
}

/* `other`'s GPU registered in `dev`'s UVM address space, once. */
static nvhcq_status register_gpu(nvhcq_device *dev, const nvhcq_device *other) {
  for (uint32_t i = 0; i < dev->registered_count; i++)
    if (!memcmp(dev->registered[i], other->info.uuid, 16)) return NVHCQ_SUCCESS;
  if (dev->registered_count == NVHCQ_MAX_PEERS)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED, "GPU %d already has %d peers, the most nvhcq keeps",
                      dev->index, NVHCQ_MAX_PEERS);
  UVM_REGISTER_GPU_PARAMS g = {.rmCtrlFd = -1};
  memcpy(g.gpu_uuid.uuid, other->info.uuid, 16);
  NVHCQ_TRY(nvhcq_uvm_call(&dev->rm, UVM_REGISTER_GPU, "UVM_REGISTER_GPU (peer)", &g,
                           offsetof(UVM_REGISTER_GPU_PARAMS, rmStatus)));
  memcpy(dev->registered[dev->registered_count++], other->info.uuid, 16);
  return NVHCQ_SUCCESS;
}

static void unregister_gpu(nvhcq_device *dev, const uint8_t *uuid) {
  UVM_UNREGISTER_GPU_PARAMS g;
  memset(&g, 0, sizeof g);
  memcpy(g.gpu_uuid.uuid, uuid, 16);
  (void)!nvhcq_uvm_call(&dev->rm, UVM_UNREGISTER_GPU, "UVM_UNREGISTER_GPU (peer)", &g,
                        offsetof(UVM_UNREGISTER_GPU_PARAMS, rmStatus));
}

static void unregister_gpus(nvhcq_device *dev) {
  for (uint32_t i = 0; i < dev->registered_count; i++) unregister_gpu(dev, dev->registered[i]);
  dev->registered_count = 0;
}

/* Peer access from dev to owner ends in dev's space (UVM refuses to enable it twice, as a later
 * enable with owner's GPU opened again would). */
static void disable_peer(nvhcq_device *dev, const nvhcq_device *owner) {
  UVM_ENABLE_PEER_ACCESS_PARAMS p;
  memset(&p, 0, sizeof p);
  memcpy(p.gpuUuidA.uuid, dev->info.uuid, 16);
  memcpy(p.gpuUuidB.uuid, owner->info.uuid, 16);
  (void)!nvhcq_uvm_call(&dev->rm, UVM_DISABLE_PEER_ACCESS, "UVM_DISABLE_PEER_ACCESS", &p,
                        offsetof(UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus));
}

/* owner's GPU leaves dev's space once nothing of it is mapped there. */
static void forget_gpu(nvhcq_device *dev, const nvhcq_device *owner) {
  for (uint32_t i = 0; i < dev->registered_count; i++)
    if (!memcmp(dev->registered[i], owner->info.uuid, 16)) {
      unregister_gpu(dev, owner->info.uuid);
      memmove(dev->registered[i], dev->registered[i + 1],
              (dev->registered_count - i - 1) * sizeof dev->registered[0]);
      dev->registered_count--;
      return;
    }
}

/* Owner's memory object `handle` at [base, +length) of dev's address space, for dev's GPU. */
static nvhcq_status map_foreign(nvhcq_device *dev, nvhcq_device *owner, uint32_t handle,
                                uint64_t base, uint64_t length) {
  UVM_CREATE_EXTERNAL_RANGE_PARAMS r = {.base = base, .length = length};
  NVHCQ_TRY(nvhcq_uvm_call(&dev->rm, UVM_CREATE_EXTERNAL_RANGE, "UVM_CREATE_EXTERNAL_RANGE (peer)",
                           &r, offsetof(UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus)));
  static _Thread_local UVM_MAP_EXTERNAL_ALLOCATION_PARAMS m; /* 9 KiB: keep it off the stack */
  memset(&m, 0, sizeof m);
  m.base = base;
  m.length = length;
  memcpy(m.perGpuAttributes[0].gpuUuid.uuid, dev->info.uuid, 16);
  m.perGpuAttributes[0].gpuMappingType = UVM_GPU_MAPPING_TYPE_READ_WRITE_ATOMIC;
  m.gpuAttributesCount = 1;
  m.rmCtrlFd = owner->rm.fd_ctl;
  m.hClient = owner->rm.root;
  m.hMemory = handle;
  nvhcq_status s =
      nvhcq_uvm_call(&dev->rm, UVM_MAP_EXTERNAL_ALLOCATION, "UVM_MAP_EXTERNAL_ALLOCATION (peer)",
                     &m, offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus));
  if (s) nvhcq_uvm_free(&dev->rm, base, length);
  return s;
}

/* ---- imports: other devices' memory mapped into a device ---- */

static nvhcq_status import(nvhcq_device *dev, nvhcq_device *owner, nvhcq_buffer *src,
                           const nvhcq_buffer *memory) {
  nvhcq_import *im = calloc(1, sizeof *im);
  if (!im) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
  *im = (nvhcq_import){.src = src,
                       .owner = owner,
                       .base = memory->gpu_address,
                       .length = memory->mapped_size,
                       .next = dev->imports};
  nvhcq_status s = map_foreign(dev, owner, memory->handle, im->base, im->length);
  if (s) {
    free(im);
    return nvhcq_fail_context(s, "mapping %llu bytes of GPU %d's memory at 0x%llx for GPU %d",
                              (unsigned long long)memory->mapped_size, owner->index,
                              (unsigned long long)memory->gpu_address, dev->index);
  }
  dev->imports = im;
  return NVHCQ_SUCCESS;
}

/* Unmaps and forgets dev's imports that match (src, owner); NULL owner: all of them. */
static void drop_imports(nvhcq_device *dev, const nvhcq_buffer *src, const nvhcq_device *owner,
                         int any_src) {
  for (nvhcq_import **at = &dev->imports; *at;) {
    nvhcq_import *im = *at;
    if ((!owner || im->owner == owner) && (any_src || im->src == src)) {
      nvhcq_uvm_free(&dev->rm, im->base, im->length);
      *at = im->next;
      free(im);
    } else {
      at = &im->next;
    }
  }
}

static int has_import(const nvhcq_device *dev, const nvhcq_device *owner, const nvhcq_buffer *src) {
  for (const nvhcq_import *im = dev->imports; im; im = im->next)
    if (im->owner == owner && im->src == src) return 1;
  return 0;
}

nvhcq_status nvhcq_peer_import_signals(nvhcq_device *dev, nvhcq_device *owner) {
  if (dev == owner) return NVHCQ_SUCCESS;
  /* The mapping goes into this device's UVM space; the owner's memory object needs no UVM of the
   * owner's (and the owner may be another thread's now: it is not moved from here). */
  if (dev->rm_only && dev->uvm_mode != NVHCQ_OPEN_UVM_OFF) NVHCQ_TRY(nvhcq_uvm_attach_now(dev));
  pthread_mutex_lock(&peer_lock);
  nvhcq_status s = NVHCQ_SUCCESS;
  if (!has_import(dev, owner, NULL)) {
    if (dev->rm_only || owner->uvm_mode == NVHCQ_OPEN_UVM_OFF)
      s = nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                     "a queue on GPU %d uses a signal of GPU %d: signals of another GPU need UVM; "
                     "unset NVHCQ_UVM=off",
                     dev->index, owner->index);
    if (!s) s = register_gpu(dev, owner);
    if (!s) s = import(dev, owner, NULL, owner->signal_page);
  }
  if (!s) s = add_to(owner->accessors, dev, owner);
  pthread_mutex_unlock(&peer_lock);
  return s;
}

nvhcq_status nvhcq_peer_buffer_created(nvhcq_buffer *b) {
  nvhcq_device *owner = b->dev;
  pthread_mutex_lock(&peer_lock);
  b->user = 1;
  b->next = owner->buffers;
  if (b->next) b->next->prev = b;
  owner->buffers = b;
  nvhcq_status s = NVHCQ_SUCCESS;
  for (int i = 0; i < NVHCQ_MAX_PEERS && !s; i++) {
    nvhcq_device *d = owner->accessors[i];
    if (d && slot_of(d->peers, owner) >= 0) s = import(d, owner, b, b);
  }
  pthread_mutex_unlock(&peer_lock);
  return s;
}

void nvhcq_peer_buffer_released(nvhcq_buffer *b) {
  if (!b->user) return;
  nvhcq_device *owner = b->dev;
  pthread_mutex_lock(&peer_lock);
  for (int i = 0; i < NVHCQ_MAX_PEERS; i++)
    if (owner->accessors[i]) drop_imports(owner->accessors[i], b, owner, 0);
  if (b->prev) b->prev->next = b->next;
  if (b->next) b->next->prev = b->prev;
  if (owner->buffers == b) owner->buffers = b->next;
  b->prev = b->next = NULL;
  b->user = 0;
  pthread_mutex_unlock(&peer_lock);
}

void nvhcq_peer_device_closing(nvhcq_device *dev) {
  pthread_mutex_lock(&peer_lock);
  for (int i = 0; i < NVHCQ_MAX_PEERS; i++) {
    nvhcq_device *d = dev->accessors[i];
    if (d) {
      drop_imports(d, NULL, dev, 1);
      if (slot_of(d->peers, dev) >= 0) disable_peer(d, dev);
      remove_from(d->peers, dev);
      forget_gpu(d, dev);
    }
    if (dev->peers[i]) remove_from(dev->peers[i]->accessors, dev);
  }
  /* Devices whose signals dev mapped list dev among their accessors without a peer slot. */
  for (nvhcq_import *im = dev->imports; im; im = im->next) remove_from(im->owner->accessors, dev);
  drop_imports(dev, NULL, NULL, 1);
  unregister_gpus(dev);
  memset(dev->peers, 0, sizeof dev->peers);
  memset(dev->accessors, 0, sizeof dev->accessors);
  pthread_mutex_unlock(&peer_lock);
}

/* ---- the API ---- */

static nvhcq_status check_pair(const nvhcq_device *a, const nvhcq_device *b, const char *what) {
  NVHCQ_TRY(nvhcq_device_check(a));
  NVHCQ_TRY(nvhcq_device_check(b));
  if (a == b)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s: both devices are GPU %d; peer access is between two devices", what,
                      a->index);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_device_can_access_peer(nvhcq_device *a, nvhcq_device *b, int *can) {
  if (!can)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_device_can_access_peer: can is NULL");
  *can = 0;
  NVHCQ_TRY(check_pair(a, b, "nvhcq_device_can_access_peer"));
  if (!memcmp(a->info.uuid, b->info.uuid, 16)) return NVHCQ_SUCCESS; /* one GPU opened twice */
  uint32_t caps = 0;
  NVHCQ_TRY(p2p_caps(a, b, &caps));
  *can = (caps & NV0000_P2P_CAP_READS) && (caps & NV0000_P2P_CAP_WRITES);
  return NVHCQ_SUCCESS;
}

/* Maps owner's user buffers into dev's space; the first failure undoes them all. */
static nvhcq_status map_all(nvhcq_device *dev, nvhcq_device *owner) {
  for (nvhcq_buffer *b = owner->buffers; b; b = b->next) {
    nvhcq_status s = import(dev, owner, b, b);
    if (s) {
      drop_imports(dev, NULL, owner, 1);
      return s;
    }
  }
  return NVHCQ_SUCCESS;
}

static nvhcq_status enable_locked(nvhcq_device *a, nvhcq_device *b) {
  if (slot_of(a->peers, b) >= 0) return NVHCQ_SUCCESS;
  NVHCQ_TRY(register_gpu(a, b));
  UVM_ENABLE_PEER_ACCESS_PARAMS p;
  memset(&p, 0, sizeof p);
  memcpy(p.gpuUuidA.uuid, a->info.uuid, 16);
  memcpy(p.gpuUuidB.uuid, b->info.uuid, 16);
  NVHCQ_TRY(nvhcq_uvm_call(&a->rm, UVM_ENABLE_PEER_ACCESS, "UVM_ENABLE_PEER_ACCESS", &p,
                           offsetof(UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus)));
  NVHCQ_TRY(add_to(a->peers, b, a));
  nvhcq_status s = add_to(b->accessors, a, b);
  if (!s) s = map_all(a, b);
  if (s) remove_from(a->peers, b);
  return s;
}

nvhcq_status nvhcq_device_enable_peer(nvhcq_device *a, nvhcq_device *b) {
  NVHCQ_TRY(check_pair(a, b, "nvhcq_device_enable_peer"));
  for (int i = 0; i < 2; i++) {
    nvhcq_device *d = i ? b : a;
    if (d->uvm_mode != NVHCQ_OPEN_UVM_OFF) NVHCQ_TRY(nvhcq_uvm_attach_now(d));
  }
  if (a->rm_only || b->rm_only)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "nvhcq_device_enable_peer(GPU %d, GPU %d): peer mappings go through UVM; "
                      "unset NVHCQ_UVM=off",
                      a->index, b->index);
  int can = 0;
  NVHCQ_TRY(nvhcq_device_can_access_peer(a, b, &can));
  if (!can)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "GPU %d cannot reach GPU %d's memory (the driver reports no P2P path "
                      "between %s and %s); copies between them stage through host memory",
                      a->index, b->index, a->info.uuid_string, b->info.uuid_string);
  pthread_mutex_lock(&peer_lock);
  nvhcq_status s = enable_locked(a, b);
  pthread_mutex_unlock(&peer_lock);
  return s ? nvhcq_fail_context(s, "enabling GPU %d's access to GPU %d", a->index, b->index) : s;
}
