"""Prices of e-nodes and each e-class's cheapest e-node under the run's cost model.

:class:`Weights` prices an e-node (the reference metric's :data:`NODE_WEIGHT` or a
cost model's own prices), and :func:`best_nodes` runs the bottom-up tree extraction
that gives every class its cheapest e-node and that e-node's tree cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from eqsat.engines.egraph.encoding import CTOR_OP, Node, Snapshot, dtype_of
from eqsat.engines.egraph.encoding.snapshot import none_indices
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from extraction.cost import reference_weight
from extraction.extract import cheapest_first

_CLS = attrgetter("cls")
_KIDS = attrgetter("kids")
_FREE = frozenset(("Cst", "Leaf", "Cons", "Nil"))  # priced 0 under every model
#: tree-cost weights used to pick each class's representative when a run has no cost
#: model: the reference metric (``extraction.cost.REFERENCE_WEIGHT``) by constructor;
#: a ``G1``..``G4``/``GL`` e-node is priced by its op's name (:data:`_G_WEIGHT`)
NODE_WEIGHT: dict[str, float] = {**{ctor: float(reference_weight(op))
                                    for ctor, op in CTOR_OP.items()},
                                 **{ctor: 0.0 for ctor in _FREE}}
_G_WEIGHT: dict[str, float] = {op.name: float(reference_weight(op)) for op in Ops}


class NodePrices(dict):
    """A pass's prices by e-node (``Node -> price``), with the facts its price keys
    read: every class's constant (``consts``) and, for a bounds-aware model, lower
    bound (``lo``; None otherwise). The next pass compares its facts with these."""

    __slots__ = ("consts", "lo")

    def __repr__(self) -> str:
        return f"NodePrices({dict(self)!r})"


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
        #: the model prices by the op alone (``CostModel``'s ``op_only``): an e-node's
        #: price key is its constructor and op field, its children's facts left out
        self.op_only = bool(getattr(model, "op_only", False)) and not self.bounds_aware
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
        #: (left empty under an ``op_only`` model: its passes price every e-node by op)
        self.by_node: dict[Node, float] = NodePrices()

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
        elif self._prev and self._affected is not None:
            out = self._reprice(nodes, self._prev, self._affected)
        else:
            cache, price, key_of = self._cache, self._price, self._key
            prev = self._prev if self._prev is not None else {}
            carry = bool(prev)  # (none to take over: a first pass's, an op_only model's)
            changed = self._changed if self._changed is not None else set()
            unchanged = changed.isdisjoint
            out = []
            append = out.append
            for n in nodes:
                ctor = n.ctor
                if ctor in _FREE:
                    append(0.0)
                    continue
                if carry:
                    w = prev.get(n)
                    if w is not None and unchanged(n.kids):
                        append(w)
                        continue
                key = key_of(n)
                w = cache.get(key)
                append(w if w is not None else price(n, key))
        if not self.op_only:  # (an op_only model's passes price by op: none taken over)
            by_node = self.by_node = NodePrices(zip(nodes, out, strict=True))
            by_node.consts = dict(self.snap.consts)
            by_node.lo = dict(self.snap.lo) if self.bounds_aware else None
        self._list = out
        # from now on ``of(i)`` is ``out[i]``: the list's own item lookup, no method call
        # (the rules and the focus search price e-nodes one at a time)
        self.of = out.__getitem__  # type: ignore[method-assign]
        return out

    def _reprice(self, nodes: list[Node], prev: dict[Node, float], affected: set[Node]
                 ) -> list[float | None]:
        """:meth:`prices` from the last pass's: every e-node of it not in ``affected``
        keeps its price; the new and the affected ones are priced (an e-node both new
        and affected once)."""
        out: list[float | None] = list(map(prev.get, nodes))
        cache_get, price, key_of = self._cache.get, self._price, self._key

        def reprice(todo: Iterable[int]) -> None:
            for i in todo:
                n = nodes[i]
                if n.ctor in _FREE:
                    out[i] = 0.0
                    continue
                key = key_of(n)
                w = cache_get(key)
                out[i] = w if w is not None else price(n, key)

        if affected:
            affected = self._keyed_anew(prev, affected)
        if affected:
            where = dict(zip(nodes, range(len(nodes)), strict=True)).get
            reprice([i for i in map(where, affected) if i is not None])
        reprice(none_indices(out))  # the e-nodes new since the last pass
        return out

    def _keyed_anew(self, prev: dict[Node, float], affected: set[Node]
                    ) -> Iterable[Node]:
        """The e-nodes of ``affected`` whose price key may differ from the last pass's:
        the ones with a child whose constant (or, bounds-aware, lower bound) differs
        from the one ``prev`` (a :class:`NodePrices`) was priced with. The others
        have their key unchanged (same constructor and fields; the children not in
        ``changed`` kept their facts), so the price they had. All of them when
        ``prev`` does not carry its facts."""
        consts = getattr(prev, "consts", None)
        lo = getattr(prev, "lo", None)
        changed = self._changed
        if consts is None or changed is None or (self.bounds_aware and lo is None):
            return affected
        get, old = self.snap.consts.get, consts.get
        delta = {c for c in changed if get(c) != old(c)}
        if self.bounds_aware:
            get, old = self.snap.lo.get, lo.get
            delta.update([c for c in changed if get(c) != old(c)])
        if not delta:
            return ()
        isdisjoint = delta.isdisjoint
        return [n for n in affected if not isdisjoint(n.kids)]

    def _key(self, n: Node) -> tuple:
        """The price key of an e-node: what its price depends on (its constructor and
        dtype, its children's constants and, for a bounds-aware model, their minima;
        for a model that prices by the op alone, the constructor and its op or dtype
        field, and no child constants)."""
        ctor = n.ctor
        if self.op_only:
            return (ctor, n.fields[0] if n.fields else None, (), None)
        snap = self.snap
        kids = n.kids
        return (ctor, n.fields[0] if ctor in CTOR_OP else n.fields[:3],
                tuple(map(snap.consts.get, kids)),
                tuple(map(snap.lo.get, kids)) if self.bounds_aware else None)

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
        try:
            return float(self.model.node_cost(CTOR_OP[ctor], dtypes.index, None, kid_consts))
        except Exception:
            return NODE_WEIGHT.get(ctor, 1.0)


def node_weight(n: Node) -> float:
    """The reference weight of an e-node (:data:`NODE_WEIGHT`, :data:`_G_WEIGHT`)."""
    w = NODE_WEIGHT.get(n.ctor)
    if w is not None:
        return w
    return _G_WEIGHT.get(n.fields[0], 1.0) if n.ctor.startswith("G") else 1.0


def best_nodes(snap: Snapshot, weights: Weights | None = None
               ) -> tuple[dict[int, int], dict[int, float]]:
    """The cheapest (tree cost) e-node of every class: ``(class -> node index, class ->
    cost)``. Ties go to the earlier node (deterministic). Also fills ``snap.height``
    (the height of each class's cheapest term).

    A Dijkstra over the e-nodes: an e-node is pushed once all its children are priced,
    a class is priced by the first of its e-nodes popped; ``best`` lists the classes in
    that order (children before parents)."""
    best, cost, _ = best_nodes_and_parents(snap, weights)
    return best, cost


def best_nodes_and_parents(snap: Snapshot, weights: Weights | None = None,
                           heights: bool = True
                           ) -> tuple[dict[int, int], dict[int, float], dict[int, list[int]]]:
    """:func:`best_nodes`, and the parents it read: class -> the indices of the
    e-nodes (not subsumed) it is a child of, each once, in snapshot order.
    ``heights=False``: ``snap.height`` is left empty (for :class:`BestHeights`, which
    fills it with the heights asked for)."""
    nodes = snap.nodes
    wts = (weights or Weights(snap)).prices()
    parents: defaultdict[int, list[int]] = defaultdict(list)
    # children not priced yet, per e-node (2 for most; a subsumed e-node or a leaf is
    # no one's parent: its count is never read)
    pending = [2] * len(nodes)
    leaves: list[tuple[float, int]] = []
    push_leaf = leaves.append
    i = -1
    for n in nodes:
        i += 1
        if n.subsumed:
            continue
        kids = n.kids
        nk = len(kids)
        if nk == 2:
            a, b = kids
            if a != b:
                parents[a].append(i)
                parents[b].append(i)
            else:
                pending[i] = 1
                parents[a].append(i)
        elif nk == 1:
            pending[i] = 1
            parents[kids[0]].append(i)
        elif nk == 0:
            push_leaf((wts[i], i))
        else:
            ks = set(kids)
            pending[i] = len(ks)
            for k in ks:
                parents[k].append(i)
    # the tree-cost pass the extractors run (:func:`extraction.extract.cheapest_first`),
    # over lists indexed by class (a class is its smallest handle: only the classes of
    # e-nodes are ever read)
    ncls = list(map(_CLS, nodes))
    size = max(ncls) + 1 if ncls else 0
    choice = [-1] * size
    val = [0.0] * size
    order: list[int] = []
    cheapest_first(list(map(_KIDS, nodes)), ncls, parents, wts, choice, val, [True] * size,
                   leaves, pending, order=order)
    best = dict(zip(order, map(choice.__getitem__, order), strict=True))  # (in C)
    cost = dict(zip(order, map(val.__getitem__, order), strict=True))
    height = snap.height
    height.clear()
    if not heights:
        return best, cost, parents
    for c in order:
        kids = nodes[choice[c]].kids
        nk = len(kids)
        if nk == 2:
            a, b = kids
            h0, h1 = height[a], height[b]
            height[c] = 1 + (h0 if h0 >= h1 else h1)
        elif nk == 0:
            height[c] = 1
        elif nk == 1:
            height[c] = 1 + height[kids[0]]
        else:
            height[c] = 1 + max(map(height.__getitem__, kids))
    return best, cost, parents


class BestHeights:
    """``get(c, default)``: the height of class ``c``'s cheapest term (a leaf is 1), or
    ``default`` when it has none; what :func:`best_nodes_and_parents` puts in
    ``snap.height``, computed only for the classes asked about (and the classes of
    their cheapest terms), into ``memo`` (``snap.height``, empty to begin with)."""

    __slots__ = ("nodes", "best", "memo")

    def __init__(self, nodes: list[Node], best: dict[int, int], memo: dict[int, int]):
        self.nodes, self.best, self.memo = nodes, best, memo

    def __repr__(self) -> str:
        return f"<BestHeights {len(self.memo)} of {len(self.best)} classes>"

    def get(self, c: int, default: int = 0) -> int:
        memo = self.memo
        h = memo.get(c)
        if h is not None:
            return h
        best, nodes = self.best, self.nodes
        if c not in best:
            return default
        stack = [c]  # children first (a cheapest term has no cycle)
        while stack:
            k = stack[-1]
            if k in memo:
                stack.pop()
                continue
            kids = nodes[best[k]].kids
            waiting = len(stack)
            for x in kids:  # (a loop: no list made for a class whose children are known)
                if x not in memo:
                    stack.append(x)
            if len(stack) > waiting:
                continue
            stack.pop()
            if not kids:
                memo[k] = 1
            elif len(kids) == 2:
                h0, h1 = memo[kids[0]], memo[kids[1]]
                memo[k] = 1 + (h0 if h0 >= h1 else h1)
            else:
                memo[k] = 1 + max(map(memo.__getitem__, kids))
        return memo[c]
