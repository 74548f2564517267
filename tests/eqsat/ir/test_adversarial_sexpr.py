"""Adversarial cases of the text format (docs/format.md): graphs the engines make print
and read back as the same nodes (``parse(to_sexpr(g)) is g``)."""

from __future__ import annotations

import pytest

import eqsat
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import ParseError, parse, to_sexpr

ENGINES = ["baseline", "egraph"]


# one line a case: the text, its dtype (the Invalid of a vector dtype: each lane Invalid)
@pytest.mark.parametrize("text, dtype", [
    ("(cast indexx2 (invalid))", "indexx2"),
    ("(cast i32x3 (invalid))", "i32x3"),
    ("(where (vectorize true false) (vectorize 1 2) (cast indexx2 (invalid)))", "indexx2"),
])
def test_reads_back(text: str, dtype: str) -> None:
    g = parse(text)
    assert str(g.dtype) == dtype and parse(to_sexpr(g)) is g


# one line a case: text the parser refuses, the message
@pytest.mark.parametrize("text, msg", [
    ("(cast i32x2 (var x 0 3))", "cannot change the vector width"),
    ("(bitcast i32x2 (invalid))", "cannot change the vector width"),
])
def test_refused(text: str, msg: str) -> None:
    with pytest.raises(ParseError, match=msg):
        parse(text)


# one line a case: an input whose optimized graph holds a vector Invalid
@pytest.mark.parametrize("text", [
    "(where (lt (where (ne (var x -3 3) 0) (var x -3 3) (invalid)) 1) (vectorize (var x -3 3) 1) "
    "(vectorize 2 3))",
])
@pytest.mark.parametrize("engine", ENGINES)
def test_engine_output_reads_back(text: str, engine: str) -> None:
    g = parse(text)
    out = eqsat.optimize(g, engine=engine).graph
    assert parse(to_sexpr(out)) is out
    assert check_equivalent(g, out).equivalent
