"""The rule families and the ordered matchers built from them.

``symbolic_simple()`` composes seed 000's groups (docs/rules.md, group order) in
exactly this order; ``symbolic()`` is ``symbolic_simple()`` plus GEP pushing::

    propagate_invalid            rules/invalid.py     (must be first: before x*0 -> 0)
    fold_invalid_load_store      rules/invalid.py
    constant_folding_dsl_patterns rules/constants.py
    vconst_folding_patterns      rules/constants.py
    identity_and_zero_patterns   rules/identity.py
    commutative_canonicalization rules/canonical.py
    self_folding_dsl_patterns    rules/identity.py
    zero_folding_dsl_patterns    rules/identity.py
    division_dsl_patterns        rules/division.py    (FDIV(0,0) before FDIV(x,x))
    cast_dsl_patterns            rules/casts.py
    cast_where_dsl_patterns      rules/casts.py
    term_combining_dsl_patterns  rules/combine.py
    alu_folding_dsl_patterns     rules/combine.py
    floor_division_patterns      rules/floordiv.py    (floor ops; to idiv/mod where signs allow)
    advanced_division_dsl_patterns rules/divmod.py
    div_mod_recombine_dsl_patterns rules/divmod.py
    comparison_dsl_patterns      rules/compare.py
    boolean_dsl_patterns         rules/logic.py
    minmax_dsl_patterns          rules/minmax.py
    where_bound_patterns         rules/where.py
    power_dsl_patterns           rules/identity.py
    negation_dsl_patterns        rules/identity.py
    range_based_mod_div_patterns rules/divmod.py      (fold_divmod_general last)
    dce_dsl_patterns             rules/where.py       (Morok's name: the WHERE branch rules)
    dead_loop_patterns           rules/dce.py
    after_simplification_patterns rules/dce.py
    pm_move_where_on_load        rules/load.py
    gep_pushing_patterns         rules/gep.py         (symbolic() only)

``list_rulesets()`` lists these groups (engine ``"baseline"``), the two
composites, and every e-graph rule set a family module declares in its
``EGRAPH`` dict (engine ``"egraph"``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from eqsat.ir.pattern import PatternMatcher, Rule

__all__ = [
    "GROUP_ORDER", "SIMPLE_GROUPS", "SYMBOLIC_GROUPS", "BASELINE_RULESETS", "FAMILY_MODULES",
    "RuleSet", "RulesetError", "symbolic_simple", "symbolic", "all_rules", "groups",
    "list_rulesets", "matcher", "family_modules", "group_names", "split_selection", "resolve",
    "egraph_groups", "EGRAPH_FAMILIES", "EGRAPH_OPT_IN", "COMPOSITE_RULESETS",
]

# family module -> the groups it defines (a module may also define EGRAPH later)
FAMILY_MODULES: tuple[str, ...] = (
    "invalid", "constants", "identity", "canonical", "division", "casts", "combine", "floordiv",
    "divmod", "compare", "logic", "minmax", "where", "dce", "load", "gep",
)

SIMPLE_GROUPS: tuple[str, ...] = (
    "propagate_invalid",
    "fold_invalid_load_store",
    "constant_folding_dsl_patterns",
    "vconst_folding_patterns",
    "identity_and_zero_patterns",
    "commutative_canonicalization",
    "self_folding_dsl_patterns",
    "zero_folding_dsl_patterns",
    "division_dsl_patterns",
    "cast_dsl_patterns",
    "cast_where_dsl_patterns",
    "term_combining_dsl_patterns",
    "alu_folding_dsl_patterns",
    "floor_division_patterns",
    "advanced_division_dsl_patterns",
    "div_mod_recombine_dsl_patterns",
    "comparison_dsl_patterns",
    "boolean_dsl_patterns",
    "minmax_dsl_patterns",
    "where_bound_patterns",
    "power_dsl_patterns",
    "negation_dsl_patterns",
    "range_based_mod_div_patterns",
    "dce_dsl_patterns",
    "dead_loop_patterns",
    "after_simplification_patterns",
    "pm_move_where_on_load",
)
SYMBOLIC_GROUPS: tuple[str, ...] = SIMPLE_GROUPS + ("gep_pushing_patterns",)
GROUP_ORDER = SYMBOLIC_GROUPS
# names accepted as optimize(engine="baseline", rulesets=[...])
BASELINE_RULESETS: tuple[str, ...] = ("symbolic", "symbolic_simple") + SYMBOLIC_GROUPS


class RulesetError(ValueError):
    """An unknown rule set name, or a rule set that does not fit the engine."""


@dataclass(frozen=True)
class RuleSet:
    """A named list of rules for one engine (``"baseline"`` or ``"egraph"``)."""

    name: str
    engine: str
    rules: tuple[Any, ...] = field(repr=False)
    module: str = ""

    def __repr__(self) -> str:
        return (f"RuleSet(name={self.name!r}, engine={self.engine!r}, "
                f"rules=<{len(self.rules)}>, module={self.module!r})")


def family_modules() -> dict[str, ModuleType]:
    """Every family module by short name (imports them)."""
    return {m: importlib.import_module(f"rules.{m}") for m in FAMILY_MODULES}


_GROUPS: dict[str, list[Rule]] | None = None
_GROUP_MODULE: dict[str, str] = {}


def groups() -> dict[str, list[Rule]]:
    """Every baseline group name -> its ordered rules (validated once)."""
    global _GROUPS
    if _GROUPS is None:
        out: dict[str, list[Rule]] = {}
        for short, mod in family_modules().items():
            for g, rs in getattr(mod, "GROUPS", {}).items():
                if g in out:
                    raise RulesetError(f"group {g!r} defined twice (rules.{short} and "
                                       f"rules.{_GROUP_MODULE[g]})")
                out[g] = list(rs)
                _GROUP_MODULE[g] = short
        missing = [g for g in SYMBOLIC_GROUPS if g not in out]
        if missing:
            raise RulesetError(f"groups missing from the family modules: {', '.join(missing)}")
        _check_rules([r for g in SYMBOLIC_GROUPS for r in out[g]])
        _GROUPS = out
    return _GROUPS


def _check_rules(rules: list[Rule]) -> None:
    seen: dict[str, Rule] = {}
    for r in rules:
        if not r.name or not r.identity:
            raise RulesetError(f"rule {r!r} needs a name and an identity comment")
        if r.name in seen:
            raise RulesetError(f"rule name {r.name!r} is used twice (groups {seen[r.name].group!r}"
                               f" and {r.group!r})")
        seen[r.name] = r


def group_names() -> tuple[str, ...]:
    """The baseline group names in matcher order."""
    return SYMBOLIC_GROUPS


def all_rules() -> list[Rule]:
    """Every baseline rule, in ``symbolic()`` order (unique names)."""
    gs = groups()
    return [r for g in SYMBOLIC_GROUPS for r in gs[g]]


#: the e-graph's family modules in schedule order: a group's rules (native and computed)
#: are loaded in the order its family comes here; divmod leads (its computed rules are
#: tried first)
EGRAPH_FAMILIES: tuple[str, ...] = (
    "divmod", "floordiv", "invalid", "constants", "identity", "canonical", "division", "casts",
    "combine", "compare", "logic", "minmax", "where", "dce", "load", "gep",
)
#: e-graph groups a selection holds only when it names them (or ``"all"``): the stepwise
#: lifting of ``where(c, x, Invalid)`` through every op builds every partial lifting of a
#: sum (the default lifts in one computed step, ``lift_invalid``); the
#: combinations of two ``where``s over one condition through every binary op (the default
#: combines sums and constant branches only)
EGRAPH_OPT_IN: tuple[str, ...] = ("propagate_invalid_stepwise", "where_combine_native")
#: the names that stand for several groups, in both engines: ``symbolic`` (= ``default``:
#: the engine's default, every group but the opt-in ones), ``symbolic_simple`` (the same
#: without GEP pushing, seed 000's ``symbolic_simple()``), ``all`` (every group)
COMPOSITE_RULESETS: tuple[str, ...] = ("symbolic", "symbolic_simple", "default", "all")


def egraph_groups() -> dict[str, list[Any]]:
    """Every e-graph group name -> its rules (``ERule``/``PyRule`` objects), in the
    families' schedule order (:data:`EGRAPH_FAMILIES`)."""
    out: dict[str, list[Any]] = {}
    for fam in EGRAPH_FAMILIES:
        mod = importlib.import_module(f"rules.{fam}")
        for g, rs in mod.EGRAPH.items():
            out[g] = list(rs)
    return out


