/* Start-up and teardown, nvhcq beside libcuda: open to ready, init to first kernel done, close,
 * 1000 frees while work runs, and loading a ~1 MiB cubin of 100 kernels (the median of ten loads
 * on one device, and the first of them). Every case that starts a driver runs in a fresh child
 * process (libcuda initializes once per process, and the first open in a process is the one
 * users feel), REPEATS times; the medians are printed.
 *
 * usage: nvhcq_bench_startup [REPEATS] (cubins from the build's bench/ folder, or $NVHCQ_BENCH_DIR)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define FREES 1000

static const char *bench_dir(void) {
  const char *env = getenv("NVHCQ_BENCH_DIR");
  return env ? env : NVHCQ_BENCH_DIR;
}

/* A cubin of the build's bench/ folder (or $NVHCQ_BENCH_DIR). */
static void *read_bench_file(const char *name, size_t *size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", bench_dir(), name);
  return read_file(path, size);
}

static int on_mock(void) {
  const char *m = getenv("NVHCQ_MOCK");
  return m && *m && strcmp(m, "0");
}

/* ---- what a child measures: up to 4 figures in ms (or us), written to the pipe ---- */

typedef void (*measure_fn)(double out[4]);

static void nv_open(double out[4]) {
  nvhcq_device *d;
  double t0 = now_s();
  CHECK_NV(nvhcq_device_open(0, &d));
  out[0] = (now_s() - t0) * 1e3;
  t0 = now_s();
  CHECK_NV(nvhcq_device_close(d));
  out[1] = (now_s() - t0) * 1e3;
  t0 = now_s();
  CHECK_NV(nvhcq_device_close_wait(NULL));
  out[2] = (now_s() - t0) * 1e3; /* what close left to the background */
}

/* Opens GPU 0 and loads the start-up kernels' empty_kernel from `cubin`. */
static nvhcq_kernel *open_empty_kernel(const void *cubin, size_t size, nvhcq_device **d) {
  nvhcq_module *m;
  nvhcq_kernel *k;
  CHECK_NV(nvhcq_device_open(0, d));
  CHECK_NV(nvhcq_module_load(*d, cubin, size, &m));
  CHECK_NV(nvhcq_module_get_kernel(m, "empty_kernel", &k));
  return k;
}

static void nv_first_kernel(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_kernels_sm_90.cubin", &size);
  if (!cubin) exit(2);
  double t0 = now_s();
  nvhcq_device *d;
  nvhcq_kernel *k = open_empty_kernel(cubin, size, &d);
  CHECK_NV(nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){32, 1, 1}, 0, NULL,
                                        0, NULL));
  out[0] = (now_s() - t0) * 1e3;
  t0 = now_s();
  CHECK_NV(nvhcq_device_close(d));
  out[1] = (now_s() - t0) * 1e3;
  free(cubin);
}

/* The GPU is kept busy by a 300 ms kernel (on the mock, which runs no kernels, by a copy queued
 * behind a signal the CPU sets after the frees); each free is timed. */
