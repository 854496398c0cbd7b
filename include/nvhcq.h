/* nvhcq: drive NVIDIA GPUs through the kernel driver's ioctl interface, without libcuda.
 *
 * Every call returns an nvhcq_status. On failure nvhcq_last_error() gives a message (per thread)
 * that says what failed, on which object, and what to do about it. Accessors that return a value
 * instead (nvhcq_buffer_size, nvhcq_signal_value, ...) return 0 or NULL for a NULL or dead
 * handle and set that message.
 *
 * Names (0.2): every function is nvhcq_<kind>_<verb>, its first word the kind of object it acts
 * on (device, buffer, physical, reservation, image, texture, surface, signal, queue, module,
 * kernel, graph, binary, source, linker, status, version).
 * Each kind that is made and released has one verb pair for it: devices are opened and closed
 * (nvhcq_device_open/_close), modules loaded and unloaded (nvhcq_module_load, _load_file,
 * _load_any / nvhcq_module_unload), binaries compiled and destroyed (nvhcq_binary_compile /
 * _destroy), and buffers, images, textures, surfaces, signals, queues, graphs and linkers
 * created and destroyed
 * (nvhcq_<kind>_create / nvhcq_<kind>_destroy). Destroying NULL is fine. A wait says who waits:
 * *_cpu_wait* blocks the calling thread until the GPU got somewhere; *_gpu_wait* records a command
 * that makes the GPU wait, and returns at once. Copies take their destination first, as memcpy
 * does.
 *
 * Compatibility: the 0.1 names still compile, link and work; they are declared at the end of this
 * file, deprecated (define NVHCQ_DEPRECATED(msg) as empty to silence the warnings), and README's
 * "0.2 renames" lists them. Structs the library fills (nvhcq_device_info, nvhcq_kernel_info,
 * nvhcq_occupancy) start with struct_size: set it to sizeof the struct; the library fills what
 * fits, zeroes the bytes past what it knows, and refuses a size below the 0.2 layout.
 *
 * Threading: a device and everything made from it may be used by one thread at a time; different
 * devices may be used from different threads at once. nvhcq_signal_value/nvhcq_signal_cpu_wait
 * may be called from any thread. */
#ifndef NVHCQ_H
#define NVHCQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NVHCQ_API __attribute__((visibility("default")))
#else
#define NVHCQ_API
#endif

#if !defined(NVHCQ_DEPRECATED) && defined(__GNUC__)
#define NVHCQ_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif !defined(NVHCQ_DEPRECATED)
#define NVHCQ_DEPRECATED(msg)
#endif

/* The version of this header; nvhcq_version() says that of the library that runs. */
#define NVHCQ_VERSION_MAJOR 0
#define NVHCQ_VERSION_MINOR 2
#define NVHCQ_VERSION       ((NVHCQ_VERSION_MAJOR << 16) | NVHCQ_VERSION_MINOR)

/* The library's (major << 16) | minor, to compare with NVHCQ_VERSION. */
NVHCQ_API uint32_t nvhcq_version(void);

/* Every status, in the order of its value from 0, with what it means: the enum below and
 * nvhcq_status_name are both made from this list. */
#define NVHCQ_STATUS_LIST(X)                                                                       \
  X(NVHCQ_SUCCESS)                /* 0 */                                                          \
  X(NVHCQ_ERROR_INVALID_ARGUMENT) /* bad input from the caller; nothing was done */                \
  X(NVHCQ_ERROR_NO_DRIVER)   /* no /dev/nvidiactl or /dev/nvidia-uvm, or they cannot be opened */  \
  X(NVHCQ_ERROR_NO_DEVICE)   /* no such GPU (index out of range, hidden by *_VISIBLE_DEVICES) */   \
  X(NVHCQ_ERROR_UNSUPPORTED) /* driver branch or GPU generation nvhcq does not know */             \
  X(NVHCQ_ERROR_OUT_OF_MEMORY) /* GPU or host memory exhausted; later allocations still work */    \
  X(NVHCQ_ERROR_DRIVER)        /* the kernel driver refused a call */                              \
  X(NVHCQ_ERROR_TIMEOUT)       /* a wait ran past its timeout */                                   \
  X(NVHCQ_ERROR_GPU_FAULT)     /* the GPU reported an error on a channel */                        \
  X(NVHCQ_ERROR_INVALID_IMAGE) /* a malformed or incompatible cubin */                             \
  X(NVHCQ_ERROR_NOT_FOUND)     /* a named kernel or symbol does not exist */                       \
  X(NVHCQ_ERROR_LAUNCH_CHECK)  /* a launch exceeds a kernel or hardware limit */                   \
  X(NVHCQ_ERROR_IO)            /* reading or writing a file failed */                              \
  X(NVHCQ_ERROR_COMPILE)       /* CUDA C or PTX did not compile: the message holds the log */      \
  X(NVHCQ_ERROR_BUSY)          /* the object is in use by the GPU; wait, then try again */

/* The types of the ABI are fixed-width integers; the enums only name the values. */
typedef uint32_t nvhcq_status;
enum {
#define NVHCQ_STATUS_ENUM_(name) name,
  NVHCQ_STATUS_LIST(NVHCQ_STATUS_ENUM_)
#undef NVHCQ_STATUS_ENUM_
};

NVHCQ_API const char *nvhcq_status_name(nvhcq_status status);
/* The message of the last failed call on this thread ("no error" if none). */
NVHCQ_API const char *nvhcq_last_error(void);

/* ---- devices ---------------------------------------------------------------------------- */

typedef struct nvhcq_device nvhcq_device;

typedef struct nvhcq_device_info {
  uint32_t struct_size;    /* set by the caller: sizeof(nvhcq_device_info) */
  uint32_t reserved;       /* 0 */
  char name[96];           /* "NVIDIA H200" */
  uint8_t uuid[16];        /* the GPU's UUID, binary */
  char uuid_string[48];    /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
  char arch[16];           /* "sm_90" */
  uint32_t sm_version;     /* 0x900 for sm_90 */
  uint32_t gpcs;           /* graphics processing clusters */
  uint32_t tpcs_per_gpc;   /* chip maximum */
  uint32_t sms_per_tpc;    /* streaming multiprocessors per TPC */
  uint32_t sm_count;       /* multiprocessors that can run work */
  uint32_t warps_per_sm;   /* resident warps per multiprocessor */
  uint64_t memory_bytes;   /* device memory allocations draw from (the driver's heap) */
  char driver_version[32]; /* "580.159.04" */
  int open_kernel_module;  /* 1 for NVIDIA's open kernel module, 0 for the proprietary one */
  uint32_t pci_domain, pci_bus, pci_device, pci_function;
  uint32_t compute_class;  /* e.g. 0xcbc0 HOPPER_COMPUTE_A */
  uint32_t copy_class;     /* e.g. 0xc8b5 HOPPER_DMA_COPY_A */
  uint32_t gpfifo_class;   /* e.g. 0xc86f HOPPER_CHANNEL_GPFIFO_A */
  uint32_t usermode_class; /* e.g. 0xc661 HOPPER_USERMODE_A */
  int copy_engine;         /* asynchronous copy engine the copies use; -1: the graphics group's */
  double open_ms;          /* time nvhcq_device_open took */
  /* Added after the first 0.2 layout (a smaller struct_size leaves them out): */
  uint32_t l2_bytes;         /* L2 cache as the driver reports it; 0 if it does not */
  uint32_t memory_bus_width; /* bits, as the driver reports it; 0 if it does not */
  uint32_t shared_per_sm;    /* bytes of shared memory an SM has at its largest configuration */
  uint32_t shared_per_block; /* the most one block may use (CUDA's opt-in limit) */
  uint32_t blocks_per_sm;    /* resident blocks per SM, at most */
  uint32_t reserved2;        /* 0 */
  /* Added with the background registration with UVM (see nvhcq_device_attach_uvm): */
  int uvm_attached;     /* 1 in UVM's address space (fast fault reports, peers), 0 in RM's */
  uint32_t preemption;  /* NVHCQ_OPEN_PREEMPT_BLOCK or _GRID: when the driver may switch this
                           device's grids out for another process's work (see the open options) */
  double uvm_attach_ms; /* how long registering with UVM took (behind the open, or during it) */
  double uvm_move_ms;   /* how long the move onto UVM's address space held up a submission */
  /* Added with the PCI IDs: */
  uint32_t pci_id;           /* (device ID << 16) | vendor ID, 0x233510de for an H200 SXM */
  uint32_t pci_subsystem_id; /* (subsystem ID << 16) | subsystem vendor ID; 0 if RM gives none */
} nvhcq_device_info;

/* Number of GPUs visible to this process, after CUDA_VISIBLE_DEVICES and NVHCQ_VISIBLE_DEVICES.
 * Visible order: the driver's probe order (PCI order, as /dev/nvidiaN and nvidia-smi number them)
 * unless a visible-devices list reorders it; that list names indexes or "GPU-" UUIDs (prefixes
 * allowed) and ends at its first invalid or repeated entry, as CUDA's does. */
NVHCQ_API nvhcq_status nvhcq_device_count(int *count);
/* Opens visible GPU `index`: driver client, address space, a compute and a copy channel. Each open
 * is a device of its own: several GPUs (or one GPU twice) may be open at once, each with its own
 * channels, memory and faults. */
