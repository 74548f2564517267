"""Adversarial kernels that store a NaN and read its bits back (docs/format.md, "Floats"):
a store copies a loaded NaN's bits, as the compiled C does; a NaN an op computed has
unspecified bits, in memory too, so a bitcast of it read back is undefined."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import EvalError, parse, run_kernel
from lowering import compile_kernel

#: f32 bits: NaNs of either sign, signaling and quiet, with payloads; inf; 1.0; -0.0
BITS = np.array([0xFFC00001, 0x7F800001, 0x7FC00000, 0x7F800000, 0xFF800002, 0x7FFFFFFF,
                 0x80000000, 0x3F800000], np.uint32)
IN = "(buffer 1 f32 8)"
TMP = "(buffer 2 f32 8)"
R, R2 = "(range 0 8)", "(range 1 8)"


def _two_steps(value: str) -> str:
    """A kernel: TMP[r] = value (of LD, element r of IN), then OUT[r] = the bits of TMP[r]."""
    step = f"(end (store (index {TMP} {R}) {value.replace('LD', f'(load (index {IN} {R}))')}) {R})"
    return (f"(sink (end (store (index (buffer 0 u32 8) {R2}) (bitcast u32 (load (index "
            f"(after {TMP} {step}) {R2})))) {R2}))")


# one line a case: the stored value, the output's bits (None: undefined, as a bitcast of a
# NaN an op computed, read back from memory)
@pytest.mark.parametrize("value, want", [
    ("LD", BITS),                                                  # a copy keeps every bit
    ("(where (lt (range 0 8) 8) LD 1.0)", BITS),
    ("(sub LD LD)", None),                                         # NaNs an op computed
    ("(mul LD 1.0)", None),
])
def test_a_stored_nan_read_back(value: str, want, tmp_path_factory) -> None:
    k = parse(_two_steps(value))

    def bufs() -> list[np.ndarray]:
        return [np.zeros(8, np.uint32), BITS.view(np.float32).copy(), np.zeros(8, np.float32)]

    if want is None:
        with pytest.raises(EvalError, match="NaN computed by an op"):
            run_kernel(k, bufs())
        return
    np.testing.assert_array_equal(run_kernel(k, bufs())[0], want)
    got = bufs()
    compile_kernel(k, optimize=False, cache_dir=tmp_path_factory.getbasetemp() / "k")(*got)
    np.testing.assert_array_equal(got[0], want)


def test_a_copy_keeps_the_bits() -> None:
    k = parse(f"(sink (end (store (index (buffer 0 f32 8) {R}) (load (index {IN} {R}))) {R}))")
    out = run_kernel(k, [np.zeros(8, np.float32), BITS.view(np.float32).copy()])[0]
    np.testing.assert_array_equal(out.view(np.uint32), BITS)
