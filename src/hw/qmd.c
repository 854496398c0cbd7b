/* QMD fields read and written through the per-version bit-range tables, and the launch helpers
 * that encode addresses, sizes, releases, chaining, fences and prefetches. */
#include "hw/qmd.h"

#include <inttypes.h>

/* A planned field write: helpers check every write before making any, so a refused call
 * leaves the QMD as it was. */
typedef struct qmd_write {
  nvhcq_qmd_field field;
  uint64_t value;
} qmd_write;

#define QMD_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const field_names[NVHCQ_QMD_FIELD_COUNT] = {
#define NVHCQ_QMD_NAME_ENTRY(name) #name,
    NVHCQ_QMD_FIELDS(NVHCQ_QMD_NAME_ENTRY)
#undef NVHCQ_QMD_NAME_ENTRY
};

/* Indexed by nvhcq_qmd_version, whose values are the QMD major versions. */
static const nvhcq_qmd_layout *const layouts[] = {
    [NVHCQ_QMD_V03] = &nvhcq_qmd_layout_v03,
    [NVHCQ_QMD_V04] = &nvhcq_qmd_layout_v04,
    [NVHCQ_QMD_V05] = &nvhcq_qmd_layout_v05,
};

static const nvhcq_qmd_layout *layout_of(nvhcq_qmd_version v) {
  return (unsigned)v < QMD_COUNT(layouts) ? layouts[v] : NULL;
}

nvhcq_qmd_version nvhcq_qmd_version_for_class(uint32_t compute_class) {
  if (compute_class >= 0xcdc0) return NVHCQ_QMD_V05;
  if (compute_class >= 0xcbc0) return NVHCQ_QMD_V04;
  if (compute_class >= 0xc6c0) return NVHCQ_QMD_V03;
  return NVHCQ_QMD_NONE;
}

size_t nvhcq_qmd_size(nvhcq_qmd_version v) {
  const nvhcq_qmd_layout *l = layout_of(v);
  return l ? l->size_bytes : 0;
}

const char *nvhcq_qmd_field_name(nvhcq_qmd_field f) {
  return (unsigned)f < NVHCQ_QMD_FIELD_COUNT ? field_names[f] : "?";
}

static const nvhcq_qmd_bits *bits_of(nvhcq_qmd_version v, nvhcq_qmd_field f) {
  const nvhcq_qmd_layout *l = layout_of(v);
  if (!l || (unsigned)f >= NVHCQ_QMD_FIELD_COUNT || !l->bits[f].present) return NULL;
  return &l->bits[f];
}

int nvhcq_qmd_field_range(nvhcq_qmd_version v, nvhcq_qmd_field f, unsigned *hi, unsigned *lo) {
  const nvhcq_qmd_bits *b = bits_of(v, f);
  if (!b) return 0;
  *hi = b->hi;
  *lo = b->lo;
  return 1;
}

/* Walks the range one dword piece at a time, so a field may straddle dwords. */
void nvhcq_qmd_write_bits(uint32_t *qmd, unsigned hi, unsigned lo, uint64_t value) {
  for (unsigned bit = lo; bit <= hi;) {
    unsigned shift = bit % 32, n = hi - bit + 1 < 32 - shift ? hi - bit + 1 : 32 - shift;
    uint32_t mask = (uint32_t)(((uint64_t)1 << n) - 1) << shift;
    uint32_t piece = (uint32_t)(value >> (bit - lo)) << shift;
    qmd[bit / 32] = (qmd[bit / 32] & ~mask) | (piece & mask);
    bit += n;
  }
}

uint64_t nvhcq_qmd_read_bits(const uint32_t *qmd, unsigned hi, unsigned lo) {
  uint64_t value = 0;
  for (unsigned bit = lo; bit <= hi;) {
    unsigned shift = bit % 32, n = hi - bit + 1 < 32 - shift ? hi - bit + 1 : 32 - shift;
    uint64_t piece = (qmd[bit / 32] >> shift) & (((uint64_t)1 << n) - 1);
    value |= piece << (bit - lo);
    bit += n;
  }
  return value;
}

