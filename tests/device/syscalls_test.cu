// Kernels that call printf, assert, malloc and free, for test_syscalls (and test_elf's cases of
// relocations against undefined symbols). Built with nvcc -cubin, not -rdc: the calls stay
// undefined for the loader to resolve, as they are in any nvcc-built kernel.
#include <assert.h>
#include <stdint.h>
#include <stdio.h>

// One line per block with every conversion type; test_syscalls formats the same line on the CPU.
extern "C" __global__ void print_all(int base, const char *text) {
  if (threadIdx.x != 0) return;
  int b = (int)blockIdx.x;
  printf("b%d: %d %i %u %x %X %o %c %ld %lld %zu %hhd %hd|", b, base + b, -b, 4000000000u,
         0xbeef + b, 0xcafe, 8 + b, 'A' + b, -5l * b, (long long)b << 40, (size_t)b * 3,
         (signed char)(b + 100), (short)(b - 300));
  printf("b%d: %f %F %e %E %g %G %a %A|%s|%.2s|%p|%5d|%-5d|%*d|%-*.*f|%%\n", b, 1.5 * b, -0.25,
         1e-7 * b, 6.02e23, 0.0001, 1e20 * b, 1.0, -0.75, text, text, (void *)(uintptr_t)0x1234, b,
         b, 6, b, 9, 3, 2.0 / 3);
}

// One line from every thread: with a small FIFO most are dropped (and counted).
extern "C" __global__ void print_every_thread(void) {
  printf("t%u\n", blockIdx.x * blockDim.x + threadIdx.x);
}

// Fails in block 1, thread 3 only.
extern "C" __global__ void assert_one(int *out) {
  assert(blockIdx.x != 1 || threadIdx.x != 3);
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// Every thread allocates, writes its pattern, lets its neighbor read it back, frees; `rounds`
// times. errors[0]: NULL returns, [1]: misaligned blocks, [2]: wrong bytes read.
extern "C" __global__ void heap_rounds(int rounds, unsigned *errors) {
  __shared__ unsigned char *blocks[1024];
  unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  free(NULL);
  for (int r = 0; r < rounds; r++) {
    unsigned size = 16 + (tid * 7 + r * 13) % 96; // with the header, at most 128 bytes
    unsigned char *p = (unsigned char *)malloc(size);
    if (!p) atomicAdd(&errors[0], 1u);
    if (p && ((uintptr_t)p & 15)) atomicAdd(&errors[1], 1u);
    for (unsigned i = 0; p && i < size; i++) p[i] = (unsigned char)(tid + i + r);
    blocks[threadIdx.x] = p;
    __syncthreads();
    unsigned n = (threadIdx.x + 1) % blockDim.x, ntid = blockIdx.x * blockDim.x + n;
    unsigned char *q = blocks[n];
    unsigned nsize = 16 + (ntid * 7 + r * 13) % 96;
    for (unsigned i = 0; q && i < nsize; i++)
      if (q[i] != (unsigned char)(ntid + i + r)) {
        atomicAdd(&errors[2], 1u);
        break;
      }
    __syncthreads();
    free(p);
  }
}

// One thread takes 1 MiB blocks (their 16-byte headers included) until malloc says NULL, frees
// them, and takes them again: out[0] and out[1] count the blocks of each pass.
extern "C" __global__ void heap_exhaust(unsigned *out) {
  void *kept[64];
  unsigned n = 0, again = 0;
  while (n < 64 && (kept[n] = malloc((1u << 20) - 16)) != NULL) n++;
  for (unsigned i = 0; i < n; i++) free(kept[i]);
  while (again < n && (kept[again] = malloc((1u << 20) - 16)) != NULL) again++;
  for (unsigned i = 0; i < again; i++) free(kept[i]);
  out[0] = n;
  out[1] = again;
}
