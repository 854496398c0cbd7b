/* The `nvhcq run` argument parsers: exact results for good input, refusals for bad. */
#include <string.h>

#include "../../tools/cli_args.h"
#include "test.h"

static void t_dims(void) {
  nvhcq_dim3 d;
  TEST_CHECK(cli_parse_dims("7", &d) == 0 && d.x == 7 && d.y == 1 && d.z == 1);
  TEST_CHECK(cli_parse_dims("2,3,4", &d) == 0 && d.x == 2 && d.y == 3 && d.z == 4);
  TEST_CHECK(cli_parse_dims("4294967295", &d) == 0 && d.x == 4294967295u);
  const char *bad[] = {"", "0", "-1", "1,", "1,,2", "1,2,3,4", "x", "4294967296", " 1", "1 ", "+1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    TEST_CHECK_MSG(cli_parse_dims(bad[i], &d) != 0, "'%s' accepted", bad[i]);
}

static void t_buffers(void) {
  cli_buffer_spec s;
  TEST_CHECK(cli_parse_buffer("buf:16", &s) == 0 && s.bytes == 16 && s.fill == CLI_FILL_ZERO &&
             !s.path);
  TEST_CHECK(cli_parse_buffer("buf:8:u32=0x10", &s) == 0 && s.fill == CLI_FILL_U32 &&
             s.value == 16);
  TEST_CHECK(cli_parse_buffer("buf:8:f32=0.5", &s) == 0 && s.value == 0x3f000000u);
  TEST_CHECK(cli_parse_buffer("file:/tmp/x", &s) == 0 && !strcmp(s.path, "/tmp/x"));
  unsigned char host[16];
  TEST_CHECK(cli_parse_buffer("buf:16:iota32", &s) == 0);
  cli_fill_buffer(&s, host, sizeof host);
  uint32_t w[4];
  memcpy(w, host, 16);
  TEST_CHECK(w[0] == 0 && w[1] == 1 && w[3] == 3);
  const char *bad[] = {"buf:",
                       "buf:0",
                       "buf:-4",
                       "buf:12:nope",
                       "buf:4:u32=",
                       "buf:4:u32=x",
                       "buf:4:u32=4294967296",
                       "file:",
                       "buf:99999999999999999999",
                       "bufx:4",
                       "buf:4:"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    TEST_CHECK_MSG(cli_parse_buffer(bad[i], &s) != 0, "'%s' accepted", bad[i]);
}

static void t_scalars(void) {
  unsigned char args[16];
  size_t len = 0;
  TEST_CHECK(cli_append_scalar("i32:-5", args, &len, sizeof args) == 0 && len == 4);
  TEST_CHECK(cli_append_scalar("u64:0x100", args, &len, sizeof args) == 0 && len == 16);
  int32_t a;
  uint64_t b;
  memcpy(&a, args, 4), memcpy(&b, args + 8, 8);
  TEST_CHECK(a == -5 && b == 0x100);
  TEST_CHECK(cli_append_scalar("f32:1.5", args, &len, sizeof args) != 0); /* full */
  TEST_CHECK(len == 16);
  len = 0;
  const char *bad[] = {"i32:",  "i32:1x", "u32:-1",  "u32:4294967296", "i32:2147483648",
                       "x32:1", "i32",    "f64:abc", "i3:1",           ":1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    TEST_CHECK_MSG(cli_append_scalar(bad[i], args, &len, sizeof args) != 0 && len == 0,
                   "'%s' accepted", bad[i]);
}

TEST_MAIN(TEST(t_dims), TEST(t_buffers), TEST(t_scalars))
