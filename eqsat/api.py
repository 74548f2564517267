"""The public entry point: ``eqsat.optimize(graph, ...) -> Result``."""

from __future__ import annotations

import logging
import math
import numbers
import time
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.uop import UOp

__all__ = ["Budget", "Result", "Explanation", "optimize", "optimize_many", "ENGINES", "CHUNK"]

log = logging.getLogger(__name__)

#: graphs a task carries to a worker by default (``optimize_many(executor=)``; ``eqsat
#: batch --chunk``: at most, smaller tasks toward the end; the benchmarks): a task's
#: fixed cost (its trip to the worker and back) is shared by more graphs the larger the
#: chunk, and a worker that dies costs a rerun of at most that many. Each graph is
#: optimized on its own: no result depends on the chunk (docs/perf.md, "One answer per
#: case in a batch")
CHUNK = 64


@dataclass(frozen=True)
class Budget:
    """Limits of one e-graph run; whichever is reached first stops it
    (``stats["stop_reason"]`` names it).

    ``iterations``: rewrite rounds. ``enodes``: e-graph size; the rules whose matches
    multiply run only when what they may make (a bound from the e-graph's rows, or
    else a count of their matches) fits half the room left, and are left out when it
    does not, and the first step that takes the e-graph past this
    number ends the run (its result: the e-graph as it was before that step). None
    (the default) grows with the input: 20,000 e-nodes, or 4 per unique node of the
    graph when that is more (a function of the graph alone); the e-graph engine
    resolves it when a run starts (``Limits.for_roots``, in ``Run.__init__``) and
    reports it in ``stats["enodes_budget"]``. A number is the budget, whatever the size.
    ``seconds``: a hard safety limit on the wall time of the whole optimize call,
    checked between units of work (plus, on a thread's first call, the one-time build
    of its warm session: ``eqsat.session_for(None)`` builds it ahead); the default is
    far above what the work budgets (``iterations``, ``enodes``) let a run do, so they,
    never the clock, decide the result. The e-graph's start, the baseline's rewrite,
    always completes (the result holds it whatever stops the run), so a call takes at
    least the baseline's time; ``engine="baseline"`` stops its rewrite at ``seconds``
    and returns the input (``stop_reason="time"``). ``memory``: bytes the run may
    add to the process's resident set, checked between the e-graph's steps and as the
    baseline's rewrite goes (None: 6 GiB, a quarter of a 24 GB machine running two
    workers; past it in that rewrite, the input is the result). ``stall``: stop early
    (``"stalled"``) after that many rounds in a row that found no term for the roots
    cheaper by more than 1% of their cost while the e-graph grew by at most 10% and
    the last round's computed rewrites added at most 2% more (None: the e-graph
    engine's default, 1; 0: run to saturation or a limit). ``baseline_start``: the run
    starts from the baseline's result as well as the input (False: from the input
    alone, to see what the e-graph's own rules find; the result still costs at most the
    baseline's).

    A run stopped by saturation, a stall, ``iterations`` or ``enodes`` gives the same
    result on every run (under any load, after any earlier call, on any thread); one
    stopped by ``time`` or ``memory`` may not. Whatever stopped it, the e-graph's
    result costs at most the cheaper of the input and the baseline's result (the run
    starts from both).
    A kernel (a ``SINK``) of more than ``PART_NODES`` (3,000) unique nodes runs in parts
    of about equal size, each part a run with this budget (``seconds`` counts for the
    whole call; ``stats["parts"]``; ``eqsat.engines.egraph.parts``).
    ``optimize_many`` gives each of its graphs this budget.
    """

    iterations: int = 12
    enodes: int | None = None
    seconds: float = 300.0
    stall: int | None = None
    memory: int | None = None
    baseline_start: bool = True

    def __post_init__(self) -> None:
        for name in ("iterations", "enodes", "stall", "memory"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
                raise TypeError(f"invalid budget: {name}={v!r} must be an int"
                                f"{'' if name == 'iterations' else ' or None'}")
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, numbers.Real) \
                or not math.isfinite(self.seconds):
            raise TypeError(f"invalid budget: seconds={self.seconds!r} must be a finite number")
        if not isinstance(self.baseline_start, bool):
            raise TypeError(f"invalid budget: baseline_start={self.baseline_start!r} must be "
                            "a bool")
        if self.iterations < 0 or (self.enodes is not None and self.enodes < 1) \
                or not self.seconds > 0 or (self.stall is not None and self.stall < 0) \
                or (self.memory is not None and self.memory < 1):
            raise ValueError(f"invalid budget {self!r}: iterations >= 0, enodes >= 1 (or "
                             "None), seconds > 0, stall >= 0 (or None), memory >= 1 (or None) "
                             "required")


