"""Kernel builders (workloads) against numpy, through the reference interpreter.

Every builder's cases run with ``eqsat.run_kernel`` and must equal the numpy
reference: bit-exact for integer dtypes (wrapping), allclose for floats. View
addresses are checked against an independent numpy oracle (the same movement
chain on ``arange``), and bad input must fail with a clear ``BuildError``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat import dtypes, run_kernel
from eqsat.ir.interp import evaluate_many
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from workloads import (
    BUILDERS,
    BuildError,
    BuiltKernel,
    View,
    apply_numpy,
    make,
    reference,
    unravel,
)

CASES = [(name, i) for name, spec in BUILDERS.items() for i in range(len(spec.cases))]
CASE_IDS = [f"{n}-{i}" for n, i in CASES]


def _check(k: BuiltKernel, seed: int = 0) -> None:
    ins = k.random_inputs(seed)
    bufs = run_kernel(k.graph, k.buffers(ins))
    got = bufs[0].reshape(k.output_shape)
    want = k.reference(*ins)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if k.dtype.is_float:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    for a, b in zip(ins, bufs[1:], strict=True):  # inputs untouched
        np.testing.assert_array_equal(a.reshape(-1), b)


# ---- every builder, every case, against numpy ------------------------------------------

@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("loops", ["nd", "flat"])
def test_builder_f32(name: str, i: int, loops: str) -> None:
    _check(make(name, loops=loops, **BUILDERS[name].cases[i]))


@pytest.mark.parametrize("name,i", [c for c in CASES if not BUILDERS[c[0]].float_only],
                         ids=[x for c, x in zip(CASES, CASE_IDS, strict=True)
                              if not BUILDERS[c[0]].float_only])
@pytest.mark.parametrize("dtype", ["i32", "i8"])
def test_builder_int(name: str, i: int, dtype: str) -> None:
    _check(make(name, dtype=dtypes.parse(dtype), **BUILDERS[name].cases[i]), seed=1)


@pytest.mark.parametrize("name,params,dtype", [
    ("matmul", {"m": 5, "k": 7, "n": 3}, "u8"),          # wraps at 256
    ("conv2d", {"cin": 3, "h": 5, "w": 6, "cout": 2, "kh": 2, "kw": 3}, "i16"),
    ("cumsum", {"shape": (4, 9)}, "u32"),
    ("binary", {"op": "mul", "shape": (3, 5)}, "i64"),
    ("avgpool2d", {"h": 7, "w": 5, "kernel_size": 3, "stride": 2}, "f64"),
    ("maxpool2d", {"h": 5, "w": 7, "kernel_size": 2, "stride": 1, "padding": 1}, "i8"),
    ("unary", {"op": "neg", "shape": (5,)}, "u16"),
])
def test_builder_other_dtypes(name: str, params: dict, dtype: str) -> None:
    _check(make(name, dtype=dtypes.parse(dtype), **params), seed=2)


@pytest.mark.parametrize("name,params,tiles", [
    ("permute", {"shape": (4, 6), "order": (1, 0)}, (3, 2)),
    ("permute", {"shape": (3, 4, 5), "order": (2, 0, 1)}, (5, 1, 2)),
    ("pad", {"shape": (4, 6), "padding": ((1, 1), (2, 0))}, (2, 4)),
    ("reduce", {"shape": (4, 6), "axis": 0}, (3,)),
    ("matmul", {"m": 4, "k": 3, "n": 6}, (2, 3)),
    ("cumsum", {"shape": (3, 8)}, (1, 4)),
])
def test_tiled_loops(name: str, params: dict, tiles: tuple[int, ...]) -> None:
    k = make(name, loops=tiles, **params)
    end = k.graph.src[0]
    n = len(k.output_shape)
    ranges = [r for r in end.src[1:]]
    assert [r.src[0].arg for r in ranges[:n]] == [s // t for s, t in
                                                   zip(k.output_shape, tiles, strict=True)]
    assert [r.src[0].arg for r in ranges[n:]] == [t for t in tiles if t > 1]
    _check(k, seed=3)
    assert not k.needs_division()


def test_int_wraps_like_numpy() -> None:
    k = make("matmul", m=2, k=6, n=2, dtype=dtypes.i8)
    a = np.full((2, 6), 100, np.int8)
    b = np.full((6, 2), 3, np.int8)
    out = run_kernel(k.graph, k.buffers([a, b]))[0]
    assert (out == np.int8(np.int64(1800).astype(np.int8))).all()
    np.testing.assert_array_equal(out.reshape(2, 2), k.reference(a, b))


def test_spec_transpose_example() -> None:
    """The spec's 10x6 transpose: a flat loop unflattened by the output shape."""
    g = make("permute", shape=(10, 6), order=(1, 0), loops="flat").graph
    end = g.src[0]
    assert [r.op for r in end.src[1:]] == [Ops.RANGE] and end.src[1].src[0].arg == 60
    a = np.arange(60, dtype=np.float32)
    out = run_kernel(g, [np.zeros(60, np.float32), a.copy()])[0]
    np.testing.assert_array_equal(out, a.reshape(10, 6).T.reshape(-1))


