"""Extractors: choose one e-node per e-class so that the chosen terms are cheapest.

* :func:`extract_tree` -- tree cost (a shared subterm is paid at every use),
  what egglog's own extractor does. Exact for tree cost: Knuth's
  generalization of Dijkstra over the e-graph (an e-node is priced once all
  its children's classes are final), so cycles are harmless.
* :func:`extract_dag` -- DAG cost (a shared subterm is paid once, and several
  roots share). It starts from the cheaper, under DAG cost, of the tree
  selection and extraction-gym's "faster greedy DAG" (a cost set per class),
  then improves it without ever raising the exact DAG cost:

  1. local search: swap one class's e-node when that lowers the exact DAG
     cost (classes no longer used are subtracted, newly used ones added;
     a swap that would close a cycle is refused), with incremental
     reference counts and heights;
  2. re-choice of the classes the terms do not use, by tree cost with the
     used classes free (so a later swap sees what they would really add);
  3. big moves: eliminate an expensive used class (its users and the classes
     above re-choose without it) or introduce an unused class an alternative
     points at (prepay it and re-choose the classes that could use it);
     the first move that lowers the exact DAG cost is kept, then 1-3 again.

  On random e-graphs of up to 11 classes it found the brute-force optimum in
  all of 600 cases (tree extraction: 30% of them suboptimal).

Both return an :class:`Extraction`: the selection ``{class_id: ENode}`` over
the classes the roots reach, its DAG cost, its tree cost, and
:meth:`Extraction.build` to rebuild terms through a callback.
Everything iterates in the view's sorted order: results are deterministic.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, filterfalse
from typing import Any, TypeVar

from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, drop_folded_ranges
from extraction.cost import CostModel, get_cost_model
from extraction.egraph_view import ClassId, EGraphView, ENode, _Compiled, _model_key

__all__ = ["Extraction", "ExtractionError", "TreeChoice", "extract_tree", "extract_tree_each",
           "extract_dag", "sharing_impossible", "no_cheaper_term",
           "build_terms",
           "uop_builder", "dag_cost", "tree_cost",
           "tree_choice", "knuth", "cheapest_first", "reachable_region", "rechoose", "closure",
           "integer_prices", "REBUILT_OPS"]

T = TypeVar("T")
INF = math.inf
_MOVE_CAP = 256  # a big move re-chooses at most this many used classes (else skipped)


class ExtractionError(ValueError):
    """No acyclic term exists for a root, or a selection cannot be rebuilt."""


@dataclass(frozen=True)
class Extraction:
    """The result of an extraction.

    ``selection`` maps every class reachable from ``roots`` to its chosen e-node;
    ``cost`` is the DAG cost of the chosen terms (each unique class paid once,
    over all roots together), ``tree_cost`` the sum over roots of their tree
    costs; ``method`` is ``"tree"`` or ``"dag"``; ``stats`` has figures of the run.
    """

    roots: tuple[ClassId, ...]
    selection: dict[ClassId, ENode]
    cost: float
    tree_cost: float
    method: str
    stats: dict[str, Any] = field(default_factory=dict, compare=False)

    def build(self, build: Callable[[ENode, tuple[T, ...]], T]) -> list[T]:
        """The terms of the roots, built bottom-up by ``build(enode, children_terms)``
        once per class (shared classes give the same object)."""
        return build_terms(self.selection, self.roots, build)

    def to_uops(self) -> list[UOp]:
        """The terms of the roots as hash-consed UOps (every selected e-node needs an op)."""
        return self.build(uop_builder)

    def __repr__(self) -> str:
        return (f"Extraction(method={self.method!r}, cost={self.cost}, "
                f"tree_cost={self.tree_cost}, roots={list(self.roots)!r}, "
                f"classes={len(self.selection)})")


def uop_builder(node: ENode, children: tuple[UOp, ...]) -> UOp:
    """Build a UOp from an e-node and its children's UOps (``UOp(op, dtype, children, arg)``)."""
    if node.op is None or node.dtype is None:
        raise ExtractionError(f"e-node {node.key!r} of class {node.eclass!r} is structural "
                              "(no op/dtype): give build() your own callback")
    u = UOp(node.op, node.dtype, children, node.arg)
    # a range class extracted as its constant: that loop ran once, and is gone
    return drop_folded_ranges(u) if u.op in REBUILT_OPS else u


#: the ops whose node :func:`uop_builder` may build as another node (a loop folded to a
#: constant is dropped), read once (an ``Ops.X`` read runs the enum's Python code)
REBUILT_OPS = (Ops.END, Ops.REDUCE)


def build_terms(selection: Mapping[ClassId, ENode], roots: Sequence[ClassId],
                build: Callable[[ENode, tuple[T, ...]], T], *,
                done: dict[ClassId, T] | None = None) -> list[T]:
    """Rebuild the terms of ``roots`` from ``selection`` (class -> e-node).

    Iterative (no recursion limit); each class is built once. ``done``: terms
    already built (class -> term) by earlier calls with a selection that agrees on
    every class they share (e.g. the tree extractions of one view); it is used and
    filled in. Raises ExtractionError for a class missing from the selection or a cycle.
    """
    if done is None:
        done = {}
    active: set[ClassId] = set()
    for r in roots:
        stack: list[tuple[ClassId, bool]] = [(r, False)]
        while stack:
            c, expanded = stack.pop()
            if expanded:
                n = selection[c]
                done[c] = build(n, tuple(done[k] for k in n.children))
                active.discard(c)
                continue
            if c in done:
                continue
            if c in active:
                raise ExtractionError(f"the selection has a cycle through class {c!r}")
            n = selection.get(c)
            if n is None:
                raise ExtractionError(f"class {c!r} has no selected e-node")
            active.add(c)
            stack.append((c, True))
            for k in reversed(n.children):
                if k not in done:
                    if k in active:
                        raise ExtractionError(f"the selection has a cycle through class {k!r}")
                    stack.append((k, False))
    return [done[r] for r in roots]


# ---- helpers on the compiled (integer) form -------------------------------------------

def _prepare(view: EGraphView, roots: Sequence[ClassId] | None, model: Any
             ) -> tuple[_Compiled, list[float], list[int], list[bool], CostModel]:
    if not isinstance(view, EGraphView):
        raise TypeError(f"expected an EGraphView, got {type(view).__name__}")
    model = get_cost_model(model)
    if roots is None:
        roots = view.roots
    if isinstance(roots, (str, bytes)) or not isinstance(roots, Sequence):
        roots = [roots]
    if not roots:
        raise ValueError("no roots given (and the view has no default roots)")
    comp = view.compiled()
    ridx = []
    for r in roots:
        if r not in comp.cidx:
            raise ExtractionError(f"root class {r!r} is not in the e-graph")
        ridx.append(comp.cidx[r])
    cost = view.node_costs(model)
    # classes any root can reach through any e-node: the only ones that matter
    relevant = [False] * len(comp.cids)
    stack = list(ridx)
    for r in ridx:
        relevant[r] = True
    kids = comp.kids
    while stack:
        for k in kids[stack.pop()]:
            if not relevant[k]:
                relevant[k] = True
                stack.append(k)
    return comp, cost, ridx, relevant, model


def tree_choice(comp: _Compiled, cost: list[float], relevant: list[bool]
                ) -> tuple[list[int], list[float]]:
    """Best tree-cost e-node per relevant class (Knuth's generalization of Dijkstra)."""
    choice, best, _order, _keys, _depth = _tree_pass(comp, cost, relevant)
    return choice, best


