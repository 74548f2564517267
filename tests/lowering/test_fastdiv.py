"""Division by constants without a divide (lowering/fastdiv.py).

Exhaustive over every numerator in [-2**20, 2**20] for every divisor 2..1000
(numpy), random over the full i32/i64 ranges (Python ints), the built UOp
sequences against the reference interpreter, and one compiled C harness that
checks the emitted C sequences against C's own ``/`` and ``%``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat import dtypes, evaluate
from eqsat.ir.ops import Ops
from eqsat.ir.semantics import cdiv, cmod
from eqsat.ir.uop import UOp
from lowering import Target, compile_kernel
from lowering.fastdiv import build_idiv, build_mod, magic, plan_idiv

I32, I64 = dtypes.i32, dtypes.i64
N20 = 1 << 20


# ---- the magic numbers --------------------------------------------------------------------
@pytest.mark.parametrize("d,nmax", [(3, 2), (3, 100), (7, 1 << 31), (10, 59), (641, 1 << 20),
                                    (999, 1 << 63), ((1 << 62) + 1, 1 << 63)])
def test_magic_is_least_shift_meeting_the_bound(d: int, nmax: int) -> None:
    m, s = magic(d, nmax)
    assert m == -(-(1 << s) // d)
    assert nmax * (m * d - (1 << s)) < (1 << s)
    if s > 0:  # one less shift fails the condition
        m1 = -(-(1 << (s - 1)) // d)
        assert nmax * (m1 * d - (1 << (s - 1))) >= (1 << (s - 1))


@pytest.mark.parametrize("d", [0, 1, 2, 8, -3])
def test_magic_rejects_powers_of_two_and_small(d: int) -> None:
    with pytest.raises(ValueError, match="divisor"):
        magic(d, 100)


@pytest.mark.parametrize("d,lo,hi,dt,method", [
    (8, 0, 100, I32, "shift"),
    (10, 0, 59, I32, "mul"),              # product fits i32: no widening
    (7, -(1 << 31), (1 << 31) - 1, I32, "mul64"),
    (7, -(1 << 63), (1 << 63) - 1, I64, "mulhi"),
    (3, 0, 1 << 20, I64, "mul"),
    (3, 0, 1 << 40, I64, "mulhi"),       # the product needs 81 bits
    (1000, -(1 << 62), 1 << 62, I64, "mulhi"),
    ((1 << 64) - 1, 0, 2, dtypes.u64, "mulhi"),  # s = 65: no 64-bit shift can do it
])
def test_plan_method(d: int, lo: int, hi: int, dt, method: str) -> None:
    p = plan_idiv(d, lo, hi, dt)
    assert p is not None and p.method == method
    assert p.negfix == (lo < 0)


# ---- exhaustive: every numerator in [-2**20, 2**20], every divisor 2..1000 ------------------
def test_exhaustive_2_20_all_divisors_numpy() -> None:
    xp = np.arange(0, N20 + 1, dtype=np.int64)
    ref = np.empty_like(xp)
    buf = np.empty_like(xp)
    checked = 0
    for d in range(2, 1001):
        np.floor_divide(xp, d, out=ref)  # == C truncation for x >= 0
        p = plan_idiv(d, -N20, N20, I32)
        if p.method == "shift":
            k = d.bit_length() - 1
            np.right_shift(xp, k, out=buf)
            assert not np.subtract(buf, ref, out=buf).any(), d
            np.add(-xp, d - 1, out=buf)  # negative x: (x + d-1) >> k
            np.right_shift(buf, k, out=buf)
            buf[0] = 0  # x = 0 takes no bias
            assert not np.add(buf, ref, out=buf).any(), d
        else:
            assert p.method == "mul" or p.method == "mul64", p
            np.multiply(xp, p.m, out=buf)
            np.right_shift(buf, p.s, out=buf)
            assert not np.subtract(buf, ref, out=buf).any(), d   # x >= 0
            np.multiply(xp, -p.m, out=buf)
            np.right_shift(buf, p.s, out=buf)
            buf[1:] += 1  # the negative fix, for x < 0 only
            assert not np.add(buf, ref, out=buf).any(), d        # trunc(-x/d) == -(x//d)
        checked += 2 * N20 + 1
    assert checked == 999 * (2 * N20 + 1)


def test_eval_np_matches_eval() -> None:
    rng = np.random.default_rng(0)
    for d in (3, 7, 8, 10, 641, 1000):
        p = plan_idiv(d, -N20, N20, I32)
        xs = rng.integers(-N20, N20 + 1, 500)
        assert list(p.eval_np(xs)) == [p.eval(int(x)) for x in xs] == [cdiv(int(x), d) for x in xs]


# ---- random over the full i32/i64 ranges --------------------------------------------------------
@settings(max_examples=300)
@given(st.data())
def test_full_range_random(data: st.DataObject) -> None:
    bits = data.draw(st.sampled_from([32, 64]))
    lo_t, hi_t = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    d = data.draw(st.one_of(st.integers(2, 5000), st.integers(2, hi_t)))
    lo = data.draw(st.integers(lo_t, hi_t))
    hi = data.draw(st.integers(lo, hi_t))
    p = plan_idiv(d, lo, hi, I32 if bits == 32 else I64)
    assert p is not None
    for x in {lo, hi, 0 if lo <= 0 <= hi else lo, *(data.draw(st.integers(lo, hi))
                                                        for _ in range(8))}:
        assert p.eval(x) == cdiv(x, d), (d, lo, hi, x, p)


def test_full_range_extremes() -> None:
    rnd = random.Random(1)
    for bits, dt in ((32, I32), (64, I64)):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        divisors = [3, 5, 7, 10, 11, 641, 1000, 6700417, hi, hi - 1, (1 << (bits - 2)) + 1]
        divisors += [rnd.randint(2, hi) for _ in range(50)]
        for d in divisors:
            p = plan_idiv(d, lo, hi, dt)
            xs = [lo, lo + 1, hi, hi - 1, 0, 1, -1, d, -d, d - 1, 1 - d, d + 1, -d - 1]
            xs += [rnd.randint(lo, hi) for _ in range(200)]
            for x in xs:
                if lo <= x <= hi:
                    assert p.eval(x) == cdiv(x, d), (d, x, p)


# ---- the built UOp sequences, against the reference interpreter ------------------------------
def _var(dt, lo: int, hi: int) -> UOp:
    return UOp(Ops.DEFINE_VAR, dt, (), ("x", lo, hi))


@settings(max_examples=100)
@given(st.data())
def test_built_sequences_sound(data: st.DataObject) -> None:
    dt = data.draw(st.sampled_from([dtypes.i8, dtypes.i16, dtypes.i32, dtypes.i64, dtypes.u8,
                                    dtypes.u16, dtypes.u32]))
    lo = data.draw(st.integers(int(dt.min), int(dt.max)))
    hi = data.draw(st.integers(lo, int(dt.max)))
    d = data.draw(st.one_of(st.integers(max(-300, int(dt.min)), min(300, int(dt.max))),
                            st.integers(int(dt.min), int(dt.max))))
    if d == 0:
        return
    x = _var(dt, lo, hi)
    q, r = build_idiv(x, d, lo, hi), build_mod(x, d, lo, hi)
    ops = {u.op for g in (q, r) if g is not None for u in g.toposort()}
    assert Ops.IDIV not in ops and Ops.MOD not in ops
    for v in {lo, hi, *(data.draw(st.integers(lo, hi)) for _ in range(5))}:
        if q is not None:
            assert evaluate(q, {"x": v}) == UOp.const(dt, cdiv(v, d)).arg, (dt, d, v)
        if r is not None:
            assert evaluate(r, {"x": v}) == cmod(v, d), (dt, d, v)


def test_every_i32_i64_divisor_is_decomposed() -> None:
    for dt in (I32, I64):
        lo, hi = int(dt.min), int(dt.max)
        x = _var(dt, lo, hi)
        for d in (3, 7, -7, 10, 1 << 20, -(1 << 20), 1000, hi):
            assert build_idiv(x, d, lo, hi) is not None
            assert build_mod(x, d, lo, hi) is not None
        assert build_idiv(x, lo, lo, hi) is None  # |MIN| does not fit: left as a division


def test_pow2_nonnegative_is_a_shift_and_mask() -> None:
    x = _var(I32, 0, 1000)
    assert build_idiv(x, 8, 0, 1000).op is Ops.SHR
    assert build_mod(x, 8, 0, 1000).op is Ops.AND
    y = _var(I32, -5, 1000)  # negative numerators take the sign-correct sequence
    assert build_idiv(y, 8, -5, 1000).op is Ops.SHR and build_idiv(y, 8, -5, 1000).src[0] is not y
    assert build_mod(y, 8, -5, 1000).op is Ops.SUB


# ---- one compiled C harness: the emitted sequences against C's own / and % ----------------------
def _harness(cases: list[tuple[int, int, int]], dt) -> tuple[UOp, int]:
    """A kernel: for case j, err[2j] counts x//d != x/divs[j] and err[2j+1] x%d != x%divs[j]
    over x = lo .. hi (constant d: fast division; loaded divisor: C's own operator)."""
    err = UOp.buffer(0, dtypes.i32, 2 * len(cases))
    divs = UOp.buffer(1, dt, len(cases))
    kids = []
    for j, (d, lo, hi) in enumerate(cases):
        for k, op in enumerate((Ops.IDIV, Ops.MOD)):
            r = UOp.range(hi - lo + 1, 2 * j + k)
            x = (r + lo).cast(dt)
            ref = UOp(op, dt, (x, UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, divs.dtype,
                                                            (divs, UOp.const(dtypes.index, j))),))))
            fast = UOp(op, dt, (x, UOp.const(dt, d)))
            bad = fast.ne(ref).cast(dtypes.i32)
            red = UOp(Ops.REDUCE, dtypes.i32, (bad, r), Ops.ADD)
            kids.append(UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, err.dtype, (
                err, UOp.const(dtypes.index, 2 * j + k))), red)))
    return UOp(Ops.SINK, dtypes.void, tuple(kids)), len(cases)


