"""The UOp node: hash-consing, weak interning, immutability, constants and queries."""

from __future__ import annotations

import gc
import math
import pickle
import struct
import weakref

import pytest

from eqsat.ir.dtype import dtypes
from eqsat.ir.interp import evaluate
from eqsat.ir.ops import Ops
from eqsat.ir.uop import IRError, UOp, node_cache, toposort_all

I = dtypes.index  # noqa: E741


# ---- hash-consing ---------------------------------------------------------------------
def test_same_structure_is_the_same_object():
    a = (UOp.var("hx", 0, 9) + 1) * UOp.range(8, 0) // 4
    b = (UOp.var("hx", 0, 9) + 1) * UOp.range(8, 0) // 4
    assert a is b
    assert UOp.range(8, 0) is UOp.range(UOp.const(I, 8), 0)


@pytest.mark.parametrize("a,b", [
    (lambda: UOp.const(I, 0), lambda: UOp.const(dtypes.i32, 0)),
    (lambda: UOp.const(dtypes.f32, 0.0), lambda: UOp.const(dtypes.f32, -0.0)),
    (lambda: UOp.const(I, 1), lambda: UOp.const(dtypes.f32, 1.0)),
    (lambda: UOp.var("hx", 0, 9), lambda: UOp.var("hx", 0, 10)),
    (lambda: UOp.var("hx", 0, 9), lambda: UOp.var("hy", 0, 9)),
    (lambda: UOp.range(8, 0), lambda: UOp.range(8, 1)),
    (lambda: UOp.range(8, 0), lambda: UOp.range(9, 0)),
    (lambda: UOp.var("hx", 0, 9) - 1, lambda: 1 - UOp.var("hx", 0, 9)),
    (lambda: UOp.buffer(0, dtypes.f32, 8), lambda: UOp.buffer(0, dtypes.f32, 9)),
])
def test_different_structure_is_a_different_object(a, b):
    assert a() is not b()


def test_every_nan_constant_is_the_one_nan():
    # a NaN's sign and payload are unspecified (docs/format.md, "Floats") and the text
    # prints every NaN as `nan`: a NaN constant of any bits is one node, and reads back
    from eqsat.ir.sexpr import parse, to_sexpr

    neg = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]
    for dt in (dtypes.f16, dtypes.bf16, dtypes.f32, dtypes.f64):
        c = UOp.const(dt, math.nan)
        assert c is UOp.const(dt, neg) is UOp.const(dt, payload)
        assert struct.pack("<d", c.arg) == struct.pack("<d", math.nan)
        assert parse(to_sexpr(c)) is c
    v = UOp.vconst(dtypes.f32, [neg, 1.0])
    assert v is UOp.vconst(dtypes.f32, [math.nan, 1.0]) and parse(to_sexpr(v)) is v


def test_a_bitcast_of_a_nan_keeps_its_bits_whatever_was_made_before():
    # the NaN a bitcast makes keeps its bits, so the inner bitcast is not folded into a
    # NaN constant (which has none), in either engine, after any earlier call
    from eqsat.api import optimize
    from eqsat.ir.interp import evaluate
    from eqsat.ir.sexpr import parse

    text = "(bitcast i32 (bitcast f32 (const i32 -4194304)))"  # 0xffc00000: a NaN
    optimize(parse("(bitcast f32 (const i32 2143289344))"), engine="baseline")  # 0x7fc00000
    for engine in ("baseline", "egraph"):
        out = optimize(parse(text), engine=engine).graph
        assert evaluate(out) == -4194304, engine


def test_hash_is_identity_and_equality_is_identity():
    a, b = UOp.var("hx", 0, 9), UOp.var("hx", 0, 9)
    assert hash(a) == hash(b) and a == b
    assert UOp.var("hx", 0, 9) != UOp.var("hx", 0, 8)
    assert len({UOp.var("hx", 0, 9), UOp.var("hx", 0, 9)}) == 1


