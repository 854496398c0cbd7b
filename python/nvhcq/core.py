"""The package's objects over libnvhcq: devices, buffers, signals, queues (eager and recorded,
with variables), modules and kernels, graphs, and the exception its calls raise."""

import ctypes
import os
import weakref

from . import _lib
from .args import Pointer, VarArg, pack

try:
    import numpy as np
except ImportError:
    np = None

lib = _lib.load()

MEMORY_DEVICE, MEMORY_DEVICE_MAPPED, MEMORY_HOST, MEMORY_HOST_UNCACHED = 0, 1, 2, 3
_MEMORY = {"device": 0, "device_mapped": 1, "host": 2, "host_uncached": 3}
_QUEUE = {"compute": 0, "copy": 1}
_WAIT = {"auto": 0, "spin": 1, "yield": 2, "block": 3}


class NvhcqError(Exception):
    """A failed nvhcq call: `status` (its number), `status_name` ("NVHCQ_ERROR_GPU_FAULT") and
    `message`, nvhcq_last_error(): what failed, on which object, and what to do."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = lib.nvhcq_status_name(status).decode()
        self.message = message
        super().__init__(f"{message} ({self.status_name})")


def check(status):
    if status:
        raise NvhcqError(status, lib.nvhcq_last_error().decode(errors="replace"))


def version():
    """The library's version as (major, minor)."""
    v = lib.nvhcq_version()
    return v >> 16, v & 0xFFFF


def device_count():
    n = ctypes.c_int()
    check(lib.nvhcq_device_count(ctypes.byref(n)))
    return n.value


def _dim3(d):
    if isinstance(d, int):
        d = (d,)
    d = tuple(d) + (1,) * (3 - len(d))
    if len(d) != 3:
        raise ValueError(f"a grid or block has 1 to 3 dimensions, not {len(d)}")
    return d


def _fixed_dim3(d):
    return _lib.Dim3(*(v.initial if isinstance(v, Var) else int(v) for v in _dim3(d)))


def _address(x):
    """The GPU address of a Buffer, Pointer or int."""
    address = getattr(x, "gpu_address", None)
    return int(address if address is not None else x)


class _Handle:
    """An nvhcq object: released once, by close() or when collected; a device releases what was
    made from it before it closes."""

    _destroy = None

    def __init__(self, handle, device=None):
        self._h = handle
        self.device = device
        if device is not None:
            device._children.add(self)

    @property
    def handle(self):
        if not self._h:
            raise ValueError(f"this {type(self).__name__} was closed")
        return self._h

    def close(self):
        if self._h:
            h, self._h = self._h, None
            if self.device is not None:
                self.device._children.discard(self)
            check(getattr(lib, self._destroy)(h))

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Device(_Handle):
    """An open GPU: Device(index) (NVHCQ_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES order)."""

    _destroy = "nvhcq_device_close"

    def __init__(self, index=0):
        h = ctypes.c_void_p()
        check(lib.nvhcq_device_open(index, ctypes.byref(h)))
        self._children = weakref.WeakSet()
        super().__init__(h.value)
        self.index = index

    def close(self):
        if self._h:
            for child in list(self._children):
                child.close()
        super().close()

    @property
    def info(self):
        """What the GPU is, as a dict (the fields of nvhcq_device_info)."""
        i = _lib.DeviceInfo(struct_size=ctypes.sizeof(_lib.DeviceInfo))
        check(lib.nvhcq_device_query_info(self.handle, ctypes.byref(i)))
        out = {}
        for name, _ in i._fields_:
            v = getattr(i, name)
            out[name] = v.decode() if isinstance(v, bytes) else v
        out["uuid"] = bytes(i.uuid)
        del out["struct_size"], out["reserved"]
        return out

    @property
    def arch(self):
        return self.info["arch"]

    def synchronize(self):
        """The CPU waits until both channels are idle."""
        check(lib.nvhcq_device_cpu_wait_idle(self.handle))

    def set_timeout(self, ms):
        check(lib.nvhcq_device_set_timeout(self.handle, ms))

    def set_wait_mode(self, mode):
        """How CPU waits poll: "auto", "spin", "yield" or "block" (nvhcq_device_set_wait_mode)."""
        if mode not in _WAIT:
            raise ValueError(f"wait mode {mode!r}: use one of {', '.join(_WAIT)}")
        check(lib.nvhcq_device_set_wait_mode(self.handle, _WAIT[mode]))

    LIMIT_PRINTF_FIFO_SIZE = 1
    LIMIT_MALLOC_HEAP_SIZE = 2

    def set_limit(self, limit, value):
        """Device printf FIFO or malloc heap bytes, before the first module that uses them."""
        check(lib.nvhcq_device_set_limit(self.handle, limit, value))

    def get_limit(self, limit):
        value = ctypes.c_uint64()
        check(lib.nvhcq_device_get_limit(self.handle, limit, ctypes.byref(value)))
        return value.value

    def print_flush(self):
        """Prints what kernels printf'd so far; returns the records lost to a full FIFO."""
        dropped = ctypes.c_uint64()
        check(lib.nvhcq_device_print_flush(self.handle, ctypes.byref(dropped)))
        return dropped.value

    def recover(self):
        check(lib.nvhcq_device_recover(self.handle))

    def free_memory(self):
        free = ctypes.c_uint64()
        check(lib.nvhcq_device_get_free_memory(self.handle, ctypes.byref(free)))
        return free.value

    # Shorthands for making things on this device.
    def buffer(self, size, kind="device"):
        return Buffer(self, size, kind)

    def array(self, array, kind="device"):
        """A buffer holding a copy of a numpy array."""
        buf = Buffer(self, max(array.nbytes, 1), kind)
        buf.copy_from(array)
        return buf

    def signal(self, initial=0):
        return Signal(self, initial)

    def queue(self, kind="compute", recorded=False):
        return Queue(self, kind, recorded)

    def module(self, source, options=()):
        return Module(self, source, options)

    def graph(self):
        return Graph(self)


