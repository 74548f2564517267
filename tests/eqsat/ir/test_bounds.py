"""Soundness of the eager value ranges (eqsat.ir.bounds): every node's value under
every in-bounds assignment lies in its [vmin, vmax].

The property test runs ``EQSAT_BOUNDS_EXAMPLES`` examples (2,000 by default, the
CI figure); ``EQSAT_BOUNDS_EXAMPLES=20000 pytest tests/eqsat/ir/test_bounds.py`` is
the thorough local run.
"""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqsat.ir.bounds import _ARITH, _general_bounds, compute_bounds, dtype_bounds
from eqsat.ir.dtype import dtypes
from eqsat.ir.interp import INVALID, EvalError, Undefined, node_values
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from tests.strategies import assignments, fixed_width_exprs, int_exprs, padded_index_exprs

EXAMPLES = int(os.environ.get("EQSAT_BOUNDS_EXAMPLES", "2000"))
BOUNDS_SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                           suppress_health_check=list(HealthCheck))


def assert_within_bounds(e: UOp, env: dict) -> int:
    checked = 0
    for u, v in node_values(e, env).items():
        for x in v if isinstance(v, tuple) else (v,):
            if x is INVALID or isinstance(x, Undefined):
                continue
            assert u.vmin <= x <= u.vmax, (
                f"{u} = {x} outside [{u.vmin}, {u.vmax}] at {env}\nin {e}")
            checked += 1
    return checked


@BOUNDS_SETTINGS
@given(st.data())
def test_bounds_are_sound(data):
    kind = data.draw(st.sampled_from(("index", "index", "padded", "fixed")))
    if kind == "index":
        e = data.draw(int_exprs(5, extra_ops=True))
    elif kind == "padded":
        e = data.draw(padded_index_exprs())
    else:
        e = data.draw(fixed_width_exprs(4))
    env = data.draw(assignments(e))
    assert_within_bounds(e, env)


# ---- exact figures: one line per case ------------------------------------------------------
x = UOp.var("x", -7, 7)
p = UOp.var("p", 5, 7)
n = UOp.var("n", -7, -5)
d = UOp.var("d", -2, 2)
r = UOp.range(16, 0)
u8, i8, i32 = dtypes.u8, dtypes.i8, dtypes.i32


