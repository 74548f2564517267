"""WHERE simplification (seed 000 section 12).

``where_bound_patterns``: a condition whose bounds decide it selects a branch
(this covers ``WHERE(x < c, t, f)`` with ``vmax(x) < vmin(c)`` and the
constant conditions).

``dce_dsl_patterns`` (Morok's name for the WHERE branch rules): equal
branches, bool identities, the condition flip ``WHERE(!c, t, f) ->
WHERE(c, f, t)`` -- never when ``f`` is Invalid, which would move the Invalid
into the true branch where the padding rules no longer see it (tinygrad
symbolic.py has the same guard) -- nested-WHERE merging, and combining two
WHEREs on the same condition when one side folds to a constant.
"""

from __future__ import annotations

from eqsat.dtype import dtypes
from eqsat.ops import GroupOp, Ops
from eqsat.pattern import Rule, UPat
from eqsat.uop import UOp
from rules.common import const_is, is_invalid, may_be_invalid, nonzero

__all__ = ["GROUPS"]

_X = UPat.var("x")


def _where(c: UOp, t: UOp, f: UOp) -> UOp:
    return UOp(Ops.WHERE, t.dtype, (c, t, f))


def _bconst(v: bool, name: str) -> UPat:
    return UPat(Ops.CONST, name=name, pred=lambda u: u.dtype.scalar() == dtypes.bool
                and const_is(u, v))


def _decided(c: UOp, value: bool) -> bool:
    return c.dtype.scalar() == dtypes.bool and c.vmin == c.vmax == value


G_BOUND = "where_bound_patterns"
where_bound_patterns = [
    Rule("where_cond_true", "WHERE(c, t, f) -> t when c is always true (constant or bounds, "
         "e.g. c = x<k with vmax(x) < k)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"), UPat.var("f"))),
         build=lambda t: t, guard=lambda c: _decided(c, True)),
    Rule("where_cond_false", "WHERE(c, t, f) -> f when c is always false (constant or bounds, "
         "e.g. c = x<k with vmin(x) >= k)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"), UPat.var("f"))),
         build=lambda f: f, guard=lambda c: _decided(c, False)),
]

_BIN = tuple(GroupOp.Binary - {Ops.MULHI})


def _combine_ok(alu: UOp, t: UOp, tt: UOp, f: UOp, ff: UOp) -> bool:
    if not ((t.op is Ops.CONST and tt.op is Ops.CONST) or (f.op is Ops.CONST
                                                          and ff.op is Ops.CONST)):
        return False
    if any(is_invalid(u) for u in (t, tt, f, ff)):
        return False
    # never put a possibly-zero divisor into a branch it was not evaluated in
    return alu.op not in (Ops.IDIV, Ops.MOD) or (nonzero(tt) and nonzero(ff))


def _wpat(t: str, f: str) -> UPat:
    return UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var(t), UPat.var(f)))


G_DCE = "dce_dsl_patterns"
dce_dsl_patterns = [
    Rule("where_same_branches", "WHERE(c, t, t) -> t",
         UPat(Ops.WHERE, src=(UPat.var(), UPat.var("t"), UPat.var("t"))), build=lambda t: t),
    Rule("where_true_false", "WHERE(x, true, false) -> x (bool x)",
         UPat(Ops.WHERE, src=(_X, _bconst(True, "a"), _bconst(False, "b")), name="w"),
         build=lambda x: x, guard=lambda x, w: x.dtype == w.dtype),
    Rule("where_false_true", "WHERE(x, false, true) -> !x (bool x)",
         UPat(Ops.WHERE, src=(_X, _bconst(False, "a"), _bconst(True, "b")), name="w"),
         build=lambda x: x.alu(Ops.NOT), guard=lambda x, w: x.dtype == w.dtype),
    Rule("where_not_flip", "WHERE(!c, t, f) -> WHERE(c, f, t) unless f is Invalid",
         UPat(Ops.WHERE, src=(UPat(Ops.NOT, src=(UPat.var("c"),)), UPat.var("t"),
                              UPat.var("f"))),
         build=lambda c, t, f: _where(c, f, t),
         guard=lambda c, f: c.dtype.scalar() == dtypes.bool and not is_invalid(f)),
    Rule("where_nested_merge", "WHERE(a, WHERE(b, c, d), d) -> WHERE(a & b, c, d)",
         UPat(Ops.WHERE, src=(UPat.var("a"), UPat(Ops.WHERE, src=(UPat.var("b"), UPat.var("c"),
                                                                  UPat.var("d"))),
                              UPat.var("d"))),
         build=lambda a, b, c, d: _where(a & b, c, d), guard=lambda b: not may_be_invalid(b)),
    Rule("where_alu_combine", "WHERE(c, t, f) <op> WHERE(c, tt, ff) -> WHERE(c, t op tt, "
         "f op ff) when t, tt or f, ff are constants",
         UPat(_BIN, src=(_wpat("t", "f"), _wpat("tt", "ff")), name="alu"),
         build=lambda alu, c, t, tt, f, ff: _where(c, t.alu(alu.op, tt), f.alu(alu.op, ff)),
         guard=_combine_ok),
    Rule("where_add_chain_combine", "(y + WHERE(c, t, f)) + WHERE(c, tt, ff) -> "
         "y + WHERE(c, t+tt, f+ff) when t, tt or f, ff are constants",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[UPat.var("y"), _wpat("t", "f")]),
                            _wpat("tt", "ff")], name="alu"),
         build=lambda y, c, t, tt, f, ff: y + _where(c, t + tt, f + ff), guard=_combine_ok),
]

GROUPS: dict[str, list[Rule]] = {G_BOUND: where_bound_patterns, G_DCE: dce_dsl_patterns}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g
