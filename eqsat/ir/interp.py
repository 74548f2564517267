"""The reference interpreter: the plainly-right meaning of a UOp graph.

``evaluate(uop, env)`` computes the value of an expression; ``run_kernel(sink,
buffers)`` executes a whole kernel on numpy buffers (docs/format.md,
"Meaning"), and ``trace_kernel`` does so recording what it wrote, for the kernel
checker (:mod:`eqsat.ir.kernel_equiv`). They are slow and simple on purpose: they are the
oracle every rewrite is checked against. ``evaluate_many`` is the vectorized
numpy evaluator the equivalence checker uses over many assignments at once.

Semantics
---------
- each op computes what :mod:`eqsat.ir.semantics` says: exact ``index``, wrapping
  fixed-width integers, C division and remainder, IEEE floats at the dtype's
  precision, and the values C leaves undefined (division by zero, out-of-range
  shifts, ...).
- an undefined value is not an error until it is used: ``where`` picks its
  branch lane by lane, so an undefined value in the branch not taken is
  harmless. When the result (or a stored value, an address) is undefined,
  ``EvalError`` is raised, naming the cause.
- vectors are tuples; ALU ops work lane by lane (a scalar operand broadcasts).
- the sign and payload of a NaN an op computes are unspecified (docs/format.md,
  "Floats"): a ``bitcast`` that reads such a NaN has an undefined value. A NaN read
  from memory or made by a bitcast keeps its bits (``_KeptNaN``) through the ops
  that copy a value (``where``, ``gep``, ``vectorize``, ``cat``, a load's alternative)
  and through a store; a NaN an op computed, stored, is read back as computed.
- ``INVALID`` (the value of ``(invalid)``) propagates through every op (an
  undefined operand wins over it); ``where`` is lazy per lane, so
  ``where(c, i, invalid)`` is ``i`` where ``c`` holds.

``env`` maps leaves to values: keys are the leaf UOps themselves or strings (a
var's or special's name, ``"R<id>"`` for range number id). A missing leaf or a
value outside the leaf's bounds raises ``EvalError`` naming the leaf.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.semantics import (
    BOOL_BINARY,
    INT_BINARY,
    NP_FLOAT,
    EvalError,
    Undefined,
    alu,
    bitcast,
    cast,
    cast_float_array,
    compare,
    divide_array,
    float_array,
    shift_limit,
    wrap_array,
)
from eqsat.ir.uop import UOp, const_value, range_id

__all__ = [
    "evaluate",
    "node_values",
    "run_kernel",
    "trace_kernel",
    "KernelTrace",
    "StepLimitError",
    "evaluate_many",
    "evaluate_lanes",
    "kept_nan_bits",
    "EvalError",
    "INVALID",
    "Undefined",
    "leaf_key",
    "vectorizable",
    "Value",
]

Value = Any  # int | float | bool | tuple | INVALID


class _InvalidType:
    """The singleton value of ``(invalid)``."""

    _inst: _InvalidType | None = None

    def __new__(cls) -> _InvalidType:
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "INVALID"

    def __reduce__(self):
        return (_InvalidType, ())


INVALID = _InvalidType()


def leaf_key(u: UOp) -> str:
    """The string env key of a leaf: name of a var/special, ``R<id>`` of a range."""
    if u.op is Ops.DEFINE_VAR:
        return u.arg[0]
    if u.op is Ops.RANGE:
        return f"R{range_id(u)}"
    if u.op is Ops.SPECIAL:
        return str(u.arg)
    raise EvalError(f"{u.op.name} is not a leaf variable")


def _describe(u: UOp) -> str:
    if u.op is Ops.DEFINE_VAR:
        return f"(var {u.arg[0]} {u.arg[1]} {u.arg[2]})"
    if u.op is Ops.RANGE:
        return f"(range {range_id(u)} ...)"
    if u.op is Ops.SPECIAL:
        return f"(special {u.arg} ...)"
    return f"{u.op.name.lower()}:{u.dtype}"


# ---------------------------------------------------------------------------
# scalar arithmetic (eqsat.ir.semantics), with Invalid and undefined operands
def _scalar_alu(op: Ops, dt: DType, args: Sequence[Value]) -> Value:
    """One lane of an ALU op; ``dt`` is the result's scalar dtype."""
    if op is Ops.WHERE:  # lazy: only the condition and the branch taken matter
        c = args[0]
        if isinstance(c, Undefined) or c is INVALID:
            return c
        return args[1] if c else args[2]
    for a in args:
        if isinstance(a, Undefined):
            return a
    for a in args:
        if a is INVALID:
            return INVALID
    return alu(op, dt, args)


def _convert(fn: Callable[[Any, DType, DType], Value], x: Value, src: DType,
             dst: DType) -> Value:
    """One lane of CAST (``fn`` is :func:`cast`) or BITCAST (:func:`bitcast`)."""
    if isinstance(x, Undefined) or x is INVALID:
        return x
    return fn(x, src, dst)


class _KeptNaN(float):
    """A NaN whose bits are specified: read from memory or made by a bitcast. IEEE 754
    (6.3) specifies a NaN's sign only for copies and bit operations; an op that computes
    a float returns a plain ``float``, whose NaN's sign and payload are unspecified.
    ``bits``: the NaN's bits as an unsigned integer of its dtype's width (a Python
    float would quiet a signaling NaN)."""

    __slots__ = ("bits",)

    def __new__(cls, x: float, bits: int) -> _KeptNaN:
        self = super().__new__(cls, x)
        self.bits = bits
        return self


_UINT = {8: dtypes.u8, 16: dtypes.u16, 32: dtypes.u32, 64: dtypes.u64}


def _plain(v: Value) -> Value:
    """``v`` without the ``_KeptNaN`` marks (the interpreter's values are plain)."""
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return float(v) if isinstance(v, _KeptNaN) else v


def _bitcast_lane(x: Value, src: DType, dst: DType) -> Value:
    """One lane of BITCAST: undefined where it reads the bits of a NaN an op computed;
    a NaN it reads or makes keeps its bits."""
    if isinstance(x, Undefined) or x is INVALID:
        return x
    if isinstance(x, float) and math.isnan(x) and not isinstance(x, _KeptNaN):
        return Undefined(f"bitcast of a NaN computed by an op ({src} to {dst}): its sign "
                         "and payload are unspecified")
    uint = _UINT.get(src.bits)
    if not (src.is_float or dst.is_float) or uint is None or src.bits != dst.bits:
        return bitcast(x, src, dst)
    raw = x.bits if isinstance(x, _KeptNaN) else bitcast(x, src, uint)
    v = bitcast(raw, uint, dst)
    return _KeptNaN(v, raw) if isinstance(v, float) and math.isnan(v) else v


