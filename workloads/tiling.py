"""Loop schedules of a kernel's output: cache tiles, register tiles, loop order.

A :class:`Tiling` splits each output axis into tile loops and an unrolled
register tile (a tensor compiler's UPCAST); :func:`auto_tiling` picks one for a
copy through a view (a transpose gets a 4x4 register tile, so that the C
compiler vectorizes it). ``Loops`` is what a builder's ``loops`` parameter takes:
``"nd"``, ``"flat"``, ``"auto"``, a tuple of tile sizes or a :class:`Tiling`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from eqsat.ir.uop import UOp
from workloads.views import BuildError, Shape, View, _shape

__all__ = ["Tiling", "auto_tiling", "Loops"]


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
