"""The pure div/mod core (rules/divmod_core.py): Lin, every DivModRule, soundness.

A small engine (:class:`TCtx`) stands in for both real ones: atoms are names
(``"a"``) or compound tuples (``("mod", X, N)`` with ``X``, ``N`` Lins), terms are
nested tuples evaluated under C semantics. Soundness is checked on random linear
forms over random atoms with random bounds (negative ones included) and random
divisors (both signs, constant and symbolic), at every point of small domains and
at random in-bounds points of larger ones; z3 proves the identities that can be
stated symbolically.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from typing import Any

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.ir.linear import Lin, LinBuilder, lin_bounds
from eqsat.ir.semantics import cdiv, cmod
from rules.divmod_core import (
    ADVANCED,
    DIVMOD_RULES,
    GENERAL,
    RANGE_BASED,
    RECOMBINE,
    RULES_BY_NAME,
    SUM_RULES,
    all_rewrites,
    fold_divmod_general,
    recombine_sum,
    split_divisible,
)


# ---------------------------------------------------------------------------
# a toy engine: atoms are names or ("mod"|"idiv"|"mul", Lin, Lin) tuples
class TCtx(LinBuilder):
    """Bounds of named atoms are given; compound atoms' bounds are exact (enumerated)."""

    def __init__(self, bounds: dict[str, tuple[int, int]]):
        self.b = dict(bounds)
        self.cache: dict[Any, tuple[int, int]] = {}

    def base_atoms(self, a: Any) -> set[str]:
        if isinstance(a, str):
            return {a}
        return set().union(*(self.base_atoms(t) for x in a[1:] for _, t in x.terms))

    def bounds(self, a: Any) -> tuple[int, int]:
        if isinstance(a, str):
            return self.b[a]
        if a not in self.cache:
            names = sorted(self.base_atoms(a))
            vals = [v for v in (eval_atom(a, dict(zip(names, p, strict=True)))
                                for p in itertools.product(*(range(self.b[n][0], self.b[n][1] + 1)
                                                             for n in names)))
                    if v is not None]
            self.cache[a] = (min(vals), max(vals)) if vals else (0, 0)
        return self.cache[a]

    def _parts(self, a: Any, k: str) -> list[tuple[Lin, Lin]]:
        return [(a[1], a[2])] if isinstance(a, tuple) and a[0] == k else []

    def mod_parts(self, a: Any) -> list[tuple[Lin, Lin]]: return self._parts(a, "mod")
    def idiv_parts(self, a: Any) -> list[tuple[Lin, Lin]]: return self._parts(a, "idiv")
    def mul_parts(self, a: Any) -> list[tuple[Lin, Lin]]: return self._parts(a, "mul")
    def atom(self, a: Any) -> Any: return ("atom", a)
    def const(self, v: int) -> Any: return ("const", v)
    def add(self, a: Any, b: Any) -> Any: return ("add", a, b)
    def sub(self, a: Any, b: Any) -> Any: return ("sub", a, b)
    def mul(self, a: Any, c: int) -> Any: return ("mul", a, ("const", c))
    def neg(self, a: Any) -> Any: return ("neg", a)
    def idiv(self, a: Any, b: Any) -> Any: return ("idiv", a, b)
    def mod(self, a: Any, b: Any) -> Any: return ("mod", a, b)


class DivByZeroError(Exception):
    pass


def c_div(a: int, b: int) -> int:
    if b == 0:
        raise DivByZeroError
    return cdiv(a, b)


def c_mod(a: int, b: int) -> int:
    if b == 0:
        raise DivByZeroError
    return cmod(a, b)


def eval_lin(x: Lin, env: dict[str, int]) -> int:
    return x.const + sum(c * eval_atom(a, env) for c, a in x.terms)


def eval_atom(a: Any, env: dict[str, int]) -> int:
    if isinstance(a, str):
        return env[a]
    x, y = eval_lin(a[1], env), eval_lin(a[2], env)
    return {"mod": c_mod, "idiv": c_div, "mul": lambda p, q: p * q}[a[0]](x, y)


def eval_term(t: Any, env: dict[str, int]) -> int:
    k = t[0]
    if k == "atom":
        return eval_atom(t[1], env)
    if k == "const":
        return t[1]
    if k == "neg":
        return -eval_term(t[1], env)
    a, b = eval_term(t[1], env), eval_term(t[2], env)
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "idiv": lambda: c_div(a, b), "mod": lambda: c_mod(a, b)}[k]()


def show(t: Any) -> str:
    """Infix text of a term (for the worked examples)."""
    k = t[0]
    if k == "atom":
        return str(t[1]) if isinstance(t[1], str) else f"[{t[1][0]} {t[1][1]} {t[1][2]}]"
    if k == "const":
        return str(t[1])
    if k == "neg":
        return f"-({show(t[1])})"
    sym = {"add": "+", "sub": "-", "mul": "*", "idiv": "//", "mod": "%"}[k]
    return f"({show(t[1])} {sym} {show(t[2])})"


def count_div(t: Any) -> int:
    if t[0] in ("atom", "const"):
        return 0
    return (t[0] in ("idiv", "mod")) + sum(count_div(s) for s in t[1:])


def L(*pairs: tuple[int, Any], k: int = 0) -> Lin:
    return Lin.of(pairs, k)


def points(ctx: TCtx, atoms: set[str], rng: random.Random, cap: int = 600) -> list[dict]:
    names = sorted(atoms)
    doms = [range(ctx.b[n][0], ctx.b[n][1] + 1) for n in names]
    if math.prod(len(d) for d in doms) <= cap:
        return [dict(zip(names, p, strict=True)) for p in itertools.product(*doms)]
    pts = [dict(zip(names, p, strict=True))
           for p in itertools.product(*((d[0], d[-1]) for d in doms))][:64]
    pts += [{n: rng.choice(d) for n, d in zip(names, doms, strict=True)} for _ in range(cap)]
    return pts


def check_rule(rule: Any, op: str, x: Lin, y: Lin, ctx: TCtx, rng: random.Random) -> Any:
    """Apply ``rule``; when it fires, compare both sides at every point. Returns the term."""
    t = rule(op, x, y, ctx)
    if t is None:
        return None
    atoms = set().union(*(ctx.base_atoms(a) for z in (x, y) for _, a in z.terms))
    for env in points(ctx, atoms, rng):
        try:
            xv, yv = eval_lin(x, env), eval_lin(y, env)
            want = c_div(xv, yv) if op == "idiv" else c_mod(xv, yv)
        except DivByZeroError:
            continue
        got = eval_term(t, env)
        assert got == want, (f"{rule.name}: {x} {op} {y} -> {show(t)} at {env}: "
                             f"got {got}, want {want} (bounds {ctx.b})")
    return t


