"""The bridge to tinygrad 0.14: :func:`from_tinygrad` and :func:`to_tinygrad`.

``from_tinygrad(u)`` turns a tinygrad ``UOp`` (an index expression, or a whole
kernel AST as tinygrad's scheduler builds it) into an IR graph with the same
value at every point; ``to_tinygrad(g)`` goes back. Install tinygrad with the
``tinygrad`` extra (``pip install 'uop-eqsat[tinygrad]'``, tinygrad 0.14.x).

How tinygrad 0.14 spells things, and what they become here
----------------------------------------------------------
* dtypes: ``weakint`` (the dtype of index arithmetic) is ``index``; a weak
  constant (``weakint``/``weakfloat``) takes the dtype of the strong operand beside
  it, as tinygrad commits it, else ``index`` / ``f32``; ``CAST(weak CONST)`` (how
  tinygrad spells a typed constant) is a constant of the cast's dtype. fp8 dtypes
  have no counterpart.
* division, one to one both ways: ``FLOORDIV``/``FLOORMOD`` (what ``//`` and ``%``
  build: the quotient rounded toward -inf, the remainder with the divisor's sign) are
  ``floordiv``/``floormod``; ``CDIV``/``CMOD`` (C: truncating, the remainder with the
  dividend's sign) are ``idiv``/``mod``. The rules turn a floor division into C's
  where the signs are proven (``rules/floordiv.py``), and the lowering expands the
  rest (``lowering/decompose.py``).
* leaves: ``RANGE`` (arg ``(axis_id, AxisType)``) is ``(range axis_id END KIND)``,
  KIND the AxisType's name in lower case (``AxisType.LOOP`` is the default kind
  ``loop``, written ``(range axis_id END)``; ``to_tinygrad`` gives each kind its
  AxisType back);
  ``SPECIAL`` is ``(special NAME END)``; a Variable (a ``BUFFER``, or inside a
  kernel a ``PARAM``, in the ``ALU`` address space whose ``ParamArg`` holds the
  name and ``vmin_vmax``) is ``(var NAME LO HI)`` (a bound variable,
  ``AFTER(var, STORE(var, CONST))``, is its variable); a ``PARAM`` or ``BUFFER`` of
  global memory is ``(buffer SLOT DTYPE SIZE)``; ``CONST Invalid`` is ``(invalid)``.
* memory: ``INDEX(buf, idx)`` is the address ``(index buf idx)``; a kernel AST
  reads a buffer by using that ``INDEX`` as a value (tinygrad adds the ``LOAD``
  late), which becomes ``(load (index buf idx))``; ``LOAD(idx, alt, gate)`` and
  ``STORE(idx, val, gate)`` carry the gate on the index: ``(index buf idx gate)``.
* the rest maps one to one: ``ADD MUL SUB MAX SHL SHR AND OR XOR CMPLT CMPNE CMPEQ
  FDIV POW NEG RECIPROCAL SQRT EXP2 LOG2 SIN TRUNC WHERE MULACC CAST BITCAST STACK
  END REDUCE AFTER SINK``; ``x != True`` on bools (tinygrad's logical not) is
  ``(not x)``. ``to_tinygrad`` uses tinygrad's own spellings where tinygrad has no
  op of its own (``a - b`` is ``a + b*-1``, ``(le a b)`` is ``(b < a) != True``,
  ``min`` is tinygrad's ``minimum``, ...).

Anything else (movement ops, multi-dimensional ``INDEX``, local buffers, vector
``GEP``/``CAT``, ``THREEFRY``, ...) raises :class:`TinygradError` naming the op.

``to_tinygrad(g, like=u)`` reuses the
leaves (ranges, specials, variables, buffers) of the tinygrad graph ``u`` wherever
they convert to a leaf of ``g``, so ``to_tinygrad(optimize(from_tinygrad(u)).graph,
like=u)`` plugs back into ``u``'s kernel. :func:`evaluate_tinygrad` evaluates a
tinygrad graph with tinygrad's own ALU (``exec_alu``) or its simplifier, under an
assignment keyed like :func:`eqsat.evaluate`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.interp import INVALID, leaf_key
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import RANGE_KINDS, UOp, range_id, range_kind
from rules.where import narrowing

__all__ = ["from_tinygrad", "to_tinygrad", "evaluate_tinygrad", "as_floor", "optimized_ast",
           "TinygradError",
           "TINYGRAD_REQUIREMENT"]

TINYGRAD_REQUIREMENT = "tinygrad>=0.14,<0.15"


class TinygradError(ValueError):
    """A graph the bridge cannot carry over: the message names the op and why."""


def _tg() -> Any:
    """The tinygrad modules the bridge uses (imported on first use, version checked)."""
    global _TG
    if _TG is not None:
        return _TG
    try:
        from importlib.metadata import version

        import tinygrad.uop.ops as ops_mod
        from tinygrad.dtype import AddrSpace, Invalid
        from tinygrad.dtype import dtypes as tdt
        from tinygrad.uop import Ops as TOps
    except ImportError as e:
        raise ImportError("the tinygrad bridge needs tinygrad 0.14: "
                          "pip install 'uop-eqsat[tinygrad]'") from e
    ver = version("tinygrad")
    if not ver.startswith("0.14."):
        raise ImportError(f"the tinygrad bridge supports tinygrad 0.14.x, found {ver} "
                          f"(pip install '{TINYGRAD_REQUIREMENT}')")
    _TG = _Tinygrad(ops_mod, TOps, tdt, AddrSpace, Invalid)
    return _TG


class _Tinygrad:
    """tinygrad's modules and the dtype tables between the two IRs."""

    def __init__(self, ops_mod: Any, TOps: Any, tdt: Any, AddrSpace: Any, Invalid: Any):  # noqa: N803
        self.ops_mod, self.UOp, self.Ops, self.dtypes = ops_mod, ops_mod.UOp, TOps, tdt
        self.AddrSpace, self.Invalid, self.AxisType = AddrSpace, Invalid, ops_mod.AxisType
        pairs = [(tdt.bool, dtypes.bool), (tdt.int8, dtypes.i8), (tdt.int16, dtypes.i16),
                 (tdt.int32, dtypes.i32), (tdt.int64, dtypes.i64), (tdt.uint8, dtypes.u8),
                 (tdt.uint16, dtypes.u16), (tdt.uint32, dtypes.u32), (tdt.uint64, dtypes.u64),
                 (tdt.float16, dtypes.f16), (tdt.bfloat16, dtypes.bf16),
                 (tdt.float32, dtypes.f32), (tdt.float64, dtypes.f64),
                 (tdt.weakint, dtypes.index), (tdt.void, dtypes.void)]
        self.to_ours = dict(pairs)
        self.to_theirs = {ours: theirs for theirs, ours in pairs}
        self.weak = {tdt.weakint: dtypes.index, tdt.weakfloat: dtypes.f32}
        o = TOps
        self.binary = {o.ADD: Ops.ADD, o.MUL: Ops.MUL, o.SUB: Ops.SUB, o.MAX: Ops.MAX,
                       o.SHL: Ops.SHL, o.SHR: Ops.SHR, o.AND: Ops.AND, o.OR: Ops.OR,
                       o.XOR: Ops.XOR, o.CDIV: Ops.IDIV, o.CMOD: Ops.MOD,
                       o.FLOORDIV: Ops.FLOORDIV, o.FLOORMOD: Ops.FLOORMOD, o.FDIV: Ops.FDIV,
                       o.POW: Ops.POW, o.CMPLT: Ops.LT, o.CMPNE: Ops.NE, o.CMPEQ: Ops.EQ}
        self.unary = {o.NEG: Ops.NEG, o.RECIPROCAL: Ops.RECIP, o.SQRT: Ops.SQRT,
                      o.EXP2: Ops.EXP2, o.LOG2: Ops.LOG2, o.SIN: Ops.SIN, o.TRUNC: Ops.TRUNC}
        self.reduce = {o.ADD: Ops.ADD, o.MUL: Ops.MUL, o.MAX: Ops.MAX}
        self.from_binary = {v: k for k, v in self.binary.items()
                            if v not in (Ops.SUB, Ops.EQ)}
        self.from_unary = {v: k for k, v in self.unary.items() if v is not Ops.NEG}


