"""Real tinygrad programs compiled with and without the plug-in (``eqsat.tinygrad.install``).

Each program (matmul; conv2d with padding and stride; pooling; a pad/reshape/permute
chain; cumsum; softmax; gather; a small CNN built with ``tinygrad.nn``; an integer
program with ``//`` and ``%`` by constants) runs on fixed inputs, first as tinygrad
compiles it on its own, then with the plug-in installed (tinygrad's program cache
emptied before each, so every kernel is compiled again). Printed per program, without
-> with the plug-in:

- ``kernels``: the programs tinygrad compiled for it;
- ``div+mod``, ``mul``, ``int ops``: the integer divisions and modulos (C's ``/`` and
  ``%``: ``CDIV``/``CMOD``, and floor ones where a device keeps them), the integer
  multiplications and all integer ALU operations in the generated programs (counted in
  the linearized program tinygrad renders its source from, loop counters included);
- ``compile ms``: the first run's wall time minus the warm run's (scheduling, lowering,
  the plug-in, rendering and the C compiler; tinygrad's on-disk cache of compiled
  sources is off, ``CCACHE=0``, so both sides run the compiler; tinygrad's compile
  worker processes, which ``install`` restarts, are started before the clock on both
  sides);
- ``run ms``: the median wall time of ``--runs`` warm runs (the programs cached).

The outputs are compared bit for bit; a difference is an error (exit status 1).

Usage::

    python benchmarks/tinygrad_models.py [--device CPU|PYTHON] [--programs a,b]
        [--runs 5] [--stage instead|postopt|initial|final] [--engine egraph|baseline]

Without ``--device``: tinygrad's CPU device where it opens (it needs clang), else PYTHON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _tensor() -> Any:
    from tinygrad import Tensor

    return Tensor


def _t(a: np.ndarray, device: str) -> Any:
    return _tensor()(a, device=device)


def _matmul(dev: str) -> Any:
    return _t(_rand(17, 24), device=dev) @ _t(_rand(24, 19, seed=1), device=dev)


def _conv2d(dev: str) -> Any:
    x, w = _t(_rand(2, 3, 11, 13), device=dev), _t(_rand(5, 3, 3, 3, seed=1), device=dev)
    return x.conv2d(w, padding=(1, 2), stride=2)


def _pooling(dev: str) -> Any:
    x = _t(_rand(2, 3, 10, 14), device=dev)
    pooled = x.avg_pool2d(kernel_size=(2, 2))[..., :4, :6]
    return x.max_pool2d(kernel_size=(3, 3), stride=2) + pooled


def _movement(dev: str) -> Any:
    x = _t(_rand(6, 10), device=dev)
    y = x.pad(((1, 2), (0, 3))).reshape(3, 3, 13).permute(2, 0, 1).reshape(13, 9)
    return (y.pad(((0, 0), (2, 1))).reshape(12, 13).permute(1, 0) * 2).contiguous()


def _cumsum(dev: str) -> Any:
    return _t(_rand(5, 37), device=dev).cumsum(axis=1)


def _softmax(dev: str) -> Any:
    return _t(_rand(7, 33), device=dev).softmax(axis=-1)


def _gather(dev: str) -> Any:
    idx = np.random.default_rng(2).integers(0, 9, size=(6, 5)).astype(np.int32)
    return _t(_rand(6, 9), device=dev).gather(1, _t(idx, device=dev))


def _cnn(dev: str) -> Any:
    from tinygrad import nn

    _tensor().manual_seed(0)
    c1, c2 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv2d(4, 8, 3, stride=2)
    fc = nn.Linear(8 * 2 * 2, 10)
    for p in nn.state.get_parameters([c1, c2, fc]):
        p.replace(_t(_rand(*p.shape, seed=p.numel()) * 0.1, device=dev))
    x = _t(_rand(2, 1, 8, 8, seed=3), device=dev)
    x = c1(x).relu().max_pool2d()
    x = c2(x.pad((1, 1, 1, 1))).relu()
    return fc(x.flatten(1)).log_softmax()


def _integer(dev: str) -> Any:
    from tinygrad import dtypes

    x = _t(np.arange(-100, 140, dtype=np.int32).reshape(4, 6, 10), device=dev)
    y = x.permute(2, 0, 1).reshape(10, 24) + _tensor().arange(24, dtype=dtypes.int32).to(dev)
    return (y // 6) * 3 + y % 8 - (y + 5) // 4 % 3


#: program name -> builder(device) -> the output tensor (not yet realized)
PROGRAMS: dict[str, Callable[[str], Any]] = {
    "matmul": _matmul, "conv2d": _conv2d, "pooling": _pooling, "movement": _movement,
    "cumsum": _cumsum, "softmax": _softmax, "gather": _gather, "cnn": _cnn,
    "integer": _integer,
}


@dataclass
class Side:
    """One program compiled one way: its output, programs and figures."""

    output: np.ndarray
    kernels: int
    ops: Counter
    sources: list[str]
    compile_ms: float
    run_ms: float


def program_ops(prg: Any) -> Counter:
    """Integer ops of one compiled tinygrad PROGRAM: ``divmod``, ``mul``, ``all``."""
    from tinygrad import dtypes
    from tinygrad.uop.ops import GroupOp, Ops

    div = {Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD}
    out: Counter = Counter()
    lin = next(s for s in prg.src if s.op is Ops.LINEAR)
    for u in lin.src:
        if u.op in GroupOp.ALU and dtypes.is_int(u.dtype):
            out["all"] += 1
            out["divmod"] += u.op in div
            out["mul"] += u.op is Ops.MUL
    return out


def program_source(prg: Any) -> str:
    """The source tinygrad rendered for one compiled PROGRAM."""
    from tinygrad.uop.ops import Ops

    return next((s.arg for s in prg.src if s.op is Ops.SOURCE), "")


def run_side(name: str, device: str, runs: int = 5) -> Side:
    """Run program ``name`` on ``device`` as tinygrad is set up now (plug-in or not);
    ``runs=0``: the first run only (no times)."""
    import tinygrad.codegen as cg
    from tinygrad.helpers import Context

    build = PROGRAMS[name]
    cg.to_program_cache.clear()
    with Context(DEV=device):  # the default device too (where tinygrad.nn puts weights)
        t0 = time.perf_counter()
        out = build(device).numpy()
        first = time.perf_counter() - t0
        progs = list(cg.to_program_cache.values())
        warm = []
        for _ in range(runs):
            t0 = time.perf_counter()
            build(device).numpy()
            warm.append(time.perf_counter() - t0)
    run = statistics.median(warm) if warm else 0.0
    ops = sum((program_ops(p) for p in progs), Counter())
    return Side(out, len(progs), ops, [program_source(p) for p in progs],
                max(0.0, first - run) * 1e3 if warm else 0.0, run * 1e3)


def start_workers() -> None:
    """Start tinygrad's compile worker processes now (``install`` and ``uninstall``
    restart them), so that their start-up is not counted as compile time."""
    import tinygrad.engine.worker as tw
    from tinygrad.helpers import PARALLEL

    pool = tw.get_worker_pool()
    if pool is not None:
        pool.map(abs, range(4 * PARALLEL.value), chunksize=1)


def compare(name: str, device: str, runs: int = 5, **options: Any) -> tuple[Side, Side]:
    """Program ``name`` without, then with the plug-in (``options`` to ``install``)."""
    from eqsat.tinygrad_plugin import optimizing

    if runs:
        start_workers()
    plain = run_side(name, device, runs)
    with optimizing(**options):
        if runs:
            start_workers()
        plug = run_side(name, device, runs)
    return plain, plug


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def row(name: str, plain: Side, plug: Side) -> str:
    def pair(a: float, b: float, fmt: str = "d") -> str:
        return f"{a:{fmt}}->{b:{fmt}}"

    return (f"{name:<9} {pair(plain.kernels, plug.kernels):>7} "
            f"{pair(plain.ops['divmod'], plug.ops['divmod']):>8} "
            f"{pair(plain.ops['mul'], plug.ops['mul']):>9} "
            f"{pair(plain.ops['all'], plug.ops['all']):>11} "
            f"{pair(plain.compile_ms, plug.compile_ms, '.0f'):>11} "
            f"{pair(plain.run_ms, plug.run_ms, '.2f'):>13} "
            f"{'yes' if identical(plain.output, plug.output) else 'NO'}")


HEADER = (f"{'program':<9} {'kernels':>7} {'div+mod':>8} {'mul':>9} {'int ops':>11} "
          f"{'compile ms':>11} {'run ms':>13} bit-identical")


def main(argv: list[str] | None = None) -> int:
    from eqsat.tinygrad_plugin import STAGES, usable_device

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="CPU or PYTHON (default: CPU if usable)")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stage", default="instead", choices=sorted(STAGES))
    ap.add_argument("--engine", default="egraph", choices=["egraph", "baseline"])
    args = ap.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    bad = [n for n in names if n not in PROGRAMS]
    if bad:
        ap.error(f"unknown program(s) {', '.join(bad)}; choose from {', '.join(PROGRAMS)}")
    os.environ.setdefault("CCACHE", "0")  # read when tinygrad is first imported
    device = args.device or usable_device()
    # one-time set-ups (tinygrad's, the e-graph's warm session) outside the table
    compare("softmax", device, runs=0, engine=args.engine, stage=args.stage)
    print(f"tinygrad device {device}; plug-in: engine {args.engine}, stage {args.stage}; "
          "each cell: without -> with the plug-in")
    print(HEADER)
    differ = 0
    for name in names:
        plain, plug = compare(name, device, args.runs, engine=args.engine, stage=args.stage)
        differ += not identical(plain.output, plug.output)
        print(row(name, plain, plug), flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
