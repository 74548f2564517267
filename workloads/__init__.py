"""Workloads: kernel graphs for tests, notebooks and benchmarks, with their numpy
references. The lowering does not use them; they are what it is tested and
measured on.

- :mod:`workloads.views`: :class:`View` (strided, masked, stacked layers) and its
  movement ops: how a tensor compiler turns loop indices into a buffer address;
- :mod:`workloads.tiling`: loop schedules of a kernel's output (:class:`Tiling`,
  :func:`auto_tiling`);
- :mod:`workloads.kernels`: the kernel builders and their registry
  (:data:`BUILDERS`, :func:`make`, :func:`reference`);
- :mod:`workloads.numpy_ref`: the builders' numpy references (:func:`apply_numpy`
  for a movement chain);
- :mod:`workloads.elementwise_ops`: the elementwise ops of the ``unary`` and
  ``binary`` builders (IR and numpy side by side).

    >>> from workloads import make
    >>> k = make("permute", shape=(4, 6), order=(1, 0))
    >>> k.output_shape, k.input_shapes
    ((6, 4), [(4, 6)])
"""

from workloads.elementwise_ops import BINARY_OPS, UNARY_OPS
from workloads.kernels import (
    BUILDERS,
    BuilderSpec,
    BuiltKernel,
    avgpool2d,
    binary,
    conv2d,
    copy,
    cumsum,
    elementwise,
    expand,
    flip,
    kernel,
    load,
    make,
    matmul,
    maxpool2d,
    pad,
    permute,
    pool2d,
    reduce,
    reference,
    reshape,
    shrink,
    stride,
    unary,
)
from workloads.numpy_ref import apply_numpy
from workloads.tiling import Tiling, auto_tiling
from workloads.views import BuildError, View, contiguous_strides, unravel

__all__ = [
    "BuildError", "View", "Tiling", "auto_tiling", "BuiltKernel", "BuilderSpec", "BUILDERS",
    "make", "reference",
    "apply_numpy", "unravel", "contiguous_strides",
    "elementwise", "unary", "binary", "copy", "permute", "pad", "shrink", "flip", "stride",
    "expand", "reshape", "reduce", "matmul", "conv2d", "pool2d", "maxpool2d", "avgpool2d",
    "cumsum", "load", "kernel", "UNARY_OPS", "BINARY_OPS",
]
