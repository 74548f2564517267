"""The computed pass's per-run reuse and lean loops give what the plain computations give.

- ``best_nodes`` (two-child sums and heights without temporaries) picks, prices, orders
  and measures every class as a plain Dijkstra over the e-nodes does;
- ``InnerSums`` (read from the parents best_nodes collects) answers as the full scan
  ``inner_sums`` does;
- ``Weights.prices`` reusing the last pass's prices of e-nodes whose children did not
  change equals pricing every e-node afresh (on hand-made snapshots, and on every pass
  of real runs under the bounds-aware default model and the reference model);
- linear forms taken over from the last pass equal fresh ones, terms in the same order;
- ``changed_classes`` (e-nodes by identity, facts dict against dict, the children index it
  keeps) names the classes and e-nodes comparing every row and fact names;
- an ``op_only`` model's prices by constructor and op field equal the full keys' prices;
  a union ``Recorder.holds`` lets a caller skip records and counts nothing; the lift
  pass, run in full on a snapshot without an Invalid leaf, unions nothing.
"""

from __future__ import annotations

import heapq
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eqsat.engines.egraph.computed.passes as passes
import eqsat.engines.egraph.computed.pricing as pricing
from eqsat.api import Budget
from eqsat.engines.egraph import optimize_many
from eqsat.engines.egraph.computed import PassState, Weights
from eqsat.engines.egraph.encoding import Node
from eqsat.ir.dtype import dtypes
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp


class _Snap:
    """The parts of a Snapshot that best_nodes and Weights read."""

    def __init__(self, nodes: list[Node], consts: dict[int, int] | None = None,
                 lo: dict[int, int] | None = None):
        self.nodes = nodes
        self.consts = consts or {}
        self.lo = lo or {}
        self.height: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"_Snap({len(self.nodes)} e-nodes)"


def _plain_best(nodes: list[Any], wts: list[float]) -> tuple[list, list, list, dict]:
    """The reference: push an e-node once its distinct children are priced, price a
    class by its first e-node popped; heights from the chosen e-nodes; the parents
    (class -> the e-nodes not subsumed it is a child of, in index order)."""
    parents: dict[int, list[int]] = {}
    pending = [0] * len(nodes)
    heap = []
    for i, n in enumerate(nodes):
        if n.subsumed:
            pending[i] = -1
            continue
        if not n.kids:
            heap.append((wts[i], i))
            continue
        ks = set(n.kids)
        pending[i] = len(ks)
        for k in ks:
            parents.setdefault(k, []).append(i)
    heapq.heapify(heap)
    best: dict[int, int] = {}
    cost: dict[int, float] = {}
    height: dict[int, int] = {}
    while heap:
        c, i = heapq.heappop(heap)
        n = nodes[i]
        if n.cls in best:
            continue
        best[n.cls], cost[n.cls] = i, c
        height[n.cls] = 1 + max([height[k] for k in n.kids], default=0)
        for p in parents.get(n.cls, ()):
            pending[p] -= 1
            if pending[p] == 0 and nodes[p].cls not in best:
                heapq.heappush(heap, (wts[p] + sum([cost[k] for k in nodes[p].kids]), p))
    return list(best.items()), list(cost.items()), list(height.items()), parents


#: e-node shapes: (ctor, number of children); Cst/Leaf cost 0, Mul 4, Idiv 25, others 1
_SHAPES = [("Cst", 0), ("Leaf", 0), ("Neg", 1), ("Add", 2), ("Mul", 2), ("Idiv", 2),
           ("Where", 3)]


def _node(cls: int, shape: int, kids: list[int], subsumed: bool) -> Node:
    ctor, nk = _SHAPES[shape]
    if ctor == "Cst":
        return Node(cls, ctor, ("index", cls), subsumed)
    if ctor == "Leaf":
        return Node(cls, ctor, ("DEFINE_VAR", "index", cls), subsumed)
    return Node(cls, ctor, ("index", *kids[:nk]), subsumed)


_egraphs = st.integers(1, 9).flatmap(lambda n: st.lists(
    st.tuples(st.integers(0, n - 1), st.integers(0, len(_SHAPES) - 1),
              st.lists(st.integers(0, n - 1), min_size=3, max_size=3),
              st.sampled_from([False, False, False, True])),
    min_size=1, max_size=3 * n))


