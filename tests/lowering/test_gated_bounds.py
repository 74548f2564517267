"""Gated indexes and their buffers (lowering.narrow.check_bounds, gated_bounds): a gated
index proven inside its buffer where its gate holds costs nothing; one not proven is
checked in the C under its gate (in range the kernel gives the interpreter's answer, out
of range it stops with an OutOfBoundsError naming the buffer, the index and the value,
where the interpreter raises). Only an ungated index is refused when it is lowered."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat import EvalError, dtypes, evaluate, parse, run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import LoweringError, OutOfBoundsError, Target, compile_kernel, lower
from lowering.narrow import gated_bounds
from tests.lowering._oob import runs_like_the_interpreter

R = "(range 0 8)"
R16 = "(range 0 16)"
U = "(range 1 2)"


def _store(size: int, idx: str) -> str:
    """Every lane r of 0..7 stores r + 0.5 at ``idx`` into a buffer of ``size``."""
    return (f"(sink (end (store (index (buffer 0 f32 {size}) {idx}) (add (cast f32 {R}) 0.5)) "
            f"{R}))")


def _load(size: int, idx: str) -> str:
    """Lane r of 0..7 copies the element at ``idx`` of a buffer of ``size`` (0.0 where the
    gate is off) to element r of an 8-element output."""
    return (f"(sink (end (store (index (buffer 0 f32 8) {R}) (load (index (buffer 1 f32 {size}) "
            f"{idx}))) {R}))")


def _load2(size: int, idx: str) -> str:
    """:func:`_load` in a loop over ``U`` (0..1) inside the loop over ``R``: lane ``2r + u``
    of a 16-element output."""
    out = f"(add (mul {R} 2) {U})"
    return (f"(sink (end (store (index (buffer 0 f32 16) {out}) (load (index (buffer 1 f32 "
            f"{size}) {idx}))) {R} {U}))")


# one line a case: the kernel, then the error its run gives (None: it runs)
CASES = [
    (_store(4, f"(where (lt {R} 4) {R} (invalid))"), None),
    (_store(4, f"(where (lt {R} 6) {R} (invalid))"),
     r"store to buffer 0 \(f32, size 4\) at index 4, outside 0\.\.3"),
    (_store(8, f"(where (not (lt {R} 2)) (add {R} -2) (invalid))"), None),
    (_store(8, f"(where (lt {R} 7) (add {R} -1) (invalid))"),
     r"store to buffer 0 \(f32, size 8\) at index -1, outside 0\.\.7"),
    (_store(4, f"{R} (lt {R} 4)"), None),
    (_store(4, f"{R} (lt {R} 5)"), r"store to buffer 0 .* at index 4,"),
    (_load(4, f"(where (and (not (lt {R} 2)) (lt {R} 6)) (add {R} -2) (invalid))"), None),
    (_load(4, f"(where (and (not (lt {R} 2)) (lt {R} 7)) (add {R} -2) (invalid))"),
     r"load from buffer 1 \(f32, size 4\) at index 4, outside 0\.\.3"),
    (_load(6, f"(where (not (lt {R} 1)) (add {R} -2) (invalid))"),
     r"load from buffer 1 .* at index -1,"),
    (_load(4, f"(add {R} -3) (not (lt {R} 3))"), r"load from buffer 1 .* at index 4,"),
    # every access the gate admits is outside: checked (never refused: see the next line)
    (_store(8, f"(where (lt {R} 3) (add {R} 8) (invalid))"),
     r"store to buffer 0 \(f32, size 8\) at index 8, outside 0\.\.7"),
    (_load(4, f"(add {R} -4) (lt {R} 4)"), r"load from buffer 1 \(f32, size 4\) at index -4,"),
    # a gate that never holds, which its clauses do not show (2r is never 3): it runs
    (_store(4, f"(where (and (not (lt (mul {R} 2) 3)) (lt (mul {R} 2) 4)) (add (mul {R} 2) 2) "
               "(invalid))"), None),
    # the gate on one sum, the index a multiple of it: proven (see test_no_check_where_proven)
    (_load(4, f"(where (and (not (lt (add {R} 1) 3)) (lt (add {R} 1) 7)) "
              f"(add (mul {R} 1) -2) (invalid))"), None),
    # a gate on a quotient, a remainder or a sum bounds its range (test_check_emitted)
    (_load(6, f"(where (lt (idiv {R} 2) 3) {R} (invalid))"), None),
    (_load(6, f"(where (lt (idiv {R} 2) 4) {R} (invalid))"), r"load from buffer 1 .* at index 6,"),
    (_load(7, f"(where (lt (mod {R} 4) 3) {R} (invalid))"), None),
    (_load(6, f"(where (lt (idiv {R} -2) 1) {R} (invalid))"), r"load from buffer 1 .* at index 6,"),
    (_load(6, f"(where (not (lt (idiv (add {R} -3) 2) 0)) (add {R} -2) (invalid))"), None),
    (_load(6, f"(where (not (lt (idiv (add {R} -3) 2) 0)) (add {R} -3) (invalid))"),
     r"load from buffer 1 .* at index -1,"),
    (_load2(4, f"(where (lt (add (mul {R} 2) {U}) 7) {R} (invalid))"), None),
    (_load2(4, f"(where (lt (add (mul {R} 2) {U}) 9) {R} (invalid))"),
     r"load from buffer 1 .* at index 4,"),
    (_load(6, f"(where (le (idiv {R} 2) 2) {R} (invalid))"), None),
    (_load(6, f"(where (gt 4 (idiv {R} 2)) {R} (invalid))"), r"load from buffer 1 .* at index 6,"),
]


@pytest.mark.parametrize("text, error", CASES)
@pytest.mark.parametrize("optimize", [False, "baseline", "egraph"])
@pytest.mark.parametrize("target", [Target(), Target(split_gates=False, predicated_stores=True)],
                         ids=["default", "gated"])
def test_gated_access(text: str, error: str | None, optimize, target: Target,
                      tmp_path_factory) -> None:
    k = compile_kernel(parse(text), optimize=optimize, target=target,
                       cache_dir=tmp_path_factory.getbasetemp() / "kernels")
    runs_like_the_interpreter(k, text, _arrays(text), _arrays(text), error)


def _arrays(text: str) -> list[np.ndarray]:
    bufs = sorted((u for u in parse(text).toposort() if u.op is Ops.DEFINE_GLOBAL),
                  key=lambda u: u.arg[0])
    return [np.zeros(b.arg[1], np.float32) if b.arg[0] == 0 else
            np.arange(b.arg[1], dtype=np.float32) * 2 + 1 for b in bufs]


# one line a case: the kernel, then what the lowering says about it (a LoweringError):
# an ungated index is refused, a gated one, even one its gate keeps wholly outside, is
# checked where it runs (CASES)
@pytest.mark.parametrize("text, error", [
    (_store(8, f"(add {R} 1)"), r"store to buffer 0 .* its ungated index has range \[1, 8\]"),
    (_store(8, f"(add {R} 8)"), r"store to buffer 0 .* its ungated index has range \[8, 15\]"),
])
@pytest.mark.parametrize("optimize", [False, "baseline", "egraph"])
def test_ungated_refused(text: str, error: str, optimize) -> None:
    with pytest.raises(LoweringError, match=error):
        compile_kernel(parse(text), optimize=optimize, compile=False)


# one line a case: the gate, the index, then its bounds where the gate holds (None: never)
@pytest.mark.parametrize("gate, index, bounds", [
    (f"(lt {R} 6)", R, (0, 5)),
    (f"(not (lt {R} 2))", f"(add {R} -2)", (0, 5)),
    (f"(and (not (lt {R} 2)) (lt {R} 6))", f"(add (mul {R} 3) -6)", (0, 9)),
    (f"(lt {R} 0)", R, None),
    (f"(eq {R} 3)", f"(mul {R} 5)", (15, 15)),
    # the clause's sum is not a sub-term of the index, a multiple of it is part of it
    ("(not (lt (add (range 1 3) (range 2 3)) 2))",
     "(add (add (mul (range 1 3) 256) (mul (range 2 3) 256)) -257)", (255, 767)),
    ("(and (not (lt (add (mul (range 1 2) 1024) (range 2 1024)) 4)) "
     "(lt (add (mul (range 1 2) 1024) (range 2 1024)) 2044))",
     "(add (add (mul (range 2 1024) 2040) (mul (range 1 2) 2088960)) -8160)", (0, 4159560)),
    # the larger sum of two nested clauses is used first
    ("(and (not (lt (add (range 1 4) (range 2 4)) 2)) "
     "(not (lt (add (add (range 1 4) (range 2 4)) (range 3 4)) 5)))",
     "(add (add (range 3 4) (add (range 1 4) (range 2 4))) -5)", (0, 4)),
    # a padded 3x3 max pool of stride 2 (tinygrad's): 1 <= r5 + r7 implies 1 <= 2*r5 + r7
    ("(and (and (not (lt (add (range 5 6) (range 7 3)) 1)) (lt (add (mul (range 5 6) 2) "
     "(range 7 3)) 12)) (and (not (lt (add (range 6 6) (range 8 3)) 1)) (lt (add (mul "
     "(range 6 6) 2) (range 8 3)) 12)))",
     "(add (add (add (add (mul (range 5 6) 2) (range 7 3)) (add (mul (range 6 6) 22) (mul "
     "(range 8 3) 11))) (mul (range 2 4) 121)) -12)", (0, 483)),
    # a padded 3x3 convolution (tinygrad's, 32x32, 4 lanes a row)
    ("(and (and (not (lt (add (add (range 5 8) (range 6 4)) (range 8 3)) 1)) (lt (add (add "
     "(mul (range 5 8) 4) (range 6 4)) (range 8 3)) 33)) (and (not (lt (add (range 4 32) "
     "(range 9 3)) 1)) (lt (add (range 4 32) (range 9 3)) 33)))",
     "(add (add (add (add (add (mul (range 5 8) 4) (range 6 4)) (range 8 3)) (add (mul "
     "(range 4 32) 32) (mul (range 9 3) 32))) (mul (range 0 8) 1024)) -33)", (0, 8191)),
    # a clause the index does not read: its own bounds
    ("(lt (range 1 4) 2)", f"(add {R} 1)", (1, 8)),
    # a clause on a quotient, a remainder, a sum: the range it reads is bounded (R16 0..15)
    (f"(lt (idiv {R16} 2) 7)", R16, (0, 13)),
    (f"(lt (idiv (add {R16} 1) 2) 7)", R16, (0, 12)),
    (f"(lt (mod {R16} 4) 3)", R16, (0, 14)),
    (f"(lt (add (mul {R16} 2) (range 1 4)) 9)", R16, (0, 4)),
    (f"(lt (add (mul {R16} 2) (range 1 4)) 9)", "(range 1 4)", (0, 3)),
    (f"(and (lt (add (mul {R16} 2) (range 1 4)) 9) (not (lt (range 1 4) 3)))", R16, (0, 2)),
    (f"(lt (idiv (add (mul {R16} 2) (range 1 4)) 2) 7)", f"(add (mul {R16} 2) (range 1 4))",
     (0, 13)),
    (f"(and (lt (idiv {R16} 4) 3) (lt (mod {R16} 4) 2))", R16, (0, 9)),
    # truncation: (r - 5) // 2 >= 0 from r = 4 ((-1) // 2 is 0), not from r = 5
    (f"(not (lt (idiv (add {R16} -5) 2) 0))", f"(add {R16} -4)", (0, 11)),
    # a negative divisor: r // -2 is at most 0, always below 3; at least -2 up to r = 5
    (f"(lt (idiv {R16} -2) 3)", R16, (0, 15)),
    (f"(not (lt (idiv {R16} -2) -2))", R16, (0, 5)),
    # a clause on another range: nothing
    ("(lt (idiv (range 1 16) 2) 3)", R16, (0, 15)),
    # two rounds: r // 2 < 2 bounds r <= 3, then u - r < 2 bounds u <= 4
    (f"(and (lt (idiv {R16} 2) 2) (lt (sub (range 1 16) {R16}) 2))", "(range 1 16)", (0, 4)),
    # r >= 2 and (r + 3) // 4 < 1 (r <= 0): never
    (f"(and (not (lt {R16} 2)) (lt (idiv (add {R16} 3) 4) 1))", R16, None),
    # b % 2 >= 0 for b of -5..-1 (C's remainder): b of -4..-2; u - (b + u) is -b
    ("(not (lt (mod (var b -5 -1) 2) 0))", "(sub (range 1 4) (add (var b -5 -1) (range 1 4)))",
     (2, 4)),
    # the index is a clause's sum whose parts other clauses bound tighter (a of -1..1)
    ("(and (and (not (lt (add (range 0 5) (mul (var a -3 4) 2)) 0)) (lt (add (range 0 5) "
     "(mul (var a -3 4) 2)) 3)) (and (and (not (lt (add (var a -3 4) (range 1 4)) 2)) (lt (add "
     "(var a -3 4) (range 1 4)) 4)) (and (not (lt (add (var a -3 4) (var b -5 -1)) -1)) (lt "
     "(add (var a -3 4) (var b -5 -1)) 5))))", "(add (var a -3 4) (var b -5 -1))", (-1, 0)),
    # <=, >=, > read as < and not
    (f"(le (idiv {R16} 2) 6)", R16, (0, 13)),
    (f"(and (ge {R16} 2) (gt 9 (add {R16} 1)))", R16, (2, 7)),
    (f"(not (gt (idiv {R16} 2) 6))", R16, (0, 13)),
    (f"(ne {R16} 15)", R16, (0, 15)),  # != bounds nothing
    # a vector gate, lane by lane: the union of the lanes' bounds
    (f"(vectorize (lt {R} 7) (lt {R} 6))", f"(vectorize {R} (add {R} 1))", (0, 6)),
    (f"(lt (vectorize {R} (add {R} 1)) 7)", f"(vectorize {R} (add {R} 1))", (0, 6)),
    (f"(vectorize (lt {R} 7) (lt {R} 7))", f"(vectorize {R} (add {R} 1))", (0, 7)),
    (f"(vectorize (lt {R} 0) (lt {R} 0))", f"(vectorize {R} (add {R} 1))", None),
    (f"(lt (idiv {R} 2) 3)", f"(vectorize {R} (add {R} 1))", (0, 6)),
    (f"(gep (vectorize (lt {R} 7) (lt {R} 6)) 1 0)", f"(gep (vectorize {R} (add {R} 1)) 1 0)",
     (0, 6)),
    (f"(cat (lt {R} 7) (vectorize (lt {R} 6) (lt {R} 3)))",
     f"(cat {R} (add (vectorize {R} {R}) (vconst index 1 5)))", (0, 7)),
])
def test_gated_bounds(gate: str, index: str, bounds: tuple[int, int] | None) -> None:
    assert gated_bounds(parse(gate), parse(index)) == bounds


# one line a case: the gate, the index, the buffer's (first, last), then the bounds: the
# rounds of implied bounds stop once the bounds lie inside it
@pytest.mark.parametrize("gate, index, inside, bounds", [
    (f"(lt (idiv {R16} 2) 7)", R16, (0, 15), (0, 15)),
    (f"(lt (idiv {R16} 2) 7)", R16, (0, 13), (0, 13)),
    (f"(lt (idiv {R16} 2) 7)", R16, (0, 12), (0, 13)),
    (f"(and (lt (idiv {R16} 2) 2) (lt (sub (range 1 16) {R16}) 2))", "(range 1 16)", (0, 9),
     (0, 4)),  # the second round's bound
])
def test_gated_bounds_inside(gate: str, index: str, inside: tuple[int, int],
                             bounds: tuple[int, int]) -> None:
    assert gated_bounds(parse(gate), parse(index), inside) == bounds


def test_no_check_where_proven() -> None:
    """A gated index its gate keeps inside costs nothing: no check in the C; one it does
    not gets a check of the side left open, under the gate."""
    padded = _load(4, f"(where (and (not (lt {R} 2)) (lt {R} 6)) (add {R} -2) (invalid))")
    summed = ("(sink (end (store (index (buffer 0 f32 5) (where (not (lt (add (range 1 3) "
              "(range 2 3)) 2)) (add (add (mul (range 1 3) 2) (mul (range 2 3) 2)) -4) "
              "(invalid))) 1.0) (range 1 3) (range 2 3)))")
    for text in (padded, summed):
        assert "eqsat_oob" not in lower(parse(text), optimize=False)
    c = lower(parse(_load(4, f"(where (lt {R} 7) (add {R} -2) (invalid))")), optimize=False)
    lines = [ln for ln in c.splitlines() if "eqsat_oob[0]" in ln]
    assert len(lines) == 1 and "< 0" in lines[0] and ">= 4" in lines[0]


# one line a case: a gated load, then whether its C checks the index where it runs
@pytest.mark.parametrize("text, checked", [
    (_load(6, f"(where (lt (idiv {R} 2) 3) {R} (invalid))"), False),
    (_load(6, f"(where (lt (idiv {R} 2) 4) {R} (invalid))"), True),  # r up to 7: too short
    (_load(7, f"(where (lt (idiv (add {R} 1) 2) 4) {R} (invalid))"), False),
    (_load(7, f"(where (lt (mod {R} 4) 3) {R} (invalid))"), False),
    (_load(6, f"(where (and (lt (idiv {R} 4) 2) (lt (mod {R} 4) 2)) {R} (invalid))"), False),
    (_load2(4, f"(where (lt (add (mul {R} 2) {U}) 7) {R} (invalid))"), False),
    (_load2(4, f"(where (lt (add (mul {R} 2) {U}) 9) {R} (invalid))"), True),
    (_load(6, f"(where (not (lt (idiv {R} -2) -2)) {R} (invalid))"), False),
    (_load(6, f"(where (lt (idiv {R} -2) 1) {R} (invalid))"), True),  # a negative divisor
    (_load2(6, f"(where (lt (idiv (mul {U} 8) 2) 3) {R} (invalid))"), True),  # another range
    (_load(6, f"(where (not (lt (idiv (add {R} -3) 2) 0)) (add {R} -2) (invalid))"), False),
    (_load(6, f"(where (not (lt (idiv (add {R} -3) 2) 0)) (add {R} -3) (invalid))"), True),
    (_load(6, f"(where (le (idiv {R} 2) 2) {R} (invalid))"), False),
    (_load(6, f"(where (ge 2 (idiv {R} 2)) {R} (invalid))"), False),
    (_load(6, f"(where (gt 4 (idiv {R} 2)) {R} (invalid))"), True),
])
def test_check_emitted(text: str, checked: bool) -> None:
    assert ("eqsat_oob" in lower(parse(text), optimize=False)) is checked


def _vector_load(size: int, gate: UOp) -> UOp:
    """Lanes ``(r, r + 1)`` of a buffer of ``size`` loaded as one vector under ``gate``
    (0.0 where a lane's is off), stored to ``out[2r]`` and ``out[2r + 1]`` (r of 0..7)."""
    out, x = UOp.buffer(0, dtypes.f32, 16), UOp.buffer(1, dtypes.f32, size)
    r = UOp.range(8, 0)
    lanes = UOp(Ops.VECTORIZE, dtypes.index.vec(2), (r, r + 1))
    addr = UOp(Ops.WHERE, lanes.dtype, (gate(r, lanes), lanes, UOp(Ops.INVALID, lanes.dtype)))
    val = UOp(Ops.LOAD, dtypes.f32.vec(2), (UOp(Ops.INDEX, x.dtype, (x, addr)),))
    stores = [UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, r * 2 + i)),
                                           val.gep(i))) for i in range(2)]
    body = UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (body, r)),))


