"""What a run's e-graph held, kept when asked (``optimize(..., keep_egraph=True)``).

A run deletes its e-graph's rows when it returns: nothing of it survives unless the
caller asks. :class:`Tracer` follows a run that was asked to keep it: at every
snapshot it notes the rules that fired since the last one and which of the input's
subterms now share an e-class that did not before (the classes those rules merged),
and at the end it copies the classes the roots reach into an :class:`EGraphRecord`:
each class's e-nodes as IR ops, its interval, the e-nodes the extraction could use.

The record answers what a notebook asks of a run: the e-graph as a picture (classes
as clusters, the e-nodes of the chosen term filled, :meth:`EGraphRecord.to_dot`), the
interval of each class, what merged when (:attr:`EGraphRecord.history`), and why the
extractor took each e-node of the result (:meth:`EGraphRecord.choices`: every e-node
of the class with its tree cost under the run's cost model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from eqsat.engines.egraph.encoding import ArgTable, Inserter, Snapshot, decode_node
from eqsat.engines.egraph.extracting import usable_keys
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from eqsat.ir.viz import Dot, node_text, operand_labels, quote
from extraction import EGraphView, ENode, TreeChoice, uop_builder

__all__ = ["EGraphRecord", "IterationRecord", "ClassChoice", "Tracer", "MAX_DRAWN_ENODES",
           "joined_record"]

#: the ops whose ranges the extraction's builder leaves out where they were extracted
#: as constants (``uop_builder``): their e-nodes may build a term with fewer operands
_LOOPS = (Ops.END, Ops.REDUCE)

#: :meth:`EGraphRecord.to_dot` draws at most this many e-nodes by default: beyond, only
#: the classes of the chosen terms (a picture of thousands of e-nodes shows nothing)
MAX_DRAWN_ENODES = 250


@dataclass(frozen=True)
class IterationRecord:
    """One snapshot of a kept run. ``iteration``: its number (0: the snapshot after the
    last iteration's rows were loaded); ``enodes``/``classes``: the e-graph's size;
    ``rules``: rule name -> matches since the previous snapshot (the native rules of
    this step and the computed rules of the pass before it, whose rows this step
    loaded); ``merged``: the input's subterms that now share a class and did not
    before, one tuple per class they merged into (one subterm per former class)."""

    iteration: int
    enodes: int
    classes: int
    rules: dict[str, int]
    merged: tuple[tuple[UOp, ...], ...] = ()


@dataclass(frozen=True)
class ClassChoice:
    """Why the extraction took ``chosen`` for e-class ``cls``: ``options`` are all the
    class's e-nodes the extraction could use, each with its tree cost (the e-node's own
    cost plus the best tree cost of each operand class), cheapest first. The chosen one
    is the cheapest unless the extraction was DAG-aware and sharing a subterm paid."""

    cls: int
    interval: tuple[float, float]
    chosen: ENode
    options: tuple[tuple[ENode, float], ...]


@dataclass
class EGraphRecord:
    """The classes a run's roots reached, as the last snapshot had them (see the module
    docstring). ``view``: every e-node as an IR op (``ENode.raw``: whether it is
    subsumed); ``roots``: the root classes in input order; ``lo``/``hi``: the interval
    analysis; ``usable``: the keys of the e-nodes the extraction could use; ``model``:
    the cost model of the run; ``history``: one :class:`IterationRecord` per
    snapshot."""

    view: EGraphView
    roots: tuple[int, ...]
    lo: dict[int, int]
    hi: dict[int, int]
    usable: frozenset[int]
    model: Any
    history: list[IterationRecord] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"<EGraphRecord {self.view.num_classes} classes, {len(self.view)} e-nodes, "
                f"roots={list(self.roots)!r}, {len(self.history)} snapshots>")

    # ---- reading ------------------------------------------------------------
    @property
    def classes(self) -> dict[int, list[ENode]]:
        """Class -> its e-nodes (ascending keys)."""
        return self.view.classes

    def interval(self, c: int) -> tuple[float, float]:
        """The interval analysis's bounds of class ``c`` (``-inf``/``inf`` unknown)."""
        return (self.lo.get(c, -math.inf), self.hi.get(c, math.inf))

    def label(self, en: ENode) -> str:
        """The e-node's label: its op's part of the ``.uop`` text (and a dtype)."""
        return node_text(en.op, en.dtype, en.arg)

    def chosen(self, graph: UOp) -> tuple[int, dict[UOp, ENode]]:
        """``(root class, node -> e-node)``: the e-node that builds each unique node of
        ``graph`` (a result of the run, or its input), found by matching ``graph``
        against the e-graph from each root class in turn. A result has one node per
        class; an input may pass through a class twice (``x*8 + x%8`` is in the class
        of the sum ``x`` it folds to). Raises ValueError when ``graph`` is no term of a
        root class."""
        root, out, _also = self._match(graph)
        return root, out

    def _match(self, graph: UOp) -> tuple[int, dict[UOp, ENode], list[ENode]]:
        """:meth:`chosen`, and the e-nodes the extraction's builder used that build no
        node of ``graph`` themselves: an END or REDUCE whose every range class was
        extracted as its constant (the builder leaves such loops out, and the END
        with them: ``uop_builder``), and those constants."""
        if not isinstance(graph, UOp):
            raise TypeError(f"chosen expects a UOp, got {type(graph).__name__}")
        classes = self.view.classes
        # (class, id(term)) -> (e-node, its (class, term) operands in the graph, whether
        # the e-node is left out of the term, the constants of its folded ranges)
        memo: dict[tuple[int, int], tuple[ENode, tuple, bool, tuple] | None] = {}

        def builds(en: ENode, kids: tuple[UOp, ...], u: UOp) -> bool:
            try:
                return uop_builder(en, kids) is u
            except ValueError:  # an arg that cannot make this node
                return False

        def match(c: int, u: UOp) -> tuple | None:
            key = (c, id(u))
            if key in memo:
                return memo[key]
            memo[key] = None  # in progress: met again on the way down, it is no match
            found = None
            for en in classes.get(c, ()):
                if en.op is u.op and en.dtype == u.dtype and len(en.children) == len(u.src) \
                        and all(match(k, s) is not None
                                for k, s in zip(en.children, u.src, strict=True)) \
                        and builds(en, u.src, u):
                    found = (en, tuple(zip(en.children, u.src, strict=True)), False, ())
                    break
                if en.op in _LOOPS and (found := folded(en, u)) is not None:
                    break
            memo[key] = found
            return found

        def folded(en: ENode, u: UOp) -> tuple | None:
            """``en`` (END/REDUCE) built ``u`` with some range classes as constants."""
            kids = en.children
            head, rest = (u.src[0], u.src[1:]) if u.op is en.op and u.src else (u, ())
            if not kids or match(kids[0], head) is None:
                return None
            terms, pairs, consts, j = [head], [(kids[0], head)], [], 0
            for k in kids[1:]:
                if j < len(rest) and match(k, rest[j]) is not None:
                    terms.append(rest[j])
                    pairs.append((k, rest[j]))
                    j += 1
                    continue
                cst = next((n for n in classes.get(k, ()) if n.op is Ops.CONST), None)
                if cst is None:
                    return None
                terms.append(uop_builder(cst, ()))
                consts.append(cst)
            if j != len(rest) or not consts or not builds(en, tuple(terms), u):
                return None
            return en, tuple(pairs), head is u, tuple(consts)

        for r in dict.fromkeys(self.roots):
            if match(r, graph) is not None:
                out: dict[UOp, ENode] = {}
                also: list[ENode] = []
                seen: set[tuple[int, int]] = set()
                stack = [(r, graph)]
                while stack:
                    c, u = stack.pop()
                    if (c, id(u)) in seen:
                        continue
                    seen.add((c, id(u)))
                    hit = memo[(c, id(u))]
                    assert hit is not None
                    en, pairs, left_out, consts = hit
                    if left_out:
                        also.append(en)
                    else:
                        out.setdefault(u, en)
                    also.extend(consts)
                    stack.extend(pairs)
                return r, out, also
        raise ValueError("the graph is not a term of any root class of this e-graph")

    def choices(self, graph: UOp) -> list[ClassChoice]:
        """For every unique node of ``graph`` (root first, every node before its operands):
        its class's e-nodes the extraction could use, with their tree costs under the
        run's cost model (see :class:`ClassChoice`)."""
        _root, chosen = self.chosen(graph)
        usable = self.usable
        view = EGraphView([n for ns in self.view.classes.values() for n in ns
                           if n.key in usable], class_min=self.lo)
        tc = TreeChoice(view, list(dict.fromkeys(self.roots)), self.model)
        comp = tc.comp
        cost = {n.key: tc.cost[i] for i, n in enumerate(comp.nodes)}
        best = {cid: tc.best[i] for i, cid in enumerate(comp.cids)}
        out = []
        for u in reversed(graph.toposort()):
            en = chosen[u]
            c = en.eclass
            opts = [(n, cost[n.key] + math.fsum(best.get(k, math.inf) for k in n.children))
                    for n in view.classes.get(c, ())]
            opts.sort(key=lambda t: (t[1], t[0].key))
            out.append(ClassChoice(c, self.interval(c), en, tuple(opts)))
        return out

    # ---- the picture ----------------------------------------------------------
    def to_dot(self, graphs: UOp | list[UOp] | None = None,
               max_enodes: int = MAX_DRAWN_ENODES) -> Dot:
        """The e-graph as DOT text: each class a cluster labelled with its id and
        interval (a root's drawn bold), each e-node a box inside it with edges to its
        operand classes; the e-nodes that build ``graphs`` (results of the run, or
        inputs; None: draw all the root classes reach and mark nothing) are filled and
        their edges bold; subsumed e-nodes (the extraction may not use them) dashed.

        Only the classes ``graphs``' roots reach are drawn; when they hold more than
        ``max_enodes`` e-nodes, only the classes of the chosen terms (the graph's label
        says how many were left out)."""
        if isinstance(graphs, UOp):
            graphs = [graphs]
        marked: dict[int, ENode] = {}  # class -> a chosen e-node of it
        keys: set[int] = set()  # the chosen e-nodes
        roots: list[int] = []
        for g in graphs or []:
            r, ch, also = self._match(g)
            roots.append(r)
            for en in [*ch.values(), *also]:
                marked.setdefault(en.eclass, en)
                keys.add(en.key)
        if not graphs:
            roots = list(dict.fromkeys(self.roots))
        classes = self.view.classes
        shown = set(self.view.subview(roots).classes)
        total = sum(len(classes[c]) for c in shown)
        note = ""
        if total > max_enodes and marked:
            drawn = {c for c in shown if c in marked}
            note = (f"{len(drawn)} of {len(shown)} classes drawn (those of the chosen term; "
                    f"{total} e-nodes in all)")
            shown = drawn
        lines = ["digraph egraph {", '  compound=true; newrank=true; fontname="Helvetica";',
                 '  node [fontname="Helvetica", fontsize=11, shape=box, style="filled", '
                 'fillcolor=white];', '  edge [fontname="Helvetica", fontsize=9, '
                 'arrowsize=0.6];']
        if note:
            lines.append(f"  label={quote(note)}; labelloc=t;")
        root_set = set(roots)
        # an edge goes to the class's chosen e-node (else its first), clipped at the cluster
        target = {c: (marked[c].key if c in marked else classes[c][0].key) for c in shown}
        for c in sorted(shown):
            lo, hi = self.interval(c)
            iv = "" if lo == -math.inf and hi == math.inf else f"  [{_num(lo)}, {_num(hi)}]"
            head = ("root " if c in root_set else "") + f"c{c}{iv}"
            lines.append(f"  subgraph cluster_{c} {{")
            lines.append(f"    label={quote(head)}; style=rounded; "
                         f"color={'black' if c in root_set else 'gray50'}; "
                         f"penwidth={2 if c in root_set else 1};")
            for n in classes[c]:
                style = ['filled']
                if n.raw:
                    style.append("dashed")
                fill = "lightgoldenrod1" if n.key in keys else "white"
                lines.append(f"    e{n.key} [label={quote(self.label(n))}, "
                             f"style={quote(','.join(style))}, fillcolor={fill}];")
            lines.append("  }")
        for c in sorted(shown):
            for n in classes[c]:
                on_path = n.key in keys
                labels = operand_labels(n.op, len(n.children))
                for k, lab in zip(n.children, labels, strict=True):
                    if k not in shown:
                        continue
                    attrs = [f"lhead=cluster_{k}"] if k != c else []
                    if lab:
                        attrs.append(f"label={quote(lab)}")
                    if on_path:
                        attrs.append("penwidth=2")
                    else:
                        attrs.append("color=gray40")
                    lines.append(f"  e{n.key} -> e{target[k]} [{', '.join(attrs)}];")
        lines.append("}")
        return Dot("\n".join(lines) + "\n")