def _exact_width(array: Any, dt: DType) -> int | None:
    """The bit width of the float array dtype ``array`` when its elements hold the bits
    of the float dtype ``dt`` exactly (an array of ``dt``, or bf16 as the upper half of
    an f32), else None."""
    a = np.dtype(array)
    width = a.itemsize * 8
    if a.kind == "f" and (width == dt.bits or (dt.name == "bf16" and width == 32)):
        return width
    return None


def _element(elem: np.generic, dt: DType) -> Value:
    """A buffer element of the scalar dtype ``dt`` as a value. A NaN keeps its bits when
    the array holds ``dt``'s bits exactly (an array of ``dt``, or a bf16 as the upper half
    of an f32 whose lower half is 0); otherwise the element is the array's value rounded
    to ``dt``, and a NaN that rounding makes is computed (its bits are unspecified)."""
    v = const_value(dt, elem.item())
    if not (isinstance(v, float) and math.isnan(v)):
        return v
    width = _exact_width(elem.dtype, dt)
    if width is None:
        return v
    bits = int(np.asarray(elem).view(f"u{width // 8}"))
    low = width - dt.bits
    return _KeptNaN(v, bits >> low) if bits & ((1 << low) - 1) == 0 else v


def _stored(v: Value, array: np.dtype, dt: DType) -> Any:
    """The array element that holds ``v`` of the scalar dtype ``dt`` (the inverse of
    :func:`_element`): a kept NaN's bits where the array holds ``dt``'s bits exactly (a
    store copies them), else the value."""
    width = _exact_width(array, dt) if isinstance(v, _KeptNaN) else None
    if width is None:
        return v
    return np.array(v.bits << (width - dt.bits), dtype=f"u{width // 8}").view(array)[()]


# ---------------------------------------------------------------------------
# memory
@dataclass(frozen=True, slots=True)
class _Buf:
    slot: int
    size: int
    dtype: DType  # element dtype


@dataclass(frozen=True, slots=True)
class _Addr:
    buf: _Buf
    offset: int | None  # None: not valid (gated off / invalid index)
    count: int = 1      # > 1: a vector access of consecutive elements


def _lanes(v: Value, n: int) -> tuple:
    if isinstance(v, tuple):
        if len(v) != n:
            raise EvalError(f"vector of {len(v)} lanes where {n} are needed")
        return v
    return (v,) * n


def _first_undef(v: Value) -> Undefined | None:
    if isinstance(v, Undefined):
        return v
    if isinstance(v, tuple):
        for x in v:
            if isinstance(x, Undefined):
                return x
    return None


def _operands(u: UOp) -> tuple[UOp, ...]:
    """The nodes whose values :meth:`_Machine.compute` takes for ``u``: a REDUCE's ranges'
    ENDs (it evaluates its body itself, once per iteration), an AFTER's value."""
    if u.op is Ops.REDUCE:
        return tuple(r.src[0] for r in u.src[1:])
    if u.op is Ops.AFTER:
        return u.src[:1]
    return u.src


class StepLimitError(Exception):
    """A run of :func:`trace_kernel` took more steps than its ``max_steps``."""