static nvhcq_status check_write(nvhcq_qmd_version v, nvhcq_qmd_field f, uint64_t value) {
  const nvhcq_qmd_bits *b = bits_of(v, f);
  if (!layout_of(v))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "cannot set QMD field %s to 0x%" PRIx64
                      ": unknown QMD version %d (nvhcq knows 3, 4, 5)",
                      nvhcq_qmd_field_name(f), value, (int)v);
  if (!b)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "cannot set %s to 0x%" PRIx64 ": QMD V%02d has no such field (field %d)",
                      nvhcq_qmd_field_name(f), value, (int)v, (int)f);
  unsigned width = b->hi - b->lo + 1u;
  if (width < 64 && value >> width)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "QMD V%02d field %s (bits %u:%u, %u bits wide) cannot hold 0x%" PRIx64
                      ": the largest value is 0x%" PRIx64,
                      (int)v, nvhcq_qmd_field_name(f), b->hi, b->lo, width, value,
                      ((uint64_t)1 << width) - 1);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_qmd_set(nvhcq_qmd_version v, uint32_t *qmd, nvhcq_qmd_field f, uint64_t value) {
  NVHCQ_TRY(check_write(v, f, value));
  const nvhcq_qmd_bits *b = bits_of(v, f);
  nvhcq_qmd_write_bits(qmd, b->hi, b->lo, value);
  return NVHCQ_SUCCESS;
}

uint64_t nvhcq_qmd_get(nvhcq_qmd_version v, const uint32_t *qmd, nvhcq_qmd_field f) {
  const nvhcq_qmd_bits *b = bits_of(v, f);
  return b ? nvhcq_qmd_read_bits(qmd, b->hi, b->lo) : 0;
}

/* Whether layout `l` has field `f` and `value` fits it: check_write's test without its message,
 * for the helpers that run on every launch. */
static int fits(const nvhcq_qmd_layout *l, nvhcq_qmd_field f, uint64_t value) {
  if (!l || (unsigned)f >= NVHCQ_QMD_FIELD_COUNT || !l->bits[f].present) return 0;
  unsigned width = l->bits[f].hi - l->bits[f].lo + 1u;
  return width >= 64 || !(value >> width);
}

static nvhcq_status apply(nvhcq_qmd_version v, uint32_t *qmd, const qmd_write *w, size_t n) {
  const nvhcq_qmd_layout *l = layout_of(v);
  /* All checked before any is written: a bad value leaves the QMD as it was. */
  for (size_t i = 0; i < n; i++)
    if (!fits(l, w[i].field, w[i].value)) return check_write(v, w[i].field, w[i].value);
  for (size_t i = 0; i < n; i++) {
    const nvhcq_qmd_bits *b = &l->bits[w[i].field];
    nvhcq_qmd_write_bits(qmd, b->hi, b->lo, w[i].value);
  }
  return NVHCQ_SUCCESS;
}

static nvhcq_status check_version(nvhcq_qmd_version v, const char *what) {
  if (layout_of(v)) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                    "%s: unknown QMD version %d (nvhcq knows 3, 4, 5)", what, (int)v);
}

static uint64_t round_up_pow2(uint64_t value, unsigned shift) {
  return (value + ((uint64_t)1 << shift) - 1) >> shift << shift;
}

nvhcq_status nvhcq_qmd_set_program_address(nvhcq_qmd_version v, uint32_t *qmd, uint64_t addr) {
  NVHCQ_TRY(check_version(v, "program address"));
  const nvhcq_qmd_layout *l = layout_of(v);
  if (addr & (((uint64_t)1 << l->program_address_shift) - 1))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "program address 0x%" PRIx64 " is not %u-byte aligned, as QMD V%02d needs",
                      addr, 1u << l->program_address_shift, (int)v);
  uint64_t stored = addr >> l->program_address_shift;
  const qmd_write w[] = {{l->program_address_lower, stored & 0xffffffffu},
                         {l->program_address_upper, stored >> 32}};
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "program address 0x%" PRIx64, addr) : s;
}

