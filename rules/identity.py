"""Identity and zero elements, self folding, zero folding, power, negation.

Seed 000 sections 2-4 and 15. Guards the seed calls out:

* ``x*0 -> 0`` never for floats (``NaN*0`` and ``inf*0`` are NaN), and never
  swallows an Invalid index.
* self-comparisons fold only for non-floats (``NaN != NaN``).
* ``x//x -> 1`` and ``x%x -> 0`` only when ``x`` is never 0 (division by zero
  is undefined and is never folded into a value).
"""

from __future__ import annotations

from eqsat.ops import Ops
from eqsat.pattern import Rule, UPat
from eqsat.uop import UOp
from rules.common import CONSTS, bool_like, const_is, is_one, is_zero, may_be_invalid, nonzero

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


G_IDENT = "identity_and_zero_patterns"
identity_and_zero_patterns = [
    Rule("add_zero", "x+0 -> x", UPat(Ops.ADD, src=[_X, _cz()]), build=lambda x: x),
    Rule("mul_one", "x*1 -> x", UPat(Ops.MUL, src=[_X, _c1()]), build=lambda x: x),
    Rule("or_zero", "x|0 -> x", UPat(Ops.OR, src=[_X, _cz()]), build=lambda x: x),
    Rule("xor_zero", "x^0 -> x", UPat(Ops.XOR, src=[_X, _cz()]), build=lambda x: x),
    Rule("sub_zero", "x-0 -> x", UPat(Ops.SUB, src=(_X, _cz())), build=lambda x: x),
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
