"""The div/mod rule family over linear forms: one pure core shared by both engines.

Every rule here works on *linear forms* (:class:`Lin`, ``sum(coef*atom) + const``)
whose atoms are opaque to the core: a UOp in the ordered baseline, an e-class id in
the e-graph. What the core needs to know about an atom it asks a :class:`Ctx`:

- ``bounds(a)``: a sound ``(lo, hi)`` of the atom (``-inf``/``inf`` when unknown);
- ``mod_parts(a)`` / ``idiv_parts(a)`` / ``mul_parts(a)``: the ``(x, y)`` pairs (as
  :class:`Lin`) of every ``x % y`` / ``x // y`` / ``x * y`` the atom is known to be
  (an empty list when it is none of them; an e-class may have several);

and the engine's term builders (``atom const add sub mul neg idiv mod``; ``sum`` and
``lin`` have defaults in :class:`LinBuilder`).

A :class:`DivModRule` is one rewrite ``x OP y -> result`` with ``OP`` in
``"idiv"``/``"mod"``: ``rule(op, x, y, ctx)`` returns the engine term of the result,
or None when the rule's guard does not hold. A :class:`SumRule` rewrites a whole sum
(recombination of ``x%n`` with ``(x//n)*n``).

Semantics are C's: ``idiv`` truncates toward zero and ``mod`` takes the dividend's
sign. Every rule is sound on every value its guard admits, negative ranges
included. Rules that need a non-negative numerator (as tinygrad's do) are applied
through a sign normalization: a numerator whose range is entirely non-positive is
mirrored (``x//c == -((-x)//c)``, ``x%c == -((-x)%c)``) and a negative divisor is
flipped (``x//c == -(x//(-c))``, ``x%c == x%(-c)``), so they also fold ``(-2*a)//2``.
No rule ever fires when the divisor's range contains 0 (division by zero is
undefined and must never become a value).

``fold_divmod_general`` tries the eight rules of tinygrad's ``fold_divmod_general``
in seed 003's priority order, first result winning (the baseline's ordered
semantics); :func:`all_rewrites` returns the result of every rule (the e-graph's).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from eqsat.ir.linear import _ZERO, Ctx, Lin, Num, lin_bounds
from eqsat.ir.semantics import cdiv, cmod

__all__ = [
    "DivModRule", "SumRule", "RuleOut", "Op", "DivisionReading", "normalize_signs",
    "split_divisible", "emit_lin", "DIVMOD_RULES", "RANGE_BASED", "GENERAL", "ADVANCED",
    "RECOMBINE", "SUM_RULES", "RULES_BY_NAME", "fold_divmod_general", "all_rewrites",
    "recombine_sum",
]

Op = Literal["idiv", "mod"]
_MAX_TIE_COMBOS = 64  # congruence: residue choices tried when several factors tie


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _invalid_free(ctx: Ctx, *xs: Lin) -> bool:
    """No atom of ``xs`` may be Invalid (always true when ``ctx`` cannot tell): the ctx's
    own ``invalid_free(xs)`` when it has one, else ``may_be_invalid`` of every atom."""
    free = getattr(ctx, "invalid_free", None)
    if free is not None:
        return free(xs)
    f = getattr(ctx, "may_be_invalid", None)
    return f is None or not any(f(a) for x in xs for _, a in x.terms)


def _finite(*vs: Num) -> bool:
    for v in vs:  # (a loop, not a generator: called for every rule's bounds)
        if isinstance(v, float) and math.isinf(v):
            return False
    return True


def _whole(v: Num) -> Any:
    """A finite bound as an integer: a float's ``int``, anything else itself (an int,
    or the symbolic integer a proof runs the rule on)."""
    return int(v) if isinstance(v, float) else v


def _same_sign_class(a: tuple[Num, Num], b: tuple[Num, Num]) -> bool:
    """Both ranges non-negative, or both non-positive."""
    return (a[0] >= 0 and b[0] >= 0) or (a[1] <= 0 and b[1] <= 0)


def _splits_off(x: Lin, n: int) -> bool:
    """Whether :func:`split_divisible` of ``x`` by the non-zero constant ``n`` has a
    non-zero quotient (a term or the constant is a non-zero multiple of ``n``),
    without making the two forms."""
    if x.const and x.const % n == 0:
        return True
    for c, _ in x.terms:
        if c % n == 0:
            return True
    return False


def split_divisible(x: Lin, y: Lin, ctx: Ctx) -> tuple[Lin, Lin] | None:
    """``(q, r)`` with ``x == q*y + r`` exactly, ``q`` holding every term of ``x``
    that ``y`` divides (``r`` the rest, unchanged), or None when ``y`` is 0.

    A constant ``y`` divides a term whose coefficient is a multiple of it; a
    symbolic ``y`` divides a term ``f*a`` with ``a`` a product ``p*s`` (``mul_parts``)
    where ``p == y`` or ``s == y``, or with ``y == g*a`` and ``g | f``.
    """
    if y.is_const:
        n = y.const
        if n == 0:
            return None
        q, r = [], []
        for c, a in x.terms:
            (q if c % n == 0 else r).append((c // n if c % n == 0 else c, a))
        qc, rc = (x.const // n, 0) if x.const % n == 0 else (0, x.const)
        return Lin._trusted(tuple(q), qc), Lin._trusted(tuple(r), rc)
    qlin = _ZERO
    r = []
    ya = y.terms[0][1] if len(y.terms) == 1 and y.const == 0 else None
    for c, a in x.terms:
        if ya is not None and a == ya and c % y.terms[0][0] == 0:
            qlin = qlin + c // y.terms[0][0]
            continue
        for p, s in ctx.mul_parts(a):
            if p == y:
                qlin = qlin + s * c
                break
            if s == y:
                qlin = qlin + p * c
                break
        else:
            r.append((c, a))
    return qlin, Lin._trusted(tuple(r), x.const)


def emit_lin(x: Lin, ctx: Ctx) -> Any:
    """The engine term of ``x`` (``ctx.lin``)."""
    return ctx.lin(x)


@dataclass(frozen=True)
class RuleOut:
    """A rule's result: ``lin + sum(c*t for c, t in extra)`` (t engine terms).

    ``DivModRule.out`` / ``SumRule.out`` return it; ``emit(ctx)`` builds the term.
    """

    lin: Lin
    extra: tuple[tuple[int, Any], ...] = ()

    def __neg__(self) -> RuleOut:
        return RuleOut(-self.lin, tuple((-c, t) for c, t in self.extra))

    def emit(self, ctx: Ctx) -> Any:
        if not self.extra:
            return ctx.lin(self.lin)
        return ctx.sum([(c, ctx.atom(a)) for c, a in self.lin.terms] + list(self.extra),
                       self.lin.const)


def _div_term(ctx: Ctx, op: Op, x: Lin, y: Lin | int) -> Any:
    yt = ctx.lin(y) if isinstance(y, Lin) else ctx.const(y)
    return (ctx.idiv if op == "idiv" else ctx.mod)(ctx.lin(x), yt)


def _out(x: Lin, *extra: tuple[int, Any]) -> RuleOut:
    return RuleOut(x, tuple(e for e in extra if e[0] != 0))


Core = Callable[[str, Lin, Lin, Ctx], RuleOut | None]


def normalize_signs(op: str, x: Lin, y: Lin, ctx: Ctx) -> tuple[Lin, Lin, bool] | None:
    """``(x', y', negate)`` with ``x' >= 0``, ``y' > 0`` and ``x OP y`` equal to
    ``x' OP y'``, negated when ``negate``; None when ``y``'s range holds 0 or ``x``'s
    crosses 0 (C truncation differs from floor there).

    ``x//y == -(x//(-y))``, ``x%y == x%(-y)``; for ``x <= 0``:
    ``x//y == -((-x)//y)`` and ``x%y == -((-x)%y)``."""
    ylo, yhi = lin_bounds(y, ctx)
    flip_y = yhi < 0
    if not flip_y and ylo <= 0:
        return None
    xlo, xhi = lin_bounds(x, ctx)
    if xlo >= 0:
        flip_x = False
    elif xhi <= 0:
        flip_x = True
    else:
        return None
    negate = (flip_x != flip_y) if op == "idiv" else flip_x
    return (-x if flip_x else x), (-y if flip_y else y), negate


