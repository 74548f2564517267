"""The Inserter's rows (one RNode relation, facts) and the Snapshot reading them back."""

from __future__ import annotations

import os
from typing import Any

import pytest

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import LATE_RULESET, analysis_program
from eqsat.engines.egraph.encoding import (
    CTORS,
    E_POS,
    NODE_REL,
    ArgTable,
    Inserter,
    Snapshot,
    declarations,
    write_file,
)
from eqsat.engines.egraph.encoding.inserter import FACT_ROWS
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

#: one e-node of every constructor: (ctor, fields with children as indices into the
#: handles made so far)
NODES: list[tuple[str, tuple[Any, ...]]] = [
    ("Cst", ("index", 7)),
    ("Cst", ("bool", True)),
    ("Leaf", ("DEFINE_VAR", "index", 3)),
    ("Neg", ("index", 0)),
    ("Add", ("index", 0, 2)),
    ("Where", ("index", 1, 0, 2)),
    ("Cast", ("i32", 3)),
    ("Bitcast", ("f32", 6)),
    ("G1", ("RANGE", "index", 0, 0)),
    ("G2", ("INDEX", "f32*", 1, 2, 0)),
    ("G3", ("INDEX", "f32*", 1, 2, 0, 1)),
    ("G4", ("VECTORIZE", "indexx4", 0, 0, 2, 3, 4)),
    ("Nil", ()),
    ("Cons", (0, 12)),
    ("GL", ("SINK", "void", 0, 13)),
]


def _egraph() -> bindings.EGraph:
    eg = bindings.EGraph()
    eg.run_program(*eg.parse_program(declarations() + "\n" + analysis_program()))
    return eg


def _record(ins: Inserter) -> list[int]:
    handles: list[int] = []
    for ctor, fields in NODES:
        sig = CTORS[ctor]
        args = [handles[f] if ch == "E" else f for f, ch in zip(fields, sig, strict=True)]
        handles.append(ins.node(ctor, *args))
    return handles


def _reference_rows(eg: bindings.EGraph) -> set[tuple]:
    """Every constructor row of the e-graph as (class, ctor, fields), read one field at
    a time (the snapshot's reading done the slow, obvious way)."""
    fr = eg.freeze().functions
    name: dict[Any, int] = {}
    for r in fr["H"].rows:
        k = eg.value_to_i64(r.inputs[0])
        name[r.output] = min(k, name.get(r.output, k))
    out = set()
    for ctor, sig in CTORS.items():
        for r in fr[ctor].rows:
            fields = tuple(name[v] if ch == "E" else eg.value_to_string(v) if ch == "S"
                           else eg.value_to_i64(v) for v, ch in zip(r.inputs, sig, strict=True))
            out.add((name[r.output], ctor, fields))
    return out


def test_every_signature_is_in_the_test_table() -> None:
    assert {CTORS[c] for c, _ in NODES} == set(CTORS.values())


@pytest.mark.parametrize("ctor", sorted(CTORS))
def test_node_row_columns(ctor: str) -> None:
    sig = CTORS[ctor]
    fields = [f"s{i}" if ch == "S" else 42 if ch == "I" else 100 + i
              for i, ch in enumerate(sig)]
    ins = Inserter(_egraph(), ArgTable())
    k = ins.node(ctor, *fields)
    (line,) = ins.lines(NODE_REL)
    cols = line.split("\t")
    strs = [f for f, ch in zip(fields, sig, strict=True) if ch == "S"]
    kids = [str(f) for f, ch in zip(fields, sig, strict=True) if ch == "E"]
    assert cols[:2] == [str(k), ctor]
    assert cols[2:4] == strs + [""] * (2 - len(strs))
    assert cols[4] == ("42" if "I" in sig else "0")
    assert cols[5:] == kids + ["0"] * (4 - len(kids))
    assert ins.node(ctor, *fields) == k and len(ins.lines(NODE_REL)) == 1  # memoized
    ins.close()


