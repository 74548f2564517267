"""Rewrites with computed right-hand sides, applied between egglog runs.

egglog's own rules are weak at whole-sum arithmetic (no gcd, no usable filter
over a multiset), so the div/mod family, sum canonicalization and sum
recombination read the e-graph (a :class:`~eqsat.egraph.encoding.Snapshot`),
compute each right-hand side in Python and union it into the e-class it
rewrites. Every applicable rule's result is kept (no order, no first match);
the interval analysis in the e-graph guards them and the extractor chooses.

- :class:`EClassCtx` is the div/mod core's ``Ctx`` over the e-graph: atoms are
  e-classes (handles), bounds come from the egglog ``lo``/``hi`` analysis,
  ``mod_parts``/``idiv_parts``/``mul_parts`` list every such e-node of a class,
  and the builders make *pending terms* (tuples), inserted only when a rule
  returns them.
- :class:`LinForms` reads an index e-class as a linear form
  ``sum(coef*atom) + const`` through the cheapest term of each class (a
  bottom-up tree extraction priced by the run's cost model), so every class has
  one well-founded form (no cycles through unions such as ``x == x + 0``).
- :func:`python_pass` applies the selected computed rules to a snapshot, only to
  the classes that changed since the last pass (or whose cheapest term did):
  known constants (``fold``), canonical sums and conjunctions, linear
  comparisons, the basis search over division identities
  (:class:`_BasisSearch`), the one-step lifting of Invalid guards
  (:func:`lift_pass`), guarded copies for ``where(c, x, Invalid)``
  (:func:`context_pass`), baseline rules of families without a native twin
  (:func:`bridge_pass`) and every div/mod core rule.

Safety of the unions: a rule never drops an atom that may be Invalid (``Def``),
never unions a class with a term whose cheapest form contains the class (a
cycle that only feeds rules new constants), and no class takes more than
``MAX_UNIONS_PER_CLASS`` computed unions in one run.
"""

from __future__ import annotations

import gc
import heapq
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from eqsat.egraph.analyses import INT_DTYPES
from eqsat.egraph.encoding import CTOR_OP, CTORS, CTXVAR, Inserter, Node, Snapshot, fits_i64
from eqsat.uop import UOp
from rules.divmod_core import DivModRule, Lin, LinBuilder, SumRule, lin_bounds

__all__ = ["Term", "emit", "EClassCtx", "LinForms", "best_nodes", "PyRule", "python_pass",
           "PassResult", "NODE_WEIGHT"]

INF = math.inf
Term = Any  # int (an e-class handle) or a tuple (ctor, *fields) with Term children

#: computed rewrites unioned into one class at most (a runaway family of rewrites of
#: one class stops here; the first ones are the ones found first, deterministically)
MAX_UNIONS_PER_CLASS = 24
#: e-nodes of a guarded copy x' brought back as alternatives of x per pass
CONTEXT_ALTERNATIVES = 4

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
                 prev: dict[Node, float] | None = None, changed: set[int] | None = None):
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
        else:
            cache, price = self._cache, self._price
            cn = self.snap.consts.get
            lo = self.snap.lo if self.bounds_aware else None
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
                key = (ctor, n.fields[0] if ctor in CTOR_OP else n.fields[:3],
                       tuple([cn(k) for k in kids]),
                       None if lo is None else tuple([lo.get(k) for k in kids]))
                w = cache.get(key)
                append(w if w is not None else price(n))
        self.by_node = dict(zip(nodes, out, strict=True))
        self._list = out
        return out

    def _price(self, n: Node) -> float:
        if self.model is None:
            return node_weight(n)
        ctor = n.ctor
        if ctor in _FREE:
            return 0.0
        snap = self.snap
        kids = n.kids
        cn = snap.const_node_of
        consts = tuple([cn(k) for k in kids])
        if self.bounds_aware:
            lo = snap.lo
            mins = tuple([lo.get(k) for k in kids])
        else:
            mins = None
        key = (ctor, n.fields[0] if ctor in CTOR_OP else n.fields[:3], consts, mins)
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


class LinForms:
    """Linear forms of index e-classes through each class's cheapest e-node."""

    def __init__(self, snap: Snapshot, best: dict[int, int],
                 prev: dict[int, tuple[Node | None, Lin]] | None = None):
        self.snap = snap
        self.best = best
        self._memo: dict[int, Lin] = {}
        #: class -> (its best e-node, its form) as an earlier pass of the run read them:
        #: a form is taken over when the class has the same best e-node (the same Node
        #: object: same row) and its operands' forms are the very objects that form was
        #: made from, i.e. exactly what it would be made again from
        self._prev = prev if prev is not None else {}
        #: the forms made or taken over by this one (``prev`` for the next pass)
        self.made: dict[int, tuple[Node | None, Lin]] = {}

    def __repr__(self) -> str:
        return f"<LinForms {len(self._memo)} forms>"

    def kept(self) -> dict[int, tuple[Node | None, Lin]]:
        """The forms for the next pass: this pass's over the earlier ones."""
        out = dict(self._prev)
        out.update(self.made)
        return out

    def node_lin(self, n: Node) -> Lin | None:
        """The linear form of one e-node, or None when it is not linear arithmetic."""
        c = n.ctor
        if c == "Cst":
            return Lin.constant(n.fields[1])
        if n.dtype != "index":
            return None
        if c == "Add":
            return self.get(n.fields[1]) + self.get(n.fields[2])
        if c == "Sub":
            return self.get(n.fields[1]) - self.get(n.fields[2])
        if c == "Neg":
            return -self.get(n.fields[1])
        if c == "Mul":
            a, b = self.get(n.fields[1]), self.get(n.fields[2])
            if b.is_const:
                return a * b.const
            if a.is_const:
                return b * a.const
        return None

    def forms(self, cls: int, extra: int = 2) -> list[Lin]:
        """The class's linear form and, when its cheapest term is not a sum, up to
        ``extra`` others read through its linear e-nodes (the cheapest term may hide a
        sum: ``(7*b + a)//2`` is also ``3*b + (b + a)//2``)."""
        out = [self.get(cls)]
        bi = self.best.get(cls)
        if bi is None or _lin_kids(self.snap.nodes[bi]):
            return out  # the cheapest term is a sum already: its form is the one
        for i in self.snap.classes.get(cls, ()):
            if len(out) > extra:
                break
            n = self.snap.nodes[i]
            if i == bi or n.subsumed or not _lin_kids(n):
                continue
            if any(k not in self.best for k in _lin_kids(n)):
                continue
            x = self.node_lin(n)
            if x is not None and x not in out:
                out.append(x)
        return out

    def get(self, cls: int) -> Lin:
        """The linear form of class ``cls`` (``1*cls`` when its best term is not linear)."""
        memo = self._memo
        hit = memo.get(cls)
        if hit is not None:
            return hit
        # iterative: walk the best-term skeleton, children first
        best, nodes = self.best, self.snap.nodes
        prev, made = self._prev, self.made
        stack = [cls]
        while stack:
            c = stack[-1]
            if c in memo:
                stack.pop()
                continue
            i = best.get(c)
            n = nodes[i] if i is not None else None
            p = prev.get(c)
            if n is None or n.ctor == "Cst" or n.dtype != "index" or \
                    n.ctor not in _LIN_CTORS:
                if p is not None and p[0] is n:
                    x = p[1]
                elif n is None:
                    x = Lin.atom(c)
                elif n.ctor == "Cst":
                    x = Lin.constant(n.fields[1])
                else:
                    x = Lin.atom(c)
                memo[c] = x
                made[c] = (n, x)
                stack.pop()
                continue
            kids = n.kids
            missing = [k for k in kids if k not in memo]
            if missing:
                stack.extend(missing)
                continue
            if p is not None and p[0] is n and all(
                    (q := prev.get(k)) is not None and q[1] is memo[k] for k in kids):
                x = p[1]
            else:
                res = self.node_lin(n)
                x = res if res is not None else Lin.atom(c)
            memo[c] = x
            made[c] = (n, x)
            stack.pop()
        return memo[cls]


#: the index e-nodes read as linear arithmetic (their children are their operands)
_LIN_CTORS = frozenset(("Add", "Sub", "Mul", "Neg"))


def _lin_kids(n: Node | None) -> tuple[int, ...]:
    if n is None or n.dtype != "index":
        return ()
    if n.ctor in ("Add", "Sub", "Mul"):
        return (n.fields[1], n.fields[2])
    if n.ctor == "Neg":
        return (n.fields[1],)
    return ()


def conjuncts(snap: Snapshot, best: dict[int, int], c: int) -> list[int]:
    """The clauses of a bool class read through its cheapest terms' ``And`` nodes,
    deduplicated and sorted (by class)."""
    out: set[int] = set()
    stack = [c]
    seen: set[int] = set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        i = best.get(k)
        n = snap.nodes[i] if i is not None else None
        if n is not None and n.ctor == "And" and n.fields[0] == "bool":
            stack.extend((n.fields[1], n.fields[2]))
        else:
            out.add(k)
    return sorted(out)


