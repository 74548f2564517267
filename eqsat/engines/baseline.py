"""The ordered pattern-matcher baseline: ``graph_rewrite(graph, symbolic())``.

This is the tinygrad/Morok way of simplifying: the rule groups of docs/rules.md in a
fixed order, first match wins, bottom-up to a fixed point. ``optimize()``
calls :func:`optimize_baseline` for ``engine="baseline"``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from eqsat.ir.pattern import RewriteLimitError, RewriteStoppedError, graph_rewrite
from eqsat.ir.uop import UOp

__all__ = ["optimize_baseline"]


def optimize_baseline(graph: UOp, rulesets: list[str] | str | None = None,
                      limit: int = 1000, seconds: float | None = None
                      ) -> tuple[UOp, dict[str, Any]]:
    """Rewrite ``graph`` with the ordered matcher of ``rulesets`` (default ``symbolic``).

    ``rulesets`` names baseline rule sets (``rules.BASELINE_RULESETS``:
    ``"symbolic"``, ``"symbolic_simple"`` or group names; composed in the
    order of docs/rules.md). Returns ``(graph', stats)``; stats has ``engine``,
    ``iterations`` and ``rewrites`` (rules applied), ``stop_reason``
    (``"fixpoint"``; ``"rewrite_limit"`` when one node was rewritten more than
    ``limit`` times, a rule cycle: the input is returned, ``error`` names the
    rules; ``"time"`` when the rewrite ran past ``seconds``, a hard limit checked
    between rule applications: the input is returned), ``time`` (seconds) and
    ``matches`` (rule name -> count).
    """
    import rules

    if not isinstance(graph, UOp):
        raise TypeError(f"optimize_baseline expects a UOp graph, got {type(graph).__name__}")
    pm = rules.matcher(rulesets)
    # this call's matches counted apart (sorted by rule name, as the e-graph's), then
    # added to the matcher's running counts
    total, pm.matches = pm.matches, defaultdict(int)
    stats: dict[str, Any] = {"engine": "baseline", "rulesets": pm.name}
    t0 = time.perf_counter()
    stop = None
    if seconds is not None:
        deadline = t0 + seconds

        def stop() -> str | None:
            return "time" if time.perf_counter() > deadline else None
    try:
        out = graph_rewrite(graph, pm, limit=limit, stop=stop)
        stats["stop_reason"] = "fixpoint"
    except RewriteLimitError as e:
        out = graph
        stats["stop_reason"] = "rewrite_limit"
        stats["error"] = str(e)
    except RewriteStoppedError as e:
        out = graph
        stats["stop_reason"] = e.reason
    finally:
        mine, pm.matches = pm.matches, total
        for k, v in mine.items():
            total[k] += v
    elapsed = time.perf_counter() - t0
    matches = dict(sorted(mine.items()))
    n = sum(matches.values())
    stats.update(iterations=n, rewrites=n, time={"rewrite": elapsed}, matches=matches)
    return out, stats
