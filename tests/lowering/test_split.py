"""Index-set splitting of gated loops (lowering.split) and the Tiling/auto schedules
of the builders: correct against numpy, division-free, and shaped as intended."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import Target, compile_kernel, lower_graph
from lowering.split import fold_decided, split_gated_ranges, split_points
from workloads import Tiling, make

PLAIN_C = Target(fast_div=False)
NO_SPLIT = Target(split_gates=False)


def _body(src: str) -> str:
    return src[src.find("void kernel("):]


def _run(k, optimize="baseline", target=None, seed=0):
    ins = k.random_inputs(seed)
    ck = compile_kernel(k.graph, optimize=optimize, target=target)
    bufs = k.buffers(ins)
    ck(*bufs)
    got, want = bufs[0].reshape(k.output_shape), k.reference(*ins)
    if k.dtype.is_float and k.spec.kind != "movement":  # sums: rounding order may differ
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    return ck


# ---- split points and folding ------------------------------------------------------------

R = UOp.range(10, 0)


@pytest.mark.parametrize("cmp,points", [
    (R.lt(4), [4]),                              # r < 4
    (UOp.const(dtypes.index, 6).lt(R), [7]),     # 6 < r  <=>  r >= 7
    ((R + 2).lt(5), [3]),                        # r + 2 < 5  <=>  r < 3
    (R.lt(0), []),                               # never true: no point inside (0, 10)
    (R.lt(10), []),                              # always true
    ((R * 2).lt(5), [3]),                        # 2r < 5  <=>  r < 3
    ((R * -3).lt(-7), [3]),                      # -3r < -7  <=>  r >= 3
    (R.lt(R * R), []),                           # not affine in r: left alone
    # a tiled index 4*r + s (s < 4): decided below 2, mixed at 2, decided from 3 on
    ((R * 4 + UOp.range(4, 1)).lt(9), [2, 3]),
    ((R * 4 + UOp.range(4, 1)).lt(8), [2]),      # tile-aligned bound: no mixed tile
    (UOp.const(dtypes.index, 9).lt(R * 4 - UOp.range(4, 1)), [3, 4]),
])
def test_split_points(cmp, points) -> None:
    assert split_points(cmp.where(R, UOp.invalid()), R) == points


def test_fold_decided_uses_bounds() -> None:
    r = UOp.range(5, 1)
    g = ((r + 4).lt(9) & ~r.lt(0)).where(r, UOp.invalid())
    assert fold_decided(g) is r                   # both comparisons hold on [0, 5)
    off = (r + 9).lt(9).where(r, UOp.invalid())
    assert fold_decided(off).src[0].arg is False  # gate off: where(False, .., Invalid) kept


def test_split_builds_pieces_in_order() -> None:
    k = make("pad", shape=(5,), padding=((2, 3),))
    g = split_gated_ranges(lower_graph(k.graph, optimize="baseline").graph)
    sizes = [u.src[0].arg for u in g.toposort() if u.op is Ops.RANGE]
    assert sorted(sizes) == [2, 3, 5]
    assert not any(u.op is Ops.LT for u in g.toposort())  # every gate decided


def _check_gated_copy(n: int, i: UOp, ends: tuple[UOp, ...], cut: int) -> None:
    """``out[i] = i < cut ? x[i] : 0`` over the loops ``ends`` closes, split: no gate is
    left, and the compiled kernel computes it."""
    out, x = UOp.buffer(0, dtypes.f32, n), UOp.buffer(1, dtypes.f32, n)
    gated = UOp(Ops.INDEX, x.dtype, (x, i.lt(cut).where(i, UOp.invalid())))
    val = UOp(Ops.LOAD, dtypes.f32, (gated,))
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, i)), val))
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, *ends)),))
    split = split_gated_ranges(g)
    assert not any(u.op is Ops.LT for u in split.toposort())
    ck = compile_kernel(split, optimize=False)
    xs, o = np.arange(1, n + 1, dtype=np.float32), np.full(n, -1, np.float32)
    ck(o, xs)
    np.testing.assert_array_equal(o, np.where(np.arange(n) < cut, xs, 0))


def test_tiled_gate_splits_outer_then_inner() -> None:
    """A gate on ``4*r + s`` (r outer, s inner): the outer range splits at the tiles
    wholly valid / mixed, and the mixed tile's inner range in turn; no gate is left."""
    r, s = UOp.range(5, 0), UOp.range(4, 1)
    _check_gated_copy(20, r * 4 + s, (r, s), 10)


