"""The engine's helpers: its program split into commands, the fixed-width rule set."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eqsat.api import optimize
from eqsat.engines.egraph.engine import Session
from eqsat.engines.egraph.program import FIXED_RULESET, fixed_only, needs_fixed_width
from eqsat.engines.egraph.reset import leftover
from eqsat.ir.egglog_text import commands
from eqsat.ir.sexpr import parse, to_sexpr
from rules.native import ERule, int_dt_twins


def test_the_split_agrees_with_egglogs_parser_on_the_session_program() -> None:
    # no command lost or merged: the same commands as egglog's parse of the whole program
    from eqsat.engines.egraph._egglog import bindings
    from eqsat.engines.egraph.analyses import analysis_program
    from eqsat.engines.egraph.encoding import declarations

    s = Session(None)
    text = "\n".join([declarations(), analysis_program("analysis"), "(ruleset native)",
                      *(p for _, p, _ in s.program.programs)])
    cmds = commands(text)
    parsed = bindings.EGraph().parse_program(text)
    assert len(cmds) == len(parsed) > 200
    assert sum(len(bindings.EGraph().parse_program(c)) for c in cmds[::25]) == len(cmds[::25])


def test_fixed_width_rules_form_their_own_rule_set() -> None:
    s = Session(None)
    fixed = [r for r in s.program.native if fixed_only(r)]
    # a FixDt guard, or a variant the rule language marks as of those dtypes (floats too)
    assert fixed and all(r.wide or any("(FixDt " in w for w in r.when) or "(FixDt " in r.query
                         for r in fixed)
    assert any(r.wide and "CONST" in r.lhs for r in fixed)  # a float constant's variant
    assert {r.law for r in fixed} >= {"recombine_divmod_1", "add_const_chain"}
    assert all("(FixDt " not in " ".join(r.when) for r in s.program.native if not fixed_only(r))
    assert FIXED_RULESET == "native_fixed"


# a native rule, and its two egglog rules when it is guarded by IntDt (None: one rule)
TWINS = [
    (ERule("mul_one", "x*1 -> x", "g", "(Mul dt x (Cst dt 1))", "x", ("(IntDt dt)",)),
     ('(= dt "index")',), ("(FixDt dt)",)),
    (ERule("s", "", "g", "(Sub dt x x)", "(Cst dt 0)", ("(IntDt dt)", "(Def x)")),
     ('(= dt "index")', "(Def x)"), ("(FixDt dt)", "(Def x)")),
    # the index twin drops the range check on the guarded variable (any i64 fits index)
    (ERule("ge", "", "g", query="(= e (Ge dt x (Cst dx c))) (IntDt dx) (= c1 (- c 1)) "
           "(>= c1 (dmin dx))", actions="(union e (Lt dt (Cst dx c1) x))"),
     '(= e (Ge dt x (Cst dx c))) (= dx "index") (= c1 (- c 1))',
     "(= e (Ge dt x (Cst dx c))) (FixDt dx) (= c1 (- c 1)) (>= c1 (dmin dx))"),
    (ERule("a", "", "g", "(Add dt x (Cst dt 0))", "x", ('(= dt "index")',)), None, None),
    (ERule("f", "", "g", "(Add dt x y)", "x", ("(FixDt dt)",)), None, None),
]


@pytest.mark.parametrize("rule, index, fixed", TWINS)
def test_int_dt_twins(rule: ERule, index, fixed) -> None:
    twins = int_dt_twins(rule)
    if index is None:
        assert twins is None
        return
    idx, fix = twins
    assert (idx.name, fix.name) == (rule.name, rule.name + "~fixed")
    assert (idx.when, fix.when) == (index, fixed) if rule.lhs else \
        (idx.query, fix.query) == (index, fixed)
    assert fixed_only(fix) and not fixed_only(idx)


@pytest.mark.parametrize("text, rule", [
    ("(mul (var x 0 9) 1)", "mul_one"),
    ("(mul (cast i32 (var x 0 9)) (const i32 1))", "mul_one"),
    ("(sub (cast i16 (var x 0 9)) (cast i16 (var x 0 9)))", "sub_self"),
    ("(ge (var x 0 9) 3)", "ge_const_rhs"),
    ("(ge (cast i32 (var x 0 9)) (const i32 3))", "ge_const_rhs"),
])
def test_an_int_dt_rule_fires_on_index_and_fixed_width_under_its_name(text: str,
                                                                      rule: str) -> None:
    # keep_egraph: the search runs even where the baseline's rewrite already costs 0
    res = optimize(parse(text), cost_model="reference", keep_egraph=True)
    assert res.stats["matches"].get(rule, 0) > 0, res.stats["matches"]
    assert not any(k.endswith("~fixed") for k in res.stats["matches"])


@pytest.mark.parametrize("text, fires", [
    # an index input never runs the fixed-width rule set (its rules could not match)
    ("(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))", False),
    ("(add (mod (cast i32 (var x 0 99)) (const i32 4)) (mul (idiv (cast i32 (var x 0 99)) "
     "(const i32 4)) (const i32 4)))", True),
])
def test_fixed_width_rule_set_runs_only_for_fixed_width_inputs(text: str, fires: bool) -> None:
    res = optimize(parse(text), cost_model="reference")
    native_fired = any(k.startswith("recombine_divmod_") for k in res.stats["matches"])
    assert native_fired is fires, res.stats["matches"]
    assert res.cost <= 4


@pytest.mark.usefixtures("egglog_steps")
def test_session_rebuilds_its_egraph_and_gives_the_same_results(monkeypatch) -> None:
    # egglog's overall run report and union-find grow with every iteration: past
    # REBUILD_ITERATIONS the session starts a fresh e-graph
    from eqsat.engines.egraph import store
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    monkeypatch.setattr(store, "REBUILD_ITERATIONS", 10)
    s = Session(None)
    roots = [parse("(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))"),
             parse("(idiv (add (mul (range 0 32) 8) (range 1 8)) 4)")]
    model = get_cost_model("reference")
    first, _ = s.run(roots, model, Limits(seconds=30.0))
    assert s.store.rebuilds == 1 and s.store.cur.egg_iterations == 0
    old = s.store.egraph
    again, _ = s.run(roots, model, Limits(seconds=30.0))
    assert s.store.rebuilds == 2 and s.store.egraph is not old
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, True]


def test_a_run_leaves_no_cyclic_garbage() -> None:
    # the passes' recursive closures are unbound when they end: a run's snapshots and
    # memo tables are freed by reference counting, not left to the cyclic collector
    import gc

    from eqsat.engines.egraph import optimize_many

    graphs = [parse("(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))"),
              parse("(idiv (add (mul (range 0 32) 8) (range 1 8)) 4)"),
              parse("(where (lt (range 0 10) 5) (add (range 0 10) 1) (const index 0))")]
    optimize_many(graphs)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        optimize_many(graphs)
        gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert kinds == []


@pytest.mark.parametrize("text, needs", [
    ("(add (mod (var x 0 99) 4) (range 0 8))", (False, False)),
    ("(where (lt (var x 0 9) 3) (var x 0 9) 0)", (False, False)),
    ("(add (cast i8 (var x 0 60)) (const i8 1))", (True, True)),
    ("(mul (lt (var x 0 3) 2) (lt (var y 0 3) 2))", (False, True)),  # bool arithmetic
])
def test_needs_fixed_width(text: str, needs: tuple[bool, bool]) -> None:
    assert needs_fixed_width([parse("(var z 0 1)"), parse(text)]) == needs


def test_index_inputs_run_in_an_egraph_without_the_fixed_width_rules() -> None:
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    model, lim = get_cost_model("reference"), Limits(seconds=30.0)
    index = parse("(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))")
    guarded = parse("(where (lt (var x 0 99) 50) (mod (var x 0 99) 4) 0)")
    fixed = parse("(add (mod (cast i32 (var x 0 99)) (const i32 4)) (mul (idiv (cast i32 "
                  "(var x 0 99)) (const i32 4)) (const i32 4)))")
    s = Session(None)
    store = s.store
    assert list(store.egraphs) == ["index"]  # the index-only e-graph, built first
    # plain index arithmetic: the narrow e-graph (keep_egraph: its start, x, costs 0)
    out, _ = s.run([index], model, lim, keep_egraph=True)
    assert sorted(store.egraphs) == ["index", "narrow"] and store.cur.kind == "narrow"
    s.run([guarded], model, lim)
    assert store.cur.kind == "index" and not store.cur.fixed_width
    out_f, st = s.run([fixed], model, lim)  # builds the fixed-width e-graph on first use
    assert sorted(store.egraphs) == ["fixed", "index", "narrow"] and store.cur.fixed_width
    assert any(k.startswith("recombine_divmod_") for k in st["matches"])
    again, _ = s.run([index], model, lim, keep_egraph=True)
    assert store.cur.kind == "narrow" and again[0] is out[0]
    # the index-only e-graph refuses a step over fixed-width nodes
    with s.probe([guarded]) as run:
        run.insert([fixed])
        with pytest.raises(RuntimeError, match="index-only e-graph"):
            run.step(True)


_NARROW_CASES = [
    "(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))",
    "(idiv (add (mul (var x 0 31) 6) (range 0 8)) 6)",
    "(mod (add (mul (var x -5 20) 7) (var y 0 3)) 7)",
    "(add (var x 0 9) (mul (var y 0 9) -1))",
    "(sub (mul (var x 0 9) 3) (neg (var y 0 5)))",
    "(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)",  # a select
    "(add (idiv (var x 0 7) 4) (mod (var x 0 7) 4))",
]


def _same_run(text: str, change: Callable[[], None]) -> tuple[Session, Session]:
    """Two fresh sessions' runs of ``text``, the second after ``change()``: the same
    result, matches and iterations; the two sessions (``keep_egraph``: the search runs
    even where the baseline's rewrite already costs 0)."""
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    model, lim = get_cost_model("reference"), Limits(seconds=30.0)
    first = Session(None)
    out, st = first.run([parse(text)], model, lim, keep_egraph=True)
    change()
    second = Session(None)
    out_2, st_2 = second.run([parse(text)], model, lim, keep_egraph=True)
    assert out[0] is out_2[0]
    assert st["matches"] == st_2["matches"] and st["iterations"] == st_2["iterations"]
    return first, second


@pytest.mark.parametrize("text", _NARROW_CASES)
def test_the_narrow_egraph_gives_what_the_index_egraph_gives(text, monkeypatch) -> None:
    from eqsat.engines.egraph import program

    # every input in the index e-graph the second time
    narrow, index = _same_run(text, lambda: monkeypatch.setattr(program, "NARROW_CTORS",
                                                                frozenset()))
    assert narrow.store.cur.kind in ("narrow", "index")  # (index after a widening)
    assert index.store.cur.kind == "index"


def test_a_narrow_run_makes_a_select_without_widening() -> None:
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    s = Session(None)
    out, st = s.run([parse("(idiv (add (mul (var x 0 3) 4) (var y 0 7)) 12)")],
                    get_cost_model("reference"), Limits(seconds=30.0))
    assert to_sexpr(out[0]) == "(where (lt (add (mul (var x 0 3) 4) (var y 0 7)) 12) 0 1)"
    assert s.store.cur.kind == "narrow" and not st.get("widened") and s.store.widened == 0
    assert st["matches"].get("idiv_two_buckets")


def test_a_narrow_run_that_meets_another_constructor_widens(monkeypatch) -> None:
    from eqsat.engines.egraph import program
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    model, lim = get_cost_model("reference"), Limits(seconds=30.0)
    text = "(add (var x 0 9) (mul (var y 0 9) -1))"  # mul by -1 becomes a negation
    narrow_ctors = program.NARROW_CTORS
    index = Session(None)
    monkeypatch.setattr(program, "NARROW_CTORS", frozenset())
    want, st_i = index.run([parse(text)], model, lim)
    # a narrow e-graph without Neg and Sub: the run widens when one appears (the index
    # run made one)
    monkeypatch.setattr(program, "NARROW_CTORS", narrow_ctors - {"Neg", "Sub"})
    s = Session(None)
    out, st = s.run([parse(text)], model, lim)
    assert st.get("widened") is True and s.store.widened == 1 and s.store.cur.kind == "index"
    assert out[0] is want[0] and st["matches"] == st_i["matches"]


def test_the_insertion_uses_the_selections_toposort_once_and_only_its_roots() -> None:
    s = Session(None)
    g, h = parse("(add (mul (var x 0 9) 3) 1)"), parse("(idiv (var y 0 9) 2)")
    with s.probe([g]) as run:
        assert list(run.orders) == [id(g)]
        run.orders[id(h)] = run.orders[id(g)]  # a stale entry: not h's toposort
        hg, hh = run.insert([g, h])
        assert run.orders == {}
        assert s.ins.handle_uop[hg] is g and s.ins.handle_uop[hh] is h
        assert all(id(u) in s.ins.uop_handle for u in h.toposort())


def test_a_run_leaves_the_egraph_as_built_without_push_or_pop() -> None:
    # the run's rows, subsumed ones included, are deleted when it ends (.reset): every
    # table holds what it held when built, and no fresh e-graph was needed
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    s = Session(None)
    model = get_cost_model("reference")
    # x+0 and x*1 subsume their e-nodes (add_zero, mul_one); the where input runs in the
    # index e-graph, the other in the narrow one; x*0 and (x*4)%2 leave an operator e-node
    # in a class of a constant, which the snapshot subsumes through an RSub row
    texts = ["(add (mul (add (var x 0 9) (const index 0)) (const index 1)) (const index 3))",
             "(where (lt (var x 0 9) (const index 4)) (add (var x 0 9) (const index 0)) "
             "(const index 2))",
             "(add (add (mul (var x 0 9) (const index 0)) (mod (mul (var y 0 9) "
             "(const index 4)) (const index 2))) (mul (var z 0 9) (var w 0 9)))"]
    for text in texts:
        out, stats = s.run([parse(text)], model, Limits(seconds=30.0))
        sizes = dict(s.store.cmd("(print-size)")[-1].sizes)
        assert not leftover(sizes, s.store.cur.base_sizes), text
        assert stats["matches"].get("add_zero"), stats["matches"]
        assert "reset" in stats["time"]
    assert s.store.rebuilds == 0
    # the same input again: the same output (a run does not see the last one's rows)
    again, _ = s.run([parse(texts[0])], model, Limits(seconds=30.0))
    first, _ = Session(None).run([parse(texts[0])], model, Limits(seconds=30.0))
    assert again[0] is first[0]


@pytest.mark.usefixtures("egglog_steps")
def test_a_run_that_raises_leaves_a_fresh_egraph(monkeypatch) -> None:
    from eqsat.engines.egraph import run
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    s = Session(None)
    old = s.store.egraph_of("narrow").egraph

    def boom(*args, **kwargs):
        raise RuntimeError("pass failed")

    monkeypatch.setattr(run, "python_pass", boom)
    with pytest.raises(RuntimeError, match="pass failed"):
        s.run([parse("(add (var x 0 9) (const index 3))")], get_cost_model("reference"),
              Limits(seconds=30.0))
    assert s.store.rebuilds == 1 and s.store.egraphs["narrow"].egraph is not old


_PARTS_CASES = [
    "(where (lt (range 0 8) 7) (add (range 0 8) -3) (invalid))",
    "(add (where (lt (var x 0 9) 5) 2 3) (where (lt (var x 0 9) 5) 1 0))",
    "(lt (add (mul (var x 0 9) 4) (mod (var y 0 9) 4)) 40)",
    "(max (add (var x 0 9) 1) (idiv (var y 0 20) 3))",
]


@pytest.mark.parametrize("text", _PARTS_CASES)
def test_a_step_runs_only_the_rules_whose_constructors_have_rows(text, monkeypatch) -> None:
    from eqsat.engines.egraph.run import Run

    def all_parts(self, rulesets, have=None):
        return tuple(p for rs in rulesets for p, _ in self.program.parts.get(rs, ()))

    # the second time every rule in every step
    s, _ = _same_run(text, lambda: monkeypatch.setattr(Run, "runnable_parts", all_parts))
    parts = {p for rs in s.program.parts.values() for p, _ in rs}
    ran = {p for key in s.store.cur.combined for p in key}
    assert ran and len(ran) < len(parts)  # some rules' constructors never had a row


def test_the_runnable_parts_follow_the_constructors_with_rows(monkeypatch) -> None:
    # (each set twice: the second answer is the one kept for the first)
    from eqsat.engines.egraph.run import Run

    s = Session(None)
    run = Run(s.program, s.store)
    have: set[str] = set()
    monkeypatch.setattr(Run, "have", lambda self: set(have))
    seen = set()
    for ctors in [{"Add", "Cst"}, {"Add", "Cst", "Mul", "Idiv"}, {"Add", "Cst"},
                  {"Add", "Cst", "Mul", "Idiv"}, set()]:
        have = ctors
        want = tuple(p for p, need in s.program.parts["native"] if need <= ctors)
        assert run.runnable_parts(["native"]) == want
        seen.add(want)
    assert len(seen) == 3


def test_egglog_is_loaded_only_for_a_run_that_needs_it() -> None:
    # a replayed run never loads egglog's e-graph; one kept for inspection does, with
    # the same output
    s = Session(None)
    g = parse("(add (mod (idiv (max (var x 0 9) 1) 2) 3) 0)")
    s.prepare([g])  # (a small run: it may replay, nothing loaded ahead)
    from eqsat.engines.egraph.schedules import Limits
    from extraction import get_cost_model

    model, limits = get_cost_model("reference"), Limits.of(None)
    out, _ = s.run([g], model, limits)
    assert not any(e.loaded for e in s.store.egraphs.values())
    kept, _ = s.run([g], model, limits, keep_egraph=True)
    assert s.store.cur.loaded and kept[0] is out[0]
    s.prepare(None)
    assert all(e.loaded for e in s.store.egraphs.values())
