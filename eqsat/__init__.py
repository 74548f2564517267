"""uop-eqsat: optimize tensor-compiler UOp graphs by equality saturation."""

from eqsat.dtype import DType, DTypeError, can_safe_cast, dtypes, least_upper_dtype
from eqsat.ops import GroupOp, Ops
from eqsat.uop import IRError, UOp, const_value

__all__ = [
    "DType", "DTypeError", "GroupOp", "IRError", "Ops", "UOp", "can_safe_cast",
    "const_value", "dtypes", "least_upper_dtype",
]
