"""``benchmarks/vs_tinygrad.py``'s kernel tables on small cases: every kernel of a case
gets a row with both timings and its bit-exactness, and the tables print them. tinygrad
runs on its CPU device with clang and on its PYTHON emulator without."""

from __future__ import annotations

from pathlib import Path

from benchmarks import tinygrad_kernels, vs_tinygrad


def test_kernel_rows_and_table() -> None:
    rows = vs_tinygrad.run_kernels(["elementwise", "reduce"], "small", runs=2,
                                   dev=tinygrad_kernels.device())
    assert [r.name for r in rows] == ["elementwise", "reduce"]
    for r in rows:
        assert r.bit_exact is True and not r.error
        assert r.tinygrad_ms > 0 and r.ours_ms > 0 and r.chunks == 1
        assert r.flags.startswith("-O2") and r.cc
    table = vs_tinygrad.kernel_table(rows)
    for r in rows:
        line = next(ln for ln in table.splitlines() if ln.split()[:1] == [r.name])
        assert line.split()[-2] == f"{r.ours_ms / r.tinygrad_ms:.2f}"
        assert line.endswith("yes")
        assert f"ours compiled by {r.cc} {r.flags}" in table


def test_workload_rows_and_table() -> None:
    rows = vs_tinygrad.run_workloads(["permute", "matmul"], runs=1)
    assert [r.name for r in rows] == ["permute", "matmul"]
    assert all(r.ok and r.ours_ms > 0 and r.numpy_ms > 0 for r in rows)
    table = vs_tinygrad.workload_table(rows)
    assert all(f"{r.ours_ms / r.numpy_ms:.2f}" in table for r in rows)


def test_workload_rows_against_another_checkout() -> None:
    """``--against``: a worker process builds the same kernels from another checkout (here
    this one) and times them in the same rounds; the table gets its column."""
    tree = Path(vs_tinygrad.__file__).resolve().parent.parent
    rows = vs_tinygrad.run_workloads(["permute"], runs=2, against=tree, clock="cpu")
    assert [(r.name, r.ok, r.against_ok) for r in rows] == [("permute", True, True)]
    assert rows[0].against_ms > 0 and rows[0].ours_ms > 0
    table = vs_tinygrad.workload_table(rows, "here")
    assert "ours/old" in table and f"{rows[0].ours_ms / rows[0].against_ms:.2f}" in table