@settings(max_examples=300, deadline=None)
@given(_egraphs)
def test_best_nodes_is_the_plain_dijkstra(raw: list) -> None:
    # cycles, repeated children (x + x), subsumed and zero-cost e-nodes (ties) included;
    # e-nodes in the snapshot's order (class, ctor, fields)
    rows = sorted({(c, sh, tuple(ks), sub) for c, sh, ks, sub in raw})
    nodes = [_node(c, sh, list(ks), sub) for c, sh, ks, sub in rows]
    nodes.sort(key=lambda n: (n.cls, n.ctor, n.fields, n.subsumed))
    snap = _Snap(nodes)
    wts = Weights(snap).prices()  # type: ignore[arg-type]
    best, cost, parents = passes.best_nodes_and_parents(snap, Weights(snap))  # type: ignore[arg-type]
    assert (list(best.items()), list(cost.items()), list(snap.height.items()),
            {k: v for k, v in parents.items() if v}) == _plain_best(nodes, wts)


@settings(max_examples=300, deadline=None)
@given(_egraphs, st.lists(st.integers(0, 9), max_size=6))
def test_best_heights_asked_are_the_full_heights(raw: list, asked: list[int]) -> None:
    # computed when asked, in any order, into the memo the pass hands them
    rows = sorted({(c, sh, tuple(ks), sub) for c, sh, ks, sub in raw})
    nodes = [_node(c, sh, list(ks), sub) for c, sh, ks, sub in rows]
    nodes.sort(key=lambda n: (n.cls, n.ctor, n.fields, n.subsumed))
    snap = _Snap(nodes)
    best, _, _ = passes.best_nodes_and_parents(snap, Weights(snap))  # type: ignore[arg-type]
    full = dict(snap.height)
    lazy = pricing.BestHeights(nodes, best, {})
    for c in [*asked, *best, 99]:
        assert lazy.get(c, 0) == full.get(c, 0), c
    assert lazy.memo == {c: full[c] for c in lazy.memo}
    left = _Snap(nodes)
    passes.best_nodes_and_parents(left, Weights(left), heights=False)  # type: ignore[arg-type]
    assert left.height == {}


class _Prices:
    """Given e-node prices, as ``Weights`` hands them to ``best_nodes_and_parents``."""

    def __init__(self, w: list[float]):
        self.w = w

    def __repr__(self) -> str:
        return f"_Prices({self.w!r})"

    def prices(self) -> list[float]:
        return self.w


@st.composite
def _tied_egraphs(draw: st.DrawFn) -> tuple[list[SimpleNamespace], list[float]]:
    """Random e-graphs (cycles, repeated children, subsumed e-nodes, up to 4 children)
    with few distinct prices, so that ties are common."""
    ncls = draw(st.integers(1, 9))
    nodes = []
    for c in range(ncls):
        for _ in range(draw(st.integers(1, 3))):
            kids = tuple(draw(st.lists(st.integers(0, ncls - 1), max_size=4)))
            nodes.append(SimpleNamespace(cls=c, kids=kids, subsumed=draw(st.booleans()) and
                                         draw(st.booleans())))
    wts = [draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 0.5, 25.0])) for _ in nodes]
    return nodes, wts


@settings(max_examples=400, deadline=None)
@given(_tied_egraphs())
def test_best_nodes_is_the_plain_dijkstra_under_ties(g: tuple[list, list[float]]) -> None:
    # best_nodes' bucketed queue pops in the tuple heap's order: costs exactly (repr)
    nodes, wts = g
    snap = SimpleNamespace(nodes=nodes, height={})
    best, cost, parents = passes.best_nodes_and_parents(snap, _Prices(wts))  # type: ignore[arg-type]
    rb, rc, rh, rp = _plain_best(nodes, wts)
    assert list(best.items()) == rb and list(snap.height.items()) == rh
    assert [(k, repr(v)) for k, v in cost.items()] == [(k, repr(v)) for k, v in rc]
    assert {k: v for k, v in parents.items() if v} == rp


