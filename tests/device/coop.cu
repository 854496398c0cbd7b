// Cooperative launches: cooperative_groups' grid barrier across every block of the grid, and
// this_grid().is_valid() (test_compute runs them on a GPU).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each round every thread publishes its value, the grid synchronises, and each thread takes its
// mirror's value plus one: after `rounds` rounds thread i holds (rounds even) i + rounds, else
// n - 1 - i + rounds. A barrier that let any block through early would read an older round.
extern "C" __global__ void grid_rounds(int *buf, int *out, int n, int rounds) {
  cg::grid_group g = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i;
  for (int r = 0; r < rounds; r++) {
    buf[(r & 1) * n + i] = v;
    g.sync();
    v = buf[(r & 1) * n + (n - 1 - i)] + 1;
  }
  out[i] = v;
}

extern "C" __global__ void grid_valid(int *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = cg::this_grid().is_valid();
}
