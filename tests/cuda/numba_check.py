# numba-cuda kernels with exact results, to run against nvhcq's libcuda.so.1 on a GPU machine:
#   NUMBA_CUDA_DRIVER=$PWD/build/cuda/libcuda.so.1 LD_LIBRARY_PATH=$PWD/build/cuda \
#     python3 tests/cuda/numba_check.py
# (not part of ctest: it needs numba-cuda, a GPU and the toolkit's nvJitLink). Prints one line per
# kernel and "numba check passed" at the end; any mismatch raises.
import os
import sys

import numpy as np

np.row_stack = np.vstack  # the GPU machine's numpy lacks it; numba-cuda still uses it
from numba import cuda  # noqa: E402


@cuda.jit
def axpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = a * x[i] + y[i]


@cuda.jit
def count(counter, n):
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(counter, 0, 1)


@cuda.jit
def block_sums(out, x):
    s = cuda.shared.array(256, dtype=np.int64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    step = 128
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def transpose(out, a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[j, i] = a[i, j]


def main():
    print("driver:", os.environ.get("NUMBA_CUDA_DRIVER", "(default)"))
    dev = cuda.get_current_device()
    print("device:", dev.name, "cc", dev.compute_capability)
    free, total = cuda.current_context().get_memory_info()
    assert 0 < free <= total

    n = 1 << 20
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 2.0, dtype=np.float32)
    r = cuda.device_array(n, dtype=np.float32)
    axpy[(n + 255) // 256, 256](r, np.float32(3.0), cuda.to_device(x), cuda.to_device(y))
    assert np.array_equal(r.copy_to_host(), np.float32(3.0) * x + y)
    print("axpy: exact")

    counter = cuda.to_device(np.zeros(1, dtype=np.uint32))
    count[1000, 128](counter, 100000)
    assert counter.copy_to_host()[0] == 100000
    print("atomic count: 100000")

    v = np.arange(1 << 16, dtype=np.int64) * 7 - 12345
    sums = cuda.device_array(256, dtype=np.int64)
    block_sums[256, 256](sums, cuda.to_device(v))
    assert np.array_equal(sums.copy_to_host(), v.reshape(256, 256).sum(axis=1))
    print("shared-memory block sums: exact")

    a = np.arange(300 * 500, dtype=np.int32).reshape(300, 500)
    out = cuda.device_array((500, 300), dtype=np.int32)
    transpose[(19, 32), (16, 16)](out, cuda.to_device(a))
    assert np.array_equal(out.copy_to_host(), a.T)
    print("2D transpose: exact")

    stream = cuda.stream()
    h = cuda.pinned_array(n, dtype=np.float32)
    h[:] = x
    d = cuda.to_device(h, stream=stream)
    axpy[(n + 255) // 256, 256, stream](d, np.float32(0.5), d, d)
    d.copy_to_host(h, stream=stream)
    stream.synchronize()
    assert np.array_equal(h, np.float32(0.5) * x + x)
    print("stream, pinned memory: exact")
    print("numba check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
