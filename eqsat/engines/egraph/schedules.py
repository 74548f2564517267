"""Budgets of an e-graph run: iteration, e-node, wall-time and memory limits.

The default e-node budget grows with the input (:func:`default_enodes`): a run's
:class:`Limits` without one get it from the roots' unique nodes when the run starts
(:meth:`Limits.for_roots`), so it is a function of the input alone.

What a run does is decided by work alone (iterations, e-nodes, the rows a computed
pass may record), so the same input gives the same output under any load and after
any earlier run; wall time and memory are hard safety limits only (:class:`Clock`,
:func:`rss_bytes`), checked between units of work (docs/architecture.md, "The e-graph
engine").

The native rules whose matches multiply (:func:`multiplies`) run in a step only when
the e-nodes they would make fit :data:`STEP_ROOM` of the room the e-node budget has
left: bounded from the rows (:func:`match_bounds`, no egglog call) or else counted
first by counting twins (:func:`count_program`; a twin that missed steps counts its
rule's matches in them too, an over-count); when they do not fit they are left out for
the rest of the run. (egglog's back-off scheduler bounds a rule's matches too, but a
scheduled run matches the whole e-graph again at every step instead of only what is
new: it made the corpus several times slower.)
"""

from __future__ import annotations

import gc
import os
import re
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import combinations
from typing import Any

from eqsat.ir.egglog_text import read, tokens

__all__ = ["Limits", "Clock", "ENODES_FLOOR", "ENODES_PER_NODE", "default_enodes",
           "StopReason", "STALL_ITERATIONS", "STALL_GAIN", "STALL_GROWTH",
           "STALL_EMITTED", "MEMORY", "STEP_ROOM", "HARD_ENODES", "COUNT_FN", "CTOR_CALL",
           "memory_limit", "gc_paused", "rss_bytes", "multiplies", "new_nodes", "count_program",
           "match_bounds", "pattern_ctors"]

class StopReason(StrEnum):
    """Why a run stopped: its start (the input or the baseline's rewrite, root by root)
    already costs 0, the least any term costs, so no step ran (``optimal``); nothing
    changed (``saturated``); the roots' best cost did not improve for ``Limits.stall``
    iterations while the e-graph barely grew (``stalled``, see :data:`STALL_GROWTH`); a
    work budget was reached (``iterations``, ``enodes``: the output is the same on every
    run); or a hard safety limit (``time``, ``memory``: the only stops whose output may
    differ from run to run). A run's ``stats["stop_reason"]`` is the value, a plain
    string."""

    OPTIMAL = "optimal"
    SATURATED = "saturated"
    STALLED = "stalled"
    ITERATIONS = "iterations"
    ENODES = "enodes"
    TIME = "time"
    MEMORY = "memory"

    @property
    def hard_limit(self) -> bool:
        """Whether a hard safety limit (not the work) stopped the run."""
        return self in (StopReason.TIME, StopReason.MEMORY)


#: the default e-node budget (:func:`default_enodes`): at least this many e-nodes ...
ENODES_FLOOR = 20_000
#: ... or this many per unique node of the input, when that is more (from 5,000 nodes
#: on: below, runs stop by saturation or a stall inside the floor; above, a fixed budget
#: stopped a run after its first step; 5 a node made the time grow 2.7x per doubling of
#: the input, docs/perf.md)
ENODES_PER_NODE = 4


def default_enodes(nodes: int) -> int:
    """The default e-node budget of a run whose roots hold ``nodes`` unique nodes."""
    return max(ENODES_FLOOR, ENODES_PER_NODE * nodes)


#: the default memory budget of a run: bytes the run may add to its process's
#: resident set (a run in a process that already holds much is not stopped for what
#: it found there). A quarter of a 24 GB machine: two workers running one run each
#: leave half of it to the rest
MEMORY = 6 << 30

#: the share of the room left in the e-node budget (``enodes`` minus the e-graph's
#: size) that one step's counted rules, and one computed pass, may fill (see the
#: module docstring)
STEP_ROOM = 0.5
#: the bound a run's e-graph keeps, as a factor of its e-node budget (a step that
#: takes it past the budget ends the run; the run extracts from its last snapshot)
HARD_ENODES = 2.0

#: iterations without a cheaper root term before a run counts as stalled (0: never)
STALL_ITERATIONS = 1
#: ... where a term cheaper by less than this fraction of the roots' cost does not count:
#: a kernel of thousands of stores finds a little in every step for long, and its run
#: then took more iterations the more stores it had (docs/perf.md)
STALL_GAIN = 0.01
#: ... and only while the e-graph grew by at most this fraction over those iterations,
STALL_GROWTH = 0.10
#: ... and the last computed pass recorded at most this fraction of it in new rows (the
#: computed pass visits only the classes near the roots' best terms, so its rows come
#: in smaller steps: a larger bound stopped runs before their best, docs/perf.md)
STALL_EMITTED = 0.02


