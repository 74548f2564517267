"""A run that keeps its e-graph (``keep_egraph=True``): the record of the classes the
roots reached, the chosen e-nodes, the alternatives' costs, the history of merges, the
picture."""

from __future__ import annotations

import itertools
import math
import re

import pytest

import eqsat
from eqsat.engines.egraph.record import EGraphRecord
from eqsat.ir.interp import evaluate
from eqsat.ir.sexpr import parse
from extraction import build_terms, uop_builder

TILED = """%i = (add (add (mul (range 3 4) 8) (mul (range 4 2) 4)) (range 2 4))
(add (mul (idiv %i 8) 8) (mod %i 8))"""


@pytest.fixture(scope="module")
def tiled() -> tuple[eqsat.UOp, eqsat.Result]:
    g = parse(TILED)
    return g, eqsat.optimize(g, cost_model="reference", keep_egraph=True)


def test_nothing_is_kept_unless_asked() -> None:
    g = parse(TILED)
    res = eqsat.optimize(g, cost_model="reference")
    assert res.egraph is None and "egraph" not in res.stats
    with pytest.raises(ValueError, match="keep_egraph=True"):
        res.egraph_dot()
    with pytest.raises(ValueError, match="baseline engine has no e-graph"):
        eqsat.optimize(g, engine="baseline", keep_egraph=True)


def test_keeping_does_not_change_the_result(tiled) -> None:
    g, kept = tiled
    plain = eqsat.optimize(g, cost_model="reference")
    assert kept.graph is plain.graph and kept.cost == plain.cost
    assert isinstance(kept.egraph, EGraphRecord) and "egraph" not in kept.stats


def test_the_chosen_enodes_build_the_result_and_the_input(tiled) -> None:
    g, res = tiled
    rec = res.egraph
    for term in (res.graph, g):
        root, chosen = rec.chosen(term)
        assert root == rec.roots[0] and chosen[term].eclass == root
        assert set(chosen) == set(term.toposort())
        for u, en in chosen.items():  # each node's e-node: same op, operands' classes
            assert uop_builder(en, u.src) is u and en in rec.classes[en.eclass]
            assert en.children == tuple(chosen[s].eclass for s in u.src)
    # the result comes from one e-node per class: a selection that rebuilds it
    _root, chosen = rec.chosen(res.graph)
    sel = {en.eclass: en for en in chosen.values()}
    assert len(sel) == len(chosen)
    assert build_terms(sel, [rec.roots[0]], uop_builder)[0] is res.graph
    # the input passes through its root class twice: the sum %i folds to is in it
    _root, chosen = rec.chosen(g)
    i = g.src[0].src[0].src[0]
    assert chosen[i].eclass == chosen[g].eclass and chosen[i] is not chosen[g]
    with pytest.raises(ValueError, match="not a term of any root"):
        rec.chosen(parse("(add (var zz 0 3) 1)"))


def test_intervals_hold_the_values_of_the_classes_terms(tiled) -> None:
    g, res = tiled
    rec = res.egraph
    nodes = {}
    for term in (g, res.graph):
        nodes.update(rec.chosen(term)[1])
    for r2, r3, r4 in itertools.product(range(4), range(4), range(2)):
        env = {"R2": r2, "R3": r3, "R4": r4}
        for u, en in nodes.items():
            lo, hi = rec.interval(en.eclass)
            assert lo <= evaluate(u, env) <= hi, (en.eclass, u, env)
    assert rec.interval(rec.roots[0]) == (0, 31)


def test_choices_price_every_usable_enode(tiled) -> None:
    g, res = tiled
    rec = res.egraph
    choices = rec.choices(res.graph)
    _root, chosen = rec.chosen(res.graph)
    assert [ch.cls for ch in choices][0] == rec.roots[0]
    assert len(choices) == len(chosen)  # one per node of the result, each its own class
    assert {ch.chosen.key for ch in choices} == {en.key for en in chosen.values()}
    by_cls = {en.eclass: en for en in chosen.values()}
    assert res.stats["extraction"]["method"] == "tree"
    for ch in choices:
        costs = [c for _n, c in ch.options]
        assert costs == sorted(costs)
        assert ch.chosen is by_cls[ch.cls]
        assert ch.chosen in [n for n, _ in ch.options]
        # a tree extraction takes a cheapest e-node of every class
        assert dict((n.key, c) for n, c in ch.options)[ch.chosen.key] == costs[0]
        assert {n.key for n, _ in ch.options} <= {n.key for n in rec.classes[ch.cls]}
    assert choices[0].options[0][1] == res.cost  # the root's tree cost is the result's
    # the input's root e-node (an add of a mul and a mod) costs what the input does
    root_opts = dict((n.key, c) for n, c in rec.choices(g)[0].options)
    assert root_opts[rec.chosen(g)[1][g].key] == min(root_opts.values()) == res.cost
    assert len(rec.choices(g)) == len(g.toposort())


