"""Native egglog rewrites: the e-graph's form of the rules of the language.

Each :class:`ERule` is one egglog rewrite of a rule of the language
(:mod:`rules.lang`, compiled by :mod:`rules.lang_egglog`), named after it (variants add
``~float``, ``~fixed``, an op's name, mirror images ``~1``...; :attr:`ERule.law` is the
name its matches count under). Rules match the constructors of
:mod:`eqsat.engines.egraph.encoding` (``(Add dt a b)``, ``(Cst dt v)``, ...); guards use
``lo``/``hi`` (see :mod:`eqsat.engines.egraph.analyses`), ``Def`` (never Invalid) and the
dtype relations ``IntDt`` (index and fixed-width integers: the session loads such a rule
as its :func:`int_dt_twins`), ``FixDt`` (fixed-width integers only: a rule guarded by it
goes to the rule set ``native_fixed``, which a run schedules only when its input has such
a dtype) and ``DtIn`` (a named dtype set of :data:`rules.lang.DTYPE_SETS`). Computed
values are bound in the query (an i64 overflow there is "no match").

A commutative pattern is written once; :func:`commuted` adds its mirror images.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from eqsat.ir.egglog_text import read, show

__all__ = ["ERule", "commuted", "INT_DT", "FIX_DT", "int_dt_twins"]


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
    #: the rule of the language this one implements (its matches count under that name;
    #: "" = this rule's own name)
    rule: str = ""
    #: the arguments the text names ``$arg0``, ``$arg1``, ... (a float constant, the
    #: Invalid's None): the session puts each in its argument table and writes its key
    args: tuple[Any, ...] = ()
    #: it matches fixed-width integer or float nodes only (not index or bool): the
    #: session loads it with the fixed-width rules (a run of an index input skips them)
    wide: bool = False

    @property
    def law(self) -> str:
        """The name its matches count under (:attr:`rule`, or its own name)."""
        return self.rule or self.name

    def program(self, ruleset: str, key: Any = None) -> str:
        """The egglog command adding this rule to ``ruleset``; ``key(arg)`` gives the
        argument table's key of each of :attr:`args`."""
        if self.lhs:
            when = f" :when ({' '.join(self.when)})" if self.when else ""
            sub = " :subsume" if self.subsume else ""
            text = (f"(rewrite {self.lhs} {self.rhs}{when}{sub} :ruleset {ruleset} "
                    f':name "{self.name}")')
        else:
            text = (f'(rule ({self.query}) ({self.actions}) :ruleset {ruleset} '
                    f':name "{self.name}")')
        return self.fill(text, key)

    def fill(self, text: str, key: Any = None) -> str:
        """``text`` (this rule's program, or one written from its pattern and guards)
        with each ``$arg<i>`` replaced by ``key(args[i])``, the argument table's key."""
        if self.args and _ARG.search(text):
            if key is None:
                raise ValueError(f"rule {self.name}: its arguments need an argument table")
            text = _ARG.sub(lambda m: str(key(self.args[int(m.group(1))])), text)
        return text

    def __repr__(self) -> str:
        return f"ERule({self.name!r}, {self.identity!r}, group={self.group!r})"


_ARG = re.compile(r"\$arg(\d+)")
_SWAP = {"Add", "Mul", "Max", "Min", "Eq", "Ne", "And", "Or", "Xor"}
#: the head of a node of a commutative constructor (of ``_SWAP``) in egglog text
_SWAP_HEAD = re.compile(rf"\(({'|'.join(sorted(_SWAP))}) ")


