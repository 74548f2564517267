"""The computed pass's :func:`_best_nodes` against the plain Dijkstra it replaces.

The pass's pricing keeps a bucketed queue (distinct costs in a heap, per cost its
e-node indices in a heap) instead of one heap of ``(cost, index)`` tuples; everything
it returns must be what the tuple heap gives: each class's e-node and cost, the class
order (children before parents, ties by index), the heights and the parents lists.
:meth:`Weights._reprice` must price exactly as pricing every e-node afresh does.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.egraph.computed.pricing import Weights, _best_nodes, _nones


class _Node(SimpleNamespace):
    """The fields of an e-node :func:`_best_nodes` reads."""


class _Prices:
    def __init__(self, w: list[float]):
        self.w = w

    def prices(self) -> list[float]:
        return self.w


def _reference(nodes: list[_Node], wts: list[float]) -> tuple[dict, dict, dict, dict]:
    """The tuple-heap Dijkstra (the code before the bucketed queue), as the spec."""
    parents: defaultdict[int, list[int]] = defaultdict(list)
    pending = [0] * len(nodes)
    heap: list[tuple[float, int]] = []
    for i, n in enumerate(nodes):
        if n.subsumed:
            pending[i] = -1
            continue
        kids = n.kids
        if not kids:
            heap.append((wts[i], i))
            continue
        ks = list(dict.fromkeys(kids)) if len(kids) <= 2 else set(kids)
        pending[i] = len(ks)
        for k in ks:
            parents[k].append(i)
    heapq.heapify(heap)
    best: dict[int, int] = {}
    cost: dict[int, float] = {}
    height: dict[int, int] = {}
    while heap:
        c, i = heapq.heappop(heap)
        n = nodes[i]
        if n.cls in best:
            continue
        best[n.cls] = i
        cost[n.cls] = c
        height[n.cls] = 1 + max([height[k] for k in n.kids], default=0)
        for p in parents.get(n.cls, ()):
            pending[p] -= 1
            if pending[p] == 0 and nodes[p].cls not in best:
                pk = nodes[p].kids
                s = wts[p] + cost[pk[0]] if len(pk) == 1 else wts[p] + sum([cost[k] for k in pk])
                heapq.heappush(heap, (s, p))
    return best, cost, height, dict(parents)


@st.composite
def _egraphs(draw: st.DrawFn) -> tuple[list[_Node], list[float]]:
    """Random e-graphs (cycles, repeated children, subsumed e-nodes, wide nodes) with
    few distinct weights, so that ties are common."""
    ncls = draw(st.integers(1, 9))
    nodes = []
    for c in range(ncls):
        for _ in range(draw(st.integers(1, 3))):
            kids = tuple(draw(st.lists(st.integers(0, ncls - 1), max_size=4)))
            nodes.append(_Node(cls=c, kids=kids, subsumed=draw(st.booleans()) and
                               draw(st.booleans())))
    nodes.sort(key=lambda n: n.cls)  # a snapshot lists its e-nodes by class
    wts = [draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 0.5, 25.0])) for _ in nodes]
    return nodes, wts


@settings(max_examples=400, deadline=None)
@given(_egraphs())
def test_best_nodes_as_the_tuple_heap(g: tuple[list[_Node], list[float]]) -> None:
    nodes, wts = g
    snap = SimpleNamespace(nodes=nodes, height={})
    best, cost, parents = _best_nodes(snap, _Prices(wts))  # type: ignore[arg-type]
    rb, rc, rh, rp = _reference(nodes, wts)
    assert list(best.items()) == list(rb.items())
    assert [(k, repr(v)) for k, v in cost.items()] == [(k, repr(v)) for k, v in rc.items()]
    assert list(snap.height.items()) == list(rh.items())
    assert {k: v for k, v in parents.items() if v} == rp


def test_best_nodes_ties_by_index() -> None:
    # two leaves of equal cost in one class: the earlier e-node wins; a parent
    # whose cost equals a leaf's is ordered by index among them
    nodes = [_Node(cls=0, kids=(), subsumed=False), _Node(cls=0, kids=(), subsumed=False),
             _Node(cls=1, kids=(0,), subsumed=False), _Node(cls=2, kids=(), subsumed=False)]
    snap = SimpleNamespace(nodes=nodes, height={})
    best, cost, _ = _best_nodes(snap, _Prices([1.0, 1.0, 0.0, 1.0]))  # type: ignore[arg-type]
    assert list(best.items()) == [(0, 0), (1, 2), (2, 3)]
    assert cost == {0: 1.0, 1: 1.0, 2: 1.0}
    assert snap.height == {0: 1, 1: 2, 2: 1}


def test_nones() -> None:
    assert _nones([None, 1, None, None, 0.0]) == [0, 2, 3]
    assert _nones([]) == []
    assert _nones([1, 2]) == []


class _Model:
    """A cost model that counts its calls (prices by op name and constants)."""

    uses_bounds = False

    def __init__(self) -> None:
        self.calls = 0

    def node_cost(self, op, dtype, arg, consts) -> float:  # noqa: ANN001
        self.calls += 1
        return float(len(op.name) + sum(1 for c in consts if c is not None))


def test_reprice_prices_as_afresh() -> None:
    from eqsat.egraph.encoding import Node

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
    from eqsat.egraph.encoding import Node

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
    from eqsat.egraph.encoding import Node

    x = Node(0, "Leaf", ("DEFINE_VAR", "index", 0))
    y = Node(1, "Leaf", ("DEFINE_VAR", "index", 1))
    add = Node(2, "Add", ("index", 0, 1))
    s1 = SimpleNamespace(nodes=[x, y, add], consts={}, lo={0: -3, 1: 0}, height={})
    w1 = Weights(s1, _BoundsModel(), {}, {}, set(), set())  # type: ignore[arg-type]
    assert w1.prices()[2] == 4.0 and w1.by_node.lo == {0: -3, 1: 0}
    s2 = SimpleNamespace(nodes=[x, y, add], consts={}, lo={0: 2, 1: 0}, height={})
    w2 = Weights(s2, _BoundsModel(), {}, w1.by_node, {0}, {add})  # type: ignore[arg-type]
    assert w2.prices() == Weights(s2, _BoundsModel(), {}).prices() == [0.0, 0.0, 5.0]  # type: ignore[arg-type]
