"""The counting twins of the multiplying rules on a replayed run: the replay counts
their matches on its mirror (``Run._replayed_counts``, ``RuleBook.count``) and decides
as egglog's twins do, without running the case again in egglog."""

from __future__ import annotations

import math
from typing import Any

import pytest

import eqsat
from benchmarks.stress import FLOORDIV_PARAMS, floordiv_case
from eqsat.api import Budget
from eqsat.engines.egraph import clear_result_cache, pystep, session_for
from eqsat.engines.egraph.run import Run
from eqsat.ir.sexpr import parse, to_sexpr

#: random index expressions (``benchmarks/stress.py``'s ``random_exprs``) whose runs count
#: the twins under the default budget (each count finds no match)
TWINS = (
    ("%0 = (max (add (var a -9 2) 2) (or (range 0 24) 100)) %1 = (add (mul (floordiv %0"
     " 9) 9) (floormod %0 9)) (add (mul (floordiv %1 12) 12) (floormod %1 12))"),
    ("%0 = (add (var b 2 25) 1) (idiv (mod (mul (and (add (range 0 5) (var b 2 25)) (mod"
     " (range 0 5) 4)) (add (mul (floordiv %0 9) 9) (floormod %0 9))) 28) 7)"),
    ("(mul (floordiv (floormod (floordiv (mul (var a -14 3) (var a -14 3)) 24) (mul 5 3))"
     " 5) (floormod (idiv (max (var a -14 3) (var a -14 3)) 8) 16))"),
    ("%0 = (where (or (gt (var a -1 13) 24) (gt 2 (var a -1 13))) (floordiv (floormod"
     " (var a -1 13) (mul 9 2)) 9) (var a -1 13)) (mul (add (mod (idiv %0 -2) 3) (mul"
     " (idiv %0 -6) 3)) (max (add (idiv (var a -1 13) -4) (mod (var a -1 13) 2)) (mul"
     " (idiv (var a -1 13) 7) (var a -1 13))))"),
    ("%0 = (sub (range 0 16) 32) (or (add (idiv (mod (range 0 16) 3) 5) (floormod (mod 6"
     " 2) 12)) (mod (add (mul (floordiv %0 7) 7) (floormod %0 7)) 9))"),
    ("(mul (floormod (idiv (neg (var b 3 9)) 3) (mod (sub (var a -3 20) 100) (floormod 2"
     " 12))) (add (idiv (neg 2) (neg (var a -3 20))) (mul (mod (var b 3 9) -4) (floormod"
     " (floormod (var a -3 20) (mul 12 2)) 12))))"),
    ("%0 = (or (range 1 12) 9) (floormod (floormod (floormod (sub %0 (mul (idiv %0 2) 2))"
     " (mul 12 3)) 12) 6)"),
    ("(mul (sub (floordiv (floormod (floordiv (floordiv (range 0 8) -3) 2) (mul -2 3))"
     " -2) 6) 3)"),
)
#: a floor-division expansion whose sum adds a class of two wheres to itself: four
#: matches of where_combine_consts bind two of them with the same variables
FLOORDIV = floordiv_case(*FLOORDIV_PARAMS[1])

#: random wheres over random conditions, whose e-graph holds a class of two ``Not``s
#: under an ``And`` and ``Or``s: de Morgan's twins count fewer matches than its query
WHERES = ("(mul (max (add (add (max (where (not (lt (var x 0 9) 3)) 8 3) (range 0 8)) (mul"
    " (where (or (or (not (lt (range 0 8) 4)) (not (lt (range 1 5) (var x 0 9)))) (or"
    " (lt (range 1 5) (var x 0 9)) (lt (var x 0 9) 3))) 7 8) (range 0 8))) (mul (max"
    " (where (not (lt (range 0 6) 5)) -1 5) (where (not (lt (range 0 8) 4)) 9 -3)) (mul"
    " (where (not (lt (range 0 8) 4)) 5 9) (var x 0 9)))) (where (or (not (lt (range 1"
    " 5) (var x 0 9))) (and (not (lt (range 0 6) 5)) (not (lt (range 0 6) 5)))) -1 8))"
    " (add (where (not (lt (var x 0 9) 3)) 0 -3) (add (add (max (where (lt (var x 0 9)"
    " 3) 0 -3) (var x 0 9)) (add (where (not (lt (range 0 8) 4)) -3 -3) (where (and (and"
    " (not (lt (var x 0 9) 3)) (not (lt (range 0 6) 5))) (or (lt (range 0 8) 4) (not (lt"
    " (range 1 5) (var x 0 9))))) 3 1))) (mul (add (where (not (lt (range 0 6) 5)) 7 -3)"
    " (where (and (and (lt (range 1 5) (var x 0 9)) (lt (range 0 8) 4)) (lt (range 1 5)"
    " (var x 0 9))) -1 -3)) (max (where (not (lt (range 1 5) (var x 0 9))) 7 -3) (where"
    " (and (or (lt (range 1 5) (var x 0 9)) (lt (var x 0 9) 3)) (or (not (lt (range 0 6)"
    " 5)) (not (lt (var x 0 9) 3)))) 3 0))))))")


