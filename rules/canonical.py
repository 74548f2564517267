"""Commutative canonicalization on Index dtype (docs/rules.md, seed 000 §18, 003 §6).

``op(a, b) -> op(b, a)`` when ``b`` sorts before ``a``, for ADD, MUL, MAX, AND,
OR, XOR of Index dtype and EQ, NE of Index operands. The order is the operands'
structure (op, dtype, argument, then the sources', :func:`structure`; not the
creation id, which depends on what the process built before), with one refinement:
constants sort last, so a constant offset or factor always ends on the right
(``x + 7``, ``x * 4``). Without the canonical order
``R1*8000 + R2*16`` and ``R2*16 + R1*8000`` would be different hash-consed
nodes.

Index only: reordering vector float/int math would break the lane-wise
grouping later passes rely on (tinygrad symbolic.py makes the same choice).
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp, node_cache
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py

__all__ = ["GROUPS", "EGRAPH", "LAWS", "canon_key", "structure"]

_ORDERED = (Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR)
_CMP = (Ops.EQ, Ops.NE)
_CONST, _VCONST = Ops.CONST, Ops.VCONST  # (module globals: no EnumType lookup per node)


#: each node's structural key (see :func:`structure`), while the node lives
_STRUCTURE: dict[int, tuple] = node_cache()


def structure(u: UOp) -> tuple:
    """A node's structure as a sortable tuple: (op, dtype, argument, its sources'
    structures). Unlike the creation id it does not depend on which graphs the process
    built before, so the order (and every rewrite that follows from it) is the same in
    every process and after any earlier call."""
    memo = _STRUCTURE
    hit = memo.get(u.uid)
    if hit is not None:
        return hit
    stack = [u]
    while stack:
        x = stack[-1]
        if x.uid in memo:
            stack.pop()
            continue
        todo = [s for s in x.src if s.uid not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[x.uid] = (x.op.value, str(x.dtype), repr(x.arg),
                       tuple(memo[s.uid] for s in x.src))
    return memo[u.uid]


def canon_key(u: UOp) -> tuple[int, tuple]:
    """Sort key of a commutative operand: non-constants first, each kind in the order
    of its structure (:func:`structure`)."""
    return (1 if u.op is Ops.CONST or u.op is Ops.VCONST else 0, structure(u))


_IDX = dtypes.index


def _out_of_order(x: UOp) -> bool:
    """``canon_key(b) < canon_key(a)`` for ``x = a op b`` of Index, its keys compared
    no further than their first difference: the constant flag, then the op (the first
    item of :func:`structure`), then the structures."""
    a, b = x.src
    d = a.dtype if x.op in _CMP else x.dtype
    if d is not _IDX and d != _IDX:
        return False
    a_const = a.op is _CONST or a.op is _VCONST
    if a_const is not (b.op is _CONST or b.op is _VCONST):
        return a_const  # (b sorts first exactly when a is the constant)
    if a.op is not b.op:
        return b.op._value_ < a.op._value_
    return structure(b) < structure(a)


G = "commutative_canonicalization"
commutative_canonicalization = [
    Rule("commutative_sort", "a op b -> b op a when key(b) < key(a) (Index; key = (is "
         "constant, structure); op in + * max & | ^ == !=)",
         UPat(_ORDERED + _CMP, name="x"), build=lambda x: x.replace(src=x.src[::-1]),
         guard=_out_of_order),
]
for _r in commutative_canonicalization:
    _r.group = G

LAWS = [py(r, "absent", "the e-graph needs no operand order: each of its rules matches "
           "both orders of a commutative op (mirror images), and an index sum is "
           "canonical_sum's sorted flattened sum") for r in commutative_canonicalization]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