_TG: _Tinygrad | None = None


def _dtype_in(t: _Tinygrad, dt: Any, what: Any) -> DType:
    if dt in t.to_ours:
        return t.to_ours[dt]
    if dt in t.weak:
        return t.weak[dt]
    raise TinygradError(f"{_name(what)}: dtype {dt!r} has no counterpart in the IR")


def _name(u: Any) -> str:
    return f"{u.op}" if hasattr(u, "op") else str(u)


def _kind_in(u: Any) -> str:
    """The kind of tinygrad's RANGE ``u``: its AxisType's name in lower case."""
    kind = getattr(u.arg[-1], "name", "").lower()
    if kind not in RANGE_KINDS:
        raise TinygradError(f"{_name(u)}: AxisType {u.arg[-1]!r} has no range kind")
    return kind


def valid_part(u: UOp) -> UOp:
    """``u`` with every ``(where c x (invalid))`` replaced by ``x`` in which the
    expressions ``c`` bounds are narrowed to those bounds (``rules.where.narrowing``):
    the same value as ``u`` on every lane where ``u`` is valid, and bounds that count
    only those lanes (a padded ``r - 2`` under ``2 <= r`` is ``>= 0``)."""
    if not any(n.op is Ops.INVALID for n in u.toposort()):
        return u
    new: dict[UOp, UOp] = {}
    for n in u.toposort():
        src = tuple(new[s] for s in n.src)
        if n.op is Ops.WHERE and Ops.INVALID in (n.src[1].op, n.src[2].op):
            cond = n.src[0] if n.src[2].op is Ops.INVALID else UOp(Ops.NOT, dtypes.bool,
                                                                  (n.src[0],))
            x = src[1] if n.src[2].op is Ops.INVALID else src[2]
            sub = narrowing(cond, x)
            new[n] = x.substitute(sub) if sub else x
        else:
            new[n] = n if src == n.src else n.replace(src=src)
    return new[u]


def same_sign(a: UOp, c: UOp) -> bool:
    """True when ``a`` (where valid) and ``c`` are proven both ``>= 0`` or both ``<= 0``:
    there floor division and C's truncating division agree (and so do the remainders)."""
    a = valid_part(a)
    return (a.vmin >= 0 and c.vmin >= 0) or (a.vmax <= 0 and c.vmax <= 0)


