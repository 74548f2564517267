"""check_kernels (and check_equivalent on kernels): pairs of kernels, the signature
errors, the work budget, the counterexample, trace_kernel, and kernels against their
optimizations (fuzzed kernels, the workloads' builders)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eqsat
import workloads
from eqsat.ir.dtype import dtypes
from eqsat.ir.equiv import check_equivalent
from eqsat.ir.interp import EvalError, run_kernel, trace_kernel
from eqsat.ir.kernel_equiv import check_kernels
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from tests.strategies import SeededDraw, fuzz_kernel

R = "(range 0 60)"
RN = "(range 0 (var n 1 60))"
R64 = "(range 0 64)"


def k(store: str, t: str = "f32", loop: str = R) -> UOp:
    """A kernel: ``store`` run over ``loop`` (``L``); ``O`` is the output buffer (slot 0,
    64 elements of ``t``), ``I`` the input (slot 1), ``X`` its element at ``L``."""
    o, i = f"(buffer 0 {t} 64)", f"(buffer 1 {t} 64)"
    x = f"(load (index {i} {loop}))"
    text = store.replace("O", o).replace("X", x).replace("I", i).replace("L", loop)
    return parse(f"(sink (end {text} {loop}))" if "(reduce" not in text else f"(sink {text})")


def st_(index: str = "L", value: str = "X", gate: str = "") -> str:
    """A store of ``value`` at ``index`` of ``O`` (where ``gate`` holds)."""
    return f"(store (index O {index}{' ' + gate if gate else ''}) {value})"


def sum_of(index: str) -> str:
    """A store of the sum of ``I`` read at ``index`` over ``L``."""
    return st_("0", f"(reduce add (load (index I {index})) L)")


S, UNDEF, LOAD4 = st_(), st_(value="(idiv X X)"), "(load (index I (add L 4)))"
OUT = UOp.buffer(0, dtypes.f32, 64)


# ---- pairs: one line per case (a, b, equivalent, what the difference is) -------------
@pytest.mark.parametrize("a,b,same,why", [
    (k(S), k(st_("(add (mul (idiv L 10) 10) (mod L 10))")), True, ""),
    (k(S), k(st_("(add L 1)")), False, "element 0: values differ"),  # b leaves 0 as it was
    (k(S), k(st_(value="(load (index I (sub 59 L)))")), False, "values differ"),
    (k(S), k(st_(value="(add X 0.0)")), False, "values differ"),  # -0.0 + 0.0 is 0.0
    (k(st_(gate="(lt L 5)")), k(st_(gate="(lt L 6)")), False, "element 5: b writes"),
    (k(st_(gate="(lt L 6)")), k(st_(gate="(lt L 5)")), False, "element 5: values differ"),
    (k(st_(gate="(lt L 5)")), k(st_("(where (lt L 5) L (invalid))")), True, ""),
    (k(sum_of("L")), k(sum_of("L")), True, ""),
    (k(sum_of("L")), k(sum_of("(sub 59 L)")), False, "element 0: values differ"),  # float adds
    (k(sum_of("L"), "i32"), k(sum_of("(sub 59 L)"), "i32"), True, ""),  # integers: any order
    (k(UNDEF, "i32"), k(st_(value="1"), "i32"), True, ""),  # a undefined where X is 0
    (k(st_(value="1"), "i32"), k(UNDEF, "i32"), False, "b's value is undefined"),
    (k(st_(value="(mul X 1.0)")), k(S), True, ""),  # a's NaN is computed: any NaN
    (k(S), k(st_(value="(mul X 1.0)")), False, "NaN does not keep the bits"),
    (k(st_(value=LOAD4), loop=R64), k(st_(value=f"(where (lt L 60) {LOAD4} 7.0)"), loop=R64),
     True, ""),  # a reads outside I: undefined past 59
    (k(S), k(st_("(where (lt L 50) L (add L 10))")), False, "b fails where a runs"),
    (k(S, loop=RN), k(S, loop=RN), True, ""),
])
def test_pairs(a: UOp, b: UOp, same: bool, why: str) -> None:
    res = check_kernels(a, b)
    assert bool(res) is same and why in res.reason, res
    assert (res.points > 0 or not same) and not res.stopped


def test_a_failing_everywhere_is_skipped() -> None:
    res = check_kernels(k(st_("(add L 10)")), k(S), draws=5)
    assert res and (res.points, res.skipped) == (0, 5)


# ---- the counterexample ----------------------------------------------------------------
def test_counterexample_names_the_draw_and_reproduces() -> None:
    a = k(S, loop=RN)
    b = k(st_(value="(where (lt (var n 1 60) 60) X 0.0)"), loop=RN)
    res = check_kernels(a, b)
    assert not res and res.counterexample == {"n": 60} and res.element[0] == 0, res
    out = run_kernel(a, [x.copy() for x in res.inputs], res.counterexample)[0]
    assert out.flat[res.element[1]].item() == res.a_value != res.b_value == 0.0
    assert "element=(0, " in repr(res)


def test_check_equivalent_compares_kernels() -> None:
    a, b = k(S), k(st_("(add L 1)"))
    assert repr(check_equivalent(a, b)) == repr(check_kernels(a, b))
    assert check_equivalent(a, a, samples=3).points == 3


# ---- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("a,b,match", [
    (k(S), k(S).substitute({OUT: UOp.buffer(0, dtypes.f32, 65)}), "f32.64. in a, f32.65. in b"),
    (k(S), k(st_(value="1"), "i32"), "buffer 0 is f32.64. in a, i32.64. in b"),
    (k(S, loop=RN), k(S, loop="(range 0 (var n 1 61))"), r"var n is index \[1, 60\] in a"),
    (k(S), UOp.var("x", 0, 3), "a has a STORE node and b is an expression"),
    (UOp.var("x", 0, 3), k(S), "b has a STORE node and a is an expression"),
])
def test_errors(a: UOp, b: UOp, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_equivalent(a, b)


def test_expressions_go_to_check_equivalent() -> None:
    with pytest.raises(ValueError, match="compare expressions with check_equivalent"):
        check_kernels(UOp.var("x", 0, 3), UOp.var("x", 0, 3))


# ---- work ------------------------------------------------------------------------------
@pytest.mark.parametrize("huge", [
    k(st_("0", "(load (index I 0))"), loop="(range 0 1000000000)"),
    parse("(sink (end (store (index (buffer 0 f32 4) (range 1 0)) 1.0) (range 0 1000000000) "
          "(range 1 0)))"),  # an empty loop inside: only the iterations are work
])
def test_a_huge_loop_stops_at_the_budget(huge: UOp) -> None:
    res = check_kernels(huge, huge, max_steps=10_000)
    assert res and res.points == 0 and "after 0 of 32 draws" in res.stopped, res


def test_the_runs_a_fails_are_work_too() -> None:
    """a loops 1,000 times, then writes outside its buffer: every draw skipped, each
    charged."""
    a = parse("(sink (end (store (index (buffer 0 f32 4) 0) 1.0) (range 0 1000)) "
              "(store (index (buffer 0 f32 4) 9) 2.0))")
    res = check_kernels(a, a, max_steps=20_000)
    assert res and res.points == 0 and 0 < res.skipped < 32 and res.stopped, res


def test_huge_buffers_are_not_filled() -> None:
    big = parse("(sink (store (index (buffer 0 u8 33554432) 0) (const u8 1)))")
    res = check_kernels(big, big)
    assert res and res.points == 0 and "33554432 elements, more than" in res.stopped


@pytest.mark.parametrize("kwargs, match", [({"draws": 0}, "draws >= 1"),
                                           ({"max_steps": -1}, "max_steps >= 0")])
def test_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_kernels(k(S), k(S), **kwargs)
    with pytest.raises(TypeError, match="b is a str"):
        check_kernels(k(S), "(sink)")


def test_the_budget_counts_draws_not_time() -> None:
    a = k(S)
    steps = trace_kernel(a, [np.zeros(64, np.float32)] * 2).steps
    res = check_kernels(a, a, max_steps=7 * steps)
    assert res.points == 3 and res.stopped.endswith("after 3 of 32 draws"), res


# ---- trace_kernel: what a run wrote ----------------------------------------------------
def test_trace_marks_undefined_stores() -> None:
    a = k(st_(value="(idiv 6 X)", gate="(lt L 3)"), "i32")
    bufs = [np.zeros(64, np.int32), np.array([0, 2, 3] + [1] * 61, np.int32)]
    t = trace_kernel(a, bufs)
    assert (sorted(t.written), list(t.undefined)) == ([(0, 0), (0, 1), (0, 2)], [(0, 0)])
    assert list(bufs[0][:3]) == [0, 3, 2] and not t.failed
    bad = trace_kernel(k(st_("(add L 10)")), [np.zeros(64, np.float32)] * 2)
    assert "write outside buffer 0" in bad.failed and len(bad.written) == 54 and bad.steps
    with pytest.raises(EvalError, match="store of an undefined value"):
        run_kernel(a, bufs)


# ---- optimized kernels ----------------------------------------------------------------
def widened_and_shifted(g: UOp) -> tuple[UOp, UOp]:
    """``g`` with its first store's buffer one element longer, and that kernel with the
    store's index one element on: it writes an element the first leaves alone."""
    ix = next(u for u in g.toposort() if u.op is Ops.STORE).src[0]
    buf = ix.src[0]
    wide = UOp.buffer(buf.arg[0], buf.dtype.base(), buf.arg[1] + 1)
    ix_wide = ix.replace(src=(wide, *ix.src[1:]))
    shifted = ix_wide.replace(src=(wide, ix.src[1] + 1, *ix.src[2:]))
    a = g.substitute({ix: ix_wide})
    return a, a.substitute({ix_wide: shifted})


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 10**6), st.sampled_from(["baseline", "egraph"]))
def test_optimized_fuzz_kernels_are_equivalent(seed: int, engine: str) -> None:
    a = fuzz_kernel(SeededDraw(seed))
    assert check_kernels(a, eqsat.optimize(a, engine=engine).graph, draws=8), seed
    wide, mutant = widened_and_shifted(a)
    assert not check_kernels(wide, mutant, draws=4), seed


@pytest.mark.parametrize("engine", ["baseline", "egraph"])
@pytest.mark.parametrize("name", sorted(workloads.BUILDERS))
def test_optimized_workloads_are_equivalent(name: str, engine: str) -> None:
    a = workloads.make(name).graph
    assert check_kernels(a, eqsat.optimize(a, engine=engine).graph, draws=4)
