"""The rule language: a rewrite rule written once, one line a rule.

::

    rule("idiv_idiv", "(x // c1) // c2 -> x // (c1 * c2)", when="is_index(x)")

A rule is a name, a left side, a right side and a guard; its identity comment is its
text. From that one definition come the ordered matcher's rule (:meth:`Law.baseline`: a
:class:`~eqsat.ir.pattern.Rule` with a ``UPat`` and a builder), the e-graph's native
egglog rules (:meth:`Law.natives`: :class:`rules.native.ERule` objects whose guards read
the interval analysis ``lo``/``hi``, ``Def`` and the dtype relations) and the proof
obligation (:mod:`rules.proof`). The grammar is Python's expression syntax, parsed once
with :mod:`ast`:

========================  =======================================================
``x + y`` ``x - y``       ADD SUB; ``*`` MUL, ``//`` IDIV (C truncation), ``%`` MOD (the
                          dividend's sign), ``/`` FDIV, ``**`` POW
``x & y`` ``|`` ``^``     AND OR XOR; ``<<`` ``>>`` SHL SHR; ``~x`` NOT; ``-x`` NEG
``x < y`` ... ``x != y``  LT LE GT GE EQ NE (a bool)
``floordiv(x, y)``        FLOORDIV (the quotient rounded toward -inf), ``floormod(x, y)``
                          FLOORMOD (the divisor's sign)
``max(x, y)``             MAX, MIN; ``where(c, t, f)``; ``mulacc(a, b, c)``; ``trunc``
                          ``floor`` ``ceil`` ``round`` ``sqrt`` ``recip`` ``exp2`` ``log2``
                          ``sin``; ``cast(x, T)`` ``bitcast(x, T)`` (T a dtype name or an
                          upper-case dtype variable bound by the match)
``op(x, y)``              any op of the rule's ``ops=`` (one rule for a family of ops)
``x``, ``y``, ``a`` ...   a pattern variable: any term (twice: the same term)
``c1``, ``k``, ``k2``     a constant (a CONST node), by its name: ``c<digits>``, ``k``,
                          ``k<digits>``
``0``, ``-1``, ``1.0``    a literal: an integer matches that value in an integer or float
                          dtype (``0`` is +0.0: the sign of a float zero counts), a float
                          literal floats only; ``true`` ``false`` the bools; ``nan`` ``inf``
``Inv``                   the Invalid of padded indices
========================  =======================================================

On the right side an operation whose operands are all constants is computed at rewrite
time in the dtype's arithmetic (fixed-width integers wrap; a division by zero means no
rewrite); ``vmin(x)``/``vmax(x)`` there are constants too.

The guard (``when=``) is a Python boolean expression over exact integers: constants by
name, ``vmin(x)``/``vmax(x)`` (the bounds of an integer or bool term), ``dmin(x)``/
``dmax(x)`` (its dtype's range), ``nonzero(x)`` (the bounds exclude 0), comparisons,
``+ - * // % min max abs``, ``and or not``; and, as top-level conjuncts (maybe negated),
the dtype predicates ``is_int`` (index or fixed-width), ``is_index``, ``is_fixed``,
``is_bool``, ``is_float``, ``is_signed`` of a term, ``dtype(x) == dtype(y)``/``== T``,
``safe_cast(dtype(x), T)``; ``never_invalid(x)`` (x is never Invalid: ``Def`` in the
e-graph), ``never_undefined(x)`` (no division by a possible 0 or the like below x: the
e-graph does not track it, so a rule that needs it is matched from Python); and the form
predicates ``is_const(x)``/``is_invalid(x)``,
which say how a term is written, not what it is worth: the ordered matcher obeys them
(to stop a rewrite loop), the e-graph drops what it cannot say, and the proof reads a
positive one as "x is a value" and a negated one not at all.

``shares=`` names a term of the right side the e-graph must already hold for the rule
to fire (see :class:`Law`).

Two guards come without writing: a term the right side drops from a strict position of
the left side (not a ``where`` branch) must never be Invalid (``Def`` in the e-graph:
Invalid propagates through every op, and a rewrite must not turn it into a value); and a
computed constant must exist (no division by zero) -- in the e-graph, for a fixed-width
dtype, it must also fit the dtype (egglog computes in i64).
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from eqsat.ir.dtype import DType, can_safe_cast, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule

__all__ = ["Term", "Law", "rule", "parse_side", "LangError", "SCALAR_DTYPES", "DTYPE_SETS",
           "dtype_set_name", "ctor_name", "laws_by_group", "LAWS_BY_NAME", "baseline_groups",
           "egraph_rules", "PyLaw", "py", "EGRAPH_ABSENT"]


class LangError(ValueError):
    """A rule text the language does not accept (the message says where and why)."""


#: every scalar dtype a rule may be proven for
SCALAR_DTYPES: tuple[str, ...] = tuple(d.name for d in dtypes.scalars)
_INTS = frozenset(("index", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"))
_FIXED = _INTS - {"index"}
_FLOATS = frozenset(("f16", "bf16", "f32", "f64"))
_ALL = frozenset(SCALAR_DTYPES)

#: named dtype sets the e-graph holds as relations (``(DtIn "name" dt)``; ``int`` and
#: ``fixed`` are the ``IntDt``/``FixDt`` relations, ``index``/``bool`` literals)
DTYPE_SETS: dict[str, frozenset[str]] = {
    "index": frozenset(("index",)), "bool": frozenset(("bool",)), "int": _INTS,
    "fixed": _FIXED, "float": _FLOATS, "intbool": _INTS | {"bool"},
    "num": _INTS | _FLOATS, "signed": frozenset(("index", "i8", "i16", "i32", "i64")),
    "signed_float": frozenset(("index", "i8", "i16", "i32", "i64")) | _FLOATS,
    "fixed_bool": _FIXED | {"bool"}, "fixed_float": _FIXED | _FLOATS,
    "int_float_bool": _ALL,
}


def dtype_set_name(s: frozenset[str]) -> str:
    """The name of a dtype set in :data:`DTYPE_SETS` (a set no rule named before is added,
    named by its members: the e-graph loads every set a rule guard names)."""
    for k, v in DTYPE_SETS.items():
        if v == s:
            return k
    name = "+".join(sorted(s))
    DTYPE_SETS[name] = frozenset(s)
    return name


def ctor_name(op: Ops) -> str:
    """The e-graph constructor of an ALU op (``Add``, ``Idiv``, ``Cast``, ...)."""
    return op.name.capitalize()


# the scalar dtypes each op is defined on (eqsat.ir.interp): its operands' dtype
_NUM = _INTS | _FLOATS
_OP_DTYPES: dict[Ops, frozenset[str]] = {
    Ops.ADD: _ALL, Ops.MUL: _ALL, Ops.MAX: _ALL, Ops.MIN: _ALL, Ops.SUB: _NUM,
    Ops.IDIV: _INTS, Ops.MOD: _INTS, Ops.FLOORDIV: _INTS, Ops.FLOORMOD: _INTS,
    Ops.FDIV: _FLOATS, Ops.POW: _NUM,
    Ops.AND: _INTS | {"bool"}, Ops.OR: _INTS | {"bool"}, Ops.XOR: _INTS | {"bool"},
    Ops.SHL: _INTS, Ops.SHR: _INTS, Ops.NOT: _INTS | {"bool"}, Ops.NEG: _NUM,
    Ops.TRUNC: _NUM, Ops.FLOOR: _NUM, Ops.CEIL: _NUM, Ops.ROUND: _NUM,
    Ops.SQRT: _FLOATS, Ops.RECIP: _FLOATS, Ops.EXP2: _FLOATS, Ops.LOG2: _FLOATS,
    Ops.SIN: _FLOATS, Ops.MULACC: _NUM,
    **{o: _ALL for o in GroupOp.Comparison}, Ops.WHERE: _ALL,
}

_BINOP = {ast.Add: Ops.ADD, ast.Sub: Ops.SUB, ast.Mult: Ops.MUL, ast.FloorDiv: Ops.IDIV,
          ast.Mod: Ops.MOD, ast.Div: Ops.FDIV, ast.Pow: Ops.POW, ast.BitAnd: Ops.AND,
          ast.BitOr: Ops.OR, ast.BitXor: Ops.XOR, ast.LShift: Ops.SHL, ast.RShift: Ops.SHR}
_CMPOP = {ast.Lt: Ops.LT, ast.LtE: Ops.LE, ast.Gt: Ops.GT, ast.GtE: Ops.GE, ast.Eq: Ops.EQ,
          ast.NotEq: Ops.NE}
_CALLS = {"max": Ops.MAX, "min": Ops.MIN, "where": Ops.WHERE, "mulacc": Ops.MULACC,
          "trunc": Ops.TRUNC, "floor": Ops.FLOOR, "ceil": Ops.CEIL, "round": Ops.ROUND,
          "sqrt": Ops.SQRT, "recip": Ops.RECIP, "exp2": Ops.EXP2, "log2": Ops.LOG2,
          "sin": Ops.SIN, "cast": Ops.CAST, "bitcast": Ops.BITCAST, "floordiv": Ops.FLOORDIV,
          "floormod": Ops.FLOORMOD}
_ARITY = {**{o: 1 for o in GroupOp.Unary}, **{o: 2 for o in GroupOp.Binary},
          Ops.WHERE: 3, Ops.MULACC: 3, Ops.CAST: 1, Ops.BITCAST: 1}
#: ops whose operands commute (a pattern over one matches both orders)
COMMUTATIVE = frozenset((Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN, Ops.AND, Ops.OR, Ops.XOR,
                         Ops.EQ, Ops.NE))
_CONST_NAME = re.compile(r"(c[0-9]+|k[0-9]*)$")
_DTYPE_VAR = re.compile(r"[A-Z]$")
_VAR_NAME = re.compile(r"[a-z][a-z0-9_]*$")
_NAMED_LITS = {"true": True, "false": False, "True": True, "False": False, "nan": math.nan,
               "inf": math.inf}


@dataclass(eq=False)
class Term:
    """A node of a rule's left or right side.

    ``kind``: ``"op"`` (``op``, or the rule's op variable when ``op`` is None, over
    ``src``; ``to`` names a cast's target), ``"var"`` (a pattern variable ``name``),
    ``"const"`` (a constant ``name``), ``"lit"`` (the literal ``value``), ``"inv"``
    (Invalid), ``"bound"`` (``vmin``/``vmax`` of the variable ``name``, right side only).
    ``calc`` marks a right-side op over constants (computed when the rule fires).
    ``tid`` is the node's type class (see :class:`Law`).
    """

    kind: str
    op: Ops | None = None
    src: tuple[Term, ...] = ()
    name: str = ""
    value: Any = None
    to: str = ""
    calc: bool = False
    tid: int = -1
    #: :meth:`walk`'s terms, found at its first call (a term's operands never change)
    _order: tuple[Term, ...] | None = field(default=None, init=False, repr=False)

    def walk(self) -> tuple[Term, ...]:
        """The term and every term below it, each before its operands (depth first, in
        operand order)."""
        if self._order is None:
            out: list[Term] = []
            stack = [self]
            while stack:
                t = stack.pop()
                out.append(t)
                if t.src:
                    stack.extend(reversed(t.src))
            self._order = tuple(out)
        return self._order

    def show(self, opname: str = "op") -> str:
        """The term in the language's syntax."""
        if self.kind == "var" or self.kind == "const":
            return self.name
        if self.kind == "lit":
            v = self.value
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, float) and math.isnan(v):
                return "nan"
            return repr(v)
        if self.kind == "inv":
            return "Inv"
        if self.kind == "bound":
            return f"{self.value}({self.name})"
        args = ", ".join(s.show(opname) for s in self.src)
        if self.op is None:
            return f"{opname}({args})"
        if self.op in (Ops.CAST, Ops.BITCAST):
            return f"{self.op.name.lower()}({args}, {self.to})"
        return f"{self.op.name.lower()}({args})"

    def __repr__(self) -> str:
        return f"Term({self.show()!r})"


