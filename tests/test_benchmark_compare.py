"""``benchmarks/compare.py``'s timing rounds: each round optimizes freshly parsed
graphs with nothing of an earlier round alive (cold), or, with ``warm``, the same
live graphs; both report the first round's outputs."""

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
    from benchmarks import compare

    rows = corpus_lines[:6]
    parsed: list[weakref.ref] = []
    alive_at_second: list[bool] = []  # at the second round's first parse
    real = compare.parse

    def spy(text: str) -> UOp:
        if len(parsed) == len(rows):
            alive_at_second.append(any(r() is not None for r in parsed))
        u = real(text)
        parsed.append(weakref.ref(u))
        return u

    monkeypatch.setattr(compare, "parse", spy)
    cases, _, rounds = compare.run(rows, batch=3, repeat=2, warm=warm)
    assert len(rounds) == 2 and all(r["cpu_base"] > 0 and r["cpu_eg"] > 0 for r in rounds)
    if warm:
        assert len(parsed) == len(rows)  # parsed once, the same graphs every round
    else:  # parsed again for the second round, the first round's graphs released
        assert len(parsed) >= 2 * len(rows) and alive_at_second == [False]
    for c in cases:  # the outputs are graphs again, the cheaper of output and input
        assert isinstance(c.out_base, UOp) and isinstance(c.out_eg, UOp)
        assert c.cost_eg <= c.cost_base


def test_cold_and_warm_rounds_report_the_same_outputs(corpus_lines: list[dict[str, Any]]
                                                      ) -> None:
    from benchmarks import compare

    rows = corpus_lines[10:16]
    outs = {}
    for warm in (False, True):
        cases, _, _ = compare.run(rows, batch=3, repeat=2, warm=warm)
        outs[warm] = [(to_sexpr(c.out_base), to_sexpr(c.out_eg)) for c in cases]
    assert outs[False] == outs[True]
