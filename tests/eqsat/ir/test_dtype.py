"""DTypes: parsing/interning, ranges, can_safe_cast and least_upper_dtype
(docs/rules.md: seed 000 §6, casts; seed 003 §5, index lowering's promotion)."""

from __future__ import annotations

import itertools

import pytest

from eqsat.ir.dtype import DType, DTypeError, can_safe_cast, dtypes, least_upper_dtype
from eqsat.ir.interp import EvalError, evaluate
from eqsat.ir.uop import UOp

D = dtypes.parse
SCALARS = [d for d in dtypes.scalars]


@pytest.mark.parametrize("text", ["index", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                                  "u64", "f16", "bf16", "f32", "f64", "f32x4", "i32*", "f16x8*",
                                  "boolx2"])
def test_parse_round_trips_and_interns(text):
    dt = D(text)
    assert str(dt) == text
    assert D(str(dt)) is dt
    assert eval(repr(dt), {"dtypes": dtypes}) is dt


@pytest.mark.parametrize("text", ["i9", "f32x", "x4", "f32x0", "int", "", "f32**", "i32xx2"])
def test_parse_rejects(text):
    with pytest.raises(DTypeError, match="unknown dtype"):
        D(text)


def test_vec_ptr_scalar_base():
    v = dtypes.f32.vec(4)
    assert v.count == 4 and v.scalar() is dtypes.f32 and v.vec(1) is dtypes.f32
    p = v.ptr_to()
    assert p.ptr and p.base() is v and p.scalar() is dtypes.f32
    assert dtypes.f32.vec(4) is v
    with pytest.raises(DTypeError):
        v.vec(2)


@pytest.mark.parametrize("dt,lo,hi", [
    (dtypes.i8, -128, 127), (dtypes.u8, 0, 255), (dtypes.i16, -(2**15), 2**15 - 1),
    (dtypes.u16, 0, 2**16 - 1), (dtypes.i32, -(2**31), 2**31 - 1), (dtypes.u32, 0, 2**32 - 1),
    (dtypes.i64, -(2**63), 2**63 - 1), (dtypes.u64, 0, 2**64 - 1), (dtypes.bool, False, True),
    (dtypes.index, float("-inf"), float("inf")), (dtypes.f32, float("-inf"), float("inf")),
])
def test_min_max(dt, lo, hi):
    assert (dt.min, dt.max) == (lo, hi)


@pytest.mark.parametrize("dt,kind", [
    (dtypes.index, "is_index"), (dtypes.i8, "is_fixed_int"), (dtypes.u64, "is_unsigned"),
    (dtypes.f16, "is_float"), (dtypes.bf16, "is_float"), (dtypes.bool, "is_bool"),
])
def test_predicates(dt, kind):
    assert getattr(dt, kind)
    assert dtypes.index.is_int and dtypes.i8.is_int and not dtypes.bool.is_int
    assert not dtypes.index.is_fixed_int and not dtypes.f32.ptr_to().is_float


# ---- can_safe_cast: one line per case (src, dst, safe) ------------------------------------
@pytest.mark.parametrize("src,dst,safe", [
    ("i8", "i64", True),
    ("i64", "i8", False),      # seed 000 §6's caution: CAST(CAST(x, i8), i64) is not x
    ("i32", "i64", True),
    ("u32", "i64", True),
    ("i32", "u32", False),
    ("u32", "i32", False),
    ("u8", "i16", True),
    ("i8", "u16", False),
    ("u16", "u32", True),
    ("u32", "u64", True),
    ("i16", "i32", True),
    ("u8", "u8", True),
    ("bool", "i32", True),     # i32 holds true and false
    ("bool", "f16", True),
    ("i32", "bool", False),
    ("i32", "f64", True),
    ("u32", "f64", True),
    ("i64", "f64", False),
    ("i32", "f32", False),     # 2**24 + 1 is lost
    ("i16", "f32", True),
    ("u16", "f32", True),
    ("f16", "f32", True),
    ("bf16", "f32", True),
    ("f32", "f64", True),
    ("f64", "f32", False),
    ("f32", "f16", False),
    ("f16", "bf16", False),
    ("f32", "i32", False),
    ("i64", "index", True),
    ("u64", "index", True),
    ("index", "i64", False),
    ("index", "index", True),
])
def test_can_safe_cast(src, dst, safe):
    assert can_safe_cast(D(src), D(dst)) is safe