# ---------------------------------------------------------------------------
# Lin
def test_lin_of_merges_and_drops_zeros():
    x = Lin.of([(2, "a"), (3, "b"), (-2, "a")], 5)
    assert x.terms == ((3, "b"),) and x.const == 5


def test_lin_equality_ignores_order_and_hash_agrees():
    x, y = Lin(((1, "a"), (2, "b")), 3), Lin(((2, "b"), (1, "a")), 3)
    assert x == y and hash(x) == hash(y) and x != Lin(((1, "a"),), 3)


@pytest.mark.parametrize("terms,const,err", [
    (((0, "a"),), 0, ValueError),            # zero coefficient
    (((1, "a"), (2, "a")), 0, ValueError),   # repeated atom
    (((1.5, "a"),), 0, ValueError),          # non-int coefficient
    ((("a",),), 0, TypeError),               # not a pair
    ((), 1.0, TypeError),                    # non-int constant
    (((True, "a"),), 0, ValueError),         # a bool is not an int coefficient
    (((1, "a"), (2, "b"), (0, "c")), 0, ValueError),  # a zero after good terms
    (((1, "a"), [2, "b"]), 0, TypeError),    # a list, not a pair
])
def test_lin_rejects_bad_input(terms, const, err):
    with pytest.raises(err):
        Lin(terms, const)


@settings(max_examples=80, deadline=None)
@given(a=st.lists(st.tuples(st.integers(-30, 30), st.sampled_from("abcd")), max_size=5),
       c=st.integers(-30, 30), n=st.integers(-9, 9).filter(bool))
def test_split_prechecks_agree_with_split_divisible(a, c, n):
    from rules.divmod_core import _splits_off

    x = Lin.of(a, c)
    q, r = split_divisible(x, Lin.constant(n), None)
    assert _splits_off(x, n) == (not q.is_zero)
    assert x.divisible_by(n) == r.is_zero == (x.divide(n) is not None)


@settings(max_examples=60, deadline=None)
@given(a=st.lists(st.tuples(st.integers(-5, 5), st.sampled_from("abcd")), max_size=5),
       b=st.lists(st.tuples(st.integers(-5, 5), st.sampled_from("abcd")), max_size=5),
       ca=st.integers(-9, 9), cb=st.integers(-9, 9), k=st.integers(-4, 4))
def test_lin_plus_is_adding_a_multiple(a, b, ca, cb, k):
    x, y = Lin.of(a, ca), Lin.of(b, cb)
    assert x.plus(y, k) == x + y * k and x.plus(y, k)._map == (x + y * k)._map


@pytest.mark.parametrize("terms, want", [
    ((), {}),
    (((3, "a"), (-1, "b")), {"a": 3, "b": -1}),
    ([(2, "a")], {"a": 2}),                  # a list of pairs (checked term by term)
])
def test_lin_maps_its_terms(terms, want):
    x = Lin(terms, 0)
    assert x._map == want and x == Lin.of(list(terms), 0)


def test_lin_arithmetic_content_divide_repr():
    x = L((6, "a"), (4, "b"), k=2)
    assert x + 1 == L((6, "a"), (4, "b"), k=3)
    assert x - x == Lin() and -x == L((-6, "a"), (-4, "b"), k=-2)
    assert 2 * x == x * 2 == L((12, "a"), (8, "b"), k=4)
    assert x.content() == 2 and x.content_all() == 2 and Lin.constant(0).content_all() == 0
    assert x.divide(2) == L((3, "a"), (2, "b"), k=1) and x.divide(4) is None
    assert eval(repr(x), {"Lin": Lin}) == x
    assert x.single_atom is None and Lin.atom("a").single_atom == "a"
    assert x.evaluate({"a": 1, "b": 2}) == 16
    assert x.sorted_by(str).terms == ((6, "a"), (4, "b"))
    with pytest.raises(ZeroDivisionError):
        x.divide(0)


def test_lin_bounds_and_split():
    ctx = TCtx({"a": (-2, 3), "b": (0, 5)})
    assert lin_bounds(L((2, "a"), (-1, "b"), k=1), ctx) == (-4 - 5 + 1, 6 + 1)
    q, r = split_divisible(L((8, "a"), (3, "b"), k=16), Lin.constant(8), ctx)
    assert q == L((1, "a"), k=2) and r == L((3, "b"))
    assert split_divisible(L((8, "a")), Lin.constant(0), ctx) is None


def test_rule_registry():
    names = [r.name for r in DIVMOD_RULES]
    assert len(names) == len(set(names)) == len(RULES_BY_NAME)
    assert [r.name for r in GENERAL] == [
        "cancel_divmod", "remove_nested_mod", "fold_binary_numerator", "fold_divmod_congruence",
        "gcd_with_remainder", "divide_by_gcd", "factor_remainder", "nest_div_by_smallest_factor"]
    for r in DIVMOD_RULES:
        assert r.identity and set(r.ops) <= {"idiv", "mod"} and "DivModRule(" in repr(r)
    with pytest.raises(ValueError):
        RULES_BY_NAME["cancel_divmod"].fn("add", Lin(), Lin.constant(1), TCtx({}))


# ---------------------------------------------------------------------------
# worked examples of seed 003 (docs/rules.md)
def test_tiled_store_index_folds_to_affine():
    ctx = TCtx({"R3": (0, 3), "R4": (0, 1), "R2": (0, 3)})
    i = L((8, "R3"), (4, "R4"), (1, "R2"))
    row = RULES_BY_NAME["idiv_drop_multiple_small"]("idiv", i, Lin.constant(8), ctx)
    col = RULES_BY_NAME["mod_drop_multiple"]("mod", i, Lin.constant(8), ctx)
    assert show(row) == "R3"
    assert show(col) == "(((R4 * 4) + R2) % 8)"
    # (then (R4*4 + R2) % 8 is R4*4 + R2 by the language's mod_in_range: 0 <= it <= 7)
    # the whole store index: row*8 + col recombines with no division at all
    s = L((8, ("idiv", i, Lin.constant(8))), (1, ("mod", i, Lin.constant(8))))
    assert recombine_sum(s, ctx) == i
    # fold_divmod_general alone reaches the same row/col (congruence)
    assert show(fold_divmod_general("idiv", i, Lin.constant(8), ctx)) == "R3"
    assert show(fold_divmod_general("mod", i, Lin.constant(8), ctx)) == "((R4 * 4) + R2)"


