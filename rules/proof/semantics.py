"""The meaning of the IR's ops as z3 terms: the semantics every proof reads.

It follows the reference interpreter (:mod:`eqsat.ir.interp`) and the text format's spec:

- ``index`` is an unbounded integer (z3 ``Int``); ``idiv`` truncates toward zero and
  ``mod`` takes the dividend's sign (C); ``floordiv`` rounds toward -inf and ``floormod``
  takes the divisor's sign.
- A fixed-width integer is an ``Int`` that wraps two's-complement at its width. Its term
  is kept unwrapped through ``+ - * neg ~`` (wrapping commutes with them) and wrapped
  where an op reads its value (a comparison, a division, a bitwise op through a
  bit-vector, a cast, equality of results): ``(x*c1)*c2`` and ``x*(c1*c2)`` are then one
  polynomial, which z3 sees at once, where bit-vector products of 64 bits are hard.
  With ``bv=True`` it is a z3 bit-vector of its width instead (signed or unsigned ops by
  its kind), which suits the bitwise rules; a proof tries the first, then the second.
- A float is z3's IEEE-754 sort of its width (``bf16``: 8 exponent, 8 significand bits),
  round to nearest even; equality of results is z3's ``=`` (NaN equals NaN, -0.0 is not
  0.0). ``max``/``min`` are numpy's (NaN wins; ``max(a, b)`` is ``a > b ? a : b``). The
  transcendental ops (``sin``, ``exp2``, ``log2``, ``pow`` of non-constant exponents) are
  uninterpreted functions of their operands: a rule may move them, not evaluate them.
  The bitwise ops of ``index`` are uninterpreted too (z3's integers have none), and its
  shifts multiply or divide by an uninterpreted power of two: a proof that holds for
  every function holds for the real one.
- A bool is a z3 ``Bool``; ``+``/``max`` are or, ``*``/``min`` and.
- Every value also says whether it is Invalid and whether it is undefined (a division by
  zero, a bad shift, a float-to-int cast of NaN): an undefined operand makes the result
  undefined, else an Invalid operand makes it Invalid (``where`` reads only its
  condition and the branch taken).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import z3

from eqsat.ir.dtype import DType
from eqsat.ir.ops import GroupOp, Ops

__all__ = ["c_idiv", "c_divmod", "floor_divmod", "MeaninglessError", "Val", "sort_of", "fresh",
           "const", "apply", "same", "wrap",
           "canon", "as_int", "FLOAT_SORTS", "INT_RANGE", "RLIMIT", "check", "solver", "Spent",
           "own_context"]

#: the budget of one z3 query, in z3's resource units (``rlimit``: a count of the
#: solver's own steps, not seconds), so a proof's verdict does not depend on the load or
#: the speed of the machine; ``eqsat rules --rlimit N`` sets another
RLIMIT = 40_000_000


class Spent:
    """The resource units the queries of one proof took: ``most`` is the largest that a
    query z3 settled (sat or unsat) took, the budget the proof needs; ``total`` every
    query's, those that ran out included."""

    most = 0
    total = 0

    @classmethod
    def reset(cls) -> None:
        cls.most = cls.total = 0


def _count() -> int:
    """z3's resource counter (it counts for the whole context, across queries): read
    off an empty query."""
    p = z3.SimpleSolver()
    p.check()
    try:
        return int(p.statistics().get_key_value("rlimit count"))
    except z3.Z3Exception:  # no counter yet (nothing run in this context)
        return 0


@contextmanager
def own_context() -> Iterator[None]:
    """A z3 context of its own for what runs inside (one rule's proof). z3's search
    depends on the terms its context already holds (their ids, its caches) and its
    resource counter is the context's: in the process's one context a proof's verdict
    and units would depend on what was proven before it. The proofs build every term
    in z3's main context (none names a context, none keeps a term between proofs), so
    a fresh context made the main one for the duration is the proof's own."""
    import z3.z3 as core  # (where z3py keeps its main context)

    outer = core._main_ctx
    core._main_ctx = z3.Context()
    try:
        yield
    finally:
        core._main_ctx = outer


