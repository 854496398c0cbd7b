/* The layout the device syscalls (syscalls.cu) and the host (syscalls.c, print.c) share: the
 * module's state, the printf FIFO's records, and the one parser of printf conversions both sides
 * run, so that the device stores exactly the arguments the host formats. C and CUDA C. */
#ifndef NVHCQ_SYSCALLS_ABI_H
#define NVHCQ_SYSCALLS_ABI_H

#include <stdint.h>

#ifdef __CUDACC__
#define NVHCQ_SYS_FN __device__ static inline
#else
#define NVHCQ_SYS_FN static inline
#endif

/* Bounds of one record: the format is cut at MAX_FORMAT bytes, each %s string and each assert
 * string at MAX_STRING, the arguments at MAX_ARGS (CUDA's printf takes 32 at most). */
#define NVHCQ_SYS_MAX_FORMAT 1023u
#define NVHCQ_SYS_MAX_STRING 255u
#define NVHCQ_SYS_MAX_ARGS   32u
#define NVHCQ_SYS_ALIGN      16u /* records start and end at multiples of this */

enum { NVHCQ_SYS_PRINTF = 1, NVHCQ_SYS_ASSERT = 2, NVHCQ_SYS_PAD = 3 };

/* Every record starts with this. `size` is stored last, with release semantics: 0 means the
 * record is not ready (the host zeroes what it consumed before it gives the space back). */
typedef struct nvhcq_sys_record {
  uint32_t size;       /* bytes of the whole record, a multiple of NVHCQ_SYS_ALIGN */
  uint32_t kind;       /* NVHCQ_SYS_PRINTF, _ASSERT or _PAD (skip to the ring's end) */
  uint32_t count;      /* printf: the 8-byte argument slots that follow this header */
  uint32_t format_len; /* printf: bytes of the format, stored after the slots with a NUL */
} nvhcq_sys_record;
/* A printf record: header, uint64_t slots[count], the format, then the %s strings; a %s slot
 * holds its string's offset from the record's start (0: the argument was NULL). Integer slots
 * hold the value zero-extended from its size (4 or 8 bytes), double slots the bits. */

/* An assert record: header (count 0), this, then three NUL-terminated strings at the offsets. */
typedef struct nvhcq_sys_assert {
  uint32_t line;
  uint32_t block[3], thread[3];
  uint32_t message, file, function; /* offsets from the record's start */
  uint32_t unused;
} nvhcq_sys_assert;

/* The FIFO buffer (pinned host memory) opens with this; the ring follows at NVHCQ_SYS_RING. */
typedef struct nvhcq_sys_fifo {
  uint64_t head; /* bytes of the ring the host consumed and zeroed: written by the host only */
  uint64_t unused[7];
} nvhcq_sys_fifo;
#define NVHCQ_SYS_RING 64u

/* Heap size classes: class c holds blocks of 2^c bytes, a 16-byte header included. */
#define NVHCQ_SYS_MIN_CLASS 5u
#define NVHCQ_SYS_CLASSES   41u
#define NVHCQ_SYS_HEADER    16u

/* The module's __device__ variable nvhcq_sys: the host writes the addresses and sizes
 * after loading the module, the GPU keeps the counters (device-memory atomics). */
typedef struct nvhcq_sys_state {
  uint64_t fifo;          /* GPU address of the nvhcq_sys_fifo, 0: printf output is dropped */
  uint64_t fifo_capacity; /* bytes of the ring, a power of two (at least 4 KiB) */
  uint64_t heap;          /* GPU address of the heap, 0: malloc returns NULL */
  uint64_t heap_size;
  uint64_t tail;     /* ring bytes reserved so far (GPU) */
  uint64_t dropped;  /* records that found the ring full (GPU; the host reads it) */
  uint64_t heap_top; /* heap bytes handed out past the free lists (GPU) */
  /* Free list heads: block index + 1 in the low 32 bits (0: empty), a tag bumped by every change
   * in the high 32 (the ABA guard). A block's index is its offset / 16. */
  uint64_t free_head[NVHCQ_SYS_CLASSES];
} nvhcq_sys_state;