@pytest.mark.parametrize("e,lo,hi", [
    (r, 0, 15),
    (r % 16, 0, 15),
    (r // 16, 0, 0),
    (r * 4 + 3, 3, 63),
    (x // 2, -3, 3),
    (x // -2, -3, 3),
    (x % 4, -3, 3),
    (x % -4, -3, 3),
    (p % 8, 5, 7),                 # one bucket: exact
    (n % 8, -7, -5),               # negative dividend keeps its sign
    (p // 8, 0, 0),
    (n // 8, 0, 0),                # truncation, not floor
    (n // 3, -2, -1),
    (x // d, -7, 7),               # divisor range straddles zero
    (x % d, -1, 1),
    (-x, -7, 7),
    (x.maximum(p), 5, 7),
    (x << 2, -28, 28),
    (x >> 1, -4, 3),               # floor shift
    (p & 3, 0, 3),
    (x & 12, 0, 12),
    (p | 8, 8, 15),
    (x.lt(8), True, True),
    (x.lt(-7), False, False),
    (x.lt(0), False, True),
    (x.lt(0).where(p, n), -7, 7),
    (x.lt(8).where(p, n), 5, 7),
    (x.cast(u8), 0, 255),          # -7..7 wraps
    (p.cast(u8), 5, 7),
    ((r * 20).cast(u8), 0, 255),   # up to 300: wraps
    ((r * 8).cast(u8), 0, 120),
    (UOp.const(i8, 125) + p.cast(i8), -128, 127),  # 130..132 wraps
    (UOp.const(i8, 100) + p.cast(i8), 105, 107),
    (UOp.const(i32, 100) + p.cast(i32), 105, 107),
    (x.cast(dtypes.bool), False, True),
    (p.cast(dtypes.bool), True, True),
])
def test_exact_bounds(e, lo, hi):
    assert (e.vmin, e.vmax) == (lo, hi)
    assert type(e.vmin) is type(lo)


@pytest.mark.parametrize("e", [
    UOp.const(dtypes.index, 0) // (p * 0),            # the divisor is always zero
    UOp.const(dtypes.index, 0) % (p * 0),
    UOp.const(u8, 0) // UOp.const(u8, 0),
    UOp.const(u8, 4) >> UOp.const(u8, 8),             # shift by the full width
    UOp.const(i32, 0) << UOp.const(i32, 40),
    p >> (n // 10 - 1),                               # always a negative amount
])
def test_always_undefined_nodes_are_unbounded(e):
    """No range may pin an always-undefined node to a value a rule could fold to."""
    assert e.vmin == dtype_bounds(e.dtype)[0] and e.vmax == dtype_bounds(e.dtype)[1]


def test_huge_index_bounds_do_not_overflow():
    g = UOp.var("x", 0, 10)
    for _ in range(2500):
        g = g * 3
    assert g.vmax == math.inf  # (past INDEX_BOUND_CAP: no bound)
    h = (g // 7) % 5 + (g & 12345) + (g >> 3) + g.cast(i32)
    assert h.vmin <= 0 and h.vmax > 3**2500
    assert g.lt(UOp.const(dtypes.index, 0)).vmin is False  # (no bound: either way)


def test_invalid_is_unbounded():
    # Invalid has no value: a padded index may not be folded as if it were its valid part
    v = r.lt(5).where(r, UOp.invalid())
    assert (v.vmin, v.vmax) == (-math.inf, math.inf)
    assert v.lt(100).vmin is False


def test_float_bounds_are_unbounded_unless_constant():
    f = x.cast(dtypes.f32)
    assert (f.vmin, f.vmax) == (-math.inf, math.inf)
    c = UOp.const(dtypes.f32, 1.5)
    assert (c.vmin, c.vmax) == (1.5, 1.5)
    assert dtype_bounds(dtypes.f32) == (-math.inf, math.inf)
    assert dtype_bounds(u8) == (0, 255)


def _reduce(op: Ops, body: UOp, *rngs: UOp) -> UOp:
    return UOp(Ops.REDUCE, body.dtype, (body, *rngs), op)


@pytest.mark.parametrize("op,end,lo,hi", [
    (Ops.MAX, UOp.const(dtypes.index, 4), 0, 3),
    (Ops.MIN, UOp.const(dtypes.index, 4), 0, 3),
    (Ops.MAX, UOp.var("m", 0, 4), -(2**31), 3),        # may run zero times: identity
    (Ops.MIN, UOp.var("m", 0, 4), 0, 2**31 - 1),
    (Ops.ADD, UOp.const(dtypes.index, 4), -(2**31), 2**31 - 1),
])
def test_reduce_bounds(op, end, lo, hi):
    rr = UOp.range(end, 5)
    red = _reduce(op, rr.cast(i32), rr)
    assert (red.vmin, red.vmax) == (lo, hi)


def test_compute_bounds_matches_the_nodes():
    e = (x * 3 + p) // 4
    assert compute_bounds(e.op, e.dtype, e.src, e.arg) == (e.vmin, e.vmax)


@pytest.mark.parametrize("dt", [u8, i8, dtypes.u16, dtypes.i16, i32, dtypes.u32, dtypes.i64,
                                dtypes.u64])
def test_fixed_width_ops_at_the_extremes(dt):
    lo, hi = UOp.const(dt, dt.min), UOp.const(dt, dt.max)
    one = UOp.const(dt, 1)
    exprs = [hi + one, lo - one, lo * hi, -lo, lo // UOp.const(dt, -1), hi << UOp.const(dt, 1),
             lo >> UOp.const(dt, 1), hi ^ lo, lo.alu(Ops.NOT), hi.cast(i8), lo.cast(u8)]
    for e in exprs:
        try:
            assert_within_bounds(e, {})
        except EvalError:
            pass


def test_index_bounds_past_the_cap_are_unbounded():
    # each squaring doubles a bound's digits: past INDEX_BOUND_CAP the bound is infinite,
    # so 40 squarings parse at once (exact, they were numbers of 2**40 digits)
    from eqsat.ir.bounds import INDEX_BOUND_CAP
    from eqsat.ir.sexpr import parse

    for lo, hi in ((2, 9), (-9, -2), (0, 9)):
        lines = [f"%a0 = (var x {lo} {hi})"]
        lines += [f"%a{i} = (mul %a{i - 1} %a{i - 1})" for i in range(1, 40)]
        g = parse("\n".join(lines + ["%a39"]))
        assert (g.vmin, g.vmax) == (-math.inf, math.inf)
        assert g.src[0].src[0].vmax == math.inf or g.src[0].src[0].vmax <= INDEX_BOUND_CAP


_ENDS = st.one_of(st.integers(-40, 40), st.integers(-2**130, 2**130),
                  st.sampled_from([0, 2**128, -2**128, 2**128 + 1, -2**128 - 1]))


@BOUNDS_SETTINGS
@given(op=st.sampled_from(sorted(_ARITH, key=lambda o: o.value)),
       a=st.tuples(_ENDS, _ENDS).map(sorted), b=st.tuples(_ENDS, _ENDS).map(sorted))
def test_index_fast_path_is_the_general_path(op: Ops, a: list[int], b: list[int]) -> None:
    src = (UOp.var("fa", *a), UOp.var("fb", *b))
    fast, general = compute_bounds(op, dtypes.index, src, None), \
        _general_bounds(op, dtypes.index, src, None)
    assert fast == general and list(map(type, fast)) == list(map(type, general))
