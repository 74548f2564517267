"""A run's first step replayed in Python (``eqsat/engines/egraph/pystep.py``): the same
outputs as egglog's step, the queries computing as egglog's do, the mirror's classes."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis.internal.conjecture.data import ConjectureData

import eqsat
from eqsat.engines.egraph import clear_result_cache, pystep
from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.queries import compile_group, compile_query, query_source
from eqsat.ir.sexpr import parse, to_sexpr
from tests.gen_cases import generate
from tests.strategies import int_exprs

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus" / "index-exprs.jsonl"
#: the stats that may differ between the two paths: times, memory, and the matches
#: (egglog counts a rule's matches semi-naively, so its counts depend on the process's
#: earlier runs; the replay counts the first step's)
_LOOSE = ("time", "per_iteration", "rss_growth", "matches")


def _cases() -> list[str]:
    rows = [json.loads(line)["expr"] for line in CORPUS.read_text().splitlines()[:80]]
    rows += [r["expr"] for r in generate(8, 3)]
    for i in range(30):
        data = ConjectureData(random=random.Random(f"pystep:{i}"))
        rows.append(to_sexpr(data.draw(int_exprs()), compact=True))
    return rows


def _run(expr: str) -> tuple[str, dict[str, Any], bool]:
    clear_result_cache()  # (each call runs)
    r = eqsat.optimize(parse(expr), engine="egraph", cost_model="reference")
    times = r.stats["time"]
    replayed = "replay" in times and "egglog" not in times
    stats = {k: v for k, v in r.stats.items() if k not in _LOOSE}
    return to_sexpr(r.graph), stats, replayed


def test_replay_gives_egglogs_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case optimized with the replay and without (egglog's step): the same
    output and stats, byte for byte; and the replay ended some of the runs."""
    replayed = 0
    for expr in _cases():
        monkeypatch.setattr(pystep, "MAX_ROWS", -1)
        want = _run(expr)
        monkeypatch.setattr(pystep, "MAX_ROWS", 400)
        got = _run(expr)
        assert got[:2] == want[:2], expr
        assert not want[2]
        replayed += got[2]
    assert replayed >= 30


# (query, value it binds) -- None: egglog finds no match (an overflow, a division by 0,
# a shift out of range)
I64_CASES = [
    ("(+ 9223372036854775807 1)", None), ("(- -9223372036854775808 1)", None),
    ("(* 4611686018427387904 2)", None), ("(* -3 5)", -15),
    ("(/ -7 2)", -3), ("(/ 7 -2)", -3), ("(/ 7 0)", None), ("(/ -9223372036854775808 -1)", None),
    ("(% -7 2)", -1), ("(% 7 -2)", 1), ("(% 7 0)", None), ("(% -9223372036854775808 -1)", None),
    ("(abs -5)", 5), ("(abs -9223372036854775808)", None),
    ("(<< 3 62)", -4611686018427387904), ("(<< 1 63)", -9223372036854775808),
    ("(<< 1 64)", None), ("(<< 1 -1)", None), ("(>> -7 1)", -4), ("(>> 8 64)", None),
    ("(log2 9)", 3), ("(min -3 4)", -3), ("(max -3 4)", 4), ("(& 6 3)", 2), ("(| 6 3)", 7),
    ("(^ 6 3)", 5),
]


def _egglog_value(expr: str) -> int | None:
    eg = bindings.EGraph()
    prog = (f"(relation R (i64))\n(relation Out (i64))\n(R 1)\n"
            f"(rule ((R z) (= v {expr})) ((Out v)))\n(run 1)")
    eg.run_program(*eg.parse_program(prog))
    rows = eg.freeze().functions["Out"].rows
    return eg.value_to_i64(rows[0].inputs[0]) if rows else None


