"""WHERE simplification (docs/rules.md, seed 000 §12) and the bounds fold. One line per case;
guarded rows have a blocked case (the Invalid guard on the condition flip).
"""

from __future__ import annotations

from eqsat import parse
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.uop import UOp
from tests.rules._cases import blocked_test, engines_test, rewrite_test

X = "(var x -20 20)"
Y = "(var y 0 9)"
# bools that no comparison rule rewrites
A = "(and (lt (var x -20 20) 5) (lt (var y 0 9) 3))"
B = "(and (lt (var x -20 20) 0) (lt (var y 0 9) 7))"


POSITIVE = [
    # where_bound_patterns
    ("where_cond_true", f"(where (lt (var s 0 3) 5) {X} {Y})", X),
    ("where_cond_false", f"(where (lt (var s 5 9) 5) {X} {Y})", Y),
    ("where_cond_true", f"(where (and (lt (var s 0 3) 5) (lt (var s 0 3) 4)) {X} {Y})", X),
    ("fold_const_by_bounds", "(var x 3 3)", "3"),
    ("fold_const_by_bounds", "(shr (var x 0 7) 3)", "0"),
    ("fold_const_by_bounds", "(special lidx 1)", "0"),
    # dce_dsl_patterns (Morok's WHERE rules)
    ("where_same_branches", f"(where {A} {X} {X})", X),
    ("where_true_false", f"(where {A} true false)", A),
    ("where_false_true", f"(where {A} false true)", f"(not {A})"),
    ("where_not_flip", f"(where (not {A}) {X} {Y})", f"(where {A} {Y} {X})"),
    ("where_same_cond_true", f"(where {A} (where {A} {X} 3) {Y})", f"(where {A} {X} {Y})"),
    ("where_same_cond_false", f"(where {A} 0 (where {A} 1 {Y}))", f"(where {A} 0 {Y})"),
    ("where_nested_merge", f"(where {A} (where {B} {X} {Y}) {Y})",
     f"(where (and {A} {B}) {X} {Y})"),
    ("where_add_combine", f"(add (where {A} 2 0) (where {A} 1 5))", f"(where {A} 3 5)"),
    ("where_add_combine_false", f"(add (where {A} {X} 2) (where {A} {Y} 3))",
     f"(where {A} (add {X} {Y}) 5)"),
    ("where_alu_combine", f"(mul (where {A} 2 {X}) (where {A} 3 {Y}))",
     f"(where {A} 6 (mul {X} {Y}))"),
    ("where_alu_combine_false", f"(mul (where {A} {X} 2) (where {A} {Y} 3))",
     f"(where {A} (mul {X} {Y}) 6)"),
    ("where_div_combine", f"(idiv (where {A} 7 {X}) (where {A} 2 (var p 1 3)))",
     f"(where {A} 3 (idiv {X} (var p 1 3)))"),
    ("where_add_chain_combine_false", f"(add (add {X} (where {A} {Y} 2)) (where {A} {Y} 3))",
     f"(add {X} (where {A} (mul {Y} 2) 5))"),
    ("where_const_operand", f"(add (where {A} 7 1) 3)", f"(where {A} 10 4)"),
    ("where_add_chain_combine", f"(add (add {X} (where {A} 2 0)) (where {A} 1 5))",
     f"(add {X} (where {A} 3 5))"),
    # a padded index simplified under its validity (tinygrad's uop_given_valid)
    ("where_gate_given_valid", f"(where (lt {Y} 5) (mod {Y} 5) (invalid))",
     f"(where (lt {Y} 5) {Y} (invalid))"),
    ("where_gate_given_valid", f"(where (lt 0 {X}) (max {X} 1) (invalid))",
     f"(where (lt 0 {X}) {X} (invalid))"),
    ("where_gate_given_valid", f"(where (and (lt {X} 3) (eq {X} 7)) {X} (invalid))", "(invalid)"),
]

BLOCKED = [
    # the flip would move the Invalid into the true branch (tinygrad symbolic.py:201-202)
    ("where_not_flip", f"(where (not {A}) {X} (invalid))", f"(where (not {A}) {X} (invalid))"),
    # the bounds fold never folds a division that may be by zero
    ("fold_const_by_bounds", "(idiv (var x 0 0) (var y -1 1))", "(idiv 0 (var y -1 1))"),
    # nor swallows an operand that may be Invalid
    ("fold_const_by_bounds", f"(and (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1) 0)",
     f"(and (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1) 0)"),
    # merging needs the same else-branch node
    ("where_nested_merge", f"(where {A} (where {B} {X} {Y}) (var z 0 9))",
     f"(where {A} (where {B} {X} {Y}) (var z 0 9))"),
    # a divisor that may be 0 is not moved into a branch it was not in
    ("where_div_combine", f"(idiv (where {A} 7 {X}) (where {A} 2 {Y}))",
     f"(idiv (where {A} 7 {X}) (where {A} 2 {Y}))"),
    # combining two WHEREs needs a constant side to fold
    ("where_add_combine", f"(add (where {A} {X} {Y}) (where {A} {Y} {X}))",
     f"(add (where {A} {X} {Y}) (where {A} {Y} {X}))"),
    ("where_alu_combine", f"(mul (where {A} {X} {Y}) (where {A} {Y} {X}))",
     f"(mul (where {A} {X} {Y}) (where {A} {Y} {X}))"),
    # nothing the validity says narrows the index
    ("where_gate_given_valid", f"(where (lt {Y} 7) (mod {Y} 5) (invalid))",
     f"(where (lt {Y} 7) (mod {Y} 5) (invalid))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


def test_flip_guard_sees_vectorized_invalid() -> None:
    """Blocked: WHERE(!c, t, VECTORIZE(Invalid, Invalid)) keeps its orientation."""
    from eqsat.ir.dtype import dtypes
    from eqsat.ir.ops import Ops

    c = parse(A)
    cv = UOp(Ops.VECTORIZE, dtypes.bool.vec(2), (c, c)).alu(Ops.NOT)
    t = parse(f"(vectorize {X} {Y})")
    inv = UOp(Ops.VECTORIZE, dtypes.index.vec(2), (UOp.invalid(), UOp.invalid()))
    w = UOp(Ops.WHERE, t.dtype, (cv, t, inv))
    out, st = optimize_baseline(w, "dce_dsl_patterns")
    assert out is w and "where_not_flip" not in st["matches"]
    flipped = UOp(Ops.WHERE, t.dtype, (cv, inv, t))
    out, st = optimize_baseline(flipped, "dce_dsl_patterns")
    assert "where_not_flip" in st["matches"] and out.src[1] is t


# both engines, default rule sets: where(c,1,b) + where(c,2,e) -> where(c,3,b+e), also
# inside a longer sum (Morok's tests)
C = "(lt (var x 0 10) 5)"
ENGINES = [
    ("where_add_combine", f"(add (where {C} 1 (var b 0 10)) (where {C} 2 (var e 0 10)))",
     f"(where {C} 3 (add (var b 0 10) (var e 0 10)))"),
    ("where_add_chain_combine", f"(add (add (where {C} 1 (var b 0 10)) (var z 0 9)) "
     f"(where {C} 2 (var e 0 10)))",
     f"(add (var z 0 9) (where {C} 3 (add (var b 0 10) (var e 0 10))))"),
]

test_engines = engines_test(ENGINES)
