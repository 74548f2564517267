"""The e-graph's passes proven by running their code on symbolic e-graphs
(rules/proof/passes_sym.py, eqsat/engines/egraph/proofs.py): each pass is proven, and
a pass with an off-by-one or a dropped operand fails its obligation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from eqsat.engines.egraph.analyses import INT_DTYPES
from eqsat.engines.egraph.computed import conjuncts
from eqsat.engines.egraph.computed.passes import SumStep
from eqsat.engines.egraph.proofs import (
    SYMBOLIC_PASSES,
    and_cases,
    fold_cases,
    lift_trees,
    prove_lift,
    sum_cases,
)
from eqsat.ir.linear import Lin
from rules.proof.passes_sym import prove_pass
from rules.proof.semantics import RLIMIT
from rules.proof.symbolic import SymInt, explore


def test_fold_known_is_proven() -> None:
    o = SYMBOLIC_PASSES["fold_known"](RLIMIT)
    assert o.status == "proven", o.detail


def _fold_off_by_one(snap: Any, dirty: set[int], union: Callable[..., Any],
                     name: str) -> None:
    """fold_pass with ``dlo >= 0`` where the pass has ``dlo > 0`` (a divisor that may
    be 0 is taken as never 0)."""
    for c in sorted(dirty):
        v = snap.lo.get(c)
        if v is None or v != snap.hi.get(c) or c not in snap.defined:
            continue
        dt = None
        ok = False
        for n in snap.class_nodes(c):
            if n.ctor == "Cst":
                ok = False
                break
            if n.dtype not in INT_DTYPES:
                continue
            dt = n.dtype
            if n.ctor in ("Idiv", "Mod"):
                dlo, dhi = snap.bounds(n.fields[2])
                ok = ok or dlo >= 0 or dhi < 0
            else:
                ok = True
        if ok and dt is not None:
            union(c, ("Cst", dt, v), name)


def test_a_fold_of_a_division_by_a_possible_zero_fails() -> None:
    o = prove_pass("mutant", fold_cases(_fold_off_by_one), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


def test_canonical_and_is_proven() -> None:
    o = SYMBOLIC_PASSES["canonical_and"](RLIMIT)
    assert o.status == "proven", o.detail


def _and_drops_a_clause(p: Any) -> None:
    """AndStep.run building the chain from the clauses but the second."""
    for r in p.kinds.get("canon_and", []):
        for c, i in p.dirty_best:
            n = p.snap.nodes[i]
            if n.ctor != "And" or n.fields[0] != "bool":
                continue
            clauses = conjuncts(p.snap, p.best, c)
            t = clauses[0]
            for k in clauses[2:]:
                t = ("And", "bool", t, k)
            p.union(c, t, r.name)


def test_a_conjunction_missing_a_clause_fails() -> None:
    o = prove_pass("mutant", and_cases(_and_drops_a_clause), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail


def _factor_not_divided(p: Any) -> None:
    """SumStep's common factor taken out, the coefficients not divided by it."""
    for c in p.focus:
        x = p.lins.get(c)
        g = x.content()
        if len(x.terms) >= 2 and g > 1:
            core = Lin(x.terms, 0)
            p.union(c, p.ctx.add(p.ctx.mul(p.ctx.lin(core), g), p.ctx.const(x.const)), "m")


_TWO_COEFS = [("Sub", ("Mul", "k", "a"), ("Mul", "b", "k"))]  # k1*a - k2*b


def test_the_canonical_sum_of_two_symbolic_coefficients_is_proven() -> None:
    o = prove_pass("canonical_sum", sum_cases(SumStep().run, _TWO_COEFS), "", RLIMIT)
    assert o.status == "proven", o.detail


def test_a_common_factor_not_divided_out_fails() -> None:
    o = prove_pass("mutant", sum_cases(_factor_not_divided, _TWO_COEFS), "mutant", RLIMIT)
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


def _lift_drops_a_clause(*args: Any) -> None:
    """lift_pass whose guard of two or more clauses loses its first (as a chain built
    from ``cl[2:]`` would)."""
    from eqsat.engines.egraph.computed.lift import lift_pass

    union = args[5]

    def drop(c: int, t: Any, name: str) -> None:
        cond = t[2]
        if isinstance(cond, tuple) and cond[0] == "And":
            t = (t[0], t[1], cond[3], *t[3:])
        union(c, t, name)
    lift_pass(*args[:5], drop, *args[6:])


def test_a_lifted_guard_missing_a_clause_fails() -> None:
    o = prove_lift(_lift_drops_a_clause, lift_trees(), "mutant", RLIMIT)
    assert o.status == "failed" and "counterexample" in o.detail, o.detail
