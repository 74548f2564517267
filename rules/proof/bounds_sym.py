"""Proofs of the decisions by bounds by running their code on symbolic intervals.

``cmp_by_bounds``, ``fold_const_by_bounds``, ``lt_gcd_fold`` and ``lt_simplex`` read the
bounds analysis (:func:`eqsat.ir.bounds.compute_bounds`, run as every UOp is built). Here
the rule's own ``Rule.apply`` (as the baseline runs it; the e-graph has its own passes)
runs on UOps whose leaves have symbolic bounds: a variable's ``vmin``/``vmax`` are
:class:`~rules.proof.symbolic.SymInt` (or ``-inf``/``inf``), a constant's value is one.
The analysis then computes on symbolic integers as each node is built: its ``min``,
``max``, comparisons and C divisions become the path's choices, as do the rule's own
tests. Every path is run (:func:`rules.proof.symbolic.explore`); on each path where the
rule fires, z3 proves that for every value of the leaves within their bounds (and of the
symbolic constants) the output equals the input (:func:`rules.proof.uops._same`: where
the input has a value, the output has the same; where it divides by zero, the output is
undefined too). ``index`` is unbounded integers, ``idiv``/``mod`` truncate as C's, a
fixed-width integer is read exactly (wrapping Ints).

What is concrete is the shape: which ops, over which leaves (:data:`SYMBOLIC` per rule,
stated in the outcome). A variable atom stands for any subterm: its bounds are any
interval (or unbounded on either side), so a node over atoms covers the node over any
operands whose bounds the analysis got right, which the node shapes prove op by op.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import z3

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp
from rules.proof.divmod_sym import _purified
from rules.proof.laws import Outcome
from rules.proof.semantics import Val, check, fresh, solver
from rules.proof.symbolic import Case, SymInt, prove_paths, term
from rules.proof.uops import Graphs, _keep

__all__ = ["Leaves", "prove_shapes", "SYMBOLIC", "obligation", "rule_apply", "cmp_shapes",
           "fold_shapes", "simplex_shapes"]

#: an atom's bounds: (unbounded below, unbounded above)
_KINDS = ((False, False), (True, False), (False, True), (True, True))


class Leaves:
    """The symbolic leaves of one run of a shape: variables with symbolic (or
    infinite) bounds and symbolic constants, each built afresh (a node over them is new
    to the interner, so its bounds are computed on this run's path)."""

    def __init__(self, premise: list[Any]) -> None:
        # (the exploration's premise, filled as the leaves are made: a shape makes its
        # leaves before the nodes over them, whose bounds take the first decisions)
        self.premise = premise

    def var(self, name: str, unbounded_lo: bool = False, unbounded_hi: bool = False,
            nonneg: bool = False) -> UOp:
        """The index variable ``name`` over ``[name_lo, name_hi]`` (``nonneg``: the
        low bound is at least 0)."""
        lo = -math.inf if unbounded_lo else SymInt.var(f"{name}_lo")
        hi = math.inf if unbounded_hi else SymInt.var(f"{name}_hi")
        if isinstance(lo, SymInt) and isinstance(hi, SymInt):
            self.premise.append(lo.t <= hi.t)  # (UOp.var's check: a var has a value)
        if nonneg and isinstance(lo, SymInt):
            self.premise.append(lo.t >= 0)
        return UOp(Ops.DEFINE_VAR, dtypes.index, (), (name, lo, hi))

    def const(self, name: str, dt: DType = dtypes.index) -> UOp:
        """A constant of symbolic value ``name`` (within ``dt``'s range)."""
        k = SymInt.var(name)
        if dt.is_fixed_int:
            self.premise.append(z3.And(k.t >= dt.min, k.t <= dt.max))
        return UOp(Ops.CONST, dt, (), k)


class _SymGraphs(Graphs):
    """:class:`Graphs` whose variables are z3 integers of their names, within their
    symbolic bounds, and whose constants may be symbolic."""

    def _leaf(self, u: UOp) -> Val:
        name = u.arg[0] if u.op is Ops.DEFINE_VAR else f"{u.op.name.lower()}{next(self.n)}"
        v = fresh(name, "index", may_inv=False, may_undef=False)
        for end, above in ((u.vmin, True), (u.vmax, False)):
            if isinstance(end, SymInt) or (isinstance(end, int) and not isinstance(end, bool)):
                self.pre.append(v.x >= term(end) if above else v.x <= term(end))
        return v

    def _const(self, dt: str, value: Any) -> Val:
        if isinstance(value, SymInt):
            return Val(dt, z3.BoolVal(False), z3.BoolVal(False), value.t)
        return super()._const(dt, value)


Shape = Callable[[Leaves], UOp]


def _prove_path(premise: list[Any], cond: Any, u: UOp, out: UOp, rlimit: int) -> str | None:
    """None when ``out`` equals ``u`` on every value the path admits, else why not."""
    g = _SymGraphs()
    lhs, rhs = g.value(u), g.value(out)
    # where the input has a value (or is Invalid) the output is the same; where the
    # input's own op divides by zero the output is undefined too (an operand's
    # undefinedness is the operand's, as in the proofs of the rules of the language)
    own = z3.And(lhs.divz, *[z3.Not(g.value(s).divz) for s in u.src])
    claim = _keep(dataclasses.replace(lhs, divz=own), rhs)
    fs = [*premise, cond, *g.pre, z3.Not(claim)]
    # the SMT core (its model is a counterexample), on a tenth of the budget first,
    # then with the quotients named (C remainders of wrapped fixed-width values); then
    # nlsat (the products of symbolic bounds are nonlinear), whose "unsat" holds (it may
    # read the integers as reals, a relaxation) and whose "sat" is not taken
    for tactic, budget in ((None, rlimit // 10), ("named", rlimit // 10),
                           ("nlsat", rlimit // 10), (None, rlimit)):
        s = z3.Then("simplify", "purify-arith", "qfnra-nlsat").solver() \
            if tactic == "nlsat" else solver()
        s.add(*(_purified(fs) if tactic == "named" else fs))
        r = check(s, budget)
        if r == z3.unsat:
            return None
        if r == z3.sat and tactic != "nlsat":
            return f"counterexample: {s.model()}"
    return "z3 gave up"


def prove_shapes(name: str, apply: Callable[[UOp], UOp | None],
                 shapes: Iterable[tuple[str, Shape]], domain: str, rlimit: int) -> Outcome:
    """Run ``apply`` (the rule as the engine calls it) on every shape, every path, and
    prove each rewrite (see the module docstring)."""
    def case(label: str, shape: Shape) -> Case:
        premise: list[Any] = []

        def run() -> Any:
            premise.clear()
            u = shape(Leaves(premise))
            out = apply(u)
            return None if out is None or out is u else (u, out, list(premise))

        def check(cond: Any, r: Any) -> str | None:
            u, out, pre = r
            bad = _prove_path(pre, cond, u, out, rlimit)
            return None if bad is None else f"{u!r} -> {out!r}: {bad}"
        return label, premise, run, check
    return prove_paths(name, (case(label, shape) for label, shape in shapes), domain, rlimit)


def rule_apply(name: str) -> Callable[[UOp], UOp | None]:
    """The baseline rule ``name``'s ``apply`` (the rule as the engine runs it)."""
    from rules.proof.python import _rule

    return _rule(name).apply


# ---------------------------------------------------------------------------
# shapes
def _atoms(kinds: tuple[tuple[bool, bool], ...]) -> Callable[[Leaves], list[UOp]]:
    return lambda lv: [lv.var(f"a{i}", *k) for i, k in enumerate(kinds)]


#: the integer ops of the bounds analysis, by arity
_BINARY = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.MIN)
_UNARY = (Ops.NEG, Ops.NOT)
_CMPS = (Ops.LT, Ops.LE, Ops.GT, Ops.GE, Ops.EQ, Ops.NE)


def _operands(lv: Leaves, kinds: Any) -> list[UOp]:
    """Atoms of the given bound kinds; kind None is a symbolic constant."""
    return [lv.const(f"k{i}") if k is None else lv.var(f"a{i}", *k)
            for i, k in enumerate(kinds)]


_OPERAND_KINDS = (*_KINDS, None)


def _pairs() -> Iterable[tuple[Any, Any]]:
    return ((p, q) for p in _OPERAND_KINDS for q in _OPERAND_KINDS
            if not (p is None and q is None))


def _node(op: Ops, xs: list[UOp]) -> UOp:
    return UOp(op, xs[0].dtype, tuple(xs))


def _i8(u: UOp) -> UOp:
    return UOp(Ops.CAST, dtypes.i8, (u,))


def _leaf_pairs(ops: Iterable[Ops], tag: str, wrap: Callable[[UOp], UOp] | None = None
                ) -> list[tuple[str, Shape]]:
    """``op(u, v)`` for each op and every pair of leaves (atoms of every bound kind,
    symbolic constants; not two constants); ``wrap``: each leaf cast first."""
    out = []
    for op in ops:
        for p, q in _pairs():
            def shape(lv: Leaves, op: Ops = op, p: Any = p, q: Any = q) -> UOp:
                u, v = _operands(lv, (p, q))
                if wrap is not None:
                    u, v = wrap(u), wrap(v)
                return _node(op, [u, v])
            out.append((f"{tag} {op.name}({p}, {q})", shape))
    return out


def _unary(ops: Iterable[Ops], tag: str, wrap: Callable[[UOp], UOp] | None = None
           ) -> list[tuple[str, Shape]]:
    out = []
    for op in ops:
        for k in _KINDS:
            def shape(lv: Leaves, op: Ops = op, k: Any = k) -> UOp:
                u = lv.var("a0", *k)
                return _node(op, [u if wrap is None else wrap(u)])
            out.append((f"{tag} {op.name}({k})", shape))
    return out


def _bools() -> list[tuple[str, Shape]]:
    """Bool nodes over comparisons of atoms: each bool op, and NOT."""
    out = []
    for op in (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX, Ops.MIN, Ops.MUL, Ops.ADD):
        def shape(lv: Leaves, op: Ops = op) -> UOp:
            a0, a1, a2, a3 = (lv.var(f"a{i}") for i in range(4))
            return _node(op, [a0.lt(a1), a2.lt(a3)])
        out.append((f"bool {op.name}(a0 < a1, a2 < a3)", shape))

    def neg(lv: Leaves) -> UOp:
        a0, a1 = lv.var("a0"), lv.var("a1")
        return _node(Ops.NOT, [a0.lt(a1)])
    out.append(("bool NOT(a0 < a1)", neg))
    return out


def _nodes() -> list[tuple[str, Callable[[Leaves], UOp]]]:
    """One node of each integer op the analysis has a case for, over leaves of every
    bound kind: index binary and unary ops, an i8 op over casts of index atoms (its
    interval wraps to the dtype's), a cast to i8 and back, a WHERE over a comparison, a
    operand that may be undefined (``a0 // a1``: only the rule's own op must not fold a
    division by zero)."""
    out: list[tuple[str, Callable[[Leaves], UOp]]] = []
    out += _leaf_pairs(_BINARY, "index")
    out += _unary(_UNARY, "index")
    out += _leaf_pairs(_BINARY, "i8", _i8)
    out += _unary((Ops.NEG,), "i8", _i8)
    for k in _KINDS:
        out.append((f"cast i8 {k}", lambda lv, k=k: _i8(lv.var("a0", *k))))
        out.append((f"cast index(i8) {k}", lambda lv, k=k: UOp(
            Ops.CAST, dtypes.index, (_i8(lv.var("a0", *k)),))))
    for k in _KINDS:
        def where(lv: Leaves, k: Any = k) -> UOp:
            a0, a1, a2, a3 = lv.var("a0"), lv.var("a1"), lv.var("a2", *k), lv.var("a3")
            return a0.lt(a1).where(a2, a3)
        out.append((f"where(a0 < a1, a2 {k}, a3)", where))
    for op in (Ops.MAX, Ops.IDIV):  # (k above the quotients; a division of a division)
        def undef(lv: Leaves, op: Ops = op) -> UOp:
            a0, a1, k = lv.var("a0"), lv.var("a1"), lv.const("k")
            return _node(op, [a0 // a1, k])
        out.append((f"{op.name}(a0 // a1, k)", undef))
    return out


def cmp_shapes() -> list[tuple[str, Shape]]:
    """Each comparison of two leaves (index, i8, bools); ``node < k`` and ``k < node``
    for each node of :func:`_nodes` (``<`` reads both ends of either side)."""
    out = _leaf_pairs(_CMPS, "index")
    out += _leaf_pairs(_CMPS, "i8", _i8)
    for op in _CMPS:
        def bools(lv: Leaves, op: Ops = op) -> UOp:
            a0, a1, a2, a3 = (lv.var(f"a{i}") for i in range(4))
            return _node(op, [a0.lt(a1), a2.lt(a3)])
        out.append((f"bool {op.name}(a0 < a1, a2 < a3)", bools))
    for label, node in _nodes():
        def shape(lv: Leaves, node: Any = node) -> UOp:
            x = node(lv)
            return x.lt(lv.const("c", x.dtype))
        out.append((f"{label} < c", shape))
    return out


def fold_shapes() -> list[tuple[str, Shape]]:
    """A variable atom; each node of :func:`_nodes` the rule's pattern takes; the bool
    ops over comparisons."""
    out: list[tuple[str, Shape]] = [("var", lambda lv: lv.var("a0"))]
    out += [(label, node) for label, node in _nodes()
            if not label.startswith(("cast", "where"))]
    out += _bools()
    return out


_CMP_DOMAIN = ("op(u, v) for each comparison op, u, v a variable atom (bounds symbolic "
               "or infinite on either side) or a symbolic constant, as index, i8 (casts of "
               "index atoms) and bools (comparisons of atoms); node < c and c < node for "
               "node each op the analysis has a case for (ADD, SUB, MUL, IDIV, MOD, MAX, "
               "MIN, NEG, NOT on index; on i8 wrapping; casts index->i8->index; WHERE; "
               "an operand a0 // a1 that may divide by 0) over such leaves; every path "
               "of the analysis and the rule")
_FOLD_DOMAIN = ("a variable atom; op(u, v) for ADD, SUB, MUL, IDIV, MOD, MAX, MIN, unary "
                "NEG, NOT, over leaves of symbolic or infinite bounds and symbolic "
                "constants, as index and i8 (wrapping); an operand a0 // a1 that may "
                "divide by 0; AND, OR, XOR, MAX, MIN, MUL, ADD and NOT of comparisons; "
                "every path of the analysis and the rule")


#: a term of a sum: how it is made from the leaves it takes
_TERMS: dict[str, Callable[[Leaves, str, tuple[bool, bool]], UOp]] = {
    "v": lambda lv, n, k: lv.var(n, *k),
    "v*k": lambda lv, n, k: lv.var(n, *k) * lv.const(f"{n}_k"),
    "k*v": lambda lv, n, k: lv.const(f"{n}_k") * lv.var(n, *k),
    "r*k": lambda lv, n, k: UOp(Ops.RANGE, dtypes.index, (lv.var(f"{n}_end", *k),), 0)
    * lv.const(f"{n}_k"),
    "special": lambda lv, n, k: UOp(Ops.SPECIAL, dtypes.index, (lv.var(f"{n}_end", *k),), n),
    "k": lambda lv, n, k: lv.const(n),
    "v//k": lambda lv, n, k: lv.var(n, *k) // lv.const(f"{n}_k"),
}
#: a variable's bounds in a sum: symbolic, or unbounded above
_SUM_KINDS = ((False, False), (False, True), (True, False))


def simplex_shapes() -> list[tuple[str, Shape]]:
    """``t0 + t1 < c`` for every pair of term kinds (a variable, ``v*k``, ``k*v``, a
    range times ``k``, a SPECIAL, a constant, ``v//k``; each variable's bounds symbolic
    or unbounded on one side; every ``k`` and ``c`` symbolic), and
    ``v*k + k*v + r*k < c``."""
    out = []
    for (t0, t1) in itertools.product(_TERMS, repeat=2):
        for k0, k1 in itertools.product(_SUM_KINDS, repeat=2):
            if (t0 == "k" and k0 != _SUM_KINDS[0]) or (t1 == "k" and k1 != _SUM_KINDS[0]):
                continue

            def shape(lv: Leaves, t0: str = t0, t1: str = t1, k0: Any = k0,
                      k1: Any = k1) -> UOp:
                x = _TERMS[t0](lv, "a0", k0) + _TERMS[t1](lv, "a1", k1)
                return x.lt(lv.const("c"))
            out.append((f"{t0} {k0} + {t1} {k1} < c", shape))

    def three(lv: Leaves) -> UOp:
        x = _TERMS["v*k"](lv, "a0", (False, True)) + _TERMS["k*v"](lv, "a1", (False, False))
        return (x + _TERMS["r*k"](lv, "a2", (False, False))).lt(lv.const("c"))
    out.append(("v*k + k*v + r*k < c", three))
    return out


_SIMPLEX_DOMAIN = ("t0 + t1 < c for every pair of terms among a variable, v*k, k*v, "
                   "RANGE(e)*k, SPECIAL(e), a constant and v//k (each variable's bounds "
                   "symbolic or unbounded on one side, every k and c symbolic), and "
                   "v*k + k*v + r*k < c; every path of the analysis and the rule")

#: the rules proven this way: name -> (its shapes, their statement)
SYMBOLIC: dict[str, tuple[Callable[[], list[tuple[str, Shape]]], str]] = {
    "cmp_by_bounds": (cmp_shapes, _CMP_DOMAIN),
    "fold_const_by_bounds": (fold_shapes, _FOLD_DOMAIN),
    "lt_simplex": (simplex_shapes, _SIMPLEX_DOMAIN),
}


#: the rules of :data:`SYMBOLIC` whose symbolic run z3 does not settle to the end, and
#: where: their obligation stays a grid (``rules/proof/python.py``, tested-only)
UNSETTLED: dict[str, str] = {
    "cmp_by_bounds": "z3 gives up (40 M units, every tactic) on paths of i8 MOD(a, b) < c "
                     "with b's bounds negative",
}


def obligation(name: str) -> Callable[[int], Outcome]:
    """The proof obligation of the rule ``name`` (one of :data:`SYMBOLIC`)."""
    shapes, domain = SYMBOLIC[name]

    def ob(rlimit: int) -> Outcome:
        return prove_shapes(name, rule_apply(name), shapes(), domain, rlimit)
    return ob
