"""Integer division and remainder by constants without a divide instruction.

C semantics throughout: ``idiv`` truncates toward zero, ``mod`` takes the
dividend's sign. Every sequence is correct for every numerator in the proven
range ``[lo, hi]`` (the numerator's vmin/vmax), never only "usually".

Powers of two ``d = 2**k`` (docs/rules.md, seed 002 stage 18):

- ``x // d -> x >> k`` and ``x % d -> x & (d-1)`` when ``lo >= 0``;
- otherwise the sign-correct sequences with ``bias = (x >> (n-1)) & (d-1)``
  (``d-1`` for a negative ``x``, else 0): ``x // d -> (x + bias) >> k`` and
  ``x % d -> x - ((x + bias) & -d)``.

Other divisors (Granlund-Montgomery, the "round-up" method of Hacker's
Delight 10-9): with ``m = ceil(2**s / d)`` and ``e = m*d - 2**s`` (``0 < e <
d`` since d is not a power of two), for ``M = max(|lo|, |hi|)`` and the least
``s`` with ``M * e < 2**s``::

    x >= 0:  (x*m) >> s       == x // d
    x <  0:  ((x*m) >> s) + 1 == x // d      (C truncation)

Proof, ``x >= 0``: write ``x = q*d + r`` with ``0 <= r < d``; then ``x*m/2**s =
q + (r + x*e/2**s)/d`` and ``0 <= r + x*e/2**s < (d-1) + 1 = d``, so the floor
is ``q``. For ``x = -y < 0`` with ``y = q*d + r``: ``floor(-y*m/2**s) =
-ceil(q + (r + y*e/2**s)/d)``; the fraction is in ``(0, 1)`` because ``y*e >
0`` and ``r + y*e/2**s < d``, so the result is ``-q - 1`` and adding one gives
``-q``, C's truncated quotient. ``x // d`` then costs a multiply and a shift,
plus ``- (x >> (n-1))`` (adds 1 for negative x) when ``lo < 0``; ``x % d``
is ``x - (x // d)*d``.

The product ``x*m`` is computed where it cannot overflow: in the numerator's
own dtype when ``[lo*m, hi*m]`` fits it, else in i64, else as the high half
of a 64x64->128 multiply (``Ops.MULHI``, with ``s >= 64``; the C emitter
renders it with ``__int128``). Negative divisors use ``x // -d == -(x // d)``
and ``x % -d == x % d``.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["DivPlan", "magic", "plan_idiv", "build_idiv", "build_mod", "is_pow2"]

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def is_pow2(v: int) -> bool:
    """True for 1, 2, 4, 8, ..."""
    return v > 0 and v & (v - 1) == 0


def magic(d: int, nmax: int, smin: int = 0) -> tuple[int, int]:
    """``(m, s)``: the least ``s >= smin`` with ``nmax * e < 2**s``, ``m = ceil(2**s/d)``.

    ``e = m*d - 2**s``. For ``d`` not a power of two and any ``|x| <= nmax``,
    ``(x*m) >> s`` is ``x // d`` for ``x >= 0`` and one less than C's
    truncated ``x // d`` for ``x < 0`` (see the module doc).
    """
    if d < 2 or is_pow2(d):
        raise ValueError(f"magic: divisor {d} must be >= 3 and not a power of two")
    if nmax < 0:
        raise ValueError(f"magic: numerator bound {nmax} must be >= 0")
    s = max(smin, 0)
    while True:
        m = -((-(1 << s)) // d)  # ceil(2**s / d)
        if nmax * (m * d - (1 << s)) < (1 << s):
            return m, s
        s += 1


@dataclass(frozen=True)
class DivPlan:
    """How ``x // d`` is computed for ``x`` of ``dtype`` in ``[lo, hi]`` (``d >= 2``).

    ``method``: ``"shift"`` (power of two), ``"mul"`` (multiply in ``dtype``),
    ``"mul64"`` (multiply in i64) or ``"mulhi"`` (high half of a 128-bit
    product, then ``>> (s-64)``). ``negfix``: add one for negative ``x``.
    """

    d: int
    lo: int
    hi: int
    dtype: DType
    method: str
    m: int = 0
    s: int = 0
    negfix: bool = False

    def eval(self, x: int) -> int:
        """The quotient the planned sequence computes for ``x`` (Python ints)."""
        if self.method == "shift":
            k = self.d.bit_length() - 1
            bias = (self.d - 1) if (self.negfix and x < 0) else 0
            return (x + bias) >> k
        q = (x * self.m) >> self.s  # >> on Python ints is floor, like an arithmetic shift
        return q + 1 if (self.negfix and x < 0) else q

    def eval_np(self, x):  # numpy int64 array -> numpy int64 array
        """Vectorized :meth:`eval` over an int64 numpy array (products must fit int64)."""
        import numpy as np

        x = np.asarray(x, dtype=np.int64)
        if self.method == "shift":
            k = self.d.bit_length() - 1
            bias = ((x >> 63) & (self.d - 1)) if self.negfix else 0
            return (x + bias) >> k
        if max(abs(self.lo), abs(self.hi)) * self.m > _I64_MAX:
            raise OverflowError("eval_np: the product does not fit int64; use eval()")
        q = (x * np.int64(self.m)) >> np.int64(self.s)
        return q - (x >> 63) if self.negfix else q


def _fits(dt: DType, lo: int, hi: int) -> bool:
    return dt.min <= lo and hi <= dt.max


def plan_idiv(d: int, lo: int, hi: int, dtype: DType) -> DivPlan | None:
    """The cheapest sound plan for ``x // d``, ``d >= 2``, or None when there is none."""
    if d < 2 or lo > hi:
        raise ValueError(f"plan_idiv: need d >= 2 and lo <= hi, got d={d}, [{lo}, {hi}]")
    negfix = lo < 0
    if is_pow2(d):
        return DivPlan(d, lo, hi, dtype, "shift", negfix=negfix)
    nmax = max(abs(lo), abs(hi))
    m, s = magic(d, nmax)
    if _fits(dtype, lo * m, hi * m) and m <= dtype.max and s < dtype.bits:
        return DivPlan(d, lo, hi, dtype, "mul", m, s, negfix)
    if _I64_MIN <= lo * m and hi * m <= _I64_MAX and s < 64:
        return DivPlan(d, lo, hi, dtype, "mul64", m, s, negfix)
    if _I64_MIN <= lo and hi <= _I64_MAX:
        m, s = magic(d, nmax, smin=64)
        if m < (1 << 64):
            return DivPlan(d, lo, hi, dtype, "mulhi", m, s, negfix)
    return None


