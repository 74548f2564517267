"""Hostile inputs against the e-graph's budgets: time, e-nodes and memory per input.

Each input runs in its own process (so its peak RSS is its own) and the table
prints, per input: the budget, the wall time of the optimization (the session
is built before the clock starts; its build time is printed apart), the peak
RSS of the process (and of its worker processes, for a batch), the e-nodes and
the stop reason(s), and whether the run held the bounds of ``eqsat.Budget``:
wall <= 1.2 x seconds (plus the session build), e-nodes <= 2 x the e-node budget
each case ran with (``stats["enodes_budget"]``; the default grows with the input),
RSS under the memory budget.

The inputs (all deterministic):

- ``floordiv``: a floor-division expansion from a padded view (``where``s over
  one condition under idiv/mod with an Invalid branch), the default budget and a
  generous one; ``floordiv x8``: eight of its kind through ``eqsat.optimize_many`` (each
  on its own, with its own budget);
- ``where-sum N``: sums of N ``where``s over three conditions (N = 10, 40, 200);
- ``divmod-nest 30``: idiv/mod nested 30 deep;
- ``affine-200``: a 200-term affine sum under idiv and mod;
- ``kernel-5000``: a kernel graph of about 5,000 nodes (stores of padded and
  reshaped views);
- ``nested-div x8``: small nested divisions whose merged divisors multiplied without
  end before the span guards of ``floordiv_offset_floordiv`` and ``mod_quotient_split``
  (``benchmarks/nested_div_hunt.py`` finds such inputs), through ``eqsat.optimize_many``;
- ``random-4000``: 4,000 random index expressions (``tests/strategies.py``'s
  ``int_exprs``) through ``eqsat batch`` (default jobs and chunk); ``random-200``,
  the first 200 of them (in ``--quick``).

Usage: ``python3 benchmarks/stress.py [--only NAME,NAME] [--quick]`` (``--quick``:
the smaller inputs only, as CI runs them). ``--one NAME`` runs one input in this
process and prints its figures as JSON (what the table's child processes do).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eqsat.api import Budget  # noqa: E402
from eqsat.ir.sexpr import parse, to_sexpr  # noqa: E402
from eqsat.ir.uop import UOp  # noqa: E402

__all__ = ["INPUTS", "StressInput", "floordiv_case", "FLOORDIV_PARAMS", "where_sum",
           "divmod_nest", "affine_sum", "kernel_graph", "random_exprs", "NESTED_DIVISIONS",
           "run_one", "main"]

#: the wall-time bound of a run: this factor of its time budget (plus the session build)
TIME_FACTOR = 1.2
#: the e-node bound of a run: this factor of its e-node budget
ENODE_FACTOR = 2.0
#: a safety cap on every child process's address space (bytes): an input that blows
#: past every budget is stopped here instead of taking the machine with it
CHILD_AS_CAP = 8 << 30
#: a child still running after this factor of its time budget (+ two minutes), or
#: after KILL_CAP seconds, is killed
KILL_FACTOR = 5.0
KILL_CAP = 3600.0


# ---------------------------------------------------------------------------
# the inputs
#: (a, b, t, off, s1, s2, d1, d2) of the floor-division family; the first is the
#: expression captured from a tinygrad kernel
FLOORDIV_PARAMS: tuple[tuple[int, ...], ...] = (
    (7, 8, 7, -3, 7, 35, 7, 5), (5, 6, 5, -2, 5, 30, 5, 3), (9, 10, 8, -4, 9, 45, 9, 7),
    (4, 12, 10, -5, 4, 48, 4, 3), (6, 9, 6, -3, 6, 36, 6, 4), (8, 8, 6, -2, 8, 64, 8, 5),
    (3, 16, 12, -6, 3, 48, 3, 2), (7, 7, 5, -1, 7, 49, 7, 6))


def floordiv_case(a: int, b: int, t: int, off: int, s1: int, s2: int, d1: int,
                  d2: int) -> str:
    """``floor_mod(floor_div(s, d1), d2)`` of a padded view's index ``s`` (the Python
    floor operations written with C's truncating idiv/mod and ``where`` fix-ups), as
    tinygrad's view merging emits it."""
    pad = f"(where (not (lt (range 0 {b}) {t})) (add (range 0 {b}) {off}) (invalid))"
    s = f"(add (add (add 0 (mul 1 (range 1 {a}))) (mul {s1} {pad})) (mul {s2} 0))"
    q = f"(sub (idiv {s} {d1}) (where (lt (mod {s} {d1}) 0) 1 0))"
    m = f"(mod {q} {d2})"
    return f"(add {m} (where (lt {m} 0) {d2} 0))"


