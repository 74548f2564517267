"""The engine's helpers: splitting egglog text into commands, the fixed-width rule set."""

from __future__ import annotations

import pytest

from eqsat.api import optimize
from eqsat.egraph.engine import FIXED_RULESET, Session, fixed_only, top_level_commands
from eqsat.sexpr import parse

# egglog text, its top-level commands
SPLITS: list[tuple[str, list[str]]] = [
    ("", []),
    ("(a)", ["(a)"]),
    ("(a (b c))\n(d)", ["(a (b c))", "(d)"]),
    ('(a "x)" (b))', ['(a "x)" (b))']),                      # a paren inside a string
    ('(e "q\\"(")', ['(e "q\\"(")']),                         # an escaped quote
    ('(e "a\\\\") (f)', ['(e "a\\\\")', "(f)"]),                # an escaped backslash
    ("(a) ; (not a command)\n(b)", ["(a)", "(b)"]),           # a comment
    ('(rule ((= l (lo e))) ((panic "empty (lo > hi)")))',
     ['(rule ((= l (lo e))) ((panic "empty (lo > hi)")))']),
]

BAD: list[tuple[str, str]] = [
    ("(a", "unclosed '(' at line 1"),
    ("(a)\n(b))", "unbalanced ')' at line 2"),
    ('(a "x)', "unterminated string at line 1"),
    ('(a "x\\")', "unterminated string at line 1"),                 # the quote is escaped
]


@pytest.mark.parametrize("text, want", SPLITS)
def test_top_level_commands(text: str, want: list[str]) -> None:
    assert top_level_commands(text) == want


@pytest.mark.parametrize("text, msg", BAD)
def test_top_level_commands_rejects_unbalanced_text(text: str, msg: str) -> None:
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        top_level_commands(text)


def test_the_split_agrees_with_egglogs_parser_on_the_session_program() -> None:
    # no command lost or merged: the same commands as egglog's parse of the whole program
    from eqsat.egraph._egglog import bindings
    from eqsat.egraph.analyses import analysis_program
    from eqsat.egraph.encoding import declarations

    s = Session(None)
    text = "\n".join([declarations(), analysis_program("analysis"), "(ruleset native)",
                      *(r.program("native") for r in s.native)])
    cmds = top_level_commands(text)
    parsed = bindings.EGraph().parse_program(text)
    assert len(cmds) == len(parsed) > 200
    assert sum(len(bindings.EGraph().parse_program(c)) for c in cmds[::25]) == len(cmds[::25])


def test_fixed_width_rules_form_their_own_rule_set() -> None:
    s = Session(None)
    fixed = [r.name for r in s.native if fixed_only(r)]
    assert fixed and all(n.startswith("recombine_divmod_") for n in fixed)
    assert FIXED_RULESET == "native_fixed"


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


def test_session_rebuilds_its_egraph_and_gives_the_same_results(monkeypatch) -> None:
    # egglog's overall run report grows with every iteration and is copied on every
    # push/pop: past REBUILD_ITERATIONS the session starts a fresh e-graph
    from eqsat.egraph import engine
    from eqsat.egraph.schedules import Limits
    from extraction import get_cost_model

    monkeypatch.setattr(engine, "REBUILD_ITERATIONS", 10)
    s = Session(None)
    roots = [parse("(add (mod (var x 0 99) 4) (mul (idiv (var x 0 99) 4) 4))"),
             parse("(idiv (add (mul (range 0 32) 8) (range 1 8)) 4)")]
    model = get_cost_model("reference")
    first, _ = s.run(roots, model, Limits(seconds=30.0))
    assert s.rebuilds == 1 and s.egg_iterations == 0
    old = s.egraph
    again, _ = s.run(roots, model, Limits(seconds=30.0))
    assert s.rebuilds == 2 and s.egraph is not old
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, True]
    # no rebuild when the budget has no room for it
    s.build_seconds = 100.0
    s.run(roots, model, Limits(seconds=30.0))
    assert s.rebuilds == 2 and s.egg_iterations > 10


def test_a_run_leaves_no_cyclic_garbage() -> None:
    # the passes' recursive closures are unbound when they end: a run's snapshots and
    # memo tables are freed by reference counting, not left to the cyclic collector
    import gc

    from eqsat.egraph import optimize_many

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
