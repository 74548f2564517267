"""The ``eqsat`` command line (also ``python -m eqsat``).

Subcommands::

    eqsat fmt FILE|-                        parse and print in the .uop text format
    eqsat eval FILE --var x=3 --var R0=5    the value under an assignment
    eqsat cost FILE [--cost reference|default]
    eqsat optimize [engine flags] FILE|-    the optimized graph, as .uop text
    eqsat batch [engine flags] [--jobs N | --scheduler tcp://HOST:PORT] [--chunk N]
                IN.jsonl -o OUT.jsonl
    eqsat compare IN.jsonl [--engines baseline,egraph] [--tinygrad] [--json]
    eqsat rules [--engine egraph|baseline]  the rule sets and their rules
    eqsat lower FILE [--emit c|linear] [--no-optimize]

Errors print one line to stderr (``eqsat: error: FILE:LINE:COL: ...``) and exit
with status 1 (2 for a bad command line), never a traceback; set
``EQSAT_DEBUG=1`` to see the traceback too. :func:`main` takes ``argv`` and
returns the exit status, so tests can call it directly.

``-v``/``--verbose`` (before or after the command; twice for more) shows the
library's log (the ``eqsat`` logger: info, then debug) on stderr; by default only
its warnings. Long commands (``batch``, ``compare``) draw a progress bar on stderr
when it is a terminal, not under CI (``CI=true``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

__all__ = ["main", "build_parser", "CLIError", "batch_results", "run_parallel"]

log = logging.getLogger("eqsat.cli")


class CLIError(Exception):
    """A failure to report as ``eqsat: error: <message>`` (exit status 1)."""


# ---------------------------------------------------------------------------
# helpers
def _read(path: str) -> tuple[str, str]:
    """(text, display name) of FILE, ``-`` meaning standard input."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(), path
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CLIError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _parse_file(path: str):
    from eqsat.ir.sexpr import ParseError, parse

    text, name = _read(path)
    try:
        return parse(text), name
    except ParseError as e:
        raise CLIError(f"{name}:{e.line}:{e.col}: {e.msg}") from None


def _fail(what: str, e: BaseException) -> CLIError:
    """A CLIError for an exception from library code (missing modules named clearly)."""
    if isinstance(e, ModuleNotFoundError):
        return CLIError(f"{what}: not available in this installation "
                        f"(module {e.name!r} is missing)")
    if isinstance(e, ImportError):
        return CLIError(f"{what}: not available in this installation ({e})")
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return CLIError(f"{what}: {type(e).__name__}{': ' + msg if msg else ''}")


def _to_text(uop, compact: bool = False) -> str:
    from eqsat.ir.sexpr import to_sexpr

    try:
        return to_sexpr(uop, compact=compact)
    except ValueError as e:
        raise CLIError(f"cannot print the result: {e}") from None


def _fmt_value(v: Any) -> str:
    """A value of ``evaluate`` as text: ints, floats, true/false, tuples, invalid."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, tuple):
        return "(" + " ".join(_fmt_value(x) for x in v) + ")"
    if repr(v) == "INVALID":
        return "invalid"
    return str(v)


def _literal(text: str) -> int | float | bool:
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse_vars(items: Sequence[str]) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name or not value:
            raise CLIError(f"--var expects NAME=VALUE (e.g. x=3, R0=5), got {item!r}")
        try:
            env[name] = _literal(value)
        except ValueError:
            raise CLIError(f"--var {name}: {value!r} is not an integer, float, "
                           "true or false") from None
    return env


def _budget(args: argparse.Namespace):
    from eqsat.api import Budget

    kw = {k: getattr(args, k) for k in ("iterations", "enodes", "seconds", "stall")
          if getattr(args, k) is not None}
    try:
        return Budget(**kw)
    except ValueError as e:
        raise CLIError(str(e)) from None


def _rulesets(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise CLIError("--rulesets needs at least one name (see 'eqsat rules')")
    return names


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The picklable optimize() options of the engine flags."""
    b = _budget(args)
    return {"engine": args.engine, "cost": args.cost, "rulesets": _rulesets(args.rulesets),
            "budget": (b.iterations, b.enodes, b.seconds, b.stall)}