def where_sum(n: int) -> str:
    """A left-deep sum of ``n`` ``where``s over three conditions, mostly with constant
    branches (the where-combining rules' food), every fourth with a range term."""
    conds = ("(lt (range 0 8) 4)", "(lt (range 1 6) 3)", "(lt (add (range 0 8) (range 1 6)) 9)")
    terms = []
    for i in range(n):
        t = f"(mul (range 2 4) {i % 5 + 1})" if i % 4 == 3 else str(i * 3 % 11)
        terms.append(f"(where {conds[i % 3]} {t} {i * 5 % 7 - 2})")
    e = terms[0]
    for t in terms[1:]:
        e = f"(add {e} {t})"
    return e


def divmod_nest(depth: int) -> str:
    """idiv and mod in turn, ``depth`` deep, each over a scaled and shifted operand."""
    e = "(add (mul (range 0 64) 12) (range 1 12))"
    for i in range(depth):
        op = "idiv" if i % 2 == 0 else "mod"
        d = (3, 4, 5, 7, 8, 12)[i % 6]
        e = f"({op} (add (mul {e} {i % 4 + 2}) (range {i % 3} {(i % 5 + 2) * 4})) {d})"
    return e


def affine_sum(n: int) -> str:
    """``S // 16 + S % 8`` for a sum ``S`` of ``n`` terms ``c_i * range_i`` and a constant."""
    s = "7"
    for i in range(n):
        s = f"(add {s} (mul (range {i} {i % 7 + 2}) {(i * 7) % 23 + 1}))"
    return f"(add (idiv {s} 16) (mod {s} 8))"


def kernel_graph(target: int = 5000) -> str:
    """A kernel (one ``sink``) of stores whose load indexes are padded and reshaped
    views (``tests/gen_cases.py``'s synthetic views), about ``target`` nodes."""
    from tests.gen_cases import gen_case

    stores: list[UOp] = []
    seen: set[int] = set()
    i = 0
    while len(seen) < target:
        idx = parse(gen_case("synthetic-view", i, 7)["expr"])
        ranges = [u for u in idx.toposort() if u.op.name == "RANGE"]
        if ranges and idx.dtype.is_int:
            one = parse(f"(end (store (index (buffer {2 * i} f32 4096) (range 90 4)) "
                        f"(load (index (buffer {2 * i + 1} f32 65536) (range 91 4)))) "
                        f"(range 90 4))")
            r0 = ranges[0]
            one = one.substitute({UOp.range(4, 91): idx, UOp.range(4, 90): r0})
            stores.append(one.replace(src=one.src + tuple(ranges[1:])))
            for u in stores[-1].toposort():
                seen.add(id(u))
        i += 1
    from eqsat.ir.dtype import dtypes
    from eqsat.ir.ops import Ops

    return to_sexpr(UOp(Ops.SINK, dtypes.void, tuple(stores)))


def random_exprs(n: int, seed: int = 0) -> list[str]:
    """``n`` random index expressions drawn from ``tests/strategies.py``'s ``int_exprs``
    (draw ``i`` from a generator seeded with ``(seed, i)``: deterministic)."""
    from hypothesis.internal.conjecture.data import ConjectureData

    from tests.strategies import int_exprs

    strat = int_exprs(max_depth=4)
    out = []
    for i in range(n):
        data = ConjectureData(random=random.Random(f"{seed}:{i}"))
        out.append(to_sexpr(data.draw(strat), compact=True))
    return out


#: nested divisions of a few nodes whose e-graph grew to thousands of e-nodes (a class
#: holding its own nested form, the merged divisor multiplied at every step)
NESTED_DIVISIONS: tuple[str, ...] = (
    "(floordiv (add (floordiv (mul (var a 3 8) -2) 8) -2) 3)",
    "(floordiv (add (floordiv (var a -16 -6) 8) -2) 3)",
    "(add (floordiv (add (floordiv (var a -9 -5) 8) -1) 2) -4)",
    "(floordiv (floordiv (add (floordiv (mul (var a -10 -4) 2) 2) -5) 5) 2)",
    "(add (floordiv (mul (floormod (add (floordiv (add (floordiv (var b -11 -7) 4) -6) 4) 1) "
    "-4) 4) 4) -2)",
    "(add (floordiv (add (floordiv (mul (var a -13 -10) -3) 9) -6) 2) -1)",
    "(add (floordiv (add (idiv (var a -15 -12) 5) -2) 2) 5)",
    "(mod (add (idiv (var a 11 21) 16) 1) -2)",
)


