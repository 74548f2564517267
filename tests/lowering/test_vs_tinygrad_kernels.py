"""tinygrad's own kernels, small shapes, through the bridge and the lowering, bit for bit.

Each case of ``benchmarks.tinygrad_kernels.CASES`` is scheduled by tinygrad 0.14 with its
CPU heuristic (BEAM off); every kernel AST comes over with ``eqsat.from_tinygrad``, is
compiled by ``lowering.compile_kernel`` (the e-graph, the default target), runs on copies
of the buffers tinygrad's program saw, and every buffer it writes must equal tinygrad's
bit for bit. tinygrad runs on its CPU device when clang is on PATH and on its PYTHON
emulator otherwise (a machine with gcc only); the emulator path also runs here on a few
cases whatever the machine has, so it cannot rot unseen.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import tinygrad_kernels as tk

DEVICE = tk.device()
CASES = {c.name: c for c in tk.CASES}

# (kernel, device) whose floats come out different from tinygrad's, and why. The
# expectation is strict: a listed kernel must still differ (and be close), an unlisted
# one must be bit-exact, so a fix shows as a failure that asks to drop its entry.
KNOWN_INEXACT = {
    ("matmul", "CPU"): "tinygrad sums acc + a0*b0 + a1*b1 + a2*b2 + a3*b3 per unrolled step, "
                       "which clang (-ffp-contract=on) fuses into fma(ai,bi,acc) in k order; "
                       "the lowering adds the products unfused",
    ("matmul", "PYTHON"): "the emulator computes tinygrad's MULACCs in double, rounded to "
                          "f32: neither the CPU's fma chain nor an unfused sum",
    ("conv2d", "CPU"): "acc + p8 + p0 + ... + p7 over the unrolled 3x3 window, fused by "
                       "clang into fmas, the window's last product first",
    ("conv2d", "PYTHON"): "the same window sum as MULACCs in the emulator",
    ("cumsum[0]", "PYTHON"): "the emulator adds each group of 4 unrolled terms, "
                             "((t0+t1)+t2)+t3, before the accumulator; the lowering, like "
                             "tinygrad's CPU program, adds them to it one by one",
}


def _check(k: tk.TgKernel, dev: str) -> None:
    assert k.graph is not None, f"{k.label}: the bridge refused the kernel: {k.error}"
    ran = tk.run_both(k)
    assert ran.written, f"{k.label}: the kernel writes no buffer"
    why = KNOWN_INEXACT.get((k.label, dev))
    if why is None:
        assert ran.bit_exact, (f"{k.label} on {dev}: slots {ran.mismatched} differ from "
                               f"tinygrad's (opts {k.opts})")
        return
    assert not ran.bit_exact, (f"{k.label} on {dev} is bit-exact now: drop its "
                               f"KNOWN_INEXACT entry ({why})")
    for slot in ran.mismatched:
        ours, theirs = ran.outputs[slot]
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_bit_exact_against_tinygrad(name: str) -> None:
    kernels = tk.schedule(CASES[name], "small", DEVICE)
    assert len(kernels) == (3 if name == "cumsum" else 1)
    for k in kernels:
        _check(k, DEVICE)


@pytest.mark.parametrize("name", ["elementwise", "reduce", "conv2d"])
def test_python_device_path(name: str) -> None:
    """The emulator's path (what a machine without clang runs), on a few cheap cases."""
    for k in tk.schedule(CASES[name], "small", "PYTHON"):
        _check(k, "PYTHON")


def test_known_inexact_names_real_kernels() -> None:
    """An entry naming no kernel would never be checked."""
    labels = {n for n in CASES if n != "cumsum"} | {f"cumsum[{i}]" for i in range(3)}
    for label, dev in KNOWN_INEXACT:
        assert label in labels and dev in ("CPU", "PYTHON"), (label, dev)


def test_device_without_clang(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert tk.clang() is None and tk.device() == "PYTHON"


def test_tinygrad_runs_the_optimized_schedule() -> None:
    """The optimized AST is what tinygrad runs: its optimizations are the call's
    ``opts_to_apply``; the small matmul, like the 256 one, is upcast and unrolled by
    4 around a reduce loop."""
    from tinygrad.uop.ops import AxisType, Ops

    (k,) = tk.schedule(CASES["matmul"], "small", DEVICE)
    assert k.call.src[0].arg.opts_to_apply == k.opts
    roles = {u.arg[-1] for u in k.ast.toposort() if u.op is Ops.RANGE}
    assert {AxisType.UPCAST, AxisType.UNROLL, AxisType.REDUCE} <= roles
