"""The ``.uop`` text format: :func:`parse` text into a UOp, :func:`to_sexpr` back.

The format is described in ``docs/format.md``; this module implements all of
it. A file is zero or more bindings ``%NAME = EXPR`` followed by exactly one root
expression; ``;`` starts a comment that runs to the end of the line::

    >>> from eqsat.ir.sexpr import parse, to_sexpr
    >>> g = parse("%a = (add (range 0 32) 5)\\n(idiv (mul %a %a) 4)")
    >>> print(to_sexpr(g))
    %0 = (add (range 0 32) 5)
    (idiv (mul %0 %0) 4)
    >>> parse(to_sexpr(g)) is g
    True

Mapping of text ops to the IR (``eqsat.ir.ops.Ops``)
-------------------------------------------------
``var`` -> DEFINE_VAR ``arg=(name, lo, hi)``; ``range`` -> RANGE ``arg=id``;
``special`` -> SPECIAL ``arg=name``; ``buffer`` -> DEFINE_GLOBAL ``arg=(slot, size)``;
``invalid`` -> INVALID; ``const``/``vconst`` -> CONST/VCONST; every other op is the
upper-case name (``idiv`` -> IDIV, ``reduce add`` -> REDUCE with ``arg=Ops.ADD``).
Beyond the spec's list the parser and printer also accept the IR ops ``min`` [2]
and ``floor`` ``ceil`` ``round`` [1] (rewrites may produce them). IR ops without a
text form (MULHI, IF, ENDIF, DEFINE_LOCAL, ...) make :func:`to_sexpr` raise
``ValueError``.

Dtype inference
---------------
Every node's dtype follows from its operands; a mismatch is a :class:`ParseError`
at the offending operand.

* Literals: ``42`` is an index constant, ``true``/``false`` bool, ``1.5`` ``-2e3``
  ``inf`` ``-inf`` ``nan`` f32. A bare integer literal beside a typed operand of
  the same operand group takes that operand's dtype (``(add (cast i32 x) 1)`` adds
  an i32 1; beside ``f32x4`` it is a broadcast ``(const f32x4 1.0)``); a bare float
  literal likewise takes a *float* sibling's dtype (``f16``, ``f64``; extension of
  the spec, which only says f32). Operand groups: all operands of an ALU op and of
  ``vectorize`` (``cat``: the element dtype); the two branches of ``where``;
  ``load``'s ALT and ``store``'s VALUE are grouped with the buffer's element dtype.
  Everywhere else (``range``/``special`` END, ``index`` IDX, ``cast`` operand, ...)
  a bare integer is an index constant. A bare literal that does not fit the dtype
  it takes is an error, like ``(const i8 300)``; so is a finite float that
  overflows to infinity (``(const f16 1e6)``).
* ``add sub mul max min pow mulacc`` and the unary ops: the operands' common dtype.
  ``idiv mod shl shr`` need integers (index, signed, unsigned), ``fdiv recip sqrt
  exp2 log2 sin`` floats, ``and or xor not`` bool or integers; ``sub neg pow mulacc
  trunc floor ceil round`` numbers (not bool). Pointers and void are no ALU operands.
* Comparisons give ``bool``, or ``boolxN`` for ``N``-wide vector operands.
* ``(where C T F)``: C is bool (scalar, or a bool vector as wide as the branches);
  the result has the branches' common dtype (``(invalid)`` is an index).
* ``(cast DT x)``/``(bitcast DT x)``: DT; widths (vector counts) must agree, and a
  bitcast must keep the total bit size (not index).
* ``(vectorize a b ...)``: scalars of one dtype -> that dtype ``xN``;
  ``(cat a b ...)``: vectors/scalars of one element dtype -> ``x(sum of widths)``;
  ``(gep x I ...)``: lanes ``0 <= I < width`` of x -> element dtype ``x(#lanes)``.
* ``(range ID END)``/``(special NAME END)``: END's dtype (an integer dtype).
  ``(range ID END KIND)``: a range of another role than a plain ``loop``, KIND one
  lower-case word of ``eqsat.ir.uop.RANGE_KINDS`` (tinygrad's AxisType: ``reduce``,
  ``upcast``, ``unroll``, ``global``, ...); RANGE ``arg=(id, KIND)``.
  ``(var NAME LO HI)``: index, ``LO <= HI``. ``(buffer SLOT DT SIZE)``: ``DT*``.
* ``(index BUF IDX [GATE])``: BUF's pointer dtype; IDX an integer, GATE a bool.
  ``(load P [ALT])``: the element dtype of the pointer P; ``(store P V)``: void,
  V of P's element dtype.
* ``(reduce OP X R ...)``: X's dtype; ``(end X R ...)``: void (the R's must be
  ``range`` nodes); ``(after X D ...)``: X's dtype; ``(sink ...)``: void.

Printing
--------
:func:`to_sexpr` prints each shared non-leaf node once as a binding ``%0``,
``%1``, ... (numbered in child-before-parent order, so the output is
deterministic); leaves (constants, ``var``, ``range``, ``special``, ``buffer``,
``invalid``) are always written inline. Index constants, bools and f32 constants
print as bare literals, every other constant as ``(const DT V)``; floats print
their shortest exact decimal (``-0.0``, ``nan``, ``inf`` included) so that
``parse(to_sexpr(g)) is g``. ``compact=True`` puts everything on one line.
Both directions are iterative: graphs thousands of levels deep are fine.
"""

