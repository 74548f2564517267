"""The e-graph engine's facade: :class:`Session` (a
:class:`~eqsat.engines.egraph.program.Program`, a
:class:`~eqsat.engines.egraph.store.Store`, and per call a
:class:`~eqsat.engines.egraph.run.Run` followed by :mod:`.phases`; docs/architecture.md,
"The e-graph engine").

``session_for`` caches one session per selection and thread (building one takes about
0.25 s); many roots share one e-graph and every shared subgraph is inserted once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import UnsoundError
from eqsat.engines.egraph.encoding import Inserter, Snapshot
from eqsat.engines.egraph.parts import join_parts, kernel_parts
from eqsat.engines.egraph.phases import no_run_stats, run_phases
from eqsat.engines.egraph.program import Program
from eqsat.engines.egraph.pystep import ReplayStopped, rule_book
from eqsat.engines.egraph.record import Tracer, joined_record
from eqsat.engines.egraph.run import Run, WidenError
from eqsat.engines.egraph.schedules import (
    Clock,
    Limits,
    StopReason,
    gc_paused,
    memory_limit,
)
from eqsat.engines.egraph.seeding import (
    Seeds,
    baseline_seeds,
    no_worse_than_start,
    start_at_floor,
    usable_start,
)
from eqsat.engines.egraph.store import Store
from eqsat.ir.pattern import write_matchers
from eqsat.ir.uop import UOp
from rules import RulesetError, matcher

__all__ = ["Session", "session_for", "clear_sessions"]


class Session:
    """A warm e-graph engine for one rule set selection (see the module docstring)."""

    def __init__(self, rulesets: list[str] | tuple[str, ...] | str | None = None):
        self.program = Program(rulesets)
        self.store = Store(self.program)
        rule_book(self.program)  # (the replay's rules: a group compiled when first needed)

    @property
    def ins(self) -> Inserter:
        """The current e-graph's inserter."""
        return self.store.ins

    def __repr__(self) -> str:
        p = self.program
        return (f"<eqsat.engines.egraph.Session groups={len(p.groups)} "
                f"native={len(p.native)} computed={len(p.pyrules)}>")

    def prepare(self, roots: list[UOp] | None = None) -> None:
        """Build now the e-graph(s) a run of ``roots`` will use (every kind when None,
        and all a run otherwise builds when it first needs it: the replay's rule groups,
        the multiplying rules' bounds), so the one-time build is not part of a run's
        time budget (``Store.prepare``: egglog's ``EGraph`` is loaded only for a run
        that will not replay in Python)."""
        self.store.prepare(roots)
        if roots is None:
            self.program.prepare()
            rule_book(self.program).build()
            # the ordered matcher's rules, which the seed and the e-matching run
            with suppress(RulesetError):  # (an e-graph-only selection has no seed)
                matcher(self.program.selection).prepare()
            write_matchers(r.rule for r in self.program.pyrules)

    # ---- inspection -----------------------------------------------------------
    @contextmanager
    def probe(self, roots: list[UOp] | None = None) -> Iterator[Run]:
        """A :class:`Run` on the e-graph ``roots`` need (never the narrow one; the
        current one when None) inside an egglog push and pop: what it inserts and
        steps is gone after (tests, :meth:`analyze`)."""
        orders = self.store.select(roots, widen=True) if roots is not None else {}
        self.store.cmd("(push)")
        saved = self.ins.state()
        try:
            yield Run(self.program, self.store, orders=orders)
        finally:
            self.store.cmd("(pop)")
            self.ins.restore(saved)

    def analyze(self, roots: list[UOp]) -> dict[UOp, tuple[float, float, bool]]:
        """Insert ``roots`` (no rewrites) with the IR bounds of their leaves only, run
        the analyses to a fixed point and return every node's ``(lo, hi,
        never_invalid)`` as the e-graph has it (``-inf``/``inf`` when unknown). The
        e-graph is left as it was."""
        with self.probe(roots) as run:
            run.insert(roots, seed_all=False)
            run.step(False)
            snap = run.read()
            out = {}
            for _key, h in self.ins.uop_handle.items():
                u = self.ins.handle_uop[h]
                c = snap.cls_of_handle(h)
                lo, hi = snap.bounds(c)
                out[u] = (lo, hi, c in snap.defined)
            return out

    # ---- the run ----------------------------------------------------------------
    def run(self, roots: list[UOp], model: Any, limits: Limits,
            t0: float | None = None, keep_egraph: bool = False) -> tuple[list[UOp], dict]:
        """Optimize ``roots`` together; ``(new roots, stats)``. ``t0``: when the
        caller's clock started (``time.perf_counter()``; e.g. before it built this
        session): the time budget counts from there. ``keep_egraph``: ``stats["egraph"]``
        is then the e-graph's :class:`~eqsat.engines.egraph.record.EGraphRecord` (the
        classes the roots reached, what merged when), which a run otherwise drops.
        Automatic garbage collection is paused for the run (:func:`gc_paused`): every
        collection rescanned the passes' long-lived objects (docs/perf.md).

        A start that costs 0 (:func:`~.seeding.start_at_floor`) is the output: no step
        runs (``stop_reason="optimal"``); with ``keep_egraph`` the run still builds the
        e-graph, and the outputs are the same.

        A kernel past :data:`~.parts.PART_NODES` nodes runs in parts, a run each
        (:mod:`.parts`); with ``keep_egraph`` the parts' records are joined into one
        (:func:`~.record.joined_record`), and the output is the one without it."""
        parts = kernel_parts(roots)
        if parts is None:
            outs, stats, _ = self._run(roots, model, limits, t0, keep_egraph)
            return outs, stats
        t0 = time.perf_counter() if t0 is None else t0  # (one clock for every part)
        outs, starts, rewrites, each, records = [], [], [], [], []
        for i, part in enumerate(parts):
            # each part's clock: its share of the time the call has left (the last part
            # all of it), so that a part cannot use up the time of those after it
            spent = time.perf_counter() - t0
            share = replace(limits, seconds=spent + (limits.seconds - spent) / (len(parts) - i))
            o, st, seeds = self._run([part], model, share, t0, keep_egraph)
            st["part_nodes"] = len(part.toposort()) - 1
            outs.append(o[0])
            starts.append(usable_start(seeds, 0))
            rewrites.append(seeds.rewrites[0])
            each.append(st)
            if keep_egraph:
                records.append(st.pop("egraph"))
        out, stats = join_parts(roots[0], outs, starts, rewrites, each, model)
        if keep_egraph:
            stats["egraph"] = joined_record(roots[0], records)
        return [out], stats

    def _run(self, roots: list[UOp], model: Any, limits: Limits, t0: float | None,
             keep_egraph: bool) -> tuple[list[UOp], dict, Seeds]:
        """:meth:`run` in one e-graph; ``(new roots, stats, the baseline's seeds)``."""
        with gc_paused():
            clock = Clock(limits.seconds, t0)
            with clock.phase(times := {}, "baseline"):
                seeds = baseline_seeds(roots, self.program.selection, model,
                                       memory_limit(limits.memory))
                floor = start_at_floor(seeds, model)
            stop = StopReason.OPTIMAL
            if floor is None and not keep_egraph and (seeds.stopped or clock.over()):
                # the clock ran out in the baseline's rewrite (or in the parts before this
                # one), or the rewrite ran past the memory limit: the start is the output,
                # nothing is inserted
                stop, outs = StopReason(seeds.stopped or "time"), list(roots)
                floor = (outs, *no_worse_than_start(outs, seeds, model, None))
            if floor is not None and not keep_egraph:
                # (the budget from the toposorts the baseline took, when it took them:
                # none walked again)
                orders = dict(zip(map(id, roots), seeds.input_orders, strict=False))
                return floor[0], no_run_stats(list(self.program.groups),
                                              limits.for_roots(roots, orders).enodes, times,
                                              floor[1], floor[2], stop), seeds
            widen, replay = False, True
            while True:
                run = self._new_run(roots, seeds, model, limits, clock, keep_egraph,
                                    widen=widen, replay=replay)
                try:
                    outs, stats = self.execute(run)
                    break
                except WidenError:
                    # the narrow e-graph lacks rules that could match now: the run starts
                    # again in the index e-graph (the clock runs on), and ends as a run
                    # there would, had it started there
                    if widen:
                        raise
                    self.store.widened += 1
                    widen = True
                except ReplayStopped:
                    replay = False  # (again with egglog running its steps: the same end)
            if widen:
                stats["widened"] = True
            stats["costs"], stats["seed"] = no_worse_than_start(
                outs, seeds, model, stats.get("costs"))
            if floor is not None:  # (the e-graph kept for inspection: the same outputs)
                outs, stats["costs"], stats["seed"] = floor
            stats["time"]["baseline"] = times["baseline"]
        # (after the run: its result does not depend on it)
        self.store.rebuild_if_due()
        return outs, stats, seeds

    def _new_run(self, roots: list[UOp], seeds: Seeds, model: Any, limits: Limits,
                 clock: Clock, keep_egraph: bool, widen: bool = False,
                 replay: bool = True) -> Run:
        """A run of ``roots`` in the e-graph they need (``Store.select``); ``replay``:
        whether its steps may replay in Python (:mod:`.pystep`)."""
        orders = self.store.select(roots, widen=widen, extra=seeds.order,
                                   orders=seeds.input_orders or None)
        return Run(self.program, self.store, model, limits, clock, seeds, orders,
                   keep_egraph, roots=roots, replay=replay)

    def execute(self, run: Run) -> tuple[list[UOp], dict]:
        """Execute ``run`` in the store's current e-graph: insert its roots, its loop,
        its phases (:data:`~eqsat.engines.egraph.phases.PHASES`), and the e-graph left
        as the run found it (``Store.reset``); ``(outputs, stats)``."""
        ins = run.ins
        saved = ins.state()
        clean = False  # whether the run ended without an exception (see Store.reset)
        final: Snapshot | None = None  # a snapshot of the e-graph as the run leaves it
        try:
            with run.clock.phase(run.times, "insert"):
                run.handles = run.insert(run.roots)
                if run.seeds is not None and run.limits.baseline_start:
                    run.insert_seeds(run.seeds)  # (the run starts from both)
            run.input_nodes = run.peak = len(ins.uop_handle) - len(saved[2])
            run.tracer = Tracer(run.roots, ins) if run.keep_egraph else None
            run.start_replay()
            run.loop()
            run_phases(run)
            clean = True
            final = None if run.stale else run.snap
            return run.outs, run.stats
        except (WidenError, ReplayStopped):
            clean = True  # (raised between egglog calls: the e-graph is consistent)
            raise
        except (UnsoundError, bindings.EggSmolError):
            raise
        except Exception as e:
            # the tripwire runs once a run, before its extraction: a pass that failed on
            # an e-graph with an empty interval reports the unsound union, not its symptom
            try:
                run.check()
            except UnsoundError as u:
                raise u from e
            except bindings.EggSmolError:
                pass
            raise
        finally:
            with run.clock.phase(run.times, "reset"):
                if run.mirror is not None:
                    ins.restore(saved)  # (nothing of the run was loaded)
                else:
                    self.store.reset(saved, clean, final)


_LOCAL = threading.local()  # each thread's sessions: an egglog EGraph stays on its thread


def session_for(rulesets: list[str] | tuple[str, ...] | str | None) -> Session:
    """The cached warm session of a rule set selection, in this thread (an egglog
    e-graph may only be used by the thread that made it)."""
    # a rule given as an object is keyed by its identity; the session holds it, so the
    # id stays its own while the entry lives
    key = (None,) if rulesets is None else tuple(
        [rulesets] if isinstance(rulesets, str)
        else [r if isinstance(r, str) else ("rule", id(r)) for r in rulesets])
    cache = getattr(_LOCAL, "sessions", None)
    if cache is None:
        cache = _LOCAL.sessions = {}
    s = cache.get(key)
    if s is None:
        s = cache[key] = Session(rulesets)
    return s


def clear_sessions() -> None:
    """Drop this thread's cached sessions (tests; freeing memory)."""
    cache = getattr(_LOCAL, "sessions", {})
    for s in cache.values():
        s.store.close()
    cache.clear()
