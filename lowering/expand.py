"""The expander: ``upcast`` and ``unroll`` ranges become lanes (tinygrad's expander).

A range of kind ``upcast`` or ``unroll`` (``(range ID END upcast)``, docs/format.md)
with a constant END is not a loop in the C: its values are *lanes*, each a copy of
the code that uses it with the range replaced by a constant. Run after the late
decompositions (the index arithmetic is narrowed, the ranges have their C dtype) and
before :func:`~lowering.final.final_rewrite`:

- ``END(x, r.., e..)`` with expand ranges ``e`` becomes ``END(SINK(x[e=c] for every
  lane c), r..)``: one store per lane (lanes in the product order of ``e``, the last
  range fastest), which the C emitter groups into vector loads and stores where the
  addresses are consecutive (``Target.vectorize``). The lanes run in the loops'
  order when the expand ranges are the END's last ones; otherwise only when the
  iterations commute (no element written twice, no stored buffer read), else only
  the trailing expand ranges become lanes;
- ``REDUCE(op, x, r.., v..)`` with expand ranges ``v`` (a reduction's ``unroll``
  ranges), inside the lanes ``l`` of the expand ranges that an enclosing END closes
  (an ``upcast`` output tile), becomes one accumulator per lane of ``l``, all updated
  in one loop over ``r``: ``acc[l] = ((acc[l] op x[l, v0]) op x[l, v1]) ...``, the
  ``v`` lanes folded into the accumulator left to right in the product order of
  ``v`` (only the reduction's trailing expand ranges: the loops' own order). That
  is the order of the C that tinygrad 0.14 renders for the same schedule
  (its ``acc + x0 + x1 + ..`` chain), so float results are bit-exact against it. With
  ``Target.fma`` an add of a product folds into a fused multiply-add where clang's
  ``-ffp-contract=on`` fuses tinygrad's chain: ``a + x*y`` and ``x*y + a`` (the left
  product first). Without ``r`` (a horizontal reduction, a pooling window) the lanes
  fold left without an accumulator.

An expand range with a non-constant END, or more than :data:`MAX_LANES` lanes under
one END, stays a loop; so does every range of a kernel whose expanded reduction's
lanes are not all closed by one END (the expansion is all or nothing).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, range_id, range_kind
from lowering.final import (
    _combine,
    _uniquify_ranges,
    accumulate,
    live_ranges,
    range_key,
    reduce_identity,
)

__all__ = ["EXPAND_KINDS", "MAX_LANES", "JAM_MAX_ACCUMULATORS", "expand", "expandable_ranges",
           "jam"]

#: the range kinds whose values become lanes
EXPAND_KINDS = frozenset({"upcast", "unroll"})
#: the most lanes one END or one reduction expands into (more stays a loop)
MAX_LANES = 256
#: :func:`jam` leaves a register tile of more accumulators than this alone (16 f32 vector
#: registers of 4 lanes hold 64; half of them stay for the loaded operands)
JAM_MAX_ACCUMULATORS = 32


def expandable_ranges(root: UOp) -> list[UOp]:
    """The ranges of ``root`` the expander turns into lanes, in toposort order."""
    return [u for u in root.toposort() if u.op is Ops.RANGE and range_kind(u) in EXPAND_KINDS
            and u.src[0].op is Ops.CONST and 1 <= int(u.src[0].arg) <= MAX_LANES]


def _assignments(ranges: Sequence[UOp]) -> list[dict[UOp, int]]:
    """Every lane of ``ranges``: the product of their values, the last range fastest."""
    return [dict(zip(ranges, vals, strict=True))
            for vals in itertools.product(*(range(int(r.src[0].arg)) for r in ranges))]


def _lanes(ranges: Sequence[UOp]) -> int:
    n = 1
    for r in ranges:
        n *= int(r.src[0].arg)
    return n


class _Expander:
    def __init__(self, root: UOp, fma: bool, counts: Counter):
        self.root = root
        self.fma = fma
        self.counts = counts
        # the expand ranges in the kernel's toposort order, which the lanes of a reduction's
        # outer ranges follow: an order of the graph alone (never UOp.uid, a creation number
        # that interning makes depend on what the process built before)
        self.order = {r: i for i, r in enumerate(expandable_ranges(root))}
        self.expand = set(self.order)
        self.live = live_ranges(root)
        # an expanded REDUCE (as rebuilt) -> (its value per lane of L, L)
        self.lanes_of: dict[UOp, tuple[dict[tuple[int, ...], UOp], tuple[UOp, ...]]] = {}
        self.n_acc = 1 + max((u.arg for u in root.toposort() if u.op is Ops.DEFINE_REG),
                             default=-1)

    def subst(self, x: UOp, assign: dict[UOp, int]) -> UOp:
        """``x`` with the ranges of ``assign`` replaced by their values, and each expanded
        REDUCE by its value at that lane."""
        mapping: dict[UOp, UOp] = {r: UOp.const(r.dtype, v) for r, v in assign.items()}
        for red, (vals, lrs) in self.lanes_of.items():
            if all(r in assign for r in lrs):
                mapping[red] = vals[tuple(assign[r] for r in lrs)]
        return x.substitute(mapping)

    def reduce(self, old: UOp, u: UOp) -> UOp:
        """Expand the REDUCE ``u`` (rebuilt from ``old``); returns its placeholder. Only
        its trailing expand ranges become lanes: the fold keeps the loops' order."""
        closed = _trailing_lanes(u.src[1:], self.expand)
        loops = tuple(r for r in u.src[1:] if r not in closed)
        outer = sorted((r for r in self.live[old] if r in self.expand and r not in u.src[1:]),
                       key=self.order.__getitem__)
        if not closed and not outer:
            return u
        if u.dtype.count > 1:
            raise _SkipError("a vector reduction")  # the final rewrite splits it by lane
        if _lanes(closed) * _lanes(outer) > MAX_LANES:
            raise _SkipError(f"a reduction over {_lanes(closed) * _lanes(outer)} lanes")
        x, op, dt = u.src[0], u.arg, u.dtype
        vals: dict[tuple[int, ...], UOp] = {}
        inits, updates, accs = [], [], []
        for lane in _assignments(outer):
            xs = [self.subst(x, {**lane, **v}) for v in _assignments(closed)]
            key = tuple(lane[r] for r in outer)
            if not loops:  # a horizontal reduction: the lanes fold left, no accumulator
                val = xs[0]
                for y in xs[1:]:
                    val = accumulate(op, val, y, self.fma)
                if op is Ops.ADD and dt.is_float:  # the fold from the identity, +0.0:
                    # they differ only where this one is -0.0 (every term -0.0)
                    val = _combine(op, val, reduce_identity(op, dt))
                vals[key] = val
                continue
            acc = UOp(Ops.DEFINE_REG, dt.ptr_to(), (), self.n_acc)
            self.n_acc += 1
            around = tuple(sorted((r for r in self.live[old] if r not in self.expand),
                                  key=range_key))
            base = UOp(Ops.AFTER, acc.dtype, (acc,) + around) if around else acc
            zero = UOp.const(dtypes.i32, 0)
            init = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, acc.dtype, (base, zero)),
                                                reduce_identity(op, dt)))
            cur = UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, acc.dtype,
                                         (UOp(Ops.AFTER, acc.dtype, (acc, init) + loops), zero)),))
            val = cur
            for y in xs:
                val = accumulate(op, val, y, self.fma)
            inits.append(init)
            updates.append(UOp(Ops.STORE, dtypes.void,
                               (UOp(Ops.INDEX, acc.dtype, (acc, zero)), val)))
            accs.append((key, acc))
        if loops:
            body = updates[0] if len(updates) == 1 else UOp(Ops.SINK, dtypes.void, tuple(updates))
            end = UOp(Ops.END, dtypes.void, (body,) + loops, ("reduce", accs[0][1].arg))
            for key, acc in accs:
                vals[key] = UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, acc.dtype,
                                                   (UOp(Ops.AFTER, acc.dtype, (acc, end)),
                                                    UOp.const(dtypes.i32, 0))),))
        self.lanes_of[u] = (vals, tuple(outer))
        self.counts["expand_reduce"] += 1
        return u

    def end(self, old: UOp, u: UOp) -> UOp:
        lanes = [r for r in u.src[1:] if r in self.expand]
        if not lanes:
            return u
        if not _trailing(u.src[1:], self.expand) and not _independent(old, self.live):
            lanes = _trailing_lanes(u.src[1:], self.expand)  # the rest stay loops, in order
            if not lanes:
                return u
        if _lanes(lanes) > MAX_LANES:
            raise _SkipError(f"an END over {_lanes(lanes)} lanes")
        body = [self.subst(u.src[0], a) for a in _assignments(lanes)]
        rest = tuple(r for r in u.src[1:] if r not in lanes)
        inner = body[0] if len(body) == 1 else UOp(Ops.SINK, dtypes.void, tuple(body))
        self.counts["expand_end"] += 1
        return UOp(Ops.END, dtypes.void, (inner,) + rest, u.arg) if rest else inner

    def run(self) -> UOp:
        new: dict[UOp, UOp] = {}
        for u in self.root.toposort():
            src = tuple(new[s] for s in u.src)
            n = u if src == u.src else u.replace(src=src)
            if u.op is Ops.REDUCE:
                n = self.reduce(u, n)
            elif u.op is Ops.END:
                n = self.end(u, n)
            new[u] = n
        out = new[self.root]
        lone = {p: vals[()] for p, (vals, lrs) in self.lanes_of.items() if not lrs}
        if lone:  # reductions with no lanes outside: one value each
            out = out.substitute(lone)
        if _users_of(out, self.lanes_of):
            raise _SkipError("a reduction's lanes are not all closed by one END")
        return _uniquify_ranges(out)  # a loop inside the lanes: one copy of it per lane