def test_one_node_relation_for_every_constructor_and_union(tmp_path) -> None:
    ins = Inserter(_egraph(), ArgTable(), workdir=str(tmp_path))
    h = _record(ins)
    ins.union(h[0], h[4])
    assert set(ins._rows) == {NODE_REL}
    lines = ins.lines(NODE_REL)
    assert len(lines) == len(NODES) + 1 == ins.pending
    assert all(len(line.split("\t")) == 9 for line in lines)
    assert lines[0] == f"{h[0]}\tCst\tindex\t\t7\t0\t0\t0\t0"
    assert lines[1] == f"{h[1]}\tCst\tbool\t\t1\t0\t0\t0\t0"  # a bool as 0/1
    assert lines[4] == f"{h[4]}\tAdd\tindex\t\t0\t{h[0]}\t{h[2]}\t0\t0"
    assert lines[-1] == f"{h[0]}\tU\t\t\t0\t{h[4]}\t0\t0\t0"
    ins.close()


@pytest.mark.parametrize("ctor, fields, line", [
    ("Add", (5, "index", 1, 2), "5\tAdd\tindex\t\t0\t1\t2\t0\t0"),
    ("Leaf", (5, "SPECIAL", "index", 9), "5\tLeaf\tSPECIAL\tindex\t9\t0\t0\t0\t0"),
    ("Nil", (5,), "5\tNil\t\t\t0\t0\t0\t0\t0"),
    ("U", (5, 6), "5\tU\t\t\t0\t6\t0\t0\t0"),
])
def test_every_node_and_union_row_goes_to_the_node_relation(ctor, fields, line) -> None:
    ins = Inserter(_egraph(), ArgTable())
    if ctor == "U":
        ins.union(*fields)
    else:
        ins.node_with_handle(fields[0], ctor, *fields[1:])
    assert set(ins._rows) == {NODE_REL} and ins.lines(NODE_REL) == [line]
    ins.close()


@pytest.mark.parametrize("rel, fields, line", [
    ("RLo", (3, -5), "3\t#lo\t\t\t-5\t0\t0\t0\t0"),
    ("RHi", (3, True), "3\t#hi\t\t\t1\t0\t0\t0\t0"),
    ("RDef", (4,), "4\t#def\t\t\t0\t0\t0\t0\t0"),
])
def test_the_facts_load_as_tagged_node_rows(rel, fields, line, tmp_path) -> None:
    # one insertion file a load: the fact rows go after the e-node rows, not counted as
    # e-nodes waiting (pending_nodes), but as rows waiting (pending)
    ins = Inserter(_egraph(), ArgTable(), workdir=str(tmp_path))
    ins.union(5, 6)
    ins.fact(rel, fields)
    assert ins.pending_nodes == 1 and ins.pending == 2
    ins.flush()
    written = [(tmp_path / f).read_text() for f in os.listdir(tmp_path)]
    assert written == [f"5\tU\t\t\t0\t6\t0\t0\t0\n{line}\n"]
    ins.close()


def test_an_unknown_fact_relation_is_refused(tmp_path) -> None:
    ins = Inserter(_egraph(), ArgTable(), workdir=str(tmp_path))
    with pytest.raises(ValueError, match="unknown fact relation 'RMid'"):
        ins.fact("RMid", (3, 1))
    assert ins.pending == 0
    ins.close()


def test_flush_loads_every_constructor_and_the_snapshot_reads_it_back(tmp_path) -> None:
    eg = _egraph()
    ins = Inserter(eg, ArgTable(), workdir=str(tmp_path))
    h = _record(ins)
    ins.union(h[0], h[8])  # index 7 and the range: one class
    ins.fact("RLo", (h[2], -3))
    ins.fact("RHi", (h[2], 4))
    ins.flush("(run analysis 8)")
    assert not any(f.endswith(".tsv") and os.path.getsize(tmp_path / f) == 0
                   for f in os.listdir(tmp_path))
    snap = Snapshot(eg, ins)
    assert snap.new_handles == 0
    assert {(r[0], r[1], r[2]) for r in snap.rows} == _reference_rows(eg)
    assert len(snap.nodes) == len(NODES)
    c0 = snap.cls_of_handle(h[0])
    assert c0 == snap.cls_of_handle(h[8]) == min(h[0], h[8])
    assert snap.consts[c0] == 7 and snap.consts[snap.cls_of_handle(h[1])] == 1
    assert snap.bounds(snap.cls_of_handle(h[2])) == (-3, 4)
    assert snap.dtypes[snap.cls_of_handle(h[11])] == "indexx4"
    assert snap.cls_of_handle(h[12]) not in snap.dtypes  # a list cell has no dtype
    assert snap.list_items(snap.cls_of_handle(h[13])) == [c0]
    for n in snap.nodes:
        assert n.kids == tuple(n.fields[i] for i in E_POS[n.ctor])
    ins.close()


