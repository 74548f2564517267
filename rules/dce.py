"""Dead ranges, reductions, END and AFTER (docs/rules.md, seed 000 §14).

A loop runs its body once per value of its ranges, so:

* a RANGE of one iteration (``RANGE(1)``) is the constant 0, and an END or
  REDUCE then drops it from its range list (and unwraps when none is left);
* a RANGE with no iteration (``end <= 0``) makes the END that closes it a
  NOOP and the REDUCE over it its identity element.

Deviation from seed 000, on purpose: seed 000 also folds an empty RANGE to
``CONST(0)`` and then filters it out of the END. Under a bottom-up rewriter
the RANGE is rewritten before its END is seen, and the END would then run its
body once instead of zero times. Here the empty range stays a RANGE and the
END/REDUCE rules see it.
"""

from __future__ import annotations

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat
from eqsat.ir.uop import UOp, drop_folded_ranges
from rules.common import make_const
from rules.lang import baseline_groups, egraph_rules, laws_by_group, py

__all__ = ["GROUPS", "EGRAPH", "LAWS", "is_empty_range", "reduce_identity"]


def is_empty_range(r: UOp) -> bool:
    """A RANGE that runs zero times (its end is never above 0)."""
    return r.op is Ops.RANGE and r.src[0].vmax <= 0


def reduce_identity(r: UOp) -> UOp | None:
    """The identity of REDUCE ``r``'s op in its dtype (None if not representable)."""
    dt = r.dtype
    if r.arg is Ops.ADD:
        return make_const(dt, 0)
    if r.arg is Ops.MUL:
        return make_const(dt, 1)
    if r.arg is Ops.MAX:
        return make_const(dt, dt.scalar().min) if not dt.is_index else None
    if r.arg is Ops.MIN:
        return make_const(dt, dt.scalar().max) if not dt.is_index else None
    return None


def _folded(rs: tuple[UOp, ...]) -> bool:
    return any(r.op is Ops.CONST for r in rs)


G_LOOP = "dead_loop_patterns"
dead_loop_patterns = [
    Rule("range_single_iteration", "RANGE(1) -> 0 (vmin == vmax: one value)",
         UPat(Ops.RANGE, src=(UPat(Ops.CONST),), name="r"),
         build=lambda r: UOp.const(r.dtype, 0), guard=lambda r: r.src[0].arg == 1),
    Rule("end_empty_range", "END(x, ..., r, ...) -> NOOP when range r runs zero times",
         UPat(Ops.END, name="e"), build=lambda e: UOp(Ops.NOOP),
         guard=lambda e: any(is_empty_range(r) for r in e.src[1:])),
    Rule("end_drop_folded_ranges", "END(x, r1, 0, r2) -> END(x, r1, r2); END(x) -> x "
         "(a range folded to a constant ran once)",
         UPat(Ops.END, name="e"), build=lambda e: drop_folded_ranges(e),
         guard=lambda e: _folded(e.src[1:])),
    Rule("end_of_noop", "END(NOOP, ...) -> NOOP",
         UPat(Ops.END, name="e"), build=lambda e: e.src[0],
         guard=lambda e: e.src[0].op is Ops.NOOP),
    Rule("reduce_empty_range", "REDUCE(op, x, ..., r, ...) -> identity(op) when r runs zero "
         "times",
         UPat(Ops.REDUCE, name="rd"), build=lambda rd: reduce_identity(rd),
         guard=lambda rd: any(is_empty_range(r) for r in rd.src[1:])
         and reduce_identity(rd) is not None),
    Rule("reduce_drop_folded_ranges", "REDUCE(op, x, r1, 0) -> REDUCE(op, x, r1); "
         "REDUCE(op, x) -> x (a float sum: x + 0.0, it folds from +0.0)",
         UPat(Ops.REDUCE, name="rd"), build=lambda rd: drop_folded_ranges(rd),
         guard=lambda rd: _folded(rd.src[1:])),
    Rule("sink_drop_noop", "SINK(a, NOOP, b) -> SINK(a, b)",
         UPat(Ops.SINK, name="s"),
         build=lambda s: s.replace(src=tuple(x for x in s.src if x.op is not Ops.NOOP)),
         guard=lambda s: any(x.op is Ops.NOOP for x in s.src)),
]

G_AFTER = "after_simplification_patterns"
after_simplification_patterns = [
    Rule("after_no_deps", "AFTER(x) -> x (no dependency, no ordering)",
         UPat(Ops.AFTER, src=(UPat.var("x"),)), build=lambda x: x),
    Rule("after_drop_noop", "AFTER(x, NOOP, d) -> AFTER(x, d)",
         UPat(Ops.AFTER, name="a"),
         build=lambda a: a.replace(src=(a.src[0],) + tuple(d for d in a.src[1:]
                                                          if d.op is not Ops.NOOP)),
         guard=lambda a: any(d.op is Ops.NOOP for d in a.src[1:])),
]

for _g, _rs in ((G_LOOP, dead_loop_patterns), (G_AFTER, after_simplification_patterns)):
    for _r in _rs:
        _r.group = _g

_LOOPS = ("loops and effects (END, REDUCE, SINK, AFTER) have a list of sources, the "
          "e-graph's Cons lists, which the rule language does not write: matched from Python")
LAWS = [py(r, "ematch", _LOOPS) for r in dead_loop_patterns + after_simplification_patterns]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))


