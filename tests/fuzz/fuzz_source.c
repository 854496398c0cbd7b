/* libFuzzer target: telling cubins, PTX and CUDA C apart, on arbitrary bytes. */
#include "nvhcq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nvhcq_source_kind k = nvhcq_source_detect(data, size);
  return k > NVHCQ_SOURCE_CUDA; /* never true: only keeps the call */
}
