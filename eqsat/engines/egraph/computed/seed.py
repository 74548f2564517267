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
seeing what they saw before. A rule whose arithmetic leaves i64 does not fire in
egglog, and gives no seed here either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["node_bounds", "BoundSeeder", "SEEDED"]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

_Bound = tuple[int | None, int | None]  # (lo, hi); None: not known


def _fits(*vs: int) -> bool:
    for v in vs:
        if v < I64_MIN or v > I64_MAX:
            return False
    return True


def _tdiv(a: int, b: int) -> int:
    """i64 division as egglog does it (truncating, C)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - _tdiv(a, b) * b


def _meet(out: list, lo: int | None, hi: int | None) -> None:
    if lo is not None and (out[0] is None or lo > out[0]):
        out[0] = lo
    if hi is not None and (out[1] is None or hi < out[1]):
        out[1] = hi


def _add(a: _Bound, b: _Bound, out: list) -> None:  # iv_add
    if None in a or None in b:
        return
    lo, hi = a[0] + b[0], a[1] + b[1]
    if _fits(lo, hi):
        _meet(out, lo, hi)


def _sub(a: _Bound, b: _Bound, out: list) -> None:  # iv_sub
    if None in a or None in b:
        return
    lo, hi = a[0] - b[1], a[1] - b[0]
    if _fits(lo, hi):
        _meet(out, lo, hi)


def _mul(a: _Bound, b: _Bound, out: list) -> None:  # iv_mul
    if None in a or None in b:
        return
    ps = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    if _fits(*ps):
        _meet(out, min(ps), max(ps))


def _idiv(a: _Bound, b: _Bound, out: list) -> None:
    la, ha = a
    if la is None or ha is None:
        return
    # iv_idiv_any: |a//b| <= max(|la|, |ha|)
    m = max(abs(la), abs(ha))
    if _fits(m, -m):
        _meet(out, -m, m)
    lb, hb = b
    if lb is None or hb is None:
        return
    if lb > 0 or hb < 0:  # iv_idiv_nonzero: the corner quotients
        ps = (_tdiv(la, lb), _tdiv(la, hb), _tdiv(ha, lb), _tdiv(ha, hb))
        if _fits(*ps):
            _meet(out, min(ps), max(ps))


def _mod(a: _Bound, b: _Bound, out: list) -> None:
    la, ha = a
    lb, hb = b
    if la is not None and la >= 0:  # iv_mod_lo_pos
        _meet(out, 0, None)
    if ha is not None and ha <= 0:  # iv_mod_hi_neg
        _meet(out, None, 0)
    if lb is None or hb is None:
        return
    m = max(abs(lb), abs(hb))
    if not _fits(m) or m <= 0:
        return
    if la is not None and ha is not None:  # iv_mod_range
        _meet(out, min(0, max(la, 1 - m)), max(0, min(ha, m - 1)))
    # iv_mod_bucket: a constant divisor c, a within one bucket of one sign
    if la is not None and ha is not None and lb == hb and lb != 0:
        ac = abs(lb)
        if _fits(ac, la * ha) and _tdiv(la, ac) == _tdiv(ha, ac) and la * ha >= 0:
            _meet(out, _tmod(la, ac), _tmod(ha, ac))


def _max(a: _Bound, b: _Bound, out: list) -> None:  # iv_max
    if None not in a and None not in b:
        _meet(out, max(a[0], b[0]), max(a[1], b[1]))


def _min(a: _Bound, b: _Bound, out: list) -> None:  # iv_min
    if None not in a and None not in b:
        _meet(out, min(a[0], b[0]), min(a[1], b[1]))


def _lt(a: _Bound, b: _Bound, out: list) -> None:
    _meet(out, 0, 1)  # iv_lt
    if a[1] is not None and b[0] is not None and a[1] < b[0]:  # iv_lt_true
        _meet(out, 1, 1)
    if a[0] is not None and b[1] is not None and a[0] >= b[1]:  # iv_lt_false
        _meet(out, 0, 0)


def _le(a: _Bound, b: _Bound, out: list) -> None:
    _meet(out, 0, 1)  # iv_le
    if a[1] is not None and b[0] is not None and a[1] <= b[0]:  # iv_le_true
        _meet(out, 1, 1)
    if a[0] is not None and b[1] is not None and a[0] > b[1]:  # iv_le_false
        _meet(out, 0, 0)


def _gt(a: _Bound, b: _Bound, out: list) -> None:
    _meet(out, 0, 1)  # iv_gt
    if a[0] is not None and b[1] is not None and a[0] > b[1]:  # iv_gt_true
        _meet(out, 1, 1)
    if a[1] is not None and b[0] is not None and a[1] <= b[0]:  # iv_gt_false
        _meet(out, 0, 0)


def _ge(a: _Bound, b: _Bound, out: list) -> None:
    _meet(out, 0, 1)  # iv_ge
    if a[0] is not None and b[1] is not None and a[0] >= b[1]:  # iv_ge_true
        _meet(out, 1, 1)
    if a[1] is not None and b[0] is not None and a[1] < b[0]:  # iv_ge_false
        _meet(out, 0, 0)


def _apart(a: _Bound, b: _Bound) -> bool:
    return (a[1] is not None and b[0] is not None and a[1] < b[0]) or \
        (b[1] is not None and a[0] is not None and b[1] < a[0])


def _same(a: _Bound, b: _Bound) -> bool:
    return None not in a and None not in b and a[0] == a[1] == b[0] == b[1]


def _eq(a: _Bound, b: _Bound, out: list) -> None:
    _meet(out, 0, 1)  # iv_eq
    if _same(a, b):  # iv_eq_true
        _meet(out, 1, 1)
    if _apart(a, b):  # iv_eq_apart_ha, iv_eq_apart_hb
        _meet(out, 0, 0)


def _ne(a: _Bound, b: _Bound, out: list) -> None:
    # iv_ne, iv_ne_false, iv_ne_apart_ha, iv_ne_apart_hb: 1 - what the eq rules give
    e: list = [None, None]
    _eq(a, b, e)
    _meet(out, 1 - e[1], 1 - e[0])


#: (ctor, dtype) -> the binary rules' bounds, for the e-nodes seeded
_BINARY: dict[tuple[str, str], Callable[[_Bound, _Bound, list], None]] = {
    ("Add", "index"): _add, ("Sub", "index"): _sub, ("Mul", "index"): _mul,
    ("Idiv", "index"): _idiv, ("Mod", "index"): _mod,
    ("Max", "index"): _max, ("Min", "index"): _min,
    ("Lt", "bool"): _lt, ("Le", "bool"): _le, ("Gt", "bool"): _gt, ("Ge", "bool"): _ge,
    ("Eq", "bool"): _eq, ("Ne", "bool"): _ne,
    # iv_and_bool and iv_or_bool are iv_min and iv_max on 0/1
    ("And", "bool"): _min, ("Or", "bool"): _max,
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
        la, ha = bound(fields[1])
        if la is not None and ha is not None and _fits(-ha, -la):
            _meet(out, -ha, -la)
    elif ctor == "Not" and dt == "bool":  # iv_not_bool
        la, ha = bound(fields[1])
        if la is not None and ha is not None:
            _meet(out, 1 - ha, 1 - la)
    elif ctor == "Where" and (dt == "index" or dt == "bool"):
        lc, hc = bound(fields[1])
        t, e = bound(fields[2]), bound(fields[3])
        if None not in t and None not in e:  # iv_where
            _meet(out, min(t[0], e[0]), max(t[1], e[1]))
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
    inline; every other e-node through :func:`node_bounds` (the same values)."""

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
                la, ha = self.bound(fields[1])
                lb, hb = self.bound(fields[2])
                if la is None or ha is None or lb is None or hb is None:
                    return
                if ctor == "Add":  # iv_add
                    lo, hi = la + lb, ha + hb
                else:  # iv_mul
                    p1, p2, p3, p4 = la * lb, la * hb, ha * lb, ha * hb
                    lo, hi = min(p1, p2, p3, p4), max(p1, p2, p3, p4)
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
