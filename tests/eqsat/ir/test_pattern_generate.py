"""The ordered matcher's patterns written as one Python function each
(``eqsat.ir.pattern._generate``): the same bindings as the reference matcher
(``UPat._match_slow``), in the same order and with the names in the same order as the
closures (``_compile``), and one compiled code per pattern shape."""

from __future__ import annotations

from typing import Any

import pytest

import rules
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat, _compile, _generate, _kwargs_caller
from eqsat.ir.sexpr import parse, to_sexpr

X, Y, C = UPat.var("x"), UPat.var("y"), UPat.cvar("c")
XS = "(var x 0 9)"

# pattern | input | bindings given beforehand (names -> s-expressions)
CASES: list[tuple[UPat, str, dict[str, str]]] = [
    (UPat(Ops.ADD, src=[X, C]), f"(add {XS} 3)", {}),  # commutative, in order
    (UPat(Ops.ADD, src=[X, C]), f"(add 3 {XS})", {}),  # commutative, swapped
    (UPat(Ops.ADD, src=[X, X]), f"(add {XS} {XS})", {}),  # a name twice: both orders
    (UPat(Ops.ADD, src=[X, X]), f"(add {XS} (var y 0 9))", {}),  # a name twice: no match
    (UPat(Ops.ADD, src=[X, Y]), f"(add {XS} (var y 0 9))", {"y": XS}),  # y bound before
    (UPat(Ops.ADD, src=[X, Y]), f"(add {XS} (var y 0 9))", {"x": XS}),
    (UPat(Ops.IDIV, src=(X, C)), f"(idiv {XS} 4)", {}),  # ordered
    (UPat(Ops.IDIV, src=(X, C)), f"(idiv 4 {XS})", {}),
    (UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[X, C]), X], name="a"),
     f"(add {XS} (mul 4 {XS}))", {}),  # nested commutative, the name shared across levels
    (UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[X, C]), X], name="a"),
     f"(add (var y 0 9) (mul 4 {XS}))", {}),
    (UPat(Ops.CONST, arg=3, name="k"), "3", {}),  # arg
    (UPat(Ops.CONST, arg=3, name="k"), "4", {}),
    (UPat(Ops.CONST, dtype=dtypes.bool, name="k"), "true", {}),  # dtype
    (UPat(Ops.CONST, dtype=dtypes.bool, name="k"), "1", {}),
    (UPat.const(0, name="z"), "0", {}),  # predicate
    (UPat.const(0, name="z"), "1", {}),
    (UPat(Ops.WHERE, src=(UPat.var("g"), X, UPat(Ops.INVALID))),
     f"(where (lt {XS} 3) {XS} (invalid))", {}),
    (UPat(Ops.SINK, src=(X, Y), any_len=True), f"(sink {XS} (var y 0 9) 3)", {}),  # extra src
    (UPat(Ops.SINK, src=(X, Y), any_len=True), f"(sink {XS})", {}),
    (UPat(Ops.ADD), f"(add {XS} 3)", {}),  # no name, no sources
    (UPat(Ops.MUL), f"(add {XS} 3)", {}),
]


def _ids(envs: list[dict[str, Any]]) -> list[list[tuple[str, int]]]:
    return [[(k, id(v)) for k, v in e.items()] for e in envs]


@pytest.mark.parametrize("pat,text,given", CASES)
def test_same_bindings_as_reference(pat: UPat, text: str, given: dict[str, str]) -> None:
    fn = _generate(pat)
    assert fn is not None
    u = parse(text)
    env = {k: parse(v) for k, v in given.items()}
    got = fn(u, env)
    # the same dicts as the closures, keys in the same order, the same (hash-consed)
    # nodes; the reference's, up to the names' order (it binds a swapped commutative
    # pair in the sources' order)
    assert _ids(got) == _ids(_compile(pat)(u, env))
    assert [sorted(e) for e in _ids(got)] == [sorted(e) for e in _ids(list(
        pat._match_slow(u, env)))]


def test_matches_found() -> None:
    """The table is not vacuous: most of its cases match, some do not."""
    found = [bool(_generate(p)(parse(t), {k: parse(v) for k, v in g.items()}))  # type: ignore[misc]
             for p, t, g in CASES]
    assert 6 <= found.count(False) and 12 <= found.count(True)


def test_variadic_pattern_not_generated() -> None:
    """A source pattern for every source (``src=UPat``) is left to the closures."""
    pat = UPat(Ops.SINK, src=UPat.var("s"))
    assert _generate(pat) is None
    u = parse(f"(sink {XS} {XS})")
    assert _ids(pat.matcher()(u, {})) == _ids(list(pat._match_slow(u, {})))


