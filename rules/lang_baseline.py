"""A rule of the language (:class:`rules.lang.Law`) as the ordered matcher's
:class:`~eqsat.ir.pattern.Rule`: its left side as a ``UPat``, its guard and right side
as Python functions over the match's bindings.

Every op of the left side is bound (``_n0``, ``_n1``, ...) so that the guard and the
builder can read the dtype of each of the rule's types from a node of the match.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from eqsat.ir.dtype import DType, can_safe_cast, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.semantics import EvalError, Undefined, bitcast, cast, cdiv, cmod
from eqsat.ir.uop import UOp
from rules.common import (
    eval_op,
    invalid_like,
    is_invalid,
    make_const,
    may_be_invalid,
    may_be_undefined,
)
from rules.lang import _ALL, COMMUTATIVE, G, Law, Term, conjuncts

__all__ = ["compile_baseline", "literal_matches", "guard_value", "guard_fn"]

_CONSTS = (Ops.CONST, Ops.VCONST)


def literal_matches(v: Any) -> Callable[[UOp], bool]:
    """Whether a scalar or broadcast CONST is the literal ``v`` of the language: an
    integer literal is that value in an integer or float dtype (``0`` is +0.0: the sign
    of a float zero counts), a float literal a float dtype only, ``true``/``false`` a
    bool."""
    nan = isinstance(v, float) and math.isnan(v)
    int_lit, float_lit = type(v) is int, isinstance(v, float)  # (int_lit: not a bool)

    def pred(u: UOp) -> bool:
        a = u.arg
        if type(a) is int:  # (the usual constant: what the checks below give it, first)
            if int_lit:
                return a == v and u.dtype.scalar().is_int
            if float_lit:
                return False
        s = u.dtype.scalar()
        if isinstance(v, bool):
            return s.is_bool and a is v
        if s.is_bool:
            return False
        if s.is_float:
            if not isinstance(a, float):
                return False
            if nan:
                return math.isnan(a)
            return a == v and math.copysign(1.0, a) == math.copysign(1.0, float(v))
        if s.is_int:
            return isinstance(v, int) and not isinstance(a, bool) and a == v
        return False

    return pred


def _names(law: Law) -> dict[int, str]:
    """Each left-side term (by id) -> the name it is bound to in the match."""
    out: dict[int, str] = {}
    for i, t in enumerate(law.lhs.walk()):
        if t.kind in ("var", "const"):
            out[id(t)] = t.name
        else:
            out[id(t)] = f"_n{i}"
    return out


def _upat(law: Law, t: Term, names: dict[int, str]) -> UPat:
    name = names[id(t)]
    if t.kind == "var":
        return UPat.var(name)
    if t.kind == "const":
        return UPat(Ops.CONST if law.vector == "no" else _CONSTS, name=name)
    if t.kind == "lit":
        return UPat(Ops.CONST, name=name, pred=literal_matches(t.value))
    if t.kind == "inv":
        return UPat((Ops.INVALID, Ops.CAST), name=name, pred=is_invalid)
    ops = (t.op,) if t.op is not None else law.ops
    src = [_upat(law, s, names) for s in t.src]
    comm = not law.ordered and len(src) == 2 and all(o in COMMUTATIVE for o in ops)
    dtype = None
    if t.op in (Ops.CAST, Ops.BITCAST) and not t.to.isupper():
        dtype = DType.parse(t.to)
    return UPat(ops if len(ops) > 1 else ops[0], dtype=dtype,
                src=src if comm else tuple(src), name=name)


def _num(v: Any) -> Any:
    """A constant's value as a guard number (bools as 0/1)."""
    return int(v) if isinstance(v, bool) else v


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne}
_INT_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
    "|": operator.or_, "^": operator.xor}


def guard_value(g: G, b: dict[str, UOp], dt: Callable[[G], DType]) -> Any:
    """The numeric guard ``g`` over the bindings ``b`` (exact arithmetic, C division);
    ``dt`` gives the dtype of a dtype reference. Dtype and form conjuncts are checked
    elsewhere (they are true here). None when a value is undefined (a division by 0, an
    unknown bound in arithmetic). The rules' guards run it compiled (:func:`guard_fn`)."""
    return guard_fn(g, lambda _b, ref: dt(ref))(b)


_ALWAYS = ("true", "dtype", "dteq", "safe", "form", "valid", "total")
_Eval = Callable[[dict[str, UOp]], Any]


