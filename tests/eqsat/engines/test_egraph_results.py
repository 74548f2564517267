"""The e-graph's result cache (eqsat.engines.egraph.results): what it keeps, under
which key, and that a hit is what a fresh run gives."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from eqsat.api import Budget, optimize
from eqsat.engines.egraph import clear_result_cache, set_result_cache_size
from eqsat.engines.egraph.results import CACHE_SIZE, RESULTS, ResultCache, cache_key
from eqsat.engines.egraph.schedules import Limits
from eqsat.ir.sexpr import parse, to_sexpr
from extraction.cost import ReferenceCost

EXPR = "(mod (add (mul (var x 0 100) 4) (var y 0 3)) 4)"
OTHER = "(idiv (add (mul (var x 0 31) 6) 3) 6)"


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_result_cache()
    yield
    set_result_cache_size(CACHE_SIZE)
    clear_result_cache()


def test_a_repeated_call_is_answered_from_the_cache():
    first = optimize(parse(EXPR), cost_model="reference")
    assert "cached" not in first.stats["time"]
    assert first.stats["time_limited"] is False
    again = optimize(parse(EXPR), cost_model="reference")
    assert "cached" in again.stats["time"]
    assert again.graph is first.graph and again.cost == first.cost
    assert again.stats["stop_reason"] == first.stats["stop_reason"]
    assert RESULTS.hits == 1


def test_a_hit_is_what_a_fresh_run_gives():
    cached = optimize(parse(OTHER), cost_model="reference")
    cached = optimize(parse(OTHER), cost_model="reference")
    assert "cached" in cached.stats["time"]
    clear_result_cache()
    fresh = optimize(parse(OTHER), cost_model="reference")
    assert "cached" not in fresh.stats["time"]
    assert fresh.graph is cached.graph and fresh.cost == cached.cost


def test_the_key_holds_budget_cost_model_and_rule_sets():
    g = parse(EXPR)
    ref = cache_key(g, Limits.of(None), None, ReferenceCost())
    assert ref == cache_key(parse(EXPR), Limits.of(None), None, ReferenceCost())
    assert ref != cache_key(g, Limits.of(Budget(iterations=3)), None, ReferenceCost())
    assert ref != cache_key(g, Limits.of(None), ["core"], ReferenceCost())
    from extraction.cost import CpuCost

    assert ref != cache_key(g, Limits.of(None), None, CpuCost())
    optimize(g, cost_model="reference")
    assert "cached" not in optimize(g, cost_model="default").stats["time"]
    assert "cached" not in optimize(g, cost_model="reference",
                                    budget=Budget(iterations=2)).stats["time"]


@dataclass(frozen=True)
class _MyCost(ReferenceCost):
    """A model of another type: never cached, whatever it compares equal to."""


def test_a_model_of_another_type_is_not_cached():
    assert cache_key(parse(EXPR), Limits.of(None), None, _MyCost()) is None
    optimize(parse(EXPR), cost_model=_MyCost())
    assert "cached" not in optimize(parse(EXPR), cost_model=_MyCost()).stats["time"]
    assert len(RESULTS) == 0


def test_a_run_a_clock_cut_short_is_not_kept():
    cache = ResultCache(4)
    g = parse(EXPR)
    key = cache_key(g, Limits.of(None), None, ReferenceCost())
    cache.put(key, g, {"stop_reason": "time", "time_limited": True})
    cache.put(key, g, {"stop_reason": "saturated"})  # (no verdict: not kept)
    assert cache.get(key) is None
    cache.put(key, g, {"stop_reason": "saturated", "time_limited": False})
    out, stats = cache.get(key)
    assert out is g and stats == {"stop_reason": "saturated", "time_limited": False}
    cache.put(key, g, {"time": {"total": 1.0}, "matches": {"r": 1}, "time_limited": False})
    out, stats = cache.get(key)  # (the times left out, in their place: a hit sets its own)
    assert list(stats.items()) == [("time", None), ("matches", {"r": 1}), ("time_limited", False)]


def test_kept_egraph_calls_bypass_the_cache():
    optimize(parse(EXPR), cost_model="reference")
    r = optimize(parse(EXPR), cost_model="reference", keep_egraph=True)
    assert "cached" not in r.stats["time"] and r.egraph is not None


def test_the_cache_is_bounded_least_recently_used():
    cache = ResultCache(2)
    g = parse(EXPR)
    keys = [("a",), ("b",), ("c",)]
    ok = {"time_limited": False}
    cache.put(keys[0], g, ok)
    cache.put(keys[1], g, ok)
    assert cache.get(keys[0]) is not None  # a is now the most recent
    cache.put(keys[2], g, ok)
    assert len(cache) == 2 and cache.get(keys[1]) is None and cache.get(keys[0]) is not None
    cache.resize(0)
    assert len(cache) == 0 and cache.get(keys[0]) is None
    with pytest.raises(ValueError):
        ResultCache(-1)


def test_size_zero_turns_caching_off():
    set_result_cache_size(0)
    optimize(parse(EXPR), cost_model="reference")
    assert "cached" not in optimize(parse(EXPR), cost_model="reference").stats["time"]


def test_a_hit_returns_its_own_stats():
    optimize(parse(EXPR), cost_model="reference")
    a = optimize(parse(EXPR), cost_model="reference")
    a.stats["matches"]["x"] = 1
    b = optimize(parse(EXPR), cost_model="reference")
    assert "x" not in b.stats["matches"]


def test_a_run_stopped_by_its_time_budget_is_not_cached():
    budget = Budget(seconds=1e-4)
    text = f"(add {OTHER} (var y 0 9))"  # (its start costs 1: a run, which the clock stops)
    r = optimize(parse(text), cost_model="reference", budget=budget)
    assert r.stats["stop_reason"] == "time" and r.stats["time_limited"] is True
    again = optimize(parse(text), cost_model="reference", budget=budget)
    assert "cached" not in again.stats["time"] and len(RESULTS) == 0


def test_a_start_that_costs_nothing_is_the_answer_under_any_budget():
    # OTHER's baseline rewrite is x (cost 0): no run, so no clock stops it, and it is kept
    r = optimize(parse(OTHER), cost_model="reference", budget=Budget(seconds=1e-4))
    assert r.stats["stop_reason"] == "optimal" and r.stats["time_limited"] is False
    assert to_sexpr(r.graph) == "(var x 0 31)" and r.stats["seed"]["final"] == 0
    again = optimize(parse(OTHER), cost_model="reference", budget=Budget(seconds=1e-4))
    assert "cached" in again.stats["time"] and again.graph is r.graph


def _chain(n: int) -> str:
    """An expression of exactly ``n`` distinct nodes (n odd, >= 1)."""
    text = "(var x 0 9)"
    for i in range((n - 1) // 2):
        text = f"(add {text} (var y{i} 0 9))"
    return text


def test_a_big_input_is_not_cached() -> None:
    from eqsat.engines.egraph.results import MAX_KEY_NODES
    from extraction import get_cost_model

    model = get_cost_model("reference")
    assert cache_key(parse("(add (var x 0 9) 0)"), None, None, model) is not None
    n = MAX_KEY_NODES + 1 if MAX_KEY_NODES % 2 else MAX_KEY_NODES - 1
    assert len(parse(_chain(n)).toposort()) == n
    assert cache_key(parse(_chain(n)), None, None, model) is not None
    assert cache_key(parse(_chain(n + 2)), None, None, model) is None


def test_the_key_is_the_graph_and_keeps_it_alive() -> None:
    import gc

    model = ReferenceCost()
    key = cache_key(parse(EXPR), Limits.of(None), None, model)
    gc.collect()
    # the key holds the graph: a re-parse is the same interned object, so the same key
    assert key[0] is parse(EXPR)
    assert cache_key(parse(EXPR), Limits.of(None), None, model) == key
    assert cache_key(parse(OTHER), Limits.of(None), None, model) != key


def test_the_cache_is_bounded_in_nodes(monkeypatch) -> None:
    from eqsat.engines.egraph import results

    monkeypatch.setattr(results, "MAX_CACHED_NODES", 22)
    cache = ResultCache(100)
    ok = {"time_limited": False}
    graphs = [parse(_chain(9)), parse(f"(add {_chain(9)} (var z 0 1))"), parse(_chain(11))]
    model = ReferenceCost()
    keys = [cache_key(g, Limits.of(None), None, model) for g in graphs]
    cache.put(keys[0], graphs[0], ok)  # 9 nodes
    cache.put(keys[1], graphs[1], ok)  # 11 more: 20 in all, under 22
    assert len(cache) == 2
    cache.put(keys[2], graphs[2], ok)  # 11 more: 31, the oldest goes (22 left)
    assert len(cache) == 2 and cache.get(keys[0]) is None
    assert cache.get(keys[1]) is not None and cache.get(keys[2]) is not None


def test_a_stats_copy_is_deep() -> None:
    from eqsat.engines.egraph.results import copy_stats

    class Box:
        def __init__(self) -> None:
            self.v = [1]

    stats = {"a": [1, (2, [3])], "b": {"c": {4}}, "d": Box(), "e": "x"}
    c = copy_stats(stats)
    assert c["a"] == stats["a"] and c["a"] is not stats["a"]
    assert c["a"][1][1] is not stats["a"][1][1] and c["b"]["c"] is not stats["b"]["c"]
    assert c["d"] is not stats["d"] and c["d"].v == [1] and c["d"].v is not stats["d"].v


def test_a_stats_copy_shares_only_immutables() -> None:
    from eqsat.engines.egraph.results import copy_stats

    stats = {"a": [1, "x"], "b": {"c": 2.0}, "t": (1, "y"), "u": ((1, 2), [3])}
    c = copy_stats(stats)
    assert c == stats and c["a"] is not stats["a"] and c["b"] is not stats["b"]
    assert c["t"] is stats["t"] and c["u"][0] is stats["u"][0]  # (immutable: shared)
    assert c["u"] is not stats["u"] and c["u"][1] is not stats["u"][1]


@pytest.mark.parametrize("engine", ["baseline", "egraph"])
@pytest.mark.parametrize("model", ["reference", "default"])
def test_the_result_cost_is_the_graph_cost(engine: str, model: str) -> None:
    # an output that is the input itself is priced once (api.optimize); the cost a
    # result reports is its graph's either way
    from extraction import get_cost_model

    m = get_cost_model(model)
    for text in ("(var x 0 5)", EXPR, "(add (var x 0 5) (var y 0 9))"):
        g = parse(text)
        r = optimize(g, engine=engine, cost_model=model)
        assert r.cost == m.graph_cost(r.graph) and r.input_cost == m.graph_cost(g)


@pytest.mark.parametrize("text", [
    "(add (mul (range 0 8) 4) (mod (range 1 4) 4))",
    "%0 = (cast i8 (range 0 16))\n(add (sub (add %0 %0) %0) %0)",
    "(idiv (add (mul (range 0 8) 4) 3) 4)",
    "%0 = (sub (var a -19 5) 8)\n(cast f32 (sub %0 (idiv %0 12)))",
])
@pytest.mark.parametrize("cached", [False, True])
def test_the_costs_the_engine_hands_over_are_the_model_s(text: str, cached: bool) -> None:
    # optimize takes the input and output costs from the engine's stats["costs"]
    import eqsat

    if not cached:
        clear_result_cache()
    model = ReferenceCost()
    g = parse(text)
    r = optimize(g, cost_model=model)
    many = eqsat.optimize_many([g, parse("(add (range 0 4) 0)")], cost_model=model)
    for res, inp in ((r, g), (many[0], g)):
        assert res.input_cost == model.graph_cost(inp)
        assert res.cost == model.graph_cost(res.graph) <= res.input_cost
        assert "costs" not in res.stats


@pytest.mark.parametrize("text", [EXPR, OTHER, "(var x 0 9)", _chain(511),
                                  "(add (mul (var x 0 9) 4) (mul (var x 0 9) 4))"])
def test_the_key_counts_the_graphs_nodes(text: str) -> None:
    g = parse(text)  # (shared subgraphs counted once; each key's count is its node count)
    assert cache_key(g, Limits.of(None), None, ReferenceCost())[-1] == len(g.toposort())
