"""WHERE simplification (docs/rules.md, seed 000 §12) and the bounds fold. One line per case;
guarded rows have a blocked case (the Invalid guard on the condition flip).
"""

from __future__ import annotations

import pytest

import rules
from eqsat import parse
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.pattern import graph_rewrite
from eqsat.ir.sexpr import to_sexpr
from eqsat.ir.uop import UOp
from tests.rules._cases import blocked_test, canon, check_engines, rewrite_test

X = "(var x -20 20)"
Y = "(var y 0 9)"
# bools that no comparison rule rewrites
A = "(and (lt (var x -20 20) 5) (lt (var y 0 9) 3))"
B = "(and (lt (var x -20 20) 0) (lt (var y 0 9) 7))"


POSITIVE = [
    # where_bound_patterns
    ("where_cond_true", f"(where (lt (var s 0 3) 5) {X} {Y})", X),
    ("where_cond_false", f"(where (lt (var s 5 9) 5) {X} {Y})", Y),
    ("where_cond_true", f"(where (and (lt (var s 0 3) 5) (lt (var s 0 3) 4)) {X} {Y})", X),
    ("fold_const_by_bounds", "(var x 3 3)", "3"),
    ("fold_const_by_bounds", "(shr (var x 0 7) 3)", "0"),
    ("fold_const_by_bounds", "(special lidx 1)", "0"),
    # dce_dsl_patterns (Morok's WHERE rules)
    ("where_same_branches", f"(where {A} {X} {X})", X),
    ("where_true_false", f"(where {A} true false)", A),
    ("where_false_true", f"(where {A} false true)", f"(not {A})"),
    ("where_not_flip", f"(where (not {A}) {X} {Y})", f"(where {A} {Y} {X})"),
    ("where_same_cond_true", f"(where {A} (where {A} {X} 3) {Y})", f"(where {A} {X} {Y})"),
    ("where_same_cond_false", f"(where {A} 0 (where {A} 1 {Y}))", f"(where {A} 0 {Y})"),
    ("where_nested_merge", f"(where {A} (where {B} {X} {Y}) {Y})",
     f"(where (and {A} {B}) {X} {Y})"),
    ("where_alu_combine", f"(add (where {A} 2 0) (where {A} 1 5))", f"(where {A} 3 5)"),
    ("where_alu_combine_false", f"(mul (where {A} {X} 2) (where {A} {Y} 3))",
     f"(where {A} (mul {X} {Y}) 6)"),
    ("where_div_combine", f"(idiv (where {A} 7 {X}) (where {A} 2 (var p 1 3)))",
     f"(where {A} 3 (idiv {X} (var p 1 3)))"),
    ("where_add_chain_combine_false", f"(add (add {X} (where {A} {Y} 2)) (where {A} {Y} 3))",
     f"(add {X} (where {A} (mul {Y} 2) 5))"),
    ("where_const_operand", f"(add (where {A} 7 1) 3)", f"(where {A} 10 4)"),
    ("where_ladder_const_operand", f"(mul (where {A} 0 (where {B} 1 2)) 59)",
     f"(where {A} 0 (where {B} 59 118))"),
    ("where_ladder_const_operand", f"(add (where {A} 0 (where {B} 1 2)) -2)",
     f"(where {A} -2 (where {B} -1 0))"),
    ("where_add_chain_combine", f"(add (add {X} (where {A} 2 0)) (where {A} 1 5))",
     f"(add {X} (where {A} 3 5))"),
    # a padded index simplified under its validity (tinygrad's uop_given_valid)
    ("where_gate_given_valid", f"(where (lt {Y} 5) (mod {Y} 5) (invalid))",
     f"(where (lt {Y} 5) {Y} (invalid))"),
    ("where_gate_given_valid", f"(where (lt 0 {X}) (max {X} 1) (invalid))",
     f"(where (lt 0 {X}) {X} (invalid))"),
    ("where_gate_given_valid", f"(where (and (lt {X} 3) (eq {X} 7)) {X} (invalid))", "(invalid)"),
    # a loop index stays its loop: nothing inside a range's END is narrowed
    ("where_gate_given_valid", f"(where (eq {X} 2) (add (range 2 (add {X} 4)) {X}) (invalid))",
     f"(where (eq {X} 2) (add (range 2 (add {X} 4)) 2) (invalid))"),
]