static void nv_frees(double out[4]) {
  nvhcq_device *d;
  CHECK_NV(nvhcq_device_open(0, &d));
  static nvhcq_buffer *b[FREES];
  static double took[FREES];
  for (int i = 0; i < FREES; i++)
    CHECK_NV(nvhcq_buffer_create(d, 64 << 10, NVHCQ_MEMORY_DEVICE, &b[i]));
  nvhcq_signal *gate, *done;
  CHECK_NV(nvhcq_signal_create(d, 0, &gate));
  CHECK_NV(nvhcq_signal_create(d, 0, &done));
  nvhcq_queue *q;
  nvhcq_module *m = NULL;
  size_t size;
  void *cubin = on_mock() ? NULL : read_bench_file("startup_kernels_sm_90.cubin", &size);
  if (cubin) {
    nvhcq_kernel *k;
    CHECK_NV(nvhcq_module_load(d, cubin, size, &m));
    CHECK_NV(nvhcq_module_get_kernel(m, "sleep_kernel", &k));
    CHECK_NV(nvhcq_queue_create(d, NVHCQ_QUEUE_COMPUTE, &q));
    uint64_t ns = 300000000;
    CHECK_NV(
        nvhcq_queue_launch(q, k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){32, 1, 1}, 0, &ns, sizeof ns));
  } else {
    CHECK_NV(nvhcq_queue_create(d, NVHCQ_QUEUE_COPY, &q));
    CHECK_NV(nvhcq_queue_gpu_wait(q, gate, 1));
  }
  CHECK_NV(nvhcq_queue_signal(q, done, 1));
  CHECK_NV(nvhcq_queue_submit(q));
  double t_all = now_s();
  for (int i = 0; i < FREES; i++) {
    double t0 = now_s();
    CHECK_NV(nvhcq_buffer_destroy(b[i]));
    took[i] = (now_s() - t0) * 1e6;
  }
  out[2] = (now_s() - t_all) * 1e3;
  out[3] = nvhcq_signal_value(done) == 0; /* the work was still running after every free */
  nvhcq_signal_set(gate, 1);
  CHECK_NV(nvhcq_signal_cpu_wait(done, 1, 0));
  double worst = 0;
  for (int i = 0; i < FREES; i++) worst = took[i] > worst ? took[i] : worst;
  out[0] = median(took, FREES);
  out[1] = worst;
  CHECK_NV(nvhcq_device_close(d));
  free(cubin);
}

static void nv_module_load(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_module_sm_90.cubin", &size);
  if (!cubin) exit(2);
  nvhcq_device *d;
  CHECK_NV(nvhcq_device_open(0, &d));
  double load[10], unload[10];
  for (int i = 0; i < 10; i++) {
    nvhcq_module *m;
    double t0 = now_s();
    CHECK_NV(nvhcq_module_load(d, cubin, size, &m));
    load[i] = (now_s() - t0) * 1e3;
    t0 = now_s();
    CHECK_NV(nvhcq_module_unload(m));
    unload[i] = (now_s() - t0) * 1e3;
  }
  out[3] = load[0]; /* the first on the device: nvhcq maps its module arena's first chunk */
  out[0] = median(load, 10);
  out[1] = median(unload, 10);
  out[2] = (double)size / (1 << 20);
  CHECK_NV(nvhcq_device_close(d));
  free(cubin);
}

/* NVHCQ_UVM=background: after the first kernel, a 1 MiB allocation and an empty launch every 2 ms
 * until the device has moved onto UVM. The registration's time behind the work, the move's delay
 * of the submission it happened at, the slowest allocation meanwhile (RM calls wait for UVM's),
 * and the time from the open until the move. All 0 where the device never moves. */
static void nv_move(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_kernels_sm_90.cubin", &size);
  if (!cubin) exit(2);
  double t0 = now_s(), slowest = 0;
  nvhcq_device *d;
  nvhcq_kernel *k = open_empty_kernel(cubin, size, &d);
  nvhcq_device_info info = {.struct_size = sizeof info};
  for (int i = 0; i < 1500; i++) {
    CHECK_NV(nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){32, 1, 1}, 0, NULL,
                                          0, NULL));
    CHECK_NV(nvhcq_device_query_info(d, &info));
    if (info.uvm_attached) break;
    double a0 = now_s();
    nvhcq_buffer *b;
    CHECK_NV(nvhcq_buffer_create(d, 1 << 20, NVHCQ_MEMORY_DEVICE, &b));
    CHECK_NV(nvhcq_buffer_destroy(b));
    slowest = now_s() - a0 > slowest ? now_s() - a0 : slowest;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  int moved = info.uvm_attached && info.uvm_move_ms > 0;
  out[0] = moved ? info.uvm_attach_ms : 0;
  out[1] = moved ? info.uvm_move_ms : 0;
  out[2] = moved ? slowest * 1e3 : 0;
  out[3] = moved ? (now_s() - t0) * 1e3 : 0;
  CHECK_NV(nvhcq_device_close(d));
  free(cubin);
}

