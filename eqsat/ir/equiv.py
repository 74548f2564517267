"""Equivalence checking of two expressions by evaluation.

``check_equivalent(a, b)`` compares the input ``a`` and a candidate ``b`` on
every assignment of their leaves when the joint domain is small (at most
``max_exhaustive`` points), otherwise on the corners of the domain plus random
points (biased to the interesting values of each leaf: its ends, 0, +-1, the
graphs' integer constants +-1, and the integers where a cast to a float starts
rounding or overflows).

Rules (``data/corpus/README.md``): ``a`` and ``b`` are equal where both are Invalid or
both have the same value; points where ``a`` is undefined (a division by zero,
a bad shift, a range value not below its end, a bitcast of a NaN an op computed)
are skipped, since the input promises nothing there; ``b`` undefined where ``a``
is defined is a difference. Vectors are compared lane by lane: a lane of ``a``
that is undefined or Invalid hides no other lane.
The leaves are the union of both graphs' vars, ranges and specials (by env
key: a var's name, ``R<id>``), each over its ``[vmin, vmax]``; a leaf in both
takes ``a``'s bounds.

Floats. The root values are compared bit for bit, except that a NaN ``a`` computes
equals every NaN (docs/format.md, "Floats": the sign and payload of a NaN an op
computes are unspecified, and only a bitcast reads them; a bitcast of such a NaN is
undefined, one of a NaN loaded or made by a bitcast is compared bit for bit). A NaN
``a`` keeps (read from memory or made by a bitcast, through ops that copy it) promises
its bits, as a store of it would: ``b`` must have a NaN of the same bits there, and a
NaN ``b`` computes does not (the points where both are NaN are run again by the
reference interpreter, which marks the NaNs that keep their bits: ``kept_nan_bits``).
So ``-0.0`` and ``0.0`` differ at the root, since the root's value is
what is stored, returned or compared by whatever uses it, and a later ``1/x``
tells them apart; a signed zero inside the graph differs only where the ops
after it carry the difference to the root (``(x + 0.0) < 1.0`` is
``x < 1.0``). Each float op rounds to its dtype (f16, f32, f64: the
interpreter's IEEE semantics). The float inputs an expression can have are
casts of its integer leaves and loads: graphs may read buffers (``(load
(index (buffer ...) i))``; two kernels, sinks of stores, are compared by running
them: :mod:`eqsat.ir.kernel_equiv`),
whose elements are drawn afresh for every point (:class:`SampledMemory`), a
third of them from each element dtype's special values: 0, -0, inf, -inf,
NaN, +-1, the smallest normal and subnormal, the largest finite values and
values near the overflow edge (+-1e38 and +-3.4e38 for f32, +-6e4 for f16),
and squares' overflow edges; integers take their dtype's extremes. A graph
that loads is never checked exhaustively.

A difference found by the vectorized evaluator is confirmed with the reference
interpreter (``eqsat.ir.interp``) before it is reported; with loads, the
counterexample lists the buffer elements either graph read (``buffers``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.interp import (
    INVALID,
    EvalError,
    Undefined,
    evaluate,
    evaluate_lanes,
    kept_nan_bits,
    leaf_key,
    vectorizable,
)
from eqsat.ir.ops import Ops
from eqsat.ir.semantics import round_float
from eqsat.ir.uop import UOp, live_ranges

__all__ = ["check_equivalent", "Equivalence", "SampledMemory", "domain_of", "same_value"]

CORNER_CAP = 4096
_SLOW_EXHAUSTIVE = 8192
_SLOW_SAMPLES = 2000
#: effects and memory the checker cannot give contents to: kernels are for run_kernel
_EFFECT_OPS = frozenset({Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.STORE, Ops.END, Ops.SINK,
                         Ops.AFTER})


@dataclass
class Equivalence:
    """The outcome of :func:`check_equivalent`; truthy iff equivalent.

    ``points``: assignments compared (undefined points of ``a`` not counted;
    ``skipped`` counts those; a vector's point counts when a lane of ``a`` is
    defined). ``counterexample``: ``{leaf key: value}`` of a differing assignment,
    with the two values in ``a_value``/``b_value`` (``INVALID``, or an ``Undefined``
    carrying its cause, where so; for vectors, the first differing lane's, which
    ``reason`` names), and
    ``buffers``: ``{slot: {element: value}}`` the graphs read there.
    ``reason`` says what differs.

    Kernels (:func:`eqsat.ir.kernel_equiv.check_kernels`): ``points`` counts the draws
    compared; a difference names its ``element`` (buffer slot, element) and gives the
    draw's buffers before the runs (``inputs``, by slot). ``stopped`` says why checking
    stopped before the last draw (the work budget), empty when it did not.
    """

    equivalent: bool
    exhaustive: bool
    points: int
    counterexample: dict[str, int] | None = None
    a_value: Any = None
    b_value: Any = None
    skipped: int = 0
    reason: str = ""
    domain: dict[str, tuple[int, int]] = field(default_factory=dict)
    buffers: dict[int, dict[int, Any]] = field(default_factory=dict)
    element: tuple[int, int] | None = None
    inputs: list[np.ndarray] | None = field(default=None, repr=False,
                                                  compare=False)
    stopped: str = ""

    def __bool__(self) -> bool:
        return self.equivalent

    def __repr__(self) -> str:
        if self.equivalent:
            how = "exhaustively" if self.exhaustive else "on samples"
            stop = f", stopped={self.stopped!r}" if self.stopped else ""
            return f"Equivalence(equivalent=True, {how}, points={self.points}{stop})"
        mem = f", buffers={self.buffers}" if self.buffers else ""
        at = f", element={self.element}" if self.element is not None else ""
        return (f"Equivalence(equivalent=False, counterexample={self.counterexample}{mem}"
                f"{at}, a={self.a_value!r}, b={self.b_value!r}, reason={self.reason!r})")


def domain_of(*graphs: UOp) -> dict[str, tuple[int, int]]:
    """``{leaf key: (lo, hi)}`` over the leaves of ``graphs``; the first graph's
    bounds win for a key that appears in several."""
    dom: dict[str, tuple[int, int]] = {}
    for g in graphs:
        for leaf in g.leaves():
            key = leaf_key(leaf)
            if key in dom:
                continue
            lo, hi = leaf.vmin, leaf.vmax
            if isinstance(lo, float) or isinstance(hi, float):
                raise ValueError(f"leaf {key} has unbounded values [{lo}, {hi}]")
            dom[key] = (int(lo), int(hi))
    return dom


def _compared_domain(a: UOp, b: UOp) -> dict[str, tuple[int, int]]:
    """The leaves' values the checker compares at: the leaves ``a`` reads as inputs (its
    vars and specials, the ranges no reduction of it binds) over their bounds, then those
    ``b`` reads as inputs, then every other leaf. A range a reduction binds is no input
    (the reduction gives it its values), so its empty domain (END 0 or less) must not
    empty the set of points: a leaf after ``a``'s inputs takes the one value 0 when its
    domain is empty (``b`` reading such a range as an input is then undefined there)."""
    dom = domain_of(*_inputs(a))
    for key, (lo, hi) in domain_of(*_inputs(b), a, b).items():
        dom.setdefault(key, (lo, hi) if lo <= hi else (0, 0))
    return dom


def _inputs(g: UOp) -> list[UOp]:
    """The leaves ``g`` reads as inputs: its vars and specials, the ranges it leaves open."""
    live = live_ranges(g)[g]
    return [u for u in g.leaves() if u.op is not Ops.RANGE or u in live]


# integers where a cast to f16/f32/f64 stops being exact or overflows: the first integer
# rounded, the largest finite value, the first integer that rounds to infinity
_FLOAT_EDGES = tuple(v for e in (2**11 + 1, 65504, 65520, 2**24 + 1, 2**53 + 1,
                                 2**128 - 2**104, 2**128 - 2**103, 2**1024 - 2**970,
                                 2**1024 - 2**969)
                     for v in (e, -e))


def _interesting(lo: int, hi: int, consts: frozenset[int] = frozenset()) -> list[int]:
    """A leaf's values worth trying: its ends, 0, +-1, each integer constant of
    the graphs (+-1), where comparisons and divisions change behaviour, and the
    integers where a cast to a float rounds or overflows."""
    vals = {lo, hi, lo + 1, hi - 1, 0, 1, -1, (lo + hi) // 2, *_FLOAT_EDGES}
    for k in consts:
        vals.update((k - 1, k, k + 1, -k))
    return sorted(v for v in vals if lo <= v <= hi)


def graph_constants(*graphs: UOp, cap: int = 256) -> frozenset[int]:
    """The graphs' integer constants, and the integers around their finite float ones
    (a cast leaf compared with ``2.5`` changes at 2 and 3)."""
    out: set[int] = set()

    def add(v: Any) -> None:
        if isinstance(v, bool):
            return
        if isinstance(v, int):
            out.add(v)
        elif isinstance(v, float) and math.isfinite(v) and abs(v) < 2**62:
            out.update((math.floor(v), math.ceil(v)))

    for g in graphs:
        for u in g.toposort():
            if u.op is Ops.CONST:
                add(u.arg)
            elif u.op is Ops.VCONST:
                for v in u.arg:
                    add(v)
    return frozenset(sorted(out, key=abs)[:cap])


def corner_count(dom: dict[str, tuple[int, int]]) -> int:
    """How many corners :func:`sample_points` draws first: every combination of each
    leaf's ends, at most ``CORNER_CAP``."""
    return min(math.prod(len({lo, hi}) for lo, hi in dom.values()), CORNER_CAP)


