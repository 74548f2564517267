"""The expander (lowering/expand.py): upcast/unroll ranges become lanes, a reduction one
accumulator per lane of its output tile, the C bit-exact against the interpreter."""

from __future__ import annotations

import gc
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.ir.interp import run_kernel
from eqsat.ir.sexpr import parse
from lowering import Target, compile_kernel, lower_graph
from lowering.expand import expand

A = "(buffer 1 f32 64)"
B = "(buffer 2 f32 64)"
OUT = "(buffer 0 f32 64)"
# an 8x8 matmul, C[i, j] = sum_k A[i, k] * B[k, j]: i = r0*2 + r1, j = r2*2 + r3,
# k = r4*2 + r5 (r1, r3 upcast: a 2x2 tile; r5 unroll)
MATMUL = f"""
%i = (add (mul (range 0 4) 2) (range 1 2 upcast))
%j = (add (mul (range 2 4) 2) (range 3 2 upcast))
%k = (add (mul (range 4 4 reduce) 2) (range 5 2 unroll))
%p = (mul (load (index {A} (add (mul %i 8) %k))) (load (index {B} (add (mul %k 8) %j))))
(sink (end (store (index {OUT} (add (mul %i 8) %j)) (reduce add %p (range 4 4 reduce)
  (range 5 2 unroll))) (range 0 4) (range 1 2 upcast) (range 2 4) (range 3 2 upcast)))"""


def _kernel(text: str, kinds: dict[str, str] | None = None) -> str:
    for a, b in (kinds or {}).items():
        text = text.replace(a, b)
    return text


def _check(text: str, target: Target | None = None, seed: int = 0) -> tuple[str, Counter]:
    """Compile ``text`` (no optimizer), run it on random inputs: bit-exact against the
    interpreter. Returns the C body and the expander's counts."""
    g = parse(text)
    low = lower_graph(g, target=target)
    k = compile_kernel(g, optimize=False, target=target)
    rng = np.random.default_rng(seed)
    bufs = [np.zeros(n, np.float32) if slot == 0 else rng.standard_normal(n).astype(np.float32)
            for slot, _, n in k.signature.buffers]
    want = [b.copy() for b in bufs]
    k(*bufs)
    run_kernel(g, want)
    np.testing.assert_array_equal(bufs[0].view(np.uint32), want[0].view(np.uint32))
    src = k.c_source
    return src[src.find("void kernel("):], Counter(low.stats["expanded"])


def _loops(body: str) -> int:
    return body.count("for (")


# one line a case: the kernel and Target.jam, then (loops left, accumulators, expanded
# ENDs, expanded reductions) in its C
@pytest.mark.parametrize("text, jam, loops, accs, ends, reds", [
    # the matmul: 3 loops (i, j, k), a 2x2 tile of accumulators, k's unroll folded in
    (MATMUL, 1, 3, 4, 1, 1),
    # jammed: j's loop halves, its lanes double the tile to 8 accumulators
    (MATMUL, 2, 3, 8, 1, 1),
    # j's loop of 4 jammed whole: a 2x8 tile, j no longer a loop
    (MATMUL, 4, 2, 16, 1, 1),
    # j's 4 iterations are not a multiple of 3: as the tile came
    (MATMUL, 3, 3, 4, 1, 1),
    # every range a loop: 6 loops, one accumulator (no tile to jam)
    (_kernel(MATMUL, {" upcast)": ")", " unroll)": ")"}), 2, 6, 1, 0, 0),
    # only the tile: the unroll range stays a loop inside the reduction
    (_kernel(MATMUL, {" unroll)": ")"}), 1, 4, 4, 1, 1),
    (_kernel(MATMUL, {" unroll)": ")"}), 2, 4, 8, 1, 1),
    # only the reduction's unroll: one accumulator, 2 products a step (no tile to jam)
    (_kernel(MATMUL, {" upcast)": ")"}), 2, 5, 1, 0, 1),
])
def test_matmul_tiles(text, jam, loops, accs, ends, reds):
    body, counts = _check(text, Target(jam=jam))
    assert _loops(body) == loops, body
    assert len(set(re.findall(r"acc\d+\[0\] = 0", body))) == accs, body
    assert counts["expand_end"] == ends and counts["expand_reduce"] == reds
    assert counts["jam"] == (accs > 4), counts


