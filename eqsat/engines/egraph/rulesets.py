"""The e-graph's rule sets: native egglog rewrites and computed rewrites, by group.

Group names are those of docs/rules.md (``identity_and_zero_patterns``,
``range_based_mod_div_patterns``, ...). A group's rules come from the ``EGRAPH``
section of its family module ``rules/<family>.py``, derived there from the same rule
definitions as the family's baseline ``GROUPS`` (the div/mod family's computed rules,
its basis search and whole-sum recombinations are in ``rules/divmod.py``). A family
module that fails to import is an error, not a missing family.

:func:`default_groups` is every group but the opt-in ones (``OPT_IN``,
``rules.EGRAPH_OPT_IN``, where the reasons are). Rule-set names are read in one place,
:func:`rules.resolve`.
"""

from __future__ import annotations

from typing import Any

import rules
from rules.computed import PyRule
from rules.native import ERule

__all__ = ["egraph_groups", "resolve", "default_groups", "OPT_IN", "SELECTS"]

OPT_IN: tuple[str, ...] = rules.EGRAPH_OPT_IN

#: groups whose rules turn plain index arithmetic into selects (a division of two or
#: three quotients as a ladder of selects): the narrow e-graph loads what they make, so
#: that they do not widen a run of plain index arithmetic (``Program.narrow_loads``)
SELECTS: tuple[str, ...] = ("division_select",)


def egraph_groups() -> dict[str, list[Any]]:
    """Every e-graph group name -> its rules (ERule / PyRule objects), in the families'
    schedule order (:func:`rules.egraph_groups`)."""
    return rules.egraph_groups()


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

    The names are read by :func:`rules.resolve` (None = the default groups; ``"all"``,
    ``"symbolic"``, ``"symbolic_simple"``, group names). Unknown names raise
    ValueError listing the choices. A selection may also hold rules as objects (see
    :func:`_object_rules`): they run after the named groups' (a selection of rules
    only: after the default groups'); their names join the group names.
    """
    rulesets, objs = rules.split_selection(rulesets)
    extra = _object_rules(objs)
    groups = egraph_groups()
    seen = rules.resolve(rulesets, "egraph")  # the names read in one place (rules)
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
