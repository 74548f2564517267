"""FDIV/IDIV cancellation (docs/rules.md, seed 000 §5).

One line per case: (rule, input, expected); guarded rows have a blocked case
(rule, input, what remains). FDIV(0,0) -> NaN must win over FDIV(x,x) -> 1.
"""

from __future__ import annotations

import rules
from tests.rules._cases import blocked_test, rewrite_test, simp

X = "(var x -20 20)"
Y = "(var y 1 5)"          # never zero
Y0 = "(var y0 0 5)"        # may be zero
F = "(cast f32 (var x -20 20))"
G = "(cast f32 (var y 1 5))"


POSITIVE = [
    ("fdiv_mul_zero_zero", f"(fdiv (mul {F} 0.0) 0.0)", "nan"),
    ("fdiv_self", f"(fdiv {F} {F})", "1.0"),
    ("fdiv_mul_cancel", f"(fdiv (mul {F} {G}) {G})", F),
    ("fdiv_mul_cancel", f"(fdiv (mul {G} {F}) {G})", F),
    # tinygrad cannot fold (x*2)//2 when x may be negative; C truncation makes it exact
    ("idiv_mul_cancel", f"(idiv (mul {X} {Y}) {Y})", X),
    ("idiv_mul_cancel", f"(idiv (mul {Y} {X}) {Y})", X),
    ("idiv_mul_cancel", f"(idiv (mul {X} -3) -3)", X),
    ("idiv_mul_cancel", f"(idiv (mul (cast i16 {X}) (const i16 100)) (const i16 100))",
     f"(cast i16 {X})"),
]

BLOCKED = [
    # the divisor may be 0: never fold a division by zero into a value
    ("idiv_mul_cancel", f"(idiv (mul {X} {Y0}) {Y0})", f"(idiv (mul {X} {Y0}) {Y0})"),
    # x*y wraps in i8 (20*100 > 127): (x*y)//y is not x
    ("idiv_mul_cancel", f"(idiv (mul (cast i8 {X}) (const i8 100)) (const i8 100))",
     f"(idiv (mul (cast i8 {X}) (const i8 100)) (const i8 100))"),
    # a dropped divisor must not be a possibly-Invalid value
    ("fdiv_self", "(fdiv (cast f32 (where (lt (var x -20 20) 5) (var x -20 20) (invalid))) "
     "(cast f32 (where (lt (var x -20 20) 5) (var x -20 20) (invalid))))",
     "(where (lt (var x -20 20) 5) 1.0 (cast f32 (invalid)))"),
]

test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


def test_zero_over_zero_wins_over_self_division() -> None:
    """Within division_dsl_patterns, 0.0/0.0 -> NaN comes before x/x -> 1.0."""
    _, out, matches = simp("(fdiv 0.0 0.0)", ["division_dsl_patterns"])
    assert matches == {"fdiv_zero_zero": 1} and out.op.name == "CONST" and out.arg != out.arg
    names = [r.name for r in rules.groups()["division_dsl_patterns"]]
    assert names.index("fdiv_zero_zero") < names.index("fdiv_self")
    assert names.index("fdiv_mul_zero_zero") < names.index("fdiv_self")


def test_nan_result_is_nan() -> None:
    _, out, _ = simp("(fdiv (mul (cast f32 (var x -20 20)) 0.0) 0.0)")
    assert out.op.name == "CONST" and out.arg != out.arg
