"""The egglog JSON path: build real e-graphs with egglog's Python API, serialize,
decode, extract."""

from __future__ import annotations

import json

import pytest
from egglog import (
    EGraph,
    Expr,
    StringLike,
    function,
    i64,
    i64Like,
    rewrite,
    set_,
    union,
    var,
    vars_,
)

from eqsat import Ops, UOp, dtypes
from extraction import (
    CpuCost,
    Decoded,
    EGraphView,
    ReferenceCost,
    SerializedNode,
    extract_dag,
    extract_tree,
)

I = dtypes.index  # noqa: E741
REF = ReferenceCost()


class Num(Expr):
    def __init__(self, v: i64Like) -> None: ...

    @classmethod
    def var(cls, name: StringLike) -> Num: ...

    def __add__(self, o: Num) -> Num: ...

    def __mul__(self, o: Num) -> Num: ...

    def __floordiv__(self, o: Num) -> Num: ...

    def __mod__(self, o: Num) -> Num: ...


@function(merge=lambda old, new: old.max(new))
def lo(e: Num) -> i64: ...


_BIN = {"__add__": Ops.ADD, "__mul__": Ops.MUL, "__floordiv__": Ops.IDIV, "__mod__": Ops.MOD}
_PRETTY = {"· + ·": Ops.ADD, "· * ·": Ops.MUL, "· // ·": Ops.IDIV, "· % ·": Ops.MOD}


def decode(n: SerializedNode):
    """Both spellings: raw (``<module>_Num___add__``) and ``_serialize()``'s (``· + ·``)."""
    op = n.op
    if op in _PRETTY:
        return (_PRETTY[op], I, None)
    for name, uop in _BIN.items():
        if op.endswith("_Num_" + name):
            return (uop, I, None)
    if op == "Num.var" or op.endswith("_Num_var"):
        return Decoded(Ops.DEFINE_VAR, I, (n.literals[0], 0, 100))
    if op == "Num" or op.endswith("_Num___init__"):
        return (Ops.CONST, I, n.literals[0])
    return None  # lo(...) rows and anything else


def views(eg: EGraph, **kw) -> list[EGraphView]:
    """The same e-graph through both serializations."""
    raw = eg._egraph.serialize([]).to_json()
    pretty = eg._serialize().to_json()
    return [EGraphView.from_egglog_json(raw, decode, **kw),
            EGraphView.from_egglog_json(json.loads(pretty), decode, **kw)]


X = UOp.var("x", 0, 100)


