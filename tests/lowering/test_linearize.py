"""Control flow, linearization order and IF/ENDIF (lowering/linearize.py)."""

from __future__ import annotations

from eqsat import dtypes, parse
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import (
    PRIORITY,
    Target,
    add_control_flow,
    add_if_endif,
    decompose,
    final_rewrite,
    linearize,
    lower_graph,
    narrow_index,
    prepare,
)
from lowering.linearize import check_structure, format_linear


def lin(text_or_graph, predicated: bool = True) -> list[UOp]:
    g = parse(text_or_graph) if isinstance(text_or_graph, str) else text_or_graph
    return lower_graph(g, target=Target(predicated_stores=predicated)).linear


def pos(linear: list[UOp], pred) -> list[int]:
    return [i for i, u in enumerate(linear) if pred(u)]


def first(linear, op, arg=...) -> int:
    return pos(linear, lambda u: u.op is op and (arg is ... or u.arg == arg))[0]


def end_of(linear, rid: int) -> int:
    return pos(linear, lambda u: u.op is Ops.END and u.src[1].arg == rid)[0]


TRANSPOSE = """
%out = (buffer 0 f32 60)
%in  = (buffer 1 f32 60)
%r   = (range 0 60)
(sink (end (store (index %out %r) (load (index %in (add (mul (mod %r 10) 6) (idiv %r 10))))) %r))
"""

NESTED = """
%out = (buffer 0 f32 200)
%in  = (buffer 1 f32 200)
%n   = (var n 1 10)
%i   = (range 0 10)
%j   = (range 1 20)
%base = (mul %i (mul %n 2))
(sink (end (store (index %out (add (mul %i 20) %j))
                  (mul (load (index %in (add (mul %i 20) %j))) (cast f32 %base))) %i %j))
"""


def test_priority_table_matches_the_seed() -> None:
    assert PRIORITY == {Ops.DEFINE_GLOBAL: -20, Ops.DEFINE_VAR: -19, Ops.DEFINE_LOCAL: -18,
                        Ops.DEFINE_REG: -17, Ops.CONST: -10, Ops.END: -5, Ops.LOAD: -1,
                        Ops.STORE: 1, Ops.RANGE: 5}


def test_defines_first_then_consts_then_loop() -> None:
    linear = lin(TRANSPOSE)
    kinds = [u.op for u in linear]
    assert kinds[:2] == [Ops.DEFINE_GLOBAL, Ops.DEFINE_GLOBAL]
    assert [u.arg[0] for u in linear[:2]] == [0, 1]
    r = first(linear, Ops.RANGE)
    assert all(u.op is Ops.CONST for u in linear[2:r])  # constants before the loop
    assert kinds[-2:] == [Ops.END, Ops.SINK]
    load, store = first(linear, Ops.LOAD), first(linear, Ops.STORE)
    assert r < load < store < end_of(linear, 0)


def test_run_count_hoists_loop_invariant_work() -> None:
    linear = lin(NESTED)
    ri, rj = first(linear, Ops.RANGE, 0), first(linear, Ops.RANGE, 1)
    assert first(linear, Ops.DEFINE_VAR) < ri < rj < end_of(linear, 1) < end_of(linear, 0)
    # n*2 runs once: before both loops; i*(n*2) depends on i only: between the RANGEs
    n2 = pos(linear, lambda u: u.op in (Ops.MUL, Ops.SHL) and any(
        s.op is Ops.DEFINE_VAR for s in u.src))
    assert n2 and n2[0] < ri
    ibase = pos(linear, lambda u: u.op is Ops.MUL and any(s.op is Ops.RANGE and s.arg == 0
                                                          for s in u.src) and u.dtype.is_int
                and not any(s.op is Ops.CONST for s in u.src))
    assert ibase and ri < ibase[0] < rj


def test_linearize_is_deterministic() -> None:
    a = [(u.op, u.dtype, u.arg) for u in lin(NESTED)]
    for _ in range(3):
        assert [(u.op, u.dtype, u.arg) for u in lin(NESTED)] == a


SIBLINGS = """
%a = (buffer 0 f32 8)
%b = (buffer 1 f32 8)
%c = (buffer 2 f32 8)
%r = (range 0 8)
%s = (range 1 8)
%t = (range 2 8)
(sink (end (store (index %a %r) 1.0) %r)
      (end (store (index %b %s) (load (index %a %s))) %s)
      (end (store (index %c %t) (load (index %b %t))) %t))
"""


def test_siblings_run_in_sink_order_and_never_interleave() -> None:
    linear = lin(SIBLINGS)
    spans = [(first(linear, Ops.RANGE, i), end_of(linear, i)) for i in range(3)]
    assert spans == sorted(spans)
    for (_, e1), (r2, _) in zip(spans, spans[1:], strict=False):
        assert e1 < r2  # each loop closes before the next opens
    check_structure(linear)


def test_sibling_edges_recorded() -> None:
    g = prepare(parse(SIBLINGS))[0]
    f = final_rewrite(decompose(narrow_index(g)))
    edges = add_control_flow(f)
    ranges = {u.arg: u for u in f.toposort() if u.op is Ops.RANGE}
    ends = {u.src[1].arg: u for u in f.toposort() if u.op is Ops.END}
    assert ends[0] in edges[ranges[1]] and ends[1] in edges[ranges[2]]