class _Empty:
    """A mirror with one e-node ``(Cst "index" 1)`` (class 0)."""

    by_ctor = {"Cst": [(("index", 1), 0)]}
    by_class = {0: {"Cst": [("index", 1)]}}
    table = {("Cst", ("index", 1)): 0}
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    defs: set[int] = set()

    @staticmethod
    def find(c: int) -> int:
        return c


@pytest.mark.parametrize("expr,want", I64_CASES)
def test_query_primitives_compute_as_egglogs(expr: str, want: int | None) -> None:
    from eqsat.ir.egglog_text import read

    q = compile_query("t", ["Cst", '"index"', "z"], "e", [["=", "v", read(expr)]], ["v"])
    got = [env["v"] for _f, env in q(_Empty)]
    assert got == ([] if want is None else [want])
    q = compile_query("t", ["Cst", '"index"', "z"], "e", [["=", "v", read(expr)]], ["v"],
                      as_tuple=True)
    assert [vals for _f, vals in q(_Empty)] == [(v,) for v in got]
    assert _egglog_value(expr) == want


def test_a_check_is_emitted_where_its_variables_bind() -> None:
    # (Def y) once the Mul binds y, before the loop over the second child's e-nodes;
    # the bound that binds a variable after the whole pattern
    pattern = ["Add", '"index"', ["Mul", '"index"', "y", "c"], ["Cst", '"index"', "k"]]
    src = compile_query("t", pattern, "e", [["=", "l", ["lo", "y"]], ["Def", "y"]],
                        ["e"]).source
    assert src.index("not in defs") < src.index("'Cst'") < src.index("lo.get")
    assert "by_class = m.by_class" in src and "table = m.table" not in src


# (pattern, guards) of queries rooted at an Add, matched as a group
_GROUP = [
    (["Add", '"index"', "x", ["Cst", '"index"', "c"]], []),
    (["Add", '"index"', ["Mul", '"index"', "y", "k"], "x"], []),
    (["Add", '"index"', "x", "y"], [[">=", ["lo", "x"], "0"]]),
    (["Add", '"index"', "x", "x"], []),
]


def test_a_group_matches_as_its_queries_one_by_one() -> None:
    """``compile_group``: the queries run as one function give each query's matches
    (its place first), in the queries' order: every root, or the roots given per
    level; or what ``emit`` appends."""
    m = pystep.Mirror()
    m.load([(0, "Cst", ("index", 3)), (1, "Leaf", ("RANGE", "index", 0)),
            (2, "Mul", ("index", 1, 0)), (3, "Add", ("index", 1, 0)),
            (4, "Add", ("index", 2, 1)), (5, "Add", ("index", 1, 1)), (1, "#lo", 0)])
    srcs = [query_source(f"q{i}", p, "e", g, ["e", "x"] if i != 1 else ["e", "y"],
                         prefix=f"k{i}_") for i, (p, g) in enumerate(_GROUP)]
    alone = [compile_query(f"q{i}", p, "e", g, ["e", "x"] if i != 1 else ["e", "y"])
             for i, (p, g) in enumerate(_GROUP)]
    group = compile_group(srcs)
    want = [(i, f, env) for i, q in enumerate(alone) for f, env in q(m)]
    assert group(m) == want and len({i for i, _f, _env in want}) == 4
    some = m.by_ctor["Add"][1:]
    roots = {q.levels: some for q in srcs}
    assert group(m, roots) == [(i, f, env) for i, q in enumerate(alone) for f, env in q(m, some)]
    emit = compile_group(srcs, lambda i, q: [f"out.append(({i}, {q.names[0]}))"],
                         by_level=False)
    assert emit(m, some) == [(i, env["e"]) for i, _f, env in group(m, roots)]


def test_a_right_side_makes_its_e_nodes_children_first() -> None:
    from eqsat.ir.egglog_text import read

    m = pystep.Mirror()
    m.load([(0, "Leaf", ("DEFINE_VAR", "index", 0))])
    build = pystep._builder(read('(Add "index" (Mul "index" x (Cst "index" 3)) '
                                 '(Cst "index" -1))'))
    n = pystep.NEW_CLASS
    assert build(m, {"x": 0}) == n + 3
    assert list(m.table.items())[1:] == [
        (("Cst", ("index", 3)), n), (("Mul", ("index", 0, n)), n + 1),
        (("Cst", ("index", -1)), n + 2), (("Add", ("index", n + 1, n + 2)), n + 3)]


