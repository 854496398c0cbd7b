/* The mock's RM objects: allocation with the real driver's parameter checks, freeing of whole
 * subtrees, memory with host backing stores, CPU mappings and the card list. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mock/internal.h"

mock_obj *mock_find(uint32_t client, uint32_t handle) {
  for (uint32_t i = 0; i < nvhcq_mock.nobjs; i++) {
    mock_obj *o = nvhcq_mock.objs[i];
    if (o->handle == handle && o->client == client) return o;
  }
  return NULL;
}

static mock_obj *add_obj(uint32_t client, uint32_t handle, uint32_t parent, uint32_t hclass) {
  if (nvhcq_mock.nobjs == nvhcq_mock.cap_objs) {
    uint32_t cap = nvhcq_mock.cap_objs ? nvhcq_mock.cap_objs * 2 : 64;
    mock_obj **grown = realloc(nvhcq_mock.objs, cap * sizeof *grown);
    if (!grown) return NULL;
    nvhcq_mock.objs = grown;
    nvhcq_mock.cap_objs = cap;
  }
  mock_obj *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  const mock_obj *up = parent ? mock_find(client, parent) : NULL;
  *o = (mock_obj){.client = client,
                  .handle = handle,
                  .parent = parent,
                  .hclass = hclass,
                  .memfd = -1,
                  .gpu = up ? up->gpu : 0};
  nvhcq_mock.objs[nvhcq_mock.nobjs++] = o;
  return o;
}

/* The mock's own mapping of the object's memfd (o->size bytes). */
static uint32_t map_backing(mock_obj *o) {
  void *at = o->memfd < 0 ? MAP_FAILED
                          : mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, o->memfd, 0);
  if (at == MAP_FAILED) return MOCK_ERR_NO_MEMORY;
  o->backing = at;
  return MOCK_NV_OK;
}

/* A memfd of `size` bytes and the mock's own mapping of it. */
static uint32_t give_backing(mock_obj *o, uint64_t size) {
  o->memfd = memfd_create("nvhcq-mock", MFD_CLOEXEC);
  if (o->memfd < 0) return MOCK_ERR_NO_MEMORY;
  o->size = size;
  return ftruncate(o->memfd, (off_t)size) == 0 ? map_backing(o) : MOCK_ERR_NO_MEMORY;
}

/* Channels whose doorbell word lies in a usermode object that goes forget it. */
static void drop_doorbells(const mock_obj *usermode) {
  for (uint32_t i = 0; i < nvhcq_mock.nobjs; i++)
    if (nvhcq_mock.objs[i]->ch)
      mock_channel_drop_doorbell(nvhcq_mock.objs[i]->ch, usermode->backing, usermode->size);
}

static void release_obj(mock_obj *o) {
  if (o->ch) mock_channel_destroy(o->ch);
  if (o->hclass == mock_gpu->usermode && o->backing) drop_doorbells(o);
  if (o->mapped) mock_range_unmap(o->space, o->va); /* RM unmaps a virtual object that goes */
  if (o->memfd >= 0 || o->pinned) mock_ranges_drop(o);
  for (int i = 0; i < MOCK_MAX_FDS; i++)
    if (nvhcq_mock.fds[i].map == o) nvhcq_mock.fds[i].map = NULL;
  if (o->backing && !o->pinned) munmap(o->backing, o->size);
  if (o->memfd >= 0) close(o->memfd);
  if (o->vidmem) mock_vidmem_add(o->gpu, -(int64_t)o->size);
  free(o);
}

static int in_subtree(const mock_obj *o, uint32_t root) {
  for (int depth = 0; o && depth < 16; depth++) {
    if (o->handle == root) return 1;
    o = o->parent ? mock_find(o->client, o->parent) : NULL;
  }
  return 0;
}

