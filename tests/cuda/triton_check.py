# Triton's @triton.jit kernels, compiled by Triton and launched by Triton's own C launcher (which
# calls cuModuleLoadData, cuFuncGetAttribute, cuFuncSetAttribute, cuPointerGetAttribute,
# cuLaunchKernel and cuLaunchKernelEx), against whichever libcuda.so.1 the loader finds:
#   LD_LIBRARY_PATH=$PWD/build/cuda TRITON_LIBCUDA_PATH=$PWD/build/cuda \
#     python3 tests/cuda/triton_check.py
# (not part of ctest: it needs Triton and a GPU). Triton's CUDA driver asks torch for the device,
# its capability and the stream; torch's CUDA needs cudart, which nvhcq does not serve (README), so
# a driver that answers from the driver API takes its place and no torch call is made. Buffers are
# cuMemAlloc'd, with numpy dtypes. Prints one line per kernel and "triton check passed" at the end;
# any mismatch raises.
import ctypes
import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_check_"))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils  # noqa: E402

cu = ctypes.CDLL("libcuda.so.1")
for name in ("cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemFree_v2"):
    getattr(cu, name).argtypes = {
        "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
        "cuMemcpyHtoD_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t],
        "cuMemcpyDtoH_v2": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
        "cuMemFree_v2": [ctypes.c_uint64],
    }[name]


def check(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: CUresult {r} ({s.value})")


check(cu.cuInit(0), "cuInit")
device = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def attribute(n):
    v = ctypes.c_int()
    check(cu.cuDeviceGetAttribute(ctypes.byref(v), n, device), f"cuDeviceGetAttribute({n})")
    return v.value


CAPABILITY = (attribute(75), attribute(76))  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR


class DriverApiDriver(CudaDriver):
    """Triton's CUDA driver with the device, capability and stream from the driver API."""

    def __init__(self):  # GPUDriver's takes them from torch.cuda
        self.utils = CudaUtils()
        self.launcher_cls = CudaLauncher
        self.get_device_capability = lambda device=None: CAPABILITY
        self.get_current_stream = lambda device=None: 0
        self.get_current_device = lambda: 0
        self.set_current_device = lambda device: None


triton.runtime.driver.set_active(DriverApiDriver())


class Buffer:
    """Device memory holding a numpy array: what Triton's launcher takes as a pointer."""

    def __init__(self, array):
        self.dtype, self.shape, self.nbytes = array.dtype, array.shape, array.nbytes
        self.ptr = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(self.ptr), max(array.nbytes, 1)), "cuMemAlloc")
        self.write(array)

    def data_ptr(self):
        return self.ptr.value

    def write(self, array):
        a = np.ascontiguousarray(array)
        check(cu.cuMemcpyHtoD_v2(self.ptr.value, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def read(self):
        out = np.empty(self.shape, self.dtype)
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        check(cu.cuMemcpyDtoH_v2(out.ctypes.data, self.ptr.value, out.nbytes), "cuMemcpyDtoH")
        return out

    def __del__(self):
        cu.cuMemFree_v2(self.ptr.value)


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(out, x, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + offs, mask=offs < cols, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < cols)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        at = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        bt = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(at, bt)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def histogram_kernel(counts, x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(counts + tl.load(x + offs, mask=mask), 1, mask=mask)


def run_add(rng):
    n = 1_000_003
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    bx, by, bo = Buffer(x), Buffer(y), Buffer(np.zeros(n, np.float32))
    for _ in range(3):  # again from Triton's in-memory cache
        add_kernel[(triton.cdiv(n, 1024),)](bx, by, bo, n, BLOCK=1024)
    assert np.array_equal(bo.read(), x + y), "add: wrong sums"
    return f"{n} floats"


def run_softmax(rng):
    rows, cols = 777, 1000
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    bx, bo = Buffer(x), Buffer(np.zeros_like(x))
    softmax_kernel[(rows,)](bo, bx, cols, cols, BLOCK=1024, num_warps=4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    err = np.abs(bo.read() - e / e.sum(axis=1, keepdims=True)).max()
    assert err < 1e-6, f"softmax: max error {err}"
    return f"{rows}x{cols}, max error {err:.1e}"


def run_matmul(rng):
    m = n = k = 512
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    ba, bb, bc = Buffer(a), Buffer(b), Buffer(np.zeros((m, n), np.float32))
    grid = (m // 128, n // 128)
    matmul_kernel[grid](ba, bb, bc, m, n, k, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    want = a.astype(np.float32) @ b.astype(np.float32)
    err = np.abs(bc.read() - want).max() / np.abs(want).max()
    assert err < 1e-3, f"matmul: relative error {err}"
    return f"{m}x{n}x{k} fp16, relative error {err:.1e}"


def run_histogram(rng):
    n, bins = 1 << 20, 256
    x = rng.integers(0, bins, n, dtype=np.int32)
    bx, bc = Buffer(x), Buffer(np.zeros(bins, np.int32))
    histogram_kernel[(triton.cdiv(n, 4096),)](bc, bx, n, BLOCK=4096)
    assert np.array_equal(bc.read(), np.bincount(x, minlength=bins)), "histogram: wrong counts"
    return f"{n} values into {bins} bins"


def main():
    rng = np.random.default_rng(7)
    print(f"triton {triton.__version__}, compute capability {CAPABILITY[0]}.{CAPABILITY[1]}")
    for name, run in (("add", run_add), ("softmax", run_softmax), ("matmul", run_matmul),
                      ("histogram", run_histogram)):
        print(f"{name}: {run(rng)}: ok", flush=True)
    print("triton check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