BLOCKED = [
    # the flip would move the Invalid into the true branch (tinygrad symbolic.py:201-202)
    ("where_not_flip", f"(where (not {A}) {X} (invalid))", f"(where (not {A}) {X} (invalid))"),
    # the bounds fold never folds a division that may be by zero
    ("fold_const_by_bounds", "(idiv (var x 0 0) (var y -1 1))", "(idiv 0 (var y -1 1))"),
    # nor a term over one: its bounds hold only where the division is defined
    ("fold_const_by_bounds", "(neg (idiv 1 (var d -1 0)))", "(neg (idiv 1 (var d -1 0)))"),
    ("fold_const_by_bounds", "(add (mod 5 (var d 0 1)) 1)", "(add (mod 5 (var d 0 1)) 1)"),
    # nor swallows an operand that may be Invalid
    ("fold_const_by_bounds", f"(and (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1) 0)",
     f"(and (where (lt {X} 3) (where (lt {X} 0) {Y} (invalid)) 1) 0)"),
    # merging needs the same else-branch node
    ("where_nested_merge", f"(where {A} (where {B} {X} {Y}) (var z 0 9))",
     f"(where {A} (where {B} {X} {Y}) (var z 0 9))"),
    # a divisor that may be 0 is not moved into a branch it was not in
    ("where_div_combine", f"(idiv (where {A} 7 {X}) (where {A} 2 {Y}))",
     f"(idiv (where {A} 7 {X}) (where {A} 2 {Y}))"),
    # combining two WHEREs needs a constant side to fold
    ("where_alu_combine", f"(add (where {A} {X} {Y}) (where {A} {Y} {X}))",
     f"(add (where {A} {X} {Y}) (where {A} {Y} {X}))"),
    # a rung that is not a constant: the constant stays outside
    ("where_ladder_const_operand", f"(mul (where {A} 0 (where {B} {Y} 2)) 59)",
     f"(mul (where {A} 0 (where {B} {Y} 2)) 59)"),
    # nothing the validity says narrows the index
    ("where_gate_given_valid", f"(where (lt {Y} 7) (mod {Y} 5) (invalid))",
     f"(where (lt {Y} 7) (mod {Y} 5) (invalid))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


def test_flip_guard_sees_vectorized_invalid() -> None:
    """Blocked: WHERE(!c, t, VECTORIZE(Invalid, Invalid)) keeps its orientation."""
    from eqsat.ir.dtype import dtypes
    from eqsat.ir.ops import Ops

    c = parse(A)
    cv = UOp(Ops.VECTORIZE, dtypes.bool.vec(2), (c, c)).alu(Ops.NOT)
    t = parse(f"(vectorize {X} {Y})")
    inv = UOp(Ops.VECTORIZE, dtypes.index.vec(2), (UOp.invalid(), UOp.invalid()))
    w = UOp(Ops.WHERE, t.dtype, (cv, t, inv))
    out, st = optimize_baseline(w, "dce_dsl_patterns")
    assert out is w and "where_not_flip" not in st["matches"]
    flipped = UOp(Ops.WHERE, t.dtype, (cv, inv, t))
    out, st = optimize_baseline(flipped, "dce_dsl_patterns")
    assert "where_not_flip" in st["matches"] and out.src[1] is t


# where(c,1,b) + where(c,2,e) -> where(c,3,b+e), also inside a longer sum (Morok's tests):
# the ordered matcher pair by pair (where_alu_combine, where_add_chain_combine), the e-graph
# by default with where_merge_sum (every condition's terms of a sum at once)
C = "(lt (var x 0 10) 5)"
D = "(lt (var y 0 9) 3)"
BV, EV, ZV, WV = "(var b 0 10)", "(var e 0 10)", "(var z 0 9)", "(var w 0 9)"
XV = "(var x 0 10)"
MERGE = [
    (f"(add (where {C} 1 {BV}) (where {C} 2 {EV}))", f"(where {C} 3 (add {BV} {EV}))"),
    (f"(add (add (where {C} 1 {BV}) {ZV}) (where {C} 2 {EV}))",
     f"(add {ZV} (where {C} 3 (add {BV} {EV})))"),
    (f"(add (add (where {C} 1 {BV}) (where {C} 2 {EV})) (where {C} 4 {ZV}))",
     f"(where {C} 7 (add (add {BV} {EV}) {ZV}))"),
    (f"(add (where {C} {BV} 1) (where {C} {EV} 2))", f"(where {C} (add {BV} {EV}) 3)"),
]
# e-graph only: the ordered matcher combines a pair only when it is adjacent in the sum
MERGE_EGRAPH = [
    (f"(add (add (where {C} 1 {BV}) (where {D} 5 {ZV})) (add (where {C} 2 {EV}) "
     f"(where {D} 1 {WV})))",
     f"(add (where {C} 3 (add {BV} {EV})) (where {D} 6 (add {ZV} {WV})))"),
    (f"(add (mul (where {C} 1 {BV}) 2) (where {C} 3 {EV}))",
     f"(where {C} 5 (add (mul {BV} 2) {EV}))"),
]


@pytest.mark.parametrize("text,want", MERGE)
def test_where_merge(text: str, want: str) -> None:
    check_engines(text, want)


@pytest.mark.parametrize("text,want", MERGE_EGRAPH)
def test_where_merge_egraph(text: str, want: str) -> None:
    check_engines(text, want, ("egraph",))


# where_merge_sum itself on a sum (the core, as the e-graph runs it, over UOps): one line a
# case, input and output; None where it does not fire
_W1, _W2 = f"(where {C} 1 {BV})", f"(where {C} 2 {EV})"
SUM_CASES = [
    (f"(add {_W1} {_W2})", f"(where {C} 3 (add {BV} {EV}))"),
    (f"(add (add {_W1} {ZV}) {_W2})", f"(add {ZV} (where {C} 3 (add {BV} {EV})))"),
    (f"(sub {_W1} {_W2})", f"(where {C} -1 (sub {BV} {EV}))"),
    # any branches: a true-constant and a false-constant term of one condition merge
    (f"(add {_W1} (where {C} {EV} 2))", f"(where {C} (add {EV} 1) (add {BV} 2))"),
    # the part both branches share leaves the where; equal branches leave no where
    (f"(add (where {C} {BV} {EV}) (where {C} {EV} {BV}))", f"(add {BV} {EV})"),
    (f"(add (where {C} {BV} 1) (where {C} {EV} {BV}))", f"(add {BV} (where {C} {EV} 1))"),
    # the idiv and mod selects of x // 4 + x % 4 (x in [0, 7]), and the sum's constant
    # into a where left with constant branches
    (f"(add (where {C} 0 1) (where {C} {XV} (add {XV} -4)))", f"(add {XV} (where {C} 0 -3))"),
    (f"(add (add (where {C} 0 1) (where {C} {XV} (add {XV} -4))) 5)",
     f"(add {XV} (where {C} 5 2))"),
    # three terms, two conditions: each condition's own
    (f"(add (add (where {C} {BV} 1) (where {D} {ZV} 3)) (where {C} {EV} 2))",
     f"(add (where {C} (add {BV} {EV}) 3) (where {D} {ZV} 3))"),
    # two conditions, one term each
    (f"(add {_W1} (where {D} 2 {EV}))", None),
    # a branch that may be Invalid is never merged
    (f"(add (where {C} 1 (where {D} {BV} (invalid))) {_W2})", None),
]


@pytest.mark.parametrize("text,want", SUM_CASES)
def test_where_merge_sum_core(text: str, want: str | None) -> None:
    from rules.divmod import UOpCtx, to_lin
    from rules.where import SUM_RULES

    g = parse(text)
    out = SUM_RULES[0].fn(to_lin(g), UOpCtx(g))
    if want is None:
        assert out is None
        return
    got = graph_rewrite(out, rules.matcher("commutative_canonicalization"))
    assert got is canon(want), to_sexpr(out, compact=True)
    assert check_equivalent(g, out)


def test_where_merge_sum_stays_small() -> None:
    """A sum of 32 wheres over one condition: one merge, no cascade of partial merges
    (from the input alone: the baseline's rewrite brings its own partial sums)."""
    from eqsat.api import Budget, optimize

    terms = [f"(where {C} {i + 1} (var v{i} 0 9))" for i in range(32)]
    text = terms[0]
    for t in terms[1:]:
        text = f"(add {text} {t})"
    r = optimize(parse(text), cost_model="reference", budget=Budget(baseline_start=False))
    assert to_sexpr(r.graph, compact=True).count("where") == 1
    assert r.stats["enodes"] < 400, r.stats["enodes"]


def test_narrowing_names_its_variables_from_the_graph_alone() -> None:
    # a fresh variable's name comes from the graph (the first ``__valid<i>`` it does not
    # name), not from the process's history: the same call gives the same names
    from rules.where import narrowing

    valid = parse("(and (lt (var y 0 9) 5) (lt 2 (var z 0 9)))")
    x = parse("(add (add (var __valid0 0 9) (var y 0 9)) (var z 0 9))")
    first = narrowing(valid, x)
    assert first is not None
    assert sorted(v.arg for v in first.values()) == [("__valid1", 0, 4), ("__valid2", 3, 9)]
    for i in range(50):
        UOp.var(f"q{i}", 0, i)  # (other nodes made in between)
    assert narrowing(valid, x) == first