def _lit(v: Any) -> Term:
    return Term("lit", value=v)


def _side(node: ast.expr, text: str, opvar: bool) -> Term:
    """One side of a rule from its Python AST."""

    def err(msg: str) -> LangError:
        return LangError(f"{text!r}: {msg}")

    def go(n: ast.expr) -> Term:
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (bool, int, float)):
                return _lit(n.value)
            raise err(f"unsupported literal {n.value!r}")
        if isinstance(n, ast.Name):
            if n.id in _NAMED_LITS:
                return _lit(_NAMED_LITS[n.id])
            if n.id == "Inv":
                return Term("inv")
            if _CONST_NAME.match(n.id):
                return Term("const", name=n.id)
            if _VAR_NAME.match(n.id):
                return Term("var", name=n.id)
            raise err(f"bad name {n.id!r} (variables are lower-case, constants c1/k/k2)")
        if isinstance(n, ast.UnaryOp):
            if isinstance(n.op, ast.USub):
                inner = go(n.operand)
                if inner.kind == "lit" and not isinstance(inner.value, bool):
                    return _lit(-inner.value)
                return Term("op", Ops.NEG, (inner,))
            if isinstance(n.op, (ast.Invert, ast.Not)):
                return Term("op", Ops.NOT, (go(n.operand),))
            raise err("unsupported unary operator")
        if isinstance(n, ast.BinOp):
            op = _BINOP.get(type(n.op))
            if op is None:
                raise err("unsupported operator")
            return Term("op", op, (go(n.left), go(n.right)))
        if isinstance(n, ast.Compare):
            if len(n.ops) != 1:
                raise err("chained comparisons are not supported")
            return Term("op", _CMPOP[type(n.ops[0])], (go(n.left), go(n.comparators[0])))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            f = n.func.id
            if f in ("vmin", "vmax"):
                if len(n.args) != 1 or not isinstance(n.args[0], ast.Name):
                    raise err(f"{f}() takes one variable")
                return Term("bound", name=n.args[0].id, value=f)
            if f == "op" and opvar:
                return Term("op", None, tuple(go(a) for a in n.args))
            op = _CALLS.get(f)
            if op is None:
                raise err(f"unknown function {f!r}")
            if op in (Ops.CAST, Ops.BITCAST):
                if len(n.args) != 2 or not isinstance(n.args[1], ast.Name):
                    raise err(f"{f}(x, T) takes a term and a dtype")
                to = n.args[1].id
                if not _DTYPE_VAR.match(to):
                    try:
                        DType.parse(to)
                    except ValueError:
                        raise err(f"unknown dtype {to!r}") from None
                return Term("op", op, (go(n.args[0]),), to=to)
            if len(n.args) != _ARITY[op]:
                raise err(f"{f}() takes {_ARITY[op]} arguments")
            return Term("op", op, tuple(go(a) for a in n.args))
        raise err(f"unsupported syntax {ast.dump(n)[:40]}")

    return go(node)