# a matmul that accumulates into its output (C += A @ B): the body loads the buffer it
# stores, so jamming would move a load before a store of the iteration before; left alone
ACCUMULATE = MATMUL.replace(f"(store (index {OUT} (add (mul %i 8) %j)) (reduce",
                            f"(store (index {OUT} (add (mul %i 8) %j)) (add (load (index {OUT} "
                            "(add (mul %i 8) %j))) (reduce").replace(
    "(range 5 2 unroll))) (range 0 4)", "(range 5 2 unroll)))) (range 0 4)")


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from(["", " unroll)"]), st.integers(0, 2**16))
def test_jammed_tiles_bit_exact(jam, keep_loop, seed):
    """Any jam factor, the unroll lanes or a loop: the C equals the interpreter bit for
    bit on random inputs (``_check``)."""
    text = _kernel(MATMUL, {keep_loop: ")"} if keep_loop else None)
    _, counts = _check(text, Target(jam=jam), seed)
    assert counts["jam"] == (jam > 1)


@pytest.mark.parametrize("jam", [0, -2, 2.0, True, "2"])
def test_jam_factor_must_be_a_positive_int(jam):
    with pytest.raises(ValueError, match="Target.jam"):
        Target(jam=jam)


def test_jam_leaves_a_tile_that_reads_its_output():
    assert ACCUMULATE != MATMUL
    body, counts = _check(ACCUMULATE, Target(jam=2))
    assert not counts["jam"] and counts["expand_reduce"] == 1
    assert body == _check(ACCUMULATE, Target(jam=1))[0]


def test_matmul_fused_accumulate_order():
    """With Target.fma each step is fma(a, b, acc), the unroll lanes in order: the chain
    clang makes of tinygrad's ``acc + a0*b0 + a1*b1``."""
    g = parse(MATMUL)
    body = lower_graph(g, target=Target(fma=True, jam=1)).c_source
    chains = re.findall(r"acc\d+\[0\] = (__builtin_fmaf\(.*\));", body)
    assert len(chains) == 4 and all(c.count("__builtin_fmaf(") == 2 for c in chains), body
    assert "-ffp-contract=off" in compile_kernel(g, optimize=False, target=Target(fma=True),
                                                 compile=False).flags


ELEMENTWISE = f"""
%i = (add (mul (range 0 16) 4) (range 1 4 upcast))
(sink (end (store (index {OUT} %i) (add (load (index {A} %i)) (load (index {B} %i))))
  (range 0 16) (range 1 4 upcast)))"""

MAXPOOL = f"""
%o = (add (mul (range 0 4) 4) (range 1 4))
%x = (load (index {A} (add (add (mul (range 0 4) 16) (mul (range 2 2 unroll) 8))
  (add (mul (range 1 4) 2) (range 3 2 unroll)))))
(sink (end (store (index {OUT} %o) (reduce max %x (range 2 2 unroll) (range 3 2 unroll)))
  (range 0 4) (range 1 4)))"""


@pytest.mark.parametrize("text, loops, accs, vector_loads", [
    (ELEMENTWISE, 1, 0, 2),   # 4 lanes: two 16-byte loads, one store of 4
    (MAXPOOL, 2, 0, 0),       # a 2x2 window folded without an accumulator
    # the upcast range first: the lanes run out of the loops' order, which is fine here
    # (every element written once, nothing read back)
    (_kernel(ELEMENTWISE, {"(range 0 16) (range 1 4 upcast)))":
                           "(range 1 4 upcast) (range 0 16)))"}), 1, 0, 2),
])
def test_lanes(text, loops, accs, vector_loads):
    body, _ = _check(text)
    assert _loops(body) == loops, body
    assert body.count("acc") == accs and body.count("__builtin_memcpy(&vec") == vector_loads


def test_reordering_lanes_needs_independent_iterations():
    """A running sum in place (each element reads the one before): an upcast range before
    a loop stays a loop, the order of the stores is the kernel's."""
    text = f"""
%i = (add (mul (range 1 4 upcast) 16) (range 0 16))
%prev = (load (index (after {OUT} (range 0 16)) (add %i -1)))
(sink (end (store (index {OUT} %i) (add (load (index {A} %i)) (where (lt 0 (range 0 16))
  %prev 0.0))) (range 1 4 upcast) (range 0 16)))"""
    g = parse(text)
    counts: Counter = Counter()
    expand(g, counts=counts)
    assert counts["expand_end"] == 0


