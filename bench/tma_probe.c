/* Records what libcuda's tensor-map encoders produce for random parameter sets, one line per set,
 * so nvhcq's encoder can be checked against the vendor's bytes without a GPU (the table becomes
 * test data) and live beside it on one. usage: nvhcq_tma_probe COUNT SEED [im2col]
 *
 * Line format (hex numbers without 0x, fields separated by spaces):
 *   T dtype rank addr dims.. strides.. box.. estrides.. interleave swizzle l2 oob rc bytes
 *   I dtype rank addr dims.. strides.. lower.. upper.. channels pixels estrides.. il sw l2 oob rc
 * bytes where strides has rank-1 entries, lower/upper rank-2, and bytes is the 128-byte map (or
 * "-").
 *
 * usage: nvhcq_tma_probe check COUNT SEED: the same sets through libcuda and nvhcq's encoder in
 * one process; prints each disagreement and the totals, and exits 1 on any. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvhcq.h"

typedef int (*encode_tiled_fn)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                               const unsigned *, const unsigned *, int, int, int, int);
typedef int (*encode_im2col_fn)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                const int *, const int *, unsigned, unsigned, const unsigned *, int,
                                int, int, int);

static uint64_t state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) {
  return n ? rnd() % n : 0;
}
static int chance(int percent) {
  return (int)below(100) < percent;
}

static const unsigned elem_bytes[16] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 1, 1, 1};

typedef struct {
  int dtype, rank, il, sw, l2, oob;
  uint64_t addr, dims[5], strides[5];
  unsigned box[5], estr[5];
  int lower[3], upper[3];
  unsigned channels, pixels;
} params;

/* Mostly valid parameters (each rule CUDA documents kept), sometimes one rule bent. */
static void make(params *p, int im2col) {
  memset(p, 0, sizeof *p);
  p->dtype = (int)below(chance(5) ? 16 : 13);
  p->rank = im2col ? 3 + (int)below(3) : 1 + (int)below(5);
  if (chance(2)) p->rank = (int)below(7);
  p->il = chance(15) ? 1 + (int)below(2) : 0;
  p->sw = (int)below(4);
  if (chance(5)) p->sw = (int)below(8);
  p->l2 = (int)below(4);
  p->oob = chance(20);
  unsigned e = elem_bytes[p->dtype & 15];
  unsigned align = p->il == 2 ? 32 : 16;
  p->addr = (0x7f0000000000ull + below(1ull << 36)) & ~(uint64_t)(align - 1);
  if (chance(3)) p->addr += 1 + below(31);
  uint64_t stride = 0;
  for (int i = 0; i < p->rank && i < 5; i++) {
    int bits = (int)below(i == 0 ? 20 : 12);
    p->dims[i] = 1 + below(1ull << bits);
    if (chance(2)) p->dims[i] = chance(50) ? 0 : (1ull << 32) + below(100);
    uint64_t row = i == 0 ? p->dims[0] * e : stride * p->dims[i - 1];
    if (i > 0) {
      stride = (row + 15) / 16 * 16 + 16 * below(chance(50) ? 4 : 1000);
      if (chance(2)) stride += 1 + below(15);
      if (chance(1)) stride = 1ull << (40 + below(2));
      if (chance(3)) stride = 16 * (1 + below(row / 16 + 1)); /* below the row size */
      p->strides[i - 1] = stride;
    } else {
      stride = row;
    }
    unsigned maxbox = 256;
    p->box[i] = 1 + (unsigned)below(chance(50) ? 16 : maxbox);
    if (chance(2)) p->box[i] = 257 + (unsigned)below(100);
    p->estr[i] = chance(70) ? 1 : 1 + (unsigned)below(8);
    if (chance(1)) p->estr[i] = 9 + (unsigned)below(4);
  }
  if (p->rank >= 1 && p->rank <= 5 && !p->il) {
    /* The inner box row is a multiple of 16 bytes and fits the swizzle span. */
    unsigned span = p->sw == 1 ? 32 : p->sw == 2 ? 64 : p->sw == 3 ? 128 : 256;
    unsigned units = 1 + (unsigned)below(span / 16);
    if (!chance(5)) p->box[0] = units * 16 / e ? units * 16 / e : 1;
    if (p->box[0] > 256 && !chance(5)) p->box[0] = 256;
  }
  if (im2col) {
    for (int i = 0; i < p->rank - 2 && i < 3; i++) {
      p->lower[i] = -(int)below(8);
      p->upper[i] = (int)below(8) - 4;
      if (chance(3)) p->lower[i] = -(int)below(1 << 16);
    }
    p->channels = 1 + (unsigned)below(256);
    p->pixels = 1 + (unsigned)below(1024);
    if (!chance(5)) p->channels = (p->channels * e + 15) / 16 * 16 / e;
  }
}

static void put_list(FILE *o, const uint64_t *v, int n) {
  for (int i = 0; i < n; i++) fprintf(o, " %llx", (unsigned long long)v[i]);
}
static void put_list32(FILE *o, const unsigned *v, int n) {
  for (int i = 0; i < n; i++) fprintf(o, " %x", v[i]);
}

