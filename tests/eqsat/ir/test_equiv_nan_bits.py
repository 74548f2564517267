"""A NaN's bits under a bitcast (docs/format.md, "Floats"): the sign and payload of a
NaN an op computes are unspecified, so a bitcast that reads one is undefined; a NaN
read from memory or made by a bitcast keeps its bits. Vectors are compared lane by
lane."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from eqsat.ir.dtype import dtypes
from eqsat.ir.equiv import SampledMemory, check_equivalent
from eqsat.ir.interp import EvalError, evaluate, evaluate_lanes, kept_nan_bits
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from tests.strategies import assignments, float_exprs

L = "(load (index (buffer 1 f32 8) (var i 0 7)))"
M = "(load (index (buffer 1 f32 8) (var j 0 7)))"
X = "(var x -5 5)"
XI = f"(cast i32 {X})"
NAN_BITS = f"(bitcast f32 {XI})"  # -1..-5 are the bits of NaNs


# ---- equivalent: (a, b, the points a leaves out, or None when sampled) ------------------
@pytest.mark.parametrize("a,b,skipped", [
    (f"(bitcast u32 (sub {L} (neg {M})))", f"(bitcast u32 (add {L} {M}))", None),  # sub_neg
    (f"(sub {L} (neg {M}))", f"(add {L} {M})", None),   # a NaN at the root is any NaN
    ("(fdiv 0.0 0.0)", "nan", 0),
    (f"(bitcast u32 (add {L} -0.0))", f"(bitcast u32 {L})", None),  # add_zero, -0.0
    (f"(bitcast u32 (mul {L} 1.0))", f"(bitcast u32 {L})", None),   # a may take any NaN
    (f"(bitcast i32 {NAN_BITS})", XI, 0),               # bits through a float: all compared
    ("(bitcast i32 (bitcast f32 (cast i32 (var s 2139095039 2139095047))))",  # signaling
     "(cast i32 (var s 2139095039 2139095047))", 0),
    ("(bitcast i16 (bitcast f16 (cast i16 (var h -1030 -1020))))",  # 0xfbfa..0xfc04
     "(cast i16 (var h -1030 -1020))", 0),
    (f"(bitcast i32 (where (lt {X} 0) {NAN_BITS} 1.0))",
     f"(where (lt {X} 0) {XI} (const i32 1065353216))", 0),   # kept through a where
    (f"(where (lt {X} 0) (bitcast i32 (fdiv 0.0 0.0)) {XI})",
     f"(where (lt {X} 0) (const i32 7) {XI})", 5),      # a's lanes of a computed NaN
    ("(bitcast i32 nan)", "(const i32 0)", 1),         # a NaN constant has no sign
    (f"(bitcast u32x2 (vectorize (sub {L} (neg {M})) {L}))",
     f"(bitcast u32x2 (vectorize (add {L} {M}) {L}))", None),
])
def test_equivalent(a, b, skipped):
    res = check_equivalent(parse(a), parse(b))
    assert res, res
    if skipped is not None:
        assert res.skipped == skipped and res.exhaustive, res


# ---- inequivalent: (a, b, the reason's end) ---------------------------------------------
@pytest.mark.parametrize("a,b,reason", [
    ("(bitcast u32 0.0)", "(bitcast u32 -0.0)", "values differ"),
    (f"(bitcast u32 (add {L} 0.0))", f"(bitcast u32 {L})", "values differ"),  # -0.0 + 0.0
    (f"(bitcast i32 (cast f32 {X}))", f"(bitcast i32 (cast f32 (add {X} 1)))",
     "values differ"),
    (f"(bitcast u32 {L})", f"(bitcast u32 (mul {L} 1.0))",
     "b is undefined where a is defined"),             # a loaded NaN keeps its bits
    (f"(bitcast i32 {NAN_BITS})", f"(max {XI} (const i32 -1))", "values differ"),
    (f"(bitcast i32 (neg {NAN_BITS}))", f"(bitcast i32 {NAN_BITS})", "values differ"),
    (XI, "(bitcast i32 (fdiv 0.0 0.0))", "b is undefined where a is defined"),
    ("(bitcast u32x2 (vectorize (fdiv 0.0 0.0) (cast f32 (var x 0 5))))",
     "(bitcast u32x2 (vectorize (fdiv 0.0 0.0) (cast f32 (add (var x 0 5) 1))))",
     "lane 1: values differ"),                         # lane 0 hides no other lane
    ("(vectorize (idiv 1 (var x 0 5)) (var x 0 5))",
     "(vectorize (idiv 1 (var x 0 5)) (where (eq (var x 0 5) 0) 9 (var x 0 5)))",
     "lane 1: values differ"),
    ("(vectorize (invalid) (var x 0 5))", "(vectorize (invalid) (add (var x 0 5) 1))",
     "lane 1: values differ"),
])
def test_inequivalent(a, b, reason):
    res = check_equivalent(parse(a), parse(b))
    assert not res and res.reason.endswith(reason), res


# ---- the interpreter: (expression, f32 buffer 1's element 0 as bits, value or error) -----
@pytest.mark.parametrize("expr,bits,want", [
    ("(bitcast u32 (fdiv 0.0 0.0))", 0, "NaN computed by an op"),
    ("(bitcast u32 nan)", 0, "NaN computed by an op"),
    ("(bitcast u32 (bitcast f32 (const u32 4290772993)))", 0, 0xFFC00001),
    ("(bitcast u32 (bitcast f32 (const u32 2139095041)))", 0, 0x7F800001),  # signaling
    ("(bitcast u16 (bitcast bf16 (const u16 65409)))", 0, 0xFF81),
    ("(bitcast u32 (neg (bitcast f32 (const u32 2143289344))))", 0, "NaN computed by an op"),
    ("(bitcast u32 (load (index (buffer 1 f32 8) 0)))", 0xFFC00001, 0xFFC00001),
    ("(bitcast u32 (where true (load (index (buffer 1 f32 8) 0)) 1.0))", 0x7F800001,
     0x7F800001),
    ("(bitcast u32 (cast f32 (load (index (buffer 1 f32 8) 0))))", 0xFFC00001,
     "NaN computed by an op"),
    ("(bitcast u32 (load (index (buffer 1 f32 8) 0)))", 0x80000000, 0x80000000),
    ("(gep (bitcast u32x2 (vectorize (load (index (buffer 1 f32 8) 0)) nan)) 0)", 0x7FC00002,
     0x7FC00002),
])
def test_evaluate(expr, bits, want):
    buf = np.zeros(8, dtype=np.uint32)
    buf[0] = bits
    env = {"x": 0}
    if isinstance(want, str):
        with pytest.raises(EvalError, match=want):
            evaluate(parse(expr), env, buffers=[None, buf.view(np.float32)])
    else:
        got = evaluate(parse(expr), env, buffers=[None, buf.view(np.float32)])
        assert got == want and type(got) is int


#: a float dtype's unsigned twin, in the IR and in numpy
_UINT = {dtypes.f16: (dtypes.u16, np.float16, np.uint16),
         dtypes.f32: (dtypes.u32, np.float32, np.uint32),
         dtypes.f64: (dtypes.u64, np.float64, np.uint64)}


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_bitcast_reads_every_bit_but_a_computed_nans(data):
    """A bitcast of a random float expression is the value's bits where it is no NaN,
    the bits of a NaN or undefined where it is; per lane of a vector, as alone."""
    e = data.draw(float_exprs(3))
    uint, npf, npu = _UINT[e.dtype]
    bits = e.bitcast(uint)
    pair = UOp(Ops.VECTORIZE, uint.vec(2), (bits, e.cast(dtypes.i32).cast(uint)))
    env = data.draw(assignments(e))
    mem = SampledMemory([e], seed=data.draw(st.integers(0, 100)))
    cols = {k: np.array([v], dtype=object) for k, v in env.items()}
    for k, (val, inv, und) in enumerate(evaluate_lanes(pair, cols, n=1, memory=mem)):
        try:
            want = evaluate(pair.gep(k), env, buffers=mem.arrays(0))
        except EvalError:
            want = None
        assert (want is None) == bool(und[0] or inv[0]) and (want is None or val[0] == want)
    try:
        x = evaluate(e, env, buffers=mem.arrays(0))
    except EvalError:
        return
    try:
        got = evaluate(bits, env, buffers=mem.arrays(0))
    except EvalError as err:
        assert math.isnan(x) and "NaN computed by an op" in str(err), err
        event("a computed NaN")
        return
    if math.isnan(x):
        assert np.isnan(np.array([got], dtype=npu).view(npf)[0])
        event("a kept NaN")
    else:
        assert got == int(np.array([x], dtype=npf).view(npu)[0])


# ---- a NaN the input keeps promises its bits at the root, as a store of it would --------
# (docs/format.md, "Floats"): (a NaN a keeps, a NaN b computes there, the lane named). The
# pair is checked both ways: b for a is less specified (inequivalent), a for b more
# (equivalent: a computed NaN promises no bits).
F16 = "(load (index (buffer 1 f16 8) (var i 0 7)))"
F64 = "(load (index (buffer 2 f64 8) (var i 0 7)))"
C = f"(lt {X} 2)"
UNKEPT = "b's NaN does not keep the bits of a's (read from memory or a bitcast)"


@pytest.mark.parametrize("kept,computed,lane", [
    (L, f"(mul {L} 1.0)", ""),
    (L, f"(add {L} -0.0)", ""),
    (F16, f"(mul {F16} (const f16 1.0))", ""),
    (F64, f"(max {F64} (const f64 -inf))", ""),
    (f"(where {C} {L} 1.0)", f"(where {C} (mul {L} 1.0) 1.0)", ""),
    (f"(load (index (buffer 1 f32 8) (var i 0 7) {C}) {M})",
     f"(load (index (buffer 1 f32 8) (var i 0 7) {C}) (neg (neg {M})))", ""),
    (NAN_BITS, f"(mul {NAN_BITS} 1.0)", ""),
    (f"(vectorize {L} 1.0)", f"(vectorize (mul {L} 1.0) 1.0)", "lane 0: "),
    (f"(vectorize 1.0 {L})", f"(vectorize 1.0 (mul {L} 1.0))", "lane 1: "),
    (f"(gep (vectorize {M} {L}) 1 0)", f"(vectorize (add {L} -0.0) {M})", "lane 0: "),
])
def test_a_kept_nan_is_not_a_computed_one(kept, computed, lane):
    res = check_equivalent(parse(kept), parse(computed))
    assert not res and res.reason == lane + UNKEPT, res
    assert math.isnan(res.a_value) and math.isnan(res.b_value), res
    back = check_equivalent(parse(computed), parse(kept))
    assert back, back


# (a NaN a keeps, b keeping the same bits, b keeping other bits): equal, and different
# both ways
Y = "(var y -5 -2)"   # the bits of NaNs, and so is y - 1
NB = f"(bitcast f32 (cast i32 {Y}))"
NB1 = f"(bitcast f32 (cast i32 (sub {Y} 1)))"


@pytest.mark.parametrize("a,same,other,lane", [
    (NB, f"(where (lt {Y} -3) {NB} {NB})", NB1, ""),
    (f"(vectorize {L} {NB})", f"(vectorize {L} (bitcast f32 (cast i32 (neg (neg {Y})))))",
     f"(vectorize {L} {NB1})", "lane 1: "),
])
def test_kept_nan_bits_at_the_root(a, same, other, lane):
    assert check_equivalent(parse(a), parse(same))
    for x, y in ((a, other), (other, a)):
        res = check_equivalent(parse(x), parse(y))
        assert not res and res.reason == lane + UNKEPT, res


# ---- kept_nan_bits: (expression, the bits each lane promises at y = -5 and y = -2) ------
@pytest.mark.parametrize("expr,want", [
    (NB, [[0xFFFFFFFB, 0xFFFFFFFE]]),
    (f"(mul {NB} 1.0)", [[None, None]]),                      # computed: no bits promised
    (f"(where (lt {Y} -3) {NB} 1.0)", [[0xFFFFFFFB, None]]),  # 1.0 is no NaN
    (f"(vectorize (neg {NB}) {NB1})", [[None, None], [0xFFFFFFFA, 0xFFFFFFFD]]),
])
def test_kept_nan_bits(expr, want):
    cols = {"y": np.array([-2, -5, -3])}
    assert kept_nan_bits(parse(expr), cols, [1, 0]) == want


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(float_exprs(3))
def test_a_copy_of_a_value_keeps_what_it_promises(e):
    """A float expression equals itself and a where of it on both sides (a copy keeps a
    NaN's bits), and ``e * 1.0`` (whose NaN is computed: no bits promised) may become
    ``e``; ``e`` may become ``e * 1.0`` only where ``e`` keeps no NaN's bits."""
    one = UOp.const(e.dtype, 1.0)
    copy = UOp(Ops.WHERE, e.dtype, (UOp.const(dtypes.bool, True), e, e))
    times_one = e * one
    for a, b in ((e, e), (e, copy), (copy, e), (times_one, e)):
        res = check_equivalent(a, b, samples=300)
        assert res, (a, b, res)
    res = check_equivalent(e, times_one, samples=300)
    assert res or res.reason.endswith("b's NaN does not keep the bits of a's (read from "
                                      "memory or a bitcast)"), res
    if not res:
        event("a kept NaN at the root")