def _tree_pass(comp: _Compiled, cost: list[float], relevant: list[bool], content: bool = False
               ) -> tuple[list[int], list[float], list[int], list[tuple], list[int] | None]:
    """:func:`tree_choice`, and the classes in the order they became final; with
    ``content``, ties between equal costs break by content key (:func:`cheapest_first`),
    the fourth list holds each final class's key and the last its depth (None where the
    e-graph has too few classes for a key deeper than :data:`KEY_DEPTH`)."""
    nclasses = len(comp.cids)
    best = [INF] * nclasses
    choice = [-1] * nclasses
    leaves = comp.leaves
    # children not final yet, per e-node; only the e-nodes of relevant classes are pushed
    pending = comp.pending()[:]
    heap: list[tuple[float, int]] = []
    for c in compress(range(nclasses), relevant):
        lv = leaves[c]
        if lv:
            for n in lv:
                heap.append((cost[n], n))
    order: list[int] = []
    keys = [()] * nclasses
    # (a key is no deeper than the classes a chosen term passes through)
    depth = [0] * nclasses if content and nclasses > KEY_DEPTH else None
    cheapest_first(comp.nch, comp.ncls, comp.parents, cost, choice, best, relevant, heap,
                   pending, order=order,
                   content=(comp.content_labels(), keys, depth) if content else None)
    return choice, best, order, keys, depth


def _tree_cost(cost: list[float], best: list[float], n: int, ch: tuple[int, ...]) -> float:
    """E-node ``n``'s tree cost as :func:`cheapest_first` sums it (the same float)."""
    if len(ch) == 2:
        return cost[n] + (0 + best[ch[0]] + best[ch[1]])
    return cost[n] + sum(best[k] for k in ch)


def _bounds_width(u: UOp) -> float:
    return u.vmax - u.vmin


def tighter_ties(comp: _Compiled, cost: list[float], choice: list[int], best: list[float],
                 order: list[int], keys: list[tuple], depth: list[int] | None = None,
                 terms: dict[int, UOp] | None = None) -> None:
    """Among the e-nodes of an integer class whose tree cost ties its best, choose the
    one whose term has the tightest bounds (``vmax - vmin`` of the UOp it builds from its
    children's chosen terms), at equal width the e-node of the lower content key (its
    label and its children's ``keys``, as :func:`cheapest_first` orders ties); in place.

    A rewrite that loosens a result's bounds (a where-ladder for ``a % 10`` reads
    ``[-10, 19]``, the remainder ``[0, 9]``) is then not chosen over an equal-cost term
    with tighter bounds, which the lowering's narrowing to i32 and later rewrites read.
    Only e-nodes whose children became final before the class are candidates (``order``:
    the classes as they became final), so the choice stays acyclic and every cost stays
    what it was; ties between e-nodes of one op over the same child classes (the
    operand orders of a commutative op) are left as they are. Deterministic: the classes
    in their order, each e-node's term from its children's chosen terms. ``depth``: the
    keys' depths, as :func:`cheapest_first` keeps them. ``terms``: filled with the chosen
    terms it built (class -> the UOp :func:`uop_builder` builds of its final choice)."""
    rank = [-1] * len(comp.cids)
    for i, c in enumerate(order):
        rank[c] = i
    nodes, nch, class_nodes = comp.nodes, comp.nch, comp.class_nodes
    if terms is None:
        terms = {}

    def term(c: int) -> UOp:  # the chosen term of class c (its children's first)
        stack = [c]
        while stack:
            k = stack[-1]
            if k in terms:
                stack.pop()
                continue
            todo = [j for j in nch[choice[k]] if j not in terms]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            n = choice[k]
            terms[k] = uop_builder(nodes[n], tuple(terms[j] for j in nch[n]))
        return terms[c]

    for c in order:
        if len(class_nodes[c]) < 2:
            continue
        dt = nodes[choice[c]].dtype
        if dt is None or not (dt.is_int or dt.is_bool):
            continue
        r, b = rank[c], best[c]
        # (the cost first: most e-nodes cost more, and it is read without a generator)
        ties = [n for n in class_nodes[c]
                if _tree_cost(cost, best, n, nch[n]) == b and all(-1 < rank[k] < r for k in nch[n])]
        if len(ties) < 2 or len({(id(nodes[n].op), tuple(sorted(nch[n]))) for n in ties}) < 2:
            continue
        try:
            width = {n: _bounds_width(uop_builder(nodes[n], tuple(term(k) for k in nch[n])))
                     for n in ties}
        except (ExtractionError, ValueError):  # an e-node no UOp is built of: no tie-break
            continue
        labels = comp.content_labels()
        pick = min(ties, key=lambda n: (width[n], labels[n], tuple(keys[k] for k in nch[n]), n))
        if pick != choice[c]:
            choice[c] = pick
            keys[c] = (labels[pick], tuple(keys[k] for k in nch[pick]))
            if depth is not None:
                _bound_key(keys, depth, c, nch[pick])
            terms.pop(c, None)


def knuth(comp: _Compiled, cost: list[float], choice: list[int], best: list[float],
          ok: list[bool], heap: list[tuple[float, int]], pending: list[int],
          wanted: set[int]) -> None:
    """The pass of :func:`tree_choice` and :func:`rechoose` over a compiled view:
    :func:`cheapest_first` with its e-nodes' children, classes and parents."""
    cheapest_first(comp.nch, comp.ncls, comp.parents, cost, choice, best, ok, heap,
                   pending, wanted)


def cheapest_first(nch: Sequence[Sequence[int]], ncls: Sequence[int],
                   parents: Any, cost: Sequence[float], choice: list[int],
                   best: list[float], ok: Sequence[bool], heap: list[tuple[float, int]],
                   pending: list[int], wanted: set[int] | frozenset[int] = frozenset(),
                   order: list[int] | None = None,
                   content: tuple[Sequence[tuple], list[tuple], list[int] | None] | None = None
                   ) -> None:
    """The bottom-up tree-cost pass (Knuth's generalization of Dijkstra) that the
    extractors and the e-graph's pricing share: e-node ``n`` has the child classes
    ``nch[n]`` (repeats summed), the class ``ncls[n]`` and the price ``cost[n]``;
    ``parents[c]``: the e-nodes waiting for class ``c``. Pops (cost, e-node)
    cheapest first, ties to the lower e-node; the first e-node popped of a class not
    final (``choice[c] < 0``) is its choice and its cost (price + the children's
    costs, summed as ``price + ((0 + a) + b)``) its ``best``; an e-node of a class
    allowed by ``ok`` is pushed once its ``pending`` count of children not final
    drops to 0 (a count of -1, or one no child decrements: never). ``heap``: the
    starting (cost, e-node) items, each e-node at most once; ``wanted``: stop once
    these classes are final (empty: run to the end); ``order``: appended every class
    as it becomes final (children before parents); ``content``: ``(labels, keys,
    depth)``, per e-node its label (:meth:`_Compiled.content_labels`) and per class the
    content key filled in as it becomes final (its e-node's label and its children's
    keys) and, unless None, its depth (a key deeper than :data:`KEY_DEPTH` is cut:
    :func:`_bound_key`): e-nodes of equal cost then pop by content key, not by index,
    so the choice among equal-cost terms does not depend on how the e-graph numbered
    them.

    The queue holds the distinct costs in a heap and, per cost, its e-nodes in a
    heap: an e-node is pushed at most once, so the pairs are distinct and pop in the
    order a heap of the pairs gives; ``val`` keeps each pushed cost as computed."""
    need = len(wanted)
    get = best.__getitem__
    val: dict[int, float] = {}
    buckets: dict[float, list[int]] = {}
    labels, keys, depth = content if content is not None else (None, None, None)
    for v, n in heap:
        val[n] = v
        item: Any = n if labels is None else ((labels[n], ()), n)
        b = buckets.get(v)
        if b is None:
            buckets[v] = [item]
        else:
            b.append(item)
    costs = list(buckets)
    heapq.heapify(costs)
    for b in buckets.values():
        heapq.heapify(b)
    pop, push = heapq.heappop, heapq.heappush
    bget = buckets.get
    note = order.append if order is not None else None
    while costs:
        v = costs[0]
        b = buckets[v]
        n = pop(b)
        if not b:
            del buckets[v]
            pop(costs)
        if keys is not None:
            key, n = n
        c = ncls[n]
        if choice[c] >= 0:
            continue
        best[c] = val[n]
        choice[c] = n
        if keys is not None:
            keys[c] = key
            if depth is not None:
                _bound_key(keys, depth, c, nch[n])
        if note is not None:
            note(c)
        if need and c in wanted:
            need -= 1
            if not need:
                break
        for p in parents[c]:
            left = pending[p]
            if left == 1:  # c is its last child not final: the count is read no more
                pc = ncls[p]
                if ok[pc] and choice[pc] < 0:
                    ch = nch[p]
                    if len(ch) == 2:  # the value sum() gives: ((0 + a) + b)
                        a, b2 = ch
                        w = cost[p] + (0 + best[a] + best[b2])
                        item = p if keys is None else (
                            (labels[p], (keys[a], keys[b2])), p)  # type: ignore[index]
                    else:
                        w = cost[p] + sum(map(get, ch))
                        item = p if keys is None else (
                            (labels[p], tuple([keys[k] for k in ch])), p)  # type: ignore[index]
                    val[p] = w
                    b = bget(w)
                    if b is None:
                        buckets[w] = [item]
                        push(costs, w)
                    else:
                        push(b, item)
            elif left > 1:
                pending[p] = left - 1