nvhcq_status nvhcq_qmd_set_constant_buffer(nvhcq_qmd_version v, uint32_t *qmd, unsigned index,
                                           uint64_t addr, uint32_t size) {
  NVHCQ_TRY(check_version(v, "constant buffer"));
  const nvhcq_qmd_layout *l = layout_of(v);
  if (index >= NVHCQ_QMD_CONSTANT_BUFFERS)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "constant buffer %u: a QMD has banks 0..%d",
                      index, NVHCQ_QMD_CONSTANT_BUFFERS - 1);
  if (addr & (((uint64_t)1 << l->cbuf_address_shift) - 1))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "constant buffer %u address 0x%" PRIx64
                      " is not %u-byte aligned, as QMD V%02d needs",
                      index, addr, 1u << l->cbuf_address_shift, (int)v);
  uint64_t stored = addr >> l->cbuf_address_shift;
  const qmd_write w[] = {
      {(nvhcq_qmd_field)(l->cbuf_address_lower0 + index), stored & 0xffffffffu},
      {(nvhcq_qmd_field)(l->cbuf_address_upper0 + index), stored >> 32},
      {(nvhcq_qmd_field)(NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0 + index),
       round_up_pow2(size, 4) >> 4},
      {(nvhcq_qmd_field)(NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + index), 1},
  };
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "constant buffer %u at 0x%" PRIx64 ", %u bytes", index, addr,
                                size)
           : s;
}

nvhcq_status nvhcq_qmd_set_release(nvhcq_qmd_version v, uint32_t *qmd, unsigned slot, uint64_t addr,
                                   uint64_t payload) {
  NVHCQ_TRY(check_version(v, "release"));
  if (slot >= NVHCQ_QMD_RELEASES)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "release slot %u: a QMD has slots 0..%d", slot,
                      NVHCQ_QMD_RELEASES - 1);
  const qmd_write w[] = {
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_ADDRESS_LOWER + slot), addr & 0xffffffffu},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_ADDRESS_UPPER + slot), addr >> 32},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER + slot), payload & 0xffffffffu},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER + slot), payload >> 32},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_STRUCTURE_SIZE + slot),
       NVHCQ_QMD_RELEASE_STRUCTURE_SIZE_FOUR_WORDS},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_PAYLOAD64B + slot), 1},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_REDUCTION_ENABLE + slot), 0},
      {(nvhcq_qmd_field)(NVHCQ_QMD_RELEASE0_ENABLE + slot), 1},
  };
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "release %u to 0x%" PRIx64, slot, addr) : s;
}

/* The carve-out encoding Mesa NAK and tinygrad use (bytes / 4 KiB + 1); the header gives only
 * the 6-bit width. */
static nvhcq_status sm_config(uint32_t bytes, const char *which, uint64_t *out) {
  if (bytes % 4096)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "%s shared memory config %u bytes is not a multiple of 4096", which, bytes);
  *out = bytes / 4096 + 1;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_qmd_set_shared_memory(nvhcq_qmd_version v, uint32_t *qmd, uint32_t bytes,
                                         uint32_t min_config, uint32_t target_config,
                                         uint32_t max_config) {
  NVHCQ_TRY(check_version(v, "shared memory"));
  const nvhcq_qmd_layout *l = layout_of(v);
  if (min_config > target_config || target_config > max_config)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "shared memory configs must satisfy min <= target <= max, got %u, %u, %u",
                      min_config, target_config, max_config);
  uint64_t min = 0, target = 0, max = 0;
  NVHCQ_TRY(sm_config(min_config, "min", &min));
  NVHCQ_TRY(sm_config(target_config, "target", &target));
  NVHCQ_TRY(sm_config(max_config, "max", &max));
  const qmd_write w[] = {
      {l->shared_memory_size,
       round_up_pow2(bytes, l->shared_memory_shift) >> l->shared_memory_shift},
      {NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE, min},
      {NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE, target},
      {NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE, max},
  };
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "shared memory %u bytes", bytes) : s;
}

