"""Speed and quality of the extractors. Prints figures; asserts nothing.

    PYTHONPATH=. python3 benchmarks/extraction_speed.py [--quick]

Times are CPU seconds of this process (``time.process_time``), medians of 3.

1. Synthetic e-graphs (extraction.synth.random_view) of about 1k, 5k and 20k
   e-nodes, with sharing and cycles: view build, tree and DAG extraction (first
   call, which prices every e-node, and a repeat call with cached prices).
2. Real egglog e-graphs: corpus expressions inserted into egglog 13.2 (low-level
   bindings), grown by a few generic rewrite rules (commutativity, one-way
   associativity of add, identities, div-mod recombination, constant folding;
   adding factoring explodes it to 1M rows at iteration 3), one iteration at a
   time up to an e-node cap, serialized to JSON,
   decoded and extracted (all roots at once and one root at a time), with the
   reference cost totals of input, tree and DAG.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import corpus_path  # noqa: E402
from eqsat import Ops, UOp, dtypes  # noqa: E402
from extraction import (  # noqa: E402
    CpuCost,
    EGraphView,
    ReferenceCost,
    SerializedNode,
    extract_dag,
    extract_tree,
    reference_cost,
)
from extraction.synth import random_view  # noqa: E402

CORPUS = corpus_path()


def timed(f, repeat: int = 3):
    """(median CPU seconds of this process, last result) of ``repeat`` calls.

    CPU time, not wall time: the machine is shared, and wall time mostly
    measures the neighbours."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        out = f()
        times.append(time.process_time() - t0)
    return statistics.median(times), out


def ms(s: float) -> str:
    return f"{s * 1e3:8.1f} ms"


# ---- 1. synthetic ---------------------------------------------------------------------

