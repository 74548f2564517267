"""The e-graph's result cache: kernels repeat index expressions, and one e-graph call
costs milliseconds where a lookup costs microseconds.

A result is kept under the exact printed input (``to_sexpr(graph, compact=True)``: the
text format writes every node's op, dtype, arg and sources, so two graphs print the
same only when they are the same graph), the run's limits (``Limits``, the whole
budget), the rule set selection and the cost model. It is kept only when nothing but
those decided it:

- the cost model is one of the shipped ones (:class:`extraction.ReferenceCost`,
  :class:`extraction.CpuCost`: frozen dataclasses, equal exactly when they price
  alike); a model of another type is never cached (its prices may hold state);
- the run was not cut by a clock: it did not stop for ``time`` or ``memory``, no
  computed pass ran past its deadline and the extraction skipped no DAG search for
  time (``stats["time_limited"]`` is False). Such a run gives the same result every
  time; a run the clock cut short may give a better one next time, so it is not kept.

A hit returns the kept output graph (UOps are immutable) and a copy of the kept stats
with ``stats["time"]["cached"]`` the lookup's time. The cache is a least recently used
map of at most :data:`CACHE_SIZE` entries (one per distinct call; inputs longer than
:data:`MAX_KEY_CHARS` characters are not kept), shared by the
process's threads behind a lock; :func:`clear_result_cache` empties it and
:func:`set_result_cache_size` bounds it (0 turns it off).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

from eqsat.ir.sexpr import to_sexpr
from eqsat.ir.uop import UOp
from extraction.cost import CpuCost, ReferenceCost

__all__ = ["CACHE_SIZE", "MAX_KEY_CHARS", "ResultCache", "RESULTS", "clear_result_cache",
           "set_result_cache_size", "cache_key"]

#: entries of the process's result cache at most (each an output graph and its stats)
CACHE_SIZE = 4096

#: inputs whose text is longer are not cached: with the entry bound, the keys take at
#: most CACHE_SIZE * MAX_KEY_CHARS characters (64 MiB), and a big kernel repeats rarely
MAX_KEY_CHARS = 16384

#: the cost models whose instances compare equal exactly when they price alike
_CACHEABLE_MODELS = (ReferenceCost, CpuCost)


def cache_key(graph: UOp, limits: Any, rulesets: Any, model: Any) -> tuple | None:
    """The key of a call (see the module docstring), or None when it is not cached: a
    cost model of another type, a selection holding rules as objects, a graph the text
    format cannot write, or one whose text is longer than :data:`MAX_KEY_CHARS`."""
    if type(model) not in _CACHEABLE_MODELS:
        return None
    try:
        text = to_sexpr(graph, compact=True)
    except (ValueError, TypeError, RecursionError):
        return None
    if len(text) > MAX_KEY_CHARS:
        return None
    if rulesets is not None and not isinstance(rulesets, str) and \
            not all(isinstance(r, str) for r in rulesets):
        return None  # rules given as objects: a rule's identity is not its meaning
    rs = rulesets if rulesets is None or isinstance(rulesets, str) else tuple(rulesets)
    return (text, limits, rs, model)


class ResultCache:
    """A bounded least-recently-used map ``key -> (output graph, stats)``."""

    def __init__(self, size: int = CACHE_SIZE):
        if size < 0:
            raise ValueError(f"ResultCache: size must be >= 0, got {size}")
        self.size = size
        self._data: OrderedDict[tuple, tuple[UOp, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return (f"<ResultCache {len(self._data)}/{self.size} entries, {self.hits} hits, "
                f"{self.misses} misses>")

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: tuple | None) -> tuple[UOp, dict[str, Any]] | None:
        """The kept ``(output, stats copy)`` of ``key``, or None."""
        if key is None or not self.size:
            return None
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
        return hit[0], copy.deepcopy(hit[1])

    def put(self, key: tuple | None, out: UOp, stats: dict[str, Any]) -> None:
        """Keep a run's result, when its key is cacheable and no clock limited it."""
        if key is None or not self.size or stats.get("time_limited", True) or \
                "egraph" in stats:
            return
        kept = copy.deepcopy(stats)
        with self._lock:
            self._data[key] = (out, kept)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def resize(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"ResultCache: size must be >= 0, got {size}")
        with self._lock:
            self.size = size
            while len(self._data) > size:
                self._data.popitem(last=False)


#: the process's result cache (``optimize_egraph`` reads and fills it)
RESULTS = ResultCache()


def clear_result_cache() -> None:
    """Empty the process's result cache (:data:`RESULTS`)."""
    RESULTS.clear()


def set_result_cache_size(size: int) -> None:
    """Bound the process's result cache to ``size`` entries (0: no caching)."""
    RESULTS.resize(size)
