"""Extraction of a run's roots from its last snapshot (the engine's last phase).

Every root is extracted on its own (a batch gives each graph its own best): tree
extraction of all roots in one pass first (fast), then the DAG-aware extractor of
:mod:`extraction` where a DAG choice may share more and the time budget allows it;
the cheaper selection (DAG cost) wins.
"""

from __future__ import annotations

import time
from typing import Any

from eqsat.egraph.encoding import ArgTable, Snapshot, decode_node
from eqsat.egraph.schedules import Clock, gc_paused
from eqsat.ops import Ops
from eqsat.uop import UOp

__all__ = ["extract_roots"]


def extract_roots(snap: Snapshot, args: ArgTable, handles: list[int], model: Any,
                  clock: Clock) -> tuple[list[UOp], dict[str, Any]]:
    """The best term of every root handle under ``model`` (see the module docstring),
    and stats (``cost``: the summed cost of the distinct roots, ``method``).

    The cyclic garbage collector is paused meanwhile: the extraction allocates many
    short-lived lists and tuples (no cycles; reference counting frees them), and the
    collections they would trigger walk the engine's large heap for nothing."""
    with gc_paused():
        return _extract_roots(snap, args, handles, model, clock)


def _extract_roots(snap: Snapshot, args: ArgTable, handles: list[int], model: Any,
                   clock: Clock) -> tuple[list[UOp], dict[str, Any]]:
    from extraction import (
        EGraphView,
        ENode,
        build_terms,
        extract_dag,
        extract_tree_each,
        uop_builder,
    )

    roots = [snap.cls_of_handle(h) for h in handles]
    uniq = list(dict.fromkeys(roots))
    # only the classes the roots reach (through any e-node, list cells included) matter
    nodes, classes = snap.nodes, snap.classes
    seen, stack = set(uniq), list(uniq)
    reach: list[int] = []
    while stack:
        for i in classes.get(stack.pop(), ()):
            reach.append(i)
            for k in nodes[i].kids:
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
    decoded: dict[int, tuple] = {}
    for i in sorted(reach):
        dec = decode_node(nodes[i], args, snap)
        if dec is not None:
            decoded[i] = dec
    use = _usable(snap, decoded)
    enodes = [ENode(i, nodes[i].cls, *decoded[i]) for i in sorted(use)]
    # tree extraction of every root on its own, in one pass over the whole e-graph
    full = EGraphView(enodes, class_min=snap.lo)
    best: dict[int, Any] = dict(zip(uniq, extract_tree_each(full, uniq, model),
                                    strict=True))
    views: dict[int, EGraphView] = {}

    def view_of(r: int) -> EGraphView:
        """The classes root ``r`` reaches (the DAG search of one root)."""
        if len(uniq) == 1:
            return full
        v = views.get(r)
        if v is None:
            v = views[r] = full.subview([r])
        return v

    method = "tree"
    t0 = time.perf_counter()
    size = 0
    for r in uniq:
        # the tree choice shares nothing: a DAG choice may still share, e.g. write the
        # value with the x%c the guard pays for anyway; a light search where two or
        # more divisions are at stake, none otherwise
        light = best[r].cost >= best[r].tree_cost
        if light and sum(en.op in (Ops.IDIV, Ops.MOD)
                         for en in best[r].selection.values()) < 2:
            continue
        view = view_of(r)
        n = len(view)
        per = (time.perf_counter() - t0) / size * n if size else clock.dag_estimate(n)
        if clock.elapsed() + per > clock.seconds:
            break
        ext = (extract_dag(view, [r], model, max_passes=1, max_rounds=1, max_moves=0,
                           work_budget=20_000) if light else extract_dag(view, [r], model))
        size += n
        method = "dag"
        if ext.cost <= best[r].cost:
            best[r] = ext
    if method == "dag" and size:
        clock.learn_dag((time.perf_counter() - t0), size)
    # the tree choices of all roots come from one selection: build their terms once
    tree_terms: dict[int, UOp] = {}
    outs = [build_terms(best[r].selection, [r], uop_builder, done=tree_terms)[0]
            if best[r].method == "tree" else best[r].to_uops()[0] for r in roots]
    return outs, {"cost": sum(best[r].cost for r in uniq), "method": method}


def _usable(snap: Snapshot, decoded: dict[int, tuple]) -> set[int]:
    """The e-nodes of ``decoded`` the extraction may use: the ones not subsumed, and
    every node of a class without a finite term made of those (a cancellation such
    as (x - y) + y -> x may subsume the only grounded node), to a fixed point.

    Grounding only grows with the nodes allowed, so the fixed point is reached
    incrementally: each round allows the nodes of the classes still ungrounded and
    carries the grounding on from where it stood."""
    nodes = snap.nodes
    cls = {i: nodes[i].cls for i in decoded}
    use: set[int] = set()
    ok: set[int] = set()
    waiting: dict[int, list[int]] = {}
    missing: dict[int, int] = {}
    batch = []
    for i, dec in decoded.items():
        kids = dec[3]
        if len(kids) > 1:
            kids = set(kids)
        missing[i] = len(kids)
        for k in kids:
            w = waiting.get(k)
            if w is None:
                waiting[k] = [i]
            else:
                w.append(i)
        if not nodes[i].subsumed:
            batch.append(i)
    while batch:
        use.update(batch)
        stack = [i for i in batch if not missing[i]]
        while stack:
            c = cls[stack.pop()]
            if c in ok:
                continue
            ok.add(c)
            for p in waiting.get(c, ()):
                left = missing[p] - 1
                missing[p] = left
                if not left and p in use:
                    stack.append(p)
        batch = [i for i, c in cls.items() if c not in ok and i not in use]
    return use