nvhcq_status nvhcq_qmd_set_local_memory(nvhcq_qmd_version v, uint32_t *qmd, uint32_t low_bytes,
                                        uint32_t high_bytes) {
  NVHCQ_TRY(check_version(v, "local memory"));
  const nvhcq_qmd_layout *l = layout_of(v);
  unsigned shift = l->local_memory_shift;
  const qmd_write w[] = {
      {l->local_memory_low, round_up_pow2(low_bytes, shift) >> shift},
      {l->local_memory_high, round_up_pow2(high_bytes, shift) >> shift},
  };
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "local memory %u/%u bytes", low_bytes, high_bytes) : s;
}

nvhcq_status nvhcq_qmd_set_dependent(nvhcq_qmd_version v, uint32_t *qmd, uint64_t next_qmd_addr) {
  NVHCQ_TRY(check_version(v, "dependent QMD"));
  if (next_qmd_addr & 0xff)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "dependent QMD address 0x%" PRIx64 " is not 256-byte aligned", next_qmd_addr);
  const qmd_write w[] = {
      {NVHCQ_QMD_DEPENDENT_QMD0_POINTER, next_qmd_addr >> 8},
      {NVHCQ_QMD_DEPENDENT_QMD0_ACTION, NVHCQ_QMD_DEPENDENT_ACTION_SCHEDULE},
      {NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH, 1},
      {NVHCQ_QMD_DEPENDENT_QMD0_ENABLE, 1},
  };
  nvhcq_status s = apply(v, qmd, w, QMD_COUNT(w));
  return s ? nvhcq_fail_context(s, "dependent QMD at 0x%" PRIx64, next_qmd_addr) : s;
}

void nvhcq_qmd_set_fence(nvhcq_qmd_version v, uint32_t *qmd, nvhcq_qmd_fence fence) {
  static const uint8_t membar[] = {
      [NVHCQ_FENCE_SYSTEM] = NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_SYSMEMBAR,
      [NVHCQ_FENCE_DEVICE] = NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_MEMBAR,
      [NVHCQ_FENCE_NONE] = NVHCQ_QMD_CWD_MEMBAR_TYPE_L1_NONE,
  };
  const nvhcq_qmd_bits *b = bits_of(v, NVHCQ_QMD_CWD_MEMBAR_TYPE);
  if (b) nvhcq_qmd_write_bits(qmd, b->hi, b->lo, membar[fence]);
  b = bits_of(v, NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE);
  if (b) nvhcq_qmd_write_bits(qmd, b->hi, b->lo, fence == NVHCQ_FENCE_DEVICE);
}

/* Copies field `f` of `from` into field `to` of `qmd` (both present in the version). */
static void copy_field(nvhcq_qmd_version v, uint32_t *qmd, nvhcq_qmd_field to,
                       const uint32_t *from_qmd, nvhcq_qmd_field from) {
  const nvhcq_qmd_bits *d = bits_of(v, to), *s = bits_of(v, from);
  nvhcq_qmd_write_bits(qmd, d->hi, d->lo, nvhcq_qmd_read_bits(from_qmd, s->hi, s->lo));
}

int nvhcq_qmd_prefetch_successor(nvhcq_qmd_version v, uint32_t *qmd, const uint32_t *next,
                                 unsigned spare_bank) {
  if (spare_bank >= NVHCQ_QMD_CONSTANT_BUFFERS ||
      !bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_0) ||
      !bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0) ||
      nvhcq_qmd_get(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + spare_bank))
    return 0;
  copy_field(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0 + spare_bank, next,
             NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0);
  copy_field(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0 + spare_bank, next,
             NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0);
  copy_field(v, qmd, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0 + spare_bank, next,
             NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0);
  const nvhcq_qmd_bits *b = bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + spare_bank);
  nvhcq_qmd_write_bits(qmd, b->hi, b->lo, 1);
  b = bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_0 + spare_bank);
  nvhcq_qmd_write_bits(qmd, b->hi, b->lo, NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_POST);
  static const nvhcq_qmd_field program[] = {NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED,
                                            NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED,
                                            NVHCQ_QMD_PROGRAM_PREFETCH_SIZE};
  for (size_t i = 0; i < QMD_COUNT(program); i++) copy_field(v, qmd, program[i], next, program[i]);
  b = bits_of(v, NVHCQ_QMD_PROGRAM_PREFETCH_TYPE);
  nvhcq_qmd_write_bits(qmd, b->hi, b->lo, NVHCQ_QMD_PROGRAM_PREFETCH_TYPE_POST);
  return 1;
}

