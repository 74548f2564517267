"""The baseline twin of the div/mod family (rules/divmod.py): GROUPS, to_lin, UOpCtx.

One line per case: every Rule of the three groups with a case it rewrites
(checked equal to its input on every assignment) and a case its guard blocks;
seed 003's worked examples through the full ``symbolic()`` matcher; random
index expressions rewritten by the div/mod rules alone stay equal to their input
(C semantics); and the corpus measurement the family is held to.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat import UOp, dtypes, parse, to_sexpr
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.interp import EvalError, evaluate
from eqsat.ir.linear import Lin
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import PatternMatcher, graph_rewrite
from rules import symbolic
from rules.divmod import GROUPS, UOP_CTX, UOpCtx, recombine_prepass, to_lin
from rules.divmod_core import RULES_BY_NAME, SUM_RULES, fold_divmod_general
from tests.rules._cases import engines_test
from tests.strategies import assignments, int_exprs

RULES = {r.name: r for g in GROUPS.values() for r in g}
ALL = PatternMatcher([r for g in GROUPS.values() for r in g], "divmod")

X3 = "(add (add (mul (range 0 3) 216) (mul (range 1 9) 24)) (sub 23 (range 2 24)))"
XV = "(var x -50 50)"
XI = "(cast i32 (var x -50 50))"
BI, WI = "(cast i32 (var b 0 5))", "(cast i32 (var w 0 100))"

# rule, input, expected output (compact s-expression) or None when the guard blocks it
CASES = [
    ("nested_idiv", "(idiv (idiv (var w 0 100) 4) 3)",
     '(idiv (var w 0 100) 12)'),
    ("nested_idiv", "(idiv (idiv (var w 0 100) 4) (var z 1 3))",
     None),                                                     # the symbolic rule's
    ("nested_idiv_symbolic", "(idiv (idiv (var w 0 100) (var y 1 4)) (var z -3 -1))",
     '(idiv (var w 0 100) (mul (var y 1 4) (var z -3 -1)))'),
    ("nested_idiv_symbolic", "(idiv (idiv (var w 0 100) (where (lt (var y 1 4) 3) (var y 1 4) "
     "(invalid))) 3)", None),                                   # b may be Invalid
    ("exact_division", "(idiv (add (mul (var m -4 4) 4) 8) 4)",
     '(add (var m -4 4) 2)'),
    ("exact_division", "(mod (add (mul (var m -4 4) 4) 8) -4)",
     '0'),
    ("exact_division", "(idiv (add (mul (var m -4 4) 4) 2) 4)",
     None),
    ("exact_division", "(idiv (sub (mul (var a 0 7) 4) (mul (var b 0 5) 8)) 4)",  # seed 003 §4: a-b
     '(sub (var a 0 7) (mul (var b 0 5) 2))'),
    ("exact_division", f"(mod (where (lt {XV} 5) (where (lt {XV} 0) {XV} (invalid)) 3) 1)",
     None),                                                     # may be Invalid: kept
    ("sum_divisible_symbolic", "(idiv (add (mul (var a 0 7) (var s 2 6)) (var b 0 5)) (var s 2 6))",
     '(add (var a 0 7) (idiv (var b 0 5) (var s 2 6)))'),
    ("sum_divisible_symbolic", "(idiv (sub (mul (var a 0 7) (var s 2 6)) (var b 0 5)) (var s 2 6))",
     None),
    ("mod_coef_reduce", "(mod (add (mul (range 0 4) 8) (var w 0 100)) 7)",
     '(mod (add (range 0 4) (var w 0 100)) 7)'),
    ("mod_coef_reduce", "(mod (add (mul (range 0 4) 8) (var m -4 4)) 7)",
     None),
    ("idiv_of_mod", "(idiv (mod (var m -4 4) 12) 4)",
     '(mod (idiv (var m -4 4) 4) 3)'),
    ("idiv_of_mod", "(idiv (mod (var m -4 4) 10) 4)",
     None),
    ("distribute_const_mul", "(mul (add (var a 0 7) (var b 0 5)) 3)",
     '(add (mul (var a 0 7) 3) (mul (var b 0 5) 3))'),
    ("distribute_const_mul", "(mul (sub (var a 0 7) (var b 0 5)) 3)",
     '(sub (mul (var a 0 7) 3) (mul (var b 0 5) 3))'),
    ("distribute_const_mul", "(mul (add (var a 0 7) (var b 0 5)) (var s 2 6))",
     None),
    # #1-#4 on fixed widths (index sums: recombine_divmod_sum, below)
    ("recombine_divmod_1", f"(add (mod {XI} 7) (mul (idiv {XI} 7) 7))",
     XI),
    ("recombine_divmod_1", f"(add (mod {XI} 7) (mul (idiv {XI} 7) 8))",
     None),
    ("recombine_divmod_2", f"(add (mod (idiv {XI} 2) 3) (mul (idiv {XI} 6) 3))",
     f'(idiv {XI} (const i32 2))'),
    ("recombine_divmod_2", f"(add (mod (idiv {XI} 2) 3) (mul (idiv {XI} 5) 3))",
     None),
    ("recombine_divmod_3", f"(add (mul (mod {XI} 4) 3) (mul (idiv {XI} 4) 12))",
     f'(mul {XI} (const i32 3))'),
    ("recombine_divmod_3", f"(add (mul (mod {XI} 4) 3) (mul (idiv {XI} 4) 10))",
     None),
    ("recombine_divmod_4", f"(add (add {BI} (mod {XI} 7)) (mul (idiv {XI} 7) 7))",
     f'(add {BI} {XI})'),
    ("recombine_divmod_4", f"(add (add {BI} (mod {XI} 7)) (mul (idiv {WI} 7) 7))",
     None),
    ("recombine_divmod_4_rev", f"(add (add {BI} (mul (idiv {XI} 7) 7)) (mod {XI} 7))",
     f'(add {BI} {XI})'),
    ("recombine_divmod_4_rev", f"(add (add {BI} (mul (idiv {XI} 7) 7)) (mod {XI} 6))",
     None),
    ("recombine_divmod_3_chain",
     f"(add (add {BI} (mul (mod {XI} 4) 3)) (mul (idiv {XI} 4) 12))",
     f'(add {BI} (mul {XI} (const i32 3)))'),
    ("recombine_divmod_3_chain",
     f"(add (add {BI} (mul (mod {XI} 4) 3)) (mul (idiv {XI} 4) 10))", None),
    ("recombine_divmod_3_chain_rev",
     f"(add (add {BI} (mul (idiv {XI} 4) 12)) (mul (mod {XI} 4) 3))",
     f'(add {BI} (mul {XI} (const i32 3)))'),
    ("recombine_divmod_3_chain_rev",
     f"(add (add {BI} (mul (idiv {XI} 4) 12)) (mul (mod {XI} 5) 3))", None),
    ("nested_idiv_offset", "(idiv (add (idiv (var w 0 100) 4) 3) 2)",
     '(idiv (add (var w 0 100) 12) 8)'),
    ("nested_idiv_offset", "(idiv (add (idiv (var m -4 4) 4) 3) 2)",
     None),
    ("recombine_divmod_sum",
     f"(add (add (mul (idiv {X3} 36) 36) (mul (mod (idiv {X3} 9) 4) 9)) (mod {X3} 9))", X3),
    ("recombine_divmod_sum", "(add (mul (mod (idiv (range 0 192) 4) 3) 4) (mod (range 0 192) 4))",
     '(mod (range 0 192) 12)'),
    ("recombine_divmod_sum", "(add (mul (mod (idiv (range 0 192) 4) 3) 8) (mod (range 0 192) 4))",
     None),
    ("mod_in_range", "(mod (range 0 3) 3)",
     '(range 0 3)'),
    ("mod_in_range", "(mod (var m -4 4) -5)",
     '(var m -4 4)'),                                           # C: |x| < |n|
    ("mod_in_range", "(mod (var a 0 7) 3)",
     None),
    ("idiv_one_bucket", "(idiv (range 0 3) 3)",
     '0'),
    ("idiv_one_bucket", "(idiv (var m -4 4) 4)",
     None),
    ("mod_drop_multiple", "(mod (add (mul (var row 0 9) 512) (var col 0 1000)) 512)",
     '(mod (var col 0 1000) 512)'),
    ("mod_drop_multiple", "(mod (add (mul (var row 0 9) 512) (var n -9 -1)) 512)",
     None),
    ("idiv_drop_multiple_small", "(idiv (add (mul (var row 0 9) 512) (range 1 512)) 512)",
     '(var row 0 9)'),
    ("idiv_drop_multiple_small", "(idiv (add (mul (var row 0 9) 512) (var col 0 1000)) 512)",
     None),
    ("idiv_drop_multiple", "(idiv (add (mul (var row 0 9) 512) (var col 0 1000)) 512)",
     '(add (var row 0 9) (idiv (var col 0 1000) 512))'),
    ("idiv_drop_multiple", "(idiv (add (mul (var m -4 4) 4) (range 0 4)) 4)",
     None),
    ("idiv_small_offset", "(idiv (add (mul (range 0 4) 4) 1) 8)",
     '(idiv (mul (range 0 4) 4) 8)'),
    ("idiv_small_offset", "(idiv (add (mul (range 0 4) 4) 4) 8)",
     None),
    ("idiv_large_offset", "(idiv (add (var w 0 100) 72) 8)",
     '(add (idiv (var w 0 100) 8) 9)'),
    ("idiv_large_offset", "(idiv (add (mul (var w 0 100) 8) 70) 8)",
     '(add (idiv (add (mul (var w 0 100) 8) 6) 8) 8)'),
    ("idiv_large_offset", "(idiv (add (var w 0 100) 6) 8)",
     None),
    # the ordered matcher keeps the first rewrite: no split that costs an addition
    ("idiv_large_offset", "(idiv (add (var w 0 100) 70) 8)",
     None),
    ("fold_divmod_general", "(idiv (add (mul (var a 0 7) 6) (mul (var b 0 5) 4)) 8)",
     '(idiv (add (mul (var a 0 7) 3) (mul (var b 0 5) 2)) 4)'),
    ("fold_divmod_general", "(mod (add (mul (range 0 4) 8) (range 1 2)) 7)",
     '(add (range 0 4) (range 1 2))'),
    ("fold_divmod_general", "(idiv (var m -4 4) (var s 2 6))",
     None),
    # symbolic divisors and bounds
    ("idiv_mul_cancel_pair", "(idiv (mul (mul (var a 1 7) (var b 0 5)) (var s 2 6)) "
     "(mul (var a 1 7) (var s 2 6)))", '(var b 0 5)'),
    ("idiv_mul_cancel_pair", "(idiv (mul (mul (var a 0 7) (var b 0 5)) (var s 2 6)) "
     "(mul (var a 0 7) (var s 2 6)))", None),                  # a may be 0
    ("idiv_loop_end", "(idiv (range 0 (add (var a 0 10) 2)) (add (var a 0 10) 2))", '0'),
    ("idiv_loop_end", "(idiv (range 0 (add (var a 0 10) 2)) (add (var a 0 10) 1))", None),
    ("mod_loop_end", "(mod (special g (mul (var s 2 6) 4)) (mul (var s 2 6) 4))",
     '(special g (mul (var s 2 6) 4))'),
    ("mod_loop_end", "(mod (range 0 (var a 0 10)) (var a 0 10))", None),  # END may be 0
    # recombinations of quotients
    ("recombine_quotient", "(add (mod (add (idiv (var x 0 299) 5) 2) 3) "
     "(mul (idiv (add (var x 0 299) 10) 15) 3))", '(add (idiv (var x 0 299) 5) 2)'),
    ("recombine_quotient", "(add (mod (add (idiv (var x -9 299) 5) 2) 3) "
     "(mul (idiv (add (var x -9 299) 10) 15) 3))", None),     # x may be negative
]


@pytest.mark.parametrize("name,src,want", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_table(name, src, want):
    e = parse(src)
    out = RULES[name].apply(e)
    if want is None:
        assert out is None, f"{name} should be blocked: {to_sexpr(out, compact=True)}"
        return
    assert out is not None, f"{name} did not fire on {src}"
    assert to_sexpr(out, compact=True) == want
    eq = check_equivalent(e, out, samples=3000)
    assert eq, eq.reason


# both engines, default rule sets: issue 31's symbolic divisors, bounds and quotients
R_END = "(range 0 (add (var a 0 10) 2))"
ENGINES = [
    ("idiv_mul_cancel_pair", "(idiv (mul (mul (var a 1 10) (var b 0 10)) (var c 1 10)) "
     "(mul (var a 1 10) (var c 1 10)))", "(var b 0 10)"),
    ("idiv_loop_end", f"(idiv {R_END} (add (var a 0 10) 2))", "0"),
    ("mod_loop_end", f"(mod {R_END} (add (var a 0 10) 2))", R_END),
    ("nested_idiv_symbolic", "(idiv (idiv (var a 0 100) (var b 1 10)) (var c 1 10))",
     "(idiv (var a 0 100) (mul (var b 1 10) (var c 1 10)))"),
    ("recombine_quotient", "(add (mod (add (idiv (var x 0 299) 5) 2) 3) "
     "(mul (idiv (add (var x 0 299) 10) 15) 3))", "(add (idiv (var x 0 299) 5) 2)"),
    # the ordered matcher does not split the offset back off (Morok's test)
    ("nested_idiv_offset", "(idiv (add (idiv (var a 0 100) 3) 5) 4)",
     "(idiv (add (var a 0 100) 15) 12)"),
    ("nested_idiv_offset", "(add (idiv (add (idiv (var a 0 100) 3) 5) 4) 2)",
     "(add (idiv (add (var a 0 100) 15) 12) 2)"),
    # a split that costs nothing is still made: 16 is a multiple of 8
    ("idiv_large_offset", "(idiv (add (var w 0 100) 16) 8)", "(add (idiv (var w 0 100) 8) 2)"),
    # the quotient of x + 2*4 recombines with x % 4 (recombine_divmod_sum)
    ("recombine_divmod_sum", "(add (mod (mul (range 0 9) 3) 4) (mul (idiv (add (mul (range 0 9) "
     "3) 8) 4) 4))", "(add (mul (range 0 9) 3) 8)"),
]
# recombine_quotient's pair anywhere in a longer sum, in any order: the whole-sum rule
# recombine_quotient_sum of the div/mod core (both engines read divmod_core.SUM_RULES)
XQ, XQN, Z = "(var x 0 299)", "(var x -9 299)", "(var z 0 5)"


def _mq(x: str = XQ, c1: int = 5, c2: int = 2, c3: int = 3) -> str:
    return f"(mod (add (idiv {x} {c1}) {c2}) {c3})"


def _qq(x: str = XQ, c4: int = 10, c5: int = 15) -> str:
    return f"(idiv (add {x} {c4}) {c5})"


# input, expected output or None when a guard blocks it
QUOTIENT_SUMS = [
    (f"(add {_mq()} (add (mul {_qq()} 3) {Z}))", f"(add (add {Z} (idiv {XQ} 5)) 2)"),
    (f"(add (add {Z} (mul {_qq()} 3)) {_mq()})", f"(add (add {Z} (idiv {XQ} 5)) 2)"),
    (f"(add (add (mul {_qq()} 6) {Z}) (add (mul {_mq()} 2) (range 0 7)))",
     f"(add (add (add {Z} (range 0 7)) (mul (idiv {XQ} 5) 2)) 4)"),
    (f"(add (mul {_mq()} -1) (mul {_qq()} -3))", f"(sub -2 (idiv {XQ} 5))"),
    # x//6 read as (x//2)//3
    (f"(add (mod (add (idiv (idiv {XQ} 2) 3) 1) 4) (add (mul {_qq(c4=6, c5=24)} 4) {Z}))",
     f"(add (add {Z} (idiv (idiv {XQ} 2) 3)) 1)"),
    # a negative c2 while x + c1*c2 >= 0
    (f"(add {_mq('(var x 5 299)', c2=-1)} (add (mul {_qq('(var x 5 299)', c4=-5)} 3) {Z}))",
     f"(add (add {Z} (idiv (var x 5 299) 5)) -1)"),
    (f"(add {_mq(XQN)} (add (mul {_qq(XQN)} 3) {Z}))", None),         # x may be negative
    (f"(add {_mq(c2=-1)} (add (mul {_qq(c4=-5)} 3) {Z}))", None),    # x + c1*c2 may be
    (f"(add {_mq()} (add (mul {_qq(c4=5)} 3) {Z}))", None),           # c4 != c1*c2
    (f"(add {_mq()} (add (mul {_qq(c5=10)} 3) {Z}))", None),          # c5 != c1*c3
    (f"(add {_mq()} (add (mul {_qq()} 2) {Z}))", None),               # coefficient != f*c3
]


@pytest.mark.parametrize("src,want", QUOTIENT_SUMS)
def test_recombine_quotient_sum(src, want):
    rule = next(r for r in SUM_RULES if r.name == "recombine_quotient_sum")
    e = parse(src)
    out = rule.fn(to_lin(e), UOpCtx(e))
    assert (None if out is None else to_sexpr(out, compact=True)) == want
    if out is not None:
        eq = check_equivalent(e, out, samples=3000)
        assert eq, eq.reason


# both engines find it inside a longer sum (the ordered matcher's recombine_quotient
# pattern does not; recombine_divmod_sum runs the whole-sum rule)
SUMS = [
    ("recombine_quotient_sum", f"(add {_mq()} (add (mul {_qq()} 3) {Z}))",
     f"(add (add {Z} (idiv {XQ} 5)) 2)"),
    ("recombine_quotient_sum", f"(add (add {Z} (mul {_qq()} 3)) {_mq()})",
     f"(add (add {Z} (idiv {XQ} 5)) 2)"),
]

test_engines = engines_test(ENGINES)
test_sums = engines_test(SUMS)


def test_every_rule_has_a_positive_and_a_blocked_row():
    assert {c[0] for c in CASES if c[2] is not None} == set(RULES)
    assert {c[0] for c in CASES if c[2] is None} == set(RULES)


def test_groups_and_rule_metadata():
    assert set(GROUPS) == {"advanced_division_dsl_patterns", "div_mod_recombine_dsl_patterns",
                           "range_based_mod_div_patterns"}
    assert GROUPS["range_based_mod_div_patterns"][-1].name == "fold_divmod_general"
    names = [r.name for g in GROUPS.values() for r in g]
    assert len(names) == len(set(names))
    for g, rs in GROUPS.items():
        for r in rs:
            assert r.group == g and r.identity and "->" in r.identity


# ---------------------------------------------------------------------------
# to_lin / UOpCtx
def test_to_lin_flattens_linear_skeleton():
    a, b = UOp.var("a", 0, 7), UOp.var("b", -3, 3)
    e = (a * 3 - (b + 2) * 4) + (-(a)) + 2 * b
    assert to_lin(e) == Lin.of([(2, a), (-2, b)], -8)
    d = a // 4
    assert to_lin(d * 8 + 1) == Lin.of([(8, d)], 1)          # a division is an atom
    assert to_lin(a * b) == Lin.atom(a * b)                    # non-constant product too
    c = UOp.const(dtypes.i32, 3)
    x32 = UOp.var("a", 0, 7).cast(dtypes.i32)
    assert to_lin(x32 + c) == Lin.atom(x32 + c)                # only index arithmetic


def test_to_lin_deep_sum_does_not_recurse():
    r = UOp.range(10, 0)
    e = r
    for i in range(3000):
        e = e + (i % 3)
    assert to_lin(e) == Lin.of([(1, r)], sum(i % 3 for i in range(3000)))


def _lin_reference(u: UOp) -> Lin:
    """``to_lin`` as its definition reads: each linear node's form from its children's,
    bottom-up (Lin arithmetic: an atom that cancels leaves, one met again goes last)."""
    idx = dtypes.index
    if u.dtype is idx and u.op in (Ops.ADD, Ops.SUB):
        a, b = _lin_reference(u.src[0]), _lin_reference(u.src[1])
        return a + b if u.op is Ops.ADD else a - b
    if u.dtype is idx and u.op is Ops.NEG:
        return -_lin_reference(u.src[0])
    if u.dtype is idx and u.op is Ops.MUL:
        for x, c in (u.src, u.src[::-1]):
            if c.op is Ops.CONST and type(c.arg) is int:
                return _lin_reference(x) * c.arg
    if u.op is Ops.CONST and u.dtype is idx and type(u.arg) is int:
        return Lin.constant(u.arg)
    return Lin.atom(u)


_FRESH = iter(range(10**9))


def _sum_tree(draw: st.DrawFn, atoms: list[UOp], depth: int) -> UOp:
    kind = draw(st.sampled_from(["atom", "const"] if depth == 0 else
                                ["atom", "const", "add", "add", "sub", "neg", "mul", "shared"]))
    if kind == "atom":
        return draw(st.sampled_from(atoms))
    if kind == "const":
        return UOp.const(dtypes.index, draw(st.integers(-3, 3)))
    if kind == "neg":
        return -_sum_tree(draw, atoms, depth - 1)
    if kind == "mul":
        c = UOp.const(dtypes.index, draw(st.integers(-2, 2)))
        x = _sum_tree(draw, atoms, depth - 1)
        return x * c if draw(st.booleans()) else c * x
    if kind == "shared":
        x = _sum_tree(draw, atoms, depth - 1)
        return x + x
    a, b = _sum_tree(draw, atoms, depth - 1), _sum_tree(draw, atoms, depth - 1)
    if draw(st.booleans()):  # a sub-sum read before: taken whole
        to_lin(a)
    return a + b if kind == "add" else a - b


@st.composite
def fresh_sums(draw: st.DrawFn) -> UOp:
    tag = next(_FRESH)  # fresh atoms: nothing of the sum was read before
    atoms = [UOp.var(f"s{tag}_{i}", 0, 5) for i in range(draw(st.integers(1, 4)))]
    return _sum_tree(draw, atoms, draw(st.integers(1, 6)))


@given(fresh_sums())
def test_to_lin_reads_terms_in_the_order_the_bottom_up_merge_leaves_them(u: UOp):
    got, want = to_lin(u), _lin_reference(u)
    assert (got.terms, got.const) == (want.terms, want.const)


@pytest.mark.parametrize("n", [3000])
def test_to_lin_reads_a_long_sum_either_way_round(n: int):
    xs = [UOp.var(f"long{i}", 0, 9) for i in range(n)]
    left, right = xs[0], xs[0]
    for x in xs[1:]:
        left, right = left + x, x + right
    assert to_lin(left).terms == tuple((1, x) for x in xs)
    assert to_lin(right).terms == tuple((1, x) for x in reversed(xs))


def test_to_lin_reads_a_shared_sub_sum_once():
    a = UOp.var("dbl", 0, 9)
    x = a + 1
    for _ in range(64):  # 2**64 paths from the top to a
        x = x + x
    assert to_lin(x) == Lin.of([(2**64, a)], 2**64)


def _leaf_counts(u: UOp) -> tuple[int, int] | None:
    """(atom occurrences, constant leaves) of a linear node's skeleton, None for an atom
    or a constant (the skeleton ``to_lin`` flattens, read by recursion)."""
    idx = dtypes.index

    def const(c: UOp) -> bool:
        return c.op is Ops.CONST and c.dtype is idx and type(c.arg) is int
    if u.dtype is not idx:
        return None
    if u.op in (Ops.ADD, Ops.SUB, Ops.NEG):
        kids = u.src
    elif u.op is Ops.MUL and (const(u.src[1]) or const(u.src[0])):
        kids = (u.src[0],) if const(u.src[1]) else (u.src[1],)
    else:
        return None
    counts = [_leaf_counts(k) or (0, 1) if const(k) else _leaf_counts(k) or (1, 0)
              for k in kids]
    return sum(a for a, _ in counts), sum(c for _, c in counts)


@st.composite
def scopes_and_forms(draw: st.DrawFn) -> tuple[UOp, Lin]:
    scope = draw(fresh_sums()) // 3
    forms = [to_lin(n) for n in scope.toposort() if _leaf_counts(n) is not None]
    return scope, draw(st.sampled_from(forms + [Lin.constant(draw(st.integers(-4, 4)))]))


@given(scopes_and_forms())
def test_uop_ctx_reuses_the_first_node_of_its_scope_read_as_the_form(case: tuple[UOp, Lin]):
    scope, x = case
    want = next((n for n in scope.toposort() if (c := _leaf_counts(n)) is not None
                 and c[1] <= 1 and c[0] == len(to_lin(n).terms) and to_lin(n) == x),
                UOpCtx(None).lin(x))
    assert UOpCtx(scope).lin(x) is want


def test_uop_ctx_rebuilds_unchanged_forms_as_the_same_node():
    a, b = UOp.var("a", 0, 7), UOp.var("b", 0, 5)
    two, idx = UOp.const(dtypes.index, 2), dtypes.index
    e = two * b + a * 3 + 1                     # rebuilt afresh it would read b*2
    g = (a * 3 + b * 2) % 5 + e                 # two nodes of e's form: the first one wins
    u = ((a + b) - b) // 3                      # a form whose terms cancel
    # scope, form -> the node built, side by side
    for scope, form, want in [
        (e, to_lin(e), e),
        (g, to_lin(e), e),
        (g, to_lin(a * 3 + b * 2), a * 3 + b * 2),  # children first: the mod's operand
        (e, to_lin(a * 3 + b * 2), two * b + a * 3),
        (u, to_lin((a + b) - b), a),            # (a+b)-b is not read as the form a
        (u, to_lin(a - a), UOp.const(idx, 0)),
        (None, to_lin(e), b * 2 + a * 3 + 1),   # no scope: built afresh
    ]:
        assert UOpCtx(scope).lin(form) is want, (scope, form)
    assert UOP_CTX.mod_parts(a % 3) == [(Lin.atom(a), Lin.constant(3))]
    assert UOP_CTX.idiv_parts(a) == [] and UOP_CTX.bounds(a) == (0, 7)
    assert to_sexpr(UOP_CTX.lin(Lin.of([(-1, a)], 5)), compact=True) == "(sub 5 (var a 0 7))"


def test_uop_ctx_on_a_deep_chain_reuses_its_own_nodes_only():
    # a form read by a node 35 levels down is found; one read only by a node of another
    # live graph (looked up, not walked to) is built afresh
    levels = [UOp.var("v", 0, 100)]
    for k in range(40):
        levels.append((levels[-1] * 3 + UOp.var(f"v{k}", 0, 100)) % (7 + k % 5))
    scope, v20 = levels[-1], UOp.var("v20", 0, 100)
    elsewhere = v20 + 0
    assert elsewhere.op is Ops.ADD
    deep = levels[5].src[0]
    for ctx_scope, form, want in [
        (elsewhere, Lin.atom(v20), elsewhere),
        (scope, Lin.atom(v20), v20),
        (scope, to_lin(deep), deep),
        (scope, to_lin(deep) + Lin.atom(v20), None),  # in no node: built afresh
    ]:
        got = UOpCtx(ctx_scope).lin(form)
        assert got is (want or UOpCtx(None).lin(form)), (ctx_scope, form)


@pytest.mark.parametrize("scope, free", [
    ("(idiv (add (mul (var a 0 7) 3) (var b 0 5)) 2)", True),
    ("(idiv (add (mul (var a 0 7) 3) (where (lt (var b 0 5) 3) (var b 0 5) (invalid))) 2)",
     False),
    # an Invalid below the scope, in no form the rule reads: asked atom by atom
    ("(idiv (add (var a 0 7) (mul (var b 0 5) 0)) (where (lt (var b 0 5) 9) 2 (invalid)))",
     True),
])
def test_uop_ctx_invalid_free_reads_the_scope_then_the_atoms(scope: str, free: bool):
    d = parse(scope)
    x = to_lin(d.src[0])
    assert UOpCtx(d).invalid_free((x,)) is free
    assert UOpCtx(None).invalid_free((x,)) is free


@pytest.mark.parametrize("s, has", [
    ("(add (mod (var a 0 7) 3) (var b 0 5))", True),
    ("(add (mul (add (var b 0 5) (mod (var a 0 7) 3)) 2) 1)", True),
    ("(add (var a 0 7) (var b 0 5))", False),
    ("(add (sub (mod (var a 0 7) 3) (mod (var a 0 7) 3)) (var b 0 5))", False),  # cancels
    ("(add (idiv (mod (var a 0 7) 3) 2) (var b 0 5))", False),    # a mod inside an atom
])
def test_recombine_divmod_sum_guard_needs_a_mod_term(s: str, has: bool):
    assert RULES["recombine_divmod_sum"].guard(parse(s)) is has


def _core_fn(name: str):
    """The core's own ``fn`` a baseline twin runs (fold_divmod_general: its eight)."""
    return fold_divmod_general if name == "fold_divmod_general" else RULES_BY_NAME[name].fn


