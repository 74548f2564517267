"""The e-graph's rule sets: native egglog rewrites and computed rewrites, by group.

Group names are those of docs/rules.md (``identity_and_zero_patterns``,
``range_based_mod_div_patterns``, ...). A group's rules come from the ``EGRAPH``
section of its family module ``rules/<family>.py``, derived there from the same rule
definitions as the family's baseline ``GROUPS`` (the div/mod family's computed rules,
its basis search and whole-sum recombinations are in ``rules/divmod.py``). A family
module that fails to import is an error, not a missing family.

:func:`default_groups` is every group but the opt-in ones (``OPT_IN``): the
stepwise lifting of ``where(c, x, Invalid)`` through every op, one node at a
time, builds every partial lifting of a sum (it grows combinatorially); the
default lifts in one computed step (``lift_invalid``); the combinations of two
``where``s over one condition through every binary op (``where_combine_native``) grow
with every such pair (the default combines constant branches only).
"""

from __future__ import annotations

import importlib
from typing import Any

from rules.computed import PyRule
from rules.native import ERule

__all__ = ["egraph_groups", "resolve", "default_groups", "OPT_IN", "FINISHING"]

OPT_IN: tuple[str, ...] = ("propagate_invalid_stepwise", "div_mod_recombine_nested_native",
                           "where_combine_native")

#: groups whose rules a run holds back until its other rules are done (it would stop
#: saturated or stalled): their right sides are so much cheaper (a select for a division)
#: that the computed pass, which visits only the classes near the roots' best terms, would
#: leave the divisions' own simplifications unvisited (a select of ``(2*a + b) % 2`` where
#: the pass finds ``b``)
FINISHING: tuple[str, ...] = ("division_select",)

# the family modules in schedule order: a group's rules (native and computed) are loaded in
# the order its family comes here; divmod leads (its computed rules are tried first)
_FAMILIES = ("divmod", "floordiv", "invalid", "constants", "identity", "canonical", "division",
             "casts", "combine", "compare", "logic", "minmax", "where", "dce", "load", "gep")


def egraph_groups() -> dict[str, list[Any]]:
    """Every e-graph group name -> its rules (ERule / PyRule objects)."""
    out: dict[str, list[Any]] = {}
    for fam in _FAMILIES:
        mod = importlib.import_module(f"rules.{fam}")
        for g, rs in mod.EGRAPH.items():
            out[g] = list(rs)
    return out


def default_groups() -> tuple[str, ...]:
    """The groups of the default selection (every group but the opt-in ones)."""
    return tuple(g for g in egraph_groups() if g not in OPT_IN)


def _object_rules(objs: list[Any]) -> list[Any]:
    """The e-graph's rules of the rules a selection gives as objects: a rule of the
    language compiles as a family's does, an ordered-matcher ``Rule`` is matched from
    Python on every e-node of the classes, an ``ERule``/``PyRule`` is taken as it is."""
    from eqsat.ir.pattern import Rule
    from rules.computed import ematched
    from rules.lang import Law, PyLaw, egraph_rules

    out: list[Any] = []
    for r in objs:
        if isinstance(r, (ERule, PyRule)):
            out.append(r)
        elif isinstance(r, (Law, PyLaw)):
            made = egraph_rules([r])
            if not made:
                raise ValueError(f"rule {r.name!r} does not run in the e-graph "
                                 f"({getattr(r, 'egraph_absent', None) or 'absent'})")
            out.extend(made)
        elif isinstance(r, Rule):
            out.extend(ematched([r], "user", reason="an ordered-matcher rule given as such"))
        else:
            raise TypeError(f"e-graph rule selection: {r!r} is neither a rule-set name nor "
                            "a rule (a rule of the language, an eqsat.Rule, an ERule or a "
                            "PyRule)")
    return out


def resolve(rulesets: list[Any] | tuple[Any, ...] | str | None
            ) -> tuple[tuple[str, ...], list[ERule], list[PyRule]]:
    """``(group names, native rules, computed rules)`` of a rule set selection.

    None = the default groups; ``"all"`` = every group; names may also be
    ``"symbolic"``/``"symbolic_simple"`` (= the default). Unknown names raise
    ValueError listing the choices. A selection may also hold rules as objects (see
    :func:`_object_rules`): they run after the named groups' (a selection of rules
    only: after the default groups'); their names join the group names.
    """
    from rules import split_selection

    rulesets, objs = split_selection(rulesets)
    extra = _object_rules(objs)
    groups = egraph_groups()
    if rulesets is None:
        names = [g for g in groups if g not in OPT_IN]
    else:
        if isinstance(rulesets, str):
            rulesets = [rulesets]
        names = []
        for n in rulesets:
            if n in ("symbolic", "symbolic_simple", "default"):
                names.extend(g for g in groups if g not in OPT_IN)
            elif n == "all":
                names.extend(groups)
            elif n in groups:
                names.append(n)
            else:
                raise ValueError(f"unknown e-graph rule set {n!r}; choose from "
                                 f"{', '.join(sorted(groups))}, 'default', 'all'")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    native: list[ERule] = []
    py: list[PyRule] = []
    for g in seen:
        for r in groups[g]:
            if isinstance(r, ERule):
                native.append(r)
            elif isinstance(r, PyRule):
                py.append(r)
            else:
                raise TypeError(f"e-graph group {g!r}: {r!r} is neither an ERule nor a PyRule")
    for r in extra:
        (native if isinstance(r, ERule) else py).append(r)
    names = tuple(dict.fromkeys(r.name for r in extra))
    return tuple(seen) + names, native, py
