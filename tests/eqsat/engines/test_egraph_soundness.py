"""End to end: the e-graph's output is equivalent to its input on random graphs.

Index arithmetic with the idioms the rules target, padded (Invalid) index
expressions, and fixed-width integer arithmetic (which wraps); the default rule
sets and the opt-in ones. Example counts are modest (each run is an e-graph run).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.api import Budget
from eqsat.engines.egraph import optimize_egraph
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import to_sexpr
from tests.strategies import fixed_width_exprs, int_exprs, padded_index_exprs

BUDGET = Budget(iterations=8, seconds=5.0)


def _check(g, rulesets=None) -> None:
    out, stats = optimize_egraph(g, rulesets=rulesets, cost_model="reference", budget=BUDGET)
    eq = check_equivalent(g, out, samples=2000)
    assert eq, (f"{to_sexpr(g)}\n  -> {to_sexpr(out)}\n  {eq.reason} at {eq.counterexample}: "
                f"{eq.a_value} vs {eq.b_value}")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_index_expressions(data) -> None:
    _check(data.draw(int_exprs(max_depth=4)))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_padded_index_expressions(data) -> None:
    _check(data.draw(padded_index_exprs(max_depth=3)))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_fixed_width_expressions(data) -> None:
    _check(data.draw(fixed_width_exprs(max_depth=3)))


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_every_group_including_the_opt_in_ones(data) -> None:
    _check(data.draw(padded_index_exprs(max_depth=3)), rulesets=["all"])