def test_recombination_extracts_the_variable():
    eg = EGraph()
    x = Num.var("x")
    eg.let("root", (x // Num(4)) * Num(4) + x % Num(4))
    a, b = vars_("a b", Num)
    eg.register(rewrite((a // b) * b + a % b).to(a))
    eg.run(3)
    for v in views(eg):
        root = v.lets["$root"]
        for f in (extract_tree, extract_dag):
            ex = f(v, [root], REF)
            assert ex.cost == 0 and ex.to_uops() == [X]


def test_sharing_across_roots_through_egglog():
    eg = EGraph()
    p, q, z, w = (Num.var(s) for s in "pqzw")
    r1a = eg.let("r1", (p * q) * Num(2))
    eg.let("r2", (p * q) * Num(3))
    eg.register(union(r1a).with_(z * w + Num(1)))
    eg.run(1)
    for v in views(eg):
        roots = [v.lets["$r1"], v.lets["$r2"]]
        t, d = extract_tree(v, roots, REF), extract_dag(v, roots, REF)
        assert (t.cost, d.cost) == (13, 12)
        pq = UOp.var("p", 0, 100) * UOp.var("q", 0, 100)
        assert d.to_uops() == [pq * 2, pq * 3]
        one, two = d.to_uops()
        assert one.src[0] is two.src[0]


def test_cycle_from_identity_rule():
    eg = EGraph()
    x = Num.var("x")
    eg.let("root", (x + Num(0)) * Num(2))
    a = var("a", Num)
    eg.register(rewrite(a + Num(0)).to(a))
    eg.run(2)
    for v in views(eg):
        root = v.lets["$root"]
        var_classes = [c for c, ns in v.classes.items() if any(n.op is Ops.DEFINE_VAR for n in ns)]
        assert len(var_classes) == 1
        assert any(n.op is Ops.ADD and var_classes[0] in n.children
                   for n in v.classes[var_classes[0]])  # the class contains itself
        for f in (extract_tree, extract_dag):
            assert f(v, [root], REF).to_uops() == [X * 2]


def test_lower_bounds_from_a_lattice_function():
    eg = EGraph()
    x, y = Num.var("x"), Num.var("y")
    eg.let("rx", x // Num(8))
    eg.let("ry", y // Num(8))
    eg.register(set_(lo(x)).to(i64(0)))
    raw = json.loads(eg._egraph.serialize([]).to_json())
    lo_name = next(n["op"] for n in raw["nodes"].values() if n["op"].endswith("_lo"))
    v_raw = EGraphView.from_egglog_json(raw, decode, lo_function=lo_name)
    v_pretty = EGraphView.from_egglog_json(eg._serialize().to_json(), decode, lo_function="lo")
    for v in (v_raw, v_pretty):
        x_class = next(c for c, ns in v.classes.items()
                       if any(n.op is Ops.DEFINE_VAR and n.arg[0] == "x" for n in ns))
        assert v.class_min == {x_class: 0}
        cpu = CpuCost()
        assert extract_dag(v, [v.lets["$rx"]], cpu).cost == 1   # x >= 0: a shift
        assert extract_dag(v, [v.lets["$ry"]], cpu).cost == 3   # sign unknown: fix-up
    # without lo_function the lo rows go to the decoder (which drops them): no bounds
    assert EGraphView.from_egglog_json(raw, decode).class_min == {}


def test_subsumed_nodes_are_dropped():
    eg = EGraph()
    x = Num.var("x")
    eg.let("root", x * Num(1))
    a = var("a", Num)
    eg.register(rewrite(a * Num(1), subsume=True).to(a))
    eg.run(1)
    raw = eg._egraph.serialize([]).to_json()
    v = EGraphView.from_egglog_json(raw, decode)
    assert not any(n.op is Ops.MUL for n in v._all_nodes)
    v_all = EGraphView.from_egglog_json(raw, decode, include_subsumed=True)
    assert any(n.op is Ops.MUL for n in v_all._all_nodes)
    assert extract_tree(v, [v.lets["$root"]], REF).to_uops() == [X]


def test_literal_values_reach_the_decoder():
    seen: list[SerializedNode] = []

    def spy(n: SerializedNode):
        seen.append(n)
        return decode(n)

    eg = EGraph()
    eg.let("root", Num.var("x") + Num(-7))
    EGraphView.from_egglog_json(eg._egraph.serialize([]).to_json(), spy)
    by_op = {n.op.rsplit("_", 1)[-1]: n for n in seen}
    assert by_op["var"].literals == ("x",) and by_op["var"].child_is_literal == (True,)
    init = next(n for n in seen if n.op.endswith("___init__"))
    assert init.literals == (-7,) and init.sort.endswith("Num")
    add = next(n for n in seen if n.op.endswith("___add__"))
    assert add.literals == (None, None) and add.child_is_literal == (False, False)
    assert not any(n.id.startswith("primitive-") for n in seen)


@pytest.mark.parametrize("data,match", [
    ("not json", "not valid JSON"),
    ({"nodes": []}, "'nodes' object"),
    ({"nodes": {"a": {"op": "x"}}}, "lacks 'op' or 'eclass'"),
    ({"nodes": {"a": {"op": "x", "eclass": "A", "children": ["b"]}}}, "unknown child 'b'"),
])
def test_bad_json(data, match):
    with pytest.raises(ValueError, match=match):
        EGraphView.from_egglog_json(data, decode)


def test_bad_decoder_answer():
    data = {"nodes": {"a": {"op": "x", "eclass": "A", "children": []}}}
    with pytest.raises(ValueError, match="decoder returned"):
        EGraphView.from_egglog_json(data, lambda n: (1, 2, 3, 4, 5, 6))