class _Machine:
    """Evaluates values and executes effects over optional buffers.

    ``max_steps``: the most steps (nodes computed, effects run, loop iterations; None:
    no limit; past it :class:`StepLimitError`). ``trace``: a store of an undefined or
    Invalid lane marks its element undefined (``undefined``; a later load of it is
    undefined) instead of raising, and ``written`` collects every element a store
    wrote."""

    def __init__(self, env: Mapping[Any, Any] | None,
                 buffers: Sequence[np.ndarray] | None = None, *,
                 max_steps: int | None = None, trace: bool = False) -> None:
        self.by_node: dict[UOp, Any] = {}
        self.by_name: dict[str, Any] = {}
        for k, v in (env or {}).items():
            if isinstance(k, UOp):
                self.by_node[k] = v
            elif isinstance(k, str):
                self.by_name[k] = v
            else:
                raise EvalError(f"env key {k!r} is neither a leaf UOp nor a name")
        self.buffers = buffers
        self.executed: set[tuple] = set()
        self._open: dict[UOp, frozenset[UOp]] = {}
        # (slot, element) where a store wrote a NaN an op computed: the array holds some
        # NaN, but its bits are unspecified, so a later load gives a computed NaN again
        self.unspecified: set[tuple[int, int]] = set()
        self.steps, self.max_steps, self.trace = 0, max_steps, trace
        self.written: set[tuple[int, int]] = set()
        self.undefined: dict[tuple[int, int], str] = {}

    def step(self, n: int = 1) -> None:
        """Count ``n`` steps of work against ``max_steps``."""
        self.steps += n
        if self.max_steps is not None and self.steps > self.max_steps:
            raise StepLimitError(f"the run took more than {self.max_steps} steps")

    # ---- leaves ---------------------------------------------------------
    def leaf(self, u: UOp, loops: Mapping[UOp, int], vals: list[Value]) -> Value:
        if u in loops:
            return loops[u]
        if u in self.by_node:
            v = self.by_node[u]
        else:
            key = leaf_key(u)
            if key not in self.by_name:
                raise EvalError(f"no value for {_describe(u)} (env key {key!r})")
            v = self.by_name[key]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise EvalError(f"value {v!r} for {_describe(u)} is not an integer")
        v = int(v)
        if u.op is Ops.DEFINE_VAR:
            lo, hi = u.arg[1], u.arg[2]
        else:
            end = vals[0]
            if isinstance(end, Undefined) or end is INVALID:
                raise EvalError(f"the end of {_describe(u)} has no value: {end!r}")
            lo, hi = 0, int(end) - 1
        if not lo <= v <= hi:
            raise EvalError(f"value {v} for {_describe(u)} is outside [{lo}, {hi}]")
        return v

    # ---- values ---------------------------------------------------------
    def value(self, root: UOp, loops: Mapping[UOp, int]) -> Value:
        """The value of ``root`` with the loop ranges bound as in ``loops``."""
        memo: dict[UOp, Value] = {}
        stack: list[UOp] = [root]
        while stack:
            u = stack[-1]
            if u in memo:
                stack.pop()
                continue
            kids = _operands(u)
            todo = [s for s in kids if s not in memo]
            if todo:
                stack.extend(reversed(todo))
                continue
            stack.pop()
            memo[u] = self.compute(u, [memo[s] for s in kids], loops)
        self.step(len(memo))  # (a REDUCE's body counts in the calls it makes)
        return memo[root]

    def compute(self, u: UOp, vals: list[Value], loops: Mapping[UOp, int]) -> Value:
        op, dt = u.op, u.dtype
        if op is Ops.CONST:
            return (u.arg,) * dt.count if dt.count > 1 else u.arg
        if op is Ops.VCONST:
            return tuple(u.arg)
        if op in (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL):
            return self.leaf(u, loops, vals)
        if op is Ops.INVALID:
            return INVALID
        if op in GroupOp.ALU:
            return self.alu(u, vals)
        if op is Ops.CAST:
            if dt.ptr:
                return self.ptr_cast(u, vals[0])
            return self.lanewise(
                lambda x: _convert(cast, x, u.src[0].dtype.scalar(), dt.scalar()), vals[0],
                dt.count)
        if op is Ops.BITCAST:
            return self.lanewise(
                lambda x: _bitcast_lane(x, u.src[0].dtype.scalar(), dt.scalar()), vals[0],
                dt.count)
        if op is Ops.VECTORIZE:
            return tuple(vals)
        if op is Ops.CAT:  # (an operand undefined as a whole is undefined in each lane)
            out: list[Value] = []
            for s, v in zip(u.src, vals, strict=True):
                out.extend(_lanes(v, s.dtype.count))
            return tuple(out)
        if op is Ops.GEP:
            src = vals[0]
            lanes = src if isinstance(src, tuple) else (src,) * u.src[0].dtype.count
            try:
                picked = tuple(lanes[i] for i in u.arg)
            except IndexError:
                raise EvalError(f"gep {u.arg} out of a {len(lanes)}-lane vector") from None
            return picked[0] if len(picked) == 1 else picked
        if op in (Ops.AFTER, Ops.BIND, Ops.NOOP):
            if op is Ops.AFTER:
                for dep in u.src[1:]:
                    self.execute(dep, loops, dedupe=True)
            return vals[0]
        if op is Ops.REDUCE:
            return self.reduce(u, vals, loops)
        if op is Ops.DEFINE_GLOBAL:
            return self.buffer(u)
        if op is Ops.INDEX:
            return self.index(u, vals)
        if op is Ops.LOAD:
            return self.load(u, vals)
        raise EvalError(f"the interpreter cannot evaluate {op.name} as a value"
                        + (" (it is an effect; use run_kernel)" if op in GroupOp.Void else ""))

    def lanewise(self, fn: Callable[[Value], Value], v: Value, count: int) -> Value:
        if count > 1 or isinstance(v, tuple):
            return tuple(fn(x) for x in _lanes(v, max(count, len(v) if isinstance(v, tuple)
                                                      else 1)))
        return fn(v)

    def alu(self, u: UOp, vals: list[Value]) -> Value:
        dt = u.dtype.scalar()
        n = max([u.dtype.count] + [len(v) for v in vals if isinstance(v, tuple)])
        if n == 1:
            return _scalar_alu(u.op, dt, vals)
        cols = [_lanes(v, n) for v in vals]
        return tuple(_scalar_alu(u.op, dt, lane) for lane in zip(*cols, strict=True))

    def reduce(self, u: UOp, ends: list[Value], loops: Mapping[UOp, int]) -> Value:
        x, rngs = u.src[0], u.src[1:]
        dt = u.dtype
        op: Ops = u.arg
        if op not in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN):
            raise EvalError(f"reduce op must be add/mul/max/min, not {op!r}")
        acc: Value = _identity(op, dt)
        for env in self._iterate(rngs, ends, loops):
            v = self.value(x, env)
            if acc is None:
                acc = v
            else:
                acc = self.alu_values(op, dt, acc, v)
        if acc is None:
            raise EvalError(f"reduce {op.name.lower()} of {dt} over an empty range has no "
                            "identity (index is unbounded)")
        return acc

    def alu_values(self, op: Ops, dt: DType, a: Value, b: Value) -> Value:
        n = max(dt.count, len(a) if isinstance(a, tuple) else 1,
                len(b) if isinstance(b, tuple) else 1)
        if n == 1:
            return _scalar_alu(op, dt.scalar(), (a, b))
        return tuple(_scalar_alu(op, dt.scalar(), (x, y))
                     for x, y in zip(_lanes(a, n), _lanes(b, n), strict=True))

    def _iterate(self, rngs: Sequence[UOp], ends: list[Value] | None,
                 loops: Mapping[UOp, int]):
        """Every binding of ``rngs`` (first outermost); ends evaluated as they open."""
        def rec(i: int, env: dict[UOp, int]):
            if i == len(rngs):
                yield env
                return
            r = rngs[i]
            if r.op is not Ops.RANGE:
                raise EvalError(f"expected a RANGE to loop over, got {r.op.name}")
            end = ends[i] if ends is not None and i == 0 else self.value(r.src[0], env)
            if _first_undef(end) is not None or end is INVALID or isinstance(end, tuple):
                raise EvalError(f"the end of (range {range_id(r)}) has no scalar value: {end!r}")
            for v in range(int(end)):
                self.step()  # (an outer loop around an empty one does no other work)
                yield from rec(i + 1, {**env, r: v})
        yield from rec(0, dict(loops))

    # ---- memory ---------------------------------------------------------
    def buffer(self, u: UOp) -> _Buf:
        slot, size = u.arg
        if self.buffers is None:
            raise EvalError(f"buffer {slot} has no memory: use run_kernel to run kernels")
        if not 0 <= slot < len(self.buffers):
            raise EvalError(f"no buffer given for slot {slot} ({len(self.buffers)} given)")
        arr = self.buffers[slot]
        elem = u.dtype.base().scalar()
        kinds = {"float": "f", "bool": "b", "int": "iuO", "uint": "iuO", "index": "iuO"}
        if arr.dtype.kind not in kinds.get(elem.kind, ""):
            raise EvalError(f"buffer {slot} holds {elem} but the array is {arr.dtype}")
        if arr.size < size:
            raise EvalError(f"buffer {slot} declares {size} elements but the array has "
                            f"{arr.size}")
        return _Buf(slot, size, u.dtype.base())

    def index(self, u: UOp, vals: list[Value]) -> Value:
        buf, idx = vals[0], vals[1]
        gate = vals[2] if len(vals) > 2 else True
        if not isinstance(buf, _Buf):
            raise EvalError(f"index into {u.src[0].op.name}, not a buffer")

        def one(i: Value, g: Value) -> Value:
            if isinstance(i, Undefined):
                return i
            if isinstance(g, Undefined):
                return g
            if i is INVALID or g is INVALID or not g:
                return _Addr(buf, None)
            return _Addr(buf, int(i))

        if isinstance(idx, tuple) or isinstance(gate, tuple):
            n = len(idx) if isinstance(idx, tuple) else len(gate)
            return tuple(one(i, g) for i, g in zip(_lanes(idx, n), _lanes(gate, n), strict=True))
        return one(idx, gate)

    def ptr_cast(self, u: UOp, a: Value) -> Value:
        if isinstance(a, Undefined):
            return a
        if isinstance(a, _Addr):
            return _Addr(a.buf, a.offset, u.dtype.count)
        if isinstance(a, _Buf):
            return a
        raise EvalError(f"cannot cast {a!r} to the pointer dtype {u.dtype}")

    def _check(self, a: _Addr, what: str) -> None:
        assert a.offset is not None
        if a.offset < 0 or a.offset + a.count > a.buf.size:
            raise EvalError(f"{what} outside buffer {a.buf.slot} (size {a.buf.size}): element "
                            f"{a.offset}" + (f"..{a.offset + a.count - 1}" if a.count > 1 else ""))

    def load(self, u: UOp, vals: list[Value]) -> Value:
        addr = vals[0]
        alt = vals[1] if len(vals) > 1 else None
        dt = u.dtype

        def one(a: Value, alt_v: Value) -> Value:
            if isinstance(a, Undefined):
                return a
            if not isinstance(a, _Addr):
                raise EvalError(f"load from {a!r}, not an address")
            if a.offset is None:
                if alt_v is not None:
                    return alt_v
                zero = const_value(dt, 0)
                return (zero,) * a.count if a.count > 1 else zero
            try:
                self._check(a, "read")
            except EvalError as e:
                return Undefined(str(e))
            got = [self._read(a.buf.slot, i, dt.scalar())
                   for i in range(a.offset, a.offset + a.count)]
            return tuple(got) if a.count > 1 else got[0]

        if isinstance(addr, tuple):
            alts = _lanes(alt, len(addr)) if alt is not None else (None,) * len(addr)
            return tuple(one(a, b) for a, b in zip(addr, alts, strict=True))
        v = one(addr, alt)  # a vector access undefined as a whole: each lane undefined
        return (v,) * dt.count if isinstance(v, Undefined) and dt.count > 1 else v

    def _read(self, slot: int, i: int, dt: DType) -> Value:
        """Element ``i`` of buffer ``slot``: computed NaN or undefined where a store left
        one."""
        key = (slot, i)
        if key in self.undefined:
            return Undefined(self.undefined[key])
        if key in self.unspecified:
            return math.nan
        return _element(self.buffers[slot].flat[i], dt)  # type: ignore[index]

    def store(self, addr: Value, val: Value) -> None:
        if isinstance(addr, tuple):
            vs = _lanes(val, len(addr))
            for a, v in zip(addr, vs, strict=True):
                self.store(a, v)
            return
        bad = _first_undef(addr)
        if bad is not None:
            raise EvalError(f"store to an undefined address: {bad.reason}")
        if not isinstance(addr, _Addr):
            raise EvalError(f"store to {addr!r}, not an address")
        if addr.offset is None:
            return
        if not self.trace:
            bad = _first_undef(val)
            if bad is not None:
                raise EvalError(f"store of an undefined value: {bad.reason}")
            if val is INVALID or (isinstance(val, tuple) and INVALID in val):
                raise EvalError("store of the Invalid value")
        self._check(addr, "write")
        arr = self.buffers[addr.buf.slot]  # type: ignore[index]
        lanes = _lanes(val, addr.count) if addr.count > 1 else (val,)
        for k, v in enumerate(lanes):
            key = (addr.buf.slot, addr.offset + k)
            if self.trace:
                self.written.add(key)
                if isinstance(v, Undefined) or v is INVALID:
                    self.undefined[key] = (v.reason if isinstance(v, Undefined)
                                           else "the Invalid value")
                    continue
                self.undefined.pop(key, None)
            arr.flat[addr.offset + k] = _stored(v, arr.dtype, addr.buf.dtype.scalar())
            computed = isinstance(v, float) and math.isnan(v) and not isinstance(v, _KeptNaN)
            (self.unspecified.add if computed else self.unspecified.discard)(key)

    # ---- effects --------------------------------------------------------
    def open_ranges(self, root: UOp) -> frozenset[UOp]:
        """The ranges ``root`` depends on that no END/REDUCE inside it closes."""
        if root in self._open:
            return self._open[root]
        for u in root.toposort():
            if u in self._open:
                continue
            if u.op is Ops.RANGE:
                s = frozenset({u}) | self._open[u.src[0]]
            elif u.op in (Ops.END, Ops.REDUCE):
                closed = frozenset(u.src[1:])
                s = (self._open[u.src[0]] - closed).union(
                    *(self._open[r.src[0]] for r in u.src[1:]))
            else:
                s = frozenset().union(*(self._open[x] for x in u.src))
            self._open[u] = s
        return self._open[root]

    def execute(self, u: UOp, loops: Mapping[UOp, int], dedupe: bool) -> None:
        """Run an effect. ``dedupe``: skip it when it already ran in this iteration of
        the loops it depends on (AFTER dependencies, sink members)."""
        scope = tuple(sorted((r.uid, loops[r]) for r in self.open_ranges(u) if r in loops))
        key = (u, scope)
        if dedupe and key in self.executed:
            return
        self.executed.add(key)
        self.step()
        if u.op is Ops.SINK:
            for s in u.src:
                self.execute(s, loops, dedupe=True)
        elif u.op is Ops.END:
            for env in self._iterate(u.src[1:], None, loops):
                self.execute(u.src[0], env, dedupe=False)
        elif u.op is Ops.STORE:
            addr = self.value(u.src[0], loops)
            val = self.value(u.src[1], loops)
            self.store(addr, val)
        elif u.op is Ops.AFTER:
            for dep in u.src[1:]:
                self.execute(dep, loops, dedupe=True)
            self.execute(u.src[0], loops, dedupe=True)
        elif u.op in (Ops.NOOP, Ops.DEFINE_GLOBAL, Ops.CONST):
            return
        elif u.op in (Ops.IF, Ops.ENDIF):
            raise EvalError(f"the interpreter does not run {u.op.name} (lowered control flow)")
        else:
            v = self.value(u, loops)
            bad = _first_undef(v)
            if bad is not None:
                raise EvalError(f"undefined value in kernel: {bad.reason}")


