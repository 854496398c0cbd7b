/* GPFIFO submission: commands copied into a channel's command ring, waits for room while the GPU
 * has not fetched enough (back-pressure from GP_GET), and the doorbell, rung again when the GPU
 * seems not to have heard it. */
#include "core/channel.h"
#include "util/clock.h"
#include "util/fence.h"

#include <string.h>
#include <time.h>

#include "abi/methods.h"
#include "driver/rm.h"
#include "hw/push.h"

/* nvhcq maps GPU memory for the CPU at the same address: a QMD nvhcq wrote is readable there. */
static const uint32_t *same_address(void *user, uint64_t gpu_address) {
  (void)user;
  return (const uint32_t *)(uintptr_t)gpu_address;
}

/* NVHCQ_TRACE=2: each submission's methods by name and the QMDs it launches, field by field. */
static void trace_submission(const nvhcq_channel *ch, const uint32_t *words, uint32_t n) {
  nvhcq_push_decode_ctx ctx = {ch->qmd_version, same_address, NULL};
  fprintf(stderr, "nvhcq: submission %llu on the %s channel, %u words:\n",
          (unsigned long long)ch->submitted, ch->name, n);
  nvhcq_push_decode(stderr, words, n, &ctx);
}

uint32_t nvhcq_channel_max_words(const nvhcq_channel *ch) {
  return ch->cmd_words / 4;
}

uint64_t nvhcq_channel_fetched(uint64_t submitted, uint32_t entries, uint32_t gp_get) {
  uint32_t put_slot = (uint32_t)(submitted % entries);
  uint32_t pending = (put_slot + entries - gp_get % entries) % entries;
  return submitted - pending;
}

/* An entry's commands may still be read until the GPU has fetched the entry after it, so only
 * entries older than the last fetched one count as retired. */
static void refresh_retired(nvhcq_channel *ch) {
  uint64_t fetched = nvhcq_channel_fetched(ch->submitted, ch->entries, *ch->gp_get);
  if (fetched > 0 && fetched - 1 > ch->retired) ch->retired = fetched - 1;
}

static int has_room(nvhcq_channel *ch, uint64_t end) {
  if (ch->submitted - ch->retired >= ch->entries - 1) return 0;
  if (ch->retired == ch->submitted) return 1;
  uint64_t oldest = ch->entry_start[ch->retired % ch->entries];
  return end - oldest <= ch->cmd_words;
}

int nvhcq_channel_ring_again(nvhcq_channel *ch, uint32_t *seen_get) {
  if (!ch->handle || !ch->gp_get || !ch->doorbell) return 0;
  uint32_t get = __atomic_load_n(ch->gp_get, __ATOMIC_ACQUIRE);
  uint32_t put = __atomic_load_n(ch->gp_put, __ATOMIC_ACQUIRE);
  int stalled = get != put && get == *seen_get;
  *seen_get = get;
  if (!stalled) return 0;
  __atomic_store_n(ch->doorbell, __atomic_load_n(&ch->token, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
  __atomic_fetch_add(&ch->rung_again, 1, __ATOMIC_RELAXED);
  return 1;
}

static nvhcq_status wait_for_room(nvhcq_channel *ch, uint64_t end) {
  /* GP_GET lives in GPU memory: reading it crosses the bus, so only when room looks short. */
  if (has_room(ch, end)) return NVHCQ_SUCCESS;
  double deadline = 0, next_look = 0;
  uint32_t seen_get = ~0u;
  for (unsigned spins = 0;; spins++) {
    refresh_retired(ch);
    if (has_room(ch, end)) return NVHCQ_SUCCESS;
    double now = nvhcq_now_ms();
    if (spins == 0) deadline = now + ch->timeout_ms, next_look = now + 1;
    if (now >= next_look) {
      nvhcq_channel_ring_again(ch, &seen_get);
      next_look = now + 1;
    }
    if (now > deadline)
      return nvhcq_fail(NVHCQ_ERROR_TIMEOUT,
                        "%s channel: the GPU has not consumed earlier commands for %u ms (%llu "
                        "entries pending); the channel may be hung or faulted",
                        ch->name, ch->timeout_ms,
                        (unsigned long long)(ch->submitted - ch->retired));
    if (spins > 1000) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

static void ring_doorbell(nvhcq_channel *ch, uint64_t gpu_address, uint32_t n, uint64_t start) {
  uint32_t slot = (uint32_t)(ch->submitted % ch->entries);
  ch->entry_start[slot] = start;
  ch->ring[slot] = NVHCQ_GPFIFO_ENTRY(gpu_address, n);
  ch->submitted++;
  /* Commands and the entry must be visible before GP_PUT, and GP_PUT before the doorbell. Both are
   * plain stores (atomic only for waiters on other threads that read GP_PUT and ring again). */
  nvhcq_store_fence();
  __atomic_store_n(ch->gp_put, (uint32_t)(ch->submitted % ch->entries), __ATOMIC_RELAXED);
  nvhcq_store_fence();
  __atomic_store_n(ch->doorbell, ch->token, __ATOMIC_RELAXED);
}

nvhcq_status nvhcq_channel_submit(nvhcq_channel *ch, const uint32_t *words, uint32_t n) {
  if (n == 0) return NVHCQ_SUCCESS;
  if (n > nvhcq_channel_max_words(ch))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s channel: a submission of %u command words exceeds the limit of %u; "
                      "split the queue",
                      ch->name, n, nvhcq_channel_max_words(ch));
  uint64_t start = ch->cmd_head;
  if (start % ch->cmd_words + n > ch->cmd_words) start += ch->cmd_words - start % ch->cmd_words;
  NVHCQ_TRY(wait_for_room(ch, start + n));
  uint32_t off = (uint32_t)(start % ch->cmd_words);
  memcpy(ch->cmd + off, words, n * sizeof *words);
  if (nvhcq_trace_level() >= 2) trace_submission(ch, words, n);
  ch->cmd_head = start + n;
  ring_doorbell(ch, ch->cmd_gpu + off * 4ull, n, start);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_channel_submit_gpu(nvhcq_channel *ch, uint64_t gpu_address, uint32_t n) {
  NVHCQ_TRY(wait_for_room(ch, ch->cmd_head));
  if (nvhcq_trace_level() >= 2) trace_submission(ch, (const uint32_t *)(uintptr_t)gpu_address, n);
  ring_doorbell(ch, gpu_address, n, ch->cmd_head);
  return NVHCQ_SUCCESS;
}
