"""A generic, read-only view of an e-graph for the extractors.

An :class:`EGraphView` is a set of e-classes, each a list of :class:`ENode`;
an e-node has an IR op (or None for a structural node the IR does not know),
a dtype, an arg and the ids of its children's e-classes. Views come from

* egglog's serialized JSON (:meth:`EGraphView.from_egglog_json`) with a
  ``decoder`` that maps the e-graph engine's constructors to IR ops,
* UOp graphs plus optional unions (:meth:`EGraphView.from_uops`), handy for
  tests and for a Python-side e-graph,
* hand-built lists of :class:`ENode` (the constructor).

egglog's JSON (``egraph._serialize().to_json()`` or
``egraph._egraph.serialize([]).to_json()``, egglog 13.2) is
``{"nodes": {node_id: {"op", "children": [node ids], "eclass", "cost",
"subsumed"}}, "class_data": {class_id: {"type", "let"?}}, "root_eclasses": [...]}``.
A child is named by a node id; its e-class is that node's ``eclass``.
Primitive literals (i64, f64, String, bool) are nodes ``primitive-<sort>-<n>``
without children: the view does not keep them as e-nodes but hands their values
to the decoder in :attr:`SerializedNode.literals`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from itertools import chain, compress
from operator import attrgetter
from typing import Any, NamedTuple

from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["ENode", "EGraphView", "SerializedNode", "Decoded", "ClassId", "new_enode"]

ClassId = Hashable


class _ENodeFields(NamedTuple):
    key: Hashable
    eclass: ClassId
    op: Ops | None
    dtype: DType | None
    arg: Any
    children: tuple[ClassId, ...]
    cost: float = 0.0
    raw: Any = None


class ENode(_ENodeFields):
    """One e-node: ``key`` (unique in the view), its e-class ``eclass``, the IR
    ``op``/``dtype``/``arg`` and the e-class ids of its ``children`` in order.

    ``op=None`` marks a structural node that is not an IR op (a container, a
    tuple); a cost model cannot price it, so it costs ``cost`` (>= 0). ``raw``
    is whatever the view was built from (an egglog :class:`SerializedNode`,
    a UOp), for the term builder's use.

    Immutable. A tuple underneath (cheap to build: views hold one per e-node), but
    compared and hashed as a record: two e-nodes are equal when all fields but
    ``raw`` are; an e-node never equals a plain tuple.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and self[:7] == other[:7]  # type: ignore

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self[:7])

    def __repr__(self) -> str:
        return (f"ENode(key={self.key!r}, eclass={self.eclass!r}, op={self.op!r}, "
                f"dtype={self.dtype!r}, arg={self.arg!r}, children={self.children!r}, "
                f"cost={self.cost!r})")


#: ``new_enode((key, eclass, op, dtype, arg, children, cost, raw))``: an ENode from all
#: eight fields, without the keyword-handling constructor (for bulk builders)
new_enode = partial(tuple.__new__, ENode)


class SerializedNode(NamedTuple):
    """What a decoder sees of one node of egglog's serialized e-graph.

    ``children`` are the e-class ids of the children, in order; ``literals[i]``
    is the value of child ``i`` when that child is a primitive literal (int for
    i64, float for f64, str for String, bool for bool), else None. ``sort`` is
    the node's e-class type from ``class_data`` (``"__main__.E"``); ``cost`` is
    egglog's own cost of the node.
    """

    id: str
    op: str
    eclass: str
    sort: str
    children: tuple[str, ...]
    literals: tuple[Any, ...]
    child_is_literal: tuple[bool, ...]
    cost: float
    subsumed: bool


class Decoded(NamedTuple):
    """A decoder's answer for one node.

    ``children``: the e-class ids that are the node's IR children, in order
    (None = every child that is not a primitive literal). ``cost``: the price of
    a structural node (``op=None``); ignored for IR ops.
    """

    op: Ops | None
    dtype: DType | None
    arg: Any = None
    children: tuple[str, ...] | None = None
    cost: float = 0.0


