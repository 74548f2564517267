"""Floor division rules (rules/floordiv.py, docs/rules.md): one line per case.

A rewrite row is (rule, input, what the ordered matcher gives); the e-graph runs the
same rows with its floor group only and must fire the rule, stay equivalent and cost no
more than that. Blocked rows keep what a guard refuses.
"""

from __future__ import annotations

import pytest

import eqsat
from eqsat import parse, to_sexpr
from eqsat.ir.equiv import check_equivalent
from extraction.cost import reference_cost
from rules.lang import LAWS_BY_NAME
from tests.rules._cases import blocked_test, rewrite_test

X = "(var x -20 20)"
W = "(var w -9 9)"
V = "(var w 0 9)"
YN = "(var y -5 -1)"    # never zero, negative

POSITIVE = [
    ("floordiv_to_idiv", "(floordiv (var p 0 30) 7)",
     "(idiv (var p 0 30) 7)"),
    ("floordiv_to_idiv", "(floordiv (var n -30 0) -7)",
     "(idiv (var n -30 0) -7)"),
    ("floormod_to_mod", "(floormod (var p 0 30) (var y 1 5))",
     "(mod (var p 0 30) (var y 1 5))"),
    ("floormod_to_mod", "(floormod (var n -30 0) -7)",
     "(mod (var n -30 0) -7)"),
    ("floordiv_one", f"(floordiv {X} 1)",
     f"{X}"),
    ("floormod_one", f"(floormod {X} 1)",
     "0"),
    ("floordiv_neg_one", f"(floordiv {X} -1)",
     f"(neg {X})"),
    ("floormod_neg_one", f"(floormod {X} -1)",
     "0"),
    ("floormod_in_range", "(floormod (var x -6 0) -7)",
     "(var x -6 0)"),
    ("floordiv_in_range", "(floordiv (var x -6 0) -7)",
     "0"),
    ("floordiv_below_zero", "(floordiv (var x -7 -1) 7)",
     "-1"),
    ("floormod_below_zero", "(floormod (var x -7 -1) 7)",
     "(add (var x -7 -1) 7)"),
    ("floor_recombine", f"(add (floormod {X} 7) (mul (floordiv {X} 7) 7))",
     f"{X}"),
    ("floor_recombine", f"(add (floormod {X} {YN}) (mul (floordiv {X} {YN}) {YN}))",
     f"{X}"),
    ("floor_recombine_add", f"(add (add {V} (floormod {X} 7)) (mul (floordiv {X} 7) 7))",
     f"(add {X} (var w 0 9))"),
    ("floor_recombine_add_rev", f"(add (add {V} (mul (floordiv {X} 7) 7)) (floormod {X} 7))",
     f"(add {X} (var w 0 9))"),
    ("floor_recombine_scaled", f"(add (mul (floormod {X} 6) 2) (mul (floordiv {X} 6) 12))",
     f"(mul {X} 2)"),
    ("floor_recombine_nested", f"(add (floormod (floordiv {X} 3) 4) (mul (floordiv {X} 12) 4))",
     f"(floordiv {X} 3)"),
    ("floordiv_floordiv", f"(floordiv (floordiv {X} 3) 4)",
     f"(floordiv {X} 12)"),
    ("floordiv_floordiv_var", f"(floordiv (floordiv {X} (var y 1 5)) (var z 2 4))",
     f"(floordiv {X} (mul (var y 1 5) (var z 2 4)))"),
    ("floordiv_offset_floordiv", f"(floordiv (add (floordiv {X} 3) 5) 4)",
     f"(add (floordiv (add {X} 3) 12) 1)"),
    ("floordiv_of_floormod", f"(floordiv (floormod {X} 12) 4)",
     f"(floormod (floordiv {X} 4) 3)"),
    ("floormod_of_floormod", f"(floormod (floormod {X} 12) 4)",
     f"(floormod {X} 4)"),
    ("floormod_drop_multiple", f"(floormod (add {X} (mul {W} 8)) 4)",
     f"(floormod {X} 4)"),
    ("floordiv_split_multiple", f"(floordiv (add {X} (mul {W} 8)) 4)",
     f"(add (floordiv {X} 4) (mul {W} 2))"),
    ("floormod_multiple", f"(floormod (mul {X} 8) 4)",
     "0"),
    ("floordiv_multiple", f"(floordiv (mul {X} 8) 4)",
     f"(mul {X} 2)"),
    ("floormod_const_offset", f"(floormod (add {X} 13) 4)",
     f"(floormod (add {X} 1) 4)"),
    ("floordiv_const_offset", f"(floordiv (add {X} -13) 4)",
     f"(add (floordiv (add {X} 3) 4) -4)"),
    ("floordiv_cancel_factor", f"(floordiv (mul {X} 3) 12)",
     f"(floordiv {X} 4)"),
    ("floormod_cancel_factor", f"(floormod (mul {X} 3) 12)",
     f"(mul (floormod {X} 4) 3)"),
    ("floordiv_lt", f"(lt (floordiv {X} 4) 3)",
     f"(lt {X} 12)"),
    ("floordiv_gt", f"(lt 2 (floordiv {X} 4))",
     f"(lt 11 {X})"),
    ("const_fold_floordiv", "(floordiv -7 2)",
     "-4"),
    ("const_fold_floormod", "(floormod -7 2)",
     "1"),
    ("const_fold_floormod", "(floormod (const i32 7) (const i32 -2))",
     "(const i32 -1)"),
]

