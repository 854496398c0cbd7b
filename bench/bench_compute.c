/* Compute benchmark: nvhcq and (when present) libcuda in the same run, on the same cubin.
 * usage: nvhcq_bench_compute CUBIN [PLAIN_CUBIN]   (tests/device/kernels.cu built for this GPU;
 * PLAIN_CUBIN, default the build's bench/startup_kernels_sm_90.cubin, has the one-kernel module
 * whose replay is also timed) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "nvhcq.h"

/* One-atomic chains at this many places of a 64 MiB buffer: a grid's last write costs what its
 * address costs (README, "A grid's last write costs what its address costs"). */
#define SWEEP_PLACES 16
#define SWEEP_BYTES  (64ull << 20)

static void *file_data;
static size_t file_size;
/* bench/startup_kernels.cu's cubin: a module without constant data, whose empty kernel libcuda
 * replays faster than the test module's (which holds a __constant__ table): 0.50 against 0.61 us
 * per node on the H200, where nvhcq's replays took 0.50 us from both. NULL if absent. */
static void *plain_data;
static size_t plain_size;

typedef struct results {
  double init_ms, roundtrip_us, submit_us, launches_per_s, copy_gbps, fma_tflops, replay_us;
  double plain_replay_us;        /* the same replay of the empty kernel of a one-kernel module */
  double sweep_us[SWEEP_PLACES]; /* per node of a 1000-node one-atomic chain, by address */
  double record_us, resubmit_us, empty_gpu_us; /* where nvhcq's time goes */
} results;

#define REPLAY_KERNELS 1000
#define REPLAYS        20

#define COPY_BYTES (2ull << 30)
#define FMA_ITERS  4096

/* ---- nvhcq ---- */

static nvhcq_device *dev;
static nvhcq_module *mod;

static nvhcq_kernel *nv_kernel(const char *name) {
  nvhcq_kernel *k;
  CHECK_NV(nvhcq_module_get_kernel(mod, name, &k));
  return k;
}

static double nv_init(void) {
  double t0 = now_s();
  CHECK_NV(nvhcq_device_open(0, &dev));
  CHECK_NV(nvhcq_module_load(dev, file_data, file_size, &mod));
  CHECK_NV(nvhcq_kernel_launch_cpu_wait(nv_kernel("empty"), (nvhcq_dim3){1, 1, 1},
                                        (nvhcq_dim3){1, 1, 1}, 0, NULL, 0, NULL));
  return (now_s() - t0) * 1e3;
}

/* The counter's place `i` of SWEEP_PLACES in a SWEEP_BYTES buffer: a different 4 MiB part and
 * a different offset within the page each time. */
static uint64_t sweep_offset(int i) {
  return (uint64_t)i * (SWEEP_BYTES / SWEEP_PLACES) + (uint64_t)i * 256 % 4096;
}

/* Wall time per node of a recorded queue of REPLAY_KERNELS one-atomic launches, best of 5. */
static double nv_atomic_chain(nvhcq_kernel *inc, uint64_t addr) {
  nvhcq_dim3 one = {1, 1, 1};
  nvhcq_queue *rq;
  CHECK_NV(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &rq));
  for (int i = 0; i < REPLAY_KERNELS; i++)
    CHECK_NV(nvhcq_queue_launch(rq, inc, one, one, 0, &addr, 8));
  CHECK_NV(nvhcq_queue_finish(rq));
  double best = 1e9;
  for (int i = 0; i < 6; i++) {
    double s0 = now_s();
    CHECK_NV(nvhcq_queue_submit(rq));
    CHECK_NV(nvhcq_queue_cpu_wait_idle(rq, 10000));
    if (i && now_s() - s0 < best) best = now_s() - s0;
  }
  nvhcq_queue_destroy(rq);
  return best / REPLAY_KERNELS * 1e6;
}

static void nv_sweep(results *r) {
  nvhcq_buffer *big;
  CHECK_NV(nvhcq_buffer_create(dev, SWEEP_BYTES, NVHCQ_MEMORY_DEVICE, &big));
  uint64_t base = nvhcq_buffer_gpu_address(big);
  for (int i = 0; i < SWEEP_PLACES; i++)
    r->sweep_us[i] = nv_atomic_chain(nv_kernel("atomic_increment"), base + sweep_offset(i));
  nvhcq_buffer_destroy(big);
}

