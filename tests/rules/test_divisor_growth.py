"""Nested divisions whose merged divisors could multiply without end (docs/rules.md).

A rule that merges two constant divisors into their product feeds itself where the
merged quotient equals the inner one: the class then holds its own nested form, and
every step multiplies the divisor again (``floordiv_offset_floordiv``,
``mod_quotient_split``; their guards keep the merged or inner divisor within the
dividend's span); so does a class written over a part that holds the class itself.
One line per case: the input, and the output the e-graph must reach at no more cost,
run to its end (``stall=0``: a run that still grows stops on ``iterations`` or
``enodes``). Then a hypothesis property over random chains.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eqsat
from eqsat import parse, to_sexpr
from eqsat.api import Budget
from eqsat.ir.equiv import check_equivalent
from extraction import reference_cost

#: a run that ends by its work
ENDED = {"saturated", "stalled", "optimal"}
RUN_OUT = Budget(stall=0)

# input -> the output at its cost (the first: about 2,300 e-nodes stopped on the budget,
# floordiv_offset_floordiv matched ~15,000 times, before the span guard)
ROWS = [
    ("(floordiv (add (floordiv (mul (var a 3 8) -2) 8) -2) 3)",
     "(where (lt 4 (var a 3 8)) -2 -1)"),
    ("(floordiv (add (floordiv (var a -16 -6) 8) -2) 3)",
     "(where (lt (var a -16 -6) -8) -2 -1)"),
    ("(add (floordiv (add (floordiv (var a -9 -5) 8) -1) 2) -4)",
     "(where (lt (var a -9 -5) -8) -6 -5)"),
    ("(floordiv (floordiv (add (floordiv (mul (var a -10 -4) 2) 2) -5) 5) 2)",
     "(where (lt (var a -10 -4) -5) -2 -1)"),
    ("(add (floordiv (mul (floormod (add (floordiv (add (floordiv (var b -11 -7) 4) -6) 4) 1) "
     "-4) 4) 4) -2)",
     "(where (lt (var b -11 -7) -8) -4 -3)"),
    ("(add (floordiv (add (floordiv (mul (var a -13 -10) -3) 9) -6) 2) -1)",
     "(where (lt -12 (var a -13 -10)) -3 -2)"),
    ("(add (floordiv (add (idiv (var a -15 -12) 5) -2) 2) 5)",
     "(where (lt (var a -15 -12) -14) 2 3)"),
    ("(floordiv (floordiv (var a -8 7) 8) 3)",
     "(where (lt (var a -8 7) 0) -1 0)"),
    # mod_quotient_split: a // 16 equals (a + 16) // 32, (a + 48) // 64, ... on [11, 21]
    ("(mod (add (idiv (var a 11 21) 16) 1) -2)",
     "(where (lt (var a 11 21) 16) 1 0)"),
    ("(floormod (add (floordiv (var a 6 14) 5) 6) 4)",
     "(where (lt (var a 6 14) 10) 3 0)"),
    ("(mod (add (idiv (var a -16 -14) -3) 5) 2)",
     "(where (lt -15 (var a -16 -14)) 1 0)"),
    # the computed div/mod rules: a class N = (N + 3) % 3 (N in [0, 2]) written over its
    # own part, (N + 6) % 3, (N + 9) % 3, ... (linear.py's _class_parts leaves it out)
    ("(mod (add (idiv (var a -7 -2) 3) -3) 3)", "(idiv (var a -7 -2) 3)"),
    ("(mod (add (idiv (var a -11 -4) 3) -4) 4)", "(idiv (var a -11 -4) 3)"),
]


@pytest.mark.parametrize("text,want", ROWS)
def test_nested_division_ends(text: str, want: str) -> None:
    g = parse(text)
    r = eqsat.optimize(g, cost_model="reference", budget=RUN_OUT)
    assert r.stats["stop_reason"] in ENDED, (r.stats["stop_reason"], r.stats["enodes"])
    assert reference_cost(r.graph) <= reference_cost(parse(want)), to_sexpr(r.graph)
    assert check_equivalent(g, r.graph)


_OPS = ("floordiv", "floormod", "idiv", "mod")


@st.composite
def chains(draw: st.DrawFn) -> str:
    """Two or three divisions over a narrow range (a variable, or it times a
    constant), each level with a constant offset or factor."""
    lo = draw(st.integers(-24, 12))
    x = f"(var a {lo} {lo + draw(st.integers(1, 12))})"
    k = draw(st.sampled_from((1, -4, -3, -2, 2, 3, 4)))
    if k != 1:
        x = f"(mul {x} {k})"
    for level in range(draw(st.integers(2, 3))):
        op = draw(st.sampled_from(_OPS if level else ("floordiv", "idiv")))
        x = f"({op} {x} {draw(st.sampled_from((2, 3, 4, 5, 8, 9, 16, -2, -3)))})"
        c = draw(st.integers(-6, 6))
        if c:
            x = f"(add {x} {c})"
        f = draw(st.sampled_from((1, 1, 1, -2, 2, 3)))
        if f != 1:
            x = f"(mul {x} {f})"
    return x


@settings(max_examples=60, deadline=None)
@given(chains())
def test_nested_chains_end_by_their_work(text: str) -> None:
    """A random chain's run saturates (no rule feeds itself without end), its output is
    equivalent and costs no more than the ordered matcher's."""
    g = parse(text)
    r = eqsat.optimize(g, cost_model="reference", budget=Budget(stall=0, iterations=40))
    assert r.stats["stop_reason"] in ENDED, (r.stats["stop_reason"], r.stats["enodes"])
    assert check_equivalent(g, r.graph)
    b = eqsat.optimize(g, engine="baseline", cost_model="reference")
    assert r.cost <= b.cost, (to_sexpr(r.graph), to_sexpr(b.graph))
