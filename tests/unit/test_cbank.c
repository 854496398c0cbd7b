/* The constant-cache policy on the mock GPU: a queue's commands invalidate the constant cache
 * before their first launch and after each wait, and no QMD asks for its bank 0 to be; with
 * NVHCQ_DEBUG_CBANK_INVALIDATE=grid every QMD does and the commands do not (exec/launch.c,
 * fence_constant_cache). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/queue.h"
#include "hw/qmd.h"
#include "mock_test.h"

/* Constant-cache invalidations in the queue's commands, and how many come before its first
 * SEND_PCAS_A (-1 in *before when there is no launch). */
static int count_fences(const nvhcq_queue *q, int *before) {
  int fences = 0;
  *before = -1;
  for (uint32_t i = 0; i < q->push.len;) {
    uint32_t h = q->push.words[i], op = h >> 29;
    uint32_t n = op == 4 ? 0 : h >> 16 & 0x1fff; /* 4: immediate data, in the header itself */
    unsigned subc = h >> 13 & 7, method = (h & 0xfff) << 2;
    if (subc == NVHCQ_SUBC_COMPUTE && n && method == NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI &&
        (q->push.words[i + 1] & NVC6C0_INVALIDATE_CONSTANT))
      fences++;
    if (subc == NVHCQ_SUBC_COMPUTE && method == NVC6C0_SEND_PCAS_A && *before < 0) *before = fences;
    i += 1 + n;
  }
  return fences;
}

/* Runs the queue; each grid's QMD must ask for the invalidation as `want` says. */
static void expect_grids(nvhcq_queue *q, int n, int want, const char *what) {
  mock_grids_start();
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_queue_cpu_wait_idle(q, 10000) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  int got = mock_grids_stop();
  TEST_CHECK_MSG(got == n, "%s: %d grids ran, %d recorded", what, got, n);
  for (int i = 0; i < got && i < MOCK_GRIDS_KEPT; i++) {
    int inv = (int)mock_grid_field(i, NVHCQ_QMD_CONSTANT_BUFFER_INVALIDATE_0);
    TEST_CHECK_MSG(inv == want, "%s, grid %d: CONSTANT_BUFFER_INVALIDATE(0) is %d", what, i, inv);
  }
}

/* affine(int *x, int a, int b, int n) */
typedef struct affine_args {
  uint64_t x;
  int32_t a, b, n;
} affine_args;

/* An eager queue (launches, a barrier that breaks the chain, a launch, a wait, a launch), again
 * after a reset, and a recorded queue replayed twice: `fences` invalidations before the first
 * launch (and after the wait), `want` in every QMD. */
static void check_queues(int fences, int want) {
  NEED_MOCK_DEVICE(dev);
  nvhcq_module *mod = NULL;
  nvhcq_kernel *k = load_test_kernel(dev, "affine", &mod);
  if (!k) {
    close_mock(dev);
    TEST_SKIP("no device_kernels_sm_90.cubin (nvcc did not build the test cubins)");
  }
  nvhcq_buffer *x;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &x) == NVHCQ_SUCCESS);
  affine_args a = {nvhcq_buffer_gpu_address(x), 1, 2, 32};
  nvhcq_dim3 one = {1, 1, 1}, two = {2, 1, 1}, warp = {32, 1, 1};
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  a.a = 3;
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_memory_barrier(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  nvhcq_signal *sig;
  TEST_CHECK(nvhcq_signal_create(dev, 0, &sig) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_gpu_wait(q, sig, 0) == NVHCQ_SUCCESS); /* at 0 already */
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  int before, all = count_fences(q, &before);
  TEST_CHECK_MSG(before == fences,
                 "eager: %d constant-cache invalidations before the first "
                 "launch, want %d",
                 before, fences);
  TEST_CHECK_MSG(all == 2 * fences + 1,
                 "eager: %d in all (the barrier has one, a wait ends a fenced run), want %d", all,
                 2 * fences + 1);
  expect_grids(q, 4, want, "eager");
  nvhcq_signal_destroy(sig);
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  count_fences(q, &before);
  TEST_CHECK_MSG(before == fences, "after a reset: %d before the first launch, want %d", before,
                 fences);
  expect_grids(q, 1, want, "eager after a reset");
  nvhcq_queue_destroy(q);
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  for (int i = 0; i < 3; i++)
    TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &a, sizeof a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(q) == NVHCQ_SUCCESS);
  all = count_fences(q, &before);
  TEST_CHECK_MSG(before == fences && all == fences,
                 "recorded: %d before the first launch, %d in all, want %d", before, all, fences);
  expect_grids(q, 3, want, "recorded, first replay");
  expect_grids(q, 3, want, "recorded, second replay");
  nvhcq_queue_destroy(q);
  nvhcq_buffer_destroy(x);
  nvhcq_module_unload(mod);
  close_mock(dev);
}

static void t_once_per_queue(void) {
  check_queues(1, 0);
}

static void t_grid_knob(void) {
  TEST_CHECK(setenv("NVHCQ_DEBUG_CBANK_INVALIDATE", "grid", 1) == 0);
  check_queues(0, 1);
  unsetenv("NVHCQ_DEBUG_CBANK_INVALIDATE");
}

static void t_never_knob(void) {
  TEST_CHECK(setenv("NVHCQ_DEBUG_CBANK_INVALIDATE", "never", 1) == 0);
  check_queues(0, 0);
  unsetenv("NVHCQ_DEBUG_CBANK_INVALIDATE");
}

TEST_MAIN({"once_per_queue", t_once_per_queue}, {"grid_knob", t_grid_knob},
          {"never_knob", t_never_knob})
