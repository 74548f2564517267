"""Pictures of UOp graphs: the DOT text, the notebook's SVG and its fallback."""

from __future__ import annotations

import re
import sys

import pytest

import eqsat
from eqsat.ir import viz
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import node_label, parse
from eqsat.ir.uop import UOp

PADDED = """%r = (range 0 48)
(where (and (not (lt (idiv %r 8) 1)) (lt (idiv %r 8) 5))
       (add (mul (add (idiv %r 8) -1) 8) (mod %r 8))
       (invalid))"""


def _nodes_and_edges(dot: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    nodes = dict(re.findall(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"', dot, re.M))
    edges = re.findall(r'^\s*(n\d+) -> (n\d+)(?: \[label="(\d+)"\])?;', dot, re.M)
    return nodes, edges


@pytest.mark.parametrize("text, label", [
    ("(add (var x 0 9) 1)", "add"),
    ("(range 3 4)", "range 3"),
    ("(var x 0 9)", "var x 0 9"),
    ("8", "8"),
    ("(cast i32 (range 0 4))", "cast i32"),
    ("(const i32 5)", "const i32 5"),
    ("(gep (vectorize 1 2) 1)", "gep 1"),
    ("(invalid)", "invalid"),
    ("(special gidx0 16)", "special gidx0"),
    ("(buffer 1 f32 24)", "buffer 1 f32 24"),
])
def test_node_label_is_the_nodes_own_text(text: str, label: str) -> None:
    u = parse(text)
    assert node_label(u.op, u.dtype, u.arg) == label


def test_node_label_of_an_op_without_text_form() -> None:
    assert node_label(Ops.MULHI, dtypes.i32, None) == "mulhi"


def test_uop_dot_has_every_unique_node_and_operand_edge() -> None:
    g = parse(PADDED)
    dot = g.to_dot()
    assert isinstance(dot, str) and isinstance(dot, viz.Dot)
    assert dot.startswith('digraph "uop" {') and dot.rstrip().endswith("}")
    order = g.toposort()
    nodes, edges = _nodes_and_edges(dot)
    assert len(nodes) == len(order)
    assert len(edges) == sum(len(u.src) for u in order)
    ids = {id(u): f"n{i}" for i, u in enumerate(order)}
    for u in order:  # each node's operands, in order, numbered where the order matters
        out = [(d, lab) for s, d, lab in edges if s == ids[id(u)]]
        assert [d for d, _ in out] == [ids[id(s)] for s in u.src]
        numbered = len(u.src) > 1 and u.op not in (Ops.ADD, Ops.MUL, Ops.AND)
        assert [lab for _, lab in out] == ([str(i) for i in range(len(u.src))] if numbered
                                           else [""] * len(u.src))
    assert nodes[ids[id(g)]] == "where"
    assert re.search(rf"{ids[id(g)]} \[[^]]*penwidth=2", dot)  # the root stands out


def test_uop_dot_quotes_labels_and_names_dtypes() -> None:
    g = UOp.var('a"b', 0, 3) + 1
    dot = g.to_dot(name='my "graph"')
    assert 'digraph "my \\"graph\\"" {' in dot
    # a name the text format cannot write: the IR's name and arg, quotes escaped
    assert "label=" + viz.quote("define_var ('a\"b', 0, 3)") in dot
    assert 'a\\"b' in dot
    assert viz.quote('a\\b"c\nd') == '"a\\\\b\\"c\\nd"'
    f = parse("(add (cast i32 (range 0 4)) 1)")
    labels = set(_nodes_and_edges(f.to_dot())[0].values())
    assert "add\\ni32" in labels and "cast i32" in labels and "1" not in labels


def test_svg_where_graphviz_draws_else_dot_text() -> None:
    """The picture where Graphviz is installed; the DOT text where it is not (the project
    does without it): the test runs either way."""
    g = parse(PADDED)
    svg = g._repr_svg_()
    if viz._why_not() is None:
        assert svg is not None and "<svg" in svg and "where" in svg
        assert g.to_dot()._repr_svg_() == svg
    else:
        assert svg is None and g.to_dot()._repr_svg_() is None
        printer = _Printer()
        g.to_dot()._repr_pretty_(printer, False)
        assert "digraph" in printer.out and "no picture" in printer.out


class _Printer:
    def __init__(self) -> None:
        self.out = ""

    def text(self, s: str) -> None:
        self.out += s


@pytest.mark.parametrize("missing", ["package", "program"])
def test_without_graphviz_the_text_and_a_hint(monkeypatch: pytest.MonkeyPatch,
                                              missing: str) -> None:
    if missing == "package":
        monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz fails
    else:
        monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    g = parse(PADDED)
    dot = g.to_dot()
    assert dot._repr_svg_() is None and g._repr_svg_() is None
    p = _Printer()
    dot._repr_pretty_(p, False)
    hint, _, rest = p.out.partition("\n")
    assert hint.startswith("(no picture: ") and "graphviz" in hint
    assert ("package" in hint) == (missing == "package")
    assert rest == dot
    with pytest.raises(RuntimeError, match="no picture"):
        dot.svg()


def test_a_big_graph_shows_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(viz, "MAX_PICTURE_NODES", 5)
    g = parse(PADDED)
    assert len(g.toposort()) > 5 and g._repr_svg_() is None
    small = eqsat.parse("(add (var x 0 3) 1)")
    if viz._why_not() is None:
        assert small._repr_svg_() is not None
