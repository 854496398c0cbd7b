/* A GPFIFO channel: its ring of entries, the command ring the entries point into, submission
 * with back-pressure, and the doorbell. */
#ifndef NVHCQ_CHANNEL_H
#define NVHCQ_CHANNEL_H

#include <stdint.h>

#include "util/error.h"

typedef struct nvhcq_channel {
  const char *name; /* "compute" / "copy" */
  uint32_t handle;  /* RM channel object */
  uint32_t group;   /* its channel group */
  uint32_t engine;  /* its engine object (compute or copy) */
  uint32_t token;   /* work-submit token for the doorbell */
  uint64_t *ring;   /* GPFIFO entries, CPU view */
  volatile uint32_t *gp_get, *gp_put;
  volatile uint32_t *doorbell;
  uint32_t entries;
  uint64_t submitted; /* entries ever submitted; the next goes to slot submitted % entries */
  /* Command ring: CPU view and GPU address of `cmd_words` dwords. */
  uint32_t *cmd;
  uint64_t cmd_gpu;
  uint32_t cmd_words;
  uint64_t cmd_head;     /* monotonic dword position of the next write */
  uint64_t *entry_start; /* per ring slot: monotonic cmd position where that entry began */
  uint64_t retired;      /* entries known to be fully fetched by the GPU */
  uint64_t channel_va;   /* UVM channel range */
  uint32_t timeout_ms;
  int qmd_version;     /* for NVHCQ_TRACE=2's decoding of launches */
  uint32_t rung_again; /* doorbells rung again by waits (atomic: waiters may be on any thread) */
} nvhcq_channel;

/* Largest single submission copied into the command ring, in dwords. */
uint32_t nvhcq_channel_max_words(const nvhcq_channel *ch);

/* Copies `n` command words into the command ring and submits them. Waits (bounded by the
 * channel timeout) while the GPU has not consumed enough earlier commands to make room. */
nvhcq_status nvhcq_channel_submit(nvhcq_channel *ch, const uint32_t *words,
                                  uint32_t n) NVHCQ_MUST_CHECK;
/* Submits commands already in GPU memory. */
nvhcq_status nvhcq_channel_submit_gpu(nvhcq_channel *ch, uint64_t gpu_address,
                                      uint32_t n) NVHCQ_MUST_CHECK;

/* A wait's look at a channel, at most once a millisecond: entries submitted but not fetched while
 * GP_GET stands where the last look (`*seen_get`, ~0u at first) saw it mean the GPU may not have
 * heard the doorbell, and it is rung again (one write; a doorbell for work already seen does
 * nothing). Returns 1 if it rang. */
int nvhcq_channel_ring_again(nvhcq_channel *ch, uint32_t *seen_get);

/* Ring arithmetic, exposed for tests: how many of `submitted` entries the GPU has fetched,
 * given its GP_GET slot. */
uint64_t nvhcq_channel_fetched(uint64_t submitted, uint32_t entries, uint32_t gp_get);

#endif
