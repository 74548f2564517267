"""Kernel structure and the final rewrite before linearization (docs/rules.md, seed 002 stage 19).

:func:`prepare` (run first, on the input graph) fixes the kernel's shape:

- a value root (a bare index expression) becomes an *expression kernel*: its
  loop indices become parameters (``RANGE`` id k -> variable ``R<k>``,
  ``SPECIAL`` -> a variable of its name) and the C function returns the value;
- ``SPECIAL`` launch indices of a kernel become loops around the whole kernel
  (outermost first, by name);
- a range closed by several ``END``/``REDUCE`` nodes is renamed in all but
  the first, so that every loop is opened and closed exactly once;
- ``(sink A B)`` runs A, then B: B's loads of buffers A stored to (and B's
  stores to buffers A used) go through ``AFTER(buf, A)``;
- a range used but never closed is an error.

:func:`final_rewrite` (run after narrowing and decompositions):

- constant vectorization: ``CONST`` of a vector dtype and ``VCONST`` become
  ``VECTORIZE`` of scalar constants; ``CAT -> VECTORIZE``;
- vector ops are unrolled lane by lane (``op(v, w) -> VECTORIZE(op(GEP(v, i),
  GEP(w, i)), ...)``; vector loads/stores through a vector of addresses become
  one access per lane) and GEP resolution removes every ``GEP``: the C emitter
  sees scalars only;
- ``REDUCE(op, x, r..)`` becomes an accumulator: ``DEFINE_REG`` initialised to
  the identity of ``op`` inside the enclosing loops, updated inside the reduce
  loops, read after their ``END`` (``AFTER`` orders the three);
- a multi-range ``END(x, r1, r2)`` is split into nested ``END(END(x, r2), r1)``
  (r1 outermost);
- a scalar op over constants is folded (``rules.constants.fold_constants``), whatever
  made it (a split loop's piece, a decomposition, the input itself).
"""

from __future__ import annotations

import math

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import PatternMatcher, Rule, UPat, graph_rewrite
from eqsat.ir.uop import UOp, live_ranges, range_id, range_kind
from lowering.narrow import LoweringError
from rules.constants import BINARY_FOLD, TERNARY_FOLD, UNARY_FOLD, fold_constants

__all__ = ["prepare", "final_rewrite", "live_ranges", "pm_final", "split_ends", "lower_reduce",
           "reduce_identity", "accumulate", "FUSED", "structure_key", "range_key"]

_CLOSERS = (Ops.END, Ops.REDUCE)


def structure_key(u: UOp) -> tuple:
    """``u``'s op, dtype, arg and sources' keys, as nested tuples: a key of the graph alone.

    Orders that reach the emitted C sort by it, never by ``UOp.uid``: a uid is a creation
    number, and interning hands back the older node where one of the same structure is
    still alive, so an order by uid would depend on what the process built before."""
    memo: dict[UOp, tuple] = {}
    for x in u.toposort():
        memo[x] = (x.op.value, str(x.dtype), repr(x.arg), tuple(memo[s] for s in x.src))
    return memo[u]


def range_key(r: UOp) -> tuple:
    """The order of loop indices (RANGE, SPECIAL) by the graph alone: the arg's text,
    then the structure (two ranges of one id differ in their ends)."""
    return (str(r.arg), structure_key(r))


def _toposort(root: UOp, extra: dict[UOp, tuple[UOp, ...]] | None) -> list[UOp]:
    return root.toposort(extra)


def _range_name(r: UOp) -> str:
    return f"range {range_id(r)}"


# ---- prepare ------------------------------------------------------------------------
def _next_range_id(root: UOp) -> int:
    ids = [range_id(u) for u in root.toposort() if u.op is Ops.RANGE]
    return max(ids, default=-1) + 1


