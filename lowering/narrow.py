"""Index dtype narrowing (docs/rules.md, seed 003 §5): ``index`` becomes ``i32`` or ``i64``.

The abstract ``index`` dtype is an unbounded integer. Before C can be emitted
every index value must get a concrete width, chosen from its value bounds by
:func:`select_dtype`. The pass runs in three phases, all in one bottom-up
rewrite (:data:`pm_lower_index_dtype`):

1. **leaf wrappers** -- ``CONST``/``VCONST``/``DEFINE_VAR`` of dtype index (and
   casts *to* index from other dtypes) become the concrete node wrapped in a
   ``.cast(index)``: ``CONST(index) -> CONST(i32).cast(index)``;
2. **upward propagation** -- an op whose sources are all wrapped is rebuilt on
   the concrete values, in ``dt = least_upper_dtype(select_dtype(result),
   *operand dtypes)``, and wrapped again: ``ADD(x.cast(index), y.cast(index))
   -> ADD(x.cast(dt), y.cast(dt)).cast(index)``;
3. **stripping at terminals** -- consumers of an index drop the wrapper:
   ``INDEX(buf, idx.cast(index)) -> INDEX(buf, idx)``, ``INDEX(buf, WHERE(c,
   idx, Invalid)) -> INDEX(buf, idx, gate=c)``, ``END``/``SINK``/``REDUCE`` ranges,
   casts to other dtypes, stored values.

Every op then computes in a dtype that holds its operands and its exact
result, so C arithmetic on the narrowed values never overflows.

Before narrowing, :data:`pm_hoist_invalid` moves every ``Invalid`` up to the
top of its index expression (``ADD(WHERE(c, x, Invalid), y) -> WHERE(c, x+y,
Invalid)``) so that only INDEX consumes it.
"""

from __future__ import annotations

import math

from eqsat.ir.dtype import DType, dtypes, least_upper_dtype
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import PatternMatcher, Rule, UPat, graph_rewrite
from eqsat.ir.uop import UOp
from lowering.gated import gated_bounds

__all__ = [
    "LoweringError", "select_dtype", "is_invalid", "narrow_index", "hoist_invalid", "check_bounds",
    "gated_bounds",
    "pm_hoist_invalid", "leaf_rules", "upward_rules", "terminal_rules", "pm_lower_index_dtype",
    "I32_MIN", "I32_MAX",
]

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class LoweringError(ValueError):
    """A graph the lowering cannot turn into C (names the op and the reason)."""


def _op_name(u: UOp) -> str:
    return f"{u.op.name.lower()} ({u.dtype})"


def select_dtype(u: UOp) -> DType:
    """``i32`` when ``u``'s value bounds fit ``[-2**31, 2**31-1]``, else ``i64``.

    Vector nodes get the vector of the chosen scalar. Unknown (infinite)
    bounds pick i64; finite bounds outside the i64 range are an error: no
    C integer type holds them.
    """
    lo, hi = u.vmin, u.vmax
    if isinstance(lo, bool) or isinstance(hi, bool):
        lo, hi = int(lo), int(hi)
    if I32_MIN <= lo and hi <= I32_MAX:
        dt = dtypes.i32
    elif math.isinf(lo) or math.isinf(hi) or (I64_MIN <= lo and hi <= I64_MAX):
        dt = dtypes.i64
    else:
        raise LoweringError(f"index value of {_op_name(u)} has bounds [{lo}, {hi}] beyond "
                            "the i64 range; no C integer type holds it")
    return dt.vec(u.dtype.count) if u.dtype.count > 1 else dt


def _buffer_of(u: UOp) -> UOp:
    """The DEFINE_GLOBAL behind ``u`` (through AFTER), or ``u`` itself."""
    while u.op is Ops.AFTER and u.src:
        u = u.src[0]
    return u


