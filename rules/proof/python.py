"""Proof obligations of the rules written in Python (one function a rule).

Each entry of :data:`OBLIGATIONS` maps a rule's name to a function ``(timeout_ms) ->
Outcome`` that runs the rule's own code on symbolic inputs and proves its result with
z3, or, where z3 cannot follow the code, tests it exhaustively over a stated domain and
says so (``tested-only``).
"""

from __future__ import annotations

from collections.abc import Callable

from rules.proof.laws import Outcome

__all__ = ["OBLIGATIONS"]

OBLIGATIONS: dict[str, Callable[[int], Outcome]] = {}