def test_c_harness_emitted_sequences(tmp_path) -> None:
    n16 = 1 << 16
    # the C sequences have one shape per method; these divisors cover every method and
    # sign case (all divisors 2..1000 are checked exhaustively in numpy above)
    divisors = [*range(2, 41), 63, 64, 100, 127, 255, 256, 641, 999, 1000]
    cases = [(d, -n16, n16) for d in divisors]                       # signed
    cases += [(d, 0, N20) for d in (3, 7, 10, 641, 1000)]            # non-negative, 2**20
    cases += [(d, -N20, N20) for d in (3, 6, 7, 8, 100, 999)]        # signed, 2**20
    cases += [(d, -5, 40) for d in (3, 7, 16)]                       # small ranges ("mul" in i32)
    cases += [(-d, -N20, N20) for d in (3, 7, 8)]                    # negative divisors
    g, n = _harness(cases, I32)
    k = compile_kernel(g, optimize=False, cache_dir=tmp_path)
    body = k.c_source.split("kernel(")[1]
    assert "/" not in body and "%" not in body  # only the reference helpers divide
    err = np.full(2 * n, -1, np.int32)
    k(err, np.array([d for d, _, _ in cases], np.int32))
    assert not err.any(), [cases[i // 2] for i in np.flatnonzero(err)]


def test_c_i64_full_range(tmp_path) -> None:
    """i64 numerators over the whole range (multiply-high via __int128) in compiled C."""
    rng = np.random.default_rng(7)
    xs = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 4096, dtype=np.int64,
                      endpoint=True)
    xs[:4] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0]
    ds = [3, 7, 10, 641, 1000, 6700417, (1 << 62) + 1, (1 << 63) - 1, -7]
    out = UOp.buffer(0, I64, 2 * len(ds) * len(xs))
    inp = UOp.buffer(1, I64, len(xs))
    r = UOp.range(len(xs), 0)
    x = UOp(Ops.LOAD, I64, (UOp(Ops.INDEX, inp.dtype, (inp, r)),))
    stores = []
    for j, d in enumerate(ds):
        for k, op in enumerate((Ops.IDIV, Ops.MOD)):
            at = r + (2 * j + k) * len(xs)
            stores.append(UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, at)),
                                                        UOp(op, I64, (x, UOp.const(I64, d))))))
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void,
                                        (UOp(Ops.SINK, dtypes.void, tuple(stores)), r)),))
    k = compile_kernel(g, optimize=False, target=Target(), cache_dir=tmp_path)
    body = k.c_source.split("kernel(")[1]
    assert "/" not in body and "%" not in body and "__int128" in body
    res = np.zeros(2 * len(ds) * len(xs), np.int64)
    k(res, xs)
    res = res.reshape(len(ds), 2, len(xs))
    for j, d in enumerate(ds):
        assert [int(v) for v in res[j, 0]] == [cdiv(int(v), d) for v in xs], d
        assert [int(v) for v in res[j, 1]] == [cmod(int(v), d) for v in xs], d
