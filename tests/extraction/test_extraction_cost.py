"""Cost models: per-node tables, graph costs, model lookup, corpus reference cost."""

from __future__ import annotations

import pytest

from eqsat import Ops, UOp, dtypes
from extraction import (
    CostModel,
    CpuCost,
    ReferenceCost,
    divmod_count,
    get_cost_model,
    reference_cost,
)
from extraction.cost import _GraphCostMixin, sums_op_prices

I, U32, I32X4, F32, B = dtypes.index, dtypes.u32, dtypes.i32.vec(4), dtypes.f32, dtypes.bool  # noqa: E741

# (op, dtype, arg, child_consts, child_mins, expected)
CPU_CASES = [
    (Ops.CONST, I, 3, (), None, 0),
    (Ops.DEFINE_VAR, I, ("x", 0, 9), (), None, 0),
    (Ops.RANGE, I, 0, (10,), None, 0),
    (Ops.SPECIAL, I, "gidx0", (10,), None, 0),
    (Ops.DEFINE_GLOBAL, F32.ptr_to(), (0, 16), (), None, 0),
    (Ops.INVALID, I, None, (), None, 0),
    (Ops.ADD, I, None, (None, None), None, 1),
    (Ops.SUB, I, None, (None, 3), None, 1),
    (Ops.NEG, I, None, (None,), None, 1),
    (Ops.MAX, I, None, (None, 0), None, 1),
    (Ops.SHL, I, None, (None, 2), None, 1),
    (Ops.AND, B, None, (None, None), None, 1),
    (Ops.LT, B, None, (None, 4), None, 1),
    (Ops.WHERE, I, None, (None, None, None), None, 1),
    (Ops.CAST, dtypes.i32, None, (None,), None, 1),
    (Ops.MUL, I, None, (None, None), None, 3),
    (Ops.MUL, I, None, (None, 3), None, 3),
    (Ops.MUL, I, None, (None, 8), None, 1),          # a shl
    (Ops.MUL, I, None, (16, None), None, 1),         # either side
    (Ops.MUL, I, None, (None, -8), None, 3),
    (Ops.MUL, F32, None, (None, 8.0), None, 3),      # float mul is no shift
    (Ops.IDIV, I, None, (None, 7), (0, 7), 25),
    (Ops.MOD, I, None, (None, 7), (0, 7), 25),
    (Ops.IDIV, I, None, (None, None), (0, 1), 40),   # variable divisor
    (Ops.MOD, I, None, (None, None), None, 40),
    (Ops.IDIV, I, None, (None, 0), None, 40),        # by zero: priced as a variable
    (Ops.IDIV, I, None, (None, 8), (0, 8), 1),       # nonneg: shr
    (Ops.MOD, I, None, (None, 8), (0, 8), 1),        # nonneg: and
    (Ops.IDIV, I, None, (None, 8), (-5, 8), 3),      # may be negative: fix-up
    (Ops.MOD, I, None, (None, 8), None, 3),          # unknown sign: fix-up
    (Ops.IDIV, I, None, (None, -8), (0, -8), 2),     # shr + neg
    (Ops.MOD, I, None, (None, -8), (0, -8), 1),      # sign of the dividend: like % 8
    (Ops.IDIV, U32, None, (None, 8), None, 1),       # unsigned: shr
    (Ops.IDIV, I, None, (12, 4), None, 1),           # constant numerator >= 0
    (Ops.IDIV, I, None, (None, 1), None, 1),
    (Ops.MOD, I, None, (None, -1), None, 1),
    (Ops.IDIV, I32X4, None, (None, 7), None, 100),   # no SIMD integer division
    (Ops.IDIV, I32X4, None, (None, 4), (0, 4), 1),
    (Ops.FDIV, F32, None, (None, None), None, 14),
    (Ops.SQRT, F32, None, (None,), None, 15),
    (Ops.INDEX, F32.ptr_to(), None, (None, None), None, 1),
    (Ops.INDEX, F32.ptr_to(), None, (None, None, None), None, 2),  # gated
    (Ops.LOAD, F32, None, (None,), None, 4),
    (Ops.LOAD, F32, None, (None, 0.0), None, 5),     # with an alt value
    (Ops.STORE, dtypes.void, None, (None, None), None, 1),
    (Ops.REDUCE, F32, Ops.ADD, (None, None), None, 1),
    (Ops.REDUCE, F32, Ops.MUL, (None, None), None, 3),
    (Ops.END, dtypes.void, None, (None, None), None, 1),
    (Ops.SINK, dtypes.void, None, (None, None), None, 0),
    (Ops.VECTORIZE, I32X4, None, (None,) * 4, None, 4),
]


