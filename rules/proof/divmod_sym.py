"""Proofs of the div/mod core's rules by running their code on symbolic forms.

A rule of ``rules.divmod_core`` reads ``x OP y`` as linear forms over opaque atoms and
asks a :class:`~eqsat.ir.linear.Ctx` for the atoms' bounds and structure. Here it runs
on forms whose coefficients, constants and divisors are symbolic integers
(:class:`rules.proof.symbolic.SymInt`), on a context whose bounds are symbolic too (or
``-inf``/``inf``) and whose terms are z3 terms with C's truncating ``idiv``/``mod``.
Every path the rule's code can take is run (:func:`rules.proof.symbolic.explore`);
on each path where it fires, z3 proves: the path condition and the premise (each atom
within its bounds, every division of the input by a non-zero value) imply the
divisor ``y`` is not 0, every division the output builds is by a non-zero value, and
the output equals ``x OP y``.

What is concrete is the shape: how many atoms a form has and which atoms are
divisions, remainders or products (:data:`SYMBOLIC` per rule, stated in the outcome).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import z3

from eqsat.ir.linear import Lin
from rules.proof.laws import Outcome
from rules.proof.semantics import c_divmod, c_idiv, check, solver
from rules.proof.symbolic import Case, SymInt, prove_paths, term

__all__ = ["prove_divmod", "ZCtx", "linear_shapes", "made_shapes", "product_shapes",
           "SYMBOLIC", "obligation"]

#: an atom's bounds: symbolic, or unbounded below/above
_KINDS = ((False, False), (True, False), (False, True), (True, True))


@dataclass
class _Atom:
    value: Any  # its z3 term
    lo: Any
    hi: Any
    parts: dict[str, list[tuple[Lin, Lin]]] = field(default_factory=dict)


class ZCtx:
    """A :class:`~eqsat.ir.linear.Ctx` whose atoms are names of z3 values and whose
    terms are z3 terms (``idiv``/``mod`` truncate as C's); it records every divisor of
    the terms it builds (:attr:`divisors`)."""

    def __init__(self) -> None:
        self.atoms: dict[str, _Atom] = {}
        self.premise: list[Any] = []
        self.divisors: list[Any] = []

    def plain(self, name: str, unbounded_lo: bool, unbounded_hi: bool) -> str:
        """A variable atom with symbolic bounds (or infinite ones)."""
        v = z3.Int(name)
        lo = -math.inf if unbounded_lo else SymInt.var(f"{name}_lo")
        hi = math.inf if unbounded_hi else SymInt.var(f"{name}_hi")
        return self._add(name, v, lo, hi, {})

    def _add(self, name: str, v: Any, lo: Any, hi: Any,
             parts: dict[str, list[tuple[Lin, Lin]]]) -> str:
        self.atoms[name] = _Atom(v, lo, hi, parts)
        if isinstance(lo, SymInt):
            self.premise.append(lo.t <= v)
        if isinstance(hi, SymInt):
            self.premise.append(v <= hi.t)
        return name

    def made(self, name: str, op: str, a: Lin, b: Lin, unbounded: tuple[bool, bool]) -> str:
        """An atom that is ``a OP b`` (op ``idiv``, ``mod`` or ``mul``), its bounds
        symbolic or infinite; a divisor ``b`` is not 0 (the input is defined)."""
        at, bt = self.value(a), self.value(b)
        if op == "mul":
            v = at * bt
        else:
            self.premise.append(bt != 0)
            v = c_divmod(op, at, bt)
        lo = -math.inf if unbounded[0] else SymInt.var(f"{name}_lo")
        hi = math.inf if unbounded[1] else SymInt.var(f"{name}_hi")
        return self._add(name, v, lo, hi, {op: [(a, b)]})

    def value(self, x: Lin) -> Any:
        """The z3 term of ``x`` (read directly: no decision taken)."""
        t = term(x.const)
        for c, a in x.terms:
            t = t + term(c) * self.atoms[a].value
        return t

    # ---- the Ctx protocol ---------------------------------------------------
    def bounds(self, a: str) -> tuple[Any, Any]:
        return self.atoms[a].lo, self.atoms[a].hi

    def mod_parts(self, a: str) -> list[tuple[Lin, Lin]]:
        return self.atoms[a].parts.get("mod", [])

    def idiv_parts(self, a: str) -> list[tuple[Lin, Lin]]:
        return self.atoms[a].parts.get("idiv", [])

    def mul_parts(self, a: str) -> list[tuple[Lin, Lin]]:
        return self.atoms[a].parts.get("mul", [])

    def atom(self, a: str) -> Any:
        return self.atoms[a].value

    def const(self, v: Any) -> Any:
        return term(v)

    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def sum(self, terms: list[tuple[Any, Any]], const: Any) -> Any:
        # a z3 sum needs no order of its terms (the baseline's builder orders them by
        # sign, a decision of the engine, not of the rule)
        t = term(const)
        for c, u in terms:
            t = t + term(c) * u
        return t

    def lin(self, x: Lin) -> Any:
        return self.value(x)

    def sub(self, a: Any, b: Any) -> Any:
        return a - b

    def neg(self, a: Any) -> Any:
        return -a

    def mul(self, a: Any, c: Any) -> Any:
        return a * term(c)

    def idiv(self, a: Any, b: Any) -> Any:
        self.divisors.append(b)
        return c_idiv(a, b)

    def mod(self, a: Any, b: Any) -> Any:
        self.divisors.append(b)
        return c_divmod("mod", a, b)


def _coef(name: str, ctx: ZCtx) -> SymInt:
    """A symbolic non-zero coefficient (a form's coefficients are never 0)."""
    c = SymInt.var(name)
    ctx.premise.append(c.t != 0)
    return c


def _form(ctx: ZCtx, atoms: Iterable[str], tag: str) -> Lin:
    """``sum(f_i * atom_i) + k`` with every ``f_i`` and ``k`` symbolic."""
    return Lin._trusted(tuple((_coef(f"{tag}_f{i}", ctx), a) for i, a in enumerate(atoms)),
                        SymInt.var(f"{tag}_k"))


# ---------------------------------------------------------------------------
# shapes: a shape builds (ctx, x, y) afresh
Shape = Callable[[], tuple[ZCtx, Lin, Lin]]


def _divisors(ctx: ZCtx, kind: tuple[bool, bool] | None) -> Lin:
    """A divisor: a symbolic constant (kind None) or ``f*d + k`` over an atom d of
    that bound kind."""
    if kind is None:
        return Lin.constant(SymInt.var("n"))
    return _form(ctx, [ctx.plain("d", *kind)], "y")


_YKINDS: tuple[tuple[bool, bool] | None, ...] = (None, *_KINDS)


def linear_shapes(most: int = 2) -> list[tuple[str, Shape]]:
    """``x`` a form of 0 to ``most`` variable atoms, ``y`` a constant or a form of one
    atom, every bound symbolic or infinite."""
    out = []
    for k in range(most + 1):
        for kinds in itertools.product(_KINDS, repeat=k):
            for yk in _YKINDS:
                def shape(kinds: tuple = kinds, yk: Any = yk) -> tuple[ZCtx, Lin, Lin]:
                    ctx = ZCtx()
                    atoms = [ctx.plain(f"a{i}", *kd) for i, kd in enumerate(kinds)]
                    return ctx, _form(ctx, atoms, "x"), _divisors(ctx, yk)
                out.append((f"{k} atoms {kinds} / {yk}", shape))
    return out


def made_shapes(op: str, offset: bool = False) -> list[tuple[str, Shape]]:
    """``x`` one atom ``a OP b`` (``a`` a form of one atom; ``b`` a constant or an
    atom) plus a symbolic constant when ``offset``; ``y`` a constant or a form."""
    out = []
    for bk in _YKINDS:
        for mk in _KINDS:
            for yk in _YKINDS:
                def shape(bk: Any = bk, mk: Any = mk, yk: Any = yk) -> tuple[ZCtx, Lin, Lin]:
                    ctx = ZCtx()
                    a = _form(ctx, [ctx.plain("a", False, False)], "i")
                    b = Lin.constant(SymInt.var("m")) if bk is None else \
                        Lin.atom(ctx.plain("b", *bk))
                    m = ctx.made("q", op, a, b, mk)
                    x = Lin.atom(m) + SymInt.var("x_k") if offset else Lin.atom(m)
                    return ctx, x, _divisors(ctx, yk)
                out.append((f"{op} {bk} {mk} / {yk}", shape))
    return out


def product_shapes() -> list[tuple[str, Shape]]:
    """``y`` a form of one atom ``d`` (``1*d`` or ``f*d + k``); ``x`` a sum over a
    product ``y*v`` or ``v*y``, the atom ``d`` itself and a variable ``b``."""
    out = []
    for single in (True, False):
        for yk in _KINDS:
            for which in ((0,), (1,), (2,), (0, 2), (1, 2), (0, 1)):
                for swap in (False, True):
                    def shape(single: bool = single, yk: Any = yk, which: Any = which,
                              swap: bool = swap) -> tuple[ZCtx, Lin, Lin]:
                        ctx = ZCtx()
                        d = ctx.plain("d", *yk)
                        y = Lin.atom(d) if single else _form(ctx, [d], "y")
                        v = Lin.atom(ctx.plain("v", False, False))
                        p = ctx.made("p", "mul", v if swap else y, y if swap else v,
                                     (False, False))
                        b = ctx.plain("b", False, False)
                        atoms = [(p, d, b)[i] for i in which]
                        return ctx, _form(ctx, atoms, "x"), y
                    out.append((f"{'d' if single else 'f*d+k'} {yk} {which} {swap}", shape))
    return out


# ---------------------------------------------------------------------------
def _purified(fs: list[Any]) -> list[Any]:
    """``fs`` with every integer division ``a / b`` a fresh integer ``q`` and its
    definition (``b != 0`` implies ``a == b*q + r``, ``0 <= r < |b|``: z3's division):
    the same problem, which z3 often settles where it gives up on ``/``."""
    seen: dict[int, tuple[Any, Any]] = {}
    defs: list[Any] = []

    visited: set[int] = set()

    def walk(t: Any) -> None:
        if t.get_id() in visited:
            return
        visited.add(t.get_id())
        if z3.is_app_of(t, z3.Z3_OP_IDIV):
            a, b = t.arg(0), t.arg(1)
            q = z3.FreshInt("q")
            seen[t.get_id()] = (t, q)
            r = a - b * q
            defs.append(z3.Implies(b != 0, z3.And(0 <= r, r < z3.If(b >= 0, b, -b))))
        for c in t.children():
            walk(c)
    for f in fs:
        walk(f)
    pairs = list(seen.values())
    return [z3.substitute(f, *pairs) for f in fs + defs] if pairs else fs


def _prove_path(ctx: ZCtx, cond: Any, op: str, x: Lin, y: Lin, out: Any,
                rlimit: int) -> Any:
    """None when proven, else a message."""
    xt, yt = ctx.value(x), ctx.value(y)
    lhs = c_divmod(op, xt, yt)
    goal = z3.And(yt != 0, *[d != 0 for d in ctx.divisors], lhs == out)
    fs = [*ctx.premise, cond, z3.Not(goal)]
    for attempt in (fs, _purified(fs)):  # z3's own division first, then named quotients
        s = solver()
        s.add(*attempt)
        r = check(s, rlimit)  # (counts the units a settled query took)
        if r != z3.unknown:
            break
    if r == z3.unsat:
        return None
    if r == z3.sat:
        return f"counterexample: {s.model()}"
    return "z3 gave up"


def prove_divmod(name: str, fn: Callable[..., Any], ops: tuple[str, ...],
                 shapes: list[tuple[str, Shape]], domain: str, rlimit: int) -> Outcome:
    """Run ``fn(op, x, y, ctx)`` (a DivModRule's ``fn``) on every shape and op, every
    path, and prove each output (see the module docstring)."""
    def case(label: str, shape: Shape, op: str) -> Case:
        ctx, x, y = shape()

        def run() -> Any:
            ctx.divisors = []
            r = fn(op, x, y, ctx)
            return None if r is None else (r, list(ctx.divisors))

        def check(cond: Any, r: Any) -> str | None:
            ctx.divisors = r[1]
            return _prove_path(ctx, cond, op, x, y, r[0], rlimit)
        return f"{op} on {label}", list(ctx.premise), run, check
    return prove_paths(name, (case(label, shape, op) for label, shape in shapes for op in ops),
                       domain, rlimit)


_LINEAR = ("x a linear form of 0-2 atoms, y a constant or f*d + k over an atom d; every "
           "coefficient, constant and divisor symbolic, every bound symbolic or infinite; "
           "every path of the rule's code")
_MADE = ("x = {x} for the atom q = (f*a + k) // b, b a constant or an atom, y a constant or "
         "f*d + k over an atom d; every coefficient, constant and divisor symbolic, every "
         "bound symbolic (those of q, b, d also infinite); every path of the rule's code")

#: the rules proven this way: name -> (its shapes, their statement)
SYMBOLIC: dict[str, tuple[Callable[[], list[tuple[str, Shape]]], str]] = {
    **{name: (linear_shapes, _LINEAR) for name in (
        "idiv_one_bucket", "idiv_drop_multiple_small",
        "idiv_drop_multiple", "idiv_large_offset")},
    "nested_idiv_offset": (lambda: made_shapes("idiv", True), _MADE.format(x="q + c")),
}


def obligation(name: str) -> Callable[[int], Outcome]:
    """The proof obligation of the div/mod rule ``name`` (one of :data:`SYMBOLIC`)."""
    shapes, domain = SYMBOLIC[name]

    def ob(rlimit: int) -> Outcome:
        from rules.divmod_core import RULES_BY_NAME

        r = RULES_BY_NAME[name]
        return prove_divmod(name, r.fn, r.ops, shapes(), domain, rlimit)
    return ob
