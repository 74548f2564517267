"""Gated float sums start their loop after the leading run of terms the gate turns off
(lowering/trim.py): the C equals the interpreter bit for bit, and the table says which
kernels are trimmed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lowering import Target
from tests.lowering.test_expand import _check

A = "(buffer 1 f32 64)"
OUT = "(buffer 0 f32 64)"


def _cumsum(gate: str, op: str = "add", alt: str = "", lanes: str = "unroll") -> str:
    """A cumsum-like kernel: out[i] = op over k < 8 of A[k + i - 7] where ``gate`` (in
    ``%x = k + i``) holds; k = 2*r0 + r5 (r5 ``lanes``), i = r3 (a 2-lane upcast tile)."""
    return f"""
%k = (add (mul (range 0 4 reduce) 2) (range 5 2 {lanes}))
%i = (add (mul (range 3 4) 2) (range 4 2 upcast))
%x = (add %k %i)
%v = (load (index {A} (add %x 8) {gate}))
(sink (end (store (index {OUT} %i) (reduce {op} {alt or "%v"} (range 0 4 reduce)
  (range 5 2 {lanes}))) (range 3 4) (range 4 2 upcast)))"""


# one line a case: the kernel, then whether its sum is trimmed
@pytest.mark.parametrize("text, trimmed", [
    # the cumsum's gate, k + i > 6: the leading k of every i are off
    (_cumsum("(lt 6 %x)"), True),
    # a conjunction: either conjunct off turns the term off
    (_cumsum("(and (lt 6 %x) (lt %x 20))"), True),
    # off at the end of the loop (x < 9), not at its start: left alone
    (_cumsum("(lt %x 9)"), False),
    # a max, not a sum: left alone
    (_cumsum("(lt 6 %x)", op="max"), False),
    # the term is not the gated load itself: left alone
    (_cumsum("(lt 6 %x)", alt="(mul %v 2.0)"), False),
    # the reduction's lanes a loop: still one loop to trim
    (_cumsum("(lt 6 %x)", lanes="reduce"), False),
])
def test_trim_table(text, trimmed):
    body, counts = _check(text, Target(jam=1))
    assert bool(counts["trim"]) == trimmed, body
    loop = re.search(r"for \(int32_t ridx0 = 0; ridx0 < (\w+);", body)
    assert loop is not None and (loop.group(1) != "4") == trimmed, body


@settings(max_examples=10, deadline=None)
@given(st.integers(-4, 24), st.integers(-4, 24), st.sampled_from([1, 2]),
       st.integers(0, 2**16))
def test_trimmed_sums_bit_exact(lo, hi, jam, seed):
    """Any gate bounds, jammed or not: the C equals the interpreter bit for bit."""
    gate = f"(and (lt {lo} %x) (lt %x {hi}))"
    _check(_cumsum(gate), Target(jam=jam), seed)


def test_trim_off_without_split_gates():
    _, counts = _check(_cumsum("(lt 6 %x)"), Target(split_gates=False, jam=1))
    assert not counts["trim"]
