"""The e-graph engine against the ordered baseline and tinygrad, over the corpus.

Prints, in one run and per corpus source (and for all cases): the total
reference cost of the inputs, of tinygrad's field, of the baseline's and of
the e-graph's outputs; their idiv+mod counts; total and median time per engine
(wall and CPU); how many e-graph outputs are strictly cheaper than the
baseline's and than tinygrad's (and how many are costlier than the baseline's,
which should be none); and, with ``--check``, how many outputs of each engine
are not equivalent to their input. Then the project's targets (docs/perf.md).

The e-graph runs in batches (``--batch``, one e-graph per batch of cases; each
case's time is its share of the batch's); ``--batch 1`` calls
``eqsat.optimize`` once per case. Both engines get the same cost model
(``--model``, default ``reference``); every output is the engine's result or,
when that is costlier, the input (``eqsat.optimize``'s rule).

``--jobs N`` runs the e-graph's batches on N worker processes (as ``eqsat batch
--jobs N`` does; each worker's warm session is built before the clock starts) and
prints the elapsed wall time next to the one-process figures.

In one process the engines take turns batch by batch (the baseline on a batch's
cases, then the e-graph on the batch), so both see the same machine; ``--repeat N``
times everything N times and prints every round's ratio and their median.

Every round optimizes freshly parsed graphs, with nothing of an earlier round
alive (the outputs are kept as text until the report): what a compiler meets, new
graphs. The baseline's caches are keyed by the graphs' nodes (weakly: linear forms,
may-be-Invalid flags, ...), so re-optimizing the same live graphs makes its later
rounds about a quarter faster while the e-graph starts every run from its pushed
e-graph; ``--warm`` times that instead (the graphs parsed once, kept across rounds).

Usage: ``python3 benchmarks/compare.py [--corpus PATH] [--batch N] [--model M]
[--check] [--limit N] [--seconds S] [--worst N] [--jobs N] [--repeat N] [--warm]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat.api import Budget, optimize  # noqa: E402
from eqsat.engines.egraph import optimize_many, session_for  # noqa: E402
from eqsat.ir.sexpr import parse, to_sexpr  # noqa: E402
from extraction import divmod_count, get_cost_model, reference_cost  # noqa: E402

__all__ = ["Case", "run", "main", "source_group", "load"]


def source_group(source: str) -> str:
    """The three source kinds of the corpus README (kernels grouped)."""
    return "kernel" if source.startswith("kernel") else source


def load(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


@dataclass
class Case:
    """One corpus line and what both engines made of it."""

    id: str
    source: str
    cost_in: int
    cost_tg: int
    divmod_in: int
    divmod_tg: int
    cost_base: int = 0
    cost_eg: int = 0
    divmod_base: int = 0
    divmod_eg: int = 0
    model_base: float = 0.0
    model_eg: float = 0.0
    wall_base: float = 0.0
    wall_eg: float = 0.0
    cpu_base: float = 0.0
    cpu_eg: float = 0.0
    eq_base: bool | None = None
    eq_eg: bool | None = None
    out_base: Any = field(default=None, repr=False)
    out_eg: Any = field(default=None, repr=False)
    stats_eg: dict = field(default_factory=dict, repr=False)


def _batch_budget(n: int, seconds: float) -> Budget:
    """A batch of ``n`` cases: ``n`` times the per-case e-node and time budgets."""
    return Budget(iterations=12, enodes=20_000 * n, seconds=seconds * n)


def _take_egraph(c: Case, g: Any, o: Any, cm: Any, wall: float, cpu: float,
                 stats: dict | None = None) -> None:
    """Record the e-graph's output of one case (the input when that is cheaper:
    ``eqsat.optimize``'s rule) and its share of its batch's time."""
    cin, cout = cm.graph_cost(g), cm.graph_cost(o)
    c.out_eg, c.model_eg = (o, cout) if cout <= cin else (g, cin)
    c.wall_eg, c.cpu_eg, c.stats_eg = wall, cpu, stats or {}


def _warm_worker() -> None:
    session_for(None)


def _ping(_: int) -> int:
    time.sleep(0.3)  # long enough that every worker starts (and warms) before the timing
    return os.getpid()


def _eg_chunk(job: tuple[list[str], str, float]) -> tuple[list[str], float, float]:
    """One batch in a worker process: (outputs as text, wall s, CPU s)."""
    texts, model, seconds = job
    cm = get_cost_model(model)
    gs = [parse(t) for t in texts]
    w, p = time.perf_counter(), time.process_time()
    outs, _ = optimize_many(gs, cost_model=cm, budget=_batch_budget(len(gs), seconds))
    wall, cpu = time.perf_counter() - w, time.process_time() - p
    return [to_sexpr(o, compact=True) for o in outs], wall, cpu


def _run_parallel(rows: list[dict[str, Any]], cases: list[Case], graphs: list[Any], batch: int,
                  model: str, seconds: float, jobs: int) -> float:
    """The e-graph batches on ``jobs`` worker processes (sessions built before the
    clock starts); each case gets its batch's time share; returns the elapsed wall."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    cm = get_cost_model(model)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_warm_worker) as pool:
        list(pool.map(_ping, range(2 * jobs)))
        starts = range(0, len(rows), batch)
        t0 = time.perf_counter()
        results = list(pool.map(_eg_chunk, [([r["expr"] for r in rows[i:i + batch]], model,
                                              seconds) for i in starts]))
        elapsed = time.perf_counter() - t0
    for i, (texts, wall, cpu) in zip(starts, results, strict=True):
        for c, g, t in zip(cases[i:i + batch], graphs[i:i + batch], texts, strict=True):
            _take_egraph(c, g, parse(t), cm, wall / len(texts), cpu / len(texts))
    return elapsed


