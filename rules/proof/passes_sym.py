"""Proofs of the e-graph's passes by running their code on symbolic e-graphs.

A pass reads a snapshot of the e-graph (its e-nodes, the classes' bounds, which classes
are never Invalid) and unions pending terms into classes. Here the pass's own code runs
on a small e-graph of a stated shape whose bounds and constants are symbolic integers
(:class:`rules.proof.symbolic.SymInt`) and whose classes have z3 values; every path its
code can take is run (:func:`rules.proof.symbolic.explore`) and, on each, every union it
records is proven: the premise (each class within its bounds, each e-node equal to its
class where it is defined) and the path condition imply the case's goal for that union
(the term's value equals the class's, and whatever else the case states).

The engine builds the cases (the rules package never imports the engine); this module
runs them and reads pending terms (:func:`term_value`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from rules.proof.laws import Outcome
from rules.proof.semantics import check, solver
from rules.proof.symbolic import explore, term

__all__ = ["PassCase", "prove_pass", "term_value"]


@dataclass
class PassCase:
    """One shape of e-graph: ``run()`` runs the pass on it afresh and returns the unions
    it recorded (``[(class, pending term)]``); ``goal(class, term)`` is the z3 formula
    each union must satisfy under ``premise`` and the path's condition."""

    label: str
    premise: list[Any]
    run: Callable[[], list[tuple[int, Any]]]
    goal: Callable[[int, Any], Any]


def term_value(t: Any, values: dict[int, Any]) -> Any:
    """The z3 value of a pending term (a class handle, or ``(ctor, dtype, *children)``)
    with each class's value in ``values``: the integer and bool constructors the passes
    build (``Cst``, ``Add``, ``Sub``, ``Mul``, ``Neg``, ``And``, ``Lt``)."""
    if isinstance(t, int):
        return values[t]
    ctor, dt = t[0], t[1]
    if ctor == "Cst":
        v = t[2]
        if dt == "bool" and isinstance(v, bool):
            return z3.BoolVal(v)
        return term(v)
    kids = [term_value(k, values) for k in t[2:]]
    if ctor == "Add":
        return kids[0] + kids[1]
    if ctor == "Sub":
        return kids[0] - kids[1]
    if ctor == "Mul":
        return kids[0] * kids[1]
    if ctor == "Neg":
        return -kids[0]
    if ctor == "And" and dt == "bool":
        return z3.And(kids[0], kids[1])
    if ctor == "Lt":
        return kids[0] < kids[1]
    raise NotImplementedError(f"no value for the pending term {t!r}")


def prove_pass(name: str, cases: list[PassCase], domain: str, rlimit: int) -> Outcome:
    """Run every case on every path and prove each union (see the module docstring).
    A pass that never unions anything on its cases fails (an empty obligation)."""
    t0 = time.perf_counter()
    unions = paths = 0
    for case in cases:
        try:
            results = explore(case.premise, case.run, rlimit)
        except Exception as e:  # the pass's code fails on a value of a shape
            return Outcome(name, "failed", time.perf_counter() - t0,
                           f"on {case.label}: the pass raised {type(e).__name__}: {e}")
        paths += len(results)
        for cond, made in results:
            unions += len(made)
            if not made:
                continue
            goals = [case.goal(cls, t) for cls, t in made]
            s = solver()  # the path's unions in one query, one by one when it fails
            s.add(*case.premise, cond, z3.Not(z3.And(*goals)))
            if check(s, rlimit) == z3.unsat:
                continue
            for (cls, t), g in zip(made, goals, strict=True):
                s = solver()
                s.add(*case.premise, cond, z3.Not(g))
                r = check(s, rlimit)
                if r == z3.unsat:
                    continue
                why = f"counterexample: {s.model()}" if r == z3.sat else "z3 gave up"
                return Outcome(name, "failed", time.perf_counter() - t0,
                               f"on {case.label}, path {cond}, class {cls} = {t!r}: {why}")
    if not unions:
        return Outcome(name, "failed", time.perf_counter() - t0,
                       "the pass made no union on its cases")
    return Outcome(name, "proven", time.perf_counter() - t0,
                   f"{unions} unions on {paths} paths of {len(cases)} e-graphs: {domain}")
