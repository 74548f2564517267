"""Gated vector loads (lowering/cemit.py): four gated f32 loads of consecutive
addresses that share one gate and one alternative value become one 16-byte load
taken when the gate holds (else the alternative in every lane); lanes with
different gates stay scalar. Every kernel is run and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import Target, compile_kernel
from tests.budgets import QUALITY
from workloads import make

NO_SPLIT = Target(split_gates=False)  # keep the gates in the loop body


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


def _gated_copy(n: int, gate_of, alt: float | None) -> UOp:
    """``out[4r + l] = gate_of(r, l) ? x[4r + l] : alt`` over ``r < n // 4``, the four
    lanes unrolled (one STORE each)."""
    out, x = UOp.buffer(0, dtypes.f32, n), UOp.buffer(1, dtypes.f32, n)
    r = UOp.range(n // 4, 0)
    stores = []
    for lane in range(4):
        a = r * 4 + lane if lane else r * 4
        w = gate_of(r, lane).where(a, UOp.invalid())
        src = (UOp(Ops.INDEX, x.dtype, (x, w)),)
        if alt is not None:
            src += (UOp.const(dtypes.f32, alt),)
        val = UOp(Ops.LOAD, dtypes.f32, src)
        stores.append(UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, a)), val)))
    body = UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (body, r)),))


def _run(graph: UOp, n: int, cache) -> tuple[np.ndarray, np.ndarray, str]:
    ck = compile_kernel(graph, optimize=False, target=NO_SPLIT, cache_dir=cache)
    x = np.arange(1, n + 1, dtype=np.float32)
    out = np.full(n, -1.0, np.float32)
    ck(out, x)
    return out, x, _main(ck.c_source)


def _main(src: str) -> str:
    """The kernel's function (its aligned copy, where there is one, comes before it)."""
    return src[src.index("void kernel("):]


#        n   cut  alt    (gate r < cut, shared by the four lanes of a row)
@pytest.mark.parametrize("n,cut,alt", [
    (16, 2, None),
    (40, 7, 7.5),
    (12, 0, -2.0),
    (12, 3, None),
])
def test_shared_gate_is_one_vector_load(n, cut, alt, cache) -> None:
    out, x, src = _run(_gated_copy(n, lambda r, lane: r.lt(cut), alt), n, cache)
    want = np.where(np.arange(n) // 4 < cut, x, np.float32(alt or 0.0))
    assert np.array_equal(out, want)
    assert src.count("__builtin_memcpy(&vec") == 1  # one (gated) vector load, no scalar ones
    assert "val" not in src[src.index(" kernel("):]


@pytest.mark.parametrize("n,cut", [(16, 5), (24, 13)])
def test_lanes_with_their_own_gates_stay_scalar(n, cut, cache) -> None:
    out, x, src = _run(_gated_copy(n, lambda r, lane: (r * 4 + lane).lt(cut), None), n, cache)
    assert np.array_equal(out, np.where(np.arange(n) < cut, x, np.float32(0)))
    assert "__builtin_memcpy(&vec" not in src


#  shape     chain: pad, transpose, shrink (a gated transpose: the bench copy, small)
@pytest.mark.parametrize("shape,padding,bounds", [
    ((20, 24), ((4, 4), (0, 6)), ((0, 24), (2, 26))),
    ((13, 8), ((3, 2), (0, 4)), ((0, 12), (1, 17))),
    ((9, 12), ((4, 3), (0, 0)), ((0, 12), (0, 16))),
])
def test_gated_transpose_matches_numpy(shape, padding, bounds, cache) -> None:
    chain = [("pad", padding), ("permute", (1, 0)), ("shrink", bounds)]
    k = make("copy", shape=shape, chain=chain, loops="auto")
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    for target in (Target(), NO_SPLIT):
        # the code shape checked below is the fully optimized graph's: a run cut short
        # by the default 2 s budget on a loaded machine keeps a gate the lanes share
        ck = compile_kernel(k.graph, optimize=True, target=target, cache_dir=cache,
                            budget=QUALITY)
        bufs = k.buffers([x])
        ck(*bufs)
        assert np.array_equal(bufs[0].reshape(k.output_shape), k.reference(x))
        if target is NO_SPLIT:  # the register tile's four row loads, each gated as a whole
            assert _main(ck.c_source).count(") __builtin_memcpy(&vec") == 4
            assert "val" not in _main(ck.c_source)
