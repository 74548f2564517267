"""Invalid propagation and dead loads/stores (docs/rules.md, seed 000 §13).

``WHERE(valid, idx, Invalid)`` marks a padded index. These rules run first
(before ``x*0 -> 0`` and friends) so arithmetic on a padded index keeps its
validity: ``0 * WHERE(c, x, Inv) -> WHERE(c, 0*x, Inv) -> WHERE(c, 0, Inv)``.

Invalid propagates through every op (eqsat.ir.interp), comparisons included,
and two expressions are equal only where both are Invalid or both have the
same value. Two rows of seed 000 are therefore changed to keep that equivalence:

* ``cmp(WHERE(c, x, Inv), y)``: seed 000 drops the Invalid (``-> cmp(x, y)``,
  "gated downstream"), which is only right when every use is gated by ``c``
  again. Here the comparison moves inside: ``-> WHERE(c, cmp(x, y), Inv)``
  (tinygrad's newer form), and a WHERE whose condition is such a gated bool
  moves out too, so the gates merge with the others.
* ``WHERE(c1, WHERE(c2, x, Inv), y) -> WHERE(c1 & c2, x, y)`` is left out:
  where ``c1 & !c2`` holds it turns an Invalid index (a load that reads
  nothing) into the valid index ``y``. The ``y = Inv`` case is kept
  (``invalid_where_merge``).

A bare Invalid absorbs an index operation on either side (seed 000: left only;
both are exact under the interpreter's semantics). A non-index Invalid is
written ``CAST(Invalid, T)`` (the text format's ``(invalid)`` is an index), so
``WHERE(c, CAST(x, i32), CAST(Invalid, i32))`` keeps one dtype in its branches.
"""

from __future__ import annotations

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import by_group, const_is, invalid_like, is_invalid
from rules.computed import PyRule, bridge
from rules.native import INVALID_LEAF, ERule, Q, R

__all__ = ["GROUPS", "INVALID_PUSH_OPS"]

# an Invalid: (invalid), or its cast to a non-index dtype (see rules.common.invalid_like)
_INV = UPat((Ops.INVALID, Ops.CAST), name="i", pred=is_invalid)
# the 13 binary ops of seed 000 §13 (all non-comparison binaries of this IR except MULHI)
INVALID_PUSH_OPS = tuple(GroupOp.Binary - GroupOp.Comparison - {Ops.MULHI})


def _gate(c: str = "c", x: str = "x") -> UPat:
    """``WHERE(c, x, Invalid)``."""
    return UPat(Ops.WHERE, src=(UPat.var(c), UPat.var(x), _INV))


def _where(c: UOp, x: UOp, i: UOp | None = None) -> UOp:
    """``WHERE(c, x, Invalid)`` with the Invalid in ``x``'s dtype (``i``, the matched
    Invalid, is not reused: its dtype may differ)."""
    return UOp(Ops.WHERE, x.dtype, (c, x, invalid_like(x.dtype)))


