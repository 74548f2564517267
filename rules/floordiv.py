"""Floor division: ``floordiv`` and ``floormod``, tinygrad's ``//`` and ``%`` (docs/rules.md).

``floordiv(x, y)`` rounds the quotient toward -inf and ``floormod(x, y)`` takes the
divisor's sign, so ``x == floordiv(x, y)*y + floormod(x, y)`` for every ``y != 0`` and
the remainder of a positive divisor is in ``[0, y)`` whatever the sign of ``x``: the
recombination and the congruences need no sign condition, as C's do.

The floor-native rules of a positive divisor ask for a dividend that may be negative:
otherwise the floor op is C's (the conversions below) and C's div/mod core does the same
work; both would double the e-graph. The rules, in the order the ordered matcher tries
them:

- identities of the divisors 1 and -1, and the range facts (``floormod(x, c) -> x`` and
  ``floordiv(x, c) -> 0`` for ``0 <= x < c``, and the bucket just below 0);
- the recombinations ``floormod(x, n) + floordiv(x, n)*n -> x`` (with a third term, in
  both orders, and scaled);
- nested divisions ``floordiv(floordiv(x, a), b) -> floordiv(x, a*b)`` (``a, b > 0``,
  constant or not), a division of a remainder and a remainder of a remainder;
- congruences and offset sums: a term ``y*c1`` of a dividend with ``c1`` a multiple of
  the divisor leaves the remainder and adds ``y*(c1/c2)`` to the quotient; a constant
  offset keeps only its floor remainder; the common factor of a product and a divisor
  cancels;
- comparisons of a quotient with a constant: ``floordiv(x, c) < k -> x < k*c``
  (``c > 0``);
- last, conversions to C's ``idiv``/``mod`` where the dividend and the divisor are
  proven of one sign (there truncation is the floor): the div/mod core
  (``rules/divmod.py``) then applies; the e-graph also shifts a dividend that may be
  negative up to a non-negative one, ``floordiv(x, c) -> (x + m*c) // c - m`` (one add
  more: the ordered matcher, which keeps what it rewrites, does not).

Constant folding is :mod:`rules.constants`' (``const_fold_floordiv``/``_floormod``).
Every rule is proven (``eqsat rules --prove``); the fixed-width dtypes are excluded
(``is_index``) where a computed constant or a product could wrap.
"""

from __future__ import annotations

from rules.lang import baseline_groups, egraph_rules, laws_by_group, rule

__all__ = ["GROUPS", "EGRAPH", "LAWS"]

G = "floor_division_patterns"

#: one sign: truncation is the floor, and the remainders agree
_ALIKE = "(vmin(x) >= 0 and vmin(y) > 0) or (vmax(x) <= 0 and vmax(y) < 0)"
#: the shift of a possibly negative dividend to a non-negative one adds an add: the
#: ordered matcher would keep it whether or not C's rules then simplify it
_SHIFT = ("e-graph only: one add more than the floor op, worth it only where C's div/mod "
          "rules simplify the result, which an e-graph sees and the ordered matcher does not")
#: a dividend x + y*c1 that may be negative (the sum's interval's low end): where it is not,
#: the dividend and a positive divisor make the floor op C's (floordiv_to_idiv), whose
#: div/mod core does what the floor-native rules below do; both would double the e-graph
_NEG_SUM = "vmin(x) + min(vmin(y) * c1, vmax(y) * c1) < 0"
#: why the e-graph runs the recombinations with more terms on fixed-width integers only
_SUMS = ("an index sum is a flattened linear form: floor_recombine (two terms), and C's "
         "computed recombinations once the quotient is C's, find these between any terms "
         "of a sum; their binary forms over index sums cost egglog time on every step")
#: m = ceil(-vmin(x) / c1): the multiple of c1 that lifts x to non-negative values
_M = "((c1 - 1 - vmin(x)) // c1)"

