"""The e-matching pass's per-pass memo of a class's options under a source pattern gives
what scanning the class's e-nodes again gives.

``_Matcher.options(c, q)`` (the UOps class ``c``'s e-nodes of ``q``'s ops stand for, the
first ``MAX_MATCHES``) is found once per pass and class and pattern: a class under many
e-nodes (a constant's, which collects the divisions that come to it) is scanned once, not
once per e-node above it. On real runs every answer equals a fresh scan, and answers are
asked again (the memo is used)."""

from __future__ import annotations

from typing import Any

import pytest

import eqsat.engines.egraph.computed.ematch as ematch
from eqsat.api import Budget
from eqsat.engines.egraph import optimize_many
from eqsat.ir.dtype import dtypes
from eqsat.ir.uop import UOp

#: several passes even on a loaded machine (the checks slow every pass down)
_BUDGET = Budget(iterations=4, seconds=30.0, stall=0)


def _exprs() -> list[UOp]:
    """Many divisions that come to 0 (one class under many e-nodes) beside sums."""
    xs = [UOp.var(f"x{i}", 0, 9) for i in range(6)]
    r = UOp.range(UOp.const(dtypes.index, 16), 0)
    zeros = [(x // 10) + (x + r) // 32 for x in xs]
    return zeros + [(xs[0] * 4 + r) // 4 + xs[1] // 10, (xs[2] + r * 8) % 8 * (xs[3] // 10)]


def _fresh(m: Any, c: int, q: Any) -> list[UOp]:
    """The options as the scan without the memo finds them."""
    out: list[UOp] = []
    for i in m.snap.classes.get(c, ()):
        n = m.snap.nodes[i]
        if n.subsumed or n.op is None or n.op not in q.ops:
            continue
        out.extend(m.node_uops(i, q))
        if len(out) >= ematch.MAX_MATCHES:
            break
    return out


@pytest.mark.parametrize("model", [None, "reference"])
def test_options_memo_equals_a_fresh_scan_on_real_runs(monkeypatch: pytest.MonkeyPatch,
                                                       model: str | None) -> None:
    asked: dict[tuple[int, int, int], int] = {}
    plain = ematch._Matcher.options

    def checked(self: Any, c: int, q: Any) -> list[UOp]:
        got = plain(self, c, q)
        assert got == _fresh(self, c, q)
        key = (id(self), c, id(q))
        asked[key] = asked.get(key, 0) + 1
        return got

    monkeypatch.setattr(ematch._Matcher, "options", checked)
    outs, stats = optimize_many(_exprs(), cost_model=model, budget=_BUDGET)
    assert len(outs) == len(_exprs())
    assert asked, stats.get("stop_reason")
    assert max(asked.values()) > 1  # one class's options served several e-nodes
