"""egglog queries compiled to Python: :func:`compile_query`.

A native rewrite's left side and guards, or an interval rule's query, read from the
egglog text the e-graph runs, become one generated Python function that finds every
match in a :class:`~eqsat.engines.egraph.pystep.Mirror`: a loop over the e-nodes of the
pattern's root constructor, a nested loop over each child pattern's e-nodes in the
child's class, the literal fields and repeated variables checked where they are bound,
and the guards in an order where each reads bound variables only. The primitives
compute as egglog 13.2's i64 ones do: an overflow, a division by 0, a shift out of
range or an absent bound is no match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from eqsat.engines.egraph.analyses import (
    DTYPE_RELATIONS,
    DTYPE_SETS,
    I64_MAX,
    I64_MIN,
    INT_DTYPES,
)
from eqsat.engines.egraph.encoding.schema import CTORS
from eqsat.ir.semantics import cdiv, cmod

__all__ = ["compile_query", "compile_group", "query_source", "QuerySource", "is_var",
           "literal", "QueryError"]


class QueryError(ValueError):
    """A query this compiler does not read (an unknown primitive, a guard that reads
    a variable nothing binds)."""


def is_var(t: Any) -> bool:
    """A variable of an egglog query (not a string, an integer or a boolean literal)."""
    return isinstance(t, str) and not t.startswith('"') and t not in ("true", "false") \
        and not t.lstrip("-").isdigit()


def literal(t: str) -> Any:
    """The value of a literal of an egglog query."""
    if t.startswith('"'):
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    return int(t)


# ---- egglog 13.2's i64 primitives that may fail (None: no match) ------------------------
def _div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = cdiv(a, b)
    return q if I64_MIN <= q <= I64_MAX else None


def _rem(a: int, b: int) -> int | None:
    return None if b == 0 or (a == I64_MIN and b == -1) else cmod(a, b)


def _abs(a: int) -> int | None:
    return None if a == I64_MIN else abs(a)


def _shl(a: int, s: int) -> int | None:
    if not 0 <= s < 64:
        return None
    v = (a << s) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v


def _shr(a: int, s: int) -> int | None:
    return a >> s if 0 <= s < 64 else None


def _log2(a: int) -> int | None:
    return a.bit_length() - 1 if a > 0 else None  # (egglog panics: the rules guard it)


_CALLS: dict[str, Callable[..., Any]] = {
    "/": _div, "%": _rem, "abs": _abs, "<<": _shl, ">>": _shr, "log2": _log2}
#: primitives written inline: (template, whether the result must be checked to fit i64)
_INLINE: dict[str, tuple[str, bool]] = {
    "+": ("({0} + {1})", True), "-": ("({0} - {1})", True), "*": ("({0} * {1})", True),
    "min": ("min({0}, {1})", False), "max": ("max({0}, {1})", False),
    "&": ("({0} & {1})", False), "|": ("({0} | {1})", False), "^": ("({0} ^ {1})", False),
    "bool-<": ("({0} < {1})", False), "bool->": ("({0} > {1})", False),
    "bool-<=": ("({0} <= {1})", False), "bool->=": ("({0} >= {1})", False),
    "or": ("({0} or {1})", False), "and": ("({0} and {1})", False),
    "not": ("(not {0})", False),
}
_CHECKS = {"<": "<", ">": ">", "<=": "<=", ">=": ">=", "!=": "!="}
_RELATIONS: dict[str, Callable[..., bool]] = {
    **{rel: members.__contains__ for rel, members in DTYPE_RELATIONS.items()},
    "DtIn": lambda s, d: d in DTYPE_SETS.get(s, ()),
}
_DMIN = {n: lo for n, (lo, _) in INT_DTYPES.items()}
_DMAX = {n: hi for n, (_, hi) in INT_DTYPES.items()}
_E_POS = {name: {i for i, ch in enumerate(sig) if ch == "E"} for name, sig in CTORS.items()}


#: the mirror's tables a query may read (``pystep.Mirror``'s attributes)
_TABLES = ("by_ctor", "by_class", "table", "find", "lo", "hi", "defs")
_TABLES_READ = re.compile(rf"\b({'|'.join(_TABLES)})\b")


class _Gen:
    """The source of one query's function, line by line, with its indentation."""

    def __init__(self, name: str, prefix: str = "k"):
        self.name = name
        self.prefix = prefix
        self.lines: list[str] = []
        self.depth = 1
        self.temps = 0
        self.names: dict[str, str] = {}  # query variable -> Python name
        self.consts: dict[str, Any] = {}  # Python name -> a value the function reads
        self.levels = 0  # the deepest field's level below the root e-node (its own: 1)
        self.lookups = False  # whether a guard looks an e-node up in the table
        self.todo: list[tuple[list, set[str]]] = []  # the facts not emitted yet, and
        # the variables each reads

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def const(self, v: Any) -> str:
        name = f"{self.prefix}{len(self.consts)}"
        self.consts[name] = v
        return name

    def var(self, v: str) -> str:
        py = self.names.get(v)
        if py is None:
            py = self.names[v] = f"v{len(self.names)}_{re.sub(r'[^A-Za-z0-9_]', '_', v)}"
        return py

    # ---- the pattern
    def node(self, p: list, fields: str, bound: set[str], level: int = 1) -> None:
        """Check the e-node ``fields`` against pattern ``p`` (literals, repeated
        variables), bind its variables, and loop over its children's e-nodes (its
        fields are at ``level`` below the root e-node)."""
        self.levels = max(self.levels, level)
        subs = []
        for i, want in enumerate(p[1:]):
            if isinstance(want, list):
                subs.append((i, want))
            elif is_var(want):
                py = self.var(want)
                if want in bound:
                    self.emit(f"if {fields}[{i}] != {py}: continue")
                else:
                    self.emit(f"{py} = {fields}[{i}]")
                    bound.add(want)
            else:
                self.emit(f"if {fields}[{i}] != {literal(want)!r}: continue")
        self.facts(bound, checks=True)
        for i, q in subs:
            kids, f = self.temp(), self.temp()
            self.emit(f"{kids} = by_class.get({fields}[{i}])")
            self.emit(f"if {kids} is None: continue")
            self.emit(f"for {f} in {kids}.get({q[0]!r}, ()):")
            self.depth += 1
            self.node(q, f, bound, level + 1)

    # ---- the guards
    def value(self, t: Any) -> str:
        """Emit the computation of term ``t``; the Python expression of its value (a
        value that fails skips the candidate)."""
        if not isinstance(t, list):
            return self.var(t) if is_var(t) else repr(literal(t))
        head = t[0]
        if head in CTORS:
            return self.lookup(t)
        if head in ("lo", "hi", "dmin", "dmax"):
            (a,) = [self.value(x) for x in t[1:]]
            table = {"lo": "lo", "hi": "hi", "dmin": "DMIN", "dmax": "DMAX"}[head]
            out = self.temp()
            self.emit(f"{out} = {table}.get({a})")
            self.emit(f"if {out} is None: continue")
            return out
        args = [self.value(x) for x in t[1:]]
        out = self.temp()
        if head in _INLINE:
            template, check = _INLINE[head]
            self.emit(f"{out} = {template.format(*args)}")
            if check:
                self.emit(f"if not {I64_MIN} <= {out} <= {I64_MAX}: continue")
            return out
        fn = _CALLS.get(head)
        if fn is None:
            raise QueryError(f"{self.name}: no primitive {head!r} in {t}")
        self.emit(f"{out} = {self.const(fn)}({', '.join(args)})")
        self.emit(f"if {out} is None: continue")
        return out

    def lookup(self, t: list) -> str:
        """Emit the lookup of the e-node ``t`` (its class, when the e-graph has it)."""
        fields = [self.lookup(x) if isinstance(x, list) else self.value(x)
                  for x in t[1:]]
        out = self.temp()
        self.lookups = True
        tup = ", ".join(fields) + ("," if len(fields) == 1 else "")
        self.emit(f"{out} = table.get(({t[0]!r}, ({tup})))")
        self.emit(f"if {out} is None: continue")
        self.emit(f"{out} = find({out})")
        return out

    def facts(self, bound: set[str], checks: bool = False) -> None:
        """Emit each waiting fact whose variables are bound, the checks (facts that
        bind no variable) first; ``checks``: the checks only. The pattern emits its
        checks as soon as it binds their variables: a candidate that fails one is
        skipped before the loops below it."""
        todo = self.todo
        while todo:
            ready = [f for f in todo if f[1] <= bound]
            for f in ready if checks else ready + [f for f in todo if f not in ready]:
                if self.fact(f[0], bound):
                    todo.remove(f)
                    break
            else:
                return

    def fact(self, f: list, bound: set[str]) -> bool:
        """Emit fact ``f`` when every variable it reads is bound (``bound`` gains what
        it binds); whether it was."""
        head = f[0]
        if head == "=":
            a, b = f[1], f[2]
            if is_var(b) and b not in bound and not (is_var(a) and a not in bound):
                a, b = b, a
            if is_var(a) and a not in bound:
                if not _vars(b) <= bound:
                    return False
                val = self.value(b)
                if val.isidentifier() and a not in self.names:
                    self.names[a] = val  # (a name of a value assigned once: no copy)
                else:
                    self.emit(f"{self.var(a)} = {val}")
                bound.add(a)
                return True
            if not _vars(f) <= bound:
                return False
            self.emit(f"if {self.value(a)} != {self.value(b)}: continue")
            return True
        if not _vars(f) <= bound:
            return False
        args = [self.value(x) for x in f[1:]]
        if head in _CHECKS:
            self.emit(f"if not ({args[0]} {_CHECKS[head]} {args[1]}): continue")
        elif head == "Def":
            self.emit(f"if {args[0]} not in defs: continue")
        elif head in _RELATIONS:
            self.emit(f"if not {self.const(_RELATIONS[head])}({', '.join(args)}): continue")
        else:
            raise QueryError(f"{self.name}: no relation or check {head!r} in {f}")
        return True


