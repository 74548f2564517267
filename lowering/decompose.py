"""Late decompositions (docs/rules.md, seed 002 stage 18) and the target description.

Run after index narrowing, on concrete dtypes. Each rule is sound under C
semantics on every value the node's proven bounds admit (``idiv`` truncates,
``mod`` takes the dividend's sign, fixed-width integers wrap; the C is compiled
with ``-fwrapv`` so signed wrap-around and shifts of negative values are
defined the way the IR defines them):

=====================  ===============================================  =========================
rule                   identity                                         guard
=====================  ===============================================  =========================
``mod_pow2``           ``x % 2**k -> x & (2**k-1)``                     ``vmin(x) >= 0`` (else the
                                                                        sign-correct sequence)
``idiv_pow2``          ``x // 2**k -> x >> k``                          ``vmin(x) >= 0`` (else the
                                                                        sign-correct sequence)
``idiv_const``         ``x // c -> (x*m) >> s [- (x >> (n-1))]``        c not a power of two,
                                                                        any proven range
``mod_const``          ``x % c -> x - (x // c)*c``                      as ``idiv_const``
``floor_divmod``       ``floordiv(x, 2**k) -> x >> k``,                 fixed-width (any sign);
                       ``floormod(x, 2**k) -> x & (2**k-1)``;
                       ``x // y``, ``x % y``                            ``x``, ``y`` one sign;
                       ``q = x // y``, ``r = x - q*y``,                 else (exact)
                       ``where(r, y differ in sign, q-1 | r+y, q | r)``
``mul_pow2``           ``x * 2**k -> x << k``                           integers (wrapping)
``fdiv_const``         ``x / c -> x * (1/c)``                           floats, 1/c exact
``mul_neg_one``        ``x * -1 -> -x``                                 ``target.neg``
``mulacc``             ``a*b + c -> mulacc(a, b, c)`` (fused: one      floats, ``target.fma``
                       rounding, the C's ``fma``)
``pow_const``          ``x ** c -> x * x * ..`` (square and multiply)   integers, ``0 <= c <= 64``
``demorgan_and``       ``!a & !b -> !(a | b)``                          --
``demorgan_or``        ``!a | !b -> !(a & b)``                          --
``not_not``            ``!!x -> x``                                     --
``not_cmp``            ``!(x < c) -> (c-1) < x``, ``!(c < x) -> x <     integer/bool operands
                       c+1``, ``!(a < b) -> b <= a``, ``!(a == b) ->
                       a != b`` ...                                     (``==``/``!=``: any)
=====================  ===============================================  =========================

The pass is one bottom-up walk: each rule sees the node *before* the walk
(whose bounds are exact; a rewritten child such as a multiply-high sequence
may have looser bounds) and builds from the already-rewritten children.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering.fastdiv import build_idiv, build_mod, is_pow2

__all__ = ["Target", "Decomposition", "DECOMPOSITIONS", "decompose"]


@dataclass(frozen=True)
class Target:
    """What the C target supports; the lowering adapts to these flags.

    ``fma``: a fused multiply-add exists, so float ``a*b+c`` becomes MULACC.
    ``predicated_stores``: gated stores are rendered as one predicated
    statement; when False they are wrapped in IF/ENDIF (stage 22).
    ``neg``: a negate instruction exists (``x * -1 -> neg(x)``).
    ``fast_div``: divide by constants with multiply-high and shift.
    ``split_gates``: split loops where a gate comparing the loop index with a
    constant changes value (:func:`lowering.split.split_gated_ranges`), so a
    padded copy's middle loop is an ungated, vectorizable copy; and start a
    gated float sum's loop after the iterations whose gate is off for every lane
    (:func:`lowering.trim.trim_gated_reductions`, a cumsum's padding).
    ``vectorize``: four f32 loads of one loop body from consecutive addresses
    of a buffer the kernel never writes become one 16-byte vector load, and
    four f32 stores in a row to consecutive addresses one vector store (GCC
    vector extensions; a stored vector built from loaded ones is a
    ``__builtin_shuffle``), e.g. a transpose's 4x4 register tile.
    ``streaming_stores``: those vector stores to an output of at least
    ``stream_min_bytes`` are non-temporal (x86 SSE ``movntps`` where the
    address is 16-byte aligned, a plain store elsewhere and without SSE): a big
    output goes to memory without first being read into the cache.
    ``jam``: unroll-and-jam factor of the loop around a register tile
    (:func:`lowering.expand.jam`): that many times the tile's accumulator chains in
    one pass of the reduction loop, the same values bit for bit; 1: off.
    ``prefetch``: a vector load whose address advances by more than a cache
    line per iteration of its innermost loop (a stride the hardware prefetcher
    does not follow, e.g. down a transpose's input rows) is prefetched that
    many iterations ahead (``__builtin_prefetch``; 0: never), in buffers of at
    least ``lowering.cemit.PREFETCH_MIN_BYTES`` (1 MiB: a smaller one stays in
    the L2 cache, as a matmul's B panel does, and its prefetches only cost).
    ``aligned``: the function has a second copy in which the vector loads and
    stores whose element offset is proven a multiple of 4 for every value of the
    loop indices (:func:`lowering.align.is_multiple`) are 16-byte aligned accesses;
    the function runs that copy when those buffers' addresses are multiples of 16
    (numpy's and tinygrad's allocations are), the unaligned code otherwise.

    The C compiler (docs/perf.md has the figures behind the defaults):

    ``cc``: the compiler's command; None: ``$CC`` when set, else ``cc`` (GCC on
    these machines; a fresh machine may have no clang), but ``clang`` where it is
    on the PATH for a kernel with register tiles (an expanded reduction: GCC 12
    leaves the accumulator chains of a matmul's tile scalar, clang vectorizes
    them; GCC vectorizes the outer loop of a plain reduction, clang does not).
    Every compiler gets
    ``-O2 -fwrapv -ffp-contract=off``: the C means the IR's exact values whatever
    compiles it, a MULACC being an explicit ``fma`` call.
    ``march``: ``-march=`` (``native``: the host's instruction set, vector width
    and FMA; the library cache tells hosts apart); None: the compiler's
    baseline for the architecture (portable binaries, e.g. x86-64 SSE2).
    ``loop_patterns``: let GCC replace a loop by a ``memcpy``/``memset`` call
    (``-ftree-loop-distribute-patterns``, on at ``-O2``). Off by default: a
    padded copy's row loops became ``rep movsq`` calls, slower than the loop.

    ``fma=True`` reproduces clang's ``-ffp-contract=on``: what tinygrad's CPU
    programs compute for ``acc + a*b``, bit for bit.
    """

    name: str = "c"
    fma: bool = False
    predicated_stores: bool = False
    neg: bool = True
    fast_div: bool = True
    split_gates: bool = True
    vectorize: bool = True
    streaming_stores: bool = True
    stream_min_bytes: int = 8 << 20
    prefetch: int = 8
    aligned: bool = True
    cc: str | None = None
    march: str | None = "native"
    loop_patterns: bool = False
    jam: int = 2

    def __post_init__(self) -> None:
        if isinstance(self.jam, bool) or not isinstance(self.jam, int) or self.jam < 1:
            raise ValueError(f"Target.jam must be an int >= 1 (1: off), got {self.jam!r}")

    def __repr__(self) -> str:
        return (f"Target(name={self.name!r}, fma={self.fma}, "
                f"predicated_stores={self.predicated_stores}, neg={self.neg}, "
                f"fast_div={self.fast_div}, split_gates={self.split_gates}, "
                f"vectorize={self.vectorize}, streaming_stores={self.streaming_stores}, "
                f"stream_min_bytes={self.stream_min_bytes}, prefetch={self.prefetch}, "
                f"aligned={self.aligned}, "
                f"cc={self.cc!r}, march={self.march!r}, loop_patterns={self.loop_patterns}, "
                f"jam={self.jam})")


Builder = Callable[[UOp, tuple[UOp, ...], dict[UOp, UOp], Target], UOp | None]


@dataclass(frozen=True)
class Decomposition:
    """One late rewrite: ``fn(old_node, new_srcs, new_of, target) -> UOp | None``."""

    name: str
    identity: str
    ops: frozenset[Ops]
    fn: Builder

    def __repr__(self) -> str:
        return f"Decomposition({self.name!r}, {self.identity!r})"


def _const_int(u: UOp) -> int | None:
    if u.op is Ops.CONST and u.dtype.is_int and not isinstance(u.arg, bool):
        return int(u.arg)
    return None


def _bounds(u: UOp) -> tuple[int, int] | None:
    """``u``'s bounds, None when one is infinite or they are empty (a value of a range of
    END 0, which never runs: the division stays as it is)."""
    lo, hi = u.vmin, u.vmax
    if isinstance(lo, float) or isinstance(hi, float) or lo > hi:
        return None
    return int(lo), int(hi)


def _fixed_int(u: UOp) -> bool:
    return u.dtype.is_fixed_int


# ---- integer division / remainder ------------------------------------------------
def _idiv_const(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    d = _const_int(u.src[1])
    b = _bounds(u.src[0])
    if d is None or b is None or not _fixed_int(u):
        return None
    if not (is_pow2(abs(d)) or t.fast_div):
        return None
    return build_idiv(s[0], d, *b)


def _mod_const(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    d = _const_int(u.src[1])
    b = _bounds(u.src[0])
    if d is None or b is None or not _fixed_int(u):
        return None
    if not (is_pow2(abs(d)) or t.fast_div):
        return None
    return build_mod(s[0], d, *b)


# ---- floor division / remainder ------------------------------------------------------
def _floor_divmod(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    """``floordiv(x, y)`` / ``floormod(x, y)`` in C's operations, always (C has no floor
    division). By a positive power of two ``2**k`` on a fixed-width integer: ``x >> k``
    (an arithmetic shift floors) and ``x & (2**k - 1)`` (two's complement), whatever
    the sign of ``x``. Where ``x`` and ``y`` are proven of one sign (``x >= 0 < y`` or
    ``x <= 0 > y``) the quotient is not negative and truncation is the floor: ``x // y``
    and ``x % y`` (then lowered as ``idiv_const``/``mod_const`` do). Else the exact
    expansion with ``q = x // y``, ``r = x % y``: where ``r != 0`` and ``r``'s sign is
    not ``y``'s, the floor is ``q - 1`` and the floor remainder ``r + y``; else ``q``
    and ``r`` (no overflow: ``r`` and ``y`` differ in sign and ``|r| < |y|``; ``q - 1``
    is the exact floor, which ``INT_MIN // -1`` never reaches since its ``r`` is 0)."""
    x, y = u.src
    div = u.op is Ops.FLOORDIV
    d = _const_int(y)
    if d is not None and d > 1 and is_pow2(d) and _fixed_int(u):
        k = d.bit_length() - 1
        if div:
            return s[0] >> UOp.const(u.dtype, k)
        return s[0] & UOp.const(u.dtype, d - 1)
    cop = Ops.IDIV if div else Ops.MOD
    c = UOp(cop, u.dtype, (x, y))
    if (x.vmin >= 0 and y.vmin > 0) or (x.vmax <= 0 and y.vmax < 0):
        return (_idiv_const if div else _mod_const)(c, s, new, t) or c.replace(src=s)
    cq = UOp(Ops.IDIV, u.dtype, (x, y))
    q = _idiv_const(cq, s, new, t) or cq.replace(src=s)
    r = s[0] - q * s[1]
    zero = UOp.const(u.dtype, 0)
    if d is not None:  # the remainder's sign against a known divisor's
        adj = r.lt(zero) if d > 0 else zero.lt(r)
    else:
        adj = r.ne(zero) & r.lt(zero).ne(s[1].lt(zero))
    if div:
        return adj.where(q - UOp.const(u.dtype, 1), q)
    return adj.where(r + s[1], r)


# ---- multiplication ---------------------------------------------------------------------
def _mul_const(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    for i in (1, 0):
        c = u.src[i]
        x = s[1 - i]
        if c.op is not Ops.CONST:
            continue
        v = c.arg
        if isinstance(v, bool):
            continue
        if v == -1 and t.neg and (u.dtype.is_int or u.dtype.is_float):
            return -x
        if _fixed_int(u) and isinstance(v, int) and is_pow2(v) and v > 1:
            return x << UOp.const(x.dtype, v.bit_length() - 1)
    return None


def _exact_recip(c: UOp) -> float | None:
    v = c.arg
    if not isinstance(v, float) or not math.isfinite(v) or v == 0.0:
        return None
    r = UOp.const(c.dtype, 1.0 / v).arg
    if not math.isfinite(r) or r == 0.0:
        return None
    return r if Fraction(r) * Fraction(v) == 1 else None


def _fdiv_const(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    c = u.src[1]
    if c.op is not Ops.CONST or not u.dtype.is_float:
        return None
    r = _exact_recip(c)
    return None if r is None else s[0] * UOp.const(c.dtype, r)


def _mulacc(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    if not (t.fma and u.dtype.is_float):
        return None
    for i in (0, 1):
        m = u.src[i]
        if m.op is Ops.MUL and m.dtype is u.dtype:
            return UOp(Ops.MULACC, u.dtype, (new[m.src[0]], new[m.src[1]], s[1 - i]), "fused")
    return None


def _pow_const(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    e = _const_int(u.src[1])
    if e is None or e < 0 or e > 64 or not u.dtype.is_int:
        return None  # floats keep pow(); a negative integer exponent is undefined
    x, out = s[0], None
    while True:  # square-and-multiply
        if e & 1:
            out = x if out is None else out * x
        e >>= 1
        if not e:
            break
        x = x * x
    return out if out is not None else UOp.const(u.dtype, 1)


# ---- logic ----------------------------------------------------------------------------
def _demorgan(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    a, b = s
    if a.op is Ops.NOT and b.op is Ops.NOT and a.dtype is b.dtype:
        inner = Ops.OR if u.op is Ops.AND else Ops.AND
        return UOp(inner, u.dtype, (a.src[0], b.src[0])).alu(Ops.NOT)
    return None


_NEGATE = {Ops.LT: Ops.GE, Ops.LE: Ops.GT, Ops.GT: Ops.LE, Ops.GE: Ops.LT}


def _not(u: UOp, s: tuple[UOp, ...], new: dict, t: Target) -> UOp | None:
    x = s[0]
    if x.op is Ops.NOT and x.dtype is u.dtype:
        return x.src[0]
    if x.op in (Ops.EQ, Ops.NE):
        return UOp(Ops.NE if x.op is Ops.EQ else Ops.EQ, x.dtype, x.src)
    if x.op not in _NEGATE:
        return None
    a, b = x.src
    if not ((a.dtype.is_int or a.dtype.is_bool) and (b.dtype.is_int or b.dtype.is_bool)):
        return None  # floats: NaN makes !(a<b) differ from a>=b
    op = _NEGATE[x.op]  # !(a OP b) == a NEG(OP) b on integers
    # canonical forms with LT: a >= b  <=>  b < a+1 / b-1 < a when the constant allows it
    if op is Ops.GE:  # !(a < b): (b-1) < a
        cb = _const_int(b)
        if cb is not None and cb > b.dtype.scalar().min:
            return UOp(Ops.LT, x.dtype, (UOp.const(b.dtype, cb - 1), a))
        ca = _const_int(a)
        if ca is not None:  # !(c < b') ... here a is const: b <= c  ->  b < c+1
            if ca < a.dtype.scalar().max:
                return UOp(Ops.LT, x.dtype, (b, UOp.const(a.dtype, ca + 1)))
        return UOp(Ops.LE, x.dtype, (b, a))
    if op is Ops.LT:  # !(a >= b): a < b
        return UOp(Ops.LT, x.dtype, (a, b))
    if op is Ops.GT:  # !(a <= b): b < a
        return UOp(Ops.LT, x.dtype, (b, a))
    return UOp(Ops.LE, x.dtype, (a, b))  # !(a > b): a <= b


DECOMPOSITIONS: list[Decomposition] = [
    Decomposition("idiv_const", "x // c -> x >> k | (x*m) >> s [- (x >> (n-1))]",
                  frozenset({Ops.IDIV}), _idiv_const),
    Decomposition("mod_const", "x % c -> x & (c-1) | x - (x // c)*c",
                  frozenset({Ops.MOD}), _mod_const),
    Decomposition("floor_divmod", "floordiv(x, 2**k) -> x >> k; floormod(x, 2**k) -> x & "
                  "(2**k-1); x // y, x % y where x, y have one sign; else q = x // y, r = "
                  "x - q*y, where(r != 0 and sign(r) != sign(y), q - 1 | r + y, q | r)",
                  frozenset({Ops.FLOORDIV, Ops.FLOORMOD}), _floor_divmod),
    Decomposition("mulacc", "a*b + c -> mulacc(a, b, c)", frozenset({Ops.ADD}), _mulacc),
    Decomposition("mul_const", "x * -1 -> -x; x * 2**k -> x << k", frozenset({Ops.MUL}),
                  _mul_const),
    Decomposition("fdiv_const", "x / c -> x * (1/c) when 1/c is exact", frozenset({Ops.FDIV}),
                  _fdiv_const),
    Decomposition("pow_const", "x ** c -> x * x * .. (integers, 0 <= c <= 64)",
                  frozenset({Ops.POW}), _pow_const),
    Decomposition("demorgan", "!a & !b -> !(a | b); !a | !b -> !(a & b)",
                  frozenset({Ops.AND, Ops.OR}), _demorgan),
    Decomposition("not_cmp", "!!x -> x; !(x < c) -> (c-1) < x; !(a == b) -> a != b",
                  frozenset({Ops.NOT}), _not),
]


def decompose(graph: UOp, target: Target | None = None,
              stats: Counter | None = None) -> UOp:
    """Apply the late decompositions once, bottom-up; ``stats`` counts rule hits."""
    target = target or Target()
    by_op: dict[Ops, list[Decomposition]] = {}
    for d in DECOMPOSITIONS:
        for op in d.ops:
            by_op.setdefault(op, []).append(d)
    new: dict[UOp, UOp] = {}
    for u in graph.toposort():
        s = tuple(new[x] for x in u.src)
        out = None
        for d in by_op.get(u.op, ()):
            out = d.fn(u, s, new, target)
            if out is not None:
                if stats is not None:
                    stats[d.name] += 1
                break
        if out is None:
            out = u if s == u.src else u.replace(src=s)
        new[u] = out
    return new[graph]


_ = dtypes
