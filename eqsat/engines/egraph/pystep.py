"""A small run's steps replayed in Python: the :class:`Mirror` e-graph and the
:class:`RuleBook`.

Most calls on index expressions hold a few dozen e-nodes, where each egglog command
costs more than the work it does: a step's loading, its round of native rules, the
interval analysis, the sizes, each snapshot's conversion of every table and the reset
after the run (about two thirds of a small call). A run that may (``Run.start_replay``)
does each step here instead: the rows the run recorded (e-nodes, unions, facts, late
bounds, subsumptions) loaded into a mirror of egglog's e-graph (handles, a union-find,
congruence closure; a class named by its smallest handle), one round of the native
rewrites (every match found first, then applied, as egglog does), the interval rules to
their fixed point, and the snapshot egglog's e-graph would give. The rules are read
from the egglog text the e-graph runs (``Program.programs``, ``analysis_program``;
compiled by :mod:`.queries`), so the two cannot drift, and the loop, the computed
passes and the extraction are the same code either way: the outputs are egglog's, byte
for byte (the tests run both on the corpus, unseen cases and random graphs).

The counting twins of the multiplying rules count here too (:meth:`RuleBook.count`:
the rules' queries without their actions). Where a step needs egglog (a count that
may not be the twins', ``Run._replayed_counts``; an e-graph past :data:`MAX_ENODES`, an
analysis that does not settle) the run stops (:class:`ReplayStopped`) and the engine
runs it again with egglog running its steps.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress, zip_longest
from operator import itemgetter
from typing import Any

from eqsat.engines.egraph.analyses import ANALYSIS_RULES, FACT_TAGS, LATE_TAGS
from eqsat.engines.egraph.encoding import Snapshot
from eqsat.engines.egraph.encoding.schema import CTORS
from eqsat.engines.egraph.queries import (
    QueryError,
    QuerySource,
    compile_group,
    is_var,
    literal,
    query_source,
)
from eqsat.engines.egraph.schedules import COUNT_FN
from eqsat.ir.egglog_text import read

__all__ = ["ReplayStopped", "Mirror", "RuleBook", "rule_book", "snapshot_of", "table_sizes",
           "empty_interval", "MAX_ROWS", "NEW_CLASS"]

#: a run replays its steps here when its insertion records at most this many rows (the
#: replay saves egglog's fixed cost of each command, which a larger run amortizes)
MAX_ROWS = 400
#: ... and while its e-graph holds at most this many e-nodes (past it, the run starts
#: again in egglog; the default e-node budget stops most runs before)
MAX_ENODES = 20000


#: the native rule sets a replayed run may run (``Run.native_bases`` of an index-only
#: run, with its multiplying rules)
REPLAYED_SETS = ("native_p", "native_mult_p")


class ReplayStopped(Exception):  # noqa: N818 (a stop, not an error)
    """A replayed run met a step egglog must run (a count that may not be the counting
    twins', ``Run._replayed_counts``; an e-graph past
    :data:`MAX_ENODES`, an analysis that does not settle, a row or rule this module does
    not read): the engine runs it again with egglog running its steps."""


# ---- the e-graph of the recorded rows --------------------------------------------------
#: the first class id of the classes a rewrite makes (no handle names them; every
#: handle is below it, so a class's root, its smallest id, is a handle when it has one)
NEW_CLASS = 1 << 62


class Mirror:
    """The e-graph egglog would hold: classes (a union-find over handles and the ids of
    the classes rewrites make, congruence closed), e-nodes by constructor and class,
    the subsumed ones, the bounds per class (``lo`` merged by max, ``hi`` by min) and
    ``Def``. Built from insertion rows (:meth:`load`)."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.table: dict[tuple, int] = {}  # (ctor, fields) -> class (canonical keys)
        self.sub: set[tuple] = set()  # the subsumed e-nodes' keys
        self.lo: dict[int, int] = {}
        self.hi: dict[int, int] = {}
        self.defs: set[int] = set()
        self.made = NEW_CLASS
        self.by_ctor: dict[str, list[tuple[tuple, int]]] = {}
        #: ``by_class``'s index, made from ``by_ctor`` when first read after a rebuild
        #: (the analysis and the sizes read ``by_ctor`` only)
        self._by_class: dict[int, dict[str, list[tuple]]] | None = {}
        #: the classes whose atoms changed, in order (a class that gained an e-node or
        #: the root of a merge, an e-node made or re-keyed, a bound or ``Def`` that
        #: changed): a semi-naive round reads the entries since its last match
        self.log: list[int] = []
        #: where ``log`` stood when the last round of native rules matched, and its
        #: rule-set parts (None: no round yet); where it stood after the last analysis
        self.native_mark: tuple[int, frozenset[str]] | None = None
        self.analysed: int | None = None
        #: the classes merged into another since the last rebuild, and every child
        #: class of an e-node (a superset: a class merged away stays in it)
        self.absorbed: set[int] = set()
        self.kids: set[int] = set()
        #: class -> the classes of the matchable e-nodes it is a child of (``above``)
        self._up: dict[int, list[int]] | None = None

    # ---- classes
    def find(self, k: int) -> int:
        parent = self.parent
        root = k
        while parent[root] != root:
            root = parent[root]
        while parent[k] != root:
            parent[k], k = root, parent[k]
        return root

    def handle(self, k: int) -> int:
        """The class of handle ``k`` (a new singleton the first time)."""
        if k not in self.parent:
            self.parent[k] = k
        return self.find(k)

    def union(self, a: int, b: int) -> bool:
        """Merge the classes of ``a`` and ``b`` (their bounds and ``Def`` too); whether
        they were two. The table is stale until :meth:`rebuild`."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return False
        if b < a:
            a, b = b, a
        self.parent[b] = a  # (the smaller id is the root: a handle, the class's name)
        self.log.append(a)
        self.absorbed.add(b)
        for table, merge in ((self.lo, max), (self.hi, min)):
            vb = table.pop(b, None)
            if vb is not None:
                va = table.get(a)
                table[a] = vb if va is None else merge(va, vb)
        if b in self.defs:
            self.defs.discard(b)
            self.defs.add(a)
        return True

    def node(self, ctor: str, fields: tuple) -> int:
        """The class of the e-node ``(ctor fields)`` (fields canonical), made when new."""
        key = (ctor, fields)
        c = self.table.get(key)
        if c is not None:
            return self.find(c)
        c = self.made
        self.made += 1
        self.parent[c] = c
        self.table[key] = c
        self.log.append(c)
        for i in _E_POS[ctor]:
            self.kids.add(fields[i])
        return c

    def canon(self, ctor: str, fields: tuple) -> tuple:
        pos = _E_POS[ctor]
        if not pos:
            return fields
        f = list(fields)
        for i in pos:
            f[i] = self.find(f[i])
        return tuple(f)

    def rebuild(self) -> None:
        """Re-key the e-nodes by their classes now, merging the classes of e-nodes that
        became equal (congruence), to a fixed point; index them. When no class merged
        away since the last rebuild is a child of an e-node (most loads: a handle
        merged with its new e-node's class), only the classes change."""
        if self.absorbed and not self.absorbed.isdisjoint(self.kids):
            self._congruence()
        elif self.absorbed:
            find, parent = self.find, self.parent
            self.table = {key: c if parent[c] == c else find(c)
                          for key, c in self.table.items()}
        self.absorbed.clear()
        by_ctor: dict[str, list[tuple[tuple, int]]] = {}
        sub = self.sub
        for key, c in self.table.items():
            if sub and key in sub:
                continue  # (a subsumed e-node matches no query)
            ctor, fields = key
            entries = by_ctor.get(ctor)
            if entries is None:
                by_ctor[ctor] = [(fields, c)]
            else:
                entries.append((fields, c))
        self.by_ctor, self._by_class, self._up = by_ctor, None, None

    @property
    def by_class(self) -> dict[int, dict[str, list[tuple]]]:
        """class -> constructor -> the fields of its e-nodes not subsumed (each list in
        the table's order, as ``by_ctor``'s)."""
        by_class = self._by_class
        if by_class is None:
            by_class = self._by_class = {}
            for ctor, entries in self.by_ctor.items():
                for fields, c in entries:
                    held = by_class.get(c)
                    if held is None:
                        by_class[c] = {ctor: [fields]}
                    elif ctor in held:
                        held[ctor].append(fields)
                    else:
                        held[ctor] = [fields]
        return by_class

    def _congruence(self) -> None:
        """Re-key the e-nodes by their children's classes now, merging the classes of
        e-nodes that became equal, to a fixed point (the last pass merges nothing, so
        the classes it stored are the roots). Only an e-node with a child in a class
        merged away since the last rebuild (``absorbed``, which the merges here add
        to) changes its key: every other child is a root still; ``kids`` gains the
        new keys' children."""
        find, log, parent, absorbed, kids = (self.find, self.log, self.parent,
                                             self.absorbed, self.kids)
        while True:
            table: dict[tuple, int] = {}
            sub: set[tuple] = set()
            merged = False
            was_sub = self.sub
            for key, c in self.table.items():
                ctor, fields = key
                # (no field in ``absorbed``, checked in C: no child either; else the
                # children are looked at, a literal field may equal a class id)
                if absorbed.isdisjoint(fields):
                    if was_sub and key in was_sub:
                        sub.add(key)
                else:
                    for i in _E_POS[ctor]:
                        if fields[i] in absorbed:
                            f = list(fields)
                            for j in _E_POS[ctor]:
                                k = parent[f[j]]  # (the root of f[j], found without
                                f[j] = k if parent[k] == k else find(k)  # a call)
                                kids.add(f[j])
                            new = (ctor, tuple(f))
                            log.append(c)  # (a re-keyed e-node: a new row, as egglog's)
                            if was_sub and key in was_sub:
                                sub.add(new)
                            key = new
                            break
                    else:
                        if was_sub and key in was_sub:
                            sub.add(key)
                old = table.get(key)
                if old is None:
                    table[key] = c if parent[c] == c else find(c)
                elif self.union(old, c):
                    merged = True
            self.table, self.sub = table, sub
            if not merged:
                return

    # ---- what changed (semi-naive rounds)
    def dirty(self, since: int) -> set[int]:
        """The classes (by their roots now) whose atoms changed since ``log`` held
        ``since`` entries."""
        find, parent = self.find, self.parent
        # (most are roots: no call to find for them)
        return {c if parent[c] == c else find(c) for c in set(self.log[since:])}

    def above(self, classes: set[int]) -> Callable[[int], set[int]]:
        """The function giving, for a level ``i``, the classes within ``i`` e-nodes
        above ``classes`` (``classes`` at 0; at ``i``, also the classes of the matchable
        e-nodes with a child at ``i - 1``): a match whose classes lie at most ``i``
        below its root e-node's and hold one of ``classes`` has its root there."""
        levels = [classes]
        # (the classes each level added: the next adds only what lies above them, as
        # the classes above an older level's are in the last level already)
        added = [classes]
        up = self._up
        if up is None:  # (kept until the next rebuild)
            up = self._up = {}
            for ctor, entries in self.by_ctor.items():
                pos = _E_POS[ctor]
                for fields, c in entries if pos else ():
                    for i in pos:
                        k = fields[i]
                        if k != c:
                            up.setdefault(k, []).append(c)

        def at(i: int) -> set[int]:
            while len(levels) <= i:
                last = levels[-1]
                nxt = set(last)
                for k in added[-1]:
                    above_k = up.get(k)
                    if above_k is not None:
                        nxt.update(above_k)
                added.append(nxt - last)
                levels.append(nxt)
            return levels[i]
        return at

    # ---- loading
    def load(self, rows: Sequence[tuple], more_facts: Sequence[tuple] = (),
             more_subs: Sequence[tuple] = ()) -> bool:
        """Load insertion rows (``RNode``'s e-nodes, unions, facts and late bounds,
        ``RSub``'s subsumptions: ``encoding.inserter.Row``) as egglog's loading rules
        do, then :meth:`rebuild`; whether a fact changed a bound or ``Def``.
        ``more_facts`` and ``more_subs``: fact and ``RSub`` rows given apart
        (``Inserter.take_waiting``: not sorted row by row), after those of ``rows``."""
        facts: list[tuple[int, str, int]] = []
        subs: list[tuple[str, tuple]] = []
        parent, find, enodes, log, kids = (self.parent, self.find, self.table, self.log,
                                           self.kids)
        fact_kind = _FACT_KIND
        for r in rows:
            if len(r) == 2:  # an RSub row: (ctor, fields)
                subs.append(r)
                continue
            k, tag, x = r
            if tag in fact_kind:  # (most rows: merged after the e-nodes, in order)
                facts.append(r)
                continue
            pos = _E_POS.get(tag)
            if pos is not None:
                f = None  # (the fields with each child's root, made when one differs)
                for i in pos:
                    v = x[i]
                    h = parent.get(v)
                    if h is None:
                        parent[v] = h = v
                    elif parent[h] != h:  # (the root, found without a call when near)
                        h = find(h)
                    kids.add(h)
                    if h != v:
                        if f is None:
                            f = list(x)
                        f[i] = h
                if f is not None:
                    x = tuple(f)
                key = (tag, x)
                if k not in parent and key not in enodes:
                    # (a new e-node of a new handle: its class is the handle, as the
                    # merge of a new class with the handle would leave it)
                    parent[k] = enodes[key] = k
                    log.append(k)
                    continue
                c = self.node(tag, x)
                if k not in parent:
                    parent[k] = k
                self.union(k, c)
            elif tag == "U":
                parent.setdefault(k, k)
                parent.setdefault(x, x)
                self.union(k, x)
            else:
                raise ReplayStopped(f"an insertion row of tag {tag!r}")
        if len(facts) < len(rows) + len(more_subs):  # (a row that is not a fact)
            self.rebuild()
        if more_facts:
            facts += more_facts
        if more_subs:
            subs += more_subs
        tightened = self._facts(facts) if facts else False
        for ctor, fields in subs:
            key = (ctor, self.canon(ctor, fields))
            if key not in self.table:
                raise ReplayStopped("a subsumption of an e-node the e-graph lacks")
            self.sub.add(key)
        if subs:
            self.rebuild()
        return tightened


    def _facts(self, facts: list[tuple[int, str, int]]) -> bool:
        """Merge fact rows ``(handle, tag, value)`` (:data:`_FACT_KIND`) into the bounds
        (``lo`` by max, ``hi`` by min) and ``Def``; whether one changed."""
        parent, find, log = self.parent, self.find, self.log
        lo, hi, defs = self.lo, self.hi, self.defs
        kind_of = _FACT_KIND
        changed = len(log)
        for k, tag, v in facts:
            c = parent.get(k)  # (the class of handle k, a new singleton if it is new)
            if c is None:
                parent[k] = c = k
            elif parent[c] != c:
                c = find(c)
            kind = kind_of[tag]
            if kind == _DEF:
                if c not in defs:
                    defs.add(c)
                    log.append(c)
            elif kind == _LO:
                old = lo.get(c)
                if old is None or v > old:
                    lo[c] = v
                    log.append(c)
            else:
                old = hi.get(c)
                if old is None or v < old:
                    hi[c] = v
                    log.append(c)
        return len(log) > changed


#: an index entry's class (``Mirror.by_ctor``'s ``(fields, class)``)
_CLASS = itemgetter(1)
_E_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, ch in enumerate(sig) if ch == "E") for name, sig in CTORS.items()}
#: a fact row's tag -> what it sets: a lower bound, an upper bound or ``Def`` (the
#: relations ``RLo``, ``RHi``, ``RDef`` of :data:`FACT_TAGS`; the late bounds too)
_LO, _HI, _DEF = 0, 1, 2
_FACT_KIND: dict[str, int] = {
    tag: {"RLo": _LO, "RHi": _HI, "RDef": _DEF}[rel]
    for tags in (FACT_TAGS, LATE_TAGS) for rel, tag in tags.items()}


