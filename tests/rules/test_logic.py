"""Boolean logic (seed 000 section 9): double negation, self-cancellation,
absorbing/identity elements, De Morgan. One line per case; guarded rows have a
blocked case.
"""

from __future__ import annotations

import pytest

import rules
from eqsat import parse, to_sexpr
from eqsat.baseline import optimize_baseline
from eqsat.equiv import check_equivalent
from eqsat.pattern import graph_rewrite
from eqsat.uop import UOp

X = "(var x -20 20)"
Y = "(var y 0 9)"
# bools no comparison rule rewrites: conjunctions of comparisons
A = "(and (lt (var x -20 20) 5) (lt (var y 0 9) 3))"
B = "(and (lt (var x -20 20) 0) (lt (var y 0 9) 7))"
# a bool that is Invalid where 0 <= x < 5
INVB = ("(where (lt (var x -20 20) 5) (where (lt (var x -20 20) 0) (lt (var y 0 9) 3) "
        "(cast bool (invalid))) (lt (var y 0 9) 6))")


def simp(text: str, rulesets=None):
    g = parse(text)
    out, st = optimize_baseline(g, rulesets)
    return g, out, st["matches"]


def canon(text: str) -> UOp:
    return graph_rewrite(parse(text), rules.matcher("commutative_canonicalization"))


def _int_valued(u: UOp) -> bool:
    return u.dtype.is_int or u.dtype.is_bool



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
    # tautology / contradiction only for bools (x | ~x is -1 on integers)
    ("or_not_self", f"(or {X} (not {X}))", f"(or {X} (not {X}))"),
    ("and_not_self", f"(and {X} (not {X}))", f"(and {X} (not {X}))"),
    # an operand that may be Invalid is never dropped
    ("and_false", f"(and false {INVB})", f"(and false {INVB})"),
    ("or_true", f"(or {INVB} true)", f"(or {INVB} true)"),
    ("or_absorb_and", f"(or {A} (and {A} {INVB}))", f"(or {A} (and {A} {INVB}))"),
]


@pytest.mark.parametrize("rule,text,want", POSITIVE)
def test_rewrites(rule: str, text: str, want: str) -> None:
    g, out, matches = simp(text)
    assert rule in matches, f"{rule} did not fire on {text}: {matches}"
    assert out is canon(want), f"{text} -> {to_sexpr(out, compact=True)}, want {want}"
    if _int_valued(g):
        assert check_equivalent(g, out)


@pytest.mark.parametrize("rule,text,rest", BLOCKED)
def test_blocked(rule: str, text: str, rest: str) -> None:
    g, out, matches = simp(text)
    assert out is canon(rest), f"{text} -> {to_sexpr(out, compact=True)}, want {rest}"
    if rest == text:  # nothing else fired: the guarded rule did not either
        assert rule not in matches, f"{rule} fired on {text}"
    if _int_valued(g):
        assert check_equivalent(g, out)
