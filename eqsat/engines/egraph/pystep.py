"""A run's first step computed in Python, when egglog's would change nothing:
:func:`first_step`.

Most calls on small index expressions saturate in their first iteration: the native
rules find nothing new in the input and the baseline's rewrite, the interval analysis
sets the classes' bounds, and the computed pass records nothing. egglog's step then
costs its fixed commands (the loading, a round of the native rules, the analysis, the
sizes, and the reset after the run) on an e-graph of a dozen e-nodes. Here the same
step is replayed in Python from the rows the run recorded (:class:`Mirror`): the
e-graph they make (handles, unions, congruence), the facts' bounds, one round of the
native rules' queries (would any change the e-graph?), the interval rules to their
fixed point and the snapshot egglog's e-graph would give. The rules are read from the
egglog text the e-graph runs (``Program.programs``, ``analysis_program``), so the two
cannot drift; the primitives compute as egglog 13.2's i64 ones do (an overflow, a
division by 0 or a shift out of range: no match).

When a native rule would change the e-graph, nothing here is kept (:class:`NotReplayedError`) and
the step goes to egglog as before. The outputs are the same either way (the tests run
both on the corpus and on random graphs and compare the snapshots).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from eqsat.engines.egraph.analyses import (
    ANALYSIS_RULES,
    DTYPE_SETS,
    FACT_TAGS,
    FIXED_DTYPES,
    I64_MAX,
    I64_MIN,
    INT_DTYPES,
)
from eqsat.engines.egraph.encoding.schema import CTORS
from eqsat.ir.egglog_text import read

__all__ = ["NotReplayedError", "Mirror", "RuleBook", "rule_book", "snapshot_of", "sizes",
           "empty_interval", "MAX_ROWS", "NEW_CLASS"]

#: a first step is replayed here only for at most this many e-node and union rows (a
#: larger e-graph's Python matching would cost more than egglog's fixed commands save)
MAX_ROWS = 400


class NotReplayedError(Exception):
    """The step needs egglog: a native rule would change the e-graph, or the rows hold
    something this module does not replay."""


# ---- egglog 13.2's i64 primitives ------------------------------------------------------
def _fit(v: int) -> int | None:
    return v if I64_MIN <= v <= I64_MAX else None


def _div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return _fit(q if (a < 0) == (b < 0) else -q)


def _rem(a: int, b: int) -> int | None:
    if b == 0 or (a == I64_MIN and b == -1):
        return None
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _shl(a: int, s: int) -> int | None:
    if not 0 <= s < 64:
        return None
    v = (a << s) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v


def _shr(a: int, s: int) -> int | None:
    return a >> s if 0 <= s < 64 else None


def _log2(a: int) -> int:
    if a <= 0:
        raise NotReplayedError("log2 of a value <= 0 (egglog panics)")
    return a.bit_length() - 1


#: primitive -> function of its evaluated arguments (None: no match)
_PRIMS: dict[str, Callable[..., Any]] = {
    "+": lambda a, b: _fit(a + b), "-": lambda a, b: _fit(a - b),
    "*": lambda a, b: _fit(a * b), "/": _div, "%": _rem,
    "min": min, "max": max, "abs": lambda a: _fit(abs(a)),
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": _shl, ">>": _shr, "log2": _log2,
    "bool-<": operator.lt, "bool->": operator.gt, "bool-<=": operator.le,
    "bool->=": operator.ge, "or": lambda a, b: a or b, "and": lambda a, b: a and b,
    "not": operator.not_,
}
#: primitives that, as a fact, hold or fail
_CHECKS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
    "!=": operator.ne,
}
_DMIN = {n: lo for n, (lo, _) in INT_DTYPES.items()}
_DMAX = {n: hi for n, (_, hi) in INT_DTYPES.items()}
#: the static relations of ``analyses.dtype_table``
_RELATIONS: dict[str, Callable[..., bool]] = {
    "IntDt": lambda d: d in INT_DTYPES and d != "bool",
    "FixDt": lambda d: d in FIXED_DTYPES,
    "IdxDt": lambda d: d == "index",
    "DtIn": lambda s, d: d in DTYPE_SETS.get(s, ()),
}


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
        self.by_class: dict[int, dict[str, list[tuple]]] = {}

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
        for table, merge in ((self.lo, max), (self.hi, min)):
            vb = table.pop(b, None)
            if vb is not None:
                va = table.get(a)
                table[a] = vb if va is None else merge(va, vb)
        if b in self.defs:
            self.defs.discard(b)
            self.defs.add(a)
        return True

    def node(self, ctor: str, fields: tuple) -> tuple[int, bool]:
        """The class of the e-node ``(ctor fields)`` (fields canonical), made when new;
        and whether it was."""
        key = (ctor, fields)
        c = self.table.get(key)
        if c is not None:
            return self.find(c), False
        c = self.made
        self.made += 1
        self.parent[c] = c
        self.table[key] = c
        return c, True

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
        became equal (congruence), to a fixed point; index them."""
        while True:
            table: dict[tuple, int] = {}
            sub: set[tuple] = set()
            merged = False
            for (ctor, fields), c in self.table.items():
                key = (ctor, self.canon(ctor, fields))
                if (ctor, fields) in self.sub:
                    sub.add(key)
                old = table.get(key)
                if old is None:
                    table[key] = self.find(c)
                elif self.union(old, c):
                    merged = True
            self.table, self.sub = table, sub
            if not merged:
                break
        self.table = {key: self.find(c) for key, c in self.table.items()}
        by_ctor: dict[str, list[tuple[tuple, int]]] = {}
        by_class: dict[int, dict[str, list[tuple]]] = {}
        for key, c in self.table.items():
            if key in self.sub:
                continue  # (a subsumed e-node matches no query)
            by_ctor.setdefault(key[0], []).append((key[1], c))
            by_class.setdefault(c, {}).setdefault(key[0], []).append(key[1])
        self.by_ctor, self.by_class = by_ctor, by_class

    # ---- loading
    def load(self, rows: list[list[str]]) -> None:
        """Load insertion rows (``RNode``'s e-nodes, unions and facts, ``RSub``'s
        subsumptions) as egglog's loading rules do, then :meth:`rebuild`."""
        tags = {v: k for k, v in FACT_TAGS.items()}
        facts: list[tuple[str, int, int]] = []
        subs: list[tuple[str, tuple]] = []
        for r in rows:
            tag = r[1]
            if len(r) == 8:  # an RSub row: tag s1 s2 i e1 e2 e3 e4
                subs.append((r[0], _fields(r[0], ["", *r])))
            elif tag == "U":
                self.union(self.handle(int(r[0])), self.handle(int(r[5])))
            elif tag in tags:
                facts.append((tags[tag], int(r[0]), int(r[4])))
            elif tag in CTORS:
                fields = _fields(tag, r)
                for i in _E_POS[tag]:
                    self.handle(fields[i])
                c, _ = self.node(tag, self.canon(tag, fields))
                self.union(self.handle(int(r[0])), c)
            else:
                raise NotReplayedError(f"an insertion row of tag {tag!r}")
        self.rebuild()
        for rel, k, v in facts:
            c = self.handle(k)
            if rel == "RLo":
                old = self.lo.get(c)
                self.lo[c] = v if old is None else max(old, v)
            elif rel == "RHi":
                old = self.hi.get(c)
                self.hi[c] = v if old is None else min(old, v)
            else:
                self.defs.add(c)
        for ctor, fields in subs:
            key = (ctor, self.canon(ctor, fields))
            if key not in self.table:
                raise NotReplayedError("a subsumption of an e-node the e-graph lacks")
            self.sub.add(key)
        if subs:
            self.rebuild()


