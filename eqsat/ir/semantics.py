"""What every ALU op computes, on values and on intervals: the IR's one definition.

The reference interpreter (its scalar path and its vectorized numpy path), the UOp
bounds (:mod:`eqsat.ir.bounds`), the rules' constant folding and div/mod core, and the
e-graph's bound seeding all compute with the functions here.

Values
------
- ``index`` is an exact (unbounded) integer; the fixed-width integers wrap
  two's-complement at their width after every op, casts included (:func:`wrap`).
- ``idiv`` truncates toward zero and ``mod`` takes the dividend's sign, as in C
  (:func:`cdiv`, :func:`cmod`; ``a == cdiv(a, b)*b + cmod(a, b)``).
- ``floordiv`` rounds the quotient toward -inf and ``floormod`` takes the divisor's
  sign (Python's ``//`` and ``%``, tinygrad's FLOORDIV/FLOORMOD: :func:`floordiv`,
  :func:`floormod`; ``a == floordiv(a, b)*b + floormod(a, b)``).
- Undefined (an :class:`Undefined` value naming its cause, never an error by itself):
  a division or remainder by zero, a shift by a negative amount or by at least the
  width of a fixed-width dtype (:data:`INDEX_SHIFT_LIMIT` for index), a negative
  integer ``pow`` exponent, a float-to-int cast of NaN, an infinity or a value the
  target cannot hold. An op that has no meaning on a dtype (``fdiv`` of integers,
  ``mod`` of floats) raises :class:`EvalError`.
- floats: IEEE at the dtype's precision (f16/f32/f64 by numpy's rounding, bf16 rounded
  once to nearest even from the f64 value, :func:`round_float`), computed in f64 and
  rounded, which is exact for ``+ - * /`` and ``sqrt``. ``max``/``min`` propagate
  NaN (numpy's ``maximum``); ``mulacc`` is ``a*b`` rounded, then ``+ c`` rounded;
  ``pow`` is C's (its IEEE special values, ``pow(-inf, 0.5) == inf``).
- bools: ``add``/``or``/``max`` are or, ``mul``/``and``/``min`` are and, ``xor`` is !=.

:func:`alu` computes one op on scalar operands; :data:`INT_BINARY`, :data:`BOOL_BINARY`
and :func:`compare` work on numpy arrays as well, and :func:`wrap_array`,
:func:`cdiv_array` and :func:`cmod_array` are the array twins of :func:`wrap`,
:func:`cdiv` and :func:`cmod`.

Intervals
---------
An interval is a ``(lo, hi)`` pair of exact integers; ``-inf``/``inf`` stand for an
unbounded end where a function says so. ``iv_<op>(a, b)`` is an interval holding
``x <op> y`` for every ``x`` in ``a`` and ``y`` in ``b`` (exact integers, before any
wrap; :func:`iv_wrap` gives the interval once a dtype wraps it). The e-graph's interval
analysis (egglog rules) computes the same functions, on i64, where its rules apply
(``tests/eqsat/engines/test_egraph_intervals.py`` checks each op against it).
"""

from __future__ import annotations

import functools
import math
import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops

if TYPE_CHECKING:
    import numpy as np

    NP_FLOAT: dict[str, Any]  # (made at its first read: the module's __getattr__)

__all__ = [
    "EvalError", "Undefined", "INDEX_SHIFT_LIMIT", "cdiv", "cmod", "floordiv", "floormod",
    "wrap", "round_float",
    "shift_limit", "compare", "alu", "cast", "bitcast", "INT_BINARY", "BOOL_BINARY",
    "wrap_array", "cdiv_array", "cmod_array", "divide_array", "float_array", "cast_float_array",
    "int_to_float", "NP_FLOAT", "Interval", "unbounded", "dtype_bounds",
    "iv_wrap", "iv_add", "iv_sub", "iv_neg", "iv_not", "iv_not_bool", "iv_mul", "iv_max",
    "iv_min", "iv_hull", "iv_where", "iv_xor_bool", "iv_cast_bool", "iv_idiv_any",
    "iv_idiv_corners", "iv_idiv", "iv_floordiv", "iv_floormod", "iv_mod_range",
    "iv_mod_bucket", "iv_mod", "iv_shift", "iv_bits", "cmp_decided", "iv_cmp",
]

Num = int | float
Interval = tuple[Num, Num]
INF = math.inf


class EvalError(ValueError):
    """The graph has no value here: undefined operation, missing/out-of-range
    leaf, out-of-bounds memory access, or an op the interpreter cannot run."""


