"""The contracts of the engine's parts: a Run's StopReason for each budget, the
phases' order, and a Store left as built after every run (no ``leftover`` rows)."""

from __future__ import annotations

import itertools

import pytest

from eqsat.engines.egraph import Session, extracting, phases
from eqsat.engines.egraph import run as run_module
from eqsat.engines.egraph.extracting import extract_roots
from eqsat.engines.egraph.reset import leftover, reset_program, reset_tables
from eqsat.engines.egraph.run import Run
from eqsat.engines.egraph.schedules import Clock, Limits, StopReason
from eqsat.engines.egraph.seeding import baseline_seeds
from eqsat.engines.egraph.store import Store
from eqsat.ir.sexpr import parse
from extraction import get_cost_model

MODEL = get_cost_model("reference")
GROWS = "(add (mul (idiv (add (mul (range 0 16) 8) (range 1 8)) 4) 12) " \
        "(mod (add (mul (range 0 16) 8) (range 1 8)) 4))"


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(None)


def _run(session: Session, text: str, limits: Limits) -> Run:
    """A Run of ``text`` executed by ``session`` (no widening: these inputs stay in
    their e-graph)."""
    g = parse(text)
    seeds = baseline_seeds([g], None, MODEL)
    run = session._new_run([g], seeds, MODEL, limits, Clock(limits.seconds), False)
    session.execute(run)
    return run


# one line per budget: input, limits, the Run's StopReason
STOPS = [
    ("(mul (var x 0 5) 3)", Limits(seconds=60.0), StopReason.SATURATED),
    ("(not (lt (add (var x 0 5) (var y 0 5)) 1))", Limits(seconds=60.0), StopReason.STALLED),
    (GROWS, Limits(iterations=1, seconds=60.0), StopReason.ITERATIONS),
    (GROWS, Limits(enodes=30, seconds=60.0), StopReason.ENODES),
    (GROWS, Limits(seconds=0.0), StopReason.TIME),
]


@pytest.mark.parametrize("text, limits, stop", STOPS)
def test_a_runs_stop_reason_for_each_budget(session: Session, text: str, limits: Limits,
                                            stop: StopReason) -> None:
    run = _run(session, text, limits)
    assert run.stop is stop
    assert run.stats["stop_reason"] == stop.value
    assert run.stats["time_limited"] is stop.hard_limit


def test_a_run_stopped_by_memory_says_so(session: Session, monkeypatch) -> None:
    reads = itertools.count()
    for module in (run_module, phases):
        monkeypatch.setattr(module, "rss_bytes", lambda: next(reads) << 20)
    run = _run(session, GROWS, Limits(memory=1, seconds=60.0))
    assert run.stop is StopReason.MEMORY and run.it == 0
    assert run.stats["time_limited"] is True


def test_the_phases_run_in_their_order(session: Session, monkeypatch) -> None:
    names = [name for name, _ in phases.PHASES]
    assert names == ["check", "last", "extract", "stats"]
    ran: list[str] = []

    def traced(name, fn):
        def phase(run):
            ran.append(name)
            fn(run)
        return phase

    monkeypatch.setattr(phases, "PHASES", tuple((n, traced(n, f)) for n, f in phases.PHASES))
    run = _run(session, "(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)",
               Limits(seconds=60.0))
    assert ran == names and run.stats["stop_reason"] == run.stop.value


def test_a_run_state_starts_afresh(session: Session) -> None:
    # nothing of one run is carried into the next: each has its own Run
    first = _run(session, GROWS, Limits(enodes=30, seconds=60.0))
    second = _run(session, "(mul (var x 0 5) 3)", Limits(seconds=60.0))
    assert first.held_back is not second.held_back and first.matches is not second.matches
    assert second.stop is StopReason.SATURATED and second.multiplying


# one line per kind of run's end: what it leaves in the store's e-graphs (nothing)
RESETS = [
    ("(add (mul (add (var x 0 9) 0) 1) 3)", Limits(seconds=60.0)),            # subsumed
    ("(where (lt (var x 0 9) 4) (add (var x 0 9) 0) 2)", Limits(seconds=60.0)),
    ("(add (mul (var x 0 9) 0) (mod (mul (var y 0 9) 4) 2))", Limits(seconds=60.0)),
    (GROWS, Limits(enodes=30, seconds=60.0)),                                # stale
    (GROWS, Limits(iterations=1, seconds=60.0)),
    ("(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)", Limits(seconds=60.0)),  # select
    ("(add (mod (cast i32 (var x 0 99)) (const i32 4)) (const i32 1))", Limits(seconds=60.0)),
]


@pytest.mark.parametrize("text, limits", RESETS)
def test_a_reset_runs_the_parts_of_the_tables_with_rows(text: str, limits: Limits,
                                                        monkeypatch) -> None:
    # after a run whose last step read the tables' sizes, the reset runs the deletions
    # of those tables (and of the constructors the RSub rows name) only, and leaves
    # the e-graph as built
    s = Session(None)
    made: list[str] = []
    real = Store._filled_deletions

    def spy(store: Store) -> str:
        made.append(real(store))
        return made[-1]

    monkeypatch.setattr(Store, "_filled_deletions", spy)
    s.run([parse(text)], MODEL, limits)
    cur = s.store.cur
    names = {name: parts for parts, name in cur.combined.items()}
    ran = [p for line in "".join(made).split("\n") if line
           for p in names[line.split()[1]]]
    sizes = dict(s.store.cmd("(print-size)")[-1].sizes)
    assert leftover(sizes, cur.base_sizes) == {} and s.store.rebuilds == 0
    if made and made[-1]:  # (one run: the subsumed e-nodes, the tables, the handles)
        assert made[-1].count("(run ") == 1 and "reset_handles" in ran
        assert "reset_RSub" in ran or not any(p.startswith("reset_subsumed_") for p in ran)
        assert "reset_Sqrt" not in ran and "reset_Add" in ran