def _vars(t: Any, out: set[str] | None = None) -> set[str]:
    """The variables of term ``t`` (its arguments', not its head), added to ``out``."""
    if out is None:
        out = set()
    if isinstance(t, list):
        for x in t[1:]:
            _vars(x, out)
    elif is_var(t):
        out.add(t)
    return out


class QuerySource(NamedTuple):
    """One query's generated Python, not compiled: the loop over its root e-nodes
    (``f0, c0``) without its header, to which a match is appended, and what it reads."""

    name: str
    ctor: str  #: the pattern's root constructor
    body: list[str]  #: the loop's body, indented for a loop at the function's top
    indent: str  #: where a match is appended (the innermost loop's body)
    env: str  #: the match's bindings, a Python expression
    names: list[str]  #: the Python names of the bindings, in the order kept
    used: frozenset[str]  #: the mirror's tables it reads (``_TABLES``)
    consts: dict[str, Any]
    levels: int
    lookups: bool


def query_source(name: str, pattern: list, root: str, facts: list, keep: list[str],
                 as_tuple: bool = False, prefix: str = "k") -> QuerySource:
    """The Python of a query (see :func:`compile_query`), its literals named
    ``prefix`` and a number (distinct prefixes: queries that share a function)."""
    g = _Gen(name, prefix)
    g.depth += 1
    bound = {root}
    g.names[root] = "c0"  # (the root e-node's class, bound by the loop)
    g.todo = [(f, _vars(f)) for f in facts]
    g.node(pattern, "f0", bound)
    g.facts(bound)
    if g.todo:
        raise QueryError(f"{name}: facts {[f for f, _ in g.todo]} read unbound variables")
    if as_tuple:
        env = f"({''.join(f'{g.var(k)}, ' for k in keep)})"
    else:
        env = f"{{{', '.join(f'{k!r}: {g.var(k)}' for k in keep)}}}"
    g.lines = _read_fields_only(g.lines, env)
    body = "\n".join(g.lines)
    used = frozenset(_TABLES_READ.findall(body)) | {"by_ctor"}
    return QuerySource(name, pattern[0], g.lines, "    " * g.depth, env,
                       [g.var(k) for k in keep], used, g.consts, g.levels, g.lookups)


