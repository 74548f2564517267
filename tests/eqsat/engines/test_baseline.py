"""The ordered-matcher baseline: composition, stats, soundness, the corpus.

Soundness: every output equivalent to its input (``eqsat.check_equivalent``) on
random index, padded and fixed-width expressions (2,200 hypothesis examples in
all) and on every line of the index-expression corpus.
"""

from __future__ import annotations

import types

import pytest
from hypothesis import HealthCheck, given, settings

import rules
from eqsat import parse, to_sexpr
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.pattern import PatternMatcher, Rule, UPat
from eqsat.ir.uop import UOp
from tests.strategies import fixed_width_exprs, int_exprs, padded_index_exprs

# seed 000's group order (docs/rules.md), verbatim, with the project's floor division group
# (floor_division_patterns) before the div/mod groups
SEED_ORDER = """propagate_invalid fold_invalid_load_store constant_folding_dsl_patterns
vconst_folding_patterns identity_and_zero_patterns commutative_canonicalization
self_folding_dsl_patterns zero_folding_dsl_patterns division_dsl_patterns cast_dsl_patterns
cast_where_dsl_patterns term_combining_dsl_patterns alu_folding_dsl_patterns
floor_division_patterns advanced_division_dsl_patterns div_mod_recombine_dsl_patterns
comparison_dsl_patterns
boolean_dsl_patterns minmax_dsl_patterns where_bound_patterns power_dsl_patterns
negation_dsl_patterns range_based_mod_div_patterns dce_dsl_patterns dead_loop_patterns
after_simplification_patterns pm_move_where_on_load""".split()


# ---------------------------------------------------------------------------
# composition
def test_groups_in_seed_order() -> None:
    assert list(rules.SIMPLE_GROUPS) == SEED_ORDER
    assert list(rules.SYMBOLIC_GROUPS) == SEED_ORDER + ["gep_pushing_patterns"]


def test_matchers_follow_the_group_order() -> None:
    gs = rules.groups()
    want = [r.name for g in SEED_ORDER for r in gs[g]]
    assert [r.name for r in rules.symbolic_simple().rules] == want
    gep = [r.name for r in gs["gep_pushing_patterns"]]
    assert [r.name for r in rules.symbolic().rules] == want + gep
    assert not set(gep) & set(want)


def test_all_rules_named_commented_grouped() -> None:
    rs = rules.all_rules()
    assert len(rs) >= 140
    assert len({r.name for r in rs}) == len(rs)
    gs = rules.groups()
    for r in rs:
        assert r.identity and "->" in r.identity, r.name
        assert r.group in gs and r in gs[r.group], (r.name, r.group)


def test_divmod_groups_come_from_the_divmod_module() -> None:
    from rules import divmod

    for g in ("advanced_division_dsl_patterns", "div_mod_recombine_dsl_patterns",
              "range_based_mod_div_patterns"):
        assert rules.groups()[g] == divmod.GROUPS[g]
    assert rules.groups()["range_based_mod_div_patterns"][-1].name == "fold_divmod_general"


def test_list_rulesets() -> None:
    sets = rules.list_rulesets()
    names = {s.name for s in sets}
    assert set(rules.BASELINE_RULESETS) <= names
    for s in sets:
        assert s.engine in ("baseline", "egraph")
        assert all(r.name and r.identity for r in s.rules)
    by = {s.name: s for s in sets}
    assert len(by["symbolic"].rules) == len(rules.all_rules())


def test_list_rulesets_reads_egraph_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    from rules import minmax

    fake = types.SimpleNamespace(name="max_comm_egraph", identity="max(a,b) -> max(b,a)")
    monkeypatch.setattr(minmax, "EGRAPH", {"minmax_egraph_test": [fake]}, raising=False)
    sets = {s.name: s for s in rules.list_rulesets()}
    assert sets["minmax_egraph_test"].engine == "egraph"
    assert sets["minmax_egraph_test"].rules == (fake,)


def test_unknown_ruleset_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown baseline rule set 'nope'"):
        optimize_baseline(parse("(var x 0 3)"), ["nope"])


def test_rulesets_compose_in_seed_order_whatever_the_order_given() -> None:
    a = rules.matcher(["dce_dsl_patterns", "propagate_invalid"])
    b = rules.matcher(["propagate_invalid", "dce_dsl_patterns"])
    assert a is b and a.rules[0].group == "propagate_invalid"


