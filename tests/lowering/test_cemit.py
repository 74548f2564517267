"""C emission (lowering/cemit.py): signature, literals, operators, division-free output."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from eqsat import dtypes, parse
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import LoweringError, Target, compile_kernel, lower, lower_graph
from lowering.cemit import c_literal, render_c


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


def body(src: str) -> str:
    """The kernel function only (helpers and includes removed)."""
    return src[src.index(" kernel("):]


# ---- signature ----------------------------------------------------------------------------------
def test_signature_slot_order_restrict_const_and_vars() -> None:
    g = parse("""
    %o = (buffer 2 i32 8)
    %a = (buffer 0 f32 8)
    %r = (range 0 8)
    (sink (end (store (index %o %r) (add (cast i32 (load (index %a %r)))
                                          (cast i32 (add (var zeta 0 3) (var alpha 0 3))))) %r))
    """)
    low = lower_graph(g)
    proto = low.c_source.splitlines()[[i for i, ln in enumerate(low.c_source.splitlines())
                                       if " kernel(" in ln][0]]
    assert proto == ("void kernel(const float* restrict data0, int32_t* restrict data2, "
                     "int64_t var_alpha, int64_t var_zeta) {")
    sig = low.signature
    assert [s for s, _, _ in sig.buffers] == [0, 2] and sig.written == {2}
    assert sig.variables == [("alpha", 0, 3), ("zeta", 0, 3)]


def test_kernel_name_must_be_an_identifier() -> None:
    with pytest.raises(LoweringError, match="identifier"):
        lower_graph(parse("(add (var x 0 3) 1)"), name="my kernel")


# ---- literals -------------------------------------------------------------------------------
LITERALS = [
    ("i32", -(1 << 31)), ("i32", (1 << 31) - 1), ("i32", -7), ("i64", -(1 << 63)),
    ("i64", (1 << 63) - 1), ("u32", (1 << 32) - 1), ("u64", (1 << 64) - 1), ("i8", -128),
    ("u8", 255), ("i16", -32768), ("u16", 65535), ("bool", True), ("bool", False),
    ("f32", 0.1), ("f32", -0.0), ("f32", 1e-45), ("f32", 3.4028234663852886e38),
    ("f32", math.inf), ("f32", -math.inf), ("f64", 0.1), ("f64", 5e-324), ("f64", -math.inf),
    ("f64", 1e300),
]


def test_literals_compile_to_their_exact_values(cache) -> None:
    """One expression kernel per literal; the C value comes back bit for bit."""
    for name, v in LITERALS:
        dt = dtypes.parse(name)
        k = compile_kernel(UOp.const(dt, v), optimize=False, cache_dir=cache)
        got = k()
        if dt.is_float:
            want = np.array(v, dtype=np.float32 if name == "f32" else np.float64)
            assert np.array(got, want.dtype).tobytes() == want.tobytes(), (name, v, got)
        else:
            assert got == v, (name, v, got)
    nan = compile_kernel(UOp.const(dtypes.f32, math.nan), optimize=False, cache_dir=cache)()
    assert math.isnan(nan)


def test_c_literal_forms() -> None:
    assert c_literal(-(1 << 31), dtypes.i32) == "(-2147483647-1)"
    assert c_literal(5, dtypes.i64) == "5LL"
    assert c_literal(1.5, dtypes.f32) == "1.5f"
    assert c_literal(math.inf, dtypes.f64) == "__builtin_inf()"
    assert c_literal(7, dtypes.u8) == "((uint8_t)7)"


# ---- division-free output ------------------------------------------------------------------------
SEED_003_TILED = """
%buf = (buffer 0 f32 32)
%in = (buffer 1 f32 32)
%r3 = (range 3 4)
%r4 = (range 4 2)
%r2 = (range 2 4)
%x = (add (add (mul %r3 8) (mul %r4 4)) %r2)
%i = (add (mul (idiv %x 8) 8) (mod %x 8))
(sink (end (store (index %buf %i) (load (index %in %i))) %r3 %r4 %r2))
"""


@pytest.mark.parametrize("optimize", ["baseline", True])
def test_seed_003_tiled_example_is_division_free_once_optimized(optimize) -> None:
    g = parse(SEED_003_TILED)
    src = lower(g, emit="c", optimize=optimize)
    assert "/" not in src and "%" not in src
    low = lower_graph(g, optimize=optimize)  # the index math itself simplified
    assert not any(u.op in (Ops.IDIV, Ops.MOD, Ops.MULHI, Ops.SHR, Ops.AND)
                   for u in low.graph.toposort()), low.graph


def test_constant_divisions_never_reach_c() -> None:
    """Unoptimized, the late decompositions still leave no / or % for constant divisors."""
    src = lower(parse(SEED_003_TILED), emit="c", optimize=False)
    assert "/" not in src and "%" not in src
    plain = lower(parse(SEED_003_TILED), emit="c", optimize=False,
                  target=Target(fast_div=False))
    assert "/" not in body(plain)  # all divisors are powers of two: shifts and masks
    seven = lower(parse("(add (idiv (var x -50 50) 7) (mod (var x -50 50) 7))"), optimize=False,
                  target=Target(fast_div=False))
    assert "/" in body(seven) and "%" in body(seven)


def test_variable_divisor_uses_the_safe_helper(cache) -> None:
    g = parse("(idiv (var x -100 100) (var y -5 5))")
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    assert "eqsat_idiv_i32" in k.c_source
    for x, y in ((7, 2), (-7, 2), (7, -2), (-100, -1), (5, 0)):
        assert k(x=x, y=y) == (0 if y == 0 else int(x / y))  # 0 for the undefined y == 0


# ---- operators -----------------------------------------------------------------------------------
def test_float_max_min_propagate_nan(cache) -> None:
    x = UOp.buffer(1, dtypes.f32, 4)
    out = UOp.buffer(0, dtypes.f32, 8)
    r = UOp.range(4, 0)
    a = UOp(Ops.LOAD, dtypes.f32, (UOp(Ops.INDEX, x.dtype, (x, r)),))
    b = UOp.const(dtypes.f32, 1.0)
    st1 = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, r)), a.maximum(b)))
    st2 = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, r + 4)),
                                       UOp(Ops.MIN, dtypes.f32, (b, a))))
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void,
                                        (UOp(Ops.SINK, dtypes.void, (st1, st2)), r)),))
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    xs = np.array([np.nan, 0.5, 2.0, -np.inf], np.float32)
    o = np.zeros(8, np.float32)
    k(o, xs)
    np.testing.assert_array_equal(o[:4], np.maximum(xs, np.float32(1.0)))
    np.testing.assert_array_equal(o[4:], np.minimum(np.float32(1.0), xs))


def test_unsupported_op_names_the_op() -> None:
    w = UOp(Ops.WMMA, dtypes.f32, (UOp.const(dtypes.f32, 1.0),))
    with pytest.raises(LoweringError, match="WMMA"):
        render_c([w])
    with pytest.raises(LoweringError, match="bf16"):
        lower_graph(UOp.const(dtypes.bf16, 1.0))
    with pytest.raises(LoweringError, match="sqrt on i32"):
        lower_graph(UOp(Ops.SQRT, dtypes.i32, (UOp(Ops.DEFINE_VAR, dtypes.index, (),
                                                     ("x", 0, 4)).cast(dtypes.i32),)))


def test_c_is_indented_and_comment_free() -> None:
    src = lower(parse(SEED_003_TILED), optimize=False)
    b = body(src)
    assert "/*" not in b and "//" not in b
    loops = [ln for ln in b.splitlines() if ln.lstrip().startswith("for (")]
    assert [len(ln) - len(ln.lstrip()) for ln in loops] == [2, 4, 6]
    assert re.search(r"for \(int32_t ridx3 = 0; ridx3 < 4; ridx3\+\+\)", b)
