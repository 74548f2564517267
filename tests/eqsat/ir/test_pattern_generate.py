"""The ordered matcher's patterns written as one Python function each
(``eqsat.ir.pattern._generate``): the same bindings as the reference matcher
(``UPat._match_slow``), in the same order and with the names in the same order as the
closures (``_compile``), and one compiled code per pattern shape."""

from __future__ import annotations

from typing import Any

import pytest

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import UPat, _compile, _generate
from eqsat.ir.sexpr import parse

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