def test_reduction_keeps_float_order():
    """An unroll range listed before the reduction's loop is not folded into it (that
    would reorder the float sum): it stays a loop."""
    text = _kernel(MATMUL, {"(range 4 4 reduce)\n  (range 5 2 unroll)":
                            "(range 5 2 unroll) (range 4 4 reduce)"})
    assert "(range 5 2 unroll) (range 4 4 reduce)" in text
    body, counts = _check(text)
    assert counts["expand_reduce"] == 1 and _loops(body) == 4  # i, j, then k's two loops


def test_non_constant_lanes_stay_loops():
    text = f"""
%i = (range 0 (var n 1 16) upcast)
(sink (end (store (index {OUT} %i) (load (index {A} %i))) (range 0 (var n 1 16) upcast)))"""
    g = parse(text)
    counts: Counter = Counter()
    assert expand(g, counts=counts) is g and not counts


@pytest.mark.parametrize("name", ["elementwise", "permute", "pad", "reduce", "matmul",
                                  "conv2d", "maxpool", "cumsum"])
def test_tinygrad_kernels_are_expanded(name):
    """tinygrad's schedule of each kernel (small shapes; its register tiles and unrolls)
    has upcast or unroll ranges, and the lowering turns them into lanes. Their results,
    bit for bit against tinygrad's program on its CPU or PYTHON device:
    tests/lowering/test_vs_tinygrad_kernels.py."""
    tk = pytest.importorskip("benchmarks.tinygrad_kernels")
    case = {c.name: c for c in tk.CASES}[name]
    expanded = Counter()
    for k in tk.schedule(case, "small"):
        ours = compile_kernel(k.graph, target=tk.device_target(k.dev), compile=False)
        expanded.update(ours.lowered.stats["expanded"])
    assert expanded



# a reduction under two upcast ranges (7 and 9): its accumulators are one per lane of both
TILE = """
%o = (add (add (mul (range 0 4) 4) (mul (range 7 2 upcast) 2)) (range 9 2 upcast))
(sink (end (store (index (buffer 0 f32 16) %o) (reduce add (load (index (buffer 1 f32 64)
  (add (mul %o 4) (range 3 4 reduce)))) (range 3 4 reduce))) (range 0 4) (range 7 2 upcast)
  (range 9 2 upcast)))"""
# a reduction under an upcast range and a loop of 8 that jam splits into a loop of 4 and
# a new upcast range 3 of 2 lanes (narrowed: its END an i32)
JAMMED = """
%o = (add (mul (range 1 8 weak) 4) (range 2 4 upcast))
(sink (end (store (index (buffer 0 f32 32) %o) (reduce add (load (index (buffer 1 f32 512)
  (add %o (mul (range 0 16 reduce) 32)))) (range 0 16 reduce))) (range 1 8 weak)
  (range 2 4 upcast)))"""


def _c_after(text: str, first: tuple[str, ...]) -> str:
    """``text``'s C, lowered while the ranges ``first`` (made in that order before it,
    kept alive so that parsing and the jam hand them back) are the process's oldest."""
    gc.collect()
    alive = [parse(r) for r in first]
    c = lower_graph(parse(text), target=Target(jam=2)).c_source
    assert all(r.uid < parse(text).uid for r in alive)
    return c


# one line a case: the kernel, then the ranges made first in one run and in the other
@pytest.mark.parametrize("text, one, other", [
    (TILE, ("(range 7 2 upcast)", "(range 9 2 upcast)"),
     ("(range 9 2 upcast)", "(range 7 2 upcast)")),
    (JAMMED, (), ("(range 3 (const i32 2) upcast)",)),
    (JAMMED, ("(range 2 4 upcast)", "(range 3 (const i32 2) upcast)"),
     ("(range 3 (const i32 2) upcast)", "(range 2 4 upcast)")),
])
def test_lowering_does_not_depend_on_creation_order(text: str, one: tuple[str, ...],
                                                    other: tuple[str, ...]) -> None:
    """The same kernel gives the same C whichever of its ranges the process made first
    (a node's uid is its creation number: no order in the lowering may follow it)."""
    c = _c_after(text, one)
    assert c.count("acc") >= 4
    assert _c_after(text, other) == c
