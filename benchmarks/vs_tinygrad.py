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

**Kernels.** Elementwise add, permute, pad, reduce (sum), matmul and conv2d, on the
shapes of ``--kernels-scale`` (f32, random inputs): tinygrad's CPU backend (clang) timed
through ``Tensor.realize()`` (scheduling, dispatch and the kernel; the lazy graph built
before the clock) and without its Python dispatch (the compiled program's calls, as
``tinygrad.engine.realize.time_call`` times them); and ``lowering.compile_kernel`` (the
e-graph) on the kernel the project's builder makes for the same shape (``ours``), and on
tinygrad's own kernel AST brought over by ``eqsat.from_tinygrad`` (``bridge``), both timed
as one call of the compiled function (``Kernel.bound``: no per-call argument checks).
Every result is checked against numpy first. Medians of ``--runs`` interleaved rounds, in
milliseconds, and the ratios to tinygrad's kernel time. This table is a benchmark that
says what is missing, not a test.

Usage::

    python benchmarks/vs_tinygrad.py [--corpus PATH] [--models a,b] [--limit N]
        [--check] [--worst N] [--no-kernels] [--no-exprs] [--runs 7]
        [--kernels NAMES] [--kernels-scale small|bench] [--json FILE]

Needs the ``tinygrad`` extra; the kernel table needs tinygrad's CPU device (``clang``)
and the system C compiler.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
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

import numpy as np  # noqa: E402

from benchmarks import capture_tinygrad  # noqa: E402
from benchmarks.compare import load, source_group  # noqa: E402
from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat.api import optimize  # noqa: E402
from eqsat.engines.egraph import session_for  # noqa: E402
from eqsat.ir.equiv import check_equivalent  # noqa: E402
from eqsat.ir.sexpr import parse  # noqa: E402
from eqsat.tinygrad import as_floor, from_tinygrad, to_tinygrad  # noqa: E402
from extraction import divmod_count, reference_cost  # noqa: E402

__all__ = ["ExprResult", "run_exprs", "expr_table", "KERNELS", "run_kernels", "kernel_table",
           "main"]

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
              progress: Callable[[int], None] | None = None) -> list[ExprResult]:
    """Every row (``id``, ``source``, ``expr``) through tinygrad and both engines, in turn."""
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
@dataclass(frozen=True)
class KernelCase:
    """A kernel on both sides: the project's builder and tinygrad's tensor program."""

    name: str
    builder: str
    params: dict[str, Any]
    tinygrad: Callable[..., Any]  # the input Tensors -> the output Tensor

    def shape_text(self) -> str:
        from workloads import make

        return "x".join(map(str, make(self.builder, **self.params).output_shape))


def _kernels(scale: str) -> list[KernelCase]:
    big = scale == "bench"
    return [
        KernelCase("elementwise", "binary", {"op": "add", "shape": (2048, 2048) if big
                                             else (256, 256)}, lambda a, b: a + b),
        KernelCase("permute", "permute", {"shape": (2080, 2112) if big else (260, 264),
                                          "order": (1, 0), "loops": "auto"},
                   lambda a: a.permute(1, 0).contiguous()),
        KernelCase("pad", "pad", {"shape": (2040, 2040) if big else (250, 250),
                                  "padding": ((4, 4), (4, 4))},
                   lambda a: a.pad(((4, 4), (4, 4))).contiguous()),
        KernelCase("reduce", "reduce", {"shape": (2048, 2048) if big else (256, 256),
                                        "axis": 0, "op": "sum"}, lambda a: a.sum(axis=0)),
        KernelCase("matmul", "matmul", {"m": 256, "k": 256, "n": 256} if big else
                   {"m": 64, "k": 64, "n": 64}, lambda a, b: a @ b),
        KernelCase("conv2d", "conv2d", {"n": 1, "cin": 8, "h": 34, "w": 34, "cout": 8, "kh": 3,
                                        "kw": 3} if big else
                   {"n": 1, "cin": 4, "h": 18, "w": 18, "cout": 4, "kh": 3, "kw": 3},
                   lambda x, w: x.conv2d(w)),
    ]


KERNELS = [k.name for k in _kernels("bench")]


