/* Device printf and assert records turned into text: each conversion rebuilt for the C type its
 * slot holds and handed to snprintf; anything malformed is copied as it is. */
#include "exec/print.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exec/syscalls_abi.h"

/* Widths and precisions past this are printed literally: the record's text is bounded. */
#define MAX_FIELD 4096

typedef struct out_text {
  char *buf;
  size_t len, cap;
} out_text;

static void put_bytes(out_text *t, const char *s, size_t n) {
  if (t->len + 1 >= t->cap) return;
  if (n > t->cap - 1 - t->len) n = t->cap - 1 - t->len;
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

static void put_format(out_text *t, const char *fmt, ...) {
  if (t->len + 1 >= t->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->buf[t->len] = '\0';
    return;
  }
  t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - 1 - t->len;
}

/* The NUL-terminated string at `offset` of the record, or NULL when it would run past the end. */
static const char *record_string(const uint8_t *rec, uint32_t size, uint64_t offset) {
  if (offset < sizeof(nvhcq_sys_record) || offset >= size) return NULL;
  return memchr(rec + offset, 0, size - offset) ? (const char *)rec + offset : NULL;
}

static int printf_ok(const uint8_t *rec, uint32_t size, const nvhcq_sys_record *r) {
  uint64_t text = sizeof *r + 8ull * r->count;
  return r->count <= NVHCQ_SYS_MAX_ARGS && r->format_len <= NVHCQ_SYS_MAX_FORMAT &&
         text + r->format_len + 1 <= size && rec[text + r->format_len] == '\0';
}

static int assert_ok(const uint8_t *rec, uint32_t size) {
  nvhcq_sys_assert a;
  if (sizeof(nvhcq_sys_record) + sizeof a > size) return 0;
  memcpy(&a, rec + sizeof(nvhcq_sys_record), sizeof a);
  return record_string(rec, size, a.message) && record_string(rec, size, a.file) &&
         record_string(rec, size, a.function);
}

int nvhcq_print_record_ok(const uint8_t *rec, uint32_t size) {
  nvhcq_sys_record r;
  if (!rec || size < sizeof r || size % NVHCQ_SYS_ALIGN) return 0;
  memcpy(&r, rec, sizeof r);
  if (r.kind == NVHCQ_SYS_PRINTF) return printf_ok(rec, size, &r);
  if (r.kind == NVHCQ_SYS_ASSERT) return assert_ok(rec, size);
  return r.kind == NVHCQ_SYS_PAD;
}

/* The conversion's text for snprintf: flags, width and precision kept, the length modifier
 * replaced by the one of the C type passed ("ll" for 64-bit integers, none for the rest but
 * int's own hh and h). 0 when a width or precision is out of bounds, or the conversion does not
 * fit `cap` (a cut one could drop a '*' that the arguments still pass). */
static int rebuild_spec(const char *f, const nvhcq_sys_conv *c, char *spec, size_t cap) {
  size_t n = 0;
  unsigned long field = 0;
  for (uint32_t i = 0; i + 1 < c->length; i++) {
    if (n + 4 >= cap) return 0;
    char ch = f[i];
    field = ch >= '0' && ch <= '9' ? field * 10 + (unsigned long)(ch - '0') : 0;
    if (field > MAX_FIELD) return 0;
    if (strchr("lzjtqL", ch)) continue;
    if (ch == 'h' && c->arg != NVHCQ_SYS_ARG_INT32) continue;
    if (ch == 'h' && c->conversion == 'c') continue;
    spec[n++] = ch;
  }
  if (c->arg == NVHCQ_SYS_ARG_INT64) spec[n++] = 'l', spec[n++] = 'l';
  spec[n++] = c->conversion;
  spec[n] = '\0';
  return 1;
}

static int star_ok(int v) {
  return v >= -MAX_FIELD && v <= MAX_FIELD;
}

/* One conversion with its value (and '*' values), through snprintf. 0: print it literally. */
static int convert(out_text *t, const char *spec, const nvhcq_sys_conv *c, const int *stars,
                   uint64_t v, const char *string) {
  char buf[MAX_FIELD * 2 + 64];
  int n;
#define CALL(x)                                                                                    \
  (c->stars == 2   ? snprintf(buf, sizeof buf, spec, stars[0], stars[1], x)                        \
   : c->stars == 1 ? snprintf(buf, sizeof buf, spec, stars[0], x)                                  \
                   : snprintf(buf, sizeof buf, spec, x))
  double d;
  switch (c->arg) {
  case NVHCQ_SYS_ARG_INT32:
    n = CALL((int)(uint32_t)v);
    break;
  case NVHCQ_SYS_ARG_INT64:
    n = CALL((long long)v);
    break;
  case NVHCQ_SYS_ARG_DOUBLE:
    memcpy(&d, &v, sizeof d);
    n = CALL(d);
    break;
  case NVHCQ_SYS_ARG_STRING:
    n = CALL(string ? string : "(null)");
    break;
  default: /* pointers; %n writes nothing here */
    if (c->conversion == 'n') return 1;
    n = CALL((void *)(uintptr_t)v);
    break;
  }
#undef CALL
  if (n < 0) return 0;
  put_bytes(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  return 1;
}

/* The conversion at fmt[i] with the slots from *slot on; 0 when it is printed literally. */
static int format_one(out_text *t, const uint8_t *rec, uint32_t size, const char *f, uint32_t left,
                      uint32_t *slot, const nvhcq_sys_conv *c) {
  const nvhcq_sys_record *r = (const nvhcq_sys_record *)rec;
  uint32_t need = c->stars + (c->arg != NVHCQ_SYS_ARG_NONE);
  (void)left;
  if (*slot + need > r->count) return 0;
  uint64_t v[3] = {0, 0, 0};
  memcpy(v, rec + sizeof *r + 8ull * *slot, 8ull * need);
  *slot += need;
  if (c->arg == NVHCQ_SYS_ARG_NONE) return put_bytes(t, "%", 1), 1;
  int stars[2] = {(int)(uint32_t)v[0], (int)(uint32_t)v[1]};
  for (uint32_t s = 0; s < c->stars; s++)
    if (!star_ok(stars[s])) return 0;
  char spec[64];
  if (!rebuild_spec(f, c, spec, sizeof spec)) return 0;
  uint64_t value = v[c->stars];
  const char *string = NULL;
  if (c->arg == NVHCQ_SYS_ARG_STRING && value && !(string = record_string(rec, size, value)))
    return 0;
  return convert(t, spec, c, stars, value, string);
}

size_t nvhcq_print_format(const uint8_t *rec, uint32_t size, char *out, size_t cap) {
  out_text t = {out, 0, cap};
  if (!out || !cap) return 0;
  out[0] = '\0';
  if (!nvhcq_print_record_ok(rec, size) ||
      ((const nvhcq_sys_record *)rec)->kind != NVHCQ_SYS_PRINTF)
    return 0;
  const nvhcq_sys_record *r = (const nvhcq_sys_record *)rec;
  const char *f = (const char *)rec + sizeof *r + 8ull * r->count;
  uint32_t slot = 0, flen = r->format_len;
  /* The same walk as the device's (syscalls.cu): conversions in order, at most MAX_ARGS slots. */
  for (uint32_t i = 0; i < flen;) {
    nvhcq_sys_conv c;
    uint32_t n = f[i] == '%' ? nvhcq_sys_parse(f + i, flen - i, &c) : 0;
    if (!n || slot + c.stars + 1 > NVHCQ_SYS_MAX_ARGS) {
      put_bytes(&t, f + i, 1);
      i++;
      continue;
    }
    uint32_t before = slot;
    if (!format_one(&t, rec, size, f + i, flen - i, &slot, &c)) {
      put_bytes(&t, f + i, n);
      if (slot == before) slot += c.stars + (c.arg != NVHCQ_SYS_ARG_NONE);
    }
    i += n;
  }
  return t.len;
}

size_t nvhcq_print_assert(const uint8_t *rec, uint32_t size, char *out, size_t cap) {
  out_text t = {out, 0, cap};
  if (!out || !cap) return 0;
  out[0] = '\0';
  if (!nvhcq_print_record_ok(rec, size) ||
      ((const nvhcq_sys_record *)rec)->kind != NVHCQ_SYS_ASSERT)
    return 0;
  nvhcq_sys_assert a;
  memcpy(&a, rec + sizeof(nvhcq_sys_record), sizeof a);
  put_format(&t, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
             record_string(rec, size, a.file), a.line, record_string(rec, size, a.function),
             a.block[0], a.block[1], a.block[2], a.thread[0], a.thread[1], a.thread[2],
             record_string(rec, size, a.message));
  return t.len;
}
