"""The e-graph optimizer: UOp graphs in egglog, rules as guarded rewrites, extraction.

``optimize_egraph(graph, rulesets=None, cost_model=None, budget=None) -> (UOp, stats)``
is what ``eqsat.optimize(engine="egraph")`` calls; ``optimize_many`` optimizes
several graphs in one e-graph (shared subgraphs inserted once). The modules are
described in docs/architecture.md ("The e-graph engine").
"""

from __future__ import annotations

import time
from typing import Any

from eqsat.engines.egraph.analyses import UnsoundError
from eqsat.engines.egraph.engine import Session, clear_sessions, session_for
from eqsat.engines.egraph.results import (
    RESULTS,
    cache_key,
    clear_result_cache,
    set_result_cache_size,
)
from eqsat.engines.egraph.rulesets import default_groups, egraph_groups, resolve
from eqsat.engines.egraph.schedules import Limits
from eqsat.ir.uop import UOp
from extraction import get_cost_model

__all__ = ["optimize_egraph", "optimize_many", "Session", "session_for",
           "clear_sessions", "clear_result_cache", "set_result_cache_size", "UnsoundError",
           "egraph_groups", "resolve", "default_groups", "Limits"]


def optimize_many(graphs: list[UOp], rulesets: list[str] | None = None, cost_model: Any = None,
                  budget: Any = None, keep_egraph: bool = False
                  ) -> tuple[list[UOp], dict[str, Any]]:
    """Optimize several graphs in one e-graph; ``(outputs, stats)``. The time limit
    counts from the call, including the one-time build of this thread's warm
    session (``stats["time"]["setup"]``; ``session_for(None)`` builds it ahead).
    ``keep_egraph``: ``stats["egraph"]`` is then the run's e-graph
    (:class:`~eqsat.engines.egraph.record.EGraphRecord`)."""
    for g in graphs:
        if not isinstance(g, UOp):
            raise TypeError(f"optimize_egraph expects UOp graphs, got {type(g).__name__}")
    t0 = time.perf_counter()  # the budget includes building the session (first call)
    model = get_cost_model(cost_model)
    session = session_for(rulesets)
    setup = time.perf_counter() - t0
    outs, stats = session.run(list(graphs), model, Limits.of(budget), t0=t0,
                              keep_egraph=keep_egraph)
    stats.setdefault("time", {})["setup"] = setup
    return outs, stats


def optimize_egraph(graph: UOp, rulesets: list[str] | None = None, cost_model: Any = None,
                    budget: Any = None, keep_egraph: bool = False) -> tuple[UOp, dict[str, Any]]:
    """Optimize one graph by equality saturation; ``(graph', stats)``.

    ``stats``: ``engine``, ``iterations``, ``enodes``, ``enodes_budget`` (the e-node
    budget the run had: ``Limits.for_roots``), ``classes``, ``stop_reason``
    (a :class:`~eqsat.engines.egraph.schedules.StopReason` value), ``seed`` (the costs
    of the input, the baseline's rewrite, the start (their minimum) and the result, and
    ``gain``, what the e-graph found beyond its start), ``time`` (seconds per phase),
    ``matches`` (rule name -> unions), ``extraction``, ``per_iteration`` ((e-nodes, seconds)
    per iteration), ``emitted`` (rows each computed pass recorded), ``analysis_capped``;
    ``egraph`` (an :class:`~eqsat.engines.egraph.record.EGraphRecord`) with ``keep_egraph``;
    ``parts`` for a kernel run in parts (:mod:`~eqsat.engines.egraph.parts`: each part's
    size, iterations, e-nodes, stop and cost; the other figures are the whole's).

    A call the result cache knows (:mod:`~eqsat.engines.egraph.results`: the same printed
    graph, budget, rule sets and shipped cost model, from a run no clock cut short) is
    answered from it; ``stats["time"]["cached"]`` then says so.
    """
    if keep_egraph:
        outs, stats = optimize_many([graph], rulesets, cost_model, budget, keep_egraph)
        return outs[0], stats
    t0 = time.perf_counter()
    if not isinstance(graph, UOp):
        raise TypeError(f"optimize_egraph expects UOp graphs, got {type(graph).__name__}")
    model = get_cost_model(cost_model)
    limits = Limits.of(budget)  # (resolved once: optimize_many takes it as it is)
    key = cache_key(graph, limits, rulesets, model)
    hit = RESULTS.get(key)
    if hit is not None:
        out, stats = hit
        stats["time"] = {"cached": time.perf_counter() - t0}
        return out, stats
    outs, stats = optimize_many([graph], rulesets, model, limits)
    RESULTS.put(key, outs[0], stats)
    return outs[0], stats