def _identity(op: Ops, dt: DType) -> Value:
    s = dt.scalar()
    if op is Ops.ADD:
        v: Value = const_value(s, 0)
    elif op is Ops.MUL:
        v = const_value(s, 1)
    elif s.is_index:
        return None  # unbounded: no identity, the first element starts the fold
    elif op is Ops.MAX:
        v = s.min if not s.is_float else -math.inf
    else:
        v = s.max if not s.is_float else math.inf
    return (v,) * dt.count if dt.count > 1 else v


# ---------------------------------------------------------------------------
# public entry points
def evaluate(uop: UOp, env: Mapping[Any, Any] | None = None, *,
             buffers: Sequence[Any] | None = None) -> Value:
    """The value of the expression ``uop`` under ``env`` (see the module docstring).

    Returns an int/float/bool, a tuple for a vector, or ``INVALID``. ``buffers``:
    the numpy arrays (by slot) the expression's loads read. Raises ``EvalError``
    when the value is undefined (division by zero, ...), a leaf is missing or out
    of its bounds, or the graph reads a buffer not given (kernels: ``run_kernel``).
    """
    if not isinstance(uop, UOp):
        raise TypeError(f"evaluate expects a UOp, got {type(uop).__name__}")
    m = _Machine(env, buffers)
    v = m.value(uop, {})
    bad = _first_undef(v)
    if bad is not None:
        raise EvalError(f"undefined: {bad.reason}")
    return _plain(v)