# the reset's rule sets: one part per table written by a run, combined
RESET_TEXT = ("(constructor Add (String E E) E)\n(relation RSub (String String String i64 "
              "i64 i64 i64 i64))\n(function lo (E) i64 :merge (max old new))\n"
              "(constructor H (i64) E)\n(relation IntDt (String))")


def test_the_reset_program_has_a_part_per_table() -> None:
    assert reset_tables(RESET_TEXT, {"IntDt"}) == {"Add", "RSub", "lo"}
    prog = reset_program(RESET_TEXT, {"IntDt"}, loads={"Add"})
    assert "(unstable-combined-ruleset reset reset_Add reset_RSub reset_lo)" in prog
    assert "(unstable-combined-ruleset reset_subsumed reset_subsumed_Add)" in prog
    assert ":ruleset reset_handles" in prog and "IntDt" not in prog
    assert "(ruleset reset_subsumed)" in reset_program(RESET_TEXT, {"IntDt"}, loads=set())


@pytest.mark.parametrize("text, limits", RESETS)
def test_a_store_reset_leaves_nothing_behind(text: str, limits: Limits) -> None:
    s = Session(None)
    s.run([parse(text)], MODEL, limits)
    for kind, e in s.store.egraphs.items():
        sizes = dict(e.egraph.run_program(*e.egraph.parse_program("(print-size)"))[-1].sizes)
        assert leftover(sizes, e.base_sizes) == {}, kind
    assert s.store.rebuilds == 0


def test_the_narrow_egraph_declares_the_constructors_it_can_hold_only(session) -> None:
    # its loads and what its rules make: every other table would only cost each size
    # report and snapshot; a run that needs another constructor widens (WidenError)
    p = session.program
    declared = p.declares("narrow")
    assert p.narrow_loads <= declared and "Sqrt" not in declared
    assert p.declares("index") is None and p.declares("fixed") is None
    assert "(constructor Sqrt " not in p.text("narrow")
    assert "(constructor Sqrt " in p.text("index")


@pytest.mark.parametrize("text", [
    "(mul (var x 0 5) 3)",  # the output is the input, the baseline's seed
    "(mul (add (var x 0 5) 0) 3)",  # the output is the baseline's cheaper rewrite
    "(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)",  # the seed is the input, the output new
    GROWS,
])
def test_the_extract_phase_prices_as_the_model_does(session: Session, text: str) -> None:
    # the starts' costs come from the baseline's seeds: the same figures
    run = _run(session, text, Limits(seconds=60.0))
    assert run.costs == [(MODEL.graph_cost(r), MODEL.graph_cost(o))
                         for r, o in zip(run.roots, run.outs, strict=True)]


@pytest.mark.parametrize("text", [
    "(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)",
    "(add (mul (var x 0 5) 3) (mul (var x 0 5) 3))",
    GROWS,
])
@pytest.mark.parametrize("model", ["reference", "default"])
def test_the_extraction_prices_its_tree_terms_as_the_model_does(
        session: Session, text: str, model: str) -> None:
    # priced: the terms whose cost the extraction knows, each at graph_cost's figure;
    # none under a model that prices by more than the op
    m = get_cost_model(model)
    run = _run(session, text, Limits(seconds=60.0))
    priced: dict = {}
    outs, _ = extract_roots(run.snap, run.store.cur.args, run.handles, m, run.clock,
                            priced=priced)
    assert [(u, c) for u, c in priced.values()] == \
        ([(o, m.graph_cost(o)) for o in outs] if model == "reference" else [])


@pytest.mark.parametrize("text", ["(add (var x 0 7) 1)", "(idiv (var x 0 100) 7)",
                                  "(mul (var x 0 5) 3)"])
@pytest.mark.parametrize("model", ["reference", "default"])
def test_one_enode_a_class_extracts_as_the_tree_pass_does(
        session: Session, text: str, model: str, monkeypatch) -> None:
    # the lone-choice path gives the terms, stats and prices of the general one
    m = get_cost_model(model)
    run = _run(session, text, Limits(seconds=60.0))
    lone = extracting._lone_choice
    took: list = []
    monkeypatch.setattr(extracting, "_lone_choice", lambda *a: took.append(lone(*a)) or took[-1])
    for thorough in (False, True):
        fast: dict = {}
        got = extract_roots(run.snap, run.store.cur.args, run.handles, m, run.clock,
                            thorough=thorough, priced=fast)
        with monkeypatch.context() as mp:
            mp.setattr(extracting, "_one_each", lambda _groups: False)
            general: dict = {}
            want = extract_roots(run.snap, run.store.cur.args, run.handles, m, run.clock,
                                 thorough=thorough, priced=general)
        assert took[-1] is not None and got == want and fast == general