def _samples(dt: DType) -> list:
    if dt.is_bool:
        return [False, True]
    if dt.is_fixed_int:
        lo, hi = int(dt.min), int(dt.max)
        return sorted({lo, lo + 1, -1 if lo < 0 else 0, 0, 1, hi - 1, hi, hi // 3, lo // 3})
    if dt.is_index:
        return [-(2**70), -(2**40), -1, 0, 1, 2**40, 2**70]
    big = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
           "f64": 1.7976931348623157e308}[dt.name]
    return [-big, -1.5, -0.0, 0.0, 1e-3, 0.333, 1.5, 2.0**11 + 1, 2.0**24 + 1, big]


@pytest.mark.parametrize("src,dst", list(itertools.product(SCALARS, SCALARS)))
def test_safe_casts_round_trip_in_the_interpreter(src, dst):
    """What can_safe_cast promises, checked on extreme and typical values."""
    if not can_safe_cast(src, dst):
        return
    for v in _samples(src):
        x = UOp.const(src, v)
        try:
            back = evaluate(x.cast(dst).cast(src))
        except EvalError as e:  # a safe cast never makes a value undefined
            raise AssertionError(f"{src}->{dst}->{src} of {v}: {e}") from None
        assert back == x.arg, f"{src}->{dst}->{src} loses {x.arg} (got {back})"


@pytest.mark.parametrize("src,dst", [(a, b) for a, b in itertools.product(SCALARS, SCALARS)
                                     if a.is_fixed_int and b.is_fixed_int])
def test_can_safe_cast_is_range_inclusion_for_fixed_ints(src, dst):
    assert can_safe_cast(src, dst) is (dst.min <= src.min and src.max <= dst.max)


# ---- least_upper_dtype: one line per case ----------------------------------------------------
@pytest.mark.parametrize("ds,want", [
    (("i32", "i32"), "i32"),
    (("i32", "i64"), "i64"),
    (("i8", "u8"), "i16"),
    (("i16", "u16"), "i32"),
    (("i32", "u32"), "i64"),
    (("u8", "u16"), "u16"),
    (("u8", "i8"), "i16"),
    (("bool", "i8"), "i8"),
    (("bool", "u8"), "u8"),
    (("bool", "bool"), "bool"),
    (("i64", "u64"), "index"),
    (("i64", "index"), "index"),
    (("u32", "index"), "index"),
    (("index", "f16"), "f16"),
    (("i32", "f32"), "f32"),
    (("f16", "bf16"), "f32"),
    (("f16", "f32"), "f32"),
    (("f32", "f64"), "f64"),
    (("i8", "u32"), "i64"),
    (("u64", "f16"), "f16"),
    (("i32", "i64", "u8"), "i64"),
    (("f32x4", "i32x4"), "f32x4"),
])
def test_least_upper_dtype(ds, want):
    assert least_upper_dtype(*map(D, ds)) is D(want)


@pytest.mark.parametrize("a,b", list(itertools.combinations(SCALARS, 2)))
def test_least_upper_dtype_is_a_commutative_upper_bound(a, b):
    u = least_upper_dtype(a, b)
    assert least_upper_dtype(b, a) is u
    assert least_upper_dtype(a, u) is u and least_upper_dtype(b, u) is u
    assert least_upper_dtype(u) is u
    for c in SCALARS:
        assert least_upper_dtype(a, b, c) is least_upper_dtype(u, c)


@pytest.mark.parametrize("a,b", [(a, b) for a, b in itertools.product(SCALARS, SCALARS)
                                 if a.is_int and b.is_int])
def test_integer_promotion_holds_both_ranges(a, b):
    u = least_upper_dtype(a, b)
    assert u.min <= min(a.min, b.min) and max(a.max, b.max) <= u.max


@pytest.mark.parametrize("ds", [(), ("f32x4", "f32"), ("f32*", "f32"), ("void", "i32")])
def test_least_upper_dtype_rejects(ds):
    with pytest.raises(DTypeError):
        least_upper_dtype(*[dtypes.void if d == "void" else D(d) for d in ds])