def _expression_params(root: UOp) -> UOp:
    """Loop indices of a bare expression become variables (parameters)."""
    mapping: dict[UOp, UOp] = {}
    names = {u.arg[0] for u in root.toposort() if u.op is Ops.DEFINE_VAR}
    for u in root.toposort():
        if u.op not in (Ops.RANGE, Ops.SPECIAL):
            continue
        name = f"R{range_id(u)}" if u.op is Ops.RANGE else str(u.arg)
        if name in names:
            raise LoweringError(f"expression kernel: {u.op.name.lower()} {u.arg!r} becomes "
                                f"parameter {name!r}, which clashes with a variable of that name")
        names.add(name)
        hi = u.vmax
        if isinstance(hi, float):
            raise LoweringError(f"expression kernel: {u.op.name.lower()} {u.arg!r} has an "
                                "unbounded end")
        if hi < 0:  # END 0 (or never above 0): no value of the index, so none of the root
            raise LoweringError(f"expression kernel: {u.op.name.lower()} {u.arg!r} has no "
                                f"value (its END is at most {int(hi) + 1}): the expression "
                                "has none either")
        mapping[u] = UOp(Ops.DEFINE_VAR, dtypes.index, (), (name, 0, int(hi)))
    return root.substitute(mapping) if mapping else root


def _specials_to_ranges(root: UOp) -> UOp:
    specials = sorted({u for u in root.toposort() if u.op is Ops.SPECIAL},
                      key=range_key)
    if not specials:
        return root
    rid = _next_range_id(root)
    mapping = {}
    for i, sp in enumerate(specials):
        mapping[sp] = UOp(Ops.RANGE, sp.dtype, sp.src, rid + i)
    body = root.substitute(mapping)
    ranges = tuple(mapping[sp] for sp in specials)
    inner = UOp(Ops.SINK, dtypes.void, body.src)
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (inner,) + ranges),))


def _uniquify_ranges(root: UOp) -> UOp:
    """Rename ranges closed more than once, so each loop is opened and closed once."""
    for _ in range(10_000):
        claimed: dict[UOp, UOp] = {}
        clash: tuple[UOp, UOp] | None = None
        for u in root.toposort():
            if u.op in _CLOSERS:
                for r in u.src[1:]:
                    if r.op is not Ops.RANGE:
                        raise LoweringError(f"{u.op.name.lower()} closes a "
                                            f"{r.op.name.lower()}, not a range")
                    if r in claimed and claimed[r] is not u:
                        clash = (u, r)
                        break
                    claimed[r] = u
            if clash:
                break
        if clash is None:
            return root
        closer, r = clash
        inner = [x for x in closer.src[0].toposort() if x.op in _CLOSERS and r in x.src[1:]]
        if inner:
            raise LoweringError(f"{_range_name(r)} is closed twice on one path "
                                f"({closer.op.name.lower()} inside another closing the same range)")
        fresh = UOp.range(r.src[0], _next_range_id(root), range_kind(r))
        root = root.substitute({closer: closer.substitute({r: fresh})})
    raise LoweringError("too many ranges to rename")  # pragma: no cover - 10k loops


def _drop_folded_ranges(root: UOp) -> UOp:
    """END/REDUCE entries that an optimizer folded to a constant (a one-trip range's only
    value) close no loop: drop them."""
    new: dict[UOp, UOp] = {}
    for u in root.toposort():
        src = tuple(new[s] for s in u.src)
        if u.op in _CLOSERS:
            src = src[:1] + tuple(r for r in src[1:] if r.op is not Ops.CONST)
        new[u] = u if src == u.src else u.replace(src=src)
    return new[root]


def _buffer_of(idx: UOp) -> UOp | None:
    base = idx.src[0] if idx.op is Ops.INDEX else idx
    while base.op is Ops.AFTER:
        base = base.src[0]
    return base if base.op is Ops.DEFINE_GLOBAL else None


