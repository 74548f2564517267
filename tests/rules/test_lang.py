"""The rule language (rules/lang.py, docs/rules.md "The rule language"): one line per case.

What a rule's text is refused for, what its one definition compiles to in each engine
(the ordered matcher's rule, the e-graph's egglog rules) and what its proof says.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from eqsat import parse, to_sexpr
from rules.lang import LangError, rule
from rules.lang_baseline import literal_matches

# text, guard, a fragment of the error
REFUSED = [
    ("x + 0", None, "write 'lhs -> rhs'"),
    ("x + 0 -> x -> x", None, "write 'lhs -> rhs'"),
    ("x + 0 -> y", None, "'y' on the right side is not bound"),
    ("x -> x + 0", None, "the left side must be an operation"),
    ("foo(x) -> x", None, "unknown function 'foo'"),
    ("x + + -> x", None, "not an expression"),
    ("x + 0 -> x", "vmin(y) > 0", "the guard reads 'y'"),
    ("x + 0 -> x", "c1 > 0", "the guard reads 'c1'"),
    ("x + 0 -> x", "is_blah(x)", "unknown function 'is_blah'"),
]

# text, guard, input, output of the ordered matcher's rule (None: it does not fire)
BASELINE = [
    ("(x // c1) // c2 -> x // (c1 * c2)", "is_index(x) and c1 > 0 and c2 > 0",
     "(idiv (idiv (var a 0 9) 2) 3)", "(idiv (var a 0 9) 6)"),
    ("(x // c1) // c2 -> x // (c1 * c2)", "is_index(x) and c1 > 0 and c2 > 0",
     "(idiv (idiv (var a 0 9) -2) 3)", None),
    ("x + 0 -> x", "not is_float(x)", "(add 0 (var a 0 9))", "(var a 0 9)"),      # either order
    ("x + 0 -> x", "not is_float(x)", "(add (cast f32 (var a 0 9)) 0.0)", None),
    ("max(x, y) -> x", "vmin(x) >= vmax(y)", "(max (var a 5 9) (var b 0 5))", "(var a 5 9)"),
    ("c1 * c2 -> c1 * c2", None, "(mul (const i8 100) (const i8 2))", "(const i8 -56)"),
    ("x % n -> 0", "nonzero(n) and vmax(x) < 0", "(mod (var a 0 9) 3)", None),
]

# text, guard, the egglog rules: (lhs, rhs, facts) of each
NATIVE = [
    ("(x // c1) // c2 -> x // (c1 * c2)", "is_index(x) and c1 != 0 and c2 != 0",
     [('(Idiv "index" (Idiv "index" x (Cst "index" c1)) (Cst "index" c2))',
       '(Idiv "index" x (Cst "index" K0))', ("(!= c1 0)", "(!= c2 0)", "(= K0 (* c1 c2))"))]),
    ("x + 0 -> x", "not is_float(x)",
     [("(Add Dt x (Cst Dt 0))", "x", ('(!= Dt "bool")',)),
      ("(Add Dt (Cst Dt 0) x)", "x", ('(!= Dt "bool")',))]),
]

# text, guard, the proof's status and a fragment of its detail
PROOF = [
    ("(x // 2) // 2 -> x // 4", "is_index(x)", "proven", "1 dtype choices"),
    ("(x * 2) // 2 -> x", None, "failed", "counterexample"),             # i16: 32767*2 wraps
    ("x * 0 -> 0", None, "failed", "counterexample"),                     # NaN * 0 is NaN
    ("x // x -> 1", None, "failed", "counterexample"),                    # 0 // 0
    ("x // x -> 1", "nonzero(x)", "proven", "dtype choices"),
]


@pytest.mark.parametrize("text, when, msg", REFUSED)
def test_refused(text: str, when: str | None, msg: str) -> None:
    with pytest.raises(LangError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        rule("t", text, when, register=False)


@pytest.mark.parametrize("text, when, src, want", BASELINE)
def test_baseline(text: str, when: str | None, src: str, want: str | None) -> None:
    out = rule("t", text, when, register=False).baseline.apply(parse(src))
    if want is None:
        assert out is None, to_sexpr(out, compact=True)
    else:
        assert out is parse(want), to_sexpr(out, compact=True) if out is not None else None


@pytest.mark.parametrize("text, when, want", NATIVE)
def test_native(text: str, when: str | None, want: list) -> None:
    got = [(e.lhs, e.rhs, e.when) for e in rule("t", text, when, register=False).natives]
    assert got == want


@pytest.mark.parametrize("text, when, status, detail", PROOF)
def test_proof(text: str, when: str | None, status: str, detail: str) -> None:
    from rules.proof import prove

    out = prove(rule("t", text, when, register=False))
    assert out.status == status and detail in out.detail, out


def test_a_new_rule_in_three_lines() -> None:
    """What a notebook writes: a guarded rule, proven, run by both engines."""
    from rules.proof import prove

    law = rule("quarter", "(x // c1) // c2 -> x // (c1 * c2)", "c1 > 0 and c2 > 0",
               register=False)
    out = prove(law)                               # fixed-width: c1*c2 may wrap
    assert out.status == "failed" and "counterexample" in out.detail, out
    law = rule("quarter", "(x // c1) // c2 -> x // (c1 * c2)",
               "is_index(x) and c1 > 0 and c2 > 0", register=False)
    assert prove(law).status == "proven"
    assert law.baseline.apply(parse("(idiv (idiv (var a 0 99) 2) 2)")) is \
        parse("(idiv (var a 0 99) 4)")
    assert law.natives and law.name not in __import__("rules.lang").lang.LAWS_BY_NAME


def test_the_headline_example_is_proven() -> None:
    """rules/lang.py's docstring opens with a rule: it is one that proves."""
    import re

    import rules.lang
    from rules.proof import prove

    m = re.search(r"^\s+(rule\(.*\))\s*$", rules.lang.__doc__, re.M)
    assert m is not None
    law = eval(m.group(1)[:-1] + ", register=False)", {"rule": rules.lang.rule})
    assert prove(law).status == "proven"


