"""Differential fuzzing of both engines and of the lowering, beyond the corpus.

Expressions: ``--n`` random expressions (``tests.strategies.fuzz_expr``: index
expressions with every integer op, divisions by expressions that may be 0,
where/Invalid, comparisons, fixed-width integers, bools and f16/f32/f64 floats
with loads, NaN, infinities and -0; vars with negative, mixed, positive, wide
and huge bounds) go through both engines, each twice, and every output must be

* equivalent to its input (``eqsat.check_equivalent``, floats bit for bit up to
  NaN payloads, on ``--samples`` points),
* for the e-graph, no costlier than its input (reference cost),
* the same both times (determinism).

Kernels: ``--kernels`` random kernels (``tests.strategies.fuzz_kernel``: a view
of an input buffer, a second shifted/flipped/padded view, an elementwise or
sum/max body of loads, index casts, a variable and constants; f32/f16/f64/i32)
are lowered and compiled unoptimized and after each engine
(``lowering.compile_kernel``; compiled ``--batch`` kernels to one C file,
``lowering.compile_kernels``) and run on random inputs (specials included)
against ``eqsat.run_kernel``, the reference interpreter; the outputs must agree
bit for bit (any NaN for a NaN). Kernels whose reference run is undefined (a
float cast out of range, ...) are counted and skipped.

Case ``i`` of seed ``S`` is a function of ``(S, i)`` only. Every failure is
shrunk (:func:`shrink`: subterms replaced by their children or constants while
the failure stays) and printed with its ``.uop`` text; the run prints counts
and times per stage and exits 1 when anything failed.

Usage: ``python3 benchmarks/fuzz.py [--n 100000] [--seed 0] [--kernels N]
[--samples 300] [--jobs 1] [--batch 50] [--rotate] [--no-shrink] [--limit 20] [--progress]``
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
# the repo first, and not this directory: benchmarks/extraction.py would shadow the
# `extraction` package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if p and Path(p).resolve() not in (_HERE, REPO)]

from eqsat.api import Budget, optimize  # noqa: E402
from eqsat.ir.equiv import check_equivalent  # noqa: E402
from eqsat.ir.interp import EvalError, run_kernel  # noqa: E402
from eqsat.ir.ops import Ops  # noqa: E402
from eqsat.ir.sexpr import to_sexpr  # noqa: E402
from eqsat.ir.uop import IRError, UOp, const_value  # noqa: E402
from tests.strategies import SeededDraw, fuzz_expr, fuzz_kernel  # noqa: E402

__all__ = ["Finding", "Report", "check_expr", "check_kernels", "expr_failures", "kernel_failures",
           "shrink", "run", "main"]

ENGINES = ("baseline", "egraph")
#: iterations and e-nodes bound the e-graph, not the clock: a loaded machine must not
#: cut a run short (the determinism check compares two runs)
BUDGET = Budget(seconds=60.0)
KERNEL_VARIANTS = (False, "baseline", "egraph")


@dataclass
class Finding:
    """One failure: ``kind`` (inequivalent, costlier, nondeterministic, crash,
    kernel-mismatch, kernel-crash), the engine (or kernel variant), the case, what was
    seen, and the input's text (shrunk when ``shrunk`` is set)."""

    kind: str
    engine: str
    case: str
    detail: str
    text: str
    shrunk: str = ""

    def __str__(self) -> str:
        s = f"{self.kind} [{self.engine}] {self.case}: {self.detail}\n    in: {self.text}"
        if self.shrunk and self.shrunk != self.text:
            s += f"\n    shrunk: {self.shrunk}"
        return s


@dataclass
class Report:
    """Counts and times of a run."""

    counts: Counter = field(default_factory=Counter)
    times: defaultdict = field(default_factory=lambda: defaultdict(float))
    findings: list[Finding] = field(default_factory=list)

    def merge(self, other: Report) -> None:
        self.counts.update(other.counts)
        for k, v in other.times.items():
            self.times[k] += v
        self.findings.extend(other.findings)


# ---- expressions -------------------------------------------------------------------------
def _optimize(e: UOp, engine: str) -> Any:
    return optimize(e, engine=engine, cost_model="reference", budget=BUDGET)