# ---- rules ---------------------------------------------------------------------------
Env = dict[str, Any]


def _value(t: Any) -> tuple[bool, Any]:
    """A field's value on a right side or in an interval rule's action, compiled:
    ``(True, name)`` for a variable's binding, ``(False, value)`` for a literal."""
    if isinstance(t, list):
        raise QueryError(f"a computed value in an action ({t})")
    return (True, t) if is_var(t) else (False, literal(t))


def _rhs_vars(t: Any, out: list[str]) -> list[str]:
    if isinstance(t, list):
        for x in t[1:]:
            _rhs_vars(x, out)
    elif is_var(t) and t not in out:
        out.append(t)
    return out


class _Rewrite:
    """A native rewrite: its query's Python (:func:`query_source`, compiled with the
    other rewrites of its part and root constructor: :class:`_Group`), its right side,
    whether it subsumes, the name its matches count under and its rule-set part."""

    def __init__(self, text: str, law: Callable[[str], str], part: str = "",
                 prefix: str = "k"):
        self.part = part
        t = read(text)
        if t[0] != "rewrite":
            raise ValueError(f"not a rewrite: {text[:60]}")
        lhs, rhs, opts = t[1], t[2], list(t[3:])
        self.subsume = ":subsume" in opts
        if self.subsume:
            opts.remove(":subsume")
        kw = dict(zip(opts[::2], opts[1::2], strict=True))
        self.name = law(kw[":name"].strip('"'))
        #: whether no other rewrite of the book counts under ``name`` (set by the book)
        self.alone = False
        self.ctor = lhs[0]
        # the right side checked now, compiled at the rule's first match: most rules of a
        # process never match, and compiling them all would slow every process's start
        self._rhs = _builder_source(rhs)
        self.build: Callable[[Mirror, Env], int] = self._first_build
        self.query = query_source(self.name, lhs, "__root", list(kw.get(":when", [])),
                                  ["__root", *_rhs_vars(rhs, [])], prefix=prefix)

    def _first_build(self, m: Mirror, env: Env) -> int:
        self.build = _compiled_builder(*self._rhs)
        return self.build(m, env)

    def apply(self, m: Mirror, fields: tuple, env: Env) -> None:
        """This match's rewrite applied to ``m``: the right side's e-nodes made, its
        class merged with the match's, the matched e-node subsumed (the table is stale
        until ``m.rebuild()``)."""
        m.union(self.build(m, env), env["__root"])
        if self.subsume:
            m.sub.add((self.ctor, fields))