def _floor_to_c(op: Ops, a: UOp, c: UOp) -> UOp:
    """Floor division (``op`` IDIV) or floor remainder (``op`` MOD) of ``a`` by ``c`` in
    C's ``idiv``/``mod``, as the bridge wrote it before the IR had floor ops: the plain
    op where :func:`same_sign` proves them equal, else ``(sub q (where adj 1 0))`` and
    ``(add r (where adj c 0))`` with ``q = (idiv a c)``, ``r = (mod a c)`` and ``adj``
    true where ``r`` is non-zero and of ``c``'s opposite sign."""
    q_or_r = UOp(op, a.dtype, (a, c))
    if same_sign(a, c):
        return q_or_r
    dt = a.dtype
    r = UOp(Ops.MOD, dt, (a, c))
    zero = UOp.const(dt, 0)
    if c.vmin > 0:
        adj = UOp(Ops.LT, dtypes.bool, (r, zero))
    elif c.vmax < 0:
        adj = UOp(Ops.GT, dtypes.bool, (r, zero))
    else:
        adj = UOp(Ops.AND, dtypes.bool, (
            UOp(Ops.NE, dtypes.bool, (r, zero)),
            UOp(Ops.NE, dtypes.bool, (UOp(Ops.LT, dtypes.bool, (r, zero)),
                                      UOp(Ops.LT, dtypes.bool, (c, zero))))))
    if op is Ops.IDIV:
        return UOp(Ops.SUB, dt, (q_or_r, UOp(Ops.WHERE, dt, (adj, UOp.const(dt, 1), zero))))
    return UOp(Ops.ADD, dt, (r, UOp(Ops.WHERE, dt, (adj, c, zero))))


def _c_to_floor(u: UOp) -> tuple[Ops, UOp, UOp] | None:
    """``(IDIV or MOD, a, c)`` when ``u`` is exactly :func:`_floor_to_c`'s expansion of a
    floor division or remainder of ``a`` by ``c`` (hash-consing makes it one identity
    test), else None."""
    if u.op is Ops.SUB and u.src[0].op is Ops.IDIV:
        op, (a, c) = Ops.IDIV, u.src[0].src
    elif u.op is Ops.ADD and u.src[0].op is Ops.MOD:
        op, (a, c) = Ops.MOD, u.src[0].src
    else:
        return None
    return (op, a, c) if _floor_to_c(op, a, c) is u else None


def as_floor(g: UOp) -> UOp:
    """``g`` with C's division written as floor division wherever it has the same value:
    an ``idiv``/``mod`` whose dividend (where valid) and divisor are proven of one sign
    (:func:`same_sign`), and the exact C expansion of a floor division (what the corpus's
    texts, captured before the IR had floor ops, hold: :func:`_floor_to_c`). What
    tinygrad's own simplifier, which works on ``FLOORDIV``/``FLOORMOD``, is given of a
    C-semantics text (``benchmarks/vs_tinygrad.py``); ``to_tinygrad`` itself maps each op
    to its own."""
    new: dict[UOp, UOp] = {}
    for n in g.toposort():
        src = tuple(new[s] for s in n.src)
        floor = _c_to_floor(n) if n.op in (Ops.ADD, Ops.SUB) else None
        if floor is not None:
            op, a, c = floor
            new[n] = UOp(_FLOOR_OF[op], n.dtype, (new[a], new[c]))
        elif n.op in (Ops.IDIV, Ops.MOD) and same_sign(n.src[0], n.src[1]):
            new[n] = UOp(_FLOOR_OF[n.op], n.dtype, src)
        else:
            new[n] = n if src == n.src else n.replace(src=src)
    return new[g]


_FLOOR_OF = {Ops.IDIV: Ops.FLOORDIV, Ops.MOD: Ops.FLOORMOD}


def _toposort(root: Any, descend: Any) -> list[Any]:
    """tinygrad nodes children first; the sources of a node ``descend(node)`` refuses are
    left out (the node itself is kept, unlike tinygrad's ``toposort(gate=...)``)."""
    out: list[Any] = []
    seen: set[Any] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        if descend(node):
            stack.extend((s, False) for s in reversed(node.src) if s not in seen)
    return out


# ---------------------------------------------------------------------------
# tinygrad -> IR
class _Weak:
    """A weak tinygrad constant whose dtype its consumer decides."""

    __slots__ = ("value", "default")

    def __init__(self, value: Any, default: DType):
        self.value, self.default = value, default

    def as_dtype(self, dt: DType | None) -> UOp:
        dt = self.default if dt is None or dt.ptr or dt.is_void else dt.scalar()
        if dt.is_bool:
            dt = self.default
        return UOp.const(dt, self.value)


def _strong(x: UOp | _Weak) -> UOp:
    return x.as_dtype(None) if isinstance(x, _Weak) else x


def _value(x: UOp | _Weak) -> UOp | _Weak:
    """An operand used as a value: an address (a kernel AST's INDEX) is read."""
    if isinstance(x, UOp) and x.dtype.ptr:
        if x.op is not Ops.INDEX:
            raise TinygradError(f"a buffer used as a value ({x!r}): expected an INDEX of it")
        return UOp(Ops.LOAD, x.dtype.base(), (x,))
    return x