def guard_fn(g: G, dt: Callable[[dict[str, UOp], G], DType]) -> _Eval:
    """:func:`guard_value` of ``g`` as a function of the bindings alone: the tree read
    once, here, not at every match (``dt(b, ref)``: the dtype of a dtype reference)."""
    k = g[0]
    if k == "num":
        v = g[1]
        return lambda b: v
    if k in _ALWAYS:
        return lambda b: True
    if k == "const":
        name = g[1]
        return lambda b: _num(b[name].arg)
    if k == "bound":
        name = g[2]
        if g[1] == "vmin":
            return lambda b: _num(b[name].vmin)
        return lambda b: _num(b[name].vmax)
    if k == "dlim":
        ref, low = g[2], g[1] == "dmin"

        def dlim(b: dict[str, UOp]) -> Any:
            d = dt(b, ref).scalar()
            return _num(d.min if low else d.max)
        return dlim
    if k == "not":
        inner = guard_fn(g[1], dt)

        def negation(b: dict[str, UOp]) -> Any:
            v = inner(b)
            return None if v is None else not v
        return negation
    if k in ("and", "or"):
        return _junction(k, [guard_fn(x, dt) for x in g[1:]])
    return _operation(g, [guard_fn(x, dt) for x in g[2:]])


def _junction(k: str, parts: list[_Eval]) -> _Eval:
    """:func:`guard_fn` of an ``and`` or an ``or`` of ``parts``."""
    if k == "and":
        def conjunction(b: dict[str, UOp]) -> Any:
            for f in parts:
                v = f(b)
                if not v:
                    return v
            return True
        return conjunction

    def disjunction(b: dict[str, UOp]) -> Any:
        out: Any = False
        for f in parts:
            v = f(b)
            if v:
                return True
            if v is None:
                out = None
        return out
    return disjunction


def _operation(g: G, args: list[_Eval]) -> _Eval:
    """:func:`guard_fn` of a comparison, a call or an arithmetic node over ``args`` (all
    evaluated; None when one is None)."""
    k, op = g[0], g[1]
    if k == "cmp":
        cmp = _CMP[op]
        fa, fc = args

        def comparison(b: dict[str, UOp]) -> Any:
            a, c = fa(b), fc(b)
            return None if a is None or c is None else cmp(a, c)
        return comparison
    if k == "call":
        def call(b: dict[str, UOp]) -> Any:
            vals = [f(b) for f in args]
            if any(v is None for v in vals):
                return None
            if op == "abs":
                return abs(vals[0])
            return min(vals) if op == "min" else max(vals)
        return call
    fa, fc = args

    def arithmetic(b: dict[str, UOp]) -> Any:
        a, c = fa(b), fc(b)
        if a is None or c is None:
            return None
        return _arith(op, a, c)
    return arithmetic


def _arith(op: str, a: Any, c: Any) -> Any:
    """``a op c`` of a guard's ``bin`` node (None: undefined): exact arithmetic on
    integers, C division, shifts by 0 to 256 only; on floats ``+ - *`` only."""
    if isinstance(a, float) or isinstance(c, float):
        if op in ("+", "-", "*") and not (math.isinf(a) and math.isinf(c)):
            return 0 if op == "*" and 0 in (a, c) else _INT_BIN[op](a, c)
        return None
    if op in ("//", "%"):
        if c == 0:
            return None
        return cdiv(a, c) if op == "//" else cmod(a, c)
    if op in ("<<", ">>"):
        if c < 0 or c > 256:
            return None
        return a << c if op == "<<" else a >> c
    return _INT_BIN[op](a, c)


