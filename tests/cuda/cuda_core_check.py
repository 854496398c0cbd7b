# cuda.core (NVIDIA's Pythonic CUDA API, 1.x: every call goes through cuda.bindings'
# cuGetProcAddress, no cudart) as an unmodified driver-API client of nvhcq's libcuda.so.1:
#   LD_LIBRARY_PATH=$PWD/build/cuda python3 tests/cuda/cuda_core_check.py
# and the same without LD_LIBRARY_PATH for NVIDIA's library (not part of ctest: it needs
# cuda.core, a GPU and the toolkit's NVRTC). Each case prints "ok" or what went wrong; the last
# line says how many passed. Results are compared with numpy, bit for bit where the GPU computes
# exactly.
import pickle
import subprocess
import sys
import time
import traceback

import numpy as np
from cuda.core import (
    Device,
    EventOptions,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)

CODE = r"""
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void add_one(unsigned int *c) { atomicAdd(c, 1u); }
extern "C" __global__ void scale(float *v, float s, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) v[i] *= s;
}
extern "C" __global__ void sample(cudaTextureObject_t t, float *out, const float *xy, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, xy[2 * i], xy[2 * i + 1]);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t t, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
extern "C" __global__ void surf_fill(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite((unsigned)(y * 1000 + x), s, x * 4, y);
}
extern "C" __global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_rank(unsigned *out) {
  unsigned r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  out[blockIdx.x] = r;
}
"""

dev = Device()
dev.set_current()
stream = dev.create_stream()
pinned = LegacyPinnedMemoryResource()
KERNELS = ("saxpy", "add_one", "scale", "sample", "fetch1d", "surf_fill", "cluster_rank", "spin")
prog = Program(CODE, code_type="c++", options=ProgramOptions(std="c++17", arch=f"sm_{dev.arch}"))
mod = prog.compile("cubin", name_expressions=KERNELS)
kern = {name: mod.get_kernel(name) for name in KERNELS}


def host_buffer(array):
    """Pinned host memory holding a copy of `array`, and a numpy view of it."""
    buf = pinned.allocate(array.nbytes)
    view = np.from_dlpack(buf).view(array.dtype)
    view[:] = array.reshape(-1)
    return buf, view


def case_properties():
    p = dev.properties
    assert dev.compute_capability[0] >= 7 and p.multiprocessor_count > 0
    assert p.max_threads_per_block == 1024 and p.warp_size == 32
    print(f"  {dev.name}, sm_{dev.arch}, {p.multiprocessor_count} SMs")


