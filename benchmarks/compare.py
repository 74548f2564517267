"""The e-graph engine against the ordered baseline and tinygrad, over the corpus.

Prints, in one run and per corpus source (and for all cases): the total
reference cost of the inputs, of tinygrad's field, of the baseline's and of
the e-graph's outputs; their idiv+mod counts; total and median time per engine
(wall and CPU); how many e-graph outputs are strictly cheaper than the
baseline's and than tinygrad's (and how many are costlier than the baseline's,
which should be none); and, with ``--check``, how many outputs of each engine
are not equivalent to their input. Then the project's targets (docs/perf.md).

Every case is one ``eqsat.optimize`` call of its own (``--batch``: how many cases
each engine takes in its turn, and each task of ``--jobs``; no output depends on it).
Both engines get the same cost model
(``--model``, default ``reference``); every output is the engine's result or,
when that is costlier, the input (``eqsat.optimize``'s rule).

``--jobs N`` runs the e-graph's batches on N worker processes (as ``eqsat batch
--jobs N`` does; each worker's warm session is built before the clock starts) and
prints the elapsed wall time next to the one-process figures.

The run and the table are :mod:`eqsat.compare`'s (what ``eqsat compare --tinygrad``
prints); this script adds the CPU times, the timing rounds, the project's targets, the
worst cases and ``--jobs``. In one process the engines take turns batch by batch (the
baseline on a batch's cases, then the e-graph on the batch), so both see the same
machine; ``--repeat N`` times everything N times and prints every round's ratio and
their median. A progress bar runs on stderr when it is a terminal (not under CI).

Every round optimizes freshly parsed graphs, with nothing of an earlier round
alive (the outputs are kept as text until the report): what a compiler meets, new
graphs. The baseline's caches are keyed by the graphs' nodes (weakly: linear forms,
may-be-Invalid flags, ...), so re-optimizing the same live graphs makes its later
rounds about a quarter faster while the e-graph starts every run from its pushed
e-graph; ``--warm`` times that instead (the graphs parsed once, kept across rounds).

``--per-call`` measures what a compiler calling ``eqsat.optimize`` once per kernel
sees instead: one call per expression and contender (a freshly parsed graph each, the
reference cost model), in turn: tinygrad 0.14's ``graph_rewrite(uop, sym)``, the
baseline, the e-graph (its warm session built before, its result cache emptied first:
every call is a miss); per contender the total cost and idiv+mod, and the per-call
median, p90, max and total time, with the ratios to tinygrad's and to the baseline's;
then where the e-graph's calls spent their time (``stats["time"]``'s phases, and what
lies outside them). It runs :func:`benchmarks.vs_tinygrad.run_exprs` (needs tinygrad).

Usage: ``python3 benchmarks/compare.py [--corpus PATH] [--batch N] [--model M]
[--check] [--limit N] [--seconds S] [--worst N] [--jobs N] [--repeat N] [--warm]
[--per-call]``
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat.api import CHUNK, Budget, optimize  # noqa: E402
from eqsat.compare import (  # noqa: E402
    Case,
    finish,
    load,
    run,
    source_group,
    summary,
    table,
    take_output,
)
from eqsat.engines.egraph import session_for  # noqa: E402
from eqsat.ir.sexpr import parse, to_sexpr  # noqa: E402
from eqsat.progress import progress  # noqa: E402
from extraction import get_cost_model  # noqa: E402

__all__ = ["Case", "run", "main", "source_group", "load", "report", "run_parallel",
           "per_call_report"]


def _warm_worker() -> None:
    session_for(None)


def _ping(_: int) -> int:
    time.sleep(0.3)  # long enough that every worker starts (and warms) before the timing
    return os.getpid()


def _eg_chunk(job: tuple[list[str], str, float]) -> list[tuple[str, float, float]]:
    """One batch in a worker process, one ``eqsat.optimize`` call a case: per case
    (output as text, wall s, CPU s)."""
    texts, model, seconds = job
    cm = get_cost_model(model)
    budget = Budget(seconds=seconds)
    out = []
    for t in texts:
        g = parse(t)
        w, p = time.perf_counter(), time.process_time()
        res = optimize(g, cost_model=cm, budget=budget)
        out.append((to_sexpr(res.graph, compact=True), time.perf_counter() - w,
                    time.process_time() - p))
    return out


def run_parallel(rows: list[dict[str, Any]], cases: list[Case], batch: int, model: str,
                 seconds: float, jobs: int, check: bool = False) -> float:
    """The e-graph's batches on ``jobs`` worker processes (sessions built before the
    clock starts), each case one ``eqsat.optimize`` call; returns the elapsed wall."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    cm = get_cost_model(model)
    graphs = [parse(r["expr"]) for r in rows]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_warm_worker) as pool:
        list(pool.map(_ping, range(2 * jobs)))
        starts = range(0, len(rows), batch)
        t0 = time.perf_counter()
        results = list(pool.map(_eg_chunk, [([r["expr"] for r in rows[i:i + batch]], model,
                                              seconds) for i in starts]))
        elapsed = time.perf_counter() - t0
    for i, per_case in zip(starts, results, strict=True):
        for c, g, (t, wall, cpu) in zip(cases[i:i + batch], graphs[i:i + batch], per_case,
                                        strict=True):
            take_output(c, "egraph", g, parse(t), cm)
            c.wall["egraph"], c.cpu["egraph"] = wall, cpu
    finish(cases, graphs, ["egraph"], check)
    return elapsed


