"""Invalid propagation, merging, dead loads/stores (docs/rules.md, seed 000 §13).

One line per case; guarded rows have a blocked case. Every rewrite keeps the
Invalid set exactly (eqsat.check_equivalent).
"""

from __future__ import annotations

import rules
from eqsat import parse
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.uop import UOp
from tests.rules._cases import blocked_test, engines_test, never, noop_test, rewrite_test, simp

X = "(var x -20 20)"
Y = "(var y 0 9)"
C = "(lt (var x -20 20) 5)"
D = "(lt (var y 0 9) 7)"
P = f"(where {C} {X} (invalid))"           # a padded index
BUF = "(buffer 0 f32 64)"


POSITIVE = [
    # propagate_invalid
    ("invalid_where_merge", f"(where {D} {P} (invalid))", f"(where (and {D} {C}) {X} (invalid))"),
    ("where_invalid_to_false", f"(where {C} (invalid) {X})", f"(where (lt 4 {X}) {X} (invalid))"),
    ("invalid_into_cast", f"(cast i32 {P})", f"(where {C} (cast i32 {X}) (cast i32 (invalid)))"),
    ("invalid_into_unary", f"(neg {P})", f"(where {C} (neg {X}) (invalid))"),
    ("invalid_into_binary_left", f"(add {P} {Y})", f"(where {C} (add {X} {Y}) (invalid))"),
    ("invalid_into_binary_left", f"(idiv {P} 4)", f"(where {C} (idiv {X} 4) (invalid))"),
    ("invalid_into_binary_right", f"(mul 0 {P})", f"(where {C} 0 (invalid))"),  # seed 000 §13
    ("invalid_into_binary_right", f"(sub {Y} {P})", f"(where {C} (sub {Y} {X}) (invalid))"),
    ("invalid_into_cmp_left", f"(eq {P} {Y})", f"(where {C} (eq {X} {Y}) (cast bool (invalid)))"),
    ("invalid_into_cmp_right", f"(ne {Y} {P})",
     f"(where {C} (ne {Y} {X}) (cast bool (invalid)))"),
    ("invalid_into_where_cond", f"(where (where {C} (eq {X} {Y}) (cast bool (invalid))) 1 2)",
     f"(where {C} (where (eq {X} {Y}) 1 2) (invalid))"),
    ("invalid_bare_left", f"(add (invalid) {Y})", "(invalid)"),
    ("invalid_bare_right", f"(mul {Y} (invalid))", "(invalid)"),
    ("invalid_bare_unary", "(neg (invalid))", "(invalid)"),
    ("invalid_bare_unary", "(sqrt (cast f32 (invalid)))", "(cast f32 (invalid))"),
    ("invalid_bare_unary", "(not (cast i32x2 (invalid)))", "(cast i32x2 (invalid))"),
    ("invalid_bare_cast", "(cast f32 (cast i32 (invalid)))", "(cast f32 (invalid))"),
    ("invalid_bare_cast", "(cast i8x2 (cast f32x2 (invalid)))", "(cast i8x2 (invalid))"),
    ("invalid_bare_bitcast", "(bitcast f32 (cast i32 (invalid)))", "(cast f32 (invalid))"),
    ("invalid_bare_bitcast", "(bitcast u16x3 (cast f16x3 (invalid)))", "(cast u16x3 (invalid))"),
    ("vectorize_of_invalid", "(vectorize (invalid) (invalid))", "(cast indexx2 (invalid))"),
    ("vectorize_of_invalid", "(vectorize (cast f32 (invalid)) (cast f32 (invalid)) (cast f32 "
     "(invalid)))", "(cast f32x3 (invalid))"),
    # two padded indices combined: the gates merge
    ("invalid_where_merge", f"(add {P} (mul (where {D} {Y} (invalid)) 3))",
     f"(where (and {C} {D}) (add {X} (mul {Y} 3)) (invalid))"),
]

BLOCKED = [
    # seed 000's WHERE(c1, WHERE(c2, x, Inv), y) -> WHERE(c1 & c2, x, y) is not done: it would
    # make the index valid (y) where c1 & !c2
    ("invalid_where_merge", f"(where {D} {P} {Y})", f"(where {D} {P} {Y})"),
    # an Invalid false branch stays (the other rules look there)
    ("where_invalid_to_false", f"(where {C} (invalid) (invalid))", "(invalid)"),
    # a bare Invalid does not absorb a non-index operation
    ("invalid_bare_left", f"(add (cast i32 (invalid)) (cast i32 {Y}))",
     f"(add (cast i32 (invalid)) (cast i32 {Y}))"),
    # a vector with one valid lane is not a vector Invalid
    ("vectorize_of_invalid", f"(vectorize (invalid) {Y})", f"(vectorize (invalid) {Y})"),
    # ... unless its lanes fold to one Invalid first
    ("vectorize_of_invalid", "(vectorize (invalid) (cast index (cast i32 (invalid))))",
     "(cast indexx2 (invalid))"),
]


