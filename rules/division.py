"""Division cancellation: FDIV/IDIV by themselves and out of products (docs/rules.md, seed 000 §5).

Floats: only ``0.0/0.0 -> NaN`` and ``(x*0.0)/0.0 -> NaN`` (a zero or NaN over a
zero is NaN). The seed's (and tinygrad's) ``x/x -> 1.0`` and ``(x*y)/y -> x`` are left
out for floats: IEEE gives NaN for ``x/x`` at 0, inf and NaN, and ``(x*y)/y`` is inf
where ``x*y`` overflows (``(x*1e38)/1e38`` at x = 5), NaN at ``y`` = 0 or inf, and ``x``
rounded where the product rounds; float bounds are unknown unless constant, so no guard
can admit them. Integer rules are exact: ``(x*y)//y -> x`` needs ``y`` never 0 and the
product not to wrap.
"""

from __future__ import annotations

from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G = "division_dsl_patterns"
LAWS = [
    rule("fdiv_zero_zero", "0.0 / 0.0 -> nan", group=G),
    rule("fdiv_mul_zero_zero", "(x * 0.0) / 0.0 -> nan", group=G),
    # index only: on fixed widths (with a no-wrap guard) z3's nonlinear search gives up
    # under load, so the rule could not be proven reliably there
    rule("idiv_mul_cancel", "(x * y) // y -> x", "is_index(x) and nonzero(y)", group=G),
    rule("mod_mul_cancel", "(x * y) % y -> 0", "is_index(x) and nonzero(y)", group=G,
         baseline_reason="e-graph only: the ordered matcher's div/mod core folds it "
                         "(exact_division)"),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
