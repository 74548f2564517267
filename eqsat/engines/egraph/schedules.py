"""Budgets of an e-graph run: iteration, e-node and wall-time limits.

egglog has no built-in e-node or time limit, so the engine steps one iteration
at a time and checks after each step (:class:`Clock`). Before an iteration it
estimates that iteration's time (the previous one's, with a margin) plus the
extraction's, and stops early rather than overrun: the whole run stays within
the time budget plus a small overshoot (one egglog step cannot be interrupted).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Limits", "Clock", "STOP_REASONS", "STALL_ITERATIONS", "STALL_GROWTH",
           "STALL_EMITTED", "gc_paused"]

#: why a run stopped: nothing changed (``saturated``); the roots' best cost did not
#: improve for ``Limits.stall`` iterations while the e-graph barely grew (``stalled``,
#: see :data:`STALL_GROWTH`); or a budget was reached (``iterations``, ``enodes``,
#: ``time``)
STOP_REASONS = ("saturated", "stalled", "iterations", "enodes", "time")

#: iterations without a cheaper root term before a run counts as stalled (0: never)
STALL_ITERATIONS = 1
#: ... and only while the e-graph grew by at most this fraction over those iterations,
STALL_GROWTH = 0.10
#: ... and the last computed pass recorded at most this fraction of it in new rows (the
#: computed pass visits only the classes near the roots' best terms, so its rows come
#: in smaller steps: a larger bound stopped runs before their best, docs/perf.md)
STALL_EMITTED = 0.02


@dataclass(frozen=True)
class Limits:
    """The limits of a run (``eqsat.api.Budget`` converts to this).

    ``stall``: stop (``"stalled"``) after that many iterations in a row without a
    cheaper best term of the roots while the e-graph grew by at most
    :data:`STALL_GROWTH`; 0 never stops early.
    """

    iterations: int = 12
    enodes: int = 20_000
    seconds: float = 2.0
    stall: int = STALL_ITERATIONS

    def __post_init__(self) -> None:
        if self.stall < 0:
            raise ValueError(f"invalid limits {self!r}: stall >= 0 required")

    @staticmethod
    def of(budget: Any) -> Limits:
        if budget is None:
            return Limits()
        if isinstance(budget, Limits):
            return budget
        return Limits(int(budget.iterations), int(budget.enodes), float(budget.seconds),
                      int(getattr(budget, "stall", STALL_ITERATIONS)))


class Clock:
    """Wall time of one run against its budget, with estimates of what is left to do.

    The loop may use ``SOFT`` of the budget; the rest is for the extraction. Tree
    extraction is fast (``TREE_PER_NODE``); the DAG-aware extraction is slower and
    runs only when its estimate (learned from earlier runs) fits what is left.
    """

    SOFT = 0.75
    TREE_PER_NODE = 3e-5
    _dag_per_node = 5e-4  # seconds per e-node of a root's view, refined by learn_dag()
    _iter_per_node = 4e-4  # seconds per e-node of one iteration, refined by learn_iter()
    FIXED = 0.08  # push/pop of the e-graph and the caller's cost checks

    def __init__(self, seconds: float, t0: float | None = None):
        self.seconds = seconds
        self.t0 = time.perf_counter() if t0 is None else t0

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def remaining(self) -> float:
        return self.seconds * self.SOFT - self.elapsed()

    def tree_estimate(self, enodes: float) -> float:
        return 0.002 + enodes * self.TREE_PER_NODE

    def dag_estimate(self, enodes: float) -> float:
        return 0.002 + enodes * Clock._dag_per_node

    def iter_estimate(self, enodes: float) -> float:
        return 0.005 + enodes * Clock._iter_per_node

    @classmethod
    def learn_iter(cls, seconds: float, enodes: int) -> None:
        if enodes > 50:
            cls._iter_per_node = 0.7 * cls._iter_per_node + 0.3 * (seconds / enodes)

    @classmethod
    def learn_dag(cls, seconds: float, enodes: int) -> None:
        if enodes > 50:
            cls._dag_per_node = 0.7 * cls._dag_per_node + 0.3 * (seconds / enodes)

    def soft_deadline(self, enodes: float = 0) -> float:
        """When the computed rewrites must stop to leave time for the extraction."""
        return self.t0 + self.seconds * self.SOFT - self.tree_estimate(enodes) - self.FIXED

    def over_hard(self) -> bool:
        return self.elapsed() > self.seconds

    @contextmanager
    def phase(self, times: dict[str, float], name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - t


@contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic garbage collection off inside, back on after (if it was on). The
    computed pass and the extraction allocate many short-lived, acyclic objects that
    reference counting frees; the collections they would trigger only rescan the
    engine's heap."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
