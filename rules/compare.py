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
from rules.common import may_be_invalid, split_add, sum_terms
from rules.computed import PyRule
from rules.lang import FOLD, baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS", "lt_gcd_fold", "lt_simplex"]

_X, _Y = UPat.var("x"), UPat.var("y")
_CMP = tuple(sorted(GroupOp.Comparison, key=lambda o: o.value))


def _lt(a: UOp, b: UOp) -> UOp:
    return a.alu(Ops.LT, b)


def _k(x: UOp, v: int) -> UOp:
    return x.const_like(v)


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
_NOT_FLOAT = "not is_float(x)"  # (NaN: !(x < y) is not y <= x)
#: x + c0 does not wrap, and c1 - c0 is a value of the dtype
_OFFSET = ("is_int(x) and vmin(x) + c0 >= dmin(x) and vmax(x) + c0 <= dmax(x) and "
           "c1 - c0 >= dmin(x) and c1 - c0 <= dmax(x)")
#: x * c0 does not wrap
_MUL_EXACT = "vmin(x) * c0 >= dmin(x) and vmax(x) * c0 <= dmax(x)"
#: -x and -y do not wrap
_NEG_EXACT = "vmin(x) > dmin(x) and vmin(y) > dmin(y)"
_SUB_CMP = ("e-graph only: the ordered matcher keeps tinygrad's comparisons, whose linear "
            "forms against a constant its lt rules read")
_LINEAR = ("the e-graph's lt_linear reads every comparison of a linear form with a "
           "constant (divided by the gcd, the small remainder split off): it covers this")