def _swaps(text: str) -> list[tuple[str, Any]]:
    """Every variant of ``text`` with the operands of commutative binary nodes swapped,
    as ``(text, tree)`` (the first is ``text`` itself)."""

    def variants(t: Any) -> list[Any]:
        if not isinstance(t, list):
            return [t]
        kids = [variants(x) for x in t]
        combos: list[list[Any]] = [[]]
        for ks in kids:
            combos = [c + [k] for c in combos for k in ks]
        out = []
        for c in combos:
            out.append(c)
            if c and c[0] in _SWAP and len(c) == 4:
                out.append([c[0], c[1], c[3], c[2]])
        return out

    seen: set[str] = set()
    res: list[tuple[str, Any]] = []
    for v in variants(read(text)):
        s = show(v)
        if s not in seen:
            seen.add(s)
            res.append((s, v))
    return res


#: egglog primitives whose two arguments commute (a guard or right side that differs
#: only in their order computes the same value)
_PRIM_COMM = {"min", "max", "+", "*"}
_VAR = re.compile(r"[a-z_][A-Za-z0-9_]*")


def _is_var(t: Any) -> bool:
    """A pattern variable: a lower-case symbol that is not a primitive or an operator."""
    return isinstance(t, str) and _VAR.fullmatch(t) is not None and t not in _PRIM_COMM


def _var_order(t: Any, out: list[str]) -> list[str]:
    """The pattern variables of ``t`` in order of first occurrence (heads excluded)."""
    if isinstance(t, list):
        for x in t[1:] if t and isinstance(t[0], str) else t:
            _var_order(x, out)
    elif _is_var(t) and t not in out:
        out.append(t)
    return out


def _rename(t: Any, sigma: dict[str, str]) -> Any:
    """``t`` with the variables ``sigma`` maps renamed (its keys are variables: a token
    equal to one is that variable)."""
    if isinstance(t, list):
        return [_rename(x, sigma) for x in t]
    return sigma.get(t, t)


def _renamed_text(t: Any, sigma: dict[str, str]) -> str:
    """``show(_rename(t, sigma))``, in one walk."""
    if isinstance(t, list):
        return "(" + " ".join([_renamed_text(x, sigma) for x in t]) + ")"
    return sigma.get(t, t)


def _norm(t: Any, ctors: bool = False) -> Any:
    """``t`` with the arguments of commutative primitives in a fixed order; with
    ``ctors``, the operands of commutative constructors (``_SWAP``) too."""
    if not isinstance(t, list):
        return t
    t = [_norm(x, ctors) for x in t]
    if len(t) == 3 and t[0] in _PRIM_COMM:
        t = [t[0], *sorted(t[1:], key=show)]
    elif ctors and len(t) == 4 and t[0] in _SWAP:
        t = [t[0], t[1], *sorted(t[2:], key=show)]
    return t


def _same_rewrite(lhs: str, earlier: str, rhs: str, when: tuple[str, ...]) -> bool:
    """Whether the variant ``lhs`` of a rewrite matches what its variant ``earlier`` does
    and rewrites each match to the same value: the two patterns are equal up to a
    renaming of their variables that leaves the guards unchanged (up to the order of
    the arguments of commutative primitives) and the right side unchanged up to the
    operand order of commutative operators too. E.g. ``(x < c1) & (x < c2) -> x <
    min(c1, c2)``: its mirror image renames ``c1``/``c2``, and ``min`` does not care;
    ``where(c,k1,k2) + where(c,k3,k4) -> where(c, k1+k3, k2+k4)``: the mirror would
    write ``k3+k1``, the same value at the same cost (``commuted`` makes mirror images
    because these operators commute)."""
    return _Sides(rhs, when).same(_Variant(lhs, read(lhs)), _Variant(earlier, read(earlier)))


class _Variant:
    """A variant of a rewrite's pattern: its text, tree, variables in order, and its
    shape (the text with every variable as ``_``: a renaming leaves it as it is)."""

    __slots__ = ("text", "tree", "vars", "shape")

    def __init__(self, text: str, tree: Any):
        self.text, self.tree, self.vars = text, tree, _var_order(tree, [])
        self.shape = _renamed_text(tree, dict.fromkeys(self.vars, "_"))


