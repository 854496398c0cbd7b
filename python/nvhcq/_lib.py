"""Finding libnvhcq and declaring the C functions the package calls through ctypes."""

import ctypes
import ctypes.util
import os
from pathlib import Path

c_status = ctypes.c_uint32
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_u32 = ctypes.c_uint32
c_u64 = ctypes.c_uint64
c_i64 = ctypes.c_int64
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p


class Dim3(ctypes.Structure):
    _fields_ = [("x", c_u32), ("y", c_u32), ("z", c_u32)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_u32), ("reserved", c_u32), ("name", ctypes.c_char * 96),
        ("uuid", ctypes.c_uint8 * 16), ("uuid_string", ctypes.c_char * 48),
        ("arch", ctypes.c_char * 16), ("sm_version", c_u32), ("gpcs", c_u32),
        ("tpcs_per_gpc", c_u32), ("sms_per_tpc", c_u32), ("sm_count", c_u32),
        ("warps_per_sm", c_u32), ("memory_bytes", c_u64), ("driver_version", ctypes.c_char * 32),
        ("open_kernel_module", c_int), ("pci_domain", c_u32), ("pci_bus", c_u32),
        ("pci_device", c_u32), ("pci_function", c_u32), ("compute_class", c_u32),
        ("copy_class", c_u32), ("gpfifo_class", c_u32), ("usermode_class", c_u32),
        ("copy_engine", c_int), ("open_ms", ctypes.c_double),
    ]


class KernelInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_u32), ("name", c_char_p), ("registers", c_u32), ("param_size", c_u32),
        ("shared_bytes", c_u32), ("local_bytes", c_u32), ("max_threads", c_u32),
        ("max_dynamic_shared", c_u32),
    ]


class ArgVar(ctypes.Structure):
    _fields_ = [("offset", c_u32), ("size", c_u32), ("var", c_u32), ("add", c_i64)]


class LaunchVars(ctypes.Structure):
    _fields_ = [("grid", c_u32 * 3), ("block", c_u32 * 3), ("arg_count", c_u32),
                ("args", ctypes.POINTER(ArgVar))]


NO_VAR = 0xFFFFFFFF
P = c_void_p
PP = ctypes.POINTER(c_void_p)

