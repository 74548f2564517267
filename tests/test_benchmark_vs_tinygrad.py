"""``benchmarks/vs_tinygrad.py``'s expression table on a few corpus lines: every
contender's output costed, equivalent to its input, and the table's totals add up."""

from __future__ import annotations

from typing import Any

import pytest
import tinygrad  # noqa: F401  (the tinygrad extra, in dev: a missing one fails, not skips)


def test_expression_rows_and_table(corpus_lines: list[dict[str, Any]]) -> None:
    from benchmarks import vs_tinygrad

    rows = [r for r in corpus_lines if r["source"].startswith("kernel")][:3] + [
        r for r in corpus_lines if r["source"] == "tinygrad-unit-like"][:2]
    seen: list[int] = []
    res = vs_tinygrad.run_exprs(rows, check=True, progress=seen.append)
    assert seen == [1, 2, 3, 4, 5]
    for row, r in zip(rows, res, strict=True):
        assert (r.id, r.cost_in, r.divmod_in) == (row["id"], row["cost_in"], row["divmod_in"])
        assert set(r.cost) == set(r.secs) == set(vs_tinygrad.CONTENDERS)
        assert all(r.equivalent.values()) and all(s > 0 for s in r.secs.values())
        assert r.cost["egraph"] <= r.cost_in and r.cost["baseline"] <= r.cost_in
    table = vs_tinygrad.expr_table("some", res)
    egraph = next(ln for ln in table.splitlines() if ln.split()[:1] == ["egraph"])
    assert int(egraph.split()[1]) == sum(r.cost["egraph"] for r in res)
    assert "cheaper:" in table and "cost by source" in table


def test_compare_per_call_report(corpus_lines: list[dict[str, Any]]) -> None:
    """``benchmarks/compare.py --per-call``'s table: one row per contender with its
    totals, the per-call times, and the e-graph's time by phase."""
    from benchmarks import compare, vs_tinygrad

    rows = corpus_lines[:4]
    res = vs_tinygrad.run_exprs(rows)
    assert all(r.phases.get("total", 0) > 0 for r in res)
    table = compare.per_call_report(res)
    lines = {ln.split()[0]: ln.split() for ln in table.splitlines()[1:] if ln.strip()}
    for who in vs_tinygrad.CONTENDERS:
        row = lines[who]
        assert int(row[1]) == sum(r.cost[who] for r in res)
        assert int(row[2]) == sum(r.divmod[who] for r in res)
        median, p90, top, total = map(float, row[3:7])
        assert 0 < median <= p90 <= top and total == pytest.approx(
            sum(r.secs[who] for r in res), abs=0.01)
    assert "seconds by phase" in table and "outside the phases" in table
    assert compare.per_call_report([]) == "no expressions"