/* ---- libcuda's equivalents ---- */

static cu_fn cu_sym(const char *name) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  cu_fn f = lib ? (cu_fn)dlsym(lib, name) : NULL;
  if (!f) exit(3);
  return f;
}

static void cu_open(double out[4]) {
  double t0 = now_s();
  void *ctx = cuda_context();
  CHECK_CU(cu.sync());
  out[0] = (now_s() - t0) * 1e3;
  (void)ctx;
  t0 = now_s();
  CHECK_CU(cu_sym("cuDevicePrimaryCtxRelease_v2")(0));
  out[1] = (now_s() - t0) * 1e3;
}

static void cu_first_kernel(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_kernels_sm_90.cubin", &size);
  if (!cubin) exit(2);
  double t0 = now_s();
  cuda_context();
  void *m, *f;
  CHECK_CU(cu.module_load(&m, cubin));
  CHECK_CU(cu.get_function(&f, m, "empty_kernel"));
  CHECK_CU(cu.launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  CHECK_CU(cu.sync());
  out[0] = (now_s() - t0) * 1e3;
  t0 = now_s();
  CHECK_CU(cu_sym("cuDevicePrimaryCtxRelease_v2")(0));
  out[1] = (now_s() - t0) * 1e3;
  free(cubin);
}

static void cu_frees(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_kernels_sm_90.cubin", &size);
  if (!cubin) exit(2);
  cuda_context();
  static uint64_t ptr[FREES];
  static double took[FREES];
  for (int i = 0; i < FREES; i++) CHECK_CU(cu.mem_alloc(&ptr[i], (size_t)64 << 10));
  void *m, *f, *stream;
  CHECK_CU(cu.module_load(&m, cubin));
  CHECK_CU(cu.get_function(&f, m, "sleep_kernel"));
  CHECK_CU(cu.stream_create(&stream, 1));
  uint64_t ns = 300000000;
  void *args[] = {&ns};
  void *start, *end;
  CHECK_CU(cu.event_create(&end, 2));
  (void)start;
  CHECK_CU(cu.launch(f, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL));
  CHECK_CU(cu.event_record(end, stream));
  double t_all = now_s();
  for (int i = 0; i < FREES; i++) {
    double t0 = now_s();
    CHECK_CU(cu.mem_free(ptr[i]));
    took[i] = (now_s() - t0) * 1e6;
  }
  out[2] = (now_s() - t_all) * 1e3;
  out[3] = cu_sym("cuEventQuery")(end) != 0; /* CUDA_ERROR_NOT_READY: still running */
  CHECK_CU(cu.sync());
  double worst = 0;
  for (int i = 0; i < FREES; i++) worst = took[i] > worst ? took[i] : worst;
  out[0] = median(took, FREES);
  out[1] = worst;
  free(cubin);
}

static void cu_module_load(double out[4]) {
  size_t size;
  void *cubin = read_bench_file("startup_module_sm_90.cubin", &size);
  if (!cubin) exit(2);
  cuda_context();
  cu_fn unload_fn = cu_sym("cuModuleUnload");
  double load[10], unload[10];
  for (int i = 0; i < 10; i++) {
    void *m;
    double t0 = now_s();
    CHECK_CU(cu.module_load(&m, cubin));
    load[i] = (now_s() - t0) * 1e3;
    t0 = now_s();
    CHECK_CU(unload_fn(m));
    unload[i] = (now_s() - t0) * 1e3;
  }
  out[3] = load[0];
  out[0] = median(load, 10);
  out[1] = median(unload, 10);
  out[2] = (double)size / (1 << 20);
  free(cubin);
}

/* ---- the parent: runs each case in children, prints medians ---- */

/* Medians over `repeats` children of each of the 4 figures; 0 if the case could not run. */
static int run(measure_fn fn, int cuda, int repeats, double med[4]) {
  double v[4][64];
  int got = 0;
  for (int r = 0; r < repeats; r++) {
    int fds[2];
    if (pipe(fds)) return 0;
    fflush(stdout); /* or the child's exit prints what the parent had buffered again */
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      double out[4] = {0};
      if (cuda && !cuda_load()) _exit(3);
      fn(out);
      if (write(fds[1], out, sizeof out) != sizeof out) _exit(4);
      _exit(0);
    }
    close(fds[1]);
    double out[4];
    ssize_t n = read(fds[0], out, sizeof out);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n != sizeof out || !WIFEXITED(status) || WEXITSTATUS(status)) continue;
    for (int i = 0; i < 4; i++) v[i][got] = out[i];
    got++;
  }
  for (int i = 0; i < 4 && got; i++) med[i] = median(v[i], got);
  return got;
}