@dataclass(frozen=True)
class Limits:
    """The limits of a run (``eqsat.api.Budget`` converts to this).

    ``enodes``: the e-graph size budget; None (the default) is
    :func:`default_enodes` of the roots' unique nodes, which a run resolves when it
    starts (:meth:`for_roots`, in ``Run.__init__``). ``stall``: stop (``"stalled"``)
    after that many iterations in a row without a best term of the roots cheaper by
    more than :data:`STALL_GAIN` while the e-graph grew by at most
    :data:`STALL_GROWTH`; 0 never stops early.
    ``baseline_start``: the baseline's rewrite is unioned in with the roots (False: the
    run starts from the input alone; see ``eqsat.api.Budget``).
    """

    iterations: int = 12
    enodes: int | None = None
    seconds: float = 300.0
    stall: int = STALL_ITERATIONS
    memory: int = MEMORY
    baseline_start: bool = True

    def __post_init__(self) -> None:
        if self.enodes is not None and self.enodes < 1:
            raise ValueError(f"invalid limits {self!r}: enodes >= 1 (or None) required")
        if self.stall < 0:
            raise ValueError(f"invalid limits {self!r}: stall >= 0 required")
        if self.memory < 1:
            raise ValueError(f"invalid limits {self!r}: memory >= 1 required")

    @staticmethod
    def of(budget: Any) -> Limits:
        if budget is None:
            return DEFAULT_LIMITS
        if isinstance(budget, Limits):
            return budget
        memory, enodes = budget.memory, budget.enodes
        return Limits(int(budget.iterations), None if enodes is None else int(enodes),
                      float(budget.seconds),
                      STALL_ITERATIONS if budget.stall is None else int(budget.stall),
                      MEMORY if memory is None else int(memory),
                      bool(budget.baseline_start))

    def for_roots(self, roots: Iterable[Any],
                  orders: dict[int, list[Any]] | None = None) -> Limits:
        """These limits with the e-node budget resolved for ``roots`` (UOps): kept when
        set, else :func:`default_enodes` of their unique nodes (``orders``: toposorts
        by the root's ``id``, used when given)."""
        if self.enodes is not None:
            return self
        orders = orders or {}
        each = [orders.get(id(r)) or r.toposort() for r in roots]
        nodes = sum(map(len, each))
        # (at most that many unique nodes: when so few, the floor whatever they share)
        if nodes * ENODES_PER_NODE > ENODES_FLOOR:
            nodes = len({id(u) for order in each for u in order})
        # (one Limits per limits and budget: ``replace`` costs a call's worth of
        # introspection, and most runs get the same floor budget)
        key = (self, default_enodes(nodes))
        out = _RESOLVED.get(key)
        if out is None:
            if len(_RESOLVED) >= _RESOLVED_MAX:
                _RESOLVED.clear()
            out = _RESOLVED[key] = replace(self, enodes=key[1])
        return out


#: the limits of a call given no budget (frozen: one instance serves every call)
DEFAULT_LIMITS = Limits()

#: (limits, e-node budget) -> those limits with that budget (:meth:`Limits.for_roots`;
#: frozen values, equal limits alike: a memo, emptied past :data:`_RESOLVED_MAX`)
_RESOLVED: dict[tuple[Limits, int], Limits] = {}
_RESOLVED_MAX = 256


class Phase:
    """The ``with`` block of :meth:`Clock.phase` (a class: several a step, and a
    generator-based context manager costs about three times as much to enter)."""

    __slots__ = ("times", "name", "t")

    def __init__(self, times: dict[str, float], name: str):
        self.times, self.name = times, name

    def __repr__(self) -> str:
        return f"Phase({self.times!r}, {self.name!r})"

    def __enter__(self) -> None:
        self.t = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        times = self.times
        times[self.name] = times.get(self.name, 0.0) + time.perf_counter() - self.t


