"""Sub-views sliced from a view, the view's shared tree choice, shared term building and
the grounding of extract_roots: each must equal what the plain construction gives."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from eqsat import Ops, UOp, dtypes
from eqsat.engines.egraph.extracting import usable_keys
from extraction import (
    CpuCost,
    EGraphView,
    ENode,
    ReferenceCost,
    TreeChoice,
    build_terms,
    extract_dag,
    extract_tree,
    extract_tree_each,
    uop_builder,
)
from extraction.egraph_view import _sort_key
from extraction.extract import (
    _tight_tree,
    _tree_pass,
    closure,
    reachable_region,
    rechoose,
    tree_choice,
)
from extraction.synth import random_view

I = dtypes.index  # noqa: E741
MODELS = [ReferenceCost(), CpuCost()]


def int_keyed(v: EGraphView, lo_seed: int) -> EGraphView:
    """``v`` with int class ids and node keys (the engine's kind), plus class bounds."""
    rng = random.Random(lo_seed)
    cid = {c: int(str(c)[1:]) * 3 + 1 for c in v.classes}
    nodes = [ENode(i * 7 + 2, cid[n.eclass], n.op, n.dtype, n.arg,
                   tuple(cid[k] for k in n.children)) for i, n in enumerate(v._all_nodes)]
    return EGraphView(nodes, class_min={c: rng.randrange(-3, 3) for c in cid.values()},
                      roots=[cid[r] for r in v.roots])


def reach(v: EGraphView, roots) -> set:
    seen, stack = set(roots), list(roots)
    while stack:
        for n in v.classes.get(stack.pop(), ()):
            for k in n.children:
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
    return seen


def fresh_sub(v: EGraphView, roots) -> EGraphView:
    """The sub-view built the plain way (what extract_roots did before subview())."""
    keep = reach(v, roots)
    return EGraphView([n for c in keep for n in v.classes.get(c, ())],
                      class_min={c: m for c, m in v.class_min.items() if c in keep},
                      roots=roots, lets={k: c for k, c in v.lets.items() if c in keep})


def arrays(v: EGraphView) -> tuple:
    comp = v.compiled()
    return (comp.cids, [id(n) for n in comp.nodes], comp.ncls, comp.nch, comp.nchd,
            comp.class_nodes, comp.parents, comp.selfloop, comp.pend, comp.leaves,
            [sorted(k) for k in comp.kids])


def selection_keys(e) -> list:
    return sorted((str(c), str(n.key)) for c, n in e.selection.items())


CASES = [  # seed, n_classes, max_nodes_per_class, cycle_prob, locality, n_roots
    (1, 12, 3, 0.1, None, 2),
    (2, 30, 3, 0.2, 8, 3),
    (3, 60, 4, 0.3, 10, 4),
    (4, 80, 2, 0.0, 6, 5),
    (5, 45, 4, 0.25, None, 3),
]


@pytest.mark.parametrize("seed,n,per,cyc,loc,nroots", CASES)
@pytest.mark.parametrize("ints", [False, True])
def test_subview_equals_fresh_view(seed, n, per, cyc, loc, nroots, ints):
    v = random_view(seed, n_classes=n, max_nodes_per_class=per, cycle_prob=cyc, locality=loc,
                    n_roots=nroots)
    if ints:
        v = int_keyed(v, seed)
    for model in MODELS:
        extract_tree_each(v, list(v.roots), model)  # fills the view's per-model caches
    for r in v.roots:
        sub, ref = v.subview([r]), fresh_sub(v, [r])
        assert arrays(sub) == arrays(ref)
        assert sub.classes == ref.classes and sub._all_nodes == ref._all_nodes
        assert sub.class_min == ref.class_min and sub.roots == ref.roots
        assert sub._class_const == ref._class_const and len(sub) == len(ref)
        for model in MODELS:
            assert sub.node_costs(model) == ref.node_costs(model)
            a, b = extract_dag(sub, [r], model), extract_dag(ref, [r], model)
            assert (a.cost, a.tree_cost, a.stats) == (b.cost, b.tree_cost, b.stats)
            assert selection_keys(a) == selection_keys(b)
            assert a.to_uops()[0] is b.to_uops()[0]


@pytest.mark.parametrize("seed,n,per,cyc,loc,nroots", CASES)
def test_cached_tree_choice_is_the_plain_one(seed, n, per, cyc, loc, nroots):
    """The view's tree choice over every class, sliced to a sub-view or masked to the
    classes some roots reach, is what a tree pass over just those classes chooses."""
    v = int_keyed(random_view(seed, n_classes=n, max_nodes_per_class=per, cycle_prob=cyc,
                              locality=loc, n_roots=nroots), seed)
    model = ReferenceCost()
    each = extract_tree_each(v, list(v.roots), model)
    for r, e in zip(v.roots, each, strict=True):
        assert selection_keys(e) == selection_keys(extract_tree(fresh_sub(v, [r]), [r], model))
        sub = v.subview([r])
        comp = sub.compiled()
        (key, cached), = comp.tree_cache.items()
        # the pass over just those classes, its ties to tighter bounds as the cache has them
        assert cached == _tight_tree(comp, sub.node_costs(model), [True] * len(comp.cids))


def test_subview_of_an_unknown_root_and_of_all_roots():
    v = random_view(7, n_classes=20, n_roots=2)
    with pytest.raises(KeyError, match="not in this view"):
        v.subview(["nope"])
    both = v.subview(list(v.roots))
    assert arrays(both) == arrays(fresh_sub(v, list(v.roots)))
    assert both.roots == v.roots


def test_subview_keeps_empty_classes_in_first_use_order():
    """Classes named by children but without e-nodes come last, in order of first use."""
    nodes = [ENode(1, 10, Ops.ADD, I, None, (40, 30)), ENode(2, 20, Ops.ADD, I, None, (30, 50)),
             ENode(3, 5, Ops.MUL, I, None, (20, 10)), ENode(4, 6, Ops.MUL, I, None, (50, 10))]
    v = EGraphView(nodes)
    for roots in ([5], [6], [20], [5, 6]):
        assert arrays(v.subview(roots)) == arrays(fresh_sub(v, roots))


def test_build_terms_shares_done_terms():
    v = random_view(3, n_classes=40, cycle_prob=0.2, n_roots=4)
    each = extract_tree_each(v, list(v.roots), ReferenceCost())
    done: dict = {}
    shared = [build_terms(e.selection, [r], uop_builder, done=done)[0]
              for r, e in zip(v.roots, each, strict=True)]
    assert [e.to_uops()[0] for e in each] == shared
    assert set(done) == set().union(*(e.selection for e in each))


def old_usable(nodes, decoded) -> set[int]:
    """The grounding fixpoint as extract_roots computed it before (from scratch each round)."""
    def grounded(use):
        ok, waiting, missing, stack = set(), {}, {}, []
        for i in use:
            kids = set(decoded[i][3])
            missing[i] = len(kids)
            for k in kids:
                waiting.setdefault(k, []).append(i)
            if not kids:
                stack.append(i)
        while stack:
            i = stack.pop()
            c = nodes[i].cls
            if c in ok:
                continue
            ok.add(c)
            for p in waiting.get(c, ()):
                missing[p] -= 1
                if missing[p] == 0:
                    stack.append(p)
        return ok

    use = {i for i in decoded if not nodes[i].subsumed}
    while True:
        ok = grounded(use)
        extra = {i for i in decoded if i not in use and nodes[i].cls not in ok}
        if not extra:
            return use
        use |= extra


@pytest.mark.parametrize("p_sub", [0.0, 0.3])
@pytest.mark.parametrize("seed", range(40))
def test_usable_matches_the_round_by_round_fixpoint(seed, p_sub):
    rng = random.Random(seed)
    n_cls = rng.randint(2, 25)
    nodes, decoded, enodes = [], {}, []
    for i in range(rng.randint(n_cls, 3 * n_cls)):
        c = i if i < n_cls else rng.randrange(n_cls)
        kids = tuple(rng.randrange(n_cls) for _ in range(rng.choice([0, 1, 2, 2, 3, 4])))
        nodes.append(SimpleNamespace(cls=c, subsumed=rng.random() < p_sub))
        if rng.random() < 0.9:
            decoded[i] = (Ops.ADD, I, None, kids)
            enodes.append(ENode(i, c, Ops.ADD, I, None, kids))
    snap = SimpleNamespace(nodes=nodes)
    assert usable_keys(snap, enodes) == old_usable(nodes, decoded)


@pytest.mark.parametrize("op, subsumed, expected", [
    (Ops.ADD, False, {0, 1, 2}),  # every e-node allowed: all of them
    (Ops.ADD, True, {0, 2}),  # the subsumed one's class has another term
    (Ops.NOOP, False, {0, 2}),  # no text form, its class has another term
])
def test_usable_leaves_out_what_another_term_replaces(op, subsumed, expected):
    # class 0: a leaf; class 1: x + x or x * 2 (node 1 or node 2)
    nodes = [SimpleNamespace(cls=0, subsumed=False), SimpleNamespace(cls=1, subsumed=subsumed),
             SimpleNamespace(cls=1, subsumed=False)]
    enodes = [ENode(0, 0, Ops.DEFINE_VAR, I, "x", ()), ENode(1, 1, op, I, None, (0, 0)),
              ENode(2, 1, Ops.MUL, I, None, (0, 0))]
    assert usable_keys(SimpleNamespace(nodes=nodes), iter(enodes)) == expected


@pytest.mark.parametrize("seed", range(5))
def test_content_labels_read_each_node_content(seed):
    comp = int_keyed(random_view(seed, n_classes=30), seed).compiled()
    assert comp.content_labels() == [
        ("" if n.op is None else n.op.name, str(n.dtype), _sort_key(n.arg)) for n in comp.nodes]


def test_gc_paused_restores_the_collector():
    import gc

    from eqsat.engines.egraph.schedules import gc_paused as _gc_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), _gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off: stays off
    finally:
        gc.enable()


