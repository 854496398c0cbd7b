/* Cubin (CUDA ELF) parsing: turns the ELF file nvcc/ptxas writes into what a launch needs — one
 * loadable image, its relocations, and per-kernel resources — without libcuda.
 *
 * Layout of the image: every SHF_ALLOC section with file bytes (.text.<k>, .nv.constant<N>[.<k>],
 * .nv.global.init, ...) is placed in section-table order, each at an offset aligned to
 * max(sh_addralign, 128). The NOBITS sections that need device memory (.nv.global) follow, past
 * image_size, up to memory_size. nvhcq_cubin_write_image writes all memory_size bytes straight
 * from the file into device memory (no copy of the image is kept: a module load copies its bytes
 * once). .nv.shared.* and .nv.local.* take no device memory of the image (the launch sizes them).
 * Every offset below is relative to the image start; the GPU address is gpu_base + offset, with
 * gpu_base aligned to at least 4096 bytes (sections may ask for that much).
 *
 * Everything a nvhcq_cubin holds (names included: it keeps copies of the string tables only) is
 * owned by it; the input buffer is read again only by nvhcq_cubin_write_image, and may be freed
 * once that is done or not needed. The structures are read-only for users. */
#ifndef NVHCQ_ELF_H
#define NVHCQ_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Constant banks c[0]..c[17]; 0 is the per-kernel parameter bank the runtime fills. */
#define NVHCQ_CUBIN_MAX_BANKS 18

/* Relocation types (R_CUDA_*) nvhcq applies; r_type numbers as nvdisasm/nvlink name them. Each
 * writes the symbol's address (shifted right, masked) into one or two bit fields at r_offset;
 * elf.c's table has the fields. */
enum {
  NVHCQ_R_CUDA_32 = 1,              /* 32-bit address at +0 */
  NVHCQ_R_CUDA_64 = 2,              /* 64-bit address at +0 */
  NVHCQ_R_CUDA_G32 = 3,             /* 32-bit global address at +0 */
  NVHCQ_R_CUDA_G64 = 4,             /* 64-bit global address at +0 (pointer initialisers) */
  NVHCQ_R_CUDA_FUNC_DESC_32 = 0x22, /* a function's 32-bit address at +0 */
  NVHCQ_R_CUDA_FUNC_DESC_64 = 0x23, /* a function's 64-bit address at +0 (function pointers) */
  NVHCQ_R_CUDA_ABS32_32 = 0x37,     /* 32-bit address into instruction bits 32..63 */
  NVHCQ_R_CUDA_ABS32_LO_32 = 0x38,  /* low 32 bits into instruction bytes +4..+8 */
  NVHCQ_R_CUDA_ABS32_HI_32 = 0x39,  /* high 32 bits into instruction bytes +4..+8 */
  NVHCQ_R_CUDA_32_LO = 0x46,        /* low 32 bits at +0 */
  NVHCQ_R_CUDA_32_HI = 0x47,        /* high 32 bits at +0 */
  NVHCQ_R_CUDA_ABS47_34 = 0x3a,     /* call target before Hopper (sm_7x/8x): 47 bits at bit 34 */
  NVHCQ_R_CUDA_ABS55_16_34 = 0x4b,  /* call target: bits 2..9 at bit 16, bits 10..56 at bit 34 */
  NVHCQ_R_CUDA_8_0 = 0x4c,          /* 0x4c..0x53: byte N/8 of the address at +0 (R_CUDA_8_N) */
  NVHCQ_R_CUDA_G8_0 = 0x54,         /* 0x54..0x5b: the same for global addresses (R_CUDA_G8_N) */
  NVHCQ_R_CUDA_ABS56_16_34 = 0x72,  /* as ABS55_16_34 with 48 bits at bit 34 */
};

/* Undefined functions a cubin may call that the CUDA driver provides at load time (printf,
 * assert, malloc and free compile to calls of these, libcudadevrt's cooperative_groups grid
 * sync to the two __cuda_syscall_CGS_*, and a conditional graph node's condition is set by
 * cudaGraphSetConditional); any other undefined symbol is refused. */
#define NVHCQ_CUBIN_MAX_IMPORTS 7
/* Their names, in the order of nvhcq's own implementations (src/exec/syscalls.cu). */
extern const char *const nvhcq_cubin_syscall_names[NVHCQ_CUBIN_MAX_IMPORTS];
bool nvhcq_cubin_is_syscall(const char *name);

typedef struct nvhcq_cubin_cbank {
  uint32_t bank;   /* N of .nv.constant<N> */
  uint64_t offset; /* in the image */
  uint64_t size;   /* bytes; bind this size at gpu_base + offset */
} nvhcq_cubin_cbank;

/* One kernel parameter (EIATTR_KPARAM_INFO). */
typedef struct nvhcq_cubin_param {
  uint32_t ordinal;   /* position in the C parameter list */
  uint32_t offset;    /* bytes from the kernel's param_offset */
  uint32_t size;      /* bytes */
  uint32_t log_align; /* the pointee's log2 alignment, as ptxas records it (usually 0) */
} nvhcq_cubin_param;

