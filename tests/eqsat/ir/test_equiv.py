"""check_equivalent: equal and unequal pairs, Invalid, undefined points, the
vectorized evaluator against the reference one, and the whole corpus."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqsat.ir.dtype import dtypes
from eqsat.ir.equiv import Equivalence, SampledMemory, check_equivalent, same_value
from eqsat.ir.interp import INVALID, EvalError, Undefined, evaluate, evaluate_many
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse, to_sexpr
from eqsat.ir.uop import UOp
from tests.strategies import (
    assignments,
    fixed_width_exprs,
    float_exprs,
    fuzz_exprs,
    int_exprs,
    padded_index_exprs,
)

x, y = UOp.var("x", -20, 20), UOp.var("y", 0, 7)
r, r2 = UOp.range(16, 0), UOp.range(6, 1)
big = UOp.var("big", -(10**6), 10**6)
INV = UOp.invalid()


# ---- equal pairs: one line per case -------------------------------------------------
@pytest.mark.parametrize("a,b", [
    (x + 0, x),
    (x * 2, x + x),
    (x // 1, x),
    (x % 1, x - x),
    (r % 16, r),
    (r // 16, r - r),
    (x // 4 * 4 + x % 4, x),                              # holds for negative x under C rules
    ((r * 4 + y) // 4, r + y // 4),                       # y < 4 is not needed: r, y >= 0 ...
    ((r * 4 + y) % 4, y % 4),
    ((r2 * 16 + r) // 16, r2),
    ((r2 * 16 + r) % 16, r),
    (x // -3, -(x // 3)),
    (x % -3, x % 3),
    (-x // 2, -(x // 2)),                                  # truncation is odd-symmetric
    ((x * 2) // 2, x),                                     # tinygrad's floor rules miss this
    (x.maximum(x), x),
    (big // 7 * 7 + big % 7, big),                         # sampled, not exhaustive
    (r.lt(5).where(r, INV), r.lt(5).where(r, INV)),
    (r.lt(5).where(r + 1, INV) * 2, r.lt(5).where(r * 2 + 2, INV)),
    (r.lt(5).where(r % 8, INV), r.lt(5).where(r, INV)),
    (r.lt(5).where(r, INV), r.lt(5).where(r, r.lt(5).where(r, INV))),
    (x.lt(0).where(-x, x), x.maximum(-x)),
    (x.lt(3), x.le(2)),
    (x.lt(3).alu(Ops.NOT), x.ge(3)),
])
def test_equal_pairs(a, b):
    res = check_equivalent(a, b)
    assert res, res
    assert res.counterexample is None and res.points > 0


# ---- unequal pairs: the counterexample is a real difference -----------------------------
@pytest.mark.parametrize("a,b", [
    (x // 2 * 2, x),
    ((x % 6) % 4, x % 4),
    ((x + 4) // 4, x // 4 + 1),                            # false for x in -7..-1 under C rules
    (x % 4, x & 3),                                        # differs for negative x
    (x // 4, x >> 2),                                      # floor shift vs truncation
    ((r * 4 + y) // 4, r),                                 # y reaches 4..7
    (r.lt(5).where(r, INV), r),                            # Invalid on different points
    (r.lt(5).where(r, INV), r.lt(6).where(r, INV)),
    (r.lt(5).where(r, INV), r.lt(5).where(r + 1, INV)),
    (x + 1, 1 // (x - 3) + x),                             # b undefined where a is defined
    (big + (big.eq(999_983)).where(1, 0), big),            # a single differing point, sampled
    (big, big.maximum(-999_999)),                          # differs only at the corner
])
def test_unequal_pairs(a, b):
    res = check_equivalent(a, b)
    assert not res and isinstance(res, Equivalence)
    env = res.counterexample
    assert env is not None and set(env) == {k for k in res.domain}

    def value(g):
        try:
            return evaluate(g, env)
        except EvalError as e:
            return Undefined(str(e))

    va, vb = value(a), value(b)
    assert va == res.a_value or va is res.a_value
    assert not isinstance(va, Undefined)
    assert isinstance(vb, Undefined) or vb is not va and vb != va
    assert res.reason


def test_exhaustive_flag_and_points():
    res = check_equivalent(x + y, y + x)
    assert res.exhaustive and res.points == 41 * 8
    res = check_equivalent(big + x, x + big)
    assert not res.exhaustive and res.points > 20_000
    res = check_equivalent(UOp.const(dtypes.index, 3), UOp.const(dtypes.index, 1) + 2)
    assert res.exhaustive and res.points == 1


def test_undefined_points_of_the_input_are_skipped():
    a = x // x
    res = check_equivalent(a, UOp.const(dtypes.index, 1))
    assert res and res.skipped == 1 and res.points == 40
    # but b may not be undefined where a is defined
    res = check_equivalent(UOp.const(dtypes.index, 1), a)
    assert not res and res.counterexample == {"x": 0} and isinstance(res.b_value, Undefined)


def test_dtype_mismatch_is_not_equivalent():
    res = check_equivalent(x.lt(3), x.lt(3).cast(dtypes.index))
    assert not res and "dtype" in res.reason


def test_leaves_only_in_b_are_enumerated():
    # y is a leaf of b only: its 8 values are enumerated with x's 41, and y // 8 is 0 on
    # all of them, so the pair is equal, exhaustively
    res = check_equivalent(x, x + y - y + y // 8)
    assert res and res.exhaustive and res.points == 41 * 8
    res = check_equivalent(x, x + y - y)
    assert res and res.exhaustive and res.points == 41 * 8
    res = check_equivalent(x, x + y // 7)
    assert not res and res.counterexample["y"] == 7


def test_range_domain_comes_from_the_input():
    # the same loop id with a larger end in b: compared on a's loop values only
    assert check_equivalent(UOp.range(4, 3) * 2, UOp.range(9, 3) + UOp.range(9, 3))
    res = check_equivalent(UOp.range(9, 3) * 2, UOp.range(4, 3) * 2)
    assert not res and isinstance(res.b_value, Undefined)


def test_fixed_width_and_bool_expressions():
    i8 = dtypes.i8
    a = x.cast(i8) * UOp.const(i8, 16)
    assert check_equivalent(a, x.cast(i8) << UOp.const(i8, 4))
    assert not check_equivalent(a.cast(dtypes.index), x * 16)
    assert check_equivalent((x * 16).cast(i8), a)
    assert check_equivalent(x.lt(0) & y.lt(3), y.lt(3) & x.lt(0))


def test_mixed_float_and_integer_paths_compare_values_not_numpy_types():
    nan = UOp.const(dtypes.f32, math.nan)
    assert check_equivalent(nan.ne(nan), UOp.const(dtypes.bool, True))
    assert check_equivalent(x.lt(3).cast(dtypes.index), x.lt(3).where(1, 0))
    assert check_equivalent(x.cast(dtypes.bool), x.ne(0))


def test_float_expressions_round_at_their_dtype():
    f = x.cast(dtypes.f32)
    assert check_equivalent(f + f, f * UOp.const(dtypes.f32, 2.0))
    res = check_equivalent(f / UOp.const(dtypes.f32, 49.0) * UOp.const(dtypes.f32, 49.0), f)
    assert not res and abs(res.counterexample["x"]) in (7, 14)  # f32 rounding


# ---- floats: one line per pair; L, M: any f32 (loads), F: a cast of an integer ---------
L = "(load (index (buffer 1 f32 8) (var i 0 7)))"
M = "(load (index (buffer 1 f32 8) (var j 0 7)))"
H = "(load (index (buffer 2 f16 4) (var i 0 3)))"
F = "(cast f32 (var x -5 5))"


@pytest.mark.parametrize("a,b", [
    (f"(sub {L} 0.0)", L),                           # x - 0.0 is x, -0.0 included
    (f"(add {L} -0.0)", L),
    (f"(mul {L} 1.0)", L),
    (f"(add {F} 0.0)", F),                           # a cast of an integer is never -0.0
    (f"(lt (add {L} 0.0) 1.0)", f"(lt {L} 1.0)"),    # a signed zero the root cannot see
    ("(fdiv 0.0 0.0)", "nan"),                       # NaN payloads are not compared
    (f"(add {H} {H})", f"(mul {H} (const f16 2.0))"),
    (f"(cast f32 (cast f64 {L}))", L),
    ("(cast f32 (var x 9007199254740992 9007199254740995))",   # one rounding from the int
     "(cast f32 (cast f64 (var x 9007199254740992 9007199254740995)))"),
])
def test_equal_float_pairs(a, b):
    res = check_equivalent(parse(a), parse(b))
    assert res, res


@pytest.mark.parametrize("a,b,why", [
    (f"(fdiv {L} {L})", "1.0", "NaN at 0, inf, NaN (fdiv_self)"),
    (f"(fdiv {F} {F})", "1.0", "NaN at x = 0"),
    (f"(fdiv (mul {F} 1e38) 1e38)", F, "inf where x*1e38 overflows (fdiv_mul_cancel)"),
    (f"(add {L} 0.0)", L, "-0.0 + 0.0 is 0.0 (add_zero)"),
    (f"(sub {L} -0.0)", L, "-0.0 - -0.0 is 0.0 (sub_zero)"),
    (f"(mul {L} 0.0)", "0.0", "NaN*0, inf*0, -x*0"),
    (f"(max {L} {M})", f"(max {M} {L})", "max of -0.0 and 0.0 is the second"),
    ("0.0", "-0.0", "a root's sign of zero is observable"),
    (f"(cast f16 {L})", f"(cast f16 (cast f32 (cast f16 {L})))", "equal: f16 survives f32"),
    (f"(cast f32 (cast f16 {L}))", L, "f16 rounds and overflows (6e4 < 1e38)"),
    (f"(eq {L} {L})", "true", "NaN != NaN"),
    ("(cast f32 (var x 9007199791611905 9007199791611905))",     # 2**53 + 2**29 + 1
     "(cast f32 (cast f64 (var x 9007199791611905 9007199791611905)))",
     "through f64 the integer rounds twice, to 2**53 instead of 2**53 + 2**30"),
])
def test_float_pairs(a, b, why):
    """Unequal pairs (``why`` says where they differ); the one equal row checks that a
    roundtrip the dtypes hold is not reported."""
    res = check_equivalent(parse(a), parse(b))
    if why.startswith("equal"):
        assert res, res
        return
    assert not res, why
    env, bufs = res.counterexample, res.buffers
    arrays = [None] * 3
    for slot, elems in bufs.items():  # the counterexample is reproducible from its report
        dt = np.float32 if slot == 1 else np.float16
        arr = np.zeros(8, dtype=dt)
        for k, v in elems.items():
            arr[k] = v
        arrays[slot] = arr
    va = evaluate(parse(a), env, buffers=arrays)
    assert same_value(va, res.a_value) and not same_value(va, res.b_value)


def test_special_float_inputs_are_drawn():
    """Loads see 0, -0, inf, -inf, NaN and values near the overflow edge."""
    mem = SampledMemory([parse(L)], seed=3)
    vals = mem.read(parse(L).src[0].src[0], np.zeros(20000, np.int64), np.arange(20000))
    bits = {v.tobytes() for v in vals}
    for want in (0.0, -0.0, np.inf, -np.inf, 1e38, -1e38, 3.4e38, float(np.finfo(np.float32).max)):
        assert np.float32(want).tobytes() in bits, want
    assert np.isnan(vals).any()
    assert (np.abs(vals[np.isfinite(vals)]) < 1e6).mean() > 0.4  # and ordinary values


def test_integer_leaves_try_the_float_edges():
    """2**24 + 1 is the first integer f32 rounds: a wide leaf reaches it."""
    big = UOp.var("x", 0, 10**12)
    f = big.cast(dtypes.f32).cast(dtypes.index)
    res = check_equivalent(f, big)
    assert not res and res.counterexample["x"] > 2**24


def test_stores_are_compared_as_kernels():
    """A store under a range no END closes: the range is the kernels' input."""
    buf = UOp.buffer(0, dtypes.i32, 16)
    st_ = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, r)), r.cast(dtypes.i32)))
    res = check_equivalent(st_, st_)
    assert res and res.points == 32 and res.domain == {"R0": (0, 15)}
    with pytest.raises(ValueError, match="a has a STORE node and b is an expression"):
        check_equivalent(st_, r)


