"""Which classes the computed rewrites visit (``passes.focus_classes``).

- the near set holds the roots and every class of the roots' cheapest terms, and is
  part of the reached set; a class only on terms of a root that cost more than
  ``NEAR_FACTOR`` x its best + ``NEAR_SLACK`` over that best is reached but not near,
  the excess summed along the path; a class no root reaches is in neither (the pass
  visits it: a guarded copy waiting for its union);
- a class the pass leaves (``PassState.deferred``) is visited by a later pass that
  finds it near a root, and real runs give the same costs with the pruning as without.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eqsat.engines.egraph.computed.passes as passes
from eqsat.engines.egraph import optimize_many, session_for
from eqsat.engines.egraph.computed import PassState, best_nodes, python_pass
from eqsat.engines.egraph.encoding import Snapshot
from eqsat.ir.sexpr import parse
from extraction import get_cost_model


def _snap(nodes: list[SimpleNamespace]) -> SimpleNamespace:
    """The parts of a Snapshot that focus_classes reads (its ``reached`` included)."""
    classes: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        classes.setdefault(n.cls, []).append(i)
    snap = SimpleNamespace(nodes=nodes, classes=classes)
    snap.reached = lambda roots: Snapshot.reached(snap, roots)  # type: ignore[arg-type]
    return snap


def _all(reached: passes.Reached, snap: SimpleNamespace) -> set[int]:
    """The classes of ``snap`` that ``reached`` holds."""
    return {c for c in snap.classes if c in reached}


@pytest.mark.parametrize("roots, want", [
    ([0], {0, 1, 2, 3, 4}),   # through every e-node of 0, the costly 3*4 too
    ([5], {1, 5}),            # 5 = 1 + 1
    ([6], {1, 5, 6}),
    ([2, 6], {1, 2, 5, 6}),
    ([], set()),
])
def test_snapshot_reached(roots: list[int], want: set[int]) -> None:
    assert _snap(_NODES).reached(roots) == want


def _n(cls: int, *kids: int, subsumed: bool = False, ctor: str = "Add") -> SimpleNamespace:
    return SimpleNamespace(cls=cls, kids=kids, subsumed=subsumed, ctor=ctor)


# class 0 (the root) = 1 + 2 (price 1, tree cost 3) or 3 * 4 (price 30, tree cost 32);
# 1, 2, 3, 4 leaves of cost 1; 5 = 1 + 1 reached by no root; 6 = 5 + 5 (no root either)
_NODES = [_n(0, 1, 2), _n(0, 3, 4), _n(1), _n(2), _n(3), _n(4), _n(5, 1, 1), _n(6, 5, 5)]
_PRICE = [1.0, 30.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
_COST = {0: 3.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 3.0, 6: 7.0}


@pytest.mark.parametrize("factor, slack, near", [
    (0.5, 2.0, {0, 1, 2}),           # 3*4 costs 29 over the root's best: over 0.5*3 + 2
    (0.0, 0.0, {0, 1, 2}),           # only the cheapest terms
    (10.0, 0.0, {0, 1, 2, 3, 4}),    # 29 <= 10*3
    (0.0, 29.0, {0, 1, 2, 3, 4}),    # 29 <= 29
    (0.0, 28.5, {0, 1, 2}),
])
def test_focus_table(monkeypatch: pytest.MonkeyPatch, factor: float, slack: float,
                     near: set[int]) -> None:
    monkeypatch.setattr(passes, "NEAR_FACTOR", factor)
    monkeypatch.setattr(passes, "NEAR_SLACK", slack)
    snap = _snap(_NODES)
    got_near, reached = passes.focus_classes(snap, [0], _COST, _PRICE.__getitem__)
    assert got_near == near
    assert _all(reached, snap) == {0, 1, 2, 3, 4}  # 5 and 6: no root reaches them


# a chain: 0 = f(1) (price 1); 1 = a leaf (1) or g(2) (price 3: 3 over its best);
# 2 = a leaf (1) or h(3) (price 3: 3 over); 3 = a leaf (1); 4 = a constant (best 0)
# or k(3) (price 1: 2 over) -- a class whose best is a constant still leads on
_CHAIN = [_n(0, 1), _n(0, 4), _n(1), _n(1, 2), _n(2), _n(2, 3), _n(3), _n(4), _n(4, 3)]
_CHAIN_PRICE = [1.0, 1.0, 1.0, 3.0, 1.0, 3.0, 1.0, 0.0, 1.0]
_CHAIN_COST = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 0.0}


@pytest.mark.parametrize("slack, near", [
    (0.0, {0, 4}),              # the cheapest term only: 0 = f(4), 4 = the constant
    (2.0, {0, 1, 3, 4}),        # f(1) is 1 over; k(3) 2 over
    (4.0, {0, 1, 2, 3, 4}),     # f(g(2)) is 1 + 3 over
    (6.5, {0, 1, 2, 3, 4}),
])
def test_focus_adds_the_excess_along_the_path(monkeypatch: pytest.MonkeyPatch, slack: float,
                                               near: set[int]) -> None:
    monkeypatch.setattr(passes, "NEAR_FACTOR", 0.0)
    monkeypatch.setattr(passes, "NEAR_SLACK", slack)
    snap = _snap(_CHAIN)
    got, reached = passes.focus_classes(snap, [0], _CHAIN_COST, _CHAIN_PRICE.__getitem__)
    assert got == near and _all(reached, snap) == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("ctor, near", [
    ("Mod", {0, 1, 2, 3}),  # (big sum) % 4: the dividend's cost now is not counted
    ("Idiv", {0, 1, 2, 3}),
    ("Mul", {0}),           # (big sum) * 4 costs 25 + 100, 95 over 30
])
def test_focus_does_not_count_a_dividend(ctor: str, near: set[int]) -> None:
    # 0 = a leaf-priced term (30) or OP(1, 2) (price 25); 1 = a sum of cost 100 (of 3);
    # 2 = the constant 4
    nodes = [_n(0), _n(0, 1, 2, ctor=ctor), _n(1, 3, 3), _n(2), _n(3)]
    snap = _snap(nodes)
    got, reached = passes.focus_classes(snap, [0], {0: 30.0, 1: 100.0, 2: 0.0, 3: 1.0},
                                        [30.0, 25.0, 98.0, 0.0, 1.0].__getitem__)
    assert got == near and _all(reached, snap) == {0, 1, 2, 3}


def test_focus_skips_subsumed_and_unpriced_enodes() -> None:
    nodes = [_n(0, 1), _n(0, 2, subsumed=True), _n(1), _n(2), _n(3, 0)]
    snap = _snap(nodes)
    near, reached = passes.focus_classes(snap, [0], {0: 1.0, 1: 1.0},
                                         [0.0, 0.0, 1.0, 1.0, 0.0].__getitem__)
    assert near == {0, 1}  # the subsumed e-node's child 2 is not near ...
    assert _all(reached, snap) == {0, 1, 2}  # ... but it is reached (any e-node)
    near, reached = passes.focus_classes(snap, [], {}, lambda i: 0.0)
    assert near == set() and _all(reached, snap) == set()


@st.composite
def _egraphs(draw: st.DrawFn) -> tuple[list[SimpleNamespace], list[float]]:
    ncls = draw(st.integers(1, 8))
    nodes = []
    for c in range(ncls):
        for _ in range(draw(st.integers(1, 3))):
            kids = tuple(draw(st.lists(st.integers(0, ncls - 1), max_size=3)))
            nodes.append(_n(c, *kids, subsumed=draw(st.booleans()) and draw(st.booleans())))
    prices = [draw(st.sampled_from([0.0, 1.0, 4.0, 25.0])) for _ in nodes]
    return nodes, prices


@settings(max_examples=200, deadline=None)
@given(_egraphs(), st.lists(st.integers(0, 7), min_size=1, max_size=3))
def test_focus_holds_every_cheapest_term(g: tuple[list, list[float]], roots: list[int]) -> None:
    nodes, prices = g
    snap = SimpleNamespace(nodes=nodes, height={})
    best, cost = best_nodes(snap, SimpleNamespace(prices=lambda: prices))
    snap = _snap(nodes)
    roots = [r for r in roots if r in snap.classes]
    near, reached = passes.focus_classes(snap, roots, cost, prices.__getitem__)
    assert set(roots) <= near <= _all(reached, snap)
    stack, on_best = list(roots), set()
    while stack:  # the classes of the roots' cheapest terms
        c = stack.pop()
        if c not in on_best:
            on_best.add(c)
            if c in best:
                stack.extend(nodes[best[c]].kids)
    assert on_best <= near


class _Up:
    """An e-node as the children index holds it (``Reached`` reads its class only)."""

    __slots__ = ("cls",)

    def __init__(self, cls: int):
        self.cls = cls

    def __repr__(self) -> str:
        return f"_Up({self.cls})"


def _kid_index(nodes: list) -> dict[int, set]:
    """class -> the e-nodes it is a child of (as ``PassState.kid_index``)."""
    index: dict[int, set] = {}
    for n in nodes:
        up = _Up(n.cls)
        for k in n.kids:
            index.setdefault(k, set()).add(up)
    return index


@settings(max_examples=300, deadline=None)
@given(_egraphs(), st.lists(st.integers(0, 9), max_size=3),
       st.lists(st.integers(0, 9), max_size=10))
@pytest.mark.parametrize("indexed", [True, False])
def test_reached_upwards_is_the_walk_down(indexed: bool, g: tuple[list, list[float]],
                                          roots: list[int], asked: list[int]) -> None:
    # asked in any order (answers so far end later searches), every class and some
    # that are none; subsumed e-nodes lead down too; without an index, by the walk down
    nodes, prices = g
    snap = SimpleNamespace(nodes=nodes, height={})
    _, cost = best_nodes(snap, SimpleNamespace(prices=lambda: prices))
    snap = _snap(nodes)
    index = _kid_index(nodes) if indexed else None
    near, reached = passes.focus_classes(snap, roots, cost, prices.__getitem__, index)
    assert isinstance(reached, passes.Reached)
    full = snap.reached(roots)
    assert near <= full
    for c in [*asked, *snap.classes, *roots]:
        assert (c in reached) == (c in full), c


@settings(max_examples=300, deadline=None)
@given(_egraphs(), st.lists(st.integers(0, 9), max_size=3),
       st.lists(st.integers(0, 9), max_size=10), st.integers(0, 12))
def test_reached_with_any_budget_is_the_walk_down(g: tuple[list, list[float]],
                                                  roots: list[int], asked: list[int],
                                                  budget: int) -> None:
    # the upward searches, then (past the budget) the walk down: the same answers, and
    # the walk down is made once at most
    nodes, prices = g
    snap = _snap(nodes)
    index = _kid_index(nodes)
    full = snap.reached(roots)
    walks = [0]

    def walk() -> set[int]:
        walks[0] += 1
        return snap.reached(roots)

    near = set(roots)
    reached = passes.Reached(roots, near, index, walk, budget)
    for c in [*asked, *snap.classes, *roots]:
        assert (c in reached) == (c in full), c
    assert walks[0] <= 1


def test_reached_without_an_index_walks_down_only_when_asked_off_near() -> None:
    walks = [0]

    def walk() -> set[int]:
        walks[0] += 1
        return {0, 1, 2}

    reached = passes.Reached([0], {0, 1}, None, walk)
    assert 0 in reached and 1 in reached and walks[0] == 0
    assert 2 in reached and 3 not in reached and 4 not in reached and walks[0] == 1


@pytest.mark.parametrize("model, indexed", [("reference", False), ("default", True)])
def test_reached_upwards_on_real_runs(monkeypatch: pytest.MonkeyPatch, model: str,
                                      indexed: bool) -> None:
    # the reference model keeps no prices by e-node, so no children index: the walk
    # down; the default model's later passes keep one (their repriced e-nodes)
    checked = [0, 0]
    real = passes.focus_classes

    def both(snap: Snapshot, roots: list, cost: dict, price: object, index: dict) -> tuple:
        roots = list(roots)
        near, reached = real(snap, roots, cost, price, index)  # type: ignore[arg-type]
        full = snap.reached(roots)
        for c in snap.classes:
            assert (c in reached) == (c in full), c
        checked[0] += 1
        checked[1] += index is not None
        return real(snap, roots, cost, price, index)  # type: ignore[arg-type]

    monkeypatch.setattr(passes, "focus_classes", both)
    exprs = [parse(t) for t in ("(add (mul (idiv (range 0 64) 8) 8) (mod (range 0 64) 8))",
                                "(idiv (add (mul (range 0 32) 12) (range 1 12)) 4)")]
    optimize_many(exprs, cost_model=get_cost_model(model))
    assert checked[0] >= 2 and (checked[1] > 0) == indexed


def _dm_classes(state: PassState) -> set[int]:
    return {k[1] for k in state.done if k[0] == "dm"}


def test_a_deferred_class_is_visited_when_a_pass_finds_it_near(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    # a pass that finds only the root near leaves the division's class (deferred, no
    # div/mod rule run on it); the next pass, which finds it near, runs them although
    # the class did not change in between
    cm = get_cost_model("reference")
    g = parse("(add (idiv (add (mul (var x 0 9) 4) 3) 4) (var y 0 5))")
    s = session_for(None)
    with s.probe([g]) as run:
        (h,) = run.insert([g])
        run.step(True)
        snap = Snapshot(s.store.egraph, s.ins)
        root = snap.cls_of_handle(h)
        div = snap.cls_of_handle(s.ins.uop_handle[id(g.src[0])])
        state = PassState()
        real = passes.focus_classes
        monkeypatch.setattr(passes, "focus_classes", lambda sn, roots, cost, price, index: (
            set(roots), real(sn, roots, cost, price, index)[1]))
        python_pass(snap, s.ins, s.program.pyrules, state, roots=[root], model=cm)
        assert div in state.deferred and div not in _dm_classes(state)
        monkeypatch.setattr(passes, "focus_classes", real)
        python_pass(snap, s.ins, s.program.pyrules, state, roots=[root], model=cm)
        assert div in _dm_classes(state) and div not in state.deferred


@pytest.mark.parametrize("text", [
    "(add (mul (idiv (range 0 64) 8) 8) (mod (range 0 64) 8))",
    "(mod (add (mul (idiv (range 0 96) 6) 6) (mod (range 0 96) 6)) 4)",
    "(idiv (add (mul (range 0 32) 12) (range 1 12)) 4)",
])
def test_focus_changes_no_cost(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # pruning only: the same cost as a run that visits every changed class
    cm = get_cost_model("reference")
    g = parse(text)
    pruned = cm.graph_cost(optimize_many([g], cost_model=cm)[0][0])
    monkeypatch.setattr(passes, "NEAR_FACTOR", 1e9)  # (not inf: 0 * inf is nan)
    full = cm.graph_cost(optimize_many([g], cost_model=cm)[0][0])
    assert pruned == full
