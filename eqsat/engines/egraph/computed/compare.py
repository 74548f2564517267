"""Comparisons of linear forms: ``x < 0`` divided by the gcd of its coefficients,
simplified as a simplex of non-negative terms, or with a small remainder split off.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from eqsat.engines.egraph.computed.context import _class_dtype
from eqsat.engines.egraph.computed.linear import (
    _SECOND,
    EClassCtx,
    LinForms,
    _UnrepresentableError,
    nodes_of,
)
from eqsat.engines.egraph.computed.state import PassState
from eqsat.engines.egraph.computed.terms import Term
from eqsat.engines.egraph.encoding import Snapshot
from eqsat.ir.linear import Lin, lin_bounds


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


_LT = frozenset(("Lt",))


def cmp_pass(snap: Snapshot, lins: LinForms, ctx: EClassCtx, state: PassState, name: str,
             union: Callable[[int, Term, str], Any], dirty: set[int]) -> None:
    """Rewrite every index comparison ``a < b`` through :func:`cmp_rewrites`."""
    defined = snap.defined
    for n in nodes_of(snap, _LT):
        if n.subsumed:
            continue
        a, b = n.fields[1], n.fields[2]
        if n.cls not in dirty and a not in dirty and b not in dirty:
            continue
        if _class_dtype(snap, a) != "index":
            continue
        x = lins.get(a) - lins.get(b)
        atoms = list(map(_SECOND, x.terms))
        if not defined.issuperset(atoms):
            continue
        key = ("cmp", n.cls, x, tuple(map(snap.bounds, atoms)))
        if key in state.done:
            continue
        state.done.add(key)
        try:
            for t in cmp_rewrites(x, ctx):
                union(n.cls, t, name)
        except _UnrepresentableError:
            continue
