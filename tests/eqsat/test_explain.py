"""``Result.explain()``: the rules that fired, the stop reason, the result's cost op by
op; ``extraction.cost_by_op`` under both cost models."""

from __future__ import annotations

import pytest

import eqsat
from eqsat.api import Explanation
from eqsat.ir.sexpr import parse
from extraction import cost_by_op, get_cost_model, reference_cost

TILED = """%i = (add (add (mul (range 3 4) 8) (mul (range 4 2) 4)) (range 2 4))
(add (mul (idiv %i 8) 8) (mod %i 8))"""


@pytest.mark.parametrize("model", ["reference", "default"])
def test_cost_by_op_adds_up_to_the_graph_cost(model: str) -> None:
    g = parse(TILED)
    by = cost_by_op(g, model)
    m = get_cost_model(model)
    assert sum(c for _n, c in by.values()) == pytest.approx(m.graph_cost(g))
    assert sum(n for n, _c in by.values()) == len(g.toposort())
    assert list(by) == sorted(by, key=lambda k: (-by[k][1], k))  # dearest first
    if model == "reference":
        assert by["IDIV"] == (1, 25.0) and by["MOD"] == (1, 25.0) and by["MUL"] == (3, 12.0)
        assert by["RANGE"] == (3, 0.0) and sum(c for _n, c in by.values()) == reference_cost(g)


@pytest.mark.parametrize("engine", ["egraph", "baseline"])
def test_explain_reports_the_run(engine: str) -> None:
    g = parse(TILED)
    res = eqsat.optimize(g, engine=engine, cost_model="reference")
    ex = res.explain()
    assert isinstance(ex, Explanation)
    assert ex.engine == engine and ex.stop_reason == res.stats["stop_reason"]
    assert ex.rules == res.stats["matches"] and ex.rules
    assert list(ex.rules.values()) == sorted(ex.rules.values(), reverse=True)
    assert ex.cost == res.cost and ex.input_cost == res.input_cost == 65
    assert sum(c for _n, c in ex.by_op.values()) == res.cost
    assert ex.by_op == cost_by_op(res.graph, "reference") and ex.cost_model == "ReferenceCost"
    text = str(ex)
    assert text.splitlines()[0] == (f"engine {engine}: stopped {ex.stop_reason} after "
                                    f"{ex.iterations} iterations; cost 65 -> "
                                    f"{int(res.cost)} (ReferenceCost)")
    for rule, n in ex.rules.items():
        assert any(line.split() == [rule, str(n)] for line in text.splitlines())
    assert "cost of the result by op" in text


def test_explain_under_the_default_model() -> None:
    res = eqsat.optimize(parse(TILED))
    ex = res.explain()
    assert ex.cost_model == "CpuCost"
    assert sum(c for _n, c in ex.by_op.values()) == pytest.approx(res.cost)
