"""Identity and zero elements, self folding, zero folding, power, negation.

docs/rules.md, seed 000 §2-§4 and §15. Guards seed 000 calls out:

* ``x*0 -> 0`` never for floats (``NaN*0`` and ``inf*0`` are NaN), and never
  swallows an Invalid index.
* self-comparisons fold only for non-floats (``NaN != NaN``).
* ``x//x -> 1`` and ``x%x -> 0`` only when ``x`` is never 0 (division by zero
  is undefined and is never folded into a value).
"""

from __future__ import annotations

import math

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import (
    CONSTS,
    bool_like,
    by_group,
    const_is,
    is_one,
    is_zero,
    may_be_invalid,
    nonzero,
)
from rules.computed import PyRule
from rules.native import IDX_DT, INT_DT, NONZERO, ERule, Q, R

__all__ = ["GROUPS"]

_X = UPat.var("x")


def _cz(name: str = "z") -> UPat:
    return UPat(CONSTS, name=name, pred=is_zero)


def _c1(name: str = "c") -> UPat:
    return UPat(CONSTS, name=name, pred=is_one)


def _cneg1(name: str = "c") -> UPat:
    return UPat(CONSTS, name=name, pred=lambda u: const_is(u, -1))


def _not_float(x: UOp) -> bool:
    return not x.dtype.is_float and not may_be_invalid(x)


def _droppable(x: UOp) -> bool:
    """``x`` may be dropped from the result: it can never be Invalid."""
    return not may_be_invalid(x)


def _is_int(x: UOp) -> bool:
    return x.dtype.is_int


def _zero_sign_ok(z: UOp, negative: bool) -> bool:
    """``z`` is a zero whose sign makes ``x + z`` (``negative``: -0.0) or ``x - z``
    (+0.0) equal to ``x`` for every float ``x``: ``-0.0 + 0.0`` is ``+0.0``."""
    if not z.dtype.is_float:
        return True
    lanes = z.arg if z.op is Ops.VCONST else (z.arg,)
    return all((math.copysign(1.0, v) < 0) is negative for v in lanes)


G_IDENT = "identity_and_zero_patterns"
identity_and_zero_patterns = [
    Rule("add_zero", "x+0 -> x (floats: x + -0.0 only; -0.0 + 0.0 is 0.0)",
         UPat(Ops.ADD, src=[_X, _cz()]), build=lambda x: x,
         guard=lambda z: _zero_sign_ok(z, negative=True)),
    Rule("mul_one", "x*1 -> x", UPat(Ops.MUL, src=[_X, _c1()]), build=lambda x: x),
    Rule("or_zero", "x|0 -> x", UPat(Ops.OR, src=[_X, _cz()]), build=lambda x: x),
    Rule("xor_zero", "x^0 -> x", UPat(Ops.XOR, src=[_X, _cz()]), build=lambda x: x),
    Rule("sub_zero", "x-0 -> x (floats: x - 0.0 only; -0.0 - -0.0 is 0.0)",
         UPat(Ops.SUB, src=(_X, _cz())), build=lambda x: x,
         guard=lambda z: _zero_sign_ok(z, negative=False)),
    Rule("idiv_one", "x//1 -> x", UPat(Ops.IDIV, src=(_X, _c1())), build=lambda x: x),
    Rule("fdiv_one", "x/1 -> x", UPat(Ops.FDIV, src=(_X, _c1())), build=lambda x: x),
    Rule("mod_one", "x%1 -> 0 (integers, x never Invalid)",
         UPat(Ops.MOD, src=(_X, _c1()), name="m"),
         build=lambda m: m.const_like(0), guard=lambda m, x: m.dtype.is_int and _droppable(x)),
    Rule("mod_neg_one", "x%-1 -> 0 (integers, x never Invalid)",
         UPat(Ops.MOD, src=(_X, _cneg1()), name="m"),
         build=lambda m: m.const_like(0), guard=lambda m, x: m.dtype.is_int and _droppable(x)),
    Rule("round_of_int", "trunc/floor/ceil/round(x) -> x when x is an integer or bool",
         UPat((Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND), src=(_X,), name="r"),
         build=lambda x: x, guard=lambda x, r: (x.dtype.is_int or x.dtype.is_bool)
         and x.dtype == r.dtype),
    Rule("mul_zero", "x*0 -> 0 when x is not a float (NaN*0, inf*0 are NaN) and never Invalid",
         UPat(Ops.MUL, src=[_X, _cz()]), build=lambda z: z,
         guard=lambda x: not x.dtype.is_float and _droppable(x)),
    Rule("and_zero", "x&0 -> 0 when x is never Invalid",
         UPat(Ops.AND, src=[_X, _cz()]), build=lambda z: z,
         guard=_droppable),
]

