"""Adversarial cases of the reference interpreter's NaN bits (docs/format.md, "Floats"):
a NaN read from memory keeps its bits only where the array holds them exactly."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat.ir.interp import EvalError, evaluate
from eqsat.ir.sexpr import parse

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
