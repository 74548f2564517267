"""One e-graph run: a :class:`Run`, the saturation loop's state and its steps.

A run lives for one call: it inserts the roots into the store's current e-graph,
iterates, runs the phases after the loop (:mod:`.phases`), and leaves the e-graph as
it found it. Everything a run reads or counts lives on it, so no long-lived object
carries one run's state into the next. One iteration is a step (:meth:`Run.step`: the
pending rows, a round of the native rules, the interval analysis, in one egglog call),
a snapshot, a computed pass and the budgets' check (docs/architecture.md, "The e-graph
engine"; :class:`~eqsat.engines.egraph.schedules.StopReason` lists why a run stops).
A small run's steps and snapshots are replayed in Python instead (:mod:`.pystep`, the
same e-graph without an egglog command: :meth:`Run.start_replay`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from functools import partial
from itertools import compress
from typing import Any

from eqsat.engines.egraph import pystep
from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import (
    CHECK_RULESET,
    LATE_RULESET,
    TRIPWIRE,
    UnsoundError,
)
from eqsat.engines.egraph.computed import PassState, python_pass
from eqsat.engines.egraph.encoding import CTORS, Inserter, Snapshot
from eqsat.engines.egraph.program import (
    ANALYSIS,
    FIXED_RULESET,
    Program,
    fixed_width_of,
)
from eqsat.engines.egraph.pystep import (
    Mirror,
    ReplayStopped,
    empty_interval,
    rule_book,
    snapshot_of,
    table_sizes,
)
from eqsat.engines.egraph.record import Tracer
from eqsat.engines.egraph.schedules import (
    COUNT_FN,
    DEFAULT_LIMITS,
    STALL_EMITTED,
    STALL_GAIN,
    STALL_GROWTH,
    STEP_ROOM,
    Clock,
    Limits,
    StopReason,
    rss_bytes,
)
from eqsat.engines.egraph.seeding import Seeds
from eqsat.engines.egraph.store import Store
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["Run", "WidenError", "ReplayStopped", "ANALYSIS_CAP", "is_stalled"]

#: rounds of the interval analysis per step at most. A sound e-graph settles in about
#: its depth; a class that is Invalid everywhere may hold a node such as ``c + 3`` of
#: itself, whose interval (vacuous: the class has no value) would climb for ever.
ANALYSIS_CAP = 512

_NODE_CTORS = frozenset(CTORS)  # the egglog functions whose rows are e-nodes

log = logging.getLogger(__name__)

#: the keys of a program's memo of a step's pure functions at most (``Program.memo``:
#: (rule sets, constructors with rows) -> the parts a step runs,
#: :meth:`Run.runnable_parts`; ("distinct bounds", rule set) -> its multiplying rules of
#: distinct bounds, :func:`_distinct`; ("may multiply", ...), :meth:`Run._may_multiply`)
_RUNNABLE_KEYS = 256


class WidenError(Exception):
    """A run in the narrow e-graph met a constructor it does not load
    (``Program.narrow_loads``): it starts again in the index e-graph."""


class Run:
    """One run's state on a store's current e-graph (see the module docstring).
    ``orders``: the roots' toposorts by ``id`` (``Store.select``), used by the first
    insertion; ``seeds``: the baseline's rewrite of the roots (:mod:`.seeding`);
    ``roots``: what ``Session.execute`` inserts and optimizes."""

    def __init__(self, program: Program, store: Store, model: Any = None,
                 limits: Limits | None = None, clock: Clock | None = None,
                 seeds: Seeds | None = None, orders: dict[int, list[UOp]] | None = None,
                 keep_egraph: bool = False, roots: list[UOp] | None = None,
                 replay: bool = True):
        self.program, self.store, self.model, self.seeds = program, store, model, seeds
        #: the inserter of the store's current e-graph (a run stays in one e-graph: a
        #: widened run is a new run)
        self.ins: Inserter = store.ins
        self.orders = orders or {}
        # a default e-node budget (None) is resolved from the roots' unique nodes
        self.limits = (DEFAULT_LIMITS if limits is None else limits).for_roots(
            roots or (), self.orders)
        self.clock = Clock(self.limits.seconds) if clock is None else clock
        self.keep_egraph = keep_egraph
        self.times: dict[str, float] = {}  # seconds per phase
        self.matches: dict[str, int] = {}  # rule -> matches
        #: constructor -> its rows in the e-graph after the last step (egglog's sizes)
        self.present: dict[str, int] = {}
        #: whether the multiplying rules still run: they are left out for the rest of
        #: the run after a step whose count did not fit its room (:meth:`admit`)
        self.multiplying = True
        #: multiplying rule -> its counter's value (its matches' e-nodes so far)
        self.counts: dict[int, int] = {}
        #: native rule -> the e-nodes its matches would have made when it was left out
        self.held_back: dict[str, int] = {}
        self.fixed = False  # the e-graph has fixed-width integer nodes
        #: ... and an e-node the fixed-width interval rules match (FIXED_ANALYSIS_DTYPES)
        self.fixed_analysis = False
        self.capped = 0  # analysis steps that hit ANALYSIS_CAP
        self.step_updated = True  # whether the last step changed the e-graph
        self.step_size = 0  # the e-graph's e-nodes after the last step
        # the loop's state
        self.roots: list[UOp] = list(roots or ())
        self.handles: list[int] = []
        self.input_nodes = 0
        self.tracer: Tracer | None = None
        self.pass_state = PassState()
        self.it = 0  # iterations (snapshots read)
        self.stop: StopReason | None = None
        self.snap: Snapshot | None = None  # the last snapshot
        self.stale = False  # whether the e-graph grew since `snap` was read
        self.peak = 0  # the most e-nodes the e-graph held after a step
        self.sizes: list[int] = []  # e-nodes per iteration
        self.best: list[float | None] = []  # the roots' best tree cost per iteration
        self.per_iter: list[tuple[int, float]] = []
        self.emitted: list[int] = []  # rows each computed pass recorded
        self.late = False  # a computed pass ran past its deadline
        #: the run's e-graph when its steps replay in Python (:mod:`.pystep`; set by
        #: :meth:`start_replay`); None when egglog runs them (egglog never holds it then)
        self.mirror: Mirror | None = None
        self.replay = replay  # whether its steps may replay (see start_replay)
        #: the native matches counted so far when replayed (egglog counts a match in
        #: the step that first finds it)
        self.counted: set[tuple] = set()
        self.rss0 = rss_bytes()
        self.rss_peak = 0  # the most the run grew the resident set by, of the readings
        # the phases' state (:mod:`.phases`)
        self.last = False
        self.outs: list[UOp] = []
        self.ext_stats: dict[str, Any] = {}
        self.costs: list[tuple[float, float]] | None = None
        self.stats: dict[str, Any] = {"engine": "egraph", "rulesets": list(program.groups),
                                      "enodes_budget": self.limits.enodes}

    def read(self, iteration: int = 0) -> Snapshot:
        """Read the e-graph into ``snap`` (and the tracer: ``iteration`` 0 is a read
        after the loop)."""
        if self.mirror is not None:
            self.snap = snapshot_of(self.mirror, self.ins)
        else:
            self.snap = Snapshot(self.store.egraph, self.ins)
        if self.tracer is not None:
            self.tracer.snapshot(self.snap, iteration, self.matches)
        return self.snap

    def __repr__(self) -> str:
        return (f"<Run {self.store.cur.kind} iterations={self.it} "
                f"stop={self.stop and self.stop.value}>")

    # ---- insertion ------------------------------------------------------------
    def insert(self, roots: list[UOp], seed_all: bool = True) -> list[int]:
        """Record the roots' rows and facts (loaded by the next step): the IR bounds of
        every node (``seed_all``) or of the leaves only, and which nodes are never
        Invalid; the roots' handles."""
        ins = self.ins
        first = len(ins.inserted)
        orders, self.orders = self.orders, {}  # (used once: not kept)
        handles = []
        for r in roots:
            if seed_all:
                o = orders.get(id(r))
                handles.append(ins.add_uop_with_facts(r, o if o and o[-1] is r else None))
                continue
            before = len(ins.inserted)
            handles.append(ins.add_uop(r))
            for u in ins.inserted[before:]:
                if (not u.src or u.op in (Ops.RANGE, Ops.SPECIAL)) and \
                        u.dtype.count == 1 and (u.dtype.is_int or u.dtype.is_bool) and \
                        not _inf(u.vmin) and not _inf(u.vmax) and u.vmin <= u.vmax:
                    k = ins.uop_handle[id(u)]
                    ins.fact("RLo", (k, int(u.vmin)))
                    ins.fact("RHi", (k, int(u.vmax)))
        # only an input brings a dtype in (rewrites keep their operands' dtypes): the
        # fixed-width rule sets run only when an inserted node is one they can match
        self.fixed, self.fixed_analysis = fixed_width_of(ins.inserted[first:])
        return handles

    def insert_seeds(self, seeds: Seeds) -> None:
        """Record the baseline's rewrite of the roots (:mod:`.seeding`) with its facts,
        each rewritten node unioned with its rewrite (the roots are inserted)."""
        if not seeds.order:
            return
        ins = self.ins
        ins.add_uop_with_facts(seeds.order[-1], seeds.order)
        handle = ins.uop_handle
        for u, v in seeds.pairs:
            ins.union(handle[id(u)], handle[id(v)])

    # ---- egglog steps ---------------------------------------------------------
    def step(self, native: bool, allow: float = math.inf) -> bool:
        """Load pending rows, then (one egglog call) one round of the native rules and
        the analysis to a fixed point (at most ``ANALYSIS_CAP`` rounds); without
        ``native``, the analysis only. Whether the native rules changed anything; the
        e-graph's size after the step is ``step_size``.

        The native rules run before the analysis: the inserted terms carry the IR's
        bounds and every older class has the last analysis's, all sound; a guard that
        needs a bound not known yet fires one iteration later (semi-naive matching sees
        the new bound). The bounds the last computed pass seeded for its e-nodes
        (:mod:`.computed.seed`) load between the native rules and the analysis.

        ``allow``: how many e-nodes the step's multiplying rules may make (a share of the
        room the e-node budget has left); see :meth:`native_parts`. An analysis-only step
        runs the tripwire after the analysis; a run's native steps leave it to the run's
        end (an empty interval stays empty)."""
        narrow = self.store.cur.kind == "narrow"
        if narrow and not self.ins.ctors <= self.program.narrow_loads:
            raise WidenError  # (a row this step would load; see narrow_holds)
        changed = (self._egglog_step(native, allow) if self.mirror is None
                   else self._replay_step(native, allow))
        if narrow and not self.narrow_holds():
            raise WidenError  # (a rule made another constructor's e-node)
        return changed

    def _egglog_step(self, native: bool, allow: float) -> bool:
        """:meth:`step` in egglog: one call (see there)."""
        if (self.fixed or self.fixed_analysis) and not self.store.cur.fixed_width:
            raise RuntimeError("egglog step: fixed-width integer nodes in the index-only "
                               "e-graph (insert through run() or analyze())")
        runs, made = self.native_runs(allow) if native else ([], set())
        check = not native
        ins = self.ins
        # the late rows (the bounds the last pass seeded) load between the native rules
        # and the analysis, in the analysis's first round
        analysis = (f"(run {self.analysis_set(made, ins.has_late)} {ANALYSIS_CAP})\n" +
                    (f"(run {CHECK_RULESET} 1)\n" if check else "") + "(print-size)")
        loaded = ins.load_runs  # (run insert 1) [+ (run subsume 1)], before the flush
        try:
            out = ins.flush("\n".join(runs), analysis, late_run=False)
        except bindings.EggSmolError as e:
            if TRIPWIRE in str(e):
                raise self.diagnose() from None
            raise
        return self._read_step(out, loaded, len(runs), check)

    def native_runs(self, allow: float) -> tuple[list[str], set[str]]:
        """The egglog runs of one round of the native rules (:meth:`native_parts`), and
        the constructors their rules make."""
        runs: list[str] = []
        made: set[str] = set()
        makes = self.program.makes
        for parts in self.native_parts(allow):
            if parts:
                runs.append(f"(run {self.store.combined(parts)} 1)")
                made.update(*[makes[p] for p in parts])
        return runs, made

    def native_parts(self, allow: float) -> list[tuple[str, ...]]:
        """The rule-set parts of one round of the native rules, one tuple per rule set
        of this run (:meth:`native_bases`): with the multiplying rules when their bound
        from the rows (:meth:`apriori`) or their count (:meth:`admit`) fits ``allow``;
        when neither does, without them, as in every later step of the run."""
        if not self.program.native:
            return []
        bases = self.native_bases()
        have = frozenset(self.have())
        every = self.multiplying and self._may_multiply(bases, have)
        if every and self.apriori(bases) > allow:
            every = self.admit(bases, allow)
        return [self.runnable_parts([b, f"{b}_mult"] if every else [b], have)
                for b in bases]

    def _may_multiply(self, bases: list[str], have: frozenset[str]) -> bool:
        """:meth:`mult_may_match` (``have``: :meth:`have`), kept with the runnable
        parts: a pure function of the program, ``bases`` and ``have``."""
        memo, key = self.program.memo, ("may multiply", tuple(bases), have)
        out = memo.get(key)
        if out is None:
            out = self.mult_may_match(bases)
            if len(memo) >= _RUNNABLE_KEYS:
                memo.clear()
            memo[key] = out
        return out

    def _read_step(self, out: list[Any], first: int, n_runs: int, check: bool) -> bool:
        """Read a step's egglog outputs: ``first`` loading runs, ``n_runs`` native
        runs, the analysis [, the tripwire], the sizes. Whether a native rule fired and
        changed the e-graph; sets ``present``, ``step_size``, ``step_updated``."""
        # (each attribute read converts the whole Rust value to Python: read each once)
        sizes = out[-1].sizes
        self.present = {name: n for name, n in sizes if name in _NODE_CTORS}
        self.ins.filled = frozenset([name for name, n in sizes if n])  # (for the reset)
        self.step_size = sum(self.present.values())
        done = [o for o in out if type(o) is bindings.RunScheduleOutput]
        if first + n_runs + 1 + check != len(done):
            raise RuntimeError(f"egglog step: {len(done)} run reports, expected "
                               f"{first + n_runs + 1 + check}")
        natives = [o.report for o in done[first:first + n_runs]]
        analysed = done[-1 - check].report
        rounds = len(analysed.iterations)
        self.store.cur.egg_iterations += len(done) - 1 + rounds
        if rounds >= ANALYSIS_CAP:
            self.capped += 1  # the analysis did not settle (see ANALYSIS_CAP)
        changed = False
        names, matches = self.program.native_names, self.matches
        for rep in natives:
            fired = False
            for k, v in rep.num_matches_per_rule.items():
                name = names.get(k.split('"')[1] if '"' in k else k)
                if v and name is not None:
                    fired = True
                    matches[name] = matches.get(name, 0) + v
            changed = changed or (fired and bool(rep.updated))
        # whether a run of the rules (native, analysis) changed the e-graph; the loading
        # runs do not count
        self.step_updated = analysed.updated or any([r.updated for r in natives])
        return changed

    def analysis_set(self, made: set[str], late: bool = False) -> str:
        """The egglog rule set of this step's interval analysis: the interval rules of
        the constructors with rows in the e-graph (:meth:`have`) or ``made`` by this
        step's native rules, combined (an interval rule matches its own constructor's
        e-nodes only). The fixed-width ones run only when an e-node of this run may need
        them. ``late``: with the rules loading the late rows (:data:`LATE_RULESET`)."""
        have = self.have() | made
        kinds = ("core", "ext", "fixed") if self.fixed_analysis else ("core", "ext")
        of = self.store.cur.analysis
        leaves = tuple(leaf for k in kinds for leaf, ctor, _ in of[k] if ctor in have)
        if late:
            leaves += (LATE_RULESET,)
        return self.store.combined(leaves) if leaves else f"{ANALYSIS}_none"

    def native_bases(self) -> list[str]:
        """The native rule sets a step of this run runs: ``native``, and the fixed-width
        ones when the run has a fixed-width node and the program such rules."""
        return ["native"] + ([FIXED_RULESET] if self.fixed and self.program.has_fixed_rules
                             else [])

    def runnable_parts(self, rulesets: list[str], have: frozenset[str] | None = None
                       ) -> tuple[str, ...]:
        """The parts of ``rulesets`` (``Program.parts``) whose constructors all have
        rows (:meth:`have`): a part left out has no match (a match needs an e-node of
        each constructor its pattern names), so the round makes what a round of all the
        rules makes, while egglog assembles and indexes the joins of fewer rules. A part
        left out stays in semi-naive step: a match it finds once it runs holds a row
        that is new then. ``have``: :meth:`have` when the caller has it."""
        program = self.program
        key = (tuple(rulesets), frozenset(self.have()) if have is None else have)
        memo = program.memo
        out = memo.get(key)
        if out is None:  # (a pure function of the key: kept per program, a few keys)
            have, parts = key[1], program.parts
            out = tuple(part for rs in rulesets for part, need in parts.get(rs, ())
                        if need <= have)
            if len(memo) >= _RUNNABLE_KEYS:
                memo.clear()
            memo[key] = out
        return out

    def have(self) -> set[str]:
        """The constructors with rows in the e-graph (egglog's sizes after the last
        step) or among the rows recorded since the run began (``ins.ctors``)."""
        present = self.present
        return self.ins.ctors.union(compress(present, present.values()))

    def narrow_holds(self) -> bool:
        """Whether the narrow e-graph still runs as the index e-graph would: every
        constructor with rows or recorded this run is one the narrow e-graph loads, so
        a rule, an insertion rule or an interval rule the narrow e-graph lacks has
        nothing to match. When it fails the run starts again in the index e-graph."""
        loads = self.program.narrow_loads
        if not self.ins.ctors <= loads:
            return False
        present = self.present
        return loads.issuperset(compress(present, present.values()))

    # ---- the multiplying rules' room ------------------------------------------
    def mult_may_match(self, bases: list[str]) -> bool:
        """Whether a multiplying rule of ``bases`` may match in this step: every
        constructor its pattern needs has rows (:meth:`have`)."""
        have = self.have()
        ctors = self.program.mult_ctors
        return any(ctors[i] <= have for b in bases for i, _ in self.program.mult.get(b, ()))

    def apriori(self, bases: list[str]) -> float:
        """At most how many e-nodes this step's round of the multiplying rules of
        ``bases`` makes, from the rows of the constructors their patterns name (the
        e-graph's after the last step and those waiting to load): the sum of
        :meth:`bound`, each distinct bound once (:func:`_distinct`)."""
        get = self._rows().get
        return sum([n * _rule_bound(needs, bounds, new, get)
                    for b in bases for needs, n, bounds, new in _distinct(self.program, b)])

    def admit(self, bases: list[str], allow: float) -> bool:
        """Count the e-nodes this step's round of the multiplying rules of ``bases``
        would make (after loading the pending rows: the counts see what the rules will
        see; run where their bound from the rows, :meth:`apriori`, does not fit);
        whether they fit ``allow``. When they do not, they are left out for the rest of
        the run and ``held_back`` records what each would have made. The counts are
        the counting twins' (:meth:`_twin_counts`), or the replay's
        (:meth:`_replayed_counts`), which are the same."""
        todo = [(i, name) for b in bases for i, name in self.program.mult.get(b, [])]
        now = (self._twin_counts(bases, todo) if self.mirror is None
               else self._replayed_counts(todo, allow))
        step: list[tuple[str, int]] = []
        for i, name in todo:
            # a counter only grows (its merge adds): this step's count is what it gained
            step.append((name, now[i] - self.counts.get(i, 0)))
            self.counts[i] = now[i]
        if sum(n for _, n in step) <= allow:
            return True
        self.multiplying = False
        for name, n in step:
            if n:
                self.held_back[name] = self.held_back.get(name, 0) + n
        return False

    def _twin_counts(self, bases: list[str], todo: list[tuple[int, str]]
                     ) -> dict[int, int]:
        """The counting twins' counters after one run of the twins of ``bases`` (one
        egglog call, which also loads the pending rows), by multiplying rule.

        A twin runs only in :meth:`admit`: after steps whose rules ran on their bound
        without it, its count also holds the matches its rule fired in those steps
        (semi-naive matching finds every match with a row newer than the twin's last
        run): an over-count, never an under-count."""
        counting = [self.runnable_parts([f"{b}_count"]) for b in bases
                    if self.program.mult.get(b)]
        out = self.ins.flush("\n".join(f"(run {self.store.combined(rs)} 1)"
                                       for rs in counting if rs), late=False)
        ran = bindings.RunScheduleOutput
        self.store.cur.egg_iterations += sum(1 for o in out if type(o) is ran)
        egraph = self.store.egraph
        now: dict[int, int] = {}
        for i, _ in todo:
            v = egraph.lookup_function(COUNT_FN, [_i64(egraph, i)])
            now[i] = 0 if v is None else egraph.value_to_i64(v)
        return now

    def _replayed_counts(self, todo: list[tuple[int, str]], allow: float
                         ) -> dict[int, int]:
        """:meth:`_twin_counts` on the run's mirror: the pending rows loaded, then each
        rule's matches (``RuleBook.count``) times its ``new_nodes`` added to its counter.

        At a run's first count a twin has seen none of the e-graph's rows (every row
        was loaded in this run, after the twin's last run: the reset deleted those of
        earlier runs), so it counts every match, as here. At a later count it counts
        the matches with a row new since its last run (and those of rebuilt rows): a
        part of every match, so the same when there is none. A rule whose twin counts
        fewer matches (``RuleBook.count``) gives the twin's decision only when the
        counts fit ``allow``. Elsewhere the replay stops (:class:`ReplayStopped`)."""
        m = self.mirror
        assert m is not None
        self._load_waiting()
        found = rule_book(self.program).count(m, self.program, [i for i, _ in todo])
        if self.counts and any(n for n, _ in found.values()):
            raise ReplayStopped("a later count of the counting twins with matches")
        new, counts = self.program.mult_new, self.counts
        if not all(exact for n, exact in found.values() if n) and \
                sum(n * new[i] for i, (n, _) in found.items()) > allow:
            raise ReplayStopped("a count of more matches than a counting twin's")
        return {i: counts.get(i, 0) + n * new[i] for i, (n, _) in found.items()}

    def bound(self, i: int, rows: dict[str, int] | None = None) -> float:
        """At most how many e-nodes a round of the multiplying rule ``i`` makes now
        (its ``match_bounds`` from the rows times its ``new_nodes``; infinity when it
        has no such bound, 0 when a constructor it needs has no row). ``rows``: the
        rows per constructor (:meth:`_rows`) when the caller has them."""
        get = (self._rows() if rows is None else rows).get
        program = self.program
        bounds = program.mult_bounds[i]
        return _rule_bound(program.mult_ctors[i].union(*bounds or ()), bounds,
                           program.mult_new[i], get)

    def _rows(self) -> dict[str, int]:
        """The rows per constructor: the e-graph's after the last step and those
        waiting to load."""
        rows = dict(self.present)
        for c, n in self.ins.pending_ctors.items():
            rows[c] = rows.get(c, 0) + n
        return rows

    # ---- the tripwire -----------------------------------------------------------
    def check(self) -> None:
        """Run the tripwire over the run's e-graph; an empty interval of a never-Invalid
        class raises the :class:`UnsoundError` :meth:`diagnose` gives."""
        if self.mirror is not None:  # (egglog never held this run's e-graph)
            if empty_interval(self.mirror) is not None:
                raise self.diagnose(self.snap)
            return
        try:
            self.store.cmd(f"(run {CHECK_RULESET} 1)")
        except bindings.EggSmolError as e:
            if TRIPWIRE in str(e):
                raise self.diagnose() from None
            raise
        self.store.cur.egg_iterations += 1

    def diagnose(self, snap: Snapshot | None = None) -> UnsoundError:
        """The error of an empty interval in ``snap`` (None: the e-graph read now)."""
        if snap is None:
            snap = Snapshot(self.store.egraph, self.ins)
        bad = [c for c in sorted(snap.lo) if c in snap.hi and snap.lo[c] > snap.hi[c]
               and c in snap.defined]
        if not bad:
            return UnsoundError(TRIPWIRE)
        c = bad[0]
        desc = "; ".join(f"{n.ctor}{n.fields}" for n in list(snap.class_nodes(c))[:6])
        return UnsoundError(f"e-class {c} has an empty interval lo={snap.lo[c]} > "
                            f"hi={snap.hi[c]} (an unsound rewrite unioned different values); "
                            f"its e-nodes: {desc}")

    # ---- the loop -----------------------------------------------------------------
    def loop(self) -> None:
        """Iterate until a stop (``stop``): each iteration a step, a snapshot and a
        computed pass (see the module docstring)."""
        while self.stop is None:
            self.stop = self._spent()
            if self.stop is None:
                self._iterate()

    def _spent(self) -> StopReason | None:
        """The budget spent before the next step, if one is."""
        limits, sizes = self.limits, self.sizes
        if self.it >= limits.iterations:
            return StopReason.ITERATIONS
        growth = min(max(sizes[-1] / sizes[-2], 1.0), 4.0) if len(sizes) > 1 else 2.0
        if sizes and sizes[-1] * growth > limits.enodes:
            return StopReason.ENODES
        if self.clock.over():
            return StopReason.TIME  # (the hard limit: a safety net, never a decision)
        if self._memory_over():
            return StopReason.MEMORY
        return None

    def _memory_over(self) -> bool:
        self.rss_peak = max(self.rss_peak, rss_bytes() - self.rss0)
        return self.rss_peak > self.limits.memory

    def _iterate(self) -> None:
        """One iteration's step and snapshot, then its computed pass."""
        limits, clock = self.limits, self.clock
        # the e-nodes this step's multiplying rules may make: a share of the room the
        # e-node budget has left
        size = (self.sizes[-1] if self.sizes else 0) + self.ins.pending_nodes
        t_it = time.perf_counter()
        with clock.phase(self.times, "egglog" if self.mirror is None else "replay"):
            changed = self.step(True, STEP_ROOM * (limits.enodes - size))
        if self.emitted and not self.emitted[-1] and not self.step_updated:
            # the last pass recorded nothing and no rule changed anything: the e-graph
            # is the one that snapshot read, and another pass would find nothing new
            # (not saturated when rules were left out for the room)
            self.stop = StopReason.SATURATED if self.multiplying else StopReason.ENODES
            return
        if self._memory_over():
            self.stop = StopReason.MEMORY  # (before reading the e-graph: a snapshot costs more)
            return
        self.peak = max(self.peak, self.step_size)
        # the step's rules took the e-graph past the budget (or the step ran past the
        # hard time limit): stop, and extract from the last snapshot rather than read
        # (and extract from) an e-graph this big
        stop = None
        if self.step_size > limits.enodes:
            stop = StopReason.ENODES
        elif self.snap is not None and clock.over():
            stop = StopReason.TIME
        if stop is not None and self.snap is not None:
            self.stale = True
            self.stop = stop
            return
        self.it += 1
        with clock.phase(self.times, "snapshot"):
            self.sizes.append(self.read(self.it).enodes)
        if stop is not None:
            self.stop = stop
            return
        self._computed_pass(changed, t_it)

    def start_replay(self) -> None:
        """Replay this run's steps in Python (:mod:`.pystep`: ``mirror`` set) when it
        may: an index-only run whose insertion recorded at most ``pystep.MAX_ROWS``
        rows, not kept for inspection (the record reads egglog's e-graph)."""
        if self.replay and self.tracer is None and not (self.fixed or self.fixed_analysis) \
                and self.ins.pending_nodes <= pystep.MAX_ROWS:
            self.mirror = Mirror()

    def _replay_step(self, native: bool, allow: float) -> bool:
        """:meth:`step` on the run's :class:`~.pystep.Mirror` (no egglog command): the
        waiting rows loaded, a round of the native rules, the late bounds, the interval
        rules to their fixed point; the sizes and ``step_updated`` as egglog's report
        gives them. :class:`ReplayStopped` where egglog must run the steps."""
        m, ins, book = self.mirror, self.ins, rule_book(self.program)
        assert m is not None
        parts = tuple([p for ps in self.native_parts(allow) for p in ps]) if native else ()
        self._load_waiting()  # (unless a count loaded them: :meth:`_replayed_counts`)
        late = ins.take_late()
        changed = book.round(m, parts, self.matches, self.counted) if parts else False
        tightened = m.load(late)
        rounds = book.analyse(m, ANALYSIS_CAP)
        if not native and empty_interval(m) is not None:
            raise self.diagnose(snapshot_of(m, ins))
        self.present = table_sizes(m)
        self.step_size = sum(self.present.values())
        self.step_updated = changed or tightened or rounds > 1
        return changed

    def _load_waiting(self) -> None:
        """Load the rows waiting to load (but the late bounds) into the run's mirror;
        :class:`ReplayStopped` when the e-graph would pass ``pystep.MAX_ENODES``."""
        m = self.mirror
        assert m is not None
        rows, facts, subs = self.ins.take_waiting()
        size = len(m.table) + len(rows) + len(facts) + len(subs)
        if size > pystep.MAX_ENODES:
            raise ReplayStopped(f"{size} e-nodes: egglog runs them")
        m.load(rows, facts, subs)

    def _computed_pass(self, changed: bool, t_it: float) -> None:
        """The computed pass over the last snapshot, and the stops it decides."""
        snap, ins = self.snap, self.ins
        assert snap is not None
        root_cls = [snap.cls_of_handle(h) for h in self.handles]
        pending0 = ins.pending
        # the pass stops once its rows fill the next step's share of the room, or at
        # the hard time limit (both read through the one clock it checks)
        rows_cap = pending0 + STEP_ROOM * max(0, self.limits.enodes - snap.enodes)
        times = self.times
        with self.clock.phase(times, "computed"):
            res = python_pass(snap, ins, self.program.pyrules, self.pass_state,
                              deadline=self.clock.deadline(),
                              clock=partial(_pass_clock, ins, rows_cap),
                              roots=root_cls, model=self.model)
        self.late = self.late or res.late
        for k, v in res.matches.items():
            self.matches[k] = self.matches.get(k, 0) + v
        for k, v in res.times.items():
            times["computed." + k] = times.get("computed." + k, 0.0) + v
        self.per_iter.append((snap.enodes, round(time.perf_counter() - t_it, 4)))
        self.emitted.append(ins.pending - pending0)
        if not changed and ins.pending == 0:
            self.stop = StopReason.SATURATED if self.multiplying else StopReason.ENODES
            return
        self.best.append(_root_cost(snap, root_cls))  # the pass priced every class
        if is_stalled(self.best, self.sizes, self.limits.stall, self.emitted):
            self.stop = StopReason.STALLED
        elif res.skipped or res.late:
            self.stop = StopReason.ENODES if ins.pending > rows_cap else StopReason.TIME