NVHCQ_API nvhcq_status nvhcq_device_open(int index, nvhcq_device **out);
/* How nvhcq_device_open_with opens a device. UVM: NVHCQ_OPEN_UVM_DEFAULT takes NVHCQ_UVM (else
 * background); NVHCQ_OPEN_UVM_BACKGROUND opens in RM's address space and moves onto UVM's once a
 * thread has registered the GPU (see nvhcq_device_attach_uvm); NVHCQ_OPEN_UVM_EAGER registers
 * while opening (~100 ms more, no move later); NVHCQ_OPEN_UVM_OFF never registers. NVHCQ_UVM,
 * when set, wins over what the code asks (a user can still choose for a program). */
#define NVHCQ_OPEN_UVM_DEFAULT    0u
#define NVHCQ_OPEN_UVM_BACKGROUND 1u
#define NVHCQ_OPEN_UVM_EAGER      2u
#define NVHCQ_OPEN_UVM_OFF        3u
/* Preemption: when the GPU may switch from this device's work to another process's (a GPU runs
 * one process's grids at a time, switching between processes that have work every few
 * milliseconds). NVHCQ_OPEN_PREEMPT_BLOCK (the default) switches between two blocks of a running
 * grid: a long grid of short blocks no longer holds other processes' work, or their CUDA or
 * nvhcq start, until it ends. NVHCQ_OPEN_PREEMPT_GRID switches only once the running grid has
 * ended (the driver's default, and nvhcq's before 0.2.x). A single block that runs for seconds
 * holds the GPU either way: libcuda can preempt inside a block, with a trap handler of its own
 * that nvhcq does not have. NVHCQ_OPEN_PREEMPT_DEFAULT takes NVHCQ_PREEMPTION=block|grid, else
 * block; NVHCQ_PREEMPTION, when set, wins over what the code asks. */
#define NVHCQ_OPEN_PREEMPT_DEFAULT 0u
#define NVHCQ_OPEN_PREEMPT_BLOCK   1u
#define NVHCQ_OPEN_PREEMPT_GRID    2u
typedef struct nvhcq_open_options {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_open_options) */
  uint32_t uvm;         /* NVHCQ_OPEN_UVM_* */
  /* Added with block-level preemption (0 in a struct of the earlier size): */
  uint32_t preemption; /* NVHCQ_OPEN_PREEMPT_* */
  uint32_t reserved;   /* 0 */
} nvhcq_open_options;
/* nvhcq_device_open with options; NULL options are the defaults. */
NVHCQ_API nvhcq_status nvhcq_device_open_with(int index, const nvhcq_open_options *options,
                                              nvhcq_device **out);
/* Opens the visible GPU whose UUID is `uuid`: "GPU-xxxxxxxx-..." as nvhcq_device_info.uuid_string
 * and nvidia-smi -L write it, or a unique prefix of it. */
NVHCQ_API nvhcq_status nvhcq_device_open_uuid(const char *uuid, nvhcq_device **out);
/* *can = 1 if kernels and copies on `a` can read and write `b`'s device memory directly (the
 * driver reports a P2P path between the two GPUs: NVLink or PCIe, reads and writes). */
NVHCQ_API nvhcq_status nvhcq_device_can_access_peer(nvhcq_device *a, nvhcq_device *b, int *can);
/* Maps `b`'s buffers, those made so far and later, into `a`'s address space at their own
 * addresses, so that kernels and copies on `a` use them directly; cross-device
 * nvhcq_buffer_copy then runs on the copy engine. Needs UVM (not NVHCQ_UVM=off) and a P2P path.
 * One direction: enable (b, a) too for both. Use neither device from another thread meanwhile.
 * Lasts until either device closes; a buffer of b destroyed while a still uses it is an error. */
NVHCQ_API nvhcq_status nvhcq_device_enable_peer(nvhcq_device *a, nvhcq_device *b);
/* Waits for outstanding work (bounded by the timeout), releases the memory and channels, and
 * leaves the slow driver calls (UVM's unregistration, freeing the client, closing the fds) to a
 * background thread, joined by the next open of the same GPU, nvhcq_device_close_wait or the
 * process's exit. NVHCQ_CLOSE=wait makes it wait as nvhcq_device_close_wait does. NULL is fine. */
NVHCQ_API nvhcq_status nvhcq_device_close(nvhcq_device *dev);
/* nvhcq_device_close, then waits until everything of this GPU's closes so far is released (fds
 * closed, driver objects freed). NULL: waits for every GPU's. */
NVHCQ_API nvhcq_status nvhcq_device_close_wait(nvhcq_device *dev);
/* A device opens in RM's own address space and is registered with UVM on a background thread
 * meanwhile (UVM's bring-up of a GPU takes ~95 ms); at its first submission after that it moves
 * onto UVM's address space (every buffer keeps its address). This waits for the registration and
 * moves the device now, for code that wants UVM's fast fault reports from the first kernel on,
 * or peer mappings. Nothing to do with NVHCQ_UVM=eager; NVHCQ_ERROR_UNSUPPORTED with
 * NVHCQ_UVM=off; the registration's error (the device stays in RM's space) if it failed. */
NVHCQ_API nvhcq_status nvhcq_device_attach_uvm(nvhcq_device *dev);
/* Fills *info; info->struct_size must be set (see the top of this file). */
NVHCQ_API nvhcq_status nvhcq_device_query_info(const nvhcq_device *dev, nvhcq_device_info *info);
/* The TPC slots a launch's tpc_mask may name (nvhcq_launch_config), bit t of `slots` for slot t,
 * each holding one TPC (sms_per_tpc SMs); `count` (optional) is how many. Slot t of the mask is
 * not simply some GPC's TPC by RM's numbering, so the first call measures which SMs each slot
 * holds (129 short grids, one submission; well under a millisecond on the H200) and the answer is
 * kept. None (count 0) before Hopper, on a build without nvcc (the measurement needs a built-in
 * kernel), or where the measurement did not add up: masked launches are refused there with the
 * reason. Slots g * tpcs_per_gpc to (g + 1) * tpcs_per_gpc - 1 are counted as one GPC when a
 * masked cluster launch must fit one. */
NVHCQ_API nvhcq_status nvhcq_device_query_tpcs(nvhcq_device *dev, uint32_t slots[4],
                                               uint32_t *count);
/* nvhcq_device_query_tpc_sms's slot for the SMs that no bit of the mask confines: a masked grid
 * may run on those too (all zero where every SM answers to a slot). */
#define NVHCQ_TPC_SLOT_NONE 128u
/* The SMs (%smid: bit s of `sms` for SM s) TPC slot `slot` holds, as measured (see
 * nvhcq_device_query_tpcs); all zero for a slot that holds none, or where no slot is offered. */
NVHCQ_API nvhcq_status nvhcq_device_query_tpc_sms(nvhcq_device *dev, uint32_t slot,
                                                  uint32_t sms[8]);
/* The CPU waits until all work submitted on both channels has completed. */
NVHCQ_API nvhcq_status nvhcq_device_cpu_wait_idle(nvhcq_device *dev);
/* Default timeout of waits in milliseconds (NVHCQ_TIMEOUT_MS, else 10000). */
NVHCQ_API nvhcq_status nvhcq_device_set_timeout(nvhcq_device *dev, uint32_t timeout_ms);
/* How a CPU thread waits for this device's GPU work (every wait: signals, queues, reads).
 * AUTO (the default): polls for 2 ms, then polls yielding the core to other runnable threads
 * between looks; the end is seen within microseconds however long the work, and a waiting thread
 * keeps its core busy unless another thread wants it (CUDA's default scheduling does the same).
 * SPIN: polls without yielding. YIELD: yields between looks from the start. BLOCK: polls for
 * 2 ms, then sleeps in growing steps (at most 1 ms, 1/32 of the time waited so far): little CPU,
 * but a long wait ends up to ~3 % late. NVHCQ_WAIT=auto, spin, yield or block sets it at open. */
#define NVHCQ_WAIT_AUTO  0u
#define NVHCQ_WAIT_SPIN  1u
#define NVHCQ_WAIT_YIELD 2u
#define NVHCQ_WAIT_BLOCK 3u
NVHCQ_API nvhcq_status nvhcq_device_set_wait_mode(nvhcq_device *dev, uint32_t mode);
/* After NVHCQ_ERROR_GPU_FAULT or NVHCQ_ERROR_TIMEOUT (or to abandon running work): stops the
 * device's channels and creates new ones. Buffers, modules, signals, queues and graphs stay
 * valid. Work that had not completed is discarded; signals it would have released keep the
 * values they had, and recorded queues count its replays as over. */
NVHCQ_API nvhcq_status nvhcq_device_recover(nvhcq_device *dev);
/* Device memory still free, as the driver counts it, once this GPU's background releases of
 * closed devices are done and destroyed buffers are released (it waits for the work submitted
 * before their destroys). */
NVHCQ_API nvhcq_status nvhcq_device_get_free_memory(nvhcq_device *dev, uint64_t *free_bytes);

/* ---- device printf, assert, malloc and free ---------------------------------------------- */

