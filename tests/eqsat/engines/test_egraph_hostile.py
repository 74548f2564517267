"""Hostile but valid input: every result prints, and no valid input makes the e-graph
fail (regression cases from the budgets issue, and random graphs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.api import Budget, optimize
from eqsat.cli import main
from eqsat.engines.egraph import session_for
from eqsat.ir.dtype import dtypes
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import has_text_form, parse, to_sexpr
from eqsat.ir.uop import UOp
from tests.strategies import fixed_width_exprs, int_exprs, padded_index_exprs

# a kernel whose loops are all empty: the e-graph made SINK(NOOP) of it, which the text
# format cannot write (the baseline prints (sink))
EMPTY_LOOPS = "(sink (end (store (index (buffer 0 f32 4) (range 0 0)) 1.0) (range 0 0)))"
# one of 20,000 random index expressions: egglog left a row whose child class had no
# e-node at all, and the snapshot stopped with "no finite term"
NO_FINITE_TERM = ("(neg (add (mod (mul (mod (var v0 0 55) 1) 32) 1) "
                  "(mod (idiv (mul (range 1 32) 64) 3) 1)))")


@pytest.fixture(scope="module", autouse=True)
def warm() -> None:
    session_for(None).prepare()


@pytest.mark.parametrize("model", ["default", "reference"])
def test_a_kernel_of_empty_loops_prints(model: str) -> None:
    g = parse(EMPTY_LOOPS)
    r = optimize(g, cost_model=model)
    assert to_sexpr(r.graph) == "(sink)"
    assert optimize(g, engine="baseline").graph is r.graph


def test_the_cli_prints_it(capsys) -> None:
    import io
    import sys

    real = sys.stdin
    sys.stdin = io.StringIO(EMPTY_LOOPS)
    try:
        rc = main(["optimize", "-"])
    finally:
        sys.stdin = real
    out, err = capsys.readouterr()
    assert rc == 0 and out.strip() == "(sink)" and err == ""


def test_an_op_without_text_form_is_not_extracted_when_avoidable() -> None:
    # an end over an empty loop alone: the class holds END and NOOP; only END prints
    g = parse("(end (store (index (buffer 0 f32 4) (range 0 0)) 1.0) (range 0 0))")
    r = optimize(g, cost_model="reference")
    assert all(has_text_form(u.op) for u in r.graph.toposort())
    assert not has_text_form(Ops.NOOP) and has_text_form(Ops.SINK)


@pytest.mark.parametrize("model", ["default", "reference"])
def test_a_row_without_a_finite_term_is_left_out(model: str) -> None:
    g = parse(NO_FINITE_TERM)
    r = optimize(g, cost_model=model)
    assert to_sexpr(r.graph) == "0"
    assert check_equivalent(g, r.graph, samples=300)


def _kernel(draw: st.DrawFn) -> UOp:
    """A kernel: a sink of stores through padded index expressions (an Invalid index is
    a store that does not happen), over their ranges, some loops of zero iterations."""
    stores = []
    for slot in range(draw(st.integers(1, 3))):
        idx = draw(padded_index_exprs(max_depth=2))
        ranges = [u for u in idx.toposort() if u.op is Ops.RANGE]
        if draw(st.booleans()):
            ranges.append(UOp.range(0, 90 + slot))  # an empty loop around the store
        buf = UOp.buffer(slot, dtypes.f32, 4096)
        st_ = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, idx)),
                                            UOp.const(dtypes.f32, 1.0)))
        stores.append(UOp(Ops.END, dtypes.void, (st_, *ranges)) if ranges else st_)
    return UOp(Ops.SINK, dtypes.void, tuple(stores))


@st.composite
def graphs(draw: st.DrawFn) -> UOp:
    kind = draw(st.sampled_from(["int", "padded", "fixed", "kernel"]))
    if kind == "int":
        return draw(int_exprs(max_depth=4))
    if kind == "padded":
        return draw(padded_index_exprs())
    if kind == "fixed":
        return draw(fixed_width_exprs())
    return _kernel(draw)


@settings(max_examples=60)
@given(graphs(), st.sampled_from(["default", "reference"]))
def test_random_graphs_optimize_and_print(g: UOp, model: str) -> None:
    """Any valid graph: the e-graph returns a result no costlier than the input, which
    prints and reads back to itself."""
    text = to_sexpr(g)  # (the input prints: the strategies make valid graphs)
    r = optimize(g, cost_model=model, budget=Budget(seconds=30.0))
    out = to_sexpr(r.graph)
    assert parse(out) is r.graph, (text, out)
    assert r.cost <= r.input_cost
