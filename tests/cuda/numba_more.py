# More of numba-cuda against nvhcq's libcuda.so.1, each case checked exactly, to run on a GPU
# machine (not part of ctest: it needs numba-cuda, a GPU and the toolkit's nvJitLink):
#   NUMBA_CUDA_DRIVER=$PWD/build/cuda/libcuda.so.1 LD_LIBRARY_PATH=$PWD/build/cuda \
#     python3 tests/cuda/numba_more.py
# Run without NUMBA_CUDA_DRIVER it checks the same against NVIDIA's library. Every case prints
# "ok" or "FAILED" with the reason; the last line counts them, and the exit status is the count
# of failures.
import math
import os
import sys
import traceback

import numpy as np

np.row_stack = np.vstack  # the GPU machine's numpy lacks it; numba-cuda still uses it
from numba import cuda, float32, int32, vectorize  # noqa: E402
from numba.cuda.random import (  # noqa: E402
    create_xoroshiro128p_states,
    xoroshiro128p_uniform_float32,
)

CASES = []


def case(f):
    CASES.append(f)
    return f


@cuda.jit(device=True)
def square_plus(a, b):
    return a * a + b


@cuda.jit
def use_device_function(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = square_plus(x[i], 1.0)


@case
def device_functions():
    x = np.arange(4096, dtype=np.float64)
    out = cuda.device_array_like(x)
    use_device_function[16, 256](out, cuda.to_device(x))
    assert np.array_equal(out.copy_to_host(), x * x + 1.0)


@cuda.jit
def local_sort(out, x):
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    a = cuda.local.array(8, dtype=int32)
    for k in range(8):
        a[k] = x[i, k]
    for k in range(8):
        for m in range(7 - k):
            if a[m] > a[m + 1]:
                a[m], a[m + 1] = a[m + 1], a[m]
    for k in range(8):
        out[i, k] = a[k]


@case
def local_arrays():
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, size=(2000, 8)).astype(np.int32)
    out = cuda.device_array_like(x)
    local_sort[8, 256](out, cuda.to_device(x))
    assert np.array_equal(out.copy_to_host(), np.sort(x, axis=1))


@cuda.jit
def dyn_shared_reverse(out, x):
    s = cuda.shared.array(0, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i]
    cuda.syncthreads()
    out[i] = s[cuda.blockDim.x - 1 - t]


@case
def dynamic_shared_memory():
    x = np.arange(512 * 64, dtype=np.float32)
    out = cuda.device_array_like(x)
    dyn_shared_reverse[64, 512, 0, 512 * 4](out, cuda.to_device(x))
    assert np.array_equal(out.copy_to_host(), x.reshape(64, 512)[:, ::-1].reshape(-1))


