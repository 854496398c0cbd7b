/* Recorded queues replayed with changing variables, on a real GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_test.h"

/* A compute queue (affine kernel on a chosen buffer, size, scalars) and a copy queue (copy of the
 * result, waiting for the kernel) replayed 1000 times with new values each time. */
static void t_replay_1000_with_variables(void) {
  NEED_GPU();
  enum { MAX = 4096 };
  nvhcq_buffer *buf[2], *out;
  for (int i = 0; i < 2; i++)
    TEST_CHECK(nvhcq_buffer_create(dev, MAX * 4, NVHCQ_MEMORY_HOST, &buf[i]) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_buffer_create(dev, MAX * 4, NVHCQ_MEMORY_HOST, &out) == NVHCQ_SUCCESS);
  nvhcq_signal *kdone, *cdone;
  nvhcq_signal_create(dev, 0, &kdone), nvhcq_signal_create(dev, 0, &cdone);
  nvhcq_queue *cq, *xq;
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &cq) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COPY, &xq) == NVHCQ_SUCCESS);
  nvhcq_var ptr, a, b, n, blocks, epoch, xepoch, src, bytes;
  nvhcq_queue_var(cq, "ptr", nvhcq_buffer_gpu_address(buf[0]), &ptr);
  nvhcq_queue_var(cq, "a", 1, &a);
  nvhcq_queue_var(cq, "b", 0, &b);
  nvhcq_queue_var(cq, "n", 256, &n);
  nvhcq_queue_var(cq, "blocks", 1, &blocks);
  nvhcq_queue_var(cq, "epoch", 1, &epoch);
  struct {
    uint64_t x;
    int a, b, n;
  } args = {nvhcq_buffer_gpu_address(buf[0]), 1, 0, 256};
  nvhcq_arg_var av[] = {{0, 8, ptr, 0}, {8, 4, a, 0}, {12, 4, b, 0}, {16, 4, n, 0}};
  nvhcq_launch_vars lv = {
      {blocks, NVHCQ_NO_VAR, NVHCQ_NO_VAR}, {NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR}, 4, av};
  nvhcq_status s = nvhcq_queue_launch_vars(cq, kernel("affine"), (nvhcq_dim3){1, 1, 1},
                                           (nvhcq_dim3){256, 1, 1}, 0, &args, 20, &lv);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_queue_signal_var(cq, kdone, epoch) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(cq) == NVHCQ_SUCCESS);
  nvhcq_queue_var(xq, "epoch", 1, &xepoch);
  nvhcq_queue_var(xq, "src", nvhcq_buffer_gpu_address(buf[0]), &src);
  nvhcq_queue_var(xq, "bytes", 1024, &bytes);
  TEST_CHECK(nvhcq_queue_gpu_wait_var(xq, kdone, xepoch) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_copy_vars(xq, nvhcq_buffer_gpu_address(out), 0, 1024, NVHCQ_NO_VAR, src,
                                   bytes) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_signal_var(xq, cdone, xepoch) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(xq) == NVHCQ_SUCCESS);
  int bad_iters = 0;
  for (int it = 0; it < 1000; it++) {
    int which = it & 1, count = 256 * (1 + it % 16), ka = it % 7 + 1, kb = it;
    int *x = nvhcq_buffer_host_pointer(buf[which]), *o = nvhcq_buffer_host_pointer(out);
    for (int j = 0; j < MAX; j++) x[j] = j, o[j] = -1;
    uint64_t addr = nvhcq_buffer_gpu_address(buf[which]);
    s = nvhcq_queue_set_var(cq, ptr, addr);
    if (!s) s = nvhcq_queue_set_var(cq, a, (uint64_t)ka);
    if (!s) s = nvhcq_queue_set_var(cq, b, (uint64_t)kb);
    if (!s) s = nvhcq_queue_set_var(cq, n, (uint64_t)count);
    if (!s) s = nvhcq_queue_set_var(cq, blocks, (uint64_t)(count / 256));
    if (!s) s = nvhcq_queue_set_var(cq, epoch, (uint64_t)it + 1);
    if (!s) s = nvhcq_queue_set_var(xq, xepoch, (uint64_t)it + 1);
    if (!s) s = nvhcq_queue_set_var(xq, src, addr);
    if (!s) s = nvhcq_queue_set_var(xq, bytes, (uint64_t)count * 4);
    if (!s) s = nvhcq_queue_submit(cq);
    if (!s) s = nvhcq_queue_submit(xq);
    if (!s) s = nvhcq_signal_cpu_wait(cdone, (uint64_t)it + 1, wait_ms(5000));
    if (!s) s = nvhcq_queue_cpu_wait_idle(cq, wait_ms(5000));
    if (!s) s = nvhcq_queue_cpu_wait_idle(xq, wait_ms(5000));
    if (s) {
      TEST_CHECK_MSG(0, "iteration %d: %s", it, nvhcq_last_error());
      break;
    }
    int bad = 0;
    for (int j = 0; j < MAX; j++) {
      int want = j < count ? j * ka + kb : j;
      bad += x[j] != want || o[j] != (j < count ? want : -1);
    }
    if (bad && bad_iters++ < 3) fprintf(stderr, "  iteration %d: %d wrong values\n", it, bad);
  }
  TEST_CHECK_MSG(bad_iters == 0, "%d of 1000 replays gave wrong results", bad_iters);
  TEST_CHECK(nvhcq_signal_value(kdone) == 1000 && nvhcq_signal_value(cdone) == 1000);
  /* A grid or block variable gets the launch checks: no zero-block grid is ever recorded. */
  TEST_CHECK(nvhcq_queue_set_var(cq, blocks, 0) == NVHCQ_ERROR_LAUNCH_CHECK);
  TEST_CHECK_MSG(strstr(nvhcq_last_error(), "variable 'blocks' = 0: kernel affine: grid (0,1,1)"),
                 "%s", nvhcq_last_error());
  TEST_CHECK(nvhcq_queue_set_var(cq, blocks, 1u << 31) == NVHCQ_ERROR_LAUNCH_CHECK);
  nvhcq_queue_destroy(cq), nvhcq_queue_destroy(xq);
  nvhcq_signal_destroy(kdone), nvhcq_signal_destroy(cdone);
  nvhcq_buffer_destroy(buf[0]), nvhcq_buffer_destroy(buf[1]), nvhcq_buffer_destroy(out);
}

