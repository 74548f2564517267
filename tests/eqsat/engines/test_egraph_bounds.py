"""Bounded steps: the native rules whose matches multiply are counted before they run,
and a run holds its e-node, time and memory budgets on inputs that made one egglog
step explode (issue: a floor-division expansion from a padded view)."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.api import Budget, optimize, optimize_many
from eqsat.engines.egraph import engine, program, session_for
from eqsat.engines.egraph.run import Run
from eqsat.engines.egraph.schedules import (
    HARD_ENODES,
    Limits,
    count_program,
    match_bounds,
    multiplies,
    new_nodes,
)
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.sexpr import parse, to_sexpr
from extraction import get_cost_model, reference_cost
from rules.native import ERule

# the floor division of a padded view's index by 7, then modulo 5, as tinygrad's view
# merging writes it (where-fix-ups of C's truncating idiv/mod, an Invalid branch)
FLOORDIV = (
    "(add (mod (sub (idiv (add (add (add 0 (mul 1 (range 1 7))) (mul 7 (where (not (lt (range 0"
    " 8) 7)) (add (range 0 8) -3) (invalid)))) (mul 35 0)) 7) (where (lt (mod (add (add (add 0"
    " (mul 1 (range 1 7))) (mul 7 (where (not (lt (range 0 8) 7)) (add (range 0 8) -3) "
    "(invalid)))) (mul 35 0)) 7) 0) 1 0)) 5) (where (lt (mod (sub (idiv (add (add (add 0 (mul 1"
    " (range 1 7))) (mul 7 (where (not (lt (range 0 8) 7)) (add (range 0 8) -3) (invalid)))) "
    "(mul 35 0)) 7) (where (lt (mod (add (add (add 0 (mul 1 (range 1 7))) (mul 7 (where (not "
    "(lt (range 0 8) 7)) (add (range 0 8) -3) (invalid)))) (mul 35 0)) 7) 0) 1 0)) 5) 0) 5 0))")


@pytest.fixture(scope="module", autouse=True)
def warm() -> None:
    session_for(None).prepare()  # the one-time session build is not part of any budget


def _rule(lhs: str, rhs: str, *when: str) -> ERule:
    return ERule("r", "", "g", lhs, rhs, tuple(when))


@pytest.mark.parametrize("rule, expect", [
    # two operands that vary independently, a new term of them: every pair matches
    (_rule("(Add dt (Where dt c (Cst dt k1) (Cst dt k2)) (Where dt c (Cst dt k3) (Cst dt k4)))",
           "(Where dt c (Add dt (Cst dt k1) (Cst dt k3)) (Add dt (Cst dt k2) (Cst dt k4)))"),
     True),
    (_rule("(And dt (Not dt x) (Not dt y))", "(Not dt (Or dt x y))"), True),
    # a constant operand: a class holds one
    (_rule("(Add dt (Where dt c (Cst dt k1) (Cst dt k2)) (Cst dt k3))",
           "(Where dt c (Add dt (Cst dt k1) (Cst dt k3)) (Add dt (Cst dt k2) (Cst dt k3)))"),
     False),
    # the operands share their variables: one match per pair that agrees
    (_rule("(Add dt (Mod dt x n) (Mul dt (Idiv dt x n) n))", "x"), False),
    # only one operand varies on its own
    (_rule("(Add dt (Add dt y (Mod dt x n)) (Mul dt (Idiv dt x n) n))", "(Add dt y x)"),
     False),
    # it makes no new term
    (_rule("(Sub dt (Where dt c a b) (Where dt d e f))", "c"), False),
    # a general rule: its first atom is the pattern, its union the new term
    (ERule("q", "", "g", query="(= e (Add dt (Mod dt (Idiv dt x (Cst dt a)) (Cst dt c)) "
                               "(Mul dt (Idiv dt x (Cst dt b)) (Cst dt c)))) (= b (* a c))",
           actions="(union e (Idiv dt x (Cst dt a)))"), True),
    (ERule("q", "", "g", query="(= e (Lt dt (Add dx x (Cst dx c0)) (Cst dx c1)))",
           actions="(union e (Lt dt x (Cst dx c1)))"), False),
])
def test_which_rules_multiply(rule: ERule, expect: bool) -> None:
    assert multiplies(rule) is expect


def test_a_counting_twin_counts_the_e_nodes_of_its_matches() -> None:
    r = _rule("(Add dt (Where dt c (Cst dt k1) (Cst dt k2)) (Where dt c (Cst dt k3) (Cst dt k4)))",
              "(Where dt c (Add dt (Cst dt k1) (Cst dt k3)) (Add dt (Cst dt k2) (Cst dt k4)))",
              "(= (lo c) 0)")
    assert new_nodes(r) == 7 and new_nodes(_rule("(Neg dt (Neg dt x))", "x")) == 1
    assert count_program(r, "native_c3", "StepCount 3") == (
        f"(rule ((= count_root {r.lhs}) (= (lo c) 0)) ((set (StepCount 3) 7)) "
        ':ruleset native_c3 :name "r#count")')


def test_the_issue_expression_stays_small() -> None:
    """The where-combining rules no longer combine the dead branches of a constant
    condition: the run that went from 719 to 24,900 e-nodes in one step stays small."""
    g = parse(FLOORDIV)
    t = time.perf_counter()
    r = optimize(g, cost_model="reference", budget=Budget(seconds=10.0, enodes=100_000))
    assert time.perf_counter() - t < 10.0
    assert r.cost == 2 and to_sexpr(r.graph, compact=True) == \
        "(where (lt 6 (range 0 8)) 4 (invalid))"
    assert r.stats["enodes"] < 2_000 and not r.stats["held_back"]
    assert check_equivalent(g, r.graph, samples=500)


def _where_pairs(n: int = 8) -> str:
    """A balanced sum of ``n`` wheres over one condition, with constant branches: each
    level's Add holds two wheres of the same condition (where_combine_consts's food)."""
    ts = [f"(where (lt (range 0 8) 4) {i} {2 * i + 1})" for i in range(n)]
    while len(ts) > 1:
        ts = [f"(add {a} {b})" for a, b in zip(ts[::2], ts[1::2], strict=True)]
    return ts[0]


def test_a_multiplying_rule_is_held_to_the_room() -> None:
    """Counted first, the where-combining round would make 21 e-nodes (matches of
    where_combine_consts in the input's sums and in the baseline's rewrite, each a where
    of two folded constants) where the room left under a 50 e-node budget has not space
    for them: the multiplying rules are left out, the run
    stops by e-nodes (not "saturated") and keeps its bound; with room they run."""
    g = parse(_where_pairs())
    model = get_cost_model("reference")
    from eqsat.engines.egraph import optimize_many as egraph_many

    outs, st = egraph_many([g], cost_model=model, budget=Limits(enodes=50, seconds=60.0))
    assert st["held_back"] == {"where_combine_consts": 21}
    assert st["stop_reason"] == "enodes" and st["enodes_peak"] <= HARD_ENODES * 50
    assert reference_cost(outs[0]) <= reference_cost(g)
    assert check_equivalent(g, outs[0], samples=300)
    outs, st = egraph_many([g], cost_model=model, budget=Limits(seconds=60.0))
    assert not st["held_back"] and st["matches"]["where_combine_consts"] > 0
    assert reference_cost(outs[0]) < reference_cost(g)


@pytest.mark.parametrize("rule, expect", [
    # a where of two constants is fixed by its class: one where and the other's constants
    (_rule("(Add dt (Where dt c (Cst dt k1) (Cst dt k2)) (Where dt c (Cst dt k3) (Cst dt k4)))",
           "(Where dt c (Cst dt k1) (Cst dt k2))"),
     [("Where", "Where"), ("Cst", "Cst", "Where")]),
    (_rule("(Lt \"bool\" (Neg \"index\" x) (Neg \"index\" y))", "(Lt \"bool\" y x)"),
     [("Neg", "Neg")]),
    # a guard computes c3: the Mul of c3 is fixed once x, c1 and c2 are
    (_rule("(Add Dt (Mul Dt (Mod Dt x (Cst Dt c1)) (Cst Dt c2)) "
           "(Mul Dt (Idiv Dt x (Cst Dt c1)) (Cst Dt c3)))", "(Mul Dt x (Cst Dt c2))",
           "(!= c1 0)", "(= (* c1 c2) c3)"),
     [("Mod", "Mul"), ("Idiv", "Mul"), ("Cst", "Mod"), ("Cst", "Idiv")]),
    # a relation guard with a variable of its own may hold many rows per match: no bound
    (_rule("(Add dt (Neg dt x) (Neg dt y))", "x", "(Rel x z)"), None),
    # a general rule: no bound
    (ERule("q", "", "g", query="(= e (And dt (Not dt x) (Not dt y)))",
           actions="(union e (Not dt (Or dt x y)))"), None),
])
def test_the_matches_bounded_by_the_rows(rule: ERule, expect: list | None) -> None:
    assert match_bounds(rule) == expect


@pytest.mark.parametrize("text", [_where_pairs(), FLOORDIV,
                                  "(and (not (lt (var x 0 9) 3)) (not (lt (var y 0 9) 4)))"])
def test_the_bound_from_the_rows_holds_the_counted_e_nodes(monkeypatch, text: str) -> None:
    """Every step counted by the twins (in lockstep, so exact) makes at most the e-nodes
    the bound from the rows allows (``Run.apriori``), read before the same load."""
    seen: list[tuple[float, int]] = []
    bound: list[float] = []
    real_admit = Run.admit

    def apriori(self, bases):
        bound.append(real_apriori(self, bases))
        return math.inf  # (always counted: the twins stay in lockstep)

    def admit(self, bases, allow):
        before = dict(self.counts)
        ok = real_admit(self, bases, allow)
        seen.append((bound[-1], sum(v - before.get(i, 0) for i, v in self.counts.items())))
        return ok

    real_apriori = Run.apriori
    monkeypatch.setattr(Run, "apriori", apriori)
    monkeypatch.setattr(Run, "admit", admit)
    optimize(parse(text), cost_model="reference", budget=Budget(seconds=60.0))
    assert seen
    if text != FLOORDIV:  # (whose where-combining rules' guards hold nowhere)
        assert any(n for _, n in seen)
    for bound, n in seen:
        assert n <= bound


def test_a_step_within_the_bound_is_not_counted(monkeypatch) -> None:
    """A step whose bound from the rows fits its room runs the multiplying rules without
    the counting call; where it does not, they are counted first."""
    calls: list[float] = []
    real_admit = Run.admit

    def admit(self, bases, allow):
        calls.append(allow)
        return real_admit(self, bases, allow)

    monkeypatch.setattr(Run, "admit", admit)
    g = parse(_where_pairs())
    r = optimize(g, cost_model="reference", budget=Budget(seconds=60.0))
    assert not calls and r.stats["matches"]["where_combine_consts"] > 0
    r = optimize(g, cost_model="reference", budget=Budget(seconds=60.0, enodes=50))
    assert calls and r.stats["held_back"] == {"where_combine_consts": 21}


@pytest.fixture(scope="module")
def unguarded() -> engine.Session:
    """A session whose where-combining rules lack their live-condition guard (as they
    were when the issue was filed)."""
    groups, native, py = program.resolve(None)
    native = [dataclasses.replace(r, when=tuple(w for w in r.when if "(lo c)" not in w and
                                                "(hi c)" not in w))
              if "_where_" in r.name else r for r in native]
    real = program.resolve
    program.resolve = lambda _rs: (groups, native, py)
    try:
        return engine.Session(None)
    finally:
        program.resolve = real


@pytest.mark.slow
@pytest.mark.parametrize("enodes, seconds", [(20_000, 2.0), (100_000, 10.0)])
def test_the_issue_expression_without_the_guard(unguarded: engine.Session, enodes: int,
                                                seconds: float) -> None:
    """Without the guard, the where(false, k, ..) e-nodes still pile up in the class of a
    constant (where they are subsumed now, no longer feeding the rules): the run stays
    small and keeps its budgets."""
    g = parse(FLOORDIV)
    t = time.perf_counter()
    outs, st = unguarded.run([g], get_cost_model("reference"),
                             Limits(enodes=enodes, seconds=seconds))
    assert time.perf_counter() - t <= 1.2 * seconds, st["per_iteration"]
    assert st["enodes_peak"] < 2_000
    assert reference_cost(outs[0]) == 2 and check_equivalent(g, outs[0], samples=300)


def test_the_memory_budget_stops_a_run(monkeypatch) -> None:
    """The resident set is read between egglog calls; a run that grew it past
    ``memory`` stops (here each read finds 1 MiB more than the last)."""
    import itertools

    g = parse(FLOORDIV)
    reads = itertools.count()
    from eqsat.engines.egraph import phases
    from eqsat.engines.egraph import run as run_module

    for module in (run_module, phases):
        monkeypatch.setattr(module, "rss_bytes", lambda: next(reads) << 20)
    r = optimize(g, cost_model="reference", budget=Budget(memory=1, seconds=60.0))
    assert r.stats["stop_reason"] == "memory" and r.stats["iterations"] == 0
    # stopped before the first step: the run's start, the baseline's result as it came
    assert r.graph is optimize(g, engine="baseline").graph
    r = optimize(g, cost_model="reference", budget=Budget(memory=(5 << 20) + 1, seconds=60.0))
    assert r.stats["stop_reason"] == "memory" and 1 <= r.stats["iterations"] <= 3
    assert r.stats["rss_growth"] > 5 << 20
    assert r.cost <= r.input_cost and check_equivalent(g, r.graph, samples=200)
    monkeypatch.undo()
    r = optimize(g, cost_model="reference", budget=Budget(memory=1 << 30, seconds=60.0))
    assert r.stats["stop_reason"] != "memory" and r.cost == 2


def test_budget_memory_is_validated_and_per_run() -> None:
    assert Limits.of(Budget()).memory == Limits().memory > 1 << 30
    assert Limits.of(Budget()) == Limits.of(None)  # (a call given no budget runs on these)
    assert Limits.of(Budget(memory=123)).memory == 123
    with pytest.raises(ValueError, match="memory"):
        Budget(memory=0)
    with pytest.raises(ValueError, match="memory"):
        Limits(memory=0)


def test_a_chunk_that_hits_its_limit_answers_every_case() -> None:
    graphs = [parse(FLOORDIV), parse("(add (mul (var x 0 9) 2) (mul (var x 0 9) 3))"),
              parse("(mod (add (mul (range 0 8) 4) 3) 4)")]
    res = optimize_many(graphs, cost_model="reference", budget=Budget(iterations=1))
    assert len(res) == 3 and res[0].stats["stop_reason"] == "iterations"
    for g, r in zip(graphs, res, strict=True):
        assert r.cost <= r.input_cost and check_equivalent(g, r.graph, samples=200)


def test_an_e_node_of_its_own_class_is_subsumed() -> None:
    """0 == 0 // 3 puts Idiv(c0, 3) into the class c0 of 0; nested_idiv then made
    c0 // 9, c0 // 27, ... and every product of the divisors (the e-graph doubled at each
    step, and a chunk with such a case spent seconds per step): subsumed, the e-node no
    longer feeds the rules."""
    from eqsat.engines.egraph import optimize_many as egraph_many

    g = parse("(idiv (xor (range 0 6) (range 0 6)) 3)")
    # (keep_egraph: the search runs although the baseline's rewrite, 0, costs nothing)
    outs, st = egraph_many([g], cost_model="reference",
                           budget=Limits(iterations=8, enodes=20_000, seconds=60.0, stall=0),
                           keep_egraph=True)
    sizes = [n for n, _ in st["per_iteration"]]
    # (no step doubles it; the select rules add a quotient's ladder once)
    assert sizes[-1] < 30 and all(b < 2 * a for a, b in zip(sizes[:-1], sizes[1:],
                                                            strict=True)), sizes
    assert to_sexpr(outs[0]) == "0"


def test_no_time_for_the_dag_search_keeps_every_root(monkeypatch) -> None:
    """Past the hard time limit, every root's DAG-aware search is left out and the
    roots keep their tree choices: every root has its result (the roots after the
    first had none, a KeyError), and the run says the clock stopped it."""
    from eqsat.engines.egraph import optimize_many as egraph_many
    from eqsat.engines.egraph.schedules import Clock

    monkeypatch.setattr(Clock, "over", lambda self: True)
    texts = ["(add (idiv (range 0 32) 4) (mod (idiv (range 0 32) 4) 3))",
             "(add (idiv (range 1 60) 7) (mod (idiv (range 1 60) 7) 5))"]
    graphs = [parse(t) for t in texts]
    # (keep_egraph: the run builds its e-graph although the clock is out before the
    # search; without it the start is the output, test_a_clock_out_before_the_search...)
    outs, st = egraph_many(graphs, cost_model="reference", keep_egraph=True)
    assert len(outs) == 2 and st["extraction"]["method"] == "tree"
    assert st["stop_reason"] == "time" and st["time_limited"]
    for g, o in zip(graphs, outs, strict=True):
        assert check_equivalent(g, o, samples=200)


def test_a_clock_out_before_the_search_gives_the_start(monkeypatch) -> None:
    """A clock out by the end of the baseline's rewrite (here from the start): nothing
    is inserted, each root's output is its start (the cheaper of the input and the
    baseline's rewrite), and the run says the clock stopped it."""
    from eqsat.engines.egraph import optimize_many as egraph_many
    from eqsat.engines.egraph.schedules import Clock

    monkeypatch.setattr(Clock, "over", lambda self: True)
    graphs = [parse("(add (idiv (range 0 32) 4) (mod (idiv (range 0 32) 4) 3))"),
              parse("(add (mul (range 1 60) 1) 0)")]
    base = [optimize(g, engine="baseline", cost_model="reference").graph for g in graphs]
    outs, st = egraph_many(graphs, cost_model="reference")
    assert outs == base
    assert st["stop_reason"] == "time" and st["time_limited"] and st["iterations"] == 0
    assert st["enodes"] == 0 and st["seed"]["gain"] == 0


