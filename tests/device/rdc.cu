// Relocatable device code (nvcc -rdc=true): the kernel calls a function that nvcc keeps in a
// .text section of its own, so the call's target is an R_CUDA_ABS55_16_34 relocation the loader
// applies (test_elf checks the fields, test_compute runs it).
extern "C" __device__ __noinline__ int twice_plus(int x, int k) { return 2 * x + k; }

extern "C" __device__ __noinline__ int twice_plus_again(int x, int k) {
  return twice_plus(x, k) - x;  // a call from one called function into another
}

extern "C" __global__ void call_across_sections(int *out, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[2 * i] = twice_plus(i, k);
  out[2 * i + 1] = twice_plus_again(i, k);
}