def test_the_class_index_is_made_again_after_a_rebuild() -> None:
    m = pystep.Mirror()
    m.load([(0, "Cst", ("index", 3))])
    assert m.by_class == {0: {"Cst": [("index", 3)]}}
    m.load([(1, "Neg", ("index", 0))])
    assert m.by_class[1] == {"Neg": [("index", 0)]} and len(m.by_class) == 2


def test_mirror_closes_classes_under_congruence() -> None:
    # f(a), f(b), a = b: one class of f; the smaller handle names it
    m = pystep.Mirror()
    rows = [(0, "Leaf", ("DEFINE_VAR", "index", 0)), (1, "Leaf", ("DEFINE_VAR", "index", 1)),
            (2, "Neg", ("index", 0)), (3, "Neg", ("index", 1)), (1, "U", 0),
            (0, "#lo", 2), (1, "#hi", 5)]
    m.load(rows)
    assert m.find(3) == m.find(2) == 2 and m.find(1) == 0
    assert len(m.table) == 3 and (m.lo[0], m.hi[0]) == (2, 5)


def test_a_stopped_replay_runs_again_in_egglog(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that meets an e-graph past ``MAX_ENODES`` stops, and the run starts
    again with egglog running its steps: the outputs are egglog's."""
    stopped = []
    init = pystep.ReplayStopped.__init__

    def spy(self: Exception, *args: Any) -> None:
        stopped.append(args)
        init(self, *args)

    monkeypatch.setattr(pystep.ReplayStopped, "__init__", spy)
    for expr in _cases()[:40]:
        monkeypatch.setattr(pystep, "MAX_ROWS", -1)
        want = _run(expr)
        monkeypatch.setattr(pystep, "MAX_ROWS", 400)
        monkeypatch.setattr(pystep, "MAX_ENODES", 40)
        assert _run(expr)[:2] == want[:2], expr
        monkeypatch.setattr(pystep, "MAX_ENODES", 2000)
    assert len(stopped) >= 5


def _run_all(expr: str) -> tuple[str, dict[str, Any]]:
    """The output and every stat but the times of one replayed call."""
    clear_result_cache()
    r = eqsat.optimize(parse(expr), engine="egraph", cost_model="reference")
    return to_sexpr(r.graph), {k: v for k, v in r.stats.items()
                               if k not in ("time", "per_iteration", "rss_growth")}


def test_semi_naive_rounds_give_the_full_rounds_e_graph(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A native round and an analysis that match only where an atom changed (the marks
    the mirror keeps) give what matching everything gives: the same outputs and stats,
    the native matches' counts too; and they do match less."""
    book_round, book_analyse = pystep.RuleBook.round, pystep.RuleBook.analyse
    full = {"on": False}
    changes: list[int] = []  # (log entries since the last round, per round)

    def round_(self: Any, m: pystep.Mirror, *args: Any) -> bool:
        if full["on"]:
            m.native_mark = None  # (every match, as in a run's first round)
        else:
            changes.append(len(m.log) - (m.native_mark or (len(m.log),))[0])
        return book_round(self, m, *args)

    def analyse(self: Any, m: pystep.Mirror, cap: int) -> int:
        if full["on"]:
            m.analysed = None
        return book_analyse(self, m, cap)

    monkeypatch.setattr(pystep.RuleBook, "round", round_)
    monkeypatch.setattr(pystep.RuleBook, "analyse", analyse)
    for expr in _cases()[::2]:
        full["on"] = True
        want = _run_all(expr)
        full["on"] = False
        assert _run_all(expr) == want, expr
    assert 0 in changes  # (a round with no change since the last: it matches nothing)


def test_a_match_found_again_is_not_applied_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A match counted in an earlier round, of a rewrite alone under its name, is not
    applied again: the same outputs and stats (the matches' counts too) as applying
    every match found; and fewer rewrites applied."""
    applied = {True: 0, False: 0}
    alone = {"on": True}
    apply = pystep._Rewrite.apply

    def spy(self: Any, *args: Any) -> None:
        applied[alone["on"]] += 1
        apply(self, *args)

    monkeypatch.setattr(pystep._Rewrite, "apply", spy)
    _run_all(_cases()[0])  # (the rule books built)
    rules = [r for book in list(pystep._BOOKS.values()) for r in book.rewrites()]
    flags = [r.alone for r in rules]
    assert any(flags) and not all(flags)  # (some names are shared by several rewrites)
    for expr in _cases()[::2]:
        alone["on"] = False
        try:
            for r in rules:
                r.alone = False
            want = _run_all(expr)
        finally:
            for r, flag in zip(rules, flags, strict=True):
                r.alone = flag
        alone["on"] = True
        assert _run_all(expr) == want, expr
    assert applied[True] < applied[False]


def test_a_rebuild_without_a_merged_child_keeps_the_keys(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A rebuild re-keys the e-nodes only when a class merged away is a child of one:
    the same outputs and stats as re-keying at every rebuild."""
    def always(m: pystep.Mirror) -> None:
        m.absorbed.add(-1)
        m.kids.add(-1)  # (as if a child had merged: every e-node re-keyed)
        rebuild(m)

    rebuild = pystep.Mirror.rebuild
    cases = _cases()[1::3]
    want = [_run_all(expr) for expr in cases]
    monkeypatch.setattr(pystep.Mirror, "rebuild", always)
    assert [_run_all(expr) for expr in cases] == want


def test_a_rule_group_is_built_when_first_read_the_same_in_any_order() -> None:
    """A rule book builds a group (rewrites or interval rules) when a run first needs
    it; the code is the same whichever group was built first."""
    program = eqsat.session_for(None).program
    a, b = pystep.RuleBook(program), pystep.RuleBook(program)
    keys = [(p, c) for p, groups in a.groups.items() for c in groups]
    assert not any("rules" in a.groups[p][c].__dict__ for p, c in keys)
    assert all(isinstance(f, pystep._IntervalGroup) for f in a.interval_groups.values())
    a.build()
    for p, c in reversed(keys):
        b.groups[p][c].matches  # noqa: B018 (built when read)
    for ctor in reversed(list(b.interval_groups)):
        b.interval_groups[ctor](pystep.Mirror(), [])
    assert [a.groups[p][c].matches.source for p, c in keys] == \
        [b.groups[p][c].matches.source for p, c in keys]
    assert {c: f.source for c, f in a.interval_groups.items()} == \
        {c: f.source for c, f in b.interval_groups.items()}
    # (a group's key, read from its rules' egglog text, is each rule's own root, and a
    # rewrite is alone when no other rewrite of the book counts under its name)
    assert all(r.ctor == c for p, c in keys for r in a.groups[p][c].rules)
    fresh = pystep.RuleBook(program).interval_groups
    assert all(pystep._Interval(n, body, "k_").ctor == ctor
               for ctor, g in fresh.items() for _j, (n, _i, body) in g.rules)
    names = Counter(r.name for r in a.rewrites())
    assert [r.alone for r in a.rewrites()] == [names[r.name] == 1 for r in a.rewrites()]


def test_a_prepared_session_has_every_rule_group_built() -> None:
    session = eqsat.session_for(None)
    session.prepare()
    book = pystep.rule_book(session.program)
    assert all("rules" in g.__dict__ for groups in book.groups.values() for g in groups.values())
    assert not any(isinstance(f, pystep._IntervalGroup) for f in book.interval_groups.values())
    mult = session.program.mult_ctors
    assert set(session.program.mult_bounds) == set(session.program.mult_new) == set(mult)


@pytest.mark.parametrize("rows, table, classes", [
    # new e-nodes and their handles: the keys as loaded, each class its handle
    ([(0, "Cst", ("index", 3)), (1, "Neg", ("index", 0))],
     {("Cst", ("index", 3)): 0, ("Neg", ("index", 0)): 1}, {0: 0, 1: 1}),
    # an e-node loaded again with another handle, a known handle with a new e-node
    ([(0, "Cst", ("index", 3)), (1, "Cst", ("index", 3)), (1, "Neg", ("index", 0))],
     {("Cst", ("index", 3)): 0, ("Neg", ("index", 0)): 0}, {0: 0, 1: 0}),
    # a union of two leaves: the parent e-node re-keyed to the smaller handle
    ([(0, "Cst", ("index", 3)), (1, "Cst", ("index", 4)), (2, "Neg", ("index", 1)),
      (0, "U", 1)],
     {("Cst", ("index", 3)): 0, ("Cst", ("index", 4)): 0, ("Neg", ("index", 0)): 2},
     {0: 0, 1: 0, 2: 2}),
])
def test_mirror_loads_rows_as_recorded(rows: list, table: dict, classes: dict) -> None:
    m = pystep.Mirror()
    m.load(rows)
    assert m.table == table and {k: m.find(k) for k in classes} == classes


def test_table_sizes_count_the_subsumed_rows_too() -> None:
    m = pystep.Mirror()
    m.load([(0, "Cst", ("index", 3)), (1, "Neg", ("index", 0)), (2, "Neg", ("index", 1)),
            ("Neg", ("index", 0))])
    assert m.sub and pystep.table_sizes(m) == {"Cst": 1, "Neg": 2}


def _state(m: pystep.Mirror) -> tuple:
    return (m.table, m.sub, m.lo, m.hi, m.defs, {k: m.find(k) for k in m.parent},
            sorted(m.log), m.by_ctor)


@pytest.mark.parametrize("nodes, facts, subs", [
    ([(0, "Leaf", ("DEFINE_VAR", "index", 0)), (1, "Leaf", ("DEFINE_VAR", "index", 1)),
      (2, "Neg", ("index", 0)), (3, "Neg", ("index", 1)), (1, "U", 0)],
     [(0, "#lo", 2), (1, "#hi", 5), (3, "#hi", 4)], [("Neg", ("index", 1))]),
    ([(0, "Cst", ("index", 3)), (1, "Neg", ("index", 0))], [(1, "#lo", -3)], []),
    ([], [(0, "#lo", 1)], []),
])
def test_rows_given_apart_load_as_one_list(nodes: list, facts: list, subs: list) -> None:
    """``Mirror.load(rows, more_facts, more_subs)`` (``Inserter.take_waiting``'s three
    lists) leaves the mirror as loading them as one list does."""
    one, apart = pystep.Mirror(), pystep.Mirror()
    assert one.load(nodes + facts + subs) == apart.load(nodes, facts, subs)
    assert _state(one) == _state(apart)


def test_the_classes_above_changed_ones_are_those_a_full_walk_finds() -> None:
    """``Mirror.above`` widens each level from the last level's new classes only: the
    same classes as widening from every class of the last level."""
    m = pystep.Mirror()
    m.load([(0, "Leaf", ("DEFINE_VAR", "index", 0)), (1, "Neg", ("index", 0)),
            (2, "Neg", ("index", 1)), (3, "Add", ("index", 2, 0)), (4, "Neg", ("index", 3)),
            (5, "Leaf", ("DEFINE_VAR", "index", 1)), (6, "Add", ("index", 5, 5))])
    at = m.above({0})
    level = {0}
    for i in range(6):
        assert at(i) == level
        level = level | {c for ctor, es in m.by_ctor.items() for f, c in es
                         if any(f[j] in level for j in pystep._E_POS[ctor])}
