"""The divisibility proof behind aligned vector accesses (lowering.align)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat import evaluate, parse
from eqsat.ir.interp import run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering import Target, compile_kernel
from lowering.align import congruence, is_multiple

R0, R1 = "(range 0 16)", "(range 1 8)"
I0, I1 = "(cast i32 (range 0 16))", "(cast i32 (range 1 8))"

# expression, k, is every value a multiple of k (proven)
MULTIPLE = [
    (f"(add (mul {R0} 4) (mul {R1} 8))", 4, True),  # 4*i + 8*j
    (f"(add (add (mul {R0} 4) (mul {R1} 8)) 12)", 4, True),  # + c, c % 4 == 0
    (f"(add (add (mul {R0} 4) (mul {R1} 8)) 6)", 4, False),  # c % 4 != 0
    (f"(add (add (mul {R0} 4) (mul {R1} 8)) 6)", 2, True),
    (f"(add (mul {R0} 4) -8)", 4, True),  # a negative offset
    (f"(sub (mul {R0} 4) 12)", 4, True),
    (f"(sub (mul {R0} 4) 2)", 4, False),
    (f"(neg (mul {R1} 8))", 8, True),
    (f"(add (mul {R0} 4) {R1})", 4, False),  # a bare loop index: any value
    (f"(mul {R0} {R1})", 2, False),
    (f"(mul (mul {R0} 2) (mul {R1} 2))", 4, True),  # products of multiples
    (f"(mul (add (mul {R0} 4) 2) (add (mul {R1} 4) 2))", 4, True),  # (4s+2)(4t+2)
    (f"(mul (add (mul {R0} 4) 1) (add (mul {R1} 4) 2))", 4, False),
    (f"(shl {I0} 2)", 4, True),
    (f"(shl {I0} 1)", 4, False),
    (f"(shr (shl {I0} 4) 2)", 4, True),  # (16i) >> 2 == 4i
    (f"(shr (shl {I0} 3) 2)", 4, False),
    (f"(idiv (mul {R0} 16) 4)", 4, True),  # 16i // 4 == 4i
    (f"(idiv (mul {R0} 12) 3)", 4, True),
    (f"(idiv (add (mul {R0} 16) 3) 4)", 4, True),  # (16i + 3) // 4 == 4i
    (f"(idiv (mul {R0} 16) 8)", 4, False),  # 2i
    (f"(idiv (mul {R0} -16) 4)", 4, True),  # never positive: -((16i) // 4)
    (f"(idiv (sub (mul {R0} 16) 3) 4)", 4, False),  # both signs: truncation
    (f"(idiv (mul {R0} 16) -4)", 4, True),
    (f"(floordiv (sub (mul {R0} 16) 3) 4)", 4, False),  # 4i - 1
    (f"(add (floordiv (sub (mul {R0} 16) 3) 4) 1)", 4, True),  # floor: 4i - 1, any sign
    (f"(mul (mod {R0} 3) 4)", 4, True),
    (f"(mod (mul {R0} 8) 4)", 4, True),  # 8i % 4 == 0
    (f"(mod (add (mul {R0} 8) 4) 16)", 4, True),
    (f"(mod (add (mul {R0} 8) 4) 6)", 4, False),  # gcd(8, 6) == 2
    (f"(mod (sub (mul {R0} 8) 64) 16)", 8, True),  # negative dividend, C's mod
    (f"(floormod (sub (mul {R0} 8) 60) 16)", 4, True),
    (f"(and (mul {I0} 4) (const i32 15))", 4, True),  # a low-bits mask: mod 16
    (f"(and {I0} (const i32 -4))", 4, True),  # clears the low two bits
    (f"(and {I0} (const i32 6))", 4, False),
    (f"(where (lt {R0} 4) (mul {R1} 8) (add (mul {R0} 4) 16))", 4, True),
    (f"(where (lt {R0} 4) (mul {R1} 8) (add (mul {R0} 4) 2))", 4, False),
    (f"(max (mul {R0} 4) (add (mul {R1} 8) 4))", 4, True),
    (f"(cast i64 (mul {I0} 4))", 4, True),
    (f"(cast i32 (mul {R0} 8))", 8, True),
    ("(mul (var n 0 100) 4)", 4, True),
    ("(var n 0 100)", 4, False),
    ("(var n 8 8)", 4, True),  # one value
    (f"(mul {R0} (range 2 1))", 4, True),  # the range of one value is 0
    ("12", 4, True),
    ("-12", 4, True),
    ("13", 4, False),
]


@pytest.mark.parametrize("text, k, want", MULTIPLE, ids=[f"{t} %{k}" for t, k, _ in MULTIPLE])
def test_is_multiple_table(text: str, k: int, want: bool) -> None:
    u = parse(text)
    assert is_multiple(u, k) is want
    if want:  # and it is true: every value of the loop indices
        _check_all_values(u)


def _check_all_values(u: UOp) -> None:
    m, r = congruence(u)
    leaves = [x for x in u.toposort() if x.op in (Ops.RANGE, Ops.DEFINE_VAR)]
    spans = [range(int(x.vmin), int(x.vmax) + 1) for x in leaves]
    for vals in itertools.product(*spans):
        v = evaluate(u, dict(zip(leaves, vals, strict=True)))
        assert (v - r) % m == 0 if m else v == r, (vals, v, (m, r))


def test_wrap_around_keeps_powers_of_two_only() -> None:
    """An i32 product may wrap: its value is known modulo gcd(m, 2**32) only."""
    big = parse("(mul (cast i32 (range 0 1000000)) (const i32 3000))")
    assert congruence(big) == (8, 0)  # 3000 = 8 * 375: the 375 is lost to the wrap
    assert congruence(parse("(mul (range 0 1000000) 3000)")) == (3000, 0)  # index: exact


def test_is_multiple_rejects_a_non_positive_width() -> None:
    with pytest.raises(ValueError, match="positive"):
        is_multiple(parse("4"), 0)


_LEAF = st.sampled_from([R0, R1, "(var n -5 5)", "3", "-8", "4"])


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _LEAF
    sub = _expr(depth - 1)
    const = st.sampled_from(["2", "3", "4", "8", "-4", "12"])
    return st.one_of(
        _LEAF,
        st.tuples(st.sampled_from(["add", "sub", "mul", "max", "min"]), sub, sub).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["idiv", "mod", "floordiv", "floormod"]), sub, const).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, sub).map(lambda t: f"(where (lt {R1} 3) {t[0]} {t[1]})"),
        sub.map(lambda s: f"(neg {s})"),
    )


@settings(max_examples=150, deadline=None)
@given(_expr(3))
def test_congruence_holds_for_every_value(text: str) -> None:
    """Random index expressions: each value, over every value of its leaves, satisfies
    the congruence found."""
    _check_all_values(parse(text))


# ---- the aligned copy of a kernel (lowering.cemit, Target.aligned) --------------------------
@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


def _scale_kernel(offset: str, size: int, row: str = "(range 0 16)") -> str:
    """out[i] = 2 * a[i] over i = 4*row + lane + offset, the lane an upcast range: a
    vector load and a vector store per iteration."""
    i = f"(add (add (mul {row} 4) (range 1 4 upcast)) {offset})"
    return (f"(sink (end (store (index (buffer 0 f32 {size}) {i}) (mul (load (index "
            f"(buffer 1 f32 {size}) {i})) 2.0)) (range 0 16) (range 1 4 upcast)))")


# kernel, Target.aligned, the slots the aligned copy checks
ALIGNED_COPY = [
    (_scale_kernel("0", 64), True, (0, 1)),
    (_scale_kernel("8", 72), True, (0, 1)),
    (_scale_kernel("-4", 64, "(add (range 0 16) 1)"), True, (0, 1)),  # a negative offset
    (_scale_kernel("2", 66), True, ()),  # 4*r0 + 2: never a multiple of 4
    (_scale_kernel("(var n 0 3)", 67), True, ()),  # any n: not proven
    (_scale_kernel("(mul (var n 0 3) 4)", 76), True, (0, 1)),
    (_scale_kernel("0", 64), False, ()),
]


def _misaligned(n: int, shift: int) -> np.ndarray:
    """A C-contiguous f32 array whose address is ``4 * shift`` bytes past a multiple of 16."""
    raw = np.zeros(n + 8, np.float32)
    start = (-(raw.ctypes.data // 4) + shift) % 4
    out = raw[start:start + n]
    assert out.ctypes.data % 16 == 4 * shift
    return out


@pytest.mark.parametrize("text, aligned, slots", ALIGNED_COPY)
@pytest.mark.parametrize("shifts", [(0, 0), (1, 0), (0, 3), (2, 2)])
def test_aligned_copy_right_whatever_the_addresses(text: str, aligned: bool,
                                                    slots: tuple[int, ...],
                                                    shifts: tuple[int, int], cache) -> None:
    """The aligned copy is made where the offsets are proven, and the kernel gives the
    interpreter's result for aligned and misaligned buffers alike."""
    g = parse(text)
    k = compile_kernel(g, optimize=False, target=Target(aligned=aligned), cache_dir=cache)
    assert k.signature.aligned == slots
    assert ("kernel_aligned(" in k.c_source) == bool(slots)
    assert k.c_source.count("__builtin_memcpy(&vec") == 1 + bool(slots)  # a vector load
    size = k.signature.buffers[0][2]
    out, a = _misaligned(size, shifts[0]), _misaligned(size, shifts[1])
    a[:] = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    want = [out.copy(), a.copy()]
    run_kernel(g, want, {"n": 1} if "var n" in text else None)
    k(out, a, **({"n": 1} if "var n" in text else {}))
    np.testing.assert_array_equal(out, want[0])


@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_expression_kernel_returns_through_the_aligned_copy(shift: int, cache) -> None:
    """An expression kernel (a returned value) with a vector load: its aligned copy
    returns the value, and a misaligned buffer gives the same."""
    b = "(buffer 0 f32 64)"
    row = "(mul (var n 0 15) 4)"
    loads = [f"(load (index {b} (add {row} {i})))" for i in range(4)]
    g = parse(f"(add (add (add {loads[0]} {loads[1]}) {loads[2]}) {loads[3]})")
    k = compile_kernel(g, optimize=False, cache_dir=cache)
    assert k.signature.aligned == (0,)
    a = _misaligned(64, shift)
    a[:] = np.arange(64, dtype=np.float32) * 0.5
    assert k(a, n=3) == evaluate(g, {"n": 3}, buffers=[a])
