/* Deferred release of destroyed buffers and module-image slices: a fence (a timeline value per
 * channel) taken at destroy and a first-in, first-out list reaped when the timelines pass the
 * fences. */
#include "core/reclaim.h"

#include <stdlib.h>

#include "core/device.h"
#include "core/texture_pool.h"
#include "util/handle.h"

/* Timeline values that follow all work submitted so far. A channel that got no entries since
 * the last fence reuses its value: a thousand destroys in a row cost one release per channel. */
static nvhcq_status take_fence(nvhcq_device *dev, uint64_t after[2]) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  for (int c = 0; c < 2; c++) {
    nvhcq_channel *ch = nvhcq_device_channel(dev, c);
    if (ch->submitted != r->fenced_entries[c]) {
      nvhcq_timeline_scratch(dev);
      NVHCQ_TRY(nvhcq_device_submit_scratch(dev, c, &r->fence[c]));
      r->fenced_entries[c] = ch->submitted;
    }
    after[c] = r->fence[c];
  }
  return NVHCQ_SUCCESS;
}

static nvhcq_status append(nvhcq_device *dev, nvhcq_reclaim_item item) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  if (r->head > 0 && r->count == r->capacity) { /* slide the live part to the front */
    for (uint32_t i = r->head; i < r->count; i++) r->items[i - r->head] = r->items[i];
    r->count -= r->head;
    r->head = 0;
  }
  if (r->count == r->capacity) {
    uint32_t cap = r->capacity ? 2 * r->capacity : 64;
    nvhcq_reclaim_item *grown = realloc(r->items, cap * sizeof *grown);
    if (!grown) return nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory");
    r->items = grown;
    r->capacity = cap;
  }
  r->items[r->count++] = item;
  return NVHCQ_SUCCESS;
}

/* Queues the item behind a fence. A broken device's channels may still hold work that will never
 * finish: its items wait for the recovery or the close that takes the channels away. */
static nvhcq_status defer(nvhcq_device *dev, nvhcq_reclaim_item item) {
  item.after[0] = item.after[1] = UINT64_MAX;
  if (!dev->broken && dev->compute.handle && dev->copy.handle)
    NVHCQ_TRY(take_fence(dev, item.after));
  return append(dev, item);
}

nvhcq_status nvhcq_reclaim_buffer(nvhcq_buffer *buf) {
  nvhcq_device *dev = buf->dev;
  NVHCQ_TRY(defer(dev, (nvhcq_reclaim_item){.buf = buf}));
  buf->magic = NVHCQ_DEAD_MAGIC; /* stale handles are caught from now on */
  nvhcq_reclaim_poll(dev);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_reclaim_slice(nvhcq_device *dev, const nvhcq_arena_slice *slice) {
  NVHCQ_TRY(defer(dev, (nvhcq_reclaim_item){.slice = *slice}));
  nvhcq_reclaim_poll(dev);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_reclaim_texture_slot(nvhcq_device *dev, uint32_t slot) {
  NVHCQ_TRY(defer(dev, (nvhcq_reclaim_item){.texture_slot = slot}));
  nvhcq_reclaim_poll(dev);
  return NVHCQ_SUCCESS;
}

static int passed(nvhcq_device *dev, const nvhcq_reclaim_item *it) {
  for (int c = 0; c < 2; c++)
    if (it->after[c] == UINT64_MAX || nvhcq_signal_load(dev->timeline.signal[c]) < it->after[c])
      return 0;
  return 1;
}

static void release_front(nvhcq_device *dev) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  nvhcq_reclaim_item it = r->items[r->head++];
  if (r->head == r->count) r->head = r->count = 0;
  if (it.buf)
    (void)!nvhcq_memory_free(it.buf);
  else if (it.texture_slot)
    nvhcq_texture_pool_release(dev, it.texture_slot);
  else
    nvhcq_arena_free(dev, &it.slice);
}

void nvhcq_reclaim_poll(nvhcq_device *dev) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  while (r->head < r->count && passed(dev, &r->items[r->head])) release_front(dev);
}

int nvhcq_reclaim_wait_all(nvhcq_device *dev) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  if (r->head == r->count) return 0;
  /* Counted before the waits: each wait reaps what the GPU is done with itself. */
  uint32_t before = nvhcq_reclaim_pending(dev);
  uint64_t after[2] = {r->items[r->count - 1].after[0], r->items[r->count - 1].after[1]};
  for (int c = 0; c < 2; c++)
    if (after[c] == UINT64_MAX || nvhcq_device_wait_timeline(dev, c, after[c])) return 0;
  nvhcq_reclaim_poll(dev);
  return nvhcq_reclaim_pending(dev) < before;
}

void nvhcq_reclaim_all(nvhcq_device *dev) {
  nvhcq_reclaim_state *r = &dev->reclaim;
  while (r->head < r->count) release_front(dev);
  free(r->items);
  *r = (nvhcq_reclaim_state){0};
}

uint32_t nvhcq_reclaim_pending(const nvhcq_device *dev) {
  return dev->reclaim.count - dev->reclaim.head;
}