def check_bounds(graph: UOp) -> frozenset[int]:
    """Refuse an access that provably leaves its buffer; return the slots of the buffers
    with an access that must be checked where it runs.

    An INDEX into a ``(buffer slot dt size)`` has the bounds ``[vmin, vmax]`` of its
    address (widened by the lanes of a vector pointer cast of it); a gated one (a gate
    operand, or an ``Invalid`` in its address: ``where(valid, idx, Invalid)``) the bounds
    of its address where the gate holds (:func:`gated_bounds`). Bounds inside the buffer
    prove the access: it costs nothing. An ungated address of loop indices and variables
    whose bounds leave the buffer reads or writes outside it on some iteration: refused
    (:class:`LoweringError` naming the buffer, its size and the index's range). One
    computed from a loaded value (a gather) is refused only when its whole range lies
    outside the buffer; otherwise the rest of its range is checked where it runs
    (``lowering.cemit.bounds_check``). A gated address not proven inside is never
    refused: its buffer slot is in the returned set, and every access to that buffer
    whose own bounds leave it is checked where it runs, under its gate. (A gate can
    hold nowhere without its clauses showing it, ``2*r == 3``: refusing its access
    would reject a kernel that runs; the check fails exactly where the interpreter does.)
    """
    nodes = graph.toposort()
    users: dict[UOp, list[UOp]] = {}
    for u in nodes:
        for s in u.src:
            users.setdefault(s, []).append(u)
    unproven: set[int] = set()
    for u in nodes:
        if u.op is not Ops.INDEX or len(u.src) < 2:
            continue
        buf = _buffer_of(u.src[0])
        if buf.op is not Ops.DEFINE_GLOBAL or not isinstance(buf.arg, tuple):
            continue
        valid, idx = _valid_and_address(u)
        us = users.get(u, [])
        lanes = max([x.dtype.count for x in us if x.op is Ops.CAST and x.dtype.ptr] + [1])
        slot, size = buf.arg
        span = gated_bounds(valid, idx, (0, size - lanes)) if valid is not None else \
            (idx.vmin, idx.vmax)
        if span is None:
            continue  # the gate never holds: no access
        lo, hi = (int(b) if isinstance(b, bool) else b for b in span)
        if lo >= 0 and hi + lanes - 1 < size:
            continue
        if valid is not None:
            unproven.add(slot)  # checked at run time, under its gate
            continue
        if any(x.op is Ops.LOAD for x in idx.toposort()) and hi + lanes - 1 >= 0 and lo < size:
            continue  # a loaded (data-dependent) index: its bounds only say what it may be
        _refuse(u, us, buf, (lo, hi, lanes))
    return frozenset(unproven)


def _valid_and_address(u: UOp) -> tuple[UOp | None, UOp]:
    """``(gate, address)`` of the INDEX ``u``: its gate operand and the condition of an
    ``Invalid`` in its address (hoisted to the top, :func:`hoist_invalid`) and'ed, None
    when it has neither; the address without its ``Invalid``."""
    idx, valid = u.src[1], (u.src[2] if len(u.src) > 2 else None)
    if any(x.op is Ops.INVALID for x in idx.toposort()):
        cond, idx = _split(hoist_invalid(idx))
        valid = cond if valid is None else _and(valid, cond)
    return valid, idx


def _refuse(u: UOp, us: list[UOp], buf: UOp, span: tuple[int, int, int]) -> None:
    """Raise the :class:`LoweringError` of the INDEX ``u`` (used by ``us``) into ``buf``
    whose address has ``span`` ``(lo, hi, lanes)``, outside the buffer."""
    (slot, size), (lo, hi, lanes) = buf.arg, span
    acts = sorted({"load from" if x.op is Ops.LOAD else "store to" for x in us
                   if x.op in (Ops.LOAD, Ops.STORE)} or {"access of"})
    text = f"[{lo}, {hi}]" + (f" (+{lanes - 1} lanes)" if lanes > 1 else "")
    where = f"outside {f'0..{size - 1}' if size else 'an empty buffer'}"
    raise LoweringError(f"{' and '.join(acts)} buffer {slot} ({buf.dtype.base()}, size {size}) "
                        f"out of bounds: its ungated index has range {text}, {where}; gate "
                        "the index (where(valid, idx, invalid)) or enlarge the buffer")


# ---- helpers ------------------------------------------------------------------
def _is_index(u: UOp) -> bool:
    return u.dtype.is_index


def _is_wrapped(u: UOp) -> bool:
    """``x.cast(index)`` with a concrete integer ``x`` (the narrowing wrapper)."""
    return (u.op is Ops.CAST and u.dtype.is_index and u.src[0].dtype.is_fixed_int
            and u.src[0].dtype.scalar() in (dtypes.i32, dtypes.i64))


def _unwrap(u: UOp) -> UOp:
    return u.src[0] if _is_wrapped(u) else u