@pytest.mark.parametrize("seed,n,per,cyc,loc,nroots", CASES)
def test_of_classes_equals_the_checked_constructor(seed, n, per, cyc, loc, nroots):
    """The trusted constructor (canonical input, no checks) gives the plain view."""
    v = int_keyed(random_view(seed, n_classes=n, max_nodes_per_class=per, cycle_prob=cyc,
                              locality=loc, n_roots=nroots), seed)
    fast = EGraphView.of_classes({c: list(ns) for c, ns in v.classes.items()},
                                 class_min=v.class_min)
    assert arrays(fast) == arrays(v) and fast._all_nodes == v._all_nodes
    assert fast._class_const == v._class_const and fast.class_min == v.class_min
    assert fast._empty == v._empty and len(fast) == len(v)
    for model in MODELS:
        assert fast.node_costs(model) == v.node_costs(model)
    key = v._all_nodes[-1].key
    assert fast.node(key) is v.node(key)  # the key index, built on demand
    with pytest.raises(KeyError, match="no e-node"):
        fast.node("nope")


@pytest.mark.parametrize("seed,n,per,cyc,loc,nroots", CASES)
@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_tree_choice_reads_what_extract_tree_gives(seed, n, per, cyc, loc, nroots, model):
    """TreeChoice's per-root costs, classes and terms are extract_tree's, and its terms
    are build_terms' of that selection."""
    v = int_keyed(random_view(seed, n_classes=n, max_nodes_per_class=per, cycle_prob=cyc,
                              locality=loc, n_roots=nroots), seed)
    roots = list(v.roots)
    tc = TreeChoice(v, roots, model)
    done: dict = {}
    for i, r in enumerate(roots):
        ref = extract_tree(v, [r], model)
        reached = tc.reached(i)
        assert reached == set(tc.order(i))
        assert {tc.comp.cids[c] for c in reached} == set(ref.selection)
        assert tc.costs(i, reached) == tc.costs(i, tc.order(i)) == (ref.cost, ref.tree_cost)
        assert selection_keys(tc.extraction(i)) == selection_keys(ref)
        assert tc.terms([i], uop_builder, done)[0] is ref.to_uops()[0]
    assert tc.terms(range(len(roots)), uop_builder, {}) == [
        build_terms(e.selection, [r], uop_builder)[0]
        for r, e in zip(roots, extract_tree_each(v, roots, model), strict=True)]
    # and builds them in build_terms' order (children left to right): the same objects
    made: tuple[list, list] = ([], [])
    tc.terms(range(len(roots)), lambda n, _k: made[0].append(n.key), {})
    shared: dict = {}
    for r, e in zip(roots, extract_tree_each(v, roots, model), strict=True):
        build_terms(e.selection, [r], lambda n, _k: made[1].append(n.key), done=shared)
    assert made[0] == made[1]