typedef struct nvhcq_cubin_kernel {
  const char *name;
  uint64_t code_offset;   /* entry point in the image */
  uint64_t code_size;     /* the .text section from the entry on, device functions included */
  uint32_t registers;     /* per thread: EIATTR_REGCOUNT, else .text sh_info >> 24 (older cubins) */
  uint32_t max_registers; /* EIATTR_MAXREG_COUNT (__maxnreg__/launch bounds), 0 when absent */
  uint32_t param_offset;  /* first parameter's byte offset in constant bank 0 (EIATTR_PARAM_CBANK;
                             without it, when a kernel has no parameters, bank 0's size) */
  uint32_t param_size;    /* bytes of parameters (EIATTR_PARAM_CBANK) */
  uint32_t cbank_param_size; /* EIATTR_CBANK_PARAM_SIZE (same as param_size in practice) */
  uint32_t param_count;
  nvhcq_cubin_param *params; /* sorted by ordinal */
  uint32_t shared_size;      /* static shared memory: .nv.shared.<name> sh_size. Since CUDA 13 on
                                sm_90+ it includes a 1 KiB reserved window at its start; dynamic
                                shared memory begins at this offset */
  uint32_t frame_size;       /* EIATTR_FRAME_SIZE of the kernel itself */
  uint32_t min_stack_size;   /* per-thread local memory the kernel needs (EIATTR_MIN_STACK_SIZE);
                                0 with recursion, where the runtime must choose a stack size */
  uint32_t max_stack_size;   /* EIATTR_MAX_STACK_SIZE, 0 when absent */
  uint32_t max_threads[3];   /* EIATTR_MAX_THREADS (__launch_bounds__), zeros when absent */
  uint32_t reqntid[3];       /* EIATTR_REQNTID (required block size), zeros when absent */
  uint32_t cluster_dims[3];  /* EIATTR_CTA_PER_CLUSTER (__cluster_dims__), zeros when absent */
  bool explicit_cluster;     /* EIATTR_EXPLICIT_CLUSTER: launches must be in clusters */
  uint32_t max_cluster_rank; /* EIATTR_MAX_CLUSTER_RANK: most blocks per cluster, 0 when absent */
  uint32_t barriers;         /* EIATTR_NUM_BARRIERS, else .text sh_flags bits 20..24 */
  uint32_t cbank0_size;      /* size of this kernel's .nv.constant0 (driver words + parameters) */
  uint32_t imports;          /* bit i: the kernel may call imports[i] (from .nv.callgraph; every
                                bit when a device function between them hides which) */
  uint32_t cbank_count;
  nvhcq_cubin_cbank cbanks[NVHCQ_CUBIN_MAX_BANKS]; /* .nv.constant<N>.<name>, bank 0 included */
} nvhcq_cubin_kernel;

typedef enum nvhcq_cubin_global_kind {
  NVHCQ_CUBIN_GLOBAL_DEVICE = 0, /* __device__: .nv.global (zero-filled) or .nv.global.init */
  NVHCQ_CUBIN_GLOBAL_CONSTANT,   /* __constant__: .nv.constant<bank> (3 for user constants) */
} nvhcq_cubin_global_kind;

/* A module-scope variable (STT_OBJECT symbol in a section with device memory). */
typedef struct nvhcq_cubin_global {
  const char *name;
  const char *section; /* ".nv.constant3", ".nv.global", ".nv.global.init", ... */
  nvhcq_cubin_global_kind kind;
  uint32_t bank;   /* constant bank for NVHCQ_CUBIN_GLOBAL_CONSTANT, else 0 */
  uint64_t offset; /* in the image (>= image_size for zero-filled sections) */
  uint64_t size;
} nvhcq_cubin_global;

/* A device function defined in the cubin (a GLOBAL or LOCAL FUNC that is not a kernel), with
 * what .nv.info records of it. */
typedef struct nvhcq_cubin_function {
  const char *name;
  uint64_t offset;     /* its code in the image */
  uint32_t registers;  /* EIATTR_REGCOUNT */
  uint32_t frame_size; /* EIATTR_FRAME_SIZE: its own stack frame, per thread */
} nvhcq_cubin_function;

/* A section given device memory by the layout. */
typedef struct nvhcq_cubin_section {
  const char *name;
  uint64_t offset;
  uint64_t size;
  uint64_t file_offset; /* of its bytes in the file (sections with data) */
  bool zero_fill;       /* NOBITS: lies past image_size, must be zeroed on the device */
} nvhcq_cubin_section;

/* One relocation to apply after upload: write (gpu_base + symbol_offset + addend) at `offset`. */
typedef struct nvhcq_cubin_reloc {
  uint64_t offset;        /* image offset of r_offset: the patched word or instruction */
  uint64_t symbol_offset; /* image offset of the symbol */
  int64_t addend;         /* RELA addend, or the REL section's implicit addend */
  uint32_t type;          /* NVHCQ_R_CUDA_* */
  int32_t import;         /* index into imports: the symbol is undefined here, symbol_offset 0;
                             -1: the symbol lies in the image */
} nvhcq_cubin_reloc;

