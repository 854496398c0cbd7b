/* The mock GPU behind the driver door: a software H200 (RM, UVM and a command processor per
 * channel) that nvhcq drives through the same calls as the real driver; internal test API. */
#ifndef NVHCQ_MOCK_H
#define NVHCQ_MOCK_H

#include <stddef.h>
#include <stdint.h>

/* One grid as the command processor read it from its QMD. */
typedef struct nvhcq_mock_grid {
  uint64_t qmd_address;
  uint32_t qmd_version; /* 3, 4 or 5 */
  uint64_t program_address;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;
  uint32_t local_low_bytes, local_high_bytes;
  uint64_t cbank0_address;
  uint32_t cbank0_bytes;
  uint32_t register_count;
  uint64_t shared_window, local_window; /* from SET_SHADER_*_WINDOW */
  uint64_t local_memory, local_per_tpc; /* from SET_SHADER_LOCAL_MEMORY */
  /* Out: on failure, what went wrong (into the channel's fault record and stderr) and the GPU
   * address that faulted, if any. */
  char *error;
  size_t error_size;
  uint64_t *fault_address;
} nvhcq_mock_grid;

/* Runs one grid; 0 on success. The default reports that kernels do not run on the mock yet. */
typedef int (*nvhcq_mock_grid_fn)(const nvhcq_mock_grid *g);
int nvhcq_mock_run_grid(const nvhcq_mock_grid *g);
/* Replaces the grid runner (the PTX interpreter); NULL restores the default. */
void nvhcq_mock_set_grid_hook(nvhcq_mock_grid_fn fn);

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

/* Live RM objects (clients and everything under them), open mock fds, command-processor
 * threads and UVM ranges: all zero once every device is closed. */
typedef struct nvhcq_mock_counts {
  uint32_t objects, fds, channels, ranges;
} nvhcq_mock_counts;
nvhcq_mock_counts nvhcq_mock_live(void);

#endif
