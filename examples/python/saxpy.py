"""SAXPY from Python through nvhcq: CUDA C compiled at run time, run on the first GPU, checked
exactly against numpy. Run from the source tree: python3 examples/python/saxpy.py"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import numpy as np  # noqa: E402

import nvhcq  # noqa: E402

SOURCE = r"""
extern "C" __global__ void saxpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def main():
    if nvhcq.device_count() == 0:
        print("SKIP: needs a GPU")
        return 0
    n, a = 1 << 20, 2.0
    x = np.random.default_rng(0).standard_normal(n, np.float32)
    y = np.random.default_rng(1).standard_normal(n, np.float32)
    with nvhcq.Device(0) as dev:
        name = dev.info["name"]
        bx, by = dev.array(x), dev.array(y)
        mod = dev.module(SOURCE, options=["--fmad=false"])  # rounds as numpy does
        gpu_ns = mod.saxpy(by, bx, a, n, grid=n // 256, block=256)
        got = by.numpy(np.float32, (n,))
    expect = np.float32(a) * x + y
    ok = np.array_equal(got, expect)
    print(f"saxpy of {n} floats on {name}: "
          f"{gpu_ns / 1000:.1f} us, {3 * 4 * n / gpu_ns:.1f} GB/s, "
          f"{'matches numpy exactly' if ok else 'DIFFERS from numpy'}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except nvhcq.NvhcqError as e:
        print(f"SKIP: needs a GPU ({e.message})" if e.status_name in
              ("NVHCQ_ERROR_NO_DRIVER", "NVHCQ_ERROR_NO_DEVICE") else f"error: {e}")
        sys.exit(0 if e.status_name in ("NVHCQ_ERROR_NO_DRIVER", "NVHCQ_ERROR_NO_DEVICE") else 1)
