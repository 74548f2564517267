"""FDIV/IDIV cancellation (docs/rules.md, seed 000 §5).

One line per case: (rule, input, expected); guarded rows have a blocked case
(rule, input, what remains). Float ``x/x`` and ``(x*y)/y`` are not cancelled.
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
    # tinygrad cannot fold (x*2)//2 when x may be negative; C truncation makes it exact
    ("idiv_mul_cancel", f"(idiv (mul {X} {Y}) {Y})", X),
    ("idiv_mul_cancel", f"(idiv (mul {Y} {X}) {Y})", X),
    ("idiv_mul_cancel", f"(idiv (mul {X} -3) -3)", X),
]

BLOCKED = [
    # the divisor may be 0: never fold a division by zero into a value
    ("idiv_mul_cancel", f"(idiv (mul {X} {Y0}) {Y0})", f"(idiv (mul {X} {Y0}) {Y0})"),
    # fixed widths are left alone (index only: z3 cannot prove the no-wrap form reliably)
    ("idiv_mul_cancel", f"(idiv (mul (cast i16 {X}) (const i16 100)) (const i16 100))",
     f"(idiv (mul (cast i16 {X}) (const i16 100)) (const i16 100))"),
    # x*y wraps in i8 (20*100 > 127): (x*y)//y is not x
    ("idiv_mul_cancel", f"(idiv (mul (cast i8 {X}) (const i8 100)) (const i8 100))",
     f"(idiv (mul (cast i8 {X}) (const i8 100)) (const i8 100))"),
    # no float x/x -> 1.0 (NaN at x = 0, inf, NaN) nor (x*y)/y -> x (inf where x*y
    # overflows, NaN at y = 0): both engines once did both
    ("fdiv_self", f"(fdiv {F} {F})", f"(fdiv {F} {F})"),
    ("fdiv_mul_cancel", f"(fdiv (mul {F} {G}) {G})", f"(fdiv (mul {F} {G}) {G})"),
    ("fdiv_mul_cancel", "(fdiv (mul (cast f32 (var x -5 5)) 1e38) 1e38)",
     "(fdiv (mul (cast f32 (var x -5 5)) 1e38) 1e38)"),
]

test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


def test_zero_over_zero_is_nan() -> None:
    """0.0/0.0 -> NaN; there is no float x/x -> 1.0 (nor (x*y)/y -> x) to fold it."""
    _, out, matches = simp("(fdiv 0.0 0.0)", ["division_dsl_patterns"])
    assert matches == {"fdiv_zero_zero": 1} and out.op.name == "CONST" and out.arg != out.arg
    names = [r.name for r in rules.groups()["division_dsl_patterns"]]
    assert "fdiv_self" not in names and "fdiv_mul_cancel" not in names


def test_nan_result_is_nan() -> None:
    _, out, _ = simp("(fdiv (mul (cast f32 (var x -20 20)) 0.0) 0.0)")
    assert out.op.name == "CONST" and out.arg != out.arg
