"""The lowering pipeline, the system C compiler, and :class:`Kernel`.

``compile_kernel(graph)`` runs::

    check_bounds -> optimize (eqsat.optimize, optional) -> split_gated_ranges (Target.split_gates)
      -> prepare -> narrow_index -> decompose -> expand (upcast/unroll ranges to lanes)
      -> final_rewrite -> add_control_flow + linearize -> [add_if_endif] -> render_c

then compiles the C with ``Target.cc`` (default ``$CC``, else ``cc``; clang for a
kernel with register tiles where installed) and
``-O2 -shared -fPIC -fwrapv -ffp-contract=off`` plus the target's flags
(:func:`target_flags`: ``-march``, no loop-to-``memcpy`` replacement) into a
shared library cached by the hash of compiler, flags, host (for
``-march=native``) and source, and loads it with ctypes. ``-fwrapv`` gives C
the IR's semantics for fixed-width integers (two's-complement wrap-around,
shifts of negative values); ``-ffp-contract=off`` keeps ``a*b+c`` two
roundings (a MULACC, made only with ``Target.fma``, is an explicit ``fma``).

A kernel whose addresses are computed from loaded data, or gated by a gate that
``check_bounds`` does not prove keeps them inside their buffer, is checked where it runs
(``lowering.cemit.bounds_check``): a run that meets an index outside its buffer
raises :class:`OutOfBoundsError` instead of reading or writing outside the array.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import operator
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from lowering.cemit import Signature, render_c
from lowering.decompose import Target, decompose
from lowering.expand import expand, jam
from lowering.final import final_rewrite, prepare
from lowering.linearize import Edges, add_control_flow, add_if_endif, format_linear, linearize
from lowering.narrow import LoweringError, check_bounds, is_invalid, narrow_index
from lowering.split import split_gated_ranges
from lowering.trim import trim_gated_reductions

__all__ = ["CompileError", "OutOfBoundsError", "Kernel", "Lowered", "compile_kernel",
           "compile_kernels", "lower", "lower_graph",
           "compile_c", "default_cache_dir", "OPTIMIZE_CHOICES", "CFLAGS", "target_flags"]

CFLAGS = ("-O2", "-shared", "-fPIC", "-fwrapv")
OPTIMIZE_CHOICES = (True, False, None, "egraph", "baseline")


class CompileError(RuntimeError):
    """The C compiler is missing or rejected the emitted source."""


class OutOfBoundsError(IndexError):
    """A run of a kernel met an index outside its buffer that the lowering could not prove
    inside: computed from loaded data (a gather or a scatter), or gated by a gate that its
    bounds do not show to keep it inside (``lowering.cemit.bounds_check``). The kernel
    stopped before that access; what it stored until then stays in the arrays."""


# ---- the pipeline ----------------------------------------------------------------------
@dataclass
class Lowered:
    """Every stage's result of lowering one graph."""

    graph: UOp  # what was lowered (after optimization)
    kind: str  # "kernel" or "expr"
    narrowed: UOp
    decomposed: UOp
    final: UOp
    edges: Edges
    linear: list[UOp]
    c_source: str
    signature: Signature
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def linear_text(self) -> str:
        """The linear form, one instruction per line."""
        return format_linear(self.linear, self.edges)


def _optimize(graph: UOp, optimize: bool | str | None, budget: Any = None
              ) -> tuple[UOp, dict[str, Any]]:
    if optimize not in OPTIMIZE_CHOICES:
        raise ValueError(f"optimize must be one of True, False, 'egraph', 'baseline'; "
                         f"got {optimize!r}")
    if optimize is False or optimize is None:
        return graph, {"engine": None}
    from eqsat.api import optimize as run

    engine = "egraph" if optimize is True else optimize
    try:
        if engine == "egraph":  # the one-time session build is not the optimizer's budget
            from eqsat.engines.egraph import session_for

            session_for(None).prepare([graph])
        res = run(graph, engine=engine, budget=budget)
    except ImportError as e:
        if optimize is not True:
            raise LoweringError(f"optimize={optimize!r}: engine unavailable ({e})") from e
        warnings.warn(f"e-graph engine unavailable ({e}); optimizing with the baseline",
                      RuntimeWarning, stacklevel=3)
        try:
            res = run(graph, engine="baseline", budget=budget)
        except ImportError as e2:
            raise LoweringError(f"no optimizer available: e-graph ({e}), baseline ({e2})") from e2
        engine = "baseline"
    stats = dict(res.stats)
    stats["engine"] = stats.get("engine", engine)
    return res.graph, stats


