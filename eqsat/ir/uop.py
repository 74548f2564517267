"""The UOp: an immutable, hash-consed node of a tensor-compiler graph.

Building the same structure twice returns the same object::

    >>> from eqsat import UOp
    >>> UOp.var("x", 0, 9) + 1 is UOp.var("x", 0, 9) + 1
    True

Interning is weak: a graph nobody references any more is freed. Every node
carries ``vmin``/``vmax``, computed eagerly at construction (eqsat.ir.bounds).
"""

from __future__ import annotations

import itertools
import math
import struct
import weakref
from _weakref import _remove_dead_weakref
from collections import deque
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from eqsat.ir.bounds import compute_bounds
from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.semantics import is_symbolic, round_float, wrap

__all__ = ["UOp", "const_value", "IRError", "drop_folded_ranges", "arg_key", "RANGE_KINDS",
           "range_id", "range_kind", "live_ranges", "node_cache", "toposort_all"]


class IRError(ValueError):
    """A node that cannot be built: wrong arity, dtype mismatch, bad argument."""


#: the roles a loop index can play (tinygrad's AxisType, lower-case): ``loop`` is the
#: default, a plain sequential loop; ``reduce`` runs a reduction's axis; ``upcast`` ranges
#: become vector lanes and ``unroll`` ranges are unrolled by the lowering's expander;
#: the others are launch or grouping dimensions a CPU runs as loops.
RANGE_KINDS = ("loop", "reduce", "upcast", "unroll", "global", "local", "thread",
               "group_reduce", "warp", "device", "weak", "placeholder")


def range_id(u: UOp) -> int:
    """The id of a RANGE: its arg, or the arg's first item when the kind is not ``loop``."""
    return u.arg[0] if isinstance(u.arg, tuple) else u.arg


def range_kind(u: UOp) -> str:
    """The kind of a RANGE (one of :data:`RANGE_KINDS`; ``loop`` by default)."""
    return u.arg[1] if isinstance(u.arg, tuple) else "loop"


#: the live nodes by structure (``UOp.__new__``'s key -> a weak reference to the node):
#: a plain dict read and written inline, a node's entry dropped when it dies (the work
#: of a ``WeakValueDictionary``, without its Python-level ``get``, ``__setitem__`` and
#: ``KeyedRef``)
_NODES: dict[tuple, weakref.ref] = {}
_IDS = itertools.count()
#: every cache :func:`node_cache` made
_CACHES: list[dict[int, Any]] = []


def node_cache() -> dict[int, Any]:
    """A new cache of a fact per node: a plain dict keyed by the node's ``uid`` (never
    reused), whose entry goes when the node dies. A ``WeakKeyDictionary``'s lifetime,
    read and written in C (``cache.get(u.uid)``, ``cache[u.uid] = v``): no Python-level
    method and no weak reference per lookup. A value must not hold its own node (it
    would keep the node alive, as in a ``WeakKeyDictionary``)."""
    cache: dict[int, Any] = {}
    _CACHES.append(cache)
    return cache


def _forget(key: tuple, uid: int, ref: weakref.ref, _nodes: dict = _NODES,
            _remove: Any = _remove_dead_weakref, _caches: list = _CACHES,
            _drain: Any = deque(maxlen=0).extend, _pop: Any = dict.pop,
            _repeat: Any = itertools.repeat) -> None:
    """The node of ``key`` died: its entry goes, unless the key names a newer node by
    now, and so do its entries in the node caches (bound as defaults: it may run while
    the interpreter tears the module down; the caches emptied in C, no loop of Python
    steps per cache)."""
    _remove(_nodes, key)
    _drain(map(_pop, _caches, _repeat(uid), _repeat(None)))


_set = object.__setattr__
_INDEX = dtypes.index
#: the comparison ops by value (:meth:`UOp.alu`: no Python-level ``Enum.__hash__``)
_COMPARISONS = frozenset(o._value_ for o in GroupOp.Comparison)