#: the deepest content key kept whole: comparing two keys recurses once per level of
#: their terms, and a canonical sum of thousands of terms is a chain that deep
KEY_DEPTH = 200


def _bound_key(keys: list[tuple], depth: list[int], c: int, children: Sequence[int]) -> None:
    """Set class ``c``'s key depth from its children's; a key deeper than
    :data:`KEY_DEPTH` becomes its label and one child key holding a digest of its whole
    content (:func:`_digest`): two levels, still ordered by content alone."""
    d = 1 + max([depth[k] for k in children], default=0)
    if d > KEY_DEPTH:
        key = keys[c]
        keys[c], d = (key[0], ((("~", _digest(key), ()), ()),)), 2
    depth[c] = d


def _digest(key: tuple) -> str:
    """A digest of a content key ``(label, children's keys)``, read without recursion
    (shared children's keys once)."""
    memo: dict[int, bytes] = {}
    stack = [key]
    while stack:
        k = stack[-1]
        if id(k) in memo:
            stack.pop()
            continue
        todo = [ch for ch in k[1] if id(ch) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        h = hashlib.blake2b(repr(k[0]).encode(), digest_size=16)
        for ch in k[1]:
            h.update(memo[id(ch)])
        memo[id(k)] = h.digest()
    return memo[id(key)].hex()


def _tight_tree(comp: _Compiled, cost: list[float], relevant: list[bool],
                terms: dict[int, UOp] | None = None) -> tuple[list[int], list[float]]:
    """:func:`tree_choice` with its ties broken by content key, then toward tighter
    bounds (:func:`tighter_ties`, which fills ``terms``): the choice among equal-cost
    terms depends on the terms, not on the e-graph's numbering (what else it holds, the
    order it was built)."""
    # a class of one e-node has no tie to break, and a class's best does not depend on
    # the order its e-node's children became final: without a class of two e-nodes the
    # plain pass gives the same choice
    if max(map(len, comp.class_nodes), default=0) < 2:
        choice, best, _order, _keys, _depth = _tree_pass(comp, cost, relevant)
        return choice, best
    choice, best, order, keys, depth = _tree_pass(comp, cost, relevant, content=True)
    tighter_ties(comp, cost, choice, best, order, keys, depth, terms)
    return choice, best


def _tree_of(comp: _Compiled, cost: list[float], relevant: list[bool], model: Any
             ) -> tuple[list[int], list[float]]:
    """:func:`tree_choice` with ties to tighter bounds (:func:`_tight_tree`), from the
    view's cached choice over every class when
    ``cost`` is the view's cached cost list of ``model``: a set of classes closed
    under children (as ``relevant`` is) finalizes its e-nodes in the same order
    with or without the other classes, so the choices agree on it. The terms the
    tie-break built for the cached choice are kept (``comp.tie_terms``)."""
    key = _model_key(model)
    if key is None or comp.cost_cache.get(key) is not cost:
        return _tight_tree(comp, cost, relevant)
    hit = comp.tree_cache.get(key)
    if hit is None:
        built = comp.tie_terms[key] = {}
        hit = comp.tree_cache[key] = _tight_tree(comp, cost, [True] * len(comp.cids), built)
    choice, best = hit
    if all(relevant):
        return list(choice), list(best)
    return ([ch if rel else -1 for ch, rel in zip(choice, relevant, strict=True)],
            [b if rel else INF for b, rel in zip(best, relevant, strict=True)])


def reachable_region(comp: _Compiled, starts: set[int], free: set[int], banned: int) -> list[int]:
    """Classes reachable from ``starts`` through any e-node without entering
    ``free`` or ``banned`` (the classes a re-choice may touch), sorted."""
    n = len(comp.cids)
    mark = [0] * n  # 1: free or banned (not entered), 2: in the region
    for f in free:
        mark[f] = 1
    if banned >= 0:
        mark[banned] = 1
    for c in starts:  # a start is in even when free or banned
        mark[c] = 2
    stack = list(starts)
    push = stack.append
    kids = comp.kids
    while stack:
        for k in kids[stack.pop()]:
            if not mark[k]:
                mark[k] = 2
                push(k)
    return list(compress(range(n), map((2).__eq__, mark)))  # the c with mark[c] == 2


def rechoose(comp: _Compiled, cost: list[float], sel: list[int], free: set[int],
             region: list[int], banned: int = -1, until: Iterable[int] = ()) -> list[int]:
    """A new selection: classes in ``free`` (closed under ``sel``) keep their
    e-node and cost nothing to their users; the classes of ``region`` (whose
    e-nodes point only into ``region``, ``free`` or ``banned``) are re-chosen by
    tree cost over that (Knuth, as in :func:`tree_choice`); ``banned`` (a class
    or -1) may not be used and gets -1, as does a region class left without a
    finite choice. Acyclic: new choices point only at free classes (which never
    reach a region class) or at region classes finalized before them.

    ``until``: region classes whose terms are all that is wanted; the pass stops
    once they are final (so is every class their new choices reach: a choice is
    made only after its children's) and the region classes not reached by then
    keep -1."""
    new = list(sel)
    # val: the best tree cost of the classes final so far (free ones are 0); a class
    # popped is a region class, final once new[c] >= 0 (every region class starts -1)
    val = [0.0] * len(new)
    get = val.__getitem__
    inreg = [False] * len(new)
    nch, ncls, parents, leaves = comp.nch, comp.ncls, comp.parents, comp.leaves
    # children not final yet, per e-node; only the e-nodes of region classes are pushed
    pending = comp.pending()[:]
    heap: list[tuple[float, int]] = []
    for c in region:
        new[c] = -1
        inreg[c] = True
        lv = leaves[c]
        if lv:
            for n in lv:
                heap.append((cost[n], n))
    if banned >= 0:
        for p in parents[banned]:
            pending[p] = -1  # never ready
    for f in free:  # final from the start
        for p in parents[f]:
            left = pending[p]
            if left <= 0 or not inreg[ncls[p]]:
                continue
            left -= 1
            pending[p] = left
            if not left:
                heap.append((cost[p] + sum(map(get, nch[p])), p))
    knuth(comp, cost, new, val, inreg, heap, pending, set(until))
    if banned >= 0:
        new[banned] = -1
    return new


def _greedy_dag_choice(comp: _Compiled, cost: list[float], relevant: list[bool],
                       max_pops: int, max_copied: int) -> tuple[list[int], int]:
    """extraction-gym's faster greedy DAG: per class the cheapest cost set
    (class -> cost of its chosen node) over its e-nodes, cost sets of children
    merged so shared classes count once. Stops after ``max_pops`` queue pops or
    ``max_copied`` cost-set entries copied (deep DAGs make the sets large); a
    class left without a choice gets -1. Returns choices and the number of pops."""
    nclasses = len(comp.cids)
    sets: list[dict[int, float] | None] = [None] * nclasses
    totals = [INF] * nclasses
    choice = [-1] * nclasses
    nchd, ncls, parents, selfloop = comp.nchd, comp.ncls, comp.parents, comp.selfloop
    heap: list[tuple[float, int]] = []
    queued: dict[int, float] = {}
    for c in compress(range(nclasses), relevant):
        for n in comp.leaves[c]:
            heap.append((cost[n], n))
            queued[n] = cost[n]
    heapq.heapify(heap)
    pop, push, qget = heapq.heappop, heapq.heappush, queued.get
    pops = 0
    copied = 0
    while heap and pops < max_pops and copied < max_copied:
        key, n = pop(heap)
        if qget(n) != key:
            continue  # a stale duplicate
        del queued[n]
        pops += 1
        c = ncls[n]
        prev = totals[c]
        ch = nchd[n]
        if not ch:
            s: dict[int, float] = {c: cost[n]}
            tot = cost[n]
        elif len(ch) == 1:  # the general case below, for one child set
            k = ch[0]
            sk = sets[k]
            if sk is None or cost[n] + (totals[k] if totals[k] > 0.0 else 0.0) >= prev:
                continue
            s = dict(sk)
            copied += len(s)
            if c in s:
                continue
            tot = totals[k]
            s[c] = cost[n]
            tot += cost[n]
        else:
            child_sets = []
            lb = 0.0
            missing = False
            for k in ch:
                sk = sets[k]
                if sk is None:
                    missing = True
                    break
                child_sets.append(sk)
                if totals[k] > lb:
                    lb = totals[k]
            if missing or cost[n] + lb >= prev:
                continue
            big = 0
            for i in range(1, len(child_sets)):
                if len(child_sets[i]) > len(child_sets[big]):
                    big = i
            s = dict(child_sets[big])
            small = sum(map(len, child_sets)) - len(s)
            copied += len(s) + small
            if small <= 16:  # add what the small sets bring, entry by entry
                tot = totals[ch[big]]  # == the sum of that set
                for i, sk in enumerate(child_sets):
                    if i != big:
                        for key, val in sk.items():
                            old = s.get(key)
                            if old is None:
                                tot += val
                            elif old != val:
                                tot += val - old
                        s.update(sk)
            else:
                for i, sk in enumerate(child_sets):
                    if i != big:
                        s.update(sk)
                tot = sum(s.values())
            if c in s:
                continue
            s[c] = cost[n]
            tot += cost[n]
        if tot < prev:
            sets[c] = s
            totals[c] = tot
            choice[c] = n
            for p in parents[c]:
                if selfloop[p] or not relevant[ncls[p]]:
                    continue
                pk = cost[p] + tot
                old = qget(p)
                if old is None or pk < old:
                    queued[p] = pk
                    push(heap, (pk, p))
    return choice, pops


def _walk(comp: _Compiled, sel: list[int], ridx: list[int]) -> list[int] | None:
    """Classes reachable from the roots under ``sel``, children first; None on a cycle
    or a class without a selection."""
    nchd = comp.nchd
    state = [0] * len(sel)  # 1 = on the stack, 2 = done
    order: list[int] = []
    for r in ridx:
        if state[r]:
            continue
        if sel[r] < 0:
            return None
        state[r] = 1
        stack = [(r, iter(nchd[sel[r]]))]
        while stack:
            c, it = stack[-1]
            for k in it:
                st = state[k]
                if not st:
                    if sel[k] < 0:
                        return None
                    state[k] = 1
                    stack.append((k, iter(nchd[sel[k]])))
                    break
                if st == 1:
                    return None
            else:
                stack.pop()
                state[c] = 2
                order.append(c)
    return order


def _dag_total(comp: _Compiled, cost: list[float], sel: list[int], order: list[int]) -> float:
    return math.fsum([cost[sel[c]] for c in order])


def _tree_total(comp: _Compiled, cost: list[float], sel: list[int], order: list[int],
                ridx: list[int]) -> float:
    tc: dict[int, float] = {}
    nch = comp.nch
    for c in order:  # children first
        n = sel[c]
        tc[c] = cost[n] + sum(tc[k] for k in nch[n])
    return sum(tc[r] for r in ridx)


class _State:
    """The selected DAG reachable from the roots, kept up to date across swaps.

    ``refcnt[k]``: edges into ``k`` from present classes' selected e-nodes (with
    multiplicity) plus root occurrences; a class is present iff it is > 0.
    ``par[k]``: present classes whose selected e-node has ``k`` as a child.
    ``h[k]``: a height with ``h[p] > h[k]`` on every selected edge ``p -> k``
    (so a class can only reach classes of lower height); ``total``: DAG cost.
    """

    __slots__ = ("order", "h", "refcnt", "par", "total")

    def __init__(self, comp: _Compiled, cost: list[float], sel: list[int], ridx: list[int],
                 order: list[int]):
        self.order = order
        refcnt: dict[int, int] = {}
        par: dict[int, set[int]] = {}
        h: dict[int, int] = {}
        nch, nchd = comp.nch, comp.nchd
        for c in order:  # children first
            n = sel[c]
            hc = 0
            for k in nch[n]:
                refcnt[k] = refcnt.get(k, 0) + 1
            for k in nchd[n]:
                par.setdefault(k, set()).add(c)
                if h[k] >= hc:
                    hc = h[k] + 1
            h[c] = hc
        for r in ridx:
            refcnt[r] = refcnt.get(r, 0) + 1
        self.refcnt = refcnt
        self.par = par
        self.h = h
        self.total = _dag_total(comp, cost, sel, order)

    def swap(self, comp: _Compiled, cost: list[float], sel: list[int], c: int, n2: int) -> int:
        """Select ``n2`` for present class ``c`` (acyclic: checked by the caller);
        update every field. Returns the classes touched (work)."""
        nch, nchd = comp.nch, comp.nchd
        refcnt, par, h = self.refcnt, self.par, self.h
        cur = sel[c]
        work = 0
        # 1. n2's edges: classes reached for the first time become present
        new: list[int] = []
        stack = list(nch[n2])
        while stack:
            k = stack.pop()
            work += 1
            r = refcnt.get(k, 0)
            refcnt[k] = r + 1
            if r == 0:
                new.append(k)
                n = sel[k]
                for j in nchd[n]:
                    par.setdefault(j, set()).add(k)
                stack.extend(nch[n])
        # heights of the new classes, children first (their region is acyclic)
        pending = set(new)
        for k0 in new:
            if k0 not in pending:
                continue
            st_ = [(k0, iter(nchd[sel[k0]]))]
            while st_:
                k, it = st_[-1]
                for j in it:
                    if j in pending and j not in h and j != k:
                        st_.append((j, iter(nchd[sel[j]])))
                        break
                else:
                    st_.pop()
                    pending.discard(k)
                    h[k] = 1 + max((h[j] for j in nchd[sel[k]]), default=-1)
        added = sum(cost[sel[k]] for k in new)
        # 2. cur's edges: classes no longer reached leave
        removed = 0.0
        stack = list(nch[cur])
        while stack:
            k = stack.pop()
            work += 1
            r = refcnt[k] - 1
            if r:
                refcnt[k] = r
                continue
            del refcnt[k]
            n = sel[k]
            removed += cost[n]
            for j in nchd[n]:
                par[j].discard(k)
            h.pop(k, None)
            stack.extend(nch[n])
        for k in nchd[cur]:
            if k in par:
                par[k].discard(c)
        for k in nchd[n2]:
            par.setdefault(k, set()).add(c)
        sel[c] = n2
        self.total += cost[n2] - cost[cur] + added - removed
        # 3. restore h[p] > h[k] on every edge, raising heights upward from c
        need = 1 + max((h[k] for k in nchd[n2]), default=-1)
        if need > h[c]:
            h[c] = need
            stack = [c]
            while stack:
                k = stack.pop()
                work += 1
                hk = h[k]
                for p in par.get(k, ()):
                    if h[p] <= hk:
                        h[p] = hk + 1
                        stack.append(p)
        return work + len(new)


def _local_search(comp: _Compiled, cost: list[float], sel: list[int], ridx: list[int],
                  order: list[int], max_passes: int, budget: int
                  ) -> tuple[int, int, int, list[int]]:
    """Hill-climb on the exact DAG cost, one class's e-node swap at a time.

    For class ``c`` currently on ``cur``: removing ``cur``'s edges frees the
    classes ``D`` only it kept alive (weight ``W``); a candidate ``n2`` then
    costs ``cost[n2] - cost[cur] - W`` plus every class its children reach that
    is not still present. A candidate whose children reach ``c`` (directly, or
    through a present class above ``c``, or through unselected classes) would
    close a cycle and is skipped. The best improving candidate of a class is
    applied at once (incremental state update). Mutates ``sel``; returns
    (passes, swaps, work, the classes the roots reach under ``sel``, children first).
    """
    nch, nchd, class_nodes = comp.nch, comp.nchd, comp.class_nodes
    selfloop = comp.selfloop
    start = list(sel)
    st = _State(comp, cost, sel, ridx, order)
    refcnt, h = st.refcnt, st.h
    work = len(order)
    swaps = 0
    passes = 0
    snapshot = order
    dirty = False  # sel changed since snapshot was walked
    for passes in range(1, max_passes + 1):  # noqa: B007 - passes is reported
        improved = False
        for c in reversed(snapshot):  # parents first
            if work > budget:
                break
            if refcnt.get(c, 0) == 0:
                continue  # no longer reachable after an earlier swap
            cur = sel[c]
            cands = [n for n in class_nodes[c]
                     if n != cur and not selfloop[n] and all(sel[k] >= 0 for k in nchd[n])]
            if not cands:
                continue
            # D: the classes only cur's edges keep alive, and their weight W
            dec: dict[int, int] = {}
            dset: set[int] = set()
            w = 0.0
            stack = list(nch[cur])
            while stack:
                k = stack.pop()
                d = dec.get(k, 0) + 1
                dec[k] = d
                if d == refcnt[k]:
                    dset.add(k)
                    w += cost[sel[k]]
                    stack.extend(nch[sel[k]])
            work += len(dec) + 1
            eps = 1e-9 * max(1.0, abs(st.total))
            best_delta = -eps
            best_n = -1
            above: dict[int, bool] = {}  # present class -> reaches c?
            hc = h[c]
            for n2 in cands:
                base = cost[n2] - cost[cur] - w
                if base >= best_delta:
                    continue
                added = 0.0
                ok = True
                seen: set[int] = set()
                stack = list(nchd[n2])
                while stack:
                    k = stack.pop()
                    if k in seen:
                        continue
                    seen.add(k)
                    if k == c:
                        ok = False
                        break
                    if refcnt.get(k, 0) > 0 and k not in dset:  # still present
                        if h[k] > hc:
                            hit = above.get(k)
                            if hit is None:
                                hit, w_ = _reaches(nchd, sel, h, k, c, above)
                                work += w_
                            if hit:
                                ok = False
                                break
                        continue
                    added += cost[sel[k]]
                    if base + added >= best_delta:
                        ok = False
                        break
                    stack.extend(nchd[sel[k]])
                work += len(seen) + 1
                if ok:
                    best_delta = base + added
                    best_n = n2
            if best_n >= 0:
                work += st.swap(comp, cost, sel, c, best_n)
                swaps += 1
                improved = True
        if not improved or work > budget:
            dirty = improved
            break
        snapshot = _walk(comp, sel, ridx)
        if snapshot is None:
            dirty = True
            break
        work += len(snapshot)
    final = _walk(comp, sel, ridx) if dirty else snapshot
    if final is None:  # cannot happen; keep the selection sound regardless
        sel[:] = start
        swaps = 0
        final = order
    return passes, swaps, work, final


def _reaches(nchd: list[tuple[int, ...]], sel: list[int], h: dict[int, int], k: int,
             c: int, memo: dict[int, bool]) -> tuple[bool, int]:
    """Does present class ``k`` reach class ``c`` in the selected DAG? Only
    classes higher than ``c`` can; ``memo`` keeps answers across queries for
    the same ``c``. Returns (answer, classes visited)."""
    hc = h[c]
    stack = [k]
    seen = {k}
    while stack:
        j = stack.pop()
        for ch in nchd[sel[j]]:
            if ch == c or memo.get(ch):
                memo[k] = True
                return True, len(seen)
            if ch not in seen and h[ch] > hc and ch not in memo:
                seen.add(ch)
                stack.append(ch)
    for j in seen:
        memo[j] = False
    return False, len(seen)


def _ancestors(par: dict[int, list[int]], starts: Iterable[int]) -> set[int]:
    """Classes of the selected DAG above any of ``starts`` (``starts`` excluded
    unless one is above another)."""
    out: set[int] = set()
    stack = list(starts)
    while stack:
        k = stack.pop()
        for p in par.get(k, ()):
            if p not in out:
                out.add(p)
                stack.append(p)
    return out


def closure(comp: _Compiled, sel: list[int], starts: list[int]) -> set[int]:
    """Classes reachable from ``starts`` under ``sel`` (starts included; none: empty)."""
    out = set(starts)
    stack = list(starts)
    nchd = comp.nchd
    while stack:
        c = stack.pop()
        for k in nchd[sel[c]]:
            if k not in out:
                out.add(k)
                stack.append(k)
    return out


def _egraph_ancestors(comp: _Compiled, relevant: list[bool], k: int) -> set[int]:
    """Relevant classes with some e-node path down to class ``k`` (``k`` excluded)."""
    seen = [False] * len(relevant)
    seen[k] = True
    out: list[int] = []
    stack = [k]
    ncls, parents = comp.ncls, comp.parents
    while stack:
        for p in parents[stack.pop()]:
            pc = ncls[p]
            if relevant[pc] and not seen[pc]:
                seen[pc] = True
                out.append(pc)
                stack.append(pc)
    return set(out)


def _moves(comp: _Compiled, cost: list[float], relevant: list[bool], sel: list[int],
           ridx: list[int], st: _State) -> list[tuple[str, int]]:
    """Candidate big moves, most promising first: eliminate an expensive class
    the terms use (its users re-choose), or introduce a class an unused
    alternative points at (prepay it and re-choose the classes that could use it).
    Only classes whose users have an alternative e-node are worth eliminating."""
    present = st.refcnt
    roots = set(ridx)
    flexible = {c for c in st.order
                if sum(1 for n in comp.class_nodes[c] if not comp.selfloop[n]) > 1}
    elim = sorted((k for k in st.order if k not in roots and cost[sel[k]] > 0
                   and any(p in flexible for p in st.par.get(k, ()))),
                  key=lambda k: (-cost[sel[k]], k))
    score: dict[int, int] = {}
    for c in sorted(flexible):
        cur = sel[c]
        for n in comp.class_nodes[c]:
            if n == cur:
                continue
            for j in comp.nchd[n]:
                if j not in present and relevant[j] and sel[j] >= 0:
                    score[j] = score.get(j, 0) + 1
    intro = sorted(score, key=lambda j: (-score[j], j))
    out: list[tuple[str, int]] = []
    for i in range(max(len(elim), len(intro))):
        if i < len(elim):
            out.append(("elim", elim[i]))
        if i < len(intro):
            out.append(("intro", intro[i]))
    return out


def _cheapest(comp: _Compiled, cost: list[float], ridx: list[int], total: float) -> bool:
    """Whether no term of the one root ``ridx`` names costs less than ``total`` as a
    DAG: integer prices, and no selection below it (:func:`_cheaper_selection`; its
    budget spent: False). A selection of that cost is then one no move of
    :func:`_improve` can lower."""
    if len(ridx) != 1 or not integer_prices(cost):
        return False
    r = ridx[0]
    keep = _cheap_enough(comp, cost, r, total)
    return _cheaper_selection(comp, cost, keep, r, total) is False


def _improve(comp: _Compiled, cost: list[float], relevant: list[bool], sel: list[int],
             ridx: list[int], max_passes: int, max_rounds: int, max_moves: int,
             work_budget: int) -> dict[str, int]:
    """Lower the DAG cost of ``sel`` (mutated in place) without ever raising it.

    Each round: single-swap local search; re-choose the unused classes with the
    used ones free (then search again); then try up to ``max_moves`` big moves
    (eliminate or introduce one class, re-choosing the classes around it by
    tree cost with the rest free), accepting the first that lowers the exact
    DAG cost. ``work_budget`` bounds the visited classes/e-nodes overall."""
    rel_classes = list(compress(range(len(comp.cids)), relevant))
    stats = {"passes": 0, "swaps": 0, "moves": 0, "moves_tried": 0, "rounds": 0, "work": 0}

    def search() -> list[int]:
        order = _walk(comp, sel, ridx)
        assert order is not None
        p, s_, w, order = _local_search(comp, cost, sel, ridx, order, max_passes,
                                        work_budget - stats["work"])
        stats["passes"] += p
        stats["swaps"] += s_
        stats["work"] += w
        return order

    def refresh(order: list[int]) -> None:
        """Re-choose the unused classes; ``order``: the classes ``sel`` reaches."""
        present = set(order)
        region = list(filterfalse(present.__contains__, rel_classes))
        sel[:] = rechoose(comp, cost, sel, present, region)
        stats["work"] += len(region)

    for _ in range(max_rounds):
        stats["rounds"] += 1
        refresh(search())
        order = search()
        if max_moves == 0:  # nothing to try (the slice below would be empty)
            break
        st = _State(comp, cost, sel, ridx, order)
        if _cheapest(comp, cost, ridx, st.total):
            break  # no move can lower it
        eps = 1e-9 * max(1.0, abs(st.total))
        moved = False
        for kind, k in _moves(comp, cost, relevant, sel, ridx, st)[:max_moves]:
            if stats["work"] >= work_budget:
                break
            stats["moves_tried"] += 1
            if kind == "elim":
                nonfree = _ancestors(st.par, [k]) | {k}
                banned, extra = k, []
            else:
                ups = _egraph_ancestors(comp, relevant, k)
                stats["work"] += len(ups)
                users = [u for u in order if u in ups]
                nonfree = set(users) | _ancestors(st.par, users)
                banned, extra = -1, [k]
            if len(nonfree) > _MOVE_CAP:
                continue  # not a local move: a re-extraction of most of the terms
            # free: what the unchanged roots keep alive (plus k's terms for an
            # introduction); used classes only the re-chosen ones keep alive
            # are re-chosen too (they may become unused)
            free = closure(comp, sel, [r for r in ridx if r not in nonfree] + extra)
            region = reachable_region(comp, {c for c in order if c not in free and c != banned},
                                      free, banned)
            stats["work"] += len(region) + len(nonfree)
            # only the terms of the roots count: a move that is kept is followed by a
            # re-choice of every class they do not use
            cand = rechoose(comp, cost, sel, free, region, banned,
                            until=[r for r in ridx if r not in free])
            cord = _walk(comp, cand, ridx)
            if cord is None:
                continue
            if _dag_total(comp, cost, cand, cord) < st.total - eps:
                sel[:] = cand
                stats["moves"] += 1
                refresh(cord)
                moved = True
                break
        if not moved or stats["work"] >= work_budget:
            break
    return stats


def _unextractable(comp: _Compiled, ridx: list[int], choice: list[int]) -> ExtractionError:
    bad = [comp.cids[r] for r in ridx if choice[r] < 0]
    empty = [comp.cids[c] for c, ns in enumerate(comp.class_nodes) if not ns][:5]
    hint = f"; classes without e-nodes include {empty!r}" if empty else ""
    return ExtractionError(f"no finite acyclic term for root class(es) {bad!r}{hint}")


def _result(comp: _Compiled, cost: list[float], sel: list[int], ridx: list[int],
            order: list[int], method: str, stats: dict[str, Any]) -> Extraction:
    selection = {comp.cids[c]: comp.nodes[sel[c]] for c in order}
    return Extraction(tuple(comp.cids[r] for r in ridx), selection,
                      _dag_total(comp, cost, sel, order),
                      _tree_total(comp, cost, sel, order, ridx), method, stats)


# ---- public extractors -----------------------------------------------------------------

def extract_tree(view: EGraphView, roots: Sequence[ClassId] | ClassId | None = None,
                 model: CostModel | str | None = None) -> Extraction:
    """The minimum-tree-cost e-node of every class the roots reach (egglog's notion).

    ``roots``: class ids (None = ``view.roots``); ``model``: a CostModel or a
    name for :func:`extraction.get_cost_model` (None = the default CpuCost).
    Raises ExtractionError when a root has no finite acyclic term.
    """
    comp, cost, ridx, relevant, model = _prepare(view, roots, model)
    choice, _best = _tree_of(comp, cost, relevant, model)
    if any(choice[r] < 0 for r in ridx):
        raise _unextractable(comp, ridx, choice)
    order = _walk(comp, choice, ridx)
    assert order is not None  # a tree choice is acyclic by construction
    return _result(comp, cost, choice, ridx, order, "tree",
                   {"enodes": len(comp.nodes), "classes": len(comp.cids)})


class TreeChoice:
    """One tree pass over a view, read per root: what :func:`extract_tree_each` is
    made of, for a caller that needs only some of each root's :class:`Extraction`
    (its costs, its e-nodes, its term) without building the selection dicts.

    ``comp``/``cost``: the view's compiled arrays and e-node costs; ``ridx``: the
    class index of each root; ``choice``/``best``: the chosen e-node (-1: none) and
    the best tree cost of every class; ``built``: the chosen terms the tie-break
    built (class index -> UOp, as :func:`uop_builder` builds them: a ``done`` for
    :meth:`terms` with that builder).
    """

    __slots__ = ("comp", "cost", "ridx", "choice", "best", "model", "built")

    def __init__(self, view: EGraphView, roots: Sequence[ClassId],
                 model: CostModel | str | None = None):
        comp, cost, ridx, relevant, model = _prepare(view, roots, model)
        choice, best = _tree_of(comp, cost, relevant, model)
        if any(choice[r] < 0 for r in ridx):
            raise _unextractable(comp, ridx, choice)
        self.comp, self.cost, self.ridx, self.model = comp, cost, ridx, model
        self.choice, self.best = choice, best
        key = _model_key(model)
        cached = key is not None and comp.cost_cache.get(key) is cost
        self.built: dict[int, UOp] = comp.tie_terms.get(key, {}) if cached else {}

    def __repr__(self) -> str:
        return f"<TreeChoice of {len(self.ridx)} roots over {len(self.comp.cids)} classes>"

    def order(self, i: int) -> list[int]:
        """The classes root ``i`` (a position in the roots) reaches, children first."""
        order = _walk(self.comp, self.choice, [self.ridx[i]])
        assert order is not None  # a tree choice is acyclic by construction
        return order

    def reached(self, i: int) -> set[int]:
        """The classes root ``i`` reaches: :meth:`order` (i) as a set, found without
        ordering them."""
        choice, nchd = self.choice, self.comp.nchd
        r = self.ridx[i]
        seen = {r}
        stack = [r]
        add, push = seen.add, stack.append
        while stack:
            for k in nchd[choice[stack.pop()]]:
                if k not in seen:
                    add(k)
                    push(k)
        return seen

    def costs(self, i: int, classes: Iterable[int]) -> tuple[float, float]:
        """(DAG cost, tree cost) of root ``i``'s term, the values :func:`extract_tree`
        reports; ``classes``: the classes it reaches (:meth:`reached` or :meth:`order`;
        fsum is exact, so their order does not matter). The tree cost is the pass's
        own: a class's best is its chosen e-node's cost plus its children's bests."""
        cost, choice = self.cost, self.choice
        return math.fsum([cost[choice[c]] for c in classes]), self.best[self.ridx[i]]

    def extraction(self, i: int, order: list[int] | None = None) -> Extraction:
        """Root ``i``'s :class:`Extraction`, as :func:`extract_tree` gives it."""
        comp = self.comp
        return _result(comp, self.cost, self.choice, [self.ridx[i]],
                       self.order(i) if order is None else order, "tree",
                       {"enodes": len(comp.nodes), "classes": len(comp.cids)})

    def terms(self, idx: Sequence[int], build: Callable[[ENode, tuple[T, ...]], T],
              done: dict[int, T]) -> list[T]:
        """The terms of the roots at positions ``idx``, as :func:`build_terms` builds
        them from their selections; ``done`` (class index -> term) is used and filled,
        so a class shared by several roots is built once."""
        comp, choice = self.comp, self.choice
        nodes, nch = comp.nodes, comp.nch
        for i in idx:
            r = self.ridx[i]
            if r in done:
                continue
            # depth first, children left to right, each class built once its children
            # are (the order build_terms builds them in: the same objects made)
            stack: list[tuple[int, Iterator[int]]] = [(r, iter(nch[choice[r]]))]
            while stack:
                c, it = stack[-1]
                for k in it:
                    if k not in done:
                        stack.append((k, iter(nch[choice[k]])))
                        break
                else:
                    stack.pop()
                    n = choice[c]
                    done[c] = build(nodes[n], tuple([done[k] for k in nch[n]]))
        return [done[self.ridx[i]] for i in idx]


def extract_tree_each(view: EGraphView, roots: Sequence[ClassId],
                      model: CostModel | str | None = None) -> list[Extraction]:
    """:func:`extract_tree` of every root on its own (``[extract_tree(view, [r], model)
    for r in roots]``), sharing one tree pass over the whole view: a class's best tree
    does not depend on which root reaches it, and the view's canonical order breaks
    ties the same way as in a view of only the classes one root reaches.

    Raises ExtractionError when a root has no finite acyclic term.
    """
    roots = list(roots)
    if not roots:
        return []
    tc = TreeChoice(view, roots, model)
    return [tc.extraction(i) for i in range(len(roots))]


def extract_dag(view: EGraphView, roots: Sequence[ClassId] | ClassId | None = None,
                model: CostModel | str | None = None, *, max_passes: int = 10,
                max_rounds: int = 4, max_moves: int = 16, work_budget: int = 400_000
                ) -> Extraction:
    """A selection of low DAG cost (shared classes paid once, over all roots).

    Starts from the cheaper of the greedy-DAG (cost sets) and tree selections,
    then improves it in rounds: single-swap local search (at most
    ``max_passes`` sweeps), re-choice of the unused classes with the used ones
    free, and up to ``max_moves`` big moves (eliminate or introduce one class).
    ``work_budget`` bounds the classes/e-nodes visited. All limits are
    deterministic (no clock). Never costlier under DAG cost than
    :func:`extract_tree`'s selection. ``stats``: ``tree_start`` and
    ``greedy_start`` (DAG costs of the starting points), ``start``, ``passes``,
    ``swaps``, ``moves``, ``moves_tried``, ``rounds``, ``work``.
    """
    comp, cost, ridx, relevant, model = _prepare(view, roots, model)
    tchoice, _best = _tree_of(comp, cost, relevant, model)
    if any(tchoice[r] < 0 for r in ridx):
        raise _unextractable(comp, ridx, tchoice)
    torder = _walk(comp, tchoice, ridx)
    assert torder is not None
    t_total = _dag_total(comp, cost, tchoice, torder)
    gchoice, pops = _greedy_dag_choice(comp, cost, relevant, max_pops=50 * len(comp.nodes) + 1000,
                                       max_copied=5 * work_budget)
    gorder = _walk(comp, gchoice, ridx)
    g_total = _dag_total(comp, cost, gchoice, gorder) if gorder is not None else INF
    sel = list(tchoice)  # unreached classes keep their (acyclic) tree choice
    start = "tree"
    if gorder is not None and g_total < t_total:  # a tie keeps the tree's (tighter_ties)
        for c in gorder:  # the greedy region is closed under its choices: still acyclic
            sel[c] = gchoice[c]
        start = "greedy"
    stats = {"enodes": len(comp.nodes), "classes": len(comp.cids), "tree_start": t_total,
             "greedy_start": g_total, "start": start, "greedy_pops": pops}
    stats.update(_improve(comp, cost, relevant, sel, ridx, max_passes, max_rounds, max_moves,
                          work_budget))
    final = _walk(comp, sel, ridx)
    assert final is not None
    res = _result(comp, cost, sel, ridx, final, "dag", stats)
    if res.cost > t_total:  # cannot happen (only improving swaps); keep the promise anyway
        return _result(comp, cost, tchoice, ridx, torder, "dag", stats)
    return res


def sharing_impossible(view: EGraphView, model: CostModel | str | None = None,
                       root: ClassId | None = None, below: float = INF) -> bool:
    """Whether no selection of ``view``'s e-nodes can cost less as a DAG than the best
    tree: True when every class is a child of e-nodes of at most one class, each naming
    it once, and every price under ``model`` is an integer (their sums, below 2**53,
    exact). An acyclic selection then uses each class at most once (by induction from
    the roots: a class is used as often as the one class whose e-nodes name it), so
    its DAG cost is its tree cost, never below the tree choice's: a DAG search (which
    keeps the tree choice on a tie) would return the tree choice's cost.

    With ``root`` and ``below`` (the DAG cost to beat: the tree choice's), only the
    e-nodes a term of ``root`` cheaper than ``below`` can hold count
    (:func:`_cheap_enough`): a term with another e-node costs ``below`` or more."""
    comp = view.compiled()
    cost = view.node_costs(get_cost_model(model))
    if not integer_prices(cost):
        return False
    return _one_owner(comp, range(len(comp.nch)) if root is None
                      else _cheap_enough(comp, cost, comp.cidx[root], below))


def no_cheaper_term(view: EGraphView, model: CostModel | str | None, root: ClassId,
                    below: float) -> bool:
    """Whether no term of class ``root`` costs less than ``below`` as a DAG, where
    ``below`` is at most the root's best tree cost (the DAG cost to beat: the tree
    choice's), so that a DAG search, which keeps the tree choice on a tie, would keep
    it. Integer prices only (exact sums); of the e-nodes such a term may hold
    (:func:`_cheap_enough`), either each class is a child of one class's e-nodes (then
    every term costs its tree cost, at least the best: :func:`sharing_impossible`), or
    no selection of them prices below ``below`` (:func:`_cheaper_selection`, a bounded
    search; its budget spent: False)."""
    comp = view.compiled()
    cost = view.node_costs(get_cost_model(model))
    if not integer_prices(cost):
        return False
    r = comp.cidx[root]
    keep = _cheap_enough(comp, cost, r, below)
    return _one_owner(comp, keep) or _cheaper_selection(comp, cost, keep, r, below) is False


#: the steps :func:`_cheaper_selection` takes before it gives up: this many, plus
#: :data:`_STEPS_PER_ENODE` per e-node it may choose from (a search that long costs
#: about what the DAG search it would spare does)
_SELECTION_STEPS = 32
_STEPS_PER_ENODE = 3


def integer_prices(cost: list[float]) -> bool:
    """Whether every price is an integer and their sum below 2**53 (every sum exact)."""
    return all(map(float.is_integer, cost)) and sum(cost) < 2.0 ** 53


def _one_owner(comp: _Compiled, enodes: Iterable[int]) -> bool:
    """Whether every class is a child of ``enodes`` of at most one class, each naming it
    once (see :func:`sharing_impossible`)."""
    owner = [-1] * len(comp.cids)
    ncls, nch, nchd = comp.ncls, comp.nch, comp.nchd
    for n in enodes:
        ch = nch[n]
        if not ch:
            continue
        c = ncls[n]
        for k in ch:
            o = owner[k]
            if o != c:
                if o >= 0:
                    return False
                owner[k] = c
        if len(ch) > 1 and len(nchd[n]) < len(ch):
            return False  # (a child named twice)
    return True


def _options(comp: _Compiled, cost: list[float], enodes: list[int]) -> dict[int, list[int]]:
    """Per class, its e-nodes of ``enodes``, cheapest first (equal prices in the order
    ``enodes`` lists them)."""
    opts: dict[int, list[int]] = {}
    ncls = comp.ncls
    for n in enodes:
        ns = opts.get(ncls[n])
        if ns is None:
            opts[ncls[n]] = [n]
        else:
            ns.append(n)
    for ns in opts.values():
        ns.sort(key=cost.__getitem__)
    return opts


def _cheaper_selection(comp: _Compiled, cost: list[float], keep: list[int], root: int,
                       below: float) -> bool | None:
    """Whether some choice of one e-node of ``keep`` per class that ``root`` reaches
    through the chosen e-nodes prices below ``below`` (each class paid once); None when
    its steps (:data:`_SELECTION_STEPS`) did not settle it. Every term of ``root`` of DAG cost below
    ``below`` is such a choice (cyclic choices count too: a relaxation), so False
    proves there is none. Depth first over the classes waiting for a choice, each
    class's e-nodes cheapest first, pruned by a lower bound: the prices chosen plus each
    waiting class's least price (distinct classes, each paid at least that)."""
    opts = _options(comp, cost, keep)
    if root not in opts:
        return False
    least = {c: cost[ns[0]] for c, ns in opts.items()}
    nchd = comp.nchd
    budget = _SELECTION_STEPS + _STEPS_PER_ENODE * len(keep)
    # (a child of an e-node of ``keep`` has one there: its floor is below ``below`` too)
    placed = {root}  # the classes chosen or waiting
    todo: list[int] = []  # the classes waiting
    trail: list[tuple[int, int, int, int]] = []  # (class, next option, e-node, classes added)
    total = least[root]  # the bound: chosen prices plus waiting classes' least prices
    c, i, steps = root, 0, 0
    while True:
        ns = opts[c]
        base = total - least[c]
        chosen = False
        while i < len(ns):
            n = ns[i]
            i += 1
            steps += 1
            if steps > budget:
                return None
            t = base + cost[n]
            if t >= below:
                break  # (the e-nodes cheapest first: the others cost as much or more)
            new = [k for k in nchd[n] if k not in placed]
            t += sum([least[k] for k in new])
            if t < below:
                if not new and not todo:
                    return True
                placed.update(new)
                todo += new
                total = t
                trail.append((c, i, n, len(new)))
                chosen = True
                break
        if chosen:
            c, i = todo.pop(), 0
            continue
        todo.append(c)  # no choice for c: undo the one before it
        if not trail:
            return False
        c, i, n, m = trail.pop()
        if m:
            gone = todo[-m:]
            del todo[-m:]
            placed.difference_update(gone)
            total -= sum([least[k] for k in gone])
        total += least[c] - cost[n]  # (c's other e-nodes next, from position i)


def _cheap_enough(comp: _Compiled, cost: list[float], root: int, below: float) -> list[int]:
    """The e-nodes a term of class ``root`` whose DAG cost is below ``below`` may hold:
    of the classes ``root`` reaches through such e-nodes, the e-nodes whose floor is
    below it. An e-node's floor (its price plus its children's largest floor) and a
    class's (its e-nodes' least) bound the DAG cost of every term holding them from
    below (a term holds its subterms: its DAG cost is at least its node's price plus
    any one child's); found cheapest first, as :func:`cheapest_first` finds tree
    costs, those below ``below`` only (exact sums: integer prices)."""
    nclasses = len(comp.cids)
    floor = [INF] * nclasses
    ncls, nchd, parents = comp.ncls, comp.nchd, comp.parents
    low = [False] * len(nchd)  # per e-node: its floor is below ``below``
    pending = comp.pending()[:]
    heap = [(cost[n], n) for lv in comp.leaves for n in lv if cost[n] < below]
    for _v, n in heap:
        low[n] = True
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:  # (a floor not below ``below`` is left INF: it matters no more)
        v, n = pop(heap)
        c = ncls[n]
        if floor[c] < INF:
            continue
        floor[c] = v
        for p in parents[c]:
            left = pending[p] - 1
            pending[p] = left
            if not left:
                w = cost[p] + max([floor[k] for k in nchd[p]])
                if w < below:
                    low[p] = True
                    push(heap, (w, p))
    keep: list[int] = []
    seen = [False] * nclasses
    seen[root] = True
    stack = [root]
    class_nodes = comp.class_nodes
    while stack:
        for n in class_nodes[stack.pop()]:
            if low[n]:
                keep.append(n)
                for k in nchd[n]:
                    if not seen[k]:
                        seen[k] = True
                        stack.append(k)
    return keep


def dag_cost(view: EGraphView, selection: Mapping[ClassId, ENode],
             roots: Sequence[ClassId] | None = None, model: CostModel | str | None = None
             ) -> float:
    """The DAG cost of the terms ``selection`` gives the roots (each class paid once)."""
    return _selection_costs(view, selection, roots, model)[0]


def tree_cost(view: EGraphView, selection: Mapping[ClassId, ENode],
              roots: Sequence[ClassId] | None = None, model: CostModel | str | None = None
              ) -> float:
    """The tree cost (sum over roots, each use paid) of the terms of ``selection``."""
    return _selection_costs(view, selection, roots, model)[1]


def _selection_costs(view: EGraphView, selection: Mapping[ClassId, ENode],
                     roots: Sequence[ClassId] | None, model: Any) -> tuple[float, float]:
    comp, cost, ridx, _relevant, _ = _prepare(view, roots, model)
    sel = [-1] * len(comp.cids)
    index = {id(n): i for i, n in enumerate(comp.nodes)}
    for cid, n in selection.items():
        c = comp.cidx.get(cid)
        i = index.get(id(n))
        if c is None or i is None or comp.ncls[i] != c:
            raise ExtractionError(f"selection entry {cid!r} -> {n!r} is not an e-node of "
                                  "that class in this view")
        sel[c] = i
    order = _walk(comp, sel, ridx)
    if order is None:
        raise ExtractionError("the selection is cyclic or misses a class the roots reach")
    return _dag_total(comp, cost, sel, order), _tree_total(comp, cost, sel, order, ridx)