def test_one_code_per_shape() -> None:
    a = _generate(UPat(Ops.ADD, src=[UPat.var("a"), UPat.cvar("b")]))
    b = _generate(UPat(Ops.MUL, src=[UPat.var("p"), UPat.cvar("q")]))
    c = _generate(UPat(Ops.MUL, src=(UPat.var("p"), UPat.cvar("q"))))
    assert a is not None and b is not None and c is not None
    assert a.__code__ is b.__code__ and a.__code__ is not c.__code__
    u = parse(f"(add {XS} 3)")
    assert [sorted(e) for e in a(u, {})] == [["a", "b"]] and b(u, {}) == []


def _apply_ref(r: Rule, u: Any) -> Any:
    """``Rule.apply`` from the reference matcher's bindings, each guard and build called
    as :func:`_kwargs_caller` calls it."""
    guard = None if r.guard is None else _kwargs_caller(r.guard)
    build = _kwargs_caller(r.build)
    for b in r.pattern._match_slow(u, {}):
        if guard is not None and not guard(b):
            continue
        out = build(b)
        if out is not None and out is not u:
            return out
    return None


def test_rule_apply_agrees_with_reference(corpus_lines: list[dict[str, Any]]) -> None:
    nodes = list(dict.fromkeys(u for row in corpus_lines[::8]
                               for u in parse(row["expr"]).toposort()))
    rewrites = 0
    for r in rules.all_rules():
        assert r._apply is not None or r.pattern.src is not None
        for u in nodes:
            if u.op not in (r.pattern.ops or (u.op,)):
                continue
            got = r.apply(u)
            assert got is _apply_ref(r, u), (r.name, to_sexpr(u, compact=True))
            rewrites += got is not None
    assert rewrites > 100


SEEN: list[tuple] = []

# guard | build | input | the rewrite (None: none) and the calls' arguments
ADD_XC = UPat(Ops.ADD, src=[X, C])
CALLS = [
    (lambda x, c: c.arg == 3, lambda x, c: x, f"(add 3 {XS})", XS),  # by position
    (lambda c, x: c.arg == 4, lambda x, c: x, f"(add 3 {XS})", None),  # the guard fails
    (None, lambda c, *, x: SEEN.append(("kw", c.arg)) or x, f"(add {XS} 5)", XS),  # keyword-only
    (lambda **kw: SEEN.append(tuple(sorted(kw))) or True, lambda x: x, f"(add {XS} 5)", XS),
    (None, lambda **kw: SEEN.append(tuple(sorted(kw))) or kw["x"], f"(add 5 {XS})", XS),
    (None, lambda x, c, k=7: SEEN.append(("default", k)) or x, f"(add {XS} 5)", XS),
    (None, lambda x: None, f"(add {XS} 5)", None),  # no rewrite after all
    (lambda x, k=7: SEEN.append(("guard", k)) or True, lambda c: c, f"(add {XS} 5)", "5"),
]


@pytest.mark.parametrize("guard,build,text,want", CALLS)
def test_rule_apply_calls(guard: Any, build: Any, text: str, want: str | None) -> None:
    r = Rule("t", "x + c -> x", ADD_XC, build=build, guard=guard)
    assert r._apply is not None
    SEEN.clear()
    got = r.apply(parse(text))
    calls = list(SEEN)
    SEEN.clear()
    assert _apply_ref(r, parse(text)) is got
    assert calls == SEEN  # the same calls, with the same arguments
    assert got is (None if want is None else parse(want))


def test_rule_apply_ignores_the_node_itself() -> None:
    """A build that gives back the node it matched is no rewrite (the next match's is)."""
    r = Rule("t", "a -> a", UPat(Ops.ADD, src=[UPat.var("x"), UPat.var("y")], name="a"),
             build=lambda a, x: a if x.op is Ops.DEFINE_VAR else x)
    assert r._apply is not None
    u = parse(f"(add {XS} 3)")
    assert r.apply(u) is parse("3") is _apply_ref(r, u)
    assert r.apply(parse(f"(add {XS} {XS})")) is None


def test_rule_apply_tests_the_root_op() -> None:
    """The generated function leaves the node's op to its callers: ``Rule.apply`` tests
    it, so a node of another op with matching sources is no match."""
    r = Rule("t", "x + c -> x", ADD_XC, build=lambda x, c: x)
    assert r.apply(parse(f"(mul {XS} 3)")) is None
    assert r.apply(parse(f"(add {XS} 3)")) is parse(XS)
    assert r._apply(parse(f"(mul {XS} 3)")) is parse(XS)  # (what the matcher never asks)