void nvhcq_qmd_copy_field(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src,
                          nvhcq_qmd_field f) {
  const nvhcq_qmd_bits *b = bits_of(v, f);
  if (b) nvhcq_qmd_write_bits(dst, b->hi, b->lo, nvhcq_qmd_read_bits(src, b->hi, b->lo));
}

void nvhcq_qmd_copy_chain_words(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src) {
  static const nvhcq_qmd_field chain[] = {
      NVHCQ_QMD_DEPENDENT_QMD0_POINTER,
      NVHCQ_QMD_DEPENDENT_QMD0_ENABLE,
      NVHCQ_QMD_DEPENDENT_QMD0_ACTION,
      NVHCQ_QMD_DEPENDENT_QMD0_PREFETCH,
      NVHCQ_QMD_CWD_MEMBAR_TYPE,
      NVHCQ_QMD_CWD_MEMBAR_TASK_CHASING_ENABLE,
      NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED,
      NVHCQ_QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED,
      NVHCQ_QMD_PROGRAM_PREFETCH_SIZE,
      NVHCQ_QMD_PROGRAM_PREFETCH_TYPE,
      NVHCQ_QMD_CONSTANT_BUFFER_VALID_0 + NVHCQ_QMD_SUCCESSOR_BANK,
      NVHCQ_QMD_CONSTANT_BUFFER_PREFETCH_0 + NVHCQ_QMD_SUCCESSOR_BANK,
      NVHCQ_QMD_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6_0 + NVHCQ_QMD_SUCCESSOR_BANK,
      NVHCQ_QMD_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6_0 + NVHCQ_QMD_SUCCESSOR_BANK,
      NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0 + NVHCQ_QMD_SUCCESSOR_BANK,
  };
  for (size_t i = 0; i < QMD_COUNT(chain); i++) {
    const nvhcq_qmd_bits *b = bits_of(v, chain[i]);
    if (!b) continue;
    for (unsigned w = b->lo / 32; w <= b->hi / 32u; w++) dst[w] = src[w];
  }
}

void nvhcq_qmd_copy_release_words(nvhcq_qmd_version v, uint32_t *dst, const uint32_t *src,
                                  unsigned slot) {
  static const nvhcq_qmd_field release[] = {
      NVHCQ_QMD_RELEASE0_ENABLE,        NVHCQ_QMD_RELEASE0_STRUCTURE_SIZE,
      NVHCQ_QMD_RELEASE0_MEMBAR_TYPE,   NVHCQ_QMD_RELEASE0_REDUCTION_ENABLE,
      NVHCQ_QMD_RELEASE0_REDUCTION_OP,  NVHCQ_QMD_RELEASE0_REDUCTION_FORMAT,
      NVHCQ_QMD_RELEASE0_PAYLOAD64B,    NVHCQ_QMD_RELEASE0_ADDRESS_LOWER,
      NVHCQ_QMD_RELEASE0_ADDRESS_UPPER, NVHCQ_QMD_RELEASE0_PAYLOAD_LOWER,
      NVHCQ_QMD_RELEASE0_PAYLOAD_UPPER,
  };
  const nvhcq_qmd_layout *l = layout_of(v);
  if (!l || slot >= NVHCQ_QMD_RELEASES) return;
  /* One run of dwords from the first to the last the slot's fields touch (4 on V03, 10 to 22 on
   * V04 and V05, a tenth to a quarter of the QMD): the dwords between are equal in both, as dst
   * is src's copy. */
  unsigned first = ~0u, last = 0;
  for (size_t i = 0; i < QMD_COUNT(release); i++) {
    const nvhcq_qmd_bits *b = &l->bits[release[i] + slot];
    if (!b->present) continue;
    first = b->lo / 32u < first ? b->lo / 32u : first;
    last = b->hi / 32u > last ? b->hi / 32u : last;
  }
  for (unsigned w = first; w <= last; w++) dst[w] = src[w];
}