# three random index expressions (int_exprs) whose constants meet in one e-graph: 0 is
# 3 // -4, -2 // 12, 0 % 3 ..., and x // 7 == 0 for x < 7 put x // k for every k into the
# class of 0; (x // b) // c -> x // (b*c) then matched those e-nodes pairwise, each step
# more (5 steps: 30,000 e-nodes, 20 s; in a chunk of 16: 11.7 million matches in a step)
PILE = ["%0 = (mul 5 (and (range 0 60) 3)) (xor (add (mod (idiv %0 24) -2) (mul (idiv %0 -48) "
        "-2)) (neg (idiv (idiv (var c -2 -2) 12) 32)))",
        "%0 = (mod (shr (and 7 100) 4) 64) (sub %0 (mul (idiv %0 -3) -3))",
        "(idiv (idiv (mod (idiv (idiv 3 -4) (add (range 0 8) (range 1 6))) 14) 7) 12)"]


def test_a_class_that_holds_a_constant_keeps_only_it() -> None:
    """The operator e-nodes of a class that holds a constant are subsumed: they no
    longer feed the rules, and the run stays small."""
    from eqsat.engines.egraph import optimize_many as egraph_many

    graphs = [parse(t) for t in PILE]
    t = time.perf_counter()
    outs, st = egraph_many(graphs, cost_model="reference",
                           budget=Limits(iterations=5, enodes=60_000, seconds=60.0, stall=0))
    assert time.perf_counter() - t < 5.0 and st["enodes_peak"] < 2_000, st["per_iteration"]
    for g, o in zip(graphs, outs, strict=True):
        assert check_equivalent(g, o, samples=300)


@given(st.dictionaries(st.sampled_from(["Add", "Cst", "Floordiv", "Floormod", "Lt", "Mul",
                                        "Neg", "Not", "Sub", "Where", "Max", "And"]),
                       st.integers(0, 40), max_size=12))
def test_the_bound_from_the_rows_is_the_sum_over_every_multiplying_rule(rows) -> None:
    """``Run.apriori`` (each distinct bound once, times the rules sharing it) is the sum of
    ``Run.bound`` over every multiplying rule."""
    prog = session_for(None).program
    run = Run.__new__(Run)
    run.program, run._rows = prog, lambda: rows
    bases = ["native", "native_fixed"]
    assert prog.mult["native"]
    every = sum(run.bound(i, rows) for b in bases for i, _ in prog.mult.get(b, ()))
    assert run.apriori(bases) == every
