"""Bounds of a gated index where its gate holds (docs/architecture.md, lowering step 6).

:func:`gated_bounds` gives bounds of an integer address that hold on every assignment of
its loop indices and variables where the gate holds; ``lowering.narrow.check_bounds``
drops the run-time check of an access they prove inside its buffer, so a bound here that
does not hold would read or write outside it. Every step only narrows what the gate says.

1. The AND clauses of the gate bound expressions (``rules.where.parse_valid``:
   ``X < c``, ``not (X < c)``, ``X == c``; ``<=``, ``>=``, ``>`` are first written with
   ``<``, :func:`_lt_form`; ``!=`` bounds nothing).
2. Implied bounds, to a fixed point of at most :data:`ROUNDS` rounds. Each round bounds
   each clause's expression by the other clauses (:func:`_narrowed_bounds`) and each
   atom of it (a range, a variable, a division's dividend) by the values at which the
   clause cannot hold (:func:`_atom_bounds`): ``r // 2 < 7`` bounds ``r <= 13``,
   ``2*r + u < 9`` bounds ``r <= 4`` and ``u <= 8``, ``r % 4 < 3`` (``r < 8``) bounds
   ``r <= 6``. Each new bound is one more clause.
3. The address is read with the bounded expressions narrowed, also as a sum of
   multiples of the clauses' sums (:func:`_in_clause_terms`).

A vector gate or address is read lane by lane: the union of the lanes' bounds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

from eqsat.ir.dtype import dtypes
from eqsat.ir.linear import Lin
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp
from rules.common import split_and
from rules.divmod import UOpCtx, to_lin
from rules.where import narrowing, parse_valid

__all__ = ["gated_bounds", "ROUNDS", "PEEL"]

#: rounds of implied bounds: a chain of clauses each bounding the next's atoms needs one
#: round a link; the bounds stop there even when more rounds would narrow them further
ROUNDS = 4
#: values cut from each end of an atom's range at a clause not monotone in it (a ``mod``)
PEEL = 16

Span = tuple[int | float, int | float]
Bounds = dict[UOp, tuple[int, int]]  # what clauses say: expression -> (lo, hi)


def gated_bounds(valid: UOp, x: UOp, inside: tuple[int, int] | None = None) -> Span | None:
    """Sound bounds of the integer ``x`` where ``valid`` holds; None when it never holds.

    The expressions the AND clauses of ``valid`` bound, and what they imply (the module
    doc), are narrowed in ``x`` (``rules.where.narrowing``, as the baseline's
    ``simplify_given_valid`` narrows them). A clause's expression that is not a sub-term
    of ``x`` but whose linear form, times some integer, is part of ``x``'s (the gate
    ``1 <= r0 + 1024*r3`` of an address ``2040*r0 + 2088960*r3 + ...``) is first made one
    (:func:`_in_clause_terms`). The intersection of what every reading gives is returned.
    With ``inside`` (a buffer's ``(first, last)``), the rounds of implied bounds stop
    once the bounds lie inside it.
    """
    if valid.op is Ops.CONST and not valid.arg:
        return None
    if any(n.op is Ops.INVALID for n in x.toposort()):
        return -math.inf, math.inf  # an Invalid that did not hoist: nothing known
    if valid.dtype.count > 1 or x.dtype.count > 1:
        return _lanes_bounds(valid, x, inside)
    lo, hi = x.vmin, x.vmax
    for full in _implied(_lt_form(valid)):
        if parse_valid(full) is None:
            return None
        nlo, nhi = _narrowed_bounds(full, x)
        lo, hi = max(lo, nlo), min(hi, nhi)
        if inside is not None and inside[0] <= lo and hi <= inside[1]:
            break
    return lo, hi


def _lt_form(valid: UOp) -> UOp:
    """``valid`` with its integer clauses ``a <= b``, ``a >= b``, ``a > b`` (and their
    negations) written with ``<`` and ``not``, the forms ``rules.where.parse_valid``
    reads: ``not (b < a)``, ``not (a < b)``, ``b < a``."""
    clauses = split_and(valid)
    out = [_as_lt(c) for c in clauses]
    if all(o is c for o, c in zip(out, clauses, strict=True)):
        return valid
    return functools.reduce(lambda a, b: a & b, out)


# op -> (the operands of its < in their order, whether that < is negated)
_AS_LT = {Ops.GT: (1, 0, False), Ops.LE: (1, 0, True), Ops.GE: (0, 1, True)}


def _as_lt(c: UOp) -> UOp:
    neg, x = False, c
    while x.op is Ops.NOT and x.dtype is dtypes.bool:
        x, neg = x.src[0], not neg
    if x.op not in _AS_LT or not x.src[0].dtype.is_int:
        return c
    i, j, flip = _AS_LT[x.op]
    lt = UOp(Ops.LT, dtypes.bool, (x.src[i], x.src[j]))
    return UOp(Ops.NOT, dtypes.bool, (lt,)) if neg != flip else lt


def _narrowed_bounds(valid: UOp, x: UOp, skip: UOp | None = None) -> Span:
    """The intersection of ``x``'s bounds and those of each reading of ``x`` in terms of
    the expressions ``valid``'s clauses bound (but ``skip``), narrowed by the clauses
    (``valid`` holds somewhere as far as its clauses say). A reading that a clause bounds
    as a whole is also read with its parts narrowed instead."""
    lo, hi = x.vmin, x.vmax
    for y in dict.fromkeys([x, *_in_clause_terms(valid, x, skip)]):
        sub = narrowing(valid, y) or {}
        parts = {k: v for k, v in sub.items() if k is not y}
        for s in [sub, parts] if y in sub else [sub]:
            z = y.substitute(s) if s else y
            lo, hi = max(lo, z.vmin), min(hi, z.vmax)
    return lo, hi


# ---- implied bounds -------------------------------------------------------------------
def _implied(valid: UOp) -> Iterator[UOp]:
    """``valid``, then ``valid`` and a clause for each bound its clauses imply, after
    each step of each round (the module doc, step 2): ``4*r + j + k < 33`` and
    ``r + j + k >= 1`` (``r, j, k >= 0``) imply ``4*r + j + k >= 1``
    (:func:`_by_clauses`); ``r // 2 < 7`` implies ``r < 14`` (:func:`_by_atoms`)."""
    out = valid
    yield out
    for _ in range(ROUNDS):
        grew = False
        for step in (_by_clauses, _by_atoms):
            clauses = parse_valid(out)
            if clauses is None:
                return  # the clauses contradict: the gate never holds
            tighter = step(out, clauses)
            for e, (lo, hi) in tighter.items():
                olo, ohi = clauses.get(e, (e.vmin, e.vmax))
                if lo > olo:
                    out = out & UOp(Ops.NOT, dtypes.bool, (_lt(e, lo),))
                if hi < ohi:
                    out = out & _lt(e, hi + 1)
            if tighter:
                grew = True
                yield out
        if not grew:
            return


def _by_clauses(valid: UOp, clauses: Bounds) -> Bounds:
    """The bounds of each expression ``valid``'s ``clauses`` bound, from the others,
    where tighter."""
    tighter: Bounds = {}
    for e in clauses:
        if e.dtype is dtypes.index:
            _tighten(tighter, clauses, e, _narrowed_bounds(valid, e, skip=e))
    return tighter


def _by_atoms(valid: UOp, clauses: Bounds) -> Bounds:
    """The bounds of the atoms of each expression ``valid``'s ``clauses`` bound
    (:func:`_atoms`), where tighter."""
    tighter: Bounds = {}
    for e, span in clauses.items():
        if e.dtype is not dtypes.index:
            continue
        sub = {k: (v, set(k.toposort())) for k, v in (narrowing(valid, e) or {}).items()}
        for a in _atoms(e):
            own = tighter.get(a) or clauses.get(a) or (a.vmin, a.vmax)
            _tighten(tighter, clauses, a, _atom_bounds(e, span, a, own, sub))
    return tighter


def _tighten(acc: Bounds, clauses: Bounds, e: UOp, span: Span) -> None:
    """Record in ``acc`` the bounds ``span`` of ``e`` where they are tighter than what
    ``acc`` and ``clauses`` (else ``e``'s own bounds) say."""
    olo, ohi = acc.get(e) or clauses.get(e) or (e.vmin, e.vmax)
    lo, hi = max(olo, span[0]), min(ohi, span[1])
    if (lo, hi) != (olo, ohi) and not math.isinf(lo) and not math.isinf(hi):
        acc[e] = (int(lo), int(hi))


def _lt(e: UOp, c: int) -> UOp:
    return UOp(Ops.LT, dtypes.bool, (e, UOp.const(e.dtype, c)))


_DIVS = (Ops.IDIV, Ops.MOD, Ops.FLOORDIV, Ops.FLOORMOD)
_LEAVES = (Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR)


def _atoms(e: UOp) -> list[UOp]:
    """The finite-bounded index sub-terms of ``e`` (but ``e``) a clause on ``e`` may
    bound: its ranges, specials and variables, and the dividends of its divisions that
    are sums of them (``2*r + u`` of ``(2*r + u) // 2``)."""
    nodes = e.toposort()
    dividends = {u.src[0] for u in nodes if u.op in _DIVS}
    return [u for u in nodes if u is not e and u.dtype is dtypes.index
            and (u.op in _LEAVES or u in dividends
                 and all(a.op in _LEAVES for _, a in to_lin(u).terms))
            and not math.isinf(u.vmin) and not math.isinf(u.vmax)]


def _atom_bounds(e: UOp, span: tuple[int, int], a: UOp, own: tuple[int, int],
                 sub: dict[UOp, tuple[UOp, set[UOp]]]) -> Span:
    """Bounds of the sub-term ``a`` of ``e`` (now ``own``) where ``lo <= e <= hi``
    (``span``) holds, ``sub`` narrowing the other clauses' expressions in ``e`` (each
    with the nodes it reads).

    ``e`` with ``a`` the constant ``v`` has bounds that hold at every assignment where
    ``a`` is ``v``: when they leave ``span`` the clause fails there, so ``v`` is cut
    off. With ``e`` monotone in ``a`` (:func:`_sign`) the clause then fails on every
    value beyond ``v`` too: the first such ``v`` is found by bisection. Otherwise at most
    :data:`PEEL` values are cut from each end, one by one."""
    lo, hi = span
    inside = set(a.toposort())
    keep = {k: v for k, (v, below) in sub.items()  # a stays in e, as it is
            if k not in inside and a not in below}
    y = e.substitute(keep) if keep else e
    sign = _sign(y, a)
    if sign == 0 or lo <= y.vmin and y.vmax <= hi:
        return own  # e does not read a, or the clause holds whatever a is

    order, seen = y.toposort(), {}

    def bounds_at(v: int) -> Span:
        if v not in seen:
            seen[v] = _bounds_with(order, a, UOp.const(a.dtype, v))
        return seen[v]

    def above(v: int) -> bool:  # e > hi wherever a == v
        return bounds_at(v)[0] > hi

    def below(v: int) -> bool:  # e < lo wherever a == v
        return bounds_at(v)[1] < lo

    alo, ahi = own
    if sign is None:
        for _ in range(PEEL):
            if alo > ahi or not (above(ahi) or below(ahi)):
                break
            ahi -= 1
        for _ in range(PEEL):
            if alo > ahi or not (above(alo) or below(alo)):
                break
            alo += 1
        return alo, ahi
    up, down = (above, below) if sign > 0 else (below, above)
    ahi = _first(up, alo, ahi) - 1
    alo = -_first(lambda w: down(-w), -ahi, -alo) + 1
    return alo, ahi


def _bounds_with(order: list[UOp], a: UOp, c: UOp) -> Span:
    """The bounds of ``order[-1]`` (``order`` its toposort) with ``a`` replaced by ``c``.
    A node rebuilt on new operands that gets its old bounds is kept as it was: a node's
    bounds are a function of its operands' bounds (``eqsat.ir.bounds``), so what is
    above it is unchanged too (a deep ``mod`` chain stops there)."""
    new = {a: c}
    for u in order:
        if u in new or not any(s in new for s in u.src):
            continue
        n = u.replace(src=tuple(new.get(s, s) for s in u.src))
        if (n.vmin, n.vmax) != (u.vmin, u.vmax):
            new[u] = n
    top = new.get(order[-1], order[-1])
    return top.vmin, top.vmax


def _first(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """The least ``v`` in ``lo..hi`` with ``pred(v)`` for a ``pred`` false then true;
    ``hi + 1`` when ``pred(hi)`` is false. Only a ``v`` ``pred`` holds at is returned."""
    if lo > hi or not pred(hi):
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def _flip(s: int | None) -> int | None:
    return None if s is None else -s


def _join(s: int | None, t: int | None) -> int | None:
    """The sign of a sum of terms of signs ``s`` and ``t``."""
    if s is None or t is None:
        return None
    return t if s == 0 else s if t == 0 or s == t else None


def _sign(e: UOp, a: UOp) -> int | None:
    """How the index ``e`` moves as ``a`` grows, all else fixed: 1 never down, -1 never up,
    0 not at all (``e`` does not read ``a``), None unknown. Sums, differences, max, min,
    products by and truncating divisions by a factor of known sign that does not read
    ``a`` keep or flip the sign; every other op reading ``a`` gives None."""
    sign: dict[UOp, int | None] = {}
    for u in e.toposort():
        s = [sign[x] for x in u.src]
        if u is a:
            sign[u] = 1
        elif all(t == 0 for t in s):
            sign[u] = 0
        elif u.dtype is not dtypes.index:
            sign[u] = None
        elif u.op in (Ops.ADD, Ops.MAX, Ops.MIN):
            sign[u] = _join(s[0], s[1])
        elif u.op is Ops.SUB:
            sign[u] = _join(s[0], _flip(s[1]))
        elif u.op is Ops.NEG:
            sign[u] = _flip(s[0])
        elif u.op is Ops.MUL and 0 in s:
            k, t = (u.src[0], s[1]) if s[0] == 0 else (u.src[1], s[0])
            sign[u] = t if k.vmin >= 0 else _flip(t) if k.vmax <= 0 else None
        elif u.op in (Ops.IDIV, Ops.FLOORDIV) and s[1] == 0:
            d = u.src[1]
            sign[u] = s[0] if d.vmin > 0 else _flip(s[0]) if d.vmax < 0 else None
        else:
            sign[u] = None
    return sign[e]


# ---- an address in terms of the clauses' sums -------------------------------------------
def _in_clause_terms(valid: UOp, x: UOp, skip: UOp | None = None) -> list[UOp]:
    """``x`` rebuilt from its linear form (terms that cancel gone: ``u - (b + u)`` is
    ``-b``), and as ``m1*E1 + m2*E2 + ... + rest`` (the same value) for expressions ``Ei``
    (but ``skip``, ranges and variables) that ``valid``'s clauses bound and whose linear
    forms, times an integer ``mi``, are parts of ``x``'s (:func:`_multiple`): once for
    each ``Ei`` taken first, then the others of the most terms first. Empty when
    ``valid`` bounds nothing."""
    clauses = parse_valid(valid)
    if not clauses or x.dtype is not dtypes.index:
        return []
    # a range or a variable is narrowed where it is in x's linear form: no reading of its own
    exprs = sorted(((to_lin(e), e) for e in clauses if e.dtype is dtypes.index and e is not skip
                    and e is not x and e.op not in _LEAVES),
                   key=lambda p: -len(p[0].terms))  # stable: clause order
    lin = to_lin(x)
    out = [UOpCtx(x).sum(list(lin.terms), lin.const)]
    for i, first in enumerate(exprs):
        rest, picked, others = lin, [], [*exprs[:i], *exprs[i + 1:]]
        # the first, then the others whose multiples are whole parts of what is left,
        # then the others
        for (le, e), exact in [(first, False), *((o, True) for o in others),
                               *((o, False) for o in others)]:
            m = _multiple(rest, le, exact)
            if m:
                rest, picked = rest - le * m, [*picked, (m, e)]
        if picked:
            out.append(UOpCtx(x).sum([*picked, *((c, a) for c, a in rest.terms)], rest.const))
    return out


def _multiple(x: Lin, e: Lin, exact: bool = False) -> int:
    """The integer ``m`` of the largest magnitude such that each term of ``m*e`` has the
    sign of ``x``'s term of its atom and no larger a coefficient (``x - m*e`` keeps the
    signs of ``x``'s terms); with ``exact``, only an ``m`` for which ``m*e``'s terms are
    ``x``'s (``x - m*e`` has none of ``e``'s atoms). 0 when there is none."""
    if not e.terms:
        return 0
    signs, ks = set(), []
    for c, a in e.terms:
        xc = x.coef(a)
        if xc == 0:
            return 0
        signs.add((xc > 0) == (c > 0))
        ks.append(abs(xc) // abs(c) if not exact or abs(xc) % abs(c) == 0 else 0)
    if len(signs) != 1 or (exact and len(set(ks)) != 1):
        return 0
    return min(ks) if signs.pop() else -min(ks)


# ---- vectors, lane by lane ----------------------------------------------------------------
def _lanes_bounds(valid: UOp, x: UOp, inside: tuple[int, int] | None) -> Span | None:
    """The union over the lanes of the bounds of each lane of ``x`` where that lane of
    ``valid`` holds; None when no lane's does. Widths that differ (but a scalar, which
    every lane shares): ``x``'s own bounds."""
    n = max(valid.dtype.count, x.dtype.count)
    if min(valid.dtype.count, x.dtype.count) not in (1, n):
        return x.vmin, x.vmax
    spans = [s for i in range(n) if (s := gated_bounds(_lane(valid, i), _lane(x, i), inside))]
    if not spans:
        return None
    return min(s[0] for s in spans), max(s[1] for s in spans)


def _lane(u: UOp, i: int) -> UOp:
    """Lane ``i`` of ``u`` as a scalar expression of the same value: elementwise ops
    rebuilt on their operands' lanes, ``vectorize``/``cat``/``gep``/constants picked; any
    other vector node is its ``gep``."""
    done: dict[tuple[UOp, int], UOp] = {}
    todo = [(u, i)]
    while todo:
        n, k = todo[-1]
        if (n, k) in done:
            todo.pop()
            continue
        parts = _lane_parts(n, k)
        missing = [p for p in parts if p not in done]
        if missing:
            todo.extend(missing)
            continue
        todo.pop()
        done[(n, k)] = _lane_node(n, k, [done[p] for p in parts])
    return done[(u, i)]


def _elementwise(n: UOp) -> bool:
    return (n.op in GroupOp.ALU or n.op is Ops.CAST) and not n.dtype.ptr


def _lane_parts(n: UOp, k: int) -> list[tuple[UOp, int]]:
    """The (node, lane) pairs lane ``k`` of ``n`` is built from."""
    if n.dtype.count == 1:
        return []
    if n.op is Ops.VECTORIZE:
        return [(n.src[k], 0)]
    if n.op is Ops.GEP:
        return [(n.src[0], n.arg[k])]
    if n.op is Ops.CAT:
        for s in n.src:
            if k < s.dtype.count:
                return [(s, k)]
            k -= s.dtype.count
        return []
    if _elementwise(n):
        return [(s, k) for s in n.src]
    return []


def _lane_node(n: UOp, k: int, parts: list[UOp]) -> UOp:
    if n.dtype.count == 1:
        return n
    if n.op in (Ops.VECTORIZE, Ops.GEP, Ops.CAT) and parts:
        return parts[0]
    if n.op is Ops.VCONST:
        return UOp.const(n.dtype.scalar(), n.arg[k])
    if n.op is Ops.CONST:
        return UOp.const(n.dtype.scalar(), n.arg)
    if n.op is Ops.INVALID:
        return UOp(Ops.INVALID, n.dtype.scalar())
    if _elementwise(n):
        return UOp(n.op, n.dtype.scalar(), tuple(parts), n.arg)
    return n.gep(k)