G_SELF = "self_folding_dsl_patterns"
self_folding_dsl_patterns = [
    Rule("idiv_self", "x//x -> 1 when x is never 0",
         UPat(Ops.IDIV, src=(_X, _X)), build=lambda x: x.const_like(1),
         guard=lambda x: nonzero(x) and _droppable(x)),
    Rule("idiv_neg_one", "x//-1 -> -x (integers)",
         UPat(Ops.IDIV, src=(_X, _cneg1())), build=lambda x: -x, guard=_is_int),
    Rule("mod_mod_same", "(x%y)%y -> x%y",
         UPat(Ops.MOD, src=(UPat(Ops.MOD, src=(UPat.var(), UPat.var("y")), name="inner"),
                            UPat.var("y"))),
         build=lambda inner: inner),
    Rule("and_self", "x&x -> x", UPat(Ops.AND, src=(_X, _X)), build=lambda x: x),
    Rule("or_self", "x|x -> x", UPat(Ops.OR, src=(_X, _X)), build=lambda x: x),
]

G_ZERO = "zero_folding_dsl_patterns"
zero_folding_dsl_patterns = [
    Rule("mod_self", "x%x -> 0 when x is never 0",
         UPat(Ops.MOD, src=(_X, _X)), build=lambda x: x.const_like(0),
         guard=lambda x: nonzero(x) and _droppable(x)),
    Rule("lt_self", "x<x -> false when x is not a float (nor Invalid)",
         UPat(Ops.LT, src=(_X, _X)), build=lambda x: bool_like(x, False), guard=_not_float),
    Rule("ne_self", "x!=x -> false when x is not a float (NaN != NaN)",
         UPat(Ops.NE, src=(_X, _X)), build=lambda x: bool_like(x, False), guard=_not_float),
]

G_POW = "power_dsl_patterns"
power_dsl_patterns = [
    Rule("pow_zero", "x**0 -> 1 (x never Invalid)", UPat(Ops.POW, src=(_X, _cz())),
         build=lambda x: x.const_like(1), guard=_droppable),
    Rule("pow_one", "x**1 -> x", UPat(Ops.POW, src=(_X, _c1())), build=lambda x: x),
]

G_NEG = "negation_dsl_patterns"
negation_dsl_patterns = [
    Rule("neg_neg", "-(-x) -> x", UPat(Ops.NEG, src=(UPat(Ops.NEG, src=(_X,)),)),
         build=lambda x: x),
]

GROUPS: dict[str, list[Rule]] = {
    G_IDENT: identity_and_zero_patterns,
    G_SELF: self_folding_dsl_patterns,
    G_ZERO: zero_folding_dsl_patterns,
    G_POW: power_dsl_patterns,
    G_NEG: negation_dsl_patterns,
}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_IDENTITY_AND_ZERO = "identity_and_zero_patterns"
_E_NEGATION = "negation_dsl_patterns"
_E_SELF_FOLDING = "self_folding_dsl_patterns"
_E_ZERO_FOLDING = "zero_folding_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- identity and zero -------------------------------------------------------
_eg(R("add_zero", "x+0 -> x", _E_IDENTITY_AND_ZERO, "(Add dt x (Cst dt 0))", "x", subsume=True))

_eg(R("sub_zero", "x-0 -> x", _E_IDENTITY_AND_ZERO, "(Sub dt x (Cst dt 0))", "x", subsume=True))

_eg(R("mul_one", "x*1 -> x", _E_IDENTITY_AND_ZERO, "(Mul dt x (Cst dt 1))", "x", INT_DT,
      subsume=True))