def report(cases: list[Case], check: bool, worst: int = 10, elapsed: float | None = None,
           jobs: int = 1, rounds: list[dict[str, dict[str, float]]] | None = None) -> str:
    """The printed report (table, CPU times, targets, worst cases). ``elapsed``: the
    e-graph's elapsed wall time on ``jobs`` worker processes (the table's e-graph times
    are then the workers' per-case times, summed); ``rounds``: every timing round's
    totals (their ratios are printed when there are several)."""
    lines = table(summary(cases, ["baseline", "egraph"], tinygrad=True))

    def tot(kind: str, e: str) -> float:
        return sum(getattr(c, kind)[e] for c in cases)

    cpu_b, cpu_e = tot("cpu", "baseline"), tot("cpu", "egraph")
    wall_b, wall_e = tot("wall", "baseline"), tot("wall", "egraph")
    cost_e, cost_tg = tot("cost", "egraph"), tot("cost", "tinygrad")
    dm_e, dm_tg = tot("divmod", "egraph"), tot("divmod", "tinygrad")
    lines.append("")
    lines.append(f"CPU time: baseline {cpu_b:.2f} s, e-graph {cpu_e:.2f} s "
                 f"(x{cpu_e / max(cpu_b, 1e-9):.2f}); wall: baseline "
                 f"{wall_b:.2f} s, e-graph {wall_e:.2f} s "
                 f"(x{wall_e / max(wall_b, 1e-9):.2f})")
    if rounds and len(rounds) > 1:
        ratios = [r["cpu"]["egraph"] / max(r["cpu"]["baseline"], 1e-9) for r in rounds
                  if r["cpu"].get("egraph")]
        if ratios:
            lines.append(f"{len(rounds)} timing rounds, CPU ratio e-graph/baseline per round: "
                         + ", ".join(f"x{x:.2f}" for x in ratios)
                         + f"; median x{statistics.median(ratios):.2f} (the table: each "
                         "case's median time)")
    costlier_in = sum(c.cost["egraph"] > c.cost["input"] for c in cases)
    worse = [c for c in cases if c.model["egraph"] > c.model["baseline"] + 1e-9]
    lines.append("targets:")
    lines.append(f"  total reference cost {cost_e} <= 0.85 x tinygrad "
                 f"{0.85 * cost_tg:.0f}: {cost_e <= 0.85 * cost_tg}")
    lines.append(f"  idiv+mod {dm_e} <= 0.85 x tinygrad {0.85 * dm_tg:.0f}: "
                 f"{dm_e <= 0.85 * dm_tg}")
    lines.append(f"  cases costlier than the baseline (chosen model): {len(worse)}; "
                 f"(reference cost): "
                 f"{sum(c.cost['egraph'] > c.cost['baseline'] for c in cases)}")
    lines.append(f"  outputs costlier than their input (reference cost): {costlier_in}")
    if check:
        lines.append("  inequivalent outputs: e-graph "
                     f"{sum(c.equivalent.get('egraph') is False for c in cases)}, baseline "
                     f"{sum(c.equivalent.get('baseline') is False for c in cases)}")
    lines.append(f"  e-graph time <= 3 x baseline: wall x"
                 f"{wall_e / max(wall_b, 1e-9):.2f}, CPU x"
                 f"{cpu_e / max(cpu_b, 1e-9):.2f} ("
                 + ("one process)" if elapsed is None else "the workers' times summed)"))
    if elapsed is not None:
        lines.append(f"  e-graph on {jobs} worker processes: elapsed {elapsed:.2f} s = x"
                     f"{elapsed / max(wall_b, 1e-9):.2f} the baseline's wall time "
                     f"(baseline: one process); the workers' CPU {cpu_e:.2f} s")
    if worst:
        def best_other(c: Case) -> int:
            return min(c.cost["baseline"], c.cost["tinygrad"])

        above = sorted((c for c in cases if c.cost["egraph"] > best_other(c)),
                       key=lambda c: (best_other(c) - c.cost["egraph"], c.id))
        lines.append(f"\ncases where the e-graph is above min(baseline, tinygrad) (reference "
                     f"cost): {len(above)}" + (f", the {min(worst, len(above))} furthest:"
                                               if above else ""))
        for c in above[:worst]:
            lines.append(f"  {c.id:<8} {source_group(c.source):<20} in {c.cost['input']:>4}  "
                         f"tg {c.cost['tinygrad']:>4}  base {c.cost['baseline']:>4}  "
                         f"egraph {c.cost['egraph']:>4}")
    return "\n".join(lines)