def _cast(x: UOp, dt: DType) -> UOp:
    """``x.cast(dt)``: ``x`` itself when it has dtype ``dt``, a new constant for a constant."""
    if x.dtype is dt:
        return x
    if x.op is Ops.CONST and dt.is_fixed_int and not x.dtype.is_float and \
            dt.scalar().min <= x.arg <= dt.scalar().max:
        return UOp.const(dt, x.arg)
    return x.cast(dt)


def _wide(*ds: DType) -> DType:
    """The least upper dtype of concrete integer dtypes, never ``index``."""
    dt = least_upper_dtype(*ds)
    if dt.is_index or not dt.is_fixed_int:
        dt = dtypes.i64.vec(ds[0].count) if ds[0].count > 1 else dtypes.i64
    return dt


def is_invalid(u: UOp) -> bool:
    """``Invalid``: ``(invalid)`` or its cast to another dtype (a typed Invalid)."""
    return u.op is Ops.INVALID or (u.op is Ops.CAST and u.src[0].op is Ops.INVALID)


_is_invalid = is_invalid


def _is_where_invalid(u: UOp) -> bool:
    return u.op is Ops.WHERE and _is_invalid(u.src[2])


def _maybe_invalid(u: UOp) -> bool:
    return _is_invalid(u) or _is_where_invalid(u)


def _invalid_like(u: UOp) -> UOp:
    inv = UOp(Ops.INVALID, dtypes.index.vec(u.dtype.count) if u.dtype.count > 1 else dtypes.index)
    return inv if u.dtype.is_index else inv.cast(u.dtype)


def _is_intlike(u: UOp) -> bool:
    return u.dtype.is_int


def _true_like(u: UOp) -> UOp:
    return UOp.const(dtypes.bool.vec(u.dtype.count) if u.dtype.count > 1 else dtypes.bool, True)


def _split(u: UOp) -> tuple[UOp, UOp]:
    """(valid condition, value) of an index that may be invalid."""
    if _is_invalid(u):
        return UOp.const(dtypes.bool.vec(u.dtype.count) if u.dtype.count > 1 else dtypes.bool,
                         False), UOp.const(u.dtype, 0)
    if _is_where_invalid(u):
        return u.src[0], u.src[1]
    return _true_like(u), u


def _and(a: UOp, b: UOp) -> UOp:
    if a.op is Ops.CONST and a.arg is True:
        return b
    if b.op is Ops.CONST and b.arg is True:
        return a
    return a & b


# ---- Invalid hoisting -------------------------------------------------------------
def _hoist_alu(u: UOp) -> UOp:
    parts = [_split(s) for s in u.src]
    cond = parts[0][0]
    for c, _ in parts[1:]:
        cond = _and(cond, c)
    value = UOp(u.op, u.dtype, tuple(v for _, v in parts), u.arg)
    return UOp(Ops.WHERE, u.dtype, (cond, value, _invalid_like(u)))


def _hoist_where(c: UOp, a: UOp, b: UOp, u: UOp) -> UOp | None:
    if _is_invalid(a) and not _is_invalid(b):
        return UOp(Ops.WHERE, u.dtype, (~c, b, a))  # invalid goes to the false branch
    if _is_invalid(b) and not _maybe_invalid(a):
        return None  # already canonical
    if _is_invalid(a) and _is_invalid(b):
        return a
    va, xa = _split(a)
    vb, xb = _split(b)
    if _is_invalid(b):
        valid, value = _and(c, va), xa
    else:
        valid = c.where(va, vb) if not (va.op is Ops.CONST and vb.op is Ops.CONST
                                         and va.arg is vb.arg) else va
        value = UOp(Ops.WHERE, u.dtype, (c, xa, xb))
    return UOp(Ops.WHERE, u.dtype, (valid, value, _invalid_like(u)))


def _hoist_vectorize(u: UOp) -> UOp | None:
    parts = [_split(s) for s in u.src]
    cond = UOp(Ops.VECTORIZE, dtypes.bool.vec(len(parts)), tuple(c for c, _ in parts))
    value = UOp(Ops.VECTORIZE, u.dtype, tuple(v for _, v in parts))
    return UOp(Ops.WHERE, u.dtype, (cond, value, _invalid_like(u)))


def _hoist_gep(x: UOp, u: UOp) -> UOp:
    c, v = _split(x)
    return UOp(Ops.WHERE, u.dtype, (c.gep(*u.arg), v.gep(*u.arg), _invalid_like(u)))


_INDEX_ALU = (GroupOp.ALU - GroupOp.Comparison - {Ops.WHERE})