#: the budget of a call given none (frozen: one instance serves every call; the e-graph
#: engine is given None for it, its own default limits, which are the same)
_DEFAULT_BUDGET = Budget()


@dataclass(frozen=True)
class Explanation:
    """What a run did, in a few figures (:meth:`Result.explain`): ``engine``,
    ``stop_reason``, ``iterations``, ``rules`` (rule name -> times it fired, most first),
    ``cost``/``input_cost`` under ``cost_model``, and ``by_op``: the result's cost op by
    op (op name -> (unique nodes, their cost), dearest first). ``str()`` is a short
    report."""

    engine: str
    stop_reason: str | None
    iterations: int
    rules: dict[str, int]
    cost: float
    input_cost: float
    cost_model: str
    by_op: dict[str, tuple[int, float]]

    def __str__(self) -> str:
        lines = [f"engine {self.engine}: stopped {self.stop_reason!s} after "
                 f"{self.iterations} iterations; cost {_num(self.input_cost)} -> "
                 f"{_num(self.cost)} ({self.cost_model})"]
        fired = sum(self.rules.values())
        lines.append(f"rules fired: {fired} times, {len(self.rules)} rules"
                     + (":" if self.rules else ""))
        w = max((len(k) for k in self.rules), default=0)
        lines += [f"  {k:<{w}} {v:>6}" for k, v in self.rules.items()]
        lines.append("cost of the result by op (unique nodes, cost):")
        w = max((len(k) for k in self.by_op), default=0)
        lines += [f"  {k.lower():<{w}} {n:>4} {_num(c):>8}" for k, (n, c) in self.by_op.items()]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


@dataclass
class Result:
    """What optimize returns.

    ``graph`` is the optimized graph, ``cost``/``input_cost`` its cost and the
    input's under the chosen cost model, ``stats`` the run's figures:
    ``engine``, ``iterations``, ``enodes``, ``stop_reason``, ``time`` (seconds
    per phase) and ``matches`` (rule name -> count). ``egraph``: the run's e-graph
    (:class:`~eqsat.engines.egraph.record.EGraphRecord`) when optimize was asked to
    keep it (``keep_egraph=True``), else None.
    """

    graph: UOp
    cost: float
    input_cost: float
    stats: dict[str, Any] = field(default_factory=dict)
    egraph: Any = field(default=None, repr=False, compare=False)
    cost_model: Any = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"Result(cost={self.cost}, input_cost={self.input_cost}, "
                f"stop_reason={self.stats.get('stop_reason')!r}, graph={self.graph!r})")

    def explain(self) -> Explanation:
        """The rules that fired (with counts), why the run stopped, and what the result
        costs op by op under the run's cost model."""
        from extraction import cost_by_op, get_cost_model

        model = get_cost_model(self.cost_model)
        rules = dict(sorted(self.stats.get("matches", {}).items(), key=lambda kv: (-kv[1], kv[0])))
        return Explanation(self.stats.get("engine", "?"), self.stats.get("stop_reason"),
                           int(self.stats.get("iterations", 0)), rules, self.cost,
                           self.input_cost, type(model).__name__,
                           cost_by_op(self.graph, model))

    def egraph_dot(self, max_enodes: int | None = None) -> Any:
        """The run's e-graph as DOT text (a ``str`` a notebook shows as a picture):
        each e-class a cluster labelled with its interval, the e-nodes of the result
        filled (see :meth:`EGraphRecord.to_dot`). Needs ``optimize(...,
        keep_egraph=True)``."""
        if self.egraph is None:
            raise ValueError("this result kept no e-graph: call optimize(..., "
                             "keep_egraph=True) (engine 'egraph')")
        if max_enodes is None:
            return self.egraph.to_dot(self.graph)
        return self.egraph.to_dot(self.graph, max_enodes=max_enodes)


