"""Where egglog's time goes in e-graph calls: per command kind, per rule, per join.

Every egglog command the engine issues runs alone (a program of several commands is
split; the same commands in the same order), timed, and each ``run``'s report is read:
per rule, how many semi-naive joins egglog ran (one per atom of the rule's query whose
table has rows new since the rule's last run: ``RuleReport`` entries) and how many
matches they found. egglog 13.2 reports every rule's time as 0 in these runs, so the
joins are the measure: a native run's time fits ``a * joins + b`` (printed).

Printed, for one ``eqsat.optimize`` call per expression (warm session, the result
cache off): per command kind (``native``: a step's native rule sets; ``analysis``: the
interval rules to their fixed point; ``insert``: loading rows; the reset's runs), its
commands, time, share, joins and microseconds per join; the fit; the rule families
(a rule's variants together) with the most joins and their matches; and the joins of
the rules that never matched.

Sets: ``--captures`` (tinygrad's models' expressions, :mod:`benchmarks.capture_tinygrad`),
``--corpus N`` (the first N corpus expressions), ``--kernel N`` (``stress.py``'s
synthetic kernel of about N nodes).

Usage::

    python benchmarks/egglog_rules.py [--captures] [--corpus N] [--kernel N] [--top 30]
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eqsat.engines.egraph import store as store_module  # noqa: E402
from eqsat.engines.egraph._egglog import bindings  # noqa: E402

__all__ = ["Tally", "measure", "main"]

_RUN = bindings.RunScheduleOutput


@dataclass
class Tally:
    """What the commands of the calls measured cost: per kind ``[commands, seconds,
    joins]``, per rule ``[joins, matches]``, and each native run's (seconds, joins)."""

    kinds: dict[str, list[float]] = field(default_factory=dict)
    rules: dict[str, list[int]] = field(default_factory=dict)
    native: list[tuple[float, int]] = field(default_factory=list)
    on: bool = False

    def add(self, command: str, secs: float, out: list[Any],
            sets: dict[str, str] | None = None) -> None:
        kind = _kind(command, sets)
        joins = 0
        for o in out:
            if type(o) is not _RUN:
                continue
            for it in o.report.iterations:
                for name, reports in it.rule_set_report.rule_reports.items():
                    r = self.rules.setdefault(name, [0, 0])
                    r[0] += len(reports)
                    r[1] += sum(x.num_matches for x in reports)
                    joins += len(reports)
        k = self.kinds.setdefault(kind, [0, 0.0, 0])
        k[0] += 1
        k[1] += secs
        k[2] += joins
        if kind == "native":
            self.native.append((secs, joins))


def _kind(command: str, sets: dict[str, str] | None = None) -> str:
    """A command's kind: for a run, what its rule set holds (a combined set by its first
    part, ``sets``): ``native``, ``count`` (the counting twins), ``analysis``, ``reset``,
    ``insert``, ... (its name without numbers); else the command's head."""
    if not command.startswith("(run "):
        return command.split(" ", 1)[0].strip("()")
    name = command.split()[1]
    first = (sets or {}).get(name)
    if first is None:
        return re.sub(r"_c?\d+$", "", name)
    if first.startswith("native"):
        return "count" if "_count" in first else "native"
    return next((k for k in ("analysis", "reset", "insert", "subsume")
                 if first.startswith(k)), first)


class _TimedEGraph:
    """An egglog ``EGraph`` whose programs run one command at a time into a tally."""

    tally: Tally

    def __init__(self) -> None:
        self._egraph = bindings.EGraph()
        #: combined rule set -> its first part (what :func:`_kind` reads)
        self.sets: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._egraph, name)

    def parse_program(self, text: str) -> list[Any]:
        return [text, *self._egraph.parse_program(text)]

    def run_program(self, text: str, *commands: Any) -> list[Any]:
        eg = self._egraph
        for line in text.split("\n"):  # (the combined sets, warm-up included)
            if line.startswith("(unstable-combined-ruleset "):
                name, first = line.split()[1:3]
                self.sets[name] = first.rstrip(")")
        if not self.tally.on:
            return eg.run_program(*commands)
        out: list[Any] = []
        for line in text.split("\n"):
            parsed = eg.parse_program(line)
            t = time.perf_counter()
            res = eg.run_program(*parsed)
            self.tally.add(line.strip(), time.perf_counter() - t, res, self.sets)
            out += res
        return out