def test_best_nodes_ties_by_index() -> None:
    # two leaves of equal cost in one class: the earlier e-node wins; a parent
    # whose cost equals a leaf's is ordered by index among them
    nodes = [SimpleNamespace(cls=c, kids=k, subsumed=False)
             for c, k in ((0, ()), (0, ()), (1, (0,)), (2, ()))]
    snap = SimpleNamespace(nodes=nodes, height={})
    best, cost, _ = passes.best_nodes_and_parents(snap, _Prices([1.0, 1.0, 0.0, 1.0]))  # type: ignore[arg-type]
    assert list(best.items()) == [(0, 0), (1, 2), (2, 3)]
    assert cost == {0: 1.0, 1: 1.0, 2: 1.0}
    assert snap.height == {0: 1, 1: 2, 2: 1}


class _ConstModel:
    """A model whose prices read the children's constants and minimums."""

    uses_bounds = True

    def node_cost(self, op: Any, dtype: Any, arg: Any, consts: tuple,
                  child_mins: tuple | None = None) -> float:
        return 1.0 + sum(c for c in consts if c is not None) + \
            0.5 * sum(m for m in child_mins or () if m is not None)


def test_prices_reuse_only_unchanged_children() -> None:
    cst = Node(0, "Cst", ("index", 3))
    leaf = Node(1, "Leaf", ("DEFINE_VAR", "index", 0))
    add = Node(2, "Add", ("index", 0, 1))
    mul = Node(3, "Mul", ("index", 2, 1))
    s1 = _Snap([cst, leaf, add, mul], consts={0: 3}, lo={0: 3, 1: 0, 2: 3})
    w1 = Weights(s1, _ConstModel(), {})  # type: ignore[arg-type]
    w1.prices()
    # class 0 now holds 5 (its e-node changed), class 1 got a tighter minimum
    s2 = _Snap([Node(0, "Cst", ("index", 5)), leaf, add, mul], consts={0: 5},
               lo={0: 5, 1: 2, 2: 7})
    fresh = Weights(s2, _ConstModel(), {}).prices()  # type: ignore[arg-type]
    reused = Weights(s2, _ConstModel(), {}, w1.by_node, {0, 1}).prices()  # type: ignore
    assert reused == fresh
    # told that nothing changed, the stale prices of add/mul come back (what `changed`
    # prevents): the reuse is keyed by e-node and children, not recomputed
    stale = Weights(s2, _ConstModel(), {}, w1.by_node, set()).prices()  # type: ignore
    assert stale != fresh and stale[2:] == w1.prices()[2:]


#: several passes even on a loaded machine (the checks slow every pass down)
_BUDGET = Budget(iterations=4, seconds=30.0, stall=0)


def _exprs() -> list[UOp]:
    x = UOp.var("x", 0, 99)
    y = UOp.var("y", -5, 5)
    r = UOp.range(UOp.const(dtypes.index, 16), 0)
    # (the last, tinygrad's cat kernel's floor index, takes several passes from the
    # baseline's start; the others saturate after one)
    return [(x * 4 + r) // 4, (x + r * 8) % 8, ((x // 3) * 3 + x % 3) * 2 + y,
            (r + 12) // 4 - (x * 2 + 2) // 2, (y * 6 + 4) % 3 + (r % 4) // 2,
            parse("%0 = (add (mul (floormod (range 0 9) 3) 3) (range 1 3))\n"
                  "(floormod (add (add 0 (mul 1 (where (not (lt %0 4)) (add %0 -4) "
                  "(invalid)))) (mul 5 (floordiv (range 0 9) 3))) 15)")]


@pytest.mark.parametrize("model", [None, "reference"])
def test_prices_reuse_matches_fresh_prices_on_real_runs(monkeypatch: pytest.MonkeyPatch,
                                                         model: str | None) -> None:
    seen = []
    plain = pricing.best_nodes_and_parents

    def checked(snap: Any, weights: Weights | None = None, heights: bool = True) -> Any:
        assert weights is not None
        got = weights.prices()
        assert got == Weights(snap, weights.model, {}).prices()
        seen.append(len(got))
        return plain(snap, weights, heights)

    for module in (pricing, passes):  # best_nodes and the computed pass both call it
        monkeypatch.setattr(module, "best_nodes_and_parents", checked)
    outs, stats = optimize_many(_exprs(), cost_model=model, budget=_BUDGET)
    assert len(outs) == len(_exprs())
    assert len(seen) >= 2, stats.get("stop_reason")  # several passes: reuse was exercised


