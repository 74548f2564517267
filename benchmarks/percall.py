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

Usage::

    python benchmarks/percall.py [--limit N] [--captures] [--unseen 40] [--seed 0]
        [--profile N] [--top 25] [--engine egraph|baseline]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import pstats
import statistics
import sys
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

__all__ = ["sets", "phase_table", "profile", "main"]


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
    args = ap.parse_args(argv)
    chosen = sets(args.limit, args.captures, args.unseen, args.seed)
    for name, rows in chosen:
        print(phase_table(name, run_exprs(rows, keep_text=True)), flush=True)
    if args.profile:
        rows = [r for _, rs in chosen for r in rs[:args.profile]]
        print(profile(rows, args.engine, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
