"""The div/mod core's rules proven by running their code on symbolic forms
(rules/proof/divmod_sym.py): the exploration runs every path, and a rule with an
off-by-one in a bound test fails its obligation."""

from __future__ import annotations

import pytest
import z3

from eqsat.ir.linear import Ctx, Lin, lin_bounds
from rules.divmod_core import RANGE_BASED, DivModRule, RuleOut, _finite, _out
from rules.proof.divmod_sym import linear_shapes, prove_divmod
from rules.proof.semantics import RLIMIT
from rules.proof.symbolic import SymInt, explore


def _finite_shapes(most: int) -> list:
    """The shapes of ``most`` atoms at most whose bounds are all symbolic (fast)."""
    return [(label, s) for label, s in linear_shapes(most) if "True" not in label]


def test_every_path_is_run() -> None:
    a, b = SymInt.var("a"), SymInt.var("b")

    def code() -> str:
        if a < 0:
            return "neg"
        return "big" if a > b else "small"
    out = explore([b.t == 5], code, RLIMIT)
    assert sorted(r for _, r in out) == ["big", "neg", "small"]


def test_a_path_the_premise_excludes_is_not_run() -> None:
    a = SymInt.var("a")
    out = explore([a.t > 3], lambda: "low" if a < 2 else "high", RLIMIT)
    assert [r for _, r in out] == ["high"]


def test_a_division_by_what_may_be_zero_raises_on_that_path() -> None:
    a, b = SymInt.var("a"), SymInt.var("b")
    with pytest.raises(ZeroDivisionError):
        explore([b.t >= 0], lambda: a // b, RLIMIT)
    assert len(explore([b.t > 0], lambda: a // b, RLIMIT)) == 1


def test_floor_division_and_modulo_are_python_s() -> None:
    a, b = SymInt.var("a"), SymInt.var("b")
    (_, (q, r)), = explore([b.t != 0], lambda: (a // b, a % b), RLIMIT)
    s = z3.Solver()
    for x, y in ((7, 2), (-7, 2), (7, -2), (-7, -2)):
        s.push()
        s.add(a.t == x, b.t == y)
        assert s.check() == z3.sat
        m = s.model()
        assert (m.eval(q.t).as_long(), m.eval(r.t).as_long()) == (x // y, x % y)
        s.pop()


def test_a_range_based_rule_is_proven() -> None:
    r = RANGE_BASED[0]
    assert r.name == "idiv_one_bucket"
    o = prove_divmod(r.name, r.fn, r.ops, _finite_shapes(1), "finite", RLIMIT)
    assert o.status == "proven", o.detail


def _self_range_off_by_one(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """x % y -> x when |x| <= |y|: mod_in_range's ``<`` off by one (|x| == |y| is not
    x % y)."""
    xlo, xhi = lin_bounds(x, ctx)
    ylo, yhi = lin_bounds(y, ctx)
    ymin = ylo if ylo > 0 else -yhi if yhi < 0 else 0
    if ymin > 0 and _finite(xlo, xhi) and max(abs(xlo), abs(xhi)) <= ymin:
        return _out(x)
    return None


def _small_off_by_one(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
    """idiv_drop_multiple_small's core with ``rhi <= n`` where the rule has ``<``."""
    from rules.divmod_core import _normalized, _splits_off, split_divisible

    @_normalized
    def core(op: str, x: Lin, y: Lin, ctx: Ctx) -> RuleOut | None:
        n = y.const if y.is_const and y.const != 0 else None
        if n is None or not _splits_off(x, n):
            return None
        q, r = split_divisible(x, y, ctx)
        rlo, rhi = lin_bounds(r, ctx)
        if q.is_zero or not (0 <= rlo and rhi <= n):
            return None
        return _out(q)
    return core(op, x, y, ctx)


@pytest.mark.parametrize("core, ops", [(_self_range_off_by_one, ("mod",)),
                                       (_small_off_by_one, ("idiv",))])
def test_an_off_by_one_fails_its_obligation(core, ops) -> None:
    mutant = DivModRule("mutant", "off by one", ops, core)
    o = prove_divmod("mutant", mutant.fn, ops, _finite_shapes(1), "finite", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


def test_named_quotients_settle_what_z3_s_division_does_not() -> None:
    from rules.proof.divmod_sym import _purified
    from rules.proof.semantics import c_divmod

    n, f, k, a = z3.Ints("n f k a")

    def floor_mod(u: z3.ArithRef, v: z3.ArithRef) -> z3.ArithRef:
        return u - v * z3.If(v > 0, u / v, (-u) / (-v))
    x = f * a + k
    fs = [n != 0, floor_mod(f, n) == 0, floor_mod(k, n) == 0, c_divmod("mod", x, n) != 0]
    s = z3.Solver()
    s.set("rlimit", RLIMIT)
    s.add(*_purified(fs))
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(*_purified(fs[:-1] + [c_divmod("mod", x, n) != 1]))  # not vacuous
    assert s.check() == z3.sat