_E_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, ch in enumerate(sig) if ch == "E") for name, sig in CTORS.items()}


def _fields(ctor: str, r: list[str]) -> tuple:
    """The fields of an insertion row ``k ctor s1 s2 i e1 e2 e3 e4`` of ``ctor``."""
    sig = CTORS[ctor]
    ss, es = iter(r[2:4]), iter(r[5:9])
    return tuple(next(ss) if ch == "S" else int(r[4]) if ch == "I" else int(next(es))
                 for ch in sig)


# ---- rules ---------------------------------------------------------------------------
Env = dict[str, Any]


class _Query:
    """A rule's query compiled for a :class:`Mirror`: a pattern of e-nodes (the root
    bound to ``root``) and the facts, ordered so that each reads bound variables only."""

    def __init__(self, name: str, pattern: list, root: str, facts: list):
        self.name = name
        self.pattern, self.root = pattern, root
        self.pat = _Pat(pattern)
        bound = _pattern_vars(pattern, set()) | {root}
        self.steps: list[Callable[[Mirror, Env], bool]] = []
        todo = list(facts)
        while todo:
            for i, f in enumerate(todo):
                step = _fact_step(f, bound)
                if step is not None:
                    self.steps.append(step)
                    del todo[i]
                    break
            else:
                raise ValueError(f"rule {name}: facts {todo} read unbound variables")

    def matches(self, m: Mirror) -> Iterator[tuple[tuple, Env]]:
        """Every binding of the query in ``m`` whose facts hold, with the fields of the
        e-node its pattern's root matched."""
        steps, root, pat = self.steps, self.root, self.pat
        lits = pat.lits
        for fields, c in m.by_ctor.get(pat.ctor, ()):
            for i, v in lits:
                if fields[i] != v:
                    break
            else:
                found: list[Env] = []
                _match(m, pat, fields, {root: c}, found)
                for env in found:
                    for step in steps:
                        if not step(m, env):
                            break
                    else:
                        yield fields, env