def measure(graphs: list[Any], tally: Tally) -> tuple[float, list[Any]]:
    """One e-graph call per graph into ``tally``: the calls' seconds and outputs. The
    calls run on a thread of their own, whose session is built afresh with the timed
    e-graphs (sessions are per thread), with the result cache off meanwhile and egglog
    running every step (no run replayed in Python: ``eqsat/engines/egraph/pystep.py``)."""
    from eqsat.engines.egraph import pystep
    from eqsat.engines.egraph.results import RESULTS

    done: dict[str, Any] = {}
    size, rows = RESULTS.size, pystep.MAX_ROWS
    real = store_module.bindings
    store_module.bindings = _Bindings(real)
    _TimedEGraph.tally = tally
    RESULTS.resize(0)
    pystep.MAX_ROWS = -1
    try:
        worker = threading.Thread(target=_calls, args=(graphs, tally, done))
        worker.start()
        worker.join()
    finally:
        RESULTS.resize(size)
        pystep.MAX_ROWS = rows
        store_module.bindings = real
    if "error" in done:
        raise done["error"]
    return done["secs"], done["outs"]


def _calls(graphs: list[Any], tally: Tally, done: dict[str, Any]) -> None:
    import eqsat
    from eqsat.engines.egraph.engine import clear_sessions

    try:
        eqsat.session_for(None).prepare()
        tally.on = True
        t = time.perf_counter()
        done["outs"] = [eqsat.optimize(g, cost_model="reference").graph for g in graphs]
        done["secs"] = time.perf_counter() - t
    except Exception as e:  # (raised again on the caller's thread)
        done["error"] = e
    finally:
        tally.on = False
        clear_sessions()  # (this thread's e-graphs, timed: not kept)


class _Bindings:
    """``egglog.bindings`` with :class:`_TimedEGraph` as its ``EGraph``."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.EGraph = _TimedEGraph

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def report(tally: Tally, secs: float, top: int) -> str:
    """The tables of the module docstring."""
    total = sum(k[1] for k in tally.kinds.values()) or 1.0
    lines = [f"calls {secs:.2f} s, egglog's commands {total:.2f} s"]
    for kind, (n, s, j) in sorted(tally.kinds.items(), key=lambda x: -x[1][1]):
        per = f"{s / j * 1e6:7.1f} us a join" if j else ""
        lines.append(f"  {kind:<24} {int(n):6d} commands {s * 1e3:9.1f} ms "
                     f"{s / total * 100:5.1f}%  joins {int(j):8d}  {per}")
    if len(tally.native) > 1:
        lines.append(_fit(tally.native))
    families: dict[str, list[int]] = {}
    for name, (j, m) in tally.rules.items():
        f = families.setdefault(re.split(r"[~#]", name, maxsplit=1)[0], [0, 0, 0])
        f[0] += j
        f[1] += m
        f[2] += 1
    joins = sum(j for j, _ in tally.rules.values()) or 1
    dead = sum(j for j, m in tally.rules.values() if not m)
    lines.append(f"joins {joins}; of rules that never matched {dead} ({dead / joins:.0%}, "
                 f"{sum(1 for _, m in tally.rules.values() if not m)} of "
                 f"{len(tally.rules)} rules)")
    lines.append(f"the {top} rule families with the most joins (joins, share, matches, rules):")
    for f, (j, m, n) in sorted(families.items(), key=lambda x: -x[1][0])[:top]:
        lines.append(f"  {j:8d} {j / joins * 100:5.1f}% {m:8d} {n:3d}  {f}")
    return "\n".join(lines)


def _fit(runs: list[tuple[float, int]]) -> str:
    """The least-squares line of the native runs' seconds over their joins."""
    n = len(runs)
    mx = sum(j for _, j in runs) / n
    my = sum(s for s, _ in runs) / n
    sxx = sum((j - mx) ** 2 for _, j in runs) or 1.0
    sxy = sum((j - mx) * (s - my) for s, j in runs)
    syy = sum((s - my) ** 2 for s, _ in runs) or 1.0
    a = sxy / sxx
    return (f"native runs: {a * 1e6:.1f} us a join + {(my - a * mx) * 1e6:.0f} us "
            f"(r = {sxy / (sxx * syy) ** 0.5:.2f}, {n} runs)")


def _graphs(args: argparse.Namespace) -> list[Any]:
    from eqsat.ir.sexpr import parse

    out: list[Any] = []
    if args.captures:
        from benchmarks import capture_tinygrad
        rows = capture_tinygrad.rows(capture_tinygrad.capture(), repeat=1, check=False)
        out += [parse(r["expr"]) for r in rows]
    if args.corpus:
        from benchmarks.corpus import corpus_path
        from eqsat.compare import load
        out += [parse(r["expr"]) for r in load(corpus_path(), args.corpus)]
    if args.kernel:
        from benchmarks.stress import kernel_graph
        out.append(parse(kernel_graph(args.kernel)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", action="store_true", help="tinygrad's models' captures")
    ap.add_argument("--corpus", type=int, default=0, help="the first N corpus expressions")
    ap.add_argument("--kernel", type=int, default=0, help="a synthetic kernel of N nodes")
    ap.add_argument("--top", type=int, default=30, help="rule families listed")
    args = ap.parse_args(argv)
    graphs = _graphs(args)
    if not graphs:
        ap.error("no set: --captures, --corpus N or --kernel N")
    tally = Tally()
    secs, _ = measure(graphs, tally)
    print(report(tally, secs, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
