"""Terms deeper than Python's recursion limit through the e-graph: a sum of more
terms than the limit's depth, balanced or as one chain, is optimized (no
RecursionError), equivalent to its input and no costlier than the baseline's result.

The computed pass reads a class with more than ``MAX_FORM_ATOMS`` atoms as an atom (a
rebuilt sum is a chain as deep as its atoms), and the extraction cuts content keys
deeper than ``KEY_DEPTH`` to digests."""

from __future__ import annotations

import pytest

from eqsat.api import optimize
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import parse


def _terms(n: int) -> list[str]:
    return [f"(idiv (add (range 90 4) {i + 1}) {2 + i * 7 % 11})" for i in range(n)]


def _balanced(n: int) -> str:
    xs = _terms(n)
    while len(xs) > 1:
        xs = [f"(add {xs[j]} {xs[j + 1]})" if j + 1 < len(xs) else xs[j]
              for j in range(0, len(xs), 2)]
    return f"(floormod {xs[0]} 65536)"


def _chain(n: int) -> str:
    xs = _terms(n)
    s = xs[0]
    for t in xs[1:]:
        s = f"(add {s} {t})"
    return f"(floormod {s} 65536)"


@pytest.mark.parametrize("text", [_balanced(1300), _chain(1200)], ids=["balanced", "chain"])
def test_a_sum_deeper_than_the_recursion_limit(text: str) -> None:
    g = parse(text)
    base = optimize(g, engine="baseline", cost_model="reference")
    r = optimize(g, cost_model="reference")
    assert r.cost <= min(base.cost, r.input_cost), (r.cost, base.cost, r.input_cost)
    assert check_equivalent(g, r.graph).equivalent
