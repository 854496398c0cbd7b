/* The TPC map: which SMs each slot of the QMD's TPC mask stands for, measured on the GPU. */
#ifndef NVHCQ_TPC_H
#define NVHCQ_TPC_H

#include "core/device.h"

/* Measures the map on first call (one submission of 129 short grids, well under a millisecond
 * on the H200) and keeps it in dev->compute_state: the usable slots, the slot of each SM, and
 * why none is offered where none is. An error only when the device fails; a map that cannot be
 * trusted leaves no slot usable. Thread-safe. */
nvhcq_status nvhcq_tpc_map(nvhcq_device *dev) NVHCQ_MUST_CHECK;

#endif
