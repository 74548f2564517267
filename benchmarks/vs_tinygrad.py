"""tinygrad 0.14 against the two engines (index expressions) and against the lowering (kernels).

**Index expressions.** Two sets: the corpus (``data/corpus/index-exprs.jsonl`` or
``$EQSAT_CORPUS``) and the expressions :mod:`benchmarks.capture_tinygrad` captures now
from the kernels tinygrad schedules for its models. Every expression is taken from its
text, fresh for each contender (nothing of an earlier call alive), and goes once through
each, in turn (so all three see the same machine):

- ``tinygrad``: ``graph_rewrite(uop, sym)`` on ``eqsat.to_tinygrad(eqsat.tinygrad.as_floor(
  expr))`` (tinygrad's own ops back: a C division that is a floor division goes as
  ``FLOORDIV``/``FLOORMOD``, which tinygrad's simplifier works on), its div/mod cache
  cleared; its output comes back
  through ``eqsat.from_tinygrad`` to be costed;
- ``baseline`` and ``egraph``: one ``eqsat.optimize(expr, engine=..., cost_model=
  "reference")`` call each (the e-graph's warm session built beforehand).

Printed per set: the total reference cost of the inputs and of each contender's outputs,
the idiv+mod nodes left, the time per expression (median, p90, total), and how many
cases each contender makes strictly cheaper than another (the worst cases for the
e-graph against tinygrad listed by id). ``--check`` also checks every output equivalent
to its input (``eqsat.check_equivalent``).

**Kernels.** The cases of :mod:`benchmarks.tinygrad_kernels` (elementwise 2048x2048,
permute, pad, a sum 2048x2048 -> 2048, matmul 256, conv2d 1x8x32x32 with 16x3x3, maxpool
2x2, cumsum: its 3 kernels), scheduled by tinygrad 0.14 on its CPU device with its
heuristic optimizations (BEAM off). Each kernel's optimized AST goes through
``eqsat.from_tinygrad`` and ``lowering.compile_kernel`` (the e-graph); both programs run
on the same buffers and every written buffer is compared bit for bit. Timed: tinygrad's
compiled program alone (``tinygrad.engine.realize.time_call``: the program's call, no
scheduling or Python dispatch; its ``THREAD`` chunks run one after another in the
calling thread) against ours (``Kernel.bound``, one call, one thread); medians of
``--runs`` interleaved rounds, in milliseconds, both compilers' flags printed. Without
clang (tinygrad's CPU device needs it) that table is skipped with a message.

**Workloads.** Every builder of ``workloads.BUILDERS`` (its bench case) compiled by the
lowering, against its numpy reference, the same way (:mod:`benchmarks.workload_timer`:
buffers at fixed page offsets); ``--against TREE`` also times the same kernels built by
another checkout of the project (``git worktree add TREE <commit>``), in a worker
process, in the same rounds; ``--clock cpu`` times that table in thread CPU time.
These tables say what is missing; they are benchmarks, not tests.

Usage::

    python benchmarks/vs_tinygrad.py [--corpus PATH] [--models a,b] [--limit N]
        [--check] [--worst N] [--no-kernels] [--no-exprs] [--runs 7]
        [--kernels NAMES] [--kernels-scale small|bench] [--no-workloads]
        [--workloads NAMES] [--against TREE] [--clock wall|cpu] [--json FILE]

Needs the ``tinygrad`` extra and the system C compiler; the kernel table needs clang.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


from benchmarks import capture_tinygrad, tinygrad_kernels, workload_timer  # noqa: E402
from benchmarks.compare import load, source_group  # noqa: E402
from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat.api import optimize  # noqa: E402
from eqsat.engines.egraph import session_for  # noqa: E402
from eqsat.ir.equiv import check_equivalent  # noqa: E402
from eqsat.ir.sexpr import parse, to_sexpr  # noqa: E402
from eqsat.tinygrad import as_floor, from_tinygrad, to_tinygrad  # noqa: E402
from extraction import divmod_count, reference_cost  # noqa: E402
from lowering.compile import CFLAGS  # noqa: E402

__all__ = ["ExprResult", "run_exprs", "expr_table", "KERNELS", "run_kernels", "kernel_table",
           "run_workloads", "workload_table", "main"]

CONTENDERS = ("tinygrad", "baseline", "egraph")


# ---------------------------------------------------------------------------
# index expressions
@dataclass
class ExprResult:
    """One expression and what each contender made of it (cost, idiv+mod, seconds)."""

    id: str
    source: str
    cost_in: int
    divmod_in: int
    cost: dict[str, int] = field(default_factory=dict)
    divmod: dict[str, int] = field(default_factory=dict)
    secs: dict[str, float] = field(default_factory=dict)
    equivalent: dict[str, bool] = field(default_factory=dict)
    #: the e-graph call's ``stats["time"]`` (seconds per phase, ``total`` included)
    phases: dict[str, float] = field(default_factory=dict)
    #: each engine's output as compact text (``run_exprs(keep_text=True)``)
    text: dict[str, str] = field(default_factory=dict)


def _tinygrad(text: str) -> tuple[Any, float]:
    g = parse(text)
    u = to_tinygrad(as_floor(g))  # C text: tinygrad's simplifier reads floor division
    del g
    out, secs = capture_tinygrad.tinygrad_simplify(u)
    return from_tinygrad(out), secs


def _engine(text: str, engine: str) -> tuple[Any, float, dict[str, float]]:
    g = parse(text)
    t0 = time.perf_counter()
    res = optimize(g, engine=engine, cost_model="reference")
    return res.graph, time.perf_counter() - t0, res.stats.get("time", {})


def run_exprs(rows: list[dict[str, Any]], check: bool = False,
              progress: Callable[[int], None] | None = None,
              keep_text: bool = False) -> list[ExprResult]:
    """Every row (``id``, ``source``, ``expr``) through tinygrad and both engines, in turn
    (``keep_text``: each engine's output kept as compact text too)."""
    session_for(None).prepare()  # the e-graph's warm e-graphs, built before any clock starts
    out = []
    for n, row in enumerate(rows):
        g = parse(row["expr"])
        r = ExprResult(row["id"], row["source"], reference_cost(g), divmod_count(g))
        for who in CONTENDERS:
            if who == "tinygrad":
                res, secs = _tinygrad(row["expr"])
            else:
                res, secs, phases = _engine(row["expr"], who)
                if who == "egraph":
                    r.phases = dict(phases)
                if keep_text:
                    r.text[who] = to_sexpr(res, compact=True)
            r.cost[who], r.divmod[who], r.secs[who] = reference_cost(res), divmod_count(res), secs
            if check:
                r.equivalent[who] = bool(check_equivalent(g, res))
            del res
        del g
        out.append(r)
        if progress is not None:
            progress(n + 1)
    return out


def _p90(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, math.ceil(0.9 * len(s)) - 1)]