/* Every channel of the subtree stops before any memory it reads goes. */
static void free_subtree(uint32_t client, uint32_t root) {
  uint32_t n = nvhcq_mock.nobjs, kept = 0, gone = 0;
  uint8_t *doomed = calloc(n + 1, 1);
  mock_obj **released = malloc((n + 1) * sizeof *released);
  if (!doomed || !released) abort(); /* a mock without memory cannot pretend anything */
  for (uint32_t i = 0; i < n; i++) {
    doomed[i] = nvhcq_mock.objs[i]->client == client && in_subtree(nvhcq_mock.objs[i], root);
    if (doomed[i] && nvhcq_mock.objs[i]->ch) mock_channel_stop(nvhcq_mock.objs[i]->ch);
  }
  for (uint32_t i = 0; i < n; i++) {
    if (doomed[i])
      released[gone++] = nvhcq_mock.objs[i];
    else
      nvhcq_mock.objs[kept++] = nvhcq_mock.objs[i];
  }
  nvhcq_mock.nobjs = kept;
  for (uint32_t i = 0; i < gone; i++) release_obj(released[i]);
  free(doomed);
  free(released);
}

static uint32_t rm_free(NVOS00_PARAMETERS *p) {
  if (!mock_find(p->hRoot, p->hRoot)) return MOCK_ERR_INVALID_CLIENT;
  mock_obj *o = mock_find(p->hRoot, p->hObjectOld);
  if (!o) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  free_subtree(p->hRoot, o->handle);
  return MOCK_NV_OK;
}

/* ---- export to and import from control fds ---- */

static mock_fd *ctl_fd(int fd) {
  if (fd < MOCK_FD_BASE || fd >= MOCK_FD_BASE + MOCK_MAX_FDS) return NULL;
  mock_fd *f = &nvhcq_mock.fds[fd - MOCK_FD_BASE];
  return f->kind == FD_CTL ? f : NULL;
}

/* As RM: memory objects only, one export per fd (the fd keeps the memory alive). */
uint32_t mock_export_object(uint32_t client, NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS *p) {
  mock_fd *f = ctl_fd(p->fd);
  if (p->object.type != NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TYPE_RM || p->flags || !f ||
      f->export_memfd >= 0 || f->map)
    return MOCK_ERR_INVALID_PARAMETER;
  const mock_obj *o = mock_find(client, p->object.hObject);
  if (!o) return MOCK_ERR_OBJECT_NOT_FOUND;
  if (o->memfd < 0 || (o->hclass != NV01_MEMORY_LOCAL_USER && o->hclass != NV01_MEMORY_SYSTEM))
    return MOCK_ERR_NOT_SUPPORTED;
  f->export_memfd = fcntl(o->memfd, F_DUPFD_CLOEXEC, 0);
  if (f->export_memfd < 0) return MOCK_ERR_NO_MEMORY;
  f->export_size = o->size, f->export_class = o->hclass, f->export_gpu = o->gpu;
  return MOCK_NV_OK;
}

/* A new memory object `h` of `client` under `parent` over the same memory file as `memfd` (a
 * duplicate: the device memory it counts is the original's). */
static uint32_t add_duplicate(uint32_t client, uint32_t h, uint32_t parent, uint32_t hclass,
                              uint64_t size, int memfd) {
  if (mock_find(client, h)) return MOCK_ERR_INSERT_DUPLICATE_NAME;
  int dup = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
  mock_obj *o = dup < 0 ? NULL : add_obj(client, h, parent, hclass);
  if (!o) {
    if (dup >= 0) close(dup);
    return MOCK_ERR_NO_MEMORY;
  }
  o->size = size, o->memfd = dup;
  if (map_backing(o)) {
    nvhcq_mock.nobjs--;
    release_obj(o);
    return MOCK_ERR_NO_MEMORY;
  }
  return MOCK_NV_OK;
}

uint32_t mock_import_object(uint32_t client, NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS *p) {
  const mock_fd *f = ctl_fd(p->fd);
  if (p->object.type != NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TYPE_RM || !f || f->export_memfd < 0)
    return MOCK_ERR_INVALID_PARAMETER;
  const mock_obj *parent = mock_find(client, p->object.hParent);
  if (!parent) return MOCK_ERR_INVALID_OBJECT_PARENT;
  if (parent->gpu != f->export_gpu) return MOCK_ERR_INVALID_DEVICE;
  uint32_t h = p->object.hObject ? p->object.hObject : nvhcq_mock.next_handle++;
  uint32_t r =
      add_duplicate(client, h, parent->handle, f->export_class, f->export_size, f->export_memfd);
  if (r == MOCK_NV_OK) p->object.hObject = h;
  return r;
}

