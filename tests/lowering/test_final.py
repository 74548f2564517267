"""Kernel preparation and the final rewrite (lowering/final.py)."""

from __future__ import annotations

import pytest

from eqsat import dtypes, parse
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import PatternMatcher, graph_rewrite
from eqsat.ir.uop import UOp
from lowering import LoweringError, final_rewrite, live_ranges, narrow_index, prepare
from lowering.final import pm_final, split_ends

F32, I32 = dtypes.f32, dtypes.i32


def rule(name: str) -> PatternMatcher:
    return PatternMatcher([r for r in pm_final.rules if r.name == name])


def ops(g: UOp) -> list[Ops]:
    return [u.op for u in g.toposort()]


# ---- stage 19 rules, one at a time ---------------------------------------------------------------
def test_const_vectorization() -> None:
    g = graph_rewrite(UOp.const(F32.vec(4), 1.5), rule("const_vectorize"))
    assert g.op is Ops.VECTORIZE and len(g.src) == 4
    assert all(s.op is Ops.CONST and s.dtype is F32 and s.arg == 1.5 for s in g.src)
    v = graph_rewrite(UOp.vconst(I32, (1, 2, 3)), rule("vconst_vectorize"))
    assert v.op is Ops.VECTORIZE and [s.arg for s in v.src] == [1, 2, 3]


def test_cat_to_vectorize() -> None:
    a = UOp.vconst(I32, (1, 2))
    b = UOp.const(I32, 9)
    cat = UOp(Ops.CAT, I32.vec(3), (a, b))
    g = graph_rewrite(cat, rule("cat_to_vectorize"))
    assert g.op is Ops.VECTORIZE and len(g.src) == 3
    assert g.src[0].op is Ops.GEP and g.src[0].arg == (0,) and g.src[2] is b


def test_gep_resolution() -> None:
    x, y, z = (UOp(Ops.DEFINE_VAR, I32, (), (n, 0, 9)) for n in "xyz")
    v = UOp(Ops.VECTORIZE, I32.vec(3), (x, y, z))
    assert graph_rewrite(v.gep(1), pm_final) is y
    assert graph_rewrite(v.gep(2, 0).gep(1), pm_final) is x  # GEP of GEP
    pair = graph_rewrite(v.gep(2, 0), pm_final)
    assert pair.op is Ops.VECTORIZE and pair.src == (z, x)
    assert graph_rewrite(x.gep(0), pm_final) is x  # a scalar's lane 0 is itself
    s = graph_rewrite((v + v).gep(1), pm_final)  # through an ALU: lane by lane
    assert s.op is Ops.ADD and s.src == (y, y)


def test_vector_kernel_unrolls_to_scalars() -> None:
    out = UOp.buffer(0, F32, 16)
    inp = UOp.buffer(1, F32, 16)
    r = UOp.range(4, 0)
    idx = UOp(Ops.VECTORIZE, dtypes.index.vec(4), tuple(r * 4 + i for i in range(4)))
    val = UOp(Ops.LOAD, F32.vec(4), (UOp(Ops.INDEX, inp.dtype, (inp, idx)),))
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, idx)),
                                      val * UOp.const(F32.vec(4), 2.0)))
    k = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, r)),))
    g = final_rewrite(narrow_index(k))
    assert all(u.dtype.count == 1 or u.dtype.ptr for u in g.toposort())
    assert ops(g).count(Ops.STORE) == 4 and ops(g).count(Ops.LOAD) == 4
    assert Ops.GEP not in ops(g) and Ops.VECTORIZE not in ops(g)


def test_split_multi_range_end() -> None:
    g = parse("""
    %b = (buffer 0 f32 24)
    %i = (range 0 2)
    %j = (range 1 3)
    %k = (range 2 4)
    (sink (end (store (index %b (add (add (mul %i 12) (mul %j 4)) %k)) 1.0) %i %j %k))""")
    e = split_ends(g).src[0]
    assert e.op is Ops.END and len(e.src) == 2 and e.src[1].arg == 0  # %i outermost
    e2 = e.src[0]
    assert e2.op is Ops.END and e2.src[1].arg == 1
    e3 = e2.src[0]
    assert e3.op is Ops.END and e3.src[1].arg == 2 and e3.src[0].op is Ops.STORE