def test_a_loop_folded_to_a_constant_is_not_split() -> None:
    """An END may close a constant where the optimizer folded a one-iteration loop to
    its only index (0): it has no split points, and the real ranges still split."""
    zero, r = UOp.const(dtypes.index, 0), UOp.range(6, 1)
    assert split_points(r.lt(4).where(r, UOp.invalid()), zero) == []
    _check_gated_copy(6, r, (zero, r), 4)


def test_split_respects_max_loops() -> None:
    k = make("pad", shape=(3, 5, 7), padding=((0, 2), (1, 1), (3, 0)))
    g = lower_graph(k.graph, optimize="baseline").graph
    assert split_gated_ranges(g, max_loops=0) is g


# ---- pad kernels: split loops, correct either way ------------------------------------------

PADS = [
    {"shape": (4, 6), "padding": ((1, 1), (2, 0))},
    {"shape": (3, 5, 7), "padding": ((0, 2), (1, 1), (3, 0))},
    {"shape": (13,), "padding": ((3, 5),)},
    {"shape": (2, 3, 4), "padding": ((1, 0), (0, 0), (2, 3))},
    {"shape": (6, 9), "padding": ((1, 2), (0, 1))},
]


@pytest.mark.parametrize("i", range(len(PADS)))
@pytest.mark.parametrize("target", [None, NO_SPLIT, PLAIN_C], ids=["split", "nosplit", "plain"])
def test_pad_split_correct(i: int, target) -> None:
    ck = _run(make("pad", **PADS[i]), target=target, seed=i)
    body = _body(ck.c_source)
    assert "/" not in body and "%" not in body
    if target is not NO_SPLIT:
        # no load is gated any more: every gate was decided by its loop piece
        assert "?" not in body, body


def test_pad_split_egraph() -> None:
    _run(make("pad", **PADS[1]), optimize="egraph")


def test_unoptimized_pad_is_not_split() -> None:
    """Gates over unsimplified idiv/mod expressions compare no plain range: no split."""
    k = make("pad", **PADS[0])
    assert lower_graph(k.graph, optimize=False).c_source.count("for (") == 2


# ---- Tiling and auto schedules, compiled ------------------------------------------------

