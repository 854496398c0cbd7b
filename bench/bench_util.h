/* Helpers the benchmarks share: a clock, medians, and checks that stop on the first failure. */
#ifndef NVHCQ_BENCH_UTIL_H
#define NVHCQ_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nvhcq.h"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

#define CHECK_NV(x)                                                                                \
  do {                                                                                             \
    nvhcq_status s_ = (x);                                                                         \
    if (s_) {                                                                                      \
      fprintf(stderr, "%s failed: %s\n", #x, nvhcq_last_error());                                  \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* libcuda is reached through dlopen, its results as plain ints. */
#define CHECK_CU(x)                                                                                \
  do {                                                                                             \
    int r_ = (x);                                                                                  \
    if (r_) {                                                                                      \
      fprintf(stderr, "%s failed: CUresult %d\n", #x, r_);                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