# one line a case: a vector load's gate (of r and its lanes (r, r + 1)), the buffer's
# size, whether its C checks the index
@pytest.mark.parametrize("gate, size, checked", [
    (lambda r, v: UOp(Ops.VECTORIZE, dtypes.bool.vec(2), (r.lt(7), r.lt(6))), 7, False),
    (lambda r, v: v.lt(7), 7, False),
    (lambda r, v: v.lt(6), 5, True),
    (lambda r, v: UOp(Ops.VECTORIZE, dtypes.bool.vec(2), (r.lt(7), r.lt(7))), 7, True),
])
def test_vector_gate_read_by_lane(gate, size: int, checked: bool, tmp_path_factory) -> None:
    g = _vector_load(size, gate)
    k = compile_kernel(g, optimize=False, cache_dir=tmp_path_factory.getbasetemp() / "kernels")
    assert ("eqsat_oob" in k.c_source) is checked
    got = [np.zeros(16, np.float32), np.arange(size, dtype=np.float32) + 1]
    want = [a.copy() for a in got]
    try:
        run_kernel(g, want)
    except EvalError:
        with pytest.raises(OutOfBoundsError):
            k(*got)
        return
    k(*got)
    np.testing.assert_array_equal(got[0], want[0])


def test_expression_kernel() -> None:
    """A bare gated load: its function returns the value, or the error."""
    text = f"(load (index (buffer 0 f32 4) (where (lt {R} 6) {R} (invalid))))"
    k = compile_kernel(parse(text), optimize=False)
    data = np.arange(4, dtype=np.float32) + 0.25
    for r, want in ((0, 0.25), (3, 3.25), (6, 0.0), (7, 0.0)):  # a load where off: 0.0
        assert k(data, R0=r) == evaluate(parse(text), {"R0": r}, buffers=[data]) == want
    with pytest.raises(OutOfBoundsError, match="load from buffer 0 .* at index 5,"):
        k(data, R0=5)