def _optimize(graph, opts: dict[str, Any]):
    from eqsat.api import Budget, optimize

    return optimize(graph, engine=opts["engine"], rulesets=opts["rulesets"],
                    cost_model=opts["cost"], budget=Budget(*opts["budget"]))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x is None or isinstance(x, bool | int | float | str):
        return x
    return str(x)


# ---------------------------------------------------------------------------
# subcommands
def cmd_fmt(args: argparse.Namespace) -> int:
    graph, _ = _parse_file(args.file)
    print(_to_text(graph, args.compact))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    graph, name = _parse_file(args.file)
    env = _parse_vars(args.var)
    try:
        from eqsat.ir.interp import evaluate
    except ImportError as e:
        raise _fail("eval", e) from None
    try:
        value = evaluate(graph, env)
    except Exception as e:  # EvalError and anything the interpreter raises
        raise CLIError(f"{name}: cannot evaluate: {e}") from None
    print(_fmt_value(value))
    return 0


def _cost(graph, model: str) -> float:
    from extraction import get_cost_model, reference_cost

    if model == "reference":
        return reference_cost(graph)
    return get_cost_model(model).graph_cost(graph)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def cmd_cost(args: argparse.Namespace) -> int:
    graph, name = _parse_file(args.file)
    try:
        c = _cost(graph, args.cost)
    except Exception as e:
        raise _fail(f"{name}: cost ({args.cost})", e) from None
    print(_num(c))
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    graph, name = _parse_file(args.file)
    opts = _options(args)
    try:
        _start_engine(opts, graph)
        res = _optimize(graph, opts)
    except Exception as e:
        raise _fail(f"{name}: optimize (engine {args.engine})", e) from None
    text = _to_text(res.graph, args.compact)
    if args.stats:
        stats = {"cost": res.cost, "input_cost": res.input_cost, **res.stats}
        print(json.dumps(_jsonable(stats), sort_keys=True), file=sys.stderr)
    print(text)
    return 0


def _start_engine(opts: dict[str, Any], graph: Any = None) -> None:
    """Build the e-graph engine's warm session before the run, as part of the
    command's start-up (like the imports): the time budget is then all the
    optimizer's (the first call of a process otherwise spends 0.5-2 s of it on the
    build, ``stats["time"]["setup"]``). ``graph``: the e-graph ``graph`` needs (None:
    every e-graph of the session)."""
    if opts["engine"] == "egraph":
        from eqsat.engines.egraph import session_for

        session_for(opts["rulesets"]).prepare(None if graph is None else [graph])


_WARM: set[str] = set()


def _warm(opts: dict[str, Any]) -> None:
    """Optimize a tiny graph once per process and option set, so that lazy imports and
    rule compilation are not charged to the first case's ``us``."""
    key = json.dumps(opts, sort_keys=True)
    if key in _WARM:
        return
    _WARM.add(key)
    try:
        from eqsat.ir.sexpr import parse

        _start_engine(opts)  # every e-graph of the session: a batch may need both
        _optimize(parse("(add (mod (idiv (var x 0 9) 2) 3) 0)"), opts)
    except BaseException as e:  # noqa: B036 - the real case reports any problem
        if isinstance(e, KeyboardInterrupt):
            raise


