"""Cast folding and cast pushing into WHERE (docs/rules.md, seed 000 §6).

``can_safe_cast(src, dst)`` (eqsat.ir.dtype) holds when ``dst`` preserves every
value of ``src``. ``CAST(CAST(x, a), b)`` folds only through an ``a`` that
keeps every value ``x`` can take: ``CAST(CAST(x, i8), i64)`` with ``x: i64``
stays (the i8 truncation is observable).
"""

from __future__ import annotations

import math
from typing import Any

from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.semantics import EvalError, Undefined, bitcast, cast
from eqsat.ir.uop import UOp
from rules.common import CONSTS, make_const
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS", "cast_value"]

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


G = "cast_dsl_patterns"
GW = "cast_where_dsl_patterns"
_FOLD = ("constant folding is Python (C's conversion of a value): integer and bool "
         "casts fold through the interval analysis (fold_const_by_bounds), the others here")
_SRC_DT = ("reads the dtype of the cast's operand, which no e-graph constructor of the "
           "pattern carries (a class's e-nodes of every op: the dtype is a field of each)")

LAWS = [
    py(Rule("cast_const", "CAST(c, T) -> CONST(T(c)) (C conversion; undefined casts kept)",
            UPat(Ops.CAST, src=(UPat(CONSTS, name="c"),), name="root"),
            build=_cast_const, guard=lambda c, root: _cast_const(c, root) is not None, group=G),
       "ematch_nonint", _FOLD),
    rule("cast_noop", "cast(x, T) -> x", "dtype(x) == T", group=G, native=_SRC_DT),
    rule("bitcast_noop", "bitcast(x, T) -> x", "dtype(x) == T", group=G, native=_SRC_DT),
    py(Rule("bitcast_const", "BITCAST(c, T) -> CONST(bits of c read as T) (same size)",
            UPat(Ops.BITCAST, src=(UPat(CONSTS, name="c"),), name="root"),
            build=_bitcast_const, guard=lambda c, root: _bitcast_const(c, root) is not None,
            group=G),
       "ematch", "the bits of a constant are computed in Python (numpy's views)"),
    rule("cast_cast_roundtrip", "cast(cast(x, A), B) -> x", "dtype(x) == B and "
         "safe_cast(dtype(x), A)", group=G, native=_SRC_DT),
    rule("cast_cast_widen", "cast(cast(x, A), B) -> cast(x, B)", "safe_cast(dtype(x), A)",
         group=G, native=_SRC_DT),
    rule("cast_cast_in_range", "cast(cast(x, A), B) -> cast(x, B)",
         "not is_float(x) and is_int(A) and vmin(x) >= dmin(A) and vmax(x) <= dmax(A)",
         group=G, note="integers (and bools): A holds every value x takes"),
    rule("cast_into_where", "cast(where(s, a, b), T) -> where(s, cast(a, T), cast(b, T))",
         "not is_invalid(a) and not is_invalid(b)", group=GW),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
