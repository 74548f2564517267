"""Kernel benchmark: the C of the unoptimized graph against the C of the optimized graph.

For every builder in ``workloads.BUILDERS`` (its ``bench`` case) and a
few loop variants, the kernel is lowered and compiled twice -- as built, and
after ``eqsat.optimize`` -- and both run on the same inputs. Printed per kernel:

- ``unopt ms`` / ``opt ms``: median wall time of ``--runs`` calls (after a warm-up;
  the two kernels' runs interleaved, so both see the same machine load);
- ``div g``: idiv+mod nodes of index dtype in the graph that is lowered
  (unoptimized -> optimized);
- ``div C``: ``/`` and ``%`` operators in the kernel's C when emitted with
  ``Target(fast_div=False)`` (constant divisions kept as C divisions; powers of
  two still become shifts and masks); the timed C is the default target's;
- ``opt s``: time the optimizer took (``eqsat.optimize``);
- for copy-like kernels (permute, pad, shrink, flip, ...; at least 16 MiB):
  ``GB/s`` of the optimized kernel, counting one read and one write per output
  element, next to a numpy copy (``np.copyto``) of the same number of bytes
  measured in the same run, interleaved with the kernel's runs, and the ratio
  (target >= 50 %, goal 80 %). Every timed call starts from a cold cache (64 MiB
  streamed before it), so no run profits from the previous one's cached data.

Every result is checked against the numpy reference before it is timed. The
C is compiled with ``lowering.compile.CFLAGS`` (``cc -O2 -shared -fPIC -fwrapv``,
no ``-march``) for the default ``Target()``; both are printed with the table,
and so is every row's loop schedule (``loops``; ``"auto"`` resolved by
``workloads.auto_tiling``).

Usage::

    python3 benchmarks/kernels.py [--engine egraph|baseline] [--runs 7]
        [--kernels permute,pad,...] [--quick] [--clock wall|cpu]

``--clock cpu`` times every call by the CPU time of the calling thread
(``time.thread_time``) instead of wall time: on a loaded machine a call that
is descheduled part-way is not charged for the wait (a long call is more
likely to be, which biases wall-time ratios against slow kernels). Both
the kernels and numpy's copy run on the calling thread, so both are timed alike.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# run as a script, sys.path[0] is benchmarks/, whose extraction.py would shadow the
# extraction package: look up modules from the repository root instead
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from eqsat.ir.ops import Ops  # noqa: E402
from lowering import Target, compile_kernel, lower_graph  # noqa: E402
from lowering.compile import CFLAGS  # noqa: E402
from workloads import BUILDERS, BuiltKernel, auto_tiling, make  # noqa: E402

PLAIN_C = Target(fast_div=False)

# (label, builder, parameter overrides of the bench case): loop variants worth a row
VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    # the bench permute and copy run loops="auto" (auto_tiling: a 4x4 register tile, panels
    # of 16 input columns, the inner loop along the output rows; the C emitter makes the tile
    # 4 vector loads, 8 shuffles and 4 streaming vector stores). permute/scalar: the same
    # loops as scalar C (Target(vectorize=False)); the others: the schedules it replaced:
    # one loop per output axis (strided reads), 2-D cache blocking without a register tile
    # (64x16, the best scalar tile of an earlier sweep), and one flat loop (divisions)
    ("permute/scalar", "permute", {"target": Target(vectorize=False)}),
    ("permute/nd", "permute", {"shape": (2080, 2112), "loops": "nd"}),
    ("permute/t64x16", "permute", {"shape": (2080, 2112), "loops": (64, 16)}),
    ("permute/flat", "permute", {"shape": (2080, 2112), "loops": "flat"}),
    ("copy/nd", "copy", {"loops": "nd"}),
    ("pad/flat", "pad", {"loops": "flat"}),
    # the pad's loops kept whole: every load gated (Target.split_gates=False)
    ("pad/nosplit", "pad", {"target": Target(split_gates=False)}),
    # the padded transpose (its register tile's row loads gated as a whole) with the row
    # loads prefetched 16 iterations ahead instead of the default 8
    ("copy/prefetch16", "copy", {"target": Target(prefetch=16)}),
    ("reshape/flat", "reshape", {"loops": "flat"}),
]


@dataclass
class Row:
    label: str
    shape: str
    unopt_ms: float
    opt_ms: float
    div_graph: tuple[int, int]
    div_c: tuple[int, int]
    opt_s: float
    gbps: float | None = None
    numpy_gbps: float | None = None
    ok: bool = True
    loops: str = "nd"


def c_divisions(src: str) -> int:
    """``/`` and ``%`` operators in the kernel function of a C source (comments and
    preprocessor lines dropped)."""
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    body = src[src.find("void kernel("):]
    return body.count("/") + body.count("%")


def graph_divisions(graph) -> int:
    return sum(1 for u in graph.toposort() if u.op in (Ops.IDIV, Ops.MOD) and u.dtype.is_index)


def close(k: BuiltKernel, got: np.ndarray, want: np.ndarray) -> bool:
    """``got`` agrees with numpy's ``want``: equal for ints, to 1e-4 for floats (the
    references sum floats in f64)."""
    if k.dtype.is_float:
        return bool(np.allclose(got, want, rtol=1e-4, atol=1e-4))
    return bool(np.array_equal(got, want))


_SCRATCH = np.zeros(16 * 1024 * 1024, np.float32)  # 64 MiB, twice the L3 of the CI machine


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
_clock = CLOCKS["wall"]


def _timed(fn) -> float:
    """Wall time of one call, from a cold cache (every run streams 64 MiB first, so the
    kernels and numpy all start from memory, whatever ran before)."""
    np.add(_SCRATCH, 1.0, out=_SCRATCH)
    t = _clock()
    fn()
    return _clock() - t


def schedule(k: BuiltKernel) -> str:
    """The kernel's loop schedule as built (``"auto"`` resolved)."""
    loops = k.loops
    if loops == "auto" and k.spec.copy_like and k.views:
        return f"auto: {auto_tiling(k.views[0][1], k.np_dtype.itemsize)!r}"
    return repr(loops)