class Clock:
    """Wall time of one run against its budget: a hard safety limit, never a decision.

    Nothing the engine chooses reads the clock (what runs is decided by the work
    budgets: iterations, e-nodes, the rows a pass may record, the extractor's work):
    the loop, the computed pass and the extraction only check :meth:`over` between
    units of work, and a run the clock stopped says so (``stop_reason="time"``), the
    one case in which its output may differ from run to run.
    """

    def __init__(self, seconds: float, t0: float | None = None):
        self.seconds = seconds
        self.t0 = time.perf_counter() if t0 is None else t0

    def __repr__(self) -> str:
        return f"Clock({self.seconds!r}, t0={self.t0!r})"

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def deadline(self) -> float:
        """The hard limit as a ``time.perf_counter()`` reading."""
        return self.t0 + self.seconds

    def over(self) -> bool:
        """Whether the run is past its time budget."""
        return time.perf_counter() - self.t0 > self.seconds  # (elapsed(), inline)

    #: ``phase(times, name)``: a ``with`` block that adds its seconds to ``times[name]``
    #: (the class itself: no call in between)
    phase = staticmethod(Phase)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


_STATM: list[int] = [-1]  # an open descriptor of this process's statm (-1: none yet)


def _forget_statm() -> None:
    """In a forked child: the descriptor is the parent's file, so open the child's own."""
    _STATM[0] = -1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm)


