/* What the CUDA driver API library keeps behind its handles: devices and contexts, allocations,
 * modules and functions, streams, events and graphs, and the helpers they share. */
#ifndef NVCU_INTERNAL_H
#define NVCU_INTERNAL_H

#include <nvhcq.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_api.h"

#define NVCU_MAX_DEVICES 16

/* Engines a stream's work runs on: both channels of the device. */
enum { NVCU_COMPUTE = 0, NVCU_COPY = 1 };

/* The SMs a stream's or a green context's launches are kept to: TPC slots of nvhcq's masks. */
typedef struct nvcu_sm_set {
  int masked; /* 0: every SM */
  uint32_t tpcs[4];
} nvcu_sm_set;

struct CUctx_st {
  uint32_t magic;
  int device;
  int primary;
  unsigned int flags;
  unsigned long long id;       /* cuCtxGetId's: given on first ask */
  uint32_t peers;              /* bit d: cuCtxEnablePeerAccess'ed to a context of device d */
  struct CUgreenCtx_st *green; /* the green context this one stands for (cuCtxFromGreenCtx) */
  int attached;                /* cuCtxAttach's, less cuCtxDetach's */
  unsigned affinity_sms;       /* execution affinity's SM count (0: none), on these SMs: */
  nvcu_sm_set affinity;
};

/* One GPU: opened on first use. Every stream's work is ordered on it (stronger than CUDA promises
 * and always allowed): an operation on one engine first waits for the other engine's latest
 * work, so completion of a stream's last operation means all earlier work is done. */
typedef struct nvcu_device {
  nvhcq_device *dev;
  nvhcq_device_info info;
  nvhcq_queue *queue[2];
  nvhcq_signal *timeline[2];
  uint64_t submitted[2]; /* the timeline value of each engine's latest operation */
  uint64_t seen[2];      /* the other engine's value this engine last waited for */
  uint64_t waiting[2];   /* the value the operation being recorded waits for (0: none) */
  struct CUctx_st primary;
  int primary_refs;
  nvhcq_buffer *pattern; /* pinned staging for memsets */
  uint64_t pattern_done; /* the copy timeline's value once the last memset has read it */
  int last_engine;       /* of the latest operation: events are recorded behind it */
} nvcu_device;

struct CUmemPoolHandle_st;

/* An allocation the library made or registered: device memory (from cuMemAlloc or a pool),
 * pinned host memory, managed memory (pinned host memory too) or the caller's registered memory. */
typedef struct nvcu_alloc {
  uint64_t base, size;
  uint64_t id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID: set when the table takes it, never reused */
  nvhcq_buffer *buf;
  uint64_t buf_offset; /* of base in buf: a registration's buffer starts at its first page */
  int host;            /* host memory: cuMemHostAlloc, registered or managed */
  int registered;      /* cuMemHostRegister'ed memory of the caller's */
  int managed;         /* cuMemAllocManaged */
  int device;
  int vmm; /* a mapping of cuMemCreate's memory (vmm.c): cuMemUnmap's to free */
  unsigned int flags;
  struct CUmemPoolHandle_st *pool; /* the pool it came from (cuMemAllocAsync), or NULL */
  uint64_t *pages; /* managed memory: each page's advice and last prefetch (managed.c), or NULL */
  /* A graph's allocation node's memory (graph_mem.c), held until the graph and its executable
   * graph are gone; a free node for it, or the caller's cuMemFree once a launch made it theirs,
   * only marks it free. NULL for every other allocation. */
  struct nvcu_graph_mem *graph_mem;
  int graph_freed; /* a free node of some graph frees it */
  /* Memory of another process opened by cuIpcOpenMemHandle (ipc.c): the range it is mapped in,
   * destroyed by cuIpcCloseMemHandle; else NULL. */
  nvhcq_reservation *ipc_range;
} nvcu_alloc;

typedef struct nvcu_param {
  uint32_t offset, size;
} nvcu_param;

