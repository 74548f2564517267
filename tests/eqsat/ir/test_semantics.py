"""The op semantics (eqsat.ir.semantics): C division, wraparound, floats, the array
twins of the scalar functions, and the soundness of every interval function."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.ir import semantics as sem
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops

FIXED = [dtypes.i8, dtypes.u8, dtypes.i16, dtypes.u16, dtypes.i32, dtypes.u32, dtypes.i64,
         dtypes.u64]
NUMPY = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
         "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (-1, 5), (5, -1)])
def test_cdiv_cmod(a: int, b: int) -> None:
    assert sem.cdiv(a, b) == int(a / b)
    assert sem.cmod(a, b) == a - int(a / b) * b
    assert math.copysign(1, sem.cmod(a, b)) == math.copysign(1, a) or sem.cmod(a, b) == 0


@settings(max_examples=300, deadline=None)
@given(a=st.integers(-(1 << 70), 1 << 70), b=st.integers(-(1 << 70), 1 << 70).filter(bool))
def test_cdiv_truncates_and_cmod_takes_the_dividends_sign(a: int, b: int) -> None:
    q, r = sem.cdiv(a, b), sem.cmod(a, b)
    assert a == q * b + r and abs(r) < abs(b)
    assert r == 0 or (r > 0) == (a > 0)
    arr = np.array([a, -a], dtype=object)
    assert list(sem.cdiv_array(arr, np.array([b, b], dtype=object))) == [q, sem.cdiv(-a, b)]
    assert list(sem.cmod_array(arr, np.array([b, b], dtype=object))) == [r, sem.cmod(-a, b)]


@settings(max_examples=300, deadline=None)
@given(a=st.integers(-(1 << 70), 1 << 70), b=st.integers(-(1 << 70), 1 << 70).filter(bool))
def test_floordiv_floors_and_floormod_takes_the_divisors_sign(a: int, b: int) -> None:
    q, r = sem.floordiv(a, b), sem.floormod(a, b)
    assert (q, r) == (a // b, a % b)  # Python's operators floor
    assert a == q * b + r and abs(r) < abs(b) and (r == 0 or (r > 0) == (b > 0))
    for op, want in ((Ops.FLOORDIV, q), (Ops.FLOORMOD, r)):
        arr = sem.divide_array(op, np.array([a], dtype=object), np.array([b], dtype=object))
        assert list(arr) == [want]
        assert sem.alu(op, dtypes.index, (a, b)) == want


@pytest.mark.parametrize("a,b,q,r", [
    # a     b   floordiv floormod
    (7, 2, 3, 1),
    (-7, 2, -4, 1),
    (7, -2, -4, -1),
    (-7, -2, 3, -1),
    (-8, 2, -4, 0),
    (0, -3, 0, 0),
    (-1, 5, -1, 4),
])
def test_floor_division_table(a: int, b: int, q: int, r: int) -> None:
    assert sem.alu(Ops.FLOORDIV, dtypes.i32, (a, b)) == q
    assert sem.alu(Ops.FLOORMOD, dtypes.i32, (a, b)) == r


def test_floor_division_by_zero_is_undefined_and_wraps_like_c() -> None:
    for op in (Ops.FLOORDIV, Ops.FLOORMOD):
        assert isinstance(sem.alu(op, dtypes.i32, (1, 0)), sem.Undefined)
    assert sem.alu(Ops.FLOORDIV, dtypes.i32, (-(1 << 31), -1)) == -(1 << 31)  # wraps
    assert sem.alu(Ops.FLOORDIV, dtypes.u8, (200, 7)) == 28
    with pytest.raises(sem.EvalError):
        sem.alu(Ops.FLOORDIV, dtypes.f32, (1.0, 2.0))


@pytest.mark.parametrize("dt", FIXED, ids=str)
def test_wrap_is_twos_complement_and_the_array_twin_agrees(dt) -> None:
    rng = random.Random(dt.bits)
    xs = [rng.randint(-(1 << 70), 1 << 70) for _ in range(200)] + [
        dt.min, dt.max, dt.min - 1, dt.max + 1, 0, -1]
    want = [sem.wrap(dt, x) for x in xs]
    assert all(dt.min <= w <= dt.max and (w - x) % (1 << dt.bits) == 0
               for w, x in zip(want, xs, strict=True))
    assert [int(v) for v in sem.wrap_array(dt, np.array(xs, dtype=object))] == want
    small = [x for x in xs if -(1 << 62) <= x < 1 << 62]
    assert [int(v) for v in sem.wrap_array(dt, np.array(small, dtype=np.int64))] == \
        [sem.wrap(dt, x) for x in small]
    if dt.bits < 64:  # numpy's own narrowing wraps the same way
        assert [int(v) for v in np.array(small, dtype=np.int64).astype(NUMPY[dt.name])] == \
            [sem.wrap(dt, x) for x in small]


def test_undefined_values_and_undefined_ops() -> None:
    assert isinstance(sem.alu(Ops.IDIV, dtypes.i32, (1, 0)), sem.Undefined)
    assert isinstance(sem.alu(Ops.SHL, dtypes.i8, (1, 8)), sem.Undefined)
    assert isinstance(sem.alu(Ops.SHR, dtypes.index, (1, -1)), sem.Undefined)
    assert isinstance(sem.alu(Ops.POW, dtypes.index, (2, -1)), sem.Undefined)
    assert sem.alu(Ops.IDIV, dtypes.i32, (-(1 << 31), -1)) == -(1 << 31)  # wraps
    for op, dt, args in [(Ops.MOD, dtypes.f32, (1.0, 2.0)), (Ops.FDIV, dtypes.i32, (1, 2)),
                         (Ops.MULACC, dtypes.bool, (True, True, False)),
                         (Ops.SQRT, dtypes.i32, (4,))]:
        with pytest.raises(sem.EvalError):
            sem.alu(op, dt, args)


@pytest.mark.parametrize("a, b, want", [
    (-math.inf, 0.5, math.inf), (-0.0, 0.5, 0.0), (0.0, -1.0, math.inf),
    (-0.0, -1.0, -math.inf), (-0.0, -2.0, math.inf), (-8.0, 1 / 3, math.nan),
    (10.0, 400.0, math.inf), (-10.0, 401.0, -math.inf), (2.0, 10.0, 1024.0),
])
def test_pow_is_cs(a: float, b: float, want: float) -> None:
    got = sem.alu(Ops.POW, dtypes.f64, (a, b))
    assert (math.isnan(got) and math.isnan(want)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want))


def test_float_ops_round_to_the_dtype() -> None:
    third = sem.alu(Ops.FDIV, dtypes.f32, (1.0, 3.0))
    assert third == float(np.float32(1 / 3)) == sem.round_float(dtypes.f32, 1 / 3)
    # mulacc rounds the product first (unfused)
    a, b, c = 1.0 + 2.0 ** -12, 1.0 + 2.0 ** -12, -1.0
    assert sem.alu(Ops.MULACC, dtypes.f32, (a, b, c)) == \
        sem.alu(Ops.ADD, dtypes.f32, (sem.alu(Ops.MUL, dtypes.f32, (a, b)), c))
    assert sem.round_float(dtypes.bf16, 1.0 + 2.0 ** -9) == 1.0  # nearest even


BF16_MAX = (2 - 2.0 ** -7) * 2.0 ** 127


@pytest.mark.parametrize(("v", "want"), [
    (1077936129, 1082130432.0),                  # rounded once, not through f32
    (3.39e38, BF16_MAX),                         # below the halfway point to 2**128
    (3.4e38, math.inf),                          # past it
    (2.0 ** 128, math.inf),
    (1.794182015458288e308, math.inf),           # an f64 far past bf16's range
    (-1e300, -math.inf),
    (-0.0, -0.0),
])
def test_bf16_rounds_once_and_overflows_to_infinity(v: float, want: float) -> None:
    got = sem.round_float(dtypes.bf16, v)
    assert got == want and math.copysign(1, got) == math.copysign(1, want)


_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e38,
             -3.4e38, 6e4, 1e-40, 2.0 ** 24 + 2, 1e300]


@pytest.mark.parametrize("dt", [dtypes.f16, dtypes.f32, dtypes.f64], ids=str)
@pytest.mark.parametrize("op", [Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN,
                                Ops.TRUNC, Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MAX,
                                Ops.MIN, Ops.POW, Ops.MULACC], ids=str)
def test_float_array_is_alu_elementwise(op: Ops, dt) -> None:
    """The array twin computes every special pair as the scalar op, bit for bit."""
    npdt = sem.NP_FLOAT[dt.name]
    vals = [sem.round_float(dt, v) for v in _SPECIALS]
    arity = 1 if op in (Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN,
                        Ops.TRUNC) else 3 if op is Ops.MULACC else 2
    rows = [(a, b, vals[(i + j) % len(vals)]) for i, a in enumerate(vals)
            for j, b in enumerate(vals)]
    cols = [np.array([r[k] for r in rows], dtype=npdt) for k in range(arity)]
    got = sem.float_array(op, dt, cols)
    for row, g in zip(rows, got, strict=True):
        want = sem.alu(op, dt, row[:arity])
        assert (math.isnan(g) and math.isnan(want)) or (
            float(g) == want and math.copysign(1, g) == math.copysign(1, want)), (row, g, want)


@pytest.mark.parametrize("x,dst,want", [
    (2**53 + 2**29 + 1, dtypes.f32, float(2**53 + 2**30)),   # rounded once, not via f64
    (2**63 - 1, dtypes.f32, float(2**63)),
    (65519, dtypes.f16, 65504.0),
    (65520, dtypes.f16, math.inf),                          # rounds beyond f16's max
    (-(2**128), dtypes.f32, -math.inf),
    (2**1100, dtypes.f64, math.inf),
])
def test_int_to_float_rounds_once(x: int, dst, want: float) -> None:
    assert sem.cast(x, dtypes.index, dst) == want
    col = np.array([x, 0], dtype=object)
    assert sem.cast_float_array(col, dtypes.index, dst)[0][0] == want


def test_float_to_int_casts_of_arrays() -> None:
    x = np.array([2.7, -2.7, math.nan, math.inf, 3e9, -0.5], dtype=np.float32)
    vals, undef = sem.cast_float_array(x, dtypes.f32, dtypes.i32)
    assert list(undef) == [False, False, True, True, True, False]
    assert [int(v) for v, u in zip(vals, undef, strict=True) if not u] == [2, -2, 0]
    for v, u, f in zip(vals, undef, x, strict=True):
        scalar = sem.cast(float(f), dtypes.f32, dtypes.i32)
        assert isinstance(scalar, sem.Undefined) if u else scalar == v


# ---- every interval function holds every value of its op --------------------------
ends = st.one_of(st.integers(-12, 12), st.integers(-(1 << 40), 1 << 40))
intervals = st.tuples(ends, ends).map(lambda t: (min(t), max(t)))


def _points(iv: tuple[int, int], rng: random.Random) -> list[int]:
    return [iv[0], iv[1], *(rng.randint(iv[0], iv[1]) for _ in range(6))]


INTERVALS = {
    Ops.ADD: sem.iv_add, Ops.SUB: sem.iv_sub, Ops.MUL: sem.iv_mul, Ops.IDIV: sem.iv_idiv,
    Ops.MOD: sem.iv_mod, Ops.FLOORDIV: sem.iv_floordiv, Ops.FLOORMOD: sem.iv_floormod,
    Ops.MAX: sem.iv_max, Ops.MIN: sem.iv_min, Ops.AND: lambda a, b: sem.iv_bits(Ops.AND, a, b),
    Ops.OR: lambda a, b: sem.iv_bits(Ops.OR, a, b),
    Ops.XOR: lambda a, b: sem.iv_bits(Ops.XOR, a, b),
    Ops.LT: lambda a, b: sem.iv_cmp(Ops.LT, a, b), Ops.EQ: lambda a, b: sem.iv_cmp(Ops.EQ, a, b),
    Ops.NE: lambda a, b: sem.iv_cmp(Ops.NE, a, b), Ops.GE: lambda a, b: sem.iv_cmp(Ops.GE, a, b),
}


@pytest.mark.parametrize("op", list(INTERVALS), ids=lambda o: o.name)
@settings(max_examples=150, deadline=None)
@given(a=intervals, b=intervals, seed=st.integers(0, 1 << 30))
def test_binary_intervals_hold_every_value(op: Ops, a, b, seed: int) -> None:
    if op in (Ops.MOD, Ops.FLOORMOD) and b == (0, 0):
        return  # always a division by zero: no value
    lo, hi = INTERVALS[op](a, b)
    rng = random.Random(seed)
    for x in _points(a, rng):
        for y in _points(b, rng):
            v = sem.alu(op, dtypes.index, (x, y))
            assert isinstance(v, sem.Undefined) or lo <= v <= hi, (x, y, v, (lo, hi))


BOOLS = st.sampled_from([(0, 0), (1, 1), (0, 1)])


@settings(max_examples=150, deadline=None)
@given(a=intervals, b=intervals, c=BOOLS, d=BOOLS,
       s=st.tuples(st.integers(0, 70), st.integers(0, 70)).map(sorted),
       seed=st.integers(0, 1 << 30))
def test_unary_shift_where_bool_intervals_hold_every_value(a, b, c, d, s, seed: int) -> None:
    rng = random.Random(seed)
    for x in _points(a, rng):
        for f, op in ((sem.iv_neg, Ops.NEG), (sem.iv_not, Ops.NOT)):
            lo, hi = f(a)
            assert lo <= sem.alu(op, dtypes.index, (x,)) <= hi
        lo, hi = sem.iv_cast_bool(a)
        assert lo <= (x != 0) <= hi
        for k in range(s[0], s[1] + 1, max(1, (s[1] - s[0]) // 5)):
            for op in (Ops.SHL, Ops.SHR):
                lo, hi = sem.iv_shift(op, a, (s[0], s[1]))
                assert lo <= sem.alu(op, dtypes.index, (x, k)) <= hi
        y = rng.randint(b[0], b[1])
        assert sem.iv_hull(a, b)[0] <= min(x, y) and max(x, y) <= sem.iv_hull(a, b)[1]
        for cond in range(c[0], c[1] + 1):
            lo, hi = sem.iv_where(c, a, b)
            assert lo <= sem.alu(Ops.WHERE, dtypes.index, (cond, x, y)) <= hi
    for p in range(c[0], c[1] + 1):
        for q in range(d[0], d[1] + 1):
            lo, hi = sem.iv_xor_bool(c, d)
            assert lo <= sem.alu(Ops.XOR, dtypes.bool, (p, q)) <= hi


@pytest.mark.parametrize("dt", [dtypes.i8, dtypes.u8, dtypes.index], ids=str)
def test_iv_wrap_keeps_what_fits_and_widens_what_may_wrap(dt) -> None:
    assert sem.iv_wrap(dt, -3, 100) == ((-3, 100) if dt.min <= -3 else (dt.min, dt.max))
    assert sem.iv_wrap(dt, 0, 300) == ((0, 300) if dt.is_index else (dt.min, dt.max))
    assert sem.iv_wrap(dtypes.bool, 0, 1) == (False, True)
    assert sem.iv_wrap(dtypes.f32, 0, 1) == (-math.inf, math.inf)
