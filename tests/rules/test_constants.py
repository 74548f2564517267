"""Constant folding (docs/rules.md, seed 000 §1): scalar, vector, dtype-aware, undefined kept.

One line per case: (rule, input, expected) for rewrites, (rule, input) for
blocked ones. Every rewrite is also checked equivalent to its input.
"""

from __future__ import annotations

import math

import pytest

from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from tests.rules._cases import check_blocked, engines_test, never, rewrite_test, simp

POSITIVE = [
    ("const_fold_neg", "(neg 5)", "-5"),
    ("const_fold_sqrt", "(sqrt 4.0)", "2.0"),
    ("const_fold_exp2", "(exp2 3.0)", "8.0"),
    ("const_fold_log2", "(log2 8.0)", "3.0"),
    ("const_fold_sin", "(sin 0.0)", "0.0"),
    ("const_fold_recip", "(recip 4.0)", "0.25"),
    ("const_fold_trunc", "(trunc -2.5)", "-2.0"),
    ("const_fold_not", "(not true)", "false"),
    ("const_fold_add", "(add 3 4)", "7"),
    ("const_fold_mul", "(mul 3 -4)", "-12"),
    ("const_fold_sub", "(sub 3 4)", "-1"),
    ("const_fold_mod", "(mod -7 2)", "-1"),            # C: sign of the dividend
    ("const_fold_idiv", "(idiv -7 2)", "-3"),          # C: truncation toward zero
    ("const_fold_max", "(max 3 -4)", "3"),
    ("const_fold_pow", "(pow 2 10)", "1024"),
    ("const_fold_fdiv", "(fdiv 1.0 4.0)", "0.25"),
    ("const_fold_and", "(and 12 10)", "8"),
    ("const_fold_or", "(or 12 10)", "14"),
    ("const_fold_xor", "(xor 12 10)", "6"),
    ("const_fold_shl", "(shl 3 4)", "48"),
    ("const_fold_shr", "(shr -16 2)", "-4"),
    ("const_fold_where", "(where false 1 2)", "2"),
    ("const_fold_mulacc", "(mulacc 2 3 4)", "10"),
    # dtype-aware wraparound
    ("const_fold_add", "(add (const i8 127) (const i8 1))", "(const i8 -128)"),
    ("const_fold_mul", "(mul (const u8 16) (const u8 16))", "(const u8 0)"),
    ("const_fold_neg", "(neg (const i32 -2147483648))", "(const i32 -2147483648)"),
    ("const_fold_sub", "(sub (const u16 0) (const u16 1))", "(const u16 65535)"),
    ("const_fold_shl", "(shl (const i8 1) (const i8 7))", "(const i8 -128)"),
    ("const_fold_add", "(add (const f16 2048.0) (const f16 1.0))", "(const f16 2048.0)"),
    ("const_fold_idiv", "(idiv (const i16 -32768) (const i16 -1))", "(const i16 -32768)"),
    ("const_fold_fdiv", "(fdiv 1.0 0.0)", "inf"),     # IEEE, not undefined
    # floats fold as the interpreter computes them: max of equal values is the second
    # (C's a > b ? a : b, numpy's maximum); the folder once gave -0.0
    ("const_fold_max", "(max (const f16 -0.0) (const f16 0.0))", "(const f16 0.0)"),
    ("const_fold_max", "(max 0.0 -0.0)", "-0.0"),
    ("const_fold_min", "(min 0.0 -0.0)", "-0.0"),
    # vectors
    ("vconst_fold_add", "(add (vconst index 1 2) (vconst index 3 4))", "(vconst index 4 6)"),
    ("vconst_fold_mul", "(mul 3 (vconst index 1 2))", "(vconst index 3 6)"),
    ("vconst_fold_idiv", "(idiv (vconst index -7 7) 2)", "(vconst index -3 3)"),
    ("vconst_fold_neg", "(neg (vconst index 1 -2))", "(vconst index -1 2)"),
    ("vconst_fold_add", "(add (vconst i8 100 -100) (const i8x2 100))", "(vconst i8 -56 0)"),
    ("vectorize_of_consts", "(vectorize 1 2 3)", "(vconst index 1 2 3)"),
]

