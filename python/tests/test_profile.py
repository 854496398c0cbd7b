"""The timeline profiler: a trace of copies, signals and waits (and launches, where kernels
run) that parses as Chrome trace-event JSON, with the events, tracks and arguments expected."""

import json

import numpy as np
import pytest

import nvhcq
from conftest import run_or_skip_on_mock


def check_trace_format(trace):
    """The trace-event format's rules for the phases the profiler writes."""
    assert isinstance(trace["traceEvents"], list)
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and e["ph"] in ("M", "X", "i", "s", "f")
        assert isinstance(e["pid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and "name" in e["args"]
            continue
        assert isinstance(e["tid"], int) and isinstance(e["ts"], (int, float))
        if e["ph"] == "X":
            assert e["dur"] >= 0
        if e["ph"] in ("s", "f"):
            assert isinstance(e["id"], int)
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    starts = {e["id"] for e in flows if e["ph"] == "s"}
    assert starts == {e["id"] for e in flows if e["ph"] == "f"}


def events(trace, cat):
    return [e for e in trace["traceEvents"] if e.get("cat") == cat]


def test_start_stop_errors():
    with pytest.raises(nvhcq.NvhcqError, match="not recording"):
        nvhcq.profile_stop()
    with pytest.raises(nvhcq.NvhcqError, match="path is empty"):
        nvhcq.profile_start("")


def test_copies_signals_waits(dev, tmp_path):
    path = tmp_path / "trace.json"
    a = np.arange(1 << 18, dtype=np.float32)
    x, y = dev.array(a), dev.buffer(a.nbytes)
    done, gate = dev.signal(), dev.signal(1)
    nvhcq.profile_start(path)
    with pytest.raises(nvhcq.NvhcqError, match="already records"):
        nvhcq.profile_start(path)
    q = dev.queue("copy")
    q.wait(gate, 1)
    q.copy(y, x, a.nbytes)
    q.signal(done, 1)
    q.submit()
    done.wait(1)
    r = dev.queue("copy", recorded=True)
    n = r.var("n", 4096)
    r.copy(x, y, n)
    r.signal(done, r.var("v", 2))
    r.finish()
    for _ in range(3):
        r.submit()
    r.wait_idle()
    nvhcq.profile_stop()
    trace = json.loads(path.read_text())
    check_trace_format(trace)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert {"host", "submissions", "compute channel", "copy channel"} <= names
    assert any(n.startswith("GPU 0: ") for n in names)
    copies = events(trace, "copy")
    assert [c["args"]["bytes"] for c in copies] == [a.nbytes, 4096, 4096, 4096]
    assert all(c["pid"] == 1 and c["tid"] == 2 and c["args"]["GB/s"] >= 0 for c in copies)
    assert [c["args"]["run"] for c in copies[1:]] == [0, 1, 2]
    assert [s["args"]["value"] for s in events(trace, "signal")] == [1, 2, 2, 2]
    waits = events(trace, "wait")
    assert len(waits) == 1 and waits[0]["args"]["value"] == 1
    submits = events(trace, "submit")
    assert len(submits) == 4 and all(s["pid"] == 0 for s in submits)
    # On one channel the GPU's operations do not overlap, and each starts after its submission.
    gpu = sorted((e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 1),
                 key=lambda e: e["ts"])
    for before, after in zip(gpu, gpu[1:]):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    assert trace["otherData"]["lost_operations"] == 0


def test_launches(dev, tmp_path):
    try:
        mod = dev.module('extern "C" __global__ void fill(unsigned *o, unsigned v, int n) {'
                         ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = v; }')
    except nvhcq.NvhcqError as e:
        pytest.skip(f"SKIP: needs NVRTC ({e.message})")
    path = tmp_path / "launch.json"
    out = dev.buffer(4 << 20)
    nvhcq.profile_start(path)
    try:
        q = dev.queue()
        done = dev.signal()
        for v in range(3):
            q.launch(mod.fill, 4096, 256, out, v, 1 << 20)
        q.signal(done, 1)
        q.submit()
        run_or_skip_on_mock(dev, done.wait, 1)
        gpu_ns = mod.fill(out, 7, 1 << 20, grid=4096, block=256)
    finally:
        nvhcq.profile_stop()
    trace = json.loads(path.read_text())
    check_trace_format(trace)
    kernels = events(trace, "kernel")
    assert [k["name"] for k in kernels] == ["fill"] * 4
    assert all(k["args"]["grid"] == "4096,1,1" and k["args"]["block"] == "256,1,1" and
               k["tid"] == 1 for k in kernels)
    # The last one is kernel_launch_cpu_wait's, which times it from a host release before the
    # launch; the profiler's start is its own release right after that one. On the H200 the two
    # differed by 1.4 us for this 5.8 us kernel (4384 ns against 5760) when the profiler took a
    # second release there: allowed here.
    assert abs(kernels[-1]["args"]["gpu_ns"] - gpu_ns) <= 0.02 * gpu_ns + 2000
    assert np.all(out.numpy(np.uint32) == 7)


def test_cli_profile_and_svg(dev, tmp_path):
    """nvhcq profile -- PROGRAM writes the program's trace; --svg draws it."""
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    cli = Path(nvhcq.lib.nvhcq_path).resolve().parent / "nvhcq"
    if not cli.exists():
        pytest.skip(f"SKIP: no nvhcq command beside {nvhcq.lib.nvhcq_path}")
    program = tmp_path / "copies.py"
    program.write_text(
        "import numpy as np, nvhcq\n"
        "dev = nvhcq.Device(0)\n"
        "x = dev.array(np.arange(65536, dtype=np.float32))\n"
        "y = dev.buffer(x.size)\n"
        "q, s = dev.queue('copy'), dev.signal()\n"
        "for i in range(5):\n"
        "    q.copy(y, x, x.size)\n"
        "q.signal(s, 1)\n"
        "q.submit()\n"
        "s.wait(1)\n"
        "assert (y.numpy(np.float32) == np.arange(65536)).all()\n"
        "dev.close()\n")
    env = dict(os.environ, PYTHONPATH=str(Path(nvhcq.__file__).parent.parent),
               NVHCQ_LIBRARY=str(nvhcq.lib.nvhcq_path))
    trace, svg = tmp_path / "t.json", tmp_path / "t.svg"
    run = subprocess.run([str(cli), "profile", "-o", str(trace), "--svg", str(svg), "--",
                          sys.executable, str(program)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    t = json.loads(trace.read_text())
    check_trace_format(t)
    gpu_copies = [e for e in events(t, "copy") if e["pid"] == 1]
    host_copies = [e for e in events(t, "copy") if e["pid"] == 0]
    assert len(gpu_copies) == 5 and all(e["args"]["bytes"] == 65536 * 4 for e in gpu_copies)
    assert [e["name"].split()[0] for e in host_copies] == ["write", "read"]
    root = ET.parse(svg).getroot()
    rects = list(root.iter("{http://www.w3.org/2000/svg}rect"))
    assert len(rects) >= 1 + 5 + 2 + 1  # background, copies, host copies, submission
    titles = [el.text for el in root.iter("{http://www.w3.org/2000/svg}title")]
    assert sum(title.startswith("copy 256.0 KiB") for title in titles) == 5
    # Drawing a trace alone.
    svg2 = tmp_path / "again.svg"
    run = subprocess.run([str(cli), "profile", "--svg", str(trace), "-o", str(svg2)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert svg2.read_bytes() == svg.read_bytes()
