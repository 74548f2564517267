"""Both engines on *unseen* cases (``tests/gen_cases.py``), per kind.

Generates ``--n`` cases per kind (``tinygrad-unit-like``, ``synthetic-view``,
``kernel``) with ``--seed``, optimizes each with the baseline and the e-graph
engine (each call in a worker process with a timeout, so a hang or crash is
reported, not fatal), and prints per kind and engine: total reference cost
(input / baseline / e-graph), idiv+mod counts, outputs not equivalent to their
input (``eqsat.check_equivalent``), errors (crash, RewriteLimitError, timeout),
cases where the e-graph is costlier than the baseline, and time (total and
slowest). Then the listed findings with their ``.uop`` text.

Usage: ``python3 benchmarks/unseen.py [--n 150] [--seed 0] [--kind KIND]
[--engine baseline|egraph] [--timeout 60] [--cost-model reference] [--only ID]
[--limit 15] [--json OUT] [--corpus JSONL] [--progress]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# the repo first, and not this directory: benchmarks/extraction.py would shadow the
# `extraction` package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if p and Path(p).resolve() not in (_HERE, REPO)]

from eqsat.progress import progress as progress_bar  # noqa: E402
from tests.gen_cases import KINDS, generate, kind_of  # noqa: E402

ENGINES = ("baseline", "egraph")
WARMUP = "(idiv (add (mul (var x 0 7) 4) 3) 4)"


def run_one(expr: str, engine: str, cost_model: str) -> dict[str, Any]:
    """Optimize one case and check it; a plain dict (picklable) with the figures."""
    from eqsat.api import optimize
    from eqsat.ir.equiv import check_equivalent
    from eqsat.ir.sexpr import parse, to_sexpr
    from extraction.cost import divmod_count, reference_cost

    g = parse(expr)
    rec: dict[str, Any] = {"cost_in": reference_cost(g), "dm_in": divmod_count(g)}
    t0 = time.perf_counter()
    try:
        res = optimize(g, engine=engine, cost_model=cost_model)
    except Exception as e:  # noqa: BLE001 - a finding, reported with its type
        rec.update(error=f"{type(e).__name__}: {e}"[:400], time=time.perf_counter() - t0,
                   trace=traceback.format_exc()[-1500:])
        return rec
    rec["time"] = time.perf_counter() - t0
    out = res.graph
    text = to_sexpr(out, True)
    rec.update(cost_out=reference_cost(out), dm_out=divmod_count(out), out=text,
               stop=res.stats.get("stop_reason"), fallback=res.stats.get("fallback"))
    try:  # the printed output must read back to the same graph
        rec["roundtrip"] = parse(text) is out
    except Exception as e:  # noqa: BLE001
        rec["roundtrip"] = f"{type(e).__name__}: {e}"[:300]
    try:
        eq = check_equivalent(g, out)
        rec["equivalent"] = bool(eq)
        if not eq:
            rec["counterexample"] = repr(eq)[:400]
    except Exception as e:  # noqa: BLE001
        rec["equivalent"] = None
        rec["check_error"] = f"{type(e).__name__}: {e}"[:300]
    return rec


class Runner:
    """Runs cases in a reusable worker process; restarts it after a timeout or crash."""

    def __init__(self, timeout: float, cost_model: str) -> None:
        self.timeout, self.cost_model = timeout, cost_model
        self.ctx = mp.get_context("fork")
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_serve, args=(child, self.cost_model), daemon=True)
        self.proc.start()
        self.conn = parent

    def run(self, expr: str, engine: str) -> dict[str, Any]:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        t0 = time.perf_counter()
        self.conn.send((expr, engine))
        if not self.conn.poll(self.timeout):
            self.close()
            return {"error": f"Timeout: no answer within {self.timeout:g} s",
                    "time": time.perf_counter() - t0}
        try:
            return self.conn.recv()
        except EOFError:
            code = self.proc.exitcode if self.proc else None
            self.close()
            return {"error": f"Crash: worker died (exit code {code})",
                    "time": time.perf_counter() - t0}

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
        self.proc = self.conn = None


def _serve(conn, cost_model: str) -> None:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        expr, engine = msg
        try:
            conn.send(run_one(expr, engine, cost_model))
        except BaseException as e:  # noqa: BLE001
            conn.send({"error": f"{type(e).__name__}: {e}"[:400]})


def evaluate(rows: list[dict[str, str]], engines: tuple[str, ...], timeout: float,
             cost_model: str, progress: bool | None = None) -> list[dict[str, Any]]:
    """Every row under every engine: ``row`` plus ``{engine: record}``. ``progress``: a
    progress bar on stderr (None: when stderr is a terminal, not under CI)."""
    runner = Runner(timeout, cost_model)
    out = []
    try:
        # warm up (imports, e-graph start-up) outside the per-case times
        for eng in engines:
            w = runner.run(WARMUP, eng)
            print(f"start-up + first call, {eng}: {w.get('time', 0.0):.2f} s"
                  + (f" ({w['error']})" if "error" in w else ""))
        with progress_bar(total=len(rows), desc="unseen", enabled=progress) as bar:
            for row in rows:
                rec = dict(row)
                for eng in engines:
                    rec[eng] = runner.run(row["expr"], eng)
                out.append(rec)
                bar.update(1)
    finally:
        runner.close()
    return out


def summarize(results: list[dict[str, Any]], engines: tuple[str, ...]) -> None:
    """Print the per-kind, per-engine table."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_kind[kind_of(r["source"])].append(r)
    hdr = (f"{'kind':<19} {'engine':<9} {'cases':>5} {'cost in':>8} {'cost out':>8} "
           f"{'dm in':>6} {'dm out':>6} {'ineq':>4} {'err':>4} {'>in':>4} {'eg>bl':>5} "
           f"{'eg<bl':>5} {'time s':>7} {'max s':>6}")
    print(hdr)
    print("-" * len(hdr))
    for kind in [*KINDS, "all"]:
        rows = results if kind == "all" else by_kind.get(kind, [])
        if not rows:
            continue
        clean = [r for r in rows if all("error" not in r[e] for e in engines)]
        for eng in engines:
            recs = [r[eng] for r in rows]
            ok = [r[eng] for r in clean]
            err = sum(1 for x in recs if "error" in x)
            cin = sum(x["cost_in"] for x in ok)
            cout = sum(x["cost_out"] for x in ok)
            dmin = sum(x["dm_in"] for x in ok)
            dmout = sum(x["dm_out"] for x in ok)
            ineq = sum(1 for x in ok if x.get("equivalent") is False)
            worse = sum(1 for x in ok if x["cost_out"] > x["cost_in"])
            t = sum(x.get("time", 0.0) for x in recs)
            tmax = max((x.get("time", 0.0) for x in recs), default=0.0)
            egbl = eglt = ""
            if eng == "egraph" and "baseline" in engines:
                pairs = [(r["egraph"], r["baseline"]) for r in rows
                         if "error" not in r["egraph"] and "error" not in r["baseline"]]
                egbl = str(sum(1 for e, b in pairs if e["cost_out"] > b["cost_out"]))
                eglt = str(sum(1 for e, b in pairs if e["cost_out"] < b["cost_out"]))
            print(f"{kind:<19} {eng:<9} {len(rows):>5} {cin:>8} {cout:>8} {dmin:>6} {dmout:>6} "
                  f"{ineq:>4} {err:>4} {worse:>4} {egbl:>5} {eglt:>5} {t:>7.1f} {tmax:>6.2f}")
    print("\ncost in/out: total reference cost (input / engine output, over the cases where no "
          "engine failed); "
          "dm: idiv+mod nodes; ineq: outputs not equivalent to the input; err: crash, "
          "RewriteLimitError or timeout; >in: output costlier than input; eg>bl / eg<bl: "
          "cases where the e-graph output costs more / less than the baseline's.")