def test_sink_order_for_loop_invariant_loads() -> None:
    """(sink A B): B's load of what A stored stays after A, though it could be hoisted."""
    text = """
    %a = (buffer 0 f32 1)
    %b = (buffer 1 f32 8)
    %r = (range 0 8)
    (sink (store (index %a 0) 5.0) (end (store (index %b %r) (load (index %a 0))) %r))"""
    linear = lin(text)
    st_a = pos(linear, lambda u: u.op is Ops.STORE and u.src[0].src[0].arg[0] == 0)[0]
    assert st_a < first(linear, Ops.LOAD)


def test_nested_written_end_runs_inside_the_outer_loop() -> None:
    """END(X, i) runs X for every i, even when X's inner loop does not use i."""
    text = """
    %o = (buffer 0 f32 4)
    %i = (range 0 3)
    %j = (range 1 4)
    (sink (end (end (store (index %o %j) (add (load (index %o %j)) 1.0)) %j) %i))"""
    linear = lin(text)
    assert first(linear, Ops.RANGE, 0) < first(linear, Ops.RANGE, 1) < end_of(linear, 1) \
        < end_of(linear, 0)


def test_reduce_order_init_loop_read() -> None:
    text = """
    %out = (buffer 0 f32 4)
    %in = (buffer 1 f32 12)
    %i = (range 0 4)
    %j = (range 1 3)
    (sink (end (store (index %out %i) (reduce add (load (index %in (add (mul %i 3) %j))) %j)) %i))
    """
    linear = lin(text)
    reg = first(linear, Ops.DEFINE_REG)
    acc_stores = pos(linear, lambda u: u.op is Ops.STORE and u.src[0].src[0].op is not
                     Ops.DEFINE_GLOBAL)
    ri, rj = first(linear, Ops.RANGE, 0), first(linear, Ops.RANGE, 1)
    out_store = pos(linear, lambda u: u.op is Ops.STORE and u.src[0].src[0].op is
                    Ops.DEFINE_GLOBAL)[0]
    assert reg < ri < acc_stores[0] < rj < acc_stores[1] < end_of(linear, 1) < out_store \
        < end_of(linear, 0)


def test_hoisted_reduce_keeps_init_outside() -> None:
    """A reduce that does not use the outer range is computed once, before the outer loop."""
    text = """
    %out = (buffer 0 f32 4)
    %in = (buffer 1 f32 3)
    %i = (range 0 4)
    %j = (range 1 3)
    (sink (end (store (index %out %i) (reduce add (load (index %in %j)) %j)) %i))"""
    linear = lin(text)
    assert end_of(linear, 1) < first(linear, Ops.RANGE, 0)


# ---- IF/ENDIF ------------------------------------------------------------------------------------
PAD = """
%out = (buffer 0 f32 10)
%in = (buffer 1 f32 6)
%r = (range 0 10)
%v = (and (lt 1 %r) (lt %r 8))
(sink (end (store (index %out (where %v (sub %r 2) (invalid))) (load (index %in (sub %r 2) %v)))
           %r))
"""


def test_if_endif_without_predicated_stores() -> None:
    linear = lin(PAD, predicated=False)
    i_if, i_end = first(linear, Ops.IF), first(linear, Ops.ENDIF)
    st = first(linear, Ops.STORE)
    assert i_if < st < i_end
    assert len(linear[st].src[0].src) == 2  # the store's INDEX lost its gate
    assert linear[i_if].src[0] is linear[first(linear, Ops.LOAD)].src[0].src[2]
    check_structure(linear)


def test_no_if_with_predicated_stores() -> None:
    linear = lin(PAD, predicated=True)
    assert not pos(linear, lambda u: u.op in (Ops.IF, Ops.ENDIF))
    st = linear[first(linear, Ops.STORE)]
    assert len(st.src[0].src) == 3  # the gate stays on the INDEX


def test_if_blocks_merge_for_one_gate() -> None:
    b = UOp.buffer(0, dtypes.i32, 4)
    gate = UOp(Ops.DEFINE_VAR, dtypes.i32, (), ("x", 0, 5)).lt(UOp.const(dtypes.i32, 3))
    stores = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, b.dtype, (b, UOp.const(dtypes.i32, i),
                                                                    gate)),
                                           UOp.const(dtypes.i32, i))) for i in range(3)]
    out = add_if_endif(stores)
    assert [u.op for u in out].count(Ops.IF) == 1 and out[-1].op is Ops.ENDIF


def test_format_linear_one_line_per_instruction() -> None:
    low = lower_graph(parse(TRANSPOSE))
    text = format_linear(low.linear, low.edges)
    lines = text.splitlines()
    assert len(lines) == len(low.linear)
    assert lines[0].startswith("%0") and "define_global" in lines[0]
    assert any("range" in ln for ln in lines) and lines[-1].split()[2] == "sink"


def test_linearize_without_explicit_edges_equals_pipeline() -> None:
    g = final_rewrite(decompose(narrow_index(prepare(parse(NESTED))[0])))
    assert linearize(g) == linearize(g, add_control_flow(g))