G = "propagate_invalid"
propagate_invalid = [
    Rule("invalid_where_merge", "WHERE(c1, WHERE(c2, x, Inv), Inv) -> WHERE(c1 & c2, x, Inv)",
         UPat(Ops.WHERE, src=(UPat.var("c1"), _gate("c2"), _INV)),
         build=lambda c1, c2, x, i: _where(c1 & c2, x, i)),
    Rule("invalid_into_cast", "CAST(WHERE(c, x, Inv), T) -> WHERE(c, CAST(x, T), Inv)",
         UPat(Ops.CAST, src=(_gate(),), name="cast"),
         build=lambda c, x, i, cast: _where(c, x.cast(cast.dtype), i)),
    Rule("invalid_into_unary", "u(WHERE(c, x, Inv)) -> WHERE(c, u(x), Inv) for unary u",
         UPat(tuple(GroupOp.Unary), src=(_gate(),), name="alu"),
         build=lambda c, x, i, alu: _where(c, x.alu(alu.op), i)),
    Rule("invalid_into_binary_left", "WHERE(c, x, Inv) op y -> WHERE(c, x op y, Inv) "
         "(13 non-comparison binary ops)",
         UPat(INVALID_PUSH_OPS, src=(_gate(), UPat.var("y")), name="alu"),
         build=lambda c, x, y, i, alu: _where(c, x.alu(alu.op, y), i)),
    Rule("invalid_into_binary_right", "y op WHERE(c, x, Inv) -> WHERE(c, y op x, Inv) "
         "(13 non-comparison binary ops)",
         UPat(INVALID_PUSH_OPS, src=(UPat.var("y"), _gate()), name="alu"),
         build=lambda c, x, y, i, alu: _where(c, y.alu(alu.op, x), i)),
    Rule("invalid_into_cmp_left", "WHERE(c, x, Inv) <cmp> y -> WHERE(c, x <cmp> y, Inv)",
         UPat(tuple(GroupOp.Comparison), src=(_gate(), UPat.var("y")), name="alu"),
         build=lambda c, x, y, i, alu: _where(c, x.alu(alu.op, y), i)),
    Rule("invalid_into_cmp_right", "y <cmp> WHERE(c, x, Inv) -> WHERE(c, y <cmp> x, Inv)",
         UPat(tuple(GroupOp.Comparison), src=(UPat.var("y"), _gate()), name="alu"),
         build=lambda c, x, y, i, alu: _where(c, y.alu(alu.op, x), i)),
    Rule("invalid_into_where_cond", "WHERE(WHERE(c, b, Inv), t, f) -> "
         "WHERE(c, WHERE(b, t, f), Inv)",
         UPat(Ops.WHERE, src=(_gate("c", "b"), UPat.var("t"), UPat.var("f"))),
         build=lambda c, b, t, f: _where(c, UOp(Ops.WHERE, t.dtype, (b, t, f)))),
    Rule("invalid_bare_left", "Invalid op y -> Invalid for index y",
         UPat(INVALID_PUSH_OPS, src=(UPat(Ops.INVALID, name="i"), UPat.var("y"))),
         build=lambda i: i, guard=lambda y: y.dtype == dtypes.index),
    Rule("invalid_bare_right", "y op Invalid -> Invalid for index y",
         UPat(INVALID_PUSH_OPS, src=(UPat.var("y"), UPat(Ops.INVALID, name="i"))),
         build=lambda i: i, guard=lambda y: y.dtype == dtypes.index),
]


def _zero_of(ld: UOp) -> UOp:
    return UOp.const(ld.dtype, 0)


def _noop() -> UOp:
    return UOp(Ops.NOOP)


def _inv_index(name: str = "idx") -> UPat:
    return UPat(Ops.INDEX, src=(UPat.var("buf"), UPat(Ops.INVALID)), name=name, any_len=True)


def _bool_gate(v: bool) -> UPat:
    return UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"),
                                UPat(Ops.CONST, pred=lambda u: const_is(u, v))), name="ix")


G_LS = "fold_invalid_load_store"
fold_invalid_load_store = [
    Rule("load_invalid_index", "LOAD(INDEX(buf, Invalid)) -> 0",
         UPat(Ops.LOAD, src=(_inv_index(),), name="ld"), build=_zero_of),
    Rule("load_alt_invalid_index", "LOAD(INDEX(buf, Invalid), alt) -> alt",
         UPat(Ops.LOAD, src=(_inv_index(), UPat.var("alt"))), build=lambda alt: alt),
    Rule("load_cast_invalid_index", "LOAD(CAST(INDEX(buf, Invalid))) -> 0",
         UPat(Ops.LOAD, src=(UPat(Ops.CAST, src=(_inv_index(),)),), name="ld"),
         build=_zero_of),
    Rule("store_invalid_index", "STORE(INDEX(buf, Invalid), v) -> NOOP",
         UPat(Ops.STORE, src=(_inv_index(), UPat.var())), build=_noop),
    Rule("store_cast_invalid_index", "STORE(CAST(INDEX(buf, Invalid)), v) -> NOOP",
         UPat(Ops.STORE, src=(UPat(Ops.CAST, src=(_inv_index(),)), UPat.var())), build=_noop),
    Rule("index_gate_true", "INDEX(buf, idx, true) -> INDEX(buf, idx)",
         _bool_gate(True), build=lambda ix, buf, idx: ix.replace(src=(buf, idx))),
    Rule("load_gate_false", "LOAD(INDEX(buf, idx, false)) -> 0",
         UPat(Ops.LOAD, src=(_bool_gate(False),), name="ld"), build=_zero_of),
    Rule("load_alt_gate_false", "LOAD(INDEX(buf, idx, false), alt) -> alt",
         UPat(Ops.LOAD, src=(_bool_gate(False), UPat.var("alt"))), build=lambda alt: alt),
    Rule("store_gate_false", "STORE(INDEX(buf, idx, false), v) -> NOOP",
         UPat(Ops.STORE, src=(_bool_gate(False), UPat.var())), build=_noop),
]

