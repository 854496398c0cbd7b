"""What the tests share: the package imported from this source tree, and a device fixture that
skips visibly without a GPU (NVHCQ_MOCK=1 runs them on the mock GPU)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import nvhcq  # noqa: E402


def on_mock():
    return os.environ.get("NVHCQ_MOCK", "0") not in ("", "0")


def have_gpu():
    return os.path.exists("/dev/nvidiactl") or on_mock()


@pytest.fixture(scope="module")
def dev():
    if not have_gpu():
        pytest.skip("SKIP: needs a GPU (no /dev/nvidiactl; NVHCQ_MOCK=1 uses the mock GPU)")
    d = nvhcq.Device(0)
    yield d
    d.close()


def run_or_skip_on_mock(dev, fn, *args, **kw):
    """Runs fn (which launches kernels); on the mock GPU, while it runs no kernels, the fault
    it reports becomes a skip and the device is recovered for the next test."""
    try:
        return fn(*args, **kw)
    except nvhcq.NvhcqError as e:
        if on_mock() and e.status_name == "NVHCQ_ERROR_GPU_FAULT" and "no kernel execution" in \
                e.message:
            dev.recover()
            pytest.skip("SKIP: the mock GPU runs no kernels yet")
        raise
