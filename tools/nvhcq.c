/* nvhcq command-line tool. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "profile_svg.h"
#include "nvhcq.h"

/* `what` may be NULL where the library's message already names it (an open says which GPU). */
static int fail(const char *what, nvhcq_status s) {
  fprintf(stderr, "nvhcq: %s%s%s (%s)\n", what ? what : "", what ? ": " : "", nvhcq_last_error(),
          nvhcq_status_name(s));
  return 1;
}

static void print_info(int index, const nvhcq_device_info *i, uint32_t mask_tpcs,
                       uint32_t loose_sms) {
  printf("GPU %d: %s\n", index, i->name);
  printf("  uuid            %s\n", i->uuid_string);
  printf("  pci             %04x:%02x:%02x.%x, device 0x%04x, subsystem 0x%04x of vendor 0x%04x\n",
         i->pci_domain, i->pci_bus, i->pci_device, i->pci_function, i->pci_id >> 16,
         i->pci_subsystem_id >> 16, i->pci_subsystem_id & 0xffff);
  printf("  architecture    %s (SM version 0x%x)\n", i->arch, i->sm_version);
  printf("  multiprocessors %u (chip: %u GPCs x %u TPCs x %u SMs), %u warps each\n", i->sm_count,
         i->gpcs, i->tpcs_per_gpc, i->sms_per_tpc, i->warps_per_sm);
  printf("  TPC masks       %u TPCs (%u SMs) can be named, %u SMs answer to no slot%s\n", mask_tpcs,
         mask_tpcs * i->sms_per_tpc, loose_sms,
         i->sm_version >= 0x900 ? "" : "; masks need Hopper or later");
  printf("  memory          %.1f GiB\n", i->memory_bytes / (double)(1ull << 30));
  printf("  driver          %s (%s kernel module)\n", i->driver_version,
         i->open_kernel_module ? "open" : "proprietary");
  printf("  classes         compute 0x%04x, copy 0x%04x, gpfifo 0x%04x, usermode 0x%04x\n",
         i->compute_class, i->copy_class, i->gpfifo_class, i->usermode_class);
  if (i->copy_engine >= 0)
    printf("  copies          asynchronous copy engine %d\n", i->copy_engine);
  else
    printf("  copies          the graphics channel group's copy engine\n");
  printf("  preemption      %s\n", i->preemption == NVHCQ_OPEN_PREEMPT_BLOCK
                                       ? "between blocks (another process's work may run mid-grid)"
                                       : "after whole grids");
  printf("  opened in       %.1f ms\n", i->open_ms);
}

/* The facts need no UVM: without it the open is ~13 ms instead of the ~95 ms UVM's bring-up of
 * the GPU takes (which a background registration would make the process's exit wait for). */
static int cmd_info(void) {
  setenv("NVHCQ_UVM", "off", 0);
  int count;
  nvhcq_status s = nvhcq_device_count(&count);
  if (s) return fail("listing GPUs", s);
  if (count == 0) {
    fprintf(stderr, "nvhcq: no NVIDIA GPU is visible (check NVHCQ_VISIBLE_DEVICES / "
                    "CUDA_VISIBLE_DEVICES)\n");
    return 1;
  }
  for (int i = 0; i < count; i++) {
    nvhcq_device *dev;
    nvhcq_device_info info = {.struct_size = sizeof info};
    if ((s = nvhcq_device_open(i, &dev))) return fail(NULL, s);
    nvhcq_device_query_info(dev, &info);
    uint32_t slots[4], tpcs = 0, loose[8] = {0}, loose_sms = 0;
    nvhcq_device_query_tpcs(dev, slots, &tpcs);
    nvhcq_device_query_tpc_sms(dev, NVHCQ_TPC_SLOT_NONE, loose);
    for (int w = 0; w < 8; w++) loose_sms += (uint32_t)__builtin_popcount(loose[w]);
    print_info(i, &info, tpcs, loose_sms);
    if ((s = nvhcq_device_close(dev))) return fail("closing GPU", s);
  }
  return 0;
}

/* ---- run ---- */

static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = n > 0 ? malloc((size_t)n) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) free(data), data = NULL;
  fclose(f);
  *size = data ? (size_t)n : 0;
  return data;
}

typedef struct run_buffer {
  nvhcq_buffer *buf;
  size_t size;
  int arg; /* position in the argument list */
} run_buffer;