pm_hoist_invalid = PatternMatcher([
    Rule("where_invalid_true_branch", "where(c, inv, x) -> where(!c, x, inv)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a"), UPat.var("b")), name="u",
              pred=_is_intlike),
         build=_hoist_where, guard=lambda a, b: _maybe_invalid(a) or _is_invalid(b)),
    Rule("hoist_invalid_alu", "op(where(c, x, inv), y) -> where(c, op(x, y), inv)",
         UPat(_INDEX_ALU, name="u", pred=lambda u: _is_intlike(u)
              and any(_maybe_invalid(s) for s in u.src)),
         build=_hoist_alu),
    Rule("hoist_invalid_vectorize", "vectorize(where(c, x, inv), ..) -> where(vec(c), vec(x), inv)",
         UPat(Ops.VECTORIZE, name="u", pred=lambda u: _is_intlike(u)
              and any(_maybe_invalid(s) for s in u.src)),
         build=_hoist_vectorize),
    Rule("hoist_invalid_gep", "gep(where(c, x, inv), i) -> where(gep(c, i), gep(x, i), inv)",
         UPat(Ops.GEP, src=(UPat.var("x"),), name="u", pred=_is_intlike),
         build=_hoist_gep, guard=lambda x: _maybe_invalid(x)),
], name="hoist_invalid")


def hoist_invalid(graph: UOp) -> UOp:
    """Move every ``Invalid`` to the top of its index expression."""
    return graph_rewrite(graph, pm_hoist_invalid)


# ---- phase 1: leaves ---------------------------------------------------------------
def _leaf_const(u: UOp) -> UOp:
    dt = select_dtype(u)
    return UOp.const(dt, u.arg).cast(u.dtype)


def _leaf_vconst(u: UOp) -> UOp:
    dt = select_dtype(u)
    return UOp.vconst(dt.scalar(), u.arg).cast(u.dtype)


def _leaf_var(u: UOp) -> UOp:
    return UOp(Ops.DEFINE_VAR, select_dtype(u), (), u.arg).cast(u.dtype)


def _leaf_cast(u: UOp, x: UOp) -> UOp:
    return _cast(x, select_dtype(u)).cast(u.dtype)


leaf_rules = [
    Rule("narrow_const", "CONST(index) -> CONST(dt).cast(index)",
         UPat(Ops.CONST, name="u", pred=_is_index), build=_leaf_const),
    Rule("narrow_vconst", "VCONST(index xN) -> VCONST(dt xN).cast(index xN)",
         UPat(Ops.VCONST, name="u", pred=_is_index), build=_leaf_vconst),
    Rule("narrow_define_var", "DEFINE_VAR(index) -> DEFINE_VAR(dt).cast(index)",
         UPat(Ops.DEFINE_VAR, name="u", pred=_is_index), build=_leaf_var),
    Rule("narrow_cast_to_index", "CAST(x, index) -> CAST(x, dt).cast(index)",
         UPat(Ops.CAST, src=(UPat.var("x"),), name="u", pred=_is_index),
         build=_leaf_cast,
         guard=lambda x: x.dtype.scalar() not in (dtypes.i32, dtypes.i64) or x.dtype.is_index),
]


# ---- phase 2: upward ---------------------------------------------------------------
def _all_wrapped(u: UOp) -> bool:
    return bool(u.src) and all(_is_wrapped(s) for s in u.src)


def _up_alu(u: UOp) -> UOp:
    xs = [s.src[0] for s in u.src]
    if u.op in GroupOp.Comparison:
        dt = _wide(*(x.dtype for x in xs))
        return UOp(u.op, u.dtype, tuple(_cast(x, dt) for x in xs), u.arg)
    dt = _wide(select_dtype(u), *(x.dtype for x in xs))
    return UOp(u.op, dt, tuple(_cast(x, dt) for x in xs), u.arg).cast(u.dtype)


def _up_where(u: UOp, c: UOp, a: UOp, b: UOp) -> UOp:
    x, y = a.src[0], b.src[0]
    dt = _wide(select_dtype(u), x.dtype, y.dtype)
    return UOp(Ops.WHERE, dt, (c, _cast(x, dt), _cast(y, dt))).cast(u.dtype)


def _up_range(u: UOp, e: UOp) -> UOp:
    end = e.src[0]
    return UOp(u.op, end.dtype, (end,) + u.src[1:], u.arg).cast(u.dtype)


