/* The device's internal timelines: scratch submissions that end with a timeline release, the
 * waits for them (which release destroyed buffers the GPU has passed), and
 * nvhcq_device_cpu_wait_idle. */
#include "core/timeline.h"

#include <stdio.h>

#include "core/device.h"
#include "util/abi.h"

nvhcq_status nvhcq_timeline_init(nvhcq_device *dev) {
  nvhcq_push_init(&dev->timeline.scratch);
  NVHCQ_TRY(nvhcq_signal_create(dev, 0, &dev->timeline.signal[0]));
  return nvhcq_signal_create(dev, 0, &dev->timeline.signal[1]);
}

void nvhcq_timeline_fini(nvhcq_device *dev) {
  for (int i = 0; i < 2; i++)
    if (dev->timeline.signal[i]) nvhcq_signal_destroy(dev->timeline.signal[i]);
  nvhcq_push_finish(&dev->timeline.scratch);
}

void nvhcq_timeline_skip(nvhcq_device *dev) {
  for (int c = 0; c < 2; c++) nvhcq_signal_store(dev->timeline.signal[c], dev->timeline.value[c]);
}

nvhcq_push *nvhcq_timeline_scratch(nvhcq_device *dev) {
  nvhcq_push_reset(&dev->timeline.scratch);
  return &dev->timeline.scratch;
}

uint64_t nvhcq_device_push_timeline(nvhcq_device *dev, int copy, nvhcq_push *p) {
  uint64_t v = ++dev->timeline.value[copy];
  /* On the copy channel the copy engine's own release is ordered after its copies. */
  if (copy)
    nvhcq_push_copy_signal(p, dev->timeline.signal[copy]->gpu_address, v, dev->copy_payload64);
  else
    nvhcq_push_host_signal(p, dev->timeline.signal[copy]->gpu_address, v);
  return v;
}

nvhcq_status nvhcq_device_submit_scratch(nvhcq_device *dev, int copy, uint64_t *value) {
  nvhcq_push *p = &dev->timeline.scratch;
  *value = nvhcq_device_push_timeline(dev, copy, p);
  NVHCQ_TRY(p->error);
  return nvhcq_channel_submit(nvhcq_device_channel(dev, copy), p->words, p->len);
}

nvhcq_status nvhcq_device_wait_timeline(nvhcq_device *dev, int copy, uint64_t value) {
  return nvhcq_device_wait_timeline_for(dev, copy, value, 0);
}

static nvhcq_status wait_timeline(nvhcq_device *dev, int copy, uint64_t value, uint64_t expect_ns) {
  char what[64];
  snprintf(what, sizeof what, "GPU %d %s channel", dev->index, copy ? "copy" : "compute");
  nvhcq_status s = nvhcq_wait_value(dev, dev->timeline.signal[copy]->cpu, value, dev->timeout_ms,
                                    expect_ns, what);
  if (s == NVHCQ_ERROR_TIMEOUT) dev->broken = 1; /* the device's own work is stuck */
  return s;
}

nvhcq_status nvhcq_device_wait_timeline_for(nvhcq_device *dev, int copy, uint64_t value,
                                            uint64_t expect_ns) {
  nvhcq_status s = NVHCQ_SUCCESS;
  if (nvhcq_signal_load(dev->timeline.signal[copy]) >= value)
    nvhcq_device_waited(dev); /* wait_timeline's wait does it otherwise */
  else
    s = wait_timeline(dev, copy, value, expect_ns);
  if (!s) nvhcq_reclaim_poll(dev); /* the GPU moved on: what it is done with can go */
  return s;
}

nvhcq_status nvhcq_device_cpu_wait_idle(nvhcq_device *dev) {
  NVHCQ_TRY(nvhcq_device_check(dev));
  if (dev->broken)
    return nvhcq_fail(NVHCQ_ERROR_GPU_FAULT,
                      "GPU %d stopped working after an earlier fault or hang; call "
                      "nvhcq_device_recover (memory stays valid) or close the device",
                      dev->index);
  uint64_t v[2] = {0, 0};
  for (int c = 0; c < 2; c++) {
    nvhcq_timeline_scratch(dev);
    NVHCQ_TRY(nvhcq_device_submit_scratch(dev, c, &v[c]));
  }
  NVHCQ_TRY(nvhcq_device_wait_timeline(dev, 0, v[0]));
  return nvhcq_device_wait_timeline(dev, 1, v[1]);
}

/* The 0.1 names (nvhcq.h declares them deprecated). */
NVHCQ_0_1_NAME(nvhcq_device_synchronize, nvhcq_device_cpu_wait_idle);
