"""Adversarial cases of the equivalence checker (docs/format.md, "Meaning"): graphs it
once called equivalent though they differ on a defined point, sound rewrites it once
called different, and inputs it once crashed on."""

from __future__ import annotations

import pytest

from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import parse

L = "(load (index (buffer 1 f32 8) (var i 0 7)))"
X = "(var x 0 3)"
N, RN = "(var n -3 3)", "(range 0 (var n -3 3))"  # an END that may be 0 or less
PAD = "(where (ne (var y -3 3) 0) (var y -3 3) (invalid))"  # Invalid at y = 0


# one line a case: a (the input), b, whether b is equivalent to a
@pytest.mark.parametrize("a, b, equivalent", [
    # a reduction over an empty range is its identity; its range is no input
    (f"(add {X} (reduce add {X} (range 3 0)))", f"(add {X} 7)", False),
    (f"(add {X} (reduce add {X} (range 3 -2)))", X, True),
    ("(reduce add 1 (range 3 0))", "(add (range 3 0) 0)", False),  # b reads a's loop index
    ("(reduce add 1 (range 3 -1))", "0", True),
    ("(reduce add 1 (range 3 0))", "(range 3 4)", False),  # b's loop index is its input
    (f"(add (reduce max {L} (range 3 0)) 1.0)", "2.0", False),
    (f"(add (reduce max {L} (range 3 0)) 1.0)", "(const f32 -inf)", True),
    # a free range of END 0 or less: no value anywhere, nothing to compare
    ("(add (range 0 0) 1)", "7", True),
    (f"(add (cast f32 (range 0 -3)) {L})", "1.0", True),
    # an op with an Invalid operand is Invalid: its lane is not computed (no division by 0)
    (f"(mod 5 {PAD})", "(mod 5 (where (ne (var y -3 3) 0) (var y -3 3) 7))", False),
    (f"(idiv (where (ne (var y -3 3) 0) 6 (invalid)) {PAD})", "(idiv 6 (var y -3 3))", False),
    (f"(idiv (where (ne (var y -3 3) 0) 6 (invalid)) {PAD})", f"(idiv 6 {PAD})", True),
    (f"(floordiv 7 {PAD})", "(floordiv 7 (where (ne (var y -3 3) 0) (var y -3 3) 1))", False),
    (f"(floormod 7 {PAD})", f"(floormod 7 {PAD})", True),
    (f"(mod 5 (gep (vectorize {PAD} 1) 0))", f"(mod 5 {PAD})", True),  # per point vs numpy
    # a loop index outside [0, END-1] is no point, even in a where branch not taken
    (f"(where (lt {N} 1) 0 {RN})", f"(where (lt {N} 1) 0 (gep (vectorize {RN} 1) 0))", True),
    (f"(where (lt {N} 1) 0 (gep (vectorize {RN} 1) 0))", f"(where (lt {N} 1) 7 {RN})", True),
    (f"(where (lt {N} 1) 0 {RN})", f"(where (lt {N} 1) 7 {RN})", True),
    (f"(where (lt {N} 1) 0 {RN})", f"(where (lt {N} 2) 7 {RN})", False),
    (f"(where (lt {N} 1) 0 (range 0 (idiv 6 {N})))", f"(where (lt {N} 1) 7 (range 0 (idiv 6 {N})))",
     True),
])
def test_check_equivalent(a: str, b: str, equivalent: bool) -> None:
    assert check_equivalent(parse(a), parse(b)).equivalent is equivalent


# one line a case: a, b, max_exhaustive, whether equivalent (a graph of no leaf has one point)
@pytest.mark.parametrize("a, b, max_exhaustive, equivalent", [
    ("1", "2", 0, False),
    ("(add 1 2)", "3", 0, True),
    ("(fdiv 1.0 0.0)", "inf", -1, True),
])
def test_no_leaves_few_points(a: str, b: str, max_exhaustive: int, equivalent: bool) -> None:
    res = check_equivalent(parse(a), parse(b), max_exhaustive=max_exhaustive)
    assert res.equivalent is equivalent and res.points == 1
