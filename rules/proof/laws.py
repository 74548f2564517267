"""The proof obligation of a rule of the language, derived from its definition.

For every choice of dtypes the rule admits (each of its types over the scalar dtypes its
ops and guard allow), the left and right sides are evaluated as z3 terms
(:mod:`.semantics`) over symbolic variables (each maybe Invalid, maybe undefined, with
symbolic bounds ``vmin <= x <= vmax`` where it has a value) and symbolic constants, and
z3 must show, wherever the guard holds and every computed constant exists:

- where the left side has a value or is Invalid, the right side is the same (the same
  value, or Invalid too): a defined value never changes and never becomes undefined;
- where the variables are all defined and the left side divides by zero, the right side
  is undefined too: a rule never folds a division by zero into a value (other undefined
  operations, an out-of-range shift or float-to-int cast, are C's undefined behaviour,
  which a rule may replace by any value: refinement, as the equivalence checker allows).

Where the left side is undefined because a variable is, the right side may be anything
(the input promises nothing there; the equivalence checker skips such points). This is
the refinement docs/format.md states ("What a rewrite may do with them").

The bounds are finite integers: an unknown bound (``-inf``/``inf``) makes a guard that
reads it behave as with a bound far enough out, which the proof covers.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import z3

from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from rules.lang import Law, Term, conjuncts, dtype_facts_hold
from rules.proof.semantics import (
    CONVERSIONS,
    FLOAT_SORTS,
    INT_RANGE,
    RLIMIT,
    MeaninglessError,
    Val,
    apply,
    as_int,
    c_divmod,
    canon,
    check,
    const,
    fresh,
    in_range,
    solver,
    sort_of,
)

__all__ = ["Outcome", "prove_law", "dtype_choices"]

_INF = math.inf


@dataclass(frozen=True)
class Outcome:
    """The result of one rule's proof: ``status`` is ``"proven"``, ``"tested-only"`` or
    ``"failed"``; ``detail`` a counterexample, a reason or the domain tested."""

    name: str
    status: str
    seconds: float
    detail: str = ""
    #: the most z3 resource units one settled query of the proof took (its budget need)
    rlimit: int = 0


#: the float dtypes a width-generic rule (``width_generic=``) is proven on; every integer
#: dtype it admits is proven (each width on its own). Each relation between two dtypes a
#: rule's guard reads (a float that holds an integer dtype exactly, or not; a float that
#: holds another, or not) occurs among these floats and the integers; ``f64`` is the same
#: obligation over a longer word, not among the choices (docs/rules.md, width-generic)
NARROW_FLOATS = frozenset(("f16", "bf16", "f32"))


def dtype_choices(law: Law) -> list[dict[int, str]]:
    """Every assignment of scalar dtypes to ``law``'s types that its guard admits (a
    width-generic rule's floats among :data:`NARROW_FLOATS`)."""
    ids = sorted(law.types)
    pools = []
    for i in ids:
        tc = law.types[i]
        pool = sorted(tc.allowed) if tc.fixed is None else [tc.fixed]
        if law.width_generic:
            pool = [d for d in pool if d not in FLOAT_SORTS or d in NARROW_FLOATS]
        pools.append(pool)
    out = []
    for combo in itertools.product(*pools):
        dts = dict(zip(ids, combo, strict=True))
        if dtype_facts_hold(law, dts):
            out.append(dts)
    return out


