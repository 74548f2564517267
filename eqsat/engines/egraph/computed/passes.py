"""The computed pass: every selected computed rule on the classes that changed.

:func:`python_pass` applies the rules to a snapshot, only to the classes that
changed since the last pass (or whose cheapest term did), and unions the results
(at most :data:`MAX_UNIONS_PER_CLASS` per class and run); :func:`fold_pass` unions
known constants. The rules (but the constant fold and the and-canonicalization) visit
only the classes near a root's cheapest term or not reached by any root yet
(:func:`focus_classes`, :data:`NEAR_FACTOR`); the others wait for a pass that finds them so.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from functools import cached_property, partial
from itertools import filterfalse, repeat
from operator import itemgetter
from typing import Any

from eqsat.engines.egraph.analyses import INT_DTYPES
from eqsat.engines.egraph.computed.compare import _LT, cmp_pass
from eqsat.engines.egraph.computed.context import best_term_reaches, context_pass
from eqsat.engines.egraph.computed.divmod import _apply, _plan, divmod_rules_by_op
from eqsat.engines.egraph.computed.ematch import ematch_pass
from eqsat.engines.egraph.computed.lift import _BasisSearch, lift_pass
from eqsat.engines.egraph.computed.linear import (
    _CTOR,
    _SECOND,
    EClassCtx,
    LinForms,
    _Memo,
    _UnrepresentableError,
    conjuncts,
    nodes_of,
)
from eqsat.engines.egraph.computed.pricing import BestHeights, Weights, best_nodes_and_parents
from eqsat.engines.egraph.computed.seed import BoundSeeder
from eqsat.engines.egraph.computed.state import PassResult, PassState, RulesMemo, index_children
from eqsat.engines.egraph.computed.terms import _TERM_E, Term, _atoms, _class_of_handle
from eqsat.engines.egraph.encoding import Inserter, Node, Snapshot, defined_classes
from eqsat.engines.egraph.schedules import gc_paused
from eqsat.ir.linear import Lin
from rules.computed import PyRule

#: whether the e-nodes a pass records carry their bounds (:mod:`.seed`): the
#: analysis then needs fewer rounds to reach the same fixed point
SEED_BOUNDS = True

#: the computed rewrites (but the constant fold and the and-canonicalization, cheap)
#: go to the classes some term of a root passes through that costs at most
#: ``NEAR_FACTOR`` x the root's best cost + ``NEAR_SLACK`` more than that best
#: (:func:`focus_classes`), and to the classes no root reaches yet. A changed class off
#: those terms waits (``PassState.deferred``) until a pass finds it on one. Pruning
#: only; the figures behind the bound are in docs/perf.md
NEAR_FACTOR = 0.5
NEAR_SLACK = 2.0

#: computed rewrites unioned into one class at most (a runaway family of rewrites of
#: one class stops here; the first ones are the ones found first, deterministically)
MAX_UNIONS_PER_CLASS = 24

#: how deep :meth:`Recorder.found` reads a term (a deeper one is not looked at: a
#: sum of many atoms is a chain as deep as it is long)
_FOUND_DEPTH = 64

_DIVMOD = frozenset(("Idiv", "Mod"))
_FIRST = itemgetter(0)  # (a row's class)
#: every integer division's constructor (C's and the floor forms): undefined by 0
_DIVISIONS = _DIVMOD | {"Floordiv", "Floormod"}


def fold_pass(snap: Snapshot, dirty: set[int], union: Callable[[int, Term, str], Any],
              name: str) -> None:
    """Union every never-Invalid integer class whose interval is one value with that
    constant, when the class has a value on every input (:func:`total_classes`: the
    interval of a division by a possible 0, or of a term over one, holds only where
    the division is defined, and a fold would give the undefined values a value)."""
    defined, consts, lo, hi = snap.defined, snap.consts, snap.lo, snap.hi
    # (a class with a Cst e-node is in ``consts``: it has its constant already)
    cands = sorted([c for c in (dirty & defined).difference(consts)
                    if lo.get(c) is not None and lo.get(c) == hi.get(c)])
    if not cands:
        return
    total = total_classes(snap)
    for c in cands:
        if c not in total:
            continue
        dt = next((n.dtype for n in snap.class_nodes(c) if n.dtype in INT_DTYPES), None)
        if dt is not None:
            union(c, ("Cst", dt, snap.lo[c]), name)


def total_classes(snap: Snapshot) -> set[int]:
    """The classes with a value on every input: a least fixed point over the e-nodes
    as :func:`~eqsat.engines.egraph.encoding.defined_classes` computes it, where a
    division or remainder counts only when its divisor is never 0."""
    def admit(n: Node) -> bool:
        if n.ctor not in _DIVISIONS:
            return True
        dlo, dhi = snap.bounds(n.fields[2])
        return dlo > 0 or dhi < 0

    return defined_classes(snap.nodes, set(), admit=admit)


#: the constructors the whole-sum rules read inside their atoms' classes (``mod_parts``,
#: ``idiv_parts``, ``mul_parts``): a class that gains one gets a new version
#: (``PassState.versions``), and a sum rule's memo key holds its atoms' versions
_READ_CTORS = frozenset(("Mod", "Idiv", "Mul"))


def divmod_free(nodes: list[Node], best: dict[int, int]) -> set[int]:
    """The classes whose cheapest term has no idiv or mod anywhere (``best`` lists the
    classes children first, as :func:`best_nodes` makes it).

    The pass gives such a class no div/mod rewrite and no whole-sum or basis rewrite
    (the rules that remove or recombine divisions): it has a division-free term at
    the best cost already, and what those rules would add is a division or a
    recombination of terms it does not hold. Pruning only: nothing unsound can come of
    it, and no corpus or unseen output costs more (docs/perf.md). A division's class
    whose cheapest term is a select still gets the division-free rewrites
    (:func:`division_selects`)."""
    dm: set[int] = set()
    for c, i in best.items():
        n = nodes[i]
        if n.ctor in _DIVISIONS or not dm.isdisjoint(n.kids):
            dm.add(c)
    return best.keys() - dm


def division_selects(snap: Snapshot, best: dict[int, int]) -> set[int]:
    """The classes whose cheapest term is a select (``Where``) and that hold a division.

    The select rules (``division_select``), run from the start, make a division's
    class cheap before the div/mod rules rewrote the division: ``(6*a + b) % 6`` with
    ``b`` in [0, 5] is a select of the dividend's buckets before ``mod_drop_multiple``
    gives ``b``. The div/mod rules still visit these classes (:func:`divmod_free` would
    leave them out), and only their division-free results join them: the others would
    add divisions to a class that has a cheaper term without one."""
    nodes, out = snap.nodes, set()
    for c, i in best.items():
        if nodes[i].ctor == "Where":
            for n in snap.class_nodes(c):  # (a loop: no any() over a generator)
                if n.ctor in _DIVISIONS and not n.subsumed:
                    out.add(c)
                    break
    return out


def _has_division(t: Term) -> bool:
    """Whether the pending term ``t`` builds a division (its atoms are not read)."""
    if type(t) is not tuple:
        return False
    return t[0] in _DIVISIONS or any(_has_division(k) for k in t[2:])


def changed_classes(snap: Snapshot, state: PassState, affected: bool = True
                    ) -> tuple[set[int], set[Node] | None]:
    """The classes that differ from the last pass (e-nodes, bounds, Def) or are new;
    and the e-nodes with a child among them (their prices may differ), or None when
    not ``affected`` (no last pass's prices to take over: every e-node is priced).

    The snapshots share the Node objects of unchanged rows, so the e-nodes are compared
    by identity first; only the few new and gone ones are compared by row (a row rebuilt
    as a new Node is no change). The facts are compared dict against dict. Both give
    what comparing every ``(class, ctor, fields, subsumed)`` row and every ``(class,
    lo, hi, defined)`` fact of the two passes gives. ``state.kid_index`` (class -> the
    e-nodes it is a child of) follows the e-nodes once a pass made it."""
    nodes = snap.nodes
    lo, hi, defined, classes = snap.lo, snap.hi, snap.defined, snap.classes
    olo, ohi, odef, ocls = state.facts
    ver = state.versions
    index = state.kid_index
    if not state.nodes and not ocls:
        # the first pass: every class is new, and every row
        changed = set(classes)
        for r in {n.row for n in nodes if n.ctor in _READ_CTORS}:
            ver[r[0]] = ver.get(r[0], 0) + 1
        if index is not None:
            index_children(index, nodes)
    else:
        old = state.node_set
        if old is None:
            old = set(state.nodes)
        now = set(nodes)
        added = now - old
        gone = old - now
        if gone:
            ra = {n.row for n in added}
            rg = {n.row for n in gone}
            new = ra - rg
            changed = set(map(_FIRST, new))
            changed.update(map(_FIRST, rg - ra))
        else:
            new = {n.row for n in added}
            changed = set(map(_FIRST, new))
        for r in new:  # (cls, ctor, fields, subsumed) of the rows that are really new
            if r[1] in _READ_CTORS:
                ver[r[0]] = ver.get(r[0], 0) + 1
        if lo != olo:
            changed.update([k for k, _ in lo.items() ^ olo.items()])
        if hi != ohi:
            changed.update([k for k, _ in hi.items() ^ ohi.items()])
        changed |= defined ^ odef
        changed |= ocls.keys() ^ classes.keys()
        changed &= classes.keys()
        state.node_set = now
        if index is not None:
            for n in gone:
                for k in n.kids:
                    index[k].discard(n)
            index_children(index, added)
    state.nodes = nodes
    state.facts = (lo, hi, defined, classes)
    if not affected:
        return changed, None
    index = state.children_index()
    out: set[Node] = set()
    for c in changed:
        e = index.get(c)
        if e:
            out |= e
    return changed, out


def _dirty(snap: Snapshot, best: dict[int, int], changed: set[int]
           ) -> tuple[set[int], list[tuple[int, int]]]:
    """The classes whose cheapest term may read differently since the last pass: the
    class changed, or a class in its best term did; and ``(class, best e-node)`` of
    each, in ``best``'s order."""
    if changed.issuperset(best):  # (a first pass: every class changed)
        return set(best), list(best.items())
    nodes = snap.nodes
    dirty: set[int] = set()
    order: list[tuple[int, int]] = []
    for c, i in best.items():  # children come before their parents
        if c in changed or not dirty.isdisjoint(nodes[i].kids):
            dirty.add(c)
            order.append((c, i))
    return dirty, order


def focus_classes(snap: Snapshot, roots: Iterable[int], cost: dict[int, float],
                  price: Callable[[int], float], index: dict[int, set[Node]] | None = None
                  ) -> tuple[set[int], Reached]:
    """``(near, reached)``: the classes some term of a root passes through whose cost
    is at most :data:`NEAR_FACTOR` x the root's best cost + :data:`NEAR_SLACK` above
    that best; and the classes reached through any e-node, subsumed ones too.

    A term of a root that takes e-node ``n`` in class ``c`` costs ``n``'s tree cost
    (its price + its children's best costs) minus ``c``'s best cost more than the
    root's best term, summed over the path from the root: the classes are visited
    with the most slack left first, so each gets the largest slack any path leaves
    it. A division's or remainder's dividend is not counted in its tree cost: the
    div/mod rules rewrite the whole dividend sum, and what ``(big sum) % 4`` comes to
    (``(x + 2) % 4``) says nothing of the sum's cost now (docs/perf.md). A class
    outside ``near`` but in ``reached`` is only on terms of the roots that cost well
    over their best: rewriting it makes a root cheaper only through a choice that
    costs that much more. ``reached`` is a :class:`Reached`, which answers only what it
    is asked (the pass asks of the classes outside ``near`` it would visit), upwards
    through ``index`` (the children index of the snapshot's e-nodes,
    ``PassState.kid_index``) when the caller keeps one."""
    nodes, classes = snap.nodes, snap.classes
    roots = list(roots)
    get = cost.get
    slack: dict[int, float] = {}
    heap: list[tuple[float, int]] = []
    for r in roots:
        b = get(r)
        s = NEAR_SLACK if b is None else b * NEAR_FACTOR + NEAR_SLACK
        if s > slack.get(r, -1.0):
            slack[r] = s
            heapq.heappush(heap, (-s, r))
    near: set[int] = set()
    while heap:
        neg, c = heapq.heappop(heap)
        if c in near:
            continue
        near.add(c)
        best = get(c)
        if best is None:
            continue
        left = -neg + best  # (the slack after an e-node: left - its tree cost)
        for i in classes.get(c, ()):
            n = nodes[i]
            kids = n.kids
            if n.subsumed or not kids:
                continue
            rem = left - price(i)
            dividend = kids[0] if n.ctor in _DIVISIONS else -1
            for k in kids:
                v = get(k)
                if v is None:
                    break
                if k != dividend:
                    rem -= v
            else:
                if rem >= 0:
                    for k in kids:
                        if k not in near and rem > slack.get(k, -1.0):
                            slack[k] = rem
                            heapq.heappush(heap, (-rem, k))
    return near, Reached(roots, near, index, partial(snap.reached, roots), len(nodes))


class Reached:
    """``c in reached`` exactly when ``c in snap.reached(roots)``, found upwards: a class
    is reached when it is a root or a child of an e-node of a reached class. ``near``
    (:func:`focus_classes`' classes, all reached) and the answers so far end a search
    early; a search that ends without a root found none above any class it saw, so
    none of them is reached, and one that finds a reached class found every class on
    the way up to it reached. ``index``: class -> the snapshot's e-nodes it is a child
    of (subsumed ones too, as ``Snapshot.reached`` walks them); without one (None),
    the answers come from ``full()`` from the first question ``near`` and the roots
    do not answer (one walk down costs about what making the index would; without
    ``full()`` either, nothing else is reached).

    The upward searches of a pass may together read far more than the e-graph (each
    search from a class under a long chain of classes off ``near`` reads the chain
    again): once they read more than ``budget`` e-nodes, the answers come from
    ``full()`` (``Snapshot.reached``: one walk down from the roots), so a pass reads
    at most about three times its e-graph (the budget, the search that passed it, the
    walk down) whatever it asks."""

    __slots__ = ("roots", "near", "index", "memo", "full", "budget", "all")

    def __init__(self, roots: Iterable[int], near: set[int],
                 index: dict[int, set[Node]] | None,
                 full: Callable[[], set[int]] | None = None, budget: int = 0):
        self.roots = set(roots)
        self.near = near
        self.index = index
        self.memo: dict[int, bool] = {}
        self.full = full
        self.budget = budget  # e-nodes the upward searches may read before full()
        self.all: set[int] | None = None

    def __repr__(self) -> str:
        return f"<Reached from {sorted(self.roots)!r}>"

    def __contains__(self, c: int) -> bool:
        if c in self.near or c in self.roots:
            return True
        if self.all is not None:
            return c in self.all
        index = self.index
        if index is None:  # (one walk down answers this question and the next ones)
            full = self.full
            self.all = full() if full is not None else set()
            return c in self.all
        memo = self.memo
        hit = memo.get(c)
        if hit is not None:
            return hit
        near, roots = self.near, self.roots
        seen = {c}
        below: dict[int, int] = {}  # a class the search saw -> the class it came from
        stack = [c]
        read = 0
        while stack:
            k = stack.pop()
            e = index.get(k)
            if not e:
                continue
            read += len(e)
            for n in e:
                p = n.cls
                if p in seen:
                    continue
                hit = memo.get(p)
                if hit is False:
                    continue  # (nor is anything above it)
                if hit or p in near or p in roots:
                    while True:  # every class on the way from c up to p is reached
                        memo[k] = True
                        if k == c:
                            break
                        k = below[k]
                    self._spend(read)
                    return True
                seen.add(p)
                below[p] = k
                stack.append(p)
        for k in seen:
            memo[k] = False
        self._spend(read)
        return False

    def _spend(self, read: int) -> None:
        """Count ``read`` e-nodes against the budget; past it, answer from ``full()``."""
        self.budget -= read
        if self.budget < 0 and self.full is not None:
            self.all = self.full()


def inner_sums(snap: Snapshot, roots: Iterable[int]) -> set[int]:
    """Index classes used only inside other sums (as operands of add/sub/neg or of a
    multiplication by a constant) and not roots: their enclosing sum covers them."""
    lin_use: set[int] = set()
    other_use: set[int] = set(roots)
    const_of = snap.const_of
    lin_ctors = ("Add", "Sub", "Neg")
    for n in snap.nodes:
        kids = n.kids
        if not kids or n.subsumed:
            continue
        if n.dtype == "index" and (n.ctor in lin_ctors or (n.ctor == "Mul" and (
                const_of(kids[0]) is not None or const_of(kids[1]) is not None))):
            lin_use.update(kids)
        else:
            other_use.update(kids)
    return lin_use - other_use


class InnerSums:
    """``c in inner`` exactly when ``c in inner_sums(snap, roots)``, read from the
    class's parents (only the classes asked about are read)."""

    def __init__(self, snap: Snapshot, parents: dict[int, list[int]], roots: Iterable[int]):
        self.snap = snap
        self.parents = parents
        self.roots = set(roots)

    def __repr__(self) -> str:
        return f"<InnerSums of {self.snap!r}>"

    def __contains__(self, c: int) -> bool:
        if c in self.roots:
            return False
        nodes = self.snap.nodes
        const_of = self.snap.const_of
        lin = False
        for p in self.parents.get(c, ()):
            n = nodes[p]
            if n.dtype == "index" and (n.ctor in ("Add", "Sub", "Neg") or (n.ctor == "Mul" and (
                    const_of(n.kids[0]) is not None or const_of(n.kids[1]) is not None))):
                lin = True
            else:
                return False  # an other use
        return lin


def _index_classes(snap: Snapshot, among: set[int]) -> list[int]:
    """The index classes in ``among``, in the snapshot's order."""
    nodes, classes = snap.nodes, snap.classes
    return [c for c in filter(among.__contains__, classes)
            if nodes[classes[c][0]].dtype == "index"]


def python_pass(snap: Snapshot, ins: Inserter, rules: list[PyRule], state: PassState,
                deadline: float | None = None, clock: Callable[[], float] | None = None,
                roots: Iterable[int] = (), model: Any = None) -> PassResult:
    """Apply every selected computed rule to the snapshot; record the unions in ``ins``.

    One :class:`PassData` (the snapshot read once: best terms, prices, the classes the
    rules visit), then each of :data:`PASS_STEPS` in order, each step one family of
    rules, all recording through one :class:`Recorder`.

    The cyclic garbage collector is paused meanwhile: the pass makes many short-lived,
    acyclic objects (terms, forms), which reference counting frees; collections would
    only rescan the young objects the pass keeps."""
    with gc_paused():
        if SEED_BOUNDS:
            ins.seeder = BoundSeeder(snap.lo, snap.hi, partial(_class_of_handle, snap))
        try:
            res = PassResult()
            t = time.perf_counter()
            data = PassData(snap, ins, rules, state, deadline, clock, roots, model, res)
            clock_now = time.perf_counter
            now = clock_now()
            times = res.times
            times["best"] = now - t
            for step in PASS_STEPS:  # (each step's name is its own: one time each)
                t = now
                step.run(data)
                now = clock_now()
                times[step.name] = now - t
            state.deferred = data.deferred
            state.lins.update(data.lins.made)  # lins.kept(), in place (its prev is state.lins)
            res.late = deadline is not None and now > deadline
            return res
        finally:
            ins.seeder = None


class Recorder:
    """Turns a rule's result (a pending term) into a recorded union: the term's e-nodes
    inserted (an existing one found by its key), the union refused when it would be a
    cycle, over the per-class cap (:data:`MAX_UNIONS_PER_CLASS`) or not representable,
    and counted per rule. ``union(cls, term, rule name)`` is what every step calls."""

    __slots__ = ("snap", "ins", "state", "res", "best", "height", "canon_h", "node_memo",
                 "reach_memo", "cycle_of", "handle_of", "into", "emitted")

    def __init__(self, snap: Snapshot, ins: Inserter, state: PassState, res: PassResult,
                 best: dict[int, int]):
        self.snap, self.ins, self.state, self.res, self.best = snap, ins, state, res, best
        # the heights of the cheapest terms, computed as cycles() asks for them
        self.height = BestHeights(snap.nodes, best, snap.height)
        # handle -> its class now (a handle made during this pass is its own class)
        self.canon_h = _Memo(partial(_class_of_handle, snap)).__getitem__
        self.node_memo = ins.memo  # (ctor, *fields) -> handle: what ins.node finds
        self.reach_memo: dict[int, dict[int, bool]] = {}
        # what union() computed of a (class, term) and a term this pass: within a pass
        # both depend on nothing that changes (best terms, heights and classes are
        # fixed, and the e-nodes ins knows only grow), and the rules repeat many results
        self.cycle_of: dict[tuple[int, Term], bool] = {}
        self.handle_of: dict[Term, int] = {}
        self.into: dict[Term, int] = {}  # term -> the class its new root e-node went into
        # a (sub)term emit() inserted or found this pass -> its handle: emitting it again
        # finds the same key in node_memo (the classes are fixed within a pass, and
        # node_memo's entries are only ever added), so the same handle, and records
        # nothing; the rules' results share many subterms
        self.emitted: dict[Term, int] = {}

    def __repr__(self) -> str:
        return f"<Recorder of {self.snap!r}: {len(self.handle_of)} terms>"

    def node_key(self, t: Term) -> tuple:
        """The e-node key of a pending term (not a handle): its children inserted and
        named by their classes now, so an existing e-node is found whatever handles the
        term was built from."""
        pos = _TERM_E[t[0]]
        if not pos:  # a leaf (a constant): the term is its key
            return t
        fields = list(t)
        canon_h = self.canon_h
        for i in pos:
            f = t[i]
            fields[i] = canon_h(f) if isinstance(f, int) else self.emit(f)
        return tuple(fields)

    def emit(self, t: Term) -> int:
        """Insert a pending term, its operands first (left to right); its handle. A
        stack, not recursion: a sum of many terms is a chain as deep as it is long."""
        if isinstance(t, int):
            return self.canon_h(t)
        emitted = self.emitted
        h = emitted.get(t)
        if h is not None:
            return h
        stack = [t]
        while stack:
            u = stack[-1]
            if u in emitted:
                stack.pop()
                continue
            waiting = len(stack)
            for i in reversed(_TERM_E[u[0]]):  # (the first operand on top)
                f = u[i]
                if not isinstance(f, int) and f not in emitted:
                    stack.append(f)
            if len(stack) > waiting:
                continue
            stack.pop()
            key = self.node_key(u)  # (its operands are emitted: no recursion)
            h = self.node_memo.get(key)
            if h is None:
                h = self.ins.node(*key)
            emitted[u] = h
        return emitted[t]

    def emit_into(self, cls: int, t: Term) -> tuple[int, bool]:
        """Insert ``t`` with its root e-node in class ``cls`` when that e-node is new
        (one row: no class of its own to make and union); ``(handle, True)`` then, else
        ``(the handle of the e-node the e-graph has, False)``."""
        if isinstance(t, int):
            return self.canon_h(t), False
        key = self.node_key(t)
        h = self.node_memo.get(key)
        if h is not None:
            return h, False
        self.ins.node_with_handle(cls, *key)
        return cls, True

    def cycles(self, cls: int, t: Term) -> bool:
        """Whether ``cls == t`` would be a cycle: ``t`` is ``cls`` or holds an atom
        whose cheapest term holds ``cls`` (``x == f(x)`` only feeds rules new
        constants; an atom no taller than ``cls`` cannot hold it in its best term)."""
        height, canon_h = self.height, self.canon_h
        hc = height.get(cls, 0)
        memo = None
        for a in _atoms(t):
            a = canon_h(a)
            if a == cls:
                return True
            if height.get(a, 0) > hc:
                if memo is None:
                    memo = self.reach_memo.setdefault(cls, {})
                if best_term_reaches(self.snap, self.best, a, {cls}, memo):
                    return True
        return False

    def found(self, t: Term, depth: int = 0) -> int | None:
        """The handle ``emit(t)`` would return when every e-node of ``t`` exists already
        (found by its key, nothing inserted); None when one may not (or the term is
        deeper than :data:`_FOUND_DEPTH`: not looked at)."""
        if type(t) is int:
            return self.canon_h(t)
        h = self.emitted.get(t)
        if h is not None:
            return h
        pos = _TERM_E[t[0]]
        if not pos:
            return self.node_memo.get(t)
        if depth >= _FOUND_DEPTH:
            return None
        fields = list(t)
        for i in pos:
            f = self.found(t[i], depth + 1)
            if f is None:
                return None
            fields[i] = f
        return self.node_memo.get(tuple(fields))

    def holds(self, cls: int, t: Term) -> bool:
        """Whether ``union(cls, t, name)`` would record and count nothing and answer
        True or False only as a cycle check says: ``t``'s root e-node is in ``cls``
        already (:meth:`found`), not put there by this pass (a repeat of such a term
        counts), and the class is under the cap (over it a refusal is counted). A
        caller that ignores what ``union`` answers may then skip it."""
        return self.state.unions.get(cls, 0) < MAX_UNIONS_PER_CLASS and \
            self.into.get(t) != cls and self.found(t) == cls

    def union(self, cls: int, t: Term, name: str) -> bool:
        """Union ``t`` into ``cls``; False when refused (a cycle, the cap, a constant
        outside i64), True when recorded or already there."""
        key = (cls, t)
        cyc = self.cycle_of.get(key)
        if cyc is None:
            cyc = self.cycle_of[key] = self.cycles(cls, t)
        if cyc:
            return False
        state, res = self.state, self.res
        if state.unions.get(cls, 0) >= MAX_UNIONS_PER_CLASS:
            res.skipped_cap += 1
            return False
        h = self.handle_of.get(t)
        if h is None:
            try:
                h, fresh = self.emit_into(cls, t)
            except _UnrepresentableError:
                return False
            self.handle_of[t] = h
            if fresh:
                self.into[t] = cls
        if h == cls and self.into.get(t) == cls:
            # the term's root e-node went straight into cls this pass (no class of its own
            # to union): it counts as a union, for every rule that gives it
            res.unions += 1
            res.matches[name] = res.matches.get(name, 0) + 1
            state.unions[cls] = state.unions.get(cls, 0) + 1
        elif h != cls:
            # a union this run recorded already is in the e-graph: no second row (it
            # counts as before: matches and the per-class cap are unchanged)
            if (cls, h) not in state.recorded:
                state.recorded.add((cls, h))
                self.ins.union(cls, h)
            res.unions += 1
            res.matches[name] = res.matches.get(name, 0) + 1
            state.unions[cls] = state.unions.get(cls, 0) + 1
        return True


class RuleKinds:
    """A pass's rule list read once (:data:`_rule_kinds`): the rules by kind
    (``kinds``), each list in the rules' order; the e-matched rules (``ematched``); the
    whole-sum rules that need no division (``no_div``); the div/mod rules' plans by op
    (``plans``: :func:`~.divmod._plan`, empty without div/mod rules)."""

    __slots__ = ("kinds", "ematched", "no_div", "plans")

    def __init__(self, rules: list[PyRule]):
        self.kinds: dict[str, list[PyRule]] = {}
        for r in rules:
            self.kinds.setdefault(r.kind, []).append(r)
        self.ematched = [r for r in rules if r.kind in ("ematch", "ematch_nonint")]
        self.no_div = [r for r in self.kinds.get("sum", []) if not r.rule.divisions]
        dm = self.kinds.get("divmod", [])
        self.plans = {op: _plan(rs) for op, rs in divmod_rules_by_op(dm).items()} \
            if dm else {}

    def __repr__(self) -> str:
        return f"<RuleKinds {sorted(self.kinds)}>"


#: :class:`RuleKinds` of a rule list, once per list for every run of the process
_rule_kinds = RulesMemo(RuleKinds)


class PassData:
    """What one pass reads from its snapshot before any rule runs, shared by its steps:
    the changed classes, every class's cheapest e-node and tree cost under the run's
    prices, the classes whose best term may read differently (``dirty``), the classes
    the rules visit (``focus``: near a root's best term or reached by no root;
    :data:`NEAR_FACTOR`) and those left for a later pass (``deferred``), the linear
    forms, the rules by kind (``by_kind``, :class:`RuleKinds`; ``kinds``) and the
    :class:`Recorder` (its ``union`` and ``holds``)."""

    def __init__(self, snap: Snapshot, ins: Inserter, rules: list[PyRule], state: PassState,
                 deadline: float | None, clock: Callable[[], float] | None,
                 roots: Iterable[int], model: Any, res: PassResult):
        self.snap, self.ins, self.rules, self.state, self.res = snap, ins, rules, state, res
        self.deadline, self.clock = deadline, clock
        # (the e-nodes to reprice only when the last pass kept prices: an op_only
        # model's and a first pass's price every e-node)
        changed, affected = changed_classes(snap, state, affected=bool(state.node_prices))
        self.changed = changed
        # every existing e-node maps to its class: rebuilding one returns the class (the
        # nodes of unchanged classes were registered by an earlier pass)
        ins.register_classes(snap, changed)
        self.weights = Weights(snap, model, state.prices, state.node_prices, changed,
                               affected)
        self.best, self.cost, self.parents = best_nodes_and_parents(snap, self.weights,
                                                                    heights=False)
        state.node_prices = self.weights.by_node
        snap.best_cost = self.cost  # the engine's stall test reads the roots' best costs
        self.dirty, self.dirty_best = _dirty(snap, self.best, changed)
        self.roots = list(roots)
        self.near, self.reached = focus_classes(snap, self.roots, self.cost, self.weights.of,
                                                state.kid_index)
        classes_now = snap.classes
        self.waiting = self.dirty.union(state.deferred.intersection(classes_now))
        # the rules visit a class (but fold and canon_and) near a root, or one no
        # root reaches
        near, reached = self.near, self.reached
        self.focus = focus = self.waiting.intersection(near)
        if len(focus) < len(self.waiting):  # (reached is asked only of the others)
            focus.update(filterfalse(reached.__contains__, self.waiting - near))
        self.deferred = self.waiting - self.focus
        self.lins = LinForms(snap, self.best, state.lins)
        self.ctx = EClassCtx(snap, self.lins, state.lin_terms, state.term_keys, ins.args)
        self.by_kind = _rule_kinds(rules)
        self.kinds = self.by_kind.kinds
        #: the constructors of the snapshot's e-nodes (subsumed ones too): a step whose
        #: rules read a constructor the snapshot lacks has nothing to do
        self.ctors = set(map(_CTOR, snap.nodes))
        rec = Recorder(snap, ins, state, res, self.best)
        self.union, self.holds = rec.union, rec.holds
        self._bounds = self.ctx.bounds  # snap.bounds, memoized

    def __repr__(self) -> str:
        return f"<PassData of {self.snap!r}: {len(self.focus)} classes in focus>"

    @cached_property
    def free(self) -> set[int]:
        """:func:`divmod_free` (every class when the snapshot holds no division; none
        without div/mod, whole-sum or basis rules), made when a step first reads it."""
        k = self.kinds
        if not (k.get("divmod") or k.get("sum") or k.get("basis")):
            return set()
        if self.ctors.isdisjoint(_DIVISIONS):
            return set(self.best)
        return divmod_free(self.snap.nodes, self.best)

    @cached_property
    def selects(self) -> set[int]:
        """:func:`division_selects` (none without a select and a division, or without
        div/mod rules), made when a step first reads it."""
        ctors = self.ctors
        if not self.kinds.get("divmod") or "Where" not in ctors or ctors.isdisjoint(_DIVISIONS):
            return set()
        return division_selects(self.snap, self.best)

    def late(self) -> bool:
        """Whether the pass is past its deadline (or its rows filled their room)."""
        return self.deadline is not None and self.clock is not None and \
            self.clock() > self.deadline

    def bkey(self, x: Lin) -> tuple:
        """The bounds of a linear form's atoms (part of a rule's memo key)."""
        return tuple(map(self._bounds, map(_SECOND, x.terms)))

    def all_def(self, x: Lin) -> bool:
        """Whether every atom of ``x`` is never Invalid."""
        defined = self.snap.defined
        for _, a in x.terms:  # (a loop: no generator per call)
            if a not in defined:
                return False
        return True


class PassStep:
    """One step of a pass: one family of rules, run on a :class:`PassData` (``run``);
    ``name`` keys its time in ``PassResult.times``."""

    name = ""

    def run(self, p: PassData) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SumStep(PassStep):
    """The rules on an index class's linear form, for the classes in focus that are not
    inside another sum: the canonical sum (and its common factor taken out), the basis
    search over division identities, the whole-sum rules."""

    name = "sums"

    def run(self, p: PassData) -> None:
        kinds = p.kinds
        canon, sums, basis = kinds.get("canon", []), kinds.get("sum", []), \
            kinds.get("basis", [])
        if not (canon or sums or basis):
            return
        snap, state, lins, ctx, union = p.snap, p.state, p.lins, p.ctx, p.union
        defined, done, holds = snap.defined, state.done, p.holds
        searcher: _BasisSearch | None = None
        inner = InnerSums(snap, p.parents, p.roots)
        no_div = p.by_kind.no_div
        late, all_def = p.late, p.all_def
        for c in _index_classes(snap, p.focus):
            if c in inner:
                continue
            if late():
                p.res.skipped += 1
                break
            x = lins.get(c)
            if x.single_atom == c or c not in defined or not all_def(x):
                continue
            for r in canon:
                key = ("canon", c, x)
                if key in done:
                    continue
                done.add(key)
                try:
                    t = ctx.lin(x)
                    if not holds(c, t):  # (the class's own sum, most often)
                        union(c, t, r.name)
                    # and factored by the terms' common factor: g*(a + b) + k
                    g = x.content()
                    if len(x.terms) >= 2 and g > 1:
                        core = Lin(tuple((f // g, a) for f, a in x.terms), 0)
                        union(c, ctx.add(ctx.mul(ctx.lin(core), g), ctx.const(x.const)),
                              r.name)
                except _UnrepresentableError:
                    pass
            bx = p.bkey(x) if len(x.terms) >= 2 else ()
            if c in p.free:  # a division-free sum: only the rules that need no division
                self._sums(p, c, x, bx, no_div)
                continue
            if len(x.terms) >= 2 and basis:
                key = ("basis", c, x, bx)
                if key not in done:
                    done.add(key)
                    if searcher is None:
                        searcher = _BasisSearch(snap, p.best, ctx, p.ins, p.weights)
                    try:
                        nx = searcher.search(x, p.deadline)
                        if nx is not None:
                            union(c, ctx.lin(nx), basis[0].name)
                    except _UnrepresentableError:
                        pass
            self._sums(p, c, x, bx, sums)

    @staticmethod
    def _sums(p: PassData, c: int, x: Lin, bx: tuple, sums: list[PyRule]) -> None:
        """The whole-sum rules ``sums`` on class ``c``'s linear form ``x``."""
        if len(x.terms) < 2 or not sums:
            return
        versions, done = p.state.versions, p.state.done
        vx = tuple(map(versions.get, map(_SECOND, x.terms), repeat(0)))
        for r in sums:
            key = (r.name, c, x, bx, vx)
            if key in done:
                continue
            done.add(key)
            try:
                out = r.rule.fn(x, p.ctx)
            except _UnrepresentableError:
                continue
            if out is not None:
                p.union(c, out, r.name)


class FoldStep(PassStep):
    """Known constants (:func:`fold_pass`) on every dirty class."""

    name = "fold"

    def run(self, p: PassData) -> None:
        if "fold" in p.kinds:
            fold_pass(p.snap, p.dirty, p.union, p.kinds["fold"][0].name)


class AndStep(PassStep):
    """Conjunctions in canonical order, on every dirty class whose best e-node is an
    ``And``."""

    name = "and"

    def run(self, p: PassData) -> None:
        if "And" not in p.ctors:
            return
        snap, state, union = p.snap, p.state, p.union
        for r in p.kinds.get("canon_and", []):
            for c, i in p.dirty_best:  # the dirty classes in best's order
                n = snap.nodes[i]
                if n.ctor != "And" or n.fields[0] != "bool":
                    continue
                clauses = conjuncts(snap, p.best, c)
                key = ("and", c, tuple(clauses))
                if key in state.done:
                    continue
                state.done.add(key)
                t: Term = clauses[0]
                for k in clauses[1:]:
                    t = ("And", "bool", t, k)
                union(c, t, r.name)


class CmpStep(PassStep):
    """Comparisons of linear forms (:func:`cmp_pass`) on the classes in focus."""

    name = "cmp"

    def run(self, p: PassData) -> None:
        if p.ctors.isdisjoint(_LT):  # (cmp_pass rewrites only these e-nodes)
            return
        for r in p.kinds.get("cmp", []):
            cmp_pass(p.snap, p.lins, p.ctx, p.state, r.name, p.union, p.focus)


class LiftStep(PassStep):
    """The one-step lifting of Invalid guards (:func:`lift_pass`)."""

    name = "lift"

    def run(self, p: PassData) -> None:
        for r in p.kinds.get("lift", []):
            lift_pass(p.snap, p.ins, p.best, p.state, r.name, p.union, p.focus)


class ContextStep(PassStep):
    """Guarded copies for ``where(c, x, Invalid)`` (:func:`context_pass`)."""

    name = "context"

    def run(self, p: PassData) -> None:
        if "Where" not in p.ctors and not p.state.contexts:
            return  # (no where-node to open a context, none to close)
        for r in p.kinds.get("context", []):
            context_pass(p.snap, p.ins, p.best, p.cost, p.lins, p.ctx, p.state, r.name,
                         p.union, p.focus, p.weights)


class EmatchStep(PassStep):
    """The rules written in Python, or not native, matched on every e-node of the
    classes in focus (:func:`ematch_pass`), in the rules' order."""

    name = "ematch"

    def run(self, p: PassData) -> None:
        ematched = p.by_kind.ematched
        if ematched:
            # the ops of a class the last pass read are the same unless it changed
            ops_of = p.state.class_ops
            if ops_of:
                for c in p.changed.intersection(ops_of):
                    del ops_of[c]
            ematch_pass(p.snap, p.ins, p.best, p.focus, ematched, p.union, p.deadline,
                        ops_of)


class DivmodStep(PassStep):
    """The div/mod core's rules on every index ``idiv``/``mod`` e-node of a class in
    focus (waiting, or with a dirty operand), for every linear form of its dividend; a
    class off focus is deferred."""

    name = "divmod"

    def run(self, p: PassData) -> None:
        plans = p.by_kind.plans
        if not plans or p.ctors.isdisjoint(_DIVMOD):
            return
        waiting, dirty, deferred = p.waiting, p.dirty, p.deferred
        lins, ctx, done, union = p.lins, p.ctx, p.state.done, p.union
        all_def, bkey, late = p.all_def, p.bkey, p.late
        near, reached = p.near, p.reached  # (visited: as PassData.focus)
        for n in nodes_of(p.snap, _DIVMOD):
            if n.subsumed or n.fields[0] != "index":
                continue
            cls, xc, yc = n.cls, n.fields[1], n.fields[2]
            if cls not in waiting and xc not in dirty and yc not in dirty:
                continue
            if cls not in near and cls in reached:
                deferred.add(cls)  # (its div/mod rules run when it is near a root)
                continue
            sel = cls in p.selects
            if cls in p.free and not sel:
                continue
            if late():
                p.res.skipped += 1
                continue
            op = "idiv" if n.ctor == "Idiv" else "mod"
            plan = plans[op]
            y = lins.get(yc)
            forms = lins.forms(xc)
            if not all_def(y):
                continue  # a rule may drop an atom: never drop a possible Invalid
            by = bkey(y)
            for x in forms:
                if not all_def(x):
                    continue
                key = ("dm", cls, op, x, y, bkey(x), by)
                if key in done:
                    continue
                done.add(key)
                for name, t in _apply(plan, op, x, y, ctx):
                    if not (sel and _has_division(t)):
                        union(cls, t, name)


#: the steps of a pass, in order (each one family of rules; see their docstrings)
PASS_STEPS = (SumStep(), FoldStep(), AndStep(), CmpStep(), LiftStep(), ContextStep(),
              EmatchStep(), DivmodStep())
