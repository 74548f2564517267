"""WHERE simplification (docs/rules.md, seed 000 §12).

``where_bound_patterns``: what the bounds decide. A condition whose bounds
decide it selects a branch (this covers ``WHERE(x < c, t, f)`` with
``vmax(x) < vmin(c)`` and the constant conditions), and any integer node whose
range is a single value is that constant (tinygrad's "ALU min==max -> CONST";
placed after the identity rules, which name the common cases).

A rule that drops a subterm never drops one that may evaluate to Invalid
(``may_be_invalid``): Invalid propagates through every op, and bounds do not
always show it (``max(Invalid, 5)`` has vmin 5).

``dce_dsl_patterns`` (Morok's name for the WHERE branch rules): equal
branches, bool identities, the condition flip ``WHERE(!c, t, f) ->
WHERE(c, f, t)`` -- never when ``f`` is Invalid, which would move the Invalid
into the true branch where the padding rules no longer see it (tinygrad
symbolic.py has the same guard) -- nested-WHERE merging, and combining two
WHEREs on the same condition when one side folds to a constant.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat, graph_rewrite
from eqsat.ir.uop import UOp
from rules.common import by_group, const_is, invalid_like, is_invalid, may_be_invalid, nonzero
from rules.computed import PyRule
from rules.native import ERule, R

__all__ = ["GROUPS", "parse_valid", "simplify_given_valid"]

_X = UPat.var("x")


def _where(c: UOp, t: UOp, f: UOp) -> UOp:
    return UOp(Ops.WHERE, t.dtype, (c, t, f))


def _bconst(v: bool, name: str) -> UPat:
    return UPat(Ops.CONST, name=name, pred=lambda u: u.dtype.scalar() == dtypes.bool
                and const_is(u, v))


def _decided(c: UOp, value: bool) -> bool:
    return c.dtype.scalar() == dtypes.bool and c.vmin == c.vmax == value and \
        not may_be_invalid(c)


# ---- bounds fold: an integer node whose range is a single value is that value
_BOUND_FOLD_OPS = (GroupOp.ALU - GroupOp.Comparison - {Ops.WHERE}) | {Ops.DEFINE_VAR,
                                                                       Ops.SPECIAL}


def _single_valued(x: UOp) -> bool:
    if not (x.dtype.is_int or x.dtype.is_bool) or x.vmin != x.vmax:
        return False
    if x.op in (Ops.IDIV, Ops.MOD) and not nonzero(x.src[1]):
        return False  # a division that may be by zero is never folded into a value
    return not any(may_be_invalid(s) for s in x.src)


G_BOUND = "where_bound_patterns"
where_bound_patterns = [
    Rule("where_cond_true", "WHERE(c, t, f) -> t when c is always true (constant or bounds, "
         "e.g. c = x<k with vmax(x) < k)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"), UPat.var("f"))),
         build=lambda t: t, guard=lambda c: _decided(c, True)),
    Rule("where_cond_false", "WHERE(c, t, f) -> f when c is always false (constant or bounds, "
         "e.g. c = x<k with vmin(x) >= k)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"), UPat.var("f"))),
         build=lambda f: f, guard=lambda c: _decided(c, False)),
    Rule("fold_const_by_bounds", "x -> CONST(v) when vmin(x) == vmax(x) == v (int/bool x, "
         "no division by a possible 0, no Invalid operand)",
         UPat(_BOUND_FOLD_OPS, name="x"),
         build=lambda x: UOp.const(x.dtype, x.vmin), guard=_single_valued),
]

_BIN = tuple(GroupOp.Binary - {Ops.MULHI})


def _combine_ok(alu: UOp, t: UOp, tt: UOp, f: UOp, ff: UOp) -> bool:
    if not ((t.op is Ops.CONST and tt.op is Ops.CONST) or (f.op is Ops.CONST
                                                          and ff.op is Ops.CONST)):
        return False
    if any(is_invalid(u) for u in (t, tt, f, ff)):
        return False
    # never put a possibly-zero divisor into a branch it was not evaluated in
    return alu.op not in (Ops.IDIV, Ops.MOD) or (nonzero(tt) and nonzero(ff))


def _wpat(t: str, f: str) -> UPat:
    return UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var(t), UPat.var(f)))


# ---- simplify a padded index given its validity (tinygrad's uop_given_valid)
def _split_and(u: UOp) -> list[UOp]:
    out, stack = [], [u]
    while stack:
        x = stack.pop()
        if x.op is Ops.AND and x.dtype == dtypes.bool:
            stack.extend(reversed(x.src))
        else:
            out.append(x)
    return out


def _clause_bounds(c: UOp) -> tuple[UOp, int | None, int | None] | None:
    """``(X, lo, hi)`` when clause ``c`` says ``lo <= X <= hi`` for an integer ``X``."""
    neg = False
    if c.op is Ops.NOT:
        c, neg = c.src[0], True
    if c.op not in (Ops.LT, Ops.EQ) or not c.src[0].dtype.is_int:
        return None
    a, b = c.src
    if c.op is Ops.EQ:
        if neg:
            return None
        if b.op is Ops.CONST:
            return a, b.arg, b.arg
        if a.op is Ops.CONST:
            return b, a.arg, a.arg
        return None
    if b.op is Ops.CONST:  # a < b  (or a >= b when negated)
        return (a, b.arg, None) if neg else (a, None, b.arg - 1)
    if a.op is Ops.CONST:  # a < b  (or b <= a when negated)
        return (b, None, a.arg) if neg else (b, a.arg + 1, None)
    return None


def parse_valid(valid: UOp) -> dict[UOp, tuple[int, int]] | None:
    """``{X: (lo, hi)}``: what the AND clauses of ``valid`` say about integer
    expressions, intersected with their bounds; None when they contradict."""
    out: dict[UOp, tuple[int, int]] = {}
    for c in _split_and(valid):
        got = _clause_bounds(c)
        if got is None:
            continue
        x, lo, hi = got
        if math.isinf(x.vmin) or math.isinf(x.vmax):
            continue
        olo, ohi = out.get(x, (int(x.vmin), int(x.vmax)))
        nlo = olo if lo is None else max(olo, lo)
        nhi = ohi if hi is None else min(ohi, hi)
        if nlo > nhi:
            return None
        out[x] = (nlo, nhi)
    return out


def narrowing(valid: UOp, x: UOp) -> dict[UOp, UOp] | None:
    """``{X: narrower leaf}`` for the expressions ``X`` of ``x`` that the clauses of
    ``valid`` bound more tightly than their own bounds: a constant where they fix ``X``,
    else (for index ``X``) a fresh variable over the narrowed range. Substituted into
    ``x``, it gives ``x``'s values and bounds where ``valid`` holds. None when ``valid``
    never holds."""
    bounds = parse_valid(valid)
    if bounds is None:
        return None
    topo = set(x.toposort())
    sub: dict[UOp, UOp] = {}
    for e, (lo, hi) in bounds.items():
        if e not in topo or (lo == e.vmin and hi == e.vmax):
            continue
        if lo == hi:
            sub[e] = UOp.const(e.dtype, lo)
        elif e.dtype.is_index:
            sub[e] = UOp.var(f"__valid{e.uid}", lo, hi)
    return sub


# x -> weak refs to (valid, result) of the last simplify_given_valid(valid, x), so the guard
# and the builder share one computation; weak values: a result holding x must not keep x alive
_GIVEN: weakref.WeakKeyDictionary[UOp, tuple[weakref.ref, Any]] = weakref.WeakKeyDictionary()


def simplify_given_valid(valid: UOp, x: UOp) -> UOp | None:
    """``x`` simplified under the assumption that ``valid`` holds; None if no
    simplification; the Invalid node if ``valid`` never holds.

    Every expression ``X`` a clause bounds (``X < c``, ``c < X``, ``X == c``)
    is replaced in ``x`` by a fresh variable over the narrowed range (or the
    constant), the result is rewritten with ``symbolic()``, and ``X`` is put
    back and rewritten again. Exact wherever ``valid`` holds; elsewhere the
    WHERE is Invalid and the branch is not evaluated.
    """
    import rules

    sub = narrowing(valid, x)
    if sub is None:
        return UOp.invalid()
    if not sub:
        return None
    pm = rules.matcher()
    y = graph_rewrite(x.substitute(sub), pm)
    back = {v: k for k, v in sub.items() if v.op is Ops.DEFINE_VAR}
    if back:
        y = graph_rewrite(y.substitute(back), pm)
    return None if y is x else y


def _given_valid(c: UOp, x: UOp) -> UOp | None:
    hit = _GIVEN.get(x)
    if hit is not None and hit[0]() is c:
        if hit[1] is None:
            return None
        y = hit[1]()
        if y is not None:
            return y
    y = simplify_given_valid(c, x)
    _GIVEN[x] = (weakref.ref(c), None if y is None else weakref.ref(y))
    return y


def _gate_build(w: UOp, c: UOp, x: UOp, i: UOp) -> UOp:
    y = _given_valid(c, x)
    if y is None:
        return w
    return invalid_like(w.dtype) if y.op is Ops.INVALID else UOp(Ops.WHERE, w.dtype, (c, y, i))


G_DCE = "dce_dsl_patterns"
dce_dsl_patterns = [
    Rule("where_same_branches", "WHERE(c, t, t) -> t",
         UPat(Ops.WHERE, src=(UPat.var(), UPat.var("t"), UPat.var("t"))), build=lambda t: t),
    Rule("where_true_false", "WHERE(x, true, false) -> x (bool x)",
         UPat(Ops.WHERE, src=(_X, _bconst(True, "a"), _bconst(False, "b")), name="w"),
         build=lambda x: x, guard=lambda x, w: x.dtype == w.dtype),
    Rule("where_false_true", "WHERE(x, false, true) -> !x (bool x)",
         UPat(Ops.WHERE, src=(_X, _bconst(False, "a"), _bconst(True, "b")), name="w"),
         build=lambda x: x.alu(Ops.NOT), guard=lambda x, w: x.dtype == w.dtype),
    Rule("where_not_flip", "WHERE(!c, t, f) -> WHERE(c, f, t) unless f is Invalid",
         UPat(Ops.WHERE, src=(UPat(Ops.NOT, src=(UPat.var("c"),)), UPat.var("t"),
                              UPat.var("f"))),
         build=lambda c, t, f: _where(c, f, t),
         guard=lambda c, f: c.dtype.scalar() == dtypes.bool and not is_invalid(f)),
    Rule("where_same_cond_true", "WHERE(c, WHERE(c, x, y), f) -> WHERE(c, x, f)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat(Ops.WHERE, src=(UPat.var("c"), _X,
                                                                  UPat.var("y"))),
                              UPat.var("f"))),
         build=lambda c, x, f: _where(c, x, f)),
    Rule("where_same_cond_false", "WHERE(c, t, WHERE(c, x, y)) -> WHERE(c, t, y)",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"),
                              UPat(Ops.WHERE, src=(UPat.var("c"), _X, UPat.var("y"))))),
         build=lambda c, t, y: _where(c, t, y)),
    Rule("where_nested_merge", "WHERE(a, WHERE(b, c, d), d) -> WHERE(a & b, c, d)",
         UPat(Ops.WHERE, src=(UPat.var("a"), UPat(Ops.WHERE, src=(UPat.var("b"), UPat.var("c"),
                                                                  UPat.var("d"))),
                              UPat.var("d"))),
         build=lambda a, b, c, d: _where(a & b, c, d), guard=lambda b: not may_be_invalid(b)),
    Rule("where_alu_combine", "WHERE(c, t, f) <op> WHERE(c, tt, ff) -> WHERE(c, t op tt, "
         "f op ff) when t, tt or f, ff are constants",
         UPat(_BIN, src=(_wpat("t", "f"), _wpat("tt", "ff")), name="alu"),
         build=lambda alu, c, t, tt, f, ff: _where(c, t.alu(alu.op, tt), f.alu(alu.op, ff)),
         guard=_combine_ok),
    Rule("where_add_chain_combine", "(y + WHERE(c, t, f)) + WHERE(c, tt, ff) -> "
         "y + WHERE(c, t+tt, f+ff) when t, tt or f, ff are constants",
         UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[UPat.var("y"), _wpat("t", "f")]),
                            _wpat("tt", "ff")], name="alu"),
         build=lambda y, c, t, tt, f, ff: y + _where(c, t + tt, f + ff), guard=_combine_ok),
    Rule("where_gate_given_valid", "WHERE(v, x, Inv) -> WHERE(v, x', Inv) with x' = x "
         "simplified assuming v (bounds of v's clauses); -> Inv when v never holds",
         UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("x"),
                              UPat((Ops.INVALID, Ops.CAST), name="i", pred=is_invalid)),
              name="w"),
         build=_gate_build, guard=lambda c, x: _given_valid(c, x) is not None),
]

GROUPS: dict[str, list[Rule]] = {G_BOUND: where_bound_patterns, G_DCE: dce_dsl_patterns}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

_E_WHERE_BOUND = "where_bound_patterns"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- where --------------------------------------------------------------------------
_eg(R("where_true", "where(c,t,f) -> t when c is always true", _E_WHERE_BOUND,
      "(Where dt c t f)", "t", "(= (lo c) 1)", "(Def c)", subsume=True))

_eg(R("where_false", "where(c,t,f) -> f when c is always false", _E_WHERE_BOUND,
      "(Where dt c t f)", "f", "(= (hi c) 0)", "(Def c)", subsume=True))

_eg(R("where_same", "where(c,t,t) -> t", _E_WHERE_BOUND, "(Where dt c t t)", "t",
      "(Def c)", subsume=True))

_eg(R("where_bool_id", "where(c,true,false) -> c", _E_WHERE_BOUND,
      "(Where dt c (Cst dt 1) (Cst dt 0))", "c", "(= dt \"bool\")", subsume=True))

_eg(R("where_bool_not", "where(c,false,true) -> !c", _E_WHERE_BOUND,
      "(Where dt c (Cst dt 0) (Cst dt 1))", "(Not dt c)", "(= dt \"bool\")"))

_eg(R("where_not_flip", "where(!c,t,f) -> where(c,f,t) when f is not Invalid (f has a value)",
      _E_WHERE_BOUND, "(Where dt (Not dc c) t f)", "(Where dt c f t)", "(= lf (lo f))"))

_eg(R("where_merge", "where(a, where(b, x, y), y) -> where(a & b, x, y)", _E_WHERE_BOUND,
      "(Where dt a (Where dt b x y) y)", "(Where dt (And dc a b) x y)",
      "(= dc \"bool\")", "(= la (lo a))", "(= lb (lo b))"))

for _e_c in ("Add", "Sub", "Mul", "Max", "Min"):
    _eg(R(f"{_e_c.lower()}_where_same_cond",
          f"{_e_c.lower()}(where(c, k1, k2), where(c, k3, k4)) -> "
          f"where(c, {_e_c.lower()}(k1, k3), {_e_c.lower()}(k2, k4)) (constant branches)",
          _E_WHERE_BOUND,
          f"({_e_c} dt (Where dt c (Cst dt k1) (Cst dt k2)) (Where dt c (Cst dt k3) (Cst dt k4)))",
          f"(Where dt c ({_e_c} dt (Cst dt k1) (Cst dt k3)) ({_e_c} dt (Cst dt k2) (Cst dt k4)))"))

for _e_c in ("Add", "Mul"):
    _eg(R(f"{_e_c.lower()}_where_const", f"{_e_c.lower()}(where(c, k1, k2), k3) -> "
          f"where(c, {_e_c.lower()}(k1, k3), {_e_c.lower()}(k2, k3)) (constant branches)",
          _E_WHERE_BOUND, f"({_e_c} dt (Where dt c (Cst dt k1) (Cst dt k2)) (Cst dt k3))",
          f"(Where dt c ({_e_c} dt (Cst dt k1) (Cst dt k3)) ({_e_c} dt (Cst dt k2) (Cst dt k3)))"))

_eg(R("where_same_cond_true", "where(c, where(c, a, b), d) -> where(c, a, d)", _E_WHERE_BOUND,
      "(Where dt c (Where dt c a b) d)", "(Where dt c a d)", subsume=True))

_eg(R("where_same_cond_false", "where(c, a, where(c, b, d)) -> where(c, a, d)", _E_WHERE_BOUND,
      "(Where dt c a (Where dt c b d))", "(Where dt c a d)", subsume=True))

_eg([PyRule("where_valid_context", "where(c, x, Inv) -> where(c, x', Inv) with x' = x "
           "simplified under the bounds c implies", "where_bound_patterns", "context")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)
