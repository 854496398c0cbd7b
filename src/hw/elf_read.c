/* Reading a cubin's ELF container: the header, the section headers and their names, the symbol
 * table and EIATTR records. The file is untrusted: every read goes through a range check made
 * once per section (sections) or per record (EIATTRs, symbols). */
#include "hw/elf_read.h"

#include <stdlib.h>

/* ---- ELF structure ----------------------------------------------------------------------- */

nvhcq_status nvhcq_elf_read_header(nvhcq_elf *e) {
  const uint8_t *d = e->data;
  if (e->size < NVHCQ_EHDR_SIZE)
    return NVHCQ_BAD("%llu bytes is too short for an ELF header (64 bytes)", (nvhcq_ull)e->size);
  if (memcmp(d,
             "\x7f"
             "ELF",
             4) != 0)
    return NVHCQ_BAD("no ELF magic at the start (a fatbin or PTX is not a cubin)");
  if (d[4] != 2 || d[5] != 1)
    return NVHCQ_BAD("ELF class %u, data encoding %u: cubins are 64-bit little-endian", d[4], d[5]);
  if (nvhcq_rd16(d + 18) != NVHCQ_EM_CUDA)
    return NVHCQ_BAD("e_machine %u is not EM_CUDA (190)", nvhcq_rd16(d + 18));
  e->abi_version = d[8];
  e->flags = nvhcq_rd32(d + 48);
  e->shoff = nvhcq_rd64(d + 40);
  e->section_count = nvhcq_rd16(d + 60);
  e->shstrndx = nvhcq_rd16(d + 62);
  if (nvhcq_rd16(d + 58) != NVHCQ_SHDR_SIZE)
    return NVHCQ_BAD("section header size %u, expected 64", nvhcq_rd16(d + 58));
  if (e->section_count == 0) return NVHCQ_BAD("no section headers");
  if (!nvhcq_in_range(e->shoff, (uint64_t)e->section_count * NVHCQ_SHDR_SIZE, e->size))
    return NVHCQ_BAD("the %u section headers at 0x%llx run past the end of the %llu-byte file",
                     e->section_count, (nvhcq_ull)e->shoff, (nvhcq_ull)e->size);
  if (e->shstrndx >= e->section_count)
    return NVHCQ_BAD("section-name table index %u, but only %u sections", e->shstrndx,
                     e->section_count);
  return NVHCQ_SUCCESS;
}

static void nvhcq_elf_read_section(nvhcq_elf *e, uint32_t i) {
  const uint8_t *p = e->data + e->shoff + (uint64_t)i * NVHCQ_SHDR_SIZE;
  nvhcq_elf_section *s = &e->sections[i];
  s->name_offset = nvhcq_rd32(p);
  s->type = nvhcq_rd32(p + 4);
  s->flags = nvhcq_rd64(p + 8);
  s->offset = nvhcq_rd64(p + 24);
  s->size = nvhcq_rd64(p + 32);
  s->link = nvhcq_rd32(p + 40);
  s->info = nvhcq_rd32(p + 44);
  s->addralign = nvhcq_rd64(p + 48);
  s->entsize = nvhcq_rd64(p + 56);
  s->place = NVHCQ_NOT_PLACED;
  s->has_data = s->type != NVHCQ_SHT_NULL && s->type != NVHCQ_SHT_NOBITS;
  s->name = "";
}

/* A private copy of string table s (range-checked already), so that the names in it outlive the
 * caller's buffer; nothing else of the file is kept. The two tables may be one section. */
static nvhcq_status nvhcq_elf_copy_strings(nvhcq_elf_section *s, const uint8_t *data, char **slot) {
  if (s->strings) return NVHCQ_SUCCESS;
  *slot = malloc(s->size + 1);
  if (!*slot) return NVHCQ_OOM();
  memcpy(*slot, data + s->offset, s->size);
  (*slot)[s->size] = '\0';
  s->strings = *slot;
  return NVHCQ_SUCCESS;
}

