"""Cost models: what a UOp node (or an e-node) costs, and what a whole graph costs.

Two models ship with the package:

* :class:`ReferenceCost` -- the corpus metric (``data/corpus/README.md``):
  25 per ``idiv``/``mod``, 4 per ``mul``, 1 per any other operator node, 0 for
  leaves, summed over the DAG of unique nodes (a shared subterm is paid once).
* :class:`CpuCost` (the default) -- an approximate x86-64 cycle count (see its
  docstring for the table and the choices behind it).

A cost model prices one node from its op, dtype, arg and the constant values of
its children (``child_consts``), so an extractor can price e-nodes whose
children are e-classes, not UOps. ``graph_cost(uop)`` sums ``node_cost`` over
the unique nodes of a UOp DAG.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from eqsat.ir.dtype import DType
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp

__all__ = [
    "CostModel",
    "ReferenceCost",
    "CpuCost",
    "get_cost_model",
    "reference_cost",
    "divmod_count",
    "sums_op_prices",
    "uop_child_consts",
    "COST_MODELS",
    "priced_nodes",
    "cost_by_op",
    "REFERENCE_WEIGHT",
    "reference_weight",
]

ChildConsts = tuple[int | float | None, ...]

# leaves of the reference metric: var, range, special, const, vconst, invalid, buffers
LEAVES = GroupOp.Leaf | {Ops.RANGE, Ops.SPECIAL}


@runtime_checkable
class CostModel(Protocol):
    """What the optimizer and the extractors need from a cost model.

    ``node_cost(op, dtype, arg, child_consts)``: the cost of one node;
    ``child_consts[i]`` is the constant value of child ``i`` when that child is
    known to be a constant (a ``CONST`` node, or an e-class holding one), else
    None. Must be finite and >= 0.

    ``graph_cost(uop)``: the cost of a UOp graph, every unique node counted once.

    A model may set the class attribute ``uses_bounds = True`` and accept a
    keyword ``child_mins`` (the known lower bound of each child, or None);
    callers pass it only to models that declare it. A model whose ``node_cost``
    depends on the op alone may set ``op_only = True``: the extractors then ask it
    once per op.
    """

    def node_cost(self, op: Ops, dtype: DType, arg: Any, child_consts: ChildConsts) -> float: ...

    def graph_cost(self, uop: UOp) -> float: ...


def uop_child_consts(u: UOp) -> ChildConsts:
    """``child_consts`` of a UOp: each child's ``CONST`` value, else None."""
    return tuple(s.arg if s.op is Ops.CONST else None for s in u.src)


def _nodes(uop: UOp) -> list[UOp]:
    if not isinstance(uop, UOp):
        raise TypeError(f"expected a UOp, got {type(uop).__name__}: {uop!r}")
    return uop.toposort()


class _GraphCostMixin:
    """``graph_cost`` as the DAG-unique sum of ``node_cost``."""

    uses_bounds: ClassVar[bool] = False

    def node_cost(self, op: Ops, dtype: DType, arg: Any, child_consts: ChildConsts,
                  child_mins: Sequence[int | float | None] | None = None) -> float:
        raise NotImplementedError

    def graph_cost(self, uop: UOp) -> float:
        """Sum of ``node_cost`` over the unique nodes of ``uop``'s DAG."""
        total = 0.0
        for _u, c in priced_nodes(self, uop):
            total += c
        return total


def priced_nodes(model: CostModel, uop: UOp) -> Iterator[tuple[UOp, float]]:
    """``(node, model.node_cost of it)`` for every unique node of ``uop``'s DAG,
    operands first (a model with ``uses_bounds`` gets the operands' ``vmin``)."""
    if getattr(model, "uses_bounds", False):
        for u in _nodes(uop):
            yield u, model.node_cost(u.op, u.dtype, u.arg, uop_child_consts(u),
                                     child_mins=tuple(s.vmin for s in u.src))
    else:
        for u in _nodes(uop):
            yield u, model.node_cost(u.op, u.dtype, u.arg, uop_child_consts(u))