struct CUmod_st {
  uint32_t magic;
  int device;
  nvhcq_module *mod;
  struct CUfunc_st **funcs;
  uint32_t func_count;
};

struct CUfunc_st {
  uint32_t magic;
  struct CUmod_st *mod;
  nvhcq_kernel *k;
  nvhcq_kernel_info info;
  char *name;
  uint32_t param_count;
  nvcu_param *params;
  int max_dynamic_shared; /* set through CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int carveout;
  /* The legacy execution API's state (legacy.c): cuFuncSetBlockShape's block, cuFuncSetSharedSize's
   * bytes and the argument block cuParamSet* write (malloc'd, the kernel's parameter size). */
  nvhcq_dim3 legacy_block;
  uint32_t legacy_shared;
  uint8_t *legacy_args;
  uint32_t legacy_args_size; /* cuParamSetSize's */
};

struct nvcu_graph_node;

struct CUstream_st {
  uint32_t magic;
  int device;
  unsigned int flags;
  int priority;
  uint64_t need[2]; /* timeline values its last operation completes with */
  struct CUgraph_st *capture;
  unsigned long long green_id; /* the green context it was made in (0: none) */
  nvcu_sm_set sms;             /* that green context's SMs, for its launches */
  CUcontext ctx;               /* the context current when it was made (cuStreamGetCtx) */
  /* What the next captured node depends on: the last one captured, or the set that
   * cuStreamBeginCaptureToGraph / cuStreamUpdateCaptureDependencies gave */
  struct CUgraphNode_st **capture_deps;
  CUgraphEdgeData *capture_edges; /* as many, all default: what cuStreamGetCaptureInfo_v3 gives */
  uint32_t capture_dep_count, capture_dep_cap;
  unsigned long long id;         /* cuStreamGetId's */
  unsigned long long capture_id; /* of the capture in progress */
  int capture_made;              /* the capture made its graph (destroyed if it is invalidated) */
  /* A stream that joined another's capture (capture.c): that stream; NULL for the one it began on,
   * which lists the streams that joined. */
  struct CUstream_st *capture_origin;
  struct CUstream_st **joined;
  uint32_t joined_count, joined_cap;
  /* Stream attributes: kept and read back; nothing nvhcq does depends on them. */
  CUaccessPolicyWindow access_policy;
  CUsynchronizationPolicy sync_policy; /* 0: never set (CU_SYNC_POLICY_AUTO) */
  CUlaunchMemSyncDomainMap domain_map;
  int domain;
};

struct CUevent_st {
  uint32_t magic;
  int device;
  unsigned int flags;
  nvhcq_signal *sig;
  uint64_t value;             /* the last record's release of this process */
  struct nvcu_ipc_event *ipc; /* CU_EVENT_INTERPROCESS: the semaphore's shared page (ipc.c) */
  /* Recorded in a capture: the capture's id and the nodes the record stands for (capture.c). */
  unsigned long long capture_id;
  struct CUgraphNode_st **capture_deps;
  uint32_t capture_dep_count;
};

/* A kernel, copy, memset, host function or event operation in a stream's order or a graph. */
typedef struct nvcu_op {
  int kind; /* CU_GRAPH_NODE_TYPE_* */
  struct CUfunc_st *func;
  nvhcq_dim3 grid, block;
  nvhcq_dim3 cluster; /* zeros: no cluster given (the kernel's compiled one, if any) */
  uint32_t cluster_policy;
  uint32_t launch_flags; /* NVHCQ_LAUNCH_*: cooperative */
  nvcu_sm_set sms;       /* a green context's SMs (its stream's), or every SM */
  uint32_t shared;
  uint8_t *args;
  uint32_t args_size;
  uint64_t dst, src, size;
  uint32_t value, element_size;
  CUhostFn fn; /* a host node's function and its argument */
  void *user;
  struct CUevent_st *event; /* an event record or wait node's event */
  struct nvcu_cond *cond;   /* a conditional node's condition (a reference held by each copy) */
  int cond_type;            /* a conditional node's CU_GRAPH_COND_TYPE_* */
  /* Launch attributes nvhcq has no use for, kept for cuGraphKernelNodeGetAttribute */
  int priority, domain;
  CUlaunchMemSyncDomainMap domain_map;
  CUaccessPolicyWindow access_policy;
} nvcu_op;