def case_saxpy_device_memory():
    n = 1 << 20
    rng = np.random.default_rng(1)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    hx, _ = host_buffer(x)
    hy, _ = host_buffer(y)
    hout, out = host_buffer(np.zeros(n, np.float32))
    dx, dy, dout = (dev.allocate(n * 4, stream=stream) for _ in range(3))
    dx.copy_from(hx, stream=stream)
    dy.copy_from(hy, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), kern["saxpy"],
           np.float32(2.5), dx, dy, dout, np.uint64(n))
    dout.copy_to(hout, stream=stream)
    stream.sync()
    # The GPU fuses the multiply and add: one rounding, which float64 arithmetic reproduces here
    # to within one unit in the last place.
    want = (2.5 * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    assert np.max(np.abs(out.view(np.int32) - want.view(np.int32))) <= 1
    for b in (dx, dy, dout):
        b.close(stream)


def timing_event_options():
    """EventOptions with timing on, whatever this cuda.core calls the switch."""
    for kwargs in ({"timing_enabled": True}, {"enable_timing": True}, {}):
        try:
            return EventOptions(**kwargs)
        except TypeError:
            continue


def case_fill_and_events():
    n = 1 << 16
    d = dev.allocate(n * 4, stream=stream)
    d.fill(0x3F, stream=stream)  # every byte: each float is 0x3f3f3f3f
    start = stream.record(options=timing_event_options())
    for _ in range(10):
        launch(stream, LaunchConfig(grid=n // 256, block=256), kern["scale"], d, np.float32(2), np.uint64(n))
    end = stream.record(options=timing_event_options())
    hout, out = host_buffer(np.zeros(n, np.float32))
    d.copy_to(hout, stream=stream)
    end.sync()
    stream.sync()
    ms = end - start
    assert np.all(out == np.array([0x3F3F3F3F], np.uint32).view(np.float32)[0] * 1024), out[:4]
    assert 0 < ms < 1000, ms
    print(f"  10 launches in {ms * 1000:.1f} us (events)")
    d.close(stream)


def case_graph_builder():
    counter = dev.allocate(4, stream=stream)
    counter.fill(0, stream=stream)
    stream.sync()
    gb = stream.create_graph_builder()
    gb.begin_building()
    for _ in range(100):
        launch(gb, LaunchConfig(grid=1, block=1), kern["add_one"], counter)
    graph = gb.end_building().complete()
    graph.upload(stream)
    for _ in range(5):
        graph.launch(stream)
    hc, c = host_buffer(np.zeros(1, np.uint32))
    counter.copy_to(hc, stream=stream)
    stream.sync()
    assert int(c[0]) == 500, int(c[0])


def case_texture():
    from cuda.core.texture import OpaqueArrayOptions, ResourceDescriptor, TextureObjectOptions
    w, h = 40, 24
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    img = (xs * 3 + ys * 200).astype(np.float32)
    arr = dev.create_opaque_array(OpaqueArrayOptions(shape=(w, h), format="float32", num_channels=1))
    arr.copy_from(img, stream=stream)
    stream.sync()
    opts = TextureObjectOptions(address_mode="clamp", filter_mode="linear")
    tex = dev.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr), options=opts)
    pts = [(x + 0.5, y + 0.5) for y in range(h) for x in range(w)]  # texel centres
    pts += [(1.0, 0.5), (0.5, 1.0), (10.0, 7.0), (39.5, 23.5), (-3.0, 30.0)]
    xy = np.array(pts, np.float32)
    hxy, _ = host_buffer(xy)
    hout, out = host_buffer(np.zeros(len(pts), np.float32))
    launch(stream, LaunchConfig(grid=(len(pts) + 127) // 128, block=128), kern["sample"],
           np.uint64(tex.handle), hout, hxy, np.int32(len(pts)))
    stream.sync()
    assert np.array_equal(out[: w * h], img.reshape(-1)), "texel centres differ"
    want = [1.5, 100.0, (9.5 * 3 + 6.5 * 200), img[h - 1, w - 1], img[h - 1, 0]]
    assert np.allclose(out[w * h:], want, atol=0.05), (out[w * h:], want)
    tex.close()
    arr.close()


def case_linear_texture():
    from cuda.core.texture import ResourceDescriptor
    n = 3000
    v = (np.arange(n, dtype=np.float32) * 0.5 - 7).astype(np.float32)
    hv, _ = host_buffer(v)
    d = dev.allocate(n * 4, stream=stream)
    d.copy_from(hv, stream=stream)
    tex = dev.create_texture_object(
        resource=ResourceDescriptor.from_linear(d, format="float32", num_channels=1))
    hout, out = host_buffer(np.zeros(n, np.float32))
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kern["fetch1d"],
           np.uint64(tex.handle), hout, np.int32(n))
    stream.sync()
    assert np.array_equal(out, v)
    tex.close()
    d.close(stream)


def case_surface():
    from cuda.core.texture import OpaqueArrayOptions, ResourceDescriptor
    w, h = 100, 30
    arr = dev.create_opaque_array(
        OpaqueArrayOptions(shape=(w, h), format="uint32", num_channels=1, is_surface_load_store=True))
    surf = dev.create_surface_object(resource=ResourceDescriptor.from_opaque_array(arr))
    launch(stream, LaunchConfig(grid=((w + 63) // 64, h), block=64), kern["surf_fill"],
           np.uint64(surf.handle), np.int32(w), np.int32(h))
    got = np.zeros((h, w), np.uint32)
    arr.copy_to(got, stream=stream)
    stream.sync()
    ys, xs = np.meshgrid(np.arange(h, dtype=np.uint32), np.arange(w, dtype=np.uint32), indexing="ij")
    assert np.array_equal(got, ys * 1000 + xs)
    surf.close()
    arr.close()


def case_pool_resources():
    """cuda.core's pool-backed host and managed memory (host and managed memory pools). Kernels
    use the managed memory; the host pool's memory is only copied (CUDA gives devices no access to
    it unless asked: NVIDIA's library faults on a kernel's access)."""
    from cuda.core import ManagedMemoryResource, PinnedMemoryResource
    n = 1 << 16
    pinned_pool = PinnedMemoryResource()
    managed_pool = ManagedMemoryResource()
    h = pinned_pool.allocate(n * 4, stream=stream)
    m = managed_pool.allocate(n * 4, stream=stream)
    d = dev.allocate(n * 4, stream=stream)
    hv = np.from_dlpack(h).view(np.float32)
    stream.sync()
    hv[:] = np.arange(n, dtype=np.float32)
    m.copy_from(h, stream=stream)
    launch(stream, LaunchConfig(grid=n // 256, block=256), kern["scale"], m, np.float32(3), np.uint64(n))
    d.copy_from(m, stream=stream)
    launch(stream, LaunchConfig(grid=n // 256, block=256), kern["scale"], d, np.float32(2), np.uint64(n))
    h.copy_from(d, stream=stream)
    stream.sync()
    mv = np.from_dlpack(m).view(np.float32)
    assert np.array_equal(mv, np.arange(n, dtype=np.float32) * 3)
    assert np.array_equal(hv, np.arange(n, dtype=np.float32) * 6)
    for b in (h, m, d):
        b.close(stream)
    stream.sync()


def case_cluster():
    n = 64
    hout, out = host_buffer(np.full(n, 99, np.uint32))
    launch(stream, LaunchConfig(grid=n, block=32, cluster=2), kern["cluster_rank"], hout)
    stream.sync()
    assert np.array_equal(out, np.arange(n, dtype=np.uint32) % 2), out[:8]


# The other process of case_ipc_event: opens the event, finds it not reached, waits for it.
IPC_CHILD = r"""
import pickle, sys, time
from cuda.core import Device, Event
Device().set_current()
ev = Event.from_ipc_descriptor(pickle.loads(bytes.fromhex(sys.argv[1])))
done_at_open = ev.is_done
t0 = time.monotonic()
ev.sync()
print(f"{done_at_open} {time.monotonic() - t0:.3f} {ev.is_done}")
"""


def case_ipc_event():
    """An IPC-enabled event recorded behind a 3-second kernel, opened by another process: not done
    there when opened, its sync waits until the kernel is through. The kernel is 3000 rounds of
    blocks of about a millisecond each: nvhcq lets another process's work (here its start) run
    between two blocks, not inside one (libcuda also preempts inside a block; README, Preemption)."""
    per_sm = getattr(dev.properties, "max_blocks_per_multiprocessor", 32)
    rounds = dev.properties.multiprocessor_count * per_sm
    launch(stream, LaunchConfig(grid=rounds * 3000, block=1), kern["spin"], np.int64(2_000_000))
    ev = stream.record(options=EventOptions(ipc_enabled=True))  # made by the record, as 1.2 asks
    assert ev.is_ipc_enabled
    desc = pickle.dumps(ev.ipc_descriptor).hex()
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", IPC_CHILD, desc], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    done_at_open, waited, done = out.stdout.split()
    assert done_at_open == "False" and done == "True", out.stdout
    assert ev.is_done, "the child's sync returned before the kernel was through"
    print(f"  the other process waited {float(waited):.2f} s (child ran {time.monotonic() - t0:.2f} s)")
    stream.sync()
    ev.close()


# Conditional nodes: kernels set the condition with cudaGraphSetConditional (declared as
# cuda.core's own tests declare it for NVRTC).
COND_CODE = r"""
extern "C" __device__ __cudart_builtin__ void CUDARTAPI
cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void set_handle(cudaGraphConditionalHandle h, unsigned int v) {
  cudaGraphSetConditional(h, v);
}
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, unsigned int *left) {
  cudaGraphSetConditional(h, --*left != 0);
}
extern "C" __global__ void add_one_u(unsigned int *c) { atomicAdd(c, 1u); }
"""


def case_conditional_builder():
    """GraphBuilder's create_condition, if_else and while_loop (cuda.core 1.2), the loop's body split
    in two and joined: for each
    condition the IF or the ELSE branch runs once, the body 5 times per launch, both halves."""
    names = ("set_handle", "count_down", "add_one_u")
    opts = ProgramOptions(std="c++17", arch=f"sm_{dev.arch}")
    m = Program(COND_CODE, code_type="c++", options=opts).compile("cubin", name_expressions=names)
    k = {name: m.get_kernel(name) for name in names}
    hc, c = host_buffer(np.zeros(5, np.uint32))  # if, else, left, half a, half b
    at = [np.uint64(int(hc.handle) + 4 * i) for i in range(5)]
    one = LaunchConfig(grid=1, block=1)
    for value in (1, 0, 7):
        c[:] = 0
        c[2] = 5
        gb = stream.create_graph_builder().begin_building()
        h = gb.create_condition()
        launch(gb, one, k["set_handle"], h, np.uint32(value))
        if_b, else_b = gb.if_else(h)
        if_b.begin_building()
        launch(if_b, one, k["add_one_u"], at[0])
        if_b.end_building()
        else_b.begin_building()
        launch(else_b, one, k["add_one_u"], at[1])
        else_b.end_building()
        h2 = gb.create_condition(default_value=1)
        body = gb.while_loop(h2)
        body.begin_building()
        launch(body, one, k["count_down"], h2, at[2])
        left, right = body.split(2)
        launch(left, one, k["add_one_u"], at[3])
        launch(right, one, k["add_one_u"], at[4])
        body = type(body).join(left, right)
        body.end_building()
        graph = gb.end_building().complete()
        graph.launch(stream)
        stream.sync()
        want = [1 if value else 0, 0 if value else 1, 0, 5, 5]
        assert list(c) == want, (value, list(c), want)
        graph.close()
    print("  IF/ELSE on 1, 0 and 7; WHILE 5 rounds with a split body")


CASES = [case_properties, case_saxpy_device_memory, case_fill_and_events, case_graph_builder,
         case_texture, case_linear_texture, case_surface, case_pool_resources, case_cluster,
         case_ipc_event, case_conditional_builder]
passed = 0
for case in CASES:
    try:
        case()
        passed += 1
        print(f"{case.__name__}: ok")
    except Exception:
        print(f"{case.__name__}: FAILED")
        traceback.print_exc(limit=4)
stream.close()
print(f"cuda.core check: {passed} passed, {len(CASES) - passed} failed")
sys.exit(0 if passed == len(CASES) else 1)
