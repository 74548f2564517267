"""GEP pushing (docs/rules.md, seed 000 §16): only in ``symbolic()``, not ``symbolic_simple()``.

GEP selects lanes of a vector. These rules push it toward the vector's
source so scalar rules apply after devectorization. Pushing through ALU ops
(and WHERE, MULACC) is restricted to Index dtype: without the guard, GEP
pushing together with devectorization grows graphs exponentially on
high-dimensional kernels (tinygrad symbolic.py has the same guard).
"""

from __future__ import annotations

from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import invalid_like
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py

__all__ = ["GROUPS", "EGRAPH", "LAWS"]


def _gep(x: UOp, idx: tuple[int, ...]) -> UOp:
    return x.gep(*idx)


def _lanes(u: UOp) -> int:
    return u.dtype.count


def _vectorize_pick(g: UOp, v: UOp) -> UOp:
    if len(g.arg) == 1:
        return v.src[g.arg[0]]
    return UOp(Ops.VECTORIZE, g.dtype, tuple(v.src[i] for i in g.arg))


def _vconst_pick(g: UOp, c: UOp) -> UOp:
    vals = tuple(c.arg[i] for i in g.arg)
    return UOp.const(g.dtype, vals[0]) if len(vals) == 1 else UOp.vconst(g.dtype.scalar(), vals)


def _push(g: UOp, alu: UOp) -> UOp:
    n = len(g.arg)
    srcs = tuple(s.gep(*g.arg) if s.dtype.count > 1 else s for s in alu.src)
    return UOp(alu.op, alu.dtype.scalar().vec(n), srcs, alu.arg)


def _index_lanes(g: UOp, alu: UOp) -> bool:
    return (g.dtype.scalar().is_index and not g.dtype.ptr and not alu.dtype.ptr
            and all(s.dtype.count == alu.dtype.count for s in alu.src))


def _in_bounds(g: UOp, x: UOp) -> bool:
    return all(0 <= i < x.dtype.count for i in g.arg)


def _cat_pick(g: UOp, cat: UOp) -> UOp | None:
    parts = []
    for i in g.arg:
        for s in cat.src:
            n = s.dtype.count
            if i < n:
                parts.append(s if n == 1 else s.gep(i))
                break
            i -= n
        else:
            return None
    if len(parts) == 1:
        return parts[0]
    return UOp(Ops.VECTORIZE, g.dtype, tuple(parts))


def _cast_push(g: UOp, c: UOp) -> UOp:
    inner = c.src[0].gep(*g.arg)
    return UOp(c.op, c.dtype.scalar().vec(len(g.arg)), (inner,))


def _regather_ok(v: UOp) -> bool:
    if not v.src or any(s.op is not Ops.GEP or len(s.arg) != 1 for s in v.src):
        return False
    x = v.src[0].src[0]
    return all(s.src[0] is x for s in v.src) and not x.dtype.ptr


_ALU_PUSH = tuple(GroupOp.ALU)

