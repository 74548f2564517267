"""Kernel builders: kernel graphs for tests, notebooks and benchmarks.

Every builder returns a kernel in the IR: ``SINK(END(STORE(INDEX(out, i), value),
ranges...))`` with the output buffer in slot 0 and the inputs in slots 1, 2, ...
(``DEFINE_GLOBAL`` nodes, flat, row-major). The load addresses are produced the
way a tensor compiler produces them, through a :class:`~workloads.views.View`
(tinygrad's ShapeTracker / rangeify); nothing is simplified here: that is the
optimizer's job.

    >>> from workloads import make
    >>> k = make("permute", shape=(4, 6), order=(1, 0))
    >>> k.output_shape, k.input_shapes
    ((6, 4), [(4, 6)])

``BUILDERS`` maps a name to a :class:`BuilderSpec` (its builder, numpy reference,
shapes, small test cases and a large benchmark case); :func:`make` bundles one
kernel with its shapes and reference; :func:`reference` runs a numpy equivalent.

Loops: ``loops="nd"`` (default) gives one RANGE per output axis, as a tensor
compiler emits; ``loops="flat"`` gives a single RANGE over all output elements,
whose indices are themselves unflattened with ``//``/``%`` (e.g. the transpose of
the spec), and cannot be division-free for a permute; a tuple of tile sizes
(``loops=(128, 16)``) gives tiled loops, outer tiles first, as a tensor compiler
schedules a transpose for locality: 2-D cache blocking over every output axis, the
loops ordered outer tiles, then the tile's axes, the innermost over the contiguous
output axis (``for o0: for o1: for i0: for i1: out[(o0*t0+i0)*n1 + o1*t1+i1] = ...``).
A :class:`~workloads.tiling.Tiling` adds a register tile (``upcast``: unrolled lanes, one STORE
each, as a tensor compiler's UPCAST) and a loop order; ``loops="auto"`` lets a
copy pick one (:func:`~workloads.tiling.auto_tiling`: a 4x4 register tile for a transpose, so
that the C compiler vectorizes it), and means ``"nd"`` for other kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, range_id
from workloads.elementwise_ops import BINARY_OPS, UNARY_OPS
from workloads.numpy_ref import (
    _ref_binary,
    _ref_conv2d,
    _ref_cumsum,
    _ref_matmul,
    _ref_pool2d,
    _ref_reduce,
    _ref_unary,
    apply_numpy,
)
from workloads.tiling import Loops, Tiling, auto_tiling
from workloads.views import BuildError, Chain, Shape, View, _ceildiv, _shape, unravel

__all__ = [
    "BuiltKernel", "BuilderSpec", "BUILDERS", "make", "reference",
    "elementwise", "unary", "binary", "copy", "permute", "pad", "shrink", "flip", "stride",
    "expand", "reshape", "reduce", "matmul", "conv2d", "pool2d", "maxpool2d", "avgpool2d",
    "cumsum", "load", "kernel",
]


# ---------------------------------------------------------------------------
# kernel assembly
# ---------------------------------------------------------------------------

def _dtype(dtype: DType | str) -> DType:
    dt = dtypes.parse(dtype) if isinstance(dtype, str) else dtype
    if not isinstance(dt, DType) or dt.ptr or dt.count != 1 or not (dt.is_float or
                                                                   dt.is_fixed_int):
        raise BuildError(f"kernels need a scalar float or fixed-width int dtype, got {dtype!r}")
    return dt


_VIEW_LOGS: list[list[tuple[int, View]]] = []


def load(buf: UOp, view: View, idxs: Sequence[UOp], alt: UOp | None = None) -> UOp:
    """``LOAD(INDEX(buf, view.address(idxs)))`` (with ``alt`` where the address is invalid)."""
    if view.buffer_size != buf.arg[1]:
        raise BuildError(f"view over {view.buffer_size} elements used on buffer {buf.arg}")
    for log in _VIEW_LOGS:
        log.append((buf.arg[0], view))
    idx = UOp(Ops.INDEX, buf.dtype, (buf, view.address(idxs)))
    src = (idx,) if alt is None else (idx, alt)
    return UOp(Ops.LOAD, buf.dtype.base(), src)


def kernel(out_shape: Sequence[int], dtype: DType | str,
           body: Callable[[list[UOp], Callable[..., UOp]], UOp],
           red_shape: Sequence[int] = (), red_op: Ops | None = None,
           loops: Loops = "nd") -> UOp:
    """Assemble ``SINK(END(STORE(INDEX(out, i), value), ranges...))``.

    ``body(idxs, rng)`` returns the value at output index ``idxs`` (one index
    expression per axis of ``out_shape``, then one RANGE per ``red_shape``
    axis). With ``red_op`` the value is folded by ``REDUCE(red_op, value,
    reduce-ranges)``. ``loops`` is ``"nd"`` (a RANGE per output axis),
    ``"flat"`` (one RANGE unflattened by ``out_shape``) or a tuple of tile
    sizes, one per output axis, each dividing it: an outer RANGE per axis,
    then an inner RANGE per tiled axis (axis index ``outer*tile + inner``).
    """
    dt = _dtype(dtype)
    out_shape, red_shape = _shape(out_shape), _shape(red_shape, "reduce shape")
    if math.prod(out_shape) == 0:
        raise BuildError(f"empty output shape {out_shape}")
    out = UOp.buffer(0, dt, math.prod(out_shape))
    if loops == "auto":  # copies choose a schedule (auto_tiling); other kernels loop per axis
        loops = "nd"
    if loops == "nd":
        ranges = [UOp.range(s, i) for i, s in enumerate(out_shape)]
        lanes = [View.contiguous(out_shape).address(ranges)]
    elif loops == "flat":
        ranges = [UOp.range(math.prod(out_shape), 0)]
        lanes = [ranges[0]]
    elif isinstance(loops, (tuple, list, Tiling)):
        ranges, axes = (loops if isinstance(loops, Tiling) else Tiling(loops)).axes(out_shape)
        lanes = [View.contiguous(out_shape).address(a) for a in axes]
    else:
        raise BuildError(f"loops must be 'nd', 'flat', a tuple of tile sizes or a Tiling, got "
                         f"{loops!r}")
    rid = max(range_id(r) for r in ranges) + 1
    rranges = [UOp.range(s, rid + i) for i, s in enumerate(red_shape)]
    stores = []
    for oidx in lanes:  # one store per unrolled lane (one lane unless upcast)
        # the flat output index, unflattened by the output shape (tinygrad's unravel)
        idxs = unravel(out_shape, oidx)
        value = body(idxs + rranges, lambda slot, size: UOp.buffer(slot, dt, size))
        if red_op is not None:
            value = UOp(Ops.REDUCE, value.dtype, (value, *rranges), red_op)
        elif rranges:
            raise BuildError("reduce ranges without a reduce op")
        if value.dtype is not dt:
            raise BuildError(f"kernel value has dtype {value.dtype}, output is {dt}")
        stores.append(UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, oidx)),
                                                   value)))
    st = stores[0] if len(stores) == 1 else UOp(Ops.SINK, dtypes.void, tuple(stores))
    return UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st, *ranges)),))


def _views(shapes: Sequence[Shape], chains: Sequence[Chain] | None) -> list[View]:
    chains = chains if chains is not None else [()] * len(shapes)
    if len(chains) != len(shapes):
        raise BuildError(f"{len(chains)} movement chains for {len(shapes)} inputs")
    return [View.contiguous(s).apply(c) for s, c in zip(shapes, chains, strict=True)]


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------

def _check_op(table: dict, op: str, dt: DType) -> tuple:
    if op not in table:
        raise BuildError(f"unknown op {op!r}; choose one of {', '.join(table)}")
    entry = table[op]
    if entry[2] and not dt.is_float:
        raise BuildError(f"op {op!r} needs a float dtype, got {dt}")
    return entry


def _out_shape(views: Sequence[View]) -> Shape:
    shapes = {v.shape for v in views}
    if len(shapes) != 1:
        raise BuildError(f"elementwise inputs have different view shapes {sorted(shapes)}")
    return views[0].shape


def elementwise(op: str, shapes: Sequence[Sequence[int]], chains: Sequence[Chain] | None = None,
                dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = op(*inputs)`` where input ``i`` of shape ``shapes[i]`` is seen through
    ``chains[i]``; every view must end at the same shape (the output's)."""
    dt = _dtype(dtype)
    shapes = [_shape(s) for s in shapes]
    table = UNARY_OPS if len(shapes) == 1 else BINARY_OPS if len(shapes) == 2 else None
    if table is None:
        raise BuildError(f"elementwise takes 1 or 2 inputs, got {len(shapes)}")
    fn = _check_op(table, op, dt)[0]
    views = _views(shapes, chains)
    out_shape = _out_shape(views)

    def body(idxs, buf):
        return fn(*[load(buf(i + 1, v.buffer_size), v, idxs) for i, v in enumerate(views)])
    return kernel(out_shape, dt, body, loops=loops)