/* A reference some graph or executable graph holds on a user object, `count` times. */
typedef struct nvcu_uref {
  struct CUuserObject_st *obj;
  unsigned int count;
} nvcu_uref;

/* References held by a graph: one entry per object. */
typedef struct nvcu_urefs {
  nvcu_uref *v;
  uint32_t n, cap;
} nvcu_urefs;

struct CUuserObject_st {
  uint32_t magic;
  _Atomic unsigned long long refs;
  void *ptr;
  CUhostFn destroy;
};

struct CUgraphNode_st {
  uint32_t magic;
  struct CUgraph_st *graph;
  uint32_t index; /* in graph->nodes */
  uint32_t id; /* never reused in its graph, kept by clones: executable graphs find nodes by it */
  nvcu_op op;
  struct CUgraph_st *child;   /* a child graph node's own graph */
  struct CUgraph_st **bodies; /* a conditional node's body graphs (CUDA's phGraph_out) */
  uint32_t body_count;
  CUDA_MEMCPY3D copy; /* a memcpy node's parameters as given (has_copy) */
  int has_copy;
  void **param_ptrs; /* cuGraphKernelNodeGetParams's kernelParams, made on demand */
  uint32_t dep_count;
  struct CUgraphNode_st **deps; /* the nodes this one depends on, in the order they were added */
};

struct CUgraph_st {
  uint32_t magic;
  int device;
  struct CUgraphNode_st **nodes;
  uint32_t node_count;
  uint32_t next_id;
  struct CUgraph_st *origin;    /* the graph this one was cloned from, for cuGraphNodeFindInClone */
  struct CUgraphNode_st *owner; /* the child graph or conditional node this graph belongs to */
  int moved;        /* moved into its child graph node (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) */
  nvcu_urefs urefs; /* user objects the graph owns references to */
  struct nvcu_graph_mem *mem; /* its allocation nodes' memory, or NULL (graph_mem.c) */
  struct nvcu_cond **conds;   /* the conditional handles made for it (a reference each) */
  uint32_t cond_count;
};

/* Per node of an instantiated graph (child graphs inlined): its values, dependencies, the step of
 * the launch it runs in and the variables its values live in. */
typedef struct nvcu_exec_node {
  nvcu_op op;
  uint32_t id; /* the graph node's id for the graph's own nodes, NVCU_NESTED for inlined ones */
  struct CUgraphNode_st *node; /* the graph node it was made from: valid while flattening only */
  uint32_t *deps;              /* indices of exec nodes, ascending */
  uint32_t dep_count;
  uint32_t step;
  nvhcq_var grid[3], block[3];
  nvhcq_var *param_vars; /* one per parameter of 4 or 8 bytes, else NVHCQ_NO_VAR */
  nvhcq_var dst, src, size;
  nvhcq_buffer *pattern; /* a memset's source */
  uint64_t pattern_size;
  struct CUgraphExec_st **bodies; /* a conditional node's body graphs, instantiated */
  uint32_t body_count;
  int disabled; /* cuGraphNodeSetEnabled(0): not recorded; its values kept for re-enabling */
  int fixed;    /* recorded without variables (cluster or cooperative launches) */
} nvcu_exec_node;

#define NVCU_NESTED  UINT32_MAX
#define NVCU_NO_STEP UINT32_MAX

/* One part of a launch: GPU work (one recorded compute queue for kernels alone, else an nvhcq
 * graph), or one node the CPU carries out (a host function, an event record) between parts. */