@pytest.mark.parametrize("seed", range(12))
def test_region_is_the_plain_reachability(seed):
    """reachable_region: classes reachable from the starts without entering free or banned."""
    v = random_view(seed, n_classes=30, cycle_prob=0.3, n_roots=3)
    comp = v.compiled()
    rng = random.Random(seed)
    n = len(comp.cids)
    for _ in range(10):
        starts = set(rng.sample(range(n), rng.randint(1, 4)))
        free = set(rng.sample(range(n), rng.randint(0, 6)))
        banned = rng.choice([-1, rng.randrange(n)])
        out, stack = set(starts), list(starts)
        while stack:
            for k in comp.kids[stack.pop()]:
                if k not in out and k not in free and k != banned:
                    out.add(k)
                    stack.append(k)
        assert reachable_region(comp, starts, free, banned) == sorted(out)


def test_enode_is_a_record():
    """ENode compares and hashes on every field but raw, equals no plain tuple, is
    immutable, and copies/pickles to an equal ENode; the bulk builder makes the same."""
    import copy
    import pickle

    from extraction.egraph_view import new_enode

    a = ENode(1, 10, Ops.ADD, I, None, (2, 3), raw="x")
    b = ENode(1, 10, Ops.ADD, I, None, (2, 3), 0.0, "y")
    assert a == b and hash(a) == hash(b) and not (a != b)
    assert a != ENode(1, 10, Ops.ADD, I, None, (2, 3), cost=1.0)
    assert a != tuple(a) and tuple(a) != a and a != 5
    assert new_enode((1, 10, Ops.ADD, I, None, (2, 3), 0.0, None)) == a
    assert repr(a) == ("ENode(key=1, eclass=10, op=Ops.ADD, dtype=" + repr(I)
                       + ", arg=None, children=(2, 3), cost=0.0)")
    with pytest.raises(AttributeError):
        a.key = 2  # type: ignore[misc]
    for c in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert type(c) is ENode and c == a and c.raw == "x"