def resolve(names: list[str] | tuple[str, ...] | str | None, engine: str) -> tuple[str, ...]:
    """The group names a selection of rule-set names means for ``engine`` (``"baseline"``
    or ``"egraph"``): the one place a name is read. None is the engine's default.

    ``symbolic``/``default``: every group but the e-graph's opt-in ones;
    ``symbolic_simple``: the same without ``gep_pushing_patterns``; ``all``: every group;
    any group name: that group. The baseline composes its groups in seed 000's order
    (docs/rules.md), whatever order they were named in; the e-graph keeps the order
    named (each group once). An unknown name raises :class:`RulesetError` (a ValueError)
    listing the choices."""
    if engine == "baseline":
        order = SYMBOLIC_GROUPS
        default = simple = SYMBOLIC_GROUPS
        opt_in: tuple[str, ...] = ()
    elif engine == "egraph":
        order = tuple(egraph_groups())
        opt_in = EGRAPH_OPT_IN
        default = tuple(g for g in order if g not in opt_in)
    else:
        raise RulesetError(f"unknown engine {engine!r}: baseline or egraph")
    simple = tuple(g for g in default if g != "gep_pushing_patterns")
    if names is None:
        return default
    if isinstance(names, str):
        names = [names]
    wanted: list[str] = []
    for n in names:
        if n in ("symbolic", "default"):
            wanted.extend(default)
        elif n == "symbolic_simple":
            wanted.extend(simple)
        elif n == "all":
            wanted.extend(order)
        elif n in order:
            wanted.append(n)
        else:
            raise RulesetError(f"unknown {'e-graph' if engine == 'egraph' else engine} rule "
                               f"set {n!r}; choose from "
                               f"{', '.join(COMPOSITE_RULESETS + tuple(sorted(order)))}")
    if engine == "baseline":
        return tuple(g for g in order if g in wanted)
    return tuple(dict.fromkeys(wanted))