/* A string of a string table (its copy); `what`/`index` name its owner for the message. */
static nvhcq_status nvhcq_elf_string(const nvhcq_elf_section *strtab, uint64_t offset,
                                     const char *what, uint32_t index, const char **out) {
  if (offset >= strtab->size)
    return NVHCQ_BAD("name of %s %u at 0x%llx lies past its string table (0x%llx bytes)", what,
                     index, (nvhcq_ull)offset, (nvhcq_ull)strtab->size);
  const char *s = strtab->strings + offset;
  if (!memchr(s, 0, strtab->size - offset))
    return NVHCQ_BAD("name of %s %u at 0x%llx is not NUL-terminated in its string table", what,
                     index, (nvhcq_ull)offset);
  *out = s;
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_elf_check_section(const nvhcq_elf *e, uint32_t i) {
  const nvhcq_elf_section *s = &e->sections[i];
  if (s->has_data && !nvhcq_in_range(s->offset, s->size, e->size))
    return NVHCQ_BAD("section %u (%s: 0x%llx bytes at 0x%llx) runs past the end of the %llu-byte "
                     "file",
                     i, s->name, (nvhcq_ull)s->size, (nvhcq_ull)s->offset, (nvhcq_ull)e->size);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_elf_read_sections(nvhcq_elf *e) {
  e->sections = calloc(e->section_count, sizeof *e->sections);
  if (!e->sections) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->section_count; i++) nvhcq_elf_read_section(e, i);
  const nvhcq_elf_section *names = &e->sections[e->shstrndx];
  if (names->type != NVHCQ_SHT_STRTAB)
    return NVHCQ_BAD("section %u, named as the section-name table, is not a string table",
                     e->shstrndx);
  NVHCQ_TRY(nvhcq_elf_check_section(e, e->shstrndx));
  NVHCQ_TRY(nvhcq_elf_copy_strings(&e->sections[e->shstrndx], e->data, &e->strings[0]));
  for (uint32_t i = 0; i < e->section_count; i++) {
    nvhcq_elf_section *s = &e->sections[i];
    NVHCQ_TRY(nvhcq_elf_string(names, s->name_offset, "section", i, &s->name));
    NVHCQ_TRY(nvhcq_elf_check_section(e, i));
  }
  return NVHCQ_SUCCESS;
}

const nvhcq_elf_section *nvhcq_elf_find(const nvhcq_elf *e, const char *prefix,
                                        const char *suffix) {
  for (uint32_t i = 0; i < e->section_count; i++)
    if (nvhcq_name_is(e->sections[i].name, prefix, suffix)) return &e->sections[i];
  return NULL;
}

static nvhcq_status nvhcq_elf_check_symtab(const nvhcq_elf *e, const nvhcq_elf_section *s) {
  if (s->entsize != NVHCQ_SYM_SIZE || s->size % NVHCQ_SYM_SIZE)
    return NVHCQ_BAD("%s: entry size %llu and size 0x%llx do not make 24-byte symbols", s->name,
                     (nvhcq_ull)s->entsize, (nvhcq_ull)s->size);
  if (s->link >= e->section_count || e->sections[s->link].type != NVHCQ_SHT_STRTAB)
    return NVHCQ_BAD("%s: its string table (section %u) is not a string table", s->name, s->link);
  return NVHCQ_SUCCESS;
}

static nvhcq_status nvhcq_elf_read_symbol(nvhcq_elf *e, const nvhcq_elf_section *symtab,
                                          uint32_t i) {
  const uint8_t *p = e->data + symtab->offset + (uint64_t)i * NVHCQ_SYM_SIZE;
  nvhcq_elf_symbol *sym = &e->symbols[i];
  sym->info = p[4];
  sym->other = p[5];
  sym->shndx = nvhcq_rd16(p + 6);
  sym->value = nvhcq_rd64(p + 8);
  sym->size = nvhcq_rd64(p + 16);
  NVHCQ_TRY(nvhcq_elf_string(&e->sections[symtab->link], nvhcq_rd32(p), "symbol", i, &sym->name));
  if (sym->shndx < NVHCQ_SHN_LORESERVE && sym->shndx >= e->section_count)
    return NVHCQ_BAD("symbol %u (%s) refers to section %u, but only %u sections", i, sym->name,
                     sym->shndx, e->section_count);
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_elf_read_symbols(nvhcq_elf *e) {
  const nvhcq_elf_section *symtab = NULL;
  for (uint32_t i = 0; i < e->section_count && !symtab; i++)
    if (e->sections[i].type == NVHCQ_SHT_SYMTAB) symtab = &e->sections[e->symtab_index = i];
  if (!symtab) return NVHCQ_BAD("no symbol table");
  NVHCQ_TRY(nvhcq_elf_check_symtab(e, symtab));
  NVHCQ_TRY(nvhcq_elf_copy_strings(&e->sections[symtab->link], e->data, &e->strings[1]));
  e->symbol_count = (uint32_t)(symtab->size / NVHCQ_SYM_SIZE);
  e->symbols = calloc(e->symbol_count + 1, sizeof *e->symbols);
  if (!e->symbols) return NVHCQ_OOM();
  for (uint32_t i = 0; i < e->symbol_count; i++) NVHCQ_TRY(nvhcq_elf_read_symbol(e, symtab, i));
  return NVHCQ_SUCCESS;
}

/* Where a symbol is defined, or NULL for undefined and special (SHN_ABS, ...) symbols. */
const nvhcq_elf_section *nvhcq_symbol_section(const nvhcq_elf *e, const nvhcq_elf_symbol *s) {
  if (s->shndx == 0 || s->shndx >= NVHCQ_SHN_LORESERVE || s->shndx >= e->section_count) return NULL;
  return &e->sections[s->shndx];
}

/* ---- EIATTR records (.nv.info, .nv.info.<kernel>, .nv.compat) ---------------------------- */

nvhcq_status nvhcq_need_data(const nvhcq_elf_section *s) {
  if (s->has_data) return NVHCQ_SUCCESS;
  return NVHCQ_BAD("%s has no bytes in the file (type %u)", s->name, s->type);
}

/* Reads the record at *pos and moves past it; *pos == s->size afterwards ends the list. */
nvhcq_status nvhcq_eiattr_next(const nvhcq_elf *e, const nvhcq_elf_section *s, uint64_t *pos,
                               nvhcq_eiattr *a) {
  const uint8_t *p = e->data + s->offset + *pos;
  uint64_t left = s->size - *pos;
  if (left < 4) return NVHCQ_BAD("%s: record at +0x%llx is cut short", s->name, (nvhcq_ull)*pos);
  *a = (nvhcq_eiattr){*pos, p[0], p[1], nvhcq_rd16(p + 2), p + 4, 0};
  if (a->format == 0 && p[1] == 0 && a->value == 0) { /* zero padding up to the end */
    for (uint64_t i = 4; i < left; i++)
      if (p[i]) return NVHCQ_BAD("%s: record at +0x%llx has format 0", s->name, (nvhcq_ull)*pos);
    *pos = s->size;
    return NVHCQ_SUCCESS;
  }
  if (a->format < NVHCQ_EIFMT_NVAL || a->format > NVHCQ_EIFMT_SVAL)
    return NVHCQ_BAD("%s: record at +0x%llx has unknown format %u", s->name, (nvhcq_ull)*pos,
                     a->format);
  if (a->format == NVHCQ_EIFMT_SVAL) {
    if (a->value > left - 4)
      return NVHCQ_BAD("%s: attribute 0x%02x at +0x%llx claims %u bytes, %llu remain", s->name,
                       a->attr, (nvhcq_ull)*pos, a->value, (nvhcq_ull)(left - 4));
    a->size = a->value;
  }
  *pos += 4 + a->size;
  return NVHCQ_SUCCESS;
}

nvhcq_status nvhcq_eiattr_need(const nvhcq_elf_section *s, const nvhcq_eiattr *a, uint32_t bytes) {
  if (a->format == NVHCQ_EIFMT_SVAL && a->size >= bytes) return NVHCQ_SUCCESS;
  return NVHCQ_BAD("%s: attribute 0x%02x at +0x%llx has %u bytes of data, needs %u", s->name,
                   a->attr, (nvhcq_ull)a->pos, a->size, bytes);
}

uint32_t nvhcq_eiattr_u32(const nvhcq_eiattr *a, uint32_t i) {
  return nvhcq_rd32(a->data + 4 * i);
}

/* The value of a BVAL/HVAL record (an SVAL's first word, should a tool write it so). */
uint32_t nvhcq_eiattr_scalar(const nvhcq_eiattr *a) {
  if (a->format == NVHCQ_EIFMT_BVAL) return a->value & 0xff;
  if (a->format == NVHCQ_EIFMT_HVAL) return a->value;
  return a->size >= 4 ? nvhcq_eiattr_u32(a, 0) : 0;
}
