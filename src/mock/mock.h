/* The mock GPU behind the driver door: a software H200 (RM, UVM and a command processor per
 * channel) that nvhcq drives through the same calls as the real driver; internal test API. */
#ifndef NVHCQ_MOCK_H
#define NVHCQ_MOCK_H

#include <stddef.h>
#include <stdint.h>

/* What an SM saves when a kernel faults: the warp error code (bits 15:0 of the warp ESR; 0x0f a
 * misaligned address), the global ESR (0x10 a trap), the PC and the address, and whether the
 * access was a write (for MMU faults). */
typedef struct nvhcq_mock_sm_error {
  uint32_t warp_error, global_error;
  uint64_t pc, address;
  int write;
} nvhcq_mock_sm_error;

/* One grid as the command processor read it from its QMD. */
typedef struct nvhcq_mock_grid {
  uint64_t qmd_address;
  uint32_t qmd_version; /* 3, 4 or 5 */
  uint64_t program_address;
  uint32_t grid[3], block[3]; /* grid: in blocks (a cluster launch's QMD counts clusters) */
  uint32_t cluster[3];        /* blocks per cluster (QMD_TYPE GRID_GPC_CGA); 0s: none */
  int tpc_masked;             /* TPC_DISABLE_MASK_VALID: the grid is kept to some TPCs */
  uint32_t tpc_enabled[4];    /* those TPC slots (the disable mask's complement) */
  uint32_t shared_bytes;
  uint32_t local_low_bytes, local_high_bytes;
  uint64_t cbank0_address;
  uint32_t cbank0_bytes;
  uint32_t register_count;
  uint64_t shared_window, local_window; /* from SET_SHADER_*_WINDOW */
  uint64_t local_memory, local_per_tpc; /* from SET_SHADER_LOCAL_MEMORY */
  /* Nonzero (read atomically) once the channel is stopped: a grid still running ends. */
  const int *stop;
  /* Out: on failure, what went wrong (into the channel's fault record and stderr), the GPU
   * address that faulted, if any, and the Xid the channel stops with (13, an SM exception, when
   * left alone; 31 for an MMU fault). */
  char *error;
  size_t error_size;
  uint64_t *fault_address;
  uint32_t *xid;
  nvhcq_mock_sm_error *sm_error;
  /* Injected (nvhcq_mock_gpu_fail mmu_kernel): the grid's first global memory access faults as
   * if its page were unmapped (or, if it makes none, its first instruction fetch). */
  int fault_first_access;
} nvhcq_mock_grid;

/* Runs one grid; 0 on success. The default runs the kernel's PTX (src/mock/kernels.c). */
typedef int (*nvhcq_mock_grid_fn)(const nvhcq_mock_grid *g);
int nvhcq_mock_run_grid(const nvhcq_mock_grid *g);
/* Replaces the grid runner (the PTX interpreter); NULL restores the default. */
void nvhcq_mock_set_grid_hook(nvhcq_mock_grid_fn fn);

/* The mock's record of a module nvhcq loaded (the door's module_loaded): its kernels' code
 * addresses and their PTX, from nvhcq (modules built from PTX or CUDA C) or, for cubins, from the
 * PTX files NVHCQ_MOCK_PTX lists (':'-separated; the first that has every kernel of the cubin). */
void nvhcq_mock_module_loaded(uint64_t gpu_address, const void *cubin, size_t cubin_size,
                              const char *ptx, size_t ptx_size);
void nvhcq_mock_module_unloaded(uint64_t gpu_address);

/* The host memory behind GPU addresses [va, va + len), or NULL if they are not all mapped. */
void *nvhcq_mock_gpu_pointer(uint64_t va, uint64_t len);

/* Puts the mock driver behind the door (and resets its state); uninstall restores the real one.
 * The mock must hold no objects when it is uninstalled. */
void nvhcq_mock_install(void);
void nvhcq_mock_uninstall(void);
/* Installs the mock once if NVHCQ_MOCK is set (and not "0") and the door is still the real one;
 * called where the library first uses the door. */
void nvhcq_mock_install_from_env(void);

/* While held, UVM_UNREGISTER_GPU blocks (up to 10 s, then goes on) until released: lets a test
 * see that nvhcq_device_close returns before the driver's slow calls are done. */