def _up_vectorize(u: UOp) -> UOp:
    xs = [s.src[0] for s in u.src]  # scalars (VECTORIZE) or vectors (CAT)
    dt = _wide(select_dtype(u).scalar(), *(x.dtype.scalar() for x in xs))
    return UOp(u.op, dt.vec(u.dtype.count), tuple(_cast(x, dt.vec(x.dtype.count)) for x in xs),
               u.arg).cast(u.dtype)


def _up_gep(u: UOp, x: UOp) -> UOp:
    inner = x.src[0]
    return UOp(Ops.GEP, inner.dtype.scalar().vec(u.dtype.count), (inner,), u.arg).cast(u.dtype)


def _up_after(u: UOp, x: UOp) -> UOp:
    inner = x.src[0]
    return UOp(Ops.AFTER, inner.dtype, (inner,) + tuple(_unwrap(s) for s in u.src[1:]),
               u.arg).cast(u.dtype)


def _up_reduce(u: UOp, x: UOp) -> UOp:
    dt = dtypes.i64.vec(u.dtype.count) if u.dtype.count > 1 else dtypes.i64
    return UOp(Ops.REDUCE, dt, (_cast(x.src[0], dt),) + tuple(_unwrap(s) for s in u.src[1:]),
               u.arg).cast(u.dtype)


upward_rules = [
    Rule("narrow_alu", "op(x.cast(index), ..) -> op(x.cast(dt), ..).cast(index)",
         UPat(GroupOp.ALU - {Ops.WHERE}, name="u",
              pred=lambda u: (u.dtype.is_index or u.op in GroupOp.Comparison) and _all_wrapped(u)),
         build=_up_alu),
    Rule("narrow_where", "where(c, x.cast(index), y.cast(index)) -> where(c, x', y').cast(index)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat(Ops.CAST, name="a", pred=_is_wrapped),
                              UPat(Ops.CAST, name="b", pred=_is_wrapped)), name="u",
              pred=_is_index),
         build=_up_where),
    Rule("narrow_range", "RANGE(end.cast(index)) -> RANGE(end).cast(index)",
         UPat((Ops.RANGE, Ops.SPECIAL), src=UPat.var(), name="u", pred=lambda u: _is_index(u)
              and _is_wrapped(u.src[0])),
         build=lambda u: _up_range(u, u.src[0])),
    Rule("narrow_vectorize", "VECTORIZE(x.cast(index), ..) -> VECTORIZE(x', ..).cast(index xN)",
         UPat((Ops.VECTORIZE, Ops.CAT), name="u", pred=lambda u: _is_index(u) and _all_wrapped(u)),
         build=_up_vectorize),
    Rule("narrow_gep", "GEP(x.cast(index xN), i) -> GEP(x, i).cast(index)",
         UPat(Ops.GEP, src=(UPat(Ops.CAST, name="x", pred=_is_wrapped),), name="u",
              pred=_is_index),
         build=_up_gep),
    Rule("narrow_after", "AFTER(x.cast(index), deps) -> AFTER(x, deps).cast(index)",
         UPat(Ops.AFTER, src=UPat.var(), name="u", pred=lambda u: _is_index(u)
              and _is_wrapped(u.src[0])),
         build=lambda u: _up_after(u, u.src[0])),
    Rule("narrow_reduce", "REDUCE(x.cast(index), r..) -> REDUCE(x.cast(i64), r..).cast(index)",
         UPat(Ops.REDUCE, src=UPat.var(), name="u", pred=lambda u: _is_index(u)
              and _is_wrapped(u.src[0])),
         build=lambda u: _up_reduce(u, u.src[0])),
]


# ---- phase 3: terminals ------------------------------------------------------------------
def _index_terminal(u: UOp) -> UOp | None:
    buf, idx = u.src[0], u.src[1]
    gate = u.src[2] if len(u.src) > 2 else None
    if _is_wrapped(idx):
        return UOp(Ops.INDEX, u.dtype, (buf, idx.src[0]) + ((gate,) if gate is not None else ()),
                   u.arg)
    if _is_where_invalid(idx) and (_is_wrapped(idx.src[1]) or idx.src[1].dtype.is_fixed_int):
        c = idx.src[0] if gate is None else _and(gate, idx.src[0])
        return UOp(Ops.INDEX, u.dtype, (buf, _unwrap(idx.src[1]), c), u.arg)
    if _is_invalid(idx):
        zero = UOp.const(dtypes.i32.vec(idx.dtype.count) if idx.dtype.count > 1 else dtypes.i32, 0)
        false = UOp.const(dtypes.bool.vec(idx.dtype.count) if idx.dtype.count > 1 else dtypes.bool,
                          False)
        return UOp(Ops.INDEX, u.dtype, (buf, zero, false), u.arg)
    return None