def unary(op: str = "neg", shape: Sequence[int] = (4, 6), chain: Chain = (),
          dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = op(view(x))`` for ``op`` in :data:`UNARY_OPS`."""
    return elementwise(op, [shape], [chain], dtype, loops)


def binary(op: str = "add", shape: Sequence[int] = (4, 6), shape2: Sequence[int] | None = None,
           chain: Chain = (), chain2: Chain = (), dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """``out = op(view(a), view2(b))`` for ``op`` in :data:`BINARY_OPS`."""
    return elementwise(op, [shape, shape if shape2 is None else shape2], [chain, chain2],
                       dtype, loops)


# ---------------------------------------------------------------------------
# movement copies
# ---------------------------------------------------------------------------

def copy(shape: Sequence[int] = (4, 6), chain: Chain = (), dtype: DType | str = dtypes.f32,
         loops: Loops = "nd") -> UOp:
    """``out = view(x)``: a copy of ``x`` (shape ``shape``) through a movement chain."""
    v = View.contiguous(shape).apply(chain)
    if loops == "auto":
        loops = auto_tiling(v, _dtype(dtype).itemsize)
    return kernel(v.shape, dtype, lambda idxs, buf: load(buf(1, v.buffer_size), v, idxs),
                  loops=loops)


def permute(shape: Sequence[int] = (4, 6), order: Sequence[int] = (1, 0),
            dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A transposed copy: ``out = x.transpose(order)``."""
    return copy(shape, [("permute", tuple(order))], dtype, loops)


def pad(shape: Sequence[int] = (4, 6), padding: Sequence[tuple[int, int]] = ((1, 1), (2, 0)),
        dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A zero-padded copy: ``out = np.pad(x, padding)``."""
    return copy(shape, [("pad", tuple(map(tuple, padding)))], dtype, loops)


def shrink(shape: Sequence[int] = (4, 6), bounds: Sequence[tuple[int, int]] = ((1, 3), (2, 6)),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A slice: ``out = x[b0:e0, b1:e1, ...]``."""
    return copy(shape, [("shrink", tuple(map(tuple, bounds)))], dtype, loops)


def flip(shape: Sequence[int] = (4, 6), axes: Sequence[int] = (1,),
         dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A reversed copy: ``out = np.flip(x, axes)``."""
    return copy(shape, [("flip", tuple(axes))], dtype, loops)


def stride(shape: Sequence[int] = (4, 6), steps: Sequence[int] = (1, 2),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A strided slice: ``out = x[::s0, ::s1, ...]`` (negative steps reverse)."""
    return copy(shape, [("stride", tuple(steps))], dtype, loops)


def expand(shape: Sequence[int] = (4, 1), new_shape: Sequence[int] = (4, 6),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """A broadcast: ``out = np.broadcast_to(x, new_shape)``."""
    return copy(shape, [("expand", tuple(new_shape))], dtype, loops)


def reshape(shape: Sequence[int] = (4, 6), new_shape: Sequence[int] = (2, 12), pre: Chain = (),
            dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = view(x).reshape(new_shape)``, after an optional movement chain ``pre``."""
    return copy(shape, [*pre, ("reshape", tuple(new_shape))], dtype, loops)


# ---------------------------------------------------------------------------
# reductions, matmul, convolution, pooling, scan
# ---------------------------------------------------------------------------

_RED = {"sum": Ops.ADD, "max": Ops.MAX}


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise BuildError(f"axis {axis} out of range for {ndim} axes")
    return axis % ndim


def reduce(shape: Sequence[int] = (4, 6), axis: int = 1, op: str = "sum", chain: Chain = (),
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """``out = view(x).sum(axis)`` or ``.max(axis)`` (the axis is dropped)."""
    if op not in _RED:
        raise BuildError(f"unknown reduce op {op!r}; choose one of {', '.join(_RED)}")
    v = View.contiguous(shape).apply(chain)
    ax = _axis(axis, v.ndim)
    order = [d for d in range(v.ndim) if d != ax] + [ax]
    vp = v.permute(order)  # the reduced axis last, as a tensor compiler schedules it
    out_shape = vp.shape[:-1]
    if not out_shape:
        raise BuildError("reduce of a 1-D view would have an empty output; reshape it first")
    return kernel(out_shape, dtype, lambda idxs, buf: load(buf(1, vp.buffer_size), vp, idxs),
                  red_shape=vp.shape[-1:], red_op=_RED[op], loops=loops)


def matmul(m: int = 3, k: int = 5, n: int = 4, dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """``out = a @ b`` for ``a`` (m, k) and ``b`` (k, n), through tinygrad's views:
    ``a.reshape(m,1,k).expand(m,n,k) * b.T.reshape(1,n,k).expand(m,n,k)``, summed over k."""
    va = View.contiguous((m, k)).reshape((m, 1, k)).expand((m, n, k))
    vb = View.contiguous((k, n)).permute((1, 0)).reshape((1, n, k)).expand((m, n, k))

    def body(idxs, buf):
        return load(buf(1, m * k), va, idxs) * load(buf(2, k * n), vb, idxs)
    return kernel((m, n), dtype, body, red_shape=(k,), red_op=Ops.ADD, loops=loops)


def _conv_out(size: int, k: int, stride: int, padding: int, dilation: int) -> int:
    out = _ceildiv(size + 2 * padding - dilation * (k - 1), stride)
    if out < 1:
        raise BuildError(f"kernel {k} (dilation {dilation}) larger than the padded input "
                         f"{size + 2 * padding}")
    return out


def conv2d(n: int = 1, cin: int = 2, h: int = 5, w: int = 5, cout: int = 3, kh: int = 3,
           kw: int = 3, stride: int = 1, padding: int = 0, dilation: int = 1,
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """2-D cross-correlation (NCHW input, OIHW weight, no bias), tinygrad's way:
    pad, pool into windows, broadcast against the weight, sum over (cin, kh, kw)."""
    oh = _conv_out(h, kh, stride, padding, dilation)
    ow = _conv_out(w, kw, stride, padding, dilation)
    vx = View.contiguous((n, cin, h, w))
    if padding:
        vx = vx.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    vx = vx.pool((kh, kw), stride, dilation)                  # (n, cin, oh, ow, kh, kw)
    vx = vx.reshape((n, 1, cin, oh, ow, kh, kw)).expand((n, cout, cin, oh, ow, kh, kw))
    vx = vx.permute((0, 1, 3, 4, 2, 5, 6))                    # (n, cout, oh, ow, cin, kh, kw)
    vw = View.contiguous((cout, cin, kh, kw)).reshape((1, cout, 1, 1, cin, kh, kw))
    vw = vw.expand((n, cout, oh, ow, cin, kh, kw))

    def body(idxs, buf):
        return load(buf(1, n * cin * h * w), vx, idxs) * load(buf(2, cout * cin * kh * kw), vw,
                                                              idxs)
    return kernel((n, cout, oh, ow), dtype, body, red_shape=(cin, kh, kw), red_op=Ops.ADD,
                  loops=loops)


def pool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
           stride: int | None = None, padding: int = 0, op: str = "max",
           dtype: DType | str = dtypes.f32, loops: Loops = "nd") -> UOp:
    """Max or average pooling over (h, w) of an NCHW input.

    Padding reads as the lowest value for max (``LOAD`` with an alternative)
    and as 0 for avg, which divides by ``kernel_size**2`` (count_include_pad;
    C-truncating for ints).
    """
    if op not in ("max", "avg"):
        raise BuildError(f"pool op must be 'max' or 'avg', got {op!r}")
    dt = _dtype(dtype)
    k = kernel_size
    s = k if stride is None else stride
    oh, ow = _conv_out(h, k, s, padding, 1), _conv_out(w, k, s, padding, 1)
    vx = View.contiguous((n, c, h, w))
    if padding:
        vx = vx.pad(((0, 0), (0, 0), (padding, padding), (padding, padding)))
    vx = vx.pool((k, k), s)                                   # (n, c, oh, ow, k, k)
    alt = UOp.const(dt, dt.min) if op == "max" and padding else None
    g = kernel((n, c, oh, ow), dt, lambda idxs, buf: load(buf(1, n * c * h * w), vx, idxs, alt),
               red_shape=(k, k), red_op=Ops.MAX if op == "max" else Ops.ADD, loops=loops)
    if op == "max":
        return g
    # divide the reduced sum by the window size before storing
    end = g.src[0]
    st = end.src[0]
    cnt = UOp.const(dt, k * k)
    val = st.src[1] / cnt if dt.is_float else st.src[1] // cnt
    return UOp(Ops.SINK, dtypes.void,
               (end.replace(src=(st.replace(src=(st.src[0], val)), *end.src[1:])),))


def maxpool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
              stride: int | None = None, padding: int = 0, dtype: DType | str = dtypes.f32,
              loops: Loops = "nd") -> UOp:
    """:func:`pool2d` with ``op="max"``."""
    return pool2d(n, c, h, w, kernel_size, stride, padding, "max", dtype, loops)


def avgpool2d(n: int = 1, c: int = 2, h: int = 6, w: int = 6, kernel_size: int = 2,
              stride: int | None = None, padding: int = 0, dtype: DType | str = dtypes.f32,
              loops: Loops = "nd") -> UOp:
    """:func:`pool2d` with ``op="avg"``."""
    return pool2d(n, c, h, w, kernel_size, stride, padding, "avg", dtype, loops)


def cumsum(shape: Sequence[int] = (3, 7), axis: int = -1, dtype: DType | str = dtypes.f32,
           loops: Loops = "nd") -> UOp:
    """Inclusive prefix sum along ``axis``, tinygrad's way: pad the axis with
    ``len-1`` zeros in front, pool windows of ``len``, sum each window."""
    shape = _shape(shape)
    ax = _axis(axis, len(shape))
    nax = shape[ax]
    order = [d for d in range(len(shape)) if d != ax] + [ax]
    v = View.contiguous(shape).permute(order)
    v = v.pad([(0, 0)] * (len(shape) - 1) + [(nax - 1, 0)]).pool((nax,))  # (..., out, k)
    back = list(range(len(shape) - 1))
    back.insert(ax, len(shape) - 1)
    v = v.permute([*back, len(shape)])                       # (*shape, k)
    return kernel(shape, dtype, lambda idxs, buf: load(buf(1, math.prod(shape)), v, idxs),
                  red_shape=(nax,), red_op=Ops.ADD, loops=loops)


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BuilderSpec:
    """A builder with its numpy reference, shapes and standard cases.

    ``build(**params) -> UOp``; ``reference(*arrays, **params)`` (arrays in
    ``input_shapes(**params)``, the result in ``output_shape(**params)``);
    ``cases``: small parameter sets for tests (several shapes, non-powers of
    two); ``bench``: a large set for benchmarks; ``copy_like``: a pure data
    movement kernel (its speed is compared with a numpy copy); ``domain``:
    ``"any"`` or ``"positive"`` inputs.
    """

    name: str
    kind: str
    build: Callable[..., UOp]
    ref: Callable[..., np.ndarray]
    input_shapes: Callable[..., list[Shape]]
    output_shape: Callable[..., Shape]
    cases: tuple[dict[str, Any], ...]
    bench: dict[str, Any]
    copy_like: bool = False
    domain: str = "any"
    float_only: bool = False

    def reference(self, *arrays: np.ndarray, **params: Any) -> np.ndarray:
        shapes = self.input_shapes(**params)
        if len(arrays) != len(shapes):
            raise BuildError(f"{self.name}: {len(arrays)} arrays for {len(shapes)} inputs")
        arrays = tuple(np.asarray(a).reshape(s) for a, s in zip(arrays, shapes, strict=True))
        out = self.ref(*arrays, **params)
        return np.ascontiguousarray(out).reshape(self.output_shape(**params))

    def __repr__(self) -> str:
        return f"BUILDERS[{self.name!r}]"


_NP_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
              "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
              "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


@dataclass
class BuiltKernel:
    """One built kernel: its graph, shapes, dtype and numpy reference."""

    name: str
    params: dict[str, Any]
    graph: UOp = field(repr=False)
    input_shapes: list[Shape]
    output_shape: Shape
    dtype: DType
    spec: BuilderSpec = field(repr=False)
    views: tuple[tuple[int, View], ...] = field(default=(), repr=False)

    @property
    def loops(self) -> Loops:
        return self.params.get("loops", "nd")

    def needs_division(self) -> bool:
        """Whether some load address needs a ``//``/``%`` with this kernel's loops
        (see :meth:`View.needs_division`); False: a division-free form exists."""
        flat = len(self.output_shape) if self.loops == "flat" else 0
        return any(v.needs_division(flat) for _, v in self.views)

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of the buffers (bf16 has none: BuildError)."""
        if self.dtype.name not in _NP_DTYPES:
            raise BuildError(f"no numpy dtype for {self.dtype}; use f16/f32/f64 or an int")
        return np.dtype(_NP_DTYPES[self.dtype.name])

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Input arrays (in their shapes) suited to the kernel: floats in [-1, 1)
        (or [0.5, 2) for sqrt/log2/recip), ints in [-8, 8] (unsigned [0, 15])."""
        rng = np.random.default_rng(seed)
        dt = self.np_dtype
        out = []
        for s in self.input_shapes:
            if np.issubdtype(dt, np.floating):
                lo, hi = (0.5, 2.0) if self.spec.domain == "positive" else (-1.0, 1.0)
                out.append(rng.uniform(lo, hi, s).astype(dt))
            elif np.issubdtype(dt, np.unsignedinteger):
                out.append(rng.integers(0, 16, s).astype(dt))
            else:
                out.append(rng.integers(-8, 9, s).astype(dt))
        return out

    def reference(self, *arrays: np.ndarray) -> np.ndarray:
        """The numpy result for these inputs, in ``output_shape``."""
        return self.spec.reference(*arrays, **self.params)

    def buffers(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Flat buffers in slot order: a zeroed output, then copies of the inputs."""
        return [np.zeros(math.prod(self.output_shape), self.np_dtype),
                *[np.ascontiguousarray(a, self.np_dtype).reshape(-1).copy() for a in inputs]]


def make(name: str, **params: Any) -> BuiltKernel:
    """Build the kernel ``name`` with ``params`` (``dtype`` included)."""
    if name not in BUILDERS:
        raise BuildError(f"unknown builder {name!r}; choose one of {', '.join(BUILDERS)}")
    spec = BUILDERS[name]
    params = dict(params)
    dt = _dtype(params.get("dtype", dtypes.f32))
    params["dtype"] = dt
    if spec.float_only and not dt.is_float:
        raise BuildError(f"{name} needs a float dtype, got {dt}")
    log: list[tuple[int, View]] = []
    _VIEW_LOGS.append(log)
    try:
        graph = spec.build(**params)
    finally:
        _VIEW_LOGS.remove(log)
    return BuiltKernel(name, params, graph, spec.input_shapes(**params),
                       spec.output_shape(**params), dt, spec, tuple(log))


def reference(name: str, *arrays: np.ndarray, **params: Any) -> np.ndarray:
    """The numpy equivalent of builder ``name`` on ``arrays`` (shaped or flat)."""
    if name not in BUILDERS:
        raise BuildError(f"unknown builder {name!r}; choose one of {', '.join(BUILDERS)}")
    return BUILDERS[name].reference(*arrays, **params)


def _copy_shapes(shape=(4, 6), **_):
    return [_shape(shape)]


def _chain_out(shape, chain) -> Shape:
    return View.contiguous(shape).apply(chain).shape


def _movement_spec(name: str, chain_of: Callable[..., Chain], build: Callable[..., UOp],
                   cases: Sequence[dict], bench: dict) -> BuilderSpec:
    def ref(x, **p):
        return apply_numpy(x, chain_of(**p))

    def out(**p):
        return _chain_out(p.get("shape", (4, 6)), chain_of(**p))
    return BuilderSpec(name, "movement", build, ref, _copy_shapes, out, tuple(cases), bench,
                       copy_like=True)


def _conv_shapes(n=1, cin=2, h=5, w=5, cout=3, kh=3, kw=3, **_):
    return [(n, cin, h, w), (cout, cin, kh, kw)]


def _conv_out_shape(n=1, cin=2, h=5, w=5, cout=3, kh=3, kw=3, stride=1, padding=0, dilation=1,
                    **_):
    return (n, cout, _conv_out(h, kh, stride, padding, dilation),
            _conv_out(w, kw, stride, padding, dilation))


def _pool_out_shape(n=1, c=2, h=6, w=6, kernel_size=2, stride=None, padding=0, **_):
    s = kernel_size if stride is None else stride
    return (n, c, _conv_out(h, kernel_size, s, padding, 1), _conv_out(w, kernel_size, s,
                                                                      padding, 1))


def _reduce_out(shape=(4, 6), axis=1, chain=(), **_):
    s = _chain_out(shape, chain)
    ax = _axis(axis, len(s))
    return tuple(x for d, x in enumerate(s) if d != ax)


BUILDERS: dict[str, BuilderSpec] = {}


def _register(spec: BuilderSpec) -> None:
    BUILDERS[spec.name] = spec


_register(BuilderSpec(
    "unary", "elementwise", unary, _ref_unary, _copy_shapes,
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "neg", "shape": (4, 6)},
        {"op": "relu", "shape": (5, 7), "chain": [("permute", (1, 0))]},
        {"op": "square", "shape": (3, 5, 2), "chain": [("flip", (0, 2))]},
        {"op": "neg", "shape": (6, 5), "chain": [("pad", ((1, 0), (0, 2)))]},
    ),
    bench={"op": "relu", "shape": (1024, 1024), "chain": [("permute", (1, 0))]}))
_register(BuilderSpec(
    "unary_float", "elementwise", unary, _ref_unary, _copy_shapes,
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "sqrt", "shape": (5, 3)},
        {"op": "exp2", "shape": (7,), "chain": [("flip", (0,))]},
        {"op": "recip", "shape": (3, 4), "chain": [("reshape", (2, 6))]},
        {"op": "log2", "shape": (2, 9)},
    ),
    bench={"op": "sqrt", "shape": (1024, 1024)}, domain="positive", float_only=True))
_register(BuilderSpec(
    "binary", "elementwise", binary, _ref_binary,
    lambda shape=(4, 6), shape2=None, **_: [_shape(shape), _shape(shape if shape2 is None
                                                                   else shape2)],
    lambda shape=(4, 6), chain=(), **_: _chain_out(shape, chain),
    cases=(
        {"op": "add", "shape": (4, 6)},
        {"op": "mul", "shape": (5, 3), "shape2": (3, 5), "chain2": [("permute", (1, 0))]},
        {"op": "sub", "shape": (3, 7), "shape2": (7,),
         "chain2": [("reshape", (1, 7)), ("expand", (3, 7))]},
        {"op": "max", "shape": (2, 3, 5), "shape2": (2, 5, 3), "chain2": [("permute", (0, 2, 1))]},
        {"op": "min", "shape": (6, 5), "shape2": (4, 5),
         "chain2": [("pad", ((1, 1), (0, 0)))]},
    ),
    bench={"op": "add", "shape": (1024, 1024), "chain2": [("permute", (1, 0))]}))


def _ref_chain(**p) -> Chain:
    return p.get("chain", ())


_register(_movement_spec(
    "copy", _ref_chain, copy,
    cases=[
        {"shape": (3, 5), "chain": [("pad", ((1, 1), (0, 2))), ("permute", (1, 0)),
                                    ("shrink", ((1, 6), (0, 4)))]},
        {"shape": (4, 6), "chain": [("flip", (0,)), ("reshape", (2, 12)),
                                    ("stride", (1, 3))]},
        {"shape": (2, 3, 5), "chain": [("permute", (2, 0, 1)), ("reshape", (5, 6)),
                                       ("pad", ((0, 1), (2, 0)))]},
        {"shape": (7, 3), "chain": [("reshape", (21,)), ("shrink", ((2, 20),)),
                                    ("reshape", (3, 6)), ("flip", (1,))]},
    ],
    bench={"shape": (2000, 2100), "chain": [("pad", ((4, 4), (0, 6))), ("permute", (1, 0)),
                                             ("shrink", ((0, 2100), (2, 2006)))],
           "loops": "auto"}))
_register(_movement_spec(
    "permute", lambda order=(1, 0), **_: [("permute", tuple(order))], permute,
    cases=[
        {"shape": (4, 6), "order": (1, 0)},
        {"shape": (3, 5, 7), "order": (2, 0, 1)},
        {"shape": (2, 3, 4, 5), "order": (3, 1, 0, 2)},
        {"shape": (9, 1, 5), "order": (1, 2, 0)},
    ],
    bench={"shape": (2080, 2112), "order": (1, 0), "loops": "auto"}))
_register(_movement_spec(
    "pad", lambda padding=((1, 1), (2, 0)), **_: [("pad", tuple(map(tuple, padding)))], pad,
    cases=[
        {"shape": (4, 6), "padding": ((1, 1), (2, 0))},
        {"shape": (3, 5, 7), "padding": ((0, 2), (1, 1), (3, 0))},
        {"shape": (13,), "padding": ((3, 5),)},
        {"shape": (2, 3, 4), "padding": ((1, 0), (0, 0), (2, 3))},
    ],
    bench={"shape": (2040, 2040), "padding": ((4, 4), (4, 4))}))
_register(_movement_spec(
    "shrink", lambda bounds=((1, 3), (2, 6)), **_: [("shrink", tuple(map(tuple, bounds)))],
    shrink,
    cases=[
        {"shape": (4, 6), "bounds": ((1, 3), (2, 6))},
        {"shape": (5, 7, 3), "bounds": ((0, 5), (2, 5), (1, 2))},
        {"shape": (11,), "bounds": ((3, 10),)},
    ],
    bench={"shape": (2064, 2064), "bounds": ((8, 2056), (8, 2056))}))
_register(_movement_spec(
    "flip", lambda axes=(1,), **_: [("flip", tuple(axes))], flip,
    cases=[
        {"shape": (4, 6), "axes": (1,)},
        {"shape": (3, 5, 7), "axes": (0, 2)},
        {"shape": (9,), "axes": (0,)},
        {"shape": (2, 3, 5), "axes": (0, 1, 2)},
    ],
    bench={"shape": (2048, 2048), "axes": (0, 1)}))
_register(_movement_spec(
    "stride", lambda steps=(1, 2), **_: [("stride", tuple(steps))], stride,
    cases=[
        {"shape": (4, 6), "steps": (1, 2)},
        {"shape": (7, 5), "steps": (3, -2)},
        {"shape": (3, 4, 5), "steps": (-1, 2, 3)},
    ],
    bench={"shape": (2048, 4096), "steps": (1, 2)}))
_register(_movement_spec(
    "expand", lambda new_shape=(4, 6), **_: [("expand", tuple(new_shape))], expand,
    cases=[
        {"shape": (4, 1), "new_shape": (4, 6)},
        {"shape": (1, 5, 1), "new_shape": (3, 5, 7)},
    ],
    bench={"shape": (2048, 1), "new_shape": (2048, 2048)}))
_register(_movement_spec(
    "reshape", lambda new_shape=(2, 12), pre=(), **_: [*pre, ("reshape", tuple(new_shape))],
    reshape,
    cases=[
        {"shape": (4, 6), "new_shape": (2, 12)},
        {"shape": (6, 5), "new_shape": (3, 2, 5)},
        {"shape": (2, 3, 5), "new_shape": (6, 5)},
        {"shape": (5, 6), "new_shape": (5, 2, 3), "pre": [("permute", (1, 0)),
                                                         ("reshape", (6, 5)),
                                                         ("permute", (1, 0))]},
        {"shape": (4, 6), "new_shape": (3, 2, 8), "pre": [("pad", ((1, 1), (0, 2)))]},
        {"shape": (3, 7), "new_shape": (7, 3), "pre": [("flip", (1,))]},
    ],
    bench={"shape": (2048, 2048), "new_shape": (1024, 2, 2048)}))
_register(BuilderSpec(
    "reduce", "reduce", reduce, _ref_reduce, _copy_shapes, _reduce_out,
    cases=(
        {"shape": (4, 6), "axis": 1, "op": "sum"},
        {"shape": (5, 7), "axis": 0, "op": "max"},
        {"shape": (3, 4, 5), "axis": 1, "op": "sum"},
        {"shape": (3, 5, 2), "axis": -1, "op": "max", "chain": [("permute", (1, 0, 2))]},
        {"shape": (6, 5), "axis": 0, "op": "sum", "chain": [("pad", ((1, 2), (0, 0)))]},
    ),
    bench={"shape": (2048, 2048), "axis": 0, "op": "sum"}))
_register(BuilderSpec(
    "matmul", "matmul", matmul, _ref_matmul,
    lambda m=3, k=5, n=4, **_: [(m, k), (k, n)], lambda m=3, k=5, n=4, **_: (m, n),
    cases=({"m": 3, "k": 5, "n": 4}, {"m": 7, "k": 3, "n": 6}, {"m": 1, "k": 9, "n": 2},
           {"m": 4, "k": 4, "n": 4}),
    bench={"m": 128, "k": 128, "n": 128}))
_register(BuilderSpec(
    "conv2d", "conv", conv2d, _ref_conv2d, _conv_shapes, _conv_out_shape,
    cases=(
        {"n": 1, "cin": 2, "h": 5, "w": 5, "cout": 3, "kh": 3, "kw": 3},
        {"n": 2, "cin": 2, "h": 6, "w": 7, "cout": 2, "kh": 3, "kw": 2, "stride": 2},
        {"n": 1, "cin": 2, "h": 5, "w": 4, "cout": 2, "kh": 3, "kw": 3, "padding": 1},
        {"n": 1, "cin": 1, "h": 7, "w": 7, "cout": 1, "kh": 2, "kw": 2, "dilation": 2},
    ),
    bench={"n": 1, "cin": 8, "h": 34, "w": 34, "cout": 8, "kh": 3, "kw": 3}))
_register(BuilderSpec(
    "maxpool2d", "pool", maxpool2d, lambda x, **p: _ref_pool2d(x, op="max", **p),
    lambda n=1, c=2, h=6, w=6, **_: [(n, c, h, w)], _pool_out_shape,
    cases=(
        {"n": 1, "c": 2, "h": 6, "w": 6, "kernel_size": 2},
        {"n": 2, "c": 2, "h": 7, "w": 5, "kernel_size": 3, "stride": 1},
        {"n": 1, "c": 1, "h": 5, "w": 5, "kernel_size": 3, "stride": 2, "padding": 1},
    ),
    bench={"n": 4, "c": 16, "h": 128, "w": 128, "kernel_size": 2}))
_register(BuilderSpec(
    "avgpool2d", "pool", avgpool2d, lambda x, **p: _ref_pool2d(x, op="avg", **p),
    lambda n=1, c=2, h=6, w=6, **_: [(n, c, h, w)], _pool_out_shape,
    cases=(
        {"n": 1, "c": 2, "h": 6, "w": 6, "kernel_size": 2},
        {"n": 2, "c": 3, "h": 5, "w": 7, "kernel_size": 3, "stride": 2},
        {"n": 1, "c": 1, "h": 6, "w": 5, "kernel_size": 2, "stride": 1, "padding": 1},
    ),
    bench={"n": 4, "c": 16, "h": 128, "w": 128, "kernel_size": 2}))
_register(BuilderSpec(
    "cumsum", "scan", cumsum, _ref_cumsum, _copy_shapes,
    lambda shape=(3, 7), **_: _shape(shape),
    cases=({"shape": (3, 7), "axis": -1}, {"shape": (5, 4), "axis": 0}, {"shape": (17,)},
           {"shape": (2, 3, 5), "axis": 1}),
    bench={"shape": (64, 1000), "axis": -1}))
