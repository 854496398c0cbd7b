/* Device printf and assert records (exec/syscalls_abi.h) formatted on the host (exec/print.c),
 * on synthetic records: every conversion against the C library's own printf, the argument walk
 * the device shares, malformed formats and records, and random bytes. No GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/print.h"
#include "exec/syscalls_abi.h"
#include "test.h"

typedef struct arg {
  uint64_t v;
  const char *s; /* a %s argument: copied into the record, the slot holds its offset */
  int null;      /* a NULL %s argument */
} arg;

typedef struct record {
  _Alignas(16) uint8_t b[16384];
  uint32_t size;
} record;

/* A printf record as syscalls.cu writes it: header, slots, format, strings, size rounded up. */
static void build(record *r, const char *fmt, const arg *args, uint32_t n) {
  memset(r, 0, sizeof *r);
  uint32_t flen = (uint32_t)strlen(fmt), at = 16 + 8 * n + flen + 1;
  nvhcq_sys_record h = {0, NVHCQ_SYS_PRINTF, n, flen};
  memcpy(r->b + 16 + 8 * n, fmt, flen + 1);
  for (uint32_t i = 0; i < n; i++) {
    uint64_t v = args[i].v;
    if (args[i].s) {
      v = at;
      memcpy(r->b + at, args[i].s, strlen(args[i].s) + 1);
      at += (uint32_t)strlen(args[i].s) + 1;
    } else if (args[i].null) {
      v = 0;
    }
    memcpy(r->b + 16 + 8 * i, &v, 8);
  }
  r->size = (at + 15) & ~15u;
  h.size = r->size;
  memcpy(r->b, &h, sizeof h);
}

static uint64_t dbl(double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  return v;
}

static void expect(const record *r, const char *want) {
  char out[8192];
  size_t n = nvhcq_print_format(r->b, r->size, out, sizeof out);
  TEST_CHECK_MSG(n == strlen(want) && !strcmp(out, want), "got \"%s\", want \"%s\"", out, want);
}

static void test_integers(void) {
  record r;
  char want[512];
  arg a[] = {{(uint32_t)-42, 0, 0}, {7, 0, 0},      {4000000000u, 0, 0},  {0xbeef, 0, 0},
             {0xbeef, 0, 0},        {8, 0, 0},      {'Q', 0, 0},          {(uint64_t)-5, 0, 0},
             {1ull << 40, 0, 0},    {12345, 0, 0},  {(uint64_t)-9, 0, 0}, {77, 0, 0},
             {0x1ff, 0, 0},         {0x12345, 0, 0}};
  build(&r, "%d %i %u %x %X %o %c %ld %llu %zu %jd %td %hhu %hd", a, 14);
  snprintf(want, sizeof want, "%d %i %u %x %X %o %c %ld %llu %zu %jd %td %hhu %hd", -42, 7,
           4000000000u, 0xbeef, 0xbeef, 8, 'Q', -5l, 1ull << 40, (size_t)12345, (intmax_t)-9,
           (ptrdiff_t)77, (unsigned char)0x1ff, (short)0x12345);
  expect(&r, want);
  arg b[] = {{42, 0, 0}, {255, 0, 0}, {(uint32_t)-1, 0, 0}, {3, 0, 0}};
  build(&r, "[%+5d] [%-#6x] [%08d] [% d]", b, 4);
  snprintf(want, sizeof want, "[%+5d] [%-#6x] [%08d] [% d]", 42, 255, -1, 3);
  expect(&r, want);
}

