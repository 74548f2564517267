"""Hypothesis strategies for random index expressions and their assignments.

Shared by every engine's soundness tests::

    from hypothesis import given, strategies as st
    from tests.strategies import int_exprs, assignments

    @given(st.data())
    def test_rewrite_is_sound(data):
        e = data.draw(int_exprs(max_depth=4))
        env = data.draw(assignments(e))
        try:
            want = evaluate(e, env)
        except EvalError:          # division by zero somewhere in the input
            return
        assert evaluate(simplify(e), env) == want

Each expression draws a small *pool* of leaves first (1-3 ``var`` with
negative, mixed or positive bounds, 0-2 ``range``), so leaves repeat inside an
expression the way loop indices do in real index arithmetic, and a leaf's name
always means the same node. Trees mix plain arithmetic with the idioms the
index rules target (``x//c*c + x%c``, ``(x*c + y)//c``, nested divisions,
``(x%(a*b))//a`` ...). Divisors are mostly positive constants, sometimes
negative, and (unless ``div_by_expr=False``) occasionally whole expressions that
may be zero: ``evaluate`` raises ``EvalError`` at those points.

``assignments(e)`` draws a value in ``[vmin, vmax]`` for every leaf of ``e``
(biased to the interval's ends) and returns ``{name: value}`` with the
interpreter's env keys: a var's or special's name, ``"R<id>"`` for a range.

Floats: ``float_exprs`` draws f16/f32/f64 expressions over casts of index
expressions, loads from small buffers (clamped, wrapped, padded or gated
addresses) and constants that include 0, -0, inf, -inf, NaN and values near
the overflow edge, with the shapes the float rules look for (``x/x``,
``(x*y)/y``, ``x+0.0``, ``x*c1*c2`` ...). ``fuzz_exprs`` mixes every kind
(index with every integer op and float comparisons, padded, fixed-width, bool,
float), over leaves that include wide and huge ranges.

The same generators run without hypothesis: every random choice goes through
``_int``, which a :class:`SeededDraw` answers from ``random.Random`` instead, so
``fuzz_expr(SeededDraw(seed))`` is a reproducible draw (``benchmarks/fuzz.py``
uses it). ``fuzz_kernel`` (seeded only) builds a random kernel: an elementwise or
reducing body over loads through random movement views.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from workloads import BuildError, View, kernel, load

__all__ = [
    "SeededDraw",
    "fuzz_expr",
    "fuzz_exprs",
    "fuzz_kernel",
    "float_exprs",
    "int_exprs",
    "padded_index_exprs",
    "fixed_width_exprs",
    "valid_conditions",
    "leaf_pools",
    "assignments",
    "leaf_name",
    "SMALL_CONSTS",
    "FIXED_DTYPES",
]

SMALL_CONSTS = (0, 1, -1, 2, -2, 3, 4, 5, 6, 7, 8, -3, -4, 9, 12, 16, 24, 32, -8, 64, 100)
_DIVISORS_POS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 64)
_DIVISORS_NEG = (-1, -2, -3, -4, -5, -8)
FIXED_DTYPES = (dtypes.i8, dtypes.u8, dtypes.i16, dtypes.u16, dtypes.i32, dtypes.u32,
                dtypes.i64, dtypes.u64)
_VAR_NAMES = ("a", "b", "c")


def leaf_name(u: UOp) -> str:
    """The env key of a leaf: the var's/special's name, ``R<id>`` for a range."""
    if u.op is Ops.DEFINE_VAR:
        return u.arg[0]
    if u.op is Ops.RANGE:
        return f"R{u.arg}"
    if u.op is Ops.SPECIAL:
        return u.arg
    raise ValueError(f"not a leaf: {u.op}")


# ---------------------------------------------------------------------------
# cheap draws: strategy objects are cached, recursion is plain Python (building
# fresh composite strategies at every node made generation 5x slower)
@cache
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


class SeededDraw:
    """The generators' random source outside hypothesis: ``_int`` asks ``rng`` instead
    of drawing from a strategy. ``SeededDraw(seed)`` for any ``random.Random`` seed."""

    __slots__ = ("rng",)

    def __init__(self, seed: Any) -> None:
        self.rng = random.Random(seed)

    def __call__(self, strategy: st.SearchStrategy) -> Any:
        raise TypeError("SeededDraw answers the generators' _int only, not strategies")


def _int(draw: st.DrawFn, lo: int, hi: int) -> int:
    if type(draw) is SeededDraw:
        return draw.rng.randint(lo, hi)
    return draw(_ints(lo, hi))


def _pick(draw: st.DrawFn, seq: Sequence[Any]) -> Any:
    return seq[_int(draw, 0, len(seq) - 1)]


# ---------------------------------------------------------------------------
# leaves
_HUGE = (2**24, 2**31, 2**53, 2**62, 2**64, 2**127, 2**130)


def _var_bounds(draw: st.DrawFn, huge: bool = False) -> tuple[int, int]:
    if huge and _int(draw, 0, 9) == 0:  # beyond i32/i64/f32's exact integers or range
        e = _pick(draw, _HUGE)
        kind = _int(draw, 0, 2)
        if kind == 0:
            return 0, e + _int(draw, 0, 3)
        if kind == 1:
            return -e - _int(draw, 0, 3), e
        return e - _int(draw, 0, 8), e + _int(draw, 0, 8)
    kind = _pick(draw, ("pos", "pos", "neg", "mixed", "mixed", "point", "wide"))
    if kind == "pos":
        lo = _int(draw, 0, 4)
        return lo, lo + _int(draw, 0, 30)
    if kind == "neg":
        hi = _int(draw, -12, 0)
        return hi - _int(draw, 0, 20), hi
    if kind == "mixed":
        return -_int(draw, 1, 20), _int(draw, 0, 20)
    if kind == "point":
        v = _int(draw, -5, 5)
        return v, v
    lo = _int(draw, -1000, 1000)
    return lo, lo + _int(draw, 0, 5000)


_RANGE_ENDS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 32, 60)


def _pool(draw: st.DrawFn, max_vars: int, max_ranges: int,
          huge: bool = False) -> tuple[UOp, ...]:
    n_vars = _int(draw, 0, max_vars)
    n_ranges = _int(draw, 0 if n_vars else 1, max(max_ranges, 0 if n_vars else 1))
    pool: list[UOp] = []
    for i in range(n_vars):
        lo, hi = _var_bounds(draw, huge)
        pool.append(UOp.var(_VAR_NAMES[i % len(_VAR_NAMES)] + ("" if i < 3 else str(i)), lo, hi))
    for i in range(n_ranges):
        pool.append(UOp.range(_pick(draw, _RANGE_ENDS), i))
    return tuple(pool)


@st.composite
def leaf_pools(draw: st.DrawFn, max_vars: int = 3, max_ranges: int = 2) -> tuple[UOp, ...]:
    """1..(max_vars+max_ranges) distinct leaves: vars with various bounds and ranges."""
    return _pool(draw, max_vars, max_ranges)


# ---------------------------------------------------------------------------
# expressions
def _c(v: int) -> UOp:
    return UOp.const(dtypes.index, v)


@dataclass(frozen=True)
class _Cfg:
    div_by_expr: bool = True
    extra_ops: bool = False
    floats: bool = False  # index expressions may compare floats (where/cast of the bool)


_SAFE = _Cfg(div_by_expr=False)

_EXTRA = ("min", "mulacc", "pow", "not", "shift_var", "bool_cast")
_ARITH = ("add", "add", "sub", "mul", "mul", "idiv", "idiv", "mod", "mod", "max", "neg",
          "shl", "shr", "and", "or", "xor", "where", "idiom", "idiom", "floordiv", "floormod",
          "floor_idiom")
_CMPS = ("lt", "le", "gt", "ge", "eq", "ne")


def _divisor(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    r = _int(draw, 0, 19)
    if r < 14:
        return _c(_pick(draw, _DIVISORS_POS))
    if r < 17:
        return _c(_pick(draw, _DIVISORS_NEG))
    if cfg.div_by_expr and depth > 0:
        return _expr(draw, pool, depth - 1, cfg)
    return _c(_pick(draw, _DIVISORS_POS))


def _operand(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    """A subexpression or (a third of the time) a small constant."""
    if _int(draw, 0, 2) == 0:
        return _c(_pick(draw, SMALL_CONSTS))
    return _expr(draw, pool, depth, cfg)


def _cond(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    """A bool: a comparison of two index (or, with ``cfg.floats``, float) expressions,
    maybe negated or combined."""
    if cfg.floats and _int(draw, 0, 3) == 0:
        dt = _pick(draw, FLOAT_DTYPES)
        a = _fexpr(draw, pool, dt, max(depth - 1, 0), cfg)
        b = _fexpr(draw, pool, dt, max(depth - 2, 0), cfg)
    else:
        a = _expr(draw, pool, max(depth - 1, 0), cfg)
        b = _operand(draw, pool, max(depth - 1, 0), cfg)
    c = getattr(a, _pick(draw, _CMPS))(b)
    r = _int(draw, 0, 9)
    if r == 0:
        c = c.alu(Ops.NOT)
    elif r == 1 and depth > 0:
        c = c & _cond(draw, pool, depth - 1, cfg)
    elif r == 2 and depth > 0:
        c = c | _cond(draw, pool, depth - 1, cfg)
    return c


_IDIOM_DIVS = _DIVISORS_POS[1:] + _DIVISORS_NEG[1:3]


def _idiom(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    """The shapes index rules look for, with shared subterms."""
    x = _expr(draw, pool, max(depth - 1, 0), cfg)
    y = _expr(draw, pool, max(depth - 2, 0), cfg)
    c = _pick(draw, _IDIOM_DIVS)
    k = _pick(draw, (2, 3, 4, -2))
    form = _int(draw, 0, 13)
    if form == 0:
        return x // c * c + x % c
    if form == 1:
        return x % (c * k) // c
    if form == 2:
        return x // c // k
    if form == 3:
        return (x * c + y) // c
    if form == 4:
        return (x * c + y) % c
    if form == 5:
        return (x + c * k) % c
    if form == 6:
        return x % c % (c * k)
    if form == 7:
        return (x // c + k) // 2
    if form == 8:
        return x % c * k + x // c * (c * k)
    if form == 9:
        return (x // c) % k + (x // (c * k)) * k
    if form == 10:
        return (x * k) // k
    if form == 11:
        return x - x // c * c
    if form == 12:
        return y + x % c + x // c * c
    # an affine sum over the pool, divided: the tinygrad-unit-like shape
    s = _c(_pick(draw, SMALL_CONSTS))
    for leaf in pool:
        s = s + leaf * _pick(draw, (1, 2, 3, 4, 6, 8, -1))
    return s // c if _int(draw, 0, 1) else s % c


def _fdiv(a: UOp, d: UOp | int) -> UOp:
    return a.alu(Ops.FLOORDIV, d)


def _fmod(a: UOp, d: UOp | int) -> UOp:
    return a.alu(Ops.FLOORMOD, d)


def _floor_idiom(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    """The shapes tinygrad's ``//`` and ``%`` build (floor division), with shared
    subterms: recombinations, offsets, nested divisions, congruences."""
    x = _expr(draw, pool, max(depth - 1, 0), cfg)
    y = _expr(draw, pool, max(depth - 2, 0), cfg)
    c = _c(_pick(draw, _IDIOM_DIVS))
    k = _pick(draw, (2, 3, 4, -2))
    form = _int(draw, 0, 7)
    if form == 0:
        return _fdiv(x, c) * c + _fmod(x, c)
    if form == 1:
        return _fmod(x + c * k, c)
    if form == 2:
        return _fdiv(_fdiv(x, c), _c(abs(k)))
    if form == 3:
        return _fdiv(_fdiv(x, c) + _c(k), _c(abs(k) + 1))
    if form == 4:
        return _fdiv(x * c + y, c)
    if form == 5:
        return _fmod(_fmod(x, c * k), c)
    if form == 6:
        return _fdiv(_fmod(x, c * abs(k)), c)
    return _fdiv(x, c).lt(_c(k)).where(x, y)


def _expr(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    if depth <= 0 or _int(draw, 0, 5) == 0:
        if _int(draw, 0, 3) == 0:
            return _c(_pick(draw, SMALL_CONSTS))
        return _pick(draw, pool)
    op = _pick(draw, _ARITH)
    if cfg.extra_ops and _int(draw, 0, 3) == 0:
        return _extra(draw, pool, depth, cfg)
    if op == "neg":
        return -_expr(draw, pool, depth - 1, cfg)
    if op == "where":
        cond = _cond(draw, pool, depth - 1, cfg)
        return cond.where(_expr(draw, pool, depth - 1, cfg),
                          _expr(draw, pool, depth - 1, cfg))
    if op == "idiom":
        return _idiom(draw, pool, depth, cfg)
    if op == "floor_idiom":
        return _floor_idiom(draw, pool, depth, cfg)
    a = _expr(draw, pool, depth - 1, cfg)
    if op in ("idiv", "mod"):
        d = _divisor(draw, pool, depth, cfg)
        return a // d if op == "idiv" else a % d
    if op in ("floordiv", "floormod"):
        d = _divisor(draw, pool, depth, cfg)
        return _fdiv(a, d) if op == "floordiv" else _fmod(a, d)
    if op in ("shl", "shr"):
        s = _c(_int(draw, 0, 4))
        return a << s if op == "shl" else a >> s
    b = _operand(draw, pool, depth - 1, cfg)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "max":
        return a.maximum(b)
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    return a ^ b


def _extra(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, cfg: _Cfg) -> UOp:
    if cfg.floats and _int(draw, 0, 7) == 0:  # a float truncated to an index
        return _fexpr(draw, pool, _pick(draw, FLOAT_DTYPES), depth - 1, cfg).cast(dtypes.index)
    op = _pick(draw, _EXTRA)
    if op == "bool_cast":  # bool <-> index casts: cond.cast(index), e.cast(bool).where(..)
        if _int(draw, 0, 1):
            return _cond(draw, pool, depth - 1, cfg).cast(dtypes.index)
        return _expr(draw, pool, depth - 1, cfg).cast(dtypes.bool).where(
            _expr(draw, pool, depth - 1, cfg), _operand(draw, pool, depth - 1, cfg))
    a = _expr(draw, pool, depth - 1, cfg)
    if op == "not":
        return a.alu(Ops.NOT)
    if op == "pow":
        return a.alu(Ops.POW, _c(_int(draw, 0, 3)))
    b = _operand(draw, pool, depth - 1, cfg)
    if op == "min":
        return a.alu(Ops.MIN, b)
    if op == "mulacc":
        return a.alu(Ops.MULACC, b, _operand(draw, pool, depth - 1, cfg))
    amount = _pick(draw, pool) % 8 + _int(draw, -1, 3)  # -8..10: sometimes negative
    return a.alu(Ops.SHL if _int(draw, 0, 1) else Ops.SHR, amount)


@st.composite
def int_exprs(draw: st.DrawFn, max_depth: int = 4, *, max_vars: int = 3, max_ranges: int = 2,
              div_by_expr: bool = True, extra_ops: bool = False,
              leaves: tuple[UOp, ...] | None = None) -> UOp:
    """A random index-dtype expression (see the module docstring).

    ``leaves`` fixes the leaf pool instead of drawing one; ``div_by_expr=False``
    keeps every divisor a nonzero constant (no undefined points at all).
    ``extra_ops=True`` also uses ops outside the text format's core index set:
    ``min``, ``mulacc``, ``pow`` by a constant, bitwise ``not``, shifts by a
    variable amount (may be undefined where the amount is negative) and casts
    between bool and index.
    """
    pool = leaves if leaves is not None else _pool(draw, max_vars, max_ranges)
    return _expr(draw, pool, max_depth, _Cfg(div_by_expr, extra_ops))


def _valid(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int) -> UOp:
    parts = []
    for _ in range(_int(draw, 1, 3)):
        e = _pick(draw, pool) if _int(draw, 0, 1) else _expr(draw, pool, depth, _SAFE)
        bound = _c(_int(draw, -3, 12))
        kind = _int(draw, 0, 4)
        if kind == 0:
            parts.append(e.lt(bound))
        elif kind == 1:
            parts.append(e.lt(bound).alu(Ops.NOT))  # tinygrad's spelling of e >= bound
        elif kind == 2:
            parts.append(e.ge(bound))
        elif kind == 3:
            parts.append(e.ne(bound))
        else:
            parts.append(_cond(draw, pool, depth, _SAFE))
    c = parts[0]
    for p in parts[1:]:
        c = c & p
    return c


@st.composite
def valid_conditions(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int = 2) -> UOp:
    """Pad-style validity: conjunctions of ``lo <= e`` / ``e < hi`` over leaves and sums."""
    return _valid(draw, pool, depth)


@st.composite
def padded_index_exprs(draw: st.DrawFn, max_depth: int = 3, *, max_vars: int = 2,
                       max_ranges: int = 3) -> UOp:
    """``where(valid, idx, invalid)`` and arithmetic over such padded indices.

    Mostly the top-level form of a padded load; sometimes the padded index is
    nested inside further index arithmetic (a view of a padded view), so the
    Invalid propagates through add/mul/idiv/mod as in the corpus.
    """
    return _padded_expr(draw, _pool(draw, max_vars, max_ranges), max_depth)


def _padded_expr(draw: st.DrawFn, pool: tuple[UOp, ...], max_depth: int) -> UOp:
    inv = UOp.invalid()

    def padded() -> UOp:
        valid = _valid(draw, pool, max(max_depth - 1, 0))
        return valid.where(_expr(draw, pool, max_depth, _SAFE), inv)

    p = padded()
    form = _int(draw, 0, 5)
    if form <= 2:
        return p
    if form == 3:  # padded index inside a reshape-like flattening
        other = _expr(draw, pool, max(max_depth - 1, 0), _SAFE)
        c = _pick(draw, _DIVISORS_POS[1:])
        return (p * c + other) % (c * _pick(draw, (2, 3, 5)))
    if form == 4:  # two padded indices combined
        q = padded()
        return p + q * _pick(draw, (1, 3, 8))
    # a padded index re-padded by an outer view
    valid = _valid(draw, pool, 1)
    return valid.where(p // _pick(draw, (1, 2, 4)) + 1, inv)


# ---------------------------------------------------------------------------
# fixed-width integers
@st.composite
def fixed_width_exprs(draw: st.DrawFn, max_depth: int = 3, *, dtype: DType | None = None,
                      leaves: tuple[UOp, ...] | None = None) -> UOp:
    """An expression of a fixed-width integer dtype: casts of index expressions,
    wrapping arithmetic, shifts, bitwise ops, casts between widths, where."""
    pool = leaves if leaves is not None else _pool(draw, 3, 2)
    dt = dtype if dtype is not None else _pick(draw, FIXED_DTYPES)
    return _fixed(draw, pool, dt, max_depth)


_FIXED_OPS = ("add", "sub", "mul", "neg", "idiv", "mod", "max", "shl", "shr", "and", "or",
              "xor", "not", "cast", "cast", "index", "where", "floordiv", "floormod")


def _fixed(draw: st.DrawFn, pool: tuple[UOp, ...], dt: DType, depth: int) -> UOp:
    if depth <= 0 or _int(draw, 0, 5) == 0:
        r = _int(draw, 0, 3)
        if r == 0:
            extremes = (int(dt.min), int(dt.max), int(dt.max) // 2 + 1)
            v = _pick(draw, SMALL_CONSTS) if _int(draw, 0, 1) else _pick(draw, extremes)
            return UOp.const(dt, v)
        return _pick(draw, pool).cast(dt)
    op = _pick(draw, _FIXED_OPS)
    if op == "neg":
        return -_fixed(draw, pool, dt, depth - 1)
    if op == "not":
        return _fixed(draw, pool, dt, depth - 1).alu(Ops.NOT)
    if op == "cast":  # through another width
        return _fixed(draw, pool, _pick(draw, FIXED_DTYPES), depth - 1).cast(dt)
    if op == "index":  # an index expression narrowed to the width
        return _expr(draw, pool, depth - 1, _SAFE).cast(dt)
    if op == "where":
        a, b = _fixed(draw, pool, dt, depth - 1), _fixed(draw, pool, dt, depth - 1)
        return a.lt(b).where(_fixed(draw, pool, dt, depth - 1), _fixed(draw, pool, dt, depth - 1))
    a = _fixed(draw, pool, dt, depth - 1)
    if op in ("shl", "shr"):
        amount = UOp.const(dt, _int(draw, 0, dt.bits - 1))
        return a.alu(Ops.SHL if op == "shl" else Ops.SHR, amount)
    if op in ("idiv", "mod", "floordiv", "floormod"):
        d = UOp.const(dt, _pick(draw, _DIVISORS_POS + _DIVISORS_NEG))
        return a.alu({"idiv": Ops.IDIV, "mod": Ops.MOD, "floordiv": Ops.FLOORDIV,
                      "floormod": Ops.FLOORMOD}[op], d)
    b = _fixed(draw, pool, dt, depth - 1)
    return {"add": a + b, "sub": a - b, "mul": a * b, "max": a.maximum(b), "and": a & b,
            "or": a | b, "xor": a ^ b}[op]


# ---------------------------------------------------------------------------
# assignments
@st.composite
def assignments(draw: st.DrawFn, *exprs: UOp) -> dict[str, Any]:
    """An in-bounds value for every leaf of ``exprs`` (union), keyed by env name.

    Values lie in each leaf's ``[vmin, vmax]``, biased to the ends of the
    interval and to 0 where it is inside.
    """
    env: dict[str, Any] = {}
    for e in exprs:
        for leaf in e.leaves():
            name = leaf_name(leaf)
            if name in env:
                continue
            lo, hi = int(leaf.vmin), int(leaf.vmax)
            special = [v for v in (lo, hi, 0, lo + 1, hi - 1) if lo <= v <= hi]
            env[name] = _pick(draw, special) if _int(draw, 0, 1) else _int(draw, lo, hi)
    return env


# ---------------------------------------------------------------------------
# floats
FLOAT_DTYPES = (dtypes.f32, dtypes.f32, dtypes.f32, dtypes.f16, dtypes.f64)
FLOAT_CONSTS = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -2.5, 7.0, 100.0, 1e-30, 6e4, 1e38,
                -1e38, 3.4e38, -3.4e38, 1e300, math.inf, -math.inf, math.nan)
_NICE_CONSTS = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, 4.0, -2.0)
#: the small buffers float expressions load from: (slot, size) by element dtype
FUZZ_BUFFERS = {"f32": (3, 8), "f16": (4, 8), "f64": (5, 8), "i32": (6, 8)}
_FLOAT_OPS = ("add", "add", "sub", "mul", "mul", "fdiv", "fdiv", "max", "min", "neg", "where",
              "unary", "mulacc", "cast", "pow", "idiom", "idiom", "idiom", "idiom")
_FLOAT_UNARY = (Ops.RECIP, Ops.SQRT, Ops.TRUNC, Ops.EXP2, Ops.LOG2, Ops.SIN)
_FLOAT_IDIOMS = 26


def _fc(dt: DType, v: float) -> UOp:
    return UOp.const(dt, v)


def _buffer_of(dt: DType) -> UOp:
    slot, size = FUZZ_BUFFERS[dt.name]
    return UOp.buffer(slot, dt, size)


def _address(draw: st.DrawFn, pool: tuple[UOp, ...], depth: int, size: int) -> UOp:
    """An element index of a ``size``-element buffer: a leaf that fits, a clamped or
    wrapped expression, or a padded one (Invalid outside its condition)."""
    form = _int(draw, 0, 5)
    leaf = _pick(draw, pool)
    if form <= 1 and 0 <= leaf.vmin and leaf.vmax < size:
        return leaf
    e = _expr(draw, pool, max(depth - 1, 0), _SAFE)
    if form <= 2:
        return e.maximum(_c(0)).alu(Ops.MIN, _c(size - 1))
    if form <= 4:
        return (e % size + size) % size
    valid = e.ge(_c(0)) & e.lt(_c(size))
    return valid.where(e, UOp.invalid())


def _load(draw: st.DrawFn, pool: tuple[UOp, ...], dt: DType, depth: int, cfg: _Cfg) -> UOp:
    buf = _buffer_of(dt)
    idx_src = [buf, _address(draw, pool, depth, buf.arg[1])]
    if _int(draw, 0, 5) == 0:  # a gated load: reads its alternative (or 0) off the gate
        idx_src.append(_cond(draw, pool, max(depth - 1, 0), _SAFE))
    idx = UOp(Ops.INDEX, buf.dtype, tuple(idx_src))
    if _int(draw, 0, 3) == 0:
        alt = _fc(dt, _pick(draw, FLOAT_CONSTS)) if dt.is_float else UOp.const(dt, -1)
        return UOp(Ops.LOAD, dt, (idx, alt))
    return UOp(Ops.LOAD, dt, (idx,))


def _fleaf(draw: st.DrawFn, pool: tuple[UOp, ...], dt: DType, depth: int, cfg: _Cfg) -> UOp:
    r = _int(draw, 0, 9)
    if r <= 2:
        return _fc(dt, _pick(draw, FLOAT_CONSTS if r == 0 else _NICE_CONSTS))
    if r <= 5:
        return _load(draw, pool, dt, depth, cfg)
    if r <= 7:
        return _pick(draw, pool).cast(dt)
    return _expr(draw, pool, max(depth - 1, 0), _SAFE).cast(dt)


def _fexpr(draw: st.DrawFn, pool: tuple[UOp, ...], dt: DType, depth: int, cfg: _Cfg) -> UOp:
    """A float expression of dtype ``dt``."""
    if depth <= 0 or _int(draw, 0, 4) == 0:
        return _fleaf(draw, pool, dt, depth, cfg)
    op = _pick(draw, _FLOAT_OPS)

    def sub(d: int = 1) -> UOp:
        return _fexpr(draw, pool, dt, depth - d, cfg)

    if op == "neg":
        return -sub()
    if op == "unary":
        return sub().alu(_pick(draw, _FLOAT_UNARY))
    if op == "where":
        return _cond(draw, pool, depth - 1, cfg).where(sub(), sub())
    if op == "mulacc":
        return sub().alu(Ops.MULACC, sub(2), sub(2))
    if op == "pow":
        return sub().alu(Ops.POW, _fc(dt, _pick(draw, (0.0, 1.0, 2.0, 0.5, -1.0))))
    if op == "cast":
        r = _int(draw, 0, 3)
        if r == 0:
            return _cond(draw, pool, depth - 1, cfg).cast(dt)
        if r == 1:
            return _fixed(draw, pool, _pick(draw, FIXED_DTYPES), depth - 1).cast(dt)
        other = _pick(draw, tuple(d for d in (dtypes.f16, dtypes.f32, dtypes.f64) if d != dt))
        return _fexpr(draw, pool, other, depth - 1, cfg).cast(dt)
    if op == "idiom":
        return _fidiom(draw, pool, dt, depth, cfg)
    a, b = sub(), sub(2) if _int(draw, 0, 1) else _fleaf(draw, pool, dt, depth - 1, cfg)
    if op == "max":
        return a.maximum(b)
    if op == "min":
        return a.alu(Ops.MIN, b)
    return a.alu({"add": Ops.ADD, "sub": Ops.SUB, "mul": Ops.MUL, "fdiv": Ops.FDIV}[op], b)


def _fidiom(draw: st.DrawFn, pool: tuple[UOp, ...], dt: DType, depth: int, cfg: _Cfg) -> UOp:
    """The shapes the float rules look for, over shared subterms."""
    x = _fexpr(draw, pool, dt, depth - 1, cfg)
    y = _fexpr(draw, pool, dt, depth - 2, cfg)
    c1 = _fc(dt, _pick(draw, FLOAT_CONSTS + _NICE_CONSTS))
    c2 = _fc(dt, _pick(draw, FLOAT_CONSTS + _NICE_CONSTS))
    zero, nzero, one = _fc(dt, 0.0), _fc(dt, -0.0), _fc(dt, 1.0)
    form = _int(draw, 0, _FLOAT_IDIOMS - 1)
    forms = (
        lambda: x / x, lambda: (x * y) / y, lambda: (y * x) / y, lambda: x * zero,
        lambda: x + zero, lambda: x + nzero, lambda: x - zero, lambda: x - nzero,
        lambda: x * one, lambda: x / one, lambda: x - x, lambda: x + x, lambda: x * -1.0,
        lambda: x.alu(Ops.NEG).alu(Ops.NEG), lambda: (x * c1) / c1, lambda: (x + c1) + c2,
        lambda: (x * c1) * c2,
        lambda: x.maximum(x), lambda: x.alu(Ops.MIN, x), lambda: (x + y) - y,
        lambda: (x - y) + y, lambda: x - (-y), lambda: (x * zero) / zero,
        lambda: x.cast(dtypes.f64).cast(dt) if dt != dtypes.f64 else x.cast(dtypes.f32).cast(dt),
        lambda: x.maximum(c1).maximum(c2), lambda: x.ne(x).where(c1, x))
    return forms[form]()


@st.composite
def float_exprs(draw: st.DrawFn, max_depth: int = 4, *, dtype: DType | None = None) -> UOp:
    """A random float expression (f32 mostly, f16, f64; see the module docstring)."""
    pool = _pool(draw, 3, 2, huge=True)
    return _fexpr(draw, pool, dtype or _pick(draw, FLOAT_DTYPES), max_depth,
                  _Cfg(div_by_expr=True, extra_ops=True, floats=True))


# ---------------------------------------------------------------------------
# the fuzzer's mix
FUZZ_KINDS = ("index", "index", "padded", "fixed", "bool", "float", "float", "float")


def fuzz_expr(draw: st.DrawFn, max_depth: int = 4) -> UOp:
    """One random expression of a random kind (``FUZZ_KINDS``): index expressions with
    every integer op, divisions by expressions that may be 0 and float comparisons;
    padded indices; fixed-width integers; bools; floats. Leaves: vars with negative,
    mixed, positive, wide or huge bounds, and ranges."""
    pool = _pool(draw, 3, 2, huge=True)
    cfg = _Cfg(div_by_expr=True, extra_ops=True, floats=True)
    kind = _pick(draw, FUZZ_KINDS)
    if kind == "index":
        return _expr(draw, pool, max_depth, cfg)
    if kind == "padded":
        return _padded_expr(draw, pool, max(max_depth - 1, 1))
    if kind == "fixed":
        return _fixed(draw, pool, _pick(draw, FIXED_DTYPES), max_depth - 1)
    if kind == "bool":
        return _cond(draw, pool, max_depth - 1, cfg)
    return _fexpr(draw, pool, _pick(draw, FLOAT_DTYPES), max_depth, cfg)


@st.composite
def fuzz_exprs(draw: st.DrawFn, max_depth: int = 4) -> UOp:
    """:func:`fuzz_expr` as a hypothesis strategy."""
    return fuzz_expr(draw, max_depth)


# ---------------------------------------------------------------------------
# kernels
_KERNEL_DTYPES = (dtypes.f32, dtypes.f32, dtypes.f16, dtypes.f64, dtypes.i32)
_KERNEL_SIZES = (1, 2, 3, 4, 5, 6, 7, 8)


def fuzz_kernel(draw: SeededDraw, max_elems: int = 96) -> UOp:
    """A random kernel (seeded only): output ``out_shape`` from a random movement view
    of an input buffer, ``loops`` nd, flat or tiled, an elementwise body or a sum/max
    over a reduce axis, the body a random float (or i32) expression whose leaves are
    loads through the view and a second, shape-preserving (flipped, shifted and
    padded) view, casts of the output indices, a variable, and constants."""
    from tests.gen_cases import random_movement

    rng = draw.rng
    dt = _pick(draw, _KERNEL_DTYPES)
    for _ in range(100):
        base = [_pick(draw, _KERNEL_SIZES) for _ in range(_int(draw, 1, 3))]
        v1 = View.contiguous(base)
        try:
            for _ in range(_int(draw, 0, 3)):
                v1 = random_movement(rng, v1)
        except BuildError:
            continue
        if 0 < v1.numel <= max_elems and v1.ndim <= 3:
            break
    else:
        raise RuntimeError("no view small enough")  # pragma: no cover
    shape = v1.shape
    v2 = View.contiguous(shape)
    if _int(draw, 0, 1):
        v2 = v2.flip([d for d in range(len(shape)) if _int(draw, 0, 1)] or [0])
    if _int(draw, 0, 1):  # shift by padding one side and shrinking the other
        d = _int(draw, 0, len(shape) - 1)
        k = _int(draw, 1, 2)
        pads = [(0, 0)] * len(shape)
        pads[d] = (k, 0) if _int(draw, 0, 1) else (0, k)
        lo = 0 if pads[d][0] else k
        v2 = v2.pad(pads).shrink([(lo, lo + s) if i == d else (0, s)
                                  for i, s in enumerate(shape)])
    in1 = UOp.buffer(1, dt, v1.buffer_size)
    in2 = UOp.buffer(2, dt, v2.buffer_size)
    red = _int(draw, 0, 3) == 0
    red_shape = (_pick(draw, (2, 3, 4)),) if red else ()
    red_op = _pick(draw, (Ops.ADD, Ops.MAX)) if red else None
    var = UOp.var("n", -_int(draw, 0, 4), _int(draw, 0, 6)) if _int(draw, 0, 2) == 0 else None
    tiles = tuple(_pick(draw, [t for t in range(1, s + 1) if s % t == 0]) for s in shape)
    loops = _pick(draw, ("nd", "nd", "flat", tiles))
    cfg = _Cfg(div_by_expr=False, extra_ops=False, floats=True)

    def body(idxs: list[UOp], rng_: Any) -> UOp:
        out_idx = idxs[:len(shape)]
        pool = tuple(idxs) + ((var,) if var is not None else ())
        leaves = [load(in1, v1, out_idx), load(in2, v2, out_idx, alt=None)]

        def leaf(d: int) -> UOp:
            r = _int(draw, 0, 5)
            if r <= 2:
                return leaves[r % 2]
            if r == 3:
                return (_pick(draw, pool) if dt.is_float else _expr(draw, pool, 1, _SAFE)
                        ).cast(dt)
            return UOp.const(dt, _pick(draw, _NICE_CONSTS if dt.is_float else SMALL_CONSTS))

        def value(d: int) -> UOp:
            if d <= 0 or _int(draw, 0, 3) == 0:
                return leaf(d)
            if not dt.is_float:
                op = _pick(draw, ("add", "sub", "mul", "max", "and", "xor", "where"))
            else:
                op = _pick(draw, ("add", "sub", "mul", "fdiv", "max", "min", "where", "neg",
                                  "sqrt", "idiom"))
            if op == "where":
                return _cond(draw, pool, 1, cfg if dt.is_float else _SAFE).where(
                    value(d - 1), value(d - 1))
            if op == "neg":
                return -value(d - 1)
            if op == "sqrt":
                return value(d - 1).alu(Ops.SQRT)
            if op == "idiom":
                x = value(d - 1)
                return _pick(draw, (x / x, x + _fc(dt, 0.0), x * _fc(dt, 0.0), x - x))
            a, b = value(d - 1), value(d - 1)
            return a.alu({"add": Ops.ADD, "sub": Ops.SUB, "mul": Ops.MUL, "fdiv": Ops.FDIV,
                          "max": Ops.MAX, "min": Ops.MIN, "and": Ops.AND,
                          "xor": Ops.XOR}[op], b)

        return value(3)

    return with_range_kinds(kernel(shape, dt, body, red_shape=red_shape, red_op=red_op,
                                   loops=loops))


_KINDS = ("loop", "loop", "upcast", "unroll", "reduce")


def with_range_kinds(g: UOp) -> UOp:
    """``g`` with the ranges of constant end given kinds (loop, upcast, unroll, reduce),
    which change no value but what the lowering's expander does. The choice is a
    function of the graph's text (no draw: a seed's kernels stay the ones it made)."""
    import hashlib

    from eqsat.ir.sexpr import to_sexpr
    from eqsat.ir.uop import range_id

    rng = random.Random(hashlib.sha256(to_sexpr(g).encode()).digest())
    ranges = [u for u in g.toposort() if u.op is Ops.RANGE and u.src[0].op is Ops.CONST]
    return g.substitute({r: UOp.range(r.src[0], range_id(r), rng.choice(_KINDS))
                         for r in ranges})
