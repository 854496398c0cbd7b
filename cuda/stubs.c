/* A definition for every symbol NVIDIA's library exports: weak ones that say "not supported"
 * (and, with NVHCQ_CUDA_LOG=1, name themselves), replaced at link time by the implemented ones. */
#include "stubs.h"

#define NVCU_STUB_(name)                                                                           \
  __attribute__((weak)) int name(void);                                                            \
  __attribute__((weak)) int name(void) {                                                           \
    return nvcu_stub(#name);                                                                       \
  }
#define X NVCU_STUB_
#include "exports.h"
