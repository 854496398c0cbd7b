/* The device's two internal timelines (a signal per channel that the device's own submissions
 * release), the scratch commands that end with them, the waits for them, and synchronize. */
#ifndef NVHCQ_TIMELINE_H
#define NVHCQ_TIMELINE_H

#include <stdint.h>

#include "hw/push.h"
#include "util/error.h"

typedef struct nvhcq_timeline_state {
  nvhcq_signal *signal[2]; /* compute, copy */
  uint64_t value[2];       /* the last value handed out on each */
  nvhcq_push scratch;      /* reused for internal submissions: no allocation once warm */
} nvhcq_timeline_state;

/* Creates both timelines' signals. */
nvhcq_status nvhcq_timeline_init(nvhcq_device *dev) NVHCQ_MUST_CHECK;
/* Destroys them and the scratch commands' memory; for a device half opened too. */
void nvhcq_timeline_fini(nvhcq_device *dev);
/* After a recovery: the values handed out count as reached, so nothing waits for discarded work. */
void nvhcq_timeline_skip(nvhcq_device *dev);

/* The scratch commands, emptied, for one internal submission. */
nvhcq_push *nvhcq_timeline_scratch(nvhcq_device *dev);
/* Appends "signal timeline[copy] = ++value" to `p`, returning the value to wait for. */
uint64_t nvhcq_device_push_timeline(nvhcq_device *dev, int copy, nvhcq_push *p);
/* Ends dev->scratch with channel `copy`'s timeline release and submits it; *value is the timeline
 * value to wait for. */
nvhcq_status nvhcq_device_submit_scratch(nvhcq_device *dev, int copy,
                                         uint64_t *value) NVHCQ_MUST_CHECK;
/* Waits for a channel's timeline to reach `value`. */
nvhcq_status nvhcq_device_wait_timeline(nvhcq_device *dev, int copy,
                                        uint64_t value) NVHCQ_MUST_CHECK;
/* The same, for work that takes at least `expect_ns`: see nvhcq_wait_value. */
nvhcq_status nvhcq_device_wait_timeline_for(nvhcq_device *dev, int copy, uint64_t value,
                                            uint64_t expect_ns) NVHCQ_MUST_CHECK;

#endif
