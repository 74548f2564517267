"""Whole kernels from 100 to 20,000 nodes through both engines, each in a fresh process.

Two sources of kernels:

- ``synthetic``: ``benchmarks/stress.py``'s ``kernel_graph(n)``, a kernel (one ``sink``)
  of stores whose load indexes are padded and reshaped views (``tests/gen_cases.py``'s
  synthetic views), about ``n`` nodes;
- ``tinygrad``: the kernel ASTs tinygrad 0.14 builds for the models of
  ``benchmarks/capture_tinygrad.py`` (each kernel's AST at the input of codegen's
  first symbolic pass, through the bridge ``eqsat.from_tinygrad``), their stores put
  in one ``sink`` in schedule order, model after model, again with renumbered loop
  ranges past the models' 750 nodes, until about ``n`` nodes.

Each size runs in its own process (its peak RSS is its own): the warm session is built
first (not timed), then the baseline and the e-graph (default budget) optimize the
kernel under the reference cost model. The table prints per size: the nodes, the
baseline's cost and time, the e-graph's cost, its ratio to the baseline's, its wall
and CPU time (this process's: less swayed by other processes on the machine) and their
growth from the size before, per doubling of the nodes, the parts the kernel ran in (one
e-graph each, ``eqsat.engines.egraph.parts``), its e-nodes, e-node budget and iterations
(the largest part's), its stop reason, and the process's peak RSS
(``--json`` rows also carry ``extracted``: the extraction's cost before the result is
checked against the baseline's rewrite, and ``computed``: the computed pass's time per
step, ``stats["time"]``'s ``computed.<step>``); then the targets of issue 30: at 5,000 nodes at
most 0.85x the baseline's cost, time growing by at most 2.2x per doubling from 1,000 to
20,000 nodes, peak RSS at 20,000 nodes under 1 GB.

Usage: ``python benchmarks/scale.py [--sizes 100,200,...] [--source synthetic|tinygrad]
[--json]``; ``--one SOURCE N`` runs one size in this process and prints its figures as
JSON (what the table's child processes do).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

__all__ = ["SIZES", "tinygrad_kernel", "run_one", "main"]

SIZES = (100, 200, 500, 1000, 2000, 5000, 10000, 20000)


def tinygrad_kernel(target: int) -> Any:
    """The stores of tinygrad's kernel ASTs (``capture_tinygrad.MODELS``, in order) in
    one ``sink``, until it has about ``target`` nodes: the models' kernels hold about
    750 nodes in all, so past that they come again, each copy's loop ranges renumbered
    (distinct loops: distinct nodes, as in a larger program)."""
    from benchmarks.capture_tinygrad import MODELS, _clear_caches
    from eqsat.ir.dtype import dtypes
    from eqsat.ir.ops import Ops
    from eqsat.ir.uop import UOp
    from eqsat.tinygrad import from_tinygrad

    kernels: list[UOp] = []
    for build in MODELS.values():
        _clear_caches()
        kernels += [from_tinygrad(ast) for ast in _kernel_asts(build)]
    stores: list[UOp] = []
    seen: set[int] = set()
    for copy in range(1 + target // 100):
        for k in kernels:
            if copy:
                k = k.substitute({r: r.replace(arg=_renumbered(r.arg, copy))
                                  for r in k.toposort() if r.op is Ops.RANGE})
            stores.extend(k.src if k.op is Ops.SINK else (k,))
            seen.update(id(u) for u in k.toposort())
            if len(seen) >= target:
                return UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, tuple(stores))


def _renumbered(arg: Any, copy: int) -> Any:
    """A range's argument (its id, or ``(id, kind)``) for copy ``copy`` of a kernel."""
    if isinstance(arg, tuple):
        return (arg[0] + 1000 * copy, *arg[1:])
    return arg + 1000 * copy


def _kernel_asts(build: Any) -> list[Any]:
    """tinygrad's kernel ASTs for ``build()``, each at the input of codegen's
    ``"initial symbolic"`` pass."""
    import tinygrad.codegen as cg

    from benchmarks.capture_tinygrad import lower_kernels

    out: list[Any] = []
    real = cg.graph_rewrite

    class _TakenError(Exception):
        pass

    def hook(sink: Any, pm: Any, *a: Any, name: str | None = None, **k: Any) -> Any:
        if name == "initial symbolic":
            out.append(sink)
            raise _TakenError
        return real(sink, pm, *a, name=name, **k)

    cg.graph_rewrite = hook
    try:
        lower_kernels(build, _TakenError)
    finally:
        cg.graph_rewrite = real
    return out


def _graph(source: str, n: int) -> Any:
    if source == "synthetic":
        from benchmarks.stress import kernel_graph
        from eqsat.ir.sexpr import parse

        return parse(kernel_graph(n))
    if source == "tinygrad":
        return tinygrad_kernel(n)
    raise ValueError(f"unknown source {source!r}: synthetic or tinygrad")