def _c(x: UOp, v: int, dt: DType | None = None) -> UOp:
    dt = dt or x.dtype
    return UOp.const(dt, v)


def _cast(x: UOp, dt: DType) -> UOp:
    return x if x.dtype is dt else x.cast(dt)


def _build_plan(x: UOp, p: DivPlan) -> UOp:
    dt = x.dtype
    n = dt.scalar().bits
    if p.method == "shift":
        k = p.d.bit_length() - 1
        num = x
        if p.negfix:
            num = x + ((x >> _c(x, n - 1)) & _c(x, p.d - 1))
        return num >> _c(x, k) if k else num
    if p.method == "mul":
        q = (x * _c(x, p.m)) >> _c(x, p.s)
    elif p.method == "mul64":
        wide = dtypes.i64.vec(dt.count) if dt.count > 1 else dtypes.i64
        xw = _cast(x, wide)
        q = _cast((xw * _c(xw, p.m)) >> _c(xw, p.s), dt)
    else:  # mulhi
        wide = dtypes.i64.vec(dt.count) if dt.count > 1 else dtypes.i64
        uw = dtypes.u64.vec(dt.count) if dt.count > 1 else dtypes.u64
        xw = _cast(x, wide)
        hi = UOp(Ops.MULHI, wide, (xw, UOp.const(uw, p.m)))
        q = _cast(hi >> _c(hi, p.s - 64) if p.s > 64 else hi, dt)
    if p.negfix:
        q = q - (x >> _c(x, n - 1))
    return q


def build_idiv(x: UOp, d: int, lo: int, hi: int) -> UOp | None:
    """``x // d`` (C truncation) without a divide, for ``x`` in ``[lo, hi]``; None if impossible.

    ``x`` is a fixed-width integer node; ``lo``/``hi`` its proven bounds.
    """
    dt = x.dtype
    if d == 0 or not dt.is_fixed_int or not _fits(dt.scalar(), d, d):
        return None
    if d == 1:
        return x
    if d == -1:
        return -x
    if d < 0:
        if not _fits(dt.scalar(), -d, -d):
            return None  # |d| does not fit the dtype (d is its minimum)
        q = build_idiv(x, -d, lo, hi)
        return None if q is None else -q
    if lo == hi == 0:
        return _c(x, 0)
    p = plan_idiv(d, lo, hi, dt.scalar())
    return None if p is None else _build_plan(x, p)


def build_mod(x: UOp, d: int, lo: int, hi: int) -> UOp | None:
    """``x % d`` (the dividend's sign) without a divide, for ``x`` in ``[lo, hi]``."""
    dt = x.dtype
    if d == 0 or not dt.is_fixed_int or not _fits(dt.scalar(), d, d):
        return None
    if d < 0:
        if not _fits(dt.scalar(), -d, -d):
            return None
        d = -d
    if d == 1:
        return _c(x, 0)
    if is_pow2(d):
        if lo >= 0:
            return x & _c(x, d - 1)
        n = dt.scalar().bits
        bias = (x >> _c(x, n - 1)) & _c(x, d - 1)
        return x - ((x + bias) & _c(x, -d))
    q = build_idiv(x, d, lo, hi)
    return None if q is None else x - q * _c(x, d)
