"""Boolean logic: double negation, self-cancellation, absorbing/identity elements,
De Morgan (docs/rules.md, seed 000 §9).

``NOT`` on integers is bitwise complement, for which ``~~x = x`` and De Morgan
hold as well; the tautology/contradiction rules are for bools only. Bool
``ADD``/``MUL``/``MAX``/``MIN`` are rewritten to ``OR``/``AND`` first (tinygrad
does the same) so no arithmetic rule mistakes them for integers.
"""

from __future__ import annotations

from rules.computed import PyRule
from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G = "boolean_dsl_patterns"
_BOOL = "is_bool(x)"

LAWS = [
    rule("bool_add_is_or", "x + y -> x | y", _BOOL, group=G),
    rule("bool_mul_is_and", "x * y -> x & y", _BOOL, group=G),
    rule("bool_max_is_or", "max(x, y) -> x | y", _BOOL, group=G),
    rule("bool_min_is_and", "min(x, y) -> x & y", _BOOL, group=G),
    rule("not_not", "~~x -> x", group=G, subsume=True),
    rule("xor_self", "x ^ x -> 0", group=G, subsume=True),
    rule("or_not_self", "x | ~x -> true", _BOOL, group=G, subsume=True),
    rule("and_not_self", "x & ~x -> false", _BOOL, group=G, subsume=True),
    rule("or_true", "true | x -> true", group=G, subsume=True),
    rule("and_false", "false & x -> false", group=G, subsume=True),
    rule("and_true", "true & x -> x", group=G, subsume=True),
    rule("or_false", "false | x -> x", group=G, subsume=True),
    rule("de_morgan_and", "~x & ~y -> ~(x | y)", group=G),
    rule("de_morgan_or", "~x | ~y -> ~(x & y)", group=G),
    rule("or_absorb_and", "x | (x & y) -> x", group=G),
    rule("and_absorb_or", "x & (x | y) -> x", group=G),
    rule("or_lt_complement", "(x < c1) | (c2 < x) -> true", "is_int(x) and c2 < c1", group=G,
         note="x < c1 or x > c2 covers every integer when c2 < c1 (x | !x after the "
         "negation flip)"),
    rule("and_lt_complement", "(x < c1) & (c2 < x) -> false", "is_int(x) and c1 <= c2 + 1",
         group=G, note="no integer is both < c1 and > c2 when c1 <= c2 + 1"),
    rule("and_absorb_lt", "(x < c1) & (x < c2) -> x < min(c1, c2)", group=G),
    rule("and_absorb_gt", "(c1 < x) & (c2 < x) -> max(c1, c2) < x", group=G),
    rule("and_assoc_dedup", "(a & b) & b -> a & b", group=G, subsume=True),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    PyRule("canonical_and", "a & b & ... -> the sorted conjunction of the distinct clauses",
           G, "canon_and")])
