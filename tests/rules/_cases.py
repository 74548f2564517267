"""Shared scaffolding of the rule tests in tests/rules: one line per case tables.

A rewrite row is ``(rule, input, expected)``: the rule must fire on the input and the
result must be the expected graph. A blocked row is ``(rule, input, what remains)``:
the result must be what remains and, where nothing else fired, the guarded rule must
not have fired either. ``rewrite_test`` / ``blocked_test`` turn a table into one
parametrized test function; assign it to a ``test_*`` name in the test module.

Whether a case is also checked by ``eqsat.ir.equiv.check_equivalent`` (floats bit for
bit up to NaN payloads, loads on sampled buffers) is chosen by an ``equiv`` predicate
on ``(input, output)``: ``expression`` (the default: neither graph is a kernel),
``always`` or ``never``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

import rules
from eqsat import parse, to_sexpr
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.pattern import graph_rewrite
from eqsat.ir.uop import UOp

Equiv = Callable[[UOp, UOp], bool]
Row = tuple[str, str, str]


def simp(text: str, rulesets=None) -> tuple[UOp, UOp, dict[str, int]]:
    """Parse ``text`` and run the baseline on it: (input, output, rule match counts)."""
    g = parse(text)
    out, st = optimize_baseline(g, rulesets)
    return g, out, st["matches"]


def canon(text: str) -> UOp:
    """Parse ``text`` and sort its commutative Index operands as the baseline does."""
    return graph_rewrite(parse(text), rules.matcher("commutative_canonicalization"))


_EFFECTS = frozenset(("STORE", "END", "SINK", "AFTER", "NOOP", "DEFINE_LOCAL", "DEFINE_REG"))


def expression(g: UOp, out: UOp) -> bool:
    """Check equivalence when both graphs are expressions (no stores, loops, sinks)."""
    return not any(u.op.name in _EFFECTS for x in (g, out) for u in x.toposort())


def always(g: UOp, out: UOp) -> bool:
    """Check equivalence on every case."""
    return True


def never(g: UOp, out: UOp) -> bool:
    """Check no equivalence (the test checks the result some other way)."""
    return False


def check_rewrite(rule: str, text: str, want: str, *, expect: Callable[[str], UOp] = canon,
                  equiv: Equiv = expression, rulesets=None) -> tuple[UOp, UOp]:
    """``rule`` fires on ``text`` and the result is ``expect(want)``; returns (input, output)."""
    g, out, matches = simp(text, rulesets)
    assert rule in matches, f"{rule} did not fire on {text}: {matches}"
    assert out is expect(want), f"{text} -> {to_sexpr(out, compact=True)}, want {want}"
    if equiv(g, out):
        assert check_equivalent(g, out)
    return g, out


def check_blocked(rule: str, text: str, rest: str, *,
                  equiv: Equiv = expression) -> tuple[UOp, UOp]:
    """``text`` simplifies to ``canon(rest)``; if ``rest == text``, ``rule`` did not fire."""
    g, out, matches = simp(text)
    assert out is canon(rest), f"{text} -> {to_sexpr(out, compact=True)}, want {rest}"
    if rest == text:  # nothing else fired: the guarded rule did not either
        assert rule not in matches, f"{rule} fired on {text}"
    if equiv(g, out):
        assert check_equivalent(g, out)
    return g, out


def check_untouched(rule: str, text: str) -> None:
    """``rule`` does not fire on ``text`` and nothing else changes it."""
    _, out, matches = simp(text)
    assert rule not in matches and out is parse(text), to_sexpr(out, compact=True)


def check_noop(rule: str, text: str) -> None:
    """``rule`` fires on ``text`` and the result is a NOOP (a dead store or END)."""
    _, out, matches = simp(text)
    assert rule in matches and out.op.name == "NOOP", (matches, out)


def rewrite_test(rows: Sequence[Row], **opts) -> Callable[[str, str, str], None]:
    """A test parametrized over ``rows`` calling ``check_rewrite(*row, **opts)``."""
    @pytest.mark.parametrize("rule,text,want", rows)
    def test(rule: str, text: str, want: str) -> None:
        check_rewrite(rule, text, want, **opts)
    return test


def blocked_test(rows: Sequence[Row], **opts) -> Callable[[str, str, str], None]:
    """A test parametrized over ``rows`` calling ``check_blocked(*row, **opts)``."""
    @pytest.mark.parametrize("rule,text,rest", rows)
    def test(rule: str, text: str, rest: str) -> None:
        check_blocked(rule, text, rest, **opts)
    return test


def noop_test(rows: Sequence[tuple[str, str]]) -> Callable[[str, str], None]:
    """A test parametrized over ``(rule, text)`` rows calling ``check_noop(rule, text)``."""
    @pytest.mark.parametrize("rule,text", rows)
    def test(rule: str, text: str) -> None:
        check_noop(rule, text)
    return test


def untouched_test(rule: str, texts: Sequence[str]) -> Callable[[str], None]:
    """A test parametrized over ``texts`` calling ``check_untouched(rule, text)``."""
    @pytest.mark.parametrize("text", texts)
    def test(text: str) -> None:
        check_untouched(rule, text)
    return test


def check_engines(text: str, want: str, engines: Sequence[str] = ("baseline", "egraph")) -> None:
    """Each engine (default rule sets, reference cost) turns ``text`` into exactly
    ``want``, commutative operands in the baseline's order (:func:`canon`), equivalent
    to it."""
    from eqsat.api import optimize
    from tests.budgets import QUALITY

    g = parse(text)
    for engine in engines:
        out = optimize(g, engine=engine, cost_model="reference", budget=QUALITY).graph
        # commutative operands compared in one order (the baseline's: by uid)
        got = graph_rewrite(out, rules.matcher("commutative_canonicalization"))
        assert got is canon(want), (f"{engine}: {text} -> {to_sexpr(out, compact=True)}, "
                                    f"want {want}")
        assert check_equivalent(g, out)


def engines_test(rows: Sequence[Row], engines: Sequence[str] = ("baseline", "egraph")
                 ) -> Callable[[str, str, str], None]:
    """A test parametrized over ``(rule, input, expected)`` rows: both engines (or
    ``engines``) give the expected graph (:func:`check_engines`); the rule names the row."""
    @pytest.mark.parametrize("rule,text,want", rows)
    def test(rule: str, text: str, want: str) -> None:
        check_engines(text, want, engines)
    return test