/* A device buffer from a spec (see cli_parse_buffer), filled from a file or a pattern. */
static int make_buffer(nvhcq_device *dev, const char *spec_text, run_buffer *rb) {
  cli_buffer_spec spec;
  if (cli_parse_buffer(spec_text, &spec))
    return fprintf(stderr,
                   "nvhcq run: bad buffer '%s' (buf:BYTES[:iota32|:iotaf32|:u32=V|:f32=V] "
                   "or file:PATH)\n",
                   spec_text),
           -1;
  unsigned char *host = NULL;
  if (spec.path) {
    host = read_file(spec.path, &rb->size);
    if (!host)
      return fprintf(stderr, "nvhcq run: cannot read %s (or it is empty)\n", spec.path), -1;
  } else {
    rb->size = (size_t)spec.bytes;
    host = malloc(rb->size);
    if (!host) return fprintf(stderr, "nvhcq run: no host memory for %zu bytes\n", rb->size), -1;
    cli_fill_buffer(&spec, host, rb->size);
  }
  nvhcq_status s = nvhcq_buffer_create(dev, rb->size, NVHCQ_MEMORY_DEVICE, &rb->buf);
  if (!s) s = nvhcq_buffer_write(rb->buf, 0, host, rb->size);
  free(host);
  return s ? fail("allocating a buffer", s), -1 : 0;
}

static void print_buffer(const run_buffer *rb, const char *fmt, size_t count) {
  unsigned char *h = malloc(rb->size);
  if (!h || nvhcq_buffer_read(h, rb->buf, 0, rb->size)) {
    fprintf(stderr, "nvhcq run: reading argument %d back: %s\n", rb->arg, nvhcq_last_error());
    free(h);
    return;
  }
  size_t n = rb->size / 4 < count ? rb->size / 4 : count;
  printf("arg %d:", rb->arg);
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, h + 4 * i, 4);
    float f;
    memcpy(&f, &u, 4);
    if (!strcmp(fmt, "f32"))
      printf(" %g", f);
    else if (!strcmp(fmt, "i32"))
      printf(" %d", (int32_t)u);
    else
      printf(" 0x%08x", u);
  }
  printf("%s\n", n < rb->size / 4 ? " ..." : "");
  free(h);
}

static int run_usage(void) {
  fprintf(stderr,
          "usage: nvhcq run MODULE.cubin KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--shared BYTES]\n"
          "                 [--print N[:f32|i32|hex]] [--out N=FILE] ARG...\n"
          "ARG: i32:V u32:V i64:V u64:V f32:V f64:V   scalars\n"
          "     buf:BYTES[:iota32|:iotaf32|:u32=V|:f32=V]  a new device buffer (its address)\n"
          "     file:PATH                                  a device buffer filled from a file\n");
  return 2;
}

static int cmd_run(int argc, char **argv) {
  if (argc < 4) return run_usage();
  nvhcq_dim3 grid = {1, 1, 1}, block = {1, 1, 1};
  unsigned shared = 0;
  const char *prints[16], *outs[16];
  int nprint = 0, nout = 0;
  const char *args_spec[64];
  int nargs = 0;
  for (int i = 4; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--grid") && next) {
      if (cli_parse_dims(argv[++i], &grid)) return run_usage();
    } else if (!strcmp(a, "--block") && next) {
      if (cli_parse_dims(argv[++i], &block)) return run_usage();
    } else if (!strcmp(a, "--shared") && next) {
      shared = (unsigned)strtoul(argv[++i], NULL, 0);
    } else if (!strcmp(a, "--print") && next && nprint < 16) {
      prints[nprint++] = argv[++i];
    } else if (!strcmp(a, "--out") && next && nout < 16) {
      outs[nout++] = argv[++i];
    } else if (!strncmp(a, "--", 2) || nargs == 64) {
      return run_usage();
    } else {
      args_spec[nargs++] = a;
    }
  }
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_status s;
  if ((s = nvhcq_device_open(0, &dev))) return fail(NULL, s);
  if ((s = nvhcq_module_load_file(dev, argv[2], &mod))) return fail("loading the module", s);
  if ((s = nvhcq_module_get_kernel(mod, argv[3], &k))) return fail("finding the kernel", s);
  unsigned char args[4096];
  size_t len = 0;
  run_buffer bufs[64];
  int nbufs = 0, rc = 0;
  for (int i = 0; i < nargs && !rc; i++) {
    if (!strncmp(args_spec[i], "buf:", 4) || !strncmp(args_spec[i], "file:", 5)) {
      run_buffer *rb = &bufs[nbufs];
      rb->arg = i;
      if (make_buffer(dev, args_spec[i], rb))
        rc = 1;
      else {
        uint64_t addr = nvhcq_buffer_gpu_address(rb->buf);
        cli_append(args, &len, sizeof args, &addr, 8);
        nbufs++;
      }
    } else if (cli_append_scalar(args_spec[i], args, &len, sizeof args)) {
      fprintf(stderr, "nvhcq run: argument %d '%s' is not a scalar (i32:V ...) or a buffer\n", i,
              args_spec[i]);
      rc = 2;
    }
  }
  nvhcq_kernel_info info = {.struct_size = sizeof info};
  nvhcq_kernel_query_info(k, &info);
  /* Trailing padding of the parameter block (a 4-byte scalar last, 8-byte alignment). */
  if (!rc && len < info.param_size && info.param_size - len < 8) {
    memset(args + len, 0, info.param_size - len);
    len = info.param_size;
  }
  uint64_t ns = 0;
  if (!rc && (s = nvhcq_kernel_launch_cpu_wait(k, grid, block, shared, args, len, &ns)))
    rc = fail("launching", s);
  if (!rc) printf("%s: %.3f us on the GPU\n", argv[3], ns / 1e3);
  for (int p = 0; p < nprint && !rc; p++) {
    int n = atoi(prints[p]);
    const char *fmt = strchr(prints[p], ':') ? strchr(prints[p], ':') + 1 : "hex";
    for (int b = 0; b < nbufs; b++)
      if (bufs[b].arg == n) print_buffer(&bufs[b], fmt, 16);
  }
  for (int o = 0; o < nout && !rc; o++) {
    int n = atoi(outs[o]);
    const char *path = strchr(outs[o], '=');
    for (int b = 0; b < nbufs && path; b++) {
      if (bufs[b].arg != n) continue;
      unsigned char *h = malloc(bufs[b].size);
      FILE *f = fopen(path + 1, "wb");
      if (h && f && !nvhcq_buffer_read(h, bufs[b].buf, 0, bufs[b].size))
        fwrite(h, 1, bufs[b].size, f);
      else
        rc = 1, fprintf(stderr, "nvhcq run: cannot write %s\n", path + 1);
      if (f) fclose(f);
      free(h);
    }
  }
  for (int b = 0; b < nbufs; b++) nvhcq_buffer_destroy(bufs[b].buf);
  nvhcq_module_unload(mod);
  nvhcq_device_close(dev);
  return rc;
}

