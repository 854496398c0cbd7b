/* Two GPUs in one process: independent devices, UUID selection, peer access, copies between the
 * devices (staged and on the copy engine), kernels on one GPU using the other's memory, signals
 * across GPUs, a two-GPU pipeline replayed many times and a fault that stays on its GPU. Runs on
 * the mock with NVHCQ_MOCK=1 NVHCQ_MOCK_GPUS=2 and on a machine with two GPUs; skips with one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cubin_path.h"
#include "nvhcq.h"
#include "test.h"

static nvhcq_device *gpu[2];
static nvhcq_module *mods[2];

static int gpu_count(void) {
  int n = 0;
  if (access("/dev/nvidiactl", F_OK) != 0 && !on_mock()) return 0;
  if (nvhcq_device_count(&n)) return 0;
  return n;
}

#define NEED_TWO_GPUS()                                                                            \
  do {                                                                                             \
    if (gpu_count() < 2)                                                                           \
      TEST_SKIP("needs two GPUs (on the mock: NVHCQ_MOCK=1 NVHCQ_MOCK_GPUS=2)");                   \
    if (open_both()) return;                                                                       \
  } while (0)

/* Peer mappings and other GPUs' signals go through UVM: NVHCQ_UVM=off refuses them, as the
 * cases that need them check first (and then skip). */
#define NEED_UVM()                                                                                 \
  do {                                                                                             \
    const char *uvm_ = getenv("NVHCQ_UVM");                                                        \
    if (uvm_ && !strcmp(uvm_, "off")) {                                                            \
      nvhcq_device_enable_peer(gpu[0], gpu[1]);                                                    \
      TEST_CHECK(strstr(nvhcq_last_error(), "unset NVHCQ_UVM=off") != NULL);                       \
      close_both();                                                                                \
      TEST_SKIP("NVHCQ_UVM=off: peer access and other GPUs' signals need UVM");                    \
    }                                                                                              \
  } while (0)

static int open_one(int i) {
  if (gpu[i]) return 0;
  if (nvhcq_device_open(i, &gpu[i])) {
    TEST_CHECK_MSG(0, "open GPU %d: %s", i, nvhcq_last_error());
    return 1;
  }
  return 0;
}

static int open_both(void) {
  return open_one(0) || open_one(1);
}

static void close_one(int i) {
  if (mods[i]) TEST_CHECK(nvhcq_module_unload(mods[i]) == NVHCQ_SUCCESS);
  if (gpu[i])
    TEST_CHECK_MSG(nvhcq_device_close(gpu[i]) == NVHCQ_SUCCESS, "close: %s", nvhcq_last_error());
  mods[i] = NULL, gpu[i] = NULL;
}

/* Every case starts from fresh devices: peer access is for the life of a device pair. */
static void close_both(void) {
  close_one(0);
  close_one(1);
}

static nvhcq_kernel *kernel(int i, const char *name) {
  if (!mods[i]) {
    char path[512];
    test_cubin_path_for(gpu[i], path, sizeof path);
    if (nvhcq_module_load_file(gpu[i], path, &mods[i])) {
      TEST_CHECK_MSG(0, "load %s on GPU %d: %s", path, i, nvhcq_last_error());
      return NULL;
    }
  }
  nvhcq_kernel *k = NULL;
  if (nvhcq_module_get_kernel(mods[i], name, &k)) fprintf(stderr, "  %s\n", nvhcq_last_error());
  return k;
}