def _expand(names: list[str] | tuple[str, ...] | str | None) -> tuple[str, ...]:
    return resolve(names, "baseline")


_MATCHERS: dict[tuple[Any, ...], tuple[PatternMatcher, tuple[Any, ...]]] = {}
#: matchers with rules given as objects kept at most (the oldest goes first)
_MATCHERS_WITH_RULES = 32
#: the matcher of a selection given as None or as one name, whose groups never change
#: (no resolving of the name at each call)
_MATCHERS_BY_NAME: dict[str | None, PatternMatcher] = {}


def split_selection(selection: Any) -> tuple[list[str] | str | None, list[Any]]:
    """A rule-set selection's names and its rules given as objects (rules of the
    language, :class:`~eqsat.ir.pattern.Rule`, the e-graph's rule forms), in order. The
    names part is None when the selection is None or holds rule objects only (the
    engine's default rule sets, then the objects)."""
    if selection is None or isinstance(selection, str):
        return selection, []
    names = [x for x in selection if isinstance(x, str)]
    objs = [x for x in selection if not isinstance(x, str)]
    return (names if names or not objs else None), objs


def _baseline_rule(r: Any) -> Rule:
    if isinstance(r, Rule):
        return r
    rule = getattr(r, "baseline", None)  # a rule of the language
    if isinstance(rule, Rule):
        return rule
    raise RulesetError(f"{r!r} is not a baseline rule (a rule-set name, a rule of the "
                       "language or an eqsat.Rule)")