def _unify(srcs: list[UOp | _Weak], what: Any) -> tuple[list[UOp], DType]:
    """Operands of one ALU op: weak constants take the strong operands' dtype."""
    strong = {s.dtype for s in srcs if isinstance(s, UOp) and s.op is not Ops.INVALID}
    if len(strong) > 1:
        raise TinygradError(f"{_name(what)}: operands of different dtypes "
                            f"({', '.join(sorted(map(str, strong)))})")
    dt = strong.pop() if strong else None
    out = [s.as_dtype(dt) if isinstance(s, _Weak) else s for s in srcs]
    if dt is not None:  # an Invalid takes its siblings' dtype (docs/format.md: a cast of one)
        out = [_invalid_of(dt, what) if s.op is Ops.INVALID and s.dtype != dt else s
               for s in out]
    return out, dt if dt is not None else out[0].dtype


def _invalid_of(dt: DType, what: Any) -> UOp:
    """The Invalid of dtype ``dt``: ``(invalid)`` for index, ``(cast T (invalid))`` else."""
    if dt.count != 1 or dt.ptr:
        raise TinygradError(f"{_name(what)}: an Invalid beside operands of dtype {dt} "
                            "(only scalar dtypes have one)")
    inv = UOp.invalid()
    return inv if dt is dtypes.index else UOp(Ops.CAST, dt, (inv,))


