"""Devices, buffers with numpy, signals, eager and recorded queues with variables, graphs of
copies, errors, and the argument layout: what runs without kernels (on the mock GPU too)."""

import struct

import numpy as np
import pytest

import nvhcq
from nvhcq.args import VarArg, pack


def test_version_and_library():
    assert nvhcq.version() == (0, 2)
    assert nvhcq.lib.nvhcq_path


def test_error_carries_the_message():
    with pytest.raises(nvhcq.NvhcqError) as e:
        nvhcq.Device(1000)
    assert e.value.status != 0
    assert e.value.status_name.startswith("NVHCQ_ERROR_")
    assert e.value.message and e.value.message != "no error"


def test_layout_natural_alignment():
    class Buf:
        gpu_address = 0x1122334455667788

    data, bound = pack([np.int8(3), Buf(), 2.5, 7, np.float64(1.5), np.int16(-2)])
    assert data == (b"\x03" + bytes(7) + struct.pack("<Q", 0x1122334455667788) +
                    struct.pack("<f", 2.5) + struct.pack("<i", 7) + struct.pack("<d", 1.5) +
                    struct.pack("<h", -2))
    assert bound == []


def test_layout_checked_against_param_size():
    with pytest.raises(ValueError, match="takes 16 bytes"):
        pack([1, 2], 16, "k")
    with pytest.raises(OverflowError, match="numpy.int64"):
        pack([1 << 40])
    with pytest.raises(TypeError, match="cannot pass"):
        pack(["x"])


def test_layout_variables():
    class V:
        index = 3

    data, bound = pack([1, VarArg(V(), 8, add=16)], 16)
    assert len(data) == 16 and bound[0][0] == 8 and bound[0][1].add == 16


def test_buffer_numpy_round_trip(dev):
    a = np.arange(4096, dtype=np.int32) * 3 - 7
    buf = dev.array(a)
    assert buf.size == a.nbytes
    assert np.array_equal(buf.numpy(np.int32, a.shape), a)
    buf.copy_from(a[:16][::-1], offset=64)
    b = buf.numpy(np.int32)
    assert np.array_equal(b[16:32], a[:16][::-1]) and np.array_equal(b[:16], a[:16])
    assert buf.read(8, offset=4) == a[1:3].tobytes()


def test_host_buffer_view(dev):
    buf = dev.buffer(1024, "host")
    view = buf.view(np.uint32)
    view[:] = np.arange(256, dtype=np.uint32)
    assert np.array_equal(buf.numpy(np.uint32), np.arange(256, dtype=np.uint32))
    with pytest.raises(ValueError, match="no CPU address"):
        dev.buffer(64).view()


def test_buffer_to_buffer(dev):
    a = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
    src, dst = dev.array(a), dev.buffer(a.nbytes)
    src.copy_to(dst)
    assert np.array_equal(dst.numpy(np.float32), a)


def test_copy_queue_and_signals(dev):
    a = np.arange(1 << 16, dtype=np.uint16)
    src, dst = dev.array(a), dev.buffer(a.nbytes)
    sig = dev.signal(5)
    assert sig.value == 5
    q = dev.queue("copy")
    q.copy(dst.ptr(0), src, a.nbytes // 2)
    q.copy(dst.ptr(a.nbytes // 2), src.ptr(a.nbytes // 2), a.nbytes // 2)
    q.signal(sig, 6)
    q.submit()
    sig.wait(6)
    assert sig.value == 6 and sig.timestamp_ns > 0
    assert np.array_equal(dst.numpy(np.uint16), a)


def test_gpu_wait_orders_a_copy(dev):
    a = np.arange(256, dtype=np.float32)
    src, dst = dev.array(a), dev.buffer(a.nbytes)
    gate, done = dev.signal(0), dev.signal(0)
    q = dev.queue("copy")
    q.wait(gate, 1)
    q.copy(dst, src, a.nbytes)
    q.signal(done, 1)
    q.submit()
    with pytest.raises(nvhcq.NvhcqError) as e:
        done.wait(1, timeout_ms=50)  # a timeout the caller gave leaves the device as it was
    assert e.value.status_name == "NVHCQ_ERROR_TIMEOUT"
    gate.value = 1
    done.wait(1)
    assert np.array_equal(dst.numpy(np.float32), a)


def test_recorded_copy_with_variables(dev):
    a = np.arange(1000, dtype=np.float32)
    src, first, second = dev.array(a), dev.buffer(a.nbytes), dev.buffer(a.nbytes, "host")
    done = dev.signal()
    q = dev.queue("copy", recorded=True)
    dst_var, size_var, value_var = q.var("dst", first), q.var("size", 400), q.var("v", 1)
    q.copy(dst_var, src, size_var)
    q.signal(done, value_var)
    q.finish()
    q.submit()
    q.wait_idle()
    assert done.value == 1
    assert np.array_equal(first.numpy(np.float32)[:100], a[:100])
    dst_var.set(second)
    size_var.set(a.nbytes)
    value_var.set(2)
    q.submit()
    q.wait_idle()
    assert done.value == 2
    assert np.array_equal(second.view(np.float32), a)


def test_graph_of_copies(dev):
    a = np.arange(5000, dtype=np.int64)
    x, y, z = dev.array(a), dev.buffer(a.nbytes), dev.buffer(a.nbytes)
    g = dev.graph()
    n1 = g.add_copy(y, x, a.nbytes)
    g.add_copy(z, y, a.nbytes, deps=[n1])
    g.instantiate()
    for _ in range(2):
        g.launch()
        g.wait()
    assert np.array_equal(z.numpy(np.int64), a)


def test_device_info(dev):
    info = dev.info
    assert info["arch"].startswith("sm_") and info["sm_count"] > 0 and info["memory_bytes"] > 0
    assert dev.free_memory() > 0


def test_close_releases_children():
    if not __import__("conftest").have_gpu():
        pytest.skip("SKIP: needs a GPU")
    d = nvhcq.Device(0)
    buf = d.buffer(64)
    d.close()
    with pytest.raises(ValueError, match="closed"):
        buf.gpu_address


def test_device_limits(dev):
    assert dev.get_limit(nvhcq.Device.LIMIT_PRINTF_FIFO_SIZE) == 1 << 20
    assert dev.get_limit(nvhcq.Device.LIMIT_MALLOC_HEAP_SIZE) == 8 << 20
    with pytest.raises(nvhcq.NvhcqError):
        dev.set_limit(nvhcq.Device.LIMIT_PRINTF_FIFO_SIZE, 100)
    assert dev.print_flush() == 0


def test_wait_modes(dev):
    a = np.arange(8192, dtype=np.uint32)
    for mode in ("spin", "yield", "block", "auto"):
        dev.set_wait_mode(mode)
        src, dst = dev.array(a + len(mode)), dev.buffer(a.nbytes)
        src.copy_to(dst)
        dev.synchronize()
        assert np.array_equal(dst.numpy(np.uint32), a + len(mode))
    with pytest.raises(ValueError, match="wait mode 'sleep'"):
        dev.set_wait_mode("sleep")
