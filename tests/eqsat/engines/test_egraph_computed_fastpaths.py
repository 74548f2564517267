"""The computed pass's fast paths give what the plain computations give.

- ``divmod_rewrites`` (the div/mod rules with ``DivModRule.out``'s guards hoisted, and
  one sign normalization shared by the ``_normalized`` rules) returns exactly the
  non-None ``rule.fn`` results, in rule order;
- ``first_by_cost`` is the first ``k`` of a full ``(cost, str)`` sort;
- ``best_closure`` holds exactly the classes ``best_term_reaches`` finds;
- ``admits`` (the e-matching pass's prefilter: each source place's ops against its
  class's) refuses no node a pattern matches, and refuses where a place's ops are missing;
- ``RulesMemo`` answers a rule list with what its build gives for those very rules.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.engines.egraph.computed import (
    RulesMemo,
    admits,
    best_closure,
    best_term_reaches,
    divmod_rewrites,
    divmod_rules_by_op,
    first_by_cost,
    source_places,
)
from eqsat.engines.egraph.encoding import Node
from eqsat.ir.dtype import dtypes
from eqsat.ir.linear import Lin, LinBuilder
from eqsat.ir.ops import Ops
from eqsat.ir.pattern import UPat
from eqsat.ir.uop import UOp
from rules.computed import PyRule, divmod_pyrules
from rules.divmod_core import DIVMOD_RULES


class _Ctx(LinBuilder):
    """Named atoms with given bounds; ``q`` is ``a // 4``, ``m`` is ``a % 6``."""

    def __init__(self, bounds: dict[str, tuple[int, int]]):
        self.b = bounds

    def bounds(self, a: Any) -> tuple[int, int]:
        return self.b[a]

    def mod_parts(self, a: Any) -> list[tuple[Lin, Lin]]:
        return [(Lin.atom("a"), Lin.constant(6))] if a == "m" else []

    def idiv_parts(self, a: Any) -> list[tuple[Lin, Lin]]:
        return [(Lin.atom("a"), Lin.constant(4))] if a == "q" else []

    def mul_parts(self, a: Any) -> list[tuple[Lin, Lin]]:
        return []

    def atom(self, a: Any) -> Any: return ("atom", a)
    def const(self, v: int) -> Any: return ("const", v)
    def add(self, a: Any, b: Any) -> Any: return ("add", a, b)
    def mul(self, a: Any, c: int) -> Any: return ("mul", a, c)
    def idiv(self, a: Any, b: Any) -> Any: return ("idiv", a, b)
    def mod(self, a: Any, b: Any) -> Any: return ("mod", a, b)


_BOUNDS = {"a": (0, 95), "b": (-7, 7), "c": (1, 3), "q": (0, 23), "m": (0, 5), "n": (-9, -2)}
_ATOMS = sorted(_BOUNDS)
_lins = st.builds(
    lambda terms, k: Lin.of([(c, a) for a, c in terms], k),
    st.lists(st.tuples(st.sampled_from(_ATOMS), st.integers(-12, 12)), max_size=3),
    st.integers(-20, 20))


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["idiv", "mod"]), x=_lins,
       y=st.one_of(st.integers(-12, 12).map(Lin.constant), _lins))
def test_divmod_rewrites_are_the_rules_results(op: str, x: Lin, y: Lin) -> None:
    ctx = _Ctx(_BOUNDS)
    pyrules = divmod_pyrules(DIVMOD_RULES)
    want = [(r.name, t) for r in pyrules if (t := r.rule.fn(op, x, y, ctx)) is not None]
    assert divmod_rewrites(divmod_rules_by_op(pyrules), op, x, y, ctx) == want


_FIRES = [  # (op, x, y): pairs several rules rewrite
    ("idiv", Lin.of([(8, "a"), (1, "m")], 3), Lin.constant(4)),
    ("mod", Lin.of([(8, "a"), (1, "m")], 3), Lin.constant(-4)),
    ("idiv", Lin.of([(1, "q")], 2), Lin.constant(2)),
    ("mod", Lin.of([(1, "m")], 0), Lin.constant(8)),
    ("idiv", Lin.of([(-3, "c")], 0), Lin.atom("c")),
]


def test_divmod_rewrites_on_pairs_that_fire() -> None:
    ctx = _Ctx(_BOUNDS)
    pyrules = divmod_pyrules(DIVMOD_RULES)
    by_op = divmod_rules_by_op(pyrules)
    for op, x, y in _FIRES:
        want = [(r.name, t) for r in pyrules if (t := r.rule.fn(op, x, y, ctx)) is not None]
        assert want, (op, x, y)
        assert divmod_rewrites(by_op, op, x, y, ctx) == want


def test_divmod_rules_by_op_keeps_rule_order() -> None:
    pyrules = divmod_pyrules(DIVMOD_RULES)
    by_op = divmod_rules_by_op(pyrules)
    for op in ("idiv", "mod"):
        assert by_op[op] == [r for r in pyrules if op in r.rule.ops]
    assert all(isinstance(r, PyRule) for r in by_op["idiv"])