/* Kernels that call printf, assert, malloc or free load when nvhcq was built with nvcc (its
 * device syscalls are loaded on the first such module). printf output is kept in a FIFO in host
 * memory and printed, in order, when a CPU wait on the device ends (nvhcq_device_cpu_wait_idle,
 * nvhcq_signal_cpu_wait, nvhcq_queue_cpu_wait_idle, nvhcq_kernel_launch_cpu_wait, ...): to
 * stdout, and assertions as CUDA words them to stderr. A failed assert stops its kernel: the wait
 * fails with NVHCQ_ERROR_GPU_FAULT, the fault report (nvhcq_last_error) opening with
 * "device-side assertion failed: " and CUDA's line. */
#define NVHCQ_LIMIT_PRINTF_FIFO_SIZE 1u /* bytes of the printf FIFO (default 1 MiB) */
#define NVHCQ_LIMIT_MALLOC_HEAP_SIZE 2u /* bytes of the device heap (default 8 MiB) */
/* Each limit may be set until the first module that needs it loads (then its memory is made);
 * later, NVHCQ_ERROR_BUSY. The FIFO is 4 KiB to 1 GiB, rounded down to a power of two; the heap
 * up to 64 GiB. */
NVHCQ_API nvhcq_status nvhcq_device_set_limit(nvhcq_device *dev, uint32_t limit, uint64_t value);
NVHCQ_API nvhcq_status nvhcq_device_get_limit(nvhcq_device *dev, uint32_t limit, uint64_t *value);
/* Receives each printed record's text instead of stdout/stderr (is_assert: an assertion's
 * line). Called on the thread whose wait ended, one call at a time per device; it must not call
 * nvhcq on that device. */
typedef void (*nvhcq_print_fn)(void *user, const char *text, size_t length, int is_assert);
/* fn NULL: back to stdout and stderr. */
NVHCQ_API nvhcq_status nvhcq_device_set_print_callback(nvhcq_device *dev, nvhcq_print_fn fn,
                                                       void *user);
/* Prints what kernels have finished writing now, without a wait; *dropped (may be NULL) is the
 * number of printf and assert records lost so far to a full FIFO. */
NVHCQ_API nvhcq_status nvhcq_device_print_flush(nvhcq_device *dev, uint64_t *dropped);

/* ---- memory ----------------------------------------------------------------------------- */

typedef uint32_t nvhcq_memory_kind;
#define NVHCQ_MEMORY_DEVICE        0u /* device memory, GPU only */
#define NVHCQ_MEMORY_DEVICE_MAPPED 1u /* device memory the CPU can also read and write (BAR1) */
#define NVHCQ_MEMORY_HOST          2u /* pinned, cached host memory the GPU reads and writes */
#define NVHCQ_MEMORY_HOST_UNCACHED 3u /* uncached system memory (signals, small shared data) */

typedef struct nvhcq_buffer nvhcq_buffer;

NVHCQ_API nvhcq_status nvhcq_buffer_create(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                                           nvhcq_buffer **out);
/* Pins `size` bytes of the caller's memory at `ptr` (any alignment: whole 4 KiB pages are pinned)
 * and maps them for the GPU at the same addresses, as NVHCQ_MEMORY_HOST: the buffer starts at ptr
 * rounded down to a page (its GPU address and host pointer) and its size reaches ptr + size. The
 * memory must stay mapped while the buffer lives; destroying the buffer unpins it (once the GPU
 * has passed the work submitted before) and never unmaps it. Memory nvhcq allocated is refused. */
NVHCQ_API nvhcq_status nvhcq_buffer_register_host(nvhcq_device *dev, void *ptr, size_t size,
                                                  nvhcq_buffer **out);
/* Destroys a buffer without waiting for the GPU: the handle is dead at once, and the memory and
 * its addresses are released once the GPU has passed the work submitted before this call (on a
 * later allocation, wait, recovery or close). NULL is fine. */
NVHCQ_API nvhcq_status nvhcq_buffer_destroy(nvhcq_buffer *buf);
NVHCQ_API uint64_t nvhcq_buffer_gpu_address(const nvhcq_buffer *buf);
/* CPU pointer, or NULL for NVHCQ_MEMORY_DEVICE. */
NVHCQ_API void *nvhcq_buffer_host_pointer(const nvhcq_buffer *buf);
NVHCQ_API size_t nvhcq_buffer_size(const nvhcq_buffer *buf);

/* ---- physical memory and reserved address ranges (virtual memory management) ------------ */
/* Device memory without addresses (nvhcq_physical) and ranges of GPU addresses without memory
 * (nvhcq_reservation, process-wide, GPU-only: the CPU never maps them). A piece of the one mapped
 * at an address of the other is a buffer of its own (NVHCQ_MEMORY_DEVICE): copies, kernels and
 * every buffer call work on it, and mappings side by side form one contiguous range for the GPU.
 * Sizes, offsets and addresses are multiples of NVHCQ_PHYSICAL_GRANULARITY (2 MiB pages). */
#define NVHCQ_PHYSICAL_GRANULARITY (2u << 20)

typedef struct nvhcq_physical nvhcq_physical;
typedef struct nvhcq_reservation nvhcq_reservation;

NVHCQ_API nvhcq_status nvhcq_physical_create(nvhcq_device *dev, uint64_t size,
                                             nvhcq_physical **out);
/* The handle is dead at once; the memory lives until the last mapping of it is released. Destroy
 * physical memory before closing its device. NULL is fine. */
NVHCQ_API nvhcq_status nvhcq_physical_destroy(nvhcq_physical *p);
NVHCQ_API uint64_t nvhcq_physical_size(const nvhcq_physical *p);
/* Shares physical memory with another process (or another device handle of this one): *fd is a
 * new file descriptor that names `p` (close-on-exec, as all of nvhcq's: clear FD_CLOEXEC for a
 * child to inherit it across exec); hand it over by SCM_RIGHTS or by inheritance and close it
 * when done. nvhcq_physical_import_fd makes, from such a descriptor, a
 * physical memory handle of the same bytes for `dev` (the GPU the memory is on); it works for
 * descriptors from cuMemExportToShareableHandle (POSIX file descriptor) too. The memory lives while
 * any handle or mapping of it, in any process, lives; the descriptor itself need not outlive the
 * import. Imported memory whose size is not a multiple of NVHCQ_PHYSICAL_GRANULARITY is refused. */
NVHCQ_API nvhcq_status nvhcq_physical_export_fd(nvhcq_physical *p, int *fd);
NVHCQ_API nvhcq_status nvhcq_physical_import_fd(nvhcq_device *dev, int fd, nvhcq_physical **out);
/* Sharing a device buffer with other processes of the same user, without file descriptors (as
 * CUDA's cuIpcGetMemHandle does): the handle is 64 bytes to pass by any means (a pipe, a file,
 * shared memory). It names the device allocation the buffer lies in, all of which becomes
 * importable (a small buffer shares the 2 MiB allocation it is a block of), and stays valid while
 * the exporter's buffer lives. nvhcq_physical_import_ipc makes, in the importing process, physical
 * memory of that whole allocation for `dev` (the same GPU), to map with nvhcq_buffer_map_physical;
 * *offset and *size say where the exported buffer lies in it. Handles from NVIDIA's library are
 * not these. */
typedef struct nvhcq_ipc_handle {
  uint8_t bytes[64];
} nvhcq_ipc_handle;
NVHCQ_API nvhcq_status nvhcq_buffer_export_ipc(nvhcq_buffer *buf, nvhcq_ipc_handle *handle);
NVHCQ_API nvhcq_status nvhcq_physical_import_ipc(nvhcq_device *dev, const nvhcq_ipc_handle *handle,
                                                 nvhcq_physical **out, uint64_t *offset,
                                                 uint64_t *size);
/* Reserves `size` bytes of GPU addresses aligned to `alignment` (0: the granularity; else a power
 * of two multiple of it), at `address` if it is not 0 and all of it is free there, elsewhere if
 * not (nvhcq_reservation_gpu_address says where). */
NVHCQ_API nvhcq_status nvhcq_reservation_create(uint64_t size, uint64_t alignment, uint64_t address,
                                                nvhcq_reservation **out);
/* Refused while mappings in it live (mappings destroyed already are waited for). NULL is fine. */
NVHCQ_API nvhcq_status nvhcq_reservation_destroy(nvhcq_reservation *r);
NVHCQ_API uint64_t nvhcq_reservation_gpu_address(const nvhcq_reservation *r);
/* Maps `size` bytes of `p` from `offset` on for p's GPU (read, write, atomics) at `gpu_address`
 * of `r`, where nothing else is mapped, as a new buffer. nvhcq_buffer_destroy unmaps it once the
 * GPU has passed the work submitted before; a new mapping over it waits for that. */
NVHCQ_API nvhcq_status nvhcq_buffer_map_physical(nvhcq_reservation *r, uint64_t gpu_address,
                                                 nvhcq_physical *p, uint64_t offset, uint64_t size,
                                                 nvhcq_buffer **out);

/* ---- copies for users (synchronous: they return when the bytes are in place) ------------- */
/* Copies of 4 MiB and more sleep through most of their expected time (from the best speed seen so
 * far on this device) and spin through the rest: they end on time without a core spinning. */

/* Host memory into a buffer (write), a buffer into host memory (read), buffer to buffer (copy). */
NVHCQ_API nvhcq_status nvhcq_buffer_write(nvhcq_buffer *dst, size_t dst_offset, const void *src,
                                          size_t size);
