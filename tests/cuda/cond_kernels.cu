// A kernel that sets a conditional graph node's condition, for test_cuda_cond. Built with nvcc
// -cubin, not -rdc: cudaGraphSetConditional stays undefined for the loader to resolve (through
// constant bank 4), as it is in any nvcc-built kernel.
#include <cuda_runtime.h>

// The condition of handle h becomes v in block 0's thread 0; every thread adds 1 to *count.
extern "C" __global__ void set_condition(cudaGraphConditionalHandle h, unsigned v,
                                         unsigned *count) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, v);
  atomicAdd(count, 1u);
}