def _accesses(x: UOp) -> tuple[set[UOp], set[UOp]]:
    """(buffers loaded, buffers stored) anywhere under ``x``."""
    reads, writes = set(), set()
    for u in x.toposort():
        if u.op in (Ops.LOAD, Ops.STORE) and u.src:
            b = _buffer_of(u.src[0])
            if b is not None:
                (reads if u.op is Ops.LOAD else writes).add(b)
    return reads, writes


def _order_effects(root: UOp) -> UOp:
    """``(sink A B)`` runs A, then B: B's accesses to a buffer A wrote (or, for B's
    stores, read) go through ``AFTER(buf, A)``, so they cannot move before A and
    are not shared with A (a load of the same address in both reads twice)."""
    new: dict[UOp, UOp] = {}
    for u in root.toposort():
        src = tuple(new[s] for s in u.src)
        if u.op is Ops.SINK and len(src) > 1:
            last_write: dict[UOp, UOp] = {}
            last_any: dict[UOp, UOp] = {}
            kids = []
            for child in src:
                reads, writes = _accesses(child)
                deps: dict[UOp, list[UOp]] = {}
                for b in reads:
                    if b in last_write:
                        deps.setdefault(b, []).append(last_write[b])
                for b in writes:
                    if b in last_any and last_any[b] not in deps.get(b, []):
                        deps.setdefault(b, []).append(last_any[b])
                if deps:
                    child = child.substitute({b: UOp(Ops.AFTER, b.dtype, (b, *d))
                                              for b, d in deps.items()})
                for b in writes:
                    last_write[b] = child
                for b in reads | writes:
                    last_any[b] = child
                kids.append(child)
            src = tuple(kids)
        new[u] = u if src == u.src else u.replace(src=src)
    return new[root]


def prepare(graph: UOp) -> tuple[UOp, str]:
    """The kernel root and its kind: ``"kernel"`` (a SINK) or ``"expr"`` (a value).

    See the module doc; raises :class:`LoweringError` for a range that is
    used but never closed.
    """
    if not isinstance(graph, UOp):
        raise TypeError(f"expected a UOp graph, got {type(graph).__name__}")
    if graph.op is Ops.SINK:
        root, kind = graph, "kernel"
    elif graph.dtype.is_void:
        root, kind = UOp(Ops.SINK, dtypes.void, (graph,)), "kernel"
    else:
        if graph.dtype.count > 1:
            raise LoweringError(f"cannot lower a vector expression root ({graph.dtype}); "
                                "expression kernels return one scalar")
        return _expression_params(graph), "expr"
    root = _drop_folded_ranges(root)
    root = _specials_to_ranges(root)
    root = _uniquify_ranges(root)
    root = _order_effects(root)
    open_ranges = live_ranges(root)[root]
    if open_ranges:
        names = ", ".join(sorted(_range_name(r) for r in open_ranges))
        raise LoweringError(f"{names} used but never closed by an END or REDUCE that "
                            "encloses every use")
    return root, kind


# ---- vector unrolling and GEP resolution ---------------------------------------------------
def _lanes(u: UOp) -> int:
    return u.dtype.count


def _lane(x: UOp, i: int) -> UOp:
    """Lane ``i`` of ``x`` (scalars broadcast)."""
    if x.dtype.count == 1 and not (x.op is Ops.INDEX and x.src[1].dtype.count > 1):
        return x
    return _gep(x, (i,))


def _gep(x: UOp, idx: tuple[int, ...]) -> UOp:
    sdt = x.dtype.scalar() if not x.dtype.ptr else x.dtype
    return UOp(Ops.GEP, sdt.vec(len(idx)) if not sdt.ptr else sdt, (x,), idx)


def _vec(dt: DType, lanes: list[UOp]) -> UOp:
    return lanes[0] if len(lanes) == 1 else UOp(Ops.VECTORIZE, dt, tuple(lanes))