def bench(label: str, k: BuiltKernel, engine: str, runs: int,
          target: Target | None = None) -> Row:
    ins = k.random_inputs(0)
    want = k.reference(*ins)
    built = []
    for opt in (False, engine):
        ck = compile_kernel(k.graph, optimize=opt, target=target)
        bufs = k.buffers(ins)
        ck(*bufs)  # also the warm-up: page faults, first call
        ok = close(k, bufs[0].reshape(k.output_shape), want)
        plain = lower_graph(ck.graph, optimize=False, target=PLAIN_C)
        opt_s = ck.lowered.stats.get("time", {}).get("total", 0.0)
        built.append((ck, bufs, ok, opt_s, graph_divisions(ck.graph),
                      c_divisions(plain.c_source)))
    (ck0, _, ok0, _, dg0, dc0), (ck1, b1, ok1, opt_s, dg1, dc1) = built
    copy_like = k.spec.copy_like
    nbytes = 2 * math.prod(k.output_shape) * k.np_dtype.itemsize
    src = np.random.default_rng(1).random(math.prod(k.output_shape)).astype(k.np_dtype)
    dst = src.copy()
    t_un, t_opt, t_np = [], [], []
    for _ in range(runs):  # interleaved, so all three see the same machine load
        t_un.append(_timed(lambda: ck0(*b1)))  # the same arrays for both (both verified)
        t_opt.append(_timed(lambda: ck1(*b1)))
        if copy_like:
            t_np.append(_timed(lambda: np.copyto(dst, src)))
    row = Row(label, "x".join(map(str, k.input_shapes[0])), statistics.median(t_un) * 1e3,
              statistics.median(t_opt) * 1e3, (dg0, dg1), (dc0, dc1), opt_s, ok=ok0 and ok1,
              loops=schedule(k) + (f", {target!r}" if target is not None else ""))
    if copy_like:
        row.gbps = nbytes / statistics.median(t_opt) / 1e9
        row.numpy_gbps = nbytes / statistics.median(t_np) / 1e9
    return row


def _fmt(rows: list[Row], engine: str) -> str:
    head = (f"{'kernel':<15} {'input':<14} {'unopt ms':>9} {'opt ms':>8} {'speedup':>7} "
            f"{'div g':>9} {'div C':>8} {'opt s':>6} {'GB/s':>6} {'numpy':>6} {'%np':>5} ok")
    clock = next(k for k, v in CLOCKS.items() if v is _clock)
    lines = [f"optimizer: {engine}; C: cc {' '.join(CFLAGS)}, {Target()!r}; times are medians "
             f"({clock} clock)",
             head, "-" * len(head)]
    for r in rows:
        bw = (f"{r.gbps:6.2f} {r.numpy_gbps:6.2f} {100 * r.gbps / r.numpy_gbps:4.0f}%"
              if r.gbps is not None else f"{'':6} {'':6} {'':5}")
        lines.append(
            f"{r.label:<15} {r.shape:<14} {r.unopt_ms:9.2f} {r.opt_ms:8.2f} "
            f"{r.unopt_ms / r.opt_ms:6.2f}x {r.div_graph[0]:>4}->{r.div_graph[1]:<3} "
            f"{r.div_c[0]:>3}->{r.div_c[1]:<3} {r.opt_s:6.2f} {bw} {'yes' if r.ok else 'NO'}")
    lines.append("loops: " + "; ".join(f"{r.label} {r.loops}" for r in rows if r.loops != "'nd'"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="egraph", choices=["egraph", "baseline"])
    ap.add_argument("--runs", type=int, default=9, help="timed runs per kernel (median)")
    ap.add_argument("--kernels", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--quick", action="store_true", help="3 runs, no loop variants")
    ap.add_argument("--clock", default="wall", choices=list(CLOCKS),
                    help="wall time, or the calling thread's CPU time")
    args = ap.parse_args(argv)
    runs = 3 if args.quick else max(1, args.runs)
    global _clock
    _clock = CLOCKS[args.clock]
    todo: list[tuple[str, str, dict[str, Any]]] = [(n, n, {}) for n in BUILDERS]
    if not args.quick:
        todo += VARIANTS
    if args.kernels:
        want = set(args.kernels.split(","))
        unknown = want - {label for label, _, _ in todo}
        if unknown:
            ap.error(f"unknown kernels {sorted(unknown)}; choose from "
                     f"{', '.join(label for label, _, _ in todo)}")
        todo = [t for t in todo if t[0] in want]
    if args.engine == "egraph":  # build the engine's session first, as the CLI does: every
        try:                     # kernel's optimizer run then gets its whole time budget
            from eqsat.engines.egraph import session_for
            session_for(None).prepare()
        except ImportError:
            pass
    from eqsat.progress import progress

    rows, failed = [], []
    bar = progress(total=len(todo), desc="kernels", unit="kernel")
    for label, name, extra in todo:
        extra = dict(extra)
        target = extra.pop("target", None)
        k = make(name, **{**BUILDERS[name].bench, **extra})
        try:
            rows.append(bench(label, k, args.engine, runs, target))
        except Exception as e:  # report and go on: one broken kernel must not hide the rest
            failed.append(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        bar.update(1)
        bar.set_postfix_str(label)
    bar.close()
    print(_fmt(rows, args.engine))
    for f in failed:
        print(f"FAILED {f}")
    return 0 if all(r.ok for r in rows) and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
