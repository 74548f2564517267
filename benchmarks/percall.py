"""Per-call time of one ``eqsat.optimize`` call per expression, against tinygrad.

Three sets: the corpus (``data/corpus/index-exprs.jsonl`` or ``$EQSAT_CORPUS``), the
expressions :mod:`benchmarks.capture_tinygrad` captures now from tinygrad's models
(``--captures``) and the unseen cases of ``tests/gen_cases.py`` (``--unseen N`` per
kind). Every expression goes through tinygrad's ``graph_rewrite(sym)``, the baseline and
the e-graph in turn (:func:`benchmarks.vs_tinygrad.run_exprs`), so all three see the same
machine. Printed per set: the median milliseconds of each contender and their ratios,
the median of each phase of the e-graph's ``stats["time"]``, and a digest of every
engine's outputs (the same digest before and after a change: byte-identical outputs).

``--profile N`` then runs the e-graph on the first N expressions of every set under
cProfile and prints the functions with the most own time and the most cumulative time.

``--count N`` instead counts instructions (valgrind's callgrind, which a loaded machine
does not sway): a process that warms both engines, and the same process followed by
one call per expression for the first N expressions of ``--count-set`` with each
engine; printed, each engine's instructions per call (the warm-up subtracted). The set
is the corpus (the default), ``random`` (``benchmarks/stress.py``'s ``random_exprs``,
seed ``--seed``) or ``unseen`` (``tests/gen_cases.py``'s cases, kinds taking turns).

``--startup N`` instead times a cold start: N fresh processes per engine (the e-graph
and the baseline taking turns), each timing from ``import eqsat`` to its first
``optimize`` call's result, and that first call alone (the session's build); printed,
the medians of each and the e-graph/baseline ratios.

Usage::

    python benchmarks/percall.py [--limit N] [--captures] [--unseen 40] [--seed 0]
        [--profile N] [--top 25] [--engine egraph|baseline] [--count N]
        [--count-set corpus|random|unseen] [--startup N]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if p and Path(p).resolve() not in (_HERE, REPO)]

from benchmarks.corpus import corpus_path  # noqa: E402
from benchmarks.vs_tinygrad import CONTENDERS, ExprResult, run_exprs  # noqa: E402
from eqsat.api import optimize  # noqa: E402
from eqsat.compare import load  # noqa: E402
from eqsat.engines.egraph.results import RESULTS, set_result_cache_size  # noqa: E402
from eqsat.ir.sexpr import parse  # noqa: E402

__all__ = ["sets", "phase_table", "profile", "startup", "main"]


def sets(limit: int | None, captures: bool, unseen: int, seed: int
         ) -> list[tuple[str, list[dict[str, Any]]]]:
    """The named expression sets of the run (rows with ``id``, ``source``, ``expr``)."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    path = corpus_path()
    if Path(path).is_file():
        out.append(("corpus", load(path, limit)))
    if captures:
        from benchmarks import capture_tinygrad
        rows = capture_tinygrad.rows(capture_tinygrad.capture(), repeat=1, check=False)
        out.append(("captures", rows[:limit] if limit else rows))
    if unseen:
        from tests.gen_cases import generate
        out.append(("unseen", list(generate(unseen, seed))))
    return out


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3 if xs else 0.0