Decoder = Callable[[SerializedNode], "Decoded | tuple | None"]


def _sort_key(x: Any) -> tuple:
    if isinstance(x, bool):
        return (1, int(x), "")
    if isinstance(x, int):
        return (1, x, "")
    if isinstance(x, str):
        return (2, 0, x)
    return (3, 0, repr(x))


_node_key = attrgetter("key")
_NONE_KEY = _sort_key(None)
#: each op's name by id (``Ops.name`` is a Python descriptor; the members live as long
#: as the module), and None's: the empty name
_OP_NAME: dict[int, str] = {id(op): op.name for op in Ops} | {id(None): ""}


def _model_key(model: Any) -> Any:
    """The key of ``model`` in a view's per-model caches (None: not hashable, no caching)."""
    try:
        key: Any = (type(model), model)
        hash(key)
    except TypeError:
        return None
    return key


class _Compiled:
    """Integer-indexed arrays of a view, built once and shared by extractions."""

    __slots__ = ("cids", "cidx", "nodes", "ncls", "nch", "nchd", "class_nodes", "parents",
                 "selfloop", "pend", "leaves", "kids", "cost_cache", "tree_cache", "tie_terms",
                 "labels")

    def __init__(self, view: EGraphView):
        classes = view.classes
        cids = list(classes)
        self.cids = cids
        self.cidx = cidx = {c: i for i, c in enumerate(cids)}
        self.nodes = view._all_nodes[:]  # grouped by class, in class order
        groups = view.classes.values()
        get = cidx.__getitem__
        try:
            self._build(groups, get)
        except KeyError:  # classes that are named but have no e-node: they come last,
            for n in self.nodes:  # in order of first use
                for c in n.children:
                    if c not in cidx:
                        cidx[c] = len(cids)
                        cids.append(c)
                        view._empty[c] = None
            self._build(chain(groups, [[]] * (len(cids) - len(classes))), get)
        #: per model key (see :func:`_model_key`): the costs of the e-nodes, and the
        #: extractors' tree choice over every class (choices, best costs)
        self.cost_cache: dict[Any, list[float]] = {}
        self.tree_cache: dict[Any, tuple[list[int], list[float]]] = {}
        #: per model key: the chosen terms the tree choice's tie-break built (class ->
        #: UOp), for the term builder to start from (see ``extract.tighter_ties``)
        self.tie_terms: dict[Any, dict[int, UOp]] = {}
        #: per e-node, its content without its children (see :meth:`content_labels`)
        self.labels: list[tuple] | None = None

    def content_labels(self) -> list[tuple]:
        """Per e-node ``(op name, dtype, arg)`` as comparable values: with the children's
        terms, what orders equal-cost e-nodes by their content rather than by index."""
        if self.labels is None:
            names: dict[int, str] = {}  # id(dtype) -> str(dtype): the view holds them all
            labels = []
            add = labels.append
            op_name = _OP_NAME
            for _k, _c, op, dt, arg, _ch, _cost, _raw in self.nodes:
                name = names.get(id(dt))
                if name is None:
                    name = names[id(dt)] = str(dt)
                # (_sort_key's answer for the usual args, without a call)
                add((op_name[id(op)], name, _NONE_KEY if arg is None else
                     (1, arg, "") if type(arg) is int else _sort_key(arg)))
            self.labels = labels
        return self.labels

    def pending(self) -> list[int]:
        """Per e-node, how many distinct child classes a tree pass waits for (``pend``:
        an e-node with children and without a self-loop has that count, the others -1,
        never ready). A pass copies it (cheaper than a dict filled per class)."""
        return self.pend

    def _build(self, groups: Iterable[list[ENode]], get: Callable[[ClassId], int]) -> None:
        """Every array but ``cids``/``cidx``/``nodes`` in one pass over the e-nodes of
        ``groups`` (each class's e-nodes, classes in index order; ``get``: a class id's
        index): ``ncls``, ``class_nodes``, ``nch`` (child classes), ``nchd`` (distinct,
        sorted), ``selfloop``, ``pend`` (see :meth:`pending`), ``parents`` (per class, the
        e-nodes naming it), ``leaves`` (per class, its e-nodes without children: where a
        tree pass starts) and ``kids`` (per class, the classes any of its e-nodes names).
        Raises KeyError for a child class ``get`` does not know."""
        ncls: list[int] = []
        class_nodes: list[list[int]] = []
        nch: list[tuple[int, ...]] = []
        nchd: list[tuple[int, ...]] = []
        parents: list[list[int]] = [[] for _ in self.cids]
        pend, selfloop = [-1] * len(self.nodes), [False] * len(self.nodes)
        leaves: list[tuple[int, ...]] = []
        kids: list[tuple[int, ...]] = []
        i = 0
        for c, ns in enumerate(groups):
            first = i
            lv: tuple[int, ...] = ()
            for n in ns:
                ch = tuple(map(get, n.children))
                nch.append(ch)
                if ch:
                    if len(ch) > 2 or (len(ch) == 2 and ch[0] >= ch[1]):
                        ch = tuple(sorted(set(ch)))
                    for k in ch:
                        parents[k].append(i)
                    if c in ch:
                        selfloop[i] = True
                    else:
                        pend[i] = len(ch)
                else:
                    lv += (i,)
                nchd.append(ch)
                ncls.append(c)
                i += 1
            class_nodes.append(list(range(first, i)))
            leaves.append(lv)
            kids.append(nchd[first] if i - first == 1
                        else tuple({k for ch in nchd[first:i] for k in ch}))
        self.ncls, self.class_nodes, self.nch, self.nchd = ncls, class_nodes, nch, nchd
        self.parents, self.pend, self.selfloop = parents, pend, selfloop
        self.leaves, self.kids = leaves, kids

    def restrict(self, keep: list[int], sub: EGraphView) -> _Compiled:
        """The compiled form of ``sub``, the view of the classes ``keep`` (indices,
        ascending, closed under children, every non-empty one with all its e-nodes):
        the arrays a fresh compile of ``sub`` gives, sliced from these (costs
        included). Fills ``sub._empty``."""
        out = _Compiled.__new__(_Compiled)
        cids, class_nodes, nch = self.cids, self.class_nodes, self.nch
        full = list(compress(keep, map(class_nodes.__getitem__, keep)))  # the non-empty
        m: dict[int, int] = {c: i for i, c in enumerate(full)}
        src = list(chain.from_iterable(map(class_nodes.__getitem__, full)))
        new_cids = [cids[c] for c in full]
        order = full[:]  # the index here of each class there
        if len(full) < len(keep):  # empty classes, in order of first use (as a compile names them)
            for n in src:
                for k in nch[n]:
                    if k not in m:
                        m[k] = len(new_cids)
                        new_cids.append(cids[k])
                        order.append(k)
                        sub._empty[cids[k]] = None
        out.cids = new_cids
        out.cidx = {c: i for i, c in enumerate(new_cids)}
        nodes = self.nodes
        out.nodes = [nodes[n] for n in src]
        groups = [[nodes[n] for n in class_nodes[c]] for c in full]
        out._build(chain(groups, [[]] * (len(new_cids) - len(full))), out.cidx.__getitem__)
        out.cost_cache = {key: [costs[n] for n in src] for key, costs in self.cost_cache.items()}
        # a tree choice over every class holds for any subset closed under children
        # (its e-nodes finalize in the same order with or without the others)
        pos = {n: j for j, n in enumerate(src)}
        pos[-1] = -1
        out.tree_cache = {key: ([pos[choice[c]] for c in order], [best[c] for c in order])
                          for key, (choice, best) in self.tree_cache.items()}
        out.tie_terms = {}  # (keyed by this view's class indices)
        labels = self.labels
        out.labels = None if labels is None else [labels[n] for n in src]
        return out


