"""Native egglog rewrites: small local rules whose guards read the interval analysis.

Each :class:`ERule` is one named rewrite with a one-line identity, in a group
named after the seeds' pattern groups (``identity_and_zero_patterns``,
``comparison_dsl_patterns``, ...). Rules match the constructors of
:mod:`eqsat.egraph.encoding` (``(Add dt a b)``, ``(Cst dt v)``, ...); guards use
``lo``/``hi`` (see :mod:`eqsat.egraph.analyses`) and the dtype relations
``IntDt`` (index and fixed-width integers) and ``IdxDt`` (index only: no wrap).
Computed values are bound in the query (an i64 overflow there is "no match").

A commutative pattern is written once; :func:`commuted` adds its mirror images.
A rule that drops an operand (``x*0 -> 0``, ``where(c, t, f) -> t``) requires
``(Def x)`` of what it drops: ``Invalid`` propagates through every op, and the
rewrite must not turn an Invalid into a value. Rules that replace a node by
something strictly simpler subsume the node
(``subsume=True``), so it stops matching other rules and is never extracted.

These are the e-graph twins of the baseline's rule families; once a family
module ``rules/<family>.py`` is final they are listed there under ``EGRAPH``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ERule", "NATIVE_RULES", "native_groups", "commuted"]


@dataclass(frozen=True)
class ERule:
    """One native egglog rewrite.

    Either a rewrite (``lhs`` -> ``rhs`` under the facts ``when``) or a general
    rule (``query`` facts -> ``actions``). ``group`` names the rule set.
    """

    name: str
    identity: str
    group: str
    lhs: str = ""
    rhs: str = ""
    when: tuple[str, ...] = ()
    query: str = ""
    actions: str = ""
    subsume: bool = False

    def program(self, ruleset: str) -> str:
        """The egglog command adding this rule to ``ruleset``."""
        if self.lhs:
            when = f" :when ({' '.join(self.when)})" if self.when else ""
            sub = " :subsume" if self.subsume else ""
            return (f"(rewrite {self.lhs} {self.rhs}{when}{sub} :ruleset {ruleset} "
                    f':name "{self.name}")')
        return f'(rule ({self.query}) ({self.actions}) :ruleset {ruleset} :name "{self.name}")'

    def __repr__(self) -> str:
        return f"ERule({self.name!r}, {self.identity!r}, group={self.group!r})"


_SWAP = {"Add", "Mul", "Max", "Min", "Eq", "Ne", "And", "Or", "Xor"}


def _swaps(text: str) -> list[str]:
    """Every variant of ``text`` with the operands of commutative binary nodes swapped."""
    # parse into a tree of lists
    toks = re.findall(r'\(|\)|"[^"]*"|[^\s()]+', text)
    pos = 0

    def parse():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t != "(":
            return t
        out = []
        while toks[pos] != ")":
            out.append(parse())
        pos += 1
        return out

    tree = parse()

    def variants(t):
        if not isinstance(t, list):
            return [t]
        kids = [variants(x) for x in t]
        combos = [[]]
        for ks in kids:
            combos = [c + [k] for c in combos for k in ks]
        out = []
        for c in combos:
            out.append(c)
            if c and c[0] in _SWAP and len(c) == 4:
                out.append([c[0], c[1], c[3], c[2]])
        return out

    def show(t):
        return t if not isinstance(t, list) else "(" + " ".join(show(x) for x in t) + ")"

    seen, res = set(), []
    for v in variants(tree):
        s = show(v)
        if s not in seen:
            seen.add(s)
            res.append(s)
    return res


def commuted(rule: ERule) -> list[ERule]:
    """``rule`` and its mirror images over commutative operands (named ``name``, ``name~1``...)."""
    if not rule.lhs:
        return [rule]
    out = []
    for i, lhs in enumerate(_swaps(rule.lhs)):
        out.append(ERule(rule.name if i == 0 else f"{rule.name}~{i}", rule.identity, rule.group,
                         lhs, rule.rhs, rule.when, subsume=rule.subsume))
    return out


def R(name: str, identity: str, group: str, lhs: str, rhs: str, *when: str,
      subsume: bool = False) -> list[ERule]:
    return commuted(ERule(name, identity, group, lhs, rhs, tuple(when), subsume=subsume))


def Q(name: str, identity: str, group: str, query: str, actions: str) -> list[ERule]:
    return [ERule(name, identity, group, query=query, actions=actions)]


_INT = "(IntDt dt)"
_IDX = "(IdxDt dt)"
_NZ_LO = "(> (lo {0}) 0)"

# ---------------------------------------------------------------------------
# the rules, by group
# ---------------------------------------------------------------------------
G_ADVANCED_DIVISION = "advanced_division_dsl_patterns"
G_BOOLEAN = "boolean_dsl_patterns"
G_COMPARISON = "comparison_dsl_patterns"
G_CONSTANT_FOLDING = "constant_folding_dsl_patterns"
#: opt-in: "a class whose interval is [c, c] is c" natively, one rule per op (the default
#: is the computed fold_known, one generic rule)
G_FOLD_KNOWN_NATIVE = "constant_folding_native"
G_DIV_MOD_RECOMBINE = "div_mod_recombine_dsl_patterns"
G_DIVISION = "division_dsl_patterns"
G_IDENTITY_AND_ZERO = "identity_and_zero_patterns"
G_MINMAX = "minmax_dsl_patterns"
G_NEGATION = "negation_dsl_patterns"
G_PROPAGATE_INVALID = "propagate_invalid"
#: opt-in: #5 of seed 003 natively (the computed nested_idiv_offset is the default: its
#: unions are checked against cycles)
G_RECOMBINE_NESTED = "div_mod_recombine_nested_native"
#: opt-in: the stepwise lifting of where(c, x, Invalid) through every op (grows fast)
G_LIFT_STEPWISE = "propagate_invalid_stepwise"
G_RANGE_BASED_MOD_DIV = "range_based_mod_div_patterns"
G_SELF_FOLDING = "self_folding_dsl_patterns"
G_TERM_COMBINING = "term_combining_dsl_patterns"
G_WHERE_BOUND = "where_bound_patterns"
G_ZERO_FOLDING = "zero_folding_dsl_patterns"

_rules: list[ERule] = []
add = _rules.extend

# ---- constant folding: a class whose interval is one value is that value ----
for _ctor, _ar in (("Add", 2), ("Sub", 2), ("Mul", 2), ("Max", 2), ("Min", 2), ("Neg", 1),
                   ("Not", 1), ("And", 2), ("Or", 2), ("Xor", 2), ("Shl", 2), ("Shr", 2),
                   ("Lt", 2), ("Le", 2), ("Gt", 2), ("Ge", 2), ("Eq", 2), ("Ne", 2),
                   ("Where", 3), ("Cast", 1), ("Mulacc", 3)):
    _args = " ".join(f"x{i}" for i in range(_ar))
    add(Q(f"fold_known_{_ctor.lower()}", f"{_ctor.lower()}(...) -> c when its interval is [c, c]",
          G_FOLD_KNOWN_NATIVE,
          f"(= e ({_ctor} dt {_args})) (= v (lo e)) (= v (hi e)) (= m (dmin dt)) (Def e)",
          "(union e (Cst dt v))"))
for _ctor in ("Idiv", "Mod"):
    for _sign, _g in (("pos", "(> (lo y) 0)"), ("neg", "(< (hi y) 0)")):
        add(Q(f"fold_known_{_ctor.lower()}_{_sign}",
              f"{_ctor.lower()}(x, y) -> c when its interval is [c, c] and y is never 0",
              G_FOLD_KNOWN_NATIVE,
              f"(= e ({_ctor} dt x y)) {_g} (= v (lo e)) (= v (hi e)) (= m (dmin dt)) "
              "(Def e)",
              "(union e (Cst dt v))"))
add(Q("fold_known_range", "range(end) -> c when its interval is [c, c] (one iteration)",
      G_FOLD_KNOWN_NATIVE,
      "(= e (G1 op dt a n)) (= op \"RANGE\") (= v (lo e)) (= v (hi e)) (= m (dmin dt)) "
      "(Def e)",
      "(union e (Cst dt v))"))

# ---- identity and zero -------------------------------------------------------
add(R("add_zero", "x+0 -> x", G_IDENTITY_AND_ZERO, "(Add dt x (Cst dt 0))", "x", subsume=True))
add(R("sub_zero", "x-0 -> x", G_IDENTITY_AND_ZERO, "(Sub dt x (Cst dt 0))", "x", subsume=True))
add(R("mul_one", "x*1 -> x", G_IDENTITY_AND_ZERO, "(Mul dt x (Cst dt 1))", "x", _INT,
      subsume=True))
add(R("mul_zero", "x*0 -> 0 (integers; x is never Invalid)",
      G_IDENTITY_AND_ZERO, "(Mul dt x (Cst dt 0))", "(Cst dt 0)", _INT, "(Def x)",
      subsume=True))
add(R("idiv_one", "x//1 -> x", G_IDENTITY_AND_ZERO, "(Idiv dt x (Cst dt 1))", "x",
      subsume=True))
add(R("mod_one", "x%1 -> 0 (integers)", G_IDENTITY_AND_ZERO, "(Mod dt x (Cst dt 1))",
      "(Cst dt 0)", _INT, "(Def x)", subsume=True))
add(R("mod_neg_one", "x%-1 -> 0 (integers)", G_IDENTITY_AND_ZERO, "(Mod dt x (Cst dt -1))",
      "(Cst dt 0)", _INT, "(Def x)", subsume=True))
add(R("or_zero", "x|0 -> x (integers)", G_IDENTITY_AND_ZERO, "(Or dt x (Cst dt 0))", "x",
      _INT, subsume=True))
add(R("xor_zero", "x^0 -> x (integers)", G_IDENTITY_AND_ZERO, "(Xor dt x (Cst dt 0))", "x",
      _INT, subsume=True))
add(R("and_zero", "x&0 -> 0 (integers; x is never Invalid)", G_IDENTITY_AND_ZERO,
      "(And dt x (Cst dt 0))", "(Cst dt 0)", _INT, "(Def x)", subsume=True))

# ---- self folding ---------------------------------------------------------------
add(R("idiv_self", "x//x -> 1 when x is never 0", G_SELF_FOLDING, "(Idiv dt x x)",
      "(Cst dt 1)", _INT, "(> (lo x) 0)", "(Def x)", subsume=True))
add(R("idiv_self_neg", "x//x -> 1 when x is never 0", G_SELF_FOLDING, "(Idiv dt x x)",
      "(Cst dt 1)", _INT, "(< (hi x) 0)", "(Def x)", subsume=True))
add(R("idiv_neg_one", "x//-1 -> -x (index: no wrap)", G_SELF_FOLDING,
      "(Idiv dt x (Cst dt -1))", "(Neg dt x)", _IDX, subsume=True))
add(R("mod_mod_same", "(x%y)%y -> x%y", G_SELF_FOLDING, "(Mod dt (Mod dt x y) y)",
      "(Mod dt x y)", subsume=True))
add(R("and_self", "x&x -> x", G_SELF_FOLDING, "(And dt x x)", "x", subsume=True))
add(R("or_self", "x|x -> x", G_SELF_FOLDING, "(Or dt x x)", "x", subsume=True))
add(R("max_self", "max(x,x) -> x", G_MINMAX, "(Max dt x x)", "x", subsume=True))
add(R("min_self", "min(x,x) -> x", G_MINMAX, "(Min dt x x)", "x", subsume=True))

# ---- zero folding ---------------------------------------------------------------
add(R("mod_self", "x%x -> 0 when x is never 0", G_ZERO_FOLDING, "(Mod dt x x)", "(Cst dt 0)",
      _INT, "(> (lo x) 0)", "(Def x)", subsume=True))
add(R("mod_self_neg", "x%x -> 0 when x is never 0", G_ZERO_FOLDING, "(Mod dt x x)",
      "(Cst dt 0)", _INT, "(< (hi x) 0)", "(Def x)", subsume=True))
add(R("sub_self", "x-x -> 0 (integers)", G_ZERO_FOLDING, "(Sub dt x x)", "(Cst dt 0)", _INT,
      "(Def x)", subsume=True))
for _c, _v in (("Lt", 0), ("Gt", 0), ("Ne", 0), ("Le", 1), ("Ge", 1), ("Eq", 1)):
    add(Q(f"{_c.lower()}_self", f"{_c.lower()}(x,x) -> {bool(_v)} (x an integer or bool)",
          G_ZERO_FOLDING, f"(= e ({_c} dt x x)) (= lx (lo x)) (Def x)", f"(union e (Cst dt {_v}))"))

# ---- division ---------------------------------------------------------------------
add(R("idiv_mul_cancel", "(x*y)//y -> x when y is never 0 (index: no wrap)", G_DIVISION,
      "(Idiv dt (Mul dt x y) y)", "x", _IDX, "(> (lo y) 0)", "(Def y)"))
add(R("idiv_mul_cancel_neg", "(x*y)//y -> x when y is never 0 (index: no wrap)", G_DIVISION,
      "(Idiv dt (Mul dt x y) y)", "x", _IDX, "(< (hi y) 0)", "(Def y)"))
add(R("mod_mul_cancel", "(x*y)%y -> 0 when y is never 0 (index)", G_DIVISION,
      "(Mod dt (Mul dt x y) y)", "(Cst dt 0)", _IDX, "(> (lo y) 0)", "(Def x)",
      "(Def y)"))

# ---- term combining -------------------------------------------------------------
add(R("add_self", "x+x -> x*2 (integers)", G_TERM_COMBINING, "(Add dt x x)",
      "(Mul dt x (Cst dt 2))", _INT))
add(R("sub_add_cancel", "(x+y)-y -> x (integers)", G_TERM_COMBINING, "(Sub dt (Add dt x y) y)",
      "x", _INT, "(Def y)", subsume=True))
add(R("add_sub_cancel", "(x-y)+y -> x (integers)", G_TERM_COMBINING, "(Add dt (Sub dt x y) y)",
      "x", _INT, "(Def y)", subsume=True))

# ---- comparisons ----------------------------------------------------------------
add(Q("gt_to_lt", "x > y -> y < x", G_COMPARISON, "(= e (Gt dt x y))",
      "(union e (Lt dt y x))"))
add(Q("ge_const_to_lt", "x >= c -> c-1 < x (integers)", G_COMPARISON,
      "(= e (Ge dt x (Cst dx c))) (IntDt dx) (= c1 (- c 1)) (>= c1 (dmin dx))",
      "(union e (Lt dt (Cst dx c1) x))"))
add(Q("le_const_to_lt", "x <= c -> x < c+1 (integers)", G_COMPARISON,
      "(= e (Le dt x (Cst dx c))) (IntDt dx) (= c1 (+ c 1)) (<= c1 (dmax dx))",
      "(union e (Lt dt x (Cst dx c1)))"))
add(Q("not_lt_const", "!(x < c) -> c-1 < x (integers)", G_COMPARISON,
      "(= e (Not dt (Lt dt x (Cst dx c)))) (IntDt dx) (= c1 (- c 1)) (>= c1 (dmin dx))",
      "(union e (Lt dt (Cst dx c1) x))"))
add(Q("not_const_lt", "!(c < x) -> x < c+1 (integers)", G_COMPARISON,
      "(= e (Not dt (Lt dt (Cst dx c) x))) (IntDt dx) (= c1 (+ c 1)) (<= c1 (dmax dx))",
      "(union e (Lt dt x (Cst dx c1)))"))
add(Q("lt_offset", "x+c0 < c1 -> x < c1-c0 (index)", G_COMPARISON,
      "(= e (Lt dt (Add dx x (Cst dx c0)) (Cst dx c1))) (IdxDt dx) (= c (- c1 c0))",
      "(union e (Lt dt x (Cst dx c)))"))
add(Q("lt_offset_lhs", "c1 < x+c0 -> c1-c0 < x (index)", G_COMPARISON,
      "(= e (Lt dt (Cst dx c1) (Add dx x (Cst dx c0)))) (IdxDt dx) (= c (- c1 c0))",
      "(union e (Lt dt (Cst dx c) x))"))
add(Q("lt_idiv_lift_pos", "x//d < c -> x < c*d (d > 0, c > 0)", G_COMPARISON,
      "(= e (Lt dt (Idiv dx x (Cst dx d)) (Cst dx c))) (IdxDt dx) (> d 0) (> c 0) "
      "(= k (* c d))", "(union e (Lt dt x (Cst dx k)))"))
add(Q("lt_idiv_lift_nonpos", "x//d < c -> x < (c-1)*d+1 (d > 0, c <= 0)", G_COMPARISON,
      "(= e (Lt dt (Idiv dx x (Cst dx d)) (Cst dx c))) (IdxDt dx) (> d 0) (<= c 0) "
      "(= k (+ (* (- c 1) d) 1))", "(union e (Lt dt x (Cst dx k)))"))
add(Q("const_lt_idiv_lift", "c < x//d -> (c+1)*d-1 < x (d > 0, c >= 0)", G_COMPARISON,
      "(= e (Lt dt (Cst dx c) (Idiv dx x (Cst dx d)))) (IdxDt dx) (> d 0) (>= c 0) "
      "(= k (- (* (+ c 1) d) 1))", "(union e (Lt dt (Cst dx k) x))"))
add(Q("lt_mul_pos", "x*c0 < c1 -> x < ceil(c1/c0) (c0 > 0, index)", G_COMPARISON,
      "(= e (Lt dt (Mul dx x (Cst dx c0)) (Cst dx c1))) (IdxDt dx) (> c0 0) (> c1 0) "
      "(= k (/ (+ c1 (- c0 1)) c0))", "(union e (Lt dt x (Cst dx k)))"))
add(Q("const_lt_mul_pos", "c1 < x*c0 -> c1//c0 < x (c0 > 0, c1 >= 0, index)", G_COMPARISON,
      "(= e (Lt dt (Cst dx c1) (Mul dx x (Cst dx c0)))) (IdxDt dx) (> c0 0) (>= c1 0) "
      "(= k (/ c1 c0))", "(union e (Lt dt (Cst dx k) x))"))
add(Q("neg_lt_flip", "-x < -y -> y < x (index)", G_COMPARISON,
      "(= e (Lt dt (Neg dx x) (Neg dx y))) (IdxDt dx)", "(union e (Lt dt y x))"))

# ---- boolean logic ----------------------------------------------------------------
add(R("not_not", "!!x -> x", G_BOOLEAN, "(Not dt (Not dt x))", "x", subsume=True))
add(R("and_true", "x & true -> x", G_BOOLEAN, "(And dt x (Cst dt 1))", "x",
      "(= dt \"bool\")", subsume=True))
add(R("and_false", "x & false -> false", G_BOOLEAN, "(And dt x (Cst dt 0))", "(Cst dt 0)",
      "(= dt \"bool\")", "(Def x)", subsume=True))
add(R("or_true", "x | true -> true", G_BOOLEAN, "(Or dt x (Cst dt 1))", "(Cst dt 1)",
      "(= dt \"bool\")", "(Def x)", subsume=True))
add(R("or_false", "x | false -> x", G_BOOLEAN, "(Or dt x (Cst dt 0))", "x",
      "(= dt \"bool\")", subsume=True))
add(R("xor_self", "x^x -> 0", G_BOOLEAN, "(Xor dt x x)", "(Cst dt 0)", "(Def x)",
      subsume=True))
add(R("and_not_self", "x & !x -> false (bools)", G_BOOLEAN, "(And dt x (Not dt x))",
      "(Cst dt 0)", "(= dt \"bool\")", "(Def x)", subsume=True))
add(R("or_not_self", "x | !x -> true (bools)", G_BOOLEAN, "(Or dt x (Not dt x))", "(Cst dt 1)",
      "(= dt \"bool\")", "(Def x)", subsume=True))
add(R("de_morgan_and", "!x & !y -> !(x | y)", G_BOOLEAN, "(And dt (Not dt x) (Not dt y))",
      "(Not dt (Or dt x y))"))
add(R("de_morgan_or", "!x | !y -> !(x & y)", G_BOOLEAN, "(Or dt (Not dt x) (Not dt y))",
      "(Not dt (And dt x y))"))
add(R("and_absorb_lt", "(x < c1) & (x < c2) -> x < min(c1, c2)", G_BOOLEAN,
      "(And dt (Lt dt x (Cst dx c1)) (Lt dt x (Cst dx c2)))",
      "(Lt dt x (Cst dx (min c1 c2)))"))
add(R("and_absorb_gt", "(c1 < x) & (c2 < x) -> max(c1, c2) < x", G_BOOLEAN,
      "(And dt (Lt dt (Cst dx c1) x) (Lt dt (Cst dx c2) x))",
      "(Lt dt (Cst dx (max c1 c2)) x)"))
add(R("and_assoc_dedup", "(a & b) & b -> a & b", G_BOOLEAN, "(And dt (And dt a b) b)",
      "(And dt a b)", subsume=True))

# ---- min / max ----------------------------------------------------------------------
add(R("max_left", "max(x,y) -> x when lo(x) >= hi(y)", G_MINMAX, "(Max dt x y)", "x",
      "(>= (lo x) (hi y))", "(Def y)", subsume=True))
add(R("min_left", "min(x,y) -> x when hi(x) <= lo(y)", G_MINMAX, "(Min dt x y)", "x",
      "(<= (hi x) (lo y))", "(Def y)", subsume=True))

# ---- where --------------------------------------------------------------------------
add(R("where_true", "where(c,t,f) -> t when c is always true", G_WHERE_BOUND,
      "(Where dt c t f)", "t", "(= (lo c) 1)", "(Def c)", subsume=True))
add(R("where_false", "where(c,t,f) -> f when c is always false", G_WHERE_BOUND,
      "(Where dt c t f)", "f", "(= (hi c) 0)", "(Def c)", subsume=True))
add(R("where_same", "where(c,t,t) -> t", G_WHERE_BOUND, "(Where dt c t t)", "t",
      "(Def c)", subsume=True))
add(R("where_bool_id", "where(c,true,false) -> c", G_WHERE_BOUND,
      "(Where dt c (Cst dt 1) (Cst dt 0))", "c", "(= dt \"bool\")", subsume=True))
add(R("where_bool_not", "where(c,false,true) -> !c", G_WHERE_BOUND,
      "(Where dt c (Cst dt 0) (Cst dt 1))", "(Not dt c)", "(= dt \"bool\")"))
add(R("where_not_flip", "where(!c,t,f) -> where(c,f,t) when f is not Invalid (f has a value)",
      G_WHERE_BOUND, "(Where dt (Not dc c) t f)", "(Where dt c f t)", "(= lf (lo f))"))
add(R("where_merge", "where(a, where(b, x, y), y) -> where(a & b, x, y)", G_WHERE_BOUND,
      "(Where dt a (Where dt b x y) y)", "(Where dt (And dc a b) x y)",
      "(= dc \"bool\")", "(= la (lo a))", "(= lb (lo b))"))

# ---- invalid ---------------------------------------------------------------------------
add(R("where_invalid_merge", "where(c1, where(c2, x, Inv), Inv) -> where(c1 & c2, x, Inv)",
      G_PROPAGATE_INVALID, "(Where dt c1 (Where dt c2 x (Leaf \"INVALID\" dt a)) "
      "(Leaf \"INVALID\" dt a))", "(Where dt (And \"bool\" c1 c2) x (Leaf \"INVALID\" dt a))"))

_INV = "(Leaf \"INVALID\" di ai)"
for _c in ("Add", "Sub", "Mul", "Idiv", "Mod", "Max", "Min", "And", "Or", "Xor", "Shl", "Shr",
           "Lt", "Le", "Gt", "Ge", "Eq", "Ne"):
    _l = _c.lower()
    add(Q(f"{_l}_where_invalid_lhs", f"{_l}(where(c, x, Inv), y) -> where(c, {_l}(x, y), Inv)",
          G_LIFT_STEPWISE, f"(= e ({_c} dt (Where dw c x {_INV}) y))",
          f"(union e (Where dt c ({_c} dt x y) {_INV}))"))
    add(Q(f"{_l}_where_invalid_rhs", f"{_l}(y, where(c, x, Inv)) -> where(c, {_l}(y, x), Inv)",
          G_LIFT_STEPWISE, f"(= e ({_c} dt y (Where dw c x {_INV})))",
          f"(union e (Where dt c ({_c} dt y x) {_INV}))"))
for _c in ("Neg", "Not", "Cast"):
    _l = _c.lower()
    add(Q(f"{_l}_where_invalid", f"{_l}(where(c, x, Inv)) -> where(c, {_l}(x), Inv)",
          G_LIFT_STEPWISE, f"(= e ({_c} dt (Where dw c x {_INV})))",
          f"(union e (Where dt c ({_c} dt x) {_INV}))"))
add(Q("where_cond_invalid", "where(where(c, b, Inv), t, f) -> where(c, where(b, t, f), Inv)",
      G_LIFT_STEPWISE, f"(= e (Where dt (Where dw c b {_INV}) t f))",
      f"(union e (Where dt c (Where dt b t f) {_INV}))"))
for _c in ("Add", "Sub", "Mul", "Max", "Min"):
    add(R(f"{_c.lower()}_where_same_cond", f"{_c.lower()}(where(c, k1, k2), where(c, k3, k4)) -> "
          f"where(c, {_c.lower()}(k1, k3), {_c.lower()}(k2, k4)) (constant branches)",
          G_WHERE_BOUND,
          f"({_c} dt (Where dt c (Cst dt k1) (Cst dt k2)) (Where dt c (Cst dt k3) (Cst dt k4)))",
          f"(Where dt c ({_c} dt (Cst dt k1) (Cst dt k3)) ({_c} dt (Cst dt k2) (Cst dt k4)))"))
for _c in ("Add", "Mul"):
    add(R(f"{_c.lower()}_where_const", f"{_c.lower()}(where(c, k1, k2), k3) -> "
          f"where(c, {_c.lower()}(k1, k3), {_c.lower()}(k2, k3)) (constant branches)",
          G_WHERE_BOUND, f"({_c} dt (Where dt c (Cst dt k1) (Cst dt k2)) (Cst dt k3))",
          f"(Where dt c ({_c} dt (Cst dt k1) (Cst dt k3)) ({_c} dt (Cst dt k2) (Cst dt k3)))"))
add(R("where_same_cond_true", "where(c, where(c, a, b), d) -> where(c, a, d)", G_WHERE_BOUND,
      "(Where dt c (Where dt c a b) d)", "(Where dt c a d)", subsume=True))
add(R("where_same_cond_false", "where(c, a, where(c, b, d)) -> where(c, a, d)", G_WHERE_BOUND,
      "(Where dt c a (Where dt c b d))", "(Where dt c a d)", subsume=True))

# ---- range-based mod/div (the div-mod engine's fast paths, natively) -----------------
add(R("mod_in_range", "x%n -> x when 0 <= x < n", G_RANGE_BASED_MOD_DIV, "(Mod dt x n)", "x",
      "(>= (lo x) 0)", "(< (hi x) (lo n))", "(Def n)", subsume=True))
add(R("mod_in_range_neg", "x%n -> x when -n < x <= 0 (C: the dividend's sign)",
      G_RANGE_BASED_MOD_DIV, "(Mod dt x n)", "x", "(<= (hi x) 0)", "(> (lo n) 0)",
      "(< (- 0 (lo x)) (lo n))", "(Def n)", subsume=True))

# ---- div-mod recombination (seed 003 #1-#5) -----------------------------------------
add(R("recombine_divmod_1", "x%n + (x//n)*n -> x", G_DIV_MOD_RECOMBINE,
      "(Add dt (Mod dt x n) (Mul dt (Idiv dt x n) n))", "x", "(Def n)"))
add(Q("recombine_divmod_2", "((x//a)%c) + (x//b)*c -> x//a when a*c == b", G_DIV_MOD_RECOMBINE,
      "(= e (Add dt (Mod dt (Idiv dt x (Cst dt a)) (Cst dt c)) "
      "(Mul dt (Idiv dt x (Cst dt b)) (Cst dt c)))) (= b (* a c))",
      "(union e (Idiv dt x (Cst dt a)))"))
add(Q("recombine_divmod_3", "(x%c1)*c2 + (x//c1)*c3 -> x*c2 when c1*c2 == c3",
      G_DIV_MOD_RECOMBINE,
      "(= e (Add dt (Mul dt (Mod dt x (Cst dt c1)) (Cst dt c2)) "
      "(Mul dt (Idiv dt x (Cst dt c1)) (Cst dt c3)))) (= c3 (* c1 c2))",
      "(union e (Mul dt x (Cst dt c2)))"))
add(R("recombine_divmod_4", "(y + x%n) + (x//n)*n -> y + x", G_DIV_MOD_RECOMBINE,
      "(Add dt (Add dt y (Mod dt x n)) (Mul dt (Idiv dt x n) n))", "(Add dt y x)",
      "(Def n)"))
add(Q("recombine_divmod_5", "(a//c1 + c2)//c3 -> (a + c1*c2)//(c1*c3) (c1, c3 > 0, a, c2 >= 0)",
      G_RECOMBINE_NESTED,
      "(= e (Idiv dt (Add dt (Idiv dt a (Cst dt c1)) (Cst dt c2)) (Cst dt c3))) (IdxDt dt) "
      "(> c1 0) (> c3 0) (>= c2 0) (>= (lo a) 0) (= k (* c1 c2)) (= d (* c1 c3))",
      "(union e (Idiv dt (Add dt a (Cst dt k)) (Cst dt d)))"))
add(Q("recombine_divmod_5_neg", "(a//c1 + c2)//c3 -> (a + c1*c2)//(c1*c3) (c1, c3 > 0, "
      "a, c2 <= 0)", G_RECOMBINE_NESTED,
      "(= e (Idiv dt (Add dt (Idiv dt a (Cst dt c1)) (Cst dt c2)) (Cst dt c3))) (IdxDt dt) "
      "(> c1 0) (> c3 0) (<= c2 0) (<= (hi a) 0) (= k (* c1 c2)) (= d (* c1 c3))",
      "(union e (Idiv dt (Add dt a (Cst dt k)) (Cst dt d)))"))

# ---- advanced division ----------------------------------------------------------------
add(Q("nested_idiv_const", "(a//b)//c -> a//(b*c) (b, c constants, non-zero)",
      G_ADVANCED_DIVISION,
      "(= e (Idiv dt (Idiv dt a (Cst dt b)) (Cst dt c))) (IdxDt dt) (!= b 0) (!= c 0) "
      "(= k (* b c))", "(union e (Idiv dt a (Cst dt k)))"))
add(Q("idiv_of_mod_const", "(a % (k*c)) // c -> (a // c) % k (c > 0 constant)",
      G_ADVANCED_DIVISION,
      "(= e (Idiv dt (Mod dt a (Cst dt m)) (Cst dt c))) (IdxDt dt) (> c 0) (> m c) "
      "(= 0 (% m c)) (= k (/ m c))", "(union e (Mod dt (Idiv dt a (Cst dt c)) (Cst dt k)))"))
add(Q("mod_of_mod_multiple", "(a % (k*c)) % c -> a % c (c != 0 constant)", G_ADVANCED_DIVISION,
      "(= e (Mod dt (Mod dt a (Cst dt m)) (Cst dt c))) (IdxDt dt) (!= c 0) (!= m 0) "
      "(= 0 (% m c))", "(union e (Mod dt a (Cst dt c)))"))

# ---- negation / power ---------------------------------------------------------------------
add(R("neg_neg", "-(-x) -> x", G_NEGATION, "(Neg dt (Neg dt x))", "x", subsume=True))
add(R("sub_neg", "x - (-y) -> x + y", G_NEGATION, "(Sub dt x (Neg dt y))", "(Add dt x y)"))
add(R("add_neg", "x + (-y) -> x - y", G_NEGATION, "(Add dt x (Neg dt y))", "(Sub dt x y)"))
add(Q("mul_neg_one", "x*-1 -> -x (index)", G_NEGATION,
      "(= e (Mul dt x (Cst dt -1))) (IdxDt dt)", "(union e (Neg dt x))"))

NATIVE_RULES: list[ERule] = _rules
_names = [r.name for r in NATIVE_RULES]
assert len(set(_names)) == len(_names), "duplicate native rule names"


def native_groups() -> dict[str, list[ERule]]:
    """group name -> its native rules, in definition order."""
    out: dict[str, list[ERule]] = {}
    for r in NATIVE_RULES:
        out.setdefault(r.group, []).append(r)
    return out