def _gep_resolve(g: UOp, x: UOp) -> UOp | None:
    idx = g.arg
    if x.op is Ops.VECTORIZE:
        return _vec(g.dtype, [x.src[i] for i in idx])
    if x.op is Ops.GEP:
        return _gep(x.src[0], tuple(x.arg[i] for i in idx))
    if x.op is Ops.CONST:
        return UOp.const(g.dtype, x.arg)
    if x.op is Ops.VCONST:
        return _vec(g.dtype, [UOp.const(g.dtype.scalar(), x.arg[i]) for i in idx])
    if x.dtype.count == 1 and not x.dtype.ptr and idx == (0,):
        return x
    if x.dtype.count > 1 and idx == tuple(range(x.dtype.count)):
        return x
    if len(idx) > 1:
        return _vec(g.dtype, [_gep(x, (i,)) for i in idx])
    return None


def _unroll_alu(u: UOp) -> UOp:
    n = _lanes(u)
    return _vec(u.dtype, [UOp(u.op, u.dtype.scalar(), tuple(_lane(s, i) for s in u.src), u.arg)
                          for i in range(n)])


def _lane_index(idx: UOp, i: int) -> UOp:
    """Lane ``i`` of an INDEX whose address (and gate) are vectors."""
    return UOp(Ops.INDEX, idx.dtype, tuple([idx.src[0]] + [_lane(s, i) for s in idx.src[1:]]),
               idx.arg)


def _is_vec_index(x: UOp) -> bool:
    return x.op is Ops.INDEX and len(x.src) >= 2 and x.src[1].dtype.count > 1


def _unroll_load(u: UOp) -> UOp:
    idx = u.src[0]
    if not _is_vec_index(idx) or idx.src[1].dtype.count != _lanes(u):
        raise LoweringError(f"cannot lower a {u.dtype} load from a scalar address: vector "
                            "loads need a vector of addresses of the same width")
    return _vec(u.dtype, [UOp(Ops.LOAD, u.dtype.scalar(),
                              (_lane_index(idx, i),) + tuple(_lane(s, i) for s in u.src[1:]),
                              u.arg) for i in range(_lanes(u))])


def _unroll_store(u: UOp) -> UOp:
    idx, val = u.src[0], u.src[1]
    n = idx.src[1].dtype.count
    if val.dtype.count not in (1, n):
        raise LoweringError(f"store of {val.dtype} through {n} addresses: widths differ")
    return UOp(Ops.SINK, dtypes.void, tuple(
        UOp(Ops.STORE, dtypes.void, (_lane_index(idx, i), _lane(val, i)) + u.src[2:], u.arg)
        for i in range(n)))


def _unroll_reduce(u: UOp) -> UOp:
    return _vec(u.dtype, [UOp(Ops.REDUCE, u.dtype.scalar(), (_lane(u.src[0], i),) + u.src[1:],
                              u.arg) for i in range(_lanes(u))])


def _unroll_after(u: UOp) -> UOp:
    return _vec(u.dtype, [UOp(Ops.AFTER, u.dtype.scalar(), (_lane(u.src[0], i),) + u.src[1:],
                              u.arg) for i in range(_lanes(u))])


def _cat(u: UOp) -> UOp:
    lanes = [_lane(s, i) for s in u.src for i in range(s.dtype.count)]
    return UOp(Ops.VECTORIZE, u.dtype, tuple(lanes))


def _is_vec(u: UOp) -> bool:
    return u.dtype.count > 1 and not u.dtype.ptr


_UNROLL_OPS = GroupOp.ALU | {Ops.CAST, Ops.BITCAST}
#: the ops the constant-folding rules fold (rules/constants.py)
_FOLD_OPS = frozenset(UNARY_FOLD + BINARY_FOLD + TERNARY_FOLD)