def parse_side(text: str, opvar: bool = False) -> Term:
    """A rule side (``"(x // c1) // c2"``) as a :class:`Term` tree."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise LangError(f"{text!r}: not an expression ({e.msg})") from None
    return _side(node, text, opvar)


# ---------------------------------------------------------------------------
# guards: a small AST of tuples
#   ("num", v) ("const", name) ("bound", "vmin"|"vmax", var) ("dlim", "dmin"|"dmax", ref)
#   ("bin", op, a, b) ("call", "min"|"max"|"abs", args...) ("cmp", op, a, b)
#   ("and", ...) ("or", ...) ("not", g) ("true",)
#   ("dtype", pred, ref) ("dteq", ref, ref) ("safe", ref, ref) ("form", pred, var)
# ref: ("var", name) | ("tv", "T") | ("dt", "i32")
G = tuple
_GBIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
         ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_GCMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_DT_PREDS = {"is_int": _INTS, "is_index": frozenset(("index",)), "is_fixed": _FIXED,
             "is_bool": frozenset(("bool",)), "is_float": _FLOATS,
             "is_signed": frozenset(("index", "i8", "i16", "i32", "i64")) | _FLOATS}
_FORM_PREDS = ("is_const", "is_invalid")


def parse_guard(text: str) -> G:
    """A guard text as the tuple AST above."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise LangError(f"guard {text!r}: not an expression ({e.msg})") from None

    def err(msg: str) -> LangError:
        return LangError(f"guard {text!r}: {msg}")

    def ref(n: ast.expr) -> G:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "dtype" \
                and len(n.args) == 1 and isinstance(n.args[0], ast.Name):
            return ("var", n.args[0].id)
        if isinstance(n, ast.Name) and _DTYPE_VAR.match(n.id):
            return ("tv", n.id)
        if isinstance(n, ast.Name):
            try:
                DType.parse(n.id)
            except ValueError:
                raise err(f"{n.id!r} is not a dtype") from None
            return ("dt", n.id)
        raise err("expected dtype(x), a dtype variable or a dtype name")

    def go(n: ast.expr) -> G:
        if isinstance(n, ast.BoolOp):
            return ("and" if isinstance(n.op, ast.And) else "or", *map(go, n.values))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return ("not", go(n.operand))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            inner = go(n.operand)
            return ("num", -inner[1]) if inner[0] == "num" else ("bin", "-", ("num", 0), inner)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, bool)):
            return ("num", int(n.value))
        if isinstance(n, ast.Constant) and n.value is None:
            raise err("None is not a value")
        if isinstance(n, ast.Name):
            if n.id in ("true", "True"):
                return ("true",)
            if _CONST_NAME.match(n.id):
                return ("const", n.id)
            raise err(f"{n.id!r}: a guard reads constants (c1, k), vmin(x), vmax(x)")
        if isinstance(n, ast.BinOp):
            op = _GBIN.get(type(n.op))
            if op is None:
                raise err("unsupported operator")
            return ("bin", op, go(n.left), go(n.right))
        if isinstance(n, ast.Compare):
            if len(n.ops) != 1:
                raise err("chained comparisons are not supported")
            a, b = n.left, n.comparators[0]
            is_dt = (lambda m: isinstance(m, ast.Call) and isinstance(m.func, ast.Name)
                     and m.func.id == "dtype") or (lambda m: False)
            if is_dt(a) or is_dt(b) or (isinstance(b, ast.Name) and _DTYPE_VAR.match(b.id)):
                if type(n.ops[0]) not in (ast.Eq, ast.NotEq):
                    raise err("dtypes compare with == or !=")
                g = ("dteq", ref(a), ref(b))
                return g if isinstance(n.ops[0], ast.Eq) else ("not", g)
            return ("cmp", _GCMP[type(n.ops[0])], go(a), go(b))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            f, args = n.func.id, n.args
            if f in ("vmin", "vmax"):
                if len(args) != 1 or not isinstance(args[0], ast.Name):
                    raise err(f"{f}() takes one variable")
                return ("bound", f, args[0].id)
            if f in ("dmin", "dmax"):
                if len(args) != 1:
                    raise err(f"{f}() takes one term or dtype")
                a = args[0]
                r = ("var", a.id) if isinstance(a, ast.Name) and _VAR_NAME.match(a.id) \
                    or (isinstance(a, ast.Name) and _CONST_NAME.match(a.id)) else ref(a)
                return ("dlim", f, r)
            if f == "nonzero":
                if len(args) != 1 or not isinstance(args[0], ast.Name):
                    raise err("nonzero() takes one variable")
                v = args[0].id
                return ("or", ("cmp", ">", ("bound", "vmin", v), ("num", 0)),
                        ("cmp", "<", ("bound", "vmax", v), ("num", 0)))
            if f in ("min", "max", "abs"):
                return ("call", f, *map(go, args))
            if f in _DT_PREDS:
                if len(args) != 1 or not isinstance(args[0], ast.Name):
                    raise err(f"{f}() takes one variable or dtype variable")
                a = args[0].id
                return ("dtype", f, ("tv", a) if _DTYPE_VAR.match(a) else ("var", a))
            if f in ("never_invalid", "never_undefined"):
                if len(args) != 1 or not isinstance(args[0], ast.Name):
                    raise err(f"{f}() takes one variable")
                return ("valid" if f == "never_invalid" else "total", args[0].id)
            if f in _FORM_PREDS:
                if len(args) != 1 or not isinstance(args[0], ast.Name):
                    raise err(f"{f}() takes one variable")
                return ("form", f, args[0].id)
            if f == "safe_cast":
                if len(args) != 2:
                    raise err("safe_cast(S, D) takes two dtypes")
                return ("safe", ref(args[0]), ref(args[1]))
            raise err(f"unknown function {f!r}")
        raise err(f"unsupported syntax {ast.dump(n)[:40]}")

    return go(node)


