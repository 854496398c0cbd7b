// Kernels test_cuda loads from nvcc's fatbins (SASS, and PTX that nvcc 13 compresses with zstd).
extern "C" __global__ void scale_add(float *out, const float *in, float a, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + out[i];
}
