"""Control flow, linearization and IF/ENDIF (docs/rules.md, seed 002 stages 20-22).

**Control flow** (:func:`add_control_flow`, stage 20) adds dependency edges
that the graph does not state but the loop structure needs. They are kept in a
side table (``edges[node] -> extra sources``), like the extra sources
tinygrad's ``pm_add_control_flow`` gives a RANGE:

- *nested*: an END written inside the body of another END runs inside that
  loop, so its RANGE opens after the outer RANGE (``END(X, r)`` runs X once
  for every r, even where X does not use r);
- ENDs whose loop uses the range of an enclosing END are nested in it
  (tinygrad's rule); ENDs of the same parent (an END or the kernel SINK) are
  *siblings*: they are put in a dependency order (ties in the order of the
  SINK's sources) and each sibling's RANGE waits for the previous sibling's
  END; the first child of an END waits for the parent's RANGE;
- ``AFTER(x, d, r)`` with a RANGE r and another dependency d (the
  accumulator of a lowered REDUCE: initialise, then loop) opens r after d;
- a SINK runs its sources in order: the loop of source k opens after source
  k-1 (memory order between sources is explicit in the graph: ``prepare``
  routes B's accesses to what A wrote through ``AFTER(buf, A)``). Independent
  loops are never interleaved: siblings are sequenced.

**Linearization** (:func:`linearize`, stage 21) is tinygrad's priority-aware
topological sort: every node gets the key ``(run_count, priority,
position)`` where ``run_count = prod(vmax(r)+1)`` over the ranges it runs
inside (so loop-invariant work lands outside loops) and ``priority`` is the
table of seed 002 (:data:`PRIORITY`); nodes are then placed from the SINK backward,
each time the ready node with the largest key, which yields the valid order
closest to the ideal one. The result is deterministic (``position`` is the
node's place in the graph's toposort).

**IF/ENDIF** (:func:`add_if_endif`, stage 22): on a target without predicated
stores, ``STORE(INDEX(buf, idx, gate), v)`` becomes ``IF(gate); STORE(INDEX(buf,
idx), v); ENDIF`` in the linear list; consecutive stores under the same gate
share one IF.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, range_id
from lowering.final import _toposort, live_ranges
from lowering.narrow import LoweringError

__all__ = ["PRIORITY", "add_control_flow", "linearize", "add_if_endif", "format_linear",
           "check_structure", "run_count"]

PRIORITY: dict[Ops, int] = {
    Ops.DEFINE_GLOBAL: -20,
    Ops.DEFINE_VAR: -19,
    Ops.DEFINE_LOCAL: -18,
    Ops.DEFINE_REG: -17,
    Ops.CONST: -10,
    Ops.END: -5,
    Ops.LOAD: -1,
    Ops.STORE: 1,
    Ops.RANGE: 5,
}

Edges = dict[UOp, tuple[UOp, ...]]


def _add(edges: defaultdict, node: UOp, dep: UOp) -> None:
    if dep is not node and not any(d is dep for d in edges[node]):
        edges[node] = edges[node] + (dep,)


def _is_user_end(u: UOp) -> bool:
    """An END written in the kernel (not the loop of a lowered REDUCE, arg ``("reduce", n)``)."""
    return u.op is Ops.END and not (isinstance(u.arg, tuple) and u.arg[:1] == ("reduce",))


def _end_range(u: UOp) -> UOp:
    if len(u.src) != 2:
        raise LoweringError(f"END with {len(u.src) - 1} ranges reached control flow; "
                            "split ENDs first (final_rewrite)")
    return u.src[1]


def _body(x: UOp) -> list[UOp]:
    """The nodes written inside ``x``: its sources, but not what an AFTER waits for
    (``AFTER(buf, A)`` orders after A; A is not part of the body)."""
    out, seen, stack = [], {x}, [x]
    while stack:
        u = stack.pop()
        out.append(u)
        for s in (u.src[:1] if u.op is Ops.AFTER else u.src):
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return out


def _closure(root: UOp, edges: Edges) -> dict[UOp, frozenset[UOp]]:
    """For every node, the RANGE/END nodes it depends on (through sources and edges)."""
    deps: dict[UOp, frozenset[UOp]] = {}
    for u in _toposort(root, edges):
        srcs = u.src + edges.get(u, ())
        d = frozenset().union(*(deps[s] for s in srcs)) if srcs else frozenset()
        if u.op in (Ops.RANGE, Ops.END):
            d = d | {u}
        deps[u] = d
    return deps


def add_control_flow(root: UOp) -> Edges:
    """The control-flow edges of a kernel (see the module doc)."""
    edges: defaultdict[UOp, tuple[UOp, ...]] = defaultdict(tuple)
    nodes = root.toposort()
    position = {u: i for i, u in enumerate(nodes)}

    # structural nesting of written ENDs, and AFTER(x, d, r): r opens after d
    for u in nodes:
        if _is_user_end(u):
            r = _end_range(u)
            for x in _body(u.src[0]):
                if _is_user_end(x) and x is not u:
                    _add(edges, _end_range(x), r)
        if u.op is Ops.AFTER:
            rs = [d for d in u.src[1:] if d.op is Ops.RANGE]
            others = [d for d in u.src[1:] if d.op is not Ops.RANGE]
            for r in rs:
                for d in others:
                    if r not in d.toposort():
                        _add(edges, r, d)

    # order of the kernel SINK's sources: position of the first source reaching a node
    first_child: dict[UOp, int] = {}
    if root.op is Ops.SINK:
        for k, child in enumerate(root.src):
            for x in child.toposort():
                first_child.setdefault(x, k)

    # nesting by range use, then sequence siblings (tinygrad's CFGContext)
    deps = _closure(root, edges)
    nesting: dict[UOp, UOp] = {}
    for u in _toposort(root, edges):
        if u.op is Ops.END or u is root:
            for x in deps[u]:
                if x.op is Ops.END and x is not u and x not in nesting and (
                        u is root or _end_range(u) in deps[x]):
                    nesting[x] = u
    siblings: dict[UOp, list[UOp]] = defaultdict(list)
    for x, parent in nesting.items():
        siblings[parent].append(x)
    for parent, kids in siblings.items():
        kids.sort(key=lambda x: (sum(1 for y in kids if y in deps[x]),
                                 first_child.get(x, len(nodes)), position.get(x, len(nodes))))
        chain = kids if parent is root else [_end_range(parent)] + kids
        for a, b in zip(chain, chain[1:], strict=False):
            _add(edges, _end_range(b), a)

    # a SINK runs its sources in order (memory order is explicit: see final._order_effects)
    for s in nodes:
        if s.op is Ops.SINK and s.arg != "return":
            for prev, child in zip(s.src, s.src[1:], strict=False):
                if child.op is Ops.END and prev not in set(child.toposort()):
                    _add(edges, _end_range(child), prev)
    return dict(edges)


def run_count(u: UOp, live: dict[UOp, frozenset[UOp]]) -> int:
    """How often ``u`` runs: the product of ``vmax+1`` over the ranges it runs inside."""
    n = 1
    for r in live[u]:
        hi = r.vmax
        n *= max(1, int(hi) + 1) if not (isinstance(hi, float) and math.isinf(hi)) else 1 << 40
    return n


def linearize(root: UOp, edges: Edges | None = None) -> list[UOp]:
    """The priority-aware topological order of ``root`` (see the module doc)."""
    if edges is None:
        edges = add_control_flow(root)
    nodes = _toposort(root, edges)
    position = {u: i for i, u in enumerate(nodes)}
    live = live_ranges(root, edges)
    out_degree: dict[UOp, int] = defaultdict(int)
    for u in nodes:
        for s in u.src + edges.get(u, ()):
            out_degree[s] += 1
    key = {u: (run_count(u, live), PRIORITY.get(u.op, 0), position[u]) for u in nodes}
    rank = {u: i for i, u in enumerate(sorted(nodes, key=key.__getitem__))}
    heap = [(-rank[root], position[root], root)]
    placed: list[UOp] = []
    while heap:
        _, _, u = heapq.heappop(heap)
        placed.append(u)
        for s in u.src + edges.get(u, ()):
            out_degree[s] -= 1
            if out_degree[s] == 0:
                heapq.heappush(heap, (-rank[s], position[s], s))
    if len(placed) != len(nodes):
        raise LoweringError("the kernel's control flow has a cycle (a SINK source that must run "
                            "both before and after another)")
    linear = placed[::-1]
    check_structure(linear, live)
    return linear


def check_structure(linear: list[UOp], live: dict[UOp, frozenset[UOp]] | None = None) -> None:
    """Loops nest properly and every node runs inside the loops of its ranges."""
    stack: list[UOp] = []
    for u in linear:
        if u.op is Ops.RANGE:
            stack.append(u)
        elif u.op is Ops.END:
            r = _end_range(u)
            if not stack or stack[-1] is not r:
                raise LoweringError(f"internal: END of range {range_id(r)} does not close the "
                                    "innermost open loop")
            stack.pop()
        elif live is not None and u in live:
            missing = [r for r in live[u] if r not in stack]
            if missing:
                raise LoweringError(f"internal: {u.op.name.lower()} placed outside the loop of "
                                    f"range {range_id(missing[0])}")
    if stack:
        raise LoweringError(f"internal: loop of range {range_id(stack[-1])} is never closed")


def add_if_endif(linear: list[UOp], replaced: dict[UOp, UOp] | None = None) -> list[UOp]:
    """Wrap gated stores in IF/ENDIF (stage 22, for targets without predicated stores).

    Instructions that used a rewritten store (its END, the SINK) are rebuilt on
    the new one; ``replaced`` (if given) receives every old -> new instruction.
    """
    out: list[UOp] = []
    n_if = 0
    new: dict[UOp, UOp] = {} if replaced is None else replaced
    for u in linear:
        if any(s in new for s in u.src) and u.op is not Ops.STORE:
            nu = u.replace(src=tuple(new.get(s, s) for s in u.src))
            new[u] = nu
            u = nu
        if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 3:
            idx = u.src[0]
            gate = idx.src[2]
            plain = UOp(Ops.INDEX, idx.dtype, idx.src[:2], idx.arg)
            store = UOp(Ops.STORE, u.dtype, (plain,) + u.src[1:], u.arg)
            new[u] = store
            if out and out[-1].op is Ops.ENDIF and out[-1].src[0].src[0] is gate:
                endif = out.pop()
                out += [plain, store, endif]
                continue
            cond = UOp(Ops.IF, dtypes.void, (gate,), n_if)
            n_if += 1
            out += [cond, plain, store, UOp(Ops.ENDIF, dtypes.void, (cond,))]
        else:
            out.append(u)
    # drop gated INDEX nodes nothing uses any more
    used: set[UOp] = set()
    for u in out:
        used.update(u.src)
    return [u for u in out if not (u.op is Ops.INDEX and u not in used)]


def format_linear(linear: list[UOp], edges: Edges | None = None) -> str:
    """One instruction per line: ``%i = op dtype %srcs.. [arg] [after %deps]``."""
    pos: dict[UOp, int] = {}
    lines = []
    for i, u in enumerate(linear):
        pos.setdefault(u, i)
        srcs = " ".join(f"%{pos[s]}" if s in pos else "?" for s in u.src)
        parts = [f"%{i:<3} = {u.op.name.lower():<13} {str(u.dtype):<6}"]
        if srcs:
            parts.append(srcs)
        if u.arg is not None:
            parts.append(f"arg={u.arg!r}")
        extra = (edges or {}).get(u, ())
        if extra:
            parts.append("after " + " ".join(f"%{pos[s]}" if s in pos else "?" for s in extra))
        lines.append(" ".join(parts).rstrip())
    return "\n".join(lines)