def run_one(source: str, n: int) -> dict[str, Any]:
    """One kernel of about ``n`` nodes through both engines, in this process."""
    import eqsat

    g = _graph(source, n)
    eqsat.session_for(None).prepare([g])  # (the one-time build: not timed)
    t = time.perf_counter()
    base = eqsat.optimize(g, engine="baseline", cost_model="reference")
    t_base = time.perf_counter() - t
    t, c = time.perf_counter(), time.process_time()
    r = eqsat.optimize(g, cost_model="reference")
    t_eg, c_eg = time.perf_counter() - t, time.process_time() - c
    return {"source": source, "target": n, "nodes": len(g.toposort()),
            "input": r.input_cost, "baseline": base.cost, "baseline_s": t_base,
            "egraph": r.cost, "egraph_s": t_eg, "egraph_cpu": c_eg,
            "enodes": r.stats.get("enodes"), "parts": len(r.stats.get("parts", ())) or 1,
            "enodes_budget": r.stats.get("enodes_budget"),
            "extracted": r.stats.get("extraction", {}).get("cost"),
            "iterations": r.stats.get("iterations"), "stop": r.stats.get("stop_reason"),
            "gain": r.stats.get("seed", {}).get("gain"),
            "computed": {k: round(v, 3) for k, v in r.stats.get("time", {}).items()
                         if k.startswith("computed.")},
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _child(source: str, n: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--one", source, str(n)],
                         capture_output=True, text=True, timeout=3600)
    if out.returncode:
        return {"source": source, "target": n, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _growth(a: dict[str, Any], b: dict[str, Any], key: str) -> float | None:
    """How much ``key`` (a time) grew from row ``a`` to row ``b`` per doubling of the
    nodes; None when it cannot tell (no larger kernel, a missing or zero time)."""
    if b["nodes"] <= a["nodes"] or not a.get(key) or b.get(key) is None:
        return None
    return (b[key] / a[key]) ** (1 / math.log2(b["nodes"] / a["nodes"]))


def _times(g: float | None) -> str:
    return "" if g is None else f"{g:.2f}x"


def _table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'nodes':>6} {'base cost':>9} {'base s':>7} {'e-graph':>8} {'ratio':>6} "
            f"{'e-g s':>7} {'growth':>6} {'cpu s':>7} {'growth':>6} {'parts':>5} {'e-nodes':>8} "
            f"{'budget':>7} {'it':>3} {'stop':<10} {'RSS MB':>7}")
    lines = [head]
    prev: dict[str, Any] | None = None
    for r in rows:
        if "error" in r:
            lines.append(f"{r['target']:>6} error: {r['error']}")
            continue
        growth, cpu = (_growth(prev, r, k) if prev is not None else None
                       for k in ("egraph_s", "egraph_cpu"))
        ratio = r["egraph"] / r["baseline"] if r["baseline"] else float("nan")
        lines.append(f"{r['nodes']:>6} {r['baseline']:>9.0f} {r['baseline_s']:>7.2f} "
                     f"{r['egraph']:>8.0f} {ratio:>6.3f} {r['egraph_s']:>7.2f} "
                     f"{_times(growth):>6} {r.get('egraph_cpu', math.nan):>7.2f} "
                     f"{_times(cpu):>6} {r.get('parts', 1):>5} {r['enodes']:>8} "
                     f"{r['enodes_budget']:>7} "
                     f"{r['iterations']:>3} {r['stop']:<10} {r['rss_mb']:>7.0f}")
        prev = r
    return "\n".join(lines)


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    ok = [r for r in rows if "error" not in r]
    out = []
    at5k = [r for r in ok if r["target"] == 5000]
    if at5k:
        ratio = at5k[0]["egraph"] / at5k[0]["baseline"]
        out.append(f"5,000 nodes: {ratio:.3f}x the baseline's cost (target <= 0.85): "
                   f"{'met' if ratio <= 0.85 else 'NOT met'}")
    span = [r for r in ok if 1000 <= r["target"] <= 20000]
    for key, what in (("egraph_s", "time"), ("egraph_cpu", "CPU time")):
        steps = [g for a, b in zip(span, span[1:], strict=False)
                 if (g := _growth(a, b, key)) is not None]
        if steps:
            worst = max(steps)
            out.append(f"{what} growth per doubling, 1,000..{span[-1]['target']:,}: at "
                       f"most {worst:.2f}x (target <= 2.2): "
                       f"{'met' if worst <= 2.2 else 'NOT met'}")
    at20k = [r for r in ok if r["target"] == 20000]
    if at20k:
        mb = at20k[0]["rss_mb"]
        out.append(f"20,000 nodes: peak RSS {mb:.0f} MB (target < 1024): "
                   f"{'met' if mb < 1024 else 'NOT met'}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="kernel sizes in nodes, comma-separated")
    ap.add_argument("--source", default="synthetic", choices=("synthetic", "tinygrad"))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--one", nargs=2, metavar=("SOURCE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return 0
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        rows.append(_child(args.source, n))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"kernels ({args.source}), each in a fresh process; reference cost, default "
              "budget")
        print(_table(rows))
        for line in _targets(rows):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