def cost_by_op(uop: UOp, model: CostModel | str | None = None) -> dict[str, tuple[int, float]]:
    """What ``uop`` costs under ``model``, op by op: op name (``IDIV``) -> (unique nodes,
    their summed cost), dearest first; the costs add up to ``model.graph_cost(uop)``
    for a model whose graph cost is the sum of its node costs (both shipped ones)."""
    m = get_cost_model(model)
    out: dict[str, list] = {}
    for u, c in priced_nodes(m, uop):
        e = out.setdefault(u.op.name, [0, 0.0])
        e[0] += 1
        e[1] += c
    return {k: (n, c) for k, (n, c) in sorted(out.items(), key=lambda kv: (-kv[1][1], kv[0]))}


@dataclass(frozen=True)
class ReferenceCost(_GraphCostMixin):
    """The corpus reference metric: idiv/mod 25, mul 4, other operators 1, leaves 0.

    Leaves are CONST, VCONST, DEFINE_VAR, RANGE, SPECIAL, DEFINE_GLOBAL/LOCAL/REG,
    INVALID and NOOP (a RANGE's end expression is still counted: it is a child).
    Two ops outside the corpus are priced as what they are made of: MULHI is a
    multiply (4) and MULACC a multiply plus an add (5). Everything else that is
    not a leaf -- add, sub, max, neg, comparisons, logic, shifts, where, cast,
    memory and structure ops -- costs 1.
    """

    uses_bounds: ClassVar[bool] = False
    op_only: ClassVar[bool] = True

    def node_cost(self, op: Ops, dtype: DType, arg: Any, child_consts: ChildConsts,
                  child_mins: Sequence[int | float | None] | None = None) -> float:
        c = _REF_FLOAT.get(id(op))
        return float(reference_weight(op)) if c is None else c

    def graph_cost(self, uop: UOp) -> float:
        """:func:`reference_cost` as a float: the sum of ``node_cost`` over the unique
        nodes, without a call per node."""
        return float(reference_cost(uop))

    def __repr__(self) -> str:
        return "ReferenceCost()"


#: the reference metric's weight of every op that does not cost 1: the one table the
#: corpus metric, the extractor and the e-graph's pricing read (``reference_weight``)
REFERENCE_WEIGHT: dict[Ops, int] = {
    **{op: 0 for op in LEAVES},
    Ops.IDIV: 25, Ops.MOD: 25, Ops.FLOORDIV: 25, Ops.FLOORMOD: 25, Ops.MUL: 4, Ops.MULHI: 4,
    Ops.MULACC: 5,
}


def sums_op_prices(model: Any) -> bool:
    """Whether ``model.graph_cost(u)`` is the sum of ``model.node_cost`` over the unique
    nodes of ``u``, each priced by its op alone (``op_only``): :class:`ReferenceCost`
    itself, or an ``op_only`` model with :class:`_GraphCostMixin`'s ``graph_cost``. A
    graph's cost is then the sum of its distinct nodes' prices (in any order, where
    they are integers)."""
    t = type(model)
    return t is ReferenceCost or (bool(getattr(model, "op_only", False))
                                  and getattr(t, "graph_cost", None) is _GraphCostMixin.graph_cost)


def reference_weight(op: Ops) -> int:
    """The reference metric's price of one ``op`` node (:data:`REFERENCE_WEIGHT`, else 1)."""
    return REFERENCE_WEIGHT.get(op, 1)


# the reference cost of every op, keyed by id(): an Ops member's hash runs Python code
# (Enum.__hash__), an id is a C call; the members live as long as the module
_REF_INT: dict[int, int] = {id(op): reference_weight(op) for op in Ops}
_REF_FLOAT: dict[int, float] = {k: float(v) for k, v in _REF_INT.items()}


def _ref_cost(op: Ops) -> int:
    c = _REF_INT.get(id(op))
    return reference_weight(op) if c is None else c


def reference_cost(uop: UOp) -> int:
    """The corpus reference cost of ``uop`` (DAG of unique nodes; see :class:`ReferenceCost`)."""
    nodes = _nodes(uop)
    weight = _REF_INT
    try:  # (every Ops member is in the table: no call per node)
        return sum([weight[id(u.op)] for u in nodes])
    except KeyError:
        return sum(_ref_cost(u.op) for u in nodes)


def divmod_count(uop: UOp) -> int:
    """How many unique integer divisions (``idiv``/``mod``/``floordiv``/``floormod``)
    the DAG of ``uop`` has."""
    return sum(1 for u in _nodes(uop) if u.op in GroupOp.IntDiv)