from __future__ import annotations

import math
import re
import sys
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.dtype import DType, DTypeError, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import RANGE_KINDS, UOp

__all__ = ["parse", "to_sexpr", "ParseError", "node_label", "has_text_form"]


class ParseError(ValueError):
    """Malformed ``.uop`` text: ``line``/``col`` (1-based) point at the problem."""

    def __init__(self, msg: str, line: int, col: int):
        super().__init__(f"{line}:{col}: {msg}")
        self.msg = msg
        self.line = line
        self.col = col

    def __reduce__(self):
        return (ParseError, (self.msg, self.line, self.col))


# ---------------------------------------------------------------------------
# tokens
_TOKEN_RE = re.compile(r"(?P<ws>\s+)|(?P<comment>;[^\n]*)|(?P<tok>[()=])|(?P<atom>[^\s();=]+)")
_INT_RE = re.compile(r"[-+]?[0-9]+")
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?inf|nan")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BIND_RE = re.compile(r"%[A-Za-z0-9_.]+")


@dataclass(slots=True)
class _Tok:
    kind: str  # "(", ")", "=", "atom", "eof"
    text: str
    pos: int

    def show(self) -> str:
        return "end of input" if self.kind == "eof" else repr(self.text)


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "tok":
            out.append(_Tok(m.group(), m.group(), m.start()))
        elif kind == "atom":
            out.append(_Tok("atom", m.group(), m.start()))
    out.append(_Tok("eof", "", len(text)))
    return out


# ---------------------------------------------------------------------------
# op table: text name -> (IR op, category)
_BINARY: dict[str, tuple[Ops, str]] = {
    "add": (Ops.ADD, "value"), "mul": (Ops.MUL, "value"), "max": (Ops.MAX, "value"),
    "min": (Ops.MIN, "value"), "sub": (Ops.SUB, "num"), "pow": (Ops.POW, "num"),
    "idiv": (Ops.IDIV, "int"), "mod": (Ops.MOD, "int"), "floordiv": (Ops.FLOORDIV, "int"),
    "floormod": (Ops.FLOORMOD, "int"), "shl": (Ops.SHL, "int"),
    "shr": (Ops.SHR, "int"), "fdiv": (Ops.FDIV, "float"), "and": (Ops.AND, "intbool"),
    "or": (Ops.OR, "intbool"), "xor": (Ops.XOR, "intbool"),
}
_COMPARE: dict[str, Ops] = {"lt": Ops.LT, "le": Ops.LE, "gt": Ops.GT, "ge": Ops.GE,
                            "eq": Ops.EQ, "ne": Ops.NE}
_UNARY: dict[str, tuple[Ops, str]] = {
    "neg": (Ops.NEG, "num"), "recip": (Ops.RECIP, "float"), "sqrt": (Ops.SQRT, "float"),
    "exp2": (Ops.EXP2, "float"), "log2": (Ops.LOG2, "float"), "sin": (Ops.SIN, "float"),
    "trunc": (Ops.TRUNC, "num"), "floor": (Ops.FLOOR, "num"), "ceil": (Ops.CEIL, "num"),
    "round": (Ops.ROUND, "num"), "not": (Ops.NOT, "intbool"),
}
_REDUCE_OPS = {"add": Ops.ADD, "mul": Ops.MUL, "max": Ops.MAX, "min": Ops.MIN}
_STRUCT = {"where": Ops.WHERE, "mulacc": Ops.MULACC, "cast": Ops.CAST,
           "bitcast": Ops.BITCAST, "vectorize": Ops.VECTORIZE, "gep": Ops.GEP,
           "cat": Ops.CAT, "index": Ops.INDEX, "load": Ops.LOAD, "store": Ops.STORE,
           "end": Ops.END, "reduce": Ops.REDUCE, "after": Ops.AFTER, "sink": Ops.SINK,
           "const": Ops.CONST, "vconst": Ops.VCONST, "var": Ops.DEFINE_VAR,
           "range": Ops.RANGE, "special": Ops.SPECIAL, "buffer": Ops.DEFINE_GLOBAL,
           "invalid": Ops.INVALID}
_ALL_OPS = frozenset(_BINARY) | frozenset(_COMPARE) | frozenset(_UNARY) | frozenset(_STRUCT)

# IR op -> text name (the printer's table)
_OP_NAME: dict[Ops, str] = {op: name for name, (op, _) in {**_BINARY, **_UNARY}.items()}
_OP_NAME.update({op: name for name, op in _COMPARE.items()})
_OP_NAME.update({op: name for name, op in _STRUCT.items()})
_REDUCE_NAME = {op: name for name, op in _REDUCE_OPS.items()}


def has_text_form(op: Ops) -> bool:
    """Whether the text format can write a node of ``op`` (``NOOP``, ``MULHI``, ... it
    cannot; a node of such an op may still have an argument it cannot write)."""
    return op in _OP_NAME

