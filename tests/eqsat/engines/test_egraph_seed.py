"""Seeded bounds: what a computed pass sends with its e-nodes is what the analysis
derives for them, so the analysis reaches the same fixed point in fewer rounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.engines.egraph import Session
from eqsat.engines.egraph.computed import passes
from eqsat.engines.egraph.computed.seed import SEEDED, BoundSeeder, node_bounds
from eqsat.engines.egraph.encoding import uop_ctor
from eqsat.engines.egraph.schedules import Limits
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse, to_sexpr
from eqsat.ir.uop import UOp
from extraction import get_cost_model


@pytest.fixture(scope="module")
def session() -> Session:
    return Session([])  # no rewrites: the analyses only


_BIG = 1 << 62
ends = st.one_of(st.integers(-40, 40), st.integers(-_BIG, _BIG),
                 st.sampled_from([-(1 << 63), (1 << 63) - 1, 0, 1, -1]))
intervals = st.tuples(ends, ends).map(sorted)

_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "idiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
           "max": lambda a, b: a.maximum(b), "min": lambda a, b: a.alu(Ops.MIN, b),
           "lt": lambda a, b: a.lt(b), "le": lambda a, b: a.le(b), "gt": lambda a, b: a.gt(b),
           "ge": lambda a, b: a.ge(b), "eq": lambda a, b: a.eq(b), "ne": lambda a, b: a.ne(b)}


def _bound_of(analysed: dict, u: UOp) -> tuple[int | None, int | None]:
    lo, hi, _ = analysed[u]
    return (None if math.isinf(lo) else int(lo)), (None if math.isinf(hi) else int(hi))


def _check(session: Session, root: UOp) -> None:
    """Every node's seed, from its operands' e-graph bounds, equals the e-graph's own
    bounds of it (the analysis of the leaves' bounds only)."""
    analysed = session.analyze([root])
    for u in root.toposort():
        if not u.src:
            continue
        ctor = uop_ctor(u)
        dt = str(u.dtype)
        if (ctor, dt) not in SEEDED:
            continue
        fields = (dt, *u.src)
        seed = node_bounds(ctor, fields, lambda s: _bound_of(analysed, s))
        assert seed == _bound_of(analysed, u), f"{to_sexpr(u)}: seed {seed}, e-graph " \
                                               f"{_bound_of(analysed, u)}"


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(_BINARY)), a=intervals, b=intervals)
def test_a_binary_seed_is_what_the_analysis_derives(session: Session, op: str, a: list[int],
                                                    b: list[int]) -> None:
    x, y = UOp.var("x", a[0], a[1]), UOp.var("y", b[0], b[1])
    _check(session, _BINARY[op](x, y))


@settings(max_examples=40, deadline=None)
@given(a=intervals, b=intervals, c=intervals)
def test_neg_where_and_bool_seeds_are_what_the_analysis_derives(
        session: Session, a: list[int], b: list[int], c: list[int]) -> None:
    x, y, z = UOp.var("x", a[0], a[1]), UOp.var("y", b[0], b[1]), UOp.var("z", c[0], c[1])
    p, q = x.lt(y), z.ne(y)
    _check(session, p.where(-x, z * 3 + 1))
    _check(session, (p & q).where(x // 4, y % 5))
    _check(session, (p | ~q).where(x, y))


@pytest.mark.parametrize("ctor, fields, want", [
    ("Cst", ("index", 7), (7, 7)),
    ("Cst", ("i32", 7), (None, None)),            # fixed-width: not seeded
    ("Add", ("i32", 0, 1), (None, None)),
    ("Add", ("index", 0, 1), (1, 12)),            # [0, 2] + [1, 10]
    ("Add", ("index", 0, 2), (None, None)),       # an operand without bounds
    ("Mod", ("index", 0, 2), (0, None)),          # a >= 0: only the low bound
    ("Idiv", ("index", 1, 0), (-10, 10)),         # divisor may be 0: |a//b| <= |a| only
    ("Mul", ("index", 3, 3), (None, None)),       # 2^62 * 2^62 leaves i64: no rule fires
])
def test_seed_table(ctor: str, fields: tuple, want: tuple) -> None:
    bounds = {0: (0, 2), 1: (1, 10), 2: (None, None), 3: (1 << 62, 1 << 62)}
    assert node_bounds(ctor, fields, bounds.__getitem__) == want


def test_the_seeder_records_rows_and_remembers_new_handles() -> None:
    class Rows:
        def __init__(self) -> None:
            self.rows: list[tuple] = []

        def late_bound(self, k: int, lo: int | None, hi: int | None) -> int:
            self.rows.append((k, lo, hi))
            return (lo is not None) + (hi is not None)

    seeder = BoundSeeder({0: 0, 1: 2}, {0: 3, 1: 2}, lambda h: h)
    ins = Rows()
    seeder(ins, 5, "Mul", ("index", 0, 1), True)      # a new class: [0, 6]
    seeder(ins, 6, "Add", ("index", 5, 1), True)      # reads the new class's seed: [2, 8]
    seeder(ins, 1, "Sub", ("index", 6, 0), False)     # into an existing class: no seed kept
    seeder(ins, 7, "Leaf", ("RANGE", "index", 0), True)
    assert ins.rows == [(5, 0, 6), (6, 2, 8), (1, -1, 8)]
    assert seeder.seeds == {5: (0, 6), 6: (2, 8)} and seeder.rows == 6


@settings(max_examples=80, deadline=None)
@given(ctor=st.sampled_from(["Add", "Mul", "Cst", "Sub", "Idiv", "Mod", "Lt"]),
       a=intervals, b=intervals, known=st.booleans())
def test_the_seeders_inline_cases_are_node_bounds(ctor: str, a: list[int], b: list[int],
                                                  known: bool) -> None:
    """The seeder's inline sums, products and constants give what node_bounds gives,
    and a handle that is not its class's name is read through its class."""
    lo, hi = {10: a[0], 11: b[0]}, {10: a[1], 11: b[1]}
    if not known:
        del lo[11], hi[11]
    cls = {1: 10, 2: 11}  # handles 1, 2 are in classes 10, 11
    fields = ("dt" if ctor == "Lt" else "index", a[0]) if ctor == "Cst" else \
        ("bool" if ctor == "Lt" else "index", 1, 2)
    rows: list[tuple] = []

    class Rows:
        def late_bound(self, k: int, lo_: int | None, hi_: int | None) -> int:
            rows.append((lo_, hi_))
            return 1

    seeder = BoundSeeder(lo, hi, lambda h: cls.get(h, h))
    seeder(Rows(), 99, ctor, fields, True)
    want = node_bounds(ctor, fields, seeder.bound)
    assert rows == ([] if want == (None, None) else [want])


CASE = ("(add (mul (idiv (add (mul (range 0 16) 8) (range 1 8)) 4) 12) "
        "(mod (add (mul (range 0 16) 8) (range 1 8)) 4))")


@pytest.mark.usefixtures("egglog_steps")
def test_seeding_changes_the_rounds_not_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    cm = get_cost_model("reference")
    g = parse(CASE)
    lim = Limits(12, 20_000, 30.0)
    out: dict[bool, tuple] = {}
    for seed in (False, True):
        monkeypatch.setattr(passes, "SEED_BOUNDS", seed)
        s = Session(None)
        res, st_ = s.run([g], cm, lim)
        out[seed] = (to_sexpr(res[0]), st_["iterations"], s.store.cur.egg_iterations)
    assert out[True][:2] == out[False][:2]  # the same result, iteration by iteration
    assert out[True][2] < out[False][2]     # in fewer egglog rounds