def test_tiling_loop_orders() -> None:
    """``outer`` nests the tile loops, ``order`` the loops inside a tile."""
    k = make("permute", shape=(8, 12), order=(1, 0),
             loops=Tiling((4, 4), upcast=(2, 2), order=(1, 0), outer=(0, 1)))
    sizes = [r.src[0].arg for r in k.graph.src[0].src[1:]]
    assert sizes == [12 // 4, 8 // 4, 4 // 2, 4 // 2]
    ids = [r.arg for r in k.graph.src[0].src[1:]]
    assert ids == [0, 1, 3, 2]  # outer: axis 0 then 1; inner: axis 1 (id 3) then 0 (id 2)
    _run(k)


@pytest.mark.parametrize("params", [
    {"shape": (6, 8), "order": (1, 0)},
    {"shape": (12, 10), "order": (1, 0)},
    {"shape": (5, 7), "order": (1, 0)},
    {"shape": (4, 6, 8), "order": (2, 0, 1)},
    {"shape": (8, 4, 6), "order": (0, 2, 1)},
    {"shape": (3, 4, 8), "order": (2, 1, 0)},
])
@pytest.mark.parametrize("dtype", ["f32", "i16"])
def test_auto_permute_correct_and_division_free(params, dtype) -> None:
    k = make("permute", loops="auto", dtype=dtypes.parse(dtype), **params)
    ck = _run(k, target=PLAIN_C, seed=3)
    body = _body(ck.c_source)
    assert "/" not in body and "%" not in body, body


def test_auto_permute_egraph() -> None:
    _run(make("permute", shape=(8, 12), order=(1, 0), loops="auto"), optimize="egraph")


def test_register_tile_is_unrolled(monkeypatch) -> None:
    """A 4x4 register tile: 16 loads and 16 stores in the innermost loop, with
    constant offsets from one base address per buffer."""
    import lowering.cemit

    monkeypatch.setattr(lowering.cemit, "PREFETCH_MIN_BYTES", 0)  # a small input prefetched
    k = make("permute", shape=(8, 12), order=(1, 0),
             loops=Tiling((4, 8), upcast=(4, 4), order=(1, 0)))
    ck = _run(k, target=Target(vectorize=False))
    inner = _body(ck.c_source).split("for (")[-1]
    assert inner.count("data0[") == 16 and inner.count("data1[") == 16
    # vectorized (the default): four 16-byte loads and four 16-byte stores
    inner = _body(_run(k).c_source).split("for (")[-1]
    assert inner.count("data0[") == 4 and inner.count("__builtin_memcpy(&vec") == 4
    # reads advance 4 input rows (48 floats) per iteration: prefetched, 8 iterations ahead
    assert inner.count("__builtin_prefetch(") == 4 and "(uintptr_t)1536LL" in inner
    plain = _body(_run(k, target=Target(prefetch=0)).c_source)
    assert "__builtin_prefetch" not in plain
    monkeypatch.setattr(lowering.cemit, "PREFETCH_MIN_BYTES", 1 << 20)
    assert "__builtin_prefetch" not in _body(_run(k).c_source)  # 384 bytes stay in cache


@pytest.mark.parametrize("name,params", [
    ("matmul", {"m": 4, "k": 3, "n": 8, "loops": Tiling((2, 4), upcast=(2, 2))}),
    ("reduce", {"shape": (8, 6), "axis": 1, "loops": Tiling((4,), upcast=(2,))}),
    ("pad", {"shape": (4, 6), "padding": ((1, 1), (2, 0)),
             "loops": Tiling((3, 4), upcast=(1, 2), order=(1, 0))}),
])
def test_upcast_other_kernels(name, params) -> None:
    _run(make(name, **params))


# ---- vector loads/stores and streaming stores (Target.vectorize, streaming_stores) ----------

STREAM_ALL = Target(stream_min_bytes=0)


@pytest.mark.parametrize("target", [None, STREAM_ALL, Target(vectorize=False),
                                    Target(streaming_stores=False, stream_min_bytes=0)],
                         ids=["default", "stream", "scalar", "vector"])
@pytest.mark.parametrize("params", [
    {"shape": (8, 12), "order": (1, 0)},
    {"shape": (4, 6, 8), "order": (2, 0, 1)},
    {"shape": (12, 10), "order": (1, 0)},
])
def test_vector_tiles_correct(params, target) -> None:
    ck = _run(make("permute", loops="auto", **params), target=target, seed=2)
    body = _body(ck.c_source)
    if target is STREAM_ALL and params["shape"] == (8, 12):
        assert body.count("eqsat_stream_f32x4(") == 4, body  # 4 rows of a 4x4 tile
        assert body.count("__builtin_memcpy(&vec") == 4, body  # 4 vector loads
        assert "EQSAT_SHUFFLE(" in body
        assert "restrict data0" in body and "const float* restrict data0" not in body
    if target is not None and not target.vectorize:
        assert "eqsat_f32x4" not in ck.c_source


def _offset_copy(n: int, off: int, scale: float | None = None) -> UOp:
    """out[4r + off + k] = in[4r + k] (times ``scale``), k < 4: runs of four at any
    alignment."""
    out, inp = UOp.buffer(0, dtypes.f32, 4 * n + off), UOp.buffer(1, dtypes.f32, 4 * n)
    r = UOp.range(n, 0)

    def val(k: int) -> UOp:
        x = UOp(Ops.LOAD, dtypes.f32, (UOp(Ops.INDEX, inp.dtype, (inp, r * 4 + k)),))
        return x if scale is None else x * scale
    stores = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, r * 4 + off + k)),
                                           val(k))) for k in range(4)]
    body = UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (body, r)),))


