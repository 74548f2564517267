"""Boolean logic (docs/rules.md, seed 000 §9): double negation, self-cancellation,
absorbing/identity elements, De Morgan. One line per case; guarded rows have a
blocked case.
"""

from __future__ import annotations

from tests.rules._cases import blocked_test, rewrite_test

X = "(var x -20 20)"
Y = "(var y 0 9)"
# bools no comparison rule rewrites: conjunctions of comparisons
A = "(and (lt (var x -20 20) 5) (lt (var y 0 9) 3))"
B = "(and (lt (var x -20 20) 0) (lt (var y 0 9) 7))"
# a bool that is Invalid where 0 <= x < 5
INVB = ("(where (lt (var x -20 20) 5) (where (lt (var x -20 20) 0) (lt (var y 0 9) 3) "
        "(cast bool (invalid))) (lt (var y 0 9) 6))")


POSITIVE = [
    ("bool_add_is_or", f"(add {A} {B})", f"(or {A} {B})"),
    ("bool_mul_is_and", f"(mul {A} {B})", f"(and {A} {B})"),
    ("bool_max_is_or", f"(max {A} {B})", f"(or {A} {B})"),
    ("not_not", f"(not (not {A}))", A),
    ("not_not", f"(not (not {X}))", X),                           # bitwise ~~x = x too
    ("xor_self", f"(xor {X} {X})", "0"),
    ("xor_self", f"(xor {A} {A})", "false"),
    ("or_not_self", f"(or {A} (not {A}))", "true"),
    ("or_not_self", f"(or (not {A}) {A})", "true"),
    ("and_not_self", f"(and {A} (not {A}))", "false"),
    # x | !x and x & !x after the negation flip !(x < 3) -> 2 < x (tinygrad's != true)
    ("or_lt_complement", f"(or (lt {X} 3) (not (lt {X} 3)))", "true"),
    ("or_lt_complement", f"(or (lt {X} 3) (ne (lt {X} 3) true))", "true"),
    ("and_lt_complement", f"(and (lt {X} 3) (not (lt {X} 3)))", "false"),
    ("or_true", f"(or true {A})", "true"),
    ("and_false", f"(and {A} false)", "false"),
    ("and_true", f"(and true {A})", A),
    ("or_false", f"(or {A} false)", A),
    ("de_morgan_and", f"(and (not {A}) (not {B}))", f"(not (or {A} {B}))"),
    ("de_morgan_and", f"(and (not {X}) (not {Y}))", f"(not (or {X} {Y}))"),
    ("de_morgan_or", f"(or (not {A}) (not {B}))", f"(not (and {A} {B}))"),
    ("or_absorb_and", f"(or {A} (and {A} {B}))", A),
    ("and_absorb_or", f"(and {A} (or {A} {B}))", A),
]

BLOCKED = [
    # x < 3 or x > 3 misses x == 3; x < 5 and x > 2 holds at 3 and 4
    ("or_lt_complement", f"(or (lt {X} 3) (lt 3 {X}))", f"(or (lt {X} 3) (lt 3 {X}))"),
    ("and_lt_complement", f"(and (lt {X} 5) (lt 2 {X}))", f"(and (lt {X} 5) (lt 2 {X}))"),
    # tautology / contradiction only for bools (x | ~x is -1 on integers)
    ("or_not_self", f"(or {X} (not {X}))", f"(or {X} (not {X}))"),
    ("and_not_self", f"(and {X} (not {X}))", f"(and {X} (not {X}))"),
    # an operand that may be Invalid is never dropped
    ("and_false", f"(and false {INVB})", f"(and false {INVB})"),
    ("or_true", f"(or {INVB} true)", f"(or {INVB} true)"),
    ("or_absorb_and", f"(or {A} (and {A} {INVB}))", f"(or {A} (and {A} {INVB}))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)
