"""Linear forms over opaque atoms: ``sum(coef*atom) + const``.

The div/mod rules (``rules/divmod_core.py``) and the e-graph's computed passes read
index arithmetic as a :class:`Lin` whose atoms are opaque to them: a UOp in the
ordered baseline, an e-class id in the e-graph. What a rule needs to know about an
atom it asks a :class:`Ctx`, which also builds the engine's terms
(:class:`LinBuilder` gives the defaults of ``sum``/``lin``/``sub``/``neg``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from eqsat.ir.semantics import cdiv, cmod  # (re-exported: the rules' C division)
from eqsat.ir.semantics import is_symbolic as _symbolic

__all__ = ["Atom", "Num", "INF", "Lin", "Ctx", "LinBuilder", "cdiv", "cmod", "lin_bounds"]

Atom = Hashable
T = TypeVar("T")
Num = int | float
INF = math.inf


# ---------------------------------------------------------------------------
# linear forms
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Lin:
    """``sum(coef*atom for coef, atom in terms) + const`` over opaque atoms.

    Atoms are distinct and every coefficient is a non-zero ``int``. ``terms``
    keeps the order in which the atoms first appeared (:meth:`of`); equality and
    hashing ignore that order, so two Lins are equal exactly when they are the
    same linear form. ``sorted_by(key)`` gives a canonically ordered copy.
    """

    terms: tuple[tuple[int, Atom], ...] = ()
    const: int = 0
    _map: dict = field(init=False, repr=False, compare=False)
    _h: int | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if type(self.const) is not int and not _symbolic(self.const):
            raise TypeError(f"Lin: const must be an int, got {self.const!r}")
        m: dict = {}
        for t in self.terms:
            if not (isinstance(t, tuple) and len(t) == 2):
                raise TypeError(f"Lin: a term must be (coef, atom), got {t!r}")
            c, a = t
            if (type(c) is not int and not _symbolic(c)) or c == 0:
                raise ValueError(f"Lin: coefficient of {a!r} must be a non-zero int, got {c!r}")
            if a in m:
                raise ValueError(f"Lin: atom {a!r} appears twice (use Lin.of to merge)")
            m[a] = c
        object.__setattr__(self, "_map", m)

    # ---- construction ---------------------------------------------------
    @staticmethod
    def _raw(m: dict, const: int) -> Lin:
        """From an atom -> non-zero int coefficient map (trusted: no checks)."""
        return Lin._make(tuple(zip(m.values(), m, strict=True)), m, const)

    @staticmethod
    def _trusted(terms: tuple[tuple[int, Atom], ...], const: int) -> Lin:
        """From ``terms`` already valid (distinct atoms, non-zero int coefficients:
        e.g. a part of another form's terms) and an int ``const``; no checks."""
        return Lin._make(terms, {a: c for c, a in terms}, const)

    @staticmethod
    def _make(terms: tuple[tuple[int, Atom], ...], m: dict, const: int) -> Lin:
        """A form from its terms and their map, which agree (no checks)."""
        self = object.__new__(Lin)
        d = self.__dict__  # (frozen: written past __setattr__, as dataclasses do)
        d["terms"] = terms
        d["const"] = const
        d["_map"] = m
        d["_h"] = None
        return self

    @staticmethod
    def of(pairs: Iterable[tuple[int, Atom]] = (), const: int = 0) -> Lin:
        """Merge ``pairs`` (repeated atoms add up, zero coefficients vanish)."""
        m: dict = {}
        for c, a in pairs:
            if type(c) is not int and not _symbolic(c):
                raise ValueError(f"Lin: coefficient of {a!r} must be an int, got {c!r}")
            m[a] = m.get(a, 0) + c
        if type(const) is not int and not _symbolic(const):
            raise TypeError(f"Lin: const must be an int, got {const!r}")
        return Lin._raw({a: c for a, c in m.items() if c != 0}, const)

    @staticmethod
    def constant(v: int) -> Lin:
        """The constant ``v``."""
        return Lin._make((), {}, v if type(v) is int or _symbolic(v) else int(v))

    @staticmethod
    def atom(a: Atom, coef: int = 1) -> Lin:
        """``coef*a``."""
        if not coef:
            return _ZERO
        if type(coef) is not int and not _symbolic(coef):
            coef = int(coef)
        return Lin._make(((coef, a),), {a: coef}, 0)  # (its map at once: no comprehension)

    def sorted_by(self, key: Callable[[Atom], Any]) -> Lin:
        """The same form with its terms ordered by ``key(atom)``."""
        return Lin._trusted(tuple(sorted(self.terms, key=lambda t: key(t[1]))), self.const)

    # ---- queries --------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def is_zero(self) -> bool:
        """Whether this is the form 0 (``== Lin()``)."""
        return not self.terms and self.const == 0

    @property
    def single_atom(self) -> Atom | None:
        """The atom ``a`` when this form is exactly ``1*a + 0``, else None."""
        if self.const == 0 and len(self.terms) == 1 and self.terms[0][0] == 1:
            return self.terms[0][1]
        return None

    def coef(self, a: Atom) -> int:
        return self._map.get(a, 0)

    def content(self) -> int:
        """gcd of the coefficients (0 for a constant)."""
        if not self.terms:
            return 0
        try:
            return math.gcd(*(c for c, _ in self.terms))
        except TypeError:  # a symbolic coefficient (the proofs): its type's gcd
            cs = [c for c, _ in self.terms]
            return next(type(c) for c in cs if _symbolic(c)).gcd(*cs)

    def content_all(self) -> int:
        """gcd of the coefficients and the constant (0 only for the zero form)."""
        return math.gcd(self.content(), self.const)

    def divide(self, k: int) -> Lin | None:
        """``self / k`` when every coefficient and the constant are multiples of ``k``."""
        if k == 0:
            raise ZeroDivisionError("Lin.divide by 0")
        if not self.divisible_by(k):
            return None
        return Lin._trusted(tuple([(c // k, a) for c, a in self.terms]), self.const // k)

    def divisible_by(self, k: int) -> bool:
        """Whether every coefficient and the constant are multiples of ``k`` (non-zero):
        :meth:`divide` gives a form, :func:`split_divisible`'s remainder is 0."""
        if self.const % k:
            return False
        for c, _ in self.terms:  # (a loop: no generator per call)
            if c % k:
                return False
        return True

    def evaluate(self, env: Mapping[Atom, int]) -> int:
        """The value at ``env`` (atom -> int)."""
        return self.const + sum(c * env[a] for c, a in self.terms)

    # ---- arithmetic -----------------------------------------------------
    def __add__(self, o: Lin | int) -> Lin:
        if isinstance(o, Lin):  # the common case first: no symbolic check on it
            if not o._map:
                return Lin._raw(self._map, self.const + o.const)
            return self.plus(o, 1)
        if isinstance(o, int) or _symbolic(o):
            return Lin._raw(self._map, self.const + o)
        return NotImplemented

    __radd__ = __add__

    def plus(self, o: Lin, k: int) -> Lin:
        """``self + k*o`` (one new form, not two)."""
        if not k:
            return self
        m = dict(self._map)
        for a, c in o._map.items():
            v = m.get(a, 0) + k * c
            if v:
                m[a] = v
            else:
                del m[a]  # (k*c != 0: a was in m, with -k*c)
        return Lin._raw(m, self.const + k * o.const)

    def __neg__(self) -> Lin:
        return Lin._raw({a: -c for a, c in self._map.items()}, -self.const)

    def __sub__(self, o: Lin | int) -> Lin:
        if isinstance(o, Lin):
            return self.plus(o, -1)
        if isinstance(o, int) or _symbolic(o):
            return Lin._raw(self._map, self.const - o)
        return NotImplemented

    def __rsub__(self, o: int) -> Lin:
        return (-self) + o

    def __mul__(self, k: int) -> Lin:
        if not isinstance(k, int) and not _symbolic(k):
            return NotImplemented
        if k == 0:
            return _ZERO
        return Lin._raw({a: c * k for a, c in self._map.items()}, self.const * k)

    __rmul__ = __mul__

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Lin) and self.const == o.const and self._map == o._map

    def __hash__(self) -> int:
        h = self._h
        if h is None:
            h = hash((frozenset(self._map.items()), self.const))
            object.__setattr__(self, "_h", h)
        return h

    def __repr__(self) -> str:
        return f"Lin({self.terms!r}, {self.const!r})"

    def __str__(self) -> str:
        parts = [f"{c}*{a}" if c != 1 else f"{a}" for c, a in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


#: the form 0 (forms are immutable: one is enough)
_ZERO = Lin()


# ---------------------------------------------------------------------------
# what an engine provides
# ---------------------------------------------------------------------------
class Ctx(Protocol[T]):
    """The engine side: atom facts and term builders (T is the engine's term type)."""

    def bounds(self, a: Atom) -> tuple[Num, Num]:
        """A sound ``(lo, hi)`` of atom ``a`` (``-inf``/``inf`` when unbounded)."""
        ...

    def mod_parts(self, a: Atom) -> list[tuple[Lin, Lin]]:
        """``[(x, y), ...]`` for every ``x % y`` that ``a`` is; ``[]`` if none."""
        ...

    def idiv_parts(self, a: Atom) -> list[tuple[Lin, Lin]]:
        """``[(x, y), ...]`` for every ``x // y`` that ``a`` is; ``[]`` if none."""
        ...

    def mul_parts(self, a: Atom) -> list[tuple[Lin, Lin]]:
        """``[(x, y), ...]`` for every non-constant product ``x * y`` that ``a`` is."""
        ...

    # optional: ``where_parts(a)``, the ``(c, t, f)`` of every ``where(c, t, f)`` that ``a``
    # is (``c`` an atom, ``t``, ``f`` as :class:`Lin`), and the builder ``where(c, t, f)``:
    # the whole-sum where-merge (rules.where) reads and builds them.
    # optional: ``may_be_invalid(a) -> bool`` (the atom may evaluate to Invalid). When
    # the engine provides it, no rule fires on a numerator/divisor holding such an atom
    # (a rewrite that drops it would turn an Invalid point into a value). Optional too:
    # ``invalid_free(xs) -> bool``, that no atom of the forms ``xs`` may be Invalid, when
    # the engine can answer it without asking atom by atom.

    def atom(self, a: Atom) -> T: ...
    def const(self, v: int) -> T: ...
    def add(self, a: T, b: T) -> T: ...
    def sub(self, a: T, b: T) -> T: ...
    def mul(self, a: T, c: int) -> T: ...
    def neg(self, a: T) -> T: ...
    def idiv(self, a: T, b: T) -> T: ...
    def mod(self, a: T, b: T) -> T: ...

    def sum(self, terms: list[tuple[int, T]], const: int) -> T:
        """``sum(c*t for c, t in terms) + const`` (coefficients non-zero)."""
        ...

    def lin(self, x: Lin) -> T:
        """The term of a linear form."""
        ...


class LinBuilder(Generic[T]):
    """Mixin: default ``sum``/``lin``/``sub``/``neg`` from ``atom const add mul``.

    ``sum`` adds the positive terms, subtracts the negative ones, then adds the
    constant (``5 - a`` when there is no positive term); an engine may override it.
    """

    def neg(self, a: T) -> T:
        return self.mul(a, -1)  # type: ignore[attr-defined]

    def sub(self, a: T, b: T) -> T:
        return self.add(a, self.neg(b))  # type: ignore[attr-defined]

    def _scaled(self, t: T, c: int) -> T:
        return t if c == 1 else self.mul(t, c)  # type: ignore[attr-defined]

    def sum(self, terms: list[tuple[int, T]], const: int) -> T:
        pos = [self._scaled(t, c) for c, t in terms if c > 0]
        neg = [self._scaled(t, -c) for c, t in terms if c < 0]
        acc: T | None = None
        for t in pos:
            acc = t if acc is None else self.add(acc, t)  # type: ignore[attr-defined]
        nacc: T | None = None
        for t in neg:
            nacc = t if nacc is None else self.add(nacc, t)  # type: ignore[attr-defined]
        if acc is None and nacc is None:
            return self.const(const)  # type: ignore[attr-defined]
        if acc is None:
            if const:
                return self.sub(self.const(const), nacc)  # type: ignore[attr-defined]
            return self.neg(nacc)
        if nacc is not None:
            acc = self.sub(acc, nacc)
        if const:
            acc = self.add(acc, self.const(const))  # type: ignore[attr-defined]
        return acc

    def lin(self, x: Lin) -> T:
        return self.sum([(c, self.atom(a)) for c, a in x.terms], x.const)  # type: ignore


def lin_bounds(x: Lin, ctx: Ctx) -> tuple[Num, Num]:
    """Sound ``(lo, hi)`` of ``x`` from the atoms' bounds."""
    lo: Num = x.const
    hi: Num = x.const
    for c, a in x.terms:
        alo, ahi = ctx.bounds(a)
        if c > 0:
            lo, hi = lo + c * alo, hi + c * ahi
        else:
            lo, hi = lo + c * ahi, hi + c * alo
    return lo, hi
