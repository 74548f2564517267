"""The baseline's result in every e-graph run, and the guarantee it gives.

:class:`Seeds` is each root's baseline rewrite (the ordered matcher over the same rule
selection), node by node. A run unions it into the e-graph with the roots, before its
first step (``Session.execute``): the e-graph starts from the baseline's result as well
as the input, and every class holds both forms. :func:`no_worse_than_start` then keeps,
root by root, the cheapest of the extracted term, the baseline's and the input, leaving
out a candidate that uses a loop index outside its loop (docs/architecture.md, "The
e-graph engine", items 5 and the extraction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eqsat.engines.egraph.extracting import _NO_TEXT_IDS
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import RewriteLimitError, RewriteStoppedError, graph_rewrite
from eqsat.ir.uop import UOp, live_ranges, toposort_all
from rules import RulesetError, matcher

__all__ = ["Seeds", "baseline_seeds", "no_worse_than_start", "start_at_floor",
           "usable_start", "may_output"]


@dataclass
class Seeds:
    """The baseline's rewrite of a run's roots (``inputs``): ``roots`` (each root's
    rewrite, the root itself where it brings nothing), ``costs`` (each of ``roots``'
    cost under the run's model), ``pairs`` (every node of the roots' graphs the
    baseline rewrote, with its rewrite: each pair is unioned), ``order`` (the
    rewrites' nodes, children first) and ``rewrites`` (each root's rewrite whatever it
    costs, the root where the baseline stops on a rule cycle: a kernel in parts joins
    them into the whole kernel's, :func:`~.parts.join_parts`); ``stopped``: the hard
    limit (``"time"``, ``"memory"``) that cut the baseline's rewrite short, leaving
    that root and the ones after it unrewritten (None: every root was rewritten);
    ``input_orders``: each input's toposort (empty when not taken), read again by the
    run's insertion and :func:`no_worse_than_start` rather than walked again;
    ``input_costs``: each input's cost under the model (empty when not taken), which
    the extraction's pricing reads rather than price an input again."""

    inputs: list[UOp]
    roots: list[UOp]
    costs: list[float]
    pairs: list[tuple[UOp, UOp]] = field(default_factory=list)
    order: list[UOp] = field(default_factory=list)
    rewrites: list[UOp] = field(default_factory=list)
    stopped: str | None = None
    input_orders: list[list[UOp]] = field(default_factory=list)
    input_costs: list[float] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Seeds(<{len(self.roots)} roots>, <{len(self.pairs)} pairs>)"


def _order(pairs: list[tuple[UOp, UOp]]) -> list[UOp]:
    """The nodes of the rewrites in ``pairs``, children first."""
    return toposort_all(dict.fromkeys(v for _, v in pairs)) if pairs else []


def baseline_seeds(roots: list[UOp], selection: Any, model: Any,
                   stop: Callable[[], str | None] | None = None) -> Seeds:
    """The baseline's rewrite of ``roots`` under ``selection``, node by node (see
    :class:`Seeds`). No seed where the baseline stops on a rule cycle, where its
    rewrite is not cheaper under ``model`` than the root, nor where the selection names
    no baseline rule set (an e-graph-only selection has no baseline). ``stop``: the
    run's hard limits, checked as the rewrite goes (``graph_rewrite``): once one trips,
    no root is rewritten further (``Seeds.stopped``)."""
    cost = model.graph_cost
    try:
        pm = matcher(selection)
    except RulesetError:
        costs = [cost(r) for r in roots]
        return Seeds(list(roots), list(roots), costs, rewrites=list(roots),
                     input_costs=list(costs))
    out: list[UOp] = []
    costs: list[float] = []
    input_costs: list[float] = []
    rewrites: list[UOp] = []
    pairs: dict[int, tuple[UOp, UOp]] = {}
    stopped: str | None = None
    orders = [r.toposort() for r in roots]
    for r, nodes in zip(roots, orders, strict=True):
        replace: dict[UOp, UOp] = {}
        try:
            b = r if stopped else graph_rewrite(r, pm, replace=replace, stop=stop)
        except RewriteLimitError:
            b = r
        except RewriteStoppedError as e:
            b, stopped = r, e.reason
        rewrites.append(b)
        c_r = cost(r)
        input_costs.append(c_r)
        c_b = c_r if b is r else cost(b)
        if c_b >= c_r:
            out.append(r)  # (no cheaper start: its rewrites would only crowd the e-graph)
            costs.append(c_r)
            continue
        out.append(b)
        costs.append(c_b)
        for u in nodes:
            v = replace.get(u)
            if v is not None and v is not u:
                pairs.setdefault(id(u), (u, v))
    every = list(pairs.values())
    return Seeds(list(roots), out, costs, every, _order(every), rewrites, stopped, orders,
                 input_costs)


def no_worse_than_start(outs: list[UOp], seeds: Seeds, model: Any,
                        costs: list[tuple[float, float]] | None
                        ) -> tuple[list[tuple[float, float]], dict[str, float]]:
    """Replace, in place in ``outs`` (one term per root of ``seeds.inputs``), every
    extracted term costlier than its root's baseline seed by that seed (when the seed
    prints: every op has a text form); each root's ``(input cost, output cost)``
    (``costs``: the extraction's, None to price them here) and the summed figures of
    the start:
    ``input``, ``baseline`` (the seeds' costs), ``start`` (the cheaper of the two, root
    by root), ``final``, ``gain`` (what the e-graph found beyond its start) and
    ``rescoped`` (a kernel's stores sent back to their start, :func:`_scoped_sources`)."""
    cost, roots = model.graph_cost, seeds.inputs
    if costs is None:
        # (an input's cost as the seeding priced it; an output that is its input, as
        # every output of a start at the floor is, costs the same)
        taken = seeds.input_costs if len(seeds.input_costs) == len(roots) else None
        costs = []
        for i, (r, o) in enumerate(zip(roots, outs, strict=True)):
            c_r = taken[i] if taken is not None else cost(r)
            costs.append((c_r, c_r if o is r else cost(o)))
    fig = {"input": 0.0, "baseline": 0.0, "start": 0.0, "final": 0.0, "rescoped": 0}
    seen: set[int] = set()
    orders = seeds.input_orders
    for i, (r, s, c_seed) in enumerate(zip(roots, seeds.roots, seeds.costs, strict=True)):
        c_in, c_out = costs[i]
        nodes = orders[i] if orders else r.toposort()
        open_at_root = _open_ranges(r, nodes)
        seed_ok = _seed_ok(s, r, open_at_root, nodes)
        # (a seed that may be an output is in scope: its open ranges were just checked)
        if not (outs[i] is s and seed_ok) and not _in_scope(outs[i], r, open_at_root):
            o, sent_back = _scoped_sources(outs[i], r, s if seed_ok else r)
            if o is not None:
                outs[i], c_out = o, cost(o)
                fig["rescoped"] += sent_back
            else:
                outs[i], c_out = (s, c_seed) if seed_ok else (r, c_in)
            costs[i] = (c_in, c_out)
        if c_seed < c_out and seed_ok:
            outs[i], c_out = s, c_seed
            costs[i] = (c_in, c_out)
        if id(r) in seen:
            continue  # (a root given twice counts once)
        seen.add(id(r))
        fig["input"] += c_in
        fig["baseline"] += c_seed
        fig["start"] += min(c_in, c_seed)
        fig["final"] += min(c_in, c_out)
    fig["gain"] = fig["start"] - fig["final"]
    return costs, fig


def start_at_floor(seeds: Seeds, model: Any
                   ) -> tuple[list[UOp], list[tuple[float, float]], dict[str, float]] | None:
    """The run's start when it costs nothing: each root's input or baseline rewrite as
    :func:`no_worse_than_start` chooses between them, with its figures, when every chosen
    term costs 0 under ``model``; else None. A cost model's node costs are >= 0
    (``extraction.CostModel``), so no term of the e-graph could cost less: the run has
    nothing to search for and the outputs are these terms."""
    if any(seeds.costs):
        return None  # (a seed is never costlier than its root: a root costs > 0 too)
    outs = list(seeds.inputs)
    costs, fig = no_worse_than_start(outs, seeds, model, None)
    if any(c_out for _, c_out in costs):
        return None  # (a seed that does not print, or uses a loop index out of its loop)
    return outs, costs, fig


def usable_start(seeds: Seeds, i: int) -> UOp:
    """Root ``i``'s start as :func:`no_worse_than_start` may take it: the baseline's
    rewrite when it is cheaper, prints and uses no loop index outside its loop; else
    the root."""
    r, s = seeds.inputs[i], seeds.roots[i]
    return s if s is not r and _seed_ok(s, r, _open_ranges(r)) else r


def may_output(s: UOp, root: UOp) -> bool:
    """Whether ``s``, a rewrite of ``root``, may be the output: it prints and uses no
    loop index outside its loop."""
    return _seed_ok(s, root, _open_ranges(root))


def _seed_ok(s: UOp, root: UOp, open_at_root: frozenset[UOp],
             root_nodes: list[UOp] | None = None) -> bool:
    """Whether the seed ``s`` of ``root`` may be an output: it prints and uses no loop
    index outside its loop (``open_at_root``: the ranges ``root`` leaves open;
    ``root_nodes``: ``root``'s toposort, when the caller has it)."""
    if s is root:
        return _printable(s, root_nodes)
    nodes = s.toposort()
    return _printable(s, nodes) and _open_ranges(s, nodes) <= open_at_root


def _scoped_sources(out: UOp, root: UOp, start: UOp) -> tuple[UOp | None, int]:
    """``out`` (a term of the kernel ``root`` that uses a loop index outside its loop)
    with each source that does so replaced by ``start``'s (the seed's or the input's),
    and how many were, when the three are sinks of as many sources (each source, an
    effect of its own, is equivalent to the root's); ``(None, 0)`` otherwise. The DAG
    extraction shares a class's term between the stores: a term equal to another only
    over a loop's range (``(3*y + r) // 6`` is ``y // 2`` for ``r`` in [0, 2]) may then
    reach a store outside that loop, and only that store goes back to its start."""
    n = len(root.src)
    if not (out.op is root.op is start.op is Ops.SINK and len(out.src) == len(start.src) == n):
        return None, 0
    live_in, live_out = live_ranges(root), live_ranges(out)
    srcs = [o if live_out[o] <= live_in[r] else s
            for o, r, s in zip(out.src, root.src, start.src, strict=True)]
    new = out.replace(src=tuple(srcs))
    if not _in_scope(new, root, live_in[root]):
        return None, 0
    return new, sum(1 for a, b in zip(srcs, out.src, strict=True) if a is not b)


def _in_scope(u: UOp, root: UOp, open_at_root: frozenset[UOp]) -> bool:
    """Whether ``u`` leaves open no range that ``root`` closes (``open_at_root``: the
    ranges ``root`` leaves open): every loop index it uses is inside its loop."""
    return u is root or _open_ranges(u) <= open_at_root


def _open_ranges(u: UOp, nodes: list[UOp] | None = None) -> frozenset[UOp]:
    """The ranges ``u`` leaves open (``live_ranges(u)[u]``; ``nodes``: ``u``'s
    toposort, when the caller has it). A graph that closes no loop (no END, no REDUCE:
    every index expression) leaves open every range it holds: one pass over its nodes
    then, rather than a set per node."""
    if nodes is None:
        nodes = u.toposort()
    ranges = []
    for x in nodes:
        op = x.op
        if op is _RANGE:
            ranges.append(x)
        elif op is _END or op is _REDUCE:
            return live_ranges(u)[u]
    return frozenset(ranges)


#: the ops :func:`_open_ranges` looks for, as module globals (an ``Ops.X`` read runs
#: the enum's Python code)
_RANGE, _END, _REDUCE = Ops.RANGE, Ops.END, Ops.REDUCE


def _printable(u: UOp, nodes: list[UOp] | None = None) -> bool:
    """Whether every op of ``u`` has a text form (a result must print; the extraction
    takes an op without one only where its class has nothing else; ``nodes``: ``u``'s
    toposort, when the caller has it). (The ops by id: an ``Ops`` member hashes in
    Python code.)"""
    return _NO_TEXT_IDS.isdisjoint([id(x.op) for x in (u.toposort() if nodes is None
                                                       else nodes)])