@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.5, 4.0]),
                          st.lists(st.sampled_from(_ATOMS), max_size=2, unique=True),
                          st.integers(-3, 3)), max_size=14),
       st.integers(1, 8))
def test_first_by_cost_is_the_full_sort_prefix(raw: list, k: int) -> None:
    cand = [(c, Lin.of([(1, a) for a in atoms], const)) for c, atoms, const in raw]
    want = sorted(cand, key=lambda t: (t[0], str(t[1])))[:k]
    assert first_by_cost(list(cand), k) == want


class _Snap:
    def __init__(self, nodes: list[Node]):
        self.nodes = nodes


@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n),
    st.sets(st.integers(0, n - 1)))))
def test_best_closure_is_what_reaches_finds(case: tuple) -> None:
    n, kids, missing = case
    # class i's best e-node may only point at smaller classes (best trees are acyclic)
    nodes = [Node(i, "Add", ("index", *[k for k in ks if k < i][:2],
                             *([0] * (2 - len([k for k in ks if k < i][:2])))))
             for i, ks in enumerate(kids)]
    nodes[0] = Node(0, "Cst", ("index", 0))
    snap = _Snap(nodes)
    best = {i: i for i in range(n) if i not in missing}
    for root, target in itertools.product(range(n), range(n)):
        assert (target in best_closure(snap, best, root)) == \
            best_term_reaches(snap, best, root, {target}, {})


_R, _X = UOp.range(UOp.const(dtypes.index, 8), 0), UOp.var("x", 0, 9)
_ADD_PATS = [
    UPat(Ops.ADD, src=(UPat(Ops.RANGE), UPat(Ops.CONST))),
    UPat(Ops.ADD, src=[UPat(Ops.CONST), UPat(Ops.RANGE)]),  # commutative
    UPat(Ops.ADD, src=(UPat.var("a"), UPat((Ops.CONST, Ops.RANGE)))),
    UPat(Ops.ADD, src=UPat(Ops.RANGE)),  # every source a RANGE
    UPat(Ops.ADD, src=(UPat(Ops.CONST), UPat.var("b")), any_len=True),  # two or more
    UPat(Ops.ADD),
]


def test_admits_every_match() -> None:
    for p in _ADD_PATS:
        for u in (_R + 3, _X + 3, _R + _X, _X + _X, _R + _R):
            kid_ops = tuple(frozenset({s.op.value}) for s in u.src)
            if p.matcher()(u, {}):
                assert admits(source_places(p), kid_ops), (p, u)


def test_admits_by_place() -> None:
    r, c, v = (frozenset({o.value}) for o in (Ops.RANGE, Ops.CONST, Ops.DEFINE_VAR))
    rc = r | c
    cases = [  # (pattern, its sources' classes' ops, admitted)
        (0, (r, c), True), (0, (c, r), False), (0, (rc, rc), True), (0, (r, r), False),
        (1, (r, c), True), (1, (c, r), True), (1, (c, c), False), (1, (r, v), False),
        (2, (v, r), True), (2, (r, v), False), (2, (v,), False),
        (3, (r, r), True), (3, (r, c), False), (3, (), True),
        (4, (c, v, v), True), (4, (c, v), True), (4, (v, c), False), (4, (c,), False),
        (5, (v, v), True), (5, (), True),
    ]
    for i, kid_ops, want in cases:
        assert admits(source_places(_ADD_PATS[i]), kid_ops) == want, (i, kid_ops)


def _counting_memo(size: int = 16) -> tuple[RulesMemo, list[list[Any]]]:
    built: list[list[Any]] = []

    def build(rules: list[Any]) -> tuple:
        built.append(rules)
        return tuple(rules)

    return RulesMemo(build, size), built


def test_rules_memo_builds_once_per_list() -> None:
    memo, built = _counting_memo()
    rules = divmod_pyrules(DIVMOD_RULES)
    first = memo(rules)
    assert memo(rules) is first and first == tuple(rules) and len(built) == 1


def test_rules_memo_rebuilds_a_list_whose_rules_changed() -> None:
    memo, built = _counting_memo()
    rules = divmod_pyrules(DIVMOD_RULES)
    memo(rules)
    rules.pop()  # the same list object, other rules
    assert memo(rules) == tuple(rules) and len(built) == 2
    rules.reverse()
    assert memo(rules) == tuple(rules) and len(built) == 3


def test_rules_memo_keeps_at_most_size_lists() -> None:
    memo, built = _counting_memo(size=2)
    lists = [divmod_pyrules(DIVMOD_RULES)[:k] for k in (1, 2, 3)]
    for rules in lists:
        assert memo(rules) == tuple(rules)
    assert len(memo.table) == 2 and len(built) == 3
    assert memo(lists[2]) == tuple(lists[2]) and len(built) == 3  # still held
    assert memo(lists[0]) == tuple(lists[0]) and len(built) == 4  # the oldest went
