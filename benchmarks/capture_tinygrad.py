"""Capture the index expressions of the kernels tinygrad 0.14 builds, in the corpus format.

For every model of :data:`MODELS` (small tensor programs: convolutions, matmuls,
poolings, reshapes, pads, a tiny CNN), tinygrad schedules the kernels
(``Tensor.schedule_linear`` on the ``NULL`` device: nothing is compiled or run) and
each kernel's AST goes into codegen (``tinygrad.codegen.full_rewrite_to_sink``) up
to its first symbolic pass. Two kinds of expressions are taken, as tinygrad builds
them, before tinygrad simplifies them:

- ``kernel:<model>/reshape``: every output axis of the scheduler's reshape (the
  view merging of ``tinygrad/schedule/indexing.py``: the flat index unflattened with
  ``//`` and ``%``), the input of its ``graph_rewrite(..., name="reshape")``;
- ``kernel:<model>``: the index of every ``INDEX`` of the kernel at the input of
  codegen's ``"initial symbolic"`` pass (padded views as ``where(valid, idx,
  Invalid)``).

Both are taken before any device-specific choice (the optimizations run after that
pass), so the ``NULL`` device gives the same expressions as ``CPU``, without a C
compiler. tinygrad's caches of reshapes and schedules are cleared before each model,
so a model's expressions do not depend on the models before it.

Each expression becomes one JSON line of the corpus (``data/corpus/README.md``):
``id`` (``<model>.r<n>`` / ``<model>.k<n>``), ``source``, ``expr`` (the expression
through ``eqsat.from_tinygrad``), ``tinygrad`` (``graph_rewrite(uop, sym)`` on the
captured tinygrad UOp, brought over the same way), ``tg_us`` (median of ``--repeat``
timings of that call, microseconds, tinygrad's div/mod cache cleared before each),
``cost_in``/``cost_tg`` (reference cost) and ``divmod_in``/``divmod_tg``. Constants
(no range, special or variable) and expressions of cost 0 are left out; an
expression met twice is kept once (the first). Every ``tinygrad`` field is checked
equivalent to its ``expr`` (``eqsat.check_equivalent``); a difference stops the
capture. The order is deterministic: models in :data:`MODELS` order, kernels in
schedule order, expressions as tinygrad meets them.

Usage::

    python benchmarks/capture_tinygrad.py [--out FILE] [--models conv2d,matmul,...]
        [--repeat 5] [--list]

Without ``--out`` the lines go to stdout; a summary goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eqsat.ir.equiv import check_equivalent  # noqa: E402
from eqsat.ir.ops import Ops  # noqa: E402
from eqsat.ir.sexpr import to_sexpr  # noqa: E402
from eqsat.ir.uop import UOp  # noqa: E402
from eqsat.tinygrad import from_tinygrad  # noqa: E402
from extraction import divmod_count, reference_cost  # noqa: E402

__all__ = ["MODELS", "Captured", "capture", "capture_model", "lower_kernels",
           "tinygrad_simplify", "rows", "main"]

DEVICE = "NULL"


def _t(*shape: int) -> Any:
    from tinygrad import Tensor

    return Tensor.empty(*shape, device=DEVICE)


def _tiny_cnn() -> Any:
    x = _t(2, 3, 12, 12)
    h = x.conv2d(_t(8, 3, 3, 3), padding=1).relu().max_pool2d(2)
    h = h.conv2d(_t(8, 8, 3, 3), stride=2, padding=1).relu()
    return h.flatten(1) @ _t(72, 10)


# name -> a tensor program on empty NULL tensors (built when captured)
MODELS: dict[str, Callable[[], Any]] = {
    "conv2d": lambda: _t(1, 3, 8, 8).conv2d(_t(4, 3, 3, 3)),
    "conv2d_pad": lambda: _t(1, 3, 8, 8).conv2d(_t(4, 3, 3, 3), padding=1),
    "conv2d_stride": lambda: _t(1, 3, 9, 9).conv2d(_t(4, 3, 3, 3), stride=2, padding=1),
    "conv2d_dilation": lambda: _t(1, 2, 9, 9).conv2d(_t(3, 2, 3, 3), dilation=2),
    "conv2d_groups": lambda: _t(1, 4, 6, 6).conv2d(_t(4, 2, 3, 3), groups=2, padding=1),
    "conv_transpose2d": lambda: _t(1, 2, 5, 5).conv_transpose2d(_t(2, 3, 3, 3), stride=2),
    "matmul": lambda: _t(8, 12) @ _t(12, 6),
    "matmul_T": lambda: _t(8, 12) @ _t(6, 12).T,
    "bmm": lambda: _t(2, 4, 6) @ _t(2, 6, 5),
    "maxpool2d": lambda: _t(1, 2, 8, 8).max_pool2d(2),
    "maxpool2d_pad": lambda: _t(1, 2, 9, 9).max_pool2d(3, stride=2, padding=1),
    "avgpool2d": lambda: _t(1, 2, 10, 10).avg_pool2d(3, stride=3, ceil_mode=True),
    "reshape_permute": lambda: _t(6, 10).reshape(4, 15).permute(1, 0).contiguous(),
    "reshape_odd": lambda: _t(6, 10).permute(1, 0).reshape(12, 5).contiguous(),
    "pixel_shuffle": lambda: _t(1, 8, 3, 3).reshape(1, 2, 2, 2, 3, 3)
    .permute(0, 1, 4, 2, 5, 3).reshape(1, 2, 6, 6).contiguous(),
    "pad": lambda: _t(5, 7).pad(((1, 2), (3, 0))).contiguous(),
    "pad_reshape": lambda: _t(5, 6).pad(((1, 1), (0, 2))).reshape(8, 7).contiguous(),
    "pad_permute_reshape": lambda: _t(4, 6).permute(1, 0).pad(((0, 2), (1, 1)))
    .reshape(4, 12).contiguous(),
    "shrink_flip": lambda: _t(8, 9)[1:7, ::-1].reshape(3, 18).contiguous(),
    "strided_slice": lambda: _t(10, 12)[::2, 1::3].contiguous(),
    "cat": lambda: _t(3, 4).cat(_t(3, 5), dim=1).reshape(9, 3).contiguous(),
    "cumsum": lambda: _t(4, 9).cumsum(axis=1),
    "tiny_cnn": _tiny_cnn,
}


@dataclass(frozen=True)
class Captured:
    """One captured index expression: the tinygrad UOp and where it came from."""

    model: str
    kind: str  # "reshape" or "kernel"
    uop: Any

    @property
    def source(self) -> str:
        return f"kernel:{self.model}/reshape" if self.kind == "reshape" else f"kernel:{self.model}"


def _clear_caches() -> None:
    import tinygrad.schedule as sched
    import tinygrad.schedule.indexing as ix
    from tinygrad.uop.divandmod import fold_divmod_general

    ix._apply_reshape.cache_clear()
    ix.apply_movement_op.cache_clear()
    sched.schedule_cache.clear()
    fold_divmod_general.cache_clear()


class _StopError(Exception):
    """Raised by the codegen hook once the kernel's index expressions are taken."""


