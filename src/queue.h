#ifndef NVHCQ_QUEUE_H
#define NVHCQ_QUEUE_H

#include "device.h"

#define NVHCQ_QUEUE_MAGIC 0x6e767175u /* "nvqu" */

struct nvhcq_queue {
  uint32_t magic;
  nvhcq_device *dev;
  nvhcq_queue_kind kind;
  nvhcq_push push;
};

#endif