#: a line binding a query variable to an e-node's field
_FIELD_BINDING = re.compile(r"\s*(v\d+_\w*) = [ft]\d+\[\d+\]")
#: a query variable's Python name (``_Gen.var``)
_VAR_NAME = re.compile(r"\bv\d+_\w*")


def _read_fields_only(lines: list[str], env: str) -> list[str]:
    """``lines`` without the bindings of fields no other line nor ``env`` reads (a
    pattern names each field; many are read by no check, guard or binding)."""
    names = [m.group(1) if (m := _FIELD_BINDING.fullmatch(line)) else None
             for line in lines]
    text = "\n".join([env] + [line for line, n in zip(lines, names, strict=True)
                              if n is None])
    read = set(_VAR_NAME.findall(text))
    return [line for line, n in zip(lines, names, strict=True) if n is None or n in read]


def _compiled(src: str, fname: str, consts: dict[str, Any], what: str) -> Callable:
    scope: dict[str, Any] = {"DMIN": _DMIN, "DMAX": _DMAX, **consts}
    exec(compile(src, what, "exec"), scope)  # noqa: S102
    fn = scope.pop(fname)  # (its globals do not hold it: no cycle to collect)
    fn.source = src
    return fn


def _head(fname: str, args: str, used: frozenset[str]) -> str:
    """A query function's first lines: each mirror's table it reads, read once."""
    return (f"def {fname}({args}):\n" +
            "".join(f"    {t} = m.{t}\n" for t in _TABLES if t in used) + "    out = []\n")