def _builder(t: Any) -> Callable[[Mirror, Env], int]:
    """A rewrite's right side ``t`` compiled to one Python function: the function giving
    its class in a mirror, its e-nodes made where new (each child before its parent,
    in field order)."""
    return _compiled_builder(*_builder_source(t))


def _builder_source(t: Any) -> tuple[str, dict[str, Any]]:
    """The source of :func:`_builder`'s function for the right side ``t``, and the
    literals it names (a :class:`QueryError` for a right side the replay cannot make)."""
    lines: list[str] = []
    consts: dict[str, Any] = {}

    def emit(t: Any) -> str:
        if not isinstance(t, list):
            if not is_var(t):
                raise QueryError(f"a right side that is a literal ({t})")
            return f"find(env[{t!r}])"
        sig = CTORS.get(t[0])
        if sig is None:
            raise QueryError(f"a right side with {t[0]!r}")
        fields = []
        for ch, x in zip(sig, t[1:], strict=True):
            if ch == "E":
                fields.append(emit(x))
                continue
            is_v, v = _value(x)
            if is_v:
                fields.append(f"env[{v!r}]")
            else:
                name = f"k{len(consts)}"
                consts[name] = v
                fields.append(name)
        out = f"t{len(lines)}"
        lines.append(f"    {out} = node({t[0]!r}, ({', '.join(fields)},))")
        return out

    top = emit(t)
    src = ("def build(m, env):\n    node, find = m.node, m.find\n" +
           "".join(f"{line}\n" for line in lines) + f"    return {top}\n")
    return src, consts