class _Pat:
    """An e-node pattern compiled: its constructor, the fields that must hold a value
    (``lits``), bind or repeat a variable (``vars``), or match a pattern in the child
    class they name (``subs``), each by its field's index."""

    __slots__ = ("ctor", "lits", "vars", "subs")

    def __init__(self, p: list):
        self.ctor = p[0]
        self.lits: list[tuple[int, Any]] = []
        self.vars: list[tuple[int, str]] = []
        self.subs: list[tuple[int, _Pat]] = []
        for i, want in enumerate(p[1:]):
            if isinstance(want, list):
                self.subs.append((i, _Pat(want)))
            elif _is_var(want):
                self.vars.append((i, want))
            else:
                self.lits.append((i, _literal(want)))


_NO = object()


def _match(m: Mirror, pat: _Pat, fields: tuple, env: Env, out: list[Env]) -> None:
    """Append to ``out`` the bindings that extend ``env`` so that the e-node ``fields``
    (of ``pat``'s constructor) matches ``pat``, its children's e-nodes searched in their
    classes."""
    for i, v in pat.lits:
        if fields[i] != v:
            return
    env = env.copy()
    for i, name in pat.vars:
        old = env.get(name, _NO)
        if old is _NO:
            env[name] = fields[i]
        elif old != fields[i]:
            return
    if pat.subs:
        _match_subs(m, pat.subs, 0, fields, env, out)
    else:
        out.append(env)


def _match_subs(m: Mirror, subs: list[tuple[int, _Pat]], j: int, fields: tuple, env: Env,
                out: list[Env]) -> None:
    i, q = subs[j]
    cands = m.by_class.get(fields[i])
    if cands is None:
        return
    nodes = cands.get(q.ctor)
    if not nodes:
        return
    if j + 1 == len(subs):
        for f in nodes:
            _match(m, q, f, env, out)
        return
    for f in nodes:
        part: list[Env] = []
        _match(m, q, f, env, part)
        for e in part:
            _match_subs(m, subs, j + 1, fields, e, out)