_CATEGORY_DESC = {
    "value": "numbers or bools", "num": "numbers", "int": "integers", "float": "floats",
    "intbool": "integers or bools",
}


def _category_ok(cat: str, dt: DType) -> bool:
    if dt.ptr or dt.is_void:
        return False
    if cat == "value":
        return True
    if cat == "num":
        return dt.is_int or dt.is_float
    if cat == "int":
        return dt.is_int
    if cat == "float":
        return dt.is_float
    return dt.is_int or dt.is_bool  # intbool


# ---------------------------------------------------------------------------
# the parser
@dataclass(slots=True)
class _Node:
    """A finished sub-expression inside a frame: the node and where it started."""

    uop: UOp
    tok: _Tok


@dataclass(slots=True)
class _Frame:
    open: _Tok  # the "("
    op: _Tok  # the op name
    items: list[_Node | _Tok] = field(default_factory=list)


@dataclass(slots=True)
class _Operand:
    """An operand while its dtype is decided: a node, or a bare literal still untyped."""

    tok: _Tok
    uop: UOp | None = None
    lit: str = ""  # "int" or "float" for a bare literal
    value: Any = None


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.lines = [m.end() for m in re.finditer("\n", text)]
        self.env: dict[str, tuple[UOp, _Tok]] = {}

    # ---- errors -------------------------------------------------------------
    def where(self, pos: int) -> tuple[int, int]:
        line = bisect_right(self.lines, pos)
        start = self.lines[line - 1] if line else 0
        return line + 1, pos - start + 1

    def error(self, tok: _Tok | _Node, msg: str) -> ParseError:
        if isinstance(tok, _Node):
            tok = tok.tok
        return ParseError(msg, *self.where(tok.pos))

    # ---- file level -----------------------------------------------------------
    def parse_file(self) -> UOp:
        toks, i, root = self.toks, 0, None
        last_binding: _Tok | None = None
        while True:
            tok = toks[i]
            if tok.kind == "eof":
                if root is not None:
                    return root
                if last_binding is not None:
                    raise self.error(tok, "expected a root expression after the last binding, "
                                          "got end of input")
                raise self.error(tok, "empty input: expected an expression")
            if root is not None:
                raise self.error(tok, f"unexpected {tok.show()} after the root expression (a "
                                      "file is bindings then exactly one root expression)")
            if tok.kind == "atom" and tok.text.startswith("%") and toks[i + 1].kind == "=":
                if not _BIND_RE.fullmatch(tok.text):
                    raise self.error(tok, f"bad binding name {tok.text!r}: expected % then "
                                          "letters, digits, '_' or '.'")
                if tok.text in self.env:
                    line, col = self.where(self.env[tok.text][1].pos)
                    raise self.error(tok, f"{tok.text} is already bound (at {line}:{col})")
                node, i = self.parse_expr(i + 2)
                self.env[tok.text] = (node, tok)
                last_binding = tok
            else:
                root, i = self.parse_expr(i)

    def parse_expr(self, i: int) -> tuple[UOp, int]:
        """One expression starting at token ``i``; iterative (no recursion)."""
        toks = self.toks
        tok = toks[i]
        if tok.kind == "atom":
            return self.materialize(self.operand(tok), None), i + 1
        if tok.kind != "(":
            raise self.error(tok, f"expected an expression, got {tok.show()}")
        stack: list[_Frame] = []
        while True:
            tok = toks[i]
            if tok.kind == "(":
                op = toks[i + 1]
                if op.kind != "atom" or op.text.startswith("%") or _INT_RE.fullmatch(op.text):
                    raise self.error(op, f"expected an op name after '(', got {op.show()}")
                if op.text not in _ALL_OPS:
                    raise self.error(op, f"unknown op {op.text!r}")
                stack.append(_Frame(tok, op))
                i += 2
            elif tok.kind == ")":
                if not stack:
                    raise self.error(tok, "unexpected ')' with no matching '('")
                frame = stack.pop()
                node = self.build(frame, tok)
                i += 1
                if not stack:
                    return node, i
                stack[-1].items.append(_Node(node, frame.open))
            elif tok.kind == "atom":
                stack[-1].items.append(tok)
                i += 1
            elif tok.kind == "=":
                raise self.error(tok, "unexpected '=' inside an expression (bindings "
                                      "'%name = EXPR' stand at the top level)")
            else:  # eof
                f = stack[-1]
                line, col = self.where(f.open.pos)
                raise self.error(tok, f"expected ')' to close '({f.op.text}' opened at "
                                      f"{line}:{col}, got end of input")

    # ---- operands -------------------------------------------------------------
    def operand(self, item: _Node | _Tok) -> _Operand:
        if isinstance(item, _Node):
            return _Operand(item.tok, item.uop)
        tok, t = item, item.text
        if t.startswith("%"):
            if t not in self.env:
                if not _BIND_RE.fullmatch(t):
                    raise self.error(tok, f"bad binding name {t!r}")
                raise self.error(tok, f"unbound name {t} (bind it first: {t} = EXPR)")
            return _Operand(tok, self.env[t][0])
        if t in ("true", "false"):
            return _Operand(tok, UOp.const(dtypes.bool, t == "true"))
        if _INT_RE.fullmatch(t):
            return _Operand(tok, None, "int", self.int_of(tok))
        if _FLOAT_RE.fullmatch(t):
            return _Operand(tok, None, "float", float(t))
        hint = f" (an op is written in parentheses: ({t} ...))" if t in _ALL_OPS else ""
        raise self.error(tok, f"expected an expression, got {t!r}{hint}")

    def const_of(self, tok: _Tok, dt: DType, kind: str, value: Any) -> UOp:
        """A constant of ``dt`` from a literal, with range/overflow checks."""
        s = dt.scalar()
        if dt.ptr or s.is_void:
            raise self.error(tok, f"a literal cannot stand for a {dt} here "
                                  "(pointers and void have no constants)")
        if s.is_bool:
            if kind != "bool":
                raise self.error(tok, f"expected true or false for dtype {dt}, got {tok.text!r}")
            return UOp.const(dt, value)
        if kind == "bool":
            raise self.error(tok, f"expected a number of dtype {dt}, got {tok.text!r}")
        if s.is_int:
            if kind != "int":
                raise self.error(tok, f"expected an integer of dtype {dt}, got {tok.text!r}")
            if s.is_fixed_int and not s.min <= value <= s.max:
                raise self.error(tok, f"constant {value} does not fit {s} "
                                      f"({s.min}..{s.max})")
            return UOp.const(dt, value)
        # float dtypes
        try:
            fv = float(value)
        except OverflowError:
            raise self.error(tok, f"constant {tok.text} does not fit {s}") from None
        import numpy

        with numpy.errstate(over="ignore"):
            node = UOp.const(dt, fv)
        if math.isinf(node.arg) and not math.isinf(fv) or math.isinf(fv) and not (
                tok.text.lstrip("+-") == "inf"):
            raise self.error(tok, f"constant {tok.text} does not fit {s} (it overflows to inf)")
        return node

    def materialize(self, o: _Operand, dt: DType | None) -> UOp:
        """The node of an operand; a bare literal takes ``dt`` (its default if None)."""
        if o.uop is not None:
            return o.uop
        if o.lit == "int":
            return self.const_of(o.tok, dt if dt is not None else dtypes.index, "int", o.value)
        target = dt if dt is not None and dt.is_float else dtypes.f32
        return self.const_of(o.tok, target, "float", o.value)

    def unify(self, f: _Frame, ops: list[_Operand], *, scalar: bool = False,
              base: DType | None = None, first: int = 0) -> tuple[list[UOp], DType]:
        """Give operands one dtype (bare literals take it); mismatches are errors.

        ``scalar``: compare element dtypes only (``cat``); ``base``: the dtype
        every operand must have (``load``'s ALT, ``store``'s VALUE); ``first``:
        the position of ``ops[0]`` among the op's operands (for messages).
        """
        def key(d: DType) -> DType:
            return d.scalar() if scalar and not d.ptr else d

        ref: tuple[DType, int] | None = (base, -1) if base is not None else None
        for n, o in enumerate(ops):
            if o.uop is None:
                continue
            if ref is None:
                ref = (key(o.uop.dtype), n + first)
            elif key(o.uop.dtype) is not ref[0]:
                raise self.error(o.tok, self.mismatch(f, n + first, o.uop.dtype, ref))
        if ref is None:
            dt = dtypes.f32 if any(o.lit == "float" for o in ops) else dtypes.index
        else:
            dt = ref[0]
        out = []
        for n, o in enumerate(ops):
            u = self.materialize(o, dt)
            if key(u.dtype) is not dt:
                ref_pos = -1 if ref is None else ref[1]
                raise self.error(o.tok, self.mismatch(f, n + first, u.dtype, (dt, ref_pos)))
            out.append(u)
        return out, dt

    @staticmethod
    def mismatch(f: _Frame, n: int, got: DType, ref: tuple[DType, int]) -> str:
        want = (f"{ref[0]} like operand {ref[1] + 1}" if ref[1] >= 0 else str(ref[0]))
        return f"{f.op.text}: operand {n + 1} has dtype {got}, expected {want}"

    # ---- atoms of special positions --------------------------------------------
    def atom(self, f: _Frame, item: _Node | _Tok, what: str) -> _Tok:
        if isinstance(item, _Node):
            raise self.error(item, f"{f.op.text}: expected {what}, got an expression")
        return item

    def int_atom(self, f: _Frame, item: _Node | _Tok, what: str) -> int:
        tok = self.atom(f, item, what)
        if not _INT_RE.fullmatch(tok.text):
            raise self.error(tok, f"{f.op.text}: expected {what}, got {tok.text!r}")
        return self.int_of(tok)

    def int_of(self, tok: _Tok) -> int:
        """The integer a token spells (``_INT_RE``); a parse error at the token when
        Python refuses to read it (more digits than ``sys.get_int_max_str_digits()``)."""
        try:
            return int(tok.text)
        except ValueError:
            raise self.error(tok, f"an integer of {len(tok.text.lstrip('+-'))} digits: "
                                  "too long to read") from None

    def dtype_atom(self, f: _Frame, item: _Node | _Tok, *, scalar: bool = False,
                   ptr: bool = False) -> DType:
        tok = self.atom(f, item, "a dtype")
        try:
            dt = dtypes.parse(tok.text)
        except DTypeError:
            raise self.error(tok, f"unknown dtype {tok.text!r} (expected index bool i8 i16 i32 "
                                  "i64 u8 u16 u32 u64 f16 bf16 f32 f64, a vector like f32x4 "
                                  "or a pointer like f32*)") from None
        if dt.is_void:
            raise self.error(tok, f"{f.op.text}: dtype void is not allowed here")
        if dt.ptr and not ptr:
            raise self.error(tok, f"{f.op.text}: expected a value dtype, got pointer {dt}")
        if scalar and dt.count != 1:
            raise self.error(tok, f"{f.op.text}: expected a scalar dtype, got {dt}")
        return dt

    def name_atom(self, f: _Frame, item: _Node | _Tok) -> str:
        tok = self.atom(f, item, "a name")
        if not _NAME_RE.fullmatch(tok.text):
            raise self.error(tok, f"{f.op.text}: expected a name (a letter or '_', then "
                                  f"letters, digits, '_' or '.'), got {tok.text!r}")
        return tok.text

    def arity(self, f: _Frame, close: _Tok, lo: int, hi: int | None) -> None:
        n = len(f.items)
        if lo <= n and (hi is None or n <= hi):
            return
        want = (str(lo) if lo == hi else f"{lo} or {hi}" if hi == lo + 1 else
                f"at least {lo}" if hi is None else f"{lo} to {hi}")
        s = "" if want == "1" else "s"
        msg = f"{f.op.text} takes {want} operand{s}, got {n}"
        raise self.error(f.items[hi] if hi is not None and n > hi else close, msg)

    def need(self, cond: bool, o: _Operand | _Node | _Tok, msg: str) -> None:
        if not cond:
            raise self.error(o.tok if isinstance(o, _Operand) else o, msg)

    # ---- node building ------------------------------------------------------------
    def build(self, f: _Frame, close: _Tok) -> UOp:
        name = f.op.text
        try:
            if name in _BINARY or name in _COMPARE:
                return self.build_alu(f, close, 2)
            if name in _UNARY:
                return self.build_alu(f, close, 1)
            return _BUILDERS[name](self, f, close)
        except ParseError:
            raise
        except Exception as e:  # an IR construction error: report it at the op
            raise self.error(f.open, f"cannot build ({name} ...): {e}") from None

    def build_alu(self, f: _Frame, close: _Tok, n: int) -> UOp:
        name = f.op.text
        self.arity(f, close, n, n)
        ops = [self.operand(x) for x in f.items]
        srcs, dt = self.unify(f, ops)
        if name in _COMPARE:
            self.need(not dt.ptr and not dt.is_void, ops[0], f"{name}: cannot compare {dt}")
            return UOp(_COMPARE[name], dtypes.bool.vec(dt.count), tuple(srcs))
        op, cat = _BINARY[name] if name in _BINARY else _UNARY[name]
        self.need(_category_ok(cat, dt), ops[0],
                  f"{name} needs {_CATEGORY_DESC[cat]}, got dtype {dt}")
        return UOp(op, dt, tuple(srcs))

    def b_mulacc(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 3, 3)
        ops = [self.operand(x) for x in f.items]
        srcs, dt = self.unify(f, ops)
        self.need(_category_ok("num", dt), ops[0], f"mulacc needs numbers, got dtype {dt}")
        return UOp(Ops.MULACC, dt, tuple(srcs))

    def b_where(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 3, 3)
        c_op = self.operand(f.items[0])
        cond = self.materialize(c_op, None)
        (t, e), dt = self.unify(f, [self.operand(x) for x in f.items[1:]], first=1)
        self.need(cond.dtype.is_bool, c_op, f"where: the condition must be bool, got {cond.dtype}")
        self.need(cond.dtype.count in (1, dt.count) and not dt.is_void, c_op,
                  f"where: condition {cond.dtype} does not match branches of dtype {dt}")
        return UOp(Ops.WHERE, dt, (cond, t, e))

    def b_cast(self, f: _Frame, close: _Tok) -> UOp:
        name = f.op.text
        self.arity(f, close, 2, 2)
        dt = self.dtype_atom(f, f.items[0])
        o = self.operand(f.items[1])
        x = self.materialize(o, None)
        self.need(not x.dtype.is_void and not x.dtype.ptr, o, f"{name}: cannot convert {x.dtype}")
        self.need(x.dtype.count == dt.count or (x.op is Ops.INVALID and name == "cast"), o,
                  f"{name}: cannot change the vector width ({x.dtype} to {dt})")
        # ((cast T (invalid)) is the Invalid of T: of a vector T, every lane is Invalid)
        if name == "bitcast":
            self.need(not dt.is_index and not x.dtype.is_index, o,
                      "bitcast: index has no fixed bit size")
            self.need(dt.bits == x.dtype.bits, o,
                      f"bitcast: {x.dtype} and {dt} differ in size")
            return UOp(Ops.BITCAST, dt, (x,))
        return UOp(Ops.CAST, dt, (x,))

    def b_vectorize(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 1, None)
        ops = [self.operand(x) for x in f.items]
        srcs, dt = self.unify(f, ops)
        self.need(dt.count == 1 and not dt.ptr, ops[0],
                  f"vectorize: elements must be scalars, got {dt}")
        return UOp(Ops.VECTORIZE, dt.vec(len(srcs)), tuple(srcs))

    def b_cat(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 1, None)
        ops = [self.operand(x) for x in f.items]
        srcs, dt = self.unify(f, ops, scalar=True)
        self.need(not dt.ptr, ops[0], f"cat: cannot concatenate {dt}")
        return UOp(Ops.CAT, dt.vec(sum(s.dtype.count for s in srcs)), tuple(srcs))

    def b_gep(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, None)
        o = self.operand(f.items[0])
        x = self.materialize(o, None)
        self.need(not x.dtype.ptr and not x.dtype.is_void, o, f"gep: cannot index {x.dtype}")
        lanes = []
        for item in f.items[1:]:
            v = self.int_atom(f, item, "a lane number")
            self.need(0 <= v < x.dtype.count, item,
                      f"gep: lane {v} out of range for {x.dtype} (0..{x.dtype.count - 1})")
            lanes.append(v)
        return UOp(Ops.GEP, x.dtype.scalar().vec(len(lanes)), (x,), tuple(lanes))

    def b_index(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, 3)
        ops = [self.operand(x) for x in f.items]
        buf = self.materialize(ops[0], None)
        self.need(buf.dtype.ptr, ops[0], f"index: expected a buffer (pointer), got {buf.dtype}")
        idx = self.materialize(ops[1], None)
        self.need(idx.dtype.is_int, ops[1], f"index: the index must be an integer, got {idx.dtype}")
        srcs = [buf, idx]
        if len(ops) == 3:
            gate = self.materialize(ops[2], None)
            self.need(gate.dtype is dtypes.bool, ops[2],
                      f"index: the gate must be bool, got {gate.dtype}")
            srcs.append(gate)
        return UOp(Ops.INDEX, buf.dtype, tuple(srcs))

    def pointer(self, f: _Frame) -> tuple[UOp, DType]:
        o = self.operand(f.items[0])
        p = self.materialize(o, None)
        self.need(p.dtype.ptr, o, f"{f.op.text}: expected an address (index or buffer), "
                                  f"got {p.dtype}")
        return p, p.dtype.base()

    def b_load(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 1, 2)
        p, elem = self.pointer(f)
        if len(f.items) == 1:
            return UOp(Ops.LOAD, elem, (p,))
        (alt,), _ = self.unify(f, [self.operand(f.items[1])], base=elem, first=1)
        return UOp(Ops.LOAD, elem, (p, alt))

    def b_store(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, 2)
        p, elem = self.pointer(f)
        (v,), _ = self.unify(f, [self.operand(f.items[1])], base=elem, first=1)
        return UOp(Ops.STORE, dtypes.void, (p, v))

    def ranges(self, f: _Frame, items: list[_Node | _Tok]) -> list[UOp]:
        out = []
        for item in items:
            o = self.operand(item)
            r = self.materialize(o, None)
            self.need(r.op is Ops.RANGE, o, f"{f.op.text}: expected a (range ...), got "
                                            f"{_OP_NAME.get(r.op, r.op.name)}")
            out.append(r)
        return out

    def b_end(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 1, None)
        x = self.materialize(self.operand(f.items[0]), None)
        return UOp(Ops.END, dtypes.void, (x, *self.ranges(f, f.items[1:])))

    def b_reduce(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, None)
        tok = self.atom(f, f.items[0], "a reduce op (add mul max min)")
        self.need(tok.text in _REDUCE_OPS, tok,
                  f"reduce: expected add, mul, max or min, got {tok.text!r}")
        o = self.operand(f.items[1])
        x = self.materialize(o, None)
        self.need(not x.dtype.ptr and not x.dtype.is_void, o, f"reduce: cannot reduce {x.dtype}")
        return UOp(Ops.REDUCE, x.dtype, (x, *self.ranges(f, f.items[2:])),
                   _REDUCE_OPS[tok.text])

    def b_after(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 1, None)
        srcs = [self.materialize(self.operand(x), None) for x in f.items]
        return UOp(Ops.AFTER, srcs[0].dtype, tuple(srcs))

    def b_sink(self, f: _Frame, close: _Tok) -> UOp:
        srcs = [self.materialize(self.operand(x), None) for x in f.items]
        return UOp(Ops.SINK, dtypes.void, tuple(srcs))

    def b_const(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, 2)
        dt = self.dtype_atom(f, f.items[0])
        return self.literal_const(f, f.items[1], dt)

    def literal_const(self, f: _Frame, item: _Node | _Tok, dt: DType) -> UOp:
        tok = self.atom(f, item, "a literal value")
        t = tok.text
        if t in ("true", "false"):
            return self.const_of(tok, dt, "bool", t == "true")
        if _INT_RE.fullmatch(t):
            return self.const_of(tok, dt, "int", self.int_of(tok))
        if _FLOAT_RE.fullmatch(t):
            return self.const_of(tok, dt, "float", float(t))
        raise self.error(tok, f"{f.op.text}: expected a literal value, got {t!r}")

    def b_vconst(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, None)
        dt = self.dtype_atom(f, f.items[0], scalar=True)
        vals = tuple(self.literal_const(f, item, dt).arg for item in f.items[1:])
        return UOp(Ops.VCONST, dt.vec(len(vals)), (), vals)

    def b_var(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 3, 3)
        name = self.name_atom(f, f.items[0])
        lo = self.int_atom(f, f.items[1], "an integer lower bound")
        hi = self.int_atom(f, f.items[2], "an integer upper bound")
        self.need(lo <= hi, f.items[1], f"var {name}: bad bounds, lower bound {lo} > "
                                        f"upper bound {hi}")
        return UOp.var(name, lo, hi)

    def end_operand(self, f: _Frame, item: _Node | _Tok) -> UOp:
        """A range's or special's END: a scalar integer (0 or less, for some or every
        value, is a loop of no iteration, as C's ``for`` runs it)."""
        o = self.operand(item)
        end = self.materialize(o, None)
        self.need(end.dtype.is_int and end.dtype.count == 1, o,
                  f"{f.op.text}: END must be a scalar integer, got {end.dtype}")
        return end

    def b_range(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, 3)
        rid = self.int_atom(f, f.items[0], "an integer range ID")
        kind = "loop"
        if len(f.items) == 3:
            kind = self.name_atom(f, f.items[2])
            self.need(kind in RANGE_KINDS, f.items[2], f"range {rid}: unknown kind {kind!r} "
                      f"(one of {', '.join(RANGE_KINDS)})")
        return UOp.range(self.end_operand(f, f.items[1]), rid, kind)

    def b_special(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 2, 2)
        name = self.name_atom(f, f.items[0])
        return UOp.special(name, self.end_operand(f, f.items[1]))

    def b_buffer(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 3, 3)
        slot = self.int_atom(f, f.items[0], "a slot number")
        self.need(slot >= 0, f.items[0], f"buffer: slot must be >= 0, got {slot}")
        dt = self.dtype_atom(f, f.items[1])
        size = self.int_atom(f, f.items[2], "a size")
        self.need(size >= 0, f.items[2], f"buffer: size must be >= 0, got {size}")
        return UOp.buffer(slot, dt, size)

    def b_invalid(self, f: _Frame, close: _Tok) -> UOp:
        self.arity(f, close, 0, 0)
        return UOp.invalid()


