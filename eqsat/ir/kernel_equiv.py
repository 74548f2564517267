"""Equivalence checking of two kernels by running them.

``check_kernels(a, b)`` runs the input kernel ``a`` and a candidate ``b`` (sinks of
stores, docs/format.md "Kernels") with :func:`eqsat.ir.interp.trace_kernel` on the
same buffers, draw after draw, and compares every element either writes.

Draws. The leaves a kernel reads as inputs (its vars, the ranges no END or REDUCE
closes) take the corners of their domain and random points, as in
:func:`eqsat.ir.equiv.check_equivalent` (at most half the draws are corners); when
the domain has fewer points than draws, each point is run with several buffer
contents. Each draw fills every buffer with fresh contents
(:class:`eqsat.ir.equiv.SampledMemory`: a third of the elements special values of
their dtype). SPECIAL launch indices are not sampled: every launch runs, as
``run_kernel`` runs them.

Elements (by buffer slot and element, first the smallest). An element ``a`` leaves
alone, ``b`` must leave alone (not write at all). Where ``a``'s last store wrote an
undefined or Invalid value, ``b`` may hold anything. Elsewhere ``b`` must hold ``a``'s
value bit for bit (``-0.0`` is not ``0.0``), with the NaN rule of docs/format.md
"Floats": where ``a`` stored a NaN an op computed any NaN of ``b`` will do; a NaN ``a``
keeps (loaded or made by a bitcast) promises its bits, which a NaN ``b`` computes does
not keep. A draw where running ``a`` fails (an access outside a buffer, an undefined
address or loop end) is skipped: the input promises nothing there; ``b`` failing
where ``a`` runs is a difference.

Work. ``max_steps`` bounds the interpreter's steps (nodes computed, effects run, loop
iterations) over all draws; when a run would pass it, checking stops there and
``Equivalence.stopped`` says how many draws were compared (none, for a kernel whose
one run is larger than the budget).
Kernels whose buffers hold more than ``KERNEL_ELEMENTS`` elements are not run
(``stopped`` says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from eqsat.ir.dtype import DType
from eqsat.ir.equiv import (
    Equivalence,
    SampledMemory,
    array_dtype,
    corner_count,
    domain_of,
    graph_constants,
    sample_points,
)
from eqsat.ir.interp import (
    KernelTrace,
    StepLimitError,
    Undefined,
    trace_kernel,
)
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp, live_ranges

__all__ = ["check_kernels", "is_kernel", "KERNEL_DRAWS", "KERNEL_ELEMENTS", "KERNEL_STEPS"]

#: draws of a kernel check, its budget of interpreter steps over all runs, and the most
#: buffer elements it fills (three copies a draw: the inputs and each kernel's)
KERNEL_DRAWS = 32
KERNEL_STEPS = 500_000
KERNEL_ELEMENTS = 1 << 24
#: ops that make a graph a kernel, and ops only the lowering makes, which no kernel
#: the interpreter runs has
_KERNEL_OPS = frozenset({Ops.STORE, Ops.END, Ops.SINK})
_LOWERED_OPS = frozenset({Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.IF, Ops.ENDIF})

Signature = tuple[dict[int, tuple[DType, int]], dict[str, UOp]]


def is_kernel(g: UOp) -> bool:
    """Whether ``g`` has effects (a store, an end, a sink): a kernel, not an expression."""
    return any(u.op in _KERNEL_OPS for u in g.toposort())


def check_kernels(a: UOp, b: UOp, *, draws: int = KERNEL_DRAWS, seed: int = 0,
                  max_steps: int = KERNEL_STEPS) -> Equivalence:
    """Compare the kernel ``a`` (the input) with ``b`` on ``draws`` runs (see the module
    docstring). ``points`` counts the draws compared, ``skipped`` those where ``a``
    fails. A difference gives the draw's ``counterexample`` (the input leaves' values),
    ``element`` (slot, element), ``a_value``/``b_value`` (an ``Undefined`` where a run
    failed or stored one), ``inputs`` (the draw's buffers before the runs, by slot) and
    ``reason``. Raises ``ValueError`` when a graph is no kernel the interpreter runs or
    the two declare a buffer slot or a var differently (either may leave out one the
    other declares)."""
    if draws < 1 or max_steps < 0:
        raise ValueError(f"check_kernels needs draws >= 1 and max_steps >= 0, not {draws} "
                         f"and {max_steps}")
    bufs = _same_signature(_signature(a, "a"), _signature(b, "b"))
    dom = _domain(a, b)
    elements = sum(size for _, size in bufs.values())
    if elements > KERNEL_ELEMENTS:
        return Equivalence(True, False, 0, domain=dom, stopped=(
            f"the buffers hold {elements} elements, more than the {KERNEL_ELEMENTS} the "
            "checker fills"))
    cols, n = _draws(dom, draws, seed, graph_constants(a, b))
    memory = SampledMemory((a, b), seed)
    left, compared, skipped = max_steps, 0, 0
    for i in range(n):
        env = {k: int(c[i]) for k, c in cols.items()}
        inputs = _contents(bufs, memory, i)
        ra, rb = [x.copy() for x in inputs], [x.copy() for x in inputs]
        try:
            ta = trace_kernel(a, ra, env, max_steps=left)
            left -= ta.steps
            if ta.failed:
                skipped += 1
                continue
            tb = trace_kernel(b, rb, env, max_steps=left)
            left -= tb.steps
        except StepLimitError:
            break
        if tb.failed:
            return Equivalence(False, False, compared, counterexample=env,
                               b_value=Undefined(tb.failed), skipped=skipped, domain=dom,
                               reason="b fails where a runs", inputs=inputs)
        compared += 1
        diff = _first_difference(ra, rb, ta, tb)
        if diff is not None:
            key, reason = diff
            return Equivalence(False, False, compared, counterexample=env,
                               a_value=_value(ra, ta, key), b_value=_value(rb, tb, key),
                               skipped=skipped, domain=dom, element=key, inputs=inputs,
                               reason=f"buffer {key[0]} element {key[1]}: {reason}")
    stopped = ""
    if compared + skipped < n:
        stopped = (f"the work budget of {max_steps} interpreter steps ran out after "
                   f"{compared + skipped} of {n} draws")
    return Equivalence(True, False, compared, skipped=skipped, domain=dom, stopped=stopped)


def _signature(g: Any, name: str) -> Signature:
    """``g``'s buffers ``{slot: (element dtype, size)}`` (the largest size a slot is
    declared with) and vars ``{name: var}``; ``TypeError``/``ValueError`` where ``g`` is
    no kernel the interpreter runs."""
    if not isinstance(g, UOp):
        raise TypeError(f"check_kernels expects UOps, but {name} is a {type(g).__name__}")
    low = next((u for u in g.toposort() if u.op in _LOWERED_OPS), None)
    if low is not None:
        raise ValueError(f"check_kernels runs kernels, but {name} has a {low.op.name} "
                         "node (made by the lowering, which the interpreter does not run)")
    if not is_kernel(g):
        raise ValueError(f"check_kernels compares kernels, but {name} has no store, end "
                         "or sink (compare expressions with check_equivalent)")
    bufs: dict[int, tuple[DType, int]] = {}
    vars_: dict[str, UOp] = {}
    for u in g.toposort():
        if u.op is Ops.DEFINE_GLOBAL:
            slot, size = u.arg
            dt = u.dtype.base().scalar()
            old = bufs.setdefault(slot, (dt, size))
            if old[0] is not dt:
                raise ValueError(f"{name} declares buffer {slot} as {old[0]} and as {dt}")
            bufs[slot] = (dt, max(size, old[1]))
        elif u.op is Ops.DEFINE_VAR:
            old_var = vars_.setdefault(u.arg[0], u)
            if old_var.arg != u.arg or old_var.dtype is not u.dtype:
                raise ValueError(f"{name} declares var {u.arg[0]} twice: {old_var.arg[1:]} "
                                 f"and {u.arg[1:]}")
    return bufs, vars_


def _same_signature(sa: Signature, sb: Signature) -> dict[int, tuple[DType, int]]:
    """The buffers of both kernels; ``ValueError`` where they declare a slot or a var
    differently."""
    for slot in sorted(sa[0].keys() & sb[0].keys()):
        (da, na), (db, nb) = sa[0][slot], sb[0][slot]
        if da is not db or na != nb:
            raise ValueError(f"the kernels' signatures differ: buffer {slot} is {da}[{na}] "
                             f"in a, {db}[{nb}] in b")
    for var in sorted(sa[1].keys() & sb[1].keys()):
        va, vb = sa[1][var], sb[1][var]
        if va.arg != vb.arg or va.dtype is not vb.dtype:
            raise ValueError(f"the kernels' signatures differ: var {var} is {va.dtype} "
                             f"{list(va.arg[1:])} in a, {vb.dtype} {list(vb.arg[1:])} in b")
    return {**sb[0], **sa[0]}


def _domain(a: UOp, b: UOp) -> dict[str, tuple[int, int]]:
    """The leaves the kernels read as inputs (vars, ranges left open), ``a``'s first, each
    over its bounds (a range's are its END's)."""
    inputs = []
    for g in (a, b):
        live = live_ranges(g)[g]
        inputs += [u for u in g.leaves() if u.op is Ops.DEFINE_VAR or u in live]
    return domain_of(*inputs)


def _draws(dom: dict[str, tuple[int, int]], draws: int, seed: int,
           consts: frozenset[int]) -> tuple[dict[str, np.ndarray], int]:
    """The leaves' values of each draw: every point of a domain of at most ``draws``
    points, repeated to ``draws``; else up to half the draws corners, the rest random
    points."""
    cols, n, exhaustive = sample_points(dom, draws, seed, draws, consts)
    if exhaustive:
        reps = draws // max(n, 1)
        return {k: np.tile(c, reps) for k, c in cols.items()}, n * reps
    corners = corner_count(dom)
    take = min(corners, draws // 2)
    rows = np.r_[np.arange(take), np.arange(corners, corners + draws - take)]
    return {k: c[rows] for k, c in cols.items()}, len(rows)


def _contents(bufs: dict[int, tuple[DType, int]], memory: SampledMemory, draw: int
              ) -> list[np.ndarray]:
    """One draw's buffers by slot (a slot no kernel declares: an empty array)."""
    out: list[np.ndarray] = []
    for slot in range(max(bufs, default=-1) + 1):
        if slot not in bufs:
            out.append(np.zeros(0, dtype=np.int8))
            continue
        dt, size = bufs[slot]
        buf = UOp.buffer(slot, dt, size)
        out.append(np.array(memory.read(buf, np.arange(size), np.full(size, draw)),
                            dtype=array_dtype(dt)))
    return out


