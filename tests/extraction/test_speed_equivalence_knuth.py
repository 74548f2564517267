"""The extractors' Knuth pass against the plain version it replaces.

:func:`extraction.extract.knuth` inlines the two-children sum and leaves a child
count that reached its last child unwritten; its choices and best costs (ties, order,
early stop at ``wanted``) must be what the plain pass gives, and so must everything
built on it (tree choice, re-choice, the DAG extractor's result).
"""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import extraction.extract as ex
from extraction import CpuCost, ReferenceCost, extract_dag, extract_tree
from extraction.synth import random_view


def _plain_knuth(comp, cost, choice, best, ok, heap, pending, wanted) -> None:  # noqa: ANN001
    """The pass as it was (the spec)."""
    nch, ncls, parents = comp.nch, comp.ncls, comp.parents
    get = best.__getitem__
    need = len(wanted)
    heapq.heapify(heap)
    while heap:
        v, n = heapq.heappop(heap)
        c = ncls[n]
        if choice[c] >= 0:
            continue
        best[c] = v
        choice[c] = n
        if need and c in wanted:
            need -= 1
            if not need:
                break
        for p in parents[c]:
            left = pending[p]
            if left == 1:
                pending[p] = 0
                pc = ncls[p]
                if ok[pc] and choice[pc] < 0:
                    heapq.heappush(heap, (cost[p] + sum(map(get, nch[p])), p))
            elif left > 1:
                pending[p] = left - 1


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 30), cyc=st.sampled_from([0.0, 0.2, 0.5]),
       model=st.sampled_from([ReferenceCost(), CpuCost()]))
def test_tree_choice_as_the_plain_pass(seed: int, n: int, cyc: float, model) -> None:  # noqa: ANN001
    view = random_view(seed, n_classes=n, cycle_prob=cyc, n_roots=2)
    comp = view.compiled()
    cost = view.node_costs(model)
    rel = [True] * len(comp.cids)
    got = ex.tree_choice(comp, cost, rel)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ex, "knuth", _plain_knuth)
        want = ex.tree_choice(comp, cost, rel)
    assert got[0] == want[0]
    assert [repr(b) for b in got[1]] == [repr(b) for b in want[1]]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(6, 25), cyc=st.sampled_from([0.0, 0.3]))
def test_dag_extraction_as_with_the_plain_pass(seed: int, n: int, cyc: float) -> None:
    # extract_dag re-chooses (with free, banned and wanted classes) through knuth
    view = random_view(seed, n_classes=n, cycle_prob=cyc, n_roots=2)
    model = ReferenceCost()
    got = extract_dag(view, list(view.roots), model)
    got_tree = extract_tree(view, list(view.roots), model)
    view2 = random_view(seed, n_classes=n, cycle_prob=cyc, n_roots=2)  # no shared caches
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ex, "knuth", _plain_knuth)
        want = extract_dag(view2, list(view2.roots), model)
        want_tree = extract_tree(view2, list(view2.roots), model)
    assert {c: e.key for c, e in got.selection.items()} == \
        {c: e.key for c, e in want.selection.items()}
    assert (got.cost, got.tree_cost) == (want.cost, want.tree_cost)
    assert {c: e.key for c, e in got_tree.selection.items()} == \
        {c: e.key for c, e in want_tree.selection.items()}
