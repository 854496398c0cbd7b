"""nvhcq from Python: NVIDIA GPUs driven through the kernel driver's ioctls, without libcuda,
through ctypes over libnvhcq (found through NVHCQ_LIBRARY, a build folder of the source tree
this package sits in, or the system loader).

    import numpy as np, nvhcq
    dev = nvhcq.Device(0)
    x = dev.array(np.arange(1024, dtype=np.float32))
    mod = dev.module(CUDA_SOURCE)
    gpu_ns = mod.scale(x, 2.0, 1024, grid=4, block=256)
    print(x.numpy(np.float32))
"""

from .args import Pointer, VarArg, pack
from .core import (MEMORY_DEVICE, MEMORY_DEVICE_MAPPED, MEMORY_HOST, MEMORY_HOST_UNCACHED, Buffer,
                   Device, Graph, Kernel, Module, NvhcqError, Queue, Signal, Var, check,
                   device_count, lib, version)
from .profile import profile_start, profile_stop

__all__ = [
    "Buffer", "Device", "Graph", "Kernel", "Module", "NvhcqError", "Pointer", "Queue", "Signal",
    "Var", "VarArg", "check", "device_count", "lib", "pack", "profile_start", "profile_stop",
    "version", "MEMORY_DEVICE", "MEMORY_DEVICE_MAPPED", "MEMORY_HOST", "MEMORY_HOST_UNCACHED",
]
__version__ = "0.2.0"