def test_flat_recombination_example():
    ctx = TCtx({"R0": (0, 31)})
    r0 = Lin.atom("R0")
    s = L((8, ("idiv", r0, Lin.constant(8))), (1, ("mod", r0, Lin.constant(8))))
    assert recombine_sum(s, ctx) == r0
    assert show(SUM_RULES[0](s, ctx)) == "R0"


def test_first_tiling_keeps_division():
    """(R1*4 + R2)//8 with R1 < 8, R2 < 4: no rule removes the division (seed 003)."""
    ctx = TCtx({"R1": (0, 7), "R2": (0, 3)})
    x = L((4, "R1"), (1, "R2"))
    t = fold_divmod_general("idiv", x, Lin.constant(8), ctx)
    assert t is None or count_div(t) >= 1


# ---------------------------------------------------------------------------
# one line per case: rule, op, x, y, bounds, expected infix result (None = blocked)
B = {"a": (0, 7), "b": (0, 5), "n": (-9, -1), "m": (-4, 4), "r": (0, 3), "v": (0, 1),
     "s": (2, 6), "w": (0, 100), "h": (20, 40), "p": (0, 2), "R8": (0, 7), "R2": (0, 1),
     "R3": (0, 2)}
C8, C4, C2, C3 = Lin.constant(8), Lin.constant(4), Lin.constant(2), Lin.constant(3)
CASES = [
    # range-based fast paths (seed 003 §2)
    ("idiv_one_bucket", "idiv", L((1, "R3")), C3, "0"),
    ("idiv_one_bucket", "idiv", L((1, "r"), k=8), C4, "2"),
    ("idiv_one_bucket", "idiv", L((1, "m")), Lin.constant(5), "0"),         # C truncation
    ("idiv_one_bucket", "idiv", L((1, "m")), C4, None),                     # -1 and 1
    ("mod_drop_multiple", "mod", L((512, "a"), (1, "w")), Lin.constant(512), "(w % 512)"),
    ("mod_drop_multiple", "mod", L((8, "n"), (1, "a")), C8, None),          # signs differ
    ("mod_drop_multiple", "mod", L((-8, "a"), (-1, "b")), C8, "-((b % 8))"),  # mirrored
    ("idiv_drop_multiple_small", "idiv", L((512, "a"), (1, "b")), Lin.constant(512), "a"),
    ("idiv_drop_multiple_small", "idiv", L((8, "n"), (1, "r")), C8, None),   # a*n+b < 0
    ("idiv_drop_multiple_small", "idiv", L((8, "a"), (1, "w")), C8, None),   # b >= n
    ("idiv_drop_multiple", "idiv", L((8, "a"), (1, "w")), C8, "(a + (w // 8))"),
    ("idiv_drop_multiple", "idiv", L((4, "m"), (1, "r")), C4, None),         # x crosses 0
    ("idiv_drop_multiple", "idiv", L((2, "n")), C2, "n"),                    # (2n)//2, n < 0
    ("idiv_small_offset", "idiv", L((4, "r"), k=1), C8, "((r * 4) // 8)"),
    ("idiv_small_offset", "idiv", L((4, "r"), k=4), C8, None),               # crosses bucket
    ("idiv_small_offset", "idiv", L((4, "m"), k=1), C8, None),               # x may be < 0
    ("idiv_small_offset", "idiv", L((4, "r"), (1, "v"), k=2), C8, "(((r * 4) + v) // 8)"),
    ("idiv_large_offset", "idiv", L((1, "w"), k=70), C8, "(((w + 6) // 8) + 8)"),
    ("idiv_large_offset", "idiv", L((1, "w"), k=6), C8, None),               # c < d
    ("idiv_large_offset", "idiv", L((1, "h"), k=-10), C8, "(((h + 6) // 8) + -2)"),
    ("idiv_large_offset", "idiv", L((1, "m"), k=-3), C8, None),              # crosses 0
    # fold_divmod_general (seed 003 §3)
    ("cancel_divmod", "idiv", L((1, "R3")), C3, "0"),
    ("cancel_divmod", "mod", L((1, "r"), k=8), C4, "r"),
    ("cancel_divmod", "idiv", L((1, "b"), k=10), L((1, "s")), None),         # 10/6 vs 15/2
    ("cancel_divmod", "idiv", L((1, "R3")), L((1, "m")), None),              # y crosses 0
    ("remove_nested_mod", "mod", L((1, ("mod", L((1, "R8")), C4)), (1, "R2")), C2,
     "((R8 + R2) % 2)"),
    ("remove_nested_mod", "mod", L((1, ("mod", L((1, "R8")), C3)), (1, "R2")), C2, None),
    ("remove_nested_mod", "mod", L((1, ("mod", L((1, "m")), C4)), (1, "R2")), C2, None),
    ("remove_nested_mod", "mod", L((1, ("mod", L((1, "m")), C4))), C2, "(m % 2)"),  # 1 term
    ("fold_binary_numerator", "mod", L((3, "v"), k=2), Lin.constant(5), "(2 - (v * 2))"),
    ("fold_binary_numerator", "idiv", L((3, "v"), k=-2), C2, "(v + -1)"),   # -2//2, 1//2
    ("fold_binary_numerator", "mod", L((3, "r"), k=2), Lin.constant(5), None),  # 4 values
    ("fold_divmod_congruence", "mod", L((8, "r"), (1, "v")), Lin.constant(7), "(r + v)"),
    ("fold_divmod_congruence", "idiv", L((8, "r"), (1, "v")), Lin.constant(7), "r"),
    ("fold_divmod_congruence", "mod", L((8, "w"), (1, "v")), Lin.constant(7), None),
    ("fold_divmod_congruence", "mod", L((8, "m"), (1, "v")), Lin.constant(7), None),  # x<0 too
    ("gcd_with_remainder", "idiv", L((6, "a"), (4, "b")), C8, "(((a * 3) + (b * 2)) // 4)"),
    ("gcd_with_remainder", "mod", L((6, "a"), (4, "b"), k=1), C8,
     "(((((a * 3) + (b * 2)) % 4) * 2) + 1)"),
    ("gcd_with_remainder", "idiv", L((6, "a"), (3, "b")), C8, None),         # gcd 1
    ("gcd_with_remainder", "idiv", L((6, "m"), (4, "b")), C8, None),         # x crosses 0
    ("divide_by_gcd", "idiv", L((4, "a")), L((2, "s")), "((a * 2) // s)"),
    ("divide_by_gcd", "mod", L((4, "a"), k=2), L((2, "s")), "((((a * 2) + 1) % s) * 2)"),
    ("divide_by_gcd", "idiv", L((4, "m")), L((2, "s")), "((m * 2) // s)"),   # any sign
    ("divide_by_gcd", "idiv", L((4, "a"), k=1), L((2, "s")), None),
    ("factor_remainder", "idiv", L((8, "a"), (3, "b")), C8, "(a + ((b * 3) // 8))"),
    ("factor_remainder", "mod", L((9, "a"), (3, "b")), C8, "((a + (b * 3)) % 8)"),
    ("factor_remainder", "idiv", L((1, "a"), (1, ("mul", L((1, "b")), L((1, "s"))))),
     L((1, "s")), "(b + (a // s))"),
    ("factor_remainder", "idiv", L((8, "a"), (3, "m")), C8, None),           # crosses 0
    ("factor_remainder", "idiv", L((3, "a"), (5, "b")), C8, None),           # nothing splits
    ("nest_div_by_smallest_factor", "idiv", L((8, "r"), (4, "v"), (1, "p")), Lin.constant(16),
     "(((r * 2) + v) // 4)"),
    ("nest_div_by_smallest_factor", "idiv", L((3, "a"), (5, "b")), Lin.constant(15), None),
    ("nest_div_by_smallest_factor", "idiv", L((4, "m"), (1, "p")), Lin.constant(16), None),
    # advanced division (seed 003 §4)
    ("exact_division", "idiv", L((4, "a"), (8, "m"), k=-12), C4, "((a + (m * 2)) + -3)"),
    ("exact_division", "mod", L((4, "a"), (8, "m")), Lin.constant(-4), "0"),
    ("exact_division", "idiv", L((4, "a"), (6, "m")), C4, None),
    ("exact_division", "idiv", L((1, ("mul", L((1, "a")), L((1, "s"))))), L((1, "s")), "a"),
    ("sum_divisible_symbolic", "idiv", L((1, ("mul", L((1, "a")), L((1, "s")))), (1, "b")),
     L((1, "s")), "(a + (b // s))"),
    ("sum_divisible_symbolic", "idiv", L((1, ("mul", L((1, "a")), L((1, "s")))), (-1, "b")),
     L((1, "s")), None),                                                   # a*s - b may be < 0
    ("sum_divisible_symbolic", "mod", L((3, "s"), (1, "b")), L((1, "s")), "(b % s)"),
    ("mod_coef_reduce", "mod", L((8, "r"), (1, "w")), Lin.constant(7), "((r + w) % 7)"),
    ("mod_coef_reduce", "mod", L((8, "r"), (1, "m")), Lin.constant(7), None),  # crosses 0
    ("mod_coef_reduce", "mod", L((3, "r"), (1, "w")), Lin.constant(7), None),  # nothing reduces
    ("idiv_of_mod", "idiv", L((1, ("mod", L((1, "m")), Lin.constant(12)))), C4,
     "((m // 4) % 3)"),
    ("idiv_of_mod", "idiv", L((1, ("mod", L((1, "m")), Lin.constant(10)))), C4, None),
    ("nested_idiv_offset", "idiv", L((1, ("idiv", L((1, "w")), C4)), k=3), C2, "((w + 12) // 8)"),
    ("nested_idiv_offset", "idiv", L((1, ("idiv", L((1, "n")), C4)), k=-3), C2,
     "((n + -12) // 8)"),
    ("nested_idiv_offset", "idiv", L((1, ("idiv", L((1, "m")), C4)), k=3), C2, None),  # signs
]


