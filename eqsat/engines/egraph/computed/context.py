"""Guarded subterms: simplify ``x`` in ``where(c, x, f)`` assuming ``c``.

:func:`context_pass` copies ``x`` over context variables bounded by the clauses of
``c`` (:func:`clause_bounds`, :func:`expr_bounds`) and brings the copy's cheap
e-nodes back as alternatives of ``x``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from eqsat.engines.egraph.computed.linear import (
    EClassCtx,
    LinForms,
    _UnrepresentableError,
    conjuncts,
    nodes_of,
)
from eqsat.engines.egraph.computed.pricing import Weights
from eqsat.engines.egraph.computed.state import PassState
from eqsat.engines.egraph.computed.terms import _TERM_E, Term, _mentions, emit
from eqsat.engines.egraph.encoding import CTXVAR, Inserter, Node, Snapshot
from eqsat.ir.linear import Lin

INF = math.inf


#: e-nodes of a guarded copy x' brought back as alternatives of x per pass
CONTEXT_ALTERNATIVES = 4


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
    nodes, classes = snap.nodes, snap.classes
    for k in clauses:
        for n in map(nodes.__getitem__, classes.get(k, ())):  # (snap.class_nodes, in C)
            if n.subsumed:
                continue
            if n.ctor == "Not":
                for m in map(nodes.__getitem__, classes.get(n.fields[1], ())):
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


def best_term_reaches(snap: Snapshot, best: dict[int, int], cls: int, targets: set[int] | None,
                      memo: dict[int, bool], pred: Callable[[Node], bool] | None = None) -> bool:
    """Whether the best term of ``cls`` mentions a class in ``targets`` (or a node
    satisfying ``pred``)."""
    hit = memo.get(cls)
    if hit is not None:
        return hit
    nodes = snap.nodes
    stack = [(cls, False)]
    while stack:
        c, done = stack.pop()
        if done:  # its children's answers are in: it reaches when one of them does
            memo[c] = False
            for k in nodes[best[c]].kids:
                if memo.get(k, False):
                    memo[c] = True
                    break
            continue
        if c in memo:
            continue
        i = best.get(c)
        n = nodes[i] if i is not None else None
        if (targets is not None and c in targets) or (pred is not None and n is not None
                                                      and pred(n)):
            memo[c] = True
            continue
        memo[c] = False  # provisional (cycles cannot occur in a best tree)
        if n is not None:
            stack.append((c, True))
            for k in n.kids:
                if k not in memo:
                    stack.append((k, False))
    return memo[cls]


def best_closure(snap: Snapshot, best: dict[int, int], cls: int) -> set[int]:
    """The classes the best term of ``cls`` mentions, ``cls`` included (``a`` in it
    exactly when ``best_term_reaches(snap, best, cls, {a}, {})``)."""
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
    """The best term of ``cls`` with the classes of ``subst`` replaced, a loop index
    kept whole (:func:`_rebuilt`)."""
    if cls in subst:
        return subst[cls]
    hit = memo.get(cls)
    if hit is not None:
        return hit
    r = reach.get(cls)
    if r is None:
        r = best_term_reaches(snap, best, cls, set(subst), reach)
    if not r:
        return cls
    n = snap.nodes[best[cls]]
    t = memo[cls] = cls if n.is_loop else _rebuilt(snap, best, n, subst, memo, reach)
    return t


def _rebuilt(snap: Snapshot, best: dict[int, int], n: Node, subst: dict[int, Term],
             memo: dict[int, Term], reach: dict[int, bool]) -> Term:
    """E-node ``n`` with its children's best terms rebuilt (:func:`_rebuild`); a loop
    index (``Node.is_loop``) as it is: its end names the loop, so it is not rewritten
    even where a context variable's class holds the end's constant (``where(r0 % 3 > 1,
    ..(range 0 2).., Inv)``: the variable standing for ``r0 % 3`` is 2 there, and
    ``(range 0 (r0 % 3))`` would be another loop, which no END closes)."""
    fields = [n.ctor, *n.fields]
    if not n.is_loop:
        for i in _TERM_E[n.ctor]:  # left to right
            fields[i] = _rebuild(snap, best, fields[i], subst, memo, reach)
    return tuple(fields)


def _is_ctxvar(n: Node) -> bool:
    return n.ctor == "Leaf" and n.fields[0] == CTXVAR


def _is_invalid(snap: Snapshot, c: int) -> bool:
    nodes = snap.nodes
    for i in snap.classes.get(c, ()):  # (a loop: no generator per call)
        n = nodes[i]
        if n.ctor == "Leaf" and n.fields[0] == "INVALID":
            return True
    return False


_WHERE = frozenset(("Where",))


def context_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], cost: dict[int, float],
                 lins: LinForms, ectx: EClassCtx, state: PassState, name: str,
                 union: Callable[[int, Term, str], Any], dirty: set[int],
                 weights: Weights) -> None:
    """Open contexts for new ``where(c, x, Invalid)`` nodes; close the ones whose
    ``x'`` became cheaper than ``x`` (union ``where(c, x'[vars -> atoms], f)``)."""
    # open
    for n in nodes_of(snap, _WHERE):
        if n.subsumed or n.fields[0] != "index":
            continue
        if n.cls not in dirty and dirty.isdisjoint(n.kids):
            continue
        c, x, f = n.fields[1], n.fields[2], n.fields[3]
        if not _is_invalid(snap, f) or x not in snap.defined:
            continue
        # where-nodes that a copy brought back open none (they would only copy the
        # copy again)
        if x in state.ctx_out.get(n.cls, ()):
            continue
        clauses = conjuncts(snap, best, c)
        nb, cons = clause_bounds(snap, lins, clauses)
        eb = expr_bounds(snap, cons)
        if not nb and not eb:
            continue
        # one guarded copy per where-node, cheapest form of its x and what its clauses
        # imply (the copy evolves with the e-graph; a better x gets a fresh copy, and so
        # do bounds the clauses imply once they simplify: `not((x//3)%5 < 1)` read as
        # `(x//3)%5 >= 1` first, as `x >= 3` once the e-graph has that form)
        bx = best.get(x)
        key = ("ctx", n.cls, c, x, None if bx is None else (snap.nodes[bx].ctor,
                                                           snap.nodes[bx].fields),
               frozenset(nb.items()), frozenset(eb.items()))
        if key in state.done:
            continue
        reach: dict[int, bool] = {}
        in_x = best_closure(snap, best, x)  # the classes x's best term mentions
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
        if best_term_reaches(snap, best, x, None, {}, _is_ctxvar):
            continue  # x's best term already holds context variables: not ours
        fresh_terms: dict[int, Term] = {}
        fresh: dict[int, Term] = {}

        def var(tag: Any, lo: int, hi: int, w: int = n.cls) -> int:
            h = ins.node("Leaf", CTXVAR, "index", ins.args.key(("ctx", w, tag, lo, hi)))
            ins.fact("RLo", (h, lo))
            ins.fact("RHi", (h, hi))
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
                kc = ins.memo.get(("Cst", "index", k))
                qc = ins.memo.get(("Idiv", "index", z, kc)) if kc is not None else None
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
        if n.subsumed or not all(map(cost.__contains__, n.kids)) or _is_ctxvar(n):
            continue
        c = wt(i) + sum(map(cost.__getitem__, n.kids))
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
        held = False  # a foreign context variable: cannot be put back
        for k in n.kids:  # (a loop: no generator per candidate)
            if best_term_reaches(snap, best, k, None, reach, foreign):
                held = True
                break
        if held:
            continue
        t = _rebuilt(snap, best, n, sub, memo, sub_reach)
        if _mentions(t, wc):
            continue
        _close(wc, ctx, t)