def _run(expr: str, budget: Budget | None) -> tuple[str, dict[str, Any], bool]:
    """The output, every stat but the times and the matches (egglog counts a rule's
    matches semi-naively, the replay each match once a run: see test_egraph_pystep.py),
    and whether the replay ran every step."""
    clear_result_cache()
    r = eqsat.optimize(parse(expr), engine="egraph", cost_model="reference", budget=budget)
    times = r.stats["time"]
    stats = {k: v for k, v in r.stats.items()
             if k not in ("time", "per_iteration", "rss_growth", "matches")}
    return to_sexpr(r.graph), stats, "replay" in times and "egglog" not in times


def _admits(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The decisions of ``Run.admit`` from now on (whether the counted rules ran)."""
    out: list[bool] = []
    admit = Run.admit

    def spy(self: Run, bases: list[str], allow: float) -> bool:
        out.append(admit(self, bases, allow))
        return out[-1]

    monkeypatch.setattr(Run, "admit", spy)
    return out


def _stops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reasons of every ``ReplayStopped`` raised from now on."""
    out: list[str] = []
    init = pystep.ReplayStopped.__init__

    def spy(self: Exception, *args: Any) -> None:
        out.append(args[0])
        init(self, *args)

    monkeypatch.setattr(pystep.ReplayStopped, "__init__", spy)
    return out


def _both_ways(monkeypatch: pytest.MonkeyPatch, expr: str, budget: Budget | None
               ) -> tuple[tuple, tuple]:
    """``_run`` with egglog running every step (no replay), then replayed when it may."""
    monkeypatch.setattr(pystep, "MAX_ROWS", -1)
    egglog = _run(expr, budget)
    monkeypatch.setattr(pystep, "MAX_ROWS", 400)
    return egglog, _run(expr, budget)


@pytest.mark.parametrize("expr, budget", [
    *[(e, None) for e in TWINS[:3]],
    (WHERES, Budget(enodes=160, baseline_start=False)),  # (de Morgan counted: admitted)
    (FLOORDIV, Budget(enodes=60)),  # (counted 12 e-nodes: held back)
    (FLOORDIV, Budget(enodes=120)),  # (counted 12, admitted; later counts find none)
])
def test_a_replayed_count_decides_as_the_twins(monkeypatch: pytest.MonkeyPatch, expr: str,
                                                budget: Budget | None) -> None:
    """A case that counts the twins, with egglog running the steps and replayed: the
    same output and stats (``held_back``, the stop, the sizes), and the replay ran
    every step."""
    admits = _admits(monkeypatch)
    want, got = _both_ways(monkeypatch, expr, budget)
    assert admits and not want[2]
    assert got[:2] == want[:2]
    assert got[2]


def test_the_twins_cases_replay_to_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """No case of :data:`TWINS` stops its replay (each counts the twins)."""
    stopped = _stops(monkeypatch)
    for expr in TWINS:
        admits = _admits(monkeypatch)
        assert _run(expr, None)[2] and admits, expr
    assert not stopped


def test_a_later_count_with_matches_runs_in_egglog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step counted (no bound from the rows): a count after the run's first that
    finds matches stops the replay (egglog's twin counts only those with a new row),
    and the run gives egglog's output and stats."""
    monkeypatch.setattr(Run, "apriori", lambda self, bases: math.inf)
    stopped = _stops(monkeypatch)
    expr = "(add (add (where (lt (range 0 8) 4) 1 3) (where (lt (range 0 8) 4) 2 5)) " \
           "(add (where (lt (range 0 8) 4) 3 7) (where (lt (range 0 8) 4) 4 9)))"
    budget = Budget(baseline_start=False)  # (the baseline folds the sums: no step)
    want, got = _both_ways(monkeypatch, expr, budget)
    assert got[:2] == want[:2]
    assert any("later count" in s for s in stopped)


def test_a_count_egglog_makes_of_fewer_matches_runs_in_egglog(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A count past the room of a rule whose twin counts fewer matches than its query
    has (a variable its pattern names once) stops the replay: egglog's output."""
    stopped = _stops(monkeypatch)
    budget = Budget(enodes=60, baseline_start=False)
    want, got = _both_ways(monkeypatch, WHERES, budget)
    assert got[:2] == want[:2]
    assert any("more matches" in s for s in stopped)


def test_the_rules_whose_twins_count_fewer_matches() -> None:
    """The multiplying rules whose patterns name a variable once (a wildcard to egglog)."""
    program = session_for(None).program
    places = pystep.rule_book(program)._twin_places(program)
    assert sorted(g.rules[k].name for g, k, exact in places.values() if not exact) == \
        ["de_morgan_and", "de_morgan_or", "lt_neg_flip_float"]
