"""A baseline rule applied to e-nodes: :func:`bridge` turns baseline
:class:`~eqsat.ir.pattern.Rule` objects into computed rewrites that
:func:`bridge_pass` applies over the classes' cheapest terms.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from eqsat.engines.egraph.analyses import INT_DTYPES
from eqsat.engines.egraph.computed.terms import Term
from eqsat.engines.egraph.encoding import Inserter, Snapshot
from eqsat.ir.uop import UOp
from rules.computed import PyRule


def bridge_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], dirty: set[int],
                rules: list[PyRule], union: Callable[[int, Term, str], Any],
                deadline: float | None, cache: dict | None = None) -> None:
    """Apply bridged baseline rules (see :func:`bridge`) to the dirty classes' e-nodes.
    ``cache``: a dict kept across the passes of a run (the rules' index by op)."""
    from eqsat.engines.egraph.encoding import decode_node

    key = tuple(map(id, rules))  # the rules live as long as the run: ids are stable
    hit = cache.get(key) if cache is not None else None
    if hit is None:
        by_op: dict[Any, list[PyRule]] = {}
        for r in rules:
            for op in (r.rule.pattern.ops or [None]):
                by_op.setdefault(op, []).append(r)
        any_op = by_op.pop(None, [])
        needs = {id(r): needed_child_ops(r.rule.pattern) for r in rules}
        hit = (by_op, any_op, needs, {})
        if cache is not None:
            cache[key] = hit
    by_op, any_op, needs, cands = hit  # cands: (ctor, field, dtype) -> the op's rules
    built: dict[int, Any] = {}

    def term(c: int) -> Any:
        if c in built:
            return built[c]
        built[c] = None  # cycle guard (best terms are acyclic)
        i = best.get(c)
        if i is None:
            return None
        n = snap.nodes[i]
        dec = decode_node(n, ins.args, snap)
        if dec is None:
            return None
        kids = [term(k) for k in dec[3]]
        if any(k is None for k in kids):
            return None
        try:
            built[c] = UOp(dec[0], dec[1], tuple(kids), dec[2])
        except Exception:
            built[c] = None
        return built[c]

    try:
        for c in sorted(dirty):
            if deadline is not None and time.perf_counter() > deadline:
                return
            for i in snap.classes.get(c, ()):
                n = snap.nodes[i]
                if n.subsumed:
                    continue
                ck = (n.ctor, n.fields[0] if n.fields else None, n.dtype)  # fixes op, dtype
                cand = cands.get(ck)
                if cand is None:  # the op's rules (integer nodes: no "uop_nonint" rule)
                    is_int = n.dtype in INT_DTYPES
                    cand = cands[ck] = [r for r in by_op.get(n.op, []) + any_op
                                        if not (is_int and r.kind == "uop_nonint")]
                if not cand:
                    continue
                # the ops of the children's best terms: a rule whose pattern needs a child
                # op none of them has cannot match (no UOp is built for it)
                dec = decode_node(n, ins.args, snap)
                if dec is None:
                    continue
                kid_ops: set[int] | None = set()
                for k in dec[3]:
                    bi = best.get(k)
                    kop = snap.nodes[bi].op if bi is not None else None
                    if kop is None:  # no UOp for this child (term() is None): no rule applies
                        kid_ops = None
                        break
                    kid_ops.add(kop._value_)
                if kid_ops is None:
                    continue
                cand = [r for r in cand if needs[id(r)] <= kid_ops]
                if not cand:
                    continue
                u = None
                for r in cand:
                    if u is None:
                        kids = [term(k) for k in dec[3]]
                        if any(k is None for k in kids):
                            break
                        try:
                            u = UOp(dec[0], dec[1], tuple(kids), dec[2])
                        except Exception:
                            break
                    try:
                        out = r.rule.apply(u)
                    except Exception:  # a rule that cannot handle this node: no rewrite
                        continue
                    if out is not None and out is not u:
                        union(c, ins.add_uop_with_facts(out), r.name)
    finally:
        term = None  # noqa: F811, F841  (breaks term's reference to itself: the pass's
        # data is freed now by reference counting, not by the next collection)


def needed_child_ops(p: Any) -> frozenset[int]:
    """Ops (by value) that some direct child must have for the pattern ``p`` to match
    (each source pattern restricted to one op names one; see eqsat.ir.pattern)."""
    src = getattr(p, "src", None)
    if src is None or (p.any_len and len(src) == 1):
        return frozenset()
    return frozenset(next(iter(c.ops))._value_ for c in src
                     if c.ops is not None and len(c.ops) == 1)