@st.composite
def _kernels(draw: st.DrawFn) -> str:
    """A store or a copy through ``a*r + b`` gated by ``lo <= c*r + d < hi``, or by
    ``lo <= (c*r + d) // q < hi`` or ``lo <= (c*r + d) % q < hi``."""
    n, size = draw(st.integers(1, 9)), draw(st.integers(1, 10))
    a, b = draw(st.integers(-2, 2)), draw(st.integers(-6, 6))
    c, d = draw(st.sampled_from([1, 2, -1])), draw(st.integers(-3, 3))
    lo, hi = sorted(draw(st.lists(st.integers(-4, 14), min_size=2, max_size=2)))
    r = f"(range 0 {n})"
    g = f"(add (mul {r} {c}) {d})"
    op = draw(st.sampled_from([None, "idiv", "mod"]))
    if op:  # a quotient or a remainder: monotone in r, or not
        g = f"({op} {g} {draw(st.sampled_from([-3, -2, 2, 3]))})"
    gate = f"(and (not (lt {g} {lo})) (lt {g} {hi}))"
    idx = f"(where {gate} (add (mul {r} {a}) {b}) (invalid))"
    if draw(st.booleans()):
        return (f"(sink (end (store (index (buffer 0 f32 {size}) {idx}) (cast f32 {r})) {r}))")
    return (f"(sink (end (store (index (buffer 0 f32 {n}) {r}) (load (index (buffer 1 f32 "
            f"{size}) {idx}))) {r}))")