static void test_floats(void) {
  record r;
  char want[512];
  arg a[] = {{dbl(3.14159), 0, 0}, {dbl(-2.5), 0, 0},   {dbl(1e-7), 0, 0},
             {dbl(6.02e23), 0, 0}, {dbl(0.0001), 0, 0}, {dbl(1e20), 0, 0},
             {dbl(1.0), 0, 0},     {dbl(-0.75), 0, 0},  {dbl(2.0), 0, 0}};
  build(&r, "%f %F %e %E %g %G %a %A %.2Lf", a, 9);
  snprintf(want, sizeof want, "%f %F %e %E %g %G %a %A %.2f", 3.14159, -2.5, 1e-7, 6.02e23, 0.0001,
           1e20, 1.0, -0.75, 2.0);
  expect(&r, want);
}

static void test_strings_pointers(void) {
  record r;
  char want[512];
  arg a[] = {{0, "hello", 0}, {0, "abcdef", 0}, {0, "hi", 0}, {0, 0, 1}, {0x7f001234, 0, 0}};
  build(&r, "%s|%.3s|%5s|%s|%p", a, 5);
  snprintf(want, sizeof want, "%s|%.3s|%5s|%s|%p", "hello", "abcdef", "hi", "(null)",
           (void *)0x7f001234);
  expect(&r, want);
}

static void test_stars_and_percent(void) {
  record r;
  char want[512];
  arg a[] = {{6, 0, 0}, {42, 0, 0}, {(uint32_t)-8, 0, 0}, {2, 0, 0}, {dbl(1.23456), 0, 0}};
  build(&r, "100%% [%*d] [%*.*f] %%", a, 5);
  snprintf(want, sizeof want, "100%% [%*d] [%*.*f] %%", 6, 42, -8, 2, 1.23456);
  expect(&r, want);
  build(&r, "no conversions at all\n", NULL, 0);
  expect(&r, "no conversions at all\n");
}

/* What the device would not parse is printed as it is, and takes no argument. */
static void test_malformed_formats(void) {
  record r;
  arg a[] = {{5, 0, 0}};
  build(&r, "end %", NULL, 0);
  expect(&r, "end %");
  build(&r, "%y then %d", a, 1);
  expect(&r, "%y then 5");
  build(&r, "%5% %d", a, 1);
  expect(&r, "%5% 5");
  build(&r, "%l", NULL, 0);
  expect(&r, "%l");
  build(&r, "%lhd %d", a, 1);
  expect(&r, "%lhd 5");
  /* arguments the record lacks, and widths past the bound */
  build(&r, "%d %d", a, 1);
  expect(&r, "5 %d");
  build(&r, "[%99999d]", a, 1);
  expect(&r, "[%99999d]");
  arg star[] = {{100000, 0, 0}, {1, 0, 0}};
  build(&r, "[%*d]", star, 2);
  expect(&r, "[%*d]");
  /* more flags than a conversion's text holds: printed as it is, its '*' not dropped (the
   * string's slot was once taken for the width's int) */
  char many[128] = "%";
  memset(many + 1, '-', 70);
  strcpy(many + 71, "*s");
  arg wide[] = {{5, 0, 0}, {0, "hi", 0}};
  build(&r, many, wide, 2);
  expect(&r, many);
}

/* A %s slot that points outside the record, or at bytes without a NUL, prints literally. */
static void test_bad_string_slot(void) {
  record r;
  arg a[] = {{0, "ok", 0}};
  build(&r, "<%s>", a, 1);
  uint64_t bad = r.size + 64;
  memcpy(r.b + 16, &bad, 8);
  expect(&r, "<%s>");
  bad = 3; /* inside the header */
  memcpy(r.b + 16, &bad, 8);
  expect(&r, "<%s>");
}

/* The device stops taking arguments at 32; so does the host, and the rest prints literally. */
static void test_argument_limit(void) {
  record r;
  char fmt[256] = "", want[256] = "";
  arg a[NVHCQ_SYS_MAX_ARGS];
  for (uint32_t i = 0; i < NVHCQ_SYS_MAX_ARGS; i++) a[i] = (arg){i, 0, 0};
  for (uint32_t i = 0; i < NVHCQ_SYS_MAX_ARGS + 2; i++) {
    strcat(fmt, "%d,");
    char one[16];
    if (i < NVHCQ_SYS_MAX_ARGS)
      snprintf(one, sizeof one, "%u,", i);
    else
      snprintf(one, sizeof one, "%%d,");
    strcat(want, one);
  }
  build(&r, fmt, a, NVHCQ_SYS_MAX_ARGS);
  expect(&r, want);
}