def sample_points(dom: dict[str, tuple[int, int]], samples: int, seed: int,
                  max_exhaustive: int, consts: frozenset[int] = frozenset()
                  ) -> tuple[dict[str, np.ndarray], int, bool]:
    """Columns of the leaves' values: every point of a domain of at most
    ``max_exhaustive`` points (then ``True``), else the corners
    (:func:`corner_count` rows) and then ``samples`` random points."""
    names = list(dom)
    sizes = [max(0, hi - lo + 1) for lo, hi in dom.values()]  # (an empty loop's: none)
    total = math.prod(sizes)
    if not names:  # no leaves: the one point, however few points were asked for
        return {}, 1, True
    if total <= max_exhaustive:
        grid = np.unravel_index(np.arange(total, dtype=np.int64), sizes)
        return ({k: _as_col(g.astype(object) + dom[k][0])
                 for k, g in zip(names, grid, strict=True)}, total, True)
    rng = np.random.default_rng(seed)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in names}
    # corners: every combination of each leaf's ends (random ones beyond the cap)
    ends = [sorted({lo, hi}) for lo, hi in dom.values()]
    if math.prod(len(e) for e in ends) <= CORNER_CAP:
        combos = np.array(list(itertools.product(*ends)), dtype=object)
        for j, k in enumerate(names):
            cols[k].append(_as_col(combos[:, j]))
    else:
        for k, e in zip(names, ends, strict=True):
            cols[k].append(_as_col(np.array(e, dtype=object)[rng.integers(0, len(e),
                                                                           CORNER_CAP)]))
    # random points: each leaf uniform or one of its interesting values
    for k in names:
        lo, hi = dom[k]
        special = np.array(_interesting(lo, hi, consts), dtype=object)
        pick = rng.random(samples) < 0.35
        if hi - lo < 2**62:
            uni = lo + rng.integers(0, hi - lo + 1, samples, dtype=np.int64).astype(object)
        else:
            uni = np.array([lo + int(rng.integers(0, 2**62)) * (hi - lo) // 2**62
                            for _ in range(samples)], dtype=object)
        sp = special[rng.integers(0, len(special), samples)]
        cols[k].append(_as_col(np.where(pick, sp, uni)))
    out = {k: np.concatenate([_obj_or_int(c) for c in v]) for k, v in cols.items()}
    out = {k: _as_col(v) for k, v in out.items()}
    n = len(next(iter(out.values())))
    return out, n, False