def _is_var(t: Any) -> bool:
    return isinstance(t, str) and not t.startswith('"') and t not in ("true", "false") \
        and not _is_int(t)


def _is_int(t: str) -> bool:
    return t.lstrip("-").isdigit()


def _literal(t: str) -> Any:
    if t.startswith('"'):
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    return int(t)


def _pattern_vars(p: list, out: set[str]) -> set[str]:
    for f in p[1:]:
        if isinstance(f, list):
            _pattern_vars(f, out)
        elif _is_var(f):
            out.add(f)
    return out


def _term_vars(t: Any, out: set[str]) -> set[str]:
    if isinstance(t, list):
        for x in t[1:]:
            _term_vars(x, out)
    elif _is_var(t):
        out.add(t)
    return out


def _evaluator(t: Any) -> Callable[[Mirror, Env], Any]:
    """``t`` (a term of the query's facts) as a function of the e-graph and the
    bindings; None: no value (an absent bound, a failed primitive)."""
    if not isinstance(t, list):
        if _is_var(t):
            return lambda m, env: env[t]
        v = _literal(t)
        return lambda m, env: v
    head = t[0]
    if head in CTORS:  # (an e-node the query names: its class, when the e-graph has it)
        return lambda m, env: _node_class(m, t, env)
    args = [_evaluator(a) for a in t[1:]]
    if head in ("lo", "hi"):
        (a,) = args
        return lambda m, env: getattr(m, head).get(m.find(a(m, env)))
    if head in ("dmin", "dmax"):
        (a,) = args
        table = _DMIN if head == "dmin" else _DMAX
        return lambda m, env: table.get(a(m, env))
    fn = _PRIMS.get(head)
    if fn is None:
        raise ValueError(f"term {t}: no primitive {head!r}")

    def prim(m: Mirror, env: Env) -> Any:
        vals = [a(m, env) for a in args]
        return None if None in vals else fn(*vals)
    return prim


def _fact_step(f: list, bound: set[str]) -> Callable[[Mirror, Env], bool] | None:
    """Fact ``f`` as a check (binding a variable for ``(= v term)``), or None while it
    reads a variable not bound yet; ``bound`` gains what it binds."""
    head = f[0]
    if head == "=":
        a, b = f[1], f[2]
        if _is_var(b) and b not in bound and not (_is_var(a) and a not in bound):
            a, b = b, a
        if _is_var(a) and a not in bound:
            if not _term_vars(b, set()) <= bound:
                return None
            ev = _evaluator(b)
            bound.add(a)

            def bind(m: Mirror, env: Env) -> bool:
                v = ev(m, env)
                if v is None:
                    return False
                env[a] = v
                return True
            return bind
        if not _term_vars(f, set()) <= bound:
            return None
        ea, eb = _evaluator(a), _evaluator(b)

        def same(m: Mirror, env: Env) -> bool:
            x = ea(m, env)
            return x is not None and x == eb(m, env)
        return same
    if not _term_vars(f, set()) <= bound:
        return None
    args = [_evaluator(x) for x in f[1:]]
    if head in _CHECKS:
        check = _CHECKS[head]

        def holds(m: Mirror, env: Env) -> bool:
            x, y = args[0](m, env), args[1](m, env)
            return x is not None and y is not None and check(x, y)
        return holds
    if head == "Def":
        return lambda m, env: m.find(args[0](m, env)) in m.defs
    rel = _RELATIONS.get(head)
    if rel is None:
        raise ValueError(f"fact {f}: no relation or check {head!r}")
    return lambda m, env: rel(*[a(m, env) for a in args])