/* As RM's default policy within one process: any memory object may be duplicated, shared or
 * not (the mock has one process). Sharing only checks the object. */
static uint32_t rm_share(const NVOS57_PARAMETERS *p) {
  const mock_obj *o = mock_find(p->hClient, p->hObject);
  return o ? MOCK_NV_OK : MOCK_ERR_OBJECT_NOT_FOUND;
}

static uint32_t rm_dup(NVOS55_PARAMETERS *p) {
  const mock_obj *src = mock_find(p->hClientSrc, p->hObjectSrc);
  const mock_obj *parent = mock_find(p->hClient, p->hParent);
  if (!src) return MOCK_ERR_OBJECT_NOT_FOUND;
  if (!parent) return MOCK_ERR_INVALID_OBJECT_PARENT;
  if (src->memfd < 0) return MOCK_ERR_NOT_SUPPORTED; /* the mock duplicates memory only */
  if (parent->gpu != src->gpu) return MOCK_ERR_INVALID_DEVICE;
  uint32_t h = p->hObject ? p->hObject : nvhcq_mock.next_handle++;
  uint32_t r = add_duplicate(p->hClient, h, parent->handle, src->hclass, src->size, src->memfd);
  if (r == MOCK_NV_OK) p->hObject = h;
  return r;
}

uint32_t mock_surface_info(const mock_obj *memory, NV0041_CTRL_GET_SURFACE_INFO_PARAMS *p) {
  if (memory->memfd < 0) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  NV0041_CTRL_SURFACE_INFO *info = (NV0041_CTRL_SURFACE_INFO *)(uintptr_t)p->list;
  if (!info || !p->count) return MOCK_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < p->count; i++) {
    if (info[i].index == NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO)
      info[i].data = (uint32_t)memory->size;
    else if (info[i].index == NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI)
      info[i].data = (uint32_t)(memory->size >> 32);
    else
      return MOCK_ERR_INVALID_ARGUMENT;
  }
  return MOCK_NV_OK;
}

/* ---- allocation ---- */

static int is_engine_class(uint32_t c) {
  return c == mock_gpu->compute || c == mock_gpu->copy;
}

/* The size the real driver expects for a class's parameters; -1: any (none needed). */
static long params_size_for(uint32_t c) {
  switch (c) {
  case NV01_DEVICE_0:
    return sizeof(NV0080_ALLOC_PARAMETERS);
  case NV20_SUBDEVICE_0:
    return sizeof(NV2080_ALLOC_PARAMETERS);
  case NV01_MEMORY_SYSTEM:
  case NV01_MEMORY_LOCAL_USER:
  case NV50_MEMORY_VIRTUAL:
    return sizeof(NV_MEMORY_ALLOCATION_PARAMS);
  case FERMI_VASPACE_A:
    return sizeof(NV_VASPACE_ALLOCATION_PARAMETERS);
  case KEPLER_CHANNEL_GROUP_A:
    return sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS);
  case FERMI_CONTEXT_SHARE_A:
    return sizeof(NV_CTXSHARE_ALLOCATION_PARAMETERS);
  case GT200_DEBUGGER:
    return sizeof(NV83DE_ALLOC_PARAMETERS);
  default:
    return mock_is_gpfifo_class(c) ? (long)sizeof(NV_CHANNEL_ALLOC_PARAMS) : -1;
  }
}

static int known_class(uint32_t c) {
  return params_size_for(c) >= 0 || c == mock_gpu->usermode || is_engine_class(c);
}

static uint32_t alloc_memory(mock_obj *o, NV_MEMORY_ALLOCATION_PARAMS *m) {
  if (m->size == 0) return MOCK_ERR_INVALID_ARGUMENT;
  o->vidmem = o->hclass == NV01_MEMORY_LOCAL_USER;
  if (o->vidmem && mock_vidmem_used(o->gpu) + m->size > (MOCK_FB_KIB << 10))
    return MOCK_ERR_NO_MEMORY;
  uint32_t s = give_backing(o, m->size);
  if (s) return s;
  if (o->vidmem) mock_vidmem_add(o->gpu, (int64_t)m->size);
  m->limit = m->size - 1;
  return MOCK_NV_OK;
}

