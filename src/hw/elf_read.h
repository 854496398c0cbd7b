/* The ELF container of a cubin, read for elf.c: header, sections, symbols and EIATTR records,
 * each through a range check, and the ELF and EIATTR numbers they use. Internal to hw/. */
#ifndef NVHCQ_ELF_READ_H
#define NVHCQ_ELF_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hw/elf.h"

#define NVHCQ_BAD(...) nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE, "invalid cubin: " __VA_ARGS__)
#define NVHCQ_OOM()    nvhcq_fail(NVHCQ_ERROR_OUT_OF_MEMORY, "out of host memory parsing a cubin")

typedef unsigned long long nvhcq_ull; /* for printf of uint64_t without PRIx64 noise */

/* ELF numbers (System V gABI) and NVIDIA's additions, as readelf and cuobjdump show them. */
enum {
  NVHCQ_EM_CUDA = 190,
  NVHCQ_SHT_NULL = 0,
  NVHCQ_SHT_SYMTAB = 2,
  NVHCQ_SHT_STRTAB = 3,
  NVHCQ_SHT_RELA = 4,
  NVHCQ_SHT_NOBITS = 8,
  NVHCQ_SHT_REL = 9,
  NVHCQ_SHF_ALLOC = 0x2,
  NVHCQ_STB_GLOBAL = 1,
  NVHCQ_STT_OBJECT = 1,
  NVHCQ_STT_FUNC = 2,
  NVHCQ_STO_CUDA_ENTRY = 0x10, /* st_other of a launchable kernel; device functions have 0 */
  NVHCQ_SHN_LORESERVE = 0xff00,
  NVHCQ_EHDR_SIZE = 64,
  NVHCQ_SHDR_SIZE = 64,
  NVHCQ_SYM_SIZE = 24,
  NVHCQ_REL_SIZE = 16,
  NVHCQ_RELA_SIZE = 24,
};

/* EIATTR record formats and the attributes used here, by cuobjdump's names. */
enum {
  NVHCQ_EIFMT_NVAL = 1, /* no value */
  NVHCQ_EIFMT_BVAL = 2, /* u8 value in the u16 field */
  NVHCQ_EIFMT_HVAL = 3, /* u16 value */
  NVHCQ_EIFMT_SVAL = 4, /* u16 payload size, then the payload */
  NVHCQ_EIATTR_MAX_THREADS = 0x05,
  NVHCQ_EIATTR_PARAM_CBANK = 0x0a,
  NVHCQ_EIATTR_REQNTID = 0x10,
  NVHCQ_EIATTR_FRAME_SIZE = 0x11,
  NVHCQ_EIATTR_MIN_STACK_SIZE = 0x12,
  NVHCQ_EIATTR_KPARAM_INFO = 0x17,
  NVHCQ_EIATTR_CBANK_PARAM_SIZE = 0x19,
  NVHCQ_EIATTR_MAXREG_COUNT = 0x1b,
  NVHCQ_EIATTR_MAX_STACK_SIZE = 0x23,
  NVHCQ_EIATTR_REGCOUNT = 0x2f,
  /* Clusters (sm_90+): __cluster_dims__ as three u32 (CTA_PER_CLUSTER), a flag record that the
   * kernel must be launched in clusters (EXPLICIT_CLUSTER), and the third __launch_bounds__ value
   * (MAX_CLUSTER_RANK). Numbers and layouts read from nvcc 13's cubins: tests/device/cluster.cu
   * gives (2,1,1) and (2,2,2) kernels, a __launch_bounds__(128,1,4) one gives 4. */
  NVHCQ_EIATTR_CTA_PER_CLUSTER = 0x3d,
  NVHCQ_EIATTR_EXPLICIT_CLUSTER = 0x3e,
  NVHCQ_EIATTR_MAX_CLUSTER_RANK = 0x3f,
  /* Parameters past the old 4 KiB limit (CUDA 12.1 on: up to 32764 bytes): nvcc 13 writes this
   * record instead of KPARAM_INFO for every parameter of such a kernel: u32 index, u32 ordinal |
   * offset << 16, u32 size in its low 16 bits (sm_100 sets 0x05 in the top byte for a pointer;
   * no alignment bits). Read from nvcc 13's cubins of a kernel taking a 4000-byte struct
   * (KPARAM_INFO), and of ones taking a 4400- and a 28000-byte struct (this record). */
  NVHCQ_EIATTR_KPARAM_INFO_V2 = 0x45,
  NVHCQ_EIATTR_NUM_BARRIERS = 0x4c,
  NVHCQ_EICOMPAT_ACCELERATOR_TARGET = 0x09, /* in .nv.compat: 1 for sm_90a, sm_100a, ... */
};

#define NVHCQ_MIN_ALIGN  128ull
#define NVHCQ_MAX_ALIGN  4096ull      /* ptxas asks for at most 128; more is a corrupt header */
#define NVHCQ_MAX_MEMORY (1ull << 40) /* no GPU has a terabyte of module globals */
#define NVHCQ_MAX_CBANK  0x10000ull   /* the hardware's constant bank size */
#define NVHCQ_NOT_PLACED UINT64_MAX