def expr_failures(e: UOp, engine: str, samples: int, times: dict[str, float] | None = None
                   ) -> list[tuple[str, str]]:
    """What is wrong with ``engine`` on ``e``: ``[(kind, detail)]``."""
    t0 = time.perf_counter()
    try:
        res = _optimize(e, engine)
        again = _optimize(e, engine).graph
    except IRError as ex:
        if str(ex).startswith("index arithmetic out of range"):
            return []  # a documented refusal (docs/format.md, "Integers"), not a crash
        return [("crash", f"IRError: {ex}"[:300])]
    except Exception as ex:  # any crash is a finding
        return [("crash", f"{type(ex).__name__}: {ex}"[:300])]
    t1 = time.perf_counter()
    out = res.graph
    found = []
    if out is not again:
        found.append(("nondeterministic", f"{to_sexpr(out)} then {to_sexpr(again)}"))
    # optimize returns the input where the engine's result is costlier ("fallback")
    if engine == "egraph" and (res.stats.get("fallback") or res.cost > res.input_cost):
        found.append(("costlier", f"the e-graph's result cost more than the input's "
                                  f"{res.input_cost} ({res.stats.get('fallback')})"))
    try:
        eq = check_equivalent(e, out, samples=samples, max_exhaustive=4 * samples)
    except Exception as ex:
        found.append(("check-crash", f"{type(ex).__name__}: {ex}"[:300]))
    else:
        if not eq:
            found.append(("inequivalent", f"{eq!r} out: {to_sexpr(out)}"[:600]))
    if times is not None:
        times[f"optimize {engine}"] += t1 - t0
        times["equivalence"] += time.perf_counter() - t1
    return found


def check_expr(e: UOp, case: str, samples: int = 300, report: Report | None = None,
               do_shrink: bool = True) -> list[Finding]:
    """Both engines on ``e``: equivalent, not costlier (e-graph), deterministic."""
    report = report if report is not None else Report()
    out = []
    for engine in ENGINES:
        for kind, detail in expr_failures(e, engine, samples, report.times):
            f = Finding(kind, engine, case, detail, to_sexpr(e))
            if do_shrink:
                t0 = time.perf_counter()
                f.shrunk = to_sexpr(shrink(e, lambda c, k=kind, g=engine: any(
                    k == k2 for k2, _ in expr_failures(c, g, samples))))
                report.times["shrink"] += time.perf_counter() - t0
            out.append(f)
            report.counts[f"{kind} {engine}"] += 1
    report.counts["expressions"] += 1
    report.findings.extend(out)
    return out


# ---- shrinking ---------------------------------------------------------------------------
#: nodes the shrinker never replaces: the kernel's skeleton, memory and leaves of their ops
_KEEP = frozenset({Ops.SINK, Ops.END, Ops.STORE, Ops.INDEX, Ops.DEFINE_GLOBAL, Ops.RANGE,
                   Ops.AFTER})


def _simpler(u: UOp) -> Iterator[UOp]:
    """Smaller stand-ins for ``u``: its children of its dtype, then constants."""
    for s in u.src:
        if s.dtype is u.dtype:
            yield s
    dt = u.dtype
    if dt.ptr or dt.count != 1 or dt.is_void:
        return
    if dt.is_bool:
        vals: tuple[Any, ...] = (False, True)
    elif dt.is_float:
        vals = (0.0, 1.0, -0.0, math.inf, math.nan)
    else:
        vals = (0, 1, -1)
    if u.op is Ops.DEFINE_VAR:
        vals = tuple(v for v in (u.arg[1], u.arg[2], 0) if u.arg[1] <= v <= u.arg[2])
    for v in vals:
        c = UOp.const(dt, v)
        if c is not u:
            yield c