def compile_query(name: str, pattern: list, root: str, facts: list,
                  keep: list[str], as_tuple: bool = False) -> Callable[..., list[tuple]]:
    """The function that finds every match of the query (``pattern``, its root's class
    bound to ``root``, and ``facts``) in a mirror: ``(the root e-node's fields, the
    bindings of ``keep``)`` per match, by name (a dict) or, ``as_tuple``, in the order
    of ``keep``. ``query(m, roots)`` matches only the root
    e-nodes ``roots`` (``(fields, class)`` of the pattern's constructor, in the
    mirror's order), for a semi-naive round. The function's ``levels``: how far below
    the root e-node's class the classes a match reads lie (its fields: 1); its
    ``lookups``: whether a guard looks an e-node up (a class no pattern reaches)."""
    q = query_source(name, pattern, root, facts, keep, as_tuple)
    src = (_head("query", "m, roots=None", q.used) +
           f"    for f0, c0 in by_ctor.get({q.ctor!r}, ()) if roots is None else roots:\n" +
           "".join(f"{line}\n" for line in q.body) +
           f"{q.indent}out.append((f0, {q.env}))\n    return out\n")
    fn = _compiled(src, "query", q.consts, f"<query {name}>")
    fn.levels, fn.lookups = q.levels, q.lookups
    return fn


def compile_group(queries: list[QuerySource],
                  emit: Callable[[int, QuerySource], list[str]] | None = None,
                  by_level: bool = True) -> Callable[..., list[tuple]]:
    """One function running the queries (of one root constructor, literals named
    apart) one after the other: ``group(m, roots)`` gives ``(the query's place in
    ``queries``, the root e-node's fields, its bindings)`` per match, in the queries'
    order, each query's in its roots' order, as calling each query's own function
    would; ``emit(place, query)``: the lines appending a match to ``out`` instead.
    ``roots`` (a semi-naive round): level -> the root e-nodes a query of that
    ``levels`` matches (a query that looks an e-node up matches every root), or
    without ``by_level`` the root e-nodes every query matches; None: every query
    every root. Saves a call and the tables' reads per query."""
    ctor = queries[0].ctor
    used = frozenset().union(*[q.used for q in queries])
    lines = [_head("group", "m, roots=None", used),
             f"    every = by_ctor.get({ctor!r}, ())\n"]
    consts: dict[str, Any] = {}
    for i, q in enumerate(queries):
        if q.ctor != ctor:
            raise ValueError(f"{q.name}: root {q.ctor}, not {ctor}")
        src = "every" if q.lookups else \
            f"(every if roots is None else roots{f'[{q.levels}]' if by_level else ''})"
        lines.append(f"    for f0, c0 in {src}:\n")
        lines.extend(f"{line}\n" for line in q.body)
        lines.extend(f"{q.indent}{line}\n" for line in
                     (emit(i, q) if emit else [f"out.append(({i}, f0, {q.env}))"]))
        consts.update(q.consts)
    lines.append("    return out\n")
    return _compiled("".join(lines), "group", consts,
                     f"<queries {queries[0].name}...{queries[-1].name}>")