def lower_graph(graph: UOp, optimize: bool | str | None = False, target: Target | None = None,
                name: str = "kernel", budget: Any = None) -> Lowered:
    """Run the lowering pipeline on ``graph`` (see the module doc); no compiling.
    ``budget``: the optimizer's ``eqsat.Budget`` (default: its default)."""
    if not isinstance(graph, UOp):
        raise TypeError(f"lower_graph expects a UOp graph, got {type(graph).__name__}")
    target = target or Target()
    if not isinstance(target, Target):
        raise TypeError(f"target must be a lowering.Target, got {type(target).__name__}")
    unproven = check_bounds(graph)
    g, stats = _optimize(graph, optimize, budget)
    root, kind = prepare(split_gated_ranges(g) if target.split_gates else g)
    narrowed = narrow_index(root)
    if kind == "expr":
        if narrowed.op is Ops.WHERE and is_invalid(narrowed.src[2]):
            srcs = (narrowed.src[1], narrowed.src[0])
        else:
            srcs = (narrowed,)
        narrowed = UOp(Ops.SINK, dtypes.void, srcs, "return")
    counts: Counter = Counter()
    decomposed = decompose(narrowed, target, counts)
    stats["decompositions"] = dict(counts)
    expanded: Counter = Counter()
    fin = final_rewrite(_expand(decomposed, target, expanded), target.fma)
    stats["expanded"] = dict(expanded)
    edges = add_control_flow(fin) if kind == "kernel" else {}
    linear = linearize(fin, edges)
    if not target.predicated_stores:
        replaced: dict[UOp, UOp] = {}
        linear = add_if_endif(linear, replaced)
        if replaced:
            edges = {replaced.get(k, k): tuple(replaced.get(d, d) for d in v)
                     for k, v in edges.items()}
    params = [u for u in graph.toposort() if u.op in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR)]
    src, sig = render_c(linear, name, target, params, unproven)
    return Lowered(g, kind, narrowed, decomposed, fin, edges, linear, src, sig, stats)


def _expand(root: UOp, target: Target, counts: Counter) -> UOp:
    """``root``'s register tiles jammed (``Target.jam``), its gated sums trimmed
    (``Target.split_gates``, :func:`lowering.trim.trim_gated_reductions`) and expanded;
    when the expander keeps the jammed kernel's ranges as loops, the kernel as it came."""
    def trimmed(g: UOp, into: Counter) -> UOp:
        t = trim_gated_reductions(g) if target.split_gates else g
        if t is not g:
            into["trim"] += 1
        return t

    jammed = jam(root, target.jam)
    if jammed is not root:
        tried: Counter = Counter()
        out = expand(trimmed(jammed, tried), target.fma, tried)
        if not tried["expand_skipped"]:
            counts.update(tried)
            counts["jam"] += 1
            return out
    return expand(trimmed(root, counts), target.fma, counts)


def lower(graph: UOp, emit: str = "c", optimize: bool | str | None = True,
          target: Target | None = None, name: str = "kernel", budget: Any = None) -> str:
    """The lowered ``graph`` as text: C source (``emit="c"``) or the linear form (``"linear"``).

    The linear form prints one instruction per line (``format_linear``).
    """
    if emit not in ("c", "linear"):
        raise ValueError(f"emit must be 'c' or 'linear', got {emit!r}")
    low = lower_graph(graph, optimize=optimize, target=target, name=name, budget=budget)
    return low.c_source if emit == "c" else low.linear_text + "\n"


