"""Comparison folding (docs/rules.md, seed 000 §4, §10).

Self-comparisons fold only for non-floats (``NaN != NaN``). Comparisons of
constants and comparisons the operands' bounds decide fold to a bool. The
algebraic rules move offsets, negations, constant factors and divisions out of
``x < c``; they are exact on integers whose arithmetic does not wrap (always
for ``index``; fixed-width only when the bounds prove no wrap).

Integer comparisons are normalized toward ``LT`` with a constant on one side
(``x <= c -> x < c+1``, ``x > y -> y < x``, ``!(x < y) -> y <= x``) so that a
single family of ``LT`` rules applies; each normalization costs no more than
its input.
"""

from __future__ import annotations

import math
from functools import reduce

from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import (
    CONSTS,
    bool_like,
    by_group,
    eval_values,
    fits,
    int_exact,
    make_const,
    may_be_invalid,
    no_wrap_add,
    split_add,
    sum_terms,
)
from rules.computed import PyRule
from rules.native import ERule, Q

__all__ = ["GROUPS", "lt_gcd_fold", "lt_simplex"]

_X, _Y = UPat.var("x"), UPat.var("y")
_CMP = tuple(GroupOp.Comparison)


def _c(name: str) -> UPat:
    return UPat(Ops.CONST, name=name)


def _not_float(x: UOp) -> bool:
    return not x.dtype.is_float and not may_be_invalid(x)


def _int(x: UOp) -> bool:
    return x.dtype.is_int


def _cmp_const(x: UOp) -> UOp | None:
    v = eval_values(x.op, x.src[0].dtype, x.src)
    return None if v is None else make_const(x.dtype, v)


def _lt(a: UOp, b: UOp) -> UOp:
    return a.alu(Ops.LT, b)


def _k(x: UOp, v: int) -> UOp:
    return x.const_like(v)


# ---- x + c0 <op> c1 -> x <op> c1 - c0
def _offset_ok(x: UOp, c0: UOp, c1: UOp) -> bool:
    return _int(x) and no_wrap_add(x, c0.arg) and fits(x.dtype, c1.arg - c0.arg)


# ---- x//d < c
def _idiv_bound(d: int, c: int) -> int:
    return c * d if c > 0 else c * d - (d - 1)


def _idiv_lift_ok(x: UOp, d: UOp, c: UOp) -> bool:
    return _int(x) and d.arg > 0 and fits(x.dtype, _idiv_bound(d.arg, c.arg))


