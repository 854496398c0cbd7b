/* Finds the QMDs libcuda builds for known launches in this process's memory and prints them, so
 * nvhcq's choices (shared-memory configuration, end-of-grid membar, chaining) can be compared with
 * the vendor's on the same GPU. usage: nvhcq_qmd_probe TEST_KERNELS.cubin
 *
 * Each probe launch gets a grid width no other launch uses (its tag). After the launch completes,
 * every readable mapping is copied page by page (a fault skips the page) and searched for a
 * V04 QMD: MAJOR_VERSION 4 (bits 583:580) and GRID_WIDTH == tag (bits 1055:1024). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define QMD_WORDS  96
#define MAX_REGION (256ull << 20)
#define PAGE       4096u

static sigjmp_buf jump;
static void on_fault(int sig) {
  siglongjmp(jump, sig);
}

/* Copies what can be read of [start, start + len) into out; unreadable pages become zero. */
static void copy_page(uint8_t *out, const uint8_t *page) {
  if (sigsetjmp(jump, 1) == 0) {
    const volatile uint32_t *src = (const volatile uint32_t *)page;
    uint32_t *dst = (uint32_t *)out;
    for (unsigned i = 0; i < PAGE / 4; i++) dst[i] = src[i];
  } else {
    memset(out, 0, PAGE);
  }
}

static void guarded_copy(uint8_t *out, const uint8_t *start, size_t len) {
  for (size_t off = 0; off < len; off += PAGE) copy_page(out + off, start + off);
}

static void print_qmd(unsigned tag, const char *what, const uint32_t *q, const char *map) {
  printf("QMD tag=%u (%s) in %s\n", tag, what, map);
  for (int i = 0; i < QMD_WORDS; i++) printf("%08x%c", q[i], i % 8 == 7 ? '\n' : ' ');
}

/* Searches every readable mapping for QMDs tagged `tag`; prints each distinct one. */
static unsigned want_threads; /* when nonzero, CTA_THREAD_DIMENSION0 must match too */
static int quiet;             /* sweep mode: driver mappings only, one line per QMD */
static int only_driver;       /* driver mappings only */

static void print_config(unsigned tag, const char *what, const uint32_t *q) {
  /* V04: registers 1208:1200, shared 601:584, MIN/MAX/TARGET config 613:608/619:614/625:620. */
  printf("config %s grid=%u threads=%u regs=%u shared=%u min=%u max=%u target=%u membar=%u\n", what,
         tag, q[36] & 0xffff, (q[37] >> 16) & 0x1ff, (q[18] >> 8) & 0x3ffff, q[19] & 0x3f,
         (q[19] >> 6) & 0x3f, (q[19] >> 12) & 0x3f, q[35] >> 16 & 3);
}

static int scan(unsigned tag, const char *what) {
  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  char line[512];
  int found = 0;
  static uint32_t seen[16][QMD_WORDS];
  int nseen = 0;
  uint8_t *buf = malloc(MAX_REGION);
  while (buf && fgets(line, sizeof line, maps)) {
    unsigned long lo, hi;
    char perms[8], path[256] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3) continue;
    size_t len = hi - lo;
    /* The 64 KiB usermode window holds registers (the doorbell): it is not read. */
    int regs = len == 0x10000 && strncmp(path, "/dev/nvidia", 11) == 0;
    if ((quiet || only_driver) && strncmp(path, "/dev/nvidia", 11)) continue;
    if (perms[0] != 'r' || len > MAX_REGION || regs || strstr(path, "[v") ||
        ((uintptr_t)buf >= lo && (uintptr_t)buf < hi))
      continue;
    guarded_copy(buf, (const uint8_t *)lo, len);
    const uint32_t *w = (const uint32_t *)buf;
    for (size_t i = 0; i + QMD_WORDS <= len / 4; i++) {
      if (w[i + 32] != tag || ((w[i + 18] >> 4) & 0xf) != 4) continue;
      if (want_threads && w[i + 36] != (want_threads | 1u << 16)) continue;
      int dup = 0;
      for (int s = 0; s < nseen; s++) dup |= !memcmp(seen[s], w + i, sizeof seen[s]);
      if (dup) continue;
      if (nseen < 16) memcpy(seen[nseen++], w + i, sizeof seen[0]);
      char where[400];
      snprintf(where, sizeof where, "%s %s +0x%zx", path[0] ? path : "(anonymous)", perms, i * 4);
      if (quiet)
        print_config(tag, what, w + i);
      else
        print_qmd(tag, what, w + i, where);
      found++;
    }
  }
  free(buf);
  fclose(maps);
  if (!found) printf("QMD tag=%u (%s): not found in readable memory\n", tag, what);
  return found;
}

