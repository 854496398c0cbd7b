// Device syscalls: nvhcq's own vprintf, __assertfail, malloc and free, the functions the CUDA
// driver would otherwise provide to kernels that call printf, assert, malloc and free. Built
// relocatable and device-linked with -maxrregcount=24 (the registers ptxas leaves a call to an
// unknown function), embedded into libnvhcq, loaded once per device on first need. Each is
// named nvhcq_sys_<name> (CUDA's headers declare malloc, free and vprintf already, and nvlink
// makes a definition named vprintf or __assertfail local); the loader resolves a kernel's
// undefined <name> to it. Calls reach them by the PTX ABI, so only the signatures must match.
#include <stddef.h>
#include <stdint.h>

#include "syscalls_abi.h"

extern "C" {
__device__ nvhcq_sys_state nvhcq_sys;
}

// The host's consumed mark, read past every cache: the host writes it in system memory.
__device__ static uint64_t load_head(const nvhcq_sys_fifo *f) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(&f->head) : "memory");
  return v;
}

// Publishes a record: everything before it is visible to the host first.
__device__ static void publish(uint8_t *rec, uint32_t size) {
  __threadfence_system();
  *(volatile uint32_t *)rec = size;
}

// Room for `size` bytes in the ring, never across its end (a pad record fills the rest), or NULL
// and a count of the drop when the host has not consumed enough.
__device__ static uint8_t *reserve(uint32_t size) {
  nvhcq_sys_state *st = &nvhcq_sys;
  uint64_t cap = st->fifo_capacity;
  nvhcq_sys_fifo *f = (nvhcq_sys_fifo *)st->fifo;
  if (!f || size > cap) {
    atomicAdd((unsigned long long *)&st->dropped, 1ull);
    return NULL;
  }
  uint8_t *ring = (uint8_t *)f + NVHCQ_SYS_RING;
  uint64_t t = *(volatile uint64_t *)&st->tail, at, skip;
  for (;;) {
    at = t & (cap - 1);
    skip = at + size > cap ? cap - at : 0;
    if (t + skip + size - load_head(f) > cap) {
      atomicAdd((unsigned long long *)&st->dropped, 1ull);
      return NULL;
    }
    uint64_t seen = atomicCAS((unsigned long long *)&st->tail, t, t + skip + size);
    if (seen == t) break;
    t = seen;
  }
  if (skip) {
    ((nvhcq_sys_record *)(ring + at))->kind = NVHCQ_SYS_PAD;
    publish(ring + at, (uint32_t)skip);
  }
  return ring + ((t + skip) & (cap - 1));
}

// printf's argument buffer (and a %s string kept in an array on the stack) lies in the caller's
// stack: a generic address in the local window. On the H200 a generic load there faulted
// ("invalid address space", Xid 13) while the caller's local stores to the same bytes had worked,
// so such addresses are read through local loads at their offset in the window.
__device__ static uint64_t local_window(void) {
  uint64_t base;
  asm("{ .reg .u64 z; mov.u64 z, 0; cvta.local.u64 %0, z; }" : "=l"(base));
  return base;
}

__device__ static int in_local(const void *p) {
  return (uint64_t)p - local_window() < (16ull << 20);
}

__device__ static uint64_t load(const void *p, uint32_t bytes) {
  if (!in_local(p))
    return bytes == 8   ? *(const uint64_t *)p
           : bytes == 4 ? *(const uint32_t *)p
                        : *(const uint8_t *)p;
  uint64_t at = (uint64_t)p - local_window(), v = 0;
  uint32_t w = 0;
  if (bytes == 8) {
    asm volatile("ld.local.u64 %0, [%1];" : "=l"(v) : "l"(at));
    return v;
  }
  if (bytes == 4) {
    asm volatile("ld.local.u32 %0, [%1];" : "=r"(w) : "l"(at));
    return w;
  }
  asm volatile("ld.local.u8 %0, [%1];" : "=r"(w) : "l"(at));
  return w & 0xff;
}

__device__ static uint32_t bounded_len(const char *s, uint32_t max) {
  uint32_t n = 0;
  while (n < max && load(s + n, 1)) n++;
  return n;
}

