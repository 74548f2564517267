"""The tinygrad bridge: round trips on the index expressions of real tinygrad kernels,
evaluated by tinygrad (its ALU and its simplifier) and by the IR's interpreter at many
points; floor division of every sign; weak constants, variables, kernels, errors."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinygrad import Tensor
from tinygrad import dtypes as tdt
from tinygrad.dtype import Invalid
from tinygrad.uop.ops import AxisType
from tinygrad.uop.ops import Ops as TOps
from tinygrad.uop.ops import UOp as TUOp

import eqsat
from benchmarks import capture_tinygrad
from eqsat.ir.dtype import dtypes
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.interp import INVALID, EvalError, evaluate, leaf_key, run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse, to_sexpr
from eqsat.ir.uop import UOp, range_id, range_kind
from eqsat.tinygrad import (
    TinygradError,
    as_floor,
    evaluate_tinygrad,
    from_tinygrad,
    to_tinygrad,
)
from tests.strategies import assignments, fixed_width_exprs, int_exprs, padded_index_exprs

MODELS = ["conv2d_pad", "conv2d_stride", "maxpool2d_pad", "avgpool2d", "pixel_shuffle",
          "pad_permute_reshape", "shrink_flip", "cumsum"]


@pytest.fixture(scope="module")
def captured() -> list[capture_tinygrad.Captured]:
    caps = capture_tinygrad.capture(MODELS)
    assert {c.kind for c in caps} == {"reshape", "kernel"}
    return caps


def _points(g: UOp, n: int, seed: int) -> list[dict[str, int]]:
    """``n`` assignments of ``g``'s leaves: every corner, then random in-bounds values."""
    leaves = g.leaves()
    lo_hi = [(int(u.vmin), int(u.vmax)) for u in leaves]
    rng = random.Random(seed)
    corners = [dict(zip(map(leaf_key, leaves), c, strict=True))
               for c in itertools.islice(itertools.product(*lo_hi), n // 2)]
    rand = [{leaf_key(u): rng.randint(lo, hi) for u, (lo, hi) in zip(leaves, lo_hi, strict=True)}
            for _ in range(n - len(corners))]
    return corners + rand


def _same(a: object, b: object) -> bool:
    return a is b if INVALID in (a, b) else a == b


# ---- round trips on real kernels ----------------------------------------------------
def test_captured_expressions_round_trip_exactly(captured):
    """to_tinygrad(from_tinygrad(u), like=u) rebuilds tinygrad's own graph, node for node
    (floor divisions one to one as floordiv/floormod); without ``like`` too, ranges keeping
    their AxisType, and the text form parses back to the same graph."""
    floors = 0
    for c in captured:
        g = from_tinygrad(c.uop)
        assert to_tinygrad(g, like=c.uop) is c.uop, c.uop.render(simplify=False)
        assert parse(to_sexpr(g)) is g
        back = to_tinygrad(g)
        assert back.op is c.uop.op and from_tinygrad(back) is g
        floors += any(u.op in (Ops.FLOORDIV, Ops.FLOORMOD) for u in g.toposort())
    assert floors > 0  # tinygrad's // and % arrive as the floor ops


def test_captured_expressions_evaluate_alike(captured):
    """At every corner and random points: tinygrad's ALU on the captured UOp, the IR's
    interpreter on the bridged graph and tinygrad's ALU on the graph brought back agree;
    on a few points tinygrad's simplifier (substitute constants, simplify) agrees too."""
    checked = invalid = 0
    for i, c in enumerate(captured):
        g = from_tinygrad(c.uop)
        back = to_tinygrad(g)
        envs = _points(g, 24, seed=i)
        theirs = evaluate_tinygrad(c.uop, envs)
        again = evaluate_tinygrad(back, envs)
        simplified = evaluate_tinygrad(c.uop, envs[:2], method="simplify")
        for k, env in enumerate(envs):
            ours = evaluate(g, env)
            assert _same(theirs[k], ours) and _same(again[k], ours), (to_sexpr(g), env)
            if k < 2:
                assert _same(simplified[k], ours), (to_sexpr(g), env)
            checked += 1
            invalid += ours is INVALID
    assert checked > 1000 and invalid > 0


def test_tinygrad_results_bridge_alike(captured):
    """tinygrad's own simplification of each expression, brought over, is equivalent to
    the bridged input (the corpus's ``tinygrad`` field is made so)."""
    for c in captured[::5]:
        out, _ = capture_tinygrad.tinygrad_simplify(c.uop)
        g, tg = from_tinygrad(c.uop), from_tinygrad(out)
        assert check_equivalent(g, tg), (to_sexpr(g), to_sexpr(tg))


# ---- floor division: every sign ---------------------------------------------------------
DIVISORS = [TUOp.const(3, tdt.weakint), TUOp.const(-3, tdt.weakint),
            TUOp.variable("d", 1, 4), TUOp.variable("d", -4, -1), TUOp.variable("d", -3, 3)]


@pytest.mark.parametrize("lo,hi", [(-9, 9), (0, 9), (-9, 0), (-9, -1)])
@pytest.mark.parametrize("div", range(len(DIVISORS)))
@pytest.mark.parametrize("op", ["//", "%"])
def test_floor_division_of_every_sign(lo, hi, div, op):
    """``x // d`` and ``x % d`` (FLOORDIV/FLOORMOD) of every sign of x and d: the bridged
    graph is the floor op itself, equals tinygrad's value at every point (d = 0
    excluded) and goes back as tinygrad's op."""
    x, d = TUOp.variable("x", lo, hi), DIVISORS[div]
    u = x // d if op == "//" else x % d
    assert u.op is (TOps.FLOORDIV if op == "//" else TOps.FLOORMOD)
    g = from_tinygrad(u)
    assert g.op is (Ops.FLOORDIV if op == "//" else Ops.FLOORMOD), to_sexpr(g)
    envs = [{"x": a, **({"d": b} if d.op is not TOps.CONST else {})}
            for a in range(lo, hi + 1) for b in range(int(d.vmin), int(d.vmax) + 1) if b != 0]
    theirs = evaluate_tinygrad(u, envs)
    assert [evaluate(g, e) for e in envs] == theirs
    back = to_tinygrad(g)
    assert back.op is u.op and evaluate_tinygrad(back, envs) == theirs


def test_padded_floor_division_round_trips():
    """A padded index's floor division arrives as the floor op under its ``where``, with
    tinygrad's values, and goes back node for node."""
    r = TUOp.range(10, 0)
    padded = (r - 2).valid(r >= 2)
    u = padded // 4 + padded % 4
    g = from_tinygrad(u)
    assert {n.op for n in g.toposort()} >= {Ops.FLOORDIV, Ops.FLOORMOD}
    envs = [{"R0": v} for v in range(10)]
    assert [evaluate(g, e) for e in envs] == evaluate_tinygrad(u, envs)
    assert to_tinygrad(g, like=u) is u


@pytest.mark.parametrize("text,want", [
    # C text              the floor form tinygrad's simplifier is given
    ("(idiv (var x 0 9) 4)", "(floordiv (var x 0 9) 4)"),
    ("(mod (var x -9 0) -4)", "(floormod (var x -9 0) -4)"),
    ("(idiv (var x -9 9) 4)", "(idiv (var x -9 9) 4)"),
    ("(sub (idiv (var x -5 5) 4) (where (lt (mod (var x -5 5) 4) 0) 1 0))",
     "(floordiv (var x -5 5) 4)"),
    ("(add (mod (var x -5 5) 4) (where (lt (mod (var x -5 5) 4) 0) 4 0))",
     "(floormod (var x -5 5) 4)"),
    # a padded index: its condition proves the dividend non-negative where valid
    ("(idiv (where (not (lt (range 0 10) 2)) (add (range 0 10) -2) (invalid)) 4)",
     "(floordiv (where (not (lt (range 0 10) 2)) (add (range 0 10) -2) (invalid)) 4)"),
])
def test_as_floor(text: str, want: str):
    """C division written as floor division exactly where the values agree."""
    g = parse(text)
    out = as_floor(g)
    assert out is parse(want), to_sexpr(out)
    assert check_equivalent(g, out)


@pytest.mark.parametrize("ours,want", [
    ("(idiv (var x 0 9) 4)", "CDIV"), ("(idiv (var x -9 9) 4)", "CDIV"),
    ("(mod (var x -9 0) -4)", "CMOD"), ("(floordiv (var x -9 9) 4)", "FLOORDIV"),
    ("(floormod (var x -9 9) -4)", "FLOORMOD"),
])
def test_to_tinygrad_division_ops(ours, want):
    """Each division goes out as its own tinygrad op (C's as CDIV/CMOD, floor as
    FLOORDIV/FLOORMOD), with the IR's values."""
    g = parse(ours)
    u = to_tinygrad(g)
    assert u.op is getattr(TOps, want)
    envs = [{"x": v} for v in range(int(g.src[0].vmin), int(g.src[0].vmax) + 1)]
    assert evaluate_tinygrad(u, envs) == [evaluate(g, e) for e in envs]


# ---- to_tinygrad on random graphs ---------------------------------------------------------
def _agree(g: UOp, env: dict[str, int]) -> None:
    try:
        ours = evaluate(g, env)
    except EvalError:
        return  # undefined here (a division by zero, ...): tinygrad promises nothing either
    u = to_tinygrad(g)
    assert _same(evaluate_tinygrad(u, env), ours), (to_sexpr(g), env)
    assert check_equivalent(g, from_tinygrad(u)), to_sexpr(g)


@settings(max_examples=60)
@given(st.data())
def test_random_index_exprs_agree_with_tinygrad(data):
    g = data.draw(st.one_of(int_exprs(), padded_index_exprs()))
    _agree(g, data.draw(assignments(g)))


@settings(max_examples=40)
@given(st.data())
def test_random_fixed_width_exprs_agree_with_tinygrad(data):
    g = data.draw(fixed_width_exprs())
    _agree(g, data.draw(assignments(g)))


@pytest.mark.parametrize("text", [
    "(sub (var x -5 5) (var y 0 3))", "(neg (var x -5 5))", "(min (var x -5 5) (var y 0 3))",
    "(le (var x -5 5) (var y 0 3))", "(ge (var x -5 5) 2)", "(gt (var x -5 5) 2)",
    "(eq (var x -5 5) 2)", "(not (lt (var x -5 5) 2))", "(not (var x -5 5))",
    "(min (cast i8 (var x -5 5)) (const i8 -128))", "(min (cast u8 (var x 0 5)) (const u8 3))",
    "(mulacc (var x -5 5) 3 (var y 0 3))", "(where (lt (var x -5 5) 0) (var y 0 3) (invalid))",
])
def test_spellings_tinygrad_has_no_op_for(text):
    """Ops tinygrad writes with others (sub, neg, min, le, ge, gt, eq, not) keep every
    value, fixed-width extremes included."""
    g = parse(text)
    u = to_tinygrad(g)
    leaves = g.leaves()
    for vals in itertools.product(*[range(int(v.vmin), int(v.vmax) + 1) for v in leaves]):
        env = dict(zip(map(leaf_key, leaves), vals, strict=True))
        assert _same(evaluate_tinygrad(u, env), evaluate(g, env)), (text, env)


# ---- leaves and constants ------------------------------------------------------------------------
def test_variables_ranges_and_specials():
    n = TUOp.variable("n", 1, 10)
    assert n.op is TOps.BUFFER and n.dtype is tdt.weakint and n.arg.vmin_vmax == (1, 10)
    assert from_tinygrad(n) is UOp.var("n", 1, 10)
    assert from_tinygrad(n.bind(3)) is UOp.var("n", 1, 10)  # a bound variable is its variable
    assert from_tinygrad(TUOp.variable("n", 1, 10, param=True)) is UOp.var("n", 1, 10)
    back = to_tinygrad(UOp.var("n", 1, 10))
    assert back.is_variable and back.arg.name == "n" and back.arg.vmin_vmax == (1, 10)
    r = TUOp.range(8, 3, AxisType.REDUCE)
    assert from_tinygrad(r) is UOp.range(8, 3, "reduce")
    assert to_tinygrad(UOp.range(8, 3, "reduce"), like=r) is r
    assert to_tinygrad(UOp.range(8, 3, "reduce")) is r  # the kind is the AxisType
    assert from_tinygrad(TUOp.special(16, "gidx0")) is UOp.special("gidx0", 16)
    e = from_tinygrad(r * n + 1)
    assert to_sexpr(e, compact=True) == "(add (mul (range 3 8 reduce) (var n 1 10)) 1)"


@pytest.mark.parametrize("axis", list(AxisType))
def test_range_kinds_keep_their_axis_type(axis):
    """Every AxisType is a range kind and comes back as itself (LOOP is the default)."""
    r = TUOp.range(8, 3, axis)
    g = from_tinygrad(r)
    assert range_kind(g) == axis.name.lower() and range_id(g) == 3
    assert (g.arg == 3) == (axis is AxisType.LOOP)
    assert to_tinygrad(g) is r and parse(to_sexpr(g)) is g


def test_split_ranges_get_fresh_ids():
    """tinygrad's split ranges (arg (axis, part, AxisType)) get ids above every axis id."""
    a, b = TUOp.range(4, 2), TUOp(TOps.RANGE, tdt.weakint, (TUOp.const(3),), (2, 0, AxisType.LOOP))
    g = from_tinygrad(a * 3 + b)
    assert sorted(range_id(u) for u in g.leaves()) == [2, 3]
    env = {"R2": 3, "R3": 2}
    assert evaluate_tinygrad(a * 3 + b, env) == evaluate(g, env) == 11


def test_weak_constants_take_their_operands_dtype():
    x = Tensor.empty(4, 6, device="NULL")
    ast = (x.cast(tdt.int32) + 3).maximum(1).schedule_linear().src[0].src[0]
    g = from_tinygrad(ast)
    consts = {u.dtype for u in g.toposort() if u.op is Ops.CONST and u.arg in (1, 3)}
    assert dtypes.i32 in consts
    assert from_tinygrad(TUOp.cconst(5, tdt.int8)) is UOp.const(dtypes.i8, 5)
    assert from_tinygrad(TUOp.const(2.5)) is UOp.const(dtypes.f32, 2.5)
    assert from_tinygrad(TUOp.const(7)) is UOp.const(dtypes.index, 7)


# ---- kernels ---------------------------------------------------------------------------
def _kernel(t: Tensor) -> object:
    calls = t.schedule_linear().src
    assert len(calls) == 1
    return calls[0]


@pytest.mark.parametrize("name", ["matmul", "conv_pad", "permute_pad", "maxpool"])
def test_kernel_asts_run_like_numpy(name):
    """A whole kernel AST of tinygrad's scheduler, brought over, runs in the IR's
    interpreter to numpy's result (buffers in the kernel's slot order)."""
    rng = np.random.default_rng(0)
    shapes = {"matmul": [(4, 6), (6, 5)], "conv_pad": [(1, 2, 5, 5), (3, 2, 3, 3)],
              "permute_pad": [(4, 6)], "maxpool": [(1, 2, 6, 6)]}[name]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ts = [Tensor.empty(*s, device="NULL") for s in shapes]
    out = {"matmul": lambda a, b: a @ b, "conv_pad": lambda a, w: a.conv2d(w, padding=1),
           "permute_pad": lambda a: a.permute(1, 0).pad(((1, 1), (0, 2))).contiguous(),
           "maxpool": lambda a: a.max_pool2d(2)}[name](*ts)
    call = _kernel(out)
    g = from_tinygrad(call.src[0])
    assert g.op is Ops.SINK and parse(to_sexpr(g)) is g
    by_buffer = {t.uop.base: a for t, a in zip(ts, arrays, strict=True)}
    bufs = [np.zeros(int(np.prod(out.shape)), np.float32)]
    bufs += [np.ascontiguousarray(by_buffer[b]).reshape(-1) for b in call.src[2:]]
    run_kernel(g, bufs)
    a = arrays
    ref = {"matmul": lambda: a[0] @ a[1],
           "conv_pad": lambda: _conv(np.pad(a[0], ((0, 0), (0, 0), (1, 1), (1, 1))), a[1]),
           "permute_pad": lambda: np.pad(a[0].T, ((1, 1), (0, 2))),
           "maxpool": lambda: a[0].reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))}[name]()
    np.testing.assert_allclose(bufs[0], ref.reshape(-1), rtol=1e-5, atol=1e-5)
    assert to_tinygrad(g, like=call.src[0]).op is TOps.SINK


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, cin, h, wd = x.shape
    cout, _, kh, kw = w.shape
    out = np.zeros((n, cout, h - kh + 1, wd - kw + 1), np.float32)
    for i, j in itertools.product(range(kh), range(kw)):
        out += np.einsum("nchw,oc->nohw", x[:, :, i:i + h - kh + 1, j:j + wd - kw + 1],
                         w[:, :, i, j])
    return out