static void test_output_cut_to_fit(void) {
  record r;
  arg a[] = {{0, "a long string argument", 0}};
  build(&r, "%s and more", a, 1);
  char out[8];
  size_t n = nvhcq_print_format(r.b, r.size, out, sizeof out);
  TEST_CHECK(n == 7 && !strcmp(out, "a long "));
}

/* The walk both sides run: conversions, their arguments and stars, in CUDA's buffer order. */
static void test_parse(void) {
  nvhcq_sys_conv c;
  TEST_CHECK(nvhcq_sys_parse("%-*.*lld", 8, &c) == 8 && c.stars == 2 &&
             c.arg == NVHCQ_SYS_ARG_INT64 && c.conversion == 'd');
  TEST_CHECK(nvhcq_sys_parse("%hhx", 4, &c) == 4 && c.arg == NVHCQ_SYS_ARG_INT32);
  TEST_CHECK(nvhcq_sys_parse("%lc", 3, &c) == 3 && c.arg == NVHCQ_SYS_ARG_INT32);
  TEST_CHECK(nvhcq_sys_parse("%e", 2, &c) == 2 && c.arg == NVHCQ_SYS_ARG_DOUBLE);
  TEST_CHECK(nvhcq_sys_parse("%n", 2, &c) == 2 && c.arg == NVHCQ_SYS_ARG_POINTER);
  TEST_CHECK(nvhcq_sys_parse("%%", 2, &c) == 2 && c.arg == NVHCQ_SYS_ARG_NONE);
  TEST_CHECK(nvhcq_sys_parse("%d", 1, &c) == 0); /* cut short */
  TEST_CHECK(nvhcq_sys_parse("%lll", 4, &c) == 0);
  TEST_CHECK(nvhcq_sys_arg_bytes(NVHCQ_SYS_ARG_INT32) == 4);
  TEST_CHECK(nvhcq_sys_arg_bytes(NVHCQ_SYS_ARG_DOUBLE) == 8);
  TEST_CHECK(nvhcq_sys_arg_bytes(NVHCQ_SYS_ARG_STRING) == 8);
}

static uint32_t put_string(record *r, uint32_t *at, const char *s) {
  uint32_t where = *at;
  memcpy(r->b + where, s, strlen(s) + 1);
  *at += (uint32_t)strlen(s) + 1;
  return where;
}

static void build_assert(record *r) {
  memset(r, 0, sizeof *r);
  uint32_t at = 16 + sizeof(nvhcq_sys_assert);
  nvhcq_sys_assert a = {.line = 42, .block = {1, 2, 3}, .thread = {4, 5, 6}};
  a.message = put_string(r, &at, "x == 0");
  a.file = put_string(r, &at, "k.cu");
  a.function = put_string(r, &at, "void check(int *)");
  r->size = (at + 15) & ~15u;
  nvhcq_sys_record h = {r->size, NVHCQ_SYS_ASSERT, 0, 0};
  memcpy(r->b, &h, sizeof h);
  memcpy(r->b + 16, &a, sizeof a);
}