/* Replays queued back to back run in order; variables refuse to change under a running replay. */
static void t_replay_while_running(void) {
  NEED_GPU();
  nvhcq_buffer *flag, *counter;
  nvhcq_buffer_create(dev, 4, NVHCQ_MEMORY_DEVICE, &flag);
  nvhcq_buffer_create(dev, 8, NVHCQ_MEMORY_HOST, &counter);
  *(uint64_t *)nvhcq_buffer_host_pointer(counter) = 0;
  nvhcq_queue *q;
  nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &q);
  nvhcq_var ns;
  nvhcq_queue_var(q, "ns", 20 * 1000 * 1000, &ns);
  struct {
    uint64_t flag, ns;
  } sargs = {nvhcq_buffer_gpu_address(flag), 20 * 1000 * 1000};
  nvhcq_arg_var av = {8, 8, ns, 0};
  nvhcq_launch_vars lv = {{NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                          {NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                          1,
                          &av};
  TEST_CHECK(nvhcq_queue_launch_vars(q, kernel("spin"), (nvhcq_dim3){1, 1, 1},
                                     (nvhcq_dim3){32, 1, 1}, 0, &sargs, 16, &lv) == NVHCQ_SUCCESS);
  uint64_t caddr = nvhcq_buffer_gpu_address(counter);
  TEST_CHECK(nvhcq_queue_launch(q, kernel("atomic_increment"), (nvhcq_dim3){1, 1, 1},
                                (nvhcq_dim3){32, 1, 1}, 0, &caddr, 8) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_finish(q) == NVHCQ_SUCCESS);
  for (int i = 0; i < 5; i++) TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_queue_set_var(q, ns, 1000);
  TEST_CHECK(s == NVHCQ_ERROR_BUSY);
  printf("  changing a variable under a replay says: %s\n", nvhcq_last_error());
  TEST_CHECK(nvhcq_queue_cpu_wait_idle(q, wait_ms(5000)) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(*(volatile uint64_t *)nvhcq_buffer_host_pointer(counter) == 5, "counted %llu",
                 (unsigned long long)*(volatile uint64_t *)nvhcq_buffer_host_pointer(counter));
  TEST_CHECK(nvhcq_queue_set_var(q, ns, 1000) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_set_var(q, 7, 1) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_queue_launch(q, kernel("empty"), (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){1, 1, 1}, 0,
                                NULL, 0) == NVHCQ_ERROR_INVALID_ARGUMENT); /* finished */
  nvhcq_queue_destroy(q);
  nvhcq_buffer_destroy(flag), nvhcq_buffer_destroy(counter);
}

/* A diamond across both channels: A (compute) feeds B (copy) and C (compute); D (compute) needs
 * both. Replayed 100 times with new scalars, every dependency must hold. */
static void t_diamond_graph(void) {
  NEED_GPU();
  enum { N = 8192 };
  nvhcq_buffer *x, *y, *z, *out;
  nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_HOST, &x),
      nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &y);
  nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &z),
      nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_HOST, &out);
  nvhcq_graph *g;
  TEST_CHECK(nvhcq_graph_create(dev, &g) == NVHCQ_SUCCESS);
  nvhcq_var va, vb;
  nvhcq_graph_var(g, "a", 3, &va), nvhcq_graph_var(g, "b", 5, &vb);
  uint64_t X = nvhcq_buffer_gpu_address(x), Y = nvhcq_buffer_gpu_address(y);
  uint64_t Z = nvhcq_buffer_gpu_address(z), O = nvhcq_buffer_gpu_address(out);
  struct {
    uint64_t p;
    int a, b, n;
  } aargs = {X, 3, 5, N};
  nvhcq_arg_var av[] = {{8, 4, va, 0}, {12, 4, vb, 0}};
  nvhcq_launch_vars alv = {{NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                           {NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR},
                           2,
                           av};
  nvhcq_node A, B, C, D;
  nvhcq_dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
  TEST_CHECK(nvhcq_graph_add_launch(g, kernel("affine"), grid, block, 0, &aargs, 20, &alv, NULL, 0,
                                    &A) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_graph_add_copy(g, Y, X, N * 4, NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR, &A, 1,
                                  &B) == NVHCQ_SUCCESS);
  struct {
    uint64_t in, out;
    int n;
  } cargs = {X, Z, N};
  TEST_CHECK(nvhcq_graph_add_launch(g, kernel("step"), grid, block, 0, &cargs, 20, NULL, &A, 1,
                                    &C) == NVHCQ_SUCCESS);
  struct {
    uint64_t a, b, c;
    int n;
  } dargs = {Y, Z, O, N};
  nvhcq_node bc[2];
  bc[0] = B, bc[1] = C;
  TEST_CHECK(nvhcq_graph_add_launch(g, kernel("add_int"), grid, block, 0, &dargs, 28, NULL, bc, 2,
                                    &D) == NVHCQ_SUCCESS);
  nvhcq_node bad = 99;
  TEST_CHECK(nvhcq_graph_add_copy(g, Y, X, 4, NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR, &bad, 1,
                                  NULL) == NVHCQ_ERROR_INVALID_ARGUMENT);
  nvhcq_status s = nvhcq_graph_instantiate(g);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  int bad_iters = 0;
  for (int it = 0; it < 100 && !s; it++) {
    int *xs = nvhcq_buffer_host_pointer(x), *os = nvhcq_buffer_host_pointer(out);
    for (int j = 0; j < N; j++) xs[j] = j, os[j] = -1;
    int a = it % 5 + 1, b = it - 50;
    s = nvhcq_graph_set_var(g, va, (uint64_t)a);
    if (!s) s = nvhcq_graph_set_var(g, vb, (uint64_t)(uint32_t)b);
    if (!s) s = nvhcq_graph_launch(g);
    if (!s && it == 0) {
      TEST_CHECK(nvhcq_graph_launch(g) == NVHCQ_ERROR_BUSY ||
                 nvhcq_graph_cpu_wait(g, 0) == NVHCQ_SUCCESS);
    }
    if (!s) s = nvhcq_graph_cpu_wait(g, wait_ms(5000));
    if (s) {
      TEST_CHECK_MSG(0, "iteration %d: %s", it, nvhcq_last_error());
      break;
    }
    int wrong = 0;
    for (int j = 0; j < N; j++) {
      int xv = j * a + b;
      wrong += os[j] != xv + (2 * xv + 1);
    }
    if (wrong && bad_iters++ < 3)
      fprintf(stderr, "  iteration %d: %d wrong (out[1]=%d)\n", it, wrong, os[1]);
  }
  TEST_CHECK_MSG(bad_iters == 0, "%d of 100 replays wrong", bad_iters);
  nvhcq_graph_destroy(g);
  nvhcq_buffer_destroy(x), nvhcq_buffer_destroy(y), nvhcq_buffer_destroy(z),
      nvhcq_buffer_destroy(out);
}