/* ---- compile ---- */

static int cmd_compile(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *arch = NULL;
  const char *opts[64];
  int nopts = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
      arch = argv[++i];
    else if (!strcmp(argv[i], "--")) {
      while (++i < argc && nopts < 64) opts[nopts++] = argv[i];
    } else if (!in && argv[i][0] != '-')
      in = argv[i];
    else
      return fprintf(
                 stderr,
                 "usage: nvhcq compile FILE -o OUT.cubin [--arch sm_XX] [-- COMPILER OPTIONS]\n"),
             2;
  }
  if (!in || !out)
    return fprintf(stderr,
                   "usage: nvhcq compile FILE -o OUT.cubin [--arch sm_XX] [-- COMPILER OPTIONS]\n"),
           2;
  size_t size;
  void *src = read_file(in, &size);
  if (!src) return fprintf(stderr, "nvhcq compile: cannot read %s\n", in), 1;
  nvhcq_device_info info = {.struct_size = sizeof info};
  if (!arch) { /* the first GPU's architecture */
    nvhcq_device *dev;
    nvhcq_status s = nvhcq_device_open(0, &dev);
    if (s) return free(src), fail("finding the GPU's architecture (or pass --arch sm_XX)", s);
    nvhcq_device_query_info(dev, &info);
    nvhcq_device_close(dev);
    arch = info.arch;
  }
  void *bin;
  size_t bin_size;
  nvhcq_status s = nvhcq_binary_compile(src, size, arch, opts, nopts, &bin, &bin_size);
  free(src);
  if (s) return fail(in, s);
  FILE *f = fopen(out, "wb");
  int ok = f && fwrite(bin, 1, bin_size, f) == bin_size;
  if (f) ok = fclose(f) == 0 && ok;
  nvhcq_binary_destroy(bin);
  if (!ok) return fprintf(stderr, "nvhcq compile: cannot write %s\n", out), 1;
  printf("%s: %zu bytes for %s\n", out, bin_size, arch);
  return 0;
}

/* ---- demo: the README's main job ---- */