G = "gep_pushing_patterns"
gep_pushing_patterns = [
    Rule("gep_of_gep", "GEP(GEP(x, inner), outer) -> GEP(x, inner[outer])",
         UPat(Ops.GEP, src=(UPat(Ops.GEP, name="g2"),), name="g1"),
         build=lambda g1, g2: _gep(g2.src[0], tuple(g2.arg[i] for i in g1.arg)),
         guard=lambda g1, g2: all(0 <= i < len(g2.arg) for i in g1.arg)),
    Rule("gep_of_broadcast", "GEP(VECTORIZE(x, x, ..., x), [i]) -> x",
         UPat(Ops.GEP, src=(UPat(Ops.VECTORIZE, name="v"),), name="g"),
         build=lambda v: v.src[0],
         guard=lambda g, v: len(g.arg) == 1 and all(s is v.src[0] for s in v.src)),
    Rule("gep_of_vectorize", "GEP(VECTORIZE(e0, e1, ...), [i, j]) -> e_i or VECTORIZE(e_i, e_j)",
         UPat(Ops.GEP, src=(UPat(Ops.VECTORIZE, name="v"),), name="g"),
         build=_vectorize_pick, guard=lambda g, v: all(0 <= i < len(v.src) for i in g.arg)),
    Rule("gep_of_scalar", "GEP(x, [0]) -> x for a scalar x",
         UPat(Ops.GEP, src=(UPat.var("x"),), name="g"), build=lambda x: x,
         guard=lambda g, x: _lanes(x) == 1 and g.arg == (0,) and not x.dtype.is_void),
    Rule("gep_of_const", "GEP(CONST c, idx) -> CONST c (a broadcast constant)",
         UPat(Ops.GEP, src=(UPat(Ops.CONST, name="c"),), name="g"),
         build=lambda g, c: UOp.const(g.dtype, c.arg), guard=lambda g: not g.dtype.ptr),
    Rule("gep_of_vconst", "GEP(VCONST(v0, v1, ...), [i]) -> CONST(v_i)",
         UPat(Ops.GEP, src=(UPat(Ops.VCONST, name="c"),), name="g"),
         build=_vconst_pick, guard=lambda g, c: all(0 <= i < len(c.arg) for i in g.arg)),
    Rule("gep_of_invalid", "GEP(CAST(Invalid, Tx n), idx) -> Invalid of the lanes picked "
         "(every lane of a vector Invalid is Invalid)",
         UPat(Ops.GEP, src=(UPat(Ops.CAST, src=(UPat(Ops.INVALID),), name="c"),), name="g"),
         build=lambda g: invalid_like(g.dtype),
         guard=lambda g, c: not g.dtype.ptr and _in_bounds(g, c)),
    Rule("gep_of_void", "GEP(void x, _) -> x",
         UPat(Ops.GEP, src=(UPat.var("x"),)), build=lambda x: x,
         guard=lambda x: x.dtype.is_void),
    Rule("gep_identity", "GEP(x, [0, 1, ..., n-1]) -> x for n-lane x",
         UPat(Ops.GEP, src=(UPat.var("x"),), name="g"), build=lambda x: x,
         guard=lambda g, x: not g.dtype.ptr and g.arg == tuple(range(_lanes(x)))),
    Rule("gep_through_alu", "GEP(op(a, b, ...), idx) -> op(GEP(a, idx), GEP(b, idx), ...) "
         "(Index dtype only; unary, binary, WHERE, MULACC)",
         UPat(Ops.GEP, src=(UPat(_ALU_PUSH, name="alu"),), name="g"),
         build=_push, guard=_index_lanes),
    Rule("gep_of_cat", "GEP(CAT(a<4>, b<4>), [5]) -> GEP(b, [1])",
         UPat(Ops.GEP, src=(UPat(Ops.CAT, name="cat"),), name="g"),
         build=_cat_pick, guard=lambda g, cat: not g.dtype.ptr and _cat_pick(g, cat) is not None),
    Rule("gep_of_ptrcat", "GEP(PTRCAT(a, b, c), [1, 2]) -> PTRCAT(b, c)",
         UPat(Ops.GEP, src=(UPat(Ops.PTRCAT, name="pc"),), name="g"),
         build=lambda g, pc: pc.src[g.arg[0]] if len(g.arg) == 1 else
         UOp(Ops.PTRCAT, g.dtype, tuple(pc.src[i] for i in g.arg)),
         guard=lambda g, pc: all(0 <= i < len(pc.src) for i in g.arg)),
    Rule("gep_through_cast", "GEP(CAST(x, T), idx) -> CAST(GEP(x, idx), scalar T), same for "
         "BITCAST",
         UPat(Ops.GEP, src=(UPat((Ops.CAST, Ops.BITCAST), name="c"),), name="g"),
         build=_cast_push, guard=lambda g, c: not g.dtype.ptr and c.src[0].dtype.count
         == c.dtype.count and (c.op is Ops.CAST or c.src[0].dtype.scalar().bits
                               == c.dtype.scalar().bits)),
    Rule("gep_of_unroll", "GEP(UNROLL(x, ...), idx) -> GEP(x, idx)",
         UPat(Ops.GEP, src=(UPat(Ops.UNROLL, name="u"),), name="g"),
         build=lambda g, u: u.src[0].gep(*g.arg)),
    Rule("vectorize_of_geps", "VECTORIZE(GEP(x,[i0]), GEP(x,[i1]), ...) -> GEP(x, [i0, i1, ...])",
         UPat(Ops.VECTORIZE, name="v"),
         build=lambda v: v.src[0].src[0].gep(*(s.arg[0] for s in v.src)), guard=_regather_ok),
]
for _r in gep_pushing_patterns:
    _r.group = G

LAWS = [py(r, "ematch", "lane lists are arguments (the e-graph's argument keys) and the "
           "rule computes with them: lane arithmetic in Python") for r in gep_pushing_patterns]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))


