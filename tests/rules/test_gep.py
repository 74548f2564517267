"""GEP pushing (docs/rules.md, seed 000 §16): only in symbolic(); through ALU ops for Index
dtype only. One line per case; the Index guard has blocked cases."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import optimize, parse, run_kernel, to_sexpr
from eqsat.engines.baseline import optimize_baseline
from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import compile_kernel
from tests.rules._cases import engines_test, never, rewrite_test, simp, untouched_test

A, B, C, D = "(var a 0 9)", "(var b 0 9)", "(var c 0 9)", "(var d 0 9)"
V2 = f"(vectorize {A} {B})"
W2 = f"(vectorize {C} {D})"
# an opaque index vector (no rule takes a LOAD apart)
L4 = "(load (index (buffer 0 indexx4 8) (var i 0 7)))"
FA, FB = "(cast f32 (var a 0 9))", "(cast f32 (var b 0 9))"


POSITIVE = [
    ("gep_of_gep", f"(gep (gep {L4} 3 2 1) 2 0)", f"(gep {L4} 1 3)"),
    ("gep_of_broadcast", f"(gep (vectorize {A} {A} {A} {A}) 2)", A),
    ("gep_of_vectorize", f"(gep (vectorize {A} {B} {C} {D}) 2)", C),
    ("gep_of_vectorize", f"(gep (vectorize {A} {B} {C} {D}) 3 0)", f"(vectorize {D} {A})"),
    ("gep_of_scalar", f"(gep {A} 0)", A),
    ("gep_of_vconst", "(gep (vconst index 5 6 7) 2)", "7"),
    ("gep_of_vconst", "(gep (vconst index 5 6 7) 2 0)", "(vconst index 7 5)"),
    ("gep_of_invalid", "(gep (cast indexx2 (invalid)) 0)", "(invalid)"),
    ("gep_of_invalid", "(gep (cast i32x4 (invalid)) 3 1)", "(cast i32x2 (invalid))"),
    ("gep_of_invalid", "(gep (cast f32x3 (invalid)) 2)", "(cast f32 (invalid))"),
    ("gep_of_invalid", "(gep (cast boolx2 (invalid)) 1 1 0)", "(cast boolx3 (invalid))"),
    ("gep_of_invalid", "(gep (cast indexx4 (invalid)) 2 3)", "(cast indexx2 (invalid))"),
    ("gep_identity", f"(gep {L4} 0 1 2 3)", L4),
    ("gep_through_alu", f"(gep (add {V2} {W2}) 1)", f"(add {B} {D})"),
    ("gep_through_alu", f"(gep (mul {L4} (vconst index 1 2 3 4)) 2)", f"(mul (gep {L4} 2) 3)"),
    ("gep_through_alu", f"(gep (neg {L4}) 0)", f"(neg (gep {L4} 0))"),
    # the index WHERE is split; its bool condition lane is not Index, so it stays a GEP
    ("gep_through_alu", f"(gep (where (lt {V2} {W2}) {V2} {W2}) 0)",
     f"(where (gep (lt {V2} {W2}) 0) {A} {C})"),
    ("gep_of_cat", f"(gep (cat {V2} {W2}) 3)", D),
    ("gep_of_cat", f"(gep (cat {V2} {W2}) 1 2)", f"(vectorize {B} {C})"),
    ("gep_through_cast", f"(gep (cast f32x2 {V2}) 1)", f"(cast f32 {B})"),
    ("gep_through_cast", f"(gep (bitcast f32x4 (cast i32x4 {L4})) 2)",
     f"(bitcast f32 (cast i32 (gep {L4} 2)))"),
    ("gep_through_alu", f"(gep (mulacc {L4} {L4} (vconst index 1 2 3 4)) 3)",
     f"(mulacc (gep {L4} 3) (gep {L4} 3) 4)"),
    ("vectorize_of_geps", f"(vectorize (gep {L4} 0) (gep {L4} 1) (gep {L4} 2) (gep {L4} 3))",
     L4),
    ("vectorize_of_geps", f"(vectorize (gep {L4} 2) (gep {L4} 2))", f"(gep {L4} 2 2)"),
]


test_rewrites = rewrite_test(POSITIVE, expect=parse, equiv=never)


BLOCKED = [
    # float vector math: no GEP pushing through ALU (graph explosion guard)
    f"(gep (add (vectorize {FA} {FB}) (vectorize {FB} {FA})) 0)",
    f"(gep (mul (cast f32x4 {L4}) (cast f32x4 {L4})) 1)",
    # a bool lane of an index comparison is not Index dtype either
    f"(gep (lt {L4} (vconst index 1 2 3 4)) 1)",
]


test_not_pushed_for_non_index = untouched_test("gep_through_alu", BLOCKED)


def test_symbolic_simple_has_no_gep_pushing() -> None:
    text = f"(gep (add {V2} {W2}) 1)"
    _, out, matches = simp(text, "symbolic_simple")
    assert out is parse(text) and not matches


def test_gep_through_unroll() -> None:
    l4 = parse(L4)
    u = UOp(Ops.UNROLL, l4.dtype, (l4,), ((0, 4),))
    out, st = optimize_baseline(u.gep(1))
    assert out is l4.gep(1) and "gep_of_unroll" in st["matches"]


def test_gep_of_const_and_void_and_ptrcat() -> None:
    c = UOp.const(dtypes.index.vec(4), 3).gep(1)
    out, st = optimize_baseline(c)
    assert out is UOp.const(dtypes.index, 3) and "gep_of_const" in st["matches"]
    void = UOp(Ops.NOOP)
    out, st = optimize_baseline(UOp(Ops.GEP, dtypes.void, (void,), (0,)))
    assert out is void and "gep_of_void" in st["matches"]
    bufs = [UOp.buffer(i, dtypes.f32, 8) for i in range(3)]
    pc = UOp(Ops.PTRCAT, bufs[0].dtype, tuple(bufs))
    out, st = optimize_baseline(UOp(Ops.GEP, bufs[0].dtype, (pc,), (1,)))
    assert out is bufs[1] and "gep_of_ptrcat" in st["matches"]


# both engines: a lane of a vector Invalid is Invalid, whatever the arithmetic around it
ENGINES = [
    ("gep_of_invalid", "(gep (cast indexx2 (invalid)) 0)", "(invalid)"),
    ("gep_of_invalid", "(gep (cast i32x4 (invalid)) 1 2)", "(cast i32x2 (invalid))"),
    ("gep_of_invalid", "(gep (cast f32x2 (invalid)) 1)", "(cast f32 (invalid))"),
    ("gep_of_invalid", f"(add (gep (cast indexx2 (invalid)) 0) {A})", "(invalid)"),
    ("gep_of_invalid", f"(gep (add (cast indexx2 (invalid)) {V2}) 1)", "(invalid)"),
    ("gep_of_invalid", "(gep (vectorize (invalid) (invalid)) 1 0)", "(cast indexx2 (invalid))"),
    ("gep_of_invalid", "(load (index (buffer 0 i32 4) (gep (cast indexx2 (invalid)) 1)))",
     "(const i32 0)"),
    # a padded index vector: its lane is the lane's padded index
    ("gep_of_invalid", f"(gep (where (vectorize (lt {A} 5) (lt {B} 5)) {V2} (cast indexx2 "
     "(invalid))) 1)", f"(where (lt {B} 5) {B} (invalid))"),
]

test_engines = engines_test(ENGINES)

_O, _I, _R = "(buffer 0 f32 4)", "(buffer 1 f32 4)", "(range 0 4)"
# kernels reading or writing through a lane of a vector Invalid: both engines fold the
# access (a load reads 0.0, a store writes nothing) and the result lowers and runs as
# the interpreter runs the input
KERNELS = [
    f"(sink (end (store (index {_O} {_R}) (load (index {_I} (gep (cast indexx2 (invalid)) 1))))"
    f" {_R}))",
    f"(sink (end (store (index {_O} {_R}) (load (index {_I} (add {_R} (gep (cast indexx2 "
    f"(invalid)) 0))))) {_R}))",
    f"(sink (end (store (index {_O} {_R}) (load (index {_I} (gep (vectorize (invalid) "
    f"(invalid)) 1)))) {_R}))",
    f"(sink (end (store (index {_O} (gep (add (vectorize {_R} {_R}) (cast indexx2 (invalid)))"
    f" 0)) 1.0) {_R}))",
]


@pytest.mark.parametrize("text", KERNELS)
@pytest.mark.parametrize("engine", ["baseline", "egraph"])
def test_folded_kernel_lowers(text: str, engine: str, tmp_path) -> None:
    g = parse(text)
    out = optimize(g, engine=engine).graph
    assert not any(u.op is Ops.INVALID for u in out.toposort()), to_sexpr(out, compact=True)
    k = compile_kernel(out, optimize=False, cache_dir=tmp_path)
    got = [np.full(4, 7.0, np.float32), np.arange(1, 5, dtype=np.float32)]
    want = run_kernel(g, [a.copy() for a in got])
    k(*got[:len(k.signature.buffers)])  # the folded kernel may no longer read buffer 1
    np.testing.assert_array_equal(got[0], want[0])