# ---- the C compiler ---------------------------------------------------------------------------
def default_cache_dir() -> Path:
    """``$EQSAT_CACHE_DIR``, else ``$XDG_CACHE_HOME``/``~/.cache`` ``/uop-eqsat/kernels``,
    else a directory under the system temp dir."""
    env = os.environ.get("EQSAT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    cand = Path(base) / "uop-eqsat" / "kernels"
    try:
        cand.mkdir(parents=True, exist_ok=True)
        if os.access(cand, os.W_OK):
            return cand
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / f"uop-eqsat-kernels-{os.getuid()}"


def _compiler(cc: str | None = None, tiles: bool = False, f16: bool = False) -> str:
    """The path of the C compiler ``cc``; by default ``$CC``, else ``cc``, but clang where
    it is installed for a kernel with register tiles (``tiles``: reductions the expander
    gave one accumulator per lane): GCC 12 leaves their accumulator chains scalar, clang
    vectorizes them, while GCC vectorizes the outer loop of a plain reduction that clang
    leaves scalar (the figures are in docs/perf.md). ``f16``: the source computes on
    ``_Float16``, which clang before 15 does not know on x86-64: such a clang is not
    chosen for it."""
    if not cc:
        cc = os.environ.get("CC")
    if not cc:
        clang = shutil.which("clang") if tiles else None
        cc = "clang" if clang and (not f16 or _knows_float16(clang)) else "cc"
    path = shutil.which(cc)
    if path is None:
        raise CompileError(f"no C compiler found: {cc!r} is not on PATH (install gcc or clang, "
                           "or set $CC)")
    return path


@functools.cache
def _knows_float16(path: str) -> bool:
    """The compiler at ``path`` accepts ``_Float16`` for this machine's target."""
    try:
        out = subprocess.run([path, "-x", "c", "-fsyntax-only", "-"], input="_Float16 x;\n",
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


@functools.cache
def _is_clang(path: str) -> bool:
    """The compiler at ``path`` is clang (``cc`` may be either)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "clang" in out.stdout.lower()


@functools.cache
def _host() -> str:
    """What ``-march=native`` means here: the CPU's model and feature flags (part of a
    cached library's key, so hosts sharing a cache directory keep apart)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    lines = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags", "Features",
                                                             "CPU part"))]
    return platform.machine() + "\n" + "\n".join(sorted(set(lines)))


def target_flags(target: Target, cc: str | None = None, f16: bool = False) -> tuple[str, ...]:
    """The compiler flags of ``target`` beyond :data:`CFLAGS` for the compiler ``cc``
    (a path; default the target's). ``f16``: the source computes on ``_Float16``, which
    GCC compiles without ``-march``: GCC 12's native f16 arithmetic (AVX512-FP16) gives
    ``(-0.0 - x) + 0.0`` as -0.0 at x = 0 where IEEE says +0.0."""
    path = cc or _compiler(target.cc)
    clang = _is_clang(path)
    flags = ["-ffp-contract=off"]
    if target.march and (clang or not f16):
        flags.append(f"-march={target.march}")
    if not target.loop_patterns and not clang:
        flags.append("-fno-tree-loop-distribute-patterns")
    return tuple(flags)


_LIBS: dict[str, ctypes.CDLL] = {}
_LIBS_LOCK = threading.Lock()


#: under the package's ``eqsat`` logger, like every module of the project
log = logging.getLogger("eqsat.lowering.compile")


def compile_c(source: str, cache_dir: str | os.PathLike | None = None,
              extra_flags: tuple[str, ...] = (), cc: str | None = None) -> Path:
    """Compile ``source`` to a shared library (cached by hash); return its path.
    ``cc``: the compiler (default ``$CC``, else ``cc``)."""
    cc = _compiler(cc)
    flags = CFLAGS + tuple(extra_flags)
    host = _host() if any(f == "-march=native" for f in flags) else ""
    digest = hashlib.sha256("\0".join((cc, *flags, host, source)).encode()).hexdigest()[:32]
    d = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    lib = d / f"k_{digest}.so"
    if lib.exists():
        log.debug("kernel library cached: %s", lib)
        return lib
    log.debug("compiling a kernel: %s", " ".join([cc, *flags]))
    with tempfile.TemporaryDirectory(dir=d, prefix=".build-") as tmp:
        c_path = Path(tmp) / "kernel.c"
        c_path.write_text(source)
        out = Path(tmp) / "kernel.so"
        cmd = [cc, *flags, "-o", str(out), str(c_path), "-lm"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"running {' '.join(cmd)} failed: {e}") from e
        if proc.returncode != 0:
            raise CompileError(f"C compiler failed (exit {proc.returncode}):\n{proc.stderr}\n"
                               f"--- source ---\n{source}")
        os.replace(out, lib)  # atomic: concurrent compiles of one source are harmless
    return lib


