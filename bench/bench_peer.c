/* Copies between two GPUs: nvhcq_buffer_copy across devices (copy engine with peer access, staged
 * through host memory without) beside libcuda's cuMemcpyPeerAsync on the same pair, same run, in
 * both directions. Needs two GPUs; says SKIP with fewer. Usage: nvhcq_bench_peer [MiB ...] */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

#define REPS 10

static struct { cu_fn can_access, enable, peer_async, ctx_set; } cup;

/* The peer calls beside bench_util.h's table; 0 if libcuda lacks any. */
static int cuda_peer_load(void) {
  if (!cuda_load()) return 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  cup.can_access = (cu_fn)dlsym(lib, "cuDeviceCanAccessPeer");
  cup.enable = (cu_fn)dlsym(lib, "cuCtxEnablePeerAccess");
  cup.peer_async = (cu_fn)dlsym(lib, "cuMemcpyPeerAsync");
  cup.ctx_set = (cu_fn)dlsym(lib, "cuCtxSetCurrent");
  return cup.can_access && cup.enable && cup.peer_async && cup.ctx_set;
}

/* GB/s of the median of REPS copies of `bytes` from GPU `from` to GPU `to`. */
static double nvhcq_rate(nvhcq_device **dev, int from, int to, size_t bytes) {
  nvhcq_buffer *src, *dst;
  CHECK_NV(nvhcq_buffer_create(dev[from], bytes, NVHCQ_MEMORY_DEVICE, &src));
  CHECK_NV(nvhcq_buffer_create(dev[to], bytes, NVHCQ_MEMORY_DEVICE, &dst));
  CHECK_NV(nvhcq_buffer_copy(dst, 0, src, 0, bytes)); /* warm: first touch, clocks */
  double t[REPS];
  for (int r = 0; r < REPS; r++) {
    double t0 = now_s();
    CHECK_NV(nvhcq_buffer_copy(dst, 0, src, 0, bytes));
    t[r] = now_s() - t0;
  }
  CHECK_NV(nvhcq_buffer_destroy(src));
  CHECK_NV(nvhcq_buffer_destroy(dst));
  return bytes / median(t, REPS) / 1e9;
}

static double cuda_rate(void **ctx, int from, int to, size_t bytes) {
  uint64_t src, dst;
  void *stream;
  CHECK_CU(cup.ctx_set(ctx[from]));
  CHECK_CU(cu.mem_alloc(&src, bytes));
  CHECK_CU(cup.ctx_set(ctx[to]));
  CHECK_CU(cu.mem_alloc(&dst, bytes));
  CHECK_CU(cu.stream_create(&stream, 0));
  CHECK_CU(cup.peer_async(dst, ctx[to], src, ctx[from], bytes, stream));
  CHECK_CU(cu.stream_sync(stream));
  double t[REPS];
  for (int r = 0; r < REPS; r++) {
    double t0 = now_s();
    CHECK_CU(cup.peer_async(dst, ctx[to], src, ctx[from], bytes, stream));
    CHECK_CU(cu.stream_sync(stream));
    t[r] = now_s() - t0;
  }
  CHECK_CU(cu.stream_destroy(stream));
  CHECK_CU(cu.mem_free(dst));
  CHECK_CU(cup.ctx_set(ctx[from]));
  CHECK_CU(cu.mem_free(src));
  return bytes / median(t, REPS) / 1e9;
}

/* libcuda's primary contexts of GPUs 0 and 1 with peer access both ways; 0 if it cannot. */
static int cuda_pair(void **ctx) {
  if (!cuda_peer_load()) return 0;
  CHECK_CU(cu.init(0));
  int d[2], can = 0;
  for (int i = 0; i < 2; i++) {
    CHECK_CU(cu.device_get(&d[i], i));
    CHECK_CU(cu.primary_retain(&ctx[i], d[i]));
  }
  CHECK_CU(cup.can_access(&can, d[0], d[1]));
  if (!can) return 0;
  for (int i = 0; i < 2; i++) {
    CHECK_CU(cup.ctx_set(ctx[i]));
    CHECK_CU(cup.enable(ctx[1 - i], 0));
  }
  return 1;
}

int main(int argc, char **argv) {
  int count = 0;
  if (nvhcq_device_count(&count) || count < 2) {
    printf("SKIP: needs two GPUs (%d visible)\n", count);
    return 0;
  }
  nvhcq_device *dev[2];
  CHECK_NV(nvhcq_device_open(0, &dev[0]));
  CHECK_NV(nvhcq_device_open(1, &dev[1]));
  int can = 0;
  CHECK_NV(nvhcq_device_can_access_peer(dev[0], dev[1], &can));
  if (can) {
    CHECK_NV(nvhcq_device_enable_peer(dev[0], dev[1]));
    CHECK_NV(nvhcq_device_enable_peer(dev[1], dev[0]));
  }
  void *ctx[2] = {0};
  int have_cuda = getenv("NVHCQ_MOCK") == NULL && cuda_pair(ctx);
  printf("GPU 0 <-> GPU 1, %s; medians of %d copies, GB/s\n",
         can ? "peer access (copy engine)" : "no P2P path (staged through host memory)", REPS);
  printf("%10s %10s %12s %12s %8s\n", "MiB", "direction", "nvhcq", "libcuda", "ratio");
  static const size_t default_mib[] = {1, 16, 256, 1024};
  int n = argc > 1 ? argc - 1 : (int)(sizeof default_mib / sizeof default_mib[0]);
  for (int i = 0; i < n; i++) {
    size_t mib = argc > 1 ? strtoull(argv[i + 1], NULL, 10) : default_mib[i];
    for (int dir = 0; dir < 2; dir++) {
      double ours = nvhcq_rate(dev, dir, 1 - dir, mib << 20);
      double theirs = have_cuda ? cuda_rate(ctx, dir, 1 - dir, mib << 20) : 0;
      char cuda_col[32] = "-", ratio_col[32] = "-";
      if (have_cuda) {
        snprintf(cuda_col, sizeof cuda_col, "%.1f", theirs);
        snprintf(ratio_col, sizeof ratio_col, "%.3f", ours / theirs);
      }
      printf("%10zu %10s %12.1f %12s %8s\n", mib, dir ? "1 -> 0" : "0 -> 1", ours, cuda_col,
             ratio_col);
    }
  }
  CHECK_NV(nvhcq_device_close(dev[0]));
  CHECK_NV(nvhcq_device_close(dev[1]));
  return 0;
}
