/* QMD: builds compute launch descriptors for QMD versions 03 (Ampere), 04 (Hopper) and
 * 05 (Blackwell) from the bit-range tables in abi/qmd_fields.h.
 *
 * A QMD is an array of nvhcq_qmd_size(v) / 4 little-endian dwords; the caller zeroes it first.
 * Every setter checks that the value fits and that the version has the field, and leaves the
 * QMD unchanged when it refuses. */
#ifndef NVHCQ_QMD_H
#define NVHCQ_QMD_H

#include "abi/qmd_fields.h"
#include "util/error.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef enum {
  NVHCQ_QMD_NONE = 0, /* a compute class older than Ampere */
  NVHCQ_QMD_V03 = 3,
  NVHCQ_QMD_V04 = 4,
  NVHCQ_QMD_V05 = 5,
} nvhcq_qmd_version;

/* The layout a compute class reads, as Mesa NAK chooses it: V05 from 0xcdc0 (Blackwell A),
 * V04 from 0xcbc0 (Hopper), V03 from 0xc6c0 (Ampere), else NVHCQ_QMD_NONE. */
nvhcq_qmd_version nvhcq_qmd_version_for_class(uint32_t compute_class);
/* Bytes of a QMD of this version, 0 for an unknown version. */
size_t nvhcq_qmd_size(nvhcq_qmd_version v);

NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set(nvhcq_qmd_version v, uint32_t *qmd, nvhcq_qmd_field f,
                                            uint64_t value);
/* 0 for a field the version lacks. */
uint64_t nvhcq_qmd_get(nvhcq_qmd_version v, const uint32_t *qmd, nvhcq_qmd_field f);
/* 1 and the inclusive bit range if the version has the field, else 0: lets replay code patch a
 * field in place (byte offset lo / 8). */
int nvhcq_qmd_field_range(nvhcq_qmd_version v, nvhcq_qmd_field f, unsigned *hi, unsigned *lo);
/* NVIDIA's name without our prefix ("REGISTER_COUNT"), or "?" for an unknown field. */
const char *nvhcq_qmd_field_name(nvhcq_qmd_field f);

/* Every field of the version with a nonzero value, NAME=0x..., a few to a line after `indent`. */
void nvhcq_qmd_print(FILE *out, nvhcq_qmd_version v, const uint32_t *qmd, const char *indent);

/* Unchecked access to bits hi..lo (hi - lo < 64) of a dword array; `value` is masked. */
void nvhcq_qmd_write_bits(uint32_t *qmd, unsigned hi, unsigned lo, uint64_t value);
uint64_t nvhcq_qmd_read_bits(const uint32_t *qmd, unsigned hi, unsigned lo);

/* ---- launch helpers: byte addresses and sizes in, per-version encodings out --------------- */

/* `addr` must be aligned to the unit the version stores it in (16 bytes on V05). */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_program_address(nvhcq_qmd_version v, uint32_t *qmd,
                                                            uint64_t addr);
/* Binds constant bank `index` (0..7): address (64-byte aligned on V04/V05), size in bytes
 * (rounded up to the 16-byte unit the QMD counts in) and the valid bit. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_constant_buffer(nvhcq_qmd_version v, uint32_t *qmd,
                                                            unsigned index, uint64_t addr,
                                                            uint32_t size);
/* Makes release slot `slot` (0..2) write the 64-bit `payload` and then a GPU timestamp at
 * addr + 8 (a four-word semaphore) when the grid completes; no reduction. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_release(nvhcq_qmd_version v, uint32_t *qmd,
                                                    unsigned slot, uint64_t addr, uint64_t payload);
/* Shared memory per CTA in bytes (rounded up to the version's unit, 128 bytes on V05) and the
 * L1/shared carve-outs in bytes, each a multiple of 4 KiB with min <= target <= max. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_shared_memory(nvhcq_qmd_version v, uint32_t *qmd,
                                                          uint32_t bytes, uint32_t min_config,
                                                          uint32_t target_config,
                                                          uint32_t max_config);
/* Per-thread local memory (low and high windows) in bytes, rounded up to the version's unit. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_local_memory(nvhcq_qmd_version v, uint32_t *qmd,
                                                         uint32_t low_bytes, uint32_t high_bytes);
/* Chains the QMD at `next_qmd_addr` (256-byte aligned, below 2^40) to start when this one
 * completes: dependent QMD 0, action SCHEDULE, with prefetch. */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_dependent(nvhcq_qmd_version v, uint32_t *qmd,
                                                      uint64_t next_qmd_addr);

