"""Leading zero terms of a gated float sum skipped: the reduction loop starts later.

A cumsum's kernel sums ``load(index(buf, idx, gate))`` over a reduction loop ``r``,
the gate a conjunction with a conjunct ``c < a*r + rest`` (``a > 0``): for the first
iterations of ``r`` the gate is off for every lane and every term is the load's
``+0.0``. :func:`trim_gated_reductions` starts such a loop at ``s``, the number of
iterations whose conjunct is off for every lane (the expand ranges in ``rest`` at the
value that turns it on soonest), evaluated from the enclosing loops' indices: the
range becomes ``r'`` over ``END - s``, ``r = r' + s``. The accumulator starts at
``+0.0`` and ``+0.0 + +0.0`` is ``+0.0``, so the skipped prefix changes no bit; the
gate stays for the iterations that follow. Run after :func:`lowering.expand.jam`
and before :func:`lowering.expand.expand`, on the narrowed ``i32`` index arithmetic.
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering.expand import _affine, expandable_ranges

__all__ = ["trim_gated_reductions"]

_I32 = (-(2**31), 2**31 - 1)


def _conjuncts(g: UOp) -> list[UOp]:
    return [x for s in g.src for x in _conjuncts(s)] if g.op is Ops.AND else [g]


def _start(gate: UOp, r: UOp, lanes: set[UOp]) -> UOp | None:
    """The first iteration of ``r`` whose gate may be on, as an ``i32`` expression of
    the enclosing loops (before it every conjunct ``c < a*r + rest`` found is off for
    every lane), clamped to ``[0, END]``; None when no conjunct has that form."""
    n = int(r.src[0].arg)
    starts = []
    for cj in _conjuncts(gate):
        if cj.op is not Ops.LT or cj.src[0].op is not Ops.CONST or cj.src[1].dtype != dtypes.i32:
            continue
        e, c = cj.src[1], int(cj.src[0].arg)
        inner = {x for x in e.toposort() if x in lanes} | {r}
        coef = _affine(e, inner)
        if coef is None or coef.get(r, 0) <= 0:
            continue
        a = coef[r]
        lane_max = sum(max(0, k * (int(x.src[0].arg) - 1)) for x, k in coef.items() if x is not r)
        rest = e.substitute({x: UOp.const(x.dtype, 0) for x in inner})
        lo, hi = rest.vmin, rest.vmax
        bounds = (c - lane_max + a, c - hi - lane_max + a, c - lo - lane_max + a) \
            if isinstance(lo, int) and isinstance(hi, int) else ()
        if not bounds or not all(_I32[0] <= v <= _I32[1] for v in bounds):
            continue
        # off for every lane while a*r <= c - rest - lane_max: s = floor((that) / a) + 1
        numer = UOp(Ops.SUB, dtypes.i32, (UOp.const(dtypes.i32, c - lane_max + a), rest))
        numer = UOp(Ops.MAX, dtypes.i32, (numer, UOp.const(dtypes.i32, 0)))
        if a & (a - 1) == 0:
            q = UOp(Ops.SHR, dtypes.i32, (numer, UOp.const(dtypes.i32, a.bit_length() - 1)))
        else:
            q = UOp(Ops.IDIV, dtypes.i32, (numer, UOp.const(dtypes.i32, a)))
        starts.append(UOp(Ops.MIN, dtypes.i32, (q, UOp.const(dtypes.i32, n))))
    if not starts:
        return None
    s = starts[0]
    for x in starts[1:]:
        s = UOp(Ops.MAX, dtypes.i32, (s, x))
    return s


def _trimmed(red: UOp, lanes: set[UOp]) -> tuple[UOp, UOp] | None:
    """``(r, its start)`` when ``red`` is a float sum of one gated load (no alternative
    value: +0.0 where the gate is off) over one loop
    ``r`` (its other ranges lanes) with a constant END; else None."""
    x = red.src[0]
    loops = [r for r in red.src[1:] if r not in lanes]
    if (red.arg is not Ops.ADD or not red.dtype.is_float or red.dtype.count != 1
            or len(loops) != 1 or x.op is not Ops.LOAD or len(x.src) != 1
            or x.src[0].op is not Ops.INDEX
            or len(x.src[0].src) != 3 or loops[0].src[0].op is not Ops.CONST
            or loops[0].src[0].dtype != dtypes.i32):
        return None
    r = loops[0]
    s = _start(x.src[0].src[2], r, lanes)
    return None if s is None else (r, s)


def trim_gated_reductions(root: UOp) -> UOp:
    """Every float sum of a gated load whose gate is off for a leading run of its loop
    starts its loop after that run (see the module doc). Returns ``root`` unchanged
    when there is none."""
    lanes = set(expandable_ranges(root))
    mapping: dict[UOp, UOp] = {}
    for red in (u for u in root.toposort() if u.op is Ops.REDUCE):
        found = _trimmed(red, lanes)
        if found is None:
            continue
        r, s = found
        end = UOp(Ops.SUB, dtypes.i32, (r.src[0], s))
        if not isinstance(end.vmax, int) or end.vmax < 2:
            continue  # at most one iteration left: the linearizer's loop costs assume more
        r2 = UOp(Ops.RANGE, r.dtype, (end,), r.arg)
        x = red.src[0].substitute({r: UOp(Ops.ADD, dtypes.i32, (r2, s))})
        src = tuple(r2 if q is r else q for q in red.src[1:])
        mapping[red] = red.replace(src=(x, *src))
    return root.substitute(mapping) if mapping else root
