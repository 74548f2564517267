"""A deterministic generator of *unseen* index-expression cases.

The project is measured on the corpus (``data/corpus/index-exprs.jsonl``) and on
more cases of the same three kinds that are not in it. This module makes such
cases, generalizing (not copying) the corpus lines of each kind:

* ``tinygrad-unit-like``: tinygrad's symbolic unit-test style -- small sums of
  ``var*const`` (or ranges) with offsets under ``idiv``/``mod``, nested
  divisions, comparisons of such sums, ``where``/``max`` folds, negative
  variable ranges, symbolic divisors.
* ``synthetic-view``: a random chain of reshape/permute/pad/shrink/flip/stride/
  expand/pool movement ops over a contiguous buffer (``workloads.View``,
  which unflattens every reshape with ``//``/``%`` and masks padding with
  ``(where valid idx (invalid))``), addressed by one range per axis, by one flat
  range or by a ``gidx`` variable; sometimes only the validity mask.
* ``kernel:<op>``: index expressions of real kernels -- matmul/bmm, conv2d
  (stride, dilation, padding masks, groups), pooling, reductions, cumsum --
  with tiling/upcast splits of the loops (``r = ro*T + ri``), size-1 ranges and
  shuffled term orders; and ``kernel:<op>/reshape`` cases in the shape of
  tinygrad's view-merging reshape (``(mod (idiv (add (add 0 (mul 1 i)) (mul s j))
  st) n)``).

Every case is a function of ``(seed, kind, index)`` only (string-seeded
``random.Random``), so ``generate(n=20)`` is a prefix of ``generate(n=150)``.
Rows have the corpus's shape (``id``, ``source``, ``expr``).

Usage: ``python3 tests/gen_cases.py [--n 150] [--seed 0] [--kind KIND] > cases.jsonl``
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the repo first, and not this directory: tests/eqsat would shadow the `eqsat` package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if p and Path(p).resolve() not in (_HERE, REPO)]

from eqsat.ir.dtype import dtypes  # noqa: E402
from eqsat.ir.sexpr import to_sexpr  # noqa: E402
from eqsat.ir.uop import UOp  # noqa: E402
from workloads import BuildError, View, unravel  # noqa: E402

__all__ = ["KINDS", "generate", "gen_case", "tinygrad_unit_like", "synthetic_view", "kernel_case"]

KINDS = ("tinygrad-unit-like", "synthetic-view", "kernel")
_PREFIX = {"tinygrad-unit-like": "gu", "synthetic-view": "gv", "kernel": "gk"}


def _c(v: int) -> UOp:
    return UOp.const(dtypes.index, v)


def _bool(v: bool) -> UOp:
    return UOp.const(dtypes.bool, v)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _shuffled_sum(rng: random.Random, terms: list[UOp]) -> UOp:
    """Left-nested sum of ``terms`` in a random order (or nested in pairs sometimes)."""
    terms = list(terms)
    rng.shuffle(terms)
    if len(terms) >= 3 and rng.random() < 0.3:  # kernel style (a + (b + c))
        inner = terms[-2] + terms[-1]
        terms = terms[:-2] + [inner]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


# ---------------------------------------------------------------------------
# tinygrad-unit-like
# ---------------------------------------------------------------------------

def _leaf(rng: random.Random, name: str, rid: int, neg: bool = False) -> UOp:
    """A variable ``(var name lo hi)`` (sometimes negative ``lo``) or a range."""
    if rng.random() < 0.3 and not neg:
        return UOp.range(rng.choice([2, 3, 4, 5, 8, 13, 16, 24, 32]), rid)
    hi = rng.choice([1, 2, 3, 5, 7, 9, 10, 15, 20, 31, 63, 100, 255, 1000])
    lo = -rng.choice([1, 3, 5, 7, 9, 10]) if neg else 0
    return UOp.var(name, lo, hi)


def _lin(rng: random.Random, d: int, nterms: int, neg: bool = False) -> UOp:
    """``sum(x_i * c_i) + k`` with coefficients often related to the divisor ``d``."""
    terms = []
    for i in range(nterms):
        x = _leaf(rng, "xyz"[i], i, neg=neg and i == 0)
        r = rng.random()
        if r < 0.35:
            c = d * rng.randint(1, 4)                   # a multiple: splits out exactly
        elif r < 0.6:
            c = rng.choice(_divisors(d))                # a divisor: partial splits
        elif r < 0.75:
            c = 1
        else:
            c = rng.randint(2, 17)
        terms.append(x if c == 1 and rng.random() < 0.5 else x * c)
    k = rng.choice([0, 0, 1, 2, 3, 5, d - 1, d, d + 1, 2 * d + 3, 11])
    e = _shuffled_sum(rng, terms) if len(terms) > 1 else terms[0]
    return e + k if k or rng.random() < 0.2 else e


def _tu_lin_divmod(rng: random.Random) -> UOp:
    d = rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 24, 32])
    e = _lin(rng, d, rng.choice([1, 2, 2, 2, 3]))
    return e // d if rng.random() < 0.55 else e % d


def _tu_nested(rng: random.Random) -> UOp:
    x = UOp.var("x", 0, rng.choice([63, 99, 100, 255, 511, 1000]))
    b = rng.choice([2, 3, 4, 5, 6, 8, 12])
    a = b * rng.choice([1, 2, 3, 4, 5, 8]) if rng.random() < 0.7 else rng.choice([5, 7, 9, 10, 40])
    inner = x // a if rng.random() < 0.5 else x % a
    shape = rng.random()
    if shape < 0.2:
        inner = inner + rng.choice([1, 2, 3, 5])
    elif shape < 0.35:
        inner = inner + UOp.var("y", 0, rng.choice([1, 3, 7, 15]))
    return inner // b if rng.random() < 0.5 else inner % b


def _tu_refold(rng: random.Random) -> UOp:
    """Unflatten then re-flatten: ``((r//a)%b)*a + r%a`` and longer chains."""
    dims = [rng.choice([2, 3, 4, 5, 6, 8]) for _ in range(rng.choice([2, 2, 3]))]
    n = math.prod(dims) * rng.choice([1, 1, 2, 3])
    r = UOp.range(n, 0) if rng.random() < 0.7 else UOp.var("x", 0, n - 1)
    parts = unravel(dims, r % math.prod(dims)) if n != math.prod(dims) else unravel(dims, r)
    strides = [math.prod(dims[i + 1:]) for i in range(len(dims))]
    return _shuffled_sum(rng, [p * s if s != 1 else p for p, s in zip(parts, strides, strict=True)])


def _tu_compare(rng: random.Random) -> UOp:
    pick = rng.randrange(7)
    x = UOp.var("x", 0, rng.choice([5, 9, 10, 20, 99]))
    if pick == 0:
        d = rng.choice([2, 3, 4, 8])
        return (x // d).lt(rng.randint(0, x.vmax // d + 2))
    if pick == 1:
        d = rng.choice([2, 3, 4, 8])
        return (x % d).lt(rng.randint(d - 1, d + 1))
    if pick == 2:
        d = rng.choice([2, 4, 5, 8])
        c = d * rng.randint(1, 3) if rng.random() < 0.6 else rng.randint(2, 9)
        return (x * c % d).ne(0) if rng.random() < 0.5 else (x * c % d).eq(0)
    if pick == 3:
        d = rng.choice([2, 3, 8])
        return (x // d).eq(rng.randint(0, x.vmax // d + 1))
    if pick == 4:
        t = rng.choice([2, 3, 4, 8])
        e = UOp.range(rng.choice([3, 4, 8, 16]), 0) * t + UOp.range(rng.choice([t, t, t + 1]), 1)
        return e.lt(rng.randint(1, 3 * t))
    if pick == 5:
        xn = UOp.var("x", -rng.choice([3, 9]), rng.choice([5, 9]))
        return (xn * rng.choice([2, 4, 8]) + rng.randint(-5, 30)).lt(rng.choice([0, 0, 3]))
    y = UOp.var("y", 0, rng.choice([3, 5]))
    e = x + y
    return ~e.lt(rng.randint(0, 3)) if rng.random() < 0.5 else e.lt(rng.randint(5, 12))


def _tu_where(rng: random.Random) -> UOp:
    x = UOp.var("x", 0, 9)
    c1, c2 = rng.randint(1, 10), rng.randint(1, 10)
    pick = rng.randrange(4)
    if pick == 0:
        a, b, d, e = (rng.randint(0, 6) for _ in range(4))
        return x.lt(c1).where(_c(a), _c(b)) + x.lt(c1).where(_c(d), _c(e))
    if pick == 1:
        y = UOp.var("y", 0, 5)
        return x.lt(c1).where(_c(rng.randint(0, 3)), x.lt(c2).where(_c(1), y))
    if pick == 2:
        return x.lt(c1).where(x.lt(c2).where(_c(1), _c(2)), _c(3))
    n = rng.choice([8, 12, 16, 24])
    r = UOp.range(n, 0)
    k, d = rng.randint(1, 7), rng.choice([2, 3, 4, 6, 8])
    return r.lt(rng.randint(1, n)).where((r + k) // d, UOp.invalid())


def _tu_maxmin(rng: random.Random) -> UOp:
    x, y = UOp.var("x", 0, rng.choice([4, 10])), UOp.var("y", rng.choice([0, 9]), 12)
    pick = rng.randrange(5)
    if pick == 0:
        return x.maximum(_c(rng.randint(-5, 3)))
    if pick == 1:
        return -((-x).maximum(-UOp.var("y", 0, rng.choice([1, 3]))))
    if pick == 2:
        return (x * rng.choice([2, 3])).maximum(y + rng.choice([0, 3, 14]))
    if pick == 3:
        return (x + rng.randint(1, 3)).maximum(x)
    return (x * 2).maximum(x + rng.randint(0, 6))


def _tu_negative(rng: random.Random) -> UOp:
    x = UOp.var("x", -rng.choice([3, 5, 7, 10]), rng.choice([-1, 0, 9]))
    d = rng.choice([2, 3, 4, 5])
    pick = rng.randrange(6)
    if pick == 0:
        c = d * rng.choice([1, 2, 3])
        return (x * c + UOp.var("y", 0, rng.choice([1, 3, d - 1]))) // d
    if pick == 1:
        return x // d
    if pick == 2:
        return x * d // d
    if pick == 3:
        return x % d
    if pick == 4:
        return (-UOp.var("x", 0, rng.choice([9, 10, 20, 31]))) // rng.choice([2, 3, 5, 7])
    return (x * d + rng.randint(0, d - 1)) % d


def _tu_misc(rng: random.Random) -> UOp:
    x = UOp.var("x", 0, 9)
    pick = rng.randrange(5)
    if pick == 0:
        return x * rng.randint(2, 9) + x * -rng.randint(1, 9)
    if pick == 1:
        return (x + rng.randint(1, 4)) * rng.randint(2, 5)
    if pick == 2:
        y = UOp.var("y", rng.choice([1, 2]), 5)
        return (x * y + rng.randint(0, 1)) // y
    if pick == 3:
        y = UOp.var("y", 1, 5)
        return (x * y + UOp.var("z", 0, 0)) % y
    k = rng.choice([2, 4, 8, 16])
    return (x * k) & (k - 1) if rng.random() < 0.5 else (x * k) | rng.randint(1, k - 1)


_TU = [(_tu_lin_divmod, 30), (_tu_nested, 18), (_tu_refold, 6), (_tu_compare, 17),
       (_tu_where, 7), (_tu_maxmin, 6), (_tu_negative, 9), (_tu_misc, 7)]


def tinygrad_unit_like(rng: random.Random) -> UOp:
    """One tinygrad-symbolic-test-style expression."""
    fns, weights = zip(*_TU, strict=True)
    return rng.choices(fns, weights)[0](rng)


# ---------------------------------------------------------------------------
# synthetic-view
# ---------------------------------------------------------------------------

def _factor(rng: random.Random, n: int, maxdims: int = 4) -> list[int]:
    """A random factorization of ``n`` into 1..maxdims factors (size-1 axes rare)."""
    out: list[int] = []
    while n > 1 and len(out) < maxdims - 1:
        ds = [d for d in _divisors(n) if 1 < d < n]
        if not ds or rng.random() < 0.25:
            break
        d = rng.choice(ds)
        out.append(d)
        n //= d
    out.append(n)
    if rng.random() < 0.1:
        out.insert(rng.randrange(len(out) + 1), 1)
    rng.shuffle(out)
    return out


def random_movement(rng: random.Random, v: View) -> View:
    """One random movement op applied to ``v``."""
    op = rng.choices(["reshape", "permute", "pad", "shrink", "flip", "stride", "expand", "pool"],
                     [30, 18, 18, 14, 8, 6, 3, 3])[0]
    sh = v.shape
    if op == "reshape":
        return v.reshape(_factor(rng, v.numel))
    if op == "permute":
        order = list(range(v.ndim))
        rng.shuffle(order)
        return v.permute(order)
    if op == "pad":
        return v.pad([(rng.choice([0, 0, 1, 2]), rng.choice([0, 0, 1, 2, 3])) for _ in sh])
    if op == "shrink":
        out = []
        for s in sh:
            b = rng.randint(0, max(0, s // 3))
            e = rng.randint(max(b + 1, s - s // 3), s)
            out.append((b, e))
        return v.shrink(out)
    if op == "flip":
        return v.flip([d for d in range(v.ndim) if rng.random() < 0.5] or [0])
    if op == "stride":
        return v.stride([rng.choice([1, 1, 2, -1, 3]) for _ in sh])
    if op == "expand":
        w = v.reshape([*sh, 1])
        return w.expand([*sh, rng.choice([2, 3])])
    k = min(rng.choice([2, 3]), sh[-1])
    return v.pool([k], stride=rng.choice([1, k]))


def synthetic_view(rng: random.Random) -> UOp:
    """Address (or mask) of a random movement chain over a contiguous buffer."""
    for _ in range(50):
        ndim = rng.choice([1, 2, 2, 2, 3, 3, 4])
        shape = [rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 12, 16]) for _ in range(ndim)]
        if math.prod(shape) > 4096:
            continue
        v = View.contiguous(shape)
        try:
            for _ in range(rng.choice([1, 1, 2, 2, 2, 3, 3])):
                v = random_movement(rng, v)
        except BuildError:
            continue
        if v.numel == 0 or v.numel > 20_000 or len(v.layers) == 1 and rng.random() < 0.6:
            continue  # mostly keep chains that stack layers (unflatten/re-flatten)
        how = rng.random()
        if how < 0.55 or v.ndim == 1:
            idxs = [UOp.range(s, i) for i, s in enumerate(v.shape)]
        else:
            flat = UOp.range(v.numel, 0) if how < 0.8 else UOp.var("gidx", 0, v.numel - 1)
            idxs = unravel(v.shape, flat)
        e, valid = v.index(idxs)
        if valid is not None and rng.random() < 0.08:
            return valid
        return e if valid is None else valid.where(e, UOp.invalid())
    raise RuntimeError("could not build a synthetic view")  # pragma: no cover


# ---------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------

class _Loops:
    """Allocates RANGE ids and splits loops into tiles/upcasts (``ro*T + ri``)."""

    def __init__(self, rng: random.Random, split_p: float = 0.35) -> None:
        self.rng, self.next, self.split_p = rng, 0, split_p

    def rng_(self, n: int) -> UOp:
        r = UOp.range(n, self.next)
        self.next += 1
        return r

    def axis(self, n: int) -> UOp:
        """The index of a loop of ``n`` iterations, maybe split into tile*T + inner."""
        if n == 1:
            return self.rng_(1) if self.rng.random() < 0.5 else _c(0)
        ts = [t for t in _divisors(n) if 1 < t < n]
        if ts and self.rng.random() < self.split_p:
            t = self.rng.choice(ts)
            return self.rng_(n // t) * t + self.rng_(t)
        if self.rng.random() < 0.08:  # upcast of a whole axis: size-1 outer range
            return self.rng_(1) * n + self.rng_(n)
        return self.rng_(n)


def _addr(rng: random.Random, idx: list[UOp], shape: list[int], offset: int = 0) -> UOp:
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    terms = [i * s if s != 1 else i for i, s in zip(idx, strides, strict=True)
             if not (i.op.name == "CONST" and i.arg == 0) and shape[strides.index(s)] != 1]
    if offset:
        terms.append(_c(offset))
    return _shuffled_sum(rng, terms) if terms else _c(offset)


def _k_matmul(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    m, k, n = (rng.choice([1, 3, 4, 8, 12, 16, 32, 33]) for _ in range(3))
    b = rng.choice([1, 1, 2, 3, 4])
    rb, rm, rn, rk = loops.axis(b), loops.axis(m), loops.axis(n), loops.axis(k)
    which = rng.randrange(4)
    if which == 0:
        return "matmul" if b == 1 else "bmm", _addr(rng, [rb, rm, rk], [b, m, k])
    if which == 1:
        return "matmul" if b == 1 else "bmm", _addr(rng, [rb, rk, rn], [b, k, n])
    if which == 2:
        return "matmul_T", _addr(rng, [rb, rn, rk], [b, n, k])
    return "matmul" if b == 1 else "bmm", _addr(rng, [rb, rm, rn], [b, m, n])


def _window(loops: _Loops, rng: random.Random, size: int, k: int, s: int, d: int, p: int,
            ) -> tuple[UOp, int, int]:
    """Input coordinate (padded space) of an output/kernel loop pair; (expr, out size, in size)."""
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    o, kk = loops.axis(out), loops.axis(k)
    oe = o * s if s != 1 else o
    ke = kk * d if d != 1 else kk
    return (oe + ke if rng.random() < 0.5 else ke + oe), out, size


def _k_conv(rng: random.Random, loops: _Loops, pool: bool = False) -> tuple[str, UOp]:
    n, c = rng.choice([1, 2]), rng.choice([1, 2, 3, 4, 8])
    h, w = rng.choice([4, 5, 6, 8, 9, 10]), rng.choice([4, 5, 6, 8, 10])
    k = rng.choice([1, 2, 3] if pool else [1, 3, 3, 5])
    k = min(k, h, w)
    s = rng.choice([1, 1, 2]) if not pool else rng.choice([k, 1, 2])
    d = rng.choice([1, 1, 1, 2]) if (h > 2 * k and w > 2 * k) else 1
    p = rng.choice([0, 0, 1, 1, 2]) if k > 1 else 0
    rn, rc = loops.axis(n), loops.axis(c)
    ih, _, _ = _window(loops, rng, h, k, s, d, p)
    iw, _, _ = _window(loops, rng, w, k, s, d, p)
    addr = _addr(rng, [rn, rc], [n, c]) * (h * w) if n * c > 1 else None
    body = ih * w + iw
    if p:
        body = body + -(p * w + p)
    e = body if addr is None else (addr + body if rng.random() < 0.5 else body + addr)
    name = ("maxpool2d" if rng.random() < 0.6 else "avgpool2d") if pool else "conv2d"
    if s > 1:
        name += "_stride"
    if d > 1:
        name += "_dil"
    if not p:
        return name, e
    conds = []
    for ix, sz in ((ih, h), (iw, w)):
        lo, hi = ~ix.lt(p), ix.lt(sz + p)
        if ix.vmin < p:
            conds.append(lo)
        if ix.vmax >= sz + p:
            conds.append(hi)
    if not conds:
        return name, e
    valid = conds[0]
    for cnd in conds[1:]:
        valid = valid & cnd
    return name + "_pad", valid.where(e, UOp.invalid())


def _k_pool(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    if rng.random() < 0.5:
        return _k_conv(rng, loops, pool=True)
    shape = [rng.choice([2, 3, 4, 6, 8]) for _ in range(rng.choice([2, 3]))]
    kern = [rng.choice([2, 3])]
    kern = [min(kern[0], shape[-1])]
    v = View.contiguous(shape).pool(kern, stride=rng.choice([1, kern[0]]))
    e, valid = v.index([loops.axis(s) for s in v.shape])
    return "pool", e if valid is None else valid.where(e, UOp.invalid())


def _k_reduce(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    shape = [rng.choice([2, 3, 5, 10, 12, 16, 17, 23, 32]) for _ in range(rng.choice([2, 2, 3]))]
    ax = rng.randrange(len(shape))
    idx = [loops.axis(s) for s in shape]
    op = rng.choice(["sum_axis", "max_axis", "mean", "softmax", "layernorm"])
    if rng.random() < 0.3:  # keep-dim output index: the reduced axis is 0
        idx[ax] = _c(0)
        shape2 = list(shape)
        shape2[ax] = 1
        return op + "_keep", _addr(rng, idx, shape2)
    return f"{op}{ax}" if op.endswith("axis") else op, _addr(rng, idx, shape)


def _k_cumsum(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    n = rng.choice([4, 6, 8, 16, 32])
    ro, rk = loops.rng_(n), loops.rng_(n)
    # tinygrad's cumsum: pad by n-1 on the left, pool window n: in[(o + k) - (n-1)]
    ix = ro + rk
    e = ix + -(n - 1)
    return "cumsum", (~ix.lt(n - 1)).where(e, UOp.invalid())


def _k_pad_reflect(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    n, p = rng.choice([5, 6, 7, 8]), rng.choice([1, 2])
    r = loops.rng_(n + 2 * p)
    h = loops.rng_(rng.choice([2, 3, 4]))
    inner = (~r.lt(n + p - 1)).where(r * -1 + (2 * n + p - 2), UOp.invalid())
    return "pad_reflect", h * n + inner if rng.random() < 0.5 else inner + h * n


def _reshape_case(rng: random.Random, loops: _Loops) -> tuple[str, UOp]:
    """tinygrad's view-merging reshape: one new-axis index of a flattened old index."""
    old = [rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12, 16]) for _ in range(rng.choice([1, 2, 3, 4]))]
    numel = math.prod(old)
    if rng.random() < 0.25 and numel > 1:  # old indices from an unflattened flat range
        r = loops.rng_(numel * rng.choice([1, 1, 2]))
        idx = unravel(old, r % numel if r.src[0].arg != numel else r)
        if rng.random() < 0.3:
            idx = [i + rng.choice([1, 2]) for i in idx]
            old = [s + 4 for s in old]
            numel = math.prod(old)
    else:
        idx = []
        for s in old:
            if s == 1:
                idx.append(_c(0))
            elif rng.random() < 0.12:
                idx.append(_c(rng.randrange(s)))
            elif rng.random() < 0.1:  # a reflect/replicate pad index, Invalid outside
                p = rng.choice([1, 2])
                r = loops.rng_(s + p)
                idx.append((~r.lt(p)).where(r * -1 + (s + p - 1), UOp.invalid()))
            else:
                idx.append(loops.axis(s))
    # tinygrad prints the flattening as (add (add 0 (mul 1 i_last)) (mul s i_prev)) ...
    flat = _c(0)
    st = 1
    for i, s in zip(reversed(idx), reversed(old), strict=True):
        flat = flat + _c(st) * i
        st *= s
    new = _factor(rng, numel * rng.choice([1, 1, 1, 2]) if numel > 1 else 1, maxdims=4)
    if math.prod(new) != numel:
        new = _factor(rng, numel, maxdims=4)
    ax = rng.randrange(len(new))
    stride = math.prod(new[ax + 1:])
    e = flat
    if stride > 1:
        for f in _split_stride(rng, stride):
            e = e // f
    elif rng.random() < 0.3:
        e = e // 1
    e = e % new[ax] if ax > 0 or rng.random() < 0.5 else e % numel
    name = rng.choice(["reshape_permute", "expand_reshape", "conv2d", "pool", "mop_chain",
                       "matmul", "slice_reshape", "flip_reshape", "space_to_depth"])
    return name + "/reshape", e


def _split_stride(rng: random.Random, stride: int) -> list[int]:
    """``stride`` as a product of divisors (tinygrad divides axis by axis), sometimes with 1s."""
    out = [stride] if rng.random() < 0.6 else _factor(rng, stride, maxdims=3)
    if rng.random() < 0.2:
        out.insert(0, 1)
    return out


_KERNELS: list[tuple[Callable[[random.Random, _Loops], tuple[str, UOp]], int]] = [
    (_k_matmul, 14), (_k_conv, 16), (_k_pool, 12), (_k_reduce, 10), (_k_cumsum, 3),
    (_k_pad_reflect, 3), (_reshape_case, 42)]


def kernel_case(rng: random.Random) -> tuple[str, UOp]:
    """One kernel index expression: ``(source suffix, expr)``."""
    fns, weights = zip(*_KERNELS, strict=True)
    fn = rng.choices(fns, weights)[0]
    return fn(rng, _Loops(rng))


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def gen_case(kind: str, index: int, seed: int = 0) -> dict[str, str]:
    """Case ``index`` of ``kind`` (``tinygrad-unit-like``, ``synthetic-view`` or ``kernel``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    rng = random.Random(f"{seed}:{kind}:{index}")
    if kind == "tinygrad-unit-like":
        src, e = kind, tinygrad_unit_like(rng)
    elif kind == "synthetic-view":
        src, e = kind, synthetic_view(rng)
    else:
        name, e = kernel_case(rng)
        src = f"kernel:{name}"
    return {"id": f"{_PREFIX[kind]}{seed}_{index:04d}", "source": src, "expr": inline_sexpr(e)}


_BINDING = re.compile(r"%\d+")


def inline_sexpr(e: UOp) -> str:
    """``e`` in the ``.uop`` text format with no ``%n`` bindings (the corpus's shape)."""
    lines = to_sexpr(e).split("\n")
    bound: dict[str, str] = {}
    for line in lines[:-1]:
        name, body = line.split(" = ", 1)
        bound[name] = _BINDING.sub(lambda m: bound[m.group(0)], body)
    return _BINDING.sub(lambda m: bound[m.group(0)], lines[-1])


def generate(n: int = 150, seed: int = 0,
             kinds: tuple[str, ...] = KINDS) -> Iterator[dict[str, str]]:
    """``n`` cases of every kind in ``kinds``, kind by kind."""
    for kind in kinds:
        for i in range(n):
            yield gen_case(kind, i, seed)


def kind_of(source: str) -> str:
    """The generator kind of a ``source`` field (``kernel:*`` -> ``kernel``)."""
    return "kernel" if source.startswith("kernel:") else source


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=150, help="cases per kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kind", choices=KINDS, action="append", help="only these kinds")
    args = ap.parse_args(argv)
    for row in generate(args.n, args.seed, tuple(args.kind or KINDS)):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
