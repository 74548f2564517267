"""The div/mod rule family for the ordered baseline (docs/rules.md, seed 003, seed 000 §19).

Every rewrite here is a thin twin of a rule of :mod:`rules.divmod_core`: the UOp
numerator and denominator are read as linear forms (:func:`to_lin`: atoms are
UOps, bounds are ``vmin``/``vmax``) and the core rule builds the result with UOp
builders (:data:`UOP_CTX`). Only the recombination patterns #1-#4 of seed 003
section 1 are plain UPat rules (they also hold for fixed-width integers).

``GROUPS`` holds the three seed 000 groups, each an ordered list of Rules:

- ``advanced_division_dsl_patterns``: nested division, exact division,
  symbolic divisible sums, mod coefficient reduction, ``(a%(k*c))//c``,
  and ``c*(a+b) -> c*a + c*b``;
- ``div_mod_recombine_dsl_patterns``: #1-#5 and the whole-sum recombination;
- ``range_based_mod_div_patterns``: the range-based fast paths, then
  ``fold_divmod_general`` (the 8 rules of tinygrad's, in seed 003's priority order,
  first result winning).

The Lin-based rules only match ``index`` dtype (unbounded integers: the linear
algebra of the core is exact there, not under fixed-width wrapping).

``EGRAPH`` holds the e-graph twins, by the same group names (read by
:func:`eqsat.engines.egraph.rulesets.egraph_groups` and ``rules.list_rulesets()``);
in each group the native egglog rewrites come first, then the computed ones:

- native rules (:class:`rules.native.ERule`, guards over the e-graph's
  ``lo``/``hi``/``Def`` analyses): ``mod_in_range`` (range-based, either sign
  of x), ``recombine_divmod_1``..``_4`` (#1-#4 of seed 003, mirror
  images added), ``nested_idiv``, ``idiv_of_mod_const``,
  ``mod_of_mod_multiple`` (advanced division, index only);
- #5 of seed 003 is the core's ``nested_idiv_offset`` alone (its unions are checked
  against cycles), in both engines;
- computed rules (:class:`eqsat.engines.egraph.computed.PyRule`): every core rule
  (``DIVMOD_RULES``, in the core's order, joined to the group by
  :data:`DIVMOD_GROUP`) applied to the e-classes' linear forms, the basis
  search ``divmod_basis`` and the whole-sum recombinations (``SUM_RULES``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from eqsat.ir.dtype import dtypes
from eqsat.ir.linear import Lin, LinBuilder, lin_bounds
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import PatternMatcher, Rule, UPat, graph_rewrite
from eqsat.ir.uop import UOp, node_cache
from rules.common import may_be_invalid, somewhere_below
from rules.computed import PyRule, divmod_pyrules, sum_pyrules
from rules.divmod_core import (
    ADVANCED,
    DIVMOD_RULES,
    GENERAL,
    RANGE_BASED,
    RECOMBINE,
    SUM_RULES,
    DivisionReading,
    DivModRule,
)
from rules.lang import Law, baseline_groups, egraph_rules, laws_by_group, py, rule

__all__ = ["GROUPS", "EGRAPH", "DIVMOD_GROUP", "LOOP_END_RULES", "UOP_CTX", "UOpCtx", "to_lin",
           "fold_divmod_general_rule", "recombine_prepass", "RECOMBINE_PREPASS"]

_IDX = dtypes.index
# the ops the linear reading tests on every node, as module globals (a member read from
# ``Ops`` goes through EnumType's ``__getattr__`` hook: several times slower)
_ADD, _SUB, _NEG, _MUL, _CONST = Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL, Ops.CONST
_MOD, _IDIV = Ops.MOD, Ops.IDIV
# (each a node_cache: keyed by the node's uid, the entry dropped when the node dies)
_LIN_CACHE: dict[int, Lin] = node_cache()
# linear node -> (atom occurrences, constant leaves, newest atom) of its skeleton
# (_occurrences)
_OCC: dict[int, tuple[int, int, UOp | None]] = node_cache()
# node -> (least, most) atom occurrences of the linear nodes below it (_occurrence_range)
_RANGE: dict[int, tuple[int, int]] = node_cache()
_NO_RANGE = (1 << 62, -1)
# atom -> atom occurrences -> the linear nodes that :meth:`UOpCtx._origin` may reuse
# (atoms occurring, at most one constant leaf) whose newest skeleton atom it is; each
# put here when its _RANGE entry is made, so every such node below a node in _RANGE is
_BY_TOP: dict[int, dict[int, weakref.WeakSet[UOp]]] = node_cache()
# node -> whether a leaf of its linear skeleton is a MOD (_mod_leaf)
_MOD_LEAF: dict[int, bool] = node_cache()
# an index MOD, IDIV or MUL node -> its operands' linear forms (UOpCtx._parts: the rules
# ask for the same node's parts again and again; the forms hold its sources, not the node)
_PARTS: dict[int, tuple[Lin, Lin]] = node_cache()


def _is_idx_const(u: UOp) -> bool:
    return u.op is _CONST and u.dtype is _IDX and type(u.arg) is int


def to_lin(u: UOp) -> Lin:
    """The linear form of an index UOp: ADD/SUB/NEG/MUL-by-constant are flattened,
    every other node is an atom (a UOp)."""
    hit = _LIN_CACHE.get(u.uid)
    if hit is not None:
        return hit
    if _linear_kids(u) is None:
        if _is_idx_const(u):  # (kept: a constant's form holds no node; an atom's holds it)
            lin = _LIN_CACHE[u.uid] = Lin.constant(u.arg)
            return lin
        return Lin._raw({u: 1}, 0)
    lin = _flat_read(u)
    if lin is None:  # (a term may cancel on the way: every node's form, bottom-up)
        for n, _ in _unread(u, _LIN_CACHE, _linear_kids):
            _LIN_CACHE[n.uid] = _combine(n)
        return _LIN_CACHE[u.uid]
    _LIN_CACHE[u.uid] = lin
    return lin


def _flat_read(u: UOp) -> Lin | None:
    """The form of the linear node ``u`` read in one walk of its skeleton, left to right,
    a form read before taken whole; None when that walk may differ from
    :func:`_combine`'s bottom-up reading.

    Bottom-up, each node merges its children's forms: an atom keeps the place where it
    first occurs, unless a merge cancels it (it leaves the map and, met again, goes
    last). When every occurrence of an atom has a coefficient of the same sign, no
    partial sum cancels it, so the form is the walk's: coefficients summed, atoms in
    the order they first occur. None when an atom has both signs or a linear node
    occurs twice (a shared sub-sum: walked once per path). One walk makes no form per
    node: a sum built term by term is read in time linear in its length."""
    terms: dict = {}
    const = 0
    expanded: set[UOp] = set()
    stack: list[tuple[UOp, int]] = [(u, 1)]
    while stack:
        n, k = stack.pop()
        hit = _LIN_CACHE.get(n.uid)
        if hit is not None:
            if not terms and k == 1:
                terms = dict(hit._map)
            elif not _merge(terms, hit._map.items(), k):
                return None
            const += k * hit.const
            continue
        kids = _linear_kids(n)
        if kids is None:
            if _is_idx_const(n):
                const += k * n.arg
            elif not _merge(terms, ((n, 1),), k):
                return None
            continue
        if n in expanded:
            return None
        expanded.add(n)
        op = n.op
        if op is _ADD or op is _SUB:
            stack.append((n.src[1], k if op is _ADD else -k))
            stack.append((n.src[0], k))
        elif op is _NEG:
            stack.append((n.src[0], -k))
        else:  # a product by a constant (by 0: nothing of it is left)
            m = n.src[1].arg if _is_idx_const(n.src[1]) else n.src[0].arg
            if m:
                stack.append((kids[0], k * m))
    return Lin._raw(terms, const)


def _merge(terms: dict, pairs: Iterable[tuple[UOp, int]], k: int) -> bool:
    """Add ``k*c*a`` for each ``(a, c)`` of ``pairs`` to ``terms``; False when an atom
    meets a coefficient of the other sign (:func:`_flat_read`)."""
    for a, c in pairs:
        c *= k
        prev = terms.get(a)
        if prev is None:
            terms[a] = c
        elif (prev > 0) != (c > 0):
            return False
        else:
            terms[a] = prev + c
    return True


def _all_srcs(n: UOp) -> tuple[UOp, ...]:
    return n.src


def _unread(u: UOp, cache: dict[int, Any],
            kids: Callable[[UOp], tuple[UOp, ...] | None] = _all_srcs
            ) -> Iterator[tuple[UOp, tuple[UOp, ...]]]:
    """The nodes below ``u`` through ``kids`` (a node's children to enter; None: a leaf,
    not given) that ``cache`` (a node cache) lacks, children first, each with its
    children; iterative, deep graphs must not recurse. The caller puts each node in
    ``cache`` before the next."""
    stack: list[tuple[UOp, bool]] = [(u, False)]
    while stack:
        n, done = stack.pop()
        if n.uid in cache:
            continue
        ks = kids(n)
        assert ks is not None  # (only inner nodes are pushed)
        if not done:
            stack.append((n, True))
            for k in ks:  # (a loop, not a generator: most nodes have two children)
                if k.uid not in cache and kids(k) is not None:
                    stack.append((k, False))
            continue
        yield n, ks


def _occ_here(kids: tuple[UOp, ...]) -> tuple[int, int, UOp | None]:
    """(atom occurrences, constant leaves, the atom made last (largest ``uid``)) of a
    linear node's skeleton from its linear children's (known: :data:`_OCC`)."""
    occ = consts = 0
    top = None
    for k in kids:
        if _linear_kids(k) is not None:
            a, c, t = _OCC[k.uid]
            occ, consts = occ + a, consts + c
        elif _is_idx_const(k):
            consts += 1
            continue
        else:
            occ, t = occ + 1, k
        if t is not None and (top is None or t.uid > top.uid):
            top = t
    return occ, consts, top


def _occurrences(u: UOp) -> tuple[int, int, UOp | None]:
    """(atom occurrences, constant leaves, newest atom) of the skeleton of the linear
    node ``u``, read from the structure alone (no linear form made; cached in
    :data:`_OCC`)."""
    hit = _OCC.get(u.uid)
    if hit is not None:
        return hit
    for n, kids in _unread(u, _OCC, _linear_kids):
        _OCC[n.uid] = _occ_here(kids)
    return _OCC[u.uid]


def _occurrence_range(u: UOp) -> tuple[int, int]:
    """``(least, most)`` atom occurrences (:func:`_occurrences`) of the linear nodes of
    ``u`` with at most one constant leaf (``lo > hi`` when there is none): the only
    nodes of ``u`` a form of ``m`` terms can be read from are there when ``lo <= m <=
    hi`` (:meth:`UOpCtx._origin`). Cached in :data:`_RANGE`."""
    hit = _RANGE.get(u.uid)
    if hit is not None:
        return hit
    for n, srcs in _unread(u, _RANGE):
        lo, hi = _NO_RANGE
        if _linear_kids(n) is not None:
            occ = _occurrences(n)
            if occ[1] <= 1:
                lo = hi = occ[0]
                if occ[2] is not None:
                    by_occ = _BY_TOP.setdefault(occ[2].uid, {})
                    nodes = by_occ.get(occ[0])
                    if nodes is None:  # (a WeakSet made only when its key is new)
                        nodes = by_occ[occ[0]] = weakref.WeakSet()
                    nodes.add(n)
        for s in srcs:
            slo, shi = _RANGE[s.uid]
            if slo < lo:
                lo = slo
            if shi > hi:
                hi = shi
        _RANGE[n.uid] = (lo, hi)
    return _RANGE[u.uid]


def _mod_leaf(u: UOp) -> bool:
    """Whether a leaf of ``u``'s linear skeleton is a MOD: False means no atom of
    :func:`to_lin` ``(u)`` is one (its atoms are leaves that did not cancel), read
    without making the form (cached: one lookup per node, the skeleton walked once)."""
    return somewhere_below(u, _MOD_LEAF, _mod_atom, lambda n: False)


def _mod_atom(n: UOp) -> bool | None:
    """A leaf of a linear skeleton (an atom or a constant) is a MOD or not; None for a
    linear node (look below)."""
    return None if _linear_kids(n) is not None else n.op is _MOD


def _linear_kids(n: UOp) -> tuple[UOp, ...] | None:
    """The children to flatten when ``n`` is a linear node, else None (an atom)."""
    if n.dtype is not _IDX:
        return None
    op = n.op
    if op is _ADD or op is _SUB or op is _NEG:
        return n.src
    if op is _MUL:
        if _is_idx_const(n.src[1]):
            return (n.src[0],)
        if _is_idx_const(n.src[0]):
            return (n.src[1],)
    return None


def _leaf(k: UOp) -> Lin:
    hit = _LIN_CACHE.get(k.uid)
    if hit is not None:
        return hit
    return Lin.constant(k.arg) if _is_idx_const(k) else Lin.atom(k)


def _combine(n: UOp) -> Lin:
    if n.op is Ops.ADD:
        return _leaf(n.src[0]) + _leaf(n.src[1])
    if n.op is Ops.SUB:
        return _leaf(n.src[0]) - _leaf(n.src[1])
    if n.op is Ops.NEG:
        return -_leaf(n.src[0])
    if _is_idx_const(n.src[1]):
        return _leaf(n.src[0]) * n.src[1].arg
    return _leaf(n.src[1]) * n.src[0].arg


class UOpCtx(LinBuilder[UOp]):
    """The baseline's :class:`rules.divmod_core.Ctx`: atoms are index UOps.

    ``scope``: the node a rule is rewriting. Building a linear form that a node
    of ``scope`` already has returns that node (the rule's output keeps the
    input's own sub-sums, e.g. a factored ``(a + b)*4``); a node with the same
    form elsewhere -- alive in some other graph -- is not used, so the output
    depends on the input alone, not on what else the process holds. Without a
    scope (:data:`UOP_CTX`) every form is built afresh.
    """

    #: the ordered matcher keeps the first rewrite of a node (rules.divmod_core reads it:
    #: a constant split that costs an operation is not made)
    greedy = True

    def __init__(self, scope: UOp | None = None):
        self.scope = scope

    def bounds(self, a: UOp) -> tuple[Any, Any]:
        return a.vmin, a.vmax

    def _parts(self, a: UOp, op: Ops) -> list[tuple[Lin, Lin]]:
        if a.op is op and a.dtype is _IDX:
            hit = _PARTS.get(a.uid)
            if hit is None:
                hit = _PARTS[a.uid] = (to_lin(a.src[0]), to_lin(a.src[1]))
            return [hit]
        return []

    def mod_parts(self, a: UOp) -> list[tuple[Lin, Lin]]:
        return self._parts(a, _MOD)

    def idiv_parts(self, a: UOp) -> list[tuple[Lin, Lin]]:
        return self._parts(a, _IDIV)

    def mul_parts(self, a: UOp) -> list[tuple[Lin, Lin]]:
        return self._parts(a, _MUL)

    def where_parts(self, a: UOp) -> list[tuple[UOp, Lin, Lin]]:
        if a.op is Ops.WHERE and a.dtype is _IDX:
            return [(a.src[0], to_lin(a.src[1]), to_lin(a.src[2]))]
        return []

    def may_be_invalid(self, a: UOp) -> bool:
        return may_be_invalid(a)

    def invalid_free(self, xs: tuple[Lin, ...]) -> bool:
        """No atom of the forms ``xs`` may be Invalid. The forms a rule reads are made of
        nodes below ``scope`` (its operands' atoms and their parts), reached through no
        LOAD: when nothing below ``scope`` may be Invalid, none of them may (one cached
        lookup, not one per atom)."""
        if self.scope is not None and not may_be_invalid(self.scope):
            return True
        return not any(may_be_invalid(a) for x in xs for _, a in x.terms)

    def atom(self, a: UOp) -> UOp:
        return a

    def const(self, v: int) -> UOp:
        return UOp.const(_IDX, v)

    def add(self, a: UOp, b: UOp) -> UOp:
        return a + b

    def sub(self, a: UOp, b: UOp) -> UOp:
        return a - b

    def mul(self, a: UOp, c: int) -> UOp:
        return a if c == 1 else a * UOp.const(_IDX, c)

    def neg(self, a: UOp) -> UOp:
        return -a

    def idiv(self, a: UOp, b: UOp) -> UOp:
        return a // b

    def mod(self, a: UOp, b: UOp) -> UOp:
        return a % b

    def where(self, c: UOp, t: UOp, f: UOp) -> UOp:
        return UOp(Ops.WHERE, _IDX, (c, t, f))

    def _origin(self, x: Lin) -> UOp | None:
        """The first node of ``scope`` (children first) read as exactly the form ``x``,
        nothing cancelled or merged: read from the scope alone, so which node is reused
        does not depend on the nodes the process read before. Only a node whose
        skeleton has as many atom occurrences as ``x`` has terms is read as a form (the
        others cannot be ``x``), and the walk (``toposort``'s) does not enter a node
        below which none has that many (:func:`_occurrence_range`): the nodes it passes
        over cannot be ``x``, so the first one it finds is the first in ``toposort``.

        A node read as ``x`` has ``x``'s atoms as its skeleton's leaves, so it is one of
        the nodes :data:`_BY_TOP` holds under the newest of them: when none of those is
        ``x`` there is nothing to find, and the walk, when one is, does not enter a node
        made before all of them (none is below it). On a chain most forms asked for are
        in no node: a lookup, not a walk of every level below."""
        m = len(x.terms)
        oldest = -1  # (the uid of the oldest node read as x: none made before is entered)
        if m:
            top = max((a for _, a in x.terms), key=lambda a: a.uid)
            _occurrence_range(self.scope)  # (every node below is in _BY_TOP)
            found = [n.uid for n in _BY_TOP.get(top.uid, {}).get(m, ()) if to_lin(n) == x]
            if not found:
                return None
            oldest = min(found)
        seen: set[UOp] = set()  # (nodes hash by identity, in C)
        stack: list[tuple[UOp, bool]] = [(self.scope, False)]  # type: ignore[list-item]
        while stack:
            n, done = stack.pop()
            if done:
                if _linear_kids(n) is not None:
                    occ = _occurrences(n)
                    if occ[0] == m and occ[1] <= 1 and to_lin(n) == x:
                        return n
                continue
            if n in seen:
                continue
            seen.add(n)
            if n.uid < oldest:
                continue
            lo, hi = _occurrence_range(n)
            if not lo <= m <= hi:
                continue
            stack.append((n, True))
            for s in reversed(n.src):
                if s not in seen:
                    stack.append((s, False))
        return None

    def lin(self, x: Lin) -> UOp:
        hit = None if self.scope is None else self._origin(x)
        return super().lin(x) if hit is None else hit

    def __repr__(self) -> str:
        return "UOpCtx()"


UOP_CTX = UOpCtx()
_OPNAME = {Ops.IDIV: "idiv", Ops.MOD: "mod"}
_XY = (UPat.var("x"), UPat.var("y"))


def _op_name(d: UOp) -> str:
    """The core's name of ``d``'s op, an IDIV or a MOD (:data:`_OPNAME` without hashing
    the op)."""
    return "mod" if d.op is _MOD else "idiv"


def _divisor_ok(y: UOp) -> bool:
    """An index divisor whose range excludes 0."""
    return y.vmin > 0 or y.vmax < 0


#: an index division node (by uid) -> the core's reading of it, shared by every core rule
#: the ordered matcher tries on it (about twenty), or :data:`_REFUSED` where
#: ``DivModRule.out`` lets no rule fire (the divisor's range holds 0, an atom may be
#: Invalid)
_READING: dict[int, Any] = node_cache()
_REFUSED: Any = object()
#: a core rule as :func:`_first_out` runs it: its ops, its core, and the core's
#: sign-normalized body (``_normalized``'s ``raw``, else None)
_Step = tuple[tuple[str, ...], Callable[..., Any], Callable[..., Any] | None]


def _steps(rules: Iterable[DivModRule]) -> tuple[_Step, ...]:
    return tuple((r.ops, r.core, getattr(r.core, "raw", None)) for r in rules)


def _reading(d: UOp) -> Any:
    """The division ``d`` read by the core for all its rules, put in :data:`_READING`:
    what ``DivModRule.out`` checks before a core runs, made once."""
    x, y = to_lin(d.src[0]), to_lin(d.src[1])
    ylo, yhi = lin_bounds(y, UOP_CTX)
    if ylo <= 0 <= yhi or not UOpCtx(d).invalid_free((x, y)):
        hit = _REFUSED
    else:
        hit = DivisionReading(_op_name(d), x, y)
    _READING[d.uid] = hit
    return hit


def _outcomes(groups: Iterable[tuple[tuple[_Step, ...], Any]], d: UOp
              ) -> Iterator[tuple[UOp | None, Any]]:
    """Each of ``groups`` (a rule's steps and the rule) that has an outcome on ``d``, in
    order: the term of its first step that rewrites ``d`` (each step's
    ``DivModRule.fn`` on ``d``'s forms in ``d``'s scope; the term may be None or ``d``
    itself) and its rule. The checks every rule repeats are read once
    (:func:`_reading`), and one context serves every group."""
    r = _READING.get(d.uid) or _reading(d)
    if r is _REFUSED:
        return
    op, ctx = r.op, UOpCtx(d)
    for steps, owner in groups:
        for ops, core, raw in steps:
            if op in ops:
                out = r.out(core, raw, ctx)
                if out is not None:
                    yield out.emit(ctx), owner
                    break


def _first_out(steps: tuple[_Step, ...], d: UOp) -> UOp | None:
    """The term of the first of ``steps`` that rewrites ``d``, or None (a rule's build:
    :func:`_outcomes` of its steps)."""
    for out, _ in _outcomes(((steps, None),), d):
        return out
    return None


#: the index dtype as a pattern's set (the twins' pattern: ``dtype=_IDX``)
_IDX_SET = frozenset([_IDX])


def _joint_twins(run: tuple[Rule, ...]) -> Callable[[UOp], tuple[UOp, Rule] | None]:
    """The core rules of ``run`` (back to back in a candidate list of the ordered
    matcher, ``Rule.joint``) tried as one: their pattern's checks and guard, the same
    for each (an index ``x OP y``, the op the list's, whose divisor's range excludes 0),
    once; then each rule's steps in turn, the first rule whose term is a rewrite (not
    None, not the node) winning, as the rules one by one would."""
    groups = tuple((_STEPS[r], r) for r in run)

    def apply(d: UOp) -> tuple[UOp, Rule] | None:
        dt, src = d.dtype, d.src
        if dt is not _IDX and dt not in _IDX_SET or len(src) != 2 or not _divisor_ok(src[1]):
            return None
        for out, twin in _outcomes(groups, d):
            if out is not None and out is not d:
                return out, twin
        return None
    return apply


#: a core rule's baseline twin (and ``fold_divmod_general``) -> its steps
#: (:func:`_joint_twins`)
_STEPS: dict[Rule, tuple[_Step, ...]] = {}


def _twin(rule: DivModRule, group: str) -> Rule:
    """The baseline Rule of a core rule: match ``x OP y`` on index, read Lins, apply."""
    ops = [o for o, n in _OPNAME.items() if n in rule.ops]
    steps = _steps([rule])

    def build(d: UOp) -> UOp | None:
        return _first_out(steps, d)

    twin = Rule(rule.name, rule.identity, UPat(ops, dtype=_IDX, src=_XY, name="d"),
                build=build, guard=_divisor_ok, group=group, joint=_joint_twins)
    _STEPS[twin] = steps
    return twin


_GENERAL = _steps(GENERAL)


def _fold_general(d: UOp) -> UOp | None:
    """``rules.divmod_core.fold_divmod_general`` on ``d`` (its eight rules in order, the
    first result winning)."""
    return _first_out(_GENERAL, d)


fold_divmod_general_rule = Rule(
    "fold_divmod_general",
    "x OP y -> first of cancel_divmod, remove_nested_mod, fold_binary_numerator, "
    "fold_divmod_congruence, gcd_with_remainder, divide_by_gcd, factor_remainder, "
    "nest_div_by_smallest_factor",
    UPat((Ops.IDIV, Ops.MOD), dtype=_IDX, src=_XY, name="d"),
    build=_fold_general, guard=_divisor_ok, group="range_based_mod_div_patterns",
    joint=_joint_twins)
_STEPS[fold_divmod_general_rule] = _GENERAL


# ---------------------------------------------------------------------------
# the three seed groups
G_ADV = "advanced_division_dsl_patterns"
G_REC = "div_mod_recombine_dsl_patterns"
G_RANGE = "range_based_mod_div_patterns"
#: the e-graph's divisions of two quotients as selects (the narrow e-graph loads what they
#: make: eqsat.engines.egraph.rulesets.SELECTS)
G_SELECT = "division_select"
#: the core's group of a DivModRule -> the seed group its e-graph twin joins
DIVMOD_GROUP: dict[str, str] = {"range_based": G_RANGE, "fold_divmod_general": G_RANGE,
                                "advanced_division": G_ADV, "div_mod_recombine": G_REC}

_CORE = ("the div/mod core (rules.divmod_core), over linear forms: the e-graph runs the same "
         "function on its e-classes' forms (a computed rule of the same name)")
# #1-#4 of seed 003 are written for fixed-width integers only: an index sum is a linear
# form, whose whole-sum rules (divmod_core.SUM_RULES: recombine_divmod_sum in the ordered
# matcher, recombine_divmod, recombine_mod_chain and recombine_quotient_sum in the e-graph)
# find them between any two of its terms, whatever their grouping; the binary forms on index
# sums cost about a quarter of the egglog time for the same outputs (docs/perf.md)
_IDX_ONLY = "e-graph only: the ordered matcher's div/mod core does this ({})"
_SELECT = ("e-graph only: tinygrad keeps the division; the ordered matcher's result is the "
           "reference the e-graph is held to")
_SIGNS = ("e-graph only: the div/mod core makes signs positive inside each of its rules "
          "(normalize_signs); as rewrites of their own they would only add negations to the "
          "ordered matcher's result")


#: why a rule whose left side is a rare shape of several ops is matched from Python in the
#: e-graph: as native egglog rules it would join its atoms (in every operand order) in
#: every round (docs/perf.md, issue 31)
_RARE = ("a rare shape of several ops: matched from Python on the e-nodes the pass visits, "
         "not joined natively in every round")


def _bucket_ladder(op: str, n: int) -> str:
    """The rule text of ``x // k`` (``op`` idiv) or ``x % k`` (mod) as a ladder of
    selects over the ``n`` values ``q, q+1, ..., q+n-1`` its quotient takes (``q =
    vmin(x) // k``): bucket ``i`` is ``x < (q + i + 1) * k``, where the quotient is ``q
    + i`` and the remainder ``x - (q + i) * k``; ``op`` ``mod_offset``: the remainder as
    ``x`` minus a ladder of the multiples ``(q + i) * k`` (``x`` once, not in each rung)."""
    q = "vmin(x) // k"

    def value(i: int) -> str:
        if op == "idiv":
            return q if i == 0 else f"{q} + {i}"
        if op == "mod_offset":
            return f"{q} * k" if i == 0 else f"({q} + {i}) * k"
        return f"x + -({q} * k)" if i == 0 else f"x + -(({q} + {i}) * k)"

    expr = value(n - 1)
    for i in range(n - 2, -1, -1):
        expr = f"where(x < ({q} + {i + 1}) * k, {value(i)}, {expr})"
    if op == "mod_offset":
        return f"x % k -> x - {expr}"
    return f"{'x // k' if op == 'idiv' else 'x % k'} -> {expr}"


def _ladder_rule(name: str, op: str, n: int) -> Law:
    """The e-graph's rule ``name``: ``x // k`` (``op`` idiv) or ``x % k`` (mod) as a
    ladder of ``n`` buckets (:func:`_bucket_ladder`), when the dividend is a
    non-negative index and its quotient by a positive ``k`` takes exactly ``n`` values."""
    return rule(name, _bucket_ladder(op, n), "is_index(x) and k > 0 and vmin(x) >= 0 and "
                f"vmax(x) // k == vmin(x) // k + {n - 1}", group=G_RANGE,
                egraph_group=G_SELECT, baseline_reason=_SELECT)


#: the guard of the quotient below a multiple (idiv_quotient_below, mod_quotient_below):
#: x = a*c1 + b >= 0 (a, b >= 0, c1, k > 0); k no power of two (it divides no 2**62);
#: x // k takes more than three values; floordiv(a*d + b, k), d = c1%k - k, at most three
#: (both floors read after adding k*(vmax(a) + 1), which makes a*d + b positive)
_BELOW = ("is_index(a) and c1 > 0 and k > 0 and c1 % k != 0 and 4611686018427387904 % k != 0 "
          "and vmin(a) >= 0 and vmin(b) >= 0 "
          "and (c1 * vmax(a) + vmax(b)) // k - (c1 * vmin(a) + vmin(b)) // k > 2 "
          "and ((c1 % k - k) * vmin(a) + vmax(b) + k * vmax(a) + k) // k "
          "- ((c1 % k) * vmax(a) + vmin(b) + k) // k <= 2")


def _below_rule(name: str, text: str) -> Law:
    """The e-graph's rule ``name``: a division whose coefficient sits just below a multiple
    of the divisor, as a quotient of a few values beside a multiple of ``a``."""
    return rule(name, text, _BELOW, group=G_RANGE,
                baseline_reason="e-graph only, costlier by itself: the floor division of a "
                "few values becomes a ladder of selects there (floordiv_shift_to_idiv and "
                "the bucket rules)")


def _below_end(r: UOp, n: UOp) -> bool:
    """``r`` is a loop index whose END is ``n`` itself, never 0: ``0 <= r < n``."""
    return r.src[0] is n and n.vmin > 0 and r.dtype is _IDX


_LOOP = (Ops.RANGE, Ops.SPECIAL)
#: r // END and r % END for a loop index r, read against its END symbolically
_ENDS = ("a loop index r and its END as one class: matched from Python (the language has "
         "no loop index)")
LOOP_END_RULES = [
    Rule("idiv_loop_end", "r // n -> 0 when r is a range (or special) ending at n (0 <= r < n)",
         UPat(Ops.IDIV, src=(UPat(_LOOP, name="r"), UPat.var("n"))),
         build=lambda r, n: UOp.const(r.dtype, 0), guard=_below_end, group=G_RANGE),
    Rule("mod_loop_end", "r % n -> r when r is a range (or special) ending at n (0 <= r < n)",
         UPat(Ops.MOD, src=(UPat(_LOOP, name="r"), UPat.var("n"))),
         build=lambda r, n: r, guard=_below_end, group=G_RANGE),
]


def _distribute(c: UOp, s: UOp) -> UOp:
    a, b = s.src
    return a * c + b * c if s.op is Ops.ADD else a * c - b * c


def _has_mod_term(s: UOp) -> bool:
    """A term of the sum ``s`` is a MOD (the whole-sum recombinations need one)."""
    return _mod_leaf(s) and any(a.op is _MOD for _, a in to_lin(s).terms)


def _recombine_sum(s: UOp) -> UOp | None:
    lin = to_lin(s)
    ctx = UOpCtx(s)
    for r in SUM_RULES:
        out = r.fn(lin, ctx)
        if out is not None:
            return out
    return None


LAWS = [
    # advanced_division_dsl_patterns: nested division, the core's rules, then
    # c*(a+b) -> c*a + c*b
    # truncation nests for divisors of either sign (both sides are sign(a*b*c) *
    # (|a| // |b*c|)), and both are undefined where a divisor is 0: constant divisors
    # multiplied when the rule fires, an inner divisor of more than one value as a product
    rule("nested_idiv", "(a // c1) // c2 -> a // (c1 * c2)", "is_index(a)", group=G_ADV),
    rule("nested_idiv_symbolic", "(a // b) // c -> a // (b * c)",
         "is_index(a) and never_invalid(b) and never_invalid(c) and vmin(b) < vmax(b)",
         group=G_ADV),
    *(py(_twin(r, G_ADV), "computed", _CORE) for r in ADVANCED),
    rule("distribute_const_mul", "k * op(a, b) -> op(a * k, b * k)", "is_index(a)",
         ops=(Ops.ADD, Ops.SUB), group=G_ADV,
         egraph_absent="an index sum is read as a linear form (canonical_sum and every "
                       "computed rule): k*(a+b) is k*a + k*b there already"),
    rule("idiv_of_mod_const", "(a % c1) // c2 -> (a // c2) % (c1 // c2)",
         "is_index(a) and c2 > 0 and c1 > c2 and c1 % c2 == 0", group=G_ADV,
         baseline_reason=_IDX_ONLY.format("idiv_of_mod")),
    rule("mod_of_mod_multiple", "(a % c1) % c2 -> a % c2",
         "is_index(a) and c2 != 0 and c1 != 0 and c1 % c2 == 0", group=G_ADV,
         baseline_reason=_IDX_ONLY.format("remove_nested_mod")),
    rule("idiv_mul_cancel_pair", "((a * b) * c) // (a * c) -> b",
         "is_index(b) and nonzero(a) and nonzero(c)", group=G_ADV, native=_RARE,
         note="exact: a*c divides a*b*c; index only (no wrap)"),
    # div_mod_recombine_dsl_patterns (docs/rules.md, seed 003 §1): #1-#4, the core's #5, the sums
    rule("recombine_divmod_1", "x % n + (x // n) * n -> x", "is_fixed(x) and nonzero(n)",
         group=G_REC, note="n never 0: x % 0 is never folded into a value"),
    rule("recombine_divmod_2", "((x // c1) % c2) + (x // c3) * c2 -> x // c1",
         "is_fixed(x) and c1 > 0 and c2 > 0 and c1 * c2 == c3", group=G_REC,
         note="positive divisors: INT_MIN // -1 wraps"),
    rule("recombine_divmod_3", "(x % c1) * c2 + (x // c1) * c3 -> x * c2",
         "is_fixed(x) and c1 != 0 and c1 * c2 == c3", group=G_REC),
    rule("recombine_divmod_4", "(y + x % n) + (x // n) * n -> y + x", "is_fixed(x) and nonzero(n)",
         group=G_REC),
    rule("recombine_divmod_4_rev", "(y + (x // n) * n) + x % n -> y + x",
         "is_fixed(x) and nonzero(n)", group=G_REC,
         note="Morok's second order of #4's terms"),
    rule("recombine_divmod_3_chain", "(y + (x % c1) * c2) + (x // c1) * c3 -> y + x * c2",
         "is_fixed(x) and c1 != 0 and c1 * c2 == c3", group=G_REC,
         note="#3 with a third term (Morok)"),
    rule("recombine_divmod_3_chain_rev", "(y + (x // c1) * c3) + (x % c1) * c2 -> y + x * c2",
         "is_fixed(x) and c1 != 0 and c1 * c2 == c3", group=G_REC),
    rule("recombine_quotient", "(x // c1 + c2) % c3 + ((x + c4) // c5) * c3 -> x // c1 + c2",
         "is_index(x) and c1 > 0 and c3 > 0 and c4 == c1 * c2 and c5 == c1 * c3 and "
         "vmin(x) >= 0 and vmin(x) + c4 >= 0", group=G_REC,
         note="(x + c1*c2) // (c1*c3) is (x//c1 + c2) // c3 when x and x + c1*c2 are "
         "non-negative: #1 over y = x//c1 + c2",
         native=_RARE),
    # c1 within x's span: where (x + c1*c2) // (c1*c3) equals x // c1 (two values), the
    # split would write that class over c1*c3, c1*c3*c3, ... without end; c1 grows by c3
    # a step and the span does not (c1*c3 would also refuse the first split of a
    # two-valued x // c1, which often helps)
    rule("mod_quotient_split", "(x // c1 + c2) % c3 -> (x // c1 + c2) - "
         "((x + c1 * c2) // (c1 * c3)) * c3",
         "is_index(x) and c1 > 0 and c3 > 0 and vmin(x) >= 0 and vmin(x) + c1 * c2 >= 0 "
         "and c1 <= vmax(x) - vmin(x)",
         group=G_REC, native=_RARE,
         baseline_reason="e-graph only, costlier: y % c3 as y - (y // c3)*c3 with y // c3 "
         "written over x, where a sum's (x + c1*c2) // (c1*c3) term cancels it "
         "(recombine_quotient in the ordered matcher)"),
    *(py(_twin(r, G_REC), "computed", _CORE) for r in RECOMBINE),
    py(Rule("recombine_divmod_sum", "; ".join(r.identity for r in SUM_RULES),
            UPat(Ops.ADD, dtype=_IDX, name="s"), build=_recombine_sum,
            guard=_has_mod_term, group=G_REC),
       "absent", "the e-graph runs each whole-sum rule on its own (recombine_divmod, "
       "recombine_mod_chain, recombine_quotient_sum) over every index sum class"),
    # range_based_mod_div_patterns (docs/rules.md, seed 003 §2) + fold_divmod_general (§3)
    rule("mod_in_range", "x % n -> x",
         "(vmin(n) > 0 and -vmin(n) < vmin(x) and vmax(x) < vmin(n)) or "
         "(vmax(n) < 0 and vmax(n) < vmin(x) and vmax(x) < -vmax(n))", group=G_RANGE,
         note="|x| < |n| (C: the remainder takes the dividend's sign, so it is x itself); "
         "the mod e-node stays visible to the computed rules"),
    # negative operands made positive (Morok, tinygrad's divandmod): the core does it
    # inside each rule; natively they give the e-graph's other rules the positive form
    rule("idiv_neg_divisor", "x // y -> -(x // -y)", "is_index(x) and vmax(y) < 0",
         group=G_RANGE, baseline_reason=_SIGNS),
    rule("mod_neg_divisor", "x % y -> x % -y", "is_index(x) and vmax(y) < 0", group=G_RANGE,
         baseline_reason=_SIGNS),
    rule("idiv_nonpos_dividend", "x // y -> -((-x) // y)",
         "is_index(x) and vmax(x) <= 0 and vmin(x) < 0", group=G_RANGE,
         baseline_reason=_SIGNS),
    rule("mod_nonpos_dividend", "x % y -> -((-x) % y)",
         "is_index(x) and vmax(x) <= 0 and vmin(x) < 0", group=G_RANGE,
         baseline_reason=_SIGNS),
    # x % k -> x - (x // k) * k when k != 0 and x // k is computed anyway (C: the quotient
    # truncates, the remainder is what it leaves): one division for both
    rule("mod_as_remainder", "x % k -> x - (x // k) * k", "is_index(x) and k != 0",
         shares="x // k", group=G_RANGE, baseline_reason="e-graph only, costlier by "
         "itself: it pays where the graph computes x // k anyway (the extraction shares it)"),
    # a quotient of two or three values is a ladder of comparisons: a ladder of n buckets
    # is n-1 compares and selects, where a division costs tens of cycles and a constant
    # divisor's multiply and shift (lowering.fastdiv) about four; past three buckets a
    # ladder is no cheaper than that on a CPU, whatever a cost model's price
    # x // k -> where(x < (q+1)*k, q, q+1), q = vmin(x)//k, when x // k takes two values
    _ladder_rule("idiv_two_buckets", "idiv", 2),
    # x % k -> where(x < (q+1)*k, x - q*k, x - (q+1)*k), likewise
    _ladder_rule("mod_two_buckets", "mod", 2),
    _ladder_rule("mod_two_buckets_offset", "mod_offset", 2),
    # x // k -> where(x < (q+1)*k, q, where(x < (q+2)*k, q+1, q+2)), three values
    _ladder_rule("idiv_three_buckets", "idiv", 3),
    # x % k -> where(x < (q+1)*k, x - q*k, where(x < (q+2)*k, x - (q+1)*k, x - (q+2)*k))
    _ladder_rule("mod_three_buckets", "mod", 3),
    _ladder_rule("mod_three_buckets_offset", "mod_offset", 3),
    # a coefficient just below a multiple of k: c1 = k*m + d with m = c1//k + 1, d = c1%k - k
    # in (-k, 0), so x = a*c1 + b = k*(a*m) + (a*d + b), and x >= 0 gives x // k = a*m +
    # floordiv(a*d + b, k) and x % k = floormod(a*d + b, k) (floor: exact for any sign of
    # a*d + b); taken when the direct quotient takes more than three values and the floor
    # one at most three (a ladder of selects then: floordiv_shift_to_idiv and the bucket
    # rules), and k is no power of two (that division is the lowering's one shift or mask)
    # (5*r0 + r1) // 6 -> r0 + floordiv(r1 - r0, 6), r0 in [0, 11], r1 in [0, 4]
    _below_rule("idiv_quotient_below",
                "(a * c1 + b) // k -> a * (c1 // k + 1) + floordiv(a * (c1 % k - k) + b, k)"),
    # (5*r0 + r1) % 6 -> floormod(r1 - r0, 6), likewise
    _below_rule("mod_quotient_below", "(a * c1 + b) % k -> floormod(a * (c1 % k - k) + b, k)"),
    *(py(r, "ematch", _ENDS) for r in LOOP_END_RULES),
    *(py(_twin(r, G_RANGE), "computed", _CORE) for r in RANGE_BASED),
    py(fold_divmod_general_rule, "absent", "the e-graph runs each of its eight rules on its "
       "own (cancel_divmod, ..., nest_div_by_smallest_factor): every result is kept"),
]

GROUPS = baseline_groups(LAWS)

# ---------------------------------------------------------------------------
# recombination before anything else
RECOMBINE_PREPASS = PatternMatcher(GROUPS[G_REC], "divmod_recombine_prepass")


def recombine_prepass(root: UOp, limit: int = 1000) -> UOp:
    """Recombine ``x%n + (x//n)*n``-shaped sums while their divisions are untouched.

    ``graph_rewrite`` is bottom-up: by the time it reaches a sum, the sum's
    ``x//n`` and ``x%n`` have already been simplified (into forms the recombination
    no longer recognizes). tinygrad's rewriter visits a node before its children;
    running only the recombination rules first gives the same chance.
    """
    return graph_rewrite(root, RECOMBINE_PREPASS, limit=limit)



# ---- e-graph rules ---------------------------------------------------------------------------
# the rules of the language natively (each group's natives first), then every rule of the
# div/mod core (rules.divmod_core) over the e-classes' linear forms, with the core rule's own
# name and identity, in the core's order (RANGE_BASED, fold_divmod_general's eight, ADVANCED,
# RECOMBINE), the basis search and the whole-sum recombinations (SUM_RULES)
EGRAPH = laws_by_group(egraph_rules(LAWS) + [
    *(replace(r, group=DIVMOD_GROUP[r.group]) for r in divmod_pyrules(DIVMOD_RULES)),
    PyRule("divmod_basis", "sum of x//n, x%n terms -> the same sum in a cheaper basis through "
           "x == n*(x//n) + x%n (e.g. 30*(r//30) + r%10 - 10*((r//10)%3) -> r - 20*((r//10)%3))",
           G_REC, "basis"),
    *sum_pyrules(SUM_RULES, G_REC)])
