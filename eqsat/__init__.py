"""uop-eqsat: optimize tensor-compiler UOp graphs by equality saturation."""

from __future__ import annotations

import importlib
from typing import Any

from eqsat.ir.dtype import DType, DTypeError, can_safe_cast, dtypes, least_upper_dtype
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import IRError, UOp, const_value

# names defined in submodules, imported on first use (keeps `import eqsat` light
# and free of import cycles)
_LAZY = {
    "parse": "eqsat.ir.sexpr", "to_sexpr": "eqsat.ir.sexpr", "ParseError": "eqsat.ir.sexpr",
    "evaluate": "eqsat.ir.interp", "run_kernel": "eqsat.ir.interp", "EvalError": "eqsat.ir.interp",
    "check_equivalent": "eqsat.ir.equiv", "Equivalence": "eqsat.ir.equiv",
    "check_kernels": "eqsat.ir.kernel_equiv",
    "optimize": "eqsat.api", "optimize_many": "eqsat.api", "Budget": "eqsat.api",
    "Result": "eqsat.api", "CHUNK": "eqsat.api", "session_for": "eqsat.engines.egraph",
    "UPat": "eqsat.ir.pattern", "Rule": "eqsat.ir.pattern", "PatternMatcher": "eqsat.ir.pattern",
    "graph_rewrite": "eqsat.ir.pattern",
    "from_tinygrad": "eqsat.tinygrad", "to_tinygrad": "eqsat.tinygrad",
}

__all__ = [
    "DType", "DTypeError", "GroupOp", "IRError", "Ops", "UOp", "can_safe_cast",
    "const_value", "dtypes", "least_upper_dtype", *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'eqsat' has no attribute {name!r}")
