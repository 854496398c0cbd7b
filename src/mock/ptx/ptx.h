/* A PTX interpreter: parses a PTX module and runs its kernels on the CPU (for the mock GPU). */
#ifndef NVHCQ_MOCK_PTX_H
#define NVHCQ_MOCK_PTX_H

#include <stddef.h>
#include <stdint.h>

typedef struct nvhcq_ptx_module nvhcq_ptx_module;
typedef struct nvhcq_ptx_kernel nvhcq_ptx_kernel;

typedef enum nvhcq_ptx_status {
  NVHCQ_PTX_OK = 0,
  NVHCQ_PTX_PARSE_ERROR, /* module_load: nvhcq_ptx_module_error says where and what */
  NVHCQ_PTX_NOT_FOUND,   /* no kernel or variable of that name */
  NVHCQ_PTX_INVALID,     /* bad arguments (sizes, a NULL pointer, a zero grid) */
  NVHCQ_PTX_NO_MEMORY,   /* a host allocation failed */
  NVHCQ_PTX_FAULT,       /* the kernel faulted: the launch's nvhcq_ptx_fault says how */
  NVHCQ_PTX_UNSUPPORTED, /* the kernel used something the interpreter does not do */
} nvhcq_ptx_status;

typedef enum nvhcq_ptx_fault_kind {
  NVHCQ_PTX_FAULT_NONE = 0,
  NVHCQ_PTX_FAULT_ADDRESS,    /* an access outside any mapping (or outside shared/local/param) */
  NVHCQ_PTX_FAULT_MISALIGNED, /* an access not aligned to its size */
  NVHCQ_PTX_FAULT_TRAP,       /* trap; */
  NVHCQ_PTX_FAULT_DEADLOCK,   /* threads wait at a barrier others never reach */
  NVHCQ_PTX_FAULT_TIMEOUT,    /* the launch ran past its instruction budget (a hung kernel) */
  NVHCQ_PTX_FAULT_UNSUPPORTED /* an instruction form the interpreter does not run */
} nvhcq_ptx_fault_kind;

/* What went wrong in a launch: the first fault of the first faulting thread. */
typedef struct nvhcq_ptx_fault {
  nvhcq_ptx_fault_kind kind;
  uint64_t address;   /* the faulting address (in its state space) */
  int write;          /* 1 for a store or an atomic */
  int line;           /* the PTX line of the instruction */
  uint32_t block[3];  /* %ctaid of the faulting thread */
  uint32_t thread[3]; /* its %tid */
  char what[160];     /* the instruction and the reason, in words */
} nvhcq_ptx_fault;

/* Global memory as the kernel sees it. translate maps [address, address + size) to host memory,
 * or returns NULL to fault; with translate NULL, GPU addresses are host addresses (flat mode).
 * The module's own .global and .const variables are always reachable at their addresses. */
typedef struct nvhcq_ptx_memory {
  void *(*translate)(void *user, uint64_t address, size_t size, int write);
  void *user;
} nvhcq_ptx_memory;

/* A kernel parameter's place in the parameter buffer (the CUDA ABI's layout). */
typedef struct nvhcq_ptx_param {
  size_t offset, size, align;
} nvhcq_ptx_param;

/* Parses PTX text; on failure *out is NULL and, if error is given, it holds "line N: what". */
nvhcq_ptx_status nvhcq_ptx_module_load(const char *ptx_text, size_t len, nvhcq_ptx_module **out,
                                       char *error, size_t error_size);
void nvhcq_ptx_module_free(nvhcq_ptx_module *module);

nvhcq_ptx_status nvhcq_ptx_kernel_find(const nvhcq_ptx_module *module, const char *name,
                                       const nvhcq_ptx_kernel **out);
/* NULL, or why the kernel cannot run ("line N: what": an instruction the interpreter does not
 * know); launching it returns NVHCQ_PTX_UNSUPPORTED. The module's other kernels still run. */
const char *nvhcq_ptx_kernel_unsupported(const nvhcq_ptx_kernel *kernel);
/* The number of parameters, and (when index < count and out is given) one's layout. */
size_t nvhcq_ptx_kernel_param_count(const nvhcq_ptx_kernel *kernel);
nvhcq_ptx_status nvhcq_ptx_kernel_param(const nvhcq_ptx_kernel *kernel, size_t index,
                                        nvhcq_ptx_param *out);
/* The total parameter buffer size (the last parameter's end). */
size_t nvhcq_ptx_kernel_params_size(const nvhcq_ptx_kernel *kernel);
/* Static shared bytes the kernel uses (its own and the module's .shared variables). */
size_t nvhcq_ptx_kernel_static_shared(const nvhcq_ptx_kernel *kernel);

/* A module-scope .global or .const variable: its address (a host address; kernels see it there)
 * and size. */
nvhcq_ptx_status nvhcq_ptx_variable_find(const nvhcq_ptx_module *module, const char *name,
                                         void **address, size_t *size);

/* Moves a module-scope .global or .const variable to `address` in global memory, where a loader
 * put its storage (the mock: where nvhcq uploaded the cubin's). Kernels then reach it there,
 * through the launch's translate, and nvhcq_ptx_variable_find no longer finds it. */
nvhcq_ptx_status nvhcq_ptx_variable_place(nvhcq_ptx_module *module, const char *name,
                                          uint64_t address);

typedef struct nvhcq_ptx_launch_config {
  uint32_t grid[3], block[3]; /* grid: in blocks, also in a cluster launch */
  /* Blocks per cluster (all 0: no cluster; each block is a cluster of one). The grid is a whole
   * number of clusters; a cluster's blocks run together, clusters one after another. */
  uint32_t cluster[3];
  size_t dynamic_shared_bytes;
  const void *params;
  size_t params_size;
  const nvhcq_ptx_memory *memory; /* NULL: flat mode */
  uint64_t max_instructions;      /* per launch, all threads together; 0: no limit */
  /* Read every few thousand instructions when given: nonzero ends the launch with
   * NVHCQ_PTX_FAULT_TIMEOUT (the mock's channel was stopped while its kernel ran). */
  const int *cancel;
  /* The SMs the grid's blocks report as %smid, taken in turn (none given: 0 for all), so that a
   * kernel sees its grid confined to a TPC mask's SMs as on a GPU. */
  const uint16_t *sms;
  uint32_t sm_count;
} nvhcq_ptx_launch_config;

/* Runs the kernel to completion: clusters (or blocks) one after another, the threads of a
 * cluster's blocks cooperatively (each runs until a barrier or warp collective, then the others
 * catch up). On
 * NVHCQ_PTX_FAULT or NVHCQ_PTX_UNSUPPORTED, *fault (if given) says where. */
nvhcq_ptx_status nvhcq_ptx_launch(const nvhcq_ptx_kernel *kernel,
                                  const nvhcq_ptx_launch_config *config, nvhcq_ptx_fault *fault);

#endif
