"""MAX/MIN elimination (docs/rules.md, seed 000 §11). One line per case; guarded rows have a
blocked case.
"""

from __future__ import annotations

from tests.rules._cases import blocked_test, rewrite_test

X = "(var x -20 20)"
HI = "(var h 5 9)"
LO = "(var l 0 5)"
F = "(cast f32 (var x -20 20))"
G = "(cast f32 (var l 0 5))"


POSITIVE = [
    ("max_self", f"(max {X} {X})", X),
    ("min_self", f"(min {X} {X})", X),
    ("max_by_bounds", f"(max {HI} {LO})", HI),        # vmin(x) >= vmax(y)
    ("max_by_bounds", f"(max {LO} {HI})", HI),        # the mirrored row: y when vmin(y) >= vmax(x)
    ("min_by_bounds", f"(min {HI} {LO})", LO),
    ("min_by_bounds", f"(min {LO} {HI})", LO),
]

BLOCKED = [
    ("max_by_bounds", f"(max {X} {LO})", f"(max {X} {LO})"),          # ranges overlap
    ("min_by_bounds", f"(min {X} {HI})", f"(min {X} {HI})"),
    ("max_by_bounds", f"(max {F} {G})", f"(max {F} {G})"),            # floats: unbounded
    # an operand that may be Invalid is never dropped
    ("max_by_bounds", f"(max {HI} (where (lt {X} 3) (where (lt {X} 0) (var m 0 4) (invalid)) 1))",
     f"(max {HI} (where (lt {X} 3) (where (lt {X} 0) (var m 0 4) (invalid)) 1))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)
