/* Occupancy: how many blocks of a launch shape fit on one SM, and which shared-memory
 * configuration (carveout) each launch asks the SM for. Pure arithmetic, no device. */
#ifndef NVHCQ_OCCUPANCY_H
#define NVHCQ_OCCUPANCY_H

#include <stdint.h>

#include "nvhcq.h"

#define NVHCQ_RESERVED_SHARED 1024u /* system-reserved shared memory per block, sm_80 and later */
#define NVHCQ_MAX_CARVEOUTS   12

/* An architecture's per-SM limits. Sources: CUDA Programming Guide, "Compute Capabilities"
 * (threads, blocks, registers, shared memory per SM and per block, the carveout lists), and
 * the CUDA occupancy calculator's allocation rules (registers per warp in units of 256, warps
 * placed on 4 sub-partitions of 16 Ki registers; shared memory in units of 128 bytes). */
typedef struct nvhcq_sm_limits {
  uint32_t warps;        /* resident warps per SM */
  uint32_t blocks;       /* resident blocks per SM */
  uint32_t registers;    /* 32-bit registers per SM */
  uint32_t block_shared; /* bytes of shared memory one block may use (without the reserve) */
  uint16_t carveouts[NVHCQ_MAX_CARVEOUTS]; /* KiB, ascending, 0-terminated; 0 KiB not listed */
} nvhcq_sm_limits;

/* The limits of SM version `sm` (RM's encoding: 0x900 for sm_90); `warps`, when nonzero, is the
 * driver's count of resident warps and replaces the table's. */
void nvhcq_sm_limits_for(uint32_t sm, uint32_t warps, nvhcq_sm_limits *out);

/* What one launch shape gets. */
typedef struct nvhcq_carveout_choice {
  uint32_t blocks_per_sm;  /* resident blocks at the chosen configuration */
  uint32_t limiter;        /* nvhcq_occupancy_limiter: what stops more blocks */
  uint32_t min_bytes;      /* the smallest configuration the SM may run it in */
  uint32_t target_bytes;   /* the configuration asked for */
  uint32_t max_bytes;      /* the largest */
  uint32_t fits_one_bytes; /* the smallest configuration one block fits in, 0 if none */
} nvhcq_carveout_choice;

/* Warps of threads using `registers` registers each that the SM's register file holds: each
 * warp takes registers x 32 rounded up to 256, and warps go to 4 sub-partitions. */
uint32_t nvhcq_warps_by_registers(const nvhcq_sm_limits *l, uint32_t registers);

/* Chooses the configuration for blocks of `threads` threads using `registers` each and
 * `shared` bytes of shared memory (the reserve included, rounded to 128). `preference` is the
 * kernel's carveout hint in percent of the largest configuration, or -1 for none. Returns 0
 * when no configuration holds one block.
 *
 * The grid does not cut the choice: a grid that fills each SM with fewer blocks than fit still
 * gets room for all of them, because with chained launches the next grid's blocks start on an
 * SM while the previous grid's last blocks drain (measured on the H200: an elementwise kernel of
 * 1024 blocks, 8 per SM, ran back to back slower in the 8 KiB configuration its grid needs than
 * libcuda with the 16 KiB its occupancy allows; libcuda's QMDs never cut it either). */
int nvhcq_choose_carveout(const nvhcq_sm_limits *l, uint32_t threads, uint32_t registers,
                          uint32_t shared, int preference, nvhcq_carveout_choice *out);

#endif
