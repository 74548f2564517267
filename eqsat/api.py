"""The public entry point: ``eqsat.optimize(graph, ...) -> Result``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.uop import UOp

__all__ = ["Budget", "Result", "optimize", "optimize_many", "ENGINES"]


@dataclass(frozen=True)
class Budget:
    """Limits of one e-graph run; whichever is reached first stops it
    (``stats["stop_reason"]`` names it).

    ``iterations``: rewrite rounds. ``enodes``: e-graph size; the rules whose matches
    multiply are counted before they run and left out when what they would make does
    not fit half the room left, and the first step that takes the e-graph past this
    number ends the run (its result: the e-graph as it was before that step).
    ``seconds``: wall time of the whole optimize call, which returns within
    1.2 times it (plus, on a thread's first call, the one-time build of its warm
    session: ``eqsat.session_for(None)`` builds it ahead). ``memory``: bytes the run may
    add to the process's resident set, checked between the e-graph's steps (None: 6 GiB,
    a quarter of a 24 GB machine running two workers). ``stall``: stop early
    (``"stalled"``) after that many rounds in a row that found no cheaper term for the
    roots while the e-graph grew by at most 10% and the last round's computed rewrites
    added at most 2% more (0: run to saturation or a limit).

    A run stopped by saturation, a stall, ``iterations`` or ``enodes`` gives the same
    result on every run; one stopped by ``time`` or ``memory`` may not.
    ``optimize_many`` gives its batch n times the e-node and time budgets (the memory
    budget is the run's).
    """

    iterations: int = 12
    enodes: int = 20_000
    seconds: float = 2.0
    stall: int = 1
    memory: int | None = None

    def __post_init__(self) -> None:
        if self.iterations < 0 or self.enodes < 1 or not self.seconds > 0 or self.stall < 0 \
                or (self.memory is not None and self.memory < 1):
            raise ValueError(f"invalid budget {self!r}: iterations >= 0, enodes >= 1, "
                             "seconds > 0, stall >= 0, memory >= 1 (or None) required")


@dataclass
class Result:
    """What optimize returns.

    ``graph`` is the optimized graph, ``cost``/``input_cost`` its cost and the
    input's under the chosen cost model, ``stats`` the run's figures:
    ``engine``, ``iterations``, ``enodes``, ``stop_reason``, ``time`` (seconds
    per phase) and ``matches`` (rule name -> count).
    """

    graph: UOp
    cost: float
    input_cost: float
    stats: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"Result(cost={self.cost}, input_cost={self.input_cost}, "
                f"stop_reason={self.stats.get('stop_reason')!r}, graph={self.graph!r})")


def _run_baseline(graph: UOp, rulesets, cost_model, budget) -> tuple[UOp, dict[str, Any]]:
    from eqsat.engines.baseline import optimize_baseline

    return optimize_baseline(graph, rulesets=rulesets)


def _run_egraph(graph: UOp, rulesets, cost_model, budget) -> tuple[UOp, dict[str, Any]]:
    from eqsat.engines.egraph import optimize_egraph

    return optimize_egraph(graph, rulesets=rulesets, cost_model=cost_model, budget=budget)


ENGINES = {"baseline": _run_baseline, "egraph": _run_egraph}


def optimize(graph: UOp, engine: str = "egraph", rulesets: list[str] | None = None,
             cost_model: Any = None, budget: Budget | None = None) -> Result:
    """Optimize ``graph`` with the e-graph engine (default) or the ordered baseline.

    ``rulesets`` names rule sets (``eqsat rules`` lists them; None = the
    engine's default); ``cost_model`` is a :class:`extraction.CostModel` or one
    of ``"default"``/``"reference"``; ``budget`` bounds the e-graph run.
    The result is never costlier than the input under the chosen model.
    """
    from extraction import get_cost_model

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    model = get_cost_model(cost_model)
    budget = budget or Budget()
    t0 = time.perf_counter()
    out, stats = ENGINES[engine](graph, rulesets, model, budget)
    stats.setdefault("time", {})["total"] = time.perf_counter() - t0
    stats.setdefault("engine", engine)
    in_cost, out_cost = model.graph_cost(graph), model.graph_cost(out)
    if out_cost > in_cost:  # never return something costlier than the input
        out, out_cost = graph, in_cost
        stats["fallback"] = "input was cheaper"
    return Result(out, out_cost, in_cost, stats)


def optimize_many(graphs: list[UOp], engine: str = "egraph", rulesets: list[str] | None = None,
                  cost_model: Any = None, budget: Budget | None = None) -> list[Result]:
    """Optimize several graphs; one :class:`Result` each, in order.

    The e-graph engine puts all of them in one e-graph (shared subgraphs once, one
    warm-up of the e-graph for the lot: several times faster per graph than one
    ``optimize`` call each); ``budget`` is per graph (the batch gets the sum of the
    e-node and time budgets). Each result is never costlier than its input. The
    shared ``stats`` of a batch are the batch's, with ``batch`` = its size.
    """
    from extraction import get_cost_model

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    graphs = list(graphs)
    for i, g in enumerate(graphs):
        if not isinstance(g, UOp):
            raise TypeError(f"optimize_many: graph {i} is a {type(g).__name__}, not a UOp")
    if engine != "egraph" or len(graphs) <= 1:
        return [optimize(g, engine, rulesets, cost_model, budget) for g in graphs]
    from eqsat.engines.egraph import optimize_many as egraph_many

    model = get_cost_model(cost_model)
    b = budget or Budget()
    n = len(graphs)
    t0 = time.perf_counter()
    outs, stats = egraph_many(graphs, rulesets=rulesets, cost_model=model, budget=Budget(
        iterations=b.iterations, enodes=b.enodes * n, seconds=b.seconds * n, stall=b.stall,
        memory=b.memory))
    stats.setdefault("time", {})["total"] = time.perf_counter() - t0
    stats["batch"] = n
    results = []
    for g, out in zip(graphs, outs, strict=True):
        st = dict(stats)
        in_cost, out_cost = model.graph_cost(g), model.graph_cost(out)
        if out_cost > in_cost:
            out, out_cost = g, in_cost
            st["fallback"] = "input was cheaper"
        results.append(Result(out, out_cost, in_cost, st))
    return results