class _Rewrite:
    """A native rewrite: its query, right side, whether it subsumes, and the name its
    matches count under."""

    def __init__(self, text: str, law: Callable[[str], str]):
        t = read(text)
        if t[0] != "rewrite":
            raise ValueError(f"not a rewrite: {text[:60]}")
        lhs, rhs, opts = t[1], t[2], list(t[3:])
        self.subsume = ":subsume" in opts
        if self.subsume:
            opts.remove(":subsume")
        kw = dict(zip(opts[::2], opts[1::2], strict=True))
        self.name = law(kw[":name"].strip('"'))
        self.query = _Query(self.name, lhs, "__root", list(kw.get(":when", [])))
        self.rhs = rhs

    def apply(self, m: Mirror, fields: tuple, env: Env) -> bool:
        """This match's rewrite applied to ``m`` (the right side's e-nodes made, its
        class merged with the match's, the matched e-node subsumed); whether two classes
        merged or an e-node was subsumed. The table is stale until ``m.rebuild()``."""
        c, _ = _build(m, self.rhs, env)
        merged = m.union(c, env["__root"])
        if self.subsume:
            key = (self.query.pattern[0], fields)
            if key not in m.sub:
                m.sub.add(key)
                return True
        return merged


def _build(m: Mirror, t: Any, env: Env) -> tuple[int, bool]:
    """The class of a rewrite's right side ``t`` in ``m``, its e-nodes made where new;
    and whether one was."""
    if not isinstance(t, list):
        if _is_var(t):
            return m.find(env[t]), False
        raise NotReplayedError(f"a right side that is a literal ({t})")
    ctor = t[0]
    sig = CTORS.get(ctor)
    if sig is None:
        raise NotReplayedError(f"a right side with {ctor!r}")
    fields, made = [], False
    for ch, x in zip(sig, t[1:], strict=True):
        if ch == "E":
            c, new = _build(m, x, env)
            made = made or new
            fields.append(c)
        else:
            v = _evaluator(x)(m, env)
            if v is None:
                raise NotReplayedError(f"a right side's value failed ({x})")
            fields.append(v)
    c, new = m.node(ctor, tuple(fields))
    return c, made or new


def _node_class(m: Mirror, t: Any, env: Env) -> int | None:
    """The class of the e-node ``t`` a query names (a variable or an e-node of
    variables and values), None when ``m`` lacks it or a value fails (no match)."""
    if not isinstance(t, list):
        return m.find(env[t]) if _is_var(t) else None
    sig = CTORS[t[0]]
    fields = []
    for ch, x in zip(sig, t[1:], strict=True):
        v = _node_class(m, x, env) if ch == "E" else _evaluator(x)(m, env)
        if v is None:
            return None
        fields.append(v)
    c = m.table.get((t[0], tuple(fields)))
    return None if c is None else m.find(c)


class _Interval:
    """An interval rule: its query and the bounds it sets."""

    def __init__(self, name: str, body: str):
        query, actions = read(f"({body})")
        first = query[0]
        if first[0] != "=" or not isinstance(first[2], list):
            raise ValueError(f"interval rule {name}: first atom is not (= e (Ctor ...))")
        self.query = _Query(name, first[2], first[1], query[1:])
        self.sets: list[tuple[str, Callable[[Mirror, Env], Any]]] = []
        for a in actions:
            if a[0] != "set" or a[1][0] not in ("lo", "hi") or a[1][1] != first[1]:
                raise ValueError(f"interval rule {name}: action {a}")
            self.sets.append((a[1][0], _evaluator(a[2])))