def bench_synthetic(sizes: list[int], repeat: int) -> None:
    print("== synthetic e-graphs (random_view, locality 40, cycles 10%) ==")
    print(f"{'e-nodes':>8} {'classes':>8} {'roots':>5} | {'build':>11} {'tree 1st':>11} "
          f"{'tree':>11} {'dag 1st':>11} {'dag':>11} | {'tree cost':>10} {'dag cost':>10}")
    for size in sizes:
        for n_roots in (1, 50):
            n_classes = max(10, size // 2)
            t0 = time.process_time()
            v = random_view(1, n_classes=n_classes, max_nodes_per_class=3, locality=40,
                            cycle_prob=0.1, n_roots=n_roots)
            v.compiled()
            t_build = time.process_time() - t0
            model = ReferenceCost()
            t0 = time.process_time()
            extract_tree(v, model=model)
            t_tree1 = time.process_time() - t0
            t_tree, tr = timed(lambda v=v, m=model: extract_tree(v, model=m), repeat)
            v2 = random_view(1, n_classes=n_classes, max_nodes_per_class=3, locality=40,
                             cycle_prob=0.1, n_roots=n_roots)
            t0 = time.process_time()
            extract_dag(v2, model=model)
            t_dag1 = time.process_time() - t0
            t_dag, dg = timed(lambda v=v, m=model: extract_dag(v, model=m), repeat)
            print(f"{len(v):>8} {v.num_classes:>8} {n_roots:>5} | {ms(t_build)}  {ms(t_tree1)}  "
                  f"{ms(t_tree)}  {ms(t_dag1)}  {ms(t_dag)} | {tr.cost:>10.0f} {dg.cost:>10.0f}")


# ---- 2. egglog corpus e-graphs ------------------------------------------------------------

_CTOR = {Ops.ADD: "Add", Ops.SUB: "Sub", Ops.MUL: "Mul", Ops.IDIV: "Div", Ops.MOD: "Mod",
         Ops.MAX: "Max", Ops.LT: "Lt", Ops.NE: "Ne", Ops.EQ: "Eq", Ops.AND: "And",
         Ops.NEG: "Neg", Ops.NOT: "Not", Ops.WHERE: "Where"}
_OP = {v: k for k, v in _CTOR.items()}
_BOOL_OPS = {Ops.LT, Ops.NE, Ops.EQ, Ops.NOT}

PRELUDE = """
(datatype Num
  (Var String i64 i64) (Lit i64) (BLit i64) (Rng i64 Num) (Inv)
  (Add Num Num) (Sub Num Num) (Mul Num Num) (Div Num Num) (Mod Num Num) (Max Num Num)
  (Lt Num Num) (Ne Num Num) (Eq Num Num) (And Num Num) (Neg Num) (Not Num)
  (Where Num Num Num))
(relation Root (i64 Num))
(ruleset grow)
(rewrite (Add a b) (Add b a) :ruleset grow)
(rewrite (Mul a b) (Mul b a) :ruleset grow)
(rewrite (Add (Add a b) c) (Add a (Add b c)) :ruleset grow)
(rewrite (Add a (Lit 0)) a :ruleset grow)
(rewrite (Mul a (Lit 1)) a :ruleset grow)
(rewrite (Add (Mod a b) (Mul (Div a b) b)) a :ruleset grow)
(rewrite (Add (Lit a) (Lit b)) (Lit (+ a b)) :ruleset grow)
(rewrite (Mul (Lit a) (Lit b)) (Lit (* a b)) :ruleset grow)
"""


def to_egglog(u: UOp) -> str:
    """Egglog text of a corpus UOp (nested; the e-graph shares equal subterms)."""
    memo: dict[int, str] = {}
    for n in u.toposort():
        s = [memo[id(c)] for c in n.src]
        if n.op is Ops.CONST:
            t = f"(BLit {int(n.arg)})" if n.dtype.is_bool else f"(Lit {n.arg})"
        elif n.op is Ops.DEFINE_VAR:
            t = f'(Var "{n.arg[0]}" {n.arg[1]} {n.arg[2]})'
        elif n.op is Ops.RANGE:
            t = f"(Rng {n.arg} {s[0]})"
        elif n.op is Ops.INVALID:
            t = "(Inv)"
        elif n.op in _CTOR:
            t = f"({_CTOR[n.op]} {' '.join(s)})"
        else:
            raise ValueError(f"benchmark converter: no constructor for {n.op}")
        memo[id(n)] = t
    return memo[id(u)]


def decode(n: SerializedNode):
    """Constructor names of PRELUDE -> IR ops (literal children come as values)."""
    idx = dtypes.index
    if n.op in _OP:
        op = _OP[n.op]
        return (op, dtypes.bool if op in _BOOL_OPS else idx, None)
    if n.op == "Var":
        return (Ops.DEFINE_VAR, idx, tuple(n.literals))
    if n.op == "Lit":
        return (Ops.CONST, idx, n.literals[0])
    if n.op == "BLit":
        return (Ops.CONST, dtypes.bool, bool(n.literals[0]))
    if n.op == "Rng":
        return (Ops.RANGE, idx, n.literals[0])
    if n.op == "Inv":
        return (Ops.INVALID, idx, None)
    return None  # Root rows


def egglog_graph(exprs: list[UOp], max_iterations: int, max_enodes: int
                 ) -> tuple[dict, list[str], float, int]:
    """Insert ``exprs``, run the rules one iteration at a time until
    ``max_iterations`` or more than ``max_enodes`` rows; (serialized JSON dict,
    root classes, CPU seconds, iterations run)."""
    import egglog.bindings as eb

    t0 = time.process_time()
    eg = eb.EGraph()
    eg.run_program(*eg.parse_program(PRELUDE))
    # one command per parse: egglog 13.2 keeps a copy of the parsed text per
    # span, so one 83 KB program of all 429 expressions took 3 GB
    for i, u in enumerate(exprs):
        eg.run_program(*eg.parse_program(f"(Root {i} {to_egglog(u)})"))
    step = eg.parse_program("(run grow 1)\n(print-size)")
    iters = 0
    while iters < max_iterations:
        out = eg.run_program(*step)
        iters += 1
        if sum(n for _, n in out[-1].sizes) > max_enodes:
            break
    data = json.loads(eg.serialize([]).to_json())
    t_egg = time.process_time() - t0
    roots: dict[int, str] = {}
    nodes = data["nodes"]
    for nd in nodes.values():
        if nd["op"] == "Root":
            i = int(nodes[nd["children"][0]]["op"])
            roots[i] = nodes[nd["children"][1]]["eclass"]
    return data, [roots[i] for i in range(len(exprs))], t_egg, iters


def bench_egglog(configs: list[tuple[int, int, int]], repeat: int) -> None:
    """``configs``: (expressions, max iterations, e-node cap) per e-graph."""
    import eqsat

    lines = [json.loads(s) for s in CORPUS.read_text().splitlines() if s.strip()]
    exprs_all = [eqsat.parse(d["expr"]) for d in lines]
    print("\n== egglog e-graphs of corpus expressions (generic rules) ==")
    print(f"{'exprs':>5} {'iters':>5} {'e-nodes':>8} {'classes':>8} | {'egglog':>10} "
          f"{'decode':>10} {'tree all':>10} {'dag all':>10} {'dag 1 root':>10} | "
          f"{'ref in':>7} {'tree':>7} {'dag':>7} {'dag/1':>7} {'cpu tree':>8} {'cpu dag':>8}")
    for k, max_iters, max_enodes in configs:
        exprs = exprs_all[:k]
        data, roots, t_egg, iters = egglog_graph(exprs, max_iters, max_enodes)
        t_dec, v = timed(lambda d=data: EGraphView.from_egglog_json(d, decode), repeat)
        ref, cpu = ReferenceCost(), CpuCost()
        t_tree, tr = timed(lambda v=v, r=roots, m=ref: extract_tree(v, r, m), repeat)
        t_dag, dg = timed(lambda v=v, r=roots, m=ref: extract_dag(v, r, m), repeat)
        t0 = time.process_time()
        per_root = [extract_dag(v, [r], ref) for r in roots]
        t_one = (time.process_time() - t0) / len(roots)
        one_total = sum(e.cost for e in per_root)
        cpu_t, cpu_d = extract_tree(v, roots, cpu), extract_dag(v, roots, cpu)
        ref_in = sum(reference_cost(u) for u in exprs)
        # the rebuilt terms are UOps again; their reference cost is the DAG cost
        assert sum(reference_cost(u) for u in per_root[0].to_uops()) == per_root[0].cost
        print(f"{k:>5} {iters:>5} {len(v):>8} {v.num_classes:>8} | {t_egg:>8.2f} s "
              f"{ms(t_dec)} {ms(t_tree)} {ms(t_dag)} {ms(t_one)} | {ref_in:>7} "
              f"{tr.cost:>7.0f} {dg.cost:>7.0f} {one_total:>7.0f} {cpu_t.cost:>8.0f} "
              f"{cpu_d.cost:>8.0f}")
        print(f"{'':>30}dag stats: " + ", ".join(
            f"{key}={dg.stats[key]}" for key in ("start", "tree_start", "greedy_start",
                                                 "swaps", "moves", "moves_tried", "rounds",
                                                 "work")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    bench_synthetic([1000] if args.quick else [1000, 5000, 20000], repeat)
    if CORPUS.exists():
        bench_egglog([(40, 3, 5000)] if args.quick else
                     [(40, 3, 5000), (120, 3, 5000), (429, 2, 10000), (429, 4, 25000)], repeat)
    else:
        print(f"\n(corpus {CORPUS} not found: egglog section skipped)")


if __name__ == "__main__":
    main()