BLOCKED = [
    # a divisor that may be 0: no recombination, no fold
    ("floor_recombine", f"(add (floormod {X} (var y -2 2)) (mul (floordiv {X} (var y -2 2)) "
     "(var y -2 2)))", f"(add (floormod {X} (var y -2 2)) (mul (floordiv {X} (var y -2 2)) "
     "(var y -2 2)))"),
    ("floormod_in_range", "(floormod (var x 0 9) (var y 0 20))",
     "(floormod (var x 0 9) (var y 0 20))"),
    # signs not proven alike: the floor op stays
    ("floordiv_to_idiv", f"(floordiv {X} 7)", f"(floordiv {X} 7)"),
    ("floormod_to_mod", "(floormod (var p 0 30) (var y -5 5))",
     "(floormod (var p 0 30) (var y -5 5))"),
    ("floordiv_to_idiv", "(floordiv (var n -30 0) 7)", "(floordiv (var n -30 0) 7)"),
    # the ordered matcher does not shift a dividend (e-graph only: one add more)
    ("floormod_shift_to_mod", f"(floormod {X} 7)", f"(floormod {X} 7)"),
    # nested divisions of a divisor that may be negative
    ("floordiv_floordiv", f"(floordiv (floordiv {X} 3) -4)",
     f"(floordiv (floordiv {X} 3) -4)"),
    ("floordiv_floordiv_var", f"(floordiv (floordiv {X} (var y -1 5)) (var z 2 4))",
     f"(floordiv (floordiv {X} (var y -1 5)) (var z 2 4))"),
    # the merged divisor past the dividend's span (48 > 40): the quotient takes two values
    ("floordiv_offset_floordiv", f"(floordiv (add (floordiv {X} 8) 1) 6)",
     f"(floordiv (add (floordiv {X} 8) 1) 6)"),
    # not a multiple: the term stays
    ("floormod_drop_multiple", f"(floormod (add {X} (mul {W} 6)) 4)",
     f"(floormod (add {X} (mul {W} 6)) 4)"),
    # an offset already below the divisor
    ("floormod_const_offset", f"(floormod (add {X} 3) 4)", f"(floormod (add {X} 3) 4)"),
    # fixed widths: k*c could wrap
    ("floordiv_lt", "(lt (floordiv (cast i8 (var x -20 20)) (const i8 4)) (const i8 3))",
     "(lt (floordiv (cast i8 (var x -20 20)) (const i8 4)) (const i8 3))"),
]

test_rewrites = rewrite_test(POSITIVE)
test_blocked = blocked_test(BLOCKED)

#: the e-graph's groups for its rows: the floor rules and the constant folds
_EGRAPH_GROUPS = ["floor_division_patterns", "constant_folding_dsl_patterns"]
#: rows whose rule the e-graph reaches another way (a fold of the class's interval)
_FOLDED = {"floordiv_in_range", "floordiv_below_zero", "floormod_one", "floormod_neg_one",
           "floormod_multiple", "const_fold_floordiv", "const_fold_floormod"}


@pytest.mark.parametrize("rule,text,want", POSITIVE)
def test_egraph_rows(rule: str, text: str, want: str) -> None:
    """A rule the e-graph runs fires with the floor group alone; one it runs on other
    dtypes only (``egraph_dtypes``) is matched by the default rule sets' result."""
    g = parse(text)
    law = LAWS_BY_NAME.get(rule)
    absent = law is not None and (law.egraph_absent is not None or law.egraph_dtypes is not None)
    # keep_egraph: the search runs even where the baseline's rewrite already costs 0
    res = eqsat.optimize(g, engine="egraph", rulesets=None if absent else _EGRAPH_GROUPS,
                         cost_model="reference", keep_egraph=True)
    fired = any(k == rule or k.startswith(rule + "~") for k in res.stats["matches"])
    assert fired or absent or rule in _FOLDED, \
        f"{rule} did not fire: {sorted(res.stats['matches'])}"
    assert check_equivalent(g, res.graph)
    assert reference_cost(res.graph) <= reference_cost(parse(want)), to_sexpr(res.graph)


@pytest.mark.parametrize("text,want", [
    # a dividend that may be negative shifted up to C's division: the core then sees it
    (f"(floormod (add {X} 2) 4)", 26),
    # the recombination with a negative dividend, where C's needs a sign condition
    (f"(add (floormod {X} 7) (mul (floordiv {X} 7) 7))", 0),
    # floor semantics: (2a + 40b - 40) % 40 is 2a for a in [0, 19]
    ("(floormod (add (mul (var a 0 19) 2) (add (mul (var b 0 9) 40) -40)) 40)", 4),
    # pixel_shuffle's index: nested floor divisions, then a ladder of two buckets that
    # shares its quotient (a DAG choice)
    ("(floormod (floordiv (floordiv (floordiv (range 0 72) 2) 3) 2) 3)", 28),
    # tiny_cnn's: a floor remainder of a dividend just below 0 shifted up to C's, whose
    # two buckets share the dividend
    ("(floormod (add (add (add (add (range 4 3) (mul (range 2 3) 6)) (mul 36 (range 1 8))) "
     "(mul 288 (range 0 2))) -7) 576)", 19),
])
def test_egraph_default_rules(text: str, want: int) -> None:
    g = parse(text)
    res = eqsat.optimize(g, engine="egraph", cost_model="reference")
    assert check_equivalent(g, res.graph)
    assert reference_cost(res.graph) <= want, to_sexpr(res.graph)