@dataclass(frozen=True)
class StressInput:
    """One row of the table: ``kind`` ``optimize`` (one graph), ``many`` (graphs through
    ``eqsat.optimize_many``) or ``batch`` (``eqsat batch`` over JSONL lines)."""

    name: str
    kind: str
    make: Callable[[], list[str]]
    budget: Budget = field(default_factory=Budget)
    quick: bool = False  # small enough for CI


INPUTS: tuple[StressInput, ...] = (
    StressInput("floordiv", "optimize", lambda: [floordiv_case(*FLOORDIV_PARAMS[0])], quick=True),
    StressInput("floordiv 100k/10s", "optimize", lambda: [floordiv_case(*FLOORDIV_PARAMS[0])],
                Budget(enodes=100_000, seconds=10.0)),
    StressInput("floordiv x8", "many", lambda: [floordiv_case(*p) for p in FLOORDIV_PARAMS]),
    StressInput("where-sum 10", "optimize", lambda: [where_sum(10)], quick=True),
    StressInput("where-sum 40", "optimize", lambda: [where_sum(40)], quick=True),
    StressInput("where-sum 200", "optimize", lambda: [where_sum(200)]),
    StressInput("divmod-nest 30", "optimize", lambda: [divmod_nest(30)], quick=True),
    StressInput("affine-200", "optimize", lambda: [affine_sum(200)]),
    StressInput("kernel-5000", "optimize", lambda: [kernel_graph(5000)]),
    StressInput("random-4000", "batch", lambda: random_exprs(4000)),
    StressInput("random-200", "batch", lambda: random_exprs(200), quick=True),
    StressInput("nested-div x8", "many", lambda: list(NESTED_DIVISIONS), quick=True),
)


def _by_name(name: str) -> StressInput:
    for s in INPUTS:
        if s.name == name:
            return s
    raise SystemExit(f"stress: no input named {name!r} (have: {', '.join(s.name for s in INPUTS)})")


def _peak_rss() -> int:
    """The peak RSS (bytes) of this process and of its largest waited-for child."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(me, kids) * 1024


def run_one(s: StressInput) -> dict[str, Any]:
    """Run one input in this process: its figures (see the module docstring)."""
    texts = s.make()
    b = s.budget
    out: dict[str, Any] = {"name": s.name, "kind": s.kind, "cases": len(texts),
                           "seconds": b.seconds, "build": 0.0}
    if s.kind == "batch":
        from eqsat import cli

        with tempfile.TemporaryDirectory(prefix="eqsat-stress-") as d:
            src, dst = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
            with open(src, "w") as fh:
                for i, t in enumerate(texts):
                    fh.write(json.dumps({"id": i, "expr": t}) + "\n")
            t0 = time.perf_counter()
            out["status"] = cli.main(["batch", "--stats", src, "-o", dst])
            out["wall"] = time.perf_counter() - t0
            with open(dst) as fh:
                rows = [json.loads(line) for line in fh]
        out["rows"] = len(rows)
        out["errors"] = sum("error" in r for r in rows)
        stats = [r["stats"] for r in rows if "stats" in r]
        # a case's us is its own time (parse, optimize, print)
        times = [r.get("us", 0.0) / 1e6 for r in rows]
    else:
        from eqsat.api import optimize, optimize_many
        from eqsat.engines.egraph import session_for

        graphs = [parse(t) for t in texts]
        t0 = time.perf_counter()
        session_for(None).prepare(graphs)
        out["build"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if s.kind == "optimize":
            res = [optimize(graphs[0], cost_model="reference", budget=b)]
        else:
            res = optimize_many(graphs, cost_model="reference", budget=b)
        out["wall"] = time.perf_counter() - t0
        stats = [r.stats for r in res]
        times = [st["time"]["total"] for st in stats]
        out["held_back"] = sorted({k for st in stats for k in st.get("held_back", {})})
        out["cost"] = sum(r.cost for r in res)
        out["input_cost"] = sum(r.input_cost for r in res)
    out["max_case"] = max(times, default=0.0)
    out["max_enodes"] = max((st.get("enodes_peak", st.get("enodes", 0)) for st in stats),
                            default=0)
    # the e-node budget each case ran with (the default grows with the input): the
    # range of them, and the largest share of its budget a case's e-graph reached
    from eqsat.engines.egraph.schedules import default_enodes

    budgets = [st.get("enodes_budget") or b.enodes or default_enodes(0) for st in stats]
    out["enodes_budget"] = [min(budgets, default=0), max(budgets, default=0)]
    out["enodes_share"] = max((st.get("enodes_peak", st.get("enodes", 0)) / n
                               for st, n in zip(stats, budgets, strict=True)), default=0.0)
    out["stop_reason"] = dict(sorted(Counter(st.get("stop_reason", "?")
                                             for st in stats).items()))
    out["peak_rss"] = _peak_rss()
    return out


def _child(s: StressInput) -> dict[str, Any]:
    """Run ``s`` in a child process (address space capped); its figures."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_CAP, CHILD_AS_CAP))

    n = 1 if s.kind == "optimize" else len(s.make())
    timeout = min(s.budget.seconds * n * KILL_FACTOR + 120, KILL_CAP)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, __file__, "--one", s.name], capture_output=True,
                           text=True, timeout=timeout, preexec_fn=cap,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    except subprocess.TimeoutExpired:
        return {"name": s.name, "failed": f"killed after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"name": s.name, "failed": f"exit {p.returncode} after "
                f"{time.perf_counter() - t0:.1f} s: {tail[:120]}"}
    return json.loads(lines[-1])


