"""The numpy references of the builders: independent oracles, written with numpy
alone, that a built kernel's result is checked against.

:func:`apply_numpy` is the numpy equivalent of a movement chain
(``View.apply(chain)``); the ``_ref_<builder>`` functions compute a builder's
output from its input arrays and parameters (the registry in
:mod:`workloads.kernels` pairs each builder with its reference). Integer results
wrap two's-complement, as the kernels' fixed-width arithmetic does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from workloads.elementwise_ops import BINARY_OPS, UNARY_OPS
from workloads.views import Chain, _ceildiv

__all__ = ["apply_numpy"]


def _np_stride(a: np.ndarray, steps: Sequence[int]) -> np.ndarray:
    return a[tuple(slice(None, None, int(m)) for m in steps)]


def _np_pool(a: np.ndarray, kernel: Sequence[int], stride: int | Sequence[int] = 1,
             dilation: int | Sequence[int] = 1) -> np.ndarray:
    nk = len(kernel)
    s_ = (stride,) * nk if isinstance(stride, int) else tuple(stride)
    d_ = (dilation,) * nk if isinstance(dilation, int) else tuple(dilation)
    lead = a.shape[:a.ndim - nk]
    i_ = a.shape[a.ndim - nk:]
    o_ = [_ceildiv(i - d * (k - 1), s) for i, d, k, s in zip(i_, d_, kernel, s_, strict=True)]
    out = np.zeros((*lead, *o_, *kernel), a.dtype)
    for ks in np.ndindex(*kernel):
        src = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                    for k, d, o, s in zip(ks, d_, o_, s_, strict=True))
        out[(Ellipsis, *[slice(None)] * nk, *ks)] = a[(Ellipsis, *src)]
    return out


_NP_MOVEMENT: dict[str, Callable[..., np.ndarray]] = {
    "reshape": lambda a, s: a.reshape(s),
    "permute": lambda a, o: a.transpose(o),
    "pad": lambda a, p: np.pad(a, p),
    "shrink": lambda a, b: a[tuple(slice(x, y) for x, y in b)],
    "flip": lambda a, ax: np.flip(a, tuple(ax)) if len(ax) else a,
    "stride": _np_stride,
    "expand": lambda a, s: np.broadcast_to(a, s),
    "repeat": lambda a, r: np.tile(a, r),
    "pool": lambda a, *arg: _np_pool(a, *arg),
}


def apply_numpy(a: np.ndarray, chain: Chain) -> np.ndarray:
    """The numpy equivalent of ``View.apply(chain)`` on an array (an independent oracle)."""
    for op, arg in chain:
        a = _NP_MOVEMENT[op](a, *arg) if op == "pool" else _NP_MOVEMENT[op](a, arg)
    return np.ascontiguousarray(a)


def _wrap(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Cast to ``dt``; integer results wrap two's-complement (ring ops commute with it)."""
    if np.issubdtype(dt, np.integer):
        return x.astype(np.int64).astype(dt) if x.dtype != dt else x
    return x.astype(dt)


def _acc(a: np.ndarray) -> np.dtype:
    return np.dtype(np.int64) if np.issubdtype(a.dtype, np.integer) else np.dtype(np.float64)


def _trunc_div(x: np.ndarray, d: int) -> np.ndarray:
    q = np.abs(x) // d
    return np.where(x < 0, -q, q)


def _ref_unary(x, op="neg", shape=None, chain=(), dtype=None, loops=None):
    return UNARY_OPS[op][1](apply_numpy(x, chain)).astype(x.dtype)


def _ref_binary(a, b, op="add", shape=None, shape2=None, chain=(), chain2=(), dtype=None,
                loops=None):
    with np.errstate(over="ignore"):
        return BINARY_OPS[op][1](apply_numpy(a, chain), apply_numpy(b, chain2)).astype(a.dtype)


def _ref_reduce(x, shape=None, axis=1, op="sum", chain=(), dtype=None, loops=None):
    v = apply_numpy(x, chain)
    if op == "max":
        return v.max(axis)
    return _wrap(v.sum(axis, dtype=_acc(v)), x.dtype)


def _ref_matmul(a, b, m=None, k=None, n=None, dtype=None, loops=None):
    return _wrap(a.astype(_acc(a)) @ b.astype(_acc(b)), a.dtype)


def _ref_conv2d(x, wt, n=None, cin=None, h=None, w=None, cout=None, kh=3, kw=3, stride=1,
                padding=0, dilation=1, dtype=None, loops=None):
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = _np_pool(xp, (kh, kw), stride, dilation).astype(_acc(x))  # n cin oh ow kh kw
    return _wrap(np.einsum("ncyxij,ocij->noyx", win, wt.astype(_acc(x))), x.dtype)


def _ref_pool2d(x, n=None, c=None, h=None, w=None, kernel_size=2, stride=None, padding=0,
                op="max", dtype=None, loops=None):
    s = kernel_size if stride is None else stride
    fill = 0
    if op == "max" and padding:
        fill = np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.integer) else -np.inf
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)),
                constant_values=fill)
    win = _np_pool(xp, (kernel_size, kernel_size), s)
    if op == "max":
        return win.max((-2, -1))
    tot = _wrap(win.sum((-2, -1), dtype=_acc(x)), x.dtype)
    cnt = kernel_size * kernel_size
    if np.issubdtype(x.dtype, np.integer):
        return _trunc_div(tot.astype(np.int64), cnt).astype(x.dtype)
    return (tot / x.dtype.type(cnt)).astype(x.dtype)


def _ref_cumsum(x, shape=None, axis=-1, dtype=None, loops=None):
    return _wrap(np.cumsum(x, axis, dtype=_acc(x)), x.dtype)
