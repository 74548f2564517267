"""Pictures of graphs: DOT text, drawn as SVG through the ``graphviz`` package.

:func:`uop_dot` writes a UOp DAG in Graphviz's DOT language (``UOp.to_dot()`` calls
it): one box per unique node, labelled with its part of the ``.uop`` text
(:func:`eqsat.ir.sexpr.node_label`), its dtype when it is not ``index``, and an edge
to each operand (numbered when the op does not commute). The text is a :class:`Dot`,
a ``str`` that a notebook shows as a picture: drawing needs the ``graphviz`` Python
package (the ``viz`` extra) and Graphviz's ``dot`` program; without them a notebook
shows the DOT text under a one-line hint, and nothing fails.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from typing import Any

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp

__all__ = ["Dot", "uop_dot", "quote", "node_text", "operand_labels", "render_svg",
           "MAX_PICTURE_NODES"]

#: a UOp shown in a notebook is drawn only up to this many unique nodes (a larger
#: graph makes a picture nobody can read, and ``dot`` takes seconds on it): beyond,
#: the notebook shows its text
MAX_PICTURE_NODES = 400

_HINT = ("no picture: {why}; `pip install graphviz` (the viz extra) and Graphviz's "
         "`dot` program (e.g. `apt-get install graphviz`) draw it")


def quote(text: str) -> str:
    """``text`` as a DOT string literal (quotes and backslashes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _why_not() -> str | None:
    """Why a picture cannot be drawn here (None: it can)."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return "the graphviz Python package is not installed"
    if shutil.which("dot") is None:
        return "Graphviz's `dot` program is not on PATH"
    return None


def render_svg(source: str) -> str:
    """The SVG picture of DOT ``source`` (``dot -Tsvg`` through the graphviz package).
    Raises RuntimeError naming what is missing when it cannot be drawn."""
    why = _why_not()
    if why is not None:
        raise RuntimeError(_HINT.format(why=why))
    import graphviz

    try:
        return graphviz.Source(source).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise RuntimeError(_HINT.format(why="Graphviz's `dot` program was not found")) from None
    except graphviz.CalledProcessError as e:
        raise RuntimeError(f"dot could not draw the graph: {e}") from None


class Dot(str):
    """DOT text. A ``str`` in every way (write it to a file, pass it to ``dot``), that
    a notebook shows as its picture (:meth:`svg`), or, when that cannot be drawn, as the
    text under a one-line hint saying what to install."""

    __slots__ = ()

    def svg(self) -> str:
        """The picture as SVG text (RuntimeError naming what is missing if none)."""
        return render_svg(self)

    def _repr_svg_(self) -> str | None:
        try:
            return self.svg()
        except RuntimeError:
            return None  # the notebook falls back to the text (_repr_pretty_)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        why = _why_not()
        p.text((f"({_HINT.format(why=why)})\n" if why else "") + str(self))


def _dtype_line(dt: DType) -> str:
    return "" if dt in (dtypes.index, dtypes.bool, dtypes.void) else f"\n{dt}"


def node_text(op: Ops, dtype: DType, arg: Any) -> str:
    """A picture's label of one node: its part of the ``.uop`` text, and its dtype on a
    second line unless it is ``index``, ``bool`` or ``void`` (an ``i32`` add, an
    ``f32`` load)."""
    from eqsat.ir.sexpr import node_label

    label = node_label(op, dtype, arg)
    if op is Ops.CONST or op in (Ops.CAST, Ops.BITCAST) or op is Ops.DEFINE_GLOBAL:
        return label  # the text names the dtype already
    return label + _dtype_line(dtype)


def _shape(op: Ops) -> str:
    return "ellipse" if op in GroupOp.Leaf or op in (Ops.RANGE, Ops.SPECIAL) else "box"


def operand_labels(op: Ops, n: int) -> Iterable[str]:
    """Each operand edge's label: its position, where the order matters (the op does
    not commute and has more than one operand), else none."""
    if n > 1 and op not in GroupOp.Commutative:
        return [str(i) for i in range(n)]
    return [""] * n


def uop_dot(root: UOp, name: str = "uop") -> Dot:
    """The DAG of ``root`` as DOT text: each unique node once, the root at the top,
    edges from a node to its operands (see the module docstring)."""
    if not isinstance(root, UOp):
        raise TypeError(f"uop_dot expects a UOp, got {type(root).__name__}")
    order = root.toposort()
    ids = {id(u): f"n{i}" for i, u in enumerate(order)}
    lines = [f"digraph {quote(name)} {{",
             '  node [fontname="Helvetica", fontsize=11, style=filled, fillcolor=white];',
             '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];']
    for u in order:
        attrs = f"label={quote(node_text(u.op, u.dtype, u.arg))}, shape={_shape(u.op)}"
        if u is root:
            attrs += ", penwidth=2"
        lines.append(f"  {ids[id(u)]} [{attrs}];")
    for u in order:
        for s, lab in zip(u.src, operand_labels(u.op, len(u.src)), strict=True):
            extra = f" [label={quote(lab)}]" if lab else ""
            lines.append(f"  {ids[id(u)]} -> {ids[id(s)]}{extra};")
    lines.append("}")
    return Dot("\n".join(lines) + "\n")