_eg(R("mul_zero", "x*0 -> 0 (integers; x is never Invalid)",
      _E_IDENTITY_AND_ZERO, "(Mul dt x (Cst dt 0))", "(Cst dt 0)", INT_DT, "(Def x)",
      subsume=True))

_eg(R("idiv_one", "x//1 -> x", _E_IDENTITY_AND_ZERO, "(Idiv dt x (Cst dt 1))", "x",
      subsume=True))

_eg(R("mod_one", "x%1 -> 0 (integers)", _E_IDENTITY_AND_ZERO, "(Mod dt x (Cst dt 1))",
      "(Cst dt 0)", INT_DT, "(Def x)", subsume=True))

_eg(R("mod_neg_one", "x%-1 -> 0 (integers)", _E_IDENTITY_AND_ZERO, "(Mod dt x (Cst dt -1))",
      "(Cst dt 0)", INT_DT, "(Def x)", subsume=True))

_eg(R("or_zero", "x|0 -> x (integers)", _E_IDENTITY_AND_ZERO, "(Or dt x (Cst dt 0))", "x",
      INT_DT, subsume=True))

_eg(R("xor_zero", "x^0 -> x (integers)", _E_IDENTITY_AND_ZERO, "(Xor dt x (Cst dt 0))", "x",
      INT_DT, subsume=True))

_eg(R("and_zero", "x&0 -> 0 (integers; x is never Invalid)", _E_IDENTITY_AND_ZERO,
      "(And dt x (Cst dt 0))", "(Cst dt 0)", INT_DT, "(Def x)", subsume=True))

# ---- self folding ---------------------------------------------------------------
_eg(R("idiv_self", "x//x -> 1 when x is never 0", _E_SELF_FOLDING, "(Idiv dt x x)",
      "(Cst dt 1)", INT_DT, NONZERO.format("x"), "(Def x)", subsume=True))

_eg(R("idiv_neg_one", "x//-1 -> -x (index: no wrap)", _E_SELF_FOLDING,
      "(Idiv dt x (Cst dt -1))", "(Neg dt x)", IDX_DT, subsume=True))

_eg(R("mod_mod_same", "(x%y)%y -> x%y", _E_SELF_FOLDING, "(Mod dt (Mod dt x y) y)",
      "(Mod dt x y)", subsume=True))

_eg(R("and_self", "x&x -> x", _E_SELF_FOLDING, "(And dt x x)", "x", subsume=True))

_eg(R("or_self", "x|x -> x", _E_SELF_FOLDING, "(Or dt x x)", "x", subsume=True))

# ---- zero folding ---------------------------------------------------------------
_eg(R("mod_self", "x%x -> 0 when x is never 0", _E_ZERO_FOLDING, "(Mod dt x x)", "(Cst dt 0)",
      INT_DT, NONZERO.format("x"), "(Def x)", subsume=True))

_eg(R("sub_self", "x-x -> 0 (integers)", _E_ZERO_FOLDING, "(Sub dt x x)", "(Cst dt 0)", INT_DT,
      "(Def x)", subsume=True))

for _e_c, _e_v in (("Lt", 0), ("Gt", 0), ("Ne", 0), ("Le", 1), ("Ge", 1), ("Eq", 1)):
    _eg(Q(f"{_e_c.lower()}_self", f"{_e_c.lower()}(x,x) -> {bool(_e_v)} (x an integer or bool)",
          _E_ZERO_FOLDING, f"(= e ({_e_c} dt x x)) (= lx (lo x)) (Def x)",
          f"(union e (Cst dt {_e_v}))"))

# ---- negation / power ---------------------------------------------------------------------
_eg(R("neg_neg", "-(-x) -> x", _E_NEGATION, "(Neg dt (Neg dt x))", "x", subsume=True))

_eg(R("sub_neg", "x - (-y) -> x + y", _E_NEGATION, "(Sub dt x (Neg dt y))", "(Add dt x y)"))

_eg(R("add_neg", "x + (-y) -> x - y", _E_NEGATION, "(Add dt x (Neg dt y))", "(Sub dt x y)"))

_eg(Q("mul_neg_one", "x*-1 -> -x (index)", _E_NEGATION,
      "(= e (Mul dt x (Cst dt -1))) (= dt \"index\")", "(union e (Neg dt x))"))

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
