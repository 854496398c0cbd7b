/* libFuzzer target: the `nvhcq run` argument parsers, on NUL-separated arbitrary strings. */
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  unsigned char args[64];
  size_t len = 0;
  for (char *s = text; s < text + size; s += strlen(s) + 1) {
    nvhcq_dim3 d;
    cli_buffer_spec spec;
    (void)cli_parse_dims(s, &d);
    if (cli_parse_buffer(s, &spec) == 0 && !spec.path && spec.bytes <= 4096) {
      unsigned char host[4096];
      cli_fill_buffer(&spec, host, (size_t)spec.bytes);
    }
    (void)cli_append_scalar(s, args, &len, sizeof args);
  }
  free(text);
  return 0;
}
