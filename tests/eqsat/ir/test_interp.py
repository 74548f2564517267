"""The reference interpreter: C integer semantics, wraparound, floats, vectors,
Invalid, undefined values, and whole kernels against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.interp import INVALID, EvalError, evaluate, evaluate_many, run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp

I = dtypes.index  # noqa: E741


def c(v, dt: DType = I) -> UOp:
    return UOp.const(dt, v)


def ev(u: UOp, **env):
    return evaluate(u, env)


# ---- C division: one line per case ----------------------------------------
@pytest.mark.parametrize("a,b,q,r", [
    (7, 2, 3, 1),
    (-7, 2, -3, -1),
    (7, -2, -3, 1),
    (-7, -2, 3, -1),
    (6, 3, 2, 0),
    (-6, 3, -2, 0),
    (0, 5, 0, 0),
    (0, -5, 0, 0),
    (1, 2, 0, 1),
    (-1, 2, 0, -1),
    (1, -2, 0, 1),
    (-1, -2, 0, -1),
    (2**70 + 1, 3, (2**70 + 1) // 3, (2**70 + 1) % 3),
    (-(2**70) - 1, 3, -((2**70 + 1) // 3), -((2**70 + 1) % 3)),
])
def test_c_division_index(a, b, q, r):
    assert evaluate(c(a) // c(b)) == q
    assert evaluate(c(a) % c(b)) == r
    assert q * b + r == a


@pytest.mark.parametrize("dt,a,b,q,r", [
    (dtypes.i32, -7, 2, -3, -1),
    (dtypes.i32, 7, -2, -3, 1),
    (dtypes.i8, -128, -1, -128, 0),        # INT_MIN / -1 wraps
    (dtypes.i8, -128, 3, -42, -2),
    (dtypes.u8, 255, 2, 127, 1),
    (dtypes.u32, 2**32 - 1, 10, 429496729, 5),
    (dtypes.i64, -(2**63), -1, -(2**63), 0),
])
def test_c_division_fixed(dt, a, b, q, r):
    assert evaluate(c(a, dt) // c(b, dt)) == q
    assert evaluate(c(a, dt) % c(b, dt)) == r


@pytest.mark.parametrize("op", [Ops.IDIV, Ops.MOD])
@pytest.mark.parametrize("dt", [dtypes.index, dtypes.i32, dtypes.u8])
def test_division_by_zero_raises(op, dt):
    x = UOp.var("x", -3, 3)
    e = (x.cast(dt) if dt is not I else x).alu(op, c(0, dt))
    with pytest.raises(EvalError, match="by zero"):
        evaluate(e, {"x": 1})


# ---- wraparound --------------------------------------------------------------
@pytest.mark.parametrize("dt,op,a,b,want", [
    (dtypes.i8, Ops.ADD, 127, 1, -128),
    (dtypes.i8, Ops.SUB, -128, 1, 127),
    (dtypes.i8, Ops.MUL, 16, 16, 0),
    (dtypes.i8, Ops.MUL, -128, -1, -128),
    (dtypes.u8, Ops.ADD, 255, 1, 0),
    (dtypes.u8, Ops.SUB, 0, 1, 255),
    (dtypes.u8, Ops.MUL, 16, 17, 16),
    (dtypes.u8, Ops.SHL, 1, 7, 128),
    (dtypes.u8, Ops.SHL, 3, 7, 128),
    (dtypes.i8, Ops.SHL, 1, 7, -128),
    (dtypes.i8, Ops.SHR, -128, 7, -1),      # arithmetic shift for signed
    (dtypes.u8, Ops.SHR, 128, 7, 1),
    (dtypes.i32, Ops.ADD, 2**31 - 1, 1, -(2**31)),
    (dtypes.i32, Ops.MUL, 65536, 65536, 0),
    (dtypes.i32, Ops.SHL, 1, 31, -(2**31)),
    (dtypes.u32, Ops.ADD, 2**32 - 1, 2, 1),
    (dtypes.u32, Ops.MUL, 2**31, 2, 0),
    (dtypes.u32, Ops.SUB, 0, 1, 2**32 - 1),
    (dtypes.i64, Ops.ADD, 2**63 - 1, 1, -(2**63)),
    (dtypes.i64, Ops.MUL, 2**32, 2**32, 0),
    (dtypes.u64, Ops.SUB, 0, 1, 2**64 - 1),
    (dtypes.i32, Ops.AND, -1, 0xFF, 0xFF),
    (dtypes.i32, Ops.OR, -256, 0xFF, -1),
    (dtypes.i32, Ops.XOR, -1, 0x7FFFFFFF, -(2**31)),
    (dtypes.index, Ops.ADD, 2**63 - 1, 1, 2**63),   # index never wraps
    (dtypes.index, Ops.MUL, 2**40, 2**40, 2**80),
    (dtypes.index, Ops.SHL, -3, 2, -12),
    (dtypes.index, Ops.SHR, -7, 1, -4),             # floor shift
])
def test_wraparound(dt, op, a, b, want):
    assert evaluate(c(a, dt).alu(op, c(b, dt))) == want


@pytest.mark.parametrize("dt,a,want", [
    (dtypes.i8, -128, -128),
    (dtypes.i32, -(2**31), -(2**31)),
    (dtypes.u8, 1, 255),
    (dtypes.u32, 5, 2**32 - 5),
    (dtypes.index, 2**70, -(2**70)),
])
def test_neg_wraps(dt, a, want):
    assert evaluate(-c(a, dt)) == want


@pytest.mark.parametrize("src,v,dst,want", [
    (dtypes.index, 300, dtypes.u8, 44),
    (dtypes.index, -1, dtypes.u8, 255),
    (dtypes.index, 200, dtypes.i8, -56),
    (dtypes.index, 2**40 + 5, dtypes.i32, 5),
    (dtypes.index, -1, dtypes.u64, 2**64 - 1),
    (dtypes.i8, -1, dtypes.u32, 2**32 - 1),
    (dtypes.u8, 255, dtypes.i8, -1),
    (dtypes.u32, 2**32 - 1, dtypes.index, 2**32 - 1),
    (dtypes.i32, -5, dtypes.index, -5),
    (dtypes.i32, 7, dtypes.bool, True),
    (dtypes.i32, 0, dtypes.bool, False),
    (dtypes.bool, True, dtypes.i32, 1),
    (dtypes.f32, -2.7, dtypes.i32, -2),     # truncation toward zero
    (dtypes.f32, 2.7, dtypes.u8, 2),
    (dtypes.i32, 16777217, dtypes.f32, 16777216.0),
    # rounded once, as C converts: through f64 it would round twice to 2**53
    (dtypes.index, 2**53 + 2**29 + 1, dtypes.f32, float(2**53 + 2**30)),
    (dtypes.i64, 2**63 - 1, dtypes.f32, float(2**63)),
    (dtypes.index, 2**128, dtypes.f32, math.inf),           # beyond f32: infinity
    (dtypes.index, -(2**1100), dtypes.f64, -math.inf),
    (dtypes.f64, 0.1, dtypes.f32, float(np.float32(0.1))),
    (dtypes.f32, 65520.0, dtypes.f16, math.inf),
    (dtypes.f32, 1.00390625, dtypes.bf16, 1.0),   # ties to even
    (dtypes.f32, 1.01171875, dtypes.bf16, 1.015625),
    # bf16 rounds once: through f32 first, 2**30 + 2**22 + 1 would round to 2**30
    (dtypes.i32, 1077936129, dtypes.bf16, 1082130432.0),
    (dtypes.f64, 1.00390625 + 2.0**-40, dtypes.bf16, 1.0078125),  # f32 would make a tie
    (dtypes.f64, -(2.0**-134) - 2.0**-150, dtypes.bf16, -(2.0**-133)),  # subnormal, sign
    (dtypes.f64, -(2.0**-135), dtypes.bf16, -0.0),
    (dtypes.f64, 3.3963e38, dtypes.bf16, math.inf),        # past the largest finite
    (dtypes.f64, 3.3895313892515355e38, dtypes.bf16, 3.3895313892515355e38),
])
def test_casts(src, v, dst, want):
    got = evaluate(c(v, src).cast(dst))
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("v,dst", [
    (math.nan, dtypes.i32), (math.inf, dtypes.i32), (3e9, dtypes.i32), (-1.0, dtypes.u8),
    (math.inf, dtypes.index),
])
def test_float_to_int_out_of_range_is_undefined(v, dst):
    with pytest.raises(EvalError, match="cast"):
        evaluate(c(v, dtypes.f32 if not math.isnan(v) else dtypes.f64).cast(dst))


@pytest.mark.parametrize("src,v,dst,want", [
    (dtypes.f32, 1.0, dtypes.u32, 0x3F800000),
    (dtypes.i32, -1, dtypes.u32, 2**32 - 1),
    (dtypes.u32, 0xBF800000, dtypes.f32, -1.0),
    (dtypes.f16, 1.0, dtypes.i16, 0x3C00),
    (dtypes.bf16, 1.0, dtypes.u16, 0x3F80),
    (dtypes.u16, 0x4000, dtypes.bf16, 2.0),
])
def test_bitcast(src, v, dst, want):
    assert evaluate(c(v, src).bitcast(dst)) == want


@pytest.mark.parametrize("dt,amount", [(dtypes.u8, 8), (dtypes.i32, 32), (dtypes.i32, -1),
                                       (dtypes.index, -1)])
def test_bad_shift_is_undefined(dt, amount):
    with pytest.raises(EvalError, match="shl"):
        evaluate(c(1, dt) << c(amount, dt))


# ---- floats -------------------------------------------------------------------
F32, F16 = dtypes.f32, dtypes.f16


@pytest.mark.parametrize("expr,want", [
    (lambda: c(1.0, F32) / c(0.0, F32), math.inf),
    (lambda: c(-1.0, F32) / c(0.0, F32), -math.inf),
    (lambda: c(math.inf, F32) - c(math.inf, F32), math.nan),
    (lambda: c(0.0, F32) * c(math.inf, F32), math.nan),
    (lambda: c(-1.0, F32).alu(Ops.SQRT), math.nan),
    (lambda: c(0.0, F32).alu(Ops.LOG2), -math.inf),
    (lambda: c(0.0, F32).alu(Ops.RECIP), math.inf),
    (lambda: c(3.0, F32).alu(Ops.EXP2), 8.0),
    (lambda: c(math.nan, F32).maximum(c(1.0, F32)), math.nan),
    (lambda: c(0.1, F32) + c(0.2, F32), float(np.float32(0.1) + np.float32(0.2))),
    (lambda: c(0.1, dtypes.f64) + c(0.2, dtypes.f64), 0.1 + 0.2),
    (lambda: c(1.0, F16) + c(0.0004, F16), 1.0),            # below half an f16 ulp
    (lambda: c(2048.0, F16) + c(1.0, F16), 2048.0),          # f16 ties to even
    (lambda: c(60000.0, F16) + c(10000.0, F16), math.inf),  # f16 overflow
    (lambda: c(1.0, dtypes.bf16) + c(0.001, dtypes.bf16), 1.0),
    (lambda: c(-2.5, F32).alu(Ops.TRUNC), -2.0),
    (lambda: c(2.0, F32).alu(Ops.MULACC, c(3.0, F32), c(1.0, F32)), 7.0),
    # pow is C's (numpy's power takes x**0.5 for sqrt(x): -0.0 and NaN here)
    (lambda: c(-0.0, F32).alu(Ops.POW, c(0.5, F32)), 0.0),
    (lambda: c(-math.inf, F16).alu(Ops.POW, c(0.5, F16)), math.inf),
    (lambda: c(-0.0, F32).alu(Ops.POW, c(-3.0, F32)), -math.inf),
    (lambda: c(0.0, F32).alu(Ops.POW, c(-2.0, F32)), math.inf),
    (lambda: c(-8.0, F32).alu(Ops.POW, c(0.5, F32)), math.nan),
    (lambda: c(1.0, F32).alu(Ops.POW, c(math.nan, F32)), 1.0),
    (lambda: c(-10.0, dtypes.f64).alu(Ops.POW, c(401.0, dtypes.f64)), -math.inf),
])
def test_float_ops(expr, want):
    got = evaluate(expr())
    assert (math.isnan(got) and math.isnan(want)) or (
        got == want and math.copysign(1.0, got) == math.copysign(1.0, want))


@pytest.mark.parametrize("op,want", [(Ops.LT, False), (Ops.GT, False), (Ops.EQ, False),
                                     (Ops.NE, True), (Ops.LE, False), (Ops.GE, False)])
def test_nan_comparisons(op, want):
    assert evaluate(c(math.nan, F32).alu(op, c(1.0, F32))) is want


# ---- vectors ------------------------------------------------------------------
def test_vector_ops():
    v = UOp.vconst(dtypes.i32, [1, 2, 3, 2**31 - 1])
    w = UOp.vconst(dtypes.i32, [10, 20, 30, 1])
    assert evaluate(v + w) == (11, 22, 33, -(2**31))
    assert evaluate(v.lt(w)) == (True, True, True, False)
    assert evaluate(v.gep(3, 0)) == (2**31 - 1, 1)
    assert evaluate(v.gep(2)) == 3
    x = UOp.var("x", 0, 9)
    vec = UOp(Ops.VECTORIZE, I.vec(2), (x, x * 2))
    assert evaluate(vec, {"x": 4}) == (4, 8)
    cat = UOp(Ops.CAT, I.vec(3), (vec, x))
    assert evaluate(cat, {"x": 4}) == (4, 8, 4)
    assert evaluate(UOp.const(dtypes.f32.vec(2), 1.5)) == (1.5, 1.5)
    assert evaluate(vec.cast(dtypes.f32.vec(2)), {"x": 3}) == (3.0, 6.0)


def test_vector_where_is_lazy_per_lane():
    x = UOp(Ops.VECTORIZE, I.vec(2), (UOp.var("x", -2, 2), UOp.var("y", -2, 2)))
    zero = UOp.vconst(I, [0, 0])
    e = x.ne(zero).where(UOp.vconst(I, [12, 12]) // x, zero)
    assert evaluate(e, {"x": 0, "y": 3 - 1}) == (0, 6)
    with pytest.raises(EvalError, match="by zero"):
        evaluate(UOp.vconst(I, [12, 12]) // x, {"x": 0, "y": 1})


# ---- Invalid, laziness, env ---------------------------------------------------------
def test_invalid_propagates_and_where_is_lazy():
    r = UOp.range(10, 0)
    p = r.lt(5).where(r + 1, UOp.invalid())
    assert evaluate(p, {"R0": 3}) == 4
    assert evaluate(p, {"R0": 7}) is INVALID
    assert evaluate(p * 3 + 1, {"R0": 7}) is INVALID
    assert evaluate(p.lt(3), {"R0": 7}) is INVALID
    assert evaluate((p * 3).lt(100).where(1, 2), {"R0": 7}) is INVALID
    assert evaluate(r.lt(5).where(r, UOp.invalid()) % 4, {"R0": 2}) == 2


def test_undefined_dominates_invalid():
    x = UOp.var("x", 0, 3)
    p = x.lt(2).where(x, UOp.invalid())
    with pytest.raises(EvalError, match="by zero"):
        evaluate(p + 5 // x, {"x": 0 + 3 - 3})


def test_division_by_zero_in_untaken_branch_is_fine():
    x = UOp.var("x", -3, 3)
    assert evaluate(x.ne(0).where(12 // x, 99), {"x": 0}) == 99
    assert evaluate(x.eq(0).where(99, 12 % x), {"x": -5 + 2}) == 0


def test_env_keys_and_errors():
    x, r, s = UOp.var("x", -2, 5), UOp.range(4, 3), UOp.special("gidx0", 8)
    e = x + r * 10 + s * 100
    assert evaluate(e, {"x": -2, "R3": 3, "gidx0": 7}) == 728
    assert evaluate(e, {x: 1, r: 0, s: 0}) == 1
    with pytest.raises(EvalError, match=r"\(var x -2 5\)"):
        evaluate(e, {"R3": 0, "gidx0": 0})
    with pytest.raises(EvalError, match=r"outside \[-2, 5\]"):
        evaluate(e, {"x": 6, "R3": 0, "gidx0": 0})
    with pytest.raises(EvalError, match=r"range 3.*outside \[0, 3\]"):
        evaluate(e, {"x": 0, "R3": 4, "gidx0": 0})
    with pytest.raises(EvalError, match="gidx0"):
        evaluate(e, {"x": 0, "R3": 0, "gidx0": -1})
    with pytest.raises(EvalError, match="not an integer"):
        evaluate(x, {"x": 1.5})


def test_range_with_symbolic_end():
    n = UOp.var("n", 1, 8)
    r = UOp.range(n, 0)
    assert evaluate(r * 2, {"n": 5, "R0": 4}) == 8
    with pytest.raises(EvalError, match="outside"):
        evaluate(r * 2, {"n": 5, "R0": 5})


def test_bool_arithmetic():
    t, f = c(True, dtypes.bool), c(False, dtypes.bool)
    assert evaluate(t + t) is True and evaluate(t * f) is False
    assert evaluate(t.alu(Ops.NOT)) is False and evaluate(t ^ t) is False
    assert evaluate(f.alu(Ops.MAX, t)) is True


def test_evaluate_refuses_memory_without_run_kernel():
    buf = UOp.buffer(0, dtypes.f32, 4)
    with pytest.raises(EvalError, match="run_kernel"):
        evaluate(load(index(buf, c(0))))


# ---- kernels --------------------------------------------------------------------
def index(buf: UOp, i: UOp, gate: UOp | None = None) -> UOp:
    return UOp(Ops.INDEX, buf.dtype, (buf, i) + ((gate,) if gate is not None else ()))


def load(addr: UOp, alt: UOp | None = None) -> UOp:
    return UOp(Ops.LOAD, addr.dtype.base(), (addr,) + ((alt,) if alt is not None else ()))


def store(addr: UOp, v: UOp) -> UOp:
    return UOp(Ops.STORE, dtypes.void, (addr, v))


def end(x: UOp, *rs: UOp) -> UOp:
    return UOp(Ops.END, dtypes.void, (x, *rs))


def sink(*xs: UOp) -> UOp:
    return UOp(Ops.SINK, dtypes.void, xs)


def reduce(op: Ops, x: UOp, *rs: UOp) -> UOp:
    return UOp(Ops.REDUCE, x.dtype, (x, *rs), op)


TRANSPOSE = """
%out = (buffer 0 f32 60)
%in  = (buffer 1 f32 60)
%r   = (range 0 60)
(sink (end (store (index %out %r) (load (index %in (add (mul (mod %r 10) 6) (idiv %r 10))))) %r))
"""


def test_spec_transpose_kernel():
    k = parse(TRANSPOSE)
    inp = np.random.default_rng(0).standard_normal(60).astype(np.float32)
    out = np.zeros(60, np.float32)
    run_kernel(k, [out, inp])
    np.testing.assert_array_equal(out, inp.reshape(10, 6).T.reshape(-1))


def test_transpose_kernel_two_ranges():
    out, inp = UOp.buffer(0, dtypes.i32, 12), UOp.buffer(1, dtypes.i32, 12)
    i, j = UOp.range(3, 0), UOp.range(4, 1)
    k = sink(end(store(index(out, j * 3 + i), load(index(inp, i * 4 + j))), i, j))
    a, b = np.zeros(12, np.int32), np.arange(12, dtype=np.int32)
    run_kernel(k, [a, b])
    np.testing.assert_array_equal(a, b.reshape(3, 4).T.reshape(-1))


@pytest.mark.parametrize("op,np_fn", [(Ops.ADD, np.sum), (Ops.MUL, np.prod), (Ops.MAX, np.max),
                                      (Ops.MIN, np.min)])
def test_reduce_kernel(op, np_fn):
    out, inp = UOp.buffer(0, dtypes.i32, 4), UOp.buffer(1, dtypes.i32, 20)
    row, col = UOp.range(4, 0), UOp.range(5, 1)
    acc = reduce(op, load(index(inp, row * 5 + col)), col)
    k = sink(end(store(index(out, row), acc), row))
    data = np.random.default_rng(1).integers(-9, 9, 20).astype(np.int32)
    res = np.zeros(4, np.int32)
    run_kernel(k, [res, data])
    np.testing.assert_array_equal(res, np_fn(data.reshape(4, 5), axis=1))


@pytest.mark.parametrize("op,want", [(Ops.ADD, 0), (Ops.MUL, 1), (Ops.MAX, -(2**31)),
                                     (Ops.MIN, 2**31 - 1)])
def test_reduce_over_empty_range_is_identity(op, want):
    out = UOp.buffer(0, dtypes.i32, 1)
    n = UOp.var("n", 0, 4)
    r = UOp.range(n, 0)
    k = sink(store(index(out, c(0)), reduce(op, r.cast(dtypes.i32), r)))
    res = np.full(1, 7, np.int32)
    run_kernel(k, [res], vars={"n": 0})
    assert res[0] == want


def test_float_reduce_matches_sequential_f32():
    out, inp = UOp.buffer(0, dtypes.f32, 1), UOp.buffer(1, dtypes.f32, 100)
    r = UOp.range(100, 0)
    k = sink(store(index(out, c(0)), reduce(Ops.ADD, load(index(inp, r)), r)))
    data = np.random.default_rng(2).standard_normal(100).astype(np.float32)
    res = np.zeros(1, np.float32)
    run_kernel(k, [res, data])
    acc = np.float32(0)
    for v in data:
        acc = np.float32(acc + v)
    assert res[0] == acc


@pytest.mark.parametrize("form", ["gate", "where-invalid"])
def test_padded_load_kernel(form):
    # out[i] = in[i - 2] for 2 <= i < 8, else -1 (a pad of 2 on each side of 6 elements)
    out, inp = UOp.buffer(0, dtypes.f32, 10), UOp.buffer(1, dtypes.f32, 6)
    r = UOp.range(10, 0)
    valid = r.lt(2).alu(Ops.NOT) & r.lt(8)
    addr = index(inp, r - 2, valid) if form == "gate" else index(
        inp, valid.where(r - 2, UOp.invalid()))
    k = sink(end(store(index(out, r), load(addr, c(-1.0, dtypes.f32))), r))
    data = np.arange(1, 7, dtype=np.float32)
    res = np.zeros(10, np.float32)
    run_kernel(k, [res, data])
    np.testing.assert_array_equal(res, np.pad(data, 2, constant_values=-1))


def test_padded_load_without_alt_reads_zero():
    out, inp = UOp.buffer(0, dtypes.i32, 4), UOp.buffer(1, dtypes.i32, 2)
    r = UOp.range(4, 0)
    k = sink(end(store(index(out, r), load(index(inp, r.lt(2).where(r, UOp.invalid())))), r))
    res = np.full(4, 9, np.int32)
    run_kernel(k, [res, np.array([5, 6], np.int32)])
    assert res.tolist() == [5, 6, 0, 0]


def test_store_to_invalid_address_writes_nothing():
    out = UOp.buffer(0, dtypes.i32, 4)
    r = UOp.range(8, 0)
    k = sink(end(store(index(out, r.lt(4).where(r, UOp.invalid())), r.cast(dtypes.i32) * 10),
                 r))
    res = np.full(4, -1, np.int32)
    run_kernel(k, [res])
    assert res.tolist() == [0, 10, 20, 30]


@pytest.mark.parametrize("what", ["read-high", "read-neg", "write-high", "write-neg"])
def test_out_of_bounds_access_errors(what):
    out, inp = UOp.buffer(0, dtypes.i32, 4), UOp.buffer(1, dtypes.i32, 4)
    r = UOp.range(4, 0)
    bad = r + 1 if what.endswith("high") else r - 1
    if what.startswith("read"):
        k = sink(end(store(index(out, r), load(index(inp, bad))), r))
    else:
        k = sink(end(store(index(out, bad), load(index(inp, r))), r))
    verb = "read" if what.startswith("read") else "write"
    with pytest.raises(EvalError, match=f"{verb} outside buffer {1 if verb == 'read' else 0}"):
        run_kernel(k, [np.zeros(4, np.int32), np.zeros(4, np.int32)])


def test_out_of_bounds_read_in_untaken_branch_is_fine():
    out, inp = UOp.buffer(0, dtypes.i32, 4), UOp.buffer(1, dtypes.i32, 4)
    r = UOp.range(4, 0)
    v = r.lt(3).where(load(index(inp, r + 1)), c(0, dtypes.i32))
    k = sink(end(store(index(out, r), v), r))
    res = np.zeros(4, np.int32)
    run_kernel(k, [res, np.array([1, 2, 3, 4], np.int32)])
    assert res.tolist() == [2, 3, 4, 0]


def test_kernel_errors_are_clear():
    out = UOp.buffer(0, dtypes.i32, 4)
    r = UOp.range(4, 0)
    k = sink(end(store(index(out, r), (c(12, I) // r).cast(dtypes.i32)), r))
    with pytest.raises(EvalError, match="undefined value.*by zero"):
        run_kernel(k, [np.zeros(4, np.int32)])
    with pytest.raises(EvalError, match="no buffer given for slot 0"):
        run_kernel(k, [])
    with pytest.raises(EvalError, match="holds i32 but the array is float32"):
        run_kernel(k, [np.zeros(4, np.float32)])
    with pytest.raises(EvalError, match="declares 4 elements"):
        run_kernel(k, [np.zeros(3, np.int32)])


def test_sink_runs_in_order_and_after_orders_reads():
    buf = UOp.buffer(0, dtypes.i32, 2)
    first = store(index(buf, c(0)), c(5, dtypes.i32))
    later = UOp(Ops.AFTER, buf.dtype, (buf, first))
    second = store(index(buf, c(1)), load(index(later, c(0))) + 1)
    res = np.zeros(2, np.int32)
    run_kernel(sink(first, second), [res])
    assert res.tolist() == [5, 6]
    res = np.zeros(2, np.int32)
    run_kernel(sink(second), [res])       # AFTER runs its dependency first
    assert res.tolist() == [5, 6]


def test_accumulator_loop_runs_body_every_iteration():
    # acc[0] += in[r] with the init store ordered before the loop by AFTER
    acc, inp = UOp.buffer(0, dtypes.i32, 1), UOp.buffer(1, dtypes.i32, 5)
    r = UOp.range(5, 0)
    init = store(index(acc, c(0)), c(100, dtypes.i32))
    a = UOp(Ops.AFTER, acc.dtype, (acc, init))
    body = store(index(a, c(0)), load(index(a, c(0))) + load(index(inp, r)))
    res = np.zeros(1, np.int32)
    run_kernel(sink(end(body, r)), [res, np.arange(5, dtype=np.int32)])
    assert res[0] == 110


def test_specials_form_a_launch_grid_and_vars_bind():
    out = UOp.buffer(0, dtypes.index, 12)
    g = UOp.special("gidx0", 3)
    n = UOp.var("n", 0, 2000)
    r = UOp.range(4, 0)
    k = sink(end(store(index(out, g * 4 + r), g * 10 + r + n), r))
    res = np.zeros(12, np.int64)
    run_kernel(k, [res], vars={"n": 1000})
    assert res.tolist() == [1000 + 10 * i + j for i in range(3) for j in range(4)]


def test_vector_load_store():
    out, inp = UOp.buffer(0, dtypes.f32, 8), UOp.buffer(1, dtypes.f32, 8)
    r = UOp.range(2, 0)
    v4 = dtypes.f32.vec(4).ptr_to()
    src = load(index(inp, r * 4).cast(v4))
    assert src.dtype is dtypes.f32.vec(4)
    k = sink(end(store(index(out, r * 4).cast(v4), src + src), r))
    res = np.zeros(8, np.float32)
    run_kernel(k, [res, np.arange(8, dtype=np.float32)])
    assert res.tolist() == [2.0 * i for i in range(8)]


# ---- evaluate_many agrees with evaluate ----------------------------------------------
def test_evaluate_many_big_values_switch_to_python_ints():
    x = UOp.var("x", -(2**62), 2**62)
    e = x * x * 4 + (x // 3) % 7
    xs = np.array([-(2**62), -5, 0, 2**62], dtype=object)
    vals, inv, und = evaluate_many(e, {"x": xs})
    assert [int(v) for v in vals] == [evaluate(e, {"x": int(v)}) for v in xs]
    assert not inv.any() and not und.any()


def test_evaluate_many_masks():
    x = UOp.var("x", -2, 2)
    e = x.lt(1).where(6 // x, UOp.invalid())
    vals, inv, und = evaluate_many(e, {"x": np.arange(-2, 3)})
    assert vals.tolist()[:2] == [-3, -6] and und.tolist() == [False, False, True, False, False]
    assert inv.tolist() == [False, False, False, True, True]
