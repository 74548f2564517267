"""Kernel graphs for tests, notebooks and benchmarks.

Every builder returns a kernel in the IR: ``SINK(END(STORE(INDEX(out, i), value),
ranges...))`` with the output buffer in slot 0 and the inputs in slots 1, 2, ...
(``DEFINE_GLOBAL`` nodes, flat, row-major). The load addresses are produced the
way a tensor compiler produces them (tinygrad's ShapeTracker / rangeify): a
:class:`View` is a stack of layers (shape, strides, offset, mask); the loop
indices address the top layer, and each reshape that could not be expressed by
strides adds a layer whose flat index is *unflattened* into the layer below with
``//`` and ``%`` (tinygrad's ``unravel``), re-flattened by that layer's strides,
and so on down to the buffer. Padding masks become
``(where valid idx (invalid))``. Nothing is simplified here: that is the
optimizer's job.

    >>> from lowering.builders import View, make
    >>> View.contiguous((10, 6)).permute((1, 0)).shape
    (6, 10)
    >>> k = make("permute", shape=(4, 6), order=(1, 0))
    >>> k.output_shape, k.input_shapes
    ((6, 4), [(4, 6)])

``BUILDERS`` maps a name to a :class:`BuilderSpec` (its builder, numpy reference,
shapes, small test cases and a large benchmark case); :func:`make` bundles one
kernel with its shapes and reference; :func:`reference` runs a numpy equivalent.

Loops: ``loops="nd"`` (default) gives one RANGE per output axis, as a tensor
compiler emits; ``loops="flat"`` gives a single RANGE over all output elements,
whose indices are themselves unflattened with ``//``/``%`` (e.g. the transpose of
the spec), and cannot be division-free for a permute; a tuple of tile sizes
(``loops=(128, 16)``) gives tiled loops, outer tiles first, as a tensor compiler
schedules a transpose for locality: 2-D cache blocking over every output axis, the
loops ordered outer tiles, then the tile's axes, the innermost over the contiguous
output axis (``for o0: for o1: for i0: for i1: out[(o0*t0+i0)*n1 + o1*t1+i1] = ...``).
A :class:`Tiling` adds a register tile (``upcast``: unrolled lanes, one STORE
each, as a tensor compiler's UPCAST) and a loop order; ``loops="auto"`` lets a
copy pick one (:func:`auto_tiling`: a 4x4 register tile for a transpose, so
that the C compiler vectorizes it), and means ``"nd"`` for other kernels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = [
    "BuildError", "View", "Tiling", "auto_tiling", "BuiltKernel", "BuilderSpec", "BUILDERS",
    "make", "reference",
    "apply_numpy", "unravel", "contiguous_strides",
    "elementwise", "unary", "binary", "copy", "permute", "pad", "shrink", "flip", "stride",
    "expand", "reshape", "reduce", "matmul", "conv2d", "pool2d", "maxpool2d", "avgpool2d",
    "cumsum", "load", "kernel", "UNARY_OPS", "BINARY_OPS",
]

Shape = tuple[int, ...]
Mask = tuple[tuple[int, int], ...]
Chain = Sequence[tuple[str, Any]]


class BuildError(ValueError):
    """A builder or view called with arguments that do not describe a valid kernel."""


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _shape(shape: Sequence[int], what: str = "shape") -> Shape:
    try:
        out = tuple(int(s) for s in shape)
    except TypeError as e:
        raise BuildError(f"{what} must be a sequence of ints, got {shape!r}") from e
    if any(s < 0 for s in out) or any(s != x for s, x in zip(out, shape, strict=True)):
        raise BuildError(f"{what} must hold non-negative ints, got {shape!r}")
    return out


def contiguous_strides(shape: Sequence[int]) -> Shape:
    """Row-major strides of ``shape`` (0 for size-1 axes, as tinygrad canonicalizes)."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc if s != 1 else 0)
        acc *= s
    return tuple(reversed(out))


