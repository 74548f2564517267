"""Index dtype narrowing (lowering/narrow.py): select_dtype, the three phases, soundness."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat import EvalError, dtypes, evaluate
from eqsat.ir.interp import INVALID
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import PatternMatcher, graph_rewrite
from eqsat.ir.uop import UOp
from lowering.narrow import (
    LoweringError,
    leaf_rules,
    narrow_index,
    select_dtype,
    terminal_rules,
    upward_rules,
)
from tests.strategies import assignments, int_exprs, padded_index_exprs

I32, I64, IDX = dtypes.i32, dtypes.i64, dtypes.index
MIN32, MAX32 = -(1 << 31), (1 << 31) - 1
MIN64, MAX64 = -(1 << 63), (1 << 63) - 1


# ---- select_dtype at the boundaries -----------------------------------------------------------
@pytest.mark.parametrize("lo,hi,want", [
    (0, 0, I32),
    (MIN32, MAX32, I32),              # exactly the i32 range
    (MIN32 - 1, 0, I64),              # one below
    (0, MAX32 + 1, I64),              # one above
    (MIN32, MAX32 + 1, I64),
    (MIN64, MAX64, I64),              # exactly the i64 range
    (-5, 5, I32),
])
def test_select_dtype_boundaries(lo: int, hi: int, want) -> None:
    assert select_dtype(UOp.var("x", lo, hi)) is want


@pytest.mark.parametrize("lo,hi", [(0, MAX64 + 1), (MIN64 - 1, 0)])
def test_select_dtype_beyond_i64_is_an_error(lo: int, hi: int) -> None:
    with pytest.raises(LoweringError, match="beyond the i64 range"):
        select_dtype(UOp.var("x", lo, hi))


def test_select_dtype_of_sums_uses_exact_bounds() -> None:
    x = UOp.var("x", 0, MAX32)
    assert select_dtype(x) is I32
    assert select_dtype(x + 1) is I64
    assert select_dtype(x - 1) is I32
    assert select_dtype(UOp.vconst(IDX, (1, 2, 3, 4))) is I32.vec(4)
    assert select_dtype(UOp.vconst(IDX, (1, 2, 3, 1 << 40))) is I64.vec(4)


# ---- the three phases, one at a time ----------------------------------------------------------
def _phase(g: UOp, rules) -> UOp:
    return graph_rewrite(g, PatternMatcher(rules))


def test_phase1_leaf_wrappers() -> None:
    c = _phase(UOp.const(IDX, 7), leaf_rules)
    assert c.op is Ops.CAST and c.dtype is IDX and c.src[0].op is Ops.CONST
    assert c.src[0].dtype is I32 and c.src[0].arg == 7
    big = _phase(UOp.const(IDX, 1 << 40), leaf_rules)
    assert big.src[0].dtype is I64
    v = _phase(UOp.var("n", 0, 10), leaf_rules)
    assert v.op is Ops.CAST and v.src[0].op is Ops.DEFINE_VAR and v.src[0].dtype is I32
    assert v.src[0].arg == ("n", 0, 10)
    vc = _phase(UOp.vconst(IDX, (1, 2)), leaf_rules)
    assert vc.op is Ops.CAST and vc.src[0].op is Ops.VCONST and vc.src[0].dtype is I32.vec(2)
    cond = UOp(Ops.DEFINE_VAR, I32, (), ("b", 0, 5)).lt(UOp.const(I32, 3))
    b = _phase(cond.cast(IDX), leaf_rules)  # casts to index are leaves
    assert b.src[0].op is Ops.CAST and b.src[0].dtype is I32 and b.src[0].src[0] is cond
    one = _phase(UOp.const(dtypes.bool, True).cast(IDX), leaf_rules)  # constants fold
    assert one.src[0].op is Ops.CONST and one.src[0].dtype is I32 and one.src[0].arg == 1


def test_phase2_upward_propagation() -> None:
    x = UOp(Ops.DEFINE_VAR, I32, (), ("x", 0, 100)).cast(IDX)
    y = UOp(Ops.DEFINE_VAR, I64, (), ("y", 0, 1 << 40)).cast(IDX)
    s = _phase(x + x, upward_rules)
    assert s.op is Ops.CAST and s.src[0].op is Ops.ADD and s.src[0].dtype is I32
    mixed = _phase(x + y, upward_rules)  # the wider operand wins
    assert mixed.src[0].dtype is I64 and mixed.src[0].src[0].op is Ops.CAST
    z = UOp(Ops.DEFINE_VAR, I32, (), ("z", 0, MAX32)).cast(IDX)
    wide = _phase(z * z, upward_rules)  # operands fit i32, the result does not
    assert wide.src[0].dtype is I64
    cmp = _phase(x.lt(y), upward_rules)  # comparisons: bool result, no wrapper
    assert cmp.op is Ops.LT and cmp.src[0].dtype is I64 and cmp.dtype is dtypes.bool
    c = UOp(Ops.DEFINE_VAR, I32, (), ("b", 0, 5)).lt(UOp.const(I32, 3))
    w = _phase(c.where(x, y), upward_rules)
    assert w.op is Ops.CAST and w.src[0].op is Ops.WHERE and w.src[0].dtype is I64
    end = UOp.const(I32, 16).cast(IDX)
    r = _phase(UOp(Ops.RANGE, IDX, (end,), 3), upward_rules)
    assert r.op is Ops.CAST and r.src[0].op is Ops.RANGE and r.src[0].dtype is I32
    assert r.src[0].arg == 3


def test_phase3_terminals() -> None:
    buf = UOp.buffer(0, dtypes.f32, 64)
    x = UOp(Ops.DEFINE_VAR, I32, (), ("x", 0, 63))
    c = UOp(Ops.DEFINE_VAR, I32, (), ("b", 0, 5)).lt(UOp.const(I32, 3))
    plain = _phase(UOp(Ops.INDEX, buf.dtype, (buf, x.cast(IDX))), terminal_rules)
    assert plain.src == (buf, x)
    gated = _phase(UOp(Ops.INDEX, buf.dtype, (buf, c.where(x.cast(IDX), UOp.invalid()))),
                   terminal_rules)
    assert gated.src == (buf, x, c)  # INDEX(buf, WHERE(c, idx, Invalid)) -> INDEX(buf, idx, c)
    never = _phase(UOp(Ops.INDEX, buf.dtype, (buf, UOp.invalid())), terminal_rules)
    assert never.src[2].op is Ops.CONST and never.src[2].arg is False
    f = _phase(x.cast(IDX).cast(dtypes.f32), terminal_rules)
    assert f.op is Ops.CAST and f.src[0] is x
    r = UOp(Ops.RANGE, I32, (UOp.const(I32, 4),), 0)
    st_ = UOp(Ops.STORE, dtypes.void, (plain, UOp.const(dtypes.f32, 1.0)))
    e = _phase(UOp(Ops.END, dtypes.void, (st_, r.cast(IDX))), terminal_rules)
    assert e.src[1] is r


# ---- the whole pass ------------------------------------------------------------------------
def _kernel(idx: UOp, *ranges: UOp) -> UOp:
    buf = UOp.buffer(0, dtypes.f32, 1 << 20)
    st_ = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, idx)),
                                       UOp.const(dtypes.f32, 1.0)))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st_,) + ranges),))


def test_narrow_kernel_leaves_no_index() -> None:
    r = UOp.range(60, 0)
    g = narrow_index(_kernel((r % 10) * 6 + r // 10, r))
    assert all(not u.dtype.is_index for u in g.toposort())
    assert {u.dtype for u in g.toposort() if u.dtype.is_int} == {I32}


def test_narrow_gated_index_through_arithmetic() -> None:
    x = UOp.var("x", 0, 100)
    r = UOp.range(8, 0)
    padded = x.lt(50).where(x * 3, UOp.invalid()) + r  # Invalid below an add: hoisted first
    g = narrow_index(_kernel(padded, r))
    idx = [u for u in g.toposort() if u.op is Ops.INDEX][0]
    assert len(idx.src) == 3 and idx.src[2].op is Ops.LT
    assert not any(u.op in (Ops.INVALID, Ops.WHERE) for u in g.toposort())


def test_narrow_picks_i64_for_large_offsets() -> None:
    r = UOp.range(1 << 20, 0)
    g = narrow_index(_kernel(r * (1 << 12), r))  # up to 2**32: i64
    idx = [u for u in g.toposort() if u.op is Ops.INDEX][0]
    assert idx.src[1].dtype is I64
    assert [u.dtype for u in g.toposort() if u.op is Ops.RANGE] == [I32]


def test_invalid_outside_index_is_an_error() -> None:
    x = UOp.var("x", 0, 100)
    bad = x.lt(50).where(x, UOp.invalid()).lt(7)  # a comparison of a maybe-invalid index
    buf = UOp.buffer(0, dtypes.bool, 1)
    st_ = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, UOp.const(IDX, 0))), bad))
    with pytest.raises(LoweringError, match="Invalid"):
        narrow_index(UOp(Ops.SINK, dtypes.void, (st_,)))


# ---- soundness against the reference interpreter -----------------------------------------------
def _env_ok(e: UOp, env: dict) -> bool:
    try:
        evaluate(e, env)
    except EvalError:
        return False
    return True


@given(st.data())
def test_narrowing_preserves_values(data: st.DataObject) -> None:
    e = data.draw(int_exprs(max_depth=4))
    env = data.draw(assignments(e))
    try:
        want = evaluate(e, env)
    except EvalError:
        return
    try:
        g = narrow_index(e)
    except LoweringError as err:
        assert "beyond the i64 range" in str(err)
        return
    assert not any(u.dtype.is_index for u in g.toposort())
    assert evaluate(g, env) == want


@given(st.data())
def test_narrowing_padded_index(data: st.DataObject) -> None:
    e = data.draw(padded_index_exprs(max_depth=3))
    env = data.draw(assignments(e))
    try:
        want = evaluate(e, env)
    except EvalError:
        return
    buf = UOp.buffer(0, dtypes.f32, 1)
    g = narrow_index(UOp(Ops.INDEX, buf.dtype, (buf, e)))
    assert g.op is Ops.INDEX and not any(u.dtype.is_index for u in g.toposort())
    valid = evaluate(g.src[2], env) if len(g.src) > 2 else True
    if want is INVALID:
        assert valid is False
    else:
        assert valid is True and evaluate(g.src[1], env) == want
