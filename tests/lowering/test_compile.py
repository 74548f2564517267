"""Compile and run (lowering/compile.py): hand-written kernels against the reference
interpreter and numpy, both store targets, every optimizer setting; argument checks;
the compile cache; expression kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from eqsat import EvalError, dtypes, evaluate, parse, run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import (
    CompileError,
    Kernel,
    LoweringError,
    Target,
    compile_kernel,
    compile_kernels,
    lower,
)
from lowering.compile import compile_c, default_cache_dir, target_flags
from tests.strategies import assignments, fixed_width_exprs, int_exprs, leaf_pools


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


TRANSPOSE = """
%out = (buffer 0 f32 60)
%in  = (buffer 1 f32 60)
%r   = (range 0 60)
(sink (end (store (index %out %r) (load (index %in (add (mul (mod %r 10) 6) (idiv %r 10))))) %r))
"""

# pad a 4x5 image by 1 on every side into 6x7, through one flat loop: a gated load
# (out of the image: 0) and a gated store that skips the last row
GATED_PAD = """
%out = (buffer 0 f32 42)
%in  = (buffer 1 f32 20)
%r   = (range 0 42)
%y   = (idiv %r 7)
%x   = (mod %r 7)
%ok  = (and (and (lt 0 %y) (lt %y 5)) (and (lt 0 %x) (lt %x 6)))
%src = (where %ok (add (mul (sub %y 1) 5) (sub %x 1)) (invalid))
(sink (end (store (index %out (where (lt %r 35) %r (invalid))) (load (index %in %src) -1.0)) %r))
"""

# row sums and row maxima of a 5x7 matrix, and the total (a reduce outside the loop)
REDUCE = """
%sum = (buffer 0 f32 5)
%max = (buffer 1 f32 5)
%tot = (buffer 2 f32 1)
%in  = (buffer 3 f32 35)
%i   = (range 0 5)
%j   = (range 1 7)
%k   = (range 2 35)
%v   = (load (index %in (add (mul %i 7) %j)))
(sink (end (store (index %sum %i) (reduce add %v %j)) %i)
      (end (store (index %max %i) (reduce max %v %j)) %i)
      (store (index %tot 0) (reduce add (load (index %in %k)) %k)))