def _quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` by the nearest-rank rule (``q = 0.9``: the p90)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


#: the top-level phases of an e-graph call's ``stats["time"]`` (the rest are parts)
_PHASES = ("insert", "egglog", "snapshot", "computed", "finish", "last", "extract", "reset",
           "setup")


def per_call_report(results: list[Any]) -> str:
    """The per-call table of :func:`benchmarks.vs_tinygrad.run_exprs`'s results: per
    contender the cost, idiv+mod, and the median/p90/max/total time of its calls."""
    from benchmarks.vs_tinygrad import CONTENDERS

    if not results:
        return "no expressions"
    totals = {w: sum(r.secs[w] for r in results) for w in CONTENDERS}
    check = bool(results[0].equivalent)
    lines = [f"one call per expression ({len(results)}), reference cost, times in ms "
             "(total in s)",
             f"  {'':<9} {'cost':>7} {'idiv+mod':>8} {'median':>8} {'p90':>8} {'max':>8} "
             f"{'total':>7} {'x tinygrad':>10} {'x baseline':>10}"
             + ("  not equivalent" if check else ""),
             f"  {'input':<9} {sum(r.cost_in for r in results):>7} "
             f"{sum(r.divmod_in for r in results):>8}"]
    for w in CONTENDERS:
        xs = [r.secs[w] for r in results]
        bad = f"  {sum(not r.equivalent[w] for r in results)}" if check else ""
        lines.append(
            f"  {w:<9} {sum(r.cost[w] for r in results):>7} "
            f"{sum(r.divmod[w] for r in results):>8} {statistics.median(xs) * 1e3:>8.2f} "
            f"{_quantile(xs, 0.9) * 1e3:>8.2f} {max(xs) * 1e3:>8.2f} {totals[w]:>7.2f} "
            f"{totals[w] / max(totals['tinygrad'], 1e-9):>10.2f} "
            f"{totals[w] / max(totals['baseline'], 1e-9):>10.2f}{bad}")
    cost = {w: sum(r.cost[w] for r in results) for w in CONTENDERS}
    dm = {w: sum(r.divmod[w] for r in results) for w in CONTENDERS}
    lines.append(f"  e-graph / tinygrad: cost x{cost['egraph'] / max(cost['tinygrad'], 1):.3f}, "
                 f"idiv+mod x{dm['egraph'] / max(dm['tinygrad'], 1):.3f}; costlier than "
                 f"the baseline: {sum(r.cost['egraph'] > r.cost['baseline'] for r in results)}")
    phases = {k: sum(r.phases.get(k, 0.0) for r in results) for k in _PHASES}
    inside = sum(phases.values())
    calls = sum(r.phases.get("total", 0.0) for r in results)
    lines.append("  e-graph calls, seconds by phase: " + ", ".join(
        f"{k} {v:.2f}" for k, v in phases.items() if v) + f"; outside the phases "
        f"{calls - inside:.2f} of {calls:.2f} (set-up, the input's and output's "
        "costs)")
    hits = sum(r.phases.get("cached", 0.0) > 0 for r in results)
    if hits:
        lines.append(f"  e-graph calls answered from the result cache: {hits}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=corpus_path())
    ap.add_argument("--batch", type=int, default=CHUNK,
                    help=f"cases per turn of each engine and per task of --jobs (default "
                         f"{CHUNK}, eqsat batch's chunk)")
    ap.add_argument("--model", default="reference", help="cost model: reference or default")
    ap.add_argument("--check", action="store_true", help="check every output's equivalence")
    ap.add_argument("--limit", type=int, default=None, help="only the first N cases")
    ap.add_argument("--seconds", type=float, default=300.0,
                    help="e-graph hard time limit per case")
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1,
                    help="timing rounds (each case reports its median time)")
    ap.add_argument("--warm", action="store_true",
                    help="parse the graphs once and keep them across rounds (an engine's "
                         "caches keyed by their nodes stay warm)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes for the e-graph's batches (eqsat batch's --jobs)")
    ap.add_argument("--per-call", action="store_true",
                    help="one optimize call per expression, beside tinygrad's simplifier")
    args = ap.parse_args(argv)
    if not args.corpus.exists():
        print(f"corpus not found: {args.corpus} (set EQSAT_CORPUS)", file=sys.stderr)
        return 2
    rows = load(args.corpus, args.limit, tinygrad=True)
    if args.per_call:
        from benchmarks.vs_tinygrad import run_exprs
        from eqsat.engines.egraph import clear_result_cache

        clear_result_cache()
        with progress(total=len(rows), desc="per call") as bar:
            results = run_exprs(rows, check=args.check,
                                progress=lambda n: bar.update(1))
        print(f"{len(results)} cases from {args.corpus}")
        print(per_call_report(results))
        return 0
    if args.jobs < 1 or args.repeat < 1:
        print("--jobs and --repeat must be >= 1", file=sys.stderr)
        return 2
    parallel = args.jobs > 1
    with progress(total=len(rows), desc="compare") as bar:
        cases, rounds = run(rows, engines=["baseline"] if parallel else ["baseline", "egraph"],
                            batch=args.batch, model=args.model, check=args.check,
                            seconds=args.seconds, repeat=args.repeat, warm=args.warm,
                            on_batch=bar.update)
    elapsed = None
    if parallel:
        elapsed = run_parallel(rows, cases, args.batch, args.model, args.seconds, args.jobs,
                               args.check)
    print(f"{len(cases)} cases from {args.corpus}; cost model {args.model!r}; turns of "
          f"{args.batch} cases")
    print(report(cases, args.check, args.worst, elapsed, args.jobs, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
