"""Prices of e-nodes and each e-class's cheapest e-node under the run's cost model.

:class:`Weights` prices an e-node (the reference metric's :data:`NODE_WEIGHT` or a
cost model's own prices), and :func:`best_nodes` runs the bottom-up tree extraction
that gives every class its cheapest e-node and that e-node's tree cost.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Any

from eqsat.egraph.encoding import CTOR_OP, Node, Snapshot

#: tree-cost weights used to pick each class's representative (the reference metric)
NODE_WEIGHT: dict[str, float] = {"Idiv": 25.0, "Mod": 25.0, "Mul": 4.0, "Mulacc": 5.0,
                                 "Cst": 0.0, "Leaf": 0.0, "Cons": 0.0, "Nil": 0.0}
_ZERO_G = {"RANGE", "SPECIAL"}
_FREE = frozenset(("Cst", "Leaf", "Cons", "Nil"))  # priced 0 under every model


class Weights:
    """The cost of every e-node of a snapshot under the run's cost model (reference
    weights when there is none): best terms, linear forms and the basis search
    choose by the same prices the final extraction uses."""

    def __init__(self, snap: Snapshot, model: Any = None, cache: dict | None = None,
                 prev: dict[Node, float] | None = None, changed: set[int] | None = None,
                 affected: set[Node] | None = None):
        self.snap = snap
        self.model = model
        self.bounds_aware = bool(getattr(model, "uses_bounds", False))
        self._w: dict[int, float] = {}
        self._list: list[float] | None = None  # every e-node's price, once computed
        self._cache = cache if cache is not None else {}  # price key -> price, across passes
        #: the last pass's prices by e-node (the snapshots share unchanged Node objects)
        #: and the classes that changed since (e-nodes, bounds): an e-node of the last
        #: pass none of whose children changed has the price it had (same price key)
        self._prev = prev if changed is not None else None
        self._changed = changed
        #: the e-nodes with a child in ``changed``, when the caller knows them (each
        #: other e-node of the last pass then takes its price without a test)
        self._affected = affected
        #: this snapshot's prices by e-node (filled by :meth:`prices`), for the next pass
        self.by_node: dict[Node, float] = {}

    def __repr__(self) -> str:
        return f"Weights({self.snap!r}, {self.model!r})"

    def of(self, i: int) -> float:
        lst = self._list
        if lst is not None:
            return lst[i]
        w = self._w.get(i)
        if w is None:
            w = self._w[i] = self._price(self.snap.nodes[i])
        return w

    def prices(self) -> list[float]:
        """The price of every e-node, in snapshot order (fills :meth:`of`'s cache)."""
        nodes = self.snap.nodes
        if self.model is None:
            out = [node_weight(n) for n in nodes]
        elif self._prev is not None and self._affected is not None:
            out = self._reprice(nodes, self._prev, self._affected)
        else:
            cache, price, key_of = self._cache, self._price, self._key
            prev = self._prev if self._prev is not None else {}
            changed = self._changed if self._changed is not None else set()
            unchanged = changed.isdisjoint
            out = []
            append = out.append
            for n in nodes:
                ctor = n.ctor
                if ctor in _FREE:
                    append(0.0)
                    continue
                kids = n.kids
                w = prev.get(n)
                if w is not None and unchanged(kids):
                    append(w)
                    continue
                key = key_of(n)
                w = cache.get(key)
                append(w if w is not None else price(n, key))
        self.by_node = dict(zip(nodes, out, strict=True))
        self._list = out
        return out

    def _reprice(self, nodes: list[Node], prev: dict[Node, float], affected: set[Node]
                 ) -> list[float | None]:
        """:meth:`prices` from the last pass's: every e-node of it not in ``affected``
        keeps its price; the new and the affected ones are priced."""
        out: list[float | None] = list(map(prev.get, nodes))
        cache, price, key_of = self._cache, self._price, self._key

        def reprice(i: int) -> None:
            n = nodes[i]
            if n.ctor in _FREE:
                out[i] = 0.0
                return
            key = key_of(n)
            w = cache.get(key)
            out[i] = w if w is not None else price(n, key)

        if affected:
            where = dict(zip(nodes, range(len(nodes)), strict=True))
            for n in affected:
                i = where.get(n)
                if i is not None:
                    reprice(i)
        i = -1
        index = out.index
        try:
            while True:  # the e-nodes new since the last pass
                i = index(None, i + 1)
                reprice(i)
        except ValueError:
            pass
        return out

    def _key(self, n: Node) -> tuple:
        """The price key of an e-node: what its price depends on (its constructor and
        dtype, its children's constants and, for a bounds-aware model, their minima)."""
        snap = self.snap
        kids = n.kids
        cn = snap.consts.get
        lo = snap.lo if self.bounds_aware else None
        ctor = n.ctor
        return (ctor, n.fields[0] if ctor in CTOR_OP else n.fields[:3],
                tuple([cn(k) for k in kids]),
                None if lo is None else tuple([lo.get(k) for k in kids]))

    def _price(self, n: Node, key: tuple | None = None) -> float:
        """The price of an e-node (``key``: its :meth:`_key`, when known)."""
        if self.model is None:
            return node_weight(n)
        ctor = n.ctor
        if ctor in _FREE:
            return 0.0
        if key is None:
            key = self._key(n)
        consts, mins = key[2], key[3]
        w = self._cache.get(key)
        if w is not None:
            return w
        op = n.op
        if op is None:
            w = 0.0
        else:
            from eqsat.egraph.encoding import dtype_of

            try:
                if self.bounds_aware:
                    w = float(self.model.node_cost(op, dtype_of(n.dtype), None, consts,
                                                   child_mins=mins))
                else:
                    w = float(self.model.node_cost(op, dtype_of(n.dtype), None, consts))
            except Exception:  # a model that cannot price an engine node: reference weight
                w = node_weight(n)
        self._cache[key] = w
        return w

    def pending(self, ctor: str, kid_consts: tuple) -> float:
        """The price of a node not yet in the e-graph (no bounds known)."""
        if self.model is None or ctor not in CTOR_OP:
            return NODE_WEIGHT.get(ctor, 1.0)
        from eqsat.dtype import dtypes

        try:
            return float(self.model.node_cost(CTOR_OP[ctor], dtypes.index, None, kid_consts))
        except Exception:
            return NODE_WEIGHT.get(ctor, 1.0)


def node_weight(n: Node) -> float:
    w = NODE_WEIGHT.get(n.ctor)
    if w is not None:
        return w
    if n.ctor.startswith("G") and n.fields[0] in _ZERO_G:
        return 0.0
    return 1.0


def best_nodes(snap: Snapshot, weights: Weights | None = None
               ) -> tuple[dict[int, int], dict[int, float]]:
    """The cheapest (tree cost) e-node of every class: ``(class -> node index, class ->
    cost)``. Ties go to the earlier node (deterministic). Also fills ``snap.height``
    (the height of each class's cheapest term).

    A Dijkstra over the e-nodes: an e-node is pushed once all its children are priced,
    a class is priced by the first of its e-nodes popped; ``best`` lists the classes in
    that order (children before parents)."""
    best, cost, _ = _best_nodes(snap, weights)
    return best, cost


def _best_nodes(snap: Snapshot, weights: Weights | None = None
                ) -> tuple[dict[int, int], dict[int, float], dict[int, list[int]]]:
    """:func:`best_nodes`, and the parents it read: class -> the indices of the
    e-nodes (not subsumed) it is a child of, each once, in snapshot order."""
    nodes = snap.nodes
    wts = (weights or Weights(snap)).prices()
    parents: defaultdict[int, list[int]] = defaultdict(list)
    pending = [0] * len(nodes)
    heap: list[tuple[float, int]] = []
    push_leaf = heap.append
    for i, n in enumerate(nodes):
        if n.subsumed:
            pending[i] = -1  # never reaches 0: never pushed
            continue
        kids = n.kids
        nk = len(kids)
        if nk == 0:
            push_leaf((wts[i], i))
        elif nk == 1:
            pending[i] = 1
            parents[kids[0]].append(i)
        elif nk == 2 and kids[0] != kids[1]:
            pending[i] = 2
            parents[kids[0]].append(i)
            parents[kids[1]].append(i)
        else:
            ks = set(kids)  # each distinct child counts once (order irrelevant here)
            pending[i] = len(ks)
            for k in ks:
                parents[k].append(i)
    # (cost, index) pairs are distinct: pops come in one total order however pushed
    heapq.heapify(heap)
    best: dict[int, int] = {}
    cost: dict[int, float] = {}
    height = snap.height
    height.clear()
    pop, push = heapq.heappop, heapq.heappush
    parents_of = parents.get
    while heap:
        c, i = pop(heap)
        n = nodes[i]
        cls = n.cls
        if cls in best:
            continue
        best[cls] = i  # insertion order: children before parents
        cost[cls] = c
        kids = n.kids
        nk = len(kids)
        if nk == 0:
            height[cls] = 1
        elif nk == 1:
            height[cls] = 1 + height[kids[0]]
        elif nk == 2:
            h0, h1 = height[kids[0]], height[kids[1]]
            height[cls] = 1 + (h0 if h0 >= h1 else h1)
        else:
            height[cls] = 1 + max([height[k] for k in kids])
        ps = parents_of(cls)
        if ps is None:
            continue
        for p in ps:
            left = pending[p] - 1
            pending[p] = left
            if left == 0:
                pn = nodes[p]
                if pn.cls in best:
                    continue
                pk = pn.kids
                nk = len(pk)
                if nk == 1:
                    push(heap, (wts[p] + cost[pk[0]], p))
                elif nk == 2:  # the same sum as sum([...]): ((0 + a) + b)
                    push(heap, (wts[p] + (0 + cost[pk[0]] + cost[pk[1]]), p))
                else:
                    push(heap, (wts[p] + sum([cost[k] for k in pk]), p))
    return best, cost, parents
