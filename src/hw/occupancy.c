/* Occupancy arithmetic and the shared-memory configuration each launch asks for. */
#include "hw/occupancy.h"

#include <string.h>

#include "util/align.h"

/* Carveouts per architecture (KiB; the Programming Guide's lists less 0, which holds no block). */
static const uint16_t carve_a100[] = {8, 16, 32, 64, 100, 132, 164, 0};
static const uint16_t carve_hopper[] = {8, 16, 32, 64, 100, 132, 164, 196, 228, 0};
static const uint16_t carve_consumer[] = {8, 16, 32, 64, 100, 0};

void nvhcq_sm_limits_for(uint32_t sm, uint32_t warps, nvhcq_sm_limits *out) {
  uint32_t major = sm >> 8, minor = sm & 0xff;
  const uint16_t *carve = carve_consumer;
  memset(out, 0, sizeof *out);
  out->registers = 64 * 1024;
  out->warps = 48, out->blocks = 32, out->block_shared = 99u << 10;
  if (major == 8 && minor == 0) {
    out->warps = 64, out->block_shared = 163u << 10, carve = carve_a100;
  } else if (major == 8) {
    out->blocks = minor == 9 ? 24 : 16; /* sm_89: 24; sm_86/87: 16 */
  } else if (major == 9 || major == 10) {
    out->warps = 64, out->block_shared = 227u << 10, carve = carve_hopper;
  }
  if (warps) out->warps = warps;
  for (int i = 0; carve[i] && i < NVHCQ_MAX_CARVEOUTS - 1; i++) out->carveouts[i] = carve[i];
}

/* Warps a block of `threads` keeps resident, and how many such blocks the registers hold:
 * each warp takes registers x 32 rounded up to 256, and warps go to 4 sub-partitions. */
uint32_t nvhcq_warps_by_registers(const nvhcq_sm_limits *l, uint32_t registers) {
  uint32_t per_warp = NVHCQ_ALIGN_UP((registers ? registers : 1) * 32, 256u);
  return l->registers / 4 / per_warp * 4;
}

static uint32_t blocks_by_registers(const nvhcq_sm_limits *l, uint32_t warps_per_block,
                                    uint32_t registers) {
  return nvhcq_warps_by_registers(l, registers) / warps_per_block;
}

static uint32_t largest(const nvhcq_sm_limits *l) {
  uint32_t i = 0;
  while (l->carveouts[i + 1]) i++;
  return l->carveouts[i] * 1024u;
}

/* The smallest configuration holding `blocks` blocks of `shared` bytes, or 0. */
static uint32_t smallest_holding(const nvhcq_sm_limits *l, uint32_t shared, uint32_t blocks) {
  for (int i = 0; l->carveouts[i]; i++)
    if ((uint64_t)l->carveouts[i] * 1024u >= (uint64_t)shared * blocks)
      return l->carveouts[i] * 1024u;
  return 0;
}

/* Blocks per SM with every configuration allowed, and what limits them. */
static uint32_t best_blocks(const nvhcq_sm_limits *l, uint32_t threads, uint32_t registers,
                            uint32_t shared, uint32_t *limiter) {
  uint32_t warps_per_block = (threads + 31) / 32;
  uint32_t by[4] = {l->warps / warps_per_block, blocks_by_registers(l, warps_per_block, registers),
                    l->blocks, shared ? largest(l) / shared : l->blocks};
  static const uint32_t names[4] = {NVHCQ_LIMIT_WARPS, NVHCQ_LIMIT_REGISTERS, NVHCQ_LIMIT_BLOCKS,
                                    NVHCQ_LIMIT_SHARED};
  uint32_t best = by[0];
  *limiter = names[0];
  for (int i = 1; i < 4; i++)
    if (by[i] < best) best = by[i], *limiter = names[i];
  return best;
}

int nvhcq_choose_carveout(const nvhcq_sm_limits *l, uint32_t threads, uint32_t registers,
                          uint32_t shared, int preference, nvhcq_carveout_choice *out) {
  memset(out, 0, sizeof *out);
  out->max_bytes = largest(l);
  out->fits_one_bytes = smallest_holding(l, shared, 1);
  if (!out->fits_one_bytes || !threads) return 0;
  uint32_t blocks = best_blocks(l, threads, registers, shared, &out->limiter);
  if (!blocks) return 0;
  if (preference >= 0) {
    /* The hint wins over occupancy, as CUDA's preferred carveout does, but one block must fit. */
    uint32_t want = (uint32_t)((uint64_t)out->max_bytes * (uint32_t)preference / 100);
    uint32_t cfg = smallest_holding(l, 1, want ? want : 1);
    if (!cfg) cfg = out->max_bytes;
    if (cfg < out->fits_one_bytes) cfg = out->fits_one_bytes;
    out->min_bytes = out->fits_one_bytes, out->target_bytes = cfg;
    out->blocks_per_sm = shared && cfg / shared < blocks ? cfg / shared : blocks;
    if (out->blocks_per_sm < blocks) out->limiter = NVHCQ_LIMIT_SHARED;
    return 1;
  }
  /* The smallest configuration that reaches the best occupancy: the rest stays L1 cache. */
  out->min_bytes = out->target_bytes = smallest_holding(l, shared, blocks);
  out->blocks_per_sm = blocks;
  return 1;
}