NVHCQ_API nvhcq_status nvhcq_buffer_read(void *dst, nvhcq_buffer *src, size_t src_offset,
                                         size_t size);
NVHCQ_API nvhcq_status nvhcq_buffer_copy(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                                         size_t src_offset, size_t size);

/* ---- images, texture objects and surface objects (Hopper and later) ---------------------
 * An image is GPU memory in the block-linear layout the texture units read (CUDA's arrays); a
 * texture object samples an image, linear memory or a pitched 2D region through the texture
 * units; a surface object reads and writes an image texel by texel. Kernels take an object's
 * handle where CUDA C takes a cudaTextureObject_t / cudaSurfaceObject_t (tex2D, surf2Dwrite):
 * an object made here works with cubins and PTX built for CUDA's objects. Images are copied to
 * and from buffers and host memory by the calls below; they are synchronous. */
typedef struct nvhcq_image nvhcq_image;
typedef struct nvhcq_texture nvhcq_texture;
typedef struct nvhcq_surface nvhcq_surface;

typedef uint32_t nvhcq_texel_type;
#define NVHCQ_TEXEL_U8  1u
#define NVHCQ_TEXEL_U16 2u
#define NVHCQ_TEXEL_U32 3u
#define NVHCQ_TEXEL_S8  4u
#define NVHCQ_TEXEL_S16 5u
#define NVHCQ_TEXEL_S32 6u
#define NVHCQ_TEXEL_F16 7u
#define NVHCQ_TEXEL_F32 8u

#define NVHCQ_IMAGE_LAYERED 1u /* depth counts layers of a 1D or 2D image */
#define NVHCQ_IMAGE_SURFACE 2u /* surface objects may be made over it */

typedef struct nvhcq_image_desc {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_image_desc) */
  uint32_t width;       /* texels, 1 or more */
  uint32_t height;      /* 0: one-dimensional */
  uint32_t depth;       /* 0: not 3D; with NVHCQ_IMAGE_LAYERED the number of layers */
  nvhcq_texel_type type;
  uint32_t channels; /* 1, 2 or 4 */
  uint32_t flags;    /* NVHCQ_IMAGE_* */
  uint32_t levels;   /* mipmap levels, 1 + floor(log2(largest dim)) at most (16); 0 or 1: none */
} nvhcq_image_desc;

/* A part of an image: texels from (x, y, z) on, width x height x depth of them (rows and slices
 * or layers: 1 where the image has none). */
typedef struct nvhcq_image_region {
  uint32_t x, y, z;
  uint32_t width, height, depth;
} nvhcq_image_region;

NVHCQ_API nvhcq_status nvhcq_image_create(nvhcq_device *dev, const nvhcq_image_desc *desc,
                                          nvhcq_image **out);
/* Refused while texture or surface objects over it (or over its levels) remain. */
NVHCQ_API nvhcq_status nvhcq_image_destroy(nvhcq_image *image);
/* Level `level` of a mipmapped image, as an image of its own (its dims halved `level` times):
 * copies, texture and surface objects take it like any image. It is the image's, goes with it,
 * and is not destroyed by itself. */
NVHCQ_API nvhcq_status nvhcq_image_get_level(nvhcq_image *image, uint32_t level, nvhcq_image **out);
NVHCQ_API nvhcq_status nvhcq_image_get_desc(const nvhcq_image *image, nvhcq_image_desc *desc);
/* GPU memory the image takes, in bytes. */
NVHCQ_API size_t nvhcq_image_size(const nvhcq_image *image);
/* Copies between a region (NULL: all of it) and linear memory whose rows are `pitch` bytes apart
 * and slices `slice_pitch` bytes apart (0: packed). After all earlier work of the device. */
NVHCQ_API nvhcq_status nvhcq_image_copy_from_buffer(nvhcq_image *dst, const nvhcq_image_region *r,
                                                    nvhcq_buffer *src, size_t src_offset,
                                                    size_t pitch, size_t slice_pitch);
NVHCQ_API nvhcq_status nvhcq_image_copy_to_buffer(nvhcq_buffer *dst, size_t dst_offset,
                                                  size_t pitch, size_t slice_pitch,
                                                  nvhcq_image *src, const nvhcq_image_region *r);
NVHCQ_API nvhcq_status nvhcq_image_write(nvhcq_image *dst, const nvhcq_image_region *r,
                                         const void *src, size_t pitch, size_t slice_pitch);
NVHCQ_API nvhcq_status nvhcq_image_read(void *dst, size_t pitch, size_t slice_pitch,
                                        nvhcq_image *src, const nvhcq_image_region *r);
/* Between two images of the same texel size. */
NVHCQ_API nvhcq_status nvhcq_image_copy(nvhcq_image *dst, const nvhcq_image_region *dst_region,
                                        nvhcq_image *src, const nvhcq_image_region *src_region);

typedef uint32_t nvhcq_texture_source;
#define NVHCQ_TEXTURE_IMAGE   0u /* `image` */
#define NVHCQ_TEXTURE_LINEAR  1u /* `width` texels of `buffer` from `offset` (1D, no filtering) */
#define NVHCQ_TEXTURE_PITCH2D 2u /* width x height texels of `buffer`, rows `pitch` apart */

typedef uint32_t nvhcq_address_mode;
#define NVHCQ_ADDRESS_WRAP   0u /* repeat (normalized coordinates only, else clamp) */
#define NVHCQ_ADDRESS_CLAMP  1u /* to the edge texel */
#define NVHCQ_ADDRESS_MIRROR 2u /* (normalized coordinates only, else clamp) */
#define NVHCQ_ADDRESS_BORDER 3u /* the border colour outside */

#define NVHCQ_TEXTURE_LINEAR_FILTER     1u /* linear interpolation, else the nearest texel */
#define NVHCQ_TEXTURE_NORMALIZED_COORDS 2u /* coordinates in [0, 1), else in texels */
#define NVHCQ_TEXTURE_READ_AS_INTEGER   4u /* 8/16-bit integers as such, not as [0,1] / [-1,1] */
#define NVHCQ_TEXTURE_SRGB              8u /* sRGB to linear on read */

/* Between the levels of a mipmapped image (nvhcq_texture_desc.mip_filter). */
#define NVHCQ_MIP_POINT  0u /* the nearest level */
#define NVHCQ_MIP_LINEAR 1u /* linear between the two nearest */

typedef struct nvhcq_texture_desc {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_texture_desc) */
  nvhcq_texture_source source;
  nvhcq_image *image;
  nvhcq_buffer *buffer; /* LINEAR and PITCH2D: offset 256-byte (LINEAR 16-byte) aligned */
  size_t offset, pitch; /* pitch: a multiple of 32 bytes */
  uint32_t width, height;
  nvhcq_texel_type type; /* LINEAR and PITCH2D (an image has its own) */
  uint32_t channels;
  nvhcq_address_mode address[3]; /* per coordinate */
  uint32_t flags;                /* NVHCQ_TEXTURE_* */
  float border[4];               /* RGBA for NVHCQ_ADDRESS_BORDER */
  uint32_t mip_filter;           /* mipmapped images: NVHCQ_MIP_* */
  float lod_bias;                /* added to the level of detail */
  float min_lod, max_lod;        /* its clamps (max_lod = levels - 1 samples every level) */
} nvhcq_texture_desc;

NVHCQ_API nvhcq_status nvhcq_texture_create(nvhcq_device *dev, const nvhcq_texture_desc *desc,
                                            nvhcq_texture **out);
NVHCQ_API nvhcq_status nvhcq_texture_destroy(nvhcq_texture *texture);
/* The 64-bit kernel argument (a cudaTextureObject_t); 0 for NULL. */
NVHCQ_API uint64_t nvhcq_texture_handle(const nvhcq_texture *texture);
/* Over an image made with NVHCQ_IMAGE_SURFACE. */
NVHCQ_API nvhcq_status nvhcq_surface_create(nvhcq_image *image, nvhcq_surface **out);
NVHCQ_API nvhcq_status nvhcq_surface_destroy(nvhcq_surface *surface);
/* The 64-bit kernel argument (a cudaSurfaceObject_t); 0 for NULL. */
NVHCQ_API uint64_t nvhcq_surface_handle(const nvhcq_surface *surface);

/* ---- signals ---------------------------------------------------------------------------- */

/* A 64-bit semaphore in memory both the CPU and GPU see; the GPU also stamps the time. */
typedef struct nvhcq_signal nvhcq_signal;

NVHCQ_API nvhcq_status nvhcq_signal_create(nvhcq_device *dev, uint64_t initial, nvhcq_signal **out);
NVHCQ_API nvhcq_status nvhcq_signal_destroy(nvhcq_signal *sig);
NVHCQ_API uint64_t nvhcq_signal_value(const nvhcq_signal *sig);
NVHCQ_API void nvhcq_signal_set(nvhcq_signal *sig, uint64_t value);
/* GPU time at which the signal was last released by the GPU, in nanoseconds. */
NVHCQ_API uint64_t nvhcq_signal_timestamp_ns(const nvhcq_signal *sig);
/* The CPU waits until value >= `value`. timeout_ms 0 uses the device timeout; running out of it
 * means the GPU is stuck, and the device refuses work until nvhcq_device_recover (a timeout the
 * caller gave leaves the device as it was). Spins for 2 ms, then sleeps in steps of 1/32 of the
 * time waited (at most 1 ms), so a long wait does not burn a core and its end is seen at most about
 * 3% late. */
