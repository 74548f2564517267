"""The e-graph's interval analysis (egglog rules) against the interval functions of
:mod:`eqsat.ir.semantics`, one property test per op.

Each test builds one node over leaves with random intervals, reads the analysis's
interval of the node and of its operands (:meth:`Session.analyze`), and applies the
op's Python interval function to the operands' intervals. Where the analysis has a
rule for the case (``covered``), its interval *equals* the Python one whenever that
fits the dtype (i64 for ``index``: egglog's arithmetic does not leave i64) and is
unknown otherwise. Where it has none (a divisor interval that holds 0, bit operations
of negative operands, a shift by a varying amount, ...), the analysis is looser: its
interval *contains* the Python one, which is then the tighter of the two; the analysis
leaves those cases out because every rule is joined in every round of every step.
Both are checked sound on sample points: every value the op takes there
(:func:`eqsat.ir.semantics.alu`) lies in both intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.engines.egraph import Session
from eqsat.ir import semantics as sem
from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

Iv = sem.Interval
INDEX, I32, BOOL = dtypes.index, dtypes.i32, dtypes.bool
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
UNKNOWN = (-math.inf, math.inf)


@pytest.fixture(scope="module")
def session() -> Session:
    return Session([])  # no rewrites: the analyses only


ends = st.one_of(st.integers(-40, 40), st.integers(-(1 << 20), 1 << 20))
intervals = st.tuples(ends, ends).map(lambda t: (min(t), max(t)))
bools = st.sampled_from([(0, 0), (1, 1), (0, 1)])
amounts = st.one_of(st.integers(0, 70).map(lambda s: (s, s)),
                    st.tuples(st.integers(0, 70), st.integers(0, 70)).map(lambda t: (min(t),
                                                                                   max(t))))


def _leaf(name: str, iv: Iv, dt: DType) -> UOp:
    """A leaf of ``dt`` whose interval is ``iv`` (a bool: a comparison of a var)."""
    if dt.is_bool:
        return UOp.var(name, 1 - iv[1], 1 - iv[0]).lt(1)  # [0, 0], [1, 1] or [0, 1]
    x = UOp.var(name, iv[0], iv[1])
    return x if dt.is_index else x.cast(dt)


@dataclass(frozen=True)
class Op:
    """One op of the analysis: how to build it, its Python interval, when a rule of the
    analysis covers the case."""

    op: Ops
    dt: DType                        # the operands' dtype
    py: Callable[..., Iv]      # operands' intervals -> the op's interval
    covered: Callable[..., bool] = lambda *ivs: True
    build: Callable[..., UOp] | None = None


def _fits(dt: DType, iv: Iv) -> bool:
    lo, hi = (I64_MIN, I64_MAX) if dt.is_index else (dt.min, dt.max)
    return lo <= iv[0] and iv[1] <= hi


def _nonneg(*ivs: Iv) -> bool:
    return all(iv[0] >= 0 for iv in ivs)


def _check(session: Session, spec: Op, ivs: list[Iv], seed: int) -> None:
    names = "xyz"
    leaves = [_leaf(names[i], iv, spec.dt if spec.op is not Ops.WHERE or i else BOOL)
              for i, iv in enumerate(ivs)]
    node = spec.build(*leaves) if spec.build else leaves[0].alu(spec.op, *leaves[1:])
    got = session.analyze([node])
    kids = [got[x][:2] for x in leaves]
    assert kids == [tuple(iv) for iv in ivs]  # the leaves' intervals are the IR's
    eg = got[node][:2]
    py = tuple(int(v) for v in spec.py(*kids))
    rdt = node.dtype
    if spec.covered(*kids):
        want = py if _fits(rdt, py) else UNKNOWN
        assert eg == want, f"{node}: e-graph {eg}, semantics {py}"
    else:  # no rule for this case: the analysis is looser, never tighter
        assert eg[0] <= py[0] and py[1] <= eg[1], f"{node}: e-graph {eg} within {py}"
    rng = random.Random(seed)
    for _ in range(40):
        vals = [rng.choice((iv[0], iv[1], rng.randint(iv[0], iv[1]))) for iv in kids]
        exact, value = _values(spec, rdt, vals)
        if isinstance(value, sem.Undefined):
            continue
        assert py[0] <= exact <= py[1], (node, vals, exact, py)
        assert eg[0] <= value <= eg[1], (node, vals, value, eg)


def _values(spec: Op, rdt: DType, vals: list[int]) -> tuple[object, object]:
    """The op's value at ``vals``: exact (before a fixed-width dtype wraps it), and as
    the dtype holds it."""
    if spec.op is Ops.CAST:
        return (vals[0] != 0 if rdt.is_bool else vals[0]), sem.cast(vals[0], spec.dt, rdt)
    exact = sem.alu(spec.op, INDEX if rdt.is_fixed_int else rdt, vals)
    return exact, sem.alu(spec.op, rdt, vals)


def _binary(name: str, op: Ops, py: Callable[..., Iv], **kw) -> tuple[str, Op]:
    return name, Op(op, INDEX, py, **kw)


_CMP = {"lt": Ops.LT, "le": Ops.LE, "gt": Ops.GT, "ge": Ops.GE, "eq": Ops.EQ, "ne": Ops.NE}

BINARY: dict[str, Op] = dict([
    _binary("add", Ops.ADD, sem.iv_add),
    _binary("sub", Ops.SUB, sem.iv_sub),
    _binary("mul", Ops.MUL, sem.iv_mul),
    # iv_idiv_nonzero needs a divisor interval without 0; iv_idiv_any alone is looser
    _binary("idiv", Ops.IDIV, sem.iv_idiv, covered=lambda a, b: b[0] > 0 or b[1] < 0),
    _binary("mod", Ops.MOD, sem.iv_mod),
    # iv_floordiv_nonzero likewise; iv_floormod_* need a divisor of one sign
    _binary("floordiv", Ops.FLOORDIV, sem.iv_floordiv,
            covered=lambda a, b: b[0] > 0 or b[1] < 0),
    _binary("floormod", Ops.FLOORMOD, sem.iv_floormod,
            covered=lambda a, b: b[0] > 0 or b[1] < 0),
    _binary("max", Ops.MAX, sem.iv_max),
    _binary("min", Ops.MIN, sem.iv_min),
    # iv_and_nonneg/iv_and_nonneg1 read a non-negative first operand
    _binary("and", Ops.AND, lambda a, b: sem.iv_bits(Ops.AND, a, b),
            covered=lambda a, b: _nonneg(a)),
    # iv_or_nonneg/iv_xor_nonneg: both operands non-negative, one of them not only 0
    _binary("or", Ops.OR, lambda a, b: sem.iv_bits(Ops.OR, a, b),
            covered=lambda a, b: _nonneg(a, b) and max(a[1], b[1]) > 0),
    _binary("xor", Ops.XOR, lambda a, b: sem.iv_bits(Ops.XOR, a, b),
            covered=lambda a, b: _nonneg(a, b) and max(a[1], b[1]) > 0),
    *[(n, Op(op, INDEX, lambda a, b, op=op: sem.iv_cmp(op, a, b))) for n, op in _CMP.items()],
    ("and_bool", Op(Ops.AND, BOOL, sem.iv_min)),
    ("or_bool", Op(Ops.OR, BOOL, sem.iv_max)),
    # sem.iv_xor_bool: always [0, 1]; two constant operands give a constant
    ("xor_bool", Op(Ops.XOR, BOOL, sem.iv_xor_bool,
                    covered=lambda a, b: not (a[0] == a[1] and b[0] == b[1]))),
    ("add_i32", Op(Ops.ADD, I32, sem.iv_add)),
    ("mul_i32", Op(Ops.MUL, I32, sem.iv_mul)),
])


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 1 << 30))
def test_binary_op(session: Session, name: str, data: st.DataObject, seed: int) -> None:
    spec = BINARY[name]
    a = data.draw(bools if spec.dt.is_bool else intervals)
    b = data.draw(bools if spec.dt.is_bool else intervals)
    if spec.op in (Ops.MOD, Ops.FLOORMOD) and b == (0, 0):
        b = (1, 1)  # always a division by zero: no value, nothing to bound
    _check(session, spec, [a, b], seed)


UNARY: dict[str, Op] = {
    "neg": Op(Ops.NEG, INDEX, sem.iv_neg),
    "not": Op(Ops.NOT, INDEX, sem.iv_not),
    "not_bool": Op(Ops.NOT, BOOL, sem.iv_not_bool),
    "neg_i32": Op(Ops.NEG, I32, sem.iv_neg),
    # iv_cast_int: the operand's interval when it fits the target
    "cast_i8": Op(Ops.CAST, INDEX, lambda a: a, build=lambda x: x.cast(dtypes.i8)),
    "cast_bool": Op(Ops.CAST, INDEX, sem.iv_cast_bool, build=lambda x: x.cast(BOOL)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), seed=st.integers(0, 1 << 30))
def test_unary_op(session: Session, name: str, data: st.DataObject, seed: int) -> None:
    spec = UNARY[name]
    _check(session, spec, [data.draw(bools if spec.dt.is_bool else intervals)], seed)


@pytest.mark.parametrize("op", [Ops.SHL, Ops.SHR])
@settings(max_examples=25, deadline=None)
@given(a=intervals, s=amounts, seed=st.integers(0, 1 << 30))
def test_shift(session: Session, op: Ops, a: Iv, s: Iv, seed: int) -> None:
    # iv_shl_const/iv_shr_const: a constant amount below 63; other amounts get no rule
    spec = Op(op, INDEX, lambda a, s: sem.iv_shift(op, a, s),
              covered=lambda a, s: s[0] == s[1] < 63)
    _check(session, spec, [a, s], seed)


@settings(max_examples=25, deadline=None)
@given(a=intervals, b=intervals, c=intervals, seed=st.integers(0, 1 << 30))
def test_mulacc(session: Session, a: Iv, b: Iv, c: Iv, seed: int) -> None:
    spec = Op(Ops.MULACC, INDEX, lambda a, b, c: sem.iv_add(sem.iv_mul(a, b), c))
    _check(session, spec, [a, b, c], seed)


@settings(max_examples=25, deadline=None)
@given(c=bools, t=intervals, f=intervals, seed=st.integers(0, 1 << 30))
def test_where(session: Session, c: Iv, t: Iv, f: Iv, seed: int) -> None:
    _check(session, Op(Ops.WHERE, INDEX, sem.iv_where), [c, t, f], seed)
