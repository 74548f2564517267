"""MAX/MIN elimination by self folding and by bounds (docs/rules.md, seed 000 §11).

This IR keeps ``MIN`` as an op (Morok lowers it to ``-max(-a, -b)``), so the
MIN twins of the MAX rules are here too. Float bounds are unbounded unless
constant, so the bounds rules never decide a float (NaN) comparison.
"""

from __future__ import annotations

from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G = "minmax_dsl_patterns"

LAWS = [
    rule("max_self", "max(x, x) -> x", group=G, subsume=True),
    rule("min_self", "min(x, x) -> x", group=G, subsume=True),
    rule("max_by_bounds", "max(x, y) -> x", "vmin(x) >= vmax(y)", group=G, subsume=True),
    rule("min_by_bounds", "min(x, y) -> x", "vmax(x) <= vmin(y)", group=G, subsume=True),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