class RuleBook:
    """A program's native rewrites by rule-set part, and the interval rules, compiled."""

    def __init__(self, program: Any):
        law = program.native_names.get
        #: rule-set part -> its rewrites by the constructor of their pattern's root
        self.parts: dict[str, dict[str, list[_Rewrite]]] = {}
        for part, text, _need in program.programs:
            if text.startswith("(rewrite"):
                r = _Rewrite(text, lambda n: law(n, n))
                self.parts.setdefault(part, {}).setdefault(r.query.pat.ctor, []).append(r)
        #: the interval rules by the constructor they are about
        self.intervals: dict[str, list[_Interval]] = {}
        for n, _i, b in ANALYSIS_RULES:
            r = _Interval(n, b)
            self.intervals.setdefault(r.query.pat.ctor, []).append(r)

    def round(self, m: Mirror, parts: tuple[str, ...], matches: dict[str, int]) -> bool:
        """One round of the rewrites of ``parts`` on ``m``, as egglog runs it: every
        match found in ``m`` as it was, then their rewrites applied, then the rebuild;
        whether ``m`` changed (their matches counted in ``matches``)."""
        found = []
        present = m.by_ctor
        for part in parts:
            for ctor, rules in self.parts.get(part, {}).items():
                if ctor not in present:
                    continue
                for r in rules:
                    for fields, env in r.query.matches(m):
                        matches[r.name] = matches.get(r.name, 0) + 1
                        found.append((r, fields, env))
        # (the e-graph changed when two classes merged, an e-node was subsumed, or
        # the rebuild left more e-nodes: without a merge, none collapse)
        nodes, changed = len(m.table), False
        for r, fields, env in found:
            changed = r.apply(m, fields, env) or changed
        if found:
            m.rebuild()
        return changed or len(m.table) > nodes

    def analyse(self, m: Mirror, cap: int) -> int:
        """The interval rules to their fixed point (each round matches the bounds the
        last left, then merges what it sets); the rounds run. :class:`NotReplayedError` past
        ``cap`` rounds."""
        lo, hi = m.lo, m.hi
        for rounds in range(1, cap + 1):
            sets: list[tuple[dict[int, int], int, int, bool]] = []
            for r in (r for ctor in m.by_ctor for r in self.intervals.get(ctor, ())):
                for _fields, env in r.query.matches(m):
                    c = env[r.query.root]
                    for fn, ev in r.sets:
                        v = ev(m, env)
                        if v is not None:
                            sets.append((lo if fn == "lo" else hi, c, v, fn == "lo"))
            changed = False
            for table, c, v, is_lo in sets:
                old = table.get(c)
                new = v if old is None else max(old, v) if is_lo else min(old, v)
                if new != old:
                    table[c] = new
                    changed = True
            if not changed:
                return rounds
        raise NotReplayedError("the interval analysis did not settle")


_BOOKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def rule_book(program: Any) -> RuleBook:
    """The compiled rules of ``program`` (built once per program: a pure function of
    its egglog text)."""
    book = _BOOKS.get(program)
    if book is None:
        book = _BOOKS[program] = RuleBook(program)
    return book


def snapshot_of(m: Mirror, ins: Any) -> Any:
    """The snapshot egglog's e-graph would give of ``m`` (:meth:`Snapshot.of_rows`)."""
    from eqsat.engines.egraph.encoding import Snapshot

    find = m.find
    rows = [(c, ctor, fields, (ctor, fields) in m.sub) for (ctor, fields), c in m.table.items()]
    handles = {k: find(k) for k in m.parent if k < NEW_CLASS}
    cls_of = {c: c for c in set(handles.values())}
    return Snapshot.of_rows(rows, cls_of, handles, m.lo, m.hi, m.defs, ins)


def sizes(m: Mirror) -> dict[str, int]:
    """The rows of each constructor's table (egglog's sizes; subsumed rows too)."""
    out: dict[str, int] = {}
    for ctor, _fields in m.table:
        out[ctor] = out.get(ctor, 0) + 1
    return out


def empty_interval(m: Mirror) -> int | None:
    """A never-Invalid class of ``m`` whose interval is empty (the tripwire), or None."""
    lo, hi = m.lo, m.hi
    for c in sorted(m.defs):
        if c in lo and c in hi and lo[c] > hi[c]:
            return c
    return None