/* What one printf argument is stored as. */
enum {
  NVHCQ_SYS_ARG_NONE = 0, /* %% */
  NVHCQ_SYS_ARG_INT32,    /* int-sized integers (hh, h and no modifier promote to int) */
  NVHCQ_SYS_ARG_INT64,    /* l, ll, z, j, t, q */
  NVHCQ_SYS_ARG_DOUBLE,   /* f F e E g G a A (float promotes to double; L is taken as double) */
  NVHCQ_SYS_ARG_STRING,   /* s */
  NVHCQ_SYS_ARG_POINTER,  /* p, and n (which prints nothing) */
};

typedef struct nvhcq_sys_conv {
  uint32_t length; /* bytes of the conversion, from its '%' */
  uint32_t stars;  /* int arguments taken by '*' width and precision, before the value */
  uint32_t arg;    /* NVHCQ_SYS_ARG_* */
  char conversion; /* the conversion character */
} nvhcq_sys_conv;

NVHCQ_SYS_FN int nvhcq_sys_in(char c, const char *set) {
  for (; *set; set++)
    if (*set == c) return 1;
  return 0;
}

/* The integer size a length modifier gives: 8 for l ll z j t q, else 4. */
NVHCQ_SYS_FN uint32_t nvhcq_sys_int_arg(const char *f, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i < to; i++)
    if (nvhcq_sys_in(f[i], "lzjtq")) return NVHCQ_SYS_ARG_INT64;
  return NVHCQ_SYS_ARG_INT32;
}

/* Parses the conversion that starts at f[0] == '%', reading at most `left` bytes. 0 when it is
 * malformed (cut short, or an unknown conversion): then the '%' is printed as it is and nothing
 * is taken. Grammar: % [-+ #0']* [* | digits] [. [* | digits]] [hh h l ll z j t q L] conversion. */
NVHCQ_SYS_FN uint32_t nvhcq_sys_parse(const char *f, uint32_t left, nvhcq_sys_conv *out) {
  uint32_t i = 1, stars = 0;
  while (i < left && nvhcq_sys_in(f[i], "-+ #0'")) i++;
  if (i < left && f[i] == '*') stars++, i++;
  while (i < left && f[i] >= '0' && f[i] <= '9') i++;
  if (i < left && f[i] == '.') {
    i++;
    if (i < left && f[i] == '*') stars++, i++;
    while (i < left && f[i] >= '0' && f[i] <= '9') i++;
  }
  uint32_t mods = i;
  for (int n = 0; n < 2 && i < left && nvhcq_sys_in(f[i], "hlzjtqL"); n++) {
    if (n == 1 && !((f[i] == 'h' && f[i - 1] == 'h') || (f[i] == 'l' && f[i - 1] == 'l'))) break;
    i++;
  }
  if (i >= left || f[i] == '\0') return 0;
  char c = f[i];
  uint32_t arg;
  if (c == '%')
    arg = stars || i != 1 ? 0xff : NVHCQ_SYS_ARG_NONE;
  else if (c == 'c') /* %lc's wint_t is int-sized too */
    arg = NVHCQ_SYS_ARG_INT32;
  else if (nvhcq_sys_in(c, "diouxX"))
    arg = nvhcq_sys_int_arg(f, mods, i);
  else if (nvhcq_sys_in(c, "fFeEgGaA"))
    arg = NVHCQ_SYS_ARG_DOUBLE;
  else if (c == 's')
    arg = NVHCQ_SYS_ARG_STRING;
  else if (c == 'p' || c == 'n')
    arg = NVHCQ_SYS_ARG_POINTER;
  else
    return 0;
  if (arg == 0xff) return 0; /* "%5%": not a conversion C defines */
  *out = (nvhcq_sys_conv){i + 1, stars, arg, c};
  return i + 1;
}

/* Bytes an argument of kind `arg` takes in CUDA's argument buffer (each at its own alignment). */
NVHCQ_SYS_FN uint32_t nvhcq_sys_arg_bytes(uint32_t arg) {
  return arg == NVHCQ_SYS_ARG_INT32 ? 4 : arg == NVHCQ_SYS_ARG_NONE ? 0 : 8;
}

#endif