_BUILDERS: dict[str, Callable[[_Parser, _Frame, _Tok], UOp]] = {
    "where": _Parser.b_where, "mulacc": _Parser.b_mulacc, "cast": _Parser.b_cast,
    "bitcast": _Parser.b_cast, "vectorize": _Parser.b_vectorize, "gep": _Parser.b_gep,
    "cat": _Parser.b_cat, "index": _Parser.b_index, "load": _Parser.b_load,
    "store": _Parser.b_store, "end": _Parser.b_end, "reduce": _Parser.b_reduce,
    "after": _Parser.b_after, "sink": _Parser.b_sink, "const": _Parser.b_const,
    "vconst": _Parser.b_vconst, "var": _Parser.b_var, "range": _Parser.b_range,
    "special": _Parser.b_special, "buffer": _Parser.b_buffer, "invalid": _Parser.b_invalid,
}


def parse(text: str) -> UOp:
    """Parse ``.uop`` text into its (hash-consed) root UOp.

    Raises :class:`ParseError` (with ``line``/``col``) for malformed text;
    nothing is half-parsed.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse expects str, got {type(text).__name__}")
    return _Parser(text).parse_file()


# ---------------------------------------------------------------------------
# the printer
_INLINE = frozenset({Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL,
                     Ops.DEFINE_GLOBAL, Ops.INVALID})


def _fmt_value(dt: DType, v: Any) -> str:
    """A literal of the scalar of ``dt`` that parses back to exactly ``v``."""
    s = dt.scalar()
    if s.is_bool:
        return "true" if v else "false"
    if s.is_float:
        fv = float(v)
        if math.isnan(fv):
            return "nan"
        return repr(fv)  # 'inf', '-inf', '-0.0', shortest round-trip decimal
    if isinstance(v, bool) or not (isinstance(v, int) or _numpy_integer(v)):
        raise ValueError(f"to_sexpr: constant {v!r} is not an integer of dtype {dt}")
    return str(int(v))


def _numpy_integer(v: Any) -> bool:
    """Whether ``v`` is a numpy integer (none exists before numpy is imported: a
    process that never needs numpy does not import it to ask)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, np.integer)


