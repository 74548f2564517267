"""The snapshot's read cache: rows that did not change since the last snapshot keep their
results (``Inserter.reads``), unless a class they name changed its handle; a ``(pop)``
drops the cache (``Inserter.restore``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import analysis_program
from eqsat.engines.egraph.encoding import ArgTable, Inserter, Snapshot, declarations
from eqsat.engines.egraph.engine import Session
from eqsat.engines.egraph.schedules import Limits
from eqsat.ir.uop import UOp
from extraction import get_cost_model


def _egraph() -> bindings.EGraph:
    eg = bindings.EGraph()
    eg.run_program(*eg.parse_program(declarations() + "\n" + analysis_program()))
    return eg


def _facts(snap: Snapshot) -> dict[str, Any]:
    """Everything a snapshot gives its readers (dicts with their order)."""
    return {"rows": snap.rows, "nodes": [(n.cls, n.ctor, n.fields, n.subsumed, n.kids,
                                          n.dtype) for n in snap.nodes],
            "classes": list(snap.classes.items()), "lo": list(snap.lo.items()),
            "hi": list(snap.hi.items()), "defined": snap.defined,
            "consts": list(snap.consts.items()), "dtypes": list(snap.dtypes.items()),
            "handles": {k: snap.cls_of_handle(k) for k in snap._handle_val},
            "new_handles": snap.new_handles}


def _fresh_read(eg: bindings.EGraph, ins: Inserter) -> Snapshot:
    """A snapshot that reads every row (the read cache set aside, then put back)."""
    reads, cls = ins.reads, ins.read_classes
    ins.reads, ins.read_classes = {}, None
    try:
        return Snapshot(eg, ins)
    finally:
        ins.reads, ins.read_classes = reads, cls


#: one step: ("node", op, a, b) adds ``op(a, b)`` of two existing classes (indices into
#: the handles made so far), ("union", a, b) unions two of them, ("late", j) adds the
#: leaf of a handle allocated at the start: a small handle in a new egglog class, so a
#: union with it may rename an older class that keeps its egglog value
_STEP = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(["Add", "Mul", "Max"]),
              st.integers(0, 63), st.integers(0, 63)),
    st.tuples(st.just("union"), st.integers(0, 63), st.integers(0, 63)),
    st.tuples(st.just("late"), st.integers(0, 3)),
)


def _leaf(ins: Inserter, k: int, i: int) -> None:
    """The leaf ``i`` (a var in [0, 9], never Invalid) in handle ``k``."""
    ins.node_with_handle(k, "Leaf", "DEFINE_VAR", "index", i)
    ins.fact("RLo", (k, 0))
    ins.fact("RHi", (k, 9))
    ins.fact("RDef", (k,))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(_STEP, min_size=1, max_size=8), min_size=2, max_size=6))
def test_reused_rows_read_as_a_fresh_snapshot_reads_them(rounds) -> None:
    # leaves in [0, 9] and monotone ops: every interval is [0, h], a union never empties one
    eg = _egraph()
    ins = Inserter(eg, ArgTable())
    late = [ins.new_handle() for _ in range(4)]
    handles = [ins.new_handle() for _ in range(3)]
    for i, k in enumerate(handles):
        _leaf(ins, k, i)
    for steps in rounds:
        for step in steps:
            if step[0] == "late":
                if late[step[1]] not in handles:
                    _leaf(ins, late[step[1]], 10 + step[1])
                    handles.append(late[step[1]])
            elif step[0] == "node":
                _, op, a, b = step
                handles.append(ins.node(op, "index", handles[a % len(handles)],
                                        handles[b % len(handles)]))
            else:
                _, a, b = step
                ins.union(handles[a % len(handles)], handles[b % len(handles)])
        ins.flush("(run analysis 64)")
        reused = Snapshot(eg, ins)  # with the last snapshot's reads
        assert _facts(reused) == _facts(_fresh_read(eg, ins))
    ins.close()


def test_a_renamed_class_is_read_again() -> None:
    eg = _egraph()
    ins = Inserter(eg, ArgTable())
    k = ins.new_handle()  # the smallest handle, in the newest egglog class
    x, y = (ins.node("Leaf", "DEFINE_VAR", "index", i) for i in range(2))
    s = ins.node("Add", "index", x, y)
    p = ins.node("Mul", "index", s, s)
    ins.flush()
    first = Snapshot(eg, ins)
    assert first.cls_of_handle(s) == s
    ins.node_with_handle(k, "Leaf", "DEFINE_VAR", "index", 9)
    ins.union(k, s)  # the sum's class is named k now; its Mul row may be unchanged
    ins.flush()
    snap = Snapshot(eg, ins)
    assert _facts(snap) == _facts(_fresh_read(eg, ins))
    mul = [n for n in snap.nodes if n.ctor == "Mul"]
    assert [n.kids for n in mul] == [(k, k)]
    assert snap.cls_of_handle(p) == mul[0].cls and snap.cls_of_handle(s) == k
    ins.close()


def test_restore_drops_the_read_cache() -> None:
    eg = _egraph()
    ins = Inserter(eg, ArgTable())
    saved = ins.state()
    ins.node("Leaf", "DEFINE_VAR", "index", 0)
    ins.flush()
    Snapshot(eg, ins)
    assert ins.reads and ins.read_classes is not None
    ins.restore(saved)
    assert ins.reads == {} and ins.read_classes is None and ins.node_cache == {}
    ins.close()


# ---- through the engine: runs in one session pop their e-graph back ----------------
_LIMITS = Limits(iterations=5, enodes=20_000, seconds=600.0, stall=0)


def _graphs(k: int, lo: int, hi: int, m: int) -> list[UOp]:
    x = UOp.var("x", lo, hi)
    y = UOp.var("y", 0, hi // 2)
    return [((x * k + (k - 1)) // k) % m, (x + y * k) // k + (x * k) % m]


def _result(session: Session, graphs: list[UOp]) -> tuple:
    outs, stats = session.run(graphs, get_cost_model("reference"), _LIMITS)
    return tuple(outs), stats["enodes"], stats["classes"], stats["iterations"]


@pytest.fixture(scope="module")
def warm() -> Session:
    return Session(None)


@pytest.mark.parametrize("first, second", [
    ((4, 0, 31, 8), (6, 0, 47, 7)),      # other constants and bounds
    ((4, 0, 31, 8), (4, -16, 31, 8)),    # the same constants, other bounds
])
def test_a_run_after_another_gives_what_a_fresh_session_gives(warm, first, second) -> None:
    warm.run(_graphs(*first), get_cost_model("reference"), _LIMITS)
    got = _result(warm, _graphs(*second))
    assert warm.ins.reads == {} and warm.ins.read_classes is None  # popped: dropped
    assert got == _result(Session(None), _graphs(*second))


def test_analyze_between_runs_leaves_nothing_behind(warm) -> None:
    g = _graphs(6, 0, 47, 7)
    before = _result(warm, g)
    warm.analyze(_graphs(4, -16, 31, 8))
    assert warm.ins.reads == {} and warm.ins.read_classes is None
    assert _result(warm, g) == before


class _Row:
    """A stand-in for egglog's FrozenRow: compares by value, unhashable."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, v: int):
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Row) and self.v == other.v


@pytest.mark.parametrize("new, old, want", [
    ([1, 2, 3, 4], [1, 2, 3, 4], [0, 1, 2, 3]),       # unchanged
    ([1, 3, 4, 9], [1, 2, 3, 4], [0, 2, 3, -1]),      # 2 deleted in place, 9 added at the end
    ([1, 4, 7], [1, 2, 3, 4], [0, 3, -1]),            # two deleted in a row
    ([5, 1, 2], [1, 2], [-1, 0, 1]),                  # a new row first
    ([1, 2, 3, 7, 8], [1, 9, 9, 2, 3], [0, 3, 4, -1, -1]),
    ([], [1], []),
    ([1], [], [-1]),
    # past the lookahead a row counts as new (then it is read again: never wrong)
    ([1, 50], [1] + list(range(100, 120)) + [50], [0, -1]),
])
def test_align_finds_the_rows_kept_from_the_last_snapshot(new: list[int], old: list[int],
                                                          want: list[int]) -> None:
    from eqsat.engines.egraph.encoding import align_rows

    assert align_rows([_Row(v) for v in new], [_Row(v) for v in old]) == want
