"""Laying Python arguments out as a kernel's parameter block: each argument at its natural
alignment (pointers 8 bytes, C int and float 4), as the CUDA C ABI lays out a kernel's
parameters, checked against the parameter size the cubin records."""

import struct

try:
    import numpy as np
except ImportError:  # the package imports without numpy; scalars and buffers still work
    np = None


class Pointer:
    """A GPU address as a kernel argument: buf.ptr(offset), or any address."""

    def __init__(self, address, buffer=None):
        self.address = int(address)
        self.buffer = buffer  # kept alive while the pointer is

    def __int__(self):
        return self.address


class VarArg:
    """A recorded queue's or graph's variable as an argument: its value plus `add`, `size`
    bytes wide (4 or 8)."""

    def __init__(self, var, size, add=0):
        if size not in (4, 8):
            raise ValueError(f"a variable argument is 4 or 8 bytes wide, not {size}")
        self.var, self.size, self.add = var, size, int(add)

    def __add__(self, add):
        return VarArg(self.var, self.size, self.add + int(add))


class Raw(bytes):
    """Parameter bytes already laid out (e.g. a whole block), passed as they are."""


def _scalar(arg):
    """(bytes, alignment) of one fixed argument."""
    if isinstance(arg, Raw):
        return bytes(arg), 1
    if np is not None and isinstance(arg, np.generic):
        data = arg.tobytes()
        return data, len(data)
    if isinstance(arg, bool):
        return struct.pack("<i", int(arg)), 4
    if isinstance(arg, int):
        if -(1 << 31) <= arg < (1 << 31):
            return struct.pack("<i", arg), 4
        if 0 <= arg < (1 << 32):
            return struct.pack("<I", arg), 4
        raise OverflowError(f"{arg} does not fit a 32-bit int parameter; pass numpy.int64({arg}) "
                            f"or numpy.uint64({arg}) for a 64-bit one")
    if isinstance(arg, float):
        return struct.pack("<f", arg), 4
    address = getattr(arg, "gpu_address", None)
    if address is not None or isinstance(arg, Pointer):
        return struct.pack("<Q", int(address if address is not None else arg)), 8
    raise TypeError(f"cannot pass {type(arg).__name__} to a kernel: use an int, a float, a numpy "
                    "scalar (numpy.float64, numpy.int64, ...), a Buffer or buf.ptr(offset)")


def pack(args, param_size=None, kernel_name="kernel"):
    """(parameter bytes, [(offset, VarArg)]) for args; a ValueError when their layout does not
    end at param_size (the kernel takes other arguments than those given)."""
    block = bytearray()
    bound = []
    described = []
    for arg in args:
        if isinstance(arg, VarArg):
            data, align = bytes(arg.size), arg.size
        else:
            data, align = _scalar(arg)
        block += bytes(-len(block) % align)
        if isinstance(arg, VarArg):
            bound.append((len(block), arg))
        described.append(f"{len(block)}+{len(data)}")
        block += data
    if param_size is not None and len(block) != param_size:
        raise ValueError(
            f"{kernel_name} takes {param_size} bytes of parameters but the {len(args)} arguments "
            f"given lay out as {len(block)} ({', '.join(described) or 'none'}, offset+size); "
            "check their number and types (a Python int is a 32-bit int and a float a 32-bit "
            "float: pass numpy.int64 / numpy.float64 for 64-bit ones)")
    return bytes(block), bound
