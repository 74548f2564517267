"""Constant folding: scalar and vector constants, dtype-aware (docs/rules.md, seed 000 §1).

``op(CONST a, CONST b) -> CONST(eval(op, a, b))`` in the dtype's arithmetic:
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
from rules.common import by_group, eval_values, make_const
from rules.computed import PyRule, bridge
from rules.native import ERule, Q

__all__ = ["GROUPS", "fold_constants", "UNARY_FOLD", "BINARY_FOLD", "VCONST_BINARY_FOLD"]

# seed 000 §1: 7 unary (+ NOT, FLOOR, CEIL of this IR), 13 binary (+ MIN), 2 ternary
UNARY_FOLD = (Ops.NEG, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.RECIP, Ops.TRUNC,
              Ops.NOT, Ops.FLOOR, Ops.CEIL)
BINARY_FOLD = (Ops.ADD, Ops.MUL, Ops.SUB, Ops.MOD, Ops.MAX, Ops.POW, Ops.IDIV, Ops.FDIV,
               Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.MIN)
TERNARY_FOLD = (Ops.WHERE, Ops.MULACC)
# vector folding covers the binary ops except POW and FDIV (seed 000 §1: 11 binary, all unary)
VCONST_BINARY_FOLD = tuple(o for o in BINARY_FOLD if o not in (Ops.POW, Ops.FDIV))

_SYM = {Ops.NEG: "-c", Ops.SQRT: "sqrt(c)", Ops.EXP2: "exp2(c)", Ops.LOG2: "log2(c)",
        Ops.SIN: "sin(c)", Ops.RECIP: "1/c", Ops.TRUNC: "trunc(c)", Ops.NOT: "~c",
        Ops.FLOOR: "floor(c)", Ops.CEIL: "ceil(c)", Ops.ADD: "a+b", Ops.MUL: "a*b",
        Ops.SUB: "a-b", Ops.MOD: "a%b", Ops.MAX: "max(a,b)", Ops.POW: "a**b",
        Ops.IDIV: "a//b", Ops.FDIV: "a/b", Ops.AND: "a&b", Ops.OR: "a|b", Ops.XOR: "a^b",
        Ops.SHL: "a<<b", Ops.SHR: "a>>b", Ops.MIN: "min(a,b)",
        Ops.WHERE: "c ? a : b", Ops.MULACC: "a*b+c"}


def _operand_dtype(u: UOp) -> DType:
    return u.src[1].dtype if u.op is Ops.WHERE else u.src[0].dtype


def fold_constants(u: UOp) -> UOp | None:
    """The constant ``u`` evaluates to (its sources all constants), or None if undefined."""
    v = eval_values(u.op, _operand_dtype(u), u.src)
    return None if v is None else make_const(u.dtype, v)


def _foldable(x: UOp) -> bool:
    return fold_constants(x) is not None


def _any_vconst(x: UOp) -> bool:
    return any(s.op is Ops.VCONST for s in x.src)


def _const_rules(prefix: str, ops: tuple[Ops, ...], arity: int, vec: bool) -> list[Rule]:
    out = []
    src_op = (Ops.CONST, Ops.VCONST) if vec else Ops.CONST
    for op in ops:
        pat = UPat(op, src=tuple(UPat(src_op) for _ in range(arity)), name="x")
        ident = _SYM[op]
        if vec:
            out.append(Rule(f"{prefix}_{op.name.lower()}",
                            f"{ident} on vector constants -> VCONST, lane by lane",
                            pat, build=lambda x: fold_constants(x),
                            guard=lambda x: _any_vconst(x) and _foldable(x)))
        else:
            out.append(Rule(f"{prefix}_{op.name.lower()}",
                            f"{ident} -> CONST(eval) for constants (dtype-aware; undefined kept)",
                            pat, build=lambda x: fold_constants(x), guard=_foldable))
    return out


def _vectorize_consts(v: UOp) -> UOp:
    vals = tuple(s.arg for s in v.src)
    return UOp.vconst(v.dtype.scalar(), vals)


_VECTORIZE_CONST = Rule(
    "vectorize_of_consts", "VECTORIZE(CONST a, CONST b, ...) -> VCONST(a, b, ...)",
    UPat(Ops.VECTORIZE, src=UPat(Ops.CONST), name="v"),
    build=_vectorize_consts,
    guard=lambda v: len(v.src) > 1 and not v.dtype.ptr and v.dtype.count == len(v.src))

_GROUP = "constant_folding_dsl_patterns"
_VGROUP = "vconst_folding_patterns"

constant_folding_dsl_patterns = (
    _const_rules("const_fold", UNARY_FOLD, 1, False)
    + _const_rules("const_fold", BINARY_FOLD, 2, False)
    + _const_rules("const_fold", TERNARY_FOLD, 3, False))
vconst_folding_patterns = (
    _const_rules("vconst_fold", UNARY_FOLD, 1, True)
    + _const_rules("vconst_fold", VCONST_BINARY_FOLD, 2, True)
    + [_VECTORIZE_CONST])

for _r in constant_folding_dsl_patterns:
    _r.group = _GROUP
for _r in vconst_folding_patterns:
    _r.group = _VGROUP

GROUPS: dict[str, list[Rule]] = {
    _GROUP: constant_folding_dsl_patterns,
    _VGROUP: vconst_folding_patterns,
}


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

#: opt-in: "a class whose interval is [c, c] is c" natively, one rule per op
#: (the default is the computed fold_known, one generic rule)
_E_FOLD_KNOWN_NATIVE = "constant_folding_native"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- constant folding: a class whose interval is one value is that value ----
for _e_ctor, _e_ar in (("Add", 2), ("Sub", 2), ("Mul", 2), ("Max", 2), ("Min", 2), ("Neg", 1),
                   ("Not", 1), ("And", 2), ("Or", 2), ("Xor", 2), ("Shl", 2), ("Shr", 2),
                   ("Lt", 2), ("Le", 2), ("Gt", 2), ("Ge", 2), ("Eq", 2), ("Ne", 2),
                   ("Where", 3), ("Cast", 1), ("Mulacc", 3)):
    _e_args = " ".join(f"x{i}" for i in range(_e_ar))
    _eg(Q(f"fold_known_{_e_ctor.lower()}",
          f"{_e_ctor.lower()}(...) -> c when its interval is [c, c]",
          _E_FOLD_KNOWN_NATIVE,
          f"(= e ({_e_ctor} dt {_e_args})) (= v (lo e)) (= v (hi e)) (= m (dmin dt)) (Def e)",
          "(union e (Cst dt v))"))

for _e_ctor in ("Idiv", "Mod"):
    for _e_sign, _e_g in (("pos", "(> (lo y) 0)"), ("neg", "(< (hi y) 0)")):
        _eg(Q(f"fold_known_{_e_ctor.lower()}_{_e_sign}",
              f"{_e_ctor.lower()}(x, y) -> c when its interval is [c, c] and y is never 0",
              _E_FOLD_KNOWN_NATIVE,
              f"(= e ({_e_ctor} dt x y)) {_e_g} (= v (lo e)) (= v (hi e)) (= m (dmin dt)) "
              "(Def e)",
              "(union e (Cst dt v))"))

_eg(Q("fold_known_range", "range(end) -> c when its interval is [c, c] (one iteration)",
      _E_FOLD_KNOWN_NATIVE,
      "(= e (G1 op dt a n)) (= op \"RANGE\") (= v (lo e)) (= v (hi e)) (= m (dmin dt)) "
      "(Def e)",
      "(union e (Cst dt v))"))

_eg([PyRule("fold_known", "x -> c when x's interval is [c, c] (x never Invalid, no division "
           "by a possible 0)", "constant_folding_dsl_patterns", "fold")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)

# floats, vectors and other non-integer constants: the baseline's folding applied to
# e-nodes (integer and bool classes fold through the interval analysis: fold_known)

EGRAPH["constant_folding_dsl_patterns"] += bridge(constant_folding_dsl_patterns,
                                                  "constant_folding_dsl_patterns", non_int=True)
EGRAPH["vconst_folding_patterns"] = bridge(vconst_folding_patterns, "vconst_folding_patterns",
                                         non_int=True)