def _trailing_lanes(ranges: Sequence[UOp], expand: set[UOp]) -> list[UOp]:
    """The expand ranges after the last range that stays a loop."""
    out: list[UOp] = []
    for r in reversed(ranges):
        if r not in expand:
            break
        out.insert(0, r)
    return out


def _trailing(ranges: Sequence[UOp], expand: set[UOp]) -> bool:
    """Every expand range of ``ranges`` is after every loop: the lanes, in product
    order, run in the loops' order."""
    return len(_trailing_lanes(ranges, expand)) == sum(1 for r in ranges if r in expand)


def _affine(x: UOp, ranges: set[UOp]) -> dict[UOp, int] | None:
    """The coefficient of each range of ``ranges`` in the integer ``x``, if ``x`` is
    affine in them (sums, products with and shifts by constants, integer casts; a
    part using none of them is a constant); else None."""
    memo: dict[UOp, dict[UOp, int] | None] = {}
    for n in x.toposort():
        src = [memo[s] for s in n.src]
        if n in ranges:
            memo[n] = {n: 1}
        elif not any(r in ranges for r in n.toposort()):
            memo[n] = {}
        elif n.op in (Ops.ADD, Ops.SUB) and None not in src:
            sign = 1 if n.op is Ops.ADD else -1
            out = dict(src[0])  # type: ignore[arg-type]
            for r, c in src[1].items():  # type: ignore[union-attr]
                out[r] = out.get(r, 0) + sign * c
            memo[n] = out
        elif n.op in (Ops.MUL, Ops.SHL) and n.src[1].op is Ops.CONST and src[0] is not None:
            k = int(n.src[1].arg) if n.op is Ops.MUL else 1 << int(n.src[1].arg)
            memo[n] = {r: c * k for r, c in src[0].items()}
        elif n.op is Ops.MUL and n.src[0].op is Ops.CONST and src[1] is not None:
            memo[n] = {r: c * int(n.src[0].arg) for r, c in src[1].items()}
        elif n.op is Ops.CAST and n.dtype.is_int and src[0] is not None:
            memo[n] = src[0]
        else:
            memo[n] = None
    return memo[x]