def _load(lib: Path) -> ctypes.CDLL:
    key = str(lib)
    with _LIBS_LOCK:
        if key not in _LIBS:
            _LIBS[key] = ctypes.CDLL(key)
        return _LIBS[key]


_NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
       "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
       "f16": np.float16, "f32": np.float32, "f64": np.float64}
_CT = {"bool": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
       "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
       "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
       "f64": ctypes.c_double}


def numpy_dtype(dt: DType) -> np.dtype:
    """The numpy dtype of a buffer element dtype."""
    if dt.name not in _NP:
        raise LoweringError(f"no numpy dtype for {dt}")
    return np.dtype(_NP[dt.name])


class Kernel:
    """A compiled kernel: call it with numpy arrays (SLOT order) and variables.

    ``kernel(out, inp, n=5)`` runs in place on the arrays. Expression kernels
    (a bare value root) return the value (None where it is Invalid).
    ``c_source``, ``linear`` (the instruction list) and ``linear_text`` show
    what runs; ``signature`` lists buffers and variables.
    """

    def __init__(self, lowered: Lowered, target: Target, cache_dir: str | os.PathLike | None):
        self.lowered = lowered
        self.target = target
        self.cache_dir = cache_dir
        self._fn: Any = None

    # ---- what it is -----------------------------------------------------------------------
    @property
    def c_source(self) -> str:
        return self.lowered.c_source

    @property
    def f16(self) -> bool:
        """The source computes on ``_Float16`` (which decides the compiler and its flags)."""
        return "_Float16" in self.c_source

    @property
    def linear(self) -> list[UOp]:
        return self.lowered.linear

    @property
    def linear_text(self) -> str:
        return self.lowered.linear_text

    @property
    def signature(self) -> Signature:
        return self.lowered.signature

    @property
    def name(self) -> str:
        return self.lowered.signature.name

    @property
    def graph(self) -> UOp:
        """The graph that was lowered (after optimization)."""
        return self.lowered.graph

    def __repr__(self) -> str:
        sig = self.signature
        bufs = ", ".join(f"{s}:{dt}[{n}]" for s, dt, n in sig.buffers)
        vs = ", ".join(f"{n}∈[{lo},{hi}]" for n, lo, hi in sig.variables)
        return (f"<Kernel {self.name}({bufs}{'; ' if bufs and vs else ''}{vs}) "
                f"{len(self.linear)} instructions, target={self.target!r}>")

    # ---- compiling -------------------------------------------------------------------------
    @property
    def compiled(self) -> bool:
        """The kernel's function is loaded (``compile()`` or ``compile_kernels`` ran)."""
        return self._fn is not None

    @property
    def cc(self) -> str:
        """The path of the C compiler this kernel compiles with (``Target.cc``; by
        default ``$CC``, else clang for register tiles where installed and able to
        compile the source, else ``cc``)."""
        tiles = bool(self.lowered.stats.get("expanded", {}).get("expand_reduce"))
        return _compiler(self.target.cc, tiles, self.f16)

    @property
    def flags(self) -> tuple[str, ...]:
        """The compiler flags beyond :data:`CFLAGS` (:func:`target_flags`)."""
        return target_flags(self.target, self.cc, self.f16)

    def compile(self) -> Kernel:
        """Compile (or fetch from the cache) and load the shared library; returns self.
        Where the compiler fails with ``-march``, it compiles again without: a compiler
        may emit instructions of the host that its assembler does not know (GCC 12's
        AVX512-FP16 ``vmovsh`` for ``_Float16`` with an older binutils)."""
        if self._fn is None:
            try:
                lib = compile_c(self.c_source, self.cache_dir, self.flags, self.cc)
            except CompileError:
                plain = tuple(f for f in self.flags if not f.startswith("-march="))
                if plain == self.flags:
                    raise
                log.debug("compiling %s again without -march", self.name)
                lib = compile_c(self.c_source, self.cache_dir, plain, self.cc)
            self._bind(_load(lib))
        return self

    def _bind(self, lib: ctypes.CDLL) -> None:
        """Take this kernel's function from the loaded library ``lib``."""
        fn = getattr(lib, self.name)
        sig = self.signature
        fn.argtypes = ([ctypes.c_void_p] * len(sig.buffers) + [ctypes.c_int64] *
                       len(sig.variables) + ([ctypes.c_void_p] if sig.has_valid else [])
                       + ([ctypes.c_void_p] if sig.checks else []))
        if sig.returns is None:
            fn.restype = None
        elif sig.returns.name in _CT:
            fn.restype = _CT[sig.returns.name]
        else:
            raise LoweringError(f"expression kernels cannot return {sig.returns} via ctypes")
        self._fn = fn

    # ---- running ---------------------------------------------------------------------------------
    def _check_arrays(self, arrays: tuple[Any, ...]) -> list[int]:
        sig = self.signature
        if len(arrays) != len(sig.buffers):
            want = ", ".join(f"slot {s} ({dt}[{n}])" for s, dt, n in sig.buffers) or "none"
            raise TypeError(f"{self.name} takes {len(sig.buffers)} arrays ({want}), "
                            f"got {len(arrays)}")
        ptrs = []
        for a, (slot, dt, size) in zip(arrays, sig.buffers, strict=True):
            where = f"{self.name}: array for slot {slot}"
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{where} must be a numpy array, got {type(a).__name__}")
            want = numpy_dtype(dt)
            if a.dtype != want:
                raise TypeError(f"{where} has dtype {a.dtype}, the buffer holds {dt} ({want})")
            if a.size != size:
                raise ValueError(f"{where} has {a.size} elements, the buffer holds {size}")
            if not a.flags.c_contiguous:
                raise ValueError(f"{where} is not C-contiguous (use np.ascontiguousarray and "
                                 "copy the result back)")
            if slot in sig.written and not a.flags.writeable:
                raise ValueError(f"{where} is read-only but the kernel stores to it")
            ptrs.append(a.ctypes.data)
        for i, (a, (slot, _, _)) in enumerate(zip(arrays, sig.buffers, strict=True)):
            for b, (slot2, _, _) in list(zip(arrays, sig.buffers, strict=True))[i + 1:]:
                if (slot in sig.written or slot2 in sig.written) and a.size and b.size \
                        and np.may_share_memory(a, b):
                    raise ValueError(f"{self.name}: arrays for slots {slot} and {slot2} overlap; "
                                     "buffers are restrict pointers and must not alias")
        return ptrs

    def _check_vars(self, values: dict[str, Any]) -> list[int]:
        sig = self.signature
        names = [n for n, _, _ in sig.variables]
        unknown = sorted(set(values) - set(names))
        missing = [n for n in names if n not in values]
        if unknown or missing:
            raise TypeError(f"{self.name} takes variables {names}; "
                            + (f"missing {missing}" if missing else "")
                            + ("; " if missing and unknown else "")
                            + (f"unknown {unknown}" if unknown else ""))
        out = []
        for n, lo, hi in sig.variables:
            v = values[n]
            if isinstance(v, bool):
                raise TypeError(f"variable {n} must be an integer, got bool")
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"variable {n} must be an integer, got {type(v).__name__}") \
                    from None
            if not lo <= v <= hi:
                raise ValueError(f"variable {n}={v} is outside its declared range [{lo}, {hi}] "
                                 "(the code was optimized for that range)")
            out.append(v)
        return out

    def bound(self, *arrays: np.ndarray, **variables: int) -> Callable[[], Any]:
        """The compiled function applied to ``arrays`` and ``variables``, checked once
        now: a call without arguments runs the kernel in place with no per-call checks
        of the arguments (what a benchmark times; a kernel with run-time bounds checks
        still raises :class:`OutOfBoundsError`). It keeps the arrays alive; do not resize
        them."""
        ptrs = self._check_arrays(arrays)
        vals = self._check_vars(variables)
        self.compile()
        fn, args = self._fn, (*ptrs, *vals)
        if self.signature.has_valid or self.signature.checks:
            call = self._runner(args)

            def run_checked(_alive: tuple = arrays) -> Any:  # the pointers' arrays kept alive
                return call()
            return run_checked

        def run(_alive: tuple = arrays) -> Any:  # the pointers' arrays kept alive
            return fn(*args)
        return run

    def _runner(self, args: tuple[int, ...]) -> Callable[[], Any]:
        """The function on ``args`` (the buffers' addresses and the variables) as a call
        without arguments: the value (None where it is Invalid, or for a kernel with no
        value); :class:`OutOfBoundsError` where a checked index left its buffer."""
        fn, sig = self._fn, self.signature
        valid = ctypes.c_bool(False)
        oob = (ctypes.c_int64 * 2)()
        full = (*args, *([ctypes.addressof(valid)] if sig.has_valid else []),
                *([ctypes.addressof(oob)] if sig.checks else []))

        def run() -> Any:
            oob[0] = 0
            res = fn(*full)
            if oob[0]:
                self._out_of_bounds(oob[0], oob[1])
            return res if valid.value or not sig.has_valid else None
        return run

    def _out_of_bounds(self, check: int, value: int) -> None:
        """Raise the error of the run-time bounds check number ``check`` (1-based)."""
        sig = self.signature
        if not 1 <= check <= len(sig.checks):
            raise RuntimeError(f"{self.name}: bounds check {check} reported, the kernel has "
                               f"{len(sig.checks)}")
        access, slot, dt, size, index = sig.checks[check - 1]
        raise OutOfBoundsError(
            f"{self.name}: {access} buffer {slot} ({dt}, size {size}) at index {value}, "
            f"outside {f'0..{size - 1}' if size else 'an empty buffer'}: the index {index} "
            "is not proven inside the buffer (it is computed from loaded data, or its gate "
            "does not keep it inside); the kernel stopped before that access (what it "
            "stored until then stays in the arrays)")

    def __call__(self, *arrays: np.ndarray, **variables: int) -> Any:
        """Run the kernel in place on ``arrays`` (SLOT order) with ``variables``."""
        ptrs = self._check_arrays(arrays)
        vals = self._check_vars(variables)
        self.compile()
        sig = self.signature
        if sig.has_valid or sig.checks:
            return self._runner((*ptrs, *vals))()
        res = self._fn(*ptrs, *vals)
        return None if sig.returns is None else res


