"""The e-graph against the ordered baseline on every corpus line.

For each line: the e-graph's output costs no more than the baseline's, under the
default cost model and under the reference cost (each engine run with that
model), and it is equivalent to the input. The e-graph runs one ``eqsat.optimize``
call a line with the default budget, as ``eqsat batch`` does; the totals of the
project's targets (docs/perf.md) are checked too.
"""

from __future__ import annotations

from typing import Any

import pytest

from eqsat.api import Budget, optimize
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import parse
from extraction import divmod_count, get_cost_model, reference_cost
from tests.conftest import load_corpus

MODELS = ("default", "reference")


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    """line id -> {input, baseline output, e-graph output and costs per model}."""
    rows = load_corpus()
    graphs = [parse(r["expr"]) for r in rows]
    out: dict[str, dict[str, Any]] = {r["id"]: {"in": g} for r, g in zip(rows, graphs,
                                                                          strict=True)}
    for r, g in zip(rows, graphs, strict=True):
        out[r["id"]]["base"] = optimize(g, engine="baseline").graph
    for name in MODELS:
        cm = get_cost_model(name)
        for r, g in zip(rows, graphs, strict=True):
            o = optimize(g, cost_model=cm, budget=Budget()).graph
            d = out[r["id"]]
            d[name] = o
            d[f"{name}:eg"] = cm.graph_cost(o)
            d[f"{name}:base"] = cm.graph_cost(d["base"])
            d[f"{name}:in"] = cm.graph_cost(g)
    return out


@pytest.mark.parametrize("line", [r["id"] for r in load_corpus()])  # read at collection
def test_egraph_no_costlier_than_baseline_and_equivalent(results, line: str) -> None:
    d = results[line]
    for name in MODELS:
        assert d[f"{name}:eg"] <= d[f"{name}:base"] + 1e-9, (
            f"{line} ({name} model): e-graph {d[f'{name}:eg']} > baseline {d[f'{name}:base']}")
        assert d[f"{name}:eg"] <= d[f"{name}:in"] + 1e-9
    eq = check_equivalent(d["in"], d["reference"], samples=3000)
    assert eq, f"{line}: e-graph output differs from the input: {eq.reason} at {eq.counterexample}"
    if d["default"] is not d["reference"]:
        eq = check_equivalent(d["in"], d["default"], samples=3000)
        assert eq, f"{line} (default model): {eq.reason} at {eq.counterexample}"


def test_corpus_targets(results) -> None:
    rows = load_corpus()
    eg = sum(reference_cost(results[r["id"]]["reference"]) for r in rows)
    dm = sum(divmod_count(results[r["id"]]["reference"]) for r in rows)
    tg, tg_dm = sum(r["cost_tg"] for r in rows), sum(r["divmod_tg"] for r in rows)
    assert eg <= 0.85 * tg, f"total reference cost {eg} > 0.85 x tinygrad's {tg}"
    assert dm <= 0.85 * tg_dm, f"idiv+mod {dm} > 0.85 x tinygrad's {tg_dm}"