def _pow2(v: Any) -> bool:
    """True when ``v`` is an int (not bool) whose magnitude is a power of two."""
    if isinstance(v, bool) or not isinstance(v, int) or v == 0:
        return False
    a = abs(v)
    return a & (a - 1) == 0


def _int_const(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


# CpuCost: ops priced by a flat table (cycles); see CpuCost's docstring.
_CPU_TABLE: dict[Ops, float] = {
    Ops.ADD: 1, Ops.SUB: 1, Ops.NEG: 1, Ops.MAX: 1, Ops.MIN: 1,
    Ops.AND: 1, Ops.OR: 1, Ops.XOR: 1, Ops.NOT: 1, Ops.SHL: 1, Ops.SHR: 1,
    Ops.LT: 1, Ops.LE: 1, Ops.GT: 1, Ops.GE: 1, Ops.EQ: 1, Ops.NE: 1,
    Ops.WHERE: 1, Ops.CAST: 1, Ops.BITCAST: 1,
    Ops.MULHI: 4, Ops.MULACC: 4,
    Ops.FDIV: 14, Ops.RECIP: 14, Ops.SQRT: 15, Ops.EXP2: 20, Ops.LOG2: 20,
    Ops.SIN: 40, Ops.POW: 60,
    Ops.TRUNC: 2, Ops.FLOOR: 2, Ops.CEIL: 2, Ops.ROUND: 2,
    Ops.GEP: 1, Ops.CAT: 1, Ops.PTRCAT: 0, Ops.UNROLL: 0, Ops.WMMA: 8,
    Ops.END: 1, Ops.IF: 1, Ops.ENDIF: 0, Ops.SINK: 0, Ops.AFTER: 0, Ops.BIND: 0,
}
_REDUCE_COMBINE: dict[Any, float] = {Ops.ADD: 1, Ops.MUL: 3, Ops.MAX: 1, Ops.MIN: 1}


@dataclass(frozen=True)
class CpuCost(_GraphCostMixin):
    """Approximate cycles on a modern x86-64 core (docs/rules.md: seed 003, seed 002 stage 18).

    ============================================  ==========================
    node                                          cost
    ============================================  ==========================
    leaves (const, var, range, special, buffer)   0
    add sub neg max min and or xor not shl shr    ``alu`` (1)
    comparisons, where, cast, bitcast, gep, cat   1
    mul                                           ``mul`` (3); by a constant
                                                  power of two ``alu`` (a shl)
    idiv / mod by a non-power-of-two constant     ``div_const`` (25)
    idiv / mod by a variable (or by 0)            ``div_var`` (40)
    idiv / mod by a power-of-two constant         ``div_pow2`` (1): a shr / and
      ... numerator may be negative (signed)      ``div_pow2_signed`` (3)
    idiv / mod by +-1                             ``alu`` (it is x, -x or 0)
    floordiv / floormod                           as idiv / mod; by a positive
                                                  power of two ``div_pow2``
                                                  whatever the sign (a shift
                                                  right, a mask)
    mulhi / mulacc                                4
    fdiv, recip / sqrt / exp2, log2 / sin / pow   14 / 15 / 20 / 40 / 60
    trunc floor ceil round                        2
    index (address)                               1, +1 with a gate
    load                                          ``load`` (4), +1 with an alt
    store                                         ``store`` (1)
    end, if                                       1 (increment/compare/branch)
    reduce                                        its combining op (add 1, mul 3)
    sink, after, endif, bind                      0
    vectorize                                     1 per lane
    ============================================  ==========================

    Choices: a division by a power of two is what stage 18 lowers to a shift
    (``x // 8 -> x >> 3``) or a mask (``x % 8 -> x & 7``); that lowering is exact
    only for a non-negative (or unsigned) numerator. When the numerator may be
    negative, C's truncating division needs a sign fix-up (add ``c-1`` under the
    sign, then shift; mod needs a further subtract), so it is priced
    ``div_pow2_signed``. The numerator is known non-negative when the dtype is
    unsigned or when ``child_mins[0] >= 0`` (UOp ``vmin``; e-classes pass their
    lower bound when known); unknown means signed. A negative power-of-two
    divisor of ``idiv`` adds a negation. Integer division has no SIMD form, so
    a vector idiv/mod by a non-power-of-two is priced once per lane.
    Constant non-power-of-two divisors are priced as a hardware divide (20-40
    cycles, as in docs/rules.md, seed 003) even though a C compiler may use a
    multiply-high sequence: the ordering (division >> multiply > add) is what
    the optimizer needs. Index dtype is priced like a 32/64-bit integer.
    """

    alu: float = 1.0
    mul: float = 3.0
    div_const: float = 25.0
    div_var: float = 40.0
    div_pow2: float = 1.0
    div_pow2_signed: float = 3.0
    load: float = 4.0
    store: float = 1.0

    uses_bounds: ClassVar[bool] = True

    def node_cost(self, op: Ops, dtype: DType, arg: Any, child_consts: ChildConsts,
                  child_mins: Sequence[int | float | None] | None = None) -> float:
        if op in LEAVES:
            return 0.0
        if op in GroupOp.IntDiv:
            return self._divmod(op, dtype, child_consts, child_mins)
        if op is Ops.MUL:
            if dtype.is_int and any(c is not None and _pow2(_int_const(c)) and
                                    _int_const(c) > 0 for c in child_consts):
                return self.alu
            return self.mul
        if op in (Ops.ADD, Ops.SUB, Ops.NEG, Ops.MAX, Ops.MIN, Ops.AND, Ops.OR, Ops.XOR,
                  Ops.NOT, Ops.SHL, Ops.SHR):
            return self.alu
        if op is Ops.INDEX:
            return 1.0 + (1.0 if len(child_consts) > 2 else 0.0)
        if op is Ops.LOAD:
            return self.load + (1.0 if len(child_consts) > 1 else 0.0)
        if op is Ops.STORE:
            return self.store
        if op is Ops.REDUCE:
            return _REDUCE_COMBINE.get(arg, 1.0)
        if op is Ops.VECTORIZE:
            return float(max(1, len(child_consts)))
        return float(_CPU_TABLE.get(op, 1.0))

    def _divmod(self, op: Ops, dtype: DType, child_consts: ChildConsts,
                child_mins: Sequence[int | float | None] | None) -> float:
        lanes = max(1, dtype.count)
        d = _int_const(child_consts[1]) if len(child_consts) > 1 and \
            child_consts[1] is not None else None
        if d is None or d == 0:
            return self.div_var * lanes
        if abs(d) == 1:
            return self.alu
        if not _pow2(d):
            return self.div_const * lanes
        if op in (Ops.FLOORDIV, Ops.FLOORMOD) and d > 0:
            return self.div_pow2  # an arithmetic shift right or a mask, whatever the sign
        lo = child_mins[0] if child_mins is not None and len(child_mins) > 0 else None
        n0 = _int_const(child_consts[0]) if child_consts and child_consts[0] is not None else None
        nonneg = dtype.is_unsigned or (lo is not None and lo >= 0) or (n0 is not None and n0 >= 0)
        cost = self.div_pow2 if nonneg else self.div_pow2_signed
        if op in (Ops.IDIV, Ops.FLOORDIV) and d < 0:
            cost += self.alu
        return cost


COST_MODELS = {"default": CpuCost, "cpu": CpuCost, "reference": ReferenceCost}


#: classes whose instances passed the CostModel check (a runtime Protocol check is slow,
#: and extractions resolve their model every call)
_ACCEPTED: set[type] = set()


def get_cost_model(x: Any = None) -> CostModel:
    """Resolve a cost-model choice.

    None or ``"default"`` (or ``"cpu"``) -> :class:`CpuCost`; ``"reference"`` ->
    :class:`ReferenceCost`; an object with ``node_cost`` and ``graph_cost`` ->
    itself. Anything else raises ValueError naming the choices.
    """
    if type(x) in _ACCEPTED:
        return x
    if x is None:
        return CpuCost()
    if isinstance(x, str):
        if x in COST_MODELS:
            return COST_MODELS[x]()
        raise ValueError(f"unknown cost model {x!r}; choose one of "
                         f"{', '.join(repr(k) for k in COST_MODELS)}, or pass a CostModel")
    if not isinstance(x, type) and isinstance(x, CostModel):
        if hasattr(type(x), "node_cost") and hasattr(type(x), "graph_cost"):
            _ACCEPTED.add(type(x))  # every instance of the class passes: skip the check
        return x
    raise ValueError(f"invalid cost model {x!r}: expected None, one of "
                     f"{', '.join(repr(k) for k in COST_MODELS)}, or a CostModel instance "
                     "(an object with node_cost(op, dtype, arg, child_consts) and "
                     "graph_cost(uop))")