typedef struct nvhcq_elf_section {
  const char *name;
  uint32_t name_offset, type, link, info;
  uint64_t flags, offset, size, addralign, entsize;
  uint64_t place;      /* image offset, or NVHCQ_NOT_PLACED */
  bool has_data;       /* bytes in the file, range-checked */
  const char *strings; /* a string table's private copy (names point into it), else NULL */
} nvhcq_elf_section;

typedef struct nvhcq_elf_symbol {
  const char *name;
  uint64_t value, size;
  uint8_t info, other;
  uint16_t shndx;
} nvhcq_elf_symbol;

/* Parse state, freed once the cubin is built. */
typedef struct nvhcq_elf {
  const uint8_t *data;
  uint64_t size;
  uint8_t abi_version;
  uint32_t flags;
  uint64_t shoff;
  uint32_t shstrndx;
  uint32_t section_count;
  nvhcq_elf_section *sections;
  uint32_t symbol_count;
  nvhcq_elf_symbol *symbols;
  uint32_t symtab_index;
  char *strings[2]; /* the copies of the section-name and symbol-name tables (the cubin's) */
  /* kernel lookups, so that a cubin of thousands of kernels parses in O(n log n) */
  uint32_t *kernel_symbols;                       /* symbol index of each kernel */
  int32_t *symbol_kernel;                         /* kernel index of each symbol, or -1 */
  int32_t *symbol_function;                       /* function index of each symbol, or -1 */
  struct nvhcq_elf_kernel_name *kernel_names;     /* sorted by name */
  const struct nvhcq_elf_section **kernel_info;   /* .nv.info.<kernel> of each kernel */
  const struct nvhcq_elf_section **kernel_shared; /* .nv.shared.<kernel> of each kernel */
} nvhcq_elf;

typedef struct nvhcq_elf_kernel_name {
  const char *name;
  uint32_t index;
} nvhcq_elf_kernel_name;

typedef struct nvhcq_eiattr {
  uint64_t pos; /* of the record in its section, for messages */
  uint8_t format, attr;
  uint16_t value; /* BVAL/HVAL value, SVAL payload size */
  const uint8_t *data;
  uint32_t size; /* SVAL payload bytes, else 0 */
} nvhcq_eiattr;

/* ---- bytes ------------------------------------------------------------------------------- */

static inline uint16_t nvhcq_rd16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t nvhcq_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t nvhcq_rd64(const uint8_t *p) {
  return nvhcq_rd32(p) | (uint64_t)nvhcq_rd32(p + 4) << 32;
}
static inline void nvhcq_wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void nvhcq_wr64(uint8_t *p, uint64_t v) {
  nvhcq_wr32(p, (uint32_t)v);
  nvhcq_wr32(p + 4, (uint32_t)(v >> 32));
}
static inline int64_t nvhcq_to_i64(uint64_t v) {
  int64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}

/* Whether [off, off+len) lies within [0, limit), without overflow. */
static inline bool nvhcq_in_range(uint64_t off, uint64_t len, uint64_t limit) {
  return off <= limit && len <= limit - off;
}

static inline bool nvhcq_name_is(const char *name, const char *prefix, const char *suffix) {
  size_t n = strlen(prefix);
  return strncmp(name, prefix, n) == 0 && strcmp(name + n, suffix) == 0;
}

/* ---- the container (elf_read.c) ----------------------------------------------------------- */

/* Checks the ELF header and reads where the sections are. */
nvhcq_status nvhcq_elf_read_header(nvhcq_elf *e);
/* Reads and checks every section header and names the sections. */
nvhcq_status nvhcq_elf_read_sections(nvhcq_elf *e);
/* The first section named prefix + suffix, or NULL. */
const nvhcq_elf_section *nvhcq_elf_find(const nvhcq_elf *e, const char *prefix, const char *suffix);
/* Reads and checks the symbol table. */
nvhcq_status nvhcq_elf_read_symbols(nvhcq_elf *e);
/* Where a symbol is defined, or NULL for undefined and special (SHN_ABS, ...) symbols. */
const nvhcq_elf_section *nvhcq_symbol_section(const nvhcq_elf *e, const nvhcq_elf_symbol *s);
/* NVHCQ_ERROR_INVALID_IMAGE for a section without bytes in the file. */
nvhcq_status nvhcq_need_data(const nvhcq_elf_section *s);
/* Reads the EIATTR record at *pos and moves past it; *pos == s->size afterwards ends the list. */
nvhcq_status nvhcq_eiattr_next(const nvhcq_elf *e, const nvhcq_elf_section *s, uint64_t *pos,
                               nvhcq_eiattr *a);
/* An SVAL record with at least `bytes` of data, else NVHCQ_ERROR_INVALID_IMAGE. */
nvhcq_status nvhcq_eiattr_need(const nvhcq_elf_section *s, const nvhcq_eiattr *a, uint32_t bytes);
/* Word i of an SVAL record's data (checked by nvhcq_eiattr_need). */
uint32_t nvhcq_eiattr_u32(const nvhcq_eiattr *a, uint32_t i);
/* The value of a BVAL/HVAL record (an SVAL's first word, should a tool write it so). */
uint32_t nvhcq_eiattr_scalar(const nvhcq_eiattr *a);

#endif