def _run_baseline(graph: UOp, rulesets, cost_model, budget,
                  keep_egraph: bool = False) -> tuple[UOp, dict[str, Any]]:
    from eqsat.engines.baseline import optimize_baseline

    if keep_egraph:
        raise ValueError("keep_egraph: the baseline engine has no e-graph (engine='egraph')")
    return optimize_baseline(graph, rulesets=rulesets, seconds=float(budget.seconds))


def _run_egraph(graph: UOp, rulesets, cost_model, budget,
                keep_egraph: bool = False) -> tuple[UOp, dict[str, Any]]:
    # (``import a.b as x``, not ``from a import b``: a from-import of a package runs
    # importlib's Python code on every call)
    import eqsat.engines.egraph as egraph

    return egraph.optimize_egraph(graph, rulesets=rulesets, cost_model=cost_model,
                                  budget=None if budget is _DEFAULT_BUDGET else budget,
                                  keep_egraph=keep_egraph)


ENGINES = {"baseline": _run_baseline, "egraph": _run_egraph}


def _check_call(engine: Any, rulesets: Any, budget: Any) -> None:
    """A clear error for an argument of the wrong kind, before any work."""
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if rulesets is not None and not isinstance(rulesets, (str, list, tuple)):
        raise TypeError(f"rulesets must be a name, a list of names and rules, or None; "
                        f"got {type(rulesets).__name__}")
    if budget is not None and not isinstance(budget, Budget):
        from eqsat.engines.egraph.schedules import Limits

        if not isinstance(budget, Limits):
            raise TypeError(f"budget must be an eqsat.Budget (or None), got "
                            f"{type(budget).__name__}")


def optimize(graph: UOp, engine: str = "egraph", rulesets: list[Any] | None = None,
             cost_model: Any = None, budget: Budget | None = None,
             keep_egraph: bool = False) -> Result:
    """Optimize ``graph`` with the e-graph engine (default) or the ordered baseline.

    ``rulesets`` names rule sets (``eqsat rules`` lists them; None = the
    engine's default) and may hold rules as objects beside the names (a rule of the
    language, ``rules.lang.rule(...)``, runs in both engines; they come after the named
    sets'); ``cost_model`` is a :class:`extraction.CostModel` or one
    of ``"default"``/``"reference"``; ``budget`` bounds the e-graph run (the baseline
    engine reads its ``seconds``).
    The result is never costlier than the input under the chosen model.
    ``keep_egraph`` (e-graph engine): keep the run's e-graph in ``Result.egraph``
    for :meth:`Result.egraph_dot` and a look inside (a copy of the classes the
    graph reached; a run otherwise drops its e-graph).
    """
    import extraction  # (as in _run_egraph)

    _check_call(engine, rulesets, budget)
    model = extraction.get_cost_model(cost_model)
    budget = budget or _DEFAULT_BUDGET
    t0 = time.perf_counter()
    out, stats = ENGINES[engine](graph, rulesets, model, budget, keep_egraph)
    stats.setdefault("time", {})["total"] = time.perf_counter() - t0
    stats.setdefault("engine", engine)
    kept = stats.pop("egraph", None)
    costs = stats.pop("costs", None)  # (the e-graph engine priced both under this model)
    if costs:
        in_cost, out_cost = costs[0]
    else:
        in_cost = model.graph_cost(graph)
        # (an output that is the input itself, as interned UOps make it, costs what it does)
        out_cost = in_cost if out is graph else model.graph_cost(out)
    if out_cost > in_cost:  # never return something costlier than the input
        out, out_cost = graph, in_cost
        stats["fallback"] = "input was cheaper"
        log.debug("optimize (%s): the result cost %s > the input's %s: the input is returned",
                  engine, out_cost, in_cost)
    if log.isEnabledFor(logging.DEBUG):  # (no call of debug() and its own check)
        log.debug("optimize (%s): cost %s -> %s, stopped: %s, %.3f s", engine, in_cost,
                  out_cost, stats.get("stop_reason"), stats["time"]["total"])
    return Result(out, out_cost, in_cost, stats, kept, model)