def test_snapshot_order_is_sorted_and_classes_are_runs(tmp_path) -> None:
    eg = _egraph()
    ins = Inserter(eg, ArgTable(), workdir=str(tmp_path))
    _record(ins)
    ins.flush()
    snap = Snapshot(eg, ins)
    assert snap.rows == sorted(snap.rows)
    assert [(n.cls, n.ctor, n.fields, n.subsumed) for n in snap.nodes] == snap.rows
    assert list(snap.classes) == sorted(snap.classes)
    for c, idxs in snap.classes.items():
        assert all(snap.nodes[i].cls == c for i in idxs)
    ins.close()


def _facts(ins: Inserter, tag: str) -> dict[str, str]:
    """handle -> value of the fact rows of ``tag`` waiting in ``ins`` (as text)."""
    rows = [line.split("\t") for line in ins.lines(FACT_ROWS)]
    return {r[0]: r[4] for r in rows if r[1] == tag}


def test_facts_of_new_nodes() -> None:
    ins = Inserter(_egraph(), ArgTable())
    x = UOp.var("x", 0, 9)
    g = (x + 1).maximum(UOp.const(dtypes.index, 3))
    h = ins.add_uop_with_facts(g)
    k = ins.uop_handle
    lo, hi = _facts(ins, "#lo"), _facts(ins, "#hi")
    assert (lo[str(h)], hi[str(h)]) == ("3", "10")
    assert (lo[str(k[id(x)])], hi[str(k[id(x)])]) == ("0", "9")
    assert set(_facts(ins, "#def")) == {str(k[id(u)]) for u in g.toposort()}
    before = {r: list(v) for r, v in ins._rows.items()}
    ins.add_uop_with_facts(g)  # nothing new: no rows
    assert ins._rows == before
    ins.close()


def test_no_def_fact_above_an_invalid() -> None:
    ins = Inserter(_egraph(), ArgTable())
    x = UOp.var("x", 0, 9)
    g = x.lt(5).where(x, UOp.invalid())
    ins.add_uop_with_facts(g)
    k = ins.uop_handle
    defs = set(_facts(ins, "#def"))
    assert str(k[id(x)]) in defs and str(k[id(g)]) not in defs
    assert g.op is Ops.WHERE
    ins.close()


@pytest.mark.parametrize("size", [0, 1, 100_000])
def test_write(tmp_path, size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    p = str(tmp_path / "f.tsv")
    write_file(p, b"old contents that are longer" * 10)
    write_file(p, data)
    with open(p, "rb") as f:
        assert f.read() == data


def test_late_bounds_load_after_extra_by_their_own_two_rule_rule_set(tmp_path) -> None:
    """Late bounds (``late_bound``) load between ``extra`` and ``after`` by a run of
    ``insert_late``, which holds the two bound rules only (a run builds every rule of
    its rule set)."""
    prog = analysis_program("analysis")
    late = [line for line in prog.splitlines() if f":ruleset {LATE_RULESET}" in line]
    assert len(late) == 2 and all("(set (lo" in r or "(set (hi" in r for r in late)
    eg = _egraph()
    ins = Inserter(eg, ArgTable(), workdir=str(tmp_path))
    h = _record(ins)
    assert ins.late_bound(h[2], -2, None) == 1 and ins.late_bound(h[2], None, 3) == 1
    out = ins.flush("(run analysis 8)")
    # the rows' insert, the extra run, the late rows' run
    assert sum(type(o).__name__ == "RunScheduleOutput" for o in out) == 3
    assert not ins.has_late and ins.pending == 0
    snap = Snapshot(eg, ins)
    assert snap.bounds(snap.cls_of_handle(h[2])) == (-2, 3)
    ins.close()
