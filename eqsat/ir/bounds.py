"""Eager value ranges (vmin, vmax) of UOps, sound under C semantics.

``idiv`` truncates toward zero and ``mod`` takes the dividend's sign. Index
arithmetic is exact (unbounded integers); fixed-width integers fall back to
the dtype's full range whenever the exact interval may wrap. Floats are
unbounded unless constant. The interval of each op is :mod:`eqsat.ir.semantics`'s;
this module picks it by op and dtype and fits it to the node's dtype.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.semantics import (
    INDEX_SHIFT_LIMIT,
    compare,
    dtype_bounds,
    exact,
    iv_add,
    iv_bits,
    iv_cast_bool,
    iv_cmp,
    iv_floordiv,
    iv_floormod,
    iv_idiv,
    iv_max,
    iv_min,
    iv_mod,
    iv_mul,
    iv_neg,
    iv_not,
    iv_not_bool,
    iv_shift,
    iv_sub,
    iv_where,
    iv_wrap,
    iv_xor_bool,
    shift_limit,
    unbounded,
)

if TYPE_CHECKING:
    from eqsat.ir.uop import UOp

__all__ = ["compute_bounds", "dtype_bounds", "INDEX_BOUND_CAP"]

Num = int | float
INF = math.inf


def _isnan(v: Num) -> bool:
    return isinstance(v, float) and math.isnan(v)


#: an index bound past this magnitude is taken as unbounded (sound: a wider range).
#: Exact, a bound could grow without limit: each squaring of a product doubles its
#: digits, and a few lines of text made numbers no machine could compute; no index
#: that large is lowered (``lowering.narrow``: i64 at most)
INDEX_BOUND_CAP = 2**128

#: the integer ops whose interval is one function of their operands' intervals
_ARITH = {Ops.ADD: iv_add, Ops.SUB: iv_sub, Ops.MUL: iv_mul, Ops.IDIV: iv_idiv,
          Ops.MOD: iv_mod, Ops.FLOORDIV: iv_floordiv, Ops.FLOORMOD: iv_floormod,
          Ops.MAX: iv_max, Ops.MIN: iv_min}


#: :data:`_ARITH` by the op's value, and the values of the divisions (the fast path of
#: :func:`compute_bounds`)
_ARITH_BY_VALUE = {o._value_: f for o, f in _ARITH.items()}
_INT_DIV_VALUES = frozenset(o._value_ for o in GroupOp.IntDiv)
_INDEX = dtypes.index
_CONST = Ops.CONST  # (a module global: no EnumType lookup per node)


def compute_bounds(op: Ops, dtype: DType, src: tuple[UOp, ...], arg) -> tuple[Num, Num]:
    """(vmin, vmax) of a node from its children's bounds."""
    if dtype is _INDEX and len(src) == 2:
        # index arithmetic over two operands with finite integer bounds (most nodes): the
        # general path's result, without its chain of tests
        iv = _ARITH_BY_VALUE.get(op._value_)
        if iv is not None:
            a, b = src
            alo, ahi, blo, bhi = a.vmin, a.vmax, b.vmin, b.vmax
            if type(alo) is int and type(ahi) is int and type(blo) is int and \
                    type(bhi) is int and (blo or bhi or op._value_ not in _INT_DIV_VALUES):
                lo, hi = iv((alo, ahi), (blo, bhi))
                if type(lo) is int and type(hi) is int and \
                        -INDEX_BOUND_CAP <= lo <= INDEX_BOUND_CAP and \
                        -INDEX_BOUND_CAP <= hi <= INDEX_BOUND_CAP:
                    return lo, hi
    elif type(arg) is int and op is _CONST and dtype is _INDEX:
        return arg, arg  # (an index constant: the general path's first answer)
    return _general_bounds(op, dtype, src, arg)