def findings(results: list[dict[str, Any]], engines: tuple[str, ...], limit: int) -> None:
    """Print the cases that are findings (worst first: inequivalent, error, costlier)."""
    lists: dict[str, list[str]] = defaultdict(list)
    for r in results:
        for eng in engines:
            x = r[eng]
            head = f"{r['id']} [{r['source']}] {eng}"
            if x.get("roundtrip", True) is not True:
                lists["output does not read back"].append(f"{head}: {x['roundtrip']}\n    out: "
                                                          f"{x['out']}")
            if "error" in x:
                lists["error"].append(f"{head}: {x['error']}\n    in:  {r['expr']}")
            elif x.get("equivalent") is False:
                lists["inequivalent"].append(f"{head}: {x.get('counterexample')}\n    in:  "
                                             f"{r['expr']}\n    out: {x['out']}")
            elif x["cost_out"] > x["cost_in"]:
                lists["costlier than input"].append(f"{head}: {x['cost_in']} -> {x['cost_out']}"
                                                    f"\n    in:  {r['expr']}\n    out: {x['out']}")
        if "egraph" in engines and "baseline" in engines:
            e, b = r["egraph"], r["baseline"]
            if "error" not in e and "error" not in b and e["cost_out"] > b["cost_out"]:
                lists["e-graph costlier than baseline"].append(
                    f"{r['id']} [{r['source']}]: egraph {e['cost_out']} > baseline "
                    f"{b['cost_out']} (input {e['cost_in']})\n    in:  {r['expr']}\n"
                    f"    bl:  {b['out']}\n    eg:  {e['out']}")
    for what in ("inequivalent", "error", "output does not read back", "costlier than input",
                 "e-graph costlier than baseline"):
        items = lists.get(what, [])
        print(f"\n== {what}: {len(items)}")
        for s in items[:limit]:
            print(s)
        if len(items) > limit:
            print(f"... and {len(items) - limit} more")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=150, help="cases per kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kind", choices=KINDS, action="append", help="only these kinds")
    ap.add_argument("--engine", choices=ENGINES, action="append", help="only these engines")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case and engine")
    ap.add_argument("--cost-model", default="reference", help="cost model passed to optimize")
    ap.add_argument("--limit", type=int, default=15, help="findings listed per category")
    ap.add_argument("--json", type=Path, help="write every record to this JSONL file")
    ap.add_argument("--only", action="append", metavar="ID",
                    help="only these case ids (e.g. gk20_0023; repeatable)")
    ap.add_argument("--corpus", type=Path, metavar="JSONL",
                    help="run these rows (the corpus's shape) instead of generated cases, for "
                         "comparing the unseen figures with the corpus's")
    ap.add_argument("--progress", action="store_true", default=None,
                    help="a progress bar on stderr even when it is not a terminal (by "
                         "default: on a terminal, not under CI)")
    args = ap.parse_args(argv)
    engines = tuple(args.engine or ENGINES)
    if args.corpus:
        with args.corpus.open() as f:
            rows = [{k: d[k] for k in ("id", "source", "expr")}
                    for d in map(json.loads, f) if kind_of(d["source"]) in (args.kind or KINDS)]
    else:
        rows = list(generate(args.n, args.seed, tuple(args.kind or KINDS)))
    if args.only:
        rows = [r for r in rows if r["id"] in set(args.only)]
    t0 = time.perf_counter()
    results = evaluate(rows, engines, args.timeout, args.cost_model, args.progress)
    if args.corpus:
        what = f"rows of {args.corpus}"
    else:
        what = f"unseen cases: n={args.n} per kind, seed={args.seed}"
    print(f"{what}, cost model for optimize: {args.cost_model}, "
          f"wall {time.perf_counter() - t0:.1f} s\n")
    summarize(results, engines)
    findings(results, engines, args.limit)
    if args.json:
        with args.json.open("w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