def joined_record(sink: UOp, records: list[EGraphRecord]) -> EGraphRecord:
    """One record of a kernel run in parts (:mod:`.parts`) from its parts' records, in
    order: each part's classes and e-nodes renumbered past the parts' before it, and a
    root class of its own holding one ``SINK`` e-node (``sink``'s dtype and arg) over the
    store classes of every part's root ``SINK``, as the joined output is one sink of the
    parts' sources; ``history``: every part's snapshots in turn."""
    nodes: list[ENode] = []
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    usable: set[int] = set()
    history: list[IterationRecord] = []
    stores: list[int] = []
    cls_off = key_off = 0
    for rec in records:
        cmax = kmax = -1
        for ns in rec.view.classes.values():
            for n in ns:
                c = n.eclass + cls_off
                nodes.append(n._replace(key=n.key + key_off, eclass=c,
                                        children=tuple(k + cls_off for k in n.children)))
                cmax, kmax = max(cmax, c), max(kmax, n.key + key_off)
        lo.update((c + cls_off, v) for c, v in rec.lo.items())
        hi.update((c + cls_off, v) for c, v in rec.hi.items())
        usable.update(k + key_off for k in rec.usable)
        history += rec.history
        for r in rec.roots:
            top = [n for n in rec.view.classes.get(r, ()) if n.op is Ops.SINK]
            stores += [k + cls_off for k in top[0].children] if top else [r + cls_off]
        cls_off, key_off = cmax + 1, kmax + 1
    nodes.append(ENode(key_off, cls_off, Ops.SINK, sink.dtype, sink.arg, tuple(stores)))
    usable.add(key_off)
    model = records[0].model if records else None
    return EGraphRecord(EGraphView(nodes, class_min=lo), (cls_off,), lo, hi,
                        frozenset(usable), model, history)


