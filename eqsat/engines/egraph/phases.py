"""What a run does after its loop: :data:`PHASES`, executed in order.

Each phase is a small function of the :class:`~eqsat.engines.egraph.run.Run`:

- ``check``: the tripwire over the run's e-graph (once a run: an empty interval
  stays empty), unless the ``last`` step runs it;
- ``last``: the last computed pass's rows brought in (analysis only) and the e-graph
  read again, when the last snapshot does not hold them;
- ``extract``: the roots' best terms under the cost model (tree extraction, and the
  DAG-aware extractor where the tree choice shares a class), a root whose term came
  out costlier than its input extracted again with its subsumed e-nodes in;
- ``stats``: the run's figures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from eqsat.engines.egraph.extracting import extract_roots
from eqsat.engines.egraph.run import Run
from eqsat.engines.egraph.schedules import Clock, StopReason, rss_bytes
from eqsat.ir.uop import UOp

__all__ = ["PHASES", "run_phases", "no_run_stats"]

log = logging.getLogger(__name__)


def _no_snapshot(run: Run) -> bool:
    """Whether the run stopped for memory before it read the e-graph once."""
    return run.stop is StopReason.MEMORY and run.snap is None


def check(run: Run) -> None:
    run.stale = run.stale or run.stop is StopReason.MEMORY  # (it grew since `snap`)
    run.last = not _no_snapshot(run) and not run.stale and \
        bool(run.ins.pending or run.snap is None)
    if not run.last:
        run.check()  # (the last step checks in its own egglog call)


def last(run: Run) -> None:
    # bring the last results in (analysis only, the tripwire in the same call)
    if not run.last:
        return
    with run.clock.phase(run.times, "last"):
        run.step(False)
        run.read()


def extract(run: Run) -> None:
    if _no_snapshot(run):
        run.outs, run.ext_stats = list(run.roots), {"method": "none (memory budget)"}
        return
    snap = run.snap
    assert snap is not None
    with run.clock.phase(run.times, "extract"):
        priced: dict[int, tuple[UOp, float]] = {}
        run.outs, run.ext_stats = extract_roots(snap, run.store.cur.args, run.handles,
                                                run.model, run.clock, priced=priced)
        run.costs = unsubsume_costlier(run, run.roots, run.handles, run.outs, priced)


def stats(run: Run) -> None:
    run.rss_peak = max(run.rss_peak, rss_bytes() - run.rss0)
    snap, stop = run.snap, run.stop
    assert stop is not None
    ext = run.ext_stats
    run.stats.update(
        iterations=run.it, enodes=snap.enodes if snap else run.input_nodes,
        classes=len(snap.classes) if snap else 0, stop_reason=stop.value, time=run.times,
        per_iteration=run.per_iter, emitted=run.emitted, analysis_capped=run.capped,
        matches=dict(sorted(run.matches.items())), extraction=ext, costs=run.costs,
        held_back=dict(sorted(run.held_back.items())),
        enodes_peak=max(run.peak, snap.enodes if snap else 0), rss_growth=run.rss_peak,
        # whether a clock cut the run short anywhere (its result may differ from run
        # to run; the result cache keeps only the others)
        time_limited=stop.hard_limit or run.late or bool(ext.get("dag_skipped")))
    if run.tracer is not None and snap is not None:
        run.stats["egraph"] = run.tracer.record(snap, run.store.cur.args, run.handles,
                                                run.model)
    log.debug("e-graph run of %d roots: %d iterations, %d e-nodes, stopped: %s, %.3f s",
              len(run.roots), run.it, run.stats["enodes"], stop, run.clock.elapsed())


def no_run_stats(rulesets: list[str], enodes_budget: int | None, times: dict[str, float],
                 costs: list[tuple[float, float]], seed: dict[str, float],
                 stop: StopReason = StopReason.OPTIMAL) -> dict[str, Any]:
    """The stats of a call that ran no step, with the keys :func:`stats` gives a run:
    its start costs 0 (``optimal``), or a hard limit tripped before the search (``time``,
    ``memory``); nothing was inserted."""
    why = {StopReason.OPTIMAL: "the start costs 0",
           StopReason.MEMORY: "the memory limit tripped before the search"}.get(
               stop, "the clock ran out before the search")
    return {"engine": "egraph", "rulesets": rulesets, "enodes_budget": enodes_budget,
            "iterations": 0, "enodes": 0, "classes": 0,
            "stop_reason": stop.value, "time": times, "per_iteration": [],
            "emitted": [], "analysis_capped": 0, "matches": {},
            "extraction": {"method": f"none ({why})"}, "costs": costs,
            "held_back": {}, "enodes_peak": 0, "rss_growth": 0,
            "time_limited": stop.hard_limit, "seed": seed}


#: the phases after the loop, in order (see the module docstring)
PHASES: tuple[tuple[str, Callable[[Run], None]], ...] = (
    ("check", check),
    ("last", last),
    ("extract", extract),
    ("stats", stats),
)


def run_phases(run: Run) -> None:
    """Execute :data:`PHASES` in order on ``run``."""
    for _, phase in PHASES:
        phase(run)


def unsubsume_costlier(run: Run, roots: list[UOp], handles: list[int], outs: list[UOp],
                       priced: dict[int, tuple[UOp, float]] | None = None
                       ) -> list[tuple[float, float]]:
    """Extract again, with the subsumed e-nodes in, every root whose term came out
    costlier than its input (in place in ``outs``, when that is cheaper); each root's
    ``(input cost, output cost)`` under the run's model (``stats["costs"]``). A rule's
    subsumption can hit a class's cheapest term: ``(x - y) + y -> x`` subsumes ``s +
    x``, which is ``x + x`` once ``s = (x + x) - x`` merges with ``x``, and the
    extraction, which leaves subsumed e-nodes out, took ``x * 2``. Taking them in every
    extraction costs a corpus batch 6% (docs/perf.md); a costlier result is rare. The
    second extraction gives each such root the whole DAG search. It runs only within
    the hard time limit (its DAG search checks the clock too). ``priced``: the graph
    costs the extraction knows (``extract_roots``'s)."""
    cost = _pricer(run, priced)
    costs = []
    for r, o in zip(roots, outs, strict=True):
        c = cost(r)
        costs.append((c, c if o is r else cost(o)))
    worse = [i for i, (c_in, c_out) in enumerate(costs) if c_out > c_in]
    clock: Clock = run.clock
    # (not past the hard time limit: a root left as it is gets its input back)
    if worse and not clock.over():
        assert run.snap is not None
        again, _ = extract_roots(run.snap, run.store.cur.args, [handles[i] for i in worse],
                                 run.model, clock, subsumed=True, thorough=True)
        for i, o in zip(worse, again, strict=True):
            c = cost(o)
            if c < costs[i][1]:
                outs[i] = o
                costs[i] = (costs[i][0], c)
    return costs


def _pricer(run: Run, priced: dict[int, tuple[UOp, float]] | None = None
            ) -> Callable[[UOp], float]:
    """``run.model.graph_cost``, with the costs known already: the inputs' and the
    baseline's seeds' (each root's input and start, its input or the baseline's cheaper
    rewrite, was priced under the run's model, and an extracted term is often one of
    them: hash-consed, the same object) and ``priced`` (``id(term) -> (term, its
    cost)``)."""
    cost = run.model.graph_cost
    seeds = run.seeds
    known = dict(priced) if priced else {}
    if seeds is not None:
        inputs = zip(seeds.inputs, seeds.input_costs, strict=False)  # (may be untaken)
        known.update((id(r), (r, c)) for r, c in inputs)
        known.update((id(s), (s, c)) for s, c in zip(seeds.roots, seeds.costs, strict=True))
    if not known:
        return cost

    def price(u: UOp) -> float:
        hit = known.get(id(u))
        return cost(u) if hit is None or hit[0] is not u else hit[1]

    return price