static void test_assert_record(void) {
  record r;
  char out[1024];
  build_assert(&r);
  TEST_CHECK(nvhcq_print_record_ok(r.b, r.size));
  size_t n = nvhcq_print_assert(r.b, r.size, out, sizeof out);
  const char *want = "k.cu:42: void check(int *): block: [1,2,3], thread: [4,5,6] Assertion "
                     "`x == 0` failed.\n";
  TEST_CHECK_MSG(n == strlen(want) && !strcmp(out, want), "got \"%s\"", out);
  TEST_CHECK(nvhcq_print_format(r.b, r.size, out, sizeof out) == 0); /* not a printf record */
  nvhcq_sys_assert a;
  memcpy(&a, r.b + 16, sizeof a);
  a.file = r.size; /* past the end */
  memcpy(r.b + 16, &a, sizeof a);
  TEST_CHECK(!nvhcq_print_record_ok(r.b, r.size));
  TEST_CHECK(nvhcq_print_assert(r.b, r.size, out, sizeof out) == 0);
}

static void test_bad_records(void) {
  record r;
  arg a[] = {{1, 0, 0}};
  build(&r, "%d\n", a, 1);
  TEST_CHECK(nvhcq_print_record_ok(r.b, r.size));
  TEST_CHECK(!nvhcq_print_record_ok(r.b, r.size - 1)); /* not a multiple of 16 */
  TEST_CHECK(!nvhcq_print_record_ok(r.b, 0));
  TEST_CHECK(!nvhcq_print_record_ok(NULL, 16));
  record bad = r;
  ((nvhcq_sys_record *)bad.b)->count = NVHCQ_SYS_MAX_ARGS + 1;
  TEST_CHECK(!nvhcq_print_record_ok(bad.b, bad.size));
  bad = r;
  ((nvhcq_sys_record *)bad.b)->format_len = 1000; /* past the record */
  TEST_CHECK(!nvhcq_print_record_ok(bad.b, bad.size));
  bad = r;
  bad.b[16 + 8 + 3] = 'x'; /* the format's NUL */
  TEST_CHECK(!nvhcq_print_record_ok(bad.b, bad.size));
  bad = r;
  ((nvhcq_sys_record *)bad.b)->kind = 99;
  TEST_CHECK(!nvhcq_print_record_ok(bad.b, bad.size));
  ((nvhcq_sys_record *)bad.b)->kind = NVHCQ_SYS_PAD;
  TEST_CHECK(nvhcq_print_record_ok(bad.b, bad.size));
  char out[64];
  TEST_CHECK(nvhcq_print_format(bad.b, bad.size, out, sizeof out) == 0 && out[0] == '\0');
}

/* Random records and random formats: never a crash, never past the output. */
static void test_random_records(void) {
  record r;
  char out[512];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  static const char alphabet[] = "%%%dsxfgp*.-+ #0123456789lhzjtqLcneaAXEGFiu";
  for (int round = 0; round < 20000; round++) {
    char fmt[64];
    uint32_t flen = 0;
    for (; flen < sizeof fmt - 1; flen++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (x % 17 == 0) break;
      fmt[flen] = alphabet[(x >> 8) % (sizeof alphabet - 1)];
    }
    fmt[flen] = '\0';
    arg a[NVHCQ_SYS_MAX_ARGS];
    uint32_t n = (uint32_t)(x >> 20) % (NVHCQ_SYS_MAX_ARGS + 1);
    for (uint32_t i = 0; i < n; i++) a[i] = (arg){x * (i + 1) >> (i % 64), 0, 0};
    build(&r, fmt, a, n);
    if (round % 3 == 0) r.b[(x >> 32) % r.size] ^= (uint8_t)(x >> 40); /* a corrupt byte */
    size_t len = nvhcq_print_format(r.b, r.size, out, sizeof out);
    TEST_CHECK(len < sizeof out && out[len] == '\0'); /* %c of 0 writes a NUL before the end */
  }
}

TEST_MAIN(TEST(test_integers), TEST(test_floats), TEST(test_strings_pointers),
          TEST(test_stars_and_percent), TEST(test_malformed_formats), TEST(test_bad_string_slot),
          TEST(test_argument_limit), TEST(test_output_cut_to_fit), TEST(test_parse),
          TEST(test_assert_record), TEST(test_bad_records), TEST(test_random_records))
