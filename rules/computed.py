"""Computed rules: rewrites whose right side a Python function computes.

A :class:`PyRule` names one such rewrite for the e-graph, which applies it between
egglog runs (``eqsat/engines/egraph/computed/``): the div/mod core's rules and the
whole-sum rules (:func:`divmod_pyrules`, :func:`sum_pyrules`), the e-graph's own passes
(canonical sums, the fold, ...) and the rules written in Python, matched against every
e-node of the classes a pass visits (:func:`ematched`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rules.divmod_core import DivModRule, SumRule

__all__ = ["PyRule", "ematched", "divmod_pyrules", "sum_pyrules"]


@dataclass(frozen=True)
class PyRule:
    """A computed rewrite: ``apply(state)`` yields ``(class, term)`` pairs to union.

    ``name``/``identity``/``group`` as for every rule; ``kind`` is one of
    ``"divmod"`` (a div/mod core rule), ``"sum"`` (a whole-sum rule) or
    ``"canon"`` (sum canonicalization).
    """

    name: str
    identity: str
    group: str
    kind: str
    rule: Any = field(default=None, repr=False)
    #: why the e-graph does not run it as native egglog rules ("" for the computed
    #: passes, which are Python by design)
    reason: str = ""

    def __repr__(self) -> str:
        return f"PyRule({self.name!r}, {self.identity!r}, group={self.group!r})"


def ematched(rules: Iterable[Any], group: str, non_int: bool = False,
             reason: str = "") -> list[PyRule]:
    """Baseline rules the e-graph matches from Python against every e-node of the classes
    it visits, each with the ``reason`` it cannot be a native egglog rule."""
    return [PyRule(r.name, r.identity, group, "ematch_nonint" if non_int else "ematch", r, reason)
            for r in rules]


def divmod_pyrules(rules: Iterable[DivModRule]) -> list[PyRule]:
    return [PyRule(r.name, r.identity, r.group, "divmod", r) for r in rules]


def sum_pyrules(rules: Iterable[SumRule], group: str) -> list[PyRule]:
    return [PyRule(r.name, r.identity, group, "sum", r) for r in rules]