"""


def _numpy_pad(a: np.ndarray) -> np.ndarray:
    p = np.full((6, 7), -1.0, np.float32)
    p[1:5, 1:6] = a.reshape(4, 5)
    out = p.reshape(-1).copy()
    out[35:] = 0.0  # not stored: the output buffer keeps its zeros
    return out


KERNELS = {
    "transpose": (TRANSPOSE, [(60,)], lambda a: [a.reshape(10, 6).T.reshape(-1)]),
    "gated_pad": (GATED_PAD, [(20,)], lambda a: [_numpy_pad(a)]),
    "reduce": (REDUCE, [(35,)], lambda a: [a.reshape(5, 7).sum(1), a.reshape(5, 7).max(1),
                                             a.sum(keepdims=True)]),
}
OPTIMIZE = [False, "baseline", True]


@pytest.mark.parametrize("predicated", [False, True], ids=["if_endif", "predicated"])
@pytest.mark.parametrize("optimize", OPTIMIZE, ids=["raw", "baseline", "egraph"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_matches_interpreter_and_numpy(name: str, optimize, predicated: bool,
                                              cache) -> None:
    text, in_shapes, ref = KERNELS[name]
    g = parse(text)
    rng = np.random.default_rng(0)
    ins = [rng.uniform(-1, 1, s).astype(np.float32) for s in in_shapes]
    outs = [np.zeros(u.arg[1], np.float32) for u in sorted(
        (u for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg[0])
        ][:-len(ins)]
    k = compile_kernel(g, optimize=optimize, target=Target(predicated_stores=predicated),
                       cache_dir=cache)
    assert ("if (" in k.c_source) == (name == "gated_pad")
    assert any(u.op is Ops.IF for u in k.linear) == (name == "gated_pad" and not predicated)
    got = [o.copy() for o in outs] + [a.copy() for a in ins]
    k(*got)
    want = run_kernel(g, [o.copy() for o in outs] + [a.copy() for a in ins])
    for gv, wv in zip(got, want, strict=True):
        np.testing.assert_allclose(gv, wv, rtol=1e-6, atol=1e-6)
    for gv, nv in zip(got, ref(*ins), strict=False):
        np.testing.assert_allclose(gv, nv, rtol=1e-5, atol=1e-5)


def test_integer_kernel_wraps_like_the_interpreter(cache) -> None:
    g = parse("""
    %o = (buffer 0 i8 16)
    %a = (buffer 1 i8 16)
    %r = (range 0 16)
    %v = (load (index %a %r))
    (sink (end (store (index %o %r) (add (mul %v (const i8 100)) (idiv %v (const i8 -3)))) %r))
    """)
    a = np.arange(-8, 8, dtype=np.int8) * 15
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    o = np.zeros(16, np.int8)
    k(o, a.copy())
    want = run_kernel(g, [np.zeros(16, np.int8), a.copy()])[0]
    np.testing.assert_array_equal(o, want)


def test_symbolic_loop_bound_and_variables(cache) -> None:
    g = parse("""
    %o = (buffer 0 i32 64)
    %n = (var n 1 64)
    %r = (range 0 %n)
    (sink (end (store (index %o %r) (cast i32 (add (mul %r 3) (idiv %n 3)))) %r))""")
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    assert k.signature.variables == [("n", 1, 64)]
    for n in (1, 17, 64):
        o = np.zeros(64, np.int32)
        k(o, n=n)
        want = run_kernel(g, [np.zeros(64, np.int32)], {"n": n})[0]
        np.testing.assert_array_equal(o, want)
        assert (o[n:] == 0).all()


# ---- expression kernels -------------------------------------------------------------------------
def test_expression_kernel_returns_the_value(cache) -> None:
    k = compile_kernel(parse("(add (mod (var x -20 20) 6) (idiv (range 3 10) 4))"),
                       optimize=False, cache_dir=cache)
    assert k.signature.returns is dtypes.i32
    for x in (-20, -7, 0, 13, 20):
        for r in (0, 5, 9):
            assert k(x=x, R3=r) == int(np.fmod(x, 6)) + r // 4


@pytest.mark.parametrize("text", [
    "(add (floordiv (var x -20 20) 6) (floormod (var x -20 20) -4))",
    "(add (floordiv (var x -20 20) 8) (floormod (var x -20 20) 16))",
    "(floordiv (var x -20 20) (or (var y -3 3) 1))",
    "(floormod (var x -20 20) (or (var y -3 3) 1))",
])
def test_floor_division_kernels_floor(text: str, cache) -> None:
    """Floor division and remainder compile to C that floors, as the interpreter does."""
    g = parse(text)
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    for x in range(-20, 21):
        for y in (-3, -1, 1, 3):
            env = {"x": x, "y": y} if "var y" in text else {"x": x}
            assert k(**env) == evaluate(g, env), env


@pytest.mark.parametrize("optimize", [False, "baseline", "egraph"])
def test_parameters_survive_the_optimizer(optimize, cache) -> None:
    """A buffer or variable the optimized program no longer reads is still a parameter:
    the calling convention is the input graph's (here the load is gated off everywhere
    and the variable is multiplied by 0)."""
    g = parse("(sink (end (store (index (buffer 0 i32 4) (range 0 4)) "
              "(add (cast i32 (mul (var n 0 9) 0)) (load (index (buffer 1 i32 4) "
              "(where (lt (range 0 4) 0) (range 0 4) (invalid))) 7))) (range 0 4)))")
    k = compile_kernel(g, optimize=optimize, cache_dir=cache)
    assert [b[0] for b in k.signature.buffers] == [0, 1]
    assert [v[0] for v in k.signature.variables] == ["n"]
    out, inp = np.zeros(4, np.int32), np.arange(4, dtype=np.int32)
    k(out, inp, n=3)
    np.testing.assert_array_equal(out, [7, 7, 7, 7])


def test_expression_kernel_invalid_is_none(cache) -> None:
    k = compile_kernel(parse("(where (lt (var x 0 9) 5) (mul (var x 0 9) 3) (invalid))"),
                       optimize=False, cache_dir=cache)
    assert [k(x=x) for x in range(10)] == [0, 3, 6, 9, 12, None, None, None, None, None]


@pytest.mark.parametrize("text,optimize", [
    ("(invalid)", False),
    ("(gep (cast indexx2 (invalid)) 0)", True),  # the rules fold it to a bare Invalid
    ("(gep (vectorize (invalid) (invalid)) 1)", True),
])
def test_expression_kernel_invalid_everywhere_is_none(text: str, optimize: bool, cache) -> None:
    k = compile_kernel(parse(text), optimize=optimize, cache_dir=cache)
    assert k() is None


# ---- argument checks ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def transpose(cache) -> Kernel:
    return compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=cache)


@pytest.mark.parametrize("args,err,match", [
    (lambda: (np.zeros(60, np.float32),), TypeError, "takes 2 arrays"),
    (lambda: (np.zeros(60, np.float64), np.zeros(60, np.float32)), TypeError, "dtype float64"),
    (lambda: (np.zeros(59, np.float32), np.zeros(60, np.float32)), ValueError, "59 elements"),
    (lambda: (np.zeros(60, np.float32), np.zeros(120, np.float32)[::2]), ValueError,
     "C-contiguous"),
    (lambda: ([0.0] * 60, np.zeros(60, np.float32)), TypeError, "numpy array"),
])
def test_bad_arrays(transpose: Kernel, args, err, match: str) -> None:
    with pytest.raises(err, match=match):
        transpose(*args())


def test_read_only_output_and_aliasing(transpose: Kernel) -> None:
    ro = np.zeros(60, np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        transpose(ro, np.zeros(60, np.float32))
    a = np.zeros(60, np.float32)
    with pytest.raises(ValueError, match="overlap"):
        transpose(a, a)
    transpose(np.zeros(60, np.float32), ro)  # a read-only input is fine


def test_variable_checks(cache) -> None:
    k = compile_kernel(parse("(add (var x 0 9) (var y -3 3))"), optimize=False, cache_dir=cache)
    assert k(x=9, y=-3) == 6
    with pytest.raises(TypeError, match="missing"):
        k(x=1)
    with pytest.raises(TypeError, match="unknown"):
        k(x=1, y=1, z=2)
    with pytest.raises(ValueError, match="outside its declared range"):
        k(x=10, y=0)
    with pytest.raises(TypeError, match="integer"):
        k(x=1.5, y=0)
    assert k(x=np.int64(2), y=np.int8(1)) == 3


# ---- compiling ----------------------------------------------------------------------------------
def test_cache_by_source_hash(tmp_path, monkeypatch) -> None:
    src = "int answer(void) { return 42; }\n"
    lib = compile_c(src, tmp_path)
    assert lib.exists() and lib.parent == tmp_path
    calls = []
    import subprocess

    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert compile_c(src, tmp_path) == lib and not calls  # cached: no compiler run
    other = compile_c(src.replace("42", "43"), tmp_path)
    assert other != lib and len(calls) == 1


def test_missing_compiler_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    with pytest.raises(CompileError, match="no C compiler found"):
        compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path)


# one line a case: the target, whether the compiler is clang, then the flags beyond CFLAGS
@pytest.mark.parametrize("target, clang, flags", [
    (Target(), False, ("-ffp-contract=off", "-march=native",
                       "-fno-tree-loop-distribute-patterns")),
    (Target(), True, ("-ffp-contract=off", "-march=native")),
    (Target(march=None, loop_patterns=True), False, ("-ffp-contract=off",)),
    (Target(march="x86-64-v2", fma=True), True, ("-ffp-contract=off", "-march=x86-64-v2")),
])
def test_target_flags(monkeypatch, target, clang, flags) -> None:
    """The flags follow the compiler's kind (read from ``--version``, checked below)."""
    from lowering import compile as comp

    monkeypatch.setattr(comp, "_is_clang", lambda path: clang)
    assert target_flags(target, "cc") == flags