__device__ static uint32_t copy_string(uint8_t *dst, const char *s, uint32_t max) {
  uint32_t n = 0;
  for (uint8_t c; n < max && (c = (uint8_t)load(s + n, 1)); n++) dst[n] = c;
  dst[n] = 0;
  return n + 1;
}

__device__ static uint64_t take(const uint8_t *args, uint32_t *off, uint32_t bytes) {
  *off = (*off + bytes - 1) & ~(bytes - 1);
  uint64_t v = load(args + *off, bytes);
  *off += bytes;
  return v;
}

// One pass over the format: counts the slots and string bytes (rec NULL), or writes them into
// rec, whose `end` no string may pass (one the caller changed between the passes may have grown).
// Both passes take the same arguments, in the order nvhcq_sys_parse finds them.
__device__ static uint32_t walk(const char *fmt, uint32_t flen, const uint8_t *args, uint8_t *rec,
                                uint32_t *strings_at, uint32_t end) {
  uint32_t slots = 0, off = 0;
  uint64_t *slot = rec ? (uint64_t *)(rec + sizeof(nvhcq_sys_record)) : NULL;
  for (uint32_t i = 0; i < flen;) {
    nvhcq_sys_conv c;
    uint32_t n = fmt[i] == '%' ? nvhcq_sys_parse(fmt + i, flen - i, &c) : 0;
    if (!n || slots + c.stars + 1 > NVHCQ_SYS_MAX_ARGS) {
      i++;
      continue;
    }
    for (uint32_t s = 0; s < c.stars; s++) {
      uint64_t v = take(args, &off, 4);
      if (slot) slot[slots] = v;
      slots++;
    }
    if (c.arg != NVHCQ_SYS_ARG_NONE) {
      uint64_t v = take(args, &off, nvhcq_sys_arg_bytes(c.arg));
      if (c.arg == NVHCQ_SYS_ARG_STRING && v) {
        const char *s = (const char *)v;
        if (rec && *strings_at >= end) {
          v = 0; /* no room left: printed as (null) */
        } else if (rec) {
          uint32_t room = end - *strings_at - 1;
          v = *strings_at;
          *strings_at += copy_string(rec + *strings_at, s,
                                     room < NVHCQ_SYS_MAX_STRING ? room : NVHCQ_SYS_MAX_STRING);
        } else {
          *strings_at += bounded_len(s, NVHCQ_SYS_MAX_STRING) + 1;
        }
      }
      if (slot) slot[slots] = v;
      slots++;
    }
    i += n;
  }
  return slots;
}

// CUDA's contract: the number of arguments parsed, -1 for a NULL format, -2 on an internal
// error (here: the FIFO was full and the output was dropped).
extern "C" __device__ __noinline__ int nvhcq_sys_vprintf(const char *fmt, const void *args) {
  if (!fmt) return -1;
  uint32_t flen = bounded_len(fmt, NVHCQ_SYS_MAX_FORMAT), strings = 0;
  uint32_t slots = walk(fmt, flen, (const uint8_t *)args, NULL, &strings, 0);
  uint32_t head = sizeof(nvhcq_sys_record) + 8 * slots + flen + 1;
  uint32_t size = (head + strings + NVHCQ_SYS_ALIGN - 1) & ~(NVHCQ_SYS_ALIGN - 1);
  uint8_t *rec = reserve(size);
  if (!rec) return -2;
  nvhcq_sys_record *r = (nvhcq_sys_record *)rec;
  r->kind = NVHCQ_SYS_PRINTF;
  r->count = slots;
  r->format_len = flen;
  uint8_t *text = rec + sizeof(nvhcq_sys_record) + 8 * slots;
  for (uint32_t i = 0; i < flen; i++) text[i] = (uint8_t)fmt[i];
  text[flen] = 0;
  strings = head;
  walk(fmt, flen, (const uint8_t *)args, rec, &strings, size);
  publish(rec, size);
  return (int)slots;
}

__device__ static uint32_t put(uint8_t *rec, uint32_t *at, const char *s) {
  uint32_t where = *at;
  *at += copy_string(rec + where, s ? s : "", NVHCQ_SYS_MAX_STRING);
  return where;
}

