"""A large kernel in parts: each e-graph holds at most about :data:`PART_NODES` input
nodes.

A kernel is a ``SINK`` of effects (stores, loops) that share only leaves and a few
small terms. One e-graph over all of them costs more per node the larger it grows: its
tables, and the classes of the loop indexes and constants that every store names, grow
with the kernel, and so does the work of each step on them (docs/perf.md, the row "A
kernel past 3,000 nodes runs in parts"). Past :data:`PART_NODES` unique nodes the
sink's sources are split, in order, into parts of about equal size; each part is a sink
of its own, optimized by a run of its own (its own e-node budget, iterations and stop;
the clock is the call's, each part's limit its share of the time left), and the
outputs are joined into one sink again. Time and memory then grow with the number of
parts, not faster. :func:`join_parts` keeps the whole no costlier than its input, the
parts' starts joined and the parts' baseline rewrites joined (the whole kernel's): each
part is no costlier than its own start, but a term two parts share counts once in the
whole, and a part whose rewrite was no cheaper for it alone started from its input.

The split reads only the graph: the same kernel gives the same parts on every machine.
"""

from __future__ import annotations

import math
from typing import Any

from eqsat.engines.egraph.schedules import StopReason
from eqsat.engines.egraph.seeding import may_output
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["PART_NODES", "SHARED_MAX", "kernel_parts", "join_parts"]

#: the most unique input nodes one e-graph takes: a kernel past it runs in parts
#: (docs/perf.md: parts of 2,000 to 6,000 nodes took about the same time a node; at
#: 6,000 a 5,000-node kernel ran whole and a 10,000-node one took 2.3x its time)
PART_NODES = 3000

#: the most nodes the parts may hold together, as a multiple of the kernel's: a node
#: two parts need is in both (the loop indexes, constants and buffers every store names:
#: 1.02x to 1.09x on the kernels of ``benchmarks/scale.py``)
SHARED_MAX = 1.5

# the stop reasons from the one that says most to the one that says least: the whole's
# is the first any part gave (a hard limit first: the output may differ from run to run)
_STOP_ORDER = (StopReason.TIME, StopReason.MEMORY, StopReason.ENODES,
               StopReason.ITERATIONS, StopReason.STALLED, StopReason.SATURATED,
               StopReason.OPTIMAL)


def kernel_parts(roots: list[UOp]) -> list[UOp] | None:
    """The parts of ``roots`` when it is one ``SINK`` of more than :data:`PART_NODES`
    unique nodes and at least two sources: sinks of its sources in order, about equal in
    unique nodes (a source larger than a part is a part alone); None otherwise (one
    e-graph holds the roots), and None when the parts would hold more than
    :data:`SHARED_MAX` times the kernel's nodes (its sources share so much that each
    part would optimize the shared terms again)."""
    if len(roots) != 1 or roots[0].op is not Ops.SINK or len(roots[0].src) < 2:
        return None
    sink = roots[0]
    total = len(sink.toposort()) - 1
    if total <= PART_NODES:
        return None
    target = total / math.ceil(total / PART_NODES)
    groups: list[list[UOp]] = []
    sizes: list[int] = []
    cur: list[UOp] = []
    seen: set[UOp] = set()
    for s in sink.src:
        if cur and len(seen) >= target:
            groups.append(cur)
            sizes.append(len(seen))
            cur, seen = [], set()
        cur.append(s)
        seen.update(s.toposort())
    if groups and len(seen) < target / 2:
        groups[-1] += cur  # (a short last part joins the one before)
        sizes[-1] += len(seen)
    else:
        groups.append(cur)
        sizes.append(len(seen))
    if len(groups) < 2 or sum(sizes) > SHARED_MAX * total:
        return None
    return [UOp(Ops.SINK, sink.dtype, tuple(g), sink.arg) for g in groups]


def _sources(u: UOp) -> tuple[UOp, ...]:
    """A part's output as sources of the whole sink (a part's sink stays a sink; any
    other term is one source)."""
    return u.src if u.op is Ops.SINK else (u,)


def join_parts(root: UOp, outs: list[UOp], starts: list[UOp], rewrites: list[UOp],
               stats: list[dict[str, Any]], model: Any) -> tuple[UOp, dict[str, Any]]:
    """The whole kernel from its parts' outputs (``outs``), their baseline rewrites or
    inputs (``starts``: each part's cheaper start) and their baseline rewrites whatever
    they cost (``rewrites``), with the stats of the whole: the cheapest of the joined
    outputs, the joined starts, the joined rewrites (the whole kernel's baseline
    rewrite, when it may be an output: ``seeding.may_output``) and ``root`` itself (a
    term shared by two parts counts once in the whole); ``stats["parts"]`` lists each
    part's."""
    cost = model.graph_cost
    out = root.replace(src=tuple(s for o in outs for s in _sources(o)))
    c_in, c_out = cost(root), cost(out)
    c_base = math.inf
    for cand in (starts, rewrites):
        joined = root.replace(src=tuple(s for o in cand for s in _sources(o)))
        if cand is starts or may_output(joined, root):
            c = cost(joined)
            c_base = min(c_base, c)
            if c < c_out:
                out, c_out = joined, c
    if c_in < c_out:
        out, c_out = root, c_in
    merged = _merged(stats)
    start = min(c_in, c_base)
    merged["costs"] = [(c_in, c_out)]
    merged["seed"] = {"input": c_in, "baseline": c_base, "start": start, "final": c_out,
                      "rescoped": sum(s["seed"].get("rescoped", 0) for s in stats),
                      "gain": start - c_out}
    return out, merged


def _merged(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's stats from the parts' (:func:`~.phases.stats`' keys): sizes and
    iterations the largest part's, counts and times summed, the stop reason the first of
    :data:`_STOP_ORDER` any part gave, ``parts`` each part's summary."""
    first = stats[0]
    times: dict[str, float] = {}
    matches: dict[str, int] = {}
    held: dict[str, int] = {}
    for s in stats:
        for k, v in s.get("time", {}).items():
            times[k] = times.get(k, 0.0) + v
        for k, v in s.get("matches", {}).items():
            matches[k] = matches.get(k, 0) + v
        for k, v in s.get("held_back", {}).items():
            held[k] = held.get(k, 0) + v
    given = {s["stop_reason"] for s in stats}
    stop = next(r.value for r in _STOP_ORDER if r.value in given)
    out = {
        "engine": first["engine"], "rulesets": first["rulesets"],
        "enodes_budget": max(s["enodes_budget"] or 0 for s in stats),
        "iterations": max(s["iterations"] for s in stats),
        "enodes": max(s["enodes"] for s in stats),
        "classes": max(s["classes"] for s in stats),
        "stop_reason": stop, "time": times,
        "per_iteration": [p for s in stats for p in s["per_iteration"]],
        "emitted": [e for s in stats for e in s["emitted"]],
        "analysis_capped": sum(s["analysis_capped"] for s in stats),
        "matches": dict(sorted(matches.items())),
        "extraction": {"cost": sum(s["extraction"].get("cost", 0.0) for s in stats),
                       "method": "parts"},
        "held_back": dict(sorted(held.items())),
        "enodes_peak": max(s["enodes_peak"] for s in stats),
        "rss_growth": max(s["rss_growth"] for s in stats),
        "time_limited": any(s["time_limited"] for s in stats),
        "parts": [{"nodes": s["part_nodes"], "iterations": s["iterations"],
                   "enodes": s["enodes"], "stop_reason": s["stop_reason"],
                   "cost": s["seed"]["final"]} for s in stats],
    }
    if any(s.get("widened") for s in stats):
        out["widened"] = True
    return out
