"""tinygrad's kernels, run by tinygrad and by the lowering on the same buffers.

A case (:data:`CASES`) is a small tensor program: elementwise add, permute, pad, a sum,
matmul, conv2d, a 2x2 max pool and a cumsum (three kernels), at two scales (``bench``,
``small``). :func:`schedule` realizes its inputs (seeded random f32), schedules the output
with tinygrad 0.14 (BEAM off) and, for every kernel, applies tinygrad's heuristic
optimizations to the kernel AST the way codegen does before its expander
(:func:`optimized_ast`); that AST goes through ``eqsat.from_tinygrad``
(:attr:`TgKernel.graph`).

The device is tinygrad's ``CPU`` (clang) when clang is on PATH, else its ``PYTHON``
emulator (:func:`device`): a machine with gcc only runs the same checks. The heuristic is
always the CPU renderer's (on ``PYTHON`` without its ``THREAD`` split, which the emulator
lacks), handed to tinygrad as the kernel's ``opts_to_apply``: tinygrad runs the schedule
the lowering gets.

:func:`run_both` runs one kernel with tinygrad (its compiled program, timed as
``tinygrad.engine.realize.time_call`` times it: the program's call alone) and with
``lowering.compile_kernel`` on copies of the same input buffers, and compares every
buffer the kernel writes bit for bit; a bit-exact kernel of ours is then timed on
tinygrad's own buffers (their memory shared on its CPU device), so both run on the
same addresses. tinygrad's CPU program runs its ``THREAD`` chunks
(:attr:`TgKernel.chunks`) one after another in the calling thread
(``CPUProgram.__call__``); ours is one loop nest in one thread.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from eqsat.ir.uop import UOp

__all__ = ["CASES", "SCALES", "TgCase", "TgKernel", "Ran", "clang", "device", "cpu_renderer",
           "optimized_ast", "schedule", "device_target", "run_both", "tinygrad_flags",
           "named"]

SCALES = ("bench", "small")


@dataclass(frozen=True)
class TgCase:
    """A tensor program: its input shapes per scale and the output it computes."""

    name: str
    shapes: dict[str, tuple[tuple[int, ...], ...]]
    build: Callable[..., Any]  # the input Tensors -> the output Tensor

    def shape_text(self, scale: str) -> str:
        return " ".join("x".join(map(str, s)) for s in self.shapes[scale])


CASES: tuple[TgCase, ...] = (
    TgCase("elementwise", {"bench": ((2048, 2048),) * 2, "small": ((40, 48),) * 2},
           lambda a, b: a + b),
    TgCase("permute", {"bench": ((2080, 2112),), "small": ((24, 40),)},
           lambda a: a.permute(1, 0).contiguous()),
    TgCase("pad", {"bench": ((2040, 2040),), "small": ((20, 28),)},
           lambda a: a.pad(((4, 4), (4, 4))).contiguous()),
    TgCase("reduce", {"bench": ((2048, 2048),), "small": ((32, 40),)},
           lambda a: a.sum(axis=0)),
    TgCase("matmul", {"bench": ((256, 256),) * 2, "small": ((32, 64), (64, 32))},
           lambda a, b: a @ b),
    TgCase("conv2d", {"bench": ((1, 8, 32, 32), (16, 8, 3, 3)),
                      "small": ((1, 4, 10, 10), (8, 4, 3, 3))},
           lambda x, w: x.conv2d(w)),
    TgCase("maxpool", {"bench": ((4, 16, 128, 128),), "small": ((1, 4, 12, 12),)},
           lambda x: x.max_pool2d(2)),
    TgCase("cumsum", {"bench": ((64, 1000),), "small": ((1, 520),)},
           lambda a: a.cumsum(-1)),
)


def clang() -> str | None:
    """The C compiler tinygrad's CPU device runs (``$CC``, else ``clang``), or None."""
    return shutil.which(os.environ.get("CC", "clang"))


def device() -> str:
    """``CPU`` when tinygrad's CPU device can compile (clang on PATH), else ``PYTHON``."""
    return "CPU" if clang() else "PYTHON"


