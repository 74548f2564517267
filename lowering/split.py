"""Index-set splitting: loops split where a gate's comparison changes value.

A padded copy loads ``(where (and (lt 3 r) (lt r 2044)) idx (invalid))``: the
gate compares the loop index ``r`` with constants, so it is constant on each
of the pieces ``[0, 4)``, ``[4, 2044)``, ``[2044, n)`` of ``r``'s range.
:func:`split_gated_ranges` splits such a range into one loop per piece (a
fresh RANGE ``r'`` of the piece's length, ``r = r' + lo``) and folds every
comparison the piece decides (by the value bounds of its operands): inside
the middle piece the gate is ``True`` and the load is a plain, vectorizable
copy; in the others it is ``False`` and the loop stores the alternative value.

Comparisons ``x < y`` whose difference is affine in the range (``a*r + rest``,
``rest`` bounded independently of ``r``) split it where they become decided
for every ``rest`` (:func:`split_points`): a tiled index ``668*r1 + 4*r3 < c``
splits the outer ``r1`` at the tiles wholly valid or invalid, and the mixed
tile's inner ``r3`` in turn. Only loops whose stores are unconditional are
split (gated stores keep their loop whole). Ranges are split outermost first, and each piece is
examined again (its folded body may no longer compare an inner range), so a
fully padded row is one loop of zeros. The iteration order is unchanged (the
pieces run in ascending order inside the same outer loops), so the split is
sound whatever the kernel reads and writes. ``max_loops`` bounds the number
of loops created per kernel; past it the remaining ranges stay whole.
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, range_id, range_kind
from lowering.narrow import is_invalid

__all__ = ["split_gated_ranges", "split_points", "fold_decided"]


def _affine(u: UOp, r: UOp, memo: dict[UOp, tuple[int, int, int] | None]
            ) -> tuple[int, int, int] | None:
    """``(a, lo, hi)`` when the integer ``u`` is ``a*r + rest`` with ``rest`` in
    ``[lo, hi]`` whatever ``r`` is (through ``+ - *`` by constants, negation and
    shifts by constants; a term without ``r`` contributes its value bounds);
    None when ``r`` occurs otherwise."""
    if u in memo:
        return memo[u]
    out: tuple[int, int, int] | None = None
    if u is r:
        out = (1, 0, 0)
    elif r not in u.ranges:
        out = (0, int(u.vmin), int(u.vmax))
    elif u.op in (Ops.ADD, Ops.SUB) and len(u.src) == 2:
        x, y = _affine(u.src[0], r, memo), _affine(u.src[1], r, memo)
        if x is not None and y is not None:
            out = ((x[0] + y[0], x[1] + y[1], x[2] + y[2]) if u.op is Ops.ADD
                   else (x[0] - y[0], x[1] - y[2], x[2] - y[1]))
    elif u.op in (Ops.MUL, Ops.SHL) and len(u.src) == 2 and u.src[1].op is Ops.CONST or \
            u.op is Ops.MUL and len(u.src) == 2 and u.src[0].op is Ops.CONST:
        c, v = (u.src[0], u.src[1]) if u.src[0].op is Ops.CONST else (u.src[1], u.src[0])
        k = int(c.arg)
        if u.op is Ops.SHL:
            k = 1 << k if 0 <= k < 63 else 0
        x = _affine(v, r, memo) if k else None
        if x is not None:
            out = (x[0] * k, *sorted((x[1] * k, x[2] * k)))  # type: ignore[misc]
    elif u.op is Ops.NEG:
        x = _affine(u.src[0], r, memo)
        if x is not None:
            out = (-x[0], -x[2], -x[1])
    memo[u] = out
    return out


def split_points(body: UOp, r: UOp) -> list[int]:
    """The positions ``0 < p < n`` of range ``r`` (size ``n``) where an integer
    comparison ``x < y`` in ``body`` may stop being decided or become decided.

    With ``x - y = a*r + rest`` (``rest`` in ``[lo, hi]`` over everything but
    ``r``, see :func:`_affine`), the comparison is true for every ``rest`` where
    ``a*r + hi < 0`` and false for every ``rest`` where ``a*r + lo >= 0``: each
    is a prefix or a suffix of ``r``'s range, so the pieces are decided /
    mixed / decided. ``r + k < c`` splits at ``c - k``; a tiled index
    ``668*r1 + 4*r3 < c`` splits the outer ``r1`` at the tiles wholly on one side
    (the mixed tile keeps its gate, and its inner ``r3`` splits in turn)."""
    if r.op is not Ops.RANGE:  # e.g. a one-iteration loop the optimizer folded to 0
        return []
    n = r.src[0].arg if r.src[0].op is Ops.CONST else None
    if not isinstance(n, int):
        return []
    pts: set[int] = set()
    memo: dict[UOp, tuple[int, int, int] | None] = {}
    for u in body.toposort():
        if u.op is not Ops.LT or not u.src[0].dtype.is_int or r not in u.ranges:
            continue
        x, y = _affine(u.src[0], r, memo), _affine(u.src[1], r, memo)
        if x is None or y is None or x[0] == y[0]:
            continue
        a, lo, hi = x[0] - y[0], x[1] - y[2], x[2] - y[1]
        if a > 0:   # true everywhere below -hi/a, false everywhere from -lo/a on
            pts.update((-(hi // a), -(lo // a)))
        else:       # false everywhere up to lo/b, true everywhere beyond hi/b
            b = -a
            pts.update((hi // b + 1, lo // b + 1))
    return sorted(p for p in pts if 0 < p < n)


_ARITH = {Ops.ADD: lambda a, b: a + b, Ops.SUB: lambda a, b: a - b, Ops.MUL: lambda a, b: a * b}


def _fold1(u: UOp) -> UOp:
    op = u.op
    if op in _ARITH and u.dtype.is_index and all(s.op is Ops.CONST for s in u.src):
        return UOp.const(u.dtype, _ARITH[op](u.src[0].arg, u.src[1].arg))
    if op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2:
        w = u.src[0].src[1]
        if w.op is Ops.WHERE and w.src[0].op is Ops.CONST and not w.src[0].arg and \
                is_invalid(w.src[2]):  # a load that never happens: its alternative
            return u.src[1] if len(u.src) > 1 else UOp.const(u.dtype, 0)
    if op is Ops.LT and u.src[0].dtype.is_int:
        a, b = u.src
        if a.vmax < b.vmin:
            return UOp.const(dtypes.bool, True)
        if a.vmin >= b.vmax:
            return UOp.const(dtypes.bool, False)
    elif u.dtype is dtypes.bool and op in (Ops.AND, Ops.OR):
        a, b = u.src
        absorb = op is Ops.OR  # OR: True absorbs, AND: False absorbs
        for x, y in ((a, b), (b, a)):
            if x.op is Ops.CONST:
                return x if bool(x.arg) is absorb else y
    elif op is Ops.NOT and u.dtype is dtypes.bool and u.src[0].op is Ops.CONST:
        return UOp.const(dtypes.bool, not u.src[0].arg)
    elif op is Ops.WHERE and u.src[0].op is Ops.CONST and bool(u.src[0].arg):
        return u.src[1]  # the Invalid arm (if any) is never taken
    elif op is Ops.WHERE and u.src[0].op is Ops.CONST and not is_invalid(u.src[2]):
        return u.src[2]
    return u


def fold_decided(root: UOp) -> UOp:
    """Fold the integer comparisons that the value bounds decide, then the boolean
    ``and``/``or``/``not`` and ``where`` they make constant, index arithmetic on
    constants, and a load through ``where(False, x, Invalid)`` (never made) into
    its alternative value (0 without one). Other ``where(False, x, Invalid)``
    are kept: narrowing turns them into a gate that is always off."""
    memo: dict[UOp, UOp] = {}
    for u in root.toposort():
        src = tuple(memo[s] for s in u.src)
        n = u if all(a is b for a, b in zip(src, u.src, strict=True)) else u.replace(src=src)
        memo[u] = _fold1(n)
    return memo[root]


class _Splitter:
    def __init__(self, root: UOp, max_loops: int):
        ids = [range_id(u) for u in root.toposort() if u.op is Ops.RANGE]
        self.next_id = max(ids, default=-1) + 1
        self.loops = 0
        self.max_loops = max_loops

    def fresh(self, size: int, kind: str = "loop") -> UOp:
        r = UOp.range(size, self.next_id, kind)
        self.next_id += 1
        return r

    def build(self, body: UOp, ranges: tuple[UOp, ...]) -> UOp:
        """A statement running ``body`` over ``ranges`` (outer first), split where
        a comparison decides a gate."""
        found = None
        for j, r in enumerate(ranges):
            pts = split_points(body, r)
            if pts and self.loops + len(pts) <= self.max_loops:
                found = j, r, pts
                break
        if found is None:
            return UOp(Ops.END, dtypes.void, (body, *ranges))
        j, r, pts = found
        self.loops += len(pts)
        bounds = [0, *pts, r.src[0].arg]
        pieces = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            if hi - lo == 1:  # one iteration: the index is a constant, no loop
                sub = fold_decided(body.substitute({r: UOp.const(r.dtype, lo)}))
                rest = ranges[j + 1:]
                pieces.append(self.build(sub, rest) if rest else sub)
                continue
            nr = self.fresh(hi - lo, range_kind(r))
            sub = fold_decided(body.substitute({r: nr + lo if lo else nr}))
            pieces.append(self.build(sub, (nr, *ranges[j + 1:])))
        inner = UOp(Ops.SINK, dtypes.void, tuple(pieces))
        return UOp(Ops.END, dtypes.void, (inner, *ranges[:j])) if j else inner


def _splittable(end: UOp) -> bool:
    """An END over unconditional stores (only loads are gated): no reduce, no nested
    loop closers or ordering nodes in its body."""
    for u in end.src[0].toposort():
        if u.op in (Ops.END, Ops.REDUCE, Ops.ENDIF, Ops.IF, Ops.AFTER, Ops.DEFINE_REG):
            return False
        if u.op is Ops.STORE and (u.src[0].op is not Ops.INDEX or len(u.src[0].src) != 2
                                  or u.src[0].src[1].op is Ops.WHERE):
            return False
    return True


def split_gated_ranges(root: UOp, max_loops: int = 32) -> UOp:
    """Split the ranges of every top-level ``END`` of the kernel ``root`` (a SINK)
    at the positions where a gate comparison changes value (see the module doc)."""
    if root.op is not Ops.SINK:
        return root
    sp = _Splitter(root, max_loops)
    out = []
    changed = False
    for s in root.src:
        if s.op is Ops.END and len(s.src) > 1 and _splittable(s):
            new = sp.build(s.src[0], s.src[1:])
            changed |= new is not s
            out.append(new)
        else:
            out.append(s)
    return root.replace(src=tuple(out)) if changed else root
