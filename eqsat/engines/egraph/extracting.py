"""Extraction of a run's roots from its last snapshot (the engine's last phase).

Every root is extracted on its own (a batch gives each graph its own best): tree
extraction of all roots in one pass first (fast), then the DAG-aware extractor of
:mod:`extraction` where a DAG choice may share more (bounded by its own work budget,
and left out past the run's hard time limit); the cheaper selection (DAG cost) wins.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from itertools import chain
from typing import Any

from eqsat.engines.egraph.encoding import ArgTable, Snapshot, decode_node
from eqsat.engines.egraph.schedules import Clock
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.sexpr import has_text_form
from eqsat.ir.uop import UOp
from extraction import (
    EGraphView,
    ENode,
    Extraction,
    TreeChoice,
    extract_dag,
    uop_builder,
)
from extraction.cost import get_cost_model, sums_op_prices
from extraction.egraph_view import new_enode
from extraction.extract import REBUILT_OPS, integer_prices, no_cheaper_term

__all__ = ["extract_roots", "usable_keys"]


def extract_roots(snap: Snapshot, args: ArgTable, handles: list[int], model: Any,
                  clock: Clock, subsumed: bool = False, thorough: bool = False,
                  priced: dict[int, tuple[UOp, float]] | None = None
                  ) -> tuple[list[UOp], dict[str, Any]]:
    """The best term of every root handle under ``model`` (see the module docstring),
    and stats (``cost``: the summed cost of the distinct roots, ``method``).
    ``subsumed``: subsumed e-nodes may be used too (:func:`usable_keys`).
    ``thorough``: every root gets the whole DAG search (time permitting), not only the
    roots where its tree choice shares something or two divisions are at stake.
    ``priced``: filled with ``id(term) -> (term, model.graph_cost(term))`` for the
    terms whose graph cost the extraction knows (:func:`_tree_prices`). (It runs
    inside ``Session.run``, where automatic garbage collection is paused.)"""
    roots = [snap.cls_of_handle(h) for h in handles]
    uniq = list(dict.fromkeys(roots))
    # only the classes the roots reach (through any e-node, list cells included) matter
    groups = _usable_groups(snap, args, snap.reached(uniq), subsumed)
    full = EGraphView.of_classes(groups, class_min=snap.lo)
    # one e-node a class: the tree choice is the only selection (no pass, no search)
    lone = _lone_choice(full, uniq, model, priced) if _one_each(groups) else None
    if lone is not None:
        return [lone[r][0] for r in roots], {"cost": sum(lone[r][1] for r in uniq),
                                          "method": "tree", "dag_skipped": 0}
    # tree extraction of every root on its own, in one pass over the whole e-graph
    tc = TreeChoice(full, uniq, model)
    nodes_of = tc.comp.nodes
    choice = tc.choice
    cost: dict[int, float] = {}
    dag: dict[int, Extraction] = {}  # the roots whose DAG choice won
    method = "tree"
    skipped = 0  # roots whose DAG search the hard time limit left out
    reached: dict[int, set[int]] = {}  # root -> the classes its tree choice reaches
    for i, r in enumerate(uniq):
        order = reached[r] = tc.reached(i)
        c_dag, c_tree = tc.costs(i, order)
        cost[r] = c_dag
        # the tree choice shares nothing: a DAG choice may still share, e.g. write the
        # value with the x%c the guard pays for anyway, or a ladder of selects for one
        # division, whose branches share the dividend; a light search where a division
        # is at stake, none otherwise
        light = c_dag >= c_tree and not thorough
        if light and _INT_DIV.isdisjoint([id(nodes_of[choice[c]].op) for c in order]):
            continue
        view = full if len(uniq) == 1 else full.subview([r])  # the classes r reaches
        if no_cheaper_term(view, model, r, c_dag):
            continue  # no term of r is cheaper than the tree choice as a DAG: the search
            # would keep the tree choice
        if clock.over():
            skipped += 1
            continue  # past the hard time limit: its tree choice stands
        ext = (extract_dag(view, [r], model, max_passes=1, max_rounds=1, max_moves=0,
                           work_budget=20_000) if light else extract_dag(view, [r], model))
        method = "dag"
        if ext.cost < c_dag:  # a tie keeps the tree choice (content-ordered ties)
            dag[r] = ext
            cost[r] = ext.cost
    # the tree choices of all roots come from one selection: build their terms once;
    # a DAG choice builds through the same memo (e-node, child terms) -> term, so the
    # parts it shares with the tree terms are not built (looked up) again
    memo: dict[tuple[int, tuple[UOp, ...]], UOp] = {}

    def memo_build(en: ENode, kids: tuple[UOp, ...]) -> UOp:
        key = (id(en), kids)  # en is alive in the view, kids in the key
        u = memo.get(key)
        if u is None:
            u = memo[key] = uop_builder(en, kids)
        return u

    build = memo_build if dag else uop_builder  # no DAG choice: each e-node built once
    done = dict(tc.built)  # class index -> term, of the tree choice (the tie-break's too)
    term = {r: dag[r].build(build)[0] if r in dag else tc.terms([i], build, done)[0]
            for i, r in enumerate(uniq)}  # in the order of the roots (creation order)
    if priced is not None and sums_op_prices(tc.model):
        for r, classes_r in reached.items():
            if r not in dag:
                _tree_prices(tc, done, classes_r, term[r], priced)
    return [term[r] for r in roots], {"cost": sum(cost[r] for r in uniq), "method": method,
                                      "dag_skipped": skipped}


def _usable_groups(snap: Snapshot, args: ArgTable, seen: set[int], subsumed: bool
                   ) -> dict[int, list[ENode]]:
    """Per class of ``seen`` (ascending), its IR e-nodes the extraction may use
    (:func:`usable_keys`), by index; a class left without one is left out."""
    nodes, classes = snap.nodes, snap.classes
    # (a snapshot lists a class's e-nodes by index: its rows are sorted by class)
    groups: dict[int, list[ENode]] = {}  # per class, its IR e-nodes
    for c in sorted(seen):
        ns = classes.get(c)
        if ns is None:
            continue
        ens = [new_enode((i, c, *dec, 0.0, None)) for i in ns
               if (dec := decode_node(nodes[i], args, snap)) is not None]
        if ens:
            groups[c] = ens
    every = list(chain.from_iterable(groups.values()))
    use = usable_keys(snap, every, subsumed)
    if len(use) < len(every):
        # the classes that lose e-nodes (subsumed ones not needed for grounding) are
        # few; a class left without one goes (the others keep their places)
        for c in {e.eclass for e in every if e.key not in use}:
            ens = [e for e in groups[c] if e.key in use]
            if ens:
                groups[c] = ens
            else:
                del groups[c]
    return groups


def _one_each(groups: dict[int, list[ENode]]) -> bool:
    """Whether every class of ``groups`` has one e-node (and there is one)."""
    return max(map(len, groups.values()), default=2) == 1


def _lone_choice(view: EGraphView, uniq: list[int], model: Any,
                 priced: dict[int, tuple[UOp, float]] | None
                 ) -> dict[int, tuple[UOp, float]] | None:
    """Each root of ``uniq`` -> its term and DAG cost, where every class of ``view``
    has one e-node (:func:`_one_each`): the tree choice is the only selection, so no
    DAG search can find a cheaper one, and under integer prices ``no_cheaper_term``
    proves it and :func:`extract_roots` runs none; its terms built in the order
    ``TreeChoice.terms`` builds them, ``priced`` filled as :func:`_tree_prices` fills
    it. None where the general path must decide: a price not an integer, a root whose
    term meets a cycle or a class without an e-node (no term: its error)."""
    model = get_cost_model(model)
    node = {c: ns[0] for c, ns in view.classes.items()}
    every = view.price(node.values(), model)
    if not integer_prices(every):
        return None
    price = dict(zip(node, every, strict=True))
    done: dict[int, UOp] = {}
    for r in uniq:
        if r not in node or (r not in done and not _build_lone(node, r, done)):
            return None
    out: dict[int, tuple[UOp, float]] = {}
    sums = priced is not None and sums_op_prices(model)
    for r in uniq:
        classes = _reach(node, r)
        prices = [price[c] for c in classes]
        out[r] = (done[r], math.fsum(prices))
        if sums and priced is not None:
            _enter_price(done[r], [id(node[c].op) for c in classes], prices,
                         [done[c] for c in classes], priced)
    return out


def _build_lone(node: dict[int, ENode], r: int, done: dict[int, UOp]) -> bool:
    """Build the term of class ``r`` from its classes' e-nodes ``node`` into ``done``
    (class -> term), depth first, children left to right, each class once (the order
    ``TreeChoice.terms`` builds in); False on a cycle or a class without an e-node."""
    active = {r}
    stack = [(r, iter(node[r].children))]
    while stack:
        c, it = stack[-1]
        for k in it:
            if k not in done:
                if k in active or k not in node:
                    return False
                active.add(k)
                stack.append((k, iter(node[k].children)))
                break
        else:
            stack.pop()
            n = node[c]
            done[c] = uop_builder(n, tuple([done[k] for k in n.children]))
    return True


def _reach(node: dict[int, ENode], r: int) -> list[int]:
    """The classes the term of class ``r`` holds (``node``: each class's e-node)."""
    seen = {r}
    stack = [r]
    while stack:
        for k in node[stack.pop()].children:
            if k not in seen:
                seen.add(k)
                stack.append(k)
    return list(seen)


def _enter_price(term: UOp, op_ids: list[int], prices: list[float], terms: list[UOp],
                 priced: dict[int, tuple[UOp, float]]) -> None:
    """Enter ``term`` in ``priced`` with the sum of ``prices``, the prices of the
    distinct ones of ``terms`` (its subterms, one a class it reaches, each of an op of
    ``op_ids``), where that sum is its graph cost (see :func:`_tree_prices`)."""
    if _REBUILT_IDS.isdisjoint(op_ids):
        distinct = dict(zip(map(id, terms), prices, strict=True)).values()
        if all(map(float.is_integer, distinct)):
            priced[id(term)] = (term, float(sum(distinct)))


def _tree_prices(tc: TreeChoice, done: dict[int, UOp], classes: set[int], term: UOp,
                 priced: dict[int, tuple[UOp, float]]) -> None:
    """Enter ``term``, built from ``tc``'s choice over ``classes`` (the ones it reaches;
    ``done``: class -> its built term), in ``priced`` with its graph cost under a model
    that sums its nodes' op prices (:func:`extraction.cost.sums_op_prices`): the sum of
    the prices of the distinct terms of those classes. Each is its chosen e-node's op
    over its children's terms (UOps are hash-consed: two classes may give one node,
    counted once), unless the e-node is an ``END`` or ``REDUCE`` (:func:`uop_builder`
    may rewrite it: left unpriced), so those terms are ``term``'s nodes. Integer prices
    only: their sum does not depend on the order."""
    cost, choice, nodes = tc.cost, tc.choice, tc.comp.nodes
    chosen = [choice[c] for c in classes]
    if classes <= done.keys():
        _enter_price(term, [id(nodes[n].op) for n in chosen], [cost[n] for n in chosen],
                     [done[c] for c in classes], priced)


#: the ops :func:`extraction.uop_builder` may build as another node, by id
_REBUILT_IDS = frozenset(map(id, REBUILT_OPS))
#: ops the text format cannot write: an e-node of one is used only where its class
#: has no other finite term (a result must print; the rules make ``NOOP`` for an empty
#: loop or a dead store, and the class holds what it replaced: ``sink(noop)`` has
#: ``sink()`` beside it)
_NO_TEXT = frozenset(op for op in Ops if not has_text_form(op))
#: the same, by id (an Ops member's hash runs Python code; the members live as long
#: as the module)
_NO_TEXT_IDS = frozenset(map(id, _NO_TEXT))
#: the integer divisions (:data:`GroupOp.IntDiv`), by id likewise
_INT_DIV = frozenset(map(id, GroupOp.IntDiv))


def usable_keys(snap: Snapshot, enodes: Iterable[ENode], subsumed: bool = False) -> set[int]:
    """The keys (snapshot node indices) of the e-nodes of ``enodes`` the extraction
    may use: the ones not subsumed (with ``subsumed``: subsumed ones too) and of an op
    the text format can write (:data:`_NO_TEXT`), and every node of a class without a
    finite term made of those (a cancellation such as (x - y) + y -> x may subsume the
    only grounded node), to a fixed point.

    Grounding only grows with the nodes allowed, so the fixed point is reached
    incrementally: each round allows the nodes of the classes still ungrounded and
    carries the grounding on from where it stood."""
    nodes = snap.nodes
    enodes = enodes if isinstance(enodes, list) else list(enodes)
    no_text = _NO_TEXT_IDS
    batch = [en[0] for en in enodes if (subsumed or not nodes[en[0]].subsumed)
             and id(en[2]) not in no_text]
    if len(batch) == len(enodes):  # every e-node allowed: nothing to ground
        return set(batch)
    use: set[int] = set()
    ok: set[int] = set()
    waiting: defaultdict[int, list[int]] = defaultdict(list)
    missing: dict[int, int] = {}
    for i, _c, _op, _dt, _arg, kids, _cost, _raw in enodes:
        m = len(kids)
        if m == 2:
            a, b = kids
            if a == b:
                waiting[a].append(i)
                m = 1
            else:
                waiting[a].append(i)
                waiting[b].append(i)
        elif m:
            if m > 2:
                kids = set(kids)
                m = len(kids)
            for k in kids:
                waiting[k].append(i)
        missing[i] = m
    while batch:
        use.update(batch)
        stack = [i for i in batch if not missing[i]]
        while stack:
            c = nodes[stack.pop()].cls
            if c in ok:
                continue
            ok.add(c)
            for p in waiting.get(c, ()):
                left = missing[p] - 1
                missing[p] = left
                if not left and p in use:
                    stack.append(p)
        batch = [i for i in missing if i not in use and nodes[i].cls not in ok]
    return use