// Records what failed for the host to print as CUDA does, then stops the kernel: the launch
// fails, and the fault report names the assertion.
extern "C" __device__ __noinline__ void nvhcq_sys___assertfail(const char *message,
                                                               const char *file, unsigned line,
                                                               const char *function,
                                                               size_t charSize) {
  (void)charSize;
  uint32_t at = sizeof(nvhcq_sys_record) + sizeof(nvhcq_sys_assert);
  uint32_t need = at + 3 * (NVHCQ_SYS_MAX_STRING + 1);
  uint8_t *rec = reserve((need + NVHCQ_SYS_ALIGN - 1) & ~(NVHCQ_SYS_ALIGN - 1));
  if (rec) {
    nvhcq_sys_record *r = (nvhcq_sys_record *)rec;
    nvhcq_sys_assert *a = (nvhcq_sys_assert *)(rec + sizeof *r);
    r->kind = NVHCQ_SYS_ASSERT;
    r->count = 0;
    r->format_len = 0;
    a->line = line;
    a->block[0] = blockIdx.x, a->block[1] = blockIdx.y, a->block[2] = blockIdx.z;
    a->thread[0] = threadIdx.x, a->thread[1] = threadIdx.y, a->thread[2] = threadIdx.z;
    a->message = put(rec, &at, message);
    a->file = put(rec, &at, file);
    a->function = put(rec, &at, function);
    publish(rec, (need + NVHCQ_SYS_ALIGN - 1) & ~(NVHCQ_SYS_ALIGN - 1));
  }
  __trap();
}

// ---- heap: power-of-two classes, lock-free free lists with tagged heads ----

__device__ static uint32_t class_for(size_t bytes) {
  uint32_t c = NVHCQ_SYS_MIN_CLASS;
  while (c < NVHCQ_SYS_CLASSES && (1ull << c) < bytes) c++;
  return c;
}

__device__ static uint8_t *pop(nvhcq_sys_state *st, uint32_t c) {
  unsigned long long *head = (unsigned long long *)&st->free_head[c];
  uint64_t old = *(volatile unsigned long long *)head;
  for (;;) {
    uint32_t index = (uint32_t)old;
    if (!index) return NULL;
    uint8_t *block = (uint8_t *)st->heap + (uint64_t)(index - 1) * 16;
    // A stale link (another thread took the block meanwhile) fails the CAS: the tag moved.
    uint32_t next = *(volatile uint32_t *)block;
    uint64_t want = ((old >> 32) + 1) << 32 | next;
    uint64_t seen = atomicCAS(head, old, want);
    if (seen == old) return block;
    old = seen;
  }
}

__device__ static void push(nvhcq_sys_state *st, uint32_t c, uint8_t *block) {
  unsigned long long *head = (unsigned long long *)&st->free_head[c];
  uint32_t index = (uint32_t)((block - (uint8_t *)st->heap) / 16) + 1;
  uint64_t old = *(volatile unsigned long long *)head;
  for (;;) {
    *(volatile uint32_t *)block = (uint32_t)old;
    __threadfence();
    uint64_t seen = atomicCAS(head, old, ((old >> 32) + 1) << 32 | index);
    if (seen == old) return;
    old = seen;
  }
}

// New space from the top of the heap; the top only moves when the block fits.
__device__ static uint8_t *carve(nvhcq_sys_state *st, uint64_t bytes) {
  unsigned long long *top = (unsigned long long *)&st->heap_top;
  uint64_t old = *(volatile unsigned long long *)top;
  for (;;) {
    uint64_t align = bytes < 4096 ? bytes : 4096; /* a block's own size, at most a page */
    uint64_t start = (old + align - 1) & ~(align - 1);
    if (start + bytes > st->heap_size || start + bytes < start) return NULL;
    uint64_t seen = atomicCAS(top, old, start + bytes);
    if (seen == old) return (uint8_t *)st->heap + start;
    old = seen;
  }
}

// 16-byte aligned blocks; NULL when the heap is exhausted (or was never set up).
extern "C" __device__ __noinline__ void *nvhcq_sys_malloc(size_t size) {
  nvhcq_sys_state *st = &nvhcq_sys;
  if (!st->heap || size > st->heap_size) return NULL;
  uint32_t c = class_for(size + NVHCQ_SYS_HEADER);
  if (c >= NVHCQ_SYS_CLASSES) return NULL;
  uint8_t *block = pop(st, c);
  if (!block) block = carve(st, 1ull << c);
  if (!block) return NULL;
  *(volatile uint32_t *)(block + 8) = c;
  return block + NVHCQ_SYS_HEADER;
}