@pytest.mark.parametrize("model", [None, "reference"])
def test_forms_taken_over_equal_fresh_forms_on_real_runs(monkeypatch: pytest.MonkeyPatch,
                                                         model: str | None) -> None:
    taken = [0]
    plain = passes.LinForms

    class Checked(plain):
        def get(self, cls: int) -> Any:
            x = super().get(cls)
            fresh = plain(self.snap, self.best).get(cls)
            # the same form with its terms in the same order (rules read them in order)
            assert (x.terms, x.const) == (fresh.terms, fresh.const)
            taken[0] += x is not fresh and cls in self._prev
            return x

    monkeypatch.setattr(passes, "LinForms", Checked)
    optimize_many(_exprs(), cost_model=model, budget=_BUDGET)
    assert taken[0] > 0  # forms of earlier passes were taken over


def test_inner_sums_from_parents_equal_the_full_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = [0]
    plain = passes.InnerSums

    class Checked(plain):
        def __init__(self, snap: Any, parents: dict, roots: Any) -> None:
            super().__init__(snap, parents, roots)
            self.full = passes.inner_sums(snap, roots)

        def __contains__(self, c: int) -> bool:
            got = super().__contains__(c)
            assert got == (c in self.full), c
            asked[0] += 1
            return got

        def check_all(self) -> None:
            for c in self.snap.classes:
                assert super().__contains__(c) == (c in self.full), c

    made: list = []
    monkeypatch.setattr(passes, "InnerSums", lambda *a: made.append(Checked(*a)) or made[-1])
    optimize_many(_exprs(), budget=_BUDGET)
    assert asked[0] > 0 and made
    for inner in made:  # every class, not only the ones the pass asked about
        inner.check_all()


class _FactSnap:
    """The parts of a Snapshot that ``changed_classes`` reads."""

    def __init__(self, nodes: list[Node], lo: dict[int, int], hi: dict[int, int],
                 defined: set[int]):
        self.nodes = nodes
        self.classes: dict[int, list[int]] = {}
        for i, n in enumerate(nodes):
            self.classes.setdefault(n.cls, []).append(i)
        self.lo, self.hi, self.defined = lo, hi, defined

    def __repr__(self) -> str:
        return f"_FactSnap({len(self.nodes)} e-nodes)"


def _plain_changed(old: _FactSnap | None, new: _FactSnap) -> set[int]:
    """The reference: the classes of every row and every fact in one pass and not the
    other (a fact is (class, lo, hi, defined)), among the new pass's classes."""
    def rows(s: _FactSnap | None) -> set:
        return set() if s is None else {(n.cls, n.ctor, n.fields, n.subsumed) for n in s.nodes}

    def facts(s: _FactSnap | None) -> set:
        return set() if s is None else {(c, s.lo.get(c), s.hi.get(c), c in s.defined)
                                        for c in s.classes}
    out = {r[0] for r in rows(old) ^ rows(new)} | {f[0] for f in facts(old) ^ facts(new)}
    return out & new.classes.keys()


#: one pass's e-graph: (class, shape, children, subsumed) rows, and per class 0..5 an
#: optional (lo, hi) and whether it is defined
_passes = st.lists(st.tuples(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, len(_SHAPES) - 1),
                       st.lists(st.integers(0, 5), min_size=3, max_size=3),
                       st.sampled_from([False, False, True])), min_size=1, max_size=10),
    st.lists(st.one_of(st.none(), st.tuples(st.integers(-3, 3), st.integers(3, 6))),
             min_size=6, max_size=6),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.booleans()), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(_passes)
