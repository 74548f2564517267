"""The e-graph twin of the div/mod family (``rules/divmod.py`` ``EGRAPH``), one line per case.

Every rule of the family's ``EGRAPH`` has a line where it fires, run through
``eqsat.optimize(engine="egraph")`` with its own group (or the groups named on
the line), next to the expected output; every native rule has a line where
its guard blocks it. Every output is checked equivalent to its input. The
baseline rules of the family are tested in ``test_divmod.py``, the core's
rules on linear forms in ``test_divmod_core.py``, and the e-graph on whole
worked examples (default rule sets) in ``tests/eqsat/engines/test_egraph_rules.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import eqsat
from eqsat import parse, to_sexpr
from eqsat.engines.egraph.rulesets import SELECTS, default_groups, egraph_groups
from eqsat.ir.equiv import check_equivalent
from extraction import reference_cost
from rules.computed import PyRule
from rules.divmod import DIVMOD_GROUP, EGRAPH, G_SELECT, GROUPS
from rules.divmod_core import DIVMOD_RULES, SUM_RULES
from rules.native import ERule
from tests.budgets import QUALITY

RB = "range_based_mod_div_patterns"
REC = "div_mod_recombine_dsl_patterns"
ADV = "advanced_division_dsl_patterns"
SEL = G_SELECT  # e-graph only (SELECTS)
FL = "floor_division_patterns"
#: the quotient below a multiple down to its ladder: the floor rules, the selects, x*1 and x+0
BELOW = (RB, FL, SEL, "identity_and_zero_patterns", "alu_folding_dsl_patterns")
ID = "identity_and_zero_patterns"

A, B, V = "(var a 0 7)", "(var b 0 5)", "(var v 0 1)"
W, M, X = "(var w 0 100)", "(var m -4 4)", "(var x -50 50)"
S = "(var s 2 6)"
XI = "(cast i32 (var x -50 50))"
WI = "(cast i32 (var w 0 100))"
SI = f"(where (lt {S} 5) {S} (invalid))"            # may be Invalid
NI = "(where (lt (var s 8 12) 10) (var s 8 12) (invalid))"
R270 = "(range 0 270)"
R2 = "(add (range 0 4) (range 1 9))"
BC, SC = "(cast i32 (var b 0 5))", "(cast i32 (var s 2 6))"
SIC = f"(cast i32 {SI})"                            # may be Invalid


def ci(v: int) -> str:
    """An i32 constant."""
    return f"(const i32 {v})"


C7 = ci(7)

# rule, rule sets, input, expected output (or its reference cost when shapes tie)
FIRES: list[tuple[str, tuple[str, ...], str, str | int]] = [
    # range_based_mod_div_patterns: native
    ("mod_in_range", (RB,), "(mod (range 0 3) 3)", "(range 0 3)"),
    ("mod_in_range", (RB,), f"(mod {A} (var s 8 9))", A),
    ("mod_in_range", (RB,), "(mod (cast i32 (var a 0 7)) (const i32 9))", "(cast i32 (var a 0 7))"),
    ("mod_in_range", (RB,), "(mod (var n -2 0) 3)", "(var n -2 0)"),          # -n < x <= 0
    ("idiv_neg_divisor", (RB,), f"(idiv {A} (var d -4 -2))", f"(idiv {A} (var d -4 -2))"),
    ("mod_neg_divisor", (RB,), f"(mod {A} (var d -4 -2))", f"(mod {A} (var d -4 -2))"),
    ("idiv_nonpos_dividend", (RB,), f"(idiv (var n -9 -1) {S})", f"(idiv (var n -9 -1) {S})"),
    ("mod_nonpos_dividend", (RB,), f"(mod (var n -9 -1) {S})", f"(mod (var n -9 -1) {S})"),
    # range_based_mod_div_patterns: computed (the core's fast paths and fold_divmod_general)
    ("mod_in_range", (RB,), f"(mod {A} -10)", A),
    ("mod_in_range", (RB,), f"(mod {M} 7)", M),                               # C: |m| < 7
    ("idiv_one_bucket", (RB,), f"(idiv {M} 5)", "0"),
    ("mod_drop_multiple", (RB,), f"(mod (add (mul {A} 512) {W}) 512)", W),
    ("idiv_drop_multiple_small", (RB,), f"(idiv (add (mul {A} 512) {B}) 512)", A),
    ("idiv_drop_multiple", (RB,), f"(idiv (add (mul {A} 8) {W}) 8)", f"(add {A} (idiv {W} 8))"),
    ("idiv_small_offset", (RB,), "(idiv (add (mul (range 0 4) 4) 1) 8)", "(idiv (range 0 4) 2)"),
    ("idiv_large_offset", (RB,), f"(idiv (add {W} 70) 8)", 26),  # ((w+6)//8)+8: a tie
    ("cancel_divmod", (RB,), "(mod (add (range 0 4) 8) 4)", "(range 0 4)"),
    ("remove_nested_mod", (RB,), "(mod (add (mod (range 0 8) 4) (range 1 2)) 2)",
     "(mod (add (range 0 8) (range 1 2)) 2)"),
    ("fold_binary_numerator", (RB,), f"(mod (add (mul {V} 3) 2) 5)", f"(sub 2 (mul {V} 2))"),
    ("fold_divmod_congruence", (RB,), f"(mod (add (mul (range 0 4) 8) {V}) 7)",
     f"(add {V} (range 0 4))"),
    ("gcd_with_remainder", (RB,), f"(idiv (add (mul {A} 4) 10) 8)", f"(add (idiv {A} 2) 1)"),
    ("divide_by_gcd", (RB,), f"(idiv (mul {A} 4) (mul {S} 2))", f"(idiv (mul {A} 2) {S})"),
    ("factor_remainder", (RB,), f"(idiv (add (mul {A} 8) (mul {B} 3)) 8)",
     f"(add {A} (idiv (mul {B} 3) 8))"),
    ("nest_div_by_smallest_factor", (RB,),
     f"(idiv (add (add (mul (range 0 4) 8) (mul {V} 4)) (var p 0 2)) 16)", "(idiv (range 0 4) 2)"),
    # div_mod_recombine_dsl_patterns: native #1-#4 (fixed-width ints; mirror images too; an
    # index sum recombines through the computed twin recombine_divmod, lines below)
    ("recombine_divmod_1", (REC,), f"(add (mod {XI} {C7}) (mul (idiv {XI} {C7}) {C7}))", XI),
    ("recombine_divmod_1", (REC,), f"(add (mul {C7} (idiv {XI} {C7})) (mod {XI} {C7}))", XI),
    ("recombine_divmod_1", (REC,), f"(add (mod {XI} {SC}) (mul (idiv {XI} {SC}) {SC}))", XI),
    ("recombine_divmod_2", (REC,), f"(add (mod (idiv {XI} {ci(2)}) {ci(3)}) (mul (idiv {XI} "
     f"{ci(6)}) {ci(3)}))", f"(idiv {XI} {ci(2)})"),
    ("recombine_divmod_3", (REC,), f"(add (mul (mod {XI} {ci(4)}) {ci(3)}) (mul (idiv {XI} "
     f"{ci(4)}) {ci(12)}))", f"(mul {XI} {ci(3)})"),
    ("recombine_divmod_4_rev", (REC,), f"(add (add {BC} (mul (idiv {XI} {C7}) {C7})) (mod {XI} "
     f"{C7}))", f"(add {BC} {XI})"),
    ("recombine_divmod_3_chain", (REC,), f"(add (add {BC} (mul (mod {XI} {ci(4)}) {ci(3)})) "
     f"(mul (idiv {XI} {ci(4)}) {ci(12)}))", f"(add {BC} (mul {XI} {ci(3)}))"),
    ("recombine_divmod_3_chain_rev", (REC,), f"(add (add {BC} (mul (idiv {XI} {ci(4)}) "
     f"{ci(12)})) (mul (mod {XI} {ci(4)}) {ci(3)}))", f"(add {BC} (mul {XI} {ci(3)}))"),
    ("recombine_divmod_4", (REC,), f"(add (add {BC} (mod {XI} {C7})) (mul (idiv {XI} {C7}) "
     f"{C7}))", f"(add {BC} {XI})"),
    # div_mod_recombine_dsl_patterns: computed
    ("nested_idiv_offset", (REC,), f"(idiv (add (idiv {W} 4) 3) 2)", f"(idiv (add {W} 12) 8)"),
    ("divmod_basis", (REC,), f"(add (add (mul (idiv {R270} 30) 30) (mod {R270} 10)) "
     f"(mul (mod (idiv {R270} 10) 3) -10))", f"(sub {R270} (mul (mod (idiv {R270} 10) 3) 20))"),
    ("recombine_divmod", (REC,), f"(add (add (mul (mod (range 0 64) 8) 2) {B}) "
     "(mul (idiv (range 0 64) 8) 16))", f"(add {B} (mul (range 0 64) 2))"),
    ("recombine_divmod", (REC,), f"(add (mod {X} 7) (mul (idiv {X} 7) 7))", X),        # #1
    ("recombine_divmod", (REC,), f"(add (mul 7 (idiv {X} 7)) (mod {X} 7))", X),
    ("recombine_divmod", (REC,), f"(add (mod {X} {S}) (mul (idiv {X} {S}) {S}))", X),
    ("recombine_divmod", (REC,), f"(add (mod (idiv {X} 2) 3) (mul (idiv {X} 6) 3))",   # #2
     f"(idiv {X} 2)"),
    ("recombine_divmod", (REC,), f"(add (mul (mod {X} 4) 3) (mul (idiv {X} 4) 12))",   # #3
     f"(mul {X} 3)"),
    ("recombine_divmod", (REC,), f"(add (add {B} (mod {X} 7)) (mul (idiv {X} 7) 7))",  # #4
     f"(add {B} {X})"),
    ("recombine_mod_chain", (REC,), "(add (mul (mod (idiv (range 0 192) 4) 3) 4) "
     "(mod (range 0 192) 4))", "(mod (range 0 192) 12)"),
    # division_select: a quotient of two values as a select
    ("idiv_two_buckets", (SEL,), f"(idiv {A} 4)", f"(where (lt {A} 4) 0 1)"),
    ("idiv_two_buckets", (SEL,), "(idiv (var a 5 10) 4)", "(where (lt (var a 5 10) 8) 1 2)"),
    # the remainder's ladders tie with x minus a ladder of multiples (the offset rules),
    # which the extraction takes at a tie
    ("mod_two_buckets", (SEL, ID), f"(mod {A} 4)", f"(sub {A} (where (lt {A} 4) 0 4))"),
    ("mod_two_buckets", (SEL,), "(mod (var a 5 10) 4)",
     "(sub (var a 5 10) (where (lt (var a 5 10) 8) 4 8))"),
    ("mod_two_buckets_offset", (SEL,), f"(mod {W} 60)", f"(sub {W} (where (lt {W} 60) 0 60))"),
    ("idiv_three_buckets", (SEL,), f"(idiv {W} 40)",
     f"(where (lt {W} 40) 0 (where (lt {W} 80) 1 2))"),
    ("idiv_three_buckets", (SEL,), "(idiv (var a 5 14) 4)",
     "(where (lt (var a 5 14) 8) 1 (where (lt (var a 5 14) 12) 2 3))"),
    ("mod_three_buckets", (SEL, ID), f"(mod {W} 40)",
     f"(sub {W} (where (lt {W} 40) 0 (where (lt {W} 80) 40 80)))"),
    ("mod_three_buckets_offset", (SEL,), "(mod (var a 5 14) 4)",
     "(sub (var a 5 14) (where (lt (var a 5 14) 8) 4 (where (lt (var a 5 14) 12) 8 12)))"),
    # a coefficient just below a multiple of k: (5*r0 + r1) // 6 = r0 + floordiv(r1 - r0, 6)
    ("idiv_quotient_below", BELOW, "(idiv (add (mul (range 0 12) 5) (range 1 5)) 6)",
     "(add (add (range 0 12) (where (lt (add (sub (range 1 5) (range 0 12)) 12) 6) 0 "
     "(where (lt (add (sub (range 1 5) (range 0 12)) 12) 12) 1 2))) -2)"),
    ("mod_quotient_below", BELOW, "(mod (add (mul (range 0 12) 5) (range 1 5)) 6)",
     "%0 = (add (sub (range 1 5) (range 0 12)) 12)\n"
     "(sub %0 (where (lt %0 6) 0 (where (lt %0 12) 6 12)))"),
    # x % k beside x // k: one division for both
    ("mod_as_remainder", (RB,), f"(where (lt (mod {R2} 2) 1) (idiv {R2} 2) (invalid))",
     f"%0 = {R2}\n%1 = (idiv %0 2)\n(where (lt (sub %0 (mul %1 2)) 1) %1 (invalid))"),
    # advanced_division_dsl_patterns: native (index only)
    ("nested_idiv", (ADV, "constant_folding_dsl_patterns"), f"(idiv (idiv {W} 4) 3)",
     f"(idiv {W} 12)"),
    ("idiv_of_mod_const", (ADV, REC), f"(add (idiv (mod {W} 12) 4) (mul (idiv {W} 12) 3))",
     f"(idiv {W} 4)"),                           # exposes #2: ((w//4)%3) + (w//12)*3
    ("mod_of_mod_multiple", (ADV,), f"(mod (mod {X} 12) 4)", f"(mod {X} 4)"),
    ("idiv_mul_cancel_pair", (ADV,), f"(idiv (mul (mul {S} {B}) (var c 1 3)) "
     f"(mul {S} (var c 1 3)))", B),
    ("recombine_quotient", (REC,), f"(add (mod (add (idiv {W} 5) 2) 3) (mul (idiv (add {W} 10) "
     "15) 3))", f"(add (idiv {W} 5) 2)"),
    ("mod_quotient_split", (REC, "alu_folding_dsl_patterns"), f"(add (mod (add (idiv {W} 5) 2) "
     f"3) (add (mul (idiv (add {W} 10) 15) 3) {B}))", f"(add (add {B} (idiv {W} 5)) 2)"),
    ("recombine_quotient_sum", (REC,), f"(add (add {B} (mul (idiv (add {W} 10) 15) 3)) "
     f"(mod (add (idiv {W} 5) 2) 3))", f"(add (add {B} (idiv {W} 5)) 2)"),
    ("idiv_loop_end", (RB,), f"(idiv (range 0 (add {A} 2)) (add {A} 2))", "0"),
    ("mod_loop_end", (RB,), f"(mod (range 0 (add {A} 2)) (add {A} 2))", f"(range 0 (add {A} 2))"),
    # advanced_division_dsl_patterns: computed
    ("nested_idiv_symbolic", (ADV,), f"(idiv (idiv {W} (var y 1 4)) 3)",
     f"(idiv {W} (mul (var y 1 4) 3))"),
    ("exact_division", (ADV,), f"(idiv (add (mul {M} 4) 8) 4)", f"(add {M} 2)"),
    ("exact_division", (ADV,), f"(mod (add (mul {M} 4) 8) -4)", "0"),
    ("sum_divisible_symbolic", (ADV,), f"(idiv (add (mul {A} {S}) {B}) {S})",
     f"(add {A} (idiv {B} {S}))"),
    ("mod_coef_reduce", (ADV,), f"(mod (add (mul (range 0 4) 8) {W}) 7)",
     f"(mod (add {W} (range 0 4)) 7)"),
    ("idiv_of_mod", (ADV, REC), f"(add (idiv (mod {W} -12) 4) (mul (idiv {W} 12) 3))",
     f"(idiv {W} 4)"),                           # C: w % -12 == w % 12
]

# rule, rule sets, input, what remains: the rule's guard blocks it (others may still fire)
_Q7 = "(add (mul (range 0 8) 7) (range 1 7))"
BLOCKED: list[tuple[str, tuple[str, ...], str, str]] = [
    ("idiv_quotient_below", BELOW, f"(idiv {_Q7} 8)", f"(idiv {_Q7} 8)"),  # 8: a shift
    ("mod_quotient_below", BELOW, f"(mod {_Q7} 8)", f"(mod {_Q7} 8)"),
    ("idiv_quotient_below", BELOW, "(idiv (add (mul (var a -1 11) 5) (range 1 5)) 6)",
     "(idiv (add (mul (var a -1 11) 5) (range 1 5)) 6)"),                     # a may be < 0
    ("idiv_quotient_below", BELOW, "(idiv (add (mul (range 0 30) 5) (range 1 5)) 6)",
     "(idiv (add (mul (range 0 30) 5) (range 1 5)) 6)"),                      # floor: 6 values
    ("mod_quotient_below", BELOW, "(mod (add (mul (range 0 30) 5) (range 1 5)) 6)",
     "(mod (add (mul (range 0 30) 5) (range 1 5)) 6)"),
    ("idiv_quotient_below", BELOW, "(idiv (add (mul (range 0 3) 5) (range 1 5)) 6)",
     "(where (lt (add (mul (range 0 3) 5) (range 1 5)) 6) 0 (where (lt (add (mul (range 0 3) 5) "
     "(range 1 5)) 12) 1 2))"),                                   # three values: the ladder
    ("idiv_quotient_below", BELOW, "(idiv (add (mul (range 0 12) 12) (range 1 5)) 6)",
     "(mul (range 0 12) 2)"),                                     # 12 % 6 == 0: exact
    ("idiv_neg_divisor", (RB,), f"(idiv {A} (var d -4 0))", f"(idiv {A} (var d -4 0))"),  # 0
    ("mod_neg_divisor", (RB,), f"(mod {A} (var d -4 0))", f"(mod {A} (var d -4 0))"),
    ("idiv_nonpos_dividend", (RB,), f"(idiv (var n -9 1) {S})", f"(idiv (var n -9 1) {S})"),
    ("mod_nonpos_dividend", (RB,), f"(mod (var n -9 1) {S})", f"(mod (var n -9 1) {S})"),
    ("recombine_divmod_4_rev", (REC,), f"(add (add {BC} (mul (idiv {XI} {C7}) {C7})) (mod {XI} "
     f"{ci(6)}))", f"(add (add {BC} (mul (idiv {XI} {C7}) {C7})) (mod {XI} {ci(6)}))"),
    ("recombine_divmod_3_chain", (REC,), f"(add (add {BC} (mul (mod {XI} {ci(4)}) {ci(3)})) "
     f"(mul (idiv {XI} {ci(4)}) {ci(10)}))", f"(add (add {BC} (mul (mod {XI} {ci(4)}) "
     f"{ci(3)})) (mul (idiv {XI} {ci(4)}) {ci(10)}))"),                         # 4*3 != 10
    ("recombine_divmod_3_chain_rev", (REC,), f"(add (add {BC} (mul (idiv {XI} {ci(4)}) "
     f"{ci(12)})) (mul (mod {XI} {ci(5)}) {ci(3)}))", f"(add (add {BC} (mul (idiv {XI} "
     f"{ci(4)}) {ci(12)})) (mul (mod {XI} {ci(5)}) {ci(3)}))"),
    ("mod_in_range", (RB,), f"(mod {A} 7)", f"(mod {A} 7)"),                  # x reaches n
    ("mod_in_range", (RB,), f"(mod {M} 4)", f"(mod {M} 4)"),                  # |x| reaches 4
    ("mod_in_range", (RB,), f"(mod {A} {NI})", f"(mod {A} {NI})"),           # n may be Invalid
    # (the lo/hi guards of mod_in_range see no interval of such an n either; the Def guard is
    # what blocks recombine_divmod_1/_4 below, whose n has no interval guard)
    ("mod_in_range", (RB,), "(mod (var n -3 0) 3)", "(mod (var n -3 0) 3)"),  # -n reached
    # (a negative n is made positive by mod_neg_divisor first; then -n must not be reached)
    ("mod_in_range", (RB,), "(mod (var n -2 0) (var d -2 -1))",
     "(mod (var n -2 0) (var d -2 -1))"),
    ("recombine_divmod_1", (REC,), f"(add (mod {XI} {C7}) (mul (idiv {XI} {C7}) {ci(8)}))",
     f"(add (mod {XI} {C7}) (mul (idiv {XI} {C7}) {ci(8)}))"),                # 8 != 7
    ("recombine_divmod_1", (REC,), f"(add (mod {XI} {SIC}) (mul (idiv {XI} {SIC}) {SIC}))",
     f"(add (mod {XI} {SIC}) (mul (idiv {XI} {SIC}) {SIC}))"),                # n may be Invalid
    ("recombine_divmod_1", (REC,), f"(add (mod {X} 7) (mul (idiv {X} 7) 7))", X),  # index:
    # the computed twin's (the native forms run for fixed-width ints only)
    ("recombine_divmod_2", (REC,), f"(add (mod (idiv {XI} {ci(2)}) {ci(3)}) (mul (idiv {XI} "
     f"{ci(5)}) {ci(3)}))", f"(add (mod (idiv {XI} {ci(2)}) {ci(3)}) (mul (idiv {XI} {ci(5)}) "
     f"{ci(3)}))"),                                                           # 2*3 != 5
    ("recombine_divmod_3", (REC,), f"(add (mul (mod {XI} {ci(4)}) {ci(3)}) (mul (idiv {XI} "
     f"{ci(4)}) {ci(10)}))", f"(add (mul (mod {XI} {ci(4)}) {ci(3)}) (mul (idiv {XI} {ci(4)}) "
     f"{ci(10)}))"),                                                          # 4*3 != 10
    ("recombine_divmod_4", (REC,), f"(add (add {BC} (mod {XI} {C7})) (mul (idiv {WI} {C7}) "
     f"{C7}))", f"(add (add {BC} (mod {XI} {C7})) (mul (idiv {WI} {C7}) {C7}))"),  # x != w
    ("recombine_divmod_4", (REC,), f"(add (add {BC} (mod {XI} {SIC})) (mul (idiv {XI} {SIC}) "
     f"{SIC}))", f"(add (add {BC} (mod {XI} {SIC})) (mul (idiv {XI} {SIC}) {SIC}))"),  # Invalid
    ("nested_idiv_symbolic", (ADV,), f"(idiv (idiv {W} {SI}) 3)",
     f"(idiv (idiv {W} {SI}) 3)"),                                             # b may be Invalid
    ("nested_idiv", (ADV,), f"(idiv (idiv {WI} (const i32 4)) (const i32 3))",
     f"(idiv (idiv {WI} (const i32 4)) (const i32 3))"),                      # i32: b*c may wrap
    ("idiv_of_mod_const", (ADV,), f"(idiv (mod {M} 10) 4)",
     f"(idiv (mod {M} 10) 4)"),                                               # 10 % 4 != 0
    ("idiv_of_mod_const", (ADV,), f"(idiv (mod {W} -12) 4)", f"(idiv (mod {W} -12) 4)"),  # m < 0
    ("mod_of_mod_multiple", (ADV,), f"(mod (mod {X} 10) 4)",
     f"(mod (mod {X} 10) 4)"),                                                # 10 % 4 != 0
    ("mod_of_mod_multiple", (ADV,), f"(mod (mod {XI} (const i32 12)) (const i32 4))",
     f"(mod (mod {XI} (const i32 12)) (const i32 4))"),                       # index only
    ("idiv_two_buckets", (SEL,), f"(idiv {W} 30)", f"(idiv {W} 30)"),          # four values
    ("idiv_two_buckets", (SEL,), "(idiv (var a 0 3) 4)", "(idiv (var a 0 3) 4)"),  # one value
    ("idiv_two_buckets", (SEL,), f"(idiv {M} 4)", f"(idiv {M} 4)"),           # x < 0
    ("idiv_two_buckets", (SEL,), f"(idiv {A} -4)", f"(idiv {A} -4)"),         # k < 0
    ("idiv_two_buckets", (SEL,), f"(idiv {WI} (const i32 60))",
     f"(idiv {WI} (const i32 60))"),                                          # index only
    ("mod_two_buckets", (SEL,), f"(mod {W} 30)", f"(mod {W} 30)"),            # four values
    ("mod_two_buckets", (SEL,), f"(mod {M} 4)", f"(mod {M} 4)"),              # x < 0
    ("mod_two_buckets", (SEL,), f"(mod {A} -4)", f"(mod {A} -4)"),            # k < 0
    ("mod_two_buckets", (SEL,), f"(mod {WI} (const i32 60))",
     f"(mod {WI} (const i32 60))"),                                           # index only
    ("idiv_three_buckets", (SEL,), f"(idiv {W} 30)", f"(idiv {W} 30)"),        # four values
    ("idiv_three_buckets", (SEL,), f"(idiv {A} 4)", f"(where (lt {A} 4) 0 1)"),  # two values
    ("idiv_three_buckets", (SEL,), "(idiv (var m -4 8) 4)", "(idiv (var m -4 8) 4)"),  # x < 0
    ("idiv_three_buckets", (SEL,), f"(idiv {W} -40)", f"(idiv {W} -40)"),      # k < 0
    ("idiv_three_buckets", (SEL,), f"(idiv {WI} (const i32 40))",
     f"(idiv {WI} (const i32 40))"),                                          # index only
    ("mod_three_buckets", (SEL,), f"(mod {W} 30)", f"(mod {W} 30)"),          # four values
    ("mod_three_buckets", (SEL,), "(mod (var m -4 8) 4)", "(mod (var m -4 8) 4)"),  # x < 0
    ("mod_three_buckets", (SEL,), f"(mod {W} -40)", f"(mod {W} -40)"),        # k < 0
    ("mod_three_buckets", (SEL,), f"(mod {WI} (const i32 40))",
     f"(mod {WI} (const i32 40))"),                                           # index only
    ("mod_two_buckets_offset", (SEL,), f"(mod {M} 4)", f"(mod {M} 4)"),       # x < 0
    ("mod_three_buckets_offset", (SEL,), f"(mod {W} -40)", f"(mod {W} -40)"),  # k < 0
    ("mod_as_remainder", (RB,), f"(mod {R2} 3)", f"(mod {R2} 3)"),     # no x // k to share
    ("mod_as_remainder", (RB,), f"(add (mod {R2} 0) (idiv {R2} 0))",
     f"(add (mod {R2} 0) (idiv {R2} 0))"),                                    # k == 0
    ("mod_as_remainder", (RB,), f"(add (mod {XI} {ci(3)}) (idiv {XI} {ci(3)}))",
     f"(add (mod {XI} {ci(3)}) (idiv {XI} {ci(3)}))"),                        # index only
]


def _fired(rule: str, matches: dict[str, int]) -> bool:
    """Whether ``rule`` (or one of its mirror images ``rule~k``) matched."""
    return any(k == rule or k.startswith(rule + "~") for k in matches)


def _run(rulesets: tuple[str, ...], src: str) -> tuple[eqsat.UOp, eqsat.UOp, dict[str, int]]:
    g = parse(src)
    # keep_egraph: the search runs even where the baseline's rewrite already costs 0;
    # from the input alone: the rule, not the baseline's, must do the rewrite
    res = eqsat.optimize(g, engine="egraph", rulesets=list(rulesets), cost_model="reference",
                         budget=replace(QUALITY, baseline_start=False), keep_egraph=True)
    eq = check_equivalent(g, res.graph)
    assert eq, f"{to_sexpr(res.graph)} is not equivalent to {src}: {eq.reason}"
    return g, res.graph, res.stats["matches"]


@pytest.mark.parametrize("rule, rulesets, src, want", FIRES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(FIRES)])
def test_rule_fires(rule: str, rulesets: tuple[str, ...], src: str, want: str | int) -> None:
    _, out, matches = _run(rulesets, src)
    assert _fired(rule, matches), f"{rule} did not fire on {src} (matches: {sorted(matches)})"
    if isinstance(want, int):
        assert reference_cost(out) == want, f"got {to_sexpr(out)}"
    else:
        assert out is parse(want), f"got {to_sexpr(out)}, want {want}"


# the guards of the rules matched from Python (not native), blocking likewise
BLOCKED_PY: list[tuple[str, tuple[str, ...], str, str]] = [
    ("mod_quotient_split", (REC,), f"(mod (add (idiv {X} 5) 2) 3)",
     f"(mod (add (idiv {X} 5) 2) 3)"),                                        # x may be < 0
    ("mod_quotient_split", (REC,), "(mod (add (idiv (var a 11 21) 16) 1) 2)",
     "(mod (add (idiv (var a 11 21) 16) 1) 2)"),                      # 16 past the span 10
    ("idiv_mul_cancel_pair", (ADV,), f"(idiv (mul (mul {A} {B}) {S}) (mul {A} {S}))",
     f"(idiv (mul (mul {A} {B}) {S}) (mul {A} {S}))"),                        # a may be 0
    ("recombine_quotient", (REC,), f"(add (mod (add (idiv {X} 5) 2) 3) (mul (idiv (add {X} 10) "
     "15) 3))", f"(add (mod (add (idiv {X} 5) 2) 3) (mul (idiv (add {X} 10) 15) 3))"),
    ("recombine_quotient_sum", (REC,), f"(add (add {B} (mul (idiv (add {X} 10) 15) 3)) "
     f"(mod (add (idiv {X} 5) 2) 3))", f"(add (add {B} (mul (idiv (add {X} 10) 15) 3)) "
     f"(mod (add (idiv {X} 5) 2) 3))"),                                       # x may be < 0
]


@pytest.mark.parametrize("rule, rulesets, src, want", BLOCKED + BLOCKED_PY,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BLOCKED + BLOCKED_PY)])
def test_guard_blocks(rule: str, rulesets: tuple[str, ...], src: str, want: str) -> None:
    _, out, matches = _run(rulesets, src)
    assert not _fired(rule, matches), f"{rule} fired on {src}: {to_sexpr(out)}"
    assert out is parse(want), f"got {to_sexpr(out)}, want {want}"


def _base(name: str) -> str:
    return name.split("~")[0]


def test_every_rule_fires_and_every_native_rule_is_blocked_somewhere() -> None:
    names = {_base(r.name) for rs in EGRAPH.values() for r in rs}
    assert {c[0] for c in FIRES} == names
    native = {_base(r.name) for rs in EGRAPH.values() for r in rs if isinstance(r, ERule)}
    assert {c[0] for c in BLOCKED} == native


def test_egraph_section_metadata() -> None:
    # the family's groups, plus the selects; each rule named, grouped, with its law
    assert set(EGRAPH) == set(GROUPS) | {SEL}
    assert SEL in SELECTS and SEL in default_groups()
    assert set(GROUPS) <= set(default_groups())
    seen: set[str] = set()
    for group, rs in EGRAPH.items():
        assert rs, f"{group} is empty"
        for r in rs:
            assert isinstance(r, (ERule, PyRule)), f"{group}: {r!r}"
            assert r.name and r.name not in seen, f"{group}: {r.name!r} missing or used twice"
            seen.add(r.name)
            assert r.group == group, f"{r.name} is filed under {group} but names {r.group}"
            assert r.identity and "->" in r.identity and "\n" not in r.identity, r.name
    # natives first in each group, then the computed twins
    for group, rs in EGRAPH.items():
        kinds = [isinstance(r, ERule) for r in rs]
        assert kinds == sorted(kinds, reverse=True), group


def test_every_core_rule_has_its_computed_twin() -> None:
    twins = {r.name: r for rs in EGRAPH.values() for r in rs
             if isinstance(r, PyRule) and r.kind == "divmod"}
    assert set(twins) == {r.name for r in DIVMOD_RULES}
    for r in DIVMOD_RULES:
        t = twins[r.name]
        assert t.rule is r and t.identity == r.identity and t.group == DIVMOD_GROUP[r.group]
    sums = [r for r in EGRAPH[REC] if isinstance(r, PyRule) and r.kind == "sum"]
    assert [r.rule for r in sums] == list(SUM_RULES)
    assert [r.name for r in EGRAPH[REC] if isinstance(r, PyRule) and r.kind == "basis"] == [
        "divmod_basis"]


def test_the_engine_reads_the_family_section() -> None:
    # the family module's groups are what the engine runs
    groups = egraph_groups()
    for group, rs in EGRAPH.items():
        assert [r.name for r in groups[group]] == [r.name for r in rs], group
