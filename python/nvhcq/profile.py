"""Starting and stopping the library's timeline profiler (a Chrome/Perfetto trace of launches,
copies, signals and waits) from Python."""

from .core import check, lib


def profile_start(path):
    """Records every launch, copy, signal and wait from now on; profile_stop writes them to
    `path` as a Chrome trace (open it in https://ui.perfetto.dev)."""
    if not hasattr(lib, "nvhcq_profile_start"):
        raise RuntimeError(f"{lib.nvhcq_path} has no profiler (nvhcq_profile_start): build a newer "
                           "libnvhcq")
    check(lib.nvhcq_profile_start(str(path).encode()))


def profile_stop():
    if not hasattr(lib, "nvhcq_profile_stop"):
        raise RuntimeError(f"{lib.nvhcq_path} has no profiler (nvhcq_profile_stop)")
    check(lib.nvhcq_profile_stop())