pm_final = PatternMatcher([
    Rule("const_vectorize", "CONST(v, dtype xN) -> VECTORIZE(CONST(v), ..)",
         UPat(Ops.CONST, name="u", pred=_is_vec),
         build=lambda u: UOp(Ops.VECTORIZE, u.dtype,
                             (UOp.const(u.dtype.scalar(), u.arg),) * u.dtype.count)),
    Rule("vconst_vectorize", "VCONST(a, b, ..) -> VECTORIZE(CONST(a), CONST(b), ..)",
         UPat(Ops.VCONST, name="u"),
         build=lambda u: _vec(u.dtype, [UOp.const(u.dtype.scalar(), v) for v in u.arg])),
    Rule("cat_to_vectorize", "CAT(a, b, ..) -> VECTORIZE(GEP(a, 0), .., GEP(b, 0), ..)",
         UPat(Ops.CAT, name="u"), build=_cat),
    Rule("gep_resolve", "GEP(VECTORIZE(a, b, ..), i) -> the i-th source; GEP(GEP) folds",
         UPat(Ops.GEP, src=(UPat.var("x"),), name="g"), build=_gep_resolve),
    Rule("unroll_alu", "op(v, w) -> VECTORIZE(op(GEP(v, i), GEP(w, i)), ..)",
         UPat(_UNROLL_OPS, name="u", pred=_is_vec), build=_unroll_alu),
    Rule("unroll_load", "LOAD(INDEX(buf, idx xN)) -> VECTORIZE(LOAD(INDEX(buf, GEP(idx, i))), ..)",
         UPat(Ops.LOAD, name="u", pred=_is_vec), build=_unroll_load),
    Rule("unroll_store", "STORE(INDEX(buf, idx xN), v) -> group of STORE(lane i) ..",
         UPat(Ops.STORE, src=UPat.var(), name="u", pred=lambda u: _is_vec_index(u.src[0])),
         build=_unroll_store),
    Rule("unroll_reduce", "REDUCE(op, v xN, r..) -> VECTORIZE(REDUCE(op, GEP(v, i), r..), ..)",
         UPat(Ops.REDUCE, name="u", pred=_is_vec), build=_unroll_reduce),
    Rule("unroll_after", "AFTER(v xN, deps) -> VECTORIZE(AFTER(GEP(v, i), deps), ..)",
         UPat(Ops.AFTER, name="u", pred=_is_vec), build=_unroll_after),
    # not left to the C compiler: GCC 12 folds (true ? 0.0f : -1.0f) - (c ? 0.0f : 3.0f)
    # to -0.0 for c true, even at -O0, where IEEE subtraction gives +0.0; folded here the
    # emitter sees 0.0 - x, which it writes with its helper
    Rule("fold_constants", "op(CONST a, ..) -> CONST(op(a, ..)) (the constant-folding rules' "
         "function; an undefined value is not folded)",
         UPat(_FOLD_OPS, src=UPat(Ops.CONST), name="u",
              pred=lambda u: not _is_vec(u) and u.arg != FUSED),
         build=fold_constants),
], name="final")


# ---- REDUCE -> accumulator --------------------------------------------------------------
def reduce_identity(op: Ops, dt: DType) -> UOp:
    """The identity of a reduction: 0 for add, 1 for mul, lowest for max, highest for min."""
    s = dt.scalar()
    if op is Ops.ADD:
        v: object = 0
    elif op is Ops.MUL:
        v = 1
    elif op is Ops.MAX:
        v = -math.inf if s.is_float else s.min
    elif op is Ops.MIN:
        v = math.inf if s.is_float else s.max
    else:
        raise LoweringError(f"reduce op {op!r} is not one of add, mul, max, min")
    return UOp.const(s, v)


def _combine(op: Ops, a: UOp, b: UOp) -> UOp:
    if a.dtype.is_bool and op in (Ops.ADD, Ops.MAX):
        op = Ops.OR
    elif a.dtype.is_bool and op in (Ops.MUL, Ops.MIN):
        op = Ops.AND
    return UOp(op, a.dtype, (a, b))


#: the arg of a MULACC the lowering made for ``Target.fma``: one rounding (the C's
#: ``fma``); a MULACC of the input graph rounds twice, as the IR defines it
FUSED = "fused"


