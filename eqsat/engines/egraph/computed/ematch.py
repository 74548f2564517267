"""The rules written in Python, matched against the e-graph: :func:`ematch_pass`.

A rule the e-graph cannot run as native egglog rules (:func:`rules.computed.ematched`,
each with its reason) is a baseline :class:`~eqsat.ir.pattern.Rule`: a ``UPat``, a guard
and a builder over UOps. Its pattern is matched here against every e-node of the classes
a pass visits, and each operand the pattern names an op of against every e-node of the
operand's class (e-matching); an operand the pattern leaves open (a variable) is read as
its class's cheapest term. Each match is one UOp, on which the rule runs as in the
ordered matcher; its result is unioned into the class. A rule is tried on an e-node
only when, in some order of its sources, each source class holds an e-node of an op
the pattern names for that place (:func:`admits`): no UOp is built for the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from eqsat.engines.egraph.analyses import INT_DTYPES
from eqsat.engines.egraph.computed.state import RulesMemo
from eqsat.engines.egraph.computed.terms import Term
from eqsat.engines.egraph.encoding import Inserter, Snapshot, decode_node
from eqsat.ir.pattern import UPat
from eqsat.ir.uop import UOp
from rules.computed import PyRule

__all__ = ["ematch_pass", "MAX_MATCHES"]

#: matches of one rule's pattern at one e-node at most (the operands' classes may hold
#: many e-nodes each; the first ones, in the snapshot's order, are tried)
MAX_MATCHES = 16


#: an e-node's op by value (None: no IR op), by its constructor and first field, which
#: fix it (``Node.op``); filled as e-nodes are met (constructors by op or dtype names)
_OP_VALUE: dict[tuple[str, Any], int | None] = {}


class _Matcher:
    """E-matching of ``UPat``s over one snapshot: UOps for the matched e-nodes (their
    open operands as their classes' cheapest terms), memoized for the pass."""

    def __init__(self, snap: Snapshot, ins: Inserter, best: dict[int, int],
                 ops_of: dict[int, frozenset[int]] | None = None):
        self.snap, self.ins, self.best = snap, ins, best
        self.terms: dict[int, UOp | None] = {}
        self.decoded: dict[int, Any] = {}
        #: class -> :meth:`class_ops` (given: what earlier passes found of the classes
        #: that did not change since)
        self.ops_of: dict[int, frozenset[int]] = {} if ops_of is None else ops_of
        # (class, id of a source pattern) -> options(): the patterns are the rules',
        # alive for the pass
        self.opts: dict[tuple[int, int], list[UOp]] = {}

    def decode(self, i: int) -> Any:
        d = self.decoded.get(i, self)
        if d is self:
            d = self.decoded[i] = decode_node(self.snap.nodes[i], self.ins.args, self.snap)
        return d

    def term(self, c: int) -> UOp | None:
        """The cheapest term of class ``c`` as a UOp (None when it has none)."""
        if c in self.terms:
            return self.terms[c]
        self.terms[c] = None  # cycle guard (best terms are acyclic)
        i = self.best.get(c)
        if i is None:
            return None
        dec = self.decode(i)
        if dec is None:
            return None
        kids = list(map(self.term, dec[3]))
        for k in kids:  # (a loop: no generator per term)
            if k is None:
                return None
        try:
            self.terms[c] = UOp(dec[0], dec[1], tuple(kids), dec[2])
        except Exception:  # an e-node the IR refuses: no term
            self.terms[c] = None
        return self.terms[c]

    def class_ops(self, c: int) -> frozenset[int]:
        """The ops (by value) of the e-nodes of class ``c``."""
        hit = self.ops_of.get(c)
        if hit is None:
            out = set()
            nodes = self.snap.nodes
            for i in self.snap.classes.get(c, ()):
                n = nodes[i]
                if not n.subsumed:
                    fields = n.fields
                    key = (n.ctor, fields[0] if fields else None)
                    v = _OP_VALUE.get(key, -1)
                    if v == -1:
                        op = n.op
                        v = _OP_VALUE[key] = None if op is None else op._value_
                    if v is not None:
                        out.add(v)
            hit = self.ops_of[c] = frozenset(out)
        return hit

    def options(self, c: int, q: UPat) -> list[UOp]:
        """The UOps class ``c``'s e-nodes stand for under the source pattern ``q`` (one
        that names ops): those of its e-nodes of those ops, in the snapshot's order,
        until :data:`MAX_MATCHES` are found. They depend on the class and the pattern
        only, so they are found once per pass: a large class (a constant's, holding many
        divisions that came to it) under many e-nodes is not scanned again for each."""
        key = (c, id(q))
        hit = self.opts.get(key)
        if hit is None:
            hit = self.opts[key] = []
            # (a tuple: ``in`` finds an op by identity, with no Python-level Enum hash)
            nodes, ops = self.snap.nodes, tuple(q.ops)
            for i in self.snap.classes.get(c, ()):
                m = nodes[i]
                if m.subsumed or m.op not in ops:
                    continue
                hit.extend(self.node_uops(i, q))
                if len(hit) >= MAX_MATCHES:
                    break
        return hit

    def node_uops(self, i: int, p: UPat) -> Iterator[UOp]:
        """The UOps e-node ``i`` stands for under pattern ``p``: its sources matched
        against ``p``'s source patterns (e-matching), or its classes' cheapest terms."""
        dec = self.decode(i)
        if dec is None:
            return
        op, dt, arg, kids = dec
        if p.src is None:
            srcs = list(map(self.term, kids))
            for s in srcs:  # (a loop: no generator per call)
                if s is None:
                    return
            yield UOp(op, dt, tuple(srcs), arg)
            return
        if p.any_len and len(p.src) == 1:
            pats = (p.src[0],) * len(kids)
        elif len(kids) == len(p.src) or (p.any_len and len(kids) >= len(p.src)):
            pats = p.src + (None,) * (len(kids) - len(p.src))
        else:
            return
        orders = [pats]
        if p.commutative and len(pats) == 2:
            orders.append(pats[::-1])
        n = 0
        for ps in orders:
            for srcs in self._sources(ps, kids):
                try:
                    yield UOp(op, dt, tuple(srcs), arg)
                except Exception:
                    continue
                n += 1
                if n >= MAX_MATCHES:
                    return

    def _sources(self, pats: tuple[UPat | None, ...], kids: tuple[int, ...]
                 ) -> Iterator[list[UOp]]:
        """Every choice of UOps for the sources ``kids`` under their patterns."""
        choices: list[list[UOp]] = []
        for q, k in zip(pats, kids, strict=True):
            if q is None or q.ops is None:
                t = self.term(k)
                if t is None:
                    return
                choices.append([t])
                continue
            opts = self.options(k, q)
            if not opts:
                return
            choices.append(opts)
        yield from _product(choices)


def _product(choices: list[list[UOp]]) -> Iterator[list[UOp]]:
    n = 0
    idx = [0] * len(choices)
    if not all(choices):  # (an empty choice: no product)
        return
    while True:
        yield [c[i] for c, i in zip(choices, idx, strict=True)]
        n += 1
        if n >= MAX_MATCHES:
            return
        for j in range(len(choices) - 1, -1, -1):
            idx[j] += 1
            if idx[j] < len(choices[j]):
                break
            idx[j] = 0
        else:
            return


def _build_index(rules: list[PyRule]) -> tuple:
    """``(by_op, any_op, places, cands, fits)``: the rules by the op their pattern names
    (None: any), each rule's :func:`source_places` by id, the memo of the candidate
    rules per ``(ctor, field, dtype)`` of an e-node and the memo of those a node's
    sources admit per that key and its sources' classes' ops (both filled as the passes
    meet them)."""
    by_op: dict[Any, list[PyRule]] = {}
    for r in rules:
        for op in (r.rule.pattern.ops or [None]):
            by_op.setdefault(op, []).append(r)
    any_op = by_op.pop(None, [])
    places = {id(r): source_places(r.rule.pattern) for r in rules}
    return (by_op, any_op, places, {}, {})


#: :func:`_build_index` of a rule list, once per list for every run of the process
_index = RulesMemo(_build_index)

#: entries of the memo of admitted rules at most (a new key past it is not kept: the
#: keys are op sets, few in practice, but nothing bounds them)
_FITS_CAP = 4096


def ematch_pass(snap: Snapshot, ins: Inserter, best: dict[int, int], dirty: set[int],
                rules: list[PyRule], union: Callable[[int, Term, str], Any],
                deadline: float | None, ops_of: dict[int, frozenset[int]] | None = None
                ) -> None:
    """Apply the rules written in Python (see the module docstring) to the e-nodes of the
    ``dirty`` classes. ``ops_of``: the classes' ops (:meth:`_Matcher.class_ops`) known
    already, of classes whose e-nodes are the snapshot's; filled as the pass reads more."""
    by_op, any_op, places, cands, fits = _index(rules)
    m = _Matcher(snap, ins, best, ops_of)
    class_ops, ops_of = m.class_ops, m.ops_of
    nodes, classes, clock = snap.nodes, snap.classes, time.perf_counter
    for c in sorted(dirty):
        if deadline is not None and clock() > deadline:
            return
        for i in classes.get(c, ()):
            n = nodes[i]
            if n.subsumed:
                continue
            ck = (n.ctor, n.fields[0] if n.fields else None, n.dtype)  # fixes op, dtype
            cand = cands.get(ck)
            if cand is None:  # the op's rules (integer nodes: no "ematch_nonint" rule)
                is_int = n.dtype in INT_DTYPES
                cand = cands[ck] = [r for r in by_op.get(n.op, []) + any_op
                                    if not (is_int and r.kind == "ematch_nonint")]
            if not cand:
                continue
            if n.ctor == "GL":  # (its sources: its list's items)
                dec = m.decode(i)
                if dec is None:
                    continue
                kids = dec[3]
            else:
                kids = n.kids  # (what decode gives as the sources)
            # the rules whose pattern's sources the sources' classes can match, place
            # by place (a source pattern whose ops no e-node of its class has matches
            # nothing: no UOp is built for it)
            kid_ops = []  # (a loop, not map: a known class is one lookup, no call)
            for k in kids:
                o = ops_of.get(k)
                kid_ops.append(class_ops(k) if o is None else o)
            key = (ck, tuple(kid_ops))
            fit = fits.get(key)
            if fit is None:
                fit = [r for r in cand if admits(places[id(r)], key[1])]
                if len(fits) < _FITS_CAP:
                    fits[key] = fit
            if not fit or m.decode(i) is None:
                continue
            for r in fit:
                for u in m.node_uops(i, r.rule.pattern):
                    try:
                        out = r.rule.apply(u)
                    except Exception:  # a rule that cannot handle this node: no rewrite
                        continue
                    if out is not None and out is not u:
                        union(c, ins.add_uop_with_facts(out), r.name)


#: what :func:`source_places` gives a pattern: None (its sources name no op), or
#: ``(n, any_len, each, orders)``: the number of its source patterns, whether it takes
#: more sources than that, whether one pattern stands for every source (``each``:
#: then ``orders`` holds its ops alone), and the orders its sources may take (the
#: second for a commutative pair), each ``((place, ops by value), ...)``
Places = tuple[int, bool, bool, tuple[tuple[tuple[int, frozenset[int]], ...], ...]] | None


def source_places(p: Any) -> Places:
    """The ops each source place of pattern ``p`` needs (see :data:`Places`), as
    :meth:`_Matcher.node_uops` matches the sources."""
    src = getattr(p, "src", None)
    if src is None:
        return None
    if p.any_len and len(src) == 1:
        q = src[0]
        if q.ops is None:
            return None
        return (1, True, True, (((0, frozenset(o._value_ for o in q.ops)),),))
    order = tuple((j, frozenset(o._value_ for o in q.ops))
                  for j, q in enumerate(src) if q.ops is not None)
    orders = [order]
    if p.commutative and len(src) == 2:
        orders.append(tuple((1 - j, ops) for j, ops in order))
    return (len(src), bool(p.any_len), False, tuple(orders))


def admits(places: Places, kid_ops: tuple[frozenset[int], ...]) -> bool:
    """Whether a node whose sources' classes have the ops ``kid_ops`` (in order) may
    match a pattern of :func:`source_places` ``places``: False only when
    :meth:`_Matcher.node_uops` yields nothing for it (a count of sources the pattern
    does not take, or in each order a place whose class has none of the ops its
    pattern names: no e-node there to match)."""
    if places is None:
        return True
    n, any_len, each, orders = places
    if each:
        ops = orders[0][0][1]
        return all(not ops.isdisjoint(k) for k in kid_ops)
    nk = len(kid_ops)
    if nk != n and not (any_len and nk > n):
        return False
    # (the commuted order only for a pair: node_uops commutes two sources alone)
    for order in (orders if nk == 2 else orders[:1]):
        for j, ops in order:
            if ops.isdisjoint(kid_ops[j]):
                break
        else:
            return True
    return False