def test_the_compiler_kind_is_read_from_its_version() -> None:
    import shutil

    from lowering.compile import _is_clang

    assert not _is_clang(shutil.which("gcc"))  # the one compiler every machine here has
    assert not _is_clang("no-such-compiler")
    if shutil.which("clang"):
        assert _is_clang(shutil.which("clang"))


def test_f16_with_gcc_without_march() -> None:
    """GCC 12 with -march=native (AVX512-FP16 hosts) gave (-0.0 - x) + 0.0 as -0.0 on f16:
    f16 kernels compile without -march under GCC, and give +0.0."""
    import numpy as np

    text = ("(sink (end (store (index (buffer 0 f16 4) (range 0 4)) (add (sub (const f16 -0.0) "
            "(cast f16 (range 0 4))) (const f16 0.0))) (range 0 4)))")
    k = compile_kernel(parse(text), optimize=False, target=Target(cc="gcc"))
    assert not any(f.startswith("-march") for f in k.flags)
    out = np.ones(4, np.float16)
    k(out)
    assert np.signbit(out[0]) == np.False_ and list(out) == [0.0, -1.0, -2.0, -3.0]


def test_target_picks_the_compiler(monkeypatch, tmp_path) -> None:
    """``Target.cc`` first, then ``$CC``, then ``cc``, but clang where installed for a
    kernel with register tiles (an expanded reduction)."""
    import shutil

    from tests.lowering.test_expand import MATMUL

    monkeypatch.delenv("CC", raising=False)
    k = compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path, compile=False)
    assert k.cc == shutil.which("cc")
    tiled = compile_kernel(parse(MATMUL), optimize=False, cache_dir=tmp_path, compile=False)
    assert tiled.cc == shutil.which("clang" if shutil.which("clang") else "cc")
    monkeypatch.setenv("CC", "gcc")
    assert k.cc == tiled.cc == shutil.which("gcc")
    k2 = compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path, compile=False,
                        target=Target(cc="cc"))
    assert k2.cc == shutil.which("cc")


