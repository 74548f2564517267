"""pm_move_where_on_load: a masked load's condition into its index (docs/rules.md, seed 000 §17).

``WHERE(cond, LOAD(INDEX(buf, idx)), 0) -> LOAD(INDEX(buf, WHERE(cond', idx, Invalid)))``:
a load through an Invalid index reads nothing and yields 0, so the WHERE is
the load's own gate. The condition is split into AND clauses; a clause moves
into the index when every range it uses is a range of the index and every
INDEX it reads is one the index already reads; the rest stay in an outer
``WHERE(rest, ..., 0)``. Clauses already in the index's validity are dropped.
The mirrored ``WHERE(cond, 0, LOAD(...))`` moves ``!cond``.
"""

from __future__ import annotations

import math
from functools import reduce

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import invalid_like, is_invalid, is_zero, split_and
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py

__all__ = ["GROUPS", "EGRAPH", "LAWS", "where_on_load"]


def _and_all(cs: list[UOp]) -> UOp:
    return reduce(lambda a, b: a & b, cs) if cs else UOp.const(dtypes.bool, True)


def _ranges(u: UOp) -> set[UOp]:
    return {x for x in u.toposort() if x.op is Ops.RANGE}


def where_on_load(cond: UOp, ld: UOp) -> UOp | None:
    """The load with (part of) ``cond`` moved into its index, or None if nothing moves."""
    ix = ld.src[0]
    if ix.op is not Ops.INDEX or len(ix.src) != 2 or len(ld.src) != 1:
        return None
    buf, idx = ix.src
    if idx.op is Ops.WHERE and is_invalid(idx.src[2]):
        valid, real = idx.src[0], idx.src[1]
        in_load = split_and(valid)
    else:
        valid, real, in_load = None, idx, []
    idx_ranges = _ranges(idx)
    idx_indexes = {x for x in idx.toposort() if x.op is Ops.INDEX}

    def can_move(c: UOp) -> bool:
        topo = c.toposort()
        return ({x for x in topo if x.op is Ops.RANGE} <= idx_ranges
                and all(x in idx_indexes for x in topo if x.op is Ops.INDEX))

    seen = set(in_load)
    clauses = [c for c in split_and(cond) if c not in seen]
    moved = [c for c in clauses if can_move(c)]
    keep = [c for c in clauses if not can_move(c)]
    if len(keep) == len(split_and(cond)):
        return None
    gate = _and_all(in_load + moved)
    new_idx = UOp(Ops.WHERE, real.dtype, (gate, real, invalid_like(real.dtype)))
    new_ld = ld.replace(src=(ix.replace(src=(buf, new_idx)),))
    if not keep:
        return new_ld
    return UOp(Ops.WHERE, ld.dtype, (_and_all(keep), new_ld, UOp.const(ld.dtype, 0)))


def _load_zero(u: UOp) -> bool:
    """The value a load off its gate reads: 0, and for floats +0.0 (not -0.0)."""
    if not is_zero(u):
        return False
    lanes = u.arg if u.op is Ops.VCONST else (u.arg,)
    return not u.dtype.is_float or all(math.copysign(1.0, v) > 0 for v in lanes)


def _zero(name: str) -> UPat:
    return UPat((Ops.CONST, Ops.VCONST), name=name, pred=_load_zero)


_LOAD = UPat(Ops.LOAD, src=(UPat(Ops.INDEX),), name="ld")

G = "pm_move_where_on_load"
pm_move_where_on_load = [
    Rule("where_on_load", "WHERE(c, LOAD(INDEX(buf, idx)), 0) -> "
         "LOAD(INDEX(buf, WHERE(c, idx, Invalid))) (movable clauses of c)",
         UPat(Ops.WHERE, src=(UPat.var("cond"), _LOAD, _zero("z"))),
         build=where_on_load, guard=lambda cond, ld: where_on_load(cond, ld) is not None),
    Rule("where_on_load_negated", "WHERE(c, 0, LOAD(INDEX(buf, idx))) -> "
         "LOAD(INDEX(buf, WHERE(!c, idx, Invalid))) (movable clauses of !c)",
         UPat(Ops.WHERE, src=(UPat.var("cond"), _zero("z"), _LOAD)),
         build=lambda cond, ld: where_on_load(cond.alu(Ops.NOT), ld),
         guard=lambda cond, ld: where_on_load(cond.alu(Ops.NOT), ld) is not None),
]
for _r in pm_move_where_on_load:
    _r.group = G

LAWS = [py(r, "ematch", "splits the condition into clauses and reads which ranges and "
           "loads each one uses: computed in Python") for r in pm_move_where_on_load]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))