def test_reduce_becomes_accumulator() -> None:
    g = parse("""
    %out = (buffer 0 f32 4)
    %in = (buffer 1 f32 12)
    %i = (range 0 4)
    %j = (range 1 3)
    (sink (end (store (index %out %i) (reduce add (load (index %in (add (mul %i 3) %j))) %j)) %i))
    """)
    f = final_rewrite(narrow_index(prepare(g)[0]))
    assert Ops.REDUCE not in ops(f)
    regs = [u for u in f.toposort() if u.op is Ops.DEFINE_REG]
    assert len(regs) == 1 and regs[0].dtype is F32.ptr_to()
    stores = [u for u in f.toposort() if u.op is Ops.STORE and u.src[0].src[0].op is not
              Ops.DEFINE_GLOBAL]
    init = [s for s in stores if s.src[1].op is Ops.CONST]
    assert len(init) == 1 and init[0].src[1].arg == 0.0
    # the init runs inside the i loop (its AFTER lists %i), the update inside j, then END j
    live = live_ranges(f)
    assert {r.arg for r in live[init[0]]} == {0}
    upd = [s for s in stores if s is not init[0]][0]
    assert {r.arg for r in live[upd]} == {0, 1}


@pytest.mark.parametrize("op,dt,identity", [
    ("add", "f32", 0.0), ("mul", "i32", 1), ("max", "f32", float("-inf")), ("max", "i32", -2**31),
    ("min", "u8", 255), ("min", "f64", float("inf")),
])
def test_reduce_identity(op: str, dt: str, identity) -> None:
    from lowering.final import reduce_identity

    assert reduce_identity(Ops[op.upper()], dtypes.parse(dt)).arg == identity


# ---- prepare -----------------------------------------------------------------------------------
def test_prepare_expression_kernel_makes_ranges_parameters() -> None:
    g, kind = prepare(parse("(add (range 3 10) (var n 0 5))"))
    assert kind == "expr"
    names = sorted(u.arg for u in g.toposort() if u.op is Ops.DEFINE_VAR)
    assert names == [("R3", 0, 9), ("n", 0, 5)]


def test_prepare_specials_become_outer_loops() -> None:
    g = parse("""
    %b = (buffer 0 f32 12)
    (sink (store (index %b (add (mul (special gidx0 3) 4) (special gidx1 4))) 1.0))""")
    root, kind = prepare(g)
    assert kind == "kernel" and Ops.SPECIAL not in ops(root)
    end = root.src[0]
    assert end.op is Ops.END and [r.src[0].arg for r in end.src[1:]] == [3, 4]  # by name


def test_prepare_renames_a_range_closed_twice() -> None:
    g = parse("""
    %a = (buffer 0 f32 8)
    %b = (buffer 1 f32 8)
    %r = (range 0 8)
    (sink (end (store (index %a %r) 1.0) %r) (end (store (index %b %r) 2.0) %r))""")
    root, _ = prepare(g)
    ends = [u for u in root.src]
    assert ends[0].src[1] is not ends[1].src[1]
    assert sorted(e.src[1].arg for e in ends) == [0, 1]


def test_prepare_drops_ranges_folded_to_constants() -> None:
    r = UOp.range(1, 0)
    b = UOp.buffer(0, F32, 1)
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, b.dtype, (b, UOp.const(dtypes.index, 0))),
                                      UOp.const(F32, 1.0)))
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, UOp.const(dtypes.index, 0))),
                                    UOp(Ops.END, dtypes.void, (st, r))))
    root, _ = prepare(g)
    assert root.src[0].src == (st,)


@pytest.mark.parametrize("text,match", [
    ("""%b = (buffer 0 f32 8)
        (sink (store (index %b (range 0 8)) 1.0))""", "never closed"),
    ("""%b = (buffer 0 f32 8)
        %r = (range 0 8)
        (sink (end (store (index %b %r) 1.0) %r) (store (index %b %r) 2.0))""", "never closed"),
])
def test_prepare_unclosed_range_is_an_error(text: str, match: str) -> None:
    with pytest.raises(LoweringError, match=match):
        prepare(parse(text))


def test_vector_load_from_scalar_address_is_an_error() -> None:
    b = UOp.buffer(0, F32, 8)
    o = UOp.buffer(1, F32.vec(4), 2)
    ld = UOp(Ops.LOAD, F32.vec(4), (UOp(Ops.INDEX, b.dtype, (b, UOp.const(I32, 0))),))
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, o.dtype, (o, UOp.const(I32, 0))), ld))
    with pytest.raises(LoweringError, match="vector"):
        final_rewrite(UOp(Ops.SINK, dtypes.void, (st,)))