def _obj_or_int(a: np.ndarray) -> np.ndarray:
    return a.astype(object)


def _as_col(a: np.ndarray) -> np.ndarray:
    """int64 when every value fits, else an object array of Python ints."""
    if a.dtype != object:
        return a.astype(np.int64)
    if len(a) == 0 or (max(a) < 2**62 and min(a) > -(2**62)):
        return a.astype(np.int64)
    return a


# ---------------------------------------------------------------------------
# buffer contents
_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bool": np.bool_,
       "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
       "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
_M64 = (1 << 64) - 1


def array_dtype(dt: DType) -> np.dtype:
    """The numpy dtype of an array holding buffer elements of ``dt`` (bf16: f32's)."""
    return np.dtype(np.float32 if dt.name == "bf16" else _NP[dt.name])


def _float_specials(npdt: type) -> np.ndarray:
    fi = np.finfo(npdt)
    big = float(fi.max)
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, -3.0,
            float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal), float(fi.eps),
            big, -big, big / 2, -big / 3, big / 10, -big / 10,   # near the overflow edge
            math.sqrt(big) * 1.5, -math.sqrt(big) * 1.5,        # a square overflows
            2.0 ** (fi.nmant + 1), 2.0 ** (fi.nmant + 1) + 2]   # integers stop being exact
    if npdt is np.float32:
        vals += [1e38, -1e38, 3.4e38, -3.4e38]
    if npdt is np.float16:
        vals += [6e4, -6e4, 300.0, -300.0]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=np.float64).astype(npdt)


