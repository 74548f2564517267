"""The ordered matcher's source-op test (``eqsat.ir.pattern._child_ops_check``): it
rejects a node only where the pattern cannot match it."""

from __future__ import annotations

from typing import Any

import pytest

import rules
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import PatternMatcher, UPat, _child_ops_check
from eqsat.ir.sexpr import parse, to_sexpr

X, C = UPat.var("x"), UPat.cvar("c")
ADD_XC = UPat(Ops.ADD, src=[X, C])  # commutative: either order
IDIV_XC = UPat(Ops.IDIV, src=(X, C))  # ordered
ADD_CC = UPat(Ops.ADD, src=[UPat.cvar("a"), UPat(Ops.MUL, name="m")])
WHERE_INV = UPat(Ops.WHERE, src=(X, UPat.var("t"), UPat((Ops.INVALID, Ops.CAST))))

# pattern | input | whether the test lets the node through
CASES = [
    (ADD_XC, "(add (var x 0 9) 3)", True),
    (ADD_XC, "(add 3 (var x 0 9))", True),
    (ADD_XC, "(add (var x 0 9) (var y 0 9))", False),
    (IDIV_XC, "(idiv (var x 0 9) 4)", True),
    (IDIV_XC, "(idiv 4 (var x 0 9))", False),
    (ADD_CC, "(add (mul (var x 0 9) 2) 3)", True),
    (ADD_CC, "(add 3 (mul (var x 0 9) 2))", True),
    (ADD_CC, "(add (mul (var x 0 9) 2) (var y 0 9))", False),
    (ADD_CC, "(add 3 (var y 0 9))", False),
]


@pytest.mark.parametrize("pat,text,want", CASES)
def test_source_ops(pat: UPat, text: str, want: bool) -> None:
    ok = _child_ops_check(pat)
    assert ok is not None and ok(parse(text).src) is want


def test_no_test_without_source_ops() -> None:
    assert _child_ops_check(UPat(Ops.ADD, src=[X, UPat.var("y")])) is None
    assert _child_ops_check(X) is None
    assert _child_ops_check(WHERE_INV) is not None


def test_never_rejects_a_match(corpus_lines: list[dict[str, Any]]) -> None:
    nodes = list(dict.fromkeys(u for row in corpus_lines[::4]
                               for u in parse(row["expr"]).toposort()))
    checked = 0
    for r in rules.all_rules():
        ok = _child_ops_check(r.pattern)
        if ok is None:
            continue
        match = r.pattern.matcher()
        for u in nodes:
            if u.op in (r.pattern.ops or (u.op,)) and not ok(u.src):
                checked += 1
                assert match(u, {}) == [], (r.name, to_sexpr(u, compact=True))
    assert checked > 1000


def test_candidates_are_the_rules_the_test_admits(corpus_lines: list[dict[str, Any]]) -> None:
    """``PatternMatcher.candidates`` (kept per op and source ops) lists, for every node,
    the rules of its op the source test admits, in order: the same list asked twice,
    and for a node of more sources than it keeps lists for."""
    pm = PatternMatcher(rules.all_rules())
    nodes = list(dict.fromkeys(u for row in corpus_lines[::4]
                               for u in parse(row["expr"]).toposort()))
    nodes.append(parse("(sink (var a 0 3) (var b 0 3) (var c 0 3) (var d 0 3) (var e 0 3))"))
    for u in nodes + nodes:
        want = [r for r in pm.rules if u.op in (r.pattern.ops or (u.op,))
                and (r._srcs_ok is None or r._srcs_ok(u.src))]
        assert pm.candidates(u) == want, to_sexpr(u, compact=True)
    assert 0 < len(pm._cands) < len(nodes)


def _one_by_one(pm: PatternMatcher, u: Any) -> Any:
    """The first rule of ``pm.candidates(u)`` whose own ``apply`` rewrites ``u``."""
    for r in pm.candidates(u):
        out = r.apply(u)
        if out is not None:
            return out, r
    return None


def test_joint_runs_rewrite_as_their_rules(corpus_lines: list[dict[str, Any]]) -> None:
    """A run of rules of one ``joint`` (the div/mod core's twins) tried as one gives, on
    every division node, the rewrite and rule its rules tried one by one give."""
    pm = rules.matcher(None)
    nodes = list(dict.fromkeys(u for row in corpus_lines[::2]
                               for u in parse(row["expr"]).toposort()
                               if u.op in (Ops.IDIV, Ops.MOD)))
    assert any(type(r) is tuple for u in nodes for _, r in pm._candidates(u))
    hits = 0
    for u in nodes:
        want = _one_by_one(pm, u)
        hits += want is not None and want[1].joint is not None
        assert pm.rewrite(u) == want, to_sexpr(u, compact=True)
    assert hits > 20