def phase_table(name: str, results: list[ExprResult]) -> str:
    """Medians per contender, their ratios, the e-graph's phases, the outputs' digest."""
    med = {who: _median_ms([r.secs[who] for r in results]) for who in CONTENDERS}
    tot = {who: sum(r.secs[who] for r in results) for who in CONTENDERS}
    lines = [f"{name}: {len(results)} expressions, median ms (total s)"]
    lines.append("  " + "; ".join(f"{w} {med[w]:.3f} ({tot[w]:.2f})" for w in CONTENDERS))
    tg = med["tinygrad"] or float("nan")
    lines.append(f"  egraph/tinygrad {med['egraph'] / tg:.2f}x; "
                 f"baseline/tinygrad {med['baseline'] / tg:.2f}x; "
                 f"cost egraph {sum(r.cost['egraph'] for r in results)} "
                 f"baseline {sum(r.cost['baseline'] for r in results)} "
                 f"tinygrad {sum(r.cost['tinygrad'] for r in results)}")
    names = sorted({k for r in results for k in r.phases if k != "total"},
                   key=lambda k: -statistics.median(r.phases.get(k, 0.0) for r in results))
    lines.append("  e-graph phases (median ms): " + ", ".join(
        f"{k} {_median_ms([r.phases.get(k, 0.0) for r in results]):.3f}" for k in names))
    for who in ("baseline", "egraph"):
        h = hashlib.sha256("\n".join(r.text[who] for r in results).encode()).hexdigest()
        lines.append(f"  {who} outputs digest {h[:16]}")
    return "\n".join(lines) + "\n"


def profile(rows: list[dict[str, Any]], engine: str, top: int) -> str:
    """The engine on ``rows`` under cProfile: the top functions by own and cumulative time."""
    graphs = [parse(r["expr"]) for r in rows]
    size = RESULTS.size
    set_result_cache_size(0)  # every call runs (the timed rounds already cached these)
    prof = cProfile.Profile()
    try:
        prof.enable()
        for g in graphs:
            optimize(g, engine=engine, cost_model="reference")
        prof.disable()
    finally:
        set_result_cache_size(size)
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from eqsat.api import optimize
from eqsat.compare import load
from eqsat.engines.egraph import session_for
from eqsat.ir.sexpr import parse
graphs = [parse(r["expr"]) for r in load({exprs!r}, {n})]
session_for(None).prepare()
optimize(parse("(idiv (add (mul (var x 0 7) 4) 3) 4)"), engine="egraph", cost_model="reference")
optimize(parse("(idiv (add (mul (var x 0 7) 4) 3) 4)"), engine="baseline", cost_model="reference")
for g in graphs if {engine!r} else ():
    optimize(g, engine={engine!r}, cost_model="reference")
"""


def count_rows(which: str, n: int, seed: int) -> list[dict[str, Any]]:
    """The first ``n`` expressions of a ``--count-set``: ``corpus``, ``random`` or
    ``unseen`` (rows with ``id`` and ``expr``)."""
    if which == "corpus":
        return load(corpus_path(), n)
    if which == "random":
        from benchmarks.stress import random_exprs
        return [{"id": f"r{i}", "expr": e} for i, e in enumerate(random_exprs(n, seed))]
    from tests.gen_cases import KINDS, generate
    rows = list(generate(-(-n // len(KINDS)), seed))
    per = len(rows) // len(KINDS)
    return [rows[k * per + i] for i in range(per) for k in range(len(KINDS))][:n]


def _instructions(engines: list[str], exprs: Path, n: int, d: Path) -> dict[str, int]:
    """Instructions (callgrind) of one child process per entry of ``engines`` (run side
    by side: a count does not depend on the load): warm-up, then that engine (none: "")
    on the first ``n`` expressions of the JSONL file ``exprs``, one call each."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # (the same count run after run)
    procs = {}
    for e in engines:
        code = _CHILD.format(repo=str(REPO), exprs=str(exprs), n=n, engine=e)
        procs[e] = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d / (e or 'setup')}",
             sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
    out = {}
    for e, p in procs.items():
        err = p.communicate()[1]
        f = d / (e or "setup")
        m = re.search(r"^totals:\s+(\d+)", f.read_text(), re.M) if f.exists() else None
        if p.returncode != 0 or m is None:
            raise RuntimeError(f"the {e or 'warm-up'} run failed under valgrind "
                               f"(exit {p.returncode}):\n{err[-2000:]}")
        out[e] = int(m.group(1))
    return out