# ---- structure of the graphs ---------------------------------------------------------

@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
def test_graph_structure(name: str, i: int) -> None:
    k = make(name, **BUILDERS[name].cases[i])
    g = k.graph
    assert g.op is Ops.SINK and len(g.src) == 1
    end = g.src[0]
    assert end.op is Ops.END and end.src[0].op is Ops.STORE
    assert all(r.op is Ops.RANGE for r in end.src[1:])
    bufs = sorted({u.arg for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL})
    assert [slot for slot, _ in bufs] == list(range(1 + len(k.input_shapes)))
    assert bufs[0][1] == math.prod(k.output_shape)
    assert [size for _, size in bufs[1:]] == [math.prod(s) for s in k.input_shapes]
    out_index = end.src[0].src[0]
    assert out_index.src[0].arg[0] == 0  # the store goes to slot 0
    assert all(u.dtype.base() is dtypes.f32 for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL)
    # unoptimized: the output index is unflattened with // and % (unless 1-D)
    if len(k.output_shape) > 1:
        assert any(u.op in (Ops.IDIV, Ops.MOD) for u in g.toposort())


def test_build_is_deterministic_and_hash_consed() -> None:
    a = make("conv2d", **BUILDERS["conv2d"].cases[1]).graph
    b = make("conv2d", **BUILDERS["conv2d"].cases[1]).graph
    assert a is b


@pytest.mark.parametrize("name", list(BUILDERS))
def test_bench_case_builds(name: str) -> None:
    spec = BUILDERS[name]
    k = make(name, **spec.bench)
    assert math.prod(k.output_shape) >= 1
    if spec.copy_like:  # benchmarks compare copies of at least 16 MiB
        assert math.prod(k.output_shape) * 4 >= 16 * 1024 * 1024


# ---- views against numpy --------------------------------------------------------------

def _view_addresses(v: View) -> tuple[np.ndarray, np.ndarray]:
    """(address, valid) of every index tuple of ``v.shape``, row-major, via the interpreter."""
    rs = [UOp.range(s, i) for i, s in enumerate(v.shape)]
    pts = np.indices(v.shape).reshape(len(v.shape), -1)
    cols = {f"R{i}": pts[i] for i in range(len(v.shape))}
    vals, invalid, undef = evaluate_many(v.address(rs), cols, n=pts.shape[1])
    assert not undef.any()
    return np.asarray(vals, dtype=np.int64), ~invalid


def _check_view(shape: tuple[int, ...], chain: list) -> None:
    v = View.contiguous(shape).apply(chain)
    ref = apply_numpy(np.arange(1, math.prod(shape) + 1).reshape(shape), chain)
    assert v.shape == ref.shape
    addr, valid = _view_addresses(v)
    np.testing.assert_array_equal(valid, ref.reshape(-1) != 0)
    np.testing.assert_array_equal(addr[valid], ref.reshape(-1)[valid] - 1)