class _Env:
    """The symbolic world of one obligation: the rule's variables, constants, bounds."""

    def __init__(self, law: Law, dts: dict[int, str], bv: bool = False):
        self.law, self.dts, self.bv = law, dts, bv
        self.vals: dict[str, Val] = {}
        self.pre: list[Any] = []
        self.bounds: dict[tuple[str, str], Any] = {}
        self.calc_ok: list[Any] = []
        self.n = itertools.count()

    def var(self, t: Term) -> Val:
        v = self.vals.get(t.name)
        if v is None:
            dt = self.dts[t.tid]
            if t.kind == "const":
                v = fresh(t.name, dt, may_inv=False, may_undef=False, bv=self.bv)
            else:
                v = fresh(t.name, dt, bv=self.bv)
            self.pre.append(in_range(v))
            self.vals[t.name] = v
        return v

    def bound(self, which: str, name: str) -> Any:
        k = (which, name)
        b = self.bounds.get(k)
        if b is None:
            v = self.vals[name]
            lo, hi = z3.Int(f"vmin({name})"), z3.Int(f"vmax({name})")
            self.bounds[("vmin", name)], self.bounds[("vmax", name)] = lo, hi
            x = as_int(v)
            self.pre.append(z3.Implies(z3.And(z3.Not(v.undef), z3.Not(v.inv)),
                                       z3.And(lo <= x, x <= hi)))
            b = self.bounds[k]
        return b

    def term(self, t: Term, op: Ops | None, rhs: bool) -> Val:
        dt = self.dts[t.tid]
        if t.kind in ("var", "const"):
            return self.var(t)
        if t.kind == "lit":
            return const(dt, t.value, self.bv)
        if t.kind == "inv":
            return Val(dt, z3.BoolVal(False), z3.BoolVal(True),
                       z3.Const(f"inv{next(self.n)}", sort_of(dt, self.bv)))
        if t.kind == "bound":
            b = self.bound(t.value, t.name)
            if dt == "bool":
                x = b != 0
            elif self.bv and dt in INT_RANGE:
                x = z3.Int2BV(b, DType.parse(dt).bits)
            else:
                x = b
            return Val(dt, z3.BoolVal(False), z3.BoolVal(False), x)
        args = [self.term(s, op, rhs) for s in t.src]
        o = t.op if t.op is not None else op
        v = _generic(dt, args, self.bv) if o is GENERIC else apply(o, dt, args, t.to, self.bv)
        if rhs and t.calc:  # a computed constant: the rule fires only where it exists
            self.calc_ok.append(z3.Not(v.undef))
        return v

    def guard(self, g: Any) -> Any:
        """The numeric and form parts of a guard as a z3 Bool (dtype parts hold)."""
        k = g[0]
        if k in ("dtype", "dteq", "safe"):
            return z3.BoolVal(True)
        if k == "form":
            v = self.vals[g[2]]
            ok = z3.And(z3.Not(v.undef), z3.Not(v.inv))
            return ok if g[1] == "is_const" else v.inv
        if k == "valid":
            return z3.Not(self.vals[g[1]].inv)
        if k == "total":
            return z3.Not(self.vals[g[1]].undef)
        if k == "not":
            h = g[1]
            if h[0] in ("form", "dtype", "dteq", "safe"):
                return z3.BoolVal(True)  # a negated form guard: proven without it
            return z3.Not(self.guard(h))
        if k == "true":
            return z3.BoolVal(True)
        if k == "and":
            return z3.And(*[self.guard(x) for x in g[1:]])
        if k == "or":
            return z3.Or(*[self.guard(x) for x in g[1:]])
        if k == "cmp":
            a, b = self.num(g[2]), self.num(g[3])
            if isinstance(a, float) or isinstance(b, float):  # an infinite dtype limit
                a = a if not isinstance(a, float) else None
                return z3.BoolVal(self._inf_cmp(g[1], self.num(g[2]), self.num(g[3])))
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                    "!=": a != b}[g[1]]
        raise NotImplementedError(f"guard {k}")

    @staticmethod
    def _inf_cmp(op: str, a: Any, b: Any) -> bool:
        """A comparison with an infinite dtype limit (index): decided by the infinity."""
        if isinstance(a, float) and isinstance(b, float):
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                    "!=": a != b}[op]
        if isinstance(b, float):
            return {"<": b > 0, "<=": b > 0, ">": b < 0, ">=": b < 0, "==": False,
                    "!=": True}[op]
        return {"<": a < 0, "<=": a < 0, ">": a > 0, ">=": a > 0, "==": False,
                "!=": True}[op]

    def num(self, g: Any) -> Any:
        k = g[0]
        if k == "num":
            return z3.IntVal(g[1])
        if k == "const":
            return as_int(self.vals[g[1]])
        if k == "bound":
            v = self.vals[g[2]]
            if g[2] in self.vals and self.law.types[self._tid(g[2])] is not None and \
                    self._is_const(g[2]):
                return as_int(v)
            return self.bound(g[1], g[2])
        if k == "dlim":
            ref = g[2]
            name = ref[1] if ref[0] == "dt" else self.dts[self.law.tid_of(ref)]
            d = DType.parse(name)
            v = d.min if g[1] == "dmin" else d.max
            return float(v) if isinstance(v, float) else z3.IntVal(int(v))
        args = [self.num(x) for x in g[2:]]
        if any(isinstance(a, float) for a in args):
            inf = next(a for a in args if isinstance(a, float))
            return inf  # an infinite limit in arithmetic stays infinite
        if k == "call":
            if g[1] == "abs":
                return z3.If(args[0] >= 0, args[0], -args[0])
            out = args[0]
            for a in args[1:]:
                out = z3.If(a < out, a, out) if g[1] == "min" else z3.If(a > out, a, out)
            return out
        a, b = args
        op = g[1]
        if op in ("//", "%"):
            self.calc_ok.append(b != 0)
            return c_divmod("idiv" if op == "//" else "mod", a, b)
        if op in ("&", "|", "^", "<<", ">>"):
            raise NotImplementedError(f"guard operator {op}")
        return {"+": a + b, "-": a - b, "*": a * b}[op]

    def _tid(self, name: str) -> int:
        return self.law._tid_of(name)

    def _is_const(self, name: str) -> bool:
        return any(t.kind == "const" and t.name == name for t in self.law.lhs.walk())


