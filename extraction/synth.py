"""Random e-graphs for tests and benchmarks of the extractors.

:func:`random_view` builds an :class:`EGraphView` of integer-index e-nodes
(var/const leaves, add/sub/mul/max/idiv/mod) with sharing (children drawn from
every earlier class) and, optionally, cycles (children drawn from later
classes, including the node's own). Deterministic for a given ``seed``.
"""

from __future__ import annotations

import random

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from extraction.egraph_view import EGraphView, ENode

__all__ = ["random_view"]

_BINARY = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.IDIV, Ops.MOD)


def random_view(seed: int, n_classes: int = 20, max_nodes_per_class: int = 3,
                n_leaves: int = 4, cycle_prob: float = 0.1, n_roots: int = 1,
                locality: int | None = None) -> EGraphView:
    """A random e-graph of ``n_classes`` classes ``"c<i>"`` with 1..``max_nodes_per_class``
    e-nodes each; the first ``n_leaves`` classes are leaves (a var and maybe a const).

    Every non-leaf class gets one e-node whose children are earlier classes (so
    every class is extractable); further e-nodes may point at any class with
    probability ``cycle_prob`` per child (cycles), else at earlier ones.
    ``locality`` limits children to the ``locality`` classes before (None: all).
    ``view.roots`` are the last ``n_roots`` classes.
    """
    if n_classes < 1 or n_leaves < 1 or max_nodes_per_class < 1 or n_roots < 1:
        raise ValueError("random_view needs n_classes, n_leaves, max_nodes_per_class, "
                         "n_roots >= 1")
    rng = random.Random(seed)
    nodes: list[ENode] = []
    idx = dtypes.index
    n_leaves = min(n_leaves, n_classes)

    def pick_earlier(i: int) -> str:
        lo = 0 if locality is None else max(0, i - locality)
        return f"c{rng.randrange(lo, i)}"

    for i in range(n_classes):
        c = f"c{i}"
        if i < n_leaves:
            nodes.append(ENode(f"n{i}_0", c, Ops.DEFINE_VAR, idx, (f"v{i}", -8, 50), ()))
            if rng.random() < 0.3:
                nodes.append(ENode(f"n{i}_1", c, Ops.CONST, idx, rng.choice([2, 3, 4, 7, 8]),
                                   ()))
            continue
        for j in range(rng.randint(1, max_nodes_per_class)):
            op = rng.choice(_BINARY)
            kids = []
            for _ in range(2):
                if j > 0 and rng.random() < cycle_prob:
                    kids.append(f"c{rng.randrange(0, n_classes)}")
                else:
                    kids.append(pick_earlier(i))
            nodes.append(ENode(f"n{i}_{j}", c, op, idx, None, tuple(kids)))
    roots = [f"c{i}" for i in range(max(0, n_classes - n_roots), n_classes)]
    return EGraphView(nodes, roots=roots)