typedef int (*cu_set_attr_fn)(void *, int, int);

/* libcuda's command streams that bind the compute class (SET_OBJECT 0xcbc0 on any subchannel):
 * 4096 words from each, as hex, to read which compute methods libcuda sends. */
static void dump_pushbuffers(void) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  uint8_t *buf = malloc(MAX_REGION);
  int found = 0;
  while (buf && maps && fgets(line, sizeof line, maps) && found < 6) {
    unsigned long lo, hi;
    char perms[8], path[256] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3) continue;
    size_t len = hi - lo;
    if (strncmp(path, "/dev/nvidia", 11) || perms[0] != 'r' || len > MAX_REGION || len == 0x10000)
      continue;
    guarded_copy(buf, (const uint8_t *)lo, len);
    const uint32_t *w = (const uint32_t *)buf;
    for (size_t i = 0; i + 1 < len / 4 && found < 6; i++) {
      if ((w[i] & ~0xe000u) != 0x20010000u || (w[i + 1] & 0xffff) != 0xcbc0) continue;
      printf("PUSHBUF %s +0x%zx subchannel %u\n", path, i * 4, (w[i] >> 13) & 7);
      for (size_t j = i; j < i + 4096 && j < len / 4; j++)
        printf("%08x%c", w[j], (j - i) % 8 == 7 ? '\n' : ' ');
      printf("\n");
      found++;
      i += 4096;
    }
  }
  free(buf);
  if (maps) fclose(maps);
  if (!found) printf("no SET_OBJECT 0xcbc0 found\n");
}

/* nvhcq's own QMDs for three chained ew_add launches, from its argument ring. */
static void nvhcq_own(const char *path) {
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_queue *q;
  CHECK_NV(nvhcq_device_open(0, &dev));
  CHECK_NV(nvhcq_module_load_file(dev, path, &mod));
  CHECK_NV(nvhcq_module_get_kernel(mod, "ew_add", &k));
  nvhcq_buffer *b;
  CHECK_NV(nvhcq_buffer_create(dev, 64 << 20, NVHCQ_MEMORY_DEVICE, &b));
  uint8_t args[28] = {0};
  uint64_t a = nvhcq_buffer_gpu_address(b);
  uint32_t n = 1 << 20;
  memcpy(args, &a, 8), memcpy(args + 8, &a, 8), memcpy(args + 16, &a, 8), memcpy(args + 24, &n, 4);
  CHECK_NV(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q));
  for (int i = 0; i < 3; i++)
    CHECK_NV(nvhcq_queue_launch(q, k, (nvhcq_dim3){1024, 1, 1}, (nvhcq_dim3){128, 1, 1}, 0, args,
                                sizeof args));
  CHECK_NV(nvhcq_queue_submit(q));
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  only_driver = 1, want_threads = 128;
  scan(1024, "nvhcq queue of 3 ew_add");
  nvhcq_device_close(dev);
}