GROUPS: dict[str, list[Rule]] = {G: propagate_invalid, G_LS: fold_invalid_load_store}
for _g, _rs in GROUPS.items():
    for _r in _rs:
        _r.group = _g


# ---- e-graph rules ------------------------------------------------------------
# Native egglog rewrites (ERule: each guard reads the e-graph's lo/hi and Def analyses) and
# computed rewrites (PyRule, applied by eqsat.engines.egraph.computed) of this family, by group;
# rules.list_rulesets() and the e-graph engine read EGRAPH.

#: opt-in: the stepwise lifting of where(c, x, Invalid) through every op (grows fast)
_E_LIFT_STEPWISE = "propagate_invalid_stepwise"
_E_PROPAGATE_INVALID = "propagate_invalid"

_EG: list[ERule | PyRule] = []
_eg = _EG.extend

# ---- invalid ---------------------------------------------------------------------------
_eg(R("where_invalid_merge", "where(c1, where(c2, x, Inv), Inv) -> where(c1 & c2, x, Inv)",
      _E_PROPAGATE_INVALID, "(Where dt c1 (Where dt c2 x (Leaf \"INVALID\" dt a)) "
      "(Leaf \"INVALID\" dt a))", "(Where dt (And \"bool\" c1 c2) x (Leaf \"INVALID\" dt a))"))

for _e_c in ("Add", "Sub", "Mul", "Idiv", "Mod", "Max", "Min", "And", "Or", "Xor", "Shl", "Shr",
           "Lt", "Le", "Gt", "Ge", "Eq", "Ne"):
    _e_l = _e_c.lower()
    _eg(Q(f"{_e_l}_where_invalid_lhs",
          f"{_e_l}(where(c, x, Inv), y) -> where(c, {_e_l}(x, y), Inv)",
          _E_LIFT_STEPWISE, f"(= e ({_e_c} dt (Where dw c x {INVALID_LEAF}) y))",
          f"(union e (Where dt c ({_e_c} dt x y) {INVALID_LEAF}))"))
    _eg(Q(f"{_e_l}_where_invalid_rhs",
          f"{_e_l}(y, where(c, x, Inv)) -> where(c, {_e_l}(y, x), Inv)",
          _E_LIFT_STEPWISE, f"(= e ({_e_c} dt y (Where dw c x {INVALID_LEAF})))",
          f"(union e (Where dt c ({_e_c} dt y x) {INVALID_LEAF}))"))

for _e_c in ("Neg", "Not", "Cast"):
    _e_l = _e_c.lower()
    _eg(Q(f"{_e_l}_where_invalid", f"{_e_l}(where(c, x, Inv)) -> where(c, {_e_l}(x), Inv)",
          _E_LIFT_STEPWISE, f"(= e ({_e_c} dt (Where dw c x {INVALID_LEAF})))",
          f"(union e (Where dt c ({_e_c} dt x) {INVALID_LEAF}))"))

_eg(Q("where_cond_invalid", "where(where(c, b, Inv), t, f) -> where(c, where(b, t, f), Inv)",
      _E_LIFT_STEPWISE, f"(= e (Where dt (Where dw c b {INVALID_LEAF}) t f))",
      f"(union e (Where dt c (Where dt b t f) {INVALID_LEAF}))"))

_eg([PyRule("lift_invalid", "op(..where(c, x, Inv)..) -> where(c & .., op(..x..), Inv): every "
           "Invalid guard of a term lifted to its top in one step", "propagate_invalid", "lift")])

EGRAPH: dict[str, list[ERule | PyRule]] = by_group(_EG)

# the load/store of an Invalid index: baseline rules applied to e-nodes (no native twin)

EGRAPH[G_LS] = bridge(fold_invalid_load_store, G_LS)