def within_bounds(r: dict[str, Any]) -> list[str]:
    """The bounds of ``eqsat.Budget`` a row's figures break (empty: it held them): the
    slowest case's time <= 1.2 x seconds (plus the session build); any case's e-nodes (at
    any step) <= 2 x the e-node budget it ran with; peak RSS <= the memory budget; a
    batch: every line has a row and the command exited 0."""
    from eqsat.engines.egraph.schedules import HARD_ENODES, MEMORY

    bad = []
    if r["kind"] == "batch":
        if r["status"] != 0 or r["rows"] != r["cases"]:
            bad.append("rows")
    if r["max_case"] > TIME_FACTOR * r["seconds"] + r["build"]:
        bad.append("time")
    if r["enodes_share"] > HARD_ENODES:
        bad.append("enodes")
    if r["peak_rss"] > MEMORY:
        bad.append("memory")
    return bad


def _row(r: dict[str, Any]) -> str:
    if "failed" in r:
        return f"{r['name']:<18} FAILED: {r['failed']}"
    lo, hi = r["enodes_budget"]
    budget = f"{r['seconds']:g} s, {lo:,}" + (f"-{hi:,}" if hi != lo else "")
    if r["cases"] > 1:
        budget = f"{r['cases']:,} x ({budget})"
    reasons = ", ".join(f"{k} {v}" if r["cases"] > 1 else k
                        for k, v in sorted(r["stop_reason"].items()))
    bad = within_bounds(r)
    if r["kind"] == "batch":
        notes = f"rows {r['rows']}/{r['cases']}, {r['errors']} errors, exit {r['status']}"
    else:
        notes = f"cost {r['input_cost']:g} -> {r['cost']:g}"
        if r.get("held_back"):
            notes += f"; held back: {', '.join(r['held_back'])}"
    return (f"{r['name']:<18} {budget:>26} {r['wall']:8.2f} {r['build']:6.2f} "
            f"{r['peak_rss'] / 2**20:8.0f} {r['max_enodes']:>9,} "
            f"{'ok' if not bad else 'OVER ' + '/'.join(bad):<7} {reasons:<30} {notes}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated input names")
    ap.add_argument("--quick", action="store_true", help="the small inputs only (CI)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(_by_name(args.one))))
        return 0
    todo = [_by_name(n.strip()) for n in args.only.split(",")] if args.only else \
        [s for s in INPUTS if s.quick or not args.quick]
    print(f"{'input':<18} {'budget (s, e-nodes)':>26} {'wall s':>8} {'build':>6} "
          f"{'RSS MB':>8} {'e-nodes':>9} {'bounds':<7} {'stop':<30} notes")
    bad = 0
    for s in todo:
        r = _child(s)
        bad += "failed" in r or bool(within_bounds(r))
        print(_row(r), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