def const_value(dtype: DType, v: Any) -> int | float | bool:
    """Normalize ``v`` to a constant of the scalar of ``dtype``.

    Fixed-width integers wrap two's-complement; floats round to the dtype's
    precision, and every NaN is the one NaN ``math.nan`` (its sign and payload are
    unspecified, docs/format.md "Floats", and the text format prints every NaN as
    ``nan``: a graph reads back as the same nodes); bools become ``bool``; index stays
    an exact ``int``.
    """
    if type(v) is int and dtype is _INDEX:
        return v  # (an index constant is the exact int: the usual case, no tests)
    s = dtype.scalar()
    if s.is_bool:
        return bool(v)
    if s.is_float:
        f = round_float(s, v)
        return math.nan if f != f else f
    if is_symbolic(v):  # (the proofs' symbolic integers: index keeps it, bools decide it)
        if s.is_index:
            return v
        if s.is_int and s.min <= v <= s.max:
            return v
        raise IRError(f"no {dtype} constant of the symbolic {v!r} (outside the dtype)")
    if isinstance(v, float):
        if not math.isfinite(v):
            raise IRError(f"cannot make an integer constant of {v}")
        v = math.trunc(v)
    if s.is_int:
        return wrap(s, int(v))
    raise IRError(f"no constants of dtype {dtype}")


def arg_key(arg: Any) -> Any:
    """The hash key of a node's arg (the one definition: hash-consing here, the e-graph's
    arg table in ``eqsat.engines.egraph.encoding.schema``): it tells floats apart by
    their bits (-0.0 from 0.0; a constant's NaN is always ``math.nan``,
    :func:`const_value`, so a NaN's key does not depend on how it was made), bools
    from ints, tags tuples (a tuple arg never meets the key of a float), and keys a
    symbolic arg by identity (it has no hash; the holder keeps it alive)."""
    if isinstance(arg, float):
        return ("f", struct.pack("<d", arg))
    if isinstance(arg, bool):
        return ("b", arg)
    if isinstance(arg, tuple):
        for a in arg:  # (the usual tuple, a variable's or a range's, holds ints and names:
            if type(a) is not int and type(a) is not str:  # each its own key)
                return ("t",) + tuple(arg_key(a) for a in arg)
        return ("t",) + arg
    if is_symbolic(arg):
        return ("sym", id(arg))
    return arg