typedef struct nvcu_step {
  nvhcq_queue *q;
  nvhcq_graph *g;
  int uses[2];
  uint32_t cpu_node; /* an exec node index, or NVCU_NO_STEP for GPU work */
} nvcu_step;

struct CUgraphExec_st {
  uint32_t magic;
  int device;
  unsigned long long flags;
  struct CUgraph_st *graph; /* node handles of it map to exec nodes by id */
  nvcu_exec_node *nodes;
  uint32_t node_count;
  uint64_t *top; /* the graph's own nodes: id << 32 | exec node index, ascending */
  uint32_t top_count;
  nvcu_step *steps;
  uint32_t step_count;
  nvcu_urefs urefs; /* the graph's user object references, held until destroyed */
  int stale;        /* a change of a node recorded without variables waits for rerecording */
  int broken;       /* rerecording failed: launches are refused */
  struct nvcu_graph_mem *mem; /* the graph's allocations, held too (graph_mem.c) */
  /* Conditions set to their default value as each launch begins (a reference each) */
  struct nvcu_cond **defaults;
  uint32_t default_count;
};

enum {
  NVCU_CTX_MAGIC = 0x43545843,
  NVCU_MOD_MAGIC = 0x444f4d43,
  NVCU_FUNC_MAGIC = 0x434e5546,
  NVCU_STREAM_MAGIC = 0x4d525453,
  NVCU_EVENT_MAGIC = 0x544e5645,
  NVCU_GRAPH_MAGIC = 0x48504147,
  NVCU_NODE_MAGIC = 0x45444f4e,
  NVCU_EXEC_MAGIC = 0x43455845,
  NVCU_UOBJ_MAGIC = 0x4a424f55,
};

/* `array` with room for one more element: it doubles as it fills (`first` elements the first
 * time), so it may move. NULL when out of memory, `array` and `*cap` left as they were. */
static inline void *nvcu_room(void *array, size_t *cap, size_t count, size_t elem, size_t first) {
  if (count < *cap) return array;
  size_t n = *cap ? *cap * 2 : first;
  void *grown = realloc(array, n * elem);
  if (grown) *cap = n;
  return grown;
}

/* ---- init.c ---- */
extern pthread_mutex_t nvcu_mutex;
/* The library is one lock: nvhcq wants one thread at a time per device. */
#define NVCU_LOCK()   pthread_mutex_lock(&nvcu_mutex)
#define NVCU_UNLOCK() pthread_mutex_unlock(&nvcu_mutex)
int nvcu_log_enabled(void);
/* A failure's message: kept for cuLogs* and, with NVHCQ_CUDA_LOG=1, printed on stderr. */
void nvcu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What a call accepted, ignored or refused without failing: NVHCQ_CUDA_LOG=1's stderr only. */
void nvcu_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Maps an nvhcq status to a CUDA code, logging nvhcq's message (NVHCQ_CUDA_LOG=1). */
CUresult nvcu_status(nvhcq_status s, const char *where);
CUresult nvcu_unsupported(const char *what);
/* nvhcq's texel type and the bytes of one channel of a CUDA array format (the eight that arrays
 * and textures take); 0 for any other. */
int nvcu_texel_of(CUarray_format f, nvhcq_texel_type *t, uint32_t *bytes);
CUresult nvcu_check_init(void);
/* The device of the current context (opened), or an error. */
CUresult nvcu_current(nvcu_device **out, int *index);
CUresult nvcu_device_get(int index, nvcu_device **out);

/* ---- logs.c ---- */
/* Keeps a message for cuLogsDumpTo* and hands it to the registered callbacks. */
void nvcu_logs_add(CUlogLevel level, const char *message);

/* ---- vmm.c ---- */
/* A shareable handle type nvhcq's library gives and takes (POSIX file descriptors), or the code
 * CUDA answers for it. */
CUresult nvcu_handle_type_check(CUmemAllocationHandleType type);