static void row(const char *what, const char *unit, int ok_nv, double nv, int ok_cu, double cuda) {
  char a[32] = "n/a", b[32] = "n/a";
  if (ok_nv) snprintf(a, sizeof a, "%.3f", nv);
  if (ok_cu) snprintf(b, sizeof b, "%.3f", cuda);
  printf("  %-46s %12s %12s  %s\n", what, a, b, unit);
}

int main(int argc, char **argv) {
  int repeats = argc > 1 ? atoi(argv[1]) : 5;
  if (repeats < 1 || repeats > 64) repeats = 5;
  printf("start-up (medians of %d fresh processes; cubins from %s)\n", repeats, bench_dir());
  printf("  %-46s %12s %12s\n", "", "nvhcq", "libcuda");
  double n[4] = {0}, c[4] = {0};
  int on = run(nv_open, 0, repeats, n), oc = run(cu_open, 1, repeats, c);
  row("open to ready (cuInit + primary context)", "ms", on, n[0], oc, c[0]);
  row("close, until it returns", "ms", on, n[1], oc, c[1]);
  row("close's background release, joined", "ms", on, n[2], 0, 0);
  on = run(nv_first_kernel, 0, repeats, n), oc = run(cu_first_kernel, 1, repeats, c);
  row("init to first kernel done", "ms", on, n[0], oc, c[0]);
  row("close after a kernel, until it returns", "ms", on, n[1], oc, c[1]);
  on = run(nv_move, 0, repeats, n) && n[1] > 0;
  row("registration with UVM, behind the first work", "ms", on, n[0], 0, 0);
  row("  the move onto UVM, delaying one submission", "ms", on, n[1], 0, 0);
  row("  the slowest 1 MiB alloc+free meanwhile", "ms", on, n[2], 0, 0);
  row("  open until moved", "ms", on, n[3], 0, 0);
  on = run(nv_frees, 0, repeats, n), oc = run(cu_frees, 1, repeats, c);
  row("1000 frees while work runs: each, median", "us", on, n[0], oc, c[0]);
  row("1000 frees while work runs: the slowest", "us", on, n[1], oc, c[1]);
  row("1000 frees while work runs: all", "ms", on, n[2], oc, c[2]);
  row("  the work was still running after them (1 yes)", "", on, n[3], oc, c[3]);
  on = run(nv_module_load, 0, repeats, n), oc = run(cu_module_load, 1, repeats, c);
  char what[64];
  snprintf(what, sizeof what, "module load, %.2f MiB cubin of 100 kernels", on ? n[2] : c[2]);
  row(what, "ms", on, n[0], oc, c[0]);
  row("  the first load on a device", "ms", on, n[3], oc, c[3]);
  row("module unload", "ms", on, n[1], oc, c[1]);
  return 0;
}
