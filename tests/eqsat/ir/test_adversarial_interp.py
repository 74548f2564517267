"""Adversarial cases of the reference interpreter (docs/format.md, "Meaning"): a NaN read
from memory keeps its bits only where the array holds them exactly; the lanes of a
vector load that is undefined as a whole; node_values of a reduction."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat.ir.dtype import dtypes
from eqsat.ir.interp import EvalError, evaluate, evaluate_lanes, node_values
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp

BF = "(load (index (buffer 0 bf16 1) 0))"
F32 = "(load (index (buffer 0 f32 1) 0))"
COMPUTED = "NaN computed by an op"


# one line a case: the expression, buffer 0's array (its element's bits), the value or error
@pytest.mark.parametrize("expr, array, want", [
    (f"(bitcast u16 {BF})", np.array([0x7FC10000], np.uint32).view(np.float32), 0x7FC1),
    (f"(bitcast u16 {BF})", np.array([0xFF810000], np.uint32).view(np.float32), 0xFF81),
    # an f32 NaN that is no bf16 (its lower half is not 0) is rounded: no bits to keep
    (f"(bitcast u16 {BF})", np.array([0x7F800001], np.uint32).view(np.float32), COMPUTED),
    (f"(bitcast bf16 (bitcast u16 {BF}))", np.array([0x7F800001], np.uint32).view(np.float32),
     COMPUTED),
    (f"(bitcast u16 {BF})", np.array([0x3F800001], np.uint32).view(np.float32), 0x3F80),
    (f"(bitcast u32 {F32})", np.array([0x7FC00001], np.uint32).view(np.float32), 0x7FC00001),
    (f"(bitcast u32 {F32})", np.array([np.nan], np.float64), COMPUTED),  # f64 to f32: rounded
])
def test_bitcast_of_a_loaded_nan(expr: str, array: np.ndarray, want: int | str) -> None:
    g = parse(expr)
    if isinstance(want, str):
        with pytest.raises(EvalError, match=want):
            evaluate(g, {}, buffers=[array])
    else:
        assert evaluate(g, {}, buffers=[array]) == want


def _vector_load(index: str) -> UOp:
    """A 2-lane load at ``index`` (a pointer cast, which the text format does not write)."""
    idx = parse(index)
    return UOp(Ops.LOAD, dtypes.f32.vec(2), (UOp(Ops.CAST, dtypes.f32.vec(2).ptr_to(), (idx,)),))


# one line a case: the 2-lane load's index, lanes picked from (cat LOAD 5.0), i, the value
# (None: undefined). A vector access undefined as a whole is undefined in each lane, and
# the lanes after it keep their places.
@pytest.mark.parametrize("index, lanes, i, want", [
    ("(index (buffer 0 f32 8) (var i 0 7))", (1,), 7, None),       # reads elements 7..8
    ("(index (buffer 0 f32 8) (var i 0 7))", (2,), 7, 5.0),
    ("(index (buffer 0 f32 8) (var i 0 7))", (2,), 6, 5.0),
    ("(index (buffer 0 f32 8) (var i 0 7))", (0, 1), 6, (6.0, 7.0)),
    ("(index (buffer 0 f32 8) (idiv 6 (var i 0 7)))", (2,), 0, 5.0),  # address undefined
    ("(index (buffer 0 f32 8) (idiv 6 (var i 0 7)))", (0,), 0, None),
])
def test_lanes_of_an_undefined_vector_load(index: str, lanes: tuple, i: int, want) -> None:
    load = _vector_load(index)
    g = UOp(Ops.CAT, dtypes.f32.vec(3), (load, UOp.const(dtypes.f32, 5.0))).gep(*lanes)
    buf = np.arange(8, dtype=np.float32)
    if want is None:
        with pytest.raises(EvalError, match="undefined"):
            evaluate(g, {"i": i}, buffers=[buf])
    else:
        assert evaluate(g, {"i": i}, buffers=[buf]) == want
    per_lane = evaluate_lanes(g, {"i": np.array([i])}, n=1, memory=_Fixed(buf))
    assert [bool(u[0]) for _, _, u in per_lane] == [want is None] * len(lanes)


class _Fixed:
    """One buffer's contents at every point (eqsat.ir.interp.Memory)."""

    def __init__(self, buf: np.ndarray) -> None:
        self.buf = buf

    def read(self, buffer: UOp, offsets: np.ndarray, points: np.ndarray) -> np.ndarray:
        return self.buf[offsets]

    def arrays(self, point: int) -> list[np.ndarray]:
        return [self.buf]


# one line a case: an expression with a reduction, the env; node_values gives the root the
# value evaluate gives (a reduction folds its body over its ranges, whatever env says of them)
@pytest.mark.parametrize("text, env", [
    ("(reduce add (var x 0 9) (range 0 4))", {"x": 2, "R0": 0}),
    ("(add (reduce max (mul (range 0 3) (var x 0 9)) (range 0 3)) 1)", {"x": 4, "R0": 1}),
    ("(reduce add (range 0 (var n -2 5)) (range 0 (var n -2 5)))", {"n": 5, "R0": 0}),
])
def test_node_values_of_a_reduction(text: str, env: dict) -> None:
    g = parse(text)
    assert node_values(g, env)[g] == evaluate(g, {k: v for k, v in env.items() if k != "R0"})