def accumulate(op: Ops, a: UOp, x: UOp, fma: bool = False) -> UOp:
    """``a op x``, the step of a reduction; with ``fma`` an add of a product is a
    MULACC, the left product first (as clang's ``-ffp-contract=on`` fuses ``a*b + c``)."""
    if fma and op is Ops.ADD and a.dtype.is_float:
        for m, other in ((a, x), (x, a)):
            if m.op is Ops.MUL and m.dtype is a.dtype:
                return UOp(Ops.MULACC, a.dtype, (m.src[0], m.src[1], other), FUSED)
    return _combine(op, a, x)


def lower_reduce(root: UOp, fma: bool = False) -> UOp:
    """Replace every REDUCE by an accumulator register (see the module doc); ``fma``:
    an accumulated product is a MULACC (:func:`accumulate`)."""
    if not any(u.op is Ops.REDUCE for u in root.toposort()):
        return root
    live = live_ranges(root)
    new: dict[UOp, UOp] = {}
    n_acc = 1 + max((u.arg for u in root.toposort() if u.op is Ops.DEFINE_REG), default=-1)
    zero = UOp.const(dtypes.i32, 0)
    for u in root.toposort():
        s = tuple(new[x] for x in u.src)
        if u.op is not Ops.REDUCE:
            new[u] = u if s == u.src else u.replace(src=s)
            continue
        x, rr = s[0], s[1:]
        if not rr:
            new[u] = _combine(u.arg, reduce_identity(u.arg, u.dtype), x)
            continue
        dt = u.dtype
        acc = UOp(Ops.DEFINE_REG, dt.ptr_to(), (), n_acc)
        n_acc += 1
        outer = tuple(new[r] for r in sorted(live[u], key=range_key))
        base = UOp(Ops.AFTER, acc.dtype, (acc,) + outer) if outer else acc
        init = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, acc.dtype, (base, zero)),
                                            reduce_identity(u.arg, dt)))
        cur = UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, acc.dtype,
                                     (UOp(Ops.AFTER, acc.dtype, (acc, init) + rr), zero)),))
        upd = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, acc.dtype, (acc, zero)),
                                           accumulate(u.arg, cur, x, fma)))
        end = UOp(Ops.END, dtypes.void, (upd,) + rr, ("reduce", acc.arg))  # not a written END
        new[u] = UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, acc.dtype,
                                        (UOp(Ops.AFTER, acc.dtype, (acc, end)), zero)),))
    return new[root]


# ---- END splitting -------------------------------------------------------------------------
def _split_end(u: UOp) -> UOp | None:
    if len(u.src) == 1:
        return u.src[0]
    if len(u.src) == 2:
        return None
    out = u.src[0]
    for r in reversed(u.src[1:]):  # the first range is the outermost loop
        out = UOp(Ops.END, dtypes.void, (out, r), u.arg)
    return out


pm_split_ends = PatternMatcher([
    Rule("split_end", "END(x, r1, r2) -> END(END(x, r2), r1)", UPat(Ops.END, name="u"),
         build=_split_end),
], name="split_ends")


def split_ends(root: UOp) -> UOp:
    """Split every multi-range END into nested single-range ENDs."""
    return graph_rewrite(root, pm_split_ends)


def final_rewrite(root: UOp, fma: bool = False) -> UOp:
    """Unroll vectors, resolve GEPs, lower REDUCEs, split ENDs (see the module doc);
    ``fma``: accumulated products are MULACCs (``Target.fma``)."""
    g = graph_rewrite(root, pm_final)
    for u in g.toposort():
        if u.dtype.count > 1 and not u.dtype.ptr:
            raise LoweringError(f"vector value {u.op.name.lower()} ({u.dtype}) is left after "
                                "unrolling; the C emitter renders scalars only")
        if u.op is Ops.GEP:
            raise LoweringError(f"unresolved GEP of {u.src[0].op.name.lower()} "
                                f"({u.src[0].dtype})")
    g = lower_reduce(g, fma)
    return split_ends(g)
