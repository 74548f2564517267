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
from eqsat.egraph.schedules import Clock
from eqsat.ops import Ops
from eqsat.uop import UOp

__all__ = ["extract_roots"]


def extract_roots(snap: Snapshot, args: ArgTable, handles: list[int], model: Any,
                  clock: Clock) -> tuple[list[UOp], dict[str, Any]]:
    """The best term of every root handle under ``model`` (see the module docstring),
    and stats (``cost``: the summed cost of the distinct roots, ``method``)."""
    from extraction import EGraphView, ENode, extract_dag, extract_tree_each

    decoded: dict[int, tuple] = {}
    for i, n in enumerate(snap.nodes):
        dec = decode_node(n, args, snap)
        if dec is not None:
            decoded[i] = dec
    # subsumed e-nodes are out, unless a class has no finite term without them (a
    # cancellation such as (x - y) + y -> x may subsume the only grounded node)
    use = {i for i in decoded if not snap.nodes[i].subsumed}
    while True:
        ok = _grounded(snap, decoded, use)
        extra = {i for i in decoded if i not in use and snap.nodes[i].cls not in ok}
        if not extra:
            break
        use |= extra
    enodes = {i: ENode(i, snap.nodes[i].cls, *decoded[i]) for i in sorted(use)}
    roots = [snap.cls_of_handle(h) for h in handles]
    uniq = list(dict.fromkeys(roots))
    # tree extraction of every root on its own, in one pass over the whole e-graph
    full = EGraphView(list(enodes.values()), class_min=snap.lo)
    best: dict[int, Any] = dict(zip(uniq, extract_tree_each(full, uniq, model),
                                    strict=True))
    views: dict[int, EGraphView] = {}

    def view_of(r: int) -> EGraphView:
        """The classes root ``r`` reaches (the DAG search of one root)."""
        if len(uniq) == 1:
            return full
        v = views.get(r)
        if v is None:
            sub, seen, stack = [], {r}, [r]
            while stack:
                c = stack.pop()
                for i in snap.classes.get(c, ()):
                    en = enodes.get(i)
                    if en is None:
                        continue
                    sub.append(en)
                    for k in en.children:
                        if k not in seen:
                            seen.add(k)
                            stack.append(k)
            v = views[r] = EGraphView(sub, class_min={c: snap.lo[c] for c in seen
                                                      if c in snap.lo})
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
    outs = [best[r].to_uops()[0] for r in roots]
    return outs, {"cost": sum(best[r].cost for r in uniq), "method": method}


def _grounded(snap: Snapshot, decoded: dict[int, tuple], use: set[int]) -> set[int]:
    """The classes with a finite term made of the e-nodes in ``use``."""
    ok: set[int] = set()
    waiting: dict[int, list[int]] = {}
    missing: dict[int, int] = {}
    stack = []
    for i in use:
        kids = set(decoded[i][3])
        missing[i] = len(kids)
        for k in kids:
            waiting.setdefault(k, []).append(i)
        if not kids:
            stack.append(i)
    while stack:
        i = stack.pop()
        c = snap.nodes[i].cls
        if c in ok:
            continue
        ok.add(c)
        for p in waiting.get(c, ()):
            missing[p] -= 1
            if missing[p] == 0:
                stack.append(p)
    return ok