def test_changed_by_identity_equals_the_row_and_fact_comparison(raw: list) -> None:
    # the snapshots share the Node objects of unchanged rows (a cache, as the engine's),
    # except that a pass may rebuild some as new objects (the engine's cache is cleared)
    cache: dict[tuple, Node] = {}
    state = PassState()
    last: _FactSnap | None = None
    for rows_raw, bounds, defs, rebuild in raw:
        rows = sorted({(c, sh, tuple(ks), sub) for c, sh, ks, sub in rows_raw})
        nodes = []
        keys = set()  # a snapshot's rows are distinct (shapes ignore some children)
        for c, sh, ks, sub in rows:
            n = _node(c, sh, list(ks), sub)
            key = (n.cls, n.ctor, n.fields, n.subsumed)
            if key in keys:
                continue
            keys.add(key)
            if rebuild or key not in cache:
                cache[key] = n
            nodes.append(cache[key])
        nodes.sort(key=lambda n: (n.cls, n.ctor, n.fields, n.subsumed))
        classes = {n.cls for n in nodes}
        lo = {c: b[0] for c, b in enumerate(bounds) if b is not None and c in classes}
        hi = {c: b[1] for c, b in enumerate(bounds) if b is not None and c in classes}
        snap = _FactSnap(nodes, lo, hi, {c for c, d in enumerate(defs) if d and c in classes})
        changed, affected = passes.changed_classes(snap, state)  # type: ignore[arg-type]
        assert changed == _plain_changed(last, snap)
        assert affected == {n for n in nodes if changed & set(n.kids)}
        last = snap


_LEAVES = [Node(1, "Leaf", ("RANGE", "index", 0)), Node(2, "Cst", ("index", 4))]


@pytest.mark.parametrize("nodes, best_of, free", [
    # (x // 4) + x: a division in the best term, and above it
    (_LEAVES + [Node(3, "Idiv", ("index", 1, 2)), Node(4, "Add", ("index", 3, 1))],
     {1: 0, 2: 1, 3: 2, 4: 3}, {1, 2}),
    # a mod class whose best term is division-free (an add): free, and so is its parent
    (_LEAVES + [Node(3, "Mod", ("index", 1, 2)), Node(3, "Add", ("index", 1, 2)),
                Node(5, "Add", ("index", 3, 2))],
     {1: 0, 2: 1, 3: 3, 5: 4}, {1, 2, 3, 5}),
    # a mod two levels down keeps every ancestor in
    (_LEAVES + [Node(3, "Mod", ("index", 1, 2)), Node(4, "Mul", ("index", 3, 2)),
                Node(5, "Add", ("index", 4, 1))],
     {1: 0, 2: 1, 3: 2, 4: 3, 5: 4}, {1, 2}),
])
def test_divmod_free_classes(nodes: list[Node], best_of: dict[int, int], free: set[int]
                             ) -> None:
    assert passes.divmod_free(nodes, best_of) == free


class _Classes:
    """The two things ``division_selects`` reads of a snapshot."""

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes

    def class_nodes(self, c: int) -> list[Node]:
        return [n for n in self.nodes if n.cls == c]


@pytest.mark.parametrize("nodes, best_of, selects", [
    # a mod class whose best term is a select of its buckets (and the division subsumed)
    (_LEAVES + [Node(3, "Mod", ("index", 1, 2)), Node(3, "Where", ("index", 6, 1, 1)),
                Node(6, "Lt", ("index", 1, 2))], {1: 0, 2: 1, 6: 4, 3: 3}, {3}),
    (_LEAVES + [Node(3, "Mod", ("index", 1, 2), subsumed=True),
                Node(3, "Where", ("index", 6, 1, 1)), Node(6, "Lt", ("index", 1, 2))],
     {1: 0, 2: 1, 6: 4, 3: 3}, set()),
    # a select with no division in its class; a division whose best term is itself
    (_LEAVES + [Node(3, "Where", ("index", 6, 1, 2)), Node(6, "Lt", ("index", 1, 2)),
                Node(4, "Idiv", ("index", 1, 2))], {1: 0, 2: 1, 6: 3, 3: 2, 4: 4}, set()),
])
def test_division_selects(nodes: list[Node], best_of: dict[int, int], selects: set[int]
                          ) -> None:
    assert passes.division_selects(_Classes(nodes), best_of) == selects  # type: ignore


