"""Identity/zero elements, self folding, zero folding, power, negation
(docs/rules.md, seed 000 §2-§4, §15). One line per case; guarded rows have a blocked case."""

from __future__ import annotations

from tests.rules._cases import always, blocked_test, canon, rewrite_test, simp

X = "(var x -20 20)"
P = "(var p 1 9)"        # never zero
Z = "(var z 0 9)"        # may be zero
F = "(cast f32 (var x -20 20))"
C = "(lt (var x -20 20) 5)"
INV = f"(where {C} (var x -20 20) (invalid))"
LB = "(load (index (buffer 2 bool 8) (var i 0 7)))"  # any bool
L = "(load (index (buffer 1 f32 8) (var i 0 7)))"  # any f32: -0.0, NaN, inf included


POSITIVE = [
    # identity_and_zero_patterns
    ("add_zero", f"(add {X} 0)", X),
    ("add_zero", f"(add 0 {X})", X),
    ("mul_one", f"(mul 1 {X})", X),
    ("or_zero", f"(or {X} 0)", X),
    ("xor_zero", f"(xor 0 {X})", X),
    ("sub_zero", f"(sub {X} 0)", X),
    ("shl_zero", f"(shl {X} 0)", X),
    ("shr_zero", f"(shr (cast i32 {X}) (const i32 0))", f"(cast i32 {X})"),
    ("ne_false", f"(ne {C} false)", C),
    ("eq_true", f"(eq true {C})", C),
    ("ne_true", f"(ne {LB} true)", f"(not {LB})"),
    ("eq_false", f"(eq {LB} false)", f"(not {LB})"),
    ("add_neg_zero", f"(add {L} -0.0)", L),
    ("sub_zero", f"(sub {L} 0.0)", L),
    ("idiv_one", f"(idiv {X} 1)", X),
    ("fdiv_one", f"(fdiv {F} 1.0)", F),
    ("mod_one", f"(mod {X} 1)", "0"),
    ("mod_neg_one", f"(mod {X} -1)", "0"),
    ("round_of_int", f"(trunc {X})", X),
    ("mul_zero", f"(mul {X} 0)", "0"),
    ("mul_zero", f"(mul 0 (cast i32 {X}))", "(const i32 0)"),
    ("and_zero", f"(and 0 {X})", "0"),
    # self_folding_dsl_patterns
    ("idiv_self", f"(idiv {P} {P})", "1"),
    ("idiv_neg_one", f"(idiv {X} -1)", f"(neg {X})"),
    ("mod_mod_same", f"(mod (mod {X} (var y 1 5)) (var y 1 5))", f"(mod {X} (var y 1 5))"),
    ("and_self", f"(and {X} {X})", X),
    ("or_self", f"(or {C} {C})", C),
    # zero_folding_dsl_patterns
    ("mod_self", f"(mod {P} {P})", "0"),
    ("lt_self", f"(lt {X} {X})", "false"),
    ("lt_self", f"(lt {F} {F})", "false"),  # floats too: NaN < NaN is false (Morok's)
    ("ne_self", f"(ne {X} {X})", "false"),
    # power_dsl_patterns
    ("pow_zero", f"(pow {F} 0.0)", "1.0"),
    ("pow_one", f"(pow {F} 1.0)", F),
    # negation_dsl_patterns
    ("neg_neg", f"(neg (neg {X}))", X),
    ("neg_neg", f"(neg (neg {F}))", F),
]

# (rule, input, what remains)
BLOCKED = [
    # x*0 -> 0 never for floats: NaN*0 and inf*0 are NaN
    ("mul_zero", f"(mul {F} 0.0)", f"(mul {F} 0.0)"),
    # x + 0.0 and x - -0.0 are 0.0 at x = -0.0, not x
    ("add_zero", f"(add {L} 0.0)", f"(add {L} 0.0)"),
    ("sub_zero", f"(sub {L} -0.0)", f"(sub {L} -0.0)"),
    # nor when x may be Invalid: the padding rules push the 0 inside instead
    ("mul_zero", f"(mul 0 {INV})", f"(where {C} 0 (invalid))"),
    ("mul_zero", "(mul (invalid) 0)", "(invalid)"),
    ("and_zero", f"(and {INV} 0)", f"(where {C} 0 (invalid))"),
    ("mod_one", f"(mod (cast i32 (where {C} (where (lt {X} 0) {X} (invalid)) 3)) (const i32 1))",
     f"(mod (where {C} (where (lt {X} 0) (cast i32 {X}) (cast i32 (invalid))) (const i32 3)) "
     "(const i32 1))"),
    # x//x and x%x need x != 0 (division by zero is never folded into a value)
    ("idiv_self", f"(idiv {Z} {Z})", f"(idiv {Z} {Z})"),
    ("mod_self", f"(mod {Z} {Z})", f"(mod {Z} {Z})"),
    # != of itself only for non-floats (NaN != NaN is true)
    ("ne_self", f"(ne {F} {F})", f"(ne {F} {F})"),
    # x != false is x for bools only (an integer 3 != 0 is true, not 3)
    ("ne_false", f"(ne {X} 0)", f"(ne {X} 0)"),
    # trunc is a no-op on integers only
    ("round_of_int", f"(trunc {F})", f"(trunc {F})"),
]


test_rewrites = rewrite_test(POSITIVE, equiv=always)
test_blocked = blocked_test(BLOCKED, equiv=always)


def test_seed_priority_example() -> None:
    """docs/rules.md, seed 000 §13: Invalid propagation fires before x*0 = 0."""
    g, out, matches = simp(f"(mul 0 {INV})")
    # the push fires on the outer MUL; x*0 = 0 then folds the MUL moved inside the WHERE
    assert matches == {"invalid_into_binary_right": 1, "mul_zero": 1}
    assert out is canon(f"(where {C} 0 (invalid))")
