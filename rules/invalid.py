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
both are exact under the interpreter's semantics), and a unary op, a cast or a bitcast
of any dtype (tinygrad's ``pm_data_invalid``); a VECTORIZE of one bare Invalid in every
lane is the vector Invalid, so a GEP of it (rules/gep.py) picks Invalid lanes. A
non-index Invalid is written ``CAST(Invalid, T)`` (the text format's ``(invalid)`` is
an index), so ``WHERE(c, CAST(x, i32), CAST(Invalid, i32))`` keeps one dtype in its
branches.
"""

from __future__ import annotations

from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp
from rules.common import const_is, invalid_like
from rules.computed import PyRule
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS", "INVALID_PUSH_OPS"]

# the 13 binary ops of seed 000 §13 (all non-comparison binaries of this IR except MULHI)
INVALID_PUSH_OPS = tuple(sorted(GroupOp.Binary - GroupOp.Comparison - {Ops.MULHI},
                                key=lambda o: o.value))
_CMPS = tuple(sorted(GroupOp.Comparison, key=lambda o: o.value))
_UNARY = tuple(sorted(GroupOp.Unary, key=lambda o: o.value))

G = "propagate_invalid"
#: opt-in: the stepwise lifting of where(c, x, Invalid) through every op (grows fast);
#: the default lifts every guard of a term in one computed step (lift_invalid)
G_STEP = "propagate_invalid_stepwise"
_STEP = dict(group=G, egraph_group=G_STEP)

def _zero_of(ld: UOp) -> UOp:
    return UOp.const(ld.dtype, 0)


def _noop() -> UOp:
    return UOp(Ops.NOOP)


def _inv_index(name: str = "idx") -> UPat:
    return UPat(Ops.INDEX, src=(UPat.var("buf"), UPat(Ops.INVALID)), name=name, any_len=True)


def _bool_gate(v: bool) -> UPat:
    return UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"),
                                UPat(Ops.CONST, pred=lambda u: const_is(u, v))), name="ix")


def _lane_invalid(u: UOp) -> bool:
    """A scalar Invalid: ``(invalid)`` or its cast to a scalar dtype."""
    return u.dtype.count == 1 and (u.op is Ops.INVALID or (u.op is Ops.CAST
                                                          and u.src[0].op is Ops.INVALID))


#: a vector of Invalid lanes is the vector Invalid (tinygrad: a broadcast Invalid is Invalid)
vectorize_of_invalid = Rule(
    "vectorize_of_invalid", "VECTORIZE(Inv, Inv, ...) -> CAST(Invalid, Tx n)",
    UPat(Ops.VECTORIZE, name="v"), build=lambda v: invalid_like(v.dtype),
    guard=lambda v: bool(v.src) and _lane_invalid(v.src[0])
    and all(s is v.src[0] for s in v.src))
vectorize_of_invalid.group = G
_LANES = ("a vector's lanes are the e-graph's generic VECTORIZE node, which the rule "
          "language does not write: matched from Python")

#: why the bare Invalid's unary, cast and bitcast rules are matched from Python in the e-graph
_RARE = ("a bare Invalid under a unary op or a cast is rare (padded indices are where(c, x, "
         "Inv)): matched from Python on the e-nodes the pass visits, not as native rules, one "
         "per op and split of its dtypes, joined in every round")

G_LS = "fold_invalid_load_store"
_MEMORY = ("loads, stores and indices are the e-graph's generic nodes and the rule "
           "language has no memory ops: matched from Python")
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

for _r in fold_invalid_load_store:
    _r.group = G_LS

LAWS = [
    rule("invalid_where_merge", "where(a, where(b, x, Inv), Inv) -> where(a & b, x, Inv)",
         "never_undefined(b)", group=G,
         note="a & b evaluates b where a is false, which the input did not",
         native="the e-graph does not track where a class is undefined: b must be (a "
                "division by a possible 0 in b would be evaluated where a is false)"),
    rule("where_invalid_to_false", "where(c, Inv, x) -> where(~c, x, Inv)",
         "not is_invalid(x)", group=G,
         note="the Invalid into the false branch, where the other rules look (Morok)"),
    rule("invalid_into_cast", "cast(where(c, x, Inv), T) -> where(c, cast(x, T), Inv)", **_STEP),
    rule("invalid_into_unary", "op(where(c, x, Inv)) -> where(c, op(x), Inv)", ops=_UNARY,
         **_STEP),
    rule("invalid_into_binary_left", "op(where(c, x, Inv), y) -> where(c, op(x, y), Inv)",
         ops=INVALID_PUSH_OPS, ordered=True, **_STEP),
    rule("invalid_into_binary_right", "op(y, where(c, x, Inv)) -> where(c, op(y, x), Inv)",
         ops=INVALID_PUSH_OPS, ordered=True, **_STEP),
    rule("invalid_into_cmp_left", "op(where(c, x, Inv), y) -> where(c, op(x, y), Inv)",
         ops=_CMPS, ordered=True, **_STEP),
    rule("invalid_into_cmp_right", "op(y, where(c, x, Inv)) -> where(c, op(y, x), Inv)",
         ops=_CMPS, ordered=True, **_STEP),
    rule("invalid_into_where_cond", "where(where(c, b, Inv), t, f) -> "
         "where(c, where(b, t, f), Inv)", **_STEP),
    rule("invalid_bare_left", "op(Inv, y) -> Inv", "is_index(y)", ops=INVALID_PUSH_OPS,
         ordered=True, group=G),
    rule("invalid_bare_right", "op(y, Inv) -> Inv", "is_index(y)", ops=INVALID_PUSH_OPS,
         ordered=True, group=G),
    rule("invalid_bare_unary", "op(Inv) -> Inv", ops=_UNARY, group=G, native=_RARE),
    rule("invalid_bare_cast", "cast(Inv, T) -> Inv", group=G, native=_RARE,
         note="a typed Invalid cast again is the Invalid of the last dtype"),
    rule("invalid_bare_bitcast", "bitcast(Inv, T) -> Inv", group=G, native=_RARE),
    py(vectorize_of_invalid, "ematch", _LANES),
    *(py(r, "ematch", _MEMORY) for r in fold_invalid_load_store),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    PyRule("lift_invalid", "op(..where(c, x, Inv)..) -> where(c & .., op(..x..), Inv): every "
           "Invalid guard of a term lifted to its top in one step", G, "lift")])
