"""The e-graph's passes proven by running their code on symbolic e-graphs
(rules/proof/passes_sym.py, eqsat/engines/egraph/proofs.py): each pass is proven, and
a pass with an off-by-one or a dropped operand fails its obligation."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import z3

from eqsat.engines.egraph.computed import passes
from eqsat.engines.egraph.computed.lift import lift_pass
from eqsat.engines.egraph.computed.passes import AndStep, SumStep, fold_pass, total_classes
from eqsat.engines.egraph.proofs import (
    SYMBOLIC_PASSES,
    and_cases,
    fold_cases,
    lift_trees,
    prove_lift,
    sum_cases,
)
from rules.proof.passes_sym import prove_pass
from rules.proof.semantics import RLIMIT
from rules.proof.symbolic import SymInt, explore


def test_fold_known_is_proven() -> None:
    o = SYMBOLIC_PASSES["fold_known"](RLIMIT)
    assert o.status == "proven", o.detail


def _mutant(fn: Callable[..., Any], old: str, new: str) -> Callable[..., Any]:
    """``fn`` (a function, or a method taking ``self`` first) recompiled from its own
    source with ``old`` (found exactly once) replaced by ``new``, in its module's
    globals: the pass's code with one mutation, not a copy of it."""
    src = textwrap.dedent(inspect.getsource(fn))
    assert src.count(old) == 1, old
    ns: dict[str, Any] = {}
    exec(compile(src.replace(old, new), f"<mutant of {fn.__qualname__}>", "exec"),
         fn.__globals__, ns)
    return ns[fn.__name__]


def test_a_fold_of_a_division_by_a_possible_zero_fails(monkeypatch) -> None:
    # a divisor whose lower bound is 0 taken as never 0
    monkeypatch.setattr(passes, "total_classes", _mutant(total_classes, "dlo > 0", "dlo >= 0"))
    o = prove_pass("mutant", fold_cases(fold_pass), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


def test_canonical_and_is_proven() -> None:
    o = SYMBOLIC_PASSES["canonical_and"](RLIMIT)
    assert o.status == "proven", o.detail


def test_a_conjunction_missing_a_clause_fails() -> None:
    run = _mutant(AndStep.run, "clauses[1:]", "clauses[2:]")  # the second clause dropped
    o = prove_pass("mutant", and_cases(lambda p: run(AndStep(), p)), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


_TWO_COEFS = [("Sub", ("Mul", "k", "a"), ("Mul", "b", "k"))]  # k1*a - k2*b


def test_the_canonical_sum_of_two_symbolic_coefficients_is_proven() -> None:
    o = prove_pass("canonical_sum", sum_cases(SumStep().run, _TWO_COEFS), "", RLIMIT)
    assert o.status == "proven", o.detail


def test_a_common_factor_not_divided_out_fails() -> None:
    run = _mutant(SumStep.run, "(f // g, a)", "(f, a)")  # g*(f*a + ...) for f*a + ...
    o = prove_pass("mutant", sum_cases(lambda p: run(SumStep(), p), _TWO_COEFS), "mutant",
                   RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


def test_a_symbolic_gcd_divides_exactly_on_every_path() -> None:
    a, b = SymInt.var("a"), SymInt.var("b")

    def code() -> Any:
        g = SymInt.gcd(a, b)
        return None if g == 0 else (g, a // g, b % g)
    out = explore([a.t != 0], code, RLIMIT)
    assert out and all(r is not None for _, r in out)
    for cond, (g, qa, rb) in out:  # a == g * (a // g), b % g == 0, g > 0 on the path
        s = z3.Solver()
        s.add(a.t != 0, cond, z3.Or(a.t != g.t * qa.t, rb.t != 0, g.t <= 0))
        assert s.check() == z3.unsat
    s = z3.Solver()  # and a gcd of 6 and 4 may be 2 (not only 1)
    s.add(out[0][0], a.t == 6, b.t == 4, out[0][1][0].t == 2)
    assert s.check() == z3.sat


def test_lift_invalid_is_proven() -> None:
    o = SYMBOLIC_PASSES["lift_invalid"](RLIMIT)
    assert o.status == "proven", o.detail


def test_a_lifted_guard_missing_a_clause_fails() -> None:
    mutant = _mutant(lift_pass, "cl[1:]", "cl[2:]")  # the guard's second clause dropped
    o = prove_lift(mutant, lift_trees(), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail
