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
    eqsat rules --prove [--engine E] [--rule NAME]  prove every rule with z3
    eqsat lower FILE [--emit c|linear] [--no-optimize]

Errors print one line to stderr (``eqsat: error: FILE:LINE:COL: ...``) and exit
with status 1 (2 for a bad command line; 128 + the signal for a batch or a comparison
stopped by SIGTERM or SIGINT), never a traceback; set ``EQSAT_DEBUG=1`` to see the
traceback too. :func:`main` takes ``argv`` and
returns the exit status, so tests can call it directly.

``-v``/``--verbose`` (before or after the command; twice for more) shows the
library's log (the ``eqsat`` logger: info, then debug) on stderr; by default only
its warnings. Long commands (``batch``, ``compare``) draw a progress bar on stderr
when it is a terminal, not under CI (``CI=true``).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import math
import os
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from eqsat.jsonl import EncodingError, escaped, not_utf8, numbered_lines

__all__ = ["main", "build_parser", "CLIError", "batch_results"]

log = logging.getLogger("eqsat.cli")


class CLIError(Exception):
    """A failure to report as ``eqsat: error: <message>`` (exit status 1)."""


# ---------------------------------------------------------------------------
# helpers
def _stdin() -> Any:
    """Standard input, or a CLIError when the process has none (its descriptor closed)."""
    if sys.stdin is None:
        raise CLIError("<stdin>: no standard input (it is closed)")
    return sys.stdin


def _read(path: str) -> tuple[str, str]:
    """(text, display name) of FILE, ``-`` meaning standard input."""
    if path == "-":
        return _stdin().read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(), path
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CLIError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


@contextmanager
def _input_lines(path: str, reader: str
                 ) -> Iterator[tuple[Iterator[tuple[int, str]], str]]:
    """(the non-blank lines of the JSON-lines FILE, ``-`` meaning standard input, each
    with its number, read as they are asked for (:func:`eqsat.jsonl.numbered_lines`:
    a line that is not UTF-8 is kept for its own error, not the file's); the file's
    display name). A file that cannot be read, or starts with a UTF-16 or UTF-32
    byte-order mark, is a CLIError (``reader``: what reads UTF-8, for its message)."""
    if path == "-":
        name, stream = "<stdin>", getattr(_stdin(), "buffer", None)
        if stream is None:  # a text stream only (a test's): its text, back to bytes
            stream = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
        own = False
    else:
        name = path
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed when the block ends
        except OSError as e:
            raise CLIError(f"{path}: {e.strerror or e}") from None
        own = True

    def lines() -> Iterator[tuple[int, str]]:
        try:
            yield from numbered_lines(stream, name)
        except EncodingError as e:
            raise CLIError(f"{e}; {reader} reads UTF-8") from None
        except OSError as e:
            raise CLIError(f"{name}: cannot read: {e.strerror or e}") from None

    try:
        yield lines(), name
    finally:
        if own:
            stream.close()


def _read_lines(path: str) -> tuple[list[tuple[int, str]], str]:
    """The non-blank lines of a batch's FILE (:func:`_input_lines`) and its name."""
    with _input_lines(path, "the batch") as (lines, name):
        return list(lines), name


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


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
#: the largest size ``--memory`` takes (4 EiB; a worker's address-space cap must fit
#: the system's rlim_t)
_SIZE_MAX = 1 << 62
#: the largest count an integer budget option takes (the engines keep them as i64)
_COUNT_MAX = (1 << 63) - 1


def _size(text: str) -> int:
    """A byte count: an integer, optionally with a K, M, G or T suffix (powers of 1024)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    try:
        n = float(t[:len(t) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 4G or 512M, "
                                         f"got {text!r}") from None
    if math.isnan(n) or n <= 0:
        raise argparse.ArgumentTypeError(f"the size must be positive, got {text!r}")
    size = n * _SIZE_UNITS[unit]
    if not size <= _SIZE_MAX:  # inf too
        raise argparse.ArgumentTypeError(f"the size must be at most {_SIZE_MAX >> 40}T, "
                                         f"got {text!r}")
    return max(1, int(size))


def _count(text: str) -> int:
    """An integer budget value (its lower bound is checked by ``Budget``)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if abs(n) > _COUNT_MAX:
        raise argparse.ArgumentTypeError(f"at most {_COUNT_MAX}, got {text!r}")
    return n


def _finite(text: str) -> float:
    """A number of seconds: a finite float (its lower bound is checked by the command)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def _budget(args: argparse.Namespace):
    from eqsat.api import Budget

    kw = {k: getattr(args, k) for k in ("iterations", "enodes", "seconds", "stall", "memory")
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
            "budget": (b.iterations, b.enodes, b.seconds, b.stall, b.memory),
            "stats": bool(getattr(args, "stats", False))}


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
        _start_engine(opts, [graph])
        res = _optimize(graph, opts)
    except Exception as e:
        raise _fail(f"{name}: optimize (engine {args.engine})", e) from None
    text = _to_text(res.graph, args.compact)
    if args.stats:
        stats = {"cost": res.cost, "input_cost": res.input_cost, **res.stats}
        print(json.dumps(_jsonable(stats), sort_keys=True), file=sys.stderr)
    print(text)
    return 0


def _start_engine(opts: dict[str, Any], graphs: list[Any] | None = None) -> None:
    """Build the e-graph engine's warm session before the run, as part of the
    command's start-up (like the imports): the time budget is then all the
    optimizer's (the first call of a process otherwise spends 0.5-2 s of it on the
    build, ``stats["time"]["setup"]``). ``graphs``: the e-graphs their runs need, one
    run each (None: every e-graph of the session); one built before is not built
    again."""
    if opts["engine"] == "egraph":
        from eqsat.engines.egraph import session_for

        session = session_for(opts["rulesets"])
        if graphs is None:
            session.prepare(None)
        for g in graphs or ():
            session.prepare([g])


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

        # the index e-graph (where every run but a fixed-width one can go); a chunk
        # builds any other it needs before its clock starts (_batch_chunk)
        graph = parse("(add (mod (idiv (max (var x 0 9) 1) 2) 3) 0)")
        _start_engine(opts, [graph])
        _optimize(graph, opts)
    except BaseException as e:  # noqa: B036 - the real case reports any problem
        if isinstance(e, KeyboardInterrupt):
            raise


class _NumText(str):
    """A JSON number with no finite float value (``1e999``, ``NaN``, ``Infinity``) as
    its text, so that an id written back is valid JSON."""


def _num_text(text: str) -> Any:
    x = float(text)
    return x if math.isfinite(x) else _NumText(text)


def _loads(line: str) -> Any:
    """A batch line's JSON: a non-finite number (``1e999``, ``NaN``) is a :class:`_NumText`;
    a ValueError for JSON that is not valid or nested too deeply to read."""
    try:
        return json.loads(line, parse_float=_num_text, parse_constant=_NumText)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _plain(x: Any) -> Any:
    """``x`` with its :class:`_NumText` as plain strings (an id as the output shows it)."""
    if isinstance(x, _NumText):
        return str(x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def _dumps(row: dict[str, Any]) -> str:
    """A batch row as one line of valid JSON (no NaN or Infinity)."""
    return json.dumps(_jsonable(row), allow_nan=False)


def _prepare(job: tuple[int, str, dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """Parse one batch line: ``(result so far, graph)``; the graph is None when the
    result is already an error."""
    lineno, line, _ = job
    out: dict[str, Any] = {"id": None}
    bad = not_utf8(lineno, line)
    if bad:  # its id when the bytes are elsewhere
        cid = _case_id(line)
        if escaped(json.dumps(_jsonable(cid), ensure_ascii=False)):
            cid = None
        return {"id": cid, "line": lineno, "error": bad}, None
    try:
        row = _loads(line)
    except ValueError as e:
        return {"id": None, "line": lineno, "error": f"bad JSON: {e}"}, None
    if not isinstance(row, dict):
        return {"id": None, "line": lineno,
                "error": "expected a JSON object with id and expr"}, None
    out["id"] = _plain(row.get("id"))
    for key in ("id", "expr"):
        if key not in row:
            return {**out, "line": lineno, "error": f"missing field {key!r}"}, None
    if type(row["expr"]) is not str:
        return {**out, "line": lineno, "error": "field 'expr' must be a string"}, None
    try:
        from eqsat.ir.sexpr import ParseError, parse
    except ImportError as e:  # pragma: no cover - broken installation
        return {**out, "line": lineno, "error": str(_fail("batch", e))}, None
    try:
        return out, parse(row["expr"])
    except ParseError as e:
        return {**out, "line": lineno, "error": f"expr:{e.line}:{e.col}: {e.msg}"}, None


#: the run statistics a batch row carries with ``--stats``
_ROW_STATS = ("stop_reason", "iterations", "enodes", "enodes_peak", "enodes_budget",
              "held_back")


def _finish(out: dict[str, Any], res: Any, us: float, opts: dict[str, Any]) -> dict[str, Any]:
    """The row of a case optimized to ``res`` (an ``eqsat.Result``)."""
    from eqsat.ir.sexpr import to_sexpr

    row = {**out, "out": to_sexpr(res.graph, compact=True),
           "cost": _cost(res.graph, "reference"), "us": round(us, 1)}
    if opts.get("stats"):
        row["stats"] = {k: _jsonable(res.stats[k]) for k in _ROW_STATS if k in res.stats}
    return row


def _optimize_one(lineno: int, out: dict[str, Any], graph: Any, opts: dict[str, Any],
                  t0: float) -> dict[str, Any]:
    """Optimize one parsed batch case (``t0``: when its time started)."""
    try:
        res = _optimize(graph, opts)
        return _finish(out, res, (time.perf_counter() - t0) * 1e6, opts)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: B036 - engine panics (egglog) are BaseExceptions
        return {**out, "line": lineno,
                "error": str(_fail(f"optimize (engine {opts['engine']})", e))}


def _batch_chunk(jobs: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several lines of a batch, one task of a worker: each case parsed and optimized on
    its own (``eqsat.optimize`` with the worker's warm session), so its row is the one it
    gets alone, whatever the chunk; its ``us`` is its own time (parse, optimize, print).
    A case that fails gets its own error row."""
    if not jobs:
        return []
    opts = jobs[0][2]
    _warm(opts)
    prepared = []
    for job in jobs:
        t = time.perf_counter()
        out, graph = _prepare(job)
        prepared.append((out, graph, time.perf_counter() - t))
    live = [g for _, g, _ in prepared if g is not None]
    if live:
        # a one-time build (an e-graph kind this process has not needed before, e.g. the
        # fixed-width one) is start-up, as the imports are: not a case's time or budget
        try:
            _start_engine(opts, live)
        except Exception:  # noqa: BLE001 - the cases' own runs report any problem
            pass
    return [out if graph is None else
            _optimize_one(job[0], out, graph, opts, time.perf_counter() - parse_s)
            for job, (out, graph, parse_s) in zip(jobs, prepared, strict=True)]


