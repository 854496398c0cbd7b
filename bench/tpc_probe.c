/* Which SMs each TPC slot of the QMD's TPC disable mask stands for, read off the GPU: for every
 * slot a grid that may use all the others records the SMs its blocks ran on (%smid); the SMs
 * missing from it are that slot's (none: no TPC there). Disabling one slot never leaves a grid
 * without TPCs, so no probe can hang. Prints one line per slot and which slots nvhcq offers to
 * masks (nvhcq_device_query_tpcs), so the two can be compared. usage: NVHCQ_DEBUG_TPC_ANY=1
 * nvhcq_tpc_probe DEVICE_KERNELS.cubin   (tests/device/kernels.cu) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvhcq.h"

#define BLOCKS_PER_SM 16

static int fail(const char *what) {
  fprintf(stderr, "nvhcq_tpc_probe: %s: %s\n", what, nvhcq_last_error());
  return 1;
}

/* The SMs (bit s of seen) a grid of record_smid ran on under `enabled`. */
static nvhcq_status run(nvhcq_queue *q, nvhcq_kernel *k, nvhcq_buffer *out, uint32_t blocks,
                        const uint32_t enabled[4], uint32_t seen[8]) {
  uint64_t at = nvhcq_buffer_gpu_address(out);
  nvhcq_launch_config c = {
      .struct_size = sizeof c, .grid = {blocks, 1, 1}, .block = {32, 1, 1}, .tpc_mask = enabled};
  nvhcq_status s = nvhcq_queue_reset(q);
  if (!s) s = nvhcq_queue_launch_ex(q, k, &c, &at, sizeof at);
  if (!s) s = nvhcq_queue_submit(q);
  if (!s) s = nvhcq_queue_cpu_wait_idle(q, 5000);
  uint32_t *sm = malloc(4 * blocks);
  if (!s) s = nvhcq_buffer_read(sm, out, 0, 4 * blocks);
  memset(seen, 0, 8 * sizeof *seen);
  for (uint32_t i = 0; i < blocks && !s; i++) seen[sm[i] / 32 % 8] |= 1u << (sm[i] % 32);
  free(sm);
  return s;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s DEVICE_KERNELS.cubin\n", argv[0]), 2;
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_queue *q;
  nvhcq_buffer *out;
  if (nvhcq_device_open(0, &dev)) return fail("opening GPU 0");
  nvhcq_device_info info = {.struct_size = sizeof info};
  uint32_t usable[4], count;
  if (nvhcq_device_query_info(dev, &info) || nvhcq_device_query_tpcs(dev, usable, &count))
    return fail("querying GPU 0");
  uint32_t blocks = BLOCKS_PER_SM * info.sm_count, slots = info.gpcs * info.tpcs_per_gpc;
  if (nvhcq_module_load_file(dev, argv[1], &mod) ||
      nvhcq_module_get_kernel(mod, "record_smid", &k) ||
      nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) ||
      nvhcq_buffer_create(dev, 4 * blocks, NVHCQ_MEMORY_DEVICE, &out))
    return fail("setting up");
  printf("%s: %u GPCs x %u TPC slots, %u SMs; %u slots offered to masks\n", info.name, info.gpcs,
         info.tpcs_per_gpc, info.sm_count, count);
  uint32_t all[4] = {~0u, ~0u, ~0u, ~0u}, base[8], seen[8];
  if (run(q, k, out, blocks, all, base)) return fail("the unmasked grid");
  uint32_t existing = 0;
  for (uint32_t slot = 0; slot < slots && slot < 128; slot++) {
    uint32_t enabled[4] = {~0u, ~0u, ~0u, ~0u};
    enabled[slot / 32] &= ~(1u << (slot % 32));
    if (run(q, k, out, blocks, enabled, seen)) return fail("a masked grid");
    printf("slot %3u (GPC %u, TPC %u)%s: SMs missing", slot, slot / info.tpcs_per_gpc,
           slot % info.tpcs_per_gpc, usable[slot / 32] >> (slot % 32) & 1 ? " offered" : "");
    int any = 0;
    for (uint32_t s = 0; s < 256; s++)
      if ((base[s / 32] & ~seen[s / 32]) >> (s % 32) & 1) printf(" %u", s), any = 1;
    printf("%s\n", any ? "" : " none");
    existing += any;
  }
  printf("%u slots hold a TPC\n", existing);
  nvhcq_buffer_destroy(out);
  nvhcq_queue_destroy(q);
  nvhcq_module_unload(mod);
  nvhcq_device_close(dev);
  return 0;
}