/* Graphs of three launches of the benchmark's real kernels (bench/real_kernels.cu). */
static void real_graphs(const char *path) {
  static uint8_t image[4 << 20];
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path);
  size_t n = fread(image, 1, sizeof image, f);
  fclose(f);
  if (!n) return;
  void *mod, *ew, *sm;
  CHECK_CU(cu.module_load(&mod, image));
  CHECK_CU(cu.get_function(&ew, mod, "ew_add"));
  CHECK_CU(cu.get_function(&sm, mod, "softmax_rows"));
  uint64_t a, b, c;
  CHECK_CU(cu.mem_alloc(&a, (size_t)64 << 20));
  CHECK_CU(cu.mem_alloc(&b, (size_t)64 << 20));
  CHECK_CU(cu.mem_alloc(&c, (size_t)64 << 20));
  int count = 1 << 20, rows = 4096, cols = 1000;
  void *ew_args[] = {&a, &b, &c, &count}, *sm_args[] = {&a, &b, &rows, &cols};
  only_driver = 1;
  for (int which = 0; which < 2; which++) {
    void *stream, *graph, *exec;
    unsigned grid = which ? 4096 : 1024;
    CHECK_CU(cu.stream_create(&stream, 1));
    CHECK_CU(cu.begin_capture(stream, 0));
    for (int i = 0; i < 3; i++)
      CHECK_CU(cu.launch(which ? sm : ew, grid, 1, 1, 128, 1, 1, 0, stream,
                         which ? sm_args : ew_args, NULL));
    CHECK_CU(cu.end_capture(stream, &graph));
    CHECK_CU(cu.instantiate(&exec, graph, 0ull));
    CHECK_CU(cu.graph_launch(exec, stream));
    CHECK_CU(cu.stream_sync(stream));
    want_threads = 128;
    scan(grid, which ? "graph of 3 softmax_rows" : "graph of 3 ew_add");
  }
}

/* Shared-memory configurations libcuda picks over block sizes and dynamic shared memory: one line
 * per launch. Grids are small (each its own tag): libcuda's choice does not depend on the grid. */
static void sweep(void *add, void *reduce, void *fma, void **add_args, uint64_t in, uint64_t out,
                  cu_set_attr_fn set_attr) {
  static const unsigned threads[] = {32, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  static const unsigned dyn_kib[] = {0,  1,  2,  3,  5,  7,   11,  15,  23,
                                     31, 47, 63, 79, 99, 131, 163, 195, 226};
  unsigned tag = 101;
  quiet = 1;
  int iters = 1;
  void *fma_args[] = {&out, &iters};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++, tag += 2) {
    want_threads = threads[t];
    CHECK_CU(cu.launch(add, tag, 1, 1, threads[t], 1, 1, 0, NULL, add_args, NULL));
    CHECK_CU(cu.sync());
    scan(tag, "vector_add");
    tag += 2;
    CHECK_CU(cu.launch(fma, tag, 1, 1, threads[t], 1, 1, 0, NULL, fma_args, NULL));
    CHECK_CU(cu.sync());
    scan(tag, "fma_loop");
  }
  if (set_attr) CHECK_CU(set_attr(reduce, 8 /* max dynamic shared */, 226 << 10));
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
    for (size_t d = 0; d < sizeof dyn_kib / sizeof dyn_kib[0]; d++, tag += 2) {
      int ints = (int)(dyn_kib[d] << 8);
      void *args[] = {&in, &out, &ints};
      want_threads = threads[t];
      CHECK_CU(cu.launch(reduce, tag, 1, 1, threads[t], 1, 1, dyn_kib[d] << 10, NULL, args, NULL));
      CHECK_CU(cu.sync());
      scan(tag, "reduce_dynamic");
    }
}

