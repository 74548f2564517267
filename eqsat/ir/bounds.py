"""Eager value ranges (vmin, vmax) of UOps, sound under C semantics.

``idiv`` truncates toward zero and ``mod`` takes the dividend's sign. Index
arithmetic is exact (unbounded integers); fixed-width integers fall back to
the dtype's full range whenever the exact interval may wrap. Floats are
unbounded unless constant.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops

if TYPE_CHECKING:
    from eqsat.ir.uop import UOp

__all__ = ["compute_bounds", "cdiv", "cmod", "dtype_bounds"]

Num = int | float
INF = math.inf


def _isinf(v: Num) -> bool:
    """``math.isinf`` that accepts ints too large for a float (index bounds are exact)."""
    return isinstance(v, float) and math.isinf(v)


def _isnan(v: Num) -> bool:
    return isinstance(v, float) and math.isnan(v)


def cdiv(a: int, b: int) -> int:
    """C integer division: truncate toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def cmod(a: int, b: int) -> int:
    """C remainder: the sign of the dividend, ``a == cdiv(a, b)*b + cmod(a, b)``."""
    return a - cdiv(a, b) * b


def dtype_bounds(dt: DType) -> tuple[Num, Num]:
    """The full value range of a dtype's scalar (``-inf..inf`` when unbounded)."""
    if dt.ptr or dt.is_void:
        return -INF, INF
    s = dt.scalar()
    if s.is_bool:
        return False, True
    return s.min, s.max


def _fit(dt: DType, lo: Num, hi: Num) -> tuple[Num, Num]:
    """Clamp an exact interval to what the dtype can hold without wrapping."""
    if dt.is_bool:
        return bool(lo), bool(hi)
    if dt.is_float:
        return -INF, INF
    dlo, dhi = dtype_bounds(dt)
    if lo < dlo or hi > dhi:
        return dlo, dhi
    return lo, hi


def _mul(a: Num, b: Num) -> Num:
    if a == 0 or b == 0:
        return 0
    return a * b


def _corners(f, xs: tuple[Num, Num], ys: tuple[Num, Num]) -> tuple[Num, Num]:
    vals = [f(x, y) for x in xs for y in ys]
    return min(vals), max(vals)


def _idiv_bounds(x0: Num, x1: Num, y0: Num, y1: Num) -> tuple[Num, Num]:
    m = max(abs(x0), abs(x1))
    # split the divisor around zero; division by zero is undefined (no value)
    parts = []
    if y0 < 0:
        parts.append((y0, min(y1, -1)))
    if y1 > 0:
        parts.append((max(y0, 1), y1))
    if not parts or any(_isinf(v) for v in (x0, x1)):
        return -m, m
    lo, hi = INF, -INF
    for p0, p1 in parts:
        vals = [_tdiv(x, y) for x in (x0, x1) for y in (p0, p1)]
        lo, hi = min(lo, *vals), max(hi, *vals)
    return lo, hi


def _tdiv(x: Num, y: Num) -> Num:
    if _isinf(y):
        return 0
    return cdiv(int(x), int(y))


def _mod_bounds(x0: Num, x1: Num, y0: Num, y1: Num) -> tuple[Num, Num]:
    m = max(abs(y0), abs(y1))  # |r| < |y| <= m
    if y0 == y1 and y0 != 0 and not _isinf(y0) and not _isinf(x0) and not _isinf(x1):
        c = abs(int(y0))
        # exact when x stays in one bucket of one sign
        if x0 >= 0 and x0 // c == x1 // c:
            return x0 % c, x1 % c
        if x1 <= 0 and (-x1) // c == (-x0) // c:
            return -((-x0) % c), -((-x1) % c)
    lo = 0 if x0 >= 0 else max(x0, -(m - 1))
    hi = 0 if x1 <= 0 else min(x1, m - 1)
    return lo, hi


def _bits_bound(x0: Num, x1: Num, y0: Num, y1: Num) -> tuple[Num, Num]:
    """A range holding every and/or/xor of two's-complement values in the inputs."""
    k = max(int(abs(v)).bit_length() for v in (x0, x1, y0, y1)) if not any(
        _isinf(v) for v in (x0, x1, y0, y1)) else None
    if k is None:
        return -INF, INF
    if min(x0, y0) >= 0:
        return 0, (1 << k) - 1
    return -(1 << k), (1 << k) - 1


