"""Cast folding and cast pushing into WHERE (docs/rules.md, seed 000 §6).

``can_safe_cast(src, dst)`` (eqsat.ir.dtype) holds when ``dst`` preserves every
value of ``src``. ``CAST(CAST(x, a), b)`` folds only through an ``a`` that
keeps every value ``x`` can take: ``CAST(CAST(x, i8), i64)`` with ``x: i64``
stays (the i8 truncation is observable).
"""

from __future__ import annotations

import math
from typing import Any

from eqsat.ir.dtype import DType, can_safe_cast
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.semantics import EvalError, Undefined, bitcast, cast
from eqsat.ir.uop import UOp
from rules.common import CONSTS, is_invalid, make_const
from rules.computed import PyRule, bridge

__all__ = ["GROUPS", "cast_value"]

_X = UPat.var("x")


def cast_value(v: Any, src: DType, dst: DType) -> Any:
    """C's conversion of the scalar ``v`` of ``src`` to ``dst``
    (:func:`eqsat.ir.semantics.cast`); None if undefined.

    Float to integer truncates toward zero and is undefined for NaN, infinities
    and values out of the target's range; integer narrowing wraps.
    """
    try:
        out = cast(v, src.scalar(), dst.scalar())
    except EvalError:
        return None
    return None if isinstance(out, Undefined) else out


def _cast_const(c: UOp, root: UOp) -> UOp | None:
    if c.op is Ops.VCONST:
        vals = [cast_value(v, c.dtype, root.dtype) for v in c.arg]
        return None if any(v is None for v in vals) else make_const(root.dtype, tuple(vals))
    v = cast_value(c.arg, c.dtype, root.dtype)
    return None if v is None else make_const(root.dtype, v)


def _bitcast_const(c: UOp, root: UOp) -> UOp | None:
    src, dst = c.dtype.scalar(), root.dtype.scalar()
    if c.dtype.count != root.dtype.count or src.itemsize != dst.itemsize:
        return None
    vals = c.arg if c.op is Ops.VCONST else (c.arg,)
    try:
        out = [bitcast(v, src, dst) for v in vals]
    except EvalError:
        return None
    if any(isinstance(v, float) and math.isnan(v) for v in out):
        return None  # NaN payloads are not kept by constants
    return make_const(root.dtype, tuple(out) if c.op is Ops.VCONST else out[0])


def _fits_in(x: UOp, a: DType) -> bool:
    """Every value of integer ``x`` is a value of integer dtype ``a``."""
    if not (x.dtype.is_int and a.is_int) or math.isinf(x.vmin) or math.isinf(x.vmax):
        return False
    return a.scalar().min <= x.vmin and x.vmax <= a.scalar().max


G = "cast_dsl_patterns"
cast_dsl_patterns = [
    Rule("cast_const", "CAST(c, T) -> CONST(T(c)) (C conversion; undefined casts kept)",
         UPat(Ops.CAST, src=(UPat(CONSTS, name="c"),), name="root"),
         build=_cast_const, guard=lambda c, root: _cast_const(c, root) is not None),
    Rule("cast_noop", "CAST(x, T) -> x when x has dtype T",
         UPat(Ops.CAST, src=(_X,), name="root"), build=lambda x: x,
         guard=lambda x, root: x.dtype == root.dtype),
    Rule("bitcast_noop", "BITCAST(x, T) -> x when x has dtype T",
         UPat(Ops.BITCAST, src=(_X,), name="root"), build=lambda x: x,
         guard=lambda x, root: x.dtype == root.dtype),
    Rule("bitcast_const", "BITCAST(c, T) -> CONST(bits of c read as T) (same size)",
         UPat(Ops.BITCAST, src=(UPat(CONSTS, name="c"),), name="root"),
         build=_bitcast_const, guard=lambda c, root: _bitcast_const(c, root) is not None),
    Rule("cast_cast_roundtrip", "CAST(CAST(x, a), b) -> x when x: b and a holds every b",
         UPat(Ops.CAST, src=(UPat(Ops.CAST, src=(_X,), name="a"),), name="b"),
         build=lambda x: x,
         guard=lambda x, a, b: x.dtype == b.dtype and can_safe_cast(x.dtype, a.dtype)),
    Rule("cast_cast_widen", "CAST(CAST(x, a), b) -> CAST(x, b) when a holds every x",
         UPat(Ops.CAST, src=(UPat(Ops.CAST, src=(_X,), name="a"),), name="b"),
         build=lambda x, b: x.cast(b.dtype),
         guard=lambda x, a: can_safe_cast(x.dtype, a.dtype)),
    Rule("cast_cast_in_range", "CAST(CAST(x, a), b) -> CAST(x, b) when a holds x's range "
         "(integers)",
         UPat(Ops.CAST, src=(UPat(Ops.CAST, src=(_X,), name="a"),), name="b"),
         build=lambda x, b: x.cast(b.dtype), guard=lambda x, a: _fits_in(x, a.dtype)),
]

GW = "cast_where_dsl_patterns"
cast_where_dsl_patterns = [
    Rule("cast_into_where", "CAST(WHERE(s, a, b), T) -> WHERE(s, CAST(a, T), CAST(b, T)) "
         "when neither branch is Invalid",
         UPat(Ops.CAST, src=(UPat(Ops.WHERE, src=(UPat.var("s"), UPat.var("a"),
                                                   UPat.var("b"))),), name="root"),
         build=lambda s, a, b, root: UOp(Ops.WHERE, root.dtype,
                                         (s, a.cast(root.dtype), b.cast(root.dtype))),
         guard=lambda a, b: not is_invalid(a) and not is_invalid(b)),
]

GROUPS: dict[str, list[Rule]] = {G: cast_dsl_patterns, GW: cast_where_dsl_patterns}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g


# ---- e-graph rules ------------------------------------------------------------
# No native egglog twin yet: the e-graph applies each of these baseline rules on its own
# (never through the ordered matcher) to the e-nodes of the ops it names, read as UOps
# over their classes' cheapest terms, and unions its result (eqsat.engines.egraph.computed.bridge).

EGRAPH: dict[str, list[PyRule]] = {G: bridge(cast_dsl_patterns, G),
                                   GW: bridge(cast_where_dsl_patterns, GW)}
