"""nvhcq.triton: the parameter block made from a CompiledKernel's signature (checked here
without Triton, on stand-ins of its structure), and a real triton.compile(...) launched through
nvhcq where Triton and a GPU are there."""

import struct
from types import SimpleNamespace

import numpy as np
import pytest

import nvhcq.triton as nt
from conftest import run_or_skip_on_mock


def compiled_stub(signature, constants=None, arg_names=None, **metadata):
    md = dict(name="k", num_warps=4, shared=0, num_ctas=1, cluster_dims=(1, 1, 1),
              global_scratch_size=0, profile_scratch_size=0, launch_cooperative_grid=False)
    md.update(metadata)
    return SimpleNamespace(
        asm={"cubin": b""}, metadata=SimpleNamespace(**md),
        src=SimpleNamespace(signature=signature, constants=constants or {},
                            fn=SimpleNamespace(arg_names=arg_names or list(signature))))


def test_signature_by_name_with_constexpr():
    # Triton 3.2+: the signature names every argument, constexprs typed "constexpr".
    c = compiled_stub({"x": "*fp32", "flag": "i1", "h": "fp16", "n": "i32", "s": "i64",
                       "BLOCK": "constexpr"}, constants={"BLOCK": 1024})
    data = nt.pack_args(c, (0x1000, 1, 1.5, 7, -2, 1024))
    assert data == (struct.pack("<Q", 0x1000) + b"\x01" + b"\x00" + np.float16(1.5).tobytes() +
                    struct.pack("<i", 7) + struct.pack("<q", -2))
    # The kernel's own arguments alone work too.
    assert nt.pack_args(c, (0x1000, 1, 1.5, 7, -2)) == data


def test_signature_by_index_with_specialised_constant():
    # Triton 3.0: signature and constants by position; a specialised argument (equal to 1) is
    # a constant and not passed.
    c = compiled_stub({0: "*fp16", 1: "i32", 2: "i32", 3: "fp32"}, constants={2: 1},
                      arg_names=["p", "n", "stride", "scale"])
    assert nt.pack_args(c, (8, 5, 1, 0.5)) == struct.pack("<Qif", 8, 5, 0.5)


def test_bf16_rounds_to_nearest_even():
    c = compiled_stub({"v": "bf16"})
    assert nt.pack_args(c, (1.0,)) == struct.pack("<H", 0x3F80)
    assert nt.pack_args(c, (1.00390625,)) == struct.pack("<H", 0x3F80)  # halfway: to even


def test_unsupported_launches_say_so():
    with pytest.raises(NotImplementedError, match="clusters"):
        nt.launch(compiled_stub({"x": "*fp32"}, num_ctas=2), 1, 0)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        nt.pack_args(compiled_stub({"x": "*fp32", "n": "i32"}), (1, 2, 3))



def _triton_add():
    triton = pytest.importorskip("triton", reason="SKIP: needs Triton (pip install triton)")
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs,
                                                                            mask=mask), mask=mask)

    return triton, add


def _compile(triton, fn, arch):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
           "BLOCK": "constexpr"}
    try:  # Triton 3.3+
        src = ASTSource(fn=fn, signature=sig, constexprs={"BLOCK": 1024})
    except TypeError:  # Triton 3.2
        src = ASTSource(fn=fn, signature=sig, constants={"BLOCK": 1024})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})


def test_triton_add_through_nvhcq(dev):
    triton, add = _triton_add()
    arch = int(dev.arch[3:].rstrip("a"))
    compiled = _compile(triton, add, arch)
    n = 100_000
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = np.zeros(n, np.float32)
    grid = ((n + 1023) // 1024,)
    # numpy arrays: copied to the GPU and back.
    run_or_skip_on_mock(dev, nt.launch, compiled, grid, x, y, out, n, 1024, device=dev)
    assert np.array_equal(out, x + y)
    # nvhcq buffers, recorded on a queue.
    bx, by, bo = dev.array(x), dev.array(y), dev.buffer(4 * n)
    q = dev.queue()
    done = dev.signal()
    nt.launch(compiled, grid, bx, by, bo, n, 1024, queue=q)
    q.signal(done, 1)
    q.submit()
    done.wait(1)
    assert np.array_equal(bo.numpy(np.float32), x + y)