# ---- errors ----------------------------------------------------------------------------
def test_errors_name_the_op():
    with pytest.raises(TinygradError, match="RESHAPE"):
        from_tinygrad(Tensor.empty(4, 6, device="NULL").reshape(6, 4).uop)
    with pytest.raises(TinygradError, match="THREEFRY"):
        from_tinygrad(TUOp.variable("a", 0, 3).alu(TOps.THREEFRY, TUOp.variable("b", 0, 3)))
    with pytest.raises(TinygradError, match="GEP"):
        to_tinygrad(parse("(gep (vectorize 1 2) 0)"))
    with pytest.raises(TinygradError, match="FLOOR"):
        to_tinygrad(parse("(floor 1.5)"))
    with pytest.raises(TypeError, match="tinygrad UOp"):
        from_tinygrad(parse("1"))
    with pytest.raises(TypeError, match="eqsat UOp"):
        to_tinygrad(TUOp.const(1))


def test_public_names():
    assert eqsat.from_tinygrad is from_tinygrad and eqsat.to_tinygrad is to_tinygrad


# ---- the capture script ------------------------------------------------------------------
def test_capture_rows_are_corpus_lines():
    caps = capture_tinygrad.capture(["pad_reshape", "matmul"])
    rows = capture_tinygrad.rows(caps, repeat=1)
    assert rows and len({r["id"] for r in rows}) == len(rows)
    assert {r["source"] for r in rows} <= {"kernel:pad_reshape/reshape", "kernel:pad_reshape",
                                           "kernel:matmul/reshape", "kernel:matmul"}
    from extraction import divmod_count, reference_cost
    for r in rows:
        g, tg = parse(r["expr"]), parse(r["tinygrad"])
        assert (r["cost_in"], r["cost_tg"]) == (reference_cost(g), reference_cost(tg))
        assert (r["divmod_in"], r["divmod_tg"]) == (divmod_count(g), divmod_count(tg))
        assert r["tg_us"] > 0 and r["cost_in"] > 0
    again = capture_tinygrad.rows(capture_tinygrad.capture(["pad_reshape", "matmul"]), repeat=1)

    def untimed(rs: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "tg_us"} for r in rs]
    assert untimed(again) == untimed(rows)  # deterministic


