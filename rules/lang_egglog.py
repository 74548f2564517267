"""A rule of the language (:class:`rules.lang.Law`) as native egglog rewrites
(:class:`rules.native.ERule`).

The left side becomes a pattern over the e-graph's constructors (``(Add Dt x y)``, an
integer constant ``(Cst Dt 0)``, a float one ``(Leaf "CONST" Dt key)``, the Invalid
``(Leaf "INVALID" "index" a)`` or its cast ``(Cast Dt (Leaf "INVALID" ...))``); each of the
rule's types is the dtype field of a constructor of that type (``Dt``, ``Dt1``, ...), or
a literal when the rule fixes it. The rule's variables keep their (lower-case) names; the
compiler's own (dtypes, bounds ``Lo_x``, computed constants ``K0``) are capitalized, so
they never meet one of them. The guard becomes facts: bounds read ``(lo x)``/``(hi
x)``, dtype sets the relations ``FixDt``/``(DtIn "set" dt)`` or a literal, a dropped
operand ``(Def x)``, and the numbers i64 primitives (an overflow or a division by zero
in the query is "no match"). A computed constant is bound in the query too; for a
fixed-width dtype it must fit the dtype (egglog does not wrap), so the rule fires less
there, never wrongly.

One rule may need several egglog rules: each type's dtypes are split where the e-graph
writes them differently -- integer constants (``Cst``) or float ones, an index Invalid
or a cast one, and ``index`` (no range to check: ``dmin``/``dmax`` of index are decided
here) or the fixed-width dtypes (their own rule set, ``native_fixed``, run only for inputs
that hold them). The first variant keeps the rule's name, the others add ``~float``,
``~fixed``, ``~cast``; an op variable gives one per op (``~add``); mirror images over
commutative operands come from :func:`rules.native.commuted`. Every variant's matches
count under the rule's name.

:class:`NotNativeError` says why a rule cannot be written so (a type no constructor of
the left side carries, a float computed constant, ...); the rule then states a reason in
``native=`` and the e-graph matches it from Python.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

from eqsat.ir.ops import Ops
from rules.lang import (
    _ALL,
    _FIXED,
    _FLOATS,
    _INTS,
    _OP_DTYPES,
    DTYPE_SETS,
    G,
    Law,
    Term,
    _not_holding,
    conjuncts,
    ctor_name,
    dtype_set_name,
)
from rules.native import ERule, commuted

__all__ = ["compile_egglog", "NotNativeError"]

_INTBOOL = _INTS | {"bool"}
_INDEX = frozenset(("index",))
_BOOL = frozenset(("bool",))


class NotNativeError(ValueError):
    """The rule cannot be a native egglog rule (the message says why)."""


class _DeadError(Exception):
    """This variant can never match (its guard is false for its dtypes)."""


_PRIM = {"+": "+", "-": "-", "*": "*", "//": "/", "%": "%", "&": "&", "|": "|", "^": "^",
         "<<": "<<", ">>": ">>"}
_CALC_OP = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.IDIV: "/", Ops.MOD: "%",
            Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.MAX: "max", Ops.MIN: "min"}
_FACT = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "!="}
_BOOLP = {"<": "bool-<", "<=": "bool-<=", ">": "bool->", ">=": "bool->=", "==": "bool-=",
          "!=": "bool-!="}
_PYCMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
          ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _set_guard(s: frozenset[str], have: frozenset[str], v: str) -> list[str]:
    """The facts that dtype variable ``v``, of a dtype in ``have``, is in the set ``s``:
    ``FixDt`` for fixed-width dtypes (the rule joins the rule set ``native_fixed``), a
    comparison with a literal when one or two dtypes are left out (no table to join),
    else the relation ``DtIn`` of a named set."""
    if s == _INDEX:
        return [f'(= {v} "index")']
    if s == frozenset(("bool",)):
        return [f'(= {v} "bool")']
    if s <= _FIXED:
        rest = (have & _FIXED) - s
        if not rest:
            return [f"(FixDt {v})"]
        if len(rest) <= 2:
            return [f"(FixDt {v})", *(f'(!= {v} "{d}")' for d in sorted(rest))]
        return [f"(FixDt {v})", f'(DtIn "{dtype_set_name(s)}" {v})']
    out = have - s
    if len(out) <= 2:
        return [f'(!= {v} "{d}")' for d in sorted(out)]
    return [f'(DtIn "{dtype_set_name(s)}" {v})']


def _parts(law: Law, i: int, restrict: frozenset[str] | None) -> list[frozenset[str]]:
    """The dtype sets of type ``i`` the e-graph writes alike (see the module docstring)."""
    tc = law.types[i]
    s = tc.allowed if restrict is None or tc.fixed is not None else tc.allowed & restrict
    terms = [t for t in list(law.lhs.walk()) + list(law.rhs.walk()) if t.tid == i]
    parts = [s]
    if any(t.kind in ("const", "bound") or t.calc for t in terms):
        parts = [p & _INTBOOL for p in parts]  # constants of a computation: Cst only
    if any(t.kind == "lit" and not isinstance(t.value, bool) for t in terms):
        parts = [q for p in parts for q in (p & _INTBOOL, p & _FLOATS)]
    carried = any(t.kind in ("op", "lit", "const", "inv") and t.tid == i
                  for t in law.lhs.walk())
    # index apart where the e-graph writes it apart: an index computed constant needs no
    # range check, an index dtype limit is decided here, the Invalid leaf is an index
    limits = any(g[0] == "dlim" and g[2][0] != "dt" and law.tid_of(g[2]) == i
                 for g in _walk(law.guard))
    apart = any(t.kind == "inv" or t.kind == "bound" or t.calc for t in terms) or limits
    if tc.fixed is None and apart and (carried or any(t.kind == "inv" for t in terms)):
        # (bool apart from the fixed-width dtypes too: a rule of only those is loaded with
        # the fixed-width rules, which an index input never runs)
        parts = [q for p in parts for q in (p & _INDEX, p & _BOOL, p - _INDEX - _BOOL)]
    return [p for p in parts if p]


def _walk(g: G | None) -> list[G]:
    out: list[G] = []
    stack = [g] if g else []
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(y for y in x[1:] if isinstance(y, tuple))
    return out


class _Variant:
    """One egglog rule of a law: an op for the op variable, a dtype set per type."""

    def __init__(self, law: Law, op: Ops | None, sets: dict[int, frozenset[str]]):
        self.law, self.op, self.sets = law, op, sets
        self.args: list[Any] = []
        self.facts: list[str] = []
        self.n = itertools.count()
        self.dtvar: dict[int, str] = {}
        self.bounds: dict[tuple[str, str], str] = {}
        self.calcs: dict[int, str] = {}

    def floats(self, tid: int) -> bool:
        return self.sets[tid] <= _FLOATS

    def index(self, tid: int) -> bool:
        return self.sets[tid] == _INDEX

    def arg(self, v: Any) -> str:
        for i, a in enumerate(self.args):
            if type(a) is type(v) and (a == v or (isinstance(a, float) and math.isnan(a)
                                                   and math.isnan(v))):
                if not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, v):
                    return f"$arg{i}"
        self.args.append(v)
        return f"$arg{len(self.args) - 1}"

    def dt(self, tid: int) -> str:
        tc = self.law.types[tid]
        if tc.fixed is not None:
            return f'"{tc.fixed}"'
        if self.index(tid):
            return '"index"'
        v = self.dtvar.get(tid)
        if v is None:
            raise NotNativeError(f"the dtype of type {tid} is not carried by a constructor "
                                 "of the left side")
        return v

    def lit(self, t: Term) -> str:
        v = t.value
        if self.floats(t.tid):
            return f'(Leaf "CONST" {self.dt(t.tid)} {self.arg(float(v))})'
        return f"(Cst {self.dt(t.tid)} {int(v)})"

    def inv(self, t: Term, lhs: bool) -> str:
        a = f"Inv{next(self.n)}" if lhs else self.arg(None)
        leaf = f'(Leaf "INVALID" "index" {a})'
        return leaf if self.index(t.tid) else f"(Cast {self.dt(t.tid)} {leaf})"

    def leaf(self, t: Term, left: bool) -> str | None:
        """A variable, constant, literal or Invalid of either side (None: another term)."""
        if t.kind == "var":
            return t.name
        if t.kind == "const":
            return f"(Cst {self.dt(t.tid)} {t.name})"
        if t.kind == "lit":
            return self.lit(t)
        if t.kind == "inv":
            return self.inv(t, left)
        return None

    def lhs(self, t: Term) -> str:
        leaf = self.leaf(t, True)
        if leaf is not None:
            return leaf
        op = t.op if t.op is not None else self.op
        kids = " ".join(self.lhs(s) for s in t.src)
        return f"({ctor_name(op)} {self.dt(t.tid)} {kids})"

    def bound(self, which: str, var: str) -> str:
        k = (which, var)
        if k not in self.bounds:
            name = f"{'Lo' if which == 'vmin' else 'Hi'}_{var}"
            self.bounds[k] = name
            self.facts.append(f"(= {name} ({'lo' if which == 'vmin' else 'hi'} {var}))")
        return self.bounds[k]

    # guard numbers: egglog text, or an infinite dtype limit (index) decided here
    def num(self, g: G) -> str | float:
        k = g[0]
        if k == "num":
            return str(g[1])
        if k == "const":
            return g[1]
        if k == "bound":
            return self.bound(g[1], g[2])
        if k == "dlim":
            ref = g[2]
            if ref[0] == "dt":
                if ref[1] == "index":
                    return -math.inf if g[1] == "dmin" else math.inf
                dv = f'"{ref[1]}"'
            else:
                tid = self.law.tid_of(ref)
                if self.index(tid):
                    return -math.inf if g[1] == "dmin" else math.inf
                dv = self.dt(tid)
            return f"({'dmin' if g[1] == 'dmin' else 'dmax'} {dv})"
        args = [self.num(x) for x in g[2:]]
        infs = [a for a in args if isinstance(a, float)]
        if infs:
            if k == "bin" and g[1] in ("+", "-") and len(infs) == 1:
                a = args[0] if isinstance(args[0], float) else args[1]
                return -a if g[1] == "-" and args[1] is a else a
            if k == "call" and g[1] in ("min", "max"):
                fin = [a for a in args if not isinstance(a, float)]
                if all(a == (math.inf if g[1] == "min" else -math.inf) for a in infs):
                    if not fin:
                        return infs[0]
                    args = fin
                else:
                    return infs[0]
            else:
                raise NotNativeError("arithmetic on an infinite dtype limit")
        if k == "bin":
            return f"({_PRIM[g[1]]} {args[0]} {args[1]})"
        if k == "call":
            if g[1] == "abs":
                return f"(abs {args[0]})"
            out = args[0]
            for a in args[1:]:
                out = f"({g[1]} {out} {a})"
            return out
        raise NotNativeError(f"guard term {g[0]} is not a number")

    def static_cmp(self, op: str, a: str | float, b: str | float) -> bool | None:
        """A comparison with an infinite limit, decided; None when neither side is one."""
        if not isinstance(a, float) and not isinstance(b, float):
            return None
        if isinstance(a, float) and isinstance(b, float):
            return _PYCMP[op](a, b)
        if isinstance(a, float):
            return _PYCMP[op](a, 0.0)  # a finite value is above -inf and below inf
        return _PYCMP[op](0.0, b)

    def boolean(self, g: G) -> str:
        k = g[0]
        if k == "cmp":
            a, b = self.num(g[2]), self.num(g[3])
            s = self.static_cmp(g[1], a, b)
            if s is not None:
                return "true" if s else "false"
            return f"({_BOOLP[g[1]]} {a} {b})"
        if k in ("and", "or"):
            out = self.boolean(g[1])
            for x in g[2:]:
                out = f"({k} {out} {self.boolean(x)})"
            return out
        if k == "not":
            return f"(not {self.boolean(g[1])})"
        if k == "true":
            return "true"
        raise NotNativeError(f"guard term {k} under and/or/not")

    def fact(self, g: G) -> None:
        k = g[0]
        neg = k == "not"
        h = g[1] if neg else g
        if h[0] == "dtype":
            return  # in the types' sets
        if h[0] == "dteq":
            a, b = (self.dt(self.law.tid_of(r)) if r[0] != "dt" else f'"{r[1]}"'
                    for r in h[1:])
            self.facts.append(f"(!= {a} {b})" if neg else f"(= {a} {b})")
            return
        if h[0] == "safe":
            raise NotNativeError("safe_cast has no relation in the e-graph")
        if h[0] == "form":
            if neg and h[1] == "is_invalid":
                # "not the Invalid leaf": a class with a bound has a value somewhere, which
                # the Invalid leaf has not (the rule then skips float classes: fewer matches)
                self.bound("vmin", h[2])
                return
            if neg:
                return  # a form guard the e-graph cannot say: dropped (proven without it)
            var = h[2]
            if h[1] == "is_const":
                self.facts.append(f"(= {var} (Cst Dk{next(self.n)} Kv{next(self.n)}))")
            else:
                self.facts.append(f'(= {var} (Leaf "INVALID" Di{next(self.n)} '
                                  f'Ai{next(self.n)}))')
            return
        if h[0] == "valid":
            if neg:
                raise NotNativeError("'not never_invalid' has no e-graph fact")
            self.facts.append(f"(Def {h[1]})")
            return
        if h[0] == "total":
            raise NotNativeError("the e-graph does not track where a class is undefined "
                                 "(never_undefined)")
        if k == "cmp":
            a, b = self.num(g[2]), self.num(g[3])
            s = self.static_cmp(g[1], a, b)
            if s is None:
                self.facts.append(f"({_FACT[g[1]]} {a} {b})")
            elif not s:
                raise _DeadError
            return
        b = self.boolean(g)
        if b == "false":
            raise _DeadError
        if b != "true":
            self.facts.append(f"(= true {b})")

    def calc(self, t: Term) -> str:
        if t.kind == "const":
            return t.name
        if t.kind == "lit":
            if isinstance(t.value, float):
                raise NotNativeError("a float computed constant")
            return str(int(t.value))
        if t.kind == "bound":
            return self.bound(t.value, t.name)
        op = t.op if t.op is not None else self.op
        if op is Ops.NEG:
            return f"(- 0 {self.calc(t.src[0])})"
        if op is Ops.NOT and self.sets[t.tid] <= _INTS:
            return f"(not-i64 {self.calc(t.src[0])})"
        if op in (Ops.FLOORDIV, Ops.FLOORMOD):  # egglog's / and % truncate
            x, y = self.calc(t.src[0]), self.calc(t.src[1])
            fm = f"(% (+ (% {x} {y}) {y}) {y})"
            return fm if op is Ops.FLOORMOD else f"(/ (- {x} {fm}) {y})"
        p = _CALC_OP.get(op)
        if p is None:
            raise NotNativeError(f"{op.name} of constants is not computed in the e-graph")
        return f"({p} {self.calc(t.src[0])} {self.calc(t.src[1])})"

    def rhs(self, t: Term) -> str:
        leaf = self.leaf(t, False)
        if leaf is not None:
            return leaf
        if t.kind == "bound" or t.calc:
            k = self.calcs.get(id(t))
            if k is None:
                k = self.calcs[id(t)] = f"K{len(self.calcs)}"
                self.facts.append(f"(= {k} {self.calc(t)})")
                # it must fit the dtype (a bool is 0/1: true + true fails the check)
                if not self.index(t.tid):
                    dv = self.dt(t.tid)
                    self.facts.append(f"(>= {k} (dmin {dv}))")
                    self.facts.append(f"(<= {k} (dmax {dv}))")
            return f"(Cst {self.dt(t.tid)} {k})"
        op = t.op if t.op is not None else self.op
        kids = " ".join(self.rhs(s) for s in t.src)
        return f"({ctor_name(op)} {self.dt(t.tid)} {kids})"

    def implied(self) -> dict[int, frozenset[str]]:
        """The dtypes each type may have given the left side's constructors alone."""
        law = self.law
        out: dict[int, frozenset[str]] = {i: _ALL for i in law.types}
        for t in law.lhs.walk():
            if t.kind == "op":
                op = t.op if t.op is not None else self.op
                if op not in (Ops.CAST, Ops.BITCAST) and t.src:
                    operand = t.src[1].tid if op is Ops.WHERE else t.src[0].tid
                    out[operand] &= _OP_DTYPES.get(op, _ALL)
            elif t.kind == "lit" and not isinstance(t.value, bool) and \
                    not self.floats(t.tid):  # a Cst of a value the dtype holds
                out[t.tid] &= _INTBOOL - _not_holding(int(t.value))
            elif t.kind in ("lit", "const"):
                out[t.tid] &= _FLOATS if self.floats(t.tid) else _INTBOOL
            elif t.kind == "inv":  # the Invalid leaf is an index, its cast another dtype
                out[t.tid] &= _INDEX if self.index(t.tid) else _ALL - _INDEX
        for i in law.types:
            if self.index(i) or law.types[i].fixed is not None:
                out[i] = self.sets[i]  # a literal "index" (or the fixed dtype) in the text
        return out

    def build(self) -> ERule | None:
        law = self.law
        names = itertools.count(1)
        for t in law.lhs.walk():
            if t.kind in ("op", "lit", "const", "inv") and t.tid not in self.dtvar \
                    and law.types[t.tid].fixed is None and not self.index(t.tid):
                self.dtvar[t.tid] = "Dt" if t is law.lhs else f"Dt{next(names)}"
        for t in law.lhs.walk():  # an op variable's op is defined on some dtypes only
            if t.kind == "op" and t.op is None:
                operand = t.src[0].tid
                self.sets[operand] = self.sets[operand] & _OP_DTYPES.get(self.op, _ALL)
                if not self.sets[operand]:
                    return None
        for i, groups in law.merged.items():  # each must carry the dtype variable
            for g in groups:
                if law.types[i].fixed is None and not self.index(i) and \
                        all(t.kind == "var" for t in g):
                    raise NotNativeError(f"the dtype of {g[0].name} is not carried by a "
                                         "constructor of the left side (the rule needs it "
                                         "to be another term's)")
        try:
            lhs = self.lhs(law.lhs)
            implied = self.implied()
            for i, need in self.sets.items():
                if law.types[i].fixed is not None or implied[i] <= need:
                    continue
                if i in self.dtvar:
                    self.facts.extend(_set_guard(need, implied[i], self.dtvar[i]))
                    continue
                # a type no constructor carries: a term with bounds is an integer or bool
                have = implied[i]
                var = next((t.name for t in law.lhs.walk() if t.tid == i and t.kind == "var"),
                           None)
                if var is not None and need & _INTBOOL and (have & _INTBOOL) <= need and \
                        not (have - _INTBOOL) & need:
                    self.bound("vmin", var)
                    continue
                raise NotNativeError(f"the dtype of {var or 'a term'} is not carried by a "
                                     "constructor of the left side")
            for v in law.dropped:
                self.facts.append(f"(Def {v})")
            for c in conjuncts(law.guard):
                self.fact(c)
            if law.shared is not None:  # the shared term must be an e-node already
                self.facts.append(f"(= Shared {self.rhs(law.shared)})")
            rhs = self.rhs(law.rhs)
        except _DeadError:
            return None
        tags = []
        if self.op is not None:
            tags.append(self.op.name.lower())
        for i, s in sorted(self.sets.items()):
            if law.types[i].fixed is not None:
                continue
            full = law.types[i].allowed
            if s <= _FLOATS and full & _INTBOOL:
                tags.append("float")
            elif "index" in full and "index" not in s and not s <= _FLOATS:
                tags.append("fixed" if s <= _FIXED else "other")
        name = law.name + "".join(f"~{t}" for t in dict.fromkeys(tags))
        facts = tuple(dict.fromkeys(self.facts))
        # a variant every type of which excludes index and bool matches fixed-width
        # integer or float nodes only (the session's rule set for those)
        wide = all(not (s & {"index", "bool"}) for s in self.sets.values())
        return ERule(name, law.identity, law.egraph_group or law.group, lhs, rhs, facts,
                     subsume=law.subsume, rule=law.name, args=tuple(self.args), wide=wide)