class Buffer(_Handle):
    """GPU memory: kind is "device", "device_mapped", "host" or "host_uncached"."""

    _destroy = "nvhcq_buffer_destroy"

    def __init__(self, device, size, kind="device"):
        kind = _MEMORY[kind] if isinstance(kind, str) else kind
        h = ctypes.c_void_p()
        check(lib.nvhcq_buffer_create(device.handle, size, kind, ctypes.byref(h)))
        super().__init__(h.value, device)
        self.kind = kind

    @property
    def gpu_address(self):
        return lib.nvhcq_buffer_gpu_address(self.handle)

    @property
    def size(self):
        return lib.nvhcq_buffer_size(self.handle)

    @property
    def host_pointer(self):
        """The CPU's address of the memory, or None for device memory."""
        return lib.nvhcq_buffer_host_pointer(self.handle)

    def ptr(self, offset=0):
        """The address `offset` bytes into the buffer, as a kernel argument."""
        if not 0 <= offset <= self.size:
            raise ValueError(f"offset {offset} is outside the buffer of {self.size} bytes")
        return Pointer(self.gpu_address + offset, self)

    def write(self, data, offset=0):
        """Bytes (or anything with the buffer protocol) into the buffer at `offset`."""
        view = memoryview(data).cast("B")
        src = (ctypes.c_char * len(view)).from_buffer_copy(view) if view.readonly else \
            (ctypes.c_char * len(view)).from_buffer(view)
        check(lib.nvhcq_buffer_write(self.handle, offset, src, len(view)))

    def read(self, size=None, offset=0):
        size = self.size - offset if size is None else size
        out = ctypes.create_string_buffer(size)
        check(lib.nvhcq_buffer_read(out, self.handle, offset, size))
        return out.raw

    def copy_from(self, array, offset=0):
        """A numpy array's bytes into the buffer at `offset`."""
        a = np.ascontiguousarray(array)
        check(lib.nvhcq_buffer_write(self.handle, offset, a.ctypes.data, a.nbytes))

    def numpy(self, dtype=None, shape=None, offset=0):
        """A new numpy array read from the buffer (float32 and the whole buffer by default)."""
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        if shape is None:
            shape = ((self.size - offset) // dtype.itemsize,)
        out = np.empty(shape, dtype)
        check(lib.nvhcq_buffer_read(out.ctypes.data, self.handle, offset, out.nbytes))
        return out

    def view(self, dtype=None, shape=None):
        """A numpy array over the memory itself (host and device_mapped buffers): no copy."""
        if not self.host_pointer:
            raise ValueError("device memory has no CPU address: use numpy() to read a copy, or "
                             "create the buffer with kind='host' or 'device_mapped'")
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        raw = (ctypes.c_char * self.size).from_address(self.host_pointer)
        a = np.frombuffer(raw, dtype, count=self.size // dtype.itemsize)
        return a.reshape(shape) if shape is not None else a

    def copy_to(self, dst, size=None, src_offset=0, dst_offset=0):
        """Buffer to buffer (the copy engine or a copy kernel)."""
        size = self.size - src_offset if size is None else size
        check(lib.nvhcq_buffer_copy(dst.handle, dst_offset, self.handle, src_offset, size))


class Signal(_Handle):
    """A 64-bit semaphore the CPU and the GPU see; the GPU stamps the time it releases it."""

    _destroy = "nvhcq_signal_destroy"

    def __init__(self, device, initial=0):
        h = ctypes.c_void_p()
        check(lib.nvhcq_signal_create(device.handle, initial, ctypes.byref(h)))
        super().__init__(h.value, device)

    @property
    def value(self):
        return lib.nvhcq_signal_value(self.handle)

    @value.setter
    def value(self, v):
        lib.nvhcq_signal_set(self.handle, v)

    def set(self, v):
        lib.nvhcq_signal_set(self.handle, v)

    @property
    def timestamp_ns(self):
        return lib.nvhcq_signal_timestamp_ns(self.handle)

    @property
    def gpu_address(self):
        return lib.nvhcq_signal_gpu_address(self.handle)

    def wait(self, value, timeout_ms=0):
        """The CPU waits until the value reaches `value` (0: the device timeout)."""
        check(lib.nvhcq_signal_cpu_wait(self.handle, value, timeout_ms))


class Var:
    """A variable of a recorded queue or graph: an argument, dimension, copy address or size,
    signal or wait value patched before a replay. As a kernel argument it is `size` bytes wide
    (8 when made from a Buffer or a 64-bit numpy value, else 4); var + n adds n."""

    def __init__(self, owner, index, name, initial, size):
        self.owner, self.index, self.name, self.initial, self.size = owner, index, name, initial, size

    def set(self, value):
        self.owner.set_var(self, value)

    def __add__(self, add):
        return VarArg(self, self.size, add)


def _var_value(value):
    """(integer value, argument width) of a variable's value."""
    if np is not None and isinstance(value, np.generic):
        return int(value), value.dtype.itemsize if value.dtype.itemsize in (4, 8) else 4
    if isinstance(value, (Buffer, Pointer)):
        return _address(value), 8
    return int(value), 4


def _launch_vars(grid, block, bound):
    """The nvhcq_launch_vars of a launch (None when nothing is a variable), and what it points
    to (kept alive until the call)."""
    dims = [v.index if isinstance(v, Var) else _lib.NO_VAR for v in _dim3(grid) + _dim3(block)]
    if not bound and all(d == _lib.NO_VAR for d in dims):
        return None, None
    entries = (_lib.ArgVar * max(len(bound), 1))(
        *[_lib.ArgVar(off, a.size, a.var.index, a.add) for off, a in bound])
    lv = _lib.LaunchVars((_lib.c_u32 * 3)(*dims[:3]), (_lib.c_u32 * 3)(*dims[3:]), len(bound),
                         entries)
    return lv, entries


def _launch_args(kernel, args):
    """Variables given as arguments become VarArgs of their width; the block is packed."""
    args = [VarArg(a, a.size) if isinstance(a, Var) else a for a in args]
    data, bound = pack(args, kernel.param_size, kernel.name)
    # A bound argument starts as its variable's first value plus its addend.
    block = bytearray(data)
    for off, a in bound:
        block[off:off + a.size] = ((a.var.initial + a.add) % (1 << (8 * a.size))).to_bytes(
            a.size, "little")
    return bytes(block), bound


def _var_or(value, what):
    """(fixed value, variable index) of a copy's address or size."""
    if isinstance(value, Var):
        return value.initial, value.index
    if isinstance(value, VarArg):
        raise ValueError(f"a copy's {what} takes a variable as it is, without an addend")
    return _address(value), _lib.NO_VAR


class Queue(_Handle):
    """Commands for one channel: kind "compute" (launches, barriers) or "copy" (copies); both
    signal and wait. A recorded queue (recorded=True) keeps its commands on the GPU and replays
    them with one submit; values left as variables (queue.var) are patched in between."""

    _destroy = "nvhcq_queue_destroy"

    def __init__(self, device, kind="compute", recorded=False):
        kind = _QUEUE[kind] if isinstance(kind, str) else kind
        h = ctypes.c_void_p()
        create = lib.nvhcq_queue_create_recorded if recorded else lib.nvhcq_queue_create
        check(create(device.handle, kind, ctypes.byref(h)))
        super().__init__(h.value, device)
        self.recorded = recorded
        self._keep = []  # argument blocks and variable tables while the call records them

    def var(self, name, value):
        value_int, size = _var_value(value)
        index = ctypes.c_uint32()
        check(lib.nvhcq_queue_var(self.handle, name.encode(), value_int, ctypes.byref(index)))
        return Var(self, index.value, name, value_int, size)

    def set_var(self, var, value):
        check(lib.nvhcq_queue_set_var(self.handle, var.index, _var_value(value)[0]))

    def launch(self, kernel, grid, block, *args, shared=0):
        data, bound = _launch_args(kernel, args)
        lv, _entries = _launch_vars(grid, block, bound)
        g, b = _fixed_dim3(grid), _fixed_dim3(block)
        if lv is None:
            check(lib.nvhcq_queue_launch(self.handle, kernel.handle, g, b, shared, data,
                                         len(data)))
        else:
            check(lib.nvhcq_queue_launch_vars(self.handle, kernel.handle, g, b, shared, data,
                                              len(data), ctypes.byref(lv)))

    def copy(self, dst, src, size):
        """A copy-engine copy between GPU addresses (Buffers, buf.ptr(n), ints or variables)."""
        (d, dv), (s, sv), (n, nv) = _var_or(dst, "destination"), _var_or(src, "source"), \
            _var_or(size, "size")
        if dv == sv == nv == _lib.NO_VAR:
            check(lib.nvhcq_queue_copy(self.handle, d, s, n))
        else:
            check(lib.nvhcq_queue_copy_vars(self.handle, d, s, n, dv, sv, nv))

    def signal(self, sig, value):
        if isinstance(value, Var):
            check(lib.nvhcq_queue_signal_var(self.handle, sig.handle, value.index))
        else:
            check(lib.nvhcq_queue_signal(self.handle, sig.handle, value))

    def wait(self, sig, value):
        """The GPU waits (later commands start once sig reaches value); the CPU does not."""
        if isinstance(value, Var):
            check(lib.nvhcq_queue_gpu_wait_var(self.handle, sig.handle, value.index))
        else:
            check(lib.nvhcq_queue_gpu_wait(self.handle, sig.handle, value))

    def barrier(self):
        check(lib.nvhcq_queue_memory_barrier(self.handle))

    def finish(self):
        check(lib.nvhcq_queue_finish(self.handle))

    def submit(self):
        check(lib.nvhcq_queue_submit(self.handle))

    def wait_idle(self, timeout_ms=0):
        """The CPU waits for every replay of a recorded queue submitted so far."""
        check(lib.nvhcq_queue_cpu_wait_idle(self.handle, timeout_ms))

    def reset(self):
        check(lib.nvhcq_queue_reset(self.handle))


def _read_source(source):
    """Bytes of a module's source: bytes as they are, a str naming a file that file, else the
    str itself (CUDA C or PTX)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and
                                           os.path.isfile(source)):
        with open(source, "rb") as f:
            return f.read()
    return source.encode()


class Module(_Handle):
    """Kernels from a cubin, PTX or CUDA C (bytes, text, or a file's path), compiled for the
    device as needed (NVRTC / nvJitLink, cached on disk). module.name or module["name"] is a
    Kernel."""

    _destroy = "nvhcq_module_unload"

    def __init__(self, device, source, options=()):
        data = _read_source(source)
        opts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
        h = ctypes.c_void_p()
        check(lib.nvhcq_module_load_any(device.handle, data, len(data), opts, len(options),
                                        ctypes.byref(h)))
        super().__init__(h.value, device)
        self._kernels = {}

    @property
    def kernel_names(self):
        n = lib.nvhcq_module_kernel_count(self.handle)
        return [lib.nvhcq_module_kernel_name(self.handle, i).decode() for i in range(n)]

    def kernel(self, name):
        if name not in self._kernels:
            h = ctypes.c_void_p()
            check(lib.nvhcq_module_get_kernel(self.handle, name.encode(), ctypes.byref(h)))
            self._kernels[name] = Kernel(self, h.value)
        return self._kernels[name]

    __getitem__ = kernel

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except NvhcqError as e:
            raise AttributeError(str(e)) from None

    def global_address(self, name):
        """(GPU address, size) of a __device__ or __constant__ variable."""
        address, size = ctypes.c_uint64(), ctypes.c_size_t()
        check(lib.nvhcq_module_get_global(self.handle, name.encode(), ctypes.byref(address),
                                          ctypes.byref(size)))
        return address.value, size.value


class Kernel:
    """A kernel of a module (it lives as long as the module). kernel(*args, grid=, block=)
    launches it, waits, and returns its GPU time in ns; the arguments are laid out as the C
    parameters would be (see nvhcq.args)."""

    def __init__(self, module, handle):
        self.module, self._h = module, handle
        info = self.info
        self.name, self.param_size = info["name"], info["param_size"]

    @property
    def handle(self):
        self.module.handle  # raises once the module is closed
        return self._h

    @property
    def info(self):
        i = _lib.KernelInfo(struct_size=ctypes.sizeof(_lib.KernelInfo))
        check(lib.nvhcq_kernel_query_info(self.handle, ctypes.byref(i)))
        out = {name: getattr(i, name) for name, _ in i._fields_ if name != "struct_size"}
        out["name"] = out["name"].decode()
        return out

    def pack(self, *args):
        """The parameter block the arguments make (bytes)."""
        return pack(args, self.param_size, self.name)[0]

    def __call__(self, *args, grid, block, shared=0):
        data = self.pack(*args)
        ns = ctypes.c_uint64()
        check(lib.nvhcq_kernel_launch_cpu_wait(self.handle, _fixed_dim3(grid), _fixed_dim3(block),
                                               shared, data, len(data), ctypes.byref(ns)))
        return ns.value


class Graph(_Handle):
    """Launches and copies with dependencies across the compute and copy channels; add nodes,
    instantiate(), then launch() and wait() as often as needed (variables as queues have)."""

    _destroy = "nvhcq_graph_destroy"

    def __init__(self, device):
        h = ctypes.c_void_p()
        check(lib.nvhcq_graph_create(device.handle, ctypes.byref(h)))
        super().__init__(h.value, device)

    def var(self, name, value):
        value_int, size = _var_value(value)
        index = ctypes.c_uint32()
        check(lib.nvhcq_graph_var(self.handle, name.encode(), value_int, ctypes.byref(index)))
        return Var(self, index.value, name, value_int, size)

    def set_var(self, var, value):
        check(lib.nvhcq_graph_set_var(self.handle, var.index, _var_value(value)[0]))

    @staticmethod
    def _deps(deps):
        return (ctypes.c_uint32 * max(len(deps), 1))(*deps), len(deps)

    def add_launch(self, kernel, grid, block, *args, shared=0, deps=()):
        data, bound = _launch_args(kernel, args)
        lv, _entries = _launch_vars(grid, block, bound)
        d, n = self._deps(deps)
        node = ctypes.c_uint32()
        check(lib.nvhcq_graph_add_launch(self.handle, kernel.handle, _fixed_dim3(grid),
                                         _fixed_dim3(block), shared, data, len(data),
                                         ctypes.byref(lv) if lv is not None else None, d, n,
                                         ctypes.byref(node)))
        return node.value

    def add_copy(self, dst, src, size, deps=()):
        (dd, dv), (s, sv), (sz, nv) = _var_or(dst, "destination"), _var_or(src, "source"), \
            _var_or(size, "size")
        d, n = self._deps(deps)
        node = ctypes.c_uint32()
        check(lib.nvhcq_graph_add_copy(self.handle, dd, s, sz, dv, sv, nv, d, n,
                                       ctypes.byref(node)))
        return node.value

    def instantiate(self):
        check(lib.nvhcq_graph_instantiate(self.handle))

    def launch(self):
        check(lib.nvhcq_graph_launch(self.handle))

    def wait(self, timeout_ms=0):
        check(lib.nvhcq_graph_cpu_wait(self.handle, timeout_ms))