/* ---- ipc.c ---- */
/* Whether cuIpcGetMemHandle shares the allocation: cuMemAlloc's device memory. */
int nvcu_ipc_capable(const nvcu_alloc *a);
/* The handle types the cuMemCreate memory mapped at `address` was made exportable to (vmm.c); 0
 * where nothing of cuMemMap's is. Under the library's lock. */
unsigned nvcu_vmm_handle_types(uint64_t address);
/* The id of the cuMemCreate memory mapped at `address` (vmm.c); 0 where none is mapped. */
uint64_t nvcu_vmm_block_id(uint64_t address);
/* A number no earlier call returned in this process (memory.c), for the ids CUDA promises are
 * never reused (buffer and memory block ids). Under the library's lock. */
uint64_t nvcu_next_id(void);
/* The 64 bytes of an IPC handle of the allocation's memory (cuIpcGetMemHandle's and
 * cuMemPoolExportPointer's), into `out`. */
CUresult nvcu_ipc_export(const nvcu_alloc *a, void *out, const char *what);
/* Maps another process's allocation named by `h` (in the table, of `pool` when one of its
 * pointers is imported; under the lock). */
CUresult nvcu_ipc_open(nvcu_device *d, int index, const nvhcq_ipc_handle *h,
                       struct CUmemPoolHandle_st *pool, CUdeviceptr *out);

/* An interprocess event's semaphore in a page of POSIX shared memory, made by cuEventCreate or
 * opened from a handle, registered with the event's GPU and its signal made over it. */
CUresult nvcu_ipc_event_make(nvcu_device *d, struct CUevent_st *ev);
void nvcu_ipc_event_free(struct CUevent_st *ev);
/* The release a wait on the event waits for: the latest record of any process. */
uint64_t nvcu_ipc_event_target(const struct CUevent_st *ev);
/* The value the next record releases (counted in the shared page). */
uint64_t nvcu_ipc_event_next(struct CUevent_st *ev);

/* ---- array.c ---- */
/* A 2D or 3D copy with a CUDA array at either end, synchronous (stream only says where it was
 * asked: a capturing stream refuses it). */
CUresult nvcu_copy_array_3d(const CUDA_MEMCPY3D *p, CUstream stream);
/* Bytes per element of a live array; 0 for anything else. */
size_t nvcu_array_element_size(CUarray a);

/* ---- memory.c ---- */
nvcu_alloc *nvcu_alloc_find(uint64_t address);
/* Whether `address` lies in a range cuMemAddressReserve reserved (vmm.c). */
int nvcu_vmm_reserved(uint64_t address);
/* Puts an allocation made elsewhere (vmm.c) into the table (under the lock). */
CUresult nvcu_alloc_add(const nvcu_alloc *a);
/* `size` bytes from `pool` for `device`, in the table (under the lock): device memory, or pinned
 * host memory for a host or managed pool (`managed`: a managed pool's). */
CUresult nvcu_alloc_pool_memory(int device, size_t size, struct CUmemPoolHandle_st *pool,
                                int managed, CUdeviceptr *out);
/* Takes an allocation out of the table and destroys its buffer, which nvhcq releases once the GPU
 * has passed all work submitted so far (under the lock). */
CUresult nvcu_alloc_release(nvcu_alloc *a);
/* Device memory of `device` for a graph's allocation node, owned by `mem`. */
CUresult nvcu_alloc_graph_memory(int device, size_t size, struct nvcu_graph_mem *mem,
                                 CUdeviceptr *out);

/* ---- graph allocations (graph_mem.c) ---- */
/* Whether a cuMemFree or cuMemFreeAsync of `a` is a graph allocation's, which stays: *r then says
 * how the free ends (refused when a free node of a graph frees it). */
int nvcu_graph_mem_kept(nvcu_alloc *a, CUresult *r);
CUresult nvcu_graph_mem_capture_alloc(struct CUstream_st *st, size_t size,
                                      const CUmemPoolProps *props, CUdeviceptr *dptr);