def node_values(uop: UOp, env: Mapping[Any, Any] | None = None) -> dict[UOp, Value]:
    """The value of every node of the expression ``uop`` under ``env``, in one pass.

    Unlike :func:`evaluate` it does not raise where a value is undefined: such a node
    gets an ``Undefined`` (a vector, ``Undefined`` lanes), and so do the nodes that
    read it; ``INVALID`` where a value is invalid. Raises ``EvalError`` as
    :func:`evaluate` does for a missing or out-of-bounds leaf or a graph that needs
    memory."""
    m = _Machine(env)
    vals: dict[UOp, Value] = {}
    for u in uop.toposort():
        vals[u] = m.compute(u, [vals[s] for s in _operands(u)], {})
    return {u: _plain(v) for u, v in vals.items()}


def run_kernel(sink: UOp, buffers: Sequence[np.ndarray],
               vars: Mapping[str, int] | None = None) -> Sequence[np.ndarray]:
    """Execute a kernel (spec "Semantics of kernels") on ``buffers`` in place.

    ``buffers[slot]`` is the numpy array of DEFINE_GLOBAL ``slot``; ``vars``
    gives the DEFINE_VAR values by name. SPECIAL launch indices not given in
    ``vars`` are iterated like outermost loops (one launch per combination).
    Returns ``buffers``. Out-of-bounds reads/writes, undefined stored values or
    addresses raise ``EvalError``.
    """
    buffers = list(buffers)
    _launch(sink, _Machine(dict(vars or {}), _arrays(buffers)))
    return buffers


@dataclass(frozen=True)
class KernelTrace:
    """What one run of :func:`trace_kernel` did, by ``(slot, element)``: ``written``, every
    element a store wrote; ``undefined``, those whose last store wrote an undefined or
    Invalid value (with its cause; the array keeps its earlier content there);
    ``computed_nan``, those whose last store wrote a NaN an op computed (its bits are
    unspecified); ``steps``, the nodes computed, effects run and loop iterations;
    ``failed``, why the run stopped before its end (an ``EvalError``'s message), or
    empty."""

    written: frozenset[tuple[int, int]]
    undefined: Mapping[tuple[int, int], str]
    computed_nan: frozenset[tuple[int, int]]
    steps: int
    failed: str = ""


def trace_kernel(sink: UOp, buffers: Sequence[np.ndarray],
                 vars: Mapping[str, int] | None = None, *,
                 max_steps: int | None = None) -> KernelTrace:
    """:func:`run_kernel`, recording what the run wrote (:class:`KernelTrace`).

    A store of an undefined value does not stop the run: it marks the elements it
    writes undefined (a later load of one is undefined). Where ``run_kernel`` raises
    ``EvalError`` (an undefined address or loop end, an access outside a buffer) the
    run stops and the trace says why (``failed``), with the steps it took. Raises
    :class:`StepLimitError` past ``max_steps`` steps."""
    m = _Machine(dict(vars or {}), _arrays(buffers), max_steps=max_steps, trace=True)
    try:
        _launch(sink, m)
    except EvalError as e:
        failed = str(e)
    else:
        failed = ""
    return KernelTrace(frozenset(m.written), dict(m.undefined),
                       frozenset(m.unspecified), m.steps, failed)


def _arrays(buffers: Sequence[np.ndarray]) -> list[np.ndarray]:
    buffers = list(buffers)
    for i, b in enumerate(buffers):
        if not isinstance(b, np.ndarray):
            raise EvalError(f"buffer {i} is a {type(b).__name__}, not a numpy array")
    return buffers


def _launch(sink: UOp, m: _Machine) -> None:
    """Run ``sink`` on ``m`` once per combination of the SPECIAL launch indices not
    given in its env."""
    specials = sorted({u for u in sink.toposort() if u.op is Ops.SPECIAL
                       and u.arg not in m.by_name}, key=lambda u: u.uid)
    grids = []
    for s in specials:
        end = m.value(s.src[0], {})
        if _first_undef(end) is not None or isinstance(end, tuple) or end is INVALID:
            raise EvalError(f"the end of (special {s.arg}) has no value")
        grids.append(range(int(end)))
    for launch in itertools.product(*grids):
        m.by_name.update({s.arg: v for s, v in zip(specials, launch, strict=True)})
        m.executed.clear()
        m.execute(sink, {}, dedupe=False)


