"""Commutative canonicalization on Index dtype (docs/rules.md, seed 000 §18, 003 §6).

Operands sort by creation id (uid), constants last; Index only: other dtypes keep
their operand order.
"""

from __future__ import annotations

import pytest

from eqsat import parse
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from rules.canonical import _out_of_order, canon_key


def _leaves():
    a = UOp.var("ca", 0, 9)
    b = UOp.var("cb", 0, 9)
    assert a.uid < b.uid
    return a, b


@pytest.mark.parametrize("op", [Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR])
def test_index_operands_sorted_by_uid(op: Ops) -> None:
    a, b = _leaves()
    out, st = optimize_baseline(UOp(op, dtypes.index, (b, a)), "commutative_canonicalization")
    assert out is UOp(op, dtypes.index, (a, b)) and st["matches"] == {"commutative_sort": 1}


@pytest.mark.parametrize("op", [Ops.EQ, Ops.NE])
def test_index_comparisons_sorted(op: Ops) -> None:
    a, b = _leaves()
    out, _ = optimize_baseline(UOp(op, dtypes.bool, (b, a)), "commutative_canonicalization")
    assert out is UOp(op, dtypes.bool, (a, b))


def test_constants_go_right() -> None:
    x = UOp.var("cx", 0, 9)
    seven = UOp.const(dtypes.index, 7)
    for node in (UOp(Ops.ADD, dtypes.index, (seven, x)), UOp(Ops.ADD, dtypes.index, (x, seven))):
        out, _ = optimize_baseline(node, "commutative_canonicalization")
        assert out is UOp(Ops.ADD, dtypes.index, (x, seven))
    assert canon_key(x) < canon_key(seven)


def test_already_sorted_is_left_alone() -> None:
    a, b = _leaves()
    node = UOp(Ops.ADD, dtypes.index, (a, b))
    out, st = optimize_baseline(node, "commutative_canonicalization")
    assert out is node and not st["matches"]


@pytest.mark.parametrize("dt", [dtypes.i32, dtypes.f32, dtypes.bool])
def test_other_dtypes_keep_their_order(dt) -> None:
    """Blocked: only Index dtype is canonicalized (vector math merging relies on order)."""
    a, b = (UOp.var("ca", 0, 9).cast(dt), UOp.var("cb", 0, 9).cast(dt))
    node = UOp(Ops.ADD if dt != dtypes.bool else Ops.AND, dt, (b, a))
    out, st = optimize_baseline(node, "commutative_canonicalization")
    assert out is node and "commutative_sort" not in st["matches"]


def test_mirror_sums_hash_cons_to_one_node() -> None:
    """R1*8000 + R2*16 and R2*16 + R1*8000 become the same node (docs/rules.md, seed 003 §6)."""
    p = parse("(add (mul (range 1 4) 8000) (mul (range 2 8) 16))")
    q = parse("(add (mul (range 2 8) 16) (mul (range 1 4) 8000))")
    assert p is not q
    assert optimize_baseline(p)[0] is optimize_baseline(q)[0]


@pytest.mark.parametrize("a, b", [("(var ca 0 9)", "3"), ("3", "(var ca 0 9)"),
                                  ("(mul (var ca 0 9) 2)", "(var cb 0 9)"),
                                  ("(var cb 0 9)", "(mul (var ca 0 9) 2)"),
                                  ("(var cb 0 9)", "(var ca 0 9)"), ("4", "3"), ("3", "4")])
def test_out_of_order_is_the_keys_order(a: str, b: str) -> None:
    x, y = parse(a), parse(b)
    assert _out_of_order(x + y) == (canon_key(y) < canon_key(x))
