// A grid barrier through libcudadevrt (cudaCGGetIntrinsicHandle / cudaCGSynchronize, what -rdc
// code and numba's this_grid().sync() call), built -rdc=true and device-linked with
// libcudadevrt: its calls end in the driver-provided __cuda_syscall_CGS_* nvhcq implements.
// The same rounds as coop.cu's grid_rounds: thread i ends with i + rounds for even rounds.
extern "C" __global__ void devrt_grid_rounds(int *buf, int *out, int n, int rounds) {
  unsigned long long grid = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i, failed = 0;
  for (int r = 0; r < rounds; r++) {
    buf[(r & 1) * n + i] = v;
    failed |= cudaCGSynchronize(grid, 0) != cudaSuccess;
    v = buf[(r & 1) * n + (n - 1 - i)] + 1;
  }
  out[i] = failed ? -1 : v;
}
