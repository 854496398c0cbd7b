/* Modules (uploaded cubins) and their kernels: the QMD template and constant-bank layout each
 * launch starts from. */
#ifndef NVHCQ_MODULE_H
#define NVHCQ_MODULE_H

#include "core/device.h"
#include "hw/elf.h"
#include "hw/qmd.h"

#define NVHCQ_MODULE_MAGIC  0x6e766d64u /* "nvmd" */
#define NVHCQ_KERNEL_MAGIC  0x6e766b6eu /* "nvkn" */
#define NVHCQ_QMD_MAX_WORDS 96

struct nvhcq_kernel {
  uint32_t magic;
  nvhcq_module *module;
  const nvhcq_cubin_kernel *cubin;
  uint32_t qmd[NVHCQ_QMD_MAX_WORDS]; /* template: everything but grid, block, bank 0, shared;
                                        built when the kernel is first looked up */
  int qmd_built;
  uint32_t cbank0_bytes; /* driver words + parameters, rounded to 256 */
  uint32_t local_bytes;  /* per-thread local memory the kernel needs */
  uint32_t max_threads;
  uint32_t static_shared;   /* the cubin's section size */
  uint32_t shared_base;     /* a block's shared memory before dynamic, the 1 KiB reserve included */
  int carveout_preference;  /* NVHCQ_KERNEL_CARVEOUT_PREFERENCE: percent, or -1 for none */
  int non_portable_cluster; /* NVHCQ_KERNEL_NON_PORTABLE_CLUSTER: clusters of up to 16 */
  int cluster_words;        /* launches write the cluster's shape into bank 0 (launch.c) */
  uint32_t args_max;        /* the largest args_size taken: a C struct's trailing padding */
  const char *profile_name; /* the profiler's copy of its name, made at its first profiled launch */
  /* The QMD of its last launch shape (launch.c): a launch of the same shape copies it and writes
   * its own bank 0 address instead of building every field again. */
  struct nvhcq_launch_shape {
    uint32_t grid[3], block[3], cluster[3];
    uint32_t shared, local_high;
    int32_t load_balancing, carveout_preference;
    int32_t masked;
    uint32_t tpc_mask[4];
  } shape;
  int shape_valid;
  uint32_t shape_qmd[NVHCQ_QMD_MAX_WORDS];
};

struct nvhcq_module {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_cubin *cubin;
  nvhcq_arena_slice image; /* code and constants, in the device's module arena */
  uint32_t kernel_count;
  nvhcq_kernel *kernels;
  nvhcq_module *next; /* the device's list of loaded modules */
};

/* The kernel whose code holds GPU address `pc`, or NULL. */
const nvhcq_kernel *nvhcq_module_kernel_at(const nvhcq_device *dev, uint64_t pc);
/* The same as a name and an offset into the kernel's code (0 when no kernel holds it): what the
 * fault reports of the core name kernels through (nvhcq_fault_state.name_pc). */
int nvhcq_module_name_pc(const nvhcq_device *dev, uint64_t pc, const char **kernel,
                         uint64_t *offset);

/* Static shared memory of a block of `k`, the system reserve included (set at load). */
static inline uint32_t nvhcq_kernel_static_shared(const nvhcq_kernel *k) {
  return k->shared_base;
}

/* Shared memory a block of `k` occupies with `dynamic` bytes more: static (the system reserve
 * included) plus dynamic, rounded to the SM's 128-byte unit. */
uint32_t nvhcq_kernel_shared_total(const nvhcq_kernel *k, uint32_t dynamic);

/* Refuses NULL, foreign and stale kernel handles (their module unloaded). */
nvhcq_status nvhcq_kernel_check(const nvhcq_kernel *k) NVHCQ_MUST_CHECK;

#endif