CUresult nvcu_graph_mem_capture_free(struct CUstream_st *st, CUdeviceptr dptr);
/* An executable graph of g takes (or gives back) its share of g's allocations; only one may exist.
 */
CUresult nvcu_graph_mem_instantiated(struct CUgraph_st *g, struct CUgraphExec_st *x);
void nvcu_graph_mem_unref(struct nvcu_graph_mem *mem, int exec);
/* Whether a graph has allocation nodes (it then cannot be cloned, nested or have nodes removed). */
int nvcu_graph_has_mem(const struct CUgraph_st *g);
/* Waits until all work submitted so far on the device has completed. */
CUresult nvcu_wait_all(nvcu_device *d);
/* Run a copy or memset between GPU addresses now, after everything submitted before. */
CUresult nvcu_run_copy(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op);
CUresult nvcu_run_memset(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op);

/* ---- pool.c ---- */
/* An allocation of `size` bytes from the pool went (its memory may still be in the GPU's use). */
void nvcu_pool_freed(struct CUmemPoolHandle_st *pool, uint64_t size, int device);
/* Whether the pool hands out pinned host memory (a host or managed pool). */
int nvcu_pool_is_host(const struct CUmemPoolHandle_st *pool);
/* The handle types the pool's memory may be exported as (its props.handleTypes). */
unsigned nvcu_pool_handle_types(const struct CUmemPoolHandle_st *pool);

/* ---- peer.c ---- */
/* Maps device owner's buffers, those made so far and later, into device dev's address space at
 * their own addresses (nvhcq_device_enable_peer: lasts until either device closes; nvhcq cannot
 * unmap them earlier), or CUDA_ERROR_PEER_ACCESS_UNSUPPORTED without a P2P path (under the lock).
 */
CUresult nvcu_peer_map(int dev, int owner);

/* ---- stream.c ---- */
/* The CPU waits until the signal reaches `value`: spinning first, as libcuda does. */
CUresult nvcu_signal_wait(nvhcq_signal *sig, uint64_t value, const char *what);
CUresult nvcu_stream_get(CUstream s, struct CUstream_st **out);
/* Runs one operation in a stream's order (or appends it to the graph the stream captures). */
CUresult nvcu_stream_op(CUstream s, const nvcu_op *op);
/* Makes engine e's queue wait for the other engine, ready for one operation. */
nvhcq_queue *nvcu_engine_begin(nvcu_device *d, int e);
CUresult nvcu_engine_end(nvcu_device *d, int e, struct CUstream_st *st);
/* After a submission of engine e's queue: the wait nvcu_engine_begin recorded is done. */
void nvcu_engine_waited(nvcu_device *d, int e);

/* Another exported name of the same function (_ptsz forms, older versions). */
#define NVCU_ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target)));

/* ---- stream.c: a CUlaunchConfig as nvhcq's (and whether it asks for a cooperative launch), or
 * CUDA_ERROR_NOT_SUPPORTED for what it lacks ---- */
CUresult nvcu_launch_config(const CUlaunchConfig *config, nvhcq_launch_config *out,
                            int *cooperative);

/* ---- module.c ---- */
CUresult nvcu_func_check(CUfunction f);
/* The argument block of a launch from kernelParams or extra, in *out (malloc'd). */
CUresult nvcu_pack_args(struct CUfunc_st *f, void **kernelParams, void **extra, uint8_t **out,
                        uint32_t *size);

/* ---- link.c: JIT options ---- */
#define NVCU_JIT_MAX_OPTS 24
/* A CUjit_option array: the nvJitLink options it maps to, the target ("" for the context's), and
 * where the logs, their sizes and the wall time go back to. */