def _log_like(level: int) -> None:
    """A worker process's log: the CLI's handler on the eqsat logger at ``level``."""
    logger = logging.getLogger("eqsat")
    logger.setLevel(level)
    if _LOG_HANDLER not in logger.handlers:
        logger.addHandler(_LOG_HANDLER)


def _case_id(line: str) -> Any:
    try:
        row = _loads(line)
        return _plain(row.get("id")) if isinstance(row, dict) else None
    except ValueError:
        return None


#: a worker's address space is capped at its run's memory budget plus this much (the
#: interpreter, the libraries, the session): a worker that passes it dies alone, and
#: its cases are retried, rather than the machine's memory running out
WORKER_AS_SLACK = 2 << 30
#: a worker still on a job after this factor of the job's time budget (plus
#: :data:`WORKER_GRACE` seconds for its start-up) is stopped, its job treated as a death
WORKER_TIME_FACTOR = 3.0
WORKER_GRACE = 60.0
#: the testing hook: case ids (comma-separated) on which a batch worker kills itself
#: (SIGKILL), as an engine running out of memory would die; ``ID:chunk`` only while the
#: case runs in a chunk with others (its rerun alone then succeeds)
KILL_ENV = "EQSAT_BATCH_KILL"

Job = tuple[int, str, dict[str, Any]]  # (line number, line, options)


def _test_kill(chunk: list[Job]) -> None:
    """The :data:`KILL_ENV` hook (tests only): die now when ``chunk`` holds such a case."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    for item in spec.split(","):
        cid, _, when = item.partition(":")
        if any(str(_case_id(j[1])) == cid for j in chunk) and (when != "chunk" or
                                                                len(chunk) > 1):
            os.kill(os.getpid(), signal.SIGKILL)


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this process (SIGKILL) when the thread of ``parent``
    that started it ends, however it ends (a SIGKILL too), rather than let it finish a
    chunk no one will read (``PR_SET_PDEATHSIG``)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the call
        os._exit(1)


def _worker_main(conn: Any, fn: Callable[[list[Job]], list[dict[str, Any]]],
                 memory: int | None, log_level: int, parent: int) -> None:
    """A batch worker: it dies with the process ``parent`` (:func:`_die_with`) and
    leaves SIGINT (Ctrl-C reaches the whole process group) to it, which stops its
    workers; it logs as the command does (``log_level``), its address space is
    capped at the runs' ``memory`` budget (None: the default) plus
    :data:`WORKER_AS_SLACK`; then chunks in (``(key, jobs)``), rows out (``(key,
    rows)``) until ``None`` or the pipe closes."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _log_like(log_level)
    try:
        import resource

        from eqsat.engines.egraph.schedules import MEMORY

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = (MEMORY if memory is None else memory) + WORKER_AS_SLACK
        if hard == resource.RLIM_INFINITY or cap < hard:
            if soft == resource.RLIM_INFINITY or cap < soft:
                resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OverflowError, OSError):
        pass  # no such limit on this system: the engine's own memory checks remain
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        key, chunk = msg
        _test_kill(chunk)
        rows = fn(chunk)
        try:
            conn.send((key, rows))
        except OSError:  # the batch is gone
            return


def _death(exitcode: int | None, timed_out: float | None) -> str:
    """What killed a worker, for the error rows of its cases."""
    if timed_out is not None:
        return f"stopped after {timed_out:.0f} s, past its time budget"
    if exitcode is None:
        return "lost (no exit status)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = {"SIGKILL": " (out of memory?)", "SIGABRT": " (aborted: out of memory?)",
                "SIGSEGV": " (a crash in the engine)"}.get(name, "")
        return f"killed by {name}{hint}"
    return f"exited with status {exitcode}"


