"""The ordered-matcher baseline over the index-expression corpus.

Prints, per corpus source: cases, total reference cost (input / tinygrad's
field / baseline), idiv+mod counts, total and median baseline time, and how
many outputs are not equivalent to their input (``eqsat.check_equivalent``).
Then the cases where the baseline costs most above tinygrad.

Usage: ``python3 benchmarks/baseline_corpus.py [--corpus PATH] [--no-check]
[--worst N] [--profile]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat.engines.baseline import optimize_baseline  # noqa: E402
from eqsat.ir.sexpr import parse, to_sexpr  # noqa: E402
from eqsat.progress import progress  # noqa: E402
from extraction.cost import divmod_count, reference_cost  # noqa: E402


def source_group(source: str) -> str:
    """The corpus source kinds the report groups by."""
    if source.startswith("kernel:"):
        return "kernel/reshape" if source.endswith("/reshape") else "kernel"
    return source


def run(rows: list[dict[str, Any]], check: bool) -> list[dict[str, Any]]:
    """Optimize every row; one result dict per row."""
    from eqsat.ir.equiv import check_equivalent

    out = []
    bar = progress(total=len(rows), desc="baseline")
    for row in rows:
        bar.update(1)
        g = parse(row["expr"])
        t0 = time.perf_counter()
        res, stats = optimize_baseline(g)
        dt = time.perf_counter() - t0
        rec = {"id": row["id"], "group": source_group(row["source"]), "time": dt,
               "cost_in": reference_cost(g), "cost_tg": row["cost_tg"],
               "cost_out": reference_cost(res), "dm_in": divmod_count(g),
               "dm_tg": row["divmod_tg"], "dm_out": divmod_count(res),
               "stop": stats["stop_reason"], "out": res, "expr": row["expr"],
               "tinygrad": row["tinygrad"]}
        if check:
            eq = check_equivalent(g, res)
            rec["equivalent"] = bool(eq)
            rec["eq"] = eq
        out.append(rec)
    bar.close()
    return out


def report(results: list[dict[str, Any]], worst: int) -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by[r["group"]].append(r)
    by["ALL"] = results
    hdr = (f"{'source':<20} {'cases':>5} {'cost in':>8} {'tinygrad':>8} {'baseline':>8} "
           f"{'ratio':>6} {'dm in':>6} {'dm tg':>6} {'dm out':>6} {'time s':>7} "
           f"{'med ms':>7} {'ineq':>5} {'limit':>5}")
    print(hdr)
    print("-" * len(hdr))
    for name in sorted(by, key=lambda n: (n == "ALL", n)):
        rs = by[name]
        tg = sum(r["cost_tg"] for r in rs)
        bl = sum(r["cost_out"] for r in rs)
        ineq = sum(1 for r in rs if r.get("equivalent") is False)
        checked = any("equivalent" in r for r in rs)
        print(f"{name:<20} {len(rs):>5} {sum(r['cost_in'] for r in rs):>8} {tg:>8} {bl:>8} "
              f"{bl / tg if tg else 0:>6.3f} {sum(r['dm_in'] for r in rs):>6} "
              f"{sum(r['dm_tg'] for r in rs):>6} {sum(r['dm_out'] for r in rs):>6} "
              f"{sum(r['time'] for r in rs):>7.3f} "
              f"{statistics.median(r['time'] for r in rs) * 1e3:>7.2f} "
              f"{ineq if checked else '-':>5} "
              f"{sum(1 for r in rs if r['stop'] != 'fixpoint'):>5}")
    total_tg = sum(r["cost_tg"] for r in results)
    total_bl = sum(r["cost_out"] for r in results)
    print(f"\ntarget: baseline total <= 1.05 x tinygrad = {1.05 * total_tg:.0f}; "
          f"baseline {total_bl} ({'met' if total_bl <= 1.05 * total_tg else 'MISSED'})")
    bad = [r for r in results if r.get("equivalent") is False]
    for r in bad[:10]:
        print(f"\nNOT EQUIVALENT {r['id']}: {r['eq']!r}\n  in : {r['expr']}\n  out: "
              f"{to_sexpr(r['out'], compact=True)}")
    if worst:
        loss = sorted(results, key=lambda r: r["cost_tg"] - r["cost_out"])[:worst]
        print(f"\n{worst} cases furthest above tinygrad (baseline - tinygrad):")
        for r in loss:
            if r["cost_out"] <= r["cost_tg"]:
                break
            print(f"  {r['id']:<8} {r['group']:<18} +{r['cost_out'] - r['cost_tg']:<4} "
                  f"in {r['cost_in']:<5} tg {r['cost_tg']:<5} out {r['cost_out']}")
        gain = sorted(results, key=lambda r: r["cost_out"] - r["cost_tg"])[:5]
        print("5 cases furthest below tinygrad:")
        for r in gain:
            print(f"  {r['id']:<8} {r['group']:<18} {r['cost_out'] - r['cost_tg']:<5} "
                  f"in {r['cost_in']:<5} tg {r['cost_tg']:<5} out {r['cost_out']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=corpus_path())
    ap.add_argument("--no-check", action="store_true", help="skip the equivalence checks")
    ap.add_argument("--worst", type=int, default=15, help="list the N worst cases")
    ap.add_argument("--profile", action="store_true", help="cProfile the optimization")
    ap.add_argument("--show", nargs="*", default=[], help="print these case ids in full")
    args = ap.parse_args(argv)
    if not args.corpus.is_file():
        print(f"corpus not found: {args.corpus} (set EQSAT_CORPUS)", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in args.corpus.open() if line.strip()]
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        results = run(rows, check=False)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    else:
        t0 = time.perf_counter()
        results = run(rows, check=not args.no_check)
        print(f"(wall time including checks: {time.perf_counter() - t0:.1f} s)\n")
    report(results, args.worst)
    for r in results:
        if r["id"] in args.show:
            print(f"\n{r['id']} cost in {r['cost_in']} tg {r['cost_tg']} out {r['cost_out']}")
            print(f"  in : {r['expr']}\n  tg : {r['tinygrad']}\n  out: "
                  f"{to_sexpr(r['out'], compact=True)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