def _fmt_const(dt: DType, v: Any) -> str:
    if dt.ptr or dt.is_void:
        raise ValueError(f"to_sexpr: cannot write a constant of dtype {dt}")
    if dt.count == 1 and (dt.is_index or dt.is_bool or dt is dtypes.f32):
        return _fmt_value(dt, v)
    return f"(const {dt} {_fmt_value(dt, v)})"


def _check_name(op: Ops, name: Any) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(f"to_sexpr: {op.name} name {name!r} cannot be written in the text "
                         "format (a letter or '_', then letters, digits, '_' or '.')")
    return name


def _head_tail(op: Ops, dt: DType, arg: Any) -> tuple[str, str]:
    """(head, tail) of one node of op ``op``, dtype ``dt`` and arg ``arg``: the text
    is ``head child child tail`` (a leaf's tail is empty and it has no children)."""
    if op is Ops.CONST:
        return _fmt_const(dt, arg), ""
    if op is Ops.VCONST:
        vals = " ".join(_fmt_value(dt, v) for v in arg)
        return f"(vconst {dt.scalar()} {vals})", ""
    if op is Ops.DEFINE_VAR:
        name, lo, hi = arg
        return f"(var {_check_name(op, name)} {int(lo)} {int(hi)})", ""
    if op is Ops.DEFINE_GLOBAL:
        slot, size = arg
        return f"(buffer {int(slot)} {dt.base()} {int(size)})", ""
    if op is Ops.INVALID:
        if dt is not dtypes.index:
            raise ValueError(f"to_sexpr: (invalid) is an index, got INVALID of dtype {dt}")
        return "(invalid)", ""
    if op is Ops.RANGE:
        if isinstance(arg, tuple):
            rid, kind = arg
            if kind not in RANGE_KINDS or kind == "loop":
                raise ValueError(f"to_sexpr: range {rid} has an unknown kind {kind!r}")
            return f"(range {int(rid)}", f" {kind})"
        return f"(range {int(arg)}", ")"
    if op is Ops.SPECIAL:
        return f"(special {_check_name(op, arg)}", ")"
    if op in (Ops.CAST, Ops.BITCAST):
        return f"({_OP_NAME[op]} {dt}", ")"
    if op is Ops.GEP:
        return "(gep", "".join(f" {int(i)}" for i in arg) + ")"
    if op is Ops.REDUCE:
        if arg not in _REDUCE_NAME:
            raise ValueError(f"to_sexpr: REDUCE with op {arg!r} has no text form")
        return f"(reduce {_REDUCE_NAME[arg]}", ")"
    name = _OP_NAME.get(op)
    if name is None:
        raise ValueError(f"to_sexpr: op {op.name} has no text form in the .uop format")
    return f"({name}", ")"


