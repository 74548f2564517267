"""``eqsat.compare`` (what ``eqsat compare`` and ``benchmarks/compare.py`` run): the
timing rounds (each optimizes freshly parsed graphs with nothing of an earlier round
alive, or, with ``warm``, the same live graphs; both report the first round's
outputs), the summary and its table."""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from eqsat.ir.sexpr import to_sexpr
from eqsat.ir.uop import UOp


@pytest.mark.parametrize("warm", [False, True])
def test_rounds_release_or_keep_the_graphs(corpus_lines: list[dict[str, Any]],
                                           monkeypatch: pytest.MonkeyPatch,
                                           warm: bool) -> None:
    from eqsat import compare

    rows = corpus_lines[:6]
    parsed: list[weakref.ref] = []
    alive_at_second: list[bool] = []  # at the second round's first parse
    real = compare.parse

    exprs = {r["expr"] for r in rows}

    def spy(text: str) -> UOp:
        if text not in exprs:  # tinygrad's outputs, read once for their costs
            return real(text)
        if len(parsed) == len(rows):
            alive_at_second.append(any(r() is not None for r in parsed))
        u = real(text)
        parsed.append(weakref.ref(u))
        return u

    monkeypatch.setattr(compare, "parse", spy)
    cases, rounds = compare.run(rows, batch=3, repeat=2, warm=warm)
    assert len(rounds) == 2
    assert all(r["cpu"]["baseline"] > 0 and r["cpu"]["egraph"] > 0 for r in rounds)
    if warm:
        assert len(parsed) == len(rows)  # parsed once, the same graphs every round
    else:  # parsed again for the second round, the first round's graphs released
        assert len(parsed) >= 2 * len(rows) and alive_at_second == [False]
    for c in cases:  # the outputs are graphs again, the cheaper of output and input
        assert isinstance(c.out["baseline"], UOp) and isinstance(c.out["egraph"], UOp)
        assert c.cost["egraph"] <= c.cost["baseline"]


def test_cold_and_warm_rounds_report_the_same_outputs(corpus_lines: list[dict[str, Any]]
                                                      ) -> None:
    from eqsat import compare

    rows = corpus_lines[10:16]
    outs = {}
    for warm in (False, True):
        cases, _ = compare.run(rows, batch=3, repeat=2, warm=warm)
        outs[warm] = [(to_sexpr(c.out["baseline"]), to_sexpr(c.out["egraph"])) for c in cases]
    assert outs[False] == outs[True]