@dataclass(frozen=True, slots=True)
class Undefined:
    """An undefined value (division by zero, ...) carrying its cause."""

    reason: str

    def __repr__(self) -> str:
        return f"Undefined({self.reason!r})"


#: an index shift by this much or more is undefined (it would build a huge integer)
INDEX_SHIFT_LIMIT = 4096


# ---------------------------------------------------------------------------
# integers
def is_symbolic(v: object) -> bool:
    """Whether ``v`` is a symbolic integer standing for an int (its class says
    ``symbolic_int = True``): the proofs run the rules, and the interval analysis, on
    such values (``rules/proof/symbolic.py``)."""
    return getattr(type(v), "symbolic_int", False)


def exact(v: Any) -> Any:
    """``int(v)`` of an interval end or a constant (a bool is 0/1); a symbolic
    integer stays itself."""
    return v if is_symbolic(v) else int(v)


def cdiv(a: int, b: int) -> int:
    """C integer division: truncate toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def cmod(a: int, b: int) -> int:
    """C remainder (the dividend's sign): ``a == cdiv(a, b)*b + cmod(a, b)``."""
    return a - cdiv(a, b) * b


def floordiv(a: int, b: int) -> int:
    """Floor division: the quotient rounded toward -inf (Python's ``//``)."""
    q = cdiv(a, b)
    return q - 1 if q * b != a and (a < 0) != (b < 0) else q


def floormod(a: int, b: int) -> int:
    """Floor remainder (the divisor's sign): ``a == floordiv(a, b)*b + floormod(a, b)``."""
    return a - floordiv(a, b) * b


def _divide(op: Ops, a: int, b: int) -> int:
    """``a op b`` for one of the integer divisions (``b != 0``)."""
    if op is Ops.IDIV:
        return cdiv(a, b)
    if op is Ops.MOD:
        return cmod(a, b)
    return floordiv(a, b) if op is Ops.FLOORDIV else floormod(a, b)


def wrap(dt: DType, v: int) -> int:
    """``v`` wrapped two's-complement to the fixed-width integer ``dt`` (other dtypes:
    ``v`` itself)."""
    if dt.kind == "int":
        m = 1 << dt.bits
        v &= m - 1
        return v - m if v >= m >> 1 else v
    if dt.kind == "uint":
        return v & ((1 << dt.bits) - 1)
    return v


def shift_limit(dt: DType) -> int:
    """Shift amounts from 0 up to (not including) this are defined on ``dt``."""
    return dt.bits if dt.is_fixed_int else INDEX_SHIFT_LIMIT


#: the integer ops that are one Python operator on exact values (ints or numpy arrays)
INT_BINARY: dict[Ops, Callable[[Any, Any], Any]] = {
    Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul,
    Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor,
}

#: the bool ops, on bools or bool arrays
BOOL_BINARY: dict[Ops, Callable[[Any, Any], Any]] = {
    Ops.ADD: operator.or_, Ops.OR: operator.or_, Ops.MAX: operator.or_,
    Ops.MUL: operator.and_, Ops.AND: operator.and_, Ops.MIN: operator.and_,
    Ops.XOR: operator.xor,
}

_CMP: dict[Ops, Callable[[Any, Any], Any]] = {
    Ops.LT: operator.lt, Ops.LE: operator.le, Ops.GT: operator.gt, Ops.GE: operator.ge,
    Ops.EQ: operator.eq, Ops.NE: operator.ne,
}


def compare(op: Ops, a: Any, b: Any) -> Any:
    """The comparison ``op`` of two values (or, elementwise, of two numpy arrays)."""
    return _CMP[op](a, b)


def _int_alu(op: Ops, dt: DType, args: Sequence[Any]) -> int | Undefined:
    a = int(args[0])
    if op is Ops.NEG:
        return wrap(dt, -a)
    if op is Ops.NOT:
        return wrap(dt, ~a)
    if op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        return a
    if len(args) < 2:
        raise EvalError(f"{op.name} is not defined on {dt}")
    b = int(args[1])
    f = INT_BINARY.get(op)
    if f is not None:
        return wrap(dt, f(a, b))
    if op in GroupOp.IntDiv:
        if b == 0:
            return Undefined(f"{op.name.lower()} by zero")
        return wrap(dt, _divide(op, a, b))
    if op is Ops.MAX:
        return max(a, b)
    if op is Ops.MIN:
        return min(a, b)
    if op in (Ops.SHL, Ops.SHR):
        if b < 0 or b >= shift_limit(dt):
            return Undefined(f"{op.name.lower()} by {b} on {dt}")
        return wrap(dt, a << b if op is Ops.SHL else a >> b)
    if op is Ops.MULACC:
        return wrap(dt, a * b + int(args[2]))
    if op is Ops.POW:
        if b < 0:
            return Undefined(f"integer pow with negative exponent {b}")
        if b > INDEX_SHIFT_LIMIT and abs(a) > 1 and not dt.is_fixed_int:
            raise EvalError(f"index pow exponent {b} is too large to compute")
        return wrap(dt, pow(a, b, 1 << dt.bits) if dt.is_fixed_int else a ** b)
    if op is Ops.MULHI:
        if not dt.is_fixed_int:
            raise EvalError(f"mulhi needs a fixed-width dtype, not {dt}")
        return wrap(dt, (a * b) >> dt.bits)
    if op is Ops.FDIV:
        raise EvalError(f"fdiv is a float op, not defined on {dt}")
    raise EvalError(f"{op.name} is not defined on {dt}")


# ---------------------------------------------------------------------------
# floats
#: the largest finite bf16, (2 - 2**-7) * 2**127
_BF16_MAX = math.ldexp(255, 120)


def _bf16(v: float) -> float:
    """``v`` rounded once to bf16 (8 significand bits, f32's exponent range; to nearest,
    ties to even): the multiple of the bf16 spacing at ``v``'s binade nearest to it.
    Rounding through f32 first would round twice (an f64 or a large integer)."""
    if v == 0 or not math.isfinite(v):
        return v
    e = math.frexp(v)[1]                 # |v| in [2**(e-1), 2**e)
    if e > 128:                          # |v| >= 2**128: past bf16's largest finite value
        return math.copysign(math.inf, v)
    ulp = max(e - 8, -133)               # the spacing: 2**-133 below the normals
    r = math.ldexp(round(math.ldexp(v, -ulp)), ulp)  # round(): ties to even, exact
    return math.copysign(math.inf if abs(r) > _BF16_MAX else r, v)  # a zero keeps v's sign


def _numpy() -> Any:
    """numpy, imported when a float is first rounded or an array first computed: a
    process whose values are integers and bools never imports it (its import is a
    large part of a fresh process's start)."""
    import numpy

    return numpy


def round_float(dt: DType, v: Any) -> float:
    """``v`` rounded to the precision of the float dtype ``dt`` (a Python float)."""
    name = dt.scalar().name
    np = _numpy()
    with np.errstate(over="ignore"):
        if name == "f32":
            return float(np.float32(v))
        if name == "f16":
            return float(np.float16(v))
        if name == "bf16":
            return _bf16(float(v))
    return float(v)


def _f(x: float) -> np.float64:
    return _numpy().float64(x)


def _fop(dt: DType, fn: Callable[[], Any]) -> float:
    with _numpy().errstate(all="ignore"):
        return round_float(dt, float(fn()))


def _odd_integer(b: float) -> bool:
    return math.isfinite(b) and b == math.floor(b) and abs(b) < 2.0 ** 53 and int(b) % 2 == 1


def _pow(a: float, b: float) -> float:
    """C's ``pow`` of doubles, IEEE special values included (numpy's ``power`` takes
    ``x**0.5`` for ``sqrt(x)``, which differs at ``-inf`` and ``-0``)."""
    try:
        return math.pow(a, b)
    except OverflowError:  # a range error: the infinity of the result's sign
        return -math.inf if a < 0 and _odd_integer(b) else math.inf
    except ValueError:  # a pole (0 to a negative power) or a domain error (NaN)
        if a == 0:
            return -math.inf if math.copysign(1.0, a) < 0 and _odd_integer(b) else math.inf
        return math.nan


@functools.cache
def _float_ops() -> tuple[dict[Ops, Callable[[Any], Any]], dict[Ops, Callable[[Any, Any], Any]]]:
    """The float ops' functions: unary, binary (numpy's, made at the first float op)."""
    np = _numpy()
    unary: dict[Ops, Callable[[Any], Any]] = {
        Ops.SQRT: np.sqrt, Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin,
        Ops.TRUNC: np.trunc, Ops.FLOOR: np.floor, Ops.CEIL: np.ceil, Ops.ROUND: np.rint,
    }
    binary: dict[Ops, Callable[[Any, Any], Any]] = {
        Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul,
        Ops.FDIV: operator.truediv, Ops.MAX: np.maximum, Ops.MIN: np.minimum, Ops.POW: _pow,
    }
    return unary, binary


def _float_alu(op: Ops, dt: DType, args: Sequence[Any]) -> float:
    a = args[0]
    if op is Ops.NEG:
        return -a
    if op is Ops.RECIP:
        return _fop(dt, lambda: _f(1.0) / _f(a))
    unary, binary = _float_ops()
    f1 = unary.get(op)
    if f1 is not None:
        return _fop(dt, lambda: f1(_f(a)))
    f2 = binary.get(op)
    if f2 is not None and len(args) > 1:
        return _fop(dt, lambda: f2(_f(a), _f(args[1])))
    if op is Ops.MULACC:
        ab = _fop(dt, lambda: _f(a) * _f(args[1]))
        return _fop(dt, lambda: _f(ab) + _f(args[2]))
    raise EvalError(f"{op.name} is not defined on {dt}")


def _bool_alu(op: Ops, args: Sequence[Any]) -> bool:
    if op is Ops.NOT:
        return not args[0]
    f = BOOL_BINARY.get(op)
    if f is None or len(args) != 2:
        raise EvalError(f"{op.name} is not defined on bool")
    return f(bool(args[0]), bool(args[1]))


def alu(op: Ops, dt: DType, args: Sequence[Any]) -> Any:
    """The value of the ALU op ``op`` on scalar operands ``args``; ``dt`` is the
    result's scalar dtype (bool for a comparison). An :class:`Undefined` when C leaves
    the value undefined; :class:`EvalError` when the op has no meaning on ``dt``."""
    if op in _CMP:
        return bool(_CMP[op](args[0], args[1]))
    if op is Ops.WHERE:
        return args[1] if args[0] else args[2]
    if dt.is_bool:
        return _bool_alu(op, args)
    if dt.is_float:
        return _float_alu(op, dt, args)
    if dt.is_int:
        return _int_alu(op, dt, args)
    raise EvalError(f"cannot compute {op.name} of dtype {dt}")


# ---------------------------------------------------------------------------
# conversions
def cast(x: Any, src: DType, dst: DType) -> Any:
    """C's conversion of the scalar ``x`` of ``src`` to the scalar dtype ``dst``."""
    if dst.is_bool:
        return bool(x != 0)  # NaN is true, as in C
    if dst.is_float:
        return round_float(dst, x) if isinstance(x, float) else int_to_float(dst, int(x))
    if dst.is_int:
        if isinstance(x, float):
            if not math.isfinite(x):
                return Undefined(f"cast of {x} to {dst}")
            v = math.trunc(x)
            if dst.is_fixed_int and not dst.min <= v <= dst.max:
                return Undefined(f"cast of {x} to {dst} out of range")
            return v
        return wrap(dst, int(x))
    raise EvalError(f"cannot cast {src} to {dst}")


#: significand bits (the implicit one included) of each float dtype
_SIGNIFICAND = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}