def _num(v: float) -> str:
    return str(int(v)) if math.isfinite(v) else ("-inf" if v < 0 else "inf")


class Tracer:
    """Follows one run that keeps its e-graph (see the module docstring): call
    :meth:`snapshot` after each snapshot and :meth:`record` at the end."""

    def __init__(self, roots: list[UOp], ins: Inserter):
        seen: dict[int, UOp] = {}
        for r in roots:
            for u in r.toposort():
                seen.setdefault(id(u), u)
        self.inputs = list(seen.values())  # every input node, operands first
        self.ins = ins
        self.history: list[IterationRecord] = []
        self._matches: dict[str, int] = {}
        self._cls: dict[int, int] = {}  # id(input node) -> its class at the last snapshot

    def __repr__(self) -> str:
        return f"<Tracer {len(self.inputs)} input nodes, {len(self.history)} snapshots>"

    def snapshot(self, snap: Snapshot, iteration: int, matches: dict[str, int]) -> None:
        """Note ``snap`` (taken after iteration ``iteration``; ``matches``: the run's
        rule counts so far)."""
        rules = {k: v - self._matches.get(k, 0) for k, v in matches.items()
                 if v > self._matches.get(k, 0)}
        self._matches = dict(matches)
        handle = self.ins.uop_handle
        now: dict[int, int] = {}
        for u in self.inputs:
            h = handle.get(id(u))
            if h is not None:
                now[id(u)] = snap.cls_of_handle(h)
        merged = []
        if self._cls:
            # for each class now: one input node of each class it was in before
            before: dict[int, dict[int, UOp]] = {}
            for u in self.inputs:
                c, b = now.get(id(u)), self._cls.get(id(u))
                if c is not None and b is not None:
                    before.setdefault(c, {}).setdefault(b, u)
            merged = [tuple(v.values()) for _c, v in sorted(before.items()) if len(v) > 1]
        self._cls = now
        self.history.append(IterationRecord(iteration, snap.enodes, len(snap.classes), rules,
                                            tuple(merged)))

    def record(self, snap: Snapshot, args: ArgTable, handles: list[int],
               model: Any) -> EGraphRecord:
        """The :class:`EGraphRecord` of the last snapshot ``snap`` (``handles``: the
        roots' handles; ``model``: the run's cost model)."""
        roots = tuple(snap.cls_of_handle(h) for h in handles)
        reached = snap.reached(roots)
        nodes = []
        for c in sorted(reached):
            for i in snap.classes.get(c, ()):
                n = snap.nodes[i]
                dec = decode_node(n, args, snap)
                if dec is not None:
                    nodes.append(ENode(i, c, *dec, 0.0, bool(n.subsumed)))
        keep = {n.eclass for n in nodes}
        lo = {c: v for c, v in snap.lo.items() if c in keep}
        hi = {c: v for c, v in snap.hi.items() if c in keep}
        return EGraphRecord(EGraphView(nodes, class_min=lo), roots, lo, hi,
                            frozenset(usable_keys(snap, nodes)), model, list(self.history))
