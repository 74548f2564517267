"""A compiled kernel run against the interpreter where an index may leave its buffer
(tests/lowering/test_gather_bounds.py, test_gated_bounds.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from eqsat import EvalError, parse, run_kernel
from lowering import OutOfBoundsError


def runs_like_the_interpreter(k: Any, text: str, got: list[np.ndarray],
                              want: list[np.ndarray], error: str | None) -> None:
    """``k`` (the compiled ``text``) on the arrays ``got`` against ``run_kernel`` on
    ``want`` (equal arrays): the same arrays after, or, with ``error``, an
    ``OutOfBoundsError`` matching it from the call and from ``bound()`` where the
    interpreter reads or writes outside a buffer."""
    if error is None:
        k(*got)
        run_kernel(parse(text), want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        assert k.bound(*got)() is None
        return
    with pytest.raises(OutOfBoundsError, match=error):
        k(*got)
    with pytest.raises(OutOfBoundsError, match=error):
        k.bound(*got)()
    with pytest.raises(EvalError, match="outside buffer"):
        run_kernel(parse(text), want)