class EGraphView:
    """E-classes -> e-nodes, in a canonical (sorted) order.

    ``nodes``: every e-node (keys unique); ``class_min``: optional known lower
    bound of e-classes (lets bound-aware cost models price e.g. a division by a
    power of two of a non-negative value as a shift); ``roots``: default root
    classes; ``lets``: egglog ``let`` names -> class id.
    Classes and their nodes are sorted by id/key, so extraction does not
    depend on the order the nodes were given in.
    """

    def __init__(self, nodes: Iterable[ENode], class_min: Mapping[ClassId, int | float] | None
                 = None, roots: Sequence[ClassId] = (), lets: Mapping[str, ClassId] | None = None):
        all_nodes = list(nodes)
        by_key: dict[Hashable, ENode] = {}
        classes: dict[ClassId, list[ENode]] = {}
        for n in all_nodes:
            if not isinstance(n, ENode):
                raise TypeError(f"EGraphView takes ENode objects, got {type(n).__name__}: {n!r}")
            key = n.key
            if key in by_key:
                raise ValueError(f"duplicate e-node key {key!r} (classes "
                                 f"{by_key[key].eclass!r} "
                                 f"and {n.eclass!r})")
            op = n.op
            if op is not None and type(op) is not Ops:
                raise TypeError(f"e-node {key!r}: op must be an Ops or None, got {op!r}")
            if not isinstance(n.children, tuple):
                raise TypeError(f"e-node {key!r}: children must be a tuple of class ids")
            if op is None and not (isinstance(n.cost, (int, float)) and n.cost >= 0
                                   and math.isfinite(n.cost)):
                raise ValueError(f"e-node {key!r}: structural cost must be finite and >= 0, "
                                 f"got {n.cost!r}")
            by_key[key] = n
            ns = classes.get(n.eclass)
            if ns is None:
                classes[n.eclass] = [n]
            else:
                ns.append(n)
        # plain ints sort as _sort_key sorts them (no bool can share a dict with 0/1)
        if all(type(k) is int for k in by_key):
            for ns in classes.values():
                if len(ns) > 1:
                    ns.sort(key=_node_key)
        else:
            for ns in classes.values():
                ns.sort(key=lambda n: _sort_key(n.key))
        order = (sorted(classes) if all(type(c) is int for c in classes)
                 else sorted(classes, key=_sort_key))
        self.classes: dict[ClassId, list[ENode]] = {c: classes[c] for c in order}
        self._all_nodes = list(chain.from_iterable(self.classes.values()))
        self._by_key: dict[Hashable, ENode] | None = by_key
        self._empty: dict[ClassId, None] = {}
        self.class_min: dict[ClassId, int | float] = dict(class_min or {})
        self.roots: tuple[ClassId, ...] = tuple(roots)
        self.lets: dict[str, ClassId] = dict(lets or {})
        self._class_const: dict[ClassId, Any] = {}
        for c, ns in self.classes.items():
            for n in ns:
                if n.op is Ops.CONST and isinstance(n.arg, (int, float)):
                    self._class_const[c] = n.arg
                    break
        self._compiled: _Compiled | None = None

    @classmethod
    def of_classes(cls, classes: dict[ClassId, list[ENode]],
                   class_min: Mapping[ClassId, int | float] | None = None) -> EGraphView:
        """The view the constructor gives for the e-nodes of ``classes`` (class id ->
        its e-nodes), trusted to be in canonical order already (classes ascending,
        each one's e-nodes by key, int ids and keys) and valid (unique keys, ``op``
        an Ops, tuple children, cost 0): no checks, no sorting. ``classes`` is kept."""
        view = cls.__new__(cls)
        view.classes = classes
        view._all_nodes = list(chain.from_iterable(classes.values()))
        view._by_key = None  # built by node() when asked
        view._empty = {}
        view.class_min = dict(class_min or {})
        view.roots = ()
        view.lets = {}
        const = Ops.CONST
        cc: dict[ClassId, Any] = {}
        for n in view._all_nodes:
            if n.op is const and n.eclass not in cc and isinstance(n.arg, (int, float)):
                cc[n.eclass] = n.arg
        view._class_const = cc
        view._compiled = None
        return view

    # ---- queries ------------------------------------------------------------
    def __len__(self) -> int:
        """The number of e-nodes."""
        return len(self._all_nodes)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def __repr__(self) -> str:
        return (f"<EGraphView {len(self.classes)} classes, {len(self)} e-nodes, "
                f"roots={list(self.roots)!r}>")

    def node(self, key: Hashable) -> ENode:
        """The e-node with this key."""
        by_key = self._by_key
        if by_key is None:  # a view built without the index (see of_classes, subview)
            by_key = self._by_key = {n.key: n for n in self._all_nodes}
        try:
            return by_key[key]
        except KeyError:
            raise KeyError(f"no e-node with key {key!r} in this view") from None

    def class_const(self, cid: ClassId) -> int | float | None:
        """The constant value of class ``cid`` if it holds a scalar CONST e-node, else None."""
        return self._class_const.get(cid)

    def child_consts(self, node: ENode) -> tuple[int | float | None, ...]:
        """``child_consts`` of ``node`` for a cost model."""
        return tuple(self._class_const.get(c) for c in node.children)

    def child_mins(self, node: ENode) -> tuple[int | float | None, ...]:
        """The known lower bounds of ``node``'s children (None where unknown)."""
        cm = self.class_min
        return tuple(cm.get(c, self._class_const.get(c)) for c in node.children)

    def compiled(self) -> _Compiled:
        if self._compiled is None:
            self._compiled = _Compiled(self)
        return self._compiled

    def node_costs(self, model: Any) -> list[float]:
        """The cost of every e-node (in compiled order) under ``model``; cached per model."""
        comp = self.compiled()
        cache_key = _model_key(model)
        if cache_key is not None and cache_key in comp.cost_cache:
            return comp.cost_cache[cache_key]
        out = self.price(comp.nodes, model)
        if cache_key is not None:
            comp.cost_cache[cache_key] = out
        return out

    def price(self, nodes: Iterable[ENode], model: Any) -> list[float]:
        """The cost of each of ``nodes`` (e-nodes of this view) under ``model``, not
        cached (:meth:`node_costs` caches the prices of all of them)."""
        bounds = bool(getattr(model, "uses_bounds", False))
        node_cost = model.node_cost
        consts, cm = self._class_const, self.class_min
        out: list[float] = []
        add = out.append
        inf = math.inf
        # a model that prices by the op alone is asked once per op (by id: an Ops
        # member's hash runs Python code); its answer is checked like any other
        by_op: dict[int, float] | None = {} if getattr(model, "op_only", False) else None
        for n in nodes:
            op = n.op
            if by_op is not None and op is not None:
                v = by_op.get(id(op))
                if v is not None:
                    add(v)
                    continue
            if op is None:
                v = float(n.cost)
            else:
                ch = n.children
                kc = tuple(map(consts.get, ch))
                if bounds:
                    v = node_cost(op, n.dtype, n.arg, kc,
                                  child_mins=tuple([cm.get(c, consts.get(c)) for c in ch]))
                else:
                    v = node_cost(op, n.dtype, n.arg, kc)
            if not (type(v) is float and 0.0 <= v < inf):  # the common case, checked fast
                if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                    raise ValueError(f"cost model {model!r} priced e-node {n.key!r} ({n.op}) "
                                     f"at {v!r}; costs must be finite numbers >= 0")
                v = float(v)
            if by_op is not None and op is not None:
                by_op[id(op)] = v
            add(v)
        return out

    def subview(self, roots: Sequence[ClassId]) -> EGraphView:
        """The view of the classes ``roots`` reach through any e-node (all their
        e-nodes, ``class_min``/``lets`` restricted to them, ``roots`` as given): what
        the constructor gives for those e-nodes, built from this view's validated
        nodes, compiled arrays and cached per-model costs (sliced, not recomputed)."""
        comp = self.compiled()
        cidx, kids = comp.cidx, comp.kids
        mark = [False] * len(comp.cids)
        stack = []
        for r in roots:
            i = cidx.get(r)
            if i is None:
                raise KeyError(f"root class {r!r} is not in this view")
            if not mark[i]:
                mark[i] = True
                stack.append(i)
        while stack:
            for k in kids[stack.pop()]:
                if not mark[k]:
                    mark[k] = True
                    stack.append(k)
        keep = list(compress(range(len(mark)), mark))
        cids = comp.cids
        kept = [cids[c] for c in keep]
        sub = EGraphView.__new__(EGraphView)
        classes = self.classes
        sub.classes = {c: classes[c] for c in kept if c in classes}
        sub._empty = {}
        sub._compiled = comp.restrict(keep, sub)
        sub._all_nodes = sub._compiled.nodes[:]
        sub._by_key = None  # built by node() when asked
        cm, consts = self.class_min, self._class_const
        sub.class_min = {c: cm[c] for c in kept if c in cm}
        sub.roots = tuple(roots)
        kept_set = set(kept)
        sub.lets = {k: c for k, c in self.lets.items() if c in kept_set}
        sub._class_const = {c: consts[c] for c in kept if c in consts}
        return sub

    # ---- constructors -------------------------------------------------------
    @classmethod
    def from_uops(cls, roots: UOp | Sequence[UOp],
                  unions: Iterable[tuple[UOp, UOp]] = ()) -> EGraphView:
        """A view of UOp graphs where each unique node is an e-node and the
        pairs in ``unions`` (and their whole classes) are merged.

        Classes are named ``"c<i>"`` after their first member in toposort order;
        ``view.roots`` are the classes of ``roots``; ``class_min`` is the
        tightest ``vmin`` over each class's members. ``raw`` of each e-node is its UOp.
        """
        roots = [roots] if isinstance(roots, UOp) else list(roots)
        unions = list(unions)
        order: list[UOp] = []
        seen: set[int] = set()
        for top in roots + [u for pair in unions for u in pair]:
            if not isinstance(top, UOp):
                raise TypeError(f"from_uops takes UOps, got {type(top).__name__}: {top!r}")
            for u in top.toposort():
                if id(u) not in seen:
                    seen.add(id(u))
                    order.append(u)
        index = {id(u): i for i, u in enumerate(order)}
        parent = list(range(len(order)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for a, b in unions:
            ra, rb = find(index[id(a)]), find(index[id(b)])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        name = [f"c{find(i)}" for i in range(len(order))]
        class_min: dict[ClassId, int | float] = {}
        nodes = []
        for i, u in enumerate(order):
            c = name[i]
            nodes.append(ENode(f"n{i}", c, u.op, u.dtype, u.arg,
                               tuple(name[index[id(s)]] for s in u.src), raw=u))
            lo = u.vmin
            if isinstance(lo, (int, float)) and not (isinstance(lo, float) and math.isnan(lo)):
                class_min[c] = max(class_min.get(c, lo), lo)
        return cls(nodes, class_min=class_min, roots=[name[index[id(r)]] for r in roots])

    @classmethod
    def from_egglog_json(cls, data: str | bytes | Mapping[str, Any], decoder: Decoder, *,
                         include_subsumed: bool = False,
                         lo_function: str | None = None) -> EGraphView:
        """Build a view from egglog's serialized e-graph.

        ``data``: the JSON text or the parsed dict. ``decoder(node:
        SerializedNode)`` returns ``(op, dtype, arg)``, a :class:`Decoded`
        (or a tuple of its fields) for a node to keep, or None to drop it
        (analysis functions, helper constructors, containers the IR has no use for).
        Primitive literal nodes never reach the decoder; their values arrive
        in the parent's ``literals``. Subsumed nodes are dropped unless
        ``include_subsumed``. ``lo_function``: the serialized op name of a
        lower-bound lattice function (e.g. ``"lo"``); its rows become
        ``class_min`` (they are not passed to the decoder).
        """
        if isinstance(data, (str, bytes)):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as e:
                raise ValueError(f"egglog JSON: not valid JSON ({e})") from None
        if not isinstance(data, Mapping) or not isinstance(data.get("nodes"), Mapping):
            raise ValueError("egglog JSON: expected an object with a 'nodes' object")
        raw_nodes: Mapping[str, Any] = data["nodes"]
        class_data: Mapping[str, Any] = data.get("class_data") or {}
        sorts: dict[str, str] = {}

        def sort_of(nid: str, ec: str) -> str:
            t = sorts.get(ec)
            if t is None:
                cd = class_data.get(ec)
                t = cd.get("type") if isinstance(cd, Mapping) else None
                if t is None and nid.startswith("primitive-"):
                    t = nid[len("primitive-"):].rsplit("-", 1)[0]
                t = sorts[ec] = t or ""
            return t

        # pass 1: every node's e-class; literal classes (a primitive node without children)
        eclass_of: dict[str, str] = {}
        lit: dict[str, Any] = {}
        for nid, nd in raw_nodes.items():
            try:
                ec = nd["eclass"]
                op = nd["op"]
            except (KeyError, TypeError):
                raise ValueError(f"egglog JSON: node {nid!r} lacks 'op' or 'eclass'") from None
            eclass_of[nid] = ec
            if not nd.get("children") and nid.startswith("primitive-"):
                lit[ec] = _literal(sort_of(nid, ec), str(op))
        class_min: dict[ClassId, int | float] = {}
        lets: dict[str, ClassId] = {}
        for cid, cd in class_data.items():
            if isinstance(cd, Mapping) and cd.get("let"):
                for name in str(cd["let"]).split(","):
                    lets[name.strip()] = cid
        # pass 2: decode
        nodes: list[ENode] = []
        for nid, nd in raw_nodes.items():
            chids = nd.get("children") or ()
            if not chids and nid.startswith("primitive-"):
                continue
            subsumed = bool(nd.get("subsumed", False))
            if subsumed and not include_subsumed:
                continue
            try:
                children = tuple([eclass_of[ch] for ch in chids])
            except (KeyError, TypeError):
                bad = next((ch for ch in chids if ch not in eclass_of), chids)
                raise ValueError(f"egglog JSON: node {nid!r} has unknown child {bad!r}") from None
            ec = nd["eclass"]
            op = str(nd["op"])
            if lo_function is not None and op == lo_function:
                if len(children) == 1 and ec in lit:
                    v = lit[ec]
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        c = children[0]
                        class_min[c] = max(class_min.get(c, v), v)
                continue
            is_lit = tuple([c in lit for c in children])
            sn = SerializedNode(nid, op, ec, sort_of(nid, ec), children,
                                tuple([lit.get(c) for c in children]), is_lit,
                                float(nd.get("cost", 1.0)), subsumed)
            dec = decoder(sn)
            if dec is None:
                continue
            try:
                d = dec if isinstance(dec, Decoded) else Decoded(*dec)
            except TypeError:
                raise ValueError(f"decoder returned {dec!r} for node {nid!r} (op {op!r}); "
                                 "expected (op, dtype, arg[, children[, cost]]) or None") from None
            if d.children is not None:
                kids = tuple(d.children)
            elif True in is_lit:
                kids = tuple([c for c, il in zip(children, is_lit, strict=True) if not il])
            else:
                kids = children
            nodes.append(ENode(nid, ec, d.op, d.dtype, d.arg, kids, float(d.cost), raw=sn))
        return cls(nodes, class_min=class_min, roots=tuple(data.get("root_eclasses") or ()),
                   lets=lets)


def _literal(sort: str, op: str) -> Any:
    """The Python value of a primitive literal node of egglog's JSON."""
    if sort in ("i64", "BigInt"):
        try:
            return int(op)
        except ValueError:
            return op
    if sort == "f64":
        try:
            return float(op)
        except ValueError:
            low = op.lower()
            return {"nan": math.nan, "inf": math.inf, "+inf": math.inf,
                    "-inf": -math.inf}.get(low, op)
    if sort == "bool":
        return op == "true"
    if sort == "String":
        if op.startswith('"'):
            try:
                return json.loads(op)
            except json.JSONDecodeError:
                return op[1:-1]
        return op
    if sort == "Unit":
        return None
    return op