@settings(max_examples=40, deadline=None)
@given(_kernels())
def test_compiled_kernel_agrees_with_interpreter(text: str) -> None:
    """Whatever the gate and the index: the compiled kernel raises exactly where the
    interpreter does, and otherwise gives its result (a gated index is never refused)."""
    want = _arrays(text)
    try:
        run_kernel(parse(text), want)
        bad = False
    except EvalError:
        bad = True
    k = compile_kernel(parse(text), optimize=False)
    got = _arrays(text)
    if bad:
        with pytest.raises(OutOfBoundsError):
            k(*got)
        return
    k(*got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@st.composite
def _gated_sums(draw: st.DrawFn) -> tuple[list[int], list[tuple[list[int], int, int]], list[int]]:
    """Range sizes, clauses ``lo <= sum(c*r) < hi`` and an index's coefficients (the last
    one its constant): sums of up to three ranges, the index often a multiple of a
    clause's sum plus a little more."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    coefs = st.lists(st.integers(-1, 4), min_size=len(sizes), max_size=len(sizes))
    clauses = [(cs, lo, lo + w) for cs, lo, w in draw(st.lists(
        st.tuples(coefs, st.integers(-2, 8), st.integers(1, 15)), max_size=3))]
    index = draw(coefs)
    if clauses and draw(st.booleans()):
        m, base = draw(st.integers(-2, 3)), draw(st.sampled_from(clauses))[0]
        index = [m * c + p % 2 for c, p in zip(base, index, strict=True)]
    return sizes, clauses, index + [draw(st.integers(-9, 9))]


def _sum_text(coefs: list[int], sizes: list[int], const: int = 0) -> str:
    text = str(const)
    for i, (c, n) in enumerate(zip(coefs, sizes, strict=True)):
        text = f"(add {text} (mul (range {i} {n}) {c}))"
    return text


@settings(max_examples=300, deadline=None)
@given(_gated_sums())
def test_gated_bounds_sound(case) -> None:
    """Every value the index takes where the gate holds is inside its bounds (by
    enumeration); None only where the gate holds nowhere."""
    sizes, clauses, index = case
    gate = "true"
    for coefs, lo, hi in clauses:
        s = _sum_text(coefs, sizes)
        gate = f"(and {gate} (and (not (lt {s} {lo})) (lt {s} {hi})))"
    got = gated_bounds(parse(gate), parse(_sum_text(index[:-1], sizes, index[-1])))
    values = [sum(c * r for c, r in zip(index, pt, strict=False)) + index[-1]
              for pt in np.ndindex(*sizes)
              if all(lo <= sum(c * r for c, r in zip(cs, pt, strict=True)) < hi
                     for cs, lo, hi in clauses)]
    if got is None:
        assert not values
    else:
        assert all(got[0] <= v <= got[1] for v in values)


def _trunc_div(a: int, d: int) -> int:
    q = abs(a) // abs(d)
    return q if (a < 0) == (d < 0) else -q


_OPS = {"idiv": _trunc_div, "mod": lambda a, d: a - d * _trunc_div(a, d)}


@st.composite
def _gated_quotients(draw: st.DrawFn):
    """Range sizes, clauses ``lo <= f < hi`` with ``f`` a sum of ranges, its quotient or
    its remainder by a divisor of either sign, and an index (coefficients and a constant,
    or a clause's sum)."""
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    coefs = st.lists(st.integers(-2, 3), min_size=len(sizes), max_size=len(sizes))
    clauses = draw(st.lists(st.tuples(coefs, st.integers(-3, 3),
                                      st.sampled_from([None, "idiv", "mod"]),
                                      st.sampled_from([-3, -2, 2, 3, 4]),
                                      st.integers(-4, 6), st.integers(1, 8)),
                            min_size=1, max_size=3))
    index = draw(coefs) + [draw(st.integers(-6, 6))]
    if draw(st.booleans()):
        cs, k = draw(st.sampled_from(clauses))[:2]
        index = [*cs, k]
    return sizes, clauses, index


def _clause_value(clause, point) -> int:
    cs, k, op, d = clause[:4]
    v = sum(c * r for c, r in zip(cs, point, strict=True)) + k
    return _OPS[op](v, d) if op else v


@settings(max_examples=300, deadline=None)
@given(_gated_quotients())
def test_gated_bounds_sound_quotients(case) -> None:
    """Gates on quotients and remainders (truncating, C's): every value the index takes
    where the gate holds is inside its bounds (by enumeration); None only where the
    gate holds nowhere."""
    sizes, clauses, index = case
    gate = "true"
    for cs, k, op, d, lo, w in clauses:
        f = _sum_text(cs, sizes, k)
        f = f"({op} {f} {d})" if op else f
        gate = f"(and {gate} (and (not (lt {f} {lo})) (lt {f} {lo + w})))"
    got = gated_bounds(parse(gate), parse(_sum_text(index[:-1], sizes, index[-1])))
    values = [sum(c * r for c, r in zip(index, pt, strict=False)) + index[-1]
              for pt in np.ndindex(*sizes)
              if all(c[4] <= _clause_value(c, pt) < c[4] + c[5] for c in clauses)]
    if got is None:
        assert not values
    else:
        assert all(got[0] <= v <= got[1] for v in values)


# leaves of random gates: two ranges and two variables, one of them negative
_LEAVES = [("(range 0 5)", 0, 4), ("(range 1 4)", 0, 3), ("(var a -3 4)", -3, 4),
           ("(var b -5 -1)", -5, -1)]
_BINARY = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
           "max": max, "min": min}
_BY = {**_OPS, "mul": _BINARY["mul"]}  # by a constant


def _tree(leaf: st.SearchStrategy) -> st.SearchStrategy:
    """Expressions ``(text, value of a point)`` over :data:`_LEAVES`: sums, differences,
    products, max, min, negations, and quotients and remainders by constants of either
    sign, nested."""
    def grow(sub: st.SearchStrategy) -> st.SearchStrategy:
        binary = st.tuples(st.sampled_from(sorted(_BINARY)), sub, sub).map(
            lambda t: (f"({t[0]} {t[1][0]} {t[2][0]})",
                       lambda p, f=_BINARY[t[0]], a=t[1][1], b=t[2][1]: f(a(p), b(p))))
        by = st.tuples(st.sampled_from(["idiv", "mod", "mul"]), sub,
                       st.sampled_from([-3, -2, -1, 2, 3, 5])).map(
            lambda t: (f"({t[0]} {t[1][0]} {t[2]})",
                       lambda p, f=_BY[t[0]], a=t[1][1], d=t[2]: f(a(p), d)))
        neg = sub.map(lambda t: (f"(neg {t[0]})", lambda p, a=t[1]: -a(p)))
        return st.one_of(binary, by, neg)
    return st.recursive(leaf, grow, max_leaves=5)


_LEAF = st.one_of(
    st.integers(0, len(_LEAVES) - 1).map(lambda i: (_LEAVES[i][0], lambda p, i=i: p[i])),
    st.integers(-4, 6).map(lambda c: (str(c), lambda p, c=c: c)))


# ``lo <= f < hi`` written four ways
_WITHIN = ["(and (not (lt {f} {lo})) (lt {f} {hi}))", "(and (ge {f} {lo}) (gt {hi} {f}))",
           "(and (le {lo} {f}) (not (ge {f} {hi})))", "(not (or (gt {lo} {f}) (le {hi} {f})))"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(_tree(_LEAF), st.integers(-6, 6), st.integers(1, 8),
                          st.sampled_from(_WITHIN)), min_size=1, max_size=3), _tree(_LEAF))
def test_gated_bounds_sound_trees(clauses, index) -> None:
    """Gates ``lo <= f < hi`` (with ``lt``, ``le``, ``ge``, ``gt``) on nested expressions
    of ranges and signed variables: every value the index takes where the gate holds is
    inside its bounds (by enumeration)."""
    gate = "true"
    for (text, _), lo, w, form in clauses:
        gate = f"(and {gate} {form.format(f=text, lo=lo, hi=lo + w)})"
    got = gated_bounds(parse(gate), parse(index[0]))
    points = itertools.product(*(range(lo, hi + 1) for _, lo, hi in _LEAVES))
    values = [index[1](p) for p in points
              if all(lo <= f(p) < lo + w for (_, f), lo, w, _ in clauses)]
    if got is None:
        assert not values
    else:
        assert all(got[0] <= v <= got[1] for v in values)