# ---------------------------------------------------------------------------
# pending terms
# ---------------------------------------------------------------------------
def _key(t: Term) -> tuple:
    if isinstance(t, int):
        return (0, t)
    out = []
    for x in t:
        if isinstance(x, int):
            out.append((0, x))
        elif isinstance(x, tuple):
            out.append(_key(x))
        else:
            out.append((2, str(x)))
    return (1, tuple(out))


def emit(t: Term, ins: Inserter, canon: Callable[[int], int] | None = None) -> int:
    """Insert a pending term (memoized per node); its handle. ``canon`` maps a handle
    to its class's current name, so a node that exists is found whatever handle it
    was built from."""
    if isinstance(t, int):
        return canon(t) if canon is not None else t
    fields = list(t)
    for i in _TERM_E[t[0]]:  # children first, left to right
        fields[i] = emit(t[i], ins, canon)
    return ins.node(*fields)


#: the positions (in a pending term, after its constructor) of the e-class fields
_TERM_E = {ctor: tuple(i + 1 for i, c in enumerate(sig) if c == "E") for ctor, sig in CTORS.items()}


def _atoms(t: Term) -> list[int]:
    """The classes a pending term refers to (its own class when it is one)."""
    if not isinstance(t, tuple):
        return [t]
    out = []
    stack = [t]
    while stack:
        x = stack.pop()
        for i in _TERM_E[x[0]]:
            f = x[i]
            if isinstance(f, tuple):
                stack.append(f)
            else:
                out.append(f)
    return out


def _mentions(t: Term, cls: int) -> bool:
    """Whether the pending term ``t`` has the class ``cls`` strictly inside it."""
    if not isinstance(t, tuple):
        return False
    stack = [t]
    while stack:
        x = stack.pop()
        for i in _TERM_E[x[0]]:
            f = x[i]
            if isinstance(f, tuple):
                stack.append(f)
            elif f == cls:
                return True
    return False


def _class_of_handle(snap: Snapshot, h: int) -> int:
    """The class of handle ``h`` in ``snap``; ``h`` itself when it is newer."""
    try:
        return snap.cls_of_handle(h)
    except KeyError:  # a handle made after the snapshot
        return h


def _cval(t: Term) -> int | None:
    return t[2] if isinstance(t, tuple) and t[0] == "Cst" else None


def _class_parts(snap: Snapshot, lins: LinForms, ctor: str, a: int) -> list[tuple[Lin, Lin]]:
    """``[(x, y)]`` of the index ``ctor`` e-nodes of class ``a`` (``x``, ``y`` the
    operands' linear forms; distinct pairs; no products by a constant)."""
    out: list[tuple[Lin, Lin]] = []
    for n in snap.class_nodes(a):
        if n.ctor != ctor or n.subsumed or n.fields[0] != "index" or a in n.fields[1:]:
            continue
        x, y = lins.get(n.fields[1]), lins.get(n.fields[2])
        if ctor == "Mul" and (x.is_const or y.is_const):
            continue
        if (x, y) not in out:
            out.append((x, y))
    return out


class _Memo(dict):
    """A dict that fills a missing key with ``fn(key)`` (``memo[key]`` is the memoized
    call; its bound ``__getitem__`` is as fast as a plain lookup once filled)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Any]):
        super().__init__()
        self.fn = fn

    def __missing__(self, key: Any) -> Any:
        v = self[key] = self.fn(key)
        return v

    def __repr__(self) -> str:
        return f"_Memo({self.fn!r}, {dict(self)!r})"


class EClassCtx(LinBuilder):
    """The div/mod core's ``Ctx`` over an e-graph snapshot (index dtype)."""

    dt = "index"

    def __init__(self, snap: Snapshot, lins: LinForms, terms: dict[Lin, Term] | None = None,
                 keys: dict[Term, tuple] | None = None):
        self.snap = snap
        self.lins = lins
        # a form's term and a term's sort key read nothing of the snapshot (:meth:`sum`
        # orders by key): a run's passes may share them (``terms``, ``keys``)
        self._lins: dict[Lin, Term] = terms if terms is not None else {}
        self._keys: dict[Term, tuple] = keys if keys is not None else {}  # term -> _key
        # the facts, memoized per atom: each query is one dict lookup (a C call) once
        # answered (the rules ask them tens of thousands of times per run); the memos
        # hold no reference to the context (no cycle)
        self.bounds = _Memo(snap.bounds).__getitem__  # type: ignore[method-assign]
        self.mod_parts = _Memo(partial(_class_parts, snap, lins, "Mod")).__getitem__  # type: ignore
        self.idiv_parts = _Memo(partial(_class_parts, snap, lins, "Idiv")).__getitem__  # type: ignore
        self.mul_parts = _Memo(partial(_class_parts, snap, lins, "Mul")).__getitem__  # type: ignore

    # ---- facts (each replaced by a memo of itself per instance) -------------
    def bounds(self, a: int) -> tuple[float, float]:
        return self.snap.bounds(a)

    def mod_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Mod", a)

    def idiv_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Idiv", a)

    def mul_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Mul", a)

    def may_be_invalid(self, a: Any) -> bool:
        """Whether the atom may evaluate to Invalid (not in the e-graph's ``Def``)."""
        return not (isinstance(a, int) and a in self.snap.defined)

    # ---- builders (pending terms, lightly folded) -------------------------
    def atom(self, a: int) -> Term:
        return a

    def lin(self, x: Lin) -> Term:
        """The term of a linear form (memoized: :meth:`sum` orders the terms itself, so
        equal forms give equal terms)."""
        t = self._lins.get(x)
        if t is None:
            t = self._lins[x] = self.sum(list(x.terms), x.const)
        return t

    def const(self, v: int) -> Term:
        if not fits_i64(v):
            raise _UnrepresentableError(v)
        return ("Cst", self.dt, int(v))

    def add(self, a: Term, b: Term) -> Term:
        ca, cb = _cval(a), _cval(b)
        if ca is not None and cb is not None:
            return self.const(ca + cb)
        if cb == 0:
            return a
        if ca == 0:
            return b
        return ("Add", self.dt, a, b)

    def sub(self, a: Term, b: Term) -> Term:
        ca, cb = _cval(a), _cval(b)
        if ca is not None and cb is not None:
            return self.const(ca - cb)
        if cb == 0:
            return a
        if cb is not None:
            return ("Add", self.dt, a, self.const(-cb))
        if ca == 0:
            return self.neg(b)
        return ("Sub", self.dt, a, b)

    def mul(self, a: Term, c: int) -> Term:
        ca = _cval(a)
        if ca is not None:
            return self.const(ca * c)
        if c == 1:
            return a
        if c == 0:
            return self.const(0)
        if c == -1:
            return self.neg(a)
        return ("Mul", self.dt, a, self.const(c))

    def neg(self, a: Term) -> Term:
        ca = _cval(a)
        if ca is not None:
            return self.const(-ca)
        return ("Neg", self.dt, a)

    def idiv(self, a: Term, b: Term) -> Term:
        return ("Idiv", self.dt, a, b)

    def mod(self, a: Term, b: Term) -> Term:
        return ("Mod", self.dt, a, b)

    def sum(self, terms: list[tuple[int, Term]], const: int) -> Term:
        """``sum(c*t) + const`` in the canonical shape: terms ordered by handle,
        positive terms added, negative ones subtracted, the constant added last
        (``k - a - b`` when no term is positive, ``a*-c - b`` when neither is k)."""
        merged: dict[Any, list] = {}
        keys = self._keys
        for c, t in terms:
            if isinstance(t, int):
                k = (0, t)
            else:
                k = keys.get(t)
                if k is None:
                    k = keys[t] = _key(t)
            e = merged.get(k)
            if e is None:
                merged[k] = [c, t]
            else:
                e[0] += c
        items = sorted((k, c, t) for k, (c, t) in merged.items() if c != 0) \
            if len(merged) > 1 else [(k, c, t) for k, (c, t) in merged.items() if c != 0]
        pos = [(c, t) for _, c, t in items if c > 0]
        neg = [(-c, t) for _, c, t in items if c < 0]
        acc: Term | None = None
        for c, t in pos:
            s = self.mul(t, c)
            acc = s if acc is None else self.add(acc, s)
        if acc is None and neg:
            if const:  # k - a - b
                acc, const = self.const(const), 0
            else:  # a*(-c) - b: no negation node
                c, t = neg.pop(0)
                acc = self.mul(t, -c)
        for c, t in neg:
            acc = self.sub(acc, self.mul(t, c))
        if acc is None:
            return self.const(const)
        return self.add(acc, self.const(const)) if const else acc


class _UnrepresentableError(ValueError):
    """A constant outside i64: the rule's result is not inserted."""