def plain_knuth(comp, cost, sel, free, region, banned=-1, until=()):
    """The re-choice as written before the pending-count lists (dicts filled per class)."""
    import heapq

    new = list(sel)
    best = dict.fromkeys(free, 0.0)
    pending: dict = {}
    heap = []
    for c in region:
        new[c] = -1
        pending.update((n, k) for n in comp.class_nodes[c] if (k := comp.pend[n]) > 0)
        heap.extend((cost[n], n) for n in comp.leaves[c])
    if banned >= 0:
        for p in comp.parents[banned]:
            pending.pop(p, None)
    for f in free:
        for p in comp.parents[f]:
            if p in pending:
                pending[p] -= 1
                if not pending[p]:
                    heap.append((cost[p] + sum(best[k] for k in comp.nch[p]), p))
    wanted = set(until)
    heapq.heapify(heap)
    while heap:
        v, n = heapq.heappop(heap)
        c = comp.ncls[n]
        if c in best:
            continue
        best[c], new[c] = v, n
        wanted.discard(c)
        if until and not wanted:
            break
        for p in comp.parents[c]:
            if p in pending:
                pending[p] -= 1
                if not pending[p] and comp.ncls[p] not in best:
                    heapq.heappush(heap, (cost[p] + sum(best[k] for k in comp.nch[p]), p))
    if banned >= 0:
        new[banned] = -1
    return new