def _compiled_builder(src: str, consts: dict[str, Any]) -> Callable[[Mirror, Env], int]:
    scope: dict[str, Any] = dict(consts)
    exec(compile(src, "<right side>", "exec"), scope)  # noqa: S102
    build = scope.pop("build")
    build.source = src
    return build


class _Interval:
    """An interval rule: its query's Python (compiled with the other interval rules of
    its constructor: ``RuleBook.interval_groups``) and the bounds it sets."""

    def __init__(self, name: str, body: str, prefix: str = "k"):
        query, actions = read(f"({body})")
        first = query[0]
        if first[0] != "=" or not isinstance(first[2], list):
            raise ValueError(f"interval rule {name}: first atom is not (= e (Ctor ...))")
        self.ctor, self.root = first[2][0], first[1]
        sets: list[tuple[bool, bool, Any]] = []
        for a in actions:
            if a[0] != "set" or a[1][0] not in ("lo", "hi") or a[1][1] != first[1]:
                raise ValueError(f"interval rule {name}: action {a}")
            sets.append((a[1][0] == "lo", *_value(a[2])))
        #: the bindings a match gives, in order (the root's class first)
        keep = list(dict.fromkeys([self.root, *[v for _lo, is_v, v in sets if is_v]]))
        #: (sets lo, a variable, its place in ``keep`` or the literal) per action
        self.sets = [(is_lo, is_v, keep.index(v) if is_v else v) for is_lo, is_v, v in sets]
        self.query = query_source(name, first[2], first[1], query[1:], keep,
                                  as_tuple=True, prefix=prefix)

    def actions(self, _i: int, q: QuerySource) -> list[str]:
        """The lines of a match's actions (:func:`compile_group`'s ``emit``):
        ``(the class, a lower bound, an upper bound)`` appended to ``out`` (None for a
        bound the rule does not set; the n-th ``lo`` set with the n-th ``hi``)."""
        vals: tuple[list[str], list[str]] = ([], [])
        for is_lo, is_v, v in self.sets:
            vals[not is_lo].append(q.names[v] if is_v else repr(v))
        return [f"out.append(({q.names[0]}, {lo}, {hi}))"
                for lo, hi in zip_longest(*vals, fillvalue="None")]


