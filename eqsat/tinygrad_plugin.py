"""The plug-in: tinygrad 0.14's code generation simplifies every kernel's index
arithmetic with :func:`eqsat.optimize`.

``install(engine="egraph", **optimize_options)`` hooks tinygrad, in this process and
in the compile worker processes it spawns from then on; ``uninstall()`` undoes it;
``with optimizing(**options):`` does both around a block.

Where it hooks in. tinygrad lowers a kernel (``tinygrad.codegen.full_rewrite_to_sink``)
as a sequence of named ``graph_rewrite`` passes. The plug-in runs at the pass its
``stage`` names (docs/perf.md, "The tinygrad plug-in", has the figures behind the
default):

* ``"instead"`` (default): on the input of ``postopt symbolic``, tinygrad's symbolic
  pass over the scheduled kernel (after its loop optimizations, before upcast/unroll
  ranges are expanded into one expression per lane: each index expression is seen
  once), in the place of tinygrad's own simplification of the index arithmetic there
  (its pass then finds it simplified and cleans up around it);
* ``"postopt"``: the same place, after tinygrad's pass;
* ``"initial"``: after ``initial symbolic``, before tinygrad's loop optimizations;
* ``"final"``: after ``extra symbolic``, the last pass on ``weakint`` index arithmetic
  before tinygrad lowers index dtypes and decomposes division (one expression per lane).

tinygrad's own passes still run (its ``sym`` also simplifies floats, loads and gates, and
``pm_simplify_ranges`` relies on it), so the plug-in works on what they leave.

What it changes. Each maximal ``weakint`` arithmetic subgraph of the kernel (the index
of an ``INDEX``, an operand of a comparison, a cast to a float, a range's end) that holds
a division or a modulo (the others are sums and products, which tinygrad's symbolic
already folds: docs/perf.md) is converted (:func:`eqsat.tinygrad.from_tinygrad`),
optimized, converted back onto the kernel's own ranges and variables, and substituted
only when (1) it is cheaper under the run's cost model and (2) the back-converted
expression is checked equal to the input by :func:`eqsat.ir.equiv.check_equivalent`
(every point of a small domain, else the corners plus sampled points). Only integer
index values change spelling, never their value: loads read the same elements and
every float op is tinygrad's own, so a program's output is bit-identical to tinygrad's.
Any failure (an op the bridge does not carry, an optimizer error, a failed check) keeps
tinygrad's own expression, with a logged warning for anything but an op the bridge does
not carry.

Reaching the workers. tinygrad compiles kernels in a pool of spawned processes
(``tinygrad.engine.worker``, ``PARALLEL`` workers) whose initializer is the module
attribute ``_init_worker``. ``install`` replaces it by one that also installs the
plug-in, with the same options, in each worker, and closes any pool already running so
the next compilation starts one that has it; ``uninstall`` restores it and closes the
pool again. tinygrad's in-memory program cache (``to_program_cache``, keyed by the
kernel and tinygrad's settings, not by the plug-in) is emptied on both, so a kernel
compiled before is compiled again the new way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.ops import GroupOp

__all__ = ["install", "uninstall", "optimizing", "installed", "simplify_kernel", "STAGES",
           "usable_device"]

log = logging.getLogger(__name__)

#: stage name -> (the tinygrad pass, ``graph_rewrite(name=...)``, the plug-in runs at;
#: whether it runs after that pass or before it, on the pass's input)
STAGES = {"initial": ("initial symbolic", "after"), "postopt": ("postopt symbolic", "after"),
          "instead": ("postopt symbolic", "before"), "final": ("extra symbolic", "after")}

#: remembered simplifications per process: a tinygrad UOp is interned, kernels repeat
#: index expressions, and lowering the same kernel twice reaches the same expressions
_MEMO_SIZE = 4096


@dataclass(frozen=True)
class _Settings:
    """What ``install`` was called with (picklable: it travels to the workers)."""

    engine: str = "egraph"
    stage: str = "instead"
    samples: int = 2000
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    #: the options as text: what tells two settings apart (``options`` may hold lists)
    spelled: str = ""

    def kwargs(self) -> dict[str, Any]:
        return {"engine": self.engine, "stage": self.stage, "samples": self.samples,
                **self.options}


_active: _Settings | None = None
_saved: dict[str, Any] = {}
_memo: dict[Any, Any] = {}


def installed() -> dict[str, Any] | None:
    """The options of the plug-in installed in this process, or None."""
    return None if _active is None else _active.kwargs()


def _settings(engine: str, stage: str, samples: int, options: dict[str, Any]) -> _Settings:
    from eqsat.api import ENGINES, Budget

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    known = {"rulesets", "cost_model", "budget"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}: eqsat.optimize takes "
                        f"{', '.join(sorted(known))}")
    budget = options.get("budget")
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be an eqsat.Budget, got {type(budget).__name__}")
    return _Settings(engine, stage, samples, dict(options), repr(sorted(options.items())))


def install(engine: str = "egraph", *, stage: str = "instead", samples: int = 2000,
            **optimize_options: Any) -> None:
    """Make tinygrad's code generation, in this process and its compile workers,
    simplify every kernel's index arithmetic with ``eqsat.optimize(engine=engine,
    **optimize_options)`` (``rulesets``, ``cost_model``, ``budget``).

    ``stage`` picks the tinygrad pass it runs at (:data:`STAGES`); ``samples``: the
    sampled points of the equivalence check on domains too large to check whole.
    Installing again replaces the options. Raises ``ValueError``/``TypeError`` for an
    unknown engine, stage or option, and ``ImportError`` without tinygrad.
    """
    settings = _settings(engine, stage, samples, optimize_options)
    _install_here(settings)
    import tinygrad.engine.worker as tw

    tw._init_worker = functools.partial(_init_worker, settings.kwargs())
    tw.terminate_worker_pool()


def uninstall() -> None:
    """Undo :func:`install`: tinygrad compiles as it does on its own (a no-op when the
    plug-in is not installed)."""
    global _active
    if not _saved:
        return
    import tinygrad.codegen as cg
    import tinygrad.engine.worker as tw

    cg.graph_rewrite = _saved.pop("graph_rewrite")
    tw._init_worker = _saved.pop("_init_worker")
    _active = None
    _memo.clear()
    cg.to_program_cache.clear()
    tw.terminate_worker_pool()


@contextlib.contextmanager
def optimizing(engine: str = "egraph", **options: Any) -> Iterator[None]:
    """``install(engine, **options)`` for the block, then back to what was installed
    before it (nothing, or the previous options)."""
    before = installed()
    install(engine, **options)
    try:
        yield
    finally:
        uninstall()
        if before is not None:
            install(**before)


def _install_here(settings: _Settings) -> None:
    """Hook this process's tinygrad (not its workers)."""
    global _active
    import tinygrad.codegen as cg
    import tinygrad.engine.worker as tw

    if not _saved:
        _saved["graph_rewrite"] = cg.graph_rewrite
        _saved["_init_worker"] = tw._init_worker
    cg.graph_rewrite = _graph_rewrite
    _active = settings
    _memo.clear()
    cg.to_program_cache.clear()