def run(rows: list[dict[str, Any]], *, batch: int = 32, model: str = "reference",
        check: bool = False, seconds: float = 2.0, samples: int = 3000,
        jobs: int = 1, repeat: int = 1, warm: bool = False
        ) -> tuple[list[Case], float | None, list[dict[str, float]]]:
    """Optimize every row with both engines: the per-case results; with ``jobs`` > 1
    (the e-graph's batches on that many worker processes) the e-graph's elapsed wall
    time (else None); every timing round's totals.

    In one process the engines take turns: the baseline on a batch's cases, then the
    e-graph on that batch, and so on, so a load change on the shared machine hits
    both alike. ``repeat``: time everything that many times; each case keeps the
    median of its times (the outputs are the first round's). Each round parses the
    graphs afresh, the earlier rounds' graphs and outputs released (outputs kept as
    text) and collected before it starts; ``warm``: parse once, keep them alive."""
    cm = get_cost_model(model)
    graphs = [parse(r["expr"]) for r in rows]
    cases = [Case(r["id"], r["source"], r["cost_in"], r["cost_tg"], r["divmod_in"],
                  r["divmod_tg"]) for r in rows]
    elapsed = None
    times: dict[str, list[list[float]]] = {k: [[] for _ in cases] for k in
                                           ("wall_base", "cpu_base", "wall_eg", "cpu_eg")}
    session_for(None)  # the session's one-time setup is not a case's time
    step = max(batch, 1)
    for rnd in range(max(repeat, 1)):
        if rnd and not warm:
            if rnd == 1:  # the first round's outputs as text: nothing of it stays alive
                for c in cases:
                    c.out_base = to_sexpr(c.out_base, compact=True)
                    c.out_eg = to_sexpr(c.out_eg, compact=True)
            graphs = gs = outs = res = stats = g = o = None  # the last round's, released
            gc.collect()  # (the old graphs' weak cache entries go now, not in a timing)
            graphs = [parse(r["expr"]) for r in rows]
        for i in range(0, len(graphs), step):
            gs, cs = graphs[i:i + step], cases[i:i + step]
            for k, (c, g) in enumerate(zip(cs, gs, strict=True)):
                w, p = time.perf_counter(), time.process_time()
                res = optimize(g, engine="baseline", cost_model=cm)
                times["wall_base"][i + k].append(time.perf_counter() - w)
                times["cpu_base"][i + k].append(time.process_time() - p)
                if rnd == 0:
                    c.out_base, c.model_base = res.graph, res.cost
            if jobs > 1 and batch > 1:
                continue
            if batch <= 1:
                c, g = cs[0], gs[0]
                w, p = time.perf_counter(), time.process_time()
                res = optimize(g, engine="egraph", cost_model=cm, budget=Budget(seconds=seconds))
                times["wall_eg"][i].append(time.perf_counter() - w)
                times["cpu_eg"][i].append(time.process_time() - p)
                if rnd == 0:
                    c.out_eg, c.model_eg, c.stats_eg = res.graph, res.cost, res.stats
                continue
            w, p = time.perf_counter(), time.process_time()
            outs, stats = optimize_many(gs, cost_model=cm,
                                        budget=_batch_budget(len(gs), seconds))
            wall, cpu = time.perf_counter() - w, time.process_time() - p
            for k, (c, g, o) in enumerate(zip(cs, gs, outs, strict=True)):
                times["wall_eg"][i + k].append(wall / len(gs))
                times["cpu_eg"][i + k].append(cpu / len(gs))
                if rnd == 0:
                    _take_egraph(c, g, o, cm, 0.0, 0.0, stats)
    rounds = [{k: sum(v[r] for v in times[k] if len(v) > r) for k in times}
                  for r in range(max(repeat, 1))]
    for k, per_case in times.items():
        for c, v in zip(cases, per_case, strict=True):
            if v:
                setattr(c, k, statistics.median(v))
    for c in cases:  # the first round's outputs kept as text: read back (hash-consed)
        if isinstance(c.out_base, str):
            c.out_base, c.out_eg = parse(c.out_base), parse(c.out_eg)
    if jobs > 1 and batch > 1:
        elapsed = _run_parallel(rows, cases, graphs, batch, model, seconds, jobs)
    for c, g in zip(cases, graphs, strict=True):
        c.cost_base, c.cost_eg = reference_cost(c.out_base), reference_cost(c.out_eg)
        c.divmod_base, c.divmod_eg = divmod_count(c.out_base), divmod_count(c.out_eg)
        if check:
            from eqsat.ir.equiv import check_equivalent

            c.eq_base = bool(check_equivalent(g, c.out_base, samples=samples))
            c.eq_eg = bool(check_equivalent(g, c.out_eg, samples=samples))
    return cases, elapsed, rounds