NVHCQ_API nvhcq_status nvhcq_signal_cpu_wait(nvhcq_signal *sig, uint64_t value,
                                             uint32_t timeout_ms);
NVHCQ_API uint64_t nvhcq_signal_gpu_address(const nvhcq_signal *sig);
/* A signal over 16 bytes of the caller's memory the CPU can read (NVHCQ_MEMORY_HOST or a buffer
 * of nvhcq_buffer_register_host), at `offset` (a multiple of 16): its value, then the GPU's
 * timestamp. Nothing is written: the memory holds the value, so processes that share it (shared
 * memory each registers) wait on and release one semaphore. The buffer must outlive the signal;
 * queues of the buffer's GPU use it. */
NVHCQ_API nvhcq_status nvhcq_signal_create_at(nvhcq_buffer *buf, uint64_t offset,
                                              nvhcq_signal **out);

/* ---- queues: record commands, then submit them to a channel ------------------------------ */

typedef uint32_t nvhcq_queue_kind;
#define NVHCQ_QUEUE_COMPUTE 0u
#define NVHCQ_QUEUE_COPY    1u

typedef struct nvhcq_queue nvhcq_queue;

NVHCQ_API nvhcq_status nvhcq_queue_create(nvhcq_device *dev, nvhcq_queue_kind kind,
                                          nvhcq_queue **out);
NVHCQ_API nvhcq_status nvhcq_queue_destroy(nvhcq_queue *q);
/* Forgets recorded commands so the queue can be recorded again. */
NVHCQ_API nvhcq_status nvhcq_queue_reset(nvhcq_queue *q);
/* Records a GPU wait: the queue's later commands wait until the signal's value >= `value`. The
 * CPU does not wait (nvhcq_signal_cpu_wait does). */
NVHCQ_API nvhcq_status nvhcq_queue_gpu_wait(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value);
/* GPU sets the signal to `value` (and its timestamp) once earlier commands completed. */
NVHCQ_API nvhcq_status nvhcq_queue_signal(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value);
/* Conditions of nvhcq_queue_gpu_wait_value on the value at the address (v) and `value`, with
 * NVHCQ_VALUE_64BIT or'ed in for a 64-bit value (else 32 bits). */
#define NVHCQ_WAIT_GEQ    0u /* (int32_t)(v - value) >= 0 (int64_t for 64 bits): wraps around */
#define NVHCQ_WAIT_EQ     1u /* v == value */
#define NVHCQ_WAIT_AND    2u /* (v & value) != 0 */
#define NVHCQ_WAIT_NOR    3u /* ~(v | value) != 0 */
#define NVHCQ_VALUE_64BIT 0x100u
/* Records a GPU wait on memory: the queue's later commands wait until the 32- or 64-bit value at
 * `gpu_address` (4- or 8-byte aligned; device memory or host memory the GPU maps) satisfies the
 * condition in `flags`. The CPU does not wait; a wait that never ends shows as a timeout of the
 * CPU waits behind it. */
NVHCQ_API nvhcq_status nvhcq_queue_gpu_wait_value(nvhcq_queue *q, uint64_t gpu_address,
                                                  uint64_t value, uint32_t flags);
/* Records a write of `value` (32 bits, or 64 with flags NVHCQ_VALUE_64BIT) to `gpu_address`
 * (aligned to its size) once the queue's earlier commands have completed, and before its later
 * ones start (compute queues only). */
NVHCQ_API nvhcq_status nvhcq_queue_write_value(nvhcq_queue *q, uint64_t gpu_address, uint64_t value,
                                               uint32_t flags);
/* Copy engine copy between GPU virtual addresses, any size (copy queues only). */
NVHCQ_API nvhcq_status nvhcq_queue_copy(nvhcq_queue *q, uint64_t dst_gpu_address,
                                        uint64_t src_gpu_address, uint64_t size);
/* GPU-side memory barrier on a compute queue: later kernels see earlier writes (caches
 * invalidated). */
NVHCQ_API nvhcq_status nvhcq_queue_memory_barrier(nvhcq_queue *q);
/* Sends the recorded commands to the queue's channel. The queue keeps its commands: submitting
 * again replays them. */
NVHCQ_API nvhcq_status nvhcq_queue_submit(nvhcq_queue *q);

/* ---- modules and kernels ---------------------------------------------------------------- */

typedef struct nvhcq_module nvhcq_module;
typedef struct nvhcq_kernel nvhcq_kernel;

typedef struct nvhcq_dim3 {
  uint32_t x, y, z;
} nvhcq_dim3;

typedef struct nvhcq_kernel_info {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_kernel_info) */
  const char *name;
  uint32_t registers;          /* per thread */
  uint32_t param_size;         /* bytes of arguments the kernel takes */
  uint32_t shared_bytes;       /* static shared memory the kernel declares */
  uint32_t local_bytes;        /* per-thread local memory (stack) the kernel needs */
  uint32_t max_threads;        /* per block, from registers and launch bounds */
  uint32_t max_dynamic_shared; /* bytes of dynamic shared memory a launch may ask for */
  /* Added after the first 0.2 layout (a smaller struct_size leaves them out): */
  uint32_t param_count; /* parameters; nvhcq_kernel_query_param describes each */
  nvhcq_dim3 cluster;   /* blocks per cluster fixed at compile time (__cluster_dims__), or 0s */
  uint32_t max_cluster_blocks; /* a cluster-size bound from __launch_bounds__'s third value, or 0 */
  uint32_t constant_bytes; /* the module's __constant__ memory (constant bank 3), every kernel */
  uint32_t ptx_sm; /* the PTX target the code was assembled from (80: compute_80), else the SM */
} nvhcq_kernel_info;

/* Loads a cubin (ELF) built for this GPU's architecture. The image may be freed afterwards. */
NVHCQ_API nvhcq_status nvhcq_module_load(nvhcq_device *dev, const void *image, size_t size,
                                         nvhcq_module **out);
NVHCQ_API nvhcq_status nvhcq_module_load_file(nvhcq_device *dev, const char *path,
                                              nvhcq_module **out);
/* Frees the module and its kernels without waiting for the GPU; their code stays in GPU memory
 * until the GPU has passed the work submitted before this call. NULL is fine. */
NVHCQ_API nvhcq_status nvhcq_module_unload(nvhcq_module *mod);
NVHCQ_API uint32_t nvhcq_module_kernel_count(const nvhcq_module *mod);
NVHCQ_API const char *nvhcq_module_kernel_name(const nvhcq_module *mod, uint32_t index);
NVHCQ_API nvhcq_status nvhcq_module_get_kernel(nvhcq_module *mod, const char *name,
                                               nvhcq_kernel **out);
/* A module-scope __device__ or __constant__ variable: its GPU address and size. */
NVHCQ_API nvhcq_status nvhcq_module_get_global(nvhcq_module *mod, const char *name,
                                               uint64_t *gpu_address, size_t *size);
/* Fills *info; info->struct_size must be set. */
NVHCQ_API nvhcq_status nvhcq_kernel_query_info(const nvhcq_kernel *k, nvhcq_kernel_info *info);

/* What stops an SM from holding more blocks of a launch shape. */
#define NVHCQ_LIMIT_WARPS     1u /* resident threads (warps) per SM */
#define NVHCQ_LIMIT_REGISTERS 2u /* the SM's registers */
#define NVHCQ_LIMIT_BLOCKS    3u /* resident blocks per SM */
#define NVHCQ_LIMIT_SHARED    4u /* shared memory (at the configuration the launch asks for) */

/* The occupancy a launch shape gets and the shared-memory configuration it asks the SMs for.
 * nvhcq picks, for every launch, the smallest configuration that reaches the best occupancy
 * the kernel's threads, registers and shared memory allow (the rest of the SM's 256 KiB stays
 * L1 cache), unless the kernel has a carveout preference. */
typedef struct nvhcq_occupancy {
  uint32_t struct_size;         /* set by the caller: sizeof(nvhcq_occupancy) */
  uint32_t blocks_per_sm;       /* resident blocks */
  uint32_t warps_per_sm;        /* resident warps: blocks x warps per block */
  uint32_t max_warps_per_sm;    /* the SM's limit: warps_per_sm / this is the occupancy */
  uint32_t limiter;             /* NVHCQ_LIMIT_*: what stops more blocks */
  uint32_t shared_per_block;    /* bytes, the 1 KiB system reserve included */
  uint32_t shared_config_bytes; /* configuration asked for */
  uint32_t shared_config_min;   /* the smallest configuration the SMs may run it in */
  uint32_t shared_config_max;   /* the largest */
} nvhcq_occupancy;

/* The occupancy of blocks of `block` threads with `dynamic_shared` bytes, and the configuration
 * launches of that shape ask for (the grid does not change it). out->struct_size must be set. */
NVHCQ_API nvhcq_status nvhcq_kernel_query_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                                    uint32_t dynamic_shared, nvhcq_occupancy *out);