def compile_kernel(graph: UOp, optimize: bool | str | None = True, target: Target | None = None,
                   name: str = "kernel", cache_dir: str | os.PathLike | None = None,
                   compile: bool = True, budget: Any = None) -> Kernel:
    """Lower ``graph`` to C and compile it; see :class:`Kernel` for running it.

    ``optimize``: ``True``/``"egraph"`` (the e-graph; True falls back to the
    baseline with a warning when the e-graph engine is not importable),
    ``"baseline"`` (the ordered pattern matcher) or ``False`` (lower as is).
    ``target``: a :class:`Target` (default: plain C, no FMA, no predicated
    stores). ``cache_dir``: where compiled libraries are kept (default
    :func:`default_cache_dir`). ``compile=False`` defers compiling to the
    first call. ``budget``: the optimizer's ``eqsat.Budget`` (its default when None; the
    e-graph's warm session is built before the budget starts).
    """
    target = target or Target()
    k = Kernel(lower_graph(graph, optimize=optimize, target=target, name=name, budget=budget),
               target, cache_dir)
    return k.compile() if compile else k


def compile_kernels(kernels: Sequence[Kernel], cache_dir: str | os.PathLike | None = None
                    ) -> list[Kernel]:
    """Compile many lowered kernels (``compile_kernel(..., compile=False)``, distinct
    names) with one C compiler run per compiler and set of flags: their functions in one source,
    the includes and helpers once. Several times faster per kernel than compiling each
    (the compiler's start-up and the shared library's loading dominate a small kernel).
    When the compiler rejects the joint source, each kernel is left to compile on its
    own, so the error lands on its kernel when it is called. Returns ``kernels``."""
    todo = [k for k in kernels if not k.compiled]
    names = Counter(k.name for k in todo)
    dup = sorted(n for n, c in names.items() if c > 1)
    if dup:
        raise ValueError(f"kernels compiled together need distinct names: {dup} repeat")
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    for k in todo:
        groups.setdefault((k.cc, k.flags), []).append(k)
    for (cc, flags), ks in groups.items():
        seen: dict[str, None] = {}
        bodies = []
        for k in ks:
            pre = k.signature.preamble
            for item in pre:
                if item:
                    seen.setdefault(item)
            bodies.append(k.c_source[len("\n".join(pre)):])
        source = "\n".join(seen) + "\n" + "".join(bodies)
        try:
            lib = _load(compile_c(source, cache_dir, flags, cc))
        except CompileError:
            continue  # each kernel compiles alone when called, with its own error
        for k in ks:
            k._bind(lib)
    return list(kernels)