# ---------------------------------------------------------------------------
# rules with computed right-hand sides
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PyRule:
    """A computed rewrite: ``apply(state)`` yields ``(class, term)`` pairs to union.

    ``name``/``identity``/``group`` as for every rule; ``kind`` is one of
    ``"divmod"`` (a div/mod core rule), ``"sum"`` (a whole-sum rule) or
    ``"canon"`` (sum canonicalization).
    """

    name: str
    identity: str
    group: str
    kind: str
    rule: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"PyRule({self.name!r}, {self.identity!r}, group={self.group!r})"


@dataclass
class PassResult:
    """What one computed pass did: unions per rule, and whether anything was new."""

    matches: dict[str, int] = field(default_factory=dict)
    unions: int = 0
    skipped: int = 0
    skipped_cap: int = 0
    times: dict[str, float] = field(default_factory=dict)


class PassState:
    """Memory shared by the passes of one run: what was already applied, and what a
    pass may take over from the last one instead of recomputing it (the prices of
    e-nodes whose children did not change, the linear forms of classes whose best
    term reads the same, the terms of linear forms), each exactly what a fresh
    computation gives."""

    def __init__(self) -> None:
        self.done: set[tuple] = set()
        self.contexts: list[Context] = []
        self.unions: dict[int, int] = {}
        self.sigs: dict[str, set] = {}  # the last pass's e-node rows and class facts
        self.prices: dict[Any, float] = {}
        self.node_prices: dict[Node, float] = {}  # the last pass's, by e-node
        self.bridge_cache: dict = {}  # bridge_pass's index of its rules
        self.lins: dict[int, tuple[Node | None, Lin]] = {}  # LinForms.kept() of the last pass
        self.lin_terms: dict[Lin, Term] = {}  # EClassCtx.lin's terms (pure: shared)
        self.term_keys: dict[Term, tuple] = {}  # EClassCtx.sum's sort keys (pure: shared)
        self.ctx_out: dict[int, set[int]] = {}
        self.recorded: set[tuple[int, int]] = set()  # (class, handle) unions recorded

    def __repr__(self) -> str:
        return f"<PassState {len(self.done)} applied, {len(self.contexts)} contexts>"


def fold_pass(snap: Snapshot, dirty: set[int], union: Callable[[int, Term, str], Any],
              name: str) -> None:
    """Union every never-Invalid integer class whose interval is one value with that
    constant (a division counts only when its divisor is never 0)."""
    for c in sorted(dirty):
        v = snap.lo.get(c)
        if v is None or v != snap.hi.get(c) or c not in snap.defined:
            continue
        dt = None
        ok = False
        for n in snap.class_nodes(c):
            if n.ctor == "Cst":
                ok = False
                break
            if n.dtype not in INT_DTYPES:
                continue
            dt = n.dtype
            if n.ctor in ("Idiv", "Mod"):
                dlo, dhi = snap.bounds(n.fields[2])
                ok = ok or dlo > 0 or dhi < 0
            else:
                ok = True
        if ok and dt is not None:
            union(c, ("Cst", dt, v), name)


def _changed(snap: Snapshot, state: PassState) -> set[int]:
    """The classes that differ from the last pass (e-nodes, bounds, Def) or are new."""
    lo, hi, defined = snap.lo, snap.hi, snap.defined
    # the e-nodes (with their class) and the facts of every class: a class changed when
    # one of its e-nodes or facts is not in the last pass's sets, or one of the last
    # pass's is not in this one's
    rows = getattr(snap, "rows", None)  # (cls, ctor, fields, subsumed) per e-node, if kept
    keys = set(rows) if rows is not None else \
        {(n.cls, n.ctor, n.fields, n.subsumed) for n in snap.nodes}
    cls = list(snap.classes)
    facts = set(zip(cls, map(lo.get, cls), map(hi.get, cls), map(defined.__contains__, cls),
                    strict=True))
    old_keys, old_facts = state.sigs.get("nodes", set()), state.sigs.get("facts", set())
    changed = {k[0] for k in keys - old_keys} | {k[0] for k in old_keys - keys}
    changed |= {f[0] for f in facts - old_facts} | {f[0] for f in old_facts - facts}
    changed &= snap.classes.keys()
    state.sigs = {"nodes": keys, "facts": facts}
    return changed


def _dirty(snap: Snapshot, best: dict[int, int], changed: set[int]) -> set[int]:
    """The classes whose cheapest term may read differently since the last pass: the
    class changed, or a class in its best term did."""
    nodes = snap.nodes
    dirty: set[int] = set()
    for c, i in best.items():  # children come before their parents
        if c in changed or not dirty.isdisjoint(nodes[i].kids):
            dirty.add(c)
    return dirty


def _inner_sums(snap: Snapshot, roots: Iterable[int]) -> set[int]:
    """Index classes used only inside other sums (as operands of add/sub/neg or of a
    multiplication by a constant) and not roots: their enclosing sum covers them."""
    lin_use: set[int] = set()
    other_use: set[int] = set(roots)
    const_of = snap.const_of
    lin_ctors = ("Add", "Sub", "Neg")
    for n in snap.nodes:
        kids = n.kids
        if not kids or n.subsumed:
            continue
        if n.dtype == "index" and (n.ctor in lin_ctors or (n.ctor == "Mul" and (
                const_of(kids[0]) is not None or const_of(kids[1]) is not None))):
            lin_use.update(kids)
        else:
            other_use.update(kids)
    return lin_use - other_use


class _InnerSums:
    """``c in inner`` exactly when ``c in _inner_sums(snap, roots)``, read from the
    class's parents (only the classes asked about are read)."""

    def __init__(self, snap: Snapshot, parents: dict[int, list[int]], roots: Iterable[int]):
        self.snap = snap
        self.parents = parents
        self.roots = set(roots)

    def __repr__(self) -> str:
        return f"<_InnerSums of {self.snap!r}>"

    def __contains__(self, c: int) -> bool:
        if c in self.roots:
            return False
        nodes = self.snap.nodes
        const_of = self.snap.const_of
        lin = False
        for p in self.parents.get(c, ()):
            n = nodes[p]
            if n.dtype == "index" and (n.ctor in ("Add", "Sub", "Neg") or (n.ctor == "Mul" and (
                    const_of(n.kids[0]) is not None or const_of(n.kids[1]) is not None))):
                lin = True
            else:
                return False  # an other use
        return lin


def _index_classes(snap: Snapshot) -> list[int]:
    nodes = snap.nodes
    return [c for c, idxs in snap.classes.items() if nodes[idxs[0]].dtype == "index"]