typedef struct nvhcq_cubin {
  unsigned sm;          /* target SM from e_flags, e.g. 90 */
  bool arch_specific;   /* an "a" target (sm_90a): runs only on exactly that SM */
  uint64_t file_size;   /* of the parsed file, checked by nvhcq_cubin_write_image */
  uint64_t image_size;  /* bytes of the sections with data, gaps included */
  uint64_t memory_size; /* device bytes to allocate, >= image_size; the tail is zero-filled */
  uint32_t kernel_count;
  uint32_t shared_reserved; /* bytes of the reserved window every kernel's shared_size counts:
                               1 KiB where the file has .nv.shared.reserved.0 (CUDA 13), else 0 */
  unsigned ptx_sm; /* the PTX target the code was assembled from (.note.nv.cuinfo, or e_flags
                     bits 16..23 before ELF ABI 8), else 0 */
  nvhcq_cubin_kernel *kernels;
  const nvhcq_cubin_kernel **kernels_by_name; /* sorted by name, for nvhcq_cubin_find_kernel */
  uint32_t global_count;
  nvhcq_cubin_global *globals;
  uint32_t cbank_count;
  nvhcq_cubin_cbank *cbanks; /* module-wide banks (.nv.constant<N> without a kernel name): bind
                                for every launch, e.g. 3 (__constant__) and 4 (global addresses) */
  uint32_t reloc_count;
  nvhcq_cubin_reloc *relocs;
  uint32_t section_count;
  nvhcq_cubin_section *sections;
  uint32_t import_count; /* undefined functions the relocations name (nvhcq_cubin_is_syscall) */
  const char *imports[NVHCQ_CUBIN_MAX_IMPORTS];
  uint32_t function_count;
  nvhcq_cubin_function *functions;
  nvhcq_cubin_param *param_pool; /* every kernel's params, one allocation */
  char *strings[2]; /* copies of the section-name and symbol-name tables: names point here */
} nvhcq_cubin;

/* Parses a cubin. Every offset and size is checked against the buffer: a truncated or malformed
 * file is NVHCQ_ERROR_INVALID_IMAGE with a message that names the part at fault. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_parse(const void *data, size_t size, nvhcq_cubin **out);
/* The target SM of a cubin (relocatable ones too) and whether it is arch-specific ("a"), from its
 * header and .nv.compat alone. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_arch(const void *data, size_t size, unsigned *sm,
                                               bool *specific);
void nvhcq_cubin_free(nvhcq_cubin *c); /* NULL is fine */

/* NULL when absent; then nvhcq_last_error() names the kernels the cubin does have. */
const nvhcq_cubin_kernel *nvhcq_cubin_find_kernel(const nvhcq_cubin *c, const char *name);
const nvhcq_cubin_global *nvhcq_cubin_find_global(const nvhcq_cubin *c, const char *name);

/* The device function `name`, or NULL. nvlink may rename a function it makes local to
 * name$<n>: that matches `name` too. */
const nvhcq_cubin_function *nvhcq_cubin_find_function(const nvhcq_cubin *c, const char *name);

/* Writes the image (memory_size bytes: the sections' bytes from `data`, the file c was parsed
 * from, and zeros in the gaps and the zero-filled tail) to `dst`, in one ascending pass, so that
 * it may be write-combined device memory. Relocations are not applied. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_write_image(const nvhcq_cubin *c, const void *data,
                                                      size_t size, uint8_t *dst);

/* Applies every relocation to `image` (as nvhcq_cubin_write_image wrote it) for an image that
 * will live at GPU address gpu_base. Idempotent: each write uses only gpu_base and the cubin.
 * A cubin with imports is refused: it needs nvhcq_cubin_relocate_imports. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_relocate(const nvhcq_cubin *c, uint8_t *image,
                                                   uint64_t gpu_base);
/* The same, with import i at GPU address imports[i] (import_count of them). */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_relocate_imports(const nvhcq_cubin *c, uint8_t *image,
                                                           uint64_t gpu_base,
                                                           const uint64_t *imports);

/* Refuses a cubin the GPU cannot run. gpu_sm is major*10+minor (90) or the RM encoding (0x900).
 * CUDA's rule: same major and cubin minor <= GPU minor (sm_80 code runs on sm_86/sm_89); an
 * arch-specific cubin (sm_90a) runs only on exactly its SM. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_cubin_check_arch(const nvhcq_cubin *c, unsigned gpu_sm);

/* RM's SM version (major in bits 15:8, minor in 7:0: 0x809) as the number in its name (89). */
static inline unsigned nvhcq_sm_number(uint32_t rm_sm_version) {
  return (rm_sm_version >> 8) * 10 + (rm_sm_version & 0xff);
}

#endif
