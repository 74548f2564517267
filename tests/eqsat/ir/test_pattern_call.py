"""How a rule of the ordered matcher passes a match's bindings to its guard and its
build (``eqsat.ir.pattern._kwargs_caller``): by position when every parameter can be
and the match binds them all, else by keyword, a name the match leaves unbound taking
its parameter's default."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest

from eqsat.ir.ops import Ops
from eqsat.ir.pattern import Rule, UPat, _kwargs_caller, _parameters
from eqsat.ir.sexpr import parse, to_sexpr

SINK_ONE = UPat(Ops.SINK, src=(UPat.var("s"),), any_len=False)  # binds s alone


SEEN: list[str] = []


def _source(s: Any, k: Any = "default") -> None:
    SEEN.append(f"{to_sexpr(s, compact=True)} {k}")


def _source_kw(s: Any, *, k: Any = "default") -> None:
    SEEN.append(f"{to_sexpr(s, compact=True)} {k}")


# build | bindings | its result
CASES = [
    (lambda x, y: (x, y), {"x": 1, "y": 2}, (1, 2)),  # by position
    (lambda x, y: (x, y), {"y": 2, "x": 1}, (1, 2)),  # the parameters' order, not the dict's
    (lambda x, y=5: (x, y), {"x": 1}, (1, 5)),  # unbound: its default
    (lambda x, *, y=5: (x, y), {"x": 1, "y": 2}, (1, 2)),  # keyword-only
    (lambda **kw: sorted(kw), {"x": 1, "y": 2}, ["x", "y"]),  # every binding
    (lambda x: x, {"x": 1, "y": 2}, 1),  # a binding it does not name is left out
]


@pytest.mark.parametrize("fn,b,want", CASES)
def test_caller(fn: Any, b: dict[str, Any], want: Any) -> None:
    assert _kwargs_caller(fn)(b) == want


@pytest.mark.parametrize("build", [_source, _source_kw])
def test_parameter_the_pattern_does_not_bind(build: Any) -> None:
    # a parameter with a default that the pattern does not bind keeps its default
    SEEN.clear()
    assert Rule("probe", "sink(s) -> none", SINK_ONE, build).apply(parse("(sink 3)")) is None
    assert SEEN == ["3 default"]


def _sig(fn: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _read(fn: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in _parameters.__wrapped__(fn).values()]


def _f1(a, b=2, /, c=3, *args, d, e=5, **kw): ...
def _f2(a, *, b): ...
def _f3(x, y=None): ...
def _f4(**kw): ...


@pytest.mark.parametrize("fn", [_f1, _f2, _f3, _f4, lambda: 0, lambda *a: 0,
                                functools.partial(_f3, 1), functools.wraps(_f3)(_f4)])
def test_parameters_are_inspect_s(fn: Any) -> None:
    assert _read(fn) == _sig(fn)


def test_every_rule_s_parameters_are_inspect_s() -> None:
    from rules import all_rules

    fns = [f for r in all_rules() for f in (r.build, r.guard) if f is not None]
    assert len(fns) > 200 and all(_read(f) == _sig(f) for f in fns)
