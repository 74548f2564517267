"""The e-graph's analyses: intervals sound under C semantics, Def, the tripwire.

Bounds come from the egglog rules alone (only leaves are seeded from the IR) and
are checked against every value each subterm takes on every assignment (small
domains, exhaustive), so they are never tighter than the truth; on leaves they
equal the IR's ``vmin``/``vmax``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.engines.egraph import Session, UnsoundError
from eqsat.ir.dtype import dtypes
from eqsat.ir.interp import evaluate_many, leaf_key
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from tests.budgets import TIMING_SLACK
from tests.strategies import int_exprs, padded_index_exprs

LEAVES = (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL)


@pytest.fixture(scope="module")
def session() -> Session:
    return Session([])  # no rewrites: the analyses only


def _grid(root: UOp, cap: int = 4000) -> dict[str, np.ndarray] | None:
    leaves = [u for u in root.toposort() if u.op in LEAVES]
    doms = {leaf_key(u): (int(u.vmin), int(u.vmax)) for u in leaves}
    size = math.prod(hi - lo + 1 for lo, hi in doms.values())
    if size > cap:
        return None
    keys = list(doms)
    pts = list(itertools.product(*(range(lo, hi + 1) for lo, hi in doms.values())))
    return {k: np.array([p[i] for p in pts], dtype=np.int64) for i, k in enumerate(keys)}


def _check_sound(session: Session, root: UOp) -> None:
    cols = _grid(root)
    if cols is None:
        return
    n = len(next(iter(cols.values()))) if cols else 1
    bounds = session.analyze([root])
    for u in root.toposort():
        if u.dtype.count != 1 or not (u.dtype.is_int or u.dtype.is_bool):
            continue
        lo, hi, _ = bounds[u]
        if u.op in LEAVES:
            assert (lo, hi) == (u.vmin, u.vmax), f"leaf {u}: e-graph {lo, hi} != IR"
        vals, inval, undef = evaluate_many(u, cols, n=n)
        ok = ~inval & ~undef
        if not ok.any():
            continue
        v = vals[ok].astype(object)
        vmin, vmax = int(min(v)), int(max(v))
        assert lo <= vmin and vmax <= hi, (f"{u}: e-graph interval [{lo}, {hi}] misses the "
                                           f"values [{vmin}, {vmax}]")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_intervals_are_sound_on_random_index_expressions(session: Session, data) -> None:
    _check_sound(session, data.draw(int_exprs(max_depth=4)))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_intervals_are_sound_on_padded_expressions(session: Session, data) -> None:
    _check_sound(session, data.draw(padded_index_exprs(max_depth=3)))


@pytest.mark.parametrize("text, lo, hi", [
    ("(add (var x 0 9) (var y -3 3))", -3, 12),
    ("(sub (var x 0 9) (var y -3 3))", -3, 12),
    ("(mul (var x -2 3) (var y -3 5))", -10, 15),
    ("(idiv (var x -7 9) 2)", -3, 4),            # truncation toward zero
    ("(idiv (var x 0 9) (var y 1 3))", 0, 9),
    ("(idiv (var x 0 9) (var y -3 -1))", -9, 0),
    ("(idiv (var x -5 9) (var y -3 3))", -9, 9),  # divisor may be 0: |x//y| <= |x|
    ("(mod (var x -7 9) 4)", -3, 3),              # the dividend's sign
    ("(mod (var x 5 7) 8)", 5, 7),                # one bucket
    ("(mod (var x -7 -5) 8)", -7, -5),
    ("(mod (var x 10 13) 4)", 0, 3),
    ("(max (var x -2 3) (var y 0 1))", 0, 3),
    ("(neg (var x -2 3))", -3, 2),
    ("(lt (var x 0 3) 4)", 1, 1),
    ("(lt (var x 0 3) 2)", 0, 1),
    ("(lt (var x 4 5) 4)", 0, 0),
    ("(where (lt (var x 0 3) 4) (var y 2 5) (var z -9 9))", 2, 5),
    ("(range 3 10)", 0, 9),
    # fixed-width results that may wrap get no bound from the rules (unknown, sound)
    ("(add (const i8 100) (const i8 100))", -math.inf, math.inf),
    ("(add (cast i8 (var x 0 100)) (cast i8 (var y 0 100)))", -math.inf, math.inf),
    ("(add (cast i8 (var x 0 60)) (cast i8 (var y 0 60)))", 0, 120),  # cannot wrap
    # the fixed-width interval rules (``*_fixed``) run for these, not for index inputs
    ("(mul (cast i32 (var x 0 9)) (const i32 3))", 0, 27),
    ("(neg (cast i8 (var x 0 9)))", -9, 0),
    ("(cast i16 (var x -5 9))", -5, 9),
    ("(mul (lt (var x 0 3) 2) (lt (var y 0 3) 2))", 0, 1),  # bool arithmetic
    ("(and (var x 0 12) (var y 0 5))", 0, 5),
    ("(xor (var x 0 12) (var y 0 5))", 0, 15),
    ("(shl (var x 0 3) 2)", 0, 12),
])
def test_interval_table(session: Session, text: str, lo: int, hi: int) -> None:
    g = parse(text)
    got = session.analyze([g])[g]
    assert got[:2] == (lo, hi), f"{text}: e-graph interval {got[:2]}, expected {(lo, hi)}"


def test_def_marks_the_never_invalid_classes(session: Session) -> None:
    g = parse("(add (where (lt (var x 0 9) 5) (var x 0 9) (invalid)) (mul (var y 0 3) 2))")
    b = session.analyze([g])
    by_text = {u.op: v[2] for u, v in b.items() if u.op in (Ops.WHERE, Ops.MUL, Ops.ADD)}
    assert by_text == {Ops.WHERE: False, Ops.MUL: True, Ops.ADD: False}


def test_tripwire_fails_loudly_on_an_unsound_union(session: Session) -> None:
    x, nine = UOp.var("x", 0, 5), UOp.const(dtypes.index, 9)
    with session.probe([x + 1, nine]) as run:
        hx, h9 = run.insert([x + 1, nine])
        session.ins.union(hx, h9)  # x+1 == 9 is false for every x in [0, 5]
        with pytest.raises(UnsoundError, match="empty interval"):
            run.step(False)
    # the session still works afterwards
    assert session.analyze([x + 1])[x + 1][:2] == (1, 6)


def _unsound_session() -> Session:
    """A session whose one native rule is unsound: x + 1 -> 100."""
    from rules.native import ERule

    return Session([ERule("unsound_add_one", "", "g", '(Add "index" x (Cst "index" 1))',
                          '(Cst "index" 100)')])


def test_a_run_with_an_unsound_rule_fails_loudly() -> None:
    """The tripwire runs once a run, before its extraction: an empty interval made by a
    native step is reported then, with the class and its e-nodes; the session works
    afterwards."""
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    s = _unsound_session()
    g = parse("(mul (add (var x 0 5) 1) 3)")
    with pytest.raises(UnsoundError, match=r"empty interval lo=100 > hi=6 .*Cst\(.index., 100\)"):
        s.run([g], get_cost_model("reference"), Limits(seconds=60.0))
    outs, st = s.run([parse("(mul (var x 0 5) 3)")], get_cost_model("reference"),
                     Limits(seconds=60.0))
    assert st["stop_reason"] == "saturated"


def test_a_pass_failing_on_an_unsound_e_graph_reports_the_union(monkeypatch) -> None:
    """A computed pass that fails on an e-graph with an empty interval: the run checks
    the tripwire then, and raises the UnsoundError naming the class."""
    from eqsat.engines.egraph import run
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    def fail(*args, **kwargs):
        raise ValueError("a pass met lo > hi")

    s = _unsound_session()
    monkeypatch.setattr(run, "python_pass", fail)
    with pytest.raises(UnsoundError, match="empty interval") as e:
        s.run([parse("(mul (add (var x 0 5) 1) 3)")], get_cost_model("reference"),
              Limits(seconds=60.0))
    assert isinstance(e.value.__cause__, ValueError)
    with pytest.raises(ValueError, match="lo > hi"):  # a sound e-graph: the error itself
        s.run([parse("(mul (var x 0 5) 3)")], get_cost_model("reference"),
              Limits(seconds=60.0))


@pytest.mark.timing
def test_a_vacuous_interval_cannot_hang_the_analysis(session: Session) -> None:
    # a class that is Invalid everywhere may hold `c + 3` of itself (Invalid + 3 is
    # Invalid): its interval is vacuous and would climb for ever; the analysis is capped
    import time

    inv = UOp.invalid()
    with session.probe([inv]) as run:
        hi_, h3 = run.insert([inv, UOp.const(dtypes.index, 3)])
        ins = session.ins
        h_add = ins.node("Add", "index", hi_, h3)
        ins.union(hi_, h_add)
        ins.fact("RLo", (hi_, 0))
        ins.fact("RHi", (hi_, 10))
        t = time.perf_counter()
        run.step(False)  # no UnsoundError: the class is not Def
        assert time.perf_counter() - t < 10 * TIMING_SLACK  # a step takes milliseconds
        assert run.capped == 1


@pytest.mark.parametrize("text, fixed", [
    ("(add (mul (var x 0 9) 3) (idiv (range 0 12) 4))", False),
    ("(where (lt (var x 0 9) 3) (var x 0 9) 0)", False),
    ("(add (cast i8 (var x 0 60)) (const i8 1))", True),
    ("(mul (lt (var x 0 3) 2) (lt (var y 0 3) 2))", True),
    ("(cast i32 (var x 0 9))", True),
])
def test_fixed_width_interval_rules_run_only_when_an_enode_needs_them(
        session: Session, text: str, fixed: bool) -> None:
    with session.probe() as run:
        saved = session.ins.state()
        run.insert([parse(text)])
        assert run.fixed_analysis is fixed
        # each insertion decides afresh: an index-only one after it does not run them
        session.ins.restore(saved)
        run.insert([parse("(add (var x 0 9) 1)")])
        assert run.fixed_analysis is False


def test_index_interval_rules_read_no_dtype_range() -> None:
    # the index rules need no dmin/dmax (two atoms per rule, joined in every round)
    from eqsat.engines.egraph.analyses import (
        ANALYSIS_FIXED_RULES,
        ANALYSIS_RULES,
        FIXED_ANALYSIS_DTYPES,
    )

    assert not [n for n, _, body in ANALYSIS_RULES if "dmin" in body or "dmax" in body]
    assert {n for n, _, _ in ANALYSIS_FIXED_RULES} == {
        f"{n}_fixed" for n, _, body in ANALYSIS_RULES if '(= dt "index")' in body}
    for name, _, body in ANALYSIS_FIXED_RULES:
        ctor = body.split("(", 4)[3].split()[0]
        assert "index" not in FIXED_ANALYSIS_DTYPES[ctor], name


def test_no_interval_rule_reads_a_bound_it_does_not_use() -> None:
    # every (= v (lo x)) / (= v (hi x)) atom of a rule is a join in every round: a rule
    # binds only the bounds its condition or result reads
    import re

    from eqsat.engines.egraph.analyses import ANALYSIS_FIXED_RULES, ANALYSIS_RULES

    for name, _, body in ANALYSIS_RULES + ANALYSIS_FIXED_RULES:
        for v, f, x in re.findall(r"\(= (\w+) \((lo|hi) (\w+)\)\)", body):
            rest = body.replace(f"(= {v} ({f} {x}))", "", 1)
            assert re.search(rf"\b{v}\b", rest), f"{name} binds ({f} {x}) and never reads it"


# the interval rules of the constructors only an insertion brings in (the session's
# extension set) run when a run inserted one: an input, its bounds (lo, hi)
EXT_BOUNDS: list[tuple[str, int, int]] = [
    ("(xor (var x 0 3) (var y 0 3))", 0, 3),
    ("(shl (var x 1 3) 2)", 4, 12),
    ("(eq (var x 0 5) 9)", 0, 0),
    ("(ne (var x 0 5) 9)", 1, 1),
    ("(gt (var x 6 9) 5)", 1, 1),
    ("(le (var x 0 5) 9)", 1, 1),
    ("(mulacc (var x 0 3) 2 1)", 1, 7),
    ("(where (eq (var x 0 5) 9) 7 (var x 0 5))", 0, 5),  # under a core node
]


@pytest.mark.parametrize("text, lo, hi", EXT_BOUNDS)
def test_extension_interval_rules_run_when_their_constructor_is_inserted(
        text: str, lo: int, hi: int) -> None:
    from eqsat.engines.egraph import session_for

    g = parse(text)
    assert session_for(None).analyze([g])[g][:2] == (lo, hi)


def test_the_extension_constructors_are_those_no_native_rule_makes() -> None:
    import re

    from eqsat.engines.egraph import session_for
    from eqsat.engines.egraph.analyses import ANALYSIS_CTORS
    from eqsat.engines.egraph.program import analysis_ext

    s = session_for(None).program
    # an extension constructor is made by no rule, or only by rules over one of them
    ctors = [(set(re.findall(r"\((\w+)", f"{r.lhs} {r.query}")),
              set(re.findall(r"\((\w+)", f"{r.rhs} {r.actions}"))) for r in s.native]
    assert s.ext == analysis_ext(s.native)
    assert all(lhs & s.ext for lhs, rhs in ctors if rhs & s.ext and lhs & ANALYSIS_CTORS)
    assert s.ext <= ANALYSIS_CTORS - {"Cst", "G1"}
    assert {"Eq", "Ne", "Gt", "Xor", "Shl"} <= s.ext
    assert not s.ext & {"Add", "Mul", "Idiv", "Mod", "Lt", "Where", "And", "Not", "G1"}
    # without native rules nothing is made: every constructor's rules wait for an insertion
    assert analysis_ext([]) == ANALYSIS_CTORS - {"Cst", "G1"}


@pytest.mark.parametrize("text, ext", [
    ("(add (mod (var x 0 99) 4) 1)", set()),
    ("(add (xor (var x 0 3) 1) 2)", {"Xor"}),
    ("(where (ne (var x 0 5) 2) (var x 0 5) (invalid))", {"Ne"}),
])
@pytest.mark.usefixtures("egglog_steps")
def test_a_run_schedules_the_extension_rules_only_when_it_inserted_one(
        monkeypatch, text: str, ext: set[str]) -> None:
    # a step's analysis runs the interval rules of the constructors the e-graph holds:
    # an extension constructor's only in a run that inserted one
    from eqsat.api import optimize
    from eqsat.engines.egraph import encoding, session_for

    seen: list[str] = []
    flush = encoding.Inserter.flush

    def spy(self, extra: str = "", after: str = "", **kwargs):
        seen.append(after)
        return flush(self, extra, after, **kwargs)

    monkeypatch.setattr(encoding.Inserter, "flush", spy)
    optimize(parse(text), engine="egraph", cost_model="reference")
    runs = {a.split()[1] for a in seen if a.startswith("(run ")}
    parts = {name: p for p, name in session_for(None).store.cur.combined.items()}
    leaves = {leaf for r in runs for leaf in parts.get(r, (r,))}
    assert {leaf.rsplit("_", 1)[1] for leaf in leaves if leaf.startswith("analysis_ext_")} \
        == ext, seen
    assert "analysis_core_Mod" in leaves or "Mod" not in text.title()
    assert not {leaf for leaf in leaves if leaf.startswith("analysis_core_")} - \
        {f"analysis_core_{c}" for c in ("Cst", "G1", "Add", "Sub", "Mul", "Idiv", "Mod",
                                        "Neg", "Max", "Min", "Lt", "Where", "And", "Or",
                                        "Not")}, seen
