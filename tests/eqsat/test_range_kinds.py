"""Range kinds (``(range ID END KIND)``, docs/format.md) survive both engines: the kind is
part of the range, opaque to the rules."""

from __future__ import annotations

import pytest

from eqsat import optimize
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.sexpr import parse, to_sexpr
from eqsat.ir.uop import range_id, range_kind


def _unordered(u):
    """``u`` with the operands of every commutative op as a multiset: the engines order a
    sum's operands each in its own way (the baseline by structure), which is not what these
    cases check."""
    src = tuple(_unordered(s) for s in u.src)
    if u.op in GroupOp.Commutative:
        src = tuple(sorted(src, key=repr))
    return (u.op, u.dtype, u.arg, src)


# one line a case: the input, then what the engines make of it (kinds kept)
@pytest.mark.parametrize("text, want", [
    ("(add (idiv (add (mul (range 3 4 upcast) 8) (range 2 4 reduce)) 8) (range 1 5 unroll))",
     "(add (range 3 4 upcast) (range 1 5 unroll))"),
    ("(mod (add (mul (range 0 16 global) 4) (range 1 4 upcast)) 4)", "(range 1 4 upcast)"),
    ("(add (range 0 8 thread) (range 0 8))", "(add (range 0 8 thread) (range 0 8))"),
])
@pytest.mark.parametrize("engine", ["baseline", "egraph"])
def test_engines_keep_kinds(engine, text, want):
    got = optimize(parse(text), engine=engine).graph
    assert _unordered(got) == _unordered(parse(want)), to_sexpr(got)


def test_same_id_different_kinds_are_different_ranges():
    a, b = parse("(range 3 8 upcast)"), parse("(range 3 8)")
    assert a is not b and range_id(a) == range_id(b) == 3
    assert (range_kind(a), range_kind(b)) == ("upcast", "loop")
    assert a.op is Ops.RANGE and (a.vmin, a.vmax) == (b.vmin, b.vmax) == (0, 7)