class _Worker:
    """One worker process of a batch, the chunk it runs and when it must be done."""

    def __init__(self, ctx: Any, fn: Callable[[list[Job]], list[dict[str, Any]]],
                 memory: int | None):
        self.conn, child = ctx.Pipe()
        # spawn, not fork: the engines run Rust threads that a fork would not carry over
        level = logging.getLogger("eqsat").getEffectiveLevel()
        self.proc = ctx.Process(target=_worker_main,
                                args=(child, fn, memory, level, os.getpid()), daemon=True)
        self.proc.start()
        child.close()
        self.job: tuple[int, list[Job], bool] | None = None
        self.deadline = math.inf
        self.started = 0.0

    def __repr__(self) -> str:
        return f"<_Worker pid={self.proc.pid} job={self.job and self.job[0]}>"

    def give(self, job: tuple[int, list[Job], bool]) -> None:
        self.job = job
        self.started = time.monotonic()
        seconds = sum(j[2]["budget"][2] if "budget" in j[2] else 0.0 for j in job[1])
        self.deadline = self.started + WORKER_TIME_FACTOR * seconds + WORKER_GRACE
        self.conn.send((job[0], job[1]))

    def stop(self, kill: bool = False) -> None:
        if kill and self.proc.is_alive():
            self.proc.kill()
        try:
            if not kill:
                self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=None if kill else 5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class _Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT (``signum``) received while a batch runs."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Stop:
    """A batch's SIGTERM and SIGINT, in its main thread, while ``with`` it: the first
    raises :class:`_Interrupted`, at once or, inside :meth:`held` (a row being written,
    a worker being started or stopped), as the section ends, so that the workers are
    stopped before the command exits and no row is left half written; the signals
    after it are ignored (the stop is under way). A signal ignored when the command
    started (``nohup``, a background job's SIGINT) stays ignored; in another thread the
    signals act as they did."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.raised = False
        self.depth = 0
        self.before: dict[int, Any] = {}

    def __repr__(self) -> str:
        return f"<_Stop signum={self.signum} depth={self.depth}>"

    def __call__(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            self._raise()

    def _raise(self) -> None:
        if self.signum is not None and not self.depth and not self.raised:
            self.raised = True
            raise _Interrupted(self.signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A section a signal does not cut short: it acts when the section ends."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        self._raise()

    def __enter__(self) -> _Stop:
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self.before[sig] = signal.signal(sig, self)
        except ValueError:  # not the main thread
            self.__exit__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self.before.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        self.before.clear()


def spans(n: int, chunk: int, workers: int) -> list[tuple[int, int]]:
    """The tasks of a batch of ``n`` cases for ``workers`` workers, as (start, stop):
    ``chunk`` cases each while many are left, then smaller ones, each at most a
    ``2 * workers``-th of what is left, so the workers finish close together rather
    than one running the last full chunk alone (a task's size never changes a row)."""
    out, i = [], 0
    while i < n:
        size = max(1, min(chunk, -(-(n - i) // (2 * workers))))
        out.append((i, i + size))
        i += size
    return out


def batch_results(cases: list[Job], jobs: int, chunk: int,
                  fn: Callable[[list[Job]], list[dict[str, Any]]] = _batch_chunk,
                  held: Callable[[], AbstractContextManager[Any]] = nullcontext
                  ) -> Iterator[dict[str, Any]]:
    """Every case's row, in input order, each as soon as it and the rows before it are
    done: chunks of at most ``chunk`` cases (:func:`spans`; one task each, ``fn``) on
    ``jobs`` worker processes (``jobs == 1`` too: the command outlives what kills a
    worker). A worker that dies (a signal, its memory cap) or outlives its time is
    replaced; the cases of its chunk run again, each alone with its own budget (so each
    row is the case's own result), and a case whose worker dies again gets an
    ``error`` row naming what killed it. The workers end with the generator: asked to
    when every row is out, killed when it stops early (an exception, ``close()``);
    on Linux the kernel kills them when the thread that started them ends.
    ``held``: a section that a signal must not cut short (:meth:`_Stop.held`), around
    each start and the stop of the workers."""
    import multiprocessing
    from multiprocessing.connection import wait

    n = len(cases)
    if not n:
        return
    todo: deque[tuple[int, list[Job], bool]] = deque(
        (i, cases[i:j], False) for i, j in spans(n, chunk, jobs))
    memory = max((c[2]["budget"][4] or 0 for c in cases if "budget" in c[2]), default=0) or None
    ctx = multiprocessing.get_context("spawn")
    workers: list[_Worker] = []
    rows: dict[int, dict[str, Any]] = {}
    nxt = 0
    try:
        for _ in range(max(1, min(jobs, len(todo)))):
            with held():
                workers.append(_Worker(ctx, fn, memory))
        while nxt < n:
            for w in workers:
                if w.job is None and todo:
                    w.give(todo.popleft())
            busy = [w for w in workers if w.job is not None]
            if not busy:
                raise RuntimeError("batch: cases left but no work given out")
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                             timeout=timeout))
            for k, w in enumerate(workers):
                if w.job is None:
                    continue
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.conn.poll():
                            key, out = w.conn.recv()
                            for j, row in enumerate(out):
                                rows[key + j] = row
                            w.job = None
                            continue
                    except (EOFError, OSError):
                        pass
                    w.proc.join(timeout=5)
                    cause = _death(w.proc.exitcode, None)
                elif time.monotonic() > w.deadline:
                    cause = _death(None, time.monotonic() - w.started)
                else:
                    continue
                first, died, retried = w.job
                log.warning("batch: a worker %s on %d case(s) from line %d; %s", cause,
                            len(died), died[0][0], "giving the case its error" if
                            len(died) == 1 and retried else "running them again one by one")
                w.job = None
                with held():
                    w.stop(kill=True)
                    workers[k] = _Worker(ctx, fn, memory)
                if len(died) == 1 and retried:
                    rows[first] = {"id": _case_id(died[0][1]), "line": died[0][0],
                                   "error": f"the worker process running this case alone "
                                            f"was {cause}"}
                else:
                    todo.extendleft(reversed([(first + j, [c], True)
                                              for j, c in enumerate(died)]))
            while nxt in rows:
                yield rows.pop(nxt)
                nxt += 1
    finally:
        with held():
            for w in workers:
                w.stop(kill=w.job is not None or nxt < n)


def _executor_results(cases: list[tuple[int, str, dict[str, Any]]], executor: Executor,
                      chunk: int, window: int,
                      fn: Callable[[list], list[dict[str, Any]]] = _batch_chunk,
                      cancel: Callable[[list[Any]], None] | None = None,
                      held: Callable[[], AbstractContextManager[Any]] = nullcontext
                      ) -> Iterator[dict[str, Any]]:
    """Every case's result, in input order, from chunks of at most ``chunk`` cases
    (:func:`spans`) run by ``fn`` on ``executor`` (any concurrent.futures.Executor: a
    Dask client's, a pool), at most ``window`` chunks in flight. A chunk whose task
    fails (its worker died, the cluster lost it) runs again case by case; a case whose
    own task fails too gets an ``error`` naming the failure. When the generator stops
    early (a signal, ``close()``), the tasks still in flight are cancelled before it
    ends: ``cancel(futures)`` (:meth:`_DaskExecutor.cancel`), or each future's own
    ``cancel()`` (a task already running then runs on, its result unread). ``held``:
    a section that a signal must not cut short (:meth:`_Stop.held`), around each
    submission and the cancelling: a signal stops the batch while it waits on a task."""
    chunks = [cases[i:j] for i, j in spans(len(cases), chunk, max(1, window // 2))]
    pending: deque[tuple[list, Future]] = deque()
    retry: list[Future] = []  # a case's own task, while it runs
    nxt = 0
    try:
        while nxt < len(chunks) or pending:
            while nxt < len(chunks) and len(pending) < window:
                with held():
                    pending.append((chunks[nxt], executor.submit(fn, chunks[nxt])))
                    nxt += 1
            ch, fut = pending[0]
            try:
                rows = fut.result()
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: B036 - the task failed where it ran
                rows = None
                log.warning("a chunk of %d cases failed on the executor (%s: %s); running "
                            "its cases one by one", len(ch), type(e).__name__, e)
            pending.popleft()
            if rows is not None:  # (yielded out of the try: a close() is no failure)
                yield from rows
                continue
            for case in ch:
                with held():
                    retry[:] = [executor.submit(fn, [case])]
                try:
                    rows = retry[0].result()
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # noqa: B036
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    rows = [{"id": _case_id(case[1]), "line": case[0],
                             "error": f"the worker failed on this case ({type(e).__name__}: "
                                      f"{msg})"}]
                retry.clear()
                yield from rows
    finally:
        with held():
            _cancel([f for _, f in pending] + retry, cancel)


def _cancel(futures: list[Any], cancel: Callable[[list[Any]], None] | None) -> None:
    """The tasks of ``futures`` not done yet cancelled (:func:`_executor_results`); a
    failure to is logged, not raised (the batch is stopping for another reason)."""
    live = [f for f in futures if not f.done()]
    if not live:
        return
    try:
        if cancel is None:
            for f in live:
                f.cancel()
        else:
            cancel(live)
        log.info("batch: %d tasks in flight cancelled", len(live))
    except Exception as e:  # noqa: BLE001 - e.g. the cluster gone
        log.warning("batch: could not cancel %d tasks in flight (%s: %s)", len(live),
                    type(e).__name__, e)


class _DaskExecutor(Executor):
    """A Dask distributed client as a batch's executor: each task submitted impure (it
    runs even when one with the same chunk ran before: a retry runs again), the tasks
    still in flight cancelled by one ``Client.cancel`` call (which stops the tasks not
    yet started and forgets the others' results)."""

    def __init__(self, client: Any):
        self.client = client

    def __repr__(self) -> str:
        return f"_DaskExecutor({self.client!r})"

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return self.client.submit(fn, *args, pure=False, **kwargs)

    def cancel(self, futures: list[Any]) -> None:
        self.client.cancel(futures)


def _cluster_executor(address: str) -> tuple[_DaskExecutor, int, Callable[[], None]]:
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
    except ValueError as e:  # not an address
        raise CLIError(f"--scheduler {address}: {e}") from None
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    log.info("batch: Dask scheduler %s, %d workers, %d threads", address,
             len(client.scheduler_info()["workers"]), threads)
    return _DaskExecutor(client), max(2 * threads, 2), client.close


def _check_engine(opts: dict[str, Any]) -> None:
    """``--cost`` and ``--rulesets`` checked as ``optimize`` checks them, before any
    work: a CLIError naming the flag. No ``--rulesets`` (the engine's default) has
    nothing to check: the e-graph's group names are known only once its rule modules
    are imported and their rules made, the workers' start-up, which the command's own
    process then need not repeat."""
    from extraction import get_cost_model

    try:
        get_cost_model(opts["cost"])
    except ValueError as e:
        raise CLIError(f"--cost: {e}") from None
    if opts["rulesets"] is None:
        return
    import rules

    try:
        rules.resolve(opts["rulesets"], opts["engine"])
    except ValueError as e:
        raise CLIError(f"--rulesets: {e}") from None


def cmd_batch(args: argparse.Namespace) -> int:
    # everything is checked (and the scheduler reached) before the output is opened:
    # an error leaves an existing output file as it was
    opts = _options(args)
    if args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    if args.chunk < 1:
        raise CLIError(f"--chunk must be >= 1, got {args.chunk}")
    _check_engine(opts)
    lines, name = _read_lines(args.input)
    cases = [(n, line, opts) for n, line in lines]
    close: Callable[[], None] | None = None
    if args.scheduler:
        executor, window, close = _cluster_executor(args.scheduler)
    out_name = "<stdout>" if args.output == "-" else args.output
    try:
        fh = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as e:
        if close is not None:
            close()
        raise CLIError(f"{args.output}: {e.strerror or e}") from None
    from eqsat.progress import progress

    n_err = written = 0
    t0 = time.perf_counter()
    bar = progress(total=len(cases), desc="batch")
    results: Iterator[dict[str, Any]] | None = None
    done = False
    try:
        with _Stop() as stop:
            try:
                if args.scheduler:
                    results = _executor_results(cases, executor, args.chunk, window,
                                                cancel=executor.cancel, held=stop.held)
                else:
                    log.info("batch: %d cases in chunks of %d on %d worker processes",
                             len(cases), args.chunk, args.jobs)
                    results = batch_results(cases, args.jobs, args.chunk, held=stop.held)
                for res in results:
                    n_err += "error" in res
                    with stop.held():  # a whole row or none
                        _write_row(fh, out_name, res)
                        written += 1
                    bar.update(1)
                done = True
            finally:
                with stop.held():
                    _end_batch(bar, results, close, fh, out_name, done)
    except _Interrupted as e:
        print(f"eqsat batch: stopped by {signal.Signals(e.signum).name}: {written} of "
              f"{len(cases)} rows written to {out_name}", file=sys.stderr)
        return 128 + e.signum
    print(f"eqsat batch: {len(cases)} cases from {name}, {n_err} errors, "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _write_row(fh: Any, out_name: str, row: dict[str, Any]) -> None:
    """One row of a batch, written out (flushed) whole."""
    try:
        fh.write(_dumps(row) + "\n")
        fh.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise CLIError(f"{out_name}: cannot write: {e.strerror or e}") from None


def _end_batch(bar: Any, results: Iterator[dict[str, Any]] | None,
               close: Callable[[], None] | None, fh: Any, out_name: str, done: bool) -> None:
    """A batch's end, however it ends: the bar closed, the workers stopped, the
    scheduler's client closed, the output file closed (an error closing it reported
    when the batch is ``done``; else the error on its way out is the one to report)."""
    bar.close()
    if results is not None and hasattr(results, "close"):
        results.close()  # the workers stop now, not when collected
    if close is not None:
        close()
    if fh is not sys.stdout:
        try:
            fh.close()
        except OSError as e:
            if done:
                raise CLIError(f"{out_name}: cannot write: {e.strerror or e}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from eqsat import compare
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
    try:
        get_cost_model(args.cost)
    except ValueError as e:
        raise CLIError(str(e)) from None
    try:
        with _Stop() as stop:
            return _compare(args, engines, stop)
    except _Interrupted as e:
        print(f"eqsat compare: stopped by {signal.Signals(e.signum).name}: no report",
              file=sys.stderr)
        return 128 + e.signum


def _compare(args: argparse.Namespace, engines: list[str], stop: _Stop) -> int:
    """``eqsat compare`` after its flags are checked: the input read line by line (a
    line that is no case named on stderr and left out), the engines run, the report
    printed whole (a signal stops the command before it or after it, never in it)."""
    from eqsat import compare
    from eqsat.progress import progress

    with _input_lines(args.input, "the comparison") as (lines, name):
        rows, errors = compare.read_rows(lines, args.limit, args.tinygrad)
    for e in errors:
        with stop.held():  # a whole line
            sys.stderr.write(f"eqsat compare: {name}:{e['line']}: {compare.error_text(e)}\n")
    if not rows:
        raise CLIError(f"{name}: no cases{_left_out(errors)}")
    log.info("compare: %d cases from %s, engines %s", len(rows), name, ", ".join(engines))
    if "egraph" in engines:
        _start_engine({"engine": "egraph", "rulesets": None})
    try:
        with progress(total=len(rows), desc="compare") as bar:
            cases, _ = compare.run(rows, engines=engines, batch=args.chunk, model=args.cost,
                                   check=args.check, seconds=args.seconds,
                                   on_batch=bar.update)
    except ValueError as e:  # a field that does not parse (read_rows checked them)
        raise CLIError(f"{name}: {e}") from None
    rep = compare.summary(cases, engines, tinygrad=args.tinygrad)
    for c in cases:  # a check that stopped early found no difference, but not every draw ran
        for e, why in c.unchecked.items():
            with stop.held():
                sys.stderr.write(f"eqsat compare: case {c.id}, {e}: the check stopped "
                                 f"early ({why})\n")
    if args.json:
        rep["per_case"] = compare.case_rows(cases, engines, args.tinygrad)
        if errors:
            rep["errors"] = errors
        text = json.dumps(_jsonable(rep), indent=1, sort_keys=True)
    else:
        text = "\n".join([f"{len(cases)} cases from {name}{_left_out(errors)}; reference "
                          f"cost of the outputs (extracted under the {args.cost!r} model); "
                          f"engines in turns of {args.chunk} cases", *compare.table(rep)])
    with stop.held():  # the report whole
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0


def _left_out(errors: list[Any]) -> str:
    """How many lines a comparison left out, for its report's first line."""
    n = len(errors)
    return f" ({n} line{'s' if n > 1 else ''} left out, named above)" if n else ""


def cmd_rules(args: argparse.Namespace) -> int:
    if args.prove:
        return _prove_rules(args)
    if args.rule:
        raise CLIError("--rule needs --prove")
    try:
        import rules

        sets = rules.list_rulesets()
    except Exception as e:
        raise _fail("rules", e) from None
    if args.engine:
        sets = [s for s in sets if s.engine == args.engine]
    from eqsat.engines.egraph.rulesets import OPT_IN

    for s in sets:
        when = "; opt-in" if s.engine == "egraph" and s.name in OPT_IN else ""
        print(f"{s.name} ({s.engine}, {len(s.rules)} rules{when})")
        if not args.brief:
            for r in s.rules:
                print(f"  {r.name}: {getattr(r, 'identity', '')}")
    return 0


#: the modules that register the proof obligations of an engine's own passes
_PROOF_SETUP = ("eqsat.engines.egraph.proofs",)


def _prove_rules(args: argparse.Namespace) -> int:
    """``eqsat rules --prove``: one line per rule, then the summary; 1 if any failed, 2
    when z3 is missing."""
    try:
        import z3  # noqa: F401  (the proofs' solver: a dependency of this command only)
    except ImportError:
        _report("rules --prove needs z3: pip install z3-solver (or pip install -e '.[dev]')")
        return 2
    import importlib

    from rules.proof.registry import prove, summary
    from rules.proof.semantics import RLIMIT

    for m in _PROOF_SETUP:
        importlib.import_module(m)

    names = [n for n in (args.rule or "").split(",") if n] or None
    if args.rlimit is not None and args.rlimit <= 0:
        raise CLIError(f"--rlimit must be positive, got {args.rlimit}")
    if args.jobs < 1:
        raise CLIError(f"--jobs must be >= 1, got {args.jobs}")
    outcomes = []
    try:
        for o in prove(args.engine, names, args.rlimit or RLIMIT, args.jobs, _PROOF_SETUP):
            outcomes.append(o)
            detail = f"  {o.detail}" if o.detail and (o.status != "proven" or args.detail) \
                else ""
            print(f"{o.name:<34} {o.status:<11} {o.seconds:7.2f}s {o.rlimit:>11}{detail}",
                  flush=True)
    except ValueError as e:
        raise CLIError(str(e)) from None
    line = summary(outcomes)
    print(line)
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def cmd_lower(args: argparse.Namespace) -> int:
    graph, name = _parse_file(args.file)
    try:
        from lowering import lower
    except ImportError as e:
        raise _fail("lower", e) from None
    try:
        if not args.no_optimize:
            _start_engine({"engine": "egraph", "rulesets": None}, [graph])
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
    g.add_argument("--iterations", type=_count, metavar="N", help="e-graph rewrite rounds")
    g.add_argument("--enodes", type=_count, metavar="N",
                   help="e-graph size limit (default: 20,000, or 4 per unique node of "
                        "the graph when that is more; a kernel past 3,000 nodes runs in "
                        "parts, each an e-graph with this limit)")
    g.add_argument("--seconds", type=_finite, metavar="S", help="wall-time limit per graph")
    g.add_argument("--stall", type=_count, metavar="N",
                   help="stop after N rounds without a cheaper result while the e-graph "
                        "barely grows (default 1; 0: never)")
    g.add_argument("--memory", type=_size, metavar="SIZE",
                   help="memory a run may add to its process, e.g. 2G (default 6G)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``eqsat`` command."""
    from eqsat.api import CHUNK

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
                                   "(microseconds to parse, optimize and print it), or "
                                   "'error' (and 'line') for a case that failed (a line that "
                                   "is not UTF-8 or not JSON too). Lines end at \\n, \\r\\n "
                                   "or \\r; blank lines are skipped, and a UTF-8 byte-order "
                                   "mark at the start. Every row is valid JSON: an id that is a "
                                   "number with no finite value (1e999, NaN, Infinity) comes "
                                   "back as a string of its text ('1e999'). Each row is "
                                   "written as soon as it and the "
                                   "rows before it are done. The work runs in worker "
                                   "processes: one that dies (out of memory, a signal) or "
                                   "overruns its time is replaced, and its cases run again "
                                   "one by one; a case that kills "
                                   "its worker again gets an error naming the cause. Exit "
                                   "status 0 when every case has its row; 128 + the signal "
                                   "after SIGTERM or SIGINT, which kill the workers (the rows "
                                   "written are whole). The options and "
                                   "the input are checked before OUT.jsonl is opened: a bad "
                                   "one leaves an existing file as it was.")
    _engine_flags(s)
    s.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="worker processes (default 2)")
    s.add_argument("--chunk", type=int, default=CHUNK, metavar="N",
                   help=f"at most this many cases a task of a worker (default {CHUNK}; "
                        "smaller tasks at the end); each case is optimized on its own, so "
                        "the rows do not depend on it")
    s.add_argument("--stats", action="store_true",
                   help="add each case's run statistics to its row ('stats': stop "
                        "reason, iterations, e-nodes, rules held back)")
    s.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="send the chunks to this Dask distributed scheduler's workers "
                        "instead of local processes (--jobs is then unused; needs the "
                        "cluster extra and eqsat installed on the workers); SIGTERM or "
                        "SIGINT cancels the tasks in flight on the cluster")
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
                                   "in one process, so both see the same machine. A line "
                                   "that is no case (not UTF-8, not JSON, a field missing "
                                   "or not parsing) is named on stderr and left out, the "
                                   "others compared. Exit status 128 + the signal after "
                                   "SIGTERM or SIGINT, with no report.")
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
    s.add_argument("--chunk", type=int, default=CHUNK, metavar="N",
                   help=f"cases each engine takes in its turn (default {CHUNK}); each "
                        "case is optimized on its own")
    s.add_argument("--seconds", type=_finite, default=300.0, metavar="S",
                   help="e-graph hard time limit per case (default 300; the work "
                        "budgets end a run long before)")
    s.add_argument("--limit", type=int, metavar="N",
                   help="only the first N cases (non-blank lines, a bad one too)")
    s.add_argument("--check", action="store_true",
                   help="also check every output's equivalence to its input (a kernel's "
                        "by running both on drawn buffers; a check stopped by its work "
                        "bound is named on stderr)")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("rules", help="list the rule sets and their rules",
                       description="List every rule set with its engine and rules.")
    s.add_argument("--engine", choices=("egraph", "baseline"),
                   help="only the rule sets of this engine")
    s.add_argument("--brief", action="store_true", help="rule set names and counts only")
    s.add_argument("--prove", action="store_true",
                   help="prove every rule with z3 (needs z3-solver): one line per rule "
                        "(name, status, seconds, the most z3 resource units a query took), "
                        "then 'N proven, M tested-only, K failed'; "
                        "exit status 1 when a proof fails")
    s.add_argument("--rule", metavar="NAME[,NAME]", help="with --prove: these rules only")
    s.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="with --prove: N processes prove rules side by side (default 1; "
                        "each rule in a process of its own either way)")
    s.add_argument("--rlimit", type=int, default=None, metavar="N",
                   help="with --prove: z3 resource units one query may take (a count of "
                        "z3's steps, not seconds: the verdict does not depend on the "
                        "machine's load; default rules.proof.semantics.RLIMIT)")
    s.add_argument("--detail", action="store_true",
                   help="with --prove: the detail of proven rules too (dtype choices)")
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
