"""Launching kernels Triton compiled (the result of triton.compile) through nvhcq: no torch, no
libcuda. The cubin is compiled.asm["cubin"]; the launch takes its name, num_warps (the block is
num_warps warps), shared (dynamic shared memory bytes), and the signature of compiled.src: the
arguments the kernel takes, in order, each laid out as Triton's launcher passes it (pointers 8
bytes, i1/i8 1, i16/fp16/bf16 2, i32/fp32 4, i64/fp64 8, at natural alignment), constexpr and
specialised arguments left out. Newer Triton appends hidden pointer parameters (the global
scratch, then the profile scratch): they are given buffers of grid size x num_ctas x their
metadata size, or 0 where their size is 0.

    compiled = triton.compile(triton.compiler.ASTSource(fn=add, signature=..., constexprs=...),
                              target=triton.backends.compiler.GPUTarget("cuda", 90, 32))
    nvhcq.triton.launch(compiled, (n // 1024,), x, y, out, n)   # numpy arrays or nvhcq Buffers
"""

import ctypes
import struct

from .args import Pointer, Raw
from .core import Buffer, Device, _dim3, _fixed_dim3, check, lib

try:
    import numpy as np
except ImportError:
    np = None

# Triton's scalar types: (struct format, bytes).
_SCALARS = {
    "i1": ("<b", 1), "u1": ("<B", 1), "i8": ("<b", 1), "u8": ("<B", 1),
    "i16": ("<h", 2), "u16": ("<H", 2), "i32": ("<i", 4), "u32": ("<I", 4),
    "i64": ("<q", 8), "u64": ("<Q", 8), "fp32": ("<f", 4), "f32": ("<f", 4), "fp64": ("<d", 8),
}

_default_device = None
_modules = {}  # (device, cubin) -> (module, kernel): a kernel is loaded once per device


def _meta(compiled, key, default=None):
    """A field of compiled.metadata (a namedtuple in Triton 3, a dict in Triton 2), or of
    compiled itself."""
    md = getattr(compiled, "metadata", None)
    if isinstance(md, dict) and key in md:
        return md[key]
    if md is not None and hasattr(md, key):
        return getattr(md, key)
    return getattr(compiled, key, default)


def _signature(compiled):
    """The kernel's runtime parameters as [(position in the Python function, type)], and the
    number of arguments the Python function takes; None when compiled.src has no signature."""
    src = getattr(compiled, "src", None)
    sig = getattr(src, "signature", None)
    if not sig:
        return None, None
    names = list(getattr(getattr(src, "fn", None), "arg_names", None) or [])
    constants = dict(getattr(src, "constants", None) or {})
    constants.update(getattr(src, "constexprs", None) or {})

    def position(key):
        if isinstance(key, tuple):  # Triton 3.2+: constants keyed by index paths
            key = key[0]
        if isinstance(key, str):
            return names.index(key) if key in names else None
        return key

    fixed = {position(k) for k in constants}
    params = []
    for i, (key, ty) in enumerate(sig.items()):
        pos = position(key)
        pos = i if pos is None else pos
        if ty == "constexpr" or pos in fixed:
            continue
        if isinstance(ty, tuple) or str(ty).startswith("tensordesc") or ty == "nvTmaDesc":
            raise NotImplementedError(f"argument {key!r} of type {ty}: nvhcq.triton.launch "
                                      "takes pointers and scalars, not tuples or tensor "
                                      "descriptors")
        params.append((pos, ty))
    total = len(names) if names else max(len(sig), max((p for p, _ in params), default=-1) + 1)
    return params, total


def _half_bits(value, ty):
    if ty == "fp16":
        return np.float16(value).tobytes()
    # bf16: float32's top half, rounded to nearest even.
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def _pointer(arg, device, staged):
    """The GPU address of a pointer argument: a Buffer, buf.ptr(n), an int, None (0) or a numpy
    array (copied to the device before the launch and back after it)."""
    if arg is None:
        return 0
    if isinstance(arg, (Buffer, Pointer)):
        return int(arg.gpu_address if isinstance(arg, Buffer) else arg)
    if np is not None and isinstance(arg, np.ndarray):
        buf = Buffer(device, max(arg.nbytes, 1))
        buf.copy_from(arg)
        staged.append((arg, buf))
        return buf.gpu_address
    if isinstance(arg, int):
        return arg
    raise TypeError(f"a pointer argument takes an nvhcq Buffer, buf.ptr(n), a numpy array, an "
                    f"address or None, not {type(arg).__name__} (torch tensors live in libcuda's "
                    "memory, which nvhcq does not see)")