# (rule, input, what remains): the rule must not fire on the node it guards
BLOCKED = [
    ("const_fold_idiv", "(idiv 5 0)", "(idiv 5 0)"),                   # undefined
    ("const_fold_mod", "(mod 5 0)", "(mod 5 0)"),
    ("const_fold_shl", "(shl (const i32 1) (const i32 32))",           # shift >= width
     "(shl (const i32 1) (const i32 32))"),
    ("const_fold_shr", "(shr 1 -1)", "(shr 1 -1)"),                    # negative shift
    ("const_fold_pow", "(pow 2 -1)", "(pow 2 -1)"),                    # int pow < 0
    ("vconst_fold_idiv", "(idiv (vconst index 4 4) (vconst index 2 0))",
     "(idiv (vconst index 4 4) (vconst index 2 0))"),
    ("vconst_fold_fdiv", "(fdiv (vconst f32 1.0 2.0) (vconst f32 2.0 4.0))",  # not on vectors
     "(fdiv (vconst f32 1.0 2.0) (vconst f32 2.0 4.0))"),
]


test_folds = rewrite_test(POSITIVE)


@pytest.mark.parametrize("rule,text,rest", BLOCKED)
def test_blocked(rule: str, text: str, rest: str) -> None:
    _, out = check_blocked(rule, text, rest, equiv=never)
    assert out.op is not Ops.CONST and out.op is not Ops.VCONST


def test_float_results_are_ieee() -> None:
    assert math.isnan(simp("(sqrt -1.0)")[1].arg)
    assert simp("(log2 0.0)")[1].arg == -math.inf
    assert simp("(exp2 1000.0)")[1].arg == math.inf  # overflows f32 to inf
    assert math.isnan(simp("(fdiv 0.0 0.0)")[1].arg)
    assert simp("(fdiv -1.0 0.0)")[1].arg == -math.inf


def test_broadcast_const_folds_lane_by_lane() -> None:
    v = UOp.const(dtypes.index.vec(2), 3) + UOp.vconst(dtypes.index, (1, 2))
    out, st = optimize_baseline(v)
    assert out is UOp.vconst(dtypes.index, (4, 5)) and "vconst_fold_add" in st["matches"]


def test_groups_are_the_seed_names() -> None:
    from rules import constants

    assert set(constants.GROUPS) == {"constant_folding_dsl_patterns", "vconst_folding_patterns"}
    vec_ops = {r.name for r in constants.GROUPS["vconst_folding_patterns"]}
    assert "vconst_fold_pow" not in vec_ops and "vconst_fold_fdiv" not in vec_ops
    assert len(constants.VCONST_BINARY_FOLD) >= 11 and len(constants.BINARY_FOLD) >= 13


# both engines: a fixed-width fold that wraps (the e-graph's const_fold_wrap_*)
ENGINES = [
    ("const_fold_wrap_add", "(add (const i32 2147483647) (const i32 1))",
     "(const i32 -2147483648)"),
    ("const_fold_wrap_mul", "(mul (const i8 100) (const i8 3))", "(const i8 44)"),
    ("const_fold_wrap_sub", "(sub (const u8 0) (const u8 1))", "(const u8 255)"),
    ("const_fold_wrap_neg", "(neg (const i32 -2147483648))", "(const i32 -2147483648)"),
    ("const_fold_wrap_shl", "(shl (const i32 1) (const i32 31))", "(const i32 -2147483648)"),
    # a shift by the width or more is undefined: not folded
    ("const_fold_wrap_shl", "(shl (const i32 1) (const i32 32))",
     "(shl (const i32 1) (const i32 32))"),
]

test_engines = engines_test(ENGINES)


def test_index_constants_past_the_cap_are_an_error_not_a_hang():
    # squaring a constant again and again: folded, its digits double each time; the
    # fold past INDEX_BOUND_CAP is an error naming it (no index that large is lowered)
    from eqsat.api import optimize
    from eqsat.ir.sexpr import parse
    from eqsat.ir.uop import IRError

    lines = ["%a0 = 3"] + [f"%a{i} = (mul %a{i - 1} %a{i - 1})" for i in range(1, 40)]
    g = parse("\n".join(lines + ["%a39"]))
    for engine in ("baseline", "egraph"):
        with pytest.raises(IRError, match="index arithmetic out of range"):
            optimize(g, engine=engine)