# ---- every op and dtype the bridge knows, both ways -------------------------------------
def _leaf(name: str, dt, lo: int, hi: int) -> UOp:
    v = UOp.var(name, lo, hi)
    if dt is dtypes.index:
        return v
    if dt.is_bool:
        return UOp(Ops.LT, dtypes.bool, (v, UOp.const(dtypes.index, 0)))
    return UOp(Ops.CAST, dt, (v,))


def _bridge_cases() -> list[UOp]:
    """Every ALU op of the bridge's tables on every dtype the IR defines it on, every
    cast between the bridge's dtypes, every bitcast between same-size ones, a where and
    a mulacc of each dtype."""
    from eqsat.ir.ops import GroupOp
    from eqsat.tinygrad import _tg
    from rules.lang import _OP_DTYPES

    t = _tg()
    dts = [d for d in t.to_theirs if not d.is_void]
    ops = sorted(set(t.binary.values()) | set(t.unary.values()), key=lambda o: o.value)
    out = []
    for dt in dts:
        a = _leaf("a", dt, -6, 6)
        for op in ops:
            if dt.name not in _OP_DTYPES.get(op, ()):
                continue
            small = op in (Ops.SHL, Ops.SHR, Ops.POW)  # defined shifts, exponents
            b = _leaf("b", dt, 0 if small else -6, 3 if small else 6)
            if op in GroupOp.Unary:
                out.append(UOp(op, dt, (a,)))
            else:
                out.append(UOp(op, dtypes.bool if op in GroupOp.Comparison else dt, (a, b)))
        c = _leaf("c", dtypes.bool, -6, 6)
        out.append(UOp(Ops.WHERE, dt, (c, a, _leaf("b", dt, -6, 6))))
        if not dt.is_bool:
            out.append(UOp(Ops.MULACC, dt, (a, _leaf("b", dt, -6, 6), a)))
        for dst in dts:
            if dst is not dt:
                out.append(UOp(Ops.CAST, dst, (a,)))
            if dst is not dt and dtypes.index not in (dt, dst) and dtypes.bool not in (dt, dst) \
                    and dst.bits == dt.bits:
                out.append(UOp(Ops.BITCAST, dst, (a,)))
    return out


