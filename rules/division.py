"""Division cancellation: FDIV/IDIV by themselves and out of products (docs/rules.md, seed 000 §5).

Floats: only ``0.0/0.0 -> NaN`` and ``(x*0.0)/0.0 -> NaN`` (a zero or NaN over
a zero is NaN). The seed's (and tinygrad's) ``x/x -> 1.0`` and ``(x*y)/y -> x``
are left out for floats: IEEE gives NaN for ``x/x`` at 0, inf and NaN, and
``(x*y)/y`` is inf where ``x*y`` overflows (``(x*1e38)/1e38`` at x = 5), NaN at
``y`` = 0 or inf, and ``x`` rounded where the product rounds; float bounds are
unknown unless constant, so no guard can admit them.
Integer rules are exact: ``(x*y)//y -> x`` needs ``y`` never 0 and the
product not to wrap.
"""

from __future__ import annotations

import math

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import CONSTS, by_group, exact_product_fits, is_zero, may_be_invalid, nonzero
from rules.computed import PyRule, bridge
from rules.native import IDX_DT, NONZERO, ERule, R

__all__ = ["GROUPS"]

_X, _Y = UPat.var("x"), UPat.var("y")


def _fzero(name: str) -> UPat:
    return UPat(CONSTS, name=name, pred=lambda u: u.dtype.is_float and is_zero(u))


def _nan_like(d: UOp) -> UOp:
    return d.const_like(math.nan)


def _idiv_cancel_ok(x: UOp, y: UOp, d: UOp) -> bool:
    return (d.dtype.is_int and nonzero(y) and exact_product_fits(d.dtype, x, y)
            and not may_be_invalid(y))


G = "division_dsl_patterns"
division_dsl_patterns = [
    Rule("fdiv_zero_zero", "0.0/0.0 -> NaN (before x/x -> 1)",
         UPat(Ops.FDIV, src=(_fzero("a"), _fzero("b")), name="d"), build=_nan_like),
    Rule("fdiv_mul_zero_zero", "(x*0.0)/0.0 -> NaN",
         UPat(Ops.FDIV, src=(UPat(Ops.MUL, src=[UPat.var(), _fzero("a")]), _fzero("b")),
              name="d"), build=_nan_like),
    Rule("idiv_mul_cancel", "(x*y)//y -> x when y is never 0 and x*y does not wrap",
         UPat(Ops.IDIV, src=(UPat(Ops.MUL, src=[_X, _Y]), _Y), name="d"), build=lambda x: x,
         guard=_idiv_cancel_ok),
]
for _r in division_dsl_patterns:
    _r.group = G

GROUPS: dict[str, list[Rule]] = {G: division_dsl_patterns}


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_DIVISION = "division_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- division ---------------------------------------------------------------------
_eg(R("idiv_mul_cancel", "(x*y)//y -> x when y is never 0 (index: no wrap)", _E_DIVISION,
      "(Idiv dt (Mul dt x y) y)", "x", IDX_DT, NONZERO.format("y"), "(Def y)"))

_eg(R("mod_mul_cancel", "(x*y)%y -> 0 when y is never 0 (index)", _E_DIVISION,
      "(Mod dt (Mul dt x y) y)", "(Cst dt 0)", IDX_DT, "(> (lo y) 0)", "(Def x)",
      "(Def y)"))

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)

# the float divisions: baseline rules applied to e-nodes (no native twin)

EGRAPH[G] += bridge([r for r in division_dsl_patterns if r.name.startswith("fdiv")], G)
