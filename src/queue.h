#ifndef NVHCQ_QUEUE_H
#define NVHCQ_QUEUE_H

#include "device.h"

#define NVHCQ_QUEUE_MAGIC 0x6e767175u /* "nvqu" */

struct nvhcq_queue {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_queue_kind kind;
  nvhcq_push push;
  /* Launch state: the last QMD (to chain the next launch to), its CPU shadow, and whether a
   * kernel may still run when the next unchained launch starts. */
  uint32_t *last_qmd;
  uint64_t last_qmd_gpu;
  uint32_t last_qmd_shadow[96];
  int launch_pending;
  uint64_t args_first; /* first argument-ring position this recording uses, ~0 if none */
};

/* Breaks the launch chain: the next launch starts with its own PCAS. */
void nvhcq_queue_end_chain(nvhcq_queue *q);
/* Refuses a submission whose launch arguments the argument ring has since reused. */
nvhcq_status nvhcq_queue_check_args(const nvhcq_queue *q);
void nvhcq_compute_init(nvhcq_device *dev);
/* Puts a signal into the last launch's QMD if it has a free release; 1 when it did. */
int nvhcq_queue_signal_on_qmd(nvhcq_queue *q, uint64_t address, uint64_t value);

#endif