/* nvhcq's encoder on the same parameters. */
static int ours(const params *p, int im2col, uint8_t map[128]) {
  nvhcq_tensor_map m;
  nvhcq_status s;
  if (im2col) {
    nvhcq_tensor_im2col d = {.struct_size = sizeof d,
                             .dtype = (uint32_t)p->dtype,
                             .rank = (uint32_t)p->rank,
                             .address = p->addr,
                             .channels = p->channels,
                             .pixels = p->pixels,
                             .interleave = (uint32_t)p->il,
                             .swizzle = (uint32_t)p->sw,
                             .l2_promotion = (uint32_t)p->l2,
                             .oob_fill = (uint32_t)p->oob};
    memcpy(d.dims, p->dims, sizeof d.dims), memcpy(d.strides, p->strides, sizeof d.strides);
    memcpy(d.lower, p->lower, sizeof d.lower), memcpy(d.upper, p->upper, sizeof d.upper);
    memcpy(d.element_strides, p->estr, sizeof d.element_strides);
    s = nvhcq_tensor_map_encode_im2col(&m, &d);
  } else {
    nvhcq_tensor_tiled d = {.struct_size = sizeof d,
                            .dtype = (uint32_t)p->dtype,
                            .rank = (uint32_t)p->rank,
                            .address = p->addr,
                            .interleave = (uint32_t)p->il,
                            .swizzle = (uint32_t)p->sw,
                            .l2_promotion = (uint32_t)p->l2,
                            .oob_fill = (uint32_t)p->oob};
    memcpy(d.dims, p->dims, sizeof d.dims), memcpy(d.strides, p->strides, sizeof d.strides);
    memcpy(d.box, p->box, sizeof d.box),
        memcpy(d.element_strides, p->estr, sizeof d.element_strides);
    s = nvhcq_tensor_map_encode_tiled(&m, &d);
  }
  memcpy(map, m.bytes, 128);
  return (int)s;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: %s [check] COUNT SEED [im2col]\n", argv[0]), 2;
  int check = !strcmp(argv[1], "check");
  argv += check, argc -= check;
  long count = atol(argv[1]);
  state = strtoull(argv[2], NULL, 0);
  int im2col = argc > 3 && !strcmp(argv[3], "im2col");
  long agree[2] = {0, 0}, differ = 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return fprintf(stderr, "libcuda is needed\n"), 1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
  encode_tiled_fn tiled = (encode_tiled_fn)dlsym(lib, "cuTensorMapEncodeTiled");
  encode_im2col_fn i2c = (encode_im2col_fn)dlsym(lib, "cuTensorMapEncodeIm2col");
  int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
  int (*set_current)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
  void *ctx;
  /* The encoders need a current context (else CUDA_ERROR_INVALID_CONTEXT). */
  if (!init || !tiled || !i2c || !retain || !set_current || init(0) || retain(&ctx, 0) ||
      set_current(ctx))
    return fprintf(stderr, "cuInit or the primary context failed\n"), 1;
  for (long n = 0; n < count; n++) {
    params p;
    make(&p, im2col);
    uint8_t map[128] __attribute__((aligned(64)));
    memset(map, 0xa5, sizeof map);
    int r = p.rank < 1 || p.rank > 5 ? p.rank : p.rank; /* rank passed as is */
    int k = r >= 1 && r <= 5 ? r : (r > 5 ? 5 : 0);
    int rc = im2col ? i2c(map, p.dtype, (unsigned)r, (void *)p.addr, p.dims, p.strides, p.lower,
                          p.upper, p.channels, p.pixels, p.estr, p.il, p.sw, p.l2, p.oob)
                    : tiled(map, p.dtype, (unsigned)r, (void *)p.addr, p.dims, p.strides, p.box,
                            p.estr, p.il, p.sw, p.l2, p.oob);
    if (check) {
      uint8_t mine[128];
      int mr = ours(&p, im2col, mine);
      /* Interleaved im2col maps nvhcq refuses on purpose (nvhcq.h says why). */
      if (im2col && p.il && mr) continue;
      if ((rc == 0) == (mr == 0) && (rc || !memcmp(map, mine, 128))) {
        agree[rc == 0]++;
        continue;
      }
      differ++;
      printf("DIFFER libcuda %d nvhcq %s: ", rc, mr ? nvhcq_last_error() : "accepts");
    }
    printf("%c %x %x %llx", im2col ? 'I' : 'T', p.dtype, r, (unsigned long long)p.addr);
    put_list(stdout, p.dims, k);
    put_list(stdout, p.strides, k ? k - 1 : 0);
    if (im2col) {
      for (int i = 0; i < k - 2; i++) printf(" %x", (unsigned)p.lower[i]);
      for (int i = 0; i < k - 2; i++) printf(" %x", (unsigned)p.upper[i]);
      printf(" %x %x", p.channels, p.pixels);
    } else {
      put_list32(stdout, p.box, k);
    }
    put_list32(stdout, p.estr, k);
    printf(" %x %x %x %x %d ", p.il, p.sw, p.l2, p.oob, rc);
    if (rc)
      printf("-");
    else
      for (int i = 0; i < 128; i++) printf("%02x", map[i]);
    printf("\n");
  }
  if (check)
    printf("%s: %ld accepted and %ld refused alike, %ld differ\n", im2col ? "im2col" : "tiled",
           agree[1], agree[0], differ);
  return check && differ;
}
