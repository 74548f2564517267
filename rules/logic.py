"""Boolean logic: double negation, self-cancellation, absorbing/identity elements,
De Morgan (seed 000 section 9).

``NOT`` on integers is bitwise complement, for which ``~~x = x`` and De Morgan
hold as well; the tautology/contradiction rules are for bools only. Bool
``ADD``/``MUL``/``MAX``/``MIN`` are rewritten to ``OR``/``AND`` first (tinygrad
does the same) so no arithmetic rule mistakes them for integers.
"""

from __future__ import annotations

from eqsat.dtype import dtypes
from eqsat.ops import Ops
from eqsat.pattern import Rule, UPat
from eqsat.uop import UOp
from rules.common import bool_like, const_is, may_be_invalid

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