/* Kernel attributes (nvhcq_kernel_set_attribute / _get_attribute). */
/* Shared-memory carveout hint in percent of the largest configuration (0: most L1 cache, 100:
 * most shared memory), or -1 (the default) for the occupancy-driven choice. A hint, as CUDA's
 * preferred carveout is: a launch always gets a configuration that holds one block. */
#define NVHCQ_KERNEL_CARVEOUT_PREFERENCE 1u
/* 1: the kernel may be launched in clusters of up to 16 blocks (CUDA's non-portable cluster
 * size); 0 (the default): up to 8, the size every Hopper GPU runs. */
#define NVHCQ_KERNEL_NON_PORTABLE_CLUSTER 2u
NVHCQ_API nvhcq_status nvhcq_kernel_set_attribute(nvhcq_kernel *k, uint32_t attribute,
                                                  int64_t value);
NVHCQ_API nvhcq_status nvhcq_kernel_get_attribute(const nvhcq_kernel *k, uint32_t attribute,
                                                  int64_t *value);

/* Records a launch on a compute queue. `args` is the kernel's parameter block laid out as in C
 * (pointers as 64-bit GPU addresses); `args_size` must equal the kernel's parameter size. The
 * arguments are copied: `args` may be reused at once. Everything is checked before anything is
 * recorded. */
NVHCQ_API nvhcq_status nvhcq_queue_launch(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                          nvhcq_dim3 block, uint32_t dynamic_shared,
                                          const void *args, size_t args_size);
/* Launches, the CPU waits for it, and reports the kernel's GPU time in nanoseconds (gpu_ns may be
 * NULL). */
NVHCQ_API nvhcq_status nvhcq_kernel_launch_cpu_wait(nvhcq_kernel *k, nvhcq_dim3 grid,
                                                    nvhcq_dim3 block, uint32_t dynamic_shared,
                                                    const void *args, size_t args_size,
                                                    uint64_t *gpu_ns);

/* ---- parameters, launch configurations, thread-block clusters -------------------------- */

/* Where a kernel's parameter `index` (0 = first in the C signature) lies in the argument block
 * nvhcq_queue_launch takes: the cubin's own layout (offsets relative to the first parameter's
 * place in constant bank 0, as CUDA's cuFuncGetParamInfo reports them). It equals the layout of
 * a C struct of the parameters except where a parameter needs more than 16-byte alignment
 * (__grid_constant__ tensor maps, __align__(32/64) structs): there the compiler aligns to the
 * bank's address, so use these offsets, or nvhcq_launch_config.arg_pointers. */
typedef struct nvhcq_kernel_param {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_kernel_param) */
  uint32_t offset;      /* bytes into the argument block */
  uint32_t size;        /* bytes */
} nvhcq_kernel_param;
NVHCQ_API nvhcq_status nvhcq_kernel_query_param(const nvhcq_kernel *k, uint32_t index,
                                                nvhcq_kernel_param *out);

/* How a cluster's blocks are spread over the SMs of a GPC (CUDA's cluster scheduling policy). */
#define NVHCQ_CLUSTER_POLICY_DEFAULT        0u /* as SPREAD (what libcuda does by default) */
#define NVHCQ_CLUSTER_POLICY_SPREAD         1u
#define NVHCQ_CLUSTER_POLICY_LOAD_BALANCING 2u

/* Everything about one launch. New fields are added at the end; struct_size says which a caller
 * knows. Zeroed fields mean the default.
 * - cluster: blocks per cluster (x*y*z <= 8, or <= 16 with NVHCQ_KERNEL_NON_PORTABLE_CLUSTER),
 *   each grid dimension a multiple of the cluster's; all zero: the kernel's compiled cluster
 *   (__cluster_dims__) if it has one, else no cluster.
 * - arg_pointers: one pointer per parameter (CUDA's kernelParams), each read for that
 *   parameter's size; then `args` must be NULL. Launches any kernel without knowing its layout.
 * - tpc_mask: the TPCs (two SMs each) the grid's blocks may run on, 4 words, bit t for TPC slot t
 *   (see nvhcq_device_query_tpcs); NULL: all. Hopper and later (QMD version 4 or 5); a cluster
 *   must fit one GPC's enabled SMs. Disjoint masks keep two queues' grids on disjoint SMs (CUDA's
 *   green contexts). */
typedef struct nvhcq_launch_config {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_launch_config) */
  nvhcq_dim3 grid;      /* blocks, not clusters */
  nvhcq_dim3 block;     /* threads */
  uint32_t dynamic_shared;
  /* blocks per cluster, see above; zeros: the kernel's compiled cluster, else none */
  nvhcq_dim3 cluster;
  uint32_t cluster_policy;         /* NVHCQ_CLUSTER_POLICY_* */
  const void *const *arg_pointers; /* optional: one pointer per parameter, see above */
  uint32_t flags;                  /* NVHCQ_LAUNCH_*; read when struct_size covers it */
  const uint32_t *tpc_mask;        /* optional: see above; read when struct_size covers it */
} nvhcq_launch_config;

/* A cooperative launch: every block of the grid is resident at once (the launch is refused with
 * NVHCQ_ERROR_LAUNCH_CHECK when the GPU cannot hold them: nvhcq_kernel_query_occupancy's blocks
 * per SM times the SMs), and cooperative_groups' this_grid() is valid: grid.sync() waits for
 * every block (CUDA's cuLaunchCooperativeKernel). */
#define NVHCQ_LAUNCH_COOPERATIVE 1u

/* nvhcq_queue_launch with a configuration: clusters, per-parameter arguments. `args`/`args_size`
 * as for nvhcq_queue_launch (args_size may include a C struct's trailing padding). */
NVHCQ_API nvhcq_status nvhcq_queue_launch_ex(nvhcq_queue *q, nvhcq_kernel *k,
                                             const nvhcq_launch_config *config, const void *args,
                                             size_t args_size);

/* The most clusters of `config`'s shape that can be resident on the GPU at once (CUDA's
 * cuOccupancyMaxActiveClusters); the grid in `config` is ignored. */
NVHCQ_API nvhcq_status nvhcq_kernel_query_max_clusters(const nvhcq_kernel *k,
                                                       const nvhcq_launch_config *config,
                                                       uint32_t *clusters);

/* ---- TMA tensor maps (Hopper and later) ------------------------------------------------- */

/* The 128-byte descriptor cp.async.bulk.tensor reads: pass it by value as a __grid_constant__
 * kernel parameter (CUtensorMap), or copy it to GPU memory aligned to 64 bytes. */
typedef struct nvhcq_tensor_map {
  _Alignas(64) uint8_t bytes[128];
} nvhcq_tensor_map;

/* Element types: the same numbers as CUDA's CUtensorMapDataType. */
#define NVHCQ_TENSOR_UINT8        0u
#define NVHCQ_TENSOR_UINT16       1u
#define NVHCQ_TENSOR_UINT32       2u
#define NVHCQ_TENSOR_INT32        3u
#define NVHCQ_TENSOR_UINT64       4u
#define NVHCQ_TENSOR_INT64        5u
#define NVHCQ_TENSOR_FLOAT16      6u
#define NVHCQ_TENSOR_FLOAT32      7u
#define NVHCQ_TENSOR_FLOAT64      8u
#define NVHCQ_TENSOR_BFLOAT16     9u
#define NVHCQ_TENSOR_FLOAT32_FTZ  10u
#define NVHCQ_TENSOR_TFLOAT32     11u
#define NVHCQ_TENSOR_TFLOAT32_FTZ 12u
/* Interleave, swizzle, L2 promotion and out-of-bounds fill: CUDA's numbers too. */
#define NVHCQ_TENSOR_INTERLEAVE_NONE 0u
#define NVHCQ_TENSOR_INTERLEAVE_16B  1u
#define NVHCQ_TENSOR_INTERLEAVE_32B  2u
#define NVHCQ_TENSOR_SWIZZLE_NONE    0u
#define NVHCQ_TENSOR_SWIZZLE_32B     1u
#define NVHCQ_TENSOR_SWIZZLE_64B     2u
#define NVHCQ_TENSOR_SWIZZLE_128B    3u
#define NVHCQ_TENSOR_L2_NONE         0u
#define NVHCQ_TENSOR_L2_64B          1u
#define NVHCQ_TENSOR_L2_128B         2u
#define NVHCQ_TENSOR_L2_256B         3u
#define NVHCQ_TENSOR_OOB_ZERO        0u
#define NVHCQ_TENSOR_OOB_NAN         1u /* NaN (floating-point types only) */

/* A tiled tensor map (CUDA's cuTensorMapEncodeTiled). Arrays run from the innermost dimension. */
typedef struct nvhcq_tensor_tiled {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_tensor_tiled) */
  uint32_t dtype;       /* NVHCQ_TENSOR_* */
  uint32_t rank;        /* 1..5 (3..5 when interleaved) */
  uint32_t reserved;    /* 0 */
  uint64_t address;     /* GPU address, 16-byte aligned (32 with 32-byte interleave) */
  uint64_t dims[5];     /* elements, 1..2^32 */
  uint64_t strides[4];  /* bytes between consecutive indices of dims 1..rank-1: multiples of 16 */
  uint32_t box[5];      /* the tile, 1..256 elements each; box[0] x element size a multiple of 16 */
  uint32_t element_strides[5]; /* 1..8 each (1: every element) */
  uint32_t interleave, swizzle, l2_promotion, oob_fill;
} nvhcq_tensor_tiled;