class _Group:
    """The rewrites of one rule-set part with one root constructor, their queries one
    function (:func:`compile_group`); the levels of those a semi-naive round gives
    root e-nodes by level (the others, which look an e-node up, match every root).

    Built when a round first reads it (``rules``, ``matches``, ``levels``,
    ``lookups``): most runs match a few of a program's groups, and what is built is a
    pure function of the program's egglog text, whichever run reads it first."""

    _LAZY = frozenset(("rules", "matches", "levels", "lookups"))

    def __init__(self, part: str, texts: list[tuple[int, str]],
                 law: Callable[[str], str], alone: Callable[[str], bool]):
        self.part = part
        #: per rewrite, its place in ``Program.programs`` (its literals' prefix) and
        #: its egglog text; the name its matches count under, whether it is alone there
        self._texts, self._law, self._alone = texts, law, alone

    def __getattr__(self, name: str) -> Any:
        if name not in _Group._LAZY:
            raise AttributeError(name)
        with _BOOKS_LOCK:
            if "rules" not in self.__dict__:
                rules = [_Rewrite(text, self._law, self.part, f"k{i}_")
                         for i, text in self._texts]
                for r in rules:
                    r.alone = self._alone(r.name)
                self.matches = compile_group([r.query for r in rules])
                self.levels = sorted({r.query.levels for r in rules if not r.query.lookups})
                self.lookups = any(r.query.lookups for r in rules)
                self.rules = rules
        return self.__dict__[name]


