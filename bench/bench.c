/* Foundation benchmark: nvhcq and (when present) libcuda measured in the same run.
 * usage: nvhcq_bench [size_MiB]   (default 256; the allocation rows: median of an allocation and
 * its free, 200 times) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "nvhcq.h"

typedef struct results {
  double open_ms, h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable, d2d, small_d2h_us;
  double pinned_cpu_ms;  /* process CPU time per pinned copy, both directions averaged */
  double alloc_us[3][2]; /* ALLOC_SIZES: pinned host, device; an allocation and its free */
} results;

/* Sizes the allocation rows time: small ones (ML frameworks stage each copy-in through pinned
 * memory of the tensor's size) and one above nvhcq's suballocated range. */
static const size_t ALLOC_SIZES[3] = {4u << 10, 256u << 10, 4u << 20};
#define ALLOC_REPS 200

#define REPS 10

/* CPU time of the whole process, helper threads included. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double gbps(size_t bytes, double s) {
  return bytes / s / 1e9;
}

static void bench_nvhcq(size_t size, results *r) {
  nvhcq_device *dev;
  double t0 = now_s();
  CHECK_NV(nvhcq_device_open(0, &dev));
  r->open_ms = (now_s() - t0) * 1e3;
  bench_settle(dev);
  nvhcq_buffer *a, *b, *host;
  CHECK_NV(nvhcq_buffer_create(dev, size, NVHCQ_MEMORY_DEVICE, &a));
  CHECK_NV(nvhcq_buffer_create(dev, size, NVHCQ_MEMORY_DEVICE, &b));
  CHECK_NV(nvhcq_buffer_create(dev, size, NVHCQ_MEMORY_HOST, &host));
  char *pageable = malloc(size);
  memset(pageable, 1, size);
  memset(nvhcq_buffer_host_pointer(host), 2, size);
  double t[REPS];
  /* Warm up: the GPU and the bus settle into full speed only after some traffic. */
  for (int i = 0; i < 20; i++)
    CHECK_NV(nvhcq_buffer_write(a, 0, nvhcq_buffer_host_pointer(host), size));
#define TIME(dst, expr)                                                                            \
  do {                                                                                             \
    CHECK_NV(expr);                                                                                \
    for (int i = 0; i < REPS; i++) {                                                               \
      double s0 = now_s();                                                                         \
      CHECK_NV(expr);                                                                              \
      t[i] = now_s() - s0;                                                                         \
    }                                                                                              \
    dst = gbps(size, median(t, REPS));                                                             \
  } while (0)
  double c0 = cpu_s();
  TIME(r->h2d_pinned, nvhcq_buffer_write(a, 0, nvhcq_buffer_host_pointer(host), size));
  TIME(r->d2h_pinned, nvhcq_buffer_read(nvhcq_buffer_host_pointer(host), a, 0, size));
  r->pinned_cpu_ms = (cpu_s() - c0) / (2 * (REPS + 1)) * 1e3;
  TIME(r->h2d_pageable, nvhcq_buffer_write(a, 0, pageable, size));
  TIME(r->d2h_pageable, nvhcq_buffer_read(pageable, a, 0, size));
  TIME(r->d2d, nvhcq_buffer_copy(b, 0, a, 0, size));
#undef TIME
  double lat[1000];
  uint32_t word;
  for (int i = 0; i < 1000; i++) {
    double s0 = now_s();
    CHECK_NV(nvhcq_buffer_read(&word, a, 0, 4));
    lat[i] = now_s() - s0;
  }
  r->small_d2h_us = median(lat, 1000) * 1e6;
  for (int z = 0; z < 3; z++)
    for (int k = 0; k < 2; k++) {
      double at[ALLOC_REPS];
      for (int i = 0; i < ALLOC_REPS; i++) {
        nvhcq_buffer *x;
        double s0 = now_s();
        CHECK_NV(nvhcq_buffer_create(dev, ALLOC_SIZES[z],
                                     k ? NVHCQ_MEMORY_DEVICE : NVHCQ_MEMORY_HOST, &x));
        CHECK_NV(nvhcq_buffer_destroy(x));
        at[i] = now_s() - s0;
      }
      r->alloc_us[z][k] = median(at, ALLOC_REPS) * 1e6;
    }
  free(pageable);
  nvhcq_buffer_destroy(host);
  nvhcq_buffer_destroy(b);
  nvhcq_buffer_destroy(a);
  CHECK_NV(nvhcq_device_close(dev));
}