class UOp:
    """One node: ``op``, ``dtype``, ``src`` (children) and ``arg``.

    Do not call the class directly with keyword-less positional arguments in
    hot loops; it interns, so ``UOp(op, dtype, src, arg)`` returns an existing
    node when one of the same structure is alive.
    """

    __slots__ = ("op", "dtype", "src", "arg", "vmin", "vmax", "uid", "__weakref__")

    op: Ops
    dtype: DType
    src: tuple[UOp, ...]
    arg: Any
    vmin: int | float | bool
    vmax: int | float | bool
    uid: int

    def __new__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (),
                arg: Any = None) -> UOp:
        if type(src) is not tuple:
            src = tuple(src)
        # (the op by value and the dtype by its fields, which are what its equality
        # compares: no Python-level Enum.__hash__ or dataclass __hash__ at each lookup,
        # store and removal; an arg that is None or an int is its own key: arg_key's
        # common cases inline)
        key = (op._value_ if type(op) is Ops else ("op", op), dtype.kind, dtype.bits,
               dtype.name, dtype.count, dtype.ptr, src,
               arg if arg is None or type(arg) is int else arg_key(arg))
        ref = _NODES.get(key)
        if ref is not None:
            hit = ref()
            if hit is not None:
                return hit
        self = object.__new__(cls)
        _set(self, "op", op)
        _set(self, "dtype", dtype)
        _set(self, "src", src)
        _set(self, "arg", arg)
        lo, hi = compute_bounds(op, dtype, src, arg)
        _set(self, "vmin", lo)
        _set(self, "vmax", hi)
        _set(self, "uid", uid := next(_IDS))
        _NODES[key] = weakref.ref(self, partial(_forget, key, uid))
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("UOp is immutable")

    def __reduce__(self):
        return (UOp, (self.op, self.dtype, self.src, self.arg))

    def __repr__(self) -> str:
        from eqsat.ir.sexpr import to_sexpr

        try:
            return f"eqsat.parse({to_sexpr(self, compact=True)!r})"
        except Exception:  # a node the text format cannot hold (lowering ops)
            return f"UOp({self.op!r}, {self.dtype!r}, <{len(self.src)} src>, {self.arg!r})"

    def to_dot(self, name: str = "uop") -> Any:
        """This graph as Graphviz DOT text (:func:`eqsat.ir.viz.uop_dot`): a ``str``
        that a notebook shows as a picture."""
        from eqsat.ir.viz import uop_dot

        return uop_dot(self, name)

    def _repr_svg_(self) -> str | None:
        """A notebook's picture of the graph (None, so the notebook shows the text,
        when graphviz cannot draw it here or the graph is too big to read)."""
        from eqsat.ir.viz import MAX_PICTURE_NODES, uop_dot

        if len(self.toposort()) > MAX_PICTURE_NODES:
            return None
        return uop_dot(self)._repr_svg_()

    # ---- constructors ---------------------------------------------------
    @staticmethod
    def const(dtype: DType, value: Any) -> UOp:
        """A constant (wrapped/rounded to ``dtype``); vector dtypes broadcast."""
        return UOp(Ops.CONST, dtype, (), const_value(dtype, value))

    @staticmethod
    def vconst(dtype: DType, values: tuple | list) -> UOp:
        """A vector constant; ``dtype`` is the scalar dtype."""
        vals = tuple(const_value(dtype, v) for v in values)
        if len(vals) < 1:
            raise IRError("vconst needs at least one element")
        return UOp(Ops.VCONST, dtype.scalar().vec(len(vals)), (), vals)

    @staticmethod
    def var(name: str, lo: int, hi: int) -> UOp:
        """A symbolic index variable (DEFINE_VAR) over ``[lo, hi]``."""
        if lo > hi:
            raise IRError(f"var {name}: lower bound {lo} > upper bound {hi}")
        return UOp(Ops.DEFINE_VAR, dtypes.index, (), (name, int(lo), int(hi)))

    @staticmethod
    def range(end: UOp | int, rid: int, kind: str = "loop") -> UOp:
        """Loop index number ``rid`` over ``0 .. end-1``, of role ``kind`` (one of
        :data:`RANGE_KINDS`). The arg is ``rid`` for a ``loop``, else ``(rid, kind)``."""
        if kind not in RANGE_KINDS:
            raise IRError(f"range {rid}: unknown kind {kind!r} (one of {', '.join(RANGE_KINDS)})")
        end = UOp._lift(end, dtypes.index)
        return UOp(Ops.RANGE, end.dtype, (end,), int(rid) if kind == "loop" else (int(rid), kind))

    @staticmethod
    def special(name: str, end: UOp | int) -> UOp:
        """A launch index (SPECIAL) over ``0 .. end-1``."""
        end = UOp._lift(end, dtypes.index)
        return UOp(Ops.SPECIAL, end.dtype, (end,), name)

    @staticmethod
    def buffer(slot: int, dtype: DType, size: int) -> UOp:
        """DEFINE_GLOBAL: a pointer to ``size`` elements of ``dtype``, argument ``slot``."""
        return UOp(Ops.DEFINE_GLOBAL, dtype.ptr_to(), (), (int(slot), int(size)))

    @staticmethod
    def invalid() -> UOp:
        """The Invalid sentinel of padded index regions."""
        return UOp(Ops.INVALID, dtypes.index)

    @staticmethod
    def _lift(x: UOp | int | float | bool, dtype: DType) -> UOp:
        if isinstance(x, UOp):
            return x
        if isinstance(x, bool):
            return UOp.const(dtypes.bool, x)
        return UOp.const(dtype, x)

    def alu(self, op: Ops, *others: UOp | int | float | bool) -> UOp:
        """Apply an ALU op; Python numbers take this node's dtype."""
        if all(type(o) is UOp for o in others):
            srcs = (self, *others)
        else:
            dt = self.dtype.scalar().vec(self.dtype.count) if not self.dtype.ptr else \
                dtypes.index
            srcs = (self,) + tuple(UOp._lift(o, dt) for o in others)
        if op._value_ in _COMPARISONS:
            dt = dtypes.bool.vec(self.dtype.count)
        elif op is Ops.WHERE:
            dt = srcs[1].dtype
        else:
            dt = self.dtype
        return UOp(op, dt, srcs)

    def where(self, t: UOp | int | float, f: UOp | int | float) -> UOp:
        """``WHERE(self, t, f)``; numbers take the other branch's dtype."""
        ref = t if isinstance(t, UOp) else f if isinstance(f, UOp) else None
        dt = ref.dtype if ref is not None else dtypes.index
        return UOp(Ops.WHERE, dt, (self, UOp._lift(t, dt), UOp._lift(f, dt)))

    def cast(self, dtype: DType) -> UOp:
        return UOp(Ops.CAST, dtype, (self,))

    def bitcast(self, dtype: DType) -> UOp:
        return UOp(Ops.BITCAST, dtype, (self,))

    def gep(self, *idx: int) -> UOp:
        sdt = self.dtype.scalar() if not self.dtype.ptr else self.dtype
        return UOp(Ops.GEP, sdt.vec(len(idx)) if not sdt.ptr else sdt, (self,), tuple(idx))

    # ---- operators (tinygrad-style sugar) ----------------------------------
    def __add__(self, o): return self.alu(Ops.ADD, o)
    def __radd__(self, o): return UOp._lift(o, self.dtype).alu(Ops.ADD, self)
    def __sub__(self, o): return self.alu(Ops.SUB, o)
    def __rsub__(self, o): return UOp._lift(o, self.dtype).alu(Ops.SUB, self)
    def __mul__(self, o): return self.alu(Ops.MUL, o)
    def __rmul__(self, o): return UOp._lift(o, self.dtype).alu(Ops.MUL, self)
    def __floordiv__(self, o): return self.alu(Ops.IDIV, o)  # C truncation, not floor
    def __rfloordiv__(self, o): return UOp._lift(o, self.dtype).alu(Ops.IDIV, self)
    def __mod__(self, o): return self.alu(Ops.MOD, o)  # C remainder
    def __rmod__(self, o): return UOp._lift(o, self.dtype).alu(Ops.MOD, self)
    def __truediv__(self, o): return self.alu(Ops.FDIV, o)
    def __neg__(self): return self.alu(Ops.NEG)
    def __and__(self, o): return self.alu(Ops.AND, o)
    def __or__(self, o): return self.alu(Ops.OR, o)
    def __xor__(self, o): return self.alu(Ops.XOR, o)
    def __lshift__(self, o): return self.alu(Ops.SHL, o)
    def __rshift__(self, o): return self.alu(Ops.SHR, o)
    def __invert__(self): return self.alu(Ops.NOT)
    # comparisons are methods, not dunders: `a < b` on UOps would be truthy
    def lt(self, o): return self.alu(Ops.LT, o)
    def le(self, o): return self.alu(Ops.LE, o)
    def gt(self, o): return self.alu(Ops.GT, o)
    def ge(self, o): return self.alu(Ops.GE, o)
    def eq(self, o): return self.alu(Ops.EQ, o)
    def ne(self, o): return self.alu(Ops.NE, o)
    def maximum(self, o): return self.alu(Ops.MAX, o)
    __hash__ = object.__hash__

    # ---- queries --------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return self.op is Ops.CONST

    def const_like(self, value: Any) -> UOp:
        """A constant of this node's dtype."""
        return UOp.const(self.dtype, value)

    def toposort(self, extra: dict[UOp, tuple[UOp, ...]] | None = None) -> list[UOp]:
        """Every node of the graph, children before parents (iterative: no recursion limit).

        ``extra`` adds ordering edges: ``extra[u]`` are visited before ``u`` as if they were
        more sources of ``u`` (the linearizer's range dependencies).
        """
        return _toposort(self, self.src + extra.get(self, ()) if extra else self.src, {self},
                         extra)

    def walk(self) -> Iterator[UOp]:
        yield from self.toposort()

    def leaves(self) -> list[UOp]:
        """The variables of the graph: DEFINE_VAR, RANGE and SPECIAL nodes, in toposort order."""
        return [u for u in self.toposort() if u.op in (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL)]

    def replace(self, **kw: Any) -> UOp:
        """A node like this one with some of op/dtype/src/arg changed."""
        return UOp(kw.get("op", self.op), kw.get("dtype", self.dtype),
                   tuple(kw.get("src", self.src)), kw.get("arg", self.arg))

    def substitute(self, mapping: dict[UOp, UOp]) -> UOp:
        """Replace nodes bottom-up by ``mapping`` (identity keys)."""
        new: dict[UOp, UOp] = {}
        for u in self.toposort():
            if u in mapping:
                new[u] = mapping[u]
                continue
            src = tuple(new[s] for s in u.src)
            new[u] = u if src == u.src else u.replace(src=src)
        return new[self]

    def divides(self, v: int) -> UOp | None:
        """``self // v`` when every term of the sum is exactly divisible by ``v``, else None."""
        if v == 1:
            return self
        if self.op is Ops.CONST and self.dtype.is_int:
            return self.const_like(self.arg // v) if self.arg % v == 0 else None
        if self.op is Ops.VCONST and self.dtype.is_int:
            if all(x % v == 0 for x in self.arg):
                return UOp.vconst(self.dtype.scalar(), [x // v for x in self.arg])
            return None
        if self.op is Ops.ADD:
            a, b = self.src[0].divides(v), self.src[1].divides(v)
            return a + b if a is not None and b is not None else None
        if self.op is Ops.MUL:
            a = self.src[0].divides(v)
            if a is not None:
                return a * self.src[1]
            b = self.src[1].divides(v)
            return self.src[0] * b if b is not None else None
        return None

    def const_factor(self) -> int:
        """The largest known integer factor of this expression (tinygrad's const_factor)."""
        if self.op is Ops.CONST and self.dtype.is_int:
            return self.arg
        if self.op is Ops.VCONST and self.dtype.is_int:
            return math.gcd(*self.arg)
        if self.op is Ops.ADD:
            return math.gcd(self.src[0].const_factor(), self.src[1].const_factor())
        if self.op is Ops.MUL:
            for s in self.src:
                if s.op is Ops.CONST and s.dtype.is_int:
                    return s.arg
        return 1

    @property
    def ranges(self) -> tuple[UOp, ...]:
        """The RANGE nodes this node depends on (for run counts), in toposort order."""
        return tuple(u for u in self.toposort() if u.op is Ops.RANGE)


def _toposort(top: UOp | None, srcs: Iterable[UOp], seen: set[UOp],
              extra: dict[UOp, tuple[UOp, ...]] | None) -> list[UOp]:
    """The nodes below ``top`` (whose sources are ``srcs``) that ``seen`` lacks, then
    ``top``: depth first, each node's sources in order, a node entered once (when first
    met) and listed when its sources are done: one stack entry per node entered (nodes
    hash by identity, in C: the set holds them, no id() call per visit)."""
    out: list[Any] = []
    stack: list[tuple[Any, Iterator[UOp]]] = [(top, iter(srcs))]
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                src = s.src + extra.get(s, ()) if extra else s.src
                if not src:  # (a leaf is listed at once: no entry of its own)
                    out.append(s)
                    continue
                stack.append((s, iter(src)))
                break
        else:
            stack.pop()
            out.append(node)
    return out


def toposort_all(roots: Iterable[UOp]) -> list[UOp]:
    """Every node of the graphs of ``roots``, children first: the toposort of a SINK of
    ``roots`` without the SINK, and without making one."""
    out = _toposort(None, roots, set(), None)
    out.pop()  # (the place the SINK would take)
    return out


def live_ranges(root: UOp, extra: dict[UOp, tuple[UOp, ...]] | None = None
                ) -> dict[UOp, frozenset[UOp]]:
    """For every node, the RANGEs it runs inside (used and not yet closed).

    A RANGE is live in itself and in everything that uses it, until an END or
    REDUCE listing it closes it. ``extra`` adds dependencies (control-flow
    edges) that count like sources. A kernel's root has none live; a rewrite
    that leaves one live at the root uses a loop index outside its loop.
    """
    live: dict[UOp, frozenset[UOp]] = {}
    for u in root.toposort(extra):
        srcs = u.src + (extra.get(u, ()) if extra else ())
        rs = _NO_RANGES.union(*[live[s] for s in srcs]) if srcs else _NO_RANGES
        op = u.op
        if op is _RANGE_OP:
            rs = rs | {u}
        elif op is _END_OP or op is _REDUCE_OP:
            rs = rs - set(u.src[1:])
        live[u] = rs
    return live


_NO_RANGES: frozenset[UOp] = frozenset()
#: (module globals: a member read from ``Ops`` goes through EnumType's ``__getattr__``)
_RANGE_OP, _END_OP, _REDUCE_OP = Ops.RANGE, Ops.END, Ops.REDUCE


def drop_folded_ranges(u: UOp) -> UOp:
    """An END or REDUCE without the ranges that were folded to constants, or its first
    operand when none is left (``END(x, r1, 0) -> END(x, r1)``, ``END(x) -> x``).

    A range becomes a constant only when it runs once (its index is 0 wherever it is
    used): that loop is gone, and END and REDUCE take loops only. A float sum left with
    no loop is ``x + 0.0``: it folds from +0.0, so a -0.0 term comes out +0.0."""
    live = tuple(r for r in u.src[1:] if r.op is not Ops.CONST)
    if len(live) == len(u.src) - 1:
        return u
    if live:
        return u.replace(src=(u.src[0], *live))
    if u.op is Ops.REDUCE and u.arg is Ops.ADD and u.dtype.is_float:
        return u.src[0] + UOp.const(u.dtype, 0.0)
    return u.src[0]
