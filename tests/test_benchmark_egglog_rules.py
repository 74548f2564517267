"""``benchmarks/egglog_rules.py``: egglog's commands one at a time give the outputs the
engine gives, and the tally reads each kind of command and each rule's joins."""

from __future__ import annotations

from typing import Any

import pytest

_SETS = {"step_0": "native_p1", "step_1": "native_count_p4", "step_2": "analysis_core_Add",
         "step_3": "reset_Add", "step_4": "native_fixed_mult_p6", "step_5": "reset_handles"}


@pytest.mark.parametrize("command, kind", [
    ("(run step_0 1)", "native"),
    ("(run step_4 1)", "native"),
    ("(run step_1 1)", "count"),
    ("(run step_2 512)", "analysis"),
    ("(run step_3 1)", "reset"),
    ("(run step_5 1)", "reset"),
    ("(run step_9 1)", "step"),
    ("(run analysis_none 512)", "analysis_none"),
    ("(run insert_c4 1)", "insert"),
    ("(run insert 1)", "insert"),
    ("(run reset_subsumed 1)", "reset_subsumed"),
    ('(input RNode "rows.tsv")', "input"),
    ("(print-size)", "print-size"),
    ("(unstable-combined-ruleset step_0 native_p1)", "unstable-combined-ruleset"),
])
def test_kind(command: str, kind: str) -> None:
    from benchmarks.egglog_rules import _kind

    assert _kind(command, _SETS) == kind


def test_fit_of_exact_line() -> None:
    from benchmarks.egglog_rules import _fit

    assert _fit([(1e-4 + j * 1e-5, j) for j in (10, 20, 40)]) == \
        "native runs: 10.0 us a join + 100 us (r = 1.00, 3 runs)"


def test_timed_calls_give_the_engine_outputs(corpus_lines: list[dict[str, Any]]) -> None:
    import eqsat
    from benchmarks.egglog_rules import Tally, measure, report
    from eqsat.ir.sexpr import parse, to_sexpr

    graphs = [parse(r["expr"]) for r in corpus_lines[:4]]
    tally = Tally()
    _, outs = measure(graphs, tally)
    plain = [eqsat.optimize(g, cost_model="reference").graph for g in graphs]
    assert [to_sexpr(o) for o in outs] == [to_sexpr(o) for o in plain]
    assert tally.kinds["native"][2] > 0 and tally.kinds["analysis"][0] > 0
    assert sum(j for j, _ in tally.rules.values()) == \
        sum(k[2] for k in tally.kinds.values())
    assert not tally.on
    text = report(tally, 1.0, 5)
    assert text.splitlines()[0].startswith("calls 1.00 s, egglog's commands ")
    assert "rule families with the most joins" in text
