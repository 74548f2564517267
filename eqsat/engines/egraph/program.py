"""The compiled rule selection of the e-graph engine: a :class:`Program`, built once per
selection and read-only after (docs/architecture.md, "The e-graph engine").

The native rules form rule sets by what they can match: ``native`` and the fixed-width
ones (:data:`FIXED_RULESET`); each is split into parts by the constructors the rules'
patterns name (a step runs only the parts whose constructors have rows), the
multiplying rules into ``<set>_mult`` with a counting twin in ``<set>_count``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from eqsat.engines.egraph.analyses import (
    ANALYSIS_CTORS,
    FIXED_ANALYSIS_DTYPES,
    FIXED_DTYPES,
    analysis_program,
)
from eqsat.engines.egraph.encoding import CTORS, ArgTable, declarations, dt_name, uop_ctor
from eqsat.engines.egraph.rulesets import SELECTS, resolve
from eqsat.engines.egraph.schedules import (
    COUNT_FN,
    CTOR_CALL,
    count_program,
    match_bounds,
    multiplies,
    new_nodes,
    pattern_ctors,
)
from eqsat.ir.uop import UOp
from rules.native import ERule, int_dt_twins

__all__ = ["Program", "EGRAPH_KINDS", "NARROW_CTORS", "FIXED_RULESET",
           "ANALYSIS", "fixed_only", "analysis_ext", "needs_fixed_width", "fixed_width_of"]

#: the native rules that match fixed-width integer or float nodes only (their guards say
#: ``(FixDt dt)``, or the rule of the language says so) form this rule set; a run whose
#: input has no such dtype skips it (rewrites keep their operands' dtypes)
FIXED_RULESET = "native_fixed"

#: the name of the interval rules' rule sets (``analysis_program``)
ANALYSIS = "analysis"

#: the kinds of a store's e-graphs, by the native rules they hold: every rule set
#: (``"fixed"``), all but the fixed-width ones (``"index"``), and only the rules whose
#: pattern names nothing but :data:`NARROW_CTORS` (``"narrow"``)
EGRAPH_KINDS = ("fixed", "index", "narrow")

#: the constructors of plain index arithmetic: an input made of these alone runs in the
#: ``"narrow"`` e-graph, which holds only the native rules whose pattern names nothing
#: else (a rule naming another constructor cannot match an e-graph without its rows)
NARROW_CTORS = frozenset(("Cst", "Leaf", "G1", "Add", "Sub", "Neg", "Mul", "Idiv", "Mod",
                          "Floordiv", "Floormod"))

_FIX_DT_GUARD = re.compile(r"\(FixDt \w+\)")

#: constructors every index input has, whose interval rules always run
_ALWAYS_CORE = frozenset(("Cst", "G1"))
#: the constructors of index arithmetic and its conditions: core where a rule makes them
_INDEX_CORE = frozenset(("Add", "Sub", "Mul", "Idiv", "Mod", "Neg", "Max", "Min", "Lt",
                         "Where", "And", "Or", "Not"))


def fixed_only(rule: Any) -> bool:
    """Whether a native rule matches fixed-width integer or float nodes only (a ``FixDt``
    guard, ``FIX_DT`` or on another variable, or a rule of the language that says so:
    its float constants' variants)."""
    return getattr(rule, "wide", False) or any(_FIX_DT_GUARD.search(w) for w in rule.when) \
        or bool(_FIX_DT_GUARD.search(rule.query))


def analysis_ext(native: list[ERule]) -> frozenset[str]:
    """The constructors whose interval rules run only in a run that inserted one of them
    (``analysis_program``'s ``ext``): those outside the core, the least set that holds
    constants, ranges, the index arithmetic rules make, and what rules make from core
    constructors alone (a rule whose pattern needs an ``ext`` constructor fires only
    where one was inserted; the computed rules' e-nodes are insertions too). A run that
    inserted none of them cannot hold such an e-node, so those rules could not match."""
    rules = [(set(CTOR_CALL.findall(f"{r.lhs} {r.query}")) & ANALYSIS_CTORS,
              set(CTOR_CALL.findall(f"{r.rhs} {r.actions}"))) for r in native]
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


#: id(dtype) -> (the dtype, whether it is a fixed-width integer or float dtype, its name
#: when a fixed-width interval rule may match a node of it, else None); the entry keeps
#: the dtype alive, so its id is not reused (dtypes are interned: a few entries)
_DT_FIXED: dict[int, tuple[Any, bool, str | None]] = {}
#: the dtypes some constructor's fixed-width interval rules match
_ANALYSIS_DTS = frozenset().union(*FIXED_ANALYSIS_DTYPES.values())


def _dt_fixed(dt: Any) -> tuple[Any, bool, str | None]:
    """:data:`_DT_FIXED`'s entry of ``dt``, made when missing."""
    f = _DT_FIXED.get(id(dt))
    if f is None:
        d = dt_name(dt)
        index = d == "index"
        f = _DT_FIXED[id(dt)] = (
            dt, not index and (d in FIXED_DTYPES or dt.is_float or dt.is_fixed_int),
            d if not index and d in _ANALYSIS_DTS else None)
    return f


def fixed_width_of(nodes: Iterable[UOp]) -> tuple[bool, bool]:
    """Whether ``nodes`` hold a fixed-width integer or float node (the native rules of
    those dtypes may match), and one the fixed-width interval rules match
    (FIXED_ANALYSIS_DTYPES)."""
    fixed = fixed_analysis = False
    get = _DT_FIXED.get
    for u in nodes:
        dt = u.dtype
        _, f, d = get(id(dt)) or _dt_fixed(dt)
        fixed = fixed or f
        if d is not None and not fixed_analysis:
            fixed_analysis = d in FIXED_ANALYSIS_DTYPES.get(uop_ctor(u), ())
    return fixed, fixed_analysis


def needs_fixed_width(roots: list[UOp], orders: list[list[UOp]] | None = None
                      ) -> tuple[bool, bool]:
    """:func:`fixed_width_of` every node of ``roots``: an input without either runs in
    an index-only e-graph (rewrites keep their operands' dtypes, so no fixed-width node
    appears later). ``orders``: the roots' toposorts when known (a node in two of
    them is read twice: the answer is the same)."""
    return fixed_width_of(chain.from_iterable(
        orders if orders is not None else [r.toposort() for r in roots]))


class _PerRule(dict):
    """Multiplying rule -> ``fn`` of its egglog rule, found when first read (a pure
    function of the rule: the same whichever run reads it first)."""

    def __init__(self, fn: Callable[[ERule], Any], rules: dict[int, ERule]) -> None:
        super().__init__()
        self.fn, self.rules = fn, rules

    def __missing__(self, i: int) -> Any:
        out = self[i] = self.fn(self.rules[i])
        return out


class Program:
    """The compiled rule selection (see the module docstring); built once, read-only
    (but for ``memo``, a cache of pure functions of it)."""

    def __init__(self, rulesets: list[str] | tuple[str, ...] | str | None = None):
        self.groups, self.native, self.pyrules = resolve(rulesets)
        #: the selection as given (it keeps the rules given as objects alive: the
        #: session cache keys them by identity)
        self.selection = rulesets
        #: the constructors of plain index arithmetic (:data:`NARROW_CTORS` when built)
        self.narrow_ctors = NARROW_CTORS
        #: egglog rule name -> the name its matches count under (the rule of the language
        #: its variants implement; an IntDt rule is two egglog rules)
        self.native_names: dict[str, str] = {}
        #: the arguments the native rules name (float constants, the Invalid's None), in
        #: order: each e-graph's argument table gives them the keys 0, 1, ... first
        self.rule_args = ArgTable()
        #: (rule set part, egglog program, constructors its pattern names) of each egglog
        #: rule of the native rules
        self.programs: list[tuple[str, str, frozenset[str]]] = []
        #: rule set -> its multiplying rules: (i, native rule name)
        self.mult: dict[str, list[tuple[int, str]]] = {}
        #: multiplying rule -> the constructors its pattern needs (``pattern_ctors``)
        self.mult_ctors: dict[int, frozenset[str]] = {}
        #: multiplying rule -> its egglog rule
        self._mult_rules: dict[int, ERule] = {}
        #: multiplying rule -> its bound on the matches from the rows (``match_bounds``;
        #: this and the next found when a run first reads them: many runs admit no
        #: multiplying rule)
        self.mult_bounds: dict[int, list[tuple[str, ...]] | None] = _PerRule(
            match_bounds, self._mult_rules)
        #: multiplying rule -> at most how many e-nodes one match makes (``new_nodes``)
        self.mult_new: dict[int, int] = _PerRule(new_nodes, self._mult_rules)
        #: rule set -> its parts: ``(part name, the constructors its rules' patterns
        #: name)``; a step runs only the parts whose constructors all have rows
        self.parts: dict[str, list[tuple[str, frozenset[str]]]] = {}
        #: rule set part -> the constructors its rules make (their right sides, actions)
        self.makes: dict[str, frozenset[str]] = {}
        self._part_of: dict[tuple[str, frozenset[str]], str] = {}
        self._select_makes: list[frozenset[str]] = []
        for r in self.native:
            self._compile(r)
        del self._part_of
        self.has_fixed_rules = any(rs.startswith(FIXED_RULESET) for rs, _, _ in self.programs)
        #: the constructors the narrow e-graph loads and holds the rules of: plain index
        #: arithmetic and what the select rules (``rulesets.SELECTS``) make from it (a
        #: select of a division and its condition), so that they do not widen a run
        self.narrow_loads = self.narrow_ctors.union(*self._select_makes)
        del self._select_makes
        #: the constructors whose interval rules wait for an insertion (analysis_ext)
        self.ext = analysis_ext(self.native)
        #: a memo of the engine's pure functions of this program and a step's state
        #: (the runnable parts of ``run.py``), kept here: found without a lookup
        self.memo: dict[tuple, Any] = {}

    def _part(self, ruleset: str, need: frozenset[str]) -> str:
        name = self._part_of.get((ruleset, need))
        if name is None:
            name = self._part_of[ruleset, need] = f"{ruleset}_p{len(self._part_of)}"
            self.parts.setdefault(ruleset, []).append((name, need))
        return name

    def _compile(self, r: ERule) -> None:
        """Add the egglog rules of the native rule ``r`` (its IntDt twins, a multiplying
        rule's counting twin) to their rule set parts."""
        key = self.rule_args.key
        twins = int_dt_twins(r)
        pairs = [(FIXED_RULESET if fixed_only(r) else "native", r)] if twins is None \
            else list(zip(("native", FIXED_RULESET), twins, strict=True))
        for ruleset, t in pairs:
            self.native_names[t.name] = r.law
            need = pattern_ctors(t)
            if multiplies(t):
                i = sum(map(len, self.mult.values()))
                self.mult.setdefault(ruleset, []).append((i, r.law))
                self.mult_ctors[i] = need
                self._mult_rules[i] = t
                count = self._part(f"{ruleset}_count", need)
                self.programs.append((count, t.fill(count_program(
                    t, count, f"{COUNT_FN} {i}"), key), need))
                ruleset = f"{ruleset}_mult"
            name = self._part(ruleset, need)
            made = frozenset(CTOR_CALL.findall(f"{t.rhs} {t.actions}")).intersection(CTORS)
            self.makes[name] = self.makes.get(name, frozenset()) | made
            if r.group in SELECTS and need <= self.narrow_ctors:
                self._select_makes.append(made)
            self.programs.append((name, t.program(name, key), need))

    def prepare(self) -> None:
        """Find now what a run otherwise finds when it first reads it (each multiplying
        rule's ``mult_bounds`` and ``mult_new``): a warm-up that leaves it to no run."""
        for i in self._mult_rules:
            self.mult_bounds[i], self.mult_new[i]  # noqa: B018 (found when read)

    def loads(self, kind: str) -> frozenset[str] | None:
        """The constructors an e-graph of ``kind`` loads (None: every one)."""
        return self.narrow_loads if kind == "narrow" else None

    def declares(self, kind: str) -> frozenset[str] | None:
        """The constructors an e-graph of ``kind`` declares (None: every one): a
        ``"narrow"`` one, those it loads and those its rules make (each table more
        costs every size report and snapshot of every run in it)."""
        if kind != "narrow":
            return None
        made = set(self.narrow_loads)
        for rs, _p, need in self.programs:
            if need <= self.narrow_loads:
                made |= self.makes.get(rs, frozenset())
        return frozenset(made)

    def text(self, kind: str) -> str:
        """The egglog program of an e-graph of ``kind``: the declarations, the analyses
        and the rules; the fixed-width rule sets' rules only in a ``"fixed"`` one, in a
        ``"narrow"`` one only the rules whose pattern names nothing but
        ``narrow_loads``."""
        if kind not in EGRAPH_KINDS:
            raise ValueError(f"e-graph kind {kind!r}: one of {EGRAPH_KINDS}")
        fixed_width = kind == "fixed"
        only = self.loads(kind)
        prog = [declarations(only, self.declares(kind)),
                analysis_program(ANALYSIS, fixed=fixed_width, ext=self.ext, only=only)]
        # the counting twins' counters, one row per multiplying rule (one table: a
        # table of its own each made every size report and snapshot read 121 more)
        prog += [f"(function {COUNT_FN} (i64) i64 :merge (+ old new))"] if self.mult else []
        for base in ("native", FIXED_RULESET):
            prog += [f"(ruleset {part})" for rs in (base, f"{base}_mult", f"{base}_count")
                     for part, _ in self.parts.get(rs, ())]
        prog += [p for rs, p, need in self.programs
                 if (fixed_width or not rs.startswith(FIXED_RULESET)) and
                 (kind != "narrow" or need <= self.narrow_loads)]
        return "\n".join(prog)

    def kind_of(self, roots: list[UOp], orders: list[list[UOp]] | None = None) -> str:
        """The kind of e-graph a run of ``roots`` starts in: ``"fixed"`` when a node
        needs the fixed-width rule sets (:func:`needs_fixed_width`), ``"narrow"`` when
        every node is one of :data:`NARROW_CTORS`, else ``"index"``."""
        if orders is None:
            orders = [r.toposort() for r in roots]
        if any(needs_fixed_width(roots, orders)):
            return "fixed"
        for order in orders:
            for u in order:
                if uop_ctor(u) not in self.narrow_ctors:
                    return "index"
        return "narrow"

    def __repr__(self) -> str:
        return (f"Program({self.selection!r})")