def _prepare(job: tuple[int, str, dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """Parse one batch line: ``(result so far, graph)``; the graph is None when the
    result is already an error."""
    lineno, line, _ = job
    out: dict[str, Any] = {"id": None}
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        return {"id": None, "line": lineno, "error": f"bad JSON: {e}"}, None
    if not isinstance(row, dict):
        return {"id": None, "line": lineno,
                "error": "expected a JSON object with id and expr"}, None
    out["id"] = row.get("id")
    for key in ("id", "expr"):
        if key not in row:
            return {**out, "line": lineno, "error": f"missing field {key!r}"}, None
    if not isinstance(row["expr"], str):
        return {**out, "line": lineno, "error": "field 'expr' must be a string"}, None
    try:
        from eqsat.ir.sexpr import ParseError, parse
    except ImportError as e:  # pragma: no cover - broken installation
        return {**out, "line": lineno, "error": str(_fail("batch", e))}, None
    try:
        return out, parse(row["expr"])
    except ParseError as e:
        return {**out, "line": lineno, "error": f"expr:{e.line}:{e.col}: {e.msg}"}, None


def _finish(out: dict[str, Any], graph: Any, us: float) -> dict[str, Any]:
    from eqsat.ir.sexpr import to_sexpr

    return {**out, "out": to_sexpr(graph, compact=True), "cost": _cost(graph, "reference"),
            "us": round(us, 1)}


def _optimize_one(lineno: int, out: dict[str, Any], graph: Any, opts: dict[str, Any],
                  t0: float) -> dict[str, Any]:
    """Optimize one parsed batch case (``t0``: when its time started)."""
    try:
        res = _optimize(graph, opts)
        return _finish(out, res.graph, (time.perf_counter() - t0) * 1e6)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: B036 - engine panics (egglog) are BaseExceptions
        return {**out, "line": lineno,
                "error": str(_fail(f"optimize (engine {opts['engine']})", e))}


def _batch_case(job: tuple[int, str, dict[str, Any]]) -> dict[str, Any]:
    """One line of a batch: parse, optimize, print; errors become an ``error`` field."""
    _warm(job[2])
    t0 = time.perf_counter()
    out, graph = _prepare(job)
    return out if graph is None else _optimize_one(job[0], out, graph, job[2], t0)


def _batch_chunk(jobs: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several lines of a batch optimized together (``eqsat.optimize_many``: one e-graph
    for the chunk); each case's ``us`` is its share of the chunk's time. When the
    chunk's run fails, its cases run one by one, so the error lands on its own case."""
    if not jobs:
        return []
    opts = jobs[0][2]
    _warm(opts)
    t0 = time.perf_counter()
    prepared = [_prepare(j) for j in jobs]
    live = [i for i, (_, g) in enumerate(prepared) if g is not None]
    results: list[dict[str, Any]] = [out for out, _ in prepared]

    def one_by_one(start: float | None = None) -> list[dict[str, Any]]:
        for i in live:
            out, graph = prepared[i]
            results[i] = _optimize_one(jobs[i][0], out, graph, opts,
                                       time.perf_counter() if start is None else start)
        return results

    if len(live) <= 1:
        return one_by_one(t0)
    from eqsat.api import Budget, optimize_many

    try:
        res = optimize_many([prepared[i][1] for i in live], engine=opts["engine"],
                            rulesets=opts["rulesets"], cost_model=opts["cost"],
                            budget=Budget(*opts["budget"]))
        share = (time.perf_counter() - t0) * 1e6 / len(jobs)
        for i, r in zip(live, res, strict=True):
            results[i] = _finish(prepared[i][0], r.graph, share)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: B036 - find the case at fault: one at a time
        log.warning("a chunk of %d cases (lines %d-%d) failed (%s); running them one by one",
                    len(jobs), jobs[0][0], jobs[-1][0], type(e).__name__)
        return one_by_one()
    return results


def _spawn_pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing

    # spawn, not fork: the engines run Rust threads that a fork would not carry over; a
    # worker logs as this process does (the CLI's handler at the eqsat logger's level)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_log_like,
                               initargs=(logging.getLogger("eqsat").getEffectiveLevel(),))


def _log_like(level: int) -> None:
    """A worker process's log: the CLI's handler on the eqsat logger at ``level``."""
    logger = logging.getLogger("eqsat")
    logger.setLevel(level)
    if _LOG_HANDLER not in logger.handlers:
        logger.addHandler(_LOG_HANDLER)


def _died(case: tuple[int, str, dict[str, Any]]) -> dict[str, Any]:
    return {"id": _case_id(case[1]), "line": case[0],
            "error": "the worker process died on this case (crash or out of memory)"}


def run_parallel(cases: list[Any], jobs: int,
                 fn: Callable[[Any], Any] = _batch_case,
                 died: Callable[[Any], Any] = _died) -> Iterator[Any]:
    """``fn`` of every case, in input order; a worker that dies costs its case
    ``died(case)``, not the run.

    After a crash the unfinished cases run one at a time in a fresh pool until the
    one that kills its worker again is found (it gets the error), then in parallel.
    """
    n = len(cases)
    nxt = done = careful_until = 0
    pool = _spawn_pool(jobs)
    window: deque[tuple[int, Future]] = deque()
    try:
        while done < n:
            cap = 1 if done < careful_until else 4 * jobs
            while nxt < n and len(window) < cap:
                window.append((nxt, pool.submit(fn, cases[nxt])))
                nxt += 1
            i, fut = window.popleft()
            try:
                res = fut.result()
            except BrokenProcessPool:
                pool.shutdown(wait=False, cancel_futures=True)
                window.clear()
                pool = _spawn_pool(jobs)
                if done >= careful_until:  # who crashed is unknown: retry one by one
                    careful_until, nxt = nxt, i
                    continue
                res = died(cases[i])
                nxt = i + 1
            yield res
            done = i + 1
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _case_id(line: str) -> Any:
    try:
        row = json.loads(line)
        return row.get("id") if isinstance(row, dict) else None
    except ValueError:
        return None


class _ChunkDied:
    """A chunk whose worker died: its cases are rerun one by one."""

    def __init__(self, chunk: list[tuple[int, str, dict[str, Any]]]):
        self.chunk = chunk


def batch_results(cases: list[tuple[int, str, dict[str, Any]]], jobs: int, chunk: int,
                  fn: Callable[[list], list[dict[str, Any]]] = _batch_chunk
                  ) -> Iterator[dict[str, Any]]:
    """Every case's result, in input order: chunks of ``chunk`` cases (one e-graph each,
    ``fn``) spread over ``jobs`` worker processes. The cases of a chunk whose worker
    dies run again one by one, so only the case at fault gets the error."""
    chunks = [cases[i:i + chunk] for i in range(0, len(cases), chunk)]
    if jobs == 1 or len(chunks) <= 1:
        for ch in chunks:
            yield from fn(ch)
        return
    for res in run_parallel(chunks, jobs, fn, _ChunkDied):
        if isinstance(res, _ChunkDied):
            singles = [[c] for c in res.chunk]
            for one in run_parallel(singles, jobs, fn, _ChunkDied):
                yield from ([_died(one.chunk[0])] if isinstance(one, _ChunkDied) else one)
        else:
            yield from res


def _executor_results(cases: list[tuple[int, str, dict[str, Any]]], executor: Executor,
                      chunk: int, window: int,
                      fn: Callable[[list], list[dict[str, Any]]] = _batch_chunk
                      ) -> Iterator[dict[str, Any]]:
    """Every case's result, in input order, from chunks of ``chunk`` cases run by
    ``fn`` on ``executor`` (any concurrent.futures.Executor: a Dask client's, a pool),
    at most ``window`` chunks in flight. A chunk whose task fails (its worker died,
    the cluster lost it) runs again case by case; a case whose own task fails too gets
    an ``error`` naming the failure."""
    chunks = [cases[i:i + chunk] for i in range(0, len(cases), chunk)]
    pending: deque[tuple[list, Future]] = deque()
    nxt = 0
    while nxt < len(chunks) or pending:
        while nxt < len(chunks) and len(pending) < window:
            pending.append((chunks[nxt], executor.submit(fn, chunks[nxt])))
            nxt += 1
        ch, fut = pending.popleft()
        try:
            yield from fut.result()
            continue
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: B036 - the task failed where it ran
            log.warning("a chunk of %d cases failed on the executor (%s: %s); running its "
                        "cases one by one", len(ch), type(e).__name__, e)
        for case in ch:
            try:
                yield from executor.submit(fn, [case]).result()
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: B036
                yield {"id": _case_id(case[1]), "line": case[0],
                       "error": f"the worker failed on this case ({type(e).__name__}: "
                                f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})"}


def _cluster_executor(address: str) -> tuple[Executor, int, Callable[[], None]]:
    """A Dask distributed client's executor for the scheduler at ``address``, how many
    chunks to keep in flight (twice its workers' threads), and how to close it."""
    try:
        from distributed import Client
    except ImportError:
        raise CLIError("--scheduler needs Dask distributed: pip install "
                       "'uop-eqsat[cluster]'") from None
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as e:
        raise CLIError(f"--scheduler {address}: cannot connect ({e})") from None
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    log.info("batch: Dask scheduler %s, %d workers, %d threads", address,
             len(client.scheduler_info()["workers"]), threads)
    return client.get_executor(pure=False), max(2 * threads, 2), client.close


def cmd_batch(args: argparse.Namespace) -> int:
    opts = _options(args)
    if args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    if args.chunk < 1:
        raise CLIError(f"--chunk must be >= 1, got {args.chunk}")
    text, name = _read(args.input)
    cases = [(n, line, opts) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if args.output == "-":
        fh = sys.stdout
    else:
        try:
            fh = open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as e:
            raise CLIError(f"{args.output}: {e.strerror or e}") from None
    from eqsat.progress import progress

    n_err = 0
    t0 = time.perf_counter()
    close: Callable[[], None] | None = None
    bar = progress(total=len(cases), desc="batch")
    try:
        if args.scheduler:
            executor, window, close = _cluster_executor(args.scheduler)
            results = _executor_results(cases, executor, args.chunk, window)
        else:
            log.info("batch: %d cases in chunks of %d on %d worker processes", len(cases),
                     args.chunk, args.jobs)
            results = batch_results(cases, args.jobs, args.chunk)
        for res in results:
            n_err += "error" in res
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            bar.update(1)
    finally:
        bar.close()
        if close is not None:
            close()
        if fh is not sys.stdout:
            fh.close()
    print(f"eqsat batch: {len(cases)} cases from {name}, {n_err} errors, "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from eqsat import compare
    from eqsat.progress import progress
    from extraction import get_cost_model

    engines = [s.strip() for s in args.engines.split(",") if s.strip()]
    bad = [e for e in engines if e not in compare.ENGINES]
    if bad or not engines:
        raise CLIError(f"--engines: {', '.join(bad) or 'none given'}; choose among "
                       f"{', '.join(compare.ENGINES)}")
    for flag, v in (("--chunk", args.chunk), ("--limit", args.limit or 1)):
        if v < 1:
            raise CLIError(f"{flag} must be >= 1, got {v}")
    if not args.seconds > 0:
        raise CLIError(f"--seconds must be > 0, got {args.seconds}")
    text, name = _read(args.input)
    try:
        rows = compare.rows_of(text.splitlines(), name, args.limit, args.tinygrad)
        get_cost_model(args.cost)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if not rows:
        raise CLIError(f"{name}: no cases")
    log.info("compare: %d cases from %s, engines %s", len(rows), name, ", ".join(engines))
    if "egraph" in engines:
        _start_engine({"engine": "egraph", "rulesets": None})
    try:
        with progress(total=len(rows), desc="compare") as bar:
            cases, _ = compare.run(rows, engines=engines, batch=args.chunk, model=args.cost,
                                   check=args.check, seconds=args.seconds,
                                   on_batch=bar.update)
    except ValueError as e:  # a field that does not parse
        raise CLIError(f"{name}: {e}") from None
    rep = compare.summary(cases, engines, tinygrad=args.tinygrad)
    if args.json:
        rep["per_case"] = compare.case_rows(cases, engines, args.tinygrad)
        print(json.dumps(_jsonable(rep), indent=1, sort_keys=True))
    else:
        print(f"{len(cases)} cases from {name}; reference cost of the outputs (extracted "
              f"under the {args.cost!r} model); e-graph chunk {args.chunk}")
        print("\n".join(compare.table(rep)))
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    try:
        import rules

        sets = rules.list_rulesets()
    except Exception as e:
        raise _fail("rules", e) from None
    if args.engine:
        sets = [s for s in sets if s.engine == args.engine]
    for s in sets:
        print(f"{s.name} ({s.engine}, {len(s.rules)} rules)")
        if not args.brief:
            for r in s.rules:
                print(f"  {r.name}: {getattr(r, 'identity', '')}")
    return 0


def cmd_lower(args: argparse.Namespace) -> int:
    graph, name = _parse_file(args.file)
    try:
        from lowering import lower
    except ImportError as e:
        raise _fail("lower", e) from None
    try:
        if not args.no_optimize:
            _start_engine({"engine": "egraph", "rulesets": None}, graph)
        out = lower(graph, emit=args.emit, optimize=not args.no_optimize)
    except Exception as e:
        raise _fail(f"{name}: lower", e) from None
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


# ---------------------------------------------------------------------------
# the parser
def _engine_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=("egraph", "baseline"), default="egraph",
                   help="equality saturation (default) or the ordered pattern-matcher baseline")
    g.add_argument("--cost", default="default", metavar="MODEL",
                   help="cost model to extract with: default (CPU cycles) or reference "
                        "(the corpus metric)")
    g.add_argument("--rulesets", metavar="A,B,C",
                   help="comma-separated rule sets (see 'eqsat rules'; default: the engine's)")
    g.add_argument("--iterations", type=int, metavar="N", help="e-graph rewrite rounds")
    g.add_argument("--enodes", type=int, metavar="N", help="e-graph size limit")
    g.add_argument("--seconds", type=float, metavar="S", help="wall-time limit per graph")
    g.add_argument("--stall", type=int, metavar="N",
                   help="stop after N rounds without a cheaper result while the e-graph "
                        "barely grows (default 1; 0: never)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``eqsat`` command."""
    p = argparse.ArgumentParser(
        prog="eqsat",
        description="Optimize tensor-compiler UOp graphs (.uop text) by equality saturation.",
        epilog="Examples:\n"
               "  eqsat optimize eqsat/examples/tiled.uop\n"
               "  eqsat optimize --engine baseline --stats - < graph.uop\n"
               "  eqsat eval eqsat/examples/tiled.uop --var R2=1 --var R3=2 --var R4=1\n"
               "  eqsat batch --jobs 2 cases.jsonl -o out.jsonl\n"
               "FILE '-' reads standard input. Set EQSAT_DEBUG=1 for tracebacks.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="show the library's log on stderr (-v info, -vv debug)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("fmt", help="parse a .uop file and print it back (shared nodes bound "
                                   "once)", description="Parse FILE and print it in the "
                                   "canonical .uop layout.")
    s.add_argument("file", metavar="FILE", help=".uop file or - for stdin")
    s.add_argument("--compact", action="store_true", help="print on one line")
    s.set_defaults(func=cmd_fmt)

    s = sub.add_parser("eval", help="evaluate an expression under an assignment",
                       description="Evaluate FILE with the reference interpreter. Keys: var "
                                   "names, special names, R<ID> for range number ID.")
    s.add_argument("file", metavar="FILE", help=".uop file or - for stdin")
    s.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="a leaf's value, e.g. --var x=3 --var R0=5 (repeatable)")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("cost", help="print the cost of a graph",
                       description="Print FILE's cost: the reference metric (25 per idiv/mod, "
                                   "4 per mul, 1 per other op, shared subterms once) or a "
                                   "named cost model.")
    s.add_argument("file", metavar="FILE", help=".uop file or - for stdin")
    s.add_argument("--cost", default="reference", metavar="MODEL",
                   help="reference (default) or default (CPU cycles)")
    s.set_defaults(func=cmd_cost)

    s = sub.add_parser("optimize", help="optimize a graph and print the result",
                       description="Optimize FILE and print the result as .uop text.")
    _engine_flags(s)
    s.add_argument("--stats", action="store_true",
                   help="print the run's statistics (JSON) to stderr")
    s.add_argument("--compact", action="store_true", help="print on one line")
    s.add_argument("file", metavar="FILE", help=".uop file or - for stdin")
    s.set_defaults(func=cmd_optimize)

    s = sub.add_parser("batch", help="optimize every case of a JSONL file",
                       description="Read JSON objects with 'id' and 'expr' (one a line); write "
                                   "one object per case, in input order, with 'id', 'out' "
                                   "(compact .uop), 'cost' (reference cost of out) and 'us' "
                                   "(microseconds to parse, optimize and print it: its share "
                                   "of its chunk's time), or "
                                   "'error' (and 'line') for a case that failed. Blank lines "
                                   "are skipped.")
    _engine_flags(s)
    s.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="worker processes (default 2)")
    s.add_argument("--chunk", type=int, default=16, metavar="N",
                   help="cases optimized together in one e-graph (default 16; 1: one "
                        "e-graph per case)")
    s.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="send the chunks to this Dask distributed scheduler's workers "
                        "instead of local processes (--jobs is then unused; needs the "
                        "cluster extra and eqsat installed on the workers)")
    s.add_argument("input", metavar="IN.jsonl", help="input file or - for stdin")
    s.add_argument("-o", "--output", default="-", metavar="OUT.jsonl",
                   help="output file (default: stdout)")
    s.set_defaults(func=cmd_batch)

    s = sub.add_parser("compare", help="the engines (and tinygrad) side by side over a corpus",
                       description="Optimize every case of a JSONL file (objects with 'id' "
                                   "and 'expr'; 'source' groups them) with each engine and "
                                   "print, per source and for all cases, the engines' total "
                                   "reference cost, idiv+mod count and time, and how many "
                                   "cases each does strictly better and worse than each "
                                   "column before it. The engines take turns chunk by chunk "
                                   "in one process, so both see the same machine.")
    s.add_argument("input", metavar="IN.jsonl", help="corpus file or - for stdin")
    s.add_argument("--engines", default="baseline,egraph", metavar="A,B",
                   help="the engines to run (default baseline,egraph)")
    s.add_argument("--tinygrad", action="store_true",
                   help="add tinygrad's column from each line's 'tinygrad' field (its "
                        "output) and 'tg_us' (its time); tinygrad itself is not needed")
    s.add_argument("--json", action="store_true",
                   help="print the report as JSON (with each case's costs) instead")
    s.add_argument("--cost", default="reference", metavar="MODEL",
                   help="cost model the engines extract with (default reference, the "
                        "metric the table reports)")
    s.add_argument("--chunk", type=int, default=16, metavar="N",
                   help="cases the e-graph optimizes together in one e-graph (default 16)")
    s.add_argument("--seconds", type=float, default=2.0, metavar="S",
                   help="e-graph time budget per case (default 2)")
    s.add_argument("--limit", type=int, metavar="N", help="only the first N cases")
    s.add_argument("--check", action="store_true",
                   help="also check every output's equivalence to its input")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("rules", help="list the rule sets and their rules",
                       description="List every rule set with its engine and rules.")
    s.add_argument("--engine", choices=("egraph", "baseline"),
                   help="only the rule sets of this engine")
    s.add_argument("--brief", action="store_true", help="rule set names and counts only")
    s.set_defaults(func=cmd_rules)

    s = sub.add_parser("lower", help="lower a kernel to C or a linear program",
                       description="Lower FILE (optimized first unless --no-optimize) and "
                                   "print the C source or the linearized program.")
    s.add_argument("file", metavar="FILE", help=".uop file or - for stdin")
    s.add_argument("--emit", choices=("c", "linear"), default="c", help="output (default c)")
    s.add_argument("--no-optimize", action="store_true", help="lower the graph as written")
    s.set_defaults(func=cmd_lower)
    for s in sub.choices.values():  # -v after the command too (it adds to the one before)
        s.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                       help="show the library's log on stderr (-v info, -vv debug)")
    return p