# shares: the term the e-graph must already hold, the error of a rule that cannot share
_EG = "e-graph only"
SHARES = [
    ("x % k -> x - (x // k) * k", "x // k", {"baseline_reason": _EG},
     '(= Shared (Idiv "index" x (Cst "index" k)))'),
    ("x % k -> x - (x // k) * k", "x // k", {}, "is e-graph only and native"),
    ("x % k -> x - (x // k) * k", "x // k", {"baseline_reason": _EG, "native": "why"},
     "is e-graph only and native"),
    ("x % k -> x - (x // k) * k", "x // 2", {"baseline_reason": _EG},
     "no operation of the right side"),
    ("x % k -> x - (x // k) * k", "x", {"baseline_reason": _EG},
     "no operation of the right side"),
]


@pytest.mark.parametrize("text, shares, kw, want", SHARES)
def test_shares(text: str, shares: str, kw: dict, want: str) -> None:
    if want.startswith("("):
        law = rule("t", text, "is_index(x) and k != 0", shares=shares, register=False, **kw)
        assert [want in e.when for e in law.natives] == [True]
    else:
        with pytest.raises(LangError, match=want):
            rule("t", text, "is_index(x) and k != 0", shares=shares, register=False, **kw)


@pytest.mark.parametrize("lit, const, want", [
    (0, "0", True), (0, "(const i32 0)", True), (0, "(const f32 0.0)", True),
    (0, "(const f32 -0.0)", False), (0, "false", False), (0, "1", False),
    (1, "(const u8 1)", True), (1.0, "1", False), (1.0, "(const f32 1.0)", True),
    (True, "true", True), (True, "1", False), (False, "0", False)])
def test_literal_matches(lit: object, const: str, want: bool) -> None:
    assert literal_matches(lit)(parse(const)) is want


_X = {"x": SimpleNamespace(arg=6, vmin=-3, vmax=9)}


@pytest.mark.parametrize("g, want", [
    (("cmp", "<", ("bound", "vmin", "x"), ("num", 0)), True),
    (("cmp", ">=", ("bound", "vmax", "x"), ("num", 10)), False),
    (("bin", "//", ("num", -7), ("num", 2)), -3),  # C division truncates
    (("bin", "%", ("num", -7), ("num", 2)), -1),
    (("bin", "//", ("const", "x"), ("num", 0)), None),  # undefined, not folded
    (("bin", "<<", ("num", 1), ("num", 257)), None),
    (("bin", "*", ("num", 0), ("num", math.inf)), 0),
    (("bin", "+", ("num", math.inf), ("num", -math.inf)), None),
    (("bin", "&", ("num", 0.5), ("num", 1)), None),
    (("call", "max", ("const", "x"), ("num", 8)), 8),
    (("call", "abs", ("bound", "vmin", "x")), 3),
    (("not", ("cmp", "==", ("num", 1), ("bin", "//", ("num", 1), ("num", 0)))), None),
    (("and", ("cmp", "<", ("num", 2), ("num", 1)), ("bin", "%", ("num", 1), ("num", 0))),
     False),  # the first false conjunct decides
    (("or", ("bin", "%", ("num", 1), ("num", 0)), ("cmp", "<", ("num", 1), ("num", 2))),
     True),
    (("or", ("bin", "%", ("num", 1), ("num", 0)), ("cmp", "<", ("num", 2), ("num", 1))),
     None),
    (("dlim", "dmax", ("dtype", "x")), 127),
    (("and", ("dtype", "x"), ("form", "x")), True),
])
def test_guard_value(g: tuple, want: object) -> None:
    from eqsat.ir.dtype import DType
    from rules.lang_baseline import guard_value
    got = guard_value(g, _X, lambda ref: DType.parse("i8"))
    assert repr(got) == repr(want) and type(got) is type(want)


