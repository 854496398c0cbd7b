/* libFuzzer target: the cubin parser and relocation on arbitrary bytes. */
#include <stdlib.h>
#include <string.h>

#include "elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nvhcq_cubin *c;
  if (nvhcq_cubin_parse(data, size, &c) == NVHCQ_SUCCESS) {
    for (uint32_t i = 0; i < c->kernel_count; i++)
      (void)nvhcq_cubin_find_kernel(c, c->kernels[i].name);
    for (uint32_t i = 0; i < c->function_count; i++)
      (void)nvhcq_cubin_find_function(c, c->functions[i].name);
    /* A damaged NOBITS size may ask for up to 1 TiB of zeros: such images are not written. */
    uint8_t *image = c->memory_size <= (64u << 20) ? malloc(c->memory_size + 1) : NULL;
    /* the device syscalls' addresses, for cubins that call printf, assert, malloc or free */
    static const uint64_t imports[NVHCQ_CUBIN_MAX_IMPORTS] = {0x7e0000000000ull, 0x7e0000001000ull,
                                                              0x7e0000002000ull, 0x7e0000003000ull};
    if (image && nvhcq_cubin_write_image(c, data, size, image) == NVHCQ_SUCCESS)
      (void)!nvhcq_cubin_relocate_imports(c, image, 0x7f0000000000ull, imports);
    free(image);
    (void)!nvhcq_cubin_check_arch(c, 90);
    nvhcq_cubin_free(c);
  }
  return 0;
}