def test_vacuous_when_the_input_is_never_defined():
    res = check_equivalent(x // (x - x), x)
    assert res and res.points == 0 and res.skipped == 41


# ---- the vectorized evaluator agrees with the reference interpreter ---------------------
def _reference(e: UOp, env: dict) -> object:
    try:
        return evaluate(e, env)
    except EvalError:
        return "undefined"


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_evaluate_many_matches_evaluate(data):
    e = data.draw(st.one_of(int_exprs(4, extra_ops=True), padded_index_exprs(),
                            fixed_width_exprs(3)))
    envs = [data.draw(assignments(e)) for _ in range(4)]
    names = sorted({k for env in envs for k in env})
    cols = {k: np.array([env[k] for env in envs], dtype=np.int64) for k in names}
    vals, inv, und = evaluate_many(e, cols, n=len(envs))
    for i, env in enumerate(envs):
        want = _reference(e, env)
        got = "undefined" if und[i] else INVALID if inv[i] else vals[i]
        assert got == want or got is want, (e, env, got, want)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_evaluate_many_matches_evaluate_on_floats_and_loads(data):
    """The numpy evaluator (floats rounded per op, loads from sampled buffers) and the
    reference interpreter agree bit for bit, NaN for NaN, on every kind of expression."""
    e = data.draw(st.one_of(fuzz_exprs(4), float_exprs(4)))
    envs = [data.draw(assignments(e)) for _ in range(4)]
    names = sorted({k for env in envs for k in env})
    cols = {k: np.array([env[k] for env in envs], dtype=object) for k in names}
    mem = SampledMemory([e], seed=data.draw(st.integers(0, 100)))
    vals, inv, und = evaluate_many(e, cols, n=len(envs), memory=mem)
    for i, env in enumerate(envs):
        try:
            want = evaluate(e, env, buffers=mem.arrays(i))
        except EvalError:
            want = "undefined"
        got = "undefined" if und[i] else INVALID if inv[i] else vals[i]
        assert got is want or (want != "undefined" and got != "undefined"
                               and same_value(got, want)), (to_sexpr(e), env, got, want)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(int_exprs(4))
def test_random_expression_is_equivalent_to_itself_not_to_a_shift(e):
    res = check_equivalent(e, e, samples=500)
    assert res
    if res.points:
        assert not check_equivalent(e, e + 1, samples=500)


# ---- the corpus: every tinygrad output is equivalent to its input ------------------------
def test_corpus_tinygrad_outputs_are_equivalent(corpus_lines):
    assert len(corpus_lines) >= 400
    failures = []
    exhaustive = 0
    for d in corpus_lines:
        res = check_equivalent(parse(d["expr"]), parse(d["tinygrad"]))
        exhaustive += res.exhaustive
        if not res:
            failures.append((d["id"], res))
    assert not failures, failures[:5]
    assert exhaustive > len(corpus_lines) // 2


def test_corpus_perturbations_are_caught(corpus_lines):
    """The checker is not vacuous: off-by-one outputs and moved padding are caught."""
    for d in corpus_lines[::4]:
        a = parse(d["expr"])
        assert not check_equivalent(a, a + 1), d["id"]
        if any(u.op is Ops.INVALID for u in a.toposort()):
            tg = parse(d["tinygrad"])
            moved = tg.substitute({UOp.invalid(): UOp.const(dtypes.index, -1)})
            assert not check_equivalent(a, moved), d["id"]


def test_a_bf16_buffer_is_sampled_as_bf16_values():
    # bf16 has no numpy dtype: its elements are f32 values rounded once to bf16
    load = parse("(load (index (buffer 7 bf16 8) (var i 0 7)))")
    assert check_equivalent(load, load).equivalent
    plus_zero = parse("(add (load (index (buffer 7 bf16 8) (var i 0 7))) 0.0)")
    assert not check_equivalent(load, plus_zero).equivalent  # -0.0 + 0.0 is 0.0


def test_a_graph_that_is_no_uop_is_named():
    g = parse("(add (var x 0 9) 1)")
    with pytest.raises(TypeError, match="but b is a NoneType"):
        check_equivalent(g, None)
    with pytest.raises(TypeError, match="evaluate expects a UOp"):
        evaluate(None, {})