int nvhcq_qmd_launch_layout_for(nvhcq_qmd_version v, nvhcq_qmd_launch_layout *out) {
  const nvhcq_qmd_layout *l = layout_of(v);
  if (!l) return 0;
  static const nvhcq_qmd_field grid[3] = {NVHCQ_QMD_GRID_WIDTH, NVHCQ_QMD_GRID_HEIGHT,
                                          NVHCQ_QMD_GRID_DEPTH};
  static const nvhcq_qmd_field config[3] = {NVHCQ_QMD_MIN_SM_CONFIG_SHARED_MEM_SIZE,
                                            NVHCQ_QMD_TARGET_SM_CONFIG_SHARED_MEM_SIZE,
                                            NVHCQ_QMD_MAX_SM_CONFIG_SHARED_MEM_SIZE};
  for (int d = 0; d < 3; d++) {
    out->grid[d] = *bits_of(v, grid[d]);
    out->block[d] = *bits_of(v, NVHCQ_QMD_CTA_THREAD_DIMENSION0 + d);
    out->config[d] = *bits_of(v, config[d]);
  }
  out->shared = *bits_of(v, l->shared_memory_size);
  out->local_high = *bits_of(v, l->local_memory_high);
  out->cbank_lower = *bits_of(v, l->cbuf_address_lower0);
  out->cbank_upper = *bits_of(v, l->cbuf_address_upper0);
  out->cbank_size = *bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_SIZE_SHIFTED4_0);
  out->cbank_valid = *bits_of(v, NVHCQ_QMD_CONSTANT_BUFFER_VALID_0);
  out->shared_shift = (uint8_t)l->shared_memory_shift;
  out->local_shift = (uint8_t)l->local_memory_shift;
  out->cbank_shift = (uint8_t)l->cbuf_address_shift;
  return 1;
}

static void put(uint32_t *qmd, nvhcq_qmd_bits b, uint64_t value) {
  nvhcq_qmd_write_bits(qmd, b.hi, b.lo, value);
}

void nvhcq_qmd_write_cbank0_address(const nvhcq_qmd_launch_layout *l, uint32_t *qmd,
                                    uint64_t address) {
  uint64_t stored = address >> l->cbank_shift;
  put(qmd, l->cbank_lower, stored & 0xffffffffu);
  put(qmd, l->cbank_upper, stored >> 32);
}

void nvhcq_qmd_write_launch(const nvhcq_qmd_launch_layout *l, uint32_t *qmd,
                            const nvhcq_qmd_launch *launch) {
  for (int d = 0; d < 3; d++) {
    put(qmd, l->grid[d], launch->grid[d]);
    put(qmd, l->block[d], launch->block[d]);
    put(qmd, l->config[d], launch->config_bytes[d] / 4096 + 1);
  }
  put(qmd, l->shared, round_up_pow2(launch->shared_bytes, l->shared_shift) >> l->shared_shift);
  put(qmd, l->local_high,
      round_up_pow2(launch->local_high_bytes, l->local_shift) >> l->local_shift);
  nvhcq_qmd_write_cbank0_address(l, qmd, launch->cbank0_address);
  put(qmd, l->cbank_size, round_up_pow2(launch->cbank0_bytes, 4) >> 4);
  put(qmd, l->cbank_valid, 1);
}

/* A grid of clusters (V04, V05), as libcuda writes it on the H200 (bench/qmd_probe.c --cluster,
 * driver 580.159.04): QMD_TYPE GRID_GPC_CGA, the cluster's shape in GPC_CGA_*, CTA distribution
 * MULTI_CAST unless the load-balancing policy is asked for, and for clusters of more than two
 * blocks (more than one TPC holds) TPC_DISABLE_MASK_VALID with the TPC numbers from `tpc_slots`
 * up disabled (libcuda: bits 72..127 on an H200, 8 GPCs x 9 TPC slots). The grid fields then
 * count clusters: the caller writes grid / cluster. */
