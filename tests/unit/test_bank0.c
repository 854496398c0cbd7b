/* The constant-cache rule on the mock GPU: which grids' QMDs ask for bank 0 to be invalidated.
 * A chained grid whose bank 0 equals its predecessor's skips it; any difference (arguments,
 * grid, a variable's value at replay) keeps it (exec/launch.c, skip_constant_invalidate). */
#include <stddef.h>
#include <string.h>

#include "hw/qmd.h"
#include "mock/mock.h"
#include "nvhcq.h"
#include "mock_test.h"
#include "test.h"

#define MAX_GRIDS 16

static int invalidates[MAX_GRIDS];
static int grid_count; /* the channel's thread writes, the test reads after a wait */

static int note_grid(const nvhcq_mock_grid *g) {
  nvhcq_qmd_version v = (nvhcq_qmd_version)g->qmd_version;
  const uint32_t *qmd = nvhcq_mock_gpu_pointer(g->qmd_address, nvhcq_qmd_size(v));
  int n = __atomic_load_n(&grid_count, __ATOMIC_RELAXED);
  if (qmd && n < MAX_GRIDS)
    invalidates[n] = (int)nvhcq_qmd_get(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_INVALIDATE_0);
  __atomic_store_n(&grid_count, n + 1, __ATOMIC_RELEASE);
  return 0;
}

/* affine(int *x, int a, int b, int n) */
typedef struct affine_args {
  uint64_t x;
  int32_t a, b, n;
} affine_args;

/* The mock's device with affine loaded and a buffer for it; 0 when the cubin is missing. */
typedef struct rig {
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_buffer *x;
} rig;

static int rig_open(rig *r, nvhcq_device *dev) {
  *r = (rig){.dev = dev};
  r->k = load_test_kernel(dev, "affine", &r->mod);
  if (!r->k) return 0;
  TEST_CHECK(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &r->x) == NVHCQ_SUCCESS);
  return 1;
}

static void rig_close(rig *r) {
  nvhcq_buffer_destroy(r->x);
  nvhcq_module_unload(r->mod);
  close_mock(r->dev);
}

/* Declares `r`, or ends the calling test (skipped without the cubin). */
#define NEED_RIG(r)                                                                                \
  NEED_MOCK_DEVICE(dev);                                                                           \
  rig r;                                                                                           \
  if (!rig_open(&r, dev)) {                                                                        \
    close_mock(dev);                                                                               \
    TEST_SKIP("no device_kernels_sm_90.cubin (nvcc did not build the test cubins)");               \
  }

/* Runs the queue with the grid runner above; the grids' invalidate bits must be `want`. */
static void expect(nvhcq_queue *q, const int *want, int n, const char *what) {
  __atomic_store_n(&grid_count, 0, __ATOMIC_RELAXED);
  nvhcq_mock_set_grid_hook(note_grid);
  TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(nvhcq_queue_cpu_wait_idle(q, 10000) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_mock_set_grid_hook(NULL);
  TEST_CHECK_MSG(__atomic_load_n(&grid_count, __ATOMIC_ACQUIRE) == n, "%s: %d grids", what,
                 grid_count);
  for (int i = 0; i < n; i++)
    TEST_CHECK_MSG(invalidates[i] == want[i], "%s, grid %d: CONSTANT_BUFFER_INVALIDATE(0) %d", what,
                   i, invalidates[i]);
}

static void t_eager(void) {
  NEED_RIG(r);
  nvhcq_kernel *k = r.k;
  affine_args same = {nvhcq_buffer_gpu_address(r.x), 1, 2, 32}, other = same;
  other.a = 3;
  nvhcq_dim3 one = {1, 1, 1}, warp = {32, 1, 1}, two = {2, 1, 1};
  nvhcq_queue *q;
  TEST_CHECK(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  /* equal, equal, other arguments, equal to that, another grid, after a wait (not chained) */
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &same, sizeof same) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &same, sizeof same) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &same, sizeof same) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_memory_barrier(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  static const int want[7] = {1, 0, 0, 1, 0, 1, 1};
  expect(q, want, 7, "eager");
  /* A later submission starts a chain of its own: its first grid invalidates. */
  TEST_CHECK(nvhcq_queue_reset(q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, two, warp, 0, &other, sizeof other) == NVHCQ_SUCCESS);
  static const int again[2] = {1, 0};
  expect(q, again, 2, "eager, second submission");
  nvhcq_queue_destroy(q);
  rig_close(&r);
}

/* Variables decide at finish and at each change: a launch whose argument is a variable equal to
 * its neighbours' arguments skips, and stops skipping once the variable differs. */
static void t_recorded_variables(void) {
  NEED_RIG(r);
  nvhcq_kernel *k = r.k;
  affine_args args = {nvhcq_buffer_gpu_address(r.x), 1, 2, 32};
  nvhcq_dim3 one = {1, 1, 1}, warp = {32, 1, 1};
  nvhcq_queue *q;
  nvhcq_var a;
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &q) == NVHCQ_SUCCESS);
  /* Recorded with 9 in the arguments; the variable's 1 is written at finish. */
  TEST_CHECK(nvhcq_queue_var(q, "a", 1, &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &args, sizeof args) == NVHCQ_SUCCESS);
  affine_args nine = args;
  nine.a = 9;
  nvhcq_arg_var av = {offsetof(affine_args, a), 4, a, 0};
  nvhcq_launch_vars vars = {.grid = {NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                            .block = {NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                            .args = &av,
                            .arg_count = 1};
  TEST_CHECK_MSG(nvhcq_queue_launch_vars(q, k, one, warp, 0, &nine, sizeof nine, &vars) ==
                     NVHCQ_SUCCESS,
                 "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_queue_launch(q, k, one, warp, 0, &args, sizeof args) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(q) == NVHCQ_SUCCESS);
  static const int equal[3] = {1, 0, 0};
  expect(q, equal, 3, "a = 1");
  TEST_CHECK(nvhcq_queue_set_var(q, a, 5) == NVHCQ_SUCCESS);
  static const int differ[3] = {1, 1, 1};
  expect(q, differ, 3, "a = 5");
  TEST_CHECK(nvhcq_queue_set_var(q, a, 1) == NVHCQ_SUCCESS);
  expect(q, equal, 3, "a = 1 again");
  nvhcq_queue_destroy(q);
  rig_close(&r);
}

TEST_MAIN({"eager", t_eager}, {"recorded_variables", t_recorded_variables})
