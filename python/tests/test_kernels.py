"""Kernels from CUDA C and PTX called with Python arguments, eager and recorded queues with
variables, graphs, and faults as exceptions; numpy results compared exactly. They need a GPU
(and NVRTC to compile); on the mock GPU they skip while it runs no kernels."""

import numpy as np
import pytest

import nvhcq
from conftest import on_mock, run_or_skip_on_mock

SOURCE = r"""
extern "C" __global__ void saxpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
struct Args { long long l; int i; double d; float f; char c; unsigned long long p; };
extern "C" __global__ void args(Args *out, long long l, int i, double d, float f, char c,
                                const void *p) {
  *out = Args{l, i, d, f, c, (unsigned long long)p};
}
extern "C" __global__ void fill(unsigned *out, unsigned value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}
extern "C" __global__ void store_to(unsigned *p) { *p = 1; }
"""


@pytest.fixture(scope="module")
def mod(dev):
    try:
        # No FMA contraction: a * x + y rounds twice, as numpy's float32 arithmetic does.
        return dev.module(SOURCE, options=["--fmad=false"])
    except nvhcq.NvhcqError as e:
        if e.status_name in ("NVHCQ_ERROR_COMPILE", "NVHCQ_ERROR_NOT_FOUND") and "NVRTC" in \
                e.message.upper():
            pytest.skip(f"SKIP: needs NVRTC to compile CUDA C ({e.message})")
        raise


def saxpy_reference(a, x, y):
    return (np.float32(a) * x + y).astype(np.float32)


def test_saxpy(dev, mod):
    n = 100_000
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    bx, by = dev.array(x), dev.array(y)
    gpu_ns = run_or_skip_on_mock(dev, mod.saxpy, by, bx, 2.5, n, grid=(n + 255) // 256,
                                 block=256)
    assert gpu_ns > 0
    assert np.array_equal(by.numpy(np.float32, (n,)), saxpy_reference(2.5, x, y))


def test_argument_types(dev, mod):
    out = dev.buffer(48)
    k = mod.args
    assert k.param_size == 48
    run_or_skip_on_mock(dev, k, out, np.int64(-5 << 40), -7, np.float64(0.1), 1.25, np.int8(-3),
                        out.ptr(8), grid=1, block=1)
    raw = out.read(40)
    rec = np.frombuffer(raw, dtype=np.dtype([("l", "<i8"), ("i", "<i4"), ("d", "<f8"),
                                             ("f", "<f4"), ("c", "i1"), ("p", "<u8")],
                                            align=True))[0]
    assert (rec["l"], rec["i"], rec["d"], rec["f"], rec["c"]) == (-5 << 40, -7, 0.1, 1.25, -3)
    assert rec["p"] == out.gpu_address + 8


def test_wrong_arguments_are_refused(mod):
    with pytest.raises(ValueError, match="takes 24 bytes"):
        mod.saxpy.pack(1, 2)


def test_eager_queue(dev, mod):
    n = 4096
    out = dev.buffer(4 * n)
    done = dev.signal()
    q = dev.queue()
    q.launch(mod.fill, n // 256, 256, out, 100, n)
    q.barrier()
    q.launch(mod.fill, n // 512, 256, out, 7, n // 2)
    q.signal(done, 1)
    q.submit()
    run_or_skip_on_mock(dev, done.wait, 1)
    expect = np.arange(n, dtype=np.uint32) + 100
    expect[:n // 2] = np.arange(n // 2, dtype=np.uint32) + 7
    assert np.array_equal(out.numpy(np.uint32), expect)


def test_recorded_queue_variables(dev, mod):
    n = 2048
    a, b = dev.buffer(4 * n), dev.buffer(4 * n)
    q = dev.queue(recorded=True)
    ptr, value, count = q.var("out", a), q.var("value", 1), q.var("n", n)
    grid = q.var("grid", n // 256)
    q.launch(mod.fill, (grid,), 256, ptr, value, count)
    q.finish()
    q.submit()
    run_or_skip_on_mock(dev, q.wait_idle)
    assert np.array_equal(a.numpy(np.uint32), np.arange(n, dtype=np.uint32) + 1)
    ptr.set(b)
    value.set(50)
    count.set(n // 2)
    grid.set(n // 512)
    q.submit()
    q.wait_idle()
    got = b.numpy(np.uint32)
    assert np.array_equal(got[:n // 2], np.arange(n // 2, dtype=np.uint32) + 50)


def test_variable_with_offset(dev, mod):
    n = 256
    out = dev.buffer(8 * n)
    q = dev.queue(recorded=True)
    base = q.var("base", out)
    q.launch(mod.fill, 1, n, base + 4 * n, 9, n)
    q.finish()
    q.submit()
    run_or_skip_on_mock(dev, q.wait_idle)
    assert np.array_equal(out.numpy(np.uint32)[n:], np.arange(n, dtype=np.uint32) + 9)


def test_graph_launch_then_copy(dev, mod):
    n = 1024
    a, b = dev.buffer(4 * n), dev.buffer(4 * n)
    g = dev.graph()
    value = g.var("value", 3)
    k = g.add_launch(mod.fill, n // 256, 256, a, value, n)
    g.add_copy(b, a, 4 * n, deps=[k])
    g.instantiate()
    g.launch()
    run_or_skip_on_mock(dev, g.wait)
    assert np.array_equal(b.numpy(np.uint32), np.arange(n, dtype=np.uint32) + 3)
    g.set_var(value, 11)
    g.launch()
    g.wait()
    assert np.array_equal(b.numpy(np.uint32), np.arange(n, dtype=np.uint32) + 11)


def test_fault_is_an_exception(dev, mod):
    if on_mock():
        pytest.skip("SKIP: the mock GPU faults every kernel while it runs none")
    with pytest.raises(nvhcq.NvhcqError) as e:
        mod.store_to(nvhcq.Pointer(0x40000000), grid=1, block=1)
    assert e.value.status_name == "NVHCQ_ERROR_GPU_FAULT"
    assert "fault" in e.value.message.lower()
    dev.recover()
    out = dev.buffer(4)
    mod.store_to(out, grid=1, block=1)
    assert out.numpy(np.uint32)[0] == 1