def test_march_failure_compiles_without(monkeypatch, tmp_path) -> None:
    """A compiler that fails with -march (an assembler older than the host's
    instructions) gets the source again without it; other failures are errors."""
    import lowering.compile as lc

    real, seen = lc.compile_c, []

    def picky(source, cache_dir=None, extra_flags=(), cc=None):
        seen.append(extra_flags)
        if any(f.startswith("-march=") for f in extra_flags):
            raise CompileError("Error: unsupported masking for `vmovsh'")
        return real(source, cache_dir, extra_flags, cc)

    monkeypatch.setattr(lc, "compile_c", picky)
    k = compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path)
    assert k.compiled and len(seen) == 2 and "-march=native" not in seen[1]

    def broken(source, cache_dir=None, extra_flags=(), cc=None):
        seen.append(extra_flags)
        raise CompileError("C compiler failed")

    monkeypatch.setattr(lc, "compile_c", broken)
    seen.clear()
    with pytest.raises(CompileError):
        compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path,
                       target=Target(march=None))
    assert len(seen) == 1  # nothing to drop: no second try


def test_compiler_error_shows_source(tmp_path) -> None:
    with pytest.raises(CompileError, match="C compiler failed"):
        compile_c("this is not C", tmp_path)


def test_default_cache_dir_env(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("EQSAT_CACHE_DIR", str(tmp_path / "k"))
    assert default_cache_dir() == tmp_path / "k"
    monkeypatch.delenv("EQSAT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "uop-eqsat" / "kernels"


def test_deferred_compile_and_repr(tmp_path) -> None:
    k = compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=tmp_path, compile=False)
    assert not list(tmp_path.glob("*.so"))
    o = np.zeros(60, np.float32)
    k(o, np.arange(60, dtype=np.float32))
    assert list(tmp_path.glob("*.so")) and o[1] == 6.0
    assert "kernel(0:f32[60], 1:f32[60])" in repr(k)


def test_bad_options() -> None:
    g = parse(TRANSPOSE)
    with pytest.raises(ValueError, match="optimize"):
        compile_kernel(g, optimize="fast")
    with pytest.raises(ValueError, match="emit"):
        lower(g, emit="asm")
    with pytest.raises(TypeError, match="Target"):
        compile_kernel(g, target="c")
    with pytest.raises(LoweringError):
        compile_kernel(parse("(sink (store (index (buffer 0 f32 4) (range 0 4)) 1.0))"),
                       optimize=False)


# an ungated index whose bounds leave its buffer is refused before lowering; a gated one is not
@pytest.mark.parametrize("text,match", [
    ("(sink (end (store (index (buffer 0 f32 4) (range 0 8)) 1.0) (range 0 8)))",
     r"store to buffer 0 \(f32, size 4\) out of bounds: .*range \[0, 7\], outside 0\.\.3"),
    ("(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 8) "
     "(sub (range 0 8) 1)))) (range 0 8)))", r"load from buffer 1 \(f32, size 8\) .*\[-1, 6\]"),
    ("(sink (end (store (index (buffer 0 f32 8) (range 0 8)) 1.0) (range 0 8)))", None),
    ("(sink (end (store (index (buffer 0 f32 8) (range 0 8)) (load (index (buffer 1 f32 8) (where "
     "(lt 0 (range 0 8)) (sub (range 0 8) 1) (invalid))))) (range 0 8)))", None),
])
def test_out_of_bounds_index(text: str, match: str | None, cache) -> None:
    g = parse(text)
    for emit in ("c", "linear"):
        if match is None:
            assert lower(g, emit=emit, optimize=False)
        else:
            with pytest.raises(LoweringError, match=match):
                lower(g, emit=emit, optimize=False)
    if match is not None:
        with pytest.raises(LoweringError, match=match):
            compile_kernel(g, cache_dir=cache)


def test_lower_linear_text() -> None:
    text = lower(parse(TRANSPOSE), emit="linear", optimize=False)
    lines = text.strip().splitlines()
    assert lines[0].startswith("%0") and lines[-1].split()[2] == "sink"
    assert all(ln.startswith("%") for ln in lines)


def test_vector_kernel_matches_interpreter(cache) -> None:
    """Vector values (vconst, vectorize, gep, cat, gather loads, scatter stores) are unrolled."""
    f4, i4 = dtypes.f32.vec(4), dtypes.index.vec(4)
    o, a = UOp.buffer(0, dtypes.f32, 32), UOp.buffer(1, dtypes.f32, 32)
    r = UOp.range(4, 0)
    base = UOp(Ops.VECTORIZE, i4, (r * 8,) * 4)
    lo = base + UOp.vconst(dtypes.index, (0, 1, 2, 3))
    hi = base + UOp.vconst(dtypes.index, (4, 5, 6, 7))
    x = UOp(Ops.LOAD, f4, (UOp(Ops.INDEX, a.dtype, (a, lo)),))
    y = UOp(Ops.LOAD, f4, (UOp(Ops.INDEX, a.dtype, (a, hi)),))
    s = x * UOp.const(f4, 2.0) + y.gep(3, 2, 1, 0)
    both = UOp(Ops.CAT, dtypes.f32.vec(8), (x, y))
    val = UOp(Ops.CAT, dtypes.f32.vec(8), (s, both.gep(7, 6, 5, 4)))
    idx = UOp(Ops.CAT, dtypes.index.vec(8), (lo, hi))
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, o.dtype, (o, idx)), val))
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, r)),))
    a_np = np.arange(32, dtype=np.float32)
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    assert not any(u.dtype.count > 1 for u in k.linear if not u.dtype.ptr)
    out = np.zeros(32, np.float32)
    k(out, a_np.copy())
    want = a_np.reshape(4, 8).copy()
    want[:, :4] = a_np.reshape(4, 8)[:, :4] * 2 + a_np.reshape(4, 8)[:, 7:3:-1]
    want[:, 4:] = a_np.reshape(4, 8)[:, 7:3:-1]
    np.testing.assert_array_equal(out, want.reshape(-1))
    ref = run_kernel(g, [np.zeros(32, np.float32), a_np.copy()])[0]
    np.testing.assert_array_equal(out, ref)