class _IntervalGroup:
    """The interval rules of one constructor as one function, compiled at its first
    call, which puts the function in ``RuleBook.interval_groups`` in its place."""

    def __init__(self, book: RuleBook, ctor: str, rules: list[tuple[int, tuple]]):
        #: (the rule's place in ``ANALYSIS_RULES``, the rule) per rule
        self.book, self.ctor, self.rules = book, ctor, rules

    def compiled(self) -> Callable[..., list[tuple]]:
        """The constructor's interval rules as one function (their actions inline)."""
        rs = [_Interval(n, b, f"k{j}_") for j, (n, _i, b) in self.rules]
        return compile_group([r.query for r in rs], lambda i, q: rs[i].actions(i, q),
                             by_level=False)

    def __call__(self, m: Mirror, entries: list) -> list[tuple]:
        groups = self.book.interval_groups
        with _BOOKS_LOCK:
            fn = groups[self.ctor]
            if fn is self:
                fn = groups[self.ctor] = self.compiled()
        return fn(m, entries)


#: a rewrite's root constructor and name in its egglog text (``ERule.program``)
_REWRITE_HEAD = re.compile(r'\(rewrite \((\w+) .* :name "([^"]*)"\)', re.S)
#: a counting twin's counter and the name of the rule it counts (``count_program``)
_COUNT_TWIN = re.compile(
    rf'\(set \({COUNT_FN} (\d+)\) \d+\)\) :ruleset \w+ :name "([^"]*)#count"\)$')
#: an interval rule's constructor (its first atom, ``(= e (Ctor ...))``)
_INTERVAL_CTOR = re.compile(r"\(\(= \w+ \((\w+)[ )]")