# ---------------------------------------------------------------------------
# optimize_baseline
def test_seed_cascade_and_stats() -> None:
    out, st = optimize_baseline(parse("(add (mul (add (var x 0 10) 0) 1) (add 3 4))"))
    assert out is parse("(add (var x 0 10) 7)")
    assert st["engine"] == "baseline" and st["stop_reason"] == "fixpoint"
    assert st["matches"] == {"add_zero": 1, "mul_one": 1, "const_fold_add": 1}
    assert list(st["matches"]) == ["add_zero", "const_fold_add", "mul_one"]  # (by name)
    assert st["iterations"] == st["rewrites"] == 3
    assert st["time"]["rewrite"] >= 0


def test_matches_are_per_call() -> None:
    g = parse("(add (var x 0 10) 0)")
    assert optimize_baseline(g)[1]["matches"] == {"add_zero": 1}
    assert optimize_baseline(g)[1]["matches"] == {"add_zero": 1}


def test_matches_also_kept_by_the_matcher() -> None:
    g, pm = parse("(add (var x 0 10) 0)"), rules.matcher(None)
    before = pm.matches["add_zero"]
    optimize_baseline(g)
    assert pm.matches["add_zero"] == before + 1


def test_rewrite_limit_returns_input() -> None:
    g = parse("(sub (add (var x 0 10) 3) 5)")  # x-5 -> x+-5, then (x+3)+-5 -> x+-2
    assert optimize_baseline(g)[0] is parse("(add (var x 0 10) -2)")
    out, st = optimize_baseline(g, limit=1)
    assert st["stop_reason"] == "rewrite_limit" and out is g and "error" in st


def test_not_a_graph() -> None:
    with pytest.raises(TypeError, match="expects a UOp"):
        optimize_baseline("(add 1 2)")  # type: ignore[arg-type]


def test_optimize_api_baseline() -> None:
    from eqsat.api import optimize

    res = optimize(parse("(idiv (add (mul (var x 0 9) 4) (range 0 4)) 4)"), engine="baseline")
    assert res.graph is parse("(var x 0 9)")
    assert res.cost <= res.input_cost and res.stats["engine"] == "baseline"


# ---------------------------------------------------------------------------
# the engine pieces the baseline relies on
def test_compiled_matcher_agrees_with_reference(corpus_lines) -> None:
    nodes = [u for row in corpus_lines[::8] for u in parse(row["expr"]).toposort()]
    for r in rules.all_rules():
        for u in nodes:
            want = [sorted(e.items(), key=lambda kv: kv[0]) for e in r.pattern._match_slow(u, {})]
            got = [sorted(e.items(), key=lambda kv: kv[0]) for e in r.pattern.matcher()(u, {})]
            assert [[(k, id(v)) for k, v in e] for e in got] == \
                [[(k, id(v)) for k, v in e] for e in want], (r.name, to_sexpr(u, compact=True))


def test_rule_params_must_be_bound() -> None:
    with pytest.raises(ValueError, match="parameter 'y' is not bound"):
        Rule("bad", "x -> y", UPat.var("x"), build=lambda y: y)
    with pytest.raises(ValueError, match="guard parameter 'z'"):
        Rule("bad", "x -> x", UPat.var("x"), build=lambda x: x, guard=lambda z: True)


def test_early_reject_keeps_commutative_matches() -> None:
    x = UOp.var("x", 0, 9)
    pm = PatternMatcher(rules.groups()["identity_and_zero_patterns"])
    assert pm.rewrite(0 + x)[0] is x and pm.rewrite(x + 0)[0] is x


# ---------------------------------------------------------------------------
# soundness
def _sound(e: UOp) -> None:
    out, st = optimize_baseline(e)
    assert st["stop_reason"] == "fixpoint", st.get("error")
    eq = check_equivalent(e, out)
    assert eq, f"{to_sexpr(e, compact=True)}\n -> {to_sexpr(out, compact=True)}\n{eq!r}"


_SOUND = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.data_too_large])


@settings(max_examples=1000, **_SOUND)
@given(int_exprs(max_depth=4))
def test_sound_on_index_expressions(e: UOp) -> None:
    _sound(e)