def _candidates(e: UOp) -> Iterator[UOp]:
    nodes = [u for u in reversed(e.toposort()) if u.op not in _KEEP]
    for u in nodes:
        for r in _simpler(u):
            try:
                yield e.substitute({u: r}) if u is not e else r
            except Exception:  # the replacement makes a node the IR refuses
                continue
    for u in nodes:  # narrower variables
        if u.op is Ops.DEFINE_VAR and u.arg[2] - u.arg[1] > 1:
            name, lo, hi = u.arg
            for a, b in ((lo, (lo + hi) // 2), ((lo + hi) // 2, hi), (max(lo, -2), min(hi, 2))):
                if a <= b and (a, b) != (lo, hi):
                    yield e.substitute({u: UOp.var(name, a, b)})


def _size(e: UOp) -> tuple[int, int]:
    width = sum(u.arg[2] - u.arg[1] for u in e.toposort() if u.op is Ops.DEFINE_VAR)
    return len(e.toposort()), width


def shrink(e: UOp, fails: Callable[[UOp], bool], seconds: float = 60.0) -> UOp:
    """A smaller graph on which ``fails`` still holds: greedily replace a subterm by one
    of its children or a constant (or narrow a variable) while the graph gets smaller
    and ``fails`` stays true; stop at a fixed point or after ``seconds``."""
    best, deadline = e, time.monotonic() + seconds
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for c in _candidates(best):
            if time.monotonic() > deadline:
                break
            if _size(c) >= _size(best):
                continue
            try:
                bad = fails(c)
            except Exception:
                bad = False
            if bad:
                best, improved = c, True
                break
    return best


# ---- kernels -----------------------------------------------------------------------------
def _buffers(g: UOp) -> list[np.ndarray]:
    """Random contents of every buffer of kernel ``g``, by slot (a third special values),
    the same for every run of the same kernel text."""
    from lowering.compile import numpy_dtype

    rng = np.random.default_rng(zlib.crc32(to_sexpr(g).encode()))
    decl = {u.arg[0]: u for u in g.toposort() if u.op is Ops.DEFINE_GLOBAL}
    out = []
    for slot in range(max(decl, default=-1) + 1):
        u = decl.get(slot)
        if u is None:
            out.append(np.zeros(0, np.float32))
            continue
        dt, n = u.dtype.base(), u.arg[1]
        npdt = numpy_dtype(dt)
        if dt.is_float:
            vals = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
            big = float(np.finfo(npdt).max)
            special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, big, -big, 1e38])
            pick = rng.random(n) < 0.3
            with np.errstate(over="ignore"):
                out.append(np.where(pick, special[rng.integers(0, len(special), n)], vals)
                           .astype(npdt))
        elif dt.is_bool:
            out.append(rng.random(n) < 0.5)
        else:
            special = [0, 1, -1, int(dt.min), int(dt.max)]
            vals = [special[int(rng.integers(0, 5))] if rng.random() < 0.2
                    else int(rng.integers(-100, 100)) for _ in range(n)]
            out.append(np.array([const_value(dt, v) for v in vals], dtype=npdt))
    return out


