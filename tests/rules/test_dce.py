"""Dead ranges, reductions, END and AFTER (docs/rules.md, seed 000 §14). One line per case.

An END runs its body once per value of its ranges: a single-iteration range
folds to 0 and leaves the END; a range with no iteration makes the END a NOOP
(seed 000's RANGE(empty) -> CONST(0) is deliberately not done, see rules/dce.py).
"""

from __future__ import annotations

import numpy as np

from eqsat import parse
from eqsat.ir.interp import run_kernel
from eqsat.ir.ops import Ops
from tests.rules._cases import never, noop_test, rewrite_test, simp

BUF = "(buffer 0 f32 8)"
X = "(var x -20 20)"


POSITIVE = [
    ("range_single_iteration", f"(add (range 0 1) {X})", X),
    ("end_drop_folded_ranges", f"(end (store (index {BUF} (range 0 1)) 1.0) (range 0 1))",
     f"(store (index {BUF} 0) 1.0)"),
    ("end_drop_folded_ranges", f"(end (store (index {BUF} (add (range 0 1) (range 1 8))) 1.0) "
     "(range 0 1) (range 1 8))", f"(end (store (index {BUF} (range 1 8)) 1.0) (range 1 8))"),
    ("reduce_drop_folded_ranges", f"(reduce add (add {X} (range 0 1)) (range 0 1))", X),
    # a float sum folds from +0.0: its one -0.0 term comes out +0.0
    ("reduce_drop_folded_ranges", f"(reduce add (mul (cast f32 {X}) -0.0) (range 0 1))",
     f"(add (mul (cast f32 {X}) -0.0) 0.0)"),
    ("reduce_drop_folded_ranges", "(reduce max (add (range 1 4) (range 0 1)) (range 0 1) "
     "(range 1 4))", "(reduce max (range 1 4) (range 1 4))"),
    ("reduce_empty_range", f"(reduce add {X} (range 0 0))", "0"),
    ("reduce_empty_range", f"(reduce mul (cast f32 {X}) (range 1 4) (range 0 0))", "1.0"),
    ("reduce_empty_range", f"(reduce max (cast i8 {X}) (range 0 0))", "(const i8 -128)"),
    ("reduce_empty_range", f"(reduce min (cast u16 {X}) (range 0 0))", "(const u16 65535)"),
    ("after_no_deps", f"(after {X})", X),
]


test_rewrites = rewrite_test(POSITIVE, expect=parse, equiv=never)


NOOPS = [
    ("end_empty_range", f"(end (store (index {BUF} (range 0 0)) 1.0) (range 0 0))"),
    ("end_empty_range", f"(end (store (index {BUF} (range 1 4)) 1.0) (range 1 4) (range 0 0))"),
    ("end_of_noop", f"(end (store (index {BUF} (invalid)) 1.0) (range 0 4))"),
]


test_dead_ends = noop_test(NOOPS)


def test_sink_drops_noops() -> None:
    store = f"(store (index {BUF} 3) 1.0)"
    _, out, matches = simp(f"(sink (end (store (index {BUF} (invalid)) 2.0) (range 0 4)) {store})")
    assert "sink_drop_noop" in matches and out is parse(f"(sink {store})")


def test_after_drops_noop_dependency() -> None:
    _, out, matches = simp(f"(after {X} (store (index {BUF} (invalid)) 1.0))")
    assert "after_drop_noop" in matches and out is parse(X)


def test_empty_range_is_not_a_constant() -> None:
    """Blocked: an empty RANGE stays a RANGE, so its END still runs zero times."""
    _, out, matches = simp("(range 0 0)")
    assert out is parse("(range 0 0)") and not matches


def test_empty_loop_runs_zero_times() -> None:
    """The END over an empty range writes nothing, before and after the rewrite."""
    text = f"(sink (end (store (index {BUF} (range 0 0)) 1.0) (range 0 0)))"
    g, out, _ = simp(text)
    assert out is parse("(sink)") or out.op is Ops.SINK and not out.src
    for graph in (g, out):
        buf = np.zeros(8, dtype=np.float32)
        run_kernel(graph, [buf])
        assert not buf.any()


def test_reduce_max_of_index_keeps_empty_range() -> None:
    """Blocked: index has no lowest value to be MAX's identity."""
    text = f"(reduce max {X} (range 0 0))"
    _, out, matches = simp(text)
    assert "reduce_empty_range" not in matches and out is parse(text)
