"""Running a rule's code on symbolic integers: every path, each proven with z3.

A :class:`SymInt` stands for an unknown integer (a z3 term). Arithmetic on it builds
terms; a comparison, ``bool()``, ``abs()`` or a division by it asks the
:class:`Path` being run which way to go: the path records the condition it takes
(its *path condition*) and, when z3 finds both ways possible under the premise and
the conditions so far, notes the other way as a path still to run. :func:`explore`
re-runs the code with each recorded choice sequence, depth first, until every path
is run: the code's decisions are followed exactly as it takes them, on every value
of its symbolic inputs.

Python's ``//`` and ``%`` on a SymInt floor (as on ints); a division by a SymInt that
may be 0 raises ``ZeroDivisionError`` on the path where it is 0, as the int would.
A bound may be ``-inf``/``inf`` (a float): a SymInt times it is an infinity of the
product's sign. A SymInt has no hash and no ``int()`` (code that needs them cannot be
run this way: it raises ``TypeError``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import z3

__all__ = ["SymInt", "Path", "explore", "prove_paths", "InfeasibleError"]

_CURRENT: list[Path] = []


class InfeasibleError(Exception):
    """The path's conditions contradict the premise (no value takes it)."""


class Path:
    """One run of the code: ``prefix`` the choices to replay, then z3 decides."""

    def __init__(self, premise: list[Any], prefix: list[bool], rlimit: int):
        self.premise = premise
        self.prefix = prefix
        self.rlimit = rlimit
        self.choices: list[bool] = []
        self.conds: list[Any] = []
        self.open: list[list[bool]] = []  # choice sequences of the paths not taken
        #: (dividend, divisor) z3 ids -> the quotient of an exact division this path
        #: assumed (:meth:`SymInt.gcd`): dividing the one by the other gives it
        self.exact: dict[tuple[int, int], Any] = {}
        self._solver: Any = None  # the premise and the conditions so far (made on need)

    def _possible(self, cond: Any) -> bool:
        s = self._solver
        if s is None:
            s = self._solver = z3.SolverFor("QF_NIA")
            s.set("rlimit", max(1, int(self.rlimit)))
            s.add(*self.premise, *self.conds)
        s.push()
        s.add(cond)
        r = s.check()
        s.pop()
        return r != z3.unsat  # (unknown: run it, to be safe)

    def decide(self, cond: Any) -> bool:
        """The way the code goes on ``cond`` (a z3 bool) on this path."""
        cond = z3.simplify(cond)
        if z3.is_true(cond):
            return True
        if z3.is_false(cond):
            return False
        i = len(self.choices)
        if i < len(self.prefix):
            c = self.prefix[i]
        else:
            yes, no = self._possible(cond), self._possible(z3.Not(cond))
            if not yes and not no:
                raise InfeasibleError
            if yes and no:
                self.open.append(self.choices + [False])
            c = yes
        self.choices.append(c)
        self.conds.append(cond if c else z3.Not(cond))
        if self._solver is not None:
            self._solver.add(self.conds[-1])
        return c

    def assume(self, fact: Any) -> None:
        """Add ``fact`` (a z3 bool that holds of the values taking this path: a
        definition of a fresh variable) to the path condition; no choice."""
        self.conds.append(fact)
        if self._solver is not None:
            self._solver.add(fact)

    def condition(self) -> Any:
        return z3.And(*self.conds) if self.conds else z3.BoolVal(True)


def _decide(cond: Any) -> bool:
    return _CURRENT[-1].decide(cond)


def _inf(v: Any) -> bool:
    return isinstance(v, float) and math.isinf(v)


def term(v: Any) -> Any:
    """The z3 term of an int or a SymInt."""
    if isinstance(v, SymInt):
        return v.t
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"not an integer: {v!r}")
    return z3.IntVal(v)


