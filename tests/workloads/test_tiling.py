"""Loop schedules of the builders: :class:`workloads.Tiling` (tiles, register tiles,
loop orders) and :func:`workloads.auto_tiling` (the schedule a copy picks)."""

from __future__ import annotations

import pytest

from workloads import BuildError, Tiling, View, auto_tiling, make


def test_tiling_repr_reads_back() -> None:
    t = Tiling((16, 64), upcast=(4, 4), order=(1, 0), outer=(0, 1))
    assert eval(repr(t)) == t
    d = Tiling((4, 4))
    assert d.upcast == (1, 1) and d.order == (0, 1) and d.outer == (0, 1)


@pytest.mark.parametrize("tiling,msg", [
    (lambda: Tiling((4, 6), upcast=(4, 4)), "must divide the tile"),
    (lambda: Tiling((4, 4), order=(0, 0)), "not a permutation"),
    (lambda: Tiling((4, 4), outer=(1,)), "not a permutation"),
    (lambda: make("permute", shape=(4, 6), loops=Tiling((4, 4))), "must divide the output"),
])
def test_tiling_errors(tiling, msg) -> None:
    with pytest.raises(BuildError, match=msg):
        tiling()


@pytest.mark.parametrize("shape,order,want", [
    ((2080, 2112), (1, 0), Tiling((16, 520), upcast=(4, 4), order=(0, 1))),
    ((12, 10), (1, 0), Tiling((10, 12), upcast=(2, 4), order=(0, 1))),
    ((4, 6, 8), (2, 0, 1), Tiling((8, 1, 6), upcast=(4, 1, 2), order=(1, 0, 2))),
    ((5, 7), (1, 0), "nd"),                  # odd sizes: no register tile
    ((6, 8), (0, 1), "nd"),                  # already contiguous
    ((2, 3, 4, 5), (3, 1, 0, 2), "nd"),      # 5 and 3 are odd
])
def test_auto_tiling(shape, order, want) -> None:
    assert auto_tiling(View.contiguous(shape).permute(order)) == want


def test_auto_tiling_keeps_reshaped_views() -> None:
    v = View.contiguous((4, 6)).permute((1, 0)).reshape((3, 8))
    assert auto_tiling(v) == "nd"
