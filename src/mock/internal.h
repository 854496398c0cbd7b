/* What the mock driver's parts share: its fds, RM objects, UVM ranges and channels. */
#ifndef NVHCQ_MOCK_INTERNAL_H
#define NVHCQ_MOCK_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "abi/uvm.h"
#include "mock/mock.h"

#define MOCK_FD_BASE     0x40000
#define MOCK_MAX_FDS     4096
#define MOCK_SUBCHANNELS 8
#define MOCK_MAX_GPUS    8

enum { FD_FREE, FD_CTL, FD_GPU, FD_UVM, FD_TOOLS };

/* NV_STATUS values the mock returns. */
enum {
  MOCK_NV_OK = 0,
  MOCK_ERR_GPU_UUID_NOT_FOUND = 0x12,
  MOCK_ERR_INSERT_DUPLICATE_NAME = 0x19,
  MOCK_ERR_INVALID_ADDRESS = 0x1e,
  MOCK_ERR_INVALID_ARGUMENT = 0x1f,
  MOCK_ERR_INVALID_CLASS = 0x22,
  MOCK_ERR_INVALID_CLIENT = 0x23,
  MOCK_ERR_INVALID_DEVICE = 0x26,
  MOCK_ERR_INVALID_LIMIT = 0x2e,
  MOCK_ERR_INVALID_OBJECT_HANDLE = 0x33,
  MOCK_ERR_INVALID_OBJECT_PARENT = 0x36,
  MOCK_ERR_INVALID_PARAM_STRUCT = 0x3a,
  MOCK_ERR_INVALID_PARAMETER = 0x3b,
  MOCK_ERR_NO_MEMORY = 0x51,
  MOCK_ERR_NOT_SUPPORTED = 0x56,
  MOCK_ERR_OBJECT_NOT_FOUND = 0x57,
};

/* Xids the command processor raises. */
enum { MOCK_XID_GR = 13, MOCK_XID_MMU = 31, MOCK_XID_PBDMA = 32, MOCK_XID_RESET = 43 };

typedef struct mock_channel mock_channel;

typedef struct mock_obj {
  uint32_t client, handle, parent, hclass; /* handles are per client */
  int memfd;        /* memory and usermode objects: the backing store, else -1 */
  uint8_t *backing; /* the mock's own mapping of it (or the pinned user memory) */
  uint64_t size;
  int vidmem, pinned;
  mock_channel *ch; /* GPFIFO channels */
  uint64_t va;      /* virtual memory objects: the GPU address their range starts at */
  int mapped;       /* and whether memory is mapped into it */
  int space;        /* address spaces: theirs (an id); virtual memory objects: their space's */
  uint32_t flags;   /* address spaces: their allocation flags */
  uint32_t vaspace; /* channel groups and context shares: the address space they name (or 0) */
  uint32_t gpu;     /* the GPU (probe index) of the device object it is under */
  uint32_t target;  /* debuggers: the engine object (in the same client) whose context they read */
  uint32_t preemption; /* GPFIFO channels: the compute preemption mode RM was asked for (0: WFI) */
} mock_obj;

typedef struct mock_fd {
  int kind;
  const struct mock_obj *map; /* the object RM_MAP_MEMORY bound to this fd */
  /* UVM tools fds: the event ring UVM_TOOLS_INIT_EVENT_TRACKER named (in the caller's memory)
   * and the event types enabled. */
  uint8_t *queue;
  uint32_t queue_entries;
  UVM_TOOLS_EVENT_CONTROL *control;
  uint64_t events;
  /* UVM fds: the address space each is (an id, given at open) and the RM address space
   * UVM_REGISTER_GPU_VASPACE registered with it (client and handle; 0 before). Tools fds: the
   * space of the UVM fd they track (0 before UVM_TOOLS_INIT_EVENT_TRACKER). */
  int space;
  uint32_t client, vaspace;
  /* Control fds a memory object was exported to (NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD):
   * the object's backing store (a memfd of its own, -1 if none), size, class and GPU. */
  int export_memfd;
  uint64_t export_size;
  uint32_t export_class, export_gpu;
} mock_fd;

/* A GPU mapping: a UVM external range or one of RM's own (NV_ESC_RM_MAP_MEMORY_DMA), and the
 * memory mapped into it. */
typedef struct mock_range {
  int space; /* the address space that holds it: a UVM fd's or an RM address space's (its id) */
  uint64_t base, length;
  uint8_t *host; /* NULL until mapped */
  const struct mock_obj *obj;
} mock_range;