def _parts(u: UOp) -> tuple[str, tuple[UOp, ...], str]:
    """(head, expression children, tail) of one node: ``head child child tail``."""
    head, tail = _head_tail(u.op, u.dtype, u.arg)
    return head, (u.src if tail else ()), tail


def node_label(op: Ops, dtype: DType, arg: Any) -> str:
    """One node's own part of its text, without its children: ``add``, ``range 3``,
    ``var x 0 9``, ``8``, ``cast i32``, ``gep 0 1`` (pictures label nodes with it).
    An op without a text form gets its IR name (``mulhi``)."""
    try:
        head, tail = _head_tail(op, dtype, arg)
    except (ValueError, TypeError):
        return op.name.lower() if arg is None else f"{op.name.lower()} {arg}"
    text = head + tail
    return text[1:-1] if text.startswith("(") else text


def to_sexpr(uop: UOp, compact: bool = False) -> str:
    """Print ``uop`` in the ``.uop`` text format (``parse`` reads it back to ``uop``).

    Shared non-leaf nodes are bound once as ``%0``, ``%1``, ...; ``compact``
    puts the bindings and the root on one line. Raises ``ValueError`` for ops
    or arguments the text format cannot express.
    """
    if not isinstance(uop, UOp):
        raise TypeError(f"to_sexpr expects a UOp, got {type(uop).__name__}")
    topo = uop.toposort()
    # how often each node would be written if nothing were bound; bind a shared non-leaf
    occ: dict[int, int] = {id(uop): 1}
    names: dict[int, str] = {}
    for u in reversed(topo):  # parents before children
        n = occ.get(id(u), 0)
        if u is not uop and u.op not in _INLINE and n >= 2:
            n = 1
            names[id(u)] = ""
        for s in u.src:
            occ[id(s)] = occ.get(id(s), 0) + n
    lines: list[str] = []
    for u in topo:
        if id(u) in names:
            names[id(u)] = f"%{len(lines)}"
            lines.append(f"{names[id(u)]} = {_render(u, names)}")
    lines.append(_render(uop, names))
    return (" " if compact else "\n").join(lines)


def _render(top: UOp, names: dict[int, str]) -> str:
    out: list[str] = []
    stack: list[UOp | str] = [top]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if item is not top and id(item) in names:
            out.append(names[id(item)])
            continue
        head, src, tail = _parts(item)
        out.append(head)
        if tail:
            stack.append(tail)
        for s in reversed(src):
            stack.append(s)
            stack.append(" ")
    return "".join(out)