@pytest.mark.parametrize("op,dt,arg,consts,mins,expected", CPU_CASES)
def test_cpu_node_cost(op, dt, arg, consts, mins, expected):
    assert CpuCost().node_cost(op, dt, arg, consts, child_mins=mins) == expected


REF_CASES = [
    (Ops.IDIV, I, (None, 8), 25),    # the reference does not care about the divisor
    (Ops.IDIV, I, (None, None), 25),
    (Ops.MOD, I, (None, 7), 25),
    (Ops.MUL, I, (None, 1), 4),
    (Ops.MULHI, I, (None, None), 4),
    (Ops.MULACC, I, (None, None, None), 5),
    (Ops.ADD, I, (None, None), 1),
    (Ops.SUB, I, (None, None), 1),
    (Ops.MAX, I, (None, None), 1),
    (Ops.NEG, I, (None,), 1),
    (Ops.NOT, B, (None,), 1),
    (Ops.NE, B, (None, None), 1),
    (Ops.SHR, I, (None, 2), 1),
    (Ops.WHERE, I, (None, None, None), 1),
    (Ops.CAST, dtypes.i32, (None,), 1),
    (Ops.LOAD, F32, (None,), 1),
    (Ops.SINK, dtypes.void, (None,), 1),
    (Ops.CONST, I, (), 0),
    (Ops.VCONST, I32X4, (), 0),
    (Ops.DEFINE_VAR, I, (), 0),
    (Ops.RANGE, I, (None,), 0),
    (Ops.SPECIAL, I, (None,), 0),
    (Ops.DEFINE_GLOBAL, F32.ptr_to(), (), 0),
    (Ops.INVALID, I, (), 0),
]


@pytest.mark.parametrize("op,dt,consts,expected", REF_CASES)
def test_reference_node_cost(op, dt, consts, expected):
    assert ReferenceCost().node_cost(op, dt, None, consts) == expected


x = UOp.var("x", 0, 99)
y = UOp.var("y", -10, 10)
r = UOp.range(16, 0)