def solver(floats: bool = False) -> Any:
    """A z3 solver for one query (run it with :func:`check`) whose verdict depends on
    the query and its ``rlimit`` only. Integers, bools and unknown functions:
    simplification (sums of monomials), values and equations propagated, then z3's SMT
    core. Not ``z3.Solver()``: for a query of one logic that runs z3's strategy of the
    logic, whose stages are cut by wall-clock time (nonlinear integers: the SMT core
    after 2 seconds, nlsat after 3, then the SMT core again), so a query the SMT core
    settles within its budget on an idle machine could run out of it on a loaded one.
    With floats: simplification and equation solving first (they settle most rules at
    once), then z3's float strategy (bit-blasting; no clock in it); z3's default
    solver is slow on these."""
    if floats:
        return z3.Then("simplify", "propagate-values", "ctx-simplify", "solve-eqs",
                       "qffp").solver()
    return z3.Then("simplify", "propagate-values", "solve-eqs",
                   z3.With("simplify", som=True), "smt").solver()


def check(s: Any, rlimit: int) -> Any:
    """``s.check()`` within ``rlimit`` resource units more than the counter stands at
    (z3.unknown past them); what it took is added to :class:`Spent`."""
    before = _count()
    s.set("rlimit", max(1, int(rlimit)))
    r = s.check()
    used = max(0, _count() - before)
    Spent.total += used
    if r != z3.unknown:
        Spent.most = max(Spent.most, used)
    return r

class MeaninglessError(NotImplementedError):
    """The op has no meaning on these dtypes (the IR rejects such a node: a bitcast
    between sizes), so a rule is not proven there: the proof skips the choice."""


FLOAT_SORTS = {"f16": (5, 11), "bf16": (8, 8), "f32": (8, 24), "f64": (11, 53)}


def _range(name: str) -> tuple[int, int] | None:
    d = DType.parse(name)
    if d.is_fixed_int:
        return int(d.min), int(d.max)
    return None


