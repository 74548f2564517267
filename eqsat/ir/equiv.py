"""Equivalence checking of two expressions by evaluation.

``check_equivalent(a, b)`` compares the input ``a`` and a candidate ``b`` on
every assignment of their leaves when the joint domain is small (at most
``max_exhaustive`` points), otherwise on the corners of the domain plus random
points (biased to the interesting values of each leaf: its ends, 0, +-1 and
the graphs' integer constants +-1).

Rules (``data/corpus/README.md``): ``a`` and ``b`` are equal where both are Invalid or
both have the same value; points where ``a`` is undefined (a division by zero,
a bad shift, a range value not below its end) are skipped, since the input
promises nothing there; ``b`` undefined where ``a`` is defined is a difference.
The leaves are the union of both graphs' vars, ranges and specials (by env
key: a var's name, ``R<id>``), each over its ``[vmin, vmax]``; a leaf in both
takes ``a``'s bounds.

A difference found by the vectorized evaluator is confirmed with the reference
interpreter (``eqsat.ir.interp.evaluate``) before it is reported.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.interp import (
    INVALID,
    EvalError,
    Undefined,
    evaluate,
    evaluate_many,
    leaf_key,
    vectorizable,
)
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["check_equivalent", "Equivalence", "domain_of"]

_CORNER_CAP = 4096
_SLOW_EXHAUSTIVE = 8192
_SLOW_SAMPLES = 2000
_MEMORY_OPS = frozenset({Ops.DEFINE_GLOBAL, Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.LOAD, Ops.STORE,
                         Ops.INDEX, Ops.END, Ops.SINK, Ops.AFTER})


@dataclass
class Equivalence:
    """The outcome of :func:`check_equivalent`; truthy iff equivalent.

    ``points``: assignments compared (undefined points of ``a`` not counted;
    ``skipped`` counts those). ``counterexample``: ``{leaf key: value}`` of a
    differing assignment, with the two values in ``a_value``/``b_value``
    (``INVALID``, or an ``Undefined`` carrying its cause, where so).
    ``reason`` says what differs.
    """

    equivalent: bool
    exhaustive: bool
    points: int
    counterexample: dict[str, int] | None = None
    a_value: Any = None
    b_value: Any = None
    skipped: int = 0
    reason: str = ""
    domain: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.equivalent

    def __repr__(self) -> str:
        if self.equivalent:
            how = "exhaustively" if self.exhaustive else "on samples"
            return f"Equivalence(equivalent=True, {how}, points={self.points})"
        return (f"Equivalence(equivalent=False, counterexample={self.counterexample}, "
                f"a={self.a_value!r}, b={self.b_value!r}, reason={self.reason!r})")


def domain_of(*graphs: UOp) -> dict[str, tuple[int, int]]:
    """``{leaf key: (lo, hi)}`` over the leaves of ``graphs``; the first graph's
    bounds win for a key that appears in several."""
    dom: dict[str, tuple[int, int]] = {}
    for g in graphs:
        for leaf in g.leaves():
            key = leaf_key(leaf)
            if key in dom:
                continue
            lo, hi = leaf.vmin, leaf.vmax
            if isinstance(lo, float) or isinstance(hi, float):
                raise ValueError(f"leaf {key} has unbounded values [{lo}, {hi}]")
            dom[key] = (int(lo), int(hi))
    return dom


def _interesting(lo: int, hi: int, consts: frozenset[int] = frozenset()) -> list[int]:
    """A leaf's values worth trying: its ends, 0, +-1, and each integer constant of
    the graphs (+-1), where comparisons and divisions change behaviour."""
    vals = {lo, hi, lo + 1, hi - 1, 0, 1, -1, (lo + hi) // 2}
    for k in consts:
        vals.update((k - 1, k, k + 1, -k))
    return sorted(v for v in vals if lo <= v <= hi)


def _constants(*graphs: UOp, cap: int = 256) -> frozenset[int]:
    out: set[int] = set()
    for g in graphs:
        for u in g.toposort():
            if u.op is Ops.CONST and isinstance(u.arg, int) and not isinstance(u.arg, bool):
                out.add(u.arg)
            elif u.op is Ops.VCONST:
                out.update(v for v in u.arg if isinstance(v, int) and not isinstance(v, bool))
    return frozenset(sorted(out, key=abs)[:cap])


def _points(dom: dict[str, tuple[int, int]], samples: int, seed: int,
            max_exhaustive: int, consts: frozenset[int] = frozenset()
            ) -> tuple[dict[str, np.ndarray], int, bool]:
    names = list(dom)
    sizes = [hi - lo + 1 for lo, hi in dom.values()]
    total = math.prod(sizes)
    if total <= max_exhaustive:
        if not names:
            return {}, 1, True
        grid = np.unravel_index(np.arange(total, dtype=np.int64), sizes)
        return ({k: g.astype(np.int64) + dom[k][0] for k, g in zip(names, grid, strict=True)},
                total, True)
    rng = np.random.default_rng(seed)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in names}
    # corners: every combination of each leaf's ends (random ones beyond the cap)
    ends = [sorted({lo, hi}) for lo, hi in dom.values()]
    n_corners = math.prod(len(e) for e in ends)
    if n_corners <= _CORNER_CAP:
        combos = np.array(list(itertools.product(*ends)), dtype=object)
        for j, k in enumerate(names):
            cols[k].append(_as_col(combos[:, j]))
    else:
        for k, e in zip(names, ends, strict=True):
            cols[k].append(_as_col(np.array(e, dtype=object)[rng.integers(0, len(e),
                                                                           _CORNER_CAP)]))
    # random points: each leaf uniform or one of its interesting values
    for k in names:
        lo, hi = dom[k]
        special = np.array(_interesting(lo, hi, consts), dtype=object)
        pick = rng.random(samples) < 0.35
        if hi - lo < 2**62:
            uni = lo + rng.integers(0, hi - lo + 1, samples, dtype=np.int64).astype(object)
        else:
            uni = np.array([lo + int(rng.integers(0, 2**62)) * (hi - lo) // 2**62
                            for _ in range(samples)], dtype=object)
        sp = special[rng.integers(0, len(special), samples)]
        cols[k].append(_as_col(np.where(pick, sp, uni)))
    out = {k: np.concatenate([_obj_or_int(c) for c in v]) for k, v in cols.items()}
    out = {k: _as_col(v) for k, v in out.items()}
    n = len(next(iter(out.values())))
    return out, n, False


def _obj_or_int(a: np.ndarray) -> np.ndarray:
    return a.astype(object)


def _as_col(a: np.ndarray) -> np.ndarray:
    """int64 when every value fits, else an object array of Python ints."""
    if a.dtype != object:
        return a.astype(np.int64)
    if len(a) == 0 or (max(a) < 2**62 and min(a) > -(2**62)):
        return a.astype(np.int64)
    return a


def _value_at(g: UOp, env: dict[str, int]) -> Any:
    try:
        return evaluate(g, env)
    except EvalError as e:
        return Undefined(str(e))


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(y, np.generic):
        y = y.item()
    if isinstance(x, float) and isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y, strict=True))
    if type(x) is bool or type(y) is bool:
        return type(x) is type(y) and x == y
    return x == y


def check_equivalent(a: UOp, b: UOp, *, samples: int = 20_000, seed: int = 0,
                     max_exhaustive: int = 100_000) -> Equivalence:
    """Compare ``a`` (the input) with ``b`` on all or many assignments.

    Exhaustive when the joint domain has at most ``max_exhaustive`` points;
    otherwise all corners (at most 4096) plus ``samples`` random points drawn
    with ``seed``. Graphs with float or vector nodes are evaluated point by point
    by the reference interpreter, with at most 8192 exhaustive / 2000 sampled
    points. See the module docstring for Invalid/undefined handling. Raises
    ``ValueError`` for graphs with memory ops (compare kernels with ``run_kernel``).
    """
    for g, name in ((a, "a"), (b, "b")):
        mem = next((u for u in g.toposort() if u.op in _MEMORY_OPS), None)
        if mem is not None:
            raise ValueError(f"check_equivalent compares expressions, but {name} has a "
                             f"{mem.op.name} node (run kernels with eqsat.ir.interp.run_kernel)")
    dom = domain_of(a, b)
    if a.dtype is not b.dtype:
        return Equivalence(False, False, 0, reason=f"dtypes differ: {a.dtype} vs {b.dtype}",
                           domain=dom)
    if not (vectorizable(a) and vectorizable(b)):
        # floats/vectors run point by point in the reference interpreter: fewer points
        max_exhaustive, samples = min(max_exhaustive, _SLOW_EXHAUSTIVE), min(samples, _SLOW_SAMPLES)
    cols, n, exhaustive = _points(dom, samples, seed, max_exhaustive, _constants(a, b))
    va, ia, ua = evaluate_many(a, cols, n=n)
    vb, ib, ub = evaluate_many(b, cols, n=n)
    defined = ~ua
    valid = defined & ~ia & ~ib
    if va.dtype == object or vb.dtype == object:
        neq = np.array([not _same(x, y) for x, y in zip(va, vb, strict=True)], dtype=bool)
    else:
        neq = va != vb
    bad = defined & (ub | (ia != ib) | (valid & neq))
    points = int(defined.sum())
    skipped = n - points
    if not bad.any():
        return Equivalence(True, exhaustive, points, skipped=skipped, domain=dom)
    i = int(np.flatnonzero(bad)[0])
    env = {k: int(c[i]) for k, c in cols.items()}
    x, y = _value_at(a, env), _value_at(b, env)
    if isinstance(x, Undefined) or _same(x, y):
        raise RuntimeError(f"evaluate_many and evaluate disagree at {env}: a={x!r}, b={y!r} "
                           f"(vectorized a={va[i]!r} invalid={ia[i]} undefined={ua[i]}, "
                           f"b={vb[i]!r} invalid={ib[i]} undefined={ub[i]})")
    if isinstance(y, Undefined):
        reason = "b is undefined where a is defined"
    elif (x is INVALID) != (y is INVALID):
        reason = "Invalid on different assignments"
    else:
        reason = "values differ"
    return Equivalence(False, exhaustive, points, counterexample=env, a_value=x, b_value=y,
                       skipped=skipped, reason=reason, domain=dom)
