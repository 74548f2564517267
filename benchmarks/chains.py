"""The ordered matcher (the baseline engine) on deep chains: its time per depth.

An e-graph call starts from the baseline's rewrite and its time budget cannot stop
that rewrite, so the baseline's time on a deep input is a floor of every call's. Each
chain is nested ``depth`` deep (``E_0`` a variable):

- ``div``: ``E_{k+1} = (idiv (add (mul E_k 3) v) 2)``, one variable ``v``;
- ``div-vars``: the same with a variable per level (its output is a sum per level:
  quadratic in the depth, so its time is too);
- ``mod``: ``(mod (add (mul E_k 3) v_k) 7..11)``, a variable per level;
- ``sum``: a left-deep sum ``(add E_k (mul v_k c))``;
- ``where``: ``(where (lt E_k 50+k) (add E_k w_k) k)``, ``E_k`` shared by both uses.

Per shape and depth the table prints the median time of ``--rounds`` runs (rounds in
turn over the whole table; each run's graph is freed before the next, so no run reads
what an earlier one cached of its nodes), its growth over the depth before (``x``
per doubling: about 2 is linear, 4 quadratic), the rules applied and the input and
output sizes (nodes). Usage: ``python benchmarks/chains.py [--shapes div,mod]
[--depths 50,100,200] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eqsat.engines.baseline import optimize_baseline  # noqa: E402
from eqsat.ir.sexpr import parse  # noqa: E402

__all__ = ["SHAPES", "chain", "run", "main"]

DEPTHS = (50, 100, 200, 400, 800)


def _div(e: str, k: int) -> str:
    return f"(idiv (add (mul {e} 3) (var v 0 100)) 2)"


def _div_vars(e: str, k: int) -> str:
    return f"(idiv (add (mul {e} 3) (var v{k} 0 100)) 2)"


def _mod(e: str, k: int) -> str:
    return f"(mod (add (mul {e} 3) (var v{k} 0 100)) {7 + k % 5})"


def _sum(e: str, k: int) -> str:
    return f"(add {e} (mul (var v{k} 0 100) {k % 7 + 1}))"


def _where(e: str, k: int) -> str:
    return f"(where (lt {e} {k + 50}) (add {e} (var w{k} 0 3)) {k})"


#: shape name -> level k's text from the level below's (``e``: its text or binding)
SHAPES: dict[str, Callable[[str, int], str]] = {
    "div": _div, "div-vars": _div_vars, "mod": _mod, "sum": _sum, "where": _where}


def chain(shape: str, depth: int) -> str:
    """``shape`` nested ``depth`` deep, as text; each level bound (``%k = ...``) so that
    a level read twice (``where``) is written once."""
    level = SHAPES[shape]
    lines = ["%0 = (var v 0 100)"]
    for k in range(depth):
        lines.append(f"%{k + 1} = {level(f'%{k}', k)}")
    return "\n".join(lines + [f"%{depth}"])


def run(text: str) -> tuple[float, int, int, int]:
    """(seconds, rules applied, input nodes, output nodes) of the baseline on ``text``."""
    g = parse(text)
    t0 = time.perf_counter()
    out, stats = optimize_baseline(g)
    seconds = time.perf_counter() - t0
    if stats["stop_reason"] != "fixpoint":
        raise RuntimeError(f"stopped: {stats['stop_reason']}")
    row = (seconds, stats["rewrites"], len(g.toposort()), len(out.toposort()))
    del g, out
    gc.collect()  # (the graph's nodes and what the rules cached of them go)
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes")
    ap.add_argument("--depths", default=",".join(map(str, DEPTHS)))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    shapes = args.shapes.split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    depths = [int(d) for d in args.depths.split(",")]
    texts = {(s, d): chain(s, d) for s in shapes for d in depths}
    run(chain("div", 5))  # (the rules compiled before the clock)
    times: dict[tuple[str, int], list[float]] = {k: [] for k in texts}
    info: dict[tuple[str, int], tuple[int, int, int]] = {}
    for _ in range(args.rounds):
        for key, text in texts.items():
            seconds, *rest = run(text)
            times[key].append(seconds)
            info[key] = tuple(rest)  # type: ignore[assignment]
    print(f"{'shape':9} {'depth':>6} {'median s':>9} {'growth':>7} {'rewrites':>9} "
          f"{'nodes in':>9} {'out':>7}")
    for s in shapes:
        prev = None
        for d in depths:
            t = statistics.median(times[s, d])
            growth = f"x{t / prev:.2f}" if prev else ""
            rewrites, n_in, n_out = info[s, d]
            print(f"{s:9} {d:>6} {t:>9.3f} {growth:>7} {rewrites:>9,} {n_in:>9,} {n_out:>7,}")
            prev = t


if __name__ == "__main__":
    main()
