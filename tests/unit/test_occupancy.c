/* Occupancy and shared-memory configuration: nvhcq's choice against libcuda's on the H200, and
 * against the hardware's rules on the other architectures. */
#include "occupancy.h"
#include "occupancy_h200.h"
#include "test.h"

static nvhcq_carveout_choice choose(uint32_t sm, uint32_t threads, uint32_t regs, uint32_t shared,
                                    int preference) {
  nvhcq_sm_limits l;
  nvhcq_carveout_choice c;
  nvhcq_sm_limits_for(sm, 0, &l);
  TEST_CHECK(nvhcq_choose_carveout(&l, threads, regs, shared, preference, &c) == 1);
  return c;
}

/* MIN and MAX are libcuda's in all 200 measured shapes; TARGET is MIN (libcuda often asks for the
 * next configuration up; on the H200 that changed no measured kernel's time). */
static void t_matches_libcuda_on_h200(void) {
  unsigned differ = 0;
  for (size_t i = 0; i < sizeof libcuda_h200 / sizeof libcuda_h200[0]; i++) {
    const libcuda_carveout *e = &libcuda_h200[i];
    nvhcq_carveout_choice c = choose(0x900, e->threads, e->regs, e->shared, -1);
    if (c.min_bytes != e->min_kib * 1024 || c.max_bytes != e->max_kib * 1024 ||
        c.target_bytes != c.min_bytes) {
      fprintf(stderr, "  %u threads, %u registers, %u shared: nvhcq %u/%u, libcuda %u/%u KiB\n",
              e->threads, e->regs, e->shared, c.min_bytes >> 10, c.max_bytes >> 10, e->min_kib,
              e->max_kib);
      differ++;
    }
  }
  TEST_CHECK_MSG(differ == 0, "%u of the measured shapes differ", differ);
}

/* Shapes worked by hand from the Programming Guide's limits and the occupancy rules. */
static void t_hand_worked_shapes(void) {
  /* H200, the benchmark's matmul: 126 registers -> 4096 per warp, 4 warps per sub-partition,
   * 16 warps: 2 blocks of 8 warps; 2 x 72.75 KiB of shared memory fit in 164 KiB. */
  nvhcq_carveout_choice c = choose(0x900, 256, 126, 74496, -1);
  TEST_CHECK(c.blocks_per_sm == 2 && c.limiter == NVHCQ_LIMIT_REGISTERS);
  TEST_CHECK(c.min_bytes == 164u << 10 && c.target_bytes == 164u << 10);
  /* H200, a 128-thread block of 32 registers and the reserve only: 16 blocks by warps. */
  c = choose(0x900, 128, 32, 1024, -1);
  TEST_CHECK(c.blocks_per_sm == 16 && c.limiter == NVHCQ_LIMIT_WARPS && c.min_bytes == 16u << 10);
  /* One-thread blocks: the 32-block limit. */
  c = choose(0x900, 1, 16, 1024, -1);
  TEST_CHECK(c.blocks_per_sm == 32 && c.limiter == NVHCQ_LIMIT_BLOCKS && c.min_bytes == 32u << 10);
  /* 100 KiB of dynamic shared memory: 2 blocks, limited by shared memory, in 228 KiB. */
  c = choose(0x900, 256, 24, 103424, -1);
  TEST_CHECK(c.blocks_per_sm == 2 && c.limiter == NVHCQ_LIMIT_SHARED && c.min_bytes == 228u << 10);
  /* A100: 164 KiB at most, 64 warps, 32 blocks. */
  c = choose(0x800, 128, 32, 1024, -1);
  TEST_CHECK(c.blocks_per_sm == 16 && c.min_bytes == 16u << 10 && c.max_bytes == 164u << 10);
  /* RTX 4090 (sm_89): 48 warps, 24 blocks, 100 KiB: 128 threads -> 12 blocks by warps. */
  c = choose(0x809, 128, 32, 1024, -1);
  TEST_CHECK(c.blocks_per_sm == 12 && c.limiter == NVHCQ_LIMIT_WARPS && c.max_bytes == 100u << 10);
  /* sm_86: 16 blocks; one-warp blocks stop there. */
  c = choose(0x806, 32, 16, 1024, -1);
  TEST_CHECK(c.blocks_per_sm == 16 && c.limiter == NVHCQ_LIMIT_BLOCKS && c.min_bytes == 16u << 10);
  /* Blackwell B200 (sm_100) shares Hopper's configurations. */
  c = choose(0xa00, 128, 32, 1024, -1);
  TEST_CHECK(c.max_bytes == 228u << 10 && c.min_bytes == 16u << 10);
}

/* A preference moves the target, never below what one block needs. */
static void t_preference(void) {
  nvhcq_carveout_choice c = choose(0x900, 128, 32, 1024, 0);
  TEST_CHECK(c.target_bytes == 8u << 10 && c.min_bytes == 8u << 10);
  TEST_CHECK(c.blocks_per_sm == 8 && c.limiter == NVHCQ_LIMIT_SHARED);
  c = choose(0x900, 128, 32, 1024, 100);
  TEST_CHECK(c.target_bytes == 228u << 10 && c.blocks_per_sm == 16);
  c = choose(0x900, 128, 32, 1024, 50); /* 114 KiB -> the 132 KiB configuration */
  TEST_CHECK(c.target_bytes == 132u << 10);
  c = choose(0x900, 256, 24, 103424, 0); /* one block needs 101 KiB: 132 at least */
  TEST_CHECK(c.target_bytes == 132u << 10 && c.min_bytes == 132u << 10 && c.blocks_per_sm == 1);
}

/* The register rule the launch checks use: each warp takes registers x 32 rounded up to 256
 * of 64 Ki, warps in groups of 4 (sm_90: 24 registers -> 84 warps, 255 -> 8, 32 -> 64; 0 counts as
 * 1). */
static void t_warps_by_registers(void) {
  nvhcq_sm_limits l;
  nvhcq_sm_limits_for(0x900, 0, &l);
  TEST_CHECK(nvhcq_warps_by_registers(&l, 24) == 84);
  TEST_CHECK(nvhcq_warps_by_registers(&l, 255) == 8);
  TEST_CHECK(nvhcq_warps_by_registers(&l, 32) == 64 && nvhcq_warps_by_registers(&l, 0) == 256);
  for (uint32_t r = 1; r < 256; r++) {
    uint32_t per_warp = (r * 32 + 255) / 256 * 256;
    TEST_CHECK_MSG(nvhcq_warps_by_registers(&l, r) == 65536 / per_warp / 4 * 4, "%u", r);
  }
}

/* What no configuration holds is refused. */
static void t_refusals(void) {
  nvhcq_sm_limits l;
  nvhcq_carveout_choice c;
  nvhcq_sm_limits_for(0x900, 0, &l);
  TEST_CHECK(nvhcq_choose_carveout(&l, 128, 32, 229u << 10, -1, &c) == 0);
  TEST_CHECK(nvhcq_choose_carveout(&l, 0, 32, 1024, -1, &c) == 0);
  nvhcq_sm_limits_for(0x809, 0, &l);
  TEST_CHECK(nvhcq_choose_carveout(&l, 128, 32, 101u << 10, -1, &c) == 0);
}

TEST_MAIN(TEST(t_matches_libcuda_on_h200), TEST(t_hand_worked_shapes), TEST(t_preference),
          TEST(t_warps_by_registers), TEST(t_refusals))
