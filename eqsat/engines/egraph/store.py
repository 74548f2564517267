"""The egglog instances of one rule set selection: a :class:`Store`.

A store owns the e-graphs of a :class:`~eqsat.engines.egraph.program.Program`, one per
kind (:data:`~eqsat.engines.egraph.program.EGRAPH_KINDS`), each built on first use; it
selects the one a run needs, widens a narrow run, resets the e-graph after a run
(:mod:`.reset`) and rebuilds it (docs/architecture.md, "The e-graph engine"). It holds
no run's state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import analysis_parts
from eqsat.engines.egraph.encoding import (
    CTORS,
    SUB_REL,
    SUBSUMABLE,
    ArgTable,
    Inserter,
    Snapshot,
    load_part,
)
from eqsat.engines.egraph.program import ANALYSIS, EGRAPH_KINDS, Program
from eqsat.engines.egraph.pystep import MAX_ROWS
from eqsat.engines.egraph.reset import (
    HANDLE_CTOR,
    RESET_HANDLES,
    RESET_RULESET,
    RESET_SUBSUMED,
    leftover,
    reset_part,
    reset_program,
    reset_tables,
)
from eqsat.ir.egglog_text import commands
from eqsat.ir.uop import UOp

__all__ = ["Store", "EGraph", "REBUILD_ITERATIONS"]

#: egglog keeps a report of every iteration it ever ran (its "overall run report") and
#: the union-find of every class a run made, so a warm e-graph's memory grows with every
#: iteration (about 2.7 KB each, docs/perf.md). After this many iterations the store
#: builds a fresh e-graph (about 0.25 s), between runs (:meth:`Store.rebuild_if_due`)
REBUILD_ITERATIONS = 10000

log = logging.getLogger(__name__)


class EGraph:
    """One egglog e-graph of a store: its argument table and inserter, its kind
    (:data:`EGRAPH_KINDS`), how many egglog iterations its overall report holds, and
    the egglog ``EGraph`` itself, loaded with the program on first use
    (:attr:`egraph`, :func:`load_program`): a run replayed in Python (:mod:`.pystep`)
    never needs it, so a process whose runs all replay never loads one."""

    __slots__ = ("args", "ins", "kind", "egg_iterations", "combined", "pushed",
                 "analysis", "_found", "_narrow")

    def __init__(self, program: Program, kind: str):
        only = program.loads(kind)
        self.args = ArgTable()
        for i in range(len(program.rule_args)):  # the keys the native rules were written with
            self.args.key(program.rule_args.arg(i))
        #: what loading the program found (:func:`load_program`)
        self._found: dict[str, Any] = {}
        self.ins = Inserter(None, self.args, loads=only,
                            load=partial(load_program, program, kind, self._found))
        #: its interval rules' rule sets by kind and constructor (``analysis_parts``)
        self.analysis = analysis_parts(ANALYSIS, fixed=kind == "fixed", ext=program.ext,
                                       only=only)
        self.kind = kind
        self.egg_iterations = 0
        self._narrow = program.narrow_loads
        #: the rule-set parts a step runs together -> the combined rule set declared for
        #: them (:meth:`Store.combined`)
        self.combined: dict[tuple[str, ...], str] = {}
        #: per ``(push)`` not yet popped, the combined rule sets declared before it
        #: (this e-graph's and its inserter's; see :meth:`Store.cmd`)
        self.pushed: list[tuple[dict, dict]] = []

    @property
    def egraph(self) -> Any:
        """The egglog ``EGraph``, loaded now if it is not yet."""
        return self.ins.egraph

    def load(self) -> None:
        """Load the egglog ``EGraph`` now if it is not yet."""
        self.ins.egraph  # noqa: B018 - (the inserter makes it on first use)

    @property
    def loaded(self) -> bool:
        """Whether the egglog ``EGraph`` is loaded."""
        return self.ins.loaded

    @property
    def base_sizes(self) -> dict[str, int]:
        """Table -> rows when loaded (the dtype facts): what a run's reset returns to."""
        self.load()
        return self._found["base"]

    @property
    def resettable(self) -> frozenset[str]:
        """The tables with a part of the reset rule set (``reset.reset_tables``)."""
        self.load()
        return self._found["resettable"]

    @property
    def reset_always(self) -> frozenset[str]:
        """The tables every reset of known tables deletes from, whether they hold rows
        or not: the relations and the narrow e-graph's constructors, which most runs
        fill, so that few combinations of parts are declared (an empty table's rule
        costs a reset next to nothing)."""
        return self.resettable - (CTORS.keys() - self._narrow)

    @property
    def fixed_width(self) -> bool:
        """Whether it holds the fixed-width rule sets."""
        return self.kind == "fixed"

    def __repr__(self) -> str:
        return (f"<EGraph {self.kind} loaded={self.loaded} "
                f"egg_iterations={self.egg_iterations}>")


