"""The cost of the run-time bounds checks of a gather (``lowering.cemit.bounds_check``).

A gather ``out[i] = a[idx[i]]`` and a scatter ``out[idx[i]] = a[i]`` (``--n`` elements,
``a``/``out`` of ``--size``, the indexes random inside), and a gated copy whose gate
``i != n - 1`` keeps its index inside ``a`` of ``n - 1`` elements without the lowering
proving it (``gated``: checked under the gate; a ``!=`` clause bounds nothing), are
compiled as the lowering emits them (checked) and from the same C with the check's line
removed (unchecked: the code before the checks existed, undefined where an index leaves
the buffer). Both run on the same arrays, interleaved; printed: the median ms of
``--runs`` calls each and the ratio checked / unchecked.

Usage::

    python benchmarks/gather_checks.py [--n 4194304] [--size 65536] [--runs 21]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KERNELS = {
    "gather": "(sink (end (store (index (buffer 0 f32 {n}) (range 0 {n})) (load (index "
              "(buffer 1 f32 {size}) (cast index (load (index (buffer 2 i32 {n}) "
              "(range 0 {n}))))))) (range 0 {n})))",
    "scatter": "(sink (end (store (index (buffer 0 f32 {size}) (cast index (load (index "
               "(buffer 2 i32 {n}) (range 0 {n}))))) (load (index (buffer 1 f32 {n}) "
               "(range 0 {n})))) (range 0 {n})))",
    "gated": "(sink (end (store (index (buffer 0 f32 {n}) (range 0 {n})) (load (index "
             "(buffer 1 f32 {m}) (where (ne (range 0 {n}) {m}) (range 0 {n}) "
             "(invalid))))) (range 0 {n})))",
}


def _unchecked(c: str) -> str:
    return "\n".join(ln for ln in c.splitlines() if "eqsat_oob[0] =" not in ln)


def main(argv: list[str] | None = None) -> int:
    from eqsat import parse
    from lowering import compile_kernel
    from lowering.compile import compile_c

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--size", type=int, default=1 << 16)
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"n={args.n} size={args.size} runs={args.runs} (median ms)")
    print(f"{'kernel':8} {'checked':>9} {'unchecked':>10} {'ratio':>7}")
    for name, text in KERNELS.items():
        k = compile_kernel(parse(text.format(n=args.n, size=args.size, m=args.n - 1)),
                           optimize=False)
        idx = rng.integers(0, args.size, args.n).astype(np.int32)
        src = np.ones({"scatter": args.n, "gated": args.n - 1}.get(name, args.size), np.float32)
        out = np.zeros(args.size if name == "scatter" else args.n, np.float32)
        arrays = (out, src) if name == "gated" else (out, src, idx)
        checked = k.bound(*arrays)
        lib = ctypes.CDLL(str(compile_c(_unchecked(k.c_source), extra_flags=k.flags, cc=k.cc)))
        fn = getattr(lib, k.name)
        fn.argtypes = [ctypes.c_void_p] * (len(arrays) + 1)
        ptrs = (*(a.ctypes.data for a in arrays), None)
        unchecked = functools.partial(fn, *ptrs)
        times: dict[str, list[float]] = {"checked": [], "unchecked": []}
        for _ in range(args.runs):
            for label, call in (("checked", checked), ("unchecked", unchecked)):
                t0 = time.perf_counter()
                call()
                times[label].append(time.perf_counter() - t0)
        a, b = (statistics.median(times[x]) * 1e3 for x in ("checked", "unchecked"))
        print(f"{name:8} {a:9.3f} {b:10.3f} {a / b:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