extern "C" __device__ __noinline__ void nvhcq_sys_free(void *p) {
  if (!p) return;
  nvhcq_sys_state *st = &nvhcq_sys;
  uint8_t *block = (uint8_t *)p - NVHCQ_SYS_HEADER;
  uint32_t c = *(volatile uint32_t *)(block + 8);
  if (c < NVHCQ_SYS_MIN_CLASS || c >= NVHCQ_SYS_CLASSES) return; // not one of the heap's blocks
  push(st, c, block);
}

// ---- cooperative_groups' grid sync as libcudadevrt calls it ----
// cudaCGGetIntrinsicHandle(cudaCGScopeGrid = 1) and cudaCGSynchronize(handle, flags) (what -rdc
// code and numba's this_grid().sync() call) end in these two (their SASS, nvcc 13: the scope in
// R4, the 64-bit handle in R4:R5, nonzero returned means failure). The handle is the grid
// workspace a cooperative launch puts in %envreg1:%envreg2 (0 otherwise); the barrier is the one
// cooperative_groups' own grid.sync() counts in (the workspace's second word: the first block
// adds 0x80000000 - (blocks - 1), every other block 1, and each waits for the top bit to flip).
extern "C" __device__ __noinline__ unsigned long long
nvhcq_sys___cuda_syscall_CGS_get_intrinsic_handle(int scope) {
  if (scope != 1) return 0;
  unsigned hi, lo;
  asm volatile("mov.u32 %0, %%envreg1;" : "=r"(hi));
  asm volatile("mov.u32 %0, %%envreg2;" : "=r"(lo));
  return (unsigned long long)hi << 32 | lo;
}

extern "C" __device__ __noinline__ unsigned int
nvhcq_sys___cuda_syscall_CGS_sync(unsigned long long handle, unsigned int flags) {
  (void)flags;
  if (!handle) return 1;
  unsigned int *arrived = (unsigned int *)handle + 1;
  __syncthreads();
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
    unsigned int blocks = gridDim.x * gridDim.y * gridDim.z, old, now;
    unsigned int add = blockIdx.x + blockIdx.y + blockIdx.z == 0 ? 0x80000000u - (blocks - 1) : 1;
    asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(arrived), "r"(add)
                 : "memory");
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(arrived) : "memory");
    } while (((old ^ now) & 0x80000000u) == 0);
  }
  __syncthreads();
  return 0;
}

// ---- a conditional graph node's condition ----
// cudaGraphSetConditional(handle, value), as nvcc and NVRTC compile it (a call of the undefined
// function with the 64-bit handle and the 32-bit value). nvhcq's CUDA library makes each handle
// the GPU address of the condition's 4 bytes in pinned host memory, which the CPU reads when it
// evaluates the node, once the work before the node has completed. The store is fenced at system
// scope here, so that it does not depend on the fence the kernel's grid ends with (a grid chained
// to the next one on its queue ends with a device-scope membar only).
extern "C" __device__ __noinline__ void nvhcq_sys_cudaGraphSetConditional(unsigned long long handle,
                                                                          unsigned int value) {
  if (!handle) return;
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" : : "l"(handle), "r"(value) : "memory");
  asm volatile("fence.acq_rel.sys;" : : : "memory");
}

// Never launched: it calls every syscall, so that the device link keeps them all.
extern "C" __global__ void nvhcq_sys_keep(const char *s, void *p, size_t n) {
  nvhcq_sys_vprintf(s, p);
  nvhcq_sys_free(nvhcq_sys_malloc(n));
  nvhcq_sys___assertfail(s, s, 0, s, 1);
  nvhcq_sys___cuda_syscall_CGS_sync(nvhcq_sys___cuda_syscall_CGS_get_intrinsic_handle((int)n), 0);
  nvhcq_sys_cudaGraphSetConditional((unsigned long long)p, (unsigned int)n);
}
