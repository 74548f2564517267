"""A rule-set selection may hold rules as objects beside rule-set names: the same rule
of the language runs in both engines (a notebook's rule, tried without a family)."""

from __future__ import annotations

import pytest

import rules
from eqsat import Ops, Rule, UPat, optimize, parse, to_sexpr
from eqsat.engines.egraph.results import cache_key
from eqsat.engines.egraph.rulesets import default_groups
from extraction import get_cost_model
from rules.lang import rule

OFF = "range_based_mod_div_patterns"
MOD_SMALL = rule("mod_small", "x % c1 -> x", "c1 > 0 and vmin(x) >= 0 and vmax(x) < c1",
                 register=False)
SELECTION = {"baseline": [g for g in rules.SYMBOLIC_GROUPS if g != OFF] + [MOD_SMALL],
             "egraph": [g for g in default_groups() if g != OFF] + [MOD_SMALL]}


@pytest.mark.parametrize("engine", ["baseline", "egraph"])
def test_a_rule_object_runs_in_both_engines(engine: str) -> None:
    g = parse("(mod (var x 0 5) 8)")
    without = optimize(g, engine=engine, rulesets=SELECTION[engine][:-1])
    assert to_sexpr(without.graph) == "(mod (var x 0 5) 8)"  # nothing else folds it
    res = optimize(g, engine=engine, rulesets=SELECTION[engine])
    assert to_sexpr(res.graph) == "(var x 0 5)"
    assert res.stats["matches"].get("mod_small") == 1


def test_an_ordered_matcher_rule_runs_in_both_engines() -> None:
    # an eqsat.Rule is the baseline's form; the e-graph matches it from Python
    neg_neg = Rule("neg_neg_user", "-(-x) -> x",
                   UPat(Ops.NEG, src=(UPat(Ops.NEG, src=(UPat.var("x"),)),)), lambda x: x)
    g = parse("(neg (neg (var x 0 5)))")
    for engine in ("baseline", "egraph"):
        without = optimize(g, engine=engine, rulesets=["zero_folding_dsl_patterns"])
        assert to_sexpr(without.graph) == to_sexpr(g), engine
        res = optimize(g, engine=engine, rulesets=["zero_folding_dsl_patterns", neg_neg])
        assert to_sexpr(res.graph) == "(var x 0 5)", engine


@pytest.mark.parametrize("engine", ["baseline", "egraph"])
def test_a_selection_of_something_else_is_an_error(engine: str) -> None:
    with pytest.raises((TypeError, ValueError), match="rule"):
        optimize(parse("(var x 0 5)"), engine=engine, rulesets=["zero_folding_dsl_patterns", 3])


def test_a_selection_with_rule_objects_is_not_cached() -> None:
    # the result cache keys a selection by its names; a rule object's identity is not
    # what it means
    model = get_cost_model("reference")
    g = parse("(mod (var x 0 5) 8)")
    assert cache_key(g, None, SELECTION["egraph"][:-1], model) is not None
    assert cache_key(g, None, SELECTION["egraph"], model) is None