# ---- random expressions, compiled, against the interpreter --------------------------------------
@settings(max_examples=12)
@given(data=st.data())
def test_random_expressions_compiled(data: st.DataObject, tmp_path_factory) -> None:
    """Index and fixed-width expressions (wrapping, shifts, casts, pow, min, mulacc...) in one
    kernel, each stored as i64; C must agree with the interpreter wherever it is defined."""
    pool = data.draw(leaf_pools(max_vars=3, max_ranges=0))
    exprs = [data.draw(int_exprs(max_depth=4, leaves=pool, extra_ops=True)) for _ in range(4)]
    exprs += [data.draw(fixed_width_exprs(max_depth=3, leaves=pool)) for _ in range(4)]
    # a store outside any loop: loop indices become variables of the same env name
    as_var = {u: UOp.var(f"R{u.arg}", 0, int(u.vmax)) for e in exprs for u in e.toposort()
              if u.op is Ops.RANGE}
    exprs = [e.substitute(as_var) for e in exprs]
    out = UOp.buffer(0, dtypes.i64, len(exprs))
    vals = [e.cast(dtypes.i64) for e in exprs]
    stores = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (
        out, UOp.const(dtypes.index, j))), v)) for j, v in enumerate(vals)]
    try:
        k = compile_kernel(UOp(Ops.SINK, dtypes.void, tuple(stores)), optimize=False,
                           cache_dir=tmp_path_factory.getbasetemp() / "random")
    except LoweringError as e:
        assume("beyond the i64 range" not in str(e))
        raise
    names = [n for n, _, _ in k.signature.variables]
    for _ in range(4):
        env = data.draw(assignments(*exprs))
        res = np.zeros(len(exprs), np.int64)
        k(res, **{n: env[n] for n in names})
        for j, v in enumerate(vals):
            try:
                want = evaluate(v, env)
            except EvalError:
                continue  # undefined here (division by zero, shift out of range ...)
            assert int(res[j]) == want, (exprs[j], env, int(res[j]), want)