class _Sides:
    """A rewrite's right side and guards, read once for :func:`_same_rewrite`'s
    comparisons of its pattern variants."""

    def __init__(self, rhs: str, when: tuple[str, ...]):
        self.rhs = read(rhs)
        self.when = [read(w) for w in when]
        self.rhs_norm = show(_norm(self.rhs, True))
        self.guards = sorted(show(_norm(w)) for w in self.when)

    def same(self, a: _Variant, earlier: _Variant) -> bool:
        """Whether the pattern ``a`` rewrites as ``earlier`` does (see _same_rewrite)."""
        if a.shape != earlier.shape or len(a.vars) != len(earlier.vars):
            return False
        sigma = dict(zip(a.vars, earlier.vars, strict=True))
        if _renamed_text(a.tree, sigma) != earlier.text:
            return False
        if show(_norm(_rename(self.rhs, sigma), True)) != self.rhs_norm:
            return False
        return sorted(show(_norm(_rename(w, sigma))) for w in self.when) == self.guards


def commuted(rule: ERule) -> list[ERule]:
    """``rule`` and its mirror images over commutative operands (named ``name``, ``name~1``...).

    A mirror image that matches what an earlier one does and rewrites each match to the
    same result (:func:`_same_rewrite`) is left out: it would only search again."""
    if not rule.lhs or _SWAP_HEAD.search(rule.lhs) is None:
        return [rule]  # (no commutative node: no mirror image)
    variants = _swaps(rule.lhs)
    if len(variants) == 1:
        return [replace(rule, lhs=variants[0][0])]
    sides = _Sides(rule.rhs, rule.when)
    out: list[ERule] = []
    kept: list[_Variant] = []
    for i, (lhs, tree) in enumerate(variants):
        v = _Variant(lhs, tree)
        if any(sides.same(v, k) for k in kept):
            continue
        kept.append(v)
        out.append(replace(rule, name=rule.name if i == 0 else f"{rule.name}~{i}", lhs=lhs))
    return out


#: guard: ``dt`` is index or a fixed-width integer dtype (loaded as two rules:
#: :func:`int_dt_twins`)
INT_DT = "(IntDt dt)"
#: guard: ``dt`` is a fixed-width integer dtype (the rule joins the rule set native_fixed)
FIX_DT = "(FixDt dt)"
_INT_DT_VAR = re.compile(r"\(IntDt (\w+)\)")


def int_dt_twins(rule: ERule) -> tuple[ERule, ERule] | None:
    """A rule guarded by ``IntDt`` (index or a fixed-width integer) as the two rules
    that cover the same e-nodes: the index one, whose guard is the literal
    ``(= v "index")`` on the pattern's column and whose ``dmin``/``dmax`` range checks
    on ``v`` drop out (any i64 fits index; egglog's i64 arithmetic fails the match on
    overflow), and the fixed-width one (``FixDt``, name ``<name>~fixed``) for
    :data:`~eqsat.engines.egraph.engine.FIXED_RULESET`. None for a rule without that guard.

    The relation ``IntDt`` is a table atom, joined in every round and cloned on every
    push/pop; the literal costs nothing, and the fixed twin runs only when the input
    has a fixed-width dtype."""
    text = " ".join(rule.when) if rule.lhs else rule.query
    if not _INT_DT_VAR.search(text):
        return None

    def index(t: str) -> str:
        for v in _INT_DT_VAR.findall(t):
            t = re.sub(rf"\s*\((?:>= \w+ \(dmin {v}\)|<= \w+ \(dmax {v}\))\)", "", t)
            t = t.replace(f"(IntDt {v})", f'(= {v} "index")')
        return t

    def fixed(t: str) -> str:
        return _INT_DT_VAR.sub(r"(FixDt \1)", t)

    name = f"{rule.name}~fixed"
    if rule.lhs:
        return (replace(rule, when=tuple(w for w in map(index, rule.when) if w)),
                replace(rule, name=name, when=tuple(map(fixed, rule.when))))
    return replace(rule, query=index(rule.query)), replace(rule, name=name,
                                                           query=fixed(rule.query))