class _FromTinygrad:
    def __init__(self) -> None:
        self.t = _tg()
        self.done: dict[Any, UOp | _Weak] = {}
        self.ranges: dict[UOp, Any] = {}
        self.rids: dict[tuple, int] = {}

    def run(self, root: Any) -> UOp:
        order = _toposort(root, self.descend)
        self.number_ranges([u for u in order if u.op is self.t.Ops.RANGE])
        for u in order:
            self.done[u] = self.node(u)
        return _strong(_value(self.done[root]) if root.op is not self.t.Ops.INDEX
                       else self.done[root])

    def number_ranges(self, ranges: list[Any]) -> None:
        """A range's id is its axis id; the ranges whose arg has more numbers (tinygrad's
        split ranges, ``(axis_id, part, AxisType)``) get the ids above every number of
        the graph's range args, in the order of their args."""
        keys = set()
        for r in ranges:
            key = r.arg[:-1]
            if not key or not all(isinstance(k, int) for k in key):
                raise TinygradError(f"{_name(r)}: expected arg (axis_id, ..., AxisType), "
                                    f"got {r.arg!r}")
            keys.add(key)
        nxt = max((k for key in keys for k in key), default=-1) + 1
        for key in sorted(keys):
            if len(key) == 1:
                self.rids[key] = key[0]
        for key in sorted(k for k in keys if len(k) > 1):
            self.rids[key], nxt = nxt, nxt + 1

    def descend(self, u: Any) -> bool:
        """A buffer's sources are its shape, a bound variable's its binding: not graph."""
        return u.op not in (self.t.Ops.PARAM, self.t.Ops.BUFFER) and not u.is_bound_var

    def src(self, u: Any, i: int) -> UOp | _Weak:
        return self.done[u.src[i]]

    def index_like(self, x: UOp | _Weak, what: Any) -> UOp:
        x = _strong(_value(x))
        if not x.dtype.is_int:
            raise TinygradError(f"{_name(what)}: expected an integer, got dtype {x.dtype}")
        return x

    def param(self, u: Any) -> UOp:
        t, a = self.t, u.arg
        if a.addrspace is t.AddrSpace.ALU:
            if a.vmin_vmax is None:
                raise TinygradError(f"{_name(u)}: an ALU parameter without a value range "
                                    "(not a Variable)")
            lo, hi = a.vmin_vmax
            # a bound that is itself a variable (Variable("i", 0, n)): its outer bound
            lo, hi = getattr(lo, "vmin", lo), getattr(hi, "vmax", hi)
            if not (isinstance(lo, int) and isinstance(hi, int)):
                raise TinygradError(f"{_name(u)}: Variable {a.name!r} has non-integer bounds")
            v = UOp.var(a.name if a.name is not None else f"p{a.slot}", lo, hi)
            dt = _dtype_in(t, u.dtype, u)
            return v if dt is dtypes.index else UOp(Ops.CAST, dt, (v,))
        if a.addrspace is not t.AddrSpace.GLOBAL:
            raise TinygradError(f"{_name(u)}: buffers in {a.addrspace!r} have no text form "
                                "(only global buffers and Variables)")
        shape = u.src[0] if u.src else None
        dims = ([shape] if shape is not None and shape.op is t.Ops.CONST else
                list(shape.src) if shape is not None and shape.op is t.Ops.STACK else None)
        if dims is None or any(d.op is not t.Ops.CONST for d in dims):
            raise TinygradError(f"{_name(u)}: buffer {a.slot} has no constant size")
        return UOp.buffer(a.slot, _dtype_in(t, a.dtype, u), math.prod(d.arg for d in dims))

    def node(self, u: Any) -> UOp | _Weak:  # noqa: C901 - one case per op
        t, tops = self.t, self.t.Ops
        op = u.op
        if op is tops.CONST:
            if u.arg is t.Invalid:
                return UOp.invalid()
            if u.dtype in t.weak:
                return _Weak(u.arg, t.weak[u.dtype])
            return UOp.const(_dtype_in(t, u.dtype, u), u.arg)
        if op in (tops.CAST, tops.BITCAST):
            dt = _dtype_in(t, u.dtype, u)
            x = self.src(u, 0)
            if op is tops.CAST and isinstance(x, _Weak):
                return UOp.const(dt, x.value)
            x = _strong(_value(x))
            return UOp(Ops.CAST if op is tops.CAST else Ops.BITCAST, dt, (x,))
        if op is tops.RANGE:
            if len(u.src) != 1:
                raise TinygradError(f"{_name(u)}: expected RANGE(end), got {len(u.src)} sources")
            r = UOp.range(self.index_like(self.src(u, 0), u), self.rids[u.arg[:-1]],
                          _kind_in(u))
            if self.ranges.setdefault(r, u) is not u:
                raise TinygradError(f"{_name(u)}: tinygrad ranges {self.ranges[r].arg} and "
                                    f"{u.arg} with the same end would be one (range ...) here")
            return r
        if op is tops.SPECIAL:
            return UOp.special(str(u.arg), self.index_like(self.src(u, 0), u))
        if op in (tops.PARAM, tops.BUFFER):
            return self.param(u)
        if op is tops.AFTER:
            if u.is_bound_var:
                return self.param(u.src[0])
            srcs = [_strong(self.done[s]) for s in u.src]
            return UOp(Ops.AFTER, srcs[0].dtype, tuple(srcs))
        if op is tops.INDEX:
            buf = self.src(u, 0)
            if not (isinstance(buf, UOp) and buf.op is Ops.DEFINE_GLOBAL) or len(u.src) != 2:
                raise TinygradError(f"{_name(u)}: only INDEX(global buffer, one index) has a "
                                    f"counterpart (got {len(u.src) - 1} indices of "
                                    f"{_name(u.src[0])}; flatten the view first)")
            return UOp(Ops.INDEX, buf.dtype, (buf, self.index_like(self.src(u, 1), u)))
        if op in (tops.LOAD, tops.STORE):
            return self.memory(u)
        if op is tops.END:
            x = _strong(_value(self.src(u, 0)))
            rs = [self.done[s] for s in u.src[1:]]
            if any(not isinstance(r, UOp) or r.op is not Ops.RANGE for r in rs):
                raise TinygradError(f"{_name(u)}: END closes something other than ranges")
            return UOp(Ops.END, dtypes.void, (x, *rs))
        if op is tops.REDUCE:
            rop, naxes = u.arg
            rs = [self.done[s] for s in u.src[1:]]
            if naxes != 0 or rop not in t.reduce or any(
                    not isinstance(r, UOp) or r.op is not Ops.RANGE for r in rs):
                raise TinygradError(f"{_name(u)}: only REDUCE(x, ranges...) of ADD, MUL or MAX "
                                    f"has a counterpart (got arg {u.arg!r})")
            x = _strong(_value(self.src(u, 0)))
            return UOp(Ops.REDUCE, x.dtype, (x, *rs), t.reduce[rop])
        if op is tops.SINK:
            return UOp(Ops.SINK, dtypes.void, tuple(_strong(self.done[s]) for s in u.src))
        if op is tops.STACK:
            (srcs, dt) = _unify([_value(self.done[s]) for s in u.src], u)
            if any(s.dtype.count != 1 or s.dtype.ptr for s in srcs) or not srcs:
                raise TinygradError(f"{_name(u)}: only a STACK of scalars has a counterpart")
            return UOp(Ops.VECTORIZE, dt.vec(len(srcs)), tuple(srcs))
        if op is tops.WHERE:
            cond = _strong(_value(self.src(u, 0)))
            (a, b), dt = _unify([_value(self.src(u, 1)), _value(self.src(u, 2))], u)
            return UOp(Ops.WHERE, dt, (cond, a, b))
        if op is tops.MULACC:
            srcs, dt = _unify([_value(self.done[s]) for s in u.src], u)
            return UOp(Ops.MULACC, dt, tuple(srcs))
        if op in t.unary:
            (x,), dt = _unify([_value(self.src(u, 0))], u)
            return UOp(t.unary[op], dt, (x,))
        if op in t.binary:
            (a, b), dt = _unify([_value(self.src(u, 0)), _value(self.src(u, 1))], u)
            ours = t.binary[op]
            if ours in GroupOp.IntDiv and not dt.is_int:
                raise TinygradError(f"{_name(u)}: expected integers, got dtype {dt}")
            if ours is Ops.NE and dt.is_bool and b.op is Ops.CONST and b.arg is True:
                return UOp(Ops.NOT, dtypes.bool, (a,))  # tinygrad's logical_not
            if ours in GroupOp.Comparison:
                return UOp(ours, dtypes.bool.vec(dt.count), (a, b))
            return UOp(ours, dt, (a, b))
        raise TinygradError(f"{_name(u)} has no counterpart in the IR")

    def memory(self, u: Any) -> UOp:
        t = self.t
        addr = self.src(u, 0)
        if not (isinstance(addr, UOp) and addr.op is Ops.INDEX):
            raise TinygradError(f"{_name(u)}: expected an INDEX as the address, got "
                                f"{_name(u.src[0])}")
        elem = addr.dtype.base()
        if u.op is t.Ops.LOAD:
            if len(u.src) == 1:
                return UOp(Ops.LOAD, elem, (addr,))
            if len(u.src) == 3:
                addr = self.gated(addr, self.src(u, 2), u)
            alt = self.src(u, 1)
            alt = alt.as_dtype(elem) if isinstance(alt, _Weak) else _value(alt)
            return UOp(Ops.LOAD, elem, (addr, alt))
        if len(u.src) == 3:
            addr = self.gated(addr, self.src(u, 2), u)
        v = self.src(u, 1)
        v = v.as_dtype(elem) if isinstance(v, _Weak) else _value(v)
        return UOp(Ops.STORE, dtypes.void, (addr, v))

    def gated(self, addr: UOp, gate: UOp | _Weak, u: Any) -> UOp:
        g = _strong(_value(gate))
        if not g.dtype.is_bool:
            raise TinygradError(f"{_name(u)}: the gate must be bool, got {g.dtype}")
        if len(addr.src) == 3:
            g = UOp(Ops.AND, dtypes.bool, (addr.src[2], g))
        return UOp(Ops.INDEX, addr.dtype, (addr.src[0], addr.src[1], g))