class _StderrHandler(logging.StreamHandler):
    """A handler writing to the ``sys.stderr`` of the moment (tests replace it)."""

    @property
    def stream(self) -> Any:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_LOG_HANDLER = _StderrHandler()
_LOG_HANDLER.setFormatter(logging.Formatter("eqsat: %(levelname)s: %(message)s [%(name)s]"))


def _setup_logging(verbose: int) -> None:
    """The command's log: the ``eqsat`` logger to stderr, its warnings by default,
    info with ``-v``, debug with ``-vv`` (the library itself sets no handler)."""
    logger = logging.getLogger("eqsat")
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logger.setLevel(level)
    if _LOG_HANDLER not in logger.handlers:
        logger.addHandler(_LOG_HANDLER)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("uop-eqsat")
    except Exception:
        return "0.1.0"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    _setup_logging(args.verbose)
    try:
        return args.func(args)
    except CLIError as e:
        _report(str(e))
    except KeyboardInterrupt:
        print("eqsat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `eqsat rules | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
    except Exception as e:
        _report(str(_fail(args.command, e)))
    return 1


def _report(msg: str) -> None:
    print(f"eqsat: error: {msg}", file=sys.stderr)
    if os.environ.get("EQSAT_DEBUG"):
        traceback.print_exc()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