#: the op variable of a rule read as an unknown op (see :func:`_generic`)
GENERIC: Any = object()


def _generic(dt: str, args: list[Val], bv: bool) -> Val:
    """An unknown strict op over ``args`` with a result of ``dt``: its value, whether it
    is undefined and whether that is a division by zero are unknown functions of the
    operands' values; an undefined operand makes it undefined, else an Invalid one
    Invalid (as every op but ``where``). A rule proven with it holds for every such op:
    each op of its ``ops=`` is one."""
    xs = [canon(a) for a in args]
    sig = "_".join([a.dt for a in args] + [dt, "bv" if bv else "int"])
    sorts = [x.sort() for x in xs]
    f = z3.Function(f"op_{sig}", *sorts, sort_of(dt, bv))
    own = z3.Function(f"opundef_{sig}", *sorts, z3.BoolSort())(*xs)
    dz = z3.Function(f"opdivz_{sig}", *sorts, z3.BoolSort())(*xs)
    undef_in = z3.Or(*[a.undef for a in args])
    inv_in = z3.Or(*[a.inv for a in args])
    undef = z3.Or(undef_in, z3.And(z3.Not(inv_in), own))
    inv = z3.And(z3.Not(undef_in), inv_in)
    divz = z3.Or(*[a.divz for a in args], z3.And(z3.Not(undef_in), z3.Not(inv_in), own, dz))
    return Val(dt, undef, inv, f(*xs), False, divz)


def _obligation(law: Law, dts: dict[int, str], op: Ops | None,
                bv: bool = False) -> tuple[Any, _Env]:
    env = _Env(law, dts, bv)
    lhs = env.term(law.lhs, op, False)
    guard = [env.guard(c) for c in conjuncts(law.guard)]
    for v in law.dropped:
        guard.append(z3.Not(env.vals[v].inv))
    rhs = env.term(law.rhs, op, True)
    pre = z3.And(*env.pre, *guard, *env.calc_ok)
    defined = z3.And(*[z3.Not(v.undef) for v in env.vals.values()])
    keep = z3.Implies(z3.Not(lhs.undef),
                      z3.And(z3.Not(rhs.undef), lhs.inv == rhs.inv,
                             z3.Or(lhs.inv, canon(lhs) == canon(rhs))))
    no_fold = z3.Implies(z3.And(defined, lhs.divz), rhs.undef)
    return z3.Implies(pre, z3.And(keep, no_fold)), env


def _show_model(m: Any, env: _Env, dts: dict[int, str]) -> str:
    parts = []
    for name, v in env.vals.items():
        if z3.is_true(m.eval(v.undef, model_completion=True)):
            parts.append(f"{name}=undefined")
        elif z3.is_true(m.eval(v.inv, model_completion=True)):
            parts.append(f"{name}=Invalid")
        else:
            parts.append(f"{name}={m.eval(canon(v), model_completion=True)}")
    for (which, name), b in env.bounds.items():
        parts.append(f"{which}({name})={m.eval(b, model_completion=True)}")
    dt = ",".join(sorted(set(dts.values())))
    return f"[{dt}] " + " ".join(parts)