def test_optimize_true_falls_back_to_the_baseline(monkeypatch, cache) -> None:
    import eqsat.api

    def missing(*a, **k):
        raise ImportError("no module named eqsat.engines.egraph (simulated)")

    monkeypatch.setitem(eqsat.api.ENGINES, "egraph", missing)
    with pytest.warns(RuntimeWarning, match="baseline"):
        k = compile_kernel(parse(TRANSPOSE), optimize=True, cache_dir=cache)
    assert k.lowered.stats["engine"] == "baseline"
    with pytest.raises(LoweringError, match="unavailable"):
        compile_kernel(parse(TRANSPOSE), optimize="egraph", cache_dir=cache)


def test_f16_kernel(cache) -> None:
    g = parse("""
    %o = (buffer 0 f16 8)
    %a = (buffer 1 f16 8)
    %r = (range 0 8)
    %v = (load (index %a %r))
    (sink (end (store (index %o %r) (add (mul %v %v) (const f16 0.1))) %r))""")
    a = np.linspace(-3, 3, 8).astype(np.float16)
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    o = np.zeros(8, np.float16)
    k(o, a.copy())
    np.testing.assert_array_equal(o, run_kernel(g, [np.zeros(8, np.float16), a.copy()])[0])


@pytest.mark.parametrize("text", [
    # a load shared by both sources reads a[0] before and after the first store
    """%a = (buffer 0 f32 1)
       %b = (buffer 1 f32 2)
       %v = (load (index %a 0))
       (sink (store (index %b 0) %v) (store (index %a 0) (add %v 1.0)) (store (index %b 1) %v))""",
    # inside a loop: store then load of the same address, in order (read after write)
    """%a = (buffer 0 f32 4)
       %b = (buffer 1 f32 4)
       %r = (range 0 4)
       (sink (end (sink (store (index %a %r) (cast f32 %r)) (store (index %b %r)
                                                                    (load (index %a %r)))) %r))""",
    # write after read: the second source overwrites what the first one reads
    """%a = (buffer 0 f32 4)
       %b = (buffer 1 f32 4)
       %r = (range 0 4)
       %s = (range 1 4)
       (sink (end (store (index %b %r) (load (index %a %r))) %r)
             (end (store (index %a %s) 9.0) %s))""",
], ids=["shared_load", "loop_raw", "war"])
def test_sink_runs_sources_in_order(text: str, cache) -> None:
    g = parse(text)
    bufs = sorted((u for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg[0])
    mk = lambda: [np.arange(u.arg[1], dtype=np.float32) + 1 for u in bufs]  # noqa: E731
    got = mk()
    compile_kernel(g, optimize=False, cache_dir=cache)(*got)
    for a, b in zip(got, run_kernel(g, mk()), strict=True):
        np.testing.assert_array_equal(a, b)


def test_i64_intermediates_in_c(cache) -> None:
    """Values beyond i32 are computed in i64 (and 128-bit for the division's product)."""
    g = parse("""
    %o = (buffer 0 i32 8)
    %r = (range 0 8)
    (sink (end (store (index %o %r)
                      (cast i32 (idiv (add (mul %r 3000000000) 2999999999) 3000000000))) %r))""")
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    assert "int64_t" in k.c_source
    o = np.zeros(8, np.int32)
    k(o)
    np.testing.assert_array_equal(o, np.arange(8))
    e = compile_kernel(parse("(mod (mul (var x -1099511627776 1099511627776) 7) 1000003)"),
                       optimize=False, cache_dir=cache)
    assert e.signature.returns is dtypes.i64
    for x in (-(1 << 40), -12345678901, -1, 0, 999, 1 << 39, 1 << 40):
        assert e(x=x) == int(np.fmod(x * 7, 1000003))


# ---- bound calls --------------------------------------------------------------------------------
def test_bound_call_runs_like_a_call(cache) -> None:
    """``Kernel.bound`` checks the arguments once; each call of the result runs the kernel
    in place like ``kernel(...)``, and an expression kernel returns its value (None where
    it is Invalid)."""
    k = compile_kernel(parse(TRANSPOSE), optimize=False, cache_dir=cache)
    out, inp = np.zeros(60, np.float32), np.arange(60, dtype=np.float32)
    run = k.bound(out, inp)
    assert run() is None
    want = np.zeros(60, np.float32)
    k(want, inp)
    np.testing.assert_array_equal(out, want)
    out[:] = 0
    run()
    np.testing.assert_array_equal(out, want)
    with pytest.raises(TypeError, match="takes 2 arrays"):
        k.bound(out)
    e = compile_kernel(parse("(where (lt (var x -5 5) 0) (var x -5 5) (invalid))"),
                       optimize=False, cache_dir=cache)
    assert e.bound(x=-3)() == -3 and e.bound(x=2)() is None
    with pytest.raises(ValueError, match="outside its declared range"):
        e.bound(x=9)


# ---- many kernels, one C compiler run ----------------------------------------------------
def test_compile_kernels_shares_one_library(cache) -> None:
    """Kernels compiled together (one source, helpers once) run as each compiled alone."""
    texts = [TRANSPOSE, GATED_PAD,
             "(sink (end (store (index (buffer 0 i32 6) (range 0 6)) (idiv (cast i32 (range 0 6))"
             " (cast i32 (var d -3 3)))) (range 0 6)))"]
    ks = [compile_kernel(parse(t), optimize=False, name=f"k{i}", compile=False,
                         cache_dir=cache) for i, t in enumerate(texts)]
    assert compile_kernels(ks, cache) == ks and all(k.compiled for k in ks)
    rng = np.random.default_rng(1)
    for t, k in zip(texts, ks, strict=True):
        g = parse(t)
        bufs = [np.zeros(n, dtype=np.int32 if dt.is_int else np.float32)
                for _, dt, n in k.signature.buffers]
        for b in bufs[1:]:
            b[:] = rng.standard_normal(b.size)
        env = {n: 2 for n, _, _ in k.signature.variables}
        want = run_kernel(g, [b.copy() for b in bufs], env)[0]
        alone = compile_kernel(g, optimize=False, cache_dir=cache)
        got, got_alone = [b.copy() for b in bufs], [b.copy() for b in bufs]
        k(*got, **env)
        alone(*got_alone, **env)
        np.testing.assert_array_equal(got[0], want)
        np.testing.assert_array_equal(got_alone[0], want)


def test_compile_kernels_needs_distinct_names(cache) -> None:
    ks = [compile_kernel(parse(TRANSPOSE), optimize=False, compile=False, cache_dir=cache)
          for _ in range(2)]
    with pytest.raises(ValueError, match="distinct names"):
        compile_kernels(ks, cache)


def test_a_graph_that_is_no_uop_is_named():
    with pytest.raises(TypeError, match="expects a UOp graph, got int"):
        lower(5)
    with pytest.raises(TypeError, match="expects a UOp graph, got str"):
        compile_kernel("(add 1 2)")


@pytest.mark.parametrize("knows, f16, chosen", [
    (False, True, "cc"),  # a clang without _Float16 (clang 14 on x86-64) is passed over
    (False, False, "clang"),
    (True, True, "clang"),
])
def test_register_tiles_take_clang_only_where_it_compiles_the_source(monkeypatch, knows, f16,
                                                                     chosen):
    import lowering.compile as compile_mod

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(compile_mod.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(compile_mod, "_knows_float16", lambda path: knows)
    assert compile_mod._compiler(None, True, f16) == f"/usr/bin/{chosen}"