/* A range of an address space RM manages (one UVM owns has no page tables RM could write). */
static uint32_t alloc_virtual(mock_obj *o, NV_MEMORY_ALLOCATION_PARAMS *m) {
  mock_obj *vas = mock_find(o->client, m->hVASpace);
  if (!vas || vas->hclass != FERMI_VASPACE_A) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  if (vas->flags & 0x8u) return MOCK_ERR_NOT_SUPPORTED; /* externally owned */
  if ((m->flags & NVOS32_ALLOC_FLAGS_VIRTUAL_FIXED) != NVOS32_ALLOC_FLAGS_VIRTUAL_FIXED ||
      !m->size || ((m->offset | m->size) & 0xfff) || !m->alignment ||
      (m->offset & (m->alignment - 1)))
    return MOCK_ERR_INVALID_ARGUMENT;
  o->va = m->offset;
  o->size = m->size;
  o->space = vas->space; /* what is mapped into it is mapped there alone */
  m->limit = m->size - 1;
  return MOCK_NV_OK;
}

/* A channel group or context share names its address space (0: none, the device's default). */
static uint32_t name_vaspace(mock_obj *o, uint32_t vaspace) {
  const mock_obj *vas = vaspace ? mock_find(o->client, vaspace) : NULL;
  if (vaspace && (!vas || vas->hclass != FERMI_VASPACE_A)) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  o->vaspace = vaspace;
  return MOCK_NV_OK;
}

/* The RM address space a new channel works in: its context share's (which must be of its group),
 * else its group's; *out NULL where neither names one. */
static uint32_t channel_vaspace(const mock_obj *channel, const mock_obj *group, uint32_t ctxshare,
                                const mock_obj **out) {
  const mock_obj *share = ctxshare ? mock_find(channel->client, ctxshare) : NULL;
  if (ctxshare &&
      (!share || share->hclass != FERMI_CONTEXT_SHARE_A || share->parent != group->handle))
    return MOCK_ERR_INVALID_OBJECT_HANDLE;
  uint32_t h = share && share->vaspace ? share->vaspace : group->vaspace;
  *out = h ? mock_find(channel->client, h) : NULL;
  return h && !*out ? MOCK_ERR_INVALID_OBJECT_HANDLE : MOCK_NV_OK;
}

static uint32_t alloc_channel(mock_obj *o, const mock_obj *group,
                              const NV_CHANNEL_ALLOC_PARAMS *p) {
  if (group->hclass != KEPLER_CHANNEL_GROUP_A) return MOCK_ERR_INVALID_OBJECT_PARENT;
  const mock_obj *vas = NULL;
  uint32_t s = channel_vaspace(o, group, p->hContextShare, &vas);
  if (s) return s;
  int uvm = 0, space = mock_space_of_vaspace(o->client, vas, &uvm);
  return mock_channel_create(o, p, nvhcq_mock.next_token++, space, uvm);
}

/* What an object of its class needs at allocation. */
static uint32_t init_obj(mock_obj *o, void *params) {
  mock_obj *parent = mock_find(o->client, o->parent);
  uint32_t c = o->hclass;
  if (c == NV01_DEVICE_0) {
    /* The device instance GET_ID_INFO_V2 gave: which probed GPU the device is. */
    uint32_t id = ((const NV0080_ALLOC_PARAMETERS *)params)->deviceId;
    if (id >= nvhcq_mock.gpus) return MOCK_ERR_INVALID_ARGUMENT;
    o->gpu = id;
    return MOCK_NV_OK;
  }
  if (c == NV01_MEMORY_SYSTEM || c == NV01_MEMORY_LOCAL_USER) return alloc_memory(o, params);
  if (c == NV50_MEMORY_VIRTUAL) return alloc_virtual(o, params);
  if (c == FERMI_VASPACE_A) {
    o->flags = ((const NV_VASPACE_ALLOCATION_PARAMETERS *)params)->flags;
    o->space = mock_space_new();
    return MOCK_NV_OK;
  }
  if (c == KEPLER_CHANNEL_GROUP_A)
    return name_vaspace(o, ((const NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS *)params)->hVASpace);
  if (c == mock_gpu->usermode) return give_backing(o, 0x10000);
  if (c == GT200_DEBUGGER) {
    o->target = ((const NV83DE_ALLOC_PARAMETERS *)params)->hClass3dObject;
    return MOCK_NV_OK;
  }
  if (c == FERMI_CONTEXT_SHARE_A)
    return parent->hclass == KEPLER_CHANNEL_GROUP_A
               ? name_vaspace(o, ((const NV_CTXSHARE_ALLOCATION_PARAMETERS *)params)->hVASpace)
               : MOCK_ERR_INVALID_OBJECT_PARENT;
  if (mock_is_gpfifo_class(c)) return alloc_channel(o, parent, params);
  if (is_engine_class(c)) {
    if (!parent->ch) return MOCK_ERR_INVALID_OBJECT_PARENT;
    mock_channel_add_engine(parent->ch, c);
  }
  return MOCK_NV_OK;
}