# ---------------------------------------------------------------------------
# the vectorized evaluator
_VEC_OPS = frozenset({Ops.CONST, Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL, Ops.INVALID, Ops.ADD,
                      Ops.SUB, Ops.MUL, Ops.NEG, Ops.IDIV, Ops.MOD, Ops.FLOORDIV,
                      Ops.FLOORMOD, Ops.MAX, Ops.MIN, Ops.AND,
                      Ops.OR, Ops.XOR, Ops.NOT, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.MULACC,
                      Ops.CAST, Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND, Ops.FDIV, Ops.RECIP,
                      Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW, Ops.DEFINE_GLOBAL,
                      Ops.INDEX, Ops.LOAD}) | GroupOp.Comparison
_I64_SAFE = 1 << 62
#: element dtypes of buffers evaluate_many reads
_NP_ELEM = {**NP_FLOAT, "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
            "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
            "u64": np.uint64}


def _vec_scalar(dt: DType) -> bool:
    return dt.count == 1 and not dt.ptr and (not dt.is_float or dt.name in NP_FLOAT)


def vectorizable(root: UOp) -> bool:
    """True when ``evaluate_many`` runs ``root`` on numpy: scalar index/integer/bool/f16/
    f32/f64 ops, and loads of scalar elements through ``(index BUF I [GATE])``."""
    for u in root.toposort():
        if u.op not in _VEC_OPS:
            return False
        if u.op is Ops.DEFINE_GLOBAL:
            if u.dtype.base().name not in _NP_ELEM or u.dtype.count != 1:
                return False
        elif u.op is Ops.INDEX:
            if u.src[0].op is not Ops.DEFINE_GLOBAL or u.dtype.count != 1:
                return False
        elif not _vec_scalar(u.dtype):
            return False
        elif u.op is Ops.LOAD and u.src[0].op is not Ops.INDEX:
            return False
        elif u.op is Ops.CAST and not _vec_scalar(u.src[0].dtype):
            return False
    return True


def _absmax(a: np.ndarray) -> int:
    if a.size == 0:
        return 0
    if a.dtype == object:
        return max(abs(int(x)) for x in a)
    return int(max(abs(int(a.max())), abs(int(a.min()))))