@dataclass
class KernelRow:
    name: str
    shape: str
    tg_realize_ms: float
    tg_kernel_ms: float
    ours_ms: float
    bridge_ms: float
    tg_kernels: int
    ok: bool


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def run_kernels(names: list[str], scale: str = "bench", runs: int = 7) -> list[KernelRow]:
    """Each kernel through tinygrad's CPU backend and ``lowering.compile_kernel``."""
    from tinygrad import Device, Tensor
    from tinygrad.engine.realize import time_call

    from lowering import compile_kernel
    from workloads import make

    session_for(None)
    rows = []
    for case in [k for k in _kernels(scale) if k.name in names]:
        bk = make(case.builder, **case.params)
        inputs = bk.random_inputs(seed=0)
        want = bk.reference(*inputs).reshape(-1)
        ts = [Tensor(a, device="CPU").realize() for a in inputs]
        linear = case.tinygrad(*ts).schedule_linear()
        calls = list(linear.src)
        got_tg = case.tinygrad(*ts).realize().numpy().reshape(-1)
        ours = compile_kernel(bk.graph)
        bufs = bk.buffers(inputs)
        ours(*bufs)
        ok = bool(np.allclose(got_tg, want, rtol=1e-3, atol=1e-3)
                  and np.allclose(bufs[0], want, rtol=1e-3, atol=1e-3))
        bridge, bridge_bufs = None, None
        if len(calls) == 1:
            bridge = compile_kernel(from_tinygrad(calls[0].src[0]))
            by_buffer = {t.uop.base: a for t, a in zip(ts, inputs, strict=True)}
            bridge_bufs = [np.zeros(want.size, np.float32)] + [
                np.ascontiguousarray(by_buffer[b], np.float32).reshape(-1)
                for b in calls[0].src[2:]]
            bridge(*bridge_bufs)
            ok = ok and bool(np.allclose(bridge_bufs[0], want, rtol=1e-3, atol=1e-3))
        timers = [time_call(c) for c in calls]
        run_ours = ours.bound(*bufs)
        run_bridge = bridge.bound(*bridge_bufs) if bridge is not None else None
        t_real, t_kern, t_ours, t_bridge = [], [], [], []
        for _ in range(runs):
            out = case.tinygrad(*ts)
            t0 = time.perf_counter()
            out.realize()
            Device["CPU"].synchronize()
            t_real.append(time.perf_counter() - t0)
            t_kern.append(sum(next(g) for g in timers))
            t0 = time.perf_counter()
            run_ours()
            t_ours.append(time.perf_counter() - t0)
            if run_bridge is not None:
                t0 = time.perf_counter()
                run_bridge()
                t_bridge.append(time.perf_counter() - t0)
        rows.append(KernelRow(case.name, case.shape_text(), _median_ms(t_real),
                              _median_ms(t_kern), _median_ms(t_ours),
                              _median_ms(t_bridge) if t_bridge else math.nan, len(calls), ok))
    return rows


def kernel_table(rows: list[KernelRow]) -> str:
    from tinygrad.helpers import NUM_CPU_THREADS

    from lowering.compile import CFLAGS

    lines = [f"kernels (f32; tinygrad CPU with {NUM_CPU_THREADS.value} threads, clang -O2 "
             f"-march=native; ours: cc {' '.join(CFLAGS)}, one thread)",
             f"  {'kernel':<12} {'shape':>11} {'tg realize':>10} {'tg kernel':>10} "
             f"{'ours':>8} {'bridge':>8} {'ours/tg':>8} {'bridge/tg':>9}  ok",
             "  " + " " * 25 + "(ms; ratios to tinygrad's kernel time, < 1: ours faster)"]
    for r in rows:
        lines.append(f"  {r.name:<12} {r.shape:>11} {r.tg_realize_ms:>10.2f} "
                     f"{r.tg_kernel_ms:>10.2f} {r.ours_ms:>8.2f} {r.bridge_ms:>8.2f} "
                     f"{r.ours_ms / r.tg_kernel_ms:>8.2f} {r.bridge_ms / r.tg_kernel_ms:>9.2f}"
                     f"  {'yes' if r.ok else 'NO'}")
    return "\n".join(lines) + "\n"


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
    ap.add_argument("--kernels-scale", choices=("bench", "small"), default="bench")
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
        rows_k = run_kernels(names, args.kernels_scale, args.runs)
        print(kernel_table(rows_k), flush=True)
        report["kernels"] = [asdict(r) for r in rows_k]
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
