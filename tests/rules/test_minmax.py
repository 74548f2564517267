"""MAX/MIN elimination (seed 000 section 11). One line per case; guarded rows have a
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
HI = "(var h 5 9)"
LO = "(var l 0 5)"
F = "(cast f32 (var x -20 20))"
G = "(cast f32 (var l 0 5))"


def simp(text: str, rulesets=None):
    g = parse(text)
    out, st = optimize_baseline(g, rulesets)
    return g, out, st["matches"]


def canon(text: str) -> UOp:
    return graph_rewrite(parse(text), rules.matcher("commutative_canonicalization"))


def _int_valued(u: UOp) -> bool:
    return u.dtype.is_int or u.dtype.is_bool



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
