"""The two engines run the same rules: a walk of the registry.

Every rule of the ordered matcher has an e-graph rule of the same name (a native rule of
the language, its variants counting under its name; a rule written in Python matched
from the e-graph, or one of the e-graph's computed rules), or the e-graph states why it
does not run it. Every e-graph rule the baseline lacks is a rule of the language that
says why, or one of the e-graph's own passes. A rule that is not native says why.
"""

from __future__ import annotations

import pytest

import rules
from rules.computed import PyRule
from rules.lang import EGRAPH_ABSENT, LAWS_BY_NAME, Law
from rules.native import ERule
from tests.budgets import QUALITY


def _egraph_rules() -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for s in rules.list_rulesets():
        if s.engine == "egraph":
            for r in s.rules:
                out.setdefault(r.law if isinstance(r, ERule) else r.name, []).append(r)
    return out


EGRAPH = _egraph_rules()
BASELINE = [r.name for r in rules.all_rules()]


@pytest.mark.parametrize("name", BASELINE)
def test_every_baseline_rule_runs_in_the_egraph_or_says_why(name: str) -> None:
    assert name in EGRAPH or EGRAPH_ABSENT.get(name), \
        f"{name}: no e-graph rule of that name, and no reason given"


@pytest.mark.parametrize("name", sorted(set(EGRAPH) - set(BASELINE)))
def test_every_egraph_only_rule_says_why(name: str) -> None:
    law = LAWS_BY_NAME.get(name)
    if law is not None:
        assert law.baseline_reason, f"{name}: not in the baseline, and no reason given"
    else:  # one of the e-graph's passes (computed over e-classes by design)
        assert all(isinstance(r, PyRule) and r.kind not in ("ematch", "ematch_nonint")
                   for r in EGRAPH[name]), name


@pytest.mark.parametrize("name", sorted(EGRAPH))
def test_a_rule_matched_from_python_says_why_it_is_not_native(name: str) -> None:
    for r in EGRAPH[name]:
        if isinstance(r, PyRule) and r.kind in ("ematch", "ematch_nonint"):
            assert r.reason, f"{name}: matched from Python without a reason"


def test_a_native_rule_comes_from_the_rule_language_under_its_name() -> None:
    for name, rs in EGRAPH.items():
        for r in rs:
            if isinstance(r, ERule):
                law = LAWS_BY_NAME[name]
                assert isinstance(law, Law) and law.native is None and r.identity == law.identity


def test_one_definition_a_rule() -> None:
    # a baseline rule of the language is the compiled form of its definition
    for r in rules.all_rules():
        law = getattr(r, "law", None)
        if law is not None:
            assert LAWS_BY_NAME[r.name] is law and law.baseline is r
    assert len(BASELINE) == len(set(BASELINE))


def test_the_rules_issue_19_found_missing_in_the_egraph_are_there() -> None:
    # seed patterns that had no e-graph twin (issue 19)
    for name in ("pow_zero", "pow_one", "fdiv_one", "round_of_int", "invalid_bare_left",
                 "invalid_bare_right", "invalid_into_cast", "invalid_into_cmp_left",
                 "invalid_into_cmp_right"):
        assert name in EGRAPH, name


@pytest.mark.parametrize("text, want", [
    ("(pow (cast f32 (var x -5 5)) 1.0)", "(cast f32 (var x -5 5))"),
    ("(mul (cast f32 (var x -5 5)) 1.0)", "(cast f32 (var x -5 5))"),
    ("(trunc (var x -5 5))", "(var x -5 5)"),
    ("(xor (xor (var x -5 5) -1) -1)", "(var x -5 5)"),
    ("(idiv (mul (var x -5 5) (mul (var y 1 4) 6)) (mul (var y 1 4) 3))", "(mul (var x -5 5) 2)"),
])
def test_both_engines_simplify_what_only_the_baseline_did(text: str, want: str) -> None:
    # issue 19: these came back unchanged from the e-graph, simplified from the baseline
    from eqsat import optimize, parse

    for engine in ("baseline", "egraph"):
        res = optimize(parse(text), engine=engine, cost_model="reference", budget=QUALITY)
        assert res.graph is parse(want), (engine, res.graph)