# ---- weak interning -------------------------------------------------------------------
def test_dead_graphs_are_freed():
    def build():
        x = UOp.var("weak_probe", -5, 5)
        return (x * 3 + 7) // 2 % 11

    g = build()
    # constants may be shared with live graphs elsewhere: probe the nodes over the var
    refs = [weakref.ref(u) for u in g.toposort() if u.op is not Ops.CONST]
    assert len(refs) == 5  # var, mul, add, idiv, mod
    del g
    gc.collect()
    assert all(r() is None for r in refs)  # the hash-cons cache holds no node alive
    # and rebuilding gives fresh, working nodes
    assert evaluate(build(), {"weak_probe": 3}) == 8


def test_a_live_parent_keeps_its_children():
    g = UOp.var("weak_keep", 0, 3) * 5
    child = weakref.ref(g.src[0])
    gc.collect()
    assert child() is not None
    assert UOp.var("weak_keep", 0, 3) is child()


def test_a_node_cache_entry_lives_as_long_as_its_node():
    cache = node_cache()
    g = UOp.var("cache_probe", 0, 3) * 7
    uids = (g.uid, g.src[0].uid)
    cache[uids[0]], cache[uids[1]] = "product", "var"
    gc.collect()
    assert cache == {uids[0]: "product", uids[1]: "var"}
    del g
    gc.collect()
    assert cache == {}  # both nodes died: their entries went with them
    rebuilt = UOp.var("cache_probe", 0, 3) * 7
    assert rebuilt.uid not in uids and cache.get(rebuilt.uid) is None  # a new node, no entry


# ---- immutability -----------------------------------------------------------------------
@pytest.mark.parametrize("field", ["op", "dtype", "src", "arg", "vmin", "vmax", "uid", "other"])
def test_nodes_are_immutable(field):
    u = UOp.var("hx", 0, 9) + 1
    with pytest.raises(AttributeError):
        setattr(u, field, None)
    assert isinstance(u.src, tuple)


def test_replace_and_substitute_build_new_nodes():
    x, y = UOp.var("hx", 0, 9), UOp.var("hy", 0, 9)
    e = (x + 1) * x
    assert e.replace(op=Ops.ADD) is (x + 1) + x
    assert e.substitute({x: y}) is (y + 1) * y
    assert e.substitute({}) is e
    assert e.op is Ops.MUL  # untouched


def test_pickle_reinterns():
    e = (UOp.var("hx", -3, 9) * 4 + UOp.range(6, 2)) % 5
    assert pickle.loads(pickle.dumps(e)) is e


# ---- constants ----------------------------------------------------------------------------
@pytest.mark.parametrize("dt,v,want", [
    (dtypes.u8, 256, 0),
    (dtypes.u8, -1, 255),
    (dtypes.i8, 200, -56),
    (dtypes.i8, -129, 127),
    (dtypes.i16, 2**15, -(2**15)),
    (dtypes.i32, 2**31, -(2**31)),
    (dtypes.u32, -1, 2**32 - 1),
    (dtypes.i64, 2**63, -(2**63)),
    (dtypes.u64, 2**64 + 3, 3),
    (dtypes.index, 2**100, 2**100),          # index is unbounded
    (dtypes.index, -(2**100), -(2**100)),
    (dtypes.i32, 2.9, 2),                    # float to int truncates
    (dtypes.i32, -2.9, -2),
    (dtypes.bool, 5, True),
    (dtypes.bool, 0, False),
    (dtypes.f32, 0.1, 0.10000000149011612),
    (dtypes.f16, 0.1, 0.0999755859375),
    (dtypes.f16, 1e6, math.inf),
    (dtypes.bf16, 0.1, 0.10009765625),
    (dtypes.bf16, 1.00390625, 1.0),          # tie: to even
    (dtypes.f64, 0.1, 0.1),
])
def test_const_wrapping_and_rounding(dt, v, want):
    c = UOp.const(dt, v)
    assert c.arg == want and type(c.arg) is type(want)
    assert (c.vmin, c.vmax) == (want, want)


