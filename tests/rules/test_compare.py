"""Comparison folding (docs/rules.md, seed 000 §4, §10): self, constants, range-proven,
offset elimination, negation flip, division lifting (c > 0 and c <= 0), and the
normalization toward LT. One line per case; guarded rows have a blocked case.
"""

from __future__ import annotations

import pytest

from tests.rules._cases import blocked_test, check_engines, rewrite_test

X = "(var x -20 20)"
Y = "(var y 0 9)"
F = "(cast f32 (var x -20 20))"
G = "(cast f32 (var y 0 9))"
I32 = "(cast i32 (var x -20 20))"
FULL = "(cast i32 (var big -100000000000000000000 100000000000000000000))"  # full i32 range


POSITIVE = [
    # self comparison (non-float)
    ("cmp_self_false", f"(gt {X} {X})", "false"),
    ("cmp_self_false", f"(gt {F} {F})", "false"),  # floats too: NaN > NaN is false
    ("cmp_self_true", f"(le {X} {X})", "true"),
    ("cmp_self_true", f"(eq {X} {X})", "true"),
    ("cmp_self_true", f"(ge {I32} {I32})", "true"),
    # constants, bounds
    ("cmp_const", "(lt 3 4)", "true"),
    ("cmp_const", "(lt (const i8 -1) (const i8 3))", "true"),
    ("cmp_const", "(ne nan nan)", "true"),                       # IEEE
    ("cmp_by_bounds", "(lt (var x 0 3) 5)", "true"),
    ("cmp_by_bounds", "(lt (var x 5 9) 5)", "false"),
    ("cmp_by_bounds", "(eq (var x 0 3) 7)", "false"),
    ("cmp_by_bounds", f"(lt (mod {Y} 4) 4)", "true"),
    # normalization toward LT
    ("not_lt", f"(not (lt {X} {Y}))", f"(le {Y} {X})"),
    ("not_le", f"(not (le {X} {Y}))", f"(lt {Y} {X})"),
    ("not_ge", f"(not (ge {X} {Y}))", f"(lt {X} {Y})"),
    ("not_eq", f"(not (eq {F} {G}))", f"(ne {F} {G})"),
    ("not_ne", f"(not (ne {F} {G}))", f"(eq {F} {G})"),
    ("gt_to_lt", f"(gt {X} {Y})", f"(lt {Y} {X})"),
    ("le_const_rhs", f"(le {X} 4)", f"(lt {X} 5)"),
    ("le_const_lhs", f"(le 4 {X})", f"(lt 3 {X})"),
    ("ge_const_rhs", f"(ge {X} 4)", f"(lt 3 {X})"),
    ("ge_const_lhs", f"(ge 4 {X})", f"(lt {X} 5)"),
    # offset elimination
    ("lt_offset", f"(lt (add {X} 3) 10)", f"(lt {X} 7)"),
    ("lt_offset", f"(lt (add 3 {X}) 10)", f"(lt {X} 7)"),
    ("lt_offset", f"(lt (add {I32} (const i32 3)) (const i32 10))", f"(lt {I32} (const i32 7))"),
    ("lt_offset_lhs", f"(lt 10 (add {X} 3))", f"(lt 7 {X})"),
    ("eq_offset", f"(eq (add {X} 3) 10)", f"(eq {X} 7)"),
    # negation flip
    ("lt_neg_flip", f"(lt (neg {X}) (neg {Y}))", f"(lt {Y} {X})"),
    ("lt_neg_flip_float", f"(lt (neg {F}) (neg {G}))", f"(lt {G} {F})"),
    ("lt_mul_neg1_flip", f"(lt (mul {X} -1) (mul {Y} -1))", f"(lt {Y} {X})"),
    # division lifting, d > 0: c > 0 and c <= 0 (C truncation)
    ("lt_idiv_lift_pos", f"(lt (idiv {X} 4) 3)", f"(lt {X} 12)"),
    ("lt_idiv_lift_nonpos", f"(lt (idiv {X} 4) -1)", f"(lt {X} -7)"),
    ("lt_idiv_lift_nonpos", f"(lt (idiv {X} 4) 0)", f"(lt {X} -3)"),
    ("const_lt_idiv_lift", f"(lt 2 (idiv {X} 4))", f"(lt 11 {X})"),
    # constant factors
    ("lt_mul_pos", f"(lt (mul {X} 4) 10)", f"(lt {X} 3)"),
    ("lt_mul_pos_nonpos", f"(lt (mul {X} 4) -10)", f"(lt {X} -2)"),
    ("lt_mul_neg_pos", f"(lt (mul {X} -3) 10)", f"(lt -4 {X})"),
    ("lt_mul_neg_nonpos", f"(lt (mul {X} -3) -10)", f"(lt 3 {X})"),
    ("const_lt_mul_pos", f"(lt 10 (mul {X} 4))", f"(lt 2 {X})"),
    ("neg_lt_const", f"(lt (neg {X}) 3)", f"(lt -3 {X})"),
    ("const_lt_neg", f"(lt 3 (neg {X}))", f"(lt {X} -3)"),
    # common factor of a sum, and the simplex
    ("lt_gcd_fold", f"(lt (add (mul {X} 4) (var z 0 3)) 8)", f"(lt {X} 2)"),
    ("lt_simplex", "(lt (add (mul (range 0 4) 3) (mul (range 1 5) 2)) 1)",
     "(lt (add (range 0 4) (range 1 5)) 1)"),
]

