"""Term combining, ALU chain folding, constant hoisting, SUB normalization.

docs/rules.md, seed 000 §7, §8. These rules reassociate, so they are limited to
integers and bools: exact for ``index``, exact modulo 2^n for fixed-width
integers (wrapping addition and multiplication are associative and
distributive), but not for floats (rounding). ``x + x -> x*2`` is exact for
floats too.

Canonical form produced: constants on the right and hoisted outward
(``(x + c) + y -> (x + y) + c``), a subtraction of a constant written as an
addition (``x - c -> x + (-c)``), so the div/mod rules see ``sum + offset``.
"""

from __future__ import annotations

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import by_group, eval_op, may_be_invalid
from rules.computed import PyRule
from rules.native import INT_DT, ERule, R

__all__ = ["GROUPS"]

_X, _Y = UPat.var("x"), UPat.var("y")


def _c(name: str) -> UPat:
    return UPat(Ops.CONST, name=name)


def _int(x: UOp) -> bool:
    return x.dtype.is_int


def _int_or_bool(x: UOp) -> bool:
    return x.dtype.is_int or x.dtype.is_bool


def _k(like: UOp, op: Ops, a: UOp, b: UOp) -> UOp:
    """The constant ``a op b`` in ``like``'s dtype (wrapping)."""
    return like.const_like(eval_op(op, like.dtype, a.arg, b.arg))


def _mul(x: UOp, k: int) -> UOp:
    return x * x.const_like(k)


G_TERM = "term_combining_dsl_patterns"
term_combining_dsl_patterns = [
    Rule("add_self", "x+x -> x*2 (not bool)", UPat(Ops.ADD, src=(_X, _X)),
         build=lambda x: _mul(x, 2), guard=lambda x: not x.dtype.is_bool),
    Rule("sub_self", "x-x -> 0 (integers)", UPat(Ops.SUB, src=(_X, _X)),
         build=lambda x: x.const_like(0), guard=lambda x: _int(x) and not may_be_invalid(x)),
    Rule("add_mul_terms", "x*c1 + x*c2 -> x*(c1+c2) (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_X, _c("c1")]),
                            UPat(Ops.MUL, src=[_X, _c("c2")])], name="a"),
         build=lambda x, c1, c2: x * _k(x, Ops.ADD, c1, c2), guard=_int),
    Rule("add_term_mul", "x + x*c -> x*(c+1) (integers)",
         UPat(Ops.ADD, src=[_X, UPat(Ops.MUL, src=[_X, _c("c")])]),
         build=lambda x, c: x * x.const_like(c.arg + 1), guard=_int),
    Rule("add_chain_mul_terms", "(y + x*c1) + x*c2 -> y + x*(c1+c2) (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_Y, UPat(Ops.MUL, src=[_X, _c("c1")])]),
                            UPat(Ops.MUL, src=[_X, _c("c2")])]),
         build=lambda x, y, c1, c2: y + x * _k(x, Ops.ADD, c1, c2), guard=_int),
    Rule("add_chain_term_mul", "(y + x) + x*c -> y + x*(c+1) (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_Y, _X]), UPat(Ops.MUL, src=[_X, _c("c")])]),
         build=lambda x, y, c: y + x * x.const_like(c.arg + 1), guard=_int),
    Rule("add_chain_mul_term", "(y + x*c) + x -> y + x*(c+1) (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_Y, UPat(Ops.MUL, src=[_X, _c("c")])]), _X]),
         build=lambda x, y, c: y + x * x.const_like(c.arg + 1), guard=_int),
    Rule("add_chain_self", "(y + x) + x -> y + x*2 (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_Y, _X]), _X]),
         build=lambda x, y: y + _mul(x, 2), guard=_int),
    Rule("sub_add_cancel", "(x + y) - y -> x (integers)",
         UPat(Ops.SUB, src=(UPat(Ops.ADD, src=[_X, _Y]), _Y)), build=lambda x: x,
         guard=lambda x, y: _int(x) and not may_be_invalid(y)),
    Rule("add_sub_cancel", "(x - y) + y -> x (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.SUB, src=(_X, _Y)), _Y]), build=lambda x: x,
         guard=lambda x, y: _int(x) and not may_be_invalid(y)),
    # SUB normalization: with it, (x - c1) + c2 and (x - c1) - c2 below only meet
    # a SUB of a constant when this group is left out (rulesets=[...alu_folding...])
    Rule("sub_const_to_add", "x - c -> x + (-c) (integers; the offset form div/mod rules see)",
         UPat(Ops.SUB, src=(_X, _c("c")), name="f"),
         build=lambda f, x, c: x + f.const_like(-c.arg), guard=_int),
]


def _chain(op: Ops, sym: str) -> Rule:
    return Rule(f"{op.name.lower()}_const_chain",
                f"(x {sym} c1) {sym} c2 -> x {sym} (c1 {sym} c2) (integers, bools)",
                UPat(op, src=[UPat(op, src=[_X, _c("c1")]), _c("c2")], name="f"),
                build=lambda f, x, c1, c2: x.alu(op, _k(f, op, c1, c2)),
                guard=lambda f: _int_or_bool(f) and not (op in (Ops.ADD, Ops.MUL)
                                                         and f.dtype.is_bool))