@pytest.mark.parametrize("v", [math.inf, -math.inf, math.nan])
def test_non_finite_int_constant_is_an_error(v):
    with pytest.raises(IRError):
        UOp.const(dtypes.i32, v)


def test_vconst_and_vector_const():
    v = UOp.vconst(dtypes.u8, [1, 256, -1])
    assert v.dtype is dtypes.u8.vec(3) and v.arg == (1, 0, 255)
    assert (v.vmin, v.vmax) == (0, 255)
    assert UOp.vconst(dtypes.u8, (1, 256, -1)) is v
    with pytest.raises(IRError):
        UOp.vconst(dtypes.i32, [])


def test_var_bounds_checked():
    with pytest.raises(IRError, match="lower bound"):
        UOp.var("hx", 3, 2)


# ---- queries --------------------------------------------------------------------------------
def test_toposort_is_iterative_and_ordered():
    x = UOp.var("deep", 0, 1)
    g = x
    for i in range(20_000):
        g = g + (i % 3)
    order = g.toposort()
    pos = {id(u): i for i, u in enumerate(order)}
    assert order[-1] is g and len(order) == 20_000 + 1 + 3  # adds, the var, constants 0 1 2
    assert all(pos[id(s)] < pos[id(u)] for u in order for s in u.src)


def test_toposort_all_is_a_sinks_without_it():
    x, y = UOp.var("hx", 0, 9), UOp.var("hy", 0, 9)
    a, b = x * 3 + y, (x + 1) // y
    for roots in ([a, b], [b, a, b], [x, a], [a]):
        assert toposort_all(roots) == UOp(Ops.SINK, dtypes.void, tuple(roots)).toposort()[:-1]
    assert toposort_all([]) == []


def test_leaves_and_ranges():
    x, r0, r1, s = UOp.var("hx", 0, 9), UOp.range(4, 0), UOp.range(8, 1), UOp.special("g0", 3)
    e = (x + r0 * 8 + r1) * s
    assert set(e.leaves()) == {x, r0, r1, s}
    assert set(e.ranges) == {r0, r1}


@pytest.mark.parametrize("build,v,want", [
    (lambda x: x * 4 + 8, 4, "(x + 2)"),
    (lambda x: x * 4 + 6, 4, None),
    (lambda x: x * 6 + 12, 3, "(x * 2 + 4)"),
    (lambda x: x + 0, 1, "same"),
])
def test_divides(build, v, want):
    x = UOp.var("hx", -9, 9)
    e = build(x)
    got = e.divides(v)
    if want is None:
        assert got is None
        return
    if want == "same":
        assert got is e
        return
    for val in range(-9, 10):
        assert evaluate(got, {"hx": val}) * v == evaluate(e, {"hx": val})


@pytest.mark.parametrize("build,want", [
    (lambda x: x * 4 + 8, 4),
    (lambda x: x * 6 + 9, 3),
    (lambda x: x + 1, 1),
    (lambda x: x * 12, 12),
])
def test_const_factor(build, want):
    assert build(UOp.var("hx", -9, 9)).const_factor() == want


def test_operators_follow_c_semantics_and_dtypes():
    x = UOp.var("hx", -9, 9)
    assert (x // 2).op is Ops.IDIV and (x % 2).op is Ops.MOD
    assert evaluate(x // 2, {"hx": -7}) == -3 and evaluate(x % 2, {"hx": -7}) == -1
    assert x.lt(3).dtype is dtypes.bool
    assert x.lt(3).where(x, 0).dtype is dtypes.index
    c = x.cast(dtypes.i32)
    assert (c + 1).src[1] is UOp.const(dtypes.i32, 1)
    assert (1 - c).src[0] is UOp.const(dtypes.i32, 1)
    assert UOp.vconst(dtypes.i32, [1, 2]).lt(UOp.vconst(dtypes.i32, [2, 2])).dtype \
        is dtypes.bool.vec(2)


def test_uids_increase():
    a = UOp.var("uid_a", 0, 1)
    b = UOp.var("uid_b", 0, 1)
    assert b.uid > a.uid
