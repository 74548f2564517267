"""Views: how a tensor compiler turns loop indices into a buffer address.

A :class:`View` is a stack of layers (shape, strides, offset, mask); the loop
indices address the top layer, and each reshape that could not be expressed by
strides adds a layer whose flat index is *unflattened* into the layer below with
``//`` and ``%`` (tinygrad's ``unravel``), re-flattened by that layer's strides,
and so on down to the buffer (tinygrad's ShapeTracker / rangeify). Padding masks
become ``(where valid idx (invalid))``. Nothing is simplified here: that is the
optimizer's job.

    >>> View.contiguous((10, 6)).permute((1, 0)).shape
    (6, 10)

Movement ops (``View.apply``'s chain steps): reshape, permute, pad, shrink, flip,
stride, expand, repeat, pool. :func:`workloads.numpy_ref.apply_numpy` is their
numpy equivalent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqsat.ir.dtype import dtypes
from eqsat.ir.uop import UOp

__all__ = ["BuildError", "View", "unravel", "contiguous_strides", "Shape", "Mask", "Chain"]

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