typedef struct nvcu_jit {
  const char *opts[NVCU_JIT_MAX_OPTS];
  char buf[NVCU_JIT_MAX_OPTS][32];
  int n;
  char arch[16];
  char *info, *error;
  unsigned info_size, error_size;
  int info_slot, error_slot, wall_slot; /* indexes into values, or -1 */
  void **values;
} nvcu_jit;
/* Refuses options CUDA refuses (CUDA_ERROR_INVALID_VALUE) and those nvhcq cannot honor. */
CUresult nvcu_jit_parse(unsigned n, CUjit_option *options, void **values, nvcu_jit *out);
/* Writes the logs (capped, terminated), the bytes written and the milliseconds back. */
void nvcu_jit_report(const nvcu_jit *j, const char *info, const char *error, double ms);
double nvcu_now_ms(void);

/* ---- stream.c: what graph launches share with streams ---- */
/* The CPU waits for the stream's work (before a host function). */
CUresult nvcu_stream_wait(struct CUstream_st *st);
/* Records the event behind all work submitted so far. */
CUresult nvcu_event_record(nvcu_device *d, struct CUevent_st *ev);
/* A wait on the GPU for an interprocess event's latest record (a no-op for other events). */
CUresult nvcu_event_wait(nvcu_device *d, struct CUevent_st *ev, struct CUstream_st *st);

/* ---- graph.c ---- */
CUresult nvcu_graph_check(CUgraph g);
CUresult nvcu_node_check(CUgraphNode n);
CUresult nvcu_graph_append(struct CUgraph_st *g, const nvcu_op *op, const CUgraphNode *deps,
                           size_t dep_count, CUgraphNode *out);
void nvcu_node_free(struct CUgraphNode_st *n);
/* A graph and its nodes go, whoever owns it. */
void nvcu_graph_free(struct CUgraph_st *g);
/* A copy of g (nodes, edges, child graphs; node ids kept), or NULL when out of memory. */
struct CUgraph_st *nvcu_graph_copy(const struct CUgraph_st *g);
/* Fills a node list the CUDA way: `*num` entries at most, the rest NULL, `*num` the count. */
void nvcu_fill_nodes(struct CUgraphNode_st *const *list, size_t count, CUgraphNode *out,
                     size_t *num);
/* A kernel node's parameters as an operation (its arguments packed, malloc'd). */
CUresult nvcu_kernel_op(const CUDA_KERNEL_NODE_PARAMS_v1 *p, CUkernel kern, nvcu_op *op);
/* A memcpy node's CUDA_MEMCPY3D or a memset node's parameters as an operation. */
CUresult nvcu_memcpy_op(const CUDA_MEMCPY3D *p, nvcu_op *op);
CUresult nvcu_memset_op(const CUDA_MEMSET_NODE_PARAMS *p, nvcu_op *op);
/* Edge data must be absent or CUDA's default (zeroes). */
CUresult nvcu_edge_data_check(const CUgraphEdgeData *data, size_t n);

/* ---- capture.c ---- */
/* Whether st is the NULL (legacy or per-thread default) stream. */
int nvcu_stream_is_default(const struct CUstream_st *st);
/* An event recorded in a captured stream, and a wait for such an event (under the lock). */
CUresult nvcu_capture_record(struct CUstream_st *st, struct CUevent_st *ev);
CUresult nvcu_capture_wait(struct CUstream_st *st, struct CUevent_st *ev);
/* A stream goes: out of the capture it joined, and the streams that joined its own leave it. */
void nvcu_capture_stream_gone(struct CUstream_st *st);

/* ---- green.c ---- */
/* The current context's SMs (a green context's, or every SM): what streams made in it take. */
nvcu_sm_set nvcu_current_sms(unsigned long long *green_id);
/* The SMs an execution-affinity context of `want` SMs gets on `device`: rounded up as a green
 * context's group is, the lowest TPC slots, at most all; CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY
 * where grids cannot be kept to some SMs. Under the library's lock. */
CUresult nvcu_affinity_sms(int device, unsigned want, nvcu_sm_set *out, unsigned *count);
/* The live green context with id `id`, or NULL (destroyed, or 0). Under the library's lock. */
struct CUgreenCtx_st *nvcu_green_of_id(unsigned long long id);
/* The context current on this thread, or NULL. */
CUcontext nvcu_current_ctx(void);

