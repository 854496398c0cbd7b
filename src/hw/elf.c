/* Cubin parsing on top of the ELF container (elf_read.c): architecture, image layout,
 * relocations, constant banks, kernels and module-scope variables. The file is untrusted: every
 * read goes through a range check made once per section or per record (relocations, symbols),
 * so a corrupt file ends in NVHCQ_ERROR_INVALID_IMAGE, never an out-of-bounds read. */
#include "hw/elf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/elf_read.h"
#include "hw/occupancy.h"
#include "util/align.h"

/* ---- architecture ------------------------------------------------------------------------ */

static nvhcq_status nvhcq_cubin_read_compat(const nvhcq_elf *e, nvhcq_cubin *c) {
  const nvhcq_elf_section *s = nvhcq_elf_find(e, ".nv.compat", "");
  if (!s) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_need_data(s));
  for (uint64_t pos = 0; pos < s->size;) {
    nvhcq_eiattr a = {0};
    NVHCQ_TRY(nvhcq_eiattr_next(e, s, &pos, &a));
    if (a.attr == NVHCQ_EICOMPAT_ACCELERATOR_TARGET && a.format != NVHCQ_EIFMT_SVAL &&
        nvhcq_eiattr_scalar(&a))
      c->arch_specific = true;
  }
  return NVHCQ_SUCCESS;
}

/* ELF ABI version 8 (CUDA 13) keeps the SM in e_flags bits 8..15 and "a" in bit 3; version 7 and
 * older keep the SM in bits 0..7, "a" in bit 11 and the PTX target in bits 16..23 (ptxas 12.8:
 * 0x50055a for sm_90 code from PTX for sm_80; version 8 puts that in .note.nv.cuinfo). ptxas 13.0
 * leaves bit 3 clear for sm_90a and sm_100a and marks them in .nv.compat instead, so both places
 * are read. */
static nvhcq_status nvhcq_cubin_read_arch(const nvhcq_elf *e, nvhcq_cubin *c) {
  if (e->abi_version >= 8) {
    c->sm = (e->flags >> 8) & 0xff;
    c->arch_specific = (e->flags & 0x8) != 0;
  } else {
    c->sm = e->flags & 0xff;
    c->arch_specific = (e->flags & 0x800) != 0;
    c->ptx_sm = (e->flags >> 16) & 0xff;
  }
  if (c->sm < 20)
    return NVHCQ_BAD("e_flags 0x%x (ELF ABI version %u) name no SM version", e->flags,
                     e->abi_version);
  return nvhcq_cubin_read_compat(e, c);
}

/* ---- image layout ------------------------------------------------------------------------ */

static bool nvhcq_gets_memory(const nvhcq_elf_section *s) {
  if (!(s->flags & NVHCQ_SHF_ALLOC) || s->type == NVHCQ_SHT_NULL) return false;
  if (s->type != NVHCQ_SHT_NOBITS) return true;
  /* shared and local memory are per-block and per-thread windows that the launch sizes */
  return strncmp(s->name, ".nv.shared.", 11) != 0 && strncmp(s->name, ".nv.local.", 10) != 0;
}

static nvhcq_status nvhcq_place(nvhcq_elf_section *s, uint64_t *end) {
  uint64_t align = s->addralign > NVHCQ_MIN_ALIGN ? s->addralign : NVHCQ_MIN_ALIGN;
  if ((align & (align - 1)) || align > NVHCQ_MAX_ALIGN)
    return NVHCQ_BAD("%s asks for alignment %llu (a power of two up to 4096 expected)", s->name,
                     (nvhcq_ull)s->addralign);
  uint64_t start = NVHCQ_ALIGN_UP(*end, align);
  if (!nvhcq_in_range(start, s->size, NVHCQ_MAX_MEMORY))
    return NVHCQ_BAD("%s (0x%llx bytes) takes the image past 1 TiB", s->name, (nvhcq_ull)s->size);
  s->place = start;
  *end = start + s->size;
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_cubin_list_sections(const nvhcq_elf *e, nvhcq_cubin *c) {
  c->sections = calloc(e->section_count, sizeof *c->sections);
  if (!c->sections) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->section_count; i++) {
    const nvhcq_elf_section *s = &e->sections[i];
    if (s->place == NVHCQ_NOT_PLACED) continue;
    c->sections[c->section_count++] =
        (nvhcq_cubin_section){s->name, s->place, s->size, s->offset, !s->has_data};
  }
  return NVHCQ_SUCCESS;
}

/* Sections with bytes first (the uploaded image), then the zero-filled ones past image_size. The
 * bytes stay in the file until nvhcq_cubin_write_image puts them in device memory. */
static nvhcq_status nvhcq_cubin_layout(nvhcq_elf *e, nvhcq_cubin *c) {
  uint64_t end = 0;
  for (uint32_t i = 0; i < e->section_count; i++)
    if (nvhcq_gets_memory(&e->sections[i]) && e->sections[i].has_data)
      NVHCQ_TRY(nvhcq_place(&e->sections[i], &end));
  c->image_size = end;
  for (uint32_t i = 0; i < e->section_count; i++)
    if (nvhcq_gets_memory(&e->sections[i]) && !e->sections[i].has_data)
      NVHCQ_TRY(nvhcq_place(&e->sections[i], &end));
  c->memory_size = end;
  return nvhcq_cubin_list_sections(e, c);
}

/* ---- relocations ------------------------------------------------------------------------- */

/* Up to two bit fields a relocation type writes, from r_offset: `width` bits at bit `lo` take the
 * address shifted right by `shift`. The layouts are ptxas's own relocation table (CUDA 13's
 * R_CUDA_* list with each type's bit actions); ABS55_16_34 is how code in one .text section calls
 * a function in another (cooperative groups' grid sync in libcudadevrt, -rdc code), ABS47_34 the
 * same on sm_7x/8x (the device syscalls' keep kernel there; not yet run on an Ampere GPU). */
typedef struct reloc_part {
  uint8_t lo, width, shift;
} reloc_part;

typedef struct reloc_layout {
  uint32_t type;
  reloc_part part[2]; /* part[1].width 0: one field */
} reloc_layout;

#define ONE(t, lo, w, sh)                                                                          \
  {                                                                                                \
    t, {                                                                                           \
      {lo, w, sh}, {                                                                               \
        0, 0, 0                                                                                    \
      }                                                                                            \
    }                                                                                              \
  }