def compile_baseline(law: Law) -> Rule:
    """The ordered matcher's rule of ``law``."""
    names = _names(law)
    pattern = _upat(law, law.lhs, names)
    # where each type's dtype is read: a left-side term of that type
    source: dict[int, str] = {}
    for t in law.lhs.walk():
        source.setdefault(t.tid, names[id(t)])
    fixed = {i: DType.parse(tc.fixed) for i, tc in law.types.items()
             if tc.fixed is not None and i not in source}
    checks = [(source[i], tc.allowed) for i, tc in law.types.items()
              if i in source and tc.allowed != _ALL]
    dtype_conj, form_conj, numeric = [], [], []
    for c in conjuncts(law.guard):
        neg = c[0] == "not"
        h = c[1] if neg else c
        if h[0] == "dtype":
            continue  # in the type's allowed set
        if h[0] in ("dteq", "safe"):
            dtype_conj.append((neg, h))
        elif h[0] == "form":
            form_conj.append((neg, h[1], h[2]))
        elif h[0] in ("valid", "total"):
            form_conj.append((neg, "never_invalid" if h[0] == "valid" else "never_undefined",
                              h[1]))
        else:
            numeric.append(c)
    dropped = law.dropped
    vec_consts = [t.name for t in law.lhs.walk() if t.kind == "const"] \
        if law.vector == "yes" else []
    # left-side terms of one type the typing alone does not tie: their dtypes must agree
    same = [tuple(names[id(g[0])] for g in groups) for groups in law.merged.values()]
    opvar = next((names[id(t)] for t in law.lhs.walk() if t.kind == "op" and t.op is None),
                 None)
    tvar_tid = {tc.tvar: i for i, tc in law.types.items() if tc.tvar}

    def dtype_of(b: dict[str, UOp], tid: int) -> DType:
        s = source.get(tid)
        return b[s].dtype if s is not None else fixed[tid]

    def ref_dt(b: dict[str, UOp], ref: G) -> DType:
        if ref[0] == "dt":
            return DType.parse(ref[1])
        if ref[0] == "tv":
            return dtype_of(b, tvar_tid[ref[1]])
        return b[ref[1]].dtype

    numeric_fns = [guard_fn(c, ref_dt) for c in numeric]

    def guard(**b: UOp) -> bool:
        for s, allowed in checks:
            d = b[s].dtype
            if d.ptr or d.scalar().name not in allowed:
                return False
        for names_ in same:
            d0 = b[names_[0]].dtype
            if any(b[n].dtype != d0 for n in names_[1:]):
                return False
        for neg, h in dtype_conj:
            x, y = ref_dt(b, h[1]).scalar(), ref_dt(b, h[2]).scalar()
            v = x == y if h[0] == "dteq" else can_safe_cast(x, y)
            if v == neg:
                return False
        for neg, pred, var in form_conj:
            u = b[var]
            if pred == "is_const":
                v = u.op in _CONSTS
            elif pred == "is_invalid":
                v = is_invalid(u)
            elif pred == "never_invalid":
                v = not may_be_invalid(u)
            else:
                v = not may_be_undefined(u)
            if v == neg:
                return False
        for v in dropped:
            if may_be_invalid(b[v]):
                return False
        if vec_consts and not any(b[n].op is Ops.VCONST for n in vec_consts):
            return False  # the vector rules fold what has a vector constant
        for f in numeric_fns:
            if not f(b):
                return False
        return True

    def calc(t: Term, b: dict[str, UOp]) -> Any:
        """A computed constant's value (a tuple of lanes when a vector constant is an
        operand; None: undefined, or not folded)."""
        if t.kind == "const":
            return b[t.name].arg
        if t.kind == "lit":
            return t.value
        if t.kind == "bound":
            u = b[t.name]
            v = u.vmin if t.value == "vmin" else u.vmax
            return None if isinstance(v, float) and math.isinf(v) else v
        vals = [calc(s, b) for s in t.src]
        if any(v is None for v in vals):
            return None
        op = t.op if t.op is not None else b[opvar].op
        src = dtype_of(b, t.src[1 if op is Ops.WHERE else 0].tid).scalar()
        width = max((len(v) for v in vals if isinstance(v, tuple)), default=0)
        lanes = []
        for i in range(max(width, 1)):
            args = [v[i] if isinstance(v, tuple) else v for v in vals]
            if op in (Ops.CAST, Ops.BITCAST):
                try:
                    out = (cast if op is Ops.CAST else bitcast)(args[0], src,
                                                                dtype_of(b, t.tid).scalar())
                except EvalError:
                    return None
                out = None if isinstance(out, Undefined) else out
                if op is Ops.BITCAST and isinstance(out, float) and out != out:
                    return None  # (its bits are kept; a NaN constant's are not: not folded)
            else:
                out = eval_op(op, src, *args)
            if out is None:
                return None
            lanes.append(out)
        return tuple(lanes) if width else lanes[0]

    # (one function for every match, not a recursive closure made per call: that
    # would be a reference cycle left to the cyclic collector at every rewrite)
    def go(t: Term, b: dict[str, UOp]) -> UOp | None:
        if t.kind in ("var", "const"):
            return b[t.name]
        dt = dtype_of(b, t.tid) if (t.tid in source or t.tid in fixed) else None
        if t.kind == "lit":
            return make_const(dt, t.value)
        if t.kind == "inv":
            return invalid_like(dt)
        if t.kind == "bound" or t.calc:
            v = calc(t, b)
            if isinstance(v, tuple) and dt.count != len(v):
                dt = dt.scalar().vec(len(v))
            return None if v is None else make_const(dt, v)
        src = []
        for s in t.src:
            u = go(s, b)
            if u is None:
                return None
            src.append(u)
        op = t.op if t.op is not None else b[opvar].op
        if op in (Ops.CAST, Ops.BITCAST):
            return UOp(op, dt, tuple(src))
        if op in GroupOp.Comparison:
            return UOp(op, dtypes.bool.vec(src[0].dtype.count), tuple(src))
        if op is Ops.WHERE:
            return UOp(op, src[1].dtype, tuple(src))
        return UOp(op, src[0].dtype, tuple(src))

    def build(**b: UOp) -> UOp | None:
        return go(law.rhs, b)

    out = Rule(law.name, law.identity, pattern, build=build, guard=guard, group=law.group)
    out.law = law  # type: ignore[attr-defined]  (the definition it was compiled from)
    return out