def _strip_srcs(u: UOp) -> UOp | None:
    src = tuple(_unwrap(s) for s in u.src)
    return None if src == u.src else u.replace(src=src)


def _strip_cast(u: UOp, x: UOp) -> UOp:
    return _cast(x.src[0], u.dtype)


def _strip_store(u: UOp) -> UOp | None:
    idx, val = u.src[0], u.src[1]
    if not _is_wrapped(val):
        return None
    elem = idx.dtype.base() if idx.dtype.ptr else idx.dtype
    return UOp(Ops.STORE, u.dtype, (idx, _cast(val.src[0], elem)) + u.src[2:], u.arg)


terminal_rules = [
    Rule("strip_index", "INDEX(buf, idx.cast(index)) -> INDEX(buf, idx)",
         UPat(Ops.INDEX, src=UPat.var(), name="u", pred=lambda u: len(u.src) >= 2),
         build=_index_terminal),
    Rule("strip_closers", "END/SINK/REDUCE/AFTER(.., x.cast(index), ..) -> unwrapped",
         UPat((Ops.END, Ops.SINK, Ops.REDUCE, Ops.AFTER), name="u",
              pred=lambda u: not u.dtype.is_index and any(_is_wrapped(s) for s in u.src)),
         build=_strip_srcs),
    Rule("strip_cast", "CAST(x.cast(index), dt) -> CAST(x, dt)",
         UPat((Ops.CAST, Ops.BITCAST), src=(UPat(Ops.CAST, name="x", pred=_is_wrapped),),
              name="u", pred=lambda u: not u.dtype.is_index),
         build=_strip_cast),
    Rule("strip_store", "STORE(idx, v.cast(index)) -> STORE(idx, v.cast(elem))",
         UPat(Ops.STORE, src=UPat.var(), name="u"), build=_strip_store),
]

pm_lower_index_dtype = PatternMatcher(leaf_rules + upward_rules + terminal_rules,
                                      name="lower_index_dtype")


def narrow_index(graph: UOp) -> UOp:
    """Give every index value a concrete dtype (i32 or i64); see the module doc.

    The root may be a kernel (SINK) or a bare index expression; a bare
    expression's wrapper is stripped, so the result has a concrete dtype.
    Raises :class:`LoweringError` when an index value is left that no rule
    lowers (for instance ``Invalid`` used outside an INDEX).
    """
    nodes = graph.toposort()
    g = hoist_invalid(graph) if any(u.op is Ops.INVALID for u in nodes) else graph
    g = graph_rewrite(g, pm_lower_index_dtype)
    if _is_wrapped(g):
        g = g.src[0]
    elif _is_where_invalid(g) and _is_wrapped(g.src[1]):
        # a bare maybe-invalid index expression: keep the validity at the root
        g = UOp(Ops.WHERE, g.src[1].src[0].dtype, (g.src[0], g.src[1].src[0],
                                                   UOp(Ops.INVALID, g.src[1].src[0].dtype)))
    elif g.op is Ops.INVALID and g.dtype.count == 1:
        # a bare expression that is Invalid on every input (a padded index the rules
        # folded whole): never valid, as `where(false, 0, Invalid)` says
        dt = dtypes.i32 if g.dtype.is_index else g.dtype
        g = UOp(Ops.WHERE, dt, (UOp.const(dtypes.bool, False), UOp.const(dt, 0),
                                UOp(Ops.INVALID, dt)))
    allowed = set(g.src[2].toposort()) if _is_where_invalid(g) else set()
    nodes = g.toposort()
    users: dict[UOp, UOp] = {}
    for u in nodes:
        for s in u.src:
            users.setdefault(s, u)
    for u in nodes:
        if u in allowed:
            continue
        if u.op is Ops.INVALID or u.dtype.is_index:
            user = users.get(u)
            where = f" (used by {_op_name(user)})" if user is not None else ""
            what = "Invalid outside an INDEX address" if u.op is Ops.INVALID else \
                f"index value {_op_name(u)}"
            raise LoweringError(f"cannot narrow {what}{where}: no rule lowers it; Invalid may "
                                "only reach an INDEX address (or the root of a bare expression)")
    return g