def _table(cases: list[Case], check: bool) -> list[str]:
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[source_group(c.source)].append(c)
    head = (f"{'source':<20}{'n':>5} | {'cost in':>8}{'tg':>7}{'base':>7}{'egraph':>7} | "
            f"{'dm in':>6}{'tg':>5}{'base':>5}{'eg':>5} | {'base s':>7}{'med ms':>7}"
            f"{'eg s':>7}{'med ms':>7} | {'<base':>5}{'<tg':>5}{'>base':>6}")
    if check:
        head += f" | {'neq b':>5}{'neq e':>6}"
    out = [head, "-" * len(head)]
    for name in sorted(groups) + ["ALL"]:
        cs = cases if name == "ALL" else groups[name]
        line = (f"{name:<20}{len(cs):>5} | {sum(c.cost_in for c in cs):>8}"
                f"{sum(c.cost_tg for c in cs):>7}{sum(c.cost_base for c in cs):>7}"
                f"{sum(c.cost_eg for c in cs):>7} | {sum(c.divmod_in for c in cs):>6}"
                f"{sum(c.divmod_tg for c in cs):>5}{sum(c.divmod_base for c in cs):>5}"
                f"{sum(c.divmod_eg for c in cs):>5} | {sum(c.wall_base for c in cs):>7.2f}"
                f"{statistics.median(c.wall_base for c in cs) * 1e3:>7.1f}"
                f"{sum(c.wall_eg for c in cs):>7.2f}"
                f"{statistics.median(c.wall_eg for c in cs) * 1e3:>7.1f} | "
                f"{sum(c.cost_eg < c.cost_base for c in cs):>5}"
                f"{sum(c.cost_eg < c.cost_tg for c in cs):>5}"
                f"{sum(c.cost_eg > c.cost_base for c in cs):>6}")
        if check:
            line += (f" | {sum(c.eq_base is False for c in cs):>5}"
                     f"{sum(c.eq_eg is False for c in cs):>6}")
        out.append(line)
    return out


