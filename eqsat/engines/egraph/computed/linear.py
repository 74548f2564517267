"""Index e-classes read as linear forms, and the div/mod core's ``Ctx`` over them.

- :class:`LinForms` reads an index e-class as ``sum(coef*atom) + const`` through
  the cheapest e-node of each class;
- :class:`EClassCtx` is the div/mod core's ``Ctx`` over the e-graph (atoms are
  e-classes, bounds come from the ``lo``/``hi`` analysis, the builders make
  pending terms);
- :func:`conjuncts` reads a bool class as its ``And`` clauses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any

from eqsat.engines.egraph.computed.terms import Term, _cval, _key
from eqsat.engines.egraph.encoding import ArgTable, Node, Snapshot, fits_i64
from eqsat.ir.linear import Lin, LinBuilder


class LinForms:
    """Linear forms of index e-classes through each class's cheapest e-node."""

    def __init__(self, snap: Snapshot, best: dict[int, int],
                 prev: dict[int, tuple[Node | None, Lin]] | None = None):
        self.snap = snap
        self.best = best
        self._memo: dict[int, Lin] = {}
        #: class -> (its best e-node, its form) as an earlier pass of the run read them:
        #: a form is taken over when the class has the same best e-node (the same Node
        #: object: same row) and its operands' forms are the very objects that form was
        #: made from, i.e. exactly what it would be made again from
        self._prev = prev if prev is not None else {}
        #: the forms made or taken over by this one (``prev`` for the next pass)
        self.made: dict[int, tuple[Node | None, Lin]] = {}

    def __repr__(self) -> str:
        return f"<LinForms {len(self._memo)} forms>"

    def kept(self) -> dict[int, tuple[Node | None, Lin]]:
        """The forms for the next pass: this pass's over the earlier ones."""
        out = dict(self._prev)
        out.update(self.made)
        return out

    def node_lin(self, n: Node) -> Lin | None:
        """The linear form of one e-node, or None when it is not linear arithmetic (or
        its form would hold more than :data:`MAX_FORM_ATOMS` atoms)."""
        x = self._node_lin(n)
        return None if x is not None and len(x.terms) > MAX_FORM_ATOMS else x

    def _node_lin(self, n: Node) -> Lin | None:
        c = n.ctor
        if c == "Cst":
            return Lin.constant(n.fields[1])
        if n.dtype != "index":
            return None
        if c == "Add":
            return self.get(n.fields[1]) + self.get(n.fields[2])
        if c == "Sub":
            return self.get(n.fields[1]) - self.get(n.fields[2])
        if c == "Neg":
            return -self.get(n.fields[1])
        if c == "Mul":
            a, b = self.get(n.fields[1]), self.get(n.fields[2])
            if b.is_const:
                return a * b.const
            if a.is_const:
                return b * a.const
        return None

    def forms(self, cls: int, extra: int = 2) -> list[Lin]:
        """The class's linear form and, when its cheapest term is not a sum, up to
        ``extra`` others read through its linear e-nodes (the cheapest term may hide a
        sum: ``(7*b + a)//2`` is also ``3*b + (b + a)//2``)."""
        out = [self.get(cls)]
        bi = self.best.get(cls)
        if bi is None or (_lin_kids(self.snap.nodes[bi]) and
                          (self.snap.nodes[bi].ctor != "Mul" or not out[0].single_atom)):
            # the cheapest term is a sum already: its form is the one (a product of two
            # non-constants is an atom: its class may hold a product by a constant)
            return out
        for i in self.snap.classes.get(cls, ()):
            if len(out) > extra:
                break
            n = self.snap.nodes[i]
            if i == bi or n.subsumed or not _lin_kids(n):
                continue
            if any(k not in self.best for k in _lin_kids(n)):
                continue
            x = self.node_lin(n)
            if x is not None and x not in out:
                out.append(x)
        return out

    def get(self, cls: int) -> Lin:
        """The linear form of class ``cls`` (``1*cls`` when its best term is not linear)."""
        memo = self._memo
        hit = memo.get(cls)
        if hit is not None:
            return hit
        # iterative: walk the best-term skeleton, children first
        best, nodes = self.best, self.snap.nodes
        prev, made = self._prev, self.made
        stack = [cls]
        while stack:
            c = stack[-1]
            if c in memo:
                stack.pop()
                continue
            i = best.get(c)
            n = nodes[i] if i is not None else None
            p = prev.get(c)
            if n is None or n.dtype != "index" or n.ctor not in _LIN_CTORS:
                if p is not None and p[0] is n:
                    x = p[1]
                elif n is None:
                    x = Lin.atom(c)
                elif n.ctor == "Cst":
                    x = Lin.constant(n.fields[1])
                else:
                    x = Lin.atom(c)
                memo[c] = x
                made[c] = (n, x)
                stack.pop()
                continue
            kids = n.kids
            a = memo.get(kids[0])
            b = memo.get(kids[1]) if len(kids) > 1 else a
            if a is None or b is None:
                for k in kids:  # (a loop: no list made per class)
                    if k not in memo:
                        stack.append(k)
                continue
            x = None
            if p is not None and p[0] is n:
                # taken over when the operands' forms are the ones it was made from
                q = prev.get(kids[0])
                if q is not None and q[1] is a:
                    if len(kids) == 1:
                        x = p[1]
                    else:
                        q = prev.get(kids[1])
                        if q is not None and q[1] is b:
                            x = p[1]
            if x is None:  # node_lin(n), from the operands' forms at hand
                ctor = n.ctor
                if ctor == "Add":
                    x = a + b
                elif ctor == "Sub":
                    x = a - b
                elif ctor == "Neg":
                    x = -a
                elif b.is_const:  # Mul
                    x = a * b.const
                elif a.is_const:
                    x = b * a.const
                else:
                    x = Lin.atom(c)
                if len(x.terms) > MAX_FORM_ATOMS:
                    x = Lin.atom(c)
            memo[c] = x
            made[c] = (n, x)
            stack.pop()
        return memo[cls]


