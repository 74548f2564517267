"""Our workloads' bench kernels, ready to time, in this process or in a worker for
another checkout of the project.

:func:`prepare` compiles each builder's bench kernel (``workloads.BUILDERS``) with the
lowering's defaults, runs it once on buffers placed at fixed offsets from page
boundaries (:func:`paged`: two processes then see the same placement; a kernel's time
moves with where its buffers fall, docs/perf.md), and checks it against its numpy
reference.

Run as a script (``python benchmarks/workload_timer.py NAMES`` with ``PYTHONPATH`` the
other checkout's root) it is a worker: it prepares the kernels of whatever ``lowering``
and ``workloads`` it imports, prints one JSON line (``{name: ok}``), then answers each
line ``NAME`` on its standard input with the seconds of one call (``CLOCK``: ``wall``
or ``cpu``, thread CPU time). ``benchmarks/vs_tinygrad.py --against TREE`` interleaves
it with this checkout's calls. It uses only what every checkout since the workloads
registry has: ``make``, ``BUILDERS``, ``compile_kernel``, ``Kernel.bound``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import numpy as np

__all__ = ["CLOCKS", "paged", "prepare", "main"]

CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def paged(a: np.ndarray, i: int) -> np.ndarray:
    """A copy of ``a`` at a page boundary plus ``192 * i`` bytes (buffer ``i`` of a
    kernel): the same placement in every process."""
    raw = np.empty(a.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + 192 * i
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _close(got: np.ndarray, want: np.ndarray, is_float: bool) -> bool:
    if is_float:  # the references sum floats in f64
        return bool(np.allclose(got, want, rtol=1e-4, atol=1e-4))
    return bool(np.array_equal(got, want))


def prepare(names: list[str]) -> dict[str, tuple[Callable[[], object], Callable[[], object],
                                                 bool]]:
    """Per builder: our kernel's call (in place, no checks), its numpy reference's call,
    and whether the two agreed."""
    from lowering import compile_kernel
    from workloads import BUILDERS, make

    out = {}
    for name in names:
        bk = make(name, **BUILDERS[name].bench)
        inputs = bk.random_inputs(seed=0)
        kernel = compile_kernel(bk.graph)
        bufs = [paged(b, i) for i, b in enumerate(bk.buffers(inputs))]
        kernel(*bufs)
        ok = _close(bufs[0], bk.reference(*inputs).reshape(-1), bk.dtype.is_float)
        out[name] = (kernel.bound(*bufs),
                     lambda bk=bk, inputs=inputs: bk.reference(*inputs), ok)
    return out


def main(argv: list[str]) -> int:
    names, clock = argv[0].split(","), CLOCKS[argv[1] if len(argv) > 1 else "wall"]
    runs = prepare(names)
    print(json.dumps({n: ok for n, (_, _, ok) in runs.items()}), flush=True)
    for line in sys.stdin:
        run = runs[line.strip()][0]
        t0 = clock()
        run()
        print(clock() - t0, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