def report(cases: list[Case], check: bool, worst: int = 10, elapsed: float | None = None,
           jobs: int = 1, rounds: list[dict[str, float]] | None = None) -> str:
    """The printed report (table, CPU times, targets, worst cases). ``elapsed``: the
    e-graph's elapsed wall time on ``jobs`` worker processes (the table's e-graph times
    are then the workers' per-batch times, summed); ``rounds``: every timing round's
    totals (their ratios are printed when there are several)."""
    lines = _table(cases, check)
    tot = {k: sum(getattr(c, k) for c in cases) for k in
           ("cost_tg", "cost_eg", "cost_base", "divmod_tg", "divmod_eg", "wall_base", "wall_eg",
            "cpu_base", "cpu_eg")}
    lines.append("")
    lines.append(f"CPU time: baseline {tot['cpu_base']:.2f} s, e-graph {tot['cpu_eg']:.2f} s "
                 f"(x{tot['cpu_eg'] / max(tot['cpu_base'], 1e-9):.2f}); wall: baseline "
                 f"{tot['wall_base']:.2f} s, e-graph {tot['wall_eg']:.2f} s "
                 f"(x{tot['wall_eg'] / max(tot['wall_base'], 1e-9):.2f})")
    if rounds and len(rounds) > 1:
        ratios = [r["cpu_eg"] / max(r["cpu_base"], 1e-9) for r in rounds if r["cpu_eg"]]
        if ratios:
            lines.append(f"{len(rounds)} timing rounds, CPU ratio e-graph/baseline per round: "
                         + ", ".join(f"x{x:.2f}" for x in ratios)
                         + f"; median x{statistics.median(ratios):.2f} (the table: each "
                         "case's median time)")
    costlier_in = sum(c.cost_eg > c.cost_in for c in cases)
    worse = [c for c in cases if c.model_eg > c.model_base + 1e-9]
    lines.append("targets:")
    lines.append(f"  total reference cost {tot['cost_eg']} <= 0.85 x tinygrad "
                 f"{0.85 * tot['cost_tg']:.0f}: {tot['cost_eg'] <= 0.85 * tot['cost_tg']}")
    lines.append(f"  idiv+mod {tot['divmod_eg']} <= 0.85 x tinygrad {0.85 * tot['divmod_tg']:.0f}: "
                 f"{tot['divmod_eg'] <= 0.85 * tot['divmod_tg']}")
    lines.append(f"  cases costlier than the baseline (chosen model): {len(worse)}; "
                 f"(reference cost): {sum(c.cost_eg > c.cost_base for c in cases)}")
    lines.append(f"  outputs costlier than their input (reference cost): {costlier_in}")
    if check:
        lines.append(f"  inequivalent outputs: e-graph {sum(c.eq_eg is False for c in cases)}, "
                     f"baseline {sum(c.eq_base is False for c in cases)}")
    lines.append(f"  e-graph time <= 3 x baseline: wall x"
                 f"{tot['wall_eg'] / max(tot['wall_base'], 1e-9):.2f}, CPU x"
                 f"{tot['cpu_eg'] / max(tot['cpu_base'], 1e-9):.2f} ("
                 + ("one process)" if elapsed is None else "the batches' times summed)"))
    if elapsed is not None:
        lines.append(f"  e-graph on {jobs} worker processes: elapsed {elapsed:.2f} s = x"
                     f"{elapsed / max(tot['wall_base'], 1e-9):.2f} the baseline's wall time "
                     f"(baseline: one process); the workers' CPU {tot['cpu_eg']:.2f} s")
    if worst:
        above = sorted((c for c in cases if c.cost_eg > min(c.cost_base, c.cost_tg)),
                       key=lambda c: (min(c.cost_base, c.cost_tg) - c.cost_eg, c.id))
        lines.append(f"\ncases where the e-graph is above min(baseline, tinygrad) (reference "
                     f"cost): {len(above)}" + (f", the {min(worst, len(above))} furthest:"
                                               if above else ""))
        for c in above[:worst]:
            lines.append(f"  {c.id:<8} {source_group(c.source):<20} in {c.cost_in:>4}  tg "
                         f"{c.cost_tg:>4}  base {c.cost_base:>4}  egraph {c.cost_eg:>4}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=corpus_path())
    ap.add_argument("--batch", type=int, default=32, help="cases per e-graph (1: per case)")
    ap.add_argument("--model", default="reference", help="cost model: reference or default")
    ap.add_argument("--check", action="store_true", help="check every output's equivalence")
    ap.add_argument("--limit", type=int, default=None, help="only the first N cases")
    ap.add_argument("--seconds", type=float, default=2.0, help="e-graph time budget per case")
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1,
                    help="timing rounds (each case reports its median time)")
    ap.add_argument("--warm", action="store_true",
                    help="parse the graphs once and keep them across rounds (an engine's "
                         "caches keyed by their nodes stay warm)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes for the e-graph's batches (eqsat batch's --jobs)")
    args = ap.parse_args(argv)
    if not args.corpus.exists():
        print(f"corpus not found: {args.corpus} (set EQSAT_CORPUS)", file=sys.stderr)
        return 2
    rows = load(args.corpus, args.limit)
    if args.jobs < 1 or args.repeat < 1:
        print("--jobs and --repeat must be >= 1", file=sys.stderr)
        return 2
    cases, elapsed, rounds = run(rows, batch=args.batch, model=args.model, check=args.check,
                                 seconds=args.seconds, jobs=args.jobs,
                                 repeat=args.repeat, warm=args.warm)
    print(f"{len(cases)} cases from {args.corpus}; cost model {args.model!r}; e-graph batch "
          f"{args.batch}")
    print(report(cases, args.check, args.worst, elapsed, args.jobs, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
