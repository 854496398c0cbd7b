/* The TPC map: which SMs each bit of the QMD's TPC mask stands for, read off the GPU by a census
 * of the SMs short grids run on, one grid with each slot disabled in turn. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/compute.h"
#include "exec/builtin.h"
#include "exec/module.h"
#include "exec/queue.h"
#include "exec/tpc.h"
#include "nvhcq.h"

/* Why measure rather than derive: on the H200 and the H100 (driver 580.159.04, bench/tpc_probe.c)
 * the mask's slot g * tpcs_per_gpc + i is not GPC g's TPC i as RM's per-GPC TPC masks number
 * them (slot GPC 0 held 4 TPCs where RM reports 9 for GPC 0), so no rule from RM's answers names
 * the right slots, and a grid kept to slots that hold no TPC would never run. Disabling one slot
 * at a time never leaves a grid without SMs, so the census cannot hang either. */
#define CENSUS_SLOTS 128 /* the mask's bits */
#define CENSUS_GRIDS (1 + CENSUS_SLOTS)
/* 32-thread blocks, all resident at once, so that every SM a grid may use gets some, each staying
 * long enough for the rest to be handed out. */
#define BLOCKS_PER_SM  16
#define SPIN_NS        2000u
#define CENSUS_WAIT_MS 5000

/* The SMs each census grid ran on: grid 0 unmasked, grid 1 + t with slot t disabled. */
static nvhcq_status census(nvhcq_device *dev, nvhcq_kernel *k, uint32_t spin_ns,
                           uint32_t sets[CENSUS_GRIDS][8]) {
  nvhcq_queue *q = NULL;
  nvhcq_buffer *out = NULL;
  memset(sets, 0, CENSUS_GRIDS * 8 * sizeof(uint32_t));
  nvhcq_status s = nvhcq_buffer_create(dev, CENSUS_GRIDS * 32, NVHCQ_MEMORY_DEVICE, &out);
  if (!s) s = nvhcq_buffer_write(out, 0, sets, CENSUS_GRIDS * 32);
  if (!s) s = nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q);
  nvhcq_dim3 grid = {BLOCKS_PER_SM * dev->info.sm_count, 1, 1}, block = {32, 1, 1};
  for (uint32_t g = 0; g < CENSUS_GRIDS && !s; g++) {
    uint32_t enabled[4] = {~0u, ~0u, ~0u, ~0u};
    if (g) enabled[(g - 1) / 32] &= ~(1u << ((g - 1) % 32));
    uint8_t args[12];
    uint64_t at = nvhcq_buffer_gpu_address(out) + 32ull * g;
    memcpy(args, &at, 8), memcpy(args + 8, &spin_ns, 4);
    s = nvhcq_queue_launch_census(q, k, grid, block, args, sizeof args, enabled);
  }
  if (!s) s = nvhcq_queue_submit(q);
  if (!s) s = nvhcq_queue_cpu_wait_idle(q, CENSUS_WAIT_MS);
  if (!s) s = nvhcq_buffer_read(sets, out, 0, CENSUS_GRIDS * 32);
  if (q) nvhcq_queue_destroy(q);
  if (out) nvhcq_buffer_destroy(out);
  return s;
}

static uint32_t count8(const uint32_t set[8]) {
  uint32_t n = 0;
  for (int w = 0; w < 8; w++) n += (uint32_t)__builtin_popcount(set[w]);
  return n;
}

/* Reads the map off a census into cs; 0 when it is consistent, else why not in `why`: the
 * unmasked grid reached every SM, and each slot's grid missed none of them or one TPC's worth
 * that no other slot missed, and ran on no SM the unmasked one did not. */