def compute_bounds(op: Ops, dtype: DType, src: tuple[UOp, ...], arg) -> tuple[Num, Num]:
    """(vmin, vmax) of a node from its children's bounds."""
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
            if x.vmin == x.vmax == 0:
                return False, False
            if x.vmin > 0 or x.vmax < 0:
                return True, True
            return False, True
        if x.dtype.is_float:
            if _isinf(x.vmin) or _isinf(x.vmax):
                return dtype_bounds(dtype)
            return _fit(dtype, math.trunc(x.vmin), math.trunc(x.vmax))
        return _fit(dtype, int(x.vmin), int(x.vmax)) if not (
            _isinf(x.vmin) or _isinf(x.vmax)) else dtype_bounds(dtype)

    if op in GroupOp.Comparison:
        return _cmp_bounds(op, src[0], src[1])

    if op is Ops.WHERE:
        c, t, f = src
        if dtype.is_float and not (t.op is Ops.CONST and f.op is Ops.CONST):
            return -INF, INF
        if c.vmin == c.vmax:
            return (t.vmin, t.vmax) if c.vmin else (f.vmin, f.vmax)
        return min(t.vmin, f.vmin), max(t.vmax, f.vmax)

    if op is Ops.NOT:
        x = src[0]
        if dtype.is_bool:
            return (not x.vmax), (not x.vmin)
        return _fit(dtype, -x.vmax - 1, -x.vmin - 1)

    if dtype.is_bool and op in (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX, Ops.MIN, Ops.MUL, Ops.ADD):
        a, b = src
        if op in (Ops.AND, Ops.MUL, Ops.MIN):
            return a.vmin and b.vmin, a.vmax and b.vmax
        if op in (Ops.OR, Ops.MAX, Ops.ADD):
            return a.vmin or b.vmin, a.vmax or b.vmax
        if a.vmin == a.vmax and b.vmin == b.vmax:
            return a.vmin != b.vmin, a.vmin != b.vmin
        return False, True

    if not (dtype.is_int or dtype.is_bool):
        return dtype_bounds(dtype)
    if any(_isinf(s.vmin) or _isinf(s.vmax) for s in src if not s.dtype.is_void):
        if op not in (Ops.MOD, Ops.IDIV, Ops.MAX, Ops.MIN, Ops.AND):
            return dtype_bounds(dtype)

    lo: Num
    hi: Num
    if op is Ops.ADD:
        lo, hi = src[0].vmin + src[1].vmin, src[0].vmax + src[1].vmax
    elif op is Ops.SUB:
        lo, hi = src[0].vmin - src[1].vmax, src[0].vmax - src[1].vmin
    elif op is Ops.MUL:
        lo, hi = _corners(_mul, (src[0].vmin, src[0].vmax), (src[1].vmin, src[1].vmax))
    elif op is Ops.MULACC:
        lo, hi = _corners(_mul, (src[0].vmin, src[0].vmax), (src[1].vmin, src[1].vmax))
        lo, hi = lo + src[2].vmin, hi + src[2].vmax
    elif op is Ops.NEG:
        lo, hi = -src[0].vmax, -src[0].vmin
    elif op in (Ops.IDIV, Ops.MOD) and src[1].vmin == src[1].vmax == 0:
        # always a division by zero: undefined, so no range may let it fold to a value
        return dtype_bounds(dtype)
    elif op is Ops.IDIV:
        lo, hi = _idiv_bounds(src[0].vmin, src[0].vmax, src[1].vmin, src[1].vmax)
    elif op is Ops.MOD:
        lo, hi = _mod_bounds(src[0].vmin, src[0].vmax, src[1].vmin, src[1].vmax)
    elif op is Ops.MAX:
        lo, hi = max(src[0].vmin, src[1].vmin), max(src[0].vmax, src[1].vmax)
    elif op is Ops.MIN:
        lo, hi = min(src[0].vmin, src[1].vmin), min(src[0].vmax, src[1].vmax)
    elif op in (Ops.SHL, Ops.SHR):
        # a shift by a negative amount, or by >= the width of a fixed-width dtype, is
        # undefined: only the defined amounts count, and none may not fold to a value
        s0, s1 = src[1].vmin, src[1].vmax
        limit = dtype.bits - 1 if dtype.is_fixed_int else 4096
        if s0 < 0 or s0 > limit or s1 > 4096:
            return dtype_bounds(dtype)
        s1 = min(s1, limit)
        if op is Ops.SHL:
            lo, hi = _corners(lambda x, s: x * (1 << int(s)), (src[0].vmin, src[0].vmax),
                              (s0, s1))
        else:
            lo, hi = _corners(lambda x, s: x >> int(s), (src[0].vmin, src[0].vmax), (s0, s1))
    elif op in (Ops.AND, Ops.OR, Ops.XOR):
        x0, x1, y0, y1 = src[0].vmin, src[0].vmax, src[1].vmin, src[1].vmax
        if op is Ops.AND and (x0 >= 0 or y0 >= 0):
            # the result is no larger than a non-negative operand
            cands = [v for v0, v in ((x0, x1), (y0, y1)) if v0 >= 0]
            lo, hi = 0, min(cands)
        else:
            lo, hi = _bits_bound(x0, x1, y0, y1)
            if op is Ops.OR and min(x0, y0) >= 0:
                lo = max(x0, y0)
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
    return _fit(dtype, lo, hi)


def _cmp_bounds(op: Ops, a: UOp, b: UOp) -> tuple[bool, bool]:
    if a.dtype.is_float or b.dtype.is_float:
        if a.op is Ops.CONST and b.op is Ops.CONST:
            v = _cmp_eval(op, a.arg, b.arg)
            return v, v
        return False, True
    a0, a1, b0, b1 = a.vmin, a.vmax, b.vmin, b.vmax
    if op is Ops.LT:
        always, never = a1 < b0, a0 >= b1
    elif op is Ops.LE:
        always, never = a1 <= b0, a0 > b1
    elif op is Ops.GT:
        always, never = a0 > b1, a1 <= b0
    elif op is Ops.GE:
        always, never = a0 >= b1, a1 < b0
    elif op is Ops.EQ:
        always, never = a0 == a1 == b0 == b1, a1 < b0 or b1 < a0
    else:  # NE
        always, never = a1 < b0 or b1 < a0, a0 == a1 == b0 == b1
    if always:
        return True, True
    if never:
        return False, False
    return False, True


def _cmp_eval(op: Ops, x, y) -> bool:
    return {Ops.LT: x < y, Ops.LE: x <= y, Ops.GT: x > y, Ops.GE: x >= y,
            Ops.EQ: x == y, Ops.NE: x != y}[op]


_ = dtypes  # re-exported for callers that build bounds by dtype