# ---------------------------------------------------------------------------
# View
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class View:
    """One layer of a strided, masked view, over ``parent`` or over a buffer.

    ``shape``/``strides``/``offset``/``mask`` describe how an index tuple of this
    layer becomes a flat position ``offset + sum(i*st)`` in the space below:
    the buffer (``parent is None``, ``size`` elements) or the row-major
    elements of ``parent.shape``. ``mask[d] = (lo, hi)`` marks ``lo <= i < hi``
    as valid (None: everything valid). Methods return new views; a reshape that
    strides cannot express stacks a new layer (``parent=self``).
    """

    shape: Shape
    strides: Shape
    offset: int = 0
    mask: Mask | None = None
    parent: View | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        shape = _shape(self.shape)
        try:
            strides = tuple(int(s) for s in self.strides)
        except TypeError as e:
            raise BuildError(f"strides must be ints, got {self.strides!r}") from e
        if len(strides) != len(shape):
            raise BuildError(f"{len(strides)} strides {strides} for shape {shape}")
        mask = self.mask
        if mask is not None:
            try:
                mask = tuple((int(lo), int(hi)) for lo, hi in mask)
            except (TypeError, ValueError) as e:
                raise BuildError(f"mask must be (lo, hi) pairs, got {self.mask!r}") from e
            if len(mask) != len(shape):
                raise BuildError(f"mask {mask} does not match shape {shape}")
            if any(not 0 <= lo <= s or not 0 <= hi <= s
                   for (lo, hi), s in zip(mask, shape, strict=True)):
                raise BuildError(f"mask {mask} outside shape {shape}")
            if any(lo >= hi for lo, hi in mask):  # nothing valid: canonical empty view
                mask = tuple((0, 0) for _ in shape)
                strides, off = (0,) * len(shape), 0
                object.__setattr__(self, "offset", off)
            elif all(m == (0, s) for m, s in zip(mask, shape, strict=True)):
                mask = None
        strides = tuple(0 if s == 1 else st for s, st in zip(shape, strides, strict=True))
        if self.parent is not None and not isinstance(self.parent, View):
            raise BuildError(f"parent must be a View, got {type(self.parent).__name__}")
        below = math.prod(self.parent.shape) if self.parent is not None else self.size
        if below is None:
            raise BuildError("a view over a buffer needs its size")
        if self.size is not None and self.size != below:
            raise BuildError(f"size {self.size} does not match the parent's {below} elements")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "offset", int(self.offset))
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "size", int(below))
        lo, hi = self._address_range()
        if lo <= hi and (lo < 0 or hi >= below):
            raise BuildError(f"view {shape} strides {strides} offset {self.offset} mask {mask} "
                             f"addresses [{lo}, {hi}] outside the {below} elements below it")

    def _address_range(self) -> tuple[int, int]:
        """The lowest and highest position this layer reaches where valid (lo > hi: none)."""
        box = self.mask if self.mask is not None else tuple((0, s) for s in self.shape)
        if any(lo >= hi for lo, hi in box):
            return 1, 0
        lo = hi = self.offset
        for (b, e), st in zip(box, self.strides, strict=True):
            a, z = st * b, st * (e - 1)
            lo, hi = lo + min(a, z), hi + max(a, z)
        return lo, hi

    # ---- construction ----------------------------------------------------
    @staticmethod
    def contiguous(shape: Sequence[int]) -> View:
        """A row-major view of a buffer of ``prod(shape)`` elements."""
        shape = _shape(shape)
        return View(shape, contiguous_strides(shape), 0, None, None, math.prod(shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def buffer_size(self) -> int:
        """Elements of the buffer under the whole stack."""
        v = self
        while v.parent is not None:
            v = v.parent
        return v.size  # type: ignore[return-value]

    @property
    def layers(self) -> list[View]:
        """The stack, top (this layer) first, buffer layer last."""
        out, v = [], self
        while v is not None:
            out.append(v)
            v = v.parent
        return out

    def _with(self, shape: Shape, strides: Shape, offset: int, mask: Mask | None) -> View:
        return View(shape, strides, offset, mask, self.parent, None if self.parent else self.size)

    def _check_axes(self, n: int, what: str, arg: Any) -> None:
        if n != self.ndim:
            raise BuildError(f"{what} {arg!r} has {n} entries for a view of shape {self.shape}")

    # ---- movement ops (tinygrad semantics) ---------------------------------
    def _resize(self, arg: Sequence[tuple[int, int]], mask: Mask | None = None) -> View:
        offset = self.offset + sum(st * b for st, (b, _) in zip(self.strides, arg, strict=True))
        if self.mask is not None:
            moved = tuple((max(0, min(mx - b, e - b)), max(0, min(my - b, e - b)))
                          for (mx, my), (b, e) in zip(self.mask, arg, strict=True))
            mask = moved if mask is None else tuple(
                (max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(moved, mask, strict=True))
        return self._with(tuple(e - b for b, e in arg), self.strides, offset, mask)

    def pad(self, padding: Sequence[tuple[int, int]]) -> View:
        """Zero-pad: ``padding[d] = (before, after)``; the new cells are masked invalid."""
        padding = tuple((int(b), int(e)) for b, e in padding)
        self._check_axes(len(padding), "padding", padding)
        if any(b < 0 or e < 0 for b, e in padding):
            raise BuildError(f"negative padding {padding}")
        if all(b == 0 and e == 0 for b, e in padding):
            return self
        arg = tuple((-b, s + e) for s, (b, e) in zip(self.shape, padding, strict=True))
        mask = tuple((b, s + b) for s, (b, _) in zip(self.shape, padding, strict=True))
        return self._resize(arg, mask)

    def shrink(self, bounds: Sequence[tuple[int, int]]) -> View:
        """Keep ``bounds[d] = (begin, end)`` of every axis."""
        bounds = tuple((int(b), int(e)) for b, e in bounds)
        self._check_axes(len(bounds), "shrink", bounds)
        for s, (b, e) in zip(self.shape, bounds, strict=True):
            if not 0 <= b <= e <= s:
                raise BuildError(f"invalid shrink {bounds} of shape {self.shape}")
        return self._resize(bounds)

    def permute(self, order: Sequence[int]) -> View:
        """Reorder the axes: new axis ``d`` is old axis ``order[d]``."""
        order = tuple(int(a) for a in order)
        if sorted(order) != list(range(self.ndim)):
            raise BuildError(f"invalid permutation {order} of {self.ndim} axes")
        mask = tuple(self.mask[a] for a in order) if self.mask is not None else None
        return self._with(tuple(self.shape[a] for a in order),
                          tuple(self.strides[a] for a in order), self.offset, mask)

    def stride(self, steps: Sequence[int]) -> View:
        """Every ``|steps[d]|``-th element; a negative step also reverses the axis."""
        steps = tuple(int(m) for m in steps)
        self._check_axes(len(steps), "stride", steps)
        if any(m == 0 for m in steps):
            raise BuildError(f"stride steps must be non-zero, got {steps}")
        strides = tuple(st * m for st, m in zip(self.strides, steps, strict=True))
        shape = tuple(_ceildiv(s, abs(m)) for s, m in zip(self.shape, steps, strict=True))
        offset = self.offset + sum((s - 1) * st for s, st, m in
                                   zip(self.shape, self.strides, steps, strict=True) if m < 0)
        mask = None
        if self.mask is not None:
            mask = tuple((_ceildiv(mx if m > 0 else s - my, abs(m)),
                          _ceildiv(my if m > 0 else s - mx, abs(m)))
                         for (mx, my), s, m in zip(self.mask, self.shape, steps, strict=True))
        return self._with(shape, strides, offset, mask)

    def flip(self, axes: Sequence[int]) -> View:
        """Reverse the listed axes."""
        raw = tuple(int(a) for a in axes)
        if any(not -self.ndim <= a < self.ndim for a in raw):
            raise BuildError(f"invalid flip axes {raw} for {self.ndim} axes")
        axes = tuple(a % self.ndim for a in raw)
        if len(set(axes)) != len(axes):
            raise BuildError(f"invalid flip axes {raw}: repeated axis")
        return self.stride(tuple(-1 if d in axes else 1 for d in range(self.ndim)))

    def expand(self, shape: Sequence[int]) -> View:
        """Broadcast size-1 axes to ``shape`` (stride 0)."""
        shape = _shape(shape)
        self._check_axes(len(shape), "expand", shape)
        if any(s != ns and s != 1 for s, ns in zip(self.shape, shape, strict=True)):
            raise BuildError(f"cannot expand {self.shape} to {shape}")
        mask = None
        if self.mask is not None:
            mask = tuple(((0, 0) if m != (0, 1) else (0, ns)) if s != ns else m
                         for m, s, ns in zip(self.mask, self.shape, shape, strict=True))
        return self._with(shape, self.strides, self.offset, mask)

    def reshape(self, shape: Sequence[int]) -> View:
        """A new shape of the same elements, row-major.

        Stacks a contiguous layer over this one (rangeify style): its flat index
        is unflattened into this layer with ``//``/``%``.
        """
        shape = _shape(shape)
        if math.prod(shape) != self.numel:
            raise BuildError(f"cannot reshape {self.shape} ({self.numel} elements) to {shape}")
        if shape == self.shape:
            return self
        return View(shape, contiguous_strides(shape), 0, None, self)

    def repeat(self, repeats: Sequence[int]) -> View:
        """Tile the view ``repeats[d]`` times along every axis (tinygrad's repeat)."""
        repeats = _shape(repeats, "repeats")
        self._check_axes(len(repeats), "repeat", repeats)
        v = self.reshape([x for s in self.shape for x in (1, s)])
        v = v.expand([x for r, s in zip(repeats, self.shape, strict=True) for x in (r, s)])
        return v.reshape([r * s for r, s in zip(repeats, self.shape, strict=True)])

    def pool(self, kernel: Sequence[int], stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1) -> View:
        """Sliding windows over the last ``len(kernel)`` axes (tinygrad's ``_pool``).

        The result has shape ``(*lead, *out, *kernel)``.
        """
        k_ = _shape(kernel, "kernel")
        nk = len(k_)
        s_ = _shape((stride,) * nk if isinstance(stride, int) else stride, "stride")
        d_ = _shape((dilation,) * nk if isinstance(dilation, int) else dilation, "dilation")
        if not nk or len(s_) != nk or len(d_) != nk or nk > self.ndim:
            raise BuildError(f"cannot pool shape {self.shape} with kernel {k_} stride {s_} "
                             f"dilation {d_}")
        if any(k < 1 for k in k_) or any(s < 1 for s in s_) or any(d < 1 for d in d_):
            raise BuildError(f"kernel, stride and dilation must be >= 1: {k_} {s_} {d_}")
        noop, i_ = [None] * (self.ndim - nk), self.shape[self.ndim - nk:]
        if any(d * (k - 1) + 1 > i for k, d, i in zip(k_, d_, i_, strict=True)):
            raise BuildError(f"kernel {k_} (dilation {d_}) larger than the input {i_}")
        lead = list(self.shape[:len(noop)])
        full = [(0, s) for s in lead]
        n = len(noop)
        # per pooled axis: kernel, stride, dilation, input size, output size
        dims = [(k, s, d, i, _ceildiv(i - d * (k - 1), s))
                for k, s, d, i in zip(k_, s_, d_, i_, strict=True)]
        if any(k > s or d != 1 for k, s, d, _, _ in dims):
            # input scale so that the stride shrink fits; repeats so that no padding is needed
            f_ = [1 + int(o * s > i - d * (k - 1)) for k, s, d, i, o in dims]
            rep = [(k, i * f + d, o, s) for (k, s, d, i, o), f in zip(dims, f_, strict=True)]
            x = self.repeat([1] * n + [_ceildiv(k * span, i) for (k, span, _, _), (_, _, _, i, _)
                                       in zip(rep, dims, strict=True)])
            x = x.shrink(full + [(0, k * span) for k, span, _, _ in rep])
            x = x.reshape(lead + [v for k, span, _, _ in rep for v in (k, span)])      # dilation
            x = x.shrink(full + [v for k, _, o, s in rep for v in ((0, k), (0, o * s))])
            x = x.reshape(lead + [v for k, _, o, s in rep for v in (k, o, s)])         # stride
            x = x.shrink(full + [v for k, _, o, _ in rep for v in ((0, k), (0, o), (0, 1))])
            x = x.reshape(lead + [v for k, _, o, _ in rep for v in (k, o)])
            return x.permute([*range(n), *[n + i * 2 + 1 for i in range(nk)],
                              *[n + i * 2 for i in range(nk)]])
        x = self.pad(full + [(0, max(0, o * s - i)) for _, s, _, i, o in dims])
        x = x.shrink(full + [(0, o * s) for _, s, _, _, o in dims])
        x = x.reshape(lead + [v for _, s, _, _, o in dims for v in (o, s)])
        x = x.shrink(full + [v for k, _, _, _, o in dims for v in ((0, o), (0, k))])
        return x.permute([*range(n), *[n + i * 2 for i in range(nk)],
                          *[n + i * 2 + 1 for i in range(nk)]])

    def apply(self, chain: Chain) -> View:
        """Apply a movement chain: ``[("pad", ((1, 1), (0, 2))), ("permute", (1, 0)), ...]``."""
        v = self
        for step in chain:
            if not isinstance(step, (tuple, list)) or len(step) != 2:
                raise BuildError(f"movement step must be (op, arg), got {step!r}")
            op, arg = step
            if op not in _MOVEMENT:
                raise BuildError(f"unknown movement op {op!r}; choose one of "
                                 f"{', '.join(sorted(_MOVEMENT))}")
            v = getattr(v, op)(*arg) if op == "pool" else getattr(v, op)(arg)
        return v

    # ---- index expressions -----------------------------------------------------
    def _layer_index(self, idxs: Sequence[UOp]) -> tuple[UOp, UOp | None]:
        e: UOp | None = None
        valid: UOp | None = None
        if self.mask is not None and any(lo >= hi for lo, hi in self.mask):
            return UOp.const(dtypes.index, 0), UOp.const(dtypes.bool, False)
        for d, (i, s, st) in enumerate(zip(idxs, self.shape, self.strides, strict=True)):
            if s != 1 and st != 0:
                term = i if st == 1 else i * st
                e = term if e is None else e + term
            if self.mask is not None:
                lo, hi = self.mask[d]
                if lo != 0:
                    valid = _and(valid, ~i.lt(lo))
                if hi != s:
                    valid = _and(valid, i.lt(hi))
        if e is None:
            e = UOp.const(dtypes.index, self.offset)
        elif self.offset:
            e = e + self.offset
        return e, valid

    def index(self, idxs: Sequence[UOp]) -> tuple[UOp, UOp | None]:
        """``(flat buffer index, validity or None)`` for one index per axis of ``shape``."""
        if len(idxs) != self.ndim:
            raise BuildError(f"{len(idxs)} indices for a view of shape {self.shape}")
        e, valid = self._layer_index(idxs)
        v = self.parent
        while v is not None:
            e, vv = v._layer_index(unravel(v.shape, e))
            valid = _and(valid, vv)
            v = v.parent
        return e, valid

    def needs_division(self, flat_axes: int = 0) -> bool:
        """Whether this view's address may need a ``//`` or ``%`` over one loop per axis.

        Checked exactly by evaluating the stack on every index tuple of
        ``shape`` (keep it to test-sized views). False means a division-free
        form exists: the buffer address is an affine function of the indices
        wherever the view is valid, and every mask bound compares an index that
        is affine in them (a linear comparison). True means some layer splits
        an index at a boundary the loops do not share (or masks such an index),
        so a division is inherent unless the loops themselves are split.
        ``flat_axes=n`` asks the same for one flat loop over the first ``n``
        axes (``loops="flat"``) and one loop per remaining axis.
        """
        pts = np.indices(self.shape, dtype=np.int64).reshape(self.ndim, -1)
        cols = list(pts)
        if flat_axes > 1:
            flat = np.ravel_multi_index(tuple(pts[:flat_axes]), self.shape[:flat_axes])
            cols = [flat, *cols[flat_axes:]]
        design = np.vstack([*cols, np.ones(pts.shape[1], np.int64)]).T.astype(np.float64)
        valid = np.ones(pts.shape[1], bool)
        cur = list(pts)
        v: View | None = self
        e = np.zeros(pts.shape[1], np.int64)
        while v is not None:
            e = np.full(pts.shape[1], v.offset, np.int64)
            for d, (i, st) in enumerate(zip(cur, v.strides, strict=True)):
                e = e + i * st
                if v.mask is not None and v.mask[d] != (0, v.shape[d]):
                    if not _affine(design, i, np.ones_like(valid)):
                        return True
                    valid &= (i >= v.mask[d][0]) & (i < v.mask[d][1])
            if v.parent is None:
                break
            cur = []
            for s in reversed(v.parent.shape):  # C-semantics unravel, as the IR computes it
                q = np.abs(e) // s
                q = np.where(e < 0, -q, q)
                cur.append(e - q * s)
                e = q
            cur.reverse()
            v = v.parent
        return not _affine(design, e, valid)

    def address(self, idxs: Sequence[UOp]) -> UOp:
        """The index expression: ``idx`` or ``(where valid idx (invalid))``."""
        e, valid = self.index(idxs)
        return e if valid is None else valid.where(e, UOp.invalid())


_MOVEMENT = {"reshape", "permute", "pad", "shrink", "flip", "stride", "expand", "repeat", "pool"}


def _and(a: UOp | None, b: UOp | None) -> UOp | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _affine(design: np.ndarray, f: np.ndarray, where: np.ndarray) -> bool:
    """Whether ``f`` equals an affine function of the design columns on ``where``."""
    if not where.any():
        return True
    a, y = design[where], f[where].astype(np.float64)
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    return bool(np.all(np.abs(a @ coef - y) < 1e-6))


def unravel(shape: Sequence[int], flat: UOp) -> list[UOp]:
    """Indices of ``flat`` in row-major ``shape``: ``[... (flat//s2)%s1, flat%s2]`` (tinygrad)."""
    out: list[UOp] = []
    for s in reversed(shape):
        out.append(flat % s)
        flat = flat // s
    return out[::-1]


# ---------------------------------------------------------------------------
# numpy equivalents of movement chains
# ---------------------------------------------------------------------------

def _np_stride(a: np.ndarray, steps: Sequence[int]) -> np.ndarray:
    return a[tuple(slice(None, None, int(m)) for m in steps)]


def _np_pool(a: np.ndarray, kernel: Sequence[int], stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1) -> np.ndarray:
    nk = len(kernel)
    s_ = (stride,) * nk if isinstance(stride, int) else tuple(stride)
    d_ = (dilation,) * nk if isinstance(dilation, int) else tuple(dilation)
    lead = a.shape[:a.ndim - nk]
    i_ = a.shape[a.ndim - nk:]
    o_ = [_ceildiv(i - d * (k - 1), s) for i, d, k, s in zip(i_, d_, kernel, s_, strict=True)]
    out = np.zeros((*lead, *o_, *kernel), a.dtype)
    for ks in np.ndindex(*kernel):
        src = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                    for k, d, o, s in zip(ks, d_, o_, s_, strict=True))
        out[(Ellipsis, *[slice(None)] * nk, *ks)] = a[(Ellipsis, *src)]
    return out


_NP_MOVEMENT: dict[str, Callable[..., np.ndarray]] = {
    "reshape": lambda a, s: a.reshape(s),
    "permute": lambda a, o: a.transpose(o),
    "pad": lambda a, p: np.pad(a, p),
    "shrink": lambda a, b: a[tuple(slice(x, y) for x, y in b)],
    "flip": lambda a, ax: np.flip(a, tuple(ax)) if len(ax) else a,
    "stride": _np_stride,
    "expand": lambda a, s: np.broadcast_to(a, s),
    "repeat": lambda a, r: np.tile(a, r),
    "pool": lambda a, *arg: _np_pool(a, *arg),
}


def apply_numpy(a: np.ndarray, chain: Chain) -> np.ndarray:
    """The numpy equivalent of ``View.apply(chain)`` on an array (an independent oracle)."""
    for op, arg in chain:
        a = _NP_MOVEMENT[op](a, *arg) if op == "pool" else _NP_MOVEMENT[op](a, arg)
    return np.ascontiguousarray(a)


# ---------------------------------------------------------------------------
# kernel assembly
# ---------------------------------------------------------------------------

def _dtype(dtype: DType | str) -> DType:
    dt = dtypes.parse(dtype) if isinstance(dtype, str) else dtype
    if not isinstance(dt, DType) or dt.ptr or dt.count != 1 or not (dt.is_float or
                                                                   dt.is_fixed_int):
        raise BuildError(f"kernels need a scalar float or fixed-width int dtype, got {dtype!r}")
    return dt


_VIEW_LOGS: list[list[tuple[int, View]]] = []


def load(buf: UOp, view: View, idxs: Sequence[UOp], alt: UOp | None = None) -> UOp:
    """``LOAD(INDEX(buf, view.address(idxs)))`` (with ``alt`` where the address is invalid)."""
    if view.buffer_size != buf.arg[1]:
        raise BuildError(f"view over {view.buffer_size} elements used on buffer {buf.arg}")
    for log in _VIEW_LOGS:
        log.append((buf.arg[0], view))
    idx = UOp(Ops.INDEX, buf.dtype, (buf, view.address(idxs)))
    src = (idx,) if alt is None else (idx, alt)
    return UOp(Ops.LOAD, buf.dtype.base(), src)


@dataclass(frozen=True)
class Tiling:
    """A loop schedule for :func:`kernel`: tiles, an unrolled register tile, a loop order.

    ``tiles[d]`` divides output axis ``d``: an outer RANGE of ``shape[d] // tiles[d]``
    per axis, then an inner RANGE of ``tiles[d] // upcast[d]`` per axis (left out
    when 1). ``upcast[d]`` (dividing ``tiles[d]``; default 1) unrolls the tile's
    last ``upcast[d]`` positions of axis ``d``: the kernel stores one lane per
    combination (``prod(upcast)`` STOREs in a group, each with constant offsets),
    as a tensor compiler's UPCAST does, so the C compiler can vectorize the
    register tile (for a transpose: ``4x4`` lanes read four contiguous input
    runs and write four contiguous output runs). ``order`` (a permutation of the
    axes; default ``0, 1, ..``) nests the inner loops, the first outermost;
    ``outer`` (default: ``order``) nests the outer tile loops. Axis ``d`` is
    ``outer*tiles[d] + inner*upcast[d] + lane``.

        >>> Tiling((16, 64), upcast=(4, 4), order=(1, 0), outer=(0, 1))
        Tiling((16, 64), upcast=(4, 4), order=(1, 0), outer=(0, 1))
    """

    tiles: tuple[int, ...]
    upcast: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None
    outer: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        tiles = _shape(self.tiles, "tile sizes")
        n = len(tiles)
        up = _shape(self.upcast, "upcast") if self.upcast is not None else (1,) * n
        order = tuple(int(a) for a in self.order) if self.order is not None else tuple(range(n))
        if len(up) != n or any(u < 1 or t % u for t, u in zip(tiles, up, strict=True)):
            raise BuildError(f"upcast {up} must divide the tile sizes {tiles}")
        outer = tuple(int(a) for a in self.outer) if self.outer is not None else order
        for o in (order, outer):
            if sorted(o) != list(range(n)):
                raise BuildError(f"loop order {o} is not a permutation of {n} axes")
        object.__setattr__(self, "tiles", tiles)
        object.__setattr__(self, "upcast", up)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "outer", outer)

    def __repr__(self) -> str:
        return (f"Tiling({self.tiles}, upcast={self.upcast}, order={self.order}, "
                f"outer={self.outer})")

    def axes(self, shape: Shape) -> tuple[list[UOp], list[list[UOp]]]:
        """``(ranges outermost first, one axis-index list per unrolled lane)`` for ``shape``."""
        tiles, up, order = self.tiles, self.upcast, self.order
        n = len(shape)
        if len(tiles) != n or any(t < 1 or s % t for s, t in zip(shape, tiles, strict=True)):
            raise BuildError(f"tile sizes {tiles} must divide the output shape {shape}")
        assert up is not None and order is not None
        outer = [UOp.range(s // t, d) for d, (s, t) in enumerate(zip(shape, tiles, strict=True))]
        inner = {d: UOp.range(t // u, n + d) for d, (t, u) in enumerate(zip(tiles, up,
                                                                             strict=True))
                 if t // u > 1}
        base = []
        for d in range(n):
            e = outer[d] * tiles[d] if tiles[d] > 1 else outer[d]
            if d in inner:
                e = e + (inner[d] * up[d] if up[d] > 1 else inner[d])
            base.append(e)
        lanes = [[b + k if k else b for b, k in zip(base, lane, strict=True)]
                 for lane in itertools.product(*[range(u) for u in up])]
        assert self.outer is not None
        ranges = [outer[d] for d in self.outer] + [inner[d] for d in order if d in inner]
        return ranges, lanes


Loops = str | tuple[int, ...] | Tiling


def _largest_divisor(n: int, step: int, limit: int) -> int:
    """The largest multiple of ``step`` dividing ``n`` and at most ``max(limit, step)``."""
    best = step
    for t in range(step, min(n, max(limit, step)) + 1, step):
        if n % t == 0:
            best = t
    return best


def auto_tiling(view: View, itemsize: int = 4) -> Loops:
    """A transpose-friendly schedule for a copy through ``view`` (``loops="auto"``).

    When the input's contiguous axis (stride +-1 in a single-layer view) is not
    the output's (its last axis longer than 1), the two axes get a register tile
    (``upcast`` 4, or 2, where the size allows) and cache tiles: the input axis
    one cache line of elements (a panel of full input lines read), the output
    axis up to 1024 elements; the loops run over the other axes, then the input
    panel, then along the output's rows (innermost: ``upcast`` output rows
    written left to right, each lane a 16-byte run, from ``upcast`` contiguous
    reads of ``upcast`` input rows). With the default ``Target`` the C emitter
    makes the 4x4 f32 tile four vector loads, eight shuffles and four
    (streaming) vector stores, so the output is written in whole lines.
    Anything else (already contiguous, a reshaped view, sizes not divisible
    by 2) keeps ``"nd"``: one loop per axis, the innermost contiguous.
    """
    n = view.ndim
    long = [d for d in range(n) if view.shape[d] > 1]
    if view.parent is not None or len(long) < 2:
        return "nd"
    a_out = long[-1]
    ins = [d for d in long if abs(view.strides[d]) == 1]
    if not ins or ins[-1] == a_out:
        return "nd"
    a_in = ins[-1]

    def lanes(size: int) -> int:
        return 4 if size % 4 == 0 else 2 if size % 2 == 0 else 1
    u_out, u_in = lanes(view.shape[a_out]), lanes(view.shape[a_in])
    if u_out == 1 or u_in == 1:
        return "nd"
    tiles, up = [1] * n, [1] * n
    tiles[a_in] = _largest_divisor(view.shape[a_in], u_in, max(1, 64 // itemsize))
    tiles[a_out] = _largest_divisor(view.shape[a_out], u_out, 1024)
    up[a_out], up[a_in] = u_out, u_in
    order = [d for d in range(n) if d not in (a_out, a_in)] + [a_in, a_out]
    return Tiling(tuple(tiles), tuple(up), tuple(order))


def kernel(out_shape: Sequence[int], dtype: DType | str,
           body: Callable[[list[UOp], Callable[..., UOp]], UOp],
           red_shape: Sequence[int] = (), red_op: Ops | None = None,
           loops: Loops = "nd") -> UOp:
    """Assemble ``SINK(END(STORE(INDEX(out, i), value), ranges...))``.

    ``body(idxs, rng)`` returns the value at output index ``idxs`` (one index
    expression per axis of ``out_shape``, then one RANGE per ``red_shape``
    axis). With ``red_op`` the value is folded by ``REDUCE(red_op, value,
    reduce-ranges)``. ``loops`` is ``"nd"`` (a RANGE per output axis),
    ``"flat"`` (one RANGE unflattened by ``out_shape``) or a tuple of tile
    sizes, one per output axis, each dividing it: an outer RANGE per axis,
    then an inner RANGE per tiled axis (axis index ``outer*tile + inner``).
    """
    dt = _dtype(dtype)
    out_shape, red_shape = _shape(out_shape), _shape(red_shape, "reduce shape")
    if math.prod(out_shape) == 0:
        raise BuildError(f"empty output shape {out_shape}")
    out = UOp.buffer(0, dt, math.prod(out_shape))
    if loops == "auto":  # copies choose a schedule (auto_tiling); other kernels loop per axis
        loops = "nd"
    if loops == "nd":
        ranges = [UOp.range(s, i) for i, s in enumerate(out_shape)]
        lanes = [View.contiguous(out_shape).address(ranges)]
    elif loops == "flat":
        ranges = [UOp.range(math.prod(out_shape), 0)]
        lanes = [ranges[0]]
    elif isinstance(loops, (tuple, list, Tiling)):
        ranges, axes = (loops if isinstance(loops, Tiling) else Tiling(loops)).axes(out_shape)
        lanes = [View.contiguous(out_shape).address(a) for a in axes]
    else:
        raise BuildError(f"loops must be 'nd', 'flat', a tuple of tile sizes or a Tiling, got "
                         f"{loops!r}")
    rid = max(r.arg for r in ranges) + 1
    rranges = [UOp.range(s, rid + i) for i, s in enumerate(red_shape)]
    stores = []
    for oidx in lanes:  # one store per unrolled lane (one lane unless upcast)
        # the flat output index, unflattened by the output shape (tinygrad's unravel)
        idxs = unravel(out_shape, oidx)
        value = body(idxs + rranges, lambda slot, size: UOp.buffer(slot, dt, size))
        if red_op is not None:
            value = UOp(Ops.REDUCE, value.dtype, (value, *rranges), red_op)
        elif rranges:
            raise BuildError("reduce ranges without a reduce op")
        if value.dtype is not dt:
            raise BuildError(f"kernel value has dtype {value.dtype}, output is {dt}")
        stores.append(UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, oidx)),
                                                   value)))
    st = stores[0] if len(stores) == 1 else UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, *ranges)),))


