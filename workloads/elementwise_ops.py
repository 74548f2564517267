"""The elementwise ops of the ``unary``/``binary`` builders, one table per arity:
per name, the IR operation, its numpy equivalent and whether it needs a float
dtype. The builders (:mod:`workloads.kernels`) and the numpy references
(:mod:`workloads.numpy_ref`) both read these tables.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["UNARY_OPS", "BINARY_OPS"]

UNARY_OPS: dict[str, tuple[Callable[[UOp], UOp], Callable[[np.ndarray], np.ndarray], bool]] = {
    # name: (IR, numpy, float only)
    "neg": (lambda x: -x, lambda a: -a, False),
    "relu": (lambda x: x.maximum(0), lambda a: np.maximum(a, a.dtype.type(0)), False),
    "square": (lambda x: x * x, lambda a: a * a, False),
    "sqrt": (lambda x: x.alu(Ops.SQRT), np.sqrt, True),
    "exp2": (lambda x: x.alu(Ops.EXP2), np.exp2, True),
    "log2": (lambda x: x.alu(Ops.LOG2), np.log2, True),
    "recip": (lambda x: x.alu(Ops.RECIP), lambda a: a.dtype.type(1) / a, True),
}

BINARY_OPS: dict[str, tuple[Callable[[UOp, UOp], UOp], Callable[..., np.ndarray], bool]] = {
    "add": (lambda x, y: x + y, np.add, False),
    "sub": (lambda x, y: x - y, np.subtract, False),
    "mul": (lambda x, y: x * y, np.multiply, False),
    "max": (lambda x, y: x.maximum(y), np.maximum, False),
    "min": (lambda x, y: x.alu(Ops.MIN, y), np.minimum, False),
    "fdiv": (lambda x, y: x / y, np.divide, True),
}