#: the core rules the ordered matcher runs, each through its twin's build
TWINS = sorted(n for n in RULES if n in RULES_BY_NAME or n == "fold_divmod_general")
#: divisions the twins' shared reading must refuse or read alike: a divisor's range
#: holding 0, an Invalid operand, a negative dividend or divisor, a symbolic divisor
DIVISIONS = [
    "(idiv (add (mul (var a 0 7) 4) (var b 0 3)) (var n -1 2))",
    "(mod (add (mul (var a 0 7) 4) (where (lt (var b 0 5) 3) (var b 0 5) (invalid))) 4)",
    "(idiv (sub (mul (var t -5 0) 6) 3) 3)", "(mod (add (mul (var t -5 0) 6) -2) -4)",
    "(idiv (add (mul (var a 0 7) (var n 1 4)) (var b 0 5)) (var n 1 4))",
]


def _grid_divisions() -> list[UOp]:
    from rules.proof.python import _grid
    return [parse(s) for s in DIVISIONS] + [d for _, _, d in _grid()[::7]]


@pytest.mark.parametrize("name", TWINS)
def test_twin_build_is_the_core_fn(name: str):
    r = RULES[name]
    for d in _grid_divisions():
        if d.op not in r.pattern.ops:
            continue
        x, y = d.src
        want = _core_fn(name)("idiv" if d.op is Ops.IDIV else "mod", to_lin(x), to_lin(y),
                              UOpCtx(d))
        got = r.build(d) if r.guard(y) else None
        assert got is (want if r.guard(y) else None), (name, to_sexpr(d))


