"""Term combining, ALU chain folding, constant hoisting, SUB normalization
(docs/rules.md, seed 000 §7-§8). One line per case; guarded rows have a blocked case.
"""

from __future__ import annotations

import pytest

from eqsat import parse
from eqsat.ir.equiv import check_equivalent
from tests.rules._cases import blocked_test, rewrite_test, simp

X = "(var x -20 20)"
Y = "(var y 0 9)"
F = "(cast f32 (var x -20 20))"


POSITIVE = [
    # term_combining_dsl_patterns
    ("add_self", f"(add {X} {X})", f"(mul {X} 2)"),
    ("add_self", f"(add {F} {F})", f"(mul {F} 2.0)"),          # exact for floats too
    ("sub_self", f"(sub {X} {X})", "0"),
    ("add_mul_terms", f"(add (mul {X} 3) (mul {X} 4))", f"(mul {X} 7)"),
    ("add_mul_terms", f"(add (mul 3 {X}) (mul {X} -3))", "0"),
    ("add_term_mul", f"(add {X} (mul {X} 4))", f"(mul {X} 5)"),
    ("add_chain_mul_terms", f"(add (add {Y} (mul {X} 3)) (mul {X} 4))",
     f"(add {Y} (mul {X} 7))"),
    ("add_chain_term_mul", f"(add (add {Y} {X}) (mul {X} 4))", f"(add {Y} (mul {X} 5))"),
    ("add_chain_mul_term", f"(add (add {Y} (mul {X} 4)) {X})", f"(add {Y} (mul {X} 5))"),
    ("add_chain_self", f"(add (add {Y} {X}) {X})", f"(add {Y} (mul {X} 2))"),
    ("sub_add_cancel", f"(sub (add {X} {Y}) {Y})", X),
    ("add_sub_cancel", f"(add (sub {X} {Y}) {Y})", X),
    # alu_folding_dsl_patterns
    ("add_const_chain", f"(add (add {X} 3) 4)", f"(add {X} 7)"),
    ("add_const_chain", f"(add 4 (add 3 {X}))", f"(add {X} 7)"),
    ("mul_const_chain", f"(mul (mul {X} 3) 4)", f"(mul {X} 12)"),
    ("and_const_chain", f"(and (and {X} 12) 10)", f"(and {X} 8)"),
    ("or_const_chain", f"(or (or {X} 12) 10)", f"(or {X} 14)"),
    ("xor_const_chain", f"(xor (xor {X} 12) 10)", f"(xor {X} 6)"),
    ("max_const_chain", f"(max (max {X} 3) 5)", f"(max {X} 5)"),
    ("add_const_chain", "(add (add (cast i8 (var x -20 20)) (const i8 100)) (const i8 50))",
     "(add (cast i8 (var x -20 20)) (const i8 -106))"),          # wraps, still exact mod 2^8
    ("sub_const_to_add", f"(sub {X} 3)", f"(add {X} -3)"),
    ("sub_const_minus_sum", f"(sub 10 (add {X} 3))", f"(sub 7 {X})"),
    ("hoist_const_add", f"(add (add {X} 3) {Y})", f"(add (add {X} {Y}) 3)"),
    ("hoist_const_add", f"(add {Y} (add {X} 3))", f"(add (add {X} {Y}) 3)"),
    ("hoist_const_mul", f"(mul (mul {X} 3) {Y})", f"(mul (mul {X} {Y}) 3)"),
    ("hoist_const_sub_lhs", f"(sub (add {X} 3) {Y})", f"(add (sub {X} {Y}) 3)"),
    ("hoist_const_sub_rhs", f"(sub {Y} (add {X} 3))", f"(add (sub {Y} {X}) -3)"),
    ("hoist_const_from_const_sub", f"(add (sub 5 {X}) {Y})", f"(add (sub {Y} {X}) 5)"),
    ("sub_of_sub", f"(sub {Y} (sub (var z 0 3) {X}))", f"(add {X} (sub {Y} (var z 0 3)))"),
    ("neg_sum_const", f"(mul (add {X} 3) -1)", f"(add (neg {X}) -3)"),
]

BLOCKED = [
    # reassociation is not exact for floats (rounding)
    ("add_const_chain", f"(add (add {F} 0.1) 0.2)", f"(add (add {F} 0.1) 0.2)"),
    ("add_mul_terms", f"(add (mul {F} 3.0) (mul {F} 4.0))", f"(add (mul {F} 3.0) (mul {F} 4.0))"),
    ("hoist_const_add", f"(add (add {F} 1.0) {F})", f"(add (add {F} 1.0) {F})"),
    ("sub_self", f"(sub {F} {F})", f"(sub {F} {F})"),                # inf - inf is NaN
    ("neg_sum_const", f"(mul (add {F} 3.0) -1.0)", f"(mul (add {F} 3.0) -1.0)"),  # rounding
    # a constant y is folded into the chain, not hoisted
    ("hoist_const_add", f"(add (add {X} 3) 4)", f"(add {X} 7)"),
    # bool add is or, never x*2
    ("add_self", "(add (lt (var x -20 20) 5) (lt (var x -20 20) 5))", "(lt (var x -20 20) 5)"),
    # a dropped subterm must not be possibly Invalid
    ("sub_add_cancel", f"(sub (add {X} (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1)) "
     f"(where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1))",
     f"(sub (add {X} (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1)) "
     f"(where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


# rows whose input the SUB normalization (term_combining_dsl_patterns) rewrites first:
# shown on their own group
ALU_ONLY = [
    ("add_sub_const", f"(add (sub {X} 3) 5)", f"(add {X} 2)"),
    ("add_sub_const", f"(add (sub {X} 5) 3)", f"(add {X} -2)"),
    ("sub_sub_const", f"(sub (sub {X} 3) 5)", f"(add {X} -8)"),
    ("sub_add_const", f"(sub (add {X} 3) 5)", f"(add {X} -2)"),
]


@pytest.mark.parametrize("rule,text,want", ALU_ONLY)
def test_alu_group_alone(rule: str, text: str, want: str) -> None:
    g, out, matches = simp(text, ["alu_folding_dsl_patterns"])
    assert matches == {rule: 1}, matches
    assert out is parse(want)
    assert check_equivalent(g, out)


def test_seed_cascade_becomes_x_plus_7() -> None:
    """Seed 000's cascade (docs/rules.md): ADD(MUL(ADD(x, 0), 1), ADD(3, 4)) -> ADD(x, 7)."""
    g, out, matches = simp("(add (mul (add (var x 0 10) 0) 1) (add 3 4))")
    assert out is parse("(add (var x 0 10) 7)")
    assert matches == {"add_zero": 1, "mul_one": 1, "const_fold_add": 1}


def test_a_cancellation_leaves_the_other_forms_of_its_class() -> None:
    """``(x + y) - y -> x`` keeps the e-node it rewrites (no subsumption): in the e-graph
    ``x + y`` stands for its whole class, and here the class of ``-2a//8 + 2`` also holds
    ``where(a > 4, 0, 1)``; hidden, ``where(...) - 2`` never became ``where(a > 4, -2, -1)``
    and the floor division stayed (cost 29)."""
    import eqsat
    from eqsat.api import Budget

    g = parse("(floordiv (mul (var a 3 8) -2) 8)")
    r = eqsat.optimize(g, cost_model="reference", budget=Budget(stall=0))
    assert r.graph is parse("(where (lt 4 (var a 3 8)) -2 -1)"), r.graph
    assert check_equivalent(g, r.graph)
