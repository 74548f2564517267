"""UOp graphs as z3 terms: the value of an input and of a rule's output, side by side.

A rule written in Python is proven on instances: a UOp graph its pattern matches, whose
leaves (variables, ranges, specials, loaded values, and with ``symbolic_consts`` its
constants) are symbolic; the rule's own code builds its output, and z3 shows the two
graphs equal for every value of the leaves within their bounds (:func:`same_graph`).

Values follow :mod:`rules.proof.semantics` (scalars), lane by lane for vectors (a list
of lanes). Memory: each buffer is a z3 array; an ``INDEX`` is an address (valid where
its gate holds and its index is not Invalid), a ``LOAD`` reads the array where the
address is valid and 0 (or its alternative) where not, a ``STORE`` is a write of its
value where its address is valid, a ``NOOP`` writes nothing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields, replace
from typing import Any

import z3

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp
from rules.proof.semantics import (
    CONVERSIONS,
    FLOAT_SORTS,
    INT_RANGE,
    RLIMIT,
    Val,
    apply,
    as_int,
    canon,
    check,
    const,
    fresh,
    in_range,
    same,
    solver,
    sort_of,
)

__all__ = ["Addr", "Write", "Graphs", "same_graph"]



@dataclass(frozen=True)
class Addr:
    """An address: buffer ``slot``, ``offset`` (an Int), valid where ``valid``."""

    slot: int
    offset: Any
    valid: Any
    undef: Any


@dataclass(frozen=True)
class Write:
    """A store of ``value`` at ``addr`` (it writes where the address is valid)."""

    addr: Addr
    value: Val


class Graphs:
    """The z3 values of UOp graphs over one set of symbolic leaves (see the module
    docstring); ``pre`` holds the leaves' bounds."""

    def __init__(self, bv: bool = False, symbolic_consts: bool = False):
        self.bv, self.symbolic_consts = bv, symbolic_consts
        self.memo: dict[UOp, Any] = {}
        self.pre: list[Any] = []
        self.mem: dict[tuple[int, str], Any] = {}
        self.consts: dict[tuple, Val] = {}
        self.loops: dict[tuple, Any] = {}
        self.n = itertools.count()

    def _scalar(self, dt: DType) -> str:
        return dt.scalar().name

    def _leaf(self, u: UOp) -> Val:
        v = fresh(f"{u.op.name.lower()}{next(self.n)}", "index", may_inv=False,
                  may_undef=False)
        lo, hi = u.vmin, u.vmax
        if not isinstance(lo, float):
            self.pre.append(v.x >= lo)
        if not isinstance(hi, float):
            self.pre.append(v.x <= hi)
        if u.op in (Ops.RANGE, Ops.SPECIAL):  # a loop index is below its END, symbolically
            self.pre.append(v.x < as_int(self.value(u.src[0])))
        return v

    def _const(self, dt: str, value: Any) -> Val:
        if not self.symbolic_consts:
            return const(dt, value, self.bv)
        key = (dt, repr(value))
        hit = self.consts.get(key)
        if hit is None:
            hit = self.consts[key] = fresh(f"k{next(self.n)}", dt, False, False, self.bv)
            self.pre.append(in_range(hit))
        return hit

    def value(self, u: UOp) -> Any:
        hit = self.memo.get(u)
        if hit is None:
            hit = self.memo[u] = self._value(u)
        return hit

    def _lanes(self, v: Any, n: int) -> list[Val]:
        return v if isinstance(v, list) else [v] * n

    def _value(self, u: UOp) -> Any:
        op, dt = u.op, u.dtype
        sdt = self._scalar(dt)
        if op is Ops.CONST:
            c = self._const(sdt, u.arg)
            return [c] * dt.count if dt.count > 1 else c
        if op is Ops.VCONST:
            return [self._const(sdt, a) for a in u.arg]
        if op in (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL):
            return self._leaf(u)
        if op is Ops.INVALID:
            inv = z3.Const(f"inv{next(self.n)}", sort_of(sdt, self.bv))
            return Val(sdt, z3.BoolVal(False), z3.BoolVal(True), inv)
        if op is Ops.DEFINE_GLOBAL:
            return ("buffer", u.arg[0], u.dtype.base().scalar().name)
        if op is Ops.NOOP:
            return []
        if op is Ops.VECTORIZE:
            out: list[Val] = []
            for s in u.src:
                v = self.value(s)
                out.extend(v if isinstance(v, list) else [v])
            return out
        if op is Ops.CAT or op is Ops.PTRCAT:
            out = []
            for s in u.src:
                v = self.value(s)
                out.extend(v if isinstance(v, list) else [v])
            return out
        if op is Ops.GEP:
            v = self.value(u.src[0])
            if u.dtype == dtypes.void:  # an effect has no lanes: its GEP is the effect
                return v
            lanes = v if isinstance(v, list) else [v]
            picked = [lanes[i] for i in u.arg]
            return picked[0] if len(picked) == 1 else picked
        if op is Ops.INDEX:
            return self._index(u)
        if op is Ops.LOAD:
            return self._load(u)
        if op is Ops.STORE:
            addr = self.value(u.src[0])
            return [Write(addr, self.value(u.src[1]))]
        if op is Ops.END:
            return self._loop(u.src[0], u.src[1:], None)
        if op is Ops.REDUCE:
            return self._loop(u.src[0], u.src[1:], u)
        if op is Ops.SINK:
            out = []
            for s in u.src:
                v = self.value(s)
                out.extend(v if isinstance(v, list) else [])
            return out
        if op is Ops.AFTER:  # its dependencies only order it
            return self.value(u.src[0])
        if op is Ops.CAST and dt.ptr:  # a pointer cast is its address
            return self.value(u.src[0])
        if op in GroupOp.ALU or op in (Ops.CAST, Ops.BITCAST):
            vals = [self.value(s) for s in u.src]
            n = max([dt.count] + [len(v) for v in vals if isinstance(v, list)])
            if n == 1:
                return apply(op, sdt, vals, bv=self.bv)
            cols = [self._lanes(v, n) for v in vals]
            return [apply(op, sdt, list(lane), bv=self.bv) for lane in zip(*cols, strict=True)]
        raise NotImplementedError(f"no z3 value for {op.name}")

    def _loop(self, body: UOp, ranges: tuple[UOp, ...], reduce: UOp | None) -> Any:
        """An END's writes or a REDUCE's value: its body once per value of its ranges
        (each range of a constant end of at most :data:`MAX_UNROLL`, unrolled; a range
        folded to a constant ran once). A range whose end is at most 0 for every value
        of the leaves runs zero times, and so does the loop, whatever the other ranges'
        ends: nothing written, the REDUCE's identity."""
        live = [r for r in ranges if r.op is not Ops.CONST]
        if reduce is None and self.value(body) == []:  # nothing written, however often
            return []
        if any(r.op is Ops.RANGE and r.src[0].vmax <= 0 for r in live):
            if reduce is None:
                return []
            ident = _identity(reduce.arg, reduce.dtype.scalar())
            if ident is None:
                raise NotImplementedError("an empty index MAX/MIN reduction has no value")
            return const(self._scalar(reduce.dtype), ident, self.bv)
        if any(r.op is not Ops.RANGE or r.src[0].op is not Ops.CONST
               or r.src[0].arg > MAX_UNROLL for r in live):
            return self._opaque_loop(body, tuple(live), reduce)
        ends = [range(max(0, r.src[0].arg)) for r in live]
        v = self.value(body)
        keys = [self.value(r).x for r in live]
        steps = [_subst(v, list(zip(keys, map(z3.IntVal, it), strict=True)))
                 for it in itertools.product(*ends)]
        if reduce is None:
            return [w for st in steps for w in (st if isinstance(st, list) else [])]
        sdt = self._scalar(reduce.dtype)
        ident = _identity(reduce.arg, reduce.dtype.scalar())
        acc = steps[0] if ident is None and steps else const(sdt, ident, self.bv)
        for st in (steps[1:] if ident is None else steps):
            acc = apply(reduce.arg, sdt, [acc, st], bv=self.bv)
        return acc

    def _opaque_loop(self, body: UOp, live: tuple[UOp, ...], reduce: UOp | None) -> Any:
        """A loop not unrolled (a range of a variable or large end): an unknown value, or
        an unknown write, of its body and its ranges (the ranges folded to a constant
        left out: they ran once), the same for two loops of the same body and ranges. A
        rule proven so holds for every meaning of such a loop."""
        key = (body, live, reduce.arg if reduce is not None else None,
               reduce.dtype if reduce is not None else None)
        hit = self.loops.get(key)
        if hit is None:
            k = next(self.n)
            if reduce is None:
                st = fresh(f"loopval{k}", "index", bv=False)
                hit = [Write(Addr(-1, z3.Int(f"loopaddr{k}"), z3.Bool(f"loopvalid{k}"),
                                  z3.Bool(f"loopundef{k}")), st)]
            else:
                hit = fresh(f"loop{k}", self._scalar(reduce.dtype), bv=self.bv)
            self.loops[key] = hit
        return hit

    def _index(self, u: UOp) -> Addr:
        buf = self.value(u.src[0])
        idx = self.value(u.src[1])
        valid = z3.Not(idx.inv)
        undef = idx.undef
        if len(u.src) > 2:
            g = self.value(u.src[2])
            valid = z3.And(valid, z3.Not(g.inv), g.x)
            undef = z3.Or(undef, g.undef)
        return Addr(buf[1], as_int(idx) if idx.dt != "bool" else z3.IntVal(0), valid, undef)

    def _array(self, slot: int, elem: str) -> Any:
        key = (slot, elem)
        a = self.mem.get(key)
        if a is None:
            a = self.mem[key] = z3.Array(f"mem{slot}_{elem}", z3.IntSort(),
                                         sort_of(elem, self.bv))
        return a

    def _load(self, u: UOp) -> Val:
        addr = self.value(u.src[0])
        dt = self._scalar(u.dtype)
        if isinstance(addr, Val) or not isinstance(addr, Addr):
            raise NotImplementedError("a load of something other than an address")
        read = z3.Select(self._array(addr.slot, dt), addr.offset)
        other = self.value(u.src[1]) if len(u.src) > 1 else const(dt, 0, self.bv)
        return Val(dt, z3.Or(addr.undef, z3.And(z3.Not(addr.valid), other.undef)),
                   z3.And(z3.Not(addr.valid), other.inv), z3.If(addr.valid, read, canon(other)))