def _obj(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == object else a.astype(object)


class Memory(Protocol):
    """Buffer contents for :func:`evaluate_many`, one memory per assignment.

    ``read(buffer, offsets, points)``: the elements at ``offsets`` of the
    DEFINE_GLOBAL ``buffer`` in the memories of assignments ``points`` (arrays of
    one length), as a numpy array of the buffer's element dtype.
    ``arrays(point)``: the buffers of one assignment by slot, for the reference
    interpreter (array-likes with ``dtype``, ``size`` and ``flat[i]``).
    """

    def read(self, buffer: UOp, offsets: np.ndarray, points: np.ndarray) -> np.ndarray: ...

    def arrays(self, point: int) -> Sequence[Any]: ...


def _count(uop: UOp, columns: Mapping[str, np.ndarray], n: int | None,
           memory: Memory | None) -> int:
    """The number of assignments; refuses a graph that loads without ``memory``."""
    if memory is None:
        buf = next((u for u in uop.toposort() if u.op is Ops.DEFINE_GLOBAL), None)
        if buf is not None:
            raise EvalError(f"the graph reads buffer {buf.arg[0]}: give its contents (memory=)")
    if n is None:
        return len(next(iter(columns.values()))) if columns else 1
    return n


def evaluate_lanes(uop: UOp, columns: Mapping[str, np.ndarray], *,
                   n: int | None = None, memory: Memory | None = None
                   ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`evaluate_many` lane by lane: one ``(values, invalid, undefined)`` per
    lane of a vector ``uop`` (a lane is Invalid or undefined on its own), the one
    triple of :func:`evaluate_many` for a scalar."""
    count = uop.dtype.count
    if count == 1 or uop.dtype.ptr:
        return [evaluate_many(uop, columns, n=n, memory=memory)]
    vals = _machine_values(uop, columns, _count(uop, columns, n, memory), memory)
    split = [v if isinstance(v, Undefined) else _lanes(v, count) for v in vals]
    return [_columns([v if isinstance(v, Undefined) else v[k] for v in split])
            for k in range(count)]


def kept_nan_bits(uop: UOp, columns: Mapping[str, np.ndarray], points: Sequence[int], *,
                  memory: Memory | None = None) -> list[list[int | None]]:
    """The bits each lane of ``uop`` promises at the assignments ``points`` (indices into
    ``columns``; ``memory`` as for :func:`evaluate_lanes`), by the reference interpreter:
    a NaN read from memory or made by a bitcast keeps its bits (docs/format.md,
    "Floats"), given as an unsigned integer of the dtype's width; a NaN an op computed,
    any other value, Invalid and undefined promise none (None). One list per lane."""
    _count(uop, columns, None, memory)
    count = uop.dtype.count
    out: list[list[int | None]] = [[] for _ in range(count)]
    for v in _machine_values(uop, columns, len(points), memory, points):
        lanes = _lanes(v, count) if isinstance(v, tuple) else (v,) * count
        for k, x in enumerate(lanes):
            out[k].append(x.bits if isinstance(x, _KeptNaN) else None)
    return out


def evaluate_many(uop: UOp, columns: Mapping[str, np.ndarray], *,
                  n: int | None = None, memory: Memory | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate ``uop`` at many assignments at once.

    ``columns`` maps every leaf's env key (var/special name, ``R<id>``) to an
    array of values, one per assignment (all the same length ``n``). Returns
    ``(values, invalid, undefined)``: ``values`` is an int64 array when every
    intermediate provably fits, else an object array of Python ints (bools for
    bool results; a float16/32/64 array for a float result); ``invalid`` marks
    assignments where the value is Invalid and ``undefined`` where it is
    undefined (division by zero, bad shift, a range value not below its end, a
    read outside a buffer, a bitcast of a NaN an op computed...); a vector is
    undefined where a lane is, else Invalid where a lane is (:func:`evaluate_lanes`
    tells its lanes apart). Masked lanes of ``values`` hold 0.

    Scalar index/integer/bool/f16/f32/f64 graphs run on numpy (a float op is
    computed in f64 and rounded to its dtype, as :func:`evaluate` does); anything
    else (vectors, bf16, bitcasts) falls back to the reference interpreter per
    assignment (values then an object array). ``memory`` gives the buffers'
    contents where the graph loads (:class:`Memory`). Values are not checked
    against the leaves' declared bounds.
    """
    n = _count(uop, columns, n, memory)
    if not vectorizable(uop):
        return _evaluate_many_slow(uop, columns, n, memory)
    vals: dict[UOp, np.ndarray] = {}
    inv: dict[UOp, np.ndarray] = {}
    und: dict[UOp, np.ndarray] = {}
    off: dict[UOp, np.ndarray] = {}  # INDEX: lanes whose address is not valid (gate off)
    false = np.zeros(n, dtype=bool)
    no_point = false
    for u in uop.toposort():
        op, dt = u.op, u.dtype
        srcv = [vals[s] for s in u.src]
        i_m = false
        u_m = false
        for s in u.src:
            i_m = i_m | inv[s] if inv[s] is not false else i_m
            u_m = u_m | und[s] if und[s] is not false else u_m
        if op is Ops.CONST:
            v = _const_column(u.arg, n, dt)
        elif op in (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL):
            key = leaf_key(u)
            if key not in columns:
                raise EvalError(f"no column for {_describe(u)} (env key {key!r})")
            v = np.asarray(columns[key])
            if v.dtype != object and v.dtype != np.int64:
                v = v.astype(np.int64)
            if v.shape != (n,):
                raise EvalError(f"column {key!r} has shape {v.shape}, expected ({n},)")
            if op is not Ops.DEFINE_VAR:
                end = srcv[0]
                # a loop index outside [0, END-1] (or of an END of no value) is no point:
                # undefined as a whole, whatever a where picks (evaluate raises there)
                outside = (v >= end) | (v < 0) | und[u.src[0]] | inv[u.src[0]]
                u_m = u_m | outside
                no_point = no_point | outside
        elif op is Ops.INVALID:
            v = np.zeros(n, dtype=np.int64)
            i_m = np.ones(n, dtype=bool)
        elif op is Ops.WHERE:
            c, t, f = srcv
            c = c.astype(bool)
            v = np.where(c, t, f)
            ci, cu = inv[u.src[0]], und[u.src[0]]
            # an undefined/invalid condition decides; else the branch taken does
            u_m = cu | (~ci & np.where(c, und[u.src[1]], und[u.src[2]]))
            i_m = ci | (~cu & np.where(c, inv[u.src[1]], inv[u.src[2]]))
        elif op is Ops.DEFINE_GLOBAL:
            v = np.zeros(n, dtype=np.int64)  # the buffer itself: INDEX and LOAD read u.src
        elif op is Ops.INDEX:
            # an undefined index or gate makes the address undefined; an Invalid one, or
            # a false gate, makes it not valid (a load through it reads its alternative)
            i_m, v = false, srcv[1]
            not_valid = inv[u.src[1]]
            if len(u.src) > 2:
                not_valid = not_valid | inv[u.src[2]] | ~srcv[2].astype(bool)
            off[u] = not_valid & ~u_m
        elif op is Ops.LOAD:
            v, i_m, u_m = _vec_load(u, srcv, inv, und, off, memory, n)
        else:
            v, extra_undef = _vec_alu(u, srcv)
            if extra_undef is not None:  # (an Invalid operand's lane holds 0: not computed)
                u_m = u_m | (extra_undef & ~i_m)
        if op is not Ops.WHERE:
            i_m = i_m & ~u_m
        masked = i_m | u_m
        if op is Ops.INDEX:
            masked = masked | off[u]
        if masked.any() and op not in (Ops.INVALID,):
            v = np.where(masked, np.zeros(1, dtype=v.dtype) if v.dtype != object else 0, v)
            if v.dtype == object and dt.is_bool:
                v = v.astype(bool)
        vals[u] = v
        inv[u] = i_m if i_m.any() else false
        und[u] = u_m if u_m.any() else false
    out = vals[uop]
    if no_point.any():
        out = np.where(no_point, np.zeros(1, dtype=out.dtype) if out.dtype != object else 0, out)
    if uop.dtype.is_bool:
        out = out.astype(bool)
    return out, inv[uop] & ~no_point, und[uop] | no_point


def _vec_load(u: UOp, srcv: list[np.ndarray], inv: dict[UOp, np.ndarray],
              und: dict[UOp, np.ndarray], off: dict[UOp, np.ndarray], memory: Memory | None,
              n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LOAD over many assignments: the element where the address is valid (undefined
    outside the buffer), else the alternative (lazily, like WHERE) or 0."""
    addr = u.src[0]
    buf = addr.src[0]
    a_und, not_valid = und[addr], off[addr]
    read = ~a_und & ~not_valid
    offsets = srcv[0]
    size = buf.arg[1]
    outside = read & ((offsets < 0) | (offsets >= size))
    read &= ~outside
    npdt = _NP_ELEM[u.dtype.name]
    v = np.zeros(n, dtype=npdt)
    if read.any():
        assert memory is not None
        points = np.flatnonzero(read)
        got = memory.read(buf, offsets[points].astype(np.int64), points)
        v = _int_column(v, u.dtype)
        v[points] = _int_column(got, u.dtype)
    else:
        v = _int_column(v, u.dtype)
    u_m = a_und | outside
    i_m = np.zeros(n, dtype=bool)
    if len(u.src) > 1:
        alt = u.src[1]
        v = np.where(not_valid, srcv[1], v)
        u_m = u_m | (not_valid & und[alt])
        i_m = not_valid & inv[alt] & ~u_m
    return v, i_m, u_m


def _int_column(a: np.ndarray, dt: DType) -> np.ndarray:
    """An integer dtype's values as the evaluator keeps them: int64 (u64 as Python ints,
    which int64 cannot hold); other dtypes' arrays as they are."""
    if dt.name == "u64":
        return a.astype(object)
    return a.astype(np.int64) if dt.is_int else a


def _int_pow(dt: DType, a: Any, b: Any) -> Value:
    try:
        return alu(Ops.POW, dt, (a, b))
    except EvalError as e:  # an exponent too large to compute: no value, like evaluate's
        return Undefined(str(e))


def _as_int_column(a: np.ndarray) -> np.ndarray:
    """An object array of Python ints as int64 when every value is small enough."""
    return a.astype(np.int64) if _absmax(a) < _I64_SAFE else a


def _const_column(v: Any, n: int, dt: DType = dtypes.index) -> np.ndarray:
    if isinstance(v, bool):
        return np.full(n, v, dtype=bool)
    if dt.is_float:
        return np.full(n, v, dtype=NP_FLOAT[dt.name])
    if abs(v) < _I64_SAFE:
        return np.full(n, v, dtype=np.int64)
    out = np.empty(n, dtype=object)
    out[:] = v
    return out


def _vec_alu(u: UOp, srcv: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    op, dt = u.op, u.dtype
    if op in GroupOp.Comparison:
        a, b = srcv
        if a.dtype == object or b.dtype == object:
            a, b = _obj(a), _obj(b)
        return compare(op, a, b).astype(bool), None
    if op is Ops.CAST and (dt.is_float or u.src[0].dtype.is_float):
        return cast_float_array(srcv[0], u.src[0].dtype, dt)
    if dt.is_float:
        return float_array(op, dt, srcv), None
    if op is Ops.CAST:
        x = srcv[0]
        if dt.is_bool:
            return (x != 0).astype(bool), None
        if x.dtype == bool:
            x = x.astype(np.int64)
        return wrap_array(dt, x), None
    if dt.is_bool:
        if op is Ops.NOT:
            return ~srcv[0].astype(bool), None
        if op not in BOOL_BINARY:
            raise EvalError(f"{op.name} is not defined on bool")
        return BOOL_BINARY[op](srcv[0].astype(bool), srcv[1].astype(bool)), None
    big = any(s.dtype == object for s in srcv)
    mags = [_absmax(s) for s in srcv] if not big else []
    if mags and max(mags) >= _I64_SAFE:
        big, srcv = True, [_obj(s) for s in srcv]
    undef = None
    if op in (Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND):
        return srcv[0], None
    if op is Ops.NEG:
        return wrap_array(dt, -srcv[0]), None
    if op is Ops.NOT:
        return wrap_array(dt, ~srcv[0]), None
    a, b = srcv[0], srcv[1]
    if op in (Ops.ADD, Ops.SUB, Ops.MAX, Ops.MIN, Ops.AND, Ops.OR, Ops.XOR):
        if not big and max(mags) >= _I64_SAFE:
            a, b = _obj(a), _obj(b)
        if op is Ops.MAX:
            r = np.where(a >= b, a, b)
        elif op is Ops.MIN:
            r = np.where(a <= b, a, b)
        else:
            r = INT_BINARY[op](a, b)
        return wrap_array(dt, r), None
    if op in (Ops.MUL, Ops.MULACC):
        if big or mags[0] * mags[1] + (mags[2] if len(mags) > 2 else 0) >= _I64_SAFE:
            a, b = _obj(a), _obj(b)
            r = a * b + (_obj(srcv[2]) if op is Ops.MULACC else 0)
        else:
            r = a * b + (srcv[2] if op is Ops.MULACC else 0)
        return wrap_array(dt, r), None
    if op in GroupOp.IntDiv:
        zero = b == 0
        if zero.any():
            undef = zero
            b = np.where(zero, 1, b)
        if big:
            a, b = _obj(a), _obj(b)
        r = divide_array(op, a, b)
        if r.dtype == object and not big:
            r = r.astype(np.int64)
        return wrap_array(dt, r), undef
    if op is Ops.POW:  # lane by lane, as alu: undefined for a negative exponent
        r = np.array([_int_pow(dt, x, y) for x, y in zip(a, b, strict=True)], dtype=object)
        undef = np.array([isinstance(v, Undefined) for v in r], dtype=bool)
        r = np.where(undef, 0, r)
        return wrap_array(dt, _as_int_column(r)), (undef if undef.any() else None)
    if op in (Ops.SHL, Ops.SHR):
        bad = (b < 0) | (b >= shift_limit(dt))
        if bad.any():
            undef = bad
            b = np.where(bad, 0, b)
        if op is Ops.SHR:
            if big or b.dtype == object:
                r = _obj(a) >> _obj(b)
            else:
                r = a >> np.minimum(b, 63)
            return wrap_array(dt, r), undef
        smax = _absmax(b) if not big else None
        if big or smax >= 62 or (mags[0] << smax) >= _I64_SAFE:
            r = _obj(a) << _obj(b)
        else:
            r = a << b
        return wrap_array(dt, r), undef
    raise EvalError(f"{op.name} is not vectorized")


def _evaluate_many_slow(uop: UOp, columns: Mapping[str, np.ndarray], n: int,
                        memory: Memory | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _columns(_machine_values(uop, columns, n, memory))


def _machine_values(uop: UOp, columns: Mapping[str, np.ndarray], n: int,
                    memory: Memory | None, points: Sequence[int] | None = None
                    ) -> list[Value]:
    """The reference interpreter's value of ``uop`` at each assignment, or at those of
    ``points`` (an ``Undefined`` where it raises)."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    names = {leaf_key(u) for u in uop.leaves()}
    missing = names - set(cols)
    if missing:
        raise EvalError(f"no column for leaves {sorted(missing)}")
    out: list[Value] = []
    for i in range(n) if points is None else points:
        env = {k: int(cols[k][i]) for k in names}
        m = _Machine(env, memory.arrays(i) if memory is not None else None)
        try:
            out.append(m.value(uop, {}))
        except EvalError as e:
            out.append(Undefined(str(e)))
    return out


def _columns(values: Sequence[Value]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, invalid, undefined)`` of :func:`evaluate_many` from one value per
    assignment: undefined where any lane is, else Invalid where any lane is."""
    n = len(values)
    out = np.zeros(n, dtype=object)
    inv = np.zeros(n, dtype=bool)
    und = np.zeros(n, dtype=bool)
    for i, v in enumerate(values):
        if _first_undef(v) is not None:
            und[i] = True
        elif v is INVALID or (isinstance(v, tuple) and INVALID in v):
            inv[i] = True
        else:
            out[i] = _plain(v)
    return out, inv, und
