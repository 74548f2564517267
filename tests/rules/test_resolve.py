"""Rule-set names, read in one place (``rules.resolve``) for both engines: one line per
name and engine, with the groups it must and must not hold."""

from __future__ import annotations

import pytest

import rules
from eqsat.engines.egraph.rulesets import resolve as egraph_resolve

GEP = "gep_pushing_patterns"
STEP = "propagate_invalid_stepwise"  # e-graph opt-in

# names, engine, a group it holds, a group it does not hold (None: no such check)
TABLE = [
    (None, "baseline", GEP, None),
    ("symbolic", "baseline", GEP, None),
    ("symbolic_simple", "baseline", "propagate_invalid", GEP),
    ("default", "baseline", GEP, None),
    (None, "egraph", GEP, STEP),
    ("symbolic", "egraph", GEP, STEP),
    ("default", "egraph", GEP, STEP),
    ("symbolic_simple", "egraph", "propagate_invalid", GEP),   # the same meaning as above
    ("all", "egraph", STEP, None),
    (["boolean_dsl_patterns"], "egraph", "boolean_dsl_patterns", "propagate_invalid"),
    ([STEP, "symbolic_simple"], "egraph", STEP, GEP),
]


@pytest.mark.parametrize("names,engine,has,lacks", TABLE)
def test_names(names, engine, has, lacks) -> None:
    got = rules.resolve(names, engine)
    assert has in got and (lacks is None or lacks not in got), got
    assert len(got) == len(set(got))


def test_baseline_composes_in_seed_order_the_egraph_as_named() -> None:
    names = ["minmax_dsl_patterns", "propagate_invalid"]
    assert rules.resolve(names, "baseline") == ("propagate_invalid", "minmax_dsl_patterns")
    assert rules.resolve(names, "egraph") == tuple(names)


def test_the_egraph_engine_reads_names_through_the_resolver() -> None:
    groups, _, _ = egraph_resolve("symbolic_simple")
    assert groups == rules.resolve("symbolic_simple", "egraph")


@pytest.mark.parametrize("engine", ["baseline", "egraph"])
def test_unknown_name_lists_the_choices(engine) -> None:
    with pytest.raises(ValueError, match="unknown .*rule set 'nope'; choose from symbolic"):
        rules.resolve("nope", engine)