static const reloc_layout reloc_layouts[] = {
    ONE(NVHCQ_R_CUDA_32, 0, 32, 0),
    ONE(NVHCQ_R_CUDA_64, 0, 64, 0),
    ONE(NVHCQ_R_CUDA_G32, 0, 32, 0),
    ONE(NVHCQ_R_CUDA_G64, 0, 64, 0),
    /* Function pointers in initialised data (libcudadevrt's tables): Volta and later call a
     * function by its code address, so its descriptor is that address. */
    ONE(NVHCQ_R_CUDA_FUNC_DESC_32, 0, 32, 0),
    ONE(NVHCQ_R_CUDA_FUNC_DESC_64, 0, 64, 0),
    ONE(NVHCQ_R_CUDA_ABS32_32, 32, 32, 0),
    ONE(NVHCQ_R_CUDA_ABS32_LO_32, 32, 32, 0),
    ONE(NVHCQ_R_CUDA_ABS32_HI_32, 32, 32, 32),
    ONE(NVHCQ_R_CUDA_32_LO, 0, 32, 0),
    ONE(NVHCQ_R_CUDA_32_HI, 0, 32, 32),
    ONE(NVHCQ_R_CUDA_ABS47_34, 34, 47, 0),
    {NVHCQ_R_CUDA_ABS55_16_34, {{16, 8, 2}, {34, 47, 10}}},
    {NVHCQ_R_CUDA_ABS56_16_34, {{16, 8, 2}, {34, 48, 10}}},
};
#undef ONE

/* The layout of `type`, or false for types nvhcq does not apply. The byte lanes R_CUDA_8_N and
 * R_CUDA_G8_N write byte N/8 of the address into the byte at r_offset. */
static bool nvhcq_reloc_layout(uint32_t type, reloc_layout *out) {
  if (type >= NVHCQ_R_CUDA_8_0 && type < NVHCQ_R_CUDA_8_0 + 16) {
    *out = (reloc_layout){type, {{0, 8, (uint8_t)((type - NVHCQ_R_CUDA_8_0) % 8 * 8)}, {0, 0, 0}}};
    return true;
  }
  for (size_t i = 0; i < sizeof reloc_layouts / sizeof reloc_layouts[0]; i++)
    if (reloc_layouts[i].type == type) return *out = reloc_layouts[i], true;
  return false;
}

/* Bytes from r_offset the fields of `l` reach into. */
static uint64_t reloc_span(const reloc_layout *l) {
  unsigned end = l->part[0].lo + l->part[0].width;
  if (l->part[1].width && l->part[1].lo + l->part[1].width > end)
    end = l->part[1].lo + l->part[1].width;
  return (end + 7) / 8;
}

static uint64_t part_mask(const reloc_part *p) {
  return p->width == 64 ? ~0ull : (1ull << p->width) - 1;
}

/* Bits [lo, lo+width) of the little-endian bytes at p (width <= 64). */
static uint64_t get_bits(const uint8_t *p, unsigned lo, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)(p[(lo + i) / 8] >> ((lo + i) % 8) & 1) << i;
  return v;
}

static void put_bits(uint8_t *p, unsigned lo, unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; i++) {
    uint8_t bit = (uint8_t)(1u << ((lo + i) % 8));
    p[(lo + i) / 8] = (uint8_t)(v >> i & 1 ? p[(lo + i) / 8] | bit : p[(lo + i) / 8] & ~bit);
  }
}

/* A REL entry's implicit addend: what its fields hold now, put back together. */
static uint64_t reloc_implicit_addend(const reloc_layout *l, const uint8_t *at) {
  uint64_t v = 0;
  for (int i = 0; i < 2 && l->part[i].width; i++)
    v |= get_bits(at, l->part[i].lo, l->part[i].width) << l->part[i].shift;
  return v;
}

/* The section a REL/RELA section patches, or NULL when it patches nothing loaded (.debug_frame). */
static nvhcq_status nvhcq_rel_target(const nvhcq_elf *e, const nvhcq_elf_section *s,
                                     const nvhcq_elf_section **out) {
  uint64_t entsize = s->type == NVHCQ_SHT_RELA ? NVHCQ_RELA_SIZE : NVHCQ_REL_SIZE;
  *out = NULL;
  if (s->entsize != entsize || s->size % entsize)
    return NVHCQ_BAD("%s: entry size %llu and size 0x%llx, expected %llu-byte entries", s->name,
                     (nvhcq_ull)s->entsize, (nvhcq_ull)s->size, (nvhcq_ull)entsize);
  if (s->info >= e->section_count)
    return NVHCQ_BAD("%s patches section %u, but only %u sections", s->name, s->info,
                     e->section_count);
  const nvhcq_elf_section *t = &e->sections[s->info];
  if (t->place == NVHCQ_NOT_PLACED) return NVHCQ_SUCCESS;
  if (!t->has_data) return NVHCQ_BAD("%s patches %s, which has no bytes", s->name, t->name);
  if (s->size && s->link != e->symtab_index)
    return NVHCQ_BAD("%s: section %u is not the symbol table", s->name, s->link);
  *out = t;
  return NVHCQ_SUCCESS;
}

const char *const nvhcq_cubin_syscall_names[NVHCQ_CUBIN_MAX_IMPORTS] = {
    "vprintf",
    "__assertfail",
    "malloc",
    "free",
    "__cuda_syscall_CGS_get_intrinsic_handle",
    "__cuda_syscall_CGS_sync",
    "cudaGraphSetConditional"};

bool nvhcq_cubin_is_syscall(const char *name) {
  for (int i = 0; i < NVHCQ_CUBIN_MAX_IMPORTS; i++)
    if (name && !strcmp(name, nvhcq_cubin_syscall_names[i])) return true;
  return false;
}

/* The import index of an undefined function the driver would provide, added on first sight. */
static nvhcq_status nvhcq_reloc_import(nvhcq_cubin *c, const nvhcq_elf_symbol *sym,
                                       int32_t *import) {
  for (uint32_t i = 0; i < c->import_count; i++)
    if (!strcmp(c->imports[i], sym->name)) return *import = (int32_t)i, NVHCQ_SUCCESS;
  if (c->import_count == NVHCQ_CUBIN_MAX_IMPORTS)
    return NVHCQ_BAD("undefined function %s is named by two symbols", sym->name);
  c->imports[c->import_count] = sym->name;
  *import = (int32_t)c->import_count++;
  return NVHCQ_SUCCESS;
}

static bool nvhcq_is_import(const nvhcq_elf_symbol *sym) {
  return sym->shndx == 0 && (sym->info & 0xf) == NVHCQ_STT_FUNC &&
         nvhcq_cubin_is_syscall(sym->name);
}

