/* Parsing of `nvhcq run` arguments, apart from the GPU work so it can be tested and fuzzed. */
#ifndef NVHCQ_CLI_ARGS_H
#define NVHCQ_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "nvhcq.h"

typedef enum cli_fill { CLI_FILL_ZERO, CLI_FILL_IOTA32, CLI_FILL_IOTAF32, CLI_FILL_U32 } cli_fill;

typedef struct cli_buffer_spec {
  const char *path; /* "file:PATH": fill from this file; NULL otherwise */
  unsigned long long bytes;
  cli_fill fill;
  uint32_t value; /* the 32-bit pattern for CLI_FILL_U32 (f32=V is stored as its bits) */
} cli_buffer_spec;

/* "X", "X,Y" or "X,Y,Z", each 1 to 2^32-1; missing dimensions are 1. 0 on success. */
int cli_parse_dims(const char *s, nvhcq_dim3 *d);
/* "buf:BYTES[:iota32|:iotaf32|:u32=V|:f32=V]" or "file:PATH". 0 on success. */
int cli_parse_buffer(const char *spec, cli_buffer_spec *out);
/* Fills n bytes of host memory as the spec says (not for file buffers). */
void cli_fill_buffer(const cli_buffer_spec *spec, unsigned char *host, size_t n);
/* "i32:V", "u32:V", "i64:V", "u64:V", "f32:V", "f64:V" appended at its natural alignment to
 * args (capacity cap). 0 on success; nothing is written on failure. */
int cli_append_scalar(const char *spec, unsigned char *args, size_t *len, size_t cap);
/* Appends raw bytes at natural alignment (size 4 or 8). */
int cli_append(unsigned char *args, size_t *len, size_t cap, const void *v, size_t size);

#endif