def expr_table(name: str, results: list[ExprResult], worst: int = 5) -> str:
    """The table of one set: totals, times, who beats whom, the e-graph's worst cases."""
    if not results:
        return f"{name}: no expressions\n"
    check = bool(results[0].equivalent)
    lines = [f"{name}: {len(results)} expressions",
             f"  {'':<9} {'cost':>8} {'idiv+mod':>9} {'median ms':>10} {'p90 ms':>8} "
             f"{'total s':>8}" + ("  not equivalent" if check else ""),
             f"  {'input':<9} {sum(r.cost_in for r in results):>8} "
             f"{sum(r.divmod_in for r in results):>9}"]
    for who in CONTENDERS:
        secs = [r.secs[who] for r in results]
        bad = sum(not r.equivalent[who] for r in results) if check else None
        lines.append(f"  {who:<9} {sum(r.cost[who] for r in results):>8} "
                     f"{sum(r.divmod[who] for r in results):>9} "
                     f"{statistics.median(secs) * 1e3:>10.2f} {_p90(secs) * 1e3:>8.2f} "
                     f"{sum(secs):>8.2f}" + (f"  {bad}" if check else ""))
    groups = sorted({source_group(r.source) for r in results})
    if len(groups) > 1:
        by = {g: [r for r in results if source_group(r.source) == g] for g in groups}
        lines.append("  cost by source (tinygrad/baseline/egraph): " + "; ".join(
            f"{g} {'/'.join(str(sum(r.cost[w] for r in rs)) for w in CONTENDERS)}"
            for g, rs in by.items()))
    pairs = [("egraph", "tinygrad"), ("baseline", "tinygrad"), ("egraph", "baseline")]
    lines.append("  cheaper: " + "; ".join(
        f"{a} < {b} {sum(r.cost[a] < r.cost[b] for r in results)}, "
        f"{b} < {a} {sum(r.cost[b] < r.cost[a] for r in results)}" for a, b in pairs))
    lost = sorted((r for r in results if r.cost["tinygrad"] < r.cost["egraph"]),
                  key=lambda r: r.cost["tinygrad"] - r.cost["egraph"])
    if lost and worst:
        lines.append("  tinygrad cheaper than the e-graph: " + ", ".join(
            f"{r.id} ({r.cost['egraph']} vs {r.cost['tinygrad']})" for r in lost[:worst]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# kernels
KERNELS = [c.name for c in tinygrad_kernels.CASES]


@dataclass
class KernelRow:
    """One tinygrad kernel: its optimizations, both compiled programs' medians (ms)
    and whether every written buffer came out bit-exact (None: the bridge refused it)."""

    name: str
    shape: str
    opts: str
    chunks: int
    tinygrad_ms: float
    ours_ms: float
    bit_exact: bool | None
    error: str = ""
    cc: str = ""  # the compiler our kernel was compiled with, as it resolves
    flags: str = ""  # its flags


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def _opts_text(opts: tuple[Any, ...]) -> str:
    return " ".join(f"{o.op.name.lower()}{o.axis}:{o.arg}" for o in opts) or "-"


def run_kernels(names: list[str], scale: str = "bench", runs: int = 7, dev: str = "CPU"
                ) -> list[KernelRow]:
    """Each case's kernels, scheduled by tinygrad (on ``dev``, BEAM off): tinygrad's
    compiled program and ``lowering.compile_kernel`` of the same AST (via
    ``eqsat.from_tinygrad``), run on the same buffers, compared bit for bit, then timed
    in ``runs`` interleaved rounds."""
    session_for(None).prepare()  # the e-graph's warm session, built before any clock
    rows = []
    for case in [c for c in tinygrad_kernels.CASES if c.name in names]:
        for k in tinygrad_kernels.schedule(case, scale, dev):
            base = (k.label, case.shape_text(scale), _opts_text(k.opts), k.chunks)
            if k.graph is None:
                rows.append(KernelRow(*base, math.nan, math.nan, None, k.error))
                continue
            ran = tinygrad_kernels.run_both(k)
            t_tg, t_ours = [], []
            for _ in range(runs):
                t_tg.append(next(ran.tinygrad_timer))
                t_ours.append(ran.ours_timer())
            rows.append(KernelRow(*base, _median_ms(t_tg), _median_ms(t_ours), ran.bit_exact,
                                  cc=tinygrad_kernels.named(ran.ours.cc),
                                  flags=" ".join(CFLAGS + ran.ours.flags)))
    return rows


def kernel_table(rows: list[KernelRow]) -> str:
    """The table: per kernel its shape, tinygrad's optimizations, both medians, the ratio,
    and under it the compiler and flags our kernel was compiled with (each its own: the
    lowering picks the compiler per kernel)."""
    from tinygrad.helpers import NUM_CPU_THREADS

    lines = ["kernels vs tinygrad (f32, same schedule; median ms, ratio < 1: ours faster)",
             f"  tinygrad: its CPU device's compiled program alone (time_call), "
             f"NUM_CPU_THREADS={NUM_CPU_THREADS.value}: a kernel's THREAD chunks run one "
             f"after another in the calling thread; {tinygrad_kernels.tinygrad_flags()}",
             "  ours: eqsat.from_tinygrad + lowering.compile_kernel (e-graph), one thread, "
             "its Target the device's (tinygrad_kernels.device_target); compiler per kernel",
             f"  {'kernel':<12} {'inputs':<24} {'tinygrad opts':<34} {'chunks':>6} "
             f"{'tinygrad':>9} {'ours':>9} {'ours/tg':>8}  bit-exact"]
    for r in rows:
        head = f"  {r.name:<12} {r.shape:<24} {r.opts:<34} {r.chunks:>6} "
        if r.bit_exact is None:
            lines.append(head + f"bridge refused: {r.error}")
            continue
        lines.append(head + f"{r.tinygrad_ms:>9.3f} {r.ours_ms:>9.3f} "
                     f"{r.ours_ms / r.tinygrad_ms:>8.2f}  {'yes' if r.bit_exact else 'NO'}")
        lines.append(f"      ours compiled by {r.cc} {r.flags}")
    return "\n".join(lines) + "\n"


@dataclass
class WorkloadRow:
    """One of the project's own kernels (``workloads.BUILDERS``' bench case) against its
    numpy reference: both medians (ms), whether the results agree, and with ``--against``
    the same kernel built by another checkout (its median, whether it agreed)."""

    name: str
    params: str
    ours_ms: float
    numpy_ms: float
    ok: bool
    against_ms: float | None = None
    against_ok: bool | None = None


class _Against:
    """A worker process timing the workloads of another checkout (``tree``):
    ``benchmarks/workload_timer.py`` with that checkout's ``lowering`` and ``workloads``."""

    def __init__(self, tree: Path, names: list[str], clock: str):
        import subprocess

        env = dict(os.environ, PYTHONPATH=str(tree))
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "benchmarks" / "workload_timer.py"), ",".join(names),
             clock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            cwd=tree)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"the workload worker of {tree} exited before its kernels "
                               "were ready")
        self.ok: dict[str, bool] = json.loads(line)

    def time(self, name: str) -> float:
        self.proc.stdin.write(name + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return float(self.proc.stdout.readline())  # type: ignore[union-attr]

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait()


def run_workloads(names: list[str] | None = None, runs: int = 7, against: Path | None = None,
                  clock: str = "wall") -> list[WorkloadRow]:
    """Every builder's bench kernel compiled by ``lowering.compile_kernel`` (e-graph)
    and its numpy reference (``BuiltKernel.reference``, which allocates its result),
    checked against each other, then timed in ``runs`` interleaved rounds (buffers at
    fixed page offsets: :mod:`benchmarks.workload_timer`). ``against``: another
    checkout of the project (a ``git worktree`` of an older commit), whose kernels a
    worker process builds and times in the same rounds, its turn and ours alternating
    (ours then in a worker process of this checkout, so both run alike).
    ``clock``: ``wall`` or ``cpu`` (the calling thread's CPU time: steadier on a shared
    machine; numpy's BLAS threads are then not counted)."""
    from workloads import BUILDERS

    session_for(None).prepare()
    names = names or list(BUILDERS)
    ticks = workload_timer.CLOCKS[clock]
    prepared = workload_timer.prepare(names)
    # with another checkout, ours runs in a worker process too: both alike
    other = _Against(against, names, clock) if against is not None else None
    mine = _Against(REPO, names, clock) if against is not None else None
    times: dict[str, dict[str, list[float]]] = {n: {"ours": [], "np": [], "other": []}
                                                for n in names}

    def timed(fn: Callable[[], object]) -> float:
        t0 = ticks()
        fn()
        return ticks() - t0
    try:
        for r in range(runs):
            for name in names:
                run, ref, _ = prepared[name]
                if other is None or mine is None:
                    times[name]["ours"].append(timed(run))
                else:
                    turns = [("ours", mine), ("other", other)]
                    for key, worker in turns[::-1] if r % 2 else turns:
                        times[name][key].append(worker.time(name))
                times[name]["np"].append(timed(ref))
    finally:
        for w in (other, mine):
            if w is not None:
                w.close()
    rows = []
    for name in names:
        t = times[name]
        params = ", ".join(f"{k}={v}" for k, v in BUILDERS[name].bench.items()
                           if k in ("shape", "m", "k", "n", "h", "w", "c", "cin", "cout"))
        rows.append(WorkloadRow(name, params, _median_ms(t["ours"]), _median_ms(t["np"]),
                                prepared[name][2],
                                _median_ms(t["other"]) if other is not None else None,
                                other.ok.get(name) if other is not None else None))
    return rows


def workload_table(rows: list[WorkloadRow], against: str = "") -> str:
    """The table; with the ``--against`` column (named ``against``) where rows have it."""
    more = any(r.against_ms is not None for r in rows)
    head = f" {against[:9]:>9} {'ours/old':>8}" if more else ""
    lines = ["our workloads' kernels vs numpy (bench cases; median ms; ours one thread; "
             "numpy: the builders' references, sums in f64, matmul through BLAS)"
             + (f"; {against}: the same kernels built by that checkout" if more else ""),
             f"  {'kernel':<11} {'ours':>9} {'numpy':>9} {'ours/np':>8}{head}  ok  params"]
    for r in rows:
        extra = ""
        if more and r.against_ms is not None:
            extra = f" {r.against_ms:>9.3f} {r.ours_ms / r.against_ms:>8.2f}"
        ok = r.ok and r.against_ok is not False
        lines.append(f"  {r.name:<11} {r.ours_ms:>9.3f} {r.numpy_ms:>9.3f} "
                     f"{r.ours_ms / r.numpy_ms:>8.2f}{extra}  {'yes' if ok else 'NO ':<3} "
                     f"{r.params}")
    return "\n".join(lines) + "\n"


def _checkout_name(tree: Path | None) -> str:
    """A checkout's short commit (its directory's name where git cannot say)."""
    if tree is None:
        return ""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return tree.name
    return out.stdout.strip() or tree.name


# ---------------------------------------------------------------------------
def _progress(total: int, label: str) -> Callable[[int], None]:
    step = max(1, total // 10)

    def show(n: int) -> None:
        if n % step == 0 or n == total:
            print(f"  {label}: {n}/{total}", file=sys.stderr, flush=True)
    return show


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=corpus_path())
    ap.add_argument("--models", help="capture only these models (comma-separated)")
    ap.add_argument("--limit", type=int, help="the first N expressions of each set")
    ap.add_argument("--check", action="store_true", help="check every output equivalent")
    ap.add_argument("--worst", type=int, default=5, help="e-graph losses to list per set")
    ap.add_argument("--no-exprs", action="store_true", help="skip the expression table")
    ap.add_argument("--no-kernels", action="store_true", help="skip the kernel table")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="kernels of the second table")
    ap.add_argument("--kernels-scale", choices=tinygrad_kernels.SCALES, default="bench")
    ap.add_argument("--no-workloads", action="store_true",
                    help="skip the table of our workloads' kernels against numpy")
    ap.add_argument("--workloads", help="builders of that table (comma-separated; all)")
    ap.add_argument("--against", type=Path, help="a checkout of the project (e.g. a git "
                    "worktree of an older commit) whose workload kernels are timed beside "
                    "ours, interleaved")
    ap.add_argument("--clock", choices=tuple(workload_timer.CLOCKS), default="wall",
                    help="the workloads table's clock (cpu: the thread's CPU time)")
    ap.add_argument("--runs", type=int, default=7, help="timed rounds per kernel (median)")
    ap.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    if not args.no_exprs:
        sets: list[tuple[str, list[dict[str, Any]]]] = []
        if args.corpus.is_file():
            sets.append((f"corpus ({args.corpus.name})", load(args.corpus, args.limit)))
        else:
            print(f"corpus not found: {args.corpus} (set EQSAT_CORPUS)", file=sys.stderr)
        models = args.models.split(",") if args.models else None
        captured = capture_tinygrad.rows(capture_tinygrad.capture(models), repeat=1,
                                         check=False)
        gc.collect()
        sets.append((f"captured now ({len(models or capture_tinygrad.MODELS)} models)",
                     captured[:args.limit] if args.limit else captured))
        for name, rows in sets:
            res = run_exprs(rows, check=args.check, progress=_progress(len(rows), name))
            print(expr_table(name, res, args.worst), flush=True)
            report[name] = [asdict(r) for r in res]
    if not args.no_kernels:
        names = args.kernels.split(",")
        unknown = sorted(set(names) - set(KERNELS))
        if unknown:
            ap.error(f"unknown kernels {unknown}; choose from {', '.join(KERNELS)}")
        if tinygrad_kernels.clang() is None:
            print(f"kernels vs tinygrad: skipped, tinygrad's CPU device needs clang "
                  f"({os.environ.get('CC', 'clang')!r} is not on PATH)", flush=True)
        else:
            rows_k = run_kernels(names, args.kernels_scale, args.runs)
            print(kernel_table(rows_k), flush=True)
            report["kernels"] = [asdict(r) for r in rows_k]
    if not args.no_workloads:
        rows_w = run_workloads(args.workloads.split(",") if args.workloads else None,
                               args.runs, args.against, args.clock)
        print(workload_table(rows_w, _checkout_name(args.against)), flush=True)
        report["workloads"] = [asdict(r) for r in rows_w]
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
