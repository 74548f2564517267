"""uop-eqsat: optimize tensor-compiler UOp graphs by equality saturation."""

from __future__ import annotations

import importlib
from typing import Any

from eqsat.dtype import DType, DTypeError, can_safe_cast, dtypes, least_upper_dtype
from eqsat.ops import GroupOp, Ops
from eqsat.uop import IRError, UOp, const_value

# names defined in submodules, imported on first use (keeps `import eqsat` light
# and free of import cycles)
_LAZY = {
    "parse": "eqsat.sexpr", "to_sexpr": "eqsat.sexpr", "ParseError": "eqsat.sexpr",
    "evaluate": "eqsat.interp", "run_kernel": "eqsat.interp", "EvalError": "eqsat.interp",
    "check_equivalent": "eqsat.equiv", "Equivalence": "eqsat.equiv",
    "optimize": "eqsat.api", "optimize_many": "eqsat.api", "Budget": "eqsat.api",
    "Result": "eqsat.api",
    "UPat": "eqsat.pattern", "Rule": "eqsat.pattern", "PatternMatcher": "eqsat.pattern",
    "graph_rewrite": "eqsat.pattern",
}

__all__ = [
    "DType", "DTypeError", "GroupOp", "IRError", "Ops", "UOp", "can_safe_cast",
    "const_value", "dtypes", "least_upper_dtype", *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'eqsat' has no attribute {name!r}")
