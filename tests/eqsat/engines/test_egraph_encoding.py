"""UOp graphs into the e-graph and back: every op and dtype, many roots, sharing."""

from __future__ import annotations

import pytest

from eqsat.engines.egraph import Limits, Session, optimize_many
from eqsat.engines.egraph.encoding import CTORS, ArgTable, Node, dtype_of, uop_ctor
from eqsat.engines.egraph.encoding.snapshot import decode_node
from eqsat.ir.dtype import DType, DTypeError, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from extraction import get_cost_model

KERNEL = """%out = (buffer 0 f32 60)
%in  = (buffer 1 f32 60)
%r   = (range 0 60)
(sink (end (store (index %out %r) (load (index %in (add (mul (mod %r 10) 6) (idiv %r 10))))) %r))"""

GRAPHS = [
    KERNEL,
    "(vectorize (const f32 1.5) (sqrt (const f32 2.0)) (cast f32 (var a 0 3)) "
    "(bitcast f32 (const i32 7)))",
    "(gep (vconst i32 1 2 3 4) 2 1)",
    "(cat (vconst i32 1 2) (vconst i32 3 4))",
    "(add (const index 100000000000000000000000) (var a 0 3))",  # beyond i64: an opaque leaf
    "(where (lt (special gidx 32) 16) (load (index (buffer 0 f16 32) (special gidx 32) "
    "(lt (special gidx 32) 10)) 1.5) nan)",
    "(reduce max (mul (var a -3 3) (range 1 8)) (range 1 8))",
    "(after (add (var a 0 3) 1) (var b 0 2))",
    "(sink (store (index (buffer 0 i8 4) (range 0 4)) (const i8 -7)) "
    "(store (index (buffer 1 u32 4) (range 1 4)) (mulacc (const u32 3) (cast u32 (range 1 4)) "
    "(const u32 4000000000))))",
    "(where (and (not (lt (range 0 10) 2)) (lt (range 0 10) 8)) (add (range 0 10) -2) (invalid))",
    "(add (xor (shl (var x 0 9) 2) (shr (var y 0 99) 1)) (or (var x 0 9) 5))",
    "(max (exp2 (log2 (const f64 8.0))) (fdiv (sin (const f64 -0.0)) (recip (const f64 inf))))",
    "(pow (const f32 2.0) (trunc (neg (const f32 3.5))))",
    "(eq (ne (var x 0 1) 0) (ge (le (var y 0 4) 2) (gt (var z 0 3) 1)))",
]


@pytest.fixture(scope="module")
def plain() -> Session:
    return Session([])  # no rewrites: extraction must give the input back


@pytest.mark.parametrize("text", GRAPHS)
def test_round_trip_is_the_same_hash_consed_graph(plain: Session, text: str) -> None:
    g = parse(text)
    out, stats = plain.run([g], get_cost_model("reference"), Limits())
    assert out[0] is g
    assert stats["stop_reason"] == "saturated"


def test_every_constructor_is_used_by_some_graph() -> None:
    used = {uop_ctor(u) for t in GRAPHS for u in parse(t).toposort()}
    # list cells appear only inside GL (more than four sources)
    assert {"Cst", "Leaf", "G1", "G2", "G3", "Add", "Where", "Cast", "Bitcast"} <= used
    assert used <= set(CTORS)


def test_gl_lists_for_many_sources(plain: Session) -> None:
    r = UOp.range(5, 0)
    g = parse("(sink " + " ".join(f"(store (index (buffer {i} i32 5) (range 0 5)) {i})"
                                  for i in range(7)) + ")")
    assert uop_ctor(g) == "GL" and uop_ctor(r) == "G1"
    out, _ = plain.run([g], get_cost_model("reference"), Limits())
    assert out[0] is g


def test_many_roots_share_one_egraph_and_each_subgraph_once(plain: Session) -> None:
    a = parse("(add (mul (range 0 8) 4) (range 1 4))")
    b = parse("(idiv (add (mul (range 0 8) 4) (range 1 4)) 3)")
    c = parse("(mod (add (mul (range 0 8) 4) (range 1 4)) 5)")
    out, stats = plain.run([a, b, c, a], get_cost_model("reference"), Limits())
    assert out == [a, b, c, a] and out[0] is out[3]
    unique = {id(u) for g in (a, b, c) for u in g.toposort()}
    assert stats["enodes"] == len(unique)  # the shared sum and its leaves inserted once


def test_optimize_many_matches_one_at_a_time() -> None:
    texts = ["(mod (add (mul (range 0 8) 4) (range 1 4)) 32)", "(idiv (range 0 20) 30)",
             "(add (mul (var x 0 9) 2) (mul (var x 0 9) 3))"]
    gs = [parse(t) for t in texts]
    many, _ = optimize_many(gs, cost_model="reference")
    from eqsat.engines.egraph import optimize_egraph

    assert many == [optimize_egraph(g, cost_model="reference")[0] for g in gs]


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="UOp"):
        optimize_many(["(add 1 2)"])  # type: ignore[list-item]


_ARGS = ArgTable()
_K = _ARGS.key(("x", 0, 7))  # (the arg of a DEFINE_VAR leaf)
I = dtypes.index  # noqa: E741

# one line per e-node: its constructor and fields, what the extractor decodes it to
DECODED = [
    ("Cst", ("index", 7), (Ops.CONST, I, 7, ())),
    ("Cst", ("bool", 1), (Ops.CONST, dtypes.bool, True, ())),
    ("Add", ("index", 3, 4), (Ops.ADD, I, None, (3, 4))),
    ("Leaf", ("DEFINE_VAR", "index", _K), (Ops.DEFINE_VAR, I, ("x", 0, 7), ())),
    ("G1", ("RANGE", "index", _K, 3), (Ops.RANGE, I, ("x", 0, 7), (3,))),
    ("G2", ("INDEX", "f32*", _K, 3, 4), (Ops.INDEX, dtypes.f32.ptr_to(), ("x", 0, 7),
                                         (3, 4))),
    ("Leaf", ("CtxVar", "index", _K), None),  # an engine-internal leaf
    ("Cons", (3, 4), None),
    ("Nil", (), None),
]


@pytest.mark.parametrize("ctor, fields, want", DECODED)
def test_an_enode_decodes_to_its_op_dtype_arg_and_children(ctor, fields, want) -> None:
    n = Node(9, ctor, fields)
    assert decode_node(n, _ARGS, None) == want  # type: ignore[arg-type]
    assert n.op is (None if want is None else want[0])


@pytest.mark.parametrize("name", ["index", "i32", "f32x4", "u8*", "bool"])
def test_a_dtype_name_is_parsed_once(name: str) -> None:
    assert dtype_of(name) is dtype_of(name) is DType.parse(name)
    with pytest.raises(DTypeError):
        dtype_of(name + "q")  # (an unknown name: an error each time, never kept)
    with pytest.raises(DTypeError):
        dtype_of(name + "q")
