"""Divisibility of integer expressions: the proof that a vector access is aligned.

:func:`congruence` gives, for an integer expression ``u``, a pair ``(m, r)`` such that
every value ``u`` takes satisfies ``u % m == r`` (``m > 0``, ``0 <= r < m``), or
``(0, r)`` when ``u`` is the constant ``r``. It reads the expression bottom up:

- a constant, or a node whose ``vmin == vmax``: that value;
- ``a + b``, ``a - b``, ``-a``: ``m = gcd(ma, mb)``, the residues added;
- ``a * b``: ``(ra + ma*s) * (rb + mb*t)`` is ``ra*rb`` plus multiples of
  ``gcd(ra*mb, rb*ma, ma*mb)`` (a product with a constant ``c``: ``c*ma``);
  ``a << k`` is ``a * 2**k``;
- ``a >> k`` and ``floordiv(a, c)`` (floor divisions by ``2**k``, by ``c > 0``) and
  ``a // c`` (truncating, so only where ``a`` keeps one sign: ``vmin >= 0`` or
  ``vmax <= 0``) where ``c`` divides ``m``:
  ``(r + m*t) // c == r // c + (m // c) * t``;
- ``a % c`` and ``floormod(a, c)``: ``a - c * q`` for an integer ``q``, so ``a``'s
  residue modulo ``gcd(m, |c|)``; ``a & (2**k - 1)`` likewise modulo
  ``gcd(m, 2**k)``; ``a & c`` is a multiple of the largest power of two dividing ``c``;
- ``where(g, a, b)``, ``max``, ``min``: either value, so modulo
  ``gcd(ma, mb, ra - rb)``;
- anything else (a loop index, a variable, a load, ``mulhi``): any value, ``(1, 0)``.

Fixed-width arithmetic wraps (``-fwrapv``): a result is its mathematical value plus a
multiple of ``2**bits``, so every add, subtract, negate, multiply, shift left and
integer cast keeps its modulus only up to ``gcd(m, 2**bits)`` (``index`` is exact).
The signs that truncating division needs come from ``vmin``/``vmax`` (sound bounds of
the value as computed).

:func:`is_multiple` asks whether every value is a multiple of ``k``: a lane group's
element offset that is a multiple of its vector width, in a buffer whose base is
aligned to the vector's size, is an aligned vector access (``lowering.cemit``).
"""

from __future__ import annotations

import math

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["congruence", "is_multiple"]

_ANY = (1, 0)


def _norm(m: int, r: int) -> tuple[int, int]:
    return (m, r % m) if m else (0, r)


def _join(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Congruence that both ``a`` and ``b`` satisfy (a value that is either)."""
    return _norm(math.gcd(a[0], b[0], a[1] - b[1]), a[1])


def _wrap(x: UOp, c: tuple[int, int]) -> tuple[int, int]:
    """``c`` kept modulo ``2**bits`` of ``x``'s fixed-width dtype: what survives
    wrap-around."""
    if x.dtype.scalar() == dtypes.index:  # index arithmetic is exact
        return c
    return _norm(math.gcd(c[0], 1 << x.dtype.bits), c[1])


def _floordiv(c: tuple[int, int], d: int) -> tuple[int, int]:
    """``floor(v / d)`` of a value ``v`` of congruence ``c``, ``d > 0``."""
    m, r = c
    if m == 0:
        return (0, r // d)
    if m % d:
        return _ANY
    return _norm(m // d, r // d)


def _int_const(u: UOp) -> int | None:
    if u.op is Ops.CONST and u.dtype.is_int and not u.dtype.is_bool:
        return int(u.arg)
    return None


def _step(x: UOp, src: list[tuple[int, int]]) -> tuple[int, int]:
    op = x.op
    if not x.dtype.is_int or x.dtype.is_bool or x.dtype.count > 1:
        return _ANY
    if isinstance(x.vmin, int) and not isinstance(x.vmin, bool) and x.vmin == x.vmax:
        return (0, x.vmin)
    if op in (Ops.ADD, Ops.SUB):
        (ma, ra), (mb, rb) = src
        return _wrap(x, _norm(math.gcd(ma, mb), ra + rb if op is Ops.ADD else ra - rb))
    if op is Ops.NEG:
        return _wrap(x, _norm(src[0][0], -src[0][1]))
    if op is Ops.MUL:
        (ma, ra), (mb, rb) = src
        return _wrap(x, _norm(math.gcd(ra * mb, rb * ma, ma * mb), ra * rb))
    k = _int_const(x.src[1]) if len(x.src) == 2 else None
    if op is Ops.SHL and k is not None and 0 <= k < 64:
        m, r = src[0]
        return _wrap(x, _norm(m << k, r << k))
    if op is Ops.SHR and k is not None and 0 <= k < 64:
        return _floordiv(src[0], 1 << k)
    if op is Ops.FLOORDIV and k is not None and k > 0:
        return _floordiv(src[0], k)
    if op is Ops.IDIV and k:
        a = x.src[0]
        if isinstance(a.vmin, int) and a.vmin >= 0:
            q = _floordiv(src[0], abs(k))
        elif isinstance(a.vmax, int) and a.vmax <= 0:  # a // |k| == -((-a) // |k|)
            q = _floordiv(_norm(src[0][0], -src[0][1]), abs(k))
            q = _norm(q[0], -q[1])
        else:
            return _ANY
        return _norm(q[0], -q[1]) if k < 0 else q
    if op in (Ops.MOD, Ops.FLOORMOD) and k:
        m, r = src[0]
        return _norm(math.gcd(m, abs(k)), r)
    if op is Ops.AND and k is not None and k != 0:
        if k > 0 and (k + 1) & k == 0:  # a mask of the low bits: the value mod 2**bits
            m, r = src[0]
            return _norm(math.gcd(m, k + 1), r)
        return (1 << ((k & -k).bit_length() - 1), 0)
    if op is Ops.WHERE:
        return _join(src[1], src[2])
    if op in (Ops.MAX, Ops.MIN):
        return _join(src[0], src[1])
    if op is Ops.CAST and x.src[0].dtype.is_int and not x.src[0].dtype.is_bool:
        return _wrap(x, src[0])
    return _ANY


def congruence(u: UOp) -> tuple[int, int]:
    """``(m, r)``: every value of the integer expression ``u`` is ``r`` modulo ``m``
    (``(0, r)``: ``u`` is ``r``; ``(1, 0)``: nothing is known). See the module doc."""
    memo: dict[UOp, tuple[int, int]] = {}
    for x in u.toposort():
        memo[x] = _step(x, [memo[s] for s in x.src])
    return memo[u]


def is_multiple(u: UOp, k: int) -> bool:
    """Every value of the integer expression ``u`` is a multiple of ``k`` (``k > 0``)."""
    if k <= 0:
        raise ValueError(f"is_multiple: k must be positive, got {k}")
    m, r = congruence(u)
    return m % k == 0 and r % k == 0
