"""The e-graph engine: a warm egglog e-graph, the saturation loop, extraction.

One :class:`Session` owns an egglog ``EGraph`` with the declarations, the
analyses and the native rules of one rule set selection already loaded (three, in
fact, :data:`EGRAPH_KINDS`: a run whose input has no fixed-width integer node goes to
one without the fixed-width rule sets, which could not match there and would only be
built and searched in every round; plain index arithmetic (:data:`NARROW_CTORS`) to one
with only the rules that can match it, widening to the former when another constructor
turns up; the others are built on the first input that needs them). Every
``run`` inserts the roots (many roots share one e-graph and every shared subgraph is
inserted once), iterates, extracts, and deletes its rows again (:mod:`.reset`: no
egglog push/pop, which copies every rule), so sessions are reused across calls
(``session_for`` caches one per selection and thread; building one takes about 0.25 s,
and a session builds itself a fresh e-graph after :data:`REBUILD_ITERATIONS` egglog
iterations, which keeps its memory bounded).

One iteration (see :mod:`eqsat.engines.egraph.schedules` for the budgets):

1. the pending insertions (inputs with the IR's bounds), one round of the native egglog
   rewrites (and of the fixed-width integer ones, ``native_fixed``, when the input has
   such a dtype), the bounds the last computed pass seeded for its e-nodes, the
   interval analysis to a fixed point -- all in one egglog call (the tripwire, which
   panics on an empty interval, runs once a run, before its extraction: an empty
   interval stays empty);
2. a snapshot of the e-graph (``freeze``), with the never-Invalid classes
   (``Def``) computed and sent back for the native rules' guards, and the e-nodes
   that only feed the rules (one with its own class among its children, an operator
   in a class that holds a constant) sent back to be subsumed;
3. the computed rewrites (:mod:`eqsat.engines.egraph.computed`) on the classes that
   changed; their results are recorded as rows, loaded by the next step;
4. the budgets are checked: the work budgets (e-nodes, iterations) decide; memory and
   wall time are hard safety limits (a run stopped by one says so).

Step 1 is bounded (see :mod:`~eqsat.engines.egraph.schedules`): the native rules whose
matches multiply run when what they may make fits, bounded from the rows of the
constructors their patterns name (``match_bounds``) or, where that bound does not fit,
counted first (their counting twins, in an egglog call of their own that also loads the
rows); they are left out for the rest of the run when what they would make does not
fit; a step that takes the e-graph past the budget ends the run, which extracts from
its last snapshot.

The run stops when nothing changes (``"saturated"``: the native rules changed nothing
and the computed pass recorded nothing; or, found right after step 1, the last pass
recorded nothing and that step's rules changed nothing, so steps 2-3 are skipped and
the last snapshot is extracted), when the roots' best tree
cost (as the computed pass priced it) has not improved for ``Limits.stall``
iterations while the e-graph barely grew and the last computed pass recorded
little (``"stalled"``: the last iterations of a run rarely find anything; a pass
that opens a guarded copy of a value pays only later, so it keeps the run going),
or when a budget is reached (``"iterations"``,
``"enodes"``, ``"time"``); the best terms found so far are then
extracted root by root under the chosen cost model: tree extraction, and the
DAG-aware extractor of :mod:`extraction` where the tree choice shares a class.
Wall time and memory are hard safety limits, never a decision: see
:mod:`~eqsat.engines.egraph.schedules`.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import (
    ANALYSIS_CTORS,
    CHECK_RULESET,
    FIXED_ANALYSIS_DTYPES,
    FIXED_DTYPES,
    LATE_RULESET,
    TRIPWIRE,
    UnsoundError,
    analysis_parts,
    analysis_program,
)
from eqsat.engines.egraph.computed import PassState, python_pass
from eqsat.engines.egraph.encoding import (
    CTORS,
    SUBSUMABLE,
    ArgTable,
    Inserter,
    Snapshot,
    declarations,
    dt_name,
    uop_ctor,
)
from eqsat.engines.egraph.extracting import extract_roots
from eqsat.engines.egraph.record import Tracer
from eqsat.engines.egraph.reset import (
    HANDLE_CTOR,
    RESET_HANDLES,
    RESET_RULESET,
    RESET_SUBSUMED,
    leftover,
    reset_program,
)
from eqsat.engines.egraph.rulesets import FINISHING, resolve
from eqsat.engines.egraph.schedules import (
    COUNT_FN,
    STALL_EMITTED,
    STALL_GROWTH,
    STEP_ROOM,
    Clock,
    Limits,
    StopReason,
    count_program,
    gc_paused,
    match_bounds,
    multiplies,
    new_nodes,
    pattern_ctors,
    rss_bytes,
)
from eqsat.engines.egraph.seeding import Seeds, baseline_seeds, no_worse_than_start
from eqsat.ir.egglog_text import commands
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from rules.native import ERule, int_dt_twins

__all__ = ["Session", "session_for", "clear_sessions", "ANALYSIS_CAP", "FIXED_RULESET",
           "fixed_only", "is_stalled"]

#: rounds of the interval analysis per step at most. A sound e-graph settles in about
#: its depth; a class that is Invalid everywhere may hold a node such as ``c + 3`` of
#: itself, whose interval (vacuous: the class has no value) would climb for ever.
ANALYSIS_CAP = 512

#: the native rules that match fixed-width integer or float nodes only (their guards say
#: ``(FixDt dt)``, or the rule of the language says so) form this rule set; a run whose
#: input has no such dtype skips it (rewrites keep their operands' dtypes)
FIXED_RULESET = "native_fixed"

#: the native rules of the finishing groups (``rulesets.FINISHING``) form this rule set; a
#: run adds it to its steps once its other rules are done (see :meth:`Session._run`)
FINISH_RULESET = "native_finish"
#: egglog steps of a run's finishing (:meth:`Session._finish`): the finishing rules', then
#: the native rules' alone on what they made
FINISH_STEPS = 2

#: egglog keeps a report of every iteration it ever ran (its "overall run report") and
#: the union-find of every class a run made, so a warm session's memory grows with every
#: iteration (about 2.7 KB each, docs/perf.md). After this many iterations a session
#: builds a fresh e-graph (about 0.25 s), when a run ends with that much of its time
#: budget left (see :meth:`Session.run`)
REBUILD_ITERATIONS = 10000

_RUN_OUTPUT = bindings.RunScheduleOutput  # the output of a (run ...) command
_NODE_CTORS = frozenset(CTORS)  # the egglog functions whose rows are e-nodes

log = logging.getLogger(__name__)


_FIX_DT_GUARD = re.compile(r"\(FixDt \w+\)")


def fixed_only(rule: Any) -> bool:
    """Whether a native rule matches fixed-width integer or float nodes only (a ``FixDt``
    guard, ``FIX_DT`` or on another variable, or a rule of the language that says so:
    its float constants' variants)."""
    return getattr(rule, "wide", False) or any(_FIX_DT_GUARD.search(w) for w in rule.when) \
        or bool(_FIX_DT_GUARD.search(rule.query))


#: the kinds of a session's e-graphs, by the native rules they hold: every rule set
#: (``"fixed"``), all but the fixed-width ones (``"index"``), and only the rules whose
#: pattern names nothing but :data:`NARROW_CTORS` (``"narrow"``; see :meth:`Session.run`)
EGRAPH_KINDS = ("fixed", "index", "narrow")

#: the constructors of plain index arithmetic: an input made of these alone runs in the
#: ``"narrow"`` e-graph, which holds only the native rules whose pattern names nothing
#: else (a rule naming another constructor cannot match an e-graph without its rows)
NARROW_CTORS = frozenset(("Cst", "Leaf", "G1", "Add", "Sub", "Neg", "Mul", "Idiv", "Mod",
                          "Floordiv", "Floormod"))


class _WidenError(Exception):
    """A run in the narrow e-graph met a constructor it does not load (``_narrow_loads``)
    before a native round: it starts again in the index e-graph."""


class _EGraph:
    """One egglog e-graph of a session: the e-graph, its argument table and inserter,
    its kind (:data:`EGRAPH_KINDS`), how many egglog iterations its overall report
    holds, and how long it took to build."""

    __slots__ = ("egraph", "args", "ins", "kind", "build_seconds", "egg_iterations",
                 "base_sizes", "combined", "pushed", "analysis")

    def __init__(self, egraph: Any, args: ArgTable, ins: Inserter, kind: str,
                 build_seconds: float, base_sizes: dict[str, int],
                 analysis: dict[str, list[tuple[str, str, list[str]]]]):
        self.egraph, self.args, self.ins = egraph, args, ins
        #: its interval rules' rule sets by kind and constructor (``analysis_parts``)
        self.analysis = analysis
        self.kind, self.build_seconds = kind, build_seconds
        self.egg_iterations = 0
        #: table -> rows when built (the dtype facts): what a run's reset returns to
        self.base_sizes = base_sizes
        #: the rule-set parts a step runs together -> the combined rule set declared for
        #: them (:meth:`Session._runnable`)
        self.combined: dict[tuple[str, ...], str] = {}
        #: per ``(push)`` not yet popped, the combined rule sets declared before it
        #: (this e-graph's and its inserter's; see :meth:`Session._cmd`)
        self.pushed: list[tuple[dict, dict]] = []

    @property
    def fixed_width(self) -> bool:
        """Whether it holds the fixed-width rule sets."""
        return self.kind == "fixed"

    def __repr__(self) -> str:
        return f"<_EGraph {self.kind} egg_iterations={self.egg_iterations}>"


def _current(name: str) -> property:
    """The session attribute ``name`` of its current e-graph (read and written there)."""
    return property(lambda s: getattr(s._cur, name),
                    lambda s, v: setattr(s._cur, name, v),
                    doc=f"The current e-graph's ``{name}`` (:class:`_EGraph`).")


def _fixed_width_of(nodes: Iterable[UOp]) -> tuple[bool, bool]:
    """Whether ``nodes`` hold a fixed-width integer or float node (the native rules of
    those dtypes may match), and one the fixed-width interval rules match
    (FIXED_ANALYSIS_DTYPES)."""
    fixed = fixed_analysis = False
    for u in nodes:
        d = dt_name(u.dtype)
        if d == "index":
            continue
        fixed = fixed or d in FIXED_DTYPES or u.dtype.is_float or u.dtype.is_fixed_int
        fixed_analysis = fixed_analysis or d in FIXED_ANALYSIS_DTYPES.get(uop_ctor(u), ())
    return fixed, fixed_analysis


#: the name of the interval rules' rule sets (``analysis_program``)
_ANALYSIS = "analysis"

#: constructors every index input has, whose interval rules always run
_ALWAYS_CORE = frozenset(("Cst", "G1"))
#: the constructors of index arithmetic and its conditions: core where a rule makes them
_INDEX_CORE = frozenset(("Add", "Sub", "Mul", "Idiv", "Mod", "Neg", "Max", "Min", "Lt",
                         "Where", "And", "Or", "Not"))


def analysis_ext(native: list[ERule]) -> frozenset[str]:
    """The constructors whose interval rules run only in a run that inserted one of them
    (``analysis_program``'s ``ext``): those outside the core, the least set that holds
    constants, ranges, the index arithmetic rules make, and what rules make from core
    constructors alone (a rule whose pattern needs an ``ext`` constructor fires only
    where one was inserted; the computed rules' e-nodes are insertions too). A run that
    inserted none of them cannot hold such an e-node, so those rules could not match."""
    rules = [(set(_CTOR_CALL.findall(f"{r.lhs} {r.query}")) & ANALYSIS_CTORS,
              set(_CTOR_CALL.findall(f"{r.rhs} {r.actions}"))) for r in native]
    # the least fixed point from index arithmetic: what rules make from core is core
    core = set(_INDEX_CORE | _ALWAYS_CORE) & {c for _, rhs in rules for c in rhs} | _ALWAYS_CORE
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs <= core and not rhs <= core:
                core |= rhs
                changed = True
    return frozenset(ANALYSIS_CTORS - core)


_CTOR_CALL = re.compile(r"\((\w+)")


def _kind_of(roots: list[UOp], orders: list[list[UOp]] | None = None) -> str:
    """The kind of e-graph a run of ``roots`` starts in: ``"fixed"`` when a node needs
    the fixed-width rule sets (:func:`needs_fixed_width`), ``"narrow"`` when every node
    is one of :data:`NARROW_CTORS`, else ``"index"``."""
    if orders is None:
        orders = [r.toposort() for r in roots]
    if any(needs_fixed_width(roots, orders)):
        return "fixed"
    for order in orders:
        for u in order:
            if uop_ctor(u) not in NARROW_CTORS:
                return "index"
    return "narrow"


def needs_fixed_width(roots: list[UOp], orders: list[list[UOp]] | None = None
                      ) -> tuple[bool, bool]:
    """:func:`_fixed_width_of` every node of ``roots``: an input without either runs in
    the session's index-only e-graph (rewrites keep their operands' dtypes, so no
    fixed-width node appears later). ``orders``: the roots' toposorts when known."""
    seen: set[int] = set()
    nodes = []
    for order in orders if orders is not None else [r.toposort() for r in roots]:
        for u in order:
            if id(u) not in seen:
                seen.add(id(u))
                nodes.append(u)
    return _fixed_width_of(nodes)


class Session:
    """A warm e-graph for one rule set selection (see the module docstring)."""

    def __init__(self, rulesets: list[str] | tuple[str, ...] | str | None = None):
        self.groups, self.native, self.pyrules = resolve(rulesets)
        #: the selection as given (it keeps the rules given as objects alive: session_for
        #: keys them by identity)
        self.selection = rulesets
        #: egglog rule name -> the name its matches count under (the rule of the language
        #: its variants implement; an IntDt rule is two egglog rules)
        self._native_names: dict[str, str] = {}
        #: the arguments the native rules name (float constants, the Invalid's None), in
        #: order: each e-graph's argument table gives them the keys 0, 1, ... first
        self._rule_args = ArgTable()
        key = self._rule_args.key

        #: (rule set part, egglog program) of each egglog rule of the native rules. The
        #: rules whose matches multiply (``schedules.multiplies``) go to ``<set>_mult``,
        #: each with a counting twin in ``<set>_count`` (adding to the egglog function
        #: ``StepCount<i>``); a round of ``<set>`` and ``<set>_mult`` runs their parts
        #: (``_parts``) combined
        self._native_programs: list[tuple[str, str]] = []
        #: the constructors each of them names in its pattern (``pattern_ctors``)
        self._program_ctors: list[frozenset[str]] = []
        #: rule set -> its multiplying rules: (i, native rule name, e-nodes per match)
        self._mult: dict[str, list[tuple[int, str, int]]] = {}
        #: multiplying rule -> the constructors its pattern needs (``pattern_ctors``)
        self._mult_ctors: dict[int, frozenset[str]] = {}
        #: multiplying rule -> its egglog rule, and its bound on the matches from the
        #: rows (``match_bounds``; found when an e-graph that holds it is built)
        self._mult_rules: dict[int, ERule] = {}
        self._mult_bounds: dict[int, list[tuple[str, ...]] | None] = {}
        #: constructor -> its rows in the e-graph after the last step (egglog's sizes)
        self._present: dict[str, int] = {}
        #: rule set (``native``, ``native_mult``, ``native_fixed``, ...) -> its parts: each
        #: an egglog rule set of the rules whose patterns name one set of constructors,
        #: ``(part name, those constructors)``; a step runs only the parts whose
        #: constructors all have rows (:meth:`_runnable`)
        self._parts: dict[str, list[tuple[str, frozenset[str]]]] = {}
        part_of: dict[tuple[str, frozenset[str]], str] = {}

        def part(ruleset: str, need: frozenset[str]) -> str:
            name = part_of.get((ruleset, need))
            if name is None:
                name = part_of[ruleset, need] = f"{ruleset}_p{len(part_of)}"
                self._parts.setdefault(ruleset, []).append((name, need))
            return name

        #: rule set part -> the constructors its rules make (their right sides, actions)
        self._makes: dict[str, frozenset[str]] = {}
        for r in self.native:
            twins = int_dt_twins(r)
            pairs = [(FIXED_RULESET if fixed_only(r) else "native", r)] if twins is None \
                else list(zip(("native", FIXED_RULESET), twins, strict=True))
            if r.group in FINISHING:
                pairs = [(FINISH_RULESET, t) for _, t in pairs]
            for ruleset, t in pairs:
                self._native_names[t.name] = r.law
                need = pattern_ctors(t)
                if multiplies(t):
                    i = sum(map(len, self._mult.values()))
                    self._mult.setdefault(ruleset, []).append((i, r.law, new_nodes(t)))
                    self._mult_ctors[i] = need
                    self._mult_rules[i] = t
                    count = part(f"{ruleset}_count", need)
                    self._native_programs.append((count, t.fill(count_program(
                        t, count, f"{COUNT_FN}{i}"), key)))
                    self._program_ctors.append(need)
                    ruleset = f"{ruleset}_mult"
                name = part(ruleset, need)
                self._makes[name] = self._makes.get(name, frozenset()).union(
                    _CTOR_CALL.findall(f"{t.rhs} {t.actions}")).intersection(CTORS)
                self._native_programs.append((name, t.program(name, key)))
                self._program_ctors.append(need)
        self._has_fixed_rules = any(rs.startswith(FIXED_RULESET)
                                    for rs, _ in self._native_programs)
        #: the rule set parts a finishing step runs instead of the native rules (None:
        #: an ordinary step; see :meth:`_finish`)
        self._only: tuple[str, ...] | None = None
        #: the constructors the narrow e-graph loads and holds the rules of: plain index
        #: arithmetic and what the finishing rules make from it (a select of a division
        #: and its condition), so that finishing a narrow run does not widen it
        self._narrow_loads = NARROW_CTORS.union(*[
            self._makes[part] for part, need in self._parts.get(FINISH_RULESET, ())
            if need <= NARROW_CTORS])
        #: whether this run still runs the multiplying rules: they are left out for the
        #: rest of the run after a step whose count did not fit its room
        self._counted = True
        #: native rule -> the e-nodes its matches would have made when it was left out
        self.held_back: dict[str, int] = {}
        #: multiplying rule -> its counter's value (its matches' e-nodes so far this run)
        self._counts: dict[int, int] = {}
        self._ext = analysis_ext(self.native)
        self._fixed = False  # this run's e-graph has fixed-width integer nodes
        #: ... and an e-node the fixed-width interval rules match (FIXED_ANALYSIS_DTYPES)
        self._fixed_analysis = False
        self.capped = 0  # analysis steps that hit ANALYSIS_CAP
        self.rebuilds = 0  # fresh e-graphs built after REBUILD_ITERATIONS
        self.step_updated = True  # whether the last _step changed the e-graph
        self.step_size = 0  # the e-graph's e-nodes after the last _step
        #: the session's e-graphs by kind (:data:`EGRAPH_KINDS`): every round builds
        #: and searches the rules, and an input runs in the one with the fewest rules
        #: that can match it; each built on first use
        self._egraphs: dict[str, _EGraph] = {}
        self._cur = self._egraph("index")
        self.widened = 0  # runs that left the narrow e-graph for the index one
        self._orders: dict[int, list[UOp]] = {}  # _select's toposorts, for _insert

    # the current e-graph's parts (see _EGraph)
    egraph = _current("egraph")
    args = _current("args")
    ins = _current("ins")
    build_seconds = _current("build_seconds")
    egg_iterations = _current("egg_iterations")

    def _egraph(self, kind: str) -> _EGraph:
        e = self._egraphs.get(kind)
        if e is None:
            e = self._egraphs[kind] = self._build(kind)
        return e

    def _build(self, kind: str) -> _EGraph:
        """A fresh egglog e-graph of ``kind`` with the declarations, analyses and rules
        loaded: the fixed-width rule sets' rules only in a ``"fixed"`` one, in a
        ``"narrow"`` one only the rules whose pattern names nothing but
        :data:`NARROW_CTORS` and what the finishing rules make from them
        (``_narrow_loads``)."""
        if kind not in EGRAPH_KINDS:
            raise ValueError(f"e-graph kind {kind!r}: one of {EGRAPH_KINDS}")
        fixed_width = kind == "fixed"
        t = time.perf_counter()
        egraph = bindings.EGraph()
        args = ArgTable()
        for i in range(len(self._rule_args)):  # the keys the native rules were written with
            args.key(self._rule_args.arg(i))
        # a narrow e-graph never holds another constructor's rows (a run widens first):
        # their insertion and interval rules would only be built in every round
        only = self._narrow_loads if kind == "narrow" else None
        prog = [declarations(only), analysis_program(_ANALYSIS, fixed=fixed_width,
                                                     ext=self._ext, only=only)]
        for base in ("native", FIXED_RULESET, FINISH_RULESET):
            prog += [f"(ruleset {part})" for rs in (base, f"{base}_mult", f"{base}_count")
                     for part, _ in self._parts.get(rs, ())]
            prog += [f"(function {COUNT_FN}{i} () i64 :merge (+ old new))"
                     for i, _, _ in self._mult.get(base, [])]
        prog += [p for (rs, p), need in zip(self._native_programs, self._program_ctors,
                                            strict=True)
                 if (fixed_width or not rs.startswith(FIXED_RULESET)) and
                 (kind != "narrow" or need <= self._narrow_loads)]
        # one command at a time: the bindings copy a command's whole source text into
        # every span of its AST, so one big program is slow to load (docs/perf.md)
        text = "\n".join(prog)
        for cmd in commands(text):
            egraph.run_program(*egraph.parse_program(cmd))
        # the tables with rows now (the dtype facts) are never written by a run; every
        # other one is emptied when a run ends (:mod:`.reset`)
        base = dict(egraph.run_program(*egraph.parse_program("(print-size)"))[-1].sizes)
        for cmd in commands(reset_program(text, {n for n, k in base.items() if k}, only)):
            egraph.run_program(*egraph.parse_program(cmd))
        for rs in ("native", FIXED_RULESET) if fixed_width else ("native",):
            for i, _, _ in self._mult.get(rs, ()):
                if i not in self._mult_bounds:
                    self._mult_bounds[i] = match_bounds(self._mult_rules[i])
        secs = time.perf_counter() - t
        log.debug("built the %s e-graph of %d native rules in %.2f s", kind,
                  len(self._native_programs), secs)
        return _EGraph(egraph, args, Inserter(egraph, args, loads=only), kind, secs, base,
                       analysis_parts(_ANALYSIS, fixed=fixed_width, ext=self._ext,
                                      only=only))

    def prepare(self, roots: list[UOp] | None = None) -> None:
        """Build now the e-graph(s) a run of ``roots`` will use (every kind when None),
        so the one-time build is not part of a run's time budget."""
        if roots is None:
            for kind in EGRAPH_KINDS:
                self._egraph(kind)
        else:
            self._egraph(_kind_of(roots))
            self._egraph("index")  # (where a narrow run widens to)

    def _select(self, roots: list[UOp], widen: bool = False,
                extra: list[UOp] | None = None) -> None:
        """Make current the e-graph ``roots`` need (:func:`_kind_of`, of them and of the
        nodes ``extra`` lists; never the narrow one when ``widen``); the roots'
        toposorts are kept for the insertion that follows."""
        orders = [r.toposort() for r in roots]
        self._orders = {id(r): o for r, o in zip(roots, orders, strict=True)}
        kind = _kind_of(roots, orders + ([extra] if extra else []))
        self._cur = self._egraph("index" if widen and kind == "narrow" else kind)

    def _rebuild(self) -> None:
        log.debug("a fresh e-graph after %d egglog iterations (egglog's run report grows)",
                  self.egg_iterations)
        self._cur.ins.close()
        self._cur = self._egraphs[self._cur.kind] = self._build(self._cur.kind)
        self.rebuilds += 1

    def __repr__(self) -> str:
        return (f"<eqsat.engines.egraph.Session groups={len(self.groups)} "
                f"native={len(self.native)} computed={len(self.pyrules)}>")

    # ---- egglog steps ---------------------------------------------------------
    def _cmd(self, text: str) -> list[Any]:
        """Run egglog commands. A ``(push)`` or ``(pop)`` alone also saves or restores
        which combined rule sets are declared (:meth:`_runnable`, ``Inserter``): those
        declared in a pushed e-graph go with it at the pop."""
        out = self.egraph.run_program(*self.egraph.parse_program(text))
        cur = self._cur
        if text == "(push)":
            cur.pushed.append((dict(cur.combined), dict(cur.ins.combined)))
        elif text == "(pop)" and cur.pushed:
            cur.combined, cur.ins.combined = cur.pushed.pop()
        return out

    def _step(self, native: bool, matches: dict[str, int], allow: float = math.inf,
              check: bool | None = None) -> bool:
        """Load pending rows, then (one egglog call) one round of the native rules and
        the analysis to a fixed point (at most ``ANALYSIS_CAP`` rounds); without
        ``native``, the analysis only. Whether the native rules changed anything; the
        e-graph's size after the step is ``step_size``.

        The native rules run before the analysis: the inserted terms carry the IR's
        bounds and every older class has the last analysis's, all sound; a guard that
        needs a bound not known yet (a computed result loaded by this step, a bound the
        analysis tightens) fires one iteration later (semi-naive matching sees the new
        bound). On the corpus the outputs are those of analysing before the rules too.
        The bounds the last computed pass seeded for its e-nodes (:mod:`.computed.seed`)
        load between the native rules and the analysis: the analysis reaches the same
        fixed point in fewer rounds, and the native guards see what they saw without.

        ``allow``: how many e-nodes the step's multiplying rules may make (a share of the
        room the e-node budget has left). They run when their bound from the rows fits
        (:meth:`_apriori`); else a first egglog call loads the rows and counts their new matches
        (:meth:`_admit`); when they do not fit, the round runs without them (``<set>``
        alone, not with ``<set>_mult``), as every later one of the run does. ``check``:
        the tripwire after the analysis (default: in an analysis-only step)."""
        if (self._fixed or self._fixed_analysis) and not self._cur.fixed_width:
            raise RuntimeError("egglog step: fixed-width integer nodes in the index-only "
                               "e-graph (insert through run() or analyze())")
        narrow = self._cur.kind == "narrow"
        if narrow and not self.ins.ctors <= self._narrow_loads:
            raise _WidenError  # (a row this step would load; see _narrow_holds)
        runs: list[str] = []  # the native rules' runs
        made: set[str] = set()  # the constructors their rules make
        if native and self._only is not None:
            if self._only:
                runs.append(f"(run {self._combined(self._only)} 1)")
                made.update(*[self._makes[p] for p in self._only])
        elif native and self.native:
            bases = self._native_bases()
            every = self._counted and self._mult_may_match(bases) and (
                self._apriori(bases) <= allow or self._admit(bases, allow))
            for b in bases:
                parts = self._runnable_parts([b, f"{b}_mult"] if every else [b])
                if parts:
                    runs.append(f"(run {self._combined(parts)} 1)")
                    made.update(*[self._makes[p] for p in parts])
        # the tripwire (once the analysis settled) in an analysis-only step: a run's
        # native steps leave it to the run's end (:meth:`_check`; an empty interval
        # stays empty, as intervals only tighten and Def only grows)
        check = not native if check is None else check
        ins = self.ins
        loaded = ins.load_runs  # (run insert 1) [+ (run subsume 1)]
        # the late rows (the bounds the last pass seeded) load between the native rules
        # and the analysis: their rules run in the analysis's first round (one run less;
        # the analysis reaches the same fixed point, its rules being monotone). A pass
        # seeds bounds only for the e-nodes it records, so a step after a pass that
        # recorded nothing has none, and its ``step_updated`` is the analysis's alone
        analysis = (f"(run {self._analysis_set(made, ins.has_late)} {ANALYSIS_CAP})\n" +
                    (f"(run {CHECK_RULESET} 1)\n" if check else "") + "(print-size)")
        try:
            out = ins.flush("\n".join(runs), analysis, late_run=False)
        except bindings.EggSmolError as e:
            if TRIPWIRE in str(e):
                raise self._diagnose() from None
            raise
        # (each attribute read converts the whole Rust value to Python: read each once)
        # [rows' insert] + the native runs + the analysis (with the late rows') [+ the
        # tripwire], then the sizes; only the reports read are converted (the loading
        # runs' are not), and of the analysis's only its iterations: every other run is
        # one iteration (``run ... 1``)
        self._present = {name: n for name, n in out[-1].sizes if name in _NODE_CTORS}
        self.step_size = sum(self._present.values())
        done = [o for o in out if type(o) is _RUN_OUTPUT]
        first = loaded
        if first + len(runs) + 1 + check != len(done):
            raise RuntimeError(f"egglog step: {len(done)} run reports, expected "
                               f"{first + len(runs) + 1 + check}")
        natives = [o.report for o in done[first:first + len(runs)]]
        analysed = done[-1 - check].report
        rounds = len(analysed.iterations)
        self.egg_iterations += len(done) - 1 + rounds
        if rounds >= ANALYSIS_CAP:
            self.capped += 1  # the analysis did not settle (see ANALYSIS_CAP)
        changed = False
        for rep in natives:
            fired = False
            for k, v in rep.num_matches_per_rule.items():
                name = self._native_names.get(k.split('"')[1] if '"' in k else k)
                if v and name is not None:
                    fired = True
                    matches[name] = matches.get(name, 0) + v
            changed = changed or (fired and bool(rep.updated))
        # whether a run of the rules (native, analysis) changed the e-graph; the loading
        # runs do not count
        self.step_updated = analysed.updated or any([r.updated for r in natives])
        if narrow and not self._narrow_holds():
            raise _WidenError  # (a rule made another constructor's e-node)
        return changed

    def _analysis_set(self, made: set[str], late: bool = False) -> str:
        """The egglog rule set of this step's interval analysis: the interval rules
        (``_EGraph.analysis``) of the constructors with rows in the e-graph (egglog's
        sizes after the last step), recorded since the run began (``ins.ctors``) or
        ``made`` by this step's native rules, combined. An interval rule matches its
        own constructor's e-nodes only, so the analysis reaches the fixed point of all
        the interval rules. The fixed-width ones run only when an e-node of this run
        may need them; an extension constructor's (``analysis_ext``) only once one is
        here, as every other. ``late``: with the rules loading the late rows
        (:data:`LATE_RULESET`)."""
        have = self._have() | made
        kinds = ("core", "ext", "fixed") if self._fixed_analysis else ("core", "ext")
        of = self._cur.analysis
        leaves = tuple(leaf for k in kinds for leaf, ctor, _ in of[k] if ctor in have)
        if late:
            leaves += (LATE_RULESET,)
        return self._combined(leaves) if leaves else f"{_ANALYSIS}_none"

    def _native_bases(self) -> list[str]:
        """The native rule sets a step of this run runs: ``native``, and the fixed-width
        ones when the run has a fixed-width node and the session such rules."""
        return ["native"] + ([FIXED_RULESET] if self._fixed and self._has_fixed_rules
                             else [])

    def _runnable(self, rulesets: list[str]) -> str | None:
        """:meth:`_runnable_parts` of ``rulesets`` combined (:meth:`_combined`); None
        when there is none."""
        parts = self._runnable_parts(rulesets)
        return self._combined(parts) if parts else None

    def _finish(self, matches: dict[str, int], limits: Limits,
                clock: Clock) -> tuple[bool, bool]:
        """The finishing rules (:data:`FINISH_RULESET`) where a run would stop saturated
        or stalled, when one of them may match (the constructors its pattern names have
        rows): a step of them alone, then up to ``FINISH_STEPS - 1`` steps of the native
        rules over what they made (a select, its condition, its branches' sums): those
        whose patterns name only constructors they make, or one of them beyond plain
        index arithmetic (:data:`NARROW_CTORS`). Each step runs while the e-node budget
        has room (and the hard time limit is not past). No computed pass
        runs: the others found nothing more. ``(changed, checked)``: whether a step
        changed the e-graph (the run then reads it again), and whether one ran: each
        runs the tripwire after its analysis, in the same egglog call (the run's own
        check is then done)."""
        first = self._runnable_parts([FINISH_RULESET])
        if not first:
            return False, False
        made = frozenset().union(*[self._makes[p] for p in first])
        have = self._have() | made
        beyond = made - NARROW_CTORS  # (a select and its condition)
        then = tuple(part for base in self._native_bases()
                     for part, need in self._parts.get(base, ())
                     if need <= have and (need <= made or need & beyond))
        changed = checked = False
        for i in range(FINISH_STEPS):
            size = self.step_size + self.ins.pending_nodes
            if size > limits.enodes or clock.over():
                break
            self._only = first if i == 0 else then
            try:
                self._step(True, matches, STEP_ROOM * (limits.enodes - size), check=True)
            finally:
                self._only = None
            changed, checked = changed or self.step_updated, True
            if not self.step_updated:
                break
        return changed, checked

    def _runnable_parts(self, rulesets: list[str]) -> tuple[str, ...]:
        """The egglog rule set of one round of ``rulesets`` in this step: the parts of
        them (``_parts``) whose constructors all have rows in the e-graph (egglog's sizes
        after the last step) or among the rows recorded since the run began
        (``ins.ctors``, a superset of what this step loads), combined; None when there
        is none. A part left out has no match (a match needs an e-node of each
        constructor its pattern names), so the round makes what a round of all the rules
        makes, while egglog assembles and indexes the joins of fewer rules. A part left
        out stays in semi-naive step: a match it finds once it runs holds a row that is
        new then."""
        have = self._have()
        return tuple(part for rs in rulesets for part, need in self._parts.get(rs, ())
                     if need <= have)

    def _have(self) -> set[str]:
        """The constructors with rows in the e-graph (egglog's sizes after the last
        step) or among the rows recorded since the run began (``ins.ctors``)."""
        return self.ins.ctors.union([c for c, n in self._present.items() if n])

    def _combined(self, parts: tuple[str, ...]) -> str:
        """The rule set that runs the rule sets ``parts`` together, declared the first
        time the current e-graph needs it."""
        combined = self._cur.combined
        name = combined.get(parts)
        if name is None:
            name = f"step_{len(combined)}"
            self._cmd(f"(unstable-combined-ruleset {name} {' '.join(parts)})")
            combined[parts] = name
        return name

    def _narrow_holds(self) -> bool:
        """Whether the narrow e-graph still runs as the index e-graph would: every
        constructor with rows in the e-graph (egglog's sizes after the last step) or
        recorded this run (``ins.ctors``, a superset of what the next step loads) is one
        the narrow e-graph loads (``_narrow_loads``), so a rule, an insertion rule or
        an interval rule the narrow e-graph lacks has nothing to match. Checked at the
        start and the end of every step (:meth:`_step`); when it fails the run starts
        again in the index e-graph."""
        if not self.ins.ctors <= self._narrow_loads:
            return False
        return all(c in self._narrow_loads for c, n in self._present.items() if n)

    def _mult_may_match(self, bases: list[str]) -> bool:
        """Whether a multiplying rule of ``bases`` may match in this step: every
        constructor its pattern needs has rows in the e-graph (egglog's sizes after the
        last step) or among the rows recorded since the run began (``ins.ctors``, a
        superset of the rows this step loads). When none may, the step runs neither
        those rules nor their counting twins (no egglog call to count): both would find
        nothing, and a match they find later holds a row that is new to both then, so
        they stay in lockstep."""
        have = self._have()
        return any(self._mult_ctors[i] <= have for b in bases for i, _, _ in self._mult.get(b, ()))

    def _apriori(self, bases: list[str]) -> float:
        """At most how many e-nodes this step's round of the multiplying rules of
        ``bases`` makes, from the rows of the constructors their patterns name (the
        e-graph's after the last step and those waiting to load): per rule, its
        ``match_bounds`` times ``new_nodes``; infinity when a rule has no such bound."""
        present, pending = self._present, self.ins.pending_ctors
        total = 0.0
        for b in bases:
            for i, _, k in self._mult.get(b, ()):
                if not all(present.get(c) or pending.get(c) for c in self._mult_ctors[i]):
                    continue  # (a constructor it needs has no row: no match)
                bounds = self._mult_bounds[i]
                if bounds is None:
                    return math.inf
                total += k * min(math.prod(present.get(c, 0) + pending.get(c, 0)
                                           for c in t) for t in bounds)
        return total

    def _admit(self, bases: list[str], allow: float) -> bool:
        """Count the e-nodes this step's round of the multiplying rules of ``bases``
        would make (one egglog call, which also loads the pending rows: the counting
        twins see what the rules will see); whether they fit ``allow``. When they do
        not, the multiplying rules are left out for the rest of the run (a rule that
        does not run falls out of lockstep with its twin) and ``held_back`` records
        what each would have made.

        A twin runs only here: after steps whose rules ran on their bound from the
        rows (:meth:`_apriori`) without it, its count also holds the matches its rule
        fired in those steps (semi-naive matching finds every match with a row newer
        than the twin's last run). That over-counts, never under-counts: the step
        stays within ``allow``, but may leave the rules out where a count in lockstep
        would have let them run."""
        todo = [(b, i, name) for b in bases for i, name, _ in self._mult.get(b, [])]
        if not todo:
            return True
        counting = [self._runnable([f"{b}_count"]) for b in bases if self._mult.get(b)]
        out = self.ins.flush("\n".join(f"(run {rs} 1)" for rs in counting if rs),
                             late=False)
        self.egg_iterations += sum(1 for o in out if type(o) is _RUN_OUTPUT)
        lookup, to_i64 = self.egraph.lookup_function, self.egraph.value_to_i64
        counts = self._counts
        step: list[tuple[str, int]] = []
        for _, i, name in todo:
            # a counter only grows (its merge adds): this step's count is what it gained
            v = lookup(f"{COUNT_FN}{i}", [])
            now = 0 if v is None else to_i64(v)
            step.append((name, now - counts.get(i, 0)))
            counts[i] = now
        if sum(n for _, n in step) <= allow:
            return True
        self._counted = False
        for name, n in step:
            if n:
                self.held_back[name] = self.held_back.get(name, 0) + n
        return False

    def _check(self) -> None:
        """Run the tripwire over the run's e-graph (the rows since its last run: the
        whole run's); an empty interval of a never-Invalid class raises the
        :class:`UnsoundError` :meth:`_diagnose` gives."""
        try:
            self._cmd(f"(run {CHECK_RULESET} 1)")
        except bindings.EggSmolError as e:
            if TRIPWIRE in str(e):
                raise self._diagnose() from None
            raise
        self.egg_iterations += 1

    def _diagnose(self) -> UnsoundError:
        snap = Snapshot(self.egraph, self.ins)
        bad = [c for c in sorted(snap.lo) if c in snap.hi and snap.lo[c] > snap.hi[c]
               and c in snap.defined]
        if not bad:
            return UnsoundError(TRIPWIRE)
        c = bad[0]
        desc = "; ".join(f"{n.ctor}{n.fields}" for n in list(snap.class_nodes(c))[:6])
        return UnsoundError(f"e-class {c} has an empty interval lo={snap.lo[c]} > "
                            f"hi={snap.hi[c]} (an unsound rewrite unioned different values); "
                            f"its e-nodes: {desc}")

    # ---- inspection -----------------------------------------------------------
    def analyze(self, roots: list[UOp], seed_all: bool = False
                ) -> dict[UOp, tuple[float, float, bool]]:
        """Insert ``roots`` (no rewrites), run the analyses to a fixed point and return
        every node's ``(lo, hi, never_invalid)`` as the e-graph has it (``-inf``/``inf``
        when unknown). ``seed_all``: start from the IR bounds of every node, not just
        the leaves'. The e-graph is left as it was."""
        self._select(roots, widen=True)
        self._cmd("(push)")
        saved = self.ins.state()
        try:
            self._insert(roots, seed_all=seed_all)
            self._step(False, {})
            snap = Snapshot(self.egraph, self.ins)
            out = {}
            for _key, h in self.ins.uop_handle.items():
                u = self.ins.handle_uop[h]
                c = snap.cls_of_handle(h)
                lo, hi = snap.bounds(c)
                out[u] = (lo, hi, c in snap.defined)
            return out
        finally:
            self._cmd("(pop)")
            self.ins.restore(saved)

    # ---- insertion ------------------------------------------------------------
    def _insert(self, roots: list[UOp], seed_all: bool = True) -> list[int]:
        """Record the roots' rows and facts (loaded by the next step): the IR bounds of
        every node (``seed_all``) or of the leaves only, and which nodes are never
        Invalid."""
        ins = self.ins
        first = len(ins.inserted)
        orders, self._orders = self._orders, {}  # (used once: not kept)
        if seed_all:
            handles = []
            for r in roots:
                o = orders.get(id(r))
                handles.append(ins.add_uop_with_facts(r, o if o and o[-1] is r else None))
        else:
            handles = []
            for r in roots:
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
        self._fixed, self._fixed_analysis = _fixed_width_of(ins.inserted[first:])
        return handles

    def _insert_seeds(self, seeds: Seeds) -> None:
        """Record the baseline's rewrite of the roots (:mod:`.seeding`) with its facts,
        each rewritten node unioned with its rewrite (the roots are inserted)."""
        if not seeds.order:
            return
        ins = self.ins
        ins.add_uop_with_facts(seeds.order[-1], seeds.order)
        handle = ins.uop_handle
        for u, v in seeds.pairs:
            ins.union(handle[id(u)], handle[id(v)])

    # ---- the run ----------------------------------------------------------------
    def run(self, roots: list[UOp], model: Any, limits: Limits,
            t0: float | None = None, keep_egraph: bool = False) -> tuple[list[UOp], dict]:
        """Optimize ``roots`` together; ``(new roots, stats)``. ``t0``: when the
        caller's clock started (``time.perf_counter()``; e.g. before it built this
        session): the time budget counts from there. ``keep_egraph``: ``stats["egraph"]``
        is then the e-graph's :class:`~eqsat.engines.egraph.record.EGraphRecord` (the
        classes the roots reached, what merged when), which a run otherwise drops.

        Automatic garbage collection is paused for the run (:func:`gc_paused`): the
        passes allocate many objects that live until the run ends (memo tables, the
        snapshots' e-nodes), and every collection during the run rescanned them
        (docs/perf.md); what the run leaves in reference cycles is collected after it."""
        with gc_paused():
            clock = Clock(limits.seconds, t0)
            with clock.phase(times := {}, "baseline"):
                seeds = baseline_seeds(roots, self.selection, model)
            self._select(roots, extra=seeds.order)
            try:
                out = self._run(roots, seeds, model, limits, clock, keep_egraph)
            except _WidenError:
                # the narrow e-graph lacks rules that could match now: the run starts
                # again in the index e-graph (the clock runs on), and ends as a run
                # there would, had it started there
                self.widened += 1
                self._select(roots, widen=True, extra=seeds.order)
                out = self._run(roots, seeds, model, limits, clock, keep_egraph)
                out[1]["widened"] = True
            outs, stats = out
            stats["costs"], stats["seed"] = no_worse_than_start(
                outs, roots, seeds.roots, model, stats.get("costs"))
            stats["time"]["baseline"] = times["baseline"]
        # a fresh e-graph once egglog's overall report has grown (REBUILD_ITERATIONS),
        # after the run (its result does not depend on it) and only when the budget has
        # room for it; else a later run does it
        if self.egg_iterations >= REBUILD_ITERATIONS:
            self._rebuild()
        return out

    def _run(self, roots: list[UOp], seeds: Seeds | None, model: Any, limits: Limits,
             clock: Clock, keep_egraph: bool = False) -> tuple[list[UOp], dict]:
        capped0 = self.capped
        stats: dict[str, Any] = {"engine": "egraph", "rulesets": list(self.groups)}
        times: dict[str, float] = {}
        matches: dict[str, int] = {}
        self._counted = True
        self._counts = {}  # (the counters start at nothing: the run pushed the e-graph)
        self._present = {}  # (nor any e-node)
        self.held_back = {}
        rss0 = rss_bytes()
        rss_peak = 0  # the most the run grew the resident set by, of the readings
        saved = self.ins.state()
        clean = False  # whether the run ended without an exception (see _reset)
        final: Snapshot | None = None  # a snapshot of the e-graph as the run leaves it
        try:
            with clock.phase(times, "insert"):
                handles = self._insert(roots)
            input_nodes = len(self.ins.uop_handle) - len(saved[2])
            tracer = Tracer(roots, self.ins) if keep_egraph else None
            state = PassState()
            it = 0
            stop: StopReason | None = None
            snap: Snapshot | None = None
            stale = False  # whether the e-graph grew since `snap` was read
            peak = input_nodes  # the most e-nodes the e-graph held after a step
            last_iter = 0.0
            sizes: list[int] = []
            costs: list[float | None] = []
            per_iter: list[tuple[int, float]] = []
            emitted: list[int] = []  # rows each computed pass recorded
            late = False  # a computed pass ran past its deadline
            while True:
                if it >= limits.iterations:
                    stop = StopReason.ITERATIONS
                    break
                growth = min(max(sizes[-1] / sizes[-2], 1.0), 4.0) if len(sizes) > 1 else 2.0
                if sizes and sizes[-1] * growth > limits.enodes:
                    stop = StopReason.ENODES
                    break
                if clock.over():
                    stop = StopReason.TIME  # (the hard limit: a safety net, never a decision)
                    break
                rss_peak = max(rss_peak, rss_bytes() - rss0)
                if rss_peak > limits.memory:
                    stop = StopReason.MEMORY
                    break
                # the e-nodes this step's multiplying rules may make: a share of the room
                # the e-node budget has left
                size = (sizes[-1] if sizes else 0) + self.ins.pending_nodes
                t_it = time.perf_counter()
                with clock.phase(times, "egglog"):
                    changed = self._step(True, matches, STEP_ROOM * (limits.enodes - size))
                if emitted and not emitted[-1] and not self.step_updated:
                    # the last pass recorded nothing (this step loaded only the handles
                    # its snapshot gave new classes) and no rule changed anything: the
                    # e-graph is the one that snapshot read, and another pass over it
                    # would find nothing new (not saturated when rules were left out
                    # for the room)
                    stop = StopReason.SATURATED if self._counted else StopReason.ENODES
                    break
                rss_peak = max(rss_peak, rss_bytes() - rss0)
                if rss_peak > limits.memory:
                    stop = StopReason.MEMORY  # (before reading the e-graph: a snapshot costs more)
                    break
                now = self.step_size
                peak = max(peak, now)
                # the step's rules took the e-graph past the budget (or the step ran past
                # the hard time limit): stop, and extract from the last snapshot rather
                # than read (and extract from) an e-graph this big
                if now > limits.enodes:
                    stop = StopReason.ENODES
                elif snap is not None and clock.over():
                    stop = StopReason.TIME
                if stop is not None and snap is not None:
                    stale = True
                    break
                with clock.phase(times, "snapshot"):
                    snap = Snapshot(self.egraph, self.ins)
                it += 1
                if tracer is not None:
                    tracer.snapshot(snap, it, matches)
                sizes.append(snap.enodes)
                if stop is not None:
                    break
                root_cls = [snap.cls_of_handle(h) for h in handles]
                pending0 = self.ins.pending
                # the pass stops once its rows fill the next step's share of the room,
                # or at the hard time limit (both read through the one clock it checks)
                rows_cap = pending0 + STEP_ROOM * max(0, limits.enodes - snap.enodes)
                with clock.phase(times, "computed"):
                    res = python_pass(snap, self.ins, self.pyrules, state,
                                      deadline=clock.deadline(),
                                      clock=partial(_pass_clock, self.ins, rows_cap),
                                      roots=root_cls, model=model)
                late = late or res.late
                for k, v in res.matches.items():
                    matches[k] = matches.get(k, 0) + v
                for k, v in res.times.items():
                    times["computed." + k] = times.get("computed." + k, 0.0) + v
                last_iter = time.perf_counter() - t_it
                per_iter.append((snap.enodes, round(last_iter, 4)))
                emitted.append(self.ins.pending - pending0)
                if not changed and self.ins.pending == 0:
                    stop = StopReason.SATURATED if self._counted else StopReason.ENODES
                    break
                costs.append(_root_cost(snap, root_cls))  # the pass priced every class
                if is_stalled(costs, sizes, limits.stall, emitted):
                    stop = StopReason.STALLED
                    break
                if res.skipped or res.late:
                    stop = StopReason.ENODES if self.ins.pending > rows_cap else "time"
                    break
            # the finishing rules, once the others are done (not after a budget's stop)
            finished = checked = False
            if stop in (StopReason.SATURATED, StopReason.STALLED) and not stale:
                with clock.phase(times, "finish"):
                    finished, checked = self._finish(matches, limits, clock)
            stale = stale or stop is StopReason.MEMORY  # (the e-graph grew since `snap`)
            last = not (stop is StopReason.MEMORY and snap is None) and not stale and \
                bool(self.ins.pending or snap is None)
            if not last and not checked:
                self._check()  # (the last step checks in its own egglog call)
            if stop is StopReason.MEMORY and snap is None:
                outs, ext_stats = list(roots), {"method": "none (memory budget)"}
                costs = None
            else:
                # bring the last results in (analysis only), then extract; after a
                # finishing step only read the e-graph (its step ran the analysis and
                # loaded every row)
                if last or finished:
                    with clock.phase(times, "last"):
                        if last:
                            self._step(False, matches)
                        snap = Snapshot(self.egraph, self.ins)
                        if tracer is not None:
                            tracer.snapshot(snap, 0, matches)
                assert snap is not None
                with clock.phase(times, "extract"):
                    outs, ext_stats = extract_roots(snap, self.args, handles, model, clock)
                    costs = self._unsubsume_costlier(snap, roots, handles, outs, model,
                                                     clock)
                beaten = seeds.beaten(costs, model) if seeds is not None and not stale \
                    else []
                if beaten:
                    # the baseline's rewrite of these roots is cheaper than what the
                    # e-graph found: it joins (one more step), and their extraction
                    # chooses class by class among both (see .seeding)
                    with clock.phase(times, "baseline_join"):
                        self._insert_seeds(seeds.only(beaten))
                        self._step(False, matches)
                        snap = Snapshot(self.egraph, self.ins)
                        if tracer is not None:
                            tracer.snapshot(snap, 0, matches)
                    with clock.phase(times, "extract"):
                        outs, costs = self._extract_again(snap, roots, handles, outs, costs,
                                                          beaten, model, clock)
                    ext_stats = {**ext_stats, "joined": len(beaten)}
            rss_peak = max(rss_peak, rss_bytes() - rss0)
            stats.update(iterations=it, enodes=snap.enodes if snap else input_nodes,
                         classes=len(snap.classes) if snap else 0,
                         stop_reason=stop.value, time=times, per_iteration=per_iter,
                         emitted=emitted,
                         analysis_capped=self.capped - capped0,
                         matches=dict(sorted(matches.items())), extraction=ext_stats,
                         costs=costs,
                         held_back=dict(sorted(self.held_back.items())),
                         enodes_peak=max(peak, snap.enodes if snap else 0),
                         rss_growth=rss_peak,
                         # whether a clock cut the run short anywhere (its result may
                         # differ from run to run; the result cache keeps only the others)
                         time_limited=stop.hard_limit or late or
                         bool(ext_stats.get("dag_skipped")))
            if tracer is not None and snap is not None:
                stats["egraph"] = tracer.record(snap, self.args, handles, model)
            log.debug("e-graph run of %d roots: %d iterations, %d e-nodes, stopped: %s, "
                      "%.3f s", len(roots), it, stats["enodes"], stop, clock.elapsed())
            clean = True
            final = None if stale else snap
            return outs, stats
        except _WidenError:
            clean = True  # (raised between egglog calls: the e-graph is consistent)
            raise
        except (UnsoundError, bindings.EggSmolError):
            raise
        except Exception as e:
            # the tripwire runs once a run, before its extraction: a pass that failed on
            # an e-graph with an empty interval reports the unsound union, not its symptom
            try:
                self._check()
            except UnsoundError as u:
                raise u from e
            except bindings.EggSmolError:
                pass
            raise
        finally:
            with clock.phase(times, "reset"):
                self._reset(saved, clean, final)

    def _extract_again(self, snap: Snapshot, roots: list[UOp], handles: list[int],
                       outs: list[UOp], costs: list[tuple[float, float]], which: list[int],
                       model: Any, clock: Clock
                       ) -> tuple[list[UOp], list[tuple[float, float]]]:
        """``outs`` and ``costs`` with the roots ``which`` (indices) extracted again
        from ``snap``; the other roots keep theirs."""
        sub, _ = extract_roots(snap, self.args, [handles[i] for i in which], model, clock)
        sub_costs = self._unsubsume_costlier(snap, [roots[i] for i in which],
                                             [handles[i] for i in which], sub, model, clock)
        outs, costs = list(outs), list(costs)
        for j, i in enumerate(which):
            outs[i], costs[i] = sub[j], sub_costs[j]
        return outs, costs

    def _unsubsume_costlier(self, snap: Snapshot, roots: list[UOp], handles: list[int],
                            outs: list[UOp], model: Any, clock: Clock
                            ) -> list[tuple[float, float]]:
        """Extract again, with the subsumed e-nodes in, every root whose term came out
        costlier than its input (in place in ``outs``, when that is cheaper); each
        root's ``(input cost, output cost)`` under ``model`` (``stats["costs"]``, which
        ``eqsat.optimize`` reads instead of pricing both again). A rule's subsumption
        can hit a class's cheapest term: ``(x - y) + y -> x`` subsumes ``s + x``, which
        is ``x + x`` once ``s = (x + x) - x`` merges with ``x``, and the extraction,
        which leaves subsumed e-nodes out, took ``x * 2``. Taking them in every
        extraction costs a corpus batch 6% (docs/perf.md); a costlier result is rare.
        The second extraction gives each such root the whole DAG search: a tree choice
        that ties with the input's term but does not share what the input shares (``x -
        x//12`` and ``x + (8 - a)//12`` for ``x = a - 8``) is costlier as a graph. It runs
        only within the hard time limit (its DAG search checks the clock too)."""
        cost = model.graph_cost
        costs = []
        for r, o in zip(roots, outs, strict=True):
            c = cost(r)
            costs.append((c, c if o is r else cost(o)))
        worse = [i for i, (c_in, c_out) in enumerate(costs) if c_out > c_in]
        # (not past the hard time limit: a root left as it is gets its input back)
        if worse and not clock.over():
            again, _ = extract_roots(snap, self.args, [handles[i] for i in worse], model,
                                     clock, subsumed=True, thorough=True)
            for i, o in zip(worse, again, strict=True):
                c = cost(o)
                if c < costs[i][1]:
                    outs[i] = o
                    costs[i] = (costs[i][0], c)
        return costs

    def _reset(self, saved: tuple, clean: bool, final: Snapshot | None = None) -> None:
        """Leave the e-graph as the run found it (:mod:`.reset`): delete every row of the
        tables a run writes, the subsumed e-nodes and then the handles; ``saved``: the
        inserter's state before the run; ``final``: a snapshot of the e-graph as the
        run leaves it (its subsumed e-nodes are deleted through RSub rows recorded for
        them, in the same load; without it they are read with ``freeze`` after a first
        round). When a row is left (a subsumed e-node whose child has no handle), the
        run raised (not ``clean``: the e-graph may be anywhere) or egglog failed a reset
        command, the e-graph is built afresh."""
        ins = self.ins
        left: dict[str, int] = {}
        if clean:
            try:
                ins.drop_subsumptions()  # (what they would subsume is deleted anyway)
                if final is not None:
                    self._record_subsumed_of(final)
                # the rows still recorded load first: the handles a snapshot gave new
                # classes are among them, and the deletions find children by handle
                rows = f"(run {RESET_SUBSUMED} 1)\n(run {RESET_RULESET} 1)\n"
                again = ""
                if final is None:
                    out = ins.flush(f"{rows}(print-size)", late=False)
                    left = leftover(dict(out[-1].sizes), self._cur.base_sizes)
                    left.pop(HANDLE_CTOR, None)
                    if left and self._record_subsumed(left):
                        # the subsumed e-nodes no RSub row named (a native rule subsumed
                        # them): deleted through the RSub rows just recorded
                        again = rows
                else:
                    # every subsumed e-node of the final snapshot has its RSub row, and no
                    # step ran after it: the handles go in the same egglog call
                    again = rows
                out = ins.flush(f"{again}(run {RESET_HANDLES} 1)\n(print-size)", late=False)
                left = leftover(dict(out[-1].sizes), self._cur.base_sizes)
                self.egg_iterations += 1 + 2 * bool(again) + 2 * (final is None)
            except bindings.EggSmolError:
                clean = False  # (an egglog error: the e-graph is built afresh below)
        ins.restore(saved)
        if not clean or left:
            log.debug("a fresh %s e-graph: the run left rows %s", self._cur.kind,
                      left or "(it raised)")
            self._rebuild()

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
        to_i64, to_string = eg.value_to_i64, eg.value_to_string
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
                fields: list[Any] = []
                for ch, v in zip(sig, r.inputs, strict=True):
                    if ch == "S":
                        text = to_string(v)
                        if "\t" in text or "\n" in text:
                            return False
                        fields.append(text)
                    elif ch == "I":
                        fields.append(to_i64(v))
                    else:
                        k = handle.get(v)
                        if k is None:
                            return False
                        fields.append(k)
                found.append((name, tuple(fields)))
        for name, fields in found:
            self.ins.subsume(name, fields)
        return bool(found)


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
    """Whether the last ``k`` iterations found no cheaper root term while the e-graph
    grew by at most ``STALL_GROWTH`` over them, and the last computed pass recorded at
    most ``STALL_EMITTED`` of the e-graph in new rows (``costs``/``sizes``/``emitted``: one
    per iteration). The last condition keeps a run going whose last pass started
    something that pays only later, e.g. opened a guarded copy of a ``where``'s value
    that the next iterations simplify."""
    if k <= 0 or len(costs) <= k:
        return False
    now, then = costs[-1], costs[-1 - k]
    if now is None or then is None or now < then - 1e-9:
        return False
    if emitted and emitted[-1] > sizes[-1] * STALL_EMITTED:
        return False
    return sizes[-1] <= sizes[-1 - k] * (1.0 + STALL_GROWTH)


def _inf(v: Any) -> bool:
    return isinstance(v, float) and (math.isinf(v) or math.isnan(v))


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
        s.ins.close()
    cache.clear()