def _check(claim: Any, env: _Env, rlimit: int, floats: bool) -> tuple[Any, Any]:
    """z3's verdict on ``not claim`` (sat: a counterexample, in the solver's model).

    With floats, the claim is split on the values of the rule's bool variables (``where``
    conditions, at most three): each case simplifies the selections away, and both sides
    become one term, where z3 bit-blasting the two sides' float circuits with the
    selection inside gives up."""
    conds = [v.x for v in env.vals.values() if v.dt == "bool"][:3] if floats else []
    cases = [dict(zip(conds, bits, strict=True))
             for bits in itertools.product((False, True), repeat=len(conds))]
    for case in cases:
        c = z3.substitute(claim, *[(k, z3.BoolVal(b)) for k, b in case.items()]) \
            if case else claim
        s = solver(floats)
        s.add(z3.Not(c))
        for k, b in case.items():  # (for the model of a counterexample)
            s.add(k == z3.BoolVal(b))
        r = check(s, rlimit)
        if r != z3.unsat:
            return r, s
    return z3.unsat, None


def prove_law(law: Law, rlimit: int = RLIMIT) -> Outcome:
    """Prove ``law`` for every dtype choice; the first counterexample fails it."""
    t0 = time.perf_counter()
    choices = dtype_choices(law)
    if not choices:
        return Outcome(law.name, "failed", time.perf_counter() - t0,
                       "no dtype satisfies the rule")
    ops: tuple[Ops | None, ...] = law.ops or (None,)
    local = _bit_local(law)
    bounded: list[str] = []
    ops_used = {t.op for t in list(law.lhs.walk()) + list(law.rhs.walk())} | set(law.ops)
    order = (True, False) if ops_used & _BITS else (False, True)
    n = 0
    consts = any(t.kind == "const" for t in law.lhs.walk())
    #: the number of readings of a choice -> the reading that settled the last such one
    settled: dict[int, tuple[bool, str, str]] = {}
    if law.ops and Ops.WHERE not in law.ops:
        # the op variable as an unknown op first: one obligation per dtype choice for
        # every op of ``ops=`` (a rule that only moves its op holds for any op); where it
        # does not hold so, each op on its own
        out = _prove_generic(law, choices, rlimit, t0)
        if out is not None:
            return out
    for op in ops:
        for dts in choices:
            if op is not None and not _op_defined(law, op, dts):
                continue
            if local and "index" in dts.values():
                # a rule of bitwise ops only holds bit by bit: at every width, so on the
                # unbounded integers iff on 64-bit vectors
                dts = {i: "i64" if d == "index" else d for i, d in dts.items()}
            fixed = any(d in INT_RANGE for d in dts.values())
            floats = any(d in FLOAT_SORTS for d in dts.values())
            # fixed-width integers as wrapped Ints or as bit-vectors (first those of a
            # rule with bitwise ops), the other when z3 gives up; a cast between
            # integers and floats first as an unknown function of the value (enough
            # where a rule only moves it), then bit-precise
            # (bitwise ops on index likewise: an unknown commutative function first)
            bits = ("uf", "exact") if "index" in dts.values() and ops_used & _BITS \
                else ("exact",)
            attempts = [(bv, conv, bit) for bit in bits
                        for conv in (("uf", "real") if floats else ("real",))
                        for bv in (order if fixed else (False,))]
            # the reading that settled the last choice first (a rule's choices are alike:
            # a bit-precise conversion that the unknown one could not settle on one
            # choice, it will not on the next); the verdict does not depend on the order
            # (the conversions' reading only: the integers' keeps its order, wrapped Ints
            # or bit-vectors by the rule's ops, which suits each choice)
            attempts.sort(key=lambda a: a[1] != settled.get(len(attempts), a)[1])
            for k, (bv, conv, bit) in enumerate(attempts):
                try:
                    CONVERSIONS["mode"] = conv
                    CONVERSIONS["bitwise"] = bit
                    claim, env = _obligation(law, dts, op, bv)
                except MeaninglessError:
                    r = z3.unsat  # no such node: nothing to prove for this choice
                    break
                except NotImplementedError as e:
                    return Outcome(law.name, "failed", time.perf_counter() - t0,
                                   f"no semantics: {e}")
                finally:
                    CONVERSIONS["mode"] = "real"
                    CONVERSIONS["bitwise"] = "exact"
                # (a reading that is not the last gets a tenth of the budget, symbolic
                # constants a quarter before they are enumerated)
                last = k == len(attempts) - 1 and not bounded and not consts
                r, s = _check(claim, env, rlimit if last else
                              rlimit // 4 if consts and not bounded and k == len(attempts) - 1
                              else rlimit // 10, floats)
                if r == z3.unsat or (r == z3.sat and conv == "real" and bit == "exact"):
                    if r == z3.unsat:
                        settled[len(attempts)] = (bv, conv, bit)
                    break  # (a counterexample with unknown conversions may be spurious)
            n += 1
            if r == z3.unknown:
                # z3 gives up on the symbolic constants (a product or a division of two
                # of them is nonlinear): each choice of them in a small range instead,
                # every value of the variables still symbolic
                r, s, bounded_at = _bounded(law, dts, op, rlimit)
                if bounded_at is not None:
                    bounded.append(bounded_at)
            if r == z3.sat:
                where = f"{op.name.lower()} " if op is not None else ""
                return Outcome(law.name, "failed", time.perf_counter() - t0,
                               "counterexample " + where + _show_model(s.model(), env, dts))
            if r != z3.unsat:
                return Outcome(law.name, "failed", time.perf_counter() - t0,
                               f"z3 gave up on {dts}")
    if bounded:
        return Outcome(law.name, "tested-only", time.perf_counter() - t0,
                       f"z3 gives up on symbolic constants (nonlinear): proven for every "
                       f"value of the variables with constants in [-{CONST_RANGE}, "
                       f"{CONST_RANGE}] on {', '.join(sorted(set(bounded)))}; symbolically "
                       f"on the other {n - len(bounded)} dtype choices")
    narrow = f", every integer width, floats {', '.join(sorted(NARROW_FLOATS))} only " \
        f"(width-generic: " \
        f"{law.width_generic})" if law.width_generic else ""
    return Outcome(law.name, "proven", time.perf_counter() - t0,
                   f"{n} dtype choices{narrow}")


def _prove_generic(law: Law, choices: list[dict[int, str]], rlimit: int,
                   t0: float) -> Outcome | None:
    """``law`` proven with its op variable an unknown op (:data:`GENERIC`) on every
    dtype choice some op of ``ops=`` is defined on; None where that does not prove it
    (the rule may need a property of its ops)."""
    n = 0
    for dts in choices:
        if not any(_op_defined(law, o, dts) for o in law.ops):
            continue
        fixed = any(d in INT_RANGE for d in dts.values())
        floats = any(d in FLOAT_SORTS for d in dts.values())
        r = z3.unknown
        for conv in (("uf",) if floats else ("real",)):
            try:
                CONVERSIONS["mode"] = conv
                CONVERSIONS["bitwise"] = "uf"
                claim, env = _obligation(law, dts, GENERIC, False)
            except NotImplementedError:
                return None
            finally:
                CONVERSIONS["mode"] = "real"
                CONVERSIONS["bitwise"] = "exact"
            r, _s = _check(claim, env, rlimit // 10 if fixed else rlimit, floats)
        if r != z3.unsat:
            return None
        n += 1
    return Outcome(law.name, "proven", time.perf_counter() - t0,
                   f"{n} dtype choices, for every op of ops= at once (an unknown op)")


#: the constants of a rule z3 cannot prove symbolically range over [-CONST_RANGE,
#: CONST_RANGE] (each choice one proof over every value of the variables)
CONST_RANGE = 12


def _const_only(g: Any, names: set[str]) -> bool:
    """Whether a numeric guard conjunct reads constants and numbers only."""
    k = g[0]
    if k in ("num", "true"):
        return True
    if k == "const":
        return g[1] in names
    if k in ("cmp", "bin", "call", "and", "or", "not"):
        return all(_const_only(x, names) for x in g[1:] if isinstance(x, tuple))
    return False


def _const_value(g: Any, known: dict[str, int]) -> Any:
    """A constant-only guard (see _const_only) under the constants ``known`` (exact
    integers, C division; a division by zero is false)."""
    from rules.lang_baseline import guard_value

    v = guard_value(g, {n: _Known(x) for n, x in known.items()}, lambda r: None)
    return bool(v)


class _Known:
    """A constant of a guard by its value (what the guard reads of a CONST: ``arg``)."""

    __slots__ = ("arg",)

    def __init__(self, v: int) -> None:
        self.arg = v

    def __repr__(self) -> str:
        return f"_Known({self.arg!r})"


def _bounded(law: Law, dts: dict[int, str], op: Ops | None,
             rlimit: int) -> tuple[Any, Any, str | None]:
    """The verdict on ``law`` at ``dts`` with its constants enumerated (see prove_law);
    ``(z3 result, solver, the dtype choice's label or None when there is no constant)``."""
    consts = [t for t in law.lhs.walk() if t.kind == "const"]
    names = list(dict.fromkeys(t.name for t in consts))
    if not names:
        return z3.unknown, None, None
    env = None
    claims = {}
    for bv in (False, True):
        CONVERSIONS["mode"] = "real"
        claims[bv] = _obligation(law, dts, op, bv)
    label = ",".join(sorted(set(dts.values())))
    values = range(-CONST_RANGE, CONST_RANGE + 1)
    only_consts = [c for c in conjuncts(law.guard) if _const_only(c, set(names))]
    for combo in itertools.product(values, repeat=len(names)):
        known = dict(zip(names, combo, strict=True))
        if not all(_const_value(c, known) for c in only_consts):
            continue  # the guard's constant part rules this choice out
        r = z3.unknown
        for bv in (False, True):
            claim, env = claims[bv]
            subs = []
            for name, v in zip(names, combo, strict=True):
                val = env.vals[name]
                if val.dt in INT_RANGE:
                    lo, hi = INT_RANGE[val.dt]
                    if not lo <= v <= hi:
                        break
                if isinstance(val.x, z3.BitVecRef):
                    subs.append((val.x, z3.BitVecVal(v, val.x.size())))
                elif val.dt == "bool":
                    subs.append((val.x, z3.BoolVal(bool(v))))
                elif val.dt in FLOAT_SORTS:
                    subs.append((val.x, z3.FPVal(float(v), val.x.sort())))
                else:
                    subs.append((val.x, z3.IntVal(v)))
            else:
                r, s = _check(z3.substitute(claim, *subs), env, rlimit // 4,
                              any(d in FLOAT_SORTS for d in dts.values()))
                if r == z3.unsat:
                    break
                if r == z3.sat:
                    for k, v in subs:  # the model shows the constants too
                        s.add(k == v)
                    s.check()
                    return r, s, None
                continue
            r = z3.unsat  # a value the dtype cannot hold: not a constant of it
            break
        if r != z3.unsat:
            return r, s, None
    return z3.unsat, None, label


_BITWISE = frozenset((Ops.AND, Ops.OR, Ops.XOR, Ops.NOT))
_BITS = frozenset((Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.BITCAST))


def _bit_local(law: Law) -> bool:
    """Whether every op of ``law`` is bitwise (and, or, xor, not) and its guard reads no
    number: then each bit of the result is the same function of the same bit of the
    operands, and the rule holds on the unbounded integers iff it holds at any width."""
    ops = {t.op for t in list(law.lhs.walk()) + list(law.rhs.walk()) if t.kind == "op"}
    ops |= set(law.ops)
    ops.discard(None)
    if not ops <= _BITWISE:
        return False
    return all(c[0] in ("dtype", "form") or (c[0] == "not" and c[1][0] in ("dtype", "form"))
               for c in conjuncts(law.guard))


def _op_defined(law: Law, op: Ops, dts: dict[int, str]) -> bool:
    """Whether the op variable's op is defined on the operand dtype chosen."""
    from rules.lang import _ALL, _OP_DTYPES

    for t in law.lhs.walk():
        if t.kind == "op" and t.op is None and t.src:
            if dts[t.src[0].tid] not in _OP_DTYPES.get(op, _ALL):
                return False
    return True

