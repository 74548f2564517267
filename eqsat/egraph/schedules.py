"""Budgets of an e-graph run: iteration, e-node and wall-time limits.

egglog has no built-in e-node or time limit, so the engine steps one iteration
at a time and checks after each step (:class:`Clock`). Before an iteration it
estimates that iteration's time (the previous one's, with a margin) plus the
extraction's, and stops early rather than overrun: the whole run stays within
the time budget plus a small overshoot (one egglog step cannot be interrupted).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Limits", "Clock", "STOP_REASONS"]

#: why a run stopped
STOP_REASONS = ("saturated", "iterations", "enodes", "time")


@dataclass(frozen=True)
class Limits:
    """The three limits (``eqsat.api.Budget`` converts to this)."""

    iterations: int = 12
    enodes: int = 20_000
    seconds: float = 2.0

    @staticmethod
    def of(budget: Any) -> Limits:
        if budget is None:
            return Limits()
        if isinstance(budget, Limits):
            return budget
        return Limits(int(budget.iterations), int(budget.enodes), float(budget.seconds))


class Clock:
    """Wall time of one run against its budget."""

    #: fraction of the budget the loop may use before extraction
    SOFT = 0.8
    #: seconds of extraction per e-node (an estimate, refined as runs go)
    EXTRACT_PER_NODE = 4e-5

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def remaining(self) -> float:
        return self.seconds * self.SOFT - self.elapsed()

    def soft_deadline(self) -> float:
        return self.t0 + self.seconds * self.SOFT

    def over_hard(self) -> bool:
        return self.elapsed() > self.seconds

    def extract_estimate(self, snap: Any) -> float:
        n = getattr(snap, "enodes", 0) or 0
        return 0.002 + n * self.EXTRACT_PER_NODE

    @contextmanager
    def phase(self, times: dict[str, float], name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - t
