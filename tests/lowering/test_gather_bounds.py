"""Run-time bounds checks of gathers and scatters (lowering.cemit.bounds_check): an index
computed from loaded data that the bounds do not prove inside its buffer is checked in the
C; in range the kernel gives the interpreter's answer, out of range it stops with an
OutOfBoundsError naming the buffer, the index and the value (never a read or a write
outside the array)."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import evaluate, parse
from eqsat.ir.ops import Ops
from lowering import OutOfBoundsError, Target, compile_kernel, compile_kernels, lower
from tests.lowering._oob import runs_like_the_interpreter

IDX = "(cast index (load (index (buffer 2 i32 8) (range 0 8))))"
GATHER = (f"(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 16) "
          f"{IDX}))) (range 0 8)))")
SCATTER = (f"(sink (end (store (index (buffer 0 f32 16) {IDX}) (load (index (buffer 1 f32 8) "
           "(range 0 8)))) (range 0 8)))")
# the gather gated: lanes whose index is 7 or more read 0.0
GATED = (f"(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 16) "
         f"(where (lt {IDX} 7) {IDX} (invalid))))) (range 0 8)))")
# the index's low bits only (and 15): proven inside, no check
MASKED = (f"(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 16) "
          f"(and {IDX} 15)))) (range 0 8)))")
# the index's remainder by 16 (C's: -15..15): only the lower bound is checked
REMAINDER = (f"(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index "
             f"(buffer 1 f32 16) (mod {IDX} 16)))) (range 0 8)))")
# the index at least 0: only the upper bound is checked
AT_LEAST_0 = (f"(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index "
              f"(buffer 1 f32 16) (max {IDX} 0)))) (range 0 8)))")
TARGETS = [Target(), Target(vectorize=True, aligned=True, predicated_stores=True)]


def _arrays(text: str, idx: list[int]) -> list[np.ndarray]:
    g = parse(text)
    bufs = sorted((u for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg[0])
    out = [np.zeros(b.arg[1], np.float32) if b.arg[0] == 0 else
           np.arange(b.arg[1], dtype=np.float32) + 0.5 for b in bufs[:2]]
    return out + [np.array(idx, np.int32)]


# one line a case: the kernel, the index data, then the error's text (None: it runs)
@pytest.mark.parametrize("text, idx, error", [
    (GATHER, [3, 1, 4, 1, 5, 9, 2, 15], None),
    (GATHER, [3, 1, 4, 1, 5, 16, 2, 6], r"load from buffer 1 \(f32, size 16\) at index 16, "
                                        r"outside 0\.\.15: the index \(load \(index \(buffer 2"),
    (GATHER, [3, 1, -1, 1, 5, 9, 2, 6], r"load from buffer 1 .* at index -1, outside 0\.\.15"),
    (SCATTER, [7, 6, 5, 4, 3, 2, 1, 0], None),
    (SCATTER, [0, 1, 2, 3, 4, 5, 6, 99], r"store to buffer 0 \(f32, size 16\) at index 99"),
    (SCATTER, [-5, 1, 2, 3, 4, 5, 6, 7], r"store to buffer 0 .* at index -5, outside 0\.\.15"),
    (GATED, [3, 1, 40, 1, 5, 9, 2, 6], None),
    (GATED, [3, 1, 4, -2, 5, 9, 2, 6], r"load from buffer 1 .* at index -2"),
    (MASKED, [3, 17, 40, -1, 5, 9, 2, 6], None),
    (REMAINDER, [3, 17, 40, 1, 5, 9, 2, 6], None),
    (REMAINDER, [3, 17, 40, -1, 5, 9, 2, 6], r"load from buffer 1 .* at index -1"),
    (AT_LEAST_0, [3, 1, -4, 1, 5, 9, 2, 6], None),
    (AT_LEAST_0, [3, 1, -4, 1, 5, 9, 2, 16], r"load from buffer 1 .* at index 16"),
])
@pytest.mark.parametrize("optimize", [False, "baseline"])
@pytest.mark.parametrize("target", TARGETS, ids=["plain", "vectorize"])
def test_gather_checked_at_run_time(text: str, idx: list[int], error: str | None, optimize,
                                    target: Target, tmp_path_factory) -> None:
    k = compile_kernel(parse(text), optimize=optimize, target=target,
                       cache_dir=tmp_path_factory.getbasetemp() / "kernels")
    runs_like_the_interpreter(k, text, _arrays(text, idx), _arrays(text, idx), error)


# one line a case: the kernel, then the checks its C makes (below 0, at or past the end)
@pytest.mark.parametrize("text, checks", [
    (GATHER, ("val0 < 0", "val0 >= 16")),
    (SCATTER, ("val0 < 0", "val0 >= 16")),
    (MASKED, ()),
    (AT_LEAST_0, (">= 16",)),
    # an index summed from loaded data (through an accumulator): checked
    ("(sink (end (store (index (buffer 0 f32 8) (cast index (reduce add (load (index "
     "(buffer 1 i32 4) (range 1 4))) (range 1 4)))) 1.0) (range 0 2)))", ("val2 < 0",
                                                                          "val2 >= 8")),
    # an index reduced from loop indices: proven on the input graph, no check
    ("(sink (end (store (index (buffer 0 f32 8) (reduce max (range 1 8) (range 1 8))) "
     "(cast f32 (range 0 2))) (range 0 2)))", ()),
    # no loaded index: proven by the bounds, the C unchanged
    ("(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 8) "
     "(sub 7 (range 0 8))))) (range 0 8)))", ()),
])
def test_only_unproven_sides_are_checked(text: str, checks: tuple[str, ...]) -> None:
    c = lower(parse(text), optimize=False)
    lines = [ln for ln in c.splitlines() if "eqsat_oob[0]" in ln]
    assert ("eqsat_oob" in c) == bool(checks)
    assert len(lines) == (1 if checks else 0)
    for part in checks:
        assert part in lines[0]
    if checks == (">= 16",):
        assert "< 0" not in lines[0]


def test_expression_kernel_gather(tmp_path) -> None:
    """A bare gathered value: its function returns it, or the error."""
    text = ("(load (index (buffer 0 f32 8) (cast index (load (index (buffer 1 i32 4) "
            "(range 0 4))))))")
    k = compile_kernel(parse(text), optimize=False, cache_dir=tmp_path)
    data, idx = np.arange(8, dtype=np.float32) * 2, np.array([7, 0, 8, -3], np.int32)
    for r in (0, 1):
        assert k(data, idx, R0=r) == evaluate(parse(text), {"R0": r},
                                              buffers=[data, idx]) == data[idx[r]]
    for r, v in ((2, 8), (3, -3)):
        with pytest.raises(OutOfBoundsError, match=f"load from buffer 0 .* at index {v},"):
            k(data, idx, R0=r)


def test_a_failed_run_leaves_earlier_stores() -> None:
    """The kernel stops at the first index outside: the stores before it happened."""
    k = compile_kernel(parse(SCATTER), optimize=False)
    out, src, idx = _arrays(SCATTER, [4, 5, 6, 40, 0, 1, 2, 3])
    with pytest.raises(OutOfBoundsError, match="at index 40"):
        k(out, src, idx)
    assert list(out[4:7]) == [0.5, 1.5, 2.5] and not out[:4].any() and not out[7:].any()


def test_compiled_together(tmp_path) -> None:
    """Kernels compiled into one library keep their checks and their errors."""
    ks = compile_kernels([compile_kernel(parse(t), optimize=False, name=n, compile=False)
                          for n, t in (("g", GATHER), ("s", SCATTER), ("m", MASKED))],
                         cache_dir=tmp_path)
    assert [k.compiled for k in ks] == [True] * 3
    for k, text in zip(ks, (GATHER, SCATTER, MASKED), strict=True):
        arrays = _arrays(text, [1, 2, 3, 4, 5, 6, 7, 300])
        if text is MASKED:
            k(*arrays)
        else:
            with pytest.raises(OutOfBoundsError, match=f"^{k.name}: .* at index 300"):
                k(*arrays)