class RuleBook:
    """A program's native rewrites by rule-set part, and the interval rules, compiled
    group by group when a run first needs one (:class:`_Group`, :class:`_IntervalGroup`)."""

    def __init__(self, program: Any):
        law = program.native_names.get
        texts: dict[str, dict[str, list[tuple[int, str]]]] = {}
        names: Counter[str] = Counter()
        for i, (part, text, _need) in enumerate(program.programs):
            # (a run that replays has no fixed-width node: the index rule sets only)
            if part.startswith(REPLAYED_SETS) and text.startswith("(rewrite"):
                head = _REWRITE_HEAD.fullmatch(text)
                if head is None:
                    raise ValueError(f"not a rewrite: {text[:60]}")
                ctor, name = head.groups()
                names[law(name, name)] += 1
                texts.setdefault(part, {}).setdefault(ctor, []).append((i, text))

        def rule_law(n: str) -> str:
            return law(n, n)

        def alone(n: str) -> bool:
            return names[n] == 1

        #: rule-set part -> its rewrites' groups by root constructor
        self.groups: dict[str, dict[str, _Group]] = {
            part: {ctor: _Group(part, ts, rule_law, alone) for ctor, ts in by_ctor.items()}
            for part, by_ctor in texts.items()}
        #: combination of parts -> its groups by root constructor (``_by_ctor``)
        self._combined: dict[tuple[str, ...], dict[str, list[_Group]]] = {}
        intervals: dict[str, list[tuple[int, tuple]]] = {}
        for j, rule in enumerate(ANALYSIS_RULES):
            ctor = _INTERVAL_CTOR.match(rule[2])
            if ctor is None:
                raise ValueError(f"interval rule {rule[0]}: first atom is not (= e (Ctor ...))")
            intervals.setdefault(ctor.group(1), []).append((j, rule))
        #: each constructor's interval rules as one function (its matches' actions:
        #: ``_Interval.actions``)
        self.interval_groups: dict[str, Callable[..., list[tuple]]] = {
            ctor: _IntervalGroup(self, ctor, rs) for ctor, rs in intervals.items()}

    def build(self) -> None:
        """Build every group now (a warm-up that leaves no build to the runs)."""
        self.rewrites()
        with _BOOKS_LOCK:
            for ctor, fn in self.interval_groups.items():
                if isinstance(fn, _IntervalGroup):
                    self.interval_groups[ctor] = fn.compiled()

    def rewrites(self) -> list[_Rewrite]:
        """Every rewrite of the book, by part and root constructor (every group built)."""
        return [r for groups in self.groups.values() for g in groups.values()
                for r in g.rules]

    def _by_ctor(self, parts: tuple[str, ...]) -> dict[str, list[_Group]]:
        """The groups of ``parts`` by their root constructor, in the parts' order (kept
        per combination of parts: a run asks for a few)."""
        out = self._combined.get(parts)
        if out is None:
            out = {}
            for part in parts:
                if not part.startswith(REPLAYED_SETS):
                    raise ReplayStopped(f"rule set part {part}: egglog runs it")
                for ctor, group in self.groups.get(part, {}).items():
                    out.setdefault(ctor, []).append(group)
            with _BOOKS_LOCK:
                if len(self._combined) >= _COMBINED:
                    self._combined.clear()
                self._combined[parts] = out
        return out

    def round(self, m: Mirror, parts: tuple[str, ...], matches: dict[str, int],
              counted: set[tuple]) -> bool:
        """One round of the rewrites of ``parts`` on ``m``, as egglog runs it: every
        match found in ``m`` as it is, then their rewrites applied, then the rebuild;
        whether ``m`` changed. A match not in ``counted`` (by rule, e-node and
        bindings) is counted in ``matches`` and added: egglog counts a match in the
        round that first finds it.

        Semi-naive, as egglog's: a rule that ran in the last round matches only the
        root e-nodes a match holding a changed atom can have (:meth:`Mirror.above` of
        the classes ``Mirror.log`` names since; every root when the rule looks an
        e-node up). A match of the last round found again would only redo its
        actions, each idempotent: its right side's e-nodes are there (keyed by the
        classes now), its classes one, its e-node subsumed; so the e-graph after the
        round is the same, and so is the count (the match was counted when found).
        For the same reason a match in ``counted`` is not applied again when its rule
        is the only one counting under its name (``_Rewrite.alone``: the key then names
        the rule, whose actions ran in the round that counted it); a round with no
        other match leaves the e-graph, and its index, as they are."""
        mark, m.native_mark = m.native_mark, (len(m.log), frozenset(parts))
        above = None if mark is None else m.above(m.dirty(mark[0]))
        ran = frozenset() if mark is None else mark[1]
        found = []
        by_ctor = m.by_ctor
        for ctor, groups in self._by_ctor(parts).items():
            entries = by_ctor.get(ctor)
            if entries is None:
                continue
            roots: dict[int, list] = {}  # level -> the root e-nodes a new match may have
            for g in groups:
                if above is None or g.part not in ran:
                    got = g.matches(m)
                else:
                    live = g.lookups  # (a query that looks an e-node up matches every root)
                    for level in g.levels:
                        near_roots = roots.get(level)
                        if near_roots is None:
                            near = above(level)
                            near_roots = roots[level] = list(compress(  # (in C)
                                entries, map(near.__contains__, map(_CLASS, entries))))
                        if near_roots:
                            live = True
                    if not live:
                        continue  # (no root a new match may have: nothing to call)
                    got = g.matches(m, roots)
                rules = g.rules
                for i, fields, env in got:
                    r = rules[i]
                    key = (r.name, fields, tuple(env.values()))
                    if key not in counted:
                        counted.add(key)
                        matches[r.name] = matches.get(r.name, 0) + 1
                    elif r.alone:
                        continue  # (applied in the round that found it: see above)
                    found.append((r, fields, env))
        if not found:
            return False
        # (the e-graph changed when an e-node or a class of one changed, or an e-node was
        # subsumed: a right side found again under a key the round made stale is not)
        before, subsumed = dict(m.table), len(m.sub)
        for r, fields, env in found:
            r.apply(m, fields, env)
        m.rebuild()
        return m.table != before or len(m.sub) != subsumed

    def count(self, m: Mirror, program: Any, rules: list[int]
              ) -> dict[int, tuple[int, bool]]:
        """The matches in ``m`` of each multiplying rule of ``rules`` (by its index,
        ``Program.mult``), its query run without its actions, and whether that is
        the count of its counting twin (``schedules.count_program``: the same query and
        guards) in an e-graph none of whose rows it has seen.

        Each match of the query's e-nodes counts (two that bind the same variables
        through other e-nodes too, where :meth:`round` counts one), as each of egglog's
        does when every variable of the pattern occurs twice or more in the query. A
        variable the pattern names once is a wildcard to egglog: matches that differ
        in its e-nodes alone count once there, so the count is then at least the
        twin's (and 0 when the twin's is)."""
        places = self._twin_places(program)
        out: dict[int, tuple[int, bool]] = {}
        wanted: dict[_Group, dict[int, int]] = {}  # group -> place in it -> rule
        for i in rules:
            if i not in places:
                raise ReplayStopped(f"multiplying rule {i}: egglog counts it")
            g, k, exact = places[i]
            wanted.setdefault(g, {})[k] = i
            out[i] = (0, exact)
        for g, of_place in wanted.items():
            for k, _fields, _env in g.matches(m):
                i = of_place.get(k)
                if i is not None:
                    n, exact = out[i]
                    out[i] = (n + 1, exact)
        return out

    #: multiplying rule -> its rewrite's group, its place there and whether its
    #: matches are its twin's (:meth:`_twin_places`)
    _twins: dict[int, tuple[_Group, int, bool]] | None = None

    def _twin_places(self, program: Any) -> dict[int, tuple[_Group, int, bool]]:
        """Each multiplying rule's rewrite in the book (its group and its place there,
        found by the name its counting twin names: ``schedules.count_program``) and
        whether its twin's query names every variable of its pattern twice or more
        (:meth:`count`); found when first read, a pure function of the program's
        text."""
        twins = self._twins
        if twins is None:
            place = {}
            for groups in self.groups.values():
                for g in groups.values():
                    for k, (_i, text) in enumerate(g._texts):
                        head = _REWRITE_HEAD.fullmatch(text)
                        if head is not None:
                            place[head.group(2)] = (g, k)
            twins = {}
            for _part, text, _need in program.programs:
                twin = _COUNT_TWIN.search(text)
                if twin is not None and twin.group(2) in place:
                    twins[int(twin.group(1))] = (*place[twin.group(2)], _no_wildcard(text))
            with _BOOKS_LOCK:
                self._twins = twins
        return twins

    def analyse(self, m: Mirror, cap: int) -> int:
        """The interval rules to their fixed point (each round matches the bounds the
        last left, then merges what it sets); the rounds run. :class:`ReplayStopped` past
        ``cap`` rounds.

        Semi-naive: an interval rule reads its e-node and its children's bounds, and
        the last analysis left a fixed point, whose matches would set nothing new (a
        bound merged by max or min only tightens). So a round matches only the
        e-nodes of a class that changed since the last round (``Mirror.log`` up to the
        first round; the bounds the last round changed after it) or with such a
        child: the other e-nodes' matches would set what they set before. (A field
        is tested against the changed classes whatever its kind: a literal equal to
        a class id only adds an e-node whose match sets nothing new.)"""
        lo, hi = m.lo, m.hi
        groups = self.interval_groups
        dirty = None if m.analysed is None else m.dirty(m.analysed)
        if dirty is not None and not dirty:  # (nothing changed since the fixed point)
            m.analysed = len(m.log)
            return 1
        for rounds in range(1, cap + 1):
            sets: list[tuple[int, int | None, int | None]] = []
            for ctor, entries in m.by_ctor.items():
                group = groups.get(ctor)
                if group is None:
                    continue
                if dirty is not None:
                    apart = dirty.isdisjoint
                    entries = [x for x in entries if x[1] in dirty or not apart(x[0])]
                    if not entries:
                        continue
                sets += group(m, entries)
            dirty = set()
            for c, vlo, vhi in sets:  # (lo merged by max, hi by min)
                if vlo is not None:
                    old = lo.get(c)
                    if old is None or vlo > old:
                        lo[c] = vlo
                        dirty.add(c)
                if vhi is not None:
                    old = hi.get(c)
                    if old is None or vhi < old:
                        hi[c] = vhi
                        dirty.add(c)
            if not dirty:
                m.analysed = len(m.log)
                return rounds
            m.log.extend(dirty)
        raise ReplayStopped("the interval analysis did not settle")


