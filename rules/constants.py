"""Constant folding: scalar and vector constants, dtype-aware (docs/rules.md, seed 000 §1).

``op(CONST a, CONST b) -> CONST(eval(op, a, b))`` in the dtype's arithmetic, written
once a rule in the rule language: ``c1 + c2 -> c1 + c2``, whose right side is computed
when the rule fires (an operation of constants: :mod:`rules.lang`):
fixed-width integers wrap, floats round to their precision, ``index`` is
exact. A value C leaves undefined (division or modulo by zero, ``INT_MIN //
-1``, a shift by a negative amount or by the width or more) is never folded.
Comparisons of constants fold in ``comparison_dsl_patterns`` (rules/compare.py),
casts of constants in ``cast_dsl_patterns`` (rules/casts.py).

Groups: ``constant_folding_dsl_patterns`` (scalar CONST operands),
``vconst_folding_patterns`` (at least one VCONST operand; VECTORIZE of
constants). The bounds fold ``vmin == vmax -> CONST`` is in
``where_bound_patterns`` (rules/where.py), after the identity rules.
"""

from __future__ import annotations

from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import eval_values, make_const
from rules.computed import PyRule
from rules.lang import FOLD, baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS", "fold_constants", "UNARY_FOLD", "BINARY_FOLD",
           "VCONST_BINARY_FOLD"]

# seed 000 §1: 7 unary (+ NOT, FLOOR, CEIL of this IR), 13 binary (+ MIN), 2 ternary
UNARY_FOLD = (Ops.NEG, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.RECIP, Ops.TRUNC,
              Ops.NOT, Ops.FLOOR, Ops.CEIL)
BINARY_FOLD = (Ops.ADD, Ops.MUL, Ops.SUB, Ops.MOD, Ops.MAX, Ops.POW, Ops.IDIV, Ops.FDIV,
               Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.MIN, Ops.FLOORDIV, Ops.FLOORMOD)
TERNARY_FOLD = (Ops.WHERE, Ops.MULACC)
# vector folding covers the binary ops except POW and FDIV (seed 000 §1: 11 binary, all unary)
VCONST_BINARY_FOLD = tuple(o for o in BINARY_FOLD if o not in (Ops.POW, Ops.FDIV))

#: each op's form in the rule language, over the constants c1, c2, c3
_FORM = {Ops.NEG: "-c1", Ops.SQRT: "sqrt(c1)", Ops.EXP2: "exp2(c1)", Ops.LOG2: "log2(c1)",
         Ops.SIN: "sin(c1)", Ops.RECIP: "recip(c1)", Ops.TRUNC: "trunc(c1)", Ops.NOT: "~c1",
         Ops.FLOOR: "floor(c1)", Ops.CEIL: "ceil(c1)", Ops.ADD: "c1 + c2", Ops.MUL: "c1 * c2",
         Ops.SUB: "c1 - c2", Ops.MOD: "c1 % c2", Ops.MAX: "max(c1, c2)", Ops.POW: "c1 ** c2",
         Ops.IDIV: "c1 // c2", Ops.FDIV: "c1 / c2", Ops.AND: "c1 & c2", Ops.OR: "c1 | c2",
         Ops.XOR: "c1 ^ c2", Ops.SHL: "c1 << c2", Ops.SHR: "c1 >> c2", Ops.MIN: "min(c1, c2)",
         Ops.FLOORDIV: "floordiv(c1, c2)", Ops.FLOORMOD: "floormod(c1, c2)",
         Ops.WHERE: "where(c1, c2, c3)", Ops.MULACC: "mulacc(c1, c2, c3)"}


def _operand_dtype(u: UOp) -> DType:
    return u.src[1].dtype if u.op is Ops.WHERE else u.src[0].dtype


def fold_constants(u: UOp) -> UOp | None:
    """The constant ``u`` evaluates to (its sources all constants), or None if undefined."""
    v = eval_values(u.op, _operand_dtype(u), u.src)
    return None if v is None else make_const(u.dtype, v)


def _vectorize_consts(v: UOp) -> UOp:
    vals = tuple(s.arg for s in v.src)
    return UOp.vconst(v.dtype.scalar(), vals)


_GROUP = "constant_folding_dsl_patterns"
_VGROUP = "vconst_folding_patterns"
_NOTE = "in the dtype's arithmetic; undefined (a division by 0, ...) is not folded"


def _fold(prefix: str, op: Ops, group: str, vector: str) -> object:
    return rule(f"{prefix}_{op.name.lower()}", f"{_FORM[op]} -> {_FORM[op]}", group=group,
                vector=vector, native=FOLD, egraph_nonint=True, note=_NOTE)


#: the folds whose fixed-width result may wrap, which the e-graph's interval fold
#: (fold_known) does not see: its interval of a wrapping sum is the dtype's whole range
WRAP_FOLD = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.SHL)
_WRAP = ("a fixed-width result that wraps is outside its operands' interval sum, and "
         "egglog's i64 arithmetic does not wrap: matched from Python on fixed-width "
         "e-nodes of constants")


def _fold_wrap(op: Ops) -> object:
    return rule(f"const_fold_wrap_{op.name.lower()}", f"{_FORM[op]} -> {_FORM[op]}",
                "is_fixed(c1)", group=_GROUP, native=_WRAP, note=_NOTE,
                baseline_reason=f"e-graph only: const_fold_{op.name.lower()} folds every "
                "dtype in the ordered matcher")


LAWS = [
    *(_fold("const_fold", op, _GROUP, "no") for op in UNARY_FOLD + BINARY_FOLD + TERNARY_FOLD),
    *(_fold_wrap(op) for op in WRAP_FOLD),
    *(_fold("vconst_fold", op, _VGROUP, "yes") for op in UNARY_FOLD + VCONST_BINARY_FOLD),
    py(Rule("vectorize_of_consts", "VECTORIZE(CONST a, CONST b, ...) -> VCONST(a, b, ...)",
            UPat(Ops.VECTORIZE, src=UPat(Ops.CONST), name="v"), build=_vectorize_consts,
            guard=lambda v: len(v.src) > 1 and not v.dtype.ptr and v.dtype.count == len(v.src),
            group=_VGROUP),
       "ematch_nonint", "a VECTORIZE has a list of sources (the e-graph's Cons lists), "
       "which the rule language does not write"),
]

GROUPS = baseline_groups(LAWS)
# integer and bool classes: "x -> c when x's interval is [c, c]" (the fold pass, fold_known)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    PyRule("fold_known", "x -> c when x's interval is [c, c] (x never Invalid, no division "
           "by a possible 0)", _GROUP, "fold")])