def _general_bounds(op: Ops, dtype: DType, src: tuple[UOp, ...], arg) -> tuple[Num, Num]:
    """:func:`compute_bounds` of any node."""
    if dtype.ptr or dtype.is_void:
        return -INF, INF
    if op is Ops.CONST:
        v = arg
        if isinstance(v, float) and math.isnan(v):
            return -INF, INF
        return v, v
    if op is Ops.VCONST:
        vals = [v for v in arg if not (isinstance(v, float) and math.isnan(v))]
        return (min(vals), max(vals)) if vals else (-INF, INF)
    if dtype.is_float and op not in (Ops.WHERE,):
        return -INF, INF
    if op is Ops.DEFINE_VAR:
        return arg[1], arg[2]
    if op in (Ops.RANGE, Ops.SPECIAL):
        return 0, src[0].vmax - 1
    if op is Ops.INVALID:
        return -INF, INF
    if op is Ops.VECTORIZE:
        return min(s.vmin for s in src), max(s.vmax for s in src)
    if op in (Ops.GEP, Ops.AFTER, Ops.BIND):
        return src[0].vmin, src[0].vmax
    if op is Ops.CAT:
        return min(s.vmin for s in src), max(s.vmax for s in src)

    if op is Ops.CAST:
        x = src[0]
        if dtype.is_bool:
            return iv_cast_bool((x.vmin, x.vmax))
        if x.dtype.is_float:
            if unbounded(x.vmin) or unbounded(x.vmax):
                return dtype_bounds(dtype)
            return iv_wrap(dtype, math.trunc(x.vmin), math.trunc(x.vmax))
        return iv_wrap(dtype, exact(x.vmin), exact(x.vmax)) if not (
            unbounded(x.vmin) or unbounded(x.vmax)) else dtype_bounds(dtype)

    if op in GroupOp.Comparison:
        a, b = src
        if a.dtype.is_float or b.dtype.is_float:
            if a.op is Ops.CONST and b.op is Ops.CONST:
                v = compare(op, a.arg, b.arg)
                return v, v
            return False, True
        return iv_cmp(op, (a.vmin, a.vmax), (b.vmin, b.vmax))

    if op is Ops.WHERE:
        c, t, f = src
        if dtype.is_float and not (t.op is Ops.CONST and f.op is Ops.CONST):
            return -INF, INF
        return iv_where((c.vmin, c.vmax), (t.vmin, t.vmax), (f.vmin, f.vmax))

    if op is Ops.NOT:
        x = src[0]
        if dtype.is_bool:
            return iv_wrap(dtype, *iv_not_bool((x.vmin, x.vmax)))
        return iv_wrap(dtype, *iv_not((x.vmin, x.vmax)))

    if dtype.is_bool and op in (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX, Ops.MIN, Ops.MUL, Ops.ADD):
        a, b = src
        if op in (Ops.AND, Ops.MUL, Ops.MIN):
            return iv_min((a.vmin, a.vmax), (b.vmin, b.vmax))
        if op in (Ops.OR, Ops.MAX, Ops.ADD):
            return iv_max((a.vmin, a.vmax), (b.vmin, b.vmax))
        return iv_xor_bool((a.vmin, a.vmax), (b.vmin, b.vmax))

    if not (dtype.is_int or dtype.is_bool):
        return dtype_bounds(dtype)
    if any(unbounded(s.vmin) or unbounded(s.vmax) for s in src if not s.dtype.is_void):
        if op not in GroupOp.IntDiv | {Ops.MAX, Ops.MIN, Ops.AND}:
            return dtype_bounds(dtype)

    ivs = [(x.vmin, x.vmax) for x in src]
    lo: Num
    hi: Num
    if op in GroupOp.IntDiv and src[1].vmin == src[1].vmax == 0:
        # always a division by zero: undefined, so no range may let it fold to a value
        return dtype_bounds(dtype)
    if op in _ARITH:
        lo, hi = _ARITH[op](*ivs)
    elif op is Ops.MULACC:
        lo, hi = iv_add(iv_mul(ivs[0], ivs[1]), ivs[2])
    elif op is Ops.NEG:
        lo, hi = iv_neg(ivs[0])
    elif op in (Ops.SHL, Ops.SHR):
        # a shift by a negative amount, or by >= the width of a fixed-width dtype, is
        # undefined: only the defined amounts count, and none may not fold to a value
        s0, s1 = ivs[1]
        limit = shift_limit(dtype) - 1
        if s0 < 0 or s0 > limit or s1 > INDEX_SHIFT_LIMIT:
            return dtype_bounds(dtype)
        lo, hi = iv_shift(op, ivs[0], (s0, min(s1, limit)))
    elif op in (Ops.AND, Ops.OR, Ops.XOR):
        lo, hi = iv_bits(op, ivs[0], ivs[1])
    elif op is Ops.POW:
        a, b = src
        if a.vmin == a.vmax and b.vmin == b.vmax and b.vmin >= 0 and abs(b.vmin) < 256:
            v = int(a.vmin) ** int(b.vmin)
            lo, hi = v, v
        else:
            return dtype_bounds(dtype)
    elif op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        lo, hi = src[0].vmin, src[0].vmax
    elif op is Ops.LOAD:
        return dtype_bounds(dtype)
    elif op is Ops.REDUCE:
        if arg in (Ops.MAX, Ops.MIN):
            lo, hi = src[0].vmin, src[0].vmax
            if any(r.src and r.src[0].vmin <= 0 for r in src[1:]):
                # a loop that may run zero times leaves the identity (dtype min/max)
                ident = dtype_bounds(dtype)[0 if arg is Ops.MAX else 1]
                lo, hi = min(lo, ident), max(hi, ident)
            return lo, hi
        return dtype_bounds(dtype)
    else:
        return dtype_bounds(dtype)
    if _isnan(lo) or _isnan(hi):
        return dtype_bounds(dtype)
    if dtype.is_index:  # (a bound past the cap: the cap, or no bound; both sound)
        lo = -INF if lo < -INDEX_BOUND_CAP else min(lo, INDEX_BOUND_CAP)
        hi = INF if hi > INDEX_BOUND_CAP else max(hi, -INDEX_BOUND_CAP)
    return iv_wrap(dtype, lo, hi)