static nvhcq_buffer *make(int i, size_t size) {
  nvhcq_buffer *b = NULL;
  nvhcq_status s = nvhcq_buffer_create(gpu[i], size, NVHCQ_MEMORY_DEVICE, &b);
  TEST_CHECK_MSG(s == NVHCQ_SUCCESS, "%zu bytes on GPU %d: %s", size, i, nvhcq_last_error());
  return b;
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

/* ---- devices ---- */

static void t_two_devices(void) {
  NEED_TWO_GPUS();
  nvhcq_device_info a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
  TEST_CHECK(nvhcq_device_query_info(gpu[0], &a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_query_info(gpu[1], &b) == NVHCQ_SUCCESS);
  TEST_CHECK_MSG(strcmp(a.uuid_string, b.uuid_string) != 0, "both are %s", a.uuid_string);
  TEST_CHECK(a.pci_bus != b.pci_bus || a.pci_device != b.pci_device ||
             a.pci_domain != b.pci_domain);
  /* By UUID: the same GPU as index 1, opened as a device of its own. */
  nvhcq_device *again = NULL;
  TEST_CHECK_MSG(nvhcq_device_open_uuid(b.uuid_string, &again) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  nvhcq_device_info c = {.struct_size = sizeof c};
  if (again) nvhcq_device_query_info(again, &c);
  TEST_CHECK(strcmp(c.uuid_string, b.uuid_string) == 0);
  int can = 1;
  if (again) {
    TEST_CHECK(nvhcq_device_can_access_peer(again, gpu[1], &can) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(can == 0, "one GPU opened twice is no peer of itself");
  }
  TEST_CHECK(nvhcq_device_close(again) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_device_open_uuid("GPU-ffffffff-0000", &again) == NVHCQ_ERROR_NO_DEVICE);
  TEST_CHECK(strstr(nvhcq_last_error(), "nvidia-smi -L") != NULL);
  TEST_CHECK(nvhcq_device_open_uuid("0", &again) == NVHCQ_ERROR_INVALID_ARGUMENT);
  TEST_CHECK(nvhcq_device_can_access_peer(gpu[0], gpu[0], &can) == NVHCQ_ERROR_INVALID_ARGUMENT);
  close_both();
}

/* Closing one device leaves the other's memory and channels as they were. */
static void t_independent_close(void) {
  NEED_TWO_GPUS();
  uint8_t in[4096], out[4096];
  fill(in, sizeof in, 1);
  nvhcq_buffer *b = make(1, sizeof in);
  if (!b) return close_both();
  TEST_CHECK(nvhcq_buffer_write(b, 0, in, sizeof in) == NVHCQ_SUCCESS);
  close_one(0);
  memset(out, 0, sizeof out);
  TEST_CHECK_MSG(nvhcq_buffer_read(out, b, 0, sizeof out) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK(memcmp(in, out, sizeof in) == 0);
  if (open_one(0)) return close_both();
  nvhcq_buffer *a = make(0, sizeof in);
  TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 0, sizeof in) == NVHCQ_SUCCESS);
  memset(out, 0, sizeof out);
  TEST_CHECK(nvhcq_buffer_read(out, a, 0, sizeof out) == NVHCQ_SUCCESS);
  TEST_CHECK(memcmp(in, out, sizeof in) == 0);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_both();
}

/* ---- copies between the devices ---- */

/* src on GPU `from` to GPU `to`, at odd offsets, byte for byte, for each size. */
static void copies(int from, int to, size_t max) {
  static const size_t sizes[] = {1, 3, 4096, 65537, (1u << 20) + 5, 16u << 20, 64u << 20};
  uint8_t *in = malloc(max + 8), *out = malloc(max + 8);
  nvhcq_buffer *s = make(from, max + 8), *d = make(to, max + 8);
  if (!in || !out || !s || !d) goto done;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && sizes[i] <= max; i++) {
    size_t n = sizes[i];
    fill(in, n, (uint32_t)(n + from));
    TEST_CHECK(nvhcq_buffer_write(s, 3, in, n) == NVHCQ_SUCCESS);
    nvhcq_status st = nvhcq_buffer_copy(d, 5, s, 3, n);
    TEST_CHECK_MSG(st == NVHCQ_SUCCESS, "%zu bytes GPU %d -> %d: %s", n, from, to,
                   nvhcq_last_error());
    memset(out, 0xee, n);
    TEST_CHECK(nvhcq_buffer_read(out, d, 5, n) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(memcmp(in, out, n) == 0, "%zu bytes GPU %d -> %d differ", n, from, to);
  }
done:
  nvhcq_buffer_destroy(s);
  nvhcq_buffer_destroy(d);
  free(in);
  free(out);
}

static void t_copies_staged(void) {
  NEED_TWO_GPUS();
  copies(0, 1, 64u << 20);
  copies(1, 0, 64u << 20);
  close_both();
}

/* With peer access both ways, also buffers made before the enable. */
static void t_copies_peer(void) {
  NEED_TWO_GPUS();
  NEED_UVM();
  int can = 0;
  TEST_CHECK(nvhcq_device_can_access_peer(gpu[0], gpu[1], &can) == NVHCQ_SUCCESS);
  if (!can) {
    TEST_CHECK(nvhcq_device_enable_peer(gpu[0], gpu[1]) == NVHCQ_ERROR_UNSUPPORTED);
    TEST_CHECK(strstr(nvhcq_last_error(), "stage through host memory") != NULL);
    close_both();
    TEST_SKIP("the driver reports no P2P path between GPU 0 and 1 (staged copies ran above)");
  }
  nvhcq_buffer *early = make(1, 4096);
  TEST_CHECK_MSG(nvhcq_device_enable_peer(gpu[0], gpu[1]) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK_MSG(nvhcq_device_enable_peer(gpu[1], gpu[0]) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  TEST_CHECK(nvhcq_device_enable_peer(gpu[0], gpu[1]) == NVHCQ_SUCCESS); /* again: a no-op */
  copies(0, 1, 64u << 20);
  copies(1, 0, 64u << 20);
  /* A queue copy on GPU 0's copy engine straight into GPU 1's buffer made before the enable. */
  uint8_t in[4096], out[4096];
  fill(in, sizeof in, 9);
  nvhcq_buffer *a = make(0, sizeof in);
  nvhcq_queue *q = NULL;
  nvhcq_signal *done = NULL;
  TEST_CHECK(nvhcq_queue_create(gpu[0], NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(gpu[0], 0, &done) == NVHCQ_SUCCESS);
  if (a && early && q && done) {
    TEST_CHECK(nvhcq_buffer_write(a, 0, in, sizeof in) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(early), nvhcq_buffer_gpu_address(a),
                                sizeof in) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(q, done, 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(done, 1, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_buffer_read(out, early, 0, sizeof out) == NVHCQ_SUCCESS);
    size_t first = 0;
    while (first < sizeof in && in[first] == out[first]) first++;
    TEST_CHECK_MSG(first == sizeof in, "byte %zu of 4096 is 0x%02x, want 0x%02x", first,
                   first < sizeof in ? out[first] : 0, first < sizeof in ? in[first] : 0);
  }
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(early);
  close_both();
}

/* Without peer access a GPU has no mapping of the other's buffer: a queue copy on GPU 0 from
 * GPU 1's buffer faults at that address on GPU 0 only (nvhcq_buffer_copy stages instead). The same
 * in RM's address space (NVHCQ_UVM=off, or before the device moves onto UVM) as in UVM's. */
static void t_no_peer_no_mapping(void) {
  NEED_TWO_GPUS();
  nvhcq_buffer *a = make(0, 4096), *b = make(1, 4096);
  nvhcq_queue *q = NULL;
  nvhcq_signal *done = NULL;
  TEST_CHECK(nvhcq_queue_create(gpu[0], NVHCQ_QUEUE_COPY, &q) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(gpu[0], 0, &done) == NVHCQ_SUCCESS);
  if (a && b && q && done) {
    TEST_CHECK(nvhcq_queue_copy(q, nvhcq_buffer_gpu_address(a), nvhcq_buffer_gpu_address(b),
                                4096) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(q, done, 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(q) == NVHCQ_SUCCESS);
    nvhcq_status s = nvhcq_signal_cpu_wait(done, 1, 0);
    TEST_CHECK_MSG(s == NVHCQ_ERROR_GPU_FAULT, "gave %d: %s", s, nvhcq_last_error());
    char where[32];
    snprintf(where, sizeof where, "0x%llx", (unsigned long long)nvhcq_buffer_gpu_address(b));
    TEST_CHECK_MSG(strstr(nvhcq_last_error(), where) != NULL, "%s not in: %s", where,
                   nvhcq_last_error());
    uint8_t in[4096], out[4096];
    fill(in, sizeof in, 11);
    TEST_CHECK(nvhcq_buffer_write(b, 0, in, sizeof in) == NVHCQ_SUCCESS); /* GPU 1 unharmed */
    TEST_CHECK(nvhcq_device_recover(gpu[0]) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 0, sizeof in) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_read(out, a, 0, sizeof out) == NVHCQ_SUCCESS);
    TEST_CHECK(memcmp(in, out, sizeof in) == 0);
  }
  nvhcq_queue_destroy(q);
  nvhcq_signal_destroy(done);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_both();
}

/* GPU 1 closes while GPU 0 maps its buffers; opened again, access is enabled again and works. */
static void t_peer_outlives_close(void) {
  NEED_TWO_GPUS();
  NEED_UVM();
  int can = 0;
  TEST_CHECK(nvhcq_device_can_access_peer(gpu[0], gpu[1], &can) == NVHCQ_SUCCESS);
  if (!can) {
    close_both();
    TEST_SKIP("the driver reports no P2P path between GPU 0 and 1");
  }
  for (int round = 0; round < 2; round++) {
    TEST_CHECK_MSG(nvhcq_device_enable_peer(gpu[0], gpu[1]) == NVHCQ_SUCCESS, "round %d: %s", round,
                   nvhcq_last_error());
    uint8_t in[8192], out[8192];
    fill(in, sizeof in, (uint32_t)round);
    nvhcq_buffer *a = make(0, sizeof in), *b = make(1, sizeof in);
    if (a && b) {
      TEST_CHECK(nvhcq_buffer_write(b, 0, in, sizeof in) == NVHCQ_SUCCESS);
      TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 0, sizeof in) == NVHCQ_SUCCESS);
      TEST_CHECK(nvhcq_buffer_read(out, a, 0, sizeof out) == NVHCQ_SUCCESS);
      TEST_CHECK(memcmp(in, out, sizeof in) == 0);
    }
    nvhcq_buffer_destroy(a);
    (void)b; /* left to GPU 1's close, with GPU 0's mapping of it */
    close_one(1);
    if (open_one(1)) break;
  }
  close_both();
}

/* Host memory for a 4 GiB copy. On the mock (whose device memory is host memory) it is reserved,
 * not taken: only the pages written take memory, and untouched ones read as zeros. */
static uint8_t *host_4gib(size_t n, int sparse) {
  if (!sparse) return malloc(n);
  void *p =
      mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  madvise(p, n, MADV_HUGEPAGE); /* reads map the huge zero page: 2048 faults, not a million */
  return p;
}

static void free_4gib(uint8_t *p, size_t n, int sparse) {
  if (sparse && p)
    munmap(p, n);
  else
    free(p);
}

/* Every byte a pattern; sparse: a pattern page every 128 MiB and on both sides of the copy
 * engine's 2 GiB pieces (and the ends), zeros between. */
static void fill_4gib(uint8_t *p, size_t n, int sparse) {
  if (!sparse) return fill(p, n, 4);
  for (size_t at = 0; at < n; at += 128u << 20) fill(p + at, 4096, (uint32_t)(at >> 20));
  const size_t edges[] = {(2ull << 30) - 4096, 2ull << 30, n - 4096};
  for (size_t i = 0; i < 3; i++) fill(p + edges[i], 4096, 7 + (uint32_t)i);
}

/* b's n bytes equal `want`: read whole, or on the mock 64 MiB at a time. */
static int holds(nvhcq_buffer *b, const uint8_t *want, size_t n, uint8_t *out, int sparse) {
  if (!sparse) return nvhcq_buffer_read(out, b, 0, n) == NVHCQ_SUCCESS && memcmp(want, out, n) == 0;
  const size_t piece = 64u << 20;
  for (size_t at = 0; at < n; at += piece)
    if (nvhcq_buffer_read(out, b, at, piece) || memcmp(want + at, out, piece)) return 0;
  return 1;
}

/* 4 GiB each way on the copy engine, in 2 GiB pieces; on the mock with sparse data. */
static void t_copy_4gib(void) {
  NEED_TWO_GPUS();
  const size_t n = 4ull << 30;
  int can = 0, sparse = on_mock();
  const char *uvm = getenv("NVHCQ_UVM");
  nvhcq_device_can_access_peer(gpu[1], gpu[0], &can);
  /* Without UVM there is no peer mapping: the copies go through host memory. */
  if (can && !(uvm && !strcmp(uvm, "off")))
    TEST_CHECK(nvhcq_device_enable_peer(gpu[1], gpu[0]) == NVHCQ_SUCCESS);
  uint8_t *in = host_4gib(n, sparse), *out = sparse ? malloc(64u << 20) : malloc(n);
  uint8_t *zeros = sparse ? host_4gib(n, 1) : out;
  nvhcq_buffer *a = make(0, n), *b = make(1, n);
  if (in && out && zeros && a && b) {
    fill_4gib(in, n, sparse);
    TEST_CHECK(nvhcq_buffer_write(a, 0, in, n) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_buffer_copy(b, 0, a, 0, n) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK_MSG(holds(b, in, n, out, sparse), "GPU 1's copy differs from what GPU 0 held");
    memset(zeros, 0, sparse ? 0 : n);
    TEST_CHECK(nvhcq_buffer_write(b, 0, zeros, n) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 0, n) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_read(in, a, 0, 1 << 20) == NVHCQ_SUCCESS);
    TEST_CHECK(in[0] == 0 && in[12345] == 0);
    TEST_CHECK(nvhcq_buffer_read(in, a, (2ull << 30) - 4096, 8192) == NVHCQ_SUCCESS);
    TEST_CHECK(in[0] == 0 && in[8191] == 0);
  }
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  free_4gib(in, n, sparse);
  if (sparse) free_4gib(zeros, n, 1);
  free(out);
  close_both();
}

/* ---- kernels and signals across the devices ---- */

struct affine_args {
  uint64_t x;
  int32_t a, b, n;
};

/* A kernel on GPU 1 updates GPU 0's buffer in place: x = 3x + 1. */
static void t_kernel_on_peer_memory(void) {
  NEED_TWO_GPUS();
  NEED_UVM();
  int can = 0;
  TEST_CHECK(nvhcq_device_can_access_peer(gpu[1], gpu[0], &can) == NVHCQ_SUCCESS);
  if (!can) {
    close_both();
    TEST_SKIP("the driver reports no P2P path between GPU 1 and 0");
  }
  TEST_CHECK_MSG(nvhcq_device_enable_peer(gpu[1], gpu[0]) == NVHCQ_SUCCESS, "%s",
                 nvhcq_last_error());
  enum { N = 1000 };
  int32_t x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = i - 500;
  nvhcq_buffer *a = make(0, sizeof x); /* made after the enable: mapped for GPU 1 too */
  nvhcq_kernel *k = kernel(1, "affine");
  if (a && k) {
    TEST_CHECK(nvhcq_buffer_write(a, 0, x, sizeof x) == NVHCQ_SUCCESS);
    struct affine_args args = {nvhcq_buffer_gpu_address(a), 3, 1, N};
    TEST_CHECK_MSG(nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){(N + 127) / 128, 1, 1},
                                                (nvhcq_dim3){128, 1, 1}, 0, &args, sizeof args,
                                                NULL) == NVHCQ_SUCCESS,
                   "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_buffer_read(y, a, 0, sizeof y) == NVHCQ_SUCCESS);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += y[i] != 3 * x[i] + 1;
    TEST_CHECK_MSG(bad == 0, "%d of %d elements wrong (y[0] %d)", bad, N, y[0]);
  }
  nvhcq_buffer_destroy(a);
  close_both();
}

/* GPU 1's queue waits on the GPU for a signal GPU 0's queue releases after its kernel. */
static void t_signal_across(void) {
  NEED_TWO_GPUS();
  NEED_UVM();
  enum { N = 256 };
  int32_t x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = i;
  nvhcq_buffer *a = make(0, sizeof x), *b = make(1, sizeof x);
  nvhcq_signal *on_a = NULL, *on_b = NULL;
  nvhcq_queue *qa = NULL, *qb = NULL;
  TEST_CHECK(nvhcq_signal_create(gpu[0], 0, &on_a) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_signal_create(gpu[1], 0, &on_b) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(gpu[0], NVHCQ_QUEUE_COMPUTE, &qa) == NVHCQ_SUCCESS);
  TEST_CHECK(nvhcq_queue_create(gpu[1], NVHCQ_QUEUE_COMPUTE, &qb) == NVHCQ_SUCCESS);
  nvhcq_kernel *ka = kernel(0, "affine"), *kb = kernel(1, "affine");
  if (a && b && on_a && on_b && qa && qb && ka && kb) {
    TEST_CHECK(nvhcq_buffer_write(a, 0, x, sizeof x) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_write(b, 0, x, sizeof x) == NVHCQ_SUCCESS);
    /* B first: it must wait for A's release, which A's queue only makes later. */
    TEST_CHECK_MSG(nvhcq_queue_gpu_wait(qb, on_a, 1) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    struct affine_args args_b = {nvhcq_buffer_gpu_address(b), 2, 0, N};
    TEST_CHECK(nvhcq_queue_launch(qb, kb, (nvhcq_dim3){2, 1, 1}, (nvhcq_dim3){128, 1, 1}, 0,
                                  &args_b, sizeof args_b) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(qb, on_b, 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(qb) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_signal_value(on_b) == 0);
    struct affine_args args_a = {nvhcq_buffer_gpu_address(a), 1, 7, N};
    TEST_CHECK(nvhcq_queue_launch(qa, ka, (nvhcq_dim3){2, 1, 1}, (nvhcq_dim3){128, 1, 1}, 0,
                                  &args_a, sizeof args_a) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_signal(qa, on_a, 1) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_queue_submit(qa) == NVHCQ_SUCCESS);
    TEST_CHECK_MSG(nvhcq_signal_cpu_wait(on_b, 1, 0) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
    TEST_CHECK(nvhcq_signal_value(on_a) == 1);
    TEST_CHECK(nvhcq_buffer_read(y, b, 0, sizeof y) == NVHCQ_SUCCESS);
    TEST_CHECK(y[0] == 0 && y[N - 1] == 2 * (N - 1));
  }
  nvhcq_queue_destroy(qa);
  nvhcq_queue_destroy(qb);
  nvhcq_signal_destroy(on_a);
  nvhcq_signal_destroy(on_b);
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_both();
}

/* Recorded queues for one replay of the pipeline: produce on A (x += 1), copy to B on B's copy
 * engine (B maps A's memory), consume on B (z += y), and release A's signal back. */
typedef struct pipeline {
  nvhcq_queue *produce, *copy, *consume;
  nvhcq_var wait_back, fwd, wait_fwd, copied, wait_copied, back;
  nvhcq_signal *s_fwd, *s_copied, *s_back; /* on A, on B, on A */
} pipeline;

static int record_pipeline(pipeline *p, nvhcq_buffer *x, nvhcq_buffer *y, nvhcq_buffer *z, int n) {
  nvhcq_kernel *affine = kernel(0, "affine"), *add = kernel(1, "add_int");
  if (!affine || !add) return 1;
  int bad = 0;
  bad |= nvhcq_signal_create(gpu[0], 0, &p->s_fwd) | nvhcq_signal_create(gpu[1], 0, &p->s_copied) |
         nvhcq_signal_create(gpu[0], 0, &p->s_back);
  bad |= nvhcq_queue_create_recorded(gpu[0], NVHCQ_QUEUE_COMPUTE, &p->produce) |
         nvhcq_queue_create_recorded(gpu[1], NVHCQ_QUEUE_COPY, &p->copy) |
         nvhcq_queue_create_recorded(gpu[1], NVHCQ_QUEUE_COMPUTE, &p->consume);
  if (bad) return 1;
  nvhcq_dim3 grid = {(uint32_t)(n + 127) / 128, 1, 1}, block = {128, 1, 1};
  struct affine_args inc = {nvhcq_buffer_gpu_address(x), 1, 1, n};
  struct {
    uint64_t a, b, c;
    int32_t n;
  } sum = {nvhcq_buffer_gpu_address(y), nvhcq_buffer_gpu_address(z), nvhcq_buffer_gpu_address(z),
           n};
  bad |= nvhcq_queue_var(p->produce, "back", 0, &p->wait_back) |
         nvhcq_queue_var(p->produce, "fwd", 1, &p->fwd) |
         nvhcq_queue_gpu_wait_var(p->produce, p->s_back, p->wait_back) |
         nvhcq_queue_launch(p->produce, affine, grid, block, 0, &inc, sizeof inc) |
         nvhcq_queue_signal_var(p->produce, p->s_fwd, p->fwd) | nvhcq_queue_finish(p->produce);
  bad |= nvhcq_queue_var(p->copy, "fwd", 1, &p->wait_fwd) |
         nvhcq_queue_var(p->copy, "copied", 1, &p->copied) |
         nvhcq_queue_gpu_wait_var(p->copy, p->s_fwd, p->wait_fwd) |
         nvhcq_queue_copy(p->copy, nvhcq_buffer_gpu_address(y), nvhcq_buffer_gpu_address(x),
                          (uint64_t)n * 4) |
         nvhcq_queue_signal_var(p->copy, p->s_copied, p->copied) | nvhcq_queue_finish(p->copy);
  bad |= nvhcq_queue_var(p->consume, "copied", 1, &p->wait_copied) |
         nvhcq_queue_var(p->consume, "back", 1, &p->back) |
         nvhcq_queue_gpu_wait_var(p->consume, p->s_copied, p->wait_copied) |
         nvhcq_queue_launch(p->consume, add, grid, block, 0, &sum, sizeof sum) |
         nvhcq_queue_signal_var(p->consume, p->s_back, p->back) | nvhcq_queue_finish(p->consume);
  if (bad) fprintf(stderr, "  recording: %s\n", nvhcq_last_error());
  return bad != 0;
}

#define TRY(call)                                                                                  \
  do {                                                                                             \
    nvhcq_status s_ = (call);                                                                      \
    if (s_) return s_;                                                                             \
  } while (0)

static nvhcq_status replay(pipeline *p, uint64_t i) {
  /* Variables change only once the queues' earlier replays are over, each on its own channel. */
  TRY(nvhcq_queue_cpu_wait_idle(p->produce, 0));
  TRY(nvhcq_queue_cpu_wait_idle(p->copy, 0));
  TRY(nvhcq_queue_cpu_wait_idle(p->consume, 0));
  TRY(nvhcq_queue_set_var(p->produce, p->wait_back, i - 1));
  TRY(nvhcq_queue_set_var(p->produce, p->fwd, i));
  TRY(nvhcq_queue_set_var(p->copy, p->wait_fwd, i));
  TRY(nvhcq_queue_set_var(p->copy, p->copied, i));
  TRY(nvhcq_queue_set_var(p->consume, p->wait_copied, i));
  TRY(nvhcq_queue_set_var(p->consume, p->back, i));
  /* Consumer first, producer last: the GPUs' waits, not the submission order, keep them in step. */
  TRY(nvhcq_queue_submit(p->consume));
  TRY(nvhcq_queue_submit(p->copy));
  TRY(nvhcq_queue_submit(p->produce));
  return nvhcq_signal_cpu_wait(p->s_back, i, 0);
}

static void t_pipeline_replayed(void) {
  NEED_TWO_GPUS();
  NEED_UVM();
  int can = 0;
  TEST_CHECK(nvhcq_device_can_access_peer(gpu[1], gpu[0], &can) == NVHCQ_SUCCESS);
  if (!can) {
    close_both();
    TEST_SKIP("the driver reports no P2P path between GPU 1 and 0");
  }
  TEST_CHECK(nvhcq_device_enable_peer(gpu[1], gpu[0]) == NVHCQ_SUCCESS);
  enum { N = 256 };
  const int replays = on_mock() ? 100 : 1000; /* the mock interprets each kernel's PTX */
  int32_t x0[N], z[N];
  for (int i = 0; i < N; i++) x0[i] = i, z[i] = 0;
  nvhcq_buffer *x = make(0, sizeof x0), *y = make(1, sizeof x0), *zb = make(1, sizeof z);
  pipeline p;
  memset(&p, 0, sizeof p);
  if (x && y && zb && !record_pipeline(&p, x, y, zb, N)) {
    TEST_CHECK(nvhcq_buffer_write(x, 0, x0, sizeof x0) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_write(zb, 0, z, sizeof z) == NVHCQ_SUCCESS);
    int done = 0;
    for (int i = 1; i <= replays; i++, done++) {
      nvhcq_status s = replay(&p, (uint64_t)i);
      if (s) {
        TEST_CHECK_MSG(0, "replay %d: %s", i, nvhcq_last_error());
        break;
      }
    }
    TEST_CHECK(done == replays);
    TEST_CHECK(nvhcq_buffer_read(z, zb, 0, sizeof z) == NVHCQ_SUCCESS);
    /* z = sum over replays r of (x0 + r) = done * x0 + done (done + 1) / 2. */
    int bad = 0;
    for (int i = 0; i < N; i++) bad += z[i] != done * i + done * (done + 1) / 2;
    TEST_CHECK_MSG(bad == 0, "%d of %d sums wrong after %d replays (z[1] %d)", bad, N, done, z[1]);
  }
  nvhcq_queue_destroy(p.produce);
  nvhcq_queue_destroy(p.copy);
  nvhcq_queue_destroy(p.consume);
  nvhcq_signal_destroy(p.s_fwd);
  nvhcq_signal_destroy(p.s_copied);
  nvhcq_signal_destroy(p.s_back);
  nvhcq_buffer_destroy(x);
  nvhcq_buffer_destroy(y);
  nvhcq_buffer_destroy(zb);
  close_both();
}

/* A kernel that faults on GPU 0 breaks GPU 0 only: GPU 1 copies and computes on, and GPU 0
 * works again after its recovery. */
static void t_fault_stays(void) {
  NEED_TWO_GPUS();
  nvhcq_kernel *bad = kernel(0, "store_to"), *k = kernel(1, "affine");
  if (!bad || !k) return close_both();
  uint64_t address = 0x40000000ull; /* never mapped */
  nvhcq_status s = nvhcq_kernel_launch_cpu_wait(bad, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){1, 1, 1},
                                                0, &address, sizeof address, NULL);
  TEST_CHECK_MSG(s == NVHCQ_ERROR_GPU_FAULT, "status %d: %s", s, nvhcq_last_error());
  enum { N = 128 };
  int32_t x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = i;
  nvhcq_buffer *b = make(1, sizeof x);
  if (b) {
    TEST_CHECK(nvhcq_buffer_write(b, 0, x, sizeof x) == NVHCQ_SUCCESS);
    struct affine_args args = {nvhcq_buffer_gpu_address(b), 1, 5, N};
    TEST_CHECK_MSG(nvhcq_kernel_launch_cpu_wait(k, (nvhcq_dim3){1, 1, 1}, (nvhcq_dim3){N, 1, 1}, 0,
                                                &args, sizeof args, NULL) == NVHCQ_SUCCESS,
                   "GPU 1 after GPU 0's fault: %s", nvhcq_last_error());
    TEST_CHECK(nvhcq_buffer_read(y, b, 0, sizeof y) == NVHCQ_SUCCESS);
    TEST_CHECK(y[0] == 5 && y[N - 1] == N + 4);
  }
  TEST_CHECK_MSG(nvhcq_device_recover(gpu[0]) == NVHCQ_SUCCESS, "%s", nvhcq_last_error());
  nvhcq_buffer *a = make(0, sizeof x);
  if (a && b) {
    TEST_CHECK(nvhcq_buffer_copy(a, 0, b, 0, sizeof x) == NVHCQ_SUCCESS);
    TEST_CHECK(nvhcq_buffer_read(x, a, 0, sizeof x) == NVHCQ_SUCCESS);
    TEST_CHECK(x[0] == 5);
  }
  nvhcq_buffer_destroy(a);
  nvhcq_buffer_destroy(b);
  close_both();
}

TEST_MAIN({"t_two_devices", t_two_devices}, {"t_independent_close", t_independent_close},
          {"t_copies_staged", t_copies_staged}, {"t_copies_peer", t_copies_peer},
          {"t_no_peer_no_mapping", t_no_peer_no_mapping},
          {"t_peer_outlives_close", t_peer_outlives_close}, {"t_copy_4gib", t_copy_4gib},
          {"t_kernel_on_peer_memory", t_kernel_on_peer_memory},
          {"t_signal_across", t_signal_across}, {"t_pipeline_replayed", t_pipeline_replayed},
          {"t_fault_stays", t_fault_stays})
