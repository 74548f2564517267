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

import itertools
import math
import weakref
from typing import Any

from eqsat.ir.linear import _ZERO, Ctx, Lin
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat, graph_rewrite
from eqsat.ir.uop import UOp, node_cache
from rules.common import (
    invalid_like,
    is_invalid,
    may_be_invalid,
    may_be_undefined,
    split_and,
)
from rules.computed import PyRule, sum_pyrules
from rules.divmod_core import RuleOut, SumRule, _invalid_free
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS", "SUM_RULES", "parse_valid", "simplify_given_valid"]

_X = UPat.var("x")


def _where(c: UOp, t: UOp, f: UOp) -> UOp:
    return UOp(Ops.WHERE, t.dtype, (c, t, f))


# ---- bounds fold: an integer node whose range is a single value is that value
_BOUND_FOLD_OPS = (GroupOp.ALU - GroupOp.Comparison - {Ops.WHERE}) | {Ops.DEFINE_VAR,
                                                                       Ops.SPECIAL}


def _single_valued(x: UOp) -> bool:
    if x.vmin != x.vmax or not (x.dtype.is_int or x.dtype.is_bool):
        return False  # (the bounds first: most nodes have more than one value)
    if may_be_undefined(x):
        return False  # a division by a possible 0, here or below, is never folded
    return not any(may_be_invalid(s) for s in x.src)