def _independent(end: UOp, live: dict[UOp, frozenset[UOp]]) -> bool:
    """The iterations of ``end`` commute: its body loads no buffer it stores to, and
    every store's address is a one-to-one affine function of the ranges that change
    inside ``end`` (each coefficient larger than the span of the smaller ones), so no
    two iterations write one element. Then the lanes may run in any order."""
    body = end.src[0].toposort()
    stored = {_buffer(x.src[0]) for x in body if x.op is Ops.STORE}
    if None in stored or any(x.op is Ops.LOAD and _buffer(x.src[0]) in stored for x in body):
        return False
    for st in (x for x in body if x.op is Ops.STORE):
        inner = set(live[st]) - set(live[end])
        coef = _affine(st.src[0].src[1], inner)
        if coef is None:
            return False
        span = 0
        for r in sorted(inner, key=lambda r: abs(coef.get(r, 0))):
            n = int(r.vmax) + 1 if isinstance(r.vmax, int) else None
            if n is None or (n > 1 and abs(coef.get(r, 0)) <= span):
                return False
            span += abs(coef.get(r, 0)) * (n - 1)
    return True


def _buffer(idx: UOp) -> UOp | None:
    """The buffer an INDEX addresses (through AFTERs), or None if not an INDEX."""
    if idx.op is not Ops.INDEX:
        return None
    b = idx.src[0]
    while b.op is Ops.AFTER:
        b = b.src[0]
    return b


class _SkipError(Exception):
    """The kernel keeps its expand ranges as loops (the reason is the message)."""


def _users_of(root: UOp, placeholders: Iterable[UOp]) -> list[UOp]:
    ph = set(placeholders)
    return [u for u in root.toposort() if u in ph]


