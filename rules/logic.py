"""Boolean logic: double negation, self-cancellation, absorbing/identity elements,
De Morgan (docs/rules.md, seed 000 §9).

``NOT`` on integers is bitwise complement, for which ``~~x = x`` and De Morgan
hold as well; the tautology/contradiction rules are for bools only. Bool
``ADD``/``MUL``/``MAX``/``MIN`` are rewritten to ``OR``/``AND`` first (tinygrad
does the same) so no arithmetic rule mistakes them for integers.
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import bool_like, by_group, const_is, may_be_invalid
from rules.computed import PyRule
from rules.native import ERule, R

__all__ = ["GROUPS"]

_X, _Y = UPat.var("x"), UPat.var("y")


def _bconst(v: bool, name: str = "c") -> UPat:
    return UPat(Ops.CONST, name=name, pred=lambda u: u.dtype.scalar() == dtypes.bool
                and const_is(u, v))


def _not(p: UPat) -> UPat:
    return UPat(Ops.NOT, src=(p,))


def _is_bool(x: UOp) -> bool:
    return x.dtype.scalar() == dtypes.bool and not x.dtype.ptr


def _bool_droppable(x: UOp) -> bool:
    return _is_bool(x) and not may_be_invalid(x)


def _droppable(x: UOp) -> bool:
    return not may_be_invalid(x)


G = "boolean_dsl_patterns"
boolean_dsl_patterns = [
    Rule("bool_add_is_or", "a+b -> a|b (bools)",
         UPat(Ops.ADD, src=(_X, _Y), name="f"), build=lambda x, y: x | y,
         guard=lambda f: _is_bool(f)),
    Rule("bool_mul_is_and", "a*b -> a&b (bools)",
         UPat(Ops.MUL, src=(_X, _Y), name="f"), build=lambda x, y: x & y,
         guard=lambda f: _is_bool(f)),
    Rule("bool_max_is_or", "max(a,b) -> a|b (bools)",
         UPat(Ops.MAX, src=(_X, _Y), name="f"), build=lambda x, y: x | y,
         guard=lambda f: _is_bool(f)),
    Rule("bool_min_is_and", "min(a,b) -> a&b (bools)",
         UPat(Ops.MIN, src=(_X, _Y), name="f"), build=lambda x, y: x & y,
         guard=lambda f: _is_bool(f)),
    Rule("not_not", "!!x -> x", UPat(Ops.NOT, src=(_not(_X),)), build=lambda x: x),
    Rule("xor_self", "x^x -> 0", UPat(Ops.XOR, src=(_X, _X)),
         build=lambda x: bool_like(x, False) if _is_bool(x) else x.const_like(0),
         guard=lambda x: (x.dtype.is_int or _is_bool(x)) and _droppable(x)),
    Rule("or_not_self", "x | !x -> true (bools)", UPat(Ops.OR, src=[_X, _not(_X)]),
         build=lambda x: bool_like(x, True), guard=_bool_droppable),
    Rule("and_not_self", "x & !x -> false (bools)", UPat(Ops.AND, src=[_X, _not(_X)]),
         build=lambda x: bool_like(x, False), guard=_bool_droppable),
    Rule("or_true", "true | x -> true", UPat(Ops.OR, src=[_bconst(True), _X], name="f"),
         build=lambda f: bool_like(f, True), guard=_droppable),
    Rule("and_false", "false & x -> false", UPat(Ops.AND, src=[_bconst(False), _X],
                                                  name="f"),
         build=lambda f: bool_like(f, False), guard=_droppable),
    Rule("and_true", "true & x -> x", UPat(Ops.AND, src=[_bconst(True), _X]),
         build=lambda x: x),
    Rule("or_false", "false | x -> x", UPat(Ops.OR, src=[_bconst(False), _X]),
         build=lambda x: x),
    Rule("de_morgan_and", "!x & !y -> !(x | y)",
         UPat(Ops.AND, src=[_not(_X), _not(_Y)]), build=lambda x, y: (x | y).alu(Ops.NOT)),
    Rule("de_morgan_or", "!x | !y -> !(x & y)",
         UPat(Ops.OR, src=[_not(_X), _not(_Y)]), build=lambda x, y: (x & y).alu(Ops.NOT)),
    Rule("or_absorb_and", "x | (x & y) -> x", UPat(Ops.OR, src=[_X, UPat(Ops.AND, src=[_X, _Y])]),
         build=lambda x: x, guard=lambda y: _droppable(y)),
    Rule("and_absorb_or", "x & (x | y) -> x", UPat(Ops.AND, src=[_X, UPat(Ops.OR, src=[_X, _Y])]),
         build=lambda x: x, guard=lambda y: _droppable(y)),
]
for _r in boolean_dsl_patterns:
    _r.group = G

GROUPS: dict[str, list[Rule]] = {G: boolean_dsl_patterns}


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_BOOLEAN = "boolean_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- boolean logic ----------------------------------------------------------------
_eg(R("not_not", "!!x -> x", _E_BOOLEAN, "(Not dt (Not dt x))", "x", subsume=True))

_eg(R("and_true", "x & true -> x", _E_BOOLEAN, "(And dt x (Cst dt 1))", "x",
      "(= dt \"bool\")", subsume=True))

_eg(R("and_false", "x & false -> false", _E_BOOLEAN, "(And dt x (Cst dt 0))", "(Cst dt 0)",
      "(= dt \"bool\")", "(Def x)", subsume=True))

_eg(R("or_true", "x | true -> true", _E_BOOLEAN, "(Or dt x (Cst dt 1))", "(Cst dt 1)",
      "(= dt \"bool\")", "(Def x)", subsume=True))

_eg(R("or_false", "x | false -> x", _E_BOOLEAN, "(Or dt x (Cst dt 0))", "x",
      "(= dt \"bool\")", subsume=True))

_eg(R("xor_self", "x^x -> 0", _E_BOOLEAN, "(Xor dt x x)", "(Cst dt 0)", "(Def x)",
      subsume=True))

_eg(R("and_not_self", "x & !x -> false (bools)", _E_BOOLEAN, "(And dt x (Not dt x))",
      "(Cst dt 0)", "(= dt \"bool\")", "(Def x)", subsume=True))

_eg(R("or_not_self", "x | !x -> true (bools)", _E_BOOLEAN, "(Or dt x (Not dt x))", "(Cst dt 1)",
      "(= dt \"bool\")", "(Def x)", subsume=True))

_eg(R("de_morgan_and", "!x & !y -> !(x | y)", _E_BOOLEAN, "(And dt (Not dt x) (Not dt y))",
      "(Not dt (Or dt x y))"))

_eg(R("de_morgan_or", "!x | !y -> !(x & y)", _E_BOOLEAN, "(Or dt (Not dt x) (Not dt y))",
      "(Not dt (And dt x y))"))

_eg(R("and_absorb_lt", "(x < c1) & (x < c2) -> x < min(c1, c2)", _E_BOOLEAN,
      "(And dt (Lt dt x (Cst dx c1)) (Lt dt x (Cst dx c2)))",
      "(Lt dt x (Cst dx (min c1 c2)))"))

_eg(R("and_absorb_gt", "(c1 < x) & (c2 < x) -> max(c1, c2) < x", _E_BOOLEAN,
      "(And dt (Lt dt (Cst dx c1) x) (Lt dt (Cst dx c2) x))",
      "(Lt dt (Cst dx (max c1 c2)) x)"))

_eg(R("and_assoc_dedup", "(a & b) & b -> a & b", _E_BOOLEAN, "(And dt (And dt a b) b)",
      "(And dt a b)", subsume=True))

_eg([PyRule("canonical_and", "a & b & ... -> the sorted conjunction of the distinct clauses",
           "boolean_dsl_patterns", "canon_and")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