def from_tinygrad(uop: Any) -> UOp:
    """The IR graph of a tinygrad 0.14 ``UOp`` (see the module docstring for the mapping).

    Raises :class:`TinygradError` naming the first op without a counterpart, and
    ``ImportError`` when tinygrad 0.14 is not installed.
    """
    return _convert(uop)[0]


def optimized_ast(ast: Any, renderer: Any = None) -> Any:
    """tinygrad's kernel ``ast`` (a ``SINK`` with its ``KernelInfo``, as its scheduler
    makes it) after tinygrad's own optimizations, before its expander: the ranges
    carry the schedule tinygrad compiles (``UPCAST``/``UNROLL`` register tiles,
    ``REDUCE`` loops, ``THREAD`` chunks), so ``from_tinygrad(optimized_ast(ast))``
    lowers to the same loops as tinygrad's program. These are the first steps of
    tinygrad 0.14's ``full_rewrite_to_sink`` (the heuristic ``apply_opts``, BEAM as
    the AST asks). ``renderer``: tinygrad's renderer (default: the CPU device's)."""
    _tg()
    import tinygrad.codegen as cg
    from tinygrad import Device
    from tinygrad.codegen.opt.postrange import apply_opts
    from tinygrad.uop.ops import graph_rewrite

    ren = renderer if renderer is not None else Device["CPU"].renderer
    sink = graph_rewrite(ast, cg.multi_pm, name="multi_pm")
    sink = graph_rewrite(sink, cg.pm_mops, bottom_up=True)
    if ast.tag is None:  # what tinygrad optimizes (a tagged AST is compiled as is)
        sink = graph_rewrite(sink, cg.pm_load_collapse)
        sink = graph_rewrite(sink, cg.pm_split_ranges + cg.pm_flatten_range, ctx={})
        sink = graph_rewrite(sink, cg.sym + cg.pm_flatten_range)
        sink = graph_rewrite(sink, cg.pm_flatten_range + cg.pm_simplify_ranges, ctx={})
        sink = apply_opts(sink, ren, beam=ast.arg.beam)
    return graph_rewrite(sink, cg.sym + cg.pm_move_where_on_load + cg.pm_flatten_range +
                         cg.pm_reduce_unparented)


def _convert(uop: Any) -> tuple[UOp, dict[Any, UOp]]:
    """:func:`from_tinygrad` and what each tinygrad node of the graph became."""
    t = _tg()
    if not isinstance(uop, t.UOp):
        raise TypeError(f"from_tinygrad: expected a tinygrad UOp, got {type(uop).__name__}")
    conv = _FromTinygrad()
    out = conv.run(uop)
    return out, {k: _strong(v) for k, v in conv.done.items()}