@pytest.mark.parametrize("seed", range(16))
def test_rechoose_and_tree_pass_match_the_plain_knuth(seed):
    """rechoose and tree_choice (pending counts copied from the view's list) choose
    what the plain dict-based pass chooses, free/banned/until included."""
    v = random_view(seed, n_classes=rng_n(seed), max_nodes_per_class=4, cycle_prob=0.3,
                    n_roots=3)
    comp = v.compiled()
    rng = random.Random(seed)
    n = len(comp.cids)
    for model in MODELS:
        cost = v.node_costs(model)
        choice, _ = tree_choice(comp, cost, [True] * n)
        assert choice == plain_knuth(comp, cost, [-1] * n, set(), list(range(n)))
        part = [rng.random() < 0.6 for _ in range(n)]
        for c in range(n):  # close the part under children
            if part[c]:
                for k in comp.kids[c]:
                    part[k] = True
        closed = [False] * n
        stack = [c for c in range(n) if part[c]]
        for c in stack:
            closed[c] = True
        while stack:
            for k in comp.kids[stack.pop()]:
                if not closed[k]:
                    closed[k] = True
                    stack.append(k)
        region = [c for c in range(n) if closed[c]]
        sub, _ = tree_choice(comp, cost, closed)
        assert sub == plain_knuth(comp, cost, [-1] * n, set(), region)
        for _ in range(8):
            sel = list(choice)
            tops = [c for c in range(n) if sel[c] >= 0]
            free = closure(comp, sel, rng.sample(tops, min(len(tops), rng.randint(0, 3))))
            banned = rng.choice([-1] + [c for c in range(n) if c not in free])
            starts = {c for c in tops if c not in free and c != banned}
            if not starts:
                continue
            reg = reachable_region(comp, starts, free, banned)
            until = rng.sample(sorted(starts), min(len(starts), rng.randint(0, 2)))
            assert (rechoose(comp, cost, sel, free, reg, banned, until)
                    == plain_knuth(comp, cost, sel, free, reg, banned, until))


def rng_n(seed: int) -> int:
    return 8 + (seed * 7) % 30


def test_op_only_model_is_asked_once_per_op():
    """node_costs asks an op_only model once per op, and prices as asking every node."""
    calls: list = []

    class Counted(ReferenceCost):
        def node_cost(self, op, dtype, arg, child_consts, child_mins=None):
            calls.append(op)
            return super().node_cost(op, dtype, arg, child_consts)

    class Every(Counted):
        op_only = False

    class Bad(ReferenceCost):
        def node_cost(self, op, dtype, arg, child_consts, child_mins=None):
            return -1.0

    v = random_view(5, n_classes=40, n_roots=2)
    fast = v.node_costs(Counted())
    assert len(calls) == len(set(calls)) == len({n.op for n in v._all_nodes} - {None})
    assert fast == v.node_costs(Every()) and len(calls) > len(set(calls))
    with pytest.raises(ValueError, match="costs must be finite numbers >= 0"):
        random_view(5, n_classes=40, n_roots=2).node_costs(Bad())


def test_tree_choice_keeps_the_terms_its_tie_break_built():
    x = UOp.var("x", 0, 9)
    v = EGraphView.from_uops([(x + 1) * 3], unions=[(x + 1, x - UOp.const(I, -1))])
    tc = TreeChoice(v, list(v.roots), ReferenceCost())
    comp, choice = tc.comp, tc.choice

    def term(c):
        n = choice[c]
        return uop_builder(comp.nodes[n], tuple(term(k) for k in comp.nch[n]))

    assert tc.built and all(u is term(c) for c, u in tc.built.items())
    assert tc.terms([0], uop_builder, dict(tc.built)) == tc.terms([0], uop_builder, {})


@pytest.mark.parametrize("seed", range(12))
def test_a_view_of_one_enode_per_class_has_no_tie_to_break(seed):
    """Without a class of two e-nodes the tree pass skips the content keys: it chooses
    what the content-ordered pass chooses, at the same costs (a class on a cycle: none)."""
    v = random_view(seed, n_classes=rng_n(seed), max_nodes_per_class=1)
    nodes = [ns[0] for ns in v.classes.values()]
    # a class whose only e-node names itself, and one above it: neither has a term
    nodes += [ENode("loop", "cl", Ops.ADD, I, None, ("cl", nodes[0].eclass)),
              ENode("up", "cu", Ops.MUL, I, None, ("cl", "cl"))]
    view = EGraphView(nodes, roots=v.roots)
    comp = view.compiled()
    assert max(map(len, comp.class_nodes)) == 1
    for model in MODELS:
        cost, every = view.node_costs(model), [True] * len(comp.cids)
        choice, best, _order, _keys, _depth = _tree_pass(comp, cost, every, content=True)
        assert _tight_tree(comp, cost, every) == (choice, best)
        assert choice[comp.cidx["cu"]] == -1 and best[comp.cidx["cl"]] == math.inf