def _identity(op: Ops, dt: DType) -> Any:
    """The first value of a REDUCE's fold (None: an index MAX/MIN starts from its first
    element), as the reference interpreter has it."""
    if op is Ops.ADD:
        return 0
    if op is Ops.MUL:
        return 1
    if dt.is_index:
        return None
    if dt.is_float:
        return -math.inf if op is Ops.MAX else math.inf
    return dt.min if op is Ops.MAX else dt.max


#: loops over ranges of a constant end up to this are unrolled
MAX_UNROLL = 4


def _subst(v: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """``v`` (a value, an address, a write, a list of them) with ``pairs`` substituted."""
    if not pairs:
        return v
    if isinstance(v, list):
        return [_subst(x, pairs) for x in v]
    if isinstance(v, (Val, Addr, Write)):
        return replace(v, **{f.name: _subst(getattr(v, f.name), pairs) for f in fields(v)
                             if f.name not in ("dt", "raw", "slot")})
    if isinstance(v, z3.ExprRef):
        return z3.substitute(v, *pairs)
    return v


def _eq_writes(a: list[Write], b: list[Write]) -> Any:
    """Two lists of writes write the same: pairwise where both may write (a write whose
    address is never valid writes nothing)."""
    a = [w for w in a if not z3.is_false(z3.simplify(w.addr.valid))]
    b = [w for w in b if not z3.is_false(z3.simplify(w.addr.valid))]
    if len(a) != len(b):
        return z3.BoolVal(False)
    out = []
    for x, y in zip(a, b, strict=True):
        out.append(x.addr.valid == y.addr.valid)
        out.append(z3.Implies(x.addr.valid, z3.And(
            x.addr.slot == y.addr.slot, x.addr.offset == y.addr.offset,
            same(x.value, y.value))))
    return z3.And(*out)


def _same(a: Any, b: Any) -> Any:
    if isinstance(a, list) and a and isinstance(a[0], Write) or \
            isinstance(b, list) and b and isinstance(b[0], Write) or (a == [] or b == []):
        return _eq_writes(a, b)
    if isinstance(a, Addr) and isinstance(b, Addr):
        return z3.And(a.valid == b.valid, z3.Implies(a.valid, z3.And(
            z3.BoolVal(a.slot == b.slot), a.offset == b.offset)))
    if isinstance(a, list) or isinstance(b, list):
        la = a if isinstance(a, list) else [a]
        lb = b if isinstance(b, list) else [b]
        if len(la) != len(lb):
            return z3.BoolVal(False)
        return z3.And(*[_same(x, y) for x, y in zip(la, lb, strict=True)])
    return _keep(a, b)


def _keep(lhs: Val, rhs: Val) -> Any:
    """Where the left side has a value or is Invalid, the right side is the same; where
    it divides by zero (its leaves are values), the right side is undefined too."""
    keep = z3.Implies(z3.Not(lhs.undef),
                      z3.And(z3.Not(rhs.undef), lhs.inv == rhs.inv,
                             z3.Or(lhs.inv, canon(lhs) == canon(rhs))))
    return z3.And(keep, z3.Implies(lhs.divz, rhs.undef))


def same_graph(lhs: UOp, rhs: UOp, rlimit: int = RLIMIT,
               symbolic_consts: bool = False) -> tuple[Any, str]:
    """z3's verdict that ``rhs`` equals ``lhs`` for every value of their leaves (see the
    module docstring): ``(z3.unsat, "")`` when proven, else the result and a model."""
    floats = any(u.dtype.scalar().name in FLOAT_SORTS for u in (lhs, rhs)
                 for u in u.toposort())
    fixed = any(u.dtype.scalar().name in INT_RANGE for u in lhs.toposort())
    bits = ("uf", "exact") if any(u.op in _BITWISE and u.dtype.scalar().name == "index"
                                  for u in lhs.toposort()) else ("exact",)
    r, last = z3.unknown, ""
    for bit, bv in ((b, v) for b in bits for v in ((False, True) if fixed else (False,))):
        CONVERSIONS["bitwise"] = bit  # an unknown commutative function first
        g = Graphs(bv, symbolic_consts)
        try:
            claim = _same(g.value(lhs), g.value(rhs))
        finally:
            CONVERSIONS["bitwise"] = "exact"
        s = solver(floats)
        s.add(*g.pre)
        s.add(z3.Not(claim))
        r = check(s, rlimit if bv or not fixed else rlimit // 10)
        if r == z3.sat:
            last = str(s.model())[:300]
        if r == z3.unsat or (r == z3.sat and bit == "exact"):
            break
    return r, last


def same_graphs(pairs: list[tuple[UOp, UOp]], rlimit: int = RLIMIT,
                symbolic_consts: bool = False) -> bool:
    """Whether z3 shows every ``rhs`` equal to its ``lhs`` at once (one query for all
    the pairs: their leaves of one name are one variable, and a conjunction of claims
    that each hold for every value holds so). False says nothing about which pair, or
    whether any is wrong: check those one by one with :func:`same_graph`. Integer and
    bool pairs only (fixed-width integers as wrapped Ints: exact, the first reading
    :func:`same_graph` tries); pairs with floats are False."""
    for lhs, rhs in pairs:
        for u in itertools.chain(lhs.toposort(), rhs.toposort()):
            if u.dtype.scalar().name in FLOAT_SORTS:
                return False
    g = Graphs(False, symbolic_consts)
    try:
        claim = z3.And(*[_same(g.value(lhs), g.value(rhs)) for lhs, rhs in pairs])
    except NotImplementedError:
        return False
    s = solver()
    s.add(*g.pre)
    s.add(z3.Not(claim))
    return check(s, rlimit) == z3.unsat


_BITWISE = frozenset((Ops.AND, Ops.OR, Ops.XOR))