def _init_worker(kwargs: dict[str, Any]) -> None:
    """A compile worker's initializer: tinygrad's own, then the plug-in."""
    import tinygrad.engine.worker as tw

    tw._init_worker()
    kwargs = dict(kwargs)
    engine, stage, samples = kwargs.pop("engine"), kwargs.pop("stage"), kwargs.pop("samples")
    _install_here(_settings(engine, stage, samples, kwargs))


def _graph_rewrite(sink: Any, pm: Any, *args: Any, **kwargs: Any) -> Any:
    """tinygrad's ``graph_rewrite``, with the plug-in before or after the pass its stage
    names."""
    settings = _active
    at = STAGES[settings.stage] if settings is not None else None
    if at is not None and at == (kwargs.get("name"), "before"):
        sink = _simplify(sink, settings)
    out = _saved["graph_rewrite"](sink, pm, *args, **kwargs)
    if at is not None and at == (kwargs.get("name"), "after"):
        out = _simplify(out, settings)
    return out


def simplify_kernel(sink: Any, engine: str = "egraph", *, samples: int = 2000,
                    **optimize_options: Any) -> Any:
    """A tinygrad kernel graph with its index arithmetic simplified as the plug-in does
    it (without installing anything); on any failure, ``sink`` itself."""
    return _simplify(sink, _settings(engine, "instead", samples, optimize_options))


def _simplify(sink: Any, settings: _Settings) -> Any:
    try:
        subs = {}
        for root in _index_roots(sink):
            new = _simplify_root(root, settings)
            if new is not None:
                subs[root] = new
        return sink.substitute(subs) if subs else sink
    except Exception as e:  # the plug-in must never break tinygrad's compilation
        log.warning("eqsat plug-in: kernel kept as tinygrad made it (%s: %s)",
                    type(e).__name__, e)
        return sink


def _index_roots(sink: Any) -> list[Any]:
    """The maximal ``weakint`` arithmetic subgraphs of ``sink``, in a fixed order."""
    from tinygrad.dtype import dtypes as tdt
    from tinygrad.uop.ops import GroupOp

    def arith(u: Any) -> bool:
        return u.dtype == tdt.weakint and u.op in GroupOp.ALU

    roots: dict[Any, None] = {}
    for u in sink.toposort():
        if arith(u):
            continue
        for s in u.src:
            if arith(s):
                roots.setdefault(s, None)
    return list(roots)


def _simplify_root(root: Any, settings: _Settings) -> Any:
    """The optimized, checked replacement of one index expression, or None."""
    key = (root, settings)
    if key in _memo:
        return _memo[key]
    new = _optimize_checked(root, settings)
    if len(_memo) >= _MEMO_SIZE:
        _memo.clear()
    _memo[key] = new
    return new


def _optimize_checked(root: Any, settings: _Settings) -> Any:
    from eqsat.api import optimize
    from eqsat.ir.equiv import check_equivalent
    from eqsat.tinygrad import TinygradError, from_tinygrad, to_tinygrad

    try:
        graph = from_tinygrad(root)
    except TinygradError as e:  # an op the bridge does not carry: tinygrad's own stays
        log.debug("eqsat plug-in: %s", e)
        return None
    if not any(u.op in GroupOp.IntDiv for u in graph.toposort()):
        return None  # sums and products: tinygrad's symbolic already folds them
    try:
        res = optimize(graph, engine=settings.engine, **settings.options)
        if not res.cost < res.input_cost:
            return None
        new = to_tinygrad(res.graph, like=root)
        if new.dtype != root.dtype:
            raise ValueError(f"the result has dtype {new.dtype}, the input {root.dtype}")
        eq = check_equivalent(graph, from_tinygrad(new), samples=settings.samples)
        if not eq:
            raise ValueError(f"the result differs from the input: {eq.reason}")
        return new
    except Exception as e:
        log.warning("eqsat plug-in: index expression kept as tinygrad made it (%s: %s)",
                    type(e).__name__, e)
        return None


def usable_device() -> str:
    """The tinygrad device to run on here: ``CPU`` when tinygrad can open it (it
    compiles with clang), else ``PYTHON`` (tinygrad's interpreter: same kernels and
    results, slower)."""
    from tinygrad import Device

    try:
        Device["CPU"]
        return "CPU"
    except Exception:
        return "PYTHON"
