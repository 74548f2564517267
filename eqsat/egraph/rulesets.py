"""The e-graph's rule sets: native egglog rewrites and computed rewrites, by group.

Group names are the seeds' (``identity_and_zero_patterns``,
``range_based_mod_div_patterns``, ...). A group's rules come from the ``EGRAPH``
section of its family module ``rules/<family>.py`` when that module declares
the group, else from this package's drafts (:mod:`eqsat.egraph.native`, the
div/mod core ``rules.divmod_core`` and the basis search): the family modules
whose author marked them done carry their twins in ``EGRAPH``.

:func:`default_groups` is every group but the opt-in ones (``OPT_IN``): the
stepwise lifting of ``where(c, x, Invalid)`` through every op, one node at a
time, builds every partial lifting of a sum (it grows combinatorially); the
default lifts in one computed step (``lift_invalid``).
"""

from __future__ import annotations

import importlib
from typing import Any

from eqsat.egraph.computed import PyRule, divmod_pyrules, sum_pyrules
from eqsat.egraph.native import ERule, native_groups

__all__ = ["egraph_groups", "resolve", "default_groups", "OPT_IN", "CANON_GROUP",
           "DIVMOD_GROUP"]

CANON_GROUP = "alu_folding_dsl_patterns"
#: div/mod core group -> the seed's group name
DIVMOD_GROUP = {"range_based": "range_based_mod_div_patterns",
                "fold_divmod_general": "range_based_mod_div_patterns",
                "advanced_division": "advanced_division_dsl_patterns",
                "div_mod_recombine": "div_mod_recombine_dsl_patterns"}
OPT_IN: tuple[str, ...] = ("propagate_invalid_stepwise", "div_mod_recombine_nested_native",
                           "constant_folding_native")

_FAMILIES = ("invalid", "constants", "identity", "canonical", "division", "casts", "combine",
             "divmod", "compare", "logic", "minmax", "where", "dce", "load", "gep")


def _drafts() -> dict[str, list[Any]]:
    from rules import divmod_core as core

    out: dict[str, list[Any]] = {g: list(rs) for g, rs in native_groups().items()}
    for r in divmod_pyrules(core.DIVMOD_RULES):
        g = DIVMOD_GROUP.get(r.group, r.group)
        out.setdefault(g, []).append(PyRule(r.name, r.identity, g, "divmod", r.rule))
    out.setdefault("div_mod_recombine_dsl_patterns", []).append(PyRule(
        "divmod_basis", "sum of x//n, x%n terms -> the same sum in a cheaper basis through "
        "x == n*(x//n) + x%n (e.g. 30*(r//30) + r%10 - 10*((r//10)%3) -> r - 20*((r//10)%3))",
        "div_mod_recombine_dsl_patterns", "basis"))
    for r in sum_pyrules(core.SUM_RULES, "div_mod_recombine_dsl_patterns"):
        out["div_mod_recombine_dsl_patterns"].append(r)
    return out


def egraph_groups() -> dict[str, list[Any]]:
    """Every e-graph group name -> its rules (ERule / PyRule objects)."""
    out = _drafts()
    for fam in _FAMILIES:
        try:
            mod = importlib.import_module(f"rules.{fam}")
        except ImportError:
            continue
        eg = getattr(mod, "EGRAPH", None)
        if isinstance(eg, dict):
            for g, rs in eg.items():
                out[g] = list(rs)
    return out


def default_groups() -> tuple[str, ...]:
    """The groups of the default selection (every group but the opt-in ones)."""
    return tuple(g for g in egraph_groups() if g not in OPT_IN)


def resolve(rulesets: list[str] | tuple[str, ...] | str | None
            ) -> tuple[tuple[str, ...], list[ERule], list[PyRule]]:
    """``(group names, native rules, computed rules)`` of a rule set selection.

    None = the default groups; ``"all"`` = every group; names may also be
    ``"symbolic"``/``"symbolic_simple"`` (= the default). Unknown names raise
    ValueError listing the choices.
    """
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
    return tuple(seen), native, py