# (expression, reference cost, divmod count, CpuCost)
GRAPH_CASES = [
    (x, 0, 0, 0),
    (x + 1, 1, 0, 1),
    ((x + 1) * (x + 1), 5, 0, 4),                 # the shared x+1 is paid once
    (x // 7 + x % 7, 51, 2, 51),                  # x shared, 2 divisions
    (x // 8 + x % 8, 51, 2, 3),                   # CPU: x >= 0, shifts/masks
    (y // 8 + y % 8, 51, 2, 7),                   # CPU: y may be negative
    ((x * 4 + r) // 4, 30, 1, 3),                 # mul by 4 is a shl on the CPU
    ((x + y).lt(5).where(x, y), 3, 0, 3),
    (UOp.range(x + 1, 1) * 3, 5, 0, 4),           # a range's end is still counted
]


@pytest.mark.parametrize("u,ref,dm,cpu", GRAPH_CASES)
def test_graph_costs(u, ref, dm, cpu):
    assert reference_cost(u) == ref
    assert ReferenceCost().graph_cost(u) == ref
    assert divmod_count(u) == dm
    assert CpuCost().graph_cost(u) == cpu


def test_reference_cost_is_int():
    assert isinstance(reference_cost(x // 3), int)


class PlainModel:
    """A user model: only the protocol's two methods."""

    def node_cost(self, op, dtype, arg, child_consts):
        return 2.0

    def graph_cost(self, uop):
        return 2.0 * len(uop.toposort())


@pytest.mark.parametrize("choice,cls", [
    (None, CpuCost), ("default", CpuCost), ("cpu", CpuCost), ("reference", ReferenceCost),
])
def test_get_cost_model_names(choice, cls):
    assert type(get_cost_model(choice)) is cls


def test_get_cost_model_instances():
    m = CpuCost(div_const=30.0)
    assert get_cost_model(m) is m
    p = PlainModel()
    assert get_cost_model(p) is p
    assert isinstance(p, CostModel)


@pytest.mark.parametrize("bad", ["fast", "", 42, CpuCost, object()])
def test_get_cost_model_rejects(bad):
    with pytest.raises(ValueError, match="reference"):
        get_cost_model(bad)


def test_reprs_read_back():
    from extraction import CpuCost as CpuCost_  # noqa: F401 - eval namespace
    for m in (CpuCost(), CpuCost(div_var=50.0), ReferenceCost()):
        assert eval(repr(m), {"CpuCost": CpuCost, "ReferenceCost": ReferenceCost}) == m


def test_graph_cost_rejects_non_uop():
    with pytest.raises(TypeError, match="UOp"):
        reference_cost("(add 1 2)")


def test_reference_cost_matches_corpus(corpus_lines):
    import eqsat

    assert len(corpus_lines) >= 400
    bad = []
    for d in corpus_lines:
        for field, cost, dm in (("expr", "cost_in", "divmod_in"),
                                ("tinygrad", "cost_tg", "divmod_tg")):
            u = eqsat.parse(d[field])
            got = (reference_cost(u), divmod_count(u))
            if got != (d[cost], d[dm]):
                bad.append((d["id"], field, got, (d[cost], d[dm])))
    assert not bad, bad[:10]


# the reference metric's rule, as ReferenceCost's docstring states it
REF_LEAVES = {Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_GLOBAL,
              Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.INVALID, Ops.NOOP}
REF_PRICED = {Ops.IDIV: 25, Ops.MOD: 25, Ops.FLOORDIV: 25, Ops.FLOORMOD: 25, Ops.MUL: 4,
              Ops.MULHI: 4, Ops.MULACC: 5}


def test_reference_cost_is_the_rule_for_every_op():
    """ReferenceCost (an id-keyed table) answers what the stated rule gives, for every op."""
    for op in Ops:
        want = 0 if op in REF_LEAVES else REF_PRICED.get(op, 1)
        got = ReferenceCost().node_cost(op, dtypes.index, None, ())
        assert got == want and isinstance(got, float), op


class OpOnlyMixin(_GraphCostMixin):
    """An op-only model summing its node costs (the mixin's graph_cost)."""

    op_only = True

    def node_cost(self, op, dtype, arg, child_consts, child_mins=None):
        return 3.0


class OpOnlyOwnGraph(OpOnlyMixin):
    def graph_cost(self, uop):
        return 1.0


class RefSub(ReferenceCost):
    def node_cost(self, op, dtype, arg, child_consts, child_mins=None):
        return 7.0


@pytest.mark.parametrize("model, sums", [
    (ReferenceCost(), True), (OpOnlyMixin(), True), (CpuCost(), False), (PlainModel(), False),
    (OpOnlyOwnGraph(), False), (RefSub(), False),
])
def test_sums_op_prices(model, sums):
    # True only where graph_cost is the sum of the op prices of the unique nodes
    assert sums_op_prices(model) is sums
    if sums:
        u = (x + 1) * (x + 1) // 3
        assert model.graph_cost(u) == sum(model.node_cost(n.op, n.dtype, n.arg, ())
                                          for n in u.toposort())
