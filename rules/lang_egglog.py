"""A rule of the language (:class:`rules.lang.Law`) as native egglog rewrites
(:class:`rules.native.ERule`).

The left side becomes a pattern over the e-graph's constructors (``(Add dt x y)``,
``(Cst dt 0)``, a float constant ``(Leaf "CONST" dt key)``, the Invalid ``(Leaf
"INVALID" dt a)``); each of the rule's types is the dtype field of a constructor of that
type (``dt``, ``dt1``, ...), or a literal when the rule fixes it. The guard becomes
facts: bounds read ``(lo x)``/``(hi x)``, dtype sets the relations ``IntDt``/``FixDt``
(or a literal, or ``(DtIn "set" dt)``), a dropped operand ``(Def x)``, and the numbers
i64 primitives (an overflow or a division by zero in the query is "no match"). A
computed constant is bound in the query too; for a fixed-width dtype it must fit the
dtype (egglog does not wrap), so the rule fires less there, never wrongly.

A type whose literals may be an integer or a float gives two variants: the integer one
(``Cst``) keeps the name, the float one is ``<name>~float``. An op variable gives one
variant per op (``<name>~add``). Mirror images over commutative operands come from
:func:`rules.native.commuted`. Every variant's matches count under the rule's name.

:class:`NotNativeError` says why a rule cannot be written so (a type no constructor of the
left side carries, a float computed constant, ...); the rule then states a reason in
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
    _FLOATS,
    _INTS,
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


class NotNativeError(ValueError):
    """The rule cannot be a native egglog rule (the message says why)."""


_PRIM = {"+": "+", "-": "-", "*": "*", "//": "/", "%": "%", "&": "&", "|": "|", "^": "^",
         "<<": "<<", ">>": ">>"}
_CALC_OP = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.IDIV: "/", Ops.MOD: "%",
            Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.MAX: "max", Ops.MIN: "min"}
_FACT = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "!="}
_BOOLP = {"<": "bool-<", "<=": "bool-<=", ">": "bool->", ">=": "bool->=", "==": "bool-=",
          "!=": "bool-!="}


def _set_guard(s: frozenset[str], v: str) -> str:
    """The fact that dtype variable ``v`` is in the set ``s``."""
    if s == frozenset(("index",)):
        return f'(= {v} "index")'
    if s == frozenset(("bool",)):
        return f'(= {v} "bool")'
    if s == _INTS:
        return f"(IntDt {v})"
    if s == DTYPE_SETS["fixed"]:
        return f"(FixDt {v})"
    name = dtype_set_name(s)
    if name is None:
        raise NotNativeError(f"no dtype relation for the set {sorted(s)}")
    return f'(DtIn "{name}" {v})'


class _Variant:
    """One egglog rule of a law: a choice of op (op variable) and of literal forms."""

    def __init__(self, law: Law, op: Ops | None, floats: dict[int, bool]):
        self.law, self.op, self.floats = law, op, floats
        self.args: list[Any] = []
        self.facts: list[str] = []
        self.n = itertools.count()
        self.dtvar: dict[int, str] = {}
        self.bounds: dict[tuple[str, str], str] = {}
        self.calcs: dict[int, str] = {}

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
        v = self.dtvar.get(tid)
        if v is None:
            raise NotNativeError(f"the dtype of type {tid} is not carried by a constructor of "
                            "the left side")
        return v

    def lit(self, t: Term) -> str:
        v = t.value
        if self.floats.get(t.tid):
            return f'(Leaf "CONST" {self.dt(t.tid)} {self.arg(float(v))})'
        if isinstance(v, float) and not isinstance(v, bool):
            raise NotNativeError("a float literal in an integer position")
        return f"(Cst {self.dt(t.tid)} {int(v)})"

    def lhs(self, t: Term) -> str:
        if t.kind == "var":
            return t.name
        if t.kind == "const":
            return f"(Cst {self.dt(t.tid)} {t.name})"
        if t.kind == "lit":
            return self.lit(t)
        if t.kind == "inv":
            return f'(Leaf "INVALID" {self.dt(t.tid)} inv{next(self.n)})'
        op = t.op if t.op is not None else self.op
        kids = " ".join(self.lhs(s) for s in t.src)
        return f"({ctor_name(op)} {self.dt(t.tid)} {kids})"

    def bound(self, which: str, var: str) -> str:
        k = (which, var)
        if k not in self.bounds:
            name = f"{'lo' if which == 'vmin' else 'hi'}_{var}"
            self.bounds[k] = name
            self.facts.append(f"(= {name} ({'lo' if which == 'vmin' else 'hi'} {var}))")
        return self.bounds[k]

    def num(self, g: G) -> str:
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
                dv = f'"{ref[1]}"'
            elif ref[0] == "var":
                dv = self.dt(self.law.tid_of(ref))
            else:
                dv = self.dt(self.law.tid_of(ref))
            return f"({'dmin' if g[1] == 'dmin' else 'dmax'} {dv})"
        if k == "bin":
            return f"({_PRIM[g[1]]} {self.num(g[2])} {self.num(g[3])})"
        if k == "call":
            args = [self.num(x) for x in g[2:]]
            if g[1] == "abs":
                return f"(abs {args[0]})"
            out = args[0]
            for a in args[1:]:
                out = f"({g[1]} {out} {a})"
            return out
        raise NotNativeError(f"guard term {g[0]} is not a number")

    def boolean(self, g: G) -> str:
        k = g[0]
        if k == "cmp":
            return f"({_BOOLP[g[1]]} {self.num(g[2])} {self.num(g[3])})"
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
        if h[0] in ("dtype",):
            return  # in the types' sets
        if h[0] == "dteq":
            a, b = (self.dt(self.law.tid_of(r)) if r[0] != "dt" else f'"{r[1]}"'
                    for r in h[1:])
            self.facts.append(f"(!= {a} {b})" if neg else f"(= {a} {b})")
            return
        if h[0] == "safe":
            raise NotNativeError("safe_cast has no relation in the e-graph")
        if h[0] == "form":
            if neg:
                return  # a form guard the e-graph cannot say: dropped (proven without it)
            var = h[2]
            if h[1] == "is_const":
                self.facts.append(f"(= {var} (Cst dk{next(self.n)} kv{next(self.n)}))")
            else:
                self.facts.append(f'(= {var} (Leaf "INVALID" di{next(self.n)} '
                                  f'ai{next(self.n)}))')
            return
        if k == "cmp":
            self.facts.append(f"({_FACT[g[1]]} {self.num(g[2])} {self.num(g[3])})")
            return
        self.facts.append(f"(= true {self.boolean(g)})")

    def calc(self, t: Term) -> str:
        if t.kind == "const":
            return t.name
        if t.kind == "lit":
            if isinstance(t.value, float) and not isinstance(t.value, bool):
                raise NotNativeError("a float computed constant")
            return str(int(t.value))
        if t.kind == "bound":
            return self.bound(t.value, t.name)
        op = t.op
        if op is Ops.NEG:
            return f"(- 0 {self.calc(t.src[0])})"
        if op is Ops.NOT and self.law.types[t.tid].allowed <= _INTS:
            return f"(not-i64 {self.calc(t.src[0])})"
        p = _CALC_OP.get(op)
        if p is None:
            raise NotNativeError(f"{op.name} of constants is not computed in the e-graph")
        return f"({p} {self.calc(t.src[0])} {self.calc(t.src[1])})"

    def rhs(self, t: Term) -> str:
        if t.kind == "var":
            return t.name
        if t.kind == "const":
            return f"(Cst {self.dt(t.tid)} {t.name})"
        if t.kind == "lit":
            return self.lit(t)
        if t.kind == "inv":
            return f'(Leaf "INVALID" "index" {self.arg(None)})'
        if t.kind == "bound" or t.calc:
            if self.floats.get(t.tid):
                raise NotNativeError("a float computed constant")
            k = self.calcs.get(id(t))
            if k is None:
                k = self.calcs[id(t)] = f"k{len(self.calcs)}"
                self.facts.append(f"(= {k} {self.calc(t)})")
                # (a bool is 0/1: a value outside that, e.g. true + true, fails the check)
                dv = self.dt(t.tid)
                if self.law.types[t.tid].fixed is not None or \
                        not self._set(t.tid) <= frozenset(("index",)):
                    self.facts.append(f"(>= {k} (dmin {dv}))")
                    self.facts.append(f"(<= {k} (dmax {dv}))")
            return f"(Cst {self.dt(t.tid)} {k})"
        op = t.op if t.op is not None else self.op
        kids = " ".join(self.rhs(s) for s in t.src)
        return f"({ctor_name(op)} {self.dt(t.tid)} {kids})"

    def _set(self, tid: int) -> frozenset[str]:
        return self.sets[tid]

    def build(self) -> list[ERule]:
        law = self.law
        # the dtype variables: the dtype field of each left-side constructor's type
        names = itertools.count(1)
        for t in law.lhs.walk():
            if t.kind in ("op", "lit", "const", "inv") and t.tid not in self.dtvar \
                    and law.types[t.tid].fixed is None:
                self.dtvar[t.tid] = "dt" if t is law.lhs else f"dt{next(names)}"
        # each type's dtype set in this variant, and what the left side implies of it
        self.sets: dict[int, frozenset[str]] = {}
        implied: dict[int, frozenset[str]] = {i: _ALL for i in law.types}
        for t in law.lhs.walk():
            if t.kind == "op":
                ops = (t.op,) if t.op is not None else (self.op,)
                if t.op not in (Ops.CAST, Ops.BITCAST) and t.src:
                    from rules.lang import _OP_DTYPES
                    operand = t.src[1].tid if t.op is Ops.WHERE else t.src[0].tid
                    implied[operand] &= _OP_DTYPES.get(ops[0], _ALL)
            elif t.kind == "lit" and not isinstance(t.value, bool) and \
                    not self.floats.get(t.tid):  # a Cst of a value the dtype holds
                implied[t.tid] &= _INTBOOL - _not_holding(int(t.value))
            elif t.kind in ("lit", "const"):
                implied[t.tid] &= _FLOATS if self.floats.get(t.tid) else _INTBOOL
            elif t.kind == "inv":
                implied[t.tid] &= frozenset(("index",))
        restrict = DTYPE_SETS.get(law.egraph_dtypes) if law.egraph_dtypes else None
        for i, tc in law.types.items():
            s = tc.allowed
            kinds = [t for t in list(law.lhs.walk()) + list(law.rhs.walk()) if t.tid == i]
            if any(t.kind in ("lit", "const", "bound") or t.calc for t in kinds):
                s &= _FLOATS if self.floats.get(i) else _INTBOOL
            if any(t.kind == "inv" for t in kinds):
                s &= frozenset(("index",))
            if restrict is not None and tc.fixed is None:
                s &= restrict
            self.sets[i] = s
            if not s:
                return []
        if self.op is not None:
            from rules.lang import _OP_DTYPES
            for t in law.lhs.walk():
                if t.kind == "op" and t.op is None:
                    operand = t.src[0].tid
                    self.sets[operand] &= _OP_DTYPES.get(self.op, _ALL)
                    if not self.sets[operand]:
                        return []
        lhs = self.lhs(law.lhs)
        for i, groups in law.merged.items():  # each must carry the dtype variable
            for g in groups:
                if law.types[i].fixed is None and all(t.kind == "var" for t in g):
                    raise NotNativeError(f"the dtype of {g[0].name} is not carried by a "
                                    "constructor of the left side (the rule needs it to be "
                                    "another term's)")
        for i, s in self.sets.items():
            if law.types[i].fixed is not None:
                continue
            need = s
            have = implied[i]
            if have <= need:
                continue
            if i in self.dtvar:
                self.facts.append(_set_guard(need, self.dtvar[i]))
                continue
            # a type no constructor carries: a term with bounds is an integer or bool
            var = next((t.name for t in law.lhs.walk() if t.tid == i and t.kind == "var"),
                       None)
            if var is not None and (have & _INTBOOL) <= need and not (have - _INTBOOL) & need \
                    and need & _INTBOOL:
                self.bound("vmin", var)
                continue
            raise NotNativeError(f"the dtype of {var or 'a term'} is not carried by a constructor "
                            "of the left side")
        for v in law.dropped:
            self.facts.append(f"(Def {v})")
        for c in conjuncts(law.guard):
            self.fact(c)
        rhs = self.rhs(law.rhs)
        name = law.name + (f"~{self.op.name.lower()}" if self.op is not None else "") + \
            ("~float" if any(self.floats.values()) else "")
        facts = tuple(dict.fromkeys(self.facts))
        er = ERule(name, law.identity, law.egraph_group or law.group, lhs, rhs, facts,
                   subsume=law.subsume, rule=law.name, args=tuple(self.args))
        if law.ordered:
            return [er]
        return [replace(r, rule=law.name) for r in commuted(er)]


def compile_egglog(law: Law) -> list[ERule]:
    """The native egglog rules of ``law`` (raises :class:`NotNativeError` with the reason
    when it cannot be written so)."""
    # types whose literals may take an integer or a float form
    lit_types = {t.tid for t in list(law.lhs.walk()) + list(law.rhs.walk())
                 if t.kind == "lit" and not isinstance(t.value, bool)}
    choices: list[list[tuple[int, bool]]] = []
    for i in sorted(lit_types):
        tc = law.types[i]
        opts = []
        calcs = any((t.calc or t.kind in ("const", "bound")) and t.tid == i
                    for t in list(law.lhs.walk()) + list(law.rhs.walk()))
        if tc.allowed & _INTBOOL:
            opts.append((i, False))
        if tc.allowed & _FLOATS and not calcs:
            opts.append((i, True))
        if not opts:
            raise NotNativeError("no dtype for the literals")
        choices.append(opts)
    ops = law.ops if law.ops else (None,)
    out: list[ERule] = []
    for op in ops:
        for combo in itertools.product(*choices):
            out.extend(_Variant(law, op, dict(combo)).build())
    if not out:
        raise NotNativeError("no dtype the e-graph can match")
    return out