LAWS = [
    # self comparison; < and != are zero_folding's lt_self, ne_self. x > x is false for
    # every float too (NaN > NaN is false); <=, >=, == are not true for NaN
    rule("cmp_self_false", "op(x, x) -> false", ops=(Ops.GT,), group=G,
         note="x < x and x != x are lt_self and ne_self, earlier in the seed's order"),
    rule("cmp_self_true", "op(x, x) -> true", "not is_float(x)", ops=(Ops.LE, Ops.GE, Ops.EQ),
         group=G),
    # constants and bounds
    rule("cmp_const", "op(c1, c2) -> op(c1, c2)", ops=_CMP, vector="any", group=G,
         native=FOLD, egraph_nonint=True, note="constants compared (IEEE for floats)"),
    py(Rule("cmp_by_bounds", "x <op> y -> true/false when the bounds decide it "
            "(e.g. x<y when vmax(x) < vmin(y))",
            UPat(_CMP, name="x"), build=lambda x: UOp.const(x.dtype, x.vmin),
            guard=lambda x: x.vmin == x.vmax and not x.src[0].dtype.is_float
            and not may_be_invalid(x.src[0]) and not may_be_invalid(x.src[1]), group=G),
       "absent", "the e-graph's interval analysis decides comparisons (iv_lt_true, ...) and "
       "fold_const_by_bounds makes the constant"),
    # normalization toward LT (integers; == and != any dtype)
    rule("not_lt", "~(x < y) -> y <= x", _NOT_FLOAT, group=G),
    rule("not_le", "~(x <= y) -> y < x", _NOT_FLOAT, group=G),
    rule("not_gt", "~(x > y) -> x <= y", _NOT_FLOAT, group=G),
    rule("not_ge", "~(x >= y) -> x < y", _NOT_FLOAT, group=G),
    rule("not_eq", "~(x == y) -> x != y", group=G),
    rule("not_ne", "~(x != y) -> x == y", group=G),
    rule("gt_to_lt", "x > y -> y < x", group=G, subsume=True),
    # (the e-graph hides the normalized node: its LT form costs the same, and every rule
    # reads comparisons as LT)
    rule("le_const_rhs", "x <= k -> x < k + 1", "is_int(x) and k + 1 <= dmax(x)", group=G,
         subsume=True),
    rule("le_const_lhs", "k <= x -> k - 1 < x", "is_int(x) and k - 1 >= dmin(x)", group=G,
         subsume=True),
    rule("ge_const_rhs", "x >= k -> k - 1 < x", "is_int(x) and k - 1 >= dmin(x)", group=G,
         subsume=True),
    rule("ge_const_lhs", "k >= x -> x < k + 1", "is_int(x) and k + 1 <= dmax(x)", group=G,
         subsume=True),
    rule("not_lt_const", "~(x < k) -> k - 1 < x", "is_int(x) and k - 1 >= dmin(x)", group=G,
         baseline_reason="not_lt then le_const_lhs in the ordered matcher (one step here: "
                         "the e-graph need not make the <= node)"),
    rule("not_const_lt", "~(k < x) -> x < k + 1", "is_int(x) and k + 1 <= dmax(x)", group=G,
         baseline_reason="not_lt then le_const_rhs in the ordered matcher (one step here)"),
    # algebra on LT
    rule("lt_offset", "x + c0 < c1 -> x < c1 - c0", _OFFSET, group=G),
    rule("lt_offset_lhs", "c1 < x + c0 -> c1 - c0 < x", _OFFSET, group=G),
    rule("eq_offset", "op(x + c0, c1) -> op(x, c1 - c0)", _OFFSET, ops=(Ops.EQ, Ops.NE),
         group=G),
    # a difference against 0 or 1 is a comparison of its terms (index: no wrap)
    # x - y < 1 -> x <= y, x - y < 0 -> x < y, 0 < x - y -> y < x, -1 < x - y -> y <= x
    *(rule(name, text, "is_index(x)", group=G, baseline_reason=_SUB_CMP) for name, text in (
        ("lt_sub_one", "x - y < 1 -> x <= y"), ("lt_sub_zero", "x - y < 0 -> x < y"),
        ("zero_lt_sub", "0 < x - y -> y < x"), ("neg_one_lt_sub", "-1 < x - y -> y <= x"))),
    rule("lt_neg_flip", "-x < -y -> y < x", _NEG_EXACT, group=G),
    rule("lt_neg_flip_float", "-x < -y -> y < x", "is_float(x)", group=G),
    rule("lt_mul_neg1_flip", "x * -1 < y * -1 -> y < x", _NEG_EXACT, group=G),
    rule("neg_lt_const", "-x < k -> -k < x", "vmin(x) > dmin(x) and k > dmin(x)", group=G),
    rule("const_lt_neg", "k < -x -> x < -k", "vmin(x) > dmin(x) and k > dmin(x)", group=G),
    # x // c0 < c1 (C division: c0 > 0, both signs of c1)
    rule("lt_idiv_lift_pos", "x // c0 < c1 -> x < c1 * c0",
         "c0 > 0 and c1 > 0 and c1 * c0 <= dmax(x)", group=G),
    rule("lt_idiv_lift_nonpos", "x // c0 < c1 -> x < c1 * c0 - (c0 - 1)",
         "c0 > 0 and c1 <= 0 and c1 * c0 - (c0 - 1) >= dmin(x)", group=G),
    rule("const_lt_idiv_lift", "c1 < x // c0 -> (c1 + 1) * c0 - 1 < x",
         "c0 > 0 and c1 >= 0 and (c1 + 1) * c0 - 1 <= dmax(x)", group=G),
    # x * c0 < c1 (the product exact)
    rule("lt_mul_pos", "x * c0 < c1 -> x < (c1 + c0 - 1) // c0",
         f"c0 > 1 and c1 > 0 and {_MUL_EXACT} and c1 + c0 - 1 <= dmax(x)", group=G),
    rule("lt_mul_pos_nonpos", "x * c0 < c1 -> x < c1 // c0", f"c0 > 1 and c1 <= 0 and {_MUL_EXACT}",
         group=G),
    rule("lt_mul_neg_nonpos", "x * c0 < c1 -> c1 // c0 < x",
         "c0 < -1 and c1 <= 0 and vmax(x) * c0 >= dmin(x) and vmin(x) * c0 <= dmax(x) and "
         "c1 // c0 <= dmax(x)", group=G),
    rule("lt_mul_neg_pos", "x * c0 < c1 -> -((c1 - c0 - 1) // (-c0)) < x",
         "c0 < -1 and c1 > 0 and vmax(x) * c0 >= dmin(x) and vmin(x) * c0 <= dmax(x) and "
         "c1 - c0 - 1 <= dmax(x) and -c0 <= dmax(x)", group=G),
    rule("const_lt_mul_pos", "c1 < x * c0 -> c1 // c0 < x", f"c0 > 1 and c1 >= 0 and {_MUL_EXACT}",
         group=G),
    # a sum's common factor, the simplex (Python: they read the whole sum)
    py(Rule("lt_gcd_fold", "d*A + B < c -> A < c//d when d = gcd(factors, c) > 1, 0 <= B < d "
            "(index)",
            UPat(Ops.LT, src=(UPat.var("x", dtype=None), UPat(Ops.CONST, name="c"))),
            build=lambda x, c: lt_gcd_fold(x, c.arg),
            guard=lambda x, c: x.dtype.is_index and c.arg > 0 and x.op is Ops.ADD
            and lt_gcd_fold(x, c.arg) is not None, group=G),
       "absent", _LINEAR),
    py(Rule("lt_simplex", "a0*x0 + a1*x1 + ... < 1 -> x0 + x1 + ... < 1 (ai > 0, xi >= 0 "
            "leaves)",
            UPat(Ops.LT, src=(UPat.var("x"), UPat(Ops.CONST, name="c"))),
            build=lambda x: _lt(lt_simplex(x), _k(x, 1)),
            guard=lambda x, c: x.dtype.is_index and c.arg == 1 and lt_simplex(x) is not None,
            group=G),
       "absent", _LINEAR),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    PyRule("lt_linear", "sum < c -> divided by the gcd, small remainder split off "
           "(4*a + 30 < 0 -> a < -7; 4*a + b < 8 -> a < 2 for 0 <= b < 4)", G, "cmp")])
