"""The div/mod core's rules and the whole-sum rules as computed rewrites."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from eqsat.engines.egraph.computed.linear import _UnrepresentableError
from eqsat.engines.egraph.computed.terms import Term
from eqsat.ir.linear import Lin, lin_bounds
from rules.computed import PyRule
from rules.divmod_core import DivisionReading, DivModRule


def divmod_rules_by_op(rules: Iterable[PyRule]) -> dict[str, list[PyRule]]:
    """The div/mod rules that can fire on each op (``DivModRule.ops``), in order."""
    rules = list(rules)
    return {op: [r for r in rules if type(r.rule) is not DivModRule or op in r.rule.ops]
            for op in ("idiv", "mod")}


def divmod_rewrites(by_op: dict[str, list[PyRule]], op: str, x: Lin, y: Lin, ctx: Any
                    ) -> list[tuple[str, Term]]:
    """``[(rule name, term)]`` of every rule that rewrites ``x OP y``: the same as
    each ``rule.fn(op, x, y, ctx)`` when no atom of ``x``, ``y`` may be Invalid (the
    caller's check), with ``DivModRule.out``'s shared guards hoisted: the rules of the
    op only, and the divisor's range read once (no rule fires when it may be 0)."""
    return _apply(_plan(by_op[op]), op, x, y, ctx)


#: one rule of a plan: its name, its core (a DivModRule's, else None), its fn, and the
#: core's sign-normalized body (``_normalized``'s ``raw``, else None)
_Step = tuple[str, Callable[..., Any] | None, Callable[..., Any], Callable[..., Any] | None]


def _plan(rules: Iterable[PyRule]) -> list[_Step]:
    """The rules as :func:`_apply` runs them (what each would look up per call)."""
    out: list[_Step] = []
    for r in rules:
        core = r.rule.core if type(r.rule) is DivModRule else None
        out.append((r.name, core, r.rule.fn, getattr(core, "raw", None)))
    return out


def _apply(plan: list[_Step], op: str, x: Lin, y: Lin, ctx: Any) -> list[tuple[str, Term]]:
    """:func:`divmod_rewrites` over a :func:`_plan` of the op's rules.

    The core rules read ``x OP y`` through one ``DivisionReading``: the rules written
    for ``x >= 0, y > 0`` share its one sign normalization."""
    out: list[tuple[str, Term]] = []
    ylo, yhi = lin_bounds(y, ctx)
    if ylo <= 0 <= yhi:
        return out
    reading = DivisionReading(op, x, y)
    for name, core, fn, raw in plan:
        try:
            if core is not None:
                o = reading.out(core, raw, ctx)
                if o is None:
                    continue
                t = o.emit(ctx)
            else:
                t = fn(op, x, y, ctx)
        except _UnrepresentableError:
            continue
        if t is not None:
            out.append((name, t))
    return out