test_rewrites = rewrite_test(POSITIVE)


test_blocked = blocked_test(BLOCKED)


LOADS = [
    # fold_invalid_load_store: a load through an Invalid index reads nothing and yields 0
    ("load_invalid_index", f"(load (index {BUF} (invalid)))", "0.0"),
    ("load_alt_invalid_index", f"(load (index {BUF} (invalid)) 2.0)", "2.0"),
    ("load_invalid_index", f"(load (index {BUF} (where (lt {Y} 0) {Y} (invalid))))", "0.0"),
    ("index_gate_true", f"(load (index {BUF} {Y} true))", f"(load (index {BUF} {Y}))"),
    ("load_gate_false", f"(load (index {BUF} {Y} false))", "0.0"),
    ("load_alt_gate_false", f"(load (index {BUF} {Y} false) 3.0)", "3.0"),
]


test_dead_loads = rewrite_test(LOADS, expect=parse, equiv=never)


STORES = [
    ("store_invalid_index", f"(store (index {BUF} (invalid)) 1.0)"),
    ("store_gate_false", f"(store (index {BUF} {Y} false) 1.0)"),
    ("store_invalid_index", f"(store (index {BUF} (where (lt {Y} 0) {Y} (invalid))) 1.0)"),
]


test_dead_stores = noop_test(STORES)


def test_through_cast_of_invalid_index() -> None:
    from eqsat.ir.dtype import dtypes
    from eqsat.ir.ops import Ops

    buf = UOp.buffer(0, dtypes.f32, 64)
    ix = UOp(Ops.INDEX, buf.dtype, (buf, UOp.invalid())).cast(dtypes.i32.ptr_to())
    ld = UOp(Ops.LOAD, dtypes.i32, (ix,))
    out, st = optimize_baseline(ld)
    assert out is UOp.const(dtypes.i32, 0) and "load_cast_invalid_index" in st["matches"]
    out, st = optimize_baseline(UOp(Ops.STORE, dtypes.void, (ix, UOp.const(dtypes.i32, 1))))
    assert out.op is Ops.NOOP and "store_cast_invalid_index" in st["matches"]


def test_store_through_valid_index_stays() -> None:
    text = f"(store (index {BUF} (where (lt {Y} 5) {Y} (invalid))) 1.0)"
    _, out, _ = simp(text)
    assert out is parse(text)


def test_propagation_runs_first() -> None:
    names = [r.name for r in rules.all_rules()]
    first = {r.name for r in rules.groups()["propagate_invalid"]}
    assert set(names[:len(first)]) == first
    assert rules.SIMPLE_GROUPS[0] == "propagate_invalid"


# both engines: a bare Invalid absorbs index arithmetic
ENGINES = [
    ("invalid_bare_left", "(mul (invalid) 2)", "(invalid)"),
    ("invalid_bare_left", "(add (invalid) (var a 0 10))", "(invalid)"),
    ("invalid_bare_right", "(idiv (var a 0 10) (invalid))", "(invalid)"),
    ("invalid_bare_left", "(add (mul (invalid) 2) (var a 0 10))", "(invalid)"),
    ("invalid_bare_unary", "(neg (invalid))", "(invalid)"),
    ("invalid_bare_unary", "(add (neg (invalid)) (var a 0 10))", "(invalid)"),
    ("invalid_bare_unary", "(exp2 (cast f32 (invalid)))", "(cast f32 (invalid))"),
    ("invalid_bare_cast", "(cast f32 (cast i32 (invalid)))", "(cast f32 (invalid))"),
    ("invalid_bare_cast", "(cast i32x2 (cast f32x2 (invalid)))", "(cast i32x2 (invalid))"),
    ("invalid_bare_bitcast", "(bitcast f32 (cast i32 (invalid)))", "(cast f32 (invalid))"),
    ("vectorize_of_invalid", "(vectorize (invalid) (invalid) (invalid))",
     "(cast indexx3 (invalid))"),
    ("vectorize_of_invalid", "(add (vectorize (invalid) (invalid)) (vectorize (var a 0 10) 2))",
     "(cast indexx2 (invalid))"),
]

test_engines = engines_test(ENGINES)