def _normalized(core: Core) -> Core:
    """Run ``core`` (which needs ``x >= 0`` and ``y > 0``) on every sign case
    (:func:`normalize_signs`); ``.raw`` is ``core`` itself, for a caller that
    normalizes once for many such rules (:class:`DivisionReading`)."""

    def fn(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
        norm = normalize_signs(op, x, y, ctx)
        if norm is None:
            return None
        r = core(op, norm[0], norm[1], ctx)
        if r is None:
            return None
        return -r if norm[2] else r

    fn.__name__ = core.__name__
    fn.__doc__ = core.__doc__
    fn.raw = core  # type: ignore[attr-defined]
    return fn


_UNSET: Any = object()


class DivisionReading:
    """``x OP y`` read once for the many core rules tried on it: ``out(core, raw, ctx)``
    is what the rule's ``DivModRule.out`` gives past its shared checks (the divisor's
    range, the atoms' Invalid: the caller's), the rules written for ``x >= 0, y > 0``
    (``raw``: :func:`_normalized`'s) sharing one :func:`normalize_signs`, made at the
    first of them, each result negated back as their wrapper does. It holds no
    context: a reading kept per node does not keep the node."""

    __slots__ = ("op", "x", "y", "_norm")

    def __init__(self, op: str, x: Lin, y: Lin):
        self.op, self.x, self.y, self._norm = op, x, y, _UNSET

    def __repr__(self) -> str:
        return f"DivisionReading({self.op!r}, {self.x!r}, {self.y!r})"

    def out(self, core: Core, raw: Core | None, ctx: Ctx) -> RuleOut | None:
        if raw is None:
            return core(self.op, self.x, self.y, ctx)
        norm = self._norm
        if norm is _UNSET:
            norm = self._norm = normalize_signs(self.op, self.x, self.y, ctx)
        if norm is None:
            return None
        r = raw(self.op, norm[0], norm[1], ctx)
        return -r if r is not None and norm[2] else r


def _const_divisor(y: Lin) -> int | None:
    return y.const if y.is_const and y.const != 0 else None


# ---------------------------------------------------------------------------
# range-based fast paths (docs/rules.md, seed 003 §2, seed 000 §19)
# ---------------------------------------------------------------------------
def _idiv_one_bucket(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x // n -> k when every value of x truncates to the same k (n constant)."""
    n = _const_divisor(y)
    xlo, xhi = lin_bounds(x, ctx)
    if n is None or x.is_const or not _finite(xlo, xhi):
        return None
    q = cdiv(_whole(xlo), n)
    return _out(Lin.constant(q)) if q == cdiv(_whole(xhi), n) else None


@_normalized
def _mod_drop_multiple(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a*n + b) % n -> b % n, n constant, when b >= 0 (after sign normalization)."""
    n = _const_divisor(y)
    if n is None:
        return None
    if not _splits_off(x, n):
        return None  # (q would be 0)
    q, r = split_divisible(x, y, ctx)
    if q.is_zero or lin_bounds(r, ctx)[0] < 0:
        return None
    return _out(_ZERO) if r.is_zero else _out(_ZERO, (1, _div_term(ctx, "mod", r, n)))


@_normalized
def _idiv_drop_multiple_small(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a*n + b) // n -> a when 0 <= b < n and a*n + b >= 0 (n constant)."""
    n = _const_divisor(y)
    if n is None:
        return None
    if not _splits_off(x, n):
        return None  # (q would be 0)
    q, r = split_divisible(x, y, ctx)
    rlo, rhi = lin_bounds(r, ctx)
    if q.is_zero or not (0 <= rlo and rhi < n):
        return None
    return _out(q)


@_normalized
def _idiv_drop_multiple(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a*n + b) // n -> a + b // n when b >= 0 and a*n + b >= 0 (n constant)."""
    n = _const_divisor(y)
    if n is None:
        return None
    if not _splits_off(x, n):
        return None  # (q would be 0)
    q, r = split_divisible(x, y, ctx)
    if q.is_zero or lin_bounds(r, ctx)[0] < 0:
        return None
    return _out(q) if r.is_zero else _out(q, (1, _div_term(ctx, "idiv", r, n)))


def _residues(x: Lin, n: int, ctx: Ctx) -> set[int] | None:
    """A superset of ``{v mod n}`` (floor) over the values v of ``x`` (n > 0), or None.

    Residues of a sum are sums of the terms' residues, so each term contributes
    the residues of ``f*t`` for ``t`` in its atom's range (all multiples of
    ``gcd(f, n)`` once the range is long enough).
    """
    if n > 4096:
        return None
    acc = {x.const % n}
    for f, a in x.terms:
        lo, hi = ctx.bounds(a)
        g = math.gcd(f, n)
        if not _finite(lo, hi) or hi - lo + 1 >= n // g:
            rs = set(range(0, n, g))
        else:
            rs = {(f * t) % n for t in range(int(lo), int(hi) + 1)}
        acc = {(p + r) % n for p in acc for r in rs}
        if len(acc) == n:
            break
    return acc


def _remainder_range(rest: Lin, n: int, ctx: Ctx) -> tuple[int, int] | None:
    """(min, max) of ``v % n`` over the values v >= 0 of ``rest`` (n > 0)."""
    lo, hi = lin_bounds(rest, ctx)
    if lo < 0 or not _finite(lo, hi):
        return None
    lo, hi = int(lo), int(hi)
    if lo // n == hi // n:
        return lo % n, hi % n
    rs = _residues(rest, n, ctx)
    if rs is None:
        return 0, n - math.gcd(rest.content(), n)
    return min(rs), max(rs)


@_normalized
def _idiv_small_offset(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(x + c) // d -> x // d when adding c crosses no multiple of d (x, x+c >= 0)."""
    d = _const_divisor(y)
    c = x.const
    if d is None or c == 0 or x.is_const:
        return None
    rest = Lin(x.terms, 0)
    rr = _remainder_range(rest, d, ctx)
    if rr is None:
        return None
    if (c > 0 and rr[1] + c < d) or (c < 0 and rr[0] + c >= 0):
        return _out(_ZERO, (1, _div_term(ctx, "idiv", rest, d)))
    return None


@_normalized
def _idiv_large_offset(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(x + c) // d -> (x + c%d) // d + c//d (floor c%d, c//d) when c is not in [0, d)."""
    d = _const_divisor(y)
    c = x.const
    if d is None or x.is_const or 0 <= c < d:
        return None
    rest = Lin(x.terms, c % d)
    if lin_bounds(rest, ctx)[0] < 0 or not _offset_split_pays(x, d, ctx):
        return None
    return _out(Lin.constant(c // d), (1, _div_term(ctx, "idiv", rest, d)))


def _offset_split_pays(x: Lin, d: int, ctx: Ctx) -> bool:
    """Whether splitting ``x``'s constant c off ``x // d`` (``(x - c + c%d) // d + c//d``)
    is kept: always where every rewrite is kept beside the others (the e-graph); for an
    engine that keeps the first rewrite (``ctx.greedy``, the ordered matcher) only where
    it costs no operation: c%d is 0, or it crosses no multiple of d and drops
    (idiv_small_offset). Otherwise the split adds an addition, and keeping the one
    division lets a nested division with an offset stay one division
    (``(a//3 + 5)//4 -> (a + 15)//12``, nested_idiv_offset)."""
    r = x.const % d
    if r == 0 or d < 0 or not getattr(ctx, "greedy", False):
        return True
    rr = _remainder_range(Lin(x.terms, 0), d, ctx)
    return rr is not None and rr[1] + r < d


# ---------------------------------------------------------------------------
# fold_divmod_general (docs/rules.md, seed 003 §3), in priority order
# ---------------------------------------------------------------------------
def _cancel_divmod(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x // y -> q, x % y -> x - q*y when all four corner quotients are q."""
    xlo, xhi = lin_bounds(x, ctx)
    ylo, yhi = lin_bounds(y, ctx)
    if not _finite(xlo, xhi, ylo, yhi) or ylo * yhi <= 0:
        return None
    qs = [cdiv(_whole(a), _whole(b)) for a in (xlo, xhi) for b in (ylo, yhi)]
    q = qs[0]
    if any(p != q for p in qs[1:]):
        return None
    return _out(Lin.constant(q)) if op == "idiv" else _out(x - y * q)


def _remove_nested_mod(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a%(k*c) + b) % c -> (a + b) % c when the sum keeps its sign class."""
    c = _const_divisor(y)
    if c is None:
        return None
    new: list[tuple[int, Any]] = []
    const = x.const
    changed = False
    for f, a in x.terms:
        for inner, m in ctx.mod_parts(a):
            if m.divide(c) is not None and not m.is_zero:
                new.extend((f * g, b) for g, b in inner.terms)
                const += f * inner.const
                changed = True
                break
        else:
            new.append((f, a))
    if not changed:
        return None
    nx = Lin.of(new, const)
    single = len(x.terms) == 1 and x.const == 0  # f*(a%m) and f*a share their sign
    if not single and not _same_sign_class(lin_bounds(x, ctx), lin_bounds(nx, ctx)):
        return None
    return _out(_ZERO, (1, _div_term(ctx, "mod", nx, y)))


def _fold_binary_numerator(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """f*v + k OP c -> linear map between its two values when v takes exactly two."""
    c = _const_divisor(y)
    if c is None or len(x.terms) != 1:
        return None
    f, v = x.terms[0]
    lo, hi = ctx.bounds(v)
    if not _finite(lo, hi) or hi - lo != 1:
        return None
    ev = cdiv if op == "idiv" else cmod
    y1, y2 = ev(f * int(lo) + x.const, c), ev(f * int(hi) + x.const, c)
    return _out(Lin.atom(v, y2 - y1) + (y1 - (y2 - y1) * int(lo)))


#: the choices congruence tries vary at most the last this many ties (2**_TIE_BITS >=
#: _MAX_TIE_COMBOS)
_TIE_BITS = (_MAX_TIE_COMBOS - 1).bit_length()


def _add_scaled(lo: Num, hi: Num, r: int, a: Any, ctx: Ctx) -> tuple[Num, Num]:
    """``(lo, hi)`` plus the bounds of ``r*a`` (unchanged for ``r == 0``)."""
    if not r:
        return lo, hi
    alo, ahi = ctx.bounds(a)
    if r > 0:
        return lo + r * alo, hi + r * ahi
    return lo + r * ahi, hi + r * alo


@_normalized
def _fold_divmod_congruence(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """Replace each coefficient by its nearest residue mod c; fold if one bucket."""
    c = _const_divisor(y)
    if c is None or x.is_const:
        return None
    choices = []
    ties = []
    for i, (f, _) in enumerate(x.terms):
        r = f % c
        if 2 * r == c:
            ties.append(i)
            choices.append((r, r - c))
        else:
            choices.append((min(r, r - c, key=abs),))
    # the first _MAX_TIE_COMBOS choices (the last factor varying fastest) vary only the
    # last _TIE_BITS ties: the terms before them keep their first residue, so their part
    # of the bounds is summed once, in the same order, not once per choice
    fixed = ties[-_TIE_BITS] if len(ties) > _TIE_BITS else (ties[0] if ties else len(choices))
    lo0 = hi0 = x.const % c
    for i in range(fixed):
        lo0, hi0 = _add_scaled(lo0, hi0, choices[i][0], x.terms[i][1], ctx)
    head, rest = tuple(ch[0] for ch in choices[:fixed]), x.terms[fixed:]
    for tail in itertools.islice(itertools.product(*choices[fixed:]), _MAX_TIE_COMBOS):
        # lin_bounds of the remainder form, before making it (most choices fail)
        lo, hi = lo0, hi0
        for r, (_, a) in zip(tail, rest, strict=True):
            lo, hi = _add_scaled(lo, hi, r, a, ctx)
        if not _finite(lo, hi) or int(lo) // c != int(hi) // c:
            continue
        rems = head + tail
        b = int(lo) // c
        if op == "mod":
            rem = Lin.of([(r, a) for r, (_, a) in zip(rems, x.terms, strict=True)],
                         x.const % c)
            return _out(rem - b * c)
        quo = Lin.of([((f - r) // c, a) for r, (f, a) in zip(rems, x.terms, strict=True)],
                     x.const // c + b)
        return _out(quo)
    return None


@_normalized
def _gcd_with_remainder(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(g*a + k) // c -> (a + (k%c)//g) // (c/g) + k//c, g = gcd(coefs, c) > 1."""
    c = _const_divisor(y)
    if c is None or x.is_const:
        return None
    g = math.gcd(x.content(), c)
    if g <= 1:
        return None
    nx = Lin(tuple((f // g, a) for f, a in x.terms), (x.const % c) // g)
    if lin_bounds(nx, ctx)[0] < 0:
        return None
    cg = c // g
    if op == "idiv":
        if cg == 1:
            return _out(nx + x.const // c)
        return _out(Lin.constant(x.const // c), (1, _div_term(ctx, "idiv", nx, cg)))
    if cg == 1:
        return _out(Lin.constant(x.const % g))
    return _out(Lin.constant(x.const % g), (g, _div_term(ctx, "mod", nx, cg)))


def _divide_by_gcd(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x // y -> (x/g) // (y/g), x % y -> ((x/g) % (y/g))*g, g = gcd of all (any sign)."""
    g = math.gcd(x.content_all(), y.content_all())
    if g <= 1:
        return None
    nx, ny = x.divide(g), y.divide(g)
    assert nx is not None and ny is not None
    if ny.is_const and abs(ny.const) == 1:
        if op == "mod":
            return _out(_ZERO)
        return _out(nx * ny.const)
    if op == "idiv":
        return _out(_ZERO, (1, _div_term(ctx, "idiv", nx, ny)))
    return _out(_ZERO, (g, _div_term(ctx, "mod", nx, ny)))


@_normalized
def _factor_remainder(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(y*q + r) // y -> q + r // y, (y*q + r) % y -> r % y when r >= 0 (last resort)."""
    n = _const_divisor(y)
    quo = _ZERO
    rem: list[tuple[int, Any]] = []
    changed = False
    if n is not None:
        q: dict = {}  # atom -> floor(f/n), non-zero (f >= n or f < 0), atoms in x's order
        for f, a in x.terms:
            if f % n != f:  # f >= n or f < 0: split off floor(f/n)*n
                changed = True
                q[a] = f // n
                if f % n:
                    rem.append((f % n, a))
            else:
                rem.append((f, a))
        k = x.const
        if k % n != k:
            # the constant alone: split only where it costs nothing (for idiv)
            if changed or op == "mod" or _offset_split_pays(x, n, ctx):
                changed = True
        if not changed:
            return None
        quo, rk = Lin._raw(q, k // n), k % n
    else:
        split = split_divisible(x, y, ctx)
        if split is None:
            return None
        quo, r = split
        changed = not quo.is_zero
        rem, rk = list(r.terms), r.const
    if not changed:
        return None
    nr = Lin._trusted(tuple(rem), rk)
    if lin_bounds(nr, ctx)[0] < 0:
        return None
    if op == "mod":
        return _out(_ZERO) if nr.is_zero else _out(_ZERO, (1, _div_term(ctx, "mod", nr, y)))
    return _out(quo) if nr.is_zero else _out(quo, (1, _div_term(ctx, "idiv", nr, y)))


@_normalized
def _nest_div_by_smallest_factor(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x // c -> (x // f) // (c/f), x % c -> ((x//f) % (c/f))*f + x%f, with f the
    smallest coefficient dividing c, when x // f folds to a form with no division."""
    c = _const_divisor(y)
    if c is None or c <= 1:
        return None
    cands = [abs(f) for f, _ in x.terms if 1 < abs(f) < c and c % f == 0]
    if not cands:
        return None
    for div in sorted(set(cands)):  # the smallest factor whose x // f folds away
        inner = _first(GENERAL, "idiv", x, Lin.constant(div), ctx)
        if inner is not None and not inner.extra:
            break
    else:
        return None
    if op == "idiv":
        return _out(_ZERO, (1, _div_term(ctx, "idiv", inner.lin, c // div)))
    b = Lin.of([(f % div, a) for f, a in x.terms], x.const % div)
    blo, bhi = lin_bounds(b, ctx)
    if not (0 <= blo and bhi < div):
        return None
    return _out(b, (div, _div_term(ctx, "mod", inner.lin, c // div)))


# ---------------------------------------------------------------------------
# advanced division (docs/rules.md, seed 003 §4) and the nested-division recombination (#5)
# ---------------------------------------------------------------------------
def _idiv_of_mod(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a % (k*c)) // c -> (a // c) % k for constant c > 0 (any sign of a)."""
    c = _const_divisor(y)
    a = x.single_atom
    if c is None or c <= 0 or a is None:
        return None
    for inner, m in ctx.mod_parts(a):
        if m.is_const and m.const != 0 and m.const % c == 0 and abs(m.const) != c:
            k = abs(m.const) // c
            return _out(_ZERO, (1, ctx.mod(_div_term(ctx, "idiv", inner, c), ctx.const(k))))
    return None


def _exact_division(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x // y -> x/y and x % y -> 0 when y divides every term (expr.divides(d))."""
    if y.is_const and y.const and not x.divisible_by(y.const):
        return None  # (the remainder would not be 0)
    split = split_divisible(x, y, ctx)
    if split is None or not split[1].is_zero:
        return None
    return _out(split[0]) if op == "idiv" else _out(_ZERO)


def _sum_divisible_symbolic(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a*y + b) // y -> a + b // y, (a*y + b) % y -> b % y (symbolic y, a*y+b and b
    of one sign class; a - b is the same rule with a negative coefficient)."""
    if y.is_const:
        return None
    split = split_divisible(x, y, ctx)
    if split is None:
        return None
    q, r = split
    if q.is_zero or r.is_zero:
        return None
    if not _same_sign_class(lin_bounds(x, ctx), lin_bounds(r, ctx)):
        return None
    if op == "idiv":
        return _out(q, (1, _div_term(ctx, "idiv", r, y)))
    return _out(_ZERO, (1, _div_term(ctx, "mod", r, y)))


@_normalized
def _mod_coef_reduce(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(f*a + k) % c -> ((f%c)*a + k%c) % c when both sides are >= 0 (c constant)."""
    c = _const_divisor(y)
    if c is None:
        return None
    if x.const % c == x.const and all([f % c == f for f, _ in x.terms]):
        return None  # every coefficient reduced already: nx would be x
    nx = Lin.of([(f % c, a) for f, a in x.terms], x.const % c)
    if nx == x or lin_bounds(nx, ctx)[0] < 0:
        return None
    return _out(_ZERO) if nx.is_zero else _out(_ZERO, (1, _div_term(ctx, "mod", nx, c)))


def _nested_idiv_offset(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """(a//c1 + c2) // c3 -> (a + c1*c2) // (c1*c3) for c1, c3 > 0 and a, c2 of one sign."""
    c3 = _const_divisor(y)
    if c3 is None or c3 <= 0 or x.const == 0 or len(x.terms) != 1 or x.terms[0][0] != 1:
        return None
    c2 = x.const
    for a, c1l in ctx.idiv_parts(x.terms[0][1]):
        c1 = _const_divisor(c1l)
        if c1 is None or c1 <= 0:
            continue
        alo, ahi = lin_bounds(a, ctx)
        if (alo >= 0 and c2 >= 0) or (ahi <= 0 and c2 <= 0):
            return _out(_ZERO, (1, _div_term(ctx, "idiv", a + c1 * c2, c1 * c3)))
    return None


# ---------------------------------------------------------------------------
# recombination over sums (docs/rules.md, seed 003 §1, #1-#4)
# ---------------------------------------------------------------------------
def _chains(x: Lin, ctx: Ctx, depth: int = 8) -> list[tuple[Lin, int]]:
    """Every ``(base, k)`` with ``x == base // k`` known structurally: ``(x, 1)``, and
    through nested constant divisions (``(b//k1)//k2 == b//(k1*k2)`` under C)."""
    out = [(x, 1)]
    a = x.single_atom
    if a is not None and depth > 0:
        for inner, d in ctx.idiv_parts(a):
            if d.is_const and d.const != 0:
                out.extend((base, k * d.const) for base, k in _chains(inner, ctx, depth - 1))
    return out


def _is_quotient(q: Lin, x: Lin, n: int, ctx: Ctx) -> bool:
    """``q == x // n`` structurally (both read through their nested divisions)."""
    cx = _chains(x, ctx)
    return any(bq == bx and kq == kx * n for bq, kq in _chains(q, ctx) for bx, kx in cx)


def _offset_quotient(d: Any, x: Lin, n: int, ctx: Ctx) -> Lin | None:
    """``x + k*n`` when the atom ``d`` is ``(x + k*n) // n`` with ``x`` and ``x + k*n`` of
    one sign (then ``d == x//n + k`` under C, so ``x%n + n*d == x + k*n``)."""
    for xo, no in ctx.idiv_parts(d):
        diff = xo - x
        if no.is_const and no.const == n and diff.is_const and diff.const % n == 0 and \
                _same_sign_class(lin_bounds(x, ctx), lin_bounds(xo, ctx)):
            return xo
    return None


def _recombine(s: Lin, ctx: Ctx) -> Lin | None:
    """One step of ``f*(x%n) + f*n*(x//n) -> f*x`` (#1, #3, #4; #2 when ``x`` is itself
    a division ``b//a`` and the partner is ``b//(a*n)``). Holds under C for every x
    and non-zero n (the division identity); symbolic n as ``f*((x//n)*n)``. The quotient
    may be of ``x + k*n`` (of ``x``'s sign): ``f*(x%n) + f*n*((x + k*n)//n) -> f*(x + k*n)``."""
    for f, m in s.terms:
        for x, n in ctx.mod_parts(m):
            for g, d in s.terms:
                if d == m:
                    continue
                if n.is_const:
                    if n.const == 0 or g != f * n.const:
                        continue
                    if _is_quotient(Lin.atom(d), x, n.const, ctx):
                        return s - Lin.of([(f, m), (g, d)]) + x * f
                    xo = _offset_quotient(d, x, n.const, ctx)
                    if xo is not None:  # f*(x%n) + f*n*((x + k*n)//n) -> f*(x + k*n)
                        return s - Lin.of([(f, m), (g, d)]) + xo * f
                elif g == f and _invalid_free(ctx, n):  # n is dropped
                    for p, q in ctx.mul_parts(d):
                        for pp, qq in ((p, q), (q, p)):
                            a = pp.single_atom
                            if qq == n and a is not None and any(
                                    xx == x and nn == n for xx, nn in ctx.idiv_parts(a)):
                                return s - Lin.of([(f, m), (g, d)]) + x * f
    return None


def recombine_sum(s: Lin, ctx: Ctx) -> Lin | None:
    """Apply :func:`_recombine` to a fixed point; None when nothing recombines."""
    out = None
    for _ in range(len(s.terms)):
        nxt = _recombine(s if out is None else out, ctx)
        if nxt is None:
            break
        out = nxt
    return out


def _recombine_sum_out(s: Lin, ctx: Ctx) -> RuleOut | None:
    r = recombine_sum(s, ctx)
    return None if r is None else RuleOut(r)


def _recombine_mod_chain(s: Lin, ctx: Ctx) -> RuleOut | None:
    """``g*e*((x//e) % d) + g*(x % e) -> g*(x % (e*d))`` for constants e > 0, d != 0
    (the mod form of the division identity; holds under C for every x)."""
    for f, m in s.terms:
        for p, dl in ctx.mod_parts(m):
            if not dl.is_const or dl.const == 0:
                continue
            d = abs(dl.const)
            for g, nm in s.terms:
                if nm == m:
                    continue
                for x, el in ctx.mod_parts(nm):
                    e = el.const if el.is_const else 0
                    if e > 0 and f == g * e and _is_quotient(p, x, e, ctx):
                        rest = s - Lin.of([(f, m), (g, nm)])
                        return _out(rest, (g, _div_term(ctx, "mod", x, e * d)))
    return None


def _recombine_quotient_sum(s: Lin, ctx: Ctx) -> RuleOut | None:
    """``f*((x//c1 + c2) % c3) + f*c3*((x + c1*c2) // (c1*c3)) -> f*(x//c1 + c2)`` for
    c1, c3 > 0, x >= 0 and x + c1*c2 >= 0, the two terms anywhere in the sum: there
    ``y = x//c1 + c2`` is non-negative and ``y // c3 == (x + c1*c2) // (c1*c3)`` (floor
    division nests), so the pair is the division identity ``y%c3 + c3*(y//c3) == y``.
    ``x//c1`` is read through nested constant divisions (``(b//k1)//k2 == b//(k1*k2)``)."""
    for f, m in s.terms:
        for y, n in ctx.mod_parts(m):
            if not n.is_const or n.const <= 0 or len(y.terms) != 1 or y.terms[0][0] != 1:
                continue
            c2, c3 = y.const, n.const
            for x, c1 in _chains(Lin.atom(y.terms[0][1]), ctx):
                lo = lin_bounds(x, ctx)[0]
                if c1 <= 0 or lo < 0 or lo + c1 * c2 < 0:
                    continue
                for g, d in s.terms:
                    if d == m or g != f * c3:
                        continue
                    for xo, no in ctx.idiv_parts(d):
                        diff = xo - x
                        if no.is_const and no.const == c1 * c3 and diff.is_const and \
                                diff.const == c1 * c2:
                            return RuleOut(s - Lin.of([(f, m), (g, d)]) + y * f)
    return None


# ---------------------------------------------------------------------------
# rule objects
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class DivModRule:
    """One rewrite ``x OP y -> ...`` of the family.

    ``rule(op, x, y, ctx)`` (or ``rule.fn``) returns the engine term of the result,
    or None when ``op`` is not one of ``ops`` or the guard does not hold. No rule
    fires when the divisor's range may contain 0.
    """

    name: str
    identity: str
    ops: tuple[str, ...]
    core: Core = field(repr=False)
    group: str = ""

    def out(self, op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
        """The result as a linear part plus engine terms (internal form)."""
        if op not in ("idiv", "mod"):
            raise ValueError(f"{self.name}: op must be 'idiv' or 'mod', got {op!r}")
        if op not in self.ops:
            return None
        ylo, yhi = lin_bounds(y, ctx)
        if ylo <= 0 <= yhi or not _invalid_free(ctx, x, y):
            return None
        return self.core(op, x, y, ctx)

    def fn(self, op: str, x: Lin, y: Lin, ctx: Ctx) -> Any:
        """The engine term of ``x OP y`` rewritten by this rule, or None."""
        r = self.out(op, x, y, ctx)
        return None if r is None else r.emit(ctx)

    __call__ = fn

    def __repr__(self) -> str:
        return f"DivModRule({self.name!r}, {self.identity!r}, ops={self.ops!r})"


@dataclass(frozen=True)
class SumRule:
    """One rewrite of a whole sum: ``rule(s, ctx)`` -> engine term or None."""

    name: str
    identity: str
    core: Callable[[Lin, Ctx], RuleOut | None] = field(repr=False)
    #: whether the rule only rewrites sums holding a division (the e-graph skips it on a
    #: sum whose cheapest term has none)
    divisions: bool = True

    def out(self, s: Lin, ctx: Ctx) -> RuleOut | None:
        """The result as a linear part plus engine terms (internal form)."""
        return self.core(s, ctx)

    def fn(self, s: Lin, ctx: Ctx) -> Any:
        """The engine term of the rewritten sum, or None."""
        r = self.core(s, ctx)
        return None if r is None else r.emit(ctx)

    __call__ = fn

    def __repr__(self) -> str:
        return f"SumRule({self.name!r}, {self.identity!r})"


_B, _M, _I = ("idiv", "mod"), ("mod",), ("idiv",)

RANGE_BASED: tuple[DivModRule, ...] = (
    DivModRule("idiv_one_bucket", "x // n -> k when every x truncates to k", _I,
               _idiv_one_bucket, "range_based"),
    DivModRule("mod_drop_multiple", "(a*n + b) % n -> b % n when a*n+b, b share a sign", _M,
               _mod_drop_multiple, "range_based"),
    DivModRule("idiv_drop_multiple_small", "(a*n + b) // n -> a when 0 <= b < n, a*n+b >= 0",
               _I, _idiv_drop_multiple_small, "range_based"),
    DivModRule("idiv_drop_multiple", "(a*n + b) // n -> a + b // n when a*n+b, b share a sign",
               _I, _idiv_drop_multiple, "range_based"),
    DivModRule("idiv_small_offset", "(x + c) // d -> x // d when max(x%d) + c < d, x >= 0",
               _I, _idiv_small_offset, "range_based"),
    DivModRule("idiv_large_offset", "(x + c) // d -> (x + c%d) // d + c//d when c not in [0,d)",
               _I, _idiv_large_offset, "range_based"),
)

GENERAL: tuple[DivModRule, ...] = (
    DivModRule("cancel_divmod", "x // y -> q, x % y -> x - q*y when all corners give q", _B,
               _cancel_divmod, "fold_divmod_general"),
    DivModRule("remove_nested_mod", "(a%(k*c) + b) % c -> (a + b) % c", _M,
               _remove_nested_mod, "fold_divmod_general"),
    DivModRule("fold_binary_numerator", "(f*v + k) OP c -> (y2-y1)*(v-lo) + y1, v in {lo, lo+1}",
               _B, _fold_binary_numerator, "fold_divmod_general"),
    DivModRule("fold_divmod_congruence", "sum(f*v) OP c -> via residues f%c when one bucket", _B,
               _fold_divmod_congruence, "fold_divmod_general"),
    DivModRule("gcd_with_remainder", "(g*a + k) // c -> (a + (k%c)//g) // (c/g) + k//c", _B,
               _gcd_with_remainder, "fold_divmod_general"),
    DivModRule("divide_by_gcd", "(g*a) // (g*b) -> a // b, (g*a) % (g*b) -> (a % b)*g", _B,
               _divide_by_gcd, "fold_divmod_general"),
    DivModRule("factor_remainder", "(d*q + r) // d -> q + r // d, (d*q + r) % d -> r % d", _B,
               _factor_remainder, "fold_divmod_general"),
    DivModRule("nest_div_by_smallest_factor", "x // c -> (x // f) // (c/f), f | c", _B,
               _nest_div_by_smallest_factor, "fold_divmod_general"),
)

ADVANCED: tuple[DivModRule, ...] = (
    DivModRule("exact_division", "x // d -> x/d, x % d -> 0 when d divides every term", _B,
               _exact_division, "advanced_division"),
    DivModRule("sum_divisible_symbolic", "(a*y + b) // y -> a + b // y (symbolic y)", _B,
               _sum_divisible_symbolic, "advanced_division"),
    DivModRule("mod_coef_reduce", "(f*a + k) % c -> ((f%c)*a + k%c) % c", _M,
               _mod_coef_reduce, "advanced_division"),
    DivModRule("idiv_of_mod", "(a % (k*c)) // c -> (a // c) % k", _I, _idiv_of_mod,
               "advanced_division"),
)

RECOMBINE: tuple[DivModRule, ...] = (
    DivModRule("nested_idiv_offset", "(a//c1 + c2) // c3 -> (a + c1*c2) // (c1*c3)", _I,
               _nested_idiv_offset, "div_mod_recombine"),
)

SUM_RULES: tuple[SumRule, ...] = (
    SumRule("recombine_divmod", "f*(x%n) + f*n*(x//n) + y -> f*x + y "
            "(and ((x//a)%c) + (x//(a*c))*c -> x//a)", _recombine_sum_out),
    SumRule("recombine_mod_chain", "g*e*((x//e) % d) + g*(x % e) + y -> g*(x % (e*d)) + y",
            _recombine_mod_chain),
    SumRule("recombine_quotient_sum", "f*((x//c1 + c2) % c3) + f*c3*((x + c1*c2)//(c1*c3)) + y "
            "-> f*(x//c1 + c2) + y (c1, c3 > 0, x >= 0, x + c1*c2 >= 0)",
            _recombine_quotient_sum),
)

DIVMOD_RULES: list[DivModRule] = [*RANGE_BASED, *GENERAL, *ADVANCED, *RECOMBINE]
RULES_BY_NAME: dict[str, DivModRule] = {r.name: r for r in DIVMOD_RULES}
assert len(RULES_BY_NAME) == len(DIVMOD_RULES), "duplicate div/mod rule names"


def _first(rules: Iterable[DivModRule], op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    for r in rules:
        out = r.out(op, x, y, ctx)
        if out is not None:
            return out
    return None


def fold_divmod_general(op: str, x: Lin, y: Lin, ctx: Ctx) -> Any:
    """tinygrad's fold_divmod_general: the 8 GENERAL rules in order, first wins."""
    out = _first(GENERAL, op, x, y, ctx)
    return None if out is None else out.emit(ctx)


def all_rewrites(op: str, x: Lin, y: Lin, ctx: Ctx,
                 rules: Iterable[DivModRule] = DIVMOD_RULES) -> list[tuple[str, Any]]:
    """``[(rule name, term)]`` for every rule that rewrites ``x OP y`` (e-graph use)."""
    res = []
    for r in rules:
        t = r.fn(op, x, y, ctx)
        if t is not None:
            res.append((r.name, t))
    return res