static nvhcq_status nvhcq_reloc_symbol(const nvhcq_elf *e, nvhcq_cubin *c,
                                       const nvhcq_elf_section *s, uint64_t j, uint32_t index,
                                       nvhcq_cubin_reloc *r) {
  if (index == 0 || index >= e->symbol_count)
    return NVHCQ_BAD("%s: relocation %llu names symbol %u of %u", s->name, (nvhcq_ull)j, index,
                     e->symbol_count);
  const nvhcq_elf_symbol *sym = &e->symbols[index];
  const nvhcq_elf_section *home = nvhcq_symbol_section(e, sym);
  r->import = -1;
  if (nvhcq_is_import(sym)) return nvhcq_reloc_import(c, sym, &r->import);
  if (sym->shndx == 0)
    return NVHCQ_BAD("%s: relocation %llu needs undefined symbol %s; link the cubin (nvlink) "
                     "first",
                     s->name, (nvhcq_ull)j, sym->name);
  if (!home || home->place == NVHCQ_NOT_PLACED)
    return NVHCQ_BAD("%s: relocation %llu refers to %s, which has no device memory", s->name,
                     (nvhcq_ull)j, sym->name);
  if (sym->value > home->size)
    return NVHCQ_BAD("%s: symbol %s lies at 0x%llx, past the end of %s", s->name, sym->name,
                     (nvhcq_ull)sym->value, home->name);
  r->symbol_offset = home->place + sym->value;
  return NVHCQ_SUCCESS;
}

/* Reads entry j of s into *r; r->type stays 0 for R_CUDA_NONE, which is skipped. */
static nvhcq_status nvhcq_reloc_read(const nvhcq_elf *e, nvhcq_cubin *c, const nvhcq_elf_section *s,
                                     const nvhcq_elf_section *t, uint64_t j, nvhcq_cubin_reloc *r) {
  bool rela = s->type == NVHCQ_SHT_RELA;
  const uint8_t *p = e->data + s->offset + j * (rela ? NVHCQ_RELA_SIZE : NVHCQ_REL_SIZE);
  uint64_t off = nvhcq_rd64(p), info = nvhcq_rd64(p + 8);
  uint32_t type = (uint32_t)info;
  reloc_layout l;
  *r = (nvhcq_cubin_reloc){0};
  if (type == 0) return NVHCQ_SUCCESS;
  if (!nvhcq_reloc_layout(type, &l))
    return NVHCQ_BAD(
        "relocation type 0x%x in %s is not supported (nvhcq applies R_CUDA_32, 64, "
        "G32, G64, FUNC_DESC_32/64, 32_LO/HI, ABS32_32, ABS32_LO/HI_32, ABS47_34, ABS55_16_34, "
        "ABS56_16_34 and the byte lanes 8_N and G8_N)",
        type, s->name);
  if (!nvhcq_in_range(off, reloc_span(&l), t->size))
    return NVHCQ_BAD("%s: relocation %llu writes at 0x%llx, past the end of %s (0x%llx bytes)",
                     s->name, (nvhcq_ull)j, (nvhcq_ull)off, t->name, (nvhcq_ull)t->size);
  NVHCQ_TRY(nvhcq_reloc_symbol(e, c, s, j, (uint32_t)(info >> 32), r));
  /* REL keeps its addend in the patched fields themselves */
  uint64_t addend =
      rela ? nvhcq_rd64(p + 16) : reloc_implicit_addend(&l, e->data + t->offset + off);
  r->offset = t->place + off;
  r->addend = nvhcq_to_i64(addend);
  r->type = type;
  return NVHCQ_SUCCESS;
}

static bool nvhcq_is_rel(const nvhcq_elf_section *s) {
  return s->type == NVHCQ_SHT_REL || s->type == NVHCQ_SHT_RELA;
}

static nvhcq_status nvhcq_cubin_read_relocs(const nvhcq_elf *e, nvhcq_cubin *c) {
  uint64_t total = 0;
  const nvhcq_elf_section *t;
  for (uint32_t i = 0; i < e->section_count; i++) {
    if (!nvhcq_is_rel(&e->sections[i])) continue;
    NVHCQ_TRY(nvhcq_rel_target(e, &e->sections[i], &t));
    if (t) total += e->sections[i].size / e->sections[i].entsize;
  }
  c->relocs = calloc(total + 1, sizeof *c->relocs);
  if (!c->relocs) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->section_count; i++) {
    const nvhcq_elf_section *s = &e->sections[i];
    if (!nvhcq_is_rel(s)) continue;
    NVHCQ_TRY(nvhcq_rel_target(e, s, &t));
    for (uint64_t j = 0; t && j < s->size / s->entsize; j++) {
      NVHCQ_TRY(nvhcq_reloc_read(e, c, s, t, j, &c->relocs[c->reloc_count]));
      if (c->relocs[c->reloc_count].type) c->reloc_count++;
    }
  }
  return NVHCQ_SUCCESS;
}

/* ---- constant banks ---------------------------------------------------------------------- */

/* ".nv.constant<N>" (module bank, *owner NULL) or ".nv.constant<N>.<kernel>". */
static bool nvhcq_cbank_name(const char *name, uint32_t *bank, const char **owner) {
  static const char prefix[] = ".nv.constant";
  if (strncmp(name, prefix, sizeof prefix - 1) != 0) return false;
  const char *p = name + sizeof prefix - 1;
  if (*p < '0' || *p > '9') return false;
  uint32_t n = 0;
  while (*p >= '0' && *p <= '9' && n < 1000) n = n * 10 + (uint32_t)(*p++ - '0');
  if (*p != '\0' && *p != '.') return false;
  *bank = n;
  *owner = *p == '.' ? p + 1 : NULL;
  return true;
}