def load_program(program: Program, kind: str, found: dict[str, Any]) -> Any:
    """A fresh egglog ``EGraph`` with the program of ``kind`` loaded
    (:meth:`Program.text`) and the reset rule sets of :mod:`.reset`; ``found`` gets the
    tables' sizes then (``"base"``) and the reset rule set's tables (``"resettable"``)."""
    text = program.text(kind)
    t = time.perf_counter()
    egraph = bindings.EGraph()
    # one command at a time: the bindings copy a command's whole source text into
    # every span of its AST, so one big program is slow to load (docs/perf.md)
    for cmd in commands(text):
        egraph.run_program(*egraph.parse_program(cmd))
    # the tables with rows now (the dtype facts) are never written by a run; every
    # other one is emptied when a run ends (:mod:`.reset`)
    base = dict(egraph.run_program(*egraph.parse_program("(print-size)"))[-1].sizes)
    keep = {n for n, k in base.items() if k}
    for cmd in commands(reset_program(text, keep, program.loads(kind))):
        egraph.run_program(*egraph.parse_program(cmd))
    found["base"], found["resettable"] = base, reset_tables(text, keep)
    log.debug("loaded the %s e-graph of %d native rules in %.2f s", kind,
              len(program.programs), time.perf_counter() - t)
    return egraph