def python_pass(snap: Snapshot, ins: Inserter, rules: list[PyRule], state: PassState,
                deadline: float | None = None, clock: Callable[[], float] | None = None,
                roots: Iterable[int] = (), model: Any = None) -> PassResult:
    """Apply every selected computed rule to the snapshot; record the unions in ``ins``.

    The cyclic garbage collector is paused meanwhile: the pass makes many short-lived,
    acyclic objects (terms, forms), which reference counting frees; collections would
    only rescan the young objects the pass keeps."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _python_pass(snap, ins, rules, state, deadline, clock, roots, model)
    finally:
        if was_enabled:
            gc.enable()


def _python_pass(snap: Snapshot, ins: Inserter, rules: list[PyRule], state: PassState,
                 deadline: float | None, clock: Callable[[], float] | None,
                 roots: Iterable[int], model: Any) -> PassResult:
    res = PassResult()
    _t = [time.perf_counter(), ""]

    def _lap(name: str | None) -> None:
        now = time.perf_counter()
        if _t[1]:
            res.times[_t[1]] = res.times.get(_t[1], 0.0) + now - _t[0]
        _t[0], _t[1] = now, name or ""
    changed = _changed(snap, state)
    # every existing e-node maps to its class: rebuilding one returns the class (the
    # nodes of unchanged classes were registered by an earlier pass)
    memo = ins._memo
    nodes = snap.nodes
    for c in changed:
        for i in snap.classes[c]:
            n = nodes[i]
            memo[(n.ctor, *n.fields)] = c
    _lap('best')
    weights = Weights(snap, model, state.prices, state.node_prices, changed)
    best, _cost, parents = _best_nodes(snap, weights)
    state.node_prices = weights.by_node
    snap.best_cost = _cost  # the engine's stall test reads the roots' best costs
    dirty = _dirty(snap, best, changed)
    lins = LinForms(snap, best, state.lins)
    ctx = EClassCtx(snap, lins, state.lin_terms, state.term_keys)
    canon = [r for r in rules if r.kind == "canon"]
    sums = [r for r in rules if r.kind == "sum"]
    dm = [r for r in rules if r.kind == "divmod"]

    reach_memo: dict[int, dict[int, bool]] = {}
    height = snap.height

    # handle -> its class now (a handle made during this pass is its own class)
    canon_h = _Memo(partial(_class_of_handle, snap)).__getitem__
    node_memo = ins._memo  # (ctor, *fields) -> handle: what ins.node finds
    new_node = ins.node

    def emit_m(t: Term) -> int:
        """Insert a pending term; its handle (its children by their classes now, so
        an existing e-node is found whatever handles the term was built from)."""
        if isinstance(t, int):
            return canon_h(t)
        pos = _TERM_E[t[0]]
        if not pos:  # a leaf (a constant): the term is its key
            h = node_memo.get(t)
            return h if h is not None else new_node(*t)
        fields = list(t)
        for i in pos:
            f = t[i]
            fields[i] = canon_h(f) if isinstance(f, int) else emit_m(f)
        h = node_memo.get(tuple(fields))
        return h if h is not None else new_node(*fields)

    def union(cls: int, t: Term, name: str) -> bool:
        """Union ``t`` into ``cls``; False when refused (a cycle, the cap, a constant
        outside i64), True when recorded or already there."""
        # x == f(x) where f's term holds x: a cycle that only feeds rules new constants
        # (an atom no taller than cls cannot hold cls in its best term)
        hc = height.get(cls, 0)
        memo = None
        for a in _atoms(t):
            a = canon_h(a)
            if a == cls:
                return False
            if height.get(a, 0) > hc:
                if memo is None:
                    memo = reach_memo.setdefault(cls, {})
                if _reaches(snap, best, a, {cls}, memo):
                    return False
        if state.unions.get(cls, 0) >= MAX_UNIONS_PER_CLASS:
            res.skipped_cap += 1
            return False
        try:
            h = emit_m(t)
        except _UnrepresentableError:
            return False
        if h != cls:
            # a union this run recorded already is in the e-graph: no second row (it
            # counts as before: matches and the per-class cap are unchanged)
            if (cls, h) not in state.recorded:
                state.recorded.add((cls, h))
                ins.union(cls, h)
            res.unions += 1
            res.matches[name] = res.matches.get(name, 0) + 1
            state.unions[cls] = state.unions.get(cls, 0) + 1
        return True

    cbounds = ctx.bounds  # snap.bounds, memoized

    def bkey(x: Lin) -> tuple:
        return tuple([cbounds(a) for _, a in x.terms])

    defined = snap.defined

    def all_def(x: Lin) -> bool:
        for _, a in x.terms:  # (a loop: no generator per call)
            if a not in defined:
                return False
        return True

    basis = [r for r in rules if r.kind == "basis"]
    searcher: _BasisSearch | None = None
    _lap('sums')
    if canon or sums or basis:
        inner = _InnerSums(snap, parents, roots)
        for c in _index_classes(snap):
            if c not in dirty or c in inner:
                continue
            if deadline is not None and clock is not None and clock() > deadline:
                res.skipped += 1
                break
            x = lins.get(c)
            if x.single_atom == c or c not in defined or not all_def(x):
                continue
            for r in canon:
                key = ("canon", c, x)
                if key in state.done:
                    continue
                state.done.add(key)
                try:
                    union(c, ctx.lin(x), r.name)
                    # and factored by the terms' common factor: g*(a + b) + k
                    g = x.content()
                    if len(x.terms) >= 2 and g > 1:
                        core = Lin(tuple((f // g, a) for f, a in x.terms), 0)
                        union(c, ctx.add(ctx.mul(ctx.lin(core), g), ctx.const(x.const)),
                              r.name)
                except _UnrepresentableError:
                    pass
            if len(x.terms) >= 2 and basis:
                key = ("basis", c, x, bkey(x))
                if key not in state.done:
                    state.done.add(key)
                    if searcher is None:
                        searcher = _BasisSearch(snap, best, ctx, ins, weights)
                    try:
                        nx = searcher.search(x, deadline)
                        if nx is not None:
                            union(c, ctx.lin(nx), basis[0].name)
                    except _UnrepresentableError:
                        pass
            if len(x.terms) >= 2:
                for r in sums:
                    key = (r.name, c, x, bkey(x))
                    if key in state.done:
                        continue
                    state.done.add(key)
                    try:
                        out = r.rule.fn(x, ctx)
                    except _UnrepresentableError:
                        continue
                    if out is not None:
                        union(c, out, r.name)
    _lap('fold')
    if any(r.kind == "fold" for r in rules):
        name = next(r.name for r in rules if r.kind == "fold")
        fold_pass(snap, dirty, union, name)
    _lap('and')
    for r in [r for r in rules if r.kind == "canon_and"]:
        for c, i in best.items():
            if c not in dirty:
                continue
            n = snap.nodes[i]
            if n.ctor != "And" or n.fields[0] != "bool":
                continue
            clauses = conjuncts(snap, best, c)
            key = ("and", c, tuple(clauses))
            if key in state.done:
                continue
            state.done.add(key)
            t: Term = clauses[0]
            for k in clauses[1:]:
                t = ("And", "bool", t, k)
            union(c, t, r.name)
    _lap('cmp')
    for r in [r for r in rules if r.kind == "cmp"]:
        cmp_pass(snap, lins, ctx, state, r.name, union, dirty)
    _lap('lift')
    for r in [r for r in rules if r.kind == "lift"]:
        lift_pass(snap, ins, best, state, r.name, union, dirty)
    _lap('context')
    for r in [r for r in rules if r.kind == "context"]:
        context_pass(snap, ins, best, _cost, lins, ctx, state, r.name, union, dirty, weights)
    _lap('bridge')
    bridged = [r for r in rules if r.kind in ("uop", "uop_nonint")]
    if bridged:
        bridge_pass(snap, ins, best, dirty, bridged, union, deadline, state.bridge_cache)
    dm_by_op = divmod_rules_by_op(dm)

    def divmod_rules(n: Node, op: str, x: Lin, y: Lin) -> None:
        for name, t in divmod_rewrites(dm_by_op, op, x, y, ctx):
            union(n.cls, t, name)

    _lap('divmod')
    if dm:
        for n in snap.nodes:
            if n.ctor not in ("Idiv", "Mod") or n.subsumed or n.fields[0] != "index":
                continue
            if n.cls not in dirty and n.fields[1] not in dirty and n.fields[2] not in dirty:
                continue
            if deadline is not None and clock is not None and clock() > deadline:
                res.skipped += 1
                continue
            op = "idiv" if n.ctor == "Idiv" else "mod"
            y = lins.get(n.fields[2])
            for x in lins.forms(n.fields[1]):
                if not (all_def(x) and all_def(y)):
                    continue  # a rule may drop an atom: never drop a possible Invalid
                key = ("dm", n.cls, op, x, y, bkey(x), bkey(y))
                if key in state.done:
                    continue
                state.done.add(key)
                divmod_rules(n, op, x, y)
    _lap(None)
    state.lins = lins.kept()
    return res


# ---------------------------------------------------------------------------
# guarded subterms: simplify x in where(c, x, f) assuming c
# ---------------------------------------------------------------------------
@dataclass
class Context:
    """``where(c, x, f)`` with ``x`` copied as ``x'`` over context variables.

    ``fresh`` maps each context variable's handle to the term it stands for (an
    atom class whose bounds the clauses of ``c`` narrow, or a constrained sum of
    atoms, one of which ``x'`` has eliminated); ``xh`` is the handle
    of ``x'``. Whatever ``x'`` simplifies to, with the variables put back, equals
    ``x`` wherever ``c`` holds.
    """

    where_h: int
    dt: str
    c: int
    f: int
    x: int
    xh: int
    fresh: dict[int, Term]
    #: (x' class, where class, variables' classes) of the last close whose unions all
    #: went in (or were there): with nothing of it dirty, closing again changes nothing
    closed: tuple | None = field(default=None, repr=False, compare=False)


def _cmp_constraints(snap: Snapshot, lins: LinForms, n: Node, negate: bool) -> list[Lin]:
    """``[L, ...]`` with ``n`` (or its negation) equivalent to every ``L <= 0``."""
    c = n.ctor
    if c not in ("Lt", "Le", "Gt", "Ge", "Eq", "Ne"):
        return []
    a, b = n.fields[1], n.fields[2]
    if _class_dtype(snap, a) != "index" or _class_dtype(snap, b) != "index":
        return []
    if negate:
        c = {"Lt": "Ge", "Le": "Gt", "Gt": "Le", "Ge": "Lt", "Eq": "Ne", "Ne": "Eq"}[c]
    la, lb = lins.get(a), lins.get(b)
    if c == "Lt":
        return [la - lb + 1]
    if c == "Le":
        return [la - lb]
    if c == "Gt":
        return [lb - la + 1]
    if c == "Ge":
        return [lb - la]
    if c == "Eq":
        return [la - lb, lb - la]
    return []


def _class_dtype(snap: Snapshot, c: int) -> str | None:
    return snap.dtypes.get(c)


def clause_bounds(snap: Snapshot, lins: LinForms, clauses: Iterable[int]
                  ) -> tuple[dict[int, tuple[int, int]], list[Lin]]:
    """Atom -> (lo, hi) implied by the clauses (each a bool class that holds), where
    tighter than the atom's own bounds; and the constraints (``L <= 0`` each)."""
    cons: list[Lin] = []
    for k in clauses:
        for n in snap.class_nodes(k):
            if n.subsumed:
                continue
            if n.ctor == "Not":
                for m in snap.class_nodes(n.fields[1]):
                    if not m.subsumed:
                        cons.extend(_cmp_constraints(snap, lins, m, True))
            else:
                cons.extend(_cmp_constraints(snap, lins, n, False))
    bounds: dict[int, list[float]] = {}

    def bnd(a: int) -> list[float]:
        b = bounds.get(a)
        if b is None:
            b = bounds[a] = list(snap.bounds(a))
        return b

    for _ in range(2):
        for con in cons:
            for ca, a in con.terms:
                rest_lo: float = con.const
                for cb, b in con.terms:
                    if b == a:
                        continue
                    lo, hi = bnd(b)
                    rest_lo += cb * lo if cb > 0 else cb * hi
                if math.isinf(rest_lo):
                    continue
                lim = -int(rest_lo)  # ca*a <= lim
                ba = bnd(a)
                if ca > 0:
                    ba[1] = min(ba[1], lim // ca)
                else:
                    ba[0] = max(ba[0], -(lim // -ca))
    out = {}
    for a, (lo, hi) in bounds.items():
        olo, ohi = snap.bounds(a)
        if (lo > olo or hi < ohi) and lo <= hi and not (math.isinf(lo) or math.isinf(hi)):
            out[a] = (int(lo), int(hi))
    return out, cons


def expr_bounds(snap: Snapshot, cons: list[Lin]) -> dict[Lin, tuple[int, int]]:
    """Sums of two or more atoms -> the (lo, hi) the constraints give them, where
    tighter than the atoms' bounds (each sum sign-normalized: first coefficient > 0)."""
    acc: dict[Lin, list[float]] = {}
    for con in cons:
        if len(con.terms) < 2:
            continue
        e = Lin(tuple(sorted(con.terms, key=lambda t: t[1])), 0)
        k = con.const
        b = acc.setdefault(e if e.terms[0][0] > 0 else -e, [-INF, INF])
        if e.terms[0][0] > 0:  # e + k <= 0
            b[1] = min(b[1], -k)
        else:  # -(e') + k <= 0 -> e' >= k
            b[0] = max(b[0], k)
    out = {}
    for e, (lo, hi) in acc.items():
        nlo: float = 0
        nhi: float = 0
        for c, a in e.terms:
            alo, ahi = snap.bounds(a)
            nlo += c * alo if c > 0 else c * ahi
            nhi += c * ahi if c > 0 else c * alo
        lo, hi = max(lo, nlo), min(hi, nhi)
        if (lo > nlo or hi < nhi) and lo <= hi and not (math.isinf(lo) or math.isinf(hi)):
            out[e] = (int(lo), int(hi))
    return out


def _reaches(snap: Snapshot, best: dict[int, int], cls: int, targets: set[int] | None,
             memo: dict[int, bool], pred: Callable[[Node], bool] | None = None) -> bool:
    """Whether the best term of ``cls`` mentions a class in ``targets`` (or a node
    satisfying ``pred``)."""
    hit = memo.get(cls)
    if hit is not None:
        return hit
    stack = [(cls, False)]
    while stack:
        c, done = stack.pop()
        if c in memo and not done:
            continue
        i = best.get(c)
        n = snap.nodes[i] if i is not None else None
        kids = n.kids if n is not None else ()
        if not done:
            if (targets is not None and c in targets) or (pred is not None and n is not None
                                                          and pred(n)):
                memo[c] = True
                continue
            memo[c] = False  # provisional (cycles cannot occur in a best tree)
            stack.append((c, True))
            stack.extend((k, False) for k in kids if k not in memo)
            continue
        memo[c] = any(memo.get(k, False) for k in kids)
    return memo[cls]


def _best_closure(snap: Snapshot, best: dict[int, int], cls: int) -> set[int]:
    """The classes the best term of ``cls`` mentions, ``cls`` included (``a`` in it
    exactly when ``_reaches(snap, best, cls, {a}, {})``)."""
    out = {cls}
    stack = [cls]
    nodes = snap.nodes
    while stack:
        i = best.get(stack.pop())
        if i is None:
            continue
        for k in nodes[i].kids:
            if k not in out:
                out.add(k)
                stack.append(k)
    return out


def _rebuild(snap: Snapshot, best: dict[int, int], cls: int, subst: dict[int, Term],
             memo: dict[int, Term], reach: dict[int, bool]) -> Term:
    """The best term of ``cls`` with the classes of ``subst`` replaced."""
    if cls in subst:
        return subst[cls]
    hit = memo.get(cls)
    if hit is not None:
        return hit
    r = reach.get(cls)
    if r is None:
        r = _reaches(snap, best, cls, set(subst), reach)
    if not r:
        return cls
    n = snap.nodes[best[cls]]
    fields = [n.ctor, *n.fields]
    for i in _TERM_E[n.ctor]:  # left to right
        fields[i] = _rebuild(snap, best, fields[i], subst, memo, reach)
    t = memo[cls] = tuple(fields)
    return t


def _is_ctxvar(n: Node) -> bool:
    return n.ctor == "Leaf" and n.fields[0] == CTXVAR


def _is_invalid(snap: Snapshot, c: int) -> bool:
    return any(n.ctor == "Leaf" and n.fields[0] == "INVALID" for n in snap.class_nodes(c))


def context_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], cost: dict[int, float],
                 lins: LinForms, ectx: EClassCtx, state: PassState, name: str,
                 union: Callable[[int, Term, str], Any], dirty: set[int],
                 weights: Weights) -> None:
    """Open contexts for new ``where(c, x, Invalid)`` nodes; close the ones whose
    ``x'`` became cheaper than ``x`` (union ``where(c, x'[vars -> atoms], f)``)."""
    # open
    for n in snap.nodes:
        if n.ctor != "Where" or n.subsumed or n.fields[0] != "index":
            continue
        if n.cls not in dirty and not any(k in dirty for k in n.kids):
            continue
        c, x, f = n.fields[1], n.fields[2], n.fields[3]
        if not _is_invalid(snap, f) or x not in snap.defined:
            continue
        # one guarded copy per where-node and cheapest form of its x (the copy evolves
        # with the e-graph; a better x gets a fresh copy); where-nodes that a copy
        # brought back open none (they would only copy the copy again). Checked before
        # the clauses are read: nothing below changes either.
        if x in state.ctx_out.get(n.cls, ()):
            continue
        bx = best.get(x)
        key = ("ctx", n.cls, c, x, None if bx is None else (snap.nodes[bx].ctor,
                                                           snap.nodes[bx].fields))
        if key in state.done:
            continue
        clauses = conjuncts(snap, best, c)
        nb, cons = clause_bounds(snap, lins, clauses)
        eb = expr_bounds(snap, cons)
        if not nb and not eb:
            continue
        reach: dict[int, bool] = {}
        in_x = _best_closure(snap, best, x)  # the classes x's best term mentions
        present = tuple(sorted(a for a in nb if a in in_x))
        # a constrained sum: eliminate one of its unit-coefficient atoms that x mentions
        elim: list[tuple[Lin, int, int, tuple[int, int]]] = []
        used = set(present)
        for e, b in sorted(eb.items(), key=lambda t: str(t[0])):
            for ce, a in e.terms:
                if abs(ce) == 1 and a not in used and a in in_x:
                    elim.append((e, ce, a, b))
                    used.add(a)
                    break
        # a narrowed remainder m = z % k whose dividend z (not m) is in x: write z in
        # its digits, z == k*(z//k) + m, with m the variable
        digits: list[tuple[int, int, int, tuple[int, int]]] = []
        for a in sorted(nb):
            if a in used:
                continue
            for zl, kl in ectx.mod_parts(a):
                z = zl.single_atom
                if z is None or (z in used and z not in present) or not kl.is_const or \
                        kl.const <= 0 or any(z == d[1] for d in digits):
                    continue
                if z in in_x:
                    digits.append((a, z, kl.const, nb[a]))
                    used.update((a, z))
                    break
        if not present and not elim and not digits:
            continue
        state.done.add(key)
        if _reaches(snap, best, x, None, {}, _is_ctxvar):
            continue  # x's best term already holds context variables: not ours
        fresh_terms: dict[int, Term] = {}
        fresh: dict[int, Term] = {}

        def var(tag: Any, lo: int, hi: int, w: int = n.cls) -> int:
            h = ins.node("Leaf", CTXVAR, "index", ins.args.key(("ctx", w, tag, lo, hi)))
            ins._row("RLo", (h, lo))
            ins._row("RHi", (h, hi))
            return h

        digit_of = {d[1] for d in digits}
        for a in present:
            if a in digit_of:
                continue  # written in its digits below
            h = var(a, *nb[a])
            fresh_terms[a] = h
            fresh[h] = a
        try:
            for e, ce, a, (lo, hi) in elim:
                h = var(("sum", e), lo, hi)
                rest = e - Lin.atom(a, ce)
                # e == v  ->  a == ce*(v - rest)
                fresh_terms[a] = ectx.lin(Lin.of([(ce, h)]) - rest * ce)
                fresh[h] = ectx.lin(e)
            for a, z, k, (lo, hi) in digits:
                h = var(("digit", a), lo, hi)
                q: Term = ectx.idiv(z, ectx.const(k))
                kc = ins._memo.get(("Cst", "index", k))
                qc = ins._memo.get(("Idiv", "index", z, kc)) if kc is not None else None
                zlo, zhi = nb.get(z, snap.bounds(z))
                if qc is not None and qc in fresh_terms:  # the quotient has its variable
                    q = fresh_terms[qc]
                elif z in nb and zlo >= 0:  # z narrowed too: so is its quotient
                    qh = var(("quot", z, k), int(zlo) // k, int(zhi) // k)
                    fresh[qh] = q
                    q = qh
                fresh_terms[z] = ectx.add(ectx.mul(q, k), h)
                fresh[h] = a
        except _UnrepresentableError:
            continue
        xt = _rebuild(snap, best, x, fresh_terms, {}, reach)
        xh = emit(xt, ins)
        state.contexts.append(Context(n.cls, n.fields[0], c, f, x, xh, fresh))
    # close: the few cheapest e-nodes of x' (children by their best terms), each with
    # the context variables put back, as alternatives for x under c; the extractor
    # prices them where they are used (x' itself sees only the narrowed bounds)
    wt = weights.of

    refused = [False]

    def _close(wc: int, ctx: Context, t: Term) -> None:
        try:
            th = emit(t, ins)
        except _UnrepresentableError:
            return
        for c in (wc, ctx.where_h):
            state.ctx_out.setdefault(c, set()).add(th)
        if union(wc, ("Where", ctx.dt, ctx.c, th, ctx.f), name) is False:
            refused[0] = True

    for ctx in state.contexts:
        try:
            xc = snap.cls_of_handle(ctx.xh)
            wc = snap.cls_of_handle(ctx.where_h)
            fresh_cls = {snap.cls_of_handle(h): t for h, t in ctx.fresh.items()}
        except KeyError:
            continue
        sig = (xc, wc, tuple(fresh_cls))
        if ctx.closed == sig and not _close_dirty(snap, ctx, sig, dirty):
            continue  # what it reads is as it was: it would union what it did
        ctx.closed = None
        refused[0] = False
        _close_one(snap, ctx, xc, wc, fresh_cls, best, cost, wt, _close)
        if not refused[0]:
            ctx.closed = sig


def _close_dirty(snap: Snapshot, ctx: Context, sig: tuple, dirty: set[int]) -> bool:
    """Whether anything a context's close reads may differ since its last close: its
    classes, the variables' classes, the children of x''s e-nodes."""
    xc, wc, fresh = sig
    if xc in dirty or wc in dirty or ctx.x in dirty or any(c in dirty for c in fresh):
        return True
    nodes = snap.nodes
    return any(k in dirty for i in snap.classes.get(xc, ()) for k in nodes[i].kids)


def _close_one(snap: Snapshot, ctx: Context, xc: int, wc: int, fresh_cls: dict[int, Term],
               best: dict[int, int], cost: dict[int, float], wt: Callable[[int], float],
               _close: Callable[[int, Context, Term], None]) -> None:
    """Close one context (see :func:`context_pass`)."""
    limit = cost.get(ctx.x, INF)
    if xc not in cost or cost[xc] > limit:
        return
    own = frozenset(fresh_cls)

    def foreign(m: Node, own: frozenset[int] = own) -> bool:
        return _is_ctxvar(m) and m.cls not in own

    if xc in fresh_cls:  # x' is one of its own variables: x is what it stands for
        t0 = fresh_cls[xc]
        if not _mentions(t0, wc):
            _close(wc, ctx, t0)
    cands = []
    for i in snap.classes.get(xc, ()):
        n = snap.nodes[i]
        if n.subsumed or any(k not in cost for k in n.kids) or _is_ctxvar(n):
            continue
        c = wt(i) + sum(cost[k] for k in n.kids)
        if c <= limit * 1.5 + 4:
            cands.append((c, i))
    cands.sort()
    reach: dict[int, bool] = {}
    # one substitution for every candidate: its rebuilt terms and reach memo are shared
    sub = dict(fresh_cls)
    memo: dict[int, Term] = {}
    sub_reach: dict[int, bool] = {}
    for _c, i in cands[:CONTEXT_ALTERNATIVES]:
        n = snap.nodes[i]
        if any(_reaches(snap, best, k, None, reach, foreign) for k in n.kids):
            continue  # a foreign context variable: cannot be put back
        fields = [n.ctor, *n.fields]
        for j in _TERM_E[n.ctor]:  # left to right
            fields[j] = _rebuild(snap, best, fields[j], sub, memo, sub_reach)
        t = tuple(fields)
        if _mentions(t, wc):
            continue
        _close(wc, ctx, t)


# ---------------------------------------------------------------------------
# comparisons of linear forms
# ---------------------------------------------------------------------------
def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def cmp_rewrites(x: Lin, ctx: EClassCtx) -> list[Term]:
    """``x < 0`` (``x`` a linear form) rewritten: divided by the gcd of its
    coefficients (``4*a + 30 < 0 -> a < -7``), a simplex of non-negative terms
    (``2*a + b < 1 -> a + b < 1``), and with a small remainder split off
    (``d*A + B < c -> A < ceil((c - max B)/d)`` when no multiple of ``d`` falls where
    ``B`` would decide, e.g. ``4*a + b < 8 -> a < 2`` for ``b`` in ``[0, 3]``)."""
    out: list[Term] = []
    if not x.terms:
        return out
    c0 = -x.const  # sum(terms) < c0

    def emit_lt(terms: list[tuple[int, int]], bound: int) -> None:
        if all(c < 0 for c, _ in terms):  # -S < b  ->  -b < S
            out.append(("Lt", "bool", ctx.const(-bound),
                        ctx.lin(Lin(tuple((-c, a) for c, a in terms), 0))))
        else:
            out.append(("Lt", "bool", ctx.lin(Lin(tuple(terms), 0)), ctx.const(bound)))

    g = x.content()
    if g > 1:
        emit_lt([(c // g, a) for c, a in x.terms], _ceil_div(c0, g))
    # a simplex: a0*x0 + a1*x1 + ... < c with every ai > 0, xi >= 0 and 0 < c <= min ai
    # holds exactly when every xi is 0, i.e. x0 + x1 + ... < 1
    if len(x.terms) > 1 and all(c > 0 and ctx.bounds(a)[0] >= 0 for c, a in x.terms) and \
            0 < c0 <= min(c for c, _ in x.terms) and any(c != 1 for c, _ in x.terms):
        emit_lt([(1, a) for _, a in x.terms], 1)
    for d in sorted({abs(c) for c, _ in x.terms}):
        if d <= 1 or d == g:
            continue
        big = [(c, a) for c, a in x.terms if c % d == 0]
        small = [(c, a) for c, a in x.terms if c % d != 0]
        if not big or not small:
            continue
        blo, bhi = lin_bounds(Lin(tuple(small), 0), ctx)
        if math.isinf(blo) or math.isinf(bhi) or bhi - blo >= d:
            continue
        blo, bhi = int(blo), int(bhi)
        # decided by A alone unless some d*A lies in [c0 - bhi, c0 - blo - 1]
        if _ceil_div(c0 - bhi, d) <= (c0 - blo - 1) // d:
            continue
        emit_lt([(c // d, a) for c, a in big], _ceil_div(c0 - bhi, d))
    return out


def cmp_pass(snap: Snapshot, lins: LinForms, ctx: EClassCtx, state: PassState, name: str,
             union: Callable[[int, Term, str], Any], dirty: set[int]) -> None:
    """Rewrite every index comparison ``a < b`` through :func:`cmp_rewrites`."""
    defined = snap.defined
    for n in snap.nodes:
        if n.ctor != "Lt" or n.subsumed:
            continue
        a, b = n.fields[1], n.fields[2]
        if n.cls not in dirty and a not in dirty and b not in dirty:
            continue
        if _class_dtype(snap, a) != "index":
            continue
        x = lins.get(a) - lins.get(b)
        if not all(t in defined for _, t in x.terms):
            continue
        key = ("cmp", n.cls, x, tuple(snap.bounds(t) for _, t in x.terms))
        if key in state.done:
            continue
        state.done.add(key)
        try:
            for t in cmp_rewrites(x, ctx):
                union(n.cls, t, name)
        except _UnrepresentableError:
            continue


# ---------------------------------------------------------------------------
# a cheaper basis for sums of quotients and remainders
# ---------------------------------------------------------------------------
_MISSING = object()


class _BasisSearch:
    """Rewrite a sum through the division identities ``x == n*(x//n) + x%n``.

    Every quotient or remainder atom of a sum brings its identity; eliminating
    one term of an identity from the sum (``30*(y//3) -> 10*y - 10*(y%3)``,
    ``f*(x%n) -> f*x - f*n*(x//n)``) changes the basis the sum is written in. A
    small beam search over such steps keeps the sum whose estimated cost (the
    DAG of its atoms' cheapest terms, reference weights, plus its own
    multiplications and additions) is lowest: ``30*(r//30) + r%10 -
    10*((r//10)%3)`` becomes ``r - 20*((r//10)%3)``. Exact under C for every value.
    """

    BEAM = 6
    DEPTH = 3
    MAX_TERMS = 48

    def __init__(self, snap: Snapshot, best: dict[int, int], ctx: EClassCtx, ins: Inserter,
                 weights: Weights):
        self.snap, self.best, self.ctx, self.ins = snap, best, ctx, ins
        self.weights = weights
        self._closure: dict[int, frozenset[int]] = {}
        self._rel: dict[Any, list[Lin]] = {}
        self._resolved: dict[Any, int | None] = {}
        self._parts_memo: dict[Any, tuple[list[frozenset[int]], list[float]]] = {}
        self._class_w: dict[int, Any] = {}  # class -> its best e-node's price (None: no best)

    def closure(self, c: int) -> frozenset[int]:
        hit = self._closure.get(c)
        if hit is not None:
            return hit
        out = set()
        stack = [c]
        while stack:
            k = stack.pop()
            if k in out:
                continue
            out.add(k)
            i = self.best.get(k)
            if i is not None:
                stack.extend(self.snap.nodes[i].kids)
        res = self._closure[c] = frozenset(out)
        return res

    def resolve(self, t: Term) -> int | None:
        """The class a pending term already is, without inserting anything."""
        if isinstance(t, int):
            return t
        hit = self._resolved.get(t, _MISSING)
        if hit is not _MISSING:
            return hit
        res = self._resolve(t)
        self._resolved[t] = res
        return res

    def _resolve(self, t: Term) -> int | None:
        fields = list(t)
        for i in _TERM_E[t[0]]:  # left to right: the first unknown child stops it
            k = self.resolve(t[i])
            if k is None:
                return None
            fields[i] = k
        return self.ins._memo.get(tuple(fields))

    def _atom_parts(self, a: Any) -> tuple[list[frozenset[int]], list[float]]:
        """What one atom of a sum adds to :meth:`cost`, in order: the closures of the
        classes its term is made of, and the prices of its nodes not yet in the e-graph."""
        hit = self._parts_memo.get(a)
        if hit is not None:
            return hit
        closures: list[frozenset[int]] = []
        prices: list[float] = []
        k = self.resolve(a)
        if k is not None:
            closures.append(self.closure(k))
        else:  # a new node: its own weight plus its operands' terms
            stack = [a]
            while stack:
                t = stack.pop()
                k = self.resolve(t)
                if k is not None:
                    closures.append(self.closure(k))
                    continue
                kc = tuple(_cval(f) if isinstance(f, tuple) else self.snap.const_of(f)
                           for f, sg in zip(t[1:], CTORS[t[0]], strict=True) if sg == "E")
                prices.append(self.weights.pending(t[0], kc))
                stack.extend(f for f, sg in zip(t[1:], CTORS[t[0]], strict=True) if sg == "E")
        res = self._parts_memo[a] = (closures, prices)
        return res

    def cost(self, s: Lin) -> float:
        classes: set[int] = set()
        extra = 0.0
        for _, a in s.terms:
            closures, prices = self._atom_parts(a)
            for c in closures:
                classes |= c
            for p in prices:
                extra += p
        cw = self._class_w
        vals = []
        for k in classes:
            w = cw.get(k, _MISSING)
            if w is _MISSING:
                i = self.best.get(k)
                w = cw[k] = None if i is None else self.weights.of(i)
            if w is not None:
                vals.append(w)
        total = extra + sum(vals)
        total += sum(4.0 for c, _ in s.terms if abs(c) != 1)
        total += max(0, len(s.terms) - 1) + (1 if s.const else 0)
        return total

    def relations(self, a: Any) -> list[Lin]:
        """``x - n*q - m`` (== 0) for each ``q = x//n``, ``m = x%n`` the atom is part of."""
        hit = self._rel.get(a)
        if hit is not None:
            return hit
        out: list[Lin] = []
        k = self.resolve(a)
        if k is not None and k in self.snap.defined:
            ctx = self.ctx
            for op, parts in (("idiv", ctx.idiv_parts(k)), ("mod", ctx.mod_parts(k))):
                for x, y in parts:
                    if not y.is_const or y.const == 0 or not fits_i64(y.const):
                        continue
                    n = y.const
                    xt = ctx.lin(x)
                    if op == "idiv":
                        q, m = k, ctx.mod(xt, ctx.const(n))
                        m = self.resolve(m) if self.resolve(m) is not None else m
                    else:
                        q = self.quotient(x, n)
                        m = k
                    out.append(x - Lin.of([(n, q), (1, m)]))
        self._rel[a] = out
        return out

    def quotient(self, x: Lin, n: int) -> Term:
        """``x // n`` as an existing class when there is one, also as ``z // (m*n)``
        for ``x == z // m`` (nested truncating divisions by constants compose)."""
        ctx = self.ctx
        t = ctx.idiv(ctx.lin(x), ctx.const(n))
        k = self.resolve(t)
        if k is not None:
            return k
        a = x.single_atom
        if a is not None and isinstance(a, int):
            for z, m in ctx.idiv_parts(a):
                if m.is_const and m.const != 0 and fits_i64(m.const * n):
                    k = self.resolve(ctx.idiv(ctx.lin(z), ctx.const(m.const * n)))
                    if k is not None:
                        return k
        return t

    def worth(self, s: Lin) -> bool:
        """Whether a basis change can pay: two or more quotient/remainder terms."""
        n = 0
        for _, a in s.terms:
            if isinstance(a, int) and (self.ctx.idiv_parts(a) or self.ctx.mod_parts(a)):
                n += 1
                if n >= 2:
                    return True
        return False

    def search(self, s: Lin, deadline: float | None = None) -> Lin | None:
        if not self.worth(s) or len(s.terms) > self.MAX_TERMS:
            return None
        start = self.cost(s)
        seen = {s}
        beam = [(start, s)]
        best_cost, best = start, None
        for _ in range(self.DEPTH):
            if deadline is not None and time.perf_counter() > deadline:
                break
            cand: list[tuple[float, Lin]] = []
            for _c, cur in beam:
                for _, a in cur.terms:
                    for rel in self.relations(a):
                        # an identity pays only if it links this term to another of the sum
                        if sum(1 for _, t in rel.terms if cur.coef(t)) < 2:
                            continue
                        for _, t in rel.terms:
                            cs, cr = cur.coef(t), rel.coef(t)
                            if cs == 0 or cs % cr:
                                continue
                            nxt = cur + rel * -(cs // cr)  # == cur - rel*(cs//cr)
                            if nxt in seen:
                                continue
                            seen.add(nxt)
                            cand.append((self.cost(nxt), nxt))
            if not cand:
                break
            beam = _first_by_cost(cand, self.BEAM)
            if beam[0][0] < best_cost - 0.5:
                best_cost, best = beam[0]
        return best


def _first_by_cost(cand: list[tuple[float, Lin]], k: int) -> list[tuple[float, Lin]]:
    """The first ``k`` of ``cand`` sorted by ``(cost, str(form))``; the forms' strings
    are made only for the ties that reach the first ``k``."""
    cand.sort(key=lambda t: t[0])
    out: list[tuple[float, Lin]] = []
    i = 0
    while i < len(cand) and len(out) < k:
        j = i + 1
        while j < len(cand) and cand[j][0] == cand[i][0]:
            j += 1
        run = cand[i:j]
        if len(run) > 1:
            run.sort(key=lambda t: str(t[1]))
        out.extend(run)
        i = j
    return out[:k]


_INVALID = object()  # lift(): the class is the bare Invalid


def lift_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], state: PassState,
              name: str, union: Callable[[int, Term, str], Any], dirty: set[int]) -> None:
    """Lift every Invalid guard of an index term to its top, in one step.

    ``lift(c)`` reads class ``c`` through its cheapest term as ``where(clauses,
    core, Invalid)``: ``where(k, x, Invalid)`` adds ``k`` (and ``x``'s clauses),
    an ALU op collects its operands' clauses (Invalid propagates through it),
    ``where(k, t, f)`` with a valid ``f`` lifts only ``k``'s clauses (the branch
    not taken does not matter). The class is unioned with
    ``where(clause & ..., core, Invalid)``, clauses sorted and deduplicated.
    """
    memo: dict[int, Any] = {}
    inv = None

    nodes = snap.nodes

    def lift(c: int) -> Any:
        if c in memo:
            return memo[c]
        i = best.get(c)
        n = nodes[i] if i is not None else None
        kids = _lift_kids(snap, n)
        for x in kids:
            if x not in memo:
                break
        else:  # the children's are known (classes come children first): no walk
            v = memo[c] = _lift_node(snap, n, memo)
            return v
        stack = [(c, False)]
        while stack:
            k, done = stack.pop()
            if k in memo and not done:
                continue
            i = best.get(k)
            n = snap.nodes[i] if i is not None else None
            kids = _lift_kids(snap, n)
            if not done and any(x not in memo for x in kids):
                memo.setdefault(k, None)  # provisional: best terms are acyclic
                stack.append((k, True))
                stack.extend((x, False) for x in kids if x not in memo)
                continue
            memo[k] = _lift_node(snap, n, memo)
        return memo[c]

    for c, i in best.items():
        if c not in dirty or nodes[i].dtype != "index":
            continue
        v = lift(c)
        if v is None or v is _INVALID:
            continue
        clauses, core = v
        key = ("lift", c, clauses, core)
        if key in state.done:
            continue
        state.done.add(key)
        if inv is None:
            inv = ins.node("Leaf", "INVALID", "index", ins.args.key(None))
        cl = sorted(clauses, key=_key)
        cond: Term = cl[0]
        for k in cl[1:]:
            cond = ("And", "bool", cond, k)
        union(c, ("Where", "index", cond, core, inv), name)


def _lift_kids(snap: Snapshot, n: Node | None) -> tuple[int, ...]:
    if n is None or n.ctor not in CTOR_OP:
        return ()
    return n.kids


def _lift_node(snap: Snapshot, n: Node | None, memo: dict[int, Any]) -> Any:
    """``(clauses, core)`` of one e-node from its children's, None (no guard) or _INVALID."""
    if n is None:
        return None
    if n.ctor == "Leaf" and n.fields[0] == "INVALID":
        return _INVALID
    if n.ctor not in CTOR_OP:
        return None
    vals = [memo.get(k) for k in n.kids]
    if n.ctor == "Where":
        vc, vt, vf = vals
        c, t, f = n.kids
        if vc is _INVALID or vt is _INVALID:
            return None
        if vf is _INVALID:
            cl = set() if vc is None else set(vc[0])
            cl.add(c if vc is None else vc[1])
            if vt is not None:
                cl |= vt[0]
            return (frozenset(cl), t if vt is None else vt[1])
        if vt is not None or vf is not None or vc is None:
            return None
        return (vc[0], ("Where", n.fields[0], vc[1], t, f))
    # (no Invalid child, not all None; `in`/`count` compare by identity first, and a
    # child's value is None, _INVALID or a tuple, which equals neither)
    if _INVALID in vals or vals.count(None) == len(vals):
        return None
    cl = set()
    core = []
    for k, v in zip(n.kids, vals, strict=True):
        if v is None:
            core.append(k)
        else:
            cl |= v[0]
            core.append(v[1])
    return (frozenset(cl), (n.ctor, n.fields[0], *core))


# ---------------------------------------------------------------------------
# a baseline rule applied to e-nodes
# ---------------------------------------------------------------------------
def bridge(rules: Iterable[Any], group: str, non_int: bool = False) -> list[PyRule]:
    """Baseline :class:`~eqsat.pattern.Rule` objects as computed e-graph rewrites.

    Each rule is applied on its own (never through the ordered matcher) to every
    e-node of the ops its pattern names, read as a UOp (the e-node over its
    children's cheapest terms); its result is unioned into the e-node's class. Its
    guard reads the UOp's bounds (sound; the e-graph's may be tighter). ``non_int``:
    only e-nodes of float/vector/other dtypes (integer and bool folding is the
    e-graph's own, through the interval analysis). For families with no native twin.
    """
    return [PyRule(r.name, r.identity, group, "uop_nonint" if non_int else "uop", r)
            for r in rules]


def bridge_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], dirty: set[int],
                rules: list[PyRule], union: Callable[[int, Term, str], Any],
                deadline: float | None, cache: dict | None = None) -> None:
    """Apply bridged baseline rules (see :func:`bridge`) to the dirty classes' e-nodes.
    ``cache``: a dict kept across the passes of a run (the rules' index by op)."""
    from eqsat.egraph.encoding import decode_node

    key = tuple(map(id, rules))  # the rules live as long as the run: ids are stable
    hit = cache.get(key) if cache is not None else None
    if hit is None:
        by_op: dict[Any, list[PyRule]] = {}
        for r in rules:
            for op in (r.rule.pattern.ops or [None]):
                by_op.setdefault(op, []).append(r)
        any_op = by_op.pop(None, [])
        needs = {id(r): _needed_child_ops(r.rule.pattern) for r in rules}
        hit = (by_op, any_op, needs, {})
        if cache is not None:
            cache[key] = hit
    by_op, any_op, needs, cands = hit  # cands: (ctor, field, dtype) -> the op's rules
    built: dict[int, Any] = {}

    def term(c: int) -> Any:
        if c in built:
            return built[c]
        built[c] = None  # cycle guard (best terms are acyclic)
        i = best.get(c)
        if i is None:
            return None
        n = snap.nodes[i]
        dec = decode_node(n, ins.args, snap)
        if dec is None:
            return None
        kids = [term(k) for k in dec[3]]
        if any(k is None for k in kids):
            return None
        try:
            built[c] = UOp(dec[0], dec[1], tuple(kids), dec[2])
        except Exception:
            built[c] = None
        return built[c]

    for c in sorted(dirty):
        if deadline is not None and time.perf_counter() > deadline:
            return
        for i in snap.classes.get(c, ()):
            n = snap.nodes[i]
            if n.subsumed:
                continue
            ck = (n.ctor, n.fields[0] if n.fields else None, n.dtype)  # fixes op, dtype
            cand = cands.get(ck)
            if cand is None:  # the op's rules (integer nodes: no "uop_nonint" rule)
                is_int = n.dtype in INT_DTYPES
                cand = cands[ck] = [r for r in by_op.get(n.op, []) + any_op
                                    if not (is_int and r.kind == "uop_nonint")]
            if not cand:
                continue
            # the ops of the children's best terms: a rule whose pattern needs a child
            # op none of them has cannot match (no UOp is built for it)
            dec = decode_node(n, ins.args, snap)
            if dec is None:
                continue
            kid_ops: set[int] | None = set()
            for k in dec[3]:
                bi = best.get(k)
                kop = snap.nodes[bi].op if bi is not None else None
                if kop is None:  # no UOp for this child (term() is None): no rule applies
                    kid_ops = None
                    break
                kid_ops.add(kop._value_)
            if kid_ops is None:
                continue
            cand = [r for r in cand if needs[id(r)] <= kid_ops]
            if not cand:
                continue
            u = None
            for r in cand:
                if u is None:
                    kids = [term(k) for k in dec[3]]
                    if any(k is None for k in kids):
                        break
                    try:
                        u = UOp(dec[0], dec[1], tuple(kids), dec[2])
                    except Exception:
                        break
                try:
                    out = r.rule.apply(u)
                except Exception:  # a rule that cannot handle this node: no rewrite
                    continue
                if out is not None and out is not u:
                    union(c, ins.add_uop_with_facts(out), r.name)


def _needed_child_ops(p: Any) -> frozenset[int]:
    """Ops (by value) that some direct child must have for the pattern ``p`` to match
    (each source pattern restricted to one op names one; see eqsat.pattern)."""
    src = getattr(p, "src", None)
    if src is None or (p.any_len and len(src) == 1):
        return frozenset()
    return frozenset(next(iter(c.ops))._value_ for c in src
                     if c.ops is not None and len(c.ops) == 1)


def divmod_rules_by_op(rules: Iterable[PyRule]) -> dict[str, list[PyRule]]:
    """The div/mod rules that can fire on each op (``DivModRule.ops``), in order."""
    rules = list(rules)
    return {op: [r for r in rules if type(r.rule) is not DivModRule or op in r.rule.ops]
            for op in ("idiv", "mod")}


def divmod_rewrites(by_op: dict[str, list[PyRule]], op: str, x: Lin, y: Lin, ctx: Any
                    ) -> list[tuple[str, Term]]:
    """``[(rule name, term)]`` of every rule that rewrites ``x OP y``: the same as
    each ``rule.fn(op, x, y, ctx)`` when no atom of ``x``, ``y`` may be Invalid (the
    caller's check), with ``DivModRule.out``'s shared guards hoisted: the rules of the
    op only, and the divisor's range read once (no rule fires when it may be 0)."""
    out: list[tuple[str, Term]] = []
    ylo, yhi = lin_bounds(y, ctx)
    if ylo <= 0 <= yhi:
        return out
    for r in by_op[op]:
        rule = r.rule
        try:
            if type(rule) is DivModRule:
                o = rule.core(op, x, y, ctx)
                t = None if o is None else o.emit(ctx)
            else:
                t = rule.fn(op, x, y, ctx)
        except _UnrepresentableError:
            continue
        if t is not None:
            out.append((r.name, t))
    return out


def divmod_pyrules(rules: Iterable[DivModRule]) -> list[PyRule]:
    return [PyRule(r.name, r.identity, r.group, "divmod", r) for r in rules]


def sum_pyrules(rules: Iterable[SumRule], group: str) -> list[PyRule]:
    return [PyRule(r.name, r.identity, group, "sum", r) for r in rules]