int main(int argc, char **argv) {
  if (argc < 2)
    return fprintf(stderr, "usage: %s device_kernels_sm_90.cubin [--sweep]\n", argv[0]), 2;
  if (!cuda_load()) return fprintf(stderr, "libcuda is needed\n"), 1;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror(argv[1]), 1;
  static uint8_t image[8 << 20];
  size_t n = fread(image, 1, sizeof image, f);
  fclose(f);
  if (!n) return 1;
  struct sigaction sa = {.sa_handler = on_fault};
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  cu_set_attr_fn set_attr =
      (cu_set_attr_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuFuncSetAttribute");
  cuda_context();
  void *mod, *add, *reduce, *empty, *fma;
  CHECK_CU(cu.module_load(&mod, image));
  CHECK_CU(cu.get_function(&add, mod, "vector_add"));
  CHECK_CU(cu.get_function(&reduce, mod, "reduce_dynamic"));
  CHECK_CU(cu.get_function(&empty, mod, "empty"));
  CHECK_CU(cu.get_function(&fma, mod, "fma_loop"));
  uint64_t a, b, c;
  int count = 1 << 20, ints = 100 << 8;
  CHECK_CU(cu.mem_alloc(&a, (size_t)256 << 20));
  CHECK_CU(cu.mem_alloc(&b, (size_t)64 << 20));
  CHECK_CU(cu.mem_alloc(&c, (size_t)64 << 20));
  void *add_args[] = {&a, &b, &c, &count}, *red_args[] = {&a, &b, &ints};
  if (argc > 2 && !strcmp(argv[2], "--pushbuf")) {
    void *stream, *graph, *exec;
    CHECK_CU(cu.stream_create(&stream, 1));
    CHECK_CU(cu.begin_capture(stream, 0));
    for (int i = 0; i < 3; i++)
      CHECK_CU(cu.launch(add, 4251, 1, 1, 128, 1, 1, 0, stream, add_args, NULL));
    CHECK_CU(cu.end_capture(stream, &graph));
    CHECK_CU(cu.instantiate(&exec, graph, 0ull));
    CHECK_CU(cu.graph_launch(exec, stream));
    CHECK_CU(cu.stream_sync(stream));
    dump_pushbuffers();
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--nvhcq")) {
    nvhcq_own(argv[3]);
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--real")) {
    real_graphs(argv[3]);
    return 0;
  }
  if (argc > 2 && !strcmp(argv[2], "--sweep")) {
    sweep(add, reduce, fma, add_args, a, b, set_attr);
    return 0;
  }
  /* Eager launches of several shapes. */
  static const struct {
    unsigned grid, block;
    int kernel; /* 0 vector_add, 1 reduce_dynamic (100 KiB dynamic), 2 empty */
    const char *what;
  } eager[] = {
      {4243, 128, 0, "eager vector_add 128 threads"},
      {4249, 1024, 0, "eager vector_add 1024 threads"},
      {7, 128, 0, "eager vector_add grid 7"},
      {4247, 256, 1, "eager reduce_dynamic 100 KiB dynamic"},
      {4261, 1, 2, "eager empty 1 thread"},
  };
  if (set_attr) CHECK_CU(set_attr(reduce, 8 /* max dynamic shared */, 100 << 10));
  for (size_t i = 0; i < sizeof eager / sizeof eager[0]; i++) {
    void *fn = eager[i].kernel == 0 ? add : eager[i].kernel == 1 ? reduce : empty;
    void **args = eager[i].kernel == 0 ? add_args : eager[i].kernel == 1 ? red_args : NULL;
    unsigned shared = eager[i].kernel == 1 ? 100u << 10 : 0;
    CHECK_CU(cu.launch(fn, eager[i].grid, 1, 1, eager[i].block, 1, 1, shared, NULL, args, NULL));
    CHECK_CU(cu.sync());
    scan(eager[i].grid, eager[i].what);
  }
  /* Two launches back to back, then a graph of three. */
  CHECK_CU(cu.launch(add, 4257, 1, 1, 128, 1, 1, 0, NULL, add_args, NULL));
  CHECK_CU(cu.launch(add, 4259, 1, 1, 128, 1, 1, 0, NULL, add_args, NULL));
  CHECK_CU(cu.sync());
  scan(4257, "eager pair, first");
  scan(4259, "eager pair, second");
  void *stream, *graph, *exec;
  CHECK_CU(cu.stream_create(&stream, 1));
  CHECK_CU(cu.begin_capture(stream, 0));
  for (unsigned g = 4251; g <= 4255; g += 2)
    CHECK_CU(cu.launch(add, g, 1, 1, 128, 1, 1, 0, stream, add_args, NULL));
  CHECK_CU(cu.end_capture(stream, &graph));
  CHECK_CU(cu.instantiate(&exec, graph, 0ull));
  CHECK_CU(cu.graph_launch(exec, stream));
  CHECK_CU(cu.stream_sync(stream));
  scan(4251, "graph node 1 of 3");
  scan(4253, "graph node 2 of 3");
  scan(4255, "graph node 3 of 3");
  return 0;
}
