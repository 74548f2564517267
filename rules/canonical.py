"""Commutative canonicalization on Index dtype (docs/rules.md, seed 000 §18, 003 §6).

``op(a, b) -> op(b, a)`` when ``b`` sorts before ``a``, for ADD, MUL, MAX, AND,
OR, XOR of Index dtype and EQ, NE of Index operands. The order is the UOp's
creation id (``uid``, smaller left), with one refinement: constants sort last,
so a constant offset or factor always ends on the right (``x + 7``, ``x * 4``)
whatever the creation order of the constant. Without the canonical order
``R1*8000 + R2*16`` and ``R2*16 + R1*8000`` would be different hash-consed
nodes.

Index only: reordering vector float/int math would break the lane-wise
grouping later passes rely on (tinygrad symbolic.py makes the same choice).
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py

__all__ = ["GROUPS", "EGRAPH", "LAWS", "canon_key"]

_ORDERED = (Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR)
_CMP = (Ops.EQ, Ops.NE)


def canon_key(u: UOp) -> tuple[int, int]:
    """Sort key of a commutative operand: non-constants by uid, then constants by uid."""
    return (1 if u.op is Ops.CONST or u.op is Ops.VCONST else 0, u.uid)


def _out_of_order(x: UOp) -> bool:
    a, b = x.src
    if x.op in _CMP:
        if a.dtype != dtypes.index:
            return False
    elif x.dtype != dtypes.index:
        return False
    return canon_key(b) < canon_key(a)


G = "commutative_canonicalization"
commutative_canonicalization = [
    Rule("commutative_sort", "a op b -> b op a when key(b) < key(a) (Index; key = (is "
         "constant, uid); op in + * max & | ^ == !=)",
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