nvhcq_status nvhcq_qmd_set_cluster(nvhcq_qmd_version v, uint32_t *qmd, const uint32_t cluster[3],
                                   int load_balancing, uint32_t tpc_slots) {
  if (v != NVHCQ_QMD_V04 && v != NVHCQ_QMD_V05)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "thread-block clusters need a Hopper or later GPU (QMD version 4 or 5)");
  uint32_t mask[4] = {0};
  int masked = cluster[0] * cluster[1] * cluster[2] > 2;
  for (uint32_t t = tpc_slots; masked && t < 128; t++) mask[t / 32] |= 1u << (t % 32);
  qmd_write w[] = {
      {NVHCQ_QMD_QMD_TYPE, NVHCQ_QMD_TYPE_GRID_GPC_CGA},
      {NVHCQ_QMD_GPC_CGA_WIDTH, cluster[0]},
      {NVHCQ_QMD_GPC_CGA_HEIGHT, cluster[1]},
      {NVHCQ_QMD_GPC_CGA_DEPTH, cluster[2]},
      {NVHCQ_QMD_CGA_CTA_DISTRIBUTION_MODE, load_balancing
                                                ? NVHCQ_QMD_CGA_CTA_DISTRIBUTION_LOAD_BALANCING
                                                : NVHCQ_QMD_CGA_CTA_DISTRIBUTION_MULTI_CAST},
      {NVHCQ_QMD_TPC_DISABLE_MASK_VALID, (uint64_t)masked},
      {NVHCQ_QMD_TPC_DISABLE_MASK_0, mask[0]},
      {NVHCQ_QMD_TPC_DISABLE_MASK_1, mask[1]},
      {NVHCQ_QMD_TPC_DISABLE_MASK_2, mask[2]},
      {NVHCQ_QMD_TPC_DISABLE_MASK_3, mask[3]},
  };
  return apply(v, qmd, w, sizeof w / sizeof w[0]);
}

nvhcq_status nvhcq_qmd_set_tpc_mask(nvhcq_qmd_version v, uint32_t *qmd, const uint32_t enabled[4]) {
  if (v != NVHCQ_QMD_V04 && v != NVHCQ_QMD_V05)
    return nvhcq_fail(NVHCQ_ERROR_UNSUPPORTED,
                      "TPC masks need a Hopper or later GPU (QMD version 4 or 5)");
  qmd_write w[] = {
      {NVHCQ_QMD_TPC_DISABLE_MASK_VALID, 1},       {NVHCQ_QMD_TPC_DISABLE_MASK_0, ~enabled[0]},
      {NVHCQ_QMD_TPC_DISABLE_MASK_1, ~enabled[1]}, {NVHCQ_QMD_TPC_DISABLE_MASK_2, ~enabled[2]},
      {NVHCQ_QMD_TPC_DISABLE_MASK_3, ~enabled[3]},
  };
  return apply(v, qmd, w, sizeof w / sizeof w[0]);
}

void nvhcq_qmd_print(FILE *out, nvhcq_qmd_version v, const uint32_t *qmd, const char *indent) {
  int on_line = 0;
  for (int f = 0; f < NVHCQ_QMD_FIELD_COUNT; f++) {
    unsigned hi, lo;
    if (!nvhcq_qmd_field_range(v, (nvhcq_qmd_field)f, &hi, &lo)) continue;
    uint64_t value = nvhcq_qmd_read_bits(qmd, hi, lo);
    if (!value) continue;
    fprintf(out, "%s%s=0x%llx", on_line ? " " : indent, nvhcq_qmd_field_name((nvhcq_qmd_field)f),
            (unsigned long long)value);
    if (++on_line == 4) fputc('\n', out), on_line = 0;
  }
  if (on_line) fputc('\n', out);
}