def _variables(g: UOp) -> dict[str, int]:
    """A value for every variable of ``g``: the middle of its range."""
    return {u.arg[0]: (u.arg[1] + u.arg[2]) // 2 for u in g.toposort()
            if u.op is Ops.DEFINE_VAR}


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal bit for bit, any NaN for a NaN."""
    if a.dtype.kind == "f":
        return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    return a == b


def _run_compiled(k: Any, bufs: list[np.ndarray], env: dict[str, int]) -> np.ndarray:
    got = [b.copy() for b in bufs]
    k(*[got[s] for s, _, _ in k.signature.buffers],
      **{n: env[n] for n, _, _ in k.signature.variables})
    return got[0]


def check_kernels(kernels: list[tuple[str, UOp]], report: Report | None = None,
                  do_shrink: bool = True, variants: list[tuple[Any, ...]] | None = None
                  ) -> list[Finding]:
    """Compile every kernel unoptimized and after each engine (``variants[i]``: the
    ones for kernel i; one C file for all) and run it against the reference interpreter
    on the same inputs: the output buffers (slot 0) must agree bit for bit (any NaN
    for a NaN)."""
    from lowering.compile import compile_kernel, compile_kernels

    report = report if report is not None else Report()
    times = report.times
    found: list[Finding] = []
    prepared = []
    for i, (case, g) in enumerate(kernels):
        bufs, env = _buffers(g), _variables(g)
        t0 = time.perf_counter()
        try:
            want = run_kernel(g, [b.copy() for b in bufs], env)[0]
        except EvalError:
            report.counts["kernels undefined"] += 1
            continue
        finally:
            times["kernels reference"] += time.perf_counter() - t0
        report.counts["kernels"] += 1
        for variant in (variants[i] if variants is not None else KERNEL_VARIANTS):
            t0 = time.perf_counter()
            try:
                k = compile_kernel(g, optimize=variant, name=f"k{len(prepared)}",
                                   compile=False, budget=BUDGET)
            except Exception as ex:
                found.append(Finding("kernel-crash", _variant(variant), case,
                                     f"lowering: {type(ex).__name__}: {ex}"[:300], to_sexpr(g)))
                continue
            finally:
                times[f"kernels lower {_variant(variant)}"] += time.perf_counter() - t0
            prepared.append((case, g, variant, k, bufs, env, want))
    t0 = time.perf_counter()
    compile_kernels([p[3] for p in prepared])
    times["kernels compile"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    for case, g, variant, k, bufs, env, want in prepared:
        try:
            got = _run_compiled(k, bufs, env)
        except Exception as ex:
            found.append(Finding("kernel-crash", _variant(variant), case,
                                 f"{type(ex).__name__}: {ex}"[:300], to_sexpr(g)))
            continue
        bad = np.flatnonzero(~_same(got, want))[:4]
        if bad.size:
            found.append(Finding("kernel-mismatch", _variant(variant), case,
                                 f"elements {bad.tolist()}: C {got[bad].tolist()} vs "
                                 f"reference {want[bad].tolist()}", to_sexpr(g)))
    times["kernels run"] += time.perf_counter() - t0
    graphs = dict(kernels)
    for f in found:
        if do_shrink:
            t0 = time.perf_counter()
            f.shrunk = to_sexpr(shrink(graphs[f.case], lambda g, f=f: f.kind in kernel_failures(
                g, f.engine)))
            times["shrink"] += time.perf_counter() - t0
        report.counts[f"{f.kind} {f.engine}"] += 1
    report.findings.extend(found)
    return found


def _variant(v: Any) -> str:
    return "unoptimized" if v is False else str(v)


def kernel_failures(g: UOp, engine: str) -> set[str]:
    """What goes wrong with kernel ``g`` lowered after ``engine`` (``"unoptimized"``:
    as it is), compiled and run against the reference: {"kernel-crash",
    "kernel-mismatch"} or fewer; empty also where the reference run is undefined."""
    from lowering.compile import compile_kernel

    bufs, env = _buffers(g), _variables(g)
    try:
        want = run_kernel(g, [b.copy() for b in bufs], env)[0]
    except EvalError:
        return set()
    try:
        k = compile_kernel(g, optimize=False if engine == "unoptimized" else engine,
                           budget=BUDGET)
        got = _run_compiled(k, bufs, env)
    except Exception:
        return {"kernel-crash"}
    return set() if _same(got, want).all() else {"kernel-mismatch"}


# ---- the run -----------------------------------------------------------------------------
def _cpu() -> float:
    """CPU seconds of this process and its finished children (the C compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _exprs_chunk(args: tuple[int, int, int, int, bool, bool]) -> Report:
    seed, start, stop, samples, do_shrink, progress = args
    rep = Report()
    c0 = _cpu()
    for i in range(start, stop):
        case = f"{seed}:{i}"
        t0 = time.perf_counter()
        e = fuzz_expr(SeededDraw(case))
        rep.times["generate"] += time.perf_counter() - t0
        check_expr(e, case, samples, rep, do_shrink)
        if progress and (i - start) % 100 == 99:
            print(f"  expressions {start}..{i}: {dict(rep.counts)}", file=sys.stderr, flush=True)
    rep.times["cpu"] += _cpu() - c0
    return rep


def _kernels_chunk(args: tuple[int, int, int, bool, bool]) -> Report:
    seed, start, stop, do_shrink, rotate = args
    rep = Report()
    c0 = _cpu()
    t0 = time.perf_counter()
    ks = [(f"{seed}:k{i}", fuzz_kernel(SeededDraw(f"{seed}:k{i}"))) for i in range(start, stop)]
    rep.times["generate"] += time.perf_counter() - t0
    variants = ([(KERNEL_VARIANTS[i % len(KERNEL_VARIANTS)],) for i in range(start, stop)]
                if rotate else None)
    check_kernels(ks, rep, do_shrink, variants)
    rep.times["cpu"] += _cpu() - c0
    return rep


def _warm() -> None:
    from eqsat.engines.egraph import session_for

    session_for(None).prepare()


def run(n: int = 1000, seed: int = 0, kernels: int = 0, samples: int = 300, jobs: int = 1,
        batch: int = 50, do_shrink: bool = True, progress: bool = False, first: int = 0,
        first_kernel: int = 0, rotate: bool = False) -> Report:
    """Fuzz expressions ``first .. first+n-1`` and kernels ``first_kernel ..
    first_kernel+kernels-1`` of ``seed``; the merged :class:`Report`. ``rotate``: each
    kernel lowered once, unoptimized, after the baseline and after the e-graph in turn
    (else all three)."""
    chunk = max(1, min(250, n // max(jobs, 1) // 4 or 1))
    etasks = [(seed, s, min(s + chunk, first + n), samples, do_shrink, progress)
              for s in range(first, first + n, chunk)]
    ktasks = [(seed, s, min(s + batch, first_kernel + kernels), do_shrink, rotate)
              for s in range(first_kernel, first_kernel + kernels, batch)]
    report = Report()
    t0 = time.perf_counter()
    if jobs <= 1:
        c0 = _cpu()
        _warm()
        report.times["setup"] += time.perf_counter() - t0
        report.times["cpu"] += _cpu() - c0
        for r in map(_exprs_chunk, etasks):
            report.merge(r)
        for r in map(_kernels_chunk, ktasks):
            report.merge(r)
    else:
        with mp.get_context("spawn").Pool(jobs, initializer=_warm) as pool:
            for r in pool.imap_unordered(_exprs_chunk, etasks):
                report.merge(r)
            for r in pool.imap_unordered(_kernels_chunk, ktasks):
                report.merge(r)
    report.times["wall"] = time.perf_counter() - t0
    return report


def format_report(report: Report, limit: int = 20) -> str:
    c = report.counts
    lines = [f"expressions: {c['expressions']}  kernels: {c['kernels']} "
             f"(+{c['kernels undefined']} with an undefined reference run, skipped)"]
    fails = sorted((k, v) for k, v in c.items()
                   if k not in ("expressions", "kernels", "kernels undefined"))
    lines.append("failures: " + (", ".join(f"{k}: {v}" for k, v in fails) if fails else "none"))
    lines.append("times (s, summed over workers): " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(report.times.items()) if k not in ("wall", "cpu"))
        + f"; cpu {report.times.get('cpu', 0.0):.1f} (C compiler included), "
        f"wall {report.times.get('wall', 0.0):.1f}")
    for f in report.findings[:limit]:
        lines.append(str(f))
    if len(report.findings) > limit:
        lines.append(f"... and {len(report.findings) - limit} more")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="random expressions (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernels", type=int, default=0, help="random kernels (default 0)")
    ap.add_argument("--samples", type=int, default=300,
                    help="points per equivalence check (default 300)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--batch", type=int, default=50, help="kernels per C file (default 50)")
    ap.add_argument("--rotate", action="store_true",
                    help="each kernel lowered one way (unoptimized, baseline, e-graph in turn)")
    ap.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    ap.add_argument("--limit", type=int, default=20, help="failures printed (default 20)")
    ap.add_argument("--progress", action="store_true", help="counts on stderr as it goes")
    a = ap.parse_args(argv)
    try:
        report = run(a.n, a.seed, a.kernels, a.samples, a.jobs, a.batch, not a.no_shrink,
                     a.progress, rotate=a.rotate)
    except Exception:
        traceback.print_exc()
        return 2
    print(format_report(report, a.limit))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
