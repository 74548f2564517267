"""A fingerprint of the e-graph engine's outputs: a change that must keep them
byte-identical is checked by comparing it before and after.

Runs the first ``--corpus`` cases of ``data/corpus/index-exprs.jsonl``, ``--unseen``
cases per kind of ``tests/gen_cases.py`` (seed 0), ``benchmarks/stress.py``'s
``kernel_graph(1000)`` and ``benchmarks/scale.py``'s tinygrad kernel of about 500
nodes through ``eqsat.optimize(engine="egraph", cost_model="reference")`` (one call
each, the result cache off) and prints, per group and in all, the sha256 of the
outputs' text and the total cost, and the stop reasons.

Usage: ``python benchmarks/engine_fingerprint.py [--corpus 200] [--unseen 50]
[--no-kernels]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if p and Path(p).resolve() not in (_HERE, REPO)]


def _groups(n_corpus: int, n_unseen: int, kernels: bool) -> dict[str, list]:
    from eqsat.ir.sexpr import parse
    from tests.gen_cases import generate

    with open(REPO / "data/corpus/index-exprs.jsonl") as f:
        rows = [json.loads(line) for line in f if line.strip()][:n_corpus]
    out = {"corpus": [parse(r["expr"]) for r in rows],
           "unseen": [parse(c["expr"]) for c in generate(n_unseen, 0)]}
    if kernels:
        from benchmarks.scale import tinygrad_kernel
        from benchmarks.stress import kernel_graph

        out["kernels"] = [parse(kernel_graph(1000)), tinygrad_kernel(500)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=int, default=200)
    ap.add_argument("--unseen", type=int, default=50, help="cases per kind")
    ap.add_argument("--no-kernels", action="store_true")
    a = ap.parse_args(argv)

    import eqsat
    from eqsat.engines.egraph import set_result_cache_size
    from eqsat.ir.sexpr import to_sexpr

    set_result_cache_size(0)
    eqsat.session_for(None).prepare()
    whole = hashlib.sha256()
    total = 0.0
    t0 = time.perf_counter()
    for name, graphs in _groups(a.corpus, a.unseen, not a.no_kernels).items():
        h = hashlib.sha256()
        cost = 0.0
        stops: Counter[str] = Counter()
        for g in graphs:
            r = eqsat.optimize(g, engine="egraph", cost_model="reference")
            text = to_sexpr(r.graph) + "\n"
            h.update(text.encode())
            whole.update(text.encode())
            cost += r.cost
            stops[r.stats.get("stop_reason")] += 1
        total += cost
        print(f"{name:8s} n={len(graphs):4d} cost={cost:10.1f} sha256={h.hexdigest()[:16]} "
              f"stops={dict(sorted(stops.items()))}")
    print(f"all      cost={total:.1f} sha256={whole.hexdigest()} "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