@contextmanager
def _hooks(out: list[tuple[str, Any]]) -> Iterator[None]:
    """Record the inputs of the scheduler's reshape and codegen's first symbolic pass."""
    import tinygrad.codegen as cg
    import tinygrad.schedule.indexing as ix

    real_ix, real_cg = ix.graph_rewrite, cg.graph_rewrite

    def ix_hook(sink: Any, pm: Any, *a: Any, name: str | None = None, **k: Any) -> Any:
        if name == "reshape":
            out.extend(("reshape", e) for e in sink.src)
        return real_ix(sink, pm, *a, name=name, **k)

    def cg_hook(sink: Any, pm: Any, *a: Any, name: str | None = None, **k: Any) -> Any:
        if name == "initial symbolic":
            from tinygrad.uop.ops import Ops as TOps

            for u in sink.toposort():
                if u.op is TOps.INDEX:
                    out.extend(("kernel", e) for e in u.src[1:])
            raise _StopError
        return real_cg(sink, pm, *a, name=name, **k)

    ix.graph_rewrite, cg.graph_rewrite = ix_hook, cg_hook
    try:
        yield
    finally:
        ix.graph_rewrite, cg.graph_rewrite = real_ix, real_cg


def lower_kernels(build: Callable[[], Any], stop: type[Exception]) -> None:
    """Schedule ``build()`` and run codegen (``full_rewrite_to_sink``) on every kernel AST
    in order; ``stop``, raised by a hook on a codegen pass, ends that kernel's lowering."""
    from tinygrad import Device
    from tinygrad.codegen import full_rewrite_to_sink
    from tinygrad.helpers import Context
    from tinygrad.uop.ops import KernelInfo
    from tinygrad.uop.ops import Ops as TOps

    # NULL is the default device too: a pooling makes its window index tensors there, and
    # a machine without clang has no other device tinygrad could pick by itself
    with Context(DEV=DEVICE):
        calls = build().schedule_linear().src
    for call in calls:
        ast = call.src[0] if call.src else None
        if ast is None or ast.op is not TOps.SINK or not isinstance(ast.arg, KernelInfo):
            continue
        try:
            full_rewrite_to_sink(ast, Device[DEVICE].renderer)
        except stop:
            pass


