# cuda-python's driver bindings (an unmodified driver-API client: every call goes through
# cuGetProcAddress) running kernels with exact results against nvhcq's libcuda.so.1:
#   LD_LIBRARY_PATH=$PWD/build/cuda python3 tests/cuda/cuda_python_check.py
# (not part of ctest: it needs cuda-python, a GPU and the toolkit's NVRTC). Prints one line per
# case and "cuda-python check passed" at the end; any mismatch raises.
import numpy as np

try:
    from cuda.bindings import driver as cu
    from cuda.bindings import nvrtc
except ImportError:  # cuda-python before 12.6
    from cuda import cuda as cu
    from cuda import nvrtc

SAXPY = b"""
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void count(unsigned int *c) { atomicAdd(c, 1u); }
"""


def ok(result):
    """The values of a (status, values...) tuple; raises on a failed status."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if status not in (cu.CUresult.CUDA_SUCCESS, nvrtc.nvrtcResult.NVRTC_SUCCESS):
        raise RuntimeError(f"call failed: {status}")
    return values[0] if len(values) == 1 else values


def compile_image(arch_option, cubin):
    prog = ok(nvrtc.nvrtcCreateProgram(SAXPY, b"saxpy.cu", 0, [], []))
    # no fused multiply-add: the results must equal numpy's a * x + y bit for bit
    ok(nvrtc.nvrtcCompileProgram(prog, 2, [arch_option, b"--fmad=false"]))
    size = ok((nvrtc.nvrtcGetCUBINSize if cubin else nvrtc.nvrtcGetPTXSize)(prog))
    image = b" " * size
    ok((nvrtc.nvrtcGetCUBIN if cubin else nvrtc.nvrtcGetPTX)(prog, image))
    ok(nvrtc.nvrtcDestroyProgram(prog))
    return image


def params(*args):
    """kernelParams: an array of pointers to each argument."""
    return np.array([arg.ctypes.data for arg in args], dtype=np.uint64)


def saxpy_case(name, image, stream):
    module = ok(cu.cuModuleLoadData(image))
    kernel = ok(cu.cuModuleGetFunction(module, b"saxpy"))
    n = 1 << 20
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    dx, dy, dout = (ok(cu.cuMemAlloc(n * 4)) for _ in range(3))
    ok(cu.cuMemcpyHtoDAsync(dx, x.ctypes.data, n * 4, stream))
    ok(cu.cuMemcpyHtoDAsync(dy, y.ctypes.data, n * 4, stream))
    a = np.array([2.5], dtype=np.float32)
    px, py, po = (np.array([int(d)], dtype=np.uint64) for d in (dx, dy, dout))
    nn = np.array([n], dtype=np.uint64)
    args = params(a, px, py, po, nn)
    ok(cu.cuLaunchKernel(kernel, n // 256, 1, 1, 256, 1, 1, 0, stream, args.ctypes.data, 0))
    ok(cu.cuMemcpyDtoHAsync(out.ctypes.data, dout, n * 4, stream))
    ok(cu.cuStreamSynchronize(stream))
    want = (np.float32(2.5) * x + y).astype(np.float32)
    bad = int(np.count_nonzero(out.view(np.uint32) != want.view(np.uint32)))
    assert bad == 0, f"{name}: {bad} of {n} results differ"
    for d in (dx, dy, dout):
        ok(cu.cuMemFree(d))
    print(f"saxpy from {name}: exact")
    return module


def graph_case(module, stream):
    kernel = ok(cu.cuModuleGetFunction(module, b"count"))
    counter = ok(cu.cuMemAlloc(4))
    ok(cu.cuMemsetD32(counter, 0, 1))
    pc = np.array([int(counter)], dtype=np.uint64)
    args = params(pc)
    ok(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    for _ in range(100):
        ok(cu.cuLaunchKernel(kernel, 4, 1, 1, 64, 1, 1, 0, stream, args.ctypes.data, 0))
    graph = ok(cu.cuStreamEndCapture(stream))
    exec_graph = ok(cu.cuGraphInstantiate(graph, 0))
    start, end = ok(cu.cuEventCreate(0)), ok(cu.cuEventCreate(0))
    ok(cu.cuEventRecord(start, stream))
    for _ in range(10):
        ok(cu.cuGraphLaunch(exec_graph, stream))
    ok(cu.cuEventRecord(end, stream))
    ok(cu.cuEventSynchronize(end))
    ms = ok(cu.cuEventElapsedTime(start, end))
    got = np.zeros(1, dtype=np.uint32)
    ok(cu.cuMemcpyDtoH(got.ctypes.data, counter, 4))
    assert int(got[0]) == 10 * 100 * 4 * 64, f"graph counted {int(got[0])}"
    print(f"captured graph, 10 launches of 100 nodes: exact ({ms * 1e3 / 1000:.2f} us per node)")
    ok(cu.cuGraphExecDestroy(exec_graph))
    ok(cu.cuGraphDestroy(graph))
    ok(cu.cuMemFree(counter))


def main():
    ok(cu.cuInit(0))
    device = ok(cu.cuDeviceGet(0))
    name = ok(cu.cuDeviceGetName(64, device))
    major = ok(cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    minor = ok(cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    label = bytes(name).split(b"\0")[0].decode()
    print(f"device: {label}, sm_{major}{minor}, driver {ok(cu.cuDriverGetVersion())}")
    context = ok(cu.cuDevicePrimaryCtxRetain(device))
    ok(cu.cuCtxSetCurrent(context))
    stream = ok(cu.cuStreamCreate(0))
    arch = f"{major}{minor}".encode()
    saxpy_case("PTX", compile_image(b"--gpu-architecture=compute_" + arch, False), stream)
    module = saxpy_case("cubin", compile_image(b"--gpu-architecture=sm_" + arch, True), stream)
    graph_case(module, stream)
    free, total = ok(cu.cuMemGetInfo())
    assert 0 < free <= total, (free, total)
    ok(cu.cuModuleUnload(module))
    ok(cu.cuStreamDestroy(stream))
    ok(cu.cuDevicePrimaryCtxRelease(device))
    print("cuda-python check passed")


if __name__ == "__main__":
    main()