@pytest.mark.parametrize("name,op,x,y,want", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_cases(name, op, x, y, want):
    ctx = TCtx(B)
    t = check_rule(RULES_BY_NAME[name], op, x, y, ctx, random.Random(0))
    if want is None:
        assert t is None, f"{name} should be blocked, gave {show(t)}"
    else:
        assert t is not None, f"{name} did not fire"
        assert show(t) == want


def test_every_rule_has_a_positive_and_a_blocked_case():
    fired = {c[0] for c in CASES if c[4] is not None}
    blocked = {c[0] for c in CASES if c[4] is None}
    names = {r.name for r in DIVMOD_RULES}
    assert names <= fired and names <= blocked


def test_divisor_range_containing_zero_never_folds():
    ctx = TCtx({"a": (0, 7), "z": (0, 3)})
    for r in DIVMOD_RULES:
        for op in r.ops:
            assert r(op, L((1, "a")), L((1, "z")), ctx) is None
            assert r(op, L((1, "a")), Lin.constant(0), ctx) is None


class InvalidCtx(TCtx):
    """Atoms named ``bad*`` may evaluate to Invalid."""

    def may_be_invalid(self, a: Any) -> bool:
        return isinstance(a, str) and a.startswith("bad")


def test_operands_that_may_be_invalid_are_never_rewritten():
    ctx = InvalidCtx({"a": (0, 7), "bad": (0, 3)})
    for x, y in [(L((4, "bad")), C4), (L((1, "a")), L((1, "bad"), k=1)), (L((8, "bad")), C8)]:
        for r in DIVMOD_RULES:
            for op in r.ops:
                assert r(op, x, y, ctx) is None, r.name
    s = L((1, ("mod", L((1, "a")), L((1, "bad"), k=1))),
          (1, ("mul", L((1, ("idiv", L((1, "a")), L((1, "bad"), k=1)))), L((1, "bad"), k=1))))
    assert recombine_sum(s, ctx) is None          # would drop the divisor
    assert recombine_sum(s, TCtx({"a": (0, 7), "bad": (0, 3)})) == L((1, "a"))


def test_ordered_general_first_wins():
    ctx = TCtx(B)
    x = L((6, "a"), (4, "b"))
    assert show(fold_divmod_general("idiv", x, Lin.constant(12), ctx)) == \
        "(((a * 3) + (b * 2)) // 6)"
    # gcd_with_remainder (rule 5) comes before nest_div_by_smallest_factor (rule 8)
    x = L((4, "a"), (2, "v"))
    names = [n for n, _ in all_rewrites("idiv", x, Lin.constant(8), ctx, GENERAL)]
    assert names[0] == "gcd_with_remainder" and "nest_div_by_smallest_factor" in names
    assert show(fold_divmod_general("idiv", x, Lin.constant(8), ctx)) == "(((a * 2) + v) // 4)"


def test_negative_numerator_symmetry_is_headroom():
    """(2*x)//2 -> x and (2*x)%2 -> 0 with x possibly negative (tinygrad keeps them)."""
    ctx = TCtx({"x": (-5, 5)})
    x2 = L((2, "x"))
    assert show(RULES_BY_NAME["exact_division"]("idiv", x2, C2, ctx)) == "x"
    assert show(RULES_BY_NAME["exact_division"]("mod", x2, C2, ctx)) == "0"
    ctx = TCtx({"x": (-9, 0)})
    t = check_rule(RULES_BY_NAME["fold_divmod_congruence"], "idiv", L((8, "x"), k=-3), C8, ctx,
                   random.Random(0))
    assert show(t) == "-((((x * -1) * 8) + 3) // 8)" or count_div(t) == 0


# ---------------------------------------------------------------------------
# recombination sums
REC = [
    # f*(X%n) + f*n*(X//n) -> f*X
    (L((1, ("mod", L((1, "a"), k=3), C4)), (4, ("idiv", L((1, "a"), k=3), C4))), L((1, "a"), k=3)),
    (L((3, ("mod", L((1, "m")), C4)), (12, ("idiv", L((1, "m")), C4)), (1, "b")),
     L((3, "m"), (1, "b"))),
    # #2: ((x//2) % 3) + (x//6)*3 -> x//2
    (L((1, ("mod", L((1, ("idiv", L((1, "w")), C2))), C3)),
       (3, ("idiv", L((1, "w")), Lin.constant(6)))),
     L((1, ("idiv", L((1, "w")), C2)))),
    # symbolic n: x%s + (x//s)*s -> x
    (L((1, ("mod", L((1, "w")), L((1, "s")))),
       (1, ("mul", L((1, ("idiv", L((1, "w")), L((1, "s"))))), L((1, "s"))))), L((1, "w"))),
    # blocked: coefficient mismatch
    (L((1, ("mod", L((1, "a")), C4)), (3, ("idiv", L((1, "a")), C4))), None),
    # blocked: different numerators
    (L((1, ("mod", L((1, "a")), C4)), (4, ("idiv", L((1, "b")), C4))), None),
    # the quotient of X + k*n, X and X + k*n of one sign: X%n + n*((X + k*n)//n) -> X + k*n
    (L((1, ("mod", L((3, "a"), k=2), C4)), (4, ("idiv", L((3, "a"), k=6), C4))),
     L((3, "a"), k=6)),
    (L((2, ("mod", L((1, "n")), C4)), (8, ("idiv", L((1, "n"), k=-8), C4))),
     L((2, "n"), k=-16)),
    # blocked: m + 4 and m may differ in sign ((m + 4)//4 is not m//4 + 1 at m = -1)
    (L((1, ("mod", L((1, "m")), C4)), (4, ("idiv", L((1, "m"), k=4), C4))), None),
    # blocked: the offset is not a multiple of n
    (L((1, ("mod", L((1, "a")), C4)), (4, ("idiv", L((1, "a"), k=3), C4))), None),
]


def _idv(x: Lin, k: int) -> Any:
    return ("idiv", x, Lin.constant(k))


def _md(x: Lin, k: int) -> Any:
    return ("mod", x, Lin.constant(k))


W, M_ = L((1, "w")), L((1, "m"))
# g*e*((x//e) % d) + g*(x % e) -> g*(x % (e*d)), x read through nested divisions
CHAIN = [
    (L((4, _md(L((1, _idv(W, 4))), 3)), (1, _md(W, 4))), "(w % 12)"),
    (L((4, _md(L((1, _idv(M_, 4))), 3)), (1, _md(M_, 4))), "(m % 12)"),      # any sign
    (L((12, _md(L((1, _idv(W, 72))), 3)), (1, _md(L((1, _idv(W, 6))), 12))),
     "([idiv w 6] % 36)"),                                                  # w//72 == (w//6)//12
    (L((6, _md(L((1, _idv(W, 3))), -3)), (2, _md(W, 3)), (1, "b")), "(b + ((w % 9) * 2))"),
    (L((4, _md(L((1, _idv(W, 4))), 3)), (2, _md(W, 4))), None),             # f != g*e
    (L((4, _md(L((1, _idv(W, 2))), 3)), (1, _md(W, 4))), None),             # x//2 is not x//4
]


@pytest.mark.parametrize("s,want", CHAIN)
def test_recombine_mod_chain_cases(s, want):
    ctx = TCtx(B)
    t = SUM_RULES[1](s, ctx)
    assert (None if t is None else show(t)) == want
    if t is not None:
        for env in points(ctx, set().union(*(ctx.base_atoms(a) for _, a in s.terms)),
                          random.Random(2)):
            assert eval_lin(s, env) == eval_term(t, env)


def test_sum_rules_sound_on_random_sums():
    rng = random.Random(7)
    fired: Counter[str] = Counter()
    for _ in range(1500):
        _, x, _, ctx = random_case(rng)
        e, d, g = rng.choice((2, 3, 4, 8)), rng.choice((2, 3, -3, 5)), rng.choice((1, 2, -1, 3))
        k = rng.choice((1, 1, 2, 6))
        base = Lin.atom(_idv(x, k)) if k != 1 else x
        c2 = rng.choice((-2, 1, 2))
        terms = [(g * e * rng.choice((1, 1, 1, 2)), _md(Lin.atom(_idv(base, e)), d)),
                 (g, _md(base, e)), (rng.choice((d * e, e, 1)), _idv(base, rng.choice((e, 2)))),
                 # recombine_quotient_sum's pair: (base//e + c2) % |d|, (base + e*c2)//(e*|d|)
                 (g, _md(Lin.atom(_idv(base, e)) + c2, abs(d))),
                 (g * abs(d) * rng.choice((1, 1, -1)), _idv(base + e * c2, e * abs(d)))]
        s = Lin.of(rng.sample(terms, rng.randint(1, 4)), rng.randint(-3, 3))
        for rule in SUM_RULES:
            t = rule(s, ctx)
            if t is None:
                continue
            fired[rule.name] += 1
            atoms = set().union(*(ctx.base_atoms(a) for _, a in s.terms))
            for env in points(ctx, atoms, rng, cap=200):
                try:
                    want = eval_lin(s, env)
                except DivByZeroError:
                    continue
                assert eval_term(t, env) == want, (rule.name, s, show(t), env)
    assert all(fired[r.name] >= 10 for r in SUM_RULES), fired


@pytest.mark.parametrize("s,want", REC)
def test_recombine_cases(s, want):
    ctx = TCtx(B)
    got = recombine_sum(s, ctx)
    assert got == want
    if got is not None:
        for env in points(ctx, set().union(*(ctx.base_atoms(a) for _, a in s.terms)),
                          random.Random(1)):
            assert eval_lin(s, env) == eval_lin(got, env)


# ---------------------------------------------------------------------------
# random soundness of every rule
_DIVS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, -1, -2, -3, -4, -8)