static int read_census(const nvhcq_device *dev, const uint32_t sets[CENSUS_GRIDS][8],
                       nvhcq_compute_state *cs, char *why, size_t why_size) {
  const uint32_t *all = sets[0];
  if (count8(all) != dev->info.sm_count)
    return snprintf(why, why_size, "the census's unmasked grid ran on %u of the %u SMs",
                    count8(all), dev->info.sm_count),
           -1;
  for (uint32_t sm = 0; sm < 256; sm++)
    cs->slot_of_sm[sm] = all[sm / 32] >> (sm % 32) & 1 ? NVHCQ_TPC_NO_SLOT : NVHCQ_TPC_NOT_AN_SM;
  for (uint32_t t = 0; t < CENSUS_SLOTS; t++) {
    uint32_t gone[8], extra = 0;
    for (int w = 0; w < 8; w++)
      gone[w] = all[w] & ~sets[1 + t][w], extra |= sets[1 + t][w] & ~all[w];
    uint32_t n = count8(gone);
    if (extra || (n && n != dev->info.sms_per_tpc))
      return snprintf(why, why_size,
                      "the census's grid without TPC slot %u lost %u SMs (a TPC holds %u)%s", t, n,
                      dev->info.sms_per_tpc,
                      extra ? " and ran on SMs the unmasked one did not" : ""),
             -1;
    for (uint32_t sm = 0; sm < 256; sm++) {
      if (!(gone[sm / 32] >> (sm % 32) & 1)) continue;
      if (cs->slot_of_sm[sm] != NVHCQ_TPC_NO_SLOT)
        return snprintf(why, why_size, "SM %u answered to TPC slots %u and %u", sm,
                        cs->slot_of_sm[sm], t),
               -1;
      cs->slot_of_sm[sm] = (uint8_t)t;
    }
    if (n) cs->usable_tpcs[t / 32] |= 1u << (t % 32), cs->usable_tpc_count++;
  }
  return 0;
}

static void unmapped(nvhcq_compute_state *cs, const char *why) {
  memset(cs->usable_tpcs, 0, sizeof cs->usable_tpcs);
  cs->usable_tpc_count = 0;
  memset(cs->slot_of_sm, NVHCQ_TPC_NOT_AN_SM, sizeof cs->slot_of_sm);
  snprintf(cs->tpc_unmapped_why, sizeof cs->tpc_unmapped_why, "%s", why);
}

/* Measures the map: a census, and a second with blocks that stay ten times longer if the first
 * did not add up (a grid's blocks handed to fewer SMs than it may use). */
static nvhcq_status measure(nvhcq_device *dev) {
  nvhcq_compute_state *cs = &dev->compute_state;
  nvhcq_module *m = nvhcq_builtin_module(dev);
  nvhcq_kernel *k = NULL;
  nvhcq_error_saved saved;
  nvhcq_error_save(&saved);
  if (!m || nvhcq_module_get_kernel(m, "nvhcq_sm_set", &k)) {
    nvhcq_error_restore(&saved); /* the map's reason says it; the caller did not fail */
    return unmapped(cs, "this build of nvhcq has no built-in kernels for the GPU (it was built "
                        "without nvcc), and the TPC map is measured with one"),
           NVHCQ_SUCCESS;
  }
  uint32_t sets[CENSUS_GRIDS][8];
  char why[160] = "";
  for (uint32_t spin = SPIN_NS; spin <= 10 * SPIN_NS; spin *= 10) {
    NVHCQ_TRY(census(dev, k, spin, sets));
    unmapped(cs, "");
    if (!read_census(dev, sets, cs, why, sizeof why)) return NVHCQ_SUCCESS;
  }
  char text[sizeof cs->tpc_unmapped_why];
  snprintf(text, sizeof text, "the TPC map measured on it did not add up (%s)", why);
  unmapped(cs, text);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_tpc_map(nvhcq_device *dev) {
  nvhcq_compute_state *cs = &dev->compute_state;
  if (__atomic_load_n(&cs->tpc_mapped, __ATOMIC_ACQUIRE)) return NVHCQ_SUCCESS;
  nvhcq_status s = NVHCQ_SUCCESS;
  pthread_mutex_lock(&dev->tpc_lock);
  if (!cs->tpc_mapped) {
    if (cs->qmd_version != NVHCQ_QMD_V04 && cs->qmd_version != NVHCQ_QMD_V05) {
      unmapped(cs, "the GPU's QMD has no TPC mask (Hopper and later have one)");
    } else {
      s = measure(dev);
    }
    if (!s) __atomic_store_n(&cs->tpc_mapped, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&dev->tpc_lock);
  return s;
}