def expand(root: UOp, fma: bool = False, counts: Counter | None = None) -> UOp:
    """Expand the ``upcast``/``unroll`` ranges of the kernel ``root`` into lanes (see the
    module doc). ``fma``: fold an add of a product into a MULACC in the reductions'
    chains (``Target.fma``). ``counts`` counts the expanded ENDs and reductions
    (``expand_end``, ``expand_reduce``) and the kernels left as loops (``expand_skipped``)."""
    counts = counts if counts is not None else Counter()
    if not any(u.op is Ops.RANGE and range_kind(u) in EXPAND_KINDS for u in root.toposort()):
        return root
    try:
        return _Expander(root, fma, counts).run()
    except _SkipError:
        counts["expand_skipped"] += 1
        return root


def _jam_candidate(end: UOp, expand: set[UOp], factor: int, uses: Counter) -> UOp | None:
    """The loop of ``end`` that :func:`jam` splits, or None: ``end`` closes a register
    tile (expand ranges around a reduction that keeps a loop), its last loop
    has a constant trip count divisible by ``factor`` and feeds the reduction, no other
    END or REDUCE names that loop, and the body loads no buffer it stores to."""
    ranges = end.src[1:]
    lanes = [r for r in ranges if r in expand]
    loops = [r for r in ranges if r not in expand]
    if not lanes or not loops:
        return None
    body = end.src[0].toposort()
    reds = [x for x in body if x.op is Ops.REDUCE and any(r not in expand for r in x.src[1:])]
    r = loops[-1]
    if (not reds or r.src[0].op is not Ops.CONST or int(r.src[0].arg) % factor
            or int(r.src[0].arg) < factor or uses[r] != 1
            or _lanes(lanes) * factor > JAM_MAX_ACCUMULATORS
            or not all(r in red.src[0].toposort() for red in reds)):
        return None
    stored = {_buffer(x.src[0]) for x in body if x.op is Ops.STORE}
    if None in stored or any(x.op is Ops.LOAD and _buffer(x.src[0]) in stored for x in body):
        return None
    return r


def jam(root: UOp, factor: int = 2) -> UOp:
    """Unroll-and-jam: the innermost loop around each register tile (:func:`_jam_candidate`)
    splits into a loop over ``r // factor`` and an ``upcast`` range of ``factor`` lanes,
    ``r = r_outer * factor + r_lane``, which :func:`expand` turns into ``factor`` times the
    accumulators, all updated in one pass of the reduction's loop. A tile's accumulator
    chains are latency-bound (each chain's adds or fused multiply-adds wait for the one
    before); twice the chains keep the FMA units busy. Each accumulator still folds its
    terms in the same order, and the stores run in the loops' order (the new lanes
    slowest, the tile's own after), so results are unchanged bit for bit; only the
    loads of the next iteration move before the stores of this one, which is why a
    body that loads a buffer it stores to is left alone. ``factor`` < 2: ``root``."""
    if factor < 2:
        return root
    expand = set(expandable_ranges(root))
    uses: Counter = Counter(r for u in root.toposort() if u.op in (Ops.END, Ops.REDUCE)
                            for r in u.src[1:])
    cands = {r for u in root.toposort() if u.op is Ops.END
             if (r := _jam_candidate(u, expand, factor, uses)) is not None}
    if not cands:
        return root
    next_id = 1 + max(range_id(u) for u in root.toposort() if u.op is Ops.RANGE)
    split: dict[UOp, tuple[tuple[UOp, ...], UOp]] = {}  # a loop -> its ranges, its value
    for r in sorted(cands, key=range_id):
        dt, trips = r.dtype, int(r.src[0].arg) // factor
        lane = UOp(Ops.RANGE, dt, (UOp.const(dt, factor),), (next_id, "upcast"))
        next_id += 1
        if trips == 1:  # the whole loop becomes lanes
            split[r] = ((lane,), lane)
            continue
        outer = UOp(Ops.RANGE, dt, (UOp.const(dt, trips),), r.arg)
        split[r] = ((outer, lane),
                    UOp(Ops.ADD, dt, (UOp(Ops.MUL, dt, (outer, UOp.const(dt, factor))), lane)))
    new: dict[UOp, UOp] = {}
    for u in root.toposort():
        if u in split:
            new[u] = split[u][1]
            continue
        if u.op in (Ops.END, Ops.REDUCE):
            rs = [x for s in u.src[1:] for x in (split[s][0] if s in split else (new[s],))]
            src = (new[u.src[0]], *rs)
        else:
            src = tuple(new[s] for s in u.src)
        new[u] = u if src == u.src else u.replace(src=src)
    return new[root]
