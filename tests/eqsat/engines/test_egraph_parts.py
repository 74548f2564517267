"""A large kernel in parts (``eqsat.engines.egraph.parts``): the split, the join, and
a kernel optimized in parts: equivalent, no costlier than its start, the same again, in
a fresh process and on another thread.

``PART_NODES`` is lowered here so that small kernels split (the default splits kernels
of thousands of nodes: ``benchmarks/scale.py`` runs those)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from eqsat.api import Budget, optimize
from eqsat.engines.egraph import clear_result_cache, parts
from eqsat.engines.egraph.parts import join_parts, kernel_parts
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.interp import run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse, to_sexpr
from eqsat.ir.uop import UOp, live_ranges
from extraction import get_cost_model
from tests.conftest import REPO

#: the part size of these tests (unique nodes)
SMALL = 150


def _kernel(n: int) -> UOp:
    from benchmarks.stress import kernel_graph

    return parse(kernel_graph(n))


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``PART_NODES`` at :data:`SMALL`; the result cache emptied before and after (its
    key does not hold the part size)."""
    monkeypatch.setattr(parts, "PART_NODES", SMALL)
    clear_result_cache()
    yield
    clear_result_cache()


def _run(k: UOp, out: UOp) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Both kernels on the same buffers (the loads' arange, the stores' zeros)."""
    size = {u.arg[0]: u.arg[1] for u in k.toposort() if u.op is Ops.DEFINE_GLOBAL}
    bufs = [np.arange(size.get(i, 1), dtype=np.float32) for i in range(max(size) + 1)]
    return (run_kernel(k, [b.copy() for b in bufs]), run_kernel(out, [b.copy() for b in bufs]))


@pytest.mark.parametrize("text", [
    "(add (var x 0 10) 1)",  # not a sink
    "(sink (end (store (index (buffer 1 f32 16) (range 0 16)) (load (index (buffer 2 f32 16) "
    "(range 0 16)))) (range 0 16)))",  # one source
])
def test_what_is_not_a_large_sink_runs_whole(small_parts: None, text: str) -> None:
    assert kernel_parts([parse(text)]) is None


def test_a_small_kernel_runs_whole() -> None:
    assert kernel_parts([_kernel(400)]) is None  # (under the default PART_NODES)


def test_a_large_sink_splits_in_order_into_parts_of_about_equal_size(small_parts: None) -> None:
    k = _kernel(600)
    got = kernel_parts([k])
    assert got is not None and len(got) >= 3
    assert all(p.op is Ops.SINK and p.arg == k.arg for p in got)
    assert tuple(s for p in got for s in p.src) == k.src  # every source once, in order
    biggest = max(len(s.toposort()) for s in k.src)
    sizes = [len(p.toposort()) - 1 for p in got]
    assert all(n <= SMALL + biggest for n in sizes), sizes
    assert sizes[-1] >= SMALL / 4, sizes  # (a short last part joins the one before)
    assert [to_sexpr(p) for p in kernel_parts([k])] == [to_sexpr(p) for p in got]


def test_stores_that_share_most_of_their_terms_run_whole(small_parts: None) -> None:
    # every store's address is one shared sum of 40 strided ranges plus its own offset:
    # in parts, each part (a store each) would hold the shared sum again
    addr = "(add " * 39 + "(mul (range 0 4) 2) " + " ".join(
        f"(mul (range {i} 4) {i + 2}))" for i in range(1, 40))
    stores = " ".join(
        f"(end (store (index (buffer {2 * k} f32 64) (range 50 4)) (load (index (buffer "
        f"{2 * k + 1} f32 65536) (add {addr} {k})))) (range 50 4))" for k in range(40))
    k = parse(f"(sink {stores})")
    assert len(k.toposort()) > 2 * SMALL
    assert kernel_parts([k]) is None
    assert kernel_parts([_kernel(400)]) is not None  # (stores that share leaves split)


@pytest.mark.parametrize(("nodes", "part"), [(300, 50), (500, SMALL), (800, 400)])
def test_a_kernel_in_parts_is_equivalent_and_no_costlier(
        small_parts: None, monkeypatch: pytest.MonkeyPatch, nodes: int, part: int) -> None:
    monkeypatch.setattr(parts, "PART_NODES", part)
    k = _kernel(nodes)
    base = optimize(k, engine="baseline", cost_model="reference")
    r = optimize(k, cost_model="reference")
    assert len(r.stats["parts"]) >= 2
    assert r.cost <= min(base.cost, r.input_cost), (base.cost, r.cost, r.input_cost)
    assert r.stats["seed"]["final"] == r.cost
    assert r.stats["stop_reason"] in ("stalled", "saturated", "optimal")
    assert not live_ranges(r.graph)[r.graph]
    want, got = _run(k, r.graph)
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))
    clear_result_cache()
    again = optimize(k, cost_model="reference")
    assert to_sexpr(again.graph) == to_sexpr(r.graph)


def test_keep_egraph_joins_the_parts_records_and_keeps_the_output(small_parts: None) -> None:
    k = _kernel(300)
    r = optimize(k, cost_model="reference")
    kept = optimize(k, cost_model="reference", keep_egraph=True)
    assert len(kept.stats["parts"]) == len(r.stats["parts"]) >= 2
    assert to_sexpr(kept.graph) == to_sexpr(r.graph)
    rec = kept.egraph
    assert len(rec.roots) == 1 and rec.history
    # every node of the joined output is an e-node of the joined record, under its root
    root, chosen = rec.chosen(kept.graph)
    assert root == rec.roots[0] and set(chosen) == set(kept.graph.toposort())
    assert [c.chosen for c in rec.choices(kept.graph)][0].op is Ops.SINK
    assert "cluster" in str(kept.egraph_dot(max_enodes=50))
    # the parts' classes and e-nodes do not collide: one class per e-node key
    keys = [n.key for ns in rec.classes.values() for n in ns]
    assert len(keys) == len(set(keys))


def test_the_join_takes_the_parts_starts_when_they_are_cheaper() -> None:
    # the parts' outputs are their inputs here: the joined starts (the baseline's
    # rewrites) are cheaper, and the whole is those
    model = get_cost_model("reference")
    a = parse("(end (store (index (buffer 1 f32 16) (range 0 16)) (load (index (buffer 2 f32 "
              "16) (add (range 0 16) 0)))) (range 0 16))")
    b = parse("(end (store (index (buffer 3 f32 16) (range 1 16)) (load (index (buffer 4 f32 "
              "16) (mul (range 1 16) 1)))) (range 1 16))")
    root = UOp(Ops.SINK, a.dtype, (a, b))
    starts = [UOp(Ops.SINK, a.dtype, (optimize(a, engine="baseline").graph,)),
              UOp(Ops.SINK, a.dtype, (optimize(b, engine="baseline").graph,))]
    outs = [UOp(Ops.SINK, a.dtype, (a,)), UOp(Ops.SINK, a.dtype, (b,))]
    each = [{"engine": "egraph", "rulesets": [], "enodes_budget": 100, "iterations": i,
             "enodes": 10, "classes": 5, "stop_reason": stop, "time": {"egglog": 0.5},
             "per_iteration": [], "emitted": [], "analysis_capped": 0, "matches": {"r": 1},
             "extraction": {"cost": 2.0}, "held_back": {}, "enodes_peak": 10,
             "rss_growth": 0, "time_limited": False, "part_nodes": 8,
             "seed": {"final": 2.0, "rescoped": 0}}
            for i, stop in ((1, "saturated"), (3, "enodes"))]
    out, stats = join_parts(root, outs, starts, outs, each, model)
    assert out.src == tuple(s.src[0] for s in starts)
    assert stats["costs"] == [(model.graph_cost(root), model.graph_cost(out))]
    assert stats["seed"]["gain"] == 0.0 and stats["seed"]["final"] < stats["seed"]["input"]
    # the whole's figures: the largest part's sizes, summed counts, the stop that says most
    assert stats["iterations"] == 3 and stats["stop_reason"] == "enodes"
    assert stats["matches"] == {"r": 2} and stats["time"] == {"egglog": 1.0}
    assert [p["iterations"] for p in stats["parts"]] == [1, 3]


def test_each_part_gets_its_share_of_the_time_left(small_parts: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a part's clock is the call's time left, shared by the parts left: the first part
    # cannot use up the time of the others; the last gets all that is left
    from eqsat.engines.egraph.engine import Session

    given: list[float] = []
    run = Session._run

    def spy(self, roots, model, limits, t0, keep):  # type: ignore[no-untyped-def]
        given.append(limits.seconds)
        return run(self, roots, model, limits, t0, keep)

    monkeypatch.setattr(Session, "_run", spy)
    r = optimize(_kernel(300), cost_model="reference", budget=Budget(seconds=60.0))
    n = len(r.stats["parts"])
    assert n >= 2 and len(given) == n
    assert all(a < b for a, b in zip(given, given[1:], strict=False))
    assert given[-1] == pytest.approx(60.0)
    assert given[0] < 60.0 / n + 1.0


@pytest.mark.parametrize("budget", [Budget(iterations=0), Budget(enodes=1), None])
def test_a_kernel_in_parts_is_no_costlier_than_the_whole_kernels_baseline(
        monkeypatch: pytest.MonkeyPatch, budget: Budget | None) -> None:
    # the term E is in two parts: for the first the baseline's rewrite is no cheaper
    # (E saves 1, A's (mul r 2) costs 3 more), so it starts from its input; the second
    # takes E's rewrite. The joined starts hold E in both forms; the whole kernel's
    # baseline holds one, and the join weighs it
    monkeypatch.setattr(parts, "PART_NODES", 8)
    clear_result_cache()
    e, a = "(mod (add (range 0 8) 8) 4)", "(add (range 1 8) (range 1 8))"
    rest = " ".join(f"(add (range {i} 8) 0)" for i in range(2, 8))
    k = parse(f"(sink {a} {e} {e} {rest})")
    assert len(kernel_parts([k]) or ()) >= 2
    base = optimize(k, engine="baseline", cost_model="reference")
    r = optimize(k, cost_model="reference", budget=budget)
    clear_result_cache()
    assert r.cost <= min(base.cost, r.input_cost), (r.cost, base.cost, r.input_cost)
    assert all(check_equivalent(x, y).equivalent for x, y in zip(k.src, r.graph.src,
                                                                 strict=True))


_CHILD = """
import json, sys
sys.path.insert(0, {repo!r})
from benchmarks.stress import kernel_graph
import eqsat
from eqsat.engines.egraph import parts
from eqsat.ir.sexpr import parse, to_sexpr
parts.PART_NODES = {part}
r = eqsat.optimize(parse(kernel_graph({n})), cost_model="reference")
print(json.dumps([len(r.stats["parts"]), to_sexpr(r.graph)]))
"""


def test_a_kernel_in_parts_is_the_same_in_a_fresh_process_and_on_a_thread(
        small_parts: None) -> None:
    here = optimize(_kernel(500), cost_model="reference")
    child = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO), part=SMALL,
                                                                n=500)],
                           capture_output=True, text=True, check=True, timeout=600)
    n, text = json.loads(child.stdout.strip().splitlines()[-1])
    assert int(n) == len(here.stats["parts"]) >= 2 and text == to_sexpr(here.graph)
    got: list[str] = []

    def work() -> None:
        clear_result_cache()
        got.append(to_sexpr(optimize(_kernel(500), cost_model="reference").graph))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert got == [to_sexpr(here.graph)]