def _rule_bound(needs: frozenset[str], bounds: Any, new: int,
                get: Callable[[str], int | None]) -> float:
    """A multiplying rule's bound (:meth:`Run.bound`): 0 when a constructor of ``needs``
    (those its pattern needs and those its ``bounds`` name) has no row, infinity with
    no ``bounds``, else ``new`` times the least product of a bound's rows."""
    for c in needs:
        if not get(c):
            return 0
    if bounds is None:
        return math.inf
    return new * min([math.prod(map(get, t)) for t in bounds])


def _distinct(program: Program, base: str
              ) -> list[tuple[frozenset[str], int, tuple | None, int]]:
    """The multiplying rules of ``base`` with distinct bounds (their constructors,
    ``match_bounds`` and ``new_nodes``: many rules come in pairs that share them), each
    as ``(the constructors it needs and those its bounds name, how many rules share
    its bound, its bounds, its new_nodes)`` (:meth:`Run.apriori` adds the bound of
    each once; kept with the runnable parts, a pure function of the program)."""
    memo, key = program.memo, ("distinct bounds", base)
    out = memo.get(key)
    if out is None:
        first: dict[tuple, int] = {}
        for i, _ in program.mult.get(base, ()):
            bounds = program.mult_bounds[i]
            kind = (program.mult_ctors[i], None if bounds is None else tuple(bounds),
                    program.mult_new[i])
            first[kind] = first.get(kind, 0) + 1
        # (a constructor of a bound with no row makes that bound's product, and so the
        # rule's bound, 0: :func:`_rule_bound` tests it with those its pattern needs)
        out = [(needs.union(*bounds or ()), n, bounds, new)
               for (needs, bounds, new), n in first.items()]
        if len(memo) >= _RUNNABLE_KEYS:
            memo.clear()
        memo[key] = out
    return out