def rss_bytes() -> int:
    """The resident set of this process now (bytes): ``/proc/self/statm`` where there
    is one, read from a descriptor kept open (reopened in a forked child: the file is
    the opening process's), else the peak so far (``getrusage``; kilobytes on Linux,
    bytes on macOS), which only overstates it."""
    try:
        if _STATM[0] < 0:
            _STATM[0] = os.open("/proc/self/statm", os.O_RDONLY)
        return int(os.pread(_STATM[0], 128, 0).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError, AttributeError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024


def memory_limit(memory: int) -> Callable[[], str | None]:
    """A check of the memory limit for work done outside the loop (the baseline's
    rewrite): ``"memory"`` once the resident set grew by more than ``memory`` bytes
    since the check's first call, else None. The first call reads the resident set the
    growth counts from (the rewrite checks before its first match: nothing was
    allocated since this call). (The clock does not stop that rewrite: a run's result
    holds it whatever stops the run.)"""
    rss0 = -1

    def check() -> str | None:
        nonlocal rss0
        now = rss_bytes()
        if rss0 < 0:
            rss0 = now
            return None
        return "memory" if now - rss0 > memory else None
    return check


class GcPaused:
    """``with gc_paused():`` turns automatic garbage collection off inside, back on after
    (if it was on). The computed pass and the extraction allocate many short-lived,
    acyclic objects that reference counting frees; the collections they would trigger
    only rescan the engine's heap. (A class: a generator-based context manager costs
    several Python calls more to enter and to leave.)"""

    __slots__ = ("was",)

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        if self.was:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            gc.enable()


#: ``with gc_paused():`` (:class:`GcPaused`)
gc_paused = GcPaused


# ---------------------------------------------------------------------------
# bounded steps: the native rules whose matches multiply
def _pattern_vars(t: Any, out: set[str]) -> set[str]:
    """The pattern variables of an s-expression tree (lower-case symbols; heads, quoted
    strings and numbers excluded)."""
    if isinstance(t, list):
        for x in t[1:]:
            _pattern_vars(x, out)
    elif isinstance(t, str) and t[:1].isalpha() and t[:1].islower():
        out.add(t)
    return out


def _root_and_result(rule: Any) -> tuple[Any, Any]:
    """A native rule's matched pattern and what it makes: the left and right sides of a
    rewrite; of a general rule, the pattern of its first atom ``(= e (...))`` and the
    term its first ``union`` action makes (None when it has no such atom or action)."""
    if rule.lhs:
        return read(rule.lhs), read(rule.rhs)
    atoms = read(f"({rule.query})")
    first = atoms[0] if atoms else None
    if not (isinstance(first, list) and len(first) == 3 and first[0] == "="
            and isinstance(first[2], list)):
        return None, None
    unions = [a for a in read(f"({rule.actions})") if isinstance(a, list) and a and
              a[0] == "union" and len(a) == 3]
    return first[2], unions[0][2] if unions else None


def pattern_ctors(rule: Any) -> frozenset[str]:
    """The constructors a native rule's pattern (its left side, or its query) names:
    a match needs an e-node of each, so the rule cannot match an e-graph that has no
    row of one of them."""
    from eqsat.engines.egraph.encoding import CTORS

    return frozenset(CTOR_CALL.findall(rule.lhs or rule.query)).intersection(CTORS)


#: the heads of the applications in egglog text
CTOR_CALL = re.compile(r"\((\w+)")


def multiplies(rule: Any) -> bool:
    """Whether a native rule's matches multiply: its pattern joins two or more operands
    that vary independently (each a compound pattern with a variable no other operand
    has; a constant ``(Cst dt k)`` operand counts once: a class holds one), so each
    pair of such e-nodes of the two classes is a match, and it makes a new term of
    them. ``where(c, k1, k2) + where(c, k3, k4) -> where(c, k1+k3, k2+k4)`` does: its
    new constants land in classes that collect more such ``where``s at every step.

    The pattern is read only when its text has two applications besides the root
    that are not constants (each such operand holds one; a string of the rules' text
    is a dtype's name: no parenthesis in it), each operand's variables once, and what
    the rule makes only for a pattern with two such operands."""
    text = rule.lhs or rule.query
    if text.count("(") - text.count("(Cst ") < 3:
        return False
    root, made = (read(rule.lhs), None) if rule.lhs else _root_and_result(rule)
    if not isinstance(root, list):
        return False
    kids = [k for k in root[1:] if isinstance(k, list)]
    own = [_pattern_vars(k, set()) for k in kids]
    varying = 0
    for i, k in enumerate(kids):
        if k[0] == "Cst":
            continue
        others: set[str] = set()
        for j, o in enumerate(own):
            if j != i:
                others |= o
        if own[i] - others:
            varying += 1
    if varying < 2:
        return False
    if rule.lhs:
        made = read(rule.rhs)
    return isinstance(made, list)


def new_nodes(rule: Any) -> int:
    """At most how many e-nodes one match of a native rule makes (the constructor
    applications of its right side or actions; at least 1)."""
    from eqsat.engines.egraph.encoding import CTORS

    text = rule.rhs if rule.lhs else rule.actions
    return max(1, sum(1 for kind, tok, _ in tokens(text) if kind == "atom" and tok in CTORS))


#: the egglog function a step's counting rules add their matches' e-nodes to, keyed by
#: the multiplying rule's index (``(StepCount i)``)
COUNT_FN = "StepCount"


def count_program(rule: Any, ruleset: str, fn: str) -> str:
    """The egglog rule of ``ruleset`` that adds :func:`new_nodes` of ``rule`` to the
    function row ``fn`` (a call's head and arguments, ``StepCount 3``) per match of
    ``rule`` (same pattern and guards, no rewrite)."""
    k = new_nodes(rule)
    if rule.lhs:
        when = " ".join(rule.when)
        query = f"(= count_root {rule.lhs}) {when}".strip()
    else:
        query = rule.query
    return (f"(rule ({query}) ((set ({fn}) {k})) :ruleset {ruleset} "
            f':name "{rule.name}#count")')



def _literal(t: str) -> bool:
    """Whether an atom of egglog text is a literal (a string or a number), not a
    variable (every other atom in an argument's place is one)."""
    if t.startswith('"'):
        return True
    try:
        float(t)
    except ValueError:
        return False
    return True


def _vars(t: Any, out: set[str]) -> set[str]:
    """The variables of a term of egglog text: the atoms in an argument's place that
    are not literals (heads are function names)."""
    if isinstance(t, list):
        for x in t[1:]:
            _vars(x, out)
    elif isinstance(t, str) and not _literal(t):
        out.add(t)
    return out


#: the most constructors a bound of :func:`match_bounds` multiplies (a product of more
#: row counts is too large to admit a step by), and of a pattern of more than
#: :data:`SMALL_PATTERN` atoms one less (the choices to try grow as the atoms cubed)
MAX_BOUND_FACTORS = 3
SMALL_PATTERN = 7


def match_bounds(rule: Any) -> list[tuple[str, ...]] | None:
    """How many matches a native rule may have at most, from the row counts of the
    constructors its pattern names: a list of constructor tuples, each such that
    choosing one e-node of each constructor in it (of the pattern's atoms) fixes
    the whole match, so the matches are at most the product of those constructors'
    row counts (the least product over the list is the bound). None when no such
    bound of at most :data:`MAX_BOUND_FACTORS` constructors was found (one less for a
    pattern of more than :data:`SMALL_PATTERN` atoms), for a general rule, or for a
    guard that binds a variable by a relation.

    An atom is fixed once chosen; once its class and fields are known (an e-graph
    holds one e-node per constructor and arguments: every child's class fixed and
    every String and i64 field a literal or a bound variable); or, for a constant
    ``(Cst dt k)``, once its class is known (a class holds one constant: two would
    be different values made equal, which the analysis's tripwire reports). A
    chosen or fixed atom fixes its class, its children's classes and the variables
    of its fields; a guard ``(= V term)`` binds ``V`` once ``term``'s variables are
    bound (a function or a primitive has one value)."""
    if not rule.lhs:
        return None
    problem = _BoundProblem.of(rule)
    if problem is None:
        return None
    n = len(problem.atoms)
    best: list[int] = []
    most = MAX_BOUND_FACTORS - (n > SMALL_PATTERN)
    bits = [1 << i for i in range(n)]
    for size in range(1, min(n, most) + 1):
        for atoms_chosen in combinations(bits, size):
            chosen = 0
            for b in atoms_chosen:
                chosen |= b
            for b in best:
                if b & chosen == b:
                    break  # (a subset fixes the match already: this one bounds no better)
            else:
                if problem.fixes(chosen):
                    best.append(chosen)
    # (as constructors: two choices of atoms of the same constructors bound alike)
    atoms = problem.atoms
    return list(dict.fromkeys(tuple(sorted(atoms[i][0] for i in range(n) if b >> i & 1))
                              for b in best)) or None


@dataclass(frozen=True)
class _BoundProblem:
    """A rewrite's pattern as :func:`match_bounds` searches it, as bit masks: atoms by
    index, variables by their order of appearance."""

    #: (constructor, its arguments: a child atom's index, or a variable or literal)
    atoms: list[tuple[str, list[int | str]]]
    #: per atom: its bit, its children atoms, the variables of its fields, whether it
    #: is a constant
    items: list[tuple[int, int, int, bool]]
    binds: list[tuple[int, int]]  # per guard (= V term): V, and term's variables
    every: int  # the guards' variables

    @staticmethod
    def of(rule: Any) -> _BoundProblem | None:
        """The problem of a rewrite ``rule``; None when its pattern is not made of
        constructor atoms."""
        atoms = _pattern_atoms(read(rule.lhs))
        if atoms is None:
            return None
        var_bit: dict[str, int] = {}

        def vmask(names: Any) -> int:
            m = 0
            for v in names:
                m |= var_bit.setdefault(v, 1 << len(var_bit))
            return m

        guards = _guards(rule.when)
        return _BoundProblem(
            atoms, [(1 << i, sum(1 << x for x in set(args) if isinstance(x, int)),
                     vmask(x for x in args if isinstance(x, str) and not _literal(x)),
                     ctor == "Cst") for i, (ctor, args) in enumerate(atoms)],
            [(vmask([v]), vmask(need)) for v, need in guards if v is not None],
            vmask(v for _, need in guards for v in need))

    def fixes(self, chosen: int) -> bool:
        """Whether choosing the atoms ``chosen`` (a mask) fixes the whole match."""
        items = self.items
        fixed = known = chosen
        bound = 0
        for bit, kids, fields, _cst in items:
            if chosen & bit:
                known |= kids
                bound |= fields
        changed = True
        while changed:
            changed = False
            for v, need in self.binds:
                if need & bound == need:
                    bound |= v
            for bit, kids, fields, cst in items:
                if not fixed & bit and ((cst and known & bit) or (
                        kids & known == kids and fields & bound == fields)):
                    fixed |= bit
                    known |= kids | bit
                    bound |= fields
                    changed = True
        return fixed == (1 << len(items)) - 1 and self.every & bound == self.every


def _pattern_atoms(root: Any) -> list[tuple[str, list[int | str]]] | None:
    """The atoms of a pattern, parents before children: (constructor, its arguments: a
    child atom's index, or a variable or literal); None when a term is not a
    constructor application."""
    from eqsat.engines.egraph.encoding import CTORS

    atoms: list[tuple[str, list[int | str]]] = []

    def walk(t: Any) -> int:
        if not (isinstance(t, list) and t and t[0] in CTORS and len(t) == len(CTORS[t[0]]) + 1):
            raise ValueError
        i = len(atoms)
        args: list[int | str] = []
        atoms.append((t[0], args))
        for x in t[1:]:
            args.append(walk(x) if isinstance(x, list) else x)
        return i

    try:
        walk(root)
    except ValueError:
        return None
    return atoms


def _guards(when: Any) -> list[tuple[str | None, set[str]]]:
    """Per guard, the variable it binds (``(= V term)``; None for a test) and the
    variables it needs."""
    guards: list[tuple[str | None, set[str]]] = []
    for w in when:
        g = read(w)
        if isinstance(g, list) and len(g) == 3 and g[0] == "=":
            a, b = g[1], g[2]
            if isinstance(a, str) and not _literal(a):
                guards.append((a, _vars(b, set())))
                continue
            if isinstance(b, str) and not _literal(b):
                guards.append((b, _vars(a, set())))
                continue
        guards.append((None, _vars(g, set())))
    return guards
