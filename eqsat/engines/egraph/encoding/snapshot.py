"""Reading the e-graph back: a :class:`Snapshot` is the whole e-graph as Python data
(:class:`Node` e-nodes named by handle, the interval analysis), reusing the last
snapshot's results for rows that did not change (see :mod:`..encoding`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter, eq, indexOf, itemgetter
from sys import intern
from typing import Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.encoding.inserter import Inserter
from eqsat.engines.egraph.encoding.schema import (
    CTOR_OP,
    CTORS,
    SUBSUMABLE,
    ArgTable,
    dtype_of,
)
from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.uop import const_value

__all__ = ["E_POS", "Node", "Snapshot", "align_rows", "defined_classes", "decode_node",
           "none_indices"]


#: constructor -> the positions of its e-class (``E``) fields, its children
E_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "E") for name, sig in CTORS.items()}


#: constructor -> the positions of its String / i64 fields
_S_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "S") for name, sig in CTORS.items()}
_I_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "I") for name, sig in CTORS.items()}
_FIRST = itemgetter(0)
_ROW_OF = attrgetter("row")
_NONE: frozenset[int] = frozenset()


#: how many rows of the last snapshot a row is compared with past a mismatch
#: (rows the e-graph deleted in between: see :func:`align_rows`)
_LOOKAHEAD = 8


def _aligned(rows: list, last: list) -> Iterator[tuple[int, int, int]]:
    """The walk of :func:`align_rows`, as runs ``(i, j, n)``: ``rows[i:i + n]`` equals
    ``last[j:j + n]`` row for row, ascending in ``i`` and ``j`` (a row no run covers
    is new)."""
    n, on = len(rows), len(last)
    i = j = 0
    while i < n and j < on:
        # the run of equal rows from (i, j), compared in C: up to the first unequal
        # pair, else to the end of the shorter list
        ri, li = iter(rows), iter(last)
        ri.__setstate__(i)
        li.__setstate__(j)
        try:
            run = indexOf(map(eq, ri, li), False)
        except ValueError:
            run = min(n - i, on - j)
        if run:
            yield i, j, run
            i += run
            j += run
            if i >= n or j >= on:
                break
        r = rows[i]
        stop = min(on, j + 1 + _LOOKAHEAD)
        k = j + 1
        while k < stop:
            if r == last[k]:
                break
            k += 1
        if k < stop:
            yield i, k, 1
            j = k + 1
        i += 1


def align_rows(rows: list, last: list) -> list[int]:
    """For each of a function's rows (``FrozenRow``, which compare in Rust), the index of
    the equal row of the last snapshot, or -1. egglog keeps a table's rows in order,
    deletes rows in place and adds rows at the end (a row a merge rewrites is deleted
    and added again): walking both lists, a row that differs from the last snapshot's
    row at the same step is compared with the next :data:`_LOOKAHEAD` ones (the deleted
    rows are skipped), else it is new. On the corpus this finds every row of the last
    snapshot that is still there; comparing by place alone finds two thirds of them."""
    src = [-1] * len(rows)
    for i, j, m in _aligned(rows, last):
        src[i:i + m] = range(j, j + m)
    return src


def none_indices(lst: list) -> list[int]:
    """The indices of the ``None`` items of ``lst``, ascending (found in C)."""
    found: list[int] = []
    index = lst.index
    i = -1
    try:
        while True:
            i = index(None, i + 1)
            found.append(i)
    except ValueError:
        return found


def _unchanged(last: tuple[list, list] | None, rows: list, stale: set[int] | frozenset[int],
               kind: str = "") -> tuple[list, list[int]]:
    """For one function's rows (``FrozenRow``): the results the last snapshot had for
    the rows it had too (see :func:`align_rows`), None for the others and for the results
    that name a class in ``stale``; and the indices of the None ones. ``last``: that
    snapshot's ``(rows, results)``; ``kind``: what a result is, a ``"node"`` (Node), a
    ``"pair"`` (class, value) or a ``"class"``. (A run of rows equal to the last
    snapshot's takes its results as one slice.)"""
    n = len(rows)
    if last is None:
        return [None] * n, list(range(n))
    old = last[1]
    res: list = [None] * n
    for i, j, m in _aligned(rows, last[0]):
        res[i:i + m] = old[j:j + m]
    if stale:
        if kind == "node":
            res = [t if t is not None and t.cls not in stale and stale.isdisjoint(t.kids)
                   else None for t in res]
        elif kind == "pair":
            res = [t if t is not None and t[0] not in stale else None for t in res]
        elif kind == "class":
            res = [t if t not in stale else None for t in res]
    return res, none_indices(res)


#: constructor -> the position of its dtype field (-1: none, a list cell)
_DTYPE_POS: dict[str, int] = {
    name: (0 if name == "Cst" or name in CTOR_OP else -1 if name in ("Cons", "Nil") else 1)
    for name in CTORS}


class Node:
    """One e-node of a snapshot: its class, constructor, fields (children as classes).

    ``kids`` are the child classes (a GL's list not flattened), ``dtype`` the
    dtype name (None for list cells), ``row`` the tuple ``(cls, ctor, fields,
    subsumed)`` (the snapshot's sort key).
    """

    __slots__ = ("cls", "ctor", "fields", "subsumed", "kids", "dtype", "row")

    def __init__(self, cls: int, ctor: str, fields: tuple, subsumed: bool = False):
        self.cls = cls
        self.ctor = ctor
        self.fields = fields
        self.subsumed = subsumed
        pos = E_POS[ctor]
        self.kids = tuple(map(fields.__getitem__, pos))
        d = _DTYPE_POS[ctor]
        self.dtype = None if d < 0 else fields[d]
        self.row = (cls, ctor, fields, subsumed)

    @property
    def op(self) -> Ops | None:
        """The IR op (None for Cons/Nil and engine-internal leaves)."""
        c = self.ctor
        if c == "Cst":
            return _CONST
        op = CTOR_OP.get(c)
        if op is not None or c == "Cons" or c == "Nil":
            return op
        return _OP_OF_NAME.get(self.fields[0])

    @property
    def is_loop(self) -> bool:
        """A RANGE or SPECIAL: a loop index, whose end names the loop."""
        return self.ctor == "G1" and self.fields[0] in ("RANGE", "SPECIAL")

    def __repr__(self) -> str:
        return f"Node({self.cls}, {self.ctor!r}, {self.fields!r}{', subsumed' * self.subsumed})"


def _by_handle(table: dict[Any, int], cls_of: dict[Any, int]) -> dict[int, int]:
    """A bound table by value as one by class (a value no handle names left out)."""
    out = dict(zip(map(cls_of.get, table), table.values(), strict=True))
    out.pop(None, None)  # type: ignore[call-overload]
    return out


def _trim(cache: dict[tuple, Node], nodes: int) -> None:
    """Empty the snapshots' Node cache once it holds far more rows than the e-graph
    (rows of classes gone since)."""
    if len(cache) > 4 * nodes + 4096:
        cache.clear()


def _kids_getter(pos: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """A function from an e-node's fields to its child classes (the fields at ``pos``)."""
    if not pos:
        return lambda fields: ()
    if len(pos) == 1:
        p = pos[0]
        return lambda fields: (fields[p],)
    return itemgetter(*pos)


#: constructor -> its e-nodes' children from their fields (:attr:`Node.kids`)
_KIDS_OF: dict[str, Callable[[tuple], tuple]] = {
    name: _kids_getter(pos) for name, pos in E_POS.items()}
_NEW_NODE = Node.__new__


def _node_of(row: tuple) -> Node:
    """``Node(*row)`` for a row ``(cls, ctor, fields, subsumed)`` (the same tuple as its
    ``row``), without the call's argument handling (a snapshot makes thousands)."""
    n = _NEW_NODE(Node)
    n.cls, ctor, fields, n.subsumed = row
    n.ctor = ctor
    n.fields = fields
    n.kids = _KIDS_OF[ctor](fields)
    d = _DTYPE_POS[ctor]
    n.dtype = None if d < 0 else fields[d]
    n.row = row
    return n


class Snapshot:
    """The whole e-graph as Python data, read with ``EGraph.freeze()``.

    ``nodes``: every constructor e-node (classes named by handle); ``classes``:
    class -> indices into ``nodes``; ``lo``/``hi``: the interval analysis;
    ``new_handles``: how many classes got a handle during this read (their
    rows were recorded in ``inserter``; flush it to make egglog know them).
    """

    def __init__(self, egraph: bindings.EGraph, inserter: Inserter) -> None:
        funcs = egraph.freeze().functions
        # A row equal to the last snapshot's row at the same place (see _unchanged)
        # keeps its result: an (H k) row always, any other row unless it names a class
        # whose egglog value now has another handle or is gone (``stale``)
        reads = inserter.reads
        fresh: dict[str, tuple[list, list]] = {}
        cls_of, self._handle_val = _read_handles(egraph, funcs, reads.get("H"), fresh)
        last = inserter.read_classes
        if last is None:
            reads = {}
        stale = _NONE if last is None else {k for _, k in last.items() - cls_of.items()}
        nodes, raw, csts, made = _read_nodes(egraph, funcs, reads, stale, cls_of,
                                             inserter.node_cache, fresh)
        # classes without a handle (made by egglog's rewrites): handles bottom-up
        self.new_handles = _name_new_classes(raw, cls_of, inserter, nodes, csts, made)
        # sorted: the nodes' order is part of the result ((class, ctor, fields) is unique)
        nodes.sort(key=_ROW_OF)
        _trim(inserter.node_cache, len(nodes))
        self._index(nodes, csts)
        self.cls_of = cls_of
        self.lo, self.hi, known = _read_bounds(egraph, funcs, reads, stale, cls_of, fresh)
        inserter.reads = fresh
        inserter.read_classes = cls_of
        self._finish(known, made, inserter)

    @classmethod
    def of_rows(cls, rows: list[tuple], named: set[int], handle_val: dict[int, Any],
                lo: dict[Any, int], hi: dict[Any, int], known: Iterable[Any],
                inserter: Inserter) -> Snapshot:
        """The snapshot of an e-graph known without reading egglog (a step computed in
        Python, :mod:`..pystep`), as a read from egglog makes it: ``rows`` are its
        e-nodes ``(class, ctor, fields, subsumed)`` with classes as values of the
        caller's, ``named`` the values that are handles (each its class's smallest),
        ``handle_val`` gives each handle's value, ``lo``/``hi``/``known`` the bounds
        and the ``Def`` classes by value; every child class of a row is some row's
        class. The classes without a handle get one (recorded in ``inserter``, as are
        the facts and subsumptions a read records); a row whose classes all are
        handles is its Node's row as it is."""
        self = cls.__new__(cls)
        nodes: list[Node] = []
        made: list[Node] = []  # (the Nodes no earlier snapshot of the run made)
        raw: list[tuple[str, Any, list, bool]] = []
        cls_of = dict(zip(named, named, strict=True))
        cache = inserter.node_cache
        if not named.issuperset(map(_FIRST, rows)):  # (else every child class is named)
            has, kids_of, ready = named.__contains__, _KIDS_OF, []
            for row in rows:
                v, ctor, fields, sub = row
                if v not in named or not all(map(has, kids_of[ctor](fields))):
                    raw.append((ctor, v, list(fields), sub))
                else:
                    ready.append(row)
            rows = ready
        for row in rows:
            n = cache.get(row)
            if n is None:
                n = cache[row] = _node_of(row)
                made.append(n)
            nodes.append(n)
        csts = [n for n in nodes if n.ctor == "Cst"]
        self.new_handles = _name_new_classes(raw, cls_of, inserter, nodes, csts, made)
        nodes.sort(key=_ROW_OF)
        _trim(cache, len(nodes))
        self._index(nodes, csts)
        self.cls_of, self._handle_val = cls_of, handle_val
        self.lo, self.hi = _by_handle(lo, cls_of), _by_handle(hi, cls_of)
        inserter.reads = {}
        inserter.read_classes = None
        defined = set(map(cls_of.get, known))
        defined.discard(None)  # type: ignore[arg-type]
        self._finish(defined, made, inserter)
        return self

    def _finish(self, known: set[int], made: list[Node], inserter: Inserter) -> None:
        """The classes never Invalid (recorded for the native rules' guards where the
        e-graph does not know them), the subsumptions of :meth:`_subsume_loops`
        (``made``: the e-nodes this read made), the figures."""
        self.defined = defined_classes(self.nodes, known, self.classes)
        for c in sorted(self.defined - known):  # for the native rules' guards
            inserter.fact("RDef", (c,))
        self._subsume_loops(made, inserter)
        self.enodes = len(self.nodes)
        #: class -> height of its cheapest term (filled by the computed pass for the
        #: classes it asks about: ``computed.pricing.BestHeights``)
        self.height: dict[int, int] = {}
        #: class -> tree cost of its cheapest term under the run's cost model (filled by
        #: the computed pass; the engine's stall check reads the roots' entries)
        self.best_cost: dict[int, float] = {}

    def _index(self, nodes: list[Node], csts: list[Node]) -> None:
        """``nodes`` (sorted by row) by class, the classes' constants and dtypes."""
        rows4 = list(map(_ROW_OF, nodes))
        classes: dict[int, list[int]] = {}
        #: class -> the value of its Cst e-node; class -> its dtype name (that of its
        #: first e-node with one: all but list cells)
        csts.sort(key=_ROW_OF)
        self.consts: dict[int, int] = {n.cls: n.fields[1] for n in csts}
        self.dtypes: dict[int, str] = {}
        dtypes_ = self.dtypes
        prev = -1  # the rows are sorted by class: each class is one run
        lst: list[int] = []
        need_dt = False
        for i, c in enumerate(map(_FIRST, rows4)):
            if c != prev:
                prev = c
                lst = classes[c] = [i]
                dt = nodes[i].dtype
                if dt is None:
                    need_dt = True
                else:
                    dtypes_[c] = dt
                    need_dt = False
            else:
                lst.append(i)
                if need_dt:
                    dt = nodes[i].dtype
                    if dt is not None:
                        dtypes_[c] = dt
                        need_dt = False
        self.nodes = nodes
        #: ``(class, ctor, fields, subsumed)`` of every e-node, in the order of ``nodes``
        self.rows = rows4
        self.classes = classes

    def _subsume_loops(self, made: list[Node], inserter: Inserter) -> None:
        """Record the subsumption of the e-nodes that only feed the rules (below)."""
        nodes, classes = self.nodes, self.classes
        # an e-node with its own class among its children (x == f(x, k): 0 == 0 // 3,
        # x == x + 0) is subsumed: no finite term goes through it, and matching it only
        # makes more such e-nodes, each step more: (0 // 3) // 3 -> 0 // 9, then every
        # product of the divisors, each pair of them a match of the same pattern
        # (an e-node is looked at when its Node is made: a row that changes, e.g. when
        # its class or a child's merges into another, makes a new Node)
        for n in made:
            if not n.subsumed and n.cls in n.kids and n.ctor in SUBSUMABLE:
                inserter.subsume(n.ctor, n.fields)
        # the operator e-nodes of a class that holds a constant are subsumed too: the
        # class is that constant (a Cst is never Invalid), and its other e-nodes only
        # feed the rules, which then pile up more of them (x // 7 == 0 for x < 7 puts
        # every x // k, k >= 7, into the class of 0; (x // b) // c -> x // (b*c) matched
        # them pairwise: 11.7 million matches in one step of a chunk of random index
        # expressions)
        seen = inserter.const_classes
        new_consts = [c for c in self.consts if c not in seen]
        seen.update(new_consts)
        check = {id(n): n for n in made if n.cls in self.consts}
        for c in new_consts:
            for i in classes[c]:
                check[id(nodes[i])] = nodes[i]
        for n in check.values():
            if not n.subsumed and n.ctor in CTOR_OP and n.cls not in n.kids:
                inserter.subsume(n.ctor, n.fields)

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<Snapshot {len(self.classes)} classes, {len(self.nodes)} e-nodes>"

    def cls_of_handle(self, k: int) -> int:
        """The class (its smallest handle) that handle ``k`` belongs to."""
        v = self._handle_val.get(k)
        if v is None:
            raise KeyError(f"handle {k} is not in the e-graph")
        return self.cls_of[v]

    def class_nodes(self, c: int) -> Iterator[Node]:
        for i in self.classes.get(c, ()):
            yield self.nodes[i]

    def reached(self, roots: Iterable[int]) -> set[int]:
        """The classes ``roots`` reach through any e-node (subsumed ones and list cells
        too), the roots included."""
        nodes, classes = self.nodes, self.classes
        seen = set(roots)
        stack = list(seen)
        while stack:
            for i in classes.get(stack.pop(), ()):
                for k in nodes[i].kids:
                    if k not in seen:
                        seen.add(k)
                        stack.append(k)
        return seen

    def bounds(self, c: int) -> tuple[float, float]:
        return (self.lo.get(c, -math.inf), self.hi.get(c, math.inf))

    def const_of(self, c: int) -> int | None:
        """The integer constant of class ``c`` (a Cst e-node in it), else None."""
        v = self.consts.get(c)
        if v is not None:
            return v
        lo, hi = self.lo.get(c), self.hi.get(c)
        if lo is not None and lo == hi:
            return lo
        return None

    def list_items(self, c: int) -> list[int]:
        """The classes of a Cons list (GL's children), in order."""
        out = []
        seen = set()
        while c not in seen:
            seen.add(c)
            cons = [n for n in self.class_nodes(c) if n.ctor == "Cons"]
            if not cons:
                break
            out.append(cons[0].fields[0])
            c = cons[0].fields[1]
        return out


def _read_handles(egraph: bindings.EGraph, funcs: Any, last_rows: tuple[list, list] | None,
                  fresh: dict[str, tuple[list, list]]) -> tuple[dict[Any, int], dict[int, Any]]:
    """The handles' rows: egglog value -> its class (its smallest handle), and handle ->
    egglog value; ``last_rows``: the last snapshot's (rows, results) of ``H``."""
    to_i64 = egraph.value_to_i64
    hrows = funcs["H"].rows
    if last_rows is None:  # (a comprehension: the fast way to read every row)
        hres = [(to_i64(r.inputs[0]), r.output) for r in hrows]
    else:
        hres, todo = _unchanged(last_rows, hrows, _NONE)
        for i in todo:
            r = hrows[i]
            hres[i] = (to_i64(r.inputs[0]), r.output)
    fresh["H"] = (hrows, hres)
    handle_val: dict[int, Any] = dict(hres)
    cls_of: dict[Any, int] = {}  # a class is named by its smallest handle
    first = cls_of.setdefault
    for k, o in hres:
        if first(o, k) > k:
            cls_of[o] = k
    return cls_of, handle_val


def _read_nodes(egraph: bindings.EGraph, funcs: Any, reads: dict[str, tuple[list, list]],
                stale: set[int] | frozenset[int], cls_of: dict[Any, int],
                cache: dict[tuple, Node], fresh: dict[str, tuple[list, list]]
                ) -> tuple[list[Node], list[tuple[str, Any, list, bool]], list[Node],
                           list[Node]]:
    """Every constructor's rows as Nodes: ``(nodes, raw, csts, made)`` (see below)."""
    to_i64, to_string = egraph.value_to_i64, egraph.value_to_string
    strs: dict[Any, str] = {}
    sget = strs.get
    # every row becomes a Node (class, ctor, fields, subsumed) with its classes named
    # by handle; a row whose class or a child's has no handle yet waits in `raw` as
    # (ctor, output, fields with classes still as egglog values, subsumed). Node
    # objects are immutable: the previous snapshots' are reused (``cache``)
    cget = cache.get
    new_node, node_of = _NEW_NODE, _node_of
    nodes: list[Node] = []
    raw: list[tuple[str, Any, list, bool]] = []
    csts: list[Node] = []  # the Cst e-nodes
    made: list[Node] = []  # the Node objects made by this read (not cached before)
    get = cls_of.get
    for name, sig in CTORS.items():
        f = funcs.get(name)
        if f is None:
            continue
        rows = f.rows
        if not rows:
            continue
        res, todo = _unchanged(reads.get(name), rows, stale, "node")
        if not todo:
            pass
        elif sig == "SEE":  # binary ALU nodes, the common case
            for i in todo:
                r = rows[i]
                a = r.inputs
                o = r.output
                c, x, y = get(o), get(a[1]), get(a[2])
                v = a[0]
                d = sget(v)
                if d is None:
                    d = strs[v] = intern(to_string(v))
                if c is None or x is None or y is None:
                    a[0] = d
                    raw.append((name, o, a, r.subsumed))
                else:
                    t = (c, name, (d, x, y), r.subsumed)
                    n = cget(t)
                    if n is None:  # (_node_of(t), its fields known here)
                        n = cache[t] = new_node(Node)
                        n.cls, n.ctor, n.fields, n.subsumed, n.kids, n.dtype, n.row = \
                            c, name, t[2], t[3], (x, y), d, t
                        made.append(n)
                    res[i] = n
        else:
            s_pos, i_pos, pos = _S_POS[name], _I_POS[name], E_POS[name]
            for i in todo:
                r = rows[i]
                a = r.inputs
                for j in s_pos:
                    v = a[j]
                    d = sget(v)
                    if d is None:
                        d = strs[v] = intern(to_string(v))
                    a[j] = d
                for j in i_pos:
                    a[j] = to_i64(a[j])
                o = r.output
                c = get(o)
                if c is not None and pos:
                    vals = list(a)
                    for j in pos:
                        k = get(a[j])
                        if k is None:
                            c = None
                            break
                        vals[j] = k
                    else:
                        a = vals
                if c is None:
                    raw.append((name, o, a, r.subsumed))
                else:
                    t = (c, name, tuple(a), r.subsumed)
                    n = cget(t)
                    if n is None:
                        n = cache[t] = node_of(t)
                        made.append(n)
                    res[i] = n
        fresh[name] = (rows, res)
        if name == "Cst":
            csts = [n for n in res if n is not None]
        nodes += filter(None, res)
    return nodes, raw, csts, made


def _name_new_classes(raw: list[tuple[str, Any, list, bool]], cls_of: dict[Any, int],
                      inserter: Inserter, nodes: list[Node], csts: list[Node],
                      made: list[Node]) -> int:
    """Give the classes of ``raw``'s rows handles (bottom-up, recorded in
    ``inserter``) and add those rows' Nodes to ``nodes`` (``csts``, ``made``); how many
    classes got a handle."""
    if not raw:  # (every class has a handle: most snapshots)
        return 0
    get = cls_of.get
    cache = inserter.node_cache
    cget = cache.get
    node_of = _node_of
    new_handles = 0
    todo_raw = [x for x in raw if x[1] not in cls_of]
    while todo_raw:
        ready, rest = [], []
        for x in todo_raw:
            if x[1] in cls_of:
                continue
            if all(x[2][i] in cls_of for i in E_POS[x[0]]):
                ready.append(x)
            else:
                rest.append(x)
        if not ready:
            # e-nodes left without a finite term: no term can be built of them (a
            # class reachable only through a cycle, or a row egglog 13.2 leaves with a
            # child class that has no e-node at all, after `(Add x x) -> (Mul x 2)`
            # matched a class holding `x + x` of itself: x == 0). The snapshot leaves
            # them out, as the extraction could not use them anyway
            break
        keyed = []
        for x in ready:
            sig = CTORS[x[0]]
            fields = tuple(cls_of[v] if ch == "E" else v
                           for v, ch in zip(x[2], sig, strict=True))
            keyed.append(((x[0], fields), x))
        # (in the order of the (ctor, fields) tuples: a constructor's fields have one
        # type each place, a string, an i64 or a class, so two compare place by
        # place without a type clash)
        keyed.sort(key=_FIRST)
        for (ctor, fields), x in keyed:
            if x[1] in cls_of:
                continue
            k = inserter.new_handle()
            cls_of[x[1]] = k
            inserter.node_with_handle(k, ctor, *fields)
            new_handles += 1
        todo_raw = rest
    for name, out, vals, sub in raw:
        c = get(out)
        if c is None:
            continue  # a class without a finite term (see above)
        ok = True
        for i in E_POS[name]:
            k = get(vals[i])
            if k is None:
                ok = False
                break
            vals[i] = k
        if ok:
            t = (c, name, tuple(vals), sub)
            n = cget(t)
            if n is None:
                n = cache[t] = node_of(t)
                made.append(n)
            nodes.append(n)
            if name == "Cst":
                csts.append(n)
    return new_handles


def _read_bounds(egraph: bindings.EGraph, funcs: Any, reads: dict[str, tuple[list, list]],
                 stale: set[int] | frozenset[int], cls_of: dict[Any, int],
                 fresh: dict[str, tuple[list, list]]
                 ) -> tuple[dict[int, int], dict[int, int], set[int]]:
    """The interval analysis (``lo``, ``hi``) and the classes of ``Def`` rows."""
    to_i64 = egraph.value_to_i64
    get = cls_of.get
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    for name, table in (("lo", lo), ("hi", hi)):
        if name not in funcs:
            continue
        rows = funcs[name].rows
        last_rows = reads.get(name)
        if last_rows is None:
            res = [None if (c := get(r.inputs[0])) is None else (c, to_i64(r.output))
                   for r in rows]
        else:
            res, todo = _unchanged(last_rows, rows, stale, "pair")
            for i in todo:
                r = rows[i]
                c = get(r.inputs[0])
                if c is not None:
                    res[i] = (c, to_i64(r.output))
        fresh[name] = (rows, res)
        table.update(filter(None, res))
    known: set[int] = set()
    if "Def" in funcs:
        rows = funcs["Def"].rows
        last_rows = reads.get("Def")
        if last_rows is None:
            res = [get(r.inputs[0]) for r in rows]
        else:
            res, todo = _unchanged(last_rows, rows, stale, "class")
            for i in todo:
                res[i] = get(rows[i].inputs[0])
        fresh["Def"] = (rows, res)
        known = set(res)
        known.discard(None)  # type: ignore[arg-type]
    return lo, hi, known


def defined_classes(nodes: list[Node], known: set[int],
                    classes: dict[int, list[int]] | None = None,
                    admit: Callable[[Node], bool] | None = None) -> set[int]:
    """The classes that are never Invalid: a least fixed point over the e-nodes (a
    constant, a leaf other than Invalid, range/special of such an end, an ALU op
    whose operands all are), starting from ``known``. With ``classes`` (class ->
    indices into ``nodes``, as :attr:`Snapshot.classes`) only the e-nodes of the
    classes not in ``known`` are visited (the fixed point does not depend on the
    order the e-nodes are visited in). ``admit``: only the e-nodes it accepts count
    (``computed.passes.total_classes`` leaves out the divisions by a possible 0)."""
    out = set(known)
    if classes is not None:
        rest = classes.keys() - out
        if not rest:  # (every class known: no e-node to visit)
            return out
        nodes = [nodes[i] for c in sorted(rest) for i in classes[c]]
    if admit is not None:
        nodes = [n for n in nodes if admit(n)]
    waiting: dict[int, list[Node]] = {}
    stack: list[int] = []

    def ready(n: Node) -> bool:
        c = n.ctor
        if c == "Cst":
            return True
        if c == "Leaf":
            return n.fields[0] != "INVALID"
        if c in CTOR_OP or n.is_loop:
            return all(k in out for k in n.kids)
        return False

    for n in nodes:
        if n.cls in out:
            continue
        c = n.ctor
        if not (c in ("Cst", "Leaf") or c in CTOR_OP or n.is_loop):
            continue
        if ready(n):
            out.add(n.cls)
            stack.append(n.cls)
        else:
            for k in n.kids:
                if k not in out:
                    waiting.setdefault(k, []).append(n)
    while stack:
        k = stack.pop()
        for n in waiting.pop(k, ()):
            if n.cls not in out and ready(n):
                out.add(n.cls)
                stack.append(n.cls)
    return out


def decode_node(n: Node, args: ArgTable, snap: Snapshot) -> tuple[Ops, DType, Any,
                                                                      tuple[int, ...]] | None:
    """``(op, dtype, arg, children)`` of an e-node for the extractor (None: not an IR node)."""
    c, fields = n.ctor, n.fields
    if c == "Cst":
        dt = dtype_of(fields[0])
        return _CONST, dt, const_value(dt, fields[1]), ()
    op = CTOR_OP.get(c)
    if op is not None:
        return op, dtype_of(fields[0]), None, fields[1:]
    if c == "Cons" or c == "Nil" or (op := _OP_OF_NAME.get(fields[0])) is None:
        return None  # a list cell, or an engine-internal leaf (a context variable)
    dt, a = dtype_of(fields[1]), args.arg(fields[2])
    if c == "Leaf":
        return op, dt, a, ()
    if c == "GL":
        return op, dt, a, tuple(snap.list_items(fields[3]))
    return op, dt, a, fields[3:]


_CONST = Ops.CONST
#: an op by its name (``Ops[name]`` runs the enum's Python ``__getitem__``)
_OP_OF_NAME: dict[str, Ops] = dict(Ops.__members__)