# ---- x*c0 < c1
def _mul_lt(x: UOp, c0: UOp, c1: UOp) -> UOp:
    if c0.arg > 0:
        return _lt(x, _k(x, -((-c1.arg) // c0.arg)))  # x < ceil(c1/c0)
    return _lt(_k(x, c1.arg // c0.arg), x)  # x > floor(c1/c0)


def _mul_lt_ok(m: UOp, x: UOp, c0: UOp) -> bool:
    return _int(x) and int_exact(m) and c0.arg not in (0, 1, -1)


# ---- generic lt folding (tinygrad lt_folding): sum with a common factor < c
def lt_gcd_fold(x: UOp, c: int) -> UOp | None:
    """``d*A + B < c -> A < c//d`` for ``d = gcd(factors, c) > 1`` and ``0 <= B < d``."""
    terms = list(split_add(x))
    unit = [u for u in terms if u.const_factor() == 1]
    scaled = [u for u in terms if u.const_factor() != 1]
    if not scaled:
        return None
    d = math.gcd(*[u.const_factor() for u in scaled], c)
    if d <= 1 or not (0 <= sum(u.vmin for u in unit) and sum(u.vmax for u in unit) < d):
        return None
    parts = [u.divides(d) for u in scaled]
    if any(p is None for p in parts):
        return None
    return _lt(sum_terms(parts, x.dtype), _k(x, c // d))


# ---- simplex: a0*x0 + a1*x1 + ... < 1 with ai > 0, xi >= 0 -> x0 + x1 + ... < 1
_IRREDUCIBLE = (Ops.CONST, Ops.DEFINE_VAR, Ops.SPECIAL, Ops.RANGE)


def lt_simplex(x: UOp) -> UOp | None:
    """The sum without its positive coefficients, or None if ``x`` is not such a sum."""
    changed, out = False, []
    for u in split_add(x):
        if u.op is Ops.MUL and u.src[1].op is Ops.CONST and u.src[1].arg > 0:
            changed, u = True, u.src[0]
        elif u.op is Ops.MUL and u.src[0].op is Ops.CONST and u.src[0].arg > 0:
            changed, u = True, u.src[1]
        if u.op not in _IRREDUCIBLE or u.vmin < 0:
            return None
        out.append(u)
    return reduce(lambda a, b: a + b, out) if changed else None


G = "comparison_dsl_patterns"
comparison_dsl_patterns = [
    # self comparison (non-float)
    Rule("cmp_self_false", "x<x, x>x, x!=x -> false (not floats)",
         UPat((Ops.LT, Ops.GT, Ops.NE), src=(_X, _X)), build=lambda x: bool_like(x, False),
         guard=_not_float),
    Rule("cmp_self_true", "x<=x, x>=x, x==x -> true (not floats)",
         UPat((Ops.LE, Ops.GE, Ops.EQ), src=(_X, _X)), build=lambda x: bool_like(x, True),
         guard=_not_float),
    # constants and bounds
    Rule("cmp_const", "a <op> b -> CONST for constants a, b",
         UPat(_CMP, src=(UPat(CONSTS), UPat(CONSTS)), name="x"), build=_cmp_const,
         guard=lambda x: _cmp_const(x) is not None),
    Rule("cmp_by_bounds", "x <op> y -> true/false when the bounds decide it "
         "(e.g. x<y when vmax(x) < vmin(y))",
         UPat(_CMP, name="x"), build=lambda x: UOp.const(x.dtype, x.vmin),
         guard=lambda x: x.vmin == x.vmax and not x.src[0].dtype.is_float
         and not may_be_invalid(x.src[0]) and not may_be_invalid(x.src[1])),
    # normalization toward LT (integers)
    Rule("not_cmp", "!(x<y) -> y<=x, !(x<=y) -> y<x, !(x==y) -> x!=y, ... (integers; "
         "==/!= any dtype)",
         UPat(Ops.NOT, src=(UPat(_CMP, name="c"),)),
         build=lambda c: {Ops.LT: lambda a, b: b.alu(Ops.LE, a),
                          Ops.LE: lambda a, b: b.alu(Ops.LT, a),
                          Ops.GT: lambda a, b: a.alu(Ops.LE, b),
                          Ops.GE: lambda a, b: a.alu(Ops.LT, b),
                          Ops.EQ: lambda a, b: a.alu(Ops.NE, b),
                          Ops.NE: lambda a, b: a.alu(Ops.EQ, b)}[c.op](*c.src),
         guard=lambda c: c.op in (Ops.EQ, Ops.NE) or c.src[0].dtype.is_int),
    Rule("gt_to_lt", "x > y -> y < x", UPat(Ops.GT, src=(_X, _Y)), build=lambda x, y: _lt(y, x)),
    Rule("le_const_rhs", "x <= c -> x < c+1 (integers)", UPat(Ops.LE, src=(_X, _c("c"))),
         build=lambda x, c: _lt(x, _k(x, c.arg + 1)),
         guard=lambda x, c: _int(x) and fits(x.dtype, c.arg + 1)),
    Rule("le_const_lhs", "c <= x -> c-1 < x (integers)", UPat(Ops.LE, src=(_c("c"), _X)),
         build=lambda x, c: _lt(_k(x, c.arg - 1), x),
         guard=lambda x, c: _int(x) and fits(x.dtype, c.arg - 1)),
    Rule("ge_const_rhs", "x >= c -> c-1 < x (integers)", UPat(Ops.GE, src=(_X, _c("c"))),
         build=lambda x, c: _lt(_k(x, c.arg - 1), x),
         guard=lambda x, c: _int(x) and fits(x.dtype, c.arg - 1)),
    Rule("ge_const_lhs", "c >= x -> x < c+1 (integers)", UPat(Ops.GE, src=(_c("c"), _X)),
         build=lambda x, c: _lt(x, _k(x, c.arg + 1)),
         guard=lambda x, c: _int(x) and fits(x.dtype, c.arg + 1)),
    # algebra on LT
    Rule("lt_offset", "x+c0 < c1 -> x < c1-c0 (integers, no wrap)",
         UPat(Ops.LT, src=(UPat(Ops.ADD, src=[_X, _c("c0")]), _c("c1"))),
         build=lambda x, c0, c1: _lt(x, _k(x, c1.arg - c0.arg)), guard=_offset_ok),
    Rule("lt_offset_lhs", "c1 < x+c0 -> c1-c0 < x (integers, no wrap)",
         UPat(Ops.LT, src=(_c("c1"), UPat(Ops.ADD, src=[_X, _c("c0")]))),
         build=lambda x, c0, c1: _lt(_k(x, c1.arg - c0.arg), x), guard=_offset_ok),
    Rule("eq_offset", "x+c0 == c1 -> x == c1-c0, same for != (integers, no wrap)",
         UPat((Ops.EQ, Ops.NE), src=(UPat(Ops.ADD, src=[_X, _c("c0")]), _c("c1")), name="e"),
         build=lambda e, x, c0, c1: x.alu(e.op, _k(x, c1.arg - c0.arg)), guard=_offset_ok),
    Rule("lt_neg_flip", "-x < -y -> y < x (no wrap of the negations)",
         UPat(Ops.LT, src=(UPat(Ops.NEG, src=(_X,)), UPat(Ops.NEG, src=(_Y,)))),
         build=lambda x, y: _lt(y, x),
         guard=lambda x, y: x.dtype.is_float or x.dtype.is_index
         or (x.dtype.is_fixed_int and x.vmin > x.dtype.min and y.vmin > y.dtype.min)),
    Rule("lt_mul_neg1_flip", "x*-1 < y*-1 -> y < x (integers, no wrap)",
         UPat(Ops.LT, src=(UPat(Ops.MUL, src=[_X, _c("a")], name="mx"),
                           UPat(Ops.MUL, src=[_Y, _c("b")], name="my"))),
         build=lambda x, y: _lt(y, x),
         guard=lambda a, b, mx, my: a.arg == -1 and b.arg == -1 and _int(mx)
         and int_exact(mx) and int_exact(my)),
    Rule("lt_idiv_lift", "x//d < c -> x < c*d if c > 0 else x < c*d-(d-1) (d > 0; C division)",
         UPat(Ops.LT, src=(UPat(Ops.IDIV, src=(_X, _c("d"))), _c("c"))),
         build=lambda x, d, c: _lt(x, _k(x, _idiv_bound(d.arg, c.arg))), guard=_idiv_lift_ok),
    Rule("lt_mul_const", "x*c0 < c1 -> x < ceil(c1/c0) if c0 > 0 else floor(c1/c0) < x "
         "(integers, product exact)",
         UPat(Ops.LT, src=(UPat(Ops.MUL, src=[_X, _c("c0")], name="m"), _c("c1"))),
         build=_mul_lt, guard=_mul_lt_ok),
    Rule("lt_gcd_fold", "d*A + B < c -> A < c//d when d = gcd(factors, c) > 1, 0 <= B < d "
         "(index)",
         UPat(Ops.LT, src=(UPat.var("x", dtype=None), _c("c"))),
         build=lambda x, c: lt_gcd_fold(x, c.arg),
         guard=lambda x, c: x.dtype.is_index and c.arg > 0 and x.op is Ops.ADD
         and lt_gcd_fold(x, c.arg) is not None),
    Rule("lt_simplex", "a0*x0 + a1*x1 + ... < 1 -> x0 + x1 + ... < 1 (ai > 0, xi >= 0 leaves)",
         UPat(Ops.LT, src=(_X, _c("c"))),
         build=lambda x: _lt(lt_simplex(x), _k(x, 1)),
         guard=lambda x, c: x.dtype.is_index and c.arg == 1 and lt_simplex(x) is not None),
]
for _r in comparison_dsl_patterns:
    _r.group = G

GROUPS: dict[str, list[Rule]] = {G: comparison_dsl_patterns}


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_COMPARISON = "comparison_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- comparisons ----------------------------------------------------------------
_eg(Q("gt_to_lt", "x > y -> y < x", _E_COMPARISON, "(= e (Gt dt x y))",
      "(union e (Lt dt y x))"))

_eg(Q("ge_const_to_lt", "x >= c -> c-1 < x (integers)", _E_COMPARISON,
      "(= e (Ge dt x (Cst dx c))) (IntDt dx) (= c1 (- c 1)) (>= c1 (dmin dx))",
      "(union e (Lt dt (Cst dx c1) x))"))

_eg(Q("le_const_to_lt", "x <= c -> x < c+1 (integers)", _E_COMPARISON,
      "(= e (Le dt x (Cst dx c))) (IntDt dx) (= c1 (+ c 1)) (<= c1 (dmax dx))",
      "(union e (Lt dt x (Cst dx c1)))"))

_eg(Q("not_lt_const", "!(x < c) -> c-1 < x (integers)", _E_COMPARISON,
      "(= e (Not dt (Lt dt x (Cst dx c)))) (IntDt dx) (= c1 (- c 1)) (>= c1 (dmin dx))",
      "(union e (Lt dt (Cst dx c1) x))"))

_eg(Q("not_const_lt", "!(c < x) -> x < c+1 (integers)", _E_COMPARISON,
      "(= e (Not dt (Lt dt (Cst dx c) x))) (IntDt dx) (= c1 (+ c 1)) (<= c1 (dmax dx))",
      "(union e (Lt dt x (Cst dx c1)))"))

_eg(Q("lt_offset", "x+c0 < c1 -> x < c1-c0 (index)", _E_COMPARISON,
      "(= e (Lt dt (Add dx x (Cst dx c0)) (Cst dx c1))) (= dx \"index\") (= c (- c1 c0))",
      "(union e (Lt dt x (Cst dx c)))"))

_eg(Q("lt_offset_lhs", "c1 < x+c0 -> c1-c0 < x (index)", _E_COMPARISON,
      "(= e (Lt dt (Cst dx c1) (Add dx x (Cst dx c0)))) (= dx \"index\") (= c (- c1 c0))",
      "(union e (Lt dt (Cst dx c) x))"))

_eg(Q("lt_idiv_lift_pos", "x//d < c -> x < c*d (d > 0, c > 0)", _E_COMPARISON,
      "(= e (Lt dt (Idiv dx x (Cst dx d)) (Cst dx c))) (= dx \"index\") (> d 0) (> c 0) "
      "(= k (* c d))", "(union e (Lt dt x (Cst dx k)))"))

_eg(Q("lt_idiv_lift_nonpos", "x//d < c -> x < (c-1)*d+1 (d > 0, c <= 0)", _E_COMPARISON,
      "(= e (Lt dt (Idiv dx x (Cst dx d)) (Cst dx c))) (= dx \"index\") (> d 0) (<= c 0) "
      "(= k (+ (* (- c 1) d) 1))", "(union e (Lt dt x (Cst dx k)))"))

_eg(Q("const_lt_idiv_lift", "c < x//d -> (c+1)*d-1 < x (d > 0, c >= 0)", _E_COMPARISON,
      "(= e (Lt dt (Cst dx c) (Idiv dx x (Cst dx d)))) (= dx \"index\") (> d 0) (>= c 0) "
      "(= k (- (* (+ c 1) d) 1))", "(union e (Lt dt (Cst dx k) x))"))

_eg(Q("lt_mul_pos", "x*c0 < c1 -> x < ceil(c1/c0) (c0 > 0, index)", _E_COMPARISON,
      "(= e (Lt dt (Mul dx x (Cst dx c0)) (Cst dx c1))) (= dx \"index\") (> c0 0) (> c1 0) "
      "(= k (/ (+ c1 (- c0 1)) c0))", "(union e (Lt dt x (Cst dx k)))"))

_eg(Q("const_lt_mul_pos", "c1 < x*c0 -> c1//c0 < x (c0 > 0, c1 >= 0, index)", _E_COMPARISON,
      "(= e (Lt dt (Cst dx c1) (Mul dx x (Cst dx c0)))) (= dx \"index\") (> c0 0) (>= c1 0) "
      "(= k (/ c1 c0))", "(union e (Lt dt (Cst dx k) x))"))

_eg(Q("neg_lt_flip", "-x < -y -> y < x (index)", _E_COMPARISON,
      "(= e (Lt dt (Neg dx x) (Neg dx y))) (= dx \"index\")", "(union e (Lt dt y x))"))

_eg(Q("neg_lt_const", "-x < c -> -c < x (index)", _E_COMPARISON,
      "(= e (Lt dt (Neg dx x) (Cst dx c))) (= dx \"index\") (= k (- 0 c))",
      "(union e (Lt dt (Cst dx k) x))"))

_eg(Q("const_lt_neg", "c < -x -> x < -c (index)", _E_COMPARISON,
      "(= e (Lt dt (Cst dx c) (Neg dx x))) (= dx \"index\") (= k (- 0 c))",
      "(union e (Lt dt x (Cst dx k)))"))

_eg([PyRule("lt_linear", "sum < c -> divided by the gcd, small remainder split off "
           "(4*a + 30 < 0 -> a < -7; 4*a + b < 8 -> a < 2 for 0 <= b < 4)",
           "comparison_dsl_patterns", "cmp")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
