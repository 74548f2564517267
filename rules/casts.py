"""Cast folding and cast pushing into WHERE (docs/rules.md, seed 000 §6).

``can_safe_cast(src, dst)`` (eqsat.ir.dtype) holds when ``dst`` preserves every
value of ``src``. ``CAST(CAST(x, a), b)`` folds only through an ``a`` that
keeps every value ``x`` can take: ``CAST(CAST(x, i8), i64)`` with ``x: i64``
stays (the i8 truncation is observable).
"""

from __future__ import annotations

from eqsat.ir.pattern import UPat
from rules.lang import FOLD, baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

_X = UPat.var("x")


G = "cast_dsl_patterns"
GW = "cast_where_dsl_patterns"
_SRC_DT = ("reads the dtype of the cast's operand, which no e-graph constructor of the "
           "pattern carries (a class's e-nodes of every op: the dtype is a field of each)")

_EXACT = ("A holds every value of x's dtype exactly, and a conversion reads only the "
          "value")

LAWS = [
    rule("cast_const", "cast(c1, T) -> cast(c1, T)", vector="any", group=G, native=FOLD,
         egraph_nonint=True, note="C's conversion; an undefined one is not folded"),
    rule("cast_noop", "cast(x, T) -> x", "dtype(x) == T", group=G, native=_SRC_DT),
    rule("bitcast_noop", "bitcast(x, T) -> x", "dtype(x) == T", group=G, native=_SRC_DT),
    rule("bitcast_const", "bitcast(c1, T) -> bitcast(c1, T)", vector="any", group=G,
         native=FOLD, egraph_nonint=True, note="the bits of c1 read as T (same size)"),
    rule("bitcast_bitcast_back", "bitcast(bitcast(x, A), B) -> x",
         "dtype(x) == B and not is_float(x) and not is_float(A)", group=G, native=_SRC_DT,
         note="a bitcast keeps every bit: back to x's dtype is x (integers only: the "
         "proof's floats have no NaN payloads to carry the bits through)"),
    rule("cast_cast_roundtrip", "cast(cast(x, A), B) -> x", "dtype(x) == B and "
         "safe_cast(dtype(x), A)", group=G, native=_SRC_DT),
    rule("cast_cast_widen", "cast(cast(x, A), B) -> cast(x, B)",
         "safe_cast(dtype(x), A) and not is_float(A)", group=G, native=_SRC_DT),
    rule("cast_cast_widen_float", "cast(cast(x, A), B) -> cast(x, B)",
         "safe_cast(dtype(x), A) and is_float(A) and not is_index(B)", group=G,
         native=_SRC_DT, width_generic=_EXACT,
         note="not into index through a float: z3 cannot follow a float's value into an "
              "unbounded integer, so the rule is not run there unproven"),
    rule("cast_cast_in_range", "cast(cast(x, A), B) -> cast(x, B)",
         "not is_float(x) and is_int(A) and vmin(x) >= dmin(A) and vmax(x) <= dmax(A)",
         group=G, note="integers (and bools): A holds every value x takes"),
    rule("cast_into_where", "cast(where(s, a, b), T) -> where(s, cast(a, T), cast(b, T))",
         "not is_invalid(a) and not is_invalid(b)", group=GW),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
