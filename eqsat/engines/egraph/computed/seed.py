"""Interval bounds of the e-nodes a computed pass records, sent with them.

A term the computed pass unions in is new to the e-graph: the interval analysis
gives its e-nodes their bounds one level per round, bottom-up (an ``x//4*8 + y%3``
takes three rounds). :func:`node_bounds` is what the analysis rules of
:mod:`eqsat.engines.egraph.analyses` derive for one e-node from its operands' bounds, for
the constructors and dtypes listed in :data:`SEEDED`; :class:`BoundSeeder` computes
it for every e-node a pass records (operands: the snapshot's bounds of existing
classes, the seeds of new ones) and records ``RLo``/``RHi`` rows for it, which the
engine loads after the step's native rules and before its analysis.

Nothing changes but the number of analysis rounds: every seed is what one analysis
rule derives from bounds the e-graph already had (the snapshot's bounds only tighten
later, and every rule is monotone in its operands' bounds), so the analysis reaches
the same fixed point; loading the seeds after the native rules keeps their guards
seeing what they saw before. The intervals are :mod:`eqsat.ir.semantics`'s; what is
the analysis's own is when a rule fires: only when every bound it reads is known,
and only when its arithmetic stays in i64 (an overflow is "no match" in egglog).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from eqsat.ir.ops import Ops
from eqsat.ir.semantics import (
    Interval,
    cmp_decided,
    iv_add,
    iv_hull,
    iv_idiv_any,
    iv_idiv_corners,
    iv_max,
    iv_min,
    iv_mod_bucket,
    iv_mod_range,
    iv_mul,
    iv_neg,
    iv_not_bool,
    iv_sub,
)

__all__ = ["node_bounds", "BoundSeeder", "SEEDED"]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

_Bound = tuple[int | None, int | None]  # (lo, hi); None: not known


def _fits(*vs: int) -> bool:
    for v in vs:
        if v < I64_MIN or v > I64_MAX:
            return False
    return True


def _meet(out: list, lo: int | None, hi: int | None) -> None:
    if lo is not None and (out[0] is None or lo > out[0]):
        out[0] = lo
    if hi is not None and (out[1] is None or hi < out[1]):
        out[1] = hi


def _both(f: Callable[[Interval, Interval], Interval]) -> Callable[[_Bound, _Bound, list], None]:
    """The rule of ``f``: it reads both operands' two bounds, and sets both of the
    result's when they fit i64 (``iv_add``, ``iv_sub``, ``iv_mul``, ``iv_max``,
    ``iv_min``; ``iv_and_bool``/``iv_or_bool`` are ``iv_min``/``iv_max`` on 0/1)."""

    def rule(a: _Bound, b: _Bound, out: list) -> None:
        if None in a or None in b:
            return
        lo, hi = f(a, b)  # type: ignore[arg-type]
        if _fits(lo, hi):
            _meet(out, lo, hi)

    return rule


def _idiv(a: _Bound, b: _Bound, out: list) -> None:
    if None in a:
        return
    lo, hi = iv_idiv_any(a)  # type: ignore[arg-type]  # iv_idiv_any
    if _fits(lo, hi):
        _meet(out, lo, hi)
    lb, hb = b
    if lb is None or hb is None:
        return
    # iv_idiv_nonzero (a divisor bound of 0 makes egglog's division fail: no match; only
    # an empty interval, of a class without a value, has lb > 0 and hb == 0)
    if (lb > 0 or hb < 0) and lb != 0 and hb != 0:
        lo, hi = iv_idiv_corners(a, b)  # type: ignore[arg-type]
        if _fits(lo, hi):
            _meet(out, lo, hi)


def _mod(a: _Bound, b: _Bound, out: list) -> None:
    la, ha = a
    lb, hb = b
    if la is not None and la >= 0:  # iv_mod_lo_pos
        _meet(out, 0, None)
    if ha is not None and ha <= 0:  # iv_mod_hi_neg
        _meet(out, None, 0)
    if lb is None or hb is None or la is None or ha is None:
        return
    m = max(abs(lb), abs(hb))
    if not _fits(m) or m <= 0:
        return
    _meet(out, *iv_mod_range((la, ha), m))  # iv_mod_range
    # iv_mod_bucket: a constant divisor (its rule computes la*ha: that must fit too)
    if lb == hb and _fits(la * ha):
        r = iv_mod_bucket((la, ha), lb)
        if r is not None:
            _meet(out, *r)


def _known(a: _Bound) -> Interval:
    return (-math.inf if a[0] is None else a[0]), (math.inf if a[1] is None else a[1])


def _cmp(op: Ops) -> Callable[[_Bound, _Bound, list], None]:
    """The rules of a comparison: ``iv_<op>`` ([0, 1]), ``iv_<op>_true``/``_false``
    (and ``iv_eq_apart_*``/``iv_ne_apart_*``), each reading only the bounds it needs."""

    def rule(a: _Bound, b: _Bound, out: list) -> None:
        _meet(out, 0, 1)
        always, never = cmp_decided(op, _known(a), _known(b))
        if always:
            _meet(out, 1, 1)
        if never:
            _meet(out, 0, 0)

    return rule


#: (ctor, dtype) -> the binary rules' bounds, for the e-nodes seeded
_BINARY: dict[tuple[str, str], Callable[[_Bound, _Bound, list], None]] = {
    ("Add", "index"): _both(iv_add), ("Sub", "index"): _both(iv_sub),
    ("Mul", "index"): _both(iv_mul), ("Idiv", "index"): _idiv, ("Mod", "index"): _mod,
    ("Max", "index"): _both(iv_max), ("Min", "index"): _both(iv_min),
    ("Lt", "bool"): _cmp(Ops.LT), ("Le", "bool"): _cmp(Ops.LE), ("Gt", "bool"): _cmp(Ops.GT),
    ("Ge", "bool"): _cmp(Ops.GE), ("Eq", "bool"): _cmp(Ops.EQ), ("Ne", "bool"): _cmp(Ops.NE),
    ("And", "bool"): _both(iv_min), ("Or", "bool"): _both(iv_max),
}

#: the (constructor, dtype) pairs :func:`node_bounds` knows (``Cst``, ``Neg``, ``Not``,
#: ``Where`` and the binary ones)
SEEDED = frozenset(_BINARY) | {("Cst", "index"), ("Cst", "bool"), ("Neg", "index"),
                               ("Not", "bool"), ("Where", "index"), ("Where", "bool")}


def node_bounds(ctor: str, fields: tuple, bound: Callable[[Any], _Bound]) -> _Bound:
    """``(lo, hi)`` that the analysis rules derive for the e-node ``(ctor *fields)``
    from its operands' bounds (``bound(child) -> (lo, hi)``, None where not known);
    ``(None, None)`` for a constructor or dtype not in :data:`SEEDED`."""
    dt = fields[0]
    out: list = [None, None]
    if ctor == "Cst":
        if dt == "index" or dt == "bool":  # iv_const
            v = fields[1]
            out[0] = out[1] = v
        return out[0], out[1]
    f = _BINARY.get((ctor, dt))
    if f is not None:
        f(bound(fields[1]), bound(fields[2]), out)
    elif ctor == "Neg" and dt == "index":  # iv_neg
        a = bound(fields[1])
        if None not in a:
            lo, hi = iv_neg(a)  # type: ignore[arg-type]
            if _fits(lo, hi):
                _meet(out, lo, hi)
    elif ctor == "Not" and dt == "bool":  # iv_not_bool
        a = bound(fields[1])
        if None not in a:
            _meet(out, *iv_not_bool(a))  # type: ignore[arg-type]
    elif ctor == "Where" and (dt == "index" or dt == "bool"):
        lc, hc = bound(fields[1])
        t, e = bound(fields[2]), bound(fields[3])
        if None not in t and None not in e:  # iv_where
            _meet(out, *iv_hull(t, e))  # type: ignore[arg-type]
        if lc == 1 and None not in t:  # iv_where_true
            _meet(out, t[0], t[1])
        if hc == 0 and None not in e:  # iv_where_false
            _meet(out, e[0], e[1])
    lo, hi = out
    if lo is not None and hi is not None and lo > hi:
        return None, None  # (an empty interval is the tripwire's to find, not a seed)
    return lo, hi


class BoundSeeder:
    """Seeds the bounds of the e-nodes recorded while it is installed on an
    :class:`~eqsat.engines.egraph.encoding.Inserter` (``ins.seeder``). ``lo``/``hi``: the
    snapshot's bounds by class; ``class_of(h)``: the class of an existing handle (its
    own name when it is newer than the snapshot). A handle made while seeding gets its
    e-node's seed.

    Sums, products and constants of index, most of what a pass records, are computed
    here; every other e-node through :func:`node_bounds` (the same values)."""

    def __init__(self, lo: dict[int, int], hi: dict[int, int],
                 class_of: Callable[[int], int]):
        self.lo, self.hi, self.class_of = lo, hi, class_of
        self.seeds: dict[int, _Bound] = {}  # new handle -> its seed
        self.rows = 0  # bound rows recorded

    def __repr__(self) -> str:
        return f"<BoundSeeder {len(self.seeds)} seeds, {self.rows} rows>"

    def bound(self, h: Any) -> _Bound:
        """The bounds of the class of handle ``h``: its seed, else the snapshot's."""
        s = self.seeds.get(h)
        if s is not None:
            return s
        lo, hi = self.lo.get(h), self.hi.get(h)
        if lo is None and hi is None:  # h may be a handle other than its class's name
            c = self.class_of(h)
            if c != h:
                lo, hi = self.lo.get(c), self.hi.get(c)
        return lo, hi

    def __call__(self, ins: Any, k: int, ctor: str, fields: tuple, new: bool) -> None:
        """An e-node ``(ctor *fields)`` was recorded in the class of handle ``k``
        (``new``: a handle made for it)."""
        if not fields:
            return
        if fields[0] == "index" and (ctor == "Add" or ctor == "Mul" or ctor == "Cst"):
            if ctor == "Cst":  # iv_const
                lo = hi = fields[1]
            else:
                a, b = self.bound(fields[1]), self.bound(fields[2])
                if None in a or None in b:
                    return
                lo, hi = (iv_add if ctor == "Add" else iv_mul)(a, b)  # type: ignore[arg-type]
                if not (I64_MIN <= lo and hi <= I64_MAX):  # (every corner, for a product)
                    return
        elif (ctor, fields[0]) in SEEDED:
            lo, hi = node_bounds(ctor, fields, self.bound)
            if lo is None and hi is None:
                return
        else:
            return
        if new:
            self.seeds[k] = (lo, hi)
        self.rows += ins.late_bound(k, lo, hi)
