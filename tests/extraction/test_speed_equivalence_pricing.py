"""The computed pass's pricing fast paths.

:meth:`Weights._reprice` must price exactly as pricing every e-node afresh does, and
re-key only the e-nodes whose children's facts changed. (``best_nodes_and_parents``' bucketed
queue is tested against the plain tuple-heap Dijkstra in
``tests/eqsat/engines/test_egraph_computed_incremental.py``.)
"""

from __future__ import annotations

from types import SimpleNamespace

from eqsat.engines.egraph.computed.pricing import Weights, none_indices


def test_nones() -> None:
    assert none_indices([None, 1, None, None, 0.0]) == [0, 2, 3]
    assert none_indices([]) == []
    assert none_indices([1, 2]) == []


class _Model:
    """A cost model that counts its calls (prices by op name and constants)."""

    uses_bounds = False

    def __init__(self) -> None:
        self.calls = 0

    def node_cost(self, op, dtype, arg, consts) -> float:  # noqa: ANN001
        self.calls += 1
        return float(len(op.name) + sum(1 for c in consts if c is not None))


def test_reprice_prices_as_afresh() -> None:
    from eqsat.engines.egraph.encoding import Node

    # Add/Mul e-nodes over constant and leaf classes; the second pass changes class 1
    # (now a constant) and adds an e-node
    def snap(nodes: list[Node], consts: dict[int, int]) -> SimpleNamespace:
        return SimpleNamespace(nodes=nodes, consts=consts, lo={}, height={})

    x = Node(0, "Leaf", ("DEFINE_VAR", "index", 0))
    c1 = Node(1, "Leaf", ("DEFINE_VAR", "index", 1))
    add = Node(2, "Add", ("index", 0, 1))
    mul = Node(3, "Mul", ("index", 2, 0))
    s1 = snap([x, c1, add, mul], {})
    w1 = Weights(s1, _Model(), {}, {}, set(), set())  # type: ignore[arg-type]
    p1 = w1.prices()
    c1b = Node(1, "Cst", ("index", 3))
    sub = Node(4, "Sub", ("index", 1, 0))
    s2 = snap([x, c1b, add, mul, sub], {1: 3})
    w2 = Weights(s2, _Model(), {}, w1.by_node, {1}, {add, sub})  # type: ignore[arg-type]
    fresh = Weights(s2, _Model(), {})  # type: ignore[arg-type]
    assert w2.prices() == fresh.prices()
    assert p1[2] != w2.prices()[2]  # the Add's child became a constant
    assert w2.by_node == fresh.by_node


def test_reprice_skips_keys_that_cannot_change() -> None:
    from eqsat.engines.egraph.encoding import Node

    x = Node(0, "Leaf", ("DEFINE_VAR", "index", 0))
    y = Node(1, "Leaf", ("DEFINE_VAR", "index", 1))
    add = Node(2, "Add", ("index", 0, 1))
    s1 = SimpleNamespace(nodes=[x, y, add], consts={}, lo={}, height={})
    w1 = Weights(s1, _Model(), {}, {}, set(), set())  # type: ignore[arg-type]
    w1.prices()
    assert w1.by_node.consts == {} and w1.by_node.lo is None
    # class 1 changes (a new e-node) but keeps its constant (none): the Add, affected,
    # keeps its price without a new key (the model is not asked, the cache is empty)
    y2 = Node(1, "Leaf", ("DEFINE_VAR", "index", 7))
    s2 = SimpleNamespace(nodes=[x, y, y2, add], consts={}, lo={}, height={})
    model = _Model()
    w2 = Weights(s2, model, {}, w1.by_node, {1}, {add})  # type: ignore[arg-type]
    assert w2.prices() == Weights(s2, _Model(), {}).prices()  # type: ignore[arg-type]
    assert model.calls == 0
    # a previous pass without its facts (a plain dict): every affected e-node re-keyed
    model = _Model()
    w3 = Weights(s2, model, {}, dict(w1.by_node), {1}, {add})  # type: ignore[arg-type]
    assert w3.prices() == w2.prices()
    assert model.calls == 1


class _BoundsModel(_Model):
    uses_bounds = True

    def node_cost(self, op, dtype, arg, consts, child_mins=None) -> float:  # noqa: ANN001
        self.calls += 1
        return float(len(op.name) + sum(1 for m in child_mins or () if m is not None and m >= 0))


def test_reprice_bounds_aware_rekeys_on_a_new_lower_bound() -> None:
    from eqsat.engines.egraph.encoding import Node

    x = Node(0, "Leaf", ("DEFINE_VAR", "index", 0))
    y = Node(1, "Leaf", ("DEFINE_VAR", "index", 1))
    add = Node(2, "Add", ("index", 0, 1))
    s1 = SimpleNamespace(nodes=[x, y, add], consts={}, lo={0: -3, 1: 0}, height={})
    w1 = Weights(s1, _BoundsModel(), {}, {}, set(), set())  # type: ignore[arg-type]
    assert w1.prices()[2] == 4.0 and w1.by_node.lo == {0: -3, 1: 0}
    s2 = SimpleNamespace(nodes=[x, y, add], consts={}, lo={0: 2, 1: 0}, height={})
    w2 = Weights(s2, _BoundsModel(), {}, w1.by_node, {0}, {add})  # type: ignore[arg-type]
    assert w2.prices() == Weights(s2, _BoundsModel(), {}).prices() == [0.0, 0.0, 5.0]  # type: ignore[arg-type]