#: the most atoms a class's linear form holds; a class whose form would hold more is
#: an atom of its own. The rules rebuild a form as a chain of additions, one level per
#: atom, and the computed pass reads its terms recursively (hashing, comparing): a sum
#: of thousands of terms would pass Python's recursion limit
MAX_FORM_ATOMS = 1024

#: the index e-nodes read as linear arithmetic (their children are their operands)
_LIN_CTORS = frozenset(("Add", "Sub", "Mul", "Neg"))


def _lin_kids(n: Node | None) -> tuple[int, ...]:
    if n is None or n.dtype != "index":
        return ()
    if n.ctor in ("Add", "Sub", "Mul"):
        return (n.fields[1], n.fields[2])
    if n.ctor == "Neg":
        return (n.fields[1],)
    return ()


def nodes_of(snap: Snapshot, ctors: frozenset[str]) -> list[Node]:
    """The e-nodes whose constructor is in ``ctors``, in snapshot order (the scan runs
    in C: the passes each look at a few constructors' e-nodes)."""
    nodes = snap.nodes
    return list(compress(nodes, map(ctors.__contains__, map(_CTOR, nodes))))


_CTOR = attrgetter("ctor")
#: a linear form's term -> its atom (``Lin.terms`` holds ``(coefficient, atom)``)
_SECOND = itemgetter(1)


def conjuncts(snap: Snapshot, best: dict[int, int], c: int) -> list[int]:
    """The clauses of a bool class read through its cheapest terms' ``And`` nodes,
    deduplicated and sorted (by class)."""
    out: set[int] = set()
    stack = [c]
    seen: set[int] = set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        i = best.get(k)
        n = snap.nodes[i] if i is not None else None
        if n is not None and n.ctor == "And" and n.fields[0] == "bool":
            stack.extend((n.fields[1], n.fields[2]))
        else:
            out.add(k)
    return sorted(out)


def _class_parts(snap: Snapshot, lins: LinForms, ctor: str, a: int) -> list[tuple[Lin, Lin]]:
    """``[(x, y)]`` of the index ``ctor`` e-nodes of class ``a`` (``x``, ``y`` the
    operands' linear forms; distinct pairs; no products by a constant; none that holds
    ``a`` itself: a class ``N = (N + 3) % 3`` written over its own part would give
    ``(N + 6) % 3``, ``(N + 9) % 3``, ... a new e-node a step, without end)."""
    out: list[tuple[Lin, Lin]] = []
    for n in map(snap.nodes.__getitem__, snap.classes.get(a, ())):  # (class_nodes, in C)
        if n.ctor != ctor or n.subsumed or n.fields[0] != "index" or a in n.fields[1:]:
            continue
        x, y = lins.get(n.fields[1]), lins.get(n.fields[2])
        if a in map(_SECOND, x.terms) or a in map(_SECOND, y.terms):
            continue
        if ctor == "Mul" and (x.is_const or y.is_const):
            continue
        if (x, y) not in out:
            out.append((x, y))
    return out