def _division_chain(depth: int) -> UOp:
    e = "(var v 0 100)"
    for _ in range(depth):
        e = f"(idiv (add (mul {e} 3) (var v 0 100)) 2)"
    return parse(e)


def test_deep_division_chain_is_rewritten_to_an_equal_graph():
    g = _division_chain(40)
    out = graph_rewrite(g, symbolic())
    eq = check_equivalent(g, out)
    assert out is not g and eq.equivalent and eq.exhaustive, eq.reason
def test_uop_ctx_reuses_nodes_of_its_scope_whatever_the_process_read_before():
    # another live graph's sum of the same linear form, read first, must not change
    # which node of the rewritten graph a rule's output reuses (the baseline's output
    # was then (mod (add z (add x y)) 4) after optimize_many([w, g]), not optimize(g)'s)
    import eqsat

    w = parse("(add (var hz 0 9) (add (var hy 0 9) (var hx 0 9)))")
    to_lin(w)
    g = parse("(mod (mod (add (var hx 0 9) (add (var hy 0 9) (var hz 0 9))) 8) 4)")
    out = eqsat.optimize(g, engine="baseline", cost_model="reference").graph
    assert to_sexpr(out, compact=True) == \
        "(mod (add (var hx 0 9) (add (var hy 0 9) (var hz 0 9))) 4)"
    assert w.op is Ops.ADD  # (kept alive until here)