void nvhcq_mock_hold_unregister(int hold);
/* UVM_UNREGISTER_GPU calls blocked by the hold right now. */
int nvhcq_mock_unregisters_held(void);
/* Failure injection: the nth call (from 1, counted from now) named `call` fails as the real
 * driver fails it: RM and UVM calls with NV_ERR_NO_MEMORY in their status, the ioctls that have
 * none, open and mmap with ENOMEM. Names: RM_ALLOC, RM_CONTROL, RM_ALLOC_MEMORY, RM_MAP_MEMORY,
 * RM_FREE, CARD_INFO, REGISTER_FD, UVM_INITIALIZE, UVM_REGISTER_GPU, UVM_REGISTER_GPU_VASPACE,
 * UVM_REGISTER_CHANNEL, UVM_CREATE_EXTERNAL_RANGE, UVM_MAP_EXTERNAL_ALLOCATION, UVM_FREE,
 * UVM_TOOLS_INIT_EVENT_TRACKER, UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS, UVM_UNREGISTER_*, open,
 * mmap; "any" is every call but the teardown ones (frees, unregistrations). nth 0 only counts;
 * call NULL turns it off. NVHCQ_MOCK_FAIL=<call>[:<nth>] (nth 1 when left out) does the same
 * when the mock is installed from the environment. */
void nvhcq_mock_fail(const char *call, uint32_t nth);
/* Calls that matched since nvhcq_mock_fail, and the one that was failed (NULL if none yet). */
uint32_t nvhcq_mock_fail_count(void);
const char *nvhcq_mock_failed_call(void);

/* GPU-side failure injection: what the GPU does wrong, and when. Events:
 *   mmu_kernel      the nth grid faults at its first global memory access (the page counts as
 *                   unmapped): UVM's fault events where the channel's address space is a UVM
 *                   fd's, else (NVHCQ_UVM=off, a device before its move onto UVM) RM's MMU
 *                   fault record, then Xid 31 in the channel's error notifier;
 *   mmu_copy        the nth copy faults writing its destination (UVM's events for a copy engine,
 *                   the channel's fault record, Xid 31);
 *   mmu_address     the nth GPU access (a kernel's, a copy's, a semaphore's or the command
 *                   processor's own) that touches the page holding `address` faults there;
 *   xid_gr          the nth grid stops its channel with Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION: an
 *                   SM reports an out-of-range address; its error registers are saved);
 *   xid_ce          the nth copy stops its channel with its copy engine's Xid (39 for CE0, 41
 *                   for CE2: ROBUST_CHANNEL_CE<n>_ERROR);
 *   doorbell        the nth doorbell is lost: the channel does not look at GP_PUT until a later
 *                   submission moves it or the doorbell is rung again;
 *   doorbell_stuck  from the nth doorbell on, the channel ignores every doorbell (a channel the
 *                   GPU no longer schedules) until it is freed.
 * nth counts from 1 (0 means 1), from this call, over every channel; each injection fires once.
 * NULL turns it off; an unknown event returns -1. */
int nvhcq_mock_gpu_fail(const char *event, uint32_t nth, uint64_t address);
/* The same from "<event>[:<nth>][@<address>]" (NVHCQ_MOCK_GPU_FAIL's form); -1 if malformed. */
int nvhcq_mock_gpu_fail_parse(const char *spec);
/* What the injection did: whether it fired, and for a lost doorbell what got the channel going
 * again (the doorbell rung again, or a later submission's GP_PUT). */
typedef struct nvhcq_mock_injected {
  uint32_t fired, rung_again, later_put;
} nvhcq_mock_injected;
nvhcq_mock_injected nvhcq_mock_gpu_fail_status(void);

/* Live RM objects (clients and everything under them), open mock fds, command-processor
 * threads, UVM ranges and module records: all zero once every device is closed. block_preempted:
 * the live channels whose compute preemption was set to CTA (between blocks). */
typedef struct nvhcq_mock_counts {
  uint32_t objects, fds, channels, ranges, modules, block_preempted;
} nvhcq_mock_counts;
nvhcq_mock_counts nvhcq_mock_live(void);

#endif
