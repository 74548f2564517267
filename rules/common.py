"""Helpers shared by the rule families: constant evaluation, sum splitting, wrap checks.

Everything here follows the project's C semantics: ``idiv`` truncates toward
zero, ``mod`` takes the dividend's sign, fixed-width integers wrap
two's-complement, ``index`` is an unbounded integer, and a division (or shift)
whose result C leaves undefined is never evaluated into a value (the
evaluators return None instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from eqsat.ir.bounds import INDEX_BOUND_CAP
from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.semantics import EvalError, Undefined, alu
from eqsat.ir.uop import IRError, UOp, node_cache

__all__ = [
    "CONSTS", "is_const", "const_is", "is_zero", "is_one", "fits", "int_exact", "no_wrap_add",
    "eval_op", "eval_values", "make_const", "bool_like", "split_add", "sum_terms",
    "may_be_invalid", "may_be_undefined", "is_invalid", "invalid_like", "nonzero",
    "exact_product_fits", "split_and", "somewhere_below",
]

CONSTS = (Ops.CONST, Ops.VCONST)
# shifts of an index (unbounded) value by more than this are not folded (huge numbers)
_MAX_INDEX_SHIFT = 256


# ---------------------------------------------------------------------------
# constant predicates
def is_const(u: UOp) -> bool:
    """A CONST or VCONST node."""
    return u.op is Ops.CONST or u.op is Ops.VCONST


def const_is(u: UOp, v: Any) -> bool:
    """``u`` is a constant all of whose lanes equal ``v`` (bools only equal bools)."""
    def eq(a: Any) -> bool:
        if isinstance(v, bool) or isinstance(a, bool):
            return isinstance(a, bool) and isinstance(v, bool) and a is v
        return a == v
    if u.op is Ops.CONST:
        return eq(u.arg)
    if u.op is Ops.VCONST:
        return all(eq(a) for a in u.arg)
    return False


def is_zero(u: UOp) -> bool:
    """A numeric constant 0 (0, 0.0, -0.0; not False) in every lane."""
    return const_is(u, 0)


def is_one(u: UOp) -> bool:
    """A numeric constant 1 in every lane (not True)."""
    return const_is(u, 1)


def is_invalid(u: UOp) -> bool:
    """The Invalid sentinel: ``(invalid)``, its cast to another dtype (how the text
    format writes a non-index Invalid), or a VECTORIZE holding one."""
    if u.op is Ops.INVALID:
        return True
    if u.op is Ops.CAST:
        return u.src[0].op is Ops.INVALID
    return u.op is Ops.VECTORIZE and any(is_invalid(s) for s in u.src)


def invalid_like(dt: DType) -> UOp:
    """The Invalid of dtype ``dt``: ``(invalid)`` for index, else ``(cast dt (invalid))``
    (so a WHERE's branches keep one dtype and the graph prints and parses back)."""
    inv = UOp.invalid()
    return inv if dt == inv.dtype else inv.cast(dt)


def somewhere_below(u: UOp, cache: dict[int, bool],
                     stop: Callable[[UOp], bool | None], here: Callable[[UOp], bool]) -> bool:
    """Whether some node of ``u`` has a property, bottom-up and cached (``cache``: a
    :func:`~eqsat.ir.uop.node_cache`): ``stop(n)`` gives a node's answer without looking
    below it (None: look), ``here(n)`` whether the node itself has the property;
    otherwise a node has it when one of its sources does."""
    hit = cache.get(u.uid)
    if hit is not None:
        return hit
    stack: list[tuple[UOp, bool]] = [(u, False)]
    while stack:
        n, done = stack.pop()
        if n.uid in cache:
            continue
        known = stop(n)
        if known is not None:
            cache[n.uid] = known
            continue
        if not done:
            stack.append((n, True))
            for s in n.src:  # (a loop, not a generator: most nodes have two sources)
                if s.uid not in cache:
                    stack.append((s, False))
            continue
        v = here(n)
        if not v:  # (a loop, not any() over a generator: most nodes have two sources)
            v = False
            for s in n.src:
                if cache[s.uid]:
                    v = True
                    break
        cache[n.uid] = v
    return cache[u.uid]


_MAY_INVALID: dict[int, bool] = node_cache()
_INVALID, _LOAD = Ops.INVALID, Ops.LOAD  # (module globals: no EnumType lookup per node)


def _nowhere(n: UOp) -> bool:
    """No node has the property itself (only the leaves ``stop`` answers for have it)."""
    return False


def _invalid_leaf(n: UOp) -> bool | None:
    """An Invalid is Invalid, a LOAD's value never is, a leaf never is; else: look."""
    op = n.op
    if op is _INVALID or op is _LOAD or not n.src:
        return op is _INVALID
    return None


def may_be_invalid(u: UOp) -> bool:
    """``u`` can evaluate to Invalid: an Invalid sits below it outside any LOAD.

    Invalid propagates through every op (eqsat.ir.interp), so a rule that drops a
    subterm (``x*0 -> 0``) must not drop one that may be Invalid. A LOAD's
    value is never Invalid (a load through an Invalid index reads 0). Cached.
    """
    hit = _MAY_INVALID.get(u.uid)  # (the usual answer, without the walk's call)
    if hit is not None:
        return hit
    return somewhere_below(u, _MAY_INVALID, _invalid_leaf, _nowhere)


_MAY_UNDEF: dict[int, bool] = node_cache()


def _undefined_here(n: UOp) -> bool:
    """Whether the op of ``n`` itself may be undefined on its operands' bounds: a division
    or remainder by a value that may be 0, a shift by an amount that may be out of range,
    an integer power with a possibly negative exponent, a float-to-integer cast."""
    if n.op in GroupOp.IntDiv:
        d = n.src[1]
        return not (d.vmin > 0 or d.vmax < 0)
    if n.op in (Ops.SHL, Ops.SHR) and n.dtype.is_int:
        s = n.src[1]
        limit = n.dtype.scalar().bits if n.dtype.is_fixed_int else 4096
        return not (s.vmin >= 0 and s.vmax < limit)
    if n.op is Ops.POW and n.dtype.is_int:
        return not n.src[1].vmin >= 0
    if n.op is Ops.CAST and n.dtype.is_int:
        return n.src[0].dtype.is_float
    return False


def may_be_undefined(u: UOp) -> bool:
    """``u`` can be undefined (a division by zero, ...) somewhere below it: evaluating
    it where the input did not may make a defined input undefined. Cached."""
    return somewhere_below(u, _MAY_UNDEF, lambda n: None if n.src else False,
                            _undefined_here)


def nonzero(u: UOp) -> bool:
    """The bounds of integer ``u`` exclude 0 (a divisor that is never zero)."""
    return u.dtype.is_int and (u.vmin > 0 or u.vmax < 0)


# ---------------------------------------------------------------------------
# integer range checks
def fits(dt: DType, v: int) -> bool:
    """The exact integer ``v`` is representable in ``dt`` (index holds everything)."""
    s = dt.scalar()
    if s.is_index:
        return True
    if s.is_fixed_int:
        return s.min <= v <= s.max
    return False


def int_exact(u: UOp) -> bool:
    """``u`` is an integer node whose value is exact (did not wrap).

    Index arithmetic is exact. A fixed-width node is exact when its bounds are
    narrower than its dtype's full range (eqsat.ir.bounds widens to the full range
    whenever the exact interval may wrap).
    """
    dt = u.dtype
    if dt.is_index:
        return True
    if dt.is_fixed_int:
        s = dt.scalar()
        return not (u.vmin == s.min and u.vmax == s.max)
    return False


def no_wrap_add(x: UOp, c: int) -> bool:
    """``x + c`` cannot wrap for any value of integer ``x``."""
    if x.dtype.is_index:
        return True
    if not x.dtype.is_fixed_int or math.isinf(x.vmin) or math.isinf(x.vmax):
        return False
    return fits(x.dtype, int(x.vmin) + c) and fits(x.dtype, int(x.vmax) + c)


def exact_product_fits(dt: DType, a: UOp, b: UOp) -> bool:
    """Every product of a value of ``a`` and one of ``b`` is representable in ``dt``."""
    if dt.is_index:
        return True
    if not dt.is_fixed_int or any(math.isinf(v) for v in (a.vmin, a.vmax, b.vmin, b.vmax)):
        return False
    corners = [int(p) * int(q) for p in (a.vmin, a.vmax) for q in (b.vmin, b.vmax)]
    return fits(dt, min(corners)) and fits(dt, max(corners))


# ---------------------------------------------------------------------------
# constant evaluation (eqsat.ir.semantics); None = undefined or not folded
def _folds(op: Ops, dt: DType, args: tuple) -> bool:
    """Whether ``op`` of the constants ``args`` is folded at all: not an index shift or
    an integer power that builds a huge number, not a float ``max``/``min`` of a NaN
    (C's fmax/fmin and the hardware's maxss disagree there), not a float ``round``."""
    if dt.is_int:
        if op is Ops.POW:
            return args[1] <= _MAX_INDEX_SHIFT
        if op in (Ops.SHL, Ops.SHR) and dt.is_index:
            return args[1] <= _MAX_INDEX_SHIFT
    elif dt.is_float:
        if op in (Ops.MAX, Ops.MIN):
            return not any(isinstance(a, float) and math.isnan(a) for a in args)
        return op is not Ops.ROUND
    return True


def eval_op(op: Ops, dt: DType, *args: Any) -> Any:
    """The value of ``op`` on scalar constants ``args``, in the scalar of ``dt``.

    ``dt`` is the dtype of the operands (the result of comparisons is bool); the value
    is the interpreter's (:func:`eqsat.ir.semantics.alu`), fixed-width results wrapped
    (``INT_MIN // -1`` included). None when the value is undefined (division by zero,
    out-of-range shift, negative integer power), when the op has no meaning on ``dt``,
    or when it is not folded: see :func:`_folds`, a float ``pow`` of finite operands
    whose result is not finite (a domain or range error in C's ``pow``). Raises
    IRError for an index result past ``INDEX_BOUND_CAP`` in magnitude (where index
    bounds stop too: no index that large is lowered).
    """
    s = dt.scalar()
    if op in GroupOp.Comparison or op is Ops.WHERE:
        return alu(op, dtypes.bool if op is not Ops.WHERE else s, args)
    if not _folds(op, s, args):
        return None
    try:
        v = alu(op, s, args)
    except EvalError:
        return None
    if isinstance(v, Undefined):
        return None
    if s.is_index and isinstance(v, int) and abs(v) > INDEX_BOUND_CAP:
        # not folded, the rules that move constants outward would unshare the product's
        # operands, doubling the term at each level; folded, its digits would double
        raise IRError(f"index arithmetic out of range: {op.name.lower()} of constants "
                      f"gives a {abs(v).bit_length()}-bit value (index values are at most "
                      f"2**{INDEX_BOUND_CAP.bit_length() - 1} in magnitude)")
    if op is Ops.POW and s.is_float and not math.isfinite(v) and \
            all(math.isfinite(a) for a in args):
        return None
    return v


def eval_values(op: Ops, dt: DType, srcs: Sequence[UOp]) -> Any:
    """Evaluate ``op`` over constant nodes lane by lane; a tuple for vectors.

    ``dt`` is the operand dtype (for WHERE: the branch dtype). Returns None
    when any lane is undefined.
    """
    width = max((len(s.arg) if s.op is Ops.VCONST else 1) for s in srcs)
    vec = any(s.op is Ops.VCONST for s in srcs)
    lanes = []
    for i in range(width):
        vals = [s.arg[i] if s.op is Ops.VCONST else s.arg for s in srcs]
        v = eval_op(op, dt, *vals)
        if v is None:
            return None
        lanes.append(v)
    return tuple(lanes) if vec else lanes[0]


def make_const(dt: DType, value: Any) -> UOp | None:
    """A CONST (scalar or broadcast) or VCONST (tuple ``value``) of ``dt``.

    Fixed-width integers wrap; floats round to the dtype. None when the value
    cannot be a constant of ``dt``.
    """
    try:
        if isinstance(value, tuple):
            if dt.count != len(value):
                return None
            return UOp.vconst(dt.scalar(), value)
        return UOp.const(dt, value)
    except (IRError, OverflowError, ValueError):
        return None


def bool_like(u: UOp, value: bool) -> UOp:
    """A bool constant with as many lanes as ``u``."""
    return UOp.const(dtypes.bool.vec(u.dtype.count), value)


# ---------------------------------------------------------------------------
# conjunctions and sums
def split_and(u: UOp) -> list[UOp]:
    """The clauses of a bool conjunction ``a & b & ...``, left to right (``u`` itself
    when it is no AND)."""
    out, stack = [], [u]
    while stack:
        x = stack.pop()
        if x.op is Ops.AND and x.dtype == dtypes.bool:
            stack.extend(reversed(x.src))
        else:
            out.append(x)
    return out


def split_add(u: UOp) -> Iterator[UOp]:
    """The terms of a nested ADD chain, left to right."""
    stack = [u]
    while stack:
        x = stack.pop()
        if x.op is Ops.ADD:
            stack.append(x.src[1])
            stack.append(x.src[0])
        else:
            yield x


def sum_terms(terms: Sequence[UOp], dt: DType) -> UOp:
    """``t0 + t1 + ...`` (left-nested), or 0 of ``dt`` for no terms."""
    if not terms:
        return UOp.const(dt, 0)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out