typedef struct mock_state {
  pthread_mutex_t lock;     /* fds, objects */
  pthread_rwlock_t va_lock; /* ranges */
  mock_fd fds[MOCK_MAX_FDS];
  mock_obj **objs;
  uint32_t nobjs, cap_objs;
  mock_range *ranges;
  uint32_t nranges, cap_ranges;
  uint32_t next_handle, next_token, channels;
  int next_space; /* the id the next address space gets (from 1; 0 is MOCK_SPACE_ALL) */
  uint32_t gpus;  /* GPUs probed: NVHCQ_MOCK_GPUS, 1 to MOCK_MAX_GPUS */
  uint64_t vidmem_used[MOCK_MAX_GPUS];
} mock_state;

extern mock_state nvhcq_mock;

/* ---- objects (rm.c) ---- */
mock_obj *mock_find(uint32_t client, uint32_t handle);
int mock_rm_ioctl(unsigned nr, void *arg, unsigned size);
int mock_fd_kind(int fd);

/* ---- UVM (uvm.c) ---- */
/* Address spaces, as the driver has them: each RM address space (FERMI_VASPACE_A) and each UVM fd
 * is one of its own, with an id (nvhcq_mock.next_space) that names it in the range table. RM's
 * mappings (MAP_MEMORY_DMA into a virtual memory object) belong to the address space the object
 * was made in, a UVM fd's ranges to that fd's. A channel translates through the address space of
 * its context share, or without one its channel group's: the UVM fd's where that RM address space
 * is registered with one (UVM_REGISTER_GPU_VASPACE), else the RM address space's own mappings.
 * mock_thread_space is the calling thread's: a channel's on its command processor's thread, and
 * MOCK_SPACE_ALL (every mapping) for host-side callers and for channels that name no address
 * space (bare-driver tests: the device's default address space, which the mock does not model).
 * A GPU thus faults on memory mapped only in another address space, another GPU's included. */
#define MOCK_SPACE_ALL 0
extern _Thread_local int mock_thread_space;
/* The address space a channel in RM address space `vaspace` of `client` translates through, and
 * whether a UVM fd's (*uvm); MOCK_SPACE_ALL (and *uvm 0) for a null `vaspace`. */
int mock_space_of_vaspace(uint32_t client, const mock_obj *vaspace, int *uvm);
/* A new address space's id. */
int mock_space_new(void);
int mock_uvm_ioctl(int fd, int kind, unsigned long cmd, void *arg);
void mock_ranges_drop(const mock_obj *obj);
/* The host memory behind [va, va + len) of address space `space` (MOCK_SPACE_ALL: of any), or
 * NULL where it is not all mapped there; no injected faults (nvhcq_mock_gpu_pointer's are). */
void *mock_space_pointer(int space, uint64_t va, uint64_t len);
/* memmove for the engines' copies: a large copy into the mock's memory leaves holes where the
 * source has nothing, so untouched gigabytes stay untouched. */
void mock_copy(void *dst, const void *src, uint64_t n);
/* RM's own mappings (NV_ESC_RM_MAP_MEMORY_DMA) in RM address space `space`: in the same table as
 * UVM's ranges. */
uint32_t mock_range_map(int space, uint64_t base, uint64_t length, const mock_obj *memory,
                        uint64_t offset);
/* Where `va` lies in the host's memory, and in *run how many bytes from it on the same range
 * holds (at most `len`); NULL where nothing is mapped. */
void *mock_space_run(int space, uint64_t va, uint64_t len, uint64_t *run);
uint32_t mock_range_unmap(int space, uint64_t base);

/* Reports a fatal fault of the SMs (clientType 1) or of a copy engine or the host (2) in a channel
 * that translates through UVM fd address space `space` to the tools fds that track that fd and
 * enabled fault events, as UVM does before the channel is stopped. */
void mock_uvm_report_fault(int space, uint64_t address, int write, int client_type);

/* ---- the GPU it is (profile.c) ---- */
typedef struct mock_profile {
  const char *key, *name;
  uint16_t device_id;
  uint32_t sm_version, warps_per_sm;
  const uint8_t *tpcs; /* per GPC, 2 SMs each */
  size_t gpcs;
  uint64_t fb_kib;
  uint32_t usermode, gpfifo, compute, copy; /* classes (and, for Ampere's GPFIFO on Hopper, c56f) */
} mock_profile;
extern const mock_profile *mock_gpu;
/* Picks the profile NVHCQ_MOCK_GPU names (at install); -1 (and an H200) for an unknown name. */
int mock_profile_select(void);
uint32_t mock_profile_sms(void);
int mock_is_gpfifo_class(uint32_t c);

/* ---- device memory figures (ledger.c) ---- */
/* Device memory this process's objects hold on GPU `gpu` grows by `delta` bytes. */
void mock_vidmem_add(uint32_t gpu, int64_t delta);
/* Device memory held on `gpu`: this process's, and with NVHCQ_MOCK_SHARED_FB every live
 * process's that names the same file. */