def conjuncts(g: G | None) -> list[G]:
    """The top-level conjuncts of a guard."""
    if g is None or g == ("true",):
        return []
    if g[0] == "and":
        return [c for x in g[1:] for c in conjuncts(x)]
    return [g]


def _is_dtype_conj(g: G) -> bool:
    """A dtype-only conjunct (decided by the dtypes alone)."""
    h = g[1] if g[0] == "not" else g
    return h[0] in ("dtype", "dteq", "safe")


@functools.lru_cache(maxsize=256)
def _not_holding(v: int) -> frozenset[str]:
    """The fixed-width dtypes that cannot hold the integer ``v`` (a literal matches a
    constant of that exact value, never a wrapped one)."""
    out = set()
    for name in _FIXED:
        d = DType.parse(name)
        if not d.min <= v <= d.max:
            out.add(name)
    return frozenset(out)


def _walk_guard(g: G) -> list[G]:
    """``g`` and every guard term below it, each before its operands (in order)."""
    out: list[G] = []
    stack = [g]
    while stack:
        h = stack.pop()
        out.append(h)
        stack.extend([x for x in reversed(h[1:]) if isinstance(x, tuple)])
    return out


# ---------------------------------------------------------------------------
# types: union-find over terms, variables, constants and dtype variables
class _Types:
    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}
        self.fixed: dict[Any, str] = {}

    def find(self, k: Any) -> Any:
        parent = self.parent
        p = parent.get(k)
        if p is None:
            parent[k] = k
            return k
        while p != k:  # (path halving: each visited key to its grandparent)
            gp = parent[p]
            parent[k] = gp
            k, p = gp, parent[gp]
        return k

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        fa, fb = self.fixed.get(ra), self.fixed.get(rb)
        if fa and fb and fa != fb:
            raise LangError(f"type clash: {fa} and {fb}")
        self.parent[ra] = rb
        if fa:
            self.fixed[rb] = fa

    def fix(self, a: Any, dt: str) -> None:
        r = self.find(a)
        if self.fixed.get(r, dt) != dt:
            raise LangError(f"type clash: {self.fixed[r]} and {dt}")
        self.fixed[r] = dt