@pytest.mark.parametrize("shape,chain", [
    ((4, 6), [("permute", (1, 0))]),
    ((4, 6), [("pad", ((1, 2), (0, 3)))]),
    ((5, 7), [("shrink", ((1, 4), (2, 7)))]),
    ((3, 5), [("flip", (0, 1))]),
    ((7, 8), [("stride", (2, -3))]),
    ((7, 8), [("pad", ((1, 1), (2, 0))), ("stride", (-2, 3))]),
    ((3, 1), [("expand", (3, 4))]),
    ((2, 3, 4), [("reshape", (4, 6)), ("permute", (1, 0)), ("reshape", (3, 8))]),
    ((4, 6), [("pad", ((1, 1), (1, 1))), ("reshape", (48,)), ("shrink", ((5, 40),))]),
    ((4, 5), [("flip", (1,)), ("pad", ((0, 2), (3, 0))), ("shrink", ((1, 6), (2, 8)))]),
    ((3, 4), [("repeat", (2, 3))]),
    ((1, 2, 7, 6), [("pool", ((3, 2), (2, 1), (1, 2)))]),
    ((2, 9), [("pool", ((4,), 3))]),
    ((6,), [("pad", ((5, 0),)), ("pool", ((6,),))]),
    ((4, 6), [("shrink", ((2, 2), (0, 6))), ("pad", ((1, 0), (0, 0)))]),  # empty then pad
])
def test_view_matches_numpy(shape: tuple[int, ...], chain: list) -> None:
    _check_view(shape, chain)