uint64_t mock_vidmem_used(uint32_t gpu);

/* ---- controls (control.c) ---- */
uint32_t mock_control(const NVOS54_PARAMETERS *p, void *params);
/* Exporting a memory object to a control fd, importing one from it, its size (rm.c). */
uint32_t mock_export_object(uint32_t client, NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS *p);
uint32_t mock_import_object(uint32_t client, NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS *p);
uint32_t mock_surface_info(const mock_obj *memory, NV0041_CTRL_GET_SURFACE_INFO_PARAMS *p);
extern const uint8_t nvhcq_mock_uuid[16];
/* GPU i's UUID: GPU 0's with i added to the last byte. */
void mock_uuid_of(uint32_t gpu, uint8_t out[16]);
/* The GPU a UUID names, or -1. */
int mock_gpu_of_uuid(const uint8_t *uuid);
/* GPU i's RM id (its PCI bus 0x18 + i shifted as RM's ids are) and back (-1 if none). */
#define MOCK_GPU_ID       0x1800u
#define MOCK_GPU_ID_OF(i) (MOCK_GPU_ID + ((uint32_t)(i) << 8))
int mock_gpu_of_id(uint32_t gpu_id);
#define MOCK_FB_KIB  (mock_gpu->fb_kib)
#define MOCK_VERSION "580.95.05"

/* ---- channels (cp.c) ---- */
/* `space` is the address space it translates through, `uvm` whether a UVM fd's (faults of its
 * SMs go to UVM's event ring then, not into RM's record). */
uint32_t mock_channel_create(mock_obj *obj, const NV_CHANNEL_ALLOC_PARAMS *p, uint32_t token,
                             int space, int uvm);
void mock_channel_stop(mock_channel *ch);
void mock_channel_destroy(mock_channel *ch);
void mock_channel_add_engine(mock_channel *ch, uint32_t hclass);
uint32_t mock_channel_token(const mock_channel *ch);
/* The address space the channel translates through (mock_space_of_vaspace). */
int mock_channel_space(const mock_channel *ch);
/* Stops the channel the way robust-channel recovery does: the notifier says Xid `xid`. */
void mock_channel_fault(mock_channel *ch, uint32_t xid, uint64_t address, const char *what);
void mock_channel_fault_info(mock_channel *ch, NV906F_CTRL_GET_MMU_FAULT_INFO_PARAMS *out);
/* The SM error registers the driver saved for the channel's last SM exception (zero if none). */
void mock_channel_sm_error(mock_channel *ch, NV83DE_SM_ERROR_STATE_REGISTERS *out);
/* RM's record of the channel's SMs' MMU faults (kept where no UVM space handles them). */
void mock_channel_rm_fault(mock_channel *ch, NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS *out);
/* A usermode object at [page, page + size) goes: the channel forgets its doorbell word there. */
void mock_channel_drop_doorbell(mock_channel *ch, const uint8_t *page, uint64_t size);

uint64_t mock_now_ns(void);

/* ---- failure injection (fail.c) ---- */
/* 1 if this call is the one to fail (see nvhcq_mock_fail). */
int mock_fail_now(const char *call);
void mock_fail_from_env(void);

/* ---- GPU-side failure injection (inject.c) ---- */
enum {
  MOCK_INJECT_NONE,
  MOCK_INJECT_MMU_KERNEL,
  MOCK_INJECT_MMU_COPY,
  MOCK_INJECT_MMU_ADDRESS,
  MOCK_INJECT_XID_GR,
  MOCK_INJECT_XID_CE,
  MOCK_INJECT_DOORBELL,
  MOCK_INJECT_DOORBELL_STUCK,
};
/* Nonzero on a command processor's thread: only the GPU's own accesses are injected faults. */
extern _Thread_local int mock_on_engine;
/* Each counts one grid, copy or doorbell; the event to inject if this is the armed one's nth. */
int mock_inject_grid(void);
int mock_inject_copy(void);
int mock_inject_doorbell(void);
/* 1 if this GPU access of [va, va + len) is the injected fault at a chosen page. */
int mock_inject_access(uint64_t va, uint64_t len);
/* A lost doorbell's channel went on: rung again (1) or moved by a later GP_PUT (0). */
void mock_inject_resumed(int rung_again);
void mock_gpu_fail_from_env(void);
/* Zeroes every doorbell word (cp.c): a ring written after this is one the mock can see. */
void mock_doorbells_clear(void);

/* ---- kernels (kernels.c) ---- */
/* The default grid runner: the kernel's PTX through the interpreter. */
int mock_run_ptx_grid(const nvhcq_mock_grid *g);
uint32_t mock_module_count(void);
void mock_modules_drop(void);

#endif