def cpu_renderer() -> Any:
    """tinygrad's CPU renderer (its heuristic's limits), built without running clang."""
    from tinygrad.helpers import Target
    from tinygrad.renderer.cstyle import ClangRenderer

    arch = {"amd64": "x86_64", "aarch64": "arm64"}.get(m := platform.machine().lower(), m)
    return ClangRenderer(Target("CPU", "CLANG", f"{arch},native"))


def named(path: str) -> str:
    """A compiler's name as found and as what it resolves to (``cc (gcc-12)``)."""
    real = os.path.basename(os.path.realpath(path))
    name = os.path.basename(path)
    return name if real == name else f"{name} ({real})"


def tinygrad_flags() -> str:
    """The command line tinygrad's CPU device compiles a kernel with."""
    from tinygrad.runtime.support.compiler_cpu import ClangCompiler

    arch = cpu_renderer().target.arch.split(",")
    cc = clang()
    return " ".join([named(cc) if cc else os.environ.get("CC", "clang"), "-O2",
                     "-ffreestanding", "-fno-math-errno", "-nostdlib", *ClangCompiler(arch).args])


def optimized_ast(ast: Any, renderer: Any) -> Any:
    """A kernel AST after tinygrad's optimizations (the heuristic's unless the AST names
    its ``opts_to_apply``): the steps of ``full_rewrite_to_sink`` up to its expander
    (``eqsat.tinygrad.optimized_ast``). The ranges carry their roles (``AxisType``:
    UPCAST, UNROLL, REDUCE, THREAD, ...)."""
    from eqsat.tinygrad import optimized_ast as optimized

    return optimized(ast, renderer)


@dataclass
class TgKernel:
    """One kernel of a case: tinygrad's call (its optimizations fixed), the optimized AST
    and its graph here (``None``, with ``error`` saying why, when the bridge refuses it)."""

    case: str
    index: int
    call: Any
    ast: Any
    opts: tuple[Any, ...]
    graph: UOp | None
    error: str = ""
    dev: str = "CPU"

    @property
    def label(self) -> str:
        return self.case if self.index < 0 else f"{self.case}[{self.index}]"

    @property
    def chunks(self) -> int:
        """The THREAD chunks tinygrad's CPU program runs (one after another)."""
        from tinygrad.uop.ops import AxisType, Ops

        return math.prod(int(u.vmax) + 1 for u in self.ast.toposort()
                         if u.op is Ops.RANGE and u.arg[-1] is AxisType.THREAD)

    def buffers(self) -> list[Any]:
        """tinygrad's buffers of the call, in the kernel's slot order (allocated)."""
        from tinygrad.engine.realize import get_call_arg_uops

        return [u.buffer.ensure_allocated() for u in get_call_arg_uops(self.call)]


def schedule(case: TgCase, scale: str = "small", dev: str | None = None,
             seed: int = 0) -> list[TgKernel]:
    """``case`` on tinygrad's device ``dev`` (default :func:`device`): its inputs realized,
    its output scheduled, every kernel optimized by the CPU heuristic and brought over."""
    from tinygrad import Tensor
    from tinygrad.codegen.opt import OptOps
    from tinygrad.uop.ops import Ops

    from eqsat.tinygrad import TinygradError, from_tinygrad

    dev = dev or device()
    rng = np.random.default_rng(seed)
    ins = [Tensor(rng.standard_normal(s).astype(np.float32), device=dev).realize()
           for s in case.shapes[scale]]
    calls = [c for c in case.build(*ins).schedule_linear().src if c.src[0].op is Ops.SINK]
    ren, out = cpu_renderer(), []
    for i, call in enumerate(calls):
        opts = tuple(optimized_ast(call.src[0], ren).arg.applied_opts)
        if dev != "CPU":  # the emulator has no threads: the CPU's schedule in one chunk
            opts = tuple(o for o in opts if o.op is not OptOps.THREAD)
        fixed = call.src[0].replace(arg=replace(call.src[0].arg, opts_to_apply=opts))
        ast = optimized_ast(fixed, ren)
        graph, error = None, ""
        try:
            graph = from_tinygrad(ast)
        except TinygradError as e:
            error = str(e)
        out.append(TgKernel(case.name, i if len(calls) > 1 else -1,
                            call.replace(src=(fixed, *call.src[1:])), ast, opts, graph, error,
                            dev))
    return out