@st.composite
def _chains(draw) -> tuple[tuple[int, ...], list]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    cur, chain = shape, []
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["permute", "pad", "shrink", "flip", "stride", "reshape",
                                   "expand"]))
        n = len(cur)
        if op == "permute":
            arg = tuple(draw(st.permutations(range(n))))
        elif op == "pad":
            arg = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in cur)
        elif op == "shrink":
            arg = []
            for s in cur:
                b = draw(st.integers(0, s - 1))
                arg.append((b, draw(st.integers(b + 1, s))))
            arg = tuple(arg)
        elif op == "flip":
            arg = tuple(d for d in range(n) if draw(st.booleans()))
        elif op == "stride":
            arg = tuple(draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in cur)
        elif op == "expand":
            if 1 not in cur:
                continue
            arg = tuple(draw(st.integers(1, 3)) if s == 1 else s for s in cur)
        else:
            total = math.prod(cur)
            divs = [d for d in range(1, total + 1) if total % d == 0]
            a = draw(st.sampled_from(divs))
            arg = (a, total // a) if draw(st.booleans()) else (total,)
        chain.append((op, arg))
        cur = View.contiguous(shape).apply(chain).shape
    return shape, chain


@settings(max_examples=60)
@given(_chains())
def test_random_view_chains(sc) -> None:
    _check_view(*sc)


@settings(max_examples=12)
@given(_chains(), st.sampled_from(["nd", "flat"]))
def test_random_copy_kernels(sc, loops: str) -> None:
    shape, chain = sc
    _check(make("copy", shape=shape, chain=chain, loops=loops, dtype=dtypes.i32))


def test_view_repr_reads_back() -> None:
    v = View.contiguous((3, 4)).pad(((1, 0), (0, 2))).permute((1, 0)).reshape((2, 12))
    assert eval(repr(v), {"View": View}) == v
    assert len(v.layers) == 2 and v.buffer_size == 12


def test_unravel_is_tinygrads() -> None:
    r = UOp.range(60, 0)
    i0, i1, i2 = unravel((3, 4, 5), r)
    assert i2 is r % 5 and i1 is (r // 5) % 4 and i0 is ((r // 5) // 4) % 3


@pytest.mark.parametrize("shape,chain,loops,needs", [
    ((4, 6), [("permute", (1, 0))], "nd", False),
    ((4, 6), [("permute", (1, 0))], "flat", True),
    ((4, 6), [], "flat", False),
    ((4, 6), [("flip", (0, 1))], "flat", False),               # a reversed flat index
    ((4, 6), [("reshape", (2, 12))], "nd", False),             # merge, then re-flatten
    ((3, 7), [("flip", (1,)), ("reshape", (7, 3))], "nd", True),
    ((4, 6), [("flip", (0,)), ("reshape", (2, 12)), ("stride", (1, 3))], "nd", True),
    ((2, 3, 5), [("permute", (2, 0, 1)), ("reshape", (5, 6)), ("pad", ((0, 1), (2, 0)))],
     "nd", False),                                             # 15*(x//3) + 5*(x%3) == 5*x
    ((4, 6), [("pad", ((1, 1), (0, 2))), ("reshape", (3, 2, 8))], "nd", False),
])
def test_needs_division(shape, chain, loops, needs) -> None:
    assert make("copy", shape=shape, chain=chain, loops=loops).needs_division() is needs


# ---- the registry and numpy references -------------------------------------------------

def test_reference_by_name() -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(reference("permute", a, shape=(4, 6), order=(1, 0)), a.T)
    np.testing.assert_array_equal(reference("pad", a.reshape(-1), shape=(4, 6),
                                            padding=((0, 1), (1, 0))),
                                  np.pad(a, ((0, 1), (1, 0))))
    b = np.arange(12, dtype=np.int32).reshape(6, 2)
    np.testing.assert_array_equal(reference("matmul", a.astype(np.int32), b, m=4, k=6, n=2),
                                  a.astype(np.int32) @ b)


def test_registry_specs_are_consistent() -> None:
    for name, spec in BUILDERS.items():
        assert spec.name == name and len(spec.cases) >= 2
        assert repr(spec) == f"BUILDERS[{name!r}]"
        shapes = [make(name, **c).output_shape for c in spec.cases]
        # several shapes, including ones that are not powers of two
        assert len(set(shapes)) >= 2
        assert any(any(s & (s - 1) for s in sh) for sh in shapes), name


# ---- bad input: clear errors ----------------------------------------------------------

@pytest.mark.parametrize("fn,match", [
    (lambda: View.contiguous((4, 6)).permute((0, 0)), "invalid permutation"),
    (lambda: View.contiguous((4, 6)).pad(((1, 1),)), "padding"),
    (lambda: View.contiguous((4, 6)).pad(((-1, 1), (0, 0))), "negative padding"),
    (lambda: View.contiguous((4, 6)).shrink(((0, 5), (0, 6))), "invalid shrink"),
    (lambda: View.contiguous((4, 6)).reshape((5, 5)), "cannot reshape"),
    (lambda: View.contiguous((4, 6)).expand((4, 7)), "cannot expand"),
    (lambda: View.contiguous((4, 6)).stride((1, 0)), "non-zero"),
    (lambda: View.contiguous((4, 6)).flip((2,)), "flip axes"),
    (lambda: View.contiguous((4, 6)).apply([("transpose", (1, 0))]), "unknown movement"),
    (lambda: View.contiguous((4, 6)).apply(["permute"]), r"\(op, arg\)"),
    (lambda: View.contiguous((3, 3)).pool((4, 1)), "larger than the input"),
    (lambda: View((4,), (2,), 0, None, None, 6), r"addresses \[0, 6\] outside the 6"),
    (lambda: View.contiguous((4, 6)).flip((1, -1)), "repeated axis"),
    (lambda: View((4,), (1,), -1, None, None, 8), "outside"),
    (lambda: View((4, 2), (1,), 0, None, None, 8), "strides"),
    (lambda: View((4,), (1,)), "needs its size"),
    (lambda: View.contiguous((2, -1)), "non-negative"),
    (lambda: make("nope"), "unknown builder"),
    (lambda: make("unary", op="sqrt", dtype=dtypes.i32), "float dtype"),
    (lambda: make("unary_float", dtype=dtypes.i32), "float dtype"),
    (lambda: make("binary", op="pow"), "unknown op"),
    (lambda: make("binary", shape=(4, 6), shape2=(6, 4)), "different view shapes"),
    (lambda: make("reduce", op="mean"), "unknown reduce op"),
    (lambda: make("reduce", shape=(5,), axis=0), "empty output"),
    (lambda: make("reduce", axis=3), "axis 3 out of range"),
    (lambda: make("permute", loops="tiled"), "loops must be"),
    (lambda: make("permute", shape=(4, 6), loops=(4, 4)), "must divide the output shape"),
    (lambda: make("permute", shape=(4, 6), loops=(2,)), "must divide the output shape"),
    (lambda: make("permute", dtype=dtypes.bool), "scalar float or fixed-width int"),
    (lambda: make("permute", dtype="f32x4"), "scalar float"),
    (lambda: make("conv2d", h=2, kh=3), "larger than the padded input"),
    (lambda: make("maxpool2d", op="min"), "unexpected keyword"),
    (lambda: reference("matmul", np.zeros((3, 5))), "1 arrays for 2 inputs"),
    (lambda: make("permute", dtype=dtypes.bf16).random_inputs(), "no numpy dtype"),
])
def test_bad_input(fn, match) -> None:
    with pytest.raises((BuildError, TypeError), match=match):
        fn()


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        View.contiguous((4, 6)).reshape((7,))
