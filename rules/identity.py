"""Identity and zero elements, self folding, zero folding, power, negation.

docs/rules.md, seed 000 §2-§4 and §15. Guards seed 000 calls out:

* ``x*0 -> 0`` never for floats (``NaN*0`` and ``inf*0`` are NaN), and never
  swallows an Invalid index.
* self-comparisons fold only for non-floats (``NaN != NaN``).
* ``x//x -> 1`` and ``x%x -> 0`` only when ``x`` is never 0 (division by zero
  is undefined and is never folded into a value).
"""

from __future__ import annotations

from eqsat.ir.ops import Ops
from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G_IDENT = "identity_and_zero_patterns"
G_SELF = "self_folding_dsl_patterns"
G_ZERO = "zero_folding_dsl_patterns"
G_POW = "power_dsl_patterns"
G_NEG = "negation_dsl_patterns"

_ROUND = (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND)
_NEG_LOOP = ("e-graph only: the ordered matcher keeps x - c normalized to x + (-c) and "
             "x*-1 for its linear rules; the e-graph holds both forms")

LAWS = [
    # identity_and_zero_patterns
    rule("add_zero", "x + 0 -> x", "not is_float(x)", group=G_IDENT, subsume=True,
         note="floats: -0.0 + 0.0 is +0.0"),
    rule("add_neg_zero", "x + -0.0 -> x", group=G_IDENT, subsume=True),
    rule("mul_one", "x * 1 -> x", group=G_IDENT, subsume=True),
    rule("or_zero", "x | 0 -> x", group=G_IDENT, subsume=True),
    rule("xor_zero", "x ^ 0 -> x", group=G_IDENT, subsume=True),
    rule("shl_zero", "x << 0 -> x", group=G_IDENT, subsume=True),
    rule("shr_zero", "x >> 0 -> x", group=G_IDENT, subsume=True),
    rule("ne_false", "x != false -> x", "is_bool(x)", group=G_IDENT, subsume=True),
    rule("eq_true", "x == true -> x", "is_bool(x)", group=G_IDENT, subsume=True),
    rule("ne_true", "x != true -> ~x", "is_bool(x)", group=G_IDENT,
         note="tinygrad's logical not of a bool"),
    rule("eq_false", "x == false -> ~x", "is_bool(x)", group=G_IDENT),
    rule("sub_zero", "x - 0 -> x", group=G_IDENT, subsume=True),
    rule("idiv_one", "x // 1 -> x", group=G_IDENT, subsume=True),
    rule("fdiv_one", "x / 1 -> x", group=G_IDENT, subsume=True),
    rule("mod_one", "x % 1 -> 0", group=G_IDENT, subsume=True),
    rule("mod_neg_one", "x % -1 -> 0", group=G_IDENT, subsume=True),
    rule("round_of_int", "op(x) -> x", "not is_float(x)", ops=_ROUND, group=G_IDENT,
         subsume=True),
    rule("mul_zero", "x * 0 -> 0", "not is_float(x)", group=G_IDENT, subsume=True,
         note="floats: NaN*0 and inf*0 are NaN"),
    rule("and_zero", "x & 0 -> 0", group=G_IDENT, subsume=True),
    # self_folding_dsl_patterns
    rule("idiv_self", "x // x -> 1", "nonzero(x)", group=G_SELF, subsume=True),
    rule("idiv_neg_one", "x // -1 -> -x", group=G_SELF, subsume=True),
    rule("mod_mod_same", "(x % y) % y -> x % y", group=G_SELF, subsume=True),
    rule("and_self", "x & x -> x", group=G_SELF, subsume=True),
    rule("or_self", "x | x -> x", group=G_SELF, subsume=True),
    # zero_folding_dsl_patterns
    rule("mod_self", "x % x -> 0", "nonzero(x)", group=G_ZERO, subsume=True),
    rule("lt_self", "x < x -> false", group=G_ZERO,
         note="every dtype: NaN < NaN is false too (but NaN != NaN is true: ne_self is "
         "not for floats)"),
    rule("ne_self", "x != x -> false", "not is_float(x)", group=G_ZERO),
    # power_dsl_patterns
    rule("pow_zero", "x ** 0 -> 1", group=G_POW, subsume=True),
    rule("pow_one", "x ** 1 -> x", group=G_POW, subsume=True),
    # negation_dsl_patterns
    rule("neg_neg", "-(-x) -> x", group=G_NEG, subsume=True),
    rule("sub_neg", "x - (-y) -> x + y", group=G_NEG, baseline_reason=_NEG_LOOP),
    rule("add_neg", "x + (-y) -> x - y", group=G_NEG, baseline_reason=_NEG_LOOP),
    rule("mul_neg_one", "x * -1 -> -x", "is_index(x)", group=G_NEG,
         baseline_reason=_NEG_LOOP),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