def int_to_float(dt: DType, x: int) -> float:
    """The integer ``x`` rounded once to the float dtype ``dt`` (to nearest, ties to
    even; beyond its largest finite value, an infinity), as C converts an integer.
    Going through a Python float first rounds twice beyond 2**53: ``2**53 + 2**29 + 1``
    would become ``2**53`` in f32, not ``2**53 + 2**30``."""
    if -(1 << 53) <= x <= 1 << 53:
        return round_float(dt, float(x))
    n = abs(x)
    shift = n.bit_length() - _SIGNIFICAND[dt.scalar().name]
    q, r = divmod(n, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    try:
        v = math.ldexp(q, shift)  # exact: q has at most the dtype's significand bits
    except OverflowError:
        v = math.inf
    return round_float(dt, v if x > 0 else -v)


_BITFMT = {("int", 8): "b", ("int", 16): "h", ("int", 32): "i", ("int", 64): "q",
           ("uint", 8): "B", ("uint", 16): "H", ("uint", 32): "I", ("uint", 64): "Q",
           ("float", 16): "e", ("float", 32): "f", ("float", 64): "d", ("bool", 1): "?"}


def bitcast(x: Any, src: DType, dst: DType) -> Any:
    """The scalar ``x`` of ``src`` read back as ``dst`` (the same bits)."""
    if src.name == "bf16" or dst.name == "bf16":
        if src.name == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", x))[0] >> 16
            return cast(bits, dtypes.u16, dst) if dst.is_int else bitcast(
                bits, dtypes.u16, dst)
        bits = struct.unpack("<H", struct.pack(f"<{_BITFMT[(src.kind, src.bits)]}", x))[0]
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    fs, fd = _BITFMT.get((src.kind, src.bits)), _BITFMT.get((dst.kind, dst.bits))
    if fs is None or fd is None or src.bits != dst.bits:
        raise EvalError(f"cannot bitcast {src} to {dst}")
    out = struct.unpack(f"<{fd}", struct.pack(f"<{fs}", x))[0]
    return round_float(dst, out) if dst.is_float else out


# ---------------------------------------------------------------------------
# numpy arrays: the vectorized interpreter's twins of wrap, cdiv and cmod
def _obj(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == object else a.astype(object)


def wrap_array(dt: DType, v: np.ndarray) -> np.ndarray:
    """:func:`wrap` of every element of an int64 or object (Python int) array: int64
    when the wrapped values fit it (every fixed-width dtype but u64)."""
    if not dt.is_fixed_int:
        return v
    np = _numpy()
    bits = dt.bits
    if v.dtype != object and dt.kind == "int" and bits == 64:
        return v  # exact int64 values (overflow-prone ops went to object arrays)
    if v.dtype != object and bits < 63:
        m = (1 << bits) - 1
        w = v & m
        if dt.kind == "int":
            w = np.where(w >= (1 << (bits - 1)), w - (1 << bits), w)
        return w
    o = _obj(v)
    w = o & ((1 << bits) - 1)
    if dt.kind == "int":
        w = np.where(w >= (1 << (bits - 1)), w - (1 << bits), w)
    # fits int64 after wrapping unless u64
    if dt.kind == "int" or bits < 64:
        return w.astype(np.int64)
    return w


@functools.cache
def _np_float() -> dict[str, Any]:
    """:data:`NP_FLOAT` (made at its first use: numpy is imported then)."""
    np = _numpy()
    return {"f16": np.float16, "f32": np.float32, "f64": np.float64}


@functools.cache
def _pow_array() -> Any:
    """:func:`_pow` elementwise (a numpy ufunc of Python objects)."""
    return _numpy().frompyfunc(_pow, 2, 1)


def __getattr__(name: str) -> Any:
    # NP_FLOAT, the float dtypes the array twins compute on (bf16 has no numpy dtype):
    # numpy's, so made at the first read
    if name == "NP_FLOAT":
        return _np_float()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def float_array(op: Ops, dt: DType, args: Sequence[np.ndarray]) -> np.ndarray:
    """:func:`alu` of a float op elementwise over numpy arrays, as it computes one
    value: in f64 (the same numpy functions, C's ``pow``), rounded to ``dt`` (a
    :data:`NP_FLOAT` dtype); ``mulacc`` rounds its product first."""
    np = _numpy()
    npdt = _np_float()[dt.scalar().name]
    if op is Ops.NEG:
        return -args[0]
    unary, binary = _float_ops()
    f = [np.asarray(a).astype(np.float64) for a in args]
    with np.errstate(all="ignore"):
        if op is Ops.RECIP:
            r = 1.0 / f[0]
        elif op in unary:
            r = unary[op](f[0])
        elif op is Ops.POW:
            r = _pow_array()(f[0], f[1]).astype(np.float64)
        elif op in binary and len(f) == 2:
            r = binary[op](f[0], f[1])
        elif op is Ops.MULACC:
            r = (f[0] * f[1]).astype(npdt).astype(np.float64) + f[2]
        else:
            raise EvalError(f"{op.name} is not defined on {dt}")
        return r.astype(npdt)


def cast_float_array(x: np.ndarray, src: DType, dst: DType
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`cast` elementwise where ``src`` or ``dst`` is a float (a :data:`NP_FLOAT`
    dtype): ``(values, undefined)``, ``undefined`` None when no element is (a float to
    int cast of NaN, an infinity, or a value the target cannot hold). Integers come as
    int64 or object (Python int) arrays and leave as int64 when they fit."""
    np = _numpy()
    if dst.is_float:
        npdt = _np_float()[dst.scalar().name]
        if src.is_float or x.dtype == bool or (
                x.dtype != object and (x.size == 0 or int(np.abs(x).max()) <= 1 << 53)):
            with np.errstate(over="ignore"):  # exact in f64, then one rounding
                return x.astype(np.float64).astype(npdt), None
        return np.array([int_to_float(dst, int(v)) for v in x], dtype=npdt), None
    if dst.is_bool:
        return x != 0, None  # NaN is true, as in C
    t = np.trunc(x.astype(np.float64))
    bad = ~np.isfinite(t)
    if dst.is_fixed_int:  # C leaves a value the target cannot hold undefined
        with np.errstate(invalid="ignore"):
            bad |= (t < float(dst.min)) | (t >= float(dst.max + 1))
    t = np.where(bad, 0.0, t)
    undef = bad if bad.any() else None
    if np.abs(t).max(initial=0.0) < 2.0 ** 62:
        out = t.astype(np.int64)
        return (out.astype(object) if dst.name == "u64" else out), undef
    return np.array([int(v) for v in t], dtype=object), undef


def cdiv_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`cdiv` elementwise (no element of ``b`` is 0)."""
    q = abs(a) // abs(b)
    return _numpy().where((a < 0) ^ (b < 0), -q, q)


def cmod_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`cmod` elementwise (no element of ``b`` is 0)."""
    return a - cdiv_array(a, b) * b


def divide_array(op: Ops, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b`` elementwise for one of the integer divisions (no element of ``b`` is
    0; numpy's ``//`` and ``%`` floor, as Python's)."""
    if op is Ops.IDIV:
        return cdiv_array(a, b)
    if op is Ops.MOD:
        return cmod_array(a, b)
    return a // b if op is Ops.FLOORDIV else a % b


# ---------------------------------------------------------------------------
# intervals
def unbounded(v: Num) -> bool:
    """Whether an interval's end is ``-inf``/``inf`` (``math.isinf`` that accepts ints
    too large for a float: index bounds are exact)."""
    return isinstance(v, float) and math.isinf(v)


def dtype_bounds(dt: DType) -> Interval:
    """The full value range of a dtype's scalar (``-inf..inf`` when unbounded)."""
    if dt.ptr or dt.is_void:
        return -INF, INF
    s = dt.scalar()
    if s.is_bool:
        return False, True
    return s.min, s.max


def iv_wrap(dt: DType, lo: Num, hi: Num) -> Interval:
    """The interval of ``wrap(dt, x)`` for ``x`` in ``[lo, hi]``: the interval itself when
    no value wraps, else the dtype's whole range (floats: unbounded; bools: as bools)."""
    if dt.is_bool:
        return bool(lo), bool(hi)
    if dt.is_float:
        return -INF, INF
    dlo, dhi = dtype_bounds(dt)
    if lo < dlo or hi > dhi:
        return dlo, dhi
    return lo, hi


def iv_add(a: Interval, b: Interval) -> Interval:
    """``x + y``: ``[la + lb, ha + hb]``."""
    return a[0] + b[0], a[1] + b[1]


def iv_sub(a: Interval, b: Interval) -> Interval:
    """``x - y``: ``[la - hb, ha - lb]``."""
    return a[0] - b[1], a[1] - b[0]


def iv_neg(a: Interval) -> Interval:
    """``-x``: ``[-ha, -la]``."""
    return -a[1], -a[0]


def iv_not(a: Interval) -> Interval:
    """``~x`` of an integer: ``[-ha-1, -la-1]``."""
    return -a[1] - 1, -a[0] - 1


def iv_not_bool(a: Interval) -> Interval:
    """``!x`` of a bool (0/1): ``[1-ha, 1-la]``."""
    return 1 - a[1], 1 - a[0]


def iv_mul(a: Interval, b: Interval) -> Interval:
    """``x * y``: between the four corner products."""
    p1, p2, p3, p4 = a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]
    if p1 != p1 or p2 != p2 or p3 != p3 or p4 != p4:  # 0 * inf: 0 times anything is 0
        p1, p2, p3, p4 = (0 if p != p else p for p in (p1, p2, p3, p4))
    return min(p1, p2, p3, p4), max(p1, p2, p3, p4)


def iv_max(a: Interval, b: Interval) -> Interval:
    """``max(x, y)``: ``[max(la, lb), max(ha, hb)]`` (bools: or)."""
    return max(a[0], b[0]), max(a[1], b[1])


def iv_min(a: Interval, b: Interval) -> Interval:
    """``min(x, y)``: ``[min(la, lb), min(ha, hb)]`` (bools: and)."""
    return min(a[0], b[0]), min(a[1], b[1])


def iv_hull(a: Interval, b: Interval) -> Interval:
    """Either ``x`` or ``y`` (``where`` whose condition may go both ways)."""
    return min(a[0], b[0]), max(a[1], b[1])


def iv_where(c: Interval, t: Interval, f: Interval) -> Interval:
    """``where(c, x, y)``: the branch a constant condition picks, else both."""
    if c[0] == c[1]:
        return t if c[0] else f
    return iv_hull(t, f)


def iv_xor_bool(a: Interval, b: Interval) -> tuple[bool, bool]:
    """``x ^ y`` of bools: a value when both are constant, else ``[False, True]``."""
    if a[0] == a[1] and b[0] == b[1]:
        v = a[0] != b[0]
        return v, v
    return False, True


def iv_cast_bool(a: Interval) -> tuple[bool, bool]:
    """``bool(x)`` (``x != 0``): false when ``x`` is always 0, true when 0 is outside."""
    if a[0] == a[1] == 0:
        return False, False
    if a[0] > 0 or a[1] < 0:
        return True, True
    return False, True


def iv_idiv_any(a: Interval) -> Interval:
    """``x // y`` for any divisor: ``|x // y| <= |x|``, so ``[-M, M]``, ``M = max|x|``."""
    m = max(abs(a[0]), abs(a[1]))
    return -m, m


def _tdiv(x: Num, y: Num) -> Num:
    if unbounded(y):
        return 0  # (x over an unbounded divisor: the limit, 0)
    return cdiv(exact(x), exact(y))


def iv_idiv_corners(a: Interval, b: Interval) -> Interval:
    """``x // y`` for a divisor interval ``b`` that excludes 0 (``x`` finite): between
    the four corner quotients (truncation is monotone in ``x``, and in ``y`` on either
    side of 0)."""
    q1, q2, q3, q4 = _tdiv(a[0], b[0]), _tdiv(a[0], b[1]), _tdiv(a[1], b[0]), _tdiv(a[1], b[1])
    return min(q1, q2, q3, q4), max(q1, q2, q3, q4)


def iv_idiv(a: Interval, b: Interval) -> Interval:
    """``x // y`` over the divisors ``y != 0`` of ``b`` (a division by zero has no
    value): the corner quotients of the negative and of the positive part of ``b``;
    :func:`iv_idiv_any` when ``x`` is unbounded or ``b`` is ``[0, 0]``."""
    parts = _divisor_parts(b)
    if not parts or unbounded(a[0]) or unbounded(a[1]):
        return iv_idiv_any(a)
    lo, hi = iv_idiv_corners(a, parts[0])
    if len(parts) == 2:
        lo2, hi2 = iv_idiv_corners(a, parts[1])
        lo, hi = min(lo, lo2), max(hi, hi2)
    return lo, hi


def _fdiv(x: Num, y: Num) -> Num:
    if unbounded(y):  # the limit over an unbounded divisor: 0, or -1 below it
        return 0 if x == 0 or (x > 0) == (y > 0) else -1
    return floordiv(exact(x), exact(y))


def _divisor_parts(b: Interval) -> list[Interval]:
    """The negative and the positive part of a divisor interval (0 excluded)."""
    y0, y1 = b
    parts = []
    if y0 < 0:
        parts.append((y0, min(y1, -1)))
    if y1 > 0:
        parts.append((max(y0, 1), y1))
    return parts


def iv_floordiv(a: Interval, b: Interval) -> Interval:
    """``floordiv(x, y)`` over the divisors ``y != 0`` of ``b``: the corner quotients of
    each sign's part of ``b`` (flooring is monotone in ``x``, and in ``y`` on either side
    of 0); :func:`iv_idiv_any` when ``x`` is unbounded or ``b`` is ``[0, 0]`` (``|x|``
    bounds the quotient: ``-|x|`` is an integer at most ``x/y``)."""
    parts = _divisor_parts(b)
    if not parts or unbounded(a[0]) or unbounded(a[1]):
        return iv_idiv_any(a)
    qs = [_fdiv(x, y) for p in parts for x in a for y in p]
    return min(qs), max(qs)


def iv_floormod(a: Interval, b: Interval) -> Interval:
    """``floormod(x, y)`` over the divisors ``y != 0`` of ``b``: the divisor's sign, below
    ``|y|``; within ``[0, x]`` for ``x >= 0`` and ``y > 0``, ``[x, 0]`` for ``x <= 0`` and
    ``y < 0``; exact for a constant divisor and a dividend within one bucket."""
    y0, y1 = b
    if y0 == y1 and y0 != 0 and not (unbounded(y0) or unbounded(a[0]) or unbounded(a[1])):
        c, x0, x1 = exact(y0), exact(a[0]), exact(a[1])
        if floordiv(x0, c) == floordiv(x1, c):
            return floormod(x0, c), floormod(x1, c)
    lo: Num = INF
    hi: Num = -INF
    for p0, p1 in _divisor_parts(b):
        if p0 > 0:
            plo, phi = 0, p1 - 1
            if a[0] >= 0:
                phi = min(phi, a[1])
        else:
            plo, phi = p0 + 1, 0
            if a[1] <= 0:
                plo = max(plo, a[0])
        lo, hi = min(lo, plo), max(hi, phi)
    if lo > hi:  # only a divisor of 0: no value
        return iv_idiv_any(a)
    return lo, hi


def iv_mod_range(a: Interval, m: Num) -> Interval:
    """``x % y`` for divisors with ``0 < |y| <= m``: ``|x % y| < m`` and the dividend's
    sign, so ``[min(0, max(la, 1-m)), max(0, min(ha, m-1))]``."""
    return min(0, max(a[0], 1 - m)), max(0, min(a[1], m - 1))


def iv_mod_bucket(a: Interval, c: int) -> Interval | None:
    """``x % c`` for the constant ``c != 0`` when every ``x`` of the finite ``a`` truncates
    to one quotient and has one sign: ``[la % c, ha % c]`` (C remainders); else None."""
    k = abs(c)
    x0, x1 = a
    if x0 * x1 >= 0 and cdiv(x0, k) == cdiv(x1, k):
        return cmod(x0, k), cmod(x1, k)
    return None


def iv_mod(a: Interval, b: Interval) -> Interval:
    """``x % y`` over the divisors ``y != 0`` of ``b`` (``b`` is not ``[0, 0]``): exact for
    a constant divisor and a dividend within one bucket of one sign, else
    :func:`iv_mod_range`."""
    y0, y1 = b
    if y0 == y1 and y0 != 0 and not (unbounded(y0) or unbounded(a[0]) or unbounded(a[1])):
        r = iv_mod_bucket((exact(a[0]), exact(a[1])), exact(y0))
        if r is not None:
            return r
    return iv_mod_range(a, max(abs(y0), abs(y1)))


def iv_shift(op: Ops, a: Interval, s: Interval) -> Interval:
    """``x << s`` or ``x >> s`` for the defined shift amounts ``s`` (``0 <= s``, finite)."""
    if op is Ops.SHL:
        vals = [x * (1 << int(k)) for x in a for k in s]
    else:
        vals = [x >> int(k) for x in a for k in s]
    return min(vals), max(vals)


def iv_bits(op: Ops, a: Interval, b: Interval) -> Interval:
    """``x & y``, ``x | y`` or ``x ^ y`` of two's-complement integers: no larger than a
    non-negative operand for ``&``; else within the powers of two that hold the
    operands (``|`` of non-negative operands is at least the larger one)."""
    x0, x1 = a
    y0, y1 = b
    if op is Ops.AND and (x0 >= 0 or y0 >= 0):
        return 0, min(v for v0, v in (a, b) if v0 >= 0)
    lo: Num
    hi: Num
    if any(unbounded(v) for v in (x0, x1, y0, y1)):
        lo, hi = -INF, INF
    else:
        k = max(int(abs(v)).bit_length() for v in (x0, x1, y0, y1))
        lo, hi = (0 if min(x0, y0) >= 0 else -(1 << k)), (1 << k) - 1
    if op is Ops.OR and min(x0, y0) >= 0:
        lo = max(x0, y0)
    return lo, hi


def cmp_decided(op: Ops, a: Interval, b: Interval) -> tuple[bool, bool]:
    """``(always, never)``: whether ``x <op> y`` holds for every, or for no, ``x`` in
    ``a`` and ``y`` in ``b`` (an unknown end is ``-inf``/``inf``)."""
    a0, a1 = a
    b0, b1 = b
    if op is Ops.LT:
        return a1 < b0, a0 >= b1
    if op is Ops.LE:
        return a1 <= b0, a0 > b1
    if op is Ops.GT:
        return a0 > b1, a1 <= b0
    if op is Ops.GE:
        return a0 >= b1, a1 < b0
    same = a0 == a1 == b0 == b1
    apart = a1 < b0 or b1 < a0
    if op is Ops.EQ:
        return same, apart
    if op is Ops.NE:
        return apart, same
    raise ValueError(f"{op.name} is not a comparison")


def iv_cmp(op: Ops, a: Interval, b: Interval) -> tuple[bool, bool]:
    """The bool interval of ``x <op> y``: ``(True, True)``, ``(False, False)`` or
    ``(False, True)``."""
    always, never = cmp_decided(op, a, b)
    if always:
        return True, True
    if never:
        return False, False
    return False, True

