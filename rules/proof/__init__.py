"""Machine-checked proofs of the rules (``eqsat rules --prove``), with z3.

:mod:`.semantics` gives the IR's ops as z3 terms; :mod:`.laws` derives the obligation of
a rule of the language from its definition; :mod:`.python` holds the obligations of the
rules written in Python; :mod:`.registry` finds every rule of an engine and the
obligation of each. A rule written anywhere (a notebook) is proven in one call::

    from rules.lang import rule
    from rules.proof import prove
    prove(rule("quarter", "(x // 2) // 2 -> x // 4", "is_index(x)", register=False))
"""

from __future__ import annotations

from typing import Any

__all__ = ["prove"]


def prove(law: Any, rlimit: int | None = None) -> Any:
    """The :class:`~rules.proof.laws.Outcome` of ``law`` (a rule of the language, or the
    name of any registered rule): ``status`` is ``"proven"``, ``"tested-only"`` or
    ``"failed"``, ``detail`` says on what (a counterexample when failed), ``rlimit`` the
    most z3 resource units one settled query took. ``rlimit`` is the budget of one z3
    query (default :data:`rules.proof.semantics.RLIMIT`)."""
    from rules.proof.registry import Entry
    from rules.proof.semantics import RLIMIT

    rlimit = RLIMIT if rlimit is None else rlimit
    if isinstance(law, str):
        from rules.proof.registry import entries

        for e in entries():
            if e.name == law:
                return e.prove(rlimit)
        raise ValueError(f"unknown rule {law!r} (see 'eqsat rules')")
    return Entry(law.name, set(), law, law).prove(rlimit)
