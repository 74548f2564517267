"""Term combining, ALU chain folding, constant hoisting, SUB normalization.

docs/rules.md, seed 000 §7, §8. These rules reassociate, so they are limited to
integers and bools: exact for ``index``, exact modulo 2^n for fixed-width
integers (wrapping addition and multiplication are associative and
distributive), but not for floats (rounding). ``x + x -> x*2`` is exact for
floats too.

Canonical form produced: constants on the right and hoisted outward
(``(x + c) + y -> (x + y) + c``), a subtraction of a constant written as an
addition (``x - c -> x + (-c)``), so the div/mod rules see ``sum + offset``.
"""

from __future__ import annotations

from rules.computed import PyRule
from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G_TERM = "term_combining_dsl_patterns"
G_ALU = "alu_folding_dsl_patterns"
#: why the e-graph runs a linear rule on fixed-width integers only
_CANON = ("an index sum is the sorted flattened sum of canonical_sum, like terms merged and "
          "the constant last: on index the rule would only add partial sums (and through "
          "a class of a known constant, multiply it by every product of constants)")
#: why a hoisting rule is matched from Python in the e-graph
_NOT_CONST = ("egglog cannot say that y is not a constant; with a constant y the rule and "
              "mul_const_chain multiply every product by every subset of its constants")
_INT = "is_int(x)"
_INT_Y = "is_int(x) and not is_const(y)"

LAWS = [
    # term_combining_dsl_patterns
    rule("add_self", "x + x -> x * 2", group=G_TERM,
         note="exact for floats too: the sum of two equal floats is twice it",
         egraph_dtypes="int", egraph_note="a float x*2.0 prices below x+x with x shared "
         "in the e-graph's tree pricing and costs more in the result (fuzz 0:1119)"),
    rule("sub_self", "x - x -> 0", _INT, group=G_TERM, subsume=True),
    rule("add_mul_terms", "x * c1 + x * c2 -> x * (c1 + c2)", _INT, group=G_TERM,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("add_term_mul", "x + x * k -> x * (k + 1)", _INT, group=G_TERM,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("add_chain_mul_terms", "(y + x * c1) + x * c2 -> y + x * (c1 + c2)", _INT,
         group=G_TERM, egraph_dtypes="fixed", egraph_note=_CANON),
    rule("add_chain_term_mul", "(y + x) + x * k -> y + x * (k + 1)", _INT, group=G_TERM,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("add_chain_mul_term", "(y + x * k) + x -> y + x * (k + 1)", _INT, group=G_TERM,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("add_chain_self", "(y + x) + x -> y + x * 2", _INT, group=G_TERM,
         egraph_dtypes="fixed", egraph_note=_CANON),
    # no subsumption: in the e-graph x + y stands for its whole class, whose other forms
    # the rewritten e-node keeps reachable (tests/rules/test_combine.py)
    rule("sub_add_cancel", "(x + y) - y -> x", _INT, group=G_TERM),
    rule("add_sub_cancel", "(x - y) + y -> x", _INT, group=G_TERM),
    # SUB normalization: with it, (x - c1) + c2 and (x - c1) - c2 below only meet a SUB
    # of a constant when this group is left out (rulesets=[...alu_folding...])
    rule("sub_const_to_add", "x - k -> x + (-k)", _INT, group=G_TERM,
         note="the offset form the div/mod rules see",
         egraph_dtypes="fixed", egraph_note=_CANON),
    # alu_folding_dsl_patterns
    rule("add_const_chain", "(x + c1) + c2 -> x + (c1 + c2)", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("mul_const_chain", "(x * c1) * c2 -> x * (c1 * c2)", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("and_const_chain", "(x & c1) & c2 -> x & (c1 & c2)", _INT, group=G_ALU),
    rule("or_const_chain", "(x | c1) | c2 -> x | (c1 | c2)", _INT, group=G_ALU),
    rule("xor_const_chain", "(x ^ c1) ^ c2 -> x ^ (c1 ^ c2)", _INT, group=G_ALU),
    rule("max_const_chain", "max(max(x, c1), c2) -> max(x, max(c1, c2))", _INT, group=G_ALU),
    rule("min_const_chain", "min(min(x, c1), c2) -> min(x, min(c1, c2))", _INT, group=G_ALU),
    rule("add_sub_const", "(x - c1) + c2 -> x + (c2 - c1)", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("sub_add_const", "(x + c1) - c2 -> x + (c1 - c2)", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("sub_sub_const", "(x - c1) - c2 -> x + (-(c1 + c2))", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("hoist_const_add", "(x + k) + y -> (x + y) + k", _INT_Y, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("hoist_const_mul", "(x * k) * y -> (x * y) * k", _INT_Y, group=G_ALU,
         native=_NOT_CONST),
    rule("sub_const_minus_sum", "c1 - (x + c2) -> (c1 - c2) - x", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("hoist_const_sub_lhs", "(x + k) - y -> (x - y) + k", _INT_Y, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("hoist_const_sub_rhs", "y - (x + k) -> (y - x) + (-k)", _INT_Y, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("hoist_const_from_const_sub", "(k - x) + y -> (y - x) + k", _INT_Y, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("sub_of_sub", "a - (b - x) -> x + (a - b)", _INT, group=G_ALU, note="exposes x",
         egraph_dtypes="fixed", egraph_note=_CANON),
    rule("neg_sum_const", "(x + k) * -1 -> -x + (-k)", _INT, group=G_ALU,
         egraph_dtypes="fixed", egraph_note=_CANON, note="Morok's -1*(x + c)"),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    PyRule("canonical_sum", "a+b+... -> the sorted flattened sum, like terms merged, constant "
           "last", G_ALU, "canon")])