static uint32_t rm_alloc(NVOS21_PARAMETERS *p) {
  if (p->hClass == NV01_ROOT_CLIENT) {
    uint32_t h = p->hObjectNew ? p->hObjectNew : 0xc1d00000u + (nvhcq_mock.next_handle & 0xffff);
    if (mock_find(h, h)) return MOCK_ERR_INSERT_DUPLICATE_NAME;
    nvhcq_mock.next_handle++;
    if (!add_obj(h, h, 0, NV01_ROOT_CLIENT)) return MOCK_ERR_NO_MEMORY;
    p->hObjectNew = h;
    return MOCK_NV_OK;
  }
  mock_obj *root = mock_find(p->hRoot, p->hRoot);
  if (!root || root->hclass != NV01_ROOT_CLIENT) return MOCK_ERR_INVALID_CLIENT;
  if (!mock_find(p->hRoot, p->hObjectParent)) return MOCK_ERR_INVALID_OBJECT_PARENT;
  if (!known_class(p->hClass)) return MOCK_ERR_INVALID_CLASS;
  long want = params_size_for(p->hClass);
  /* The VA space's parameters are 48 bytes on 570, 56 from 580. */
  int size_ok = p->paramsSize == want || (p->hClass == FERMI_VASPACE_A && p->paramsSize == 48);
  if (want >= 0 && (!size_ok || !p->pAllocParms)) return MOCK_ERR_INVALID_PARAM_STRUCT;
  uint32_t h = p->hObjectNew ? p->hObjectNew : nvhcq_mock.next_handle++;
  if (mock_find(p->hRoot, h)) return MOCK_ERR_INSERT_DUPLICATE_NAME;
  mock_obj *o = add_obj(p->hRoot, h, p->hObjectParent, p->hClass);
  if (!o) return MOCK_ERR_NO_MEMORY;
  uint32_t s = init_obj(o, (void *)(uintptr_t)p->pAllocParms);
  if (s) {
    nvhcq_mock.nobjs--;
    release_obj(o);
    return s;
  }
  p->hObjectNew = h;
  return MOCK_NV_OK;
}

/* Pinned host memory: the user's pages are the backing store. */
static uint32_t rm_alloc_os_memory(NVOS02_PARAMETERS *p) {
  if (!mock_find(p->hRoot, p->hRoot)) return MOCK_ERR_INVALID_CLIENT;
  if (!mock_find(p->hRoot, p->hObjectParent)) return MOCK_ERR_INVALID_OBJECT_PARENT;
  if (p->hClass != NV01_MEMORY_SYSTEM_OS_DESCRIPTOR) return MOCK_ERR_INVALID_CLASS;
  if (!p->pMemory || (p->pMemory & 0xfff) || p->limit == 0) return MOCK_ERR_INVALID_ARGUMENT;
  if (!p->hObjectNew || mock_find(p->hRoot, p->hObjectNew)) return MOCK_ERR_INSERT_DUPLICATE_NAME;
  mock_obj *o = add_obj(p->hRoot, p->hObjectNew, p->hObjectParent, p->hClass);
  if (!o) return MOCK_ERR_NO_MEMORY;
  o->backing = (uint8_t *)(uintptr_t)p->pMemory;
  o->size = p->limit + 1;
  o->pinned = 1;
  return MOCK_NV_OK;
}