static void bench_cuda(size_t size, results *r) {
  double t0 = now_s();
  cuda_context();
  uint64_t probe;
  CHECK_CU(cu.mem_alloc(&probe, (size_t)4096));
  CHECK_CU(cu.sync());
  r->open_ms = (now_s() - t0) * 1e3;
  uint64_t a, b;
  void *host;
  CHECK_CU(cu.mem_alloc(&a, size));
  CHECK_CU(cu.mem_alloc(&b, size));
  CHECK_CU(cu.host_alloc(&host, size));
  char *pageable = malloc(size);
  memset(pageable, 1, size);
  memset(host, 2, size);
  double t[REPS];
  for (int i = 0; i < 20; i++) CHECK_CU(cu.htod(a, host, size));
  CHECK_CU(cu.sync());
#define TIME(dst, expr)                                                                            \
  do {                                                                                             \
    CHECK_CU(expr);                                                                                \
    CHECK_CU(cu.sync());                                                                           \
    for (int i = 0; i < REPS; i++) {                                                               \
      double s0 = now_s();                                                                         \
      CHECK_CU(expr);                                                                              \
      CHECK_CU(cu.sync());                                                                         \
      t[i] = now_s() - s0;                                                                         \
    }                                                                                              \
    dst = gbps(size, median(t, REPS));                                                             \
  } while (0)
  double c0 = cpu_s();
  TIME(r->h2d_pinned, cu.htod(a, host, size));
  TIME(r->d2h_pinned, cu.dtoh(host, a, size));
  r->pinned_cpu_ms = (cpu_s() - c0) / (2 * (REPS + 1)) * 1e3;
  TIME(r->h2d_pageable, cu.htod(a, pageable, size));
  TIME(r->d2h_pageable, cu.dtoh(pageable, a, size));
  TIME(r->d2d, cu.dtod(b, a, size));
#undef TIME
  double lat[1000];
  uint32_t word;
  for (int i = 0; i < 1000; i++) {
    double s0 = now_s();
    CHECK_CU(cu.dtoh(&word, a, (size_t)4));
    lat[i] = now_s() - s0;
  }
  r->small_d2h_us = median(lat, 1000) * 1e6;
  for (int z = 0; z < 3; z++)
    for (int k = 0; k < 2; k++) {
      double at[ALLOC_REPS];
      for (int i = 0; i < ALLOC_REPS; i++) {
        void *x;
        uint64_t d;
        double s0 = now_s();
        if (k) {
          CHECK_CU(cu.mem_alloc(&d, ALLOC_SIZES[z]));
          CHECK_CU(cu.mem_free(d));
        } else {
          CHECK_CU(cu.host_alloc(&x, ALLOC_SIZES[z]));
          CHECK_CU(cu.host_free(x));
        }
        at[i] = now_s() - s0;
      }
      r->alloc_us[z][k] = median(at, ALLOC_REPS) * 1e6;
    }
  free(pageable);
  cu.host_free(host);
  cu.mem_free(a);
  cu.mem_free(b);
  cu.mem_free(probe);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
  size_t size = mib << 20;
  results n = {0}, c = {0};
  bench_nvhcq(size, &n);
  int have_cuda = cuda_load();
  if (have_cuda) bench_cuda(size, &c);
  printf("nvhcq foundation benchmark, %zu MiB transfers, median of %d (GB/s = 1e9 bytes/s)\n", mib,
         REPS);
  printf("%-34s %12s %12s\n", "", "nvhcq", have_cuda ? "libcuda" : "(no libcuda)");
  printf("%-34s %12.1f %12.1f\n", "device open to ready (ms)", n.open_ms, c.open_ms);
  printf("%-34s %12.1f %12.1f\n", "pinned H2D (GB/s)", n.h2d_pinned, c.h2d_pinned);
  printf("%-34s %12.1f %12.1f\n", "pinned D2H (GB/s)", n.d2h_pinned, c.d2h_pinned);
  printf("%-34s %12.2f %12.2f\n", "CPU time per pinned copy (ms)", n.pinned_cpu_ms,
         c.pinned_cpu_ms);
  printf("%-34s %12.1f %12.1f\n", "pageable H2D (GB/s)", n.h2d_pageable, c.h2d_pageable);
  printf("%-34s %12.1f %12.1f\n", "pageable D2H (GB/s)", n.d2h_pageable, c.d2h_pageable);
  printf("%-34s %12.1f %12.1f\n", "device to device (GB/s)", n.d2d, c.d2d);
  printf("%-34s %12.2f %12.2f\n", "4-byte D2H latency (us, median)", n.small_d2h_us,
         c.small_d2h_us);
  for (int k = 0; k < 2; k++)
    for (int z = 0; z < 3; z++) {
      char label[64];
      snprintf(label, sizeof label, "%s alloc+free %zu KiB (us)", k ? "device" : "pinned",
               ALLOC_SIZES[z] >> 10);
      printf("%-34s %12.2f %12.2f\n", label, n.alloc_us[z][k], c.alloc_us[z][k]);
    }
  return 0;
}