/* ---- memops.c ---- */
/* A batch memory operation node's parameters are valid (CUDA_ERROR_INVALID_VALUE, logged). */
CUresult nvcu_memops_check(unsigned count, const CUstreamBatchMemOpParams *p, unsigned flags);
/* Runs a batch memory operation node's operations (its args: the parameter array) in the stream's
 * order. */
CUresult nvcu_memops_run(nvcu_device *d, struct CUstream_st *st, const nvcu_op *op);

/* ---- graph_cond.c: conditional nodes ---- */
/* A conditional handle's condition: 4 bytes of pinned host memory whose GPU address is the handle
 * (cudaGraphSetConditional stores there, nvhcq's device syscall), shared by the graph it was made
 * for, the graph's copies, their nodes and executable graphs: counted references (the count
 * functions take the lock). */
typedef struct nvcu_cond {
  struct nvcu_cond *next_free;
  uint32_t refs;
  int device;
  volatile uint32_t *host;
  uint64_t gpu;
  unsigned int default_value, flags;
} nvcu_cond;
void nvcu_cond_ref(nvcu_cond *c);
void nvcu_cond_unref(nvcu_cond *c);
/* cuGraphAddNode of a conditional node: the node, its empty body graphs in p->phGraph_out. */
CUresult nvcu_cond_node_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                            CUDA_CONDITIONAL_NODE_PARAMS *p);
/* A copy's share of src: its body graphs copied, its condition referenced (node_copy). */
CUresult nvcu_cond_node_copy(struct CUgraphNode_st *dst, const struct CUgraphNode_st *src);
/* The node's body graphs and its condition's reference go (nvcu_node_free). */
void nvcu_cond_node_free(struct CUgraphNode_st *n);
/* g's handles referenced again by its copy c; dropped by a graph going. */
CUresult nvcu_cond_graph_copy(struct CUgraph_st *c, const struct CUgraph_st *g);
void nvcu_cond_graph_free(struct CUgraph_st *g);
/* The conditions with CU_GRAPH_COND_ASSIGN_DEFAULT of g and of its child graphs (not of
 * conditional bodies, which are instantiated and launched on their own), referenced. */
CUresult nvcu_cond_defaults(const struct CUgraph_st *g, nvcu_cond ***out, uint32_t *count);
/* Drops a list's references and the list. */
void nvcu_conds_free(nvcu_cond **v, uint32_t n);
/* As a launch of x begins: its conditions take their default values, written by the GPU after all
 * work submitted before. */
CUresult nvcu_cond_begin(nvcu_device *d, const struct CUgraphExec_st *x);

/* ---- user_object.c ---- */
/* Adds `count` references of obj to the list (taking them over; the object is not retained). */
CUresult nvcu_urefs_add(nvcu_urefs *l, struct CUuserObject_st *obj, unsigned int count);
/* A copy of the list, every reference in it retained again. */
CUresult nvcu_urefs_copy(nvcu_urefs *to, const nvcu_urefs *from);
/* Drops every reference of the list (destructors run here: call it without the lock held). */
void nvcu_urefs_release(nvcu_urefs *l);

/* ---- graph_attr.c ---- */
/* One launch attribute into op: cuLaunchKernelEx's and kernel nodes' attributes share it. */
CUresult nvcu_launch_attr_set(nvcu_op *op, CUlaunchAttributeID id, const CUlaunchAttributeValue *v,
                              const char *who);
/* A kernel operation's attributes (not its parameters) copied onto another. */
void nvcu_launch_attrs_copy(nvcu_op *to, const nvcu_op *from);
/* Whether a kernel operation has a cluster, a cluster policy or launch flags, and its launch for
 * nvhcq_queue_launch_ex in *out (NULL: only the question); without them nvhcq_queue_launch does. */
int nvcu_op_launch_config(const nvcu_op *op, nvhcq_launch_config *out);

#endif