def matcher(names: list[Any] | tuple[Any, ...] | str | None = None) -> PatternMatcher:
    """The (cached) ordered matcher of the named baseline rule sets, in group order,
    followed by the rules the selection gives as objects (rules of the language or
    :class:`~eqsat.ir.pattern.Rule`s), in their order.

    ``None`` is ``symbolic``. The matcher's ``matches`` counts accumulate over
    calls; callers that want per-run counts take the difference.
    """
    simple = names is None or type(names) is str
    if simple and (pm := _MATCHERS_BY_NAME.get(names)) is not None:
        return pm
    sel, objs = split_selection(names)
    key = (*_expand(sel), *(("rule", id(r)) for r in objs))
    hit = _MATCHERS.get(key)
    if hit is None:
        pm = _build_matcher(sel, objs)
        # the rule objects stay referenced by the entry: their ids in the key stay theirs
        _MATCHERS[key] = (pm, tuple(objs))
    else:
        pm = hit[0]
    if simple:
        _MATCHERS_BY_NAME[names] = pm
    return pm


def _build_matcher(sel: list[str] | str | None, objs: list[Any]) -> PatternMatcher:
    """A new matcher of the named groups then the rule objects (:func:`matcher`), the
    oldest cached matchers with rule objects dropped to make room for one more."""
    groups_ = _expand(sel)
    extra = [_baseline_rule(r) for r in objs]
    gs = groups()
    label = ("symbolic" if groups_ == SYMBOLIC_GROUPS else "symbolic_simple"
             if groups_ == SIMPLE_GROUPS else "+".join(groups_))
    if extra:
        label += "+" + "+".join(r.name for r in extra)
        with_rules = [k for k in _MATCHERS if any(isinstance(x, tuple) for x in k)]
        for k in with_rules[:max(0, len(with_rules) - _MATCHERS_WITH_RULES + 1)]:
            del _MATCHERS[k]
    return PatternMatcher([r for g in groups_ for r in gs[g]] + extra, label)


def symbolic_simple() -> PatternMatcher:
    """Seed 000's ``symbolic_simple()`` (docs/rules.md): every group from propagate_invalid to
    pm_move_where_on_load, in order (a fresh matcher)."""
    gs = groups()
    return PatternMatcher([r for g in SIMPLE_GROUPS for r in gs[g]], "symbolic_simple")


def symbolic() -> PatternMatcher:
    """``symbolic_simple()`` + GEP pushing (a fresh matcher)."""
    gs = groups()
    return PatternMatcher([r for g in SYMBOLIC_GROUPS for r in gs[g]], "symbolic")


def list_rulesets() -> list[RuleSet]:
    """Every rule set: the baseline groups and composites, then the e-graph sets
    each family module declares in ``EGRAPH`` (read afresh on every call)."""
    gs = groups()
    out = [RuleSet("symbolic", "baseline", tuple(all_rules()), "rules"),
           RuleSet("symbolic_simple", "baseline",
                   tuple(r for g in SIMPLE_GROUPS for r in gs[g]), "rules")]
    out += [RuleSet(g, "baseline", tuple(gs[g]), f"rules.{_GROUP_MODULE[g]}")
            for g in SYMBOLIC_GROUPS]
    for short, mod in family_modules().items():
        eg = getattr(mod, "EGRAPH", None)
        if not eg:
            continue
        for name, rs in eg.items():
            out.append(RuleSet(name, "egraph", tuple(rs), f"rules.{short}"))
    return out
