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

These are the e-graph twins of the baseline's rule families. The twins of a
family whose module ``rules/<family>.py`` is final live there, under
``EGRAPH`` (built with :func:`R`/:func:`Q` from here); this module keeps the
helpers and the drafts of the families still being written (the div/mod
family of ``rules/divmod.py``), listed in :data:`NATIVE_RULES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ERule", "NATIVE_RULES", "native_groups", "commuted", "R", "Q", "INT_DT", "IDX_DT",
           "INVALID_LEAF"]


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
    """A rewrite ``lhs -> rhs`` under the facts ``when``, with its commuted variants."""
    return commuted(ERule(name, identity, group, lhs, rhs, tuple(when), subsume=subsume))


def Q(name: str, identity: str, group: str, query: str, actions: str) -> list[ERule]:
    """A general rule: the facts of ``query`` -> the ``actions``."""
    return [ERule(name, identity, group, query=query, actions=actions)]


#: guard: ``dt`` is index or a fixed-width integer dtype
INT_DT = "(IntDt dt)"
#: guard: ``dt`` is index (unbounded: no wrap)
IDX_DT = "(IdxDt dt)"
#: pattern of the Invalid leaf (binds ``di``, ``ai``)
INVALID_LEAF = "(Leaf \"INVALID\" di ai)"

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


# ---- range-based mod/div (the div-mod engine's fast paths, natively) -----------------
# (not subsumed: the mod node stays visible to the computed rules, which may still find
# a cheaper form of the class through it, e.g. (g - 4*(g//2) + 2) % 4 -> (g + 2) % 4)
add(R("mod_in_range", "x%n -> x when 0 <= x < n", G_RANGE_BASED_MOD_DIV, "(Mod dt x n)", "x",
      "(>= (lo x) 0)", "(< (hi x) (lo n))", "(Def n)"))
add(R("mod_in_range_neg", "x%n -> x when -n < x <= 0 (C: the dividend's sign)",
      G_RANGE_BASED_MOD_DIV, "(Mod dt x n)", "x", "(<= (hi x) 0)", "(> (lo n) 0)",
      "(< (- 0 (lo x)) (lo n))", "(Def n)"))

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


NATIVE_RULES: list[ERule] = _rules
_names = [r.name for r in NATIVE_RULES]
assert len(set(_names)) == len(_names), "duplicate native rule names"


def native_groups() -> dict[str, list[ERule]]:
    """group name -> its native rules, in definition order."""
    out: dict[str, list[ERule]] = {}
    for r in NATIVE_RULES:
        out.setdefault(r.group, []).append(r)
    return out