@settings(max_examples=600, **_SOUND)
@given(padded_index_exprs())
def test_sound_on_padded_indices(e: UOp) -> None:
    _sound(e)


@settings(max_examples=600, **_SOUND)
@given(fixed_width_exprs())
def test_sound_on_fixed_width(e: UOp) -> None:
    _sound(e)


def test_corpus_outputs_equivalent_and_within_target(corpus_lines) -> None:
    """Every corpus line: output equivalent to ``expr``; total reference cost within
    5% of tinygrad's (7,730 -> at most 8,116)."""
    from extraction.cost import reference_cost

    bad, total, total_tg = [], 0, 0
    for row in corpus_lines:
        g = parse(row["expr"])
        out, st = optimize_baseline(g)
        if st["stop_reason"] != "fixpoint" or not check_equivalent(g, out):
            bad.append(row["id"])
        total += reference_cost(out)
        total_tg += row["cost_tg"]
    assert not bad, f"inequivalent or looping: {bad}"
    assert total <= 1.05 * total_tg, (total, total_tg)


def _division_chain(depth: int) -> UOp:
    """``(idiv (add (mul E 4) (mul v_i 2)) 2)`` nested ``depth`` deep: every level is
    rewritten (to ``E*2 + v_i``)."""
    e = UOp.var("v0", 0, 100)
    for i in range(depth):
        e = (e * 4 + UOp.var(f"v{i + 1}", 0, 100) * 2) // 2
    return e


def test_the_rewrite_stops_at_its_stop_check() -> None:
    # the check runs before the first node is matched and then every STOP_CHECK_EVERY
    # nodes matched; the reason it returns stops the rewrite
    from eqsat.ir.pattern import RewriteStoppedError, graph_rewrite

    g, pm = _division_chain(12), rules.matcher(None)
    calls: list[int] = []

    def stop_at(n: int):
        def stop() -> str | None:
            calls.append(1)
            return "time" if len(calls) >= n else None
        return stop
    assert graph_rewrite(g, pm, stop=stop_at(10 ** 9)) is graph_rewrite(g, pm)
    assert len(calls) > 2  # (the chain's nodes are matched more than 2 x 32 times)
    checks = len(calls)
    for n in (1, 2, checks):
        calls.clear()
        with pytest.raises(RewriteStoppedError) as e:
            graph_rewrite(g, pm, stop=stop_at(n))
        assert e.value.reason == "time" and len(calls) == n


def test_the_baseline_engine_keeps_its_time_budget() -> None:
    # past the budget's seconds the rewrite stops and the input is the output
    from eqsat.api import Budget, optimize

    g = _division_chain(30)
    r = optimize(g, engine="baseline", budget=Budget(seconds=1e-9))
    assert r.stats["stop_reason"] == "time" and r.graph is g
    r = optimize(g, engine="baseline")
    assert r.stats["stop_reason"] == "fixpoint" and r.cost < r.input_cost


# ---------------------------------------------------------------------------
# deep chains (benchmarks/chains.py's shapes): the rewrite's output, level by level
def _mod_level(e: str, k: int) -> str:  # (the sum's operands sorted)
    return f"(mod (add (var v{k} 0 100) (mul {e} 3)) {7 + k % 5})"


def _where_level(e: str, k: int) -> str:  # (the sum's operands sorted above level 0)
    add = f"{e} (var w0 0 3)" if k == 0 else f"(var w{k} 0 3) {e}"
    return f"(where (lt {e} {k + 50}) (add {add}) {k})"


@pytest.mark.parametrize("shape, level", [("mod", _mod_level), ("where", _where_level)])
@pytest.mark.parametrize("depth", [3, 600])
def test_a_deep_chain_is_rewritten_level_by_level(shape, level, depth) -> None:
    from benchmarks.chains import chain

    want = ["%0 = (var v 0 100)"] + [f"%{k + 1} = {level(f'%{k}', k)}" for k in range(depth)]
    out, stats = optimize_baseline(parse(chain(shape, depth)))
    assert stats["stop_reason"] == "fixpoint" and stats["rewrites"] == depth - (shape == "where")
    assert to_sexpr(out) == to_sexpr(parse("\n".join(want + [f"%{depth}"])))