# ---- simplify a padded index given its validity (tinygrad's uop_given_valid)
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
    for c in split_and(valid):
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
    else (for index ``X``) a fresh variable over the narrowed range; every other range
    and special of ``x`` maps to itself (nothing inside its END is narrowed: that would
    name another loop). Substituted into ``x``, it gives ``x``'s values and bounds where
    ``valid`` holds. None when ``valid`` never holds."""
    bounds = parse_valid(valid)
    if bounds is None:
        return None
    order = x.toposort()
    topo = set(order)
    # the fresh variables' names: the first ``__valid<i>`` that ``x`` does not name,
    # in the clauses' order (read from the graph alone: a name the process's history
    # chose would order a sum's operands differently from run to run)
    taken = {u.arg[0] for u in order if u.op is Ops.DEFINE_VAR}
    fresh = (n for n in map("__valid{}".format, itertools.count()) if n not in taken)
    sub: dict[UOp, UOp] = {}
    for e, (lo, hi) in bounds.items():
        if e not in topo or (lo == e.vmin and hi == e.vmax):
            continue
        if lo == hi:
            sub[e] = UOp.const(e.dtype, lo)
        elif e.dtype.is_index:
            sub[e] = UOp.var(next(fresh), lo, hi)
    if sub:  # a loop index is its node: narrowing its END would make another loop
        sub.update({u: u for u in order if u.op in (Ops.RANGE, Ops.SPECIAL) and u not in sub})
    return sub


# x (by uid, a node cache) -> weak refs to (valid, result) of the last
# simplify_given_valid(valid, x), so the guard and the builder share one computation; weak
# values: a result holding x must not keep x alive
_GIVEN: dict[int, tuple[weakref.ref, Any]] = node_cache()


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
    hit = _GIVEN.get(x.uid)
    if hit is not None and hit[0]() is c:
        if hit[1] is None:
            return None
        y = hit[1]()
        if y is not None:
            return y
    y = simplify_given_valid(c, x)
    _GIVEN[x.uid] = (weakref.ref(c), None if y is None else weakref.ref(y))
    return y


def _gate_build(w: UOp, c: UOp, x: UOp, i: UOp) -> UOp:
    y = _given_valid(c, x)
    if y is None:
        return w
    return invalid_like(w.dtype) if y.op is Ops.INVALID else UOp(Ops.WHERE, w.dtype, (c, y, i))


# ---- the where-merge over a whole sum (the e-graph's form of where_alu_combine on sums)
def _where_groups(s: Lin, ctx: Ctx) -> list[tuple[Any, list[tuple[int, Any, Lin, Lin]]]]:
    """The sum's ``where`` terms grouped by condition, each term in one group: the
    conditions shared by the most terms first (ties: first seen), so a term whose class
    holds several ``where`` e-nodes (e.g. ``where(c, ..)`` and ``where(~c, ..)``) joins
    the group its partners are in; groups of two or more terms."""
    cands: dict[Any, tuple[int, list[tuple[Any, Lin, Lin]]]] = {}
    seen: dict[Any, int] = {}
    for k, a in s.terms:
        ws = [(c, t, f) for c, t, f in ctx.where_parts(a) if _invalid_free(ctx, t, f)]
        if ws:
            cands[a] = (k, ws)
            for c in dict.fromkeys(c for c, _, _ in ws):
                seen[c] = seen.get(c, 0) + 1
    groups: list[tuple[Any, list[tuple[int, Any, Lin, Lin]]]] = []
    for c in sorted((c for c, n in seen.items() if n >= 2), key=lambda c: -seen[c]):
        g: list[tuple[int, Any, Lin, Lin]] = []
        for a, (k, ws) in cands.items():
            hit = next(((t, f) for cc, t, f in ws if cc == c), None)
            if hit is not None:
                g.append((k, a, *hit))
        if len(g) >= 2:
            groups.append((c, g))
            for _, a, _, _ in g:
                del cands[a]
    return groups


def _merge_where_terms(s: Lin, ctx: Ctx) -> RuleOut | None:
    """Every condition's ``where`` terms of the sum ``s`` merged into one ``where``
    (``k1*where(c, t1, f1) + k2*where(c, t2, f2) == where(c, k1*t1 + k2*t2, k1*f1 +
    k2*f2)`` pointwise), in one step, whatever their branches; the part both merged
    branches share (equal coefficients) moves out of the ``where`` (``where(c, y + t,
    y + f) == y + where(c, t, f)``; a ``where`` evaluates both branches), and the sum's
    constant moves into the first ``where`` left with two constant branches. The result
    holds one ``where`` per condition, so the rule finds nothing more to merge in it
    (no cascade of partial merges); None when no condition has two terms."""
    if getattr(ctx, "where_parts", None) is None:
        return None
    groups = _where_groups(s, ctx)
    rest, extra = s, []
    for c, ws in groups:
        tt, ff = _ZERO, _ZERO
        for k, _, t, f in ws:
            tt, ff = tt + t * k, ff + f * k
        both = Lin.of([(k, a) for k, a in tt.terms if ff.coef(a) == k])
        rest = rest - Lin.of([(k, a) for k, a, _, _ in ws]) + both
        tt, ff = tt - both, ff - both
        if tt == ff:  # where(c, t, t) == t
            rest = rest + tt
            continue
        if tt.is_const and ff.is_const and rest.const:
            tt, ff, rest = tt + rest.const, ff + rest.const, rest - rest.const
        extra.append((1, ctx.where(c, ctx.lin(tt), ctx.lin(ff))))
    return RuleOut(rest, tuple(extra)) if groups else None


SUM_RULES: tuple[SumRule, ...] = (
    SumRule("where_merge_sum", "k1*where(c, t1, f1) + k2*where(c, t2, f2) + y -> "
            "where(c, k1*t1 + k2*t2, k1*f1 + k2*f2) + y, every condition's terms at once, "
            "the branches' shared part out of the where", _merge_where_terms, divisions=False),
)

G_BOUND = "where_bound_patterns"
G_DCE = "dce_dsl_patterns"
#: the two WHEREs' combinations over every binary op, natively (opt-in: every pair of
#: WHEREs over one condition combines, and sums of many grow with it)
G_COMBINE_NATIVE = "where_combine_native"
_BIN = tuple(sorted(GroupOp.Binary - GroupOp.Comparison - GroupOp.IntDiv - {Ops.MULHI},
                    key=lambda o: o.value))
_DIVS = tuple(sorted(GroupOp.IntDiv, key=lambda o: o.value))
_NO_INV = "not is_invalid(f) and not is_invalid(ff)"
_COMBINE = dict(group=G_DCE, egraph_group=G_COMBINE_NATIVE)
#: the where-combining rules need a condition that can go both ways: a constant one is
#: where_cond_true's or where_cond_false's, and combining the where(false, k, ..) e-nodes
#: a class of a constant condition collects made new constants out of dead branches at
#: every step, each combined again with the others (docs/perf.md: a floor-division
#: expansion from a padded view went from 719 to 24,900 e-nodes in one step)
_LIVE_COND = "vmin(c) == 0 and vmax(c) == 1"

LAWS = [
    # where_bound_patterns: what the bounds decide
    rule("where_cond_true", "where(c, t, f) -> t", "vmin(c) == 1", group=G_BOUND, subsume=True),
    rule("where_cond_false", "where(c, t, f) -> f", "vmax(c) == 0", group=G_BOUND,
         subsume=True),
    py(Rule("fold_const_by_bounds", "x -> CONST(v) when vmin(x) == vmax(x) == v (int/bool x, "
            "no division by a possible 0, no Invalid operand)",
            UPat(_BOUND_FOLD_OPS, name="x"),
            build=lambda x: UOp.const(x.dtype, x.vmin), guard=_single_valued, group=G_BOUND),
       "absent", "the e-graph's fold pass (fold_known) unions every never-Invalid class whose "
       "interval is one value with that constant"),
    # dce_dsl_patterns (Morok's WHERE rules)
    rule("where_same_branches", "where(c, t, t) -> t", group=G_DCE, subsume=True),
    rule("where_true_false", "where(x, true, false) -> x", group=G_DCE, subsume=True),
    rule("where_false_true", "where(x, false, true) -> ~x", group=G_DCE),
    rule("where_not_flip", "where(~c, t, f) -> where(c, f, t)", "not is_invalid(f)", group=G_DCE,
         note="never with an Invalid f: the padding rules see it in the false branch"),
    rule("where_same_cond_true", "where(c, where(c, x, y), f) -> where(c, x, f)", group=G_DCE,
         subsume=True),
    rule("where_same_cond_false", "where(c, t, where(c, x, y)) -> where(c, t, y)", group=G_DCE,
         subsume=True),
    rule("where_nested_merge", "where(a, where(b, x, y), y) -> where(a & b, x, y)",
         "never_invalid(b) and never_undefined(b)", group=G_DCE,
         note="a & b evaluates b where a is false, which the input did not",
         native="the e-graph does not track where a class is undefined: b must be "
                "(a division by a possible 0 in b would be evaluated where a is false)"),
    rule("where_alu_combine", "op(where(c, k1, f), where(c, k2, ff)) -> "
         "where(c, op(k1, k2), op(f, ff))", _NO_INV, ops=_BIN, ordered=True, **_COMBINE),
    rule("where_alu_combine_false", "op(where(c, t, k1), where(c, tt, k2)) -> "
         "where(c, op(t, tt), op(k1, k2))", "not is_invalid(t) and not is_invalid(tt)",
         ops=_BIN, ordered=True, **_COMBINE),
    rule("where_div_combine", "op(where(c, k1, f), where(c, k2, ff)) -> "
         "where(c, op(k1, k2), op(f, ff))", f"{_NO_INV} and k2 != 0 and nonzero(ff)",
         ops=_DIVS, ordered=True, **_COMBINE,
         note="a divisor that may be 0 is not moved into a branch it was not in"),
    rule("where_div_combine_false", "op(where(c, t, k1), where(c, tt, k2)) -> "
         "where(c, op(t, tt), op(k1, k2))",
         "not is_invalid(t) and not is_invalid(tt) and nonzero(tt) and k2 != 0",
         ops=_DIVS, ordered=True, **_COMBINE),
    rule("where_add_chain_combine", "(y + where(c, k1, f)) + where(c, k2, ff) -> "
         "y + where(c, k1 + k2, f + ff)", f"not is_float(y) and {_NO_INV}", **_COMBINE,
         note="not floats: (y + a) + b is not y + (a + b) when they round"),
    rule("where_add_chain_combine_false", "(y + where(c, t, k1)) + where(c, tt, k2) -> "
         "y + where(c, t + tt, k1 + k2)",
         "not is_float(y) and not is_invalid(t) and not is_invalid(tt)", **_COMBINE),
    rule("where_combine_consts", "op(where(c, k1, k2), where(c, k3, k4)) -> "
         "where(c, op(k1, k3), op(k2, k4))", _LIVE_COND,
         ops=(Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.MIN), group=G_DCE,
         baseline_reason="e-graph only: the e-graph's default form of "
         "where_alu_combine (all four branches constant), which the ordered matcher runs "
         "first"),
    rule("where_const_operand", "op(where(c, k1, k2), k3) -> where(c, op(k1, k3), op(k2, k3))",
         _LIVE_COND, ops=(Ops.ADD, Ops.MUL), group=G_DCE),
    # a ladder of three constants (a quotient of three values, divmod's bucket rules)
    # times or plus a constant: the constant goes into every rung, one op less
    rule("where_ladder_const_operand", "op(where(c, k1, where(d, k2, k4)), k3) -> "
         "where(c, op(k1, k3), where(d, op(k2, k3), op(k4, k3)))",
         f"{_LIVE_COND} and vmin(d) == 0 and vmax(d) == 1", ops=(Ops.ADD, Ops.MUL),
         group=G_DCE),
    py(Rule("where_gate_given_valid", "WHERE(v, x, Inv) -> WHERE(v, x', Inv) with x' = x "
            "simplified assuming v (bounds of v's clauses); -> Inv when v never holds",
            UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("x"),
                                 UPat((Ops.INVALID, Ops.CAST), name="i", pred=is_invalid)),
                 name="w"),
            build=_gate_build, guard=lambda c, x: _given_valid(c, x) is not None,
            group=G_DCE),
       "absent", "the e-graph's context pass (where_valid_context) simplifies x under the "
       "bounds its condition implies, over e-classes"),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    *sum_pyrules(SUM_RULES, G_DCE),
    PyRule("where_valid_context", "where(c, x, Inv) -> where(c, x', Inv) with x' = x "
           "simplified under the bounds c implies", G_DCE, "context")])