class Store:
    """The e-graphs of one program (see the module docstring); ``cur`` is the one the
    current (or last) run uses."""

    def __init__(self, program: Program):
        self.program = program
        #: the e-graphs by kind, each built on first use
        self.egraphs: dict[str, EGraph] = {}
        self.cur = self.egraph_of("index")
        self.widened = 0  # runs that left the narrow e-graph for the index one
        self.rebuilds = 0  # fresh e-graphs built (REBUILD_ITERATIONS, a run's leftovers)

    @property
    def egraph(self) -> Any:
        """The current e-graph's egglog ``EGraph``."""
        return self.cur.egraph

    @property
    def ins(self) -> Inserter:
        """The current e-graph's inserter."""
        return self.cur.ins

    def __repr__(self) -> str:
        return f"<Store {sorted(self.egraphs)} cur={self.cur.kind}>"

    def egraph_of(self, kind: str) -> EGraph:
        """The e-graph of ``kind``, built now if it is not yet."""
        e = self.egraphs.get(kind)
        if e is None:
            e = self.egraphs[kind] = self.build(kind)
        return e

    def build(self, kind: str) -> EGraph:
        """A fresh e-graph of ``kind`` (its egglog ``EGraph`` loaded on first use)."""
        return EGraph(self.program, kind)

    def prepare(self, roots: list[UOp] | None = None) -> None:
        """Build now the e-graph(s) a run of ``roots`` will use, and load their egglog
        ``EGraph`` when that run needs egglog (every kind, loaded, when None): a
        fixed-width run, or one of more nodes than a replayed run's rows
        (:data:`.pystep.MAX_ROWS`); a smaller run replays in Python and loads it only
        if it ends up needing it."""
        if roots is None:
            for kind in EGRAPH_KINDS:
                self.egraph_of(kind).load()
            return
        orders = [r.toposort() for r in roots]
        kind = self.program.kind_of(roots, orders)
        load = kind == "fixed" or sum(map(len, orders)) > MAX_ROWS
        for k in (kind, "index"):  # (the index one: where a narrow run widens to)
            e = self.egraph_of(k)
            if load:
                e.load()

    def select(self, roots: list[UOp], widen: bool = False,
               extra: list[UOp] | None = None,
               orders: list[list[UOp]] | None = None) -> dict[int, list[UOp]]:
        """Make current the e-graph ``roots`` need (``Program.kind_of``, of them and of
        the nodes ``extra`` lists; never the narrow one when ``widen``); the roots'
        toposorts by ``id`` (for the insertion that follows; ``orders``: those
        toposorts, when the caller has them)."""
        orders = orders or [r.toposort() for r in roots]
        kind = self.program.kind_of(roots, orders + ([extra] if extra else []))
        self.cur = self.egraph_of("index" if widen and kind == "narrow" else kind)
        return dict(zip(map(id, roots), orders, strict=True))

    def rebuild(self) -> None:
        """Replace the current e-graph with a fresh one of its kind."""
        log.debug("a fresh e-graph after %d egglog iterations", self.cur.egg_iterations)
        self.cur.ins.close()
        self.cur = self.egraphs[self.cur.kind] = self.build(self.cur.kind)
        self.rebuilds += 1

    def rebuild_if_due(self) -> None:
        """A fresh e-graph once egglog's overall report has grown past
        :data:`REBUILD_ITERATIONS` (between runs: no result depends on it)."""
        if self.cur.egg_iterations >= REBUILD_ITERATIONS:
            self.rebuild()

    def close(self) -> None:
        for e in self.egraphs.values():
            e.ins.close()

    # ---- egglog commands ------------------------------------------------------
    def cmd(self, text: str) -> list[Any]:
        """Run egglog commands. A ``(push)`` or ``(pop)`` alone also saves or restores
        which combined rule sets are declared (:meth:`combined`, ``Inserter``): those
        declared in a pushed e-graph go with it at the pop."""
        out = self.egraph.run_program(*self.egraph.parse_program(text))
        cur = self.cur
        if text == "(push)":
            cur.pushed.append((dict(cur.combined), dict(cur.ins.combined)))
        elif text == "(pop)" and cur.pushed:
            cur.combined, cur.ins.combined = cur.pushed.pop()
        return out

    def combined(self, parts: tuple[str, ...]) -> str:
        """The rule set that runs the rule sets ``parts`` together, declared the first
        time the current e-graph needs it."""
        combined = self.cur.combined
        name = combined.get(parts)
        if name is None:
            name = f"step_{len(combined)}"
            self.cmd(f"(unstable-combined-ruleset {name} {' '.join(parts)})")
            combined[parts] = name
        return name

    # ---- the end of a run -------------------------------------------------------
    def reset(self, saved: tuple, clean: bool, final: Snapshot | None = None) -> None:
        """Leave the e-graph as the run found it (:mod:`.reset`); ``saved``: the
        inserter's state before the run; ``final``: a snapshot of the e-graph as the run
        leaves it (without it, the subsumed e-nodes are read with ``freeze``). When a
        row is left, the run raised (not ``clean``) or egglog failed a reset command,
        the e-graph is built afresh."""
        left: dict[str, int] = {}
        if clean:
            try:
                left = self._delete_rows(final)
            except bindings.EggSmolError:
                clean = False  # (an egglog error: the e-graph is built afresh below)
        self.ins.restore(saved)
        if not clean or left:
            log.debug("a fresh %s e-graph: the run left rows %s", self.cur.kind,
                      left or "(it raised)")
            self.rebuild()

    def _delete_rows(self, final: Snapshot | None) -> dict[str, int]:
        """The deletions of :meth:`reset`; the tables left with other sizes than built."""
        ins = self.ins
        ins.drop_subsumptions()  # (what they would subsume is deleted anyway)
        if final is not None:
            self._record_subsumed_of(final)
        # the rows still recorded load first: the handles a snapshot gave new classes
        # are among them, and the deletions find children by handle
        rows = f"(run {RESET_SUBSUMED} 1)\n(run {RESET_RULESET} 1)\n"
        handles = f"(run {RESET_HANDLES} 1)\n"
        if final is None:
            out = ins.flush(f"{rows}(print-size)", late=False)
            left = leftover(dict(out[-1].sizes), self.cur.base_sizes)
            left.pop(HANDLE_CTOR, None)
            last = handles
            if left and self._record_subsumed(left):
                # the subsumed e-nodes no RSub row named (a native rule subsumed them):
                # deleted through the RSub rows just recorded
                last = rows + handles
        else:
            # every subsumed e-node of the final snapshot has its RSub row, and no step
            # ran after it: the handles go in the same egglog call
            last = self._filled_deletions() or rows + handles
        out = ins.flush(f"{last}(print-size)", late=False)
        self.cur.egg_iterations += last.count("(run ") + 2 * (final is None)
        return leftover(dict(out[-1].sizes), self.cur.base_sizes)

    def _filled_deletions(self) -> str:
        """The deletions of a reset after a run whose last step read which tables hold
        rows (``Inserter.filled``), when only RSub rows wait to load: one run of the
        parts of :data:`RESET_SUBSUMED` of the constructors the RSub rows name, those
        of :data:`RESET_RULESET` of the tables with rows and of
        ``EGraph.reset_always``, and :data:`RESET_HANDLES` (``""`` otherwise: every
        part, in three runs). Nothing writes a table between that step and the reset
        but the loading of those RSub rows, so the other parts would find nothing to
        delete; and the rules of one run all match the rows as they were before it,
        so the subsumed e-nodes still find their children's handles."""
        ins, cur = self.ins, self.cur
        filled, waiting = ins.filled, ins.waiting
        if filled is None or not waiting <= {SUB_REL}:
            return ""
        kept = [name for name, n in cur.base_sizes.items() if n]  # (never written)
        tables = (filled | waiting | cur.reset_always).difference(kept, [HANDLE_CTOR])
        if not tables <= cur.resettable:
            return ""
        named = ins.sub_named & SUBSUMABLE
        if ins.loads is not None:
            named &= ins.loads  # (the e-graph has no other constructor's table)
        parts = (*[load_part(RESET_SUBSUMED, c) for c in sorted(named)],
                 *map(reset_part, sorted(tables)), RESET_HANDLES)
        return f"(run {self.combined(parts)} 1)\n"

    def _record_subsumed_of(self, snap: Snapshot) -> None:
        """Record an RSub row naming every subsumed e-node of ``snap`` (a snapshot of
        the e-graph as it is now; its classes are named by handle), for the
        :data:`RESET_SUBSUMED` rule set to delete; not for subsuming (they are)."""
        forget = self.ins.forget
        for n in snap.nodes:
            if n.subsumed and n.ctor in SUBSUMABLE:
                forget(n.ctor, n.fields)

    def _record_subsumed(self, tables: Iterable[str]) -> bool:
        """Record an RSub row (``Inserter.subsume``) for every subsumed e-node of
        ``tables`` (constructors), its children named by handle, for the
        :data:`RESET_SUBSUMED` rule set to delete; False (nothing recorded) when a
        child has no handle or a field cannot be written as a row's field."""
        eg = self.egraph
        funcs = eg.freeze().functions
        to_i64 = eg.value_to_i64
        handle: dict[Any, int] = {}
        for r in funcs[HANDLE_CTOR].rows:
            handle.setdefault(r.output, to_i64(r.inputs[0]))
        found: list[tuple[str, tuple[Any, ...]]] = []
        for name in tables:
            sig = CTORS.get(name)
            if sig is None or name not in SUBSUMABLE:
                return False
            for r in funcs[name].rows:
                if not r.subsumed:
                    continue
                fields = _row_fields(eg, sig, r.inputs, handle)
                if fields is None:
                    return False
                found.append((name, fields))
        for name, fields in found:
            self.ins.subsume(name, fields)
        return bool(found)


def _row_fields(eg: Any, sig: str, inputs: Any, handle: dict[Any, int]
                ) -> tuple[Any, ...] | None:
    """A row's fields as an RSub row writes them (children by handle); None when a
    child has no handle or a string field holds a tab or a newline."""
    fields: list[Any] = []
    for ch, v in zip(sig, inputs, strict=True):
        if ch == "S":
            text = eg.value_to_string(v)
            if "\t" in text or "\n" in text:
                return None
            fields.append(text)
        elif ch == "I":
            fields.append(eg.value_to_i64(v))
        else:
            k = handle.get(v)
            if k is None:
                return None
            fields.append(k)
    return tuple(fields)