/* An im2col tensor map (CUDA's cuTensorMapEncodeIm2col), rank 3..5: dims[0] channels, then the
 * spatial dimensions, then the batch. Interleaved im2col maps are refused: nvhcq does not know
 * all of libcuda's rules for them. */
typedef struct nvhcq_tensor_im2col {
  uint32_t struct_size; /* set by the caller: sizeof(nvhcq_tensor_im2col) */
  uint32_t dtype, rank, reserved;
  uint64_t address;
  uint64_t dims[5];
  uint64_t strides[4];
  int32_t lower[3], upper[3]; /* the window's corners per spatial dimension */
  uint32_t channels;          /* per pixel: 1..256, times the element size a multiple of 16 */
  uint32_t pixels;            /* per column: 1..1024 */
  uint32_t element_strides[5];
  uint32_t interleave, swizzle, l2_promotion, oob_fill;
} nvhcq_tensor_im2col;

/* Encode a descriptor byte for byte as libcuda does (checked against cuTensorMapEncodeTiled and
 * cuTensorMapEncodeIm2col on an H200). Invalid input is refused with the rule it breaks, where
 * libcuda refuses it; *map is left untouched then. */
NVHCQ_API nvhcq_status nvhcq_tensor_map_encode_tiled(nvhcq_tensor_map *map,
                                                     const nvhcq_tensor_tiled *desc);
NVHCQ_API nvhcq_status nvhcq_tensor_map_encode_im2col(nvhcq_tensor_map *map,
                                                      const nvhcq_tensor_im2col *desc);
/* Points an encoded map (either form) at another tensor of the same shape: `address` must have the
 * alignment encoding asks (16 bytes, 32 with 32-byte interleave); the rest stays as encoded (CUDA's
 * cuTensorMapReplaceAddress). *map is left untouched when the address is refused. */
NVHCQ_API nvhcq_status nvhcq_tensor_map_replace_address(nvhcq_tensor_map *map, uint64_t address);

/* ---- recorded queues and variables ------------------------------------------------------
 *
 * A recorded queue keeps its commands, kernel arguments and QMDs in GPU memory of its own, so it
 * can be replayed any number of times with one submission. Values left open as variables
 * (launch dimensions, scalar or pointer arguments, copy addresses and sizes, signal and wait
 * values) are patched in place by nvhcq_queue_set_var before a replay. Record with the usual
 * calls and the *_vars variants below, then nvhcq_queue_finish; after that only set_var and
 * submit are allowed (reset starts over). Variables may change only once earlier replays have
 * completed (NVHCQ_ERROR_BUSY otherwise); replaying again without changing them is fine. */

typedef uint32_t nvhcq_var;
#define NVHCQ_NO_VAR 0xffffffffu

NVHCQ_API nvhcq_status nvhcq_queue_create_recorded(nvhcq_device *dev, nvhcq_queue_kind kind,
                                                   nvhcq_queue **out);
/* A new variable of a recorded queue, with its value for the first replay. */
NVHCQ_API nvhcq_status nvhcq_queue_var(nvhcq_queue *q, const char *name, uint64_t value,
                                       nvhcq_var *out);
NVHCQ_API nvhcq_status nvhcq_queue_set_var(nvhcq_queue *q, nvhcq_var var, uint64_t value);
/* Uploads the recorded commands; the queue can then be submitted (replayed) repeatedly. */
NVHCQ_API nvhcq_status nvhcq_queue_finish(nvhcq_queue *q);
/* The CPU waits until every replay submitted so far has completed; for an eager queue, until
 * everything submitted through it has (and whatever else went into its channel before). */
NVHCQ_API nvhcq_status nvhcq_queue_cpu_wait_idle(nvhcq_queue *q, uint32_t timeout_ms);

/* An argument bound to a variable: `size` bytes (4 or 8) at byte `offset` of the argument block
 * receive the variable's value plus `add` (e.g. a buffer's address plus an offset). */
typedef struct nvhcq_arg_var {
  uint32_t offset, size;
  nvhcq_var var;
  int64_t add;
} nvhcq_arg_var;

typedef struct nvhcq_launch_vars {
  nvhcq_var grid[3], block[3]; /* NVHCQ_NO_VAR where fixed */
  uint32_t arg_count;
  const nvhcq_arg_var *args;
} nvhcq_launch_vars;

NVHCQ_API nvhcq_status nvhcq_queue_launch_vars(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_dim3 grid,
                                               nvhcq_dim3 block, uint32_t dynamic_shared,
                                               const void *args, size_t args_size,
                                               const nvhcq_launch_vars *vars);
/* A copy whose destination, source or size come from variables. It is one piece: its size, given
 * or from a variable, is 1 byte to 2^31 - 1 bytes (2 GiB - 1). */
NVHCQ_API nvhcq_status nvhcq_queue_copy_vars(nvhcq_queue *q, uint64_t dst, uint64_t src,
                                             uint64_t size, nvhcq_var dst_var, nvhcq_var src_var,
                                             nvhcq_var size_var);
NVHCQ_API nvhcq_status nvhcq_queue_signal_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value);
/* nvhcq_queue_gpu_wait with the value from a variable. */
NVHCQ_API nvhcq_status nvhcq_queue_gpu_wait_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value);

/* ---- graphs: launches and copies with dependencies, across both channels ----------------
 *
 * Nodes are added in an order that respects their dependencies (a node depends only on nodes
 * added before it). Instantiating turns the graph into one recorded compute queue and one
 * recorded copy queue that wait for each other through signals where an edge crosses channels.
 * Graph variables work as queue variables do. */

typedef struct nvhcq_graph nvhcq_graph;
typedef uint32_t nvhcq_node;

NVHCQ_API nvhcq_status nvhcq_graph_create(nvhcq_device *dev, nvhcq_graph **out);
NVHCQ_API nvhcq_status nvhcq_graph_destroy(nvhcq_graph *g);
NVHCQ_API nvhcq_status nvhcq_graph_var(nvhcq_graph *g, const char *name, uint64_t value,
                                       nvhcq_var *out);
NVHCQ_API nvhcq_status nvhcq_graph_add_launch(nvhcq_graph *g, nvhcq_kernel *k, nvhcq_dim3 grid,
                                              nvhcq_dim3 block, uint32_t dynamic_shared,
                                              const void *args, size_t args_size,
                                              const nvhcq_launch_vars *vars, const nvhcq_node *deps,
                                              uint32_t dep_count, nvhcq_node *out);
/* A launch with a configuration (clusters, cooperative, a TPC mask: see nvhcq_launch_config),
 * recorded as given: without variables, its arguments one block (not arg_pointers). */
NVHCQ_API nvhcq_status nvhcq_graph_add_launch_ex(nvhcq_graph *g, nvhcq_kernel *k,
                                                 const nvhcq_launch_config *config,
                                                 const void *args, size_t args_size,
                                                 const nvhcq_node *deps, uint32_t dep_count,
                                                 nvhcq_node *out);
NVHCQ_API nvhcq_status nvhcq_graph_add_copy(nvhcq_graph *g, uint64_t dst, uint64_t src,
                                            uint64_t size, nvhcq_var dst_var, nvhcq_var src_var,
                                            nvhcq_var size_var, const nvhcq_node *deps,
                                            uint32_t dep_count, nvhcq_node *out);
NVHCQ_API nvhcq_status nvhcq_graph_instantiate(nvhcq_graph *g);
NVHCQ_API nvhcq_status nvhcq_graph_set_var(nvhcq_graph *g, nvhcq_var var, uint64_t value);
/* Replays the graph; NVHCQ_ERROR_BUSY while the previous replay is still running. */
NVHCQ_API nvhcq_status nvhcq_graph_launch(nvhcq_graph *g);
/* The CPU waits until the last replay has completed. */
NVHCQ_API nvhcq_status nvhcq_graph_cpu_wait(nvhcq_graph *g, uint32_t timeout_ms);

/* ---- compiling at run time ------------------------------------------------------------- */

typedef uint32_t nvhcq_source_kind;
#define NVHCQ_SOURCE_UNKNOWN 0u
#define NVHCQ_SOURCE_CUBIN   1u /* an ELF image */
#define NVHCQ_SOURCE_PTX     2u /* PTX assembly (.version / .target directives) */
#define NVHCQ_SOURCE_CUDA    3u /* CUDA C++ */

/* What a buffer holds, judged by its content. */
NVHCQ_API nvhcq_source_kind nvhcq_source_detect(const void *data, size_t size);

/* Compiles CUDA C (through NVRTC) or PTX (through nvJitLink) into a cubin for `arch` ("sm_90",
 * "sm_90a"; Hopper-only instructions need the "a" form, which is chosen by itself when the source
 * needs it). `options` go to the compiler as they are. A cubin is returned as it is. Results are
 * cached on disk ($XDG_CACHE_HOME/nvhcq or ~/.cache/nvhcq; NVHCQ_CACHE=0 turns that off). The
 * compilers are loaded when first needed: NVHCQ_NVRTC / NVHCQ_NVJITLINK name the libraries,
 * else CUDA_PATH, CUDA_HOME, /usr/local/cuda*, and the loader path are searched. Free *binary
 * with nvhcq_binary_destroy. */
