"""A cheaper basis for sums of quotients and remainders, and the lifting of
Invalid guards.

:class:`_BasisSearch` rewrites a sum through the division identities
``x == n*(x//n) + x%n``; :func:`lift_pass` lifts every Invalid guard of an index
term to its top in one step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from eqsat.engines.egraph.computed.linear import EClassCtx, nodes_of
from eqsat.engines.egraph.computed.pricing import Weights
from eqsat.engines.egraph.computed.state import PassState
from eqsat.engines.egraph.computed.terms import _TERM_E, Term, _cval, _key
from eqsat.engines.egraph.encoding import CTOR_OP, CTORS, Inserter, Node, Snapshot, fits_i64
from eqsat.ir.linear import Lin

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
        return self.ins.memo.get(tuple(fields))

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
        if not cw.keys() >= classes:  # (the classes no earlier estimate priced)
            best, of = self.best, self.weights.of
            for k in classes - cw.keys():
                i = best.get(k)
                cw[k] = None if i is None else of(i)
        # (the weights summed in the classes' order, as one by one)
        total = extra + sum([w for w in map(cw.__getitem__, classes) if w is not None])
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
                            nxt = cur.plus(rel, -(cs // cr))  # cur - rel*(cs//cr)
                            if nxt in seen:
                                continue
                            seen.add(nxt)
                            cand.append((self.cost(nxt), nxt))
            if not cand:
                break
            beam = first_by_cost(cand, self.BEAM)
            if beam[0][0] < best_cost - 0.5:
                best_cost, best = beam[0]
        return best


def first_by_cost(cand: list[tuple[float, Lin]], k: int) -> list[tuple[float, Lin]]:
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
_LEAF = frozenset(("Leaf",))


def lift_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], state: PassState,
              name: str, union: Callable[[int, Term, str], Any], dirty: set[int],
              dirty_best: Iterable[tuple[int, int]] | None = None) -> None:
    """Lift every Invalid guard of an index term to its top, in one step.

    ``lift(c)`` reads class ``c`` through its cheapest term as ``where(clauses,
    core, Invalid)``: ``where(k, x, Invalid)`` adds ``k`` (and ``x``'s clauses),
    an ALU op collects its operands' clauses (Invalid propagates through it),
    ``where(k, t, f)`` with a valid ``f`` lifts only ``k``'s clauses (the branch
    not taken does not matter). The class is unioned with
    ``where(clause & ..., core, Invalid)``, clauses sorted and deduplicated.
    ``dirty_best``: ``(class, best e-node)`` of the dirty classes in ``best``'s order,
    when known (else read from ``best``).
    """
    if not any(n.fields[0] == "INVALID" for n in nodes_of(snap, _LEAF)):
        return  # no Invalid leaf: no class has a guard to lift
    memo: dict[int, Any] = {}
    inv = None

    nodes = snap.nodes

    def lift(c: int) -> Any:
        if c in memo:
            return memo[c]
        i = best.get(c)
        n = nodes[i] if i is not None else None
        # the classes _lift_node reads (an e-node of no IR op reads none)
        kids = n.kids if n is not None and n.ctor in CTOR_OP else ()
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
            n = nodes[i] if i is not None else None
            kids = n.kids if n is not None and n.ctor in CTOR_OP else ()
            if not done:
                for x in kids:
                    if x not in memo:
                        memo.setdefault(k, None)  # provisional: best terms are acyclic
                        stack.append((k, True))
                        stack.extend([(x, False) for x in kids if x not in memo])
                        break
                else:
                    memo[k] = _lift_node(snap, n, memo)
                continue
            memo[k] = _lift_node(snap, n, memo)
        return memo[c]

    if dirty_best is None:
        dirty_best = [(c, i) for c, i in best.items() if c in dirty]
    for c, i in dirty_best:
        if nodes[i].dtype != "index":
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


def _lift_node(snap: Snapshot, n: Node | None, memo: dict[int, Any]) -> Any:
    """``(clauses, core)`` of one e-node from its children's, None (no guard) or _INVALID."""
    if n is None:
        return None
    if n.ctor == "Leaf" and n.fields[0] == "INVALID":
        return _INVALID
    if n.ctor not in CTOR_OP:
        return None
    vals = list(map(memo.get, n.kids))
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
