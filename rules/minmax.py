"""MAX/MIN elimination by self folding and by bounds (docs/rules.md, seed 000 §11).

This IR keeps ``MIN`` as an op (Morok lowers it to ``-max(-a, -b)``), so the
MIN twins of the MAX rules are here too. Float bounds are unbounded unless
constant, so the bounds rules never decide a float (NaN) comparison.
"""

from __future__ import annotations

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from rules.common import by_group, may_be_invalid
from rules.computed import PyRule
from rules.native import ERule, R

__all__ = ["GROUPS"]

_X, _Y = UPat.var("x"), UPat.var("y")

G = "minmax_dsl_patterns"
minmax_dsl_patterns = [
    Rule("max_self", "max(x, x) -> x", UPat(Ops.MAX, src=(_X, _X)), build=lambda x: x),
    Rule("min_self", "min(x, x) -> x", UPat(Ops.MIN, src=(_X, _X)), build=lambda x: x),
    Rule("max_by_bounds", "max(x, y) -> x when vmin(x) >= vmax(y)",
         UPat(Ops.MAX, src=[_X, _Y]), build=lambda x: x,
         guard=lambda x, y: not x.dtype.is_float and x.vmin >= y.vmax
         and not may_be_invalid(y)),
    Rule("min_by_bounds", "min(x, y) -> x when vmax(x) <= vmin(y)",
         UPat(Ops.MIN, src=[_X, _Y]), build=lambda x: x,
         guard=lambda x, y: not x.dtype.is_float and x.vmax <= y.vmin
         and not may_be_invalid(y)),
]
for _r in minmax_dsl_patterns:
    _r.group = G

GROUPS: dict[str, list[Rule]] = {G: minmax_dsl_patterns}


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_MINMAX = "minmax_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

_eg(R("max_self", "max(x,x) -> x", _E_MINMAX, "(Max dt x x)", "x", subsume=True))

_eg(R("min_self", "min(x,x) -> x", _E_MINMAX, "(Min dt x x)", "x", subsume=True))

# ---- min / max ----------------------------------------------------------------------
_eg(R("max_left", "max(x,y) -> x when lo(x) >= hi(y)", _E_MINMAX, "(Max dt x y)", "x",
      "(>= (lo x) (hi y))", "(Def y)", subsume=True))

_eg(R("min_left", "min(x,y) -> x when hi(x) <= lo(y)", _E_MINMAX, "(Min dt x y)", "x",
      "(<= (hi x) (lo y))", "(Def y)", subsume=True))

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
