"""The mirror images of native rewrites (``commuted``): which are kept, which are left out."""

from __future__ import annotations

import pytest

from eqsat.api import optimize
from eqsat.ir.sexpr import parse, to_sexpr
from rules.native import ERule, _same_rewrite, commuted
from tests.budgets import QUALITY

LT2 = "(And dt (Lt dt x (Cst dx c1)) (Lt dt x (Cst dx c2)))"
LT2_SWAPPED = "(And dt (Lt dt x (Cst dx c2)) (Lt dt x (Cst dx c1)))"

# a mirror image, an earlier variant, the rule's right side and guards, whether the
# mirror image rewrites every match as the earlier one does (so it is left out)
SAME: list[tuple[str, str, str, tuple[str, ...], bool]] = [
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx (min c1 c2)))", (), True),      # min commutes
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx (+ c1 c2)))", (), True),
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx (- c1 c2)))", (), False),       # - does not
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx c1))", (), False),
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx (min c1 c2)))", ("(< c1 0)",), False),
    (LT2_SWAPPED, LT2, "(Lt dt x (Cst dx (max c1 c2)))", ("(< c1 0)", "(< c2 0)"), True),
    ("(Add dt b a)", "(Add dt a b)", "(Mul dt a b)", (), True),   # b*a: the same value
    ("(Add dt b a)", "(Add dt a b)", "(Sub dt a b)", (), False),  # b-a: not
    ("(Add dt b a)", "(Add dt a b)", "(Mul dt a (Sub dt a b))", (), False),
    ("(Add dt (Mul dt y c) x)", "(Add dt x (Mul dt y c))", "x", (), False),  # not alike
]


@pytest.mark.parametrize("lhs, earlier, rhs, when, same", SAME)
def test_same_rewrite(lhs: str, earlier: str, rhs: str, when: tuple[str, ...],
                      same: bool) -> None:
    assert _same_rewrite(lhs, earlier, rhs, when) is same


@pytest.mark.parametrize("lhs, rhs, names", [
    (LT2, "(Lt dt x (Cst dx (min c1 c2)))", ["r"]),
    (LT2, "(Lt dt x (Cst dx (- c1 c2)))", ["r", "r~1"]),
    # the outer Add's mirror writes x*(d+c): left out; the inner Muls' mirrors match
    # other e-nodes and stay
    ("(Add dt (Mul dt x c) (Mul dt x d))", "(Mul dt x (Add dt c d))", ["r", "r~2", "r~3", "r~6"]),
    ("(Add dt (Mul dt x c) (Mul dt x d))", "(Mul dt x (Sub dt c d))",
     ["r", "r~1", "r~2", "r~3", "r~4", "r~5", "r~6", "r~7"]),
    ("(And dt (Not dt x) (Not dt y))", "(Not dt (Or dt x y))", ["r"]),
    ("(Add dt (Where dt c (Cst dt k1) (Cst dt k2)) (Cst dt k3))",
     "(Where dt c (Add dt (Cst dt k1) (Cst dt k3)) (Add dt (Cst dt k2) (Cst dt k3)))",
     ["r", "r~1"]),
])
def test_commuted_keeps_the_variants_that_rewrite_differently(lhs: str, rhs: str,
                                                              names: list[str]) -> None:
    assert [r.name for r in commuted(ERule("r", "identity", "group", lhs, rhs))] == names


@pytest.mark.parametrize("text, want", [
    ("(and (lt (var x 0 9) 3) (lt (var x 0 9) 5))", "(lt (var x 0 9) 3)"),
    ("(and (lt (var x 0 9) 5) (lt (var x 0 9) 3))", "(lt (var x 0 9) 3)"),
    ("(and (lt 3 (var x 0 9)) (lt 5 (var x 0 9)))", "(lt 5 (var x 0 9))"),
    ("(and (lt 5 (var x 0 9)) (lt 3 (var x 0 9)))", "(lt 5 (var x 0 9))"),
])
def test_and_absorb_fires_in_either_operand_order_with_one_rule(text: str, want: str) -> None:
    res = optimize(parse(text), engine="egraph", cost_model="reference", budget=QUALITY)
    assert to_sexpr(res.graph) == want
    assert any(k.startswith("and_absorb_") for k in res.stats["matches"])