def _views(shapes: Sequence[Shape], chains: Sequence[Chain] | None) -> list[View]:
    chains = chains if chains is not None else [()] * len(shapes)
    if len(chains) != len(shapes):
        raise BuildError(f"{len(chains)} movement chains for {len(shapes)} inputs")
    return [View.contiguous(s).apply(c) for s, c in zip(shapes, chains, strict=True)]


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------

UNARY_OPS: dict[str, tuple[Callable[[UOp], UOp], Callable[[np.ndarray], np.ndarray], bool]] = {
    # name: (IR, numpy, float only)
    "neg": (lambda x: -x, lambda a: -a, False),
    "relu": (lambda x: x.maximum(0), lambda a: np.maximum(a, a.dtype.type(0)), False),
    "square": (lambda x: x * x, lambda a: a * a, False),
    "sqrt": (lambda x: x.alu(Ops.SQRT), np.sqrt, True),
    "exp2": (lambda x: x.alu(Ops.EXP2), np.exp2, True),
    "log2": (lambda x: x.alu(Ops.LOG2), np.log2, True),
    "recip": (lambda x: x.alu(Ops.RECIP), lambda a: a.dtype.type(1) / a, True),
}
_POSITIVE = {"sqrt", "log2", "recip"}

BINARY_OPS: dict[str, tuple[Callable[[UOp, UOp], UOp], Callable[..., np.ndarray], bool]] = {
    "add": (lambda x, y: x + y, np.add, False),
    "sub": (lambda x, y: x - y, np.subtract, False),
    "mul": (lambda x, y: x * y, np.multiply, False),
    "max": (lambda x, y: x.maximum(y), np.maximum, False),
    "min": (lambda x, y: x.alu(Ops.MIN, y), np.minimum, False),
    "fdiv": (lambda x, y: x / y, np.divide, True),
}