def count(n: int, which: str = "corpus", seed: int = 0) -> str:
    """Instructions per call of each engine over the first ``n`` expressions of the
    ``--count-set`` ``which``."""
    rows = count_rows(which, n, seed)
    n = len(rows)
    with tempfile.TemporaryDirectory(prefix="eqsat-percall-") as d:
        exprs = Path(d) / "exprs.jsonl"
        exprs.write_text("".join(json.dumps({"id": r["id"], "expr": r["expr"]}) + "\n"
                                 for r in rows))
        c = _instructions(["", "baseline", "egraph"], exprs, n, Path(d))
    per = {e: (c[e] - c[""]) / n for e in ("baseline", "egraph")}
    return (f"instructions per call (callgrind, the first {n} {which} expressions, "
            f"warm-up {c[''] / 1e9:.3f} G left out): baseline {per['baseline'] / 1e6:.2f} M, "
            f"egraph {per['egraph'] / 1e6:.2f} M, x{per['egraph'] / per['baseline']:.2f}")


_STARTUP = """
import sys, time
sys.path.insert(0, {repo!r})
t0 = time.perf_counter()
import eqsat
from eqsat.ir.sexpr import parse
graph = parse({expr!r})
t1 = time.perf_counter()
eqsat.optimize(graph, engine={engine!r}, cost_model="reference")
t2 = time.perf_counter()
print(t2 - t0, t2 - t1)
"""
#: the expression a cold start optimizes (the one `eqsat batch` warms a worker with:
#: it runs the e-graph, where a simpler one may stop at its seed)
STARTUP_EXPR = "(add (mod (idiv (max (var x 0 9) 1) 2) 3) 0)"


def startup(n: int) -> str:
    """Medians over ``n`` fresh processes per engine (in turns) of the time from
    ``import eqsat`` to the first ``optimize`` result, and of that first call alone."""
    got: dict[str, list[tuple[float, float]]] = {"egraph": [], "baseline": []}
    for _ in range(n):
        for engine, runs in got.items():
            code = _STARTUP.format(repo=str(REPO), expr=STARTUP_EXPR, engine=engine)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append((float(out[0]), float(out[1])))
    med = {e: (statistics.median(t for t, _ in r), statistics.median(f for _, f in r))
           for e, r in got.items()}
    (et, ef), (bt, bf) = med["egraph"], med["baseline"]
    bytecode = "not written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    return (f"cold start, {n} processes per engine (bytecode {bytecode}), median s: "
            f"import to first result: egraph {et:.3f}, baseline {bt:.3f} "
            f"(x{et / bt:.2f}); first call alone: egraph {ef:.3f}, baseline {bf:.3f} "
            f"(x{ef / bf:.2f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, help="the first N expressions of each set")
    ap.add_argument("--captures", action="store_true", help="also tinygrad's models' captures")
    ap.add_argument("--unseen", type=int, default=40, help="unseen cases per kind (0: none)")
    ap.add_argument("--seed", type=int, default=0, help="the unseen cases' seed")
    ap.add_argument("--profile", type=int, default=0,
                    help="profile the engine on the first N expressions of every set")
    ap.add_argument("--engine", choices=("egraph", "baseline"), default="egraph",
                    help="the engine --profile runs")
    ap.add_argument("--top", type=int, default=25, help="functions --profile lists")
    ap.add_argument("--count", type=int, default=0,
                    help="count instructions (callgrind) over the first N expressions of "
                    "--count-set instead of timing")
    ap.add_argument("--count-set", choices=("corpus", "random", "unseen"), default="corpus",
                    help="the expressions --count counts (random, unseen: seed --seed)")
    ap.add_argument("--startup", type=int, default=0,
                    help="time N cold starts per engine (fresh processes) instead")
    args = ap.parse_args(argv)
    if args.startup:
        print(startup(args.startup))
        return 0
    if args.count:
        if shutil.which("valgrind") is None:
            print("valgrind is not on the PATH (apt-get install valgrind)", file=sys.stderr)
            return 2
        print(count(args.count, args.count_set, args.seed))
        return 0
    chosen = sets(args.limit, args.captures, args.unseen, args.seed)
    for name, rows in chosen:
        print(phase_table(name, run_exprs(rows, keep_text=True)), flush=True)
    if args.profile:
        rows = [r for _, rs in chosen for r in rs[:args.profile]]
        print(profile(rows, args.engine, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