NVHCQ_API nvhcq_status nvhcq_binary_compile(const void *source, size_t size, const char *arch,
                                            const char *const *options, int num_options,
                                            void **binary, size_t *binary_size);
NVHCQ_API void nvhcq_binary_destroy(void *binary);
/* Loads a cubin, PTX or CUDA C module, compiling for the device's architecture as needed. */
NVHCQ_API nvhcq_status nvhcq_module_load_any(nvhcq_device *dev, const void *data, size_t size,
                                             const char *const *options, int num_options,
                                             nvhcq_module **out);

/* ---- linking at run time -------------------------------------------------------------
 *
 * Separately compiled device code (relocatable cubins, PTX, fatbins, host objects and libraries
 * holding device code, LTO-IR) linked into one cubin through nvJitLink, loaded as the compilers
 * are (see nvhcq_binary_compile; NVHCQ_NVJITLINK names the library). A linker is used by one
 * thread at a time; different linkers may run at once. Links are not cached. */
typedef struct nvhcq_linker nvhcq_linker;
typedef uint32_t nvhcq_link_input;
#define NVHCQ_LINK_CUBIN   1u /* relocatable or executable cubin (ELF) */
#define NVHCQ_LINK_PTX     2u /* PTX text, compiled for the linker's arch */
#define NVHCQ_LINK_LTOIR   3u /* LTO-IR (NVVM); the link needs the "-lto" option */
#define NVHCQ_LINK_FATBIN  4u /* a fatbin: the entry for the arch is taken */
#define NVHCQ_LINK_OBJECT  5u /* a host object file with embedded device code */
#define NVHCQ_LINK_LIBRARY 6u /* a host static library (.a) with embedded device code */

/* Starts a link for `arch` ("sm_90"). `options` are nvJitLink's, passed as they are ("-O3",
 * "-g", "-lineinfo", "-maxrregcount=64", "-lto", "-verbose", "-Xptxas=..."); an -arch among
 * them is refused. NVHCQ_ERROR_NOT_FOUND when nvJitLink is not installed (the message says
 * what to install). */
NVHCQ_API nvhcq_status nvhcq_linker_create(const char *arch, const char *const *options,
                                           int num_options, nvhcq_linker **out);
/* Adds one input (copied; `name` labels it in the logs and may be NULL). PTX that does not
 * compile fails here with NVHCQ_ERROR_COMPILE, the log in the message. */
NVHCQ_API nvhcq_status nvhcq_linker_add(nvhcq_linker *l, nvhcq_link_input kind, const void *data,
                                        size_t size, const char *name);
/* Links what was added; *cubin (owned by the linker, valid until nvhcq_linker_destroy) and *size
 * (may be NULL) give the cubin. Unresolved symbols fail with NVHCQ_ERROR_COMPILE, naming them.
 * A second call returns the same cubin. */
NVHCQ_API nvhcq_status nvhcq_linker_complete(nvhcq_linker *l, const void **cubin, size_t *size);
/* nvJitLink's logs so far (errors; information such as -verbose's), "" when empty; owned by the
 * linker and valid until its next call. */
NVHCQ_API const char *nvhcq_linker_error_log(const nvhcq_linker *l);
NVHCQ_API const char *nvhcq_linker_info_log(const nvhcq_linker *l);
/* NULL is fine; a handle that is not a live linker is refused. */
NVHCQ_API nvhcq_status nvhcq_linker_destroy(nvhcq_linker *l);

/* ---- the timeline profiler ------------------------------------------------------------
 *
 * While it records, every launch, copy, signal and GPU wait recorded on a queue gets GPU
 * timestamps of its start and end (releases the profiler adds around it: a launch's end rides
 * on its QMD; with the profiler off nothing is added), and every submission its host times.
 * nvhcq_profile_stop waits for what was submitted, then writes a Chrome trace-event JSON file
 * (open it in https://ui.perfetto.dev or chrome://tracing; `nvhcq profile --svg` draws it): one
 * track per channel of each GPU and one for the host, kernel names, grid and block, bytes
 * copied and GB/s. NVHCQ_PROFILE=path starts it at the first nvhcq_device_open and writes the
 * trace at each device close and at exit. Call start and stop from the thread that uses the
 * devices (or while none is used). */
NVHCQ_API nvhcq_status nvhcq_profile_start(const char *path);
NVHCQ_API nvhcq_status nvhcq_profile_stop(void);

/* ---- 0.1 names (deprecated) -------------------------------------------------------------
 *
 * Code written for 0.1 compiles against this header and runs unchanged; each 0.1 name warns and
 * says its 0.2 name. The library exports every 0.1 name too, so programs built against 0.1 keep
 * running with this library (SOVERSION 0). The three calls whose structs gained struct_size are
 * inline functions here that set it; the library's own functions of those names fill the 0.1
 * layout, for programs built against 0.1. */

#define NVHCQ_0_1_(new_name) NVHCQ_API NVHCQ_DEPRECATED("use " #new_name)

NVHCQ_0_1_(nvhcq_buffer_create)
nvhcq_status nvhcq_alloc(nvhcq_device *dev, size_t size, nvhcq_memory_kind kind,
                         nvhcq_buffer **out);
NVHCQ_0_1_(nvhcq_buffer_destroy) nvhcq_status nvhcq_free(nvhcq_buffer *buf);
NVHCQ_0_1_(nvhcq_buffer_write)
nvhcq_status nvhcq_copy_to_device(nvhcq_buffer *dst, size_t dst_offset, const void *src,
                                  size_t size);
NVHCQ_0_1_(nvhcq_buffer_read)
nvhcq_status nvhcq_copy_from_device(void *dst, nvhcq_buffer *src, size_t src_offset, size_t size);
NVHCQ_0_1_(nvhcq_buffer_copy)
nvhcq_status nvhcq_copy_device(nvhcq_buffer *dst, size_t dst_offset, nvhcq_buffer *src,
                               size_t src_offset, size_t size);
NVHCQ_0_1_(nvhcq_device_cpu_wait_idle) nvhcq_status nvhcq_device_synchronize(nvhcq_device *dev);
NVHCQ_0_1_(nvhcq_device_get_free_memory)
nvhcq_status nvhcq_device_free_memory(nvhcq_device *dev, uint64_t *free_bytes);
NVHCQ_0_1_(nvhcq_signal_cpu_wait)
nvhcq_status nvhcq_signal_wait(nvhcq_signal *sig, uint64_t value, uint32_t timeout_ms);
NVHCQ_0_1_(nvhcq_queue_gpu_wait)
nvhcq_status nvhcq_queue_wait(nvhcq_queue *q, nvhcq_signal *sig, uint64_t value);
NVHCQ_0_1_(nvhcq_queue_gpu_wait_var)
nvhcq_status nvhcq_queue_wait_var(nvhcq_queue *q, nvhcq_signal *sig, nvhcq_var value);
NVHCQ_0_1_(nvhcq_queue_cpu_wait_idle)
nvhcq_status nvhcq_queue_wait_idle(nvhcq_queue *q, uint32_t timeout_ms);
NVHCQ_0_1_(nvhcq_graph_cpu_wait) nvhcq_status nvhcq_graph_wait(nvhcq_graph *g, uint32_t timeout_ms);
NVHCQ_0_1_(nvhcq_kernel_launch_cpu_wait)
nvhcq_status nvhcq_launch_sync(nvhcq_kernel *k, nvhcq_dim3 grid, nvhcq_dim3 block,
                               uint32_t dynamic_shared, const void *args, size_t args_size,
                               uint64_t *gpu_ns);
NVHCQ_0_1_(nvhcq_source_detect)
nvhcq_source_kind nvhcq_detect_source(const void *data, size_t size);
NVHCQ_0_1_(nvhcq_binary_compile)
nvhcq_status nvhcq_compile(const void *source, size_t size, const char *arch,
                           const char *const *options, int num_options, void **binary,
                           size_t *binary_size);
NVHCQ_0_1_(nvhcq_binary_destroy) void nvhcq_free_binary(void *binary);

/* src/compat.c defines the library's 0.1-layout functions of these names instead. */
#ifndef NVHCQ_COMPAT_DEFINITIONS_
NVHCQ_DEPRECATED("use nvhcq_device_query_info")
static inline nvhcq_status nvhcq_device_get_info(const nvhcq_device *dev, nvhcq_device_info *info) {
  if (info) info->struct_size = (uint32_t)sizeof *info;
  return nvhcq_device_query_info(dev, info);
}
NVHCQ_DEPRECATED("use nvhcq_kernel_query_info")
static inline nvhcq_status nvhcq_kernel_get_info(const nvhcq_kernel *k, nvhcq_kernel_info *info) {
  if (info) info->struct_size = (uint32_t)sizeof *info;
  return nvhcq_kernel_query_info(k, info);
}
NVHCQ_DEPRECATED("use nvhcq_kernel_query_occupancy")
static inline nvhcq_status nvhcq_kernel_get_occupancy(const nvhcq_kernel *k, nvhcq_dim3 block,
                                                      uint32_t dynamic_shared,
                                                      nvhcq_occupancy *out) {
  if (out) out->struct_size = (uint32_t)sizeof *out;
  return nvhcq_kernel_query_occupancy(k, block, dynamic_shared, out);
}
#endif

#ifdef __cplusplus
}
#endif

#endif