def _pass_clock(ins: Inserter, rows_cap: float) -> float:
    """The clock a computed pass reads: the time, or infinity (past every deadline)
    once the pass's rows passed ``rows_cap``."""
    return math.inf if ins.pending > rows_cap else time.perf_counter()


def _root_cost(snap: Snapshot, roots: list[int]) -> float | None:
    """The summed best tree cost of the (distinct) root classes, as the computed pass
    priced them (``Snapshot.best_cost``); None when a root has none."""
    total = 0.0
    for r in dict.fromkeys(roots):
        c = snap.best_cost.get(r)
        if c is None:
            return None
        total += c
    return total


def is_stalled(costs: list[float | None], sizes: list[int], k: int,
               emitted: list[int] | None = None) -> bool:
    """Whether the last ``k`` iterations found no root term cheaper by more than
    ``STALL_GAIN`` of the roots' cost while the e-graph grew by at most ``STALL_GROWTH``
    over them, and the last computed pass recorded at most ``STALL_EMITTED`` of the
    e-graph in new rows (``costs``/``sizes``/``emitted``: one per iteration). The last
    condition keeps a run going whose last pass started something that pays only later."""
    if k <= 0 or len(costs) <= k:
        return False
    now, then = costs[-1], costs[-1 - k]
    if now is None or then is None or now < then - max(1e-9, STALL_GAIN * then):
        return False
    if emitted and emitted[-1] > sizes[-1] * STALL_EMITTED:
        return False
    return sizes[-1] <= sizes[-1 - k] * (1.0 + STALL_GROWTH)


def _i64(egraph: Any, i: int) -> Any:
    """The egglog value of the i64 ``i`` (a key of ``COUNT_FN``'s rows)."""
    return egraph.eval_expr(bindings.Lit(bindings.PanicSpan(), bindings.Int(i)))[1]


def _inf(v: Any) -> bool:
    return isinstance(v, float) and (math.isinf(v) or math.isnan(v))
