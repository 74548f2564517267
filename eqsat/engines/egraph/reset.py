"""Emptying an e-graph of a run's rows, in place of egglog's push and pop.

A session's e-graph holds the declarations, the analyses and the rules; a run adds
rows (e-nodes, handles, bounds, facts) and must leave the e-graph as it found it. egglog's
``(push)`` copies the whole e-graph, every rule and table included, and ``(pop)`` drops
the copy the run worked on: both cost in proportion to the rules loaded, not to the run
(docs/perf.md). Deleting the run's rows costs in proportion to the rows instead:

* the ``reset`` rule set (:func:`reset_program`) deletes every row of every table that
  was empty when the e-graph was built (the tables that hold rows then, the dtype
  facts, are never written by a run). It combines one part per table
  (:func:`reset_part`): a reset that knows which tables hold rows runs their parts
  only (``Store.reset``), as a run's step runs the rule parts that can match;
* a subsumed row matches no query, so no such rule sees it: the
  :data:`RESET_SUBSUMED` rule set, run first, deletes each subsumed e-node an RSub
  row names, its children found through their handles
  (``encoding.subsumed_deletions``, a part per constructor); the e-nodes a native
  rule subsumed (no RSub row
  names them) are read with ``EGraph.freeze`` and deleted the same way, through RSub
  rows recorded for them (one load, not one egglog command each);
* the handles' rows (``H``) go last, by a rule set of their own
  (:data:`RESET_HANDLES`); a reset that knows the tables with rows runs the three
  together, in one run, whose rules all match the rows as they were before it.

What stays is egglog's union-find of the run's classes, its counters and its overall
run report: no row names such a class again, a new run's classes get new ids, and the
report is what ``REBUILD_ITERATIONS`` bounds. :func:`leftover` compares the tables'
sizes with the built e-graph's: a row that escaped (a subsumed row whose child has no
handle) makes the session build that e-graph afresh.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from eqsat.engines.egraph.encoding import subsumed_deletions

__all__ = ["RESET_RULESET", "RESET_HANDLES", "RESET_SUBSUMED", "HANDLE_CTOR", "reset_program",
           "reset_part", "reset_tables", "leftover"]

#: the rule set that deletes every row of the tables a run writes, but the handles'
RESET_RULESET = "reset"
#: the rule set that deletes the subsumed e-nodes the RSub rows name (run before
#: :data:`RESET_RULESET`, which deletes the RSub rows)
RESET_SUBSUMED = "reset_subsumed"
#: the rule set that deletes the handles' rows
RESET_HANDLES = "reset_handles"
#: the constructor of handles
HANDLE_CTOR = "H"

_DECL = re.compile(r"^\((constructor|relation|function) (\S+) \(([^()]*)\)", re.M)


def reset_part(table: str) -> str:
    """The part of :data:`RESET_RULESET` that deletes the rows of ``table``."""
    return f"{RESET_RULESET}_{table}"


def reset_program(program: str, keep: frozenset[str] | set[str],
                  loads: Iterable[str] | None = None) -> str:
    """egglog program text: the :data:`RESET_RULESET`, :data:`RESET_SUBSUMED` and
    :data:`RESET_HANDLES` rule sets: one rule per table declared in ``program``
    (constructors, relations, functions) but those in ``keep``, each deleting every
    (not subsumed) row of its table, in a part of its own (:func:`reset_part`) that
    :data:`RESET_RULESET` combines, the handles' rule in the last; the subsumed
    e-nodes' rules (``loads``: the constructors the e-graph loads, as in
    ``encoding.declarations``) in the second."""
    out = [f"(ruleset {RESET_HANDLES})"]
    parts = []
    for kind, name, sorts in _tables(program, keep):
        args = " ".join(f"v{i}" for i in range(len(sorts.split())))
        call = f"({name} {args})" if args else f"({name})"
        query = call if kind == "relation" else f"(= out {call})"
        if name == HANDLE_CTOR:
            ruleset = RESET_HANDLES
        else:
            ruleset = reset_part(name)
            parts.append(ruleset)
            out.append(f"(ruleset {ruleset})")
        out.append(f"(rule ({query}) ((delete {call})) :ruleset {ruleset} "
                   f':name "reset-{name}")')
    out.append(f"(unstable-combined-ruleset {RESET_RULESET} {' '.join(parts)})")
    out.append(subsumed_deletions(RESET_SUBSUMED, loads))
    return "\n".join(out)


def reset_tables(program: str, keep: frozenset[str] | set[str]) -> frozenset[str]:
    """The tables of ``program`` that have a part of :data:`RESET_RULESET`
    (:func:`reset_program`)."""
    return frozenset(name for _, name, _ in _tables(program, keep) if name != HANDLE_CTOR)


def _tables(program: str, keep: frozenset[str] | set[str]) -> list[tuple[str, str, str]]:
    """``(kind, name, sorts)`` of every table ``program`` declares but those in ``keep``."""
    return [t for t in _DECL.findall(program) if t[1] not in keep]


def leftover(sizes: dict[str, int], base: dict[str, int]) -> dict[str, int]:
    """The tables whose row count ``sizes`` differs from the built e-graph's ``base``
    (table -> rows now); empty when the e-graph is back to what was built."""
    return {name: n for name, n in sizes.items() if n != base.get(name, 0)}