@dataclass
class Ran:
    """One kernel run by both: the written slots that differ (none: bit-exact) and the
    timers (each call runs the kernel once more and returns its seconds)."""

    kernel: TgKernel
    ours: Any  # lowering.Kernel
    written: tuple[int, ...]
    mismatched: tuple[int, ...]
    #: each written slot's contents after the run: (ours, tinygrad's)
    outputs: dict[int, tuple[np.ndarray, np.ndarray]]
    tinygrad_timer: Iterator[float] = field(repr=False)
    ours_timer: Callable[[], float] = field(repr=False)

    @property
    def bit_exact(self) -> bool:
        return not self.mismatched


def _snapshot(bufs: list[Any]) -> list[np.ndarray]:
    return [b.numpy().copy() for b in bufs]


def _shared(bufs: list[Any], slots: Any, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The kernel's arrays as views of tinygrad's own buffers where its device lends their
    memory (its CPU device), else ``arrays``: timed on the same memory, both programs
    see the same placement (a kernel's speed can halve with where its input and output
    fall relative to each other, e.g. cumsum's, with one and the same code). Ours then
    rewrites tinygrad's outputs with the same bits (only used when bit-exact)."""
    try:
        views = [np.frombuffer(bufs[slot].as_memoryview(force_zero_copy=True), a.dtype)
                 for (slot, _, _), a in zip(slots, arrays, strict=True)]
    except (AssertionError, AttributeError, TypeError, ValueError):
        return arrays
    ok = all(v.size == a.size and v.flags.writeable for v, a in zip(views, arrays, strict=True))
    return views if ok else arrays


def device_target(dev: str) -> Any:
    """The lowering's ``Target`` that rounds floats as tinygrad's device ``dev`` does.

    tinygrad's CPU device compiles with clang, whose default ``-ffp-contract=on`` fuses
    each ``acc + a*b`` of its C into one fma: there the fused MULACCs of the expander
    (``Target(fma=True)``) give the same bits. Its PYTHON emulator rounds every op."""
    from lowering import Target

    return Target(fma=dev == "CPU")


def run_both(k: TgKernel, optimize: bool | str = True, target: Any = None) -> Ran:
    """Run ``k`` once with tinygrad and once compiled by the lowering (``optimize`` and
    ``target`` as ``compile_kernel`` takes them; ``target`` defaults to
    :func:`device_target` of the kernel's device) on copies of the buffers tinygrad saw;
    compare."""
    from tinygrad.engine.realize import time_call

    from lowering import compile_kernel
    from lowering.compile import numpy_dtype

    if k.graph is None:
        raise ValueError(f"{k.label}: the bridge refused the kernel: {k.error}")
    target = device_target(k.dev) if target is None else target
    ours = compile_kernel(k.graph, optimize=optimize, target=target)
    sig = ours.signature
    bufs = k.buffers()
    before = _snapshot(bufs)
    timer = time_call(k.call)
    next(timer)
    after = _snapshot(bufs)
    arrays = []
    for slot, dt, size in sig.buffers:
        a = before[slot]
        if a.dtype != numpy_dtype(dt) or a.size != size:
            raise ValueError(f"{k.label}: slot {slot} is {a.dtype}[{a.size}] in tinygrad, "
                             f"{dt}[{size}] in the bridged kernel")
        arrays.append(a)
    ours(*arrays)
    by_slot = {slot: a for (slot, _, _), a in zip(sig.buffers, arrays, strict=True)}
    written = tuple(sorted(sig.written))
    bad = tuple(s for s in written if by_slot[s].tobytes() != after[s].tobytes())
    outputs = {s: (by_slot[s].copy(), after[s]) for s in written}
    run = ours.bound(*(_shared(bufs, sig.buffers, arrays) if not bad else arrays))

    def ours_timer() -> float:
        t0 = time.perf_counter()
        run()
        return time.perf_counter() - t0
    return Ran(k, ours, written, bad, outputs, timer, ours_timer)
