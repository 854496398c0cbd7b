/* The Hopper GEMM's inputs, shared by its device test and its benchmark: fixed-seed fp16 values
 * j/1024 (|j| <= 1024), exact in fp16, so the CPU multiplies the numbers the GPU does. */
#ifndef NVHCQ_HOPPER_GEMM_INPUTS_H
#define NVHCQ_HOPPER_GEMM_INPUTS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t gemm_rng_state;

static inline uint64_t gemm_rng_next(void) { /* splitmix64 */
  uint64_t z = (gemm_rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint16_t half_of(int j) {
  unsigned m = (unsigned)abs(j), e = 0;
  if (!m) return 0;
  while (m >> (e + 1)) e++;
  return (uint16_t)((j < 0 ? 0x8000 : 0) | (e + 5) << 10 | ((m << (10 - e)) & 0x3ff));
}

static inline double half_value(uint16_t h) {
  int e = h >> 10 & 31, f = h & 1023;
  double v = e ? ldexp(1024 + f, e - 25) : ldexp(f, -24);
  return h & 0x8000 ? -v : v;
}

/* n random halves from `seed`, or NULL when out of host memory. */
static inline uint16_t *random_halves(size_t n, uint64_t seed) {
  uint16_t *h = malloc(n * 2);
  gemm_rng_state = seed;
  for (size_t i = 0; h && i < n; i++) h[i] = half_of((int)(gemm_rng_next() % 2049) - 1024);
  return h;
}

#endif