static uint32_t rm_map_memory(NVOS33_PARAMETERS *p, int fd) {
  if (!mock_find(p->hClient, p->hClient)) return MOCK_ERR_INVALID_CLIENT;
  mock_obj *o = mock_find(p->hClient, p->hMemory);
  if (!o || o->memfd < 0) return MOCK_ERR_INVALID_OBJECT_HANDLE;
  if (p->offset + p->length > o->size || p->length == 0) return MOCK_ERR_INVALID_LIMIT;
  int kind = mock_fd_kind(fd);
  if (kind != FD_CTL && kind != FD_GPU) return MOCK_ERR_INVALID_ARGUMENT;
  nvhcq_mock.fds[fd - MOCK_FD_BASE].map = o;
  p->pLinearAddress = 0;
  return MOCK_NV_OK;
}

/* NV_ESC_RM_MAP_MEMORY_DMA: `length` bytes of a memory object from `offset` on into a virtual
 * object's range, from its start. */
static uint32_t rm_map_dma(NVOS46_PARAMETERS *p) {
  if (!mock_find(p->hClient, p->hClient)) return MOCK_ERR_INVALID_CLIENT;
  mock_obj *v = mock_find(p->hClient, p->hDma), *m = mock_find(p->hClient, p->hMemory);
  if (!v || v->hclass != NV50_MEMORY_VIRTUAL || !m || !m->backing)
    return MOCK_ERR_INVALID_OBJECT_HANDLE;
  if (v->mapped || (p->offset & 0xfff) || !p->length || p->length > v->size ||
      p->offset + p->length > ((m->size + 0xfff) & ~0xfffull))
    return MOCK_ERR_INVALID_LIMIT;
  uint32_t s = mock_range_map(v->space, v->va, p->length, m, p->offset);
  if (s) return s;
  v->mapped = 1;
  p->dmaOffset = v->va;
  return MOCK_NV_OK;
}

static uint32_t rm_unmap_dma(const NVOS47_PARAMETERS *p) {
  if (!mock_find(p->hClient, p->hClient)) return MOCK_ERR_INVALID_CLIENT;
  mock_obj *v = mock_find(p->hClient, p->hDma);
  if (!v || v->hclass != NV50_MEMORY_VIRTUAL || !v->mapped || p->dmaOffset != v->va)
    return MOCK_ERR_INVALID_OBJECT_HANDLE;
  v->mapped = 0;
  return mock_range_unmap(v->space, v->va);
}

/* GPU i sits on PCI bus 0x18 + i as /dev/nvidia<i>. */
static void card_info(nv_ioctl_card_info_t *cards) {
  memset(cards, 0, sizeof *cards * NV_MAX_CARDS);
  for (uint32_t i = 0; i < nvhcq_mock.gpus; i++) {
    cards[i] = (nv_ioctl_card_info_t){.valid = 1,
                                      .bus = (uint8_t)(0x18 + i),
                                      .vendor_id = 0x10de,
                                      .device_id = mock_gpu->device_id,
                                      .gpu_id = MOCK_GPU_ID_OF(i),
                                      .fb_size = MOCK_FB_KIB << 10,
                                      .minor_number = i};
    memcpy(cards[i].dev_name, "mock", 5);
  }
}

#define WANT(type)                                                                                 \
  do {                                                                                             \
    if (size != sizeof(type)) return -EINVAL;                                                      \
  } while (0)

