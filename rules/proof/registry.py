"""Every rule of an engine with its proof obligation, and the runner of ``eqsat rules
--prove``.

A rule of the language (:class:`rules.lang.Law`) is proven from its definition
(:func:`rules.proof.laws.prove_law`); a rule written in Python has its own obligation in
:data:`rules.proof.python.OBLIGATIONS` (its code run on symbolic inputs, or tested
exhaustively over a stated domain where z3 cannot follow it). A rule with neither
fails: nothing is assumed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rules.lang import LAWS_BY_NAME, Law
from rules.proof.laws import Outcome, prove_law
from rules.proof.semantics import RLIMIT, Spent, own_context

__all__ = ["Entry", "entries", "prove", "summary"]


@dataclass
class Entry:
    """One rule to prove: its name, the engines that run it, its definition."""

    name: str
    engines: set[str]
    law: Law | None
    obj: Any

    def prove(self, rlimit: int = RLIMIT) -> Outcome:
        """The rule's proof, each z3 query within ``rlimit`` resource units; the
        outcome's ``rlimit`` is the most one settled query took. The proof runs in a z3
        context of its own (:func:`~rules.proof.semantics.own_context`): its outcome
        does not depend on what this process proved before."""
        with own_context():
            Spent.reset()
            out = self._prove(rlimit)
            return dataclasses.replace(out, rlimit=Spent.most)

    def _prove(self, rlimit: int) -> Outcome:
        if self.law is not None:
            return prove_law(self.law, rlimit)
        from rules.proof.python import OBLIGATIONS

        fn = OBLIGATIONS.get(self.name)
        if fn is None:
            return Outcome(self.name, "failed", 0.0, "no proof obligation")
        t0 = time.perf_counter()
        try:
            out = fn(rlimit)
        except Exception as e:  # an obligation that cannot run is a failure
            return Outcome(self.name, "failed", time.perf_counter() - t0,
                           f"{type(e).__name__}: {e}")
        return out


def _law_of(r: Any) -> Law | None:
    law = getattr(r, "law", None)
    if isinstance(law, Law):
        return law
    if isinstance(law, str):  # an ERule: the name of the rule of the language it implements
        return LAWS_BY_NAME.get(law)
    inner = getattr(r, "rule", None)  # a PyRule matching a baseline rule from Python
    return getattr(inner, "law", None) if inner is not None and not isinstance(inner, str) \
        else None


def _rule_name(r: Any) -> str:
    law = getattr(r, "law", None)
    return law if isinstance(law, str) else r.name


def entries(engine: str | None = None) -> list[Entry]:
    """Every distinct rule of ``engine`` (``"baseline"``, ``"egraph"``, None for both)."""
    import rules

    out: dict[str, Entry] = {}

    def add(r: Any, eng: str) -> None:
        name = _rule_name(r)
        e = out.get(name)
        if e is None:
            out[name] = Entry(name, {eng}, _law_of(r), r)
        else:
            e.engines.add(eng)
            if e.law is None:
                e.law = _law_of(r)
    if engine in (None, "baseline"):
        for r in rules.all_rules():
            add(r, "baseline")
    if engine in (None, "egraph"):
        for s in rules.list_rulesets():
            if s.engine == "egraph":
                for r in s.rules:
                    add(r, "egraph")
    return list(out.values())


_WORK: dict[str, Entry] = {}

#: the modules every proof process starts with (the rest load as a proof needs them)
_PRELOAD = ("z3", "rules", "rules.proof.laws", "rules.proof.python", "rules.proof.semantics",
            "rules.proof.symbolic", "rules.proof.registry")


def _init_worker(engine: str | None, setup: tuple[str, ...]) -> None:
    import importlib

    for m in setup:  # the modules that register obligations (an engine's passes)
        importlib.import_module(m)
    _WORK.update((e.name, e) for e in entries(engine))


def _prove_one(args: tuple[str, int]) -> Outcome:
    name, rlimit = args
    return _WORK[name].prove(rlimit)


def prove(engine: str | None = None, names: list[str] | None = None,
          rlimit: int = RLIMIT, jobs: int = 1, setup: tuple[str, ...] = ()
          ) -> Iterator[Outcome]:
    """The outcome of each rule's proof, in registry order (``names``: those only; an
    unknown name raises ValueError).

    Each rule is proven in a z3 context of its own (:meth:`Entry.prove`), in a process
    of its own forked from one server process that imported z3, the rules and the
    modules of ``setup`` (the modules that register obligations) and proved nothing
    (nor holds an e-graph, or the memory z3 counts process-wide), ``jobs`` processes
    side by side: every rule gets the same verdict whatever ran before it, with any
    ``jobs``. ``jobs=0`` proves in this process, in turn."""
    es = entries(engine)
    if names:
        known = {e.name for e in es}
        bad = [n for n in names if n not in known]
        if bad:
            raise ValueError(f"unknown rule {', '.join(bad)} (see 'eqsat rules')")
        es = [e for e in es if e.name in names]
    if jobs <= 0:
        for e in es:
            yield e.prove(rlimit)
        return
    import multiprocessing

    # a fork server, not this process: the server holds no e-graph (egglog's cannot be
    # forked) and no z3 term a proof made
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(_PRELOAD + setup))
    with ctx.Pool(max(1, min(jobs, len(es))), _init_worker, (engine, setup),
                  maxtasksperchild=1) as pool:
        yield from pool.imap(_prove_one, [(e.name, rlimit) for e in es])


def summary(outcomes: list[Outcome]) -> str:
    """``N proven, M tested-only, K failed``."""
    n = sum(o.status == "proven" for o in outcomes)
    m = sum(o.status == "tested-only" for o in outcomes)
    k = sum(o.status == "failed" for o in outcomes)
    return f"{n} proven, {m} tested-only, {k} failed"