/* A launch with a configuration (a TPC mask where one is offered) behind a copy on the other
 * channel: recorded as given, and run on every replay. */
static void t_graph_launch_ex(void) {
  NEED_GPU();
  enum { N = 4096 };
  nvhcq_buffer *x, *y, *out;
  nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_HOST, &x);
  nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &y);
  nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_HOST, &out);
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  uint32_t tpcs[4], count = 0; /* none before Hopper: then no mask */
  nvhcq_device_query_tpcs(dev, tpcs, &count);
  nvhcq_graph *g;
  TEST_CHECK(nvhcq_graph_create(dev, &g) == NVHCQ_SUCCESS);
  nvhcq_node copy, step;
  TEST_CHECK(nvhcq_graph_add_copy(g, nvhcq_buffer_gpu_address(y), nvhcq_buffer_gpu_address(x),
                                  N * 4, NVHCQ_NO_VAR, NVHCQ_NO_VAR, NVHCQ_NO_VAR, NULL, 0,
                                  &copy) == NVHCQ_SUCCESS);
  struct {
    uint64_t in, out;
    int n;
  } args = {nvhcq_buffer_gpu_address(y), nvhcq_buffer_gpu_address(out), N};
  nvhcq_launch_config c = {.struct_size = sizeof c,
                           .grid = {N / 256, 1, 1},
                           .block = {256, 1, 1},
                           .tpc_mask = info.sm_version >= 0x900 && count ? tpcs : NULL};
  const void *ptrs[3] = {&args.in, &args.out, &args.n};
  c.arg_pointers = ptrs;
  TEST_CHECK(nvhcq_graph_add_launch_ex(g, kernel("step"), &c, NULL, 0, &copy, 1, &step) ==
             NVHCQ_ERROR_INVALID_ARGUMENT);
  c.arg_pointers = NULL;
  TEST_CHECK(nvhcq_graph_add_launch_ex(g, kernel("step"), &c, &args, 20, &copy, 1, &step) ==
             NVHCQ_SUCCESS);
  nvhcq_status s = nvhcq_graph_instantiate(g);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  for (int it = 0; it < 3 && !s; it++) {
    int *xs = nvhcq_buffer_host_pointer(x), *os = nvhcq_buffer_host_pointer(out), wrong = 0;
    for (int j = 0; j < N; j++) xs[j] = j + it, os[j] = -1;
    s = nvhcq_graph_launch(g);
    if (!s) s = nvhcq_graph_cpu_wait(g, wait_ms(5000));
    TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    for (int j = 0; j < N && !s; j++) wrong += os[j] != 2 * (j + it) + 1;
    TEST_CHECK_MSG(wrong == 0, "replay %d: %d wrong (out[1] = %d)", it, wrong, os[1]);
  }
  nvhcq_graph_destroy(g);
  nvhcq_buffer_destroy(x), nvhcq_buffer_destroy(y), nvhcq_buffer_destroy(out);
}

static void t_teardown(void) {
  NEED_GPU();
  teardown();
}

TEST_MAIN(TEST(t_replay_1000_with_variables), TEST(t_replay_while_running), TEST(t_diamond_graph),
          TEST(t_graph_launch_ex), TEST(t_teardown))