class _Memo(dict):
    """A dict that fills a missing key with ``fn(key)`` (``memo[key]`` is the memoized
    call; its bound ``__getitem__`` is as fast as a plain lookup once filled)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Any]):
        super().__init__()
        self.fn = fn

    def __missing__(self, key: Any) -> Any:
        v = self[key] = self.fn(key)
        return v

    def __repr__(self) -> str:
        return f"_Memo({self.fn!r}, {dict(self)!r})"


class EClassCtx(LinBuilder):
    """The div/mod core's ``Ctx`` over an e-graph snapshot (index dtype)."""

    dt = "index"

    def __init__(self, snap: Snapshot, lins: LinForms, terms: dict[tuple, Term] | None = None,
                 keys: dict[Term, tuple] | None = None, args: ArgTable | None = None):
        self.snap = snap
        self.lins = lins
        self.args = args
        # a form's term and a term's sort key read nothing of the snapshot (:meth:`sum`
        # orders by key): a run's passes may share them (``terms``, ``keys``)
        self._lins: dict[tuple, Term] = terms if terms is not None else {}
        self._keys: dict[Term, tuple] = keys if keys is not None else {}  # term -> _key
        # the facts, memoized per atom: each query is one dict lookup (a C call) once
        # answered (the rules ask them tens of thousands of times per run); the memos
        # hold no reference to the context (no cycle)
        self.bounds = _Memo(snap.bounds).__getitem__  # type: ignore[method-assign]
        self.mod_parts = _Memo(partial(_class_parts, snap, lins, "Mod")).__getitem__  # type: ignore
        self.idiv_parts = _Memo(partial(_class_parts, snap, lins, "Idiv")).__getitem__  # type: ignore
        self.mul_parts = _Memo(partial(_class_parts, snap, lins, "Mul")).__getitem__  # type: ignore

    # ---- facts (each replaced by a memo of itself per instance) -------------
    def bounds(self, a: int) -> tuple[float, float]:
        return self.snap.bounds(a)

    def mod_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Mod", a)

    def idiv_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Idiv", a)

    def mul_parts(self, a: int) -> list[tuple[Lin, Lin]]:
        return _class_parts(self.snap, self.lins, "Mul", a)

    def where_parts(self, a: int) -> list[tuple[int, Lin, Lin]]:
        """``[(c, t, f)]`` of the index ``where`` e-nodes of class ``a`` (``c`` the
        condition's class, ``t``, ``f`` the branches' linear forms; distinct triples)."""
        out: list[tuple[int, Lin, Lin]] = []
        snap = self.snap
        for n in map(snap.nodes.__getitem__, snap.classes.get(a, ())):  # (in C)
            if n.ctor != "Where" or n.subsumed or n.fields[0] != "index" or a in n.fields[1:]:
                continue
            w = (n.fields[1], self.lins.get(n.fields[2]), self.lins.get(n.fields[3]))
            if w not in out:
                out.append(w)
        return out

    def may_be_invalid(self, a: Any) -> bool:
        """Whether the atom may evaluate to Invalid (not in the e-graph's ``Def``)."""
        return not (isinstance(a, int) and a in self.snap.defined)

    # ---- builders (pending terms, lightly folded) -------------------------
    def atom(self, a: int) -> Term:
        return a

    def lin(self, x: Lin) -> Term:
        """The term of a linear form (memoized by its terms and constant: a tuple hashes
        in C, where a fresh form hashes a frozenset of its map; :meth:`sum` orders the
        terms itself, so equal forms give equal terms whatever their terms' order)."""
        key = (x.terms, x.const)
        t = self._lins.get(key)
        if t is None:
            t = self._lins[key] = self.sum(list(x.terms), x.const)
        return t

    def const(self, v: int) -> Term:
        if not fits_i64(v):
            raise _UnrepresentableError(v)
        return ("Cst", self.dt, int(v))

    def add(self, a: Term, b: Term) -> Term:
        ca, cb = _cval(a), _cval(b)
        if ca is not None and cb is not None:
            return self.const(ca + cb)
        if cb == 0:
            return a
        if ca == 0:
            return b
        return ("Add", self.dt, a, b)

    def sub(self, a: Term, b: Term) -> Term:
        ca, cb = _cval(a), _cval(b)
        if ca is not None and cb is not None:
            return self.const(ca - cb)
        if cb == 0:
            return a
        if cb is not None:
            return ("Add", self.dt, a, self.const(-cb))
        if ca == 0:
            return self.neg(b)
        return ("Sub", self.dt, a, b)

    def mul(self, a: Term, c: int) -> Term:
        ca = _cval(a)
        if ca is not None:
            return self.const(ca * c)
        if c == 1:
            return a
        if c == 0:
            return self.const(0)
        if c == -1:
            return self.neg(a)
        return ("Mul", self.dt, a, self.const(c))

    def neg(self, a: Term) -> Term:
        ca = _cval(a)
        if ca is not None:
            return self.const(-ca)
        return ("Neg", self.dt, a)

    def idiv(self, a: Term, b: Term) -> Term:
        return ("Idiv", self.dt, a, b)

    def mod(self, a: Term, b: Term) -> Term:
        return ("Mod", self.dt, a, b)

    def where(self, c: Term, t: Term, f: Term) -> Term:
        return ("Where", self.dt, c, t, f)

    def _atom_key(self, h: int) -> tuple:
        """The sort key of the class ``h`` in a sum: its least leaf (a variable, range or
        constant, by op, dtype and arg value) when it holds one, so that a sum's order
        is the same whatever else the e-graph holds and whatever order its classes were
        made in; else ``(0, 1, h)`` (by handle). A leaf is in one class only: two atoms
        never share a key."""
        snap, args = self.snap, self.args
        leaves = []
        for i in snap.classes.get(h, ()):
            n = snap.nodes[i]
            if n.ctor == "Cst":
                leaves.append(("", n.fields[0], repr(n.fields[1])))
            elif n.ctor == "Leaf" and args is not None:
                leaves.append((n.fields[0], n.fields[1], repr(args.arg(n.fields[2]))))
        return (0, 0, min(leaves)) if leaves else (0, 1, h)

    def sum(self, terms: list[tuple[int, Term]], const: int) -> Term:
        """``sum(c*t) + const`` in the canonical shape: terms ordered by content
        (:meth:`_atom_key`; a pending term by its fields),
        positive terms added, negative ones subtracted, the constant added last
        (``k - a - b`` when no term is positive, ``a*-c - b`` when neither is k)."""
        merged: dict[Any, list] = {}
        keys = self._keys
        for c, t in terms:
            if isinstance(t, int):
                k = keys.get(t)
                if k is None:
                    k = keys[t] = self._atom_key(t)
            else:
                k = keys.get(t)
                if k is None:
                    k = keys[t] = _key(t)
            e = merged.get(k)
            if e is None:
                merged[k] = [c, t]
            else:
                e[0] += c
        pos: list[tuple[int, Term]] = []
        neg: list[tuple[int, Term]] = []
        # (by key alone: the keys are distinct; one loop splits the signs)
        for c, t in map(merged.__getitem__, sorted(merged)) if len(merged) > 1 \
                else merged.values():
            if c > 0:
                pos.append((c, t))
            elif c < 0:
                neg.append((-c, t))
        acc: Term | None = None
        for c, t in pos:
            s = self.mul(t, c)
            acc = s if acc is None else self.add(acc, s)
        if acc is None and neg:
            if const:  # k - a - b
                acc, const = self.const(const), 0
            else:  # a*(-c) - b: no negation node
                c, t = neg.pop(0)
                acc = self.mul(t, -c)
        for c, t in neg:
            acc = self.sub(acc, self.mul(t, c))
        if acc is None:
            return self.const(const)
        return self.add(acc, self.const(const)) if const else acc


class _UnrepresentableError(ValueError):
    """A constant outside i64: the rule's result is not inserted."""