def _bounds(rng: random.Random) -> tuple[int, int]:
    k = rng.choice(("pos", "pos", "neg", "mixed", "point", "bin"))
    if k == "pos":
        lo = rng.randint(0, 3)
        return lo, lo + rng.randint(0, 12)
    if k == "neg":
        hi = rng.randint(-6, 0)
        return hi - rng.randint(0, 10), hi
    if k == "mixed":
        return -rng.randint(1, 8), rng.randint(0, 8)
    if k == "bin":
        lo = rng.randint(-3, 3)
        return lo, lo + 1
    v = rng.randint(-4, 4)
    return v, v


def random_case(rng: random.Random) -> tuple[str, Lin, Lin, TCtx]:
    names = ["v0", "v1", "v2"][: rng.randint(1, 3)]
    ctx = TCtx({n: _bounds(rng) for n in names})
    d = rng.choice(_DIVS)
    atoms: list[Any] = list(names)
    for _ in range(rng.randint(0, 2)):  # compound atoms over the names
        inner = Lin.of([(rng.choice((1, 1, 2, 3, -1)), rng.choice(names))], rng.randint(-3, 3))
        k = rng.choice(("mod", "idiv", "mul"))
        if k == "mul":
            atoms.append(("mul", Lin.atom(rng.choice(names)), Lin.atom(rng.choice(names))))
        else:
            atoms.append((k, inner, Lin.constant(rng.choice((2, 3, 4, 6, 8, -4)) * (
                1 if rng.random() < 0.5 else abs(d)))))
    coef_pool = [d, 2 * d, d + 1, d - 1, 1, -1, 2, 3, -d, abs(d) // 2 or 1, rng.randint(-20, 20)]
    pairs = [(rng.choice(coef_pool), rng.choice(atoms)) for _ in range(rng.randint(1, 3))]
    x = Lin.of([(c, a) for c, a in pairs if c], rng.choice((0, 0, 1, -1, d, 3 * d + 1,
                                                            rng.randint(-30, 30))))
    if rng.random() < 0.2 and len(atoms) > len(names):  # a lone nested div/mod numerator
        x = Lin.atom(rng.choice(atoms[len(names):])) + rng.choice((0, 0, 1, -2, 5))
    r = rng.random()
    if r < 0.75:
        y = Lin.constant(d)
    else:  # symbolic divisor that excludes 0 (or may not: then rules must refuse)
        s = rng.choice(names)
        y = Lin.of([(rng.choice((1, 1, 2, -1)), s)], rng.choice((0, 0, 1, 3)))
        if rng.random() < 0.5:
            x = x + Lin.atom(("mul", Lin.atom(rng.choice(names)), y), rng.choice((1, 2, -1)))
    op = rng.choice(("idiv", "mod"))
    return op, x, y, ctx


def test_every_rule_sound_on_random_forms():
    rng = random.Random(20240601)
    fired: Counter[str] = Counter()
    for _ in range(2500):
        op, x, y, ctx = random_case(rng)
        for rule in DIVMOD_RULES:
            if op in rule.ops and check_rule(rule, op, x, y, ctx, rng) is not None:
                fired[rule.name] += 1
        s = x + Lin.atom(("mod", x, y), 1) + Lin.atom(("idiv", x, y), y.const) \
            if y.is_const and abs(y.const) > 1 else None
        if s is not None and lin_bounds(y, ctx)[0] * lin_bounds(y, ctx)[1] > 0:
            out = recombine_sum(s, ctx)
            assert out == x * 2, (s, out)
            fired["recombine_divmod"] += 1
    missing = [r.name for r in DIVMOD_RULES if fired[r.name] < 3]
    assert not missing, f"rules that (almost) never fired on random forms: {missing} {fired}"


@settings(max_examples=150)
@given(st.integers(0, 2**32))
def test_every_rule_sound_hypothesis(seed):
    rng = random.Random(seed)
    op, x, y, ctx = random_case(rng)
    for rule in DIVMOD_RULES:
        if op in rule.ops:
            check_rule(rule, op, x, y, ctx, rng)


@pytest.mark.parametrize("group", [RANGE_BASED, GENERAL, ADVANCED, RECOMBINE])
def test_groups_partition_rules(group):
    assert all(r in DIVMOD_RULES for r in group)


# ---------------------------------------------------------------------------
# z3 proofs of the symbolic identities (C semantics)
def _tdiv(a: Any, b: Any) -> Any:
    """C truncating division in z3 (z3's `/` on Ints is floor for b > 0)."""
    q = z3.If(a >= 0, a, -a) / z3.If(b >= 0, b, -b)
    return z3.If((a >= 0) == (b >= 0), q, -q)


def _tmod(a: Any, b: Any) -> Any:
    return a - _tdiv(a, b) * b


def _prove(claim: Any, *hyps: Any, timeout: int = 60000) -> str:
    s = z3.Solver()
    s.set("timeout", timeout)
    s.add(*hyps)
    s.add(z3.Not(claim))
    r = s.check()
    return "proved" if r == z3.unsat else ("counterexample" if r == z3.sat else "unknown")


ZX, ZY, ZN, ZA, ZB, ZC, ZD, ZF, ZG, ZK, ZQ, ZR = z3.Ints("x y n a b c d f g k q r")
ZC1, ZC2, ZC3 = z3.Ints("c1 c2 c3")

_DV = (2, 3, 4, -2, -3)        # concrete divisors where the symbolic form is nonlinear
_PV = (2, 3, 4)


def _each(*vals: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*vals))