INT_RANGE = {n: _range(n) for n in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")}


def _false() -> Any:
    """z3's False, made in the context current now: a module-level constant would stay
    in the context it was made in, not the proof's own (:func:`own_context`)."""
    return z3.BoolVal(False)


@dataclass(frozen=True)
class Val:
    """A value of scalar dtype ``dt``: ``undef``/``inv`` z3 Bools and the value ``x``
    (for a fixed-width integer an unwrapped representative when ``raw``)."""

    dt: str
    undef: Any
    inv: Any
    x: Any
    raw: bool = False
    #: undefined because of a division or remainder by zero (the part of ``undef`` a
    #: rule must keep: the spec never folds a division by zero into a value)
    divz: Any = field(default_factory=_false)


#: how casts between integers and floats are read: ``"real"`` (bit-precise) or ``"uf"``
#: (a function of the value, unknown: a proof that holds so holds for the real one, and
#: it is much faster where a rule only moves a conversion)
CONVERSIONS = {"mode": "real", "bitwise": "exact"}


def sort_of(dt: str, bv: bool = False) -> Any:
    if dt == "bool":
        return z3.BoolSort()
    if dt in FLOAT_SORTS:
        return z3.FPSort(*FLOAT_SORTS[dt])
    if bv and dt in INT_RANGE:
        return z3.BitVecSort(_bits(dt))
    return z3.IntSort()


def _signed(dt: str) -> bool:
    return DType.parse(dt).kind == "int"


def _is_bv(x: Any) -> bool:
    return isinstance(x, z3.BitVecRef)


def wrap(dt: str, v: Any) -> Any:
    """The two's-complement wrap of an Int ``v`` into fixed-width ``dt``."""
    lo, hi = INT_RANGE[dt]
    m = hi - lo + 1
    return ((v - lo) % m) + lo


def canon(v: Val) -> Any:
    """The value as the dtype holds it (a fixed-width integer wrapped)."""
    return wrap(v.dt, v.x) if v.raw else v.x


def as_int(v: Val) -> Any:
    """An integer or bool value as an Int (bools 0/1)."""
    x = canon(v)
    if _is_bv(x):
        return z3.BV2Int(x, is_signed=_signed(v.dt))
    return z3.If(x, 1, 0) if v.dt == "bool" else x


def fresh(name: str, dt: str, may_inv: bool = True, may_undef: bool = True,
          bv: bool = False) -> Val:
    """A symbolic value of ``dt`` (maybe Invalid, maybe undefined)."""
    x = z3.Const(name, sort_of(dt, bv))
    return Val(dt, z3.Bool(f"{name}.undef") if may_undef else _false(),
               z3.Bool(f"{name}.inv") if may_inv else _false(), x)


def in_range(v: Val) -> Any:
    """The constraint that a fresh fixed-width value is in its dtype's range."""
    r = INT_RANGE.get(v.dt)
    if r is None or _is_bv(v.x):
        return z3.BoolVal(True)
    return z3.And(v.x >= r[0], v.x <= r[1])


def const(dt: str, value: Any, bv: bool = False) -> Val:
    """The constant ``value`` of ``dt`` (an integer literal in a float dtype is that
    float, ``0`` being +0.0)."""
    if dt == "bool":
        return Val(dt, _false(), _false(), z3.BoolVal(bool(value)))
    if dt in FLOAT_SORTS:
        return Val(dt, _false(), _false(), z3.FPVal(float(value), sort_of(dt)))
    v = int(value)
    if dt in INT_RANGE:
        if bv:
            return Val(dt, _false(), _false(), z3.BitVecVal(v, _bits(dt)))
        lo, hi = INT_RANGE[dt]
        v = ((v - lo) % (hi - lo + 1)) + lo
    return Val(dt, _false(), _false(), z3.IntVal(v))


def same(a: Val, b: Val) -> Any:
    """Two values are the same: both undefined, or both Invalid, or the same value."""
    return z3.Or(z3.And(a.undef, b.undef),
                 z3.And(z3.Not(a.undef), z3.Not(b.undef), a.inv == b.inv,
                        z3.Or(a.inv, canon(a) == canon(b))))


def c_idiv(a: Any, b: Any) -> Any:
    """``a // b`` on z3 integers, truncating toward zero as C does."""
    q = z3.If(a >= 0, a, -a) / z3.If(b >= 0, b, -b)  # non-negative operands: floor
    return z3.If((a < 0) == (b < 0), q, -q)


def c_divmod(op: str, a: Any, b: Any) -> Any:
    """C's ``a / b`` (``op`` "idiv") or ``a % b`` ("mod", the dividend's sign) on z3
    integers."""
    q = c_idiv(a, b)
    return q if op == "idiv" else a - q * b


def floor_divmod(op: str, a: Any, b: Any) -> Any:
    """The floor ``a // b`` (``op`` "floordiv", rounded toward -inf) or ``a % b``
    ("floormod", the divisor's sign) on z3 integers."""
    # (as a - q*b: z3 settles the rules' obligations more often than with its mod)
    q = z3.If(b > 0, a / b, (-a) / (-b))  # z3's division floors for a positive divisor
    return q if op == "floordiv" else a - q * b


def _fp_max(a: Any, b: Any, is_max: bool) -> Any:
    nan = z3.fpNaN(a.sort())
    pick = z3.fpGT(a, b) if is_max else z3.fpLT(a, b)
    return z3.If(z3.Or(z3.fpIsNaN(a), z3.fpIsNaN(b)), nan, z3.If(pick, a, b))


def _uf(name: str, dt: str, n: int) -> Any:
    s = sort_of(dt)
    return z3.Function(f"{name}_{dt}", *([s] * n), s)  # (one name, one function)


def _bits(dt: str) -> int:
    return DType.parse(dt).bits


def _to_bv(dt: str, x: Any) -> Any:
    return z3.Int2BV(x, _bits(dt))


def _from_bv(dt: str, b: Any) -> Any:
    return z3.BV2Int(b, is_signed=DType.parse(dt).kind == "int")


def _int_to_float(x: Any, dst: str) -> Any:
    """An integer (Int) as float ``dst``: its exact value rounded once, as the
    interpreter and C convert (:func:`eqsat.ir.semantics.int_to_float`)."""
    return z3.fpToFP(z3.RNE(), z3.ToReal(x), sort_of(dst))


def _float_to_float(x: Any, src: str, dst: str) -> Any:
    """A float as float ``dst``: rounded once (bf16 too)."""
    if src == dst:
        return x
    return z3.fpToFP(z3.RNE(), x, sort_of(dst))


def _cast(v: Val, dst: str, bv: bool) -> tuple[Any, Any]:
    """(value, undefined) of ``cast(v, dst)`` where ``v`` is a value."""
    src = v.dt
    if CONVERSIONS["mode"] == "uf" and (src in FLOAT_SORTS or dst in FLOAT_SORTS) and \
            src != dst and "bool" not in (src, dst):
        # a function of the exact value (an integer's as an Int), unknown
        arg = v.x if src in FLOAT_SORTS else as_int(v)
        key = "float" if src in FLOAT_SORTS else "int"
        f = z3.Function(f"conv_{key}_{src if key == 'float' else ''}_{dst}",
                        arg.sort(), sort_of(dst, bv))
        bad = _false()
        if dst not in FLOAT_SORTS:
            bad = z3.Function(f"convbad_{src}_{dst}", arg.sort(), z3.BoolSort())(arg)
        return f(arg), bad
    if bv:
        out = _cast_bv(v, dst)
        if out is not None:
            return out
    x, bad = _cast_int(v, dst)
    if bv and dst in INT_RANGE and not _is_bv(x):
        x = z3.Int2BV(x, _bits(dst))
    return x, bad


def _cast_bv(v: Val, dst: str) -> tuple[Any, Any] | None:
    """A cast from or to a fixed-width bit-vector, bit-precise (None: not one)."""
    src = v.dt
    x = canon(v)
    if _is_bv(x) and dst in INT_RANGE:  # resize: truncate, or extend by the source's sign
        n, m = x.size(), _bits(dst)
        if m <= n:
            return z3.Extract(m - 1, 0, x), _false()
        return (z3.SignExt if _signed(src) else z3.ZeroExt)(m - n, x), _false()
    if _is_bv(x) and dst in FLOAT_SORTS:  # through f64 first, as the interpreter does
        conv = z3.fpSignedToFP if _signed(src) else z3.fpUnsignedToFP
        f64 = conv(z3.RNE(), x, z3.Float64())
        return (f64 if dst == "f64" else _float_to_float(f64, "f64", dst)), _false()
    if src in FLOAT_SORTS and dst in INT_RANGE:  # truncate; NaN, inf, out of range: undefined
        n = _bits(dst)
        t = z3.fpRoundToIntegral(z3.RTZ(), x)
        s = x.sort()
        if _signed(dst):
            out = z3.Or(z3.fpGEQ(t, z3.FPVal(float(2 ** (n - 1)), s)),
                        z3.fpLT(t, z3.FPVal(-float(2 ** (n - 1)), s)))
            val = z3.fpToSBV(z3.RTZ(), x, z3.BitVecSort(n))
        else:
            out = z3.Or(z3.fpGEQ(t, z3.FPVal(float(2 ** n), s)),
                        z3.fpLT(t, z3.FPVal(0.0, s)))
            val = z3.fpToUBV(z3.RTZ(), x, z3.BitVecSort(n))
        return val, z3.Or(z3.fpIsNaN(x), z3.fpIsInf(x), out)
    if src == "bool" and dst in INT_RANGE:
        n = _bits(dst)
        return z3.If(x, z3.BitVecVal(1, n), z3.BitVecVal(0, n)), _false()
    return None


def _cast_int(v: Val, dst: str) -> tuple[Any, Any]:
    src = v.dt
    if dst == "bool":
        if src == "bool":
            return v.x, _false()
        if src in FLOAT_SORTS:
            return z3.Not(z3.fpEQ(v.x, z3.FPVal(0.0, v.x.sort()))), _false()
        return as_int(v) != 0, _false()
    if dst in FLOAT_SORTS:
        if src in FLOAT_SORTS:
            return _float_to_float(v.x, src, dst), _false()
        return _int_to_float(as_int(v), dst), _false()
    # to an integer
    if src in FLOAT_SORTS:
        r = z3.fpToReal(v.x)
        t = z3.If(r >= 0, z3.ToInt(r), -z3.ToInt(-r))
        bad = z3.Or(z3.fpIsNaN(v.x), z3.fpIsInf(v.x))
        rng = INT_RANGE.get(dst)
        if rng is not None:
            bad = z3.Or(bad, t < rng[0], t > rng[1])
        return t, bad
    x = as_int(v)
    return (wrap(dst, x) if dst in INT_RANGE else x), _false()


def _bitcast(v: Val, dst: str) -> Any:
    src = v.dt
    if src == dst:
        return v.x
    if "bool" in (src, dst) or "index" in (src, dst) or _bits(src) != _bits(dst):
        raise MeaninglessError(f"bitcast {src} -> {dst}")
    if src in FLOAT_SORTS:
        bv = z3.fpToIEEEBV(v.x)
    else:
        bv = canon(v) if _is_bv(v.x) else _to_bv(src, canon(v))
    if dst in FLOAT_SORTS:
        return z3.fpBVToFP(bv, sort_of(dst))
    return bv if _is_bv(v.x) else _from_bv(dst, bv)  # bit-vector readings stay bits


def apply(op: Ops, dt: str, args: list[Val], to: str = "", bv: bool = False) -> Val:
    """``op`` over ``args``; ``dt`` is the result's dtype (``to``: a cast's target;
    ``bv``: fixed-width integers are bit-vectors)."""
    if op is Ops.WHERE:
        c, t, f = args
        undef = z3.Or(c.undef, z3.And(z3.Not(c.inv), z3.If(c.x, t.undef, f.undef)))
        inv = z3.And(z3.Not(c.undef), z3.Or(c.inv, z3.If(c.x, t.inv, f.inv)))
        raw = t.raw or f.raw
        tx = t.x if t.raw == raw else t.x
        fx = f.x if f.raw == raw else f.x
        if t.raw != f.raw:
            tx, fx, raw = canon(t), canon(f), False
        divz = z3.Or(c.divz, z3.And(z3.Not(c.undef), z3.Not(c.inv),
                                    z3.If(c.x, t.divz, f.divz)))
        return Val(dt, undef, inv, z3.If(c.x, tx, fx), raw, divz)
    undef_in = z3.Or(*[a.undef for a in args]) if args else _false()
    inv_in = z3.Or(*[a.inv for a in args]) if args else _false()
    x, own, raw = _value(op, dt, args, to, bv)
    undef = z3.Or(undef_in, z3.And(z3.Not(inv_in), own))
    inv = z3.And(z3.Not(undef_in), inv_in)
    divz = z3.Or(*[a.divz for a in args]) if args else _false()
    if op in GroupOp.IntDiv:
        divz = z3.Or(divz, z3.And(z3.Not(undef_in), z3.Not(inv_in), own))
    return Val(dt, undef, inv, x, raw, divz)


def _value(op: Ops, dt: str, args: list[Val], to: str,
           bv: bool) -> tuple[Any, Any, bool]:
    """(value, own undefinedness, raw) of ``op`` on values."""
    if op in (Ops.CAST, Ops.BITCAST):
        if op is Ops.CAST:
            x, bad = _cast(args[0], dt, bv)
            return x, bad, False
        x = _bitcast(args[0], dt)
        if bv and dt in INT_RANGE and not _is_bv(x):
            x = z3.Int2BV(x, _bits(dt))
        return x, _false(), False
    src = args[0].dt
    if op in GroupOp.Comparison:
        a, b = args
        if src in FLOAT_SORTS:
            fn = {Ops.LT: z3.fpLT, Ops.LE: z3.fpLEQ, Ops.GT: z3.fpGT, Ops.GE: z3.fpGEQ,
                  Ops.EQ: z3.fpEQ, Ops.NE: lambda p, q: z3.Not(z3.fpEQ(p, q))}[op]
            return fn(a.x, b.x), _false(), False
        if _is_bv(a.x):
            p, q = a.x, b.x
            if _signed(src):
                return {Ops.LT: p < q, Ops.LE: p <= q, Ops.GT: p > q, Ops.GE: p >= q,
                        Ops.EQ: p == q, Ops.NE: p != q}[op], _false(), False
            return {Ops.LT: z3.ULT(p, q), Ops.LE: z3.ULE(p, q), Ops.GT: z3.UGT(p, q),
                    Ops.GE: z3.UGE(p, q), Ops.EQ: p == q,
                    Ops.NE: p != q}[op], _false(), False
        p, q = as_int(a), as_int(b)
        return {Ops.LT: p < q, Ops.LE: p <= q, Ops.GT: p > q, Ops.GE: p >= q,
                Ops.EQ: p == q, Ops.NE: p != q}[op], _false(), False
    if dt == "bool":
        xs = [a.x for a in args]
        if op is Ops.NOT:
            return z3.Not(xs[0]), _false(), False
        if op in (Ops.ADD, Ops.OR, Ops.MAX):
            return z3.Or(xs[0], xs[1]), _false(), False
        if op in (Ops.MUL, Ops.AND, Ops.MIN):
            return z3.And(xs[0], xs[1]), _false(), False
        if op is Ops.XOR:
            return z3.Xor(xs[0], xs[1]), _false(), False
        raise NotImplementedError(f"{op.name} on bool")
    if dt in FLOAT_SORTS:
        return _float_value(op, dt, [a.x for a in args]), _false(), False
    if args and _is_bv(args[0].x):
        return _bv_value(op, dt, [a.x for a in args])
    return _int_value(op, dt, args)


def _bv_value(op: Ops, dt: str, xs: list[Any]) -> tuple[Any, Any, bool]:
    """A fixed-width op on bit-vectors (C's signed or unsigned arithmetic, wrapping)."""
    sg = _signed(dt)
    a = xs[0]
    if op is Ops.NEG:
        return -a, _false(), False
    if op is Ops.NOT:
        return ~a, _false(), False
    if op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        return a, _false(), False
    b = xs[1]
    zero = z3.BitVecVal(0, a.size())
    if op is Ops.ADD:
        return a + b, _false(), False
    if op is Ops.SUB:
        return a - b, _false(), False
    if op is Ops.MUL:
        return a * b, _false(), False
    if op is Ops.MULACC:
        return a * b + xs[2], _false(), False
    if op is Ops.IDIV:  # bvsdiv truncates; INT_MIN / -1 wraps to INT_MIN, as the IR's
        return (a / b if sg else z3.UDiv(a, b)), b == zero, False
    if op is Ops.MOD:  # bvsrem takes the dividend's sign
        return (z3.SRem(a, b) if sg else z3.URem(a, b)), b == zero, False
    if op is Ops.FLOORMOD:  # bvsmod takes the divisor's sign
        return ((a % b) if sg else z3.URem(a, b)), b == zero, False  # (z3py: % is bvsmod)
    if op is Ops.FLOORDIV:  # the truncated quotient, one less where the remainder and
        # the divisor differ in sign (unsigned: truncation is the floor)
        if not sg:
            return z3.UDiv(a, b), b == zero, False
        r = z3.SRem(a, b)
        down = z3.And(r != zero, (r < zero) != (b < zero))
        return z3.If(down, a / b - 1, a / b), b == zero, False
    if op is Ops.MAX:
        return z3.If((a >= b) if sg else z3.UGE(a, b), a, b), _false(), False
    if op is Ops.MIN:
        return z3.If((a <= b) if sg else z3.ULE(a, b), a, b), _false(), False
    if op is Ops.AND:
        return a & b, _false(), False
    if op is Ops.OR:
        return a | b, _false(), False
    if op is Ops.XOR:
        return a ^ b, _false(), False
    if op in (Ops.SHL, Ops.SHR):
        width = z3.BitVecVal(a.size(), a.size())
        bad = z3.Or(b < zero, b >= width) if sg else z3.UGE(b, width)
        if op is Ops.SHL:
            return a << b, bad, False
        return (a >> b if sg else z3.LShR(a, b)), bad, False
    if op is Ops.POW:  # x**0 is 1, x**1 is x; other exponents opaque
        one = z3.BitVecVal(1, a.size())
        f = z3.Function(f"pow_{dt}_bv", a.sort(), a.sort(), a.sort())
        return z3.If(b == zero, one, z3.If(b == one, a, f(a, b))), \
            (b < zero) if sg else _false(), False
    raise NotImplementedError(f"{op.name} on {dt}")


def _float_value(op: Ops, dt: str, xs: list[Any]) -> Any:
    s = sort_of(dt)
    a = xs[0]
    if op is Ops.NEG:
        return z3.fpNeg(a)
    if op is Ops.SQRT:
        return z3.fpSqrt(z3.RNE(), a)
    if op is Ops.RECIP:
        return z3.fpDiv(z3.RNE(), z3.FPVal(1.0, s), a)
    if op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        rm = {Ops.TRUNC: z3.RTZ(), Ops.FLOOR: z3.RTN(), Ops.CEIL: z3.RTP(),
              Ops.ROUND: z3.RNE()}[op]
        return z3.fpRoundToIntegral(rm, a)
    if op in (Ops.EXP2, Ops.LOG2, Ops.SIN):
        return _uf(op.name.lower(), dt, 1)(a)
    b = xs[1]
    if op is Ops.ADD:
        return z3.fpAdd(z3.RNE(), a, b)
    if op is Ops.SUB:
        return z3.fpSub(z3.RNE(), a, b)
    if op is Ops.MUL:
        return z3.fpMul(z3.RNE(), a, b)
    if op is Ops.FDIV:
        return z3.fpDiv(z3.RNE(), a, b)
    if op in (Ops.MAX, Ops.MIN):
        return _fp_max(a, b, op is Ops.MAX)
    if op is Ops.POW:
        # pow(x, 0) is 1 and pow(x, 1) is x (C and numpy, NaN included); else opaque
        one = z3.FPVal(1.0, s)
        return z3.If(z3.fpIsZero(b), one,
                     z3.If(b == one, a, _uf("pow", dt, 2)(a, b)))
    if op is Ops.MULACC:
        return z3.fpAdd(z3.RNE(), z3.fpMul(z3.RNE(), a, b), xs[2])
    raise NotImplementedError(f"{op.name} on {dt}")


def _int_value(op: Ops, dt: str, args: list[Val]) -> tuple[Any, Any, bool]:
    fixed = dt in INT_RANGE
    xs = [a.x for a in args]
    if op is Ops.NEG:
        return -xs[0], _false(), fixed
    if op is Ops.NOT:
        return -xs[0] - 1, _false(), fixed
    if op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        return xs[0], _false(), args[0].raw
    if op is Ops.ADD:
        return xs[0] + xs[1], _false(), fixed
    if op is Ops.SUB:
        return xs[0] - xs[1], _false(), fixed
    if op is Ops.MUL:
        return xs[0] * xs[1], _false(), fixed
    if op is Ops.MULACC:
        return xs[0] * xs[1] + xs[2], _false(), fixed
    a, b = canon(args[0]), canon(args[1])
    if op in (Ops.IDIV, Ops.MOD):
        return c_divmod("idiv" if op is Ops.IDIV else "mod", a, b), b == 0, fixed
    if op in (Ops.FLOORDIV, Ops.FLOORMOD):
        return floor_divmod(op.name.lower(), a, b), b == 0, fixed
    if op is Ops.MAX:
        return z3.If(a >= b, a, b), _false(), False
    if op is Ops.MIN:
        return z3.If(a <= b, a, b), _false(), False
    if op in (Ops.AND, Ops.OR, Ops.XOR):
        if not fixed:  # two's complement of unbounded integers: exact where both are
            # 64-bit values, opaque beyond (a rule of bitwise ops only is proven on 64-bit
            # vectors instead: rules.proof.laws._bit_local)
            lo_ab, hi_ab = z3.If(a <= b, a, b), z3.If(a <= b, b, a)  # they commute
            uf = _uf(op.name.lower(), "index", 2)(lo_ab, hi_ab)
            if CONVERSIONS["bitwise"] == "uf":  # an unknown commutative function: enough
                return uf, _false(), False       # where a rule only moves the op
            lo, hi = INT_RANGE["i64"]
            pa, pb = _to_bv("i64", a), _to_bv("i64", b)
            r = {Ops.AND: pa & pb, Ops.OR: pa | pb, Ops.XOR: pa ^ pb}[op]
            small = z3.And(a >= lo, a <= hi, b >= lo, b <= hi)
            return z3.If(small, _from_bv("i64", r), uf), _false(), False
        pa, pb = _to_bv(dt, a), _to_bv(dt, b)
        r = {Ops.AND: pa & pb, Ops.OR: pa | pb, Ops.XOR: pa ^ pb}[op]
        return _from_bv(dt, r), _false(), False
    if op in (Ops.SHL, Ops.SHR):
        limit = _bits(dt) if fixed else 4096
        bad = z3.Or(b < 0, b >= limit)
        if not fixed:
            uf = _uf("pow2", "index", 1)
            p = z3.If(b == 0, 1, uf(b))  # 2**0 is 1; other powers opaque
            return (a * p if op is Ops.SHL else _floor_div(a, p)), bad, False
        pa, pb = _to_bv(dt, a), _to_bv(dt, b)
        if op is Ops.SHL:
            r = pa << pb
        else:
            r = pa >> pb if DType.parse(dt).kind == "int" else z3.LShR(pa, pb)
        return _from_bv(dt, r), bad, False
    if op is Ops.POW:  # x**0 is 1, x**1 is x; other exponents opaque
        return z3.If(b == 0, 1, z3.If(b == 1, a, _uf("pow", dt, 2)(a, b))), b < 0, fixed
    raise NotImplementedError(f"{op.name} on {dt}")


def _floor_div(a: Any, b: Any) -> Any:
    """Python's floor division by a positive ``b``."""
    return a / b  # z3's integer division floors for a positive divisor