BLOCKED = [
    # self comparisons of floats (NaN)
    ("cmp_self_true", f"(eq {F} {F})", f"(eq {F} {F})"),
    # overlapping bounds decide nothing
    ("cmp_by_bounds", f"(lt {Y} 5)", f"(lt {Y} 5)"),
    # !(a < b) is not b <= a for floats (NaN)
    ("not_lt", f"(not (lt {F} {G}))", f"(not (lt {F} {G}))"),
    # x + c may wrap in a fixed-width dtype
    ("lt_offset", f"(lt (add {FULL} (const i32 3)) (const i32 10))",
     f"(lt (add {FULL} (const i32 3)) (const i32 10))"),
    # -x wraps at INT_MIN
    ("lt_neg_flip", f"(lt (neg {FULL}) (neg {FULL}))", "false"),
    ("lt_neg_flip", f"(lt (neg {FULL}) (neg {I32}))", f"(lt (neg {FULL}) (neg {I32}))"),
    # division lifting needs d > 0
    ("lt_idiv_lift_pos", f"(lt (idiv {X} -4) 3)", f"(lt (idiv {X} -4) 3)"),
    # the product may wrap
    ("lt_mul_pos", f"(lt (mul {FULL} (const i32 4)) (const i32 10))",
     f"(lt (mul {FULL} (const i32 4)) (const i32 10))"),
    # the remainder part must stay below the common factor
    ("lt_gcd_fold", f"(lt (add (mul {X} 4) (var z 0 4)) 8)",
     f"(lt (add (mul {X} 4) (var z 0 4)) 8)"),
    # simplex terms must be non-negative leaves
    ("lt_simplex", f"(lt (add (mul {X} 3) (mul (range 1 5) 2)) 1)",
     f"(lt (add (mul {X} 3) (mul (range 1 5) 2)) 1)"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


# e-graph only: a difference against 0 or 1 is a comparison of its terms (index: no wrap)
SUB_CMP = [
    (f"(lt (sub {X} {Y}) 1)", f"(le {X} {Y})"),                        # lt_sub_one
    (f"(lt (sub {X} {Y}) 0)", f"(lt {X} {Y})"),                        # lt_sub_zero
    (f"(lt 0 (sub {X} {Y}))", f"(lt {Y} {X})"),                        # zero_lt_sub
    (f"(lt -1 (sub {X} {Y}))", f"(le {Y} {X})"),                       # neg_one_lt_sub
    (f"(lt (sub {I32} (cast i32 {Y})) (const i32 1))",                 # i32: x - y may wrap
     f"(lt (sub {I32} (cast i32 {Y})) (const i32 1))"),
]


@pytest.mark.parametrize("text,want", SUB_CMP)
def test_difference_compared(text: str, want: str) -> None:
    check_engines(text, want, ("egraph",))