def capture_model(name: str, build: Callable[[], Any]) -> list[Captured]:
    """The index expressions of the kernels tinygrad builds for ``build()``, in order."""
    _clear_caches()
    found: list[tuple[str, Any]] = []
    with _hooks(found):
        lower_kernels(build, _StopError)
    return [Captured(name, kind, u) for kind, u in found]


def capture(models: list[str] | None = None) -> list[Captured]:
    """Every expression of ``models`` (default: all of :data:`MODELS`), in order."""
    names = list(MODELS) if models is None else models
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise KeyError(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    out: list[Captured] = []
    for m in names:
        out.extend(capture_model(m, MODELS[m]))
    return out


def tinygrad_simplify(uop: Any) -> tuple[Any, float]:
    """tinygrad's ``graph_rewrite(uop, sym)`` and its time in seconds, its div/mod cache
    cleared first (the rewrite caches the folds of the index UOps it meets)."""
    from tinygrad.uop.divandmod import fold_divmod_general
    from tinygrad.uop.ops import graph_rewrite
    from tinygrad.uop.symbolic import sym

    fold_divmod_general.cache_clear()
    t0 = time.perf_counter()
    out = graph_rewrite(uop, sym)
    return out, time.perf_counter() - t0


def _keep(g: UOp) -> bool:
    has_leaf = any(u.op in (Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR) for u in g.toposort())
    return has_leaf and reference_cost(g) > 0


def rows(captured: list[Captured], repeat: int = 5, check: bool = True) -> list[dict[str, Any]]:
    """The corpus lines of ``captured`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    counts: dict[tuple[str, str], int] = {}
    for c in captured:
        g = from_tinygrad(c.uop)
        text = to_sexpr(g, compact=True)
        if text in seen or not _keep(g):
            continue
        seen.add(text)
        times, res = [], None
        for _ in range(max(1, repeat)):
            res, dt = tinygrad_simplify(c.uop)
            times.append(dt)
        tg = from_tinygrad(res)
        if check:
            eq = check_equivalent(g, tg)
            if not eq:
                raise AssertionError(f"tinygrad's result differs from the input ({c.source}): "
                                     f"{text} -> {to_sexpr(tg, compact=True)}: {eq!r}")
        key = (c.model, c.kind)
        counts[key] = counts.get(key, 0) + 1
        out.append({
            "id": f"{c.model}.{'r' if c.kind == 'reshape' else 'k'}{counts[key]:03d}",
            "source": c.source, "expr": text, "tinygrad": to_sexpr(tg, compact=True),
            "tg_us": round(statistics.median(times) * 1e6, 1),
            "cost_in": reference_cost(g), "cost_tg": reference_cost(tg),
            "divmod_in": divmod_count(g), "divmod_tg": divmod_count(tg),
        })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the JSONL here (default: stdout)")
    ap.add_argument("--models", help="comma-separated model names (default: all)")
    ap.add_argument("--repeat", type=int, default=5, help="timings per expression (median)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(MODELS))
        return 0
    models = args.models.split(",") if args.models else None
    t0 = time.perf_counter()
    lines = rows(capture(models), repeat=args.repeat)
    text = "".join(json.dumps(r) + "\n" for r in lines)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    n_models = len(models) if models else len(MODELS)
    print(f"{len(lines)} expressions from {n_models} models in {time.perf_counter() - t0:.1f} s; "
          f"cost {sum(r['cost_in'] for r in lines)} in, {sum(r['cost_tg'] for r in lines)} "
          f"after tinygrad; idiv+mod {sum(r['divmod_in'] for r in lines)} in, "
          f"{sum(r['divmod_tg'] for r in lines)} after tinygrad", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
