#include "cli_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int parse_u32(const char *s, const char **end, uint32_t *out) {
  if (*s < '0' || *s > '9') return -1; /* no sign, no space */
  char *e;
  errno = 0;
  unsigned long long v = strtoull(s, &e, 10);
  if (errno || v == 0 || v > 0xffffffffull) return -1;
  *out = (uint32_t)v;
  *end = e;
  return 0;
}

int cli_parse_dims(const char *s, nvhcq_dim3 *d) {
  uint32_t v[3] = {1, 1, 1};
  for (int i = 0; i < 3; i++) {
    const char *end;
    if (parse_u32(s, &end, &v[i])) return -1;
    if (*end == '\0') {
      *d = (nvhcq_dim3){v[0], v[1], v[2]};
      return 0;
    }
    if (*end != ',') return -1;
    s = end + 1;
  }
  return -1;
}

int cli_parse_buffer(const char *spec, cli_buffer_spec *out) {
  memset(out, 0, sizeof *out);
  if (!strncmp(spec, "file:", 5)) {
    out->path = spec + 5;
    return *out->path ? 0 : -1;
  }
  if (strncmp(spec, "buf:", 4) || spec[4] < '0' || spec[4] > '9') return -1;
  char *end;
  errno = 0;
  out->bytes = strtoull(spec + 4, &end, 10);
  if (errno || out->bytes == 0 || out->bytes > (1ull << 40)) return -1;
  if (*end == '\0') return 0;
  if (*end != ':') return -1;
  const char *fill = end + 1;
  if (!strcmp(fill, "iota32")) return out->fill = CLI_FILL_IOTA32, 0;
  if (!strcmp(fill, "iotaf32")) return out->fill = CLI_FILL_IOTAF32, 0;
  out->fill = CLI_FILL_U32;
  if (!strncmp(fill, "u32=", 4)) {
    unsigned long long v = strtoull(fill + 4, &end, 0);
    if (errno || *end || end == fill + 4 || v > 0xffffffffull) return -1;
    out->value = (uint32_t)v;
    return 0;
  }
  if (!strncmp(fill, "f32=", 4)) {
    float f = strtof(fill + 4, &end);
    if (*end || end == fill + 4) return -1;
    memcpy(&out->value, &f, 4);
    return 0;
  }
  return -1;
}

void cli_fill_buffer(const cli_buffer_spec *spec, unsigned char *host, size_t n) {
  memset(host, 0, n);
  for (size_t i = 0; i + 4 <= n && spec->fill != CLI_FILL_ZERO; i += 4) {
    uint32_t u = spec->value;
    float f = (float)(i / 4);
    if (spec->fill == CLI_FILL_IOTA32) u = (uint32_t)(i / 4);
    if (spec->fill == CLI_FILL_IOTAF32) memcpy(&u, &f, 4);
    memcpy(host + i, &u, 4);
  }
}

int cli_append(unsigned char *args, size_t *len, size_t cap, const void *v, size_t size) {
  size_t at = (*len + size - 1) / size * size; /* natural alignment, as the C ABI lays it out */
  if (at > cap || size > cap - at) return -1;
  memset(args + *len, 0, at - *len);
  memcpy(args + at, v, size);
  *len = at + size;
  return 0;
}

int cli_append_scalar(const char *spec, unsigned char *args, size_t *len, size_t cap) {
  const char *colon = strchr(spec, ':');
  if (!colon || colon - spec != 3 || !colon[1]) return -1;
  char type[4];
  memcpy(type, spec, 3);
  type[3] = '\0';
  const char *v = colon + 1;
  char *end;
  errno = 0;
  if (!strcmp(type, "i32") || !strcmp(type, "i64")) {
    long long x = strtoll(v, &end, 0);
    if (*end || errno) return -1;
    if (type[1] == '3') {
      if (x < INT32_MIN || x > INT32_MAX) return -1;
      int32_t y = (int32_t)x;
      return cli_append(args, len, cap, &y, 4);
    }
    return cli_append(args, len, cap, &x, 8);
  }
  if (!strcmp(type, "u32") || !strcmp(type, "u64")) {
    if (*v == '-') return -1;
    unsigned long long x = strtoull(v, &end, 0);
    if (*end || errno) return -1;
    if (type[1] == '3') {
      if (x > UINT32_MAX) return -1;
      uint32_t y = (uint32_t)x;
      return cli_append(args, len, cap, &y, 4);
    }
    return cli_append(args, len, cap, &x, 8);
  }
  if (!strcmp(type, "f32")) {
    float x = strtof(v, &end);
    return *end ? -1 : cli_append(args, len, cap, &x, 4);
  }
  if (!strcmp(type, "f64")) {
    double x = strtod(v, &end);
    return *end ? -1 : cli_append(args, len, cap, &x, 8);
  }
  return -1;
}