static nvhcq_status nvhcq_cbank_make(const nvhcq_elf_section *s, uint32_t bank,
                                     nvhcq_cubin_cbank *out) {
  if (bank >= NVHCQ_CUBIN_MAX_BANKS)
    return NVHCQ_BAD("%s: constant bank %u does not exist (0..17)", s->name, bank);
  if (s->place == NVHCQ_NOT_PLACED)
    return NVHCQ_BAD("%s is a constant bank without device memory (not SHF_ALLOC)", s->name);
  if (s->size > NVHCQ_MAX_CBANK)
    return NVHCQ_BAD("%s is 0x%llx bytes; a constant bank holds at most 64 KiB", s->name,
                     (nvhcq_ull)s->size);
  *out = (nvhcq_cubin_cbank){bank, s->place, s->size};
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_cubin_read_cbanks(const nvhcq_elf *e, nvhcq_cubin *c) {
  c->cbanks = calloc(e->section_count, sizeof *c->cbanks);
  if (!c->cbanks) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->section_count; i++) {
    uint32_t bank;
    const char *owner;
    if (!nvhcq_cbank_name(e->sections[i].name, &bank, &owner) || owner) continue;
    for (uint32_t j = 0; j < c->cbank_count; j++)
      if (c->cbanks[j].bank == bank)
        return NVHCQ_BAD("constant bank %u appears twice (%s)", bank, e->sections[i].name);
    NVHCQ_TRY(nvhcq_cbank_make(&e->sections[i], bank, &c->cbanks[c->cbank_count++]));
  }
  return NVHCQ_SUCCESS;
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* A kernel is a FUNC symbol that owns .text.<name> and carries STO_CUDA_ENTRY; device functions
 * (noinline callees, named $kernel$callee) are LOCAL FUNCs inside their caller's section. */
static bool nvhcq_is_kernel(const nvhcq_elf *e, const nvhcq_elf_symbol *s, bool by_entry_flag) {
  const nvhcq_elf_section *text = nvhcq_symbol_section(e, s);
  if ((s->info & 0xf) != NVHCQ_STT_FUNC || !text) return false;
  if (by_entry_flag ? !(s->other & NVHCQ_STO_CUDA_ENTRY) : (s->info >> 4) != NVHCQ_STB_GLOBAL)
    return false;
  return nvhcq_name_is(text->name, ".text.", s->name);
}

static int nvhcq_elf_kernel_name_cmp(const void *a, const void *b) {
  return strcmp(((const nvhcq_elf_kernel_name *)a)->name, ((const nvhcq_elf_kernel_name *)b)->name);
}

static nvhcq_cubin_kernel *nvhcq_elf_kernel_named(const nvhcq_elf *e, nvhcq_cubin *c,
                                                  const char *name) {
  nvhcq_elf_kernel_name key = {name, 0};
  const nvhcq_elf_kernel_name *hit =
      bsearch(&key, e->kernel_names, c->kernel_count, sizeof key, nvhcq_elf_kernel_name_cmp);
  return hit ? &c->kernels[hit->index] : NULL;
}

/* {symbol, value} records of .nv.info; they may name device functions, which are not kept. */
static nvhcq_status nvhcq_function_attr(const nvhcq_elf *e, nvhcq_cubin *c,
                                        const nvhcq_elf_section *s, const nvhcq_eiattr *a) {
  uint32_t *field;
  NVHCQ_TRY(nvhcq_eiattr_need(s, a, 8));
  uint32_t sym = nvhcq_eiattr_u32(a, 0);
  if (sym < e->symbol_count && e->symbol_kernel[sym] < 0 && e->symbol_function[sym] >= 0) {
    nvhcq_cubin_function *f = &c->functions[e->symbol_function[sym]];
    if (a->attr == NVHCQ_EIATTR_REGCOUNT) f->registers = nvhcq_eiattr_u32(a, 1);
    if (a->attr == NVHCQ_EIATTR_FRAME_SIZE) f->frame_size = nvhcq_eiattr_u32(a, 1);
    return NVHCQ_SUCCESS;
  }
  if (sym >= e->symbol_count || e->symbol_kernel[sym] < 0) return NVHCQ_SUCCESS;
  nvhcq_cubin_kernel *k = &c->kernels[e->symbol_kernel[sym]];
  switch (a->attr) {
  case NVHCQ_EIATTR_REGCOUNT:
    field = &k->registers;
    break;
  case NVHCQ_EIATTR_FRAME_SIZE:
    field = &k->frame_size;
    break;
  case NVHCQ_EIATTR_MIN_STACK_SIZE:
    field = &k->min_stack_size;
    break;
  default:
    field = &k->max_stack_size;
    break;
  }
  *field = nvhcq_eiattr_u32(a, 1);
  return NVHCQ_SUCCESS;
}

static bool nvhcq_is_function_attr(uint8_t attr) {
  return attr == NVHCQ_EIATTR_REGCOUNT || attr == NVHCQ_EIATTR_FRAME_SIZE ||
         attr == NVHCQ_EIATTR_MIN_STACK_SIZE || attr == NVHCQ_EIATTR_MAX_STACK_SIZE;
}

static void nvhcq_read_dims(const nvhcq_eiattr *a, uint32_t dims[3]) {
  for (uint32_t i = 0; i < 3; i++) dims[i] = nvhcq_eiattr_u32(a, i);
}

/* KPARAM_INFO: u32 index, u32 ordinal | offset << 16, u32 flags: log_align bits 0..7, space
 * 8..11, cbank 12..16, size 18..31. */
static void nvhcq_read_param(const nvhcq_eiattr *a, nvhcq_cubin_kernel *k) {
  uint32_t where = nvhcq_eiattr_u32(a, 1), flags = nvhcq_eiattr_u32(a, 2);
  k->params[k->param_count++] =
      a->attr == NVHCQ_EIATTR_KPARAM_INFO_V2
          ? (nvhcq_cubin_param){where & 0xffff, where >> 16, flags & 0xffff, 0}
          : (nvhcq_cubin_param){where & 0xffff, where >> 16, flags >> 18, flags & 0xff};
}

static nvhcq_status nvhcq_elf_kernel_attr(const nvhcq_elf_section *s, const nvhcq_eiattr *a,
                                          nvhcq_cubin_kernel *k, bool *have_cbank) {
  bool dims = a->attr == NVHCQ_EIATTR_MAX_THREADS || a->attr == NVHCQ_EIATTR_REQNTID ||
              a->attr == NVHCQ_EIATTR_CTA_PER_CLUSTER;
  bool param = a->attr == NVHCQ_EIATTR_KPARAM_INFO || a->attr == NVHCQ_EIATTR_KPARAM_INFO_V2;
  if (a->attr == NVHCQ_EIATTR_PARAM_CBANK || param || dims)
    NVHCQ_TRY(nvhcq_eiattr_need(s, a, a->attr == NVHCQ_EIATTR_PARAM_CBANK ? 8 : 12));
  switch (a->attr) {
  case NVHCQ_EIATTR_PARAM_CBANK: /* u32 symbol of .nv.constant0.<k>, u16 offset, u16 size */
    k->param_offset = nvhcq_eiattr_u32(a, 1) & 0xffff;
    k->param_size = nvhcq_eiattr_u32(a, 1) >> 16;
    *have_cbank = true;
    break;
  case NVHCQ_EIATTR_KPARAM_INFO:
  case NVHCQ_EIATTR_KPARAM_INFO_V2:
    nvhcq_read_param(a, k);
    break;
  case NVHCQ_EIATTR_MAX_THREADS:
    nvhcq_read_dims(a, k->max_threads);
    break;
  case NVHCQ_EIATTR_REQNTID:
    nvhcq_read_dims(a, k->reqntid);
    break;
  case NVHCQ_EIATTR_CTA_PER_CLUSTER:
    nvhcq_read_dims(a, k->cluster_dims);
    break;
  case NVHCQ_EIATTR_EXPLICIT_CLUSTER:
    k->explicit_cluster = true;
    break;
  case NVHCQ_EIATTR_MAX_CLUSTER_RANK:
    k->max_cluster_rank = nvhcq_eiattr_scalar(a);
    break;
  case NVHCQ_EIATTR_CBANK_PARAM_SIZE:
    k->cbank_param_size = nvhcq_eiattr_scalar(a);
    break;
  case NVHCQ_EIATTR_MAXREG_COUNT:
    k->max_registers = nvhcq_eiattr_scalar(a);
    break;
  case NVHCQ_EIATTR_NUM_BARRIERS:
    k->barriers = nvhcq_eiattr_scalar(a);
    break;
  }
  return NVHCQ_SUCCESS;
}

static int nvhcq_param_cmp(const void *a, const void *b) {
  uint32_t x = ((const nvhcq_cubin_param *)a)->ordinal, y = ((const nvhcq_cubin_param *)b)->ordinal;
  return (x > y) - (x < y);
}

/* Launch-time argument checks rely on these, so a cubin that breaks them is refused here. */
static nvhcq_status nvhcq_elf_kernel_check_params(nvhcq_cubin_kernel *k) {
  if (k->param_count > 1) qsort(k->params, k->param_count, sizeof *k->params, nvhcq_param_cmp);
  for (uint32_t i = 0; i < k->param_count; i++) {
    const nvhcq_cubin_param *p = &k->params[i];
    if (i && p->ordinal == k->params[i - 1].ordinal)
      return NVHCQ_BAD("kernel %s: parameter %u is described twice", k->name, p->ordinal);
    if ((uint64_t)p->offset + p->size > k->param_size)
      return NVHCQ_BAD("kernel %s: parameter %u (%u bytes at 0x%x) lies outside its %u-byte "
                       "parameter block",
                       k->name, p->ordinal, p->size, p->offset, k->param_size);
  }
  if (k->param_size && (uint64_t)k->param_offset + k->param_size > k->cbank0_size)
    return NVHCQ_BAD("kernel %s: parameters at 0x%x..0x%x overflow constant bank 0 (0x%x bytes)",
                     k->name, k->param_offset, k->param_offset + k->param_size, k->cbank0_size);
  return NVHCQ_SUCCESS;
}

/* The attributes of .nv.info.<kernel>: parameters, launch bounds, barriers. The kernel's
 * parameters go to the pool from *pool_used on (room for one per 16-byte record was made). */
static nvhcq_status nvhcq_elf_kernel_info(const nvhcq_elf *e, nvhcq_cubin *c, uint32_t index,
                                          uint64_t *pool_used) {
  nvhcq_cubin_kernel *k = &c->kernels[index];
  const nvhcq_elf_section *s = e->kernel_info[index];
  bool have_cbank = false;
  if (s) {
    k->params = c->param_pool + *pool_used;
    *pool_used += s->size / 16; /* a KPARAM record is 16 bytes */
    for (uint64_t pos = 0; pos < s->size;) {
      nvhcq_eiattr a = {0};
      NVHCQ_TRY(nvhcq_eiattr_next(e, s, &pos, &a));
      if (nvhcq_is_function_attr(a.attr))
        NVHCQ_TRY(nvhcq_function_attr(e, c, s, &a));
      else
        NVHCQ_TRY(nvhcq_elf_kernel_attr(s, &a, k, &have_cbank));
    }
  }
  if (!have_cbank) k->param_offset = k->cbank0_size; /* no parameters: they would start there */
  return nvhcq_elf_kernel_check_params(k);
}

/* Code placement, plus what older cubins kept in the .text header. */
static nvhcq_status nvhcq_elf_kernel_code(const nvhcq_elf *e, nvhcq_cubin *c, uint32_t index) {
  const nvhcq_elf_symbol *sym = &e->symbols[e->kernel_symbols[index]];
  const nvhcq_elf_section *text = &e->sections[sym->shndx];
  nvhcq_cubin_kernel *k = &c->kernels[index];
  if (text->place == NVHCQ_NOT_PLACED || !text->has_data)
    return NVHCQ_BAD("kernel %s: %s has no code to load", k->name, text->name);
  if (sym->value >= text->size)
    return NVHCQ_BAD("kernel %s starts at 0x%llx, past the end of %s (0x%llx bytes)", k->name,
                     (nvhcq_ull)sym->value, text->name, (nvhcq_ull)text->size);
  k->code_offset = text->place + sym->value;
  k->code_size = text->size - sym->value;
  k->registers = text->info >> 24;          /* before CUDA 13, and still for sm_8x */
  k->barriers = (text->flags >> 20) & 0x1f; /* before CUDA 13 */
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_elf_kernel_cbank(const nvhcq_elf_section *s, uint32_t bank,
                                           nvhcq_cubin_kernel *k) {
  for (uint32_t j = 0; j < k->cbank_count; j++)
    if (k->cbanks[j].bank == bank) return NVHCQ_BAD("%s appears twice", s->name);
  NVHCQ_TRY(nvhcq_cbank_make(s, bank, &k->cbanks[k->cbank_count++]));
  if (bank == 0) k->cbank0_size = (uint32_t)s->size;
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_elf_kernel_remember(const nvhcq_elf_section *s,
                                              const nvhcq_elf_section **slot) {
  if (*slot) return NVHCQ_BAD("%s appears twice", s->name);
  *slot = s;
  return NVHCQ_SUCCESS;
}

/* Files section s under the kernel its name ends with (.nv.info.<k>, .nv.shared.<k>,
 * .nv.constant<N>.<k>); other sections are left alone. */
static nvhcq_status nvhcq_elf_kernel_section(const nvhcq_elf *e, nvhcq_cubin *c,
                                             const nvhcq_elf_section *s) {
  nvhcq_cubin_kernel *k;
  uint32_t bank;
  const char *owner;
  if (!strncmp(s->name, ".nv.info.", 9) && (k = nvhcq_elf_kernel_named(e, c, s->name + 9))) {
    /* Its size sizes the parameter pool: only bytes the file holds may say how big. */
    NVHCQ_TRY(nvhcq_need_data(s));
    return nvhcq_elf_kernel_remember(s, &e->kernel_info[k - c->kernels]);
  }
  if (!strcmp(s->name, ".nv.shared.reserved.0")) c->shared_reserved = NVHCQ_RESERVED_SHARED;
  if (!strncmp(s->name, ".nv.shared.", 11) && (k = nvhcq_elf_kernel_named(e, c, s->name + 11))) {
    if (s->size > UINT32_MAX)
      return NVHCQ_BAD("%s: 0x%llx bytes of shared memory", s->name, (nvhcq_ull)s->size);
    k->shared_size = (uint32_t)s->size;
    return nvhcq_elf_kernel_remember(s, &e->kernel_shared[k - c->kernels]);
  }
  if (nvhcq_cbank_name(s->name, &bank, &owner) && owner &&
      (k = nvhcq_elf_kernel_named(e, c, owner)))
    return nvhcq_elf_kernel_cbank(s, bank, k);
  return NVHCQ_SUCCESS;
}

/* The note ptxas leaves in .note.nv.cuinfo: an ELF note (name "NVIDIA Corp", type 1000) whose
 * 8-byte description holds a u16 format (2), the u16 SM of the PTX's .target and the u32 toolkit
 * version (a cubin assembled for sm_90 from PTX for sm_80 says 80, and NVIDIA's library reports
 * that as CU_FUNC_ATTRIBUTE_PTX_VERSION). A missing or odd note leaves ptx_sm as e_flags gave it.
 */
static void nvhcq_cubin_read_cuinfo(const nvhcq_elf *e, nvhcq_cubin *c) {
  const nvhcq_elf_section *s = nvhcq_elf_find(e, ".note.nv.cuinfo", "");
  if (!s || !s->has_data || s->size < 12) return;
  const uint8_t *p = e->data + s->offset;
  uint64_t name = (nvhcq_rd32(p) + 3ull) & ~3ull, desc = nvhcq_rd32(p + 4);
  if (nvhcq_rd32(p + 8) != 1000 || desc < 4 || 12 + name + desc > s->size) return;
  if (nvhcq_rd16(p + 12 + name) == 2) c->ptx_sm = nvhcq_rd16(p + 12 + name + 2);
}

/* EIATTRs in .nv.info that name kernels by symbol (registers, frame and stack sizes). */
static nvhcq_status nvhcq_cubin_read_module_info(const nvhcq_elf *e, nvhcq_cubin *c) {
  const nvhcq_elf_section *s = nvhcq_elf_find(e, ".nv.info", "");
  if (!s) return NVHCQ_SUCCESS;
  NVHCQ_TRY(nvhcq_need_data(s));
  for (uint64_t pos = 0; pos < s->size;) {
    nvhcq_eiattr a = {0};
    NVHCQ_TRY(nvhcq_eiattr_next(e, s, &pos, &a));
    if (nvhcq_is_function_attr(a.attr)) NVHCQ_TRY(nvhcq_function_attr(e, c, s, &a));
  }
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_elf_alloc_kernel_maps(nvhcq_elf *e) {
  uint32_t n = e->symbol_count + 1;
  e->kernel_symbols = calloc(n, sizeof *e->kernel_symbols);
  e->symbol_kernel = malloc(n * sizeof *e->symbol_kernel);
  e->symbol_function = malloc(n * sizeof *e->symbol_function);
  e->kernel_names = calloc(n, sizeof *e->kernel_names);
  e->kernel_info = calloc(n, sizeof *e->kernel_info);
  e->kernel_shared = calloc(n, sizeof *e->kernel_shared);
  if (!e->kernel_symbols || !e->symbol_kernel || !e->symbol_function || !e->kernel_names ||
      !e->kernel_info || !e->kernel_shared)
    return NVHCQ_OOM();
  for (uint32_t i = 0; i < n; i++) e->symbol_kernel[i] = e->symbol_function[i] = -1;
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_cubin_find_kernels(nvhcq_elf *e, nvhcq_cubin *c) {
  bool by_entry_flag = false; /* cubins without STO_CUDA_ENTRY: every GLOBAL FUNC owning .text */
  for (uint32_t i = 0; i < e->symbol_count && !by_entry_flag; i++)
    by_entry_flag = nvhcq_is_kernel(e, &e->symbols[i], true);
  uint32_t n = 0;
  for (uint32_t i = 0; i < e->symbol_count; i++) {
    if (!nvhcq_is_kernel(e, &e->symbols[i], by_entry_flag)) continue;
    e->symbol_kernel[i] = (int32_t)n;
    e->kernel_symbols[n++] = i;
  }
  c->kernels = calloc(n + 1, sizeof *c->kernels); /* a kernel comes with several symbols */
  if (!c->kernels) return NVHCQ_OOM();
  for (c->kernel_count = 0; c->kernel_count < n; c->kernel_count++) {
    const char *name = e->symbols[e->kernel_symbols[c->kernel_count]].name;
    e->kernel_names[c->kernel_count] = (nvhcq_elf_kernel_name){name, c->kernel_count};
    c->kernels[c->kernel_count].name = name;
  }
  qsort(e->kernel_names, c->kernel_count, sizeof *e->kernel_names, nvhcq_elf_kernel_name_cmp);
  for (uint32_t i = 1; i < c->kernel_count; i++)
    if (!strcmp(e->kernel_names[i - 1].name, e->kernel_names[i].name))
      return NVHCQ_BAD("kernel %s is defined twice", e->kernel_names[i].name);
  return NVHCQ_SUCCESS;
}

/* One allocation for every kernel's parameters: room for one per record of its .nv.info.<k>. */
static nvhcq_status nvhcq_cubin_alloc_params(const nvhcq_elf *e, nvhcq_cubin *c) {
  uint64_t records = 1;
  for (uint32_t i = 0; i < c->kernel_count; i++)
    if (e->kernel_info[i]) records += e->kernel_info[i]->size / 16;
  c->param_pool = calloc(records, sizeof *c->param_pool);
  return c->param_pool ? NVHCQ_SUCCESS : NVHCQ_OOM();
}

/* The kernels by name, for lookups in O(log n): the parse's sorted list, kept. */
static nvhcq_status nvhcq_cubin_index_kernels(const nvhcq_elf *e, nvhcq_cubin *c) {
  c->kernels_by_name = calloc(c->kernel_count + 1, sizeof *c->kernels_by_name);
  if (!c->kernels_by_name) return NVHCQ_OOM();
  for (uint32_t i = 0; i < c->kernel_count; i++)
    c->kernels_by_name[i] = &c->kernels[e->kernel_names[i].index];
  return NVHCQ_SUCCESS;
}

/* The device functions: FUNC symbols with code in the image that are not kernels. */
static nvhcq_status nvhcq_cubin_find_functions(nvhcq_elf *e, nvhcq_cubin *c) {
  c->functions = calloc(e->symbol_count + 1, sizeof *c->functions);
  if (!c->functions) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->symbol_count; i++) {
    const nvhcq_elf_symbol *sym = &e->symbols[i];
    const nvhcq_elf_section *text = nvhcq_symbol_section(e, sym);
    if ((sym->info & 0xf) != NVHCQ_STT_FUNC || e->symbol_kernel[i] >= 0 || !text ||
        text->place == NVHCQ_NOT_PLACED || sym->value > text->size)
      continue;
    e->symbol_function[i] = (int32_t)c->function_count;
    c->functions[c->function_count++] =
        (nvhcq_cubin_function){sym->name, text->place + sym->value, 0, 0};
  }
  return NVHCQ_SUCCESS;
}

static int32_t nvhcq_import_of(const nvhcq_elf *e, const nvhcq_cubin *c, uint32_t sym) {
  if (sym >= e->symbol_count || !nvhcq_is_import(&e->symbols[sym])) return -1;
  for (uint32_t i = 0; i < c->import_count; i++)
    if (!strcmp(c->imports[i], e->symbols[sym].name)) return (int32_t)i;
  return -1;
}

/* Which kernels call which imports: .nv.callgraph's {caller, callee} symbol pairs. A call from a
 * device function, or no call graph, marks every kernel (the callers are not followed). */
static nvhcq_status nvhcq_cubin_read_callgraph(const nvhcq_elf *e, nvhcq_cubin *c) {
  if (!c->import_count) return NVHCQ_SUCCESS;
  const nvhcq_elf_section *s = nvhcq_elf_find(e, ".nv.callgraph", "");
  uint32_t all = (1u << c->import_count) - 1, everyone = s ? 0 : all;
  if (s) {
    NVHCQ_TRY(nvhcq_need_data(s));
    for (uint64_t pos = 0; pos + 8 <= s->size; pos += 8) {
      uint32_t caller = nvhcq_rd32(e->data + s->offset + pos);
      int32_t import = nvhcq_import_of(e, c, nvhcq_rd32(e->data + s->offset + pos + 4));
      if (import < 0) continue;
      if (caller < e->symbol_count && e->symbol_kernel[caller] >= 0)
        c->kernels[e->symbol_kernel[caller]].imports |= 1u << import;
      else
        everyone |= 1u << import;
    }
  }
  for (uint32_t i = 0; i < c->kernel_count; i++) c->kernels[i].imports |= everyone;
  return NVHCQ_SUCCESS;
}

/* Order matters: the .text fallbacks first, then .nv.info, then .nv.info.<kernel> (which needs
 * bank 0's size from the section pass). */
static nvhcq_status nvhcq_cubin_read_kernels(nvhcq_elf *e, nvhcq_cubin *c) {
  NVHCQ_TRY(nvhcq_elf_alloc_kernel_maps(e));
  NVHCQ_TRY(nvhcq_cubin_find_kernels(e, c));
  NVHCQ_TRY(nvhcq_cubin_index_kernels(e, c));
  NVHCQ_TRY(nvhcq_cubin_find_functions(e, c));
  for (uint32_t i = 0; i < c->kernel_count; i++) NVHCQ_TRY(nvhcq_elf_kernel_code(e, c, i));
  for (uint32_t i = 0; i < e->section_count; i++)
    NVHCQ_TRY(nvhcq_elf_kernel_section(e, c, &e->sections[i]));
  NVHCQ_TRY(nvhcq_cubin_read_module_info(e, c));
  nvhcq_cubin_read_cuinfo(e, c);
  NVHCQ_TRY(nvhcq_cubin_alloc_params(e, c));
  uint64_t pool_used = 0;
  for (uint32_t i = 0; i < c->kernel_count; i++)
    NVHCQ_TRY(nvhcq_elf_kernel_info(e, c, i, &pool_used));
  return nvhcq_cubin_read_callgraph(e, c);
}

/* ---- module-scope variables -------------------------------------------------------------- */

static nvhcq_status nvhcq_global_make(const nvhcq_elf_section *home, const nvhcq_elf_symbol *sym,
                                      nvhcq_cubin_global *g) {
  uint32_t bank = 0;
  const char *owner;
  if (sym->value > home->size || sym->size > home->size - sym->value)
    return NVHCQ_BAD("%s (0x%llx bytes at 0x%llx) runs past the end of %s (0x%llx bytes)",
                     sym->name, (nvhcq_ull)sym->size, (nvhcq_ull)sym->value, home->name,
                     (nvhcq_ull)home->size);
  bool constant = nvhcq_cbank_name(home->name, &bank, &owner);
  *g = (nvhcq_cubin_global){sym->name,
                            home->name,
                            constant ? NVHCQ_CUBIN_GLOBAL_CONSTANT : NVHCQ_CUBIN_GLOBAL_DEVICE,
                            constant ? bank : 0,
                            home->place + sym->value,
                            sym->size};
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_cubin_read_globals(const nvhcq_elf *e, nvhcq_cubin *c) {
  c->globals = calloc(e->symbol_count + 1, sizeof *c->globals);
  if (!c->globals) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->symbol_count; i++) {
    const nvhcq_elf_symbol *sym = &e->symbols[i];
    const nvhcq_elf_section *home = nvhcq_symbol_section(e, sym);
    if ((sym->info & 0xf) != NVHCQ_STT_OBJECT || !home || home->place == NVHCQ_NOT_PLACED)
      continue; /* undefined, or in shared memory */
    NVHCQ_TRY(nvhcq_global_make(home, sym, &c->globals[c->global_count++]));
  }
  return NVHCQ_SUCCESS;
}

/* ---- public ------------------------------------------------------------------------------ */

static nvhcq_status nvhcq_cubin_build(nvhcq_elf *e, nvhcq_cubin *c) {
  NVHCQ_TRY(nvhcq_elf_read_header(e));
  NVHCQ_TRY(nvhcq_elf_read_sections(e));
  NVHCQ_TRY(nvhcq_elf_read_symbols(e));
  NVHCQ_TRY(nvhcq_cubin_read_arch(e, c));
  NVHCQ_TRY(nvhcq_cubin_layout(e, c));
  NVHCQ_TRY(nvhcq_cubin_read_relocs(e, c));
  NVHCQ_TRY(nvhcq_cubin_read_cbanks(e, c));
  NVHCQ_TRY(nvhcq_cubin_read_kernels(e, c));
  return nvhcq_cubin_read_globals(e, c);
}

nvhcq_status nvhcq_cubin_arch(const void *data, size_t size, unsigned *sm, bool *specific) {
  if (!data || !sm || !specific)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_arch: NULL argument");
  nvhcq_elf e = {.data = data, .size = size};
  nvhcq_cubin c = {0};
  nvhcq_status s = nvhcq_elf_read_header(&e);
  if (!s) s = nvhcq_elf_read_sections(&e);
  if (!s) s = nvhcq_cubin_read_arch(&e, &c);
  free(e.sections);
  free(e.strings[0]);
  *sm = c.sm, *specific = c.arch_specific;
  return s;
}

nvhcq_status nvhcq_cubin_parse(const void *data, size_t size, nvhcq_cubin **out) {
  if (!out || (!data && size))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_parse: %s is NULL",
                      out ? "data" : "out");
  *out = NULL;
  nvhcq_cubin *c = calloc(1, sizeof *c);
  if (!c) return NVHCQ_OOM();
  c->file_size = size;
  /* The file is read where it is: only its string tables are copied (e.strings, the cubin's). */
  nvhcq_elf e = {.data = data, .size = size};
  nvhcq_status status = nvhcq_cubin_build(&e, c);
  c->strings[0] = e.strings[0];
  c->strings[1] = e.strings[1];
  free(e.sections);
  free(e.symbols);
  free(e.kernel_symbols);
  free(e.symbol_kernel);
  free(e.symbol_function);
  free(e.kernel_names);
  free(e.kernel_info);
  free(e.kernel_shared);
  if (status != NVHCQ_SUCCESS) {
    nvhcq_cubin_free(c);
    return status;
  }
  *out = c;
  return NVHCQ_SUCCESS;
}

void nvhcq_cubin_free(nvhcq_cubin *c) {
  if (!c) return;
  free(c->kernels);
  free(c->kernels_by_name);
  free(c->param_pool);
  free(c->globals);
  free(c->cbanks);
  free(c->relocs);
  free(c->sections);
  free(c->functions);
  free(c->strings[0]);
  free(c->strings[1]);
  free(c);
}

/* "a, b, c" of the cubin's kernels, cut to fit `out`. */
static void nvhcq_kernel_names(const nvhcq_cubin *c, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < c->kernel_count && used < size; i++) {
    int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", c->kernels[i].name);
    if (n < 0) break;
    used += (size_t)n;
  }
}

static int nvhcq_kernel_ptr_cmp(const void *a, const void *b) {
  return strcmp((*(const nvhcq_cubin_kernel *const *)a)->name,
                (*(const nvhcq_cubin_kernel *const *)b)->name);
}

const nvhcq_cubin_kernel *nvhcq_cubin_find_kernel(const nvhcq_cubin *c, const char *name) {
  if (!c || !name) {
    nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_find_kernel: NULL argument");
    return NULL;
  }
  const nvhcq_cubin_kernel key = {.name = name}, *key_at = &key;
  const nvhcq_cubin_kernel **hit =
      bsearch(&key_at, c->kernels_by_name, c->kernel_count, sizeof key_at, nvhcq_kernel_ptr_cmp);
  if (hit) return *hit;
  char names[512];
  nvhcq_kernel_names(c, names, sizeof names);
  nvhcq_fail(NVHCQ_ERROR_NOT_FOUND,
             "no kernel named %s in the cubin (it has: %s; C++ kernels have mangled names unless "
             "declared extern \"C\")",
             name, c->kernel_count ? names : "no kernels");
  return NULL;
}

const nvhcq_cubin_global *nvhcq_cubin_find_global(const nvhcq_cubin *c, const char *name) {
  if (!c || !name) {
    nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_find_global: NULL argument");
    return NULL;
  }
  for (uint32_t i = 0; i < c->global_count; i++)
    if (!strcmp(c->globals[i].name, name)) return &c->globals[i];
  nvhcq_fail(NVHCQ_ERROR_NOT_FOUND,
             "no __device__ or __constant__ variable named %s in the cubin (C++ names are "
             "mangled unless declared extern \"C\")",
             name);
  return NULL;
}

nvhcq_status nvhcq_cubin_write_image(const nvhcq_cubin *c, const void *data, size_t size,
                                     uint8_t *dst) {
  if (!c || !data || !dst)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_write_image: NULL argument");
  if (size != c->file_size)
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT,
                      "nvhcq_cubin_write_image: %zu bytes given, the cubin was parsed from %llu",
                      size, (nvhcq_ull)c->file_size);
  const uint8_t *file = data;
  uint64_t done = 0; /* dst is written up to here; sections with data lie in ascending order */
  for (uint32_t i = 0; i < c->section_count; i++) {
    const nvhcq_cubin_section *s = &c->sections[i];
    if (s->zero_fill) continue;
    memset(dst + done, 0, s->offset - done);
    memcpy(dst + s->offset, file + s->file_offset, s->size);
    done = s->offset + s->size;
  }
  memset(dst + done, 0, c->memory_size - done);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_cubin_relocate(const nvhcq_cubin *c, uint8_t *image, uint64_t gpu_base) {
  if (c && c->import_count)
    return nvhcq_fail(
        NVHCQ_ERROR_INVALID_IMAGE,
        "the cubin calls %s, which the loader provides (nvhcq_cubin_relocate_imports)",
        c->imports[0]);
  return nvhcq_cubin_relocate_imports(c, image, gpu_base, NULL);
}

nvhcq_status nvhcq_cubin_relocate_imports(const nvhcq_cubin *c, uint8_t *image, uint64_t gpu_base,
                                          const uint64_t *imports) {
  if (!c || !image || (c->import_count && !imports))
    return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_relocate: NULL argument");
  for (uint32_t i = 0; i < c->reloc_count; i++) {
    const nvhcq_cubin_reloc *r = &c->relocs[i];
    uint64_t target = r->import >= 0 ? imports[r->import] : gpu_base + r->symbol_offset;
    uint64_t v = target + (uint64_t)r->addend;
    reloc_layout l;
    if (!nvhcq_reloc_layout(r->type, &l))
      return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE, "relocation %u has unsupported type 0x%x", i,
                        r->type);
    for (int k = 0; k < 2 && l.part[k].width; k++)
      put_bits(image + r->offset, l.part[k].lo, l.part[k].width,
               v >> l.part[k].shift & part_mask(&l.part[k]));
  }
  return NVHCQ_SUCCESS;
}

const nvhcq_cubin_function *nvhcq_cubin_find_function(const nvhcq_cubin *c, const char *name) {
  size_t n = name ? strlen(name) : 0;
  for (uint32_t i = 0; c && name && i < c->function_count; i++) {
    const char *f = c->functions[i].name;
    if (!strncmp(f, name, n) && (f[n] == '\0' || f[n] == '$')) return &c->functions[i];
  }
  return NULL;
}

nvhcq_status nvhcq_cubin_check_arch(const nvhcq_cubin *c, unsigned gpu_sm) {
  if (!c) return nvhcq_fail(NVHCQ_ERROR_INVALID_ARGUMENT, "nvhcq_cubin_check_arch: cubin is NULL");
  bool ok =
      c->arch_specific ? c->sm == gpu_sm : c->sm / 10 == gpu_sm / 10 && c->sm % 10 <= gpu_sm % 10;
  if (ok) return NVHCQ_SUCCESS;
  return nvhcq_fail(NVHCQ_ERROR_INVALID_IMAGE,
                    "cubin is for sm_%u%s, this GPU needs sm_%u code; rebuild with -arch=sm_%u",
                    c->sm, c->arch_specific ? "a" : "", gpu_sm, gpu_sm);
}