@pytest.mark.parametrize("off", [0, 1, 2, 3])
def test_streaming_stores_any_alignment(off: int) -> None:
    """Unaligned runs take the plain vector store; the result is the same."""
    ck = compile_kernel(_offset_copy(5, off), optimize="baseline", target=STREAM_ALL)
    assert "eqsat_stream_f32x4(" in ck.c_source
    src = np.arange(20, dtype=np.float32) + 1
    for start in (0, 1):  # the output at two alignments of its own
        raw = np.zeros(20 + off + 8, np.float32)
        out = raw[start:start + 20 + off]
        ck(out, src)
        want = np.zeros(20 + off, np.float32)
        want[off:] = src
        np.testing.assert_array_equal(out, want)


def test_written_buffer_loads_stay_scalar() -> None:
    """Loads of a buffer the kernel also stores to are not grouped (no reordering)."""
    b = UOp.buffer(0, dtypes.f32, 8)
    r = UOp.range(2, 0)
    st = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, b.dtype, (b, r * 4 + k)),
                                       UOp(Ops.LOAD, dtypes.f32, (UOp(
                                           Ops.INDEX, b.dtype, (b, r * 4 + (3 - k))),))))
          for k in range(4)]
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void,
                                        (UOp(Ops.SINK, dtypes.void, tuple(st)), r)),))
    src = lower_graph(g, optimize="baseline", target=STREAM_ALL).c_source
    assert "__builtin_memcpy(&vec" not in src


@pytest.mark.parametrize("off", [0, 3])
def test_vector_groups_with_computed_values(off: int) -> None:
    """Stored values computed from the loads (not loads themselves): still correct."""
    ck = compile_kernel(_offset_copy(6, off, scale=2.0), optimize="baseline",
                        target=STREAM_ALL)
    src = np.arange(24, dtype=np.float32) - 5
    out = np.zeros(24 + off, np.float32)
    ck(out, src)
    np.testing.assert_array_equal(out[off:], src * 2)
    assert not out[:off].any()


def test_groups_found_whatever_the_association() -> None:
    """Addresses ``(4r + k) + 8s`` (the constant inside): still four consecutive loads
    and stores (the emitter compares addresses as sums of terms plus a constant)."""
    r, s = UOp.range(2, 0), UOp.range(3, 1)
    a = [(r * 4 + k) + s * 8 for k in range(4)]
    out, inp = UOp.buffer(0, dtypes.f32, 24), UOp.buffer(1, dtypes.f32, 24)
    st = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, x)), UOp(
        Ops.LOAD, dtypes.f32, (UOp(Ops.INDEX, inp.dtype, (inp, x)),)))) for x in a]
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void,
                                        (UOp(Ops.SINK, dtypes.void, tuple(st)), s, r)),))
    ck = compile_kernel(g, optimize=False, target=STREAM_ALL)
    assert _body(ck.c_source).count("__builtin_memcpy(&vec") == 1, ck.c_source
    src, dst = np.arange(24, dtype=np.float32), np.zeros(24, np.float32)
    ck(dst, src)
    np.testing.assert_array_equal(dst, src)