/* Wall time per kernel of a recorded queue of REPLAY_KERNELS launches of `k`, replayed REPLAYS
 * times, each replay waited for. */
static double nv_replay(nvhcq_kernel *k) {
  nvhcq_queue *rq;
  nvhcq_dim3 one = {1, 1, 1};
  CHECK_NV(nvhcq_queue_create_recorded(dev, NVHCQ_QUEUE_COMPUTE, &rq));
  for (int i = 0; i < REPLAY_KERNELS; i++)
    CHECK_NV(nvhcq_queue_launch(rq, k, one, one, 0, NULL, 0));
  CHECK_NV(nvhcq_queue_finish(rq));
  CHECK_NV(nvhcq_queue_submit(rq));
  CHECK_NV(nvhcq_queue_cpu_wait_idle(rq, 10000));
  double s0 = now_s();
  for (int i = 0; i < REPLAYS; i++) {
    CHECK_NV(nvhcq_queue_submit(rq));
    CHECK_NV(nvhcq_queue_cpu_wait_idle(rq, 10000));
  }
  double us = (now_s() - s0) / (REPLAYS * REPLAY_KERNELS) * 1e6;
  nvhcq_queue_destroy(rq);
  return us;
}

static void nv_rest(results *r) {
  bench_settle(dev);
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_device_query_info(dev, &info);
  nvhcq_dim3 one = {1, 1, 1};
  nvhcq_kernel *empty = nv_kernel("empty");
  double t[2000];
  for (int i = 0; i < 2000; i++) {
    double s0 = now_s();
    CHECK_NV(nvhcq_kernel_launch_cpu_wait(empty, one, one, 0, NULL, 0, NULL));
    t[i] = now_s() - s0;
  }
  r->roundtrip_us = median(t + 100, 1900) * 1e6;
  /* Host submit cost: one launch recorded and submitted per call. */
  nvhcq_queue *q;
  CHECK_NV(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q));
  const int n = 20000;
  double s0 = now_s();
  for (int i = 0; i < n; i++) {
    CHECK_NV(nvhcq_queue_reset(q));
    CHECK_NV(nvhcq_queue_launch(q, empty, one, one, 0, NULL, 0));
    CHECK_NV(nvhcq_queue_submit(q));
  }
  r->submit_us = (now_s() - s0) / n * 1e6;
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  /* The same split in two: recording a launch, and submitting recorded commands. */
  s0 = now_s();
  for (int i = 0; i < n; i++) {
    CHECK_NV(nvhcq_queue_reset(q));
    CHECK_NV(nvhcq_queue_launch(q, empty, one, one, 0, NULL, 0));
  }
  r->record_us = (now_s() - s0) / n * 1e6;
  s0 = now_s();
  for (int i = 0; i < n; i++) CHECK_NV(nvhcq_queue_submit(q));
  r->resubmit_us = (now_s() - s0) / n * 1e6;
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  uint64_t gns;
  for (int i = 0; i < 200; i++) {
    CHECK_NV(nvhcq_kernel_launch_cpu_wait(empty, one, one, 0, NULL, 0, &gns));
    t[i] = gns * 1e-3;
  }
  r->empty_gpu_us = median(t, 200);
  /* 100k atomic increments, counted. */
  nvhcq_buffer *counter;
  CHECK_NV(nvhcq_buffer_create(dev, 8, NVHCQ_MEMORY_DEVICE, &counter));
  uint64_t zero = 0, addr = nvhcq_buffer_gpu_address(counter), got;
  CHECK_NV(nvhcq_buffer_write(counter, 0, &zero, 8));
  nvhcq_kernel *inc = nv_kernel("atomic_increment");
  s0 = now_s();
  for (int i = 0; i < 100000; i++) {
    CHECK_NV(nvhcq_queue_reset(q));
    CHECK_NV(nvhcq_queue_launch(q, inc, one, (nvhcq_dim3){32, 1, 1}, 0, &addr, 8));
    CHECK_NV(nvhcq_queue_submit(q));
  }
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  r->launches_per_s = 100000 / (now_s() - s0);
  CHECK_NV(nvhcq_buffer_read(&got, counter, 0, 8));
  if (got != 100000)
    fprintf(stderr, "nvhcq counted %llu, not 100000\n", (unsigned long long)got), exit(1);
  /* Bandwidth and arithmetic, timed on the GPU. */
  nvhcq_buffer *a, *b;
  CHECK_NV(nvhcq_buffer_create(dev, COPY_BYTES, NVHCQ_MEMORY_DEVICE, &a));
  CHECK_NV(nvhcq_buffer_create(dev, COPY_BYTES, NVHCQ_MEMORY_DEVICE, &b));
  struct {
    uint64_t src, dst, n16;
  } cargs = {nvhcq_buffer_gpu_address(a), nvhcq_buffer_gpu_address(b), COPY_BYTES / 16};
  nvhcq_dim3 cgrid = {info.sm_count * 4, 1, 1}, cblock = {512, 1, 1};
  uint64_t ns;
  for (int i = 0; i < 20; i++) {
    CHECK_NV(nvhcq_kernel_launch_cpu_wait(nv_kernel("copy16"), cgrid, cblock, 0, &cargs,
                                          sizeof cargs, &ns));
    t[i] = ns * 1e-9;
  }
  r->copy_gbps = 2.0 * COPY_BYTES / median(t + 2, 18) / 1e9;
  struct {
    uint64_t out;
    int iters;
  } fargs = {nvhcq_buffer_gpu_address(a), FMA_ITERS};
  nvhcq_dim3 fgrid = {info.sm_count * 8, 1, 1}, fblock = {256, 1, 1};
  for (int i = 0; i < 10; i++) {
    CHECK_NV(
        nvhcq_kernel_launch_cpu_wait(nv_kernel("fma_loop"), fgrid, fblock, 0, &fargs, 12, &ns));
    t[i] = ns * 1e-9;
  }
  double flops = (double)fgrid.x * fblock.x * FMA_ITERS * 16 * 8 * 2;
  r->fma_tflops = flops / median(t + 2, 8) / 1e12;
  r->replay_us = nv_replay(empty);
  if (plain_data) {
    nvhcq_module *plain;
    nvhcq_kernel *k;
    CHECK_NV(nvhcq_module_load(dev, plain_data, plain_size, &plain));
    CHECK_NV(nvhcq_module_get_kernel(plain, "empty_kernel", &k));
    r->plain_replay_us = nv_replay(k);
    nvhcq_module_unload(plain);
  }
  nv_sweep(r);
  nvhcq_buffer_destroy(a), nvhcq_buffer_destroy(b), nvhcq_buffer_destroy(counter);
  nvhcq_queue_destroy(q);
  nvhcq_module_unload(mod);
  nvhcq_device_close(dev);
}