def pack_args(compiled, args, device=None, staged=None):
    """The parameter block of the kernel's own arguments (before Triton's hidden scratch
    pointers), from the arguments of the Python function (constexprs included, as
    compiled[grid](*args) takes them) or of the kernel alone."""
    params, total = _signature(compiled)
    staged = [] if staged is None else staged
    if params is None:
        raise ValueError("compiled.src has no signature: pass a CompiledKernel from "
                         "triton.compile(ASTSource(...))")
    if len(args) == total:
        values = [args[pos] for pos, _ in params]
    elif len(args) == len(params):
        values = list(args)
    else:
        raise TypeError(f"{_meta(compiled, 'name')} takes {total} arguments ({len(params)} at run "
                        f"time, the rest constexpr or specialised); {len(args)} were given")
    block = bytearray()
    for (_, ty), value in zip(params, values):
        if ty.startswith("*"):
            data = struct.pack("<Q", _pointer(value, device, staged))
        elif ty in ("fp16", "bf16"):
            data = _half_bits(value, ty)
        elif ty in _SCALARS:
            fmt, _ = _SCALARS[ty]
            data = struct.pack(fmt, float(value) if "f" in fmt or "d" in fmt else int(value))
        else:
            raise NotImplementedError(f"Triton type {ty} is not known to nvhcq.triton")
        block += bytes(-len(block) % len(data)) + data
    return bytes(block)


def _kernel(compiled, device):
    cubin = compiled.asm["cubin"]
    key = (id(device), _meta(compiled, "name"), cubin)
    if key not in _modules:
        module = device.module(cubin)
        _modules[key] = (device, module, module.kernel(_meta(compiled, "name")))
    return _modules[key][2]


def _check_supported(compiled):
    num_ctas = _meta(compiled, "num_ctas", 1) or 1
    cluster = _meta(compiled, "cluster_dims", (1, 1, 1)) or (1, 1, 1)
    if num_ctas != 1 or any(c != 1 for c in cluster):
        raise NotImplementedError(f"{_meta(compiled, 'name')} runs in thread-block clusters "
                                  f"(num_ctas {num_ctas}, cluster {tuple(cluster)}), which "
                                  "nvhcq.triton does not launch yet")
    if _meta(compiled, "launch_cooperative_grid", False):
        raise NotImplementedError("cooperative grids are not launched by nvhcq.triton yet")
    if _meta(compiled, "tensordesc_meta", None):
        raise NotImplementedError("TMA tensor descriptors are not made by nvhcq.triton yet")


def _scratch(device, kernel, used, grid, compiled, keep):
    """The hidden pointer parameters after the kernel's own (`used` bytes of them): as many
    8-byte pointers as the cubin's parameter size leaves room for, global scratch first."""
    rest = kernel.param_size - (used + (-used % 8))
    if rest < 0 or rest % 8 or rest > 16:
        raise ValueError(f"{kernel.name} takes {kernel.param_size} bytes of parameters; the "
                         f"arguments given make {used}, which leaves no room for Triton's hidden "
                         "scratch pointers: check the arguments against the kernel's signature")
    blocks = grid[0] * grid[1] * grid[2] * (_meta(compiled, "num_ctas", 1) or 1)
    out = bytearray(bytes(-used % 8)) if rest else bytearray()
    for which in ("global", "profile")[:rest // 8]:
        size = _meta(compiled, f"{which}_scratch_size", 0) or 0
        address = 0
        if size:
            buf = Buffer(device, blocks * size)  # page-aligned, more than any scratch align
            keep.append(buf)
            address = buf.gpu_address
        out += struct.pack("<Q", address)
    return bytes(out)


def launch(compiled, grid, *args, device=None, queue=None):
    """Launches a Triton CompiledKernel on grid (an int or up to 3 ints) with the Python
    function's arguments. Without a queue it waits and returns the kernel's GPU time in ns
    (numpy arrays given as pointers are copied back); with a queue the launch is recorded on
    it (arguments must then be nvhcq Buffers or addresses)."""
    global _default_device
    _check_supported(compiled)
    if device is None:
        device = queue.device if queue is not None else _default_device
        if device is None:
            device = _default_device = Device(0)
    staged, keep = [], []
    if queue is not None and any(np is not None and isinstance(a, np.ndarray) for a in args):
        raise TypeError("a launch recorded on a queue takes nvhcq Buffers, not numpy arrays")
    kernel = _kernel(compiled, device)
    grid = _dim3(grid)
    params = pack_args(compiled, args, device, staged)
    params += _scratch(device, kernel, len(params), grid, compiled, keep)
    warp = getattr(_meta(compiled, "target", None), "warp_size", None) or 32
    block = (_meta(compiled, "num_warps") * warp, 1, 1)
    shared = _meta(compiled, "shared", 0) or 0
    if queue is not None:
        queue.launch(kernel, grid, block, Raw(params), shared=shared)
        queue._keep.extend(keep)  # scratch lives as long as the queue
        return None
    ns = ctypes.c_uint64()
    check(lib.nvhcq_kernel_launch_cpu_wait(kernel.handle, _fixed_dim3(grid), _fixed_dim3(block),
                                           shared, params, len(params), ctypes.byref(ns)))
    for array, buf in staged:
        if array.flags.writeable:
            array[...] = buf.numpy(array.dtype, array.shape)
        buf.close()
    for buf in keep:
        buf.close()
    return ns.value
