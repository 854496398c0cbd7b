// Kernels of the start-up benchmark: an empty one (init to first kernel) and one that runs for a
// given time on the GPU's global timer (the work that frees overlap).
#include <stdint.h>

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void sleep_kernel(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