/* ---- libcuda ---- */

static void *cu_mod;

static void *cu_kernel(const char *name) {
  void *f;
  CHECK_CU(cu.get_function(&f, cu_mod, name));
  return f;
}

static double cu_init(void) {
  double t0 = now_s();
  cuda_context();
  CHECK_CU(cu.module_load(&cu_mod, file_data));
  CHECK_CU(cu.launch(cu_kernel("empty"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  CHECK_CU(cu.sync());
  return (now_s() - t0) * 1e3;
}

static double cu_time(void *f, unsigned grid, unsigned block, void **params) {
  void *e0, *e1;
  float ms;
  CHECK_CU(cu.event_create(&e0, 0));
  CHECK_CU(cu.event_create(&e1, 0));
  CHECK_CU(cu.event_record(e0, NULL));
  CHECK_CU(cu.launch(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
  CHECK_CU(cu.event_record(e1, NULL));
  CHECK_CU(cu.event_sync(e1));
  CHECK_CU(cu.event_elapsed(&ms, e0, e1));
  cu.event_destroy(e0), cu.event_destroy(e1);
  return ms * 1e-3;
}

/* Wall time per node of a CUDA graph of REPLAY_KERNELS one-atomic launches, best of 5. */
static double cu_atomic_chain(void *inc, void *stream, uint64_t addr) {
  void *graph, *exec, *params[] = {&addr};
  CHECK_CU(cu.begin_capture(stream, 0 /* global mode */));
  for (int i = 0; i < REPLAY_KERNELS; i++)
    CHECK_CU(cu.launch(inc, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
  CHECK_CU(cu.end_capture(stream, &graph));
  CHECK_CU(cu.instantiate(&exec, graph, 0ull));
  double best = 1e9;
  for (int i = 0; i < 6; i++) {
    double s0 = now_s();
    CHECK_CU(cu.graph_launch(exec, stream));
    CHECK_CU(cu.stream_sync(stream));
    if (i && now_s() - s0 < best) best = now_s() - s0;
  }
  cu.graph_exec_destroy(exec), cu.graph_destroy(graph);
  return best / REPLAY_KERNELS * 1e6;
}

static void cu_sweep(results *r, void *stream) {
  uint64_t big;
  CHECK_CU(cu.mem_alloc(&big, (size_t)SWEEP_BYTES));
  for (int i = 0; i < SWEEP_PLACES; i++)
    r->sweep_us[i] = cu_atomic_chain(cu_kernel("atomic_increment"), stream, big + sweep_offset(i));
  cu.mem_free(big);
}

/* Wall time per node of a REPLAY_KERNELS-node graph of launches of `f`, captured from a stream
 * and replayed REPLAYS times, each replay waited for. */
static double cu_replay(void *f, void *stream) {
  void *graph, *exec;
  CHECK_CU(cu.begin_capture(stream, 0 /* global mode */));
  for (int i = 0; i < REPLAY_KERNELS; i++)
    CHECK_CU(cu.launch(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
  CHECK_CU(cu.end_capture(stream, &graph));
  CHECK_CU(cu.instantiate(&exec, graph, 0ull));
  CHECK_CU(cu.graph_launch(exec, stream));
  CHECK_CU(cu.stream_sync(stream));
  double s0 = now_s();
  for (int i = 0; i < REPLAYS; i++) {
    CHECK_CU(cu.graph_launch(exec, stream));
    CHECK_CU(cu.stream_sync(stream));
  }
  return (now_s() - s0) / (REPLAYS * REPLAY_KERNELS) * 1e6;
}

static void cu_rest(results *r) {
  void *empty = cu_kernel("empty");
  double t[2000];
  for (int i = 0; i < 2000; i++) {
    double s0 = now_s();
    CHECK_CU(cu.launch(empty, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK_CU(cu.sync());
    t[i] = now_s() - s0;
  }
  r->roundtrip_us = median(t + 100, 1900) * 1e6;
  const int n = 20000;
  double s0 = now_s();
  for (int i = 0; i < n; i++) CHECK_CU(cu.launch(empty, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  r->submit_us = (now_s() - s0) / n * 1e6;
  CHECK_CU(cu.sync());
  uint64_t counter, zero = 0, got;
  CHECK_CU(cu.mem_alloc(&counter, (size_t)8));
  CHECK_CU(cu.htod(counter, &zero, (size_t)8));
  void *inc = cu_kernel("atomic_increment");
  void *params[] = {&counter};
  s0 = now_s();
  for (int i = 0; i < 100000; i++)
    CHECK_CU(cu.launch(inc, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
  CHECK_CU(cu.sync());
  r->launches_per_s = 100000 / (now_s() - s0);
  CHECK_CU(cu.dtoh(&got, counter, (size_t)8));
  if (got != 100000) fprintf(stderr, "libcuda counted %llu\n", (unsigned long long)got), exit(1);
  int sms;
  CHECK_CU(cu.attr(&sms, 16 /* multiprocessor count */, 0));
  uint64_t a, b, n16 = COPY_BYTES / 16;
  CHECK_CU(cu.mem_alloc(&a, (size_t)COPY_BYTES));
  CHECK_CU(cu.mem_alloc(&b, (size_t)COPY_BYTES));
  void *cp[] = {&a, &b, &n16};
  for (int i = 0; i < 20; i++) t[i] = cu_time(cu_kernel("copy16"), sms * 4, 512, cp);
  r->copy_gbps = 2.0 * COPY_BYTES / median(t + 2, 18) / 1e9;
  int iters = FMA_ITERS;
  void *fp[] = {&a, &iters};
  for (int i = 0; i < 10; i++) t[i] = cu_time(cu_kernel("fma_loop"), sms * 8, 256, fp);
  double flops = (double)sms * 8 * 256 * FMA_ITERS * 16 * 8 * 2;
  r->fma_tflops = flops / median(t + 2, 8) / 1e12;
  void *stream;
  CHECK_CU(cu.stream_create(&stream, 1 /* non-blocking */));
  r->replay_us = cu_replay(empty, stream);
  if (plain_data) {
    void *plain, *k;
    CHECK_CU(cu.module_load(&plain, plain_data));
    CHECK_CU(cu.get_function(&k, plain, "empty_kernel"));
    r->plain_replay_us = cu_replay(k, stream);
  }
  cu_sweep(r, stream);
}

/* Init is timed in a fresh process for each library, so neither pays for the other. */
static double init_in_child(double (*fn)(void)) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    double ms = fn();
    if (write(fds[1], &ms, sizeof ms) != sizeof ms) _exit(1);
    _exit(0);
  }
  double ms = -1;
  if (read(fds[0], &ms, sizeof ms) != sizeof ms) ms = -1;
  waitpid(pid, NULL, 0);
  close(fds[0]), close(fds[1]);
  return ms;
}

/* The bytes of file `path`, or NULL (and errno) if it cannot be read. */
static void *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = malloc(*size ? *size : 1);
  if (data && fread(data, 1, *size, f) != *size) free(data), data = NULL;
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s KERNELS.cubin [PLAIN.cubin]\n", argv[0]), 2;
  if (!(file_data = slurp(argv[1], &file_size))) return perror(argv[1]), 1;
  const char *plain = argc > 2 ? argv[2] : NVHCQ_BENCH_DIR "/startup_kernels_sm_90.cubin";
  plain_data = slurp(plain, &plain_size);
  if (!plain_data && argc > 2) return perror(plain), 1;
  int have_cuda = cuda_load();
  results n = {0}, c = {0};
  n.init_ms = init_in_child(nv_init);
  if (have_cuda) c.init_ms = init_in_child(cu_init);
  nv_init();
  nv_rest(&n);
  if (have_cuda) cu_init(), cu_rest(&c);
  printf("nvhcq compute benchmark (same cubin for both; GPU-timed where noted)\n");
  printf("%-44s %12s %12s\n", "", "nvhcq", have_cuda ? "libcuda" : "(no libcuda)");
  printf("%-44s %12.1f %12.1f\n", "init to first kernel completed (ms)", n.init_ms, c.init_ms);
  printf("%-44s %12.2f %12.2f\n", "launch+sync round trip, empty kernel (us)", n.roundtrip_us,
         c.roundtrip_us);
  printf("%-44s %12.3f %12.3f\n", "host time per launch submitted (us)", n.submit_us, c.submit_us);
  printf("%-44s %12.0f %12.0f\n", "100k atomic launches, sustained (launch/s)", n.launches_per_s,
         c.launches_per_s);
  printf("%-44s %12.1f %12.1f\n", "2 GiB copy kernel (GB/s read+write, GPU)", n.copy_gbps,
         c.copy_gbps);
  printf("%-44s %12.2f %12.2f\n", "FMA loop (fp32 TFLOP/s, GPU)", n.fma_tflops, c.fma_tflops);
  printf("%-44s %12.3f %12.3f\n", "replay of 1000 kernels, per kernel (us)", n.replay_us,
         c.replay_us);
  if (plain_data)
    printf("%-44s %12.3f %12.3f\n", "  the same, module without constant data", n.plain_replay_us,
           c.plain_replay_us);
  double nmed = median(n.sweep_us, SWEEP_PLACES), cmed = median(c.sweep_us, SWEEP_PLACES);
  printf("one-atomic chain of 1000, per node, counter at %d places (us):\n", SWEEP_PLACES);
  printf("%-44s %12.3f %12.3f\n", "  fastest place", n.sweep_us[0], c.sweep_us[0]);
  printf("%-44s %12.3f %12.3f\n", "  median", nmed, cmed);
  printf("%-44s %12.3f %12.3f\n", "  slowest place", n.sweep_us[SWEEP_PLACES - 1],
         c.sweep_us[SWEEP_PLACES - 1]);
  printf("where nvhcq's launch time goes:\n");
  printf("%-44s %12.3f\n", "  recording one launch (host us)", n.record_us);
  printf("%-44s %12.3f\n", "  submitting recorded commands (host us)", n.resubmit_us);
  printf("%-44s %12.3f\n", "  empty launch, GPU start to release (us)", n.empty_gpu_us);
  return 0;
}