def test_a_new_term_goes_into_its_class_without_a_class_of_its_own() -> None:
    # x*4 + x*6 -> x*10: the new root e-node is recorded in the sum's class (one row),
    # not as a fresh class that a second row unions in
    from eqsat.engines.egraph import Session
    from eqsat.engines.egraph.computed import PassState, python_pass
    from eqsat.engines.egraph.encoding import NODE_REL, Snapshot

    s = Session(None)
    x = UOp.var("x", 0, 99)
    with s.probe([x * 4 + x * 6]) as run:
        h = run.insert([x * 4 + x * 6])[0]
        run.step(True)
        snap = Snapshot(s.store.egraph, s.ins)
        c = snap.cls_of_handle(h)
        first, n0 = len(s.ins.lines(NODE_REL)), s.ins.handles
        python_pass(snap, s.ins, s.program.pyrules, PassState(), roots=[c])
        rows = [r.split("\t") for r in s.ins.lines(NODE_REL)[first:]]
        assert ["Mul", "index"] in [f[1:3] for f in rows if f[0] == str(c)]
        assert not [f for f in rows if f[1] == "U" and f[0] == str(c) and int(f[5]) >= n0]


def test_recorder_emit_memo_is_what_emitting_again_gives(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # a term emitted again in a pass: the handle the memo gives is the one its key finds
    # in the e-graph's e-nodes afresh, and emitting it afresh records no row, no handle
    hits = [0]
    plain = passes.Recorder.emit

    def checked(self: Any, t: Any) -> int:
        if isinstance(t, tuple) and t in self.emitted:
            hits[0] += 1
            memo, self.emitted = self.emitted, {}
            rows, handles = self.ins.pending, self.ins.handles
            try:
                again = plain(self, t)
            finally:
                self.emitted = memo
            assert again == memo[t]
            assert (self.ins.pending, self.ins.handles) == (rows, handles)
        return plain(self, t)

    monkeypatch.setattr(passes.Recorder, "emit", checked)
    optimize_many(_exprs(), cost_model="reference", budget=_BUDGET)
    assert hits[0] > 0


def test_op_only_prices_equal_the_full_key_prices_on_real_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the reference model prices by the op alone: its e-nodes priced by constructor and
    # op field are priced as with their children's constants in the key
    seen = [0]
    plain = pricing.best_nodes_and_parents

    def checked(snap: Any, weights: Weights | None = None, heights: bool = True) -> Any:
        assert weights is not None and weights.op_only
        full = Weights(snap, weights.model, {})
        full.op_only = False
        assert Weights(snap, weights.model, {}).prices() == full.prices()
        seen[0] += 1
        return plain(snap, weights, heights)

    monkeypatch.setattr(passes, "best_nodes_and_parents", checked)
    optimize_many(_exprs(), cost_model="reference", budget=_BUDGET)
    assert seen[0] >= 2


def test_recorder_holds_means_union_records_and_counts_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # where holds() lets the canonical sum skip its union, the union records no row and
    # counts no union, match or refusal
    hits = [0]
    plain = passes.Recorder.holds

    def checked(self: Any, cls: int, t: Any) -> bool:
        held = plain(self, cls, t)
        if held:
            hits[0] += 1
            res, state, ins = self.res, self.state, self.ins
            before = (ins.pending, ins.handles, res.unions, dict(res.matches),
                      res.skipped_cap, dict(state.unions), set(state.recorded))
            self.union(cls, t, "canonical_sum")
            assert (ins.pending, ins.handles, res.unions, dict(res.matches), res.skipped_cap,
                    dict(state.unions), set(state.recorded)) == before
        return held

    monkeypatch.setattr(passes.Recorder, "holds", checked)
    optimize_many(_exprs(), cost_model="reference", budget=_BUDGET)
    assert hits[0] > 0


def test_lift_without_an_invalid_leaf_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # the lift pass returns at once on a snapshot with no Invalid leaf: run in full there
    # (its check told there is one), it unions nothing
    import eqsat.engines.egraph.computed.lift as lift
    full = [0]
    plain = lift.lift_pass

    def checked(snap: Any, ins: Any, best: Any, state: Any, name: str, union: Any,
                *rest: Any) -> None:
        if not any(n.ctor == "Leaf" and n.fields[0] == "INVALID" for n in snap.nodes):
            full[0] += 1
            with monkeypatch.context() as m:
                m.setattr(lift, "nodes_of", lambda *_: [SimpleNamespace(fields=("INVALID",))])
                plain(snap, ins, best, state, name, lambda *a: pytest.fail(f"union {a}"), *rest)
        plain(snap, ins, best, state, name, union, *rest)

    monkeypatch.setattr(passes, "lift_pass", checked)
    optimize_many(_exprs()[:-1], cost_model="reference", budget=_BUDGET)
    assert full[0] > 0