# name, (params -> claim, hypotheses), parameter tuples, expected verdict. Parameters
# instantiate divisors where the fully symbolic statement is nonlinear (z3 gives up);
# the numerators (x, a, b, y, c2, ...) stay symbolic.
Z3_CASES = [
    ("recombine_1", lambda: (_tmod(ZX, ZN) + _tdiv(ZX, ZN) * ZN == ZX, [ZN != 0]), [()],
     "proved"),
    ("recombine_2", lambda a, c: (_tmod(_tdiv(ZX, a), c) + _tdiv(ZX, a * c) * c == _tdiv(ZX, a),
                                  []), _each(_DV, _DV), "proved"),
    ("recombine_3", lambda: (_tmod(ZX, ZC1) * ZC2 + _tdiv(ZX, ZC1) * (ZC1 * ZC2) == ZX * ZC2,
                             [ZC1 != 0]), [()], "proved"),
    ("recombine_4", lambda: (ZY + _tmod(ZX, ZN) + _tdiv(ZX, ZN) * ZN == ZY + ZX, [ZN != 0]), [()],
     "proved"),
    ("recombine_5", lambda c1, c3: (_tdiv(_tdiv(ZA, c1) + ZC2, c3) == _tdiv(ZA + c1 * ZC2, c1 * c3),
                                    [z3.Or(z3.And(ZA >= 0, ZC2 >= 0), z3.And(ZA <= 0, ZC2 <= 0))]),
     _each(_PV, _PV), "proved"),
    ("recombine_5_unguarded", lambda: (_tdiv(_tdiv(ZA, 2) + ZC2, 3) == _tdiv(ZA + 2 * ZC2, 6),
                                       []), [()], "counterexample"),
    ("nested_idiv", lambda b, c: (_tdiv(_tdiv(ZA, b), c) == _tdiv(ZA, b * c), []),
     _each(_DV, _DV), "proved"),
    ("idiv_of_mod", lambda c, k: (_tdiv(_tmod(ZA, k * c), c) == _tmod(_tdiv(ZA, c), k), []),
     _each(_PV, _DV), "proved"),
    ("drop_multiple_idiv", lambda: (_tdiv(ZA * ZN + ZB, ZN) == ZA + _tdiv(ZB, ZN), [
        ZN != 0, z3.Or(z3.And(ZA * ZN + ZB >= 0, ZB >= 0), z3.And(ZA * ZN + ZB <= 0, ZB <= 0))]),
     [()], "proved"),
    ("drop_multiple_idiv_unguarded", lambda: (_tdiv(ZA * ZN + ZB, ZN) == ZA + _tdiv(ZB, ZN),
                                              [ZN > 0]), [()], "counterexample"),
    ("drop_multiple_mod", lambda: (_tmod(ZA * ZN + ZB, ZN) == _tmod(ZB, ZN), [
        ZN != 0, z3.Or(z3.And(ZA * ZN + ZB >= 0, ZB >= 0), z3.And(ZA * ZN + ZB <= 0, ZB <= 0))]),
     [()], "proved"),
    ("drop_multiple_mod_unguarded", lambda: (_tmod(ZA * ZN + ZB, ZN) == _tmod(ZB, ZN), [ZN > 0]),
     [()], "counterexample"),
    ("drop_multiple_small", lambda: (_tdiv(ZA * ZN + ZB, ZN) == ZA,
                                     [ZN > 0, ZB >= 0, ZB < ZN, ZA * ZN + ZB >= 0]), [()],
     "proved"),
    ("drop_multiple_small_seed_guard_only", lambda: (_tdiv(ZA * ZN + ZB, ZN) == ZA,
                                                     [ZN > 0, ZB >= 0, ZB < ZN]), [()],
     "counterexample"),
    # z3's % and / on Ints are floor for a positive divisor (the rule's c%d, c//d)
    ("large_offset", lambda: (_tdiv(ZX + ZC, ZD) == _tdiv(ZX + ZC % ZD, ZD) + ZC / ZD,
                              [ZD > 0, ZX + ZC >= 0, ZX + ZC % ZD >= 0]), [()], "proved"),
    ("large_offset_unguarded", lambda: (_tdiv(ZX + ZC, ZD) == _tdiv(ZX + ZC % ZD, ZD) + ZC / ZD,
                                        [ZD > 0]), [()], "counterexample"),
    ("small_offset", lambda: (_tdiv(ZX + ZC, ZD) == _tdiv(ZX, ZD),
                              [ZD > 0, ZX >= 0, ZC >= 0, ZX % ZD + ZC < ZD]), [()], "proved"),
    ("factor_remainder_idiv", lambda: (_tdiv(ZY * ZQ + ZR, ZY) == ZQ + _tdiv(ZR, ZY),
                                       [ZY > 0, ZY * ZQ + ZR >= 0, ZR >= 0]), [()], "proved"),
    ("factor_remainder_mod", lambda: (_tmod(ZY * ZQ + ZR, ZY) == _tmod(ZR, ZY),
                                      [ZY > 0, ZY * ZQ + ZR >= 0, ZR >= 0]), [()], "proved"),
    ("divide_by_gcd_idiv", lambda: (_tdiv(ZG * ZA, ZG * ZB) == _tdiv(ZA, ZB), [ZG != 0, ZB != 0]),
     [()], "proved"),
    ("divide_by_gcd_mod", lambda: (_tmod(ZG * ZA, ZG * ZB) == ZG * _tmod(ZA, ZB),
                                   [ZG != 0, ZB != 0]), [()], "proved"),
    ("mirror_idiv_numerator", lambda: (_tdiv(ZX, ZY) == -_tdiv(-ZX, ZY), [ZY != 0]), [()],
     "proved"),
    ("mirror_mod_numerator", lambda: (_tmod(ZX, ZY) == -_tmod(-ZX, ZY), [ZY != 0]), [()],
     "proved"),
    ("mirror_idiv_divisor", lambda: (_tdiv(ZX, ZY) == -_tdiv(ZX, -ZY), [ZY != 0]), [()], "proved"),
    ("mirror_mod_divisor", lambda: (_tmod(ZX, ZY) == _tmod(ZX, -ZY), [ZY != 0]), [()], "proved"),
    ("mod_in_range", lambda: (_tmod(ZX, ZY) == ZX, [ZY > 0, ZX < ZY, -ZX < ZY]), [()], "proved"),
    ("cancel_divmod_mod", lambda: (_tmod(ZX, ZY) == ZX - ZQ * ZY, [ZY != 0, _tdiv(ZX, ZY) == ZQ]),
     [()], "proved"),
    # congruence with symbolic bounds: x = c*q + rem, b*c <= rem < (b+1)*c, x >= 0
    ("congruence_mod", lambda: (_tmod(ZC * ZQ + ZR, ZC) == ZR - ZB * ZC,
                                [ZC > 0, ZC * ZQ + ZR >= 0, ZB * ZC <= ZR, ZR < ZB * ZC + ZC]),
     [()], "proved"),
    ("congruence_idiv", lambda: (_tdiv(ZC * ZQ + ZR, ZC) == ZQ + ZB,
                                 [ZC > 0, ZC * ZQ + ZR >= 0, ZB * ZC <= ZR, ZR < ZB * ZC + ZC]),
     [()], "proved"),
    ("congruence_negative_numerator", lambda: (_tmod(ZC * ZQ + ZR, ZC) == ZR - ZB * ZC,
                                               [ZC > 0, ZB * ZC <= ZR, ZR < ZB * ZC + ZC]),
     [()], "counterexample"),
    # gcd_with_remainder: x = g*a + k, c = g*d, a' = a + (k mod c) div g >= 0, x >= 0
    ("gcd_with_remainder_idiv", lambda: (
        _tdiv(ZG * ZA + ZK, ZG * ZD) == _tdiv(ZA + (ZK % (ZG * ZD)) / ZG, ZD) + ZK / (ZG * ZD),
        [ZG > 0, ZD > 0, ZG * ZA + ZK >= 0, ZA + (ZK % (ZG * ZD)) / ZG >= 0]), [()], "proved"),
    ("gcd_with_remainder_mod", lambda g, d: (
        _tmod(g * ZA + ZK, g * d) == _tmod(ZA + (ZK % (g * d)) / g, d) * g + ZK % g,
        [g * ZA + ZK >= 0, ZA + (ZK % (g * d)) / g >= 0]), _each(_PV, _PV), "proved"),
    ("nest_by_factor_idiv", lambda: (_tdiv(_tdiv(ZX, ZF), ZD) == _tdiv(ZX, ZF * ZD),
                                     [ZF > 0, ZD > 0]), [()], "proved"),
    ("nest_by_factor_mod", lambda: (
        _tmod(ZX, ZF * ZD) == _tmod(_tdiv(ZX, ZF), ZD) * ZF + _tmod(ZX, ZF),
        [ZF > 0, ZD > 0, ZX >= 0]), [()], "proved"),
    ("remove_nested_mod", lambda: (_tmod(_tmod(ZA, ZK * ZC) + ZB, ZC) == _tmod(ZA + ZB, ZC),
                                   [ZC > 0, ZK != 0, _tmod(ZA, ZK * ZC) + ZB >= 0, ZA + ZB >= 0]),
     [()], "proved"),
    ("remove_nested_mod_unguarded", lambda: (_tmod(_tmod(ZA, 4) + ZB, 2) == _tmod(ZA + ZB, 2), []),
     [()], "counterexample"),
    ("recombine_mod_chain", lambda e, d: (_tmod(ZX, e * d) == _tmod(_tdiv(ZX, e), d) * e
                                          + _tmod(ZX, e), []), _each(_PV, (2, 3, 5)), "proved"),
    ("recombine_quotient_sum", lambda c1, c3: (
        _tmod(_tdiv(ZX, c1) + ZK, c3) + _tdiv(ZX + c1 * ZK, c1 * c3) * c3 == _tdiv(ZX, c1) + ZK,
        [ZX >= 0, ZX + c1 * ZK >= 0]), _each(_PV, _PV), "proved"),
    # either guard dropped: x = -1 (c2 = 2), x = 1 (c2 = -2) with c1 = c3 = 2
    ("recombine_quotient_sum_unguarded", lambda c2, hyp: (
        _tmod(_tdiv(ZX, 2) + c2, 2) + _tdiv(ZX + 2 * c2, 4) * 2 == _tdiv(ZX, 2) + c2, [hyp]),
     [(2, ZX + 4 >= 0), (-2, ZX >= 0)], "counterexample"),
    ("remove_nested_mod_single_term", lambda c, k: (_tmod(_tmod(ZA, k * c), c) == _tmod(ZA, c),
                                                    []), _each(_PV, _DV), "proved"),
]