G_ALU = "alu_folding_dsl_patterns"
alu_folding_dsl_patterns = [
    _chain(Ops.ADD, "+"),
    _chain(Ops.MUL, "*"),
    _chain(Ops.AND, "&"),
    _chain(Ops.OR, "|"),
    _chain(Ops.XOR, "^"),
    Rule("max_const_chain", "max(max(x, c1), c2) -> max(x, max(c1, c2)) (integers)",
         UPat(Ops.MAX, src=[UPat(Ops.MAX, src=[_X, _c("c1")]), _c("c2")], name="f"),
         build=lambda f, x, c1, c2: x.maximum(_k(f, Ops.MAX, c1, c2)), guard=_int),
    Rule("min_const_chain", "min(min(x, c1), c2) -> min(x, min(c1, c2)) (integers)",
         UPat(Ops.MIN, src=[UPat(Ops.MIN, src=[_X, _c("c1")]), _c("c2")], name="f"),
         build=lambda f, x, c1, c2: x.alu(Ops.MIN, _k(f, Ops.MIN, c1, c2)), guard=_int),
    Rule("add_sub_const", "(x - c1) + c2 -> x + (c2-c1) (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.SUB, src=(_X, _c("c1"))), _c("c2")], name="f"),
         build=lambda f, x, c1, c2: x + _k(f, Ops.SUB, c2, c1), guard=_int),
    Rule("sub_add_const", "(x + c1) - c2 -> x + (c1-c2) (integers)",
         UPat(Ops.SUB, src=(UPat(Ops.ADD, src=[_X, _c("c1")]), _c("c2")), name="f"),
         build=lambda f, x, c1, c2: x + _k(f, Ops.SUB, c1, c2), guard=_int),
    Rule("sub_sub_const", "(x - c1) - c2 -> x + -(c1+c2) (integers)",
         UPat(Ops.SUB, src=(UPat(Ops.SUB, src=(_X, _c("c1"))), _c("c2")), name="f"),
         build=lambda f, x, c1, c2: x + f.const_like(-(c1.arg + c2.arg)), guard=_int),
    Rule("hoist_const_add", "(x + c) + y -> (x + y) + c when y is not a constant (integers)",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_X, _c("c")]), _Y], name="f"),
         build=lambda x, y, c: (x + y) + c,
         guard=lambda f, y: _int(f) and y.op not in (Ops.CONST, Ops.VCONST)),
    Rule("hoist_const_mul", "(x * c) * y -> (x * y) * c when y is not a constant (integers)",
         UPat(Ops.MUL, src=[UPat(Ops.MUL, src=[_X, _c("c")]), _Y], name="f"),
         build=lambda x, y, c: (x * y) * c,
         guard=lambda f, y: _int(f) and y.op not in (Ops.CONST, Ops.VCONST)),
    Rule("sub_const_minus_sum", "c1 - (x + c2) -> (c1-c2) - x (integers)",
         UPat(Ops.SUB, src=(_c("c1"), UPat(Ops.ADD, src=[_X, _c("c2")])), name="f"),
         build=lambda f, x, c1, c2: _k(f, Ops.SUB, c1, c2) - x, guard=_int),
    Rule("hoist_const_sub_lhs", "(x + c) - y -> (x - y) + c when y is not a constant (integers)",
         UPat(Ops.SUB, src=(UPat(Ops.ADD, src=[_X, _c("c")]), _Y), name="f"),
         build=lambda x, y, c: (x - y) + c,
         guard=lambda f, y: _int(f) and y.op not in (Ops.CONST, Ops.VCONST)),
    Rule("hoist_const_sub_rhs", "y - (x + c) -> (y - x) + (-c) when y is not a constant "
         "(integers)",
         UPat(Ops.SUB, src=(_Y, UPat(Ops.ADD, src=[_X, _c("c")])), name="f"),
         build=lambda f, x, y, c: (y - x) + f.const_like(-c.arg),
         guard=lambda f, y: _int(f) and y.op not in (Ops.CONST, Ops.VCONST)),
    Rule("hoist_const_from_const_sub", "(c - x) + y -> (y - x) + c when y is not a constant "
         "(integers)",
         UPat(Ops.ADD, src=[UPat(Ops.SUB, src=(_c("c"), _X)), _Y], name="f"),
         build=lambda x, y, c: (y - x) + c,
         guard=lambda f, y: _int(f) and y.op not in (Ops.CONST, Ops.VCONST)),
    Rule("sub_of_sub", "a - (b - x) -> x + (a - b) (integers; exposes x)",
         UPat(Ops.SUB, src=(UPat.var("a"), UPat(Ops.SUB, src=(UPat.var("b"), _X))), name="f"),
         build=lambda a, b, x: x + (a - b), guard=_int),
]

GROUPS: dict[str, list[Rule]] = {G_TERM: term_combining_dsl_patterns,
                                 G_ALU: alu_folding_dsl_patterns}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_TERM_COMBINING = "term_combining_dsl_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- term combining -------------------------------------------------------------
_eg(R("add_self", "x+x -> x*2 (integers)", _E_TERM_COMBINING, "(Add dt x x)",
      "(Mul dt x (Cst dt 2))", INT_DT))

_eg(R("sub_add_cancel", "(x+y)-y -> x (integers)", _E_TERM_COMBINING, "(Sub dt (Add dt x y) y)",
      "x", INT_DT, "(Def y)", subsume=True))

_eg(R("add_sub_cancel", "(x-y)+y -> x (integers)", _E_TERM_COMBINING, "(Add dt (Sub dt x y) y)",
      "x", INT_DT, "(Def y)", subsume=True))

_eg([PyRule("canonical_sum", "a+b+... -> the sorted flattened sum, like terms merged, constant "
           "last", "alu_folding_dsl_patterns", "canon")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