static const char saxpy_cu[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmd_demo(void) {
  const unsigned n = 16u << 20;
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_device_info info = {.struct_size = sizeof info};
  nvhcq_status s;
  double t0 = seconds();
  if ((s = nvhcq_device_open(0, &dev))) return fail("nvhcq demo", s);
  double t1 = seconds();
  nvhcq_device_query_info(dev, &info);
  if ((s = nvhcq_module_load_any(dev, saxpy_cu, sizeof saxpy_cu - 1, NULL, 0, &mod)))
    return fail("compiling SAXPY", s);
  double t2 = seconds();
  if ((s = nvhcq_module_get_kernel(mod, "saxpy", &k))) return fail("finding saxpy", s);
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *out = malloc(n * sizeof *out);
  for (unsigned i = 0; i < n; i++) x[i] = (float)(i % 1000) * 0.5f, y[i] = (float)(i % 77);
  nvhcq_buffer *dx, *dy;
  if ((s = nvhcq_buffer_create(dev, n * sizeof *x, NVHCQ_MEMORY_DEVICE, &dx)) ||
      (s = nvhcq_buffer_create(dev, n * sizeof *y, NVHCQ_MEMORY_DEVICE, &dy)) ||
      (s = nvhcq_buffer_write(dx, 0, x, n * sizeof *x)) ||
      (s = nvhcq_buffer_write(dy, 0, y, n * sizeof *y)))
    return fail("preparing buffers", s);
  struct {
    float a;
    uint32_t pad;
    uint64_t x, y;
    uint32_t n;
  } args = {2.5f, 0, nvhcq_buffer_gpu_address(dx), nvhcq_buffer_gpu_address(dy), n};
  uint64_t ns = 0;
  if ((s = nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){n / 256, 1, 1}, (nvhcq_dim3){256, 1, 1}, 0,
                                        &args, 28, &ns)))
    return fail("launching saxpy", s);
  if ((s = nvhcq_buffer_read(out, dy, 0, n * sizeof *out))) return fail("reading the result", s);
  unsigned bad = 0;
  for (unsigned i = 0; i < n; i++) bad += out[i] != 2.5f * x[i] + y[i];
  printf("nvhcq demo on GPU 0, %s (%s, %u SMs), driver %s\n", info.name, info.arch, info.sm_count,
         info.driver_version);
  printf("  device opened in      %.1f ms\n", (t1 - t0) * 1e3);
  printf("  SAXPY compiled in     %.1f ms (NVRTC, or the cache in ~/.cache/nvhcq)\n",
         (t2 - t1) * 1e3);
  printf("  SAXPY on %u floats: %.1f us on the GPU, %.0f GB/s\n", n, ns / 1e3,
         3.0 * n * sizeof(float) / (ns * 1e-9) / 1e9);
  printf("  result: %s (%u of %u elements differ from the CPU)\n", bad ? "WRONG" : "correct", bad,
         n);
  nvhcq_buffer_destroy(dx), nvhcq_buffer_destroy(dy), nvhcq_module_unload(mod),
      nvhcq_device_close(dev);
  free(x), free(y), free(out);
  return bad ? 1 : 0;
}

/* Keeps every visible GPU open (and so registered with UVM) until the process is stopped: UVM's
 * bring-up of a GPU (~95 ms of an open on the H200) is done once for every process while one
 * holds it, so other processes' opens skip it. */
static int cmd_hold(void) {
  int count = 0;
  nvhcq_status s = nvhcq_device_count(&count);
  if (s) return fail("nvhcq_device_count", s);
  for (int i = 0; i < count; i++) {
    nvhcq_device *d;
    if ((s = nvhcq_device_open(i, &d))) return fail("nvhcq_device_open", s);
    if ((s = nvhcq_device_attach_uvm(d))) return fail("nvhcq_device_attach_uvm", s);
  }
  printf("holding %d GPU%s open; stop with Ctrl-C or kill %ld\n", count, count == 1 ? "" : "s",
         (long)getpid());
  fflush(stdout);
  for (;;) pause();
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: nvhcq COMMAND\n\n"
          "commands:\n"
          "  info    list visible GPUs and their facts\n"
          "  run     run a kernel from a .cubin, .ptx or .cu file (nvhcq run for its arguments)\n"
          "  compile compile CUDA C or PTX into a cubin (nvhcq compile for its arguments)\n"
          "  demo    compile SAXPY, run it on GPU 0 and check it against the CPU\n"
          "  profile run a program with the timeline profiler (a Chrome/Perfetto trace), or\n"
          "          draw a trace as an SVG timeline (nvhcq profile for its arguments)\n"
          "  hold    keep every GPU open until stopped (other processes then open faster)\n"
          "  help    this text\n\n"
          "environment: NVHCQ_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, NVHCQ_TIMEOUT_MS,\n"
          "             NVHCQ_TRACE=1 (print every driver call), NVHCQ_PROFILE=trace.json\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "info")) return cmd_info();
  if (!strcmp(argv[1], "run")) return cmd_run(argc, argv);
  if (!strcmp(argv[1], "compile")) return cmd_compile(argc, argv);
  if (!strcmp(argv[1], "demo")) return cmd_demo();
  if (!strcmp(argv[1], "profile")) return cmd_profile(argc, argv);
  if (!strcmp(argv[1], "hold")) return cmd_hold();
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "nvhcq: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