# ---------------------------------------------------------------------------
# IR -> tinygrad
class _ToTinygrad:
    def __init__(self, like: Mapping[UOp, Any]):
        self.t = _tg()
        self.like = like
        self.done: dict[UOp, Any] = {}

    def dt(self, dt: DType, u: UOp) -> Any:
        if dt.count != 1:
            raise TinygradError(f"{u.op.name}: vector dtype {dt} (tinygrad 0.14 has no vector "
                                "dtypes; a STACK of scalars is a VECTORIZE)")
        base = dt.base() if dt.ptr else dt
        if base not in self.t.to_theirs:
            raise TinygradError(f"{u.op.name}: dtype {dt} has no counterpart in tinygrad")
        return self.t.to_theirs[base]

    def const(self, v: Any, dt: DType, u: UOp) -> Any:
        return self.t.UOp.const(v, self.dt(dt, u))

    def run(self, root: UOp) -> Any:
        for u in root.toposort():
            self.done[u] = self.like[u] if u in self.like else self.node(u)
        return self.done[root]

    def neg(self, x: Any, dt: DType, u: UOp) -> Any:
        return self.t.UOp(self.t.Ops.MUL, x.dtype, (x, self.const(-1, dt, u)))

    def node(self, u: UOp) -> Any:  # noqa: C901 - one case per op
        t, tops, tuop = self.t, self.t.Ops, self.t.UOp
        op, s = u.op, [self.done[x] for x in u.src]
        if op is Ops.CONST:
            return self.const(u.arg, u.dtype, u)
        if op is Ops.VCONST:
            return tuop(tops.STACK, self.dt(u.dtype.scalar(), u),
                      tuple(self.const(v, u.dtype.scalar(), u) for v in u.arg))
        if op is Ops.INVALID:
            return tuop.invalid()
        if op is Ops.DEFINE_VAR:
            name, lo, hi = u.arg
            return tuop.variable(name, lo, hi)
        if op is Ops.RANGE:
            return tuop(tops.RANGE, s[0].dtype, (s[0],),
                        (range_id(u), t.AxisType[range_kind(u).upper()]))
        if op is Ops.SPECIAL:
            return tuop(tops.SPECIAL, s[0].dtype, (s[0],), u.arg)
        if op is Ops.DEFINE_GLOBAL:
            slot, size = u.arg
            return tuop.param(slot, self.dt(u.dtype, u), shape=(size,))
        if op in GroupOp.ALU:
            return self.alu(u, s)
        if op in (Ops.CAST, Ops.BITCAST):
            dt = self.dt(u.dtype, u)
            if op is Ops.CAST and u.src[0].op is Ops.INVALID:  # an Invalid of dtype T
                return tuop(tops.CONST, dt, (), t.Invalid)
            return tuop(tops.CAST if op is Ops.CAST else tops.BITCAST, dt, (s[0],), dt)
        if op is Ops.VECTORIZE:
            return tuop(tops.STACK, s[0].dtype, tuple(s))
        if op is Ops.INDEX:
            idx = s[1] if len(s) == 2 else tuop(tops.WHERE, s[1].dtype,
                                                (s[2], s[1], tuop.invalid()))
            return tuop(tops.INDEX, self.dt(u.dtype, u), (s[0], idx))
        if op is Ops.LOAD:
            if len(s) == 1:
                return tuop(tops.LOAD, s[0].dtype, (s[0],))
            valid = s[0].src[1].get_valid()
            if valid.op is tops.CONST and valid.arg is True:
                return tuop(tops.LOAD, s[0].dtype, (s[0],))
            return tuop(tops.LOAD, s[0].dtype, (s[0], s[1], valid))
        if op is Ops.STORE:
            return tuop(tops.STORE, t.dtypes.void, (s[0], s[1]))
        if op is Ops.END:
            return tuop(tops.END, t.dtypes.void, tuple(s))
        if op is Ops.REDUCE:
            if u.arg not in (Ops.ADD, Ops.MUL, Ops.MAX):
                raise TinygradError(f"REDUCE {u.arg.name}: tinygrad reduces with ADD, MUL or "
                                    "MAX only")
            rop = {Ops.ADD: tops.ADD, Ops.MUL: tops.MUL, Ops.MAX: tops.MAX}[u.arg]
            return tuop(tops.REDUCE, s[0].dtype, tuple(s), (rop, 0))
        if op is Ops.AFTER:
            return tuop(tops.AFTER, s[0].dtype, tuple(s))
        if op is Ops.SINK:
            return tuop(tops.SINK, t.dtypes.void, tuple(s))
        raise TinygradError(f"{op.name} has no counterpart in tinygrad 0.14")

    def alu(self, u: UOp, s: list[Any]) -> Any:  # noqa: C901 - one case per op
        t, tops, tuop = self.t, self.t.Ops, self.t.UOp
        op, dt = u.op, u.dtype
        tdt = self.dt(dt, u)
        if op in t.from_unary:
            return tuop(t.from_unary[op], tdt, (s[0],))
        if op is Ops.NEG:
            return self.neg(s[0], dt, u)
        if op in (Ops.LT, Ops.NE):
            return tuop(t.from_binary[op], tdt, tuple(s))
        if op is Ops.GT:
            return tuop(tops.CMPLT, tdt, (s[1], s[0]))
        if op in (Ops.LE, Ops.GE, Ops.EQ):
            inner = (tuop(tops.CMPLT, tdt, (s[1], s[0])) if op is Ops.LE else
                     tuop(tops.CMPLT, tdt, (s[0], s[1])) if op is Ops.GE else
                     tuop(tops.CMPNE, tdt, (s[0], s[1])))
            return tuop(tops.CMPNE, tdt, (inner, tuop.const(True)))
        if op is Ops.NOT:
            if dt.is_bool:
                return tuop(tops.CMPNE, tdt, (s[0], tuop.const(True)))
            k = dt.max if dt.is_unsigned else -1
            return tuop(tops.XOR, tdt, (s[0], self.const(k, dt, u)))
        if op is Ops.SUB:
            return tuop(tops.ADD, tdt, (s[0], self.neg(s[1], dt, u)))
        if op is Ops.MIN:
            if dt.is_float:
                return self.neg(tuop(tops.MAX, tdt, (self.neg(s[0], dt, u), self.neg(s[1], dt, u))),
                                dt, u)
            k = self.const(dt.max if dt.is_unsigned else -1, dt, u)
            m = tuop(tops.MAX, tdt, (tuop(tops.XOR, tdt, (s[0], k)),
                                     tuop(tops.XOR, tdt, (s[1], k))))
            return tuop(tops.XOR, tdt, (m, k))
        if op in t.from_binary:
            return tuop(t.from_binary[op], tdt, tuple(s))
        if op is Ops.WHERE:
            return tuop(tops.WHERE, tdt, tuple(s))
        if op is Ops.MULACC:
            return tuop(tops.MULACC, tdt, tuple(s))
        raise TinygradError(f"{op.name} has no counterpart in tinygrad 0.14")


