"""Late decompositions (lowering/decompose.py): each rule's shape, guard and soundness."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat import EvalError, dtypes, evaluate, parse, to_sexpr
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import LoweringError, Target, decompose, narrow_index, prepare
from tests.strategies import assignments, fixed_width_exprs, int_exprs, padded_index_exprs

I32, I64, F32 = dtypes.i32, dtypes.i64, dtypes.f32


def var(lo: int, hi: int, dt=I32, name: str = "x") -> UOp:
    return UOp(Ops.DEFINE_VAR, dt, (), (name, lo, hi))


def c(v, dt=I32) -> UOp:
    return UOp.const(dt, v)


def ops_of(g: UOp) -> set[Ops]:
    return {u.op for u in g.toposort()}


def check_all(orig: UOp, new: UOp, lo: int, hi: int) -> None:
    """``new`` equals ``orig`` for every value of x in [lo, hi] (and of a variable y in
    [-4, 4] where there is one)."""
    ys = range(-4, 5) if any(u.op is Ops.DEFINE_VAR and u.arg[0] == "y"
                             for u in orig.toposort()) else (0,)
    for v in range(lo, hi + 1):
        for y in ys:
            env = {"x": v, "y": y}
            assert evaluate(new, env) == evaluate(orig, env), env


_FLOOR = {Ops.FLOORDIV, Ops.FLOORMOD}


# ---- one case per rule: (expression, x range, ops that must appear, ops that must not) -----------
CASES = [
    ("mod_pow2 nonneg", lambda x: x % c(8), (0, 100), {Ops.AND}, {Ops.MOD}),
    ("mod_pow2 signed", lambda x: x % c(8), (-70, 70), {Ops.SHR, Ops.AND, Ops.SUB}, {Ops.MOD}),
    ("idiv_pow2 nonneg", lambda x: x // c(16), (0, 300), {Ops.SHR}, {Ops.IDIV, Ops.ADD}),
    ("idiv_pow2 signed", lambda x: x // c(16), (-300, 300), {Ops.SHR, Ops.ADD}, {Ops.IDIV}),
    ("idiv_const nonneg", lambda x: x // c(7), (0, 500), {Ops.MUL, Ops.SHR}, {Ops.IDIV}),
    ("idiv_const signed", lambda x: x // c(7), (-500, 500), {Ops.MUL, Ops.SUB}, {Ops.IDIV}),
    ("idiv_const negative d", lambda x: x // c(-6), (-100, 100), {Ops.NEG}, {Ops.IDIV}),
    ("mod_const", lambda x: x % c(10), (-300, 300), {Ops.MUL, Ops.SUB}, {Ops.MOD}),
    ("mod_const negative d", lambda x: x % c(-10), (-300, 300), {Ops.SUB}, {Ops.MOD}),
    ("idiv by 1", lambda x: x // c(1), (-5, 5), set(), {Ops.IDIV}),
    ("mod by -1", lambda x: x % c(-1), (-5, 5), set(), {Ops.MOD}),
    ("mul_pow2", lambda x: x * c(32), (-100, 100), {Ops.SHL}, {Ops.MUL}),
    ("mul_pow2 left", lambda x: c(4) * x, (-100, 100), {Ops.SHL}, {Ops.MUL}),
    ("mul_neg_one", lambda x: x * c(-1), (-100, 100), {Ops.NEG}, {Ops.MUL}),
    ("not_lt const right", lambda x: x.lt(c(5)).alu(Ops.NOT), (-10, 10), {Ops.LT}, {Ops.NOT}),
    ("not_lt const left", lambda x: c(5).lt(x).alu(Ops.NOT), (-10, 10), {Ops.LT}, {Ops.NOT}),
    ("not_lt vars", lambda x: x.lt(x * c(3)).alu(Ops.NOT), (-10, 10), {Ops.LE}, {Ops.NOT}),
    ("not_le", lambda x: x.le(c(3)).alu(Ops.NOT), (-10, 10), {Ops.LT}, {Ops.NOT}),
    ("not_gt", lambda x: x.gt(c(3)).alu(Ops.NOT), (-10, 10), {Ops.LE}, {Ops.NOT}),
    ("not_ge", lambda x: x.ge(c(3)).alu(Ops.NOT), (-10, 10), {Ops.LT}, {Ops.NOT}),
    ("not_eq", lambda x: x.eq(c(3)).alu(Ops.NOT), (-10, 10), {Ops.NE}, {Ops.NOT}),
    ("not_ne", lambda x: x.ne(c(3)).alu(Ops.NOT), (-10, 10), {Ops.EQ}, {Ops.NOT}),
    ("not_not", lambda x: x.alu(Ops.NOT).alu(Ops.NOT), (-10, 10), set(), {Ops.NOT}),
    ("demorgan_and", lambda x: x.alu(Ops.NOT) & (x * c(3)).alu(Ops.NOT), (-10, 10),
     {Ops.OR, Ops.NOT}, {Ops.AND}),
    ("demorgan_and bool", lambda x: x.lt(c(3)).alu(Ops.NOT) & x.eq(c(-2)).alu(Ops.NOT),
     (-10, 10), {Ops.LT, Ops.NE}, {Ops.NOT}),  # the comparisons absorb the NOTs first
    ("demorgan_or", lambda x: x.alu(Ops.NOT) | (x + c(1)).alu(Ops.NOT), (-10, 10),
     {Ops.AND, Ops.NOT}, {Ops.OR}),
    # floor_divmod: a shift or a mask by 2**k whatever the sign; C's ops where the signs
    # are alike; else the exact expansion (a select after C's quotient)
    ("floordiv_pow2 signed", lambda x: x.alu(Ops.FLOORDIV, c(8)), (-70, 70), {Ops.SHR},
     _FLOOR | {Ops.IDIV, Ops.ADD}),
    ("floormod_pow2 signed", lambda x: x.alu(Ops.FLOORMOD, c(8)), (-70, 70), {Ops.AND},
     _FLOOR | {Ops.MOD, Ops.SUB}),
    ("floordiv nonneg", lambda x: x.alu(Ops.FLOORDIV, c(7)), (0, 300), {Ops.MUL, Ops.SHR},
     _FLOOR | {Ops.WHERE}),
    ("floormod nonpos by negative", lambda x: x.alu(Ops.FLOORMOD, c(-7)), (-300, 0),
     {Ops.SUB}, _FLOOR | {Ops.WHERE}),
    ("floordiv signed", lambda x: x.alu(Ops.FLOORDIV, c(7)), (-300, 300),
     {Ops.WHERE, Ops.LT}, _FLOOR | {Ops.IDIV}),
    ("floormod signed", lambda x: x.alu(Ops.FLOORMOD, c(7)), (-300, 300),
     {Ops.WHERE, Ops.LT, Ops.ADD}, _FLOOR | {Ops.MOD}),
    ("floordiv negative d", lambda x: x.alu(Ops.FLOORDIV, c(-6)), (-100, 100),
     {Ops.WHERE, Ops.LT}, _FLOOR),
    ("floordiv by a variable", lambda x: x.alu(Ops.FLOORDIV, var(-4, 4, name="y") | c(1)),
     (-30, 30), {Ops.WHERE, Ops.NE, Ops.IDIV}, _FLOOR),
    ("floormod by a variable", lambda x: x.alu(Ops.FLOORMOD, var(-4, 4, name="y") | c(1)),
     (-30, 30), {Ops.WHERE, Ops.NE}, _FLOOR),
]


@pytest.mark.parametrize("name,build,rng,must,mustnt", CASES, ids=[c[0] for c in CASES])
def test_rule(name, build, rng, must, mustnt) -> None:
    x = var(*rng)
    orig = build(x)
    new = decompose(orig)
    assert must <= ops_of(new), (name, ops_of(new))
    assert not (mustnt & ops_of(new)), (name, ops_of(new))
    check_all(orig, new, *rng)


def test_min_divisor_is_left_alone() -> None:
    x = var(-(1 << 31), (1 << 31) - 1)
    g = x // c(-(1 << 31))  # |INT_MIN| does not fit i32: no sequence, a division stays
    assert decompose(g).op is Ops.IDIV


def test_bool_comparisons_negate() -> None:
    b = var(0, 1).lt(c(1))
    g = b.lt(UOp.const(dtypes.bool, True)).alu(Ops.NOT)
    new = decompose(g)
    assert Ops.NOT not in ops_of(new)
    check_all(g, new, 0, 1)


def test_not_lt_at_dtype_minimum_keeps_le() -> None:
    x = var(-(1 << 31), 0)
    g = x.lt(c(-(1 << 31))).alu(Ops.NOT)  # c-1 would wrap: use b <= a instead
    new = decompose(g)
    assert new.op is Ops.LE
    for v in (-(1 << 31), -(1 << 31) + 1, 0):
        assert evaluate(new, {"x": v}) == evaluate(g, {"x": v})


# ---- floats ---------------------------------------------------------------------------------
def fvar(dt=F32) -> UOp:
    return UOp(Ops.DEFINE_VAR, I32, (), ("x", -(1 << 20), 1 << 20)).cast(dt)


@pytest.mark.parametrize("dt,d,exact", [
    (F32, 2.0, True), (F32, 0.25, True), (F32, -8.0, True), (F32, 3.0, False),
    (F32, 0.1, False), (F32, 0.0, False), (F32, math.inf, False), (F32, 2.0 ** -149, False),
    (F32, 2.0 ** 127, True), (dtypes.f64, 2.0 ** -1022, True), (dtypes.f64, 1e300, False),
    (dtypes.f16, 2.0 ** 15, True),   # 1/c = 2**-15 is a subnormal f16, still exact
    (dtypes.f16, 2.0 ** -24, False),  # 1/c = 2**24 overflows f16
])
def test_fdiv_by_constant(dt, d: float, exact: bool) -> None:
    x = fvar(dt)
    g = x / UOp.const(dt, d)
    new = decompose(g)
    assert (new.op is Ops.MUL) == exact, (dt, d, new.op)
    if exact:
        for v in (-(1 << 20), -3, 0, 1, 7, 12345, 1 << 20):
            a, b = evaluate(g, {"x": v}), evaluate(new, {"x": v})
            assert a == b or (math.isnan(a) and math.isnan(b)), (v, a, b)


def test_fdiv_special_values_exact() -> None:
    """x / 2**k == x * 2**-k bit for bit, for inf, nan, -0.0, subnormals (numpy f32)."""
    xs = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, 3e38, -1.5, 7.0], np.float32)
    for d in (2.0, 0.5, 2.0 ** 126, 2.0 ** -126):
        r = np.float32(1.0) / np.float32(d)
        np.testing.assert_array_equal(xs / np.float32(d), xs * r)


def test_mul_neg_one_float_and_flag() -> None:
    x = fvar()
    assert decompose(x * UOp.const(F32, -1.0)).op is Ops.NEG
    assert decompose(x * UOp.const(F32, -1.0), Target(neg=False)).op is Ops.MUL


def test_mulacc_only_with_fma() -> None:
    x, y = fvar(), UOp(Ops.DEFINE_VAR, I32, (), ("y", 0, 9)).cast(F32)
    g = x * y + UOp.const(F32, 1.5)
    assert decompose(g, Target(fma=False)).op is Ops.ADD
    m = decompose(g, Target(fma=True))
    assert m.op is Ops.MULACC and m.src[2].arg == 1.5
    for v in (-3, 0, 5):
        assert evaluate(m, {"x": v, "y": 4}) == evaluate(g, {"x": v, "y": 4})
    ints = var(0, 9) * var(0, 9, name="z") + c(1)  # integers: no FMA
    assert decompose(ints, Target(fma=True)).op is Ops.ADD


def test_float_not_lt_is_not_negated() -> None:
    g = fvar().lt(UOp.const(F32, 1.0)).alu(Ops.NOT)  # NaN: !(a<b) is not a>=b
    assert decompose(g).op is Ops.NOT


def test_fast_div_flag() -> None:
    x = var(0, 1000)
    assert decompose(x // c(7), Target(fast_div=False)).op is Ops.IDIV
    assert decompose(x // c(8), Target(fast_div=False)).op is Ops.SHR  # shifts stay


def test_decomposition_uses_bounds_of_the_input_graph() -> None:
    """(x // 7) % 8: the remainder's numerator is proven non-negative on the input graph,
    so it becomes a mask even though the rewritten quotient has loose bounds."""
    x = var(0, 10_000)
    stats: Counter = Counter()
    new = decompose((x // c(7)) % c(8), stats=stats)
    assert new.op is Ops.AND and stats == {"idiv_const": 1, "mod_const": 1}
    check_all((x // c(7)) % c(8), new, 0, 2000)


# ---- the pipeline (prepare, narrow, decompose) against the interpreter, on random graphs ---------
def lowered(e: UOp) -> UOp:
    root, kind = prepare(e)
    assert kind == "expr"
    return decompose(narrow_index(root), Target(fma=True))


def _divides_by_maybe_zero(e: UOp) -> bool:
    return any(u.op in (Ops.IDIV, Ops.MOD) and u.src[1].vmin <= 0 <= u.src[1].vmax
               for u in e.toposort())


def _same(e: UOp, env: dict) -> None:
    try:
        want = evaluate(e, env)
    except EvalError:
        return  # undefined (division by zero ...) in the input: nothing to compare
    try:
        low = lowered(e)
    except LoweringError:
        # C evaluates both sides of a select: a division that may be by 0 is undefined
        # there even where the interpreter never reaches it, and its unbounded value
        # may fit no C integer type. Any other input must lower.
        assert _divides_by_maybe_zero(e), to_sexpr(e)
        return
    got = evaluate(low, env)
    assert got == want, (got, want)


@pytest.mark.parametrize("text", [
    "(where (not (lt 0 0)) 0 (add (neg (idiv 0 0)) 0))",
])
def test_pipeline_division_by_zero_in_an_unused_branch(text: str) -> None:
    _same(parse(text), {})


@given(st.data())
def test_pipeline_sound_index_exprs(data: st.DataObject) -> None:
    e = data.draw(int_exprs(max_depth=4))
    _same(e, data.draw(assignments(e)))


@given(st.data())
def test_pipeline_sound_fixed_width(data: st.DataObject) -> None:
    e = data.draw(fixed_width_exprs(max_depth=3))
    _same(e, data.draw(assignments(e)))


@given(st.data())
def test_pipeline_sound_padded(data: st.DataObject) -> None:
    e = data.draw(padded_index_exprs(max_depth=3))
    _same(e, data.draw(assignments(e)))