class SymInt:
    """An unknown integer: a z3 integer term (see the module docstring)."""

    symbolic_int = True  # (eqsat.ir.linear.Lin accepts it where it takes an int)
    __slots__ = ("t",)

    def __init__(self, t: Any):
        self.t = t

    @staticmethod
    def var(name: str) -> SymInt:
        return SymInt(z3.Int(name))

    def __repr__(self) -> str:
        return f"SymInt({self.t})"

    # ---- arithmetic -------------------------------------------------------
    def _times_inf(self, o: float) -> float:
        if _decide(self.t > 0):
            return o
        if _decide(self.t < 0):
            return -o
        return math.nan

    def __add__(self, o: Any) -> Any:
        if _inf(o):
            return o
        return SymInt(self.t + term(o))

    __radd__ = __add__

    def __sub__(self, o: Any) -> Any:
        if _inf(o):
            return -o
        return SymInt(self.t - term(o))

    def __rsub__(self, o: Any) -> Any:
        if _inf(o):
            return o
        return SymInt(term(o) - self.t)

    def __mul__(self, o: Any) -> Any:
        if _inf(o):
            return self._times_inf(o)
        return SymInt(self.t * term(o))

    __rmul__ = __mul__

    def __neg__(self) -> SymInt:
        return SymInt(-self.t)

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> SymInt:
        return self if _decide(self.t >= 0) else SymInt(-self.t)

    @staticmethod
    def _floordiv(a: Any, b: Any) -> SymInt:
        if _decide(b == 0):
            raise ZeroDivisionError("integer division or modulo by zero (symbolic)")
        q = _CURRENT[-1].exact.get((a.get_id(), b.get_id())) if _CURRENT else None
        if q is not None:  # a == b*q (assumed on this path), b != 0: a // b == q
            return SymInt(q)
        # z3's integer division floors for a positive divisor; a//b == (-a)//(-b)
        return SymInt(z3.If(b > 0, a / b, (-a) / (-b)))

    def __floordiv__(self, o: Any) -> SymInt:
        return self._floordiv(self.t, term(o))

    def __rfloordiv__(self, o: Any) -> SymInt:
        return self._floordiv(term(o), self.t)

    def __mod__(self, o: Any) -> SymInt:
        b = term(o)
        return SymInt(self.t - b * self._floordiv(self.t, b).t)

    def __rmod__(self, o: Any) -> SymInt:
        a = term(o)
        return SymInt(a - self.t * self._floordiv(a, self.t).t)

    @staticmethod
    def gcd(*vs: Any) -> SymInt:
        """``math.gcd(*vs)`` of ints and SymInts on the path being run: a fresh
        ``g >= 0`` with every ``v == g*q_v`` (``q_v`` fresh) and ``g == 0`` exactly when
        every ``v`` is 0, assumed on the path. The gcd is such a ``g`` (the largest):
        the paths run cover its value. ``v // g`` and ``v % g`` then read ``q_v`` (an
        exact division, no z3 division term)."""
        path = _CURRENT[-1]
        g = z3.FreshInt("g")
        path.assume(g >= 0)
        ts = [term(v) for v in vs]
        for t in ts:
            q = z3.FreshInt("q")
            path.assume(t == g * q)
            path.exact[(t.get_id(), g.get_id())] = q
        path.assume((g == 0) == z3.And(*[t == 0 for t in ts]))
        return SymInt(g)

    # ---- decisions --------------------------------------------------------
    def _cmp(self, o: Any, op: Callable[[Any, Any], Any], inf: Callable[[float], bool]) -> bool:
        if _inf(o):
            return inf(o)
        if isinstance(o, float):
            raise TypeError(f"a symbolic integer compared with the float {o!r}")
        return _decide(op(self.t, term(o)))

    def __lt__(self, o: Any) -> bool:
        return self._cmp(o, lambda a, b: a < b, lambda v: v > 0)

    def __le__(self, o: Any) -> bool:
        return self._cmp(o, lambda a, b: a <= b, lambda v: v > 0)

    def __gt__(self, o: Any) -> bool:
        return self._cmp(o, lambda a, b: a > b, lambda v: v < 0)

    def __ge__(self, o: Any) -> bool:
        return self._cmp(o, lambda a, b: a >= b, lambda v: v < 0)

    def __eq__(self, o: object) -> bool:  # type: ignore[override]
        if not isinstance(o, (int, SymInt)) or isinstance(o, bool):
            return False  # (an infinity or another kind of value)
        return _decide(self.t == term(o))

    def __ne__(self, o: object) -> bool:  # type: ignore[override]
        return not self.__eq__(o)

    def __bool__(self) -> bool:
        return _decide(self.t != 0)

    def __hash__(self) -> int:
        raise TypeError("a symbolic integer has no hash")

    def __int__(self) -> int:
        raise TypeError("a symbolic integer has no int()")

    __index__ = __int__


def explore(premise: list[Any], run: Callable[[], Any], rlimit: int,
            most: int = 4096) -> list[tuple[Any, Any]]:
    """Run ``run()`` on every path (see the module docstring): ``[(path condition,
    what run returned)]`` over the paths the premise admits. An exception ``run``
    raises on a path propagates (the code fails on values that take that path);
    more than ``most`` paths raise ``RuntimeError``."""
    out = []
    todo: list[list[bool]] = [[]]
    while todo:
        if len(out) > most:
            raise RuntimeError(f"more than {most} paths")
        p = Path(premise, todo.pop(), rlimit)
        _CURRENT.append(p)
        try:
            r = run()
        except InfeasibleError:
            r = InfeasibleError
        finally:
            _CURRENT.pop()
        todo.extend(p.open)
        if r is not InfeasibleError:
            out.append((p.condition(), r))
    return out


#: one case of a symbolic proof: its label, its premise (a list ``run`` may extend), the
#: code run on it (None where the rule does not fire), and the check of a firing path's
#: result under that path's condition (None, or why it does not hold)
Case = tuple[str, list[Any], Callable[[], Any], Callable[[Any, Any], "str | None"]]


def prove_paths(name: str, cases: Iterable[Case], domain: str, rlimit: int) -> Any:
    """Run every case on every path (:func:`explore`) and check each path where the rule
    fires: the rule's :class:`~rules.proof.laws.Outcome`, failed at the first path that
    does not hold, at code that raises, or when no path fires at all."""
    from rules.proof.laws import Outcome

    t0 = time.perf_counter()
    fired = paths = 0
    for label, premise, run, check in cases:
        try:
            results = explore(premise, run, rlimit)
        except Exception as e:  # the rule's (or the analysis's) code fails on a value
            return Outcome(name, "failed", time.perf_counter() - t0,
                           f"{label}: the rule raised {type(e).__name__}: {e}")
        paths += len(results)
        for cond, r in results:
            if r is None:
                continue
            fired += 1
            bad = check(cond, r)
            if bad is not None:
                return Outcome(name, "failed", time.perf_counter() - t0,
                               f"{label}, path {cond}: {bad}")
    if not fired:
        return Outcome(name, "failed", time.perf_counter() - t0, "no path fired the rule")
    return Outcome(name, "proven", time.perf_counter() - t0,
                   f"{fired} firing paths of {paths}: {domain}")