def test_every_op_and_dtype_round_trips():
    cases = _bridge_cases()
    assert len(cases) > 300
    bad = []
    for g in cases:
        back = from_tinygrad(to_tinygrad(g))
        eq = check_equivalent(g, back)
        if not eq:
            bad.append(f"{to_sexpr(g, compact=True)}: {eq.reason}")
    assert not bad, "\n".join(bad)


def test_an_invalid_takes_its_siblings_dtype():
    inv = TUOp(TOps.CONST, tdt.float32, arg=Invalid)
    w = TUOp.const(False, tdt.bool).where(TUOp.const(0.0, tdt.float32), inv)
    g = from_tinygrad(w)
    text = to_sexpr(g, compact=True)
    assert text == "(where false 0.0 (cast f32 (invalid)))"
    assert parse(text) is g and check_equivalent(g, parse(text))
    assert from_tinygrad(to_tinygrad(g)) is g
    x = TUOp.variable("x", 0, 5)
    w2 = (x < 3).where(x.cast(tdt.float32), inv)
    g2 = from_tinygrad(w2)
    for v in range(6):
        assert _same(evaluate_tinygrad(w2, {"x": v}), evaluate(g2, {"x": v}))


def test_a_variable_bounded_by_a_variable_takes_the_outer_bound():
    n = TUOp.variable("n", 1, 10)
    i = TUOp.variable("i", 0, n)
    assert from_tinygrad(i) is UOp.var("i", 0, 10)
    assert to_sexpr(from_tinygrad(i * 2 + n), compact=True) == \
        "(add (mul (var i 0 10) 2) (var n 1 10))"
