"""Cast folding and cast pushing into WHERE (docs/rules.md, seed 000 §6).

One line per case; guarded rows have a blocked case (rule, input, what remains).
"""

from __future__ import annotations

from tests.rules._cases import blocked_test, rewrite_test, simp

X = "(var x -20 20)"
# opaque fixed-width values: the casts wrap, so their bounds are the dtype's full range
L64 = "(cast i64 (var big -100000000000000000000 100000000000000000000))"
L32 = "(cast i32 (var big -100000000000000000000 100000000000000000000))"
L8 = "(cast i8 (var big -100000000000000000000 100000000000000000000))"
C = "(lt (var x -20 20) 5)"


POSITIVE = [
    ("cast_const", "(cast i8 300)", "(const i8 44)"),                # integer narrowing wraps
    ("cast_const", "(cast i32 -2.7)", "(const i32 -2)"),             # float -> int truncates
    ("cast_const", "(cast bool 0.5)", "true"),
    ("cast_const", "(cast f32 (const i32 16777217))", "16777216.0"),  # rounds to f32
    ("cast_const", "(cast u8x2 (vconst index 1 257))", "(vconst u8 1 1)"),
    ("cast_noop", f"(cast index {X})", X),
    ("bitcast_noop", "(bitcast i32 (cast i32 (var x -20 20)))", f"(cast i32 {X})"),
    ("bitcast_const", "(bitcast i32 (const f32 1.0))", "(const i32 1065353216)"),
    # b.cast(a).cast(b) -> b when a keeps every value of b
    ("cast_cast_roundtrip", f"(cast i32 (cast i64 {L32}))", L32),
    ("cast_cast_roundtrip", f"(cast bool (cast i32 {C}))", C),
    # widening chain: the middle cast does not narrow x
    ("cast_cast_widen", f"(cast f32 (cast i32 {L8}))", f"(cast f32 {L8})"),
    ("cast_cast_widen", f"(cast i64 (cast i32 {L8}))", f"(cast i64 {L8})"),
    # the middle type holds x's range (bounds, not dtypes)
    ("cast_cast_in_range", f"(cast i64 (cast i8 (cast i64 {X})))", f"(cast i64 {X})"),
    # cast_where_dsl_patterns
    ("bitcast_bitcast_back", f"(bitcast i32 (bitcast u32 (cast i32 {X})))", f"(cast i32 {X})"),
    ("cast_into_where", f"(cast i32 (where {C} {X} 3))",
     f"(where {C} (cast i32 {X}) (const i32 3))"),
]

BLOCKED = [
    # CAST(CAST(x, i8), i64) with x: i64 is not x: the i8 truncation is observable
    ("cast_cast_roundtrip", f"(cast i64 (cast i8 {L64}))", f"(cast i64 (cast i8 {L64}))"),
    ("cast_cast_widen", f"(cast i32 (cast u8 {L32}))", f"(cast i32 (cast u8 {L32}))"),
    ("cast_cast_in_range", "(cast i64 (cast i8 (cast i64 (var w 0 1000))))",
     "(cast i64 (cast i8 (var w 0 1000)))"),
    # through a float: not proven (the proof's floats carry no NaN payload)
    ("bitcast_bitcast_back", f"(bitcast i32 (bitcast f32 (cast i32 {X})))",
     f"(bitcast i32 (bitcast f32 (cast i32 {X})))"),
    # float -> int out of range or NaN is undefined: not folded
    ("cast_const", "(cast i8 1000.0)", "(cast i8 1000.0)"),
    ("cast_const", "(cast i32 nan)", "(cast i32 nan)"),
    # an Invalid branch is not cast: the padding rule moves the cast inside instead
    ("cast_into_where", f"(cast i32 (where {C} {X} (invalid)))",
     f"(where {C} (cast i32 {X}) (cast i32 (invalid)))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


def test_cast_into_where_did_not_fire_on_invalid() -> None:
    _, _, matches = simp(f"(cast i32 (where {C} {X} (invalid)))")
    assert "cast_into_where" not in matches and "invalid_into_cast" in matches