# name: (result type, argument types). Handles are opaque pointers.
PROTOTYPES = {
    "nvhcq_version": (c_u32, []),
    "nvhcq_status_name": (c_char_p, [c_status]),
    "nvhcq_last_error": (c_char_p, []),
    "nvhcq_device_count": (c_status, [ctypes.POINTER(c_int)]),
    "nvhcq_device_open": (c_status, [c_int, PP]),
    "nvhcq_device_close": (c_status, [P]),
    "nvhcq_device_query_info": (c_status, [P, ctypes.POINTER(DeviceInfo)]),
    "nvhcq_device_cpu_wait_idle": (c_status, [P]),
    "nvhcq_device_set_timeout": (c_status, [P, c_u32]),
    "nvhcq_device_set_wait_mode": (c_status, [P, c_u32]),
    "nvhcq_device_set_limit": (c_status, [P, c_u32, c_u64]),
    "nvhcq_device_get_limit": (c_status, [P, c_u32, ctypes.POINTER(c_u64)]),
    "nvhcq_device_print_flush": (c_status, [P, ctypes.POINTER(c_u64)]),
    "nvhcq_device_recover": (c_status, [P]),
    "nvhcq_device_get_free_memory": (c_status, [P, ctypes.POINTER(c_u64)]),
    "nvhcq_buffer_create": (c_status, [P, c_size_t, c_u32, PP]),
    "nvhcq_buffer_destroy": (c_status, [P]),
    "nvhcq_buffer_gpu_address": (c_u64, [P]),
    "nvhcq_buffer_host_pointer": (c_void_p, [P]),
    "nvhcq_buffer_size": (c_size_t, [P]),
    "nvhcq_buffer_write": (c_status, [P, c_size_t, c_void_p, c_size_t]),
    "nvhcq_buffer_read": (c_status, [c_void_p, P, c_size_t, c_size_t]),
    "nvhcq_buffer_copy": (c_status, [P, c_size_t, P, c_size_t, c_size_t]),
    "nvhcq_signal_create": (c_status, [P, c_u64, PP]),
    "nvhcq_signal_destroy": (c_status, [P]),
    "nvhcq_signal_value": (c_u64, [P]),
    "nvhcq_signal_set": (None, [P, c_u64]),
    "nvhcq_signal_timestamp_ns": (c_u64, [P]),
    "nvhcq_signal_cpu_wait": (c_status, [P, c_u64, c_u32]),
    "nvhcq_signal_gpu_address": (c_u64, [P]),
    "nvhcq_queue_create": (c_status, [P, c_u32, PP]),
    "nvhcq_queue_create_recorded": (c_status, [P, c_u32, PP]),
    "nvhcq_queue_destroy": (c_status, [P]),
    "nvhcq_queue_reset": (c_status, [P]),
    "nvhcq_queue_gpu_wait": (c_status, [P, P, c_u64]),
    "nvhcq_queue_signal": (c_status, [P, P, c_u64]),
    "nvhcq_queue_copy": (c_status, [P, c_u64, c_u64, c_u64]),
    "nvhcq_queue_memory_barrier": (c_status, [P]),
    "nvhcq_queue_submit": (c_status, [P]),
    "nvhcq_queue_launch": (c_status, [P, P, Dim3, Dim3, c_u32, c_void_p, c_size_t]),
    "nvhcq_queue_var": (c_status, [P, c_char_p, c_u64, ctypes.POINTER(c_u32)]),
    "nvhcq_queue_set_var": (c_status, [P, c_u32, c_u64]),
    "nvhcq_queue_finish": (c_status, [P]),
    "nvhcq_queue_cpu_wait_idle": (c_status, [P, c_u32]),
    "nvhcq_queue_launch_vars": (c_status, [P, P, Dim3, Dim3, c_u32, c_void_p, c_size_t,
                                           ctypes.POINTER(LaunchVars)]),
    "nvhcq_queue_copy_vars": (c_status, [P, c_u64, c_u64, c_u64, c_u32, c_u32, c_u32]),
    "nvhcq_queue_signal_var": (c_status, [P, P, c_u32]),
    "nvhcq_queue_gpu_wait_var": (c_status, [P, P, c_u32]),
    "nvhcq_module_load": (c_status, [P, c_void_p, c_size_t, PP]),
    "nvhcq_module_load_any": (c_status, [P, c_void_p, c_size_t, ctypes.POINTER(c_char_p), c_int,
                                         PP]),
    "nvhcq_module_unload": (c_status, [P]),
    "nvhcq_module_kernel_count": (c_u32, [P]),
    "nvhcq_module_kernel_name": (c_char_p, [P, c_u32]),
    "nvhcq_module_get_kernel": (c_status, [P, c_char_p, PP]),
    "nvhcq_module_get_global": (c_status, [P, c_char_p, ctypes.POINTER(c_u64),
                                           ctypes.POINTER(c_size_t)]),
    "nvhcq_kernel_query_info": (c_status, [P, ctypes.POINTER(KernelInfo)]),
    "nvhcq_kernel_launch_cpu_wait": (c_status, [P, Dim3, Dim3, c_u32, c_void_p, c_size_t,
                                                ctypes.POINTER(c_u64)]),
    "nvhcq_graph_create": (c_status, [P, PP]),
    "nvhcq_graph_destroy": (c_status, [P]),
    "nvhcq_graph_var": (c_status, [P, c_char_p, c_u64, ctypes.POINTER(c_u32)]),
    "nvhcq_graph_add_launch": (c_status, [P, P, Dim3, Dim3, c_u32, c_void_p, c_size_t,
                                          ctypes.POINTER(LaunchVars), ctypes.POINTER(c_u32), c_u32,
                                          ctypes.POINTER(c_u32)]),
    "nvhcq_graph_add_copy": (c_status, [P, c_u64, c_u64, c_u64, c_u32, c_u32, c_u32,
                                        ctypes.POINTER(c_u32), c_u32, ctypes.POINTER(c_u32)]),
    "nvhcq_graph_instantiate": (c_status, [P]),
    "nvhcq_graph_set_var": (c_status, [P, c_u32, c_u64]),
    "nvhcq_graph_launch": (c_status, [P]),
    "nvhcq_graph_cpu_wait": (c_status, [P, c_u32]),
    "nvhcq_source_detect": (c_u32, [c_void_p, c_size_t]),
}

# Present only in libraries that have them; the package asks before it uses them.
OPTIONAL = {
    "nvhcq_profile_start": (c_status, [c_char_p]),
    "nvhcq_profile_stop": (c_status, []),
}


def _candidates():
    """Where libnvhcq is looked for, in order: NVHCQ_LIBRARY, the source tree's build folders
    (when the package is imported from python/ of a checkout), then the system loader."""
    env = os.environ.get("NVHCQ_LIBRARY")
    if env:
        yield env
        return
    root = Path(__file__).resolve().parent.parent.parent
    for build in ("build", "build-release"):
        path = root / build / "libnvhcq.so"
        if path.exists():
            yield str(path)
    found = ctypes.util.find_library("nvhcq")
    if found:
        yield found
    yield "libnvhcq.so.0"


def load():
    """Loads the library and declares its functions; OSError says where it looked."""
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (res, args) in PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        for name, (res, args) in OPTIONAL.items():
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
        lib.nvhcq_path = path
        return lib
    raise OSError("libnvhcq not found; tried " + "; ".join(tried) +
                  ". Build it (cmake -S . -B build && cmake --build build), install it, or set "
                  "NVHCQ_LIBRARY to the path of libnvhcq.so")