def test_history_names_the_merge_of_the_input_with_its_folded_form(tiled) -> None:
    g, res = tiled
    hist = res.egraph.history
    n = res.stats["iterations"]
    its = [h.iteration for h in hist]  # one per iteration, then the last rows' (0)
    assert its[:n] == list(range(1, n + 1)) and its[n:] in ([], [0])
    assert sum(sum(h.rules.values()) for h in hist) == sum(res.stats["matches"].values())
    i = g.src[0].src[0].src[0]  # %i
    merge = [h for h in hist if any(g in grp and i in grp for grp in h.merged)]
    assert len(merge) == 1 and merge[0].rules  # the rules of that step merged them
    assert all(h.enodes > 0 and h.classes > 0 for h in hist)


def _clusters(dot: str) -> list[str]:
    return re.findall(r"subgraph cluster_(\d+) \{", dot)


def test_dot_draws_classes_as_clusters_and_fills_the_chosen(tiled) -> None:
    g, res = tiled
    rec = res.egraph
    dot = res.egraph_dot()
    _root, chosen = rec.chosen(res.graph)
    assert dot.startswith("digraph egraph {") and "compound=true" in dot
    drawn = {int(c) for c in _clusters(dot)}
    assert drawn == set(rec.classes)  # a small e-graph: every class it reached
    filled = re.findall(r"e(\d+) \[label=[^]]*fillcolor=lightgoldenrod1", dot)
    assert sorted(map(int, filled)) == sorted(en.key for en in chosen.values())
    chosen_cls = {en.eclass for en in chosen.values()}
    assert f'label="root c{rec.roots[0]}  [0, 31]"' in dot
    # every edge points into a drawn cluster, clipped at it
    for _a, b, head in re.findall(r"e(\d+) -> e(\d+) \[([^]]*)\]", dot):
        assert int(b) in {n.key for ns in rec.classes.values() for n in ns}
        assert "lhead=cluster_" in head or "penwidth" in head or "color" in head
    small = res.egraph_dot(max_enodes=1)
    assert {int(c) for c in _clusters(small)} == chosen_cls
    assert f"{len(chosen_cls)} of {len(rec.classes)} classes drawn" in small


def test_each_graph_of_a_batch_keeps_its_own_egraph(tiled) -> None:
    g, _ = tiled
    h = parse("(mod (add (mul (var x 0 100) 2) 1) 2)")
    res = eqsat.optimize_many([g, h], cost_model="reference", keep_egraph=True)
    assert res[0].egraph is not res[1].egraph
    for r in res:
        root, chosen = r.egraph.chosen(r.graph)
        assert r.egraph.roots == (root,) and root == chosen[r.graph].eclass
    assert res[1].graph is parse("1")
    assert math.isfinite(res[1].cost)


def _record_of(roots: list[eqsat.UOp], unions: list[tuple[eqsat.UOp, eqsat.UOp]]
               ) -> EGraphRecord:
    """A record of the e-graph of ``roots`` with ``unions`` merged (no subsumed e-node)."""
    from extraction import EGraphView, ENode, ReferenceCost

    v = EGraphView.from_uops(roots, unions)
    nodes = [ENode(n.key, n.eclass, n.op, n.dtype, n.arg, n.children, 0.0, False)
             for ns in v.classes.values() for n in ns]
    return EGraphRecord(EGraphView(nodes), tuple(v.roots), {}, {},
                        frozenset(n.key for n in nodes), ReferenceCost())


@pytest.mark.parametrize("ranges", [1, 2])
def test_an_end_whose_ranges_were_extracted_as_constants(ranges: int) -> None:
    # the builder leaves a range class extracted as its constant out of an END (and the
    # END itself when no range is left): the match follows it
    body = parse("(store (index (buffer 0 f32 4) (add (range 0 1) (range 1 4))) 1.0)")
    r0, r1 = parse("(range 0 1)"), parse("(range 1 4)")
    end = eqsat.UOp(eqsat.Ops.END, eqsat.dtypes.void, (body, r0, r1)[:ranges + 1])
    rec = _record_of([end], [(r0, parse("0"))])
    graph = body if ranges == 1 else eqsat.UOp(eqsat.Ops.END, eqsat.dtypes.void, (body, r1))
    root, out, also = rec._match(graph)
    assert root == rec.roots[0] and set(out) == set(graph.toposort())
    end_en = next(n for n in rec.classes[root] if n.op is eqsat.Ops.END)
    const = next(n for n in rec.classes[end_en.children[1]] if n.op is eqsat.Ops.CONST)
    if ranges == 1:  # END(x, 0) built x: the END is used but builds no node of the graph
        assert out[graph].op is eqsat.Ops.STORE and also == [end_en, const]
    else:
        assert out[graph] is end_en and also == [const]
    dot = rec.to_dot(graph)
    filled = set(re.findall(r"(e\S+) \[label=[^]]*fillcolor=lightgoldenrod1", dot))
    assert filled == {f"e{n.key}" for n in [*out.values(), *also]}