/* ---- the per-launch fields, written without checks ---------------------------------------- */

/* Where one version keeps what changes from launch to launch, looked up once per device so a
 * launch writes its fields directly (its values were checked against the kernel and the GPU). */
typedef struct nvhcq_qmd_launch_layout {
  nvhcq_qmd_bits grid[3], block[3], shared, config[3], local_high, cbank_lower, cbank_upper,
      cbank_size, cbank_valid;
  uint8_t shared_shift, local_shift, cbank_shift;
} nvhcq_qmd_launch_layout;

typedef struct nvhcq_qmd_launch {
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;    /* per block, the reserve included */
  uint32_t config_bytes[3]; /* min, target, max shared-memory configuration, multiples of 4 KiB */
  uint32_t local_high_bytes;
  uint64_t cbank0_address; /* aligned to the version's unit */
  uint32_t cbank0_bytes;
} nvhcq_qmd_launch;

/* 0 for a version nvhcq has no layout for. */
int nvhcq_qmd_launch_layout_for(nvhcq_qmd_version v, nvhcq_qmd_launch_layout *out);
/* Writes one launch's fields; the same bits the checked setters above write for these values. */
void nvhcq_qmd_write_launch(const nvhcq_qmd_launch_layout *l, uint32_t *qmd,
                            const nvhcq_qmd_launch *launch);
/* Writes bank 0's address alone (aligned to the version's unit), as nvhcq_qmd_write_launch does. */
void nvhcq_qmd_write_cbank0_address(const nvhcq_qmd_launch_layout *l, uint32_t *qmd,
                                    uint64_t address);

/* The fence a grid runs when it completes (CWD_MEMBAR_TYPE, and on V04/V05 whether the next
 * grid may start while it drains: CWD_MEMBAR_TASK_CHASING_ENABLE). */
typedef enum nvhcq_qmd_fence {
  NVHCQ_FENCE_SYSTEM, /* L1 flush and a system-scope membar: the CPU and other engines see it */
  NVHCQ_FENCE_DEVICE, /* L1 flush and a device-scope membar, with task chasing */
  NVHCQ_FENCE_NONE,   /* no membar: for experiments only (NVHCQ_DEBUG_FENCE=nomembar) */
} nvhcq_qmd_fence;
void nvhcq_qmd_set_fence(nvhcq_qmd_version v, uint32_t *qmd, nvhcq_qmd_fence fence);
/* Makes `qmd` fetch what its successor `next` starts with once it completes: next's program
 * (PROGRAM_PREFETCH with type POST) and next's constant bank 0 (bound to bank slot
 * `spare_bank` with prefetch POST). 0 when the version has no such fields or the slot is in use;
 * the grid's own code was fetched already when it started. */
/* The bank slot the successor's bank 0 is prefetched through: libcuda's graph nodes use 5. */
#define NVHCQ_QMD_SUCCESSOR_BANK 5u
int nvhcq_qmd_prefetch_successor(nvhcq_qmd_version v, uint32_t *qmd, const uint32_t *next,
                                 unsigned spare_bank);
/* Makes `qmd` a grid of clusters of cluster[0] x [1] x [2] blocks (qmd.c says what libcuda
 * writes); `tpc_slots` is the GPU's GPCs x TPCs per GPC (its litter values). */
/* Keeps a grid to the TPC slots set in `enabled` (128 bits): TPC_DISABLE_MASK_VALID with every
 * other slot disabled (V04, V05). */
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_tpc_mask(nvhcq_qmd_version v, uint32_t *qmd,
                                                     const uint32_t enabled[4]);
NVHCQ_MUST_CHECK nvhcq_status nvhcq_qmd_set_cluster(nvhcq_qmd_version v, uint32_t *qmd,
                                                    const uint32_t cluster[3], int load_balancing,
                                                    uint32_t tpc_slots);
/* Copies field f from src to dst (a field the version lacks: nothing). */
void nvhcq_qmd_copy_field(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src,
                          nvhcq_qmd_field f);

/* Copies the dwords that hold the fields chaining changes (dependent QMD, fence, the successor's
 * prefetch) from `src` to `dst`: `dst` is the QMD already in GPU-visible memory. */
void nvhcq_qmd_copy_chain_words(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src);
/* The same for the fields of release `slot` (0..2), after nvhcq_qmd_set_release on `src`; the
 * dwords between them too, which must be equal in both. */
void nvhcq_qmd_copy_release_words(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src,
                                  unsigned slot);

#endif
