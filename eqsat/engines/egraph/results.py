"""The e-graph's result cache: kernels repeat index expressions, and one e-graph call
costs milliseconds where a lookup costs microseconds.

A result is kept under the input graph itself (UOps are interned: a node is built
once per (op, dtype, sources, arg), so two graphs are the same object exactly when they
are the same graph, and the entry holding the graph keeps a re-parsed copy the same
object; a dict lookup by identity costs what hashing a pointer does, where printing
the graph cost about 0.2 ms a call), the run's limits (``Limits``, the whole budget),
the rule set selection and the cost model. It is kept only when nothing but those
decided it:

- the cost model is one of the shipped ones (:class:`extraction.ReferenceCost`,
  :class:`extraction.CpuCost`: frozen dataclasses, equal exactly when they price
  alike); a model of another type is never cached (its prices may hold state);
- the run was not cut by a clock: it did not stop for ``time`` or ``memory``, no
  computed pass ran past its deadline and the extraction skipped no DAG search for
  time (``stats["time_limited"]`` is False). Such a run gives the same result every
  time; a run the clock cut short may give a better one next time, so it is not kept.

A hit returns the kept output graph (UOps are immutable) and a copy of the kept stats
with ``stats["time"]["cached"]`` the lookup's time. The cache is a least recently used
map of at most :data:`CACHE_SIZE` entries (one per distinct call; inputs of more than
:data:`MAX_KEY_NODES` nodes are not kept) holding at most :data:`MAX_CACHED_NODES`
input nodes in all (shared subgraphs counted per entry), shared by the
process's threads behind a lock; :func:`clear_result_cache` empties it and
:func:`set_result_cache_size` bounds it (0 turns it off).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

from eqsat.ir.uop import UOp
from extraction.cost import CpuCost, ReferenceCost

__all__ = ["CACHE_SIZE", "MAX_KEY_NODES", "ResultCache", "RESULTS", "clear_result_cache",
           "set_result_cache_size", "cache_key"]

#: entries of the process's result cache at most (each an output graph and its stats)
CACHE_SIZE = 4096

#: inputs of more nodes are not cached (a big kernel repeats rarely)
MAX_KEY_NODES = 512

#: the kept inputs' nodes in all, at most (a node, interned, takes about 350 bytes:
#: about 45 MB); the least recently used entries go first
MAX_CACHED_NODES = 131072

#: the cost models whose instances compare equal exactly when they price alike
_CACHEABLE_MODELS = (ReferenceCost, CpuCost)


def cache_key(graph: UOp, limits: Any, rulesets: Any, model: Any) -> tuple | None:
    """The key of a call (see the module docstring), or None when it is not cached: a
    cost model of another type, a selection holding rules as objects, or a graph of
    more than :data:`MAX_KEY_NODES` nodes. Its last field is the graph's node count
    (:meth:`ResultCache.put` counts the entry's nodes by it)."""
    if type(model) not in _CACHEABLE_MODELS or not isinstance(graph, UOp):
        return None
    nodes = len(_first_nodes(graph, MAX_KEY_NODES + 1))
    if nodes > MAX_KEY_NODES:
        return None
    if rulesets is not None and not isinstance(rulesets, str) and \
            not all(isinstance(r, str) for r in rulesets):
        return None  # rules given as objects: a rule's identity is not its meaning
    rs = rulesets if rulesets is None or isinstance(rulesets, str) else tuple(rulesets)
    return (graph, limits, rs, model, nodes)  # (the node count: a function of the graph)


def _first_nodes(graph: UOp, n: int) -> set[UOp]:
    """At least ``n`` distinct nodes of ``graph`` (all of them when it has fewer): a
    graph's size, without walking more of a big graph than the bound. Each node is
    entered once, when first met (nodes hash by identity, in C)."""
    seen = {graph}
    stack = [graph]
    add, push, pop = seen.add, stack.append, stack.pop
    while stack:
        for s in pop().src:
            if s not in seen:
                add(s)
                push(s)
        if len(seen) >= n:
            break
    return seen


#: the types a stats copy shares rather than copies (immutable)
_SHARED = frozenset((int, float, str, bool, type(None), bytes, frozenset))


def copy_stats(x: Any) -> Any:
    """A copy of a stats value: dicts, lists, tuples and sets copied through, immutable
    scalars shared, anything else by ``copy.deepcopy`` (what a deep copy gives, at a
    third of its cost on a run's stats). A container's scalars are shared where they
    are met, without a call each (most of a run's stats: rule set names, costs); a
    container of scalars only is copied in C (a tuple of them shared: it is immutable)."""
    t = type(x)
    if t in _SHARED:
        return x
    shared = _SHARED
    if t is dict:
        if shared.issuperset(map(type, x.values())):
            return x.copy()
        return {k: v if type(v) in shared else copy_stats(v) for k, v in x.items()}
    if t is list:
        if shared.issuperset(map(type, x)):
            return x.copy()
        return [v if type(v) in shared else copy_stats(v) for v in x]
    if t is tuple:
        if shared.issuperset(map(type, x)):
            return x
        return tuple([v if type(v) in shared else copy_stats(v) for v in x])
    if t is set:
        return {copy_stats(v) for v in x}
    return copy.deepcopy(x)


class ResultCache:
    """A bounded least-recently-used map ``key -> (output graph, stats)`` (each entry
    also counts its input's nodes, for :data:`MAX_CACHED_NODES`)."""

    def __init__(self, size: int = CACHE_SIZE):
        if size < 0:
            raise ValueError(f"ResultCache: size must be >= 0, got {size}")
        self.size = size
        self._data: OrderedDict[tuple, tuple[UOp, dict[str, Any], int]] = OrderedDict()
        self._nodes = 0  # the kept inputs' nodes (see MAX_CACHED_NODES)
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
        return hit[0], copy_stats(hit[1])

    def put(self, key: tuple | None, out: UOp, stats: dict[str, Any]) -> None:
        """Keep a run's result, when its key is cacheable and no clock limited it; not
        its ``time`` (kept as None, in its place: a hit's caller sets its own)."""
        if key is None or not self.size or stats.get("time_limited", True):
            return
        kept = copy_stats({**stats, "time": None} if "time" in stats else stats)
        nodes = key[-1] if type(key[-1]) is int else 0
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._nodes -= old[2]
            self._data[key] = (out, kept, nodes)
            self._nodes += nodes
            self._trim(self.size)

    def _trim(self, size: int) -> None:
        """Drop the least recently used entries down to ``size`` entries and
        :data:`MAX_CACHED_NODES` nodes (the lock held)."""
        data = self._data
        while data and (len(data) > size or self._nodes > MAX_CACHED_NODES):
            self._nodes -= data.popitem(last=False)[1][2]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._nodes = 0
            self.hits = self.misses = 0

    def resize(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"ResultCache: size must be >= 0, got {size}")
        with self._lock:
            self.size = size
            self._trim(size)


#: the process's result cache (``optimize_egraph`` reads and fills it)
RESULTS = ResultCache()


def clear_result_cache() -> None:
    """Empty the process's result cache (:data:`RESULTS`)."""
    RESULTS.clear()


def set_result_cache_size(size: int) -> None:
    """Bound the process's result cache to ``size`` entries (0: no caching)."""
    RESULTS.resize(size)