def compile_egglog(law: Law) -> list[ERule]:
    """The native egglog rules of ``law`` (raises :class:`NotNativeError` with the reason
    when it cannot be written so)."""
    restrict = DTYPE_SETS.get(law.egraph_dtypes) if law.egraph_dtypes else None
    ids = sorted(law.types)
    choices = [_parts(law, i, restrict) for i in ids]
    ops = law.ops if law.ops else (None,)
    out: list[ERule] = []
    seen: set[str] = set()
    gaps: list[str] = []
    for op in ops:
        for combo in itertools.product(*choices):
            try:
                er = _Variant(law, op, dict(zip(ids, combo, strict=True))).build()
            except NotNativeError as e:
                if op is None:
                    raise
                gaps.append(f"{op.name.lower()}: {e}")  # the other ops' rules stand
                continue
            if er is None:
                continue
            name, k = er.name, 2
            while name in seen:  # two types split alike: number the later variants
                name, k = f"{er.name}~v{k}", k + 1
            seen.add(name)
            if name != er.name:
                er = replace(er, name=name)
            out.extend([er] if law.ordered else commuted(er))  # (each names law as its rule)
    if not out:
        raise NotNativeError("no dtype the e-graph can match" +
                             (f" ({'; '.join(gaps)})" if gaps else ""))
    law.native_gaps = tuple(dict.fromkeys(gaps))
    return out
