/* Finds the QMDs libcuda builds for known launches in this process's memory and prints them, so
 * nvhcq's choices (shared-memory configuration, end-of-grid membar, chaining) can be compared with
 * the vendor's on the same GPU. usage: nvhcq_qmd_probe TEST_KERNELS.cubin [--eager | --chain | ...]
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
/* matmul_f16 of bench/real_kernels.cu at a size whose grid width no other probe launch has, with
 * its dynamic shared memory (MM_SHARED_BYTES there). */
#define MM_PROBE_N      2944
#define MM_PROBE_SHARED 71680

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

/* The bytes of the file at `path` (a cubin) into `buf` of `cap` bytes: how many, 0 on failure
 * (said). */
static size_t read_image(const char *path, uint8_t *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path), 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void print_qmd(unsigned tag, const char *what, const uint32_t *q, const char *map) {
  printf("QMD tag=%u (%s) in %s\n", tag, what, map);
  for (int i = 0; i < QMD_WORDS; i++) printf("%08x%c", q[i], i % 8 == 7 ? '\n' : ' ');
}

static size_t words_around; /* also print this many words before each QMD and after it */

/* The command words around a QMD found inside a pushbuffer: the methods that carried it. */
static void print_around(const uint32_t *w, size_t at, size_t n) {
  size_t from = at > words_around ? at - words_around : 0;
  size_t to = at + QMD_WORDS + words_around < n ? at + QMD_WORDS + words_around : n;
  printf("words before:\n");
  for (size_t j = from; j < at; j++) printf("%08x%c", w[j], (j - from) % 8 == 7 ? '\n' : ' ');
  printf("\nwords after:\n");
  for (size_t j = at + QMD_WORDS; j < to; j++)
    printf("%08x%c", w[j], (j - at - QMD_WORDS) % 8 == 7 ? '\n' : ' ');
  printf("\n");
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

static uint32_t last_qmd[QMD_WORDS]; /* the last QMD scan found */
static int last_qmd_valid;

static int scan(unsigned tag, const char *what) {
  last_qmd_valid = 0;
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
      memcpy(last_qmd, w + i, sizeof last_qmd), last_qmd_valid = 1;
      char where[400];
      snprintf(where, sizeof where, "%s %s +0x%zx", path[0] ? path : "(anonymous)", perms, i * 4);
      if (quiet)
        print_config(tag, what, w + i);
      else
        print_qmd(tag, what, w + i, where);
      if (words_around) print_around(w, i, len / 4);
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
  uint32_t mm_n = MM_PROBE_N;
  memcpy(args + 24, &mm_n, 4);
  CHECK_NV(nvhcq_module_get_kernel(mod, "matmul_f16", &k));
  CHECK_NV(nvhcq_queue_launch(q, k, (nvhcq_dim3){MM_PROBE_N / 128, MM_PROBE_N / 128, 1},
                              (nvhcq_dim3){256, 1, 1}, MM_PROBE_SHARED, args, sizeof args));
  CHECK_NV(nvhcq_queue_submit(q));
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  want_threads = 256;
  scan(MM_PROBE_N / 128, "nvhcq matmul_f16");
  nvhcq_device_close(dev);
}

/* nvhcq's QMDs for four chained atomic_increment launches (the --chain graph's nodes), as the GPU
 * reads them from the argument ring. */
static void nvhcq_chain(const uint8_t *image, size_t size) {
  nvhcq_device *dev;
  nvhcq_module *mod;
  nvhcq_kernel *k;
  nvhcq_queue *q;
  nvhcq_buffer *b;
  CHECK_NV(nvhcq_device_open(0, &dev));
  CHECK_NV(nvhcq_module_load(dev, image, size, &mod));
  CHECK_NV(nvhcq_module_get_kernel(mod, "atomic_increment", &k));
  CHECK_NV(nvhcq_buffer_create(dev, 4096, NVHCQ_MEMORY_DEVICE, &b));
  uint64_t a = nvhcq_buffer_gpu_address(b);
  CHECK_NV(nvhcq_queue_create(dev, NVHCQ_QUEUE_COMPUTE, &q));
  for (unsigned g = 4301; g <= 4307; g += 2)
    CHECK_NV(nvhcq_queue_launch(q, k, (nvhcq_dim3){g, 1, 1}, (nvhcq_dim3){1, 1, 1}, 0, &a, 8));
  CHECK_NV(nvhcq_queue_submit(q));
  CHECK_NV(nvhcq_device_cpu_wait_idle(dev));
  only_driver = 1, want_threads = 1;
  for (unsigned g = 4301; g <= 4307; g += 2) scan(g, "nvhcq chain node");
  nvhcq_device_close(dev);
}

/* Graphs of three launches of the benchmark's real kernels (bench/real_kernels.cu). */
static void real_graphs(const char *path) {
  static uint8_t image[4 << 20];
  size_t n = read_image(path, image, sizeof image);
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
  /* matmul_f16 over a 2944-square problem: grid width 23, which no other launch has. */
  void *mm, *stream;
  int mm_n = MM_PROBE_N;
  void *mm_args[] = {&a, &b, &c, &mm_n};
  CHECK_CU(cu.get_function(&mm, mod, "matmul_f16"));
  CHECK_CU(cu.func_attr(mm, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, MM_PROBE_SHARED));
  CHECK_CU(cu.stream_create(&stream, 1));
  CHECK_CU(cu.launch(mm, MM_PROBE_N / 128, MM_PROBE_N / 128, 1, 256, 1, 1, MM_PROBE_SHARED, stream,
                     mm_args, NULL));
  CHECK_CU(cu.stream_sync(stream));
  want_threads = 256;
  scan(MM_PROBE_N / 128, "eager matmul_f16");
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

/* ---- thread-block clusters: libcuda's QMDs and occupancy for cluster launches ---- */

typedef struct {
  unsigned grid[3], block[3], shared;
  void *stream;
  void *attrs;
  unsigned nattrs;
} cu_launch_config;

typedef struct {
  int id;
  int pad;
  union {
    unsigned dims[3];
    int value;
    char bytes[64];
  } v;
} cu_launch_attr;

typedef int (*cu_launch_ex_fn)(const cu_launch_config *, void *, void **, void **);
typedef int (*cu_occ_clusters_fn)(int *, void *, const cu_launch_config *);
typedef int (*cu_param_info_fn)(void *, size_t, size_t *, size_t *);
typedef int (*cu_func_get_attr_fn)(int *, int, void *);

static void cluster_launch(cu_launch_ex_fn ex, void *fn, const unsigned grid[3], unsigned block,
                           const unsigned cl[3], int policy, uint64_t out, const char *what) {
  cu_launch_attr attrs[2];
  memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (cl[0]) attrs[n].id = 4, memcpy(attrs[n].v.dims, cl, 12), n++;
  if (policy >= 0) attrs[n].id = 5, attrs[n].v.value = policy, n++;
  cu_launch_config c = {{grid[0], grid[1], grid[2]}, {block, 1, 1}, 0, NULL, attrs, n};
  void *args[] = {&out};
  int r = ex(&c, fn, args, NULL);
  if (r) {
    printf("launch %s: CUresult %d\n", what, r);
    return;
  }
  CHECK_CU(cu.sync());
  want_threads = block;
  /* The QMD holds the grid in clusters: its width is grid / cluster width. */
  unsigned tag = cl[0] ? grid[0] / cl[0] : grid[0];
  if (!scan(tag, what) && tag != grid[0]) scan(grid[0], what);
  /* Bank 0's driver words, read through the QMD libcuda wrote (V04: bank 0 address >> 6 at
   * dwords 48-49): what a cluster launch tells the kernel there. */
  if (last_qmd_valid) {
    uint64_t a = ((uint64_t)(last_qmd[49] & 0x7ffff) << 32 | last_qmd[48]) << 6;
    uint32_t w[128];
    int copied = cu.dtoh(w, a, sizeof w);
    if (copied) {
      printf("bank0 %s at %llx: CUresult %d\n", what, (unsigned long long)a, copied);
    } else {
      printf("bank0 %s at %llx:", what, (unsigned long long)a);
      for (int i = 0; i < 128; i++) printf("%s%08x", i % 16 ? " " : "\n  ", w[i]);
      printf("\n");
    }
  }
}

static void clusters(const char *path) {
  static uint8_t image[4 << 20];
  size_t n = read_image(path, image, sizeof image);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  cu_launch_ex_fn ex = (cu_launch_ex_fn)dlsym(lib, "cuLaunchKernelEx");
  cu_occ_clusters_fn occ = (cu_occ_clusters_fn)dlsym(lib, "cuOccupancyMaxActiveClusters");
  cu_set_attr_fn set_attr = (cu_set_attr_fn)dlsym(lib, "cuFuncSetAttribute");
  cu_func_get_attr_fn get_attr = (cu_func_get_attr_fn)dlsym(lib, "cuFuncGetAttribute");
  if (!n || !ex || !occ || !set_attr || !get_attr) return;
  void *mod, *any, *f2, *f222, *big;
  CHECK_CU(cu.module_load(&mod, image));
  CHECK_CU(cu.get_function(&any, mod, "cluster_any"));
  CHECK_CU(cu.get_function(&f2, mod, "cluster_fixed2"));
  CHECK_CU(cu.get_function(&f222, mod, "cluster_fixed222"));
  CHECK_CU(cu.get_function(&big, mod, "cluster_big_shared"));
  uint64_t out;
  CHECK_CU(cu.mem_alloc(&out, (size_t)64 << 20));
  only_driver = 1;
  /* Function attributes: 11..16 are the cluster ones (required width/height/depth, non-portable
   * allowed, scheduling policy) in CUDA's CUfunction_attribute numbering. */
  void *fns[] = {any, f2, f222};
  for (int i = 0; i < 3; i++)
    for (int a = 9; a <= 16; a++) {
      int v = -1, r = get_attr(&v, a, fns[i]);
      printf("func %d attr %d = %d (rc %d)\n", i, a, v, r);
    }
  static const struct {
    unsigned grid[3], cl[3];
    int policy;
    const char *what;
  } shapes[] = {
      {{1030, 1, 1}, {2, 1, 1}, -1, "cluster 2x1x1"},
      {{1036, 1, 1}, {4, 1, 1}, -1, "cluster 4x1x1"},
      {{1048, 1, 1}, {8, 1, 1}, -1, "cluster 8x1x1"},
      {{1027, 2, 1}, {1, 2, 1}, -1, "cluster 1x2x1"},
      {{1034, 2, 1}, {2, 2, 1}, -1, "cluster 2x2x1"},
      {{1042, 2, 2}, {2, 2, 2}, -1, "cluster 2x2x2"},
      {{1046, 3, 1}, {2, 3, 1}, -1, "cluster 2x3x1"},
      {{1070, 1, 1}, {2, 1, 1}, 1, "cluster 2x1x1 policy spread"},
      {{1074, 1, 1}, {2, 1, 1}, 2, "cluster 2x1x1 policy load-balancing"},
      {{1077, 1, 1}, {1, 1, 1}, -1, "cluster 1x1x1"},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    cluster_launch(ex, any, shapes[i].grid, 128, shapes[i].cl, shapes[i].policy, out,
                   shapes[i].what);
  unsigned none[3] = {0, 0, 0};
  cluster_launch(ex, f2, (unsigned[]){1062, 1, 1}, 128, none, -1, out, "fixed 2x1x1, no attr");
  cluster_launch(ex, f222, (unsigned[]){1066, 2, 2}, 128, none, -1, out, "fixed 2x2x2, no attr");
  cluster_launch(ex, any, (unsigned[]){1056, 1, 1}, 128, (unsigned[]){16, 1, 1}, -1, out,
                 "cluster 16 without non-portable");
  printf("set non-portable: %d\n", set_attr(any, 14, 1));
  cluster_launch(ex, any, (unsigned[]){1088, 1, 1}, 128, (unsigned[]){16, 1, 1}, -1, out,
                 "cluster 16x1x1 non-portable");
  cluster_launch(ex, any, (unsigned[]){1092, 1, 1}, 128, (unsigned[]){12, 1, 1}, -1, out,
                 "cluster 12x1x1 non-portable");
  cluster_launch(ex, any, (unsigned[]){1096, 1, 1}, 128, (unsigned[]){32, 1, 1}, -1, out,
                 "cluster 32 (too large)");
  cluster_launch(ex, any, (unsigned[]){1099, 1, 1}, 128, (unsigned[]){2, 1, 1}, -1, out,
                 "grid not divisible");
  /* Co-resident clusters over shapes. */
  CHECK_CU(set_attr(big, 8, 227 << 10));
  CHECK_CU(set_attr(big, 14, 1));
  static const unsigned sizes[] = {1, 2, 3, 4, 6, 8, 16};
  static const unsigned blocks[] = {32, 128, 256, 512, 1024};
  static const unsigned kib[] = {0, 16, 48, 100, 150, 200, 227};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
      for (size_t k = 0; k < sizeof kib / sizeof kib[0]; k++) {
        cu_launch_attr a;
        memset(&a, 0, sizeof a);
        a.id = 4, a.v.dims[0] = sizes[s], a.v.dims[1] = a.v.dims[2] = 1;
        cu_launch_config c = {{sizes[s] * 64, 1, 1}, {blocks[b], 1, 1}, kib[k] << 10, NULL, &a, 1};
        int clusters_n = -1, r = occ(&clusters_n, big, &c);
        printf("occupancy cluster=%u block=%u shared_kib=%u clusters=%d rc=%d\n", sizes[s],
               blocks[b], kib[k], clusters_n, r);
      }
}

/* A graph of four chained atomic_increment nodes: each node's QMD as libcuda keeps it in host
 * memory, then the QMD its DEPENDENT_QMD0_POINTER (V04 dword 14, address >> 8) names, read back
 * from the GPU, and the graph's command stream. */
static void chain(void *atomic, uint64_t counter) {
  void *stream, *graph, *exec;
  void *args[] = {&counter};
  CHECK_CU(cu.stream_create(&stream, 1));
  CHECK_CU(cu.begin_capture(stream, 0));
  for (unsigned g = 4301; g <= 4307; g += 2)
    CHECK_CU(cu.launch(atomic, g, 1, 1, 1, 1, 1, 0, stream, args, NULL));
  CHECK_CU(cu.end_capture(stream, &graph));
  CHECK_CU(cu.instantiate(&exec, graph, 0ull));
  for (int r = 0; r < 3; r++) CHECK_CU(cu.graph_launch(exec, stream));
  CHECK_CU(cu.stream_sync(stream));
  only_driver = 1, want_threads = 1;
  for (unsigned g = 4301; g <= 4307; g += 2) {
    if (!scan(g, "graph chain node")) continue;
    uint64_t at = (uint64_t)last_qmd[14] << 8;
    uint32_t next[QMD_WORDS];
    if (!(last_qmd[11] & 1u << 16) || cu.dtoh(next, at, sizeof next)) {
      printf("node %u: no dependent QMD read (enable %u, at 0x%llx)\n", g, last_qmd[11] >> 16 & 1,
             (unsigned long long)at);
      continue;
    }
    char what[64];
    snprintf(what, sizeof what, "dependent of node %u at 0x%llx", g, (unsigned long long)at);
    print_qmd(next[32], what, next, "GPU memory");
  }
  dump_pushbuffers();
}

/* libcuda's QMDs for eager launches in one stream: four queued behind a long kernel, then two
 * sent one at a time to an idle GPU, and the command stream they came in. */
static void eager_chain(void *fma, void *atomic, uint64_t out, uint64_t counter) {
  void *args[] = {&counter};
  int iters = 1 << 20;
  void *fargs[] = {&out, &iters};
  CHECK_CU(cu.launch(fma, 132, 1, 1, 256, 1, 1, 0, NULL, fargs, NULL));
  for (unsigned g = 4401; g <= 4407; g += 2)
    CHECK_CU(cu.launch(atomic, g, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  CHECK_CU(cu.sync());
  for (unsigned g = 4411; g <= 4413; g += 2) {
    CHECK_CU(cu.launch(atomic, g, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cu.sync());
  }
  only_driver = 1, want_threads = 1, words_around = 48;
  for (unsigned g = 4401; g <= 4407; g += 2) scan(g, "eager queued behind a long kernel");
  for (unsigned g = 4411; g <= 4413; g += 2) scan(g, "eager sent to an idle GPU");
  dump_pushbuffers();
}

/* Parameter offsets libcuda reports (cuFuncGetParamInfo) for a kernel of the test kernels. */
static void param_info(void *mod, const char *name) {
  cu_param_info_fn info =
      (cu_param_info_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuFuncGetParamInfo");
  void *fn;
  if (!info || cu.get_function(&fn, mod, name)) return;
  for (size_t i = 0; i < 16; i++) {
    size_t off = 0, size = 0;
    if (info(fn, i, &off, &size)) break;
    printf("param %s %zu offset %zu size %zu\n", name, i, off, size);
  }
}

/* ---- programmatic dependent launch: what libcuda's QMDs say for it ---- */

/* Two launches of PDL_CUBIN's pdl_primary and pdl_secondary (kernels of one pointer argument;
 * the primary ends in griddepcontrol.launch_dependents, the secondary starts with
 * griddepcontrol.wait), back to back in one stream: tags 301/302 plainly, 303/304 with the
 * secondary's PROGRAMMATIC_STREAM_SERIALIZATION (attribute 6) set; each QMD found is printed.
 *
 * What it showed on the H200 (driver 580.159.04): the primary's QMD is the same either way (every
 * libcuda QMD arrives at a latch of its own: ARRIVE_AT_LATCH_VALID, bit 28, and an incrementing
 * ARRIVE_AT_LATCH_ID, bits 1503:1472). The programmatic secondary differs from the plain one in
 * WAIT_ON_LATCH_VALID (bit 29) and REQUIRE_SCHEDULING_PCAS (bit 30) set, WAIT_ON_LATCH_ID (bits
 * 1535:1504) = the primary's ARRIVE_AT_LATCH_ID, and bits 1342 and 1343 set (not named in
 * clcbc0qmd.h's V04_00): the hardware starts it on the primary's latch, not on its completion. */
static void pdl(const char *path) {
  static uint8_t image[1 << 20];
  size_t n = read_image(path, image, sizeof image);
  cu_launch_ex_fn ex = (cu_launch_ex_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuLaunchKernelEx");
  if (!n || !ex) return;
  void *mod, *primary, *secondary, *stream;
  CHECK_CU(cu.module_load(&mod, image));
  CHECK_CU(cu.get_function(&primary, mod, "pdl_primary"));
  CHECK_CU(cu.get_function(&secondary, mod, "pdl_secondary"));
  CHECK_CU(cu.stream_create(&stream, 1));
  uint64_t out;
  CHECK_CU(cu.mem_alloc(&out, 1 << 20));
  void *args[] = {&out};
  only_driver = 1, want_threads = 64;
  for (int programmatic = 0; programmatic < 2; programmatic++) {
    unsigned tag = 301 + 2 * (unsigned)programmatic;
    cu_launch_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.id = 6, attr.v.value = 1;
    cu_launch_config a = {{tag, 1, 1}, {64, 1, 1}, 0, stream, NULL, 0};
    cu_launch_config b = {{tag + 1, 1, 1}, {64, 1, 1}, 0, stream, &attr, (unsigned)programmatic};
    int r1 = ex(&a, primary, args, NULL), r2 = ex(&b, secondary, args, NULL);
    printf("pdl pair %d: CUresult %d %d\n", programmatic, r1, r2);
    CHECK_CU(cu.stream_sync(stream));
    scan(tag, programmatic ? "primary before a programmatic launch" : "primary, plain pair");
    scan(tag + 1, programmatic ? "secondary, programmatic" : "secondary, plain pair");
  }
}

int main(int argc, char **argv) {
  if (argc < 2)
    return fprintf(stderr,
                   "usage: %s device_kernels_sm_90.cubin [--sweep | --chain | --eager | --pushbuf "
                   "| ...]\n",
                   argv[0]),
           2;
  if (!cuda_load()) return fprintf(stderr, "libcuda is needed\n"), 1;
  static uint8_t image[8 << 20];
  size_t n = read_image(argv[1], image, sizeof image);
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
  if (argc > 2 && !strcmp(argv[2], "--nvhcq-chain")) {
    nvhcq_chain(image, n);
    return 0;
  }
  if (argc > 2 && !strcmp(argv[2], "--chain")) {
    void *atomic;
    CHECK_CU(cu.get_function(&atomic, mod, "atomic_increment"));
    chain(atomic, b);
    return 0;
  }
  if (argc > 2 && !strcmp(argv[2], "--eager")) {
    void *atomic;
    CHECK_CU(cu.get_function(&atomic, mod, "atomic_increment"));
    eager_chain(fma, atomic, a, b);
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--nvhcq")) {
    nvhcq_own(argv[3]);
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--cluster")) {
    clusters(argv[3]);
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--pdl")) {
    pdl(argv[3]);
    return 0;
  }
  if (argc > 3 && !strcmp(argv[2], "--params")) {
    void *m2;
    static uint8_t img2[4 << 20];
    if (!read_image(argv[3], img2, sizeof img2)) return 1;
    CHECK_CU(cu.module_load(&m2, img2));
    for (int i = 4; i < argc; i++) param_info(m2, argv[i]);
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