LAWS = [
    # ---- divisors 1 and -1
    rule("floordiv_one", "floordiv(x, 1) -> x", group=G),
    rule("floormod_one", "floormod(x, 1) -> 0", group=G),
    rule("floordiv_neg_one", "floordiv(x, -1) -> -x", "is_signed(x)", group=G),
    rule("floormod_neg_one", "floormod(x, -1) -> 0", "is_signed(x)", group=G),
    # ---- range facts
    rule("floormod_in_range", "floormod(x, y) -> x",
         "(vmin(x) >= 0 and vmax(x) < vmin(y)) or (vmax(x) <= 0 and vmin(x) > vmax(y))",
         group=G, note="|x| below |y|, of y's sign"),
    rule("floordiv_in_range", "floordiv(x, y) -> 0",
         "(vmin(x) >= 0 and vmax(x) < vmin(y)) or (vmax(x) <= 0 and vmin(x) > vmax(y))",
         group=G),
    rule("floordiv_below_zero", "floordiv(x, y) -> -1",
         "vmin(y) > 0 and vmax(x) < 0 and vmin(x) >= -vmin(y)", group=G,
         note="-y <= x < 0"),
    rule("floormod_below_zero", "floormod(x, y) -> x + y",
         "is_index(x) and vmin(y) > 0 and vmax(x) < 0 and vmin(x) >= -vmin(y)", group=G),
    # ---- recombination: no sign condition (floor: x == floordiv(x, n)*n + floormod(x, n))
    rule("floor_recombine", "floormod(x, n) + floordiv(x, n) * n -> x",
         "is_int(x) and nonzero(n)", group=G,
         note="n never 0: floormod(x, 0) is never folded into a value"),
    rule("floor_recombine_add", "(y + floormod(x, n)) + floordiv(x, n) * n -> y + x",
         "is_int(x) and nonzero(n)", group=G),
    rule("floor_recombine_add_rev", "(y + floordiv(x, n) * n) + floormod(x, n) -> y + x",
         "is_int(x) and nonzero(n)", group=G),
    rule("floor_recombine_scaled", "floormod(x, c1) * c2 + floordiv(x, c1) * c3 -> x * c2",
         "is_int(x) and c1 != 0 and c1 * c2 == c3 and vmin(x) < 0", group=G,
         egraph_dtypes="fixed", egraph_note=_SUMS),
    rule("floor_recombine_nested",
         "floormod(floordiv(x, c1), c2) + floordiv(x, c3) * c2 -> floordiv(x, c1)",
         "is_index(x) and c1 > 0 and c2 > 0 and c1 * c2 == c3 and vmin(x) < 0", group=G),
    # ---- nested divisions
    rule("floordiv_floordiv", "floordiv(floordiv(x, c1), c2) -> floordiv(x, c1 * c2)",
         "is_index(x) and c1 > 0 and c2 > 0 and vmin(x) < 0", group=G,
         note="floor(floor(x/a)/b) == floor(x/(a*b)) for a, b > 0"),
    rule("floordiv_floordiv_var", "floordiv(floordiv(x, y), z) -> floordiv(x, y * z)",
         "is_index(x) and vmin(y) > 0 and vmin(z) > 0 and vmin(x) < 0", group=G),
    # the merged divisor within x's span: past it the quotient takes at most two values
    # (the select rules and the interval fold reach them from the nested form), and a
    # class F = floordiv(F + c2, c3) of two values would grow c1 by c3 without end
    rule("floordiv_offset_floordiv",
         "floordiv(floordiv(x, c1) + c2, c3) -> floordiv(x + c1 * c2, c1 * c3)",
         "is_index(x) and c1 > 0 and c3 > 0 and vmin(x) < 0 and c1 * c3 <= vmax(x) - vmin(x)",
         group=G, note="floor((floor(x/a) + b)/c) == floor((x + a*b)/(a*c)), any sign of x and b"),
    rule("floordiv_of_floormod",
         "floordiv(floormod(x, c1), c2) -> floormod(floordiv(x, c2), c1 // c2)",
         "is_index(x) and c2 > 0 and c1 > c2 and c1 % c2 == 0 and vmin(x) < 0", group=G),
    rule("floormod_of_floormod", "floormod(floormod(x, c1), c2) -> floormod(x, c2)",
         "is_index(x) and c2 != 0 and c1 != 0 and c1 % c2 == 0 and vmin(x) < 0", group=G),
    # ---- congruence and offset sums
    rule("floormod_drop_multiple", "floormod(x + y * c1, c2) -> floormod(x, c2)",
         f"is_index(x) and c2 != 0 and c1 % c2 == 0 and {_NEG_SUM}", group=G,
         note="(x + k*c) % c == x % c"),
    rule("floordiv_split_multiple",
         "floordiv(x + y * c1, c2) -> floordiv(x, c2) + y * (c1 // c2)",
         f"is_index(x) and c2 != 0 and c1 % c2 == 0 and {_NEG_SUM}", group=G,
         note="(x + k*c)//c == x//c + k"),
    rule("floormod_multiple", "floormod(y * c1, c2) -> 0",
         "is_index(y) and c2 != 0 and c1 % c2 == 0 and vmin(y) < 0", group=G),
    rule("floordiv_multiple", "floordiv(y * c1, c2) -> y * (c1 // c2)",
         "is_index(y) and c2 != 0 and c1 % c2 == 0 and vmin(y) < 0", group=G),
    rule("floormod_const_offset", "floormod(x + c1, c2) -> floormod(x + floormod(c1, c2), c2)",
         "is_index(x) and c2 > 0 and (c1 < 0 or c1 >= c2) and vmin(x) + c1 < 0", group=G,
         note="the offset's multiple of c2 leaves the remainder"),
    rule("floordiv_const_offset",
         "floordiv(x + c1, c2) -> floordiv(x + floormod(c1, c2), c2) + floordiv(c1, c2)",
         "is_index(x) and c2 > 0 and (c1 < 0 or c1 >= c2) and vmin(x) + c1 < 0", group=G),
    rule("floordiv_cancel_factor", "floordiv(x * c1, c2) -> floordiv(x, c2 // c1)",
         "is_index(x) and c1 > 0 and c2 > 0 and c2 % c1 == 0 and vmin(x) < 0", group=G,
         note="floor(x*a/(a*b)) == floor(x/b)"),
    rule("floormod_cancel_factor", "floormod(x * c1, c2) -> floormod(x, c2 // c1) * c1",
         "is_index(x) and c1 > 0 and c2 > 0 and c2 % c1 == 0", group=G,
         note="any sign of x"),
    # ---- comparisons of a quotient with a constant (c1 > 0: floor(x/c) < k iff x < k*c)
    rule("floordiv_lt", "floordiv(x, c1) < k -> x < k * c1",
         "is_index(x) and c1 > 0 and vmin(x) < 0", group=G),
    rule("floordiv_gt", "k < floordiv(x, c1) -> (k + 1) * c1 - 1 < x",
         "is_index(x) and c1 > 0 and vmin(x) < 0", group=G, note="k < floor(x/c) iff (k+1)*c <= x"),
    # ---- last: conversions to C's truncating ops where the signs are proven alike (the
    # floor-native rules above first: a conversion hides the floor op from them)
    rule("floordiv_to_idiv", "floordiv(x, y) -> x // y", _ALIKE, group=G, subsume=True,
         note="the quotient is not negative: truncation is the floor"),
    rule("floormod_to_mod", "floormod(x, y) -> x % y", _ALIKE, group=G, subsume=True,
         note="the remainders of one sign agree"),
    rule("floordiv_shift_to_idiv", f"floordiv(x, c1) -> (x + c1 * {_M}) // c1 - {_M}",
         "is_index(x) and c1 > 0 and vmin(x) < 0", group=G, baseline_reason=_SHIFT,
         note="floor(x/c) == floor((x + m*c)/c) - m, and x + m*c >= 0"),
    rule("floormod_shift_to_mod", f"floormod(x, c1) -> (x + c1 * {_M}) % c1",
         "is_index(x) and c1 > 0 and vmin(x) < 0", group=G, baseline_reason=_SHIFT,
         note="a multiple of c leaves the floor remainder, and x + m*c >= 0"),
]

GROUPS = baseline_groups(LAWS)
EGRAPH = laws_by_group(egraph_rules(LAWS))