def _int_specials(npdt: type) -> np.ndarray:
    ii = np.iinfo(npdt)
    vals = {0, 1, -1, 2, 3, 7, 8, -8, ii.min, ii.max, ii.min + 1, ii.max - 1, ii.max // 2 + 1}
    return np.array(sorted(v for v in vals if ii.min <= v <= ii.max), dtype=npdt)


class SampledMemory:
    """Buffer contents for :func:`check_equivalent`: every element of every buffer is a
    pure function of ``(seed, point, slot, element)``, drawn afresh for each point (no
    array is built: graphs may address large buffers). A buffer slot takes the
    element dtype and size of its first declaration in ``graphs``.

    Three elements in eight are a special value of their dtype (see the module doc),
    the others random: floats of random sign with exponents in [-20, 20] (one in
    eight a small integer), integers over their dtype's whole range, bools at random.
    """

    def __init__(self, graphs: Iterable[UOp], seed: int = 0) -> None:
        self.decl: dict[int, UOp] = {}
        for g in graphs:
            for u in g.toposort():
                if u.op is Ops.DEFINE_GLOBAL and u.arg[0] not in self.decl:
                    self.decl[u.arg[0]] = u
        self.seed = seed
        self._specials: dict[str, np.ndarray] = {}

    def __bool__(self) -> bool:
        return bool(self.decl)

    def __repr__(self) -> str:
        bufs = ", ".join(f"slot {s} {u.dtype.base()}[{u.arg[1]}]"
                         for s, u in sorted(self.decl.items()))
        return f"<SampledMemory seed={self.seed}: {bufs or 'no buffers'}>"

    def _hash(self, slot: int, offsets: np.ndarray, points: np.ndarray) -> np.ndarray:
        """splitmix64 of the element's coordinates."""
        salt = np.uint64((slot * 0x165667B19E3779F9 + self.seed * 0x27D4EB2F165667C5) & _M64)
        z = (points.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             ^ offsets.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F) ^ salt)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    def read(self, buffer: UOp, offsets: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The elements at ``offsets`` of ``buffer`` in the memories of ``points`` (a bf16
        buffer's as f32 values, each an f32 element rounded once to bf16)."""
        slot = buffer.arg[0]
        dt: DType = self.decl.get(slot, buffer).dtype.base().scalar()
        if dt.name == "bf16":
            f32 = self._read(slot, dtypes.f32, offsets, points)
            return np.array([round_float(dt, float(v)) for v in f32], dtype=np.float32)
        return self._read(slot, dt, offsets, points)

    def _read(self, slot: int, dt: DType, offsets: np.ndarray, points: np.ndarray
              ) -> np.ndarray:
        npdt = _NP[dt.name]
        h = self._hash(slot, np.asarray(offsets), np.asarray(points))
        if dt.is_bool:
            return (h & np.uint64(1)).astype(bool)
        sp = self._specials.get(dt.name)
        if sp is None:
            sp = self._specials[dt.name] = (_float_specials(npdt) if dt.is_float
                                            else _int_specials(npdt))
        special = sp[((h >> np.uint64(8)) % np.uint64(len(sp))).astype(np.int64)]
        if dt.is_float:
            frac = ((h >> np.uint64(12)) & np.uint64((1 << 40) - 1)).astype(np.float64) / 2**40
            exp = ((h >> np.uint64(52)) % np.uint64(41)).astype(np.float64) - 20
            sign = np.where((h >> np.uint64(3)) & np.uint64(1), -1.0, 1.0)
            small = ((h >> np.uint64(12)) % np.uint64(17)).astype(np.float64) - 8
            rnd = np.where((h >> np.uint64(4)) % np.uint64(8) == 0, small,
                           sign * (1 + frac) * np.exp2(exp))
            with np.errstate(over="ignore"):
                rnd = rnd.astype(npdt)
        else:
            bits = np.dtype(npdt).itemsize * 8
            rnd = (h >> np.uint64(64 - bits)).astype(np.dtype(f"u{bits // 8}")).view(npdt)
        return np.where(h % np.uint64(8) < 3, special, rnd).astype(npdt)

    def arrays(self, point: int) -> list[Any]:
        """The buffers of one point, by slot, for the reference interpreter."""
        n = max(self.decl, default=-1) + 1
        return [_LazyBuffer(self, self.decl[s], point) if s in self.decl else None
                for s in range(n)]


class _LazyBuffer:
    """One point's buffer, read element by element (``flat[i]``) and remembered."""

    def __init__(self, memory: SampledMemory, buffer: UOp, point: int) -> None:
        self.memory, self.buffer, self.point = memory, buffer, point
        self.dtype = array_dtype(buffer.dtype.base().scalar())
        self.size = buffer.arg[1]
        self.flat = self
        self.seen: dict[int, Any] = {}

    def __getitem__(self, i: int) -> np.generic:
        v = self.memory.read(self.buffer, np.array([i]), np.array([self.point]))[0]
        self.seen[int(i)] = v.item()
        return v


def _value_at(g: UOp, env: dict[str, int], buffers: Sequence[Any] | None) -> Any:
    try:
        return evaluate(g, env, buffers=buffers)
    except EvalError as e:
        return Undefined(str(e))


def _differ(va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    """Lanes whose values differ: floats bit for bit but any NaN equals any NaN (the bits
    a NaN of ``a`` keeps are compared after, :func:`_unkept_bits`)."""
    if va.dtype == object or vb.dtype == object:
        return np.array([not same_value(x, y) for x, y in zip(va, vb, strict=True)], dtype=bool)
    if va.dtype.kind == "f" and vb.dtype.kind == "f":
        same = (va == vb) & (np.signbit(va) == np.signbit(vb))
        return ~(same | (np.isnan(va) & np.isnan(vb)))
    return va != vb


def _is_nan(v: np.ndarray) -> np.ndarray:
    """The NaN lanes of a column of values."""
    if v.dtype.kind == "f":
        return np.isnan(v)
    if v.dtype == object:
        return np.array([isinstance(x, float) and math.isnan(x) for x in v], dtype=bool)
    return np.zeros(len(v), dtype=bool)


def _unkept_bits(a: UOp, b: UOp, cols: dict[str, np.ndarray], nans: list[np.ndarray],
                 memory: SampledMemory | None) -> list[np.ndarray]:
    """Per lane, the points where ``a``'s NaN keeps bits (read from memory or made by a
    bitcast: the input promises them, docs/format.md "Floats") and ``b``'s NaN does not
    have them (a NaN ``b`` computes promises none). ``nans``: per lane, the points where
    both are NaN; only those are run again, by the reference interpreter, which marks
    the NaNs that keep their bits."""
    out = [np.zeros(len(m), dtype=bool) for m in nans]
    both = np.logical_or.reduce(nans)
    if not both.any() or not _may_keep_nan(a):
        return out
    points = np.flatnonzero(both)
    kept_a = kept_nan_bits(a, cols, points, memory=memory)
    keeps = np.array([any(ka[j] is not None for ka in kept_a) for j in range(len(points))],
                     dtype=bool)
    if not keeps.any():
        return out
    points, kept_a = points[keeps], [[x for x, t in zip(ka, keeps, strict=True) if t]
                                     for ka in kept_a]
    kept_b = kept_nan_bits(b, cols, points, memory=memory)
    for k, (ka, kb) in enumerate(zip(kept_a, kept_b, strict=True)):
        broken = [x is not None and x != y for x, y in zip(ka, kb, strict=True)]
        out[k][points] = np.array(broken, dtype=bool) & nans[k][points]
    return out


#: the ops that copy a value (a NaN through them keeps its bits), by the operands copied
_COPIES = {Ops.WHERE: slice(1, 3), Ops.GEP: slice(0, None), Ops.VECTORIZE: slice(0, None),
           Ops.CAT: slice(0, None), Ops.AFTER: slice(0, 1)}


def _may_keep_nan(g: UOp) -> bool:
    """Whether a NaN of ``g`` may keep its bits: a float LOAD or BITCAST reaches the root
    through ops that copy a value only (any other op computes its NaN)."""
    stack, seen = [g], set()
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        if u.op in (Ops.LOAD, Ops.BITCAST) and u.dtype.is_float:
            return True
        if u.op in _COPIES:
            stack.extend(u.src[_COPIES[u.op]])
    return False


def same_value(x: Any, y: Any) -> bool:
    """Two values (of the reference interpreter) are the same as the checker compares
    them: floats bit for bit but any NaN for any NaN, bools only with bools, vectors
    lane by lane."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(y, np.generic):
        y = y.item()
    if isinstance(x, float) and isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(same_value(p, q) for p, q in zip(x, y, strict=True))
    if type(x) is bool or type(y) is bool:
        return type(x) is type(y) and x == y
    return x == y


def check_equivalent(a: UOp, b: UOp, *, samples: int = 20_000, seed: int = 0,
                     max_exhaustive: int = 100_000) -> Equivalence:
    """Compare ``a`` (the input) with ``b`` on all or many assignments.

    Exhaustive when the joint domain has at most ``max_exhaustive`` points and the
    graphs read no buffer; otherwise all corners (at most 4096) plus ``samples``
    random points drawn with ``seed`` (loads: each point with fresh buffer
    contents). Graphs the vectorized evaluator cannot run (vectors, bf16,
    bitcasts) are evaluated point by point by the reference interpreter, with at
    most 8192 exhaustive / 2000 sampled points. See the module docstring for
    Invalid/undefined handling and float comparison. Two kernels (sinks of stores)
    are compared by :func:`eqsat.ir.kernel_equiv.check_kernels`, on at most
    ``samples`` draws; a kernel and an expression raise ``ValueError``.
    """
    for g, name in ((a, "a"), (b, "b")):
        if not isinstance(g, UOp):
            raise TypeError(f"check_equivalent expects UOps, but {name} is a "
                            f"{type(g).__name__}")
    from eqsat.ir.kernel_equiv import KERNEL_DRAWS, check_kernels, is_kernel

    kernels = (is_kernel(a), is_kernel(b))
    if all(kernels):
        return check_kernels(a, b, draws=min(samples, KERNEL_DRAWS), seed=seed)
    for g, name, kernel in ((a, "a", kernels[0]), (b, "b", kernels[1])):
        eff = next((u for u in g.toposort() if u.op in _EFFECT_OPS), None)
        if eff is not None:
            other = "b" if name == "a" else "a"
            why = (f" and {other} is an expression" if kernel else
                   ", which only a kernel (a sink of stores) may have")
            raise ValueError(f"check_equivalent compares two expressions or two kernels, "
                             f"but {name} has a {eff.op.name} node{why}")
    dom = _compared_domain(a, b)
    if a.dtype is not b.dtype:
        return Equivalence(False, False, 0, reason=f"dtypes differ: {a.dtype} vs {b.dtype}",
                           domain=dom)
    if not (vectorizable(a) and vectorizable(b)):
        # vectors and the like run point by point in the reference interpreter: fewer points
        max_exhaustive, samples = min(max_exhaustive, _SLOW_EXHAUSTIVE), min(samples, _SLOW_SAMPLES)
    memory = SampledMemory((a, b), seed)
    cols, n, exhaustive = sample_points(dom, samples, seed, max_exhaustive, graph_constants(a, b))
    if memory and exhaustive:
        # every assignment of the leaves, each with several draws of the buffers
        reps = max(1, samples // max(n, 1))  # (n is 0 where a has no value anywhere)
        cols = {k: np.tile(c, reps) for k, c in cols.items()}
        n, exhaustive = n * reps, False
    mem = memory if memory else None
    lanes_a = evaluate_lanes(a, cols, n=n, memory=mem)
    lanes_b = evaluate_lanes(b, cols, n=n, memory=mem)
    bads, defined, nans = [], np.zeros(n, dtype=bool), []
    for (va, ia, ua), (vb, ib, ub) in zip(lanes_a, lanes_b, strict=True):
        valid = ~ua & ~ia & ~ib
        bads.append(~ua & (ub | (ia != ib) | (valid & _differ(va, vb))))
        nans.append(valid & ~ub & _is_nan(va) & _is_nan(vb))
        defined |= ~ua
    unkept = _unkept_bits(a, b, cols, nans, mem)
    bads = [x | y for x, y in zip(bads, unkept, strict=True)]
    bad = np.logical_or.reduce(bads)
    points = int(defined.sum())
    skipped = n - points
    if not bad.any():
        return Equivalence(True, exhaustive, points, skipped=skipped, domain=dom)
    i = int(np.flatnonzero(bad)[0])
    k = next(k for k, lane in enumerate(bads) if lane[i])
    env = {key: int(c[i]) for key, c in cols.items()}
    bufs = memory.arrays(i) if memory else None
    ga, gb = (a.gep(k), b.gep(k)) if len(bads) > 1 else (a, b)
    x, y = _value_at(ga, env, bufs), _value_at(gb, env, bufs)
    if unkept[k][i]:
        reason = "b's NaN does not keep the bits of a's (read from memory or a bitcast)"
    elif isinstance(x, Undefined) or same_value(x, y):
        (va, ia, ua), (vb, ib, ub) = lanes_a[k], lanes_b[k]
        raise RuntimeError(f"evaluate_many and evaluate disagree at {env}: a={x!r}, b={y!r} "
                           f"(vectorized a={va[i]!r} invalid={ia[i]} undefined={ua[i]}, "
                           f"b={vb[i]!r} invalid={ib[i]} undefined={ub[i]})")
    elif isinstance(y, Undefined):
        reason = "b is undefined where a is defined"
    elif (x is INVALID) != (y is INVALID):
        reason = "Invalid on different assignments"
    else:
        reason = "values differ"
    if len(bads) > 1:
        reason = f"lane {k}: {reason}"
    read = {s: dict(sorted(buf.seen.items())) for s, buf in enumerate(bufs or ())
            if buf is not None and buf.seen}
    return Equivalence(False, exhaustive, points, counterexample=env, a_value=x, b_value=y,
                       skipped=skipped, reason=reason, domain=dom, buffers=read)