# ---------------------------------------------------------------------------
# worked examples of seed 003 (docs/rules.md), through the whole symbolic() matcher
def test_flat_index_recombines():
    r0 = UOp.range(32, 0)
    out = graph_rewrite((r0 // 8) * 8 + r0 % 8, symbolic())
    assert out is r0


def test_tiled_store_index_becomes_affine():
    r3, r4, r2 = UOp.range(4, 3), UOp.range(2, 4), UOp.range(4, 2)
    i = r3 * 8 + r4 * 4 + r2
    buf = UOp.buffer(0, dtypes.f32, 32)
    val = UOp.const(dtypes.f32, 1.0)
    store = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, (i // 8) * 8 + i % 8)),
                                         val))
    out = graph_rewrite(store, symbolic())
    idx = out.src[0].src[1]
    assert not any(u.op in (Ops.IDIV, Ops.MOD) for u in idx.toposort())
    assert to_lin(idx) == Lin.of([(8, r3), (4, r4), (1, r2)])
    # the div/mod rules alone get there too
    alone = graph_rewrite((i // 8) * 8 + i % 8, ALL)
    assert to_lin(alone) == to_lin(i)


def test_recombine_prepass_keeps_recombination_visible():
    x = parse("(add (add (mul (range 0 3) 216) (mul (range 1 9) 24)) (sub 23 (range 2 24)))")
    e = (x // 36) * 36 + ((x // 9) % 4) * 9 + x % 9
    assert recombine_prepass(e) is x


# ---------------------------------------------------------------------------
# soundness of the twin layer on random index expressions (C semantics)
@given(st.data())
def test_divmod_rules_sound_on_random_exprs(data):
    e = data.draw(int_exprs(max_depth=4))
    envs = [data.draw(assignments(e)) for _ in range(4)]
    out = graph_rewrite(e, ALL)
    assert {u for u in out.leaves()} <= {u for u in e.leaves()}
    for env in envs:
        try:
            want = evaluate(e, env)
        except EvalError:
            continue
        assert evaluate(out, env) == want, (to_sexpr(e, compact=True),
                                            to_sexpr(out, compact=True), env)


# ---------------------------------------------------------------------------
# the corpus: the whole baseline within 5% of tinygrad's total reference cost
def test_corpus_reference_cost(corpus_lines):
    from eqsat.engines.baseline import optimize_baseline
    from extraction.cost import reference_cost

    total = tg = 0
    for row in corpus_lines:
        e = parse(row["expr"])
        out, stats = optimize_baseline(recombine_prepass(e))
        assert stats["stop_reason"] == "fixpoint", (row["id"], stats.get("error"))
        total += reference_cost(out)
        tg += row["cost_tg"]
    assert total <= 1.05 * tg, f"baseline {total} vs tinygrad {tg}"


def test_output_does_not_depend_on_other_live_graphs():
    """A rule rebuilding a linear form reuses the input's own node for it, never a node
    of the same form that some other graph keeps alive (the output of a rewrite depends
    on its input alone: test order or a user's other graphs cannot change it)."""
    src = "(mod (add (mul (range 0 4) 8) (range 1 2)) 7)"
    want = next(c[2] for c in CASES if c[1] == src)
    other = parse("(add (range 1 2) (range 0 4))")  # the same linear form, other order
    assert to_lin(other) == to_lin(parse(want))
    assert to_sexpr(RULES["fold_divmod_general"].apply(parse(src)), compact=True) == want