def optimize_many(graphs: list[UOp], engine: str = "egraph", rulesets: list[Any] | None = None,
                  cost_model: Any = None, budget: Budget | None = None,
                  keep_egraph: bool = False, executor: Executor | None = None,
                  chunk: int = CHUNK) -> list[Result]:
    """Optimize several graphs; one :class:`Result` each, in order.

    Each graph is optimized on its own, with its own ``budget``: its result is the one
    ``optimize(graph, engine, rulesets, cost_model, budget)`` gives it, byte for byte,
    whatever the other graphs, the executor or the chunk (a thread's warm session serves
    them all; ``keep_egraph``: each result keeps its own run's e-graph).

    ``executor`` (any :class:`concurrent.futures.Executor`: a process or thread pool, a
    Dask ``Client.get_executor()``): the graphs go to it ``chunk`` at a time, one task
    each chunk (a worker keeps its warm session from task to task). Graphs travel as
    ``.uop`` text (as pickled UOps when they have no text form), and the cost model and
    budget are pickled; ``keep_egraph`` is not available then (the e-graphs stay with
    the workers). A task that fails, or an interrupted wait, raises here after the
    tasks not started yet are cancelled.
    """
    from extraction import get_cost_model

    _check_call(engine, rulesets, budget)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"optimize_many: executor must be a concurrent.futures.Executor "
                        f"(or None), got {type(executor).__name__}")
    if isinstance(chunk, bool) or not isinstance(chunk, int):
        raise TypeError(f"optimize_many: chunk must be an int, got {chunk!r}")
    graphs = list(graphs)
    for i, g in enumerate(graphs):
        if not isinstance(g, UOp):
            raise TypeError(f"optimize_many: graph {i} is a {type(g).__name__}, not a UOp")
    model = get_cost_model(cost_model)
    if executor is None:
        return [optimize(g, engine, rulesets, model, budget, keep_egraph) for g in graphs]
    if keep_egraph:
        raise ValueError("optimize_many: keep_egraph with an executor (the e-graphs stay "
                         "with the workers): run without an executor to keep them")
    if chunk < 1:
        raise ValueError(f"optimize_many: chunk must be >= 1, got {chunk}")
    return _on_executor(executor, graphs, engine, rulesets, model, budget, chunk)


def _to_wire(g: UOp) -> str | UOp:
    """A graph as it travels to a worker: its ``.uop`` text (no recursion limit, small),
    or the UOp itself when the text format cannot hold it."""
    from eqsat.ir.sexpr import to_sexpr

    try:
        return to_sexpr(g, compact=True)
    except ValueError:
        return g


def _from_wire(x: str | UOp) -> UOp:
    from eqsat.ir.sexpr import parse

    return parse(x) if isinstance(x, str) else x


def optimize_chunk(items: list[str | UOp], engine: str, rulesets: list[str] | None,
                   cost_model: Any, budget: Budget | None
                   ) -> list[tuple[str | UOp, float, float, dict[str, Any]]]:
    """What a worker runs for :func:`optimize_many` with an executor: one chunk of
    graphs (``.uop`` text or UOps), each through :func:`optimize` here; per graph
    (output as it travels, cost, input cost, stats)."""
    res = [optimize(_from_wire(x), engine, rulesets, cost_model, budget) for x in items]
    return [(_to_wire(r.graph), r.cost, r.input_cost, r.stats) for r in res]


def _on_executor(executor: Executor, graphs: list[UOp], engine: str,
                 rulesets: list[str] | None, model: Any, budget: Budget | None,
                 chunk: int) -> list[Result]:
    """:func:`optimize_many` of ``graphs`` on ``executor``, ``chunk`` graphs a task.
    When a task fails or the wait is interrupted (``KeyboardInterrupt``), the tasks not
    started yet are cancelled before the error goes on: nobody would read them."""
    futures: list[Future] = []
    results = []
    try:
        for i in range(0, len(graphs), chunk):
            futures.append(executor.submit(optimize_chunk,
                                           [_to_wire(g) for g in graphs[i:i + chunk]],
                                           engine, rulesets, model, budget))
        for fut in futures:
            for out, cost, in_cost, stats in fut.result():
                results.append(Result(_from_wire(out), cost, in_cost, stats, None, model))
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    log.debug("optimize_many: %d graphs in %d chunks on %s", len(graphs), len(futures),
              type(executor).__name__)
    return results
