"""The decisions by bounds proven by running their code, and the bounds analysis, on
symbolic intervals (rules/proof/bounds_sym.py): shapes of each rule are proven on every
path, and an off-by-one in a rule's bound test or in an interval of the analysis fails
its obligation with a counterexample."""

from __future__ import annotations

from functools import reduce

import pytest

import eqsat.ir.bounds as bounds
import rules.compare
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from rules.proof.bounds_sym import (
    SYMBOLIC,
    UNSETTLED,
    cmp_shapes,
    fold_shapes,
    prove_shapes,
    rule_apply,
    simplex_shapes,
)
from rules.proof.python import OBLIGATIONS
from rules.proof.semantics import RLIMIT

_B = "(False, False)"  # an atom of symbolic bounds


def _pick(shapes: list, *labels: str) -> list:
    got = [(label, s) for label, s in shapes if label in labels]
    assert len(got) == len(labels), [label for label, _ in shapes][:20]
    return got


def test_the_converted_rules_have_the_symbolic_obligation() -> None:
    assert set(SYMBOLIC) == {"cmp_by_bounds", "fold_const_by_bounds", "lt_simplex"}
    for name in SYMBOLIC:
        symbolic = OBLIGATIONS[name].__qualname__.startswith("obligation")
        assert symbolic == (name not in UNSETTLED), name  # an unsettled one keeps its grid


@pytest.mark.parametrize("name, shapes, labels", [
    ("cmp_by_bounds", cmp_shapes, (f"index LT({_B}, None)", f"index EQ({_B}, {_B})",
                                   f"index ADD({_B}, (True, False)) < c",
                                   f"where(a0 < a1, a2 {_B}, a3) < c",
                                   "bool NE(a0 < a1, a2 < a3)", f"i8 ADD({_B}, None) < c")),
    ("fold_const_by_bounds", fold_shapes, ("var", f"index MAX({_B}, None)",
                                           f"i8 SUB({_B}, {_B})",
                                           "bool AND(a0 < a1, a2 < a3)")),
    ("lt_simplex", simplex_shapes, (f"v*k {_B} + r*k (False, True) < c",
                                    f"special {_B} + k {_B} < c", f"v//k {_B} + v {_B} < c")),
])
def test_shapes_are_proven_on_every_path(name: str, shapes, labels) -> None:
    out = prove_shapes(name, rule_apply(name), _pick(shapes(), *labels), "", RLIMIT)
    assert out.status == "proven", out.detail
    fired, paths = (int(w.rstrip(":")) for w in out.detail.split()[:5:4])
    assert 0 < fired < paths  # the symbolic bounds go both ways: some paths do not fire


def test_an_off_by_one_in_the_rule_fails() -> None:
    """``x < y -> true`` when ``vmax(x) <= vmin(y)`` (should be ``<``)."""
    def apply(u: UOp) -> UOp | None:
        a, b = u.src
        return UOp.const(dtypes.bool, True) if u.op is Ops.LT and a.vmax <= b.vmin else None
    out = prove_shapes("lt_off_by_one", apply,
                       _pick(cmp_shapes(), f"index LT({_B}, {_B})"), "", RLIMIT)
    assert out.status == "failed" and "counterexample" in out.detail, out.detail


def test_an_off_by_one_in_the_analysis_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ADD interval whose low end is one too high: cmp_by_bounds then folds
    ``x + y < c`` to false where ``x + y`` may be ``c - 1``."""
    add = bounds._ARITH[Ops.ADD]
    monkeypatch.setitem(bounds._ARITH, Ops.ADD, lambda a, b: (add(a, b)[0] + 1, add(a, b)[1]))
    out = prove_shapes("cmp_by_bounds", rule_apply("cmp_by_bounds"),
                       _pick(cmp_shapes(), f"index ADD({_B}, {_B}) < c"), "", RLIMIT)
    assert out.status == "failed" and "counterexample" in out.detail, out.detail


def test_an_off_by_one_in_a_coefficient_test_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """lt_simplex dropping a coefficient ``>= 0`` (should be ``> 0``): ``0*a + b < 1``
    is not ``a + b < 1``."""
    def simplex(x: UOp) -> UOp | None:
        changed, out = False, []
        for u in rules.compare.split_add(x):
            if u.op is Ops.MUL and u.src[1].op is Ops.CONST and u.src[1].arg > -1:
                changed, u = True, u.src[0]
            if u.op not in rules.compare._IRREDUCIBLE or u.vmin < 0:
                return None
            out.append(u)
        return reduce(lambda a, b: a + b, out) if changed else None
    monkeypatch.setattr(rules.compare, "lt_simplex", simplex)
    out = prove_shapes("lt_simplex", rule_apply("lt_simplex"),
                       _pick(simplex_shapes(), f"v*k {_B} + v {_B} < c"), "", RLIMIT)
    assert out.status == "failed" and "counterexample" in out.detail, out.detail