def _leaves(like: Any) -> dict[UOp, Any]:
    """Our leaf -> tinygrad leaf for every range, special, variable and buffer of ``like``."""
    t = _tg()
    roots = [like] if isinstance(like, t.UOp) else list(like)
    out: dict[UOp, Any] = {}
    for root in roots:
        _, mapping = _convert(root)
        for theirs, ours in mapping.items():
            if ours.op in (Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR, Ops.DEFINE_GLOBAL):
                out.setdefault(ours, theirs.src[0] if theirs.is_bound_var else theirs)
    return out


def to_tinygrad(uop: UOp, like: Any = None) -> Any:
    """The tinygrad 0.14 ``UOp`` of an IR graph (see the module docstring for the mapping).

    ``like``: a tinygrad ``UOp`` (or several) whose ranges, specials, variables and
    buffers are reused for the leaves of ``uop`` they convert to (new leaves are built
    otherwise: ranges of their kind's ``AxisType``, variables as ``UOp.variable``, buffers as
    ``UOp.param``). Raises :class:`TinygradError` naming the first op without a
    counterpart (vector lanes, ``floor``/``ceil``/``round``, local buffers, ...).
    """
    if not isinstance(uop, UOp):
        raise TypeError(f"to_tinygrad: expected an eqsat UOp, got {type(uop).__name__}")
    return _ToTinygrad(_leaves(like) if like is not None else {}).run(uop)


# ---------------------------------------------------------------------------
# tinygrad's own evaluation
def evaluate_tinygrad(uop: Any, env: Mapping[str, int] | Sequence[Mapping[str, int]],
                      method: str = "alu") -> Any:
    """The value tinygrad gives the index expression ``uop`` under ``env``.

    ``env`` is keyed as :func:`eqsat.evaluate`'s: a range by ``R<id>`` (its id in
    :func:`from_tinygrad`'s graph), a special or a variable by its name; a list of
    assignments gives the list of values. ``method="alu"`` folds the graph bottom-up
    with tinygrad's ``exec_alu`` (its Python semantics of every op, nothing
    rewritten); ``method="simplify"`` substitutes the leaves by constants and lets
    tinygrad's simplifier fold the graph to a constant. A value is an int, a bool or
    ``eqsat.ir.interp.INVALID``.
    """
    t = _tg()
    tops = t.Ops
    if method not in ("alu", "simplify"):
        raise ValueError(f"unknown method {method!r}: 'alu' or 'simplify'")

    def is_leaf(n: Any) -> bool:
        return n.op in (tops.RANGE, tops.SPECIAL) or (n.op in (tops.PARAM, tops.BUFFER)
                                                    and n.arg.addrspace is t.AddrSpace.ALU)

    order = _toposort(uop, lambda n: not is_leaf(n) and not n.is_bound_var)
    _, mapping = _convert(uop)
    keys: dict[Any, str] = {}
    for n in order:
        n = n.src[0] if n.is_bound_var else n
        if is_leaf(n) and n not in keys:
            ours = mapping[n] if n in mapping else from_tinygrad(n)
            keys[n] = leaf_key(ours.src[0] if ours.op is Ops.CAST else ours)
    envs = [env] if isinstance(env, Mapping) else list(env)
    out = []
    for e in envs:
        missing = sorted(k for k in keys.values() if k not in e)
        if missing:
            raise KeyError(f"no value for {', '.join(missing)} in the assignment")
        values = {n: e[k] for n, k in keys.items()}
        if method == "alu":
            out.append(_exec(t, order, values))
            continue
        res = uop.substitute({n: t.UOp.const(v, n.dtype) for n, v in values.items()}).simplify()
        if res.op is not tops.CONST:
            raise ValueError(f"tinygrad's simplifier left a non-constant: {res.render()}")
        out.append(INVALID if res.arg is t.Invalid else res.arg)
    return out[0] if isinstance(env, Mapping) else out


def _exec(t: _Tinygrad, order: list[Any], values: dict[Any, Any]) -> Any:
    tops = t.Ops
    from tinygrad.dtype import truncate

    val: dict[Any, Any] = {}
    for n in order:
        if n.is_bound_var:
            val[n] = values[n.src[0]]
        elif n in values:
            val[n] = values[n]
        elif n.op is tops.CONST:
            val[n] = n.arg
        elif n.op is tops.AFTER:
            val[n] = val[n.src[0]]
        elif n.op is tops.CAST:
            x = val[n.src[0]]
            if x is t.Invalid or n.dtype is t.dtypes.weakint:
                val[n] = x
            else:
                fn = truncate.get(n.dtype)
                val[n] = fn(x) if fn is not None else x
        elif n.op in t.ops_mod.python_alu:
            args = [val[s] for s in n.src]
            if n.op is tops.WHERE:
                c = args[0]
                val[n] = c if c is t.Invalid else (args[1] if c else args[2])
            elif any(a is t.Invalid for a in args):
                val[n] = t.Invalid
            else:
                val[n] = t.ops_mod.exec_alu(n.op, n.dtype, args)
        else:
            raise TinygradError(f"{_name(n)}: not an ALU op (only index expressions evaluate)")
    out = val[order[-1]]
    return INVALID if out is t.Invalid else out



# The plug-in (tinygrad's code generation with eqsat inside) lives in its own module.
from eqsat.tinygrad_plugin import install, optimizing, uninstall  # noqa: E402

__all__ += ["install", "uninstall", "optimizing"]