@pytest.mark.parametrize("name,make,params,want", Z3_CASES, ids=[c[0] for c in Z3_CASES])
def test_z3_identities(name, make, params, want):
    for p in params:
        claim, hyps = make(*p)
        got = _prove(claim, *hyps)
        assert got == want, f"{name}{p}: {got}"


def _congruence_reference(op: str, x: Lin, c: int, ctx: TCtx) -> Lin | None:
    """fold_divmod_congruence's search written plainly: the first of at most 64 residue
    choices (the last factor varying fastest) whose remainder form's bounds fall in one
    bucket, its bounds summed afresh for each choice."""
    choices = [(f % c, f % c - c) if 2 * (f % c) == c else (min(f % c, f % c - c, key=abs),)
               for f, _ in x.terms]
    for rems in itertools.islice(itertools.product(*choices), 64):
        lo = hi = x.const % c
        for r, (_, a) in zip(rems, x.terms, strict=True):
            alo, ahi = ctx.bounds(a)
            lo, hi = (lo + r * alo, hi + r * ahi) if r >= 0 else (lo + r * ahi, hi + r * alo)
        if lo // c != hi // c:
            continue
        pairs = zip(rems, x.terms, strict=True)
        if op == "mod":
            return Lin.of([(r, a) for r, (_, a) in pairs], x.const % c) - (lo // c) * c
        return Lin.of([((f - r) // c, a) for r, (f, a) in pairs], x.const // c + lo // c)
    return None


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 5), st.booleans(),
                                st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=11),
       half=st.integers(1, 3), k=st.integers(-7, 13), op=st.sampled_from(["idiv", "mod"]))
def test_congruence_tries_the_tied_residues_in_order(terms: list, half: int, k: int, op: str):
    # coefficients c*q + half tie (two nearest residues); more than six ties: the
    # first choices keep the first ties' residues and vary the last six
    c = 2 * half
    ctx = TCtx({f"t{i}": (lo, lo + w) for i, (_, _, _, lo, w) in enumerate(terms)})
    x = Lin.of([(c * q + (half if tie else r % c), f"t{i}")
                for i, (q, r, tie, _, _) in enumerate(terms)], k)
    out = RULES_BY_NAME["fold_divmod_congruence"].core.raw(op, x, Lin.constant(c), ctx)
    want = _congruence_reference(op, x, c, ctx)
    if want is None or x.is_const:
        assert out is None
    else:
        assert out is not None and not out.extra
        assert (out.lin.terms, out.lin.const) == (want.terms, want.const)


@pytest.mark.parametrize("op", ["idiv", "mod"])
def test_congruence_finds_a_fold_in_the_sixth_last_ties_second_residue(op: str):
    # seven odd coefficients over 2 (all tie); t1 (the sixth-last tie) in [1, 2] puts
    # the remainder form in one bucket only with residue -1: the 33rd choice
    ctx = TCtx({"t0": (0, 0), "t1": (1, 2), **{f"t{i}": (2, 2) for i in range(2, 7)}})
    x = Lin.of([(1, f"t{i}") for i in range(7)], 0)
    want = _congruence_reference(op, x, 2, ctx)
    out = RULES_BY_NAME["fold_divmod_congruence"].core.raw(op, x, Lin.constant(2), ctx)
    assert want is not None and want.coef("t1") == (1 if op == "idiv" else -1)
    assert out is not None and (out.lin.terms, out.lin.const) == (want.terms, want.const)