def _key(t: Term) -> Any:
    if t.kind in ("var", "const"):
        return (t.kind, t.name)
    return ("node", id(t))


@dataclass(frozen=True)
class TypeClass:
    """One type of a rule: the terms that share a dtype; ``fixed`` when the rule says
    which (bool for a condition, a cast's named target); ``allowed``: the scalar dtypes
    the rule may have there (the ops' and the guard's dtype predicates)."""

    tid: int
    fixed: str | None
    allowed: frozenset[str]
    tvar: str | None = None  # the dtype variable (``T``) naming it, if any


def laws_by_group(laws: Iterable[Any]) -> dict[str, list[Any]]:
    """Rule objects (with ``.group``) by group, in order."""
    out: dict[str, list[Any]] = {}
    for r in laws:
        out.setdefault(r.group, []).append(r)
    return out


@dataclass(eq=False)
class Law:
    """A rule of the language (see the module docstring); made by :func:`rule`.

    ``native``: None when the e-graph runs it as native egglog rules, else the reason it
    does not (it then matches e-nodes from Python, :func:`rules.computed.ematched`).
    ``egraph_group``: the e-graph group when not the baseline's (an opt-in group).
    ``baseline``: whether the ordered matcher has it (an e-graph-only rule says why not).
    ``subsume``: the e-graph hides the matched e-node (the right side is strictly simpler).
    ``ordered``: a commutative op of the left side matches in the written order only.
    ``egraph_dtypes``: the e-graph runs it on these dtypes only (a named set), with the
    reason in ``egraph_note``. ``egraph_absent``: the e-graph does not run it at all, and
    why (another of its rules or passes covers it). ``egraph_nonint``: where not native,
    the e-graph matches it on float, vector and other non-integer e-nodes only (the
    interval analysis folds integers and bools).
    ``vector``: whether the rule's constants may be vector constants (VCONST), whose
    computed results are lane by lane: ``"no"``, ``"yes"`` (one of them is), ``"any"``.
    ``width_generic``: why the rule's proof may take the narrow floats for ``f64``
    (:data:`rules.proof.laws.NARROW_FLOATS`; every integer width is proven): it reads no
    value, constant or bound of them, and its argument is the same at every width.
    ``shares``: a term of the right side (written as there) that the e-graph must
    already hold for the rule to fire: a rewrite that is costlier alone and pays only by
    sharing that term with the rest of the graph (``x % k -> x - (x // k) * k`` where
    ``x // k`` is computed anyway). It narrows where the rule fires, not what it means:
    the proof reads the rule without it; e-graph only (the ordered matcher cannot see
    the rest of the graph), and native (an extra atom of the egglog query).
    """

    name: str
    text: str
    when: str | None = None
    group: str = ""
    ops: tuple[Ops, ...] = ()
    note: str = ""
    native: str | None = None
    egraph_group: str | None = None
    baseline_reason: str | None = None
    subsume: bool = False
    ordered: bool = False
    egraph_dtypes: str | None = None
    egraph_note: str = ""
    egraph_absent: str | None = None
    vector: str = "no"
    egraph_nonint: bool = False
    width_generic: str | None = None
    shares: str | None = None
    #: the ops of an op variable the e-graph cannot run natively, with why (the others are)
    native_gaps: tuple[str, ...] = field(default=(), init=False)
    lhs: Term = field(init=False, repr=False)
    rhs: Term = field(init=False, repr=False)
    guard: G | None = field(init=False, repr=False)
    #: the term of the right side named by ``shares`` (None without it)
    shared: Term | None = field(init=False, repr=False)
    types: dict[int, TypeClass] = field(init=False, repr=False)
    #: type -> the left side's terms of that type by the groups the typing alone ties
    #: (more than one group: the engines check that the groups' dtypes agree)
    merged: dict[int, tuple[tuple[Term, ...], ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if "->" not in self.text or self.text.count("->") != 1:
            raise LangError(f"rule {self.name!r}: write 'lhs -> rhs' ({self.text!r})")
        left, right = self.text.split("->")
        opvar = bool(self.ops)
        self.lhs = parse_side(left, opvar)
        self.rhs = parse_side(right, opvar)
        self.guard = parse_guard(self.when) if self.when else None
        if self.lhs.kind != "op":
            raise LangError(f"rule {self.name!r}: the left side must be an operation")
        self._check_names()
        self._mark_calc(self.rhs)
        self._infer()
        self.shared = self._shared_term()

    def _shared_term(self) -> Term | None:
        """The right side's term that ``shares`` writes (see :class:`Law`)."""
        if self.shares is None:
            return None
        if self.baseline_reason is None or self.native is not None:
            raise LangError(f"rule {self.name!r}: a rule that shares a term is e-graph "
                            "only and native (baseline_reason set, native None)")
        want = parse_side(self.shares, bool(self.ops)).show()
        found = next((t for t in self.rhs.walk() if t.kind == "op" and t.show() == want),
                     None)
        if found is None or found.calc:
            raise LangError(f"rule {self.name!r}: shares {self.shares!r}, which is no "
                            "operation of the right side over its variables")
        return found

    # ---- checks ----------------------------------------------------------------
    def _check_names(self) -> None:
        lvars = {t.name for t in self.lhs.walk() if t.kind in ("var", "const")}
        for t in self.rhs.walk():
            if t.kind in ("var", "const", "bound") and t.name not in lvars:
                raise LangError(f"rule {self.name!r}: {t.name!r} on the right side is not "
                                "bound by the left side")
        ltv = {t.to for t in self.lhs.walk() if t.to and _DTYPE_VAR.match(t.to)}
        for t in self.rhs.walk():
            if t.to and _DTYPE_VAR.match(t.to) and t.to not in ltv:
                raise LangError(f"rule {self.name!r}: dtype variable {t.to} is not bound")
        for g in _walk_guard(self.guard or ("true",)):
            names = [g[2]] if g[0] in ("bound", "form") else [g[1]] if g[0] in (
                "const", "valid", "total") else []
            for ref in g[1:] if g[0] in ("dteq", "safe") else g[2:3] if g[0] in ("dtype",
                                                                                 "dlim") else ():
                if ref[0] == "var":
                    names.append(ref[1])
                elif ref[0] == "tv" and ref[1] not in ltv:
                    raise LangError(f"rule {self.name!r}: dtype variable {ref[1]} is not bound")
            for n in names:
                if n not in lvars:
                    raise LangError(f"rule {self.name!r}: the guard reads {n!r}, which the "
                                    "left side does not bind")
        for t in self.lhs.walk():
            if t.kind == "bound":
                raise LangError(f"rule {self.name!r}: vmin/vmax on the left side")
        for g in _walk_guard(self.guard or ("true",)):
            if g[0] in ("dtype", "dteq", "safe"):
                if not any(g is c or (c[0] == "not" and c[1] is g)
                           for c in conjuncts(self.guard)):
                    raise LangError(f"rule {self.name!r}: a dtype predicate must be a "
                                    "top-level conjunct of the guard")

    def _mark_calc(self, t: Term) -> bool:
        """Mark right-side ops over constants only; whether ``t`` is constant-valued."""
        if t.kind in ("const", "lit", "bound"):
            return True
        if t.kind != "op":
            return False
        kids = [self._mark_calc(s) for s in t.src]
        if all(kids):
            t.calc = True
            return True
        return False

    # ---- types ------------------------------------------------------------------
    def _infer(self) -> None:
        ty = _Types()
        lits: list[Term] = []

        def visit(t: Term) -> None:
            k = _key(t)
            ty.find(k)
            if t.kind == "lit":
                lits.append(t)
                if isinstance(t.value, bool):
                    ty.fix(k, "bool")
            if t.kind == "bound":
                ty.union(k, ("var", t.name))
            if t.kind != "op":
                return
            for s in t.src:
                visit(s)
            op = t.op
            kids = [_key(s) for s in t.src]
            if op in (Ops.CAST, Ops.BITCAST):
                if _DTYPE_VAR.match(t.to):
                    ty.union(k, ("tv", t.to))
                else:
                    ty.fix(k, t.to)
            elif op in GroupOp.Comparison:
                ty.fix(k, "bool")
                ty.union(kids[0], kids[1])
            elif op is Ops.WHERE:
                ty.fix(kids[0], "bool")
                ty.union(kids[1], kids[2])
                ty.union(k, kids[1])
            elif op is None and self.ops == (Ops.WHERE,):
                ty.fix(kids[0], "bool")
                ty.union(kids[1], kids[2])
                ty.union(k, kids[1])
            elif op is None and self.ops[0] in GroupOp.Comparison:  # comparisons only
                ty.fix(k, "bool")
                for kk in kids[1:]:
                    ty.union(kids[0], kk)
            elif op is None:  # an op variable: ops whose operands and result agree
                for kk in kids:
                    ty.union(k, kk)
            else:
                for kk in kids:
                    ty.union(k, kk)

        visit(self.lhs)
        lhs_class = {id(t): ty.find(_key(t)) for t in self.lhs.walk()}
        visit(self.rhs)
        ty.union(_key(self.lhs), _key(self.rhs))
        if self.ops and any(o in GroupOp.Comparison for o in self.ops):
            if not all(o in GroupOp.Comparison for o in self.ops):
                raise LangError(f"rule {self.name!r}: ops= mixes comparisons and other ops")
        # number the classes
        roots: dict[Any, int] = {}
        terms = list(self.lhs.walk()) + list(self.rhs.walk())
        for t in terms:
            r = ty.find(_key(t))
            if r not in roots:
                roots[r] = len(roots)
            t.tid = roots[r]
        tvars: dict[int, str] = {}
        for k in list(ty.parent):
            if isinstance(k, tuple) and k[0] == "tv":
                r = ty.find(k)
                if r not in roots:
                    roots[r] = len(roots)
                tvars[roots[r]] = k[1]
        self._tvar_tid = {name: i for i, name in tvars.items()}
        allowed: dict[int, frozenset[str]] = {i: _ALL for i in roots.values()}
        # an op is defined on some dtypes only
        for t in terms:
            if t.kind != "op":
                continue
            ops = (t.op,) if t.op is not None else self.ops
            if t.op in (Ops.CAST, Ops.BITCAST):
                continue
            operand = t.src[0].tid if t.src else t.tid
            if t.op is Ops.WHERE:
                operand = t.src[1].tid
            ok = frozenset().union(*(_OP_DTYPES.get(o, _ALL) for o in ops))
            allowed[operand] &= ok
        # literals: a float literal needs a float dtype, an integer one a number (on the
        # right side 0 and 1 are also the bools false and true)
        rhs_lits = {id(t) for t in self.rhs.walk()}
        for t in lits:
            if isinstance(t.value, float):
                allowed[t.tid] &= _FLOATS
            elif not isinstance(t.value, bool):
                ok = _NUM | ({"bool"} if id(t) in rhs_lits and t.value in (0, 1) else set())
                allowed[t.tid] &= ok - _not_holding(t.value)
        # vmin/vmax read the bounds of an integer or bool term
        for g in _walk_guard(self.guard or ("true",)):
            if g[0] == "bound":
                allowed[self._tid_of(g[2])] &= _INTS | {"bool"}
        for t in terms:
            if t.kind == "bound":
                allowed[self._tid_of(t.name)] &= _INTS | {"bool"}
        # top-level dtype predicates of the guard
        for c in conjuncts(self.guard):
            neg = c[0] == "not"
            h = c[1] if neg else c
            if h[0] == "dtype":
                tid = self.tid_of(h[2])
                s = _DT_PREDS[h[1]]
                allowed[tid] = allowed[tid] - s if neg else allowed[tid] & s
        fixed = {roots[r]: dt for r, dt in ty.fixed.items() if r in roots}
        # left-side terms the typing does not make one dtype, which the right side does:
        # the engines check that their dtypes agree (``x`` of ``cast(x, T) -> x``)
        reps: dict[int, dict[Any, list[Term]]] = {}
        for t in self.lhs.walk():
            reps.setdefault(t.tid, {}).setdefault(lhs_class[id(t)], []).append(t)
        self.merged = {i: tuple(tuple(ts) for ts in d.values())
                       for i, d in reps.items() if len(d) > 1}
        self.types = {}
        for i in sorted(allowed):
            f = fixed.get(i)
            a = allowed[i] if f is None else (frozenset((f,)) & allowed[i]
                                              if f in _ALL else frozenset())
            self.types[i] = TypeClass(i, f, a, tvars.get(i))
        for tc in self.types.values():
            if not tc.allowed and (tc.fixed is None or tc.fixed in _ALL):
                raise LangError(f"rule {self.name!r}: no dtype satisfies the rule's ops and "
                                "guard")

    def _tid_of(self, var: str) -> int:
        for t in self.lhs.walk():
            if t.kind in ("var", "const") and t.name == var:
                return t.tid
        raise LangError(f"rule {self.name!r}: {var!r} is not bound")

    def tid_of(self, ref: G) -> int:
        """The type class of a guard's dtype reference (``("var", x)`` or ``("tv", T)``)."""
        if ref[0] == "var":
            return self._tid_of(ref[1])
        if ref[1] in self._tvar_tid:
            return self._tvar_tid[ref[1]]
        raise LangError(f"rule {self.name!r}: dtype variable {ref[1]} is not bound")

    # ---- facts the compilers share ----------------------------------------------------
    @property
    def identity(self) -> str:
        """The rule's identity comment: its text and guard (and note)."""
        s = self.text.strip() + (f" when {self.when}" if self.when else "")
        return s + (f" ({self.note})" if self.note else "")

    @cached_property
    def dropped(self) -> tuple[str, ...]:
        """The variables the right side drops from a strict position of the left side
        (every path to them avoids a ``where`` branch): they must never be Invalid."""
        kept = {t.name for t in self.rhs.walk() if t.kind == "var"}
        strict: set[str] = set()

        def visit(t: Term, lazy: bool) -> None:
            if t.kind == "var" and not lazy:
                strict.add(t.name)
            for i, s in enumerate(t.src):
                visit(s, lazy or (t.op is Ops.WHERE and i > 0))

        visit(self.lhs, False)
        if self.rhs.kind == "inv":  # an Invalid result absorbs whatever is dropped
            return ()
        order = [t.name for t in self.lhs.walk() if t.kind == "var"]
        return tuple(dict.fromkeys(v for v in order if v in strict and v not in kept))

    def form_guard(self, pred: str, var: str) -> bool:
        """Whether ``pred(var)`` (a form predicate) is a conjunct, negated or not."""
        return any(c == ("form", pred, var) or c == ("not", ("form", pred, var))
                   for c in conjuncts(self.guard))

    def egraph_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Law({self.name!r}, {self.identity!r}, group={self.group!r})"

    # ---- the ordered matcher ------------------------------------------------------------
    @cached_property
    def baseline(self) -> Rule:
        """The ordered matcher's :class:`~eqsat.ir.pattern.Rule` of this rule."""
        from rules.lang_baseline import compile_baseline

        return compile_baseline(self)

    # ---- the e-graph --------------------------------------------------------------------
    @cached_property
    def natives(self) -> list[Any]:
        """The native egglog rules (:class:`rules.native.ERule`) of this rule; empty when
        the e-graph does not run it natively (``native`` says why)."""
        if self.native is not None:
            return []
        from rules.lang_egglog import compile_egglog

        return compile_egglog(self)


#: every rule of the language made so far, by name (the proofs and the parity test
#: find a rule's definition here from the name its engines' rules carry)
LAWS_BY_NAME: dict[str, Law] = {}


def rule(name: str, text: str, when: str | None = None, *, register: bool = True,
         **kw: Any) -> Law:
    """A rule of the language: ``rule("add_zero", "x + 0 -> x")`` (see :class:`Law`).

    The rule is registered under its name (:data:`LAWS_BY_NAME`); a second rule of the
    same name in another family is an error (one definition per rule). ``register=False``
    (a rule written in a notebook, to prove or try): not registered."""
    law = Law(name, text, when, **kw)
    if not register:
        return law
    old = LAWS_BY_NAME.get(name)
    if old is not None and (old.text, old.when, old.group) != (law.text, law.when, law.group):
        raise LangError(f"rule {name!r} is defined twice")
    LAWS_BY_NAME[name] = law
    return law


# ---------------------------------------------------------------------------
# values of dtype-only guard conjuncts, for a choice of dtypes
def dtype_facts_hold(law: Law, dts: dict[int, str]) -> bool:
    """Whether the dtype conjuncts of ``law``'s guard hold for the scalar dtype names
    ``dts`` (type class -> dtype)."""
    for c in conjuncts(law.guard):
        neg = c[0] == "not"
        h = c[1] if neg else c
        if h[0] == "dtype":
            v = dts[law.tid_of(h[2])] in _DT_PREDS[h[1]]
        elif h[0] == "dteq":
            v = _ref_dt(law, h[1], dts) == _ref_dt(law, h[2], dts)
        elif h[0] == "safe":
            v = can_safe_cast(DType.parse(_ref_dt(law, h[1], dts)),
                              DType.parse(_ref_dt(law, h[2], dts)))
        else:
            continue
        if v == neg:
            return False
    return True


def _ref_dt(law: Law, ref: G, dts: dict[int, str]) -> str:
    if ref[0] == "dt":
        return ref[1]
    return dts[law.tid_of(ref)]



# ---------------------------------------------------------------------------
# a family module's two sections from its rules
@dataclass(eq=False)
class PyLaw:
    """A rule written in Python (one function a rule, with its ``UPat``): what needs
    computation (constant folding, GEP lanes, the div/mod core, sums) stays so.

    ``egraph``: how the e-graph runs it -- ``"ematch"`` (matched from Python against every
    e-node of the classes it visits), ``"ematch_nonint"`` (the same on float, vector and
    other non-integer e-nodes: the interval analysis folds integers), ``"computed"`` (a
    computed rule of the same name, which the family lists in its ``EGRAPH``) or
    ``"absent"``;
    ``reason`` says why it is not native (or what covers it when absent). Its proof is in
    :mod:`rules.proof.python`.
    """

    rule: Rule
    egraph: str
    reason: str

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def group(self) -> str:
        return self.rule.group

    @property
    def identity(self) -> str:
        return self.rule.identity

    def __repr__(self) -> str:
        return f"PyLaw({self.rule.name!r}, egraph={self.egraph!r})"


def py(rule: Rule, egraph: str, reason: str) -> PyLaw:
    """A rule written in Python, with how the e-graph runs it (see :class:`PyLaw`)."""
    if egraph not in ("ematch", "ematch_nonint", "absent", "computed"):
        raise LangError(f"rule {rule.name!r}: egraph must be ematch, ematch_nonint, computed "
                        "or absent")
    return PyLaw(rule, egraph, reason)


#: the rules the e-graph does not run, with what covers each (the parity test reads it)
EGRAPH_ABSENT: dict[str, str] = {}

#: why a constant fold is matched from Python in the e-graph (``native=FOLD``)
FOLD = ("float and vector constants are opaque leaves of the e-graph (argument keys), "
        "which egglog cannot compute with: matched from Python on float, vector and other "
        "non-integer e-nodes; an integer or bool class folds through the interval analysis "
        "(fold_known)")


def baseline_groups(laws: Iterable[Any]) -> dict[str, list[Rule]]:
    """The ordered matcher's groups of a family: each rule the baseline has (a
    :class:`Law` through :attr:`Law.baseline`, a :class:`PyLaw`'s rule, or a ``Rule`` as
    it is), in order."""
    out: dict[str, list[Rule]] = {}
    for r in laws:
        if isinstance(r, Law):
            if r.baseline_reason is not None:
                continue
            out.setdefault(r.group, []).append(r.baseline)
        elif isinstance(r, PyLaw):
            out.setdefault(r.group, []).append(r.rule)
        elif isinstance(r, Rule):
            out.setdefault(r.group, []).append(r)
    return out


def egraph_rules(laws: Iterable[Any]) -> list[Any]:
    """The e-graph's rules of a family's laws, in order: a law's native egglog rules, or
    the law matched from Python (:func:`rules.computed.ematched`) where it is not native;
    a rule the e-graph does not run is recorded in :data:`EGRAPH_ABSENT`."""
    from rules.computed import ematched

    out: list[Any] = []
    for r in laws:
        if isinstance(r, Law):
            if r.egraph_absent is not None:
                EGRAPH_ABSENT[r.name] = r.egraph_absent
            elif r.native is None:
                try:
                    out.extend(r.natives)
                except ValueError as e:
                    raise LangError(f"rule {r.name!r} cannot be a native e-graph rule: {e} "
                                    "(say why with native=...)") from None
            else:
                out.extend(ematched([r.baseline], r.egraph_group or r.group,
                                    non_int=r.egraph_nonint, reason=r.native))
        elif isinstance(r, PyLaw):
            if r.egraph == "absent":
                EGRAPH_ABSENT[r.name] = r.reason
            elif r.egraph != "computed":
                out.extend(ematched([r.rule], r.group, non_int=r.egraph == "ematch_nonint",
                                    reason=r.reason))
    return out
