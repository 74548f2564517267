"""pm_move_where_on_load (docs/rules.md, seed 000 §17): a masked load's condition moves into
its index. Each rewrite is checked by running both kernels on the same buffers."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat import parse
from eqsat.ir.dtype import dtypes
from eqsat.ir.interp import run_kernel
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from tests.rules._cases import check_rewrite, untouched_test

BUF = "(buffer 1 f32 64)"
R0, R1 = "(range 0 8)", "(range 1 4)"


def same_kernel(a_text: str, b: UOp) -> None:
    """Store the value of both expressions for every (r0, r1) and compare the buffers."""
    r0, r1 = parse(R0), parse(R1)
    out_buf = UOp.buffer(0, dtypes.f32, 32)
    ix = UOp(Ops.INDEX, out_buf.dtype, (out_buf, r1 * 8 + r0))
    outs = []
    for g in (parse(a_text), b):
        k = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (
            UOp(Ops.STORE, dtypes.void, (ix, g)), r1, r0)),))
        src = np.arange(64, dtype=np.float32) + 1
        dst = np.zeros(32, dtype=np.float32)
        run_kernel(k, [dst, src])
        outs.append(dst)
    assert np.array_equal(outs[0], outs[1])


POSITIVE = [
    ("where_on_load", f"(where (lt {R0} 5) (load (index {BUF} {R0})) 0.0)",
     f"(load (index {BUF} (where (lt {R0} 5) {R0} (invalid))))"),
    # a clause on a range the index does not use stays outside
    ("where_on_load", f"(where (and (lt {R0} 5) (lt {R1} 3)) (load (index {BUF} {R0})) 0.0)",
     f"(where (lt {R1} 3) (load (index {BUF} (where (lt {R0} 5) {R0} (invalid)))) 0.0)"),
    # clauses already in the index's validity are not repeated
    ("where_on_load", f"(where (lt {R0} 5) (load (index {BUF} (where (lt {R0} 5) {R0} "
     "(invalid)))) 0.0)", f"(load (index {BUF} (where (lt {R0} 5) {R0} (invalid))))"),
    ("where_on_load", f"(where (lt 2 {R0}) (load (index {BUF} (where (lt {R0} 6) {R0} "
     "(invalid)))) 0.0)",
     f"(load (index {BUF} (where (and (lt {R0} 6) (lt 2 {R0})) {R0} (invalid))))"),
    # the mirrored form moves the negated condition
    ("where_on_load_negated", f"(where (lt {R0} 5) 0.0 (load (index {BUF} {R0})))",
     f"(load (index {BUF} (where (lt 4 {R0}) {R0} (invalid))))"),
]


@pytest.mark.parametrize("rule,text,want", POSITIVE)
def test_moves(rule: str, text: str, want: str) -> None:
    _, out = check_rewrite(rule, text, want, expect=parse)
    same_kernel(text, out)


BLOCKED = [
    # no clause uses only the index's ranges
    f"(where (lt {R1} 3) (load (index {BUF} {R0})) 0.0)",
    # a load with an alternative value does not read 0 through an Invalid index
    f"(where (lt {R0} 5) (load (index {BUF} {R0}) 2.0) 0.0)",
    # the other branch is not 0
    f"(where (lt {R0} 5) (load (index {BUF} {R0})) 1.0)",
    # nor +0.0: a load off its gate reads 0.0, not -0.0 (found by the kernel fuzzer)
    f"(where (lt {R0} 5) (load (index {BUF} {R0})) -0.0)",
    f"(where (lt {R0} 5) -0.0 (load (index {BUF} {R0})))",
]


test_stays = untouched_test("where_on_load", BLOCKED)