@cuda.jit
def float_atomics(acc, mx, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(acc, 0, x[i])
        cuda.atomic.max(mx, 0, x[i])


@cuda.jit
def cas_count(slot, out):
    i = cuda.grid(1)
    if i < out.size:
        while True:
            old = slot[0]
            if cuda.atomic.compare_and_swap(slot, old, old + 1) == old:
                out[i] = old
                break


@case
def atomics():
    x = np.arange(4096, dtype=np.float32)  # every partial sum is an integer below 2^24: exact
    acc = cuda.to_device(np.zeros(1, dtype=np.float32))
    mx = cuda.to_device(np.full(1, -1.0, dtype=np.float32))
    float_atomics[16, 256](acc, mx, cuda.to_device(x))
    assert acc.copy_to_host()[0] == x.sum() and mx.copy_to_host()[0] == 4095.0
    slot = cuda.to_device(np.zeros(1, dtype=np.int32))
    out = cuda.device_array(5000, dtype=np.int32)
    cas_count[20, 250](slot, out)
    assert slot.copy_to_host()[0] == 5000
    assert np.array_equal(np.sort(out.copy_to_host()), np.arange(5000, dtype=np.int32))


@cuda.jit
def warp_sum(out, x):
    i = cuda.grid(1)
    v = x[i]
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.laneid == 0:
        out[i // 32] = v
    n = cuda.syncthreads_count(int32(1) if x[i] % 2 == 0 else int32(0))
    if cuda.threadIdx.x == 0:
        out[4096 + cuda.blockIdx.x] = n


@case
def warp_intrinsics():
    x = np.arange(256 * 512, dtype=np.int64) % 1000
    out = cuda.device_array(4096 + 512, dtype=np.int64)
    warp_sum[512, 256](out, cuda.to_device(x))
    got = out.copy_to_host()
    assert np.array_equal(got[:4096], x.reshape(4096, 32).sum(axis=1))
    assert np.array_equal(got[4096:], (x.reshape(512, 256) % 2 == 0).sum(axis=1))


@vectorize(["float32(float32, float32)"], target="cuda")
def hypot_ufunc(a, b):
    return math.sqrt(a * a + b * b)


@case
def ufuncs():
    a = np.arange(100000, dtype=np.float32) % 97
    b = np.arange(100000, dtype=np.float32) % 89
    got = hypot_ufunc(a, b)
    want = np.sqrt(a * a + b * b)
    assert np.allclose(got, want, rtol=1e-6, atol=0)


@case
def reductions():
    x = np.arange(1 << 20, dtype=np.int64)
    total = cuda.reduce(lambda a, b: a + b)(x)
    assert total == x.sum()


@cuda.jit
def libdevice_math(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.exp(x[i]) + math.sin(x[i]) + math.log1p(x[i]) + math.erf(x[i])


@case
def math_functions():
    x = np.linspace(0, 4, 10000)
    out = cuda.device_array_like(x)
    libdevice_math[40, 256](out, cuda.to_device(x))
    want = np.exp(x) + np.sin(x) + np.log1p(x) + np.array([math.erf(v) for v in x])
    assert np.allclose(out.copy_to_host(), want, rtol=1e-14, atol=1e-14)


@cuda.jit
def random_fill(states, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = xoroshiro128p_uniform_float32(states, i)


@case
def random_numbers():
    n = 1 << 16
    outs = []
    for _ in range(2):
        states = create_xoroshiro128p_states(n, seed=42)
        out = cuda.device_array(n, dtype=np.float32)
        random_fill[n // 256, 256](states, out)
        outs.append(out.copy_to_host())
    assert np.array_equal(outs[0], outs[1])
    assert 0.0 <= outs[0].min() and outs[0].max() < 1.0 and abs(outs[0].mean() - 0.5) < 0.01


@cuda.jit
def scale3d(a, k):
    x, y, z = cuda.grid(3)
    if x < a.shape[0] and y < a.shape[1] and z < a.shape[2]:
        a[x, y, z] *= k


@case
def grids_3d_and_slices():
    a = np.arange(30 * 40 * 50, dtype=np.float32).reshape(30, 40, 50)
    d = cuda.to_device(a)
    scale3d[(4, 5, 7), (8, 8, 8)](d, np.float32(2.0))
    assert np.array_equal(d.copy_to_host(), a * 2)
    d2 = cuda.to_device(np.arange(1000, dtype=np.int32))
    part = d2[100:200].copy_to_host()
    assert np.array_equal(part, np.arange(100, 200, dtype=np.int32))
    d2[500:600].copy_to_device(np.zeros(100, dtype=np.int32))
    h = d2.copy_to_host()
    assert (h[500:600] == 0).all() and h[499] == 499 and h[600] == 600


@cuda.jit
def add_const(a, k):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += k


@case
def streams_events():
    n = 1 << 22
    s1, s2 = cuda.stream(), cuda.stream()
    h1 = cuda.pinned_array(n, dtype=np.float32)
    h2 = cuda.pinned_array(n, dtype=np.float32)
    h1[:] = 1.0
    h2[:] = 2.0
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    start.record(s1)
    d1 = cuda.to_device(h1, stream=s1)
    d2 = cuda.to_device(h2, stream=s2)
    for _ in range(10):
        add_const[n // 256, 256, s1](d1, np.float32(1.0))
        add_const[n // 256, 256, s2](d2, np.float32(3.0))
    done2 = cuda.event()
    done2.record(s2)
    done2.wait(s1)
    d1.copy_to_host(h1, stream=s1)
    d2.copy_to_host(h2, stream=s1)
    end.record(s1)
    end.synchronize()
    assert (h1 == 11.0).all() and (h2 == 32.0).all()
    ms = cuda.event_elapsed_time(start, end)
    assert ms > 0
    assert end.query()


@case
def mapped_host_memory():
    m = cuda.mapped_array(10000, dtype=np.float32)
    m[:] = np.arange(10000, dtype=np.float32)
    add_const[40, 256](m, np.float32(0.5))
    cuda.synchronize()
    assert np.array_equal(np.asarray(m), np.arange(10000, dtype=np.float32) + 0.5)


@case
def registered_host_memory():
    h = np.arange(1 << 18, dtype=np.float32)
    with cuda.pinned(h):
        d = cuda.to_device(h)
        add_const[1024, 256](d, np.float32(1.0))
        d.copy_to_host(h)
    assert np.array_equal(h, np.arange(1 << 18, dtype=np.float32) + 1)


@case
def managed_memory():
    m = cuda.managed_array(10000, dtype=np.float64)
    m[:] = np.arange(10000, dtype=np.float64)
    add_const[40, 256](m, 2.0)
    cuda.synchronize()
    assert np.array_equal(np.asarray(m), np.arange(10000, dtype=np.float64) + 2)


@cuda.jit
def grid_sync_prefix(buf, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    buf[i] = i
    g.sync()
    out[i] = buf[buf.size - 1 - i]


@case
def cooperative_grid_sync():
    n = 64 * 128
    buf = cuda.device_array(n, dtype=np.int32)
    out = cuda.device_array(n, dtype=np.int32)
    grid_sync_prefix[64, 128](buf, out)
    assert np.array_equal(out.copy_to_host(), np.arange(n - 1, -1, -1, dtype=np.int32))


CONST = np.arange(64, dtype=np.float32) * 3


@cuda.jit
def use_const(out):
    c = cuda.const.array_like(CONST)
    i = cuda.grid(1)
    if i < out.size:
        out[i] = c[i % 64]


@case
def constant_memory():
    out = cuda.device_array(1000, dtype=np.float32)
    use_const[4, 256](out)
    assert np.array_equal(out.copy_to_host(), CONST[np.arange(1000) % 64])


@case
def device_memset_and_copies():
    d = cuda.device_array(1 << 20, dtype=np.uint8)
    d.copy_to_device(np.full(1 << 20, 7, dtype=np.uint8))
    e = cuda.device_array_like(d)
    e.copy_to_device(d)  # device to device
    assert (e.copy_to_host() == 7).all()
    free, total = cuda.current_context().get_memory_info()
    assert 0 < free <= total


def main():
    print("driver:", os.environ.get("NUMBA_CUDA_DRIVER", "(NVIDIA's)"))
    dev = cuda.get_current_device()
    print("device:", dev.name, "cc", dev.compute_capability)
    failed = 0
    for f in CASES:
        try:
            f()
            print("%-28s ok" % f.__name__)
        except Exception as e:  # report every case, not only the first failure
            failed += 1
            print("%-28s FAILED: %s: %s" % (f.__name__, type(e).__name__, str(e)[:300]))
            traceback.print_exc(limit=3, file=sys.stdout)
    print("numba more: %d of %d cases passed" % (len(CASES) - failed, len(CASES)))
    return failed


if __name__ == "__main__":
    sys.exit(main())