def _check_op(table: dict, op: str, dt: DType) -> tuple:
    if op not in table:
        raise BuildError(f"unknown op {op!r}; choose one of {', '.join(table)}")
    entry = table[op]
    if entry[2] and not dt.is_float:
        raise BuildError(f"op {op!r} needs a float dtype, got {dt}")
    return entry


def _out_shape(views: Sequence[View]) -> Shape:
    shapes = {v.shape for v in views}
    if len(shapes) != 1:
        raise BuildError(f"elementwise inputs have different view shapes {sorted(shapes)}")
    return views[0].shape


def elementwise(op: str, shapes: Sequence[Sequence[int]], chains: Sequence[Chain] | None = None,
                dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = op(*inputs)`` where input ``i`` of shape ``shapes[i]`` is seen through
    ``chains[i]``; every view must end at the same shape (the output's)."""
    dt = _dtype(dtype)
    shapes = [_shape(s) for s in shapes]
    table = UNARY_OPS if len(shapes) == 1 else BINARY_OPS if len(shapes) == 2 else None
    if table is None:
        raise BuildError(f"elementwise takes 1 or 2 inputs, got {len(shapes)}")
    fn = _check_op(table, op, dt)[0]
    views = _views(shapes, chains)
    out_shape = _out_shape(views)

    def body(idxs, buf):
        return fn(*[load(buf(i + 1, v.buffer_size), v, idxs) for i, v in enumerate(views)])
    return kernel(out_shape, dt, body, loops=loops)


def unary(op: str = "neg", shape: Sequence[int] = (4, 6), chain: Chain = (),
          dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = op(view(x))`` for ``op`` in :data:`UNARY_OPS`."""
    return elementwise(op, [shape], [chain], dtype, loops)


def binary(op: str = "add", shape: Sequence[int] = (4, 6), shape2: Sequence[int] | None = None,
           chain: Chain = (), chain2: Chain = (), dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """``out = op(view(a), view2(b))`` for ``op`` in :data:`BINARY_OPS`."""
    return elementwise(op, [shape, shape if shape2 is None else shape2], [chain, chain2],
                       dtype, loops)


# ---------------------------------------------------------------------------
# movement copies
# ---------------------------------------------------------------------------

def copy(shape: Sequence[int] = (4, 6), chain: Chain = (), dtype: DType | str = dtypes.f32,
         loops: Loops = "nd") -> UOp:
    """``out = view(x)``: a copy of ``x`` (shape ``shape``) through a movement chain."""
    v = View.contiguous(shape).apply(chain)
    if loops == "auto":
        loops = auto_tiling(v, _dtype(dtype).itemsize)
    return kernel(v.shape, dtype, lambda idxs, buf: load(buf(1, v.buffer_size), v, idxs),
                  loops=loops)


def permute(shape: Sequence[int] = (4, 6), order: Sequence[int] = (1, 0),
            dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A transposed copy: ``out = x.transpose(order)``."""
    return copy(shape, [("permute", tuple(order))], dtype, loops)


def pad(shape: Sequence[int] = (4, 6), padding: Sequence[tuple[int, int]] = ((1, 1), (2, 0)),
        dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A zero-padded copy: ``out = np.pad(x, padding)``."""
    return copy(shape, [("pad", tuple(map(tuple, padding)))], dtype, loops)


def shrink(shape: Sequence[int] = (4, 6), bounds: Sequence[tuple[int, int]] = ((1, 3), (2, 6)),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A slice: ``out = x[b0:e0, b1:e1, ...]``."""
    return copy(shape, [("shrink", tuple(map(tuple, bounds)))], dtype, loops)


def flip(shape: Sequence[int] = (4, 6), axes: Sequence[int] = (1,),
         dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A reversed copy: ``out = np.flip(x, axes)``."""
    return copy(shape, [("flip", tuple(axes))], dtype, loops)


def stride(shape: Sequence[int] = (4, 6), steps: Sequence[int] = (1, 2),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A strided slice: ``out = x[::s0, ::s1, ...]`` (negative steps reverse)."""
    return copy(shape, [("stride", tuple(steps))], dtype, loops)


def expand(shape: Sequence[int] = (4, 1), new_shape: Sequence[int] = (4, 6),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A broadcast: ``out = np.broadcast_to(x, new_shape)``."""
    return copy(shape, [("expand", tuple(new_shape))], dtype, loops)


def reshape(shape: Sequence[int] = (4, 6), new_shape: Sequence[int] = (2, 12), pre: Chain = (),
            dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = view(x).reshape(new_shape)``, after an optional movement chain ``pre``."""
    return copy(shape, [*pre, ("reshape", tuple(new_shape))], dtype, loops)


# ---------------------------------------------------------------------------
# reductions, matmul, convolution, pooling, scan
# ---------------------------------------------------------------------------

_RED = {"sum": Ops.ADD, "max": Ops.MAX}


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise BuildError(f"axis {axis} out of range for {ndim} axes")
    return axis % ndim


def reduce(shape: Sequence[int] = (4, 6), axis: int = 1, op: str = "sum", chain: Chain = (),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = view(x).sum(axis)`` or ``.max(axis)`` (the axis is dropped)."""
    if op not in _RED:
        raise BuildError(f"unknown reduce op {op!r}; choose one of {', '.join(_RED)}")
    v = View.contiguous(shape).apply(chain)
    ax = _axis(axis, v.ndim)
    order = [d for d in range(v.ndim) if d != ax] + [ax]
    vp = v.permute(order)  # the reduced axis last, as a tensor compiler schedules it
    out_shape = vp.shape[:-1]
    if not out_shape:
        raise BuildError("reduce of a 1-D view would have an empty output; reshape it first")
    return kernel(out_shape, dtype, lambda idxs, buf: load(buf(1, vp.buffer_size), vp, idxs),
                  red_shape=vp.shape[-1:], red_op=_RED[op], loops=loops)


def matmul(m: int = 3, k: int = 5, n: int = 4, dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """``out = a @ b`` for ``a`` (m, k) and ``b`` (k, n), through tinygrad's views:
    ``a.reshape(m,1,k).expand(m,n,k) * b.T.reshape(1,n,k).expand(m,n,k)``, summed over k."""
    va = View.contiguous((m, k)).reshape((m, 1, k)).expand((m, n, k))
    vb = View.contiguous((k, n)).permute((1, 0)).reshape((1, n, k)).expand((m, n, k))

    def body(idxs, buf):
        return load(buf(1, m * k), va, idxs) * load(buf(2, k * n), vb, idxs)
    return kernel((m, n), dtype, body, red_shape=(k,), red_op=Ops.ADD, loops=loops)


def _conv_out(size: int, k: int, stride: int, padding: int, dilation: int) -> int:
    out = _ceildiv(size + 2 * padding - dilation * (k - 1), stride)
    if out < 1:
        raise BuildError(f"kernel {k} (dilation {dilation}) larger than the padded input "
                         f"{size + 2 * padding}")
    return out


def conv2d(n: int = 1, cin: int = 2, h: int = 5, w: int = 5, cout: int = 3, kh: int = 3,
           kw: int = 3, stride: int = 1, padding: int = 0, dilation: int = 1,
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """2-D cross-correlation (NCHW input, OIHW weight, no bias), tinygrad's way:
    pad, pool into windows, broadcast against the weight, sum over (cin, kh, kw)."""
    oh = _conv_out(h, kh, stride, padding, dilation)
    ow = _conv_out(w, kw, stride, padding, dilation)
    vx = View.contiguous((n, cin, h, w))
    if padding:
        vx = vx.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    vx = vx.pool((kh, kw), stride, dilation)                  # (n, cin, oh, ow, kh, kw)
    vx = vx.reshape((n, 1, cin, oh, ow, kh, kw)).expand((n, cout, cin, oh, ow, kh, kw))
    vx = vx.permute((0, 1, 3, 4, 2, 5, 6))                    # (n, cout, oh, ow, cin, kh, kw)
    vw = View.contiguous((cout, cin, kh, kw)).reshape((1, cout, 1, 1, cin, kh, kw))
    vw = vw.expand((n, cout, oh, ow, cin, kh, kw))

    def body(idxs, buf):
        return load(buf(1, n * cin * h * w), vx, idxs) * load(buf(2, cout * cin * kh * kw), vw,
                                                              idxs)
    return kernel((n, cout, oh, ow), dtype, body, red_shape=(cin, kh, kw), red_op=Ops.ADD,
                  loops=loops)


def pool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
           stride: int | None = None, padding: int = 0, op: str = "max",
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """Max or average pooling over (h, w) of an NCHW input.

    Padding reads as the lowest value for max (``LOAD`` with an alternative)
    and as 0 for avg, which divides by ``kernel_size**2`` (count_include_pad;
    C-truncating for ints).
    """
    if op not in ("max", "avg"):
        raise BuildError(f"pool op must be 'max' or 'avg', got {op!r}")
    dt = _dtype(dtype)
    k = kernel_size
    s = k if stride is None else stride
    oh, ow = _conv_out(h, k, s, padding, 1), _conv_out(w, k, s, padding, 1)
    vx = View.contiguous((n, c, h, w))
    if padding:
        vx = vx.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    vx = vx.pool((k, k), s)                                   # (n, c, oh, ow, k, k)
    alt = UOp.const(dt, dt.min) if op == "max" and padding else None
    g = kernel((n, c, oh, ow), dt, lambda idxs, buf: load(buf(1, n * c * h * w), vx, idxs, alt),
               red_shape=(k, k), red_op=Ops.MAX if op == "max" else Ops.ADD, loops=loops)
    if op == "max":
        return g
    # divide the reduced sum by the window size before storing
    end = g.src[0]
    st = end.src[0]
    cnt = UOp.const(dt, k * k)
    val = st.src[1] / cnt if dt.is_float else st.src[1] // cnt
    return UOp(Ops.SINK, dtypes.void,
               (end.replace(src=(st.replace(src=(st.src[0], val)), *end.src[1:])),))


def maxpool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
              stride: int | None = None, padding: int = 0, dtype: DType | str = dtypes.f32,
              loops: Loops = "nd") -> UOp:
    """:func:`pool2d` with ``op="max"``."""
    return pool2d(n, c, h, w, kernel_size, stride, padding, "max", dtype, loops)


def avgpool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
              stride: int | None = None, padding: int = 0, dtype: DType | str = dtypes.f32,
              loops: Loops = "nd") -> UOp:
    """:func:`pool2d` with ``op="avg"``."""
    return pool2d(n, c, h, w, kernel_size, stride, padding, "avg", dtype, loops)


def cumsum(shape: Sequence[int] = (3, 7), axis: int = -1, dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """Inclusive prefix sum along ``axis``, tinygrad's way: pad the axis with
    ``len-1`` zeros in front, pool windows of ``len``, sum each window."""
    shape = _shape(shape)
    ax = _axis(axis, len(shape))
    nax = shape[ax]
    order = [d for d in range(len(shape)) if d != ax] + [ax]
    v = View.contiguous(shape).permute(order)
    v = v.pad([(0, 0)] * (len(shape) - 1) + [(nax - 1, 0)]).pool((nax,))  # (..., out, k)
    back = list(range(len(shape) - 1))
    back.insert(ax, len(shape) - 1)
    v = v.permute([*back, len(shape)])                       # (*shape, k)
    return kernel(shape, dtype, lambda idxs, buf: load(buf(1, math.prod(shape)), v, idxs),
                  red_shape=(nax,), red_op=Ops.ADD, loops=loops)


# ---------------------------------------------------------------------------
# numpy references
# ---------------------------------------------------------------------------

def _wrap(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Cast to ``dt``; integer results wrap two's-complement (ring ops commute with it)."""
    if np.issubdtype(dt, np.integer):
        return x.astype(np.int64).astype(dt) if x.dtype != dt else x
    return x.astype(dt)


def _acc(a: np.ndarray) -> np.dtype:
    return np.dtype(np.int64) if np.issubdtype(a.dtype, np.integer) else np.dtype(np.float64)


def _trunc_div(x: np.ndarray, d: int) -> np.ndarray:
    q = np.abs(x) // d
    return np.where(x < 0, -q, q)


def _ref_unary(x, op="neg", shape=None, chain=(), dtype=None, loops=None):
    return UNARY_OPS[op][1](apply_numpy(x, chain)).astype(x.dtype)


def _ref_binary(a, b, op="add", shape=None, shape2=None, chain=(), chain2=(), dtype=None,
                loops=None):
    with np.errstate(over="ignore"):
        return BINARY_OPS[op][1](apply_numpy(a, chain), apply_numpy(b, chain2)).astype(a.dtype)


def _ref_copy(x, shape=None, chain=(), dtype=None, loops=None):
    return apply_numpy(x, chain)


def _ref_reduce(x, shape=None, axis=1, op="sum", chain=(), dtype=None, loops=None):
    v = apply_numpy(x, chain)
    if op == "max":
        return v.max(axis)
    return _wrap(v.sum(axis, dtype=_acc(v)), x.dtype)


def _ref_matmul(a, b, m=None, k=None, n=None, dtype=None, loops=None):
    return _wrap(a.astype(_acc(a)) @ b.astype(_acc(b)), a.dtype)


def _ref_conv2d(x, wt, n=None, cin=None, h=None, w=None, cout=None, kh=3, kw=3, stride=1,
                padding=0, dilation=1, dtype=None, loops=None):
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = _np_pool(xp, (kh, kw), stride, dilation).astype(_acc(x))  # n cin oh ow kh kw
    return _wrap(np.einsum("ncyxij,ocij->noyx", win, wt.astype(_acc(x))), x.dtype)


def _ref_pool2d(x, n=None, c=None, h=None, w=None, kernel_size=2, stride=None, padding=0,
                op="max", dtype=None, loops=None):
    s = kernel_size if stride is None else stride
    fill = 0
    if op == "max" and padding:
        fill = np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.integer) else -np.inf
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)),
                constant_values=fill)
    win = _np_pool(xp, (kernel_size, kernel_size), s)
    if op == "max":
        return win.max((-2, -1))
    tot = _wrap(win.sum((-2, -1), dtype=_acc(x)), x.dtype)
    cnt = kernel_size * kernel_size
    if np.issubdtype(x.dtype, np.integer):
        return _trunc_div(tot.astype(np.int64), cnt).astype(x.dtype)
    return (tot / x.dtype.type(cnt)).astype(x.dtype)


def _ref_cumsum(x, shape=None, axis=-1, dtype=None, loops=None):
    return _wrap(np.cumsum(x, axis, dtype=_acc(x)), x.dtype)


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BuilderSpec:
    """A builder with its numpy reference, shapes and standard cases.

    ``build(**params) -> UOp``; ``reference(*arrays, **params)`` (arrays in
    ``input_shapes(**params)``, the result in ``output_shape(**params)``);
    ``cases``: small parameter sets for tests (several shapes, non-powers of
    two); ``bench``: a large set for benchmarks; ``copy_like``: a pure data
    movement kernel (its speed is compared with a numpy copy); ``domain``:
    ``"any"`` or ``"positive"`` inputs.
    """

    name: str
    kind: str
    build: Callable[..., UOp]
    ref: Callable[..., np.ndarray]
    input_shapes: Callable[..., list[Shape]]
    output_shape: Callable[..., Shape]
    cases: tuple[dict[str, Any], ...]
    bench: dict[str, Any]
    copy_like: bool = False
    domain: str = "any"
    float_only: bool = False

    def reference(self, *arrays: np.ndarray, **params: Any) -> np.ndarray:
        shapes = self.input_shapes(**params)
        if len(arrays) != len(shapes):
            raise BuildError(f"{self.name}: {len(arrays)} arrays for {len(shapes)} inputs")
        arrays = tuple(np.asarray(a).reshape(s) for a, s in zip(arrays, shapes, strict=True))
        out = self.ref(*arrays, **params)
        return np.ascontiguousarray(out).reshape(self.output_shape(**params))

    def __repr__(self) -> str:
        return f"BUILDERS[{self.name!r}]"


_NP_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
              "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
              "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


@dataclass
class BuiltKernel:
    """One built kernel: its graph, shapes, dtype and numpy reference."""

    name: str
    params: dict[str, Any]
    graph: UOp = field(repr=False)
    input_shapes: list[Shape]
    output_shape: Shape
    dtype: DType
    spec: BuilderSpec = field(repr=False)
    views: tuple[tuple[int, View], ...] = field(default=(), repr=False)

    @property
    def loops(self) -> Loops:
        return self.params.get("loops", "nd")

    def needs_division(self) -> bool:
        """Whether some load address needs a ``//``/``%`` with this kernel's loops
        (see :meth:`View.needs_division`); False: a division-free form exists."""
        flat = len(self.output_shape) if self.loops == "flat" else 0
        return any(v.needs_division(flat) for _, v in self.views)

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of the buffers (bf16 has none: BuildError)."""
        if self.dtype.name not in _NP_DTYPES:
            raise BuildError(f"no numpy dtype for {self.dtype}; use f16/f32/f64 or an int")
        return np.dtype(_NP_DTYPES[self.dtype.name])

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Input arrays (in their shapes) suited to the kernel: floats in [-1, 1)
        (or [0.5, 2) for sqrt/log2/recip), ints in [-8, 8] (unsigned [0, 15])."""
        rng = np.random.default_rng(seed)
        dt = self.np_dtype
        out = []
        for s in self.input_shapes:
            if np.issubdtype(dt, np.floating):
                lo, hi = (0.5, 2.0) if self.spec.domain == "positive" else (-1.0, 1.0)
                out.append(rng.uniform(lo, hi, s).astype(dt))
            elif np.issubdtype(dt, np.unsignedinteger):
                out.append(rng.integers(0, 16, s).astype(dt))
            else:
                out.append(rng.integers(-8, 9, s).astype(dt))
        return out

    def reference(self, *arrays: np.ndarray) -> np.ndarray:
        """The numpy result for these inputs, in ``output_shape``."""
        return self.spec.reference(*arrays, **self.params)

    def buffers(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Flat buffers in slot order: a zeroed output, then copies of the inputs."""
        return [np.zeros(math.prod(self.output_shape), self.np_dtype),
                *[np.ascontiguousarray(a, self.np_dtype).reshape(-1).copy() for a in inputs]]


def make(name: str, **params: Any) -> BuiltKernel:
    """Build the kernel ``name`` with ``params`` (``dtype`` included)."""
    if name not in BUILDERS:
        raise BuildError(f"unknown builder {name!r}; choose one of {', '.join(BUILDERS)}")
    spec = BUILDERS[name]
    params = dict(params)
    dt = _dtype(params.get("dtype", dtypes.f32))
    params["dtype"] = dt
    if spec.float_only and not dt.is_float:
        raise BuildError(f"{name} needs a float dtype, got {dt}")
    log: list[tuple[int, View]] = []
    _VIEW_LOGS.append(log)
    try:
        graph = spec.build(**params)
    finally:
        _VIEW_LOGS.remove(log)
    return BuiltKernel(name, params, graph, spec.input_shapes(**params),
                       spec.output_shape(**params), dt, spec, tuple(log))


def reference(name: str, *arrays: np.ndarray, **params: Any) -> np.ndarray:
    """The numpy equivalent of builder ``name`` on ``arrays`` (shaped or flat)."""
    if name not in BUILDERS:
        raise BuildError(f"unknown builder {name!r}; choose one of {', '.join(BUILDERS)}")
    return BUILDERS[name].reference(*arrays, **params)


def _copy_shapes(shape=(4, 6), **_):
    return [_shape(shape)]


def _chain_out(shape, chain) -> Shape:
    return View.contiguous(shape).apply(chain).shape


def _movement_spec(name: str, chain_of: Callable[..., Chain], build: Callable[..., UOp],
                   cases: Sequence[dict], bench: dict) -> BuilderSpec:
    def ref(x, **p):
        return apply_numpy(x, chain_of(**p))

    def out(**p):
        return _chain_out(p.get("shape", (4, 6)), chain_of(**p))
    return BuilderSpec(name, "movement", build, ref, _copy_shapes, out, tuple(cases), bench,
                       copy_like=True)


def _conv_shapes(n=1, cin=2, h=5, w=5, cout=3, kh=3, kw=3, **_):
    return [(n, cin, h, w), (cout, cin, kh, kw)]


def _conv_out_shape(n=1, cin=2, h=5, w=5, cout=3, kh=3, kw=3, stride=1, padding=0, dilation=1,
                    **_):
    return (n, cout, _conv_out(h, kh, stride, padding, dilation),
            _conv_out(w, kw, stride, padding, dilation))


def _pool_out_shape(n=1, c=2, h=6, w=6, kernel_size=2, stride=None, padding=0, **_):
    s = kernel_size if stride is None else stride
    return (n, c, _conv_out(h, kernel_size, s, padding, 1), _conv_out(w, kernel_size, s,
                                                                      padding, 1))


def _reduce_out(shape=(4, 6), axis=1, chain=(), **_):
    s = _chain_out(shape, chain)
    ax = _axis(axis, len(s))
    return tuple(x for d, x in enumerate(s) if d != ax)


_MiB16 = 4 * 1024 * 1024  # f32 elements in 16 MiB

BUILDERS: dict[str, BuilderSpec] = {}


def _register(spec: BuilderSpec) -> None:
    BUILDERS[spec.name] = spec


_register(BuilderSpec(
    "unary", "elementwise", unary, _ref_unary, _copy_shapes,
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "neg", "shape": (4, 6)},
        {"op": "relu", "shape": (5, 7), "chain": [("permute", (1, 0))]},
        {"op": "square", "shape": (3, 5, 2), "chain": [("flip", (0, 2))]},
        {"op": "neg", "shape": (6, 5), "chain": [("pad", ((1, 0), (0, 2)))]},
    ),
    bench={"op": "relu", "shape": (1024, 1024), "chain": [("permute", (1, 0))]}))
_register(BuilderSpec(
    "unary_float", "elementwise", unary, _ref_unary, _copy_shapes,
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "sqrt", "shape": (5, 3)},
        {"op": "exp2", "shape": (7,), "chain": [("flip", (0,))]},
        {"op": "recip", "shape": (3, 4), "chain": [("reshape", (2, 6))]},
        {"op": "log2", "shape": (2, 9)},
    ),
    bench={"op": "sqrt", "shape": (1024, 1024)}, domain="positive", float_only=True))
_register(BuilderSpec(
    "binary", "elementwise", binary, _ref_binary,
    lambda shape=(4, 6), shape2=None, **_: [_shape(shape), _shape(shape if shape2 is None
                                                                   else shape2)],
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "add", "shape": (4, 6)},
        {"op": "mul", "shape": (5, 3), "shape2": (3, 5), "chain2": [("permute", (1, 0))]},
        {"op": "sub", "shape": (3, 7), "shape2": (7,),
         "chain2": [("reshape", (1, 7)), ("expand", (3, 7))]},
        {"op": "max", "shape": (2, 3, 5), "shape2": (2, 5, 3), "chain2": [("permute", (0, 2, 1))]},
        {"op": "min", "shape": (6, 5), "shape2": (4, 5),
         "chain2": [("pad", ((1, 1), (0, 0)))]},
    ),
    bench={"op": "add", "shape": (1024, 1024), "chain2": [("permute", (1, 0))]}))


def _ref_chain(**p) -> Chain:
    return p.get("chain", ())


_register(_movement_spec(
    "copy", _ref_chain, copy,
    cases=[
        {"shape": (3, 5), "chain": [("pad", ((1, 1), (0, 2))), ("permute", (1, 0)),
                                    ("shrink", ((1, 6), (0, 4)))]},
        {"shape": (4, 6), "chain": [("flip", (0,)), ("reshape", (2, 12)),
                                    ("stride", (1, 3))]},
        {"shape": (2, 3, 5), "chain": [("permute", (2, 0, 1)), ("reshape", (5, 6)),
                                       ("pad", ((0, 1), (2, 0)))]},
        {"shape": (7, 3), "chain": [("reshape", (21,)), ("shrink", ((2, 20),)),
                                    ("reshape", (3, 6)), ("flip", (1,))]},
    ],
    bench={"shape": (2000, 2100), "chain": [("pad", ((4, 4), (0, 6))), ("permute", (1, 0)),
                                             ("shrink", ((0, 2100), (2, 2006)))],
           "loops": "auto"}))
_register(_movement_spec(
    "permute", lambda order=(1, 0), **_: [("permute", tuple(order))], permute,
    cases=[
        {"shape": (4, 6), "order": (1, 0)},
        {"shape": (3, 5, 7), "order": (2, 0, 1)},
        {"shape": (2, 3, 4, 5), "order": (3, 1, 0, 2)},
        {"shape": (9, 1, 5), "order": (1, 2, 0)},
    ],
    bench={"shape": (2080, 2112), "order": (1, 0), "loops": "auto"}))
_register(_movement_spec(
    "pad", lambda padding=((1, 1), (2, 0)), **_: [("pad", tuple(map(tuple, padding)))], pad,
    cases=[
        {"shape": (4, 6), "padding": ((1, 1), (2, 0))},
        {"shape": (3, 5, 7), "padding": ((0, 2), (1, 1), (3, 0))},
        {"shape": (13,), "padding": ((3, 5),)},
        {"shape": (2, 3, 4), "padding": ((1, 0), (0, 0), (2, 3))},
    ],
    bench={"shape": (2040, 2040), "padding": ((4, 4), (4, 4))}))
_register(_movement_spec(
    "shrink", lambda bounds=((1, 3), (2, 6)), **_: [("shrink", tuple(map(tuple, bounds)))],
    shrink,
    cases=[
        {"shape": (4, 6), "bounds": ((1, 3), (2, 6))},
        {"shape": (5, 7, 3), "bounds": ((0, 5), (2, 5), (1, 2))},
        {"shape": (11,), "bounds": ((3, 10),)},
    ],
    bench={"shape": (2064, 2064), "bounds": ((8, 2056), (8, 2056))}))
_register(_movement_spec(
    "flip", lambda axes=(1,), **_: [("flip", tuple(axes))], flip,
    cases=[
        {"shape": (4, 6), "axes": (1,)},
        {"shape": (3, 5, 7), "axes": (0, 2)},
        {"shape": (9,), "axes": (0,)},
        {"shape": (2, 3, 5), "axes": (0, 1, 2)},
    ],
    bench={"shape": (2048, 2048), "axes": (0, 1)}))
_register(_movement_spec(
    "stride", lambda steps=(1, 2), **_: [("stride", tuple(steps))], stride,
    cases=[
        {"shape": (4, 6), "steps": (1, 2)},
        {"shape": (7, 5), "steps": (3, -2)},
        {"shape": (3, 4, 5), "steps": (-1, 2, 3)},
    ],
    bench={"shape": (2048, 4096), "steps": (1, 2)}))
_register(_movement_spec(
    "expand", lambda new_shape=(4, 6), **_: [("expand", tuple(new_shape))], expand,
    cases=[
        {"shape": (4, 1), "new_shape": (4, 6)},
        {"shape": (1, 5, 1), "new_shape": (3, 5, 7)},
    ],
    bench={"shape": (2048, 1), "new_shape": (2048, 2048)}))
_register(_movement_spec(
    "reshape", lambda new_shape=(2, 12), pre=(), **_: [*pre, ("reshape", tuple(new_shape))],
    reshape,
    cases=[
        {"shape": (4, 6), "new_shape": (2, 12)},
        {"shape": (6, 5), "new_shape": (3, 2, 5)},
        {"shape": (2, 3, 5), "new_shape": (6, 5)},
        {"shape": (5, 6), "new_shape": (5, 2, 3), "pre": [("permute", (1, 0)),
                                                         ("reshape", (6, 5)),
                                                         ("permute", (1, 0))]},
        {"shape": (4, 6), "new_shape": (3, 2, 8), "pre": [("pad", ((1, 1), (0, 2)))]},
        {"shape": (3, 7), "new_shape": (7, 3), "pre": [("flip", (1,))]},
    ],
    bench={"shape": (2048, 2048), "new_shape": (1024, 2, 2048)}))
_register(BuilderSpec(
    "reduce", "reduce", reduce, _ref_reduce, _copy_shapes, _reduce_out,
    cases=(
        {"shape": (4, 6), "axis": 1, "op": "sum"},
        {"shape": (5, 7), "axis": 0, "op": "max"},
        {"shape": (3, 4, 5), "axis": 1, "op": "sum"},
        {"shape": (3, 5, 2), "axis": -1, "op": "max", "chain": [("permute", (1, 0, 2))]},
        {"shape": (6, 5), "axis": 0, "op": "sum", "chain": [("pad", ((1, 2), (0, 0)))]},
    ),
    bench={"shape": (2048, 2048), "axis": 0, "op": "sum"}))
_register(BuilderSpec(
    "matmul", "matmul", matmul, _ref_matmul,
    lambda m=3, k=5, n=4, **_: [(m, k), (k, n)], lambda m=3, k=5, n=4, **_: (m, n),
    cases=({"m": 3, "k": 5, "n": 4}, {"m": 7, "k": 3, "n": 6}, {"m": 1, "k": 9, "n": 2},
           {"m": 4, "k": 4, "n": 4}),
    bench={"m": 128, "k": 128, "n": 128}))
_register(BuilderSpec(
    "conv2d", "conv", conv2d, _ref_conv2d, _conv_shapes, _conv_out_shape,
    cases=(
        {"n": 1, "cin": 2, "h": 5, "w": 5, "cout": 3, "kh": 3, "kw": 3},
        {"n": 2, "cin": 2, "h": 6, "w": 7, "cout": 2, "kh": 3, "kw": 2, "stride": 2},
        {"n": 1, "cin": 2, "h": 5, "w": 4, "cout": 2, "kh": 3, "kw": 3, "padding": 1},
        {"n": 1, "cin": 1, "h": 7, "w": 7, "cout": 1, "kh": 2, "kw": 2, "dilation": 2},
    ),
    bench={"n": 1, "cin": 8, "h": 34, "w": 34, "cout": 8, "kh": 3, "kw": 3}))
_register(BuilderSpec(
    "maxpool2d", "pool", maxpool2d, lambda x, **p: _ref_pool2d(x, op="max", **p),
    lambda n=1, c=2, h=6, w=6, **_: [(n, c, h, w)], _pool_out_shape,
    cases=(
        {"n": 1, "c": 2, "h": 6, "w": 6, "kernel_size": 2},
        {"n": 2, "c": 2, "h": 7, "w": 5, "kernel_size": 3, "stride": 1},
        {"n": 1, "c": 1, "h": 5, "w": 5, "kernel_size": 3, "stride": 2, "padding": 1},
    ),
    bench={"n": 4, "c": 16, "h": 128, "w": 128, "kernel_size": 2}))
_register(BuilderSpec(
    "avgpool2d", "pool", avgpool2d, lambda x, **p: _ref_pool2d(x, op="avg", **p),
    lambda n=1, c=2, h=6, w=6, **_: [(n, c, h, w)], _pool_out_shape,
    cases=(
        {"n": 1, "c": 2, "h": 6, "w": 6, "kernel_size": 2},
        {"n": 2, "c": 3, "h": 5, "w": 7, "kernel_size": 3, "stride": 2},
        {"n": 1, "c": 1, "h": 6, "w": 5, "kernel_size": 2, "stride": 1, "padding": 1},
    ),
    bench={"n": 4, "c": 16, "h": 128, "w": 128, "kernel_size": 2}))
_register(BuilderSpec(
    "cumsum", "scan", cumsum, _ref_cumsum, _copy_shapes,
    lambda shape=(3, 7), **_: _shape(shape),
    cases=({"shape": (3, 7), "axis": -1}, {"shape": (5, 4), "axis": 0}, {"shape": (17,)},
           {"shape": (2, 3, 5), "axis": 1}),
    bench={"shape": (64, 1000), "axis": -1}))