static int rm_escape(unsigned nr, void *arg, unsigned size) {
  switch (nr) {
  case NV_ESC_CARD_INFO:
    WANT(nv_ioctl_card_info_t[NV_MAX_CARDS]);
    return card_info(arg), 0;
  case NV_ESC_REGISTER_FD:
    WANT(nv_ioctl_register_fd_t);
    return mock_fd_kind(((nv_ioctl_register_fd_t *)arg)->ctl_fd) == FD_CTL ? 0 : -EINVAL;
  case NV_ESC_RM_ALLOC:
    WANT(NVOS21_PARAMETERS);
    return ((NVOS21_PARAMETERS *)arg)->status = rm_alloc(arg), 0;
  case NV_ESC_RM_FREE:
    WANT(NVOS00_PARAMETERS);
    return ((NVOS00_PARAMETERS *)arg)->status = rm_free(arg), 0;
  case NV_ESC_RM_SHARE:
    WANT(NVOS57_PARAMETERS);
    return ((NVOS57_PARAMETERS *)arg)->status = rm_share(arg), 0;
  case NV_ESC_RM_DUP_OBJECT:
    WANT(NVOS55_PARAMETERS);
    return ((NVOS55_PARAMETERS *)arg)->status = rm_dup(arg), 0;
  case NV_ESC_RM_CONTROL: {
    WANT(NVOS54_PARAMETERS);
    NVOS54_PARAMETERS *p = arg;
    return p->status = mock_control(p, (void *)(uintptr_t)p->params), 0;
  }
  case NV_ESC_RM_ALLOC_MEMORY: {
    WANT(nv_ioctl_nvos02_parameters_with_fd);
    NVOS02_PARAMETERS *p = &((nv_ioctl_nvos02_parameters_with_fd *)arg)->params;
    return p->status = rm_alloc_os_memory(p), 0;
  }
  case NV_ESC_RM_MAP_MEMORY: {
    WANT(nv_ioctl_nvos33_parameters_with_fd);
    nv_ioctl_nvos33_parameters_with_fd *p = arg;
    return p->params.status = rm_map_memory(&p->params, p->fd), 0;
  }
  case NV_ESC_RM_MAP_MEMORY_DMA:
    WANT(NVOS46_PARAMETERS);
    return ((NVOS46_PARAMETERS *)arg)->status = rm_map_dma(arg), 0;
  case NV_ESC_RM_UNMAP_MEMORY_DMA:
    WANT(NVOS47_PARAMETERS);
    return ((NVOS47_PARAMETERS *)arg)->status = rm_unmap_dma(arg), 0;
  case NV_ESC_CHECK_VERSION_STR:
    return 0;
  default:
    return -EINVAL;
  }
}

static const char *escape_name(unsigned nr) {
  switch (nr) {
  case NV_ESC_CARD_INFO:
    return "CARD_INFO";
  case NV_ESC_REGISTER_FD:
    return "REGISTER_FD";
  case NV_ESC_RM_ALLOC:
    return "RM_ALLOC";
  case NV_ESC_RM_FREE:
    return "RM_FREE";
  case NV_ESC_RM_SHARE:
    return "RM_SHARE";
  case NV_ESC_RM_DUP_OBJECT:
    return "RM_DUP_OBJECT";
  case NV_ESC_RM_CONTROL:
    return "RM_CONTROL";
  case NV_ESC_RM_ALLOC_MEMORY:
    return "RM_ALLOC_MEMORY";
  case NV_ESC_RM_MAP_MEMORY:
    return "RM_MAP_MEMORY";
  case NV_ESC_CHECK_VERSION_STR:
    return "CHECK_VERSION_STR";
  default:
    return "RM_UNKNOWN";
  }
}

/* An injected failure: NV_ERR_NO_MEMORY in the call's status, or ENOMEM where it has none. */
static int fail_escape(unsigned nr, void *arg, unsigned size) {
  uint32_t *status = NULL;
  if (nr == NV_ESC_RM_ALLOC && size == sizeof(NVOS21_PARAMETERS))
    status = &((NVOS21_PARAMETERS *)arg)->status;
  if (nr == NV_ESC_RM_FREE && size == sizeof(NVOS00_PARAMETERS))
    status = &((NVOS00_PARAMETERS *)arg)->status;
  if (nr == NV_ESC_RM_CONTROL && size == sizeof(NVOS54_PARAMETERS))
    status = &((NVOS54_PARAMETERS *)arg)->status;
  if (nr == NV_ESC_RM_ALLOC_MEMORY && size == sizeof(nv_ioctl_nvos02_parameters_with_fd))
    status = &((nv_ioctl_nvos02_parameters_with_fd *)arg)->params.status;
  if (nr == NV_ESC_RM_MAP_MEMORY && size == sizeof(nv_ioctl_nvos33_parameters_with_fd))
    status = &((nv_ioctl_nvos33_parameters_with_fd *)arg)->params.status;
  if (!status) return -ENOMEM;
  *status = MOCK_ERR_NO_MEMORY;
  return 0;
}

int mock_rm_ioctl(unsigned nr, void *arg, unsigned size) {
  if (mock_fail_now(escape_name(nr))) return fail_escape(nr, arg, size);
  pthread_mutex_lock(&nvhcq_mock.lock);
  int r = rm_escape(nr, arg, size);
  pthread_mutex_unlock(&nvhcq_mock.lock);
  return r;
}
