"""Pending terms: right-hand sides built as tuples and inserted only when kept.

A :data:`Term` is an e-class handle (an int) or a tuple ``(ctor, *fields)`` with
:data:`Term` children; :func:`emit` inserts one into the e-graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eqsat.engines.egraph.encoding import CTORS, Inserter, Snapshot

Term = Any  # int (an e-class handle) or a tuple (ctor, *fields) with Term children


def _key(t: Term) -> tuple:
    if isinstance(t, int):
        return (0, t)
    out = []
    for x in t:
        if isinstance(x, int):
            out.append((0, x))
        elif isinstance(x, tuple):
            out.append(_key(x))
        else:
            out.append((2, str(x)))
    return (1, tuple(out))


def emit(t: Term, ins: Inserter, canon: Callable[[int], int] | None = None) -> int:
    """Insert a pending term (memoized per node); its handle. ``canon`` maps a handle
    to its class's current name, so a node that exists is found whatever handle it
    was built from."""
    if isinstance(t, int):
        return canon(t) if canon is not None else t
    fields = list(t)
    for i in _TERM_E[t[0]]:  # children first, left to right
        fields[i] = emit(t[i], ins, canon)
    return ins.node(*fields)


#: the positions (in a pending term, after its constructor) of the e-class fields
_TERM_E = {ctor: tuple(i + 1 for i, c in enumerate(sig) if c == "E") for ctor, sig in CTORS.items()}


def _atoms(t: Term) -> list[int]:
    """The classes a pending term refers to (its own class when it is one)."""
    if not isinstance(t, tuple):
        return [t]
    out = []
    stack = [t]
    while stack:
        x = stack.pop()
        for i in _TERM_E[x[0]]:
            f = x[i]
            if isinstance(f, tuple):
                stack.append(f)
            else:
                out.append(f)
    return out


def _mentions(t: Term, cls: int) -> bool:
    """Whether the pending term ``t`` has the class ``cls`` strictly inside it."""
    return isinstance(t, tuple) and cls in _atoms(t)


def _class_of_handle(snap: Snapshot, h: int) -> int:
    """The class of handle ``h`` in ``snap``; ``h`` itself when it is newer."""
    try:
        return snap.cls_of_handle(h)
    except KeyError:  # a handle made after the snapshot
        return h


def _cval(t: Term) -> int | None:
    return t[2] if isinstance(t, tuple) and t[0] == "Cst" else None
