"""A range or special of END 0 or less (an empty loop, as C's ``for`` runs it) is
consistent everywhere: the parser keeps it, a kernel runs it no time (interpreter, both
engines, compiled C), a bare expression of it has no value."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
from eqsat import EvalError, evaluate, parse, run_kernel
from lowering import LoweringError, compile_kernel

ENGINES = ["baseline", "egraph"]


# one line a case: the text, then its bounds (vmin, vmax)
@pytest.mark.parametrize("text, lo, hi", [
    ("(range 0 0)", 0, -1),
    ("(special g 0)", 0, -1),
    ("(range 0 (var n 0 0))", 0, -1),
    ("(range 0 (var n -3 4))", 0, 3),  # END may be 0 or less: the loop may be empty
    ("(range 0 1)", 0, 0),
    ("(range 0 -5)", 0, -6),
    ("(range 0 (const i32 -2))", 0, -3),
    ("(range 3 (add (var n -9 -3) 1))", 0, -3),
    ("(special g -1)", 0, -2),
    ("(special g (var n -4 -1))", 0, -2),
])
def test_end_zero_parses(text: str, lo: int, hi: int) -> None:
    g = parse(text)
    assert (g.vmin, g.vmax) == (lo, hi)
    assert parse(eqsat.to_sexpr(g)) is g


# one line a case: a bare expression over an empty range: no value at any point
@pytest.mark.parametrize("text, env", [
    ("(add (range 0 0) 1)", {"R0": 0}),
    ("(special g 0)", {"g": 0}),
    ("(add (mod (range 0 0) 3) 1)", {"R0": 0}),
    ("(add (range 0 -5) 1)", {"R0": 0}),
    ("(special g -1)", {"g": 0}),
])
def test_expression_of_an_empty_range_has_no_value(text: str, env: dict) -> None:
    g = parse(text)
    with pytest.raises(EvalError, match=r"outside \[0, -\d+\]"):
        evaluate(g, env)
    for engine in ENGINES:
        out = eqsat.optimize(g, engine=engine).graph
        assert eqsat.check_equivalent(g, out).equivalent
    with pytest.raises(LoweringError, match="has no value"):
        compile_kernel(g, optimize=False, compile=False)


OUT = "(buffer 0 f32 4)"


# one line a case: a kernel with an empty loop; the compiled C gives the interpreter's answer
@pytest.mark.parametrize("text, variables", [
    (f"(sink (end (store (index {OUT} (range 0 0)) 1.0) (range 0 0)))", {}),
    (f"(sink (end (store (index {OUT} (mod (range 0 0) 3)) 1.0) (range 0 0)))", {}),
    (f"(sink (end (store (index {OUT} (range 1 4)) (cast f32 (reduce add (mod (range 0 0) 3) "
     "(range 0 0)))) (range 1 4)))", {}),
    (f"(sink (end (store (index {OUT} (range 1 4)) (cast f32 (reduce add (idiv (range 0 (var n 0 "
     "0)) 3) (range 0 (var n 0 0))))) (range 1 4)))", {"n": 0}),
    (f"(sink (end (store (index {OUT} (range 1 4)) (cast f32 (reduce add (range 0 (var n -3 4)) "
     "(range 0 (var n -3 4))))) (range 1 4)))", {"n": -2}),
    (f"(sink (end (store (index {OUT} (add (mod (range 0 0 upcast) 4) 1)) 1.0) "
     "(range 0 0 upcast)))", {}),
    (f"(sink (store (index {OUT} (special g 0)) 1.0))", {}),
    (f"(sink (end (store (index {OUT} (range 0 -3)) 1.0) (range 0 -3)))", {}),
])
@pytest.mark.parametrize("optimize", [False, *ENGINES])
def test_kernel_with_an_empty_loop(text: str, variables: dict, optimize, tmp_path_factory
                                   ) -> None:
    g = parse(text)
    want = run_kernel(g, [np.full(4, 7.0, np.float32)], variables or None)[0]
    got = np.full(4, 7.0, np.float32)
    compile_kernel(g, optimize=optimize, cache_dir=tmp_path_factory.getbasetemp() / "k")(
        got, **variables)
    np.testing.assert_array_equal(got, want)