def _no_wildcard(twin: str) -> bool:
    """Whether the counting twin ``twin`` (``(rule ((= count_root PATTERN) guards...)
    ...)``) names each variable of its pattern twice or more in its query."""
    query = read(twin)[1]
    seen: Counter[str] = Counter()

    def count(t: Any) -> None:
        if isinstance(t, list):
            for x in t[1:]:
                count(x)
        elif is_var(t):
            seen[t] += 1

    for fact in query:
        count(fact)
    pattern = query[0][2]
    return all(seen[v] > 1 for v in _rhs_vars(pattern, []))


#: combinations of parts a rule book keeps at most (``RuleBook._by_ctor``)
_COMBINED = 256
_BOOKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BOOKS_LOCK = threading.Lock()  # (each thread's sessions share a program's book)


def rule_book(program: Any) -> RuleBook:
    """The compiled rules of ``program`` (built once per program: a pure function of
    its egglog text)."""
    with _BOOKS_LOCK:
        book = _BOOKS.get(program)
        if book is None:
            book = _BOOKS[program] = RuleBook(program)
    return book


def snapshot_of(m: Mirror, ins: Any) -> Snapshot:
    """The snapshot egglog's e-graph would give of ``m`` (:meth:`Snapshot.of_rows`:
    the classes are their roots, a handle when the class has one)."""
    find, sub, parent = m.find, m.sub, m.parent
    if sub:
        rows = [(c, key[0], key[1], key in sub) for key, c in m.table.items()]
    else:
        rows = [(c, ctor, fields, False) for (ctor, fields), c in m.table.items()]
    # (most handles' parent is their root: no call to find for them)
    handles = {k: p if parent[p] == p else find(p) for k, p in parent.items()
               if k < NEW_CLASS}
    return Snapshot.of_rows(rows, set(handles.values()), handles, m.lo, m.hi, m.defs, ins)


def table_sizes(m: Mirror) -> dict[str, int]:
    """The rows of each constructor's table (egglog's sizes; subsumed rows too)."""
    # (from the index, which holds the e-nodes not subsumed, and the subsumed ones:
    # all of the table when the sizes add up to it)
    sizes = {ctor: len(entries) for ctor, entries in m.by_ctor.items()}
    for ctor, _fields in m.sub:
        sizes[ctor] = sizes.get(ctor, 0) + 1
    if sum(sizes.values()) == len(m.table):
        return sizes
    return dict(Counter(map(itemgetter(0), m.table)))


def empty_interval(m: Mirror) -> int | None:
    """A never-Invalid class of ``m`` whose interval is empty (the tripwire), or None."""
    lo, hi = m.lo, m.hi
    for c in sorted(m.defs):
        if c in lo and c in hi and lo[c] > hi[c]:
            return c
    return None
