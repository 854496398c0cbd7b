/* A device's texture header and sampler pools (see texture_pool.h). */
#include "core/texture_pool.h"

#include <stdlib.h>
#include <string.h>

#include "abi/methods.h"
#include "abi/texture.h"
#include "core/device.h"
#include "core/memory.h"
#include "core/reclaim.h"
#include "abi/rm.h"
#include "core/timeline.h"
#include "util/fence.h"

#define POOL_BYTES (NVHCQ_TEXTURE_POOL_SLOTS * NVHCQ_TIC_BYTES)

/* Which header format the compute engine reads (SET_TEXTURE_HEADER_VERSION, Hopper and later).
 * Measured on the H200 (driver 580.159.04, test_texture with NVHCQ_DEBUG_TEX_HEADER_VERSION set
 * to each value): with nothing sent, 0, 2 or 4 every sample and surface access of the V2 headers
 * nvhcq writes read zeros (no fault); with 1 or 3 every case passed. So 1 selects the V2 format.
 * NVHCQ_DEBUG_TEX_HEADER_VERSION=N sends N instead, "none" nothing (for experiments). */
static int header_version(void) {
  const char *v = getenv("NVHCQ_DEBUG_TEX_HEADER_VERSION");
  if (v && !strcmp(v, "none")) return -1;
  return v ? atoi(v) : 1;
}

void nvhcq_texture_pool_push(nvhcq_device *dev, nvhcq_push *p) {
  nvhcq_texture_pool *t = &dev->textures;
  if (!t->headers) return;
  uint64_t h = t->headers->gpu_address, s = t->samplers->gpu_address;
  uint32_t hw[3] = {(uint32_t)(h >> 32), (uint32_t)h, NVHCQ_TEXTURE_POOL_SLOTS - 1};
  uint32_t sw[3] = {(uint32_t)(s >> 32), (uint32_t)s, NVHCQ_TEXTURE_POOL_SLOTS - 1};
  int version = header_version();
  if (version >= 0 && dev->classes.compute >= HOPPER_COMPUTE_A)
    nvhcq_push_method1(p, NVHCQ_SUBC_COMPUTE, NVCBC0_SET_TEXTURE_HEADER_VERSION, (uint32_t)version);
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_HEADER_POOL_A, hw, 3);
  nvhcq_push_method(p, NVHCQ_SUBC_COMPUTE, NVC6C0_SET_TEX_SAMPLER_POOL_A, sw, 3);
  nvhcq_push_method1(p, NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI, 0);
  nvhcq_push_method1(p, NVHCQ_SUBC_COMPUTE, NVC6C0_INVALIDATE_SAMPLER_CACHE_NO_WFI, 0);
}

/* Makes both pools and points the compute engine at them, in order before later launches. */
static nvhcq_status make_pools(nvhcq_device *dev) {
  nvhcq_texture_pool *t = &dev->textures;
  static const nvhcq_alloc_options wc = {.map_flags = NVHCQ_MAP_WRITE_COMBINED};
  t->used = calloc(NVHCQ_TEXTURE_POOL_SLOTS / 64, sizeof *t->used);
  if (!t->used) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "no host memory for the texture pool");
  nvhcq_status s =
      nvhcq_memory_alloc(dev, POOL_BYTES, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, &t->headers);
  if (!s) s = nvhcq_memory_alloc(dev, POOL_BYTES, NVHCQ_MEMORY_DEVICE_MAPPED, &wc, &t->samplers);
  if (s) {
    nvhcq_texture_pool_fini(dev);
    return nvhcq_fail_context(s, "texture header and sampler pools (2 x %u KiB)", POOL_BYTES >> 10);
  }
  memset(t->headers->host_pointer, 0, POOL_BYTES);
  memset(t->samplers->host_pointer, 0, POOL_BYTES);
  t->used[0] = 1; /* handle 0 is no object, as in CUDA */
  t->next = 1;
  nvhcq_store_fence();
  nvhcq_push *p = nvhcq_timeline_scratch(dev);
  nvhcq_texture_pool_push(dev, p);
  uint64_t v;
  return nvhcq_device_submit_scratch(dev, 0, &v);
}

static int find_free(nvhcq_texture_pool *t, uint32_t *slot) {
  for (uint32_t n = 0; n < NVHCQ_TEXTURE_POOL_SLOTS; n++) {
    uint32_t i = (t->next + n) % NVHCQ_TEXTURE_POOL_SLOTS;
    if (!(t->used[i / 64] >> (i % 64) & 1)) {
      *slot = i;
      return 1;
    }
  }
  return 0;
}

nvhcq_status nvhcq_texture_pool_add(nvhcq_device *dev, const uint32_t tic[8], const uint32_t tsc[8],
                                    uint32_t *slot) {
  nvhcq_texture_pool *t = &dev->textures;
  if (!t->headers) NVHCQ_TRY(make_pools(dev));
  uint32_t i;
  if (!find_free(t, &i))
    return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY,
                      "all %u texture and surface objects of this device are in use; destroy "
                      "some first",
                      NVHCQ_TEXTURE_POOL_SLOTS - 1);
  t->used[i / 64] |= 1ull << (i % 64);
  t->next = i + 1;
  t->live++;
  memcpy((uint8_t *)t->headers->host_pointer + (size_t)i * NVHCQ_TIC_BYTES, tic, NVHCQ_TIC_BYTES);
  uint8_t *smp = (uint8_t *)t->samplers->host_pointer + (size_t)i * NVHCQ_TSC_BYTES;
  if (tsc)
    memcpy(smp, tsc, NVHCQ_TSC_BYTES);
  else
    memset(smp, 0, NVHCQ_TSC_BYTES);
  /* Launches submitted after this see the words: every QMD invalidates the header and sampler
   * caches, and the doorbell comes after this fence. */
  nvhcq_store_fence();
  *slot = i;
  return NVHCQ_SUCCESS;
}

void nvhcq_texture_pool_release(nvhcq_device *dev, uint32_t slot) {
  nvhcq_texture_pool *t = &dev->textures;
  if (!t->headers || slot == 0 || slot >= NVHCQ_TEXTURE_POOL_SLOTS) return;
  memset((uint8_t *)t->headers->host_pointer + (size_t)slot * NVHCQ_TIC_BYTES, 0, NVHCQ_TIC_BYTES);
  memset((uint8_t *)t->samplers->host_pointer + (size_t)slot * NVHCQ_TSC_BYTES, 0, NVHCQ_TSC_BYTES);
  t->used[slot / 64] &= ~(1ull << (slot % 64));
  t->live--;
}

void nvhcq_texture_pool_remove(nvhcq_device *dev, uint32_t slot) {
  /* A device that takes no more commands runs no more kernels: the slot goes at once. */
  if (nvhcq_reclaim_texture_slot(dev, slot)) nvhcq_texture_pool_release(dev, slot);
}

void nvhcq_texture_pool_fini(nvhcq_device *dev) {
  nvhcq_texture_pool *t = &dev->textures;
  nvhcq_memory_drop(&t->headers);
  nvhcq_memory_drop(&t->samplers);
  free(t->used);
  memset(t, 0, sizeof *t);
}