def _first_difference(ra: Sequence[np.ndarray], rb: Sequence[np.ndarray], ta: KernelTrace,
                      tb: KernelTrace) -> tuple[tuple[int, int], str] | None:
    """The first element (by slot, then element) where ``b``'s run breaks what ``a``'s
    promises, and why."""
    for key in sorted(ta.written | tb.written):
        if key not in ta.written:
            return key, "b writes an element a leaves alone"
        if key in ta.undefined:
            continue
        if key in tb.undefined:
            return key, "b's value is undefined where a's is defined"
        x, y = ra[key[0]].flat[key[1]], rb[key[0]].flat[key[1]]
        if key in ta.computed_nan:
            if not (y.dtype.kind == "f" and math.isnan(y)):
                return key, "values differ"
        elif x.dtype.kind == "f" and math.isnan(x):
            if not math.isnan(y):
                return key, "values differ"
            if key in tb.computed_nan or x.tobytes() != y.tobytes():
                return key, "b's NaN does not keep the bits of a's (read from memory or a bitcast)"
        elif x.tobytes() != y.tobytes():
            return key, "values differ"
    return None


def _value(arrays: Sequence[np.ndarray], trace: KernelTrace, key: tuple[int, int]) -> Any:
    """The element ``key`` after a run: an ``Undefined`` where its last store was one."""
    if key in trace.undefined:
        return Undefined(trace.undefined[key])
    return arrays[key[0]].flat[key[1]].item()
