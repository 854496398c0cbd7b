/* The timeline profiler's cost: the same chained launches with it off and on, side by side: the
 * host time to record a launch and the GPU time per launch (libcuda has no such profiler to
 * compare with; its launch figures are in nvhcq_bench_compute).
 * usage: nvhcq_bench_profile CUBIN   (tests/device/kernels.cu built for this GPU) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "nvhcq.h"

#define LAUNCHES 1000
#define REPS     7
#define N        (1 << 20)

typedef struct cost {
  double record_us, gpu_us; /* per launch */
} cost;

/* LAUNCHES chained launches between two signals: host time per nvhcq_queue_launch, GPU time
 * per launch from the signals' timestamps. */
static cost one_run(nvhcq_device *dev, nvhcq_kernel *k, const void *args, size_t size,
                    nvhcq_dim3 grid, nvhcq_dim3 block) {
  nvhcq_queue *q;
  nvhcq_signal *a, *b;
  CHECK_NV(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q));
  CHECK_NV(nvhcq_signal_create(dev, 0, &a));
  CHECK_NV(nvhcq_signal_create(dev, 0, &b));
  CHECK_NV(nvhcq_queue_signal(q, a, 1));
  double t0 = now_s();
  for (int i = 0; i < LAUNCHES; i++) CHECK_NV(nvhcq_queue_launch(q, k, grid, block, 0, args, size));
  double t1 = now_s();
  CHECK_NV(nvhcq_queue_signal(q, b, 1));
  CHECK_NV(nvhcq_queue_submit(q));
  CHECK_NV(nvhcq_signal_cpu_wait(b, 1, 0));
  cost c = {(t1 - t0) * 1e6 / LAUNCHES,
            (nvhcq_signal_timestamp_ns(b) - nvhcq_signal_timestamp_ns(a)) / 1e3 / LAUNCHES};
  CHECK_NV(nvhcq_queue_destroy(q));
  CHECK_NV(nvhcq_signal_destroy(a));
  CHECK_NV(nvhcq_signal_destroy(b));
  return c;
}

/* Medians of REPS runs, with the profiler on or off. */
static cost measure(nvhcq_device *dev, nvhcq_kernel *k, const void *args, size_t size,
                    nvhcq_dim3 grid, int profiled) {
  double rec[REPS], gpu[REPS];
  for (int r = 0; r < REPS; r++) {
    if (profiled) CHECK_NV(nvhcq_profile_start("nvhcq_bench_profile.json"));
    cost c = one_run(dev, k, args, size, grid, (nvhcq_dim3){256, 1, 1});
    if (profiled) CHECK_NV(nvhcq_profile_stop());
    rec[r] = c.record_us, gpu[r] = c.gpu_us;
  }
  return (cost){median(rec, REPS), median(gpu, REPS)};
}

static void row(const char *name, cost off, cost on) {
  printf("%-26s %10.3f %10.3f %+9.3f   %10.3f %10.3f %+9.3f\n", name, off.record_us, on.record_us,
         on.record_us - off.record_us, off.gpu_us, on.gpu_us, on.gpu_us - off.gpu_us);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CUBIN (tests/device/kernels.cu built for this GPU)\n", argv[0]);
    return 2;
  }
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *empty, *add;
  nvhcq_buffer *x, *y, *z;
  CHECK_NV(nvhcq_device_open(0, &dev));
  bench_settle(dev);
  CHECK_NV(nvhcq_module_load_file(dev, argv[1], &mod));
  CHECK_NV(nvhcq_module_get_kernel(mod, "empty", &empty));
  CHECK_NV(nvhcq_module_get_kernel(mod, "vector_add", &add));
  CHECK_NV(nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &x));
  CHECK_NV(nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &y));
  CHECK_NV(nvhcq_buffer_create(dev, N * 4, NVHCQ_MEMORY_DEVICE, &z));
  struct {
    uint64_t a, b, c;
    int n;
    int pad;
  } args = {nvhcq_buffer_gpu_address(x), nvhcq_buffer_gpu_address(y), nvhcq_buffer_gpu_address(z),
            N, 0};
  printf("%d chained launches per run, median of %d runs; us per launch\n", LAUNCHES, REPS);
  printf("%-26s %10s %10s %9s   %10s %10s %9s\n", "kernel", "record off", "record on", "cost",
         "GPU off", "GPU on", "cost");
  nvhcq_dim3 one = {1, 1, 1}, grid = {N / 256, 1, 1};
  row("empty <<<1, 256>>>", measure(dev, empty, NULL, 0, one, 0),
      measure(dev, empty, NULL, 0, one, 1));
  row("vector_add 1M floats", measure(dev, add, &args, 28, grid, 0),
      measure(dev, add, &args, 28, grid, 1));
  printf("the last profiled run's trace: nvhcq_bench_profile.json\n");
  nvhcq_buffer_destroy(x), nvhcq_buffer_destroy(y), nvhcq_buffer_destroy(z);
  nvhcq_module_unload(mod);
  return nvhcq_device_close(dev) ? 1 : 0;
}
