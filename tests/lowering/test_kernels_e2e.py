"""Builder kernels end to end: optimize -> lower -> compile -> run, against the
reference interpreter and numpy; and the optimized C of copy-like kernels is
division-free wherever a division-free form exists.

A kernel's loads address its inputs through views; ``BuiltKernel.needs_division()``
decides, by exact evaluation, whether a division-free form exists with the
kernel's loops (the address is affine in the loop indices where valid, and
every mask compares an affine index). Those kernels must come out of the
optimizer with no ``idiv``/``mod`` at all: none in the optimized graph and no
``/`` or ``%`` in its C (emitted with ``Target(fast_div=False)``, so a
remaining division is visible as one rather than as a multiply-shift). The
views that genuinely need a division are listed in ``INHERENT`` and checked to
be so, so the list cannot hide an optimizer miss.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat import dtypes, run_kernel
from eqsat.ir.ops import Ops
from lowering import Target, compile_kernel
from tests.budgets import QUALITY
from workloads import BUILDERS, BuiltKernel, View, make

CASES = [(name, i) for name, spec in BUILDERS.items() for i in range(len(spec.cases))]
CASE_IDS = [f"{n}-{i}" for n, i in CASES]
COPY_CASES = [c for c in CASES if BUILDERS[c[0]].copy_like]
COPY_IDS = [f"{n}-{i}" for n, i in COPY_CASES]
PLAIN_C = Target(fast_div=False)  # keep constant divisions as / and % in the C

# (builder, case) whose view needs a division with one loop per axis (verified below):
INHERENT = {
    # flip rows, merge to (2, 12), take every 3rd column: a column step of 3 crosses the
    # flipped 6-wide rows at positions the loops do not share -> (3*c)//6 is inherent
    ("copy", 1): "flip + reshape(2, 12) + stride 3 splits a 12-wide loop at 6",
    # (3, 7) flipped, re-read as (7, 3): each 3-wide output row straddles 7-wide input rows
    ("reshape", 5): "reshape (3, 7) -> (7, 3) of a flipped view: 3 and 7 share no boundary",
}


# Known optimizer misses: the kernel must still be correct, and its remaining divisions are
# counted exactly. Fewer fails too (the entry is stale: lower or drop it), so a miss that
# grows, or a new one, never goes unseen.
KNOWN_MISSES = {
    ("baseline", "copy-3"): (3, "baseline: flip's -1 coefficient breaks ((x//3)%7)*3 + x%3 -> x"),
    ("baseline", "hard0"): (3, "baseline: flip's -1 coefficient breaks ((x//3)%7)*3 + x%3 -> x"),
    ("baseline", "hard2"): (1, "baseline: flip's -1 coefficient breaks the mod-4 recombination"),
}


def _assert_division_free(graph, optimize: str, label: str) -> int:
    """No index division left but those by a power of two of a non-negative numerator
    (a shift or a mask in the C, which the callers check has no ``/`` or ``%``): the
    default cost model prices them so, and may keep one shared, e.g. ``X >> 3`` with
    ``X`` the store index, rather than rebuild ``X // 8`` from the loop variables.
    A known miss must leave exactly its listed number of divisions (returned)."""
    n = _real_divisions(graph)
    want, why = KNOWN_MISSES.get((optimize, label), (0, ""))
    if n > want:
        pytest.fail(f"{optimize} left {n} divisions on {label}, more than the {want} "
                    f"expected{f' ({why})' if why else ''}: {graph}")
    if n < want:
        pytest.fail(f"{optimize} left {n} divisions on {label}, fewer than the {want} "
                    f"the known miss expects: lower or drop its KNOWN_MISSES entry ({why})")
    return n


def _c_body(src: str) -> str:
    """The kernel function of the C source, comments and preprocessor lines removed."""
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    start = src.find("void kernel(")
    assert start >= 0, src
    return src[start:]


def _index_divisions(graph) -> int:
    return sum(1 for u in graph.toposort() if u.op in (Ops.IDIV, Ops.MOD) and u.dtype.is_index)


def _real_divisions(graph) -> int:
    """Index divisions the lowering cannot make a shift or a mask."""
    def shift(u) -> bool:
        d, x = u.src[1], u.src[0]
        return (d.op is Ops.CONST and isinstance(d.arg, int) and d.arg > 0
                and d.arg & (d.arg - 1) == 0 and x.vmin >= 0)
    return sum(1 for u in graph.toposort()
               if u.op in (Ops.IDIV, Ops.MOD) and u.dtype.is_index and not shift(u))


def _run_compiled(k: BuiltKernel, optimize, inputs, target=None) -> tuple[np.ndarray, object]:
    ck = compile_kernel(k.graph, optimize=optimize, target=target, budget=QUALITY)
    bufs = k.buffers(inputs)
    ck(*bufs)
    for a, b in zip(inputs, bufs[1:], strict=True):
        np.testing.assert_array_equal(a.reshape(-1), b)  # inputs untouched
    return bufs[0].reshape(k.output_shape), ck


def _same(k: BuiltKernel, got: np.ndarray, want: np.ndarray) -> None:
    if k.dtype.is_float:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def _check(k: BuiltKernel, optimize, seed: int = 0) -> object:
    ins = k.random_inputs(seed)
    got, ck = _run_compiled(k, optimize, ins)
    interp = run_kernel(k.graph, k.buffers(ins))[0].reshape(k.output_shape)
    _same(k, got, interp)
    _same(k, got, k.reference(*ins))
    return ck


# ---- every builder case: compiled C == interpreter == numpy -----------------------------

@pytest.mark.parametrize("name,i", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("optimize", [False, "baseline"])
def test_e2e(name: str, i: int, optimize) -> None:
    _check(make(name, **BUILDERS[name].cases[i]), optimize)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_e2e_egraph(name: str) -> None:
    """The default optimizer (the e-graph) on the first case of every builder."""
    _check(make(name, **BUILDERS[name].cases[0]), "egraph")


@pytest.mark.parametrize("name,params", [
    ("permute", {"shape": (5, 7), "order": (1, 0), "loops": "flat"}),
    ("pad", {"shape": (3, 5, 7), "padding": ((0, 2), (1, 1), (3, 0)), "loops": "flat"}),
    ("reshape", {"shape": (6, 5), "new_shape": (3, 2, 5), "loops": "flat"}),
    ("permute", {"shape": (6, 8), "order": (1, 0), "loops": (4, 3)}),
    ("conv2d", {"cin": 2, "h": 6, "w": 5, "cout": 2, "kh": 3, "kw": 2, "loops": "flat"}),
    ("cumsum", {"shape": (3, 7), "loops": "flat"}),
    ("reduce", {"shape": (3, 4, 5), "axis": 1, "loops": "flat"}),
])
@pytest.mark.parametrize("optimize", [False, "baseline", "egraph"])
def test_e2e_other_loops(name: str, params: dict, optimize) -> None:
    _check(make(name, **params), optimize, seed=4)


@pytest.mark.parametrize("name,params,dtype", [
    ("matmul", {"m": 5, "k": 7, "n": 3}, "i32"),
    ("matmul", {"m": 5, "k": 7, "n": 3}, "u8"),
    ("conv2d", {"cin": 2, "h": 5, "w": 6, "cout": 2, "kh": 2, "kw": 3, "padding": 1}, "i16"),
    ("maxpool2d", {"h": 5, "w": 7, "kernel_size": 3, "stride": 2, "padding": 1}, "i8"),
    ("avgpool2d", {"h": 7, "w": 5, "kernel_size": 3, "stride": 2}, "i32"),
    ("cumsum", {"shape": (4, 9)}, "i64"),
    ("permute", {"shape": (3, 5, 7), "order": (2, 0, 1)}, "u16"),
    ("binary", {"op": "mul", "shape": (3, 5), "shape2": (5, 3),
                "chain2": [("permute", (1, 0))]}, "i8"),
    ("avgpool2d", {"h": 6, "w": 6, "kernel_size": 3, "stride": 3}, "f64"),
])
@pytest.mark.parametrize("optimize", [False, "baseline"])
def test_e2e_int_dtypes(name: str, params: dict, dtype: str, optimize) -> None:
    _check(make(name, dtype=dtypes.parse(dtype), **params), optimize, seed=5)


# ---- division-free copies ------------------------------------------------------------------

def test_inherent_list_is_honest() -> None:
    """Every INHERENT entry really needs a division; every other copy case does not."""
    for name, i in COPY_CASES:
        k = make(name, **BUILDERS[name].cases[i])
        assert k.needs_division() is ((name, i) in INHERENT), (name, i)


@pytest.mark.parametrize("name,i", COPY_CASES, ids=COPY_IDS)
@pytest.mark.parametrize("optimize", ["egraph", "baseline"])
def test_copies_are_division_free(name: str, i: int, optimize) -> None:
    k = make(name, **BUILDERS[name].cases[i])
    assert _index_divisions(k.graph) > 0  # there was work to do
    ins = k.random_inputs(6)
    got, ck = _run_compiled(k, optimize, ins, target=PLAIN_C)
    _same(k, got, k.reference(*ins))
    body = _c_body(ck.c_source)
    if (name, i) in INHERENT:
        return  # correct above; its division cannot go with one loop per axis
    if _assert_division_free(ck.graph, optimize, f"{name}-{i}") == 0:
        assert "/" not in body and "%" not in body, body


# views found by random movement chains that have a division-free form one optimizer or
# the other missed; each must come out division-free
HARD_VIEWS = [
    ((7, 3), [("reshape", (21,)), ("shrink", ((2, 20),)), ("reshape", (3, 6)), ("flip", (1,))]),
    ((5, 4, 1), [("expand", (5, 4, 3)), ("stride", (-1, 1, 2)), ("flip", (0, 2)),
                 ("flip", (2,))]),
    ((2, 1, 4), [("reshape", (1, 8)), ("flip", (1,)), ("shrink", ((0, 1), (1, 8))),
                 ("pad", ((1, 0), (0, 0)))]),
    ((3, 5), [("flip", (0, 1)), ("reshape", (15,)), ("pad", ((2, 3),)), ("reshape", (4, 5))]),
]


@pytest.mark.parametrize("i", range(len(HARD_VIEWS)), ids=[f"hard{i}" for i in
                                                         range(len(HARD_VIEWS))])
@pytest.mark.parametrize("optimize", ["egraph", "baseline"])
def test_hard_views_are_division_free(i: int, optimize) -> None:
    shape, chain = HARD_VIEWS[i]
    k = make("copy", shape=shape, chain=chain)
    assert not k.needs_division()
    ins = k.random_inputs(8)
    got, ck = _run_compiled(k, optimize, ins, target=PLAIN_C)
    _same(k, got, k.reference(*ins))
    _assert_division_free(ck.graph, optimize, f"hard{i}")


@st.composite
def _chains(draw) -> tuple[tuple[int, ...], list]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    chain: list = []
    for _ in range(draw(st.integers(1, 4))):
        cur = View.contiguous(shape).apply(chain).shape
        op = draw(st.sampled_from(["permute", "pad", "shrink", "flip", "stride", "reshape"]))
        if op == "permute":
            arg = tuple(draw(st.permutations(range(len(cur)))))
        elif op == "pad":
            arg = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in cur)
        elif op == "shrink":
            arg = tuple((b, draw(st.integers(b + 1, s)))
                        for s in cur for b in [draw(st.integers(0, s - 1))])
        elif op == "flip":
            arg = tuple(d for d in range(len(cur)) if draw(st.booleans()))
        elif op == "stride":
            arg = tuple(draw(st.sampled_from([1, 2, -1, 3])) for _ in cur)
        else:
            total = math.prod(cur)
            a = draw(st.sampled_from([d for d in range(1, total + 1) if total % d == 0]))
            arg = (a, total // a)
        chain.append((op, arg))
    return shape, chain


@settings(max_examples=15, derandomize=True)
@given(_chains())
def test_random_views_division_free(sc) -> None:
    """Random movement chains (a fixed, derandomized sample): correct after the e-graph,
    and division-free whenever a division-free form exists."""
    k = make("copy", shape=sc[0], chain=sc[1], dtype=dtypes.i32)
    ck = compile_kernel(k.graph, optimize="egraph", target=PLAIN_C, budget=QUALITY)
    ins = k.random_inputs(9)
    bufs = k.buffers(ins)
    ck(*bufs)
    np.testing.assert_array_equal(bufs[0].reshape(k.output_shape), k.reference(*ins))
    if not k.needs_division():
        assert _real_divisions(ck.graph) == 0, ck.graph
        assert "/" not in _c_body(ck.c_source) and "%" not in _c_body(ck.c_source)


@pytest.mark.parametrize("name,i", [c for c in CASES if not BUILDERS[c[0]].copy_like],
                         ids=[x for c, x in zip(CASES, CASE_IDS, strict=True)
                              if not BUILDERS[c[0]].copy_like])
@pytest.mark.parametrize("optimize", ["egraph", "baseline"])
def test_compute_kernels_index_division_free(name: str, i: int, optimize) -> None:
    """Elementwise, reduce, matmul, conv, pool and scan kernels: their views all have a
    division-free form with one loop per axis, and the optimizer finds it (and the
    optimized kernel, compiled, still equals numpy)."""
    k = make(name, **BUILDERS[name].cases[i])
    assert not k.needs_division()
    ins = k.random_inputs(10)
    got, ck = _run_compiled(k, optimize, ins, target=PLAIN_C)
    _same(k, got, k.reference(*ins))
    _assert_division_free(ck.graph, optimize, f"{name}-{i}")


def test_flat_permute_keeps_its_divisions() -> None:
    """With one flat loop a transpose needs a division and a modulo; the optimizer must
    keep the kernel correct, and cannot make it cheaper than one of each."""
    k = make("permute", shape=(10, 6), order=(1, 0), loops="flat")
    assert k.needs_division()
    ins = k.random_inputs(7)
    for optimize in ("baseline", "egraph"):
        got, ck = _run_compiled(k, optimize, ins, target=PLAIN_C)
        np.testing.assert_array_equal(got, ins[0].T)
        assert _index_divisions(ck.graph) >= 1
